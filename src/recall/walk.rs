//! The relevance walk: the `relevance` task judges candidates against the
//! recent conversation; each relevant fact's entities lead to other facts
//! about the same entities, judged in turn, for at most `walk_hops` hops of at
//! most `walk_batch` candidates, and only while the kept items fit the recall
//! budget. Passages are judged beside the facts they support.

use std::collections::BTreeSet;

use crate::host::{Model, ModelError, Task};
use crate::memory::Ctx;
use crate::model::{
    self,
    tasks::{check_numbers, RelevanceAnswer},
};
use crate::recall::{block, passage, Item, Judgment, Recalled};
use crate::text::{cosine, format_date};

fn describe<M: Model>(ctx: &Ctx<'_, M>, item: Item) -> String {
    let state = &*ctx.state;
    match item {
        Item::Fact(id) => {
            let f = state.fact(id).expect("candidate fact exists");
            let mut s = format!("fact (said {}): {}", format_date(f.said_at), f.sentence);
            if let Some(r) = &f.retired {
                let by = state.fact(r.by).map_or("", |g| g.sentence.as_str());
                s.push_str(&format!(
                    " [no longer true since {}: \"{by}\"]",
                    format_date(r.at)
                ));
            }
            s
        }
        Item::Passage(id) => {
            let p = &state.passages[id as usize - 1];
            format!("passage: {}", passage::quote(state, p, 120))
        }
    }
}

async fn judge<M: Model>(
    ctx: &Ctx<'_, M>,
    conversation: &str,
    batch: &[Item],
) -> Result<Vec<Item>, ModelError> {
    let mut content = format!("Recent conversation:\n{conversation}\n\nCandidates:\n");
    for (i, item) in batch.iter().enumerate() {
        content.push_str(&format!("{}. {}\n", i + 1, describe(ctx, *item)));
    }
    let n = batch.len();
    let answer: RelevanceAnswer = model::ask(
        ctx.model,
        ctx.config.model_attempts,
        Task::Relevance,
        content,
        |a: &RelevanceAnswer| check_numbers(&a.relevant, n, "candidate"),
    )
    .await?;
    let mut nums = answer.relevant;
    nums.sort_unstable();
    nums.dedup();
    Ok(nums.into_iter().map(|i| batch[i - 1]).collect())
}

fn entities_of<M: Model>(ctx: &Ctx<'_, M>, item: Item) -> Vec<u64> {
    match item {
        Item::Fact(id) => ctx
            .state
            .fact(id)
            .map_or(Vec::new(), |f| vec![f.subject, f.object]),
        Item::Passage(_) => Vec::new(),
    }
}

/// Walks from the fused ranking. Fails only when the first judgment fails.
pub(crate) async fn walk<M: Model>(
    ctx: &Ctx<'_, M>,
    conversation: &str,
    fused: &[(Item, f64)],
    query: Option<&[f32]>,
    excluded: &BTreeSet<Item>,
) -> Result<Vec<Recalled>, ModelError> {
    let state = &*ctx.state;
    let mut batch: Vec<Item> = Vec::new();
    for (item, _) in fused.iter().take(ctx.config.walk_batch) {
        if !batch.contains(item) {
            batch.push(*item);
        }
        // A retired fact is judged beside the fact that retired it.
        if let Item::Fact(id) = item {
            if let Some(s) = block::successor(state, *id).map(Item::Fact) {
                if s != *item && !batch.contains(&s) && !excluded.contains(&s) {
                    batch.push(s);
                }
            }
        }
    }
    let mut judged: BTreeSet<Item> = batch.iter().copied().collect();
    let mut kept: Vec<Recalled> = judge(ctx, conversation, &batch)
        .await?
        .into_iter()
        .map(|item| Recalled {
            item,
            hits: Vec::new(),
            fused_rank: None,
            hop: 0,
            via: None,
            judgment: Judgment::Relevant,
        })
        .collect();
    let mut followed: BTreeSet<u64> = BTreeSet::new();
    let mut frontier: Vec<Item> = kept.iter().map(|r| r.item).collect();
    for hop in 1..=ctx.config.walk_hops {
        let items: Vec<Item> = kept.iter().map(|r| r.item).collect();
        if super::block_tokens(ctx, &items) >= ctx.config.recall_budget_tokens {
            break;
        }
        let mut next: Vec<(Item, u64)> = Vec::new();
        for item in &frontier {
            for entity in entities_of(ctx, *item) {
                if !followed.insert(entity) {
                    continue;
                }
                for &fid in state.facts_about(entity) {
                    let it = Item::Fact(fid);
                    let live = state.fact(fid).is_some_and(|f| f.is_live());
                    if live
                        && !judged.contains(&it)
                        && !excluded.contains(&it)
                        && !next.iter().any(|(i, _)| *i == it)
                    {
                        next.push((it, entity));
                    }
                }
            }
        }
        if next.is_empty() {
            break;
        }
        let closeness = |it: &Item| match (it, query) {
            (Item::Fact(id), Some(q)) => state.fact(*id).map_or(0.0, |f| cosine(q, &f.embedding)),
            _ => 0.0,
        };
        next.sort_by(|a, b| {
            closeness(&b.0)
                .total_cmp(&closeness(&a.0))
                .then(b.0.cmp(&a.0))
        });
        next.truncate(ctx.config.walk_batch);
        let batch: Vec<Item> = next.iter().map(|(i, _)| *i).collect();
        judged.extend(batch.iter().copied());
        // A failed later hop ends the walk with what was kept so far.
        let Ok(relevant) = judge(ctx, conversation, &batch).await else {
            break;
        };
        frontier = relevant.clone();
        for item in relevant {
            let via = next.iter().find(|(i, _)| *i == item).map(|(_, e)| *e);
            kept.push(Recalled {
                item,
                hits: Vec::new(),
                fused_rank: None,
                hop,
                via,
                judgment: Judgment::Relevant,
            });
        }
    }
    Ok(kept)
}

/// When the walk fails: the fused ranking, in order, kept as fallback (the
/// block's budget then cuts it).
pub(crate) fn fallback(fused: &[(Item, f64)]) -> Vec<Recalled> {
    fused
        .iter()
        .map(|(item, _)| Recalled {
            item: *item,
            hits: Vec::new(),
            fused_rank: None,
            hop: 0,
            via: None,
            judgment: Judgment::Fallback,
        })
        .collect()
}
