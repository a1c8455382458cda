//! Facts from sentences, by rules: each statement of an episode becomes a
//! subject-predicate-object triple. The speakers' pronouns become their
//! names (a `Name: ` prefix on the message, else "the user" and "the
//! assistant"), relative dates become dates (from the message's time), and
//! numbers are kept. Questions, greetings and the assistant's suggestions
//! are left out; the assistant's explicit milestones ("Decided: ...") and
//! everything a named speaker states are kept.

use crate::base::text::MONTH_NAMES as MONTHS;
use crate::offline::facts::dates::{absolute_dates, WEEKDAYS};
use crate::offline::facts::grammar::{expand, is_verb, sentences, ADVERBS, PARTICLES};
use crate::offline::facts::speakers::{
    capitalise, default_name, resolve_pronouns, speaker_and_text, Speakers,
};
use crate::types::fact::{FactKind, NewFact};
use crate::types::message::Role;

#[cfg(test)]
use crate::offline::request::Line;
use crate::offline::request::NoteRequest;
use crate::offline::words::is_stop;

mod dates;
pub(crate) mod grammar;
pub(crate) mod speakers;
#[cfg(test)]
mod tests;

/// The milestone kind a sentence announces, and the sentence without a
/// leading marker ("Decided: ...").
fn kind_of(sentence: &str) -> (FactKind, String, bool) {
    let lower = sentence.to_lowercase();
    for (marker, kind) in [
        ("decided:", FactKind::Decided),
        ("agreed:", FactKind::Agreed),
        ("done:", FactKind::Done),
        ("blocked:", FactKind::Blocked),
        ("next step:", FactKind::Next),
        ("next step noted:", FactKind::Next),
        ("next:", FactKind::Next),
        ("todo:", FactKind::Next),
        ("okay, decided:", FactKind::Decided),
        ("ok, decided:", FactKind::Decided),
    ] {
        if lower.starts_with(marker) {
            return (kind, sentence[marker.len()..].trim().to_string(), true);
        }
    }
    // A condition announces nothing ("if CE slips, ... when the mark is done").
    if lower.starts_with("if ") || lower.starts_with("unless ") {
        return (FactKind::Fact, sentence.to_string(), false);
    }
    let has = |ps: &[&str]| ps.iter().any(|p| lower.contains(p));
    let kind = if has(&[
        "let's go with",
        "let us go with",
        "we'll go with",
        "we will go with",
        "we decided",
        "i decided",
        "have decided",
        "as decided",
        "settled on",
        "going with",
        "decided to",
        "decided on",
        "let's book",
        "let us book",
    ]) {
        FactKind::Decided
    } else if has(&[
        "we agreed",
        "it's a deal",
        "it is a deal",
        "agreed to",
        "agreed on",
    ]) {
        FactKind::Agreed
    } else if has(&[
        "is done",
        "are done",
        "finished",
        "completed",
        "went live",
        "is live",
        "has shipped",
        "have shipped",
        "launched",
        "milestone done",
    ]) {
        FactKind::Done
    } else if has(&[
        "blocked",
        "we're stuck",
        "we are stuck",
        "waiting on",
        "no slot",
        "can not sell",
        "cannot sell",
    ]) {
        FactKind::Blocked
    } else if has(&[
        "next step",
        "to do next",
        "will book",
        "will send",
        "will ship",
    ]) {
        FactKind::Next
    } else {
        FactKind::Fact
    };
    (kind, sentence.to_string(), false)
}

/// Whether a user's sentence (lower case, contractions expanded) states a
/// preference: what they like, avoid or want.
fn preference(lower: &str) -> bool {
    const SAYS: [&str; 24] = [
        "i prefer",
        "i like ",
        "i love ",
        "i enjoy",
        "i hate ",
        "i avoid",
        "i can not stand",
        "i cannot stand",
        "i do not like",
        "i do not eat",
        "i do not drink",
        "i am vegetarian",
        "i am vegan",
        "i am a vegetarian",
        "i am a vegan",
        "i am allergic",
        "i would rather",
        "my favorite",
        "my favourite",
        "i always ",
        "i never ",
        "keep answers",
        "keep replies",
        "keep it short",
    ];
    SAYS.iter()
        .any(|p| lower.starts_with(p) || lower.contains(&format!(" {p}")))
}

/// Splits a resolved clause into subject, predicate and object.
fn triple(clause: &str) -> Option<(String, String, String)> {
    let words: Vec<&str> = clause.split_whitespace().collect();
    let bare = |w: &str| -> String {
        w.trim_matches(|c: char| {
            !c.is_alphanumeric() && c != '$' && c != '€' && c != '£' && c != '%'
        })
        .to_string()
    };
    // The first verb after at least one subject word, within the first 8.
    let v = (1..words.len().min(9)).find(|&i| {
        let w = bare(words[i]).to_lowercase();
        // Not right after a comma, unless it closes an appositive ("Ana,
        // our photographer friend, can shoot").
        let commas = words[..i].iter().filter(|x| x.ends_with(',')).count();
        is_verb(&w) && (!words[i - 1].ends_with(',') || commas >= 2)
    })?;
    let subject_words: Vec<&str> = words[..v].to_vec();
    // An appositive's name is the subject: the words before its comma.
    let subject_words = match subject_words.iter().position(|x| x.ends_with(',')) {
        Some(k)
            if subject_words[0]
                .chars()
                .next()
                .is_some_and(char::is_uppercase) =>
        {
            subject_words[..=k].to_vec()
        }
        _ => subject_words,
    };
    if subject_words.len() > 6 {
        return None;
    }
    let subject = subject_words
        .join(" ")
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_string();
    let mut p = v + 1;
    let mut predicate = vec![bare(words[v]).to_lowercase()];
    while p < words.len() && predicate.len() < 5 {
        let w = bare(words[p]).to_lowercase();
        let last = words[p - 1].ends_with(',');
        if last {
            break;
        }
        if ADVERBS.contains(&w.as_str())
            || (is_verb(&w)
                && predicate.len() < 3
                && !w.is_empty()
                && !["read", "set", "cut", "put", "let", "can"].contains(&w.as_str()))
            || w == "to" && p + 1 < words.len() && is_verb(&bare(words[p + 1]).to_lowercase())
        {
            predicate.push(w);
            p += 1;
        } else if PARTICLES.contains(&w.as_str()) {
            predicate.push(w.clone());
            p += 1;
            // "is about to launch": the verb after "to" belongs to it.
            let next = words.get(p).map(|x| bare(x).to_lowercase());
            if w != "to" && next.as_deref() == Some("to") {
                continue;
            }
            if w == "to" && next.as_deref().is_some_and(is_verb) {
                continue;
            }
            break;
        } else {
            break;
        }
    }
    // The object: up to the end of the clause or the next preposition or
    // conjunction after its first words, at most 8 words.
    let mut object_words: Vec<&str> = Vec::new();
    for (k, w) in words[p..].iter().enumerate() {
        let b = bare(w).to_lowercase();
        if k > 0
            && [
                "with", "because", "since", "while", "which", "who", "and", "but", "so", "when",
                "where", "if", "although", "though", "as", "for", "in", "at", "on", "by", "from",
                "before", "after", "until",
            ]
            .contains(&b.as_str())
        {
            break;
        }
        object_words.push(w);
        if w.ends_with(',') || w.ends_with(';') || w.ends_with(':') || object_words.len() >= 8 {
            break;
        }
    }
    let object = object_words
        .join(" ")
        .trim_matches(|c: char| {
            !c.is_alphanumeric() && c != '$' && c != '€' && c != '£' && c != '%'
        })
        .to_string();
    let object = object
        .strip_prefix("a ")
        .or_else(|| object.strip_prefix("an "))
        .or_else(|| object.strip_prefix("the "))
        .map(str::to_string)
        .unwrap_or(object);
    let predicate = predicate.join(" ");
    let has_content = |s: &str| {
        crate::base::text::words(s)
            .iter()
            .any(|w| !is_stop(w) || w.chars().all(|c| c.is_ascii_digit()))
    };
    if !has_content(&subject) || !has_content(&object) || predicate.is_empty() {
        return None;
    }
    Some((subject, predicate, object))
}

/// What a sentence is worth as a fact: numbers, names, dates and
/// milestones count; None for sentences that are not statements.
fn worth(sentence: &str, kind: FactKind) -> Option<i32> {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let valued = sentence.chars().any(|c| c.is_ascii_digit()) || kind.is_milestone();
    if words.len() < if valued { 3 } else { 4 }
        || words.len() > 45
        || sentence.trim_end().ends_with('?')
    {
        return None;
    }
    let mut score = 0;
    if sentence.chars().any(|c| c.is_ascii_digit()) {
        score += 2;
    }
    if words
        .iter()
        .skip(1)
        .any(|w| w.chars().next().is_some_and(|c| c.is_uppercase()))
    {
        score += 1;
    }
    if MONTHS
        .iter()
        .chain(WEEKDAYS.iter())
        .any(|m| sentence.contains(m))
    {
        score += 1;
    }
    if kind.is_milestone() {
        score += 3;
    }
    let content = crate::base::text::words(sentence)
        .iter()
        .filter(|w| !is_stop(w))
        .count();
    if content < if valued { 2 } else { 3 } {
        return None;
    }
    Some(score + content.min(8) as i32 / 4)
}

/// The facts of a `note` request.
pub fn note(req: &NoteRequest) -> Vec<NewFact> {
    // Names by role, from `Name: ` prefixes seen in the episode.
    // A role is a named speaker when most of its messages start with the
    // same `Name: ` (one "Decided: ..." is not a name).
    let mut names: std::collections::BTreeMap<&str, String> = Default::default();
    for role in [Role::User, Role::Assistant] {
        let of_role: Vec<&str> = req
            .messages
            .iter()
            .filter(|m| m.role == role)
            .map(|m| m.text.as_str())
            .collect();
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for t in &of_role {
            if let (Some(name), _) = speaker_and_text(t) {
                *counts.entry(name).or_default() += 1;
            }
        }
        if let Some((name, n)) = counts.into_iter().max_by_key(|(_, n)| *n) {
            if 2 * n > of_role.len() {
                names.insert(role.as_str(), name.to_string());
            }
        }
    }
    let mut found: Vec<(i32, usize, NewFact)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (number, m) in req.messages.iter().enumerate() {
        if !matches!(m.role, Role::User | Role::Assistant) {
            continue;
        }
        let (prefix, rest) = speaker_and_text(&m.text);
        let named = names
            .get(m.role.as_str())
            .filter(|n| prefix == Some(n.as_str()));
        let text = if named.is_some() {
            rest
        } else {
            m.text.as_str()
        };
        let me = names
            .get(m.role.as_str())
            .cloned()
            .unwrap_or_else(|| default_name(m.role).to_string());
        let other = if m.role == Role::User {
            Role::Assistant
        } else {
            Role::User
        };
        let you = names
            .get(other.as_str())
            .cloned()
            .unwrap_or_else(|| default_name(other).to_string());
        let who = Speakers { me, you };
        // Bracketed asides (tool calls, shared photos) are not statements.
        let text: String = strip_brackets(text);
        for raw in sentences(&text) {
            let expanded = expand(&raw);
            // Requests are not facts; "let us book it" is the speaker's plan.
            // Nor are conditions: a triple cannot hold the "if".
            let lower = expanded.to_lowercase();
            if ["please", "if ", "unless "]
                .iter()
                .any(|p| lower.starts_with(p))
            {
                continue;
            }
            let expanded = match expanded.strip_prefix("Let us ") {
                Some(rest) => format!("We will {rest}"),
                None => expanded,
            };
            let (kind, body, marked) = kind_of(&expanded);
            // What the user says they like, avoid or want.
            let kind = match kind == FactKind::Fact && m.role == Role::User && preference(&lower) {
                true => FactKind::Preference,
                false => kind,
            };
            // An assistant's own sentences are suggestions unless it names a
            // milestone or is a named participant of the conversation.
            if m.role == Role::Assistant && !names.contains_key("assistant") && !marked {
                continue;
            }
            let Some(score) = worth(&body, kind) else {
                continue;
            };
            let resolved = absolute_dates(&resolve_pronouns(&body, &who), m.minute);
            // Each clause of the sentence may hold a triple ("the board went
            // up in price, and our unit cost is now $19"); with several, each
            // clause is its own fact's sentence.
            let clauses: Vec<String> = resolved
                .split([';', ':'])
                .flat_map(|c| c.split(", and ").map(str::to_string).collect::<Vec<_>>())
                .map(|c| strip_lead(c.trim()))
                .filter(|c| c.split_whitespace().count() >= 3)
                .collect();
            let triples: Vec<(String, (String, String, String))> = clauses
                .iter()
                .filter_map(|c| Some((c.clone(), triple(c)?)))
                .collect();
            let alone = triples.len() == 1;
            for (clause, (subject, predicate, object)) in triples {
                // "for the waitlist the user": the subject is the speaker
                // named last in it.
                let subject = [&who.me, &who.you]
                    .iter()
                    .filter_map(|n| subject.rfind(n.as_str()).map(|at| (at, n)))
                    .max()
                    .map_or(subject.clone(), |(at, n)| {
                        if subject[at..].starts_with(&format!("{n}'s")) {
                            subject[at..].to_string()
                        } else {
                            n.to_string()
                        }
                    });
                let text = if alone {
                    resolved.trim()
                } else {
                    clause.trim()
                };
                let mut sentence = capitalise(text.trim_end_matches([',', ' ']));
                if !sentence.ends_with(['.', '!']) {
                    sentence.push('.');
                }
                let key = crate::base::text::normalise_name(&sentence);
                if !seen.insert(key) {
                    continue;
                }
                found.push((
                    score,
                    found.len(),
                    NewFact {
                        subject: capitalise(&subject),
                        predicate,
                        object,
                        sentence,
                        kind,
                        sources: vec![number + 1],
                    },
                ));
            }
        }
    }
    // The best sentences, at most the request's limit, in the order said.
    let most = req.max_facts.min(12);
    crate::base::sort::sort_by(&mut found, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    found.truncate(most);
    crate::base::sort::sort_by_key(&mut found, |f| f.1);
    found.into_iter().map(|f| f.2).collect()
}

/// Capitalised words that open a sentence without naming anyone.
const LEADS: &[&str] = &[
    "today",
    "yesterday",
    "tomorrow",
    "tonight",
    "anyway",
    "honestly",
    "actually",
    "sadly",
    "luckily",
    "finally",
    "first",
    "afterwards",
    "meanwhile",
    "besides",
    "lately",
    "recently",
    "sometimes",
    "unfortunately",
    "fortunately",
    "otherwise",
    "however",
    "personally",
];

/// A leading interjection or short adverbial dropped ("Okay, ...", "Well,
/// ...", "Today, ...").
fn strip_lead(clause: &str) -> String {
    let mut words: Vec<&str> = clause.split_whitespace().collect();
    // Discourse words first ("And", "Remember,", "So").
    while words.len() > 3 {
        let w = words[0]
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if [
            "and", "but", "so", "also", "remember", "well", "okay", "ok", "then", "plus", "anyway",
            "actually", "honestly",
        ]
        .contains(&w.as_str())
        {
            words.remove(0);
        } else {
            break;
        }
    }
    // A leading condition or time clause up to its comma.
    let lead = words.first().map(|w| w.to_lowercase()).unwrap_or_default();
    if [
        "if", "when", "since", "because", "after", "before", "although", "once", "while", "as",
    ]
    .contains(&lead.as_str())
    {
        if let Some(k) = words.iter().take(12).position(|w| w.ends_with(',')) {
            if words.len() > k + 3 {
                words.drain(..=k);
            }
        }
    }
    if let Some(k) = words.iter().take(4).position(|w| w.ends_with(',')) {
        let lead: Vec<String> = words[..=k].iter().map(|w| w.to_lowercase()).collect();
        // Not a name ("Ana, our friend, ..."): only lower-case words or
        // an interjection lead.
        let named = k == 0
            && words[0].chars().next().is_some_and(char::is_uppercase)
            && !is_stop(lead[0].trim_matches(|c: char| !c.is_alphanumeric()))
            && !LEADS.contains(&lead[0].trim_matches(|c: char| !c.is_alphanumeric()));
        if !named
            && lead
                .iter()
                .all(|w| !is_verb(w.trim_matches(|c: char| !c.is_alphanumeric())))
            && words.len() > k + 3
        {
            return words[k + 1..].join(" ");
        }
    }
    words.join(" ")
}

fn strip_brackets(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}
