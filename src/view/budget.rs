//! The view's budget: the recent turn size, the landing a fade aims for,
//! and the view's size once its leaving episodes are out (the maths of `crate::fade`, which the
//! view and the fade both use).

use crate::base::config::Config;
use crate::base::host::Model;
use crate::state::State;
use crate::types::episode::EpisodeState;
use crate::types::message::Role;
use crate::view::{footprint, protected_tokens, ItemKind};

/// Size of `thread`'s recent turns, recall blocks included: the largest of
/// the last three.
pub fn recent_turn_tokens<M: Model>(
    state: &State,
    model: &M,
    config: &Config,
    thread: &str,
) -> usize {
    let mut turns: Vec<usize> = Vec::new();
    let mut current = 0usize;
    for m in state
        .line(thread)
        .ids
        .iter()
        .rev()
        .map(|&id| state.message(id))
    {
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

/// The landing of `thread`'s view for the configured ceiling, and the
/// recent turn size it used: `min(ceiling / 2, ceiling - 2 x turn)`, raised
/// to what cannot leave, and never above the ceiling.
pub fn landing<M: Model>(
    state: &State,
    model: &M,
    config: &Config,
    thread: &str,
) -> (usize, usize) {
    let ceiling = config.ceiling_tokens;
    let turn = recent_turn_tokens(state, model, config, thread);
    let l = (ceiling / 2).min(ceiling.saturating_sub(2 * turn));
    (
        l.max(protected_tokens(state, model, config, thread))
            .min(ceiling),
        turn,
    )
}

/// The size of `thread`'s view once its leaving episodes are out of it
/// (their messages, the recall blocks shown with them and their warnings):
/// what a fade measures against its landing while their notes are still to
/// be written.
pub fn projected_tokens<M: Model>(
    state: &State,
    model: &M,
    config: &Config,
    thread: &str,
) -> usize {
    let view = crate::view::build(state, model, config, thread);
    let leaving = |e: Option<u64>| {
        e.and_then(|id| state.episode(id))
            .is_some_and(|e| e.state == EpisodeState::Leaving)
    };
    let mut held = 0usize; // a recall block waiting for its user message
    let mut gone = 0usize;
    for it in &view.items {
        match it.kind {
            ItemKind::Recall => held = it.tokens,
            ItemKind::Message => {
                if leaving(it.episode) {
                    gone += it.tokens + held;
                }
                held = 0;
            }
            ItemKind::Warning if leaving(it.episode) => gone += it.tokens,
            _ => {}
        }
    }
    view.tokens - gone
}
