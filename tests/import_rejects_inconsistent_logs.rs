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
