//! Time in the question: a relative or named time ("yesterday", "last
//! week", "two months ago", "in May") resolved against the time the
//! question is asked, as a window of time. Recall prefers the items said
//! within it (one more ranked list in the fusion), so a question about
//! "last month" is answered from what was said last month.

use crate::base::text::{civil_from_days, days_from_civil, MONTH_NAMES};

const DAY: i64 = 86_400_000;

/// Number words up to twelve, and "a" / "an" / "a couple of".
fn number(word: &str) -> Option<i64> {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    match word {
        "a" | "an" => Some(1),
        "couple" => Some(2),
        "few" => Some(3),
        w => w
            .parse()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .or_else(|| WORDS.iter().position(|x| *x == w).map(|n| n as i64)),
    }
}

/// Start (ms) of the month `months` before the month of `day`.
fn month_start(day: i64, months: i64) -> i64 {
    let (y, m, _) = civil_from_days(day);
    let index = y * 12 + (m as i64 - 1) - months;
    days_from_civil(index.div_euclid(12), index.rem_euclid(12) + 1, 1) * DAY
}

/// The window of time `query` names, resolved against `now` (ms): `None`
/// when it names none. Windows are half-open, `[from, to)`. A time after
/// "before" / "until" / "prior to" is the open window up to it, after
/// "after" / "since" the window from it to now: "the airlines I flew before
/// today" is answered from everything said before today, not from today.
pub fn window(query: &str, now: i64) -> Option<(i64, i64)> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let (start, (from, to)) = named(&words, &lower, now)?;
    let at = |i: Option<usize>| i.and_then(|i| lower.get(i)).map_or("", String::as_str);
    let before = |n: usize| at(start.checked_sub(n));
    let day = now.div_euclid(DAY) * DAY;
    Some(match (before(2), before(1)) {
        // "the day before yesterday" is a day, not a side of one.
        ("day", "before") if at(Some(start)) == "yesterday" => (day - 2 * DAY, day - DAY),
        (_, "before") | ("prior", "to") => (i64::MIN, from),
        (_, "until" | "till") => (i64::MIN, to),
        (_, "after") => (to, now + 1),
        (_, "since") => (from, now + 1),
        _ => (from, to),
    })
}

/// The first time `query` names: where its words start, and its window.
fn named(words: &[String], lower: &[String], now: i64) -> Option<(usize, (i64, i64))> {
    let day = now.div_euclid(DAY);
    let today = day * DAY;
    // 1970-01-01 was a Thursday (3 days after a Monday).
    let week = (day - (day + 3).rem_euclid(7)) * DAY;
    let (year, _, _) = civil_from_days(day);
    let at = |i: usize| lower.get(i).map(String::as_str).unwrap_or("");
    for i in 0..lower.len() {
        let w = at(i);
        let next = at(i + 1);
        match (w, next) {
            ("yesterday", _) => return Some((i, (today - DAY, today))),
            ("today", _) | ("tonight", _) => return Some((i, (today, now + 1))),
            ("this", "morning") => return Some((i, (today, now + 1))),
            ("last", "night") => return Some((i, (today - DAY, today))),
            ("last", "week") => return Some((i, (week - 7 * DAY, week))),
            ("this", "week") => return Some((i, (week, now + 1))),
            ("last", "month") => return Some((i, (month_start(day, 1), month_start(day, 0)))),
            ("this", "month") => return Some((i, (month_start(day, 0), now + 1))),
            ("last", "year") => return Some((i, year_span(year - 1))),
            ("this", "year") => return Some((i, (days_from_civil(year, 1, 1) * DAY, now + 1))),
            ("last", "weekend") => return Some((i, (week - 2 * DAY, week))),
            _ => {}
        }
        // "N days / weeks / months / years ago" (also "a couple of weeks ago").
        if w == "ago" && i >= 2 {
            let unit = at(i - 1).trim_end_matches('s');
            let (n, first) = match number(at(i - 2)) {
                Some(n) => (Some(n), i - 2),
                None => match (at(i.saturating_sub(3)), at(i - 2)) {
                    (w, "of") if i >= 3 => (number(w), i - 3),
                    _ => (None, i - 1),
                },
            };
            let span = match unit {
                "day" => DAY,
                "week" => 7 * DAY,
                "month" => 30 * DAY,
                "year" => 365 * DAY,
                _ => continue,
            };
            let Some(n) = n.or(Some(1).filter(|_| unit == at(i - 1))) else {
                continue;
            };
            let centre = now - n * span;
            let half = match unit {
                "day" => DAY,
                _ => span / 2,
            };
            return Some((first, (centre - half, centre + half)));
        }
        // A date named outright: "October 13, 2023", "13 October 2023",
        // "October 2023", "in 2023" (a month name capitalised, so "may"
        // is not a month).
        if let Some(window) = named_date(words, lower, i, day) {
            return Some((i, window));
        }
        // "in May", "during March" (a capitalised month name after a
        // preposition): the latest such month that is not after now.
        if matches!(
            w,
            "in" | "during" | "since" | "of" | "before" | "after" | "until" | "till"
        ) {
            // "in October 2023": the month of that year.
            if let Some(window) = named_date(words, lower, i + 1, day) {
                return Some((i + 1, window));
            }
            if let Some(m) = words.get(i + 1).and_then(|x| month(x)) {
                let (_, this_month, _) = civil_from_days(day);
                let y = match m > this_month as i64 {
                    true => year - 1,
                    false => year,
                };
                return Some((i + 1, month_span(y, m)));
            }
        }
    }
    None
}

/// Month `m` (1-12) of year `y`, as a window.
fn month_span(y: i64, m: i64) -> (i64, i64) {
    let to = match m {
        12 => days_from_civil(y + 1, 1, 1),
        _ => days_from_civil(y, m + 1, 1),
    };
    (days_from_civil(y, m, 1) * DAY, to * DAY)
}

/// Year `y`, as a window.
fn year_span(y: i64) -> (i64, i64) {
    (
        days_from_civil(y, 1, 1) * DAY,
        days_from_civil(y + 1, 1, 1) * DAY,
    )
}

/// The month (1-12) word `w` names when capitalised ("October", "Oct").
fn month(w: &str) -> Option<i64> {
    if !w.chars().next().is_some_and(char::is_uppercase) {
        return None;
    }
    MONTH_NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(w) || (w.len() == 3 && n[..3].eq_ignore_ascii_case(w)))
        .map(|m| m as i64 + 1)
}

/// A year from 1900 to 2999 in word `w`.
fn year_of(w: &str) -> Option<i64> {
    (w.len() == 4)
        .then(|| w.parse().ok())
        .flatten()
        .filter(|y| (1900..3000).contains(y))
}

/// A day of the month in word `w` ("13", "13th", "1st").
fn day_of(w: &str) -> Option<i64> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &w[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// A date named at word `i`: a month name with a day and a year
/// ("October 13, 2023", "13 October 2023"), a day without a year (the
/// latest such day not after `today`), a month with a year ("October
/// 2023"), or a year after "in" / "during" ("in 2023"). The window is
/// that day, month or year.
fn named_date(words: &[String], lower: &[String], i: usize, today: i64) -> Option<(i64, i64)> {
    let word = |k: usize| words.get(k).map(String::as_str).unwrap_or("");
    let one_day = |y: i64, m: i64, d: i64| {
        let at = days_from_civil(y, m, d);
        // Rejects "February 31" (it would be March 3).
        let (_, mm, _) = civil_from_days(at);
        (mm as i64 == m).then_some((at * DAY, (at + 1) * DAY))
    };
    let (this_year, _, _) = civil_from_days(today);
    // The latest such day not after today, when no year is named.
    let latest = |m: i64, d: i64| {
        one_day(this_year, m, d)
            .filter(|(from, _)| *from <= today * DAY)
            .or_else(|| one_day(this_year - 1, m, d))
    };
    if let Some(m) = month(word(i)) {
        // "October 13, 2023", "October 13"
        if let Some(d) = day_of(word(i + 1)) {
            return match year_of(word(i + 2)) {
                Some(y) => one_day(y, m, d),
                None => latest(m, d),
            };
        }
        // "October 2023"
        if let Some(y) = year_of(word(i + 1)) {
            return Some(month_span(y, m));
        }
        return None;
    }
    // "13 October, 2023", "13 October", "the 13th of October"
    let of = usize::from(lower.get(i + 1).is_some_and(|w| w == "of"));
    if let (Some(d), Some(m)) = (day_of(word(i)), month(word(i + 1 + of))) {
        return match year_of(word(i + 2 + of)) {
            Some(y) => one_day(y, m, d),
            None => latest(m, d),
        };
    }
    if matches!(lower.get(i).map(String::as_str), Some("in" | "during")) {
        if let Some(y) = year_of(word(i + 1)) {
            // Not "in 2023 March": the month after the year is its own.
            if month(word(i + 2)).is_none() {
                return Some(year_span(y));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // Wednesday 24 May 2023, 09:14 UTC.
    const NOW: i64 = 1_684_919_640_000;

    fn date(ms: i64) -> String {
        crate::base::text::format_date(ms)
    }

    fn span(q: &str) -> (String, String) {
        let (a, b) = window(q, NOW).unwrap_or_else(|| panic!("no window in {q:?}"));
        (date(a), date(b - 1))
    }

    #[test]
    fn relative_expressions_resolve_against_the_question_time() {
        let s = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            span("Which shoes did I clean last month?"),
            s("2023-04-01", "2023-04-30")
        );
        assert_eq!(
            span("what did I buy yesterday"),
            s("2023-05-23", "2023-05-23")
        );
        assert_eq!(
            span("the film I saw last week"),
            s("2023-05-15", "2023-05-21")
        );
        assert_eq!(
            span("where was I two months ago"),
            s("2023-03-10", "2023-04-09")
        );
        assert_eq!(
            span("What did I cook in March?"),
            s("2023-03-01", "2023-03-31")
        );
        assert_eq!(span("a trip in July"), s("2022-07-01", "2022-07-31"));
        assert_eq!(span("last year"), s("2022-01-01", "2022-12-31"));
        assert_eq!(
            span("What painting did she show on October 13, 2023?"),
            s("2023-10-13", "2023-10-13")
        );
        assert_eq!(
            span("What did Gina find on 1 February, 2023?"),
            s("2023-02-01", "2023-02-01")
        );
        assert_eq!(span("the 3rd of May"), s("2023-05-03", "2023-05-03"));
        assert_eq!(span("on June 2nd"), s("2022-06-02", "2022-06-02"));
        assert_eq!(
            span("their project in July 2023"),
            s("2023-07-01", "2023-07-31")
        );
        assert_eq!(span("the beach in 2022"), s("2022-01-01", "2022-12-31"));
        assert_eq!(window("on February 30, 2023", NOW), None);
        // One side of a time: before it, or from it to now.
        let before_today = window("airlines I flew with before today", NOW);
        assert_eq!(before_today, Some((i64::MIN, 1_684_886_400_000)));
        assert_eq!(
            window("prior to last week", NOW).map(|w| date(w.1 - 1)),
            Some("2023-05-14".to_string())
        );
        assert_eq!(
            span("what have I read since March?"),
            s("2023-03-01", "2023-05-24")
        );
        assert_eq!(
            span("the games after two weeks ago"),
            s("2023-05-13", "2023-05-24")
        );
        assert_eq!(
            window("until June 2nd", NOW).map(|w| date(w.1 - 1)),
            Some("2022-06-02".to_string())
        );
        assert_eq!(
            span("the day before yesterday"),
            s("2023-05-22", "2023-05-22")
        );
        assert_eq!(window("Where do I live now?", NOW), None);
        assert_eq!(window("You may want to rest", NOW), None);
    }
}
