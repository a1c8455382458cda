//! Applying an event: the fold that makes the state, each event checked
//! against what it changes.

use crate::base::error::{Error, Result};
use crate::state::{get, next_id, time, State, MAX_TOKENS};
use crate::types::episode::{Episode, EpisodeState, StateChange};
use crate::types::event::Event;
use crate::types::message::Role;

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
            match event {
                // A message changes only its own thread's view (a
                // regenerated answer may hide what another's recall shows).
                Event::Message(m) if m.replaces.is_none() => {
                    if let Some(line) = self.threads.get_mut(&m.thread) {
                        line.sizes.changed(event);
                    }
                }
                _ => self
                    .threads
                    .values_mut()
                    .for_each(|l| l.sizes.changed(event)),
            }
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
                crate::types::message::check_stored_thread(&m.thread)
                    .map_err(|e| Error::Corrupt(format!("message {}: {e}", m.id)))?;
                if m.replaced_by.is_some() {
                    return Err(Error::Corrupt(format!(
                        "message {} is stored as replaced (the fold derives that)",
                        m.id
                    )));
                }
                let replaced = self.replaced_by(m)?;
                if let Some(c) = &m.client_id {
                    // A client id repeats only for a regenerated answer that
                    // came back as one it replaces (see `NewMessage::replaces`).
                    if let Some(old) = self.by_client_id.insert(c.clone(), m.id) {
                        if m.replaces.is_none() || self.message(old).replaced_by.is_none() {
                            return Err(Error::Corrupt(format!(
                                "message {} repeats client id {c:?}",
                                m.id
                            )));
                        }
                    }
                }
                for &id in &replaced {
                    self.messages[id as usize - 1].replaced_by = Some(m.id);
                }
                self.messages.push(m.clone());
                self.line_push(m);
            }
            Event::EpisodeFormed {
                episode,
                first,
                last,
                at,
                tokens,
            } => {
                next_id(self.episodes.len(), *episode, "episode")?;
                let thread = match (*last)
                    .checked_sub(1)
                    .map(|i| self.messages.get(i as usize))
                {
                    Some(Some(m)) => m.thread.clone(),
                    _ => return Err(Error::Corrupt(format!("episode {episode} has a bad range"))),
                };
                if *first != self.open_from(&thread) || *last < *first {
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
                    thread: thread.clone(),
                });
                self.line_episode(*episode, &thread, *last);
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
            // (The thread is the log's, for explain; the fade records it.)
            Event::SleepDue { at, .. } => self.sleep_due = Some(*at),
            Event::InstructionsSet { text, at } => {
                time(*at, "instructions change")?;
                if text.len() > crate::base::text::MAX_INSTRUCTIONS_BYTES {
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
                // A fact the host stated belongs to no episode.
                if f.episode != crate::types::fact::HOST {
                    let e = get(&self.episodes, f.episode, "episode")?;
                    self.episodes[e].facts.push(f.id);
                }
                if !f.embedding.is_empty() {
                    self.set_dimension(f.embedding.len())?;
                }
                self.facts.push(f.clone());
                self.index_fact(self.facts.len() - 1);
            }
            Event::FactRestated { fact, restatement } => {
                let i = get(&self.facts, *fact, "fact")?;
                if restatement.episode != crate::types::fact::HOST {
                    let e = get(&self.episodes, restatement.episode, "episode")?;
                    if !self.episodes[e].facts.contains(fact) {
                        self.episodes[e].facts.push(*fact);
                    }
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
                        let text = self.passage_text(p.first, p.last);
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
                if *message < self.open_from(&self.messages[i].thread) {
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
                let reach = crate::state::scrub::Reach::new(self, erased);
                crate::state::scrub::scrub_state(self, &reach);
                self.rebuild_derived();
            }
        }
        Ok(())
    }
}

impl State {
    /// The messages a regenerated answer `m` replaces: those after the user
    /// message it names in its thread still shown (none for another
    /// message). Refused when it names no user message of its thread.
    fn replaced_by(&self, m: &crate::types::message::Message) -> Result<Vec<u64>> {
        let Some(q) = m.replaces else {
            return Ok(Vec::new());
        };
        let fits = m.role == Role::Assistant
            && (1..m.id).contains(&q)
            && self.message(q).role == Role::User
            && self.message(q).thread == m.thread;
        if !fits {
            return Err(Error::Corrupt(format!(
                "message {} replaces the answer to {q}, which is not a user message before it \
                 in its thread",
                m.id
            )));
        }
        let ids = &self.line(&m.thread).ids;
        let after = ids.partition_point(|&id| id <= q);
        Ok(ids[after..]
            .iter()
            .copied()
            .filter(|&id| self.message(id).replaced_by.is_none())
            .collect())
    }
}
