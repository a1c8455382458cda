//! Sleep: after a long silence the next user turn first fades the view to the
//! landing, full or not, so the gap is accounted for before the agent answers.

use crate::base::config::Config;
use crate::base::host::Model;
use crate::state::State;
use crate::step::Ctx;
use crate::types::fade::FadeReason;
use crate::types::message::Role;

/// `sleep_after_hours` in milliseconds.
fn after_ms(config: &Config) -> i64 {
    (config.sleep_after_hours * 3_600_000.0) as i64
}

/// Whether a message of `role` arriving in `thread` at `now` sleeps first:
/// a user message more than `sleep_after_hours` after the thread's previous
/// user message.
pub fn due(state: &State, config: &Config, role: Role, now: i64, thread: &str) -> bool {
    let limit = after_ms(config);
    role == Role::User
        && state
            .line(thread)
            .last_user_at
            .is_some_and(|t| now - t > limit)
}

/// Whether `thread`'s open stretch can form an episode: a message of it is
/// not erased and no tool call waits. (An erased message keeps its id in
/// the line; a stretch of erased messages only is nothing to sleep, and
/// counting it would make the thread idle on every call.)
fn open_can_form(state: &State, thread: &str) -> bool {
    let open = state.line(thread).open_ids();
    open.iter().any(|&id| !state.message(id).erased) && state.pending_tool_calls(thread).is_empty()
}

/// Threads idle at `now`: their last message more than `sleep_after_hours`
/// old, with episodes in view or an open stretch that can form one
/// ([`open_can_form`]); the longest idle first (by the time of the last message,
/// then by name). `maintain` puts one a call to sleep ([`sleep_idle`]).
pub fn idle(state: &State, config: &Config, now: i64) -> Vec<String> {
    let limit = after_ms(config);
    // (Placed in order as found: the threads are few.)
    let mut idle: Vec<(i64, &String)> = Vec::new();
    for (name, line) in &state.threads {
        let Some(&last) = line.ids.last() else {
            continue;
        };
        let last = state.message(last).at;
        let sleeps = now - last > limit
            && (state.in_view_of(name).next().is_some() || open_can_form(state, name));
        if sleeps {
            // (By name within one time: the map's order, kept.)
            let at = idle.iter().take_while(|(t, _)| *t <= last).count();
            idle.insert(at, (last, name));
        }
    }
    idle.into_iter().map(|(_, name)| name.clone()).collect()
}

/// When idle `thread` fell asleep: `sleep_after_hours` after its last
/// message, or `now` if that is later (never: it is idle). Its sleep runs
/// as of then, so a thread loaded as history (or left for a month) is
/// noted with the dates it had, not as fresh.
pub fn fell_asleep(state: &State, config: &Config, thread: &str, now: i64) -> i64 {
    let limit = after_ms(config);
    match state.line(thread).ids.last() {
        Some(&id) => now.min(state.message(id).at.saturating_add(limit)),
        None => now,
    }
}

/// Puts the idle `ctx.thread` to sleep: another thread's running fade
/// settles first (at `ctx.now`); then, as of the time the thread fell
/// asleep ([`fell_asleep`]), its open stretch is judged and cut (the rest
/// forms one episode), an `Idle` fade takes every episode out of its view
/// and their notes are written: the fade, the state changes, the facts and
/// their traces carry that time. Returns the fade and what its notes sealed.
pub(crate) async fn sleep_idle<M: Model>(
    ctx: &mut Ctx<'_, M>,
) -> (Option<u64>, crate::fade::Settled) {
    crate::fade::settle_other(ctx).await;
    ctx.now = fell_asleep(ctx.state, ctx.config, ctx.thread, ctx.now);
    let judgments = crate::segment::judge_unjudged(ctx).await;
    crate::segment::record(ctx, judgments);
    crate::segment::place_cuts(ctx);
    if open_can_form(ctx.state, ctx.thread) {
        let open = ctx.state.line(ctx.thread).open_ids().to_vec();
        crate::encoding::form(ctx, &open);
    }
    let fade = crate::fade::plan(ctx, FadeReason::Idle);
    (fade, crate::fade::settle(ctx).await)
}
