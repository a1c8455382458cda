//! Search filters: which items an on-demand search may return. The filter
//! is asked about every candidate inside each search (words, meaning, the
//! messages in view, the graph's neighbours, the walk's hops), before
//! anything is ranked: an item it keeps is found however many better items
//! it leaves out, never cut from a ranked list.

use std::collections::BTreeSet;

use crate::base::error::{Error, Result};
use crate::base::sort::CollectOrdered;
use crate::index::bm25;
use crate::recall::Exclusion;
use crate::state::State;
use crate::types::message::{check_json_bounds, Message, MAIN_THREAD};
use crate::types::recall::{Item, ItemKind, SearchFilter};

/// The most metadata keys a filter may name.
pub const MAX_FILTER_KEYS: usize = 16;

/// Checks a filter a caller passes: a valid thread name, `from` not after
/// `to`, at most one of each kind, at most [`MAX_FILTER_KEYS`] metadata
/// keys, each value within a message's metadata bounds.
pub fn check(f: &SearchFilter) -> Result<()> {
    if let Some(t) = &f.thread {
        crate::types::message::check_thread(t)
            .map_err(|e| Error::invalid(format!("search filter thread: {e}")))?;
    }
    if let (Some(from), Some(to)) = (f.from, f.to) {
        if from > to {
            return Err(Error::invalid(format!(
                "search filter from ({from}) is after to ({to})"
            )));
        }
    }
    let kinds: BTreeSet<ItemKind> = f.kinds.iter().copied().into_set();
    if kinds.len() != f.kinds.len() {
        return Err(Error::invalid(
            "search filter kinds name a kind twice: give fact, passage and message at most once each",
        ));
    }
    if f.metadata.len() > MAX_FILTER_KEYS {
        return Err(Error::invalid(format!(
            "search filter metadata has {} keys; at most {MAX_FILTER_KEYS}",
            f.metadata.len()
        )));
    }
    for (k, v) in &f.metadata {
        if k.len() > crate::types::message::MAX_METADATA_BYTES {
            return Err(Error::invalid(
                "a search filter metadata key is longer than a message's metadata",
            ));
        }
        check_json_bounds(v, "a search filter metadata value")?;
    }
    if f.entity == Some(0) {
        return Err(Error::invalid(
            "search filter entity: entity ids start at 1",
        ));
    }
    Ok(())
}

/// The thread of an item, if it exists: a message's own; a passage's or a
/// fact's, its episode's (a fact's, the episode that noted it).
fn thread_of(state: &State, item: Item) -> Option<&str> {
    let episode = match item {
        Item::Message(id) => {
            let m = state.messages.get(id.checked_sub(1)? as usize)?;
            return Some(m.thread.as_str());
        }
        Item::Passage(id) => state.passages.get(id.checked_sub(1)? as usize)?.episode,
        Item::Fact(id) => state.fact(id)?.episode,
    };
    state.episode(episode).map(|e| e.thread.as_str())
}

/// The thread of an item: a message's own; a passage's (its messages'); a
/// fact's, the thread of the episode that noted it. [`MAIN_THREAD`] for an
/// item that does not exist.
pub fn item_thread(state: &State, item: Item) -> &str {
    thread_of(state, item).unwrap_or(MAIN_THREAD)
}

/// What an entity filter keeps, worked out once per search.
struct About {
    entity: u64,
    /// Passages of an episode that noted a fact about it, or holding the
    /// words of one of its names.
    passages: BTreeSet<u64>,
    /// Source messages of the facts about it.
    sources: BTreeSet<u64>,
    /// The search terms of each of its names.
    names: Vec<Vec<String>>,
}

impl About {
    fn new(state: &State, entity: u64) -> About {
        let facts = state
            .facts_about(entity)
            .iter()
            .filter_map(|&f| state.fact(f))
            .filter(|f| !f.erased);
        let mut episodes = BTreeSet::new();
        let mut sources = BTreeSet::new();
        for f in facts {
            episodes.insert(f.episode);
            sources.extend(f.sources.iter().copied());
        }
        let names: Vec<Vec<String>> =
            state
                .entity(entity)
                .filter(|e| !e.erased)
                .map_or(Vec::new(), |e| {
                    e.aliases
                        .iter()
                        .map(|a| bm25::terms(&a.name))
                        .filter(|t| !t.is_empty())
                        .collect()
                });
        let mut passages: BTreeSet<u64> = state
            .passages
            .iter()
            .filter(|p| episodes.contains(&p.episode))
            .map(|p| p.id)
            .into_set();
        // Passages holding every word of a name, from the word index's
        // postings (a term at a time).
        for terms in &names {
            let mut holding: Option<BTreeSet<u64>> = None;
            for t in terms {
                let docs: BTreeSet<u64> =
                    state.passage_index.documents_with(t).into_iter().into_set();
                holding = Some(match holding {
                    None => docs,
                    Some(h) => h.intersection(&docs).copied().into_set(),
                });
            }
            passages.extend(holding.unwrap_or_default());
        }
        About {
            entity,
            passages,
            sources,
            names,
        }
    }

    /// Whether message `m` names the entity or is a source of a fact about
    /// it.
    fn message(&self, m: &Message) -> bool {
        if self.sources.contains(&m.id) {
            return true;
        }
        if m.erased || self.names.is_empty() {
            return false;
        }
        let terms: BTreeSet<String> = bm25::terms(&m.display_text()).into_iter().into_set();
        self.names
            .iter()
            .any(|n| n.iter().all(|t| terms.contains(t)))
    }
}

/// What a search may return: the items it leaves out (those in view, when
/// it does not include them) and its filter.
pub(crate) struct Scope<'a> {
    state: &'a State,
    excluded: BTreeSet<Item>,
    filter: &'a SearchFilter,
    /// Whether the filter has any condition.
    active: bool,
    /// With a metadata condition: the messages whose metadata meets it.
    matching: Option<BTreeSet<u64>>,
    /// With an entity condition: what it keeps.
    about: Option<About>,
}

impl<'a> Scope<'a> {
    /// The scope of a search over `state` leaving out `excluded`, filtered
    /// by `filter`.
    pub(crate) fn new(
        state: &'a State,
        excluded: BTreeSet<Item>,
        filter: &'a SearchFilter,
    ) -> Scope<'a> {
        let matching = (!filter.metadata.is_empty()).then(|| {
            state
                .messages
                .iter()
                .filter(|m| !m.erased && metadata_meets(m, filter))
                .map(|m| m.id)
                .into_set()
        });
        Scope {
            state,
            excluded,
            filter,
            active: !filter.is_empty(),
            matching,
            about: filter.entity.map(|e| About::new(state, e)),
        }
    }

    /// Whether the filter keeps `item`.
    pub(crate) fn keeps(&self, item: Item) -> bool {
        if !self.active {
            return true;
        }
        let f = self.filter;
        if !f.kinds.is_empty() && !f.kinds.contains(&item.kind()) {
            return false;
        }
        let state = self.state;
        if let Some(t) = &f.thread {
            if thread_of(state, item).is_none_or(|thread| thread != t) {
                return false;
            }
        }
        // The item's source messages: a message itself; a passage's; a
        // fact's `sources`, or its episode's messages when its note named
        // none (its time is its own `said_at`).
        let (messages, sources): (&[u64], &[u64]) = match &item {
            Item::Message(id) => (std::slice::from_ref(id), &[]),
            Item::Passage(id) => match crate::recall::passage::passage_ids(state, *id) {
                Some(ids) => (ids, &[]),
                None => return false,
            },
            Item::Fact(id) => match state.fact(*id) {
                Some(fact) => {
                    if !self.said_within(fact.said_at) {
                        return false;
                    }
                    let ids = state
                        .episode(fact.episode)
                        .map_or(&[][..], |e| state.episode_ids(e));
                    (ids, &fact.sources[..])
                }
                None => return false,
            },
        };
        if !matches!(item, Item::Fact(_)) && (f.from.is_some() || f.to.is_some()) {
            let said = messages
                .iter()
                .filter_map(|&m| {
                    m.checked_sub(1)
                        .and_then(|i| state.messages.get(i as usize))
                })
                .any(|m| self.said_within(m.at));
            if !said {
                return false;
            }
        }
        if let Some(matching) = &self.matching {
            let meets = match sources.is_empty() {
                true => messages.iter().any(|m| matching.contains(m)),
                false => sources.iter().any(|s| matching.contains(s)),
            };
            if !meets {
                return false;
            }
        }
        if let Some(about) = &self.about {
            let is_about = match item {
                Item::Fact(id) => state
                    .fact(id)
                    .is_some_and(|g| g.subject == about.entity || g.object == about.entity),
                Item::Passage(id) => about.passages.contains(&id),
                Item::Message(id) => id
                    .checked_sub(1)
                    .and_then(|i| state.messages.get(i as usize))
                    .is_some_and(|m| about.message(m)),
            };
            if !is_about {
                return false;
            }
        }
        true
    }

    /// Whether a message cut from a passage the filter keeps may be
    /// returned on its own: its thread, time and metadata meet the filter.
    pub(crate) fn keeps_piece(&self, m: u64) -> bool {
        if !self.active {
            return true;
        }
        let Some(msg) = m
            .checked_sub(1)
            .and_then(|i| self.state.messages.get(i as usize))
        else {
            return false;
        };
        self.filter.thread.as_ref().is_none_or(|t| msg.thread == *t)
            && self.said_within(msg.at)
            && self.matching.as_ref().is_none_or(|s| s.contains(&m))
    }

    fn said_within(&self, at: i64) -> bool {
        self.filter.from.is_none_or(|f| at >= f) && self.filter.to.is_none_or(|t| at <= t)
    }
}

impl Exclusion for Scope<'_> {
    fn contains(&self, item: &Item) -> bool {
        self.excluded.contains(item) || !self.keeps(*item)
    }
}

/// Whether message `m`'s metadata holds every key of the filter's with an
/// equal value.
fn metadata_meets(m: &Message, filter: &SearchFilter) -> bool {
    let Some(serde_json::Value::Object(have)) = &m.metadata else {
        return false;
    };
    filter
        .metadata
        .iter()
        .all(|(k, v)| have.get(k).is_some_and(|h| h == v))
}
