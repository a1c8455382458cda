//! Erasure on request: what erasing a message, an episode, a fact or an
//! entity takes with it, and the events and state without it.
//!
//! engram's own mechanics never delete (fading only moves episodes out of
//! the view). Erasure is the host's request to remove data for good, so it
//! rewrites the stored log: every event that held the erased text or its
//! embedding is scrubbed (`crate::state::scrub`), and one [`Event::Erased`](crate::types::event::Event::Erased) that
//! keeps only ids and the time records that it happened. Ids are positions,
//! so an erased message, fact or entity stays as a tombstone (id, times,
//! `erased: true`) with its text, names and vectors gone.
//!
//! What goes with what ([`plan`]):
//! - a **message** takes the tool exchange it belongs to (the call and
//!   every output answering it, so the view stays a valid chat), and the
//!   facts noted from its episode (a fact does not record which message of
//!   its episode said it, so all of them go); restatements that episode
//!   wrote are dropped from older facts;
//! - an **episode** takes its messages, as above;
//! - a **fact** takes its restatements; facts it retired hold again;
//! - an **entity** takes every fact that names it.
//!
//! Then, for all of them: entities left with no fact are erased; aliases
//! written in the same note as an erased fact (other than an entity's first
//! name) are dropped; traces an erased fact caused stop counting; recall
//! blocks lose the erased items (and, for an erased user message, their
//! parts and items); passages that hold an erased message lose their
//! embedding (they are found by the words that remain).

use std::collections::BTreeSet;

use crate::base::error::{Error, Result};
use crate::base::sort::CollectOrdered;
use crate::state::scrub::episodes_of;
use crate::state::State;
use crate::types::erase::{Erased, Target};

/// Everything an erase takes, given the target: ids not erased yet. Empty
/// when all of it is already erased. An unknown id is `InvalidInput`.
pub fn plan(state: &State, target: Target) -> Result<Erased> {
    let unknown = |what: &str, id: u64| Error::invalid(format!("no {what} {id} to erase"));
    let mut messages = BTreeSet::new();
    let mut facts = BTreeSet::new();
    let mut entities = BTreeSet::new();
    match target {
        Target::Message(id) => {
            if id == 0 || id > state.messages.len() as u64 {
                return Err(unknown("message", id));
            }
            messages.insert(id);
        }
        Target::Episode(id) => {
            let e = state.episode(id).ok_or_else(|| unknown("episode", id))?;
            messages.extend(state.episode_ids(e));
        }
        Target::Fact(id) => {
            state.fact(id).ok_or_else(|| unknown("fact", id))?;
            facts.insert(id);
        }
        Target::Entity(id) => {
            state.entity(id).ok_or_else(|| unknown("entity", id))?;
            entities.insert(id);
            facts.extend(state.facts_about(id));
        }
        Target::Thread(name) => {
            let line = state
                .threads
                .get(&name)
                .ok_or_else(|| Error::invalid(format!("no thread {name:?} to erase")))?;
            messages.extend(line.ids.iter().copied());
        }
    }
    // A tool exchange goes whole: a call without its output (or an output
    // without its call) is not a valid chat.
    for id in messages.clone() {
        messages.extend(exchange(state, id));
    }
    let episodes = episodes_of(state, &messages);
    facts.extend(
        state
            .facts
            .iter()
            .filter(|f| episodes.contains(&f.episode))
            .map(|f| f.id),
    );
    // Entities no fact names any more.
    let named: BTreeSet<u64> = facts
        .iter()
        .filter_map(|&f| state.fact(f))
        .flat_map(|f| [f.subject, f.object])
        .into_set();
    for n in named {
        if state.facts_about(n).iter().all(|f| facts.contains(f)) {
            entities.insert(n);
        }
    }
    Ok(Erased {
        messages: messages
            .into_iter()
            .filter(|&m| !state.message(m).erased)
            .collect(),
        facts: facts
            .into_iter()
            .filter(|&f| state.fact(f).is_some_and(|f| !f.erased))
            .collect(),
        entities: entities
            .into_iter()
            .filter(|&n| state.entity(n).is_some_and(|n| !n.erased))
            .collect(),
    })
}

/// The messages of the tool exchange message `id` belongs to (itself
/// included): the assistant message that made the calls and every output
/// answering one of them.
fn exchange(state: &State, id: u64) -> Vec<u64> {
    let m = state.message(id);
    let caller = match &m.tool_call_id {
        Some(call) => state
            .messages
            .iter()
            .take(id as usize)
            .rev()
            .filter(|c| c.thread == m.thread)
            .find(|c| c.tool_calls.iter().any(|t| &t.id == call)),
        None if !m.tool_calls.is_empty() => Some(m),
        None => None,
    };
    let Some(caller) = caller else {
        return vec![id];
    };
    let calls: BTreeSet<&str> = caller.tool_calls.iter().map(|c| c.id.as_str()).into_set();
    let mut out = vec![caller.id];
    // Outputs come after the call, before the next message that calls one
    // of the same ids again (ids are unique only while waiting).
    for o in state.messages[caller.id as usize..]
        .iter()
        .filter(|o| o.thread == caller.thread)
    {
        if o.tool_calls.iter().any(|c| calls.contains(c.id.as_str())) {
            break;
        }
        if o.tool_call_id.as_deref().is_some_and(|c| calls.contains(c)) {
            out.push(o.id);
        }
    }
    out.push(id);
    out
}
