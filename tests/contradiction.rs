//! A newer fact retires one it contradicts: the older fact is kept, marked
//! retired by the newer one at that time, and leaves the facts block.

mod common;

use common::*;
use engram::view::ItemKind;
use engram::Config;
use engram::EpisodeState;
use engram::Task;

fn moved(new: &str, held: &str) -> Option<&'static str> {
    (new.contains("Porto") && held.contains("Lisbon")).then_some("contradicts")
}

#[test]
fn a_newer_fact_retires_the_one_it_contradicts() {
    let mut fx = Fx::new(Config::default());
    standard_segment(&fx.model);
    reconcile_by(&fx.model, moved);
    fx.turn("home", 30, 30);
    fx.turn("move", 30, 30);
    fx.user(&format!("{NEW} next"));
    fx.note(note_args(
        Some(1),
        vec![fact(
            "Alice",
            "lives in",
            "Lisbon",
            "Alice lives in Lisbon.",
        )],
    ))
    .unwrap();
    fx.minutes(60);
    let out = fx
        .note(note_args(
            Some(2),
            vec![fact(
                "Alice",
                "lives in",
                "Porto",
                "Alice moved to Porto in May.",
            )],
        ))
        .unwrap();
    assert_eq!(
        (out.added.clone(), out.retired.clone(), out.merged.clone()),
        (vec![2], vec![1], vec![])
    );

    let facts = fx.facts();
    assert_eq!(facts.len(), 2, "the retired fact is kept");
    let old = &facts[0];
    assert!(!old.is_live());
    let r = old.retired.as_ref().unwrap();
    assert_eq!((r.by, r.at), (2, fx.now()));
    assert_eq!(old.sentence, "Alice lives in Lisbon.");
    assert!(facts[1].is_live());

    let x = fx.explain_fact(1);
    assert_eq!(x.retired_by, Some((2, fx.now())));
    assert!(!x.in_facts_block);
    assert!(
        x.summary.contains("retired") && x.summary.contains("Alice moved to Porto in May."),
        "{}",
        x.summary
    );
    assert_eq!(fx.explain_fact(2).retired_by, None);
}

#[test]
fn a_retired_fact_leaves_the_facts_block() {
    // Two episodes noted by fades: Lisbon first, Porto later.
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    reconcile_by(&fx.model, moved);
    notes_for(
        &fx.model,
        vec![
            (
                "lisbon",
                vec![fact(
                    "Alice",
                    "lives in",
                    "Lisbon",
                    "Alice lives in Lisbon.",
                )],
            ),
            (
                "porto",
                vec![fact("Alice", "lives in", "Porto", "Alice moved to Porto.")],
            ),
        ],
    );
    for t in ["lisbon", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.turn("dinner", 50, 50);
    let block = |fx: &mut Fx| {
        fx.view()
            .items
            .iter()
            .find(|i| i.kind == ItemKind::Facts)
            .map(|i| (i.facts.clone(), i.text.clone()))
    };
    assert_eq!(block(&mut fx).unwrap().0, vec![1]);
    for t in ["porto", "car", "music", "roof"] {
        fx.turn(t, 50, 50);
    }
    let porto = fx
        .facts()
        .iter()
        .find(|f| f.sentence == "Alice moved to Porto.")
        .map(|f| f.id)
        .unwrap();
    assert_eq!(fx.facts()[0].retired.as_ref().map(|r| r.by), Some(porto));
    let porto_episode = fx.facts()[porto as usize - 1].episode;
    assert_eq!(
        fx.episode(porto_episode).episode.state,
        EpisodeState::Sealed,
        "{:?}",
        fx.states()
    );
    let (ids, text) = block(&mut fx).unwrap();
    assert!(ids.contains(&porto) && !ids.contains(&1), "{ids:?}");
    assert!(!text.contains("Lisbon"), "{text}");
    let x = fx.explain_fact(1);
    assert!(!x.in_facts_block && x.retired_by.is_some());
}

#[test]
fn a_retired_fact_is_not_offered_for_reconciling_again() {
    let mut fx = Fx::new(Config::default());
    standard_segment(&fx.model);
    reconcile_by(&fx.model, moved);
    fx.turn("home", 30, 30);
    fx.user(&format!("{NEW} next"));
    fx.note(note_args(
        Some(1),
        vec![fact(
            "Alice",
            "lives in",
            "Lisbon",
            "Alice lives in Lisbon.",
        )],
    ))
    .unwrap();
    fx.note(note_args(
        Some(1),
        vec![fact("Alice", "lives in", "Porto", "Alice moved to Porto.")],
    ))
    .unwrap();
    fx.note(note_args(
        Some(1),
        vec![fact(
            "Alice",
            "likes",
            "Porto wine",
            "Alice likes Porto wine.",
        )],
    ))
    .unwrap();
    let asks = fx.model.calls_of(Task::Reconcile);
    let (_, held) = parse_reconcile(&asks.last().unwrap().content);
    assert_eq!(held, vec!["Alice moved to Porto.".to_string()]);
}

#[test]
fn an_older_fact_noted_later_does_not_retire_a_newer_one() {
    // Fades seal by activation, not age, and a host may note any episode:
    // the Porto episode (said later) can be noted before the Lisbon one.
    let mut fx = Fx::new(Config::default());
    standard_segment(&fx.model);
    reconcile_by(&fx.model, |new, held| {
        let pair = |a: &str, b: &str| new.contains(a) && held.contains(b);
        (pair("Porto", "Lisbon") || pair("Lisbon", "Porto")).then_some("contradicts")
    });
    fx.turn("home", 30, 30);
    fx.minutes(60);
    fx.turn("move", 30, 30);
    fx.user(&format!("{NEW} next"));
    fx.note(note_args(
        Some(2),
        vec![fact("Alice", "lives in", "Porto", "Alice moved to Porto.")],
    ))
    .unwrap();
    fx.minutes(5);
    let out = fx
        .note(note_args(
            Some(1),
            vec![fact(
                "Alice",
                "lives in",
                "Lisbon",
                "Alice lives in Lisbon.",
            )],
        ))
        .unwrap();
    assert_eq!(out.added, vec![2]);
    assert!(
        out.retired.is_empty(),
        "the held, newer fact stays: {out:?}"
    );
    let facts = fx.facts();
    assert!(facts[0].is_live(), "Porto (said later) still holds");
    // The older statement is kept, retired by the newer one.
    let r = facts[1].retired.as_ref().expect("Lisbon is retired");
    assert_eq!((r.by, r.at), (1, fx.now()));
    assert!(facts[1].said_at < facts[0].said_at);
}
