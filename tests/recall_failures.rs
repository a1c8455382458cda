//! Recall degrades instead of failing: a failed split searches the whole
//! message, a failed walk keeps the top of the fused ranking within budget, a
//! failed distill keeps the block. The user's message is always kept.

mod recall_support;
use engram::recall::Judgment;
use engram::testing::block_on;
use engram::{Config, ModelError, NewMessage, Task};
use recall_support::*;

fn rig_with_history(config: Config) -> Rig {
    let mut r = rig(config);
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.facts_for("Miso", vec![miso_fact()]);
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.turn("Our cat Miso is allergic to chicken.", "Noted.");
    r.forget(2);
    r
}

fn down(r: &Rig, task: Task, times: usize) {
    for _ in 0..times {
        r.model
            .push(task, Err(ModelError::Unavailable("down".into())));
    }
}

#[test]
fn a_failed_split_searches_the_whole_message() {
    let mut r = rig_with_history(config());
    down(&r, Task::Split, 3);
    let added = r.ask("Where does my sister Ana live?");
    let b =
        block_on(r.memory.recalls()).unwrap()[added.recall.expect("recalled") as usize - 1].clone();
    assert!(b.split_failed);
    assert!(b.parts.is_empty());
    assert!(b.items.iter().flat_map(|i| &i.hits).all(|h| h.query == 0));
}

#[test]
fn a_failed_walk_keeps_the_top_of_the_fused_ranking_within_budget() {
    let mut r = rig_with_history(Config {
        recall_budget_tokens: 50,
        ..config()
    });
    down(&r, Task::Relevance, 3);
    let added = r.ask("Where does my sister Ana live? And Miso?");
    let b =
        block_on(r.memory.recalls()).unwrap()[added.recall.expect("recalled") as usize - 1].clone();
    assert!(b.walk_failed);
    assert!(b.items.iter().all(|i| i.judgment == Judgment::Fallback));
    let ranks: Vec<usize> = b.items.iter().filter_map(|i| i.fused_rank).collect();
    assert_eq!(
        ranks[0], 1,
        "the best fused candidate is kept first: {ranks:?}"
    );
    let view = r.view();
    let block = view
        .items
        .iter()
        .find(|i| i.kind == engram::view::ItemKind::Recall)
        .unwrap();
    assert!(block.tokens <= 50);
}

#[test]
fn a_failed_distill_keeps_the_block() {
    let mut r = rig_with_history(config());
    let added = r.ask("Where does my sister Ana live?");
    let shown = block_on(r.memory.recalls()).unwrap()[added.recall.unwrap() as usize - 1].shown();
    down(&r, Task::Distill, 3);
    r.clock.advance(MIN);
    let reply = block_on(r.memory.add_message(NewMessage::assistant("In Porto."))).unwrap();
    let (_, d) = reply.distilled.unwrap();
    assert!(d.failed);
    assert_eq!(d.kept, shown);
    let view = r.view();
    let msg = view
        .items
        .iter()
        .position(|i| i.message == Some(added.message))
        .unwrap();
    assert_eq!(view.items[msg - 1].kind, engram::view::ItemKind::Recall);
}

#[test]
fn recall_with_every_model_call_failing_still_keeps_the_message() {
    let mut r = rig_with_history(config());
    for t in [Task::Segment, Task::Split, Task::Relevance] {
        down(&r, t, 3);
    }
    let n = block_on(r.memory.messages()).unwrap().len();
    let added = r.ask("Where does my sister Ana live?");
    assert_eq!(added.message as usize, n + 1);
    assert_eq!(
        block_on(r.memory.messages())
            .unwrap()
            .last()
            .unwrap()
            .content,
        "Where does my sister Ana live?"
    );
}
