//! Persistence: the event log, snapshots, the compare-and-set commit, export
//! and import.
//!
//! Keys of a memory in namespace `ns` (no other keys are read or written):
//!
//! | key                     | value                                        |
//! |-------------------------|----------------------------------------------|
//! | `engram/ns/head`        | `{"version", "seq", "snapshot"}`: the log head |
//! | `engram/ns/log/<seq>`   | `{"seq", "at", "events"}`: one public call   |
//! | `engram/ns/snapshot`    | `{"version", "seq", "state"}`: state at a seq |
//!
//! A call commits its log entry and the new head (and, every
//! `snapshot_every` entries, a snapshot) in one `write_if` guarded by the head
//! it started from. Log entries are never deleted: the log is the memory.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::event::Event;
use crate::host::{Store, StoreError, Write};
use crate::state::State;

/// The format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Checks a namespace: 1 to 128 characters of letters, digits and `._-:@`.
pub fn check_namespace(ns: &str) -> Result<()> {
    let ok = !ns.is_empty()
        && ns.len() <= 128
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "namespace {ns:?}: use 1 to 128 letters, digits or ._-:@ (no '/')"
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
}

/// One committed public call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Position in the log (1, 2, ...).
    pub seq: u64,
    /// When the call committed (host clock).
    pub at: i64,
    /// What it changed.
    pub events: Vec<Event>,
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    version: u32,
    seq: u64,
    state: State,
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
    if v == FORMAT_VERSION {
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
    let entry: LogEntry = serde_json::from_str(&raw).map_err(|e| corrupt("log entry", e))?;
    if entry.seq != seq {
        return Err(Error::Corrupt(format!(
            "log entry {seq} claims seq {}",
            entry.seq
        )));
    }
    Ok(entry)
}

/// Times [`load`] re-reads the head when other writers keep replacing the
/// snapshot between its two reads.
const LOAD_ATTEMPTS: u32 = 8;

/// Loads a namespace: its snapshot, then the log entries after it.
///
/// The head and the snapshot are two reads: another writer's commit can land
/// between them and replace the snapshot with a newer one. Then the head is
/// read again (log entries never change, so only these two can disagree).
pub async fn load<S: Store>(store: &S, keys: Keys) -> Result<(State, LogPosition)> {
    let mut attempt = 1;
    let (raw, head, mut state, from) = loop {
        let (raw, head) = read_head(store, &keys).await?;
        if head.snapshot == 0 {
            break (raw, head, State::default(), 1);
        }
        let snap = store
            .get(&keys.snapshot())
            .await?
            .ok_or_else(|| Error::Corrupt("snapshot is missing".into()))?;
        let snap: Snapshot = serde_json::from_str(&snap).map_err(|e| corrupt("snapshot", e))?;
        check_version(snap.version)?;
        if snap.seq == head.snapshot {
            let mut state = snap.state;
            state.check()?;
            state.rebuild_derived();
            break (raw, head, state, snap.seq + 1);
        }
        if snap.seq < head.snapshot {
            return Err(Error::Corrupt(format!(
                "the head names snapshot {} but the stored one is at {}",
                head.snapshot, snap.seq
            )));
        }
        // A newer snapshot: the head moved after it was read.
        if attempt == LOAD_ATTEMPTS {
            return Err(Error::Busy(format!(
                "other writers replaced the snapshot {LOAD_ATTEMPTS} times while it loaded"
            )));
        }
        attempt += 1;
    };
    for seq in from..=head.seq {
        for e in &read_entry(store, &keys, seq).await?.events {
            state.apply(e)?;
        }
    }
    let pos = LogPosition {
        keys,
        seq: head.seq,
        snapshot: head.snapshot,
        head_raw: raw,
    };
    Ok((state, pos))
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

/// Commits `events` as the next log entry, guarded by the head `pos` read.
/// `state` must already include them (it is what a snapshot would hold).
pub async fn commit<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    state: &State,
    events: Vec<Event>,
    at: i64,
    snapshot_every: u64,
) -> core::result::Result<(), StoreError> {
    let seq = pos.seq + 1;
    let snapshot = if seq % snapshot_every == 0 {
        seq
    } else {
        pos.snapshot
    };
    let head = to_json(&Head {
        version: FORMAT_VERSION,
        seq,
        snapshot,
    });
    let mut writes: Vec<Write> = vec![
        (
            pos.keys.log(seq),
            Some(to_json(&LogEntry { seq, at, events })),
        ),
        (pos.keys.head(), Some(head.clone())),
    ];
    if snapshot == seq {
        let snap = Snapshot {
            version: FORMAT_VERSION,
            seq,
            state: state.clone(),
        };
        writes.push((pos.keys.snapshot(), Some(to_json(&snap))));
    }
    store
        .write_if(&pos.keys.head(), pos.head_raw.as_deref(), &writes)
        .await?;
    pos.seq = seq;
    pos.snapshot = snapshot;
    pos.head_raw = Some(head);
    Ok(())
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
    let head = to_json(&Head {
        version: FORMAT_VERSION,
        seq,
        snapshot: seq,
    });
    let mut writes: Vec<Write> = log
        .iter()
        .map(|e| (pos.keys.log(e.seq), Some(to_json(e))))
        .collect();
    writes.push((pos.keys.head(), Some(head.clone())));
    if seq > 0 {
        let snap = Snapshot {
            version: FORMAT_VERSION,
            seq,
            state: state.clone(),
        };
        writes.push((pos.keys.snapshot(), Some(to_json(&snap))));
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
