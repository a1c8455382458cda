//! Threads: the chats of one memory. Messages have memory-wide ids in order
//! of arrival, and threads interleave; each thread's line (derived) lists
//! its messages and episodes, so a thread's open stretch, its episodes'
//! messages and its view are read from it. With one thread (every memory
//! written before threads) the line is every message, and each lookup
//! borrows the messages as before.

use std::borrow::Cow;

use crate::state::line::Line;
use crate::state::State;
use crate::types::episode::Episode;
use crate::types::message::{Message, Role};

/// No thread's line: a thread with no message yet.
static EMPTY: std::sync::OnceLock<Line> = std::sync::OnceLock::new();

impl State {
    /// The line of `thread` (empty for a thread with no message).
    pub fn line(&self, thread: &str) -> &Line {
        self.threads
            .get(thread)
            .unwrap_or_else(|| EMPTY.get_or_init(Line::default))
    }

    /// The thread names, in order.
    pub fn thread_names(&self) -> impl Iterator<Item = &str> {
        self.threads.keys().map(String::as_str)
    }

    /// The messages of `ids` (ids of one thread, in order): borrowed when
    /// they follow each other in the memory (always, with one thread).
    pub fn messages_of(&self, ids: &[u64]) -> Cow<'_, [Message]> {
        match (ids.first(), ids.last()) {
            (Some(&a), Some(&b)) if (b - a) as usize + 1 == ids.len() => {
                Cow::Borrowed(&self.messages[(a - 1) as usize..b as usize])
            }
            (Some(_), Some(_)) => {
                Cow::Owned(ids.iter().map(|&id| self.message(id).clone()).collect())
            }
            _ => Cow::Borrowed(&[]),
        }
    }

    /// Ids of the messages `first..=last` of `first`'s thread (a passage's
    /// or an episode's messages; empty when `first` is no message).
    pub fn thread_ids(&self, first: u64, last: u64) -> &[u64] {
        match first
            .checked_sub(1)
            .and_then(|i| self.messages.get(i as usize))
        {
            Some(m) => self.line(&m.thread).between(first, last),
            None => &[],
        }
    }

    /// The latest user message of `thread`.
    pub fn last_user(&self, thread: &str) -> Option<u64> {
        self.line(thread)
            .ids
            .iter()
            .rev()
            .copied()
            .find(|&id| self.message(id).role == Role::User)
    }

    /// Ids of episode `e`'s messages.
    pub fn episode_ids(&self, e: &Episode) -> &[u64] {
        self.line(&e.thread).between(e.first, e.last)
    }

    /// Episodes of `thread` whose messages are in its view (live and
    /// leaving), in order.
    pub fn in_view_of<'a>(&'a self, thread: &'a str) -> impl Iterator<Item = &'a Episode> + 'a {
        self.in_view
            .iter()
            .filter_map(|&id| self.episode(id))
            .filter(move |e| e.thread == thread)
    }

    /// Folds message `m` (just pushed) into its thread's line.
    pub(super) fn line_push(&mut self, m: &Message) {
        let line = self.threads.entry(m.thread.clone()).or_default();
        line.ids.push(m.id);
        if m.role == Role::User {
            line.last_user_at = Some(m.at);
        }
    }

    /// Folds episode `e` (just pushed) into its thread's line: its
    /// messages leave the open stretch.
    pub(super) fn line_episode(&mut self, episode: u64, thread: &str, last: u64) {
        let line = self.threads.entry(thread.to_string()).or_default();
        line.episodes.push(episode);
        line.open = line.ids.partition_point(|&id| id <= last);
    }

    /// Rebuilds every line from the messages and episodes.
    pub(super) fn rebuild_lines(&mut self) {
        self.threads.clear();
        for i in 0..self.messages.len() {
            let line = self
                .threads
                .entry(self.messages[i].thread.clone())
                .or_default();
            line.ids.push(self.messages[i].id);
            if self.messages[i].role == Role::User {
                line.last_user_at = Some(self.messages[i].at);
            }
        }
        for e in &self.episodes {
            let line = self.threads.entry(e.thread.clone()).or_default();
            line.episodes.push(e.id);
            line.open = line.ids.partition_point(|&id| id <= e.last);
        }
    }
}
