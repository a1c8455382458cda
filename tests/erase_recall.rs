//! Erasure reaches recall: erasing a user message empties the recall block
//! placed before it (its parts, which quote the message, and its items);
//! erasing a recalled fact takes it out of every block that showed it. No
//! stored value keeps either text.

mod recall_support;
use engram::testing::block_on;
use engram::types::erase::Target;
use engram::view::ItemKind;
use recall_support::*;

fn stored(r: &Rig) -> String {
    r.store
        .dump()
        .into_values()
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn erasing_a_question_empties_its_recall_block_and_erasing_the_fact_unrecalls_it() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.turn(
        "My sister Ana lives in Porto now.",
        "Nice, Porto is lovely.",
    );
    r.forget(1);
    let question = "Remind me where my sister Ana lives?";
    let added = r.ask(question);
    let block = added.recall.expect("a block was recalled") as usize;
    assert!(stored(&r).contains("sister Ana lives"));

    block_on(r.memory.erase(Target::Message(added.message))).unwrap();
    let recalls = block_on(r.memory.recalls()).unwrap();
    assert!(recalls[block - 1].parts.is_empty() && recalls[block - 1].items.is_empty());
    assert!(r.view().items.iter().all(|i| i.kind != ItemKind::Recall));
    assert!(!stored(&r).contains(question));
    // Emptied, it awaits no distill (no model call about nothing).
    assert!(!block_on(r.memory.pending())
        .unwrap()
        .undistilled
        .contains(&(block as u64)));

    // Asked again: recalled again; then the fact itself is erased.
    let again = r.ask("Where does my sister Ana live, again?");
    let block = again.recall.expect("recalled again") as usize;
    let fact = block_on(r.memory.facts())
        .unwrap()
        .into_iter()
        .find(|f| f.sentence.contains("Ana, the user's sister"))
        .unwrap();
    block_on(r.memory.erase(Target::Fact(fact.id))).unwrap();
    let recalls = block_on(r.memory.recalls()).unwrap();
    assert!(recalls[block - 1]
        .items
        .iter()
        .all(|i| i.item != engram::types::recall::Item::Fact(fact.id)));
    assert!(!stored(&r).contains("Ana, the user's sister, lives in Porto."));
    let view = r.view();
    assert!(view
        .items
        .iter()
        .all(|i| !i.text.contains("Ana, the user's sister")));
}
