//! Recall on BEAM (Tavakoli et al., ICLR 2026; the development slice of 10
//! chats of 100K, 500K and 1M tokens, read from `../shared/data/beam-dev/`,
//! not bundled): `scripts/bench-quality` (`ENGRAM_QUALITY_DATASETS=beam`),
//! or `cargo run --release --example beam -- [DIR] [--minilm CMD]`.
//!
//! Each chat is its own memory, replayed in order with its batches' dates
//! (`quality/datasets.rs`), the offline model for every task; its 20
//! probing questions are asked after the last message, a day later. A
//! question's evidence is the messages its `source_chat_ids` name;
//! questions with none (abstention, some summaries) are left out and
//! counted. Measures, per size and per ability, for engram and the plain
//! baselines of the same run (`quality/chat.rs`):
//!
//! * evidence in context: the question as the next user message, the view
//!   rendered at ceilings 8,000 and 4,000 (messages in view, the facts
//!   block, the recall block); the plain chat window: the last messages
//!   that fit in the ceiling;
//! * recall within 200, 500 and 1,000 tokens of search (engram's budgeted
//!   search; BM25, the embedder and their fusion over single messages).
//!
//! Time and peak memory per size go to the output. `ENGRAM_BEAM_SIZES=1M`
//! (comma-separated) runs some sizes only.

use std::collections::BTreeMap;
use std::time::Instant;

use engram::base::text::estimate_tokens;
use serde_json::Value;

#[path = "quality/mod.rs"]
mod quality;

#[path = "quality/datasets.rs"]
mod datasets;

#[path = "quality/chat.rs"]
mod chat;

use chat::{peak_mib, replay, reset_peak, share, Bench, Plain, Table, CEILINGS, SEARCH_CEILING};

const SIZES: [&str; 4] = ["100K", "500K", "1M", "10M"];
const ABILITIES: [&str; 10] = [
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
];

/// What one size cost.
#[derive(Default)]
struct Cost {
    chats: usize,
    messages: usize,
    tokens: usize,
    facts: usize,
    passages: usize,
    /// Replay seconds at the search ceiling, summed over chats; and the
    /// longest.
    replay_s: f64,
    replay_max_s: f64,
    total_s: f64,
    peak_mib: Option<f64>,
}

fn read(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn main() {
    let args = quality::Args::parse(false);
    let dir = args.path(0, "../shared/data/beam-dev");
    let minilm = args.minilm;
    let only: Option<Vec<String>> = std::env::var("ENGRAM_BEAM_SIZES")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    let model = Bench::new(minilm.as_deref());
    let started = Instant::now();
    let mut table = Table::default();
    let mut costs: BTreeMap<usize, Cost> = BTreeMap::new();
    let mut left_out: BTreeMap<String, usize> = BTreeMap::new();
    let mut asked = 0;
    let mut cut = 0;
    let peaks = reset_peak();
    for (s, size) in SIZES.iter().enumerate() {
        if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == size)) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(std::path::Path::new(&dir).join(size)) else {
            continue;
        };
        let mut chats: Vec<(u64, std::path::PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("chat.json").is_file())
            .map(|e| {
                let n = e.file_name().to_string_lossy().parse().unwrap_or(u64::MAX);
                (n, e.path())
            })
            .collect();
        chats.sort();
        reset_peak();
        let size_started = Instant::now();
        let cost = costs.entry(s).or_default();
        for (n, path) in chats {
            let chat = datasets::beam_chat(
                &read(&path.join("chat.json")),
                &read(&path.join("probing_questions.json")),
            );
            let turns = &chat.turns;
            cut += chat.cut;
            cost.chats += 1;
            cost.messages += turns.len();
            cost.tokens += turns
                .iter()
                .map(|t| estimate_tokens(&t.text))
                .sum::<usize>();
            let questions: Vec<&datasets::Question> = chat
                .questions
                .iter()
                .filter(|q| {
                    if q.evidence.is_empty() {
                        *left_out.entry(q.ability.clone()).or_default() += 1;
                    }
                    !q.evidence.is_empty()
                })
                .collect();
            asked += questions.len();
            let group = |q: &datasets::Question| format!("{size}/{}", q.ability);
            let plain = Plain::new(turns, &model);
            for q in &questions {
                let fitted = plain.within_budgets(&q.question, &model);
                for (m, sets) in fitted.iter().enumerate() {
                    for (b, seen) in sets.iter().enumerate() {
                        table.cells[1 + m][2 + b].add(&group(q), share(&q.evidence, seen));
                    }
                }
                for (c, &ceiling) in CEILINGS.iter().enumerate() {
                    let seen = plain.window(turns.len(), ceiling, &q.question);
                    table.cells[4][c].add(&group(q), share(&q.evidence, &seen));
                }
            }
            let r = replay(turns, model.clone(), SEARCH_CEILING);
            cost.replay_s += r.replay_s;
            cost.replay_max_s = cost.replay_max_s.max(r.replay_s);
            cost.facts += r.facts;
            cost.passages += r.passages;
            for q in &questions {
                let fitted = r.within_budgets(&q.question, chat.asked_at);
                for (b, seen) in fitted.iter().enumerate() {
                    table.cells[0][2 + b].add(&group(q), share(&q.evidence, seen));
                }
            }
            drop(r);
            for (c, &ceiling) in CEILINGS.iter().enumerate() {
                let r = replay(turns, model.clone(), ceiling);
                for q in &questions {
                    let (seen, tokens) = r.in_context(&q.question, chat.asked_at);
                    table.cells[0][c].add(&group(q), share(&q.evidence, &seen));
                    table.view[c].0 += tokens;
                    table.view[c].1 += 1;
                }
            }
            eprintln!(
                "BEAM {size}/{n}: {} messages, {} questions, done at {:.0} s",
                turns.len(),
                questions.len(),
                started.elapsed().as_secs_f64()
            );
        }
        cost.total_s = size_started.elapsed().as_secs_f64();
        cost.peak_mib = if peaks { peak_mib() } else { None };
    }
    let left: usize = left_out.values().sum();
    println!(
        "BEAM dev: {} chats, {asked} questions with evidence ids ({left} left out for want of them: {}), \
         embeddings {}, the offline model for every task; {cut} message(s) over the memory's \
         16,000-token message limit cut to it.",
        costs.values().map(|c| c.chats).sum::<usize>(),
        left_out
            .iter()
            .map(|(a, n)| format!("{n} {a}"))
            .collect::<Vec<_>>()
            .join(", "),
        model.embedder_name()
    );
    println!();
    println!("| size | chats | messages (mean) | tokens (mean) | facts (mean) | passages (mean) | replay, s per chat (mean / max) | size total, s (3 replays, 20 questions each) | peak memory, MiB |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (s, c) in &costs {
        let n = c.chats.max(1) as f64;
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} / {:.1} | {:.0} | {} |",
            SIZES[*s],
            c.chats,
            c.messages as f64 / n,
            c.tokens as f64 / n,
            c.facts as f64 / n,
            c.passages as f64 / n,
            c.replay_s / n,
            c.replay_max_s,
            c.total_s,
            c.peak_mib.map_or("-".into(), |m| format!("{m:.0}"))
        );
    }
    println!();
    println!("BEAM evidence share per size: in context when the question is the next user message (ceilings 8,000 and 4,000; the plain window: the last messages that fit), and within 200 / 500 / 1,000 tokens of search:");
    println!();
    println!(
        "| size | method | context 8000 | context 4000 | 200 tokens | 500 tokens | 1000 tokens |"
    );
    println!("|---|---|---|---|---|---|---|");
    for s in costs.keys() {
        let prefix = format!("{}/", SIZES[*s]);
        for (m, name) in chat::METHODS.iter().enumerate() {
            print!("| {} | {name} |", SIZES[*s]);
            for c in 0..5 {
                if Table::has(m, c) {
                    let (_, v) = table.cells[m][c].mean(|k| k.starts_with(&prefix));
                    print!(" {v:.3} |");
                } else {
                    print!(" - |");
                }
            }
            println!();
        }
    }
    let abilities: Vec<&str> = ABILITIES
        .iter()
        .copied()
        .filter(|a| table.cells[0][2].mean(|k| k.ends_with(&format!("/{a}"))).0 > 0)
        .collect();
    let short: Vec<String> = abilities
        .iter()
        .map(|a| a.split('_').next().unwrap().to_string())
        .collect();
    let short: Vec<&str> = short.iter().map(|s| s.as_str()).collect();
    for c in [0, 1, 3] {
        println!();
        println!(
            "BEAM per ability (all sizes), {} (questions):",
            Table::column(c)
        );
        println!();
        table.print_by(c, &short, |k, g| {
            let i = short.iter().position(|x| *x == g).unwrap();
            k.ends_with(&format!("/{}", abilities[i]))
        });
    }
    let view = |c: usize| table.view[c].0 as f64 / table.view[c].1.max(1) as f64;
    println!();
    println!(
        "engram's view: {:.0} tokens (mean) at ceiling 8000, {:.0} at 4000. Total {:.0} s.",
        view(0),
        view(1),
        started.elapsed().as_secs_f64()
    );
}
