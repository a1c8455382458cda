//! On-demand search: the recall pipeline for hosts, with no view change.

mod recall_support;
use engram::testing::block_on;
use engram::{types::recall::Item, types::recall::SearchOptions};
use recall_support::*;

#[test]
fn search_finds_facts_and_passages_without_changing_anything() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(1);
    let before = (r.view(), block_on(r.memory.export()).unwrap());
    let hits = block_on(r.memory.search("Ana Porto", SearchOptions::default())).unwrap();
    // The passage that says the fact comes first in a search by count
    // (tests/search_ranking.rs); the fact is listed too.
    assert!(
        matches!(hits[0].item, Item::Passage(_)) && hits[0].text.contains("My sister Ana"),
        "{hits:#?}"
    );
    let fact = hits
        .iter()
        .find(|h| h.item == Item::Fact(1))
        .expect("the fact");
    assert_eq!(fact.text, "Ana, the user's sister, lives in Porto.");
    assert_eq!(fact.said_at, T0 + 2 * MIN);
    let walked = block_on(r.memory.search(
        "Ana Porto",
        SearchOptions {
            walk: true,
            ..SearchOptions::default()
        },
    ))
    .unwrap();
    assert!(walked.iter().any(|h| h.item == Item::Fact(1)));
    assert_eq!(
        (r.view(), block_on(r.memory.export()).unwrap()),
        before,
        "search changed nothing"
    );
}

#[test]
fn search_rejects_an_empty_query() {
    let mut r = rig(config());
    let e = block_on(r.memory.search("  ", SearchOptions::default())).unwrap_err();
    assert_eq!(e.code(), "invalid-input");
}
