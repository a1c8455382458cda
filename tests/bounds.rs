//! Bounds everywhere: every config field is checked against its range (the
//! error names the field and the range), a broken clock is refused before it
//! skews every age, oversize split parts are refused, and vectors of any
//! scale are normalised or refused. (Namespaces that could become path
//! segments, `.` and `..`, are refused in `bad_input.rs`.)

mod common;

use common::*;
use engram::testing::block_on;
use engram::Config;
use engram::Error;
use engram::NewMessage;
use engram::Task;
use serde_json::json;

#[test]
fn every_config_field_out_of_range_is_refused_with_its_range() {
    let bad = [
        ("max_facts_per_note", json!(0)),
        ("ceiling_tokens", json!(10)),
        ("model_attempts", json!(0)),
        ("walk_hops", json!(50)),
        ("recall_share", json!(0.9)),
        ("min_cosine", json!(2.0)),
        ("same_entity_cosine", json!(0.1)),
        ("sleep_after_hours", json!(0.0)),
        ("strong_boundary", json!(0.1)),
        ("max_dimension", json!(0)),
    ];
    for (field, value) in bad {
        let text = json!({ field: value }).to_string();
        let err = Config::from_json(&text).expect_err(field);
        let msg = err.to_string();
        assert!(matches!(err, Error::InvalidInput(_)), "{field}: {msg}");
        assert!(msg.contains(field) && msg.contains("..="), "{field}: {msg}");
    }
    assert!(Config::from_json("{}").is_ok());
}

#[test]
fn a_clock_before_1970_or_after_3000_is_refused_and_writes_nothing() {
    for reading in [i64::MIN, -1, i64::MAX] {
        let mut fx = Fx::new(config(2_000));
        standard_segment(&fx.model);
        fx.user("hello");
        let before = fx.store.dump();
        fx.clock.set(reading);
        let err = fx.try_add(NewMessage::user("again")).expect_err("refused");
        assert!(
            matches!(&err, Error::InvalidInput(m) if m.contains("clock")),
            "{reading}: {err}"
        );
        assert_eq!(fx.store.dump(), before);
        fx.clock.set(T0 + 60_000);
        fx.user("again");
        assert_eq!(fx.messages().len(), 2);
    }
}

#[test]
fn a_split_part_longer_than_the_message_is_refused() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.user("hello");
    fx.minutes(1);
    fx.user(&format!("{NEW} ana"));
    // Something to recall, so the split is asked.
    fx.note(note_args(
        Some(1),
        vec![fact("Ana", "lives in", "Lisbon", "Ana lives in Lisbon.")],
    ))
    .expect("noted");
    let huge = "x".repeat(1_000_000);
    fx.model.on(Task::Split, move |_| {
        Some(json!({ "parts": [huge.clone()] }).to_string())
    });
    fx.minutes(1);
    let added = fx.user("how are ana and the cat doing since they moved to the city last spring");
    // The split failed its check every attempt: the message was searched alone.
    assert!(
        added.degraded.iter().any(|d| d.task == Task::Split),
        "{:?}",
        added.degraded
    );
    for b in block_on(fx.memory.recalls()).unwrap() {
        assert!(
            b.parts.iter().all(|p| p.len() < 1_000),
            "a huge part was kept"
        );
    }
}

#[test]
fn vectors_of_any_scale_are_normalised() {
    let mut v = vec![vec![3e30f32, 4e30], vec![3e-20, 4e-20]];
    engram::llm::normalise(&mut v).unwrap();
    // Unit length, at the f16 precision vectors are kept at.
    for x in &v {
        assert!(
            (x[0] - 0.6).abs() < 1e-3 && (x[1] - 0.8).abs() < 1e-3,
            "{x:?}"
        );
        assert_eq!(x[0], engram::base::bytes::round(x[0]));
    }
    let mut zero = vec![vec![0.0f32, 0.0]];
    assert!(engram::llm::normalise(&mut zero).is_err());
}

#[test]
fn a_search_limit_or_budget_out_of_range_is_refused_with_its_range() {
    use engram::types::recall::SearchOptions;
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.user("Ana moved to Porto last spring");
    fx.assistant("Nice.");
    let before = fx.store.dump();
    let limits = [0, 1_001, 1_000_000_000, usize::MAX];
    for limit in limits {
        let options = SearchOptions {
            limit,
            ..SearchOptions::default()
        };
        let err = block_on(fx.memory.search("Ana", options)).expect_err("refused");
        assert!(
            matches!(&err, Error::InvalidInput(m) if m.contains("limit") && m.contains("1..=1000")),
            "{limit}: {err}"
        );
    }
    for budget in [0, usize::MAX] {
        let options = SearchOptions {
            budget_tokens: Some(budget),
            ..SearchOptions::default()
        };
        let err = block_on(fx.memory.search("Ana", options)).expect_err("refused");
        assert!(
            matches!(&err, Error::InvalidInput(m) if m.contains("budget_tokens") && m.contains("..=")),
            "{budget}: {err}"
        );
    }
    assert_eq!(fx.store.dump(), before);
    let most = SearchOptions {
        limit: 1_000,
        budget_tokens: Some(10_000_000),
        ..SearchOptions::default()
    };
    assert!(block_on(fx.memory.search("Ana", most)).is_ok());
}

#[test]
fn a_message_with_too_many_tool_calls_is_refused_with_the_range() {
    let mut fx = Fx::new(config(200_000));
    standard_segment(&fx.model);
    fx.user("run everything");
    let calls = (0..300)
        .map(|i| engram::ToolCall {
            id: format!("c{i}"),
            name: "t".into(),
            arguments: "{}".into(),
        })
        .collect();
    let err = fx
        .try_add(NewMessage::tool_calls("", calls))
        .expect_err("refused");
    assert!(
        matches!(&err, Error::InvalidInput(m) if m.contains("0..=256")),
        "{err}"
    );
}

#[test]
fn a_ceiling_below_the_configured_episode_size_is_refused() {
    // Set by the host: refused, naming the field and the range.
    let err = Config::from_json(r#"{"ceiling_tokens": 500, "max_episode_tokens": 1000}"#)
        .expect_err("refused");
    let msg = err.to_string();
    assert!(
        matches!(err, Error::InvalidInput(_))
            && msg.contains("max_episode_tokens")
            && msg.contains("1..=500"),
        "{msg}"
    );
    // Left at their defaults: fitted to the ceiling.
    let fitted = Config::from_json(r#"{"ceiling_tokens": 400}"#).expect("fitted");
    assert_eq!(fitted.max_episode_tokens, 400);
    assert_eq!(fitted.target_episode_tokens, 400);
    let open = Config {
        ceiling_tokens: 500,
        max_episode_tokens: 1_000,
        ..Config::default()
    };
    let r = block_on(engram::Memory::open(
        "ns",
        engram::testing::MemoryStore::new(),
        engram::testing::ScriptedModel::new(),
        engram::testing::ManualClock::at(T0),
        open,
    ));
    assert!(matches!(r.err(), Some(Error::InvalidInput(_))));
}

#[test]
fn a_search_hit_of_100_kb_is_clipped_and_hit_text_gives_it_whole() {
    use engram::types::recall::SearchOptions;
    let mut cfg = config(200_000);
    cfg.max_message_tokens = 40_000;
    let mut fx = Fx::new(cfg);
    standard_segment(&fx.model);
    let long = format!("zanzibar {}", "words of a very long paste ".repeat(3_900));
    assert!(long.len() > 100_000);
    fx.user("Hello there, a first question.");
    fx.assistant("Hello, ask away.");
    fx.user(&long);
    fx.assistant("Noted.");
    let hits = block_on(fx.memory.search("zanzibar", SearchOptions::default())).expect("search");
    let hit = hits
        .iter()
        .find(|h| h.text.contains("zanzibar"))
        .unwrap_or_else(|| panic!("{hits:?}"));
    assert!(hit.text.len() <= 4_000 + 3, "{} bytes", hit.text.len());
    assert!(hit.text.ends_with('…'));
    let whole = block_on(fx.memory.hit_text(hit.item)).expect("whole text");
    assert!(whole.len() > 100_000 && whole.contains(&long));
    for bad in [
        engram::types::recall::Item::Message(0),
        engram::types::recall::Item::Passage(99),
        engram::types::recall::Item::Fact(1),
    ] {
        assert!(matches!(
            block_on(fx.memory.hit_text(bad)),
            Err(Error::InvalidInput(_))
        ));
    }
}
