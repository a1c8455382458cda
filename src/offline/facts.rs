//! Facts from sentences, by rules: each statement of an episode becomes a
//! subject-predicate-object triple. The speakers' pronouns become their
//! names (a `Name: ` prefix on the message, else "the user" and "the
//! assistant"), relative dates become dates (from the message's time), and
//! numbers are kept. Questions, greetings and the assistant's suggestions
//! are left out; the assistant's explicit milestones ("Decided: ...") and
//! everything a named speaker states are kept.

use crate::fact::{FactKind, NewFact};
use crate::message::Role;

#[cfg(test)]
use super::request::Line;
use super::request::NoteRequest;
use super::words::is_stop;

/// Words that open a message like a name prefix but are not speakers.
const NOT_SPEAKERS: &[&str] = &[
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

/// Base forms of common verbs (third person and past forms are derived).
const VERBS: &[&str] = &[
    "add",
    "adopt",
    "agree",
    "aim",
    "allow",
    "answer",
    "apply",
    "arrive",
    "ask",
    "attend",
    "bake",
    "believe",
    "belong",
    "book",
    "borrow",
    "call",
    "camp",
    "care",
    "celebrate",
    "change",
    "charge",
    "check",
    "choose",
    "clean",
    "close",
    "collect",
    "complete",
    "consider",
    "contain",
    "cook",
    "cost",
    "count",
    "cover",
    "create",
    "dance",
    "decide",
    "deliver",
    "depend",
    "design",
    "die",
    "donate",
    "draw",
    "dream",
    "enjoy",
    "expect",
    "explore",
    "fail",
    "fix",
    "follow",
    "fulfil",
    "graduate",
    "handle",
    "happen",
    "hate",
    "help",
    "hike",
    "hire",
    "hope",
    "host",
    "include",
    "join",
    "keep",
    "know",
    "land",
    "last",
    "launch",
    "learn",
    "like",
    "listen",
    "live",
    "look",
    "love",
    "mark",
    "mean",
    "mention",
    "miss",
    "move",
    "need",
    "offer",
    "open",
    "order",
    "organize",
    "organise",
    "own",
    "pack",
    "paint",
    "pass",
    "pick",
    "plan",
    "plant",
    "play",
    "post",
    "practice",
    "practise",
    "prefer",
    "prepare",
    "price",
    "print",
    "promise",
    "publish",
    "quote",
    "raise",
    "reach",
    "receive",
    "recommend",
    "release",
    "remember",
    "rent",
    "require",
    "return",
    "review",
    "run",
    "save",
    "seem",
    "sell",
    "send",
    "serve",
    "share",
    "ship",
    "shoot",
    "show",
    "sign",
    "sing",
    "skate",
    "slip",
    "start",
    "stay",
    "stop",
    "study",
    "support",
    "surf",
    "talk",
    "teach",
    "test",
    "train",
    "travel",
    "try",
    "turn",
    "update",
    "use",
    "visit",
    "volunteer",
    "wait",
    "walk",
    "want",
    "watch",
    "win",
    "wish",
    "work",
    "worry",
    "write",
];

/// Irregular forms (past and others) that are verbs.
const IRREGULAR: &[&str] = &[
    "am", "are", "ate", "began", "begun", "been", "bought", "brought", "built", "came", "can",
    "caught", "chose", "could", "did", "does", "drew", "drove", "felt", "fell", "flew", "found",
    "gave", "given", "goes", "gone", "got", "grew", "had", "has", "have", "heard", "held", "is",
    "kept", "knew", "left", "lost", "made", "may", "met", "might", "must", "paid", "ran", "read",
    "rode", "said", "sang", "sat", "saw", "seen", "sent", "shall", "shot", "should", "slept",
    "sold", "spent", "spoke", "stood", "swam", "taken", "taught", "thought", "told", "took", "was",
    "went", "were", "will", "won", "wore", "would", "wrote", "become", "became", "get", "go",
    "make", "take", "give", "find", "think", "tell", "leave", "feel", "bring", "begin", "hold",
    "meet", "pay", "sit", "speak", "lead", "grow", "lose", "fall", "build", "spend", "buy", "wear",
    "eat", "fly", "let", "put", "set", "cut", "see", "come", "do",
];

/// Words that may follow a verb inside its predicate.
const PARTICLES: &[&str] = &[
    "about", "at", "by", "for", "from", "in", "into", "of", "on", "onto", "out", "over", "to",
    "up", "with", "as",
];
const ADVERBS: &[&str] = &[
    "also",
    "already",
    "finally",
    "just",
    "never",
    "not",
    "now",
    "often",
    "really",
    "recently",
    "still",
    "always",
    "usually",
    "actually",
    "definitely",
    "probably",
    "soon",
];

fn base_forms(w: &str) -> Vec<String> {
    let mut out = vec![w.to_string()];
    for suffix in ["ies", "es", "s", "ed", "d", "ing"] {
        if let Some(b) = w.strip_suffix(suffix) {
            out.push(b.to_string());
            if suffix == "ies" || (suffix == "ed" && b.ends_with('i')) {
                out.push(format!("{}y", b.trim_end_matches('i')));
            }
            if suffix == "ed" || suffix == "ing" {
                out.push(format!("{b}e"));
                let c: Vec<char> = b.chars().collect();
                if c.len() >= 2 && c[c.len() - 1] == c[c.len() - 2] {
                    out.push(c[..c.len() - 1].iter().collect());
                }
            }
        }
    }
    out
}

fn is_verb(w: &str) -> bool {
    let w = w.to_lowercase();
    IRREGULAR.contains(&w.as_str())
        || base_forms(&w).iter().any(|b| VERBS.contains(&b.as_str()))
        || (w.len() > 4 && w.ends_with("ed") && !w.ends_with("eed"))
}

/// The third-person form of a base verb ("go" -> "goes").
fn third_person(v: &str) -> String {
    match v {
        "am" | "are" => "is".into(),
        "have" => "has".into(),
        "do" => "does".into(),
        "go" => "goes".into(),
        "were" => "was".into(),
        _ if VERBS.contains(&v) || IRREGULAR.contains(&v) && !v.ends_with('s') && v.len() > 2 => {
            if v.ends_with('y') && !v.ends_with("ay") && !v.ends_with("oy") {
                format!("{}ies", &v[..v.len() - 1])
            } else if v.ends_with("sh") || v.ends_with("ch") || v.ends_with('s') || v.ends_with('x')
            {
                format!("{v}es")
            } else {
                format!("{v}s")
            }
        }
        _ => v.into(),
    }
}

/// Modal and past forms that do not take a third-person ending.
fn keeps_form(v: &str) -> bool {
    [
        "will", "would", "can", "could", "should", "must", "may", "might", "shall", "was", "did",
        "had", "is", "has", "does",
    ]
    .contains(&v)
        || (v.ends_with("ed") && v.len() > 4)
        || IRREGULAR.contains(&v)
            && !VERBS.contains(&v)
            && ![
                "become", "get", "go", "make", "take", "give", "find", "think", "tell", "leave",
                "feel", "bring", "begin", "hold", "meet", "pay", "sit", "speak", "lead", "grow",
                "lose", "fall", "build", "spend", "buy", "wear", "eat", "fly", "let", "put", "set",
                "cut", "see", "come", "do", "have", "am", "are",
            ]
            .contains(&v)
}

/// Contractions spelled out ("I'm" -> "I am", "can't" -> "can not").
fn expand(text: &str) -> String {
    let t = text.replace(['\u{2019}', '\u{2018}'], "'");
    let mut out = Vec::new();
    for w in t.split(' ') {
        let lower = w.to_lowercase();
        let (head, tail) = match lower.as_str() {
            x if x.starts_with("won't") => ("will".to_string(), format!("not{}", &w[5..])),
            x if x.starts_with("can't") => ("can".to_string(), format!("not{}", &w[5..])),
            _ => {
                let mut pair = (w.to_string(), String::new());
                for (suffix, full) in [
                    ("n't", "not"),
                    ("'re", "are"),
                    ("'ve", "have"),
                    ("'ll", "will"),
                    ("'m", "am"),
                    ("'d", "would"),
                ] {
                    if let Some(pos) = lower.find(suffix) {
                        let rest = &w[pos + suffix.len()..];
                        if rest.chars().all(|c| !c.is_alphanumeric()) {
                            pair = (w[..pos].to_string(), format!("{full}{rest}"));
                            break;
                        }
                    }
                }
                if pair.1.is_empty() {
                    if let Some(pos) = lower.find("'s") {
                        let stem = &lower[..pos];
                        let rest = &w[pos + 2..];
                        if [
                            "it", "that", "he", "she", "there", "what", "who", "here", "where",
                            "let",
                        ]
                        .contains(&stem)
                            && rest.chars().all(|c| !c.is_alphanumeric())
                        {
                            let full = if stem == "let" { "us" } else { "is" };
                            pair = (w[..pos].to_string(), format!("{full}{rest}"));
                        }
                    }
                }
                pair
            }
        };
        out.push(head);
        if !tail.is_empty() {
            out.push(tail);
        }
    }
    out.join(" ")
}

/// Sentences of `text`: split after `.`, `!` or `?` followed by a space and
/// a capital letter or digit (so "$2.10" and "e.g. this" stay whole).
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut start = 0;
    for i in 0..chars.len() {
        let end_mark = matches!(chars[i], '.' | '!' | '?' | '\n');
        let next_starts = chars[i] == '\n'
            || (i + 2 < chars.len()
                && chars[i + 1] == ' '
                && (chars[i + 2].is_uppercase()
                    || chars[i + 2].is_ascii_digit()
                    || matches!(chars[i + 2], '\'' | '"' | '\u{201c}')));
        if end_mark && next_starts {
            let s: String = chars[start..=i].iter().collect();
            if !s.trim().is_empty() {
                out.push(s.trim().to_string());
            }
            start = i + 1;
        }
    }
    let s: String = chars[start..].iter().collect();
    if !s.trim().is_empty() {
        out.push(s.trim().to_string());
    }
    out
}

use crate::text::MONTH_NAMES as MONTHS;
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn date_of_day(day: i64) -> String {
    let (y, m, d) = crate::text::civil_from_days(day);
    format!("{d} {} {y}", MONTHS[m as usize - 1])
}

/// Relative dates made absolute from `minute` (the message's time):
/// "yesterday" -> "on 7 May 2023", "last Saturday" -> "on Saturday 6 May
/// 2023", "last week" -> "in the week before 8 May 2023", "last year" ->
/// "in 2022".
fn absolute_dates(text: &str, minute: Option<i64>) -> String {
    let Some(minute) = minute else {
        return text.to_string();
    };
    let day = minute.div_euclid(1440);
    let (year, month, _) = crate::text::civil_from_days(day);
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let weekday = (day + 3).rem_euclid(7);
    let mut out = text.to_string();
    let simple: [(&str, String); 12] = [
        (
            "the day before yesterday",
            format!("on {}", date_of_day(day - 2)),
        ),
        ("yesterday", format!("on {}", date_of_day(day - 1))),
        ("tomorrow", format!("on {}", date_of_day(day + 1))),
        (
            "this morning",
            format!("on the morning of {}", date_of_day(day)),
        ),
        ("tonight", format!("on the night of {}", date_of_day(day))),
        ("today", format!("on {}", date_of_day(day))),
        (
            "last week",
            format!("in the week before {}", date_of_day(day)),
        ),
        (
            "next week",
            format!("in the week after {}", date_of_day(day)),
        ),
        (
            "last month",
            format!(
                "in {} {}",
                MONTHS[((month + 10) % 12) as usize],
                if month == 1 { year - 1 } else { year }
            ),
        ),
        (
            "next month",
            format!(
                "in {} {}",
                MONTHS[(month % 12) as usize],
                if month == 12 { year + 1 } else { year }
            ),
        ),
        ("last year", format!("in {}", year - 1)),
        ("next year", format!("in {}", year + 1)),
    ];
    for (phrase, replacement) in simple.iter() {
        out = replace_words(&out, phrase, replacement);
    }
    for (i, name) in WEEKDAYS.iter().enumerate() {
        let back = (weekday - i as i64).rem_euclid(7);
        let back = if back == 0 { 7 } else { back };
        let phrase = format!("last {}", name.to_lowercase());
        out = replace_words(
            &out,
            &phrase,
            &format!("on {name} {}", date_of_day(day - back)),
        );
        let ahead = (i as i64 - weekday).rem_euclid(7);
        let ahead = if ahead == 0 { 7 } else { ahead };
        let phrase = format!("next {}", name.to_lowercase());
        out = replace_words(
            &out,
            &phrase,
            &format!("on {name} {}", date_of_day(day + ahead)),
        );
    }
    out
}

/// `text` with the whole-word, case-insensitive `phrase` replaced.
fn replace_words(text: &str, phrase: &str, with: &str) -> String {
    let lower = text.to_lowercase();
    if lower.len() != text.len() {
        return text.to_string();
    }
    let mut out = String::new();
    let mut from = 0;
    while let Some(pos) = lower[from..].find(phrase) {
        let at = from + pos;
        let end = at + phrase.len();
        let before_ok = at == 0
            || !lower[..at]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric());
        let after_ok = lower[end..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric());
        out.push_str(&text[from..at]);
        if before_ok && after_ok {
            out.push_str(with);
        } else {
            out.push_str(&text[at..end]);
        }
        from = end;
    }
    out.push_str(&text[from..]);
    out
}

/// Who says a message and who is spoken to.
struct Speakers {
    me: String,
    you: String,
}

fn default_name(role: Role) -> &'static str {
    match role {
        Role::User => "the user",
        _ => "the assistant",
    }
}

/// The sentence with the speakers' pronouns replaced by their names and the
/// verb after them agreeing.
fn resolve_pronouns(sentence: &str, who: &Speakers) -> String {
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

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

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
        crate::text::words(s)
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
    let content = crate::text::words(sentence)
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
                let key = crate::text::normalise_name(&sentence);
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
    crate::sort::sort_by(&mut found, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    found.truncate(most);
    crate::sort::sort_by_key(&mut found, |f| f.1);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(role: Role, text: &str) -> Line {
        Line {
            minute: Some(crate::text::days_from_civil(2023, 5, 8) * 1440 + 600),
            role,
            text: text.into(),
        }
    }

    #[test]
    fn a_users_liking_is_a_preference() {
        let req = NoteRequest {
            max_facts: 40,
            messages: vec![
                line(Role::User, "I'm vegetarian, and I love spicy food."),
                line(Role::User, "My sister Ana lives in Porto now."),
            ],
        };
        let facts = note(&req);
        assert!(
            facts
                .iter()
                .any(|f| f.kind == FactKind::Preference && f.sentence.contains("vegetarian")),
            "{facts:?}"
        );
        let ana = facts.iter().find(|f| f.sentence.contains("Porto")).unwrap();
        assert_eq!(ana.kind, FactKind::Fact);
    }

    #[test]
    fn each_fact_names_the_message_it_came_from() {
        let req = NoteRequest {
            max_facts: 40,
            messages: vec![
                line(Role::User, "Hello there."),
                line(Role::Assistant, "Hi! How can I help?"),
                line(Role::User, "My sister Ana lives in Porto now."),
            ],
        };
        let facts = note(&req);
        let ana = facts
            .iter()
            .find(|f| f.sentence.contains("Porto"))
            .expect("the fact about Ana");
        assert_eq!(ana.sources, vec![3]);
    }

    #[test]
    fn pronouns_of_a_named_speaker_become_the_name() {
        let req = NoteRequest {
            max_facts: 40,
            messages: vec![
                line(
                    Role::User,
                    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
                ),
                line(
                    Role::Assistant,
                    "Melanie: Wow, that's cool. I'm painting a lake sunrise for my kids.",
                ),
            ],
        };
        let facts = note(&req);
        assert!(
            facts
                .iter()
                .any(|f| f.subject == "Caroline" && f.sentence.contains("on 7 May 2023")),
            "{facts:#?}"
        );
        assert!(
            facts
                .iter()
                .any(|f| f.subject == "Melanie" && f.predicate.starts_with("is paint")),
            "{facts:#?}"
        );
    }

    #[test]
    fn a_decision_is_a_milestone_with_its_number() {
        let req = NoteRequest {
            max_facts: 40,
            messages: vec![line(
                Role::User,
                "Okay, decided: Loam costs $45. But the first 100 orders get it for $39.",
            )],
        };
        let facts = note(&req);
        let f = &facts[0];
        assert_eq!(
            (f.subject.as_str(), f.predicate.as_str(), f.object.as_str()),
            ("Loam", "costs", "$45")
        );
        assert_eq!(f.kind, FactKind::Decided);
    }

    #[test]
    fn questions_and_assistant_suggestions_give_no_facts() {
        let req = NoteRequest {
            max_facts: 40,
            messages: vec![
                line(Role::User, "What should we charge for Loam?"),
                line(
                    Role::Assistant,
                    "A price of $39 leaves room for shipping and fees.",
                ),
            ],
        };
        assert!(note(&req).is_empty());
    }
}
