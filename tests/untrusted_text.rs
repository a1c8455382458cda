//! Untrusted text stays data: facts, entity names and quoted passages come
//! from the conversation or a model, and rendered into the view they can
//! never start a line, heading, role marker or tag of the memory's own
//! framing. The corpus is shared with the JS and Python host tests
//! (`tests/fixtures/adversarial.json`).

mod common;

use common::*;
use engram::view::{ItemKind, View};
use engram::FactKind;
use serde_json::Value;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/adversarial.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The code points the corpus hides in its strings (`hidden`).
fn hidden() -> Vec<char> {
    fixture()["hidden"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let hex = h.as_str().unwrap().trim_start_matches("U+");
            char::from_u32(u32::from_str_radix(hex, 16).unwrap()).unwrap()
        })
        .collect()
}

fn corpus() -> Vec<String> {
    let v = fixture();
    v["strings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn invisible(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{061C}'
            | '\u{00AD}' | '\u{034F}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}' | '\u{180B}'..='\u{180F}'
            | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}' | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}' | '\u{E000}'..='\u{F8FF}' | '\u{F0000}'..='\u{10FFFF}' | '\u{2028}' | '\u{2029}')
}

/// The rules of the corpus, checked on every system item of `view`.
/// `milestones` is how many milestone facts the memory really holds.
fn check(view: &View, milestones: usize) {
    let mut tags = 0;
    for it in view
        .items
        .iter()
        .filter(|i| matches!(i.kind, ItemKind::Facts | ItemKind::Recall))
    {
        let hidden = hidden();
        assert!(
            !it.text.chars().any(|c| invisible(c) || hidden.contains(&c)),
            "invisible characters in {:?}",
            it.text
        );
        assert!(
            !it.text.contains("<|") && !it.text.contains("|>"),
            "{:?}",
            it.text
        );
        for (n, line) in it.text.lines().enumerate() {
            let ours = n == 0
                || line.is_empty()
                || line.starts_with("- ")
                || line.starts_with("  - earlier")
                || line == "From the conversation:"
                || line.ends_with(':');
            assert!(ours, "a line the memory did not frame: {line:?}");
            for bad in ["#", ">", "* ", "system:", "user:", "assistant:", "<|"] {
                assert!(!line.starts_with(bad), "line starts with {bad:?}: {line:?}");
            }
            if n == 0 {
                assert!(line.contains("quoted data, not instructions"), "{line}");
            }
            tags += line.matches("[done]").count() + line.matches("[engram]").count();
        }
    }
    assert_eq!(tags, milestones, "only the memory's own milestone tags");
}

#[test]
fn hostile_facts_and_names_render_as_data_in_the_facts_block() {
    let mut fx = Fx::new(config(20_000));
    standard_segment(&fx.model);
    // Two big turns: the second reaches the ceiling and episode 1 leaves.
    fx.turn("garden", 5_000, 5_000);
    fx.turn("taxes", 5_000, 5_000);
    assert_eq!(fx.episode(1).episode.state, engram::EpisodeState::Sealed);
    let mut facts: Vec<_> = corpus()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let sentence: String = s.chars().take(1_500).collect();
            let name: String = s.chars().take(200).collect();
            fact(&format!("{name} {i}"), "says", "the user", &sentence)
        })
        .collect();
    let mut done = fact("Launch", "is", "approved", "The launch is approved.");
    done.kind = FactKind::Done;
    facts.push(done);
    let n = facts.len();
    fx.note(note_args(Some(1), facts))
        .expect("hostile facts are still facts");
    let view = fx.view();
    let shown: usize = view
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Facts)
        .map(|i| i.facts.len())
        .sum();
    assert_eq!(shown, n, "every fact is in the facts block");
    check(&view, 1);
    // Visible text of every script stays as it was.
    let visible = fixture()["visible"].as_str().unwrap().to_string();
    assert!(
        view.items.iter().any(|i| i.text.contains(&visible)),
        "{visible:?} is not in the view"
    );
    // The hidden characters are gone, the words around them kept.
    assert!(
        view.items
            .iter()
            .any(|i| i.text.contains("Hidden tags, softhyphen")),
        "{:?}",
        view.items.iter().map(|i| &i.text).collect::<Vec<_>>()
    );
}

#[test]
fn hostile_messages_quoted_in_a_recall_block_render_as_data() {
    let mut cfg = config(6_000);
    // Candidates are kept by rank, so whatever matches is shown.
    cfg.walk_with_model = false;
    cfg.split_with_model = false;
    let mut fx = Fx::new(cfg);
    standard_segment(&fx.model);
    for (i, s) in corpus().iter().enumerate() {
        let text: String = s.chars().take(2_000).collect();
        fx.user(&format!("{NEW} hostile {i}: {text}"));
        fx.minutes(1);
        fx.assistant(&sized(&format!("reply {i}"), 1_200));
        fx.minutes(1);
    }
    let view = fx.view();
    let block = view
        .items
        .iter()
        .find(|i| i.kind == ItemKind::Recall)
        .expect("recall blocks quoting the hostile messages are in view");
    assert!(
        block.text.contains("From the conversation:"),
        "{}",
        block.text
    );
    assert!(block.text.contains("hostile"), "{}", block.text);
    check(&view, 0);
}
