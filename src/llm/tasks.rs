//! The answer of each task: its Rust type, its JSON schema, its checks.
//!
//! Numbers in answers refer to the numbered items of the request (1-based).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::fact::{FactKind, NewFact};
use crate::host::Task;

/// `segment`: probability that the new message starts a new concept.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentAnswer {
    /// In 0..=1.
    pub boundary: f32,
}

/// `note`: the facts of an episode.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteAnswer {
    /// Facts, possibly none.
    pub facts: Vec<NewFact>,
}

/// `trace`: for each numbered fact, the numbered episodes it is about.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceAnswer {
    /// One entry per fact (a fact left out is about no episode).
    pub facts: Vec<TraceItem>,
}

/// One fact's episodes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceItem {
    /// Fact number.
    pub fact: usize,
    /// Episode numbers it is about.
    pub episodes: Vec<usize>,
}

/// `resolve`: which candidate entity the name is, if any.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveAnswer {
    /// Candidate number, or null for a new entity.
    pub same_as: Option<usize>,
}

/// `reconcile`: how the new fact relates to held facts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileAnswer {
    /// Held facts it restates or contradicts (others are unrelated).
    pub judgments: Vec<Judgment>,
}

/// One judgment of `reconcile`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judgment {
    /// Held fact number.
    pub fact: usize,
    /// The relation.
    pub relation: Relation,
}

/// How a new fact relates to a held one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// Says the same thing.
    Restates,
    /// Cannot both be true; the new one is newer.
    Contradicts,
    /// Neither.
    Unrelated,
}

/// `split`: the parts of a user message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitAnswer {
    /// One search phrase per subject raised (at least one).
    pub parts: Vec<String>,
    /// The time the message names ("last week", "in May"), as dates
    /// resolved against when it was sent; null or absent when it names
    /// none.
    #[serde(default)]
    pub when: Option<SplitWhen>,
}

/// The dates a message's time words name, both included (`YYYY-MM-DD`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitWhen {
    /// First day.
    pub from: String,
    /// Last day.
    pub to: String,
}

impl SplitWhen {
    /// The window `[from, to + 1 day)` in ms, or why the dates are refused.
    pub fn window(&self) -> Result<(i64, i64), String> {
        let day = |s: &str| {
            crate::text::parse_date(s)
                .ok_or_else(|| format!("when: {s:?} is not a YYYY-MM-DD date"))
        };
        let (from, to) = (day(&self.from)?, day(&self.to)?);
        if from > to {
            return Err(format!("when: {} is after {}", self.from, self.to));
        }
        Ok((from * 86_400_000, (to + 1) * 86_400_000))
    }
}

/// `relevance`: which numbered candidates are relevant.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelevanceAnswer {
    /// Numbers of the relevant candidates.
    pub relevant: Vec<usize>,
}

/// `distill`: which numbered recalled facts mattered to the turn.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistillAnswer {
    /// Numbers of the facts that mattered (empty removes the block).
    pub kept: Vec<usize>,
}

fn numbers(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "integer", "minimum": 1}, "description": description})
}

/// The JSON schema of a task's answer.
pub fn schema(task: Task) -> Value {
    let kinds: Vec<&str> = [
        FactKind::Fact,
        FactKind::Agreed,
        FactKind::Decided,
        FactKind::Done,
        FactKind::Blocked,
        FactKind::Next,
        FactKind::Preference,
    ]
    .iter()
    .map(|k| k.as_str())
    .collect();
    let body = match task {
        Task::Segment => json!({
            "boundary": {"type": "number", "minimum": 0, "maximum": 1,
                "description": "probability that the new message starts a new concept"}
        }),
        Task::Note => json!({
            "facts": {"type": "array", "items": note_fact_schema(&kinds)}
        }),
        Task::Trace => json!({
            "facts": {"type": "array", "items": {
                "type": "object", "additionalProperties": false,
                "required": ["fact", "episodes"],
                "properties": {
                    "fact": {"type": "integer", "minimum": 1},
                    "episodes": numbers("numbers of the episodes this fact is about")
                }
            }}
        }),
        Task::Resolve => json!({
            "same_as": {"type": ["integer", "null"], "minimum": 1,
                "description": "number of the candidate it is, or null if none"}
        }),
        Task::Reconcile => json!({
            "judgments": {"type": "array", "items": {
                "type": "object", "additionalProperties": false,
                "required": ["fact", "relation"],
                "properties": {
                    "fact": {"type": "integer", "minimum": 1},
                    "relation": {"enum": ["restates", "contradicts", "unrelated"]}
                }
            }}
        }),
        Task::Split => json!({
            "parts": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
            "when": {"type": ["object", "null"], "additionalProperties": false,
                "required": ["from", "to"],
                "properties": {
                    "from": {"type": "string", "description": "first day, YYYY-MM-DD"},
                    "to": {"type": "string", "description": "last day, YYYY-MM-DD"}
                },
                "description": "the dates the message's time words name, resolved against when it was sent; null when it names none"}
        }),
        Task::Relevance => json!({"relevant": numbers("numbers of the relevant candidates")}),
        Task::Distill => json!({"kept": numbers("numbers of the facts that mattered to the turn")}),
    };
    let required: Vec<&String> = body.as_object().expect("object").keys().collect();
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": body,
    })
}

fn note_fact_schema(kinds: &[&str]) -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["subject", "predicate", "object", "sentence", "kind"],
        "properties": {
            "subject": {"type": "string", "minLength": 1, "description": "who or what the fact is about"},
            "predicate": {"type": "string", "minLength": 1, "description": "the relation, in a few words"},
            "object": {"type": "string", "minLength": 1, "description": "the other entity or value"},
            "sentence": {"type": "string", "minLength": 1, "description": "the fact as one sentence that reads on its own"},
            "kind": {"enum": kinds, "description": "fact; a milestone: agreed, decided, done, blocked, next; or preference: what the user likes, avoids or wants"},
            "sources": {"type": "array", "items": {"type": "integer", "minimum": 1},
                "description": "the messages it came from, numbered in the order shown (1 = the first)"}
        }
    })
}

/// The `note` tool definition to hand to a chat model (OpenAI tools format).
pub fn note_tool() -> Value {
    let kinds = [
        "fact",
        "agreed",
        "decided",
        "done",
        "blocked",
        "next",
        "preference",
    ];
    json!({
        "type": "function",
        "function": {
            "name": "note",
            "description": "Record facts worth remembering from the conversation, each one sentence that reads on its own, as a subject-predicate-object triple. Use it when engram warns that an episode is leaving the view.",
            "parameters": {
                "type": "object", "additionalProperties": false,
                "required": ["facts"],
                "properties": {
                    "episode": {"type": "integer", "minimum": 1,
                        "description": "the leaving episode the facts come from (default: the oldest leaving one)"},
                    "facts": {"type": "array", "minItems": 1, "items": note_fact_schema(&kinds)}
                }
            }
        }
    })
}

/// Checks a fact's text fields.
pub fn check_fact(f: &NewFact) -> Result<(), String> {
    for (name, v) in [
        ("subject", &f.subject),
        ("predicate", &f.predicate),
        ("object", &f.object),
        ("sentence", &f.sentence),
    ] {
        if v.trim().is_empty() {
            return Err(format!("a fact has an empty {name}"));
        }
        if v.len() > 2_000 {
            return Err(format!("a fact's {name} is over 2000 bytes"));
        }
    }
    if crate::text::normalise_name(&f.subject).is_empty()
        || crate::text::normalise_name(&f.object).is_empty()
    {
        return Err("a fact's subject or object has no letters or digits".into());
    }
    Ok(())
}

/// Checks 1-based numbers against `n` items.
pub fn check_numbers(nums: &[usize], n: usize, what: &str) -> Result<(), String> {
    match nums.iter().find(|&&i| i == 0 || i > n) {
        Some(i) => Err(format!("{what} number {i} is not among 1..={n}")),
        None => Ok(()),
    }
}
