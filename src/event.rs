//! The append-only events that make up a memory. State is their fold.

use serde::{Deserialize, Serialize};

use crate::episode::{NoteFailure, StateChange};
use crate::erase::{Erased, Target};
use crate::fact::{Fact, Restatement, Retirement};
use crate::fade::Fade;
use crate::graph::{Alias, Entity};
use crate::message::Message;
use crate::recall::{passage::Passage, Distillation, RecallBlock};
use crate::trace::Trace;

/// One change to a memory. Every public call that changes the memory commits
/// its events in one atomic write; replaying them rebuilds the memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A message was added (with its boundary judgment).
    Message(Message),
    /// The open stretch up to `last` formed an episode.
    EpisodeFormed {
        /// New episode id.
        episode: u64,
        /// First message id.
        first: u64,
        /// Last message id.
        last: u64,
        /// Its formation stamp (time of its last message).
        at: i64,
        /// Its messages' tokens.
        tokens: usize,
    },
    /// A trace was written (a yes, or the encoding trace; logs of format 2
    /// also hold the no answers one by one).
    Trace(Trace),
    /// Episodes judged against a new fact that answered no: counted, not
    /// stored one by one (only a yes counts toward activation).
    Declined {
        /// The fact judged.
        fact: u64,
        /// How many episodes said no.
        episodes: u32,
        /// When.
        at: i64,
    },
    /// An episode moved to a new state.
    StateChanged {
        /// The episode.
        episode: u64,
        /// The move.
        change: StateChange,
    },
    /// The host set its own instructions (persona, tool policy): pinned
    /// first in every view, counted toward the ceiling, never faded. An
    /// empty text removes them.
    InstructionsSet {
        /// The instructions (empty: none).
        text: String,
        /// When.
        at: i64,
    },
    /// A user message came after a long silence: a sleep fade is due (it
    /// starts as soon as no other fade runs).
    SleepDue {
        /// When.
        at: i64,
    },
    /// A fade began.
    FadeStarted(Fade),
    /// A sleep fade's landing, measured again once the message that began
    /// it was cut from the turn before (the cuts change what cannot leave).
    FadeLanding {
        /// The fade.
        fade: u64,
        /// The new landing.
        landing: usize,
        /// The recent turn size it used.
        turn_tokens: usize,
    },
    /// A fade reached its landing (or ran out of episodes to move).
    FadeFinished {
        /// The fade.
        fade: u64,
        /// When.
        at: i64,
        /// View size when it finished.
        view_tokens: usize,
    },
    /// Noting an episode failed (it is deferred or retried later).
    NoteFailed {
        /// The episode.
        episode: u64,
        /// What happened.
        failure: NoteFailure,
    },
    /// A new entity entered the graph.
    EntityAdded(Entity),
    /// A known entity got another name.
    AliasAdded {
        /// The entity.
        entity: u64,
        /// The name.
        alias: Alias,
    },
    /// A new fact.
    FactAdded(Fact),
    /// A held fact was restated (merged).
    FactRestated {
        /// The held fact.
        fact: u64,
        /// The restatement.
        restatement: Restatement,
    },
    /// A held fact was contradicted by a newer one.
    FactRetired {
        /// The retired fact.
        fact: u64,
        /// By which fact, when.
        retirement: Retirement,
    },
    /// A sealed episode's passages were cut and embedded for recall.
    PassagesIndexed {
        /// The passages.
        passages: Vec<Passage>,
    },
    /// A recall block was placed before a user message.
    Recalled(RecallBlock),
    /// A message got its boundary judgment after it was added (judgments
    /// of replies are made after the turn, with the next step's calls).
    Judged {
        /// The message.
        message: u64,
        /// The probability that it starts a new concept, or `None` when the
        /// model failed every attempt (the message then counts as unjudged
        /// for the size rule).
        boundary: Option<f32>,
    },
    /// An episode's facts were written (by the memory's model or the host's
    /// `note` tool).
    Noted {
        /// The episode.
        episode: u64,
        /// When.
        at: i64,
    },
    /// An episode left the view before its facts could be written (its note
    /// failed); its passages are recallable and its note is retried later.
    NoteDeferred {
        /// The episode.
        episode: u64,
        /// When.
        at: i64,
    },
    /// An episode's note failed `note_retries` times after it was deferred:
    /// it stays without facts (its passages stay recallable).
    NoteAbandoned {
        /// The episode.
        episode: u64,
        /// When.
        at: i64,
    },
    /// A recall block in view gave way so recall blocks keep to their share
    /// of the view (older blocks first); its items stay recallable.
    RecallGaveWay {
        /// The block.
        block: u64,
        /// When.
        at: i64,
    },
    /// Distill decided what of a recall block mattered.
    Distilled {
        /// The block.
        block: u64,
        /// The decision.
        distillation: Distillation,
    },
    /// The host erased something on request ([`crate::erase`]). The log
    /// before it was rewritten without what it reached; this entry keeps only
    /// ids and the time.
    Erased {
        /// What the host asked to erase.
        target: Target,
        /// Everything the erase took (ids).
        erased: Erased,
        /// When.
        at: i64,
    },
}
