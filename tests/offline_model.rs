//! The built-in offline model: every task answered without an LLM, checked
//! on the bundled sample conversation (hand-labelled topics) with a manual
//! clock. These tests hold the rules to outcomes: boundaries where the
//! topics change, facts with their milestones, the price contradiction
//! retiring the old price, recall of an early topic, no degraded step.

use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::Config;
use engram::EpisodeState;
use engram::FactKind;
use engram::Memory;
use engram::NewMessage;
use engram::OfflineModel;
use engram::Role;
use engram::ToolCall;
use serde_json::Value;

type Mem = Memory<MemoryStore, OfflineModel, ManualClock>;

struct Sample {
    messages: Vec<Value>,
}

fn sample() -> Sample {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/sample/conversation.json"
    ))
    .expect("sample conversation");
    let v: Value = serde_json::from_str(&text).expect("sample JSON");
    Sample {
        messages: v["messages"].as_array().expect("messages").clone(),
    }
}

/// `2025-03-03T09:02:00Z` in ms since the epoch.
fn at(s: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().expect("digits");
    let day = engram::base::text::days_from_civil(n(0..4), n(5..7), n(8..10));
    ((day * 24 + n(11..13)) * 60 + n(14..16)) * 60_000
}

fn new_message(m: &Value) -> NewMessage {
    let content = m["content"].as_str().unwrap_or("");
    match m["role"].as_str().expect("role") {
        "user" => NewMessage::user(content),
        "tool" => NewMessage::tool_result(m["tool_call_id"].as_str().expect("call id"), content),
        _ => match m.get("tool_calls").and_then(Value::as_array) {
            Some(calls) => NewMessage::tool_calls(
                content,
                calls
                    .iter()
                    .map(|c| ToolCall {
                        id: c["id"].as_str().unwrap().into(),
                        name: c["name"].as_str().unwrap().into(),
                        arguments: c["arguments"].as_str().unwrap().into(),
                    })
                    .collect(),
            ),
            None => NewMessage::assistant(content),
        },
    }
}

/// The sample replayed on the offline model with its times as the clock.
fn replay(config: Config) -> (Mem, ManualClock) {
    let s = sample();
    let clock = ManualClock::at(at(s.messages[0]["at"].as_str().unwrap()));
    let mut memory = block_on(Memory::open(
        "offline",
        MemoryStore::new(),
        OfflineModel::new(),
        clock.clone(),
        config,
    ))
    .expect("open");
    for m in &s.messages {
        clock.set(at(m["at"].as_str().unwrap()).max(engram::Clock::now_ms(&clock)));
        let added = block_on(memory.add_message(new_message(m))).expect("add");
        assert!(
            added.degraded.is_empty(),
            "message {}: {:?}",
            m["n"],
            added.degraded
        );
    }
    block_on(memory.maintain()).expect("maintain");
    (memory, clock)
}

fn sample_config() -> Config {
    Config {
        ceiling_tokens: 1_200,
        recall_budget_tokens: 200,
        passage_tokens: 80,
        ..Config::default()
    }
}

#[test]
fn boundary_judgments_match_the_hand_labelled_topics() {
    let s = sample();
    let (mut memory, _) = replay(sample_config());
    let messages = block_on(memory.messages()).unwrap();
    let threshold = Config::default().boundary_threshold;
    let (mut tp, mut fp, mut fn_) = (0, 0, 0);
    let mut report = Vec::new();
    for (i, m) in messages.iter().enumerate().skip(1) {
        let Some(b) = m.boundary else { continue };
        let labelled = s.messages[i]["topic"] != s.messages[i - 1]["topic"];
        let judged = b >= threshold;
        match (labelled, judged) {
            (true, true) => tp += 1,
            (false, true) => {
                fp += 1;
                report.push(format!("false cut at {} ({b:.2})", m.id));
            }
            (true, false) => {
                fn_ += 1;
                report.push(format!("missed cut at {} ({b:.2})", m.id));
            }
            _ => {}
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    let f1 = 2.0 * precision * recall / (precision + recall).max(1e-9);
    println!(
        "offline boundaries on the sample: precision {precision:.2}, recall {recall:.2}, F1 {f1:.2} ({tp} right, {fp} false, {fn_} missed)"
    );
    assert!(f1 >= 0.7, "F1 {f1:.2}: {report:?}");
}

#[test]
fn the_sample_replays_on_the_offline_model_with_no_degraded_step() {
    let (mut memory, _) = replay(sample_config());
    let stats = block_on(memory.stats()).unwrap();
    assert_eq!(stats.model.degraded_steps, 0, "{:?}", stats.model);
    assert!(stats.model.failed.is_empty(), "{:?}", stats.model.failed);
    let episodes = block_on(memory.episodes()).unwrap();
    assert!(episodes.len() >= 6, "{} episodes", episodes.len());
    assert!(episodes.iter().any(|e| matches!(
        e.episode.state,
        EpisodeState::Sealed | EpisodeState::Forgotten
    )));
    let view = block_on(memory.view()).unwrap();
    assert!(
        view.tokens <= view.ceiling,
        "{} > {}",
        view.tokens,
        view.ceiling
    );
}

#[test]
fn notes_write_triples_with_milestones_and_retire_the_old_price() {
    let (mut memory, clock) = replay(sample_config());
    // A week later everything has left the view and been noted.
    clock.advance(7 * 24 * 3_600_000);
    block_on(memory.add_message(NewMessage::user("Back again after a week away."))).unwrap();
    block_on(memory.maintain()).unwrap();
    let facts = block_on(memory.facts()).unwrap();
    let entities = block_on(memory.entities()).unwrap();
    let name = |id: u64| entities.iter().find(|e| e.id == id).unwrap().name.clone();
    let listing: Vec<String> = facts
        .iter()
        .map(|f| {
            format!(
                "{} [{} | {} | {}] {:?} retired={}",
                f.sentence,
                name(f.subject),
                f.predicate,
                name(f.object),
                f.kind,
                f.retired.is_some()
            )
        })
        .collect();
    println!("{listing:#?}");
    assert!(facts.len() >= 10, "{listing:#?}");
    assert!(
        facts
            .iter()
            .any(|f| f.kind == FactKind::Decided && f.sentence.contains("$45")),
        "{listing:#?}"
    );
    assert!(
        facts
            .iter()
            .any(|f| f.retired.is_some() && f.sentence.contains("$39")),
        "the $39 price is retired by the $45 one: {listing:#?}"
    );
    assert!(
        facts
            .iter()
            .any(|f| name(f.subject) == "Packhaus" || name(f.object).contains("Packhaus")),
        "{listing:#?}"
    );
}

#[test]
fn a_question_about_an_early_topic_recalls_it() {
    let (mut memory, clock) = replay(sample_config());
    clock.advance(7 * 24 * 3_600_000);
    let added = block_on(memory.add_message(NewMessage::user(
        "Remind me: which tool did we pick for the beta sign-up form?",
    )))
    .unwrap();
    let block = added.recall.expect("a recall block");
    let view = block_on(memory.view()).unwrap();
    // The question's own block: the recall item just before it (an older
    // turn's block may be in view too).
    let at = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .expect("the question is in view");
    let recall = &view.items[at - 1];
    assert_eq!(
        recall.kind,
        engram::view::ItemKind::Recall,
        "the block is in view"
    );
    assert!(
        recall.text.contains("Tally"),
        "block {block}: {}",
        recall.text
    );
}

#[test]
fn the_offline_model_is_deterministic() {
    let (mut a, _) = replay(sample_config());
    let (mut b, _) = replay(sample_config());
    assert_eq!(block_on(a.export()).unwrap(), block_on(b.export()).unwrap());
}

#[test]
fn every_request_it_cannot_read_is_a_bad_answer_not_a_panic() {
    for task in engram::Task::ALL {
        let req = engram::llm::request(task, "garbage\n1. \n[x] y: z".into(), 1);
        // Either a well-formed answer or a BadAnswer error; never a panic.
        match engram::offline::complete(&req) {
            Ok(text) => assert!(serde_json::from_str::<Value>(&text).is_ok(), "{text}"),
            Err(e) => assert!(matches!(e, engram::ModelError::BadAnswer(_)), "{e}"),
        }
    }
    let _ = Role::User;
}
