//! The backfill bench (issue 28): a year of history loaded as it is in a
//! real app moving to engram. 10,000 dated messages of LongMemEval's chat
//! sessions (`../shared/data/longmemeval-dev/`), the sessions in date order
//! dealt to 10 threads, added with `add_messages` (1,000 per call, one
//! commit each, no model call), then `maintain_in` each thread until
//! nothing is pending: the boundary judgments, cuts, fades and notes the
//! batch deferred. The offline model answers; every request is counted.
//! Prints a Markdown table (docs/BENCH.md, "Backfill"):
//!
//!     cargo run --release --example backfill [-- MESSAGES THREADS]

use std::time::Instant;

use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::Config;
use engram::Memory;
use engram::NewMessage;
use engram::OfflineModel;
use engram::Role;
use serde_json::Value;

/// A session: its date, its id, its turns.
type Session = (i64, String, Vec<(Role, String)>);

/// 2024-01-01 00:00 UTC: the clock, after the last session.
const NOW: i64 = 1_704_067_200_000;

/// `2023/04/25 (Tue) 10:21` as ms since the epoch.
fn parse_date(s: &str) -> Option<i64> {
    let (date, rest) = s.split_once(' ')?;
    let mut d = date.split('/').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let time = rest.rsplit(' ').next()?;
    let (h, min) = time.split_once(':')?;
    let days = engram::base::text::days_from_civil(y, m, day);
    Some((days * 86_400 + h.parse::<i64>().ok()? * 3_600 + min.parse::<i64>().ok()? * 60) * 1_000)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let total: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let threads: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/longmemeval-dev/longmemeval-s-dev.json");
    let data: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the LongMemEval slice"))
            .expect("parses");
    // Every session once (the questions share some), with its date.
    let mut sessions: Vec<Session> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for q in &data {
        let ids = q["haystack_session_ids"].as_array().unwrap();
        let dates = q["haystack_dates"].as_array().unwrap();
        for (i, s) in q["haystack_sessions"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let id = ids[i].as_str().unwrap_or_default().to_string();
            if !seen.insert(id.clone()) {
                continue;
            }
            let Some(at) = dates[i].as_str().and_then(parse_date) else {
                continue;
            };
            let turns = s
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|t| {
                    let role = match t["role"].as_str()? {
                        "user" => Role::User,
                        _ => Role::Assistant,
                    };
                    let text: String = t["content"].as_str()?.chars().take(4_000).collect();
                    (!text.trim().is_empty()).then_some((role, text))
                })
                .collect();
            sessions.push((at, id, turns));
        }
    }
    sessions.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    // Dealt to the threads in date order, one minute per message, each
    // thread's times kept in order.
    let mut last = vec![i64::MIN; threads];
    let mut messages: Vec<NewMessage> = Vec::new();
    'deal: for (k, (at, _, turns)) in sessions.iter().enumerate() {
        let t = k % threads;
        for (i, (role, text)) in turns.iter().enumerate() {
            if messages.len() == total {
                break 'deal;
            }
            let when = (at + 60_000 * i as i64).max(last[t]);
            last[t] = when;
            let m = match role {
                Role::User => NewMessage::user(text.clone()),
                _ => NewMessage::assistant(text.clone()),
            };
            messages.push(m.in_thread(format!("chat-{t}")).said_at(when));
        }
    }
    let first_at = messages.iter().filter_map(|m| m.at).min().unwrap_or(NOW);
    let store = MemoryStore::new();
    let clock = ManualClock::at(NOW);
    let mut memory = block_on(Memory::open(
        "backfill",
        store.clone(),
        OfflineModel::new(),
        clock.clone(),
        Config::default(),
    ))
    .expect("open");
    let started = Instant::now();
    let mut commits = 0;
    for chunk in messages.chunks(engram::memory::limits::MAX_BATCH) {
        block_on(memory.add_messages(chunk)).expect("batch");
        commits += 1;
    }
    let batch_ms = started.elapsed().as_secs_f64() * 1e3;
    let bytes_after_batch = store.bytes();
    let calls_after_batch: u64 = block_on(memory.stats()).unwrap().model.calls.values().sum();
    let started = Instant::now();
    let mut rounds = 0;
    let mut longest = 0.0f64;
    let names: Vec<String> = (0..threads).map(|t| format!("chat-{t}")).collect();
    loop {
        let mut busy = false;
        for t in &names {
            if !block_on(memory.pending_in(t)).unwrap().is_empty() {
                let one = Instant::now();
                block_on(memory.maintain_in(t)).expect("maintain");
                longest = longest.max(one.elapsed().as_secs_f64() * 1e3);
                rounds += 1;
                busy = true;
            }
        }
        if !busy {
            break;
        }
        assert!(rounds < 100 * threads, "maintain settles");
    }
    let maintain_ms = started.elapsed().as_secs_f64() * 1e3;
    let stats = block_on(memory.stats()).unwrap();
    let episodes = block_on(memory.episodes()).unwrap();
    let over = names
        .iter()
        .filter(|t| {
            let v = block_on(memory.view_in(t)).unwrap();
            v.tokens > v.ceiling
        })
        .count();
    println!("| backfill | figure |");
    println!("|---|---|");
    println!("| messages (threads) | {} ({threads}) |", messages.len());
    println!(
        "| history | {} to {} |",
        engram::base::text::format_date(first_at),
        engram::base::text::format_date(last.iter().copied().max().unwrap_or(NOW))
    );
    println!("| `add_messages` calls (commits) | {commits} |");
    println!(
        "| batch time | {batch_ms:.0} ms ({:.1} µs per message) |",
        batch_ms * 1e3 / messages.len() as f64
    );
    println!("| model requests during the batch | {calls_after_batch} |");
    println!("| store after the batch | {bytes_after_batch} B |");
    println!("| `maintain_in` calls until nothing pending | {rounds} |");
    println!("| maintain time | {maintain_ms:.0} ms (longest call {longest:.0} ms) |");
    let calls: Vec<String> = stats
        .model
        .calls
        .iter()
        .map(|(task, n)| format!("{task} {n}"))
        .collect();
    println!(
        "| model requests in maintain, by task | {} |",
        calls.join(", ")
    );
    println!(
        "| episodes (sealed or forgotten) | {} ({}) |",
        episodes.len(),
        episodes
            .iter()
            .filter(|e| !e.episode.state.messages_in_view())
            .count()
    );
    println!("| facts | {} |", stats.facts[0] + stats.facts[1]);
    println!("| store after maintain | {} B |", store.bytes());
    println!("| thread views over the ceiling after | {over} |");
    let newest = episodes
        .iter()
        .max_by_key(|e| e.episode.formed_at)
        .map_or(0.0, |e| e.activation);
    let oldest = episodes
        .iter()
        .min_by_key(|e| e.episode.formed_at)
        .map_or(0.0, |e| e.activation);
    println!("| activation of the oldest / newest episode | {oldest:.4} / {newest:.4} |");
    // Every judgment of the history is dated within it: at most a day
    // (the idle sleep) after its thread's last message, none at the clock.
    let end = last.iter().copied().max().unwrap_or(NOW) + 24 * 3_600_000;
    let traces = block_on(memory.traces()).unwrap();
    let late = traces.iter().filter(|t| t.yes && t.at > end).count();
    println!(
        "| yes-traces dated after the history's end + 24 h | {late} of {} |",
        traces.iter().filter(|t| t.yes).count()
    );
    let mut by_age: Vec<(i64, f64)> = episodes
        .iter()
        .map(|e| (e.episode.formed_at, e.activation))
        .collect();
    by_age.sort_by_key(|(at, _)| *at);
    let median = |part: &[(i64, f64)]| {
        let mut a: Vec<f64> = part.iter().map(|(_, x)| *x).collect();
        a.sort_by(f64::total_cmp);
        a.get(a.len() / 2).copied().unwrap_or(0.0)
    };
    let tenth = (by_age.len() / 10).max(1);
    println!(
        "| median activation, oldest / newest tenth of the episodes | {:.4} / {:.4} |",
        median(&by_age[..tenth.min(by_age.len())]),
        median(&by_age[by_age.len().saturating_sub(tenth)..])
    );
}
