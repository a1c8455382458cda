//! A thread's line: its message ids, its episodes, where its open stretch
//! starts, its last user message and its view's kept sizes, derived from
//! the messages and episodes (the lookups over it are `thread.rs`'s).

use crate::state::sizes::Sizes;

/// One thread's conversation, derived from the messages and episodes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Line {
    /// Its message ids, in order.
    pub ids: Vec<u64>,
    /// Position in `ids` of the first message of its open stretch (the
    /// messages no episode holds yet).
    pub open: usize,
    /// Its episodes' ids, in order (their message ranges follow each other).
    pub episodes: Vec<u64>,
    /// Time of its last user message.
    pub last_user_at: Option<i64>,
    /// Its view's kept token counts.
    pub sizes: Sizes,
}

impl Line {
    /// Ids of the open stretch.
    pub fn open_ids(&self) -> &[u64] {
        &self.ids[self.open..]
    }

    /// Ids of the messages `first..=last` of this thread.
    pub fn between(&self, first: u64, last: u64) -> &[u64] {
        let a = self.ids.partition_point(|&id| id < first);
        let b = self.ids.partition_point(|&id| id <= last);
        &self.ids[a..b.max(a)]
    }
}
