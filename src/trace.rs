//! Traces: each time a fact mattered to an episode, as judged, kept forever.

pub use crate::types::trace::{Trace, TraceCause};

use crate::host::{Model, ModelError, Task};
use crate::llm::tasks::{check_numbers, TraceAnswer};
use crate::step::Ctx;

/// Judges each of `facts` (id, sentence) against every remembered episode in
/// `trace` calls of at most `trace_batch` episodes. Returns a trace per yes
/// (fact, episode) pair, numbered from `next_id`, and per fact how many
/// episodes said no (counted, not stored one by one).
pub(crate) async fn judge<M: Model>(
    ctx: &Ctx<'_, M>,
    facts: &[(u64, String)],
    next_id: u64,
) -> Result<(Vec<Trace>, Vec<(u64, u32)>), ModelError> {
    let episodes: Vec<&crate::episode::Episode> = ctx
        .state
        .episodes
        .iter()
        .filter(|e| e.state.remembered())
        .collect();
    let mut out = Vec::new();
    let mut declined: Vec<(u64, u32)> = facts.iter().map(|(f, _)| (*f, 0)).collect();
    if facts.is_empty() {
        return Ok((out, declined));
    }
    let mut fact_list = String::from("Facts:\n");
    for (i, (_, s)) in facts.iter().enumerate() {
        fact_list.push_str(&format!("{}. {s}\n", i + 1));
    }
    let batches: Vec<&[&crate::episode::Episode]> =
        episodes.chunks(ctx.config.trace_batch).collect();
    // The batches are independent: they go out together.
    let answers = crate::join::join_all(
        batches
            .iter()
            .map(|batch| judge_batch(ctx, &fact_list, facts.len(), batch))
            .collect(),
    )
    .await;
    for (batch, answer) in batches.iter().zip(answers) {
        let yes_by_episode = answer?;
        for (fi, (fact, _)) in facts.iter().enumerate() {
            for (ei, e) in batch.iter().enumerate() {
                if !yes_by_episode[ei].contains(&(fi + 1)) {
                    declined[fi].1 += 1;
                    continue;
                }
                out.push(Trace {
                    id: next_id + out.len() as u64,
                    episode: e.id,
                    cause: TraceCause::Fact(*fact),
                    yes: true,
                    strength: 1.0,
                    at: ctx.now,
                });
            }
        }
    }
    Ok((out, declined))
}

/// One `trace` call over `batch` (the facts numbered in `fact_list`): per
/// episode of the batch, the numbers of the facts it says yes to. An answer
/// cut off at the model's length limit is asked again in two halves (down to
/// one episode a call), sequentially.
async fn judge_batch<M: Model>(
    ctx: &Ctx<'_, M>,
    fact_list: &str,
    nf: usize,
    batch: &[&crate::episode::Episode],
) -> Result<Vec<Vec<usize>>, ModelError> {
    let mut yes = vec![Vec::new(); batch.len()];
    let mut todo = vec![(0, batch.len())];
    while let Some((lo, hi)) = todo.pop() {
        let part = &batch[lo..hi];
        let mut content = fact_list.to_string();
        content.push_str("\nEpisodes:\n");
        for (i, e) in part.iter().enumerate() {
            let text = crate::segment::episode_text(&ctx.state.episode_messages(e), 60, 160);
            content.push_str(&format!(
                "{}. ({})\n{}\n",
                i + 1,
                crate::segment::label(e),
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
            Err(e) if ne > 1 && crate::llm::parse::is_truncated(&e) => {
                let mid = lo + ne / 2;
                todo.push((mid, hi));
                todo.push((lo, mid));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(yes)
}
