//! The host's instructions through the component: `set-instructions` pins
//! them first in every view (an `instructions` item, the first `system`
//! message of the OpenAI rendering), a change replaces them, and
//! instructions over half the ceiling are `invalid-input`, nothing written.

mod common;

use common::component;
use engram_wasmtime_host::bindings::exports::engram::memory::engine::ItemKind;
use engram_wasmtime_host::{Engram, Host, MemoryError, NewMessage, Role};

fn message(role: Role, content: &str) -> NewMessage {
    NewMessage {
        role,
        content: content.into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
        client_id: None,
        metadata: None,
        thread: None,
        at: None,
        replaces: None,
    }
}

#[test]
fn instructions_are_pinned_first_and_oversize_ones_are_refused() {
    let (engine, component) = component();
    let host = Host::offline(1_764_000_000_000);
    let mut memory = Engram::open(
        engine,
        component,
        host,
        "instr",
        r#"{"ceiling_tokens": 400}"#,
    )
    .expect("opens");
    assert!(memory
        .set_instructions("You are Robin, a trip planner.")
        .expect("set"));
    memory
        .add_message(&message(Role::User, "Let's plan the Lisbon offsite."))
        .expect("add");
    let view = memory.view().expect("view");
    assert_eq!(view.items[0].kind, ItemKind::Instructions);
    assert_eq!(view.items[0].text, "You are Robin, a trip planner.");
    let openai = memory.render_openai().expect("render");
    assert_eq!(openai[0]["role"], "system");
    assert_eq!(openai[0]["content"], "You are Robin, a trip planner.");
    assert!(memory
        .set_instructions("Answer in French.")
        .expect("change"));
    assert_eq!(
        memory.instructions().expect("read").as_deref(),
        Some("Answer in French.")
    );
    let err = memory
        .set_instructions(&"word ".repeat(400))
        .expect_err("over half the ceiling");
    assert!(
        matches!(
            err.downcast_ref::<MemoryError>(),
            Some(MemoryError::InvalidInput(_))
        ),
        "{err:#}"
    );
    assert_eq!(
        memory.instructions().expect("read").as_deref(),
        Some("Answer in French.")
    );
}
