//! Health of the host's model as this memory sees it: every failed task is
//! reported (a [`Degraded`] step in the call's outcome, a `degraded` event in
//! the bindings) and counted ([`Health`] in `stats`). Nothing is silent: a
//! wrong base URL or a model answering junk shows up on the first call.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::base::host::Task;

/// A step that went on without the model: its task failed every attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Degraded {
    /// The task that failed.
    pub task: Task,
    /// The last error.
    pub error: String,
    /// Attempts made.
    pub attempts: u32,
    /// When (host clock, ms).
    pub at: i64,
    /// What the step did instead (`no cut judged here`, `kept the block whole`, ...).
    pub effect: String,
}

impl Degraded {
    /// The error a `strict` memory fails the call with instead of going on
    /// (nothing of the call is written).
    pub fn strict_error(&self) -> crate::base::error::Error {
        crate::base::error::Error::Model(format!(
            "{} failed after {} attempts: {} (strict: nothing was written)",
            self.task.name(),
            self.attempts,
            self.error
        ))
    }
}

/// One model request (a `complete` attempt or an `embed` call) and how it went.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Attempt {
    /// The task name (`embed` for embeddings).
    pub task: &'static str,
    /// The error, when the request failed or its answer did not fit.
    pub error: Option<String>,
}

/// What one public call did with the model: its requests and degraded steps.
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub attempts: Mutex<Vec<Attempt>>,
    pub degraded: Mutex<Vec<Degraded>>,
    /// The repairs made to the answers taken ([`crate::llm::parse::Repair`] names).
    pub repairs: Mutex<Vec<&'static str>>,
}

impl Report {
    pub fn attempt(&self, task: &'static str, error: Option<String>) {
        crate::base::health::lock(&self.attempts).push(Attempt { task, error });
    }
}

/// The last failed model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "LastModelError"))]
pub struct LastError {
    /// The task (`embed` for embeddings).
    #[cfg_attr(feature = "ts", ts(type = "ModelRequestName"))]
    pub task: String,
    /// What went wrong.
    pub error: String,
    /// When (host clock, ms).
    pub at: i64,
}

/// Model requests counted since this handle opened (not stored: each handle
/// reports what it saw).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "ModelHealth"))]
pub struct Health {
    /// Requests per task (`complete` attempts, and `embed` calls).
    #[cfg_attr(feature = "ts", ts(type = "Partial<Record<ModelRequestName, number>>"))]
    pub calls: BTreeMap<String, u64>,
    /// Failed requests per task (an error, or an answer that did not fit).
    #[cfg_attr(feature = "ts", ts(type = "Partial<Record<ModelRequestName, number>>"))]
    pub failed: BTreeMap<String, u64>,
    /// Failed requests since the last one that succeeded.
    pub consecutive_failures: u64,
    /// The last failure.
    pub last_error: Option<LastError>,
    /// Steps that degraded (a task that failed every attempt).
    pub degraded_steps: u64,
    /// Answers taken after a repair, per repair: `reasoning` (a leading
    /// `<think>` block skipped), `fence` (a code fence), `prose` (text
    /// around the JSON), `one_fact_as_list` (`note`: one fact for a list),
    /// `clamped` (`segment`: a boundary outside 0..=1 read as its nearest end).
    #[serde(default)]
    #[cfg_attr(
        feature = "ts",
        ts(
            type = r#"Partial<Record<"reasoning" | "fence" | "prose" | "one_fact_as_list" | "clamped", number>>"#
        )
    )]
    pub repairs: BTreeMap<String, u64>,
    /// Answers cut off at the model's length limit (each a failed request;
    /// a batched task retries in smaller batches).
    #[serde(default)]
    pub truncated: u64,
}

impl Health {
    /// Counts what one call did.
    pub(crate) fn record(&mut self, report: &Report, now: i64) {
        for a in lock(&report.attempts).iter() {
            *self.calls.entry(a.task.to_string()).or_default() += 1;
            match &a.error {
                Some(e) => {
                    *self.failed.entry(a.task.to_string()).or_default() += 1;
                    if e.contains(crate::base::host::TRUNCATED) {
                        self.truncated += 1;
                    }
                    self.consecutive_failures += 1;
                    self.last_error = Some(LastError {
                        task: a.task.to_string(),
                        error: e.clone(),
                        at: now,
                    });
                }
                None => self.consecutive_failures = 0,
            }
        }
        self.degraded_steps += lock(&report.degraded).len() as u64;
        for r in lock(&report.repairs).iter() {
            *self.repairs.entry(r.to_string()).or_default() += 1;
        }
    }
}

/// The value behind one call's lock: the report's lists, the answer memo's
/// maps (never contended: a call runs on one task; a `Mutex` rather than a
/// `RefCell` so that a call's future is `Send` when the host's store and
/// model are). A poisoned lock still holds a valid list or cache.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
