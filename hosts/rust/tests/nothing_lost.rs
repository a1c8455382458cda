//! Nothing lost, nothing forged, through the component: an add whose commit
//! landed but whose answer was lost is retried with the same client id and
//! stored once; a hung model or store fails (or degrades) its call after the
//! host's deadline, and the next call goes on; a call past the host's cap
//! on the component's linear memory fails saying it ran out of memory,
//! writes nothing, and the memory opens again with every message.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::{component, text, with_id};
use engram_wasmtime_host::{
    Deadlines, Engram, Host, HostModel, HostStore, MemStore, MemoryError, ModelChoice, Role,
    StoreError, Task, TaskRequest,
};

const T0: i64 = 1_772_445_600_000;

/// A short deadline for the tests of hung callbacks.
const SHORT: Duration = Duration::from_millis(200);

/// Judges every message a continuation; other tasks get an empty answer.
struct Calm;

impl HostModel for Calm {
    fn complete(&self, request: TaskRequest) -> Result<String, String> {
        Ok(match request.task {
            Task::Segment => r#"{"boundary": 0.1}"#.into(),
            _ => "{}".into(),
        })
    }

    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
    }
}

/// A gate callbacks wait at while it is shut (at most 30 s, so a forgotten
/// gate cannot hang the test binary).
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn wait(&self) {
        let (open, cv) = &*self.0;
        let guard = open.lock().unwrap();
        let _ = cv
            .wait_timeout_while(guard, Duration::from_secs(30), |open| !*open)
            .unwrap();
    }

    fn open(&self) {
        let (open, cv) = &*self.0;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
}

/// A store whose next `write_if` (once armed) misbehaves: it applies the
/// writes and then reports a failure (the answer was lost; with `then_down`
/// the next read fails too, so the engine cannot see that its write
/// landed), or it hangs at the gate and then fails without writing.
#[derive(Clone, Default)]
struct Faulty {
    inner: MemStore,
    lose_answer: Arc<AtomicBool>,
    then_down: Arc<AtomicBool>,
    down: Arc<AtomicBool>,
    hang: Arc<AtomicBool>,
    gate: Gate,
    commits: Arc<AtomicUsize>,
}

impl HostStore for Faulty {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        if self.down.swap(false, Ordering::SeqCst) {
            return Err(StoreError::Failed("the store is down".into()));
        }
        self.inner.get(key)
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.inner.put(key, value)
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.inner.delete(key)
    }

    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.inner.list_prefix(prefix)
    }

    fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[(String, Option<Vec<u8>>)],
    ) -> Result<(), StoreError> {
        if self.hang.swap(false, Ordering::SeqCst) {
            self.gate.wait();
            return Err(StoreError::Failed("released after the deadline".into()));
        }
        self.inner.write_if(guard, expected, writes)?;
        self.commits.fetch_add(1, Ordering::SeqCst);
        if self.lose_answer.swap(false, Ordering::SeqCst) {
            if self.then_down.swap(false, Ordering::SeqCst) {
                self.down.store(true, Ordering::SeqCst);
            }
            return Err(StoreError::Failed(
                "connection reset after the commit".into(),
            ));
        }
        Ok(())
    }
}

fn open(host: Host, config: &str) -> Engram {
    let (engine, component) = component();
    Engram::open(engine, component, host, "lost", config).expect("opens")
}

fn kind(e: &wasmtime::Error) -> String {
    match e.downcast_ref::<MemoryError>() {
        Some(MemoryError::Store(m)) => format!("store: {m}"),
        Some(MemoryError::Model(m)) => format!("model: {m}"),
        other => format!("other: {other:?} {e:#}"),
    }
}

#[test]
fn an_add_whose_answer_was_lost_is_retried_with_its_client_id_and_stored_once() {
    let store = Faulty::default();
    let mut engram = open(Host::with_store(T0, store.clone(), Calm), "{}");
    let first = engram
        .add_message(&with_id(Role::User, "Plan the Lisbon offsite.", "m-1"))
        .expect("first");
    assert!(!first.duplicate);

    // The commit lands, then the store reports a failure and is down for the
    // read that would have shown the engine its write: the call fails.
    store.lose_answer.store(true, Ordering::SeqCst);
    store.then_down.store(true, Ordering::SeqCst);
    let reply = with_id(Role::Assistant, "When do you leave?", "m-2");
    let lost = engram.add_message(&reply).expect_err("the answer was lost");
    assert!(kind(&lost).starts_with("store: "), "{}", kind(&lost));
    let commits = store.commits.load(Ordering::SeqCst);
    assert_eq!(commits, 2, "the lost commit landed");

    // The host retries the same message with the same client id.
    let retried = engram.add_message(&reply).expect("the retry");
    assert!(retried.duplicate, "the retry says duplicate");
    assert_eq!(retried.message, 2, "the first add's id");
    assert_eq!(
        store.commits.load(Ordering::SeqCst),
        commits,
        "the retry wrote nothing"
    );
    let messages = engram.messages().expect("messages");
    assert_eq!(
        messages
            .iter()
            .map(|m| (m.content.as_str(), m.client_id.as_deref()))
            .collect::<Vec<_>>(),
        [
            ("Plan the Lisbon offsite.", Some("m-1")),
            ("When do you leave?", Some("m-2")),
        ],
        "stored once"
    );

    // When the store is up to show it, the engine sees that a write which
    // reported a failure landed, and the call succeeds; a host that retries
    // anyway gets a duplicate. A new id is a new message.
    store.lose_answer.store(true, Ordering::SeqCst);
    let third = with_id(Role::User, "On March 2.", "m-3");
    let added = engram
        .add_message(&third)
        .expect("the engine read its write back");
    assert!(!added.duplicate && added.message == 3);
    let again = engram.add_message(&third).expect("again");
    assert!(again.duplicate && again.message == 3);
    let first_again = engram
        .add_message(&with_id(Role::User, "Plan the Lisbon offsite.", "m-1"))
        .expect("again");
    assert!(first_again.duplicate && first_again.message == 1);
    assert_eq!(engram.messages().expect("messages").len(), 3);
}

/// A model whose calls wait at the gate while it is shut; counts them.
struct Hung {
    gate: Gate,
    calls: Arc<AtomicUsize>,
}

impl HostModel for Hung {
    fn complete(&self, request: TaskRequest) -> Result<String, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.gate.wait();
        Calm.complete(request)
    }

    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        Calm.embed(texts)
    }
}

fn hung_model(config: &str) -> (Engram, Gate, Arc<AtomicUsize>) {
    let gate = Gate::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let model = Hung {
        gate: gate.clone(),
        calls: calls.clone(),
    };
    let host = Host::new(T0, model).deadlines(Deadlines {
        model: Some(SHORT),
        store: Some(SHORT),
    });
    (open(host, config), gate, calls)
}

#[test]
fn a_hung_model_degrades_its_steps_after_the_deadline_and_the_next_call_goes_on() {
    let (mut engram, gate, calls) = hung_model("{}");
    engram
        .add_message(&text(Role::User, "Plan the Lisbon offsite."))
        .expect("no model call yet");
    engram
        .add_message(&text(Role::Assistant, "When do you leave?"))
        .expect("a reply makes no model call");
    let started = Instant::now();
    let added = engram
        .add_message(&text(Role::User, "On March 2."))
        .expect("the steps degrade: the call succeeds");
    let took = started.elapsed();
    assert_eq!(added.degraded.len(), 2, "{:?}", added.degraded);
    assert!(
        added
            .degraded
            .iter()
            .all(|d| d.task == Task::Segment && d.error.contains("timed out")),
        "{:?}",
        added.degraded
    );
    let attempts = calls.load(Ordering::SeqCst);
    assert_eq!(attempts, 6, "three attempts per step, each abandoned");
    assert!(
        took >= SHORT * 6 && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert_eq!(engram.messages().expect("messages").len(), 3);

    // The model answers again: the next call goes on as usual (the late
    // answers of the abandoned calls are ignored).
    gate.open();
    let next = engram
        .add_message(&text(Role::User, "And back on March 5."))
        .expect("next");
    assert!(next.degraded.is_empty(), "{:?}", next.degraded);
    let messages = engram.messages().expect("messages");
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[3].boundary, Some(0.1), "judged by the model");
}

#[test]
fn a_hung_model_with_strict_fails_the_call_with_a_model_error_and_writes_nothing() {
    let (mut engram, gate, _) = hung_model(r#"{"strict": true}"#);
    engram
        .add_message(&text(Role::User, "Plan the Lisbon offsite."))
        .expect("user");
    engram
        .add_message(&text(Role::Assistant, "When do you leave?"))
        .expect("reply");
    let err = engram
        .add_message(&text(Role::User, "On March 2."))
        .expect_err("strict");
    assert!(
        kind(&err).starts_with("model: ") && kind(&err).contains("timed out"),
        "{}",
        kind(&err)
    );
    assert_eq!(
        engram.messages().expect("messages").len(),
        2,
        "nothing written"
    );
    gate.open();
    engram
        .add_message(&text(Role::User, "On March 2."))
        .expect("the next call goes on");
    assert_eq!(engram.messages().expect("messages").len(), 3);
}

#[test]
fn a_hung_store_fails_the_call_after_the_deadline_and_the_next_call_goes_on() {
    let store = Faulty::default();
    let host = Host::with_store(T0, store.clone(), Calm).deadlines(Deadlines {
        model: Some(SHORT),
        store: Some(SHORT),
    });
    let mut engram = open(host, "{}");
    engram
        .add_message(&text(Role::User, "Plan the Lisbon offsite."))
        .expect("first");
    let before = store.inner.snapshot();

    store.hang.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let err = engram
        .add_message(&text(Role::Assistant, "When do you leave?"))
        .expect_err("the commit hung");
    let took = started.elapsed();
    assert!(
        kind(&err).starts_with("store: ") && kind(&err).contains("timed out"),
        "{}",
        kind(&err)
    );
    assert!(took >= SHORT && took < Duration::from_secs(10), "{took:?}");
    assert_eq!(store.inner.snapshot(), before, "nothing written");

    // The next call runs on a fresh worker while the hung one still waits.
    let added = engram
        .add_message(&text(Role::Assistant, "When do you leave?"))
        .expect("the next call goes on");
    assert_eq!(added.message, 2);
    assert_eq!(engram.messages().expect("messages").len(), 2);
    // The hung call's late answer changes nothing.
    store.gate.open();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(engram.messages().expect("messages").len(), 2);
}

/// A callback that panics is a failed call, not a crash of the host.
struct Panics;

impl HostModel for Panics {
    fn complete(&self, _: TaskRequest) -> Result<String, String> {
        panic!("the client library panicked")
    }

    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        Calm.embed(texts)
    }
}

#[test]
fn a_panicking_model_is_a_failed_model_call() {
    let mut engram = open(Host::new(T0, Panics), "{}");
    for (role, content) in [
        (Role::User, "Plan the Lisbon offsite."),
        (Role::Assistant, "When do you leave?"),
    ] {
        engram
            .add_message(&text(role, content))
            .expect("no model call");
    }
    let added = engram
        .add_message(&text(Role::User, "On March 2."))
        .expect("degraded");
    assert!(
        added
            .degraded
            .iter()
            .all(|d| d.error.contains("panicked: the client library panicked")),
        "{:?}",
        added.degraded
    );
    assert_eq!(added.degraded.len(), 2);
}

#[test]
fn a_call_past_the_memory_limit_fails_saying_so_and_loses_nothing() {
    let (engine, component) = component();
    let store = MemStore::new();
    let offline = |store: &MemStore| Host::with_choice(T0, store.clone(), ModelChoice::Offline);
    let mut memory = Engram::open(engine, component, offline(&store), "cap", "{}").expect("opens");
    memory
        .add_message(&text(Role::User, "Let's plan the Lisbon offsite."))
        .expect("add");
    let peak = memory.linear_memory_peak();
    assert!(
        peak >= 1 << 16,
        "the peak counts the memory's pages: {peak}"
    );
    memory.close().expect("close");
    let before = store.snapshot();

    // Room for the open and a short message, not for 32 MB of text.
    let limit = peak + (8 << 20);
    let host = offline(&store).memory_limit(limit);
    let mut capped =
        Engram::open(engine, component, host, "cap", "{}").expect("opens under the cap");
    let err = capped
        .add_message(&text(Role::User, &"a long paste ".repeat(32 << 20 >> 4)))
        .expect_err("32 MB of text does not fit");
    let why = format!("{err:#}");
    assert!(why.contains("ran out of memory"), "{why}");
    assert!(why.contains(&format!("limit of {limit}")), "{why}");
    assert!(capped.linear_memory_peak() <= limit);
    assert_eq!(store.snapshot(), before, "the failed call wrote nothing");

    let mut again =
        Engram::open(engine, component, offline(&store), "cap", "{}").expect("opens again");
    let messages = again.messages().expect("messages");
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].content, "Let's plan the Lisbon offsite.");
}
