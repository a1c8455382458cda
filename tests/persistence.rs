//! Persistence: every changing call commits in one atomic write; reopening
//! gives the identical memory (from the log, or a snapshot and the log);
//! export/import round-trips; an unknown format version is refused; two
//! memories in one store never see each other's keys.

mod common;

use common::*;
use engram::testing::{ManualClock, MemoryStore, ScriptedModel};
use engram::Config;
use engram::Error;
use engram::NewMessage;
use engram::ToolCall;
use serde_json::{json, Value};

/// Everything a host can read of a memory, as one JSON value. The model's
/// health in the stats is left out: it is what one handle saw of the model
/// (requests and failures since it opened), not part of the memory.
fn snapshot(fx: &mut Fx) -> Value {
    let mut stats = serde_json::to_value(fx.stats()).unwrap();
    stats["model"] = Value::Null;
    json!({
        "messages": fx.messages(),
        "episodes": fx.episodes(),
        "facts": fx.facts(),
        "entities": fx.entities(),
        "traces": fx.traces(),
        "view": fx.view(),
        "stats": stats,
    })
}

/// A conversation with fades, facts, a contradiction and a tool call.
fn rich(config: Config) -> Fx {
    let mut fx = Fx::new(config);
    standard_segment(&fx.model);
    traces_by(&fx.model, |fact, _, text| {
        text.split_whitespace()
            .any(|w| w.len() > 3 && fact.contains(w))
    });
    reconcile_by(&fx.model, |new, held| {
        (new.contains("Porto") && held.contains("Lisbon")).then_some("contradicts")
    });
    notes_for(
        &fx.model,
        vec![
            (
                "lisbon",
                vec![fact(
                    "Alice",
                    "lives in",
                    "Lisbon",
                    "Alice lives in Lisbon.",
                )],
            ),
            (
                "porto",
                vec![fact("Alice", "lives in", "Porto", "Alice moved to Porto.")],
            ),
            (
                "garden",
                vec![kind_fact(
                    engram::FactKind::Done,
                    "garden",
                    "got",
                    "a fence",
                    "The garden fence is done.",
                )],
            ),
        ],
    );
    for t in ["lisbon", "garden", "taxes"] {
        fx.turn(t, 50, 50);
    }
    fx.user(&sized(&format!("{NEW} weather"), 30));
    let call = ToolCall {
        id: "c1".into(),
        name: "weather".into(),
        arguments: "{}".into(),
    };
    fx.add(NewMessage::tool_calls("", vec![call]));
    fx.add(NewMessage::tool_result("c1", "Sunny."));
    fx.assistant(&sized("sunny", 30));
    for t in ["porto", "bikes", "dinner", "car", "music"] {
        fx.turn(t, 50, 50);
    }
    assert!(fx.stats().fades >= 3);
    assert!(fx.facts().iter().any(|f| !f.is_live()));
    fx
}

#[test]
fn reopening_gives_the_identical_memory() {
    for snapshot_every in [1, 3, 64] {
        let mut fx = rich(Config {
            snapshot_every,
            ..config(400)
        });
        let before = snapshot(&mut fx);
        let export = fx.export();
        let mut again = fx.reopen();
        assert_eq!(
            snapshot(&mut again),
            before,
            "snapshot_every {snapshot_every}"
        );
        // The health is the handle's own: the new one has asked nothing yet.
        assert!(fx.stats().model.calls.values().sum::<u64>() > 0);
        assert_eq!(again.stats().model, engram::Health::default());
        assert_eq!(again.export(), export);
        // And it goes on exactly as the first handle would have.
        let a = again.user(&sized(&format!("{NEW} roof"), 50));
        let mut first = fx.reopen();
        assert_eq!(first.view(), again.view());
        assert_eq!(a.message, first.messages().len() as u64);
    }
}

#[test]
fn entries_gather_into_segments_every_n_commits_and_are_stored_once() {
    let mut fx = Fx::new(Config {
        snapshot_every: 4,
        ..Config::default()
    });
    for i in 0..9 {
        fx.user(&format!("message {i}"));
    }
    let dump = fx.store.dump();
    let keys: Vec<&str> = dump.keys().map(String::as_str).collect();
    let head: Value = serde_json::from_slice(&dump["engram/test/head"]).unwrap();
    // The head names its log by its first entry (`origin`, see src/store/log.rs).
    let origin = head["origin"].as_u64().expect("the head names its log");
    assert_ne!(origin, 0);
    assert_eq!(
        head,
        json!({"version": 3, "seq": 9, "flushed": 8, "origin": origin})
    );
    assert_eq!(
        keys,
        [
            "engram/test/head",
            "engram/test/log/00000000000000000009",
            "engram/test/seg/00000000000000000001",
            "engram/test/seg/00000000000000000005",
        ],
        "two segments of four and the newest entry: nothing kept twice, no snapshot"
    );
    // Each message's text is stored exactly once.
    for i in 0..9 {
        let needle = format!("message {i}");
        let copies: usize = dump
            .values()
            .map(|v| {
                v.windows(needle.len())
                    .filter(|w| *w == needle.as_bytes())
                    .count()
            })
            .sum();
        assert_eq!(copies, 1, "{needle}");
    }
    let mut again = fx.reopen();
    assert_eq!(again.messages().len(), 9);
    assert_eq!(again.view(), fx.view());
}

#[test]
fn every_changing_call_commits_in_one_write_and_reads_write_nothing() {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    for i in 0..6 {
        let w = fx.store.writes();
        fx.turn(&format!("t{i}"), 50, 50);
        assert_eq!(
            fx.store.writes() - w,
            2,
            "two messages, two commits (fades included)"
        );
    }
    let w = fx.store.writes();
    fx.note(note_args(None, vec![fact("a", "b", "c", "A b c.")]))
        .unwrap();
    assert_eq!(fx.store.writes() - w, 1);
    let w = fx.store.writes();
    let _ = (
        fx.view(),
        fx.episodes(),
        fx.messages(),
        fx.facts(),
        fx.entities(),
        fx.traces(),
        fx.stats(),
    );
    let _ = (fx.export(), fx.explain_episode(1), fx.explain_fact(1));
    assert_eq!(fx.store.writes(), w, "reads write nothing");
    assert_eq!(fx.stats().log_entries, 13);
}

#[test]
fn export_and_import_round_trip() {
    let mut a = rich(config(400));
    let export = a.export();
    let model = ScriptedModel::new();
    no_recall(&model);
    let mut b = Fx::with(
        "copy",
        MemoryStore::new(),
        model,
        a.clock.clone(),
        a.config.clone(),
    );
    run(b.memory.import(&export)).unwrap();
    assert_eq!(snapshot(&mut b), snapshot(&mut a));
    assert_eq!(b.export(), export);
    // A reopened handle of the copy reads the same.
    let mut b2 = b.reopen();
    assert_eq!(snapshot(&mut b2), snapshot(&mut a));
    // The export is plain JSON with its format and version.
    let v: Value = serde_json::from_str(&export).unwrap();
    assert_eq!(
        (v["format"].as_str(), v["version"].as_u64()),
        (Some("engram"), Some(2))
    );
    assert_eq!(
        v["log"].as_array().unwrap().len() as u64,
        a.stats().log_entries
    );
}

#[test]
fn import_needs_an_empty_memory_and_a_sound_export() {
    let mut a = rich(config(400));
    let export = a.export();
    let before = a.store.dump();
    assert!(matches!(
        run(a.memory.import(&export)),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(a.store.dump(), before);

    let mut b = Fx::new(config(400));
    let mut broken: Value = serde_json::from_str(&export).unwrap();
    broken["log"].as_array_mut().unwrap().swap(0, 1);
    for bad in [
        "not json".to_string(),
        r#"{"format": "other", "version": 1, "log": []}"#.into(),
        broken.to_string(),
    ] {
        assert!(
            matches!(run(b.memory.import(&bad)), Err(Error::InvalidInput(_))),
            "{}",
            &bad[..20.min(bad.len())]
        );
    }
    assert!(b.store.dump().is_empty(), "nothing written");
}

#[test]
fn an_unknown_version_is_refused() {
    let mut a = rich(config(400));
    let mut export: Value = serde_json::from_str(&a.export()).unwrap();
    export["version"] = json!(99);
    let mut b = Fx::new(config(400));
    match run(b.memory.import(&export.to_string())) {
        Err(Error::UnsupportedVersion { found, supported }) => {
            assert_eq!((found, supported), (99, 2))
        }
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
    assert!(b.store.dump().is_empty());

    // A store written by a newer engram.
    let head = a.store.dump()["engram/test/head"].clone();
    let mut h: Value = serde_json::from_slice(&head).unwrap();
    h["version"] = json!(4);
    a.store
        .poke("engram/test/head", Some(h.to_string().as_bytes()));
    let opened = run(engram::Memory::open(
        "test",
        a.store.clone(),
        ScriptedModel::new(),
        ManualClock::at(T0),
        Config::default(),
    ));
    match opened {
        Err(e @ Error::UnsupportedVersion { .. }) => assert_eq!(e.code(), "unsupported-version"),
        Err(e) => panic!("expected UnsupportedVersion, got {e:?}"),
        Ok(_) => panic!("expected UnsupportedVersion, it opened"),
    }
}

#[test]
fn two_memories_in_one_store_never_see_each_others_keys() {
    let store = MemoryStore::new();
    let clock = ManualClock::at(T0);
    let open = |ns: &str| {
        let model = ScriptedModel::new();
        no_recall(&model);
        standard_segment(&model);
        Fx::with(ns, store.clone(), model, clock.clone(), config(400))
    };
    // "alice" is a prefix of "alice2": the keys must still not mix.
    let mut a = open("alice");
    let mut b = open("alice2");
    for i in 0..6 {
        a.turn(&format!("alice{i}"), 50, 50);
        b.turn(&format!("bob{i}"), 40, 40);
    }
    b.note(note_args(
        None,
        vec![fact("Bob", "likes", "tea", "Bob likes tea.")],
    ))
    .unwrap();
    let keys: Vec<String> = store.dump().into_keys().collect();
    assert!(keys
        .iter()
        .all(|k| k.starts_with("engram/alice/") || k.starts_with("engram/alice2/")));
    assert!(a.messages().iter().all(|m| m.content.contains("alice")));
    assert!(b.messages().iter().all(|m| m.content.contains("bob")));
    assert!(a.facts().is_empty() && a.entities().is_empty());
    assert_eq!(b.facts().len(), 1);
    // Breaking one memory's data does not touch the other.
    let a_before = snapshot(&mut a);
    store.poke("engram/alice2/head", Some(b"garbage"));
    let mut a2 = a.reopen();
    assert_eq!(snapshot(&mut a2), a_before);
    let reopened = run(engram::Memory::open(
        "alice2",
        store.clone(),
        ScriptedModel::new(),
        clock.clone(),
        config(400),
    ));
    assert!(matches!(reopened.err(), Some(Error::Corrupt(_))));
}

#[test]
fn a_head_rolled_back_on_a_tail_only_log_opens_as_corrupt_naming_open_salvage() {
    let mut cfg = config(50_000);
    cfg.snapshot_every = 1_000; // every entry stays a tail key
    let mut fx = Fx::new(cfg.clone());
    standard_segment(&fx.model);
    for i in 0..5 {
        fx.user(&format!("message {i}"));
        fx.assistant(&format!("reply {i}"));
    }
    let head_key = format!("engram/{}/head", fx.namespace);
    let old_head = fx.store.peek(&head_key).expect("a head");
    for i in 5..15 {
        fx.user(&format!("message {i}"));
        fx.assistant(&format!("reply {i}"));
    }
    assert_eq!(fx.messages().len(), 30);
    fx.store.poke(&head_key, Some(&old_head));
    match fx.try_reopen() {
        Err(engram::Error::Corrupt(m)) => {
            assert!(
                m.contains("past the head") && m.contains("open_salvage"),
                "{m}"
            )
        }
        Err(e) => panic!("expected Corrupt, got {e}"),
        Ok(mut other) => panic!(
            "opened showing {} of 30 messages with no warning",
            other.messages().len()
        ),
    }
}
