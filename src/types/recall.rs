//! What recall finds and shows: items, their hits and judgments, the
//! blocks placed in the view, searches' options and results.

use serde::{Deserialize, Serialize};

/// A recallable thing: a fact, a passage, or (found by an on-demand
/// `search` only) a message in view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "RecallItem"))]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum Item {
    /// A fact of the knowledge graph.
    Fact(u64),
    /// A passage of out-of-view conversation.
    Passage(u64),
    /// A message in view now: an on-demand `search` finds what was said
    /// recently too, and a recall block holds another thread's (what the
    /// model of this thread does not see); never one of its own thread's.
    Message(u64),
}

/// The searches recall runs for each query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "SearchList"))]
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
    /// Messages in view by words (BM25 over them; on-demand search, and a
    /// recall block over other threads' views).
    ViewWords,
    /// Messages in view by meaning (on-demand search only: they are
    /// embedded for the search, having no stored embedding until their
    /// episode leaves the view).
    ViewMeaning,
}

/// One search that found an item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Hit {
    /// Which search.
    pub list: List,
    /// Which query: 0 for the whole message, n for part n; one past the
    /// last part for the message expanded by its best hits' shared words
    /// (a search that reaches deep).
    pub query: usize,
    /// Rank in that search (1 = best).
    pub rank: usize,
}

/// Why an item survived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "RecallJudgment"))]
#[serde(rename_all = "snake_case")]
pub enum Judgment {
    /// The relevance walk judged it relevant.
    Relevant,
    /// The walk failed; it was kept for its place in the fused ranking.
    Fallback,
    /// Kept for its place in the ranking without a relevance judgment: the
    /// walk is off, or only a part from the model's split found it (distill
    /// rereads it after the reply).
    Ranked,
}

/// One item of a recall block and how it got there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
    /// When it gave way to keep recall blocks within their share of the view
    /// (it is no longer shown; its items stay recallable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gave_way: Option<i64>,
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
    /// Also return facts in the view now, and messages in view found by
    /// their words ([`List::ViewWords`]).
    pub include_in_view: bool,
    /// Return only what fits this many tokens (as the host's model counts
    /// the items' texts, plus `HIT_FRAMING` each): the best items in
    /// order, each one that fits, at
    /// most `limit`; facts rank before the passages quoting them (a tenth of
    /// the tokens), a fact also by the found passage holding its source
    /// message, and a second fact from the same message after the rest; a
    /// passage that costs per message more than twice its
    /// cut comes as its messages holding the query's words (items of kind
    /// `message`, each `[date] role: text`, a long one cut to its
    /// sentences); a fact that an item already returned says is left out
    /// (and a cut message that says a fact already returned). Without it, a passage that quotes a better-ranked fact
    /// takes its place (the same slot, with the context) and the fact goes
    /// below the items that say something new.
    pub budget_tokens: Option<usize>,
    /// What the search may return ([`SearchFilter`]; by default anything).
    /// Applied to every search's candidates before they are ranked, so an
    /// item the filter keeps is found however many better items it leaves
    /// out.
    #[serde(skip_serializing_if = "SearchFilter::is_empty")]
    pub filter: SearchFilter,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            limit: 10,
            walk: false,
            include_in_view: true,
            budget_tokens: None,
            filter: SearchFilter::default(),
        }
    }
}

/// The kind of a recallable [`Item`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A fact.
    Fact,
    /// A passage.
    Passage,
    /// A message in view.
    Message,
}

impl Item {
    /// Its kind.
    pub fn kind(self) -> ItemKind {
        match self {
            Item::Fact(_) => ItemKind::Fact,
            Item::Passage(_) => ItemKind::Passage,
            Item::Message(_) => ItemKind::Message,
        }
    }
}

/// Which items an on-demand search may return: every condition given must
/// hold (none given: every item). Each is a property of the item's source
/// messages: a message's own; a passage's messages; a fact's source
/// messages (`sources`, or when its note named none, its episode's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchFilter {
    /// Only items of this thread (none: every thread). A fact's thread is
    /// the thread of the episode that noted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Only items said at or after this time (ms since the Unix epoch): a
    /// fact's `said_at`, a message's time, a passage with a message then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<i64>,
    /// Only items said at or before this time (ms, inclusive), as `from`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<i64>,
    /// Only items of these kinds (empty: every kind).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<ItemKind>,
    /// Only items about this entity (its id): a fact naming it as subject
    /// or object; a passage of an episode that noted such a fact, or whose
    /// text holds the words of one of its names; a message holding the
    /// words of one of its names, or the source of such a fact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity: Option<u64>,
    /// Only items with a source message whose metadata holds each of these
    /// top-level keys with an equal JSON value (empty: no condition).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl SearchFilter {
    /// Whether it keeps every item.
    pub fn is_empty(&self) -> bool {
        *self == SearchFilter::default()
    }
}

/// One result of an on-demand search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
    /// The messages it came from (ids): a fact's, when its note named them;
    /// a passage's messages; a message itself. Their metadata and threads
    /// are the item's provenance ([`crate::memory::handle::Memory::messages`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<u64>,
}

/// A run of whole messages of one episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Passage {
    /// Passage id (1, 2, ...).
    pub id: u64,
    /// Its episode.
    pub episode: u64,
    /// First message id.
    pub first: u64,
    /// Last message id.
    pub last: u64,
    /// Time of its last message.
    pub at: i64,
    /// Embedding of its text (empty when the embedder failed: the passage
    /// is then found by words only).
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub embedding: crate::types::embedding::Embedding,
}
