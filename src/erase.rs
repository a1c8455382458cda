//! Erasure on request: what erasing a message, an episode, a fact or an
//! entity takes with it, and the events and state without it.
//!
//! engram's own mechanics never delete (fading only moves episodes out of
//! the view). Erasure is the host's request to remove data for good, so it
//! rewrites the stored log: every event that held the erased text or its
//! embedding is scrubbed ([`scrub_event`]), and one [`Event::Erased`] that
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

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Error, Result};
use crate::event::Event;
use crate::fact::Fact;
use crate::graph::Entity;
use crate::message::Message;
use crate::persist::LogEntry;
use crate::recall::{Item, RecallBlock};
use crate::state::State;
use crate::trace::TraceCause;

/// Kept for `fact.rs`'s serde attribute until its path moves (issue 27).
pub(crate) use crate::codec::is_false;
pub use crate::types::erase::{Erased, Target};

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
            messages.extend(e.messages());
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
        .collect();
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
            .find(|c| c.tool_calls.iter().any(|t| &t.id == call)),
        None if !m.tool_calls.is_empty() => Some(m),
        None => None,
    };
    let Some(caller) = caller else {
        return vec![id];
    };
    let calls: BTreeSet<&str> = caller.tool_calls.iter().map(|c| c.id.as_str()).collect();
    let mut out = vec![caller.id];
    // Outputs come after the call, before the next message that calls one
    // of the same ids again (ids are unique only while waiting).
    for o in &state.messages[caller.id as usize..] {
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

/// Ids of the episodes holding any of `messages`.
fn episodes_of(state: &State, messages: &BTreeSet<u64>) -> BTreeSet<u64> {
    messages
        .iter()
        .filter_map(|&m| {
            let i = state.episodes.partition_point(|e| e.last < m);
            state.episodes.get(i).filter(|e| e.first <= m).map(|e| e.id)
        })
        .collect()
}

/// An erase's reach over the state, for scrubbing events and the state.
pub struct Reach {
    erased: Erased,
    messages: BTreeSet<u64>,
    /// Tokens of the erased messages (read before they were zeroed).
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
        let messages: BTreeSet<u64> = erased.messages.iter().copied().collect();
        let facts: BTreeSet<u64> = erased.facts.iter().copied().collect();
        let mut passages = BTreeSet::new();
        let mut gone: BTreeSet<Item> = facts.iter().map(|&f| Item::Fact(f)).collect();
        for p in &state.passages {
            let holds = messages.range(p.first..=p.last).next().is_some();
            if holds {
                passages.insert(p.id);
                if (p.first..=p.last).all(|m| messages.contains(&m) || state.message(m).erased) {
                    gone.insert(Item::Passage(p.id));
                }
            }
        }
        Reach {
            tokens: messages
                .iter()
                .map(|&m| (m, state.message(m).tokens))
                .collect(),
            episodes: episodes_of(state, &messages),
            alias_times: facts
                .iter()
                .filter_map(|&f| state.fact(f))
                .map(|f| f.noted_at)
                .collect(),
            blocks: state
                .recalls
                .iter()
                .filter(|b| messages.contains(&b.message))
                .map(|b| b.id)
                .collect(),
            entities: erased.entities.iter().copied().collect(),
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
            first,
            last,
            tokens,
            ..
        } => {
            let gone: usize = r.tokens.range(*first..=*last).map(|(_, t)| t).sum();
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
    let traces = &state.traces;
    for e in &mut state.episodes {
        e.traces.retain(|&t| traces[t as usize - 1].yes);
        if r.episodes.contains(&e.id) {
            // Its own facts are erased; the restatements it wrote dropped.
            e.facts.clear();
            e.tokens = state.messages[(e.first - 1) as usize..e.last as usize]
                .iter()
                .map(|m| m.tokens)
                .sum();
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

/// The log rewritten without what `erased` reaches, plus the entry that
/// records the erasure, and the state it folds to. Returns the entries
/// that changed (the new one last) and that state. Fails, writing
/// nothing, if the rewritten log does not replay.
pub fn rewrite_log(
    state: &State,
    log: Vec<LogEntry>,
    target: Target,
    erased: &Erased,
    at: i64,
) -> Result<(Vec<LogEntry>, State)> {
    let reach = Reach::new(state, erased);
    let mut changed = Vec::new();
    let mut folded = State::default();
    let replay = |folded: &mut State, entry: &LogEntry| -> Result<()> {
        for e in &entry.events {
            folded.apply(e).map_err(|e| {
                Error::Corrupt(format!(
                    "the log rewritten for erasure does not replay at entry {}: {e}",
                    entry.seq
                ))
            })?;
        }
        Ok(())
    };
    let seq = log.len() as u64 + 1;
    for mut entry in log {
        // Compared as JSON (what is stored): no PartialEq of every event
        // type in the wasm builds.
        let before = serde_json::to_string(&entry.events).expect("events serialise");
        entry.events.retain_mut(|e| scrub_event(e, &reach));
        replay(&mut folded, &entry)?;
        if serde_json::to_string(&entry.events).expect("events serialise") != before {
            changed.push(entry);
        }
    }
    let record = LogEntry {
        seq,
        id: String::new(),
        at,
        events: vec![Event::Erased {
            target,
            erased: reach.erased.clone(),
            at,
        }],
    };
    replay(&mut folded, &record)?;
    changed.push(record);
    Ok((changed, folded))
}
