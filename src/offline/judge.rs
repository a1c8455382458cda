//! The judging tasks, by shared entities and term overlap: `trace`,
//! `resolve`, `reconcile`, `relevance`, `distill`, and `split` by sentence
//! and clause boundaries.

use crate::base::sort::CollectOrdered;
use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::offline::request::{messages, numbered, section};
use crate::offline::words::{coverage, term_set};
use crate::types::message::Role;

/// Capitalised words past a sentence's first word, and numbers: the names
/// and values a text mentions.
pub fn names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut first = true;
    for raw in text.split_whitespace() {
        let w: String = raw.chars().filter(|c| c.is_alphanumeric()).collect();
        if !w.is_empty() && !first && w.chars().next().is_some_and(|c| c.is_uppercase()) {
            out.insert(w.to_lowercase());
        }
        if w.chars().any(|c| c.is_ascii_digit()) {
            out.insert(w.to_lowercase());
        }
        first = raw.ends_with(['.', '!', '?', ':']);
    }
    out
}

/// `trace`: each fact is about the episodes whose text holds most of its
/// terms, or a name it mentions and some of its terms.
pub fn trace(content: &str) -> Value {
    let facts_part = section(content, "Facts:").unwrap_or("");
    let (facts_text, episodes_text) = match facts_part.split_once("\nEpisodes:\n") {
        Some((f, e)) => (f, e),
        None => (facts_part, ""),
    };
    let facts = numbered(facts_text);
    let episodes = numbered(episodes_text);
    let episode_terms: Vec<(BTreeSet<String>, BTreeSet<String>)> =
        episodes.iter().map(|e| (term_set(e), names(e))).collect();
    let mut out = Vec::new();
    for (i, f) in facts.iter().enumerate() {
        let (ft, fnames) = (term_set(f), names(f));
        let about: Vec<usize> = episode_terms
            .iter()
            .enumerate()
            .filter(|(_, (et, en))| {
                let share = coverage(&ft, et);
                let shared_names = fnames.intersection(en).count();
                share >= 0.6 || (shared_names >= 1 && share >= 0.34) || shared_names >= 2
            })
            .map(|(j, _)| j + 1)
            .collect();
        if !about.is_empty() {
            out.push(json!({"fact": i + 1, "episodes": about}));
        }
    }
    json!({ "facts": out })
}

fn field<'a>(content: &'a str, name: &str) -> &'a str {
    content
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .unwrap_or("")
        .trim()
}

/// A name's words in normal form (a plural or possessive "s" off), each
/// with whether it was capitalised.
fn name_words(name: &str) -> Vec<(String, bool)> {
    let mut words: Vec<&str> = name.split_whitespace().collect();
    if words.len() > 1 && ["the", "a", "an"].contains(&words[0].to_lowercase().as_str()) {
        words.remove(0);
    }
    words
        .iter()
        .map(|w| {
            let capital = w.chars().next().is_some_and(char::is_uppercase);
            let normal = crate::base::text::normalise_name(w);
            (normal.trim_end_matches('s').to_string(), capital)
        })
        .filter(|(w, _)| !w.is_empty())
        .collect()
}

/// `resolve`: the candidate whose name (or an alias) holds the new name's
/// words or is held by them ("Jonas" and "Jonas Berg"), or has the same
/// initials as an acronym; otherwise a new entity.
pub fn resolve(content: &str) -> Value {
    let name = field(content, "Name:");
    let new = name_words(name);
    let acronym: String = name
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    let known = numbered(section(content, "Known entities:").unwrap_or(""));
    let same = known.iter().position(|k| {
        let (main, also) = match k.split_once(" (also: ") {
            Some((m, a)) => (m.to_string(), a.trim_end_matches(')').to_string()),
            None => (k.clone(), String::new()),
        };
        std::iter::once(main.as_str())
            .chain(also.split(", ").filter(|a| !a.is_empty()))
            .any(|candidate| {
                let c = name_words(candidate);
                let initials: String = c.iter().filter_map(|w| w.0.chars().next()).collect();
                // `b`'s words all in `a`, and `a`'s other words capitalised
                // name parts ("Jonas" in "Jonas Berg", not "user" in "user's
                // newsletter already").
                let contains = |a: &[(String, bool)], b: &[(String, bool)]| {
                    !b.is_empty()
                        && b.iter().all(|w| a.iter().any(|x| x.0 == w.0))
                        && b.iter().any(|w| w.0.len() > 2)
                        && a.iter().all(|x| x.1 || b.iter().any(|w| w.0 == x.0))
                };
                // The shorter name's words all in the longer one, starting
                // alike ("Jonas" and "Jonas Berg", not "Loam" and "to
                // launch Loam").
                let same_start = c.first().map(|w| &w.0) == new.first().map(|w| &w.0);
                (same_start && (contains(&c, &new) || contains(&new, &c)))
                    || (c.len() > 1 && initials == acronym)
            })
    });
    json!({ "same_as": same.map(|i| i + 1) })
}

/// A triple shown as `[subject | predicate | object]` at the end of a line.
fn triple_of(line: &str) -> Option<(String, String, String)> {
    let open = line.rfind(" [")?;
    let inner = line[open + 2..].trim_end().strip_suffix(']')?;
    let mut parts = inner.split(" | ");
    let (s, p, o) = (parts.next()?, parts.next()?, parts.next()?);
    Some((
        crate::base::text::normalise_name(s),
        crate::offline::words::terms(p).join(" "),
        crate::base::text::normalise_name(o),
    ))
}

/// Relations (stemmed terms) that hold one value at a time.
const FUNCTIONAL: &[&str] = &[
    "cost",
    "sell",
    "price",
    "priced",
    "live",
    "work",
    "launch",
    "move",
    "moved",
    "name",
    "call",
    "marri",
    "age",
    "due",
    "deadline",
    "scheduled",
    "earn",
];

/// Numbers, amounts and dates in `text`.
fn values(text: &str) -> BTreeSet<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| {
                !c.is_alphanumeric() && c != '$' && c != '€' && c != '£' && c != '%'
            })
        })
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .into_set()
}

/// `reconcile`: a held fact with the same triple, or nearly the same words,
/// is restated; one about the same subject and relation with another value
/// (or the same subject with another amount) is contradicted.
pub fn reconcile(content: &str) -> Value {
    let new_line = field(content, "New fact:");
    let new_triple = content
        .lines()
        .find_map(|l| l.strip_prefix("Triple: "))
        .map(|t| format!("x [{t}]"))
        .and_then(|t| triple_of(&t));
    let new_terms = term_set(new_line);
    let new_values = values(new_line);
    let held = numbered(section(content, "Held facts:").unwrap_or(""));
    let mut judgments = Vec::new();
    let mut contradicted = false;
    for (i, h) in held.iter().enumerate() {
        let text = h.split(" (said ").next().unwrap_or(h);
        let ht = term_set(text);
        let overlap = crate::offline::words::jaccard(&new_terms, &ht);
        let hv = values(text);
        let relation = match (&new_triple, triple_of(h)) {
            (Some((s, p, o)), Some((hs, hp, ho))) if *s == hs => {
                let (pt, hpt) = (term_set(p), term_set(&hp));
                let same_relation = (!pt.is_empty()
                    && crate::offline::words::jaccard(&pt, &hpt) >= 0.5)
                    || (pt.is_empty() && hpt.is_empty() && *p == hp);
                // Another value of a relation that holds one value at a
                // time: an amount, a date, or a functional verb.
                let ov = values(o);
                let functional = ov.iter().chain(values(&ho).iter()).next().is_some()
                    || FUNCTIONAL.iter().any(|f| pt.contains(*f));
                // The same value under another wording ("Loam costs $45",
                // "Loam is $45") is a restatement.
                let restated = *o == ho && (same_relation || !ov.is_empty());
                let another_value = !contradicted
                    && ((same_relation && functional)
                        || (!new_values.is_empty()
                            && !hv.is_empty()
                            && new_values.is_disjoint(&hv)
                            && same_amount_unit(&new_values, &hv)));
                if restated {
                    "restates"
                } else if another_value {
                    "contradicts"
                } else if overlap >= 0.8 {
                    "restates"
                } else {
                    "unrelated"
                }
            }
            _ if overlap >= 0.8 && new_values == hv => "restates",
            _ => "unrelated",
        };
        if relation == "contradicts" {
            contradicted = true;
        }
        if relation != "unrelated" {
            judgments.push(json!({"fact": i + 1, "relation": relation}));
        }
    }
    json!({ "judgments": judgments })
}

/// Whether two sets of values hold amounts of the same unit (a currency or
/// a percentage): another price of the same thing replaces the old one.
fn same_amount_unit(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    let unit = |s: &BTreeSet<String>| -> BTreeSet<char> {
        s.iter()
            .filter_map(|v| v.chars().find(|c| "$€£%".contains(*c)))
            .into_set()
    };
    !unit(a).is_disjoint(&unit(b))
}

/// `relevance`: candidates that share a name, or enough terms, with the
/// conversation, the last message weighing most.
pub fn relevance(content: &str) -> Value {
    let (conversation, candidates) = match content.split_once("\n\nCandidates:\n") {
        Some((c, rest)) => (c.strip_prefix("Recent conversation:\n").unwrap_or(c), rest),
        None => (content, ""),
    };
    let lines = messages(conversation, false);
    let last = lines
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.text.as_str())
        .unwrap_or(conversation);
    let (last_terms, last_names) = (term_set(last), names(last));
    let all_terms = term_set(conversation);
    let relevant: Vec<usize> = numbered(candidates)
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            // A search's own result stays: word overlap judges it no
            // better than the ranking that found it, and dropping it only
            // lost evidence (docs/bench-history.md). Only what a hop reached is
            // judged.
            let Some((c, _)) = c.rsplit_once(crate::recall::walk::REACHED) else {
                return true;
            };
            let body = c.split_once(": ").map_or(c, |(_, b)| b);
            let ct = term_set(body);
            let shared_last = ct.intersection(&last_terms).count();
            let shared_names = names(body).intersection(&last_names).count();
            shared_names >= 1
                || shared_last >= 2
                || (shared_last >= 1 && coverage(&ct, &all_terms) >= 0.3)
        })
        .map(|(i, _)| i + 1)
        .collect();
    json!({ "relevant": relevant })
}

/// `distill`: the recalled items the reply used (shared names or terms);
/// with no reply, those the user's message touched.
pub fn distill(content: &str) -> Value {
    let (turn, items) = match content.split_once("\n\nRecalled items:\n") {
        Some((t, i)) => (t.strip_prefix("The turn:\n").unwrap_or(t), i),
        None => (content, ""),
    };
    let lines = messages(turn, false);
    let replies: String = lines
        .iter()
        .filter(|m| m.role != Role::User)
        .map(|m| m.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let basis = if replies.trim().is_empty() {
        turn.to_string()
    } else {
        replies
    };
    let (bt, bn) = (term_set(&basis), names(&basis));
    let kept: Vec<usize> = numbered(items)
        .iter()
        .enumerate()
        .filter(|(_, item)| {
            let body = item.split_once(") ").map_or(item.as_str(), |(_, b)| b);
            let it = term_set(body);
            names(body).intersection(&bn).count() >= 1 || it.intersection(&bt).count() >= 2
        })
        .map(|(i, _)| i + 1)
        .collect();
    json!({ "kept": kept })
}

/// `split`: the message's sentences, and within a long sentence its
/// clauses joined by "and", "or", "but" or a comma, each of three or more
/// words; the whole message when it has one part.
pub fn split(content: &str) -> Value {
    let text = content
        .split_once("User message:\n")
        .map_or(content, |(_, t)| t)
        .trim();
    let mut parts: Vec<String> = Vec::new();
    for s in crate::offline::facts::grammar::sentences(text) {
        let clauses: Vec<String> = s
            .split([',', ';'])
            .flat_map(|c| {
                let mut pieces = vec![c.to_string()];
                for conj in [" and ", " or ", " but ", " as well as ", " plus "] {
                    pieces = pieces
                        .into_iter()
                        .flat_map(|p| p.split(conj).map(str::to_string).collect::<Vec<_>>())
                        .collect();
                }
                pieces
            })
            .map(|c| c.trim().to_string())
            .collect();
        let long: Vec<String> = clauses
            .into_iter()
            .filter(|c| c.split_whitespace().count() >= 3)
            .collect();
        if long.len() >= 2 {
            parts.extend(long);
        } else {
            parts.push(s.trim().to_string());
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.truncate(8);
    if parts.is_empty() {
        parts.push(text.to_string());
    }
    json!({ "parts": parts, "when": null })
}
