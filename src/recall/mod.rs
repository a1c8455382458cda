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
pub mod fuse;
pub mod hnsw;
pub mod passage;
pub mod topk;
pub mod vector;
pub mod walk;
pub mod when;

use std::collections::{BTreeMap, BTreeSet};

use crate::event::Event;
use crate::host::{Model, Task};
use crate::llm::tasks::SplitAnswer;
use crate::state::State;
use crate::step::Ctx;

pub use crate::types::recall::*;

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

/// Items in the view now: facts of the facts block, facts stated by an
/// episode whose messages are in view, and (with `with_blocks`) items shown
/// by recall blocks whose user message is in view.
pub fn in_view(state: &State, with_blocks: bool) -> BTreeSet<Item> {
    let mut s: BTreeSet<Item> = crate::view::block_facts(state)
        .iter()
        .map(|f| Item::Fact(f.id))
        .collect();
    let mut in_view: Vec<u64> = Vec::new();
    for e in state.in_view.iter().filter_map(|&id| state.episode(id)) {
        s.extend(e.facts.iter().map(|&f| Item::Fact(f)));
        in_view.extend(e.messages());
    }
    if !with_blocks {
        return s;
    }
    in_view.extend(state.open_from()..=state.messages.len() as u64);
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

/// Runs every search (facts and passages, by words and by meaning) for each
/// query (`first` numbers them), each list `depth` deep.
fn search_lists(
    ctx: &Ctx<'_, impl Model>,
    queries: &[String],
    first: usize,
    vectors: Option<&[Vec<f32>]>,
    excluded: &BTreeSet<Item>,
    depth: usize,
) -> Vec<(List, usize, Vec<Item>)> {
    let state: &State = ctx.state;
    let keep_fact = |id: u64| !excluded.contains(&Item::Fact(id));
    let keep_passage = |id: u64| !excluded.contains(&Item::Passage(id));
    let (fact_depth, passage_depth) = match depth {
        0 => (FACT_LIST, PASSAGE_LIST),
        d => (d.max(SEARCH_FACT_LIST), d.max(SEARCH_PASSAGE_LIST)),
    };
    let mut lists: Vec<(List, usize, Vec<Item>)> = Vec::new();
    for (i, query) in queries.iter().enumerate() {
        let q = first + i;
        let ids =
            |v: Vec<(u64, f64)>, f: fn(u64) -> Item| v.into_iter().map(|(id, _)| f(id)).collect();
        lists.push((
            List::FactWords,
            q,
            ids(
                state.fact_index.search(query, fact_depth, keep_fact),
                Item::Fact,
            ),
        ));
        lists.push((
            List::PassageWords,
            q,
            ids(
                state
                    .passage_index
                    .search(query, passage_depth, keep_passage),
                Item::Passage,
            ),
        ));
        if let Some(vs) = vectors {
            let fact = |id: u64| state.fact(id).map(|f| &f.embedding);
            lists.push((
                List::FactMeaning,
                q,
                ids(
                    state.fact_vectors.search(
                        &vs[i],
                        fact_depth,
                        ctx.config.min_cosine,
                        keep_fact,
                        fact,
                    ),
                    Item::Fact,
                ),
            ));
            let passage = |id: u64| {
                id.checked_sub(1)
                    .and_then(|i| state.passages.get(i as usize))
                    .map(|p| &p.embedding)
            };
            lists.push((
                List::PassageMeaning,
                q,
                ids(
                    state.passage_vectors.search(
                        &vs[i],
                        passage_depth,
                        ctx.config.min_cosine,
                        keep_passage,
                        passage,
                    ),
                    Item::Passage,
                ),
            ));
        }
    }
    lists
}

/// Closeness of an item to the query vector (0 without vectors).
fn closeness(state: &State, item: Item, query: Option<&[f32]>) -> f64 {
    let Some(q) = query else { return 0.0 };
    let v = match item {
        Item::Fact(id) => state.fact(id).map(|f| &f.embedding),
        Item::Passage(id) => id
            .checked_sub(1)
            .and_then(|i| state.passages.get(i as usize))
            .map(|p| &p.embedding),
        Item::Message(_) => None,
    };
    v.filter(|v| v.len() == q.len())
        .map_or(0.0, |v| v.cosine(q) as f64)
}

/// When an item was said.
fn said_at(state: &State, item: Item) -> i64 {
    match item {
        Item::Fact(id) => state.fact(id).map_or(0, |f| f.said_at),
        Item::Passage(id) => id
            .checked_sub(1)
            .and_then(|i| state.passages.get(i as usize))
            .map_or(0, |p| p.at),
        Item::Message(id) => state.messages.get(id as usize - 1).map_or(0, |m| m.at),
    }
}

/// Fuses search lists into candidates, `limit` deep: reciprocal rank fusion
/// (with `window`, the time the question names, one more list: the items
/// said then), then facts about the entities of the best facts (multi-hop
/// through the graph; with the walk on too, which keeps this ranking and
/// adds its own judged hops after it). Equal fused scores (common: two items each first in one list)
/// are ordered facts first, then by closeness to the whole message, then by
/// recency, and only then by key. For a recall block or a search by count,
/// facts and the passages quoting them are then placed ([`place_quotes`]);
/// for a search within a budget of tokens, facts are supported by the
/// passages holding their source messages ([`source_support`]) instead.
fn fuse_lists(
    state: &State,
    lists: Vec<(List, usize, Vec<Item>)>,
    limit: usize,
    query: Option<&[f32]>,
    excluded: &BTreeSet<Item>,
    ranking: Ranking,
    asked: Asked,
) -> Candidates {
    let Asked { window, preferred } = asked;
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
    let mut ranked: Vec<Vec<Item>> = lists.into_iter().map(|(_, _, items)| items).collect();
    if let Some((from, to)) = window {
        // The time the question names: the items said then, in the order
        // of their best place in any list, rank as one more list.
        let mut best: BTreeMap<Item, usize> = BTreeMap::new();
        for list in &ranked {
            for (r, item) in list.iter().enumerate() {
                let b = best.entry(*item).or_insert(r);
                *b = (*b).min(r);
            }
        }
        let mut then: Vec<(usize, Item)> = best
            .into_iter()
            .filter(|(i, _)| (from..to).contains(&said_at(state, *i)))
            .map(|(i, r)| (r, i))
            .collect();
        then.sort_unstable();
        ranked.push(then.into_iter().map(|(_, i)| i).collect());
    }
    if !preferred.is_empty() {
        ranked.push(preferred);
    }
    let mut fused = fuse::fuse(&ranked, usize::MAX);
    if ranking == Ranking::Budget {
        source_support(state, &mut fused);
    }
    let via = neighbours(state, &mut fused, query, excluded);
    order(state, &mut fused, query);
    match ranking {
        Ranking::Block => place_quotes(state, &mut fused, limit, false),
        Ranking::Count => place_quotes(state, &mut fused, limit, true),
        // The budget's own packing leaves out a fact whose source message
        // an item already carries: a quoting passage that is cut to other
        // messages no longer pushes the fact (the cheap form of what it
        // says) below the rest.
        Ranking::Budget => {}
    }
    fused.truncate(limit);
    Candidates { hits, fused, via }
}

/// What a fused ranking is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ranking {
    /// A recall block (its items rendered within the recall budget).
    Block,
    /// A search returning a number of items.
    Count,
    /// A search returning what fits a budget of tokens: facts gain from
    /// their source passages ([`source_support`]) and are not moved below
    /// a passage quoting them (its packing leaves out a fact whose source
    /// message or words an item already carries).
    Budget,
}

/// The share of the fused score of a passage holding a fact's source
/// message that the fact gains in a budgeted search ([`source_support`]).
const SOURCE_SUPPORT: f64 = 0.5;

/// The passage holding message `m`, found by halving (passages are runs
/// of messages made in order; none when the message is in no passage).
fn passage_of(state: &State, m: u64) -> Option<u64> {
    let i = state.passages.partition_point(|p| p.first <= m);
    let p = state.passages.get(i.checked_sub(1)?)?;
    (p.first <= m && m <= p.last).then_some(p.id)
}

/// Facts supported by their source: a fact whose note named the messages
/// it came from gains [`SOURCE_SUPPORT`] of the fused score of the best
/// passage holding one of them, when the searches found that passage too.
/// Two representations of one message agreeing is stronger evidence than
/// either alone, and within a budget of tokens the fact is the cheap form
/// of what that passage says: it rises toward the passage's place, where a
/// tight budget can carry it (measured, docs/BENCH.md: the passages gain
/// nothing from their facts the other way round).
fn source_support(state: &State, fused: &mut [(Item, f64)]) {
    let passages: BTreeMap<u64, f64> = fused
        .iter()
        .filter_map(|(i, s)| match i {
            Item::Passage(p) => Some((*p, *s)),
            _ => None,
        })
        .collect();
    for (item, score) in fused.iter_mut() {
        let Item::Fact(id) = item else { continue };
        let Some(f) = state.fact(*id) else { continue };
        let support = f
            .sources
            .iter()
            .filter_map(|&m| passage_of(state, m))
            .filter_map(|p| passages.get(&p))
            .fold(0.0, |a: f64, &b| a.max(b));
        *score += SOURCE_SUPPORT * support;
    }
}

/// What the question adds to the fusion besides its searches: the time it
/// names, and the preferences it bears on.
struct Asked {
    window: Option<(i64, i64)>,
    preferred: Vec<Item>,
}

/// Preferences recalled for one request, at most.
const PREFERENCES: usize = 3;

/// Whether a message asks for something a preference bears on: a
/// suggestion, advice, a plan or a choice.
fn is_request(text: &str) -> bool {
    const ASKS: [&str; 16] = [
        "recommend",
        "suggest",
        "advice",
        "advise",
        "ideas",
        "tips",
        "should i",
        "what should",
        "help me",
        "any good",
        "looking for",
        "plan a",
        "plan my",
        "choose",
        "pick a",
        "what can i",
    ];
    let lower = text.to_lowercase();
    ASKS.iter().any(|a| lower.contains(a))
}

/// Preferences that bear on a request: when `text` asks for a suggestion,
/// advice, a plan or a choice, the live facts of kind preference closest in
/// meaning to it (the latest first without vectors), at most
/// [`PREFERENCES`], as one more list of the fusion: what the user likes or
/// avoids shapes an answer whose words it does not share ("a recipe for
/// tonight?" and "I'm vegetarian").
fn preferences(
    state: &State,
    text: &str,
    query: Option<&[f32]>,
    excluded: &BTreeSet<Item>,
) -> Vec<Item> {
    if !is_request(text) {
        return Vec::new();
    }
    let mut found: Vec<(Item, f64, i64)> = state
        .facts
        .iter()
        .filter(|f| f.kind == crate::fact::FactKind::Preference && f.is_live())
        .map(|f| Item::Fact(f.id))
        .filter(|i| !excluded.contains(i))
        .map(|i| (i, closeness(state, i, query), said_at(state, i)))
        .collect();
    crate::sort::sort_by(&mut found, |a, b| {
        b.1.total_cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0))
    });
    found.truncate(PREFERENCES);
    found.into_iter().map(|(i, _, _)| i).collect()
}

/// Share of a fact's search terms that a passage must quote for the fact to
/// count as said by it.
const QUOTED: f64 = 0.6;

/// Which passages quote which facts (most of a fact's search terms in the
/// passage's text, same episode), each text's terms computed once.
struct Quotes<'a> {
    state: &'a State,
    terms: BTreeMap<Item, BTreeSet<String>>,
}

impl<'a> Quotes<'a> {
    fn new(state: &'a State) -> Self {
        Quotes {
            state,
            terms: BTreeMap::new(),
        }
    }

    fn terms(&mut self, item: Item) -> &BTreeSet<String> {
        let state = self.state;
        self.terms.entry(item).or_insert_with(|| {
            let (text, _) = describe(state, item);
            bm25::terms(&text).into_iter().collect()
        })
    }

    /// Whether passage `p` quotes fact `f`.
    fn quotes(&mut self, p: u64, f: u64) -> bool {
        let state = self.state;
        let passage = p
            .checked_sub(1)
            .and_then(|i| state.passages.get(i as usize));
        let (Some(passage), Some(fact)) = (passage, state.fact(f)) else {
            return false;
        };
        if passage.episode != fact.episode {
            return false;
        }
        let words = self.terms(Item::Fact(f)).clone();
        let quote = self.terms(Item::Passage(p));
        !words.is_empty() && words.intersection(quote).count() as f64 >= QUOTED * words.len() as f64
    }
}

/// Places facts and the passages that quote them, for the first `limit`
/// items (the rest cannot change what is returned).
///
/// Always: a fact that a better-ranked passage quotes moves below every
/// item that is not so quoted (order kept otherwise): the passage holds
/// what the fact says, so in a short list or a budgeted block the fact
/// would only take the room of the next piece of evidence.
///
/// With `lift` (a search that returns a number of items, not a budget of
/// tokens): first, a passage quoting a fact ranked above it moves to that
/// fact's place (the fact, now quoted by a better passage, then goes below
/// as above): the passage says what the fact says, with its context and
/// the turns around it, for the same one slot. A recall block keeps the
/// fact first instead: it costs a tenth of the tokens. (A budgeted search
/// does not place quotes: see [`Ranking::Budget`].)
fn place_quotes(state: &State, fused: &mut Vec<(Item, f64)>, limit: usize, lift: bool) {
    let mut q = Quotes::new(state);
    if lift {
        let mut i = 0;
        while i < fused.len().min(limit) {
            if let Item::Fact(f) = fused[i].0 {
                let quoting = (i + 1..fused.len())
                    .find(|&j| matches!(fused[j].0, Item::Passage(p) if q.quotes(p, f)));
                if let Some(j) = quoting {
                    let p = fused.remove(j);
                    fused.insert(i, p);
                    i += 1;
                }
            }
            i += 1;
        }
    }
    let mut placed: Vec<u64> = Vec::new();
    let mut kept: Vec<(Item, f64)> = Vec::with_capacity(fused.len());
    let mut quoted: Vec<(Item, f64)> = Vec::new();
    let mut rest = fused.drain(..);
    for (item, score) in rest.by_ref() {
        let said = match item {
            Item::Passage(id) => {
                placed.push(id);
                false
            }
            Item::Message(_) => false,
            Item::Fact(f) => placed.iter().any(|&p| q.quotes(p, f)),
        };
        match said {
            true => quoted.push((item, score)),
            false => kept.push((item, score)),
        }
        if kept.len() >= limit {
            break;
        }
    }
    kept.extend(rest);
    kept.extend(quoted);
    *fused = kept;
}

/// Orders fused candidates: score, then facts before passages (a fact says
/// in one sentence what a passage quotes at length: cheaper in a block),
/// closeness to the whole message, recency, key.
fn order(state: &State, fused: &mut [(Item, f64)], query: Option<&[f32]>) {
    let passage = |i: &Item| matches!(i, Item::Passage(_));
    crate::sort::sort_by(fused, |a, b| {
        b.1.total_cmp(&a.1)
            .then(passage(&a.0).cmp(&passage(&b.0)))
            .then(a.0.cmp(&b.0))
    });
    // Closeness and recency only where score and kind tie (each computed
    // once per item: a cosine is the costly part of fusing).
    let mut start = 0;
    while start < fused.len() {
        let (score, kind) = (fused[start].1, passage(&fused[start].0));
        let end = start
            + fused[start..]
                .iter()
                .take_while(|(i, s)| s.total_cmp(&score).is_eq() && passage(i) == kind)
                .count();
        if end - start > 1 {
            let run = &mut fused[start..end];
            let keyed: BTreeMap<Item, (f64, i64)> = run
                .iter()
                .map(|(i, _)| (*i, (closeness(state, *i, query), said_at(state, *i))))
                .collect();
            crate::sort::sort_by(run, |a, b| {
                keyed[&b.0]
                    .0
                    .total_cmp(&keyed[&a.0].0)
                    .then(keyed[&b.0].1.cmp(&keyed[&a.0].1))
                    .then(a.0.cmp(&b.0))
            });
        }
        start = end;
    }
}

/// A graph neighbour's score, as a share of a search hit's at the same rank.
const NEIGHBOUR_DISCOUNT: f64 = 0.999;
/// The single-list rank the closest graph neighbour is scored at (the next
/// ones below it): a fact no search found is weaker evidence than a
/// search's own first places. At k = 5 a neighbour scored as a first place
/// took a tenth of the LoCoMo bench's top-10 slots and held evidence in 1
/// of 62; from sixth place on they fill what the searches leave.
const NEIGHBOUR_FROM: usize = 6;

/// Multi-hop through the graph: live facts about an entity of one of the
/// [`STRONG_HITS`] best-fused facts, not found by the searches, join the
/// candidates ranked by closeness to the query, each scored as if one list
/// ranked it there (reciprocal rank fusion's own scale, so a neighbour never
/// outranks what several searches agree on). Hub entities (about more than
/// a tenth of the facts, and more than ten: the speakers of a chat) are not
/// followed: they say who, not what. Returns the entity each was reached by.
fn neighbours(
    state: &State,
    fused: &mut Vec<(Item, f64)>,
    query: Option<&[f32]>,
    excluded: &BTreeSet<Item>,
) -> BTreeMap<Item, u64> {
    let mut ordered = fused.clone();
    order(state, &mut ordered, query);
    let hub = (state.facts.len() / 10).max(10);
    let known: BTreeSet<Item> = fused.iter().map(|(i, _)| *i).collect();
    let mut found: BTreeMap<Item, u64> = BTreeMap::new();
    for (item, _) in ordered
        .iter()
        .filter(|(i, _)| matches!(i, Item::Fact(_)))
        .take(STRONG_HITS)
    {
        let Item::Fact(id) = item else { continue };
        let Some(f) = state.fact(*id) else { continue };
        for entity in [f.subject, f.object] {
            let about = state.facts_about(entity);
            if about.len() > hub {
                continue;
            }
            for &n in about {
                let it = Item::Fact(n);
                let live = state.fact(n).is_some_and(|g| g.is_live());
                if live && !known.contains(&it) && !excluded.contains(&it) {
                    found.entry(it).or_insert(entity);
                }
            }
        }
    }
    let mut near: Vec<(Item, f64)> = found
        .keys()
        .map(|i| (*i, closeness(state, *i, query)))
        .collect();
    crate::sort::sort_by(&mut near, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    near.truncate(NEIGHBOURS);
    // Just below a search hit at the same rank: a neighbour no search found
    // never ties with (and so never outranks) one a search did find there.
    for (rank, (item, _)) in near.iter().enumerate() {
        fused.push((
            *item,
            NEIGHBOUR_DISCOUNT / (fuse::RRF_K + (NEIGHBOUR_FROM + rank) as f64),
        ));
    }
    let kept: BTreeSet<Item> = near.iter().map(|(i, _)| *i).collect();
    found.retain(|i, _| kept.contains(i));
    found
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
fn block_tokens<M: Model>(ctx: &Ctx<'_, M>, r: &mut block::Renderer, items: &[Item]) -> usize {
    ctx.model.count_tokens(&r.render(items)) + crate::message::FRAMING_TOKENS
}

/// Keeps `kept` (in order) while the block fits the recall budget. A retired
/// fact stays only when the fact that retired it is kept too.
pub(crate) fn select<M: Model>(ctx: &Ctx<'_, M>, kept: Vec<Recalled>) -> Vec<Recalled> {
    let state: &State = ctx.state;
    let budget = ctx.config.recall_budget();
    let mut renderer = block::Renderer::new(state, ctx.config.passage_tokens);
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
    if state.facts.is_empty() && state.passages.is_empty() {
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
    let excluded = in_view(state, true);
    let limit = ctx.config.recall_candidates;
    let c = fuse_lists(
        state,
        search_lists(ctx, &queries, 0, vectors.as_deref(), &excluded, 0),
        limit,
        vectors.as_ref().map(|v| v[0].as_slice()),
        &excluded,
        Ranking::Block,
        Asked {
            window: when::window(&text, ctx.now),
            preferred: preferences(
                state,
                &text,
                vectors.as_ref().map(|v| v[0].as_slice()),
                &excluded,
            ),
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
            let lists = search_lists(ctx, &new, first, vectors.as_deref(), &excluded, 0);
            for (list, q, items) in &lists {
                for (i, item) in items.iter().enumerate() {
                    hits.entry(*item).or_default().push(Hit {
                        list: *list,
                        query: *q,
                        rank: i + 1,
                    });
                }
            }
            let known: BTreeSet<Item> = fused.iter().map(|(i, _)| *i).collect();
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

/// Recall blocks shown in the view now, oldest first, with their tokens.
pub fn blocks_in_view<M: Model>(
    state: &State,
    model: &M,
    config: &crate::Config,
) -> Vec<(u64, usize)> {
    // The messages in view: those of the episodes in view, then the open
    // stretch. A block shown takes its framing at least: 0 is none.
    let ranges = state
        .in_view
        .iter()
        .filter_map(|&id| state.episode(id))
        .map(|e| (e.first, e.last))
        .chain([(state.open_from(), u64::MAX)]);
    let mut out: Vec<(u64, usize)> = ranges
        .flat_map(|(first, last)| state.recall_by_message.range(first..=last))
        .map(|(_, &block)| {
            let t = crate::view::block_tokens(state, model, config.passage_tokens, block);
            (block, t)
        })
        .filter(|&(_, t)| t > 0)
        .collect();
    out.sort_unstable();
    out
}

/// Keeps recall blocks in view within their share of the room
/// (`recall_share` of the ceiling): the oldest give way first (recorded,
/// so explain can say why; their items stay recallable). Returns the blocks
/// that gave way.
pub(crate) fn give_way<M: Model>(ctx: &mut Ctx<'_, M>) -> Vec<u64> {
    let share = (ctx.config.ceiling_tokens as f64 * ctx.config.recall_share) as usize;
    let blocks = blocks_in_view(ctx.state, ctx.model, ctx.config);
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
                (passage::text(state, p.first, p.last), p.at)
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

/// Depth of the search over the messages in view.
const VIEW_LIST: usize = 10;

/// The messages in view now (those of episodes in view, then the open
/// stretch), searched by words for each query, `depth` deep (at least
/// [`VIEW_LIST`]): what was said recently is not in any passage yet, and an
/// on-demand search should find it too. Built per search over the view
/// alone (a few hundred messages at most: the ceiling bounds them). A query
/// searches only by its words found in fewer than half of these messages
/// (Robertson and Spärck Jones's idf is positive only there): in a chat the
/// speakers' names are in most messages, and a list of a few dozen
/// messages ranked by a name alone would put noise at its top.
fn view_lists(state: &State, queries: &[String], depth: usize) -> Vec<(List, usize, Vec<Item>)> {
    let mut index = bm25::Bm25::default();
    let mut docs = 0usize;
    let episodes = state
        .in_view
        .iter()
        .filter_map(|&id| state.episode(id))
        .map(|e| (e.first, e.last));
    let open = (state.open_from(), state.messages.len() as u64);
    for (first, last) in episodes.chain([open]) {
        for id in first..=last {
            let Some(m) = state.messages.get(id as usize - 1) else {
                continue;
            };
            if !m.erased && m.role != crate::message::Role::System {
                docs += 1;
                index.insert(id, &m.display_text());
            }
        }
    }
    queries
        .iter()
        .enumerate()
        .map(|(q, query)| {
            let rare: Vec<String> = bm25::terms(query)
                .into_iter()
                .filter(|w| 2 * index.document_frequency(w) < docs)
                .collect();
            let hits = index.search_terms(rare, depth.max(VIEW_LIST), |_| true);
            let items = hits.into_iter().map(|(id, _)| Item::Message(id)).collect();
            (List::ViewWords, q, items)
        })
        .collect()
}

/// On-demand search: the same pipeline (the model's split when it is on,
/// then the searches, optionally the walk), no view change. `include_in_view:
/// false` leaves out what the view holds for good (facts block, facts of
/// episodes in view), not what a recall block shows for a turn.
pub(crate) async fn search<M: Model>(
    ctx: &Ctx<'_, M>,
    query: &str,
    options: &SearchOptions,
) -> Vec<SearchHit> {
    let excluded = if options.include_in_view {
        BTreeSet::new()
    } else {
        in_view(ctx.state, false)
    };
    let mut queries = vec![query.to_string()];
    let (model_parts, model_window) = match ctx.config.split_with_model && worth_splitting(query) {
        true => split(ctx, query)
            .await
            .map_or((Vec::new(), None), |s| (s.parts, s.window)),
        false => (rule_parts(query), None),
    };
    queries.extend(model_parts);
    let vectors = embed_queries(ctx, &queries).await;
    let limit = options.limit.max(ctx.config.recall_candidates);
    let mut lists = search_lists(
        ctx,
        &queries,
        0,
        vectors.as_deref(),
        &excluded,
        options.limit,
    );
    if options.include_in_view {
        lists.extend(view_lists(ctx.state, &queries, options.limit));
    }
    let c = fuse_lists(
        ctx.state,
        lists,
        limit,
        vectors.as_ref().map(|v| v[0].as_slice()),
        &excluded,
        match options.budget_tokens {
            Some(_) => Ranking::Budget,
            None => Ranking::Count,
        },
        // The model's reading of the time first, then the rules'.
        Asked {
            window: model_window.or_else(|| when::window(query, ctx.now)),
            preferred: preferences(
                ctx.state,
                query,
                vectors.as_ref().map(|v| v[0].as_slice()),
                &excluded,
            ),
        },
    );
    let score = |item: &Item| {
        c.fused
            .iter()
            .find(|(i, _)| i == item)
            .map_or(0.0, |(_, s)| *s)
    };
    let picked: Vec<(Item, u32)> = if options.walk && !c.fused.is_empty() {
        let qv = vectors.as_ref().map(|v| v[0].clone());
        let conversation = format!("user: {query}");
        match walk::walk(
            ctx,
            &conversation,
            &c.fused,
            &c.via,
            qv.as_deref(),
            &excluded,
        )
        .await
        {
            Ok((k, _)) => k
                .into_iter()
                .map(|r| (r.item, r.hop.max(u32::from(c.via.contains_key(&r.item)))))
                .collect(),
            Err(e) => {
                ctx.degrade(Task::Relevance, &e, "search returned the fused ranking");
                c.fused.iter().map(|(i, _)| (*i, 0)).collect()
            }
        }
    } else {
        let hop = |i: &Item| u32::from(c.via.contains_key(i));
        c.fused.iter().map(|(i, _)| (*i, hop(i))).collect()
    };
    let hit = |item: Item, hop: u32| {
        let (text, said_at) = describe(ctx.state, item);
        let fact = match item {
            Item::Fact(id) => ctx.state.fact(id),
            _ => None,
        };
        let retired = fact.is_some_and(|f| !f.is_live());
        SearchHit {
            sources: fact.map(|f| f.sources.clone()).unwrap_or_default(),
            item,
            text,
            said_at,
            score: score(&item),
            hits: c.hits.get(&item).cloned().unwrap_or_default(),
            hop,
            retired,
        }
    };
    let Some(budget) = options.budget_tokens else {
        return picked
            .into_iter()
            .map(|(item, hop)| hit(item, hop))
            .take(options.limit)
            .collect();
    };
    let mut room = budget;
    let mut out: Vec<SearchHit> = Vec::new();
    let mut shown: BTreeSet<u64> = BTreeSet::new();
    // Messages carried (cut, in view, or in a whole passage), and the
    // messages returned facts came from: a fact and its source message
    // never both spend the room.
    let mut covered: BTreeSet<u64> = BTreeSet::new();
    let mut sourced: BTreeSet<u64> = BTreeSet::new();
    let mut facts_said: Vec<BTreeSet<String>> = Vec::new();
    let mut said: Vec<BTreeSet<String>> = Vec::new();
    let query_terms: BTreeSet<String> = bm25::terms(query).into_iter().collect();
    for (item, hop) in distinct_sources_first(ctx.state, picked, &c.fused) {
        if out.len() >= options.limit {
            break;
        }
        let cost = |h: &SearchHit| ctx.model.count_tokens(&h.text) + HIT_FRAMING;
        // Each piece, and whether it was cut from a passage.
        let pieces: Vec<(SearchHit, bool)> = match item {
            Item::Passage(id) => {
                let left_out: BTreeSet<u64> = shown.union(&sourced).copied().collect();
                let cut: Vec<SearchHit> = cut_passage(ctx.state, id, &query_terms, &left_out)
                    .into_iter()
                    .map(|(m, text)| {
                        let mut h = hit(Item::Message(m), hop);
                        h.text = text;
                        h.hits = c.hits.get(&item).cloned().unwrap_or_default();
                        h.score = score(&item);
                        h
                    })
                    .collect();
                let whole = hit(item, hop);
                let cut_cost: usize = cut.iter().map(cost).sum();
                let messages = passage_messages(ctx.state, id);
                let w = cost(&whole);
                let cheap = w * cut.len() <= WHOLE_PASSAGE_COST * cut_cost * messages;
                // A whole passage takes at most half the room left (past
                // that, one passage crowds out the next items) unless its
                // cut would cost as much.
                let spare = 2 * w <= room || w <= cut_cost;
                // A passage holding a returned fact's source is cut (its
                // other messages).
                let fresh = passage_range(ctx.state, id)
                    .is_some_and(|(a, b)| sourced.range(a..=b).next().is_none());
                match !cut.is_empty() && w <= room && cheap && spare && fresh {
                    true => vec![(whole, false)],
                    false => cut.into_iter().map(|h| (h, true)).collect(),
                }
            }
            Item::Message(m) if shown.contains(&m) => Vec::new(),
            _ => vec![(hit(item, hop), false)],
        };
        for (h, cut) in pieces {
            if out.len() >= options.limit {
                break;
            }
            // A fact whose words a piece already shown says (or the
            // reverse) would spend the budget twice on them.
            let terms: BTreeSet<String> = bm25::terms(&h.text).into_iter().collect();
            let repeats = match h.item {
                Item::Fact(_) => {
                    (!h.sources.is_empty() && h.sources.iter().all(|m| covered.contains(m)))
                        || said.iter().any(|s| quoted_in(&terms, s))
                }
                Item::Message(m) if sourced.contains(&m) => true,
                // A message cut from a passage that says a fact already
                // returned (the fact is the shorter way to say it).
                Item::Message(_) if cut => facts_said.iter().any(|f| quoted_in(f, &terms)),
                _ => false,
            };
            let cost = ctx.model.count_tokens(&h.text) + HIT_FRAMING;
            if repeats || cost > room {
                continue;
            }
            room -= cost;
            match h.item {
                Item::Message(m) => {
                    shown.insert(m);
                    covered.insert(m);
                }
                Item::Passage(p) => covered.extend(
                    passage_range(ctx.state, p)
                        .into_iter()
                        .flat_map(|(a, b)| a..=b),
                ),
                Item::Fact(_) => {
                    facts_said.push(terms.clone());
                    sourced.extend(h.sources.iter().copied());
                }
            }
            said.push(terms);
            out.push(h);
        }
    }
    add_history(ctx, &mut out, room);
    out
}

/// The order a budgeted search packs: a fact whose source messages all
/// gave a better-ranked fact goes after the other ranked items (still
/// before what only the walk reached, which never pushes a ranked item
/// out): within a budget, a fact from a message no returned fact came from
/// carries more new evidence per token than a second fact from the same
/// one.
fn distinct_sources_first(
    state: &State,
    picked: Vec<(Item, u32)>,
    fused: &[(Item, f64)],
) -> Vec<(Item, u32)> {
    let ranked: BTreeSet<Item> = fused.iter().map(|(i, _)| *i).collect();
    let mut sourced: BTreeSet<u64> = BTreeSet::new();
    let mut first: Vec<(Item, u32)> = Vec::with_capacity(picked.len());
    let mut later: Vec<(Item, u32)> = Vec::new();
    for (item, hop) in picked {
        let sources = match item {
            Item::Fact(id) => state.fact(id).map_or(&[][..], |f| &f.sources[..]),
            _ => &[][..],
        };
        if !sources.is_empty() && sources.iter().all(|m| sourced.contains(m)) {
            later.push((item, hop));
        } else {
            sourced.extend(sources.iter().copied());
            first.push((item, hop));
        }
    }
    // Before the first item only the walk reached.
    let at = first
        .iter()
        .position(|(i, _)| !ranked.contains(i))
        .unwrap_or(first.len());
    first.splice(at..at, later);
    first
}

/// Knowledge that changed, in the room a budgeted search left: a returned
/// live fact that retired an older one (and whose old value no returned
/// item holds) gets one line of history, `(since DATE; before: OLD)`, the
/// date it was said and the latest value it replaced, while the room left
/// holds it. Only after every item is placed, so it never takes an item's
/// room.
fn add_history<M: Model>(ctx: &Ctx<'_, M>, out: &mut [SearchHit], mut room: usize) {
    let state: &State = ctx.state;
    let returned: BTreeSet<Item> = out.iter().map(|h| h.item).collect();
    for h in out.iter_mut() {
        let Item::Fact(id) = h.item else { continue };
        let Some(f) = state.fact(id).filter(|f| f.is_live()) else {
            continue;
        };
        let old = state
            .facts_about(f.subject)
            .iter()
            .chain(state.facts_about(f.object))
            .filter_map(|&o| state.fact(o))
            .filter(|o| !o.erased && o.retired.as_ref().is_some_and(|r| r.by == id))
            .max_by_key(|o| (o.said_at, o.id));
        let Some(old) = old.filter(|o| !returned.contains(&Item::Fact(o.id))) else {
            continue;
        };
        let line = format!(
            "\n(since {}; before: {})",
            crate::text::format_date(f.said_at),
            crate::text::inline(&old.sentence)
        );
        // What the line adds to the hit's count (a count need not add up
        // over pieces of a text).
        let with = format!("{}{line}", h.text);
        let cost = ctx
            .model
            .count_tokens(&with)
            .saturating_sub(ctx.model.count_tokens(&h.text));
        if cost <= room {
            room -= cost;
            h.text = with;
        }
    }
}

/// Whether most of `fact`'s terms are in `text`'s ([`QUOTED`]).
fn quoted_in(fact: &BTreeSet<String>, text: &BTreeSet<String>) -> bool {
    !fact.is_empty() && fact.intersection(text).count() as f64 >= QUOTED * fact.len() as f64
}

/// A budgeted search keeps a passage whole when it fits and costs per
/// message at most this many times what its cut ([`cut_passage`]) costs
/// per message; otherwise it carries the cut. A run of short turns
/// (LoCoMo) reads better whole: the answer is often the reply beside the
/// turn that holds the question's words; a long answer (LongMemEval's
/// assistant turns) reads better cut (docs/BENCH.md).
const WHOLE_PASSAGE_COST: usize = 2;

/// First and last message of passage `id`.
fn passage_range(state: &State, id: u64) -> Option<(u64, u64)> {
    id.checked_sub(1)
        .and_then(|i| state.passages.get(i as usize))
        .map(|p| (p.first, p.last))
}

/// Messages of passage `id` not erased.
fn passage_messages(state: &State, id: u64) -> usize {
    id.checked_sub(1)
        .and_then(|i| state.passages.get(i as usize))
        .map_or(0, |p| {
            (p.first..=p.last)
                .filter(|&m| {
                    state
                        .messages
                        .get(m as usize - 1)
                        .is_some_and(|m| !m.erased)
                })
                .count()
        })
}

/// Messages of a passage kept when a budgeted search cuts it: at most this
/// many, the ones holding the query's rarest words.
const CUT_MESSAGES: usize = 2;
/// A message longer than this many tokens is cut to its sentences that
/// hold query words.
const CUT_SENTENCES_ABOVE: usize = 60;

/// A passage cut to what a tight budget should carry: its messages that
/// hold the query's words (weighted by how rare each word is among the
/// passages), best first, at most [`CUT_MESSAGES`], each as
/// `[date] role: text` with a long message cut to its sentences holding
/// query words. A passage no query word touches (found by meaning) keeps
/// its messages in order. Messages in `shown` are left out.
fn cut_passage(
    state: &State,
    id: u64,
    query: &BTreeSet<String>,
    shown: &BTreeSet<u64>,
) -> Vec<(u64, String)> {
    let Some(p) = id
        .checked_sub(1)
        .and_then(|i| state.passages.get(i as usize))
    else {
        return Vec::new();
    };
    let n = state.passage_index.len().max(1) as f64;
    let weight = |t: &String| {
        let df = state.passage_index.document_frequency(t) as f64;
        (1.0 + n / (df + 0.5)).ln()
    };
    let mut scored: Vec<(f64, u64)> = (p.first..=p.last)
        .filter(|m| !shown.contains(m))
        .filter_map(|m| state.messages.get(m as usize - 1))
        .filter(|m| !m.erased)
        .map(|m| {
            let terms: BTreeSet<String> = bm25::terms(&m.display_text()).into_iter().collect();
            (terms.intersection(query).map(weight).sum::<f64>(), m.id)
        })
        .collect();
    let best = scored.iter().map(|s| s.0).fold(0.0, f64::max);
    if best > 0.0 {
        scored.retain(|s| s.0 > 0.0 && 2.0 * s.0 >= best);
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    scored.truncate(CUT_MESSAGES);
    let mut ids: Vec<u64> = scored.iter().map(|s| s.1).collect();
    // A question carries its answer: the reply just after it (in the same
    // episode, said by the other side) goes with it.
    let last = state.episode(p.episode).map_or(p.last, |e| e.last);
    for &(_, id) in &scored {
        let m = state.message(id);
        if !m.display_text().trim_end().ends_with('?') {
            continue;
        }
        let next = id + 1;
        if next > last || ids.contains(&next) || shown.contains(&next) {
            continue;
        }
        if let Some(r) = state.messages.get(next as usize - 1) {
            if !r.erased && r.role != m.role && r.role != crate::message::Role::System {
                ids.push(next);
            }
        }
    }
    ids.sort_unstable();
    ids.into_iter()
        .map(|id| {
            let m = state.message(id);
            let text = crate::text::inline(&m.display_text());
            let text = match crate::text::estimate_tokens(&text) > CUT_SENTENCES_ABOVE {
                true => relevant_sentences(&text, query),
                false => text,
            };
            let date = crate::text::format_date(m.at);
            (id, format!("[{date}] {}: {text}", m.role.as_str()))
        })
        .collect()
}

/// The sentences of `text` holding query words, joined by " … " (the first
/// sentence when none does), at most [`CUT_SENTENCES_ABOVE`] tokens.
fn relevant_sentences(text: &str, query: &BTreeSet<String>) -> String {
    let mut sentences: Vec<&str> = Vec::new();
    let mut start = 0;
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if matches!(c, b'.' | b'?' | b'!') && b.get(i + 1).is_none_or(|n| *n == b' ') {
            sentences.push(&text[start..=i]);
            start = i + 1;
        }
    }
    if start < text.len() {
        sentences.push(&text[start..]);
    }
    let mut scored: Vec<(usize, usize)> = sentences
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let terms: BTreeSet<String> = bm25::terms(s).into_iter().collect();
            (terms.intersection(query).count(), i)
        })
        .filter(|(n, _)| *n > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut kept: Vec<usize> = Vec::new();
    let mut tokens = 0;
    for (_, i) in scored {
        let t = crate::text::estimate_tokens(sentences[i]);
        if tokens + t > CUT_SENTENCES_ABOVE && !kept.is_empty() {
            break;
        }
        tokens += t;
        kept.push(i);
    }
    if kept.is_empty() {
        kept.push(0);
    }
    kept.sort_unstable();
    let out = kept
        .iter()
        .map(|&i| sentences[i].trim())
        .collect::<Vec<_>>()
        .join(" … ");
    crate::text::clip(&out, CUT_SENTENCES_ABOVE)
}
