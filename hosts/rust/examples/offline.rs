//! engram on its built-in offline model, with nothing to configure: replays
//! the sample conversation (`examples/sample/conversation.json`, with its
//! times) through the component and prints what the memory made of it. The
//! offline model is for demos and tests; plug in a real LLM for real use.
//!
//!     scripts/build-component
//!     cd hosts/rust && cargo run --release --example offline -- ../../target/wasm32-wasip2/release/engram.wasm

use std::time::Instant;

use engram_wasmtime_host::{Engram, Host, ModelCalls, NewMessage, Role, ToolCall};
use serde_json::Value;

/// `2025-03-03T09:02:00Z` as ms since the Unix epoch.
fn parse_time(s: &str) -> i64 {
    let n = |a: usize, b: usize| -> i64 { s[a..b].parse().expect("a number") };
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    ((days * 24 + n(11, 13)) * 60 + n(14, 16)) * 60_000 + n(17, 19) * 1000
}

fn message(m: &Value) -> NewMessage {
    let text = |k: &str| m[k].as_str().unwrap_or_default().to_string();
    NewMessage {
        role: match m["role"].as_str() {
            Some("system") => Role::System,
            Some("assistant") => Role::Assistant,
            Some("tool") => Role::Tool,
            _ => Role::User,
        },
        content: text("content"),
        tool_calls: m["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| ToolCall {
                id: c["id"].as_str().unwrap_or_default().into(),
                name: c["name"].as_str().unwrap_or_default().into(),
                arguments: c["arguments"].as_str().unwrap_or_default().into(),
            })
            .collect(),
        tool_call_id: m["tool_call_id"].as_str().map(Into::into),
        client_id: m["n"].as_u64().map(|n| format!("msg-{n}")),
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
    let sample_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sample/conversation.json"
    );
    let sample: Value = serde_json::from_str(&std::fs::read_to_string(sample_path)?)?;
    let messages = sample["messages"].as_array().expect("messages");
    let config = sample["config"].to_string();

    let engine = wasmtime::Engine::default();
    let component = wasmtime::component::Component::from_file(&engine, &path)?;
    let start = parse_time(messages[0]["at"].as_str().expect("at"));
    // The offline model: no model to write, no key, no network.
    let mut memory = Engram::open(&engine, &component, Host::offline(start), "demo", &config)?;

    let started = Instant::now();
    for m in messages {
        memory.host().now_ms = parse_time(m["at"].as_str().expect("at"));
        memory.add_message(&message(m))?;
    }
    let elapsed = started.elapsed();
    assert_eq!(memory.host().model_calls(), ModelCalls::default());

    let stats = memory.stats()?;
    println!(
        "{} messages in {elapsed:?}: episodes {} live, {} sealed, {} forgotten; \
         {} facts ({} retired), {} entities; view {} of {} tokens",
        stats.messages,
        stats.episodes.live,
        stats.episodes.sealed,
        stats.episodes.forgotten,
        stats.live_facts,
        stats.retired_facts,
        stats.entities,
        stats.view_tokens,
        stats.ceiling
    );
    for fact in memory.call(|m, store, mem| m.call_facts(store, mem))? {
        let retired = if fact.retired.is_some() {
            " (retired)"
        } else {
            ""
        };
        println!("fact {}: {}{retired}", fact.id, fact.sentence);
    }
    let question = "When does Loam launch?";
    memory.host().now_ms += 60_000;
    memory.add_message(&NewMessage {
        role: Role::User,
        content: question.into(),
        tool_calls: vec![],
        tool_call_id: None,
        client_id: None,
        metadata: None,
        thread: None,
        at: None,
        replaces: None,
    })?;
    println!(
        "\nThe view for {question:?}:\n{:#}",
        memory.render_openai()?
    );
    memory.close()
}
