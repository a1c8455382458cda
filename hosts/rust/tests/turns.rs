//! The turn's calls through the component: `maintain` and `pending`, and a
//! model that fails, reported as degraded steps (or, with `strict`, as a
//! `model` error that writes nothing).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{component, text};
use engram_wasmtime_host::{
    task_name, Degraded, Engram, Host, HostModel, MemoryError, Role, Task, TaskRequest,
};

const T0: i64 = 1_772_445_600_000;

/// A model whose `complete` always fails (embeddings work); counts its calls.
struct Down(Arc<AtomicUsize>);

impl HostModel for Down {
    fn complete(&self, _: TaskRequest) -> Result<String, String> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err("the LLM is down".into())
    }

    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
    }
}

/// A model that judges every message a continuation; other tasks fail.
struct Calm;

impl HostModel for Calm {
    fn complete(&self, request: TaskRequest) -> Result<String, String> {
        match request.task {
            Task::Segment => Ok(r#"{"boundary": 0.1}"#.into()),
            t => Err(format!("no {} here", task_name(t))),
        }
    }

    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
    }
}

fn open(model: impl HostModel + 'static, config: &str) -> Engram {
    let (engine, component) = component();
    Engram::open(engine, component, Host::new(T0, model), "turns", config).expect("opens")
}

/// Collects what the degraded callback is given.
fn collect(engram: &mut Engram) -> Arc<Mutex<Vec<Degraded>>> {
    let fired: Arc<Mutex<Vec<Degraded>>> = Arc::default();
    let sink = fired.clone();
    engram.on_degraded(move |d| sink.lock().unwrap().push(d.clone()));
    fired
}

/// A user message, a reply, and the next user message (whose round judges
/// the reply and itself).
fn converse(engram: &mut Engram) -> Vec<Result<(), String>> {
    [
        (Role::User, "Plan the Lisbon offsite."),
        (Role::Assistant, "When do you leave?"),
        (Role::User, "On March 2."),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (role, content))| {
        engram.host().now_ms = T0 + 60_000 * i as i64;
        engram
            .add_message(&text(role, content))
            .map(|_| ())
            .map_err(|e| match e.downcast_ref::<MemoryError>() {
                Some(MemoryError::Model(m)) => format!("model: {m}"),
                _ => format!("other: {e:#}"),
            })
    })
    .collect()
}

#[test]
fn a_failing_model_degrades_steps_and_the_callback_hears_each() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut engram = open(Down(calls.clone()), "{}");
    let fired = collect(&mut engram);
    assert_eq!(converse(&mut engram), vec![Ok(()), Ok(()), Ok(())]);
    let fired = fired.lock().unwrap().clone();
    assert!(!fired.is_empty(), "the failures were reported");
    assert!(
        fired.iter().all(|d| d.task == Task::Segment
            && d.error.contains("the LLM is down")
            && d.attempts == 3
            && !d.effect.is_empty()),
        "{fired:?}"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3 * fired.len(),
        "3 attempts per step"
    );
    let messages = engram.messages().expect("messages");
    assert_eq!(messages.len(), 3, "the conversation went on");
    assert!(messages.iter().all(|m| m.judged && m.boundary.is_none()));

    let health = engram.stats().expect("stats").model;
    assert_eq!(health.degraded_steps, fired.len() as u64);
    let failed: Vec<(String, u64)> = health.failed.clone();
    assert_eq!(
        failed,
        vec![("segment".to_string(), calls.load(Ordering::SeqCst) as u64)]
    );
    assert_eq!(
        health.consecutive_failures,
        calls.load(Ordering::SeqCst) as u64
    );
    let last = health.last_error.expect("a last error");
    assert_eq!((last.task.as_str(), last.at), ("segment", T0 + 120_000));
    assert!(last.error.contains("the LLM is down"), "{}", last.error);
    assert!(
        engram.take_degraded().expect("take").is_empty(),
        "the callback took every step"
    );
}

#[test]
fn without_a_callback_degraded_steps_wait_for_take_degraded() {
    let mut engram = open(Down(Arc::default()), "{}");
    converse(&mut engram);
    let taken = engram.take_degraded().expect("take");
    assert!(!taken.is_empty());
    assert!(
        engram.take_degraded().expect("take").is_empty(),
        "taking empties"
    );
}

#[test]
fn strict_turns_a_failing_model_into_a_model_error_that_writes_nothing() {
    let mut engram = open(Down(Arc::default()), r#"{"strict": true}"#);
    let fired = collect(&mut engram);
    let outcomes = converse(&mut engram);
    assert_eq!(
        outcomes[..2],
        [Ok(()), Ok(())],
        "no model call before the third"
    );
    match &outcomes[2] {
        Err(m) => assert!(m.starts_with("model: segment failed"), "{m}"),
        Ok(()) => panic!("strict: the third message must fail"),
    }
    let messages = engram.messages().expect("messages");
    assert_eq!(
        messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>(),
        ["Plan the Lisbon offsite.", "When do you leave?"],
        "the failed call wrote nothing"
    );
    assert!(!messages[1].judged, "the reply's judgment still waits");
    let fired = fired.lock().unwrap();
    assert!(
        !fired.is_empty(),
        "the failed call's steps still reach the callback"
    );
    assert!(fired.iter().all(|d| d.task == Task::Segment));
}

#[test]
fn maintain_judges_what_waits_and_pending_says_so() {
    let mut engram = open(Calm, r#"{"maintain_after_reply": false}"#);
    let fired = collect(&mut engram);
    engram
        .add_message(&text(Role::User, "Plan the Lisbon offsite."))
        .expect("user");
    let added = engram
        .add_message(&text(Role::Assistant, "When do you leave?"))
        .expect("reply");
    assert!(added.maintained.is_none() && added.maintain_error.is_none());
    let pending = engram.pending().expect("pending");
    assert_eq!(
        pending.unjudged,
        vec![2],
        "the reply waits for its judgment"
    );
    assert!(pending.undistilled.is_empty() && pending.leaving.is_empty());
    assert!(pending.awaiting_note.is_empty() && !pending.fade_ahead);
    assert_eq!(engram.stats().expect("stats").pending.unjudged, vec![2]);
    assert!(!engram.messages().expect("messages")[1].judged);

    let maintained = engram.maintain().expect("maintain");
    assert_eq!(maintained.judged, vec![2]);
    assert!(maintained.degraded.is_empty() && maintained.fade.is_none());
    let after = engram.pending().expect("pending");
    assert!(after.unjudged.is_empty(), "nothing waits any more");
    let reply = &engram.messages().expect("messages")[1];
    assert!(reply.judged);
    assert_eq!(reply.boundary, Some(0.1));
    assert!(fired.lock().unwrap().is_empty(), "nothing degraded");

    // A second maintain has nothing left to do.
    let again = engram.maintain().expect("maintain");
    assert!(again.judged.is_empty() && again.formed.is_empty() && again.distilled.is_empty());
}

#[test]
fn a_reply_that_ends_the_turn_runs_maintain_by_itself() {
    let mut engram = open(Calm, "{}");
    engram
        .add_message(&text(Role::User, "Plan the Lisbon offsite."))
        .expect("user");
    let added = engram
        .add_message(&text(Role::Assistant, "When do you leave?"))
        .expect("reply");
    assert_eq!(added.maintain_error, None);
    let maintained = added.maintained.expect("maintain ran after the reply");
    assert!(
        maintained.judged.is_empty(),
        "the reply's judgment waits for the next user message's round"
    );
    assert_eq!(engram.pending().expect("pending").unjudged, vec![2]);
    assert!(
        engram.end_turn().expect("end turn").is_none(),
        "no recall block to distill"
    );
    assert!(
        engram.pending().expect("pending").unjudged.is_empty(),
        "end_turn judged it"
    );
}
