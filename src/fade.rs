//! Fade: when the view reaches the ceiling, the least activated episodes leave
//! until the view is down to the landing.
//!
//! landing = min(ceiling / 2, ceiling - 2 x recent turn size), floored so the
//! newest live episode and the open stretch fit, never above the ceiling.
//! The recent turn size is the largest of the last three turns (a turn runs
//! from a user message to the next). A fade first decides who leaves
//! (`plan`, no model call): sealed episodes are forgotten, live ones become
//! leaving (warned, still in view). Then `settle` writes the leaving
//! episodes' facts (their notes go out together) and seals them; one whose
//! note fails is sealed without facts and noted later. One fade finishes
//! before the next begins.
//!
//! When a fade runs: a sleep plans at the user message (before the reply) and
//! settles after the reply; at the end of a turn a fade runs ahead when the
//! next turn would not fit (`ahead_due`); and whenever a call would leave
//! the view over the ceiling, it fades at once (`hold`).

use crate::base::config::Config;
use crate::base::host::Model;
use crate::state::State;
use crate::step::Ctx;
use crate::types::episode::{EpisodeState, StateChange};
use crate::types::event::Event;
use crate::types::fade::{Fade, FadeReason};
use crate::view::budget::{landing, projected_tokens, recent_turn_tokens};

/// The next episode to leave `thread`'s view: lowest activation now (older
/// first on ties), among the thread's live episodes but its newest, and
/// the sealed ones of every thread (their facts are in every view's facts
/// block). An episode moves at most once per fade, so facts a fade seals
/// stay in the facts block at least until the next fade.
///
/// The sleep of an idle thread (`FadeReason::Idle`) takes all of the
/// thread's live episodes, its newest too, and no sealed one.
fn pick(state: &State, now: i64, fade: u64, thread: &str, reason: FadeReason) -> Option<u64> {
    let idle = reason == FadeReason::Idle;
    let newest = state.newest_live(thread).filter(|_| !idle);
    state
        .episodes
        .iter()
        .filter(|e| e.history.iter().all(|c| c.fade != Some(fade)))
        .filter(|e| match e.state {
            EpisodeState::Live => e.thread == thread && Some(e.id) != newest,
            EpisodeState::Sealed => !idle,
            _ => false,
        })
        .map(|e| (state.activation(e, now), e.id))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .map(|(_, id)| id)
}

fn change(ctx: &mut Ctx<'_, impl Model>, episode: u64, state: EpisodeState, fade: Option<u64>) {
    let change = StateChange {
        state,
        at: ctx.now,
        fade,
    };
    ctx.emit(Event::StateChanged { episode, change });
}

/// Starts a fade for `reason` (or takes the running one) and decides who
/// leaves: the least activated episodes, until the view without the leaving
/// ones is at the landing. Sealed episodes are forgotten at once; live ones
/// become leaving (warned, still in view) until [`settle`] writes their
/// facts. No model call. Returns the fade, or `None` when none runs.
pub(crate) fn plan<M: Model>(ctx: &mut Ctx<'_, M>, reason: FadeReason) -> Option<u64> {
    let fade = plan_open(ctx, reason);
    finish_if_done(ctx);
    fade
}

/// [`plan`], leaving the fade running even when no episode is leaving (a
/// sleep planned before its message's cuts, finished by [`reland`]).
pub(crate) fn plan_open<M: Model>(ctx: &mut Ctx<'_, M>, reason: FadeReason) -> Option<u64> {
    let fade = match ctx.state.running_fade() {
        Some(f) => f.clone(),
        None => {
            let next = ctx.state.fades.len() as u64 + 1;
            let thread = ctx.thread;
            // A fade with nothing that could leave does not start (a sleep
            // does: it is recorded, and ends at once).
            if reason != FadeReason::Sleep {
                pick(ctx.state, ctx.now, next, thread, reason)?;
            }
            let (landing, turn_tokens) = match reason {
                FadeReason::Idle => (0, 0),
                _ => landing(ctx.state, ctx.model, ctx.config, thread),
            };
            let f = Fade {
                id: next,
                reason,
                at: ctx.now,
                view_tokens: ctx.view_tokens(),
                ceiling: ctx.config.ceiling_tokens,
                landing,
                turn_tokens,
                finished_at: None,
                view_after: None,
                thread: thread.to_string(),
            };
            ctx.emit(Event::FadeStarted(f.clone()));
            f
        }
    };
    let thread = fade.thread.as_str();
    while projected_tokens(ctx.state, ctx.model, ctx.config, thread) > fade.landing {
        let Some(id) = pick(ctx.state, ctx.now, fade.id, thread, fade.reason) else {
            break;
        };
        let next = match ctx.state.episode(id).expect("picked").state {
            EpisodeState::Live => EpisodeState::Leaving,
            _ => EpisodeState::Forgotten,
        };
        change(ctx, id, next, Some(fade.id));
    }
    Some(fade.id)
}

/// Measures the landing of the running sleep fade again (after the cuts
/// of the message that began it) and, when it dropped, moves more
/// episodes to reach it.
pub(crate) fn reland<M: Model>(ctx: &mut Ctx<'_, M>) {
    let Some(f) = ctx.state.running_fade().cloned() else {
        return;
    };
    let (landing, turn_tokens) = landing(ctx.state, ctx.model, ctx.config, &f.thread);
    if f.reason == FadeReason::Sleep && landing < f.landing {
        ctx.emit(Event::FadeLanding {
            fade: f.id,
            landing,
            turn_tokens,
        });
    }
    plan(ctx, f.reason);
}

/// Finishes the running fade when no episode of it is still leaving.
pub(crate) fn finish_if_done<M: Model>(ctx: &mut Ctx<'_, M>) {
    let Some((fade, thread)) = ctx.state.running_fade().map(|f| (f.id, f.thread.clone())) else {
        return;
    };
    if ctx
        .state
        .in_view
        .iter()
        .any(|&id| ctx.state.episode(id).map(|e| e.state) == Some(EpisodeState::Leaving))
    {
        return;
    }
    let view_tokens = crate::view::tokens(ctx.state, ctx.model, ctx.config, &thread);
    ctx.emit(Event::FadeFinished {
        fade,
        at: ctx.now,
        view_tokens,
    });
}

/// What [`settle`] did.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// Episodes noted and sealed.
    pub sealed: Vec<u64>,
    /// Episodes sealed without facts because their note failed (retried
    /// later by `maintain`).
    pub deferred: Vec<u64>,
}

/// Writes the facts of every leaving episode and seals it. The `note` calls
/// go out together; each episode's facts are then placed in the graph in
/// order. An episode whose note fails does not hold up the others or the
/// fade: it is sealed without facts (deferred; its passages are indexed so
/// it stays recallable) and its note is retried by later `maintain` calls,
/// up to `note_retries` times. The running fade then plans again, so it ends
/// at its landing, and finishes.
pub(crate) async fn settle<M: Model>(ctx: &mut Ctx<'_, M>) -> Settled {
    let mut done = Settled::default();
    loop {
        let leaving: Vec<u64> = ctx
            .state
            .in_view
            .iter()
            .copied()
            .filter(|&id| ctx.state.episode(id).map(|e| e.state) == Some(EpisodeState::Leaving))
            .collect();
        if leaving.is_empty() {
            break;
        }
        let fade = ctx.state.running_fade().map(|f| f.id);
        for (id, ok) in crate::note::note_episodes(ctx, &leaving).await {
            if !ok {
                crate::note::defer(ctx, id).await;
                done.deferred.push(id);
            } else {
                done.sealed.push(id);
            }
            change(ctx, id, EpisodeState::Sealed, fade);
        }
        // The facts block grew: the fade may need to move more episodes.
        if ctx.state.running_fade().is_some() {
            let reason = ctx
                .state
                .running_fade()
                .map_or(FadeReason::Ceiling, |f| f.reason);
            plan(ctx, reason);
        }
    }
    finish_if_done(ctx);
    done
}

/// Whether the turn that just ended in `thread` leaves less room than the
/// next turn is likely to need: the view plus the largest recent turn is
/// over the ceiling. `view` is the thread's view's size now.
pub(crate) fn ahead_due<M: Model>(
    state: &State,
    model: &M,
    config: &Config,
    view: usize,
    thread: &str,
) -> bool {
    // Due only when some episode could leave (else maintain could not do
    // it, and a host waiting for no pending work would wait forever).
    // (`pick` for a fade not started yet, without the activations.)
    if !config.fade_ahead || !state.can_leave(thread) {
        return false;
    }
    view + recent_turn_tokens(state, model, config, thread) > config.ceiling_tokens
}

/// Settles a fade still running in another thread than the call's, so the
/// call's own fade can start (one fade at a time).
pub(crate) async fn settle_other<M: Model>(ctx: &mut Ctx<'_, M>) {
    if ctx
        .state
        .running_fade()
        .is_some_and(|f| f.thread != ctx.thread)
    {
        settle(ctx).await;
    }
}

/// Keeps the view within the ceiling at the end of a call: recall blocks
/// keep to their share of the room (older ones give way), then, while the
/// view is over the ceiling, a fade runs now, notes included. With fades run
/// ahead at the end of turns this is rare on a user message. Returns the
/// fade that ran and the blocks that gave way.
pub(crate) async fn hold<M: Model>(ctx: &mut Ctx<'_, M>) -> (Option<u64>, Vec<u64>) {
    let mut gave_way = crate::recall::block::give_way(ctx);
    let mut fade = None;
    loop {
        // A view that reaches the ceiling fades (and one over it must).
        let before = ctx.view_tokens();
        if before < ctx.config.ceiling_tokens {
            break;
        }
        settle_other(ctx).await;
        if let Some(f) = plan(ctx, FadeReason::Ceiling) {
            fade = Some(f);
            settle(ctx).await;
            if ctx.view_tokens() < before {
                continue;
            }
        }
        // Nothing more can leave: recall blocks give way, oldest first
        // (the newest too, last), before the view may pass the ceiling.
        if before <= ctx.config.ceiling_tokens {
            break;
        }
        match crate::recall::block::blocks_in_view(ctx.state, ctx.model, ctx.config, ctx.thread)
            .first()
        {
            Some(&(block, _)) => {
                ctx.emit(Event::RecallGaveWay { block, at: ctx.now });
                gave_way.push(block);
            }
            None => break,
        }
    }
    (fade, gave_way)
}
