//! Sleep: after 24 hours with no user message, the next user turn fades the
//! view to the landing before the reply, whether or not it was full.

mod common;

use common::*;
use engram::fade::FadeReason;
use engram::EpisodeState::{Forgotten, Live, Sealed};

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
    let added = fx.user(&sized(
        &format!("{NEW} Good morning! New day, new question."),
        50,
    ));
    assert!(added.slept);
    assert_eq!(added.fade, Some(1));
    // 350 tokens, under the ceiling, faded to the landing of 200: episodes 1
    // and 2 left; episode 3 (formed by this message) is the newest and stays.
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    assert_eq!(fx.view().tokens, 150);
    let f = fx.explain_episode(1).moves[1].fade.clone().unwrap();
    assert_eq!(f.reason, FadeReason::Sleep);
    assert_eq!((f.view_tokens, f.ceiling, f.landing), (350, 400, 200));
    assert_eq!(f.finished_at, Some(fx.now()));
}

#[test]
fn the_gap_is_accounted_for_before_the_reply() {
    let mut fx = yesterday();
    fx.clock.set(LAST_USER + 30 * HOUR);
    fx.user(&sized(&format!("{NEW} morning"), 50));
    // The reply is added to a view that already slept: no fade in its call.
    fx.minutes(1);
    let reply = fx.assistant(&sized("morning", 50));
    assert!(!reply.slept);
    assert_eq!(reply.fade, None);
    assert_eq!(fx.stats().fades, 1);
    // The reply's view: only the newest episode and this turn.
    let view = fx.view();
    let ids: Vec<u64> = view.items.iter().filter_map(|i| i.message).collect();
    assert_eq!(ids, vec![5, 6, 7, 8]);
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
fn a_sleep_due_while_a_fade_is_running_still_fades_to_its_own_landing() {
    // Fade 1 starts at the ceiling (landing 200) and cannot finish: the
    // model is down for every note of the next five calls.
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.user(&sized(&format!("{NEW} dinner"), 50));
    fail_next(&fx.model, engram::Task::Note, 5 * fx.config.model_attempts);
    assert_eq!(fx.assistant(&sized("dinner", 50)).fade, Some(1));
    // A larger turn (120 tokens) and a small one (40), fade 1 still running.
    fx.turn("roof", 20, 100);
    fx.turn("car", 20, 20);
    assert_eq!(fx.stats().fades, 1);
    assert_eq!(fx.states()[0], engram::EpisodeState::Leaving);

    // A day later the model is back. Fade 1 resumes and lands at 200; then
    // the sleep fades to the landing of now: 400 - 2 x 120 = 160.
    fx.clock.set(LAST_USER + 2 * DAY);
    let added = fx.user(&sized(&format!("{NEW} morning"), 20));
    assert!(added.slept);
    assert_eq!(added.fade, Some(2));
    let moves = fx.explain_episode(5).moves;
    let f = moves.last().unwrap().fade.clone().unwrap();
    assert_eq!(
        (f.id, f.reason, f.landing, f.turn_tokens),
        (2, FadeReason::Sleep, 160, 120)
    );
    // Fade 2 is a new fade: the episodes fade 1 sealed are the least
    // activated and go on to forgotten before episode 5 is sealed.
    assert_eq!(
        fx.states(),
        vec![Forgotten, Forgotten, Forgotten, Forgotten, Sealed, Live]
    );
    assert_eq!(fx.view().tokens, 60);
}

#[test]
fn a_sleep_due_while_a_fade_is_stuck_is_kept_until_it_can_run() {
    // Fade 1 cannot finish (every note fails); a user message a day later is
    // due a sleep that must not be lost: it runs once the model is back.
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.user(&sized(&format!("{NEW} dinner"), 50));
    fail_next(&fx.model, engram::Task::Note, 4 * fx.config.model_attempts);
    assert_eq!(fx.assistant(&sized("dinner", 50)).fade, Some(1));
    fx.clock.set(LAST_USER + 2 * DAY);
    let morning = fx.user(&sized(&format!("{NEW} morning"), 20));
    assert!(!morning.slept, "fade 1 is still stuck: the sleep waits");
    assert_eq!(fx.states()[0], engram::EpisodeState::Leaving);
    // The model answers again: fade 1 finishes, then the sleep fades.
    for _ in 0..4 {
        fx.minutes(1);
        let a = fx.assistant(&sized("reply", 20));
        if a.slept {
            let f = fx.stats();
            assert_eq!(f.fades, 2);
            return;
        }
    }
    panic!("the sleep never ran: {:?}", fx.states());
}
