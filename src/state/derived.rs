//! The derived lookups: alias index, facts by entity, the word and meaning
//! indexes, kept up as events apply and rebuilt on load.

use crate::base::error::{Error, Result};
use crate::base::sort::CollectOrdered;
use crate::index::bm25::Bm25;
use crate::index::vector::VectorIndex;
use crate::state::State;
use crate::types::episode::EpisodeState;
use crate::types::fact::Fact;

impl State {
    pub(super) fn set_dimension(&mut self, d: usize) -> Result<()> {
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
    pub(super) fn index_fact(&mut self, i: usize) {
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
    pub(super) fn push_fact_of(&mut self, entity: u64, id: u64) {
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
    pub(super) fn index_state(&mut self, id: u64, state: EpisodeState) {
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
    pub(super) fn index_note(&mut self, i: usize) {
        let e = &self.episodes[i];
        match e.awaits_note() {
            true => self.awaiting_note.insert(e.id),
            false => self.awaiting_note.remove(&e.id),
        };
    }

    /// Rebuilds derived lookups after deserialising a snapshot.
    pub fn rebuild_derived(&mut self) {
        self.rebuild_lines();
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
        self.recall_by_message = self.recalls.iter().map(|b| (b.message, b.id)).into_map();
        self.undistilled = self
            .recalls
            .iter()
            .filter(|b| b.distilled.is_none() && b.gave_way.is_none())
            .map(|b| b.id)
            .into_set();
        self.by_client_id = self
            .messages
            .iter()
            .filter_map(|m| Some((m.client_id.clone()?, m.id)))
            .into_map();
        self.passage_vectors = VectorIndex::default();
        for p in &self.passages {
            self.passage_vectors.push_embedding(p.id, &p.embedding);
        }
        if !self.words_deferred {
            self.rebuild_passage_words();
        }
    }

    pub(super) fn rebuild_passage_words(&mut self) {
        self.passage_index = Bm25::default();
        for p in &self.passages {
            let text = self.passage_text(p.first, p.last);
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
}
