//! `SqliteStore`: a memory written through it is there when the file is
//! opened again (a new store, a new component instance); `write_if` is a
//! compare-and-set (a stale guard writes nothing); values are kept as bytes.

mod common;

use std::path::PathBuf;

use common::{component, text};
use engram_wasmtime_host::{Engram, Host, HostStore, ModelChoice, Role, SqliteStore, StoreError};

const T0: i64 = 1_772_445_600_000;

/// A fresh file path under the system's temp dir (removed when dropped).
struct TempDb(PathBuf);

impl TempDb {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "engram-host-{name}-{}-{:?}.db",
            std::process::id(),
            std::thread::current().id()
        ));
        remove(&path);
        TempDb(path)
    }
}

fn remove(path: &std::path::Path) {
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        remove(&self.0);
    }
}

fn open(db: &TempDb, namespace: &str, now_ms: i64) -> Engram {
    let (engine, component) = component();
    let store = SqliteStore::open(&db.0).expect("the file opens");
    let host = Host::with_choice(now_ms, store, ModelChoice::Offline);
    Engram::open(
        engine,
        component,
        host,
        namespace,
        r#"{"ceiling_tokens": 400}"#,
    )
    .expect("opens")
}

#[test]
fn a_memory_reopens_from_its_sqlite_file() {
    let db = TempDb::new("reopen");
    let mut memory = open(&db, "alice", T0);
    let said = [
        "Let's plan the Lisbon offsite for fifteen people.",
        "Gladly. What is the budget?",
        "About 20k euros, and we want a workshop room.",
        "Noted: 20k, fifteen people, a workshop room.",
    ];
    for (i, content) in said.iter().enumerate() {
        memory.host().now_ms = T0 + i as i64 * 60_000;
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        memory.add_message(&text(role, content)).expect("add");
    }
    let view = memory.render_openai().expect("render");
    let export = memory.export().expect("export");
    memory.close().expect("close");

    // Another namespace in the same file stays apart.
    let mut bob = open(&db, "bob", T0);
    assert!(bob.messages().expect("messages").is_empty());
    bob.close().expect("close");

    // A new store over the file, a new instance: the same memory.
    let mut again = open(&db, "alice", T0 + 10 * 60_000);
    let messages = again.messages().expect("messages");
    assert_eq!(
        messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>(),
        said
    );
    assert_eq!(again.render_openai().expect("render"), view);
    assert_eq!(again.export().expect("export"), export);
    // And it goes on writing.
    again
        .add_message(&text(Role::User, "Also: vegetarian lunch."))
        .expect("add");
    assert_eq!(again.messages().expect("messages").len(), 5);
}

#[test]
fn write_if_is_a_compare_and_set_of_bytes() {
    let db = TempDb::new("cas");
    let store = SqliteStore::open(&db.0).expect("opens");
    let other = SqliteStore::open(&db.0).expect("a second connection");
    let bytes = vec![0u8, 159, 146, 150, 255];
    store
        .write_if(
            "g",
            None,
            &[
                ("g".into(), Some(b"1".to_vec())),
                ("k".into(), Some(bytes.clone())),
            ],
        )
        .expect("first commit");
    assert_eq!(
        other.get("k").expect("get"),
        Some(bytes.clone()),
        "bytes kept as given"
    );
    // A stale guard writes nothing.
    let stale = other.write_if("g", None, &[("k".into(), None)]);
    assert!(matches!(stale, Err(StoreError::Conflict)), "{stale:?}");
    assert_eq!(store.get("k").expect("get"), Some(bytes));
    other
        .write_if(
            "g",
            Some(b"1"),
            &[("g".into(), Some(b"2".to_vec())), ("k".into(), None)],
        )
        .expect("the guard holds");
    assert_eq!(store.get("k").expect("get"), None);
    store.put("engram/a/1", b"x").expect("put");
    store.put("engram/a/2", b"y").expect("put");
    store.put("engram/b/1", b"z").expect("put");
    assert_eq!(
        store.list_prefix("engram/a/").expect("list"),
        vec!["engram/a/1".to_string(), "engram/a/2".to_string()]
    );
    store.delete("engram/a/1").expect("delete");
    assert_eq!(store.list_prefix("engram/").expect("list").len(), 2);
}
