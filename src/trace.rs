//! Traces: each time a fact mattered to an episode, as judged, kept forever.

use crate::base::host::{Model, ModelError, Task};
use crate::base::text::clip;
use crate::llm::tasks::{check_numbers, TraceAnswer};
use crate::step::Ctx;
use crate::types::message::Message;
use crate::types::trace::{Trace, TraceCause};

/// Facts a call names at most: the pooled sentences of several notes are
/// asked in lists of this many against each batch of episodes.
const FACTS_PER_CALL: usize = 16;

/// The answers of one pooled trace run over several notes' sentences
/// ([`prejudge`]): the episodes asked, and per sentence those that said yes.
#[derive(Debug, Default)]
pub(crate) struct Prejudged {
    asked: Vec<u64>,
    /// Per sentence (in the order asked), the episodes that said yes.
    yes: Vec<(String, Vec<u64>)>,
}

impl Prejudged {
    fn yes_to(&self, sentence: &str) -> Option<&Vec<u64>> {
        self.yes.iter().find(|(s, _)| s == sentence).map(|(_, y)| y)
    }
}

/// The ids of the remembered episodes (every new fact is judged against
/// each), in order.
fn remembered(state: &crate::state::State) -> Vec<&crate::types::episode::Episode> {
    let episodes = state.episodes.iter();
    episodes.filter(|e| e.state.remembered()).collect()
}

/// Judges `sentences` (the facts of several notes, before they are
/// written) against every remembered episode in one run: lists of at most
/// [`FACTS_PER_CALL`] sentences times batches of `trace_batch` episodes,
/// the calls sent together. The notes of one fade then cost one run instead
/// of one each (a backfilled thread's sleep notes hundreds of episodes).
pub(crate) async fn prejudge<M: Model>(
    ctx: &Ctx<'_, M>,
    sentences: &[String],
) -> Result<Prejudged, ModelError> {
    let episodes = remembered(ctx.state);
    let yes = ask(ctx, sentences, &episodes).await?;
    Ok(Prejudged {
        asked: episodes.iter().map(|e| e.id).collect(),
        yes: sentences.iter().cloned().zip(yes).collect(),
    })
}

/// Judges each of `facts` (id, sentence) against every remembered episode,
/// from `pre` when it holds every sentence against the same episodes, else
/// in calls of its own. Returns a trace per yes (fact, episode) pair,
/// numbered from `next_id`, and per fact how many episodes said no
/// (counted, not stored one by one).
pub(crate) async fn judge<M: Model>(
    ctx: &Ctx<'_, M>,
    facts: &[(u64, String)],
    next_id: u64,
    pre: Option<&Prejudged>,
) -> Result<(Vec<Trace>, Vec<(u64, u32)>), ModelError> {
    let episodes = remembered(ctx.state);
    let ids: Vec<u64> = episodes.iter().map(|e| e.id).collect();
    let known: Option<Vec<Vec<u64>>> = pre.filter(|p| p.asked == ids).and_then(|p| {
        let yes = facts.iter().map(|(_, s)| p.yes_to(s).cloned());
        yes.collect()
    });
    let yes: Vec<Vec<u64>> = match known {
        Some(yes) => yes,
        None => {
            let sentences: Vec<String> = facts.iter().map(|(_, s)| s.clone()).collect();
            ask(ctx, &sentences, &episodes).await?
        }
    };
    let mut declined = Vec::with_capacity(facts.len());
    for ((fact, _), yes) in facts.iter().zip(&yes) {
        declined.push((*fact, (ids.len() - yes.len()) as u32));
    }
    // Batch by batch, fact by fact, episode by episode (the order the
    // answers come in).
    // A trace is never dated before its episode formed: a sleep runs as of
    // when its thread fell asleep, and another thread may have formed
    // episodes since (live, the call's time is always the later).
    let mut out = Vec::new();
    for batch in episodes.chunks(ctx.config.trace_batch) {
        for ((fact, _), yes) in facts.iter().zip(&yes) {
            for episode in batch.iter().filter(|e| yes.contains(&e.id)) {
                out.push(Trace {
                    id: next_id + out.len() as u64,
                    episode: episode.id,
                    cause: TraceCause::Fact(*fact),
                    yes: true,
                    strength: 1.0,
                    at: ctx.now.max(episode.formed_at),
                });
            }
        }
    }
    Ok((out, declined))
}

/// A numbered list of facts for one call: the index of its first sentence,
/// the list's text, and how many it names.
type FactList = (usize, String, usize);

/// Per sentence, the ids of `episodes` that said yes to it (in episode
/// order), asked in lists of [`FACTS_PER_CALL`] sentences times batches of
/// `trace_batch` episodes, every call sent together.
async fn ask<M: Model>(
    ctx: &Ctx<'_, M>,
    sentences: &[String],
    episodes: &[&crate::types::episode::Episode],
) -> Result<Vec<Vec<u64>>, ModelError> {
    let mut yes = vec![Vec::new(); sentences.len()];
    if sentences.is_empty() {
        return Ok(yes);
    }
    let lists: Vec<FactList> = sentences
        .chunks(FACTS_PER_CALL)
        .enumerate()
        .map(|(c, chunk)| {
            let mut list = String::from("Facts:\n");
            for (i, s) in chunk.iter().enumerate() {
                list.push_str(&format!("{}. {s}\n", i + 1));
            }
            (c * FACTS_PER_CALL, list, chunk.len())
        })
        .collect();
    let batches: Vec<&[&crate::types::episode::Episode]> =
        episodes.chunks(ctx.config.trace_batch).collect();
    let calls: Vec<(&FactList, &[&crate::types::episode::Episode])> = lists
        .iter()
        .flat_map(|l| batches.iter().map(move |b| (l, *b)))
        .collect();
    // The calls are independent: they go out together.
    let answers = crate::base::join::join_all(
        calls
            .iter()
            .map(|((_, list, n), batch)| judge_batch(ctx, list, *n, batch))
            .collect(),
    )
    .await;
    for (((first, _, _), batch), answer) in calls.iter().zip(answers) {
        let yes_by_episode = answer?;
        for (ei, e) in batch.iter().enumerate() {
            for &f in &yes_by_episode[ei] {
                yes[first + f - 1].push(e.id);
            }
        }
    }
    // (Each fact's yes came in the order of the episodes, a sentence being
    // in one list and its batches asked in order; an episode an answer
    // names twice for a fact counts once.)
    for y in &mut yes {
        y.dedup();
    }
    Ok(yes)
}

/// One `trace` call over `batch` (the facts numbered in `fact_list`): per
/// episode of the batch, the numbers of the facts it says yes to. An answer
/// cut off at the model's length limit is asked again in two halves (down to
/// one episode a call), sequentially.
async fn judge_batch<M: Model>(
    ctx: &Ctx<'_, M>,
    fact_list: &str,
    nf: usize,
    batch: &[&crate::types::episode::Episode],
) -> Result<Vec<Vec<usize>>, ModelError> {
    let mut yes = vec![Vec::new(); batch.len()];
    let mut todo = vec![(0, batch.len())];
    while let Some((lo, hi)) = todo.pop() {
        let part = &batch[lo..hi];
        let mut content = fact_list.to_string();
        content.push_str("\nEpisodes:\n");
        for (i, e) in part.iter().enumerate() {
            let text = episode_text(&ctx.state.episode_messages(e), 60, 160);
            content.push_str(&format!(
                "{}. ({})\n{}\n",
                i + 1,
                crate::types::episode::label(e),
                text
            ));
        }
        let ne = part.len();
        let answer = ctx
            .ask(Task::Trace, content, move |a: &TraceAnswer| {
                for item in &a.facts {
                    check_numbers(&[item.fact], nf, "fact")?;
                    check_numbers(&item.episodes, ne, "episode")?;
                }
                Ok(())
            })
            .await;
        match answer {
            Ok(a) => {
                for item in a.facts {
                    for ei in item.episodes {
                        yes[lo + ei - 1].push(item.fact);
                    }
                }
            }
            Err(e) if ne > 1 && crate::base::host::is_truncated(&e) => {
                let mid = lo + ne / 2;
                todo.push((mid, hi));
                todo.push((lo, mid));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(yes)
}

/// Text of an episode for prompts: its messages, clipped.
fn episode_text(msgs: &[Message], per_message: usize, total: usize) -> String {
    let mut s = String::new();
    for m in msgs.iter().filter(|m| !m.erased) {
        s.push_str(&format!(
            "{}: {}\n",
            m.role.as_str(),
            clip(&m.display_text(), per_message)
        ));
        if crate::base::text::estimate_tokens(&s) > total {
            s.push_str("…\n");
            break;
        }
    }
    s
}
