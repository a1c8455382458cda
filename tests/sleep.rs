//! Sleep: after 24 hours with no user message, the next user turn fades the
//! view to the landing, whether or not it was full: who leaves is decided
//! before the reply (they stay in view, warned), and their notes are written
//! after it.

mod common;

use common::*;
use engram::types::fade::FadeReason;
use engram::view::ItemKind;
use engram::Config;
use engram::EpisodeState::{Leaving, Live, Sealed};
use engram::Task;

/// Ceiling 400; three turns of 100 tokens: episodes 1-2 and an open turn,
/// 300 tokens in view (not full). The last user message was at T0 + 4 min.
fn yesterday() -> Fx {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    assert_eq!(fx.view().tokens, 300);
    assert_eq!(fx.stats().fades, 0);
    fx
}

const LAST_USER: i64 = T0 + 4 * MIN;

#[test]
fn after_24_hours_the_next_user_turn_fades_a_view_that_was_not_full() {
    let mut fx = yesterday();
    fx.clock.set(LAST_USER + 24 * HOUR + MIN);
    let added = fx.user(&sized(&format!("{NEW} morning"), 10));
    assert!(added.slept);
    assert_eq!(added.fade, Some(1));
    // 310 tokens, under the ceiling, faded to the landing of 200: episodes 1
    // and 2 leave; episode 3 (formed by this message's round) is the newest
    // and stays. They stay in view, warned, their notes not asked yet.
    assert_eq!(added.formed, vec![3]);
    assert_eq!(fx.states(), vec![Leaving, Leaving, Live]);
    assert_eq!(fx.pending().leaving, vec![1, 2]);
    assert!(fx.model.calls_of(Task::Note).is_empty());
    let view = fx.view();
    let warned: Vec<Option<u64>> = view
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Warning)
        .map(|i| i.episode)
        .collect();
    assert_eq!(warned, vec![Some(1), Some(2)]);
    let f = fx.explain_episode(1).moves[1].fade.clone().unwrap();
    assert_eq!(f.reason, FadeReason::Sleep);
    assert_eq!(
        (f.view_tokens, f.ceiling, f.landing, f.turn_tokens),
        (310, 400, 200, 100)
    );
    assert_eq!(f.finished_at, None);

    // The reply's call writes both notes and the fade finishes at its
    // landing.
    fx.minutes(1);
    fx.assistant(&sized("ok", 5));
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    assert_eq!(fx.view().tokens, 115);
    let f = fx.explain_episode(2).moves[2].fade.clone().unwrap();
    assert_eq!(f.id, 1);
    assert_eq!((f.finished_at, f.view_after), (Some(fx.now()), Some(115)));
    assert_eq!(fx.stats().fades, 1);
}

#[test]
fn a_sleep_lets_the_episode_before_the_last_turn_leave() {
    // Two turns: episode 1, and the last turn (its reply not judged yet).
    // A day later the message's round cuts the last turn off as episode 2,
    // the newest; episode 1 is above the landing and leaves.
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    fx.turn("garden", 50, 50);
    fx.turn("taxes", 50, 50);
    fx.clock.set(T0 + 2 * DAY);
    let added = fx.user(&sized(&format!("{NEW} morning"), 50));
    assert!(added.slept);
    assert_eq!(added.formed, vec![2]);
    let f = run(fx.memory.fades()).unwrap()[0].clone();
    assert_eq!(
        (f.reason, f.view_tokens, f.landing),
        (FadeReason::Sleep, 250, 200)
    );
    assert_eq!(fx.states(), vec![Leaving, Live]);
    fx.minutes(1);
    fx.assistant(&sized("morning", 50));
    assert_eq!(fx.states(), vec![Sealed, Live]);
    assert_eq!(fx.view().tokens, 200);
}

#[test]
fn the_gap_is_accounted_for_before_the_reply() {
    let mut fx = yesterday();
    fx.clock.set(LAST_USER + 30 * HOUR);
    // Small enough that the view with both leaving episodes and their
    // warnings stays under the ceiling (else the ceiling settles them now).
    fx.user(&sized(&format!("{NEW} morning"), 10));
    // The view the reply is written from already holds the sleep: the
    // leaving episode is warned (the agent may note it with the note tool).
    let view = fx.view();
    let kinds: Vec<(ItemKind, Option<u64>)> =
        view.items.iter().map(|i| (i.kind, i.episode)).collect();
    let w = kinds
        .iter()
        .position(|k| *k == (ItemKind::Warning, Some(1)))
        .expect("a warning for episode 1");
    assert_eq!(view.items[w - 1].message, Some(2));
    assert!(
        view.items[w].text.contains("Episode 1"),
        "{}",
        view.items[w].text
    );
    // The reply reaches the ceiling: the running sleep fade goes on (no new
    // fade) and ends in the reply's call.
    fx.minutes(1);
    let reply = fx.assistant(&sized("morning", 50));
    assert!(!reply.slept);
    assert_eq!(reply.fade, Some(1));
    assert_eq!(fx.stats().fades, 1);
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    // The view after the reply: only the newest episode and this turn.
    let view = fx.view();
    let ids: Vec<u64> = view.items.iter().filter_map(|i| i.message).collect();
    assert_eq!(ids, vec![5, 6, 7, 8]);
    assert!(view.items.iter().all(|i| i.kind != ItemKind::Warning));
}

#[test]
fn no_sleep_within_24_hours() {
    let mut fx = yesterday();
    fx.clock.set(LAST_USER + 24 * HOUR - MIN);
    let added = fx.user(&sized(&format!("{NEW} still today"), 50));
    assert!(!added.slept);
    assert_eq!(added.fade, None);
    assert_eq!(fx.states(), vec![Live, Live, Live]);
    // Exactly 24 hours is not "after" 24 hours either.
    let mut fx = yesterday();
    fx.clock.set(LAST_USER + 24 * HOUR);
    assert!(!fx.user(&sized(&format!("{NEW} still today"), 50)).slept);
}

#[test]
fn the_gap_counts_from_the_last_user_message() {
    let mut fx = yesterday();
    // The assistant speaking on its own does not reset the gap ...
    fx.clock.set(LAST_USER + 20 * HOUR);
    let a = fx.assistant(&sized("A reminder: the garden needs water.", 20));
    assert!(!a.slept);
    // ... nor does it sleep: only a user turn sleeps.
    fx.clock.set(LAST_USER + 26 * HOUR);
    let a = fx.assistant(&sized("Another reminder.", 20));
    assert!(!a.slept);
    assert_eq!(fx.stats().fades, 0);
    let u = fx.user(&sized(&format!("{NEW} back"), 50));
    assert!(u.slept);
    assert_eq!(u.fade, Some(1));
}

#[test]
fn a_full_view_sleeping_fades_once() {
    // At the ceiling after the gap: one fade (the sleep), not two.
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.user(&sized(&format!("{NEW} dinner"), 50));
    fx.assistant(&sized("dinner", 49));
    assert_eq!(fx.view().tokens, 399);
    fx.clock.set(T0 + 3 * DAY);
    let added = fx.user(&sized(&format!("{NEW} car"), 50));
    assert!(added.slept);
    assert_eq!(fx.stats().fades, 1);
    let f = fx.explain_episode(1).moves[1].fade.clone().unwrap();
    assert_eq!(f.reason, FadeReason::Sleep);
    assert!(fx.view().tokens <= f.landing);
}

#[test]
fn sleep_happens_again_after_each_long_silence() {
    let mut fx = yesterday();
    for day in 1..=3 {
        fx.clock.set(LAST_USER + day * 2 * DAY);
        let u = fx.user(&sized(&format!("{NEW} day {day}"), 50));
        assert!(u.slept, "day {day}");
        fx.minutes(1);
        fx.assistant(&sized("reply", 50));
    }
    assert_eq!(fx.stats().fades, 3);
}

#[test]
fn a_sleep_due_while_a_sleep_fade_still_runs_settles_that_fade_first() {
    // The host never runs maintain: the first sleep's leaving episode waits,
    // in view, until the next call that needs it settled. (Ceiling 600, so
    // no ceiling fade settles it first.)
    let mut fx = Fx::new(Config {
        maintain_after_reply: false,
        ..config(600)
    });
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.clock.set(LAST_USER + 25 * HOUR);
    let first = fx.user(&sized(&format!("{NEW} morning"), 20));
    assert_eq!((first.slept, first.fade), (true, Some(1)));
    fx.minutes(1);
    fx.assistant(&sized("morning", 20));
    assert_eq!(fx.states(), vec![Leaving, Live, Live]);
    assert_eq!(fx.pending().leaving, vec![1]);
    assert!(fx.model.calls_of(Task::Note).is_empty());

    // Two days later another sleep is due. One fade at a time: fade 1's
    // note is written and it finishes; only then does fade 2 start, with the
    // landing of now (the view is already at it: nothing more moves).
    fx.clock.set(LAST_USER + 3 * DAY);
    let second = fx.user(&sized(&format!("{NEW} day three"), 20));
    assert_eq!((second.slept, second.fade), (true, Some(2)));
    let now = fx.now();
    assert_eq!(fx.states(), vec![Sealed, Live, Live, Live]);
    assert_eq!(fx.model.calls_of(Task::Note).len(), 1);
    let fades = run(fx.memory.fades()).unwrap();
    let figures: Vec<_> = fades
        .iter()
        .map(|f| {
            (
                f.id,
                f.reason,
                f.view_tokens,
                f.landing,
                f.finished_at,
                f.view_after,
            )
        })
        .collect();
    assert_eq!(
        figures,
        vec![
            (1, FadeReason::Sleep, 320, 300, Some(now), Some(260)),
            (2, FadeReason::Sleep, 260, 300, Some(now), Some(260)),
        ]
    );
    let moves = fx.explain_episode(1).moves;
    assert!(moves[1..].iter().all(|m| m.fade.as_ref().unwrap().id == 1));
    assert_eq!(fx.view().tokens, 260);
    assert!(fx.pending().leaving.is_empty());
}

#[test]
fn a_sleep_while_the_model_cannot_note_still_fades_and_defers_the_notes() {
    // Notes fail for the sleep's call and the retry after it; the sleep is
    // not held up: it fades at once and the notes come later.
    let mut fx = yesterday();
    fail_next(&fx.model, Task::Note, 4 * fx.config.model_attempts);
    fx.clock.set(LAST_USER + 2 * DAY);
    let morning = fx.user(&sized(&format!("{NEW} morning"), 10));
    assert_eq!((morning.slept, morning.fade), (true, Some(1)));
    assert_eq!(fx.states()[0], Leaving);
    assert!(fx.model.calls_of(Task::Note).is_empty());
    fx.minutes(1);
    // The reply reaches the ceiling: the fade settles in its call, both
    // notes fail, both episodes leave without facts, the fade finishes. The
    // maintain after it retries them, and fails again.
    let reply = fx.assistant(&sized("reply", 50));
    assert_eq!(reply.fade, Some(1));
    assert_eq!(reply.degraded.len(), 2);
    let m = reply.maintained.expect("the reply ran maintain");
    assert!(m.noted_late.is_empty() && m.abandoned.is_empty());
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    assert_eq!(fx.view().tokens, 160);
    for id in [1, 2] {
        let e = fx.episode(id).episode;
        assert_eq!(e.note_failures.len(), 2, "episode {id}");
        assert!(e.awaits_note(), "episode {id}");
    }
    let f = fx.explain_episode(1).moves[2].fade.clone().unwrap();
    assert_eq!((f.id, f.reason), (1, FadeReason::Sleep));
    assert!(f.finished_at.is_some());
    assert_eq!(fx.pending().awaiting_note, vec![1, 2]);
    // The model answers again: the next reply's maintain writes both notes.
    fx.minutes(1);
    fx.user(&sized(&format!("{NEW} later"), 20));
    fx.minutes(1);
    let m = fx.assistant(&sized("later", 20)).maintained.unwrap();
    assert_eq!(m.noted_late, vec![1, 2]);
    assert!(fx.pending().awaiting_note.is_empty());
    assert_eq!(fx.stats().fades, 1);
}
