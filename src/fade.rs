//! Fade: when the view reaches the ceiling, the least activated episodes leave
//! until the view is down to the landing.
//!
//! landing = min(ceiling / 2, ceiling - 2 x recent turn size), floored so the
//! newest live episode and the open stretch fit. The recent turn size is the
//! largest of the last three turns (a turn runs from a user message to the
//! next). A live episode leaving is warned and noted, then sealed; a sealed
//! one leaving is forgotten. A fade whose notes fail stays running (its
//! episodes stay leaving, in view) and is resumed by the next call: one fade
//! finishes before the next begins.

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::episode::{EpisodeState, NoteFailure, StateChange};
use crate::event::Event;
use crate::host::Model;
use crate::memory::Ctx;
use crate::message::{Message, Role};
use crate::state::State;

/// Why a fade started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FadeReason {
    /// The view reached the ceiling.
    Ceiling,
    /// A user message came after a long silence.
    Sleep,
}

/// One fade, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fade {
    /// Fade id (1, 2, ...).
    pub id: u64,
    /// Why it started.
    pub reason: FadeReason,
    /// When it started.
    pub at: i64,
    /// View size when it started.
    pub view_tokens: usize,
    /// The ceiling then.
    pub ceiling: usize,
    /// The size it fades down to.
    pub landing: usize,
    /// The recent turn size used for the landing.
    pub turn_tokens: usize,
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    /// View size when it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view_after: Option<usize>,
}

/// What a message takes in the view: its tokens, plus the recall block shown
/// before it (a fade cannot remove one without the other).
fn footprint<M: Model>(state: &State, model: &M, config: &Config, m: &Message) -> usize {
    let recall = match m.role {
        Role::User => crate::view::recall_item(state, model, m.id, config.passage_tokens)
            .map_or(0, |i| i.tokens),
        _ => 0,
    };
    m.tokens + recall
}

/// Size of the recent turns, recall blocks included: the largest of the last
/// three.
pub fn recent_turn_tokens<M: Model>(state: &State, model: &M, config: &Config) -> usize {
    let mut turns: Vec<usize> = Vec::new();
    let mut current = 0usize;
    for m in state.messages.iter().rev() {
        current += footprint(state, model, config, m);
        if m.role == Role::User {
            turns.push(current);
            current = 0;
            if turns.len() == 3 {
                break;
            }
        }
    }
    if turns.len() < 3 && current > 0 {
        turns.push(current);
    }
    turns.into_iter().max().unwrap_or(0)
}

/// Tokens that cannot leave: the newest live episode and the open stretch,
/// with the recall blocks shown in them.
pub fn protected_tokens<M: Model>(state: &State, model: &M, config: &Config) -> usize {
    let newest = state.newest_live().and_then(|id| state.episode(id));
    let newest = newest.map_or(&[][..], |e| state.episode_messages(e));
    newest
        .iter()
        .chain(state.open_stretch())
        .map(|m| footprint(state, model, config, m))
        .sum()
}

/// The landing for the configured ceiling, and the recent turn size it used.
pub fn landing<M: Model>(state: &State, model: &M, config: &Config) -> (usize, usize) {
    let ceiling = config.ceiling_tokens;
    let turn = recent_turn_tokens(state, model, config);
    let l = (ceiling / 2).min(ceiling.saturating_sub(2 * turn));
    (l.max(protected_tokens(state, model, config)), turn)
}

/// The next episode to leave: lowest activation now (older first on ties),
/// among live episodes but the newest and sealed ones. An episode moves at
/// most once per fade, so facts a fade seals stay in the facts block at least
/// until the next fade.
fn pick(state: &State, now: i64, fade: u64) -> Option<u64> {
    let newest = state.newest_live();
    state
        .episodes
        .iter()
        .filter(|e| e.history.iter().all(|c| c.fade != Some(fade)))
        .filter(|e| match e.state {
            EpisodeState::Live => Some(e.id) != newest,
            EpisodeState::Sealed => true,
            _ => false,
        })
        .map(|e| (state.activation(e, now), e.id))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .map(|(_, id)| id)
}

fn change(ctx: &mut Ctx<'_, impl Model>, episode: u64, state: EpisodeState, fade: u64) {
    let change = StateChange {
        state,
        at: ctx.now,
        fade: Some(fade),
    };
    ctx.emit(Event::StateChanged { episode, change });
}

/// Notes a leaving episode and seals it; records the failure otherwise.
/// Returns whether it was sealed.
async fn seal<M: Model>(ctx: &mut Ctx<'_, M>, episode: u64, fade: Option<u64>) -> bool {
    match crate::note::note_episode(ctx, episode).await {
        Ok(_) => {
            let change = StateChange {
                state: EpisodeState::Sealed,
                at: ctx.now,
                fade,
            };
            ctx.emit(Event::StateChanged { episode, change });
            true
        }
        Err(e) => {
            let failure = NoteFailure {
                at: ctx.now,
                error: e.to_string(),
            };
            ctx.emit(Event::NoteFailed { episode, failure });
            false
        }
    }
}

/// Runs the fade: resumes the running one, or starts one when the view is at
/// the ceiling or a sleep is due. Returns the id of the last fade that ran.
/// A sleep that is due (see [`crate::sleep`]) starts its own fade as soon as
/// no other fade runs: at once, or after the running fade finishes, in this
/// call or a later one.
pub(crate) async fn run<M: Model>(ctx: &mut Ctx<'_, M>) -> Option<u64> {
    let sleep = ctx.state.sleep_due.is_some() && ctx.state.running_fade().is_none();
    let ran = step(ctx, sleep).await;
    if ctx.state.sleep_due.is_some() && ctx.state.running_fade().is_none() {
        return step(ctx, true).await;
    }
    ran
}

/// One fade: resumes the running one, or starts one when the view is at the
/// ceiling (or `sleep` asks for it).
async fn step<M: Model>(ctx: &mut Ctx<'_, M>, sleep: bool) -> Option<u64> {
    let ceiling = ctx.config.ceiling_tokens;
    let fade = match ctx.state.running_fade() {
        Some(f) => f.clone(),
        None => {
            let view = ctx.view_tokens();
            if !sleep && view < ceiling {
                return None;
            }
            // A ceiling with nothing that could leave starts no fade.
            let next = ctx.state.fades.len() as u64 + 1;
            if !sleep && pick(ctx.state, ctx.now, next).is_none() {
                return None;
            }
            let (landing, turn_tokens) = landing(ctx.state, ctx.model, ctx.config);
            let f = Fade {
                id: ctx.state.fades.len() as u64 + 1,
                reason: if sleep {
                    FadeReason::Sleep
                } else {
                    FadeReason::Ceiling
                },
                at: ctx.now,
                view_tokens: view,
                ceiling,
                landing,
                turn_tokens,
                finished_at: None,
                view_after: None,
            };
            ctx.emit(Event::FadeStarted(f.clone()));
            f
        }
    };
    let leaving: Vec<u64> = ctx
        .state
        .episodes
        .iter()
        .filter(|e| e.state == EpisodeState::Leaving)
        .map(|e| e.id)
        .collect();
    let mut model_ok = true;
    for id in leaving {
        model_ok &= seal(ctx, id, Some(fade.id)).await;
    }
    while ctx.view_tokens() > fade.landing {
        let Some(id) = pick(ctx.state, ctx.now, fade.id) else {
            break;
        };
        if ctx.state.episode(id).expect("picked").state == EpisodeState::Live {
            // After a failed note the model is not asked again this call:
            // the fade waits here (the next call resumes it) rather than
            // move a more activated sealed episode out of its turn.
            if !model_ok {
                break;
            }
            change(ctx, id, EpisodeState::Leaving, fade.id);
            model_ok &= seal(ctx, id, Some(fade.id)).await;
        } else {
            change(ctx, id, EpisodeState::Forgotten, fade.id);
        }
    }
    if !ctx
        .state
        .episodes
        .iter()
        .any(|e| e.state == EpisodeState::Leaving)
    {
        let view_tokens = ctx.view_tokens();
        ctx.emit(Event::FadeFinished {
            fade: fade.id,
            at: ctx.now,
            view_tokens,
        });
    }
    Some(fade.id)
}
