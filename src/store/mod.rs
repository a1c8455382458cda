//! The store layer: the event log in packs, the compare-and-set commit,
//! export and import. One file per job: `format` (the bytes of entries and
//! packs), `read` (reading with retries), `log` (load, catch-up, commit,
//! replay), `copies` (the derived index copies), `export` (export and
//! import), `legacy` (formats 1 and 2), `vector` (f16 and base64 vectors),
//! `rewrite` (erasure's rewrite and destroy), `salvage` (reading a damaged
//! log). Vectors are f16 in the binary encoding and base64 in JSON
//! ([`crate::base::bytes`]).
//!
//! Keys of a memory in namespace `ns` (no other keys are read or written):
//!
//! | key                     | value                                                  |
//! |-------------------------|--------------------------------------------------------|
//! | `engram/ns/head`        | JSON `{"version", "seq", "flushed"}`: the log head      |
//! | `engram/ns/log/<seq>`   | one public call (binary), for `flushed < seq <= seq`    |
//! | `engram/ns/seg/<first>` | a pack: the calls `first..=last` (binary), immutable    |
//!
//! A call commits its log entry and the new head in one `write_if` guarded by
//! the head it started from. When `pack_entries` entries have gathered
//! after the last pack, the commit that would add one more writes them,
//! with its own, as one pack instead, and deletes their single keys in the
//! same write: every entry is stored exactly once, a commit writes only what
//! is new (and, once per pack, the pack), and there is no snapshot to
//! re-serialise. Opening reads the packs and the tail and replays them.
//! Each entry carries the id of the attempt that wrote it, so a write that
//! landed but reported a conflict or a failure is recognised as landed
//! instead of being made again. Entries and packs carry checksums.
//!
//! Values are in the binary encoding of [`crate::base::codec`]:
//!
//! - a log entry: `ELOG`, encoding byte ([`ENTRY_VERSION`]: 4; 3 before
//!   one-byte names), FNV-1a 64 of the rest (8 bytes LE), the encoded
//!   [`LogEntry`];
//! - a pack: `ESEG`, encoding byte, first and last seq (LEB128), FNV-1a
//!   64 of the rest, then each entry as a LEB128 length and the encoded
//!   entry (entries of either encoding).
//!
//! Vectors are stored as f16 (see [`crate::base::bytes`]). Memories of format 1 and 2
//! (JSON log entries plus a whole-state snapshot) open as they are and are
//! rewritten into packs by their first commit.

use serde::{Deserialize, Serialize};

use crate::base::codec;
use crate::base::error::{Error, Result};
use crate::base::host::Store;

pub mod copies;
pub mod export;
pub mod format;
mod legacy;
pub mod log;
mod read;
pub mod rewrite;
pub mod salvage;

/// The format version this build writes. Version 2 added the events of the
/// turn's deferred work, entry ids and snapshot checksums; version 3 stores
/// binary entries in packs and vectors as f16, with no snapshot.
pub const FORMAT_VERSION: u32 = 3;

/// The version of a stored entry's or pack's encoding (the byte after
/// its magic), which format 3 set to 3. Version 4 writes a name used before
/// in one byte and the tags of events as names ([`crate::base::codec`]): a build
/// of version 3 cannot read it and says so (`UnsupportedVersion`, not
/// `Corrupt`); this build reads both, even mixed in one pack. The
/// namespace's layout (head, packs, tail) is still `FORMAT_VERSION`.
pub const ENTRY_VERSION: u8 = 4;

/// The version of the export document this build writes: its JSON shape is
/// the same as at format 2 (what changed is how values are stored), so an
/// export still imports into builds of format 2.
pub const EXPORT_VERSION: u32 = 2;

/// The oldest format version this build reads.
pub const OLDEST_VERSION: u32 = 1;

/// Checks a namespace: 1 to 128 characters of letters, digits and `._-:@`.
/// A namespace may not start with `.` (so `.` and `..` never reach a store
/// key as path packs).
pub fn check_namespace(ns: &str) -> Result<()> {
    if crate::base::text::is_plain_name(ns) {
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
    /// The key of the pack starting at `first`.
    pub fn pack(&self, first: u64) -> String {
        format!("{}seg/{first:020}", self.prefix)
    }
    /// The prefix of every pack key.
    pub fn packs(&self) -> String {
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
    /// Last entry held in packs (format 3).
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

/// Where this handle stands in the log.
#[derive(Debug, Clone)]
pub struct LogPosition {
    /// Keys of the namespace.
    pub keys: Keys,
    /// Last applied entry.
    pub seq: u64,
    /// The format of what is stored (a commit to format 1 or 2 rewrites it).
    pub version: u32,
    /// Last entry held in packs.
    pub flushed: u64,
    /// Erasures that rewrote stored entries, as the head counts them.
    pub rewrites: u64,
    /// The head value as read (the compare-and-set guard).
    pub head_raw: Option<Vec<u8>>,
    /// The encoded entries `flushed + 1..=seq`, as stored under their own
    /// keys (so the commit that writes a pack need not read them back).
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
    /// Entry `seq + 1` is known to be absent: `load` checked that nothing
    /// is stored past the head, or this handle wrote entry `seq` itself (a
    /// store's `write_if` is atomic, so nothing else wrote past it without
    /// moving the head, which the commit's guard would see). A commit then
    /// need not read its key first. Cleared when another writer's entries
    /// were applied.
    next_free: bool,
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
            "head: {} entries in packs but the log ends at {}",
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
