//! engram in a Rust program, through wasmtime:
//!
//!     scripts/build-component
//!     cd hosts/rust && cargo run --example quickstart -- ../../target/wasm32-wasip2/release/engram.wasm

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use engram_wasmtime_host::{
    Deadlines, Engram, Host, HostModel, MemStore, NewMessage, Role, Task, TaskRequest,
};

/// Your LLM and embedder. engram owns the prompts: send `system` and
/// `content` to the model, ask for JSON following `schema`, return the text.
/// This stand-in judges every message a continuation and embeds by length;
/// the other tasks fail, and engram degrades them (no facts are written) and
/// says so through `on_degraded`.
struct MyModel;

impl HostModel for MyModel {
    fn complete(&self, request: TaskRequest) -> Result<String, String> {
        match request.task {
            Task::Segment => Ok(r#"{"boundary": 0.1}"#.to_string()),
            _ => Err("no LLM in this example".to_string()),
        }
    }

    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64
}

/// A message with your own id for it: an add retried with the same id (its
/// outcome was lost) is not stored twice.
fn message(role: Role, content: &str, id: &str) -> NewMessage {
    NewMessage {
        role,
        content: content.into(),
        tool_calls: vec![],
        tool_call_id: None,
        client_id: Some(id.into()),
        metadata: None,
        thread: None,
        at: None,
        replaces: None,
    }
}

fn main() -> wasmtime::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "engram.wasm".into());
    let engine = wasmtime::Engine::default();
    let component = wasmtime::component::Component::from_file(&engine, &path)?;

    // Any `HostStore` (here in memory). Each callback gets a deadline: a
    // model or store that hangs fails that call instead of the memory.
    let host = Host::with_store(now_ms(), MemStore::new(), MyModel).deadlines(Deadlines {
        model: Some(Duration::from_secs(30)),
        store: Some(Duration::from_secs(5)),
    });
    let mut memory = Engram::open(
        &engine,
        &component,
        host,
        "alice",
        r#"{"ceiling_tokens": 8000}"#,
    )?;
    // A model task that failed every attempt: the memory went on without it.
    memory.on_degraded(|d| eprintln!("degraded: {:?} failed ({}): {}", d.task, d.error, d.effect));

    memory.host().now_ms = now_ms();
    let first = message(
        Role::User,
        "Let's plan the Lisbon offsite for fifteen people.",
        "msg-1",
    );
    memory.add_message(&first)?;
    // Retrying an add (its answer was lost) is safe with the same id.
    let again = memory.add_message(&first)?;
    println!(
        "retry: message {}, duplicate {}",
        again.message, again.duplicate
    );
    memory.host().now_ms = now_ms();
    memory.add_message(&message(
        Role::Assistant,
        "Gladly. What is the budget?",
        "msg-2",
    ))?;
    // Work still waiting: the reply's boundary judgment goes out with the
    // next user message's calls, or now with `memory.maintain()`.
    println!("pending: {:?}", memory.pending()?);

    // What to send to the chat model next:
    println!("{:#}", memory.render_openai()?);
    let stats = memory.stats()?;
    println!(
        "{} messages, view {} of {} tokens, {} degraded step(s)",
        stats.messages, stats.view_tokens, stats.ceiling, stats.model.degraded_steps
    );
    // Every export of the WIT `memory` resource has a typed method:
    let hits = memory.search("Lisbon budget", None)?;
    println!("search found {} item(s)", hits.len());
    memory.close()
}
