//! Salvage: a memory whose stored log is damaged (a segment truncated, a
//! byte flipped, a key deleted, a tail entry damaged) does not open with
//! `open` (`Corrupt`, naming the key and saying how to recover), and opens
//! with `open_salvage`: read-only, every message of the entries that read
//! clean there once, each loss reported with its key and range, writes
//! refused without touching the store, and its export imports into a fresh
//! store that takes new messages.

use std::collections::BTreeSet;

use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::types::recall::SearchOptions;
use engram::Error;
use engram::FactKind;
use engram::NewMessage;
use engram::NoteArgs;
use engram::Role;
use serde_json::Value;

mod scripted_conversation;
use scripted_conversation::*;

const NS: &str = "salvage";

fn open(store: &MemoryStore, clock: &ManualClock) -> engram::Result<Mem> {
    open_in(NS, store, clock)
}

fn open_salvage(store: &MemoryStore, clock: &ManualClock) -> engram::Result<Mem> {
    open_salvage_in(NS, store, clock)
}

/// A memory of a long scripted conversation: several hundred log entries,
/// in segments of 16 (`config().snapshot_every`) and a tail.
fn long_memory(messages: usize) -> (MemoryStore, ManualClock) {
    let store = MemoryStore::new();
    let clock = ManualClock::at(START);
    let mut m = open(&store, &clock).expect("opens");
    for step in conversation(messages, 7) {
        clock.advance(step.advance_ms);
        block_on(m.add_message(step.message)).expect("adds");
    }
    (store, clock)
}

fn segment_keys(store: &MemoryStore) -> Vec<String> {
    store
        .dump()
        .into_keys()
        .filter(|k| k.starts_with(&format!("engram/{NS}/seg/")))
        .collect()
}

/// The seq range a segment held, read from the undamaged export.
fn segment_range(store: &MemoryStore, key: &str) -> (u64, u64) {
    let segs = segment_keys(store);
    let i = segs.iter().position(|k| k == key).expect("a segment");
    let first: u64 = key.rsplit('/').next().unwrap().parse().unwrap();
    let last = match segs.get(i + 1) {
        Some(next) => next.rsplit('/').next().unwrap().parse::<u64>().unwrap() - 1,
        None => flushed(store),
    };
    (first, last)
}

fn flushed(store: &MemoryStore) -> u64 {
    let head: Value =
        serde_json::from_slice(&store.peek(&format!("engram/{NS}/head")).unwrap()).unwrap();
    head["flushed"].as_u64().unwrap()
}

/// The ids of the messages that log entries `lost` added, from an export.
fn messages_added_in(export: &str, lost: (u64, u64)) -> BTreeSet<u64> {
    let doc: Value = serde_json::from_str(export).unwrap();
    doc["log"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| (lost.0..=lost.1).contains(&e["seq"].as_u64().unwrap()))
        .flat_map(|e| e["events"].as_array().unwrap().clone())
        .filter(|e| e["type"] == "message")
        .map(|e| e["id"].as_u64().unwrap())
        .collect()
}

/// What a message says (its judgment may have been in a lost entry).
fn said(m: &engram::Message) -> (u64, Role, String, i64) {
    (m.id, m.role, m.content.clone(), m.at)
}

/// Every message of the undamaged memory outside the lost entries is in
/// the salvaged one once, at its id, as it was said.
fn assert_messages_kept(salvaged: &mut Mem, whole: &[engram::Message], lost: &BTreeSet<u64>) {
    let got = block_on(salvaged.messages()).unwrap();
    assert_eq!(got.len(), whole.len(), "every id has a message");
    for (g, w) in got.iter().zip(whole) {
        if lost.contains(&w.id) {
            assert!(g.erased && g.content.is_empty(), "message {} lost", w.id);
        } else {
            assert_eq!(said(g), said(w), "message {}", w.id);
        }
    }
    let contents: Vec<&str> = got
        .iter()
        .filter(|m| !m.erased)
        .map(|m| m.content.as_str())
        .collect();
    let unique: BTreeSet<(u64, &str)> = got
        .iter()
        .filter(|m| !m.erased)
        .map(|m| (m.id, m.content.as_str()))
        .collect();
    assert_eq!(unique.len(), contents.len(), "no message twice");
}

/// Every write the handle offers fails with the read-only error and leaves
/// the store byte for byte as it was.
fn assert_writes_refused(m: &mut Mem, store: &MemoryStore) {
    let before = store.dump();
    let refused = |r: engram::Result<()>, what: &str| match r {
        Err(Error::InvalidInput(msg)) => assert!(
            msg.contains("opened for salvage: read-only")
                && msg.contains("export it and import into a new store"),
            "{what}: {msg}"
        ),
        other => panic!("{what}: expected the read-only error, got {other:?}"),
    };
    refused(
        block_on(m.add_message(NewMessage::user("one more thing about lisbon"))).map(|_| ()),
        "add_message",
    );
    refused(
        block_on(m.note(NoteArgs {
            episode: None,
            facts: vec![engram::NewFact {
                subject: "Ana".into(),
                predicate: "likes".into(),
                object: "tea".into(),
                sentence: "Ana likes tea.".into(),
                kind: FactKind::Fact,
                sources: Vec::new(),
            }],
        }))
        .map(|_| ()),
        "note",
    );
    refused(block_on(m.maintain()).map(|_| ()), "maintain");
    refused(block_on(m.end_turn()).map(|_| ()), "end_turn");
    refused(
        block_on(m.set_instructions("be brief")).map(|_| ()),
        "set_instructions",
    );
    refused(
        block_on(m.erase(engram::Target::Message(1))).map(|_| ()),
        "erase",
    );
    refused(block_on(m.import("{}")), "import");
    refused(block_on(m.destroy()), "destroy");
    assert_eq!(store.dump(), before, "a refused write changed the store");
}

/// Export, import into a fresh store, and go on there.
fn assert_exports_into_a_fresh_store(m: &mut Mem, clock: &ManualClock) -> Mem {
    let export = block_on(m.export()).expect("exports");
    // In parts too (from the salvaged log when the stored one was damaged).
    let mut part = block_on(m.export_part(None, 2048)).expect("a part");
    let mut texts = vec![part.text];
    while let Some(next) = part.next {
        part = block_on(m.export_part(Some(next), 2048)).expect("a part");
        texts.push(part.text);
    }
    assert!(texts.len() > 2, "{} parts", texts.len());
    assert_eq!(texts.concat(), export, "the parts join to the export");
    let fresh = MemoryStore::new();
    let mut copy = open(&fresh, clock).expect("opens empty");
    block_on(copy.import(&export)).expect("the salvaged export imports");
    assert_eq!(
        block_on(copy.messages()).unwrap(),
        block_on(m.messages()).unwrap(),
        "the import holds the salvaged messages"
    );
    clock.advance_minutes(1);
    // A tool call whose output the lost entries held waits for it: closed
    // as abandoned before the conversation goes on.
    let messages = block_on(copy.messages()).unwrap();
    let mut waiting: Vec<String> = Vec::new();
    for m in &messages {
        if m.role == engram::Role::User {
            waiting.clear();
        }
        waiting.extend(m.tool_calls.iter().map(|c| c.id.clone()));
        if let Some(id) = &m.tool_call_id {
            waiting.retain(|w| w != id);
        }
    }
    for id in waiting {
        block_on(copy.abandon_tool_call(&id)).expect("abandoned");
    }
    block_on(copy.add_message(NewMessage::user("back to the lisbon trip plans")))
        .expect("the imported memory takes new messages");
    clock.advance_minutes(1);
    block_on(copy.add_message(NewMessage::assistant("Sure, the lisbon trip it is.")))
        .expect("and replies");
    let mut again = open(&fresh, clock).expect("the new store opens with open");
    assert!(block_on(again.stats()).unwrap().storage_warnings.is_empty());
    copy
}

enum Damage {
    Truncate,
    FlipByte,
    Delete,
}

fn damage(store: &MemoryStore, key: &str, how: Damage) {
    let value = store.peek(key).expect("the key is stored");
    match how {
        Damage::Truncate => store.poke(key, Some(&value[..value.len() / 2])),
        Damage::FlipByte => {
            let mut v = value.clone();
            let i = v.len() * 2 / 3;
            v[i] ^= 0x5a;
            store.poke(key, Some(&v));
        }
        Damage::Delete => store.poke(key, None),
    }
}

/// Damages the middle segment of a long memory `how`, and checks the whole
/// salvage path.
fn salvage_a_damaged_middle_segment(how: Damage) {
    let (store, clock) = long_memory(240);
    let segs = segment_keys(&store);
    assert!(segs.len() >= 6, "{} segments", segs.len());
    let key = segs[segs.len() / 2].clone();
    let lost = segment_range(&store, &key);
    let mut whole_mem = open(&store, &clock).unwrap();
    let whole = block_on(whole_mem.messages()).unwrap();
    let whole_export = block_on(whole_mem.export()).unwrap();
    let lost_messages = messages_added_in(&whole_export, lost);
    assert!(!lost_messages.is_empty(), "the lost entries held messages");
    drop(whole_mem);

    damage(&store, &key, how);

    match open(&store, &clock) {
        Err(Error::Corrupt(m)) => {
            assert!(m.contains(&key), "names the key: {m}");
            assert!(m.contains("open_salvage"), "says how to recover: {m}");
        }
        Err(e) => panic!("expected Corrupt, got {e}"),
        Ok(_) => panic!("a damaged memory opened for writing"),
    }

    let before = store.dump();
    let mut m = open_salvage(&store, &clock).expect("opens for salvage");
    assert!(m.is_salvage());
    let warnings = m.storage_warnings().to_vec();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&key) && w.contains(&format!("{}..={}", lost.0, lost.1))),
        "the loss is reported with its key and range: {warnings:#?}"
    );
    assert_messages_kept(&mut m, &whole, &lost_messages);

    // Reads work.
    block_on(m.view()).expect("view");
    block_on(m.episodes()).expect("episodes");
    block_on(m.facts()).expect("facts");
    let stats = block_on(m.stats()).expect("stats");
    assert_eq!(stats.storage_warnings, warnings);
    block_on(m.search("lisbon", SearchOptions::default())).expect("search");
    let facts = block_on(m.facts()).unwrap();
    if let Some(f) = facts.iter().find(|f| !f.erased) {
        block_on(m.explain_fact(f.id)).expect("explain_fact");
    }
    block_on(m.view_at(START + 60_000)).expect("view_at");

    assert_writes_refused(&mut m, &store);
    assert_exports_into_a_fresh_store(&mut m, &clock);
    assert_eq!(store.dump(), before, "salvage wrote to the damaged store");
}

#[test]
fn a_truncated_middle_segment_is_skipped_and_the_rest_opens_for_salvage() {
    salvage_a_damaged_middle_segment(Damage::Truncate);
}

#[test]
fn a_middle_segment_with_a_flipped_byte_is_skipped_and_the_rest_opens_for_salvage() {
    salvage_a_damaged_middle_segment(Damage::FlipByte);
}

#[test]
fn a_deleted_middle_segment_is_corrupt_not_busy_and_the_rest_opens_for_salvage() {
    salvage_a_damaged_middle_segment(Damage::Delete);
}

#[test]
fn a_damaged_tail_entry_is_skipped_and_the_entries_after_it_still_apply() {
    // A memory of about 200 messages whose log tail (entries not yet
    // compacted into a segment) holds three entries at least: how many it
    // holds depends on where the last segment was cut.
    let tail_of = |store: &MemoryStore| -> Vec<String> {
        store
            .dump()
            .keys()
            .filter(|k| k.starts_with(&format!("engram/{NS}/log/")))
            .cloned()
            .collect()
    };
    let (store, clock) = (200..240)
        .map(long_memory)
        .find(|(store, _)| tail_of(store).len() >= 3)
        .expect("a memory with three tail entries");
    let tail = tail_of(&store);
    let key = tail[1].clone();
    let seq: u64 = key.rsplit('/').next().unwrap().parse().unwrap();
    let mut whole_mem = open(&store, &clock).unwrap();
    let whole = block_on(whole_mem.messages()).unwrap();
    let lost_messages = messages_added_in(&block_on(whole_mem.export()).unwrap(), (seq, seq));
    drop(whole_mem);

    damage(&store, &key, Damage::FlipByte);
    match open(&store, &clock) {
        Err(Error::Corrupt(m)) => assert!(m.contains(&key) && m.contains("open_salvage"), "{m}"),
        other => panic!("expected Corrupt, got {:?}", other.err()),
    }
    let before = store.dump();
    let mut m = open_salvage(&store, &clock).expect("opens for salvage");
    let warnings = m.storage_warnings().to_vec();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&key) && w.contains(&format!("log entry {seq} lost"))),
        "{warnings:#?}"
    );
    assert_messages_kept(&mut m, &whole, &lost_messages);
    assert_writes_refused(&mut m, &store);
    assert_exports_into_a_fresh_store(&mut m, &clock);

    // A deleted tail entry too (it was `Busy` before: nobody moved it).
    damage(&store, &key, Damage::Delete);
    match open(&store, &clock) {
        Err(Error::Corrupt(m)) => assert!(m.contains(&key) && m.contains("missing"), "{m}"),
        other => panic!("expected Corrupt, got {:?}", other.err()),
    }
    let mut m = open_salvage(&store, &clock).expect("opens for salvage");
    assert_messages_kept(&mut m, &whole, &lost_messages);
    assert_exports_into_a_fresh_store(&mut m, &clock);
    assert_eq!(store.dump().len(), before.len() - 1);
}

#[test]
fn an_undamaged_memory_opens_for_salvage_with_no_warnings_and_the_same_view() {
    let (store, clock) = long_memory(120);
    let before = store.dump();
    let mut whole = open(&store, &clock).unwrap();
    let mut m = open_salvage(&store, &clock).expect("opens for salvage");
    assert!(
        m.storage_warnings().is_empty(),
        "{:?}",
        m.storage_warnings()
    );
    assert_eq!(block_on(m.view()).unwrap(), block_on(whole.view()).unwrap());
    assert_eq!(
        block_on(m.messages()).unwrap(),
        block_on(whole.messages()).unwrap()
    );
    assert_eq!(
        block_on(m.facts()).unwrap(),
        block_on(whole.facts()).unwrap()
    );
    assert_eq!(
        block_on(m.export()).unwrap(),
        block_on(whole.export()).unwrap()
    );
    assert_writes_refused(&mut m, &store);
    assert_eq!(store.dump(), before);
}

#[test]
fn two_damaged_segments_and_a_damaged_tail_entry_are_all_reported_and_skipped() {
    let (store, clock) = long_memory(240);
    let segs = segment_keys(&store);
    let (a, b) = (segs[2].clone(), segs[segs.len() - 2].clone());
    let (ra, rb) = (segment_range(&store, &a), segment_range(&store, &b));
    let tail = store
        .dump()
        .into_keys()
        .find(|k| k.starts_with(&format!("engram/{NS}/log/")))
        .expect("a tail entry");
    let mut whole_mem = open(&store, &clock).unwrap();
    let whole = block_on(whole_mem.messages()).unwrap();
    let export = block_on(whole_mem.export()).unwrap();
    let tail_seq: u64 = tail.rsplit('/').next().unwrap().parse().unwrap();
    let mut lost = messages_added_in(&export, ra);
    lost.extend(messages_added_in(&export, rb));
    lost.extend(messages_added_in(&export, (tail_seq, tail_seq)));
    drop(whole_mem);

    damage(&store, &a, Damage::Truncate);
    damage(&store, &b, Damage::FlipByte);
    damage(&store, &tail, Damage::Truncate);
    let mut m = open_salvage(&store, &clock).expect("opens for salvage");
    let warnings = m.storage_warnings().to_vec();
    for key in [&a, &b, &tail] {
        assert!(
            warnings.iter().any(|w| w.contains(key.as_str())),
            "{key}: {warnings:#?}"
        );
    }
    assert_messages_kept(&mut m, &whole, &lost);
    assert_exports_into_a_fresh_store(&mut m, &clock);
}
