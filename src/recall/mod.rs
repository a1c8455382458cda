//! Recall: bringing back what the conversation touches.
//!
//! For each new user message: [`split`](crate::host::Task::Split) it into the
//! subjects it raises; for the whole message and each part, search facts by
//! words ([`bm25`]) and by meaning ([`vector`]), and passages of out-of-view
//! conversation ([`passage`]) the same way; fuse the lists ([`fuse`]); let the
//! relevance [`walk`] keep the relevant candidates and follow them to other
//! facts about the same entities; place the survivors, grouped and dated
//! ([`block`]), just before the user message. After the reply,
//! [`crate::distill`] keeps only what mattered.

pub mod block;
pub mod bm25;
pub mod fuse;
pub mod passage;
pub mod vector;
pub mod walk;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::event::Event;
use crate::host::{Model, Task};
use crate::memory::Ctx;
use crate::model::{self, tasks::SplitAnswer};
use crate::state::State;

/// A recallable thing: a fact or a passage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum Item {
    /// A fact of the knowledge graph.
    Fact(u64),
    /// A passage of out-of-view conversation.
    Passage(u64),
}

/// The searches recall runs for each query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum List {
    /// Facts by words (BM25).
    FactWords,
    /// Facts by meaning (cosine).
    FactMeaning,
    /// Passages by words (BM25).
    PassageWords,
    /// Passages by meaning (cosine).
    PassageMeaning,
}

/// One search that found an item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// Which search.
    pub list: List,
    /// Which query: 0 for the whole message, n for part n.
    pub query: usize,
    /// Rank in that search (1 = best).
    pub rank: usize,
}

/// Why an item survived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgment {
    /// The relevance walk judged it relevant.
    Relevant,
    /// The walk failed; it was kept for its place in the fused ranking.
    Fallback,
}

/// One item of a recall block and how it got there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recalled {
    /// The item.
    pub item: Item,
    /// Searches that found it (empty for items the walk reached).
    pub hits: Vec<Hit>,
    /// Its place in the fused ranking (1 = best), if a search found it.
    pub fused_rank: Option<usize>,
    /// Walk step that kept it: 0 for a search result, n after n hops.
    pub hop: u32,
    /// The entity the walk followed to reach it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<u64>,
    /// Why it survived.
    pub judgment: Judgment,
}

/// What distill decided after the turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distillation {
    /// When.
    pub at: i64,
    /// Items kept (all of them when distill failed).
    pub kept: Vec<Item>,
    /// Whether the model failed (the block was kept whole).
    pub failed: bool,
}

/// Facts and passages recalled for one user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallBlock {
    /// Block id (1, 2, ...).
    pub id: u64,
    /// The user message it was recalled for (placed just before it).
    pub message: u64,
    /// When.
    pub at: i64,
    /// The parts the message was split into.
    pub parts: Vec<String>,
    /// Whether split failed (the whole message was searched alone).
    pub split_failed: bool,
    /// Whether the relevance walk failed (the fused ranking decided).
    pub walk_failed: bool,
    /// The survivors, in block order.
    pub items: Vec<Recalled>,
    /// Distill's decision, once the turn is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distilled: Option<Distillation>,
}

impl RecallBlock {
    /// Items the block shows now (after distill, what it kept).
    pub fn shown(&self) -> Vec<Item> {
        match &self.distilled {
            Some(d) if !d.failed => d.kept.clone(),
            _ => self.items.iter().map(|r| r.item).collect(),
        }
    }
}

/// Options of an on-demand search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchOptions {
    /// Results wanted.
    pub limit: usize,
    /// Run the relevance walk (model calls) instead of returning the fused
    /// ranking.
    pub walk: bool,
    /// Also return facts that are in the view now.
    pub include_in_view: bool,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            limit: 10,
            walk: false,
            include_in_view: true,
        }
    }
}

/// One result of an on-demand search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The item.
    pub item: Item,
    /// Its text (a fact's sentence, a passage's messages).
    pub text: String,
    /// When it was said.
    pub said_at: i64,
    /// Its fused score (0 for items only the walk reached).
    pub score: f64,
    /// Searches that found it.
    pub hits: Vec<Hit>,
    /// Walk step that kept it (0 without walk).
    pub hop: u32,
    /// Whether it is a retired fact (shown with the fact that retired it).
    pub retired: bool,
}

/// Candidates of one query set, fused.
pub(crate) struct Candidates {
    pub parts: Vec<String>,
    pub split_failed: bool,
    pub query_vectors: Option<Vec<Vec<f32>>>,
    pub hits: BTreeMap<Item, Vec<Hit>>,
    pub fused: Vec<(Item, f64)>,
}

const FACT_LIST: usize = 20;
const PASSAGE_LIST: usize = 10;
const MAX_PARTS: usize = 6;

/// The `limit` best of `scored`, best first, ties by key: the one ranking
/// rule of every search and of fusion, so results are the same on every host.
pub fn top<K: Ord>(mut scored: Vec<(K, f64)>, limit: usize) -> Vec<(K, f64)> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(limit);
    scored
}

/// Items in the view now: facts of the facts block, facts stated by an
/// episode whose messages are in view, and items shown by recall blocks
/// whose user message is in view.
pub fn in_view(state: &State) -> BTreeSet<Item> {
    let mut s: BTreeSet<Item> = crate::view::block_facts(state)
        .iter()
        .map(|f| Item::Fact(f.id))
        .collect();
    let mut in_view: Vec<u64> = Vec::new();
    for e in state.episodes.iter().filter(|e| e.state.messages_in_view()) {
        s.extend(e.facts.iter().map(|&f| Item::Fact(f)));
        in_view.extend(e.messages());
    }
    in_view.extend(state.open_from()..=state.messages.len() as u64);
    for m in in_view {
        if let Some(&b) = state.recall_by_message.get(&m) {
            s.extend(state.recalls[b as usize - 1].shown());
        }
    }
    s
}

/// Splits `text` (the `split` task), embeds the queries and runs every search,
/// fusing the lists. Never fails: a failed split searches the whole message, a
/// failed embedding searches by words only.
pub(crate) async fn gather<M: Model>(
    ctx: &Ctx<'_, M>,
    text: &str,
    excluded: &BTreeSet<Item>,
) -> Candidates {
    let content = format!("User message:\n{}", crate::text::clip(text, 1_000));
    let split = model::ask(
        ctx.model,
        ctx.config.model_attempts,
        Task::Split,
        content,
        |a: &SplitAnswer| {
            if a.parts.is_empty() || a.parts.iter().any(|p| p.trim().is_empty()) {
                Err("parts must be non-empty strings".into())
            } else {
                Ok(())
            }
        },
    )
    .await;
    let (mut parts, split_failed) = match split {
        Ok(a) => (
            a.parts
                .into_iter()
                .map(|p| p.trim().to_string())
                .collect::<Vec<_>>(),
            false,
        ),
        Err(_) => (Vec::new(), true),
    };
    parts.truncate(MAX_PARTS);
    if parts.len() == 1 && parts[0] == text.trim() {
        parts.clear();
    }
    let mut queries = vec![text.to_string()];
    queries.extend(parts.iter().cloned());
    let query_vectors = model::embed(
        ctx.model,
        &queries,
        ctx.state.dimension,
        ctx.config.max_dimension,
    )
    .await
    .ok();

    let state: &State = ctx.state;
    let keep_fact = |id: u64| !excluded.contains(&Item::Fact(id));
    let keep_passage = |id: u64| !excluded.contains(&Item::Passage(id));
    let mut lists: Vec<(List, usize, Vec<Item>)> = Vec::new();
    for (q, query) in queries.iter().enumerate() {
        let ids =
            |v: Vec<(u64, f64)>, f: fn(u64) -> Item| v.into_iter().map(|(id, _)| f(id)).collect();
        lists.push((
            List::FactWords,
            q,
            ids(
                state.fact_index.search(query, FACT_LIST, keep_fact),
                Item::Fact,
            ),
        ));
        lists.push((
            List::PassageWords,
            q,
            ids(
                state
                    .passage_index
                    .search(query, PASSAGE_LIST, keep_passage),
                Item::Passage,
            ),
        ));
        if let Some(vs) = &query_vectors {
            let facts = state.facts.iter().map(|f| (f.id, f.embedding.as_slice()));
            lists.push((
                List::FactMeaning,
                q,
                ids(
                    vector::search(&vs[q], facts, FACT_LIST, ctx.config.min_cosine, keep_fact),
                    Item::Fact,
                ),
            ));
            let passages = state
                .passages
                .iter()
                .map(|p| (p.id, p.embedding.as_slice()));
            lists.push((
                List::PassageMeaning,
                q,
                ids(
                    vector::search(
                        &vs[q],
                        passages,
                        PASSAGE_LIST,
                        ctx.config.min_cosine,
                        keep_passage,
                    ),
                    Item::Passage,
                ),
            ));
        }
    }
    let mut hits: BTreeMap<Item, Vec<Hit>> = BTreeMap::new();
    for (list, query, items) in &lists {
        for (i, item) in items.iter().enumerate() {
            hits.entry(*item).or_default().push(Hit {
                list: *list,
                query: *query,
                rank: i + 1,
            });
        }
    }
    let ranked: Vec<Vec<Item>> = lists.into_iter().map(|(_, _, items)| items).collect();
    let fused = fuse::fuse(&ranked, ctx.config.recall_candidates);
    Candidates {
        parts,
        split_failed,
        query_vectors,
        hits,
        fused,
    }
}

/// The recent conversation for relevance judgments: the last messages in
/// view, ending with `message`.
pub(crate) fn conversation(state: &State, upto: u64, n: usize) -> String {
    let first = upto.saturating_sub(n as u64 - 1).max(1);
    (first..=upto)
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
fn block_tokens<M: Model>(ctx: &Ctx<'_, M>, items: &[Item]) -> usize {
    let text = block::render(ctx.state, items, ctx.config.passage_tokens);
    ctx.model.count_tokens(&text) + crate::message::FRAMING_TOKENS
}

/// Keeps `kept` (in order) while the block fits the recall budget. A retired
/// fact stays only when the fact that retired it is kept too.
pub(crate) fn select<M: Model>(ctx: &Ctx<'_, M>, kept: Vec<Recalled>) -> Vec<Recalled> {
    let state: &State = ctx.state;
    let budget = ctx.config.recall_budget_tokens;
    let mut chosen: Vec<Recalled> = Vec::new();
    let items = |c: &[Recalled]| c.iter().map(|r| r.item).collect::<Vec<_>>();
    let is_retired =
        |i: &Item| matches!(i, Item::Fact(id) if state.fact(*id).is_some_and(|f| !f.is_live()));
    for r in kept.iter().filter(|r| !is_retired(&r.item)) {
        let mut trial = items(&chosen);
        trial.push(r.item);
        if block_tokens(ctx, &trial) <= budget {
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
        if block_tokens(ctx, &trial) <= budget {
            chosen.push(r.clone());
        }
    }
    chosen
}

/// Runs recall for the user message `message`, emitting its block when
/// something survives. Returns the block id.
pub(crate) async fn recall_for<M: Model>(ctx: &mut Ctx<'_, M>, message: u64) -> Option<u64> {
    if ctx.state.facts.is_empty() && ctx.state.passages.is_empty() {
        return None;
    }
    let text = ctx.state.message(message).content.clone();
    let excluded = in_view(ctx.state);
    let c = gather(ctx, &text, &excluded).await;
    if c.fused.is_empty() {
        return None;
    }
    let conversation = conversation(ctx.state, message, 6);
    let query = c.query_vectors.as_ref().map(|v| v[0].clone());
    let (kept, walk_failed) =
        match walk::walk(ctx, &conversation, &c.fused, query.as_deref(), &excluded).await {
            Ok(k) => (k, false),
            Err(_) => (walk::fallback(&c.fused), true),
        };
    let with_hits: Vec<Recalled> = kept
        .into_iter()
        .map(|mut r| {
            r.hits = c.hits.get(&r.item).cloned().unwrap_or_default();
            r.fused_rank = c
                .fused
                .iter()
                .position(|(i, _)| *i == r.item)
                .map(|p| p + 1);
            r
        })
        .collect();
    let items = select(ctx, with_hits);
    if items.is_empty() {
        return None;
    }
    let id = ctx.state.recalls.len() as u64 + 1;
    ctx.emit(Event::Recalled(RecallBlock {
        id,
        message,
        at: ctx.now,
        parts: c.parts,
        split_failed: c.split_failed,
        walk_failed,
        items,
        distilled: None,
    }));
    Some(id)
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
                (passage::text(state, p.first, p.last), p.at)
            }),
    }
}

/// On-demand search: the same pipeline, no view change, optional walk.
pub(crate) async fn search<M: Model>(
    ctx: &Ctx<'_, M>,
    query: &str,
    options: &SearchOptions,
) -> Vec<SearchHit> {
    let excluded = if options.include_in_view {
        BTreeSet::new()
    } else {
        in_view(ctx.state)
    };
    let c = gather(ctx, query, &excluded).await;
    let score = |item: &Item| {
        c.fused
            .iter()
            .find(|(i, _)| i == item)
            .map_or(0.0, |(_, s)| *s)
    };
    let picked: Vec<(Item, u32)> = if options.walk && !c.fused.is_empty() {
        let qv = c.query_vectors.as_ref().map(|v| v[0].clone());
        let conversation = format!("user: {query}");
        match walk::walk(ctx, &conversation, &c.fused, qv.as_deref(), &excluded).await {
            Ok(k) => k.into_iter().map(|r| (r.item, r.hop)).collect(),
            Err(_) => c.fused.iter().map(|(i, _)| (*i, 0)).collect(),
        }
    } else {
        c.fused.iter().map(|(i, _)| (*i, 0)).collect()
    };
    picked
        .into_iter()
        .take(options.limit)
        .map(|(item, hop)| {
            let (text, said_at) = describe(ctx.state, item);
            let retired =
                matches!(item, Item::Fact(id) if ctx.state.fact(id).is_some_and(|f| !f.is_live()));
            SearchHit {
                item,
                text,
                said_at,
                score: score(&item),
                hits: c.hits.get(&item).cloned().unwrap_or_default(),
                hop,
                retired,
            }
        })
        .collect()
}
