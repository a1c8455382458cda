//! Strict parsing of model answers, repairing only harmless wrapping: a
//! leading reasoning block, a code fence, prose around the one JSON object,
//! (for `note`) one fact where a list of facts is expected, and (for
//! `segment`) a boundary outside 0..=1, clamped into it. Every repair
//! is named ([`Repair`]) and counted in `stats().model.repairs`. Nothing is
//! guessed: two JSON objects, or a reasoning block that never closes, are
//! bad answers; an object cut off at the end is a bad answer recognised as
//! truncated ([`TRUNCATED`]), which batched tasks retry in smaller batches.

use serde::de::DeserializeOwned;

use crate::base::host::{Task, TRUNCATED};

/// A repair made to an answer before it parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    /// A leading `<think>...</think>` (or `<thinking>`, `<reasoning>`) block
    /// was skipped.
    Reasoning,
    /// The JSON was inside a code fence.
    Fence,
    /// Prose came before or after the JSON object.
    Prose,
    /// `note`: one fact object where the list of facts belongs.
    OneFactAsList,
    /// `segment`: a boundary outside 0..=1 read as the nearest end (a
    /// grammar-constrained server enforces the number's type, not its
    /// range: Gemma 3 270M under llama.cpp answered outside 0..=1).
    Clamped,
}

impl Repair {
    /// Its name in `stats().model.repairs`.
    pub fn name(self) -> &'static str {
        match self {
            Repair::Reasoning => "reasoning",
            Repair::Fence => "fence",
            Repair::Prose => "prose",
            Repair::OneFactAsList => "one_fact_as_list",
            Repair::Clamped => "clamped",
        }
    }
}

/// The tags a leading reasoning block may open with, and their closings.
const REASONING: [(&str, &str); 3] = [
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
];

/// `text` without its leading reasoning blocks (any braces inside them are
/// not the answer); an error when one never closes.
fn skip_reasoning<'a>(text: &'a str, repairs: &mut Vec<Repair>) -> Result<&'a str, String> {
    let mut t = text.trim_start();
    'blocks: loop {
        for (open, close) in REASONING {
            if let Some(rest) = t.strip_prefix(open) {
                let Some(end) = rest.find(close) else {
                    return Err(format!(
                        "{TRUNCATED}the answer ends inside its {open} block"
                    ));
                };
                t = rest[end + close.len()..].trim_start();
                if !repairs.contains(&Repair::Reasoning) {
                    repairs.push(Repair::Reasoning);
                }
                continue 'blocks;
            }
        }
        return Ok(t);
    }
}

/// The JSON object inside `text`: the text itself, or the inside of a code
/// fence, or the span from the first `{` to its matching `}` when prose
/// surrounds it. Nothing else is repaired.
pub fn extract_json(text: &str) -> Option<&str> {
    extract(text, &mut Vec::new()).ok()
}

/// [`extract_json`], with the repairs made and why it failed.
fn extract<'a>(text: &'a str, repairs: &mut Vec<Repair>) -> Result<&'a str, String> {
    let t = skip_reasoning(text, repairs)?.trim();
    let t = match strip_fence(t) {
        Some(body) => {
            repairs.push(Repair::Fence);
            body.trim()
        }
        None => t,
    };
    let start = t
        .find('{')
        .ok_or_else(|| "no JSON object in the answer".to_string())?;
    let Some(end) = matching_brace(&t[start..]).map(|e| e + start) else {
        return Err(format!(
            "{TRUNCATED}the JSON object is cut off at the end of the answer"
        ));
    };
    let rest = &t[end + 1..];
    if let Some(next) = rest.find('{') {
        if matching_brace(&rest[next..]).is_some() {
            return Err("ambiguous: more than one JSON object in the answer".into());
        }
    }
    if start > 0 || !rest.trim().is_empty() {
        repairs.push(Repair::Prose);
    }
    Ok(&t[start..=end])
}

fn strip_fence(t: &str) -> Option<&str> {
    let open = t.find("```")?;
    let after = &t[open + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let close = body.find("```")?;
    Some(&body[..close])
}

fn matching_brace(s: &str) -> Option<usize> {
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, c) in s.char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses `text` as the answer type `T`, strictly (unknown fields and wrong
/// types are errors), after [`extract_json`].
pub fn parse_answer<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    parse_repaired(Task::Segment, text).map(|(a, _)| a)
}

/// Parses `text` as `task`'s answer type `T` (see [`parse_answer`]), with
/// the repairs it took. For `note`, a `facts` holding one fact object is
/// read as a list of that one fact.
pub fn parse_repaired<T: DeserializeOwned>(
    task: Task,
    text: &str,
) -> Result<(T, Vec<Repair>), String> {
    let mut repairs = Vec::new();
    let json = extract(text, &mut repairs)?;
    let listed = match task {
        Task::Note => one_fact_as_list(json),
        Task::Segment => clamp_boundary(json),
        _ => None,
    };
    if listed.is_some() {
        repairs.push(match task {
            Task::Segment => Repair::Clamped,
            _ => Repair::OneFactAsList,
        });
    }
    let bytes =
        crate::base::codec::json_to_bytes(listed.as_deref().unwrap_or(json)).map_err(unfit)?;
    crate::base::codec::from_bytes(&bytes)
        .map(|a| (a, repairs))
        .map_err(unfit)
}

/// Why an answer was refused (once in the wasm, not once per answer type).
fn unfit(e: crate::base::codec::wire::CodecError) -> String {
    format!("answer does not fit the schema: {e}")
}

/// `json` with its `facts` made a list when it holds one object (not
/// generic: the answer types are read from text once, whatever the task).
fn one_fact_as_list(json: &str) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(json).ok()?;
    let facts = v.get_mut("facts").filter(|f| f.is_object())?;
    *facts = serde_json::Value::Array(vec![facts.take()]);
    Some(v.to_string())
}

/// `json` with its `boundary` clamped into 0..=1 when it is a number
/// outside it (a string or a missing field is left for the schema to
/// refuse).
fn clamp_boundary(json: &str) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(json).ok()?;
    let b = v.get("boundary")?.as_f64()?;
    if (0.0..=1.0).contains(&b) {
        return None;
    }
    v["boundary"] = serde_json::json!(b.clamp(0.0, 1.0));
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::host::is_truncated;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct A {
        boundary: f32,
    }

    #[test]
    fn parse_repairs_fences_and_prose() {
        let want = A { boundary: 0.5 };
        assert_eq!(parse_answer::<A>("{\"boundary\": 0.5}").unwrap(), want);
        assert_eq!(
            parse_answer::<A>("```json\n{\"boundary\": 0.5}\n```").unwrap(),
            want
        );
        assert_eq!(
            parse_answer::<A>("Sure! {\"boundary\": 0.5} Hope it helps.").unwrap(),
            want
        );
    }

    #[test]
    fn parse_rejects_wrong_shapes() {
        assert!(parse_answer::<A>("{\"boundary\": \"high\"}").is_err());
        assert!(parse_answer::<A>("{\"boundary\": 0.5, \"why\": 1}").is_err());
        assert!(parse_answer::<A>("no json here").is_err());
        assert!(parse_answer::<A>("{\"boundary\": 0.5").is_err());
    }

    #[test]
    fn a_leading_reasoning_block_is_skipped_even_with_braces() {
        let (a, r) = parse_repaired::<A>(
            Task::Segment,
            "<think>The user says {hello}; maybe {\"boundary\": 0.9}?</think>\n{\"boundary\": 0.5}",
        )
        .unwrap();
        assert_eq!(a, A { boundary: 0.5 });
        assert_eq!(r, vec![Repair::Reasoning]);
        let (_, r) = parse_repaired::<A>(
            Task::Segment,
            "<reasoning>x</reasoning> ```json\n{\"boundary\": 0.5}\n```",
        )
        .unwrap();
        assert_eq!(r, vec![Repair::Reasoning, Repair::Fence]);
        let e = parse_repaired::<A>(Task::Segment, "<think>still thinking {").unwrap_err();
        assert!(e.starts_with(TRUNCATED), "{e}");
    }

    #[test]
    fn an_answer_cut_off_is_recognised_as_truncated() {
        let e = parse_answer::<A>("{\"boundary\": 0.").unwrap_err();
        assert!(e.starts_with(TRUNCATED), "{e}");
        let e = parse_answer::<A>("```json\n{\"boundary\"").unwrap_err();
        assert!(e.starts_with(TRUNCATED), "{e}");
        assert!(is_truncated(&crate::base::host::ModelError::BadAnswer(
            format!("trace: {e}")
        )));
    }

    #[test]
    fn two_objects_are_ambiguous_and_bad() {
        let e = parse_answer::<A>("{\"boundary\": 0.1} or {\"boundary\": 0.9}").unwrap_err();
        assert!(e.contains("ambiguous"), "{e}");
    }

    #[test]
    fn one_fact_object_is_read_as_a_list_for_note_only() {
        let one = r#"{"facts": {"subject": "Ana", "predicate": "lives in", "object": "Porto", "sentence": "Ana lives in Porto.", "kind": "fact"}}"#;
        let (a, r) = parse_repaired::<crate::llm::tasks::NoteAnswer>(Task::Note, one).unwrap();
        assert_eq!(a.facts.len(), 1);
        assert_eq!(r, vec![Repair::OneFactAsList]);
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct L {
            facts: Vec<u32>,
        }
        assert!(parse_repaired::<L>(Task::Trace, r#"{"facts": {"a": 1}}"#).is_err());
    }

    #[test]
    fn a_segment_boundary_outside_0_to_1_is_clamped_and_named() {
        let (a, r) = parse_repaired::<A>(Task::Segment, r#"{"boundary": 1.2}"#).unwrap();
        assert_eq!((a, r), (A { boundary: 1.0 }, vec![Repair::Clamped]));
        let (a, r) =
            parse_repaired::<A>(Task::Segment, "```json\n{\"boundary\": -0.1}\n```").unwrap();
        assert_eq!(
            (a, r),
            (A { boundary: 0.0 }, vec![Repair::Fence, Repair::Clamped])
        );
        let (a, r) = parse_repaired::<A>(Task::Segment, r#"{"boundary": 0.7}"#).unwrap();
        assert_eq!((a, r), (A { boundary: 0.7 }, vec![]));
        // Not a number: still refused, not guessed.
        assert!(parse_repaired::<A>(Task::Segment, r#"{"boundary": "p"}"#).is_err());
        // Only segment's boundary is clamped.
        let (a, r) = parse_repaired::<A>(Task::Trace, r#"{"boundary": 3}"#).unwrap();
        assert_eq!((a, r), (A { boundary: 3.0 }, vec![]));
    }

    #[test]
    fn braces_inside_strings_do_not_confuse_extraction() {
        assert_eq!(extract_json("x {\"a\": \"}{\"} y"), Some("{\"a\": \"}{\"}"));
    }
}
