//! Distill: once its turn is over (after the reply, or at the next user
//! message) the recall block keeps only what mattered, or is removed; kept
//! facts trace their source episode, whose activation rises. Blocks in view
//! keep to their share of the ceiling: the oldest give way.

mod recall_support;
use engram::testing::block_on;
use engram::types::recall::Item;
use engram::types::trace::TraceCause;
use engram::view::ItemKind;
use engram::NewMessage;
use engram::Task;
use recall_support::*;
use serde_json::json;

fn recalled_rig() -> (Rig, engram::Added) {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(1);
    let added = r.ask("Where does my sister Ana live?");
    assert!(added.recall.is_some());
    (r, added)
}

#[test]
fn distill_removes_a_block_nothing_in_the_turn_used() {
    let (mut r, added) = recalled_rig();
    r.model
        .push(Task::Distill, Ok(json!({"kept": []}).to_string()));
    r.clock.advance(MIN);
    let reply = block_on(
        r.memory
            .add_message(NewMessage::assistant("I don't know, sorry.")),
    )
    .unwrap();
    let (block, d) = reply.distilled.expect("the reply ended the turn");
    assert_eq!(Some(block), added.recall);
    assert!(d.kept.is_empty() && !d.failed);
    let view = r.view();
    let msg = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .unwrap();
    assert_ne!(
        view.items[msg - 1].kind,
        ItemKind::Recall,
        "the block is gone"
    );
    assert!(block_on(r.memory.traces())
        .unwrap()
        .iter()
        .all(|t| !matches!(t.cause, TraceCause::Recall(_))));
}

#[test]
fn distill_keeps_used_facts_and_traces_their_episodes() {
    let (mut r, added) = recalled_rig();
    let block = block_on(r.memory.recalls()).unwrap()[added.recall.unwrap() as usize - 1].clone();
    let n = block
        .shown()
        .iter()
        .position(|i| *i == Item::Fact(1))
        .expect("fact 1 shown")
        + 1;
    r.model
        .push(Task::Distill, Ok(json!({ "kept": [n] }).to_string()));
    let before = block_on(r.memory.episodes()).unwrap()[0].clone();
    r.clock.advance(MIN);
    let reply = block_on(
        r.memory
            .add_message(NewMessage::assistant("She lives in Porto.")),
    )
    .unwrap();
    let (_, d) = reply.distilled.unwrap();
    assert_eq!(d.kept, vec![Item::Fact(1)]);
    let after = block_on(r.memory.episodes()).unwrap()[0].clone();
    assert!(
        after.activation > before.activation + 0.9,
        "{} -> {}",
        before.activation,
        after.activation
    );
    assert_eq!(after.significance, before.significance + 1.0);
    let traces = block_on(r.memory.traces()).unwrap();
    let t = traces
        .iter()
        .find(|t| t.cause == TraceCause::Recall(1))
        .expect("recall trace");
    assert_eq!((t.episode, t.yes, t.strength), (1, true, 1.0));
    let view = r.view();
    let msg = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .unwrap();
    let kept = &view.items[msg - 1];
    assert_eq!(kept.kind, ItemKind::Recall);
    assert_eq!(kept.facts, vec![1]);
    assert!(
        !kept.text.contains("From the conversation"),
        "passages not kept: {}",
        kept.text
    );
    let why = block_on(r.memory.explain_recall(1)).unwrap();
    assert_eq!(why[0].distill_kept, Some(true));
    assert!(why[0].hits.iter().any(|h| h.rank == 1), "{:?}", why[0].hits);
}

#[test]
fn a_reply_that_calls_a_tool_does_not_end_the_turn_but_end_turn_does() {
    let (mut r, _) = recalled_rig();
    r.clock.advance(MIN);
    let call = engram::ToolCall {
        id: "c1".into(),
        name: "lookup".into(),
        arguments: "{}".into(),
    };
    let a = block_on(r.memory.add_message(NewMessage::tool_calls("", vec![call]))).unwrap();
    assert!(a.distilled.is_none());
    let t = block_on(r.memory.add_message(NewMessage::tool_result("c1", "Porto"))).unwrap();
    assert!(t.distilled.is_none());
    let ended = block_on(r.memory.end_turn()).unwrap();
    assert!(ended.is_some());
    assert_eq!(
        block_on(r.memory.end_turn()).unwrap(),
        None,
        "nothing left to distill"
    );
}

#[test]
fn distill_runs_for_a_block_whose_user_message_is_followed_by_another_user_message() {
    let (mut r, first) = recalled_rig();
    let block = first.recall.unwrap();
    let shown = block_on(r.memory.recalls()).unwrap()[block as usize - 1].shown();
    let n = shown.iter().position(|i| *i == Item::Fact(1)).unwrap() + 1;
    r.model
        .push(Task::Distill, Ok(json!({ "kept": [n] }).to_string()));
    let before = r.model.calls_of(Task::Distill).len();
    // No reply: the user writes again. The turn of the first message is over,
    // and its block is distilled in the round of the second.
    let second = r.ask("Also, is it far from Lisbon?");
    let distills = &r.model.calls_of(Task::Distill)[before..];
    assert_eq!(
        distills.len(),
        1,
        "one distill, in the second message's round"
    );
    assert!(
        distills[0]
            .content
            .starts_with("The turn:\nuser: Where does my sister Ana live?\n\nRecalled items:\n"),
        "the turn is the first user message alone:\n{}",
        distills[0].content
    );
    let b = block_on(r.memory.recalls()).unwrap()[block as usize - 1].clone();
    let d = b.distilled.expect("distilled");
    assert_eq!((d.kept, d.failed), (vec![Item::Fact(1)], false));
    assert!(block_on(r.memory.traces())
        .unwrap()
        .iter()
        .any(|t| t.cause == TraceCause::Recall(1) && t.episode == 1));
    let view = r.view();
    let kept = block_before(&view, first.message).expect("the block stays, distilled");
    assert_eq!(kept.facts, vec![1]);
    assert!(view.items.iter().any(|i| i.message == Some(second.message)));
    // Nothing waits for distill: the second message's turn is still open.
    let pending = block_on(r.memory.pending()).unwrap();
    assert_eq!(pending.undistilled, Vec::<u64>::new());
}

/// The recall block shown just before user message `message`, if any.
fn block_before(view: &engram::View, message: u64) -> Option<&engram::view::ViewItem> {
    let at = view.items.iter().position(|i| i.message == Some(message))?;
    view.items[..at]
        .last()
        .filter(|i| i.kind == ItemKind::Recall)
}

/// A rig with four forgotten facts, each a question away.
fn four_facts_forgotten(config: engram::Config) -> Rig {
    let mut r = rig(config);
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.facts_for("Miso", vec![miso_fact()]);
    r.facts_for(
        "brother Bruno",
        vec![fact(
            "Bruno",
            "lives in",
            "Lyon",
            "Bruno, the user's brother, lives in Lyon.",
        )],
    );
    r.facts_for(
        "Fiat",
        vec![fact(
            "the user's car",
            "is",
            "a blue Fiat",
            "The user's car is a blue Fiat.",
        )],
    );
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.turn("Our cat Miso is allergic to chicken.", "Noted.");
    r.turn("My brother Bruno lives in Lyon.", "Good to know.");
    r.turn("I drive a blue Fiat these days.", "Nice car.");
    for id in 1..=4 {
        r.forget(id);
    }
    r
}

#[test]
fn recall_blocks_in_view_give_way_oldest_first_beyond_their_share() {
    let config = engram::Config {
        recall_share: 0.25,
        ..config()
    };
    let share = (config.ceiling_tokens as f64 * config.recall_share) as usize;
    let mut r = four_facts_forgotten(config);
    let questions = [
        ("Where does my sister Ana live?", 1),
        ("What is Miso allergic to?", 2),
        ("Where does my brother Bruno live?", 3),
        ("What car do I drive, the Fiat?", 4),
    ];
    let mut blocks = Vec::new();
    for (q, fact_id) in questions {
        let added = r.turn(q, "Let me think.");
        let b = added.recall.unwrap_or_else(|| panic!("a block for {q:?}"));
        let block = &block_on(r.memory.recalls()).unwrap()[b as usize - 1];
        assert!(block.shown().contains(&Item::Fact(fact_id)), "{q:?}");
        blocks.push((b, fact_id));
        let view = r.view();
        assert!(
            view.tokens <= view.ceiling,
            "{} > {}",
            view.tokens,
            view.ceiling
        );
        let recall: usize = view
            .items
            .iter()
            .filter(|i| i.kind == ItemKind::Recall)
            .map(|i| i.tokens)
            .sum();
        assert!(recall <= share, "recall blocks take {recall} > {share}");
        // The newest block stays; those that gave way are the oldest ones.
        let all = block_on(r.memory.recalls()).unwrap();
        assert!(all[b as usize - 1].gave_way.is_none(), "the newest stays");
        let gone: Vec<bool> = blocks
            .iter()
            .map(|(b, _)| all[*b as usize - 1].gave_way.is_some())
            .collect();
        assert!(
            gone.windows(2).all(|w| w[0] || !w[1]),
            "oldest first: {gone:?}"
        );
        for (b, _) in &blocks {
            let block = &all[*b as usize - 1];
            assert_eq!(
                block_before(&view, block.message).is_some(),
                block.gave_way.is_none(),
                "block {b} is shown unless it gave way"
            );
        }
    }
    let all = block_on(r.memory.recalls()).unwrap();
    let (first, fact_id) = blocks[0];
    let at = all[first as usize - 1]
        .gave_way
        .expect("the oldest block gave way");
    let why = block_on(r.memory.explain_recall(fact_id)).unwrap();
    let x = why.iter().find(|x| x.block == first).unwrap();
    assert!(
        x.summary.contains("gave way") && x.summary.contains(&engram::base::text::format_time(at)),
        "{}",
        x.summary
    );
}
