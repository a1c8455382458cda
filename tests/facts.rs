//! Facts: one sentence with its subject and object, a knowledge-graph
//! triple, written by the model with the note task as episodes leave (or by
//! the host's chat model with the note tool); milestones are facts with a
//! kind; each memory has its own graph.

mod common;

use common::*;
use engram::testing::{ManualClock, MemoryStore, ScriptedModel};
use engram::types::entity::Resolution;
use engram::view::ItemKind;
use engram::Config;
use engram::EpisodeState;
use engram::FactKind;
use engram::NoteArgs;
use engram::Task;

fn garden_facts() -> Vec<engram::NewFact> {
    vec![
        fact(
            "Maria Lopez",
            "owns",
            "the garden",
            "Maria Lopez owns the garden on Rua Augusta.",
        ),
        kind_fact(
            FactKind::Decided,
            "Maria Lopez",
            "chose",
            "drip irrigation",
            "Maria Lopez decided on drip irrigation for the garden.",
        ),
    ]
}

/// Ceiling 400; the garden episode (1) has two facts; a fade seals
/// episodes 1 and 2 at T0 + 7 min.
fn sealed_garden() -> Fx {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    notes_for(&fx.model, vec![("garden", garden_facts())]);
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.user(&sized(&format!("{NEW} dinner"), 50));
    fx.minutes(1);
    assert_eq!(
        fx.model.calls_of(Task::Note).len(),
        0,
        "no facts while live"
    );
    assert!(fx.facts().is_empty());
    fx.assistant(&sized("dinner", 50));
    assert_eq!(
        fx.states()[..2],
        [EpisodeState::Sealed, EpisodeState::Sealed]
    );
    fx
}

#[test]
fn the_note_task_writes_triples_as_an_episode_leaves() {
    let mut fx = sealed_garden();
    let noted_at = T0 + 7 * MIN;
    // The model saw the episode's messages.
    let notes = fx.model.calls_of(Task::Note);
    assert_eq!(notes.len(), 2);
    assert!(notes[0].content.starts_with("Episode 1 (messages 1-2)"));
    assert!(
        notes[0].content.contains("NEWTOPIC garden")
            && notes[0].content.contains("assistant: garden")
    );
    assert!(notes[0].schema.contains("\"sentence\""));

    let facts = fx.facts();
    assert_eq!(facts.len(), 2);
    let maria = fx.entity_named("Maria Lopez");
    let garden = fx.entity_named("the garden");
    let drip = fx.entity_named("drip irrigation");
    let f = &facts[0];
    assert_eq!((f.id, f.subject, f.object), (1, maria.id, garden.id));
    assert_eq!(
        (f.predicate.as_str(), f.sentence.as_str()),
        ("owns", "Maria Lopez owns the garden on Rua Augusta.")
    );
    assert_eq!(
        (f.kind, f.episode, f.said_at, f.noted_at),
        (FactKind::Fact, 1, T0 + MIN, noted_at)
    );
    assert_eq!(f.embedding.len(), 64);
    assert!(f.is_live() && f.restated.is_empty());
    let g = &facts[1];
    assert_eq!(
        (g.subject, g.object, g.kind),
        (maria.id, drip.id, FactKind::Decided)
    );
    // Entities: one per distinct name, each created by its first mention.
    assert_eq!(fx.entities().len(), 3);
    assert_eq!(maria.aliases[0].resolution, Resolution::New);
    // The episode lists its facts.
    assert_eq!(fx.episode(1).episode.facts, vec![1, 2]);
    assert!(fx.episode(2).episode.facts.is_empty());
}

#[test]
fn sealed_facts_are_in_the_facts_block_with_milestones_first() {
    let mut fx = sealed_garden();
    let view = fx.view();
    let block = &view.items[0];
    assert_eq!(block.kind, ItemKind::Facts);
    assert_eq!(block.facts, vec![1, 2]);
    let decided = block
        .text
        .find("[decided] Maria Lopez decided")
        .expect(&block.text);
    let owns = block.text.find("Maria Lopez owns").expect(&block.text);
    assert!(decided < owns, "milestone first: {}", block.text);
}

#[test]
fn every_milestone_kind_is_kept_and_shown() {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    let kinds = [
        FactKind::Agreed,
        FactKind::Decided,
        FactKind::Done,
        FactKind::Blocked,
        FactKind::Next,
    ];
    let facts: Vec<_> = kinds
        .iter()
        .map(|k| {
            kind_fact(
                *k,
                "Billing API",
                k.as_str(),
                "launch",
                &format!("The billing API launch is {}.", k.as_str()),
            )
        })
        .chain([fact(
            "Billing API",
            "is owned by",
            "Maria",
            "Maria owns the billing API.",
        )])
        .collect();
    notes_for(&fx.model, vec![("billing", facts)]);
    for t in ["billing", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.turn("dinner", 50, 50);
    let kept: Vec<FactKind> = fx.facts().iter().map(|f| f.kind).collect();
    assert_eq!(kept[..5], kinds);
    assert!(kinds.iter().all(|k| k.is_milestone()) && !FactKind::Fact.is_milestone());
    let text = fx.view().items[0].text.clone();
    let mut last = 0;
    for k in kinds {
        let at = text
            .find(&format!("- [{}] The billing API launch is", k.as_str()))
            .expect(&text);
        assert!(at > last);
        last = at;
    }
    assert!(text.find("- Maria owns the billing API.").expect(&text) > last);
}

#[test]
fn the_host_chat_model_can_note_with_the_note_tool() {
    let tool = engram::Memory::<MemoryStore, ScriptedModel, ManualClock>::note_tool();
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["function"]["name"], "note");
    let item = &tool["function"]["parameters"]["properties"]["facts"]["items"];
    for field in ["subject", "predicate", "object", "sentence", "kind"] {
        assert!(item["properties"][field].is_object(), "{field}");
    }
    let kinds: Vec<&str> = item["properties"]["kind"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "fact",
            "agreed",
            "decided",
            "done",
            "blocked",
            "next",
            "preference"
        ]
    );

    // The arguments a chat model gives, as JSON, go straight in.
    let mut fx = Fx::new(Config::default());
    standard_segment(&fx.model);
    fx.turn("garden", 30, 30);
    fx.user(&format!("{NEW} next"));
    let args: NoteArgs = serde_json::from_str(
        r#"{"facts": [{"subject": "Maria Lopez", "predicate": "owns", "object": "the garden",
             "sentence": "Maria Lopez owns the garden.", "kind": "fact"}]}"#,
    )
    .unwrap();
    let out = fx.note(args).unwrap();
    // No leaving episode: the newest one.
    assert_eq!(
        (out.episode, out.added.clone(), out.sealed),
        (1, vec![1], false)
    );
    assert_eq!(fx.facts()[0].sentence, "Maria Lopez owns the garden.");
    assert_eq!(fx.facts()[0].episode, 1);
    // Unknown fields are refused.
    assert!(serde_json::from_str::<NoteArgs>(r#"{"facts": [], "mood": "happy"}"#).is_err());
}

#[test]
fn each_memory_has_its_own_knowledge_graph() {
    let store = MemoryStore::new();
    let (ma, mb) = (ScriptedModel::new(), ScriptedModel::new());
    no_recall(&ma);
    no_recall(&mb);
    let mut a = Fx::with(
        "alice",
        store.clone(),
        ma,
        ManualClock::at(T0),
        Config::default(),
    );
    let mut b = Fx::with(
        "bob",
        store.clone(),
        mb,
        ManualClock::at(T0),
        Config::default(),
    );
    for fx in [&mut a, &mut b] {
        standard_segment(&fx.model);
        fx.turn("garden", 30, 30);
        fx.user(&format!("{NEW} next"));
    }
    a.note(note_args(
        None,
        vec![fact(
            "Maria Lopez",
            "owns",
            "the garden",
            "Maria Lopez owns the garden.",
        )],
    ))
    .unwrap();
    // Bob's memory does not know Maria: her name makes a new entity there.
    b.note(note_args(
        None,
        vec![fact(
            "Maria Lopez",
            "rents",
            "a flat",
            "Maria Lopez rents a flat.",
        )],
    ))
    .unwrap();
    let maria_b = b.entity_named("Maria Lopez");
    assert_eq!(
        (maria_b.id, maria_b.aliases[0].resolution),
        (1, Resolution::New)
    );
    assert_eq!(a.facts().len(), 1);
    assert_eq!(b.facts().len(), 1);
    assert_eq!(b.facts()[0].sentence, "Maria Lopez rents a flat.");
    assert!(a.entities().iter().all(|e| e.name != "a flat"));
    assert_eq!(
        a.model.calls_of(Task::Reconcile).len() + b.model.calls_of(Task::Reconcile).len(),
        0
    );
}
