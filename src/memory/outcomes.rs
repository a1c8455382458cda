//! What the memory's calls return.

use serde::{Deserialize, Serialize};

use crate::base::health::{Degraded, Health};
use crate::types::episode::Episode;
use crate::types::fact::NewFact;
use crate::types::recall::Distillation;

/// What `add_message` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Added {
    /// The new message's id.
    pub message: u64,
    /// Episodes formed by cuts this message caused.
    pub formed: Vec<u64>,
    /// Whether a sleep fade started in this call (a sleep due while an older
    /// fade is stuck waits for it, and is reported by the call that runs it).
    pub slept: bool,
    /// The fade that ran (started or resumed), if any.
    pub fade: Option<u64>,
    /// The recall block placed before this user message, if any.
    pub recall: Option<u64>,
    /// The recall block this message closed, and distill's decision: for a
    /// reply, when it ran `maintain`; for a user message, the block of a
    /// previous turn that ended without a reply distilling it.
    pub distilled: Option<(u64, Distillation)>,
    /// Steps of this call that went on without the model.
    pub degraded: Vec<Degraded>,
    /// What the `maintain` run after a reply that ended the turn did
    /// (`maintain_after_reply`).
    pub maintained: Option<Maintained>,
    /// Why that `maintain` failed, if it did: the message itself is
    /// committed; the work stays pending for the next call.
    pub maintain_error: Option<String>,
    /// The message's client id was already in the memory: nothing was
    /// written, and `message` (with the recall block placed before it) is
    /// the first add's.
    #[serde(default)]
    pub duplicate: bool,
}

/// What `maintain` did: the work that waits after a reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Maintained {
    /// Messages given their boundary judgment.
    pub judged: Vec<u64>,
    /// Episodes formed by the cuts those judgments placed.
    pub formed: Vec<u64>,
    /// Recall blocks distilled, with the decisions.
    pub distilled: Vec<(u64, Distillation)>,
    /// The fade that ran (a sleep settled, a fade ahead, or one the ceiling
    /// needed), if any.
    pub fade: Option<u64>,
    /// Episodes noted and sealed.
    pub sealed: Vec<u64>,
    /// Episodes that left the view without facts (their note failed; retried
    /// by later calls).
    pub deferred: Vec<u64>,
    /// Episodes whose deferred note was written now.
    pub noted_late: Vec<u64>,
    /// Episodes whose note was given up after `note_retries` failures.
    pub abandoned: Vec<u64>,
    /// Recall blocks that gave way to keep recall within its share.
    pub gave_way: Vec<u64>,
    /// The thread idle for `sleep_after_hours` put to sleep, with its fade
    /// (its episodes left its view and were noted): one a call, the call's
    /// own thread first, else the longest idle; `idle_threads` of
    /// [`Pending`] drives the rest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slept: Vec<(String, u64)>,
    /// Steps that went on without the model.
    pub degraded: Vec<Degraded>,
}

/// Work waiting for `maintain`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Pending {
    /// Messages whose boundary judgment waits.
    pub unjudged: Vec<u64>,
    /// Recall blocks whose turn is over, waiting for distill.
    pub undistilled: Vec<u64>,
    /// Episodes leaving (in view, their facts not written yet).
    pub leaving: Vec<u64>,
    /// Episodes out of view whose deferred note waits for a retry.
    pub awaiting_note: Vec<u64>,
    /// Whether the next turn would not fit: a fade ahead is due.
    pub fade_ahead: bool,
    /// Threads idle for `sleep_after_hours` that `maintain` will put to
    /// sleep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_threads: Vec<String>,
}

impl Pending {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.unjudged.is_empty()
            && self.undistilled.is_empty()
            && self.leaving.is_empty()
            && self.awaiting_note.is_empty()
            && !self.fade_ahead
            && self.idle_threads.is_empty()
    }
}

/// Arguments of the `note` tool, as a host's chat model calls it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteArgs {
    /// The episode the facts come from (default: the oldest leaving one,
    /// else the newest episode).
    #[serde(default)]
    pub episode: Option<u64>,
    /// The facts.
    pub facts: Vec<NewFact>,
}

/// What a `note` call wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NoteOutcome {
    /// The episode the facts were written for.
    pub episode: u64,
    /// New facts.
    pub added: Vec<u64>,
    /// Held facts restated (merged).
    pub merged: Vec<u64>,
    /// Held facts retired by the new ones. (A new fact that arrives already
    /// contradicted by a newer held fact is in `added`, marked retired.)
    pub retired: Vec<u64>,
    /// Whether the episode was leaving and is now sealed.
    pub sealed: bool,
}

/// An episode as hosts list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct EpisodeInfo {
    /// The episode.
    #[serde(flatten)]
    pub episode: Episode,
    /// Activation now.
    pub activation: f64,
    /// Significance.
    pub significance: f64,
}

/// Counts of a memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Stats {
    /// Messages (erased ones included: their ids stay, as tombstones).
    pub messages: usize,
    /// Episodes by state: live, leaving, sealed, forgotten.
    pub episodes: [usize; 4],
    /// Messages in the open stretch.
    pub open_messages: usize,
    /// Facts (live, retired); erased ones are neither.
    pub facts: [usize; 2],
    /// Entities (erased ones not counted).
    pub entities: usize,
    /// Traces (all answers, yes answers).
    pub traces: [usize; 2],
    /// Fades.
    pub fades: usize,
    /// Committed log entries.
    pub log_entries: u64,
    /// View size now.
    pub view_tokens: usize,
    /// The ceiling.
    pub ceiling: usize,
    /// Work waiting for `maintain`.
    pub pending: Pending,
    /// The model's health as this handle saw it: requests and failures per
    /// task, consecutive failures, the last error and when.
    pub model: Health,
    /// Why stored data was not used as is since this handle opened (a
    /// damaged or disagreeing snapshot, ignored: the state was rebuilt from
    /// the log), and, last, whether the host clock went back (a line
    /// starting `clock:`, see [`Memory::clock_warning`]). Empty when
    /// everything read clean and the clock never went back.
    #[serde(default)]
    pub storage_warnings: Vec<String>,
}

/// What a writing call returns, told the call's degraded steps (the
/// outcomes that report them keep them).
/// What `add_messages` did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Batch {
    /// The new messages' ids, in order.
    pub messages: Vec<u64>,
    /// Messages skipped because the memory holds their client id (a retried
    /// batch): the ids they were stored under.
    pub duplicates: Vec<u64>,
}

pub(super) trait Outcome {
    fn set_degraded(&mut self, _degraded: &[Degraded]) {}
}

impl Outcome for Added {
    fn set_degraded(&mut self, degraded: &[Degraded]) {
        self.degraded = degraded.to_vec();
    }
}

impl Outcome for Maintained {
    fn set_degraded(&mut self, degraded: &[Degraded]) {
        self.degraded = degraded.to_vec();
    }
}

impl Outcome for NoteOutcome {}

impl Outcome for Batch {}

impl Outcome for crate::types::fact::Remembered {}

/// Whether the instructions changed.
impl Outcome for bool {}
