//! Ranking the candidates: the searches of each query, their fusion, the
//! support a fact gets from its source passage, preferences for requests,
//! quotes, the order by time and closeness, and neighbours by entity.

use std::collections::{BTreeMap, BTreeSet};

use crate::base::host::Model;
use crate::base::sort::CollectOrdered;
use crate::index::{bm25, fuse};
use crate::recall::{
    describe, Candidates, Exclusion, FACT_LIST, NEIGHBOURS, PASSAGE_LIST, SEARCH_FACT_LIST,
    SEARCH_PASSAGE_LIST, STRONG_HITS,
};
use crate::state::State;
use crate::step::Ctx;
use crate::types::recall::{Hit, Item, List};

/// Runs every search (facts and passages, by words and by meaning) for each
/// query (`first` numbers them), each list `depth` deep.
pub(super) fn search_lists(
    ctx: &Ctx<'_, impl Model>,
    queries: &[String],
    first: usize,
    vectors: Option<&[Vec<f32>]>,
    excluded: &dyn Exclusion,
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

/// The items said within `window` ([from, to)), or left out by `inner`.
struct Within<'a> {
    state: &'a State,
    inner: &'a dyn Exclusion,
    window: (i64, i64),
}

impl Exclusion for Within<'_> {
    fn contains(&self, item: &Item) -> bool {
        !(self.window.0..self.window.1).contains(&said_at(self.state, *item))
            || self.inner.contains(item)
    }
}

/// The searches of the whole question (`queries[0]`) again, over the items
/// said within the time it names: the global lists rank an item of that
/// time only when it is among the best of all time, so a question about
/// "October 13" would otherwise be answered from what the whole history
/// says best, not from what was said that day.
pub(super) fn window_lists(
    ctx: &Ctx<'_, impl Model>,
    queries: &[String],
    vectors: Option<&[Vec<f32>]>,
    excluded: &dyn Exclusion,
    window: Option<(i64, i64)>,
    depth: usize,
) -> Vec<(List, usize, Vec<Item>)> {
    let (Some(window), Some(query)) = (window, queries.first()) else {
        return Vec::new();
    };
    let within = Within {
        state: ctx.state,
        inner: excluded,
        window,
    };
    let vectors = vectors.map(|v| &v[..1]);
    search_lists(ctx, std::slice::from_ref(query), 0, vectors, &within, depth)
}

/// The stored embedding of a fact or a passage (a message has none here).
fn embedding_of(state: &State, item: Item) -> Option<&crate::types::embedding::Embedding> {
    match item {
        Item::Fact(id) => state.fact(id).map(|f| &f.embedding),
        Item::Passage(id) => id
            .checked_sub(1)
            .and_then(|i| state.passages.get(i as usize))
            .map(|p| &p.embedding),
        Item::Message(_) => None,
    }
}

/// Closeness of an item to the query vector (0 without vectors).
pub(super) fn closeness(state: &State, item: Item, query: Option<&[f32]>) -> f64 {
    let Some(q) = query else { return 0.0 };
    embedding_of(state, item)
        .filter(|v| v.len() == q.len())
        .map_or(0.0, |v| v.cosine(q) as f64)
}

/// Each item's cosine with `query` (0 for a message, and without a query),
/// four at a time ([`crate::types::embedding::cosines`]: each exactly its
/// own cosine): a hop of the walk or the neighbours of the best facts weigh
/// every live fact about an entity, thousands of cosines at 100k facts.
/// With `same_length`, an embedding of another length than the query's is
/// 0 too ([`closeness`]).
pub(super) fn cosines_of(
    state: &State,
    items: impl Iterator<Item = Item>,
    query: Option<&[f32]>,
    same_length: bool,
) -> Vec<f32> {
    use crate::types::embedding::{cosines, Embedding};
    let embeddings: Vec<Option<&Embedding>> = items
        .map(|it| {
            let q = query?;
            embedding_of(state, it).filter(|v| !same_length || v.len() == q.len())
        })
        .collect();
    let mut out = vec![0.0f32; embeddings.len()];
    let Some(q) = query else { return out };
    let at: Vec<usize> = (0..embeddings.len())
        .filter(|&i| embeddings[i].is_some())
        .collect();
    let e = |i: usize| embeddings[i].expect("an embedding");
    let mut fours = at.chunks_exact(4);
    for c in &mut fours {
        let cs = cosines(q, [e(c[0]), e(c[1]), e(c[2]), e(c[3])]);
        for (&i, c) in c.iter().zip(cs) {
            out[i] = c;
        }
    }
    for &i in fours.remainder() {
        out[i] = e(i).cosine(q);
    }
    out
}

/// When an item was said.
pub(super) fn said_at(state: &State, item: Item) -> i64 {
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
pub(super) fn fuse_lists(
    state: &State,
    lists: Vec<(List, usize, Vec<Item>)>,
    limit: usize,
    query: Option<&[f32]>,
    excluded: &dyn Exclusion,
    ranking: Ranking,
    asked: Asked,
) -> Candidates {
    let Asked {
        window,
        preferred,
        by_asker,
        feedback,
    } = asked;
    let mut hits: BTreeMap<Item, Vec<Hit>> = BTreeMap::new();
    for (list, query, items) in lists.iter().chain(&feedback) {
        for (i, item) in items.iter().enumerate() {
            // A message in view ranked among the passages by meaning.
            let list = match (list, item) {
                (List::PassageMeaning, Item::Message(_)) => List::ViewMeaning,
                (l, _) => *l,
            };
            hits.entry(*item).or_default().push(Hit {
                list,
                query: *query,
                rank: i + 1,
            });
        }
    }
    let mut ranked: Vec<Vec<Item>> = lists.into_iter().map(|(_, _, items)| items).collect();
    // The time the question names: the items said then, in the order of
    // their best place in any list, rank as one more list.
    if let Some((from, to)) = window {
        let then = best_placed(&ranked, |i| (from..to).contains(&said_at(state, *i)));
        ranked.push(then);
    }
    // A question about the asker ("what did I ..."): what the user said
    // (the user's messages, passages holding them, facts not only from
    // someone else's), in the same order, as one more list: what only the
    // assistant said ranks below it.
    if by_asker {
        let own = best_placed(&ranked, |i| said_by_user(state, *i));
        ranked.push(own);
    }
    if !preferred.is_empty() {
        ranked.push(preferred);
    }
    let mut fused = fuse::fuse(&ranked, usize::MAX);
    crate::recall::feedback::add_feedback(&mut fused, &feedback);
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
pub(super) enum Ranking {
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
pub(super) const SOURCE_SUPPORT: f64 = 0.5;

/// The passage holding message `m`, found by halving (with one thread,
/// passages are runs of messages made in order), or, when threads sealed
/// their episodes out of that order, by a scan; none when the message is
/// in no passage.
pub(super) fn passage_of(state: &State, m: u64) -> Option<u64> {
    let thread = &state.messages.get(m.checked_sub(1)? as usize)?.thread;
    let holds = |p: &crate::types::recall::Passage| {
        p.first <= m && m <= p.last && state.message(p.first).thread == *thread
    };
    let i = state.passages.partition_point(|p| p.first <= m);
    if let Some(p) = i.checked_sub(1).and_then(|i| state.passages.get(i)) {
        if holds(p) {
            return Some(p.id);
        }
    }
    match state.threads.len() > 1 {
        true => state.passages.iter().find(|p| holds(p)).map(|p| p.id),
        false => None,
    }
}

/// Facts supported by their source: a fact whose note named the messages
/// it came from gains [`SOURCE_SUPPORT`] of the fused score of the best
/// passage holding one of them, when the searches found that passage too.
/// Two representations of one message agreeing is stronger evidence than
/// either alone, and within a budget of tokens the fact is the cheap form
/// of what that passage says: it rises toward the passage's place, where a
/// tight budget can carry it (measured, docs/bench-history.md: the passages gain
/// nothing from their facts the other way round).
pub(super) fn source_support(state: &State, fused: &mut [(Item, f64)]) {
    let passages: BTreeMap<u64, f64> = fused
        .iter()
        .filter_map(|(i, s)| match i {
            Item::Passage(p) => Some((*p, *s)),
            _ => None,
        })
        .into_map();
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
pub(super) struct Asked {
    pub(super) window: Option<(i64, i64)>,
    pub(super) preferred: Vec<Item>,
    /// Whether the question is about the one asking it ([`about_the_asker`]).
    pub(super) by_asker: bool,
    /// The searches of the question expanded by feedback
    /// ([`super::feedback`]), fused at a lower weight.
    pub(super) feedback: Vec<(List, usize, Vec<Item>)>,
}

/// The items of `lists` that `keep` keeps, in the order of their best place
/// in any list.
fn best_placed(lists: &[Vec<Item>], keep: impl Fn(&Item) -> bool) -> Vec<Item> {
    let mut best: BTreeMap<Item, usize> = BTreeMap::new();
    for list in lists {
        for (r, item) in list.iter().enumerate().filter(|(_, i)| keep(i)) {
            let b = best.entry(*item).or_insert(r);
            *b = (*b).min(r);
        }
    }
    let mut placed: Vec<(usize, Item)> = best.into_iter().map(|(i, r)| (r, i)).collect();
    crate::base::sort::sort(&mut placed);
    placed.into_iter().map(|(_, i)| i).collect()
}

/// Whether a message is a question about the one asking it: it asks
/// (a question mark), speaks of "I", "me" or "my", and not of "you" or "we"
/// (a question about what the assistant said, or about the two of them).
pub(super) fn about_the_asker(text: &str) -> bool {
    if !text.contains('?') {
        return false;
    }
    let mut mine = false;
    // (An apostrophe splits a word: "I'm" is "I", "you're" is "you".)
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        match w.to_lowercase().as_str() {
            "you" | "your" | "yours" | "we" | "our" | "ours" => return false,
            // ("US", the country, is not "us".)
            "us" if w == "us" => return false,
            "me" | "my" | "mine" | "myself" => mine = true,
            "i" if w == "I" => mine = true,
            _ => {}
        }
    }
    mine
}

/// Whether the user said `item`, as far as the memory knows: a message of
/// the user's, a passage holding one, a fact unless all the messages it
/// cites are someone else's (a fact citing none may be the user's).
fn said_by_user(state: &State, item: Item) -> bool {
    let user = |m: u64| {
        state
            .messages
            .get((m as usize).wrapping_sub(1))
            .is_some_and(|m| m.role == crate::types::message::Role::User)
    };
    match item {
        Item::Message(m) => user(m),
        Item::Fact(id) => state
            .fact(id)
            .is_some_and(|f| f.sources.is_empty() || f.sources.iter().any(|&m| user(m))),
        Item::Passage(p) => crate::recall::passage::passage_ids(state, p)
            .is_some_and(|ids| ids.iter().any(|&m| user(m))),
    }
}

/// Preferences recalled for one request, at most.
pub(super) const PREFERENCES: usize = 3;

/// Whether a message asks for something a preference bears on: a
/// suggestion, advice, a plan or a choice.
pub(super) fn is_request(text: &str) -> bool {
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
pub(super) fn preferences(
    state: &State,
    text: &str,
    query: Option<&[f32]>,
    excluded: &dyn Exclusion,
) -> Vec<Item> {
    if !is_request(text) {
        return Vec::new();
    }
    let mut found: Vec<(Item, f64, i64)> = state
        .facts
        .iter()
        .filter(|f| f.kind == crate::types::fact::FactKind::Preference && f.is_live())
        .map(|f| Item::Fact(f.id))
        .filter(|i| !excluded.contains(i))
        .map(|i| (i, closeness(state, i, query), said_at(state, i)))
        .collect();
    crate::base::sort::sort_by(&mut found, |a, b| {
        b.1.total_cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0))
    });
    found.truncate(PREFERENCES);
    found.into_iter().map(|(i, _, _)| i).collect()
}

/// Share of a fact's search terms that a passage must quote for the fact to
/// count as said by it.
pub(super) const QUOTED: f64 = 0.6;

/// Which passages quote which facts (most of a fact's search terms in the
/// passage's text, same episode), each text's terms computed once.
pub(super) struct Quotes<'a> {
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
            bm25::terms(&text).into_iter().into_set()
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
pub(super) fn place_quotes(state: &State, fused: &mut Vec<(Item, f64)>, limit: usize, lift: bool) {
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
pub(super) fn order(state: &State, fused: &mut [(Item, f64)], query: Option<&[f32]>) {
    let passage = |i: &Item| matches!(i, Item::Passage(_));
    crate::base::sort::sort_by(fused, |a, b| {
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
                .into_map();
            crate::base::sort::sort_by(run, |a, b| {
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
pub(super) const NEIGHBOUR_DISCOUNT: f64 = 0.999;
/// The single-list rank the closest graph neighbour is scored at (the next
/// ones below it): a fact no search found is weaker evidence than a
/// search's own first places. At k = 5 a neighbour scored as a first place
/// took a tenth of the LoCoMo bench's top-10 slots and held evidence in 1
/// of 62; from sixth place on they fill what the searches leave.
pub(super) const NEIGHBOUR_FROM: usize = 6;

/// Multi-hop through the graph: live facts about an entity of one of the
/// [`STRONG_HITS`] best-fused facts, not found by the searches, join the
/// candidates ranked by closeness to the query, each scored as if one list
/// ranked it there (reciprocal rank fusion's own scale, so a neighbour never
/// outranks what several searches agree on). Hub entities (about more than
/// a tenth of the facts, and more than ten: the speakers of a chat) are not
/// followed: they say who, not what. Returns the entity each was reached by.
pub(super) fn neighbours(
    state: &State,
    fused: &mut Vec<(Item, f64)>,
    query: Option<&[f32]>,
    excluded: &dyn Exclusion,
) -> BTreeMap<Item, u64> {
    let mut ordered = fused.clone();
    order(state, &mut ordered, query);
    let hub = (state.facts.len() / 10).max(10);
    let known: BTreeSet<Item> = fused.iter().map(|(i, _)| *i).into_set();
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
    let cosines = cosines_of(state, found.keys().copied(), query, true);
    let mut near: Vec<(Item, f64)> = found
        .keys()
        .zip(cosines)
        .map(|(i, c)| (*i, c as f64))
        .collect();
    crate::base::sort::sort_by(&mut near, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    near.truncate(NEIGHBOURS);
    // Just below a search hit at the same rank: a neighbour no search found
    // never ties with (and so never outranks) one a search did find there.
    for (rank, (item, _)) in near.iter().enumerate() {
        fused.push((
            *item,
            fuse::share(NEIGHBOUR_FROM + rank, NEIGHBOUR_DISCOUNT),
        ));
    }
    let kept: BTreeSet<Item> = near.iter().map(|(i, _)| *i).into_set();
    found.retain(|i, _| kept.contains(i));
    found
}
