//! LoCoMo's session times ("1:56 pm on 8 May, 2023") in ms since the epoch:
//! shared by the long-conversation harness and `examples/locomo.rs` (which
//! includes this file by path).

pub fn month(m: &str) -> Option<i64> {
    let months = engram::base::text::MONTH_NAMES;
    months.iter().position(|x| *x == m).map(|i| i as i64 + 1)
}

/// LoCoMo's session time, "1:56 pm on 8 May, 2023", in ms since the epoch
/// .
pub fn parse_locomo_time(s: &str) -> Option<i64> {
    let (clock, date) = s.split_once(" on ")?;
    let (hm, ampm) = clock.trim().split_once(' ')?;
    let (h, min) = hm.split_once(':')?;
    let mut h: i64 = h.parse().ok()?;
    let min: i64 = min.parse().ok()?;
    if ampm.eq_ignore_ascii_case("pm") && h != 12 {
        h += 12;
    }
    if ampm.eq_ignore_ascii_case("am") && h == 12 {
        h = 0;
    }
    let parts: Vec<&str> = date.split([' ', ',']).filter(|p| !p.is_empty()).collect();
    let (d, m, y) = (
        parts.first()?.parse().ok()?,
        month(parts.get(1)?)?,
        parts.get(2)?.parse().ok()?,
    );
    Some((engram::base::text::days_from_civil(y, m, d) * 86_400 + h * 3600 + min * 60) * 1000)
}
