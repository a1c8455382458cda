//! Reading the requests the core builds. Each task's content has a fixed
//! layout (see the task's builder: `segment::judge`, `note::ask_note`, ...);
//! these readers take it apart again. Message text may span lines: a line
//! that does not start a new item continues the one before.

use crate::types::message::Role;

/// One message as a request shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Minutes since the epoch, when the request shows a time.
    pub minute: Option<i64>,
    /// Who spoke.
    pub role: Role,
    /// What was said (lines joined with newlines).
    pub text: String,
}

/// Parses `YYYY-MM-DD HH:MM UTC` into minutes since the epoch.
pub fn parse_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 16 || b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[13] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, min) = (num(11..13)?, num(14..16)?);
    Some(crate::base::text::days_from_civil(y, m, d) * 1440 + h * 60 + min)
}

fn role(s: &str) -> Option<Role> {
    match s {
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        "tool" => Some(Role::Tool),
        "system" => Some(Role::System),
        _ => None,
    }
}

/// A line `[YYYY-MM-DD HH:MM UTC] role: text` or `role: text`.
fn start(line: &str, timed: bool) -> Option<Line> {
    let (minute, rest) = if timed {
        let inner = line.strip_prefix('[')?;
        let close = inner.find("] ")?;
        (Some(parse_time(&inner[..close])?), &inner[close + 2..])
    } else {
        (None, line)
    };
    let colon = rest.find(": ")?;
    let role = role(&rest[..colon])?;
    Some(Line {
        minute,
        role,
        text: rest[colon + 2..].to_string(),
    })
}

/// The messages of `section`, one per line starting `[time] role: ` (or
/// `role: ` when `timed` is false); other lines continue the message before.
pub fn messages(section: &str, timed: bool) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    for line in section.lines() {
        match start(line, timed) {
            Some(m) => out.push(m),
            None => {
                if let Some(last) = out.last_mut() {
                    last.text.push('\n');
                    last.text.push_str(line);
                }
            }
        }
    }
    out
}

/// The numbered items (`N. text`) of `section`, in order; other lines
/// continue the item before.
pub fn numbered(section: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in section.lines() {
        let item = line.split_once(". ").and_then(|(n, rest)| {
            let n: usize = n.parse().ok()?;
            (n == out.len() + 1).then(|| rest.to_string())
        });
        match item {
            Some(text) => out.push(text),
            None => {
                if let Some(last) = out.last_mut() {
                    last.push('\n');
                    last.push_str(line);
                }
            }
        }
    }
    out
}

/// The text after `header` up to the next blank line followed by a line
/// ending in `:` (a new section), or the end.
pub fn section<'a>(content: &'a str, header: &str) -> Option<&'a str> {
    let from = content.find(header)? + header.len();
    let rest = &content[from..];
    Some(rest.strip_prefix('\n').unwrap_or(rest))
}

/// The segment request: the messages before, the gap in minutes, the new
/// message.
pub struct SegmentRequest {
    /// The current episode's last messages.
    pub before: Vec<Line>,
    /// Minutes since the previous message.
    pub gap_minutes: i64,
    /// The message judged.
    pub new: Line,
}

/// Reads a `segment` request.
pub fn segment(content: &str) -> Option<SegmentRequest> {
    let split = content.find("\nNew message (")?;
    let before = messages(
        section(&content[..split], "Current episode (most recent messages):")?,
        true,
    );
    let tail = &content[split + "\nNew message (".len()..];
    let close = tail.find(" after the previous one):\n")?;
    let gap_minutes = gap(&tail[..close]);
    let new = messages(&tail[close + " after the previous one):\n".len()..], true)
        .into_iter()
        .next()?;
    Some(SegmentRequest {
        before,
        gap_minutes,
        new,
    })
}

/// Minutes of a gap as `describe_gap` writes it.
fn gap(text: &str) -> i64 {
    let mut parts = text.split_whitespace();
    let n: i64 = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    match parts.next() {
        Some(u) if u.starts_with("hour") => n * 60,
        Some(u) if u.starts_with("day") => n * 1440,
        _ => n,
    }
}

/// The note request: the most facts wanted, the messages.
pub struct NoteRequest {
    /// Most facts the answer may hold.
    pub max_facts: usize,
    /// The episode's messages.
    pub messages: Vec<Line>,
}

/// Reads a `note` request.
pub fn note(content: &str) -> Option<NoteRequest> {
    let first_line = content.lines().next()?;
    let max_facts = content
        .lines()
        .find_map(|l| {
            l.strip_prefix("At most ")?
                .strip_suffix(" facts.")?
                .parse()
                .ok()
        })
        .unwrap_or(40);
    let body = &content[first_line.len()..];
    Some(NoteRequest {
        max_facts,
        messages: messages(body, true),
    })
}
