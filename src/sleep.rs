//! Sleep: after a long silence the next user turn first fades the view to the
//! landing, full or not, so the gap is accounted for before the agent answers.

use crate::config::Config;
use crate::fade::FadeReason;
use crate::host::Model;
use crate::message::Role;
use crate::state::State;
use crate::step::Ctx;

/// Whether a message of `role` arriving in `thread` at `now` sleeps first:
/// a user message more than `sleep_after_hours` after the thread's previous
/// user message.
pub fn due(state: &State, config: &Config, role: Role, now: i64, thread: &str) -> bool {
    let limit = (config.sleep_after_hours * 3_600_000.0) as i64;
    role == Role::User
        && state
            .line(thread)
            .last_user_at
            .is_some_and(|t| now - t > limit)
}

/// Threads idle at `now`: their last message more than `sleep_after_hours`
/// old, with episodes in view or an open stretch that can form one (no tool
/// call waits). `maintain` puts them to sleep ([`sleep_idle`]).
pub fn idle(state: &State, config: &Config, now: i64) -> Vec<String> {
    let limit = (config.sleep_after_hours * 3_600_000.0) as i64;
    state
        .threads
        .iter()
        .filter(|(name, line)| {
            line.ids
                .last()
                .is_some_and(|&id| now - state.message(id).at > limit)
                && (state.in_view_of(name).next().is_some()
                    || !line.open_ids().is_empty() && state.pending_tool_calls(name).is_empty())
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Puts the idle `ctx.thread` to sleep: its open stretch is judged and cut
/// (the rest forms one episode), then an `Idle` fade takes every episode
/// out of its view and their notes are written. Returns the fade and what
/// its notes sealed.
pub(crate) async fn sleep_idle<M: Model>(
    ctx: &mut Ctx<'_, M>,
) -> (Option<u64>, crate::fade::Settled) {
    let judgments = crate::segment::judge_unjudged(ctx).await;
    crate::segment::record(ctx, judgments);
    crate::segment::place_cuts(ctx);
    let open = ctx.state.line(ctx.thread).open_ids().to_vec();
    if !open.is_empty() && ctx.state.pending_tool_calls(ctx.thread).is_empty() {
        crate::segment::form(ctx, &open);
    }
    crate::fade::settle_other(ctx).await;
    let fade = crate::fade::plan(ctx, FadeReason::Idle);
    (fade, crate::fade::settle(ctx).await)
}
