//! The view's kept token counts: derived from the events, never stored,
//! kept in the [`State`](crate::state::State); the view reads and fills
//! them.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use crate::types::event::Event;

/// The token counts of the view's parts, kept in the [`State`](crate::state::State) (derived,
/// never stored) so that the view's size is not rendered again on every
/// question: the instructions, the facts block, each recall block, each
/// leaving warning, and the total. Applying an event drops what it can
/// change (`Sizes::changed`); a part is counted again when next asked.
///
/// Counts come from the host model's `count_tokens`: a state's counts
/// assume one model, as a `Memory` owns its state and its model together
/// (a state built elsewhere, as `view_at`'s, starts empty, and a clone
/// starts empty too). Recall blocks' counts also depend on the config's
/// `passage_tokens`: they are dropped when asked with another.
#[derive(Default)]
pub struct Sizes(Mutex<Kept>);

#[derive(Default)]
pub(crate) struct Kept {
    /// The `passage_tokens` the block counts and the total were made with.
    pub(crate) passage_tokens: usize,
    pub(crate) instructions: Option<usize>,
    pub(crate) facts: Option<usize>,
    /// Recall block id -> its tokens (0: shows nothing).
    pub(crate) blocks: BTreeMap<u64, usize>,
    /// Episode id -> the tokens of its leaving warning.
    pub(crate) warnings: BTreeMap<u64, usize>,
    pub(crate) total: Option<usize>,
}

impl Clone for Sizes {
    fn clone(&self) -> Self {
        Sizes::default()
    }
}

impl PartialEq for Sizes {
    /// Kept counts are a cache: two states are equal whatever they keep.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Sizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sizes")
    }
}

impl Sizes {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The kept counts, those made with another `passage_tokens` dropped.
    pub(crate) fn lock_for(&self, passage_tokens: usize) -> MutexGuard<'_, Kept> {
        let mut k = self.lock();
        if k.passage_tokens != passage_tokens {
            k.blocks.clear();
            k.total = None;
            k.passage_tokens = passage_tokens;
        }
        k
    }

    /// Drops what applying `event` can change (called by `State::apply`
    /// before it applies it).
    pub(crate) fn changed(&mut self, event: &Event) {
        let k = self.0.get_mut().unwrap_or_else(|e| e.into_inner());
        match event {
            // A new message joins the open stretch, in view, with no recall
            // block yet.
            // A regenerated answer hides the one it replaces (and a recall
            // block's item of it): counted again.
            Event::Message(m) if m.replaces.is_some() => {
                k.blocks.clear();
                k.total = None;
            }
            Event::Message(m) => k.total = k.total.map(|t| t + m.tokens),
            // Nothing the view shows: messages move from the open stretch
            // into a live episode (both in view), judgments, traces,
            // fades' records, note bookkeeping, passages (a block shows
            // only passages indexed before it), new entities (no fact
            // names one yet).
            Event::EpisodeFormed { .. }
            | Event::Trace(_)
            | Event::Declined { .. }
            | Event::SleepDue { .. }
            | Event::FadeStarted(_)
            | Event::FadeLanding { .. }
            | Event::FadeFinished { .. }
            | Event::NoteFailed { .. }
            | Event::Noted { .. }
            | Event::NoteDeferred { .. }
            | Event::NoteAbandoned { .. }
            | Event::PassagesIndexed { .. }
            | Event::EntityAdded(_)
            | Event::Judged { .. } => {}
            Event::InstructionsSet { .. } => {
                k.instructions = None;
                k.total = None;
            }
            // Episodes in view and the facts block change.
            Event::StateChanged { .. } => {
                k.facts = None;
                k.total = None;
            }
            Event::Recalled(_) => k.total = None,
            Event::RecallGaveWay { block, .. } | Event::Distilled { block, .. } => {
                k.blocks.remove(block);
                k.total = None;
            }
            // Facts (and the names heading them) render in the facts block
            // and in recall blocks.
            Event::AliasAdded { .. }
            | Event::FactAdded(_)
            | Event::FactRestated { .. }
            | Event::FactRetired { .. } => {
                k.facts = None;
                k.blocks.clear();
                k.total = None;
            }
            _ => *k = Kept::default(),
        }
    }
}
