//! Speed and size of the core with a scripted model (so the figures are the
//! engine's own cost, not an LLM's): `cargo run --release --example bench`.
//! Prints a Markdown table; docs/BENCH.md keeps the last results.

use std::time::Instant;

use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::types::recall::SearchOptions;
use engram::Config;
use engram::Memory;
use engram::NewFact;
use engram::NewMessage;
use engram::NoteArgs;
use engram::Task;
use serde_json::json;

const T0: i64 = 1_772_445_600_000;

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn model() -> ScriptedModel {
    let m = ScriptedModel::new();
    // A new topic every 6 messages; two facts per noted episode.
    m.on(Task::Segment, |req| {
        let n: usize = engram::testing::new_message(req)
            .split('#')
            .nth(1)?
            .split(' ')
            .next()?
            .parse()
            .ok()?;
        Some(json!({"boundary": if n % 6 == 0 { 0.9 } else { 0.1 }}).to_string())
    });
    m.on(Task::Note, |req| {
        let topic = req.content.split("topic ").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.to_string();
        Some(json!({"facts": [
            {"subject": format!("project {topic}"), "predicate": "has owner", "object": format!("person {topic}"),
             "sentence": format!("Project {topic} is owned by person {topic}."), "kind": "fact"},
            {"subject": format!("project {topic}"), "predicate": "is due", "object": format!("week {topic}"),
             "sentence": format!("Project {topic} is due in week {topic}."), "kind": "next"}
        ]}).to_string())
    });
    m
}

fn conversation(
    messages: usize,
) -> (
    Vec<f64>,
    Memory<MemoryStore, ScriptedModel, ManualClock>,
    MemoryStore,
) {
    let clock = ManualClock::at(T0);
    let store = MemoryStore::new();
    let config = Config {
        ceiling_tokens: 4_000,
        ..Config::default()
    };
    let mut memory = block_on(Memory::open(
        "bench",
        store.clone(),
        model(),
        clock.clone(),
        config,
    ))
    .unwrap();
    let mut times = Vec::with_capacity(messages);
    for i in 0..messages {
        clock.advance(60_000);
        let topic = i / 6;
        let text = format!(
            "Message #{i} about topic {topic}: we discussed the schedule, the owners and the open questions of project {topic} in some detail."
        );
        let m = if i % 2 == 0 {
            NewMessage::user(text)
        } else {
            NewMessage::assistant(text)
        };
        let t = Instant::now();
        block_on(memory.add_message(m)).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (times, memory, store)
}

fn main() {
    println!("| measure | value |");
    println!("|---|---|");
    let (times, mut memory, store) = conversation(2_000);
    println!(
        "| add_message p50 / p95 over 2,000 messages (ms) | {:.3} / {:.3} |",
        pct(times.clone(), 0.5),
        pct(times, 0.95)
    );
    let stats = block_on(memory.stats()).unwrap();
    println!(
        "| after 2,000 messages: episodes (live, leaving, sealed, forgotten) / facts / traces | {:?} / {} / {} |",
        stats.episodes, stats.facts[0], stats.traces[0]
    );
    let bytes: usize = store.dump().values().map(|v| v.len()).sum();
    println!(
        "| store size after 2,000 messages (KiB) | {} |",
        bytes / 1024
    );

    let clock = ManualClock::at(T0 + 10_000 * 60_000);
    let t = Instant::now();
    let mut reopened = block_on(Memory::open(
        "bench",
        store.clone(),
        model(),
        clock,
        Config::default(),
    ))
    .unwrap();
    println!(
        "| open (snapshot + tail) (ms) | {:.2} |",
        t.elapsed().as_secs_f64() * 1e3
    );
    let t = Instant::now();
    let export = block_on(reopened.export()).unwrap();
    println!(
        "| export (ms) / size (KiB) | {:.2} / {} |",
        t.elapsed().as_secs_f64() * 1e3,
        export.len() / 1024
    );

    let mut search = Vec::new();
    for i in 0..200 {
        let q = format!("who owns project {} and when is it due?", i % 300);
        let t = Instant::now();
        block_on(memory.search(&q, SearchOptions::default())).unwrap();
        search.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "| search, {} facts, p50 / p95 (ms) | {:.3} / {:.3} |",
        stats.facts[0],
        pct(search.clone(), 0.5),
        pct(search, 0.95)
    );

    // A larger graph through the host's note tool: 10,000 more facts.
    let clock = ManualClock::at(T0 + 20_000 * 60_000);
    let scripted = ScriptedModel::new();
    scripted.push(Task::Segment, Ok(json!({"boundary": 0.9}).to_string()));
    scripted.push(Task::Segment, Ok(json!({"boundary": 0.9}).to_string()));
    let mut big = block_on(Memory::open(
        "big",
        MemoryStore::new(),
        scripted,
        clock.clone(),
        Config::default(),
    ))
    .unwrap();
    block_on(big.add_message(NewMessage::user(
        "Start of the big graph, with enough words to form an episode of its own.",
    )))
    .unwrap();
    block_on(big.add_message(NewMessage::assistant("Ready."))).unwrap();
    block_on(big.add_message(NewMessage::user("Second episode begins."))).unwrap();
    let t = Instant::now();
    for b in 0..250 {
        let facts = (0..40)
            .map(|j| {
                let k = b * 40 + j;
                NewFact {
                    subject: format!("item {k}"),
                    predicate: "belongs to".into(),
                    object: format!("group {}", k % 97),
                    sentence: format!(
                        "Item {k} belongs to group {} and costs {} euros.",
                        k % 97,
                        k % 13
                    ),
                    kind: engram::FactKind::Fact,
                    sources: Vec::new(),
                }
            })
            .collect();
        block_on(big.note(NoteArgs {
            episode: Some(1),
            facts,
        }))
        .unwrap();
    }
    println!(
        "| note 40 facts into a growing graph, mean over 250 calls (ms) | {:.2} |",
        t.elapsed().as_secs_f64() * 1e3 / 250.0
    );
    let mut search = Vec::new();
    for i in 0..100 {
        let q = format!("what does item {} cost?", i * 97);
        let t = Instant::now();
        block_on(big.search(&q, SearchOptions::default())).unwrap();
        search.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "| search, 10,000 facts, p50 / p95 (ms) | {:.3} / {:.3} |",
        pct(search.clone(), 0.5),
        pct(search, 0.95)
    );
}
