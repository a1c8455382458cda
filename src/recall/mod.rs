//! Recall: bringing back what the conversation touches.
//!
//! For each new user message: [`split`](crate::base::host::Task::Split) it into the
//! subjects it raises; for the whole message and each part, search facts by
//! words ([`bm25`]) and by meaning ([`vector`]), and passages of out-of-view
//! conversation ([`passage`]) the same way; fuse the lists ([`fuse`]); let the
//! relevance [`walk`] keep the relevant candidates and follow them to other
//! facts about the same entities; place the survivors, grouped and dated
//! ([`block`]), just before the user message. After the reply,
//! `crate::distill` keeps only what mattered.

mod feedback;
pub mod filter;
pub mod passage;
pub mod walk;
pub mod when;

pub(crate) mod block;
mod rank;
pub(crate) mod search;

use std::collections::{BTreeMap, BTreeSet};

use crate::base::host::{Model, Task};
use crate::base::sort::CollectOrdered;
use crate::llm::tasks::SplitAnswer;
use crate::state::State;
use crate::step::Ctx;
use crate::types::recall::{Hit, Item};

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
/// 10th would only take a fact's room (measured, docs/bench-history.md).
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
        crate::base::text::format_time(ctx.now),
        crate::base::text::clip(text, 1_000)
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

/// Tokens each message of [`conversation`] is clipped to, and its last
/// one (the user message recall is for): the subject of the messages
/// before, not all of them (the context is sent with every `relevance`
/// call; a candidate is judged against what the conversation is about).
const CONVERSATION_TOKENS: usize = 40;
const LAST_MESSAGE_TOKENS: usize = 100;

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
                crate::base::text::clip(
                    &m.display_text(),
                    match id == upto {
                        true => LAST_MESSAGE_TOKENS,
                        false => CONVERSATION_TOKENS,
                    }
                )
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
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

/// The four index searches of [`rank::search_lists`] for one query of a
/// search by count of `limit`, nothing left out (see
/// [`crate::Memory::index_lists`]): how many items they found.
#[cfg(any(test, feature = "testing"))]
pub fn index_lists(
    state: &State,
    query: &str,
    vector: &[f32],
    limit: usize,
    min_cosine: f32,
) -> usize {
    let (facts, passages) = (limit.max(SEARCH_FACT_LIST), limit.max(SEARCH_PASSAGE_LIST));
    let all = |_: u64| true;
    let fact = |id: u64| state.fact(id).map(|f| &f.embedding);
    let passage = |id: u64| {
        id.checked_sub(1)
            .and_then(|i| state.passages.get(i as usize))
            .map(|p| &p.embedding)
    };
    state.fact_index.search(query, facts, all).len()
        + state.passage_index.search(query, passages, all).len()
        + state
            .fact_vectors
            .search(vector, facts, min_cosine, all, fact)
            .len()
        + state
            .passage_vectors
            .search(vector, passages, min_cosine, all, passage)
            .len()
}
