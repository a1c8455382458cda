//! Persistence: the event log in segments, the compare-and-set commit,
//! export and import.
//!
//! Keys of a memory in namespace `ns` (no other keys are read or written):
//!
//! | key                     | value                                                  |
//! |-------------------------|--------------------------------------------------------|
//! | `engram/ns/head`        | JSON `{"version", "seq", "flushed"}`: the log head      |
//! | `engram/ns/log/<seq>`   | one public call (binary), for `flushed < seq <= seq`    |
//! | `engram/ns/seg/<first>` | the calls `first..=last` (binary), immutable            |
//!
//! A call commits its log entry and the new head in one `write_if` guarded by
//! the head it started from. When `segment_entries` entries have gathered
//! after the last segment, the commit that would add one more writes them,
//! with its own, as one segment instead, and deletes their single keys in the
//! same write: every entry is stored exactly once, a commit writes only what
//! is new (and, once per segment, the segment), and there is no snapshot to
//! re-serialise. Opening reads the segments and the tail and replays them.
//! Each entry carries the id of the attempt that wrote it, so a write that
//! landed but reported a conflict or a failure is recognised as landed
//! instead of being made again. Entries and segments carry checksums.
//!
//! Values are in the binary encoding of [`crate::codec`]:
//!
//! - a log entry: `ELOG`, encoding byte ([`ENTRY_VERSION`]: 4; 3 before
//!   one-byte names), FNV-1a 64 of the rest (8 bytes LE), the encoded
//!   [`LogEntry`];
//! - a segment: `ESEG`, encoding byte, first and last seq (LEB128), FNV-1a
//!   64 of the rest, then each entry as a LEB128 length and the encoded
//!   entry (entries of either encoding).
//!
//! Vectors are stored as f16 (see [`vector`]). Memories of format 1 and 2
//! (JSON log entries plus a whole-state snapshot) open as they are and are
//! rewritten into segments by their first commit.

use serde::{Deserialize, Serialize};

use crate::codec;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::host::{Store, StoreError, Write};
use crate::state::State;

/// The format version this build writes. Version 2 added the events of the
/// turn's deferred work, entry ids and snapshot checksums; version 3 stores
/// binary entries in segments and vectors as f16, with no snapshot.
pub const FORMAT_VERSION: u32 = 3;

/// The version of a stored entry's or segment's encoding (the byte after
/// its magic), which format 3 set to 3. Version 4 writes a name used before
/// in one byte and the tags of events as names ([`crate::codec`]): a build
/// of version 3 cannot read it and says so (`UnsupportedVersion`, not
/// `Corrupt`); this build reads both, even mixed in one segment. The
/// namespace's layout (head, segments, tail) is still `FORMAT_VERSION`.
pub const ENTRY_VERSION: u8 = 4;

/// The version of the export document this build writes: its JSON shape is
/// the same as at format 2 (what changed is how values are stored), so an
/// export still imports into builds of format 2.
pub const EXPORT_VERSION: u32 = 2;

/// The oldest format version this build reads.
pub const OLDEST_VERSION: u32 = 1;

/// Checks a namespace: 1 to 128 characters of letters, digits and `._-:@`.
/// A namespace may not start with `.` (so `.` and `..` never reach a store
/// key as path segments).
pub fn check_namespace(ns: &str) -> Result<()> {
    let ok = !ns.is_empty()
        && ns.len() <= 128
        && !ns.starts_with('.')
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "namespace {ns:?}: use 1 to 128 letters, digits or ._-:@, not starting with '.' \
             (no '/', no '.' or '..')"
        )))
    }
}

/// The keys of one namespace.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys of namespace `ns` (checked).
    pub fn new(ns: &str) -> Result<Keys> {
        check_namespace(ns)?;
        Ok(Keys {
            prefix: format!("engram/{ns}/"),
        })
    }
    /// The head key.
    pub fn head(&self) -> String {
        format!("{}head", self.prefix)
    }
    /// The snapshot key (formats 1 and 2 only).
    pub fn snapshot(&self) -> String {
        format!("{}snapshot", self.prefix)
    }
    /// The key of log entry `seq`.
    pub fn log(&self, seq: u64) -> String {
        format!("{}log/{seq:020}", self.prefix)
    }
    /// The key of the segment starting at `first`.
    pub fn segment(&self, first: u64) -> String {
        format!("{}seg/{first:020}", self.prefix)
    }
    /// The prefix of every segment key.
    pub fn segments(&self) -> String {
        format!("{}seg/", self.prefix)
    }
    /// The key of the stored meaning graph of one kind of item (`facts`,
    /// `passages`, `entities`): derived data, see [`save_graphs`].
    pub fn graph(&self, kind: &str) -> String {
        format!("{}ix/{kind}", self.prefix)
    }
    /// The key of the stored word indexes (derived data, see [`save_words`]).
    pub fn words(&self) -> String {
        format!("{}ix/words", self.prefix)
    }
    /// The prefix of every key of the namespace.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Head {
    version: u32,
    seq: u64,
    /// Last entry held in segments (format 3).
    #[serde(default)]
    flushed: u64,
    /// Seq of the snapshot (formats 1 and 2).
    #[serde(default, skip_serializing)]
    snapshot: u64,
    /// Checksum of the snapshot's state (format 2).
    #[serde(default, skip_serializing)]
    sum: Option<String>,
    /// How many times erasure rewrote stored entries (format 3): a handle
    /// that sees it change reloads instead of catching up.
    #[serde(default, skip_serializing_if = "is_zero")]
    rewrites: u64,
    /// Which log this is: the checksum of its first entry as first written
    /// (0: a head written before this field). A namespace destroyed and
    /// written anew has another origin, so a handle that applied the old
    /// log reloads instead of applying the new one's entries on top.
    #[serde(default, skip_serializing_if = "is_zero")]
    origin: u64,
}

impl Head {
    /// The stored head of a format-3 log, as bytes.
    fn current(seq: u64, flushed: u64, rewrites: u64, origin: u64) -> Vec<u8> {
        to_json(&Head {
            version: FORMAT_VERSION,
            seq,
            flushed,
            snapshot: 0,
            sum: None,
            rewrites,
            origin,
        })
        .into_bytes()
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
fn checksum(text: &str) -> String {
    let h = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    });
    format!("{h:016x}")
}

/// The checksum of stored entries and segments (format 3): FNV-1a's step
/// over 8-byte little-endian words, then the remaining bytes and the length.
/// Each step is a bijection of the running value, so any change confined to
/// one word is always caught; it catches damage and edits, not a forger. It
/// runs at memory speed (a byte-wise FNV was 7 % of opening a memory).
pub fn value_checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x100000001b3;
    let mut h = 0xcbf29ce484222325u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().expect("8 bytes"))).wrapping_mul(PRIME);
    }
    for &b in words.remainder() {
        h = (h ^ b as u64).wrapping_mul(PRIME);
    }
    (h ^ bytes.len() as u64).wrapping_mul(PRIME)
}

const ENTRY_MAGIC: &[u8; 4] = b"ELOG";
const SEGMENT_MAGIC: &[u8; 4] = b"ESEG";

/// Where this handle stands in the log.
#[derive(Debug, Clone)]
pub struct LogPosition {
    /// Keys of the namespace.
    pub keys: Keys,
    /// Last applied entry.
    pub seq: u64,
    /// The format of what is stored (a commit to format 1 or 2 rewrites it).
    pub version: u32,
    /// Last entry held in segments.
    pub flushed: u64,
    /// Erasures that rewrote stored entries, as the head counts them.
    pub rewrites: u64,
    /// The head value as read (the compare-and-set guard).
    pub head_raw: Option<Vec<u8>>,
    /// The encoded entries `flushed + 1..=seq`, as stored under their own
    /// keys (so the commit that writes a segment need not read them back).
    tail: Vec<Vec<u8>>,
    /// Rows of each meaning graph (facts, passages, entities) as last read
    /// or saved, so [`save_graphs`] writes one only when it grew enough.
    graphs: [usize; 3],
    /// Documents of the word indexes as last read or saved (0: none usable
    /// is stored), so [`save_words`] writes them only when they grew enough.
    words: usize,
    /// The checksum of entry `seq`'s stored body, when this handle knows it
    /// (it wrote or read that entry): what a saved word index is bound to.
    last_sum: Option<u64>,
    /// The log's origin as its head says (see `Head::origin`).
    origin: u64,
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("{what}: {e}"))
}

fn check_version(v: u32) -> Result<()> {
    if (OLDEST_VERSION..=FORMAT_VERSION).contains(&v) {
        Ok(())
    } else {
        Err(Error::UnsupportedVersion {
            found: v,
            supported: FORMAT_VERSION,
        })
    }
}

fn text(raw: Vec<u8>) -> Result<String> {
    String::from_utf8(raw).map_err(|e| corrupt("stored value", e))
}

fn to_json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("engram types serialise")
}

async fn read_head<S: Store>(store: &S, keys: &Keys) -> Result<(Option<Vec<u8>>, Head)> {
    let raw = store.get(&keys.head()).await?;
    let head = parse_head(raw.as_deref())?;
    Ok((raw, head))
}

/// The head stored as `raw` (none: an empty namespace), checked.
fn parse_head(raw: Option<&[u8]>) -> Result<Head> {
    let head = match raw {
        None => Head {
            version: FORMAT_VERSION,
            seq: 0,
            flushed: 0,
            snapshot: 0,
            sum: None,
            rewrites: 0,
            origin: 0,
        },
        Some(r) => codec::from_json_slice::<Head>(r).map_err(|e| corrupt("head", e))?,
    };
    check_version(head.version)?;
    if head.version >= 3 && head.flushed > head.seq {
        return Err(Error::Corrupt(format!(
            "head: {} entries in segments but the log ends at {}",
            head.flushed, head.seq
        )));
    }
    Ok(head)
}

/// An event type this build does not know was written by a newer build:
/// `UnsupportedVersion`, not `Corrupt`.
fn unknown_or_corrupt(e: impl std::fmt::Display, what: String) -> Error {
    let e = e.to_string();
    if e.contains("unknown variant") {
        Error::UnsupportedVersion {
            found: FORMAT_VERSION + 1,
            supported: FORMAT_VERSION,
        }
    } else {
        Error::Corrupt(format!("{what}: {e}"))
    }
}

/// Encodes a log entry as its stored value.
fn encode_entry(entry: &LogEntry) -> Vec<u8> {
    with_header(&codec::to_bytes(entry))
}

/// Encodes a new log entry, `seq` at `at` with `events`, as its stored value,
/// and gives its id: a checksum of the encoding of its other fields (its
/// position, time and events), the id then written after them. One encoding
/// serves both, and the same entry always gets the same id.
fn encode_new_entry(seq: u64, at: i64, events: &[Event]) -> (String, Vec<u8>) {
    let mut w = codec::StructWriter::new(4);
    w.field("seq", &seq);
    w.field("at", &at);
    w.field("events", events);
    let id = format!("{:016x}", value_checksum(w.bytes()));
    w.field("id", &id);
    (id, with_header(&w.finish()))
}

/// A log entry's stored value: the header, then the encoded entry `body`.
fn with_header(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 13);
    out.extend_from_slice(ENTRY_MAGIC);
    out.push(ENTRY_VERSION);
    out.extend_from_slice(&value_checksum(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Decodes an entry body (no header) that must be entry `seq`.
fn decode_body(body: &[u8], seq: u64) -> Result<LogEntry> {
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
fn decode_entry(raw: &[u8], seq: u64) -> Result<LogEntry> {
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

/// Encodes entries `first..` (already encoded as stored values) as a segment.
fn encode_segment(first: u64, entries: &[&[u8]]) -> Vec<u8> {
    // The entries' own headers are dropped: the segment's checksum covers them.
    let bodies: Vec<&[u8]> = entries.iter().map(|e| &e[13..]).collect();
    encode_segment_bodies(first, &bodies)
}

/// A segment of entry bodies (encoded entries without their headers).
fn encode_segment_bodies(first: u64, bodies: &[&[u8]]) -> Vec<u8> {
    let mut rest = Vec::new();
    codec::put_varint(&mut rest, first);
    codec::put_varint(&mut rest, first + bodies.len() as u64 - 1);
    let mut body = Vec::with_capacity(bodies.iter().map(|b| b.len() + 4).sum::<usize>());
    for inner in bodies {
        codec::put_varint(&mut body, inner.len() as u64);
        body.extend_from_slice(inner);
    }
    let mut out = Vec::with_capacity(rest.len() + body.len() + 13);
    out.extend_from_slice(SEGMENT_MAGIC);
    out.push(ENTRY_VERSION);
    out.extend_from_slice(&rest);
    out.extend_from_slice(&value_checksum(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// A segment's range and entry bodies.
struct Segment<'a> {
    first: u64,
    last: u64,
    bodies: Vec<&'a [u8]>,
}

fn parse_segment<'a>(raw: &'a [u8], key: &str) -> Result<Segment<'a>> {
    let bad = |why: String| Error::Corrupt(format!("segment {key}: {why}"));
    if raw.len() < 5 || &raw[..4] != SEGMENT_MAGIC {
        return Err(bad("not an engram segment".into()));
    }
    if raw[4] > ENTRY_VERSION {
        return Err(Error::UnsupportedVersion {
            found: raw[4] as u32,
            supported: ENTRY_VERSION as u32,
        });
    }
    let mut pos = 5;
    let num = |pos: &mut usize| codec::get_varint(raw, pos).map_err(|e| bad(e.to_string()));
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
        let n = codec::get_varint(body, &mut at).map_err(|e| bad(e.to_string()))? as usize;
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
    Ok(Segment {
        first,
        last,
        bodies,
    })
}

/// How a read of the log ended: all of it was read, or another writer
/// gathered the tail into a segment after the head was read (the caller
/// reads the head again and goes on from `next`, the first entry it did not
/// get: entries never change, only where they are stored). `missing` names
/// the key that was not there: when the head has not moved, nobody moved
/// it, and the log is damaged there.
enum Read {
    Done,
    Moved { next: u64, missing: String },
}

/// `e` with the stored key it came from named first (damage is reported by
/// key, so a person can find the value).
fn at_key(e: Error, key: &str) -> Error {
    match e {
        Error::Corrupt(m) => Error::Corrupt(format!("{key}: {m}")),
        e => e,
    }
}

/// What a reader does with each entry, in order: the entry, the checksum of
/// its stored body, and its stored value when it came from a tail key.
/// `Ok(true)` stops the read.
type Visit<'a> = dyn FnMut(LogEntry, Sum<'_>, Option<Vec<u8>>) -> Result<bool> + Send + 'a;

/// The checksum of an entry's stored body ([`value_checksum`]): read from a
/// tail value's header, computed only when asked for an entry of a segment.
#[derive(Clone, Copy)]
enum Sum<'a> {
    Known(u64),
    Of(&'a [u8]),
}

impl Sum<'_> {
    fn get(self) -> u64 {
        match self {
            Sum::Known(s) => s,
            Sum::Of(body) => value_checksum(body),
        }
    }
}

/// The body checksum in a stored entry's header (the value is checked).
fn header_sum(value: &[u8]) -> u64 {
    u64::from_le_bytes(value[5..13].try_into().expect("8 bytes"))
}

/// Reads entries `from..=to` of a format-3 log whose head is `head`: the
/// segments that hold them, then the tail keys, handing each to `each` as
/// it is decoded (so a load never holds the decoded log and the state
/// together).
async fn read_range<S: Store>(
    store: &S,
    keys: &Keys,
    head: &Head,
    from: u64,
    to: u64,
    each: &mut Visit<'_>,
) -> Result<Read> {
    let mut next = from;
    let stop = to.min(head.flushed);
    if from <= stop {
        let prefix = keys.segments();
        let mut starts: Vec<u64> = Vec::new();
        for key in store.list(&prefix).await? {
            let first = key[prefix.len()..]
                .parse::<u64>()
                .map_err(|_| Error::Corrupt(format!("segment key {key} is not a number")))?;
            if first <= head.flushed {
                starts.push(first);
            }
        }
        starts.sort_unstable();
        // The segment holding `from` is the last one starting at or before it.
        let mut i = starts.partition_point(|&s| s <= from).saturating_sub(1);
        while next <= stop {
            let Some(&first) = starts.get(i).filter(|&&first| first <= next) else {
                // Segments are contiguous: the one missing starts at `next`.
                let missing = keys.segment(next);
                return Ok(Read::Moved { next, missing });
            };
            i += 1;
            let key = keys.segment(first);
            let Some(raw) = store.get(&key).await? else {
                return Ok(Read::Moved { next, missing: key });
            };
            let seg = parse_segment(&raw, &key)?;
            if seg.first != first {
                return Err(Error::Corrupt(format!(
                    "segment {key} claims to start at {}",
                    seg.first
                )));
            }
            if seg.last < next {
                continue;
            }
            let last = seg.last.min(stop);
            while next <= last {
                let body = seg.bodies[(next - first) as usize];
                let entry = decode_body(body, next).map_err(|e| at_key(e, &key))?;
                next += 1;
                if each(entry, Sum::Of(body), None)? {
                    return Ok(Read::Done);
                }
            }
        }
    }
    for seq in next.max(head.flushed + 1)..=to {
        let key = keys.log(seq);
        let Some(raw) = store.get(&key).await? else {
            return Ok(Read::Moved {
                next: seq,
                missing: key,
            });
        };
        let entry = decode_entry(&raw, seq).map_err(|e| at_key(e, &key))?;
        let sum = header_sum(&raw);
        if each(entry, Sum::Known(sum), Some(raw))? {
            return Ok(Read::Done);
        }
    }
    Ok(Read::Done)
}

/// Refuses to read a namespace whose head is gone while its log is there:
/// opening it as empty would hide the memory and the next commit would
/// overwrite it.
async fn check_headless<S: Store>(store: &S, keys: &Keys) -> Result<()> {
    for key in [keys.log(1), keys.snapshot()] {
        if store.get(&key).await?.is_some() {
            return Err(headless(&key));
        }
    }
    if let Some(key) = store.list(&keys.segments()).await?.into_iter().next() {
        return Err(headless(&key));
    }
    Ok(())
}

fn headless(key: &str) -> Error {
    Error::Corrupt(format!(
        "the head is missing but {key} exists: refusing to open this memory as empty \
         (restore the head, or import an export into a new namespace)"
    ))
}

/// Times a read re-reads the head when other writers keep moving the tail
/// into segments under it.
const READ_ATTEMPTS: u32 = 8;

/// Hands every entry `from..=head.seq` to `each`, in order (starting from a
/// head already read, if given). Returns the head they were read under.
async fn visit_log<S: Store>(
    store: &S,
    keys: &Keys,
    mut first: Option<(Option<Vec<u8>>, Head)>,
    mut from: u64,
    each: &mut Visit<'_>,
) -> Result<(Option<Vec<u8>>, Head)> {
    // The head of the previous attempt and the key it found missing.
    let mut moved: Option<(Option<Vec<u8>>, String)> = None;
    for _ in 0..READ_ATTEMPTS {
        let (raw, head) = match first.take() {
            Some(h) => h,
            None => read_head(store, keys).await?,
        };
        if let Some((before, missing)) = moved.take() {
            if before == raw {
                // Nobody moved the log: the value is gone.
                return Err(Error::Corrupt(format!(
                    "{missing} is missing: log entry {from} cannot be read"
                )));
            }
        }
        if raw.is_none() {
            if let Err(headless) = check_headless(store, keys).await {
                // Another writer's first commit may have landed between the
                // head read and this check (a new memory created by two
                // hosts at once): its head is there now. Read again.
                if read_head(store, keys).await?.0.is_some() {
                    continue;
                }
                return Err(headless);
            }
        }
        if head.version < 3 {
            legacy::read_entries(store, keys, from, head.seq, each).await?;
            return Ok((raw, head));
        }
        match read_range(store, keys, &head, from, head.seq, each).await? {
            Read::Done => return Ok((raw, head)),
            Read::Moved { next, missing } => {
                from = next;
                moved = Some((raw, missing));
            }
        }
    }
    Err(Error::Busy(format!(
        "other writers moved the log {READ_ATTEMPTS} times while it was read"
    )))
}

/// The stored values of the tail after `flushed` up to `seq`, from the
/// values gathered while reading (`(seq, value)`), or none when some are
/// missing (a commit that needs them then reads them).
fn tail_cache(mut seen: Vec<(u64, Vec<u8>)>, flushed: u64, seq: u64) -> Vec<Vec<u8>> {
    seen.retain(|(s, _)| *s > flushed && *s <= seq);
    let complete = seen.len() as u64 == seq - flushed
        && seen
            .iter()
            .enumerate()
            .all(|(i, (s, _))| *s == flushed + 1 + i as u64);
    if complete {
        seen.into_iter().map(|(_, v)| v).collect()
    } else {
        Vec::new()
    }
}

/// Loads a namespace: its segments and tail (or, for formats 1 and 2, its
/// snapshot and the entries after it). Returns the state, the position, and
/// why stored data was not used as is (a damaged format-2 snapshot: the
/// state is then rebuilt from the whole log; a stored meaning graph that
/// does not fit: search is exact until maintain links the rows again; the
/// caller reports them).
pub async fn load<S: Store>(store: &S, keys: Keys) -> Result<(State, LogPosition, Vec<String>)> {
    let (raw, head) = read_head(store, &keys).await?;
    let mut first = Some((raw.clone(), head.clone()));
    if head.version < 3 && raw.is_some() {
        let (state, warning) = legacy::load(store, &keys).await?;
        let (raw, head) = read_head(store, &keys).await?;
        first = None;
        if head.version < 3 {
            let seq = head.seq;
            let pos = LogPosition {
                keys,
                seq,
                version: head.version,
                flushed: 0,
                rewrites: 0,
                head_raw: raw,
                tail: Vec::new(),
                graphs: [0; 3],
                words: 0,
                last_sum: None,
                origin: 0,
            };
            let mut state = state;
            let mut pos = pos;
            let mut warnings: Vec<String> = warning.into_iter().collect();
            warnings.extend(load_graphs(store, &mut state, &mut pos).await);
            return Ok((state, pos, warnings));
        }
    }
    let mut warnings = Vec::new();
    // The stored word indexes, put in place once the entry they were saved
    // after is applied (building them until then is skipped).
    let mut words = match raw.is_some() {
        true => match read_words(store, &keys, &head).await {
            Ok(w) => w,
            Err(why) => {
                warnings.push(words_warning(&why));
                None
            }
        },
        false => None,
    };
    let stored_words = words.is_some();
    let mut state = State {
        words_deferred: stored_words,
        ..State::default()
    };
    let mut seen = Vec::new();
    let mut last_sum = None;
    let mut restored = false;
    let (raw, head) = visit_log(store, &keys, first, 1, &mut |entry, sum, value| {
        apply_entry(&mut state, &entry)?;
        let at_head = entry.seq == head.seq;
        if at_head {
            last_sum = Some((entry.seq, sum.get()));
        }
        if let Some(w) = words.take_if(|w| w.seq == entry.seq) {
            let sum = match at_head {
                true => last_sum.map_or(0, |(_, s)| s),
                false => sum.get(),
            };
            match w.restore(&mut state, sum) {
                Ok(()) => restored = true,
                Err(why) => {
                    warnings.push(words_warning(&why));
                    state.rebuild_word_indexes();
                }
            }
        }
        if let Some(v) = value {
            seen.push((entry.seq, v));
        }
        Ok(false)
    })
    .await?;
    if state.words_deferred {
        // (Not reached: read_words refuses an index saved after the head.)
        warnings.push(words_warning("saved after the end of the log"));
        state.rebuild_word_indexes();
    }
    let docs = state.fact_index.len() + state.passage_index.len();
    if !stored_words && warnings.is_empty() && docs >= WORDS_MIN_DOCS {
        warnings.push(words_warning("not stored"));
    }
    let pos = LogPosition {
        keys,
        seq: head.seq,
        version: head.version,
        flushed: head.flushed,
        rewrites: head.rewrites,
        tail: tail_cache(seen, head.flushed, head.seq),
        head_raw: raw,
        graphs: [0; 3],
        words: match restored {
            true => docs,
            false => 0,
        },
        last_sum: last_sum.filter(|(s, _)| *s == head.seq).map(|(_, s)| s),
        origin: head.origin,
    };
    check_nothing_past_head(store, &pos).await?;
    let mut pos = pos;
    warnings.extend(load_graphs(store, &mut state, &mut pos).await);
    Ok((state, pos, warnings))
}

/// A log entry stored past the head means the head was rolled back (a
/// store restored from an older backup of its head alone, say): the memory
/// would show the log cut short and refuse its next write. `Corrupt`, so
/// `open` says how to salvage it, unless the head moved meanwhile (another
/// writer's commit, which writes its entry and the head at once).
async fn check_nothing_past_head<S: Store>(store: &S, pos: &LogPosition) -> Result<()> {
    if pos.head_raw.is_none() {
        return Ok(());
    }
    let next = pos.seq + 1;
    if store.get(&pos.keys.log(next)).await?.is_none() {
        return Ok(());
    }
    if store.get(&pos.keys.head()).await? != pos.head_raw {
        return Ok(());
    }
    Err(Error::Corrupt(format!(
        "log entry {next} is stored past the head (entry {}): the head was rolled back \
         or the log damaged",
        pos.seq
    )))
}

/// What a salvage read found at one place of the log: an entry, or a
/// stretch of entries that could not be read.
#[derive(Debug, Clone)]
pub enum Piece {
    /// An entry that read clean.
    Entry(LogEntry),
    /// Entries `first..=last`, which were to be found under `key`, could
    /// not be read (`why`).
    Lost {
        /// The stored key that should hold them.
        key: String,
        /// The first entry lost.
        first: u64,
        /// The last entry lost.
        last: u64,
        /// Why they could not be read.
        why: String,
    },
}

/// Reads every entry of a namespace that can be read, for
/// `Memory::open_salvage`: the head must read, then each segment, segment
/// entry and tail key that is missing, truncated, fails its checksum or does
/// not decode is a [`Piece::Lost`] instead of an error, and the read goes on
/// with the next. A store that fails, or a value of a newer build
/// (`UnsupportedVersion`), still fails the read. Formats 1 and 2 are read
/// entry by entry from their log (their snapshot is not used). Nothing is
/// written.
pub async fn read_salvage<S: Store>(store: &S, keys: Keys) -> Result<(LogPosition, Vec<Piece>)> {
    let (raw, head) = read_head(store, &keys).await?;
    if raw.is_none() {
        check_headless(store, &keys).await?;
    }
    let mut pieces = Vec::new();
    let lost = |key: String, first: u64, last: u64, e: Error| -> Result<Piece> {
        match e {
            Error::Corrupt(why) => Ok(Piece::Lost {
                key,
                first,
                last,
                why,
            }),
            e => Err(e),
        }
    };
    let missing = || Error::Corrupt("missing".into());
    if head.version < 3 {
        for seq in 1..=head.seq {
            let key = keys.log(seq);
            let entry = match store.get(&key).await? {
                None => Err(missing()),
                Some(raw) => text(raw).and_then(|t| {
                    let entry: LogEntry = codec::from_json(&t).map_err(|e| {
                        unknown_or_corrupt(e, format!("log entry {seq} does not parse"))
                    })?;
                    match entry.seq == seq {
                        true => Ok(entry),
                        false => Err(Error::Corrupt(format!(
                            "log entry {seq} claims seq {}",
                            entry.seq
                        ))),
                    }
                }),
            };
            pieces.push(match entry {
                Ok(entry) => Piece::Entry(entry),
                Err(e) => lost(key, seq, seq, e)?,
            });
        }
    } else {
        let prefix = keys.segments();
        let mut starts: Vec<u64> = store
            .list(&prefix)
            .await?
            .iter()
            .filter_map(|k| k[prefix.len()..].parse::<u64>().ok())
            .filter(|&first| first >= 1 && first <= head.flushed)
            .collect();
        starts.sort_unstable();
        starts.dedup();
        let mut next = 1;
        for (i, &first) in starts.iter().enumerate() {
            if first < next {
                continue;
            }
            if first > next {
                pieces.push(lost(keys.segment(next), next, first - 1, missing())?);
            }
            // Where the next segment starts: this one cannot reach past it.
            let end = starts.get(i + 1).map_or(head.flushed, |&n| n - 1);
            let key = keys.segment(first);
            let raw = store.get(&key).await?;
            let seg = match raw.as_deref().ok_or_else(missing).and_then(|raw| {
                let seg = parse_segment(raw, &key)?;
                match seg.first == first {
                    true => Ok(seg),
                    false => Err(Error::Corrupt(format!("claims to start at {}", seg.first))),
                }
            }) {
                Ok(seg) => seg,
                Err(e) => {
                    pieces.push(lost(key, first, end, e)?);
                    next = end + 1;
                    continue;
                }
            };
            let last = seg.last.min(end);
            for seq in first..=last {
                let body = seg.bodies[(seq - first) as usize];
                pieces.push(match decode_body(body, seq) {
                    Ok(entry) => Piece::Entry(entry),
                    Err(e) => lost(key.clone(), seq, seq, e)?,
                });
            }
            next = last + 1;
        }
        if next <= head.flushed {
            pieces.push(lost(keys.segment(next), next, head.flushed, missing())?);
        }
        for seq in head.flushed + 1..=head.seq {
            let key = keys.log(seq);
            let entry = match store.get(&key).await? {
                None => Err(missing()),
                Some(raw) => decode_entry(&raw, seq),
            };
            pieces.push(match entry {
                Ok(entry) => Piece::Entry(entry),
                Err(e) => lost(key, seq, seq, e)?,
            });
        }
    }
    let pos = LogPosition {
        keys,
        seq: head.seq,
        version: head.version,
        flushed: head.flushed,
        rewrites: head.rewrites,
        head_raw: raw,
        tail: Vec::new(),
        graphs: [0; 3],
        words: 0,
        last_sum: None,
        origin: head.origin,
    };
    Ok((pos, pieces))
}

/// An export of `log` (entries `1..`, in order), as [`export`] writes one.
pub fn export_entries(log: Vec<LogEntry>) -> String {
    to_json(&Export {
        format: "engram".into(),
        version: EXPORT_VERSION,
        log,
    })
}

fn apply_entry(state: &mut State, entry: &LogEntry) -> Result<()> {
    for e in &entry.events {
        state
            .apply(e)
            .map_err(|e| Error::Corrupt(format!("log entry {}: {e}", entry.seq)))?;
    }
    Ok(())
}

/// The key names of the meaning graphs, in [`State::meaning_indexes`]' order.
const GRAPHS: [&str; 3] = ["facts", "passages", "entities"];

/// Reads the stored meaning graphs into `state`'s indexes (derived data: a
/// graph that is missing, unreadable or built on other rows is not used,
/// search over those rows is exact, and `maintain` links them again).
/// Returns why a stored graph was not used.
async fn load_graphs<S: Store>(store: &S, state: &mut State, pos: &mut LogPosition) -> Vec<String> {
    let mut warnings = Vec::new();
    for (kind, (name, index)) in GRAPHS.iter().zip(state.meaning_indexes_mut()).enumerate() {
        pos.graphs[kind] = 0;
        if index.len() < crate::recall::vector::GRAPH_MIN_ROWS {
            continue;
        }
        match store.get(&pos.keys.graph(name)).await {
            Ok(None) => {}
            Ok(Some(bytes)) => match index.graph_from_bytes(&bytes) {
                Ok(()) => pos.graphs[kind] = index.graph_stats().rows,
                Err(e) => warnings.push(format!(
                    "the stored meaning graph of {name} was not used ({}): search over them is exact until maintain links them again",
                    e.0
                )),
            },
            Err(e) => warnings.push(format!(
                "the stored meaning graph of {name} could not be read ({e}): search over them is exact until maintain links them again"
            )),
        }
    }
    warnings
}

/// Writes each meaning graph that grew by at least
/// [`crate::recall::vector::GRAPH_MIN_ROWS`] rows or an eighth since it was
/// last read or written (so the bytes written over a memory's life stay a
/// small multiple of its graph's size), with a plain `put` outside the log:
/// a graph is derived data, checked against the rows when it is read, and
/// every handle builds the same one from the same rows. Returns why a graph
/// could not be written (the next call tries again).
pub async fn save_graphs<S: Store>(store: &S, pos: &mut LogPosition, state: &State) -> Vec<String> {
    let mut warnings = Vec::new();
    for (kind, (name, index)) in GRAPHS.iter().zip(state.meaning_indexes()).enumerate() {
        let rows = index.graph_stats().rows;
        if rows < pos.graphs[kind] {
            // Rebuilt since (an erasure): the stored graph no longer fits.
            pos.graphs[kind] = 0;
        }
        let saved = pos.graphs[kind];
        let step = crate::recall::vector::GRAPH_MIN_ROWS.max(saved / 8);
        if rows == 0 || (saved > 0 && rows < saved + step) || rows == saved {
            continue;
        }
        match store.put(&pos.keys.graph(name), &index.to_bytes()).await {
            Ok(()) => pos.graphs[kind] = rows,
            Err(e) => warnings.push(format!(
                "the meaning graph of {name} could not be saved ({e}): the next call tries again"
            )),
        }
    }
    warnings
}

/// Word indexes smaller than this (documents of facts and passages) are
/// not stored: building them at load takes a few milliseconds.
pub const WORDS_MIN_DOCS: usize = 4096;

const WORDS_MAGIC: &[u8; 4] = b"EWIX";
/// The stored word index's layout and the search terms in it: any change to
/// [`crate::recall::bm25::terms`] (stop words, stemming) bumps it, so a copy
/// of other terms is rebuilt rather than searched with the wrong words.
/// Version 3 writes document ids and postings as differences (about half
/// the bytes of version 2, which is rebuilt from the log once).
const WORDS_VERSION: u8 = 3;

/// Why stored word indexes were not used, as a storage warning.
fn words_warning(why: &str) -> String {
    format!("the stored word index was not used ({why}): built from the log instead")
}

/// Word indexes as stored: saved after entry `seq` (whose stored body had
/// checksum `sum`), their bytes not read yet.
struct StoredWords {
    seq: u64,
    sum: u64,
    body: Vec<u8>,
}

impl StoredWords {
    /// Puts the indexes in place in `state`, which has applied entries up to
    /// `seq`, whose body has checksum `sum`.
    fn restore(self, state: &mut State, sum: u64) -> core::result::Result<(), String> {
        if sum != self.sum {
            return Err(format!("saved after another entry {}", self.seq));
        }
        let mut at = 0;
        let facts = crate::recall::bm25::Bm25::read(&self.body, &mut at)?;
        let passages = crate::recall::bm25::Bm25::read(&self.body, &mut at)?;
        if at != self.body.len() {
            return Err("bytes left over".into());
        }
        state
            .restore_word_indexes(facts, passages)
            .map_err(|e| e.to_string())
    }
}

/// The stored word indexes of a format-3 namespace whose head is `head`:
/// none when there are none; an error saying why they cannot be used
/// (unreadable, damaged, saved before an erasure rewrote the log or after
/// its end).
async fn read_words<S: Store>(
    store: &S,
    keys: &Keys,
    head: &Head,
) -> core::result::Result<Option<StoredWords>, String> {
    if head.version < 3 {
        return Ok(None);
    }
    let raw = match store.get(&keys.words()).await {
        Ok(Some(raw)) => raw,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("could not be read: {e}")),
    };
    if raw.len() < 5 || &raw[..4] != WORDS_MAGIC || raw[4] != WORDS_VERSION {
        return Err("not an engram word index of this version".into());
    }
    let mut at = 5;
    let num = |at: &mut usize| codec::get_varint(&raw, at).map_err(|e| e.to_string());
    let seq = num(&mut at)?;
    let rewrites = num(&mut at)?;
    let word = |at: usize| -> core::result::Result<u64, String> {
        raw.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .ok_or_else(|| "truncated".to_string())
    };
    let sum = word(at)?;
    let check = word(at + 8)?;
    let body = &raw[at + 16..];
    if value_checksum(body) != check {
        return Err("does not match its checksum".into());
    }
    if rewrites != head.rewrites {
        return Err("saved before an erasure rewrote the log".into());
    }
    if seq == 0 || seq > head.seq {
        return Err(format!(
            "saved after entry {seq}, past the log's end at {}",
            head.seq
        ));
    }
    Ok(Some(StoredWords {
        seq,
        sum,
        body: body.to_vec(),
    }))
}

/// Writes the word indexes of `state` (at `pos`) when they hold at least
/// [`WORDS_MIN_DOCS`] documents and grew by that many or an eighth since
/// last read or written. Like the meaning graphs they are derived data, so
/// a stale, damaged or missing copy is rebuilt at load (and reported); they
/// are bound to the log entry they were saved after (its position, its
/// body's checksum and the erasures so far) and written with `write_if` on
/// the head this handle holds, so a copy never outlives an erasure that
/// rewrote the log (which deletes it in the same write). Returns why they
/// could not be written (the next call tries again).
pub async fn save_words<S: Store>(store: &S, pos: &mut LogPosition, state: &State) -> Vec<String> {
    let docs = state.fact_index.len() + state.passage_index.len();
    let saved = pos.words;
    let step = WORDS_MIN_DOCS.max(saved / 8);
    if pos.version < 3 || state.words_deferred || docs < WORDS_MIN_DOCS {
        return Vec::new();
    }
    if saved > 0 && docs < saved + step {
        return Vec::new();
    }
    let (Some(sum), Some(head)) = (pos.last_sum, pos.head_raw.as_deref()) else {
        return Vec::new();
    };
    let mut body = Vec::new();
    state.fact_index.write(&mut body);
    state.passage_index.write(&mut body);
    let mut value = Vec::with_capacity(body.len() + 40);
    value.extend_from_slice(WORDS_MAGIC);
    value.push(WORDS_VERSION);
    codec::put_varint(&mut value, pos.seq);
    codec::put_varint(&mut value, pos.rewrites);
    value.extend_from_slice(&sum.to_le_bytes());
    value.extend_from_slice(&value_checksum(&body).to_le_bytes());
    value.extend_from_slice(&body);
    let writes = [(pos.keys.words(), Some(value))];
    match store.write_if(&pos.keys.head(), Some(head), &writes).await {
        Ok(()) => {
            pos.words = docs;
            Vec::new()
        }
        // Another writer moved the log: a later call saves.
        Err(StoreError::Conflict) => Vec::new(),
        Err(e) => vec![format!(
            "the word index could not be saved ({e}): the next call tries again"
        )],
    }
}

/// Applies the entries other writers committed since `pos`. Returns whether
/// anything was applied.
pub async fn catch_up<S: Store>(
    store: &S,
    state: &mut State,
    pos: &mut LogPosition,
) -> Result<bool> {
    // The head unchanged (the common case) needs no parsing.
    let raw = store.get(&pos.keys.head()).await?;
    if raw == pos.head_raw {
        return Ok(false);
    }
    let head = parse_head(raw.as_deref())?;
    if raw.is_none()
        || head.seq < pos.seq
        || head.version != pos.version
        || head.version < 3
        || head.rewrites != pos.rewrites
        || head.origin != pos.origin
    {
        // Another handle destroyed the namespace (an empty load; a head gone
        // with entries left is `Corrupt` there) and perhaps wrote another
        // log in it (another origin, or a shorter log), another build
        // rewrote the format, or an erasure rewrote entries this handle has
        // applied: read it all again.
        let (s, p, _) = load(store, pos.keys.clone()).await?;
        *state = s;
        *pos = p;
        return Ok(true);
    }
    let mut seen: Vec<(u64, Vec<u8>)> = (pos.flushed + 1..)
        .zip(std::mem::take(&mut pos.tail))
        .collect();
    let mut applied = pos.seq;
    let mut last_sum = pos.last_sum;
    let read = visit_log(
        store,
        &pos.keys,
        Some((raw, head)),
        pos.seq + 1,
        &mut |entry, sum, value| {
            for e in &entry.events {
                state.apply(e)?;
            }
            applied = entry.seq;
            last_sum = Some(sum.get());
            if let Some(v) = value {
                seen.push((entry.seq, v));
            }
            Ok(false)
        },
    )
    .await;
    // What was applied stays applied: the position follows it.
    pos.seq = applied;
    pos.last_sum = last_sum;
    let (raw, head) = read?;
    pos.flushed = head.flushed;
    pos.tail = tail_cache(seen, head.flushed, head.seq);
    pos.head_raw = raw;
    Ok(true)
}

/// How a commit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    /// The entry is in the log (written now, or found there after a write
    /// that reported an error but had landed).
    Done,
    /// Another writer moved the head first: reload and run the call again.
    Conflict,
}

/// Commits `events` as the next log entry, guarded by the head `pos` read.
/// The entry's id is a checksum of its position, time and events: when the
/// write reports a conflict or a failure, the log is read back and, if entry
/// `seq` carries this id, the write landed and the commit is done (an entry
/// identical in every event is the same call). An existing entry at the
/// position is never overwritten. Ids are deterministic, so two runs with the
/// same clock readings and model answers write identical logs.
///
/// When `segment_entries` entries wait after the last segment, this commit
/// writes them and its own as a segment and deletes their single keys. A
/// memory of format 1 or 2 is rewritten into segments by its first commit.
pub async fn commit<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    events: Vec<Event>,
    at: i64,
    segment_entries: u64,
) -> Result<Committed> {
    let seq = pos.seq + 1;
    let (id, entry) = encode_new_entry(seq, at, &events);
    let sum = header_sum(&entry);
    drop(events);
    let key = pos.keys.log(seq);
    if store.get(&key).await?.is_some() {
        // Another writer committed `seq` since this call read the head (a
        // conflict), or the head is behind its own log (damage: never
        // overwrite what is there).
        let now = store.get(&pos.keys.head()).await?;
        if now != pos.head_raw {
            return Ok(Committed::Conflict);
        }
        return Err(Error::Corrupt(format!(
            "log entry {seq} exists beyond the head: refusing to overwrite it"
        )));
    }
    let mut writes: Vec<Write> = Vec::new();
    let mut flushed = pos.flushed;
    let flush = pos.version >= 3 && pos.seq + 1 - pos.flushed >= segment_entries;
    // The tail as stored, when the cache is incomplete (the tail moved
    // under a catch-up) and this commit writes the segment: read it.
    let mut read_tail = None;
    if flush && pos.tail.len() as u64 != pos.seq - pos.flushed {
        let mut tail = Vec::new();
        for s in pos.flushed + 1..=pos.seq {
            let raw = store
                .get(&pos.keys.log(s))
                .await?
                .ok_or_else(|| Error::Corrupt(format!("log entry {s} is missing")))?;
            decode_entry(&raw, s)?;
            tail.push(raw);
        }
        read_tail = Some(tail);
    }
    // The entry's own key, when the entry is written there (its value is
    // taken back into the tail cache once it landed).
    let mut own = None;
    if pos.version < 3 {
        let mut new = std::collections::BTreeMap::from([(seq, entry)]);
        into_segments(store, pos, &mut new, segment_entries, &mut writes).await?;
        flushed = seq;
    } else if flush {
        let tail = read_tail.as_ref().unwrap_or(&pos.tail);
        let mut all: Vec<&[u8]> = tail.iter().map(Vec::as_slice).collect();
        all.push(&entry);
        writes.push((
            pos.keys.segment(pos.flushed + 1),
            Some(encode_segment(pos.flushed + 1, &all)),
        ));
        for s in pos.flushed + 1..seq {
            writes.push((pos.keys.log(s), None));
        }
        flushed = seq;
    } else {
        own = Some(writes.len());
        writes.push((key, Some(entry)));
    }
    // The first entry names the log (see `Head::origin`).
    let origin = if seq == 1 { sum } else { pos.origin };
    let head = Head::current(seq, flushed, pos.rewrites, origin);
    writes.push((pos.keys.head(), Some(head.clone())));
    let result = store
        .write_if(&pos.keys.head(), pos.head_raw.as_deref(), &writes)
        .await;
    let landed = match &result {
        Ok(()) => true,
        // A write can land and still report an error (a timeout after the
        // store applied it): read the entry back before retrying.
        Err(_) => landed_entry(store, &pos.keys, seq, &id).await,
    };
    if landed {
        pos.seq = seq;
        pos.version = FORMAT_VERSION;
        pos.flushed = flushed;
        pos.head_raw = Some(head);
        pos.last_sum = Some(sum);
        pos.origin = origin;
        match own.and_then(|i| writes[i].1.take()) {
            Some(entry) => {
                if let Some(tail) = read_tail {
                    pos.tail = tail;
                }
                pos.tail.push(entry);
            }
            None => pos.tail.clear(),
        }
        return Ok(Committed::Done);
    }
    match result {
        Err(StoreError::Conflict) => Ok(Committed::Conflict),
        Err(e) => Err(e.into()),
        Ok(()) => unreachable!("a write that succeeded landed"),
    }
}

/// Whether entry `seq` is in the log with attempt id `id`.
async fn landed_entry<S: Store>(store: &S, keys: &Keys, seq: u64, id: &str) -> bool {
    let mut ours = false;
    let read = visit_log(store, keys, None, seq, &mut |entry, _, _| {
        ours = entry.seq == seq && entry.id == id;
        Ok(true)
    })
    .await;
    read.is_ok() && ours
}

/// Adds the writes that turn a format 1 or 2 log into format-3 segments:
/// every old entry (replaced by its stored value in `new` when there is
/// one), then the rest of `new` (entries after the old log), in segments of
/// `per`; the old entries' keys and the snapshot are deleted.
async fn into_segments<S: Store>(
    store: &S,
    pos: &LogPosition,
    new: &mut std::collections::BTreeMap<u64, Vec<u8>>,
    per: u64,
    writes: &mut Vec<Write>,
) -> Result<()> {
    let mut all: Vec<Vec<u8>> = Vec::with_capacity(pos.seq as usize + new.len());
    legacy::read_entries(store, &pos.keys, 1, pos.seq, &mut |entry, _, _| {
        let s = entry.seq;
        all.push(new.remove(&s).unwrap_or_else(|| encode_entry(&entry)));
        Ok(false)
    })
    .await?;
    all.extend(std::mem::take(new).into_values());
    let refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
    segments_of(&pos.keys, 1, &refs, per, writes);
    for s in 1..=pos.seq {
        writes.push((pos.keys.log(s), None));
    }
    writes.push((pos.keys.snapshot(), None));
    Ok(())
}

/// Adds the writes of `entries` (stored values, starting at `first`) as
/// segments of at most `per` entries.
fn segments_of(keys: &Keys, first: u64, entries: &[&[u8]], per: u64, writes: &mut Vec<Write>) {
    for (i, chunk) in entries.chunks(per.max(1) as usize).enumerate() {
        let start = first + i as u64 * per.max(1);
        writes.push((keys.segment(start), Some(encode_segment(start, chunk))));
    }
}

/// Replays the log from the start up to the last entry committed at or
/// before `at`: the memory as it was then.
pub async fn replay_until<S: Store>(store: &S, pos: &LogPosition, at: i64) -> Result<State> {
    let mut state = State::default();
    visit_log(store, &pos.keys, None, 1, &mut |entry, _, _| {
        if entry.at > at || entry.seq > pos.seq {
            return Ok(true);
        }
        for e in &entry.events {
            state.apply(e)?;
        }
        Ok(false)
    })
    .await?;
    Ok(state)
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
/// byte for byte what [`export`] returns at the moment the export began.
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
fn export_prefix() -> String {
    format!("{{\"format\":\"engram\",\"version\":{EXPORT_VERSION},\"log\":[")
}

/// The mark of `entry` in an [`ExportCursor`]: [`value_checksum`] of its
/// seq, time and attempt id, cut to 32 bits (an erasure gives a changed
/// entry a new id; another memory's entry differs in time).
fn export_mark(entry: &LogEntry) -> u32 {
    let mut bytes = Vec::with_capacity(16 + entry.id.len());
    bytes.extend_from_slice(&entry.seq.to_le_bytes());
    bytes.extend_from_slice(&entry.at.to_le_bytes());
    bytes.extend_from_slice(entry.id.as_bytes());
    value_checksum(&bytes) as u32
}

/// What a stale cursor says.
fn export_stale(why: &str) -> Error {
    Error::invalid(format!(
        "{why} since this export began: start the export again"
    ))
}

/// Checks a cursor against the log as it stands (`seq` entries, rewritten
/// `rewrites` times); the cursor to start from.
fn export_cursor(
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
fn export_push(
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
fn export_finish(mut text: String, cursor: ExportCursor) -> ExportPart {
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
/// what [`export`] returns; a host writes each part out and asks for the
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
        let text = crate::message::display(&m.content, &m.tool_calls);
        let counted = count_tokens(&text).saturating_add(crate::message::FRAMING_TOKENS);
        if m.tokens.saturating_mul(4) < counted || m.tokens > counted.saturating_mul(4) + 64 {
            return bad(format!(
                "message {} says it holds {} tokens, but its text ({} bytes) counts {counted}",
                m.id,
                m.tokens,
                text.len()
            ));
        }
    }
    let unit = |e: &crate::embedding::Embedding| {
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
        if role != crate::message::Role::User {
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
        if text.len() > crate::text::MAX_INSTRUCTIONS_BYTES || tokens > ceiling_tokens / 2 {
            return bad(format!(
                "the instructions ({} bytes, {tokens} tokens) are over the limits of this memory \
                 ({} bytes, half the ceiling: {} tokens)",
                text.len(),
                crate::text::MAX_INSTRUCTIONS_BYTES,
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
fn check_tool_outputs(state: &State) -> Result<()> {
    let mut waiting: Vec<&str> = Vec::new();
    let mut after_lost = false;
    for m in &state.messages {
        match &m.tool_call_id {
            Some(id) if m.role == crate::message::Role::Tool => {
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
                if m.role == crate::message::Role::User {
                    waiting.clear();
                }
                after_lost = m.erased && m.tool_calls.is_empty();
                waiting.extend(m.tool_calls.iter().map(|c| c.id.as_str()));
            }
        }
    }
    Ok(())
}

/// Writes an imported log into an empty namespace, atomically, as segments.
pub async fn import<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    log: Vec<LogEntry>,
    segment_entries: u64,
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
    segments_of(&pos.keys, 1, &refs, segment_entries, &mut writes);
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

/// Formats 1 and 2: JSON log entries and a whole-state snapshot. Read only;
/// the first commit rewrites them as segments.
mod legacy {
    use serde::Deserialize;

    use super::{
        checksum, corrupt, read_head, text, unknown_or_corrupt, Head, Keys, LogEntry, Visit,
    };
    use crate::error::{Error, Result};
    use crate::host::Store;
    use crate::state::State;

    #[derive(Deserialize)]
    struct Snapshot {
        seq: u64,
        #[serde(default)]
        sum: Option<String>,
        state: State,
    }

    /// Hands JSON entries `from..=to` to `each`, in order.
    pub(super) async fn read_entries<S: Store>(
        store: &S,
        keys: &Keys,
        from: u64,
        to: u64,
        each: &mut Visit<'_>,
    ) -> Result<()> {
        for seq in from..=to {
            let raw = store
                .get(&keys.log(seq))
                .await?
                .map(text)
                .transpose()?
                .ok_or_else(|| Error::Corrupt(format!("log entry {seq} is missing")))?;
            let entry: LogEntry = crate::codec::from_json(&raw)
                .map_err(|e| unknown_or_corrupt(e, format!("log entry {seq} does not parse")))?;
            if entry.seq != seq {
                return Err(Error::Corrupt(format!(
                    "log entry {seq} claims seq {}",
                    entry.seq
                )));
            }
            if each(entry, super::Sum::Of(raw.as_bytes()), None)? {
                break;
            }
        }
        Ok(())
    }

    /// The snapshot the head names, or why it cannot be used.
    async fn read_snapshot<S: Store>(
        store: &S,
        keys: &Keys,
        head: &Head,
    ) -> Result<core::result::Result<(u64, State), String>> {
        let Some(raw) = store.get(&keys.snapshot()).await?.map(text).transpose()? else {
            return Ok(Err("the snapshot is missing".into()));
        };
        let snap: Snapshot = match crate::codec::from_json(&raw) {
            Ok(s) => s,
            Err(e) => return Ok(Err(format!("the snapshot does not parse: {e}"))),
        };
        if snap.seq != head.snapshot {
            return Ok(Err(format!(
                "the head names snapshot {} but the stored one is at {}",
                head.snapshot, snap.seq
            )));
        }
        // The checksum is of the state's JSON as written: re-serialising
        // would differ (vectors are read back at f16), so take the text.
        let state_json = raw
            .find("\"state\":")
            .map(|i| raw[i + 8..raw.len() - 1].to_string())
            .unwrap_or_default();
        let sum = checksum(&state_json);
        if snap.sum.as_deref().is_some_and(|s| s != sum)
            || head.sum.as_deref().is_some_and(|s| s != sum)
        {
            return Ok(Err("the snapshot does not match its checksum".into()));
        }
        if let Err(e) = snap.state.check() {
            return Ok(Err(e.to_string()));
        }
        Ok(Ok((snap.seq, snap.state)))
    }

    /// Loads a format 1 or 2 memory: its snapshot and the entries after it,
    /// or the whole log when the snapshot cannot be used.
    pub(super) async fn load<S: Store>(store: &S, keys: &Keys) -> Result<(State, Option<String>)> {
        let (_, head) = read_head(store, keys).await?;
        let (mut state, from, warning) = if head.snapshot == 0 {
            (State::default(), 1, None)
        } else {
            match read_snapshot(store, keys, &head).await? {
                Ok((seq, mut state)) => {
                    state.rebuild_derived();
                    (state, seq + 1, None)
                }
                Err(why) => (State::default(), 1, Some(why)),
            }
        };
        read_entries(store, keys, from, head.seq, &mut |entry, _, _| {
            for e in &entry.events {
                state
                    .apply(e)
                    .map_err(|e| corrupt(&format!("log entry {}", entry.seq), e))?;
            }
            Ok(false)
        })
        .await?;
        Ok((state, warning))
    }
}

/// Serde for embeddings. Every vector the memory keeps is at f16 precision
/// ([`round`] at the model boundary and on every read), so it is stored
/// exactly in half the bytes of f32: as raw little-endian f16 in the binary
/// encoding, and as little-endian f32 bytes in base64 in JSON (exports and
/// format 1 and 2 values, exact and a fifth of a JSON number array). f16
/// keeps 11 significant bits: a cosine between unit vectors moves by at most
/// about 1e-3, below any threshold's meaning (docs/DECISIONS.md).
pub mod vector {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    /// Serialises a vector.
    pub fn serialize<S: Serializer>(v: &[f32], s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&encode(v))
        } else {
            let bytes: Vec<u8> = v.iter().flat_map(|&x| to_f16(x).to_le_bytes()).collect();
            s.serialize_bytes(&bytes)
        }
    }

    /// Deserialises a vector (either form, whatever the deserializer claims
    /// to be: serde's buffering of tagged enums reports human-readable).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<f32>;
            fn expecting(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
                f.write_str("a vector: base64 f32 text or f16 bytes")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Vec<f32>, E> {
                let mut v = decode(s).map_err(E::custom)?;
                v.iter_mut().for_each(|x| *x = round(*x));
                Ok(v)
            }
            fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Vec<f32>, E> {
                if b.len() % 2 != 0 {
                    return Err(E::custom("vector bytes are not a whole number of f16"));
                }
                Ok(b.chunks_exact(2)
                    .map(|c| from_f16(u16::from_le_bytes([c[0], c[1]])))
                    .collect())
            }
        }
        d.deserialize_any(V)
    }

    /// `x` rounded to the nearest f16 (ties to even), as f32.
    pub fn round(x: f32) -> f32 {
        from_f16(to_f16(x))
    }

    /// Rounds every component of `v` to f16.
    pub fn round_all(v: &mut [f32]) {
        v.iter_mut().for_each(|x| *x = round(*x));
    }

    /// The f16 bits nearest `x` (ties to even; beyond the range: infinity).
    pub fn to_f16(x: f32) -> u16 {
        let b = x.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xff) as i32;
        let man = b & 0x7f_ffff;
        if exp == 0xff {
            return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return sign | 0x7c00;
        }
        if e <= 0 {
            if e < -10 {
                return sign;
            }
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let half = 1u32 << (shift - 1);
            let rem = m & ((1 << shift) - 1);
            let mut r = m >> shift;
            if rem > half || (rem == half && r & 1 == 1) {
                r += 1;
            }
            return sign | r as u16;
        }
        let mut r = ((e as u32) << 10) | (man >> 13);
        let rem = man & 0x1fff;
        if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
            r += 1;
        }
        sign | r as u16
    }

    /// The value of f16 bits `h`.
    pub fn from_f16(h: u16) -> f32 {
        let sign = ((h & 0x8000) as u32) << 16;
        let exp = ((h >> 10) & 0x1f) as u32;
        let man = (h & 0x3ff) as u32;
        let bits = match exp {
            0 if man == 0 => sign,
            0 => {
                let v = man as f32 * (1.0 / 16_777_216.0);
                return if sign != 0 { -v } else { v };
            }
            0x1f => sign | 0x7f80_0000 | (man << 13),
            _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
        };
        f32::from_bits(bits)
    }

    /// Encodes a vector as base64 of its f32 bytes.
    pub fn encode(v: &[f32]) -> String {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    /// Decodes base64 f32 bytes.
    pub fn decode(s: &str) -> Result<Vec<f32>, String> {
        let mut bytes = Vec::with_capacity(s.len() / 4 * 3);
        let (mut acc, mut bits) = (0u32, 0u32);
        for c in s.bytes().filter(|&c| c != b'=') {
            let v = ALPHABET
                .iter()
                .position(|&a| a == c)
                .ok_or("bad base64 in a vector")? as u32;
            acc = acc << 6 | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                bytes.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        if bytes.len() % 4 != 0 {
            return Err("vector bytes are not a whole number of f32".into());
        }
        Ok(bytes
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn vectors_round_trip_exactly() {
            for v in [
                vec![],
                vec![1.0f32],
                vec![0.1, -2.5, f32::MIN_POSITIVE],
                vec![3.0; 7],
            ] {
                assert_eq!(decode(&encode(&v)).unwrap(), v);
            }
        }

        #[test]
        fn every_f16_survives_the_round_trip() {
            for h in 0..=u16::MAX {
                let x = from_f16(h);
                if x.is_nan() {
                    continue;
                }
                assert_eq!(to_f16(x), h, "{h:#06x}");
            }
        }

        #[test]
        fn rounding_is_to_the_nearest_half() {
            let mut seed = 7u64;
            for _ in 0..100_000 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let x = f32::from_bits((seed >> 32) as u32 & 0xbfff_ffff);
                if !x.is_finite() || x.abs() > 60_000.0 {
                    continue;
                }
                let r = round(x);
                let h = to_f16(x);
                let (lo, hi) = (from_f16(h.wrapping_sub(1)), from_f16(h.wrapping_add(1)));
                for n in [lo, hi] {
                    if n.is_finite() && (n - x).abs() < (r - x).abs() {
                        panic!("{x} rounded to {r}, but {n} is nearer");
                    }
                }
            }
            assert_eq!(round(1.0 + 1.0 / 4096.0), 1.0, "ties go to even");
        }
    }
}

// ---- Rewriting and destroying a namespace (erasure) -------------------------
//
// Erasure is the one time stored log entries change: the values that held
// what was erased (the segments and tail keys of the changed entries; a
// format 1 or 2 memory is rewritten whole, into segments) are replaced, with
// a new head counting the rewrite, in one `write_if` guarded by the head this
// handle read, so a concurrent writer gets a conflict, never a mix, and other
// handles reload instead of catching up.

/// Every log entry of the namespace up to `pos`, in order.
pub async fn read_log<S: Store>(store: &S, pos: &LogPosition) -> Result<Vec<LogEntry>> {
    let mut log = Vec::with_capacity(pos.seq as usize);
    visit_log(store, &pos.keys, None, 1, &mut |entry, _, _| {
        if entry.seq > pos.seq {
            return Ok(true);
        }
        log.push(entry);
        Ok(false)
    })
    .await?;
    Ok(log)
}

/// Replaces the log entries in `entries` (each at its own seq; the last one
/// is the new end of the log, one past `pos`) and writes the new head, in
/// one `write_if` guarded by the head `pos` read: every segment or tail key
/// holding a changed entry is written again with it. Each changed entry's
/// id is computed again from its new content. Returns the outcome and the
/// bytes written. A write that reports an error but landed (the head reads
/// back as written) is `Done`. A format 1 or 2 log is rewritten whole, in
/// segments of `segment_entries`.
pub async fn rewrite<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    entries: Vec<LogEntry>,
    segment_entries: u64,
) -> Result<(Committed, usize)> {
    let Some(seq) = entries.last().map(|e| e.seq) else {
        return Ok((Committed::Done, 0));
    };
    let mut changed: std::collections::BTreeMap<u64, Vec<u8>> = entries
        .into_iter()
        .map(|e| (e.seq, encode_new_entry(e.seq, e.at, &e.events).1))
        .collect();
    let last_sum = changed.get(&seq).map(|v| header_sum(v));
    let mut writes: Vec<Write> = Vec::new();
    let flushed;
    if pos.version < 3 {
        into_segments(store, pos, &mut changed, segment_entries, &mut writes).await?;
        flushed = seq;
    } else {
        flushed = pos.flushed;
        let prefix = pos.keys.segments();
        for key in store.list(&prefix).await? {
            let Ok(first) = key[prefix.len()..].parse::<u64>() else {
                continue;
            };
            if first > pos.flushed {
                continue;
            }
            let Some(raw) = store.get(&key).await? else {
                return Ok((Committed::Conflict, 0));
            };
            let seg = parse_segment(&raw, &key)?;
            if changed.range(seg.first..=seg.last).next().is_none() {
                continue;
            }
            let replaced: Vec<Option<Vec<u8>>> =
                (seg.first..=seg.last).map(|s| changed.remove(&s)).collect();
            let bodies: Vec<&[u8]> = replaced
                .iter()
                .zip(&seg.bodies)
                .map(|(new, old)| new.as_deref().map_or(*old, |v| &v[13..]))
                .collect();
            writes.push((key.clone(), Some(encode_segment_bodies(seg.first, &bodies))));
        }
        for (s, value) in changed {
            if s <= pos.flushed {
                return Err(Error::Corrupt(format!(
                    "log entry {s} is in no stored segment"
                )));
            }
            writes.push((pos.keys.log(s), Some(value)));
        }
    }
    let rewrites = pos.rewrites + 1;
    // The stored word indexes may hold erased words, and the meaning graphs
    // were linked over erased vectors: gone in the same write (the handle
    // saves them again from the state without them).
    writes.push((pos.keys.words(), None));
    for kind in GRAPHS {
        writes.push((pos.keys.graph(kind), None));
    }
    let head = Head::current(seq, flushed, rewrites, pos.origin);
    writes.push((pos.keys.head(), Some(head.clone())));
    let bytes = writes
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    let result = store
        .write_if(&pos.keys.head(), pos.head_raw.as_deref(), &writes)
        .await;
    let landed = match &result {
        Ok(()) => true,
        Err(_) => store.get(&pos.keys.head()).await.ok().flatten().as_deref() == Some(&head[..]),
    };
    if landed {
        pos.seq = seq;
        pos.version = FORMAT_VERSION;
        pos.flushed = flushed;
        pos.rewrites = rewrites;
        pos.head_raw = Some(head);
        pos.last_sum = last_sum;
        pos.words = 0;
        pos.graphs = [0; 3];
        // The tail cache is read again by the commit that needs it.
        pos.tail.clear();
        return Ok((Committed::Done, bytes));
    }
    match result {
        Err(StoreError::Conflict) => Ok((Committed::Conflict, 0)),
        Err(e) => Err(e.into()),
        Ok(()) => unreachable!("a write that succeeded landed"),
    }
}

/// Deletes every key of the namespace (head, segments, log entries, a
/// format-2 snapshot, and any other key under its prefix) in one `write_if`
/// guarded by the head `pos` read. The position is then that of an empty
/// namespace.
pub async fn destroy<S: Store>(store: &S, pos: &mut LogPosition) -> Result<Committed> {
    let mut keys = store.list(pos.keys.prefix()).await?;
    keys.sort();
    if keys.is_empty() && pos.head_raw.is_none() {
        return Ok(Committed::Done);
    }
    // The head is deleted last in the list (stores apply writes in order).
    keys.retain(|k| *k != pos.keys.head());
    let mut writes: Vec<Write> = keys.into_iter().map(|k| (k, None)).collect();
    writes.push((pos.keys.head(), None));
    match store
        .write_if(&pos.keys.head(), pos.head_raw.as_deref(), &writes)
        .await
    {
        Ok(()) => {}
        Err(StoreError::Conflict) => return Ok(Committed::Conflict),
        Err(e) => {
            // Landed despite the error? Then the head is gone.
            if !matches!(store.get(&pos.keys.head()).await, Ok(None)) {
                return Err(e.into());
            }
        }
    }
    pos.seq = 0;
    pos.version = FORMAT_VERSION;
    pos.flushed = 0;
    pos.rewrites = 0;
    pos.origin = 0;
    pos.tail.clear();
    pos.head_raw = None;
    pos.words = 0;
    pos.last_sum = None;
    Ok(Committed::Done)
}
