//! Who speaks: a message's `Name: ` prefix, and the speakers' pronouns
//! made their names.

use crate::offline::facts::grammar::{is_verb, keeps_form, third_person, PARTICLES};
use crate::offline::words::is_stop;
use crate::types::message::Role;

/// Words that open a message like a name prefix but are not speakers.
pub(super) const NOT_SPEAKERS: &[&str] = &[
    "added",
    "agreed",
    "answer",
    "blocked",
    "decided",
    "done",
    "fyi",
    "next",
    "next step",
    "next week",
    "note",
    "noted",
    "plan",
    "problem",
    "question",
    "recap",
    "summary",
    "tip",
    "today",
    "todo",
    "update",
    "warning",
    "in the plan",
    "bad news",
    "good news",
];

/// The speaker named at the start of `text` (`Name: ...`), and the rest.
pub fn speaker_and_text(text: &str) -> (Option<&str>, &str) {
    if let Some((head, rest)) = text.split_once(": ") {
        let words: Vec<&str> = head.split_whitespace().collect();
        let named = !words.is_empty()
            && words.len() <= 3
            && head.len() <= 40
            && words.iter().all(|w| {
                w.chars().next().is_some_and(|c| c.is_uppercase())
                    && w.chars()
                        .all(|c| c.is_alphabetic() || c == '-' || c == '.' || c == '\'')
            })
            && !NOT_SPEAKERS.contains(&head.to_lowercase().as_str())
            && !words
                .iter()
                .any(|w| is_stop(&w.to_lowercase()) || is_verb(w));
        if named {
            return (Some(head), rest);
        }
    }
    (None, text)
}

/// Who says a message and who is spoken to.
pub(super) struct Speakers {
    pub(super) me: String,
    pub(super) you: String,
}

pub(super) fn default_name(role: Role) -> &'static str {
    match role {
        Role::User => "the user",
        _ => "the assistant",
    }
}

/// The sentence with the speakers' pronouns replaced by their names and the
/// verb after them agreeing.
pub(super) fn resolve_pronouns(sentence: &str, who: &Speakers) -> String {
    let words: Vec<&str> = sentence.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let core: String = w.chars().filter(|c| c.is_alphanumeric()).collect();
        let trail: String = w.chars().skip_while(|c| c.is_alphanumeric()).collect();
        let lower = core.to_lowercase();
        let replacement = match lower.as_str() {
            "i" | "we" => Some((who.me.clone(), true)),
            "me" | "myself" | "ourselves" => Some((who.me.clone(), false)),
            // "US" is a country.
            "us" if core != "US" => Some((who.me.clone(), false)),
            "my" | "our" | "mine" | "ours" => Some((format!("{}'s", who.me), false)),
            "you" if i == 0 || !out.last().is_some_and(|p| PARTICLES.contains(&p.as_str())) => {
                Some((who.you.clone(), true))
            }
            "you" | "yourself" => Some((who.you.clone(), false)),
            "your" | "yours" => Some((format!("{}'s", who.you), false)),
            _ => None,
        };
        match replacement {
            Some((name, subject)) if !core.is_empty() && core.len() == w.len() - trail.len() => {
                out.push(format!("{name}{trail}"));
                if subject && trail.is_empty() {
                    // The verb after a subject pronoun agrees with a name.
                    if let Some(next) = words.get(i + 1) {
                        let nl = next.to_lowercase();
                        let (nc, nt): (String, String) = (
                            nl.chars().take_while(|c| c.is_alphanumeric()).collect(),
                            next.chars().skip_while(|c| c.is_alphanumeric()).collect(),
                        );
                        if is_verb(&nc) && !keeps_form(&nc) {
                            out.push(format!("{}{nt}", third_person(&nc)));
                            i += 2;
                            continue;
                        }
                    }
                }
            }
            _ => out.push(w.to_string()),
        }
        i += 1;
    }
    out.join(" ")
}

pub(super) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
