//! Writing calls: each runs against the state as read from the store and
//! commits in one conditional write, retried when another writer won the
//! log head.

use crate::base::error::Result;
use crate::base::health::Report;
use crate::base::host::{Clock, Model, Store};
use crate::llm::memo::{Answers, Memo};
use crate::memory::handle::Memory;
use crate::memory::outcomes::{Added, Batch, Maintained, NoteArgs, NoteOutcome, Outcome};
use crate::memory::turn::{add, add_batch, host_note, instruct, maintain};
use crate::state::State;
use crate::step::Ctx;
use crate::store;
use crate::store::LogPosition;
use crate::types::message::NewMessage;

impl<S: Store, M: Model, C: Clock> Memory<S, M, C> {
    /// Runs `attempt` against the state brought up to the store until it
    /// is done, at most `conflict_attempts` times; a race lost to another
    /// writer reads the state again before the next attempt. The one retry
    /// loop of every writing call.
    ///
    /// An attempt that makes no model call before its commit
    /// ([`Attempt::on_held_state`]: a reply, a tool call or output, a batch)
    /// on a handle whose last head read found nothing new
    /// ([`Memory::holds_store_state`]) first runs on the state it holds,
    /// without reading the head:
    /// its guarded commit is the check that nothing moved (another writer's
    /// commit makes it conflict, reload and run again). One that commits
    /// nothing, or fails on input, is checked against the head instead (one
    /// read) and runs again if the head had moved: every outcome is the
    /// store's latest state's.
    pub(super) async fn retry_on_conflict<A: Attempt<S, M, C>>(
        &mut self,
        attempt: &mut A,
    ) -> Result<A::Output> {
        self.writable()?;
        let mut held = attempt.on_held_state() && self.holds_store_state();
        if held {
            // (Its maintain's sync is this call's too.)
            self.same_call = false;
        }
        for _ in 0..self.config.conflict_attempts {
            if !held {
                self.sync().await?;
            }
            let seq = self.pos.seq;
            let done = attempt
                .attempt(self)
                .await
                .inspect_err(|_| self.met_store_at = None);
            if std::mem::take(&mut held) && self.pos.seq == seq && self.unchecked(&done) {
                // Nothing committed proved the held state current: compare
                // the head now, and run again on what another writer added.
                let head = self.pos.head_raw.clone();
                self.sync().await?;
                match done {
                    Ok(Some(d)) if self.pos.seq == seq && self.pos.head_raw == head => {
                        return Ok(d)
                    }
                    Err(e) if self.pos.seq == seq && self.pos.head_raw == head => return Err(e),
                    _ => continue,
                }
            }
            if let Some(done) = done? {
                if self.pos.seq != seq {
                    // Its own commit: the state is the store's as of now.
                    self.met_store_now();
                }
                return Ok(done);
            }
            self.dirty = true;
            self.quiet = false;
            self.met_store_at = None;
        }
        Err(self.busy())
    }

    /// Whether the handle's state is the store's as of its last read or
    /// commit, with nothing applied since that the store does not hold, and
    /// that read found no other writer at work (so a conflict, which costs
    /// a reload, is unlikely): a write on it may skip the head read (its
    /// commit is guarded).
    fn holds_store_state(&self) -> bool {
        self.quiet && !self.dirty && self.salvage.is_none() && self.pos.seq != 0
    }

    /// Whether an attempt's outcome needs the head compared before it
    /// stands: it committed nothing (`Some` with no commit: a duplicate)
    /// or failed on its input or the state's (not on the store or model).
    fn unchecked<T>(&self, done: &Result<Option<T>>) -> bool {
        match done {
            Ok(Some(_)) => true,
            Ok(None) => false,
            Err(e) => matches!(e, crate::base::error::Error::InvalidInput(_)),
        }
    }

    /// Runs `op` against the latest state and commits its events; on a
    /// conflict with another writer, reloads and runs it again. Degraded
    /// steps are counted in the health and queued for
    /// [`Memory::take_degraded`]; with `strict`, one fails the call.
    pub(super) async fn transact<O: Operation>(&mut self, op: &O) -> Result<O::Output> {
        let mut attempt = Transact {
            op,
            answers: Answers::default(),
        };
        self.retry_on_conflict(&mut attempt).await
    }
}

/// One attempt of a writing call against the state as read from the store:
/// `Some` when done, `None` when another writer won the log head (a failed
/// write marks the state to be read again).
pub(super) trait Attempt<S: Store, M: Model, C: Clock> {
    type Output;
    async fn attempt(&mut self, memory: &mut Memory<S, M, C>) -> Result<Option<Self::Output>>;
    /// Whether it makes no model call before its commit, so a first try on
    /// the handle's state costs nothing when another writer got there first
    /// (see [`Memory::retry_on_conflict`]).
    fn on_held_state(&self) -> bool {
        false
    }
}

/// A writing call's work on the state through [`Ctx`], whose events
/// [`Transact`] commits.
pub(super) trait Operation {
    type Output: Outcome;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<Self::Output>;
    /// The thread it acts in.
    fn thread(&self) -> &str {
        crate::types::message::MAIN_THREAD
    }
    /// The time it acts at, when the caller gave one (a dated message):
    /// the call runs as if then.
    fn at(&self) -> Option<i64> {
        None
    }
    /// Whether it makes no model call before its commit
    /// ([`Attempt::on_held_state`]).
    fn on_held_state(&self) -> bool {
        false
    }
}

pub(super) struct AddMessage(pub(super) NewMessage);
pub(super) struct AddBatch<'a>(pub(super) &'a [NewMessage]);
pub(super) struct Instruct<'a>(pub(super) &'a str);
pub(super) struct Note(pub(super) NoteArgs);
/// `turn_ended`: the host says the latest turn is over (`end_turn`);
/// `judge`: make the waiting boundary judgments too (the run after a reply
/// leaves them to the next user message's round, where they go out with
/// that message's own and cost no extra call).
pub(super) struct Maintain<'a> {
    pub(super) turn_ended: bool,
    pub(super) judge: bool,
    /// The thread whose turn (ended or not) it follows.
    pub(super) thread: &'a str,
    /// The time of the dated message it follows, if any.
    pub(super) at: Option<i64>,
}

impl Operation for AddMessage {
    type Output = Added;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<Added> {
        add(ctx, &self.0).await
    }
    fn thread(&self) -> &str {
        &self.0.thread
    }
    fn at(&self) -> Option<i64> {
        self.0.at
    }
    /// A reply, tool call or tool output asks the model nothing before its
    /// commit (a user message's round does).
    fn on_held_state(&self) -> bool {
        self.0.role != crate::types::message::Role::User
    }
}

impl Operation for AddBatch<'_> {
    type Output = Batch;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<Batch> {
        add_batch(ctx, self.0)
    }
    /// A batch asks the model nothing (its messages are judged later).
    fn on_held_state(&self) -> bool {
        true
    }
}

impl Operation for Instruct<'_> {
    type Output = bool;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<bool> {
        instruct(ctx, self.0).await
    }
}

impl Operation for Note {
    type Output = NoteOutcome;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<NoteOutcome> {
        host_note(ctx, &self.0).await
    }
}

impl Operation for Maintain<'_> {
    type Output = Maintained;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<Maintained> {
        Ok(maintain(ctx, self.turn_ended, self.judge).await)
    }
    fn thread(&self) -> &str {
        self.thread
    }
    fn at(&self) -> Option<i64> {
        self.at
    }
}

/// An operation run and its events committed; the model's answers are
/// kept across attempts, so a re-run asks only what changed.
pub(super) struct Transact<'a, O> {
    op: &'a O,
    answers: Answers,
}

impl<S: Store, M: Model, C: Clock, O: Operation> Attempt<S, M, C> for Transact<'_, O> {
    type Output = O::Output;
    fn on_held_state(&self) -> bool {
        self.op.on_held_state()
    }
    async fn attempt(&mut self, me: &mut Memory<S, M, C>) -> Result<Option<O::Output>> {
        let model = Memo::new(&me.model, &self.answers);
        let mut events = Vec::new();
        let stamp = me.stamp()?;
        let op = self.op;
        let now = match op.at() {
            Some(at) => crate::types::message::check_date(at, stamp)?,
            None => stamp,
        };
        let report = Report::default();
        let result = {
            let mut ctx = Ctx {
                model: &model,
                config: &me.config,
                state: &mut me.state,
                events: &mut events,
                now,
                thread: op.thread(),
                report: &report,
            };
            op.run(&mut ctx).await
        };
        me.health.record(&report, stamp);
        let degraded = report
            .degraded
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        // A failed note never fails a strict call: the episode is deferred,
        // retried and given up as without strict (its passages stay
        // recallable), and each failure is reported in `degraded`. Failing
        // the call instead wrote nothing, so the same note failed every
        // later call, for ever.
        let blocking = degraded
            .iter()
            .find(|d| d.task != crate::base::host::Task::Note);
        let result = match (result, blocking) {
            (Ok(_), Some(d)) if me.config.strict => Err(d.strict_error()),
            (r, _) => r,
        };
        let mut outcome = match result {
            Ok(o) => o,
            Err(e) => {
                me.dirty |= !events.is_empty();
                me.degraded.extend(degraded);
                return Err(e);
            }
        };
        outcome.set_degraded(&degraded);
        if !events.is_empty() {
            let committed = store::log::commit(
                &me.store,
                &mut me.pos,
                events,
                stamp,
                me.config.snapshot_every,
            )
            .await
            .inspect_err(|_| me.dirty = true)?;
            if committed == store::log::Committed::Conflict {
                return Ok(None);
            }
        }
        me.degraded.extend(degraded);
        me.save_graphs().await;
        Ok(Some(outcome))
    }
}

/// Erasing: the stored log rewritten without what the target reaches.
pub(super) struct Erase(pub(super) crate::types::erase::Target);

impl<S: Store, M: Model, C: Clock> Attempt<S, M, C> for Erase {
    type Output = crate::types::erase::Erased;
    async fn attempt(&mut self, me: &mut Memory<S, M, C>) -> Result<Option<Self::Output>> {
        let erased = crate::erase::plan(&me.state, self.0.clone())?;
        if erased.is_empty() {
            return Ok(Some(erased));
        }
        let now = me.stamp()?;
        let log = store::rewrite::read_log(&me.store, &me.pos).await?;
        let (entries, state) =
            store::rewrite::scrub_log(&me.state, log, self.0.clone(), &erased, now)?;
        let mut pos = me.pos.clone();
        // A failed write may have landed in part of an unusual store:
        // everything is read again next time.
        let (committed, _) =
            store::rewrite::rewrite(&me.store, &mut pos, entries, me.config.snapshot_every)
                .await
                .inspect_err(|_| me.dirty = true)?;
        if committed == store::log::Committed::Conflict {
            return Ok(None);
        }
        me.state = state;
        me.pos = pos;
        me.save_graphs().await;
        Ok(Some(erased))
    }
}

/// Destroying: every key of the namespace deleted.
pub(super) struct Destroy;

impl<S: Store, M: Model, C: Clock> Attempt<S, M, C> for Destroy {
    type Output = ();
    async fn attempt(&mut self, me: &mut Memory<S, M, C>) -> Result<Option<()>> {
        let mut pos = me.pos.clone();
        let committed = store::rewrite::destroy(&me.store, &mut pos)
            .await
            .inspect_err(|_| me.dirty = true)?;
        if committed == store::log::Committed::Conflict {
            return Ok(None);
        }
        me.state = State::default();
        me.pos = pos;
        Ok(Some(()))
    }
}

/// Brings `state` up to the store: the tail other writers committed, or a
/// full reload when `dirty` (after a failed call).
pub(super) async fn sync<S: Store>(
    store: &S,
    state: &mut State,
    pos: &mut LogPosition,
    dirty: &mut bool,
) -> Result<()> {
    if *dirty {
        // (A reload after a failed call: a damaged snapshot it meets was
        // met at open too, and is reported there.)
        let (s, p, _) = store::log::load(store, pos.keys.clone()).await?;
        *state = s;
        *pos = p;
        *dirty = false;
        return Ok(());
    }
    store::log::catch_up(store, state, pos)
        .await
        .inspect_err(|_| {
            // Part of the tail may have been applied: reload next time.
            *dirty = true;
        })?;
    Ok(())
}
