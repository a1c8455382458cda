//! Distill: after the reply the recall block keeps only what mattered, or is
//! removed; kept facts trace their source episode, whose activation rises.

mod recall_support;
use engram::recall::Item;
use engram::testing::block_on;
use engram::trace::TraceCause;
use engram::view::ItemKind;
use engram::{NewMessage, Task};
use recall_support::*;
use serde_json::json;

fn recalled_rig() -> (Rig, engram::Added) {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(1);
    let added = r.ask("Where does my sister Ana live?");
    assert!(added.recall.is_some());
    (r, added)
}

#[test]
fn distill_removes_a_block_nothing_in_the_turn_used() {
    let (mut r, added) = recalled_rig();
    r.model
        .push(Task::Distill, Ok(json!({"kept": []}).to_string()));
    r.clock.advance(MIN);
    let reply = block_on(
        r.memory
            .add_message(NewMessage::assistant("I don't know, sorry.")),
    )
    .unwrap();
    let (block, d) = reply.distilled.expect("the reply ended the turn");
    assert_eq!(Some(block), added.recall);
    assert!(d.kept.is_empty() && !d.failed);
    let view = r.view();
    let msg = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .unwrap();
    assert_ne!(
        view.items[msg - 1].kind,
        ItemKind::Recall,
        "the block is gone"
    );
    assert!(block_on(r.memory.traces())
        .unwrap()
        .iter()
        .all(|t| !matches!(t.cause, TraceCause::Recall(_))));
}

#[test]
fn distill_keeps_used_facts_and_traces_their_episodes() {
    let (mut r, added) = recalled_rig();
    let block = block_on(r.memory.recalls()).unwrap()[added.recall.unwrap() as usize - 1].clone();
    let n = block
        .shown()
        .iter()
        .position(|i| *i == Item::Fact(1))
        .expect("fact 1 shown")
        + 1;
    r.model
        .push(Task::Distill, Ok(json!({ "kept": [n] }).to_string()));
    let before = block_on(r.memory.episodes()).unwrap()[0].clone();
    r.clock.advance(MIN);
    let reply = block_on(
        r.memory
            .add_message(NewMessage::assistant("She lives in Porto.")),
    )
    .unwrap();
    let (_, d) = reply.distilled.unwrap();
    assert_eq!(d.kept, vec![Item::Fact(1)]);
    let after = block_on(r.memory.episodes()).unwrap()[0].clone();
    assert!(
        after.activation > before.activation + 0.9,
        "{} -> {}",
        before.activation,
        after.activation
    );
    assert_eq!(after.significance, before.significance + 1.0);
    let traces = block_on(r.memory.traces()).unwrap();
    let t = traces
        .iter()
        .find(|t| t.cause == TraceCause::Recall(1))
        .expect("recall trace");
    assert_eq!((t.episode, t.yes, t.strength), (1, true, 1.0));
    let view = r.view();
    let msg = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .unwrap();
    let kept = &view.items[msg - 1];
    assert_eq!(kept.kind, ItemKind::Recall);
    assert_eq!(kept.facts, vec![1]);
    assert!(
        !kept.text.contains("From the conversation"),
        "passages not kept: {}",
        kept.text
    );
    let why = block_on(r.memory.explain_recall(1)).unwrap();
    assert_eq!(why[0].distill_kept, Some(true));
    assert!(why[0].hits.iter().any(|h| h.rank == 1), "{:?}", why[0].hits);
}

#[test]
fn a_reply_that_calls_a_tool_does_not_end_the_turn_but_end_turn_does() {
    let (mut r, _) = recalled_rig();
    r.clock.advance(MIN);
    let call = engram::ToolCall {
        id: "c1".into(),
        name: "lookup".into(),
        arguments: "{}".into(),
    };
    let a = block_on(r.memory.add_message(NewMessage::tool_calls("", vec![call]))).unwrap();
    assert!(a.distilled.is_none());
    let t = block_on(r.memory.add_message(NewMessage::tool_result("c1", "Porto"))).unwrap();
    assert!(t.distilled.is_none());
    let ended = block_on(r.memory.end_turn()).unwrap();
    assert!(ended.is_some());
    assert_eq!(
        block_on(r.memory.end_turn()).unwrap(),
        None,
        "nothing left to distill"
    );
}
