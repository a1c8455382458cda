//! The scripted conversation and model shared by the fault and conflict
//! tests (`store_faults.rs`, `model_faults.rs`, `conflict.rs`): six topics,
//! runs of turns, tool calls, nights long enough to sleep, and a model whose
//! answers follow the topics.
#![allow(dead_code)]

use engram::base::text::words;
use engram::testing::{new_message, ManualClock, MemoryStore, ScriptedModel};
use engram::Config;
use engram::FactKind;
use engram::Memory;
use engram::NewFact;
use engram::NewMessage;
use engram::Task;
use engram::TaskRequest;
use engram::ToolCall;
use serde_json::json;

pub type Mem = Memory<MemoryStore, ScriptedModel, ManualClock>;

pub const START: i64 = 1_764_000_000_000;

// ---------------------------------------------------------------------------

/// Topic keyword and the entity the notes name for it.
pub const TOPICS: [(&str, &str); 6] = [
    ("lisbon", "Lisbon trip"),
    ("migration", "Postgres migration"),
    ("garden", "vegetable garden"),
    ("taxes", "Tax return"),
    ("birthday", "Maya's birthday party"),
    ("piano", "Piano lessons"),
];

/// The topic a text is about: the first topic keyword among its words.
pub fn topic_of(text: &str) -> Option<usize> {
    let w = words(text);
    TOPICS.iter().position(|(k, _)| w.iter().any(|x| x == k))
}

pub struct Step {
    pub advance_ms: i64,
    pub message: NewMessage,
}

/// A deterministic conversation of `len` messages: runs of 1 to 4 turns on
/// one topic, some turns calling a tool, mostly a minute apart, sometimes
/// 45 minutes, now and then a night of more than 24 hours (sleep).
pub fn conversation(len: usize, seed: u64) -> Vec<Step> {
    let mut rng = seed;
    let mut next = move |n: u64| {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (rng >> 33) % n
    };
    let mut out: Vec<Step> = Vec::new();
    let mut topic = 0usize;
    let mut n = 0u64;
    let mut runs = 0u64;
    let fillers = [
        "and please keep it short",
        "since the last plan changed a little, check the details again",
        "with the budget we agreed on earlier in mind",
        "because the deadline moved to next Friday and everybody is busy",
    ];
    while out.len() < len {
        topic = (topic + 1 + next(TOPICS.len() as u64 - 1) as usize) % TOPICS.len();
        let (k, _) = TOPICS[topic];
        runs += 1;
        let gap = match (runs % 37, next(8)) {
            (0, _) => 25 * 3_600_000,
            (_, 0) => 45 * 60_000,
            _ => 60_000,
        };
        for turn in 0..1 + next(4) {
            n += 1;
            let filler = fillers[next(fillers.len() as u64) as usize];
            let advance_ms = if turn == 0 { gap } else { 60_000 };
            out.push(Step {
                advance_ms,
                message: NewMessage::user(format!(
                    "Message {n} on the {k} topic: what next, {filler}?"
                )),
            });
            if next(4) == 0 {
                let id = format!("call-{n}");
                let args = json!({ "query": k }).to_string();
                let call = ToolCall {
                    id: id.clone(),
                    name: "search".into(),
                    arguments: args,
                };
                out.push(Step {
                    advance_ms: 20_000,
                    message: NewMessage::tool_calls("", vec![call]),
                });
                out.push(Step {
                    advance_ms: 5_000,
                    message: NewMessage::tool_result(
                        id,
                        format!("Search results for {k}: three notes found."),
                    ),
                });
            }
            out.push(Step {
                advance_ms: 30_000,
                message: NewMessage::assistant(format!(
                    "Reply {n} on the {k} topic: here is the next step, {filler}."
                )),
            });
        }
    }
    out.truncate(len);
    out
}

/// Section `heading` of a request: the lines after it up to a blank line.
pub fn section<'a>(content: &'a str, heading: &str) -> Vec<&'a str> {
    content
        .split_once(heading)
        .map(|(_, rest)| {
            rest.lines()
                .skip(1)
                .take_while(|l| !l.trim().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Numbered items (`3. text`) of a list, with the lines under each.
pub fn numbered(lines: &[&str]) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    for l in lines {
        let digits: String = l.chars().take_while(|c| c.is_ascii_digit()).collect();
        if !digits.is_empty() && l[digits.len()..].starts_with(". ") {
            items.push(l.to_string());
        } else if let Some(last) = items.last_mut() {
            last.push('\n');
            last.push_str(l);
        }
    }
    items
}

/// The facts a note writes for episode `id` about topic `t`: one restated
/// every time (it merges), one milestone that retires the previous one.
pub fn topic_facts(t: usize, id: u64) -> Vec<NewFact> {
    let name = TOPICS[t].1;
    vec![
        NewFact {
            subject: "Alice".into(),
            predicate: "works on".into(),
            object: name.into(),
            sentence: format!("Alice works on the {name}."),
            kind: FactKind::Fact,
            sources: Vec::new(),
        },
        NewFact {
            subject: name.into(),
            predicate: "is at stage".into(),
            object: format!("stage {id}"),
            sentence: format!("The {name} is at stage {id}."),
            kind: FactKind::Next,
            sources: Vec::new(),
        },
    ]
}

pub fn note_answer(req: &TaskRequest, stubborn: &[usize]) -> Option<String> {
    let id: u64 = req
        .content
        .strip_prefix("Episode ")?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    let mut counts = [0usize; TOPICS.len()];
    for l in req.content.lines().skip(1) {
        if let Some(t) = topic_of(l) {
            counts[t] += 1;
        }
    }
    let (t, &c) = counts
        .iter()
        .enumerate()
        .max_by_key(|(i, c)| (**c, usize::MAX - i))?;
    if c == 0 {
        return None;
    }
    if stubborn.contains(&t) {
        return Some("Sorry, I would rather not summarise that.".into());
    }
    Some(json!({ "facts": topic_facts(t, id) }).to_string())
}

/// The scripted model: a cut where the topic changes, facts per topic,
/// traces where an episode mentions a fact's topic, a newer stage
/// contradicting an older one. Notes of the `stubborn` topics always fail
/// (their episodes leave the view without facts: deferred, retried, then
/// given up, unless the host notes them).
pub fn scripted_model(stubborn: &'static [usize]) -> ScriptedModel {
    let model = ScriptedModel::new();
    model.on(Task::Segment, |req| {
        let current = section(&req.content, "Current episode");
        let before = current.last().and_then(|l| topic_of(l));
        let now = topic_of(new_message(req));
        let p = if now.is_some() && before.is_some() && now != before {
            0.9
        } else {
            0.1
        };
        Some(json!({ "boundary": p }).to_string())
    });
    model.on(Task::Note, move |req| note_answer(req, stubborn));
    model.on(Task::Trace, |req| {
        let facts = numbered(&section(&req.content, "Facts:"));
        let episodes = numbered(&section(&req.content, "Episodes:"));
        let answer: Vec<_> = facts
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let t = TOPICS.iter().position(|(_, name)| f.contains(name));
                let about: Vec<usize> = episodes
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| t.is_some() && e.lines().skip(1).any(|l| topic_of(l) == t))
                    .map(|(j, _)| j + 1)
                    .collect();
                json!({ "fact": i + 1, "episodes": about })
            })
            .collect();
        Some(json!({ "facts": answer }).to_string())
    });
    // Recall keeps at most two live facts on the topic of the latest message,
    // so recall blocks stay small beside the small ceiling.
    model.on(Task::Relevance, |req| {
        let recent = section(&req.content, "Recent conversation:");
        let t = recent.last().and_then(|l| topic_of(l));
        let keep: Vec<usize> = numbered(&section(&req.content, "Candidates:"))
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                t.is_some_and(|t| c.contains(TOPICS[t].1))
                    && c.contains("fact (")
                    && !c.contains("no longer true")
            })
            .map(|(i, _)| i + 1)
            .take(2)
            .collect();
        Some(json!({ "relevant": keep }).to_string())
    });
    model.on(Task::Reconcile, |req| {
        let new = req.content.lines().next()?.strip_prefix("New fact: ")?;
        let (subject, _) = new.split_once(" is at stage ")?;
        let held = numbered(&section(&req.content, "Held facts:"));
        let judgments: Vec<_> = held
            .iter()
            .enumerate()
            .filter(|(_, h)| {
                h.split_once(". ")
                    .is_some_and(|(_, s)| s.starts_with(&format!("{subject} is at stage ")))
            })
            .map(|(i, _)| json!({ "fact": i + 1, "relation": "contradicts" }))
            .collect();
        Some(json!({ "judgments": judgments }).to_string())
    });
    model
}

/// Opens namespace `ns` of `store` on the scripted model and [`config`].
pub fn open_in(ns: &str, store: &MemoryStore, clock: &ManualClock) -> engram::Result<Mem> {
    engram::testing::block_on(Memory::open(
        ns,
        store.clone(),
        scripted_model(&[]),
        clock.clone(),
        config(),
    ))
}

/// [`open_in`] for salvage (read-only).
pub fn open_salvage_in(ns: &str, store: &MemoryStore, clock: &ManualClock) -> engram::Result<Mem> {
    engram::testing::block_on(Memory::open_salvage(
        ns,
        store.clone(),
        scripted_model(&[]),
        clock.clone(),
        config(),
    ))
}

/// Small sizes so that episodes form every few messages and fades are
/// frequent; a snapshot every 16 commits so faults also hit snapshot writes.
pub fn config() -> Config {
    Config {
        ceiling_tokens: 480,
        target_episode_tokens: 90,
        max_episode_tokens: 220,
        min_episode_tokens: 8,
        trace_batch: 8,
        snapshot_every: 16,
        ..Config::default()
    }
}
