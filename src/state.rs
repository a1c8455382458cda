//! The memory's state: the fold of its events, plus derived lookups.
//!
//! The derived lookups (`#[serde(skip)]`: alias index, facts by entity, the
//! word indexes and the meaning indexes of facts, passages and entity names)
//! are updated as each event is applied and rebuilt from the state on load
//! ([`State::rebuild_derived`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::episode::{Episode, EpisodeState, StateChange};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::fact::Fact;
use crate::message::{Message, Role};
use crate::recall::{bm25::Bm25, passage::Passage, vector::VectorIndex, Item, RecallBlock};
use crate::types::entity::Entity;
use crate::types::fade::Fade;
use crate::types::trace::Trace;

/// Everything a memory holds. Ids are 1-based positions in their vectors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Every message, in order.
    pub messages: Vec<Message>,
    /// Every episode, in order of formation.
    pub episodes: Vec<Episode>,
    /// Every trace, in order: the yes answers and the encoding traces (and,
    /// in memories written before format 3, the no answers).
    pub traces: Vec<Trace>,
    /// Per judged fact, how many episodes answered no (format 3 counts them
    /// instead of storing a trace each).
    #[serde(default)]
    pub declined: BTreeMap<u64, u32>,
    /// Every entity.
    pub entities: Vec<Entity>,
    /// Every fact (retired ones included).
    pub facts: Vec<Fact>,
    /// Every fade.
    pub fades: Vec<Fade>,
    /// Dimension of the model's embeddings, fixed by the first one seen.
    pub dimension: Option<usize>,
    /// Passages of sealed episodes, for recall.
    #[serde(default)]
    pub passages: Vec<Passage>,
    /// Recall blocks, in order.
    #[serde(default)]
    pub recalls: Vec<RecallBlock>,
    /// Time of the last user message.
    pub last_user_at: Option<i64>,
    /// The host's own instructions, pinned first in every view, and when
    /// they were set.
    #[serde(default)]
    pub instructions: Option<(String, i64)>,
    /// A sleep that is due and has not started its fade yet.
    #[serde(default)]
    pub sleep_due: Option<i64>,
    /// Normal form of every alias -> entity id (derived).
    #[serde(skip)]
    pub alias_index: BTreeMap<String, u64>,
    /// Per entity (at its id - 1): ids of the facts naming it as subject or
    /// object (derived; entity ids are positions, so a vector, grown to the
    /// highest entity named).
    #[serde(skip)]
    pub facts_by_entity: Vec<Vec<u64>>,
    /// Word index over facts: sentence plus entity names and aliases (derived).
    #[serde(skip)]
    pub fact_index: Bm25,
    /// Word index over passages (derived).
    #[serde(skip)]
    pub passage_index: Bm25,
    /// Meaning index over fact embeddings (derived).
    #[serde(skip)]
    pub fact_vectors: VectorIndex,
    /// Meaning index over passage embeddings (derived).
    #[serde(skip)]
    pub passage_vectors: VectorIndex,
    /// Meaning index over entity name embeddings (derived).
    #[serde(skip)]
    pub entity_vectors: VectorIndex,
    /// User message id -> its recall block (derived).
    #[serde(skip)]
    pub recall_by_message: BTreeMap<u64, u64>,
    /// Recall blocks neither distilled nor given way (derived): those that
    /// may await distill, so a turn does not scan every block of a long
    /// memory (one per user message) to find the few that do.
    #[serde(skip)]
    pub undistilled: BTreeSet<u64>,
    /// Client id -> message id (derived).
    #[serde(skip)]
    pub by_client_id: BTreeMap<String, u64>,
    /// Episodes whose messages are in view: live and leaving (derived).
    #[serde(skip)]
    pub in_view: BTreeSet<u64>,
    /// Sealed episodes, whose live facts are the facts block (derived).
    #[serde(skip)]
    pub sealed: BTreeSet<u64>,
    /// Episodes whose deferred note waits for a retry (derived).
    #[serde(skip)]
    pub awaiting_note: BTreeSet<u64>,
    /// The token counts of the view's parts, kept between changes (derived;
    /// see [`crate::sizes::Sizes`]).
    #[serde(skip)]
    pub sizes: crate::sizes::Sizes,
    /// While set, the word indexes are left as they are (a load that will
    /// put the stored ones in place, see [`crate::store::load`]): events
    /// change every other lookup as usual.
    #[serde(skip)]
    pub(crate) words_deferred: bool,
}

fn get<T>(v: &[T], id: u64, what: &str) -> Result<usize> {
    let i = id
        .checked_sub(1)
        .ok_or_else(|| Error::Corrupt(format!("{what} id 0")))? as usize;
    if i < v.len() {
        Ok(i)
    } else {
        Err(Error::Corrupt(format!("unknown {what} {id}")))
    }
}

fn next_id(len: usize, id: u64, what: &str) -> Result<()> {
    if id == len as u64 + 1 {
        Ok(())
    } else {
        Err(Error::Corrupt(format!(
            "{what} id {id} out of sequence (expected {})",
            len + 1
        )))
    }
}

/// The largest token count a stored message or episode may hold (sums of
/// them must not overflow).
const MAX_TOKENS: usize = 100_000_000;

/// Checks a stored time stamp: ages are computed from it, so one outside
/// 1970..3000 is damage, refused before it can overflow.
fn time(at: i64, what: &str) -> Result<()> {
    if (0..=crate::text::MAX_CLOCK_MS).contains(&at) {
        Ok(())
    } else {
        Err(Error::Corrupt(format!(
            "a {what} is stamped {at}, outside 1970..3000"
        )))
    }
}

impl State {
    /// Applies one event. Errors mean the event does not fit the state
    /// (corrupt log); the state may then be partly changed and must be dropped.
    pub fn apply(&mut self, event: &Event) -> Result<()> {
        // A distillation that keeps what the block shows changes nothing in
        // view (the common case: distill keeps every item).
        let same = match event {
            Event::Distilled {
                block,
                distillation,
            } => block
                .checked_sub(1)
                .and_then(|i| self.recalls.get(i as usize))
                .is_some_and(|b| {
                    let shown = b.shown();
                    match distillation.failed {
                        false => shown == distillation.kept,
                        true => shown.iter().copied().eq(b.items.iter().map(|r| r.item)),
                    }
                }),
            _ => false,
        };
        if !same {
            self.sizes.changed(event);
        }
        match event {
            Event::Message(m) => {
                next_id(self.messages.len(), m.id, "message")?;
                time(m.at, "message")?;
                if m.tokens > MAX_TOKENS {
                    return Err(Error::Corrupt(format!(
                        "message {} counts {} tokens",
                        m.id, m.tokens
                    )));
                }
                if m.role == Role::User {
                    self.last_user_at = Some(m.at);
                }
                if let Some(c) = &m.client_id {
                    if self.by_client_id.insert(c.clone(), m.id).is_some() {
                        return Err(Error::Corrupt(format!(
                            "message {} repeats client id {c:?}",
                            m.id
                        )));
                    }
                }
                self.messages.push(m.clone());
            }
            Event::EpisodeFormed {
                episode,
                first,
                last,
                at,
                tokens,
            } => {
                next_id(self.episodes.len(), *episode, "episode")?;
                if *first != self.open_from()
                    || *last < *first
                    || *last > self.messages.len() as u64
                {
                    return Err(Error::Corrupt(format!("episode {episode} has a bad range")));
                }
                self.in_view.insert(*episode);
                self.episodes.push(Episode {
                    id: *episode,
                    first: *first,
                    last: *last,
                    formed_at: *at,
                    tokens: *tokens,
                    state: EpisodeState::Live,
                    history: vec![StateChange {
                        state: EpisodeState::Live,
                        at: *at,
                        fade: None,
                    }],
                    traces: Vec::new(),
                    facts: Vec::new(),
                    note_failures: Vec::new(),
                    noted: None,
                    deferred: None,
                    abandoned: None,
                });
            }
            Event::Trace(t) => {
                next_id(self.traces.len(), t.id, "trace")?;
                time(t.at, "trace")?;
                if !(t.strength.is_finite() && (0.0..=1.0e6).contains(&t.strength)) {
                    return Err(Error::Corrupt(format!("trace {} has a bad strength", t.id)));
                }
                if let crate::types::trace::TraceCause::Fact(f)
                | crate::types::trace::TraceCause::Recall(f) = t.cause
                {
                    get(&self.facts, f, "fact")?;
                }
                let e = get(&self.episodes, t.episode, "episode")?;
                if t.yes {
                    self.episodes[e].traces.push(t.id);
                }
                self.traces.push(t.clone());
            }
            Event::Declined { fact, episodes, at } => {
                time(*at, "declined")?;
                get(&self.facts, *fact, "fact")?;
                *self.declined.entry(*fact).or_default() += episodes;
            }
            Event::StateChanged { episode, change } => {
                let i = get(&self.episodes, *episode, "episode")?;
                time(change.at, "state change")?;
                if let Some(f) = change.fade {
                    get(&self.fades, f, "fade")?;
                }
                let e = &mut self.episodes[i];
                if change.state <= e.state {
                    return Err(Error::Corrupt(format!(
                        "episode {episode} cannot move from {} to {}",
                        e.state.as_str(),
                        change.state.as_str()
                    )));
                }
                e.state = change.state;
                e.history.push(change.clone());
                self.index_state(*episode, change.state);
            }
            Event::SleepDue { at } => self.sleep_due = Some(*at),
            Event::InstructionsSet { text, at } => {
                time(*at, "instructions change")?;
                if text.len() > crate::text::MAX_INSTRUCTIONS_BYTES {
                    return Err(Error::Corrupt(format!(
                        "instructions of {} bytes",
                        text.len()
                    )));
                }
                self.instructions = (!text.is_empty()).then(|| (text.clone(), *at));
            }
            Event::FadeStarted(f) => {
                next_id(self.fades.len(), f.id, "fade")?;
                if f.reason == crate::types::fade::FadeReason::Sleep {
                    self.sleep_due = None;
                }
                self.fades.push(f.clone());
            }
            Event::FadeLanding {
                fade,
                landing,
                turn_tokens,
            } => {
                let i = get(&self.fades, *fade, "fade")?;
                self.fades[i].landing = *landing;
                self.fades[i].turn_tokens = *turn_tokens;
            }
            Event::FadeFinished {
                fade,
                at,
                view_tokens,
            } => {
                let i = get(&self.fades, *fade, "fade")?;
                let f = &mut self.fades[i];
                f.finished_at = Some(*at);
                f.view_after = Some(*view_tokens);
            }
            Event::NoteFailed { episode, failure } => {
                let e = get(&self.episodes, *episode, "episode")?;
                self.episodes[e].note_failures.push(failure.clone());
            }
            Event::EntityAdded(n) => {
                next_id(self.entities.len(), n.id, "entity")?;
                if !n.embedding.is_empty() {
                    self.set_dimension(n.embedding.len())?;
                }
                for a in &n.aliases {
                    self.alias_index.insert(a.normal.clone(), n.id);
                }
                self.entity_vectors.push_embedding(n.id, &n.embedding);
                self.entities.push(n.clone());
            }
            Event::AliasAdded { entity, alias } => {
                let i = get(&self.entities, *entity, "entity")?;
                self.alias_index.insert(alias.normal.clone(), *entity);
                self.entities[i].aliases.push(alias.clone());
                if !self.words_deferred {
                    for f in self.facts_about(*entity).to_vec() {
                        let text = self.fact_document(&self.facts[f as usize - 1]);
                        self.fact_index.insert(f, &text);
                    }
                }
            }
            Event::FactAdded(f) => {
                next_id(self.facts.len(), f.id, "fact")?;
                get(&self.entities, f.subject, "entity")?;
                get(&self.entities, f.object, "entity")?;
                let e = get(&self.episodes, f.episode, "episode")?;
                if !f.embedding.is_empty() {
                    self.set_dimension(f.embedding.len())?;
                }
                self.episodes[e].facts.push(f.id);
                self.facts.push(f.clone());
                self.index_fact(self.facts.len() - 1);
            }
            Event::FactRestated { fact, restatement } => {
                let i = get(&self.facts, *fact, "fact")?;
                let e = get(&self.episodes, restatement.episode, "episode")?;
                if !self.episodes[e].facts.contains(fact) {
                    self.episodes[e].facts.push(*fact);
                }
                self.facts[i].restated.push(restatement.clone());
            }
            Event::FactRetired { fact, retirement } => {
                let i = get(&self.facts, *fact, "fact")?;
                get(&self.facts, retirement.by, "fact")?;
                self.facts[i].retired = Some(retirement.clone());
            }
            Event::PassagesIndexed { passages } => {
                for p in passages {
                    next_id(self.passages.len(), p.id, "passage")?;
                    get(&self.episodes, p.episode, "episode")?;
                    if p.first == 0 || p.first > p.last || p.last > self.messages.len() as u64 {
                        return Err(Error::Corrupt(format!("passage {} has a bad range", p.id)));
                    }
                    if !p.embedding.is_empty() {
                        self.set_dimension(p.embedding.len())?;
                    }
                    if !self.words_deferred {
                        let text = crate::recall::passage::text(self, p.first, p.last);
                        self.passage_index.insert(p.id, &text);
                    }
                    self.passage_vectors.push_embedding(p.id, &p.embedding);
                    self.passages.push(p.clone());
                }
            }
            Event::Recalled(b) => {
                next_id(self.recalls.len(), b.id, "recall block")?;
                get(&self.messages, b.message, "message")?;
                self.check_items(b.items.iter().map(|r| &r.item))?;
                self.recall_by_message.insert(b.message, b.id);
                if b.distilled.is_none() && b.gave_way.is_none() {
                    self.undistilled.insert(b.id);
                }
                self.recalls.push(b.clone());
            }
            Event::Judged { message, boundary } => {
                let i = get(&self.messages, *message, "message")?;
                if *message < self.open_from() {
                    return Err(Error::Corrupt(format!(
                        "message {message} is judged after its episode formed"
                    )));
                }
                self.messages[i].boundary = *boundary;
                self.messages[i].judged = true;
            }
            Event::Noted { episode, at } => {
                let i = get(&self.episodes, *episode, "episode")?;
                self.episodes[i].noted = Some(*at);
                self.index_note(i);
            }
            Event::NoteDeferred { episode, at } => {
                let i = get(&self.episodes, *episode, "episode")?;
                self.episodes[i].deferred = Some(*at);
                self.index_note(i);
            }
            Event::NoteAbandoned { episode, at } => {
                let i = get(&self.episodes, *episode, "episode")?;
                self.episodes[i].abandoned = Some(*at);
                self.index_note(i);
            }
            Event::RecallGaveWay { block, at } => {
                let i = get(&self.recalls, *block, "recall block")?;
                self.recalls[i].gave_way = Some(*at);
                self.undistilled.remove(block);
            }
            Event::Distilled {
                block,
                distillation,
            } => {
                let i = get(&self.recalls, *block, "recall block")?;
                self.check_items(distillation.kept.iter())?;
                self.recalls[i].distilled = Some(distillation.clone());
                self.undistilled.remove(block);
            }
            Event::Erased { erased, .. } => {
                for &m in &erased.messages {
                    get(&self.messages, m, "message")?;
                }
                for &f in &erased.facts {
                    get(&self.facts, f, "fact")?;
                }
                for &n in &erased.entities {
                    get(&self.entities, n, "entity")?;
                }
                let reach = crate::scrub::Reach::new(self, erased);
                crate::scrub::scrub_state(self, &reach);
                self.rebuild_derived();
            }
        }
        Ok(())
    }

    fn check_items<'a>(&self, items: impl Iterator<Item = &'a Item>) -> Result<()> {
        for item in items {
            match item {
                Item::Fact(id) => get(&self.facts, *id, "fact")?,
                Item::Passage(id) => get(&self.passages, *id, "passage")?,
                // A recall block never holds a message (search only).
                Item::Message(id) => {
                    return Err(Error::invalid(format!(
                        "a recall block holds message {id}: blocks hold facts and passages"
                    )))
                }
            };
        }
        Ok(())
    }

    /// Checks a state read from a snapshot before it is used: every id in
    /// range, every range inside the messages, episodes contiguous. A
    /// snapshot is host data; a bad one is `Corrupt`, never a panic later.
    pub fn check(&self) -> Result<()> {
        let bad = |what: String| Err(Error::Corrupt(format!("snapshot: {what}")));
        let n = self.messages.len() as u64;
        for (i, m) in self.messages.iter().enumerate() {
            if m.id != i as u64 + 1 {
                return bad(format!("message {} out of sequence", m.id));
            }
            time(m.at, "message")?;
            if m.tokens > MAX_TOKENS {
                return bad(format!("message {} counts {} tokens", m.id, m.tokens));
            }
        }
        let mut next = 1;
        for (i, e) in self.episodes.iter().enumerate() {
            if e.id != i as u64 + 1 || e.first != next || e.last < e.first || e.last > n {
                return bad(format!("episode {} has a bad id or range", e.id));
            }
            next = e.last + 1;
            if e.tokens > MAX_TOKENS {
                return bad(format!("episode {} counts {} tokens", e.id, e.tokens));
            }
            for c in &e.history {
                time(c.at, "state change")?;
                if c.fade
                    .is_some_and(|f| f == 0 || f > self.fades.len() as u64)
                {
                    return bad(format!("episode {} names a fade that is not there", e.id));
                }
            }
            if e.history.last().map(|c| c.state) != Some(e.state) {
                return bad(format!(
                    "episode {} has a state its history does not end in",
                    e.id
                ));
            }
            for &t in &e.traces {
                if t == 0
                    || t > self.traces.len() as u64
                    || self.traces[t as usize - 1].episode != e.id
                {
                    return bad(format!("episode {} lists a bad trace {t}", e.id));
                }
            }
            for &f in &e.facts {
                get(&self.facts, f, "fact")?;
            }
        }
        for (i, t) in self.traces.iter().enumerate() {
            if t.id != i as u64 + 1 {
                return bad(format!("trace {} out of sequence", t.id));
            }
            get(&self.episodes, t.episode, "episode")?;
            time(t.at, "trace")?;
            match t.cause {
                crate::types::trace::TraceCause::Fact(f)
                | crate::types::trace::TraceCause::Recall(f) => {
                    get(&self.facts, f, "fact")?;
                }
                crate::types::trace::TraceCause::Encoding => {}
            }
            if !(t.strength.is_finite() && (0.0..=1.0e6).contains(&t.strength)) {
                return bad(format!("trace {} has a bad strength", t.id));
            }
        }
        for (i, e) in self.entities.iter().enumerate() {
            if e.id != i as u64 + 1 {
                return bad(format!("entity {} out of sequence", e.id));
            }
        }
        for (i, f) in self.facts.iter().enumerate() {
            if f.id != i as u64 + 1 {
                return bad(format!("fact {} out of sequence", f.id));
            }
            get(&self.entities, f.subject, "entity")?;
            get(&self.entities, f.object, "entity")?;
            get(&self.episodes, f.episode, "episode")?;
            if let Some(r) = &f.retired {
                get(&self.facts, r.by, "fact")?;
            }
        }
        for (i, p) in self.passages.iter().enumerate() {
            if p.id != i as u64 + 1 || p.first == 0 || p.first > p.last || p.last > n {
                return bad(format!("passage {} has a bad id or range", p.id));
            }
            get(&self.episodes, p.episode, "episode")?;
        }
        for (i, b) in self.recalls.iter().enumerate() {
            if b.id != i as u64 + 1 {
                return bad(format!("recall block {} out of sequence", b.id));
            }
            get(&self.messages, b.message, "message")?;
            self.check_items(b.items.iter().map(|r| &r.item))?;
            if let Some(d) = &b.distilled {
                self.check_items(d.kept.iter())?;
            }
        }
        for (i, f) in self.fades.iter().enumerate() {
            if f.id != i as u64 + 1 {
                return bad(format!("fade {} out of sequence", f.id));
            }
            time(f.at, "fade")?;
            if [f.view_tokens, f.ceiling, f.landing, f.turn_tokens]
                .iter()
                .any(|&t| t as u64 > MAX_TOKENS as u64 * 1_000)
            {
                return bad(format!("fade {} has an impossible size", f.id));
            }
        }
        Ok(())
    }

    fn set_dimension(&mut self, d: usize) -> Result<()> {
        match self.dimension {
            None => {
                self.dimension = Some(d);
                Ok(())
            }
            Some(x) if x == d => Ok(()),
            Some(x) => Err(Error::Corrupt(format!(
                "vector of dimension {d} in a memory of {x}"
            ))),
        }
    }

    /// Adds `facts[i]` to the derived lookups (facts by entity, word index).
    fn index_fact(&mut self, i: usize) {
        if self.facts[i].erased {
            return;
        }
        let (id, subject, object) = (
            self.facts[i].id,
            self.facts[i].subject,
            self.facts[i].object,
        );
        self.push_fact_of(subject, id);
        if object != subject {
            self.push_fact_of(object, id);
        }
        if !self.words_deferred {
            let text = self.fact_document(&self.facts[i]);
            self.fact_index.insert(id, &text);
        }
        self.fact_vectors
            .push_embedding(id, &self.facts[i].embedding);
    }

    /// Files fact `id` under entity `entity`.
    fn push_fact_of(&mut self, entity: u64, id: u64) {
        let Some(at) = entity.checked_sub(1).map(|i| i as usize) else {
            return;
        };
        if at >= self.facts_by_entity.len() {
            self.facts_by_entity.resize_with(at + 1, Vec::new);
        }
        self.facts_by_entity[at].push(id);
    }

    /// What the word index holds for a fact: its sentence, predicate, and
    /// every name of its subject and object.
    pub fn fact_document(&self, f: &Fact) -> String {
        let mut s = format!("{} {}", f.sentence, f.predicate);
        for e in [f.subject, f.object] {
            if let Some(n) = self.entity(e) {
                for a in &n.aliases {
                    s.push(' ');
                    s.push_str(&a.name);
                }
            }
        }
        s
    }

    /// Puts episode `id`, now in `state`, in the derived sets by state.
    fn index_state(&mut self, id: u64, state: EpisodeState) {
        match state.messages_in_view() {
            true => self.in_view.insert(id),
            false => self.in_view.remove(&id),
        };
        match state == EpisodeState::Sealed {
            true => self.sealed.insert(id),
            false => self.sealed.remove(&id),
        };
    }

    /// Puts `episodes[i]` in the derived set of deferred notes, or out of it.
    fn index_note(&mut self, i: usize) {
        let e = &self.episodes[i];
        match e.awaits_note() {
            true => self.awaiting_note.insert(e.id),
            false => self.awaiting_note.remove(&e.id),
        };
    }

    /// Rebuilds derived lookups after deserialising a snapshot.
    pub fn rebuild_derived(&mut self) {
        self.sizes.clear();
        self.in_view.clear();
        self.sealed.clear();
        self.awaiting_note.clear();
        for i in 0..self.episodes.len() {
            self.index_state(self.episodes[i].id, self.episodes[i].state);
            self.index_note(i);
        }
        self.alias_index.clear();
        self.entity_vectors = VectorIndex::default();
        for n in &self.entities {
            for a in &n.aliases {
                self.alias_index.insert(a.normal.clone(), n.id);
            }
            self.entity_vectors.push_embedding(n.id, &n.embedding);
        }
        self.facts_by_entity.clear();
        if !self.words_deferred {
            self.fact_index = Bm25::default();
        }
        self.fact_vectors = VectorIndex::default();
        for i in 0..self.facts.len() {
            self.index_fact(i);
        }
        self.recall_by_message = self.recalls.iter().map(|b| (b.message, b.id)).collect();
        self.undistilled = self
            .recalls
            .iter()
            .filter(|b| b.distilled.is_none() && b.gave_way.is_none())
            .map(|b| b.id)
            .collect();
        self.by_client_id = self
            .messages
            .iter()
            .filter_map(|m| Some((m.client_id.clone()?, m.id)))
            .collect();
        self.passage_vectors = VectorIndex::default();
        for p in &self.passages {
            self.passage_vectors.push_embedding(p.id, &p.embedding);
        }
        if !self.words_deferred {
            self.rebuild_passage_words();
        }
    }

    fn rebuild_passage_words(&mut self) {
        self.passage_index = Bm25::default();
        for p in &self.passages {
            let text = crate::recall::passage::text(self, p.first, p.last);
            self.passage_index.insert(p.id, &text);
        }
    }

    /// Builds the word indexes from the state (what applying every event
    /// builds, searching alike) and stops deferring them.
    pub(crate) fn rebuild_word_indexes(&mut self) {
        self.words_deferred = false;
        self.fact_index = Bm25::default();
        for i in 0..self.facts.len() {
            if !self.facts[i].erased {
                let text = self.fact_document(&self.facts[i]);
                self.fact_index.insert(self.facts[i].id, &text);
            }
        }
        self.rebuild_passage_words();
    }

    /// Puts stored word indexes in place (of facts and of passages) and
    /// stops deferring them, if they index exactly the facts and passages
    /// of the state; otherwise says why not and changes nothing.
    pub(crate) fn restore_word_indexes(&mut self, facts: Bm25, passages: Bm25) -> Result<()> {
        let live = self.facts.iter().filter(|f| !f.erased).map(|f| f.id);
        if !facts.ids().eq(live) {
            return Err(Error::Corrupt("it indexes other facts".into()));
        }
        if !passages.ids().eq(self.passages.iter().map(|p| p.id)) {
            return Err(Error::Corrupt("it indexes other passages".into()));
        }
        self.fact_index = facts;
        self.passage_index = passages;
        self.words_deferred = false;
        Ok(())
    }

    /// The meaning indexes, in the order their graphs are linked and named
    /// in the store: facts, passages, entity names.
    pub fn meaning_indexes(&self) -> [&VectorIndex; 3] {
        [
            &self.fact_vectors,
            &self.passage_vectors,
            &self.entity_vectors,
        ]
    }

    /// [`State::meaning_indexes`], to change.
    pub fn meaning_indexes_mut(&mut self) -> [&mut VectorIndex; 3] {
        [
            &mut self.fact_vectors,
            &mut self.passage_vectors,
            &mut self.entity_vectors,
        ]
    }

    /// Whether some episode could leave the view in a fade: a sealed one,
    /// or a live one other than the newest (which never leaves).
    pub fn can_leave(&self) -> bool {
        !self.sealed.is_empty()
            || self
                .in_view
                .iter()
                .filter(|&&id| {
                    self.episode(id)
                        .is_some_and(|e| e.state == EpisodeState::Live)
                })
                .nth(1)
                .is_some()
    }

    /// Whether message `id` is in the view (its episode live or leaving, or
    /// it is in the open stretch).
    pub fn message_in_view(&self, id: u64) -> bool {
        if id >= self.open_from() {
            return true;
        }
        let i = self.episodes.partition_point(|e| e.last < id);
        self.episodes
            .get(i)
            .is_some_and(|e| e.first <= id && e.state.messages_in_view())
    }

    /// Ids of the facts about an entity (as subject or object).
    pub fn facts_about(&self, entity: u64) -> &[u64] {
        entity
            .checked_sub(1)
            .and_then(|i| self.facts_by_entity.get(i as usize))
            .map_or(&[], |v| v.as_slice())
    }

    /// First message id of the open stretch (messages not in an episode yet).
    pub fn open_from(&self) -> u64 {
        self.episodes.last().map_or(1, |e| e.last + 1)
    }

    /// Messages of the open stretch.
    pub fn open_stretch(&self) -> &[Message] {
        &self.messages[(self.open_from() - 1) as usize..]
    }

    /// Message by id.
    pub fn message(&self, id: u64) -> &Message {
        &self.messages[(id - 1) as usize]
    }

    /// Messages of an episode.
    pub fn episode_messages(&self, e: &Episode) -> &[Message] {
        &self.messages[(e.first - 1) as usize..e.last as usize]
    }

    /// Episode by id, if it exists.
    pub fn episode(&self, id: u64) -> Option<&Episode> {
        id.checked_sub(1)
            .and_then(|i| self.episodes.get(i as usize))
    }

    /// Fact by id, if it exists.
    pub fn fact(&self, id: u64) -> Option<&Fact> {
        id.checked_sub(1).and_then(|i| self.facts.get(i as usize))
    }

    /// Entity by id, if it exists.
    pub fn entity(&self, id: u64) -> Option<&Entity> {
        id.checked_sub(1)
            .and_then(|i| self.entities.get(i as usize))
    }

    /// Trace by id.
    pub fn trace(&self, id: u64) -> &Trace {
        &self.traces[(id - 1) as usize]
    }

    /// An episode's yes-traces.
    pub fn yes_traces<'a>(&'a self, e: &'a Episode) -> impl Iterator<Item = &'a Trace> + 'a {
        e.traces.iter().map(|&t| self.trace(t))
    }

    /// Activation of an episode at `now`.
    pub fn activation(&self, e: &Episode, now: i64) -> f64 {
        crate::activation::activation(self.yes_traces(e), now)
    }

    /// Significance of an episode.
    pub fn significance(&self, e: &Episode) -> f64 {
        crate::activation::significance(self.yes_traces(e))
    }

    /// Tool call ids made in the open stretch and not answered yet.
    /// A user message abandons the calls still waiting (the chat APIs want
    /// a call's output right after it, so none can come after the user spoke).
    pub fn pending_tool_calls(&self) -> Vec<String> {
        crate::message::pending_after(self.open_stretch())
    }

    /// The newest episode still live (it never leaves).
    pub fn newest_live(&self) -> Option<u64> {
        self.episodes
            .iter()
            .rev()
            .find(|e| e.state == EpisodeState::Live)
            .map(|e| e.id)
    }

    /// The fade still running, if any.
    pub fn running_fade(&self) -> Option<&Fade> {
        self.fades.last().filter(|f| f.finished_at.is_none())
    }
}
