//! Test doubles that hosts and tests reuse: a manual clock, an in-memory
//! store with fault injection, a scripted model with a deterministic
//! embedder, and a tiny executor.
//!
//! The scripted model is for tests and replays: the product takes a real
//! model from the host.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use crate::base::host::{Clock, Model, ModelError, Store, StoreError, Task, TaskRequest, Write};

/// Runs a future to completion on this thread. Valid for futures that are
/// ready or wake themselves (the doubles here, and synchronous hosts).
pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// A future that is pending once, then ready: lets concurrent calls interleave.
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// A clock that moves only when told. Clones share the time (`Send +
/// Sync`).
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock at `ms`.
    pub fn at(ms: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(ms)))
    }
    /// Sets the time.
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst)
    }
    /// Moves the time forward.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
    /// Moves the time forward by minutes.
    pub fn advance_minutes(&self, minutes: i64) {
        self.advance(minutes * 60_000)
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[derive(Debug, Default)]
struct StoreInner {
    data: BTreeMap<String, Vec<u8>>,
    writes: u64,
    fail_writes: Vec<u64>,
    fail_after: Option<u64>,
    fail_reads: bool,
    yields: bool,
    /// Every this many `write_if` calls, the write lands and then reports
    /// this error (a store that times out after applying a write).
    lie: Option<(u64, StoreError)>,
    lies: u64,
}

/// An in-memory [`Store`]. Clones share the data, so two memories (or two
/// handles of one memory) can use one store. Faults can be injected. It is
/// `Send + Sync`, so a memory over it runs in `tokio::spawn`.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore(Arc<Mutex<StoreInner>>);

impl MemoryStore {
    fn inner(&self) -> MutexGuard<'_, StoreInner> {
        // A panicking test cannot leave the map half-written that matters.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
    /// Makes the `n`-th write from now fail (1 = the next one). A write is
    /// one `put`, `delete` or `write_if`.
    pub fn fail_write(&self, n: u64) {
        let mut s = self.inner();
        let at = s.writes + n;
        s.fail_writes.push(at);
    }
    /// Makes every write after the next `n` fail, until [`Self::heal`].
    pub fn fail_writes_after(&self, n: u64) {
        let mut s = self.inner();
        s.fail_after = Some(s.writes + n);
    }
    /// Makes every read fail (or succeed again).
    pub fn fail_reads(&self, fail: bool) {
        self.inner().fail_reads = fail;
    }
    /// Makes every `every`-th conditional write land and then report
    /// `error` anyway (as a store whose reply is lost after it applied the
    /// write), until [`Self::heal`].
    pub fn lie_every(&self, every: u64, error: StoreError) {
        self.inner().lie = Some((every.max(1), error));
    }
    /// Writes that landed and reported an error.
    pub fn lies(&self) -> u64 {
        self.inner().lies
    }
    /// Clears every injected fault.
    pub fn heal(&self) {
        let mut s = self.inner();
        s.fail_writes.clear();
        s.fail_after = None;
        s.fail_reads = false;
        s.lie = None;
    }
    /// Makes every operation yield once before it runs, so concurrent calls
    /// interleave.
    pub fn set_yields(&self, on: bool) {
        self.inner().yields = on;
    }
    /// Writes attempted so far.
    pub fn writes(&self) -> u64 {
        self.inner().writes
    }
    /// A copy of every key and value.
    pub fn dump(&self) -> BTreeMap<String, Vec<u8>> {
        self.inner().data.clone()
    }
    /// The value at `key`, if any (without counting as a read).
    pub fn peek(&self, key: &str) -> Option<Vec<u8>> {
        self.inner().data.get(key).cloned()
    }
    /// Total bytes of every key and value.
    pub fn bytes(&self) -> usize {
        self.inner()
            .data
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum()
    }
    /// Replaces a value directly (to simulate corruption in tests).
    pub fn poke(&self, key: &str, value: Option<&[u8]>) {
        let mut s = self.inner();
        match value {
            Some(v) => s.data.insert(key.into(), v.into()),
            None => s.data.remove(key),
        };
    }

    async fn pause(&self) {
        if self.inner().yields {
            yield_now().await;
        }
    }

    fn write_allowed(&self) -> Result<(), StoreError> {
        let mut s = self.inner();
        s.writes += 1;
        let n = s.writes;
        if s.fail_writes.contains(&n) || s.fail_after.is_some_and(|a| n > a) {
            return Err(StoreError::Failed(format!("injected failure of write {n}")));
        }
        Ok(())
    }

    fn read_allowed(&self) -> Result<(), StoreError> {
        if self.inner().fail_reads {
            Err(StoreError::Failed("injected read failure".into()))
        } else {
            Ok(())
        }
    }
}

impl Store for MemoryStore {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.pause().await;
        self.read_allowed()?;
        Ok(self.inner().data.get(key).cloned())
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.pause().await;
        self.write_allowed()?;
        self.inner().data.insert(key.into(), value.into());
        Ok(())
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.pause().await;
        self.write_allowed()?;
        self.inner().data.remove(key);
        Ok(())
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.pause().await;
        self.read_allowed()?;
        let s = self.inner();
        Ok(s.data
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }
    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[Write],
    ) -> Result<(), StoreError> {
        self.pause().await;
        self.write_allowed()?;
        let mut s = self.inner();
        if s.data.get(guard).map(Vec::as_slice) != expected {
            return Err(StoreError::Conflict);
        }
        for (k, v) in writes {
            match v {
                Some(v) => s.data.insert(k.clone(), v.clone()),
                None => s.data.remove(k),
            };
        }
        if let Some((every, error)) = s.lie.clone() {
            if s.writes % every == 0 {
                s.lies += 1;
                return Err(error);
            }
        }
        Ok(())
    }
}

/// A deterministic embedder for tests: hashed words and character trigrams,
/// L2-normalised. Texts sharing words or spellings are similar.
#[derive(Debug, Clone, Copy)]
pub struct HashEmbedder {
    /// Vector dimension.
    pub dimension: usize,
}

impl Default for HashEmbedder {
    fn default() -> Self {
        HashEmbedder { dimension: 64 }
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

impl HashEmbedder {
    /// The embedding of `text`.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dimension];
        let mut add = |feature: &str, w: f32| {
            let h = fnv(feature);
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[(h % self.dimension as u64) as usize] += sign * w;
        };
        for word in crate::base::text::words(text) {
            add(&word, 1.0);
            let padded: Vec<char> = format!("#{word}#").chars().collect();
            for tri in padded.windows(3) {
                add(&tri.iter().collect::<String>(), 0.4);
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        } else {
            v[0] = 1.0;
        }
        v
    }
}

type Rule = Box<dyn Fn(&TaskRequest) -> Option<String>>;

struct Script {
    rules: Vec<(Task, Rule)>,
    queues: BTreeMap<Task, VecDeque<Result<String, ModelError>>>,
    calls: Vec<TaskRequest>,
    embed_calls: usize,
    fault_rate: f64,
    rng: u64,
    faults_seen: usize,
    yields: bool,
    embedder: HashEmbedder,
}

/// A model whose answers are chosen per task: queued answers first, then the
/// first matching rule, then a harmless default (no cut, no facts, no
/// traces, new entity, unrelated). Embeddings come from [`HashEmbedder`].
/// Clones share the script, so a test can keep a handle for inspection.
#[derive(Clone)]
pub struct ScriptedModel(Rc<RefCell<Script>>);

impl Default for ScriptedModel {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedModel {
    /// A model with no rules.
    pub fn new() -> Self {
        ScriptedModel(Rc::new(RefCell::new(Script {
            rules: Vec::new(),
            queues: BTreeMap::new(),
            calls: Vec::new(),
            embed_calls: 0,
            fault_rate: 0.0,
            rng: 0x9E37_79B9_7F4A_7C15,
            faults_seen: 0,
            yields: false,
            embedder: HashEmbedder::default(),
        })))
    }

    /// Adds a rule for `task`: the first rule returning `Some` answers.
    pub fn on(&self, task: Task, rule: impl Fn(&TaskRequest) -> Option<String> + 'static) -> &Self {
        self.0.borrow_mut().rules.push((task, Box::new(rule)));
        self
    }

    /// Adds a rule for `task` ahead of every rule already added (to override
    /// a shared rig's rule in one test).
    pub fn on_first(
        &self,
        task: Task,
        rule: impl Fn(&TaskRequest) -> Option<String> + 'static,
    ) -> &Self {
        self.0.borrow_mut().rules.insert(0, (task, Box::new(rule)));
        self
    }

    /// Replaces the embedder (for example a larger dimension).
    pub fn set_embedder(&self, embedder: HashEmbedder) {
        self.0.borrow_mut().embedder = embedder;
    }

    /// Queues an answer (or error) for the next call of `task`.
    pub fn push(&self, task: Task, answer: Result<String, ModelError>) -> &Self {
        self.0
            .borrow_mut()
            .queues
            .entry(task)
            .or_default()
            .push_back(answer);
        self
    }

    /// Makes a share `rate` of all calls (complete and embed) fail: errors,
    /// garbage text, or NaN / wrong-dimension vectors; deterministic by `seed`.
    pub fn set_faults(&self, rate: f64, seed: u64) {
        let mut s = self.0.borrow_mut();
        s.fault_rate = rate;
        s.rng = seed | 1;
    }

    /// Faults injected so far.
    pub fn faults_seen(&self) -> usize {
        self.0.borrow().faults_seen
    }

    /// Makes every call yield once first, so concurrent calls interleave.
    pub fn set_yields(&self, on: bool) {
        self.0.borrow_mut().yields = on;
    }

    /// Every task request so far.
    pub fn calls(&self) -> Vec<TaskRequest> {
        self.0.borrow().calls.clone()
    }

    /// Requests so far of one task.
    pub fn calls_of(&self, task: Task) -> Vec<TaskRequest> {
        self.0
            .borrow()
            .calls
            .iter()
            .filter(|r| r.task == task)
            .cloned()
            .collect()
    }

    /// Embed calls so far.
    pub fn embed_calls(&self) -> usize {
        self.0.borrow().embed_calls
    }

    fn fault(&self) -> Option<u64> {
        let mut s = self.0.borrow_mut();
        if s.fault_rate <= 0.0 {
            return None;
        }
        // xorshift64*
        s.rng ^= s.rng >> 12;
        s.rng ^= s.rng << 25;
        s.rng ^= s.rng >> 27;
        let r = s.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        if (r >> 11) as f64 / (1u64 << 53) as f64 <= s.fault_rate {
            s.faults_seen += 1;
            Some(r % 4)
        } else {
            None
        }
    }
}

/// Default answers: harmless, and valid for every task.
fn default_answer(req: &TaskRequest) -> String {
    match req.task {
        Task::Segment => r#"{"boundary": 0.1}"#.into(),
        Task::Note | Task::Trace => r#"{"facts": []}"#.into(),
        Task::Resolve => r#"{"same_as": null}"#.into(),
        Task::Reconcile => r#"{"judgments": []}"#.into(),
        Task::Split => {
            let msg = req.content.lines().last().unwrap_or("").trim();
            serde_json::json!({ "parts": [if msg.is_empty() { "message" } else { msg }] })
                .to_string()
        }
        Task::Relevance => {
            let n = numbered_items(&req.content);
            serde_json::json!({ "relevant": (1..=n).collect::<Vec<_>>() }).to_string()
        }
        Task::Distill => {
            let n = numbered_items(&req.content);
            serde_json::json!({ "kept": (1..=n).collect::<Vec<_>>() }).to_string()
        }
    }
}

/// Lines of `content` that start a numbered item (`3. ...`), counted.
pub fn numbered_items(content: &str) -> usize {
    content
        .lines()
        .filter(|l| {
            let d: String = l.chars().take_while(|c| c.is_ascii_digit()).collect();
            !d.is_empty() && l[d.len()..].starts_with(". ")
        })
        .count()
}

/// The new message's text in a `segment` request.
pub fn new_message(req: &TaskRequest) -> &str {
    let c = req.content.as_str();
    match c.find("\nNew message") {
        Some(i) => {
            let rest = &c[i + 1..];
            let line = rest.lines().nth(1).unwrap_or("");
            line.split_once(": ").map_or(line, |(_, t)| t)
        }
        None => c,
    }
}

impl Model for ScriptedModel {
    async fn complete(&self, req: &TaskRequest) -> Result<String, ModelError> {
        if self.0.borrow().yields {
            yield_now().await;
        }
        self.0.borrow_mut().calls.push(req.clone());
        match self.fault() {
            Some(0) => return Err(ModelError::Unavailable("injected outage".into())),
            Some(1) => return Ok("I'm not sure what you mean.".into()),
            Some(_) => return Ok(r#"{"unexpected": true}"#.into()),
            None => {}
        }
        let queued = self
            .0
            .borrow_mut()
            .queues
            .get_mut(&req.task)
            .and_then(|q| q.pop_front());
        if let Some(a) = queued {
            return a;
        }
        let s = self.0.borrow();
        for (task, rule) in &s.rules {
            if *task == req.task {
                if let Some(a) = rule(req) {
                    return Ok(a);
                }
            }
        }
        Ok(default_answer(req))
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        if self.0.borrow().yields {
            yield_now().await;
        }
        self.0.borrow_mut().embed_calls += 1;
        let e = self.0.borrow().embedder;
        let mut out: Vec<Vec<f32>> = texts.iter().map(|t| e.embed(t)).collect();
        match self.fault() {
            Some(0) => return Err(ModelError::Unavailable("injected outage".into())),
            Some(1) if !out.is_empty() => out[0][0] = f32::NAN,
            Some(_) if !out.is_empty() => out[0].push(0.0),
            _ => {}
        }
        Ok(out)
    }
}

/// One recorded model call: a completion or an embedding.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Recorded {
    /// A `complete` call and its answer (or error text).
    Complete {
        /// The task.
        task: Task,
        /// The request content.
        content: String,
        /// The answer.
        answer: Result<String, String>,
    },
    /// An `embed` call and its vectors.
    Embed {
        /// The texts.
        texts: Vec<String>,
        /// The vectors.
        vectors: Vec<Vec<f32>>,
    },
}

/// Wraps a model and records every call, to make golden transcripts that
/// other hosts replay with [`TranscriptModel`].
#[derive(Clone)]
pub struct RecordingModel<M> {
    inner: M,
    /// One slot per call, taken when the call starts (so calls that run
    /// together are recorded in the order they were made, which is the order
    /// a replay answers them in) and filled when it ends.
    log: Rc<RefCell<Vec<Option<Recorded>>>>,
}

impl<M: Model> RecordingModel<M> {
    /// Records calls to `inner`.
    pub fn new(inner: M) -> Self {
        RecordingModel {
            inner,
            log: Rc::default(),
        }
    }
    /// The calls so far, in the order they were made.
    pub fn transcript(&self) -> Vec<Recorded> {
        self.log.borrow().iter().flatten().cloned().collect()
    }
    fn slot(&self) -> usize {
        let mut log = self.log.borrow_mut();
        log.push(None);
        log.len() - 1
    }
}

impl<M: Model> Model for RecordingModel<M> {
    async fn complete(&self, req: &TaskRequest) -> Result<String, ModelError> {
        let slot = self.slot();
        let r = self.inner.complete(req).await;
        self.log.borrow_mut()[slot] = Some(Recorded::Complete {
            task: req.task,
            content: req.content.clone(),
            answer: r.clone().map_err(|e| e.to_string()),
        });
        r
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let slot = self.slot();
        let r = self.inner.embed(texts).await?;
        self.log.borrow_mut()[slot] = Some(Recorded::Embed {
            texts: texts.to_vec(),
            vectors: r.clone(),
        });
        Ok(r)
    }
    fn count_tokens(&self, text: &str) -> usize {
        self.inner.count_tokens(text)
    }
}

/// Replays a recorded transcript in order. A call that differs from the
/// recording (task, content or texts) gets an error naming the difference,
/// so a host that builds different prompts diverges visibly.
#[derive(Clone)]
pub struct TranscriptModel {
    calls: Rc<Vec<Recorded>>,
    next: Rc<Cell<usize>>,
    mismatches: Rc<RefCell<Vec<String>>>,
}

impl TranscriptModel {
    /// Replays `calls`.
    pub fn new(calls: Vec<Recorded>) -> Self {
        TranscriptModel {
            calls: Rc::new(calls),
            next: Rc::default(),
            mismatches: Rc::default(),
        }
    }
    /// Calls answered so far.
    pub fn position(&self) -> usize {
        self.next.get()
    }
    /// Every difference seen between the calls and the recording.
    pub fn mismatches(&self) -> Vec<String> {
        self.mismatches.borrow().clone()
    }
    fn take(&self) -> Option<&Recorded> {
        let i = self.next.get();
        self.next.set(i + 1);
        self.calls.get(i)
    }
    fn miss(&self, m: String) -> ModelError {
        self.mismatches.borrow_mut().push(m.clone());
        ModelError::Unavailable(m)
    }
}

impl Model for TranscriptModel {
    async fn complete(&self, req: &TaskRequest) -> Result<String, ModelError> {
        let i = self.next.get();
        match self.take() {
            Some(Recorded::Complete {
                task,
                content,
                answer,
            }) if *task == req.task && *content == req.content => {
                answer.clone().map_err(ModelError::Unavailable)
            }
            other => Err(self.miss(format!(
                "call {i}: got {} request, recording has {:?}",
                req.task.name(),
                other.map(|o| match o {
                    Recorded::Complete { task, .. } => task.name(),
                    Recorded::Embed { .. } => "embed",
                })
            ))),
        }
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let i = self.next.get();
        match self.take() {
            Some(Recorded::Embed { texts: t, vectors }) if t.as_slice() == texts => {
                Ok(vectors.clone())
            }
            _ => Err(self.miss(format!(
                "call {i}: embed of {texts:?} is not the recorded call"
            ))),
        }
    }
}
