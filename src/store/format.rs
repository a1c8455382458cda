//! The stored bytes of log entries and packs: magics, encoding
//! version, checksums, and the encoded entries.

use serde::{Deserialize, Serialize};

use crate::base::bytes::value_checksum;
use crate::base::codec;
use crate::base::error::{Error, Result};
use crate::store::{unknown_or_corrupt, ENTRY_VERSION};
use crate::types::event::Event;

/// What a reader does with each entry, in order: the entry, the checksum of
/// its stored body, and its stored value when it came from a tail key.
/// `Ok(true)` stops the read.
pub(super) type Visit<'a> =
    dyn FnMut(LogEntry, Sum<'_>, Option<Vec<u8>>) -> Result<bool> + Send + 'a;

/// The checksum of an entry's stored body ([`value_checksum`]): read from a
/// tail value's header, computed only when asked for an entry of a pack.
#[derive(Clone, Copy)]
pub(super) enum Sum<'a> {
    Known(u64),
    Of(&'a [u8]),
}

impl Sum<'_> {
    pub(super) fn get(self) -> u64 {
        match self {
            Sum::Known(s) => s,
            Sum::Of(body) => value_checksum(body),
        }
    }
}

/// One committed public call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Position in the log (1, 2, ...).
    pub seq: u64,
    /// The id of the attempt that wrote it (empty before version 2).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// When the call committed (host clock).
    pub at: i64,
    /// What it changed.
    pub events: Vec<Event>,
}

/// FNV-1a 64 of `text`, hex: the checksum of format-2 snapshots.
pub(super) fn checksum(text: &str) -> String {
    let h = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    });
    format!("{h:016x}")
}

pub(super) const ENTRY_MAGIC: &[u8; 4] = b"ELOG";
pub(super) const PACK_MAGIC: &[u8; 4] = b"ESEG";

/// Fields whose string value is stored as a name: the tags of the stored
/// internally tagged enums (`Event`'s `type`, `Resolution`'s `how`).
pub(super) const TAG_FIELDS: &[&str] = &["type", "how"];

/// Encodes a log entry as its stored value.
pub(super) fn encode_entry(entry: &LogEntry) -> Vec<u8> {
    with_header(&codec::to_bytes_tagged(entry, TAG_FIELDS))
}

/// Encodes a new log entry, `seq` at `at` with `events`, as its stored value,
/// and gives its id: a checksum of the encoding of its other fields (its
/// position, time and events), the id then written after them. One encoding
/// serves both, and the same entry always gets the same id.
pub(super) fn encode_new_entry(seq: u64, at: i64, events: &[Event]) -> (String, Vec<u8>) {
    let mut w = codec::encode::StructWriter::new(4, TAG_FIELDS);
    w.field("seq", &seq);
    w.field("at", &at);
    w.field("events", events);
    let id = format!("{:016x}", value_checksum(w.bytes()));
    w.field("id", &id);
    (id, with_header(&w.finish()))
}

/// A log entry's stored value: the header, then the encoded entry `body`.
pub(super) fn with_header(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 13);
    out.extend_from_slice(ENTRY_MAGIC);
    out.push(ENTRY_VERSION);
    out.extend_from_slice(&value_checksum(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Decodes an entry body (no header) that must be entry `seq`.
pub(super) fn decode_body(body: &[u8], seq: u64) -> Result<LogEntry> {
    let entry: LogEntry = codec::from_bytes(body)
        .map_err(|e| unknown_or_corrupt(e, format!("log entry {seq} does not decode")))?;
    if entry.seq != seq {
        return Err(Error::Corrupt(format!(
            "log entry {seq} claims seq {}",
            entry.seq
        )));
    }
    Ok(entry)
}

/// Decodes a stored log entry (format 3).
pub(super) fn decode_entry(raw: &[u8], seq: u64) -> Result<LogEntry> {
    let bad = |why: &str| Error::Corrupt(format!("log entry {seq}: {why}"));
    if raw.len() < 13 || &raw[..4] != ENTRY_MAGIC {
        return Err(bad("not an engram log entry"));
    }
    if raw[4] > ENTRY_VERSION {
        return Err(Error::UnsupportedVersion {
            found: raw[4] as u32,
            supported: ENTRY_VERSION as u32,
        });
    }
    let body = &raw[13..];
    if value_checksum(body).to_le_bytes() != raw[5..13] {
        return Err(bad("does not match its checksum"));
    }
    decode_body(body, seq)
}

/// Encodes entries `first..` (already encoded as stored values) as a pack.
pub(super) fn encode_pack(first: u64, entries: &[&[u8]]) -> Vec<u8> {
    // The entries' own headers are dropped: the pack's checksum covers them.
    let bodies: Vec<&[u8]> = entries.iter().map(|e| &e[13..]).collect();
    encode_pack_bodies(first, &bodies)
}

/// A pack of entry bodies (encoded entries without their headers).
pub(super) fn encode_pack_bodies(first: u64, bodies: &[&[u8]]) -> Vec<u8> {
    let mut rest = Vec::new();
    codec::wire::put_varint(&mut rest, first);
    codec::wire::put_varint(&mut rest, first + bodies.len() as u64 - 1);
    let mut body = Vec::with_capacity(bodies.iter().map(|b| b.len() + 4).sum::<usize>());
    for inner in bodies {
        codec::wire::put_varint(&mut body, inner.len() as u64);
        body.extend_from_slice(inner);
    }
    let mut out = Vec::with_capacity(rest.len() + body.len() + 13);
    out.extend_from_slice(PACK_MAGIC);
    out.push(ENTRY_VERSION);
    out.extend_from_slice(&rest);
    out.extend_from_slice(&value_checksum(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// A pack's range and entry bodies.
pub(super) struct Pack<'a> {
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) bodies: Vec<&'a [u8]>,
}

pub(super) fn parse_pack<'a>(raw: &'a [u8], key: &str) -> Result<Pack<'a>> {
    let bad = |why: String| Error::Corrupt(format!("pack {key}: {why}"));
    if raw.len() < 5 || &raw[..4] != PACK_MAGIC {
        return Err(bad("not an engram pack".into()));
    }
    if raw[4] > ENTRY_VERSION {
        return Err(Error::UnsupportedVersion {
            found: raw[4] as u32,
            supported: ENTRY_VERSION as u32,
        });
    }
    let mut pos = 5;
    let num = |pos: &mut usize| codec::wire::get_varint(raw, pos).map_err(|e| bad(e.to_string()));
    let first = num(&mut pos)?;
    let last = num(&mut pos)?;
    if first == 0 || last < first {
        return Err(bad(format!("range {first}..={last}")));
    }
    let sum = raw
        .get(pos..pos + 8)
        .ok_or_else(|| bad("truncated".into()))?;
    let body = &raw[pos + 8..];
    if value_checksum(body).to_le_bytes() != sum {
        return Err(bad("does not match its checksum".into()));
    }
    let mut bodies = Vec::with_capacity((last - first + 1).min(1 << 16) as usize);
    let mut at = 0;
    while at < body.len() {
        let n = codec::wire::get_varint(body, &mut at).map_err(|e| bad(e.to_string()))? as usize;
        let end = at
            .checked_add(n)
            .filter(|&e| e <= body.len())
            .ok_or_else(|| bad("an entry runs past the end".into()))?;
        bodies.push(&body[at..end]);
        at = end;
    }
    if bodies.len() as u64 != last - first + 1 {
        return Err(bad(format!(
            "holds {} entries for {first}..={last}",
            bodies.len()
        )));
    }
    Ok(Pack {
        first,
        last,
        bodies,
    })
}
