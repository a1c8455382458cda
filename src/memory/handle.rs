//! The handle: what one memory holds between calls (the host's store,
//! model and clock, the configuration, the state folded from the log and
//! where in the log it stands, the health counters). Its calls are in the
//! other files of `memory/`: the public ones in `mod.rs`, the writing
//! machinery in `write.rs`, the turn in `turn.rs`.

use crate::base::config::Config;
use crate::base::health::{Degraded, Health};
use crate::base::host::{Clock, Model, Store};
use crate::state::State;
use crate::store;
use crate::store::LogPosition;

/// One memory: a conversation, its episodes and its knowledge graph, kept in
/// a host store under one namespace.
///
/// Generic over the host's [`Store`], [`Model`] and [`Clock`]. Calls take
/// `&mut self`, so one handle runs one call at a time; several handles (or
/// hosts) over the same store stay consistent through the compare-and-set
/// commit.
pub struct Memory<S: Store, M: Model, C: Clock> {
    pub(super) store: S,
    pub(super) model: M,
    pub(super) clock: C,
    pub(super) config: Config,
    pub(super) state: State,
    pub(super) pos: LogPosition,
    pub(super) dirty: bool,
    pub(super) health: Health,
    pub(super) degraded: Vec<Degraded>,
    /// Why stored data was not used as is (a damaged snapshot ignored and
    /// rebuilt from the log), oldest first.
    pub(super) storage_warnings: Vec<String>,
    /// Opened with [`Memory::open_salvage`]: read-only.
    pub(super) salvage: Option<Salvage>,
    /// The pieces of an export given to [`Memory::import_piece`] so far.
    pub(super) import_pieces: String,
    /// The latest time this handle used, and the readings it clamped
    /// ([`Memory::now`]). A lock so that `now` takes `&self` (a call reads
    /// the clock while it holds the model borrowed).
    pub(super) clock_seen: std::sync::Mutex<ClockSeen>,
    /// The clock reading when this handle last read the log head or
    /// committed (see [`crate::base::config::Config::fresh_for_ms`]).
    pub(super) met_store_at: Option<i64>,
    /// The next sync is the second transaction of one call (the maintain
    /// after a reply): it uses the state the first one committed.
    pub(super) same_call: bool,
    /// The last head read found nothing new, and no commit lost a race
    /// since: nobody else is writing this memory now, so a write that asks
    /// the model nothing may skip its head read (see
    /// `Memory::retry_on_conflict`).
    pub(super) quiet: bool,
}

/// What the clock did under this handle: the latest time used, and the
/// readings that went back before the memory's last stamp (clamped to it).
#[derive(Debug, Default)]
pub(super) struct ClockSeen {
    /// The latest time used by a call of this handle.
    pub(super) latest: i64,
    /// Readings earlier than the last stamp since this handle opened.
    pub(super) backwards: u64,
    /// The last such reading, and the time used instead.
    pub(super) last: Option<(i64, i64)>,
}

/// A handle opened for salvage: it never writes, and never reads the store
/// again (it holds what was read at open).
pub(super) struct Salvage {
    /// The log as salvaged, when the stored one was damaged (exports and
    /// past views come from it); none when everything read clean.
    pub(super) log: Option<Vec<store::format::LogEntry>>,
}
