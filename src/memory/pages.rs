//! The paged listings: facts, messages and episodes a page at a time, in
//! id order, resumed after a cursor that names the last id a page held.

use crate::base::error::{Error, Result};
use crate::base::host::{Clock, Model, Store};
use crate::memory::handle::Memory;
use crate::memory::outcomes::EpisodeInfo;
use crate::types::fact::Fact;
use crate::types::message::{check_thread, Message};
use crate::types::page::{
    EpisodeFilter, FactFilter, MessageFilter, Page, PageOptions, DEFAULT_PAGE, MAX_PAGE,
};

/// The limit of a page, checked.
fn limit<F>(options: &PageOptions<F>) -> Result<usize> {
    match options.limit.unwrap_or(DEFAULT_PAGE) {
        0 => Err(Error::invalid("page limit 0: ask for 1 or more items")),
        n if n > MAX_PAGE => Err(Error::invalid(format!(
            "page limit {n}; at most {MAX_PAGE} items a page"
        ))),
        n => Ok(n),
    }
}

/// The index to start at after `cursor` (`"{kind}:{id}"`, the last id of
/// the page before), checked against the `len` items listed so far.
fn start<F>(options: &PageOptions<F>, kind: &str, len: usize) -> Result<usize> {
    let Some(cursor) = &options.cursor else {
        return Ok(0);
    };
    let id = cursor
        .strip_prefix(kind)
        .and_then(|rest| rest.strip_prefix(':'))
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|&n| n >= 1)
        .ok_or_else(|| {
            Error::invalid(format!(
                "bad cursor {cursor:?}: a {kind} listing's cursor is the `next` of its \
                 page before (\"{kind}:N\")"
            ))
        })?;
    if id > len as u64 {
        return Err(Error::invalid(format!(
            "bad cursor {cursor:?}: no {kind} {id} (ids run 1..={len})"
        )));
    }
    Ok(id as usize)
}

/// A page of `items[from..]` that `keep` keeps, at most `limit`, with the
/// cursor of the next page when a kept item follows.
fn page<T, U>(
    items: &[T],
    from: usize,
    limit: usize,
    kind: &str,
    id: impl Fn(&T) -> u64,
    keep: impl Fn(&T) -> bool,
    out: impl Fn(&T) -> U,
) -> Page<U> {
    let mut kept = items[from..].iter().filter(|t| keep(t));
    let page: Vec<&T> = kept.by_ref().take(limit).collect();
    let next = match (page.last(), kept.next()) {
        (Some(last), Some(_)) => Some(format!("{kind}:{}", id(last))),
        _ => None,
    };
    Page {
        items: page.into_iter().map(out).collect(),
        next,
    }
}

impl<S: Store, M: Model, C: Clock> Memory<S, M, C> {
    /// A page of facts in id order (retired and erased ones included,
    /// marked, unless the filter says otherwise): at most `limit` (1..=1000,
    /// 100 when not set) after `cursor` (the `next` of the page before).
    /// Facts added between pages come on later pages, so a walk returns
    /// each fact once, in order. A bad limit, cursor or filter is
    /// `InvalidInput`.
    pub async fn facts_page(&mut self, options: PageOptions<FactFilter>) -> Result<Page<Fact>> {
        let limit = limit(&options)?;
        if options.filter.entity == Some(0) {
            return Err(Error::invalid("fact filter entity: entity ids start at 1"));
        }
        self.sync().await?;
        let s = &self.state;
        let from = start(&options, "fact", s.facts.len())?;
        let f = &options.filter;
        Ok(page(
            &s.facts,
            from,
            limit,
            "fact",
            |x| x.id,
            |x| {
                f.live.is_none_or(|l| x.is_live() == l)
                    && (f.kinds.is_empty() || f.kinds.contains(&x.kind))
                    && f.entity.is_none_or(|e| x.subject == e || x.object == e)
                    && f.stated.is_none_or(|h| x.is_stated() == h)
            },
            Fact::clone,
        ))
    }

    /// A page of messages in id order (as [`Memory::messages`] lists them),
    /// optionally of one thread; limits and cursors as
    /// [`Memory::facts_page`].
    pub async fn messages_page(
        &mut self,
        options: PageOptions<MessageFilter>,
    ) -> Result<Page<Message>> {
        let limit = limit(&options)?;
        if let Some(t) = &options.filter.thread {
            check_thread(t)?;
        }
        self.sync().await?;
        let s = &self.state;
        let from = start(&options, "message", s.messages.len())?;
        let thread = options.filter.thread.as_deref();
        Ok(page(
            &s.messages,
            from,
            limit,
            "message",
            |m| m.id,
            |m| thread.is_none_or(|t| m.thread == t),
            Message::clone,
        ))
    }

    /// A page of episodes in id order, with their activation now and
    /// significance (as [`Memory::episodes`] lists them), optionally of one
    /// thread or some states; limits and cursors as [`Memory::facts_page`].
    pub async fn episodes_page(
        &mut self,
        options: PageOptions<EpisodeFilter>,
    ) -> Result<Page<EpisodeInfo>> {
        let limit = limit(&options)?;
        if let Some(t) = &options.filter.thread {
            check_thread(t)?;
        }
        self.sync().await?;
        let now = self.now()?;
        let s = &self.state;
        let from = start(&options, "episode", s.episodes.len())?;
        let f = &options.filter;
        Ok(page(
            &s.episodes,
            from,
            limit,
            "episode",
            |e| e.id,
            |e| {
                f.thread.as_deref().is_none_or(|t| e.thread == t)
                    && (f.states.is_empty() || f.states.contains(&e.state))
            },
            |e| EpisodeInfo {
                episode: e.clone(),
                activation: s.activation(e, now),
                significance: s.significance(e),
            },
        ))
    }
}
