//! Traces: each time a fact mattered to an episode, as judged, kept forever.

use serde::{Deserialize, Serialize};

/// Why a trace was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case", tag = "kind", content = "fact")]
pub enum TraceCause {
    /// The episode formed (its first trace, at full strength).
    Encoding,
    /// A new fact was judged against the episode.
    Fact(u64),
    /// A recalled fact mattered to a turn (distill kept it).
    Recall(u64),
}

/// One judgment "does this matter to that episode?", with its time.
/// Traces are never changed after they are written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Trace {
    /// Trace id (1, 2, ...).
    pub id: u64,
    /// The episode judged.
    pub episode: u64,
    /// Why it was written.
    pub cause: TraceCause,
    /// The answer: only a yes counts toward activation and significance.
    pub yes: bool,
    /// Strength of a yes (1.0 for every trace engram writes today).
    pub strength: f32,
    /// When (host clock, ms).
    pub at: i64,
}
