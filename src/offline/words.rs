//! Words as the offline model compares them: lower case, stop words out,
//! a light stem, so "prices" meets "price" and "shipping" meets "ship".

use std::collections::BTreeSet;

/// Words that carry no topic, sorted (searched by bisection).
const STOP: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "anything",
    "are",
    "aren",
    "as",
    "at",
    "back",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "bit",
    "both",
    "but",
    "by",
    "can",
    "can't",
    "could",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "done",
    "down",
    "during",
    "each",
    "even",
    "everything",
    "feel",
    "few",
    "for",
    "from",
    "further",
    "get",
    "glad",
    "go",
    "going",
    "good",
    "got",
    "great",
    "had",
    "happy",
    "has",
    "have",
    "having",
    "he",
    "hello",
    "her",
    "here",
    "hers",
    "herself",
    "hey",
    "hi",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "know",
    "let",
    "let's",
    "lets",
    "like",
    "ll",
    "look",
    "lot",
    "m",
    "make",
    "many",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "need",
    "nice",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "oh",
    "ok",
    "okay",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "really",
    "right",
    "s",
    "said",
    "same",
    "say",
    "see",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "something",
    "sound",
    "sounds",
    "still",
    "such",
    "sure",
    "t",
    "tell",
    "than",
    "thank",
    "thanks",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "though",
    "through",
    "to",
    "told",
    "too",
    "under",
    "until",
    "up",
    "us",
    "ve",
    "very",
    "want",
    "was",
    "wasn",
    "way",
    "we",
    "well",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "would",
    "wow",
    "yeah",
    "yes",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `w` (lower case) is a stop word.
pub fn is_stop(w: &str) -> bool {
    STOP.binary_search(&w).is_ok()
}

/// A light stem: plural and verb endings off, so related forms meet.
pub fn stem(w: &str) -> String {
    let n = w.chars().count();
    if n <= 3 || w.chars().any(|c| c.is_ascii_digit()) {
        return w.to_string();
    }
    for (suffix, keep) in [
        ("ies", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
        ("ly", ""),
    ] {
        if let Some(base) = w.strip_suffix(suffix) {
            if base.chars().count() >= 3 && !(suffix == "s" && base.ends_with('s')) {
                let mut b = base.to_string();
                // "shipping" -> "shipp" -> "ship"
                let chars: Vec<char> = b.chars().collect();
                if suffix == "ing" || suffix == "ed" {
                    if let [.., x, y] = chars.as_slice() {
                        if x == y && !"lsz".contains(*x) {
                            b.pop();
                        }
                    }
                }
                b.push_str(keep);
                return b;
            }
        }
    }
    w.to_string()
}

/// The content terms of `text`: words that are not stop words, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    crate::text::words(text)
        .into_iter()
        .filter(|w| !is_stop(w) && (w.chars().count() > 1 || w.chars().all(|c| c.is_ascii_digit())))
        .map(|w| stem(&w))
        .collect()
}

/// The set of content terms of `text`.
pub fn term_set(text: &str) -> BTreeSet<String> {
    terms(text).into_iter().collect()
}

/// Share of `a`'s terms found in `b` (0 when `a` has none).
pub fn coverage(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    if a.is_empty() {
        return 0.0;
    }
    a.intersection(b).count() as f32 / a.len() as f32
}

/// Jaccard overlap of two term sets.
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f32 / union as f32
}
