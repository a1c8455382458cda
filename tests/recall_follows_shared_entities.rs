//! Multi-hop through the graph: a fact that no search finds joins the
//! candidates when it shares an entity with one of the best hits, marked as
//! reached at hop 1 through that entity; explain lists, for each recalled
//! item, the searches it came from and its rank in each.

mod recall_support;
use engram::testing::block_on;
use engram::{types::recall::Item, types::recall::List, types::recall::SearchOptions};
use recall_support::*;

fn rig_with_pet() -> Rig {
    let mut r = rig(config());
    r.facts_for(
        "adopted",
        vec![
            fact(
                "Ana",
                "adopted",
                "Miso",
                "Ana adopted a kitten called Miso.",
            ),
            fact(
                "Miso",
                "is afraid of",
                "thunderstorms",
                "Miso hides under the bed during thunderstorms.",
            ),
        ],
    );
    r.turn("Ana adopted a kitten last week.", "How lovely.");
    r.forget(1);
    r
}

#[test]
fn a_fact_about_an_entity_of_a_strong_hit_is_found_at_hop_one() {
    let mut r = rig_with_pet();
    let hits = block_on(
        r.memory
            .search("What did Ana adopt?", SearchOptions::default()),
    )
    .unwrap();
    let first = hits
        .iter()
        .position(|h| h.item == Item::Fact(1))
        .expect("the direct hit");
    let storm = hits
        .iter()
        .position(|h| h.item == Item::Fact(2))
        .expect("the fact about the same kitten, though no search finds it");
    // In a search by count the passage that says the direct hit stands for
    // it, above the neighbour; the direct hit stays listed below.
    let said = hits
        .iter()
        .position(|h| matches!(h.item, Item::Passage(_)) && h.text.contains("Ana adopted"))
        .expect("the passage saying the direct hit");
    assert!(
        said < storm,
        "the direct hit's passage ranks above the neighbour"
    );
    assert_eq!(hits[storm].hop, 1);
    assert!(hits[storm].hits.is_empty(), "{:?}", hits[storm].hits);
    assert_eq!(hits[first].hop, 0);
    // Within a budget the direct hit itself ranks above its neighbour.
    let budgeted = block_on(r.memory.search(
        "What did Ana adopt?",
        SearchOptions {
            budget_tokens: Some(1_000),
            ..SearchOptions::default()
        },
    ))
    .unwrap();
    let at = |item| budgeted.iter().position(|h| h.item == item);
    assert!(
        at(Item::Fact(1)).expect("the direct hit") < at(Item::Fact(2)).expect("the neighbour"),
        "{budgeted:#?}"
    );
}

#[test]
fn explain_lists_every_search_that_found_an_item_with_its_rank() {
    let mut r = rig_with_pet();
    let added = r.ask("What did Ana adopt?");
    let blocks = block_on(r.memory.recalls()).unwrap();
    let block = blocks
        .iter()
        .find(|b| b.message == added.message)
        .expect("a block for the question");
    let why = block_on(r.memory.explain_block(block.id)).unwrap();
    let direct = why
        .iter()
        .find(|w| w.item == Item::Fact(1))
        .expect("the direct hit is explained");
    let words = direct
        .hits
        .iter()
        .find(|h| h.list == List::FactWords && h.query == 0)
        .expect("found by words for the whole message");
    assert!(
        direct
            .summary
            .contains(&format!("facts by words #{} (whole message)", words.rank)),
        "{}",
        direct.summary
    );
    assert!(direct.summary.contains("; fused #"), "{}", direct.summary);
    if let Some(hop) = why.iter().find(|w| w.item == Item::Fact(2)) {
        assert_eq!(hop.hop, 1);
        assert!(
            hop.summary.contains("through entity \"Miso\""),
            "{}",
            hop.summary
        );
    }
    assert!(block_on(r.memory.explain_block(99)).is_err());
}
