//! The recall block's layout (grouped by entity, milestones first, dated,
//! passages quoted with their date) and search by meaning finding what words
//! miss.

mod recall_support;
use engram::testing::block_on;
use engram::view::ItemKind;
use engram::{types::recall::Item, types::recall::List, types::recall::SearchOptions};
use recall_support::*;
use serde_json::json;

#[test]
fn the_block_groups_by_entity_with_milestones_first_and_quotes_passages_with_dates() {
    let mut r = rig(config());
    r.facts_for(
        "offsite venue",
        vec![
            fact(
                "Lisbon offsite",
                "has budget",
                "12000 euros",
                "The Lisbon offsite budget is 12000 euros.",
            ),
            json!({"subject": "Lisbon offsite", "predicate": "venue", "object": "Casa Alfama",
                   "sentence": "Casa Alfama is the Lisbon offsite venue.", "kind": "decided"}),
            fact(
                "Casa Alfama",
                "is in",
                "Alfama",
                "Casa Alfama is a guesthouse in the Alfama district.",
            ),
        ],
    );
    r.turn(
        "We settled the offsite venue and budget for Lisbon today.",
        "Casa Alfama it is, within 12000 euros.",
    );
    r.forget(1);
    let added = r.ask("What did we decide about the Lisbon offsite venue, Casa Alfama?");
    let view = r.view();
    let msg = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .unwrap();
    let block = &view.items[msg - 1];
    assert_eq!(block.kind, ItemKind::Recall);
    let t = &block.text;
    let group = t
        .find("\nLisbon offsite:\n")
        .expect("grouped under the offsite");
    let decided = t
        .find("- [decided] Casa Alfama is the Lisbon offsite venue. (2026-03-02)")
        .expect("milestone, dated");
    let budget = t
        .find("- The Lisbon offsite budget is 12000 euros. (2026-03-02)")
        .expect("fact, dated");
    let other = t
        .find("\nCasa Alfama:\n")
        .expect("a group per subject entity");
    assert!(
        group < decided && decided < budget,
        "milestone first within the group:\n{t}"
    );
    assert!(
        group < other,
        "the group with a milestone comes first:\n{t}"
    );
    assert!(
        t.contains(
            "From the conversation:\n- [2026-03-02 10:02 UTC] user: \u{201c}We settled the offsite venue"
        ),
        "passage quoted with its date:\n{t}"
    );
}

#[test]
fn search_by_meaning_finds_what_words_miss() {
    // The test embedder is crude (hashed words and trigrams): a low floor.
    let mut r = rig(engram::Config {
        min_cosine: 0.05,
        ..config()
    });
    r.model
        .set_embedder(engram::testing::HashEmbedder { dimension: 256 });
    r.facts_for("Miso", vec![miso_fact()]);
    r.turn("Our cat Miso is allergic to chicken.", "Noted.");
    r.forget(1);
    // Within a budget: facts rank as found (in a search by count the
    // passage saying the fact stands for it, and the fact goes below).
    let hits = block_on(r.memory.search(
        "allergies",
        SearchOptions {
            budget_tokens: Some(2_000),
            ..SearchOptions::default()
        },
    ))
    .unwrap();
    let miso = hits
        .iter()
        .find(|h| h.item == Item::Fact(1))
        .expect("found by meaning");
    assert!(
        miso.hits.iter().all(|h| h.list == List::FactMeaning),
        "{:?}",
        miso.hits
    );
}
