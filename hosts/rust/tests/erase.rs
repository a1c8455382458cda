//! Erasure through the component: after `erase` no stored value and no
//! export holds the erased text, another namespace in the same store is
//! untouched byte for byte, an unknown id is `invalid-input` and changes
//! nothing, and `destroy` removes every key of the namespace.

mod common;

use std::collections::BTreeMap;

use common::text;
use engram_wasmtime_host::{Engram, EraseTarget, MemStore, MemoryError, Role};

const SECRET: &str = "Zorblax-4471";

fn open(store: &MemStore, namespace: &str) -> Engram {
    common::open_offline(store, namespace)
}

fn converse(memory: &mut Engram) {
    let turns = [
        format!("My locker code at the gym is {SECRET}, please remember it."),
        "Let's plan the Lisbon offsite for the sales team in March.".into(),
        "We agreed the budget is 12000 euros for the whole offsite.".into(),
    ];
    for (i, t) in turns.iter().enumerate() {
        memory.host().now_ms += 60_000;
        memory.add_message(&text(Role::User, t)).expect("add");
        memory.host().now_ms += 60_000;
        memory
            .add_message(&text(Role::Assistant, &format!("Noted, point {i}.")))
            .expect("add");
    }
}

/// Whether stored bytes hold `text`.
fn holds(value: &[u8], text: &str) -> bool {
    value.windows(text.len()).any(|w| w == text.as_bytes())
}

fn namespace(store: &MemStore, ns: &str, inside: bool) -> BTreeMap<String, Vec<u8>> {
    let prefix = format!("engram/{ns}/");
    store
        .snapshot()
        .into_iter()
        .filter(|(k, _)| k.starts_with(&prefix) == inside)
        .collect()
}

#[test]
fn erase_leaves_no_byte_in_the_store_and_destroy_removes_the_namespace() {
    let store = MemStore::new();
    let mut other = open(&store, "other");
    converse(&mut other);
    let mut memory = open(&store, "alice");
    converse(&mut memory);
    let untouched = namespace(&store, "alice", false);
    assert!(namespace(&store, "alice", true)
        .values()
        .any(|v| holds(v, SECRET)));

    let err = memory.erase(EraseTarget::Fact(999)).expect_err("unknown");
    assert!(
        matches!(
            err.downcast_ref::<MemoryError>(),
            Some(MemoryError::InvalidInput(_))
        ),
        "{err:#}"
    );
    let erased = memory.erase(EraseTarget::Message(1)).expect("erase");
    assert_eq!(erased.messages, vec![1]);
    let export = memory
        .call(|m, store, memory| m.call_export(store, memory))
        .expect("export");
    let export = export.into_bytes();
    for v in namespace(&store, "alice", true).values().chain([&export]) {
        assert!(
            !holds(v, SECRET) && !holds(v, "locker"),
            "{}",
            String::from_utf8_lossy(v)
        );
    }
    let messages = memory.messages().expect("messages");
    assert!(messages[0].erased && messages[0].content.is_empty());
    assert_eq!(namespace(&store, "alice", false), untouched);

    memory.destroy().expect("destroy");
    assert!(namespace(&store, "alice", true).is_empty());
    assert_eq!(store.snapshot(), untouched);
    assert!(memory.messages().expect("messages").is_empty());
}
