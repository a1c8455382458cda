//! The memory: the engine every host calls. Each public call syncs with the
//! store, does its work, and commits its events in one atomic write before it
//! returns.

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::episode::{Episode, EpisodeState};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::fact::{Fact, NewFact};
use crate::fade::FadeReason;
use crate::graph::Entity;
use crate::health::{Degraded, Health, Report};
use crate::host::{Clock, Model, Store};
use crate::llm::memo::{Answers, Memo};
use crate::llm::tasks::check_fact;
use crate::message::{Message, NewMessage, Role, FRAMING_TOKENS};
use crate::note::Noted;
use crate::recall::{Distillation, RecallBlock, SearchHit, SearchOptions};
use crate::state::State;
use crate::store::{self, Keys, LogPosition};
use crate::trace::Trace;
use crate::view::View;

pub(crate) use crate::step::Ctx;

/// What `add_message` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Steps that went on without the model.
    pub degraded: Vec<Degraded>,
}

/// Work waiting for `maintain`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
}

impl Pending {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.unjudged.is_empty()
            && self.undistilled.is_empty()
            && self.leaving.is_empty()
            && self.awaiting_note.is_empty()
            && !self.fade_ahead
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
trait Outcome {
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

/// Whether the instructions changed.
impl Outcome for bool {}

/// One memory: a conversation, its episodes and its knowledge graph, kept in
/// a host store under one namespace.
///
/// Generic over the host's [`Store`], [`Model`] and [`Clock`]. Calls take
/// `&mut self`, so one handle runs one call at a time; several handles (or
/// hosts) over the same store stay consistent through the compare-and-set
/// commit.
pub struct Memory<S: Store, M: Model, C: Clock> {
    store: S,
    model: M,
    clock: C,
    config: Config,
    state: State,
    pos: LogPosition,
    dirty: bool,
    health: Health,
    degraded: Vec<Degraded>,
    /// Why stored data was not used as is (a damaged snapshot ignored and
    /// rebuilt from the log), oldest first.
    storage_warnings: Vec<String>,
    /// Opened with [`Memory::open_salvage`]: read-only.
    salvage: Option<Salvage>,
    /// The pieces of an export given to [`Memory::import_piece`] so far.
    import_pieces: String,
    /// The latest time this handle used, and the readings it clamped
    /// ([`Memory::now`]). A lock so that `now` takes `&self` (a call reads
    /// the clock while it holds the model borrowed).
    clock_seen: std::sync::Mutex<ClockSeen>,
}

/// What the clock did under this handle: the latest time used, and the
/// readings that went back before the memory's last stamp (clamped to it).
#[derive(Debug, Default)]
struct ClockSeen {
    /// The latest time used by a call of this handle.
    latest: i64,
    /// Readings earlier than the last stamp since this handle opened.
    backwards: u64,
    /// The last such reading, and the time used instead.
    last: Option<(i64, i64)>,
}

/// 2000-01-01T00:00:00Z in ms since the Unix epoch: the earliest clock
/// reading accepted. An earlier one is a clock in the wrong unit (seconds
/// read as milliseconds land in January 1970) or a clock that is not set.
pub const MIN_CLOCK_MS: i64 = 946_684_800_000;

/// A handle opened for salvage: it never writes, and never reads the store
/// again (it holds what was read at open).
struct Salvage {
    /// The log as salvaged, when the stored one was damaged (exports and
    /// past views come from it); none when everything read clean.
    log: Option<Vec<store::LogEntry>>,
}

/// What every call that would write says on a handle opened for salvage.
const READ_ONLY: &str = "opened for salvage: read-only; export it and import into a new store";

/// How to get at a memory that does not open, added to its `Corrupt` error.
const RECOVER: &str = "to recover what can be read, open it for salvage (read-only: \
                       open_salvage in Rust and Python, openSalvage in JavaScript, \
                       open-salvage in the WIT), export it and import the export into \
                       a new store or namespace";

impl<S: Store, M: Model, C: Clock> Memory<S, M, C> {
    /// Opens the memory in `namespace` (creating nothing until the first
    /// change), loading its snapshot and log from `store`.
    pub async fn open(
        namespace: &str,
        store: S,
        model: M,
        clock: C,
        config: Config,
    ) -> Result<Self> {
        let config = config.fitted();
        config.validate()?;
        let (state, pos, warnings) =
            store::load(&store, Keys::new(namespace)?)
                .await
                .map_err(|e| match e {
                    Error::Corrupt(m) => Error::Corrupt(format!("{m} ({RECOVER})")),
                    e => e,
                })?;
        Ok(Self::opened(
            store,
            model,
            clock,
            config,
            (state, pos, warnings),
            None,
        ))
    }

    /// A handle over what was loaded.
    fn opened(
        store: S,
        model: M,
        clock: C,
        config: Config,
        (state, pos, storage_warnings): (State, LogPosition, Vec<String>),
        salvage: Option<Salvage>,
    ) -> Self {
        Memory {
            store,
            model,
            clock,
            config,
            state,
            pos,
            dirty: false,
            health: Health::default(),
            degraded: Vec::new(),
            storage_warnings,
            salvage,
            import_pieces: String::new(),
            clock_seen: Default::default(),
        }
    }

    /// Opens the memory in `namespace` read-only, with whatever of its log
    /// can be read: the way back from a damaged store, where
    /// [`Memory::open`] fails with `Corrupt`. Each log entry that cannot be
    /// read (its segment or tail value missing, truncated, failing its
    /// checksum or not decoding) is skipped, and every later entry is still
    /// applied, event by event: items the lost entries made stand as erased
    /// placeholders so later ones keep their ids, and an event that no
    /// longer applies is dropped (see [`crate::salvage`]). Each loss, with
    /// its key and the entries it held, and the count of dropped events are
    /// in [`Memory::storage_warnings`] (and `stats`). Stored word indexes
    /// and meaning graphs of a damaged log are not used (search is exact).
    ///
    /// Reads work as on any handle (view, episodes, facts, search,
    /// explanations, stats, export); every call that would write (add,
    /// note, maintain, end_turn, instructions, erase, destroy, import)
    /// fails with `InvalidInput` and changes nothing: the store is never
    /// written. Export the memory and import the export into a new store or
    /// namespace to go on with it. The handle does not follow later writes
    /// of other handles. A store that reads clean opens as with `open`,
    /// read-only, with no warnings about the log.
    pub async fn open_salvage(
        namespace: &str,
        store: S,
        model: M,
        clock: C,
        config: Config,
    ) -> Result<Self> {
        let config = config.fitted();
        config.validate()?;
        let keys = Keys::new(namespace)?;
        let (state, pos, warnings, log) = match store::load(&store, keys.clone()).await {
            Ok((state, pos, warnings)) => (state, pos, warnings, None),
            Err(Error::Corrupt(_)) => {
                let (pos, pieces) = store::read_salvage(&store, keys).await?;
                let salvaged = crate::salvage::rebuild(pieces);
                (salvaged.state, pos, salvaged.warnings, Some(salvaged.log))
            }
            Err(e) => return Err(e),
        };
        let loaded = (state, pos, warnings);
        Ok(Self::opened(
            store,
            model,
            clock,
            config,
            loaded,
            Some(Salvage { log }),
        ))
    }

    /// Whether this handle was opened with [`Memory::open_salvage`]
    /// (read-only).
    pub fn is_salvage(&self) -> bool {
        self.salvage.is_some()
    }

    /// Refuses a write on a handle opened for salvage.
    fn writable(&self) -> Result<()> {
        match self.salvage {
            Some(_) => Err(Error::invalid(READ_ONLY)),
            None => Ok(()),
        }
    }

    /// Why stored data was not used as is since this handle opened (a
    /// damaged or disagreeing snapshot, ignored: the state was rebuilt from
    /// the log). Empty when everything read clean.
    pub fn storage_warnings(&self) -> &[String] {
        &self.storage_warnings
    }

    /// The host clock's reading for a call that only reads, checked: a
    /// reading before 2000 (a clock in seconds, or not set) or after the
    /// year 3000 (one in microseconds) is a broken clock, refused with
    /// [`Error::InvalidInput`] naming the likely mistake before it can date
    /// anything.
    fn now(&self) -> Result<i64> {
        let now = self.clock.now_ms();
        let max = crate::text::MAX_CLOCK_MS;
        if now < MIN_CLOCK_MS {
            let hint = match now {
                // 2000..3000 in seconds.
                946_684_800..=32_503_680_000 => {
                    "; did you pass seconds? \
                     (`int(time.time() * 1000)` in Python, `Date.now()` in JavaScript)"
                }
                _ => "; did you pass seconds, or a clock that is not set?",
            };
            return Err(Error::invalid(format!(
                "the clock returned {now}, which is before 2000 ({MIN_CLOCK_MS} ms): clocks \
                 must return milliseconds since the Unix epoch{hint}"
            )));
        }
        if now > max {
            return Err(Error::invalid(format!(
                "the clock returned {now}, which is after the year 3000 ({max} ms): clocks \
                 must return milliseconds since the Unix epoch; did you pass microseconds?"
            )));
        }
        Ok(now)
    }

    /// [`Memory::now`] for a call that writes (its time is stamped on what
    /// it writes): a reading earlier than the memory's last stamp (the
    /// newest time it holds, or the latest this handle wrote with) is
    /// clamped to that stamp, so stamps never go back, and reported in
    /// `stats().storage_warnings` ([`Memory::clock_warning`]).
    fn stamp(&self) -> Result<i64> {
        let now = self.now()?;
        let mut seen = crate::health::lock(&self.clock_seen);
        let last = seen.latest.max(last_stamp(&self.state));
        let used = if now < last {
            seen.backwards += 1;
            seen.last = Some((now, last));
            last
        } else {
            now
        };
        seen.latest = used;
        Ok(used)
    }

    /// Why times this handle used are not the clock's readings: the clock
    /// went back before the memory's last stamp (how many times since this
    /// handle opened, the last reading and the stamp used instead). Also
    /// the last line of `stats().storage_warnings`. `None` while the clock
    /// never went back.
    pub fn clock_warning(&self) -> Option<String> {
        let seen = crate::health::lock(&self.clock_seen);
        seen.last.map(|(read, used)| {
            format!(
                "clock: the host clock went back {} time(s) since this handle opened; \
                 the last reading, {read} ms, was {} ms before the memory's last stamp \
                 and {used} was used instead (times never go back: a reading earlier \
                 than the last stamp is clamped to it)",
                seen.backwards,
                used - read
            )
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The host model (for hosts that need it back).
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Brings the state up to the store: the tail other writers committed,
    /// or a full reload after a failed call.
    async fn sync(&mut self) -> Result<()> {
        if self.salvage.is_some() {
            // What was read at open is all a salvage handle holds.
            return Ok(());
        }
        sync(&self.store, &mut self.state, &mut self.pos, &mut self.dirty).await
    }

    /// Runs `attempt` against the state brought up to the store until it
    /// is done, at most `conflict_attempts` times; a race lost to another
    /// writer reads the state again before the next attempt. The one retry
    /// loop of every writing call.
    async fn retry_on_conflict<A: Attempt<S, M, C>>(
        &mut self,
        attempt: &mut A,
    ) -> Result<A::Output> {
        self.writable()?;
        for _ in 0..self.config.conflict_attempts {
            self.sync().await?;
            if let Some(done) = attempt.attempt(self).await? {
                return Ok(done);
            }
            self.dirty = true;
        }
        Err(self.busy())
    }

    /// Runs `op` against the latest state and commits its events; on a
    /// conflict with another writer, reloads and runs it again. Degraded
    /// steps are counted in the health and queued for
    /// [`Memory::take_degraded`]; with `strict`, one fails the call.
    async fn transact<O: Operation>(&mut self, op: &O) -> Result<O::Output> {
        let mut attempt = Transact {
            op,
            answers: Answers::default(),
        };
        self.retry_on_conflict(&mut attempt).await
    }

    /// Writes the meaning graphs that grew enough since last written
    /// ([`store::save_graphs`]); a failed write is a storage warning and
    /// is tried again by the next call.
    async fn save_graphs(&mut self) {
        let warnings = store::save_graphs(&self.store, &mut self.pos, &self.state).await;
        self.storage_warnings.extend(warnings);
        let warnings = store::save_words(&self.store, &mut self.pos, &self.state).await;
        self.storage_warnings.extend(warnings);
    }

    /// The error of a call that lost the log head `conflict_attempts` times.
    fn busy(&self) -> Error {
        Error::Busy(format!(
            "other writers won the log head {} times in a row",
            self.config.conflict_attempts
        ))
    }

    /// Degraded steps not yet taken, oldest first (every call's, reads
    /// included), for hosts that fire an event per step. Taking empties it.
    pub fn take_degraded(&mut self) -> Vec<Degraded> {
        std::mem::take(&mut self.degraded)
    }

    /// Adds a message. Committed before it returns.
    ///
    /// A user message costs at most one round of model calls before its view
    /// is ready: its boundary judgment, the relevance walk and the split go
    /// out together (and distill of earlier turns' blocks with them). After a
    /// long silence it sleeps first (who leaves is decided now; their notes
    /// are written after the reply). A reply, tool call or tool output makes
    /// no model call; a reply that ends the turn then runs [`Memory::maintain`]
    /// in the same call (`maintain_after_reply`), after the reply is
    /// committed. Whatever the message, the view is within the ceiling when
    /// the call returns (a fade runs at once when it must).
    pub async fn add_message(&mut self, message: NewMessage) -> Result<Added> {
        let mut added = self.transact(&AddMessage(message)).await?;
        let ends_turn = self.config.maintain_after_reply
            && self
                .state
                .messages
                .last()
                .is_some_and(|m| m.role == Role::Assistant)
            && self.state.pending_tool_calls().is_empty();
        if ends_turn {
            // The replies' judgments wait for the next user message's round
            // when it makes calls anyway; otherwise they are made now.
            let judge = !self.config.judges_in_turn();
            let maintained = self
                .transact(&Maintain {
                    turn_ended: false,
                    judge,
                })
                .await;
            match maintained {
                Ok(m) => {
                    added.distilled = m
                        .distilled
                        .iter()
                        .find(|(b, _)| {
                            self.state.recalls[*b as usize - 1].message
                                == last_user(&self.state).unwrap_or(0)
                        })
                        .cloned();
                    added.maintained = Some(m);
                }
                Err(e) => added.maintain_error = Some(e.to_string()),
            }
        }
        Ok(added)
    }

    /// Closes tool call `call_id`, which is waiting for its output and will
    /// have none (the host gave up on the tool, the user moved on): adds
    /// its tool output [`ABANDONED_OUTPUT`], so the conversation stays a
    /// chat every model API accepts. A user, assistant or system message is
    /// refused while a call waits; this is the way past a call with no
    /// output. A call that is not waiting is `InvalidInput`. Returns what
    /// the add did (the output's message id).
    pub async fn abandon_tool_call(&mut self, call_id: &str) -> Result<Added> {
        self.sync().await?;
        if !self.state.pending_tool_calls().iter().any(|c| c == call_id) {
            return Err(Error::invalid(format!(
                "tool call {call_id:?} is not waiting for an output: nothing to abandon"
            )));
        }
        self.add_message(NewMessage::tool_result(call_id, ABANDONED_OUTPUT))
            .await
    }

    /// Runs the work that waits after a reply, when the host chooses (after
    /// the reply is added, in a worker's `waitUntil`, on idle): boundary
    /// judgments of replies (the run a reply makes by itself leaves these to
    /// the next user message's round), distill of every block whose turn is over
    /// (their calls go out together), the notes of leaving episodes, a fade
    /// ahead when the next turn would not fit, retries of deferred notes.
    /// Committed before it returns; returns what it did.
    pub async fn maintain(&mut self) -> Result<Maintained> {
        self.transact(&Maintain {
            turn_ended: false,
            judge: true,
        })
        .await
    }

    /// Work waiting for [`Memory::maintain`].
    pub async fn pending(&mut self) -> Result<Pending> {
        self.sync().await?;
        let view = crate::view::tokens(&self.state, &self.model, &self.config);
        Ok(pending(&self.state, &self.model, &self.config, view))
    }

    /// Sets the host's own instructions (persona, tool policy): they render
    /// first in every view as a system message, count toward the ceiling
    /// and never fade. Setting them again changes them (an event, so the
    /// view of an earlier time shows the instructions of then); an empty
    /// text removes them. Instructions over 64 KiB or over half the ceiling
    /// are refused with `InvalidInput`. Returns whether they changed. A
    /// `system` message added with `add_message` is conversation, and fades.
    pub async fn set_instructions(&mut self, text: &str) -> Result<bool> {
        self.transact(&Instruct(text)).await
    }

    /// The host's instructions now, if set.
    pub async fn instructions(&mut self) -> Result<Option<String>> {
        self.sync().await?;
        Ok(self.state.instructions.as_ref().map(|(t, _)| t.clone()))
    }

    /// Writes facts the host's chat model gave through the `note` tool.
    /// Facts are checked first (a bad one fails the call, nothing written);
    /// a leaving episode noted this way is sealed.
    pub async fn note(&mut self, args: NoteArgs) -> Result<NoteOutcome> {
        self.transact(&Note(args)).await
    }

    /// Ends the turn explicitly (after a reply with tool calls, say): runs
    /// [`Memory::maintain`] with the latest turn counted as over, and
    /// returns the block of its user message with distill's decision, if it
    /// was distilled now.
    pub async fn end_turn(&mut self) -> Result<Option<(u64, Distillation)>> {
        let m = self
            .transact(&Maintain {
                turn_ended: true,
                judge: true,
            })
            .await?;
        let last = last_user(&self.state).unwrap_or(0);
        Ok(m.distilled
            .into_iter()
            .find(|(b, _)| self.state.recalls[*b as usize - 1].message == last))
    }

    /// Searches the memory on demand: the recall pipeline (split, words and
    /// meaning over facts and passages, fusion, optionally the relevance
    /// walk) without changing the view or writing anything.
    pub async fn search(&mut self, query: &str, options: SearchOptions) -> Result<Vec<SearchHit>> {
        if query.trim().is_empty() {
            return Err(Error::invalid("empty query"));
        }
        if self.model.count_tokens(query) > self.config.max_message_tokens {
            return Err(Error::invalid("query is over max_message_tokens"));
        }
        check_search_options(&options)?;
        let mut hits = self.search_whole(query, options).await?;
        for h in &mut hits {
            if h.text.len() > MAX_HIT_TOKENS * 4 {
                h.text = crate::text::clip(&h.text, MAX_HIT_TOKENS);
            }
        }
        Ok(hits)
    }

    /// The whole text of a search hit's item (a fact's sentence, a
    /// passage's messages, a message), which [`Memory::search`] clips at
    /// [`MAX_HIT_TOKENS`]. An item that is not there is `InvalidInput`.
    pub async fn hit_text(&mut self, item: crate::recall::Item) -> Result<String> {
        self.sync().await?;
        let (id, len, kind) = match item {
            crate::recall::Item::Fact(id) => (id, self.state.facts.len(), "fact"),
            crate::recall::Item::Passage(id) => (id, self.state.passages.len(), "passage"),
            crate::recall::Item::Message(id) => (id, self.state.messages.len(), "message"),
        };
        if id == 0 || id > len as u64 {
            return Err(Error::invalid(format!("no {kind} {id}: ids run 1..={len}")));
        }
        Ok(crate::recall::describe(&self.state, item).0)
    }

    async fn search_whole(
        &mut self,
        query: &str,
        options: SearchOptions,
    ) -> Result<Vec<SearchHit>> {
        self.sync().await?;
        let mut events = Vec::new();
        let now = self.now()?;
        let report = Report::default();
        let ctx = Ctx {
            model: &self.model,
            config: &self.config,
            state: &mut self.state,
            events: &mut events,
            now,
            report: &report,
        };
        let hits = crate::recall::search(&ctx, query, &options).await;
        self.health.record(&report, now);
        let degraded = report
            .degraded
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        if let (true, Some(d)) = (self.config.strict, degraded.first()) {
            let e = d.strict_error();
            self.degraded.extend(degraded);
            return Err(e);
        }
        self.degraded.extend(degraded);
        Ok(hits)
    }

    /// Every recall block (with what each search and the walk found, and
    /// distill's decision).
    pub async fn recalls(&mut self) -> Result<Vec<RecallBlock>> {
        self.sync().await?;
        Ok(self.state.recalls.clone())
    }

    /// Why a fact was recalled: for each block that holds it, which searches
    /// hit it at which rank, which walk step kept it, whether distill kept it.
    pub async fn explain_recall(
        &mut self,
        fact: u64,
    ) -> Result<Vec<crate::explain::RecallExplanation>> {
        self.sync().await?;
        crate::explain::recall(&self.state, fact)
    }

    /// Why each item of recall block `block` is there: the searches that
    /// found it and its rank in each, its fused rank, the graph hop.
    pub async fn explain_block(
        &mut self,
        block: u64,
    ) -> Result<Vec<crate::explain::RecalledItemExplanation>> {
        self.sync().await?;
        crate::explain::block(&self.state, block)
    }

    /// The `note` tool definition (OpenAI tools format) to offer a chat model.
    pub fn note_tool() -> serde_json::Value {
        crate::llm::tasks::note_tool()
    }

    /// The view now: what the model should see.
    pub async fn view(&mut self) -> Result<View> {
        self.sync().await?;
        Ok(crate::view::build(&self.state, &self.model, &self.config))
    }

    /// The view's size now, in tokens: `view().tokens` without building the
    /// view (no message text is copied), for a host that only needs to know
    /// how full it is.
    pub async fn view_tokens(&mut self) -> Result<usize> {
        self.sync().await?;
        Ok(crate::view::tokens(&self.state, &self.model, &self.config))
    }

    /// The view as it was at `at` (ms since the Unix epoch), rebuilt by
    /// replaying the log up to the last call committed by then. Nothing is
    /// written; the memory stays at now.
    pub async fn view_at(&mut self, at: i64) -> Result<View> {
        self.sync().await?;
        let state = match self.salvage.as_ref().and_then(|s| s.log.as_deref()) {
            Some(log) => crate::salvage::replay_until(log, at)?,
            None => store::replay_until(&self.store, &self.pos, at).await?,
        };
        Ok(crate::view::build(&state, &self.model, &self.config))
    }

    /// Every episode with its activation now and significance.
    pub async fn episodes(&mut self) -> Result<Vec<EpisodeInfo>> {
        self.sync().await?;
        let now = self.now()?;
        Ok(self
            .state
            .episodes
            .iter()
            .map(|e| EpisodeInfo {
                episode: e.clone(),
                activation: self.state.activation(e, now),
                significance: self.state.significance(e),
            })
            .collect())
    }

    /// Every message, in order (forgotten episodes' included).
    pub async fn messages(&mut self) -> Result<Vec<Message>> {
        self.sync().await?;
        Ok(self.state.messages.clone())
    }

    /// Every fact (retired ones included, marked).
    pub async fn facts(&mut self) -> Result<Vec<Fact>> {
        self.sync().await?;
        Ok(self.state.facts.clone())
    }

    /// Every entity with its aliases.
    pub async fn entities(&mut self) -> Result<Vec<Entity>> {
        self.sync().await?;
        Ok(self.state.entities.clone())
    }

    /// Every fade, oldest first (reason, view size, ceiling, landing, when
    /// it finished).
    pub async fn fades(&mut self) -> Result<Vec<crate::fade::Fade>> {
        self.sync().await?;
        Ok(self.state.fades.clone())
    }

    /// Every trace (yes and no answers).
    pub async fn traces(&mut self) -> Result<Vec<Trace>> {
        self.sync().await?;
        Ok(self.state.traces.clone())
    }

    /// Counts, and the view's size against the ceiling.
    pub async fn stats(&mut self) -> Result<Stats> {
        let view = self.view().await?;
        let s = &self.state;
        let count = |st: EpisodeState| s.episodes.iter().filter(|e| e.state == st).count();
        let live_facts = s.facts.iter().filter(|f| f.is_live()).count();
        Ok(Stats {
            messages: s.messages.len(),
            episodes: [
                count(EpisodeState::Live),
                count(EpisodeState::Leaving),
                count(EpisodeState::Sealed),
                count(EpisodeState::Forgotten),
            ],
            open_messages: s.open_stretch().len(),
            facts: [
                live_facts,
                s.facts.iter().filter(|f| f.retired.is_some()).count(),
            ],
            entities: s.entities.iter().filter(|n| !n.erased).count(),
            traces: [
                s.traces.len() + s.declined.values().map(|&n| n as usize).sum::<usize>(),
                s.traces.iter().filter(|t| t.yes).count(),
            ],
            fades: s.fades.len(),
            log_entries: self.pos.seq,
            view_tokens: view.tokens,
            ceiling: self.config.ceiling_tokens,
            pending: pending(s, &self.model, &self.config, view.tokens),
            model: self.health.clone(),
            storage_warnings: self
                .storage_warnings
                .iter()
                .cloned()
                .chain(self.clock_warning())
                .collect(),
        })
    }

    /// Why an episode is in or out of view.
    pub async fn explain_episode(&mut self, id: u64) -> Result<crate::explain::EpisodeExplanation> {
        self.sync().await?;
        let now = self.now()?;
        crate::explain::episode(&self.state, id, now)
    }

    /// Why a fact is in the facts block, out of it, or retired.
    pub async fn explain_fact(&mut self, id: u64) -> Result<crate::explain::FactExplanation> {
        self.sync().await?;
        crate::explain::fact(&self.state, id)
    }

    /// The whole memory as JSON (every log entry), for backup or moving.
    pub async fn export(&mut self) -> Result<String> {
        self.sync().await?;
        if let Some(log) = self.salvage.as_ref().and_then(|s| s.log.as_ref()) {
            return Ok(store::export_entries(log.clone()));
        }
        store::export(&self.store, &self.pos).await
    }

    /// One part of the export, for memories whose export is too large to
    /// hold as one text (a JavaScript string stops at about 512 MiB; a
    /// wasm guest's memory at 4 GiB): start with no cursor, then pass each
    /// part's `next` until it is none. Each part holds whole log entries,
    /// up to about `max_bytes` of text (at least one entry; `max_bytes` at
    /// least [`store::EXPORT_PART_MIN`]). Joined in order, the parts are
    /// byte for byte what [`Memory::export`] returned when the export
    /// began: entries committed meanwhile are left for a later export. A
    /// cursor that does not fit this memory's log, or one from before an
    /// erasure of this memory or before its namespace was destroyed and
    /// written anew, is `InvalidInput`: start the export again.
    pub async fn export_part(
        &mut self,
        cursor: Option<store::ExportCursor>,
        max_bytes: usize,
    ) -> Result<store::ExportPart> {
        self.sync().await?;
        if let Some(log) = self.salvage.as_ref().and_then(|s| s.log.as_ref()) {
            return store::export_part_of(log, cursor, max_bytes);
        }
        store::export_part(&self.store, &self.pos, cursor, max_bytes).await
    }

    /// Adds `text` to an export being loaded in pieces (for exports too
    /// large to pass as one text): the pieces, joined in order, are the
    /// export, cut anywhere; [`Memory::import_finish`] loads them. Nothing
    /// is parsed or written before that.
    pub fn import_piece(&mut self, text: &str) -> Result<()> {
        self.writable()?;
        self.import_pieces.push_str(text);
        Ok(())
    }

    /// Loads the pieces given to [`Memory::import_piece`] as one export
    /// ([`Memory::import`]), and forgets them whether or not it succeeds
    /// ([`Memory::import_discard`] forgets them without loading).
    pub async fn import_finish(&mut self) -> Result<()> {
        let json = std::mem::take(&mut self.import_pieces);
        self.import_whole(&json).await
    }

    /// Forgets the pieces given to [`Memory::import_piece`] (a source that
    /// failed half-way); how many bytes were forgotten.
    pub fn import_discard(&mut self) -> usize {
        std::mem::take(&mut self.import_pieces).len()
    }

    /// Loads an export into this memory, which must be empty. The export is
    /// checked fully before anything is written. Refused while an import in
    /// pieces is under way ([`Memory::import_finish`] or
    /// [`Memory::import_discard`] ends one).
    pub async fn import(&mut self, json: &str) -> Result<()> {
        if !self.import_pieces.is_empty() {
            return Err(Error::invalid(format!(
                "an import in pieces is under way ({} bytes given): finish it (import_finish) or drop it (import_discard) first",
                self.import_pieces.len()
            )));
        }
        self.import_whole(json).await
    }

    async fn import_whole(&mut self, json: &str) -> Result<()> {
        self.writable()?;
        // A file's byte-order mark, as a JS TextDecoder drops it.
        let json = json.strip_prefix('\u{feff}').unwrap_or(json);
        let (state, log) = store::parse_export(json)?;
        store::check_import(
            &state,
            |t| self.model.count_tokens(t),
            self.config.ceiling_tokens,
        )?;
        self.sync().await?;
        let mut pos = self.pos.clone();
        store::import(&self.store, &mut pos, log, self.config.snapshot_every).await?;
        self.state = state;
        self.pos = pos;
        self.save_graphs().await;
        Ok(())
    }

    /// Erases a message, an episode, a fact or an entity for good, with
    /// what depended on it (see [`crate::erase`]): the stored log segments
    /// and entries that held it are rewritten in one conditional write,
    /// so no stored value keeps its text or embedding, and one log entry
    /// records the erasure (ids and time only). Returns what was erased
    /// (empty when all of it already was). An unknown id is
    /// `InvalidInput`; a failed write changes nothing.
    pub async fn erase(&mut self, target: crate::erase::Target) -> Result<crate::erase::Erased> {
        self.retry_on_conflict(&mut Erase(target)).await
    }

    /// Deletes the whole memory from the store: every key of its namespace,
    /// in one conditional write. The handle stays open on the now empty
    /// namespace (the next change starts a new memory there).
    pub async fn destroy(&mut self) -> Result<()> {
        self.retry_on_conflict(&mut Destroy).await
    }
}

/// One attempt of a writing call against the state as read from the store:
/// `Some` when done, `None` when another writer won the log head (a failed
/// write marks the state to be read again).
trait Attempt<S: Store, M: Model, C: Clock> {
    type Output;
    async fn attempt(&mut self, memory: &mut Memory<S, M, C>) -> Result<Option<Self::Output>>;
}

/// A writing call's work on the state through [`Ctx`], whose events
/// [`Transact`] commits.
trait Operation {
    type Output: Outcome;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<Self::Output>;
}

struct AddMessage(NewMessage);
struct Instruct<'a>(&'a str);
struct Note(NoteArgs);
/// `turn_ended`: the host says the latest turn is over (`end_turn`);
/// `judge`: make the waiting boundary judgments too (the run after a reply
/// leaves them to the next user message's round, where they go out with
/// that message's own and cost no extra call).
struct Maintain {
    turn_ended: bool,
    judge: bool,
}

impl Operation for AddMessage {
    type Output = Added;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<Added> {
        add(ctx, &self.0).await
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

impl Operation for Maintain {
    type Output = Maintained;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<Maintained> {
        Ok(maintain(ctx, self.turn_ended, self.judge).await)
    }
}

/// An operation run and its events committed; the model's answers are
/// kept across attempts, so a re-run asks only what changed.
struct Transact<'a, O> {
    op: &'a O,
    answers: Answers,
}

impl<S: Store, M: Model, C: Clock, O: Operation> Attempt<S, M, C> for Transact<'_, O> {
    type Output = O::Output;
    async fn attempt(&mut self, me: &mut Memory<S, M, C>) -> Result<Option<O::Output>> {
        let model = Memo::new(&me.model, &self.answers);
        let mut events = Vec::new();
        let now = me.stamp()?;
        let report = Report::default();
        let result = {
            let mut ctx = Ctx {
                model: &model,
                config: &me.config,
                state: &mut me.state,
                events: &mut events,
                now,
                report: &report,
            };
            self.op.run(&mut ctx).await
        };
        me.health.record(&report, now);
        let degraded = report
            .degraded
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        // A failed note never fails a strict call: the episode is deferred,
        // retried and given up as without strict (its passages stay
        // recallable), and each failure is reported in `degraded`. Failing
        // the call instead wrote nothing, so the same note failed every
        // later call, for ever.
        let blocking = degraded.iter().find(|d| d.task != crate::host::Task::Note);
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
            let committed = store::commit(
                &me.store,
                &mut me.pos,
                events,
                now,
                me.config.snapshot_every,
            )
            .await
            .inspect_err(|_| me.dirty = true)?;
            if committed == store::Committed::Conflict {
                return Ok(None);
            }
        }
        me.degraded.extend(degraded);
        me.save_graphs().await;
        Ok(Some(outcome))
    }
}

/// Erasing: the stored log rewritten without what the target reaches.
struct Erase(crate::erase::Target);

impl<S: Store, M: Model, C: Clock> Attempt<S, M, C> for Erase {
    type Output = crate::erase::Erased;
    async fn attempt(&mut self, me: &mut Memory<S, M, C>) -> Result<Option<Self::Output>> {
        let erased = crate::erase::plan(&me.state, self.0)?;
        if erased.is_empty() {
            return Ok(Some(erased));
        }
        let now = me.stamp()?;
        let log = store::read_log(&me.store, &me.pos).await?;
        let (entries, state) = store::scrub_log(&me.state, log, self.0, &erased, now)?;
        let mut pos = me.pos.clone();
        // A failed write may have landed in part of an unusual store:
        // everything is read again next time.
        let (committed, _) = store::rewrite(&me.store, &mut pos, entries, me.config.snapshot_every)
            .await
            .inspect_err(|_| me.dirty = true)?;
        if committed == store::Committed::Conflict {
            return Ok(None);
        }
        me.state = state;
        me.pos = pos;
        me.save_graphs().await;
        Ok(Some(erased))
    }
}

/// Destroying: every key of the namespace deleted.
struct Destroy;

impl<S: Store, M: Model, C: Clock> Attempt<S, M, C> for Destroy {
    type Output = ();
    async fn attempt(&mut self, me: &mut Memory<S, M, C>) -> Result<Option<()>> {
        let mut pos = me.pos.clone();
        let committed = store::destroy(&me.store, &mut pos)
            .await
            .inspect_err(|_| me.dirty = true)?;
        if committed == store::Committed::Conflict {
            return Ok(None);
        }
        me.state = State::default();
        me.pos = pos;
        Ok(Some(()))
    }
}

/// Brings `state` up to the store: the tail other writers committed, or a
/// full reload when `dirty` (after a failed call).
async fn sync<S: Store>(
    store: &S,
    state: &mut State,
    pos: &mut LogPosition,
    dirty: &mut bool,
) -> Result<()> {
    if *dirty {
        // (A reload after a failed call: a damaged snapshot it meets was
        // met at open too, and is reported there.)
        let (s, p, _) = store::load(store, pos.keys.clone()).await?;
        *state = s;
        *pos = p;
        *dirty = false;
        return Ok(());
    }
    store::catch_up(store, state, pos).await.inspect_err(|_| {
        // Part of the tail may have been applied: reload next time.
        *dirty = true;
    })?;
    Ok(())
}

/// Sets the host's instructions, then holds the ceiling (longer
/// instructions leave less room for the conversation).
async fn instruct<M: Model>(ctx: &mut Ctx<'_, M>, text: &str) -> Result<bool> {
    if text.len() > crate::text::MAX_INSTRUCTIONS_BYTES {
        return Err(Error::InvalidInput(format!(
            "instructions of {} bytes; at most {}",
            text.len(),
            crate::text::MAX_INSTRUCTIONS_BYTES
        )));
    }
    let tokens = match text.is_empty() {
        true => 0,
        false => ctx.model.count_tokens(text),
    };
    let half = ctx.config.ceiling_tokens / 2;
    if tokens > half {
        return Err(Error::InvalidInput(format!(
            "instructions of {tokens} tokens take more than half the ceiling ({half} of {})",
            ctx.config.ceiling_tokens
        )));
    }
    let now = ctx.state.instructions.as_ref().map(|(t, _)| t.as_str());
    if now.unwrap_or("") == text {
        return Ok(false);
    }
    ctx.emit(Event::InstructionsSet {
        text: text.to_string(),
        at: ctx.now,
    });
    crate::fade::hold(ctx).await;
    Ok(true)
}

/// The newest time `state` holds (its last message, fact, fade, recall
/// block or instructions): a clock reading before it is clamped to it.
fn last_stamp(state: &State) -> i64 {
    [
        state.messages.last().map(|m| m.at),
        state.facts.last().map(|f| f.noted_at),
        state.fades.last().map(|f| f.finished_at.unwrap_or(f.at)),
        state.recalls.last().map(|r| r.at),
        state.instructions.as_ref().map(|(_, at)| *at),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(i64::MIN)
}

fn last_user(state: &State) -> Option<u64> {
    state
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.id)
}

/// The work waiting; `view` is the view's size now.
fn pending<M: Model>(state: &State, model: &M, config: &Config, view: usize) -> Pending {
    let episodes = |f: fn(&Episode) -> bool| -> Vec<u64> {
        state
            .episodes
            .iter()
            .filter(|e| f(e))
            .map(|e| e.id)
            .collect()
    };
    Pending {
        unjudged: crate::segment::unjudged(state),
        undistilled: crate::distill::due(state, false),
        leaving: episodes(|e| e.state == EpisodeState::Leaving),
        awaiting_note: episodes(|e| e.awaits_note()),
        fade_ahead: state.running_fade().is_none()
            && crate::fade::ahead_due(state, model, config, view),
    }
}

/// The work after a reply (see [`Memory::maintain`]).
async fn maintain<M: Model>(ctx: &mut Ctx<'_, M>, turn_ended: bool, judge: bool) -> Maintained {
    let due = crate::distill::due(ctx.state, turn_ended);
    let (judgments, answers) = {
        let c: &Ctx<'_, M> = ctx;
        let judgments = async {
            match judge {
                true => crate::segment::judge_unjudged(c).await,
                false => Vec::new(),
            }
        };
        crate::join::join2(judgments, crate::distill::ask_all(c, &due)).await
    };
    let judged = judgments.iter().map(|(id, _)| *id).collect();
    crate::segment::record(ctx, judgments);
    let formed = crate::segment::place_cuts(ctx);
    let distilled = crate::distill::record_all(ctx, &due, answers);
    let mut fade = ctx.state.running_fade().map(|f| f.id);
    let mut settled = crate::fade::settle(ctx).await;
    if ctx.state.running_fade().is_none()
        && crate::fade::ahead_due(ctx.state, ctx.model, ctx.config, ctx.view_tokens())
    {
        if let Some(f) = crate::fade::plan(ctx, FadeReason::Ahead) {
            fade = Some(f);
            let s = crate::fade::settle(ctx).await;
            settled.sealed.extend(s.sealed);
            settled.deferred.extend(s.deferred);
        }
    }
    let (noted_late, abandoned) = crate::note::retry_deferred(ctx, &settled.deferred).await;
    let (held, gave_way) = crate::fade::hold(ctx).await;
    crate::recall::link_graphs(ctx.state, ctx.config.graph_rows_per_maintain);
    Maintained {
        judged,
        formed,
        distilled,
        fade: held.or(fade),
        sealed: settled.sealed,
        deferred: settled.deferred,
        noted_late,
        abandoned,
        gave_way,
        degraded: Vec::new(),
    }
}

pub use crate::message::ABANDONED_OUTPUT;

/// Longest text of one search hit, in estimated tokens (4 bytes each): a
/// longer one is cut there and ends in "…"; [`Memory::hit_text`] gives it
/// whole.
pub const MAX_HIT_TOKENS: usize = 1_000;

/// Most results one search returns (`SearchOptions::limit`): the lists
/// behind it are sized by the limit, so a caller's number never reaches an
/// allocation unchecked.
pub const MAX_SEARCH_LIMIT: usize = 1_000;
/// Largest `SearchOptions::budget_tokens` (the largest ceiling).
pub const MAX_SEARCH_BUDGET: usize = 10_000_000;
/// Most tool calls one assistant message may carry.
pub const MAX_TOOL_CALLS: usize = 256;

/// Checks a search's sizes; the error names the option and its range.
fn check_search_options(options: &SearchOptions) -> Result<()> {
    if !(1..=MAX_SEARCH_LIMIT).contains(&options.limit) {
        return Err(Error::invalid(format!(
            "search limit is {}; it must be within 1..={MAX_SEARCH_LIMIT}",
            options.limit
        )));
    }
    if let Some(b) = options.budget_tokens {
        if !(1..=MAX_SEARCH_BUDGET).contains(&b) {
            return Err(Error::invalid(format!(
                "search budget_tokens is {b}; it must be within 1..={MAX_SEARCH_BUDGET}"
            )));
        }
    }
    Ok(())
}

/// Checks a new message against the state: role rules, size, tool pairing.
fn check_message<M: Model>(ctx: &Ctx<'_, M>, m: &NewMessage) -> Result<usize> {
    let calls_tools = m.role == Role::Assistant && !m.tool_calls.is_empty();
    if m.content.trim().is_empty() && !calls_tools {
        return Err(Error::invalid("empty message: give it some text"));
    }
    if !m.tool_calls.is_empty() && m.role != Role::Assistant {
        return Err(Error::invalid("only assistant messages carry tool calls"));
    }
    if m.tool_calls.len() > MAX_TOOL_CALLS {
        return Err(Error::invalid(format!(
            "a message carries {} tool calls; it must be within 0..={MAX_TOOL_CALLS}",
            m.tool_calls.len()
        )));
    }
    let pending = ctx.state.pending_tool_calls();
    for (i, c) in m.tool_calls.iter().enumerate() {
        if c.id.is_empty() || c.name.is_empty() {
            return Err(Error::invalid("a tool call needs an id and a name"));
        }
        if pending.contains(&c.id) || m.tool_calls[..i].iter().any(|d| d.id == c.id) {
            return Err(Error::invalid(format!(
                "tool call id {:?} is already waiting",
                c.id
            )));
        }
    }
    if m.role != Role::Tool && !pending.is_empty() {
        let ids: Vec<String> = pending.iter().map(|id| format!("{id:?}")).collect();
        return Err(Error::invalid(format!(
            "tool call{} {} still wait{} for {} output{}: add each output (a tool message \
             with its tool_call_id) or close a call that will have none with \
             abandon_tool_call (abandonToolCall in JavaScript) before a {} message; \
             a chat model refuses a request whose tool calls are not answered",
            if ids.len() == 1 { "" } else { "s" },
            ids.join(", "),
            if ids.len() == 1 { "s" } else { "" },
            if ids.len() == 1 { "its" } else { "their" },
            if ids.len() == 1 { "" } else { "s" },
            m.role.as_str()
        )));
    }
    match (m.role, &m.tool_call_id) {
        (Role::Tool, None) => {
            return Err(Error::invalid(
                "a tool message needs the tool_call_id it answers",
            ))
        }
        (Role::Tool, Some(id)) if !pending.contains(id) => {
            return Err(Error::invalid(format!(
                "tool output for call {id:?}, but no such call is waiting for its output"
            )))
        }
        (Role::Tool, Some(_)) => {}
        (_, Some(_)) => return Err(Error::invalid("only tool messages carry a tool_call_id")),
        (_, None) => {}
    }
    let text = crate::message::display(&m.content, &m.tool_calls);
    let tokens = ctx.model.count_tokens(&text) + FRAMING_TOKENS;
    if tokens > ctx.config.max_message_tokens {
        return Err(Error::invalid(format!(
            "message of {tokens} tokens is over the limit of {} (max_message_tokens)",
            ctx.config.max_message_tokens
        )));
    }
    Ok(tokens)
}

async fn add<M: Model>(ctx: &mut Ctx<'_, M>, m: &NewMessage) -> Result<Added> {
    if let Some(c) = &m.client_id {
        if c.is_empty() || c.chars().count() > 256 {
            return Err(Error::invalid("a client id has 1 to 256 characters"));
        }
        if let Some(&id) = ctx.state.by_client_id.get(c) {
            // Already added (a retry of an add whose outcome was lost).
            return Ok(Added {
                message: id,
                formed: Vec::new(),
                slept: false,
                fade: None,
                recall: ctx.state.recall_by_message.get(&id).copied(),
                distilled: None,
                degraded: Vec::new(),
                maintained: None,
                maintain_error: None,
                duplicate: true,
            });
        }
    }
    let tokens = check_message(ctx, m)?;
    let allowed = crate::segment::cut_allowed(
        ctx.state.open_stretch(),
        ctx.state.pending_tool_calls().len(),
        m.role,
    );
    let sleep_due = crate::sleep::due(ctx.state, ctx.config, m.role, ctx.now);
    let id = ctx.state.messages.len() as u64 + 1;
    ctx.emit(Event::Message(Message {
        id,
        role: m.role,
        content: m.content.clone(),
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        at: ctx.now,
        tokens,
        boundary: None,
        judged: !allowed,
        client_id: m.client_id.clone(),
        erased: false,
    }));
    let fades_before = ctx.state.fades.len();
    let mut fade = None;
    if sleep_due {
        ctx.emit(Event::SleepDue { at: ctx.now });
        // A fade still running (its notes never written) settles first:
        // one fade at a time.
        if ctx.state.running_fade().is_some() {
            crate::fade::settle(ctx).await;
        }
        // Who leaves is decided now (recall then searches what the sleep
        // forgot); the landing is measured again once the cuts are placed.
        fade = crate::fade::plan_open(ctx, FadeReason::Sleep);
    }
    let (formed, recall, distilled) = if m.role == Role::User {
        // The one round before the view is ready: every waiting judgment (this
        // message's among them), recall, and distill of earlier turns.
        // The queries are embedded first, so every `complete` call of the
        // turn goes out in that one round.
        let due = crate::distill::due(ctx.state, false);
        let (judgments, (prepared, answers)) = {
            let c: &Ctx<'_, M> = ctx;
            let queries = crate::recall::queries(c, id).await;
            let judgments = async {
                match c.config.judges_in_turn() {
                    true => crate::segment::judge_unjudged(c).await,
                    false => Vec::new(),
                }
            };
            crate::join::join2(
                judgments,
                crate::join::join2(
                    crate::recall::prepare(c, queries),
                    crate::distill::ask_all(c, &due),
                ),
            )
            .await
        };
        crate::segment::record(ctx, judgments);
        let formed = crate::segment::place_cuts(ctx);
        if sleep_due {
            // The cuts changed what cannot leave: the sleep may land lower.
            crate::fade::reland(ctx);
        }
        let distilled = crate::distill::record_all(ctx, &due, answers);
        let recall = prepared.and_then(|p| crate::recall::place(ctx, p));
        (formed, recall, distilled)
    } else {
        (crate::segment::place_cuts(ctx), None, Vec::new())
    };
    let (held, _) = crate::fade::hold(ctx).await;
    let slept = ctx.state.fades[fades_before..]
        .iter()
        .any(|f| f.reason == FadeReason::Sleep);
    Ok(Added {
        message: id,
        formed,
        slept,
        fade: held.or(fade),
        recall,
        // The block of the turn this user message closed, distilled in its
        // round (when that turn ended without a reply that did it).
        distilled: distilled.into_iter().last(),
        degraded: Vec::new(),
        maintained: None,
        maintain_error: None,
        duplicate: false,
    })
}

async fn host_note<M: Model>(ctx: &mut Ctx<'_, M>, args: &NoteArgs) -> Result<NoteOutcome> {
    if args.facts.is_empty() {
        return Err(Error::invalid("note needs at least one fact"));
    }
    if args.facts.len() > ctx.config.max_facts_per_note {
        return Err(Error::invalid(format!(
            "{} facts in one note; at most {}",
            args.facts.len(),
            ctx.config.max_facts_per_note
        )));
    }
    for f in &args.facts {
        check_fact(f).map_err(Error::InvalidInput)?;
    }
    let episode = match args.episode {
        Some(id) => {
            let e = ctx
                .state
                .episode(id)
                .ok_or_else(|| Error::invalid(format!("no episode {id}")))?;
            if e.state == EpisodeState::Forgotten {
                return Err(Error::invalid(format!(
                    "episode {id} is forgotten; note a newer one"
                )));
            }
            id
        }
        None => ctx
            .state
            .episodes
            .iter()
            .find(|e| e.state == EpisodeState::Leaving)
            .or_else(|| ctx.state.episodes.last())
            .map(|e| e.id)
            .ok_or_else(|| Error::invalid("no episode has formed yet: nothing to note"))?,
    };
    let e = ctx.state.episode(episode).expect("exists");
    let messages = ctx.state.episode_messages(e).len();
    for f in &args.facts {
        crate::llm::tasks::check_numbers(&f.sources, messages, "source message")
            .map_err(Error::InvalidInput)?;
    }
    let sealed = ctx.state.episode(episode).expect("exists").state == EpisodeState::Leaving;
    let Noted {
        added,
        merged,
        retired,
    } = crate::note::write_episode(ctx, episode, args.facts.clone(), sealed).await?;
    if sealed {
        let fade = ctx.state.running_fade().map(|f| f.id);
        let change = crate::episode::StateChange {
            state: EpisodeState::Sealed,
            at: ctx.now,
            fade,
        };
        ctx.emit(Event::StateChanged { episode, change });
        crate::fade::finish_if_done(ctx);
    }
    crate::fade::hold(ctx).await;
    Ok(NoteOutcome {
        episode,
        added,
        merged,
        retired,
        sealed,
    })
}
