//! Export (whole and in parts) and import of a memory's log.

use serde::{Deserialize, Serialize};

use crate::base::bytes::value_checksum;
use crate::base::codec;
use crate::base::error::{Error, Result};
use crate::base::host::{Store, Write};
use crate::state::State;
use crate::store::format::{encode_entry, LogEntry};
use crate::store::log::packs_of;
use crate::store::read::{check_headless, header_sum, visit_log};
use crate::store::rewrite::read_log;
use crate::store::{to_json, Head, LogPosition, EXPORT_VERSION, FORMAT_VERSION, OLDEST_VERSION};

/// An export of `log` (entries `1..`, in order), as `export` writes one.
pub fn export_entries(log: Vec<LogEntry>) -> String {
    to_json(&Export {
        format: "engram".into(),
        version: EXPORT_VERSION,
        log,
    })
}

/// A whole memory as one JSON document: every log entry.
#[derive(Debug, Serialize, Deserialize)]
pub struct Export {
    /// Always `"engram"`.
    pub format: String,
    /// Format version.
    pub version: u32,
    /// Every log entry, in order.
    pub log: Vec<LogEntry>,
}

/// Reads the whole log of a namespace.
pub async fn export<S: Store>(store: &S, pos: &LogPosition) -> Result<String> {
    let log = read_log(store, pos).await?;
    Ok(to_json(&Export {
        format: "engram".into(),
        version: EXPORT_VERSION,
        log,
    }))
}

/// Where a paged export stands ([`export_part`]): the next log entry to
/// write, the last entry of the export (the log's end when the export
/// began: entries committed after it are not part of it), how many times
/// the log had been rewritten by erasure then, and a mark of the last
/// entry handed out. An erasure between two parts, or a log destroyed and
/// written anew, makes the cursor stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportCursor {
    /// The next log entry to write (1 is the first).
    pub next: u64,
    /// The export's last log entry.
    pub end: u64,
    /// The log's rewrite count when the export began.
    pub rewrites: u64,
    /// A 32-bit mark of entry `next - 1` as it was handed out (its seq,
    /// time and attempt id), checked against the log before the next part
    /// (32 bits, so that JavaScript numbers hold it exactly).
    pub mark: u32,
}

/// One part of a paged export: the parts' texts, joined in order, are
/// byte for byte what `export` returns at the moment the export began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportPart {
    /// This part's JSON text (a piece of the document, not a document).
    pub text: String,
    /// Where the next part starts; none after the last part.
    pub next: Option<ExportCursor>,
}

/// The fewest bytes a paged export may ask for in a part.
pub const EXPORT_PART_MIN: usize = 1024;

/// The text of an export up to its first entry.
pub(super) fn export_prefix() -> String {
    format!("{{\"format\":\"engram\",\"version\":{EXPORT_VERSION},\"log\":[")
}

/// The mark of `entry` in an [`ExportCursor`]: [`value_checksum`] of its
/// seq, time and attempt id, cut to 32 bits (an erasure gives a changed
/// entry a new id; another memory's entry differs in time).
pub(super) fn export_mark(entry: &LogEntry) -> u32 {
    let mut bytes = Vec::with_capacity(16 + entry.id.len());
    bytes.extend_from_slice(&entry.seq.to_le_bytes());
    bytes.extend_from_slice(&entry.at.to_le_bytes());
    bytes.extend_from_slice(entry.id.as_bytes());
    value_checksum(&bytes) as u32
}

/// What a stale cursor says.
pub(super) fn export_stale(why: &str) -> Error {
    Error::invalid(format!(
        "{why} since this export began: start the export again"
    ))
}

/// Checks a cursor against the log as it stands (`seq` entries, rewritten
/// `rewrites` times); the cursor to start from.
pub(super) fn export_cursor(
    cursor: Option<ExportCursor>,
    seq: u64,
    rewrites: u64,
    max_bytes: usize,
) -> Result<ExportCursor> {
    if max_bytes < EXPORT_PART_MIN {
        return Err(Error::invalid(format!(
            "an export part needs at least {EXPORT_PART_MIN} bytes (asked for {max_bytes})"
        )));
    }
    let Some(c) = cursor else {
        return Ok(ExportCursor {
            next: 1,
            end: seq,
            rewrites,
            mark: 0,
        });
    };
    if c.next < 2 || c.next > c.end || c.end > seq {
        return Err(Error::invalid(format!(
            "export cursor (next {}, end {}) does not fit this memory's log of {seq} entries",
            c.next, c.end
        )));
    }
    if c.rewrites != rewrites {
        return Err(export_stale("the log was rewritten by an erasure"));
    }
    Ok(c)
}

/// Adds `entry` (the export's entry `cursor.next`) to `text` unless the
/// part, which began at entry `first`, already holds one and would pass
/// `max_bytes`; whether the part is full.
pub(super) fn export_push(
    text: &mut String,
    cursor: &mut ExportCursor,
    first: u64,
    entry: &LogEntry,
    max_bytes: usize,
) -> bool {
    let json = to_json(entry);
    if cursor.next > first && text.len() + 1 + json.len() + 2 > max_bytes {
        return true;
    }
    if cursor.next > 1 {
        text.push(',');
    }
    text.push_str(&json);
    cursor.next += 1;
    cursor.mark = export_mark(entry);
    false
}

/// Ends `text` when `cursor` is past its last entry; the cursor of the
/// next part otherwise.
pub(super) fn export_finish(mut text: String, cursor: ExportCursor) -> ExportPart {
    if cursor.next > cursor.end {
        text.push_str("]}");
        ExportPart { text, next: None }
    } else {
        ExportPart {
            text,
            next: Some(cursor),
        }
    }
}

/// One part of an export of the log at `pos`: from `cursor` (none: the
/// start, pinning the log's end), whole entries up to about `max_bytes`
/// of text (at least one entry, however long). Joined, the parts are
/// what `export` returns; a host writes each part out and asks for the
/// next, so no side holds the whole export. A cursor that does not fit the
/// log, or whose last entry the log no longer holds as it was (an
/// erasure; the namespace destroyed and written anew), is `InvalidInput`.
pub async fn export_part<S: Store>(
    store: &S,
    pos: &LogPosition,
    cursor: Option<ExportCursor>,
    max_bytes: usize,
) -> Result<ExportPart> {
    let mut cur = export_cursor(cursor, pos.seq, pos.rewrites, max_bytes)?;
    let mut text = if cursor.is_none() {
        export_prefix()
    } else {
        String::new()
    };
    if cur.next <= cur.end {
        let first = cur.next;
        // A later part reads the entry before it first, to check its mark.
        let mut unchecked = cursor.is_some();
        let from = if unchecked { first - 1 } else { first };
        let (_, head) = visit_log(store, &pos.keys, None, from, &mut |entry, _, _| {
            if unchecked && entry.seq == first - 1 {
                if export_mark(&entry) != cur.mark {
                    return Err(export_stale(&format!("log entry {} changed", entry.seq)));
                }
                unchecked = false;
                return Ok(false);
            }
            if entry.seq != cur.next {
                return Err(Error::Corrupt(format!(
                    "log entry {} was read where {} was expected",
                    entry.seq, cur.next
                )));
            }
            Ok(cur.next > cur.end || export_push(&mut text, &mut cur, first, &entry, max_bytes))
        })
        .await?;
        if head.rewrites != cur.rewrites {
            return Err(export_stale("the log was rewritten by an erasure"));
        }
        if unchecked || cur.next == first {
            // The log no longer reaches the cursor (destroyed, or written
            // anew shorter): never an empty part that loops.
            return Err(export_stale(&format!(
                "the log no longer holds entry {}",
                if unchecked { first - 1 } else { first }
            )));
        }
    }
    Ok(export_finish(text, cur))
}

/// [`export_part`] over a log held in memory (`log`: entries `1..`).
pub fn export_part_of(
    log: &[LogEntry],
    cursor: Option<ExportCursor>,
    max_bytes: usize,
) -> Result<ExportPart> {
    let mut cur = export_cursor(cursor, log.len() as u64, 0, max_bytes)?;
    let mut text = if cursor.is_none() {
        export_prefix()
    } else {
        String::new()
    };
    let first = cur.next;
    if cursor.is_some() && export_mark(&log[(first - 2) as usize]) != cur.mark {
        return Err(export_stale(&format!("log entry {} changed", first - 1)));
    }
    for entry in &log[(first - 1) as usize..cur.end as usize] {
        if export_push(&mut text, &mut cur, first, entry, max_bytes) {
            break;
        }
    }
    Ok(export_finish(text, cur))
}

/// Parses and replays an export, checking it fully before anything is written.
pub fn parse_export(json: &str) -> Result<(State, Vec<LogEntry>)> {
    #[derive(Deserialize)]
    struct Probe {
        format: Option<String>,
        version: Option<u32>,
    }
    let probe: Probe =
        codec::from_json(json).map_err(|e| Error::invalid(format!("export: {e}")))?;
    if probe.format.as_deref() != Some("engram") {
        return Err(Error::invalid(
            "not an engram export (format is not \"engram\")",
        ));
    }
    let version = probe.version.unwrap_or(0);
    if !(OLDEST_VERSION..=EXPORT_VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: EXPORT_VERSION,
        });
    }
    let export: Export =
        codec::from_json(json).map_err(|e| Error::invalid(format!("export: {e}")))?;
    let mut state = State::default();
    for (i, entry) in export.log.iter().enumerate() {
        if entry.seq != i as u64 + 1 {
            return Err(Error::invalid(format!(
                "export: log entry {} out of order",
                i + 1
            )));
        }
        for e in &entry.events {
            state
                .apply(e)
                .map_err(|e| Error::invalid(format!("export: {e}")))?;
        }
    }
    check_tool_outputs(&state)?;
    Ok((state, export.log))
}

/// Checks an imported state the way a stored log was checked as it was
/// written, beyond what replaying its events checks: every message's token
/// count against its text as `count_tokens` counts it now (within a factor
/// of 4, for a tokenizer other than the exporter's; an 8 MB message that
/// kept the count of a short one is refused), retirements pointing to a
/// newer fact (no fact retired by itself, so no cycle), every vector finite
/// and of unit length, recall blocks only on user messages, a distill
/// keeping only items of its block, and the instructions within the
/// limits `set_instructions` has. The error names the item.
pub fn check_import(
    state: &State,
    count_tokens: impl Fn(&str) -> usize,
    ceiling_tokens: usize,
) -> Result<()> {
    let bad = |what: String| Err(Error::invalid(format!("export: {what}")));
    for m in state.messages.iter().filter(|m| !m.erased) {
        let text = crate::types::message::display(&m.content, &m.tool_calls);
        let counted = count_tokens(&text).saturating_add(crate::types::message::FRAMING_TOKENS);
        if m.tokens.saturating_mul(4) < counted || m.tokens > counted.saturating_mul(4) + 64 {
            return bad(format!(
                "message {} says it holds {} tokens, but its text ({} bytes) counts {counted}",
                m.id,
                m.tokens,
                text.len()
            ));
        }
    }
    let unit = |e: &crate::types::embedding::Embedding| {
        let norm = e
            .iter()
            .map(|x| (x as f64) * (x as f64))
            .sum::<f64>()
            .sqrt();
        e.is_empty() || (e.iter().all(f32::is_finite) && (0.98..=1.02).contains(&norm))
    };
    for f in state.facts.iter().filter(|f| !f.erased) {
        if let Some(r) = &f.retired {
            if r.by <= f.id {
                return bad(format!(
                    "fact {} is retired by fact {}: a fact is retired by a newer one",
                    f.id, r.by
                ));
            }
        }
        if !unit(&f.embedding) {
            return bad(format!(
                "fact {}'s embedding is not a finite unit vector",
                f.id
            ));
        }
    }
    for p in &state.passages {
        if !unit(&p.embedding) {
            return bad(format!(
                "passage {}'s embedding is not a finite unit vector",
                p.id
            ));
        }
    }
    for e in state.entities.iter().filter(|e| !e.erased) {
        if !unit(&e.embedding) {
            return bad(format!(
                "entity {}'s embedding is not a finite unit vector",
                e.id
            ));
        }
    }
    for b in &state.recalls {
        let role = state.message(b.message).role;
        if role != crate::types::message::Role::User {
            return bad(format!(
                "recall block {} is on message {}, a {} message: blocks go before user messages",
                b.id,
                b.message,
                role.as_str()
            ));
        }
        if let Some(d) = &b.distilled {
            if let Some(i) = d
                .kept
                .iter()
                .find(|i| !b.items.iter().any(|r| &r.item == *i))
            {
                return bad(format!(
                    "recall block {}'s distill keeps {i:?}, which the block does not hold",
                    b.id
                ));
            }
        }
    }
    if let Some((text, _)) = &state.instructions {
        let tokens = count_tokens(text);
        if text.len() > crate::base::text::MAX_INSTRUCTIONS_BYTES || tokens > ceiling_tokens / 2 {
            return bad(format!(
                "the instructions ({} bytes, {tokens} tokens) are over the limits of this memory \
                 ({} bytes, half the ceiling: {} tokens)",
                text.len(),
                crate::base::text::MAX_INSTRUCTIONS_BYTES,
                ceiling_tokens / 2
            ));
        }
    }
    Ok(())
}

/// Checks that every tool output of an export answers a call waiting for it
/// (made before it, not answered yet), as `add_message` checked when it was
/// added; after a message that was lost (a salvaged log's placeholder) an
/// output cannot be checked and is let through.
pub(super) fn check_tool_outputs(state: &State) -> Result<()> {
    let mut waiting: Vec<&str> = Vec::new();
    let mut after_lost = false;
    for m in &state.messages {
        match &m.tool_call_id {
            Some(id) if m.role == crate::types::message::Role::Tool => {
                match waiting.iter().position(|w| w == id) {
                    Some(at) => {
                        waiting.remove(at);
                    }
                    None if after_lost => {}
                    None => {
                        return Err(Error::invalid(format!(
                            "export: message {} is the output of tool call {id:?}, \
                             but no such call waits for an output there",
                            m.id
                        )))
                    }
                }
            }
            _ => {
                if m.role == crate::types::message::Role::User {
                    waiting.clear();
                }
                after_lost = m.erased && m.tool_calls.is_empty();
                waiting.extend(m.tool_calls.iter().map(|c| c.id.as_str()));
            }
        }
    }
    Ok(())
}

/// Writes an imported log into an empty namespace, atomically, as packs.
pub async fn import<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    log: Vec<LogEntry>,
    pack_entries: u64,
) -> Result<()> {
    if pos.head_raw.is_some() {
        return Err(Error::invalid(
            "import needs an empty namespace: this one has a log",
        ));
    }
    let seq = log.len() as u64;
    let encoded: Vec<Vec<u8>> = log.iter().map(encode_entry).collect();
    let refs: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
    let mut writes: Vec<Write> = Vec::new();
    packs_of(&pos.keys, 1, &refs, pack_entries, &mut writes);
    let origin = encoded.first().map_or(0, |e| header_sum(e));
    let head = Head::current(seq, seq, pos.rewrites, origin);
    writes.push((pos.keys.head(), Some(head.clone())));
    check_headless(store, &pos.keys).await?;
    store.write_if(&pos.keys.head(), None, &writes).await?;
    pos.seq = seq;
    pos.version = FORMAT_VERSION;
    pos.flushed = seq;
    pos.tail.clear();
    pos.head_raw = Some(head);
    pos.last_sum = encoded.last().map(|e| header_sum(e));
    pos.origin = origin;
    Ok(())
}
