//! Encoding: when an episode forms it gets a first trace at full strength
//! (1.0), stamped with the time it happened (its last message), so whatever
//! just happened is the most available thing in the conversation before
//! anything else can compete with it (SPEC "Encoding"). Segmentation and
//! sleep form episodes; this is the one place that does it.

use crate::base::host::Model;
use crate::step::Ctx;
use crate::types::event::Event;
use crate::types::trace::{Trace, TraceCause};

/// Forms an episode of the messages `ids` (the head of a thread's open
/// stretch).
pub fn form<M: Model>(ctx: &mut Ctx<'_, M>, ids: &[u64]) -> u64 {
    let (first, last) = (ids[0], ids[ids.len() - 1]);
    let tokens = ids.iter().map(|&id| ctx.state.message(id).tokens).sum();
    let at = ctx.state.message(last).at;
    let episode = ctx.state.episodes.len() as u64 + 1;
    ctx.emit(Event::EpisodeFormed {
        episode,
        first,
        last,
        at,
        tokens,
    });
    let id = ctx.state.traces.len() as u64 + 1;
    ctx.emit(Event::Trace(Trace {
        id,
        episode,
        cause: TraceCause::Encoding,
        yes: true,
        strength: 1.0,
        at,
    }));
    episode
}
