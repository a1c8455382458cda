//! A chat turn's recall block: the queries of a user message (the message
//! and its parts, embedded), the lists searched for them and fused, the
//! walk, the block chosen within its budget (`prepare`, before the view, in
//! the turn's one round of model calls), placed before the message
//! (`place`), and the blocks that give way when the view needs their room.

use std::collections::BTreeSet;

use crate::base::host::{Model, Task};
use crate::base::sort::CollectOrdered;
use crate::index::fuse;
use crate::recall::rank::{
    about_the_asker, fuse_lists, preferences, search_lists, window_lists, Asked, Ranking,
};
use crate::state::State;
use crate::step::Ctx;
use crate::types::event::Event;
use crate::types::recall::{Hit, Item, List, RecallBlock, Recalled};
use crate::view::block;

use crate::recall::{
    conversation, embed_queries, in_view, rule_parts, split, worth_splitting, Exclusion,
    UNJUDGED_PER_PART,
};
use crate::recall::{feedback, search, walk, when};

/// Tokens of a block holding `items`.
fn block_tokens<M: Model>(ctx: &Ctx<'_, M>, r: &mut block::Renderer, items: &[Item]) -> usize {
    ctx.model.count_tokens(&r.render(items)) + crate::types::message::FRAMING_TOKENS
}

/// Keeps `kept` (in order) while the block fits the recall budget. A retired
/// fact stays only when the fact that retired it is kept too.
pub(crate) fn select<M: Model>(ctx: &Ctx<'_, M>, kept: Vec<Recalled>) -> Vec<Recalled> {
    let state: &State = ctx.state;
    let budget = ctx.config.recall_budget();
    let mut renderer = block::Renderer::new(state, ctx.config.passage_tokens, ctx.thread);
    let mut chosen: Vec<Recalled> = Vec::new();
    let items = |c: &[Recalled]| c.iter().map(|r| r.item).collect::<Vec<_>>();
    let is_retired =
        |i: &Item| matches!(i, Item::Fact(id) if state.fact(*id).is_some_and(|f| !f.is_live()));
    for r in kept.iter().filter(|r| !is_retired(&r.item)) {
        let mut trial = items(&chosen);
        trial.push(r.item);
        if block_tokens(ctx, &mut renderer, &trial) <= budget {
            chosen.push(r.clone());
        }
    }
    for r in kept.iter().filter(|r| is_retired(&r.item)) {
        let Item::Fact(id) = r.item else { continue };
        let succ = block::successor(state, id);
        if !chosen.iter().any(|c| Some(c.item) == succ.map(Item::Fact)) {
            continue;
        }
        let mut trial = items(&chosen);
        trial.push(r.item);
        if block_tokens(ctx, &mut renderer, &trial) <= budget {
            chosen.push(r.clone());
        }
    }
    chosen
}

/// The candidate lists of a recall block for a message of `thread`: every
/// thread's facts and passages, by words and by meaning, and the other
/// threads' messages still in their own views, by words (what another chat
/// said today is in no passage yet; DESIGN, "Threads"). Queries are
/// numbered from `first`.
fn block_lists<M: Model>(
    ctx: &Ctx<'_, M>,
    queries: &[String],
    first: usize,
    vectors: Option<&[Vec<f32>]>,
    excluded: &dyn Exclusion,
    thread: &str,
) -> Vec<(List, usize, Vec<Item>)> {
    let mut lists = search_lists(ctx, queries, first, vectors, excluded, 0);
    let others: Vec<&str> = ctx.state.thread_names().filter(|t| *t != thread).collect();
    if !others.is_empty() {
        let messages = search::view_lists(ctx.state, queries, 0, &others, excluded);
        lists.extend(messages.into_iter().map(|(l, q, i)| (l, first + q, i)));
    }
    lists
}

/// A recall block computed for a user message, not yet placed.
pub(crate) struct Prepared {
    message: u64,
    parts: Vec<String>,
    split_failed: bool,
    walk_failed: bool,
    items: Vec<Recalled>,
}

/// The queries of a user message, embedded: the first step of recall, before
/// the round of `complete` calls.
pub(crate) struct Queries {
    message: u64,
    text: String,
    queries: Vec<String>,
    vectors: Option<Vec<Vec<f32>>>,
}

/// Embeds the queries of user message `message` (the whole message and its
/// own sentences). `None` when there is nothing to recall yet.
pub(crate) async fn queries<M: Model>(ctx: &Ctx<'_, M>, message: u64) -> Option<Queries> {
    let state: &State = ctx.state;
    // Something to recall: a fact, a passage, or another thread's message
    // still in its view (no embed or split for a memory that holds none).
    let thread = state.message(message).thread.as_str();
    let elsewhere = || {
        state
            .thread_names()
            .filter(|t| *t != thread)
            .any(|t| state.in_view_of(t).next().is_some() || !state.line(t).open_ids().is_empty())
    };
    if state.facts.is_empty() && state.passages.is_empty() && !elsewhere() {
        return None;
    }
    let text = state.message(message).content.clone();
    let mut queries = vec![text.clone()];
    queries.extend(rule_parts(&text));
    let vectors = embed_queries(ctx, &queries).await;
    Some(Queries {
        message,
        text,
        queries,
        vectors,
    })
}

/// Computes recall from embedded queries with one round of `complete` calls:
/// the relevance walk (its hops laid out ahead, judged in one call) and the
/// model's split go out together. Candidates that only the model's parts
/// find join unjudged, below the judged ones. Nothing is emitted; [`place`]
/// records the block.
pub(crate) async fn prepare<M: Model>(ctx: &Ctx<'_, M>, q: Option<Queries>) -> Option<Prepared> {
    let Queries {
        message,
        text,
        queries,
        vectors,
    } = q?;
    let state: &State = ctx.state;
    let thread = state.message(message).thread.as_str();
    let excluded = in_view(state, true, thread);
    let limit = ctx.config.recall_candidates;
    let window = when::window(&text, ctx.now);
    let mut lists = block_lists(ctx, &queries, 0, vectors.as_deref(), &excluded, thread);
    lists.extend(window_lists(
        ctx,
        &queries,
        vectors.as_deref(),
        &excluded,
        window,
        0,
    ));
    let preferred = preferences(
        state,
        &text,
        vectors.as_ref().map(|v| v[0].as_slice()),
        &excluded,
    );
    // The message expanded by its best candidates' shared words, numbered
    // one past the rule parts (renumbered past the model's parts, below).
    let expanded_as = queries.len();
    let feedback =
        feedback::feedback_lists(state, &lists, &text, expanded_as, &excluded, 0, &preferred);
    let c = fuse_lists(
        state,
        lists,
        limit,
        vectors.as_ref().map(|v| v[0].as_slice()),
        &excluded,
        Ranking::Block,
        Asked {
            window,
            preferred,
            by_asker: about_the_asker(&text),
            feedback,
        },
    );
    let conversation = conversation(state, message, 6);
    let query = vectors.as_ref().map(|v| v[0].clone());
    let ask_split = ctx.config.split_with_model && worth_splitting(&text);
    let walk = async {
        if c.fused.is_empty() {
            Ok((Vec::new(), BTreeSet::new()))
        } else if ctx.config.walk_with_model {
            walk::walk(
                ctx,
                &conversation,
                &c.fused,
                &c.via,
                query.as_deref(),
                &excluded,
            )
            .await
        } else {
            Ok((
                walk::ranked(&c.fused, walk::Unjudged::Ranked),
                BTreeSet::new(),
            ))
        }
    };
    let split = async {
        match ask_split {
            true => split(ctx, &text).await.map(|s| s.parts),
            false => Some(Vec::new()),
        }
    };
    let (walked, model_parts) = crate::base::join::join2(walk, split).await;
    let (mut kept, judged, walk_failed) = match walked {
        Ok((k, judged)) => (k, judged, false),
        Err(e) => {
            ctx.degrade(
                Task::Relevance,
                &e,
                "recall kept the best-ranked candidates unjudged",
            );
            let kept = walk::ranked(&c.fused, walk::Unjudged::Fallback);
            (kept, BTreeSet::new(), true)
        }
    };
    let mut parts: Vec<String> = queries[1..].to_vec();
    let mut hits = c.hits;
    let mut fused = c.fused;
    if let Some(model_parts) = &model_parts {
        let new: Vec<String> = model_parts
            .iter()
            .filter(|p| !queries.contains(p))
            .cloned()
            .collect();
        if !new.is_empty() {
            let vectors = match vectors.is_some() {
                true => embed_queries(ctx, &new).await,
                false => None,
            };
            let first = queries.len();
            // The expanded message stays one past the last part.
            for h in hits
                .values_mut()
                .flatten()
                .filter(|h| h.query == expanded_as)
            {
                h.query = first + new.len();
            }
            let lists = block_lists(ctx, &new, first, vectors.as_deref(), &excluded, thread);
            for (list, q, items) in &lists {
                for (i, item) in items.iter().enumerate() {
                    hits.entry(*item).or_default().push(Hit {
                        list: *list,
                        query: *q,
                        rank: i + 1,
                    });
                }
            }
            let known: BTreeSet<Item> = fused.iter().map(|(i, _)| *i).into_set();
            for (k, _) in new.iter().enumerate() {
                let per_part: Vec<Vec<Item>> = lists
                    .iter()
                    .filter(|(_, q, _)| *q == first + k)
                    .map(|(_, _, items)| items.clone())
                    .collect();
                let extra: Vec<(Item, f64)> = fuse::fuse(&per_part, limit)
                    .into_iter()
                    .filter(|(i, _)| {
                        // Neither a candidate already ranked, nor one the walk
                        // judged (relevant or not), nor one kept.
                        !known.contains(i)
                            && !judged.contains(i)
                            && !kept.iter().any(|r| r.item == *i)
                    })
                    .take(UNJUDGED_PER_PART)
                    .collect();
                for (item, score) in extra {
                    fused.push((item, score));
                    kept.extend(walk::ranked(&[(item, score)], walk::Unjudged::Ranked));
                }
            }
            parts.extend(new);
        }
    }
    let via = c.via;
    let with_hits: Vec<Recalled> = kept
        .into_iter()
        .map(|mut r| {
            r.hits = hits.get(&r.item).cloned().unwrap_or_default();
            r.fused_rank = fused.iter().position(|(i, _)| *i == r.item).map(|p| p + 1);
            if let (0, Some(&e)) = (r.hop, via.get(&r.item)) {
                r.hop = 1;
                r.via = Some(e);
            }
            r
        })
        .collect();
    let items = select(ctx, with_hits);
    Some(Prepared {
        message,
        parts,
        split_failed: ask_split && model_parts.is_none(),
        walk_failed,
        items,
    })
}

/// Places a prepared block before its user message. Returns its id, or
/// `None` when nothing survived.
pub(crate) fn place<M: Model>(ctx: &mut Ctx<'_, M>, p: Prepared) -> Option<u64> {
    if p.items.is_empty() {
        return None;
    }
    let id = ctx.state.recalls.len() as u64 + 1;
    ctx.emit(Event::Recalled(RecallBlock {
        id,
        message: p.message,
        at: ctx.now,
        parts: p.parts,
        split_failed: p.split_failed,
        walk_failed: p.walk_failed,
        items: p.items,
        distilled: None,
        gave_way: None,
    }));
    Some(id)
}

/// Recall blocks shown in `thread`'s view now, oldest first, with their
/// tokens.
pub fn blocks_in_view<M: Model>(
    state: &State,
    model: &M,
    config: &crate::base::config::Config,
    thread: &str,
) -> Vec<(u64, usize)> {
    // The messages in view: those of the episodes in view, then the open
    // stretch. A block shown takes its framing at least: 0 is none.
    let ids = state
        .in_view_of(thread)
        .flat_map(|e| state.episode_ids(e))
        .chain(state.line(thread).open_ids());
    let mut out: Vec<(u64, usize)> = ids
        .filter_map(|id| state.recall_by_message.get(id))
        .map(|&block| {
            let t = crate::view::block_tokens(state, model, config.passage_tokens, block);
            (block, t)
        })
        .filter(|&(_, t)| t > 0)
        .collect();
    crate::base::sort::sort(&mut out);
    out
}

/// Keeps recall blocks in view within their share of the room
/// (`recall_share` of the ceiling): the oldest give way first (recorded,
/// so explain can say why; their items stay recallable). Returns the blocks
/// that gave way.
pub(crate) fn give_way<M: Model>(ctx: &mut Ctx<'_, M>) -> Vec<u64> {
    let share = (ctx.config.ceiling_tokens as f64 * ctx.config.recall_share) as usize;
    let blocks = blocks_in_view(ctx.state, ctx.model, ctx.config, ctx.thread);
    let mut total: usize = blocks.iter().map(|(_, t)| t).sum();
    let mut gone = Vec::new();
    for (block, tokens) in blocks {
        if total <= share {
            break;
        }
        ctx.emit(Event::RecallGaveWay { block, at: ctx.now });
        total -= tokens;
        gone.push(block);
    }
    gone
}
