//! The answer of each task: its Rust type, its JSON schema, its checks.
//!
//! Numbers in answers refer to the numbered items of the request (1-based).

use serde::Deserialize;
use serde_json::Value;

use crate::base::host::Task;
use crate::types::fact::NewFact;

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
            crate::base::text::parse_date(s)
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

/// The schemas as data (`schemas.json`, readable and diffable): each
/// task's answer as its properties (every one required, see [`schema`]),
/// the fact a note holds (placed where `"$note_fact"` stands) and the
/// `note` tool. Built by `json!` they were 11 KB of wasm code.
const SCHEMAS: &str = include_str!("schemas.json");

/// One part of [`SCHEMAS`], with the note's fact in place.
fn part(name: &str) -> Value {
    let mut all: Value = serde_json::from_str(SCHEMAS).unwrap_or_default();
    let fact = all
        .get_mut("note_fact")
        .map(Value::take)
        .unwrap_or_default();
    let mut part = match name.split_once('/') {
        Some((group, key)) => all.get_mut(group).and_then(|g| g.get_mut(key)),
        None => all.get_mut(name),
    }
    .map(Value::take)
    .unwrap_or_default();
    place(&mut part, &fact);
    part
}

/// Puts `fact` where `"$note_fact"` stands.
fn place(v: &mut Value, fact: &Value) {
    match v {
        Value::String(s) if s == "$note_fact" => *v = fact.clone(),
        Value::Array(a) => a.iter_mut().for_each(|x| place(x, fact)),
        Value::Object(o) => o.values_mut().for_each(|x| place(x, fact)),
        _ => {}
    }
}

/// The JSON schema of a task's answer: an object of the task's properties,
/// all of them required, no others.
pub fn schema(task: Task) -> Value {
    let properties = part(&format!("answers/{}", task.name()));
    let required: Vec<Value> = properties
        .as_object()
        .map(|o| o.keys().map(|k| Value::String(k.clone())).collect())
        .unwrap_or_default();
    let mut out = serde_json::Map::new();
    out.insert("type".into(), "object".into());
    out.insert("additionalProperties".into(), false.into());
    out.insert("required".into(), required.into());
    out.insert("properties".into(), properties);
    Value::Object(out)
}

/// The `note` tool definition to hand to a chat model (OpenAI tools format).
pub fn note_tool() -> Value {
    part("note_tool")
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
    if crate::base::text::normalise_name(&f.subject).is_empty()
        || crate::base::text::normalise_name(&f.object).is_empty()
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

#[cfg(test)]
mod schema_tests {
    use super::*;
    use crate::types::fact::FactKind;

    #[test]
    fn every_task_has_a_schema_of_required_properties() {
        for task in Task::ALL {
            let s = schema(task);
            let props = s["properties"].as_object().expect("properties");
            assert!(!props.is_empty(), "{task:?} has no properties");
            let required: Vec<&str> = s["required"]
                .as_array()
                .expect("required")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(
                required,
                props.keys().map(String::as_str).collect::<Vec<_>>()
            );
            assert!(!s.to_string().contains("$note_fact"), "{task:?}");
        }
    }

    #[test]
    fn the_note_schemas_list_every_fact_kind() {
        let kinds = |v: &Value| -> Vec<String> {
            v["properties"]["kind"]["enum"]
                .as_array()
                .expect("enum")
                .iter()
                .map(|k| k.as_str().expect("name").to_string())
                .collect()
        };
        let all: Vec<String> = kinds(&schema(Task::Note)["properties"]["facts"]["items"]);
        for k in &all {
            assert_eq!(FactKind::parse(k).map(FactKind::as_str), Some(k.as_str()));
        }
        assert_eq!(all.len(), 7, "a new FactKind goes into schemas.json");
        let tool = note_tool();
        assert_eq!(tool["function"]["name"], "note");
        assert_eq!(
            kinds(&tool["function"]["parameters"]["properties"]["facts"]["items"]),
            all
        );
    }
}
