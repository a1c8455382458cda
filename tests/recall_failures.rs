//! Recall degrades instead of failing: a failed split searches the whole
//! message, a failed walk keeps the top of the fused ranking within budget, a
//! failed distill keeps the block. The user's message is always kept. With
//! the model's split and walk off, a user message asks for nothing but its
//! boundary judgments; a recall block never pushes the view over the
//! ceiling. On-demand search returns as many items as asked for, and leaves
//! out only what the view holds for good.

mod recall_support;
use engram::testing::block_on;
use engram::Config;
use engram::ModelError;
use engram::NewMessage;
use engram::Task;
use engram::{types::recall::Item, types::recall::Judgment, types::recall::SearchOptions};
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
    // One sentence of more than 20 words: the split is asked for, and it has
    // no rule parts of its own.
    let added = r.ask(
        "Where does my sister Ana live these days now that she has moved away from the town where we both grew up",
    );
    assert_eq!(
        r.model.calls_of(Task::Split).len(),
        3,
        "every attempt failed"
    );
    let b =
        block_on(r.memory.recalls()).unwrap()[added.recall.expect("recalled") as usize - 1].clone();
    assert!(b.split_failed);
    assert!(b.parts.is_empty());
    // Every hit is of the whole message, or of the whole message expanded
    // by its best candidates' words (numbered one past the last part).
    assert!(b
        .items
        .iter()
        .flat_map(|i| &i.hits)
        .all(|h| h.query == 0 || h.query == b.parts.len() + 1));
    assert!(b.items.iter().flat_map(|i| &i.hits).any(|h| h.query == 0));
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
    // Every request fails from now on: errors, junk answers, broken vectors.
    r.model.set_faults(1.0, 7);
    let n = block_on(r.memory.messages()).unwrap().len();
    // Worth the model's split (one sentence of more than 20 words), so every
    // task of the round is asked.
    let text = "Where does my sister Ana live these days now that she has moved away from the town where we both grew up";
    let added = r.ask(text);
    assert_eq!(added.message as usize, n + 1);
    assert_eq!(
        block_on(r.memory.messages())
            .unwrap()
            .last()
            .unwrap()
            .content,
        text
    );
    for task in [Task::Segment, Task::Split, Task::Relevance] {
        assert!(
            added.degraded.iter().any(|d| d.task == task),
            "{task:?} degraded: {:?}",
            added.degraded
        );
    }
    if let Some(b) = added.recall {
        let b = &block_on(r.memory.recalls()).unwrap()[b as usize - 1];
        assert!(b.split_failed && b.walk_failed);
        assert!(b.items.iter().all(|i| i.judgment == Judgment::Fallback));
    }
}

/// `words` words: `lead` then filler.
fn words(lead: &str, words: usize) -> String {
    let mut s = lead.to_string();
    for _ in lead.split_whitespace().count()..words {
        s.push_str(" la");
    }
    s
}

#[test]
fn the_view_stays_within_the_ceiling_when_only_the_last_turns_and_a_recall_block_remain() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(1);
    // A long turn (the newest episode once the next user message cuts), then
    // a long question that recalls Ana: nothing older is left to fade.
    r.turn(
        &words("Let me tell you about the garden", 90),
        &words("Sure", 90),
    );
    let added = r.ask(&words("Where does my sister Ana live? Tell me", 80));
    assert!(added.recall.is_some(), "Ana's fact recalled");
    let view = r.view();
    let block: usize = view
        .items
        .iter()
        .filter(|i| i.kind == engram::view::ItemKind::Recall)
        .map(|i| i.tokens)
        .sum();
    assert!(
        view.tokens - block <= view.ceiling,
        "the messages alone fit: {} - {block}",
        view.tokens
    );
    assert!(
        view.tokens <= view.ceiling,
        "view of {} tokens over the ceiling of {} ({:?})",
        view.tokens,
        view.ceiling,
        view.over_ceiling
    );
}

#[test]
fn with_split_and_walk_off_a_user_message_makes_no_model_call() {
    let mut r = rig_with_history(Config {
        split_with_model: false,
        walk_with_model: false,
        ..config()
    });
    let waiting = block_on(r.memory.pending()).unwrap().unjudged;
    let before = r.model.calls().len();
    // Worth a split if the model's split were on (one sentence of more than
    // 20 words), and with candidates for the walk.
    let added = r.ask(
        "Where does my sister Ana live these days and what is Miso allergic to now that we feed him a new brand of food",
    );
    let calls = &r.model.calls()[before..];
    let tasks: Vec<Task> = calls.iter().map(|c| c.task).collect();
    assert!(
        tasks.is_empty(),
        "no model call before the view is ready: {tasks:?}"
    );
    // The judgments wait for after the reply: this message's with the others.
    let now_waiting = block_on(r.memory.pending()).unwrap().unjudged;
    assert_eq!(now_waiting.len(), waiting.len() + 1, "{now_waiting:?}");
    let b = &block_on(r.memory.recalls()).unwrap()[added.recall.expect("recalled") as usize - 1];
    assert!(!b.split_failed && !b.walk_failed);
    assert!(b.parts.is_empty(), "no split: {:?}", b.parts);
    assert!(!b.items.is_empty());
    assert!(b.items.iter().all(|i| i.judgment == Judgment::Ranked));
    let view = r.view();
    assert!(view.tokens <= view.ceiling);
}

#[test]
fn search_returns_more_than_thirty_items_when_the_limit_asks_for_it() {
    let mut r = rig(config());
    let facts: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            fact(
                "Lisbon offsite",
                "detail",
                &format!("item {i}"),
                &format!("The Lisbon offsite detail number {i} is settled."),
            )
        })
        .collect();
    r.facts_for("Lisbon offsite", facts);
    r.turn(
        "Lots of Lisbon offsite details to settle today.",
        "All settled.",
    );
    r.forget(1);
    assert_eq!(block_on(r.memory.facts()).unwrap().len(), 40);
    let search = |r: &mut Rig, limit: usize| {
        block_on(r.memory.search(
            "Lisbon offsite detail settled",
            SearchOptions {
                limit,
                ..SearchOptions::default()
            },
        ))
        .unwrap()
    };
    let hits = search(&mut r, 45);
    let facts = hits
        .iter()
        .filter(|h| matches!(h.item, Item::Fact(_)))
        .count();
    assert!(hits.len() > 30, "{} hits", hits.len());
    assert_eq!(facts, 40, "every fact found");
    let distinct: std::collections::BTreeSet<_> = hits.iter().map(|h| h.item).collect();
    assert_eq!(distinct.len(), hits.len(), "no item twice");
    assert_eq!(search(&mut r, 35).len(), 35, "exactly the limit");
}

#[test]
fn search_without_in_view_items_still_returns_facts_shown_only_by_a_recall_block() {
    let mut r = rig_with_history(config());
    // (Shares no word with what is remembered: nothing recalled for it.)
    r.turn("Bruno is my brother, based in Lyon.", "Good to know.");
    let added = r.ask("Where does my sister Ana live?");
    let b = &block_on(r.memory.recalls()).unwrap()[added.recall.expect("recalled") as usize - 1];
    assert!(b.shown().contains(&Item::Fact(1)), "Ana's fact is shown");
    // A fact of an episode whose messages are in view: the view holds it for good.
    let bruno = block_on(r.memory.episodes())
        .unwrap()
        .into_iter()
        .rev()
        .find(|e| e.episode.state == engram::EpisodeState::Live)
        .unwrap()
        .episode
        .id;
    let noted = block_on(r.memory.note(engram::NoteArgs {
        episode: Some(bruno),
        facts: vec![serde_json::from_value(fact(
            "Bruno",
            "lives in",
            "Lyon",
            "Bruno, the user's brother, lives in Lyon.",
        ))
        .unwrap()],
    }))
    .unwrap();
    let bruno_fact = Item::Fact(noted.added[0]);
    let search = |r: &mut Rig, include_in_view: bool| -> Vec<Item> {
        block_on(r.memory.search(
            "Ana Porto Bruno Lyon",
            SearchOptions {
                include_in_view,
                ..SearchOptions::default()
            },
        ))
        .unwrap()
        .into_iter()
        .map(|h| h.item)
        .collect()
    };
    let all = search(&mut r, true);
    assert!(
        all.contains(&Item::Fact(1)) && all.contains(&bruno_fact),
        "{all:?}"
    );
    let out_of_view = search(&mut r, false);
    assert!(
        out_of_view.contains(&Item::Fact(1)),
        "a recall block shows it for one turn only: {out_of_view:?}"
    );
    assert!(!out_of_view.contains(&bruno_fact), "{out_of_view:?}");
}
