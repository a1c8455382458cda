//! Remembering: a fact the host states, at any time, placed in the graph as
//! a note places an episode's facts (entity resolution, reconcile: a
//! restatement merges, a contradiction retires the older fact; traces),
//! with no episode behind it: its source is the host
//! ([`crate::types::fact::HOST`]). Revising a fact is stating its
//! replacement: a new fact that retires the old one (facts are never edited
//! in place, so what was held stays explainable).
//!
//! A sentence is first turned into a triple by the `note` task, asked as a
//! note of one user message (the host speaks for its user: "I am
//! vegetarian" is the user's fact, as it would be in the chat). Every model call is made before anything is
//! emitted, so a failure changes nothing.

use crate::base::error::{Error, Result};
use crate::base::host::{Model, Task};
use crate::llm::tasks::{check_fact, NoteAnswer};
use crate::step::Ctx;
use crate::types::event::Event;
use crate::types::fact::{NewFact, Remembered, Retirement, Statement, HOST};

/// Longest sentence a statement may be, in bytes (a fact's fields have the
/// same bound).
pub const MAX_STATEMENT_BYTES: usize = 2_000;

/// Checks a statement before any work: a sentence that is not empty and
/// not over [`MAX_STATEMENT_BYTES`], or a triple the `note` tool would take
/// (no source messages: the host's statement has none).
pub(crate) fn check(statement: &Statement) -> Result<()> {
    match statement {
        Statement::Sentence(s) if s.trim().is_empty() => {
            Err(Error::invalid("an empty sentence: nothing to remember"))
        }
        Statement::Sentence(s) if s.len() > MAX_STATEMENT_BYTES => Err(Error::invalid(format!(
            "a sentence of {} bytes; at most {MAX_STATEMENT_BYTES}",
            s.len()
        ))),
        Statement::Sentence(_) => Ok(()),
        Statement::Fact(f) => {
            check_fact(f).map_err(Error::InvalidInput)?;
            match f.sources.is_empty() {
                true => Ok(()),
                false => Err(Error::invalid(
                    "a stated fact has no source messages: leave `sources` out",
                )),
            }
        }
    }
}

/// The triple of `statement`: as given, or the first fact the `note` task
/// reads in the sentence (none is `InvalidInput`: the sentence states no
/// fact the model can write).
async fn triple<M: Model>(ctx: &Ctx<'_, M>, statement: &Statement) -> Result<NewFact> {
    let sentence = match statement {
        Statement::Fact(f) => return Ok(f.clone()),
        Statement::Sentence(s) => s.trim(),
    };
    let stamp = crate::base::text::format_time(ctx.now);
    let content = format!(
        "A fact the host states, at {stamp}:\nAt most 1 facts.\n[{stamp}] user: {}\n",
        crate::base::text::inline(sentence)
    );
    let answer: NoteAnswer = ctx
        .ask(Task::Note, content, |a: &NoteAnswer| {
            a.facts.iter().try_for_each(check_fact)
        })
        .await?;
    let mut facts = answer.facts.into_iter();
    let mut fact = facts.next().ok_or_else(|| {
        Error::invalid(format!(
            "the note model found no fact in {sentence:?}: state it as subject, \
             predicate and object"
        ))
    })?;
    fact.sources.clear();
    Ok(fact)
}

/// Places `statement` in the graph as a fact the host stated.
pub(crate) async fn remember<M: Model>(
    ctx: &mut Ctx<'_, M>,
    statement: &Statement,
) -> Result<Remembered> {
    check(statement)?;
    let fact = triple(ctx, statement).await?;
    place(ctx, fact).await
}

/// Writes `fact` from the host; what it became.
async fn place<M: Model>(ctx: &mut Ctx<'_, M>, fact: NewFact) -> Result<Remembered> {
    let noted = crate::note::write_facts(ctx, HOST, vec![fact], None, None).await?;
    let (fact, merged) = match (noted.added.first(), noted.merged.first()) {
        (Some(&id), _) => (id, false),
        (None, Some(&id)) => (id, true),
        (None, None) => unreachable!("one checked fact is added or merged"),
    };
    Ok(Remembered {
        fact,
        merged,
        retired: noted.retired,
    })
}

/// Revises fact `id`: `statement` is written as a new fact from the host
/// that retires fact `id` (and whatever else it contradicts). When the
/// statement restates another held fact instead, that fact retires fact
/// `id`. A statement that restates fact `id` itself, or a fact that no
/// longer holds (retired or erased), is `InvalidInput`.
pub(crate) async fn revise<M: Model>(
    ctx: &mut Ctx<'_, M>,
    id: u64,
    statement: &Statement,
) -> Result<Remembered> {
    let old = ctx.state.fact(id).ok_or_else(|| no_fact(ctx, id))?;
    if old.erased {
        return Err(Error::invalid(format!(
            "fact {id} was erased: nothing to revise"
        )));
    }
    if let Some(r) = &old.retired {
        return Err(Error::invalid(format!(
            "fact {id} is already retired (by fact {}): revise that one",
            r.by
        )));
    }
    check(statement)?;
    let fact = triple(ctx, statement).await?;
    let mut done = place(ctx, fact).await?;
    if done.fact == id {
        // Nothing was emitted for a restatement of fact `id` that the caller
        // would not want: the handle reloads after the error.
        return Err(Error::invalid(format!(
            "the revision says what fact {id} already says: nothing to revise"
        )));
    }
    if !done.retired.contains(&id) {
        ctx.emit(Event::FactRetired {
            fact: id,
            retirement: Retirement {
                by: done.fact,
                at: ctx.now,
            },
        });
        done.retired.push(id);
    }
    Ok(done)
}

/// The error for a fact id that is not there.
pub(crate) fn no_fact<M: Model>(ctx: &Ctx<'_, M>, id: u64) -> Error {
    unknown_fact(ctx.state, id)
}

/// The error for a fact id that is not among `state`'s.
pub fn unknown_fact(state: &crate::state::State, id: u64) -> Error {
    match state.facts.len() {
        0 => Error::invalid(format!("no fact {id}: the memory has no facts yet")),
        n => Error::invalid(format!("no fact {id}: ids run 1..={n}")),
    }
}
