//! Explain: why an episode is in or out of view (its traces, its activation
//! now, the fade that moved it) and why a fact is in the facts block, out of
//! it, or retired.

mod common;

use common::*;
use engram::types::fade::FadeReason;
use engram::types::trace::TraceCause;
use engram::Config;
use engram::EpisodeState;
use engram::Error;
use engram::Task;

use EpisodeState::{Leaving, Live, Sealed};

/// Ceiling 400: the Lisbon episode (1) is sealed with a fact by fade 1;
/// a fact about it was judged yes before.
fn scene() -> Fx {
    scene_with(config(400))
}

fn scene_with(config: Config) -> Fx {
    let mut fx = Fx::new(config);
    standard_segment(&fx.model);
    traces_by(&fx.model, |fact, _, text| {
        fact.contains("Lisbon") && text.contains("lisbon")
    });
    reconcile_by(&fx.model, |new, held| {
        (new.contains("Porto") && held.contains("Lisbon")).then_some("contradicts")
    });
    notes_for(
        &fx.model,
        vec![(
            "lisbon",
            vec![fact(
                "Alice",
                "lives in",
                "Lisbon",
                "Alice lives in Lisbon.",
            )],
        )],
    );
    for t in ["lisbon", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.user(&sized(&format!("{NEW} dinner"), 50));
    fx.minutes(1);
    fx.assistant(&sized("dinner", 50));
    assert_eq!(fx.states(), vec![Sealed, Sealed, Live]);
    fx
}

#[test]
fn an_episode_out_of_view_is_explained_by_its_traces_and_the_fade() {
    let mut fx = scene();
    fx.minutes(10);
    let x = fx.explain_episode(1);
    assert_eq!((x.episode, x.state, x.in_view), (1, Sealed, false));
    // Its traces: encoding, and the yes for its own fact.
    let causes: Vec<(TraceCause, bool)> = x.traces.iter().map(|t| (t.cause, t.yes)).collect();
    assert_eq!(
        causes,
        vec![(TraceCause::Encoding, true), (TraceCause::Fact(1), true)]
    );
    // Activation now, as `episodes()` reports it; significance.
    let e = fx.episode(1);
    assert_eq!((x.activation, x.significance), (e.activation, 2.0));
    // The fade that moved it, with its figures.
    let states: Vec<EpisodeState> = x.moves.iter().map(|m| m.state).collect();
    assert_eq!(states, vec![Live, Leaving, Sealed]);
    let f = x.moves[2].fade.clone().expect("moved by a fade");
    assert_eq!(
        (f.id, f.reason, f.view_tokens, f.ceiling, f.landing),
        (1, FadeReason::Ceiling, 400, 400, 200)
    );
    assert!(
        x.summary.contains("Fade 1") && x.summary.contains("sealed"),
        "{}",
        x.summary
    );
    assert!(
        x.summary
            .contains(&format!("activation {:.3}", e.activation)),
        "{}",
        x.summary
    );
}

#[test]
fn a_live_episode_is_explained_as_in_view() {
    let mut fx = scene();
    let x = fx.explain_episode(3);
    assert_eq!((x.state, x.in_view), (Live, true));
    assert_eq!(x.moves.len(), 1);
    assert!(x.summary.contains("newest live episode"), "{}", x.summary);
    fx.turn("car", 30, 30);
    let x = fx.explain_episode(3);
    assert!(
        x.summary.contains("No fade has needed its room yet"),
        "{}",
        x.summary
    );
}

#[test]
fn a_note_that_failed_as_its_episode_left_is_part_of_the_explanation() {
    // The host runs maintain itself, so the deferred note is seen waiting.
    let mut fx = scene_with(Config {
        maintain_after_reply: false,
        ..config(400)
    });
    fail_next(&fx.model, Task::Note, fx.config.model_attempts);
    // Talk until the next fade, whose first note fails: that episode leaves
    // the view without facts.
    let mut deferred = None;
    for t in ["car", "music", "roof"] {
        fx.user(&sized(&format!("{NEW} {t}"), 50));
        fx.assistant(&sized(t, 50));
        deferred = fx
            .episodes()
            .iter()
            .find(|e| e.episode.deferred.is_some())
            .map(|e| e.episode.id);
        if deferred.is_some() {
            break;
        }
    }
    let id = deferred.expect("a note failed");
    let x = fx.explain_episode(id);
    assert!(!x.in_view);
    assert_eq!(x.state, Sealed);
    assert!(
        x.summary.contains("last note attempt failed"),
        "{}",
        x.summary
    );
    assert!(x.summary.contains("scripted outage"), "{}", x.summary);
    assert!(
        x.summary.contains("left the view without facts")
            && x.summary
                .contains("retried by maintain (0 failed retries so far)"),
        "{}",
        x.summary
    );
    // The retry succeeds: the explanation says the note came later.
    fx.minutes(1);
    assert_eq!(fx.maintain().noted_late, vec![id]);
    let x = fx.explain_episode(id);
    assert!(
        x.summary.contains("the note was written later"),
        "{}",
        x.summary
    );
    assert!(!x.summary.contains("retried by maintain"), "{}", x.summary);
}

#[test]
fn a_fact_is_explained_by_where_its_episodes_are() {
    let mut fx = scene();
    let x = fx.explain_fact(1);
    assert_eq!(
        (x.sentence.as_str(), x.subject.as_str(), x.object.as_str()),
        ("Alice lives in Lisbon.", "Alice", "Lisbon")
    );
    assert!(x.in_facts_block);
    assert_eq!(x.episodes, vec![(1, Sealed)]);
    assert_eq!(x.retired_by, None);
    assert!(x.summary.contains("in the facts block"), "{}", x.summary);
    // One judgment per remembered episode at the time: the yes is a trace,
    // the two no answers are counted.
    assert_eq!((x.traces.len(), x.declined), (1, 2));
    assert!(
        x.summary.contains("3 episode(s) judged it: 1 yes, 2 no"),
        "{}",
        x.summary
    );
    assert_eq!(
        x.traces
            .iter()
            .filter(|t| t.yes)
            .map(|t| t.episode)
            .collect::<Vec<_>>(),
        vec![1]
    );

    // A fact of a live episode is not in the block: its messages are in view.
    fx.note(note_args(
        Some(3),
        vec![fact("Bob", "rides", "a bike", "Bob rides a bike.")],
    ))
    .unwrap();
    let x = fx.explain_fact(2);
    assert!(!x.in_facts_block);
    assert!(x.summary.contains("still in view"), "{}", x.summary);
}

#[test]
fn a_retired_fact_is_explained_by_the_fact_that_retired_it() {
    let mut fx = scene();
    fx.minutes(5);
    fx.note(note_args(
        Some(3),
        vec![fact("Alice", "lives in", "Porto", "Alice moved to Porto.")],
    ))
    .unwrap();
    let x = fx.explain_fact(1);
    assert!(!x.in_facts_block);
    assert_eq!(x.retired_by, Some((2, fx.now())));
    assert!(
        x.summary.contains("retired") && x.summary.contains("Alice moved to Porto."),
        "{}",
        x.summary
    );
}

#[test]
fn unknown_ids_are_invalid_input() {
    let mut fx = scene();
    assert!(matches!(
        run(fx.memory.explain_episode(99)),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        run(fx.memory.explain_episode(0)),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        run(fx.memory.explain_fact(42)),
        Err(Error::InvalidInput(_))
    ));
}
