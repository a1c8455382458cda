//! Recall of latent cues on LoCoMo-Plus (arXiv 2602.10715; the development
//! slice of 100 cue/trigger pairs, read from `../shared/data/locomo-plus-dev/`,
//! not bundled): `scripts/bench-quality` (`ENGRAM_QUALITY_DATASETS=locomo-plus`),
//! or `cargo run --release --example locomo_plus -- [PAIRS] [LOCOMO] [--minilm CMD]`.
//!
//! Each pair is stitched into one of the two LoCoMo development
//! conversations (pair i into conversation i mod 2) as the authors'
//! `build_conv.py` does (`quality/datasets.rs`): the trigger 7 days after
//! the conversation's last session, the cue's exchange as a session of its
//! own `time_gap` before it. Each pair is its own replay (no two cues in
//! one memory, so none cues another), the offline model for every task.
//! The evidence is the cue's user line. Measures, per relation type, for
//! engram and the plain baselines of the same run (`quality/chat.rs`):
//!
//! * the cue in context when the trigger is the next user message: the
//!   view rendered at ceilings 8,000 and 4,000 (messages in view, the facts
//!   block, the recall block); the plain chat window: the last messages
//!   that fit in the ceiling;
//! * the cue within 200, 500 and 1,000 tokens of search by the trigger's
//!   text (engram's budgeted search; BM25, the embedder and their fusion
//!   over single messages).

use std::time::Instant;

use serde_json::Value;

#[path = "quality/mod.rs"]
mod quality;

#[path = "quality/datasets.rs"]
mod datasets;

#[path = "quality/chat.rs"]
mod chat;

#[path = "../tests/locomo_time/mod.rs"]
mod locomo_time;

use chat::{peak_mib, replay, share, Bench, Plain, Table, CEILINGS, SEARCH_CEILING};

const RELATIONS: [&str; 4] = ["causal", "state", "goal", "value"];

fn read(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn main() {
    let args = quality::Args::parse(false);
    let pairs_path = args.path(0, "../shared/data/locomo-plus-dev/locomo-plus-dev.json");
    let locomo_path = args.path(1, "../shared/data/locomo-dev/locomo-dev.json");
    let minilm = args.minilm;
    let pairs = read(&pairs_path);
    let convs = read(&locomo_path);
    let convs: Vec<&Value> = convs
        .as_array()
        .expect("LoCoMo: a list of conversations")
        .iter()
        .map(|c| &c["conversation"])
        .collect();
    let bases: Vec<Vec<datasets::Turn>> = convs
        .iter()
        .map(|c| datasets::locomo_turns(c, locomo_time::parse_locomo_time))
        .collect();
    let model = Bench::new(minilm.as_deref());
    let started = Instant::now();
    let mut table = Table::default();
    let (mut measured, mut skipped, mut replay_s, mut replays, mut messages) = (0, 0, 0.0, 0, 0);
    for (i, pair) in pairs.as_array().expect("pairs: a list").iter().enumerate() {
        let c = i % convs.len();
        let Some(st) = datasets::stitch(convs[c], &bases[c], pair) else {
            eprintln!("LoCoMo-Plus pair {i}: cannot stitch, skipped");
            skipped += 1;
            continue;
        };
        measured += 1;
        messages += st.turns.len();
        let evidence = std::iter::once(st.cue).collect();
        let plain = Plain::new(&st.turns, &model);
        for (m, sets) in plain.within_budgets(&st.trigger, &model).iter().enumerate() {
            for (b, seen) in sets.iter().enumerate() {
                table.cells[1 + m][2 + b].add(&st.relation, share(&evidence, seen));
            }
        }
        for (ci, &ceiling) in CEILINGS.iter().enumerate() {
            let seen = plain.window(st.turns.len(), ceiling, &st.trigger);
            table.cells[4][ci].add(&st.relation, share(&evidence, &seen));
        }
        let r = replay(&st.turns, model.clone(), SEARCH_CEILING);
        replay_s += r.replay_s;
        replays += 1;
        for (b, seen) in r
            .within_budgets(&st.trigger, st.trigger_at)
            .iter()
            .enumerate()
        {
            table.cells[0][2 + b].add(&st.relation, share(&evidence, seen));
        }
        for (ci, &ceiling) in CEILINGS.iter().enumerate() {
            let r = replay(&st.turns, model.clone(), ceiling);
            replay_s += r.replay_s;
            replays += 1;
            let (seen, tokens) = r.in_context(&st.trigger, st.trigger_at);
            table.cells[0][ci].add(&st.relation, share(&evidence, &seen));
            table.view[ci].0 += tokens;
            table.view[ci].1 += 1;
        }
        if (i + 1) % 10 == 0 {
            eprintln!(
                "LoCoMo-Plus: {} pairs done at {:.0} s",
                i + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "LoCoMo-Plus dev: {measured} cue/trigger pairs ({skipped} could not be stitched), each stitched into one of the 2 LoCoMo \
         development conversations and replayed alone ({:.0} messages a replay, mean), embeddings {}, the offline model for every task; \
         the evidence is the cue's user line. {replays} replays, {:.1} s each (mean); total {:.0} s, peak memory {} MiB.",
        messages as f64 / measured.max(1) as f64,
        model.embedder_name(),
        replay_s / replays.max(1) as f64,
        started.elapsed().as_secs_f64(),
        peak_mib().map_or("-".into(), |m| format!("{m:.0}"))
    );
    println!();
    println!("The cue in context when the trigger is the next user message (ceilings 8,000 and 4,000), and within 200 / 500 / 1,000 tokens of search by the trigger, all pairs:");
    println!();
    table.print(|_| true, &[0, 1, 2, 3, 4]);
    for c in [0, 1, 3] {
        println!();
        println!(
            "LoCoMo-Plus per relation type, {} (pairs):",
            Table::column(c)
        );
        println!();
        table.print_by(c, &RELATIONS, |k, g| k == g);
    }
    let view = |c: usize| table.view[c].0 as f64 / table.view[c].1.max(1) as f64;
    println!();
    println!(
        "engram's view: {:.0} tokens (mean) at ceiling 8000, {:.0} at 4000.",
        view(0),
        view(1)
    );
}
