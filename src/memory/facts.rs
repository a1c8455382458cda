//! Facts the host can address: stating one (`remember`), replacing one
//! (`revise`), reading one (`fact`) and its history (`history`).

use crate::base::error::{Error, Result};
use crate::base::host::{Clock, Model, Store};
use crate::memory::handle::Memory;
use crate::memory::write::Operation;
use crate::step::Ctx;
use crate::types::fact::{Fact, FactHistory, HistoryEntry, Remembered, Statement};

/// `remember`'s work.
struct Remember<'a>(&'a Statement);

impl Operation for Remember<'_> {
    type Output = Remembered;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<Remembered> {
        crate::remember::remember(ctx, self.0).await
    }
}

/// `revise`'s work.
struct Revise<'a>(u64, &'a Statement);

impl Operation for Revise<'_> {
    type Output = Remembered;
    async fn run<M: Model>(&self, ctx: &mut Ctx<'_, M>) -> Result<Remembered> {
        crate::remember::revise(ctx, self.0, self.1).await
    }
}

impl<S: Store, M: Model, C: Clock> Memory<S, M, C> {
    /// Remembers a fact the host states, at any time (a memory with no
    /// episode yet included): its triple, or a sentence the `note` model
    /// turns into one. It is placed in the graph as a note's facts are:
    /// its names resolved to entities, reconciled with the facts held about
    /// them (a restatement merges into the held fact, a contradiction
    /// retires the older one), judged against the remembered episodes
    /// (traces). Its source is the host: its `episode` is
    /// [`crate::types::fact::HOST`] (0) and its `said_at` the time it was
    /// stated. It is searched and recalled like any fact; it is not in the
    /// facts block, which holds the facts of sealed episodes. Committed
    /// before it returns; an empty or oversize statement is `InvalidInput`
    /// and changes nothing.
    pub async fn remember(&mut self, statement: impl Into<Statement>) -> Result<Remembered> {
        self.writable()?;
        let statement = statement.into();
        crate::remember::check(&statement)?;
        self.transact(&Remember(&statement)).await
    }

    /// Revises fact `id`. Facts are never edited in place: the statement
    /// is remembered as a new fact from the host that retires fact `id`
    /// (its history says so, and it stays explainable and recallable as
    /// retired). When the statement restates another held fact, that fact
    /// retires fact `id` instead. An unknown id, a fact that no longer
    /// holds, an empty statement or one that restates fact `id` itself is
    /// `InvalidInput` and changes nothing.
    pub async fn revise(&mut self, id: u64, statement: impl Into<Statement>) -> Result<Remembered> {
        self.writable()?;
        let statement = statement.into();
        crate::remember::check(&statement)?;
        self.transact(&Revise(id, &statement)).await
    }

    /// Fact `id`, or `None` when the memory has no such fact (id 0 is
    /// `InvalidInput`: ids start at 1). Retired and erased facts are
    /// returned, marked.
    pub async fn fact(&mut self, id: u64) -> Result<Option<Fact>> {
        if id == 0 {
            return Err(Error::invalid("fact ids start at 1"));
        }
        self.sync().await?;
        Ok(self.state.fact(id).cloned())
    }

    /// What happened to fact `id`, oldest first: when it was written (and
    /// from which episode, or the host), each mention that merged into it,
    /// each older fact it retired, the newer fact that retired it, whether
    /// it was erased. An unknown id is `InvalidInput`.
    pub async fn history(&mut self, id: u64) -> Result<FactHistory> {
        self.sync().await?;
        let s = &self.state;
        let f = s
            .fact(id)
            .ok_or_else(|| crate::remember::unknown_fact(s, id))?;
        let mut dated: Vec<(i64, u8, HistoryEntry)> = vec![(
            f.noted_at,
            0,
            HistoryEntry::Added {
                episode: f.episode,
                sentence: f.sentence.clone(),
                at: f.noted_at,
            },
        )];
        for r in &f.restated {
            let entry = HistoryEntry::Merged {
                episode: r.episode,
                sentence: r.sentence.clone(),
                at: r.at,
            };
            dated.push((r.at, 1, entry));
        }
        // The facts it retired: those whose retirement names it (newer ids
        // never retire through an older one's id, so every fact is read).
        for g in &s.facts {
            if let Some(r) = g.retired.as_ref().filter(|r| r.by == id) {
                let entry = HistoryEntry::Retired {
                    fact: g.id,
                    at: r.at,
                };
                dated.push((r.at, 2, entry));
            }
        }
        if let Some(r) = &f.retired {
            let entry = HistoryEntry::RetiredBy {
                fact: r.by,
                at: r.at,
            };
            dated.push((r.at, 3, entry));
        }
        crate::base::sort::sort_by(&mut dated, |a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut entries: Vec<HistoryEntry> = dated.into_iter().map(|(_, _, e)| e).collect();
        if f.erased {
            entries.push(HistoryEntry::Erased);
        }
        Ok(FactHistory {
            fact: id,
            live: f.is_live(),
            entries,
        })
    }
}
