//! Bad input returns a typed error and changes nothing (the export before
//! and after is the same): empty or oversize messages, unknown roles, bad
//! notes, and NaN or wrong-dimension vectors from `embed` on a host `note`.

mod common;

use common::*;
use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::Config;
use engram::Error;
use engram::Memory;
use engram::NewMessage;
use engram::NoteArgs;
use engram::Role;

type BadMem = Memory<MemoryStore, BadEmbed, ManualClock>;

/// A memory over [`BadEmbed`] with one formed episode and one fact written,
/// so the memory's dimension (64) is fixed.
fn with_bad_embed(config: Config) -> (BadMem, BadEmbed, MemoryStore) {
    let scripted = ScriptedModel::new();
    no_recall(&scripted);
    standard_segment(&scripted);
    let model = BadEmbed::new(scripted);
    let store = MemoryStore::new();
    let clock = ManualClock::at(T0);
    let mut m = block_on(Memory::open(
        "test",
        store.clone(),
        model.clone(),
        clock,
        config,
    ))
    .unwrap();
    block_on(async {
        m.add_message(NewMessage::user(format!(
            "{NEW} Alice moved to Lisbon last spring."
        )))
        .await?;
        m.add_message(NewMessage::assistant("Lisbon is lovely in spring."))
            .await?;
        m.add_message(NewMessage::user(format!("{NEW} Another topic entirely.")))
            .await
    })
    .unwrap();
    (m, model, store)
}

fn alice() -> NoteArgs {
    note_args(
        Some(1),
        vec![fact(
            "Alice",
            "lives in",
            "Lisbon",
            "Alice lives in Lisbon.",
        )],
    )
}

fn export(m: &mut BadMem) -> String {
    block_on(m.export()).unwrap()
}

#[test]
fn an_empty_message_is_refused() {
    let mut fx = Fx::new(Config::default());
    fx.user("hello");
    let before = fx.export();
    for m in [
        NewMessage::user(""),
        NewMessage::user("  \n\t "),
        NewMessage::assistant(""),
        NewMessage::system(" "),
    ] {
        match fx.try_add(m) {
            Err(e @ Error::InvalidInput(_)) => assert_eq!(e.code(), "invalid-input"),
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }
    assert_eq!(fx.export(), before);
    // An assistant message with only tool calls is not empty.
    let call = engram::ToolCall {
        id: "c".into(),
        name: "t".into(),
        arguments: "{}".into(),
    };
    assert!(fx.try_add(NewMessage::tool_calls("", vec![call])).is_ok());
}

#[test]
fn an_oversize_message_is_refused() {
    let mut fx = Fx::new(Config {
        max_message_tokens: 100,
        ..Config::default()
    });
    fx.user("hello");
    let before = fx.export();
    let err = fx.try_add(NewMessage::user(sized("big", 101))).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput(m) if m.contains("101") && m.contains("max_message_tokens")),
        "{err}"
    );
    assert_eq!(fx.export(), before);
    // At the limit it is accepted.
    assert_eq!(fx.add(NewMessage::assistant(sized("fits", 100))).message, 2);
}

#[test]
fn an_unknown_role_is_refused() {
    assert!(matches!(Role::parse("robot"), Err(Error::InvalidInput(m)) if m.contains("robot")));
    assert_eq!(Role::parse("tool").unwrap(), Role::Tool);
    // From JSON, a host's message with an unknown role does not even parse.
    assert!(serde_json::from_str::<NewMessage>(r#"{"role": "robot", "content": "hi"}"#).is_err());
}

#[test]
fn nan_vectors_from_embed_on_a_host_note_change_nothing() {
    let (mut m, model, _) = with_bad_embed(Config::default());
    block_on(m.note(alice())).unwrap();
    let before = export(&mut m);
    model.fault.set(EmbedFault::Nan);
    let f = note_args(
        Some(1),
        vec![fact("Bob", "lives in", "Porto", "Bob lives in Porto.")],
    );
    match block_on(m.note(f.clone())) {
        Err(e @ Error::Model(_)) => assert!(e.to_string().contains("NaN"), "{e}"),
        other => panic!("expected a model error, got {other:?}"),
    }
    assert_eq!(export(&mut m), before);
    // Once the vectors are sound again the same note goes through.
    model.fault.set(EmbedFault::None);
    assert_eq!(block_on(m.note(f)).unwrap().added, vec![2]);
}

#[test]
fn wrong_dimension_vectors_change_nothing() {
    let (mut m, model, store) = with_bad_embed(Config::default());
    block_on(m.note(alice())).unwrap();
    let before = export(&mut m);
    let dump = store.dump();
    for fault in [
        EmbedFault::Dimension(32),
        EmbedFault::Dimension(65),
        EmbedFault::MissingVector,
    ] {
        model.fault.set(fault);
        let f = note_args(
            Some(1),
            vec![fact("Bob", "lives in", "Porto", "Bob lives in Porto.")],
        );
        assert!(
            matches!(block_on(m.note(f)), Err(Error::Model(_))),
            "{fault:?}"
        );
        assert_eq!(export(&mut m), before, "{fault:?}");
    }
    assert_eq!(store.dump(), dump);
}

#[test]
fn vectors_over_the_dimension_limit_are_refused() {
    // The first vectors fix the dimension; they must be within the limit.
    let (mut m, _, _) = with_bad_embed(Config {
        max_dimension: 32,
        ..Config::default()
    });
    let before = export(&mut m);
    assert!(matches!(block_on(m.note(alice())), Err(Error::Model(e)) if e.contains("dimension")));
    assert_eq!(export(&mut m), before);
    assert!(block_on(m.facts()).unwrap().is_empty());
}

#[test]
fn bad_notes_are_refused() {
    let mut fx = Fx::new(Config::default());
    // Nothing to note before an episode forms.
    fx.user("hello");
    assert!(matches!(fx.note(alice()), Err(Error::InvalidInput(_))));
    assert!(matches!(
        fx.note(note_args(None, vec![fact("a", "b", "c", "A b c.")])),
        Err(Error::InvalidInput(_))
    ));
    standard_segment(&fx.model);
    fx.assistant(&sized("answer", 30));
    fx.user(&format!("{NEW} next"));
    let before = fx.export();
    let too_many: Vec<_> = (0..41)
        .map(|i| fact("a", "is", &format!("n{i}"), &format!("A is n{i}.")))
        .collect();
    let bad = [
        note_args(Some(1), vec![]),
        note_args(Some(1), too_many),
        note_args(Some(7), vec![fact("a", "b", "c", "A b c.")]),
        note_args(Some(1), vec![fact("", "b", "c", "A b c.")]),
        note_args(Some(1), vec![fact("a", "b", "c", "   ")]),
        note_args(
            Some(1),
            vec![fact("...", "b", "c", "Punctuation is no name.")],
        ),
        note_args(Some(1), vec![fact("a", "b", "c", &"x".repeat(2_001))]),
    ];
    for args in bad {
        assert!(
            matches!(fx.note(args.clone()), Err(Error::InvalidInput(_))),
            "{args:?}"
        );
    }
    assert_eq!(fx.export(), before);
}

#[test]
fn a_bad_namespace_or_config_is_refused_at_open() {
    // Dots first: `.` and `..` would become path segments of store keys.
    for ns in [
        "",
        "a/b",
        "spaces here",
        &"n".repeat(129),
        ".",
        "..",
        ".hidden",
    ] {
        let r = block_on(Memory::open(
            ns,
            MemoryStore::new(),
            ScriptedModel::new(),
            ManualClock::at(T0),
            Config::default(),
        ));
        assert!(matches!(r.err(), Some(Error::InvalidInput(_))), "{ns:?}");
    }
    for config in [
        Config {
            ceiling_tokens: 10,
            ..Config::default()
        },
        Config {
            target_episode_tokens: 2_000,
            max_episode_tokens: 1_000,
            ..Config::default()
        },
        Config {
            boundary_threshold: 1.5,
            ..Config::default()
        },
        Config {
            trace_batch: 0,
            ..Config::default()
        },
        Config {
            model_attempts: 0,
            ..Config::default()
        },
    ] {
        let r = block_on(Memory::open(
            "ok",
            MemoryStore::new(),
            ScriptedModel::new(),
            ManualClock::at(T0),
            config.clone(),
        ));
        assert!(
            matches!(r.err(), Some(Error::InvalidInput(_))),
            "{config:?}"
        );
    }
    assert!(matches!(
        Config::from_json(r#"{"ceiling": 100}"#),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(
        Config::from_json(r#"{"ceiling_tokens": 900}"#)
            .unwrap()
            .ceiling_tokens,
        900
    );
}

#[test]
fn a_refused_call_leaves_the_memory_working() {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    for i in 0..3 {
        fx.turn(&format!("t{i}"), 50, 50);
        assert!(fx.try_add(NewMessage::user("")).is_err());
        assert!(fx.try_add(NewMessage::tool_result("nope", "x")).is_err());
    }
    let mut clean = Fx::new(config(400));
    standard_segment(&clean.model);
    for i in 0..3 {
        clean.turn(&format!("t{i}"), 50, 50);
    }
    assert_eq!(fx.export(), clean.export());
}
