//! Activation through the engine: Σ strength ÷ √(minutes since the trace),
//! read from `episodes()` after moving the clock. SPEC's numbers: a trace
//! counts in full at one minute, half at four, about a thirty-eighth at a day.

mod common;

use common::*;
use engram::Config;
use engram::NewMessage;

/// One episode (messages 1-2) whose encoding trace is at T0 + 1 min, the
/// clock then at T0 + 2 min with message 3 open.
fn one_episode() -> Fx {
    let mut fx = Fx::new(Config::default());
    standard_segment(&fx.model);
    fx.user(&format!(
        "{NEW} Let's plan the Lisbon trip for March, three days in town."
    ));
    fx.minutes(1);
    fx.assistant("Gladly. Flights first, then a hotel near Alfama?");
    fx.minutes(1);
    fx.user(&format!(
        "{NEW} Different thing: my tax return is due on Friday."
    ));
    assert_eq!(fx.ranges(), vec![(1, 2)]);
    fx
}

#[test]
fn a_trace_counts_in_full_at_one_minute() {
    let mut fx = one_episode();
    let stamp = fx.traces()[0].at;
    assert_eq!(stamp, T0 + MIN);
    fx.clock.set(stamp + MIN);
    assert_eq!(fx.episode(1).activation, 1.0);
    // Within its first minute it counts in full too (age floored at one minute).
    fx.clock.set(stamp + 30_000);
    assert_eq!(fx.episode(1).activation, 1.0);
}

#[test]
fn a_trace_counts_half_at_four_minutes() {
    let mut fx = one_episode();
    let stamp = fx.traces()[0].at;
    fx.clock.set(stamp + 4 * MIN);
    assert_eq!(fx.episode(1).activation, 0.5);
    fx.clock.set(stamp + 16 * MIN);
    assert_eq!(fx.episode(1).activation, 0.25);
}

#[test]
fn a_trace_counts_about_a_thirty_eighth_at_a_day() {
    let mut fx = one_episode();
    let stamp = fx.traces()[0].at;
    fx.clock.set(stamp + DAY);
    let a = fx.episode(1).activation;
    assert!((a - 1.0 / 1440f64.sqrt()).abs() < 1e-12, "activation {a}");
    assert_eq!((1.0 / a).round(), 38.0, "1/{}", 1.0 / a);
    // Significance does not fade.
    assert_eq!(fx.episode(1).significance, 1.0);
}

#[test]
fn activation_follows_wall_clock_not_message_count() {
    // Two memories with the same first episode: one talks on (forty
    // messages of one concept, no cut, no fade) while the other is silent.
    let mut talker = one_episode();
    let mut silent = one_episode();
    for i in 0..40 {
        talker.add(NewMessage::assistant(format!(
            "More about the tax return, point {i}."
        )));
    }
    for fx in [&mut talker, &mut silent] {
        fx.clock.set(T0 + MIN + 4 * MIN);
    }
    assert_eq!(talker.stats().messages, 43);
    assert_eq!(talker.episode(1).activation, 0.5);
    assert_eq!(silent.episode(1).activation, 0.5);

    // A week alone: the newest episode is a week old.
    silent.clock.set(T0 + MIN + 7 * DAY);
    let week = silent.episode(1).activation;
    assert!((week - 1.0 / 10_080f64.sqrt()).abs() < 1e-12);
}

#[test]
fn a_week_of_talk_gives_a_different_sense_of_what_is_current() {
    let mut alone = one_episode();
    let mut daily = one_episode();
    // One new concept a day for a week, in `daily` only.
    for day in 1..=7 {
        daily.clock.set(T0 + day * DAY);
        daily.user(&format!(
            "{NEW} Day {day}: a new question about the garden."
        ));
        daily.minutes(1);
        daily.assistant("Here is what to plant this week.");
    }
    let now = T0 + 7 * DAY + 10 * MIN;
    alone.clock.set(now);
    daily.clock.set(now);
    // In both, episode 1 is exactly as available: same traces, same age.
    assert_eq!(alone.episode(1).activation, daily.episode(1).activation);
    // But in the talkative memory something newer is far more available:
    // the stretch of day 6 formed when day 7 began, a day and 9 minutes ago.
    let most = |fx: &mut Fx| {
        fx.episodes()
            .iter()
            .map(|e| e.activation)
            .fold(0.0f64, f64::max)
    };
    assert_eq!(most(&mut alone), alone.episode(1).activation);
    let newest = daily.episodes().last().unwrap().clone();
    assert_eq!(newest.episode.formed_at, T0 + 6 * DAY + MIN);
    assert!((newest.activation - 1.0 / 1449f64.sqrt()).abs() < 1e-12);
    assert!((daily.episode(1).activation - 1.0 / 10_089f64.sqrt()).abs() < 1e-12);
    assert_eq!(most(&mut daily), newest.activation);
}
