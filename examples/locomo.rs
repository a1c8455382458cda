//! Retrieval quality on LoCoMo (Maharana et al., 2024; two development
//! conversations, CC BY-NC 4.0, read from `../shared/data/locomo-dev/`, not
//! bundled): `cargo run --release --example locomo [PATH]`.
//!
//! Each conversation is replayed through a memory (speaker A as the user,
//! speaker B as the assistant, the sessions' dates as the clock). The model is
//! scripted and offline: a boundary wherever an hour or more passed, no facts,
//! so what is measured is engram's search over passages of out-of-view
//! conversation (BM25 + cosine over the test embedder, fused by RRF). For each
//! question of categories 1-4, `search` returns its top items; evidence
//! recall is the share of the question's evidence turns among the turns of
//! the retrieved passages. Reported at k = 10 passages and within the first
//! 10 turns of the ranked passages (comparable to turn-level baselines).

use std::collections::{BTreeMap, BTreeSet};

use engram::recall::{Item, SearchOptions};
use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::{Config, Memory, NewMessage, Task};
use serde_json::{json, Value};

#[path = "../tests/locomo_time/mod.rs"]
mod locomo_time;
use locomo_time::parse_locomo_time as parse_time;

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/data/locomo-dev/locomo-dev.json".into());
    let data: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("LoCoMo file")).unwrap();
    println!("| conversation | turns | questions | passages | recall@10 passages | turns in 10 passages | recall@10 turns |");
    println!("|---|---|---|---|---|---|---|");
    let (mut all_p, mut all_t, mut all_n) = (0.0, 0.0, 0usize);
    for conv in &data {
        let c = &conv["conversation"];
        let a = c["speaker_a"].as_str().unwrap().to_string();
        let model = ScriptedModel::new();
        model.on(Task::Segment, |req| {
            let gap = req.content.contains("hours after") || req.content.contains("days after");
            Some(json!({"boundary": if gap { 0.9 } else { 0.1 }}).to_string())
        });
        let clock = ManualClock::at(0);
        let config = Config {
            ceiling_tokens: 2_000,
            ..Config::default()
        };
        let mut memory = block_on(Memory::open(
            "locomo",
            MemoryStore::new(),
            model,
            clock.clone(),
            config,
        ))
        .unwrap();
        let mut dia: BTreeMap<u64, String> = BTreeMap::new();
        let mut turns = 0;
        for s in 1.. {
            let Some(session) = c.get(format!("session_{s}")).and_then(|v| v.as_array()) else {
                break;
            };
            let start = parse_time(c[format!("session_{s}_date_time")].as_str().unwrap()).unwrap();
            clock.set(start.max(clock_now(&clock)));
            for t in session {
                let mut text = format!(
                    "{}: {}",
                    t["speaker"].as_str().unwrap(),
                    t["text"].as_str().unwrap()
                );
                if let Some(cap) = t.get("blip_caption").and_then(|v| v.as_str()) {
                    text.push_str(&format!(" [shares a photo: {cap}]"));
                }
                let m = if t["speaker"].as_str() == Some(&a) {
                    NewMessage::user(text)
                } else {
                    NewMessage::assistant(text)
                };
                clock.advance(30_000);
                let added = block_on(memory.add_message(m)).unwrap();
                dia.insert(added.message, t["dia_id"].as_str().unwrap().to_string());
                turns += 1;
            }
        }
        let export: Value = serde_json::from_str(&block_on(memory.export()).unwrap()).unwrap();
        let mut ranges: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for entry in export["log"].as_array().unwrap() {
            for e in entry["events"].as_array().unwrap() {
                if e["type"] == "passages_indexed" {
                    for p in e["passages"].as_array().unwrap() {
                        ranges.insert(
                            p["id"].as_u64().unwrap(),
                            (p["first"].as_u64().unwrap(), p["last"].as_u64().unwrap()),
                        );
                    }
                }
            }
        }
        let (mut sum_p, mut sum_t, mut n, mut covered) = (0.0, 0.0, 0usize, 0usize);
        for q in conv["qa"].as_array().unwrap() {
            if !(1..=4).contains(&q["category"].as_i64().unwrap_or(5)) {
                continue;
            }
            let evidence: BTreeSet<String> = q["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str())
                .flat_map(|e| {
                    e.split(';')
                        .map(|x| x.trim().to_string())
                        .collect::<Vec<_>>()
                })
                .filter(|e| e.starts_with('D'))
                .collect();
            if evidence.is_empty() {
                continue;
            }
            let question = q["question"].as_str().unwrap();
            let hits = block_on(memory.search(
                question,
                SearchOptions {
                    limit: 10,
                    walk: false,
                    include_in_view: true,
                },
            ))
            .unwrap();
            let mut seen: Vec<String> = Vec::new();
            for h in &hits {
                if let Item::Passage(p) = h.item {
                    let (f, l) = ranges[&p];
                    seen.extend((f..=l).filter_map(|m| dia.get(&m).cloned()));
                }
            }
            covered += seen.len();
            let share = |turns: &[String]| {
                evidence.iter().filter(|e| turns.contains(e)).count() as f64 / evidence.len() as f64
            };
            sum_p += share(&seen);
            sum_t += share(&seen[..seen.len().min(10)]);
            n += 1;
        }
        println!(
            "| {} | {turns} | {n} | {} | {:.3} | {:.1} | {:.3} |",
            conv["sample_id"].as_str().unwrap(),
            ranges.len(),
            sum_p / n as f64,
            covered as f64 / n as f64,
            sum_t / n as f64
        );
        all_p += sum_p;
        all_t += sum_t;
        all_n += n;
    }
    println!(
        "| all | | {all_n} | | {:.3} | | {:.3} |",
        all_p / all_n as f64,
        all_t / all_n as f64
    );
}

fn clock_now(c: &ManualClock) -> i64 {
    use engram::Clock;
    c.now_ms()
}
