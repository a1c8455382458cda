//! Encoding: when an episode forms it gets a first trace at full strength,
//! stamped with the time it happened (its last message), so whatever just
//! happened is the most available thing in the conversation.

mod common;

use common::*;
use engram::types::trace::TraceCause;
use engram::Config;

#[test]
fn an_episode_is_encoded_at_full_strength_at_its_last_message() {
    let mut fx = Fx::new(Config::default());
    standard_segment(&fx.model);
    fx.user(&format!(
        "{NEW} Can you help me plan a birthday dinner for eight?"
    ));
    fx.minutes(3);
    fx.assistant("Of course: a date, a budget and any diets to know about?");
    // The next concept comes half an hour later; the episode forms then, but
    // it happened at its last message.
    fx.minutes(30);
    let added = fx.user(&format!(
        "{NEW} Unrelated: what is a good first bike for a child?"
    ));
    assert_eq!(added.formed, vec![1]);

    let e = fx.episode(1);
    assert_eq!(e.episode.formed_at, T0 + 3 * MIN);
    let traces = fx.traces();
    assert_eq!(traces.len(), 1);
    let t = &traces[0];
    assert_eq!(
        (t.id, t.episode, t.cause, t.yes, t.strength, t.at),
        (1, 1, TraceCause::Encoding, true, 1.0, T0 + 3 * MIN)
    );
    assert_eq!(e.episode.traces, vec![1]);
    assert_eq!(e.significance, 1.0);
    // 30 minutes after its last message.
    assert!((e.activation - 1.0 / 30f64.sqrt()).abs() < 1e-12);
}

#[test]
fn every_episode_formed_is_encoded_once() {
    let mut fx = Fx::new(Config::default());
    standard_segment(&fx.model);
    for topic in ["garden", "taxes", "bikes", "dinner", "car"] {
        fx.turn(topic, 30, 30);
    }
    fx.user(&format!("{NEW} last"));
    let traces = fx.traces();
    assert_eq!(traces.len(), 5);
    for (i, e) in fx.episodes().iter().enumerate() {
        let t = &traces[i];
        assert_eq!(t.episode, e.episode.id);
        assert_eq!(t.cause, TraceCause::Encoding);
        assert_eq!(t.at, e.episode.formed_at);
        // Each turn's assistant message came one minute after its user message.
        let last = &fx.messages()[(e.episode.last - 1) as usize];
        assert_eq!(t.at, last.at);
    }
}

#[test]
fn whatever_just_happened_is_the_most_available() {
    let mut fx = Fx::new(Config::default());
    standard_segment(&fx.model);
    for (i, topic) in ["garden", "taxes", "bikes", "dinner"].iter().enumerate() {
        fx.turn(topic, 30, 30);
        fx.minutes(10 * i as i64);
    }
    let added = fx.user(&format!("{NEW} next"));
    assert_eq!(added.formed, vec![4]);
    let acts: Vec<f64> = fx.episodes().iter().map(|e| e.activation).collect();
    // Older episodes are less available, the one just formed the most.
    for w in acts.windows(2) {
        assert!(w[0] < w[1], "{acts:?}");
    }
    // Episode 4 formed from a message 31 minutes ago: 1/sqrt(31).
    assert!((acts[3] - 1.0 / 31f64.sqrt()).abs() < 1e-12, "{acts:?}");
    // And right at the moment of its last message it counts in full.
    let formed = fx.episode(4).episode.formed_at;
    fx.clock.set(formed);
    assert_eq!(fx.episode(4).activation, 1.0);
}
