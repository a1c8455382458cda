//! The clock through the component: a reading in seconds (or any before
//! 2000) is `invalid-input` naming the likely mistake and writes nothing; a
//! clock stepped back is clamped to the memory's last stamp and reported in
//! `stats().storage_warnings`.

mod common;

use common::{component, text};
use engram_wasmtime_host::{Engram, Host, MemStore, MemoryError, ModelChoice, Role};

const T0: i64 = 1_772_445_600_000;
const MIN: i64 = 60_000;

fn open(store: &MemStore, now_ms: i64) -> Engram {
    let (engine, component) = component();
    let host = Host::with_choice(now_ms, store.clone(), ModelChoice::Offline);
    Engram::open(engine, component, host, "clock", "{}").expect("opens")
}

#[test]
fn a_clock_in_seconds_is_refused_naming_the_mistake() {
    let store = MemStore::new();
    // `SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs()`: seconds.
    let mut memory = open(&store, T0 / 1000);
    let err = memory
        .add_message(&text(Role::User, "Let's plan the Lisbon offsite."))
        .expect_err("refused");
    match MemoryError::from_wasmtime(&err) {
        Some(MemoryError::InvalidInput(m)) => assert!(
            m.contains("before 2000")
                && m.contains("clocks must return milliseconds since the Unix epoch")
                && m.contains("did you pass seconds?"),
            "{m}"
        ),
        other => panic!("{other:?}: {err:#}"),
    }
    assert!(store.is_empty(), "nothing written");
    memory.host().now_ms = T0;
    memory
        .add_message(&text(Role::User, "Let's plan the Lisbon offsite."))
        .expect("a clock in ms is fine");
}

#[test]
fn any_reading_before_2000_is_refused() {
    for reading in [0, 1_000, 946_684_799_999, -1] {
        let store = MemStore::new();
        let mut memory = open(&store, reading);
        let err = memory
            .add_message(&text(Role::User, "Hello."))
            .expect_err("refused");
        assert!(
            matches!(MemoryError::from_wasmtime(&err), Some(MemoryError::InvalidInput(m)) if m.contains("before 2000")),
            "{reading}: {err:#}"
        );
        assert!(store.is_empty());
    }
}

#[test]
fn a_clock_stepped_back_is_clamped_and_reported() {
    let store = MemStore::new();
    let mut memory = open(&store, T0 + 10 * MIN);
    memory
        .add_message(&text(Role::User, "Hello."))
        .expect("add");
    assert!(memory.stats().expect("stats").storage_warnings.is_empty());
    memory.host().now_ms = T0 + 5 * MIN;
    memory
        .add_message(&text(Role::User, "Hello again."))
        .expect("add");
    let at: Vec<i64> = memory
        .messages()
        .expect("messages")
        .iter()
        .map(|m| m.at)
        .collect();
    assert_eq!(at, vec![T0 + 10 * MIN, T0 + 10 * MIN]);
    let warnings = memory.stats().expect("stats").storage_warnings;
    let last = warnings.last().expect("reported");
    assert!(
        last.starts_with("clock:") && last.contains(&format!("{} ms before", 5 * MIN)),
        "{last}"
    );
}
