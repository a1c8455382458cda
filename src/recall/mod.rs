//! Recall: bringing back what the conversation touches.
//!
//! For each new user message: [`split`](crate::host::Task::Split) it into the
//! subjects it raises; for the whole message and each part, search facts by
//! words ([`bm25`]) and by meaning ([`vector`]), and passages of out-of-view
//! conversation ([`passage`]) the same way; fuse the lists ([`fuse`]); let the
//! relevance [`walk`] keep the relevant candidates and follow them to other
//! facts about the same entities; place the survivors, grouped and dated
//! ([`block`]), just before the user message. After the reply,
//! `crate::distill` keeps only what mattered.

pub mod block;
pub mod bm25;
mod feedback;
pub mod filter;
pub mod fuse;
pub mod hnsw;
pub mod passage;
pub mod topk;
pub mod vector;
pub mod walk;
pub mod when;

mod rank;
mod search;

use crate::sort::CollectOrdered;
use rank::*;
pub(crate) use search::search;

use std::collections::{BTreeMap, BTreeSet};

use crate::event::Event;
use crate::host::{Model, Task};
use crate::llm::tasks::SplitAnswer;
use crate::state::State;
use crate::step::Ctx;

pub use crate::types::recall::*;

/// Items a search leaves out: asked about every candidate before it is
/// ranked (a set of items, or a search's [`filter::Scope`]).
pub(crate) trait Exclusion: Sync {
    /// Whether `item` is left out.
    fn contains(&self, item: &Item) -> bool;
}

impl Exclusion for BTreeSet<Item> {
    fn contains(&self, item: &Item) -> bool {
        BTreeSet::contains(self, item)
    }
}

/// Candidates of one query set, fused.
pub(crate) struct Candidates {
    pub hits: BTreeMap<Item, Vec<Hit>>,
    pub fused: Vec<(Item, f64)>,
    /// Facts reached through an entity shared with a strong hit: the entity.
    pub via: BTreeMap<Item, u64>,
}

/// Depth of each fact search for a recall block. The block's budget holds a
/// few passages and a dozen facts: a passage that its own lists rank below
/// 10th would only take a fact's room (measured, docs/BENCH.md).
const FACT_LIST: usize = 20;
/// Depth of each passage search for a recall block.
const PASSAGE_LIST: usize = 10;
/// Depth of each fact search of an on-demand `search`, whose results are a
/// ranked list: deeper lists let an item ranked well by one list and
/// poorly by another still fuse.
const SEARCH_FACT_LIST: usize = 40;
/// Depth of each passage search of an on-demand `search`.
const SEARCH_PASSAGE_LIST: usize = 30;
/// Best-fused facts whose entities lead to other facts (multi-hop).
const STRONG_HITS: usize = 3;
/// Facts about those entities added to the candidates, closest first.
const NEIGHBOURS: usize = 6;
const MAX_PARTS: usize = 6;
/// Candidates that only a part from the model's split found, kept per part
/// without a relevance judgment (that judgment went out at the same time as
/// the split; distill rereads them after the reply).
const UNJUDGED_PER_PART: usize = 2;

/// Links up to `budget` rows not in a meaning graph yet (facts first, then
/// passages, then entity names): the part of search that is built off the
/// user's path, by `maintain`. Returns the rows linked.
pub fn link_graphs(state: &mut State, budget: usize) -> usize {
    let mut left = budget;
    for index in state.meaning_indexes_mut() {
        left -= index.extend_graph(left);
    }
    budget - left
}

pub use topk::top;

/// Items in `thread`'s view now: facts of the facts block, facts stated by
/// an episode whose messages are in view, and (with `with_blocks`) items
/// shown by recall blocks whose user message is in view.
pub fn in_view(state: &State, with_blocks: bool, thread: &str) -> BTreeSet<Item> {
    let mut s: BTreeSet<Item> = crate::view::block_facts(state)
        .iter()
        .map(|f| Item::Fact(f.id))
        .into_set();
    let mut in_view: Vec<u64> = Vec::new();
    for e in state.in_view_of(thread) {
        s.extend(e.facts.iter().map(|&f| Item::Fact(f)));
        in_view.extend(state.episode_ids(e));
    }
    if !with_blocks {
        return s;
    }
    in_view.extend(state.line(thread).open_ids());
    for m in in_view {
        if let Some(&b) = state.recall_by_message.get(&m) {
            let b = &state.recalls[b as usize - 1];
            if b.gave_way.is_none() {
                s.extend(b.shown());
            }
        }
    }
    s
}

/// Parts of `text` by its own punctuation: sentences and `;`-clauses of at
/// least three words. Empty when the text is one part. The rule splitter
/// used when the model's split is off, and beside it (its parts are judged
/// in the same round as the whole message's candidates).
pub fn rule_parts(text: &str) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        cur.push(c);
        let end = matches!(c, '.' | '?' | '!' | ';' | '\n')
            && chars.peek().is_none_or(|n| n.is_whitespace());
        if end {
            parts.push(std::mem::take(&mut cur));
        }
    }
    parts.push(cur);
    let parts: Vec<String> = parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| p.split_whitespace().count() >= 3)
        .take(MAX_PARTS)
        .collect();
    if parts.len() < 2 {
        Vec::new()
    } else {
        parts
    }
}

/// Whether the model's split is worth a call for `text`: one sentence (its
/// punctuation does not split it) of more than 12 words, which may still
/// raise several subjects ("how are Ana and the cat doing since the move?").
/// A message its own punctuation splits is searched by those parts; a short
/// sentence is its own only part.
fn worth_splitting(text: &str) -> bool {
    rule_parts(text).is_empty() && text.split_whitespace().count() > 12
}

/// The model's split of a message: its parts, and the window of time it
/// names (read by the model, resolved against when the message was sent).
struct Split {
    parts: Vec<String>,
    window: Option<(i64, i64)>,
}

/// Asks the `split` task (the request says when the message is sent, so
/// the model can resolve "last week"). `None` when it fails (reported).
async fn split<M: Model>(ctx: &Ctx<'_, M>, text: &str) -> Option<Split> {
    let content = format!(
        "Sent at {}.\nUser message:\n{}",
        crate::text::format_time(ctx.now),
        crate::text::clip(text, 1_000)
    );
    let answer = ctx
        .ask(Task::Split, content, |a: &SplitAnswer| {
            // A part is a piece of the message: none may be longer than it.
            let most = text.chars().count().max(200);
            if a.parts.is_empty() || a.parts.iter().any(|p| p.trim().is_empty()) {
                Err("parts must be non-empty strings".into())
            } else if a.parts.len() > 4 * MAX_PARTS {
                Err(format!(
                    "{} parts; at most {}",
                    a.parts.len(),
                    4 * MAX_PARTS
                ))
            } else if a.parts.iter().any(|p| p.chars().count() > most) {
                Err(format!(
                    "a part is longer than the message ({most} characters)"
                ))
            } else {
                a.when.as_ref().map_or(Ok(()), |w| w.window().map(|_| ()))
            }
        })
        .await;
    match answer {
        Ok(a) => {
            let mut parts: Vec<String> =
                a.parts.into_iter().map(|p| p.trim().to_string()).collect();
            parts.truncate(MAX_PARTS);
            if parts.len() == 1 && parts[0] == text.trim() {
                parts.clear();
            }
            let window = a.when.and_then(|w| w.window().ok());
            Some(Split { parts, window })
        }
        Err(e) => {
            ctx.degrade(Task::Split, &e, "the whole message was searched alone");
            None
        }
    }
}

/// Embeds `queries`; `None` when the embedder fails (reported: the search
/// goes on by words).
async fn embed_queries<M: Model>(ctx: &Ctx<'_, M>, queries: &[String]) -> Option<Vec<Vec<f32>>> {
    match ctx.embed(queries, None).await {
        Ok(v) => Some(v),
        Err(e) => {
            ctx.degrade(
                Task::Split,
                &e,
                "the embedder failed on the queries: searched by words only",
            );
            None
        }
    }
}

/// The recent conversation for relevance judgments: the last messages in
/// view of `upto`'s thread, ending with `upto`.
pub(crate) fn conversation(state: &State, upto: u64, n: usize) -> String {
    let ids = &state.line(&state.message(upto).thread).ids;
    let end = ids.partition_point(|&id| id <= upto);
    ids[end.saturating_sub(n)..end]
        .iter()
        .copied()
        .filter(|id| state.message_in_view(*id))
        .map(|id| {
            let m = state.message(id);
            format!(
                "{}: {}",
                m.role.as_str(),
                crate::text::clip(&m.display_text(), 200)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tokens of a block holding `items`.
fn block_tokens<M: Model>(ctx: &Ctx<'_, M>, r: &mut block::Renderer, items: &[Item]) -> usize {
    ctx.model.count_tokens(&r.render(items)) + crate::message::FRAMING_TOKENS
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
    let (walked, model_parts) = crate::join::join2(walk, split).await;
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
    config: &crate::Config,
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
    crate::sort::sort(&mut out);
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

/// The text and date of an item.
pub fn describe(state: &State, item: Item) -> (String, i64) {
    match item {
        Item::Fact(id) => state
            .fact(id)
            .map_or((String::new(), 0), |f| (f.sentence.clone(), f.said_at)),
        Item::Passage(id) => state
            .passages
            .get(id as usize - 1)
            .map_or((String::new(), 0), |p| {
                (state.passage_text(p.first, p.last), p.at)
            }),
        Item::Message(id) => state
            .messages
            .get(id as usize - 1)
            .map_or((String::new(), 0), |m| {
                (format!("{}: {}", m.role.as_str(), m.display_text()), m.at)
            }),
    }
}

/// Tokens a search hit costs beyond its text within a budget: it takes a
/// line of its own (a bullet and a line break).
pub const HIT_FRAMING: usize = 2;
