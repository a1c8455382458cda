//! Seeded, time-boxed fuzzing of everything a host or a model hands the
//! engine: model answers (mutated valid answers, junk, extreme numbers,
//! reasoning preambles, answers cut short, two answers in one), messages
//! with tool calls in any order (abandoned calls included), search options
//! of any size, imports (mutated exports, and crafted ones: one value of an
//! event replaced by an extreme one) and stored values (mutated heads,
//! snapshots and log entries). Nothing may panic (debug builds: overflow checks on); every
//! call returns a result, and a memory that opens keeps answering.
//!
//! `ENGRAM_FUZZ_SECONDS` sets the time per part (default 4 s, so
//! `scripts/test` stays short); `scripts/fuzz` runs it longer, in release.

mod common;

use std::time::{Duration, Instant};

use common::*;
use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::types::recall::SearchOptions;
use engram::Memory;
use engram::NewMessage;
use engram::Task;
use serde_json::json;

/// xorshift64*: the seeded generator of every mutation.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

fn budget() -> Duration {
    let s = std::env::var("ENGRAM_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(4.0);
    Duration::from_secs_f64(s)
}

const NUMBERS: [&str; 10] = [
    "0",
    "1",
    "2",
    "-1",
    "1e308",
    "-1e308",
    "18446744073709551616",
    "0.5",
    "NaN",
    "9223372036854775807",
];

/// A mutated answer for `task`: a valid shape with wild values, junk, or a
/// valid-looking answer cut short.
fn answer(rng: &mut Rng, task: Task) -> String {
    let n = rng.pick(&NUMBERS);
    let word = rng.pick(&[
        "Ana",
        "",
        " ",
        "\u{202e}evil",
        "x\ny",
        "[done] ok",
        "a\u{0}b",
    ]);
    let valid = match task {
        Task::Segment => format!(r#"{{"boundary": {n}}}"#),
        Task::Note => json!({"facts": [{"subject": word, "predicate": "is", "object": rng.pick(&["Lisbon", "", "it"]),
            "sentence": format!("{word} is somewhere {n}."), "kind": rng.pick(&["fact", "done", "next", "bogus"])}]})
        .to_string(),
        Task::Trace => format!(r#"{{"facts": [{{"fact": {n}, "episodes": [{n}, 1]}}]}}"#),
        Task::Resolve => format!(r#"{{"same_as": {n}}}"#),
        Task::Reconcile => format!(
            r#"{{"judgments": [{{"fact": {n}, "relation": "{}"}}]}}"#,
            rng.pick(&["restates", "contradicts", "unrelated", "eats"])
        ),
        Task::Split => json!({"parts": [word, "the cat", word.repeat(rng.below(50))]}).to_string(),
        Task::Relevance => format!(r#"{{"relevant": [{n}, 1, 2, 3]}}"#),
        Task::Distill => format!(r#"{{"kept": [{n}, 1]}}"#),
        _ => "{}".into(),
    };
    match rng.below(11) {
        0 => valid.chars().take(rng.below(valid.len())).collect(),
        1 => "I think so.".into(),
        2 => format!("```json\n{valid}\n``` and more"),
        // A reasoning model's preamble, braces and all.
        3 => format!("<think>is it {{{n}}}? maybe {valid}</think>\n{valid}"),
        // Cut inside the reasoning, or inside the answer after it.
        4 => format!(
            "<reasoning>{}",
            valid
                .chars()
                .take(rng.below(valid.len()))
                .collect::<String>()
        ),
        5 => {
            let cut: String = valid.chars().take(rng.below(valid.len())).collect();
            format!("<think>{{</think>{cut}")
        }
        // Two answers: ambiguous.
        6 => format!("{valid} or {valid}"),
        // One fact object where the list belongs.
        7 if task == Task::Note => valid.replacen("[{", "{", 1).replacen("}]}", "}}", 1),
        _ => valid,
    }
}

fn fuzz_model(rng: &mut Rng) -> ScriptedModel {
    let model = ScriptedModel::new();
    let cell = std::rc::Rc::new(std::cell::RefCell::new(Rng(rng.next() | 1)));
    for task in Task::ALL {
        let c = cell.clone();
        model.on(task, move |_| Some(answer(&mut c.borrow_mut(), task)));
    }
    model
}

#[test]
fn fuzzed_model_answers_never_panic_and_lose_nothing() {
    let deadline = Instant::now() + budget();
    let mut rng = Rng(0x5eed_0001);
    let mut runs = 0;
    while Instant::now() < deadline {
        runs += 1;
        let model = fuzz_model(&mut rng);
        let clock = ManualClock::at(T0);
        let cfg = config(300 + rng.below(800));
        let mut m = block_on(Memory::open(
            "fuzz",
            MemoryStore::new(),
            model,
            clock.clone(),
            cfg.clone(),
        ))
        .unwrap();
        let mut added = 0;
        for i in 0..40 {
            clock.advance(60_000 * (1 + rng.below(3000) as i64));
            let text = format!(
                "{NEW} message {i} about {}",
                rng.pick(&["Ana", "Lisbon", "the cat"])
            );
            let call = |id: &str| engram::ToolCall {
                id: id.to_string(),
                name: "search".into(),
                arguments: "{}".into(),
            };
            let id = rng.pick(&["c1", "c2", "c3", ""]);
            // Tool calls in any order: calls, outputs (matching or not),
            // abandoned calls, and other messages while calls wait.
            let msg = match rng.below(8) {
                0 => NewMessage::tool_calls(text, vec![call(id), call("c2")]),
                1 => NewMessage::tool_result(id, text),
                2 => {
                    if block_on(m.abandon_tool_call(id)).is_ok() {
                        added += 1;
                    }
                    continue;
                }
                3 => NewMessage::system(text),
                n if n % 2 == 0 => NewMessage::user(text),
                _ => NewMessage::assistant(text),
            };
            if block_on(m.add_message(msg)).is_ok() {
                added += 1;
            }
            // Search options of any size.
            let sizes = [0, 1, 10, 1_000, 1_001, 1_000_000_000, usize::MAX];
            let options = SearchOptions {
                limit: sizes[rng.below(sizes.len())],
                walk: rng.below(2) == 0,
                include_in_view: rng.below(2) == 0,
                budget_tokens: match rng.below(3) {
                    0 => None,
                    _ => Some(sizes[rng.below(sizes.len())]),
                },
                // Filters of any kind, even ones nothing passes.
                filter: engram::types::recall::SearchFilter {
                    thread: (rng.below(3) == 0)
                        .then(|| rng.pick(&["main", "", "other"]).to_string()),
                    from: (rng.below(3) == 0).then(|| rng.next() as i64),
                    to: (rng.below(3) == 0).then(|| rng.next() as i64),
                    kinds: match rng.below(3) {
                        0 => vec![engram::types::recall::ItemKind::Fact],
                        1 => vec![
                            engram::types::recall::ItemKind::Passage,
                            engram::types::recall::ItemKind::Message,
                        ],
                        _ => Vec::new(),
                    },
                    entity: (rng.below(3) == 0).then(|| rng.next() % 8),
                    metadata: match rng.below(4) {
                        0 => serde_json::json!({"k": rng.next() % 3})
                            .as_object()
                            .cloned()
                            .unwrap_or_default(),
                        _ => Default::default(),
                    },
                },
            };
            if let Ok(hits) =
                block_on(m.search(rng.pick(&["Ana", "Lisbon cat", "message"]), options))
            {
                for h in hits.iter().take(2) {
                    block_on(m.hit_text(h.item)).expect("a hit's item is there");
                }
            }
            let item = match rng.below(3) {
                0 => engram::types::recall::Item::Fact(rng.next()),
                1 => engram::types::recall::Item::Passage(rng.below(3) as u64),
                _ => engram::types::recall::Item::Message(rng.below(50) as u64),
            };
            let _ = block_on(m.hit_text(item));
            let view = block_on(m.view()).unwrap();
            assert!(
                view.tokens <= cfg.ceiling_tokens || view.over_ceiling.is_some(),
                "run {runs}, message {i}: {} tokens over {}",
                view.tokens,
                cfg.ceiling_tokens
            );
        }
        assert_eq!(block_on(m.messages()).unwrap().len(), added);
        let _ = block_on(m.search("Ana", SearchOptions::default()));
        let _ = block_on(m.maintain());
        for e in block_on(m.episodes()).unwrap() {
            let _ = block_on(m.explain_episode(e.episode.id));
        }
        for f in block_on(m.facts()).unwrap() {
            let _ = block_on(m.explain_fact(f.id));
            let _ = block_on(m.explain_recall(f.id));
        }
    }
    println!("{runs} fuzzed conversations of 40 messages");
}

/// A small memory with facts, recall and fades, and its export.
fn sample() -> (Fx, String) {
    let mut cfg = config(300);
    cfg.snapshot_every = 5;
    let mut fx = Fx::new(cfg);
    standard_segment(&fx.model);
    for (i, t) in ["garden", "taxes", "bikes", "dinner", "car", "music"]
        .iter()
        .enumerate()
    {
        fx.turn(t, 40, 40);
        if i == 2 {
            fx.note(note_args(
                Some(1),
                vec![fact("Ana", "lives in", "Lisbon", "Ana lives in Lisbon.")],
            ))
            .unwrap();
        }
    }
    let export = fx.export();
    (fx, export)
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut b = text.as_bytes().to_vec();
    match rng.below(4) {
        0 => {
            // Flip a byte.
            let i = rng.below(b.len());
            b[i] ^= 1 << rng.below(8);
        }
        1 => {
            // Replace a number with an extreme one.
            let s = String::from_utf8_lossy(&b).to_string();
            let digits: Vec<usize> = s
                .char_indices()
                .filter(|(_, c)| c.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            if let Some(&i) = digits.get(rng.below(digits.len())) {
                let n = rng.pick(&["18446744073709551615", "-9223372036854775808", "1e400", "0"]);
                return format!("{}{}{}", &s[..i], n, &s[i + 1..]);
            }
        }
        2 => {
            // Cut.
            b.truncate(rng.below(b.len()));
        }
        _ => {
            // Duplicate a slice.
            let i = rng.below(b.len());
            let j = (i + rng.below(200)).min(b.len());
            let piece = b[i..j].to_vec();
            b.splice(i..i, piece);
        }
    }
    String::from_utf8_lossy(&b).to_string()
}

/// A crafted import: one value of one event of the export replaced by an
/// extreme one (a huge or negative number, a long or empty text, another
/// type), so the import meets events that parse but do not fit together.
fn craft(rng: &mut Rng, export: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(export).unwrap();
    let mut leaves: Vec<String> = Vec::new();
    fn walk(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    walk(x, format!("{at}/{k}"), out)
                }
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, format!("{at}/{i}"), out)
                }
            }
            _ => out.push(at),
        }
    }
    walk(&v["log"], "/log".into(), &mut leaves);
    let Some(at) = leaves.get(rng.below(leaves.len())) else {
        return export.to_string();
    };
    let values = [
        json!(0),
        json!(1),
        json!(-1),
        json!(u64::MAX),
        json!(1e300),
        json!(""),
        json!("x".repeat(100_000)),
        json!("AAAAAA=="),
        json!("AADAfw=="),
        json!(null),
        json!([]),
        json!({}),
        json!(true),
        json!("assistant"),
        json!("tool"),
    ];
    if let Some(x) = v.pointer_mut(at) {
        *x = values[rng.below(values.len())].clone();
    }
    v.to_string()
}

#[test]
fn fuzzed_imports_never_panic() {
    let deadline = Instant::now() + budget();
    let (fx, export) = sample();
    let mut rng = Rng(0x5eed_0002);
    let (mut runs, mut accepted) = (0, 0);
    while Instant::now() < deadline {
        runs += 1;
        let text = match rng.below(2) {
            0 => mutate(&mut rng, &export),
            _ => craft(&mut rng, &export),
        };
        let mut fresh = Fx::with(
            "fuzz",
            MemoryStore::new(),
            fx.model.clone(),
            fx.clock.clone(),
            fx.config.clone(),
        );
        if block_on(fresh.memory.import(&text)).is_ok() {
            accepted += 1;
            let _ = block_on(fresh.memory.view());
            let _ = block_on(fresh.memory.stats());
            let _ = block_on(fresh.memory.episodes());
        }
    }
    println!("{runs} mutated imports, {accepted} accepted");
}

use engram::base::bytes::value_checksum as fnv;

/// Where the checksum of a stored entry or segment sits (its body follows).
fn checksum_at(v: &[u8]) -> Option<usize> {
    match v.get(..4)? {
        b"ELOG" => Some(5),
        b"ESEG" => {
            // Two LEB128 numbers (first, last) after magic and version.
            let mut i = 5;
            for _ in 0..2 {
                while *v.get(i)? & 0x80 != 0 {
                    i += 1;
                }
                i += 1;
            }
            Some(i)
        }
        _ => None,
    }
}

/// A damaged stored value: the text mutations on JSON (the head), byte
/// damage on binary values, and half the time the checksum made to match
/// again, so the decoder itself meets the damage.
fn mutate_stored(rng: &mut Rng, v: &[u8]) -> Vec<u8> {
    if let Ok(text) = std::str::from_utf8(v) {
        if text.starts_with('{') {
            return mutate(rng, text).into_bytes();
        }
    }
    let mut b = v.to_vec();
    match rng.below(4) {
        0 => {
            let i = rng.below(b.len());
            b[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = rng.below(b.len());
            b[i] = 0xff;
        }
        2 => b.truncate(rng.below(b.len())),
        _ => {
            let i = rng.below(b.len());
            let j = (i + rng.below(64)).min(b.len());
            let piece = b[i..j].to_vec();
            b.splice(i..i, piece);
        }
    }
    if rng.below(2) == 0 {
        if let Some(at) = checksum_at(&b).filter(|&at| at + 8 <= b.len()) {
            let sum = fnv(&b[at + 8..]).to_le_bytes();
            b[at..at + 8].copy_from_slice(&sum);
        }
    }
    b
}

#[test]
fn fuzzed_stored_values_never_panic() {
    let deadline = Instant::now() + budget();
    let (fx, _) = sample();
    let clean = fx.store.dump();
    let keys: Vec<String> = clean.keys().cloned().collect();
    let mut rng = Rng(0x5eed_0003);
    let (mut runs, mut opened) = (0, 0);
    while Instant::now() < deadline {
        runs += 1;
        let store = MemoryStore::new();
        for (k, v) in &clean {
            store.poke(k, Some(v));
        }
        for _ in 0..1 + rng.below(2) {
            let k = &keys[rng.below(keys.len())];
            store.poke(k, Some(&mutate_stored(&mut rng, &clean[k])));
        }
        let Ok(mut other) = block_on(Memory::open(
            "test",
            store,
            fx.model.clone(),
            fx.clock.clone(),
            fx.config.clone(),
        )) else {
            continue;
        };
        if let Ok(v) = block_on(other.view()) {
            opened += 1;
            let _ = v.to_openai();
            let _ = block_on(other.stats());
            let _ = block_on(other.search("Ana", SearchOptions::default()));
            for e in block_on(other.episodes()).unwrap_or_default() {
                let _ = block_on(other.explain_episode(e.episode.id));
            }
            let _ = block_on(other.add_message(NewMessage::user("more")));
        }
    }
    println!("{runs} damaged stores, {opened} opened");
}
