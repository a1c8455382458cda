//! The checks of a whole state (after load or import): every reference
//! resolves, every id and time is in range.

use crate::base::error::{Error, Result};
use crate::state::{get, time, State, MAX_TOKENS};
use crate::types::recall::Item;

impl State {
    pub(super) fn check_items<'a>(&self, items: impl Iterator<Item = &'a Item>) -> Result<()> {
        for item in items {
            match item {
                Item::Fact(id) => get(&self.facts, *id, "fact")?,
                Item::Passage(id) => get(&self.passages, *id, "passage")?,
                // (Another thread's message, recalled while in its view.)
                Item::Message(id) => get(&self.messages, *id, "message")?,
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
            if f.episode != crate::types::fact::HOST {
                get(&self.episodes, f.episode, "episode")?;
            }
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
}
