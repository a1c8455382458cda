//! Recall's search: parts searched on their own (the model's split only for a
//! long sentence; what only its parts find joins unjudged), the walk
//! following entities in one relevance call (a hop kept only from a kept
//! fact), retired facts only beside the fact that retired them, the budget.

mod recall_support;
use engram::testing::block_on;
use engram::view::ItemKind;
use engram::Config;
use engram::Task;
use engram::{types::recall::Item, types::recall::Judgment, types::recall::SearchOptions};
use recall_support::*;
use serde_json::json;

fn block_items(r: &mut Rig, id: u64) -> Vec<engram::types::recall::Recalled> {
    block_on(r.memory.recalls()).unwrap()[id as usize - 1]
        .items
        .clone()
}

#[test]
fn a_two_subject_question_recalls_facts_for_both_subjects() {
    let mut r = rig(config());
    r.facts_for("Porto", vec![ana_fact()]);
    r.facts_for("Miso", vec![miso_fact()]);
    r.turn(
        "My sister Ana moved to Porto last month.",
        "Porto is a great city.",
    );
    r.turn(
        "Our cat Miso is allergic to chicken, the vet said.",
        "Good to know about Miso.",
    );
    r.forget(2);
    r.model.push(
        Task::Split,
        Ok(json!({"parts": ["Where does Ana live", "What is Miso allergic to"]}).to_string()),
    );
    // One sentence of more than 20 words: worth the model's split.
    let added = r.ask(
        "Where does Ana live these days, and what is Miso allergic to, since I am planning a visit with the cat soon?",
    );
    let items = block_items(&mut r, added.recall.expect("recalled"));
    let ana = items
        .iter()
        .find(|i| i.item == Item::Fact(1))
        .expect("Ana's fact recalled");
    let miso = items
        .iter()
        .find(|i| i.item == Item::Fact(2))
        .expect("Miso's fact recalled");
    assert!(
        ana.hits.iter().any(|h| h.query == 1),
        "part 1 found Ana: {:?}",
        ana.hits
    );
    assert!(
        miso.hits.iter().any(|h| h.query == 2),
        "part 2 found Miso: {:?}",
        miso.hits
    );
    let b = &block_on(r.memory.recalls()).unwrap()[added.recall.unwrap() as usize - 1];
    assert_eq!(
        b.parts,
        vec!["Where does Ana live", "What is Miso allergic to"]
    );
}

#[test]
fn a_short_question_is_not_split_by_the_model() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(1);
    let splits = r.model.calls_of(Task::Split).len();
    let added = r.ask("Where does my sister Ana live?");
    assert_eq!(
        r.model.calls_of(Task::Split).len(),
        splits,
        "one short sentence is its own only part"
    );
    let b = &block_on(r.memory.recalls()).unwrap()[added.recall.expect("recalled") as usize - 1];
    assert!(b.parts.is_empty() && !b.split_failed);
    assert!(b.items.iter().any(|i| i.item == Item::Fact(1)));
}

/// Ana's fact, and a fact about Porto that no search for the sister finds,
/// both forgotten.
fn bakery_rig() -> Rig {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.facts_for(
        "Manteigaria",
        vec![fact(
            "Porto",
            "has bakery",
            "Manteigaria",
            "The best pastry shop of Porto is Manteigaria.",
        )],
    );
    // The turn does not name Porto: the best hits for the sister then
    // share no word with the bakery (a recall's feedback would otherwise
    // search "Porto" and find it without the walk).
    r.turn("My sister Ana moved away last spring.", "Lovely.");
    r.turn(
        "In Porto, Manteigaria makes the best pastries.",
        "I will remember Manteigaria.",
    );
    r.forget(2);
    r
}

const SISTER: &str = "Where is my sister these days?";

#[test]
fn the_walk_follows_an_entity_to_a_fact_no_search_found() {
    let mut r = bakery_rig();
    r.all_relevant();
    let plain = block_on(r.memory.search(SISTER, SearchOptions::default())).unwrap();
    assert!(
        plain.iter().any(|h| h.item == Item::Fact(1)),
        "search finds the sister fact: {plain:?}"
    );
    // No search finds the bakery (nor the question expanded by its best
    // hits' words); without the walk, the fused ranking may reach it
    // through Porto (hop 1, no search hits).
    assert!(
        plain
            .iter()
            .filter(|h| h.item == Item::Fact(2))
            .all(|h| h.hop == 1 && h.hits.is_empty()),
        "no search finds the bakery: {plain:?}"
    );
    let judged = r.model.calls_of(Task::Relevance).len();
    let added = r.ask(SISTER);
    // The hop is laid out ahead: one relevance call judges the searched
    // candidates and the facts the walk reaches from them.
    let calls = &r.model.calls_of(Task::Relevance)[judged..];
    assert_eq!(calls.len(), 1, "one relevance call for the whole walk");
    assert!(calls[0]
        .content
        .contains("Ana, the user's sister, lives in Porto."));
    assert!(calls[0]
        .content
        .contains("The best pastry shop of Porto is Manteigaria."));
    let items = block_items(&mut r, added.recall.expect("recalled"));
    let bakery = items
        .iter()
        .find(|i| i.item == Item::Fact(2))
        .expect("the walk reached the bakery fact");
    assert_eq!(bakery.hop, 1);
    let porto = block_on(r.memory.entities())
        .unwrap()
        .into_iter()
        .find(|e| e.name == "Porto")
        .unwrap();
    assert_eq!(bakery.via, Some(porto.id));
    assert!(bakery.hits.is_empty());
}

#[test]
fn the_walk_keeps_a_hop_only_when_the_fact_it_came_from_is_kept() {
    let mut r = bakery_rig();
    // Only the bakery is judged relevant, not the sister fact it was reached
    // from: the walk follows only relevant facts, so the bakery is dropped.
    r.model.on_first(Task::Relevance, |req| {
        let (_, cands) = req.content.split_once("\n\nCandidates:\n")?;
        let relevant: Vec<usize> = cands
            .lines()
            .filter(|l| l.contains("Manteigaria"))
            .filter_map(|l| l.split_once(". ")?.0.parse().ok())
            .collect();
        Some(json!({ "relevant": relevant }).to_string())
    });
    let judged = r.model.calls_of(Task::Relevance).len();
    let added = r.ask(SISTER);
    let calls = &r.model.calls_of(Task::Relevance)[judged..];
    assert_eq!(calls.len(), 1);
    assert!(
        calls[0]
            .content
            .contains("The best pastry shop of Porto is Manteigaria."),
        "the hop was judged: {}",
        calls[0].content
    );
    let items = added.recall.map_or(Vec::new(), |b| block_items(&mut r, b));
    assert!(
        !items.iter().any(|i| i.item == Item::Fact(2)),
        "a hop from a fact that was not kept: {items:?}"
    );
    assert!(!items.iter().any(|i| i.item == Item::Fact(1)));
}

/// One sentence of more than 20 words: worth the model's split. Shares no
/// word with the pastry facts.
const VISIT: &str = "Where is my sister these days and is there anything sweet I should taste when I go to visit her next month";

/// The model splits [`VISIT`] into a part about the sister and one about
/// pastries.
fn split_visit(r: &Rig) {
    r.model.push(
        Task::Split,
        Ok(
            json!({"parts": ["Where does my sister live", "Best pastries at Manteigaria"]})
                .to_string(),
        ),
    );
}

#[test]
fn a_candidate_only_a_part_of_the_models_split_finds_joins_unjudged() {
    // Search by words only (the test embedder finds anything alike).
    let mut r = rig(Config {
        min_cosine: 0.99,
        ..config()
    });
    r.facts_for("sister Ana", vec![ana_fact()]);
    // About no entity of Ana's fact: no hop of the walk reaches it.
    r.facts_for(
        "Manteigaria",
        vec![fact(
            "Manteigaria",
            "makes",
            "pastel de nata",
            "Manteigaria makes the best pastel de nata.",
        )],
    );
    r.turn("My sister Ana lives in Porto.", "Lovely.");
    r.turn(
        "Manteigaria makes the best pastel de nata.",
        "I will remember Manteigaria.",
    );
    r.forget(2);
    split_visit(&r);
    let judged = r.model.calls_of(Task::Relevance).len();
    let added = r.ask(VISIT);
    // The split goes out with the walk: what only its parts find cannot be
    // judged in that round, so it joins ranked (distill rereads it).
    let walk = &r.model.calls_of(Task::Relevance)[judged..];
    assert_eq!(walk.len(), 1);
    assert!(
        !walk[0].content.contains("pastel de nata."),
        "{}",
        walk[0].content
    );
    let items = block_items(&mut r, added.recall.expect("recalled"));
    let ana = items.iter().find(|i| i.item == Item::Fact(1)).unwrap();
    assert_eq!(ana.judgment, Judgment::Relevant);
    let nata = items
        .iter()
        .find(|i| i.item == Item::Fact(2))
        .unwrap_or_else(|| panic!("the part found the pastry shop: {items:?}"));
    assert_eq!(nata.judgment, Judgment::Ranked);
    assert!(
        !nata.hits.is_empty() && nata.hits.iter().all(|h| h.query == 2),
        "found by part 2 only: {:?}",
        nata.hits
    );
    let at = |item| items.iter().position(|i| i.item == item).unwrap();
    assert!(
        at(Item::Fact(1)) < at(Item::Fact(2)),
        "below the judged ones"
    );
}

#[test]
fn a_candidate_the_walk_judged_not_relevant_does_not_come_back_through_a_part() {
    let mut r = bakery_rig();
    split_visit(&r);
    let judged = r.model.calls_of(Task::Relevance).len();
    let added = r.ask(VISIT);
    let walk = &r.model.calls_of(Task::Relevance)[judged..];
    assert_eq!(walk.len(), 1);
    // The walk reached the bakery from Ana's fact (through Porto) and the
    // model judged it: not relevant to this conversation.
    assert!(
        walk[0]
            .content
            .contains("The best pastry shop of Porto is Manteigaria."),
        "{}",
        walk[0].content
    );
    let items = block_items(&mut r, added.recall.expect("recalled"));
    assert!(items.iter().any(|i| i.item == Item::Fact(1)));
    assert!(
        !items.iter().any(|i| i.item == Item::Fact(2)),
        "judged not relevant, yet kept unjudged: {items:?}"
    );
}

fn budget_rig() -> Rig {
    let mut r = rig(config());
    r.facts_for(
        "hike budget is 200",
        vec![fact(
            "hike",
            "has budget",
            "200 euros",
            "The hike budget is 200 euros.",
        )],
    );
    r.facts_for(
        "hike budget is 300",
        vec![fact(
            "hike",
            "has budget",
            "300 euros",
            "The hike budget is 300 euros.",
        )],
    );
    r.model.on(Task::Reconcile, |req| {
        let contradicts = req.content.contains("300 euros") && req.content.contains("1. The hike budget is 200");
        Some(json!({"judgments": if contradicts { vec![json!({"fact": 1, "relation": "contradicts"})] } else { vec![] }}).to_string())
    });
    r.turn("The hike budget is 200 euros per person.", "Noted.");
    r.turn(
        "Update: the hike budget is 300 euros per person.",
        "Updated.",
    );
    r.forget(2);
    let facts = block_on(r.memory.facts()).unwrap();
    assert_eq!(
        facts[0].retired.as_ref().map(|x| x.by),
        Some(2),
        "300 retired 200"
    );
    r
}

#[test]
fn a_retired_fact_comes_back_under_the_fact_that_retired_it() {
    let mut r = budget_rig();
    let added = r.ask("What was the hike budget, 200 euros?");
    let view = r.view();
    let msg = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .unwrap();
    let text = &view.items[msg - 1].text;
    assert_eq!(view.items[msg - 1].kind, ItemKind::Recall);
    let new = text
        .find("The hike budget is 300 euros.")
        .expect("the live fact is shown");
    let retired_at = block_on(r.memory.facts()).unwrap()[0]
        .retired
        .as_ref()
        .unwrap()
        .at;
    let line = format!(
        "  - earlier, retired {}: The hike budget is 200 euros. (2026-03-02)",
        engram::base::text::format_date(retired_at)
    );
    let old = text
        .find(&line)
        .unwrap_or_else(|| panic!("the old one under it: {text}"));
    assert!(new < old, "{text}");
}

#[test]
fn a_retired_fact_does_not_come_back_alone() {
    let mut r = budget_rig();
    // The walk judges only the retired fact relevant.
    r.model.on_first(Task::Relevance, |req| {
        let candidate =
            |l: &&str| l.starts_with(|c: char| c.is_ascii_digit()) && l.contains("200 euros");
        let n = req
            .content
            .lines()
            .find(candidate)?
            .split('.')
            .next()?
            .parse::<usize>()
            .ok()?;
        Some(json!({ "relevant": [n] }).to_string())
    });
    let added = r.ask("What was the hike budget, 200 euros?");
    if let Some(b) = added.recall {
        let items = block_items(&mut r, b);
        assert!(
            !items.iter().any(|i| i.item == Item::Fact(1)),
            "retired fact alone: {items:?}"
        );
    }
    assert!(!r.view().items.iter().any(|i| i.text.contains("200 euros.")));
}

#[test]
fn recall_never_exceeds_its_budget() {
    let mut r = rig(Config {
        recall_budget_tokens: 60,
        ..config()
    });
    let mut facts = Vec::new();
    for i in 0..12 {
        facts.push(fact(
            "Lisbon offsite",
            "detail",
            &format!("item {i}"),
            &format!("The Lisbon offsite detail number {i} is settled."),
        ));
    }
    r.facts_for("Lisbon offsite", facts);
    r.turn(
        "Lots of Lisbon offsite details to settle today.",
        "All settled.",
    );
    r.turn("Unrelated: buy milk.", "OK.");
    r.forget(1);
    let added = r.ask("What did we settle for the Lisbon offsite?");
    let items = block_items(&mut r, added.recall.expect("recalled"));
    assert!(items.len() < 12, "the budget cut some of the 12 facts");
    assert!(!items.is_empty());
    let view = r.view();
    let block = view
        .items
        .iter()
        .find(|i| i.kind == ItemKind::Recall && i.text.contains("Lisbon"))
        .unwrap();
    assert!(block.tokens <= 60, "block of {} tokens", block.tokens);
    assert!(items.iter().all(|i| i.judgment == Judgment::Relevant));
}
