//! The built-in offline model through the component: a memory opened on it
//! (`open-with`, offline/offline) makes no call of the host's `model` import
//! and gives, message by message, the same view as the native engine on
//! `engram::OfflineModel`; with a host model for completions and the offline
//! embedder, the host's `complete` is called and its `embed` never.
//!
//! The native views are also kept in `hosts/python/fixtures/offline_views.json`
//! for the Python host's test; the test here fails when that file is stale.
//! Rewrite it after an intended change of the offline model with
//!
//!     ENGRAM_UPDATE_FIXTURES=1 cargo test --test offline    (in hosts/rust)

mod common;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use common::{component, repo};
use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::OfflineModel;
use engram_wasmtime_host::bindings::exports::engram::memory::engine::EpisodeState;
use engram_wasmtime_host::{
    Engram, Host, HostModel, MemStore, ModelCalls, ModelChoice, NewMessage, Role, Task,
    TaskRequest, ToolCall,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Messages of the sample conversation replayed here.
const MESSAGES: usize = 20;
const NAMESPACE: &str = "offline";

/// A tight ceiling, so that 20 messages make episodes leave and get noted.
fn config() -> Value {
    json!({
        "ceiling_tokens": 500,
        "target_episode_tokens": 120,
        "max_episode_tokens": 240,
        "min_episode_tokens": 24,
        "recall_budget_tokens": 120,
        "passage_tokens": 80
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Step {
    at: i64,
    message: engram::NewMessage,
}

/// What the Python host's test replays and compares with.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Fixture {
    about: String,
    namespace: String,
    config: Value,
    steps: Vec<Step>,
    /// The OpenAI rendering of the view after each step, natively.
    views: Vec<Value>,
    /// Counts at the end, natively.
    end: End,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct End {
    episodes: usize,
    /// Episodes out of the view: sealed, or forgotten (out of the facts
    /// block too, when recall blocks took its room).
    out_of_view: usize,
    facts: usize,
    entities: usize,
}

/// `2025-03-03T09:02:00Z` as ms since the epoch.
fn parse_time(s: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| -> i64 { s[r].parse().expect("a number") };
    assert!(
        s.len() == 20 && s.ends_with('Z'),
        "{s}: not a UTC time stamp"
    );
    let days = engram::base::text::days_from_civil(n(0..4), n(5..7), n(8..10));
    ((days * 24 + n(11..13)) * 60 + n(14..16)) * 60_000 + n(17..19) * 1000
}

/// The first [`MESSAGES`] messages of examples/sample/conversation.json,
/// with their times.
fn steps() -> Vec<Step> {
    let path = repo().join("examples/sample/conversation.json");
    let sample: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the sample exists"))
            .expect("the sample parses");
    let messages = sample["messages"].as_array().expect("messages");
    assert!(messages.len() >= MESSAGES);
    messages[..MESSAGES]
        .iter()
        .map(|m| {
            let message: engram::NewMessage = serde_json::from_value(json!({
                "role": m["role"],
                "content": m["content"],
                "tool_calls": m.get("tool_calls").cloned().unwrap_or(json!([])),
                "tool_call_id": m.get("tool_call_id"),
            }))
            .expect("a message");
            Step {
                at: parse_time(m["at"].as_str().expect("at")),
                message,
            }
        })
        .collect()
}

fn wit_message(m: &engram::NewMessage) -> NewMessage {
    NewMessage {
        role: match m.role {
            engram::Role::System => Role::System,
            engram::Role::User => Role::User,
            engram::Role::Assistant => Role::Assistant,
            engram::Role::Tool => Role::Tool,
        },
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
        client_id: m.client_id.clone(),
        metadata: m.metadata.as_ref().map(|v| v.to_string()),
        thread: Some(m.thread.clone()),
        at: m.at,
        replaces: None,
    }
}

/// The native engine on `engram::OfflineModel`: the views after each step
/// and the counts at the end.
fn native(steps: &[Step]) -> (Vec<Value>, End) {
    block_on(async {
        let clock = ManualClock::at(steps[0].at);
        let config = engram::Config::from_json(&config().to_string()).expect("config");
        let mut memory = engram::Memory::open(
            NAMESPACE,
            MemoryStore::new(),
            OfflineModel,
            clock.clone(),
            config,
        )
        .await
        .expect("opens");
        let mut views = Vec::new();
        for s in steps {
            clock.set(s.at);
            memory.add_message(s.message.clone()).await.expect("adds");
            views.push(Value::Array(memory.view().await.expect("view").to_openai()));
        }
        let episodes = memory.episodes().await.expect("episodes");
        let end = End {
            episodes: episodes.len(),
            out_of_view: episodes
                .iter()
                .filter(|e| {
                    matches!(
                        e.episode.state,
                        engram::EpisodeState::Sealed | engram::EpisodeState::Forgotten
                    )
                })
                .count(),
            facts: memory.facts().await.expect("facts").len(),
            entities: memory.entities().await.expect("entities").len(),
        };
        (views, end)
    })
}

/// The component over `host`: the views after each step and the counts at
/// the end, and the calls of the model import.
fn replay(host: Host, steps: &[Step]) -> (Vec<Value>, End, ModelCalls) {
    let (engine, component) = component();
    let mut engram =
        Engram::open(engine, component, host, NAMESPACE, &config().to_string()).expect("opens");
    let mut views = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        engram.host().now_ms = s.at;
        let added = engram
            .add_message(&wit_message(&s.message))
            .unwrap_or_else(|e| panic!("step {i}: {e:#}"));
        assert_eq!(added.maintain_error, None, "step {i}");
        views.push(engram.render_openai().expect("render"));
    }
    let episodes = engram
        .call(|m, store, mem| m.call_episodes(store, mem))
        .expect("episodes");
    let facts = engram
        .call(|m, store, mem| m.call_facts(store, mem))
        .expect("facts");
    let entities = engram
        .call(|m, store, mem| m.call_entities(store, mem))
        .expect("entities");
    let end = End {
        episodes: episodes.len(),
        out_of_view: episodes
            .iter()
            .filter(|e| matches!(e.state, EpisodeState::Sealed | EpisodeState::Forgotten))
            .count(),
        facts: facts.len(),
        entities: entities.len(),
    };
    let calls = engram.host().model_calls();
    (views, end, calls)
}

fn fixture_path() -> std::path::PathBuf {
    repo().join("hosts/python/fixtures/offline_views.json")
}

/// Converts a request of the WIT to the engine's.
fn engine_request(r: &TaskRequest) -> engram::TaskRequest {
    engram::TaskRequest {
        task: match r.task {
            Task::Segment => engram::Task::Segment,
            Task::Note => engram::Task::Note,
            Task::Trace => engram::Task::Trace,
            Task::Resolve => engram::Task::Resolve,
            Task::Reconcile => engram::Task::Reconcile,
            Task::Split => engram::Task::Split,
            Task::Relevance => engram::Task::Relevance,
            Task::Distill => engram::Task::Distill,
        },
        system: r.system.clone(),
        content: r.content.clone(),
        schema: r.schema.clone(),
        attempt: r.attempt,
    }
}

/// A host model answering completions with the native offline model, keeping
/// every request; its `embed` fails (and is counted), so a memory that
/// embedded through it would differ from the offline one.
#[derive(Clone, Default)]
struct NativeOfflineCompletions {
    requests: Arc<Mutex<Vec<TaskRequest>>>,
    embeds: Arc<Mutex<usize>>,
}

impl HostModel for NativeOfflineCompletions {
    fn complete(&self, request: TaskRequest) -> Result<String, String> {
        let answer =
            engram::offline::complete(&engine_request(&request)).map_err(|e| e.to_string());
        self.requests.lock().unwrap().push(request);
        answer
    }

    fn embed(&self, _texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        *self.embeds.lock().unwrap() += 1;
        Err("this model has no embedder".into())
    }
}

#[test]
fn offline_memory_gives_the_native_engines_views_and_calls_no_host_model() {
    let steps = steps();
    let started = Instant::now();
    let (expected, expected_end) = native(&steps);
    let native_time = started.elapsed();
    component(); // compiled before the clock starts

    let started = Instant::now();
    let (views, end, calls) = replay(Host::offline(steps[0].at), &steps);
    eprintln!(
        "offline replay of {} messages: {:?} in the component (debug wasmtime, \
         unoptimised Cranelift), {native_time:?} natively (debug build)",
        steps.len(),
        started.elapsed()
    );
    assert_eq!(
        calls,
        ModelCalls::default(),
        "the offline memory called the host's model"
    );
    for (i, (got, want)) in views.iter().zip(&expected).enumerate() {
        assert_eq!(
            got, want,
            "view after step {i} differs from the native engine's"
        );
    }
    assert_eq!(views.len(), steps.len());
    assert_eq!(end, expected_end);
    // The memory did its work with no LLM: episodes formed, one left the
    // view and was noted into facts about entities, and the view holds
    // messages.
    assert!(end.episodes >= 2, "{end:?}");
    assert!(end.out_of_view >= 1, "{end:?}");
    assert!(end.facts >= 1 && end.entities >= 1, "{end:?}");
    let last = views.last().and_then(Value::as_array).expect("a view");
    assert!(last.iter().any(|m| m["role"] == "user"), "{last:?}");

    // The Python host's fixture holds the same native views.
    let fixture = Fixture {
        about: "The first 20 messages of examples/sample/conversation.json replayed natively on engram::OfflineModel (hosts/rust/tests/offline.rs): the OpenAI rendering of the view after each step, and counts at the end. The Python host replays the steps on its offline model and must get the same. Rewrite with ENGRAM_UPDATE_FIXTURES=1 cargo test --test offline in hosts/rust.".into(),
        namespace: NAMESPACE.into(),
        config: config(),
        steps,
        views: expected,
        end: expected_end,
    };
    let path = fixture_path();
    if std::env::var_os("ENGRAM_UPDATE_FIXTURES").is_some() {
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        let text = serde_json::to_string_pretty(&fixture).expect("json") + "\n";
        std::fs::write(&path, text).expect("writes the fixture");
    }
    let stored: Fixture = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .expect("the fixture exists (ENGRAM_UPDATE_FIXTURES=1 writes it)"),
    )
    .expect("the fixture parses");
    assert!(
        stored == fixture,
        "{} is stale (the offline model or the engine changed): rewrite it with \
         ENGRAM_UPDATE_FIXTURES=1 cargo test --test offline in hosts/rust",
        path.display()
    );
}

#[test]
fn offline_embedder_with_host_completions_calls_the_host_complete_only() {
    let steps = steps();
    let model = NativeOfflineCompletions::default();
    let requests = model.requests.clone();
    let embeds = model.embeds.clone();
    let host = Host::with_choice(
        steps[0].at,
        MemStore::new(),
        ModelChoice::host_with_offline_embedder(model),
    );
    let (views, end, calls) = replay(host, &steps);
    assert_eq!(*embeds.lock().unwrap(), 0, "the host's embed was called");
    assert_eq!(calls.embed, 0);
    assert!(calls.complete > 0, "{calls:?}");
    assert_eq!(calls.complete as usize, requests.lock().unwrap().len());
    // Token counts are the host's when completions are.
    assert!(calls.count_tokens > 0, "{calls:?}");
    // Host completions by the same rules, embeddings offline: the same
    // memory as the offline one.
    let (expected, expected_end) = native(&steps);
    assert_eq!(views, expected);
    assert_eq!(end, expected_end);
}

#[test]
fn the_offline_interface_answers_as_the_native_offline_model() {
    let steps = steps();
    // Real requests of the engine, collected from a host model.
    let model = NativeOfflineCompletions::default();
    let requests = model.requests.clone();
    let host = Host::with_choice(
        steps[0].at,
        MemStore::new(),
        ModelChoice::host_with_offline_embedder(model),
    );
    let (engine, component) = component();
    let mut engram =
        Engram::open(engine, component, host, "direct", &config().to_string()).expect("opens");
    for s in &steps {
        engram.host().now_ms = s.at;
        engram.add_message(&wit_message(&s.message)).expect("adds");
    }
    let requests = requests.lock().unwrap().clone();
    let tasks: std::collections::BTreeSet<&str> = requests
        .iter()
        .map(|r| engram_wasmtime_host::task_name(r.task))
        .collect();
    assert!(tasks.contains("segment"), "{tasks:?}");
    for r in &requests {
        let native = engram::offline::complete(&engine_request(r)).map_err(|e| e.to_string());
        let got = engram.offline_complete(r).expect("no trap");
        assert_eq!(
            got,
            native,
            "{} request {:?}",
            engram_wasmtime_host::task_name(r.task),
            r.content
        );
    }

    let texts: Vec<String> = steps.iter().map(|s| s.message.content.clone()).collect();
    let vectors = engram.offline_embed(&texts).expect("no trap");
    assert_eq!(vectors, engram::offline::embed(&texts));
    let dimension = engram.offline_dimension().expect("no trap");
    assert_eq!(dimension as usize, engram::offline::embed::DIMENSION);
    for v in &vectors {
        assert_eq!(v.len(), engram::offline::embed::DIMENSION);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "not a unit vector: {norm}");
    }
}
