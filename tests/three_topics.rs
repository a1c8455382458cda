//! One request that touches three topics becomes three episodes: the user
//! asks about three things in one message, the assistant answers in three
//! messages, and the boundary judgments are high at the topic shifts.

mod common;

use common::*;
use engram::Config;
use engram::EpisodeState;
use engram::Task;

fn script(fx: &Fx) {
    segment_markers(
        &fx.model,
        &[("Taxes:", 0.9), ("Fence:", 0.85), ("car service", 0.9)],
    );
}

const REQUEST: &str = "Three things today: the Lisbon trip in March, my tax return due on \
                       Friday, and the garden fence the storm broke.";
const LISBON: &str = "Lisbon: book the flights now while fares are low, and stay in Alfama so \
                      the old town, the river and the trams are all within a short walk.";
const TAXES: &str = "Taxes: gather the payslips, the bank interest statements and last year's \
                     return, then file online before Friday to avoid the late fee.";
const FENCE: &str = "Fence: replace the two broken panels first, set the posts in concrete, and \
                     treat the new wood before the rain comes back next week.";

#[test]
fn one_request_touching_three_topics_gives_three_episodes() {
    let mut fx = Fx::new(Config::default());
    script(&fx);
    fx.user(REQUEST);
    fx.minutes(1);
    // Replies make no model call: their judgments wait, and so do the cuts.
    for answer in [LISBON, TAXES, FENCE] {
        let added = fx.assistant(answer);
        assert!(added.formed.is_empty());
        assert!(added
            .maintained
            .expect("the reply ran maintain")
            .judged
            .is_empty());
    }
    assert!(fx.ranges().is_empty());
    assert_eq!(fx.pending().unjudged, vec![2, 3, 4]);
    // An explicit maintain judges them: each topic shift cuts before it.
    let m = fx.maintain();
    assert_eq!(m.judged, vec![2, 3, 4]);
    assert_eq!(m.formed, vec![1, 2]);
    assert_eq!(fx.ranges(), vec![(1, 2), (3, 3)]);
    assert_eq!(fx.stats().open_messages, 1);

    // When the conversation moves on, the third topic forms too.
    fx.minutes(5);
    assert_eq!(
        fx.user("Now a fourth matter: the car service next month.")
            .formed,
        vec![3]
    );
    assert_eq!(fx.ranges(), vec![(1, 2), (3, 3), (4, 4)]);
    assert!(fx.states().iter().all(|s| *s == EpisodeState::Live));

    // Each episode holds one topic's text.
    let msgs = fx.messages();
    let text = |first: u64, last: u64| -> String {
        msgs[(first - 1) as usize..last as usize]
            .iter()
            .map(|m| m.content.as_str())
            .collect()
    };
    assert!(text(1, 2).contains("Lisbon: book"));
    assert!(text(3, 3).starts_with("Taxes:"));
    assert!(text(4, 4).starts_with("Fence:"));
}

#[test]
fn each_topic_shift_was_a_judgment_of_the_segment_task() {
    let mut fx = Fx::new(Config::default());
    script(&fx);
    for m in [REQUEST, LISBON, TAXES, FENCE] {
        if m == REQUEST {
            fx.user(m);
        } else {
            fx.assistant(m);
        }
    }
    // The replies asked nothing: the first message has no judgment to make.
    assert!(fx.model.calls_of(Task::Segment).is_empty());
    // The next user message's round judges the three replies and itself,
    // each shown its new message, and places the three cuts at once.
    let added = fx.user("Now a fourth matter: the car service next month.");
    assert_eq!(added.formed, vec![1, 2, 3]);
    let calls = fx.model.calls_of(Task::Segment);
    assert_eq!(calls.len(), 4);
    for (call, text) in calls.iter().zip([
        LISBON,
        TAXES,
        FENCE,
        "Now a fourth matter: the car service next month.",
    ]) {
        assert_eq!(engram::testing::new_message(call), text);
    }
    let boundaries: Vec<Option<f32>> = fx.messages().iter().map(|m| m.boundary).collect();
    assert_eq!(
        boundaries,
        vec![None, Some(0.1), Some(0.9), Some(0.85), Some(0.9)]
    );
    assert_eq!(fx.ranges(), vec![(1, 2), (3, 3), (4, 4)]);
}
