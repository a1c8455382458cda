//! The view: the facts block, then the messages of live and leaving
//! episodes (and the open stretch) in order, a warning after each leaving
//! episode; returned structured (role, text, ids, tokens) and rendered as an
//! OpenAI-style `messages` array with tool calls and their ids kept.

mod common;

use common::*;
use engram::view::{ItemKind, FACTS_HEADING};
use engram::EpisodeState;
use engram::FactKind;
use engram::NewMessage;
use engram::Role;
use engram::Task;
use engram::ToolCall;
use serde_json::json;

/// Ceiling 400: two sealed episodes with facts, a leaving one, live ones.
fn scene() -> Fx {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    notes_for(
        &fx.model,
        vec![
            (
                "garden",
                vec![
                    fact(
                        "Garden",
                        "needs",
                        "water",
                        "The garden needs water every evening.",
                    ),
                    kind_fact(
                        FactKind::Decided,
                        "Garden",
                        "gets",
                        "drip irrigation",
                        "We decided on drip irrigation for the garden.",
                    ),
                ],
            ),
            (
                "taxes",
                vec![fact(
                    "Tax return",
                    "is due on",
                    "Friday",
                    "The tax return is due on Friday.",
                )],
            ),
        ],
    );
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 50, 50);
    }
    fx.user(&sized(&format!("{NEW} dinner"), 50));
    fx.assistant(&sized("dinner", 50));
    assert_eq!(
        fx.states(),
        vec![
            EpisodeState::Sealed,
            EpisodeState::Sealed,
            EpisodeState::Live
        ]
    );
    fx
}

#[test]
fn the_view_is_the_facts_block_then_the_messages_in_order() {
    let mut fx = scene();
    let view = fx.view();
    let kinds: Vec<ItemKind> = view.items.iter().map(|i| i.kind).collect();
    assert_eq!(kinds[0], ItemKind::Facts);
    assert!(kinds[1..].iter().all(|k| *k == ItemKind::Message));

    let block = &view.items[0];
    assert_eq!(block.role, Role::System);
    assert!(block.text.starts_with(FACTS_HEADING));
    assert_eq!(block.facts, vec![1, 2, 3]);
    for f in fx.facts() {
        assert!(block.text.contains(&f.sentence), "{}", block.text);
    }
    // Messages of the live episode (5-6) and the open stretch (7-8), whole.
    let msgs = fx.messages();
    let items = &view.items[1..];
    let ids: Vec<u64> = items.iter().map(|i| i.message.unwrap()).collect();
    assert_eq!(ids, vec![5, 6, 7, 8]);
    let episodes: Vec<Option<u64>> = items.iter().map(|i| i.episode).collect();
    assert_eq!(episodes, vec![Some(3), Some(3), None, None]);
    for it in items {
        let m = &msgs[(it.message.unwrap() - 1) as usize];
        assert_eq!(
            (it.role, &it.text, it.tokens),
            (m.role, &m.content, m.tokens)
        );
    }
    // Its size is the sum of its items.
    assert_eq!(
        view.tokens,
        view.items.iter().map(|i| i.tokens).sum::<usize>()
    );
    assert_eq!(view.ceiling, 400);
    assert_eq!(fx.stats().view_tokens, view.tokens);
}

#[test]
fn the_facts_block_groups_by_entity_and_puts_milestones_first() {
    let mut fx = scene();
    let text = fx.view().items[0].text.clone();
    // The garden group holds the milestone first, then the plain fact.
    let decided = text
        .find("- [decided] We decided on drip irrigation")
        .expect(&text);
    let water = text.find("- The garden needs water").expect(&text);
    let garden = text.find("\nGarden:\n").expect(&text);
    let taxes = text.find("\nTax return:\n").expect(&text);
    assert!(garden < decided && decided < water, "{text}");
    // A group with a milestone comes before one without.
    assert!(water < taxes, "{text}");
    // Each fact is dated with the day it was said.
    assert!(text.contains("(2025-11-24)"), "{text}");
}

#[test]
fn leaving_episodes_stay_in_view_with_a_warning() {
    let mut fx = scene();
    fx.turn("car", 20, 20);
    // A day later this message sleeps: the sealed episodes are forgotten,
    // episode 3 leaves. It stays in view, warned, until after the reply.
    fx.minutes(25 * 60);
    assert!(fx.user(&sized(&format!("{NEW} music"), 20)).slept);
    let states = fx.states();
    assert_eq!(
        states,
        vec![
            EpisodeState::Forgotten,
            EpisodeState::Forgotten,
            EpisodeState::Leaving,
            EpisodeState::Live,
            EpisodeState::Live
        ]
    );
    assert_eq!(
        fx.model.calls_of(Task::Note).len(),
        2,
        "fade 1's notes only"
    );
    let leaving = 3;
    let view = fx.view();
    let kinds: Vec<(ItemKind, Option<u64>)> =
        view.items.iter().map(|i| (i.kind, i.episode)).collect();
    let w = kinds
        .iter()
        .position(|k| *k == (ItemKind::Warning, Some(leaving)))
        .expect("warning");
    // The leaving episode's messages come right before its warning.
    let e = fx.episode(leaving).episode;
    let before: Vec<u64> = view.items[..w]
        .iter()
        .rev()
        .take(2)
        .filter_map(|i| i.message)
        .collect();
    assert_eq!(before, vec![e.last, e.first]);
    assert_eq!(
        view.items
            .iter()
            .filter(|i| i.kind == ItemKind::Warning)
            .count(),
        1
    );
    // The reply's call writes its note: sealed, out of view, no warning.
    fx.minutes(1);
    fx.assistant(&sized("music", 20));
    assert_eq!(fx.episode(leaving).episode.state, EpisodeState::Sealed);
    let view = fx.view();
    assert!(view.items.iter().all(|i| i.episode != Some(leaving)));
    assert!(view.items.iter().all(|i| i.kind != ItemKind::Warning));
}

#[test]
fn the_view_renders_as_openai_messages_with_tool_calls() {
    let mut fx = Fx::new(config(4_000));
    fx.add(NewMessage::system("You are a travel agent."));
    fx.user("Hotels in Lisbon?");
    let call = ToolCall {
        id: "call_7".into(),
        name: "search_hotels".into(),
        arguments: r#"{"city":"Lisbon"}"#.into(),
    };
    fx.add(NewMessage::tool_calls("", vec![call]));
    fx.add(NewMessage::tool_result("call_7", "Casa Alfama: 95 EUR."));
    fx.assistant("Casa Alfama, 95 EUR a night.");
    let rendered = fx.view().to_openai();
    assert_eq!(
        serde_json::Value::Array(rendered),
        json!([
            {"role": "system", "content": "You are a travel agent."},
            {"role": "user", "content": "Hotels in Lisbon?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_7", "type": "function",
                 "function": {"name": "search_hotels", "arguments": "{\"city\":\"Lisbon\"}"}}
            ]},
            {"role": "tool", "content": "Casa Alfama: 95 EUR.", "tool_call_id": "call_7"},
            {"role": "assistant", "content": "Casa Alfama, 95 EUR a night."}
        ])
    );
    // The structured view keeps the same ids.
    let view = fx.view();
    assert_eq!(view.items[2].tool_calls[0].id, "call_7");
    assert_eq!(view.items[3].tool_call_id.as_deref(), Some("call_7"));
}

#[test]
fn an_empty_memory_has_an_empty_view() {
    let mut fx = Fx::new(config(400));
    let view = fx.view();
    assert!(view.items.is_empty());
    assert_eq!(view.tokens, 0);
    assert!(view.to_openai().is_empty());
}
