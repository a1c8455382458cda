//! Fade: when the view reaches the ceiling, the least activated episodes
//! leave first until the view is down to the landing (about half the room,
//! lower when two turns would not fit); the newest live episode stays; at
//! the end of a turn a fade runs ahead when the next turn would not fit; an
//! episode whose note fails leaves without facts (its note retried later,
//! then given up) and never holds the fade or the other notes up.
//!
//! Sizes are exact: turns of a 50-token user message and a 50-token answer,
//! one minute apart, a ceiling of 400. The default note answer writes no
//! facts, so the view is only messages (and warnings).

mod common;

use common::*;
use engram::types::fade::FadeReason;
use engram::view::ItemKind;
use engram::Config;
use engram::EpisodeState;
use engram::Task;

use EpisodeState::{Forgotten, Leaving, Live, Sealed};

fn fx400() -> Fx {
    let fx = Fx::new(config(400));
    standard_segment(&fx.model);
    fx
}

/// [`fx400`] whose replies do not run `maintain` themselves: the test calls
/// it, to see what waits and what it does.
fn fx400_manual() -> Fx {
    let fx = Fx::new(Config {
        maintain_after_reply: false,
        ..config(400)
    });
    standard_segment(&fx.model);
    fx
}

/// Types of the events committed for `episode` (note_failed, noted, ...),
/// in log order, from the export.
fn note_events(fx: &mut Fx, episode: u64) -> Vec<String> {
    let export: serde_json::Value = serde_json::from_str(&fx.export()).unwrap();
    export["log"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|entry| entry["events"].as_array().unwrap().clone())
        .filter(|e| {
            e["episode"] == episode
                && ["note_failed", "note_deferred", "noted", "note_abandoned"]
                    .contains(&e["type"].as_str().unwrap())
        })
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
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

fn fades(fx: &mut Fx) -> Vec<engram::view::explain::Move> {
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
fn a_failed_note_seals_the_episode_without_facts_and_retries_it_later() {
    let mut fx = fx400_manual();
    three_episodes_and_a_question(&mut fx);
    fail_next(&fx.model, Task::Note, fx.config.model_attempts);
    fx.minutes(1);
    let added = fx.assistant(&sized("dinner", 50));
    assert_eq!(added.fade, Some(1));
    assert_eq!(added.maintained, None);
    // Episodes 1 and 2 left in this call, their notes asked together: 1's
    // failed every attempt, 2's was written. Neither stays leaving.
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    assert_eq!(
        fx.model.calls_of(Task::Note).len(),
        fx.config.model_attempts as usize + 1
    );
    assert_eq!(added.degraded.len(), 1);
    assert_eq!(added.degraded[0].task, Task::Note);
    let now = fx.now();
    let e1 = fx.episode(1).episode;
    assert_eq!(e1.note_failures.len(), 1);
    assert_eq!(
        (e1.deferred, e1.noted, e1.abandoned),
        (Some(now), None, None)
    );
    assert!(e1.facts.is_empty() && e1.awaits_note());
    assert_eq!(
        note_events(&mut fx, 1),
        vec!["note_failed", "note_deferred"]
    );
    let e2 = fx.episode(2).episode;
    assert_eq!((e2.deferred, e2.noted), (None, Some(now)));
    assert_eq!(note_events(&mut fx, 2), vec!["noted"]);
    // The fade landed and finished in the same call: nothing of episode 1
    // (messages or warning) is in view.
    let view = fx.view();
    assert_eq!(view.tokens, 200);
    assert!(view.items.iter().all(|i| i.episode != Some(1)));
    assert!(view.items.iter().all(|i| i.kind != ItemKind::Warning));
    let f = fx.explain_episode(1).moves[2].fade.clone().unwrap();
    assert_eq!(
        (f.id, f.finished_at, f.view_after),
        (1, Some(now), Some(200))
    );
    let pending = fx.pending();
    assert_eq!(pending.awaiting_note, vec![1]);
    assert!(pending.leaving.is_empty());

    // The next maintain retries the note; it is written now.
    fx.minutes(1);
    let m = fx.maintain();
    assert_eq!(m.noted_late, vec![1]);
    assert!(m.abandoned.is_empty() && m.deferred.is_empty());
    assert_eq!(m.fade, None);
    let e1 = fx.episode(1).episode;
    assert_eq!(e1.noted, Some(fx.now()));
    assert!(!e1.awaits_note());
    assert_eq!(
        note_events(&mut fx, 1),
        vec!["note_failed", "note_deferred", "noted"]
    );
    assert_eq!(
        fx.model.calls_of(Task::Note).len(),
        fx.config.model_attempts as usize + 2
    );
    assert!(fx.pending().awaiting_note.is_empty());
    assert_eq!(fx.stats().fades, 1);
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
}

#[test]
fn a_failed_note_is_retried_by_the_maintain_the_reply_runs() {
    // The default: the reply's call runs maintain after its own commit, and
    // that maintain already retries the note deferred by the reply's fade.
    let mut fx = fx400();
    three_episodes_and_a_question(&mut fx);
    fail_next(&fx.model, Task::Note, fx.config.model_attempts);
    fx.minutes(1);
    let writes = fx.store.writes();
    let added = fx.assistant(&sized("dinner", 50));
    assert_eq!(added.fade, Some(1));
    let m = added.maintained.expect("the reply ran maintain");
    assert_eq!(m.noted_late, vec![1]);
    assert_eq!(
        fx.store.writes() - writes,
        2,
        "the reply, then its maintain"
    );
    assert_eq!(
        note_events(&mut fx, 1),
        vec!["note_failed", "note_deferred", "noted"]
    );
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    assert_eq!(fx.view().tokens, 200);
}

#[test]
fn a_deferred_note_survives_a_reopen() {
    let mut fx = fx400_manual();
    three_episodes_and_a_question(&mut fx);
    fail_next(&fx.model, Task::Note, fx.config.model_attempts);
    fx.assistant(&sized("dinner", 50));
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    // Another handle (another host) sees the note waiting, and writes it.
    let mut other = fx.reopen();
    assert_eq!(other.pending().awaiting_note, vec![1]);
    assert!(other.episode(1).episode.awaits_note());
    assert_eq!(other.maintain().noted_late, vec![1]);
    assert!(fx.pending().awaiting_note.is_empty());
    assert!(fx.episode(1).episode.noted.is_some());
    assert_eq!(fx.stats().fades, 1);
}

#[test]
fn a_failed_note_changes_nothing_about_who_leaves() {
    // Fade 1 seals episodes 1 and 2; then a fact about episode 1 (noted by
    // the host for episode 3) makes it the most available of the old ones.
    // Fade 2 moves the same episodes whether episode 3's note fails or not:
    // an episode whose note fails leaves like any other, without facts.
    fn run(fail: bool) -> Fx {
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
        if fail {
            fail_next(&fx.model, Task::Note, fx.config.model_attempts);
        }
        let added = fx.assistant(&sized("music", 50));
        assert_eq!(added.fade, Some(2));
        fx
    }
    let mut ok = run(false);
    let mut failed = run(true);
    let states = vec![Forgotten, Forgotten, Sealed, Sealed, Live];
    assert_eq!(ok.states(), states);
    assert_eq!(failed.states(), states);
    assert_eq!(failed.view().tokens, ok.view().tokens);
    assert!(failed.view().tokens < 400);
    // Episode 3's note failed (its earlier fact stays); the reply's maintain
    // wrote it late.
    let e3 = failed.episode(3).episode;
    assert_eq!(e3.note_failures.len(), 1);
    assert!(e3.deferred.is_some() && e3.noted.is_some());
    assert_eq!(ok.episode(3).episode.deferred, None);
    for fx in [&mut ok, &mut failed] {
        let f = fx.explain_episode(4).moves[2].fade.clone().unwrap();
        assert_eq!((f.id, f.reason), (2, FadeReason::Ceiling));
        assert!(f.finished_at.is_some());
    }
}

#[test]
fn a_fade_ahead_runs_at_the_end_of_a_turn_that_leaves_no_room_for_the_next() {
    let mut fx = Fx::new(Config {
        fade_ahead: true,
        ..config(400)
    });
    standard_segment(&fx.model);
    three_episodes_and_a_question(&mut fx);
    fx.minutes(1);
    // 399 tokens: under the ceiling, but the next turn (about 100 tokens)
    // would not fit. The reply itself fades nothing; the maintain it runs
    // after its commit fades ahead, in a second commit.
    let writes = fx.store.writes();
    let added = fx.assistant(&sized("dinner", 49));
    assert_eq!(added.fade, None);
    let m = added.maintained.expect("the reply ran maintain");
    assert_eq!(m.fade, Some(1));
    assert_eq!(m.sealed, vec![1, 2]);
    assert!(m.deferred.is_empty());
    assert_eq!(fx.store.writes() - writes, 2);
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    let f = fx.explain_episode(1).moves[2].fade.clone().unwrap();
    assert_eq!(
        (
            f.id,
            f.reason,
            f.view_tokens,
            f.ceiling,
            f.landing,
            f.turn_tokens
        ),
        (1, FadeReason::Ahead, 399, 400, 200, 100)
    );
    assert_eq!((f.finished_at, f.view_after), (Some(fx.now()), Some(199)));
    assert_eq!(fx.view().tokens, 199);
    assert!(!fx.pending().fade_ahead);
    // The next user message finds room: no fade, no note on its path.
    let notes = fx.model.calls_of(Task::Note).len();
    fx.minutes(1);
    let u = fx.user(&sized(&format!("{NEW} car"), 50));
    assert_eq!(u.fade, None);
    assert_eq!(fx.model.calls_of(Task::Note).len(), notes);
    assert_eq!(fx.stats().fades, 1);

    // Without fade ahead, the same turn waits for the ceiling.
    let mut off = fx400();
    three_episodes_and_a_question(&mut off);
    off.minutes(1);
    let added = off.assistant(&sized("dinner", 49));
    assert_eq!(added.maintained.and_then(|m| m.fade), None);
    assert_eq!(off.stats().fades, 0);
    assert!(!off.pending().fade_ahead);
}

#[test]
fn a_fade_ahead_waits_for_maintain_when_the_reply_does_not_run_it() {
    let mut fx = Fx::new(Config {
        fade_ahead: true,
        maintain_after_reply: false,
        ..config(400)
    });
    standard_segment(&fx.model);
    three_episodes_and_a_question(&mut fx);
    fx.minutes(1);
    let added = fx.assistant(&sized("dinner", 49));
    assert_eq!((added.fade, added.maintained), (None, None));
    assert_eq!(fx.states(), vec![Live, Live, Live]);
    assert!(fx.pending().fade_ahead);
    let m = fx.maintain();
    assert_eq!((m.fade, m.sealed), (Some(1), vec![1, 2]));
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    assert!(!fx.pending().fade_ahead);
    let reasons: Vec<FadeReason> = run(fx.memory.fades())
        .unwrap()
        .iter()
        .map(|f| f.reason)
        .collect();
    assert_eq!(reasons, vec![FadeReason::Ahead]);
}

#[test]
fn a_note_that_always_fails_never_holds_up_the_others() {
    // Episode 1's topic is one the model never notes (prose every time);
    // every other episode gets a fact. Over many turns the view stays within
    // the ceiling, every other episode is sealed with its fact, and episode
    // 1 is deferred, retried by maintain, then given up.
    let mut fx = fx400();
    fx.model.on(Task::Note, |req| {
        req.content
            .contains("cursed")
            .then(|| "I would rather not.".to_string())
    });
    fx.model.on(Task::Note, |req| {
        let topic = req
            .content
            .lines()
            .find_map(|l| l.split_once("user: ").map(|(_, t)| t))
            .and_then(|t| t.split_whitespace().nth(1))
            .expect("a user message");
        let f = fact(
            topic,
            "was discussed on",
            "Monday",
            &format!("The {topic} was discussed on Monday."),
        );
        Some(note_json(&[f]))
    });
    let retries = fx.config.note_retries;
    let attempts = fx.config.model_attempts as usize;
    fx.turn("cursed", 50, 50);
    let mut deferred_at = None;
    for i in 0..16 {
        fx.user(&sized(&format!("{NEW} topic{i}"), 50));
        let view = fx.view();
        assert!(view.tokens <= 400, "turn {i}: view of {}", view.tokens);
        fx.minutes(1);
        fx.assistant(&sized(&format!("topic{i}"), 50));
        fx.minutes(1);
        let view = fx.view();
        assert!(view.tokens <= 400, "turn {i}: view of {}", view.tokens);
        let pending = fx.pending();
        assert!(pending.leaving.is_empty(), "turn {i}: {pending:?}");
        let e1 = fx.episode(1).episode;
        if deferred_at.is_none() && e1.deferred.is_some() {
            deferred_at = Some(i);
        }
    }
    let e1 = fx.episode(1).episode;
    assert!(deferred_at.is_some(), "episode 1 never left");
    assert!(e1.facts.is_empty() && e1.noted.is_none());
    assert!(e1.abandoned.is_some(), "{e1:?}");
    assert!(!e1.awaits_note());
    // Failed when it left, then at each of its note_retries retries.
    assert_eq!(
        e1.note_failures.len(),
        1 + retries,
        "{:?}",
        e1.note_failures
    );
    let cursed_calls = fx
        .model
        .calls_of(Task::Note)
        .iter()
        .filter(|r| r.content.starts_with("Episode 1 ("))
        .count();
    assert_eq!(cursed_calls, (1 + retries) * attempts);
    let mut events = vec!["note_failed", "note_deferred"];
    events.extend(std::iter::repeat_n("note_failed", retries));
    events.push("note_abandoned");
    assert_eq!(note_events(&mut fx, 1), events);
    // Every other episode out of view was noted when it left, with its fact.
    for e in fx.episodes().iter().skip(1) {
        let e = &e.episode;
        if e.state != Live {
            assert!(e.note_failures.is_empty() && e.deferred.is_none());
            assert_eq!((e.noted.is_some(), e.facts.len()), (true, 1), "{e:?}");
        }
    }
    assert!(fx.stats().fades >= 4);
    // Explain says why it has no facts.
    let x = fx.explain_episode(1);
    assert!(x.summary.contains("left the view"), "{}", x.summary);
    assert!(
        x.summary
            .contains(&format!("after {retries} failed retries")),
        "{}",
        x.summary
    );
    assert!(x.summary.contains("given up"), "{}", x.summary);
    assert!(x.summary.contains("recallable"), "{}", x.summary);
    assert!(
        x.summary.contains("last note attempt failed"),
        "{}",
        x.summary
    );
}

#[test]
fn a_deferred_note_is_retried_note_retries_times() {
    // note_retries: "times a deferred note is retried by maintain before it
    // is given up". With 2: the failure when it left, two failed retries,
    // then given up; nothing more is asked.
    let mut fx = Fx::new(Config {
        maintain_after_reply: false,
        note_retries: 2,
        ..config(400)
    });
    standard_segment(&fx.model);
    three_episodes_and_a_question(&mut fx);
    fail_next(&fx.model, Task::Note, 100);
    fx.minutes(1);
    fx.assistant(&sized("dinner", 50));
    assert_eq!(fx.pending().awaiting_note, vec![1, 2]);
    fx.minutes(1);
    let first = fx.maintain();
    assert!(first.abandoned.is_empty(), "given up after one retry");
    assert_eq!(fx.pending().awaiting_note, vec![1, 2]);
    fx.minutes(1);
    assert_eq!(fx.maintain().abandoned, vec![1, 2]);
    assert!(fx.pending().awaiting_note.is_empty());
    let asked = fx.model.calls_of(Task::Note).len();
    fx.minutes(1);
    fx.maintain();
    assert_eq!(fx.model.calls_of(Task::Note).len(), asked);
    assert_eq!(fx.episode(1).episode.note_failures.len(), 3);
}
