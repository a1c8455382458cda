//! Model answers from reasoning and small models: a leading reasoning block
//! (with braces inside) is skipped, one fact object where a list belongs is
//! read as a list, an answer cut off at the length limit is recognised and a
//! batched `trace` call is asked again in smaller batches; every repair is
//! counted in `stats().model`, and an answer still ambiguous is bad.

mod common;

use common::*;
use engram::Config;
use engram::Task;
use serde_json::json;

#[test]
fn a_reasoning_preamble_with_braces_is_skipped_and_counted() {
    let mut fx = Fx::new(config(2_000));
    fx.model.on(Task::Segment, |req| {
        let cut = req.content.lines().last().unwrap_or("").contains(NEW);
        let p = if cut { 0.99 } else { 0.1 };
        Some(format!(
            "<think>The user said {{hello}}; is it {{\"boundary\": 0.5}}? No.</think>\n{}",
            json!({ "boundary": p })
        ))
    });
    fx.turn("garden", 30, 30);
    fx.user(&format!("{NEW} taxes"));
    assert_eq!(fx.episodes().len(), 1, "the judged cut was made");
    let stats = fx.stats();
    assert!(
        stats.model.repairs.get("reasoning").copied().unwrap_or(0) >= 1,
        "{:?}",
        stats.model
    );
    assert_eq!(stats.model.failed.get("segment"), None, "{:?}", stats.model);
}

#[test]
fn two_answers_in_one_reply_are_ambiguous_and_bad() {
    let mut fx = Fx::new(config(2_000));
    fx.model.on(Task::Segment, |_| {
        Some(r#"Either {"boundary": 0.1} or {"boundary": 0.99}"#.to_string())
    });
    fx.turn("garden", 30, 30);
    let added = fx.user(&format!("{NEW} taxes"));
    assert!(
        added
            .degraded
            .iter()
            .any(|d| d.task == Task::Segment && d.error.contains("ambiguous")),
        "{:?}",
        added.degraded
    );
    assert!(fx.episodes().is_empty(), "nothing guessed");
}

#[test]
fn a_note_with_one_fact_object_for_the_list_is_kept() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.model.on(Task::Note, |req| {
        req.content.contains("garden").then(|| {
            json!({ "facts": {
                "subject": "Ana", "predicate": "grows", "object": "tomatoes",
                "sentence": "Ana grows tomatoes in the garden.", "kind": "fact"
            }})
            .to_string()
        })
    });
    fx.turn("garden", 600, 600);
    for t in ["taxes", "bikes"] {
        fx.turn(t, 400, 400);
    }
    let facts = fx.facts();
    assert!(
        facts
            .iter()
            .any(|f| f.sentence == "Ana grows tomatoes in the garden."),
        "{facts:?}"
    );
    assert_eq!(fx.stats().model.repairs.get("one_fact_as_list"), Some(&1));
}

#[test]
fn a_truncated_trace_answer_is_asked_again_in_smaller_batches() {
    let mut fx = Fx::new(Config {
        trace_batch: 4,
        ..Config::default()
    });
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes", "dinner", "car"] {
        fx.turn(t, 30, 30);
    }
    fx.user(&format!("{NEW} next"));
    // A model whose answer is cut off when it judges more than one episode.
    fx.model.on(Task::Trace, |req| {
        let t = parse_trace(&req.content);
        if t.episodes.len() > 1 {
            return Some(r#"{"facts": [{"fact": 1, "episodes": [1, "#.to_string());
        }
        let yes = t.episodes[0].1.contains("garden");
        let eps: Vec<usize> = if yes { vec![1] } else { vec![] };
        Some(json!({ "facts": [{ "fact": 1, "episodes": eps }] }).to_string())
    });
    let before = fx.traces().len();
    fx.note(note_args(
        Some(5),
        vec![fact("garden", "needs", "water", "The garden needs water.")],
    ))
    .expect("noted: the truncated batches were asked again");
    let new: Vec<_> = fx.traces()[before..].to_vec();
    assert!(
        new.iter().any(|t| t.episode == 1),
        "the garden episode got its trace: {new:?}"
    );
    // Every episode ended in a call of its own.
    let singles = fx
        .model
        .calls_of(Task::Trace)
        .iter()
        .filter(|c| parse_trace(&c.content).episodes.len() == 1)
        .count();
    assert_eq!(singles, 5);
    let stats = fx.stats();
    assert!(stats.model.truncated >= 2, "{:?}", stats.model);
}
