//! Paged listings: a page of facts, messages or episodes in id order, and
//! the cursor that resumes after it.
//!
//! A cursor names the last id a page held (`"fact:42"`), so a walk from
//! page to page returns each item once, in id order, while items are added
//! between pages (new ids are larger: they come on later pages).

use serde::{Deserialize, Serialize};

use crate::types::episode::EpisodeState;
use crate::types::fact::FactKind;

/// The items of a page when the caller names no limit.
pub const DEFAULT_PAGE: usize = 100;

/// The most items one page holds: a caller's number never reaches an
/// allocation unchecked.
pub const MAX_PAGE: usize = 1_000;

/// What page to list: at most `limit` items after `cursor` that `filter`
/// keeps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PageOptions<F> {
    /// The most items (1..=[`MAX_PAGE`]; [`DEFAULT_PAGE`] when not set).
    pub limit: Option<usize>,
    /// The `next` of the page before; none for the first page.
    pub cursor: Option<String>,
    /// Which items to keep.
    pub filter: F,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Page<T> {
    /// The items, in id order.
    pub items: Vec<T>,
    /// The cursor of the next page, or none when no item the filter keeps
    /// comes after this page (now: a later item added makes a new page).
    pub next: Option<String>,
}

/// Which facts a page keeps (every field that is set must hold).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FactFilter {
    /// Only facts that hold (`true`) or only retired and erased ones
    /// (`false`).
    pub live: Option<bool>,
    /// Only these kinds (empty: every kind).
    pub kinds: Vec<FactKind>,
    /// Only facts whose subject or object is this entity.
    pub entity: Option<u64>,
    /// Only facts the host stated (`true`) or only noted ones (`false`).
    pub stated: Option<bool>,
}

/// Which messages a page keeps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MessageFilter {
    /// Only this thread's messages.
    pub thread: Option<String>,
}

/// Which episodes a page keeps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EpisodeFilter {
    /// Only this thread's episodes.
    pub thread: Option<String>,
    /// Only these states (empty: every state).
    pub states: Vec<EpisodeState>,
}
