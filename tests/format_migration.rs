//! Stores written by the previous format (2: JSON log entries plus a
//! whole-state snapshot) open unchanged, and their first commit rewrites
//! them into segments (format 3). The fixture `tests/fixtures/format2-*.json`
//! was written by engram at format 2 (commit e05b950): the bundled sample
//! conversation replayed on the offline model, with what that build read
//! back (view, facts, a search) alongside.
//!
//! Stores of format 3 whose entries and segments have encoding version 3
//! (names used before in two bytes, event types as strings) open unchanged
//! too, and new entries (version 4) go on beside them, in the tail and in
//! the same segments. The fixture `tests/fixtures/format3-*.json` was
//! written by engram at 69aa31e (the format-2 fixture opened and two turns
//! added: segments and tail entries of version 3; values in hex).

use std::collections::BTreeMap;

use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::types::recall::SearchOptions;
use engram::Config;
use engram::Memory;
use engram::NewMessage;
use engram::OfflineModel;
use serde_json::{json, Value};

const NS: &str = "legacy";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

fn legacy_store() -> MemoryStore {
    let dump: BTreeMap<String, String> =
        serde_json::from_str(&fixture("format2-store.json")).unwrap();
    let store = MemoryStore::new();
    for (k, v) in &dump {
        store.poke(k, Some(v.as_bytes()));
    }
    store
}

fn expected() -> Value {
    without_vectors(serde_json::from_str(&fixture("format2-expected.json")).unwrap())
}

fn config() -> Config {
    Config {
        snapshot_every: 16,
        ceiling_tokens: 1_200,
        ..Config::default()
    }
}

type Mem = Memory<MemoryStore, OfflineModel, ManualClock>;

fn open(store: &MemoryStore, clock: &ManualClock) -> Mem {
    block_on(Memory::open(
        NS,
        store.clone(),
        OfflineModel::new(),
        clock.clone(),
        config(),
    ))
    .expect("opens")
}

/// `v` without its vectors: they are kept at f16 now (crate::bytes), so
/// format 2's f32 vectors read back rounded; everything else is equal (scores
/// to 12 digits: a fused score is a sum whose last bit may differ).
fn without_vectors(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("embedding");
                if let Some(x) = m.get("score").and_then(Value::as_f64) {
                    m.insert("score".into(), json!((x * 1e12).round() / 1e12));
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

fn same(got: &Value, want: &Value, what: &str) {
    if got != want {
        let g = serde_json::to_string_pretty(got).unwrap();
        let w = serde_json::to_string_pretty(want).unwrap();
        let line = g
            .lines()
            .zip(w.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "{what} differs at line {line}:\n got: {}\nwant: {}",
            g.lines()
                .skip(line.saturating_sub(3))
                .take(8)
                .collect::<Vec<_>>()
                .join("\n"),
            w.lines()
                .skip(line.saturating_sub(3))
                .take(8)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

fn read_back(m: &mut Mem) -> Value {
    without_vectors(json!({
        "view": block_on(m.view()).unwrap(),
        "facts": block_on(m.facts()).unwrap(),
        "search": block_on(m.search("beta sign-up", SearchOptions::default())).unwrap(),
        "messages": block_on(m.messages()).unwrap().len(),
    }))
}

#[test]
fn a_memory_written_by_format_2_opens_unchanged() {
    let want = expected();
    let store = legacy_store();
    let clock = ManualClock::at(want["now"].as_i64().unwrap());
    let mut m = open(&store, &clock);
    assert!(
        m.storage_warnings().is_empty(),
        "{:?}",
        m.storage_warnings()
    );
    let got = read_back(&mut m);
    // (Search is not compared: its ranking has changed since, issue 13.)
    for part in ["view", "facts", "messages"] {
        same(&got[part], &want[part], part);
    }
    assert_eq!(
        block_on(m.threads()).unwrap()[0].messages,
        got["messages"].as_u64().unwrap() as usize,
        "one main thread"
    );
    assert!(!got["search"].as_array().unwrap().is_empty());
    // Its export in parts (read from the JSON log keys) is the whole export.
    let whole = block_on(m.export()).unwrap();
    let mut part = block_on(m.export_part(None, 1024)).unwrap();
    let mut texts = vec![part.text];
    while let Some(next) = part.next {
        part = block_on(m.export_part(Some(next), 1024)).unwrap();
        texts.push(part.text);
    }
    assert!(texts.len() > 2, "{} parts", texts.len());
    assert_eq!(texts.concat(), whole, "the parts join to the export");
    // Reading writes nothing: the old values stay until a commit.
    assert_eq!(store.dump(), legacy_store().dump());
}

#[test]
fn the_first_commit_rewrites_format_2_into_segments() {
    let want = expected();
    let store = legacy_store();
    let clock = ManualClock::at(want["now"].as_i64().unwrap());
    let mut m = open(&store, &clock);
    clock.advance_minutes(1);
    block_on(m.add_message(NewMessage::user(
        "One more thing: the launch moved to Friday.",
    )))
    .expect("add");
    let dump = store.dump();
    let head: Value = serde_json::from_slice(&dump[&format!("engram/{NS}/head")]).unwrap();
    assert_eq!(head["version"], 3);
    assert!(
        dump.keys()
            .all(|k| k.ends_with("/head") || k.contains("/seg/") || k.contains("/log/")),
        "{:?}",
        dump.keys().collect::<Vec<_>>()
    );
    assert!(!dump.contains_key(&format!("engram/{NS}/snapshot")));
    assert!(
        dump.values().all(|v| !v.starts_with(b"{\"seq\"")),
        "no JSON entry left"
    );
    // Every old message is stored once, in the segments.
    let export: Value = serde_json::from_str(&block_on(m.export()).unwrap()).unwrap();
    assert_eq!(
        export["log"].as_array().unwrap().len() as u64,
        head["seq"].as_u64().unwrap()
    );
    let live = read_back(&mut m);
    let mut again = open(&store, &clock);
    same(&read_back(&mut again), &live, "the reopened memory");
    assert_eq!(live["messages"], want["messages"].as_u64().unwrap() + 1);
    same(&live["facts"], &want["facts"], "facts");
}

#[test]
fn a_format_2_snapshot_that_fails_its_checks_is_ignored_and_rebuilt_from_the_log() {
    let want = expected();
    let store = legacy_store();
    // A snapshot whose one episode lists a trace that does not exist.
    let mut snap = json!({"version": 1, "seq": 80, "state": {
        "messages": [], "episodes": [], "traces": [], "entities": [], "facts": [], "fades": [],
        "dimension": null, "last_user_at": null}});
    let first = serde_json::to_value(&want["export"]["log"][0]["events"][0]).unwrap();
    let mut message = first.clone();
    message.as_object_mut().unwrap().remove("type");
    snap["state"]["messages"] = json!([message]);
    snap["state"]["episodes"] = json!([{"id": 1, "first": 1, "last": 1, "formed_at": 0,
        "tokens": 40, "state": "live", "history": [], "traces": [7], "facts": []}]);
    store.poke(
        &format!("engram/{NS}/snapshot"),
        Some(snap.to_string().as_bytes()),
    );
    store.poke(
        &format!("engram/{NS}/head"),
        Some(
            json!({"version": 1, "seq": 88, "snapshot": 80})
                .to_string()
                .as_bytes(),
        ),
    );
    let clock = ManualClock::at(want["now"].as_i64().unwrap());
    let mut m = open(&store, &clock);
    let warnings = m.storage_warnings().to_vec();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("snapshot"), "{warnings:?}");
    same(&read_back(&mut m)["view"], &want["view"], "view");
}

#[test]
fn an_erase_on_a_format_2_memory_rewrites_it_into_segments_without_the_erased_text() {
    let want = expected();
    let store = legacy_store();
    let clock = ManualClock::at(want["now"].as_i64().unwrap());
    let mut m = open(&store, &clock);
    let first = block_on(m.messages()).unwrap()[0].content.clone();
    let needle = &first[..first.len().min(40)];
    assert!(store
        .dump()
        .values()
        .any(|v| v.windows(needle.len()).any(|w| w == needle.as_bytes())));
    let erased = block_on(m.erase(engram::types::erase::Target::Message(1))).expect("erase");
    assert_eq!(erased.messages, vec![1]);
    let dump = store.dump();
    assert!(!dump.contains_key(&format!("engram/{NS}/snapshot")));
    assert!(dump
        .keys()
        .all(|k| k.ends_with("/head") || k.contains("/seg/")));
    for (k, v) in &dump {
        assert!(
            !v.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{k} still holds the erased text"
        );
    }
    let live = read_back(&mut m);
    same(
        &read_back(&mut open(&store, &clock)),
        &live,
        "the reopened memory",
    );
}

fn format3_store() -> MemoryStore {
    let dump: BTreeMap<String, String> =
        serde_json::from_str(&fixture("format3-store.json")).unwrap();
    let store = MemoryStore::new();
    for (k, v) in &dump {
        let bytes: Vec<u8> = (0..v.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&v[i..i + 2], 16).unwrap())
            .collect();
        store.poke(k, Some(&bytes));
    }
    store
}

/// The encoding version of every stored entry and segment.
fn entry_versions(store: &MemoryStore) -> Vec<u8> {
    store
        .dump()
        .iter()
        .filter(|(k, _)| k.contains("/seg/") || k.contains("/log/"))
        .map(|(_, v)| v[4])
        .collect()
}

#[test]
fn a_memory_written_with_entries_of_version_3_opens_unchanged_and_goes_on() {
    let want = without_vectors(serde_json::from_str(&fixture("format3-expected.json")).unwrap());
    let store = format3_store();
    assert!(entry_versions(&store).iter().all(|&v| v == 3));
    let clock = ManualClock::at(want["now"].as_i64().unwrap());
    let mut m = open(&store, &clock);
    assert!(
        m.storage_warnings().is_empty(),
        "{:?}",
        m.storage_warnings()
    );
    let got = read_back(&mut m);
    // (Search is not compared, as above: ranking may change on its own.)
    for part in ["view", "facts", "messages"] {
        same(&got[part], &want[part], part);
    }
    // Written before threads, it is one `main` thread whose view is the
    // view it had.
    let threads = block_on(m.threads()).unwrap();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0].thread, "main");
    assert_eq!(
        threads[0].messages,
        got["messages"].as_u64().unwrap() as usize
    );
    let main = without_vectors(serde_json::to_value(block_on(m.view_in("main")).unwrap()).unwrap());
    same(&main, &want["view"], "the main thread's view");
    assert!(!got["search"].as_array().unwrap().is_empty());
    assert_eq!(
        store.dump(),
        format3_store().dump(),
        "reading writes nothing"
    );

    // New entries are written at version 4, the tail of version-3 entries
    // is gathered with them into a segment, and all of it reads back.
    for i in 0..20 {
        clock.advance_minutes(1);
        block_on(m.add_message(NewMessage::user(format!(
            "Reminder {i}: the beta sign-up needs a landing page."
        ))))
        .expect("add");
    }
    let versions = entry_versions(&store);
    assert!(
        versions.contains(&3) && versions.contains(&4),
        "{versions:?}"
    );
    assert!(
        store
            .dump()
            .iter()
            .any(|(k, v)| k.contains("/seg/") && v[4] == 4),
        "a segment gathered the old tail with new entries"
    );
    let live = read_back(&mut m);
    let mut again = open(&store, &clock);
    assert!(again.storage_warnings().is_empty());
    same(&read_back(&mut again), &live, "the reopened memory");
    let export: Value = serde_json::from_str(&block_on(again.export()).unwrap()).unwrap();
    let before: Value =
        serde_json::from_str(&block_on(open(&format3_store(), &clock).export()).unwrap()).unwrap();
    let n = before["log"].as_array().unwrap().len();
    assert_eq!(
        export["log"].as_array().unwrap()[..n],
        before["log"].as_array().unwrap()[..]
    );
}
