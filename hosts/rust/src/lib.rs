//! A Rust host of the engram component (`wit/engram.wit`) in wasmtime.
//!
//! [`Host`] implements the component's imports: any [`HostStore`] (a
//! key-value store; `SqliteStore` keeps one in a SQLite file, feature
//! `sqlite`, on by default; [`MemStore`] in memory), a clock that moves
//! only when told (ms since the Unix epoch: a reading in seconds is
//! refused), and the model, chosen by [`ModelChoice`]: the built-in
//! offline model ([`Host::offline`], no callbacks at all), any [`HostModel`]
//! (a real LLM client, or [`TranscriptModel`] to replay a recorded
//! conversation), or a host model for completions with the offline
//! embedder. [`Engram`] instantiates the component and holds one open
//! memory, with a typed method for every export of its `memory` resource.
//! The wasmtime it runs on is re-exported ([`wasmtime`]): build the
//! `Engine` you pass with it. The component's error is [`MemoryError`],
//! inside the `wasmtime::Error` every method returns
//! ([`MemoryError::from_wasmtime`]).
//!
//! **The offline model** answers every task by rules and embeds with a
//! hashing embedder, inside the component: no LLM, no network, no key,
//! deterministic. It is for demos and tests; plug in a real LLM for real use.
//!
//! **Deadlines.** No callback can block a memory forever: every store and
//! model callback runs on a worker thread of the host and is waited for at
//! most its [`Deadlines`] (60 s for model calls, 10 s for store calls by
//! default; [`Host::deadlines`] changes them). A model call that does not
//! answer in time is a failed model call (the step degrades, or with
//! `strict` the call fails with [`MemoryError::Model`]); a store call that
//! does not answer in time is a failed store call (the call fails with
//! [`MemoryError::Store`]); a token count that does not answer in time is no
//! count (engram estimates). The worker is then abandoned to finish (or hang)
//! on its own, its late answer is ignored, and the next callback runs on a
//! fresh worker. A callback that panics is a failed call too. (A `write_if`
//! that timed out may still land later: the memory reloads from the store
//! on its next call, and an add retried with the same client id is not
//! stored twice.) The clock is [`Host::now_ms`], a field read without a
//! call, so it cannot hang.
//!
//! **Client ids.** Give each message your own id (`NewMessage::client_id`):
//! an add whose outcome was lost (the store committed, then the connection
//! dropped) can then be retried safely; the retry writes nothing and says
//! `duplicate`, with the first add's message id.
//!
//! A model task that fails every attempt does not fail the call: the step
//! degrades (no cut judged, a block kept whole, a note deferred...) and is
//! reported in the call's outcome, in [`Engram::take_degraded`], and to the
//! [`Engram::on_degraded`] callback, which runs after every call with each
//! step the call degraded. With `"strict": true` in the config, such a step
//! fails the call with [`MemoryError::Model`] instead, and nothing is written.
//!
//! The guest's std links a few WASI imports (stdio, environment, exit) that
//! engram never calls: they are defined as traps, so a component that started
//! to read the OS clock, randomness or files would fail here instead of
//! quietly losing its determinism. (A guest panic then traps at its write to
//! stderr; the wasm backtrace names the panicking function. Add
//! `wasmtime-wasi` to see the panic message itself.)
//!
//! ```no_run
//! use engram_wasmtime_host::{Engram, Host, NewMessage, Role};
//!
//! let engine = wasmtime::Engine::default();
//! // Compiled once, then read back from the cache at every later start
//! // (`load` for bytes, `EMBEDDED` with the `embedded` feature).
//! let cache = engram_wasmtime_host::default_cache_dir();
//! let (component, _) = engram_wasmtime_host::load_file(&engine, "engram.wasm", cache.as_deref())?;
//! // The offline model: nothing to configure. For a real LLM:
//! // `Host::new(now_ms, my_model)` (or `Host::with_choice`).
//! let host = Host::offline(1_772_445_600_000);
//! let mut engram = Engram::open(&engine, &component, host, "alice", "{}")?;
//! let message = NewMessage {
//!     role: Role::User,
//!     content: "Plan the Lisbon offsite.".into(),
//!     tool_calls: vec![],
//!     tool_call_id: None,
//!     client_id: Some("msg-1".into()),
//!     metadata: None,
//!     thread: None, // the `main` thread
//!     at: None,     // said now
//!     replaces: None, // not a regenerated answer
//! };
//! engram.add_message(&message)?;
//! println!("{}", engram.render_openai()?);
//! # Ok::<(), wasmtime::Error>(())
//! ```

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Deserialize;
use wasmtime::component::{Component, HasSelf, Linker, ResourceAny};
use wasmtime::error::Context as _;
use wasmtime::{Engine, ResourceLimiter, Store};

mod component;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

#[cfg(feature = "embedded")]
pub use component::EMBEDDED;
pub use component::{default_cache_dir, load, load_file, Origin};

/// The README's snippet, compiled and run by `cargo test` (doctest).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeSnippet;

/// The code `bindgen!` generates from `wit/` (the crate's copy of the
/// repository's `wit/engram.wit`), in its own module.
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "engram",
    });
}

/// The wasmtime this crate is built on (`=48.0.8`): make the [`Engine`]
/// you give [`Engram::open`] with it (`engram_wasmtime_host::wasmtime::Engine`),
/// or depend on the same version yourself, so the types are the same.
pub use wasmtime;

use bindings::engram::memory::{clock, model, store};
pub use bindings::exports::engram::memory::engine::{
    Added, Alias, Batch, Degraded, Distillation, DistilledBlock, Entity, Episode,
    EpisodeExplanation, EpisodeFilter, EpisodePage, EpisodeState, EraseTarget, Erased,
    ExportCursor, ExportPart, Fact, FactExplanation, FactFilter, FactHistory, FactKind, FactPage,
    Fade, FadeReason, GuestMemory, Health, HistoryEntry, HistoryLink, HistoryMention, Hit,
    ItemKind, LastError, Maintained, MemoryError, Message, MessageExplanation, MessagePage,
    ModelSource, NewFact, NewMessage, NoteArgs, NoteOutcome, PageRequest, Pending, RecallBlock,
    RecallExplanation, RecallItem, RecallKind, Remembered, Role, SearchFilter, SearchHit,
    SearchList, SearchOptions, Statement, Stats, ThreadInfo, ToolCall, Trace, View, ViewItem,
};
pub use model::{Task, TaskRequest};
pub use store::StoreError;

/// The most messages one `add-messages` call takes
/// ([`Engram::add_messages`] splits longer lists).
pub const MAX_BATCH: usize = 1_000;

impl NewMessage {
    /// A message of `role` with text only (no tool calls, no client id).
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        NewMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            client_id: None,
            metadata: None,
            thread: None,
            at: None,
            replaces: None,
        }
    }

    /// The same message with your own data about it: a JSON object as text
    /// (at most 4,096 bytes, 8 levels deep), kept, exported, returned with
    /// the message ([`Message::metadata`]), erased with it, and matched by
    /// a search's [`SearchFilter::metadata`].
    pub fn with_metadata(mut self, json: impl Into<String>) -> Self {
        self.metadata = Some(json.into());
        self
    }

    /// The same message in thread `thread` (1 to 128 characters, no
    /// control characters; none is `main`). Each thread has its own view,
    /// turns and episodes; facts are shared by the memory's threads.
    pub fn in_thread(mut self, thread: impl Into<String>) -> Self {
        self.thread = Some(thread.into());
        self
    }

    /// The same message said at `at` (ms since the Unix epoch), for
    /// history loaded after the fact: not in the future, not before the
    /// last message of its thread.
    pub fn said_at(mut self, at: i64) -> Self {
        self.at = Some(at);
        self
    }

    /// The same message with your own id for it: an add retried with the
    /// same id (its outcome was lost) is not stored twice
    /// ([`Added::duplicate`]).
    pub fn with_client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The same message as a regenerated answer to user message `question`
    /// of its thread: the messages after that one still shown (the earlier
    /// answer, its tool run included) are replaced, kept as alternatives
    /// ([`Message::replaced_by`], [`Engram::explain_message`]) and left out
    /// of the view.
    pub fn replacing(mut self, question: u64) -> Self {
        self.replaces = Some(question);
        self
    }
}

impl MemoryError {
    /// The engram error inside an error returned by a method of [`Engram`],
    /// if that is what it is (`None` for a trap, a failed instantiation, an
    /// I/O error of [`Engram::export_to`]...). Every method returns
    /// `wasmtime::Result`; the component's own `memory-error` is in it as
    /// this type, so `err.downcast_ref::<MemoryError>()` does the same:
    ///
    /// ```no_run
    /// # use engram_wasmtime_host::{Engram, MemoryError, NewMessage};
    /// # fn f(memory: &mut Engram, message: &NewMessage) -> wasmtime::Result<()> {
    /// match memory.add_message(message) {
    ///     Ok(added) => println!("message {}", added.message),
    ///     Err(e) => match MemoryError::from_wasmtime(&e) {
    ///         Some(MemoryError::InvalidInput(why)) => eprintln!("fix the input: {why}"),
    ///         Some(MemoryError::Busy(_) | MemoryError::Store(_)) => eprintln!("retry later"),
    ///         Some(other) => eprintln!("{}: {other}", other.code()),
    ///         None => return Err(e), // a trap: open the memory again
    ///     },
    /// }
    /// # Ok(()) }
    /// ```
    pub fn from_wasmtime(err: &wasmtime::Error) -> Option<&MemoryError> {
        err.downcast_ref::<MemoryError>()
    }

    /// The case's stable code, as the other bindings name it
    /// (`invalid-input`, `store`, `model`, `corrupt`, `unsupported-version`,
    /// `busy`).
    pub fn code(&self) -> &'static str {
        match self {
            MemoryError::InvalidInput(_) => "invalid-input",
            MemoryError::Store(_) => "store",
            MemoryError::Model(_) => "model",
            MemoryError::Corrupt(_) => "corrupt",
            MemoryError::UnsupportedVersion(_) => "unsupported-version",
            MemoryError::Busy(_) => "busy",
        }
    }

    /// The message of the case (the found and supported versions for
    /// `unsupported-version`).
    pub fn message(&self) -> String {
        match self {
            MemoryError::InvalidInput(m)
            | MemoryError::Store(m)
            | MemoryError::Model(m)
            | MemoryError::Corrupt(m)
            | MemoryError::Busy(m) => m.clone(),
            MemoryError::UnsupportedVersion(v) => format!(
                "unsupported format version {} (this build reads version {})",
                v.found, v.supported
            ),
        }
    }
}

/// The model the host gives the component: complete a task, embed texts.
///
/// Calls run on a worker thread of the [`Host`] with a deadline
/// ([`Deadlines::model`]), hence `Send + Sync + 'static` and `&self`: keep
/// what changes behind your own lock. A call that outlives its deadline is
/// abandoned, so it may still be running when the next one starts.
pub trait HostModel: Send + Sync + 'static {
    /// The model's text for `request` (JSON following `request.schema`), or
    /// why there is none.
    fn complete(&self, request: TaskRequest) -> Result<String, String>;
    /// One vector per text.
    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String>;
    /// Tokens in `text`; `None` lets engram estimate.
    fn count_tokens(&self, _text: &str) -> Option<u32> {
        None
    }
}

/// The store the host gives the component: keys are UTF-8, values are bytes
/// that the store keeps exactly as given (the log head is JSON text as UTF-8,
/// log entries and segments a binary encoding); a memory in namespace `ns`
/// uses only keys starting with `engram/ns/`.
///
/// Calls run on a worker thread of the [`Host`] with a deadline
/// ([`Deadlines::store`]), like [`HostModel`]'s.
pub trait HostStore: Send + Sync + 'static {
    /// The value at `key`, or `None` when absent.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// The values at `keys`, in order (`None` where absent): one round
    /// trip where the store can (engram reads a log's tail and packs this
    /// way, at most 64 keys a call). The default reads them one by one.
    fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        keys.iter().map(|k| self.get(k)).collect()
    }
    /// Sets `key` to `value`.
    fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError>;
    /// Removes `key` (removing an absent key succeeds).
    fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// Every key starting with `prefix`, sorted by byte order.
    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError>;
    /// The commit: applies every write (`Some` = put, `None` = delete)
    /// atomically, only if `guard` holds `expected` (`None` = absent; the
    /// bytes compared by content); otherwise writes nothing and returns
    /// [`StoreError::Conflict`].
    fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[(String, Option<Vec<u8>>)],
    ) -> Result<(), StoreError>;
}

/// A store in a `BTreeMap` behind a mutex: fast, and gone with the process.
/// Clones share the map.
#[derive(Clone, Default)]
pub struct MemStore(Arc<Mutex<BTreeMap<String, Vec<u8>>>>);

impl MemStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn map(&self) -> MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        // A panic elsewhere cannot leave the map half-written: every change
        // below is one insert or remove, or a loop of them after the check.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every key and value now.
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        self.map().clone()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.map().is_empty()
    }
}

impl HostStore for MemStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.map().get(key).cloned())
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.map().insert(key.into(), value.into());
        Ok(())
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.map().remove(key);
        Ok(())
    }

    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .map()
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }

    fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[(String, Option<Vec<u8>>)],
    ) -> Result<(), StoreError> {
        let mut map = self.map();
        if map.get(guard).map(Vec::as_slice) != expected {
            return Err(StoreError::Conflict);
        }
        for (key, value) in writes {
            match value {
                Some(v) => map.insert(key.clone(), v.clone()),
                None => map.remove(key),
            };
        }
        Ok(())
    }
}

/// How long the host waits for each callback. `None` runs the callback on
/// the calling thread with no deadline (for a store or model that must stay
/// on one thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Each model call (`complete`, `embed`, `count-tokens`). Default 60 s.
    pub model: Option<Duration>,
    /// Each store call. Default 10 s.
    pub store: Option<Duration>,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            model: Some(Duration::from_secs(60)),
            store: Some(Duration::from_secs(10)),
        }
    }
}

/// Why a callback gave no answer.
enum NoAnswer {
    TimedOut(Duration),
    Panicked(String),
    NoThread(String),
}

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoAnswer::TimedOut(d) => write!(f, "timed out: no answer within {d:?}"),
            NoAnswer::Panicked(m) => write!(f, "the callback panicked: {m}"),
            NoAnswer::NoThread(m) => write!(f, "no worker thread for the callback: {m}"),
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs callbacks on one worker thread and waits for each with a deadline;
/// a worker that misses one is abandoned (it exits when its callback does).
#[derive(Default)]
struct Runner {
    worker: Option<mpsc::Sender<Job>>,
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

impl Runner {
    fn worker(&mut self) -> Result<&mpsc::Sender<Job>, NoAnswer> {
        if self.worker.is_none() {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("engram-host-callback".into())
                .spawn(move || rx.into_iter().for_each(|job| job()))
                .map_err(|e| NoAnswer::NoThread(e.to_string()))?;
            self.worker = Some(tx);
        }
        Ok(self.worker.as_ref().expect("just set"))
    }

    fn run<R: Send + 'static>(
        &mut self,
        deadline: Option<Duration>,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, NoAnswer> {
        let Some(limit) = deadline else {
            return catch_unwind(AssertUnwindSafe(f))
                .map_err(|p| NoAnswer::Panicked(panic_message(p)));
        };
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            // The receiver is gone when the deadline passed: the answer is
            // dropped unread.
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
        });
        if self.worker()?.send(job).is_err() {
            self.worker = None;
            return Err(NoAnswer::NoThread("the worker thread exited".into()));
        }
        match rx.recv_timeout(limit) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(p)) => Err(NoAnswer::Panicked(panic_message(p))),
            Err(RecvTimeoutError::Timeout) => {
                // Abandon the worker: dropping its sender ends its loop once
                // the hung callback returns, if it ever does.
                self.worker = None;
                Err(NoAnswer::TimedOut(limit))
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.worker = None;
                Err(NoAnswer::NoThread("the worker thread exited".into()))
            }
        }
    }
}

/// Which model a memory runs on.
#[derive(Clone)]
pub enum ModelChoice {
    /// The built-in offline model, inside the component, for completions and
    /// embeddings: the host gives no model and no callback is ever made.
    /// For demos and tests; plug in a real LLM for real use.
    Offline,
    /// The host's model for everything (completions, embeddings, token
    /// counts).
    Host(Arc<dyn HostModel>),
    /// The host's model for completions (and token counts), the offline
    /// hashing embedder for embeddings: for an LLM with no embedding
    /// endpoint. The host's `embed` is never called.
    HostWithOfflineEmbedder(Arc<dyn HostModel>),
}

impl ModelChoice {
    /// [`ModelChoice::Host`] of `model`.
    pub fn host(model: impl HostModel) -> Self {
        ModelChoice::Host(Arc::new(model))
    }

    /// [`ModelChoice::HostWithOfflineEmbedder`] of `model`.
    pub fn host_with_offline_embedder(model: impl HostModel) -> Self {
        ModelChoice::HostWithOfflineEmbedder(Arc::new(model))
    }

    /// The sources `open-with` takes: (completions, embeddings).
    pub fn sources(&self) -> (ModelSource, ModelSource) {
        match self {
            ModelChoice::Offline => (ModelSource::Offline, ModelSource::Offline),
            ModelChoice::Host(_) => (ModelSource::Host, ModelSource::Host),
            ModelChoice::HostWithOfflineEmbedder(_) => (ModelSource::Host, ModelSource::Offline),
        }
    }

    fn model(&self) -> Option<Arc<dyn HostModel>> {
        match self {
            ModelChoice::Offline => None,
            ModelChoice::Host(m) | ModelChoice::HostWithOfflineEmbedder(m) => Some(m.clone()),
        }
    }
}

impl std::fmt::Debug for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModelChoice::Offline => "Offline",
            ModelChoice::Host(_) => "Host(..)",
            ModelChoice::HostWithOfflineEmbedder(_) => "HostWithOfflineEmbedder(..)",
        })
    }
}

/// How many times the component called each function of the host's `model`
/// import (answered or not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelCalls {
    /// `complete` calls.
    pub complete: u64,
    /// `embed` calls.
    pub embed: u64,
    /// `count-tokens` calls.
    pub count_tokens: u64,
}

/// The state behind the component's imports.
pub struct Host {
    /// The clock reading (ms since the Unix epoch); set it before a call.
    pub now_ms: i64,
    store: Arc<dyn HostStore>,
    model: ModelChoice,
    model_calls: ModelCalls,
    deadlines: Deadlines,
    runner: Runner,
    linear: LinearMemory,
}

/// The component's linear memory as it grows: its largest size, an
/// optional cap, and a growth that was refused (a wasm32 memory stops at
/// 4 GiB; a host may cap it lower). A guest that cannot grow aborts its
/// call with a trap, which [`Engram`] explains with these figures.
#[derive(Debug, Default)]
struct LinearMemory {
    peak: usize,
    limit: Option<usize>,
    /// The size a refused growth asked for (and the limit it hit).
    refused: Option<(usize, usize)>,
}

/// wasm32's largest linear memory.
const WASM32_MAX: usize = 1 << 32;

impl ResourceLimiter for LinearMemory {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let limit = [self.limit, maximum, Some(WASM32_MAX)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(WASM32_MAX);
        if desired > limit {
            self.refused = Some((desired, limit));
            return Ok(false);
        }
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        // The engine could not reserve it (the machine's memory).
        self.refused.get_or_insert((0, self.peak));
        Ok(())
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

impl LinearMemory {
    /// `e`, with why when the guest ran out of memory during the call.
    fn explain(&mut self, e: wasmtime::Error) -> wasmtime::Error {
        match self.refused.take() {
            Some((0, at)) => e.context(format!(
                "the component ran out of memory: the machine refused to grow its linear memory past {at} bytes; this instance is unusable, open the memory again"
            )),
            Some((asked, limit)) => e.context(format!(
                "the component ran out of memory: it asked for {asked} bytes of linear memory, past its limit of {limit} (wasm32 allows at most 4 GiB); this instance is unusable, open the memory again"
            )),
            None => e,
        }
    }
}

impl Host {
    /// An empty [`MemStore`], the clock at `now_ms`, and `model` for
    /// everything.
    pub fn new(now_ms: i64, model: impl HostModel) -> Self {
        Host::with_store(now_ms, MemStore::new(), model)
    }

    /// `store`, the clock at `now_ms`, and `model` for everything.
    pub fn with_store(now_ms: i64, store: impl HostStore, model: impl HostModel) -> Self {
        Host::with_choice(now_ms, store, ModelChoice::host(model))
    }

    /// An empty [`MemStore`], the clock at `now_ms`, and the built-in offline
    /// model: the zero-config host (for demos and tests).
    pub fn offline(now_ms: i64) -> Self {
        Host::with_choice(now_ms, MemStore::new(), ModelChoice::Offline)
    }

    /// `store`, the clock at `now_ms`, and the model `choice`.
    pub fn with_choice(now_ms: i64, store: impl HostStore, choice: ModelChoice) -> Self {
        Host {
            now_ms,
            store: Arc::new(store),
            model: choice,
            model_calls: ModelCalls::default(),
            deadlines: Deadlines::default(),
            runner: Runner::default(),
            linear: LinearMemory::default(),
        }
    }

    /// Caps the component's linear memory at `bytes` (an edge worker's
    /// budget): a call that needs more fails with an error that says so,
    /// and the instance must be opened again. Without it the cap is
    /// wasm32's 4 GiB.
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.linear.limit = Some(bytes);
        self
    }

    /// The model this host gives its memories.
    pub fn model_choice(&self) -> &ModelChoice {
        &self.model
    }

    /// Calls of the `model` import so far (none for a half that runs on the
    /// offline model).
    pub fn model_calls(&self) -> ModelCalls {
        self.model_calls
    }

    /// The same host with other deadlines for its callbacks.
    pub fn deadlines(mut self, deadlines: Deadlines) -> Self {
        self.deadlines = deadlines;
        self
    }

    /// The deadlines in force (they can be changed between calls).
    pub fn deadlines_mut(&mut self) -> &mut Deadlines {
        &mut self.deadlines
    }

    fn store_call<R: Send + 'static>(
        &mut self,
        name: &str,
        f: impl FnOnce(&dyn HostStore) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let store = self.store.clone();
        self.runner
            .run(self.deadlines.store, move || f(store.as_ref()))
            .unwrap_or_else(|e| Err(StoreError::Failed(format!("store {name}: {e}"))))
    }

    fn model_call<R: Send + 'static>(
        &mut self,
        name: &str,
        f: impl FnOnce(&dyn HostModel) -> Result<R, String> + Send + 'static,
    ) -> Result<R, String> {
        // The component asks the host only for a half whose source is the
        // host; with no host model at all, an ask is answered with an error.
        let Some(model) = self.model.model() else {
            return Err(format!(
                "model {name}: this host has no model (it runs on the offline model)"
            ));
        };
        self.runner
            .run(self.deadlines.model, move || f(model.as_ref()))
            .unwrap_or_else(|e| Err(format!("model {name}: {e}")))
    }
}

impl clock::Host for Host {
    fn now_ms(&mut self) -> i64 {
        self.now_ms
    }
}

impl store::Host for Host {
    fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, StoreError> {
        self.store_call("get", move |s| s.get(&key))
    }

    fn get_many(&mut self, keys: Vec<String>) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        // (The engine checks that one value came per key.)
        self.store_call("get-many", move |s| s.get_many(&keys))
    }

    fn put(&mut self, key: String, value: Vec<u8>) -> Result<(), StoreError> {
        self.store_call("put", move |s| s.put(&key, &value))
    }

    fn delete(&mut self, key: String) -> Result<(), StoreError> {
        self.store_call("delete", move |s| s.delete(&key))
    }

    fn list_prefix(&mut self, prefix: String) -> Result<Vec<String>, StoreError> {
        self.store_call("list-prefix", move |s| s.list_prefix(&prefix))
    }

    fn write_if(
        &mut self,
        guard: String,
        expected: Option<Vec<u8>>,
        writes: Vec<(String, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.store_call("write-if", move |s| {
            s.write_if(&guard, expected.as_deref(), &writes)
        })
    }
}

impl model::Host for Host {
    fn complete(&mut self, request: TaskRequest) -> Result<String, String> {
        self.model_calls.complete += 1;
        self.model_call(task_name(request.task), move |m| m.complete(request))
    }

    fn embed(&mut self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        self.model_calls.embed += 1;
        self.model_call("embed", move |m| m.embed(texts))
    }

    fn count_tokens(&mut self, text: String) -> Option<u32> {
        self.model_calls.count_tokens += 1;
        // No answer in time is no count: engram estimates.
        self.model_call("count-tokens", move |m| Ok(m.count_tokens(&text)))
            .ok()
            .flatten()
    }
}

/// Called with each step a call degraded (see [`Engram::on_degraded`]).
pub type OnDegraded = Box<dyn FnMut(&Degraded) + Send>;

/// One memory of the component, open in its own wasmtime store.
pub struct Engram {
    store: Store<Host>,
    engram: bindings::Engram,
    memory: ResourceAny,
    on_degraded: Option<OnDegraded>,
}

impl Engram {
    /// Instantiates `component` over `host` and opens `namespace` with the
    /// JSON `config` (`{}` for the defaults), on the host's
    /// [`ModelChoice`] (`open-with` with its sources).
    pub fn open(
        engine: &Engine,
        component: &Component,
        host: Host,
        namespace: &str,
        config: &str,
    ) -> wasmtime::Result<Self> {
        Self::instantiate(engine, component, host, namespace, config, false)
    }

    /// [`Engram::open`], read-only, with whatever of a damaged log can be
    /// read (`open-salvage`): the way back when `open` fails with
    /// `corrupt`. Lost entries are skipped and reported in
    /// `stats().storage_warnings`; every write fails with `invalid-input`
    /// and the store is never written: export it and import the export
    /// into a new store or namespace.
    pub fn open_salvage(
        engine: &Engine,
        component: &Component,
        host: Host,
        namespace: &str,
        config: &str,
    ) -> wasmtime::Result<Self> {
        Self::instantiate(engine, component, host, namespace, config, true)
    }

    fn instantiate(
        engine: &Engine,
        component: &Component,
        host: Host,
        namespace: &str,
        config: &str,
        salvage: bool,
    ) -> wasmtime::Result<Self> {
        let mut linker = Linker::<Host>::new(engine);
        bindings::Engram::add_to_linker::<Host, HasSelf<Host>>(&mut linker, |h| h)?;
        linker.define_unknown_imports_as_traps(component)?;
        let mut store = Store::new(engine, host);
        store.limiter(|h| &mut h.linear);
        // wasmtime caps what one call may copy out of the guest at 128 MiB
        // (a guard against a hostile guest); this is engram's own component,
        // and the export of a 100k-fact memory is 340 MB.
        store.set_hostcall_fuel(1 << 33);
        let engram = bindings::Engram::instantiate(&mut store, component, &linker)
            .map_err(|e| store.data_mut().linear.explain(e))?;
        let (complete, embed) = store.data().model.sources();
        let guest = engram.engram_memory_engine().memory();
        let opened = match salvage {
            true => guest.call_open_salvage(&mut store, namespace, config, complete, embed),
            false => guest.call_open_with(&mut store, namespace, config, complete, embed),
        };
        let memory = opened.map_err(|e| store.data_mut().linear.explain(e))??;
        Ok(Engram {
            store,
            engram,
            memory,
            on_degraded: None,
        })
    }

    /// Calls `f` after every call of this memory (those of [`Engram::call`]
    /// included, and calls that fail) with each step the call degraded,
    /// oldest first: the host's model failed a task every attempt and the
    /// memory went on without it. Log it, count it, alert on it. The steps
    /// given to `f` are taken: [`Engram::take_degraded`] no longer returns
    /// them.
    pub fn on_degraded(&mut self, f: impl FnMut(&Degraded) + Send + 'static) {
        self.on_degraded = Some(Box::new(f));
    }

    /// The largest the component's linear memory has been, in bytes (it
    /// never shrinks: this is also its size now).
    pub fn linear_memory_peak(&self) -> usize {
        self.store.data().linear.peak
    }

    /// The host state: move the clock, change the deadlines.
    pub fn host(&mut self) -> &mut Host {
        self.store.data_mut()
    }

    /// Adds a message. A reply that ends the turn also runs `maintain`
    /// (unless the config sets `"maintain_after_reply": false`): see
    /// `added.maintained` and `added.maintain_error`.
    pub fn add_message(&mut self, message: &NewMessage) -> wasmtime::Result<Added> {
        self.call(|m, store, memory| m.call_add_message(store, memory, message))
    }

    /// Adds history (of any threads, each message with its own
    /// [`NewMessage::said_at`] or now) with no model call, in calls of at
    /// most [`MAX_BATCH`] messages (one commit each): see
    /// [`Engram::add_messages_with_progress`].
    pub fn add_messages(&mut self, messages: &[NewMessage]) -> wasmtime::Result<Batch> {
        self.add_messages_with_progress(messages, |_, _| {})
    }

    /// [`Engram::add_messages`], calling `progress(done, total)` after each
    /// call. A call is all or nothing: one bad message in it (a thread
    /// name of 200 characters, a date in the future or before its
    /// thread's last message...) fails it with
    /// [`MemoryError::InvalidInput`] naming the message (counted from the
    /// start of its call: the error's context says where that call began),
    /// and nothing of it is written; the calls before it stay committed
    /// (`progress` said how many). Messages whose client id the memory holds are skipped
    /// (`duplicates`), so a batch with client ids can be retried whole.
    /// Boundary judgments, cuts, fades and notes wait: run
    /// [`Engram::maintain_in`] each thread until [`Engram::pending_in`] is
    /// empty.
    pub fn add_messages_with_progress(
        &mut self,
        messages: &[NewMessage],
        mut progress: impl FnMut(usize, usize),
    ) -> wasmtime::Result<Batch> {
        let mut out = Batch {
            messages: Vec::with_capacity(messages.len()),
            duplicates: Vec::new(),
        };
        let mut done = 0;
        for chunk in messages.chunks(MAX_BATCH) {
            let b = self
                .call(|m, store, memory| m.call_add_messages(store, memory, chunk))
                .with_context(|| {
                    format!(
                        "add_messages: the call of messages {done}.. of {} failed; \
                         the {done} before it are committed",
                        messages.len()
                    )
                })?;
            out.messages.extend(b.messages);
            out.duplicates.extend(b.duplicates);
            done += chunk.len();
            progress(done, messages.len());
        }
        Ok(out)
    }

    /// Every thread with at least one message, by name: title, first and
    /// last message, counts.
    pub fn threads(&mut self) -> wasmtime::Result<Vec<ThreadInfo>> {
        self.call(|m, store, memory| m.call_threads(store, memory))
    }

    /// The view of `thread`: the memory-wide facts block, then that
    /// thread's episodes in view, open stretch and recall blocks
    /// ([`Engram::view`] is the `main` thread's).
    pub fn view_in(&mut self, thread: &str) -> wasmtime::Result<View> {
        self.call(|m, store, memory| m.call_view_in(store, memory, thread))
    }

    /// [`Engram::view_in`] as an OpenAI `messages` array.
    pub fn render_openai_in(&mut self, thread: &str) -> wasmtime::Result<serde_json::Value> {
        let text = self.call(|m, store, memory| m.call_render_openai_in(store, memory, thread))?;
        serde_json::from_str(&text).context("render-openai-in returns JSON")
    }

    /// [`Engram::view_in`] as OpenAI Responses API input items.
    pub fn render_responses_in(&mut self, thread: &str) -> wasmtime::Result<serde_json::Value> {
        let text =
            self.call(|m, store, memory| m.call_render_responses_in(store, memory, thread))?;
        serde_json::from_str(&text).context("render-responses-in returns JSON")
    }

    /// [`Engram::view_at_in`] as OpenAI Responses API input items.
    pub fn render_responses_at_in(
        &mut self,
        at: i64,
        thread: &str,
    ) -> wasmtime::Result<serde_json::Value> {
        let text =
            self.call(|m, store, memory| m.call_render_responses_at_in(store, memory, at, thread))?;
        serde_json::from_str(&text).context("render-responses-at-in returns JSON")
    }

    /// The size of `thread`'s view now, in tokens.
    pub fn view_tokens_in(&mut self, thread: &str) -> wasmtime::Result<u32> {
        self.call(|m, store, memory| m.call_view_tokens_in(store, memory, thread))
    }

    /// The view of `thread` as it was at `at` (see [`Engram::view_at`]).
    pub fn view_at_in(&mut self, at: i64, thread: &str) -> wasmtime::Result<View> {
        self.call(|m, store, memory| m.call_view_at_in(store, memory, at, thread))
    }

    /// [`Engram::view_at_in`] as an OpenAI `messages` array.
    pub fn render_openai_at_in(
        &mut self,
        at: i64,
        thread: &str,
    ) -> wasmtime::Result<serde_json::Value> {
        let text =
            self.call(|m, store, memory| m.call_render_openai_at_in(store, memory, at, thread))?;
        serde_json::from_str(&text).context("render-openai-at-in returns JSON")
    }

    /// [`Engram::maintain`] after a turn of `thread`: its judgments, cuts
    /// and fade ahead, and the memory-wide work (distill, notes, retries,
    /// the sleep of idle threads: `maintained.slept`).
    pub fn maintain_in(&mut self, thread: &str) -> wasmtime::Result<Maintained> {
        self.call(|m, store, memory| m.call_maintain_in(store, memory, thread))
    }

    /// Work waiting for [`Engram::maintain_in`] `thread`.
    pub fn pending_in(&mut self, thread: &str) -> wasmtime::Result<Pending> {
        self.call(|m, store, memory| m.call_pending_in(store, memory, thread))
    }

    /// [`Engram::end_turn`] in `thread`.
    pub fn end_turn_in(&mut self, thread: &str) -> wasmtime::Result<Option<DistilledBlock>> {
        self.call(|m, store, memory| m.call_end_turn_in(store, memory, thread))
    }

    /// Closes tool call `call_id`, which waits for its output and will have
    /// none (the tool failed, the user moved on): adds its tool output "No
    /// output: this tool call was abandoned.", so the view stays a chat
    /// every model API accepts. While a call waits, a user, assistant or
    /// system message is refused (`invalid-input` naming
    /// `abandon_tool_call`); a call that is not waiting is `invalid-input`.
    pub fn abandon_tool_call(&mut self, call_id: &str) -> wasmtime::Result<Added> {
        self.call(|m, store, memory| m.call_abandon_tool_call(store, memory, call_id))
    }

    /// Runs the work that waits after a reply (boundary judgments, distill,
    /// notes of leaving episodes, a fade ahead, retries of deferred notes).
    pub fn maintain(&mut self) -> wasmtime::Result<Maintained> {
        self.call(|m, store, memory| m.call_maintain(store, memory))
    }

    /// Work waiting for [`Engram::maintain`] (the `main` thread's; see
    /// [`Engram::pending_in`]).
    pub fn pending(&mut self) -> wasmtime::Result<Pending> {
        self.call(|m, store, memory| m.call_pending(store, memory))
    }

    /// Ends the turn explicitly (after a reply with tool calls): `maintain`
    /// with the latest turn counted as over.
    pub fn end_turn(&mut self) -> wasmtime::Result<Option<DistilledBlock>> {
        self.call(|m, store, memory| m.call_end_turn(store, memory))
    }

    /// Degraded steps not taken yet, oldest first; taking empties the list.
    /// (With an [`Engram::on_degraded`] callback, it has them already.)
    pub fn take_degraded(&mut self) -> wasmtime::Result<Vec<Degraded>> {
        let m = self.engram.engram_memory_engine().memory();
        m.call_take_degraded(&mut self.store, self.memory)
    }

    /// The view, structured (the `main` thread's; see [`Engram::view_in`]).
    pub fn view(&mut self) -> wasmtime::Result<View> {
        self.call(|m, store, memory| m.call_view(store, memory))
    }

    /// Sets the host's own instructions (persona, tool policy), pinned first
    /// in every view, counted toward the ceiling, never faded; an empty text
    /// removes them. Returns whether they changed.
    pub fn set_instructions(&mut self, text: &str) -> wasmtime::Result<bool> {
        self.call(|m, store, memory| m.call_set_instructions(store, memory, text))
    }

    /// The host's instructions now, if set.
    pub fn instructions(&mut self) -> wasmtime::Result<Option<String>> {
        self.call(|m, store, memory| m.call_instructions(store, memory))
    }

    /// The view as an OpenAI `messages` array.
    pub fn render_openai(&mut self) -> wasmtime::Result<serde_json::Value> {
        let text = self.call(|m, store, memory| m.call_render_openai(store, memory))?;
        serde_json::from_str(&text).context("render-openai returns JSON")
    }

    /// Every message, in order.
    pub fn messages(&mut self) -> wasmtime::Result<Vec<Message>> {
        self.call(|m, store, memory| m.call_messages(store, memory))
    }

    /// Counts, the view's size against the ceiling, pending work and the
    /// model's health.
    pub fn stats(&mut self) -> wasmtime::Result<Stats> {
        self.call(|m, store, memory| m.call_stats(store, memory))
    }

    /// Erases a message, an episode, a fact, an entity or a whole thread
    /// (`EraseTarget::Thread(name)`) for good, with
    /// what depended on it (the facts noted from an erased message's
    /// episode, its tool exchange, entities no fact names any more): the
    /// stored log entries and snapshot that held it are rewritten in one
    /// conditional write. Returns the ids erased (empty when all of it
    /// already was); an unknown id is [`MemoryError::InvalidInput`].
    pub fn erase(&mut self, target: EraseTarget) -> wasmtime::Result<Erased> {
        self.call(|m, store, memory| m.call_erase(store, memory, &target))
    }

    /// Writes the whole export to `out`, part by part (about `part_bytes`
    /// each; 8 MiB is a good size), so neither the component nor the host
    /// holds it whole: the way to export a memory whose export passes what
    /// the component's 4 GiB can hold beside its state (about 1.2 GB of
    /// export). The bytes are what `export` returns when the export
    /// begins. Returns how many bytes were written.
    pub fn export_to(
        &mut self,
        out: &mut impl std::io::Write,
        part_bytes: u32,
    ) -> wasmtime::Result<u64> {
        let (mut written, mut cursor) = (0u64, None);
        loop {
            let part = self
                .call(|m, store, memory| m.call_export_part(store, memory, cursor, part_bytes))?;
            out.write_all(part.text.as_bytes())?;
            written += part.text.len() as u64;
            cursor = part.next;
            if cursor.is_none() {
                out.flush()?;
                return Ok(written);
            }
        }
    }

    /// Loads an export read from `input` (UTF-8) into this memory, which
    /// must be empty, handing it to the component in pieces of about
    /// `piece_bytes` (8 MiB is a good size) so the host never holds it
    /// whole; nothing is written until all of it is read and checked. A
    /// failed read leaves the memory unchanged.
    pub fn import_from(
        &mut self,
        input: &mut impl std::io::Read,
        piece_bytes: usize,
    ) -> wasmtime::Result<()> {
        let piece_bytes = piece_bytes.max(4);
        let mut buf: Vec<u8> = Vec::with_capacity(piece_bytes);
        let read = (|| -> wasmtime::Result<()> {
            let mut end = false;
            while !end {
                // Fill a piece, or read to the end.
                while buf.len() < piece_bytes {
                    let at = buf.len();
                    buf.resize(piece_bytes, 0);
                    let n = loop {
                        match input.read(&mut buf[at..]) {
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                            r => break r?,
                        }
                    };
                    buf.truncate(at + n);
                    if n == 0 {
                        end = true;
                        break;
                    }
                }
                // Send the longest whole-character prefix; keep the rest.
                let whole = match std::str::from_utf8(&buf) {
                    Ok(_) => buf.len(),
                    Err(e) if e.error_len().is_none() && !end => e.valid_up_to(),
                    Err(e) => wasmtime::bail!(
                        "the export is not UTF-8 (at byte {} of a piece)",
                        e.valid_up_to()
                    ),
                };
                if whole > 0 {
                    let text = std::str::from_utf8(&buf[..whole])
                        .expect("checked")
                        .to_owned();
                    self.call(|m, store, memory| m.call_import_piece(store, memory, &text))?;
                    buf.drain(..whole);
                }
            }
            Ok(())
        })();
        if let Err(e) = read {
            // Forget the pieces; if the instance is gone (a trap), so are
            // they, and the first error is the one that explains.
            let m = self.engram.engram_memory_engine().memory();
            let _ = m.call_import_discard(&mut self.store, self.memory);
            return Err(e);
        }
        self.call(|m, store, memory| m.call_import_finish(store, memory))
    }

    /// Deletes the whole memory (every key of its namespace) in one
    /// conditional write; the handle stays open on the empty namespace.
    pub fn destroy(&mut self) -> wasmtime::Result<()> {
        self.call(|m, store, memory| m.call_destroy(store, memory))
    }

    /// The view as it was at `at` (ms since the Unix epoch), rebuilt from
    /// the log; nothing is written.
    pub fn view_at(&mut self, at: i64) -> wasmtime::Result<View> {
        self.call(|m, store, memory| m.call_view_at(store, memory, at))
    }

    /// [`Engram::view_at`] as an OpenAI `messages` array.
    pub fn render_openai_at(&mut self, at: i64) -> wasmtime::Result<serde_json::Value> {
        let text = self.call(|m, store, memory| m.call_render_openai_at(store, memory, at))?;
        serde_json::from_str(&text).context("render-openai-at returns JSON")
    }

    /// Searches facts and the passages of sealed episodes (words and
    /// meaning, fused), as recall does; `None` for the default options.
    pub fn search(
        &mut self,
        query: &str,
        options: Option<SearchOptions>,
    ) -> wasmtime::Result<Vec<SearchHit>> {
        self.call(|m, store, memory| m.call_search(store, memory, query, options.as_ref()))
    }

    /// The whole text of a search hit's item ([`Engram::search`] cuts a
    /// hit's text at about 1,000 tokens). An item that is not there is
    /// `invalid-input`.
    pub fn hit_text(&mut self, item: RecallItem) -> wasmtime::Result<String> {
        self.call(|m, store, memory| m.call_hit_text(store, memory, item))
    }

    /// Every recall block, with what each search and the walk found and
    /// distill's decision.
    pub fn recalls(&mut self) -> wasmtime::Result<Vec<RecallBlock>> {
        self.call(|m, store, memory| m.call_recalls(store, memory))
    }

    /// Why fact `fact` was recalled, block by block.
    pub fn explain_recall(&mut self, fact: u64) -> wasmtime::Result<Vec<RecallExplanation>> {
        self.call(|m, store, memory| m.call_explain_recall(store, memory, fact))
    }

    /// Writes facts as the host's chat model gave them through the `note`
    /// tool ([`Engram::note_tool`]).
    pub fn note(&mut self, args: &NoteArgs) -> wasmtime::Result<NoteOutcome> {
        self.call(|m, store, memory| m.call_note(store, memory, args))
    }

    /// The `note` tool definition (OpenAI tools format) to offer a chat
    /// model.
    pub fn note_tool(&mut self) -> wasmtime::Result<serde_json::Value> {
        let m = self.engram.engram_memory_engine().memory();
        let text = m.call_note_tool(&mut self.store)?;
        serde_json::from_str(&text).context("note-tool returns JSON")
    }

    /// Every episode, with its state, activation and significance.
    pub fn episodes(&mut self) -> wasmtime::Result<Vec<Episode>> {
        self.call(|m, store, memory| m.call_episodes(store, memory))
    }

    /// Every fact (retired ones included, marked).
    pub fn facts(&mut self) -> wasmtime::Result<Vec<Fact>> {
        self.call(|m, store, memory| m.call_facts(store, memory))
    }

    /// A page of facts in id order: at most `page.limit` (1..=1000; `None`:
    /// 100) after `page.cursor` (the `next` of the page before), kept by
    /// `filter`. The cursor names the last id seen, so a walk returns each
    /// fact once, in order, while facts are added between pages.
    pub fn facts_page(
        &mut self,
        page: &PageRequest,
        filter: &FactFilter,
    ) -> wasmtime::Result<FactPage> {
        self.call(|m, store, memory| m.call_facts_page(store, memory, page, filter))
    }

    /// A page of messages in id order, optionally of one thread.
    pub fn messages_page(
        &mut self,
        page: &PageRequest,
        thread: Option<&str>,
    ) -> wasmtime::Result<MessagePage> {
        self.call(|m, store, memory| m.call_messages_page(store, memory, page, thread))
    }

    /// A page of episodes in id order.
    pub fn episodes_page(
        &mut self,
        page: &PageRequest,
        filter: &EpisodeFilter,
    ) -> wasmtime::Result<EpisodePage> {
        self.call(|m, store, memory| m.call_episodes_page(store, memory, page, filter))
    }

    /// Remembers a fact the host states, at any time (a new memory
    /// included): a sentence the note model turns into a triple, or the
    /// triple. Merged and retired like any fact; its source is the host
    /// (`episode` 0).
    pub fn remember(&mut self, statement: &Statement) -> wasmtime::Result<Remembered> {
        self.call(|m, store, memory| m.call_remember(store, memory, statement))
    }

    /// Revises fact `id`: the statement is remembered as a new fact that
    /// retires it (facts are never edited in place).
    pub fn revise(&mut self, id: u64, statement: &Statement) -> wasmtime::Result<Remembered> {
        self.call(|m, store, memory| m.call_revise(store, memory, id, statement))
    }

    /// Fact `id`, or `None` when the memory has no such fact.
    pub fn fact(&mut self, id: u64) -> wasmtime::Result<Option<Fact>> {
        self.call(|m, store, memory| m.call_fact(store, memory, id))
    }

    /// What happened to fact `id`: added, merged, retired, retired by,
    /// erased, with times.
    pub fn history(&mut self, id: u64) -> wasmtime::Result<FactHistory> {
        self.call(|m, store, memory| m.call_history(store, memory, id))
    }

    /// Every entity with its aliases.
    pub fn entities(&mut self) -> wasmtime::Result<Vec<Entity>> {
        self.call(|m, store, memory| m.call_entities(store, memory))
    }

    /// Every trace (yes answers and encodings).
    pub fn traces(&mut self) -> wasmtime::Result<Vec<Trace>> {
        self.call(|m, store, memory| m.call_traces(store, memory))
    }

    /// Every fade, oldest first.
    pub fn fades(&mut self) -> wasmtime::Result<Vec<Fade>> {
        self.call(|m, store, memory| m.call_fades(store, memory))
    }

    /// Why episode `id` is in or out of view.
    pub fn explain_episode(&mut self, id: u64) -> wasmtime::Result<EpisodeExplanation> {
        self.call(|m, store, memory| m.call_explain_episode(store, memory, id))
    }

    /// Why fact `id` is in the facts block, out of it, or retired.
    pub fn explain_fact(&mut self, id: u64) -> wasmtime::Result<FactExplanation> {
        self.call(|m, store, memory| m.call_explain_fact(store, memory, id))
    }

    /// Why message `id` is shown or not: the alternatives of a regenerated
    /// answer ([`NewMessage::replacing`]).
    pub fn explain_message(&mut self, id: u64) -> wasmtime::Result<MessageExplanation> {
        self.call(|m, store, memory| m.call_explain_message(store, memory, id))
    }

    /// One part of the export (about `max_bytes`): `None` to begin, then
    /// each part's `next` until it is `None`. [`Engram::export_to`] and
    /// [`Engram::export`] do the loop.
    pub fn export_part(
        &mut self,
        cursor: Option<ExportCursor>,
        max_bytes: u32,
    ) -> wasmtime::Result<ExportPart> {
        self.call(|m, store, memory| m.call_export_part(store, memory, cursor, max_bytes))
    }

    /// The whole export (every log entry, as JSON text), for backup or
    /// moving; [`Engram::export_to`] writes it without holding it whole.
    pub fn export(&mut self) -> wasmtime::Result<String> {
        let mut out = Vec::new();
        self.export_to(&mut out, 8 << 20)?;
        String::from_utf8(out).context("the export is UTF-8")
    }

    /// Loads a whole export into this memory, which must be empty
    /// ([`Engram::import_from`] reads it from a file in pieces).
    pub fn import(&mut self, export: &str) -> wasmtime::Result<()> {
        self.import_from(&mut export.as_bytes(), 8 << 20)
    }

    /// Hands one piece of an export to the component (pieces join in
    /// order; nothing is written until [`Engram::import_finish`]).
    pub fn import_piece(&mut self, text: &str) -> wasmtime::Result<()> {
        self.call(|m, store, memory| m.call_import_piece(store, memory, text))
    }

    /// Checks the pieces given so far as one export and writes it.
    pub fn import_finish(&mut self) -> wasmtime::Result<()> {
        self.call(|m, store, memory| m.call_import_finish(store, memory))
    }

    /// Forgets the pieces given so far; returns how many bytes they held.
    pub fn import_discard(&mut self) -> wasmtime::Result<u64> {
        let m = self.engram.engram_memory_engine().memory();
        m.call_import_discard(&mut self.store, self.memory)
    }

    /// A method of the `memory` resource through the generated bindings
    /// (every one has a typed method above; this is for code written
    /// against the bindings): `engram.call(|m, store, memory|
    /// m.call_search(store, memory, "Lisbon", None))`. The
    /// [`Engram::on_degraded`] callback runs after it.
    pub fn call<R>(
        &mut self,
        f: impl FnOnce(
            &GuestMemory,
            &mut Store<Host>,
            ResourceAny,
        ) -> wasmtime::Result<Result<R, MemoryError>>,
    ) -> wasmtime::Result<R> {
        let m = self.engram.engram_memory_engine().memory();
        // Only a growth refused during this call explains its failure.
        self.store.data_mut().linear.refused = None;
        let out = f(&m, &mut self.store, self.memory)
            .map_err(|e| self.store.data_mut().linear.explain(e))?;
        // The call returned (it did not trap): hand its degraded steps over.
        if self.on_degraded.is_some() {
            let degraded = self.take_degraded()?;
            if let Some(each) = self.on_degraded.as_mut() {
                degraded.iter().for_each(each);
            }
        }
        Ok(out?)
    }

    /// The offline model's answer to `request` (the component's `offline`
    /// interface), whatever model this memory runs on.
    pub fn offline_complete(
        &mut self,
        request: &TaskRequest,
    ) -> wasmtime::Result<Result<String, String>> {
        let offline = self.engram.engram_memory_offline();
        offline.call_complete(&mut self.store, request)
    }

    /// The offline embedder's vectors for `texts` (unit vectors of
    /// [`Engram::offline_dimension`] numbers).
    pub fn offline_embed(&mut self, texts: &[String]) -> wasmtime::Result<Vec<Vec<f32>>> {
        let offline = self.engram.engram_memory_offline();
        offline.call_embed(&mut self.store, texts)
    }

    /// The length of the offline embedder's vectors.
    pub fn offline_dimension(&mut self) -> wasmtime::Result<u32> {
        let offline = self.engram.engram_memory_offline();
        offline.call_dimension(&mut self.store)
    }

    /// The checksum of the meaning graph built over `rows` fixed vectors of
    /// `dim` numbers (the component's `diagnostics` interface): equal to the
    /// native engine's and the npm package's.
    pub fn graph_checksum(&mut self, rows: u32, dim: u32) -> wasmtime::Result<u64> {
        let diagnostics = self.engram.engram_memory_diagnostics();
        diagnostics.call_graph_checksum(&mut self.store, rows, dim)
    }

    /// Closes the memory (drops the guest resource).
    pub fn close(mut self) -> wasmtime::Result<()> {
        self.memory.resource_drop(&mut self.store)
    }
}

/// One recorded model call, as `tests/fixtures/scenario.json` keeps it.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Recorded {
    /// A completion and its answer.
    Complete {
        /// Task name (`segment`, `note`, ...).
        task: String,
        /// The request content.
        content: String,
        /// `{"Ok": text}` or `{"Err": message}`.
        answer: Answer,
    },
    /// An embedding call and its vectors.
    Embed {
        /// The texts.
        texts: Vec<String>,
        /// The vectors.
        vectors: Vec<Vec<f32>>,
    },
}

/// A recorded answer.
#[derive(Debug, Clone, Deserialize)]
pub enum Answer {
    /// The model's text.
    Ok(String),
    /// The error the host gave.
    Err(String),
}

/// The WIT name of a task (as `stats().model` counts it).
pub fn task_name(t: Task) -> &'static str {
    match t {
        Task::Segment => "segment",
        Task::Note => "note",
        Task::Trace => "trace",
        Task::Resolve => "resolve",
        Task::Reconcile => "reconcile",
        Task::Split => "split",
        Task::Relevance => "relevance",
        Task::Distill => "distill",
    }
}

/// Replays a recorded transcript in order, like `engram::testing::TranscriptModel`:
/// a call that differs from the recording (task, content or texts) is
/// answered with an error and kept in [`TranscriptModel::mismatches`].
pub struct TranscriptModel {
    calls: Vec<Recorded>,
    mismatches: Arc<Mutex<Vec<String>>>,
    position: Arc<AtomicUsize>,
}

/// What a [`TranscriptModel`] saw, readable while the component owns it.
#[derive(Clone)]
pub struct TranscriptProbe {
    mismatches: Arc<Mutex<Vec<String>>>,
    position: Arc<AtomicUsize>,
}

impl TranscriptProbe {
    /// Every difference between the calls and the recording.
    pub fn mismatches(&self) -> Vec<String> {
        self.mismatches.lock().expect("not poisoned").clone()
    }
    /// Calls answered so far.
    pub fn position(&self) -> usize {
        self.position.load(Ordering::SeqCst)
    }
}

impl TranscriptModel {
    /// Replays `calls`.
    pub fn new(calls: Vec<Recorded>) -> Self {
        TranscriptModel {
            calls,
            mismatches: Default::default(),
            position: Default::default(),
        }
    }

    /// A handle on what the replay saw.
    pub fn probe(&self) -> TranscriptProbe {
        TranscriptProbe {
            mismatches: self.mismatches.clone(),
            position: self.position.clone(),
        }
    }

    fn take(&self) -> (usize, Option<Recorded>) {
        let i = self.position.fetch_add(1, Ordering::SeqCst);
        (i, self.calls.get(i).cloned())
    }

    fn miss(&self, m: String) -> String {
        self.mismatches
            .lock()
            .expect("not poisoned")
            .push(m.clone());
        m
    }
}

impl HostModel for TranscriptModel {
    fn complete(&self, request: TaskRequest) -> Result<String, String> {
        let name = task_name(request.task);
        match self.take() {
            (
                _,
                Some(Recorded::Complete {
                    task,
                    content,
                    answer,
                }),
            ) if task == name && content == request.content => match answer {
                Answer::Ok(text) => Ok(text),
                Answer::Err(e) => Err(e),
            },
            (i, other) => Err(self.miss(format!(
                "call {i}: got a {name} request, the recording has {}",
                describe(other.as_ref())
            ))),
        }
    }

    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        match self.take() {
            (_, Some(Recorded::Embed { texts: t, vectors })) if t == texts => Ok(vectors),
            (i, other) => Err(self.miss(format!(
                "call {i}: got an embed of {texts:?}, the recording has {}",
                describe(other.as_ref())
            ))),
        }
    }
}

fn describe(r: Option<&Recorded>) -> String {
    match r {
        None => "no more calls".into(),
        Some(Recorded::Complete { task, content, .. }) => {
            format!("a {task} request for {content:?}")
        }
        Some(Recorded::Embed { texts, .. }) => format!("an embed of {texts:?}"),
    }
}
