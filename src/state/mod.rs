//! The memory's state: the fold of its events, plus derived lookups.
//!
//! The derived lookups (`#[serde(skip)]`: alias index, facts by entity, the
//! word indexes and the meaning indexes of facts, passages and entity names)
//! are updated as each event is applied and rebuilt from the state on load
//! ([`State::rebuild_derived`]).

use crate::state::line::Line;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};
use crate::index::bm25::Bm25;
use crate::index::vector::VectorIndex;
use crate::types::entity::Entity;
use crate::types::episode::{Episode, EpisodeState};
use crate::types::fact::Fact;
use crate::types::fade::Fade;
use crate::types::message::Message;
use crate::types::recall::{Passage, RecallBlock};
use crate::types::trace::Trace;

/// Everything a memory holds. Ids are 1-based positions in their vectors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Every message, in order.
    pub messages: Vec<Message>,
    /// Every episode, in order of formation.
    pub episodes: Vec<Episode>,
    /// Every trace, in order: the yes answers and the encoding traces (and,
    /// in memories written before format 3, the no answers).
    pub traces: Vec<Trace>,
    /// Per judged fact, how many episodes answered no (format 3 counts them
    /// instead of storing a trace each).
    #[serde(default)]
    pub declined: BTreeMap<u64, u32>,
    /// Every entity.
    pub entities: Vec<Entity>,
    /// Every fact (retired ones included).
    pub facts: Vec<Fact>,
    /// Every fade.
    pub fades: Vec<Fade>,
    /// Dimension of the model's embeddings, fixed by the first one seen.
    pub dimension: Option<usize>,
    /// Passages of sealed episodes, for recall.
    #[serde(default)]
    pub passages: Vec<Passage>,
    /// Recall blocks, in order.
    #[serde(default)]
    pub recalls: Vec<RecallBlock>,
    /// Time of the last user message.
    pub last_user_at: Option<i64>,
    /// The host's own instructions, pinned first in every view, and when
    /// they were set.
    #[serde(default)]
    pub instructions: Option<(String, i64)>,
    /// A sleep that is due and has not started its fade yet.
    #[serde(default)]
    pub sleep_due: Option<i64>,
    /// Normal form of every alias -> entity id (derived).
    #[serde(skip)]
    pub alias_index: BTreeMap<String, u64>,
    /// Per entity (at its id - 1): ids of the facts naming it as subject or
    /// object (derived; entity ids are positions, so a vector, grown to the
    /// highest entity named).
    #[serde(skip)]
    pub facts_by_entity: Vec<Vec<u64>>,
    /// Word index over facts: sentence plus entity names and aliases (derived).
    #[serde(skip)]
    pub fact_index: Bm25,
    /// Word index over passages (derived).
    #[serde(skip)]
    pub passage_index: Bm25,
    /// Meaning index over fact embeddings (derived).
    #[serde(skip)]
    pub fact_vectors: VectorIndex,
    /// Meaning index over passage embeddings (derived).
    #[serde(skip)]
    pub passage_vectors: VectorIndex,
    /// Meaning index over entity name embeddings (derived).
    #[serde(skip)]
    pub entity_vectors: VectorIndex,
    /// User message id -> its recall block (derived).
    #[serde(skip)]
    pub recall_by_message: BTreeMap<u64, u64>,
    /// Recall blocks neither distilled nor given way (derived): those that
    /// may await distill, so a turn does not scan every block of a long
    /// memory (one per user message) to find the few that do.
    #[serde(skip)]
    pub undistilled: BTreeSet<u64>,
    /// Client id -> message id (derived).
    #[serde(skip)]
    pub by_client_id: BTreeMap<String, u64>,
    /// Episodes whose messages are in view: live and leaving (derived).
    #[serde(skip)]
    pub in_view: BTreeSet<u64>,
    /// Sealed episodes, whose live facts are the facts block (derived).
    #[serde(skip)]
    pub sealed: BTreeSet<u64>,
    /// Episodes whose deferred note waits for a retry (derived).
    #[serde(skip)]
    pub awaiting_note: BTreeSet<u64>,
    /// Each thread's messages, episodes and kept view sizes (derived; see
    /// [`Line`]).
    #[serde(skip)]
    pub threads: BTreeMap<String, Line>,
    /// While set, the word indexes are left as they are (a load that will
    /// put the stored ones in place, see [`crate::store::log::load`]): events
    /// change every other lookup as usual.
    #[serde(skip)]
    pub(crate) words_deferred: bool,
}

pub mod activation;
mod apply;
mod check;
mod derived;
pub mod line;
pub mod scrub;
pub mod sizes;
pub mod thread;

fn get<T>(v: &[T], id: u64, what: &str) -> Result<usize> {
    let i = id
        .checked_sub(1)
        .ok_or_else(|| Error::Corrupt(format!("{what} id 0")))? as usize;
    if i < v.len() {
        Ok(i)
    } else {
        Err(Error::Corrupt(format!("unknown {what} {id}")))
    }
}

fn next_id(len: usize, id: u64, what: &str) -> Result<()> {
    if id == len as u64 + 1 {
        Ok(())
    } else {
        Err(Error::Corrupt(format!(
            "{what} id {id} out of sequence (expected {})",
            len + 1
        )))
    }
}

/// The largest token count a stored message or episode may hold (sums of
/// them must not overflow).
const MAX_TOKENS: usize = 100_000_000;

/// Checks a stored time stamp: ages are computed from it, so one outside
/// 1970..3000 is damage, refused before it can overflow.
fn time(at: i64, what: &str) -> Result<()> {
    if (0..=crate::base::text::MAX_CLOCK_MS).contains(&at) {
        Ok(())
    } else {
        Err(Error::Corrupt(format!(
            "a {what} is stamped {at}, outside 1970..3000"
        )))
    }
}

impl State {
    /// Whether some episode could leave a fade in `thread`: a sealed one
    /// (of any thread), or a live one of `thread` other than its newest
    /// (which never leaves).
    pub fn can_leave(&self, thread: &str) -> bool {
        !self.sealed.is_empty()
            || self
                .in_view_of(thread)
                .filter(|e| e.state == EpisodeState::Live)
                .nth(1)
                .is_some()
    }

    /// Whether message `id` is in its thread's view (its episode live or
    /// leaving, or it is in the open stretch).
    pub fn message_in_view(&self, id: u64) -> bool {
        let Some(m) = id
            .checked_sub(1)
            .and_then(|i| self.messages.get(i as usize))
        else {
            return false;
        };
        let line = self.line(&m.thread);
        if line.open_ids().first().is_some_and(|&open| id >= open) {
            return true;
        }
        let i = line
            .episodes
            .partition_point(|&e| self.episode(e).is_some_and(|e| e.last < id));
        line.episodes
            .get(i)
            .and_then(|&e| self.episode(e))
            .is_some_and(|e| e.first <= id && e.state.messages_in_view())
    }

    /// Ids of the facts about an entity (as subject or object).
    pub fn facts_about(&self, entity: u64) -> &[u64] {
        entity
            .checked_sub(1)
            .and_then(|i| self.facts_by_entity.get(i as usize))
            .map_or(&[], |v| v.as_slice())
    }

    /// First message id of `thread`'s open stretch (messages not in an
    /// episode yet): the next message's id when it is empty.
    pub fn open_from(&self, thread: &str) -> u64 {
        let line = self.line(thread);
        line.ids
            .get(line.open)
            .copied()
            .unwrap_or(self.messages.len() as u64 + 1)
    }

    /// Messages of `thread`'s open stretch.
    pub fn open_stretch(&self, thread: &str) -> Cow<'_, [Message]> {
        self.messages_of(self.line(thread).open_ids())
    }

    /// Message by id.
    pub fn message(&self, id: u64) -> &Message {
        &self.messages[(id - 1) as usize]
    }

    /// Messages of an episode.
    pub fn episode_messages(&self, e: &Episode) -> Cow<'_, [Message]> {
        self.messages_of(self.episode_ids(e))
    }

    /// Episode by id, if it exists.
    pub fn episode(&self, id: u64) -> Option<&Episode> {
        id.checked_sub(1)
            .and_then(|i| self.episodes.get(i as usize))
    }

    /// Fact by id, if it exists.
    pub fn fact(&self, id: u64) -> Option<&Fact> {
        id.checked_sub(1).and_then(|i| self.facts.get(i as usize))
    }

    /// Entity by id, if it exists.
    pub fn entity(&self, id: u64) -> Option<&Entity> {
        id.checked_sub(1)
            .and_then(|i| self.entities.get(i as usize))
    }

    /// Trace by id.
    pub fn trace(&self, id: u64) -> &Trace {
        &self.traces[(id - 1) as usize]
    }

    /// An episode's yes-traces.
    pub fn yes_traces<'a>(&'a self, e: &'a Episode) -> impl Iterator<Item = &'a Trace> + 'a {
        e.traces.iter().map(|&t| self.trace(t))
    }

    /// Activation of an episode at `now`.
    pub fn activation(&self, e: &Episode, now: i64) -> f64 {
        crate::state::activation::activation(self.yes_traces(e), now)
    }

    /// Significance of an episode.
    pub fn significance(&self, e: &Episode) -> f64 {
        crate::state::activation::significance(self.yes_traces(e))
    }

    /// Tool call ids made in `thread`'s open stretch and not answered yet.
    /// A user message abandons the calls still waiting (the chat APIs want
    /// a call's output right after it, so none can come after the user spoke).
    pub fn pending_tool_calls(&self, thread: &str) -> Vec<String> {
        crate::types::message::pending_after(&self.open_stretch(thread))
    }

    /// The newest episode of `thread` still live (it never leaves).
    pub fn newest_live(&self, thread: &str) -> Option<u64> {
        self.line(thread)
            .episodes
            .iter()
            .rev()
            .copied()
            .find(|&id| {
                self.episode(id)
                    .is_some_and(|e| e.state == EpisodeState::Live)
            })
    }

    /// The text of messages `first..=last` of `first`'s thread (a
    /// passage's), one `role: text` line each, erased messages left out.
    pub fn passage_text(&self, first: u64, last: u64) -> String {
        let thread = &self.message(first).thread;
        self.line(thread)
            .between(first, last)
            .iter()
            .map(|&id| self.message(id))
            .filter(|m| m.shown())
            .map(|m| format!("{}: {}", m.role.as_str(), m.display_text()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The fade still running, if any.
    pub fn running_fade(&self) -> Option<&Fade> {
        self.fades.last().filter(|f| f.finished_at.is_none())
    }
}
