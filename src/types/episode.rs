//! Episodes: stretches of the conversation about one concept, and their states.

use serde::{Deserialize, Serialize};

/// Where an episode stands. It only ever moves forward:
/// live -> leaving -> sealed -> forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum EpisodeState {
    /// Messages in the view; facts not written yet.
    Live,
    /// Messages still in the view; the model is asked for their facts.
    Leaving,
    /// Messages out of view; facts in the facts block.
    Sealed,
    /// Out of view and out of the facts block; kept for recall.
    Forgotten,
}

impl EpisodeState {
    /// The state's name.
    pub fn as_str(self) -> &'static str {
        match self {
            EpisodeState::Live => "live",
            EpisodeState::Leaving => "leaving",
            EpisodeState::Sealed => "sealed",
            EpisodeState::Forgotten => "forgotten",
        }
    }

    /// Whether the episode's messages are in the view.
    pub fn messages_in_view(self) -> bool {
        matches!(self, EpisodeState::Live | EpisodeState::Leaving)
    }

    /// Whether the episode is still remembered (new facts are judged against it).
    pub fn remembered(self) -> bool {
        self != EpisodeState::Forgotten
    }
}

/// One move of an episode to a new state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StateChange {
    /// The state entered.
    pub state: EpisodeState,
    /// When (host clock, ms).
    pub at: i64,
    /// The fade that moved it, if a fade did (a host's `note` call can seal
    /// a leaving episode without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fade: Option<u64>,
}

/// An episode: a run of whole, consecutive messages about one concept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Episode {
    /// Episode id (1, 2, ... in order of formation).
    pub id: u64,
    /// First message id.
    pub first: u64,
    /// Last message id (inclusive).
    pub last: u64,
    /// When it formed: the time of its last message (its encoding stamp).
    pub formed_at: i64,
    /// Its messages' tokens.
    pub tokens: usize,
    /// Current state.
    pub state: EpisodeState,
    /// Every state change, oldest first (formation as live included).
    pub history: Vec<StateChange>,
    /// Ids of its yes-traces (derived from the trace log).
    pub traces: Vec<u64>,
    /// Facts whose source it is (written by notes about it).
    pub facts: Vec<u64>,
    /// Failed note attempts, with the last error, for `explain`.
    #[serde(default)]
    pub note_failures: Vec<NoteFailure>,
    /// When its facts were last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noted: Option<i64>,
    /// When it left the view without facts (its note had failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred: Option<i64>,
    /// When its note was given up after `note_retries` more failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abandoned: Option<i64>,
    /// Its thread: its messages are that thread's messages from `first` to
    /// `last` (other threads' messages between them are not its own).
    #[serde(
        default = "crate::types::message::main_thread",
        skip_serializing_if = "crate::types::message::is_main_thread"
    )]
    pub thread: String,
}

/// A note attempt that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NoteFailure {
    /// When.
    pub at: i64,
    /// What went wrong.
    pub error: String,
}

impl Episode {
    /// Whether it left the view without facts and its note is still to be
    /// retried.
    pub fn awaits_note(&self) -> bool {
        self.deferred.is_some() && self.noted.is_none() && self.abandoned.is_none()
    }

    /// Failed retries of its note since it was deferred (the failure that
    /// deferred it is not a retry).
    pub fn retries(&self) -> usize {
        match self.deferred {
            Some(_) => self.note_failures.len().saturating_sub(1),
            None => 0,
        }
    }
}

impl Episode {
    /// Whether message `m` is one of its messages (of its thread, from
    /// `first` to `last`).
    pub fn holds(&self, m: &crate::types::message::Message) -> bool {
        m.thread == self.thread && (self.first..=self.last).contains(&m.id)
    }
}

/// Ids of `e`'s messages as a short label (`messages 4-9`).
pub fn label(e: &Episode) -> String {
    if e.first == e.last {
        format!("message {}", e.first)
    } else {
        format!("messages {}-{}", e.first, e.last)
    }
}
