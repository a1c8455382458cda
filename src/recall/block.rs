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

/// Tokens of `text` counted line by line, each line with its newline.
#[cfg(test)]
fn line_tokens<M: Model>(model: &M, text: &str) -> usize {
    text.split_inclusive('\n')
        .map(|l| model.count_tokens(l))
        .sum()
}

/// The size of some lines of a block: their tokens counted line by line,
/// and their bytes and words (from which the default estimate of the whole
/// text follows exactly: its bytes and words add up over lines that end in
/// a newline).
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    tokens: usize,
    bytes: usize,
    words: usize,
}

impl std::ops::Add for Size {
    type Output = Size;
    fn add(self, o: Size) -> Size {
        Size {
            tokens: self.tokens + o.tokens,
            bytes: self.bytes + o.bytes,
            words: self.words + o.words,
        }
    }
}

/// A recall block's size while it is chosen, kept as items join it: each
/// line counted once, the headings the lines share (an entity's, the
/// conversation's) with the first line under them. Counting the whole
/// block again for every candidate made choosing it quadratic (issue 47).
/// When the model counts every line of the candidates as the default
/// estimate does ([`crate::base::text::estimate_tokens`]: a model without
/// a tokenizer of its own), the block's count is that estimate of its whole
/// text, from its lines' bytes and words: exactly the count of the block
/// rendered, so the choice is the one rendering and counting it per
/// candidate made. Otherwise (a host's tokenizer, whose count need not add
/// up over the lines of a text) it is the sum of its lines' counts.
struct Tally<'a, M: Model> {
    state: &'a State,
    model: &'a M,
    renderer: block::Renderer<'a>,
    /// The block so far, its heading included (not its framing).
    size: Size,
    /// Whether every line counted so far was counted as the estimate does.
    estimate: bool,
    /// The entities whose group heading the block shows.
    entities: BTreeSet<u64>,
    /// Whether the block shows the conversation's heading.
    conversation: bool,
    /// The items in the block.
    items: BTreeSet<Item>,
    /// A line being counted (reused).
    line: String,
}

/// What an item adds to a block: its size, and the heading it opens.
struct Addition {
    size: Size,
    entity: Option<u64>,
    conversation: bool,
}

impl<'a, M: Model> Tally<'a, M> {
    fn new(state: &'a State, model: &'a M, passage_tokens: usize, thread: &'a str) -> Self {
        let mut t = Tally {
            state,
            model,
            renderer: block::Renderer::new(state, passage_tokens, thread),
            size: Size::default(),
            estimate: true,
            entities: BTreeSet::new(),
            conversation: false,
            items: BTreeSet::new(),
            line: String::new(),
        };
        t.size = t.count(block::RECALL_HEADING, "");
        t
    }

    /// The size of `prefix`, `text` and a newline, line by line.
    fn count(&mut self, prefix: &str, text: &str) -> Size {
        self.line.clear();
        self.line.push_str(prefix);
        self.line.push_str(text);
        self.line.push('\n');
        let mut size = Size::default();
        for l in self.line.split_inclusive('\n') {
            let tokens = self.model.count_tokens(l);
            self.estimate &= tokens == crate::base::text::estimate_tokens(l);
            size = size
                + Size {
                    tokens,
                    bytes: l.len(),
                    words: l.split_whitespace().count(),
                };
        }
        size
    }

    /// Tokens of a block of `size`, its framing included.
    fn tokens(&self, size: Size) -> usize {
        let counted = match self.estimate {
            true => size.bytes.div_ceil(4).max(size.words),
            false => size.tokens,
        };
        counted + crate::types::message::FRAMING_TOKENS
    }

    /// The conversation's heading, when the block does not show it yet.
    fn conversation_heading(&mut self) -> Size {
        match self.conversation {
            true => Size::default(),
            false => {
                let h = block::CONVERSATION_HEADING.trim_end_matches('\n');
                self.count(h, "")
            }
        }
    }

    /// What `item` would add to the block: the lines [`block::Renderer`]
    /// shows for it (none for an item it leaves out).
    fn addition(&mut self, item: Item) -> Addition {
        let state = self.state;
        let none = Addition {
            size: Size::default(),
            entity: None,
            conversation: false,
        };
        match item {
            Item::Fact(id) => match state.fact(id) {
                Some(f) if f.is_live() => {
                    let line = self.renderer.fact_line(f).to_string();
                    let mut size = self.count("", &line);
                    let entity = (!self.entities.contains(&f.subject)).then_some(f.subject);
                    if entity.is_some() {
                        let heading = format!("\n{}", self.renderer.heading(f.subject));
                        size = size + self.count(&heading, ":");
                    }
                    Addition {
                        size,
                        entity,
                        conversation: false,
                    }
                }
                // A retired fact shows under the live fact that retired it,
                // when the block holds that one.
                Some(f) => match block::successor(state, id) {
                    Some(by) if by != id && self.items.contains(&Item::Fact(by)) => {
                        let line = self.renderer.retired_line(f).to_string();
                        Addition {
                            size: self.count("", &line),
                            ..none
                        }
                    }
                    _ => none,
                },
                None => none,
            },
            Item::Passage(id) => match id
                .checked_sub(1)
                .and_then(|i| state.passages.get(i as usize))
            {
                Some(p) => {
                    let line = self.renderer.passage_line(p).to_string();
                    Addition {
                        size: self.count("- ", &line) + self.conversation_heading(),
                        entity: None,
                        conversation: true,
                    }
                }
                None => none,
            },
            Item::Message(id) => {
                match id
                    .checked_sub(1)
                    .and_then(|i| state.messages.get(i as usize))
                    .filter(|m| m.shown())
                {
                    Some(m) => {
                        let line = self.renderer.message_line(m).to_string();
                        Addition {
                            size: self.count("- ", &line) + self.conversation_heading(),
                            entity: None,
                            conversation: true,
                        }
                    }
                    None => none,
                }
            }
        }
    }

    /// Counts every line `items` could add (so that whether the model
    /// counts as the estimate does is known before any is chosen).
    fn count_all(&mut self, items: &[Recalled]) {
        let state = self.state;
        for r in items {
            match r.item {
                Item::Fact(id) => {
                    if let Some(f) = state.fact(id) {
                        let line = match f.is_live() {
                            true => self.renderer.fact_line(f).to_string(),
                            false => self.renderer.retired_line(f).to_string(),
                        };
                        self.count("", &line);
                        let heading = format!("\n{}", self.renderer.heading(f.subject));
                        self.count(&heading, ":");
                    }
                }
                item => {
                    self.addition(item);
                }
            }
        }
        self.conversation_heading();
    }

    /// Adds `item` when the block still fits `budget` with it.
    fn add_within(&mut self, item: Item, budget: usize) -> bool {
        let a = self.addition(item);
        if self.tokens(self.size + a.size) > budget {
            return false;
        }
        self.size = self.size + a.size;
        self.entities.extend(a.entity);
        self.conversation |= a.conversation;
        self.items.insert(item);
        true
    }
}

/// Keeps `kept` (in order) while the block fits the recall budget. A retired
/// fact stays only when the fact that retired it is kept too.
pub(crate) fn select<M: Model>(ctx: &Ctx<'_, M>, kept: Vec<Recalled>) -> Vec<Recalled> {
    select_within(
        ctx.state,
        ctx.model,
        ctx.config.recall_budget(),
        ctx.config.passage_tokens,
        ctx.thread,
        kept,
    )
}

/// [`select`] within `budget` tokens, counted line by line ([`Tally`]): the
/// live items first, then the retired facts whose successor stays. An item
/// already kept is not kept twice.
fn select_within<M: Model>(
    state: &State,
    model: &M,
    budget: usize,
    passage_tokens: usize,
    thread: &str,
    kept: Vec<Recalled>,
) -> Vec<Recalled> {
    let mut tally = Tally::new(state, model, passage_tokens, thread);
    tally.count_all(&kept);
    let is_retired =
        |i: &Item| matches!(i, Item::Fact(id) if state.fact(*id).is_some_and(|f| !f.is_live()));
    let (retired, live): (Vec<Recalled>, Vec<Recalled>) =
        kept.into_iter().partition(|r| is_retired(&r.item));
    let mut chosen: Vec<Recalled> = Vec::new();
    for r in live.into_iter().chain(retired) {
        if tally.items.contains(&r.item) {
            continue;
        }
        if is_retired(&r.item) {
            let Item::Fact(id) = r.item else { continue };
            let succ = block::successor(state, id).map(Item::Fact);
            if !succ.is_some_and(|s| tally.items.contains(&s)) {
                continue;
            }
        }
        if tally.add_within(r.item, budget) {
            chosen.push(r);
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
                let per_part: Vec<&[Item]> = lists
                    .iter()
                    .filter(|(_, q, _)| *q == first + k)
                    .map(|(_, _, items)| &items[..])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::host::{ModelError, TaskRequest};
    use crate::types::entity::{Alias, Entity, Resolution};
    use crate::types::fact::{Fact, FactKind, Retirement};
    use crate::types::message::{main_thread, Message, Role};
    use crate::types::recall::{Judgment, Passage};

    /// A model that only counts: the default estimate, or a count that
    /// adds up over nothing (`odd`).
    struct Counter {
        odd: bool,
    }

    impl Model for Counter {
        async fn complete(&self, _: &TaskRequest) -> Result<String, ModelError> {
            Err(ModelError::Unavailable("counts only".into()))
        }
        async fn embed(&self, _: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
            Err(ModelError::Unavailable("counts only".into()))
        }
        fn count_tokens(&self, text: &str) -> usize {
            match self.odd {
                false => crate::base::text::estimate_tokens(text),
                true => {
                    crate::base::text::estimate_tokens(text) + text.matches('e').count() % 3 + 1
                }
            }
        }
    }

    /// A small generator (splitmix64).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % n as u64) as usize
        }
    }

    const WORDS: [&str; 8] = [
        "alpha",
        "beta",
        "gamma\nline",
        "delta",
        "e",
        "longerword",
        "zeta",
        "eta",
    ];

    fn text(rng: &mut Rng) -> String {
        let n = 1 + rng.below(12);
        (0..n)
            .map(|_| WORDS[rng.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A memory of two threads (six messages each, their first four an
    /// episode with two passages, some erased), four entities and up to 20
    /// facts over both episodes, some retired (chains too), some erased.
    fn state(rng: &mut Rng) -> State {
        let mut state = State::default();
        let apply = |state: &mut State, e: Event| state.apply(&e).expect("event applies");
        for (t, thread) in [main_thread(), "side".to_string()].into_iter().enumerate() {
            for j in 0..6u64 {
                let id = t as u64 * 6 + j + 1;
                let m = Message {
                    id,
                    role: if j % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    content: text(rng),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    at: 1_000_000 * id as i64,
                    tokens: 10,
                    boundary: None,
                    judged: true,
                    client_id: None,
                    erased: rng.below(6) == 0,
                    thread: thread.clone(),
                    metadata: None,
                    replaces: None,
                    replaced_by: None,
                };
                apply(&mut state, Event::Message(m));
            }
            let first = t as u64 * 6 + 1;
            apply(
                &mut state,
                Event::EpisodeFormed {
                    episode: t as u64 + 1,
                    first,
                    last: first + 3,
                    at: 1,
                    tokens: 40,
                },
            );
            let passages = (0..2u64)
                .map(|k| Passage {
                    id: t as u64 * 2 + k + 1,
                    episode: t as u64 + 1,
                    first: first + 2 * k,
                    last: first + 2 * k + 1,
                    at: 5_000_000,
                    embedding: Default::default(),
                })
                .collect();
            apply(&mut state, Event::PassagesIndexed { passages });
        }
        for id in 1..=4u64 {
            let name = match rng.below(5) {
                0 => String::new(),
                _ => text(rng),
            };
            apply(
                &mut state,
                Event::EntityAdded(Entity {
                    id,
                    name: name.clone(),
                    aliases: vec![Alias {
                        name,
                        normal: format!("entity {id}"),
                        resolution: Resolution::New,
                        at: 1,
                    }],
                    embedding: Default::default(),
                    erased: false,
                }),
            );
        }
        let facts = 1 + rng.below(20) as u64;
        for id in 1..=facts {
            apply(
                &mut state,
                Event::FactAdded(Fact {
                    id,
                    subject: 1 + rng.below(4) as u64,
                    predicate: "p".into(),
                    object: 1 + rng.below(4) as u64,
                    sentence: text(rng),
                    kind: match rng.below(3) {
                        0 => FactKind::Decided,
                        _ => FactKind::Fact,
                    },
                    episode: 1 + rng.below(2) as u64,
                    said_at: 86_400_000 * rng.below(30) as i64,
                    noted_at: 1,
                    embedding: Default::default(),
                    sources: Vec::new(),
                    restated: Vec::new(),
                    retired: None,
                    erased: rng.below(10) == 0,
                }),
            );
        }
        for id in 1..facts {
            if rng.below(2) == 0 {
                let by = id + 1 + rng.below((facts - id) as usize) as u64;
                let retirement = Retirement { by, at: 90_000_000 };
                apply(
                    &mut state,
                    Event::FactRetired {
                        fact: id,
                        retirement,
                    },
                );
            }
        }
        state
    }

    /// Up to 30 candidates in a random order: facts (one that does not
    /// exist), passages, messages of both threads.
    fn candidates(rng: &mut Rng, state: &State) -> Vec<Recalled> {
        let mut items: Vec<Item> = (1..=state.facts.len() as u64 + 1)
            .map(Item::Fact)
            .chain((1..=4).map(Item::Passage))
            .chain((1..=12).map(Item::Message))
            .collect();
        for i in (1..items.len()).rev() {
            items.swap(i, rng.below(i + 1));
        }
        items.truncate(1 + rng.below(30));
        items
            .into_iter()
            .map(|item| Recalled {
                item,
                hits: Vec::new(),
                fused_rank: None,
                hop: 0,
                via: None,
                judgment: Judgment::Ranked,
            })
            .collect()
    }

    /// The straightforward choice: the whole block rendered and counted
    /// again for every candidate, as a whole (`by_lines: false`, as before
    /// issue 47) or line by line.
    fn reference<M: Model>(
        state: &State,
        model: &M,
        budget: usize,
        thread: &str,
        kept: &[Recalled],
        by_lines: bool,
    ) -> Vec<Item> {
        let mut renderer = block::Renderer::new(state, 120, thread);
        let mut tokens = |items: &[Item]| {
            let text = renderer.render(items);
            let counted = match by_lines {
                true => line_tokens(model, &text),
                false => model.count_tokens(&text),
            };
            counted + crate::types::message::FRAMING_TOKENS
        };
        let is_retired =
            |i: &Item| matches!(i, Item::Fact(id) if state.fact(*id).is_some_and(|f| !f.is_live()));
        let mut chosen: Vec<Item> = Vec::new();
        for r in kept.iter().filter(|r| !is_retired(&r.item)) {
            let mut trial = chosen.clone();
            trial.push(r.item);
            if tokens(&trial) <= budget {
                chosen.push(r.item);
            }
        }
        for r in kept.iter().filter(|r| is_retired(&r.item)) {
            let Item::Fact(id) = r.item else { continue };
            let succ = block::successor(state, id).map(Item::Fact);
            if !chosen.iter().any(|c| Some(*c) == succ) {
                continue;
            }
            let mut trial = chosen.clone();
            trial.push(r.item);
            if tokens(&trial) <= budget {
                chosen.push(r.item);
            }
        }
        chosen
    }

    /// With the default estimate the block is the one the whole block
    /// rendered and counted per candidate chose; with a count of its own, the
    /// one its lines' counts summed per candidate chose.
    #[test]
    fn the_block_chosen_line_by_line_is_the_one_rendered_and_counted_per_candidate() {
        let mut rng = Rng(47);
        let (mut cases, mut cut, mut retired_kept, mut elsewhere) = (0, 0, 0, 0);
        for case in 0..1_500 {
            let state = state(&mut rng);
            let kept = candidates(&mut rng, &state);
            let thread = if case % 3 == 0 { "side" } else { "main" };
            let budget = 20 + rng.below(300);
            let model = Counter { odd: case % 2 == 1 };
            let want = reference(&state, &model, budget, thread, &kept, model.odd);
            let got: Vec<Item> = select_within(&state, &model, budget, 120, thread, kept.clone())
                .into_iter()
                .map(|r| r.item)
                .collect();
            assert_eq!(got, want, "case {case}: budget {budget}, thread {thread}");
            cases += 1;
            cut += usize::from(got.len() < kept.len());
            retired_kept += usize::from(got.iter().any(|i| {
                matches!(i, Item::Fact(id) if state.fact(*id).is_some_and(|f| f.retired.is_some()))
            }));
            let text = block::render(&state, &got, 120, thread);
            elsewhere += usize::from(text.contains("[in thread"));
            // The block fits as the view counts it (for a count of its
            // own, one never above the sum of its lines' counts).
            let whole = model.count_tokens(&text) + crate::types::message::FRAMING_TOKENS;
            assert!(
                whole <= budget || got.is_empty(),
                "case {case}: {whole} > {budget}"
            );
        }
        // The cases reach what the rendering shares and hides.
        assert!(cut > cases / 4 && cut < cases, "{cut} of {cases} cut");
        assert!(retired_kept > 30, "{retired_kept} with a retired fact");
        assert!(elsewhere > 50, "{elsewhere} with another thread's item");
    }
}
