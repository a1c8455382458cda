//! A real chat turn against a slow model: every `complete` and `embed` call
//! waits until the driver releases it, so the test counts sequential round
//! trips instead of timing them. A user message's view is ready after one
//! round of `complete` calls (its judgment, the relevance walk and the split
//! go out together); with the model's split and walk off, after none; a
//! reply makes no call before it is committed.

mod long_support;

use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::Config;
use engram::Memory;
use engram::Role;
use long_support::*;

fn replay(model_recall: bool) -> (Vec<RoundCount>, Vec<RoundCount>) {
    let (conv, ceiling) = sample();
    let config = Config {
        ceiling_tokens: ceiling,
        max_episode_tokens: 300,
        target_episode_tokens: 150,
        split_with_model: model_recall,
        walk_with_model: model_recall,
        // The reply's own work runs in an explicit maintain, counted apart.
        maintain_after_reply: false,
        ..Config::default()
    };
    let clock = ManualClock::at(conv.turns[0].at);
    let mut memory = block_on(Memory::open(
        "rounds",
        MemoryStore::new(),
        Rounds(PolicyModel::new(Policy::Realistic)),
        clock.clone(),
        config,
    ))
    .unwrap();
    let (mut users, mut replies) = (Vec::new(), Vec::new());
    for turn in &conv.turns {
        clock.set(turn.at);
        let (added, rounds) = drive(memory.add_message(turn.message()));
        added.unwrap();
        match turn.role {
            Role::User => users.push(rounds),
            _ => replies.push(rounds),
        }
        let (done, _) = drive(memory.maintain());
        done.unwrap();
    }
    (users, replies)
}

#[test]
fn a_user_message_waits_on_one_round_of_model_calls() {
    let (users, replies) = replay(true);
    let recalled = users.iter().filter(|r| r.complete_rounds == 1).count();
    assert!(
        recalled > users.len() / 2,
        "most turns ask the model: {recalled}"
    );
    for (i, r) in users.iter().enumerate() {
        assert!(r.complete_rounds <= 1, "user message {i}: {r:?}");
    }
    // A reply is committed without asking the model anything.
    for (i, r) in replies.iter().enumerate() {
        assert_eq!(r.calls, 0, "reply {i}: {r:?}");
    }
}

#[test]
fn with_split_and_walk_off_a_user_message_waits_on_no_model_call() {
    let (users, _) = replay(false);
    for (i, r) in users.iter().enumerate() {
        assert_eq!(r.complete_rounds, 0, "user message {i}: {r:?}");
    }
}
