//! Fade: when the view reaches the ceiling, the least activated episodes
//! leave first until the view is down to the landing (about half the room,
//! lower when two turns would not fit); the newest live episode stays; a
//! fade whose notes fail stays running and is resumed; one fade at a time.
//!
//! Sizes are exact: turns of a 50-token user message and a 50-token answer,
//! one minute apart, a ceiling of 400. The default note answer writes no
//! facts, so the view is only messages (and warnings).

mod common;

use common::*;
use engram::fade::FadeReason;
use engram::{EpisodeState, Task};

use EpisodeState::{Forgotten, Leaving, Live, Sealed};

fn fx400() -> Fx {
    let fx = Fx::new(config(400));
    standard_segment(&fx.model);
    fx
}

/// Three turns and a fourth user message: episodes 1-3 (messages 1-6),
/// message 7 open, 350 tokens in view.
fn three_episodes_and_a_question(fx: &mut Fx) {
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.user(&sized(&format!("{NEW} dinner"), 50));
    assert_eq!(fx.ranges(), vec![(1, 2), (3, 4), (5, 6)]);
    assert_eq!(fx.view().tokens, 350);
}

fn fades(fx: &mut Fx) -> Vec<engram::explain::Move> {
    fx.episodes()
        .iter()
        .flat_map(|e| fx.explain_episode(e.episode.id).moves)
        .filter(|m| m.fade.is_some())
        .collect()
}

#[test]
fn no_fade_below_the_ceiling() {
    let mut fx = fx400();
    three_episodes_and_a_question(&mut fx);
    fx.minutes(1);
    // 399 tokens: not there yet.
    let added = fx.assistant(&sized("dinner", 49));
    assert_eq!(added.fade, None);
    assert_eq!(fx.view().tokens, 399);
    assert_eq!(fx.stats().fades, 0);
    assert_eq!(fx.states(), vec![Live, Live, Live]);
}

#[test]
fn fade_starts_at_the_ceiling_and_stops_at_the_landing() {
    let mut fx = fx400();
    three_episodes_and_a_question(&mut fx);
    fx.minutes(1);
    let added = fx.assistant(&sized("dinner", 50));
    assert_eq!(added.fade, Some(1));
    // Episodes 1 and 2 left (oldest, least activated), sealed in one call.
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    let view = fx.view();
    assert_eq!(view.tokens, 200);
    let moves = fades(&mut fx);
    let f = moves[0].fade.clone().unwrap();
    assert_eq!((f.id, f.reason), (1, FadeReason::Ceiling));
    assert_eq!(
        (f.view_tokens, f.ceiling, f.landing, f.turn_tokens),
        (400, 400, 200, 100)
    );
    assert_eq!((f.finished_at, f.view_after), (Some(fx.now()), Some(200)));
    // Episode 3 is the newest live one and stays.
    assert_eq!(fx.episode(3).episode.state, Live);
    // Each left through leaving to sealed, both moves by fade 1.
    for id in [1, 2] {
        let e = fx.explain_episode(id);
        let states: Vec<_> = e
            .moves
            .iter()
            .map(|m| (m.state, m.fade.as_ref().map(|f| f.id)))
            .collect();
        assert_eq!(
            states,
            vec![(Live, None), (Leaving, Some(1)), (Sealed, Some(1))]
        );
    }
}

#[test]
fn the_least_activated_episode_leaves_first() {
    // Episodes of 100, 100, 100 and 50 tokens plus a 50-token open turn:
    // the fade must remove 200 tokens, two of episodes 1-3.
    fn run(boost_first: bool) -> Vec<EpisodeState> {
        let mut fx = fx400();
        traces_by(&fx.model, |_, first, _| first == 1);
        for t in ["garden", "taxes", "bikes"] {
            fx.turn(t, 50, 50);
        }
        fx.turn("dinner", 25, 25);
        fx.user(&sized(&format!("{NEW} car"), 25));
        if boost_first {
            // A fact about episode 1 makes it the most available.
            let f = fact(
                "garden",
                "needs",
                "water",
                "The garden needs water every evening.",
            );
            fx.note(note_args(Some(1), vec![f])).unwrap();
            assert_eq!(fx.episode(1).significance, 2.0);
        }
        fx.minutes(1);
        assert_eq!(fx.assistant(&sized("car", 25)).fade, Some(1));
        // It stopped at the landing although a live episode (not the
        // newest) could still have left.
        assert_eq!(fx.view().tokens, 200);
        fx.states()
    }
    assert_eq!(run(false), vec![Sealed, Sealed, Live, Live]);
    assert_eq!(run(true), vec![Live, Sealed, Sealed, Live]);
}

#[test]
fn the_landing_is_about_half_the_room_for_small_turns() {
    let mut fx = fx400();
    three_episodes_and_a_question(&mut fx);
    fx.assistant(&sized("dinner", 50));
    let f = fades(&mut fx)[0].fade.clone().unwrap();
    assert_eq!(f.landing, 200);
}

#[test]
fn the_landing_drops_below_half_when_two_turns_would_not_fit() {
    // Two turns of 150 tokens, then small ones: 2 x 150 = 300 would not fit
    // between a landing of 200 and the ceiling of 400, so the landing is
    // 400 - 300 = 100.
    let mut fx = fx400();
    fx.turn("garden", 50, 100);
    fx.turn("taxes", 50, 100);
    fx.turn("bikes", 15, 15);
    fx.user(&sized(&format!("{NEW} dinner"), 40));
    fx.minutes(1);
    assert_eq!(fx.view().tokens, 370);
    assert_eq!(fx.assistant(&sized("dinner", 30)).fade, Some(1));
    let f = fades(&mut fx)[0].fade.clone().unwrap();
    assert_eq!((f.turn_tokens, f.landing), (150, 100));
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    assert_eq!(fx.view().tokens, 100);
}

#[test]
fn the_landing_is_floored_so_the_newest_episode_fits() {
    // The newest episode (250 tokens) and the open turn (50) cannot leave:
    // the landing is 300, not 400 - 2 x 250.
    let mut fx = fx400();
    fx.turn("garden", 50, 50);
    fx.turn("novel", 50, 200);
    fx.user(&sized(&format!("{NEW} dinner"), 25));
    fx.minutes(1);
    assert_eq!(fx.assistant(&sized("dinner", 25)).fade, Some(1));
    let f = fades(&mut fx)[0].fade.clone().unwrap();
    assert_eq!((f.turn_tokens, f.landing), (250, 300));
    assert_eq!(fx.states(), vec![Sealed, Live]);
    assert_eq!(fx.view().tokens, 300);
}

#[test]
fn the_newest_live_episode_never_leaves() {
    // A long conversation through a small ceiling, with large turns.
    let mut fx = Fx::new(config(300));
    standard_segment(&fx.model);
    for i in 0..40 {
        let (u, a) = (20 + (i * 37) % 90, 20 + (i * 53) % 140);
        fx.turn(&format!("topic{i}"), u, a);
        let eps = fx.episodes();
        if let Some(last) = eps.last() {
            assert_eq!(last.episode.state, Live, "after turn {i}");
            assert_eq!(last.episode.history.len(), 1, "the newest never moved");
        }
    }
    assert!(fx.stats().fades >= 5);
    assert!(fx.states().contains(&Forgotten));
}

#[test]
fn sealed_episodes_leaving_are_forgotten() {
    let mut fx = fx400();
    for i in 0..8 {
        fx.turn(&format!("t{i}"), 50, 50);
    }
    // Fades have run: the oldest episodes went on from sealed to forgotten,
    // each move by a later fade than the one that sealed it.
    let e = fx.explain_episode(1);
    let moves: Vec<_> = e
        .moves
        .iter()
        .map(|m| (m.state, m.fade.as_ref().map(|f| f.id)))
        .collect();
    assert_eq!(moves.len(), 4, "{moves:?}");
    assert_eq!(moves[3].0, Forgotten);
    assert!(moves[3].1 > moves[2].1, "{moves:?}");
    for w in fx.states().windows(2) {
        assert!(
            w[0] >= w[1] || w[1] == Live,
            "older episodes are further along: {:?}",
            fx.states()
        );
    }
}

#[test]
fn a_fade_whose_notes_fail_stays_running_and_is_resumed() {
    let mut fx = fx400();
    three_episodes_and_a_question(&mut fx);
    fail_next(&fx.model, Task::Note, fx.config.model_attempts);
    fx.minutes(1);
    assert_eq!(fx.assistant(&sized("dinner", 50)).fade, Some(1));
    // Episode 1 is leaving, its messages and a warning in view; the fade did
    // not ask the model again this call.
    assert_eq!(fx.states(), vec![Leaving, Live, Live]);
    let e1 = fx.episode(1);
    assert_eq!(e1.episode.note_failures.len(), 1);
    assert_eq!(
        fx.model.calls_of(Task::Note).len(),
        fx.config.model_attempts as usize
    );
    let view = fx.view();
    assert!(view
        .items
        .iter()
        .any(|i| i.episode == Some(1) && i.message == Some(1)));
    assert_eq!(fx.stats().fades, 1);
    let running = fx.explain_episode(1).moves[1].fade.clone().unwrap();
    assert_eq!(running.finished_at, None);

    // The next call resumes fade 1 (no new fade), seals episode 1 and goes
    // on to the landing it started with (episode 4 formed, the newest).
    fx.minutes(1);
    let added = fx.user(&sized(&format!("{NEW} car"), 20));
    assert_eq!(added.fade, Some(1));
    assert_eq!(fx.stats().fades, 1);
    assert_eq!(fx.states(), vec![Sealed, Sealed, Sealed, Live]);
    let f = fx.explain_episode(2).moves[2].fade.clone().unwrap();
    assert_eq!(f.id, 1);
    assert!(f.finished_at.is_some());
    assert!(fx.view().tokens <= f.landing);
}

#[test]
fn one_fade_finishes_before_the_next_begins() {
    let mut fx = fx400();
    three_episodes_and_a_question(&mut fx);
    // The model is down for two calls' worth of notes.
    fail_next(&fx.model, Task::Note, 2 * fx.config.model_attempts);
    fx.minutes(1);
    assert_eq!(fx.assistant(&sized("dinner", 50)).fade, Some(1));
    // The view is still over the ceiling, but fade 1 is still running: the
    // next call resumes it instead of starting another.
    fx.minutes(1);
    assert!(fx.view().tokens >= 400);
    assert_eq!(fx.user(&sized(&format!("{NEW} car"), 50)).fade, Some(1));
    assert_eq!(fx.stats().fades, 1);
    assert_eq!(fx.episode(1).episode.note_failures.len(), 2);
    // The model is back: fade 1 finishes; only a later call may start fade 2.
    fx.minutes(1);
    assert_eq!(fx.assistant(&sized("car", 50)).fade, Some(1));
    assert_eq!(fx.stats().fades, 1);
    assert_eq!(fx.states()[0], Sealed);
}

#[test]
fn a_resumed_fade_survives_a_reopen() {
    let mut fx = fx400();
    three_episodes_and_a_question(&mut fx);
    fail_next(&fx.model, Task::Note, fx.config.model_attempts);
    fx.assistant(&sized("dinner", 50));
    assert_eq!(fx.states(), vec![Leaving, Live, Live]);
    // Another handle (another host) picks the running fade up.
    let mut other = fx.reopen();
    assert_eq!(other.states(), vec![Leaving, Live, Live]);
    assert_eq!(other.user(&sized(&format!("{NEW} car"), 20)).fade, Some(1));
    assert_eq!(other.states(), vec![Sealed, Sealed, Sealed, Live]);
}

#[test]
fn a_failed_note_does_not_make_a_more_activated_sealed_episode_leave_early() {
    // Fade 1 seals episodes 1 and 2; then a fact about episode 1 makes it
    // the most available of the old ones.
    let mut fx = fx400();
    traces_by(&fx.model, |_, first, _| first == 1);
    three_episodes_and_a_question(&mut fx);
    fx.minutes(1);
    fx.assistant(&sized("dinner", 50));
    fx.minutes(1);
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    let f = fact(
        "garden",
        "needs",
        "water",
        "The garden needs water every evening.",
    );
    fx.note(note_args(Some(3), vec![f])).unwrap();
    fx.turn("car", 50, 50);
    fx.user(&sized(&format!("{NEW} music"), 50));
    fx.minutes(1);
    // Fade 2 with the model down: episode 2 (sealed, least activated) is
    // forgotten, episode 3 (live) leaves and its note fails. Episode 4 would
    // be next, not the well-activated sealed episode 1: the fade waits.
    fail_next(&fx.model, Task::Note, fx.config.model_attempts);
    assert_eq!(fx.assistant(&sized("music", 50)).fade, Some(2));
    assert_eq!(fx.states(), vec![Sealed, Forgotten, Leaving, Live, Live]);
}
