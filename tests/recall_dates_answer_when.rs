//! A "when" question about something long out of view: recall brings back
//! the fact with the date it was said, so the model can answer when.

mod recall_support;
use engram::testing::block_on;
use engram::view::ItemKind;
use engram::{types::recall::Item, types::recall::SearchOptions};
use recall_support::*;

#[test]
fn a_when_question_brings_back_the_fact_with_its_date() {
    let mut r = rig(config());
    r.facts_for(
        "marathon",
        vec![fact(
            "the user",
            "ran",
            "the Porto marathon",
            "The user ran the Porto marathon.",
        )],
    );
    r.turn("I ran the Porto marathon this morning!", "Congratulations!");
    r.forget(1);
    // Weeks later.
    r.clock.advance(30 * DAY);
    let hits = block_on(r.memory.search(
        "When did I run the Porto marathon?",
        SearchOptions::default(),
    ))
    .unwrap();
    let fact = hits
        .iter()
        .find(|h| h.item == Item::Fact(1))
        .unwrap_or_else(|| panic!("search finds the fact: {hits:#?}"));
    assert_eq!(fact.said_at / DAY, T0 / DAY, "dated the day it was said");
    let added = r.ask("When did I run the Porto marathon?");
    let view = r.view();
    let at = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .unwrap();
    let block = &view.items[at - 1];
    assert_eq!(block.kind, ItemKind::Recall);
    assert!(
        block
            .text
            .contains("- The user ran the Porto marathon. (2026-03-02)"),
        "the fact with the day it was said:\n{}",
        block.text
    );
}
