//! On-demand search: the recall pipeline for hosts, with no view change.

mod recall_support;
use engram::recall::{Item, SearchOptions};
use engram::testing::block_on;
use recall_support::*;

#[test]
fn search_finds_facts_and_passages_without_changing_anything() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(1);
    let before = (r.view(), block_on(r.memory.export()).unwrap());
    let hits = block_on(r.memory.search("Ana Porto", SearchOptions::default())).unwrap();
    assert_eq!(hits[0].item, Item::Fact(1));
    assert_eq!(hits[0].text, "Ana, the user's sister, lives in Porto.");
    assert_eq!(hits[0].said_at, T0 + 2 * MIN);
    assert!(hits
        .iter()
        .any(|h| matches!(h.item, Item::Passage(_)) && h.text.contains("My sister Ana")));
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
