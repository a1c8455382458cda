//! When the boundary judge is down, sizes still cut: a failed judgment never
//! cuts by itself, but an open stretch over the maximum size is cut at
//! allowed positions even without judgments, so the view can still fade.

mod common;
use common::*;
use engram::Task;

#[test]
fn sizes_still_cut_and_fades_still_happen_when_every_judgment_fails() {
    let mut fx = Fx::new(config(2_000));
    fx.model
        .on_first(Task::Segment, |_| Some("not json".into()));
    for i in 0..60 {
        fx.turn(&format!("topic{i}"), 60, 60);
    }
    assert!(
        fx.messages().iter().all(|m| m.boundary.is_none()),
        "no judgment succeeded"
    );
    let ranges = fx.ranges();
    assert!(ranges.len() >= 5, "sizes cut the conversation: {ranges:?}");
    let max = config(2_000).max_episode_tokens;
    for e in fx.episodes() {
        assert!(
            e.episode.tokens <= max,
            "episode {} of {} tokens",
            e.episode.id,
            e.episode.tokens
        );
    }
    let s = fx.stats();
    assert!(s.fades > 0 && s.view_tokens <= s.ceiling, "{s:?}");
}
