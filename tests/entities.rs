//! The same entity under different names becomes one: normalised names
//! first, then name-embedding similarity, then the `resolve` task judging a
//! bounded set of candidates.
//!
//! Cosines of the test embedder (hashed words and trigrams) used here:
//! "Maria Lopez" / "Lopez, Maria" 1.0 (same words), "Maria Lopez" /
//! "Maria Lopez-Garcia" 0.87, "Lisbon" / "Porto" 0.08.

mod common;

use common::*;
use engram::base::text::cosine;
use engram::testing::HashEmbedder;
use engram::types::entity::Resolution;
use engram::Config;
use engram::Task;

/// A memory with one formed episode to note facts on.
fn fx(config: Config) -> Fx {
    let mut fx = Fx::new(config);
    standard_segment(&fx.model);
    fx.turn("people", 30, 30);
    fx.user(&format!("{NEW} next"));
    fx
}

fn note(fx: &mut Fx, subject: &str, object: &str, sentence: &str) {
    fx.note(note_args(
        Some(1),
        vec![fact(subject, "is linked to", object, sentence)],
    ))
    .unwrap();
}

#[test]
fn names_that_normalise_alike_are_one_entity() {
    let mut fx = fx(Config::default());
    note(
        &mut fx,
        "Acme Corp",
        "Lisbon",
        "Acme Corp has an office in Lisbon.",
    );
    note(
        &mut fx,
        "The  ACME-corp.",
        "Porto",
        "The ACME corp. opened a branch in Porto.",
    );
    let facts = fx.facts();
    assert_eq!(facts[0].subject, facts[1].subject);
    let acme = fx.entity_named("acme corp");
    assert_eq!(acme.name, "Acme Corp");
    // Same normal form: no new alias, no model judgment.
    assert_eq!(acme.aliases.len(), 1);
    assert_eq!(fx.entities().len(), 3);
    assert!(fx.model.calls_of(Task::Resolve).is_empty());
}

#[test]
fn names_with_near_identical_embeddings_are_one_entity() {
    let e = HashEmbedder::default();
    let c = cosine(&e.embed("Maria Lopez"), &e.embed("Lopez, Maria"));
    assert!(c >= Config::default().same_entity_cosine);
    let mut fx = fx(Config::default());
    note(
        &mut fx,
        "Maria Lopez",
        "billing",
        "Maria Lopez owns billing.",
    );
    note(
        &mut fx,
        "Lopez, Maria",
        "payments",
        "Lopez, Maria also runs payments.",
    );
    let maria = fx.entity_named("Maria Lopez");
    assert_eq!(fx.entity_named("Lopez, Maria").id, maria.id);
    let alias = &maria.aliases[1];
    assert_eq!(
        (alias.name.as_str(), alias.normal.as_str()),
        ("Lopez, Maria", "lopez maria")
    );
    assert_eq!(alias.resolution, Resolution::Similar { cosine: c });
    assert!(fx.model.calls_of(Task::Resolve).is_empty());
}

#[test]
fn the_resolve_task_judges_a_similar_candidate() {
    let mut fx = fx(Config::default());
    resolve_by(&fx.model, |name, candidate| {
        name == "Maria Lopez-Garcia" && candidate == "Maria Lopez"
    });
    note(
        &mut fx,
        "Maria Lopez",
        "billing",
        "Maria Lopez owns billing.",
    );
    note(
        &mut fx,
        "Maria Lopez-Garcia",
        "payments",
        "Maria Lopez-Garcia runs payments.",
    );
    // Similar (0.87) but below the auto-merge cosine: the model was asked,
    // with the name, its sentence and the candidate.
    let asks = fx.model.calls_of(Task::Resolve);
    assert_eq!(asks.len(), 1);
    let (name, cands) = parse_resolve(&asks[0].content);
    assert_eq!(name, "Maria Lopez-Garcia");
    assert_eq!(cands, vec!["Maria Lopez".to_string()]);
    assert!(asks[0]
        .content
        .contains("Sentence: Maria Lopez-Garcia runs payments."));
    let maria = fx.entity_named("Maria Lopez");
    assert_eq!(fx.entity_named("Maria Lopez-Garcia").id, maria.id);
    assert_eq!(maria.aliases[1].resolution, Resolution::Judged);
    let facts = fx.facts();
    assert_eq!(facts[0].subject, facts[1].subject);
}

#[test]
fn a_candidate_the_model_rejects_is_a_new_entity() {
    let mut fx = fx(Config::default());
    // The default scripted answer: not the same.
    note(
        &mut fx,
        "Maria Lopez",
        "billing",
        "Maria Lopez owns billing.",
    );
    note(
        &mut fx,
        "Maria Lopez-Garcia",
        "payments",
        "Maria Lopez-Garcia runs payments.",
    );
    assert_eq!(fx.model.calls_of(Task::Resolve).len(), 1);
    assert_ne!(
        fx.entity_named("Maria Lopez").id,
        fx.entity_named("Maria Lopez-Garcia").id
    );
    assert_eq!(
        fx.entity_named("Maria Lopez-Garcia").aliases[0].resolution,
        Resolution::New
    );
}

#[test]
fn dissimilar_names_are_new_entities_without_asking() {
    let mut fx = fx(Config::default());
    note(&mut fx, "Lisbon", "Portugal", "Lisbon is in Portugal.");
    note(&mut fx, "Porto", "Douro", "Porto lies on the Douro.");
    assert!(fx.model.calls_of(Task::Resolve).is_empty());
    assert_eq!(fx.entities().len(), 4);
}

#[test]
fn the_resolve_candidates_are_bounded() {
    // Every known entity is similar enough to be a candidate; the model sees
    // at most `resolve_candidates` of them, the most similar first. For
    // "Bob" those are Gosia (0.28), Dmitri (0.08) and Robert Smith (0.06).
    fn run(bound: usize) -> (Vec<String>, bool) {
        let config = Config {
            candidate_entity_cosine: -1.0,
            same_entity_cosine: 1.1,
            resolve_candidates: bound,
            ..Config::default()
        };
        let mut fx = fx(config);
        resolve_by(&fx.model, |name, candidate| {
            name == "Bob" && candidate == "Robert Smith"
        });
        for n in [
            "Robert Smith",
            "Ana",
            "Carla",
            "Dmitri",
            "Elena",
            "Farid",
            "Gosia",
            "Hana",
        ] {
            note(&mut fx, n, "the team", &format!("{n} is on the team."));
        }
        note(&mut fx, "Bob", "the team", "Bob leads the team.");
        let asks = fx.model.calls_of(Task::Resolve);
        for ask in &asks {
            let (_, cands) = parse_resolve(&ask.content);
            assert!(!cands.is_empty() && cands.len() <= bound, "{cands:?}");
        }
        let (name, cands) = parse_resolve(&asks.last().unwrap().content);
        assert_eq!(name, "Bob");
        (
            cands,
            fx.entity_named("Bob").id == fx.entity_named("Robert Smith").id,
        )
    }
    let (cands, merged) = run(3);
    assert_eq!(cands, ["Gosia", "Dmitri", "Robert Smith"]);
    assert!(merged);
    // With two candidates Robert Smith is not offered: Bob stays apart. The
    // bound keeps the cost flat as the graph grows, at that price.
    let (cands, merged) = run(2);
    assert_eq!(cands, ["Gosia", "Dmitri"]);
    assert!(!merged);
}

#[test]
fn names_in_one_note_resolve_against_each_other() {
    let mut fx = fx(Config::default());
    resolve_by(&fx.model, |name, candidate| {
        name == "Maria Lopez-Garcia" && candidate == "Maria Lopez"
    });
    let facts = vec![
        fact(
            "Maria Lopez",
            "owns",
            "billing",
            "Maria Lopez owns billing.",
        ),
        fact(
            "Lopez, Maria",
            "runs",
            "payments",
            "Lopez, Maria runs payments.",
        ),
        fact(
            "Maria Lopez-Garcia",
            "leads",
            "finance",
            "Maria Lopez-Garcia leads finance.",
        ),
    ];
    fx.note(note_args(Some(1), facts)).unwrap();
    let maria = fx.entity_named("Maria Lopez");
    let names: Vec<(&str, Resolution)> = maria
        .aliases
        .iter()
        .map(|a| (a.name.as_str(), a.resolution))
        .collect();
    assert_eq!(
        names,
        vec![
            ("Maria Lopez", Resolution::New),
            ("Lopez, Maria", Resolution::Similar { cosine: 1.0 }),
            ("Maria Lopez-Garcia", Resolution::Judged),
        ]
    );
    let subjects: Vec<u64> = fx.facts().iter().map(|f| f.subject).collect();
    assert_eq!(subjects, vec![maria.id; 3]);
    // The names are known from now on: no second judgment.
    let asked = fx.model.calls_of(Task::Resolve).len();
    note(
        &mut fx,
        "Maria Lopez-Garcia",
        "budget",
        "Maria Lopez-Garcia owns the budget.",
    );
    assert_eq!(fx.model.calls_of(Task::Resolve).len(), asked);
}
