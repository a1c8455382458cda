//! Scrubbing what an erase reaches out of events and the state: applying
//! [`Event::Erased`] runs it, and so does the log's rewrite for erasure. What an erase takes is decided by [`crate::erase::plan`].

use crate::base::sort::CollectOrdered;
use std::collections::{BTreeMap, BTreeSet};

use crate::state::State;
use crate::types::entity::Entity;
use crate::types::erase::Erased;
use crate::types::event::Event;
use crate::types::fact::Fact;
use crate::types::message::Message;
use crate::types::recall::{Item, RecallBlock};
use crate::types::trace::TraceCause;

/// Ids of the episodes holding any of `messages`.
pub(crate) fn episodes_of(state: &State, messages: &BTreeSet<u64>) -> BTreeSet<u64> {
    messages
        .iter()
        .filter_map(|&m| {
            let thread = &state.messages.get(m.checked_sub(1)? as usize)?.thread;
            let line = &state.line(thread).episodes;
            let last = |id: u64| state.episode(id).map_or(0, |e| e.last);
            let i = line.partition_point(|&e| last(e) < m);
            line.get(i)
                .and_then(|&e| state.episode(e))
                .filter(|e| e.first <= m)
                .map(|e| e.id)
        })
        .into_set()
}

/// An erase's reach over the state, for scrubbing events and the state.
pub struct Reach {
    pub(crate) erased: Erased,
    messages: BTreeSet<u64>,
    /// Per episode holding an erased message, the tokens of those messages
    /// (read before they were zeroed).
    tokens: BTreeMap<u64, usize>,
    /// Episodes holding an erased message.
    episodes: BTreeSet<u64>,
    facts: BTreeSet<u64>,
    entities: BTreeSet<u64>,
    /// When erased facts were noted: aliases written then are dropped.
    alias_times: BTreeSet<i64>,
    /// Passages holding an erased message (their embedding goes).
    passages: BTreeSet<u64>,
    /// Items that are gone: erased facts, passages of erased messages only.
    gone: BTreeSet<Item>,
    /// Recall blocks placed before an erased message.
    blocks: BTreeSet<u64>,
}

impl Reach {
    /// The reach of `erased` over `state` (the state before or after it:
    /// ids and times are kept either way). Ids must exist.
    pub fn new(state: &State, erased: &Erased) -> Reach {
        let messages: BTreeSet<u64> = erased.messages.iter().copied().into_set();
        let facts: BTreeSet<u64> = erased.facts.iter().copied().into_set();
        let mut passages = BTreeSet::new();
        let mut gone: BTreeSet<Item> = facts.iter().map(|&f| Item::Fact(f)).into_set();
        // (Another thread's message a recall block held.)
        gone.extend(messages.iter().map(|&m| Item::Message(m)));
        for p in &state.passages {
            let ids = state.thread_ids(p.first, p.last);
            if ids.iter().any(|m| messages.contains(m)) {
                passages.insert(p.id);
                if ids
                    .iter()
                    .all(|m| messages.contains(m) || state.message(*m).erased)
                {
                    gone.insert(Item::Passage(p.id));
                }
            }
        }
        let episodes = episodes_of(state, &messages);
        Reach {
            tokens: episodes
                .iter()
                .filter_map(|&e| state.episode(e))
                .map(|e| {
                    let ids = state.episode_ids(e);
                    let gone = ids.iter().filter(|m| messages.contains(m));
                    (e.id, gone.map(|&m| state.message(m).tokens).sum())
                })
                .into_map(),
            episodes,
            alias_times: facts
                .iter()
                .filter_map(|&f| state.fact(f))
                .map(|f| f.noted_at)
                .into_set(),
            blocks: state
                .recalls
                .iter()
                .filter(|b| messages.contains(&b.message))
                .map(|b| b.id)
                .into_set(),
            entities: erased.entities.iter().copied().into_set(),
            erased: erased.clone(),
            messages,
            facts,
            passages,
            gone,
        }
    }

    fn alias_kept(&self, index: usize, at: i64) -> bool {
        index == 0 || !self.alias_times.contains(&at)
    }
}

fn scrub_message(m: &mut Message) {
    m.erased = true;
    m.content.clear();
    for c in &mut m.tool_calls {
        c.name.clear();
        c.arguments.clear();
    }
    m.tokens = 0;
    m.metadata = None;
}

fn scrub_fact(f: &mut Fact) {
    f.erased = true;
    f.predicate.clear();
    f.sentence.clear();
    f.embedding.clear();
    f.restated.clear();
    f.retired = None;
}

fn scrub_entity(n: &mut Entity) {
    n.erased = true;
    n.name.clear();
    n.aliases.clear();
    n.embedding.clear();
}

/// A fact that survives: restatements from erased episodes dropped, a
/// retirement by an erased fact undone.
fn trim_fact(f: &mut Fact, r: &Reach) {
    f.restated.retain(|s| !r.episodes.contains(&s.episode));
    if f.retired.as_ref().is_some_and(|t| r.facts.contains(&t.by)) {
        f.retired = None;
    }
}

fn trim_block(b: &mut RecallBlock, r: &Reach) {
    if r.blocks.contains(&b.id) {
        b.parts.clear();
        b.items.clear();
    }
    b.items.retain(|i| !r.gone.contains(&i.item));
    for i in &mut b.items {
        if i.via.is_some_and(|v| r.entities.contains(&v)) {
            i.via = None;
        }
    }
}

fn fact_cause(c: TraceCause) -> Option<u64> {
    match c {
        TraceCause::Fact(f) | TraceCause::Recall(f) => Some(f),
        TraceCause::Encoding => None,
    }
}

/// Scrubs one stored event. Returns whether it stays (events without ids
/// of their own, such as a restatement or an alias, are dropped instead).
pub fn scrub_event(e: &mut Event, r: &Reach) -> bool {
    match e {
        Event::Message(m) if r.messages.contains(&m.id) => scrub_message(m),
        Event::EpisodeFormed {
            episode, tokens, ..
        } => {
            let gone = r.tokens.get(episode).copied().unwrap_or(0);
            *tokens = tokens.saturating_sub(gone);
        }
        Event::Trace(t) if fact_cause(t.cause).is_some_and(|f| r.facts.contains(&f)) => {
            t.yes = false;
        }
        Event::NoteFailed { episode, failure } if r.episodes.contains(episode) => {
            failure.error = "erased".into();
        }
        Event::EntityAdded(n) if r.entities.contains(&n.id) => scrub_entity(n),
        Event::EntityAdded(n) => {
            let mut i = 0;
            n.aliases.retain(|a| {
                i += 1;
                r.alias_kept(i - 1, a.at)
            });
        }
        Event::AliasAdded { entity, alias } => {
            return !r.entities.contains(entity) && r.alias_kept(1, alias.at);
        }
        Event::FactAdded(f) if r.facts.contains(&f.id) => scrub_fact(f),
        Event::FactAdded(f) => trim_fact(f, r),
        Event::FactRestated { fact, restatement } => {
            return !r.facts.contains(fact) && !r.episodes.contains(&restatement.episode);
        }
        Event::FactRetired { fact, retirement } => {
            return !r.facts.contains(fact) && !r.facts.contains(&retirement.by);
        }
        Event::PassagesIndexed { passages } => {
            for p in passages.iter_mut().filter(|p| r.passages.contains(&p.id)) {
                p.embedding.clear();
            }
        }
        Event::Recalled(b) => trim_block(b, r),
        Event::Distilled {
            block,
            distillation,
        } => {
            if r.blocks.contains(block) {
                distillation.kept.clear();
            }
            distillation.kept.retain(|i| !r.gone.contains(i));
        }
        _ => {}
    }
    true
}

/// Erases from the state what `r` reaches (what applying
/// [`Event::Erased`] does; the caller rebuilds the derived lookups).
/// Scrubbing twice changes nothing.
pub fn scrub_state(state: &mut State, r: &Reach) {
    for &m in &r.messages {
        scrub_message(&mut state.messages[m as usize - 1]);
    }
    for &f in &r.facts {
        scrub_fact(&mut state.facts[f as usize - 1]);
    }
    for &n in &r.entities {
        scrub_entity(&mut state.entities[n as usize - 1]);
    }
    for f in state.facts.iter_mut().filter(|f| !f.erased) {
        trim_fact(f, r);
    }
    for n in state.entities.iter_mut().filter(|n| !n.erased) {
        let mut i = 0;
        n.aliases.retain(|a| {
            i += 1;
            r.alias_kept(i - 1, a.at)
        });
    }
    for t in &mut state.traces {
        if fact_cause(t.cause).is_some_and(|f| r.facts.contains(&f)) {
            t.yes = false;
        }
    }
    let erased_fact = |f: &u64| state.facts[*f as usize - 1].erased;
    let kept: BTreeMap<u64, usize> = r
        .episodes
        .iter()
        .filter_map(|&id| state.episode(id))
        .map(|e| {
            let ids = state.episode_ids(e);
            (e.id, ids.iter().map(|&m| state.message(m).tokens).sum())
        })
        .into_map();
    let traces = &state.traces;
    for e in &mut state.episodes {
        e.traces.retain(|&t| traces[t as usize - 1].yes);
        if r.episodes.contains(&e.id) {
            // Its own facts are erased; the restatements it wrote dropped.
            e.facts.clear();
            e.tokens = kept.get(&e.id).copied().unwrap_or(0);
            for n in &mut e.note_failures {
                n.error = "erased".into();
            }
        }
    }
    for e in &mut state.episodes {
        e.facts.retain(|f| !erased_fact(f));
    }
    for p in state
        .passages
        .iter_mut()
        .filter(|p| r.passages.contains(&p.id))
    {
        p.embedding.clear();
    }
    for b in &mut state.recalls {
        trim_block(b, r);
        if let Some(d) = &mut b.distilled {
            if r.blocks.contains(&b.id) {
                d.kept.clear();
            }
            d.kept.retain(|i| !r.gone.contains(i));
        }
    }
}
