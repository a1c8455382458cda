//! The memory: the engine every host calls. Each public call syncs with the
//! store, does its work, and commits its events in one atomic write before it
//! returns.

use crate::base::config::Config;
use crate::base::error::{Error, Result};
use crate::base::health::{Degraded, Health, Report};
use crate::base::host::{Clock, Model, Store};
use crate::memory::handle::{Memory, Salvage};
use crate::memory::limits::{MAX_HIT_TOKENS, MIN_CLOCK_MS};
use crate::memory::outcomes::{
    Added, EpisodeInfo, Maintained, NoteArgs, NoteOutcome, Pending, Stats,
};
use crate::memory::turn::{check_search_options, last_stamp, pending};
use crate::memory::write::{sync, AddMessage, Destroy, Erase, Instruct, Maintain, Note};
use crate::state::State;
use crate::step::Ctx;
use crate::store::{self, Keys, LogPosition};
use crate::types::entity::Entity;
use crate::types::episode::EpisodeState;
use crate::types::fact::Fact;
use crate::types::message::{Message, NewMessage, Role, ABANDONED_OUTPUT, MAIN_THREAD};
use crate::types::trace::Trace;
use crate::view::View;
use crate::{
    types::recall::Distillation, types::recall::RecallBlock, types::recall::SearchHit,
    types::recall::SearchOptions,
};

mod export;
mod facts;
pub mod handle;
pub mod limits;
pub mod outcomes;
mod pages;
pub mod threads;
mod turn;
mod write;

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
        Self::open_as(namespace, store, model, clock, config, false).await
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
        // What was just loaded is the store's state as of now.
        let met_store_at = freshness_reading(&config, &clock);
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
            met_store_at,
            same_call: false,
            quiet: false,
        }
    }

    /// Opens the memory in `namespace` read-only, with whatever of its log
    /// can be read: the way back from a damaged store, where
    /// [`Memory::open`] fails with `Corrupt`. Each log entry that cannot be
    /// read (its pack or tail value missing, truncated, failing its
    /// checksum or not decoding) is skipped, and every later entry is still
    /// applied, event by event: items the lost entries made stand as erased
    /// placeholders so later ones keep their ids, and an event that no
    /// longer applies is dropped (see `crate::store::salvage`). Each loss, with
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
        Self::open_as(namespace, store, model, clock, config, true).await
    }

    /// [`Memory::open`], or with `salvage` [`Memory::open_salvage`]: one
    /// opening for both (the bindings call it with the host's choice, so
    /// the loading is compiled once in their modules).
    pub(crate) async fn open_as(
        namespace: &str,
        store: S,
        model: M,
        clock: C,
        config: Config,
        salvage: bool,
    ) -> Result<Self> {
        let config = config.fitted();
        config.validate()?;
        let keys = Keys::new(namespace)?;
        let (state, pos, warnings, log) = match store::log::load(&store, keys.clone()).await {
            Ok((state, pos, warnings)) => (state, pos, warnings, None),
            Err(Error::Corrupt(m)) if !salvage => {
                return Err(Error::Corrupt(format!("{m} ({RECOVER})")))
            }
            Err(Error::Corrupt(_)) => {
                let (pos, pieces) = store::salvage::read_salvage(&store, keys).await?;
                let salvaged = crate::store::salvage::rebuild(pieces);
                (salvaged.state, pos, salvaged.warnings, Some(salvaged.log))
            }
            Err(e) => return Err(e),
        };
        let salvage = salvage.then_some(Salvage { log });
        Ok(Self::opened(
            store,
            model,
            clock,
            config,
            (state, pos, warnings),
            salvage,
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
        let max = crate::base::text::MAX_CLOCK_MS;
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
        let mut seen = crate::base::health::lock(&self.clock_seen);
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
        let seen = crate::base::health::lock(&self.clock_seen);
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
        if std::mem::take(&mut self.same_call) && !self.dirty {
            return Ok(());
        }
        let now = freshness_reading(&self.config, &self.clock);
        if !self.dirty && now.is_some_and(|now| self.fresh(now)) {
            return Ok(());
        }
        self.met_store_at = None;
        let (seq, reload) = (self.pos.seq, self.dirty);
        self.quiet = false;
        let head = self.pos.head_raw.clone();
        sync(&self.store, &mut self.state, &mut self.pos, &mut self.dirty).await?;
        self.quiet = !reload && self.pos.seq == seq && self.pos.head_raw == head;
        self.met_store_at = now;
        Ok(())
    }

    /// The clock's reading when the store was last met now (after the
    /// handle's own commit), for [`Memory::fresh`].
    pub(super) fn met_store_now(&mut self) {
        self.met_store_at = freshness_reading(&self.config, &self.clock);
    }

    /// Whether the state this handle holds is fresh enough at `now` to be
    /// used without reading the head ([`Config::fresh_for_ms`]).
    fn fresh(&self, now: i64) -> bool {
        let window = self.config.fresh_for_ms as i64;
        self.met_store_at
            .is_some_and(|at| window > 0 && now >= at && now - at <= window)
    }

    /// Writes the meaning graphs that grew enough since last written
    /// ([`store::copies::save_graphs`]); a failed write is a storage warning and
    /// is tried again by the next call.
    async fn save_graphs(&mut self) {
        let warnings = store::copies::save_graphs(&self.store, &mut self.pos, &self.state).await;
        self.storage_warnings.extend(warnings);
        let warnings = store::copies::save_words(&self.store, &mut self.pos, &self.state).await;
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
        let thread = message.thread.clone();
        let at = message.at;
        let mut added = self.transact(&AddMessage(message)).await?;
        let ends_turn = self.config.maintain_after_reply
            && self
                .state
                .line(&thread)
                .ids
                .last()
                .is_some_and(|&id| self.state.message(id).role == Role::Assistant)
            && self.state.pending_tool_calls(&thread).is_empty();
        if ends_turn {
            // The replies' judgments wait for the next user message's round
            // when it makes calls anyway; otherwise they are made now.
            let judge = !self.config.judges_in_turn();
            // The same call: the state is the one its reply just committed
            // (a commit of another writer since makes the maintain's own
            // guarded commit conflict, and it reloads then).
            self.same_call = self.pos.seq != 0 && !self.dirty;
            let maintained = self
                .transact(&Maintain {
                    turn_ended: false,
                    judge,
                    thread: &thread,
                    at,
                })
                .await;
            self.same_call = false;
            match maintained {
                Ok(m) => {
                    added.distilled = m
                        .distilled
                        .iter()
                        .find(|(b, _)| {
                            self.state.recalls[*b as usize - 1].message
                                == self.state.last_user(&thread).unwrap_or(0)
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
        let thread = self
            .state
            .thread_names()
            .find(|t| {
                self.state
                    .pending_tool_calls(t)
                    .iter()
                    .any(|c| c == call_id)
            })
            .map(str::to_string)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "tool call {call_id:?} is not waiting for an output: nothing to abandon"
                ))
            })?;
        self.add_message(NewMessage::tool_result(call_id, ABANDONED_OUTPUT).in_thread(thread))
            .await
    }

    /// Runs the work that waits after a reply, when the host chooses (after
    /// the reply is added, in a worker's `waitUntil`, on idle): boundary
    /// judgments of replies (the run a reply makes by itself leaves these to
    /// the next user message's round), distill of every block whose turn is over
    /// (their calls go out together), the notes of leaving episodes, a fade
    /// ahead when the next turn would not fit, retries of deferred notes.
    /// Committed before it returns; returns what it did.
    ///
    /// This is [`Memory::maintain_in`] the main thread.
    pub async fn maintain(&mut self) -> Result<Maintained> {
        self.maintain_in(MAIN_THREAD).await
    }

    /// Work waiting for [`Memory::maintain`] (the main thread's; see
    /// [`Memory::pending_in`]).
    pub async fn pending(&mut self) -> Result<Pending> {
        self.pending_in(MAIN_THREAD).await
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
    ///
    /// This is [`Memory::end_turn_in`] the main thread.
    pub async fn end_turn(&mut self) -> Result<Option<(u64, Distillation)>> {
        self.end_turn_in(MAIN_THREAD).await
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
                h.text = crate::base::text::clip(&h.text, MAX_HIT_TOKENS);
            }
        }
        Ok(hits)
    }

    /// The four index searches a search by count of `limit` runs for a
    /// query of one part (facts and passages, by words for `query` and by
    /// meaning for `vector`, as deep, nothing left out), as the scale bench
    /// times them beside [`Memory::search`] (issue 47); how many items they
    /// found. No sync with the store: the memory as this handle holds it.
    #[cfg(any(test, feature = "testing"))]
    pub fn index_lists(&self, query: &str, vector: &[f32], limit: usize) -> usize {
        crate::recall::index_lists(&self.state, query, vector, limit, self.config.min_cosine)
    }

    /// The whole text of a search hit's item (a fact's sentence, a
    /// passage's messages, a message), which [`Memory::search`] clips at
    /// [`crate::memory::limits::MAX_HIT_TOKENS`]. An item that is not there is `InvalidInput`.
    pub async fn hit_text(&mut self, item: crate::types::recall::Item) -> Result<String> {
        self.sync().await?;
        let (id, len, kind) = match item {
            crate::types::recall::Item::Fact(id) => (id, self.state.facts.len(), "fact"),
            crate::types::recall::Item::Passage(id) => (id, self.state.passages.len(), "passage"),
            crate::types::recall::Item::Message(id) => (id, self.state.messages.len(), "message"),
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
            // The view a search leaves out (with `include_in_view: false`)
            // and searches the messages of: its thread filter's, or main's.
            thread: options.filter.thread.as_deref().unwrap_or(MAIN_THREAD),
            report: &report,
        };
        let hits = crate::recall::search::search(&ctx, query, &options).await;
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
    ) -> Result<Vec<crate::view::explain::RecallExplanation>> {
        self.sync().await?;
        crate::view::explain::recall(&self.state, fact)
    }

    /// Why each item of recall block `block` is there: the searches that
    /// found it and its rank in each, its fused rank, the graph hop.
    pub async fn explain_block(
        &mut self,
        block: u64,
    ) -> Result<Vec<crate::view::explain::RecalledItemExplanation>> {
        self.sync().await?;
        crate::view::explain::block(&self.state, block)
    }

    /// The `note` tool definition (OpenAI tools format) to offer a chat model.
    pub fn note_tool() -> serde_json::Value {
        crate::llm::tasks::note_tool()
    }

    /// The view now: what the model should see (the main thread's; see
    /// [`Memory::view_in`]).
    pub async fn view(&mut self) -> Result<View> {
        self.view_in(MAIN_THREAD).await
    }

    /// The view's size now, in tokens: `view().tokens` without building the
    /// view (no message text is copied), for a host that only needs to know
    /// how full it is (the main thread's; see [`Memory::view_tokens_in`]).
    pub async fn view_tokens(&mut self) -> Result<usize> {
        self.view_tokens_in(MAIN_THREAD).await
    }

    /// The view as it was at `at` (ms since the Unix epoch), rebuilt by
    /// replaying the log up to the last call committed by then. Nothing is
    /// written; the memory stays at now. The main thread's; see
    /// [`Memory::view_at_in`].
    pub async fn view_at(&mut self, at: i64) -> Result<View> {
        self.view_at_in(at, MAIN_THREAD).await
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
    pub async fn fades(&mut self) -> Result<Vec<crate::types::fade::Fade>> {
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
        let now = self.now()?;
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
            open_messages: s.line(MAIN_THREAD).open_ids().len(),
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
            pending: pending(
                s,
                &self.model,
                &self.config,
                (view.tokens, now),
                MAIN_THREAD,
            ),
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
    pub async fn explain_episode(
        &mut self,
        id: u64,
    ) -> Result<crate::view::explain::EpisodeExplanation> {
        self.sync().await?;
        let now = self.now()?;
        crate::view::explain::episode(&self.state, id, now)
    }

    /// Why a message is shown or not, and the alternatives of a regenerated
    /// answer ([`NewMessage::replaces`](crate::types::message::NewMessage::replaces)).
    pub async fn explain_message(
        &mut self,
        id: u64,
    ) -> Result<crate::view::explain::MessageExplanation> {
        self.sync().await?;
        crate::view::explain::message(&self.state, id)
    }

    /// Why a fact is in the facts block, out of it, or retired.
    pub async fn explain_fact(&mut self, id: u64) -> Result<crate::view::explain::FactExplanation> {
        self.sync().await?;
        crate::view::explain::fact(&self.state, id)
    }

    /// Erases a message, an episode, a fact or an entity for good, with
    /// what depended on it (see [`crate::erase`]): the stored log packs
    /// and entries that held it are rewritten in one conditional write,
    /// so no stored value keeps its text or embedding, and one log entry
    /// records the erasure (ids and time only). Returns what was erased
    /// (empty when all of it already was). An unknown id is
    /// `InvalidInput`; a failed write changes nothing.
    pub async fn erase(
        &mut self,
        target: crate::types::erase::Target,
    ) -> Result<crate::types::erase::Erased> {
        self.retry_on_conflict(&mut Erase(target)).await
    }

    /// Deletes the whole memory from the store: every key of its namespace,
    /// in one conditional write. The handle stays open on the now empty
    /// namespace (the next change starts a new memory there).
    pub async fn destroy(&mut self) -> Result<()> {
        self.retry_on_conflict(&mut Destroy).await
    }
}

/// The clock's reading for the freshness window ([`Config::fresh_for_ms`]),
/// taken only when a window is set: with none (the default) a call never
/// asks the host for the time just to decide whether to read the head.
fn freshness_reading<C: Clock>(config: &Config, clock: &C) -> Option<i64> {
    (config.fresh_for_ms > 0).then(|| clock.now_ms())
}
