//! Small text helpers: token estimates, name normalisation, word splitting.

mod visible;

/// Estimated tokens of `text` for hosts whose model does not count: one token
/// per four bytes of UTF-8, at least one per word, rounded up. Close to the
/// BPE tokenisers of current chat models on English prose.
pub fn estimate_tokens(text: &str) -> usize {
    let by_bytes = text.len().div_ceil(4);
    let words = text.split_whitespace().count();
    by_bytes.max(words)
}

/// Lower-cased words of `text` (letters and digits), for matching and search.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect()
}

/// A light stem: plural and verb endings off, so related forms meet.
pub fn stem(w: &str) -> String {
    let mut s = w.to_string();
    stem_in_place(&mut s);
    s
}

/// [`stem`] in place (no allocation: the word only gets shorter, or ends
/// in "y" where it ended in "ies").
pub fn stem_in_place(w: &mut String) {
    if w.len() <= 3 || w.chars().nth(3).is_none() || w.chars().any(|c| c.is_ascii_digit()) {
        return;
    }
    for (suffix, keep) in [
        ("ies", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
        ("ly", ""),
    ] {
        let Some(base) = w.strip_suffix(suffix) else {
            continue;
        };
        if base.chars().nth(2).is_none() || (suffix == "s" && base.ends_with('s')) {
            continue;
        }
        let mut len = base.len();
        // "shipping" -> "shipp" -> "ship"
        if suffix == "ing" || suffix == "ed" {
            let mut last = base.chars().rev();
            if let (Some(y), Some(x)) = (last.next(), last.next()) {
                if x == y && !"lsz".contains(x) {
                    len -= y.len_utf8();
                }
            }
        }
        w.truncate(len);
        w.push_str(keep);
        return;
    }
}

const ARTICLES: [&str; 3] = ["the", "a", "an"];

/// The normal form of an entity name: lower case, punctuation dropped, a
/// leading article dropped, whitespace collapsed. "The  Acme-Corp." and
/// "acme corp" both become "acme corp".
pub fn normalise_name(name: &str) -> String {
    let mut w = words(name);
    if w.len() > 1 && ARTICLES.contains(&w[0].as_str()) {
        w.remove(0);
    }
    w.join(" ")
}

/// Cosine similarity of two vectors of equal length (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    cosine_of(a.iter().copied(), b.iter().copied())
}

/// [`cosine`] of two sequences of values (the shorter one sets the length),
/// summed in their order: what every cosine of the crate computes.
pub fn cosine_of(a: impl Iterator<Item = f32>, b: impl Iterator<Item = f32>) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// The months' English names, January first.
pub const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Whether `name` keeps the rule of namespaces and thread names: 1 to 128
/// ASCII letters, digits or `._-:@`, not starting with `.`. (No space, no
/// invisible or look-alike character: a name shown to a model or a person
/// is the name it is.)
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:@".contains(c))
}

/// The largest host instructions accepted, in bytes (64 KiB).
pub const MAX_INSTRUCTIONS_BYTES: usize = 65_536;

/// The latest clock reading or stored time accepted: 3000-01-01 in ms since
/// the epoch (the earliest is 0).
pub const MAX_CLOCK_MS: i64 = 32_503_680_000_000;

/// `text` cut to about `max_tokens` estimated tokens, on a char boundary,
/// with an ellipsis when cut.
pub fn clip(text: &str, max_tokens: usize) -> String {
    let max_bytes = max_tokens * 4;
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Appends [`clip`]`(text, max_tokens)` to `out`, without a copy between.
pub fn push_clipped(out: &mut String, text: &str, max_tokens: usize) {
    let max_bytes = max_tokens * 4;
    if text.len() <= max_bytes {
        out.push_str(text);
        return;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&text[..end]);
    out.push('…');
}

/// A date-time stamp `YYYY-MM-DD HH:MM UTC` for `ms` since the Unix epoch
/// (proleptic Gregorian calendar, no time zone data needed).
pub fn format_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// The date `YYYY-MM-DD` for `ms` since the Unix epoch.
pub fn format_date(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(1000).div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date (years 1 to 9999, a day
/// the month has), or `None`.
pub fn parse_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse::<i64>().ok())?
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if y < 1 || !(1..=12).contains(&m) || d < 1 {
        return None;
    }
    let days = days_from_civil(y, m, d);
    // A day past the month's end rolls into the next month: refused.
    (civil_from_days(days) == (y, m as u32, d as u32)).then_some(days)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// days_from_civil, the inverse of the conversion `format_time` uses).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// Howard Hinnant's days-to-civil algorithm.
/// The civil date (year, month, day) of `z` days since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Untrusted text (from the conversation or a model) made safe to place
/// inside the memory's own framing in the view: folded onto one line (control
/// characters and line breaks become spaces, runs of spaces one), keeping
/// only visible characters (`visible::visible`: letters, marks, numbers,
/// punctuation, symbols and spaces that are not default ignorable; format
/// characters such as bidirectional overrides, zero-width marks and tags,
/// private-use and unassigned code points are dropped) and stripped
/// of markdown markers at its start (`#`, `>`, `-`, `*`, `=`, `|`,
/// backticks), with square brackets turned into parentheses (so it cannot
/// forge a milestone tag such as `[done]` or the `[engram]` tag) and chat
/// template markers (`<|`, `|>`) broken apart, and a leading role marker
/// (`system:`, `user:`, ...) losing its colon. It can then never start a new
/// line, heading, role marker or tag of its own.
pub fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        let c = match c {
            '[' => '(',
            ']' => ')',
            c if c.is_control() || c.is_whitespace() => ' ',
            c if visible::visible(c) => c,
            // Format, private-use, unassigned and default-ignorable code
            // points: hidden text (tags read as ASCII by models, soft
            // hyphens, fillers, variation selectors...).
            _ => continue,
        };
        if c == ' ' {
            if !space && !out.is_empty() {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    let trimmed = out
        .trim_end()
        .trim_start_matches(|c: char| "#>-*=|`".contains(c) || c == ' ');
    let mut s = trimmed.replace("<|", "< |").replace("|>", "| >");
    // A leading role marker ("system: ...") loses its colon.
    if let Some((word, _)) = s.split_once(':') {
        let roles = [
            "system",
            "user",
            "assistant",
            "tool",
            "developer",
            "function",
        ];
        if roles.iter().any(|r| word.trim().eq_ignore_ascii_case(r)) {
            let at = word.len();
            s.replace_range(at..at + 1, " \u{2014}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_keeps_only_visible_characters() {
        let hidden = "a\u{E0041}\u{E0042}b\u{AD}c\u{180E}d\u{FFF9}e\u{FE0F}f\u{34F}g\u{115F}h\u{3164}i\u{1D173}j\u{E000}k\u{378}l\u{200B}m";
        assert_eq!(inline(hidden), "abcdefghijklm");
        assert_eq!(inline("line\u{2028}par\u{2029}end"), "line par end");
        let visible = "café Ελληνικά 北京 العربية हिन्दी ١٢٣ € © 🙂 ✓ ǅ ⅻ";
        assert_eq!(inline(visible), visible);
    }

    #[test]
    fn normalise_name_drops_case_punctuation_and_article() {
        assert_eq!(normalise_name("The  Acme-Corp."), "acme corp");
        assert_eq!(normalise_name("acme corp"), "acme corp");
        assert_eq!(normalise_name("A"), "a");
    }

    #[test]
    fn push_clipped_appends_what_clip_returns() {
        for text in ["", "short", "ééééé", "a longer text that gets cut"] {
            for max in [0, 1, 2, 3, 100] {
                let mut out = String::from(">");
                push_clipped(&mut out, text, max);
                assert_eq!(out, format!(">{}", clip(text, max)));
            }
        }
    }

    #[test]
    fn days_from_civil_inverts_civil_from_days() {
        for z in [-719_468, -1, 0, 59, 11_016, 19_783, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m as i64, d as i64), z);
        }
    }

    #[test]
    fn format_time_reads_the_epoch_and_a_leap_day() {
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(
            format_time(951_782_400_000 + 3_600_000),
            "2000-02-29 01:00 UTC"
        );
    }

    #[test]
    fn estimate_counts_at_least_a_token_per_word() {
        assert_eq!(estimate_tokens("a b c d e"), 5);
        assert_eq!(estimate_tokens("abcdefgh"), 2);
    }
}
