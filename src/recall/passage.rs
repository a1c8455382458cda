//! Passages: out-of-view conversation cut into runs of whole messages, kept
//! with their embeddings so recall can quote what was said.

use crate::base::host::{Model, ModelError};
use crate::base::text::clip;
use crate::state::State;
use crate::step::Ctx;
use crate::types::message::Message;
use crate::types::recall::Passage;

/// Cuts messages into runs of at most `max_tokens` (a longer message is a
/// run of its own). Returns (first, last) message ids.
pub fn cut(messages: &[Message], max_tokens: usize) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut start: Option<(u64, usize)> = None;
    let mut prev = 0u64;
    for m in messages {
        match start {
            Some((first, tokens)) if tokens + m.tokens <= max_tokens => {
                start = Some((first, tokens + m.tokens));
            }
            Some((first, _)) => {
                out.push((first, prev));
                start = Some((m.id, m.tokens));
            }
            None => start = Some((m.id, m.tokens)),
        }
        prev = m.id;
    }
    if let Some((first, _)) = start {
        out.push((first, prev));
    }
    out
}

/// [`State::passage_text`] with its line breaks (between messages and within them) made
/// `sep`, appended to `out` clipped as [`crate::base::text::push_clipped`] does:
/// built only as far as the clip reads (a prompt line needs 120 tokens of a
/// passage that may be much longer).
pub fn push_text_clipped(
    out: &mut String,
    state: &State,
    (first, last): (u64, u64),
    sep: &str,
    max_tokens: usize,
) {
    let max_bytes = max_tokens * 4;
    let mut s = String::new();
    for m in state
        .thread_ids(first, last)
        .iter()
        .map(|&id| state.message(id))
        .filter(|m| m.shown())
    {
        if s.len() > max_bytes {
            break;
        }
        if !s.is_empty() {
            s.push_str(sep);
        }
        s.push_str(m.role.as_str());
        s.push_str(": ");
        let text = m.display_text();
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                s.push_str(sep);
            }
            s.push_str(line);
        }
    }
    crate::base::text::push_clipped(out, &s, max_tokens);
}

/// Whether `episode`'s passages are indexed already.
pub fn indexed(state: &State, episode: u64) -> bool {
    state.passages.iter().rev().any(|p| p.episode == episode)
}

/// Cuts `episode` into passages and embeds them (nothing is emitted); none
/// when they are indexed already.
pub(crate) async fn prepare<M: Model>(
    ctx: &Ctx<'_, M>,
    episode: u64,
) -> Result<Vec<Passage>, ModelError> {
    if indexed(ctx.state, episode) {
        return Ok(Vec::new());
    }
    let e = ctx.state.episode(episode).expect("episode exists");
    let runs = cut(&ctx.state.episode_messages(e), ctx.config.passage_tokens);
    let texts: Vec<String> = runs
        .iter()
        .map(|&(f, l)| clip(&ctx.state.passage_text(f, l), 512))
        .collect();
    let vectors = ctx.embed(&texts, None).await?;
    Ok(passages(ctx, episode, runs, vectors))
}

/// [`prepare`], or passages searchable by words only (no embedding) when the
/// embedder fails (reported).
pub(crate) async fn prepare_or_words<M: Model>(ctx: &Ctx<'_, M>, episode: u64) -> Vec<Passage> {
    match prepare(ctx, episode).await {
        Ok(p) => p,
        Err(e) => {
            ctx.degrade(
                crate::base::host::Task::Note,
                &e,
                "passages indexed for search by words only",
            );
            let e = ctx.state.episode(episode).expect("episode exists");
            let runs = cut(&ctx.state.episode_messages(e), ctx.config.passage_tokens);
            let none = vec![Vec::new(); runs.len()];
            passages(ctx, episode, runs, none)
        }
    }
}

fn passages<M: Model>(
    ctx: &Ctx<'_, M>,
    episode: u64,
    runs: Vec<(u64, u64)>,
    vectors: Vec<Vec<f32>>,
) -> Vec<Passage> {
    let next = ctx.state.passages.len() as u64 + 1;
    runs.into_iter()
        .zip(vectors)
        .enumerate()
        .map(|(i, ((first, last), embedding))| Passage {
            id: next + i as u64,
            episode,
            first,
            last,
            at: ctx.state.message(last).at,
            embedding: embedding.into(),
        })
        .collect()
}

/// The message ids of passage `id` (its thread's messages from its first
/// to its last).
pub fn passage_ids(state: &State, id: u64) -> Option<&[u64]> {
    id.checked_sub(1)
        .and_then(|i| state.passages.get(i as usize))
        .map(|p| state.thread_ids(p.first, p.last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::event::Event;
    use crate::types::message::{Message, Role};

    fn state_with(texts: &[&str]) -> State {
        let mut state = State::default();
        for (i, t) in texts.iter().enumerate() {
            state
                .apply(&Event::Message(Message {
                    id: i as u64 + 1,
                    role: if i % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    content: t.to_string(),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    at: 1_000 * i as i64,
                    tokens: 10,
                    boundary: None,
                    judged: true,
                    client_id: None,
                    erased: false,
                    thread: crate::types::message::main_thread(),
                    metadata: None,
                    replaces: None,
                    replaced_by: None,
                }))
                .expect("message applies");
        }
        state
    }

    #[test]
    fn a_clipped_passage_text_is_the_whole_text_clipped() {
        let long = "é wörd ".repeat(90);
        let texts = ["short", "two\nlines", &long, "tail\n", "ü"];
        let state = state_with(&texts);
        for first in 1..=texts.len() as u64 {
            for last in first..=texts.len() as u64 {
                for max in [0, 1, 3, 10, 120, 400] {
                    let mut want = String::from("x");
                    crate::base::text::push_clipped(
                        &mut want,
                        &state.passage_text(first, last).replace('\n', " / "),
                        max,
                    );
                    let mut got = String::from("x");
                    push_text_clipped(&mut got, &state, (first, last), " / ", max);
                    assert_eq!(got, want, "messages {first}..={last}, {max} tokens");
                }
            }
        }
    }
}
