//! Traces: every new fact is judged against every episode still remembered,
//! in batched `trace` calls; every answer is stored with its time; only a yes
//! counts; traces never change. Significance is the plain sum of an
//! episode's traces, kept apart from activation.

mod common;

use common::*;
use engram::types::trace::TraceCause;
use engram::Config;
use engram::EpisodeState;
use engram::Task;

/// Five formed episodes (messages 1-10), message 11 open, trace batches of 2.
fn five_episodes(batch: usize) -> Fx {
    let mut fx = Fx::new(Config {
        trace_batch: batch,
        ..Config::default()
    });
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes", "dinner", "car"] {
        fx.turn(t, 30, 30);
    }
    fx.user(&format!("{NEW} next"));
    assert_eq!(fx.episodes().len(), 5);
    fx
}

#[test]
fn every_new_fact_is_judged_against_every_episode_in_batches() {
    let mut fx = five_episodes(2);
    traces_by(&fx.model, |fact, _, text| {
        (fact.contains("garden") && text.contains("garden"))
            || (fact.contains("bike") && text.contains("dinner"))
    });
    let facts = vec![
        fact("garden", "needs", "water", "The garden needs water."),
        fact(
            "bike",
            "needs",
            "a new chain",
            "The bike needs a new chain.",
        ),
    ];
    let before = fx.traces().len();
    let now = fx.now();
    fx.note(note_args(Some(5), facts)).unwrap();

    // ceil(5 / 2) = 3 calls, each with both facts and at most 2 episodes.
    let calls = fx.model.calls_of(Task::Trace);
    assert_eq!(calls.len(), 3);
    let mut seen = Vec::new();
    for c in &calls {
        let t = parse_trace(&c.content);
        assert_eq!(
            t.facts,
            vec!["The garden needs water.", "The bike needs a new chain."]
        );
        assert!(t.episodes.len() <= 2);
        seen.extend(t.episodes.iter().map(|(first, _)| *first));
    }
    assert_eq!(
        seen,
        vec![1, 3, 5, 7, 9],
        "every episode once, by first message"
    );

    // Every yes is stored as a trace with its time; the no answers of the
    // 2 facts x 5 episodes are counted per fact.
    let traces = fx.traces();
    let new = &traces[before..];
    assert_eq!(new.len(), 2);
    assert!(new
        .iter()
        .all(|t| t.at == now && t.strength == 1.0 && t.yes));
    let yes: Vec<(TraceCause, u64)> = new
        .iter()
        .filter(|t| t.yes)
        .map(|t| (t.cause, t.episode))
        .collect();
    assert_eq!(
        yes,
        vec![(TraceCause::Fact(1), 1), (TraceCause::Fact(2), 4)]
    );
    for fact in 1..=2u64 {
        let x = fx.explain_fact(fact);
        assert_eq!(
            x.traces.len() as u32 + x.declined,
            5,
            "fact {fact} judged once per episode"
        );
    }
}

#[test]
fn batches_follow_the_configured_size() {
    for (batch, calls) in [(1, 5), (2, 3), (4, 2), (5, 1), (16, 1)] {
        let mut fx = five_episodes(batch);
        fx.note(note_args(
            Some(5),
            vec![fact("garden", "needs", "water", "The garden needs water.")],
        ))
        .unwrap();
        assert_eq!(fx.model.calls_of(Task::Trace).len(), calls, "batch {batch}");
        // Five encoding traces; the five answers are counted, yes or no.
        let x = fx.explain_fact(1);
        assert_eq!(x.traces.len() as u32 + x.declined, 5, "batch {batch}");
    }
}

#[test]
fn only_a_yes_counts() {
    let mut fx = five_episodes(16);
    traces_by(&fx.model, |fact, first, _| {
        fact.contains("yes") && first == 1
    });
    fx.note(note_args(
        Some(5),
        vec![fact("a", "is", "no", "Fact a is a no.")],
    ))
    .unwrap();
    fx.note(note_args(
        Some(5),
        vec![fact("b", "is", "no", "Fact b is a no.")],
    ))
    .unwrap();
    fx.note(note_args(
        Some(5),
        vec![fact("c", "is", "yes", "Fact c is a yes.")],
    ))
    .unwrap();
    let judged = fx.explain_episode(1).traces;
    assert_eq!(judged.len(), 2, "encoding + the one yes");
    assert!(judged.iter().all(|t| t.yes));
    // The two no answers for episode 1 are counted on their facts.
    assert_eq!(
        (fx.explain_fact(1).declined, fx.explain_fact(2).declined),
        (5, 5)
    );
    let e = fx.episode(1);
    assert_eq!(e.significance, 2.0);
    let stamp = e.episode.formed_at;
    let expected = 1.0 / (((fx.now() - stamp) / MIN) as f64).sqrt() + 1.0;
    assert!(
        (e.activation - expected).abs() < 1e-12,
        "{} vs {expected}",
        e.activation
    );
    assert_eq!(
        e.episode.traces.len(),
        2,
        "the episode lists its yes-traces"
    );
    // Episode 2 got three no answers: counted on the facts, they count for
    // nothing toward its activation.
    assert_eq!(fx.explain_episode(2).traces.len(), 1);
    assert_eq!(fx.episode(2).significance, 1.0);
}

#[test]
fn activation_and_significance_sum_the_yes_traces() {
    let mut fx = five_episodes(16);
    traces_by(&fx.model, |_, first, _| first == 1);
    let stamp = fx.episode(1).episode.formed_at;
    let mut times = vec![stamp];
    for i in 0..4 {
        fx.minutes(15);
        times.push(fx.now());
        fx.note(note_args(
            Some(5),
            vec![fact(
                "f",
                "is",
                &format!("n{i}"),
                &format!("Fact number {i}."),
            )],
        ))
        .unwrap();
    }
    fx.minutes(60);
    let now = fx.now();
    let e = fx.episode(1);
    assert_eq!(e.significance, 5.0);
    let expected: f64 = times
        .iter()
        .map(|t| 1.0 / (((now - t) as f64 / MIN as f64).max(1.0)).sqrt())
        .sum();
    assert!((e.activation - expected).abs() < 1e-12);
    // A day later activation has dropped; significance has not.
    fx.minutes(24 * 60);
    let later = fx.episode(1);
    assert!(later.activation < e.activation / 4.0);
    assert_eq!(later.significance, 5.0);
}

#[test]
fn forgotten_episodes_are_not_judged() {
    let mut fx = Fx::new(Config {
        trace_batch: 2,
        ..config(400)
    });
    standard_segment(&fx.model);
    for i in 0..8 {
        fx.turn(&format!("t{i}"), 50, 50);
    }
    let forgotten: Vec<u64> = fx
        .episodes()
        .iter()
        .filter(|e| e.episode.state == EpisodeState::Forgotten)
        .map(|e| e.episode.first)
        .collect();
    let remembered: Vec<u64> = fx
        .episodes()
        .iter()
        .filter(|e| e.episode.state != EpisodeState::Forgotten)
        .map(|e| e.episode.first)
        .collect();
    assert!(
        !forgotten.is_empty() && remembered.len() >= 3,
        "{:?}",
        fx.states()
    );
    let calls_before = fx.model.calls_of(Task::Trace).len();
    fx.note(note_args(
        None,
        vec![fact("garden", "needs", "water", "The garden needs water.")],
    ))
    .unwrap();
    let calls = &fx.model.calls_of(Task::Trace)[calls_before..];
    assert_eq!(calls.len(), remembered.len().div_ceil(2));
    let judged: Vec<u64> = calls
        .iter()
        .flat_map(|c| parse_trace(&c.content).episodes)
        .map(|(f, _)| f)
        .collect();
    assert_eq!(judged, remembered);
}

#[test]
fn traces_are_never_changed_after_they_are_written() {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    traces_by(&fx.model, |_, first, _| first % 3 == 1);
    notes_for(
        &fx.model,
        vec![(
            "t",
            vec![fact("topic", "was", "discussed", "A topic was discussed.")],
        )],
    );
    let mut seen = Vec::new();
    for i in 0..12 {
        fx.turn(&format!("t{i}"), 50, 50);
        let traces = fx.traces();
        assert!(traces.len() >= seen.len());
        assert_eq!(traces[..seen.len()], seen[..], "after turn {i}");
        seen = traces;
    }
    assert!(seen.len() > 12);
    assert!(fx.stats().fades >= 3);
}

#[test]
fn an_episode_can_drop_out_of_mind_without_becoming_unimportant() {
    // Episode 1 mattered a lot (three facts about it), a day ago.
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    traces_by(&fx.model, |fact, _, text| {
        text.contains("garden") && fact.contains("garden")
    });
    notes_for(
        &fx.model,
        vec![(
            "garden",
            vec![fact(
                "plants",
                "need",
                "water",
                "The plants need water daily.",
            )],
        )],
    );
    fx.turn("garden", 50, 50);
    fx.user(&sized(&format!("{NEW} taxes"), 50));
    for i in 0..3 {
        let f = fact(
            "garden",
            "has",
            &format!("bed {i}"),
            &format!("The garden has raised bed {i}."),
        );
        fx.note(note_args(Some(1), vec![f])).unwrap();
    }
    assert_eq!(fx.episode(1).significance, 4.0);
    fx.minutes(24 * 60);
    fx.assistant(&sized("taxes", 50));
    for t in ["bikes", "dinner"] {
        fx.turn(t, 50, 50);
    }
    // It is now the least available (a day old) and left the view ...
    let e = fx.episode(1);
    assert_eq!(e.episode.state, EpisodeState::Sealed);
    assert!(fx.episodes().iter().all(|o| o.activation >= e.activation));
    // ... but it is as significant as ever, and its facts are in long-term
    // memory (the facts block).
    assert!(e.significance >= 4.0);
    let block = fx.view().items[0].clone();
    for f in fx.facts().iter().filter(|f| f.episode == 1) {
        assert!(block.facts.contains(&f.id), "fact {} in block", f.id);
    }
}

#[test]
fn the_notes_of_one_fade_are_judged_in_one_pooled_run() {
    // Five episodes leave together when the idle chat sleeps; each note
    // writes one fact. Pooled: ceil(5 facts / 16) x ceil(6 episodes / 2)
    // = 3 calls, each listing all five facts, instead of 3 calls per note.
    let mut fx = five_episodes(2);
    let topics = ["garden", "taxes", "bikes", "dinner", "car"];
    notes_for(
        &fx.model,
        topics
            .iter()
            .map(|t| {
                let sentence = format!("The {t} came up.");
                (*t, vec![fact(t, "came", "up", &sentence)])
            })
            .collect(),
    );
    traces_by(&fx.model, |fact, _, text| {
        fact.split(' ').nth(1).is_some_and(|t| text.contains(t))
    });
    let before = fx.model.calls_of(Task::Trace).len();
    fx.minutes(25 * 60);
    let maintained = fx.maintain();
    assert_eq!(maintained.slept.len(), 1, "{maintained:?}");
    let calls = &fx.model.calls_of(Task::Trace)[before..];
    let remembered = fx
        .episodes()
        .iter()
        .filter(|e| e.episode.state.remembered())
        .count();
    assert_eq!(remembered, 6, "five episodes and the open stretch's one");
    assert_eq!(calls.len(), 3);
    for c in calls {
        let facts = parse_trace(&c.content).facts;
        assert_eq!(facts.len(), 5, "{facts:?}");
    }
    // The answers reach each fact as if judged alone: one trace per fact,
    // on the episode that said it, stamped when the chat fell asleep.
    let facts = fx.facts();
    assert_eq!(facts.len(), 5);
    let traces = fx.traces();
    for f in &facts {
        let yes: Vec<u64> = traces
            .iter()
            .filter(|t| t.cause == TraceCause::Fact(f.id))
            .map(|t| t.episode)
            .collect();
        assert_eq!(yes, vec![f.episode], "{}", f.sentence);
    }
}
