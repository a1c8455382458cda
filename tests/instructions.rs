//! The host's own instructions (persona, tool policy): pinned first in every
//! view as a system message, counted toward the ceiling, never faded,
//! changed by an event, refused when too large (nothing written).

mod common;

use common::*;
use engram::testing::block_on;
use engram::view::ItemKind;
use engram::Error;
use engram::Role;

const PERSONA: &str =
    "You are Robin, a patient trip-planning assistant. Use tools only when asked.";

#[test]
fn instructions_render_first_and_count_toward_the_ceiling() {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    assert!(block_on(fx.memory.set_instructions(PERSONA)).unwrap());
    fx.turn("lisbon", 40, 40);
    let view = fx.view();
    let first = &view.items[0];
    assert_eq!(
        (first.kind, first.role),
        (ItemKind::Instructions, Role::System)
    );
    assert_eq!(first.text, PERSONA);
    let sum: usize = view.items.iter().map(|i| i.tokens).sum();
    assert_eq!(view.tokens, sum);
    assert_eq!(view.tokens, 80 + first.tokens);
    assert_eq!(block_on(fx.memory.view_tokens()).unwrap(), view.tokens);
    assert_eq!(view.to_openai()[0]["role"], "system");
}

#[test]
fn instructions_never_fade() {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    block_on(fx.memory.set_instructions(PERSONA)).unwrap();
    for t in 0..30 {
        fx.turn(&format!("topic{t}"), 40, 40);
        let view = fx.view();
        assert_eq!(view.items[0].kind, ItemKind::Instructions, "turn {t}");
        assert!(view.tokens <= 400, "turn {t}: {} tokens", view.tokens);
    }
    let stats = fx.stats();
    assert!(
        stats.fades > 3,
        "the conversation faded around them: {} fades",
        stats.fades
    );
}

#[test]
fn changing_instructions_is_an_event_and_the_past_view_keeps_the_old_ones() {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    block_on(fx.memory.set_instructions(PERSONA)).unwrap();
    fx.turn("lisbon", 40, 40);
    let before = fx.now();
    fx.minutes(5);
    assert!(block_on(fx.memory.set_instructions("Answer in French.")).unwrap());
    // The same text again changes nothing and writes nothing.
    let entries = fx.stats().log_entries;
    assert!(!block_on(fx.memory.set_instructions("Answer in French.")).unwrap());
    assert_eq!(fx.stats().log_entries, entries);
    assert_eq!(fx.view().items[0].text, "Answer in French.");
    let past = block_on(fx.memory.view_at(before)).unwrap();
    assert_eq!(past.items[0].text, PERSONA);
    assert!(fx.export().contains("\"instructions_set\""));
    // Another handle reads them from the store.
    let mut other = fx.reopen();
    assert_eq!(
        block_on(other.memory.instructions()).unwrap().as_deref(),
        Some("Answer in French.")
    );
    // An empty text removes them.
    assert!(block_on(fx.memory.set_instructions("")).unwrap());
    assert!(fx
        .view()
        .items
        .iter()
        .all(|i| i.kind != ItemKind::Instructions));
}

#[test]
fn oversize_instructions_are_refused_and_write_nothing() {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    fx.turn("lisbon", 40, 40);
    let entries = fx.stats().log_entries;
    let long = "word ".repeat(300); // over half of the 400-token ceiling
    match block_on(fx.memory.set_instructions(&long)) {
        Err(Error::InvalidInput(m)) => assert!(m.contains("half the ceiling"), "{m}"),
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    let huge = "x".repeat(70_000);
    assert!(matches!(
        block_on(fx.memory.set_instructions(&huge)),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(fx.stats().log_entries, entries);
    assert!(block_on(fx.memory.instructions()).unwrap().is_none());
}

#[test]
fn longer_instructions_make_the_conversation_fade() {
    let mut fx = Fx::new(config(400));
    standard_segment(&fx.model);
    for t in 0..4 {
        fx.turn(&format!("topic{t}"), 40, 40);
    }
    assert!(fx.view().tokens <= 400);
    let fades = fx.stats().fades;
    block_on(fx.memory.set_instructions(&"policy ".repeat(100))).unwrap();
    let view = fx.view();
    assert!(view.tokens <= 400, "{} tokens", view.tokens);
    assert!(fx.stats().fades > fades, "a fade made room");
}
