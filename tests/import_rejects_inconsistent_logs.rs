//! An export is host data: one whose events do not fit together (a passage
//! before the first message, a recall block naming a fact that does not
//! exist) is refused with a typed error, and nothing is written.

mod common;
use common::*;
use engram::NewMessage;
use serde_json::json;

fn with_extra_entry(fx: &mut Fx, events: serde_json::Value) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&fx.export()).unwrap();
    let n = v["log"].as_array().unwrap().len();
    v["log"]
        .as_array_mut()
        .unwrap()
        .push(json!({"seq": n + 1, "at": T0, "events": events}));
    v.to_string()
}

fn import_into_fresh(fx: &Fx, json: &str) -> (engram::Result<()>, Fx) {
    let store = engram::testing::MemoryStore::new();
    let mut other = Fx::with(
        "other",
        store.clone(),
        fx.model.clone(),
        fx.clock.clone(),
        config(2_000),
    );
    let r = run(other.memory.import(json));
    assert!(store.dump().is_empty(), "a refused import writes nothing");
    (r, other)
}

#[test]
fn a_passage_starting_before_the_first_message_is_refused() {
    let mut fx = Fx::new(config(2_000));
    fx.user(&sized("hello", 30));
    fx.assistant(&sized("hi", 30));
    let json = with_extra_entry(
        &mut fx,
        json!([
            {"type": "episode_formed", "episode": 1, "first": 1, "last": 1, "at": T0, "tokens": 30},
            {"type": "passages_indexed", "passages": [{"id": 1, "episode": 1, "first": 0, "last": 1, "at": T0, "embedding": "AACAPw=="}]}
        ]),
    );
    let (r, _) = import_into_fresh(&fx, &json);
    assert!(matches!(r, Err(engram::Error::InvalidInput(_))), "{r:?}");
}

#[test]
fn a_recall_block_naming_a_missing_fact_is_refused() {
    let mut fx = Fx::new(config(2_000));
    fx.user(&sized("hello", 30));
    let json = with_extra_entry(
        &mut fx,
        json!([{"type": "recalled", "id": 1, "message": 1, "at": T0, "parts": [], "split_failed": false,
                "walk_failed": false,
                "items": [{"item": {"kind": "fact", "id": 99}, "hits": [], "fused_rank": null, "hop": 0, "judgment": "relevant"}]}]),
    );
    let (r, mut other) = import_into_fresh(&fx, &json);
    assert!(matches!(r, Err(engram::Error::InvalidInput(_))), "{r:?}");
    // The memory stays usable.
    other
        .try_add(NewMessage::assistant(sized("reply", 30)))
        .unwrap();
}

#[test]
fn a_snapshot_with_a_bad_trace_id_is_ignored_and_rebuilt_from_the_log_not_a_panic() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.turn("garden", 40, 40);
    fx.turn("taxes", 40, 40);
    let clean = fx.view();
    let store = fx.store.clone();
    // Write a snapshot by hand whose first episode lists a trace that does not exist.
    let keys: Vec<String> = store.dump().keys().cloned().collect();
    let head_key = keys.iter().find(|k| k.ends_with("/head")).unwrap().clone();
    let head: serde_json::Value = serde_json::from_str(&store.dump()[&head_key]).unwrap();
    let seq = head["seq"].as_u64().unwrap();
    let snapshot_key = head_key.replace("/head", "/snapshot");
    let mut snap = json!({"version": 1, "seq": seq, "state": {
        "messages": [], "episodes": [], "traces": [], "entities": [], "facts": [], "fades": [],
        "dimension": null, "last_user_at": null}});
    // One message and one episode whose trace list names trace 7.
    let m = serde_json::to_value(&fx.messages()[0]).unwrap();
    snap["state"]["messages"] = json!([m]);
    snap["state"]["episodes"] = json!([{"id": 1, "first": 1, "last": 1, "formed_at": T0, "tokens": 40,
        "state": "live", "history": [], "traces": [7], "facts": []}]);
    store.poke(&snapshot_key, Some(&snap.to_string()));
    store.poke(
        &head_key,
        Some(&json!({"version": 1, "seq": seq, "snapshot": seq}).to_string()),
    );
    let mut reopened = run(engram::Memory::open(
        "test",
        store.clone(),
        fx.model.clone(),
        fx.clock.clone(),
        config(2_000),
    ))
    .expect("the log is whole: the damaged snapshot is ignored");
    let warnings = reopened.storage_warnings().to_vec();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("snapshot"), "{warnings:?}");
    assert_eq!(run(reopened.view()).unwrap(), clean);
}
