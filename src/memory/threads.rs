//! The threads of a memory: each one's view, pending work and turn, and
//! their listing.

use serde::{Deserialize, Serialize};

use crate::base::error::Result;
use crate::base::host::{Clock, Model, Store};
use crate::memory::handle::Memory;
use crate::memory::outcomes::{Batch, Maintained, Pending};
use crate::memory::turn::pending;
use crate::memory::write::{AddBatch, Maintain};
use crate::store;
use crate::types::message::{check_thread, NewMessage, Role};
use crate::types::recall::Distillation;
use crate::view::View;

/// One thread, as [`Memory::threads`] lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ThreadInfo {
    /// Its name.
    pub thread: String,
    /// Its first user message (or first message), made one line and clipped
    /// to 80 characters; empty when that message was erased.
    pub title: String,
    /// Its first message's id.
    pub first_message: u64,
    /// Its last message's id.
    pub last_message: u64,
    /// When its first message was added.
    pub first_at: i64,
    /// When its last message was added.
    pub last_at: i64,
    /// Its messages.
    pub messages: usize,
    /// Its user messages.
    pub user_messages: usize,
    /// Its episodes (of every state).
    pub episodes: usize,
    /// Its episodes in its view now (live and leaving).
    pub episodes_in_view: usize,
}

impl<S: Store, M: Model, C: Clock> Memory<S, M, C> {
    /// Every thread with at least one message not erased, by name: title,
    /// first and last message, counts. A thread erased whole
    /// (`erase(Thread)`, or each of its messages) is not listed.
    pub async fn threads(&mut self) -> Result<Vec<ThreadInfo>> {
        self.sync().await?;
        let s = &self.state;
        Ok(s.threads
            .iter()
            .filter_map(|(name, line)| {
                if line.ids.iter().all(|&id| s.message(id).erased) {
                    return None;
                }
                let (&first, &last) = (line.ids.first()?, line.ids.last()?);
                let titled = line
                    .ids
                    .iter()
                    .map(|&id| s.message(id))
                    .find(|m| m.role == Role::User)
                    .unwrap_or(s.message(first));
                let title = match titled.erased {
                    true => String::new(),
                    false => {
                        crate::base::text::clip(&crate::base::text::inline(&titled.content), 80)
                    }
                };
                Some(ThreadInfo {
                    thread: name.clone(),
                    title,
                    first_message: first,
                    last_message: last,
                    first_at: s.message(first).at,
                    last_at: s.message(last).at,
                    messages: line.ids.len(),
                    user_messages: line
                        .ids
                        .iter()
                        .filter(|&&id| s.message(id).role == Role::User)
                        .count(),
                    episodes: line.episodes.len(),
                    episodes_in_view: s.in_view_of(name).count(),
                })
            })
            .collect())
    }

    /// Adds history: `messages` in order (of any threads, each with its
    /// own date or now), in one call and one commit, with no model call.
    /// Each is checked as [`Memory::add_message`] checks it; one bad
    /// message fails the call and nothing is written. Their boundary
    /// judgments wait, and so do the cuts, fades and notes: run
    /// [`Memory::maintain_in`] each thread until [`Memory::pending_in`] is
    /// empty (until then a thread's view may be over the ceiling, and says
    /// so). Episodes formed then are stamped with their messages' dates, so
    /// a chat of last year is not fresh. At most [`crate::memory::limits::MAX_BATCH`] messages.
    pub async fn add_messages(&mut self, messages: &[NewMessage]) -> Result<Batch> {
        self.transact(&AddBatch(messages)).await
    }

    /// The view of `thread` now: the memory-wide facts block, then that
    /// thread's episodes in view, open stretch and recall blocks. A thread
    /// with no message yet has the instructions and the facts block only.
    pub async fn view_in(&mut self, thread: &str) -> Result<View> {
        check_thread(thread)?;
        self.sync().await?;
        Ok(crate::view::build(
            &self.state,
            &self.model,
            &self.config,
            thread,
        ))
    }

    /// The size of `thread`'s view now, in tokens (see
    /// [`Memory::view_tokens`]).
    pub async fn view_tokens_in(&mut self, thread: &str) -> Result<usize> {
        check_thread(thread)?;
        self.sync().await?;
        Ok(crate::view::tokens(
            &self.state,
            &self.model,
            &self.config,
            thread,
        ))
    }

    /// The view of `thread` as it was at `at` (see [`Memory::view_at`]).
    pub async fn view_at_in(&mut self, at: i64, thread: &str) -> Result<View> {
        check_thread(thread)?;
        self.sync().await?;
        let state = match self.salvage.as_ref().and_then(|s| s.log.as_deref()) {
            Some(log) => crate::store::salvage::replay_until(log, at)?,
            None => store::log::replay_until(&self.store, &self.pos, at).await?,
        };
        Ok(crate::view::build(
            &state,
            &self.model,
            &self.config,
            thread,
        ))
    }

    /// Work waiting for [`Memory::maintain_in`] `thread`: its waiting
    /// judgments and fade ahead, and the memory's blocks to distill, leaving
    /// episodes, deferred notes and idle threads to sleep.
    pub async fn pending_in(&mut self, thread: &str) -> Result<Pending> {
        check_thread(thread)?;
        self.sync().await?;
        let view = crate::view::tokens(&self.state, &self.model, &self.config, thread);
        let now = self.now()?;
        Ok(pending(
            &self.state,
            &self.model,
            &self.config,
            (view, now),
            thread,
        ))
    }

    /// [`Memory::maintain`] after a turn of `thread`: its judgments, cuts
    /// and fade ahead, and the memory-wide work (distill, notes, retries,
    /// the sleep of threads idle for `sleep_after_hours`).
    pub async fn maintain_in(&mut self, thread: &str) -> Result<Maintained> {
        check_thread(thread)?;
        self.transact(&Maintain {
            turn_ended: false,
            judge: true,
            thread,
            at: None,
        })
        .await
    }

    /// [`Memory::end_turn`] in `thread`: its latest turn counts as over.
    pub async fn end_turn_in(&mut self, thread: &str) -> Result<Option<(u64, Distillation)>> {
        check_thread(thread)?;
        let m = self
            .transact(&Maintain {
                turn_ended: true,
                judge: true,
                thread,
                at: None,
            })
            .await?;
        let last = self.state.last_user(thread).unwrap_or(0);
        Ok(m.distilled
            .into_iter()
            .find(|(b, _)| self.state.recalls[*b as usize - 1].message == last))
    }
}
