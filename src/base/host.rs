//! What the host provides: a clock, a store and a model.
//!
//! The core never reads a clock, touches a file or opens a socket: these three
//! small traits are the only way it reaches the world. Futures need not be
//! `Send` (the core is single-threaded; in the browser they are JS promises);
//! when the host's are, `Memory`'s futures are `Send` too, so a memory can
//! run in a multi-threaded runtime (`tests/send_futures.rs`).

use serde::{Deserialize, Serialize};

/// Wall-clock time in milliseconds since the Unix epoch, read from the host.
///
/// A reading before 2000 ([`crate::memory::limits::MIN_CLOCK_MS`]: a clock in seconds) or
/// after 3000 fails the call with `InvalidInput`; one earlier than the
/// memory's last stamp is clamped to it and reported
/// ([`crate::memory::handle::Memory::clock_warning`]).
pub trait Clock {
    /// Now, in ms since the Unix epoch.
    fn now_ms(&self) -> i64;
}

impl<F: Fn() -> i64> Clock for F {
    fn now_ms(&self) -> i64 {
        self()
    }
}

/// Failure of a store operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A conditional write found the guard key changed: another writer got
    /// there first. The engine reloads the tail and retries.
    #[error("conflict: the guarded key changed")]
    Conflict,
    /// Any other failure, with the host's message.
    #[error("{0}")]
    Failed(String),
}

/// One write of an atomic batch: `Some(value)` puts, `None` deletes.
pub type Write = (String, Option<Vec<u8>>);

/// The most keys one [`Store::get_many`] asks for: a longer tail, or more
/// packs, are read in batches of this many.
pub const GET_MANY_MAX: usize = 64;

/// Namespaced key-value storage with one conditional atomic multi-key write.
///
/// Keys are UTF-8 strings, values are bytes (the head is JSON text, log
/// entries and segments a compact binary encoding: see `crate::store`). `write_if` must be
/// atomic: either every write of the batch lands or none does, and only when
/// the current value of `guard` equals `expected` (`None` = absent). This
/// compare-and-set on the log head is what lets two hosts share one memory.
#[allow(async_fn_in_trait)]
pub trait Store {
    /// The value at `key`, if any.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Puts one value.
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError>;
    /// Deletes one key (absent keys are fine).
    async fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// Every key starting with `prefix`, sorted.
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError>;
    /// The values at `keys`, one per key in the same order (`None` where a
    /// key is absent). A server store answers in one round trip (the engine
    /// reads a log's tail and packs this way: an open or a catch-up costs a
    /// bounded number of trips, not one per entry); the default reads the
    /// keys one by one. The engine asks for at most
    /// [`GET_MANY_MAX`] keys at a time.
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            out.push(self.get(key).await?);
        }
        Ok(out)
    }
    /// Applies all `writes` atomically if `guard` currently holds `expected`;
    /// otherwise writes nothing and returns [`StoreError::Conflict`].
    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[Write],
    ) -> Result<(), StoreError>;
}

/// Failure of a model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The host could not get an answer (network, rate limit, timeout...).
    #[error("model unavailable: {0}")]
    Unavailable(String),
    /// The answer came but does not fit the task (bad JSON, wrong shape,
    /// NaN or wrong-dimension vectors).
    #[error("bad model answer: {0}")]
    BadAnswer(String),
}

/// The typed tasks the core asks a model to do. The core owns the prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "TaskName"))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Task {
    /// Does this message start a new concept? (boundary judgment)
    Segment,
    /// Write the facts of a leaving episode.
    Note,
    /// Which remembered episodes is each new fact about?
    Trace,
    /// Is this entity name one of these known entities?
    Resolve,
    /// Does this new fact restate or contradict one already held?
    Reconcile,
    /// Split a user message into the subjects it raises.
    Split,
    /// Which recalled facts are relevant to the conversation?
    Relevance,
    /// Which recalled facts mattered to the turn?
    Distill,
}

impl Task {
    /// The task's name as hosts see it (`segment`, `note`, ...).
    pub fn name(self) -> &'static str {
        match self {
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

    /// Every task, in a fixed order.
    pub const ALL: [Task; 8] = [
        Task::Segment,
        Task::Note,
        Task::Trace,
        Task::Resolve,
        Task::Reconcile,
        Task::Split,
        Task::Relevance,
        Task::Distill,
    ];

    /// Parses a task name.
    pub fn from_name(name: &str) -> Option<Task> {
        Task::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// One model call: a system prompt, the content, and the JSON schema the
/// answer must follow. Hosts route it to an LLM (JSON mode / structured
/// outputs with `schema` where the API has it) and return the text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRequest {
    /// Which task.
    pub task: Task,
    /// Instructions for the model.
    pub system: String,
    /// The material to judge.
    pub content: String,
    /// JSON schema of the expected answer, as JSON text.
    pub schema: String,
    /// 1 for the first try; retries count up.
    pub attempt: u32,
}

/// The language model (and embedder) the host provides.
#[allow(async_fn_in_trait)]
pub trait Model {
    /// Answers one task with text (expected: JSON following `request.schema`).
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError>;
    /// One embedding per text, all of one dimension.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError>;
    /// Tokens in `text` as the host's model counts them. The default is an
    /// estimate (see [`crate::base::text::estimate_tokens`]).
    fn count_tokens(&self, text: &str) -> usize {
        crate::base::text::estimate_tokens(text)
    }
}

/// What the error of an answer cut off at the model's length limit starts
/// with (see [`is_truncated`]).
pub const TRUNCATED: &str = "truncated: ";

/// Whether `e` is a bad answer that was cut off at the length limit.
pub fn is_truncated(e: &ModelError) -> bool {
    matches!(e, ModelError::BadAnswer(m) if m.contains(TRUNCATED))
}
