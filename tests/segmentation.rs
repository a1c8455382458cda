//! Episodes are made of whole messages; where one concept ends is a judgment
//! made for every message; sizes only decide how many cuts there are.

mod common;

use common::*;
use engram::{Config, NewMessage, Task};

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
    judged_by_index(&fx, vec![0.0, 0.0, 0.9, 0.9, 0.9]);
    add_numbered(&mut fx, 4, 30);
    // Before message 2 the piece holds 30 tokens (< 50): no cut. Before
    // message 3 it holds 60: cut. Before message 4, 30 again: no cut.
    assert_eq!(fx.ranges(), vec![(1, 2)]);
    assert_eq!(fx.stats().open_messages, 2);
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
    assert_eq!(a.ranges(), vec![(1, 2), (3, 4)]);
    assert_eq!(a.stats().open_messages, 2);

    // Same sizes, other judgments: same number of cuts, other places.
    let mut b = Fx::new(sized_config(100, 250));
    judged_by_index(&b, vec![0.0, 0.0, 0.45, 0.1, 0.2, 0.05, 0.3]);
    add_numbered(&mut b, 6, 50);
    assert_eq!(b.ranges(), vec![(1, 1), (2, 5)]);
    assert_eq!(b.stats().open_messages, 1);
}

#[test]
fn a_larger_stretch_gets_more_cuts() {
    // Eight messages of 50 tokens: 400 > max 350, ceil(400 / 100) - 1 = 3 cuts.
    let mut fx = Fx::new(sized_config(100, 350));
    judged_by_index(&fx, vec![0.0, 0.0, 0.3, 0.1, 0.35, 0.2, 0.15, 0.4, 0.05]);
    add_numbered(&mut fx, 8, 50);
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
    add_numbered_from(&mut fx, 2, 4, 30);
    let msgs = fx.messages();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[0].content, big);
    assert_eq!(msgs[0].tokens, 900);
    // When message 2 came, 930 tokens over max 200 wanted
    // ceil(930 / 100) - 1 = 9 cuts, but the only allowed position is between
    // the two messages: one cut, none inside the user message.
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
    standard_segment(&fx.model);
    fx.user(&sized(NEW, 40));
    fx.assistant(&sized("answer", 40));
    fail_next(&fx.model, Task::Segment, fx.config.model_attempts);
    let added = fx.user(&sized(NEW, 40));
    assert!(added.formed.is_empty());
    assert_eq!(fx.messages()[2].boundary, None);
    // The next good judgment cuts as usual.
    assert_eq!(fx.user(&sized(NEW, 40)).formed, vec![1]);
    assert_eq!(fx.ranges(), vec![(1, 3)]);
}
