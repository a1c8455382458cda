//! Pseudo-relevance feedback (RM3: Lavrenko & Croft 2001, as interpolated
//! by Abdul-Jaleel et al. 2004): the words that the best candidates of a
//! search share, and the question does not say, searched again beside it.
//!
//! A question that asks for several things ("what activities has Melanie
//! done with her family?") names the kind, not the things: the turns that
//! hold them ("I took the kids to the museum") share no word with it, but
//! share words ("kids") with the candidates that match it best. The words
//! of the question and the [`FEEDBACK_TERMS`] rarest words that at least
//! [`FEEDBACK_AGREE`] of the [`FEEDBACK_DOCS`] best fused candidates
//! holding a word of the question hold
//! are searched by words over facts and passages; the two lists join the
//! fusion at [`FEEDBACK_WEIGHT`] of a search's own weight, and take no part
//! in the lists built from the others (the time a question names, the
//! asker's own). Only where the result reaches deep: a recall block (a
//! dozen facts and a few passages), a search by count, or a budget of at
//! least [`FEEDBACK_FROM_TOKENS`] tokens (measured, docs/bench-history.md: within
//! 200 tokens the first few items carry it and the drift of the added
//! words cost LoCoMo .012 and LongMemEval .011). Never for a request that
//! stated preferences bear on: the added words would push the preference
//! out for the things it is about.

use std::collections::{BTreeMap, BTreeSet};

use crate::base::sort::CollectOrdered;
use crate::index::{bm25, fuse};
use crate::recall::{describe, Exclusion, SEARCH_FACT_LIST};
use crate::state::State;
use crate::types::recall::{Item, List};

/// The best fused candidates whose words are read.
pub(super) const FEEDBACK_DOCS: usize = 5;
/// Words added to the question, at most.
pub(super) const FEEDBACK_TERMS: usize = 3;
/// How many of those candidates a word must be in.
pub(super) const FEEDBACK_AGREE: usize = 2;
/// A feedback list's weight in the fusion (a search's own is 1): RM3's
/// usual interpolation of the expanded query with the original.
pub(super) const FEEDBACK_WEIGHT: f64 = 0.5;
/// The smallest token budget a budgeted search expands its question for.
pub(super) const FEEDBACK_FROM_TOKENS: usize = 600;

/// The words added to `query`: those at least [`FEEDBACK_AGREE`] of the
/// [`FEEDBACK_DOCS`] best candidates of `lists` (fused) that a search by
/// words found hold, not in the query nor a number nor in more than half
/// the passages, by their weight among the passages summed over the
/// candidates holding them (the rarest and most shared first), at most
/// [`FEEDBACK_TERMS`].
pub(super) fn expansion(
    state: &State,
    lists: &[(List, usize, Vec<Item>)],
    query: &str,
) -> Vec<String> {
    let ranked: Vec<&[Item]> = lists.iter().map(|(_, _, items)| &items[..]).collect();
    // Only candidates holding a word of the question: a meaning list
    // reaches into whatever is there when little is (a small memory's
    // fillers), and their words are no evidence of anything.
    let by_words: BTreeSet<Item> = lists
        .iter()
        .filter(|(l, _, _)| matches!(l, List::FactWords | List::PassageWords | List::ViewWords))
        .flat_map(|(_, _, items)| items.iter().copied())
        .into_set();
    let asked: BTreeSet<String> = bm25::terms(query).into_iter().into_set();
    // Each candidate's distinct words, all together: a word appears once
    // per candidate holding it.
    let mut held: Vec<String> = Vec::new();
    for (item, _) in fuse::fuse(&ranked, usize::MAX)
        .into_iter()
        .filter(|(i, _)| by_words.contains(i))
        .take(FEEDBACK_DOCS)
    {
        let (text, _) = describe(state, item);
        let terms: BTreeSet<String> = bm25::terms(&text).into_iter().into_set();
        held.extend(
            terms
                .into_iter()
                .filter(|t| !asked.contains(t) && !t.chars().all(|c| c.is_numeric())),
        );
    }
    crate::base::sort::sort(&mut held);
    let n = state.passage_index.len().max(1) as f64;
    let mut shared: Vec<(f64, String)> = Vec::new();
    for run in held.chunk_by(|a, b| a == b) {
        let df = state.passage_index.document_frequency(&run[0]) as f64;
        // (A word in most passages, such as a role's name, says nothing.)
        if run.len() >= FEEDBACK_AGREE && 2.0 * df <= n {
            let weight = run.len() as f64 * (1.0 + n / (df + 0.5)).ln();
            shared.push((weight, run[0].clone()));
        }
    }
    crate::base::sort::sort_by(&mut shared, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    shared
        .into_iter()
        .take(FEEDBACK_TERMS)
        .map(|(_, t)| t)
        .collect()
}

/// The feedback searches of `query` (numbered `q`): facts and passages by
/// the question's words and its [`expansion`], each `depth` (at least
/// [`SEARCH_FACT_LIST`]) deep; none when no word is added, or when stated
/// preferences bear on the request (`preferred`): the added words would
/// push the preference, a single fact that says the rule, out for the
/// things it is about (measured, docs/bench-history.md: a LongMemEval preference
/// question lost its preference from the block).
pub(super) fn feedback_lists(
    state: &State,
    lists: &[(List, usize, Vec<Item>)],
    query: &str,
    q: usize,
    excluded: &dyn Exclusion,
    depth: usize,
    preferred: &[Item],
) -> Vec<(List, usize, Vec<Item>)> {
    if !preferred.is_empty() {
        return Vec::new();
    }
    let added = expansion(state, lists, query);
    if added.is_empty() {
        return Vec::new();
    }
    let mut terms = bm25::terms(query);
    terms.extend(added);
    let depth = depth.max(SEARCH_FACT_LIST);
    let facts = state
        .fact_index
        .search_terms(terms.clone(), depth, |id| {
            !excluded.contains(&Item::Fact(id))
        })
        .into_iter()
        .map(|(id, _)| Item::Fact(id))
        .collect();
    let passages = state
        .passage_index
        .search_terms(terms, depth, |id| !excluded.contains(&Item::Passage(id)))
        .into_iter()
        .map(|(id, _)| Item::Passage(id))
        .collect();
    vec![
        (List::FactWords, q, facts),
        (List::PassageWords, q, passages),
    ]
}

/// Adds the feedback lists to `fused` at [`FEEDBACK_WEIGHT`]: an item they
/// share gains, one only they found joins.
pub(super) fn add_feedback(fused: &mut Vec<(Item, f64)>, feedback: &[(List, usize, Vec<Item>)]) {
    let mut gained: BTreeMap<Item, f64> = BTreeMap::new();
    for (_, _, items) in feedback {
        for (r, item) in items.iter().enumerate() {
            *gained.entry(*item).or_default() += fuse::share(r + 1, FEEDBACK_WEIGHT);
        }
    }
    for (item, score) in fused.iter_mut() {
        if let Some(g) = gained.remove(item) {
            *score += g;
        }
    }
    fused.extend(gained);
}
