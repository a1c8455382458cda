//! The on-demand search: the pipeline without changing the view, over the
//! messages in view too, and, with a token budget, packed per token (cut
//! passages, a fact and its source never both, one line of history).

use std::collections::BTreeSet;

use crate::base::host::{Model, Task};
use crate::base::sort::CollectOrdered;
use crate::index::bm25;
use crate::recall::passage::passage_ids;
use crate::recall::rank::{
    about_the_asker, closeness, fuse_lists, preferences, search_lists, window_lists, Asked,
    Ranking, QUOTED,
};
use crate::recall::{
    describe, embed_queries, feedback, filter, in_view, rule_parts, split, walk, when,
    worth_splitting, Exclusion, HIT_FRAMING,
};
use crate::state::State;
use crate::step::Ctx;
use crate::types::recall::{Item, List, SearchHit, SearchOptions};

/// Depth of the search over the messages in view.
pub(super) const VIEW_LIST: usize = 10;

/// The messages in view now in `threads`, not erased and not system
/// messages: each thread's episodes in view, then its open stretch.
fn in_view_messages<'a>(state: &'a State, threads: &'a [&str]) -> impl Iterator<Item = u64> + 'a {
    threads
        .iter()
        .flat_map(move |&thread| {
            state
                .in_view_of(thread)
                .flat_map(|e| state.episode_ids(e))
                .chain(state.line(thread).open_ids())
        })
        .copied()
        .filter(|&id| {
            let m = state.message(id);
            m.shown() && m.role != crate::types::message::Role::System
        })
}

/// The messages in view now in `threads` (those of each one's episodes in
/// view, then its open stretch), searched by words for each query, `depth` deep (at least
/// [`VIEW_LIST`]): what was said recently is not in any passage yet, and an
/// on-demand search should find it too. Built per search over the view
/// alone (a few hundred messages at most: the ceiling bounds them). A query
/// searches only by its words found in fewer than half of these messages
/// (Robertson and Spärck Jones's idf is positive only there): in a chat the
/// speakers' names are in most messages, and a list of a few dozen
/// messages ranked by a name alone would put noise at its top.
pub(super) fn view_lists(
    state: &State,
    queries: &[String],
    depth: usize,
    threads: &[&str],
    excluded: &dyn Exclusion,
) -> Vec<(List, usize, Vec<Item>)> {
    let mut index = bm25::Bm25::default();
    let mut docs = 0usize;
    for id in in_view_messages(state, threads) {
        docs += 1;
        index.insert(id, &state.message(id).display_text());
    }
    queries
        .iter()
        .enumerate()
        .map(|(q, query)| {
            let rare: Vec<String> = bm25::terms(query)
                .into_iter()
                .filter(|w| 2 * index.document_frequency(w) < docs)
                .collect();
            let hits = index.search_terms(rare, depth.max(VIEW_LIST), |id| {
                !excluded.contains(&Item::Message(id))
            });
            let items = hits.into_iter().map(|(id, _)| Item::Message(id)).collect();
            (List::ViewWords, q, items)
        })
        .collect()
}

/// The messages in view now in `threads` (as [`view_lists`]), ranked by
/// meaning among the passages: each query's passage meaning list in
/// `lists` becomes the passages and these messages together, by cosine,
/// as deep as it was (both are what was said, embedded by the same
/// model, so their cosines compare; a list of the few dozen messages in
/// view on its own would rank the least unlike of them first however far
/// they are). The messages are embedded for the search, in one call (they
/// have no stored embedding: a message is embedded with its passage when
/// its episode leaves the view), at most a ceiling's worth of tokens of
/// them (the search's own thread first, then the other threads' latest).
/// Without vectors, or when the embedder fails (reported), nothing
/// changes: the words still search them.
pub(super) async fn rank_view_by_meaning<M: Model>(
    ctx: &Ctx<'_, M>,
    lists: &mut [(List, usize, Vec<Item>)],
    vectors: Option<&[Vec<f32>]>,
    threads: &[&str],
    excluded: &dyn Exclusion,
) {
    let Some(vectors) = vectors else {
        return;
    };
    let state: &State = ctx.state;
    // At most a ceiling's worth of tokens embedded, whatever the number of
    // threads: the search's own thread first, then the others' latest
    // messages first (what does not fit is still searched by words).
    let (own, others): (Vec<&str>, Vec<&str>) = threads.iter().partition(|t| **t == ctx.thread);
    let mut rest: Vec<u64> = in_view_messages(state, &others).collect();
    crate::base::sort::sort_by(&mut rest, |a, b| {
        state.message(*b).at.cmp(&state.message(*a).at)
    });
    let mut room = ctx.config.ceiling_tokens;
    let mut ids: Vec<u64> = Vec::new();
    for id in in_view_messages(state, &own).chain(rest) {
        let tokens = state.message(id).tokens.min(EMBED_TOKENS);
        if tokens > room {
            break;
        }
        if !excluded.contains(&Item::Message(id)) {
            room -= tokens;
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return;
    }
    let texts: Vec<String> = ids
        .iter()
        .map(|&id| crate::base::text::clip(&state.message(id).display_text(), EMBED_TOKENS))
        .collect();
    let embedded = match ctx.embed(&texts, None).await {
        Ok(v) => v,
        Err(e) => {
            ctx.degrade(
                Task::Split,
                &e,
                "the embedder failed on the messages in view: searched by words only",
            );
            return;
        }
    };
    for (list, q, items) in lists.iter_mut() {
        let Some(query) = vectors.get(*q).filter(|_| *list == List::PassageMeaning) else {
            continue;
        };
        let depth = items.len().max(VIEW_LIST);
        let mut scored: Vec<(f32, Item)> = items
            .iter()
            .map(|&i| (closeness(state, i, Some(query)) as f32, i))
            .collect();
        scored.extend(
            ids.iter()
                .zip(&embedded)
                .filter(|(_, v)| v.len() == query.len())
                .map(|(&id, v)| (crate::base::text::cosine(query, v), Item::Message(id)))
                .filter(|(c, _)| *c >= ctx.config.min_cosine),
        );
        crate::base::sort::sort_by(&mut scored, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(depth);
        *items = scored.into_iter().map(|(_, i)| i).collect();
    }
}

/// Tokens of a message in view embedded for a search (a passage's limit).
const EMBED_TOKENS: usize = 512;

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
        in_view(ctx.state, false, ctx.thread)
    };
    // What the search may return: every list asks it of its candidates.
    let excluded = filter::Scope::new(ctx.state, excluded, &options.filter);
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
    // The model's reading of the time first, then the rules'.
    let window = model_window.or_else(|| when::window(query, ctx.now));
    let mut lists = search_lists(
        ctx,
        &queries,
        0,
        vectors.as_deref(),
        &excluded,
        options.limit,
    );
    // The messages in view of the filter's thread, or of every thread
    // (each thread's recent messages are in no passage yet).
    let threads: Vec<&str> = match &options.filter.thread {
        Some(_) => vec![ctx.thread],
        None => ctx.state.thread_names().collect(),
    };
    if options.include_in_view {
        rank_view_by_meaning(ctx, &mut lists, vectors.as_deref(), &threads, &excluded).await;
    }
    lists.extend(window_lists(
        ctx,
        &queries,
        vectors.as_deref(),
        &excluded,
        window,
        options.limit,
    ));
    if options.include_in_view {
        lists.extend(view_lists(
            ctx.state,
            &queries,
            options.limit,
            &threads,
            &excluded,
        ));
    }
    let preferred = preferences(
        ctx.state,
        query,
        vectors.as_ref().map(|v| v[0].as_slice()),
        &excluded,
    );
    // The question expanded by its best candidates' shared words, for a
    // search that reaches deep (a budgeted search past the first few).
    let feedback = match options.budget_tokens {
        Some(b) if b < feedback::FEEDBACK_FROM_TOKENS => Vec::new(),
        _ => feedback::feedback_lists(
            ctx.state,
            &lists,
            query,
            queries.len(),
            &excluded,
            options.limit,
            &preferred,
        ),
    };
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
        Asked {
            window,
            preferred,
            by_asker: about_the_asker(query),
            feedback,
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
        // Where it came from: a fact's source messages, a passage's
        // messages, a message itself.
        let sources = match item {
            Item::Fact(_) => fact.map(|f| f.sources.clone()).unwrap_or_default(),
            Item::Passage(p) => passage_ids(ctx.state, p).map_or(Vec::new(), <[u64]>::to_vec),
            Item::Message(m) => vec![m],
        };
        SearchHit {
            sources,
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
    let query_terms: BTreeSet<String> = bm25::terms(query).into_iter().into_set();
    for (item, hop) in distinct_sources_first(ctx.state, picked, &c.fused) {
        if out.len() >= options.limit {
            break;
        }
        // The answer a found question carries, ranked with it.
        let answer_piece = |a: u64| {
            let mut h = hit(Item::Message(a), hop);
            h.text = piece(ctx.state, a, None);
            h.hits = c.hits.get(&item).cloned().unwrap_or_default();
            h.score = score(&item);
            h
        };
        let cost = |h: &SearchHit| ctx.model.count_tokens(&h.text) + HIT_FRAMING;
        // Each piece, and whether it was cut from a passage.
        let pieces: Vec<(SearchHit, bool)> = match item {
            Item::Passage(id) => {
                let mut left_out: BTreeSet<u64> = shown.union(&sourced).copied().into_set();
                // A piece is a message on its own: the filter asks it too.
                left_out.extend(
                    passage_ids(ctx.state, id)
                        .unwrap_or_default()
                        .iter()
                        .copied()
                        .filter(|&m| !excluded.keeps_piece(m)),
                );
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
                let fresh = passage_ids(ctx.state, id)
                    .is_some_and(|ids| ids.iter().all(|m| !sourced.contains(m)));
                match !cut.is_empty() && w <= room && cheap && spare && fresh {
                    // A passage that ends with a question carries its
                    // answer (the next passage's first message).
                    true => {
                        let end = ctx
                            .state
                            .passages
                            .get(id as usize - 1)
                            .and_then(|p| ctx.state.episode(p.episode))
                            .map_or(0, |e| e.last);
                        let asks = passage_ids(ctx.state, id).and_then(|ids| ids.last().copied());
                        let answer = asks
                            .and_then(|m| answer_to(ctx.state, m, end))
                            .filter(|a| !shown.contains(a) && !sourced.contains(a))
                            .filter(|&a| excluded.keeps_piece(a));
                        let mut pieces = vec![(whole, false)];
                        pieces.extend(answer.map(|a| (answer_piece(a), true)));
                        pieces
                    }
                    false => cut.into_iter().map(|h| (h, true)).collect(),
                }
            }
            Item::Message(m) if shown.contains(&m) => Vec::new(),
            // A message in view that asks a question carries its answer.
            Item::Message(m) => {
                // (A piece on its own: the filter asks it too.)
                let answer = answer_to(ctx.state, m, u64::MAX)
                    .filter(|a| !shown.contains(a) && !sourced.contains(a))
                    .filter(|&a| excluded.keeps_piece(a));
                let mut pieces = vec![(hit(item, hop), false)];
                pieces.extend(answer.map(|a| (answer_piece(a), true)));
                pieces
            }
            _ => vec![(hit(item, hop), false)],
        };
        for (h, cut) in pieces {
            if out.len() >= options.limit {
                break;
            }
            // A fact whose words a piece already shown says (or the
            // reverse) would spend the budget twice on them.
            let terms: BTreeSet<String> = bm25::terms(&h.text).into_iter().into_set();
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
                Item::Passage(p) => covered.extend(passage_ids(ctx.state, p).unwrap_or_default()),
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
pub(super) fn distinct_sources_first(
    state: &State,
    picked: Vec<(Item, u32)>,
    fused: &[(Item, f64)],
) -> Vec<(Item, u32)> {
    let ranked: BTreeSet<Item> = fused.iter().map(|(i, _)| *i).into_set();
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
pub(super) fn add_history<M: Model>(ctx: &Ctx<'_, M>, out: &mut [SearchHit], mut room: usize) {
    let state: &State = ctx.state;
    let returned: BTreeSet<Item> = out.iter().map(|h| h.item).into_set();
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
            crate::base::text::format_date(f.said_at),
            crate::base::text::inline(&old.sentence)
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
pub(super) fn quoted_in(fact: &BTreeSet<String>, text: &BTreeSet<String>) -> bool {
    !fact.is_empty() && fact.intersection(text).count() as f64 >= QUOTED * fact.len() as f64
}

/// A budgeted search keeps a passage whole when it fits and costs per
/// message at most this many times what its cut ([`cut_passage`]) costs
/// per message; otherwise it carries the cut. A run of short turns
/// (LoCoMo) reads better whole: the answer is often the reply beside the
/// turn that holds the question's words; a long answer (LongMemEval's
/// assistant turns) reads better cut (docs/bench-history.md).
pub(super) const WHOLE_PASSAGE_COST: usize = 2;

/// Messages of passage `id` shown (not erased, not replaced).
pub(super) fn passage_messages(state: &State, id: u64) -> usize {
    passage_ids(state, id).map_or(0, |ids| {
        ids.iter()
            .filter(|&&m| {
                state
                    .messages
                    .get(m as usize - 1)
                    .is_some_and(|m| m.shown())
            })
            .count()
    })
}

/// Messages of a passage kept when a budgeted search cuts it: at most this
/// many, the ones holding the query's rarest words.
pub(super) const CUT_MESSAGES: usize = 2;
/// A message longer than this many tokens is cut to its sentences that
/// hold query words, at most this many (a longer best sentence clipped to
/// it): within a budget the sentence that holds the answer is what the
/// model pays for, and a chat turn's other sentences are its greetings and
/// questions back (measured, docs/bench-history.md: 60 -> 25 tokens moved LoCoMo
/// within 1,000 tokens from .872 to .889).
pub(super) const CUT_SENTENCES_ABOVE: usize = 25;
/// The most tokens of an answer a found question carries: a turn of
/// conversation; a long answer, such as an assistant's, rarely holds what
/// was asked later.
pub(super) const TURN_TOKENS: usize = 60;

/// A passage cut to what a tight budget should carry: its messages that
/// hold the query's words (weighted by how rare each word is among the
/// passages), best first, at most [`CUT_MESSAGES`], each as
/// `[date] role: text` with a long message cut to its sentences holding
/// query words. A passage no query word touches (found by meaning) keeps
/// its messages in order. Messages in `shown` are left out.
pub(super) fn cut_passage(
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
    let mut scored: Vec<(f64, u64)> = state
        .thread_ids(p.first, p.last)
        .iter()
        .copied()
        .filter(|m| !shown.contains(m))
        .filter_map(|m| state.messages.get(m as usize - 1))
        .filter(|m| m.shown())
        .map(|m| {
            let terms: BTreeSet<String> = bm25::terms(&m.display_text()).into_iter().into_set();
            (terms.intersection(query).map(weight).sum::<f64>(), m.id)
        })
        .collect();
    let best = scored.iter().map(|s| s.0).fold(0.0, f64::max);
    if best > 0.0 {
        scored.retain(|s| s.0 > 0.0 && 2.0 * s.0 >= best);
        crate::base::sort::sort_by(&mut scored, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
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
            if !r.erased && r.role != m.role && r.role != crate::types::message::Role::System {
                ids.push(next);
            }
        }
    }
    crate::base::sort::sort(&mut ids);
    ids.into_iter()
        .map(|id| (id, piece(state, id, Some(query))))
        .collect()
}

/// Message `id` as a piece of a budgeted search: `[date] role: text`; cut
/// for `query` (a passage's message), a message longer than
/// [`CUT_SENTENCES_ABOVE`] tokens is cut to its sentences holding query
/// words ([`relevant_sentences`]). The answer a found question carries
/// ([`answer_to`], at most [`TURN_TOKENS`]) is whole (`None`): it shares no
/// word with the query (that is why it is carried), so its cut would be its
/// first sentence, often a thanks (measured: .005 within 200 tokens).
pub(super) fn piece(state: &State, id: u64, query: Option<&BTreeSet<String>>) -> String {
    let m = state.message(id);
    let text = crate::base::text::inline(&m.display_text());
    let text = match query {
        Some(q) if crate::base::text::estimate_tokens(&text) > CUT_SENTENCES_ABOVE => {
            relevant_sentences(&text, q)
        }
        _ => text,
    };
    let date = crate::base::text::format_date(m.at);
    format!("[{date}] {}: {text}", m.role.as_str())
}

/// The answer a found question carries in a budgeted search: when message
/// `m` ends with a question mark, the next message of its thread (at most
/// `last`), said by the other side, when it is a turn of conversation (at
/// most [`TURN_TOKENS`] tokens: a long answer, cut to sentences
/// that share no word with the query, rarely holds what was asked). The
/// answer to "what gave you the idea?" shares no word with a later
/// question about it, and a passage or a message in view ends where the
/// question does.
pub(super) fn answer_to(state: &State, m: u64, last: u64) -> Option<u64> {
    let q = state.message(m);
    if !q.display_text().trim_end().ends_with('?') {
        return None;
    }
    let next = *state.thread_ids(m, last).get(1)?;
    let r = state.message(next);
    let reply = !r.erased && r.role != q.role && r.role != crate::types::message::Role::System;
    let short = crate::base::text::estimate_tokens(&r.display_text()) <= TURN_TOKENS;
    (reply && short).then_some(next)
}

/// The sentences of `text` holding query words, joined by " … " (the first
/// sentence when none does), at most [`CUT_SENTENCES_ABOVE`] tokens.
pub(super) fn relevant_sentences(text: &str, query: &BTreeSet<String>) -> String {
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
            let terms: BTreeSet<String> = bm25::terms(s).into_iter().into_set();
            (terms.intersection(query).count(), i)
        })
        .filter(|(n, _)| *n > 0)
        .collect();
    crate::base::sort::sort_by(&mut scored, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut kept: Vec<usize> = Vec::new();
    let mut tokens = 0;
    for (_, i) in scored {
        let t = crate::base::text::estimate_tokens(sentences[i]);
        if tokens + t > CUT_SENTENCES_ABOVE && !kept.is_empty() {
            break;
        }
        tokens += t;
        kept.push(i);
    }
    if kept.is_empty() {
        kept.push(0);
    }
    crate::base::sort::sort(&mut kept);
    let out = kept
        .iter()
        .map(|&i| sentences[i].trim())
        .collect::<Vec<_>>()
        .join(" … ");
    crate::base::text::clip(&out, CUT_SENTENCES_ABOVE)
}
