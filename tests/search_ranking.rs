//! What on-demand search ranks and how: messages in view are found too,
//! word forms meet, a single list's first place is not buried under items
//! two lists half-match, and a fact that a better-ranked passage already
//! quotes gives its slot to new evidence.

mod recall_support;
use engram::testing::block_on;
use engram::{types::recall::Item, types::recall::List, types::recall::SearchOptions};
use recall_support::*;

fn search(
    r: &mut Rig,
    query: &str,
    include_in_view: bool,
) -> Vec<engram::types::recall::SearchHit> {
    block_on(r.memory.search(
        query,
        SearchOptions {
            limit: 10,
            walk: false,
            include_in_view,
            budget_tokens: None,
            ..SearchOptions::default()
        },
    ))
    .unwrap()
}

#[test]
fn search_finds_a_message_still_in_view() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(1);
    r.turn(
        "The plumber comes on Thursday about the leaking boiler.",
        "Noted.",
    );
    let in_view: Vec<u64> = r.view().items.iter().filter_map(|i| i.message).collect();
    let hits = search(&mut r, "When does the plumber come for the boiler?", true);
    let first = &hits[0];
    let Item::Message(id) = first.item else {
        panic!("the message in view comes first: {hits:#?}");
    };
    assert!(in_view.contains(&id), "message {id} is in view");
    assert!(first.text.contains("leaking boiler"), "{}", first.text);
    assert!(
        first.hits.iter().any(|h| h.list == List::ViewWords),
        "{:#?}",
        first.hits
    );
    // Leaving out what is in view leaves out the messages too.
    let hits = search(&mut r, "When does the plumber come for the boiler?", false);
    assert!(
        hits.iter().all(|h| !matches!(h.item, Item::Message(_))),
        "{hits:#?}"
    );
}

#[test]
fn a_name_in_most_messages_in_view_ranks_none_of_them_by_words() {
    let mut r = rig(config());
    r.turn("Ana called about the garden.", "Good.");
    r.turn("Ana wants tulips this spring.", "Lovely.");
    r.turn("Ana also asked about the fence.", "Sure.");
    // "Ana" is in half of the messages in view or more: alone it ranks
    // nothing by words (the meaning search is its own list); "tulips"
    // does.
    let hits = search(&mut r, "Ana?", true);
    assert!(
        hits.iter()
            .all(|h| h.hits.iter().all(|x| x.list != List::ViewWords)),
        "{hits:#?}"
    );
    let hits = search(&mut r, "What did Ana say about tulips?", true);
    assert!(
        matches!(hits.first(), Some(h) if matches!(h.item, Item::Message(_)) && h.text.contains("tulips")),
        "{hits:#?}"
    );
}

#[test]
fn word_forms_meet_in_a_search() {
    let mut r = rig(config());
    r.facts_for(
        "camping",
        vec![fact(
            "Melanie",
            "went",
            "mountains",
            "Melanie went camping in the mountains with her family.",
        )],
    );
    r.turn("We went camping in the mountains last week.", "Sounds fun.");
    r.forget(1);
    // "camped" meets "camping" (the hashing embedder of the scripted model
    // does not know they are related: only the words can find it).
    let hits = search(&mut r, "Where has Melanie camped?", false);
    let fact = hits
        .iter()
        .find(|h| h.item == Item::Fact(1))
        .expect("the camping fact is found");
    assert!(
        fact.hits.iter().any(|h| h.list == List::FactWords),
        "found by its words: {:?}",
        fact.hits
    );
}

#[test]
fn a_fact_a_better_passage_quotes_goes_below_new_evidence() {
    let mut r = rig(config());
    r.facts_for(
        "sister Ana",
        vec![
            fact(
                "Ana",
                "sings in",
                "choir",
                "Ana, the user's sister, sings in a choir in Porto.",
            ),
            fact("Ana", "visited", "Lisbon", "Ana visited Lisbon in May."),
        ],
    );
    r.turn(
        "My sister Ana sings in a choir in Porto. The choir rehearses on Mondays.",
        "Nice.",
    );
    r.forget(1);
    let hits = search(
        &mut r,
        "Which choir does my sister Ana sing in? When does the choir rehearse?",
        false,
    );
    let at = |item: Item| hits.iter().position(|h| h.item == item).expect("listed");
    let passage = hits
        .iter()
        .position(|h| matches!(h.item, Item::Passage(_)))
        .expect("the passage is found");
    let (quoted, new) = (at(Item::Fact(1)), at(Item::Fact(2)));
    // Fact 1 scores above fact 2 but says what the better-ranked passage
    // quotes; fact 2 (Lisbon) is not in the passage's words: it is evidence
    // of its own and goes first.
    assert!(
        hits[quoted].score > hits[new].score,
        "fact 1 matches better: {hits:#?}"
    );
    assert!(
        passage < new && new < quoted,
        "new evidence first: {hits:#?}"
    );
}

/// A memory whose one fact is said by a passage that ranks below it.
fn quoted_fact() -> Rig {
    let mut r = rig(config());
    r.facts_for(
        "sister Ana",
        vec![fact(
            "Ana",
            "lives in",
            "Porto",
            "Ana, the user's sister, lives in Porto.",
        )],
    );
    r.turn(
        "My sister Ana lives in Porto now. She moved there in spring for a new job at the harbour.",
        "Nice.",
    );
    r.forget(1);
    r
}

#[test]
fn a_search_by_count_lists_the_passage_quoting_a_fact_above_it() {
    let mut r = quoted_fact();
    let hits = search(&mut r, "Where does Ana live?", false);
    let fact = hits.iter().position(|h| h.item == Item::Fact(1)).unwrap();
    let passage = hits
        .iter()
        .position(|h| matches!(h.item, Item::Passage(_)))
        .unwrap();
    // The fact fused better (facts first in ties, and it matches more of
    // the question), yet the passage saying it, with its context, comes
    // first; the fact stays listed.
    assert!(hits[fact].score >= hits[passage].score, "{hits:#?}");
    assert!(passage < fact, "{hits:#?}");
}

#[test]
fn a_search_within_a_budget_fits_it_and_keeps_the_cheaper_fact_first() {
    let mut r = quoted_fact();
    let search = |r: &mut Rig, budget| {
        block_on(r.memory.search(
            "Where does Ana live?",
            SearchOptions {
                include_in_view: false,
                budget_tokens: Some(budget),
                ..SearchOptions::default()
            },
        ))
        .unwrap()
    };
    let cost = |hits: &[engram::types::recall::SearchHit]| -> usize {
        hits.iter()
            .map(|h| engram::base::text::estimate_tokens(&h.text) + engram::recall::HIT_FRAMING)
            .sum()
    };
    let roomy = search(&mut r, 1_000);
    assert!(roomy.len() >= 2, "{roomy:#?}");
    assert_eq!(roomy[0].item, Item::Fact(1), "the fact first: {roomy:#?}");
    assert!(cost(&roomy) <= 1_000);
    // Room for the fact alone: the fact, not the passage.
    let fact_cost = cost(&roomy[..1]);
    let tight = search(&mut r, fact_cost);
    assert_eq!(
        tight.iter().map(|h| h.item).collect::<Vec<_>>(),
        vec![Item::Fact(1)]
    );
    // No room for anything: nothing.
    assert!(search(&mut r, 1).is_empty());
}
