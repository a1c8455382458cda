//! Persistence: the event log, snapshots, the compare-and-set commit, export
//! and import.
//!
//! Keys of a memory in namespace `ns` (no other keys are read or written):
//!
//! | key                     | value                                        |
//! |-------------------------|----------------------------------------------|
//! | `engram/ns/head`        | `{"version", "seq", "snapshot", "sum"}`: the log head |
//! | `engram/ns/log/<seq>`   | `{"seq", "id", "at", "events"}`: one public call |
//! | `engram/ns/snapshot`    | `{"version", "seq", "sum", "state"}`: state at a seq |
//!
//! A call commits its log entry and the new head (and, every
//! `snapshot_every` entries, a snapshot) in one `write_if` guarded by the head
//! it started from. Log entries are never deleted or overwritten: the log is
//! the memory. Each entry carries the id of the attempt that wrote it, so a
//! write that landed but reported a conflict or a failure is recognised as
//! landed instead of being made again. The snapshot carries a checksum of its
//! state, repeated in the head; a snapshot that does not match is ignored and
//! the state is rebuilt from the log.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::event::Event;
use crate::host::{Store, StoreError, Write};
use crate::state::State;

/// The format version this build writes. Version 2 added the events of the
/// turn's deferred work (judgments after the fact, deferred notes, recall
/// blocks giving way), entry ids and snapshot checksums.
pub const FORMAT_VERSION: u32 = 2;

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
    /// The snapshot key.
    pub fn snapshot(&self) -> String {
        format!("{}snapshot", self.prefix)
    }
    /// The key of log entry `seq`.
    pub fn log(&self, seq: u64) -> String {
        format!("{}log/{seq:020}", self.prefix)
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
    snapshot: u64,
    /// Checksum of the snapshot's state (absent before version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sum: Option<String>,
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

#[derive(Serialize, Deserialize)]
struct Snapshot {
    version: u32,
    seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sum: Option<String>,
    state: State,
}

/// FNV-1a 64 of `text`, hex: the snapshot checksum (it catches damage and
/// edits, not a forger who rewrites head and snapshot together).
fn checksum(text: &str) -> String {
    let h = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    });
    format!("{h:016x}")
}

/// Where this handle stands in the log.
#[derive(Debug, Clone)]
pub struct LogPosition {
    /// Keys of the namespace.
    pub keys: Keys,
    /// Last applied entry.
    pub seq: u64,
    /// Seq of the stored snapshot (0: none).
    pub snapshot: u64,
    /// The head value as read (the compare-and-set guard).
    pub head_raw: Option<String>,
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

async fn read_head<S: Store>(store: &S, keys: &Keys) -> Result<(Option<String>, Head)> {
    let raw = store.get(&keys.head()).await?;
    let head = match &raw {
        None => Head {
            version: FORMAT_VERSION,
            seq: 0,
            snapshot: 0,
            sum: None,
        },
        Some(r) => serde_json::from_str::<Head>(r).map_err(|e| corrupt("head", e))?,
    };
    check_version(head.version)?;
    Ok((raw, head))
}

async fn read_entry<S: Store>(store: &S, keys: &Keys, seq: u64) -> Result<LogEntry> {
    let raw = store
        .get(&keys.log(seq))
        .await?
        .ok_or_else(|| Error::Corrupt(format!("log entry {seq} is missing")))?;
    let entry = parse_entry(&raw, seq)?;
    if entry.seq != seq {
        return Err(Error::Corrupt(format!(
            "log entry {seq} claims seq {}",
            entry.seq
        )));
    }
    Ok(entry)
}

/// Parses log entry `seq`. An event type this build does not know was
/// written by a newer build: `UnsupportedVersion`, not `Corrupt`.
fn parse_entry(raw: &str, seq: u64) -> Result<LogEntry> {
    serde_json::from_str(raw).map_err(|e| {
        if e.to_string().contains("unknown variant") {
            Error::UnsupportedVersion {
                found: FORMAT_VERSION + 1,
                supported: FORMAT_VERSION,
            }
        } else {
            Error::Corrupt(format!("log entry {seq} does not parse: {e}"))
        }
    })
}

/// Refuses to read a namespace whose head is gone while its log or snapshot
/// is there: opening it as empty would hide the memory and the next commit
/// would overwrite it.
async fn check_headless<S: Store>(store: &S, keys: &Keys) -> Result<()> {
    for key in [keys.log(1), keys.snapshot()] {
        if store.get(&key).await?.is_some() {
            return Err(Error::Corrupt(format!(
                "the head is missing but {key} exists: refusing to open this memory as empty \
                 (restore the head, or import an export into a new namespace)"
            )));
        }
    }
    Ok(())
}

/// Reads the snapshot the head names, or `None` (with why) when it is missing,
/// damaged or does not match the head: the state is then rebuilt from the log.
async fn read_snapshot<S: Store>(
    store: &S,
    keys: &Keys,
    head: &Head,
) -> Result<core::result::Result<(u64, State), String>> {
    let Some(raw) = store.get(&keys.snapshot()).await? else {
        return Ok(Err("the snapshot is missing".into()));
    };
    let snap: Snapshot = match serde_json::from_str(&raw) {
        Ok(s) => s,
        Err(e) => return Ok(Err(format!("the snapshot does not parse: {e}"))),
    };
    check_version(snap.version)?;
    if snap.seq > head.snapshot {
        // A newer snapshot: the head moved after it was read.
        return Ok(Ok((snap.seq, snap.state)));
    }
    if snap.seq < head.snapshot {
        return Ok(Err(format!(
            "the head names snapshot {} but the stored one is at {}",
            head.snapshot, snap.seq
        )));
    }
    let sum = checksum(&to_json(&snap.state));
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

/// Times [`load`] re-reads the head when other writers keep replacing the
/// snapshot between its two reads.
const LOAD_ATTEMPTS: u32 = 8;

/// Loads a namespace: its snapshot, then the log entries after it. Returns
/// the state, the position, and why the snapshot was not used when it was
/// damaged or disagreed with the head (the state is then rebuilt from the
/// whole log; the caller reports it).
///
/// The head and the snapshot are two reads: another writer's commit can land
/// between them and replace the snapshot with a newer one. Then the head is
/// read again (log entries never change, so only these two can disagree).
pub async fn load<S: Store>(store: &S, keys: Keys) -> Result<(State, LogPosition, Option<String>)> {
    let mut attempt = 1;
    let (raw, head, mut state, from, warning) = loop {
        let (raw, head) = read_head(store, &keys).await?;
        if raw.is_none() {
            check_headless(store, &keys).await?;
        }
        if head.snapshot == 0 {
            break (raw, head, State::default(), 1, None);
        }
        match read_snapshot(store, &keys, &head).await? {
            Ok((seq, mut state)) if seq == head.snapshot => {
                state.rebuild_derived();
                break (raw, head, state, seq + 1, None);
            }
            Ok(_) => {
                if attempt == LOAD_ATTEMPTS {
                    return Err(Error::Busy(format!(
                        "other writers replaced the snapshot {LOAD_ATTEMPTS} times while it loaded"
                    )));
                }
                attempt += 1;
            }
            Err(why) => break (raw, head, State::default(), 1, Some(why)),
        }
    };
    for seq in from..=head.seq {
        for e in &read_entry(store, &keys, seq).await?.events {
            state
                .apply(e)
                .map_err(|e| Error::Corrupt(format!("log entry {seq}: {e}")))?;
        }
    }
    let pos = LogPosition {
        keys,
        seq: head.seq,
        snapshot: head.snapshot,
        head_raw: raw,
    };
    Ok((state, pos, warning))
}

/// Applies the entries other writers committed since `pos`. Returns whether
/// anything was applied.
pub async fn catch_up<S: Store>(
    store: &S,
    state: &mut State,
    pos: &mut LogPosition,
) -> Result<bool> {
    let (raw, head) = read_head(store, &pos.keys).await?;
    if raw == pos.head_raw {
        return Ok(false);
    }
    if head.seq < pos.seq {
        return Err(Error::Corrupt("the log head moved backwards".into()));
    }
    for seq in pos.seq + 1..=head.seq {
        for e in &read_entry(store, &pos.keys, seq).await?.events {
            state.apply(e)?;
        }
    }
    pos.seq = head.seq;
    pos.snapshot = head.snapshot;
    pos.head_raw = raw;
    Ok(true)
}

fn to_json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("engram types serialise")
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
/// `state` must already include them (it is what a snapshot would hold).
/// The entry's id is a checksum of its position, time and events: when the
/// write reports a conflict or a failure, the entry at that position is read
/// back and, if it carries this id, the write landed and the commit is done
/// (an entry identical in every event is the same call). An existing entry at
/// the position is never overwritten. Ids are deterministic, so two runs with
/// the same clock readings and model answers write identical logs.
pub async fn commit<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    state: &State,
    events: Vec<Event>,
    at: i64,
    snapshot_every: u64,
) -> Result<Committed> {
    let seq = pos.seq + 1;
    let id = checksum(&format!("{seq}:{at}:{}", to_json(&events)));
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
    let mut head = Head {
        version: FORMAT_VERSION,
        seq,
        snapshot: if seq % snapshot_every == 0 {
            seq
        } else {
            pos.snapshot
        },
        sum: None,
    };
    let mut writes: Vec<Write> = vec![(
        key.clone(),
        Some(to_json(&LogEntry {
            seq,
            id: id.clone(),
            at,
            events,
        })),
    )];
    if head.snapshot == seq {
        let state_json = to_json(state);
        let sum = checksum(&state_json);
        head.sum = Some(sum.clone());
        let snap = format!(
            "{{\"version\":{FORMAT_VERSION},\"seq\":{seq},\"sum\":\"{sum}\",\"state\":{state_json}}}"
        );
        writes.push((pos.keys.snapshot(), Some(snap)));
    } else if let Some(raw) = &pos.head_raw {
        // The snapshot stays: so does its checksum.
        head.sum = serde_json::from_str::<Head>(raw).ok().and_then(|h| h.sum);
    }
    let head_json = to_json(&head);
    writes.push((pos.keys.head(), Some(head_json.clone())));
    let landed = |pos: &mut LogPosition| {
        pos.seq = seq;
        pos.snapshot = head.snapshot;
        pos.head_raw = Some(head_json.clone());
    };
    match store
        .write_if(&pos.keys.head(), pos.head_raw.as_deref(), &writes)
        .await
    {
        Ok(()) => {
            landed(pos);
            Ok(Committed::Done)
        }
        Err(e) => {
            // A write can land and still report an error (a timeout after the
            // store applied it): read the position back before retrying.
            let ours = match store.get(&key).await {
                Ok(Some(raw)) => parse_entry(&raw, seq).is_ok_and(|en| en.id == id),
                _ => false,
            };
            if ours {
                landed(pos);
                return Ok(Committed::Done);
            }
            match e {
                StoreError::Conflict => Ok(Committed::Conflict),
                e => Err(e.into()),
            }
        }
    }
}

/// Replays the log from the start up to the last entry committed at or
/// before `at`: the memory as it was then.
pub async fn replay_until<S: Store>(store: &S, pos: &LogPosition, at: i64) -> Result<State> {
    let mut state = State::default();
    for seq in 1..=pos.seq {
        let entry = read_entry(store, &pos.keys, seq).await?;
        if entry.at > at {
            break;
        }
        for e in &entry.events {
            state.apply(e)?;
        }
    }
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
    let mut log = Vec::with_capacity(pos.seq as usize);
    for seq in 1..=pos.seq {
        log.push(read_entry(store, &pos.keys, seq).await?);
    }
    Ok(to_json(&Export {
        format: "engram".into(),
        version: FORMAT_VERSION,
        log,
    }))
}

/// Parses and replays an export, checking it fully before anything is written.
pub fn parse_export(json: &str) -> Result<(State, Vec<LogEntry>)> {
    #[derive(Deserialize)]
    struct Probe {
        format: Option<String>,
        version: Option<u32>,
    }
    let probe: Probe =
        serde_json::from_str(json).map_err(|e| Error::invalid(format!("export: {e}")))?;
    if probe.format.as_deref() != Some("engram") {
        return Err(Error::invalid(
            "not an engram export (format is not \"engram\")",
        ));
    }
    check_version(probe.version.unwrap_or(0))?;
    let export: Export =
        serde_json::from_str(json).map_err(|e| Error::invalid(format!("export: {e}")))?;
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
    Ok((state, export.log))
}

/// Writes an imported log into an empty namespace, atomically.
pub async fn import<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    state: &State,
    log: Vec<LogEntry>,
) -> Result<()> {
    if pos.head_raw.is_some() {
        return Err(Error::invalid(
            "import needs an empty namespace: this one has a log",
        ));
    }
    let seq = log.len() as u64;
    let state_json = to_json(state);
    let sum = checksum(&state_json);
    let head = to_json(&Head {
        version: FORMAT_VERSION,
        seq,
        snapshot: seq,
        sum: (seq > 0).then(|| sum.clone()),
    });
    let mut writes: Vec<Write> = log
        .iter()
        .map(|e| (pos.keys.log(e.seq), Some(to_json(e))))
        .collect();
    writes.push((pos.keys.head(), Some(head.clone())));
    if seq > 0 {
        let snap = format!(
            "{{\"version\":{FORMAT_VERSION},\"seq\":{seq},\"sum\":\"{sum}\",\"state\":{state_json}}}"
        );
        writes.push((pos.keys.snapshot(), Some(snap)));
    }
    if pos.head_raw.is_none() {
        check_headless(store, &pos.keys).await?;
    }
    store.write_if(&pos.keys.head(), None, &writes).await?;
    pos.seq = seq;
    pos.snapshot = seq;
    pos.head_raw = Some(head);
    Ok(())
}

/// Serde for embeddings: little-endian f32 bytes in base64 (a fifth of the
/// size of a JSON number array, and exact).
pub mod vector {
    use serde::{Deserialize, Deserializer, Serializer};

    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    /// Serialises a vector.
    pub fn serialize<S: Serializer>(v: &[f32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(v))
    }

    /// Deserialises a vector.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
        let s = String::deserialize(d)?;
        decode(&s).map_err(serde::de::Error::custom)
    }

    /// Encodes a vector.
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

    /// Decodes a vector.
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
        #[test]
        fn vectors_round_trip_exactly() {
            for v in [
                vec![],
                vec![1.0f32],
                vec![0.1, -2.5, f32::MIN_POSITIVE],
                vec![3.0; 7],
            ] {
                assert_eq!(super::decode(&super::encode(&v)).unwrap(), v);
            }
        }
    }
}

// ---- Rewriting and destroying a namespace (erasure) -------------------------
//
// Erasure is the one time stored log entries change: the entries that held
// what was erased are replaced, with a new snapshot and head, in one
// `write_if` guarded by the head this handle read, so a concurrent writer
// gets a conflict, never a mix. Self-contained: it uses only `Keys`, `Head`,
// `LogEntry`, `checksum` and `to_json` above.

/// Every log entry of the namespace up to `pos`, in order.
pub async fn read_log<S: Store>(store: &S, pos: &LogPosition) -> Result<Vec<LogEntry>> {
    let mut log = Vec::with_capacity(pos.seq as usize);
    for seq in 1..=pos.seq {
        log.push(read_entry(store, &pos.keys, seq).await?);
    }
    Ok(log)
}

/// Replaces the log entries in `entries` (each at its own seq; the last one
/// is the new end of the log), and writes a snapshot of `state` at that end
/// and the new head, in one `write_if` guarded by the head `pos` read. Each
/// entry's id is computed again from its new content. Returns the number of
/// bytes written with the outcome. A write that reports an error but landed
/// (the head reads back as written) is `Done`.
pub async fn rewrite<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    state: &State,
    entries: Vec<LogEntry>,
) -> Result<(Committed, usize)> {
    let Some(seq) = entries.last().map(|e| e.seq) else {
        return Ok((Committed::Done, 0));
    };
    let state_json = to_json(state);
    let sum = checksum(&state_json);
    let head = to_json(&Head {
        version: FORMAT_VERSION,
        seq,
        snapshot: seq,
        sum: Some(sum.clone()),
    });
    let mut writes: Vec<Write> = entries
        .into_iter()
        .map(|mut e| {
            e.id = checksum(&format!("{}:{}:{}", e.seq, e.at, to_json(&e.events)));
            (pos.keys.log(e.seq), Some(to_json(&e)))
        })
        .collect();
    writes.push((
        pos.keys.snapshot(),
        Some(format!(
            "{{\"version\":{FORMAT_VERSION},\"seq\":{seq},\"sum\":\"{sum}\",\"state\":{state_json}}}"
        )),
    ));
    writes.push((pos.keys.head(), Some(head.clone())));
    let bytes = writes
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, |v| v.len()))
        .sum();
    let result = store
        .write_if(&pos.keys.head(), pos.head_raw.as_deref(), &writes)
        .await;
    let landed = match result {
        Ok(()) => true,
        Err(_) => store.get(&pos.keys.head()).await.ok().flatten().as_deref() == Some(&head),
    };
    if landed {
        pos.seq = seq;
        pos.snapshot = seq;
        pos.head_raw = Some(head);
        return Ok((Committed::Done, bytes));
    }
    match result {
        Err(StoreError::Conflict) => Ok((Committed::Conflict, 0)),
        Err(e) => Err(e.into()),
        Ok(()) => unreachable!("a write that succeeded landed"),
    }
}

/// Deletes every key of the namespace (head, snapshot, log entries, and any
/// other key under its prefix) in one `write_if` guarded by the head `pos`
/// read. The position is then that of an empty namespace.
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
    pos.snapshot = 0;
    pos.head_raw = None;
    Ok(Committed::Done)
}
