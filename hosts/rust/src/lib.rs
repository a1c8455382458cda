//! A Rust host of the engram component (`wit/engram.wit`) in wasmtime.
//!
//! [`Host`] implements the component's imports: a key-value store kept in a
//! `BTreeMap`, a clock that moves only when told, and any [`HostModel`]
//! (a real LLM client, or [`TranscriptModel`] to replay a recorded
//! conversation). [`Engram`] instantiates the component and holds one open
//! memory.
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
//! use engram_wasmtime_host::{Engram, Host, NewMessage, Role, TranscriptModel};
//!
//! let engine = wasmtime::Engine::default();
//! let component = wasmtime::component::Component::from_file(&engine, "engram.wasm")?;
//! let host = Host::new(1_772_445_600_000, TranscriptModel::new(vec![]));
//! let mut engram = Engram::open(&engine, &component, host, "alice", "{}")?;
//! let message = NewMessage {
//!     role: Role::User,
//!     content: "Plan the Lisbon offsite.".into(),
//!     tool_calls: vec![],
//!     tool_call_id: None,
//! };
//! engram.add_message(&message)?;
//! println!("{}", engram.render_openai()?);
//! # Ok::<(), wasmtime::Error>(())
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmtime::component::{Component, HasSelf, Linker, ResourceAny};
use wasmtime::error::Context as _;
use wasmtime::{Engine, Store};

/// The code `bindgen!` generates from `wit/`, in its own module.
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "engram",
    });
}

use bindings::engram::memory::{clock, model, store};
pub use bindings::exports::engram::memory::engine::{
    Added, Degraded, DistilledBlock, Fade, FadeReason, GuestMemory, Health, LastError, Maintained,
    MemoryError, Message, NewMessage, Pending, Role, SearchHit, SearchOptions, Stats, ToolCall,
    View,
};
pub use model::{Task, TaskRequest};

/// The model the host gives the component: complete a task, embed texts.
pub trait HostModel: Send {
    /// The model's text for `request` (JSON following `request.schema`), or
    /// why there is none.
    fn complete(&mut self, request: TaskRequest) -> Result<String, String>;
    /// One vector per text.
    fn embed(&mut self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String>;
    /// Tokens in `text`; `None` lets engram estimate.
    fn count_tokens(&mut self, _text: &str) -> Option<u32> {
        None
    }
}

/// The state behind the component's imports.
pub struct Host {
    /// The store: every key engram wrote, sorted.
    pub kv: BTreeMap<String, String>,
    /// The clock reading (ms since the Unix epoch); set it before a call.
    pub now_ms: i64,
    model: Box<dyn HostModel>,
}

impl Host {
    /// An empty store, the clock at `now_ms`, and `model`.
    pub fn new(now_ms: i64, model: impl HostModel + 'static) -> Self {
        Host {
            kv: BTreeMap::new(),
            now_ms,
            model: Box::new(model),
        }
    }
}

impl clock::Host for Host {
    fn now_ms(&mut self) -> i64 {
        self.now_ms
    }
}

impl store::Host for Host {
    fn get(&mut self, key: String) -> Result<Option<String>, store::StoreError> {
        Ok(self.kv.get(&key).cloned())
    }

    fn put(&mut self, key: String, value: String) -> Result<(), store::StoreError> {
        self.kv.insert(key, value);
        Ok(())
    }

    fn delete(&mut self, key: String) -> Result<(), store::StoreError> {
        self.kv.remove(&key);
        Ok(())
    }

    fn list_prefix(&mut self, prefix: String) -> Result<Vec<String>, store::StoreError> {
        Ok(self
            .kv
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }

    fn write_if(
        &mut self,
        guard: String,
        expected: Option<String>,
        writes: Vec<(String, Option<String>)>,
    ) -> Result<(), store::StoreError> {
        if self.kv.get(&guard) != expected.as_ref() {
            return Err(store::StoreError::Conflict);
        }
        for (key, value) in writes {
            match value {
                Some(v) => self.kv.insert(key, v),
                None => self.kv.remove(&key),
            };
        }
        Ok(())
    }
}

impl model::Host for Host {
    fn complete(&mut self, request: TaskRequest) -> Result<String, String> {
        self.model.complete(request)
    }

    fn embed(&mut self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        self.model.embed(texts)
    }

    fn count_tokens(&mut self, text: String) -> Option<u32> {
        self.model.count_tokens(&text)
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
    /// JSON `config` (`{}` for the defaults).
    pub fn open(
        engine: &Engine,
        component: &Component,
        host: Host,
        namespace: &str,
        config: &str,
    ) -> wasmtime::Result<Self> {
        let mut linker = Linker::<Host>::new(engine);
        bindings::Engram::add_to_linker::<Host, HasSelf<Host>>(&mut linker, |h| h)?;
        linker.define_unknown_imports_as_traps(component)?;
        let mut store = Store::new(engine, host);
        let engram = bindings::Engram::instantiate(&mut store, component, &linker)?;
        let memory = engram
            .engram_memory_engine()
            .memory()
            .call_open(&mut store, namespace, config)??;
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

    /// The host state: move the clock, read the store.
    pub fn host(&mut self) -> &mut Host {
        self.store.data_mut()
    }

    /// Adds a message. A reply that ends the turn also runs `maintain`
    /// (unless the config sets `"maintain_after_reply": false`): see
    /// `added.maintained` and `added.maintain_error`.
    pub fn add_message(&mut self, message: &NewMessage) -> wasmtime::Result<Added> {
        self.call(|m, store, memory| m.call_add_message(store, memory, message))
    }

    /// Runs the work that waits after a reply (boundary judgments, distill,
    /// notes of leaving episodes, a fade ahead, retries of deferred notes).
    pub fn maintain(&mut self) -> wasmtime::Result<Maintained> {
        self.call(|m, store, memory| m.call_maintain(store, memory))
    }

    /// Work waiting for [`Engram::maintain`].
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

    /// The view, structured.
    pub fn view(&mut self) -> wasmtime::Result<View> {
        self.call(|m, store, memory| m.call_view(store, memory))
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

    /// Any other method of the `memory` resource, through the generated
    /// bindings: `engram.call(|m, store, memory| m.call_search(store, memory, "Lisbon", None))`.
    /// The [`Engram::on_degraded`] callback runs after it.
    pub fn call<R>(
        &mut self,
        f: impl FnOnce(
            &GuestMemory,
            &mut Store<Host>,
            ResourceAny,
        ) -> wasmtime::Result<Result<R, MemoryError>>,
    ) -> wasmtime::Result<R> {
        let m = self.engram.engram_memory_engine().memory();
        let out = f(&m, &mut self.store, self.memory)?;
        // The call returned (it did not trap): hand its degraded steps over.
        if self.on_degraded.is_some() {
            let degraded = self.take_degraded()?;
            if let Some(each) = self.on_degraded.as_mut() {
                degraded.iter().for_each(each);
            }
        }
        Ok(out?)
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
    next: usize,
    mismatches: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    position: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// What a [`TranscriptModel`] saw, readable while the component owns it.
#[derive(Clone)]
pub struct TranscriptProbe {
    mismatches: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    position: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl TranscriptProbe {
    /// Every difference between the calls and the recording.
    pub fn mismatches(&self) -> Vec<String> {
        self.mismatches.lock().expect("not poisoned").clone()
    }
    /// Calls answered so far.
    pub fn position(&self) -> usize {
        self.position.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl TranscriptModel {
    /// Replays `calls`.
    pub fn new(calls: Vec<Recorded>) -> Self {
        TranscriptModel {
            calls,
            next: 0,
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

    fn take(&mut self) -> (usize, Option<Recorded>) {
        let i = self.next;
        self.next += 1;
        self.position
            .store(self.next, std::sync::atomic::Ordering::SeqCst);
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
    fn complete(&mut self, request: TaskRequest) -> Result<String, String> {
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

    fn embed(&mut self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
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
