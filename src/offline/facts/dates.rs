//! Relative dates ("yesterday", "last Friday", "next month") made
//! dates, from the message's time.

use crate::base::text::MONTH_NAMES as MONTHS;

pub(super) const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

pub(super) fn date_of_day(day: i64) -> String {
    let (y, m, d) = crate::base::text::civil_from_days(day);
    format!("{d} {} {y}", MONTHS[m as usize - 1])
}

/// Relative dates made absolute from `minute` (the message's time):
/// "yesterday" -> "on 7 May 2023", "last Saturday" -> "on Saturday 6 May
/// 2023", "last week" -> "in the week before 8 May 2023", "last year" ->
/// "in 2022".
pub(super) fn absolute_dates(text: &str, minute: Option<i64>) -> String {
    let Some(minute) = minute else {
        return text.to_string();
    };
    let day = minute.div_euclid(1440);
    let (year, month, _) = crate::base::text::civil_from_days(day);
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
pub(super) fn replace_words(text: &str, phrase: &str, with: &str) -> String {
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
