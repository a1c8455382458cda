//! Episodes are made of whole messages; where one concept ends is a judgment
//! made for every message (a user message's in its own round, a reply's
//! later, with the next user message or an explicit maintain); sizes only
//! decide how many cuts there are; a strong judgment cuts under the floor.

mod common;

use common::*;
use engram::Config;
use engram::NewMessage;
use engram::Task;

/// Boundaries by marker: a message whose text starts with `#k` gets
/// `judged[k]`.
fn judged_by_index(fx: &Fx, judged: Vec<f32>) {
    segment_by(&fx.model, move |text| {
        let k: usize = text
            .strip_prefix('#')
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("message starts with #k");
        judged[k]
    });
}

fn sized_config(target: usize, max: usize) -> Config {
    Config {
        target_episode_tokens: target,
        max_episode_tokens: max,
        ..Config::default()
    }
}

/// Adds `n` messages of `tokens` each, marked `#1`..`#n`, users and
/// assistants alternating.
fn add_numbered(fx: &mut Fx, n: usize, tokens: usize) {
    for k in 1..=n {
        let text = sized(&format!("#{k}"), tokens);
        let m = if k % 2 == 1 {
            NewMessage::user(text)
        } else {
            NewMessage::assistant(text)
        };
        fx.add(m);
        fx.minutes(1);
    }
}

#[test]
fn every_message_after_the_first_is_judged() {
    let mut fx = Fx::new(Config::default());
    judged_by_index(&fx, vec![0.0, 0.0, 0.2, 0.3, 0.1, 0.4]);
    add_numbered(&mut fx, 5, 20);
    assert_eq!(fx.model.calls_of(Task::Segment).len(), 4);
    let b: Vec<Option<f32>> = fx.messages().iter().map(|m| m.boundary).collect();
    assert_eq!(b, vec![None, Some(0.2), Some(0.3), Some(0.1), Some(0.4)]);
    // All below the threshold and the stretch is small: no cut.
    assert!(fx.ranges().is_empty());
}

#[test]
fn a_judgment_at_the_threshold_cuts_below_it_does_not() {
    let mut fx = Fx::new(Config::default());
    judged_by_index(&fx, vec![0.0, 0.0, 0.49, 0.5, 0.2, 0.7]);
    add_numbered(&mut fx, 5, 30);
    // 0.49 before message 2: no cut; 0.5 before message 3: cut.
    assert_eq!(fx.ranges(), vec![(1, 2), (3, 4)]);
    assert_eq!(fx.stats().open_messages, 1);
}

#[test]
fn a_judged_cut_needs_the_minimum_piece_before_it() {
    let mut fx = Fx::new(Config {
        min_episode_tokens: 50,
        ..Config::default()
    });
    // 0.85: over the threshold, under the strong boundary (0.9).
    judged_by_index(&fx, vec![0.0, 0.0, 0.85, 0.85, 0.85]);
    add_numbered(&mut fx, 4, 30);
    // Messages 2 and 3 are judged together in message 3's round. Before
    // message 2 the piece holds 30 tokens (< 50): no cut. Before message 3
    // it holds 60: cut. Message 4 (a reply) waits for its judgment.
    assert_eq!(fx.ranges(), vec![(1, 2)]);
    assert_eq!(fx.stats().open_messages, 2);
    assert_eq!(fx.pending().unjudged, vec![4]);
    // Judged (by an explicit maintain): 30 tokens before it again, no cut.
    assert_eq!(fx.maintain().judged, vec![4]);
    assert_eq!(fx.ranges(), vec![(1, 2)]);
    assert_eq!(fx.stats().open_messages, 2);
}

#[test]
fn a_strong_boundary_cuts_under_the_floor() {
    // Pieces of 30 tokens, a floor of 50: a judgment at or above
    // strong_boundary (0.9) cuts anyway; one just under it does not.
    let fx_for = |p: f32| {
        let mut fx = Fx::new(Config {
            min_episode_tokens: 50,
            ..Config::default()
        });
        judged_by_index(&fx, vec![0.0, 0.0, p, 0.1]);
        for k in 1..=3 {
            fx.user(&sized(&format!("#{k}"), 30));
            fx.minutes(1);
        }
        fx
    };
    let mut strong = fx_for(0.9);
    assert_eq!(strong.config.strong_boundary, 0.9);
    // Message 2 starts a piece although only 30 tokens come before it.
    assert_eq!(strong.ranges(), vec![(1, 1)]);
    assert_eq!(strong.stats().open_messages, 2);
    let mut weak = fx_for(0.89);
    assert!(weak.ranges().is_empty(), "{:?}", weak.ranges());
    assert_eq!(weak.stats().open_messages, 3);

    // Over the maximum, the best judgment 30 tokens in: strong, it cuts
    // there; merely best (0.45), it is passed over by the size cut, which
    // leaves no piece under the floor (max(min_episode_tokens, target / 4)
    // = 50 here).
    let size_cut = |p: f32| {
        let mut fx = Fx::new(Config {
            min_episode_tokens: 50,
            ..sized_config(200, 250)
        });
        // Message 2 (30 tokens in) is the best judged; the others are equal.
        judged_by_index(&fx, vec![0.0, 0.0, p, 0.1, 0.1, 0.1, 0.1]);
        fx.user(&sized("#1", 30));
        for k in 2..=6 {
            fx.add(NewMessage::assistant(sized(&format!("#{k}"), 50)));
        }
        fx.maintain();
        fx.ranges()
    };
    // 280 tokens > 250: one cut. Strong: before message 2 (a 30-token
    // piece); not strong: the position nearest the even split (140) among
    // the equal others, before message 4 (130 tokens in).
    assert_eq!(size_cut(0.95), vec![(1, 1)]);
    assert_eq!(size_cut(0.45), vec![(1, 3)]);
}

#[test]
fn equal_judgments_spread_cuts_evenly() {
    // Ten messages of 50 tokens judged all alike (0.2, under the threshold),
    // judged together by one maintain: 500 > 250 wants
    // ceil(500 / 100) - 1 = 4 cuts, at the positions nearest an even split
    // (every 100 tokens), not the first four positions.
    let mut fx = Fx::new(sized_config(100, 250));
    segment_by(&fx.model, |_| 0.2);
    fx.user(&sized("#1", 50));
    for k in 2..=10 {
        fx.add(NewMessage::assistant(sized(&format!("#{k}"), 50)));
        fx.minutes(1);
    }
    // Replies wait for their judgments: nothing is cut yet.
    assert!(fx.ranges().is_empty());
    assert_eq!(fx.pending().unjudged, (2..=10).collect::<Vec<u64>>());
    let m = fx.maintain();
    assert_eq!(m.judged, (2..=10).collect::<Vec<u64>>());
    assert_eq!(m.formed, vec![1, 2, 3, 4]);
    assert_eq!(fx.ranges(), vec![(1, 2), (3, 4), (5, 6), (7, 8)]);
    assert_eq!(fx.stats().open_messages, 2);
    assert!(fx.episodes().iter().all(|e| e.episode.tokens == 100));

    // The same over a conversation, turn by turn: user and reply of 20
    // tokens each, every judgment equal. No one-message episode: each cut
    // lands near the target (4 or 5 messages, 80 or 100 tokens), none at the
    // first position over the maximum.
    let mut fx = Fx::new(sized_config(100, 250));
    segment_by(&fx.model, |_| 0.2);
    for i in 0..30 {
        fx.user(&sized(&format!("question {i}"), 20));
        fx.minutes(1);
        fx.assistant(&sized(&format!("answer {i}"), 20));
        fx.minutes(1);
    }
    let episodes = fx.episodes();
    assert!(episodes.len() >= 10, "{:?}", fx.ranges());
    for e in &episodes {
        let e = &e.episode;
        assert!(e.last > e.first, "one-message episode {e:?}");
        assert!(
            (80..=100).contains(&e.tokens),
            "episode {} of {} tokens: {:?}",
            e.id,
            e.tokens,
            fx.ranges()
        );
    }
}

#[test]
fn sizes_decide_how_many_cuts_judgments_decide_where() {
    // Six messages of 50 tokens: 300 > max 250, so ceil(300 / 100) - 1 = 2
    // cuts, at the two highest-judged positions. No judgment reaches the
    // threshold on its own.
    let mut a = Fx::new(sized_config(100, 250));
    judged_by_index(&a, vec![0.0, 0.0, 0.2, 0.4, 0.1, 0.3, 0.05]);
    add_numbered(&mut a, 5, 50);
    assert!(a.ranges().is_empty(), "250 tokens is not over the maximum");
    add_numbered_from(&mut a, 6, 6, 50);
    // Message 6 is a reply: its judgment waits (for the next user message,
    // or an explicit maintain), and with it the cuts it decides.
    assert!(a.ranges().is_empty());
    assert_eq!(a.maintain().judged, vec![6]);
    assert_eq!(a.ranges(), vec![(1, 2), (3, 4)]);
    assert_eq!(a.stats().open_messages, 2);

    // Same sizes, other judgments: same number of cuts, other places.
    let mut b = Fx::new(sized_config(100, 250));
    judged_by_index(&b, vec![0.0, 0.0, 0.45, 0.1, 0.2, 0.05, 0.3]);
    add_numbered(&mut b, 6, 50);
    assert_eq!(b.maintain().judged, vec![6]);
    assert_eq!(b.ranges(), vec![(1, 1), (2, 5)]);
    assert_eq!(b.stats().open_messages, 1);
}

#[test]
fn a_larger_stretch_gets_more_cuts() {
    // Eight messages of 50 tokens: 400 > max 350, ceil(400 / 100) - 1 = 3 cuts.
    let mut fx = Fx::new(sized_config(100, 350));
    judged_by_index(&fx, vec![0.0, 0.0, 0.3, 0.1, 0.35, 0.2, 0.15, 0.4, 0.05]);
    add_numbered(&mut fx, 8, 50);
    // Message 8 (a reply) is judged by the maintain: then 400 tokens.
    assert!(fx.ranges().is_empty(), "350 settled tokens is not over");
    assert_eq!(fx.maintain().judged, vec![8]);
    // Highest: #7 (0.4), #4 (0.35), #2 (0.3).
    assert_eq!(fx.ranges(), vec![(1, 1), (2, 3), (4, 6)]);
    assert_eq!(fx.stats().open_messages, 2);
}

/// Adds messages `#from..=#to` (users at odd numbers).
fn add_numbered_from(fx: &mut Fx, from: usize, to: usize, tokens: usize) {
    for k in from..=to {
        let text = sized(&format!("#{k}"), tokens);
        let m = if k % 2 == 1 {
            NewMessage::user(text)
        } else {
            NewMessage::assistant(text)
        };
        fx.add(m);
        fx.minutes(1);
    }
}

#[test]
fn a_user_message_is_never_split() {
    // A user message far over the episode maximum stays one message, whole,
    // in one episode.
    let mut fx = Fx::new(sized_config(100, 200));
    judged_by_index(&fx, vec![0.0, 0.0, 0.3, 0.2, 0.1]);
    let big = sized("#1", 900);
    fx.add(NewMessage::user(big.clone()));
    assert!(
        fx.ranges().is_empty(),
        "nothing to cut before the first message"
    );
    add_numbered_from(&mut fx, 2, 2, 30);
    // The reply's judgment waits; the maintain makes it.
    assert!(fx.ranges().is_empty());
    assert_eq!(fx.maintain().judged, vec![2]);
    // When message 2 was judged, 930 tokens over max 200 wanted
    // ceil(930 / 100) - 1 = 9 cuts, but the only allowed position is between
    // the two messages: one cut, none inside the user message.
    assert_eq!(fx.ranges(), vec![(1, 1)]);
    add_numbered_from(&mut fx, 3, 4, 30);
    let msgs = fx.messages();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[0].content, big);
    assert_eq!(msgs[0].tokens, 900);
    assert_eq!(fx.ranges(), vec![(1, 1)]);
    assert_eq!(fx.stats().open_messages, 3);
}

#[test]
fn episodes_partition_the_conversation_into_whole_messages() {
    let mut fx = Fx::new(sized_config(100, 300));
    // A mix of judged cuts and size cuts over 40 messages.
    segment_by(&fx.model, |text| {
        let k: usize = text.split_whitespace().next().unwrap()[1..]
            .parse()
            .unwrap();
        match k % 7 {
            0 => 0.9,
            3 => 0.4,
            _ => (k % 5) as f32 / 20.0,
        }
    });
    add_numbered(&mut fx, 40, 45);
    let ranges = fx.ranges();
    assert!(ranges.len() >= 8, "{ranges:?}");
    let mut next = 1;
    for (first, last) in &ranges {
        assert_eq!(*first, next, "episodes are consecutive: {ranges:?}");
        assert!(last >= first);
        next = last + 1;
    }
    let open = fx.stats().open_messages as u64;
    assert_eq!(
        next + open,
        41,
        "every message is in one episode or the open stretch"
    );
    // Every episode's tokens are the sum of its whole messages.
    let msgs = fx.messages();
    for e in fx.episodes() {
        let sum: usize = msgs[(e.episode.first - 1) as usize..e.episode.last as usize]
            .iter()
            .map(|m| m.tokens)
            .sum();
        assert_eq!(e.episode.tokens, sum);
    }
}

#[test]
fn a_failed_judgment_makes_no_cut() {
    let mut fx = Fx::new(Config::default());
    // Every attempt to judge the message marked BROKEN gets prose back.
    fx.model.on(Task::Segment, |req| {
        engram::testing::new_message(req)
            .contains("BROKEN")
            .then(|| "I cannot tell.".to_string())
    });
    standard_segment(&fx.model);
    fx.user(&sized(NEW, 40));
    fx.assistant(&sized("answer", 40));
    // Its round judges the reply (0.1) and the message itself (failed).
    let added = fx.user(&sized(&format!("{NEW} BROKEN"), 40));
    assert!(added.formed.is_empty());
    assert_eq!(added.degraded.len(), 1);
    assert_eq!(added.degraded[0].task, Task::Segment);
    let msgs = fx.messages();
    assert_eq!((msgs[1].boundary, msgs[1].judged), (Some(0.1), true));
    assert_eq!((msgs[2].boundary, msgs[2].judged), (None, true));
    assert_eq!(
        fx.model.calls_of(Task::Segment).len(),
        1 + fx.config.model_attempts as usize
    );
    // The next good judgment cuts as usual.
    assert_eq!(fx.user(&sized(NEW, 40)).formed, vec![1]);
    assert_eq!(fx.ranges(), vec![(1, 3)]);
}
