//! The shared scenario (`tests/fixtures/scenario.json`, written by the native
//! engine's `tests/scenario_fixture.rs`) replayed through the built component
//! in wasmtime: the view after every step must equal the native engine's.
//!
//! The component is `target/wasm32-wasip2/release/engram.wasm` of the engram
//! crate (`scripts/build-component`), or the file `ENGRAM_COMPONENT` names.

mod common;

use std::sync::{Arc, Mutex};

use common::{component, repo};
use engram_wasmtime_host::{
    Degraded, Engram, Host, MemStore, MemoryError, NewMessage, Recorded, Role, ToolCall,
    TranscriptModel, TranscriptProbe,
};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Fixture {
    namespace: String,
    config: Value,
    steps: Vec<Step>,
    transcript: Vec<Recorded>,
    views: Vec<Value>,
}

#[derive(Deserialize, Clone)]
struct Step {
    op: String,
    at: i64,
    message: FixtureMessage,
}

#[derive(Deserialize, Clone)]
struct FixtureMessage {
    role: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<FixtureToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    /// Its thread (`scenario-threads.json`); none is `main`.
    #[serde(default)]
    thread: Option<String>,
}

#[derive(Deserialize, Clone)]
struct FixtureToolCall {
    id: String,
    name: String,
    arguments: String,
}

fn fixture() -> Fixture {
    fixture_named("scenario.json")
}

fn fixture_named(name: &str) -> Fixture {
    let path = repo().join("tests/fixtures").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("the fixture exists"))
        .expect("the fixture parses")
}

fn message(m: &FixtureMessage) -> NewMessage {
    let role = match m.role.as_str() {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => panic!("unknown role {other}"),
    };
    NewMessage {
        role,
        content: m.content.clone(),
        tool_calls: m
            .tool_calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect(),
        tool_call_id: m.tool_call_id.clone(),
        client_id: None,
        metadata: None,
        thread: m.thread.clone(),
        at: None,
        replaces: None,
    }
}

/// Opens the fixture's memory over a transcript replay, clock at the first step.
fn open(f: &Fixture) -> (Engram, TranscriptProbe) {
    open_in(f, MemStore::new())
}

/// [`open`] over `store`.
fn open_in(f: &Fixture, store: MemStore) -> (Engram, TranscriptProbe) {
    let (engine, component) = component();
    let model = TranscriptModel::new(f.transcript.clone());
    let probe = model.probe();
    let host = Host::with_store(f.steps[0].at, store, model);
    let engram =
        Engram::open(engine, component, host, &f.namespace, &f.config.to_string()).expect("opens");
    (engram, probe)
}

#[test]
fn component_views_equal_the_native_engines_after_every_step() {
    let f = fixture();
    assert_eq!(f.steps.len(), f.views.len());
    let (mut engram, probe) = open(&f);
    let fired: Arc<Mutex<Vec<Degraded>>> = Arc::default();
    let sink = fired.clone();
    engram.on_degraded(move |d| sink.lock().unwrap().push(d.clone()));
    let mut reported = Vec::new();
    for (i, (step, expected)) in f.steps.iter().zip(&f.views).enumerate() {
        assert_eq!(step.op, "add", "step {i}");
        engram.host().now_ms = step.at;
        let added = engram
            .add_message(&message(&step.message))
            .unwrap_or_else(|e| panic!("step {i}: {e:#}"));
        assert_eq!(added.maintain_error, None, "step {i}");
        reported.extend(added.degraded.iter().map(|d| d.effect.clone()));
        if let Some(m) = &added.maintained {
            reported.extend(m.degraded.iter().map(|d| d.effect.clone()));
        }
        assert_eq!(
            probe.mismatches(),
            Vec::<String>::new(),
            "step {i}: model calls differ from the native run"
        );
        let view = engram.render_openai().expect("view");
        assert_eq!(
            &view, expected,
            "step {i}: the view differs from the native engine's"
        );
    }
    assert_eq!(
        probe.position(),
        f.transcript.len(),
        "every recorded model call was made"
    );
    // Past views, rebuilt by the component from the log, are the ones seen then.
    for i in [5, 20] {
        let at = f.steps[i].at;
        let past = engram
            .call(|m, store, memory| m.call_render_openai_at(store, memory, at))
            .expect("view-at");
        assert_eq!(
            serde_json::from_str::<Value>(&past).expect("JSON"),
            f.views[i],
            "view at step {i}"
        );
    }
    let stats = engram.stats().expect("stats");
    assert_eq!(stats.messages as usize, f.steps.len());
    assert!(
        stats.fades > 0 && stats.live_facts > 0,
        "the scenario faded and wrote facts"
    );
    // Every degraded step of the calls reached the callback, once, and the
    // health counts them.
    let fired: Vec<String> = fired
        .lock()
        .unwrap()
        .iter()
        .map(|d| d.effect.clone())
        .collect();
    assert_eq!(fired, reported, "the callback saw what the calls reported");
    assert_eq!(stats.model.degraded_steps, fired.len() as u64);
    let calls: u64 = stats.model.calls.iter().map(|(_, n)| n).sum();
    assert_eq!(
        calls as usize,
        f.transcript.len(),
        "every model request is counted"
    );
    assert!(
        engram.take_degraded().expect("take").is_empty(),
        "the callback took them"
    );
    let fades = engram
        .call(|m, store, memory| m.call_fades(store, memory))
        .expect("fades");
    assert_eq!(fades.len() as u32, stats.fades);
    engram.close().expect("closes");
}

#[test]
fn component_views_equal_the_native_engines_in_every_thread() {
    // The multi-thread scenario: each step's view is the view of that
    // step's thread, as the native engine saw it.
    let f = fixture_named("scenario-threads.json");
    assert_eq!(f.steps.len(), f.views.len());
    let (mut engram, probe) = open(&f);
    let mut threads = std::collections::BTreeSet::new();
    for (i, (step, expected)) in f.steps.iter().zip(&f.views).enumerate() {
        assert_eq!(step.op, "add", "step {i}");
        let thread = step.message.thread.as_deref().unwrap_or("main");
        threads.insert(thread.to_string());
        engram.host().now_ms = step.at;
        let added = engram
            .add_message(&message(&step.message))
            .unwrap_or_else(|e| panic!("step {i}: {e:#}"));
        assert_eq!(added.maintain_error, None, "step {i}");
        assert_eq!(
            probe.mismatches(),
            Vec::<String>::new(),
            "step {i}: model calls differ from the native run"
        );
        let view = engram.render_openai_in(thread).expect("view");
        assert_eq!(
            &view, expected,
            "step {i} ({thread}): the view differs from the native engine's"
        );
    }
    assert_eq!(
        probe.position(),
        f.transcript.len(),
        "every recorded model call was made"
    );
    assert!(threads.len() > 1, "the scenario has several threads");
    let listed: Vec<String> = engram
        .threads()
        .expect("threads")
        .into_iter()
        .map(|t| t.thread)
        .collect();
    assert_eq!(listed, threads.into_iter().collect::<Vec<_>>());
    let messages = engram.messages().expect("messages");
    for (step, m) in f.steps.iter().zip(&messages) {
        assert_eq!(
            m.thread,
            step.message.thread.as_deref().unwrap_or("main"),
            "message {}",
            m.id
        );
    }
    engram.close().expect("closes");
}

#[test]
fn a_changed_message_is_caught_as_a_model_call_mismatch() {
    // The replay must be able to fail: a conversation that differs from the
    // recorded one makes different model calls, and the transcript says so.
    // (A reply makes no model call: its judgment goes out in the next user
    // message's round, so the changed message is a user message.)
    let f = fixture();
    let (mut engram, probe) = open(&f);
    let mut step = f.steps[2].clone();
    assert_eq!(step.message.role, "user");
    step.message.content = "Something else entirely.".into();
    for s in &f.steps[..2] {
        engram.host().now_ms = s.at;
        engram
            .add_message(&message(&s.message))
            .expect("earlier step");
    }
    assert_eq!(probe.mismatches(), Vec::<String>::new());
    engram.host().now_ms = step.at;
    let _ = engram.add_message(&message(&step.message));
    let seen = probe.mismatches();
    assert!(!seen.is_empty(), "the changed message went unnoticed");
    assert!(
        seen[0].contains("got a segment request, the recording has a segment request"),
        "{}",
        seen[0]
    );
    assert!(
        seen[0].contains("The Lisbon offsite budget is 12000 euros"),
        "the recording's content is named: {}",
        seen[0]
    );
}

#[test]
fn engine_errors_arrive_as_the_wit_error_variant() {
    let f = fixture();
    let kv = MemStore::new();
    let (mut engram, _) = open_in(&f, kv.clone());
    let orphan = NewMessage {
        role: Role::Tool,
        content: "output".into(),
        tool_calls: vec![],
        tool_call_id: Some("call_9".into()),
        client_id: None,
        metadata: None,
        thread: None,
        at: None,
        replaces: None,
    };
    let err = engram
        .add_message(&orphan)
        .expect_err("a tool output with no waiting call is refused");
    match err.downcast_ref::<MemoryError>() {
        Some(MemoryError::InvalidInput(m)) => assert!(m.contains("call_9"), "{m}"),
        other => panic!("expected invalid-input, got {other:?}"),
    }
    assert_eq!(
        engram.stats().expect("stats").messages,
        0,
        "nothing was written"
    );
    assert!(kv.is_empty());
}

#[test]
fn store_values_cross_as_bytes_and_write_if_compares_them_by_content() {
    use engram_wasmtime_host::{HostStore, StoreError};

    let f = fixture();
    let kv = MemStore::new();
    let (mut engram, _) = open_in(&f, kv.clone());
    engram.host().now_ms = f.steps[0].at;
    engram
        .add_message(&message(&f.steps[0].message))
        .expect("first step");
    let head = kv
        .get(&format!("engram/{}/head", f.namespace))
        .expect("get")
        .expect("a head");
    let parsed: serde_json::Value = serde_json::from_slice(&head).expect("the head is JSON text");
    assert!(parsed.is_object(), "{parsed}");

    let odd = vec![0u8, 255, 128, 0];
    kv.put("k", &odd).expect("put");
    assert_eq!(kv.get("k").expect("get"), Some(odd.clone()));
    assert!(matches!(
        kv.write_if("k", Some(&[0, 255]), &[("k".into(), None)]),
        Err(StoreError::Conflict)
    ));
    kv.write_if("k", Some(&odd.clone()), &[("k".into(), Some(vec![]))])
        .expect("same bytes, another buffer");
    assert_eq!(kv.get("k").expect("get"), Some(vec![]));
    assert!(
        matches!(kv.write_if("k", None, &[]), Err(StoreError::Conflict)),
        "empty bytes are not absent"
    );
}
