//! A regenerated answer through the component: `NewMessage::replacing`
//! replaces the answer (its tool run included) in the view; the old one
//! stays in `messages()` with `replaced_by` and `explain_message` names it
//! an alternative; a retry of the same answer adds nothing.

mod common;

use common::{open_offline, text, with_id};
use engram_wasmtime_host::{MemStore, MemoryError, Role, ToolCall};

#[test]
fn a_regenerated_answer_replaces_the_first_and_keeps_it_as_an_alternative() {
    let store = MemStore::new();
    let mut memory = open_offline(&store, "regenerate");
    let q = memory
        .add_message(&text(Role::User, "Which city did we pick for the offsite?"))
        .expect("question")
        .message;
    let call = ToolCall {
        id: "call-1".into(),
        name: "calendar".into(),
        arguments: "{}".into(),
    };
    let mut calls = text(Role::Assistant, "");
    calls.tool_calls = vec![call];
    memory.add_message(&calls).expect("tool call");
    let mut output = text(Role::Tool, "Offsite: Porto, May.");
    output.tool_call_id = Some("call-1".into());
    memory.add_message(&output).expect("tool output");
    memory
        .add_message(&text(Role::Assistant, "Porto."))
        .expect("first answer");
    let again = with_id(Role::Assistant, "Lisbon: we moved it in March.", "r-2").replacing(q);
    let added = memory.add_message(&again).expect("regenerated");
    let retry = memory.add_message(&again).expect("retry");
    assert!(retry.duplicate);
    assert_eq!(retry.message, added.message);
    let rendered = memory.render_openai().expect("render");
    let contents: Vec<&str> = rendered
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        contents,
        [
            "Which city did we pick for the offsite?",
            "Lisbon: we moved it in March."
        ]
    );
    let messages = memory.messages().expect("messages");
    let replaced: Vec<Option<u64>> = messages.iter().map(|m| m.replaced_by).collect();
    let a = added.message;
    assert_eq!(replaced, [None, Some(a), Some(a), Some(a), None]);
    assert_eq!(messages[4].replaces, Some(q));
    let old = memory.explain_message(4).expect("explain");
    assert!(!old.in_view);
    assert_eq!(old.replaced_by, Some(a));
    assert!(old.summary.contains("alternative"), "{}", old.summary);
    assert_eq!(
        memory.explain_message(a).expect("explain").alternatives,
        [2, 3, 4]
    );
    // `replaces` names a user message of the thread.
    let err = memory
        .add_message(&text(Role::Assistant, "x").replacing(a))
        .expect_err("an answer is not a question");
    assert!(matches!(
        MemoryError::from_wasmtime(&err),
        Some(MemoryError::InvalidInput(_))
    ));
}
