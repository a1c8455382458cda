//! Nothing is silent: a model that fails makes every degraded step visible
//! (in the call's outcome, through `take_degraded`, counted in `stats`), and
//! with `strict` a degraded step fails the call and writes nothing.

mod common;

use common::*;
use engram::testing::block_on;
use engram::Error;
use engram::NewMessage;
use engram::Task;

/// A memory whose model is down: every `complete` and `embed` fails.
fn down(strict: bool) -> Fx {
    let mut cfg = config(2_000);
    cfg.strict = strict;
    let fx = Fx::new(cfg);
    fx.model.set_faults(1.0, 7);
    fx
}

#[test]
fn a_down_model_is_reported_on_the_first_judgment() {
    let mut fx = down(false);
    fx.user("hello");
    let added = fx.user("a second question about the garden");
    // The second user message needs a boundary judgment: it failed, and the
    // call says so instead of resolving quietly.
    assert_eq!(added.degraded.len(), 1, "{:?}", added.degraded);
    let d = &added.degraded[0];
    assert_eq!(d.task, Task::Segment);
    assert_eq!(d.attempts, 3);
    assert!(d.effect.contains("no judged cut"), "{}", d.effect);
    // The same steps are queued for hosts that fire an event per step.
    let queued = fx.memory.take_degraded();
    assert_eq!(queued, added.degraded);
    assert!(fx.memory.take_degraded().is_empty(), "taking empties it");
    // And counted.
    let stats = fx.stats();
    assert_eq!(stats.model.calls.get("segment"), Some(&3));
    assert_eq!(stats.model.failed.get("segment"), Some(&3));
    assert_eq!(stats.model.consecutive_failures, 3);
    assert_eq!(stats.model.degraded_steps, 1);
    let last = stats.model.last_error.expect("a last error");
    assert_eq!((last.task.as_str(), last.at), ("segment", fx.now()));
}

#[test]
fn a_model_that_answers_again_resets_the_consecutive_failures() {
    let mut fx = down(false);
    fx.user("hello");
    fx.user("a second question");
    assert_eq!(fx.stats().model.consecutive_failures, 3);
    fx.model.set_faults(0.0, 7);
    standard_segment(&fx.model);
    let added = fx.user("a third question");
    assert!(added.degraded.is_empty());
    let stats = fx.stats();
    assert_eq!(stats.model.consecutive_failures, 0);
    assert_eq!(stats.model.failed.get("segment"), Some(&3));
    assert!(stats.model.last_error.is_some(), "the last error is kept");
}

#[test]
fn strict_fails_the_call_and_writes_nothing() {
    let mut fx = down(true);
    fx.user("hello");
    let before = fx.store.dump();
    let err = fx
        .try_add(NewMessage::user("a second question about the garden"))
        .expect_err("strict");
    assert!(
        matches!(&err, Error::Model(m) if m.contains("segment")),
        "{err}"
    );
    assert_eq!(fx.store.dump(), before, "nothing written");
    assert_eq!(fx.messages().len(), 1);
    // The failure is still reported and counted.
    assert_eq!(fx.memory.take_degraded().len(), 1);
    assert_eq!(fx.stats().model.degraded_steps, 1);
}

#[test]
fn a_reply_is_committed_before_its_maintain_and_survives_a_failing_one() {
    let mut cfg = config(2_000);
    cfg.fade_ahead = true;
    let mut fx = Fx::new(cfg);
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 300, 200);
    }
    // 1,800 tokens in view; the reply brings 1,900: under the ceiling, but
    // the next 500-token turn would not fit.
    fx.user(&sized(&format!("{NEW} car"), 300));
    // The reply's own commit is the next write; its maintain's is the one
    // after, and that one fails.
    fx.store.fail_write(2);
    let added = fx.assistant(&sized("car", 100));
    assert!(added.maintained.is_none());
    let err = added.maintain_error.expect("the maintain failed");
    assert!(err.contains("store"), "{err}");
    // The reply is kept; the work waits for the next call.
    assert_eq!(fx.messages().last().unwrap().content, sized("car", 100));
    assert_eq!(fx.view().tokens, 1_900);
    assert!(fx.pending().fade_ahead);
    let m = fx.maintain();
    assert_eq!(m.fade, Some(1));
    assert!(!fx.pending().fade_ahead);
}

#[test]
fn strict_never_blocks_on_a_note_that_always_fails() {
    // One episode whose note always fails: with strict it used to fail every
    // later add once the episode had to leave (nothing written, for ever).
    let mut cfg = config(2_000);
    cfg.strict = true;
    let mut fx = Fx::new(cfg);
    standard_segment(&fx.model);
    fx.model.on_first(Task::Note, |req| {
        req.content
            .contains("STUCK")
            .then(|| "not json".to_string())
    });
    let mut adds = 0;
    let mut reported = 0;
    for i in 0..225 {
        let topic = if i == 0 {
            "STUCK".to_string()
        } else {
            format!("topic{i}")
        };
        for m in [
            NewMessage::user(sized(&format!("{NEW} {topic} question"), 60)),
            NewMessage::assistant(sized(&format!("{topic} answer"), 60)),
        ] {
            let added = fx.try_add(m).unwrap_or_else(|e| panic!("add {adds}: {e}"));
            reported += added
                .degraded
                .iter()
                .chain(added.maintained.iter().flat_map(|m| m.degraded.iter()))
                .filter(|d| d.task == Task::Note)
                .count();
            adds += 1;
        }
        fx.minutes(1);
    }
    assert_eq!(adds, 450);
    assert_eq!(fx.messages().len(), 450, "every add is stored");
    // The note was tried, deferred, retried and given up, as without strict.
    let why = fx.explain_episode(1);
    let text = format!("{why:?}");
    assert!(text.contains("given up"), "{text}");
    assert!(reported >= 1, "the failure is reported");
    // Its passages stay recallable.
    let hits = block_on(fx.memory.search(
        "STUCK question",
        engram::types::recall::SearchOptions::default(),
    ))
    .expect("search");
    assert!(hits.iter().any(|h| h.text.contains("STUCK")), "{hits:?}");
}
