//! The shared scenario (`tests/fixtures/scenario.json`, written by the native
//! engine's `tests/scenario_fixture.rs`) replayed through the built component
//! in wasmtime: the view after every step must equal the native engine's.
//!
//! The component is `target/wasm32-wasip2/release/engram.wasm` of the engram
//! crate (`scripts/build-component`), or the file `ENGRAM_COMPONENT` names.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use engram_wasmtime_host::{
    Engram, Host, MemoryError, NewMessage, Recorded, Role, ToolCall, TranscriptModel,
    TranscriptProbe,
};
use serde::Deserialize;
use serde_json::Value;
use wasmtime::component::Component;
use wasmtime::Engine;

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
}

#[derive(Deserialize, Clone)]
struct FixtureToolCall {
    id: String,
    name: String,
    arguments: String,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture() -> Fixture {
    let path = repo().join("tests/fixtures/scenario.json");
    serde_json::from_str(&std::fs::read_to_string(&path).expect("the fixture exists"))
        .expect("the fixture parses")
}

/// One engine and the compiled component, shared by the tests.
fn component() -> &'static (Engine, Component) {
    static LOADED: OnceLock<(Engine, Component)> = OnceLock::new();
    LOADED.get_or_init(|| {
        let path = std::env::var_os("ENGRAM_COMPONENT")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target/wasm32-wasip2/release/engram.wasm"));
        assert!(
            path.exists(),
            "no component at {}: run scripts/build-component first",
            path.display()
        );
        // Compile for speed, not for run time: a debug-built Cranelift is slow.
        let mut config = wasmtime::Config::new();
        config.cranelift_opt_level(wasmtime::OptLevel::None);
        let engine = Engine::new(&config).expect("engine");
        let component = Component::from_file(&engine, &path).expect("the component compiles");
        (engine, component)
    })
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
    }
}

/// Opens the fixture's memory over a transcript replay, clock at the first step.
fn open(f: &Fixture) -> (Engram, TranscriptProbe) {
    let (engine, component) = component();
    let model = TranscriptModel::new(f.transcript.clone());
    let probe = model.probe();
    let host = Host::new(f.steps[0].at, model);
    let engram =
        Engram::open(engine, component, host, &f.namespace, &f.config.to_string()).expect("opens");
    (engram, probe)
}

#[test]
fn component_views_equal_the_native_engines_after_every_step() {
    let f = fixture();
    assert_eq!(f.steps.len(), f.views.len());
    let (mut engram, probe) = open(&f);
    for (i, (step, expected)) in f.steps.iter().zip(&f.views).enumerate() {
        assert_eq!(step.op, "add", "step {i}");
        engram.host().now_ms = step.at;
        engram
            .add_message(&message(&step.message))
            .unwrap_or_else(|e| panic!("step {i}: {e:#}"));
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
    engram.close().expect("closes");
}

#[test]
fn a_changed_message_is_caught_as_a_model_call_mismatch() {
    // The replay must be able to fail: a conversation that differs from the
    // recorded one makes different model calls, and the transcript says so.
    let f = fixture();
    let (mut engram, probe) = open(&f);
    let mut step = f.steps[1].clone();
    step.message.content = "Something else entirely.".into();
    engram.host().now_ms = f.steps[0].at;
    engram
        .add_message(&message(&f.steps[0].message))
        .expect("first step");
    engram.host().now_ms = step.at;
    let _ = engram.add_message(&message(&step.message));
    let seen = probe.mismatches();
    assert!(!seen.is_empty(), "the changed message went unnoticed");
    assert!(
        seen[0].starts_with("call 0: got a segment request, the recording has a segment request"),
        "{}",
        seen[0]
    );
    assert!(
        seen[0].contains("What is the budget?"),
        "the recording's content is named: {}",
        seen[0]
    );
}

#[test]
fn engine_errors_arrive_as_the_wit_error_variant() {
    let f = fixture();
    let (mut engram, _) = open(&f);
    let orphan = NewMessage {
        role: Role::Tool,
        content: "output".into(),
        tool_calls: vec![],
        tool_call_id: Some("call_9".into()),
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
    assert!(engram.host().kv.is_empty());
}
