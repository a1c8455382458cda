//! The relevance walk: the `relevance` task judges candidates against the
//! recent conversation; each relevant fact's entities lead to other facts
//! about the same entities, for at most `walk_hops` hops of at most
//! `walk_batch` candidates. The hops are laid out ahead and judged in one
//! call, so the walk costs one model round trip on the user's critical path.
//! Passages are judged beside the facts they support.

use crate::base::sort::CollectOrdered;
use std::collections::{BTreeMap, BTreeSet};

use crate::base::host::{Model, ModelError, Task};
use crate::base::text::format_date;
use crate::llm::tasks::{check_numbers, RelevanceAnswer};
use crate::recall::Exclusion;
use crate::step::Ctx;
use crate::types::recall::{Item, Judgment, Recalled};
use crate::view::block;

/// Tokens a passage or message candidate is clipped to in a `relevance`
/// request: enough to judge what it is about (a fact is shown whole: one
/// sentence). At 120 the candidates were the largest part of the memory's
/// own prompt tokens (docs/BENCH.md).
const CANDIDATE_TOKENS: usize = 35;

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
            format!("passage: {}", block::quote(state, p, CANDIDATE_TOKENS))
        }
        Item::Message(id) => {
            let m = state.message(id);
            format!(
                "message (said {}): {}: \u{201c}{}\u{201d}",
                format_date(m.at),
                m.role.as_str(),
                crate::base::text::clip(
                    &crate::base::text::inline(&m.display_text()),
                    CANDIDATE_TOKENS
                )
            )
        }
    }
}

/// What marks a candidate that no search found, only a hop of the walk
/// (followed by the entity's name and a closing parenthesis): the offline
/// judge keeps every search result and judges only these.
pub const REACHED: &str = " (reached through ";

async fn judge<M: Model>(
    ctx: &Ctx<'_, M>,
    conversation: &str,
    batch: &[(Item, Option<u64>)],
) -> Result<Vec<Item>, ModelError> {
    let mut content = format!("Recent conversation:\n{conversation}\n\nCandidates:\n");
    for (i, (item, via)) in batch.iter().enumerate() {
        content.push_str(&format!("{}. {}", i + 1, describe(ctx, *item)));
        if let Some(e) = via.and_then(|e| ctx.state.entity(e)) {
            content.push_str(&format!("{REACHED}{})", crate::base::text::inline(&e.name)));
        }
        content.push('\n');
    }
    let n = batch.len();
    let answer: RelevanceAnswer = ctx
        .ask(Task::Relevance, content, |a: &RelevanceAnswer| {
            check_numbers(&a.relevant, n, "candidate")
        })
        .await?;
    let mut nums = answer.relevant;
    crate::base::sort::sort(&mut nums);
    nums.dedup();
    Ok(nums.into_iter().map(|i| batch[i - 1].0).collect())
}

fn entities_of<M: Model>(ctx: &Ctx<'_, M>, item: Item) -> Vec<u64> {
    match item {
        Item::Fact(id) => ctx
            .state
            .fact(id)
            .map_or(Vec::new(), |f| vec![f.subject, f.object]),
        Item::Passage(_) | Item::Message(_) => Vec::new(),
    }
}

/// One candidate of the walk: the item, the hop that reached it, the entity
/// followed, and the items it was reached from.
struct Candidate {
    item: Item,
    hop: u32,
    via: Option<u64>,
    from: Vec<Item>,
}

/// Walks from the fused ranking in one `relevance` call: the hops are laid
/// out ahead (the best `walk_batch` fused candidates, then for each hop up to
/// `walk_batch` other live facts about the entities of the previous hop's
/// facts, closest to the query first) and judged together. A fact reached by
/// a hop is kept when it is judged relevant and one of the items it was
/// reached from was kept too: the walk follows only relevant facts. Fails
/// when the judgment fails. Returns what was kept and every item judged.
pub(crate) async fn walk<M: Model>(
    ctx: &Ctx<'_, M>,
    conversation: &str,
    fused: &[(Item, f64)],
    via: &BTreeMap<Item, u64>,
    query: Option<&[f32]>,
    excluded: &dyn Exclusion,
) -> Result<(Vec<Recalled>, BTreeSet<Item>), ModelError> {
    let state = &*ctx.state;
    let mut cands: Vec<Candidate> = Vec::new();
    let listed = |cands: &Vec<Candidate>, it: &Item| cands.iter().any(|c| c.item == *it);
    for (item, _) in fused.iter().take(ctx.config.walk_batch) {
        if !listed(&cands, item) {
            cands.push(Candidate {
                item: *item,
                hop: 0,
                via: None,
                from: Vec::new(),
            });
        }
        // A retired fact is judged beside the fact that retired it.
        if let Item::Fact(id) = item {
            if let Some(s) = block::successor(state, *id).map(Item::Fact) {
                if s != *item && !listed(&cands, &s) && !excluded.contains(&s) {
                    cands.push(Candidate {
                        item: s,
                        hop: 0,
                        via: None,
                        from: Vec::new(),
                    });
                }
            }
        }
    }
    // Items listed so far, and per hop the place of each item in `next`:
    // an entity with thousands of facts made both linear lookups
    // quadratic, and the sort below computed a cosine per comparison
    // (half of a user message's cost at 10k facts, docs/bench-history.md).
    // A search result is never a hop's: the hops reach only what no search
    // found (a result past the judged batch keeps its place below).
    let mut known: BTreeSet<Item> = cands.iter().map(|c| c.item).into_set();
    known.extend(fused.iter().map(|(i, _)| *i));
    let mut followed: BTreeSet<u64> = BTreeSet::new();
    let mut frontier: Vec<Item> = cands.iter().map(|c| c.item).collect();
    for hop in 1..=ctx.config.walk_hops {
        let mut next: Vec<Candidate> = Vec::new();
        let mut at: BTreeMap<Item, usize> = BTreeMap::new();
        for item in &frontier {
            for entity in entities_of(ctx, *item) {
                if !followed.insert(entity) {
                    // Already followed: the item still leads to its facts.
                    for c in next.iter_mut().filter(|c| c.via == Some(entity)) {
                        if !c.from.contains(item) {
                            c.from.push(*item);
                        }
                    }
                    continue;
                }
                for &fid in state.facts_about(entity) {
                    let it = Item::Fact(fid);
                    let live = state.fact(fid).is_some_and(|f| f.is_live());
                    if !live || known.contains(&it) || excluded.contains(&it) {
                        continue;
                    }
                    match at.get(&it) {
                        Some(&i) => next[i].from.push(*item),
                        None => {
                            at.insert(it, next.len());
                            next.push(Candidate {
                                item: it,
                                hop,
                                via: Some(entity),
                                from: vec![*item],
                            })
                        }
                    }
                }
            }
        }
        if next.is_empty() {
            break;
        }
        // Closest to the query first, ties by the greater item: each
        // closeness computed once.
        let near =
            crate::recall::rank::cosines_of(state, next.iter().map(|c| c.item), query, false);
        let mut keyed: Vec<(f32, Candidate)> = near.into_iter().zip(next).collect();
        crate::base::sort::sort_by(&mut keyed, |(ca, a), (cb, b)| {
            cb.total_cmp(ca).then(b.item.cmp(&a.item))
        });
        keyed.truncate(ctx.config.walk_batch);
        frontier = keyed.iter().map(|(_, c)| c.item).collect();
        known.extend(frontier.iter().copied());
        cands.extend(keyed.into_iter().map(|(_, c)| c));
    }
    let batch: Vec<(Item, Option<u64>)> = cands.iter().map(|c| (c.item, c.via)).collect();
    let relevant: BTreeSet<Item> = judge(ctx, conversation, &batch)
        .await?
        .into_iter()
        .into_set();
    let mut kept: Vec<Recalled> = Vec::new();
    for c in &cands {
        let reached = c.hop == 0 || c.from.iter().any(|f| kept.iter().any(|k| k.item == *f));
        if reached && relevant.contains(&c.item) {
            kept.push(Recalled {
                item: c.item,
                hits: Vec::new(),
                fused_rank: None,
                hop: c.hop,
                via: c.via,
                judgment: Judgment::Relevant,
            });
        }
    }
    // The searches' own results past the judged batch keep their places,
    // and what the hops reached comes after them all: a neighbour takes
    // only the room the fused ranking leaves, so the walk never pushes a
    // search result out of a block or a budget (a judge that drops search
    // results it finds irrelevant can still do more).
    // A graph neighbour of the fused ranking stays only when a kept search
    // result is about the entity that led to it: the walk follows only
    // relevant facts.
    let about = |item: &Item, e: u64| entities_of(ctx, *item).contains(&e);
    let sources: Vec<Item> = kept
        .iter()
        .filter(|r| !via.contains_key(&r.item))
        .map(|r| r.item)
        .collect();
    kept.retain(|r| match via.get(&r.item) {
        Some(&e) if r.hop == 0 => sources.iter().any(|s| about(s, e)),
        _ => true,
    });
    let searched: BTreeSet<Item> = fused.iter().map(|(i, _)| *i).into_set();
    let hops: Vec<Recalled> = kept
        .iter()
        .filter(|r| !searched.contains(&r.item))
        .cloned()
        .collect();
    kept.retain(|r| searched.contains(&r.item));
    let judged: BTreeSet<Item> = batch.iter().map(|(i, _)| *i).into_set();
    let rest: Vec<(Item, f64)> = fused
        .iter()
        .filter(|(i, _)| !judged.contains(i) && !excluded.contains(i))
        .copied()
        .collect();
    kept.extend(ranked(&rest, Unjudged::Ranked));
    kept.extend(hops);
    Ok((kept, judged))
}

/// Why candidates are kept without a judgment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unjudged {
    /// The walk failed.
    Fallback,
    /// No judgment was asked for them.
    Ranked,
}

/// Candidates kept in their fused order without a relevance judgment (the
/// block's budget then cuts them).
pub(crate) fn ranked(fused: &[(Item, f64)], why: Unjudged) -> Vec<Recalled> {
    fused
        .iter()
        .map(|(item, _)| Recalled {
            item: *item,
            hits: Vec::new(),
            fused_rank: None,
            hop: 0,
            via: None,
            judgment: match why {
                Unjudged::Fallback => Judgment::Fallback,
                Unjudged::Ranked => Judgment::Ranked,
            },
        })
        .collect()
}
