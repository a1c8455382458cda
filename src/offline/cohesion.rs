//! Boundary judgments from lexical cohesion (after Hearst's TextTiling):
//! the new message is compared with the messages before it as bags of
//! content terms; little shared vocabulary means a new concept. Cue phrases
//! that open a new subject, a long silence, and a message that answers the
//! question before it move the judgment.

use std::collections::BTreeMap;

use crate::offline::request::{Line, SegmentRequest};
use crate::offline::words::terms;
use crate::types::message::Role;

/// Phrases that open a new subject at the start of a message.
const SHIFT_CUES: &[&str] = &[
    "another question",
    "another thing",
    "anyway",
    "by the way",
    "change of subject",
    "different question",
    "different topic",
    "let's talk",
    "lets talk",
    "moving on",
    "new question",
    "new topic",
    "next",
    "now",
    "on another note",
    "one more thing",
    "other news",
    "problem",
    "quick question",
    "quick recap",
    "recap",
    "separate question",
    "something else",
    "switching",
    "today",
    "unrelated",
    "bad news",
    "good news",
    "big news",
    "update",
];

/// Openings that continue what came before.
const CONTINUE_CUES: &[&str] = &[
    "ok", "okay", "yes", "yeah", "yep", "no", "nope", "sure", "right", "exactly", "agreed",
    "thanks", "thank", "great", "perfect", "good", "and", "but", "so", "also", "that", "this",
    "it", "they", "those", "these", "then", "firm", "fine", "sounds", "true", "hmm", "well",
];

/// Term frequencies of `texts`, the later texts weighted more.
fn bag<'a>(texts: impl Iterator<Item = (&'a str, f32)>) -> BTreeMap<String, f32> {
    let mut bag = BTreeMap::new();
    for (text, weight) in texts {
        for t in terms(text) {
            *bag.entry(t).or_insert(0.0) += weight;
        }
    }
    bag
}

fn cosine(a: &BTreeMap<String, f32>, b: &BTreeMap<String, f32>) -> f32 {
    let dot: f32 = a.iter().filter_map(|(k, x)| b.get(k).map(|y| x * y)).sum();
    let na: f32 = a.values().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.values().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// The text a message speaks, without a `Name: ` speaker prefix.
fn spoken(line: &Line) -> &str {
    crate::offline::facts::speakers::speaker_and_text(&line.text).1
}

fn opening(text: &str) -> String {
    text.trim_start()
        .chars()
        .take(40)
        .collect::<String>()
        .to_lowercase()
        .replace('\u{2019}', "'")
}

/// The boundary probability of a `segment` request.
pub fn judge(req: &SegmentRequest) -> f32 {
    let new_text = spoken(&req.new);
    // A reply, a tool call or a tool's output answers what came before.
    if req.new.role != Role::User {
        let gap_push = if req.gap_minutes >= 6 * 60 { 0.3 } else { 0.0 };
        return 0.1 + gap_push;
    }
    let before = &req.before;
    if before.is_empty() {
        return 0.5;
    }
    let n = before.len();
    let window = bag(before
        .iter()
        .enumerate()
        .map(|(i, m)| (spoken(m), 0.5 + (i + 1) as f32 / n as f32)));
    let new = bag(std::iter::once((new_text, 1.0)));
    let cohesion = cosine(&new, &window);
    // Shared vocabulary of 0.3 or more is the same concept; none leans
    // towards a new one, but takes a cue or a silence to be sure.
    let mut p = 0.1 + 0.5 * (1.0 - (cohesion / 0.3).min(1.0));
    let open = opening(new_text);
    let first_word: String = open
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_string();
    // "Shipping next." opens a subject too: a short first sentence ending
    // in "next".
    let first_sentence = open.split(['.', '!', '?', ':']).next().unwrap_or("");
    let shift = SHIFT_CUES.iter().any(|c| {
        open.starts_with(c)
            && open[c.len()..]
                .chars()
                .next()
                .is_none_or(|ch| !ch.is_alphanumeric())
    }) || (first_sentence.ends_with(" next")
        && first_sentence.split_whitespace().count() <= 4);
    let lower = new_text.to_lowercase();
    let continues = CONTINUE_CUES.contains(&first_word.as_str())
        || lower.trim_end().ends_with(" too?")
        || lower.trim_end().ends_with(" too.")
        || lower.contains(" also ");
    if shift {
        p += 0.3;
    } else if continues {
        p -= 0.2;
    }
    // A message right after a question most likely answers it.
    let asked = before
        .last()
        .is_some_and(|m| m.role != Role::User && spoken(m).trim_end().ends_with('?'));
    if asked && !shift {
        p -= 0.2;
    }
    if req.gap_minutes >= 6 * 60 {
        p += 0.25;
    } else if req.gap_minutes >= 60 {
        p += 0.1;
    }
    p.clamp(0.02, 0.98)
}
