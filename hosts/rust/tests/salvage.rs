//! Salvage through the component: a memory with a damaged log segment does
//! not `open` (`corrupt`, naming the key and the way back), opens with
//! `open-salvage` read-only (the loss in `storage-warnings`, writes
//! `invalid-input` with nothing written), and its export imports into a
//! fresh store that takes new messages.

mod common;

use common::{component, text};
use engram_wasmtime_host::{Engram, Host, HostStore, MemStore, MemoryError, ModelChoice, Role};

const NS: &str = "salvage";
/// Segments of four entries, so a short conversation has several.
const CONFIG: &str = r#"{"ceiling_tokens": 400, "snapshot_every": 4}"#;

fn open(store: &MemStore, salvage: bool) -> wasmtime::Result<Engram> {
    let (engine, component) = component();
    let host = Host::with_choice(1_764_000_000_000, store.clone(), ModelChoice::Offline);
    match salvage {
        true => Engram::open_salvage(engine, component, host, NS, CONFIG),
        false => Engram::open(engine, component, host, NS, CONFIG),
    }
}

fn error(e: &wasmtime::Error) -> &MemoryError {
    e.downcast_ref::<MemoryError>().expect("a memory error")
}

#[test]
fn a_damaged_segment_is_corrupt_and_the_rest_opens_for_salvage_read_only() {
    let store = MemStore::new();
    let mut memory = open(&store, false).expect("opens");
    for i in 0..12 {
        memory.host().now_ms += 60_000;
        let t = format!("Point {i} of the Lisbon offsite plan: the venue needs booking.");
        memory.add_message(&text(Role::User, &t)).expect("add");
        memory.host().now_ms += 60_000;
        let r = format!("Noted point {i}.");
        memory.add_message(&text(Role::Assistant, &r)).expect("add");
    }
    let whole = memory.messages().expect("messages");
    drop(memory);
    let segs: Vec<String> = store
        .snapshot()
        .into_keys()
        .filter(|k| k.starts_with(&format!("engram/{NS}/seg/")))
        .collect();
    assert!(segs.len() >= 3, "{segs:?}");
    let key = &segs[segs.len() / 2];
    let mut value = store.get(key).unwrap().unwrap();
    let i = value.len() * 2 / 3;
    value[i] ^= 0x5a;
    store.put(key, &value).unwrap();

    let err = open(&store, false)
        .err()
        .expect("a damaged memory does not open");
    match error(&err) {
        MemoryError::Corrupt(m) => assert!(
            m.contains(key.as_str()) && m.contains("open_salvage"),
            "{m}"
        ),
        e => panic!("expected corrupt, got {e:?}"),
    }

    let before = store.snapshot();
    let mut salvaged = open(&store, true).expect("opens for salvage");
    let stats = salvaged.stats().expect("stats");
    assert!(
        stats
            .storage_warnings
            .iter()
            .any(|w| w.contains(key.as_str())),
        "{:?}",
        stats.storage_warnings
    );
    let messages = salvaged.messages().expect("messages");
    assert_eq!(messages.len(), whole.len());
    let kept = messages.iter().filter(|m| !m.erased).count();
    assert!(kept > 0 && kept < whole.len(), "{kept} of {}", whole.len());
    for (got, want) in messages.iter().zip(&whole).filter(|(g, _)| !g.erased) {
        assert_eq!(got.content, want.content);
    }
    let err = salvaged
        .add_message(&text(Role::User, "one more point"))
        .expect_err("read-only");
    match error(&err) {
        MemoryError::InvalidInput(m) => assert!(m.contains("opened for salvage: read-only"), "{m}"),
        e => panic!("expected invalid-input, got {e:?}"),
    }
    assert_eq!(store.snapshot(), before, "salvage wrote to the store");

    let export = salvaged
        .call(|m, store, memory| m.call_export(store, memory))
        .expect("export");
    let fresh = MemStore::new();
    let mut copy = open(&fresh, false).expect("opens empty");
    copy.call(|m, store, memory| m.call_import(store, memory, &export))
        .expect("the salvaged export imports");
    copy.host().now_ms += 60_000;
    copy.add_message(&text(Role::User, "Back to the Lisbon venue."))
        .expect("the imported memory takes new messages");
    assert_eq!(copy.messages().expect("messages").len(), whole.len() + 1);
}
