//! Just enough English: verbs and their forms, contractions expanded,
//! text cut into sentences.

/// Base forms of common verbs (third person and past forms are derived).
pub(super) const VERBS: &[&str] = &[
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
pub(super) const IRREGULAR: &[&str] = &[
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
pub(super) const PARTICLES: &[&str] = &[
    "about", "at", "by", "for", "from", "in", "into", "of", "on", "onto", "out", "over", "to",
    "up", "with", "as",
];
pub(super) const ADVERBS: &[&str] = &[
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

pub(super) fn base_forms(w: &str) -> Vec<String> {
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

pub(super) fn is_verb(w: &str) -> bool {
    let w = w.to_lowercase();
    IRREGULAR.contains(&w.as_str())
        || base_forms(&w).iter().any(|b| VERBS.contains(&b.as_str()))
        || (w.len() > 4 && w.ends_with("ed") && !w.ends_with("eed"))
}

/// The third-person form of a base verb ("go" -> "goes").
pub(super) fn third_person(v: &str) -> String {
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
pub(super) fn keeps_form(v: &str) -> bool {
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
pub(super) fn expand(text: &str) -> String {
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
