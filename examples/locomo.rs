//! Retrieval quality on LoCoMo (Maharana et al., 2024; two development
//! conversations, CC BY-NC 4.0, read from `../shared/data/locomo-dev/`, not
//! bundled): `cargo run --release --example locomo [PATH]`.
//!
//! Each conversation is replayed through a memory (speaker A as the user,
//! speaker B as the assistant, the sessions' dates as the clock), then every
//! question of categories 1-4 is put to `search` (the walk off, items in view
//! included). Evidence recall@k is the share of the question's evidence
//! turns among the turns of the top k items: a passage counts its turns, a
//! fact the turn it was written from. Three note sources:
//!
//! * `passages`: a scripted model with a boundary wherever an hour or more
//!   passed and no facts: search over passages of out-of-view conversation;
//! * `observations`: the same, and each leaving episode's note returns the
//!   dataset's observations of its turns as facts (a fact cites its turn);
//! * `offline`: the built-in offline model for every task, facts it wrote
//!   itself (a fact counts the turn of its episode it shares most words
//!   with).
//!
//! Embeddings are hashing embedders (the test double for the scripted runs,
//! the offline model's own for `offline`), not a sentence model: these
//! figures are a floor for what a real embedder gives.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use engram::offline::words::term_set;
use engram::recall::{Item, SearchOptions};
use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::{Clock, Config, Memory, Model, NewMessage, OfflineModel, Task};
use serde_json::{json, Value};

#[path = "../tests/locomo_time/mod.rs"]
mod locomo_time;
use locomo_time::parse_locomo_time as parse_time;

#[derive(Clone, Copy, PartialEq)]
enum Source {
    Passages,
    Observations,
    Offline,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Passages => "passages",
            Source::Observations => "observations",
            Source::Offline => "offline",
        }
    }
}

/// One turn of a conversation as added.
struct Turn {
    dia: String,
    text: String,
    user: bool,
    at: i64,
}

fn turns(c: &Value) -> Vec<Turn> {
    let a = c["speaker_a"].as_str().unwrap().to_string();
    let mut out = Vec::new();
    let mut clock = 0i64;
    for s in 1.. {
        let Some(session) = c.get(format!("session_{s}")).and_then(|v| v.as_array()) else {
            break;
        };
        let start = parse_time(c[format!("session_{s}_date_time")].as_str().unwrap()).unwrap();
        clock = start.max(clock);
        for t in session {
            let mut text = format!(
                "{}: {}",
                t["speaker"].as_str().unwrap(),
                t["text"].as_str().unwrap()
            );
            if let Some(cap) = t.get("blip_caption").and_then(|v| v.as_str()) {
                text.push_str(&format!(" [shares a photo: {cap}]"));
            }
            clock += 30_000;
            out.push(Turn {
                dia: t["dia_id"].as_str().unwrap().to_string(),
                text,
                user: t["speaker"].as_str() == Some(&a),
                at: clock,
            });
        }
    }
    out
}

/// The dataset's observations: sentence and the turn it cites.
fn observations(conv: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    if let Some(obs) = conv["observation"].as_object() {
        for session in obs.values() {
            for (speaker, list) in session.as_object().into_iter().flatten() {
                for o in list.as_array().into_iter().flatten() {
                    if let (Some(text), Some(dia)) = (o[0].as_str(), o[1].as_str()) {
                        out.push((speaker.clone(), text.to_string(), dia.to_string()));
                    }
                }
            }
        }
    }
    out
}

fn scripted(conv: &Value, turns: &[Turn], source: Source) -> ScriptedModel {
    let model = ScriptedModel::new();
    model.on(Task::Segment, |req| {
        let gap = req.content.contains("hours after") || req.content.contains("days after");
        Some(json!({"boundary": if gap { 0.9 } else { 0.1 }}).to_string())
    });
    if source == Source::Observations {
        let by_text: BTreeMap<String, String> = turns
            .iter()
            .map(|t| (engram::text::clip(&t.text, 1_000), t.dia.clone()))
            .collect();
        let mut by_dia: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (speaker, text, dia) in observations(conv) {
            by_dia.entry(dia).or_default().push((speaker, text));
        }
        model.on(Task::Note, move |req| {
            let mut facts = Vec::new();
            for line in req.content.lines() {
                let Some((_, rest)) = line.split_once("] ") else {
                    continue;
                };
                let Some((_, text)) = rest.split_once(": ") else {
                    continue;
                };
                let Some(dia) = by_text.get(text) else {
                    continue;
                };
                for (speaker, sentence) in by_dia.get(dia).into_iter().flatten() {
                    facts.push(json!({
                        "subject": speaker, "predicate": "said", "object": dia,
                        "sentence": sentence, "kind": "fact"
                    }));
                }
            }
            facts.truncate(40);
            Some(json!({ "facts": facts }).to_string())
        });
    }
    model
}

struct Outcome {
    questions: usize,
    /// Per category: (questions, recall@5 sum, recall@10 sum).
    by_category: BTreeMap<i64, (usize, f64, f64)>,
    facts: usize,
    passages: usize,
    replay_ms: f64,
    messages: usize,
}

fn run<M: Model>(conv: &Value, turns: &[Turn], model: M, source: Source) -> Outcome {
    let clock = ManualClock::at(turns[0].at);
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
    let mut dia: BTreeMap<u64, usize> = BTreeMap::new();
    let started = Instant::now();
    for (i, t) in turns.iter().enumerate() {
        clock.set(t.at.max(clock.now_ms()));
        let m = if t.user {
            NewMessage::user(&t.text)
        } else {
            NewMessage::assistant(&t.text)
        };
        let added = block_on(memory.add_message(m)).unwrap();
        dia.insert(added.message, i);
    }
    block_on(memory.maintain()).unwrap();
    let replay_ms = started.elapsed().as_secs_f64() * 1e3;
    // Where each item's turns are.
    let episodes = block_on(memory.episodes()).unwrap();
    let episode_turns: BTreeMap<u64, Vec<usize>> = episodes
        .iter()
        .map(|e| {
            let ids = (e.episode.first..=e.episode.last).filter_map(|m| dia.get(&m).copied());
            (e.episode.id, ids.collect())
        })
        .collect();
    let obs_dia: BTreeMap<String, String> = observations(conv)
        .into_iter()
        .map(|(_, text, d)| (text, d))
        .collect();
    let index_of: BTreeMap<&str, usize> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| (t.dia.as_str(), i))
        .collect();
    let facts = block_on(memory.facts()).unwrap();
    let fact_turn: BTreeMap<u64, usize> = facts
        .iter()
        .filter_map(|f| {
            let turn = match source {
                Source::Observations => obs_dia
                    .get(&f.sentence)
                    .and_then(|d| index_of.get(d.as_str()).copied()),
                _ => {
                    let words = term_set(&f.sentence);
                    episode_turns
                        .get(&f.episode)?
                        .iter()
                        .copied()
                        .max_by_key(|&i| {
                            (
                                term_set(&turns[i].text).intersection(&words).count(),
                                usize::MAX - i,
                            )
                        })
                }
            }?;
            Some((f.id, turn))
        })
        .collect();
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
    let mut out = Outcome {
        questions: 0,
        by_category: BTreeMap::new(),
        facts: facts.len(),
        passages: ranges.len(),
        replay_ms,
        messages: turns.len(),
    };
    for q in conv["qa"].as_array().unwrap() {
        let category = q["category"].as_i64().unwrap_or(5);
        if !(1..=4).contains(&category) {
            continue;
        }
        let evidence: BTreeSet<usize> = q["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e.as_str())
            .flat_map(|e| {
                e.split(';')
                    .map(|x| x.trim().to_string())
                    .collect::<Vec<_>>()
            })
            .filter_map(|e| index_of.get(e.as_str()).copied())
            .collect();
        if evidence.is_empty() {
            continue;
        }
        let hits = block_on(memory.search(
            q["question"].as_str().unwrap(),
            SearchOptions {
                limit: 10,
                walk: false,
                include_in_view: true,
            },
        ))
        .unwrap();
        let found = |k: usize| -> f64 {
            let mut seen = BTreeSet::new();
            for h in hits.iter().take(k) {
                match h.item {
                    Item::Passage(p) => {
                        let (f, l) = ranges[&p];
                        seen.extend((f..=l).filter_map(|m| dia.get(&m).copied()));
                    }
                    Item::Fact(f) => seen.extend(fact_turn.get(&f).copied()),
                }
            }
            evidence.intersection(&seen).count() as f64 / evidence.len() as f64
        };
        let slot = out.by_category.entry(category).or_insert((0, 0.0, 0.0));
        slot.0 += 1;
        slot.1 += found(5);
        slot.2 += found(10);
        out.questions += 1;
    }
    out
}

const CATEGORIES: [(i64, &str); 4] = [
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
];

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/data/locomo-dev/locomo-dev.json".into());
    let data: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("LoCoMo file")).unwrap();
    print!("| note source | conversation | messages | replay (ms) | facts | passages | questions | recall@5 | recall@10 |");
    for (_, name) in CATEGORIES {
        print!(" @10 {name} |");
    }
    println!();
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for source in [Source::Passages, Source::Observations, Source::Offline] {
        let mut total: BTreeMap<i64, (usize, f64, f64)> = BTreeMap::new();
        for conv in &data {
            let c = &conv["conversation"];
            let ts = turns(c);
            let o = match source {
                Source::Offline => run(conv, &ts, OfflineModel::new(), source),
                _ => run(conv, &ts, scripted(conv, &ts, source), source),
            };
            let sum = |o: &BTreeMap<i64, (usize, f64, f64)>| {
                o.values()
                    .fold((0usize, 0.0, 0.0), |a, v| (a.0 + v.0, a.1 + v.1, a.2 + v.2))
            };
            let (n, r5, r10) = sum(&o.by_category);
            print!(
                "| {} | {} | {} | {:.0} | {} | {} | {} | {:.3} | {:.3} |",
                source.name(),
                conv["sample_id"].as_str().unwrap(),
                o.messages,
                o.replay_ms,
                o.facts,
                o.passages,
                o.questions,
                r5 / n as f64,
                r10 / n as f64
            );
            for (cat, _) in CATEGORIES {
                let (n, _, r10) = o.by_category.get(&cat).copied().unwrap_or((0, 0.0, 0.0));
                print!(" {:.3} ({n}) |", r10 / n.max(1) as f64);
            }
            println!();
            for (cat, v) in o.by_category {
                let t = total.entry(cat).or_insert((0, 0.0, 0.0));
                t.0 += v.0;
                t.1 += v.1;
                t.2 += v.2;
            }
        }
        let (n, r5, r10) = total
            .values()
            .fold((0usize, 0.0, 0.0), |a, v| (a.0 + v.0, a.1 + v.1, a.2 + v.2));
        print!(
            "| {} | all | | | | | {n} | {:.3} | {:.3} |",
            source.name(),
            r5 / n as f64,
            r10 / n as f64
        );
        for (cat, _) in CATEGORIES {
            let (n, _, r10) = total.get(&cat).copied().unwrap_or((0, 0.0, 0.0));
            print!(" {:.3} ({n}) |", r10 / n.max(1) as f64);
        }
        println!();
    }
}
