//! A question about a forgotten episode's fact brings it back, dated, just
//! before the user message; facts already in the view are not recalled again.

mod recall_support;
use engram::view::ItemKind;
use recall_support::*;

#[test]
fn question_about_a_forgotten_fact_recalls_it_dated_before_the_message() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.turn(
        "My sister Ana lives in Porto now.",
        "Nice, Porto is lovely.",
    );
    r.forget(1);
    let added = r.ask("Remind me where my sister Ana lives?");
    let block = added.recall.expect("a block was recalled");
    let view = r.view();
    let msg = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .unwrap();
    let at = msg - 1;
    assert_eq!(
        view.items[at].kind,
        ItemKind::Recall,
        "block sits just before the user message"
    );
    let text = &view.items[at].text;
    assert!(
        text.contains("Ana, the user's sister, lives in Porto. (2026-03-02)"),
        "{text}"
    );
    let recalls = block_on_recalls(&mut r);
    assert_eq!(recalls[block as usize - 1].message, added.message);
}

fn block_on_recalls(r: &mut Rig) -> Vec<engram::types::recall::RecallBlock> {
    engram::testing::block_on(r.memory.recalls()).unwrap()
}

#[test]
fn facts_already_in_the_facts_block_are_not_recalled_again() {
    let mut r = rig(engram::Config {
        ceiling_tokens: 100,
        // Fades only at the ceiling: the reply must not fade ahead and
        // forget the sealed episode this test looks at.
        fade_ahead: false,
        ..config()
    });
    r.facts_for("Miso", vec![miso_fact()]);
    r.turn(
        "Our cat Miso is allergic to chicken.",
        "Noted, no chicken for Miso.",
    );
    r.turn(
        "Let's also plan the weekend hike in the mountains near the lake.",
        "Sure, which trail?",
    );
    // One sleep seals episode 1 (its fact enters the facts block) but does not forget it.
    r.clock.advance(DAY + MIN);
    r.turn("Good morning.", "Morning!");
    let eps = engram::testing::block_on(r.memory.episodes()).unwrap();
    assert_eq!(eps[0].episode.state, engram::EpisodeState::Sealed);
    assert!(r.view().items[0]
        .text
        .contains("Miso the cat is allergic to chicken."));
    let judged_before = r.model.calls_of(engram::Task::Relevance).len();
    let added = r.ask("What is Miso allergic to again?");
    // Not even a candidate of the walk (searched or reached by a hop).
    for req in &r.model.calls_of(engram::Task::Relevance)[judged_before..] {
        assert!(
            !req.content.contains("Miso the cat is allergic to chicken."),
            "{}",
            req.content
        );
    }
    // The sealed episode's passage may come back; its fact, already shown, does not.
    let blocks = block_on_recalls(&mut r);
    let recalled: Vec<_> = blocks
        .iter()
        .flat_map(|b| b.items.iter().map(|i| i.item))
        .collect();
    assert!(
        !recalled.contains(&engram::types::recall::Item::Fact(1)),
        "{recalled:?}"
    );
    if let Some(b) = added.recall {
        assert!(blocks[b as usize - 1]
            .items
            .iter()
            .all(|i| matches!(i.item, engram::types::recall::Item::Passage(_))));
    }
}
