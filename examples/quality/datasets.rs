//! The long-chat datasets' loaders (issue 44), engine-free so that
//! `tests/quality_loaders.rs` checks them on tiny fixtures: BEAM's chats
//! and probing questions, and LoCoMo-Plus's cue/trigger pairs stitched into
//! a LoCoMo conversation as the authors' `build_conv.py` does. Each bench
//! uses part of it.

#![allow(dead_code)]

use std::collections::BTreeSet;

use serde_json::Value;

use engram::base::text::{days_from_civil, estimate_tokens, MONTH_NAMES};

const DAY: i64 = 86_400_000;

/// One message as replayed: its text, its side, its time (ms since 1970).
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub text: String,
    pub user: bool,
    pub at: i64,
}

/// A question with the turns (indexes into the chat) that hold its
/// evidence; empty when the dataset names none (abstention, or evidence
/// in prose only).
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub ability: String,
    pub question: String,
    pub evidence: BTreeSet<usize>,
}

/// A BEAM chat: its messages in order and its probing questions, asked at
/// the last message's date plus a day.
#[derive(Debug)]
pub struct BeamChat {
    pub turns: Vec<Turn>,
    pub questions: Vec<Question>,
    pub asked_at: i64,
    /// Messages cut to the memory's message limit (a host must: `add_message`
    /// refuses a longer one).
    pub cut: usize,
}

/// BEAM's time anchor, `March-15-2024`, in ms since 1970 (midnight).
pub fn beam_date(s: &str) -> Option<i64> {
    let mut it = s.trim().split('-');
    let month = it.next()?;
    let m = MONTH_NAMES
        .iter()
        .position(|x| x.eq_ignore_ascii_case(month))? as i64
        + 1;
    let d: i64 = it.next()?.parse().ok()?;
    let y: i64 = it.next()?.parse().ok()?;
    Some(days_from_civil(y, m, d) * DAY)
}

/// A message's text without the generator's position marker (` ->-> 1,2`)
/// that ends BEAM's user messages: it is not part of what was said.
fn beam_text(s: &str) -> String {
    match s.rfind("->->") {
        Some(i)
            if s[i + 4..]
                .trim()
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',') =>
        {
            s[..i].trim().to_string()
        }
        _ => s.trim().to_string(),
    }
}

/// The longest prefix of `text` (at a character) within `limit` tokens.
pub fn cut_to(text: &str, limit: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let (mut lo, mut hi) = (0, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let prefix: String = chars[..mid].iter().collect();
        if estimate_tokens(&prefix) <= limit {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    chars[..lo].iter().collect()
}

/// Every integer in `v` (a list, or a map of lists), as BEAM's
/// `source_chat_ids` hold them.
fn ids_in(v: &Value, out: &mut BTreeSet<u64>) {
    match v {
        Value::Number(n) => out.extend(n.as_u64()),
        Value::Array(a) => a.iter().for_each(|x| ids_in(x, out)),
        Value::Object(o) => o.values().for_each(|x| ids_in(x, out)),
        _ => {}
    }
}

/// A BEAM chat from its `chat.json` and `probing_questions.json`. Batches
/// are dated by their first `time_anchor` (or two weeks after the batch
/// before when one has none); a batch's messages are spread evenly over the
/// days to the next batch's anchor (two weeks for the last). A question's
/// evidence is its `source_chat_ids`, else the `chat_id: N` strings of its
/// `conversation_references`; ids the chat does not hold are dropped.
pub fn beam_chat(chat: &Value, probing: &Value) -> BeamChat {
    let batches = chat.as_array().expect("chat.json: a list of batches");
    let mut anchors: Vec<Option<i64>> = batches
        .iter()
        .map(|b| {
            b["turns"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|ex| ex.as_array().into_iter().flatten())
                .find_map(|m| m["time_anchor"].as_str().and_then(beam_date))
                .or_else(|| b["time_anchor"].as_str().and_then(beam_date))
        })
        .collect();
    for i in 0..anchors.len() {
        if anchors[i].is_none() {
            anchors[i] = Some(match i {
                0 => beam_date("January-01-2024").unwrap(),
                _ => anchors[i - 1].unwrap() + 14 * DAY,
            });
        }
    }
    // Less the framing the memory counts with a message's text.
    let limit = engram::Config::default().max_message_tokens - 100;
    let mut cut = 0;
    let mut turns = Vec::new();
    let mut index_of = std::collections::BTreeMap::new();
    for (b, batch) in batches.iter().enumerate() {
        let start = anchors[b].unwrap();
        let end = anchors
            .get(b + 1)
            .map(|a| a.unwrap())
            .filter(|&e| e > start)
            .unwrap_or(start + 14 * DAY);
        let messages: Vec<&Value> = batch["turns"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|ex| ex.as_array().into_iter().flatten())
            .collect();
        let n = messages.len().max(1) as i64;
        for (i, m) in messages.iter().enumerate() {
            let mut text = beam_text(m["content"].as_str().unwrap_or_default());
            if estimate_tokens(&text) > limit {
                text = cut_to(&text, limit);
                cut += 1;
            }
            if text.is_empty() {
                continue;
            }
            let at = start + (end - start) * i as i64 / n;
            let at = turns.last().map_or(at, |t: &Turn| at.max(t.at + 1_000));
            if let Some(id) = m["id"].as_u64() {
                index_of.insert(id, turns.len());
            }
            turns.push(Turn {
                text,
                user: m["role"].as_str() == Some("user"),
                at,
            });
        }
    }
    let mut questions = Vec::new();
    for (ability, list) in probing.as_object().expect("probing questions: a map") {
        for q in list.as_array().into_iter().flatten() {
            let mut ids = BTreeSet::new();
            ids_in(&q["source_chat_ids"], &mut ids);
            if ids.is_empty() {
                for r in q["conversation_references"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let s = r.as_str().unwrap_or_default();
                    if let Some(rest) = s.trim().strip_prefix("chat_id") {
                        let rest = rest.trim_start_matches([':', ' ']);
                        ids.extend(rest.parse::<u64>().ok());
                    }
                }
            }
            questions.push(Question {
                ability: ability.clone(),
                question: q["question"].as_str().unwrap_or_default().to_string(),
                evidence: ids
                    .iter()
                    .filter_map(|i| index_of.get(i).copied())
                    .collect(),
            });
        }
    }
    let asked_at = turns.last().map_or(0, |t| t.at) + DAY;
    BeamChat {
        turns,
        questions,
        asked_at,
        cut,
    }
}

/// LoCoMo-Plus's `time_gap` ("two weeks later", "about one month later",
/// "one year later", "a few weeks later") in days; months count 30 days.
pub fn gap_days(s: &str) -> Option<i64> {
    let words: Vec<String> = s
        .split_whitespace()
        .map(|w| w.to_ascii_lowercase())
        .filter(|w| !matches!(w.as_str(), "about" | "around" | "roughly" | "later" | "a"))
        .collect();
    let (n, unit) = match words.as_slice() {
        [unit] => (1, unit.as_str()),
        [n, unit] => {
            let n = match n.as_str() {
                "one" => 1,
                "two" => 2,
                "three" | "few" | "several" => 3,
                "four" => 4,
                "five" => 5,
                "six" => 6,
                "seven" => 7,
                "eight" => 8,
                "nine" => 9,
                "ten" => 10,
                "eleven" => 11,
                "twelve" => 12,
                x => x.parse().ok()?,
            };
            (n, unit.as_str())
        }
        _ => return None,
    };
    let per = match unit.trim_end_matches('s') {
        "day" => 1,
        "week" => 7,
        "month" => 30,
        "year" => 365,
        _ => return None,
    };
    Some(n * per)
}

/// One LoCoMo-Plus pair stitched into a LoCoMo conversation.
#[derive(Debug)]
pub struct Stitched {
    pub relation: String,
    /// The conversation with the cue's session in date order.
    pub turns: Vec<Turn>,
    /// The cue's user line (speaker A): the evidence.
    pub cue: usize,
    /// The trigger's text (speaker A's line, the next user message) and its
    /// time: 7 days after the conversation's last session.
    pub trigger: String,
    pub trigger_at: i64,
}

/// A dialogue line `A: text` with the speaker's name for `A` or `B`.
fn named(line: &str, a: &str, b: &str) -> Option<(bool, String)> {
    let (who, text) = line.split_once(':')?;
    let user = match who.trim() {
        "A" => true,
        "B" => false,
        _ => return None,
    };
    let name = if user { a } else { b };
    Some((user, format!("{name}: {}", text.trim())))
}

/// The turns of a LoCoMo conversation (`conversation` object) as the
/// LoCoMo bench replays them: `Speaker: text` (with a photo's caption),
/// speaker A the user, 30 seconds apart from each session's start.
pub fn locomo_turns(c: &Value, parse_time: impl Fn(&str) -> Option<i64>) -> Vec<Turn> {
    let a = c["speaker_a"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    let mut clock = 0i64;
    for s in 1.. {
        let Some(session) = c.get(format!("session_{s}")).and_then(|v| v.as_array()) else {
            break;
        };
        let start = parse_time(
            c[format!("session_{s}_date_time")]
                .as_str()
                .unwrap_or_default(),
        )
        .expect("a LoCoMo session time");
        clock = start.max(clock);
        for t in session {
            let speaker = t["speaker"].as_str().unwrap_or_default();
            let mut text = format!("{speaker}: {}", t["text"].as_str().unwrap_or_default());
            if let Some(cap) = t.get("blip_caption").and_then(|v| v.as_str()) {
                text.push_str(&format!(" [shares a photo: {cap}]"));
            }
            clock += 30_000;
            out.push(Turn {
                text,
                user: speaker == a,
                at: clock,
            });
        }
    }
    out
}

/// A pair stitched into a conversation's turns (from [`locomo_turns`]):
/// the trigger 7 days after the last turn's day (at noon), the cue's
/// session `time_gap` before the trigger, its lines 30 seconds apart, in
/// date order among the conversation's turns.
pub fn stitch(conv: &Value, base: &[Turn], pair: &Value) -> Option<Stitched> {
    let a = conv["speaker_a"].as_str()?;
    let b = conv["speaker_b"].as_str()?;
    let last = base.last()?.at;
    let trigger_at = last.div_euclid(DAY) * DAY + 7 * DAY + 12 * 3_600_000;
    let cue_at = trigger_at - gap_days(pair["time_gap"].as_str()?)? * DAY;
    let cue: Vec<(bool, String)> = pair["cue_dialogue"]
        .as_str()?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| named(l, a, b))
        .collect::<Option<_>>()?;
    let (trigger_user, trigger) = named(pair["trigger_query"].as_str()?, a, b)?;
    if !trigger_user || !cue.first()?.0 {
        return None;
    }
    // The cue's session goes before the first turn later than it (and so
    // after a session it falls inside of).
    let at = base.partition_point(|t| t.at <= cue_at);
    let mut turns: Vec<Turn> = base[..at].to_vec();
    let start = turns.last().map_or(cue_at, |t| cue_at.max(t.at + 30_000));
    let index = turns.len();
    for (i, (user, text)) in cue.into_iter().enumerate() {
        turns.push(Turn {
            text,
            user,
            at: start + i as i64 * 30_000,
        });
    }
    let shift = turns.last().unwrap().at + 30_000;
    for t in &base[at..] {
        let mut t = t.clone();
        t.at = t.at.max(shift);
        turns.push(t);
    }
    Some(Stitched {
        relation: pair["relation_type"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        turns,
        cue: index,
        trigger,
        trigger_at,
    })
}
