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

/// `export` with `edit` applied to every event of its log.
fn edited(export: &str, edit: impl Fn(&mut serde_json::Value)) -> String {
    let mut v: serde_json::Value = serde_json::from_str(export).unwrap();
    for entry in v["log"].as_array_mut().unwrap() {
        for e in entry["events"].as_array_mut().unwrap() {
            edit(e);
        }
    }
    v.to_string()
}

fn refused_naming(r: engram::Result<()>, what: &str) {
    match r {
        Err(engram::Error::InvalidInput(m)) => assert!(m.contains(what), "{what}: {m}"),
        other => panic!("{what}: expected InvalidInput, got {other:?}"),
    }
}

#[test]
fn a_message_swollen_to_8_mb_with_its_old_count_is_refused() {
    let mut fx = Fx::new(config(8_000));
    fx.user(&sized("hello", 30));
    fx.assistant(&sized("hi", 30));
    let big = "x".repeat(8_000_000);
    let json = edited(&fx.export(), |e| {
        if e["type"] == "message" && e["id"] == 2 {
            e["content"] = big.clone().into();
        }
    });
    let (r, _) = import_into_fresh(&fx, &json);
    refused_naming(r, "message 2");
}

#[test]
fn a_fact_retired_by_itself_or_an_older_fact_is_refused() {
    let export = one_fact_export(8);
    let fx = Fx::new(config(2_000));
    for by in [1, 0] {
        let mut v: serde_json::Value = serde_json::from_str(&export).unwrap();
        let n = v["log"].as_array().unwrap().len();
        v["log"].as_array_mut().unwrap().push(
            json!({"seq": n + 1, "at": T0 + 3_600_000, "events": [
                {"type": "fact_retired", "fact": 1, "retirement": {"by": by, "at": T0 + 3_600_000}}
            ]}),
        );
        let (r, _) = import_into_fresh(&fx, &v.to_string());
        assert!(
            matches!(r, Err(engram::Error::InvalidInput(_))),
            "by {by}: {r:?}"
        );
    }
}

#[test]
fn zero_and_nan_embeddings_are_refused() {
    let export = one_fact_export(1);
    let fx = Fx::new(config(2_000));
    // One f32 each: 0.0, NaN.
    for (name, vector) in [("zero", "AAAAAA=="), ("NaN", "AADAfw==")] {
        let json = edited(&export, |e| {
            if e["type"] == "fact_added" {
                e["embedding"] = vector.into();
            }
        });
        let (r, _) = import_into_fresh(&fx, &json);
        match r {
            Err(engram::Error::InvalidInput(m)) => assert!(m.contains("fact 1"), "{name}: {m}"),
            other => panic!("{name}: expected InvalidInput, got {other:?}"),
        }
    }
}

#[test]
fn a_recall_block_on_an_assistant_message_is_refused() {
    let mut fx = Fx::new(config(2_000));
    fx.user(&sized("hello", 30));
    fx.assistant(&sized("hi", 30));
    let json = with_extra_entry(
        &mut fx,
        json!([{"type": "recalled", "id": 1, "message": 2, "at": T0, "parts": [], "split_failed": false,
                "walk_failed": false, "items": []}]),
    );
    let (r, _) = import_into_fresh(&fx, &json);
    refused_naming(r, "recall block 1");
}

#[test]
fn a_distill_keeping_an_item_its_block_does_not_hold_is_refused() {
    let export = one_fact_export(8);
    let fx = Fx::new(config(2_000));
    let mut v: serde_json::Value = serde_json::from_str(&export).unwrap();
    let n = v["log"].as_array().unwrap().len();
    v["log"].as_array_mut().unwrap().push(json!({"seq": n + 1, "at": T0 + 3_600_000, "events": [
        {"type": "recalled", "id": 1, "message": 1, "at": T0 + 3_600_000, "parts": [], "split_failed": false,
         "walk_failed": false, "items": []},
        {"type": "distilled", "block": 1, "distillation": {"at": T0 + 3_600_000, "kept": [{"kind": "fact", "id": 1}], "failed": false}}
    ]}));
    let (r, _) = import_into_fresh(&fx, &v.to_string());
    refused_naming(r, "recall block 1");
}

#[test]
fn instructions_over_the_ceiling_are_refused() {
    let mut fx = Fx::new(config(2_000));
    fx.user(&sized("hello", 30));
    let json = with_extra_entry(
        &mut fx,
        json!([{"type": "instructions_set", "text": "word ".repeat(2_000), "at": T0}]),
    );
    let (r, _) = import_into_fresh(&fx, &json);
    refused_naming(r, "instructions");
}
