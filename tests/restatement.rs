//! A restated fact merges with the one already held: the same triple at once,
//! a differently worded one when the `reconcile` task says it restates.

mod common;

use common::*;
use engram::types::trace::TraceCause;
use engram::Config;
use engram::Task;

/// Two formed episodes (1: messages 1-2, 2: messages 3-4), message 5 open.
fn fx() -> Fx {
    let mut fx = Fx::new(Config::default());
    standard_segment(&fx.model);
    fx.turn("home", 30, 30);
    fx.turn("move", 30, 30);
    fx.user(&format!("{NEW} next"));
    fx
}

#[test]
fn the_same_triple_merges_without_asking() {
    let mut fx = fx();
    let first = fact("Alice", "lives in", "Lisbon", "Alice lives in Lisbon.");
    fx.note(note_args(Some(1), vec![first])).unwrap();
    fx.minutes(10);
    let again = fact(
        "alice",
        "Lives in",
        "LISBON",
        "Alice still lives in Lisbon, she said.",
    );
    let out = fx.note(note_args(Some(2), vec![again])).unwrap();
    assert_eq!(
        (out.added.clone(), out.merged.clone(), out.retired.clone()),
        (vec![], vec![1], vec![])
    );
    let facts = fx.facts();
    assert_eq!(facts.len(), 1);
    let r = &facts[0].restated;
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].episode, r[0].sentence.as_str(), r[0].at),
        (2, "Alice still lives in Lisbon, she said.", fx.now())
    );
    // The held sentence is kept as first written; both episodes list it.
    assert_eq!(facts[0].sentence, "Alice lives in Lisbon.");
    assert_eq!(fx.episode(2).episode.facts, vec![1]);
    assert!(fx.model.calls_of(Task::Reconcile).is_empty());
}

#[test]
fn the_same_sentence_merges_without_asking() {
    let mut fx = fx();
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
    let out = fx
        .note(note_args(
            Some(2),
            vec![fact(
                "Alice",
                "resides in",
                "Lisbon city",
                "alice lives in lisbon",
            )],
        ))
        .unwrap();
    assert_eq!(out.merged, vec![1]);
    assert_eq!(fx.facts().len(), 1);
    assert!(fx.model.calls_of(Task::Reconcile).is_empty());
}

#[test]
fn a_restatement_the_model_recognises_merges() {
    let mut fx = fx();
    reconcile_by(&fx.model, |new, held| {
        (new.contains("home is in Lisbon") && held.contains("lives in Lisbon"))
            .then_some("restates")
    });
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
    let out = fx
        .note(note_args(
            Some(2),
            vec![fact(
                "Alice",
                "has her home in",
                "Lisbon",
                "Alice's home is in Lisbon.",
            )],
        ))
        .unwrap();
    assert_eq!(out.merged, vec![1]);
    assert!(out.added.is_empty());
    // The model was asked with the new fact and the held one.
    let asks = fx.model.calls_of(Task::Reconcile);
    assert_eq!(asks.len(), 1);
    let (new, held) = parse_reconcile(&asks[0].content);
    assert_eq!(
        (new.as_str(), held),
        (
            "Alice's home is in Lisbon.",
            vec!["Alice lives in Lisbon.".to_string()]
        )
    );
    let facts = fx.facts();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].restated[0].sentence, "Alice's home is in Lisbon.");
}

#[test]
fn a_restated_fact_is_judged_again() {
    let mut fx = fx();
    traces_by(&fx.model, |_, first, _| first == 1);
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
    let t1 = fx.now();
    fx.minutes(30);
    fx.note(note_args(
        Some(2),
        vec![fact(
            "Alice",
            "lives in",
            "Lisbon",
            "Alice lives in Lisbon now.",
        )],
    ))
    .unwrap();
    // It mattered to episode 1 again: a second yes trace, at the new time.
    let yes: Vec<i64> = fx
        .traces()
        .iter()
        .filter(|t| t.cause == TraceCause::Fact(1) && t.yes)
        .map(|t| t.at)
        .collect();
    assert_eq!(yes, vec![t1, t1 + 30 * MIN]);
    assert_eq!(fx.episode(1).significance, 3.0);
}

#[test]
fn unrelated_facts_about_one_entity_both_hold() {
    let mut fx = fx();
    reconcile_by(&fx.model, |_, _| Some("unrelated"));
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
    let out = fx
        .note(note_args(
            Some(2),
            vec![fact("Alice", "works at", "Acme", "Alice works at Acme.")],
        ))
        .unwrap();
    assert_eq!(
        (out.added.clone(), out.merged.clone(), out.retired.clone()),
        (vec![2], vec![], vec![])
    );
    assert!(fx.facts().iter().all(|f| f.is_live()));
    assert_eq!(fx.model.calls_of(Task::Reconcile).len(), 1);
}

#[test]
fn reconcile_is_offered_the_most_similar_held_facts_only() {
    let mut fx = Fx::new(Config {
        reconcile_candidates: 3,
        ..Config::default()
    });
    standard_segment(&fx.model);
    fx.turn("home", 30, 30);
    fx.user(&format!("{NEW} next"));
    let cities = [
        "Lisbon", "Porto", "Faro", "Braga", "Coimbra", "Evora", "Sintra",
    ];
    for c in cities {
        let f = fact(
            "Alice",
            &format!("visited {c} in"),
            "May",
            &format!("Alice visited {c} in May."),
        );
        fx.note(note_args(Some(1), vec![f])).unwrap();
    }
    // Facts about other entities are never offered.
    fx.note(note_args(
        Some(1),
        vec![fact(
            "Bob",
            "visited",
            "Lisbon",
            "Bob visited Lisbon in May.",
        )],
    ))
    .unwrap();
    let before = fx.model.calls_of(Task::Reconcile).len();
    let f = fact(
        "Alice",
        "visited Lisbon in",
        "June",
        "Alice visited Lisbon again in June.",
    );
    fx.note(note_args(Some(1), vec![f])).unwrap();
    let asks = fx.model.calls_of(Task::Reconcile);
    assert_eq!(asks.len(), before + 1);
    let (_, held) = parse_reconcile(&asks.last().unwrap().content);
    assert_eq!(held.len(), 3);
    assert_eq!(held[0], "Alice visited Lisbon in May.");
    assert!(held.iter().all(|h| h.starts_with("Alice")), "{held:?}");
}

#[test]
fn the_same_triple_twice_in_one_note_merges() {
    let mut fx = fx();
    let once = fact("Alice", "lives in", "Lisbon", "Alice lives in Lisbon.");
    let twice = fact(
        "alice",
        "Lives in",
        "LISBON",
        "Alice has her home in Lisbon.",
    );
    let out = fx.note(note_args(Some(1), vec![once, twice])).unwrap();
    assert_eq!((out.added.clone(), out.merged.clone()), (vec![1], vec![1]));
    let facts = fx.facts();
    assert_eq!(facts.len(), 1);
    assert_eq!(
        facts[0].restated[0].sentence,
        "Alice has her home in Lisbon."
    );
    assert!(fx.model.calls_of(Task::Reconcile).is_empty());
}
