//! Salvage: what of a damaged log can be read ([`read_salvage`], piece by
//! piece), and what survives of it as a state every event of which applies
//! (see `Memory::open_salvage`).
//!
//! A log is a fold: each entry's events apply to the state the entries
//! before it left, and ids are positions (message 7 is the seventh message).
//! When entries are lost (a segment or tail value that cannot be read), the
//! entries after them are still applied event by event. An event whose id
//! is past the next free one (the items between were made by the lost
//! entries) first gets placeholders for the missing ids: erased tombstones,
//! as erasure leaves them (messages, facts, entities), episodes forgotten at
//! once, traces that say no, finished fades, recall blocks that gave way,
//! passages over a tombstone. Later items thus keep their ids and what
//! refers to them still applies. An event that still does not apply (it
//! refers to something the placeholders cannot stand for, or it repeats
//! what it should not) is dropped and counted. The events kept, placeholders
//! included, form the salvaged log, which replays to the same state, so its
//! export imports.
//!
//! [`State::apply`] may change the state before it finds that an event does
//! not fit (it is written for logs that fit, where a failure drops the whole
//! state). The two ways it can are guarded here, only on this path: a
//! message repeating a client id is checked first, and a batch of passages
//! is applied one passage at a time; the cached view sizes, updated before
//! the event is checked, are dropped (recomputed) after a failure.

use crate::base::codec;
use crate::base::error::{Error, Result};
use crate::base::host::Store;
use crate::state::State;
use crate::store::format::{decode_body, decode_entry, parse_pack, LogEntry};
use crate::store::read::check_headless;
use crate::store::{read_head, text, unknown_or_corrupt, Keys, LogPosition};
use crate::types::embedding::Embedding;
use crate::types::entity::Entity;
use crate::types::episode::{EpisodeState, StateChange};
use crate::types::event::Event;
use crate::types::fact::{Fact, FactKind};
use crate::types::fade::{Fade, FadeReason};
use crate::types::message::{Message, Role};
use crate::types::recall::{Passage, RecallBlock};
use crate::types::trace::{Trace, TraceCause};

// ---- Reading what can be read of a damaged log ----
/// What a salvage read found at one place of the log: an entry, or a
/// stretch of entries that could not be read.
#[derive(Debug, Clone)]
pub enum Piece {
    /// An entry that read clean.
    Entry(LogEntry),
    /// Entries `first..=last`, which were to be found under `key`, could
    /// not be read (`why`).
    Lost {
        /// The stored key that should hold them.
        key: String,
        /// The first entry lost.
        first: u64,
        /// The last entry lost.
        last: u64,
        /// Why they could not be read.
        why: String,
    },
}

/// Reads every entry of a namespace that can be read, for
/// `Memory::open_salvage`: the head must read, then each pack, pack
/// entry and tail key that is missing, truncated, fails its checksum or does
/// not decode is a [`Piece::Lost`] instead of an error, and the read goes on
/// with the next. A store that fails, or a value of a newer build
/// (`UnsupportedVersion`), still fails the read. Formats 1 and 2 are read
/// entry by entry from their log (their snapshot is not used). Nothing is
/// written.
pub async fn read_salvage<S: Store>(store: &S, keys: Keys) -> Result<(LogPosition, Vec<Piece>)> {
    let (raw, head) = read_head(store, &keys).await?;
    if raw.is_none() {
        check_headless(store, &keys).await?;
    }
    let mut pieces = Vec::new();
    let lost = |key: String, first: u64, last: u64, e: Error| -> Result<Piece> {
        match e {
            Error::Corrupt(why) => Ok(Piece::Lost {
                key,
                first,
                last,
                why,
            }),
            e => Err(e),
        }
    };
    let missing = || Error::Corrupt("missing".into());
    if head.version < 3 {
        for seq in 1..=head.seq {
            let key = keys.log(seq);
            let entry = match store.get(&key).await? {
                None => Err(missing()),
                Some(raw) => text(raw).and_then(|t| {
                    let entry: LogEntry = codec::from_json(&t).map_err(|e| {
                        unknown_or_corrupt(e, format!("log entry {seq} does not parse"))
                    })?;
                    match entry.seq == seq {
                        true => Ok(entry),
                        false => Err(Error::Corrupt(format!(
                            "log entry {seq} claims seq {}",
                            entry.seq
                        ))),
                    }
                }),
            };
            pieces.push(match entry {
                Ok(entry) => Piece::Entry(entry),
                Err(e) => lost(key, seq, seq, e)?,
            });
        }
    } else {
        let prefix = keys.packs();
        let mut starts: Vec<u64> = store
            .list(&prefix)
            .await?
            .iter()
            .filter_map(|k| k[prefix.len()..].parse::<u64>().ok())
            .filter(|&first| first >= 1 && first <= head.flushed)
            .collect();
        crate::base::sort::sort(&mut starts);
        starts.dedup();
        let mut next = 1;
        for (i, &first) in starts.iter().enumerate() {
            if first < next {
                continue;
            }
            if first > next {
                pieces.push(lost(keys.pack(next), next, first - 1, missing())?);
            }
            // Where the next pack starts: this one cannot reach past it.
            let end = starts.get(i + 1).map_or(head.flushed, |&n| n - 1);
            let key = keys.pack(first);
            let raw = store.get(&key).await?;
            let seg = match raw.as_deref().ok_or_else(missing).and_then(|raw| {
                let seg = parse_pack(raw, &key)?;
                match seg.first == first {
                    true => Ok(seg),
                    false => Err(Error::Corrupt(format!("claims to start at {}", seg.first))),
                }
            }) {
                Ok(seg) => seg,
                Err(e) => {
                    pieces.push(lost(key, first, end, e)?);
                    next = end + 1;
                    continue;
                }
            };
            let last = seg.last.min(end);
            for seq in first..=last {
                let body = seg.bodies[(seq - first) as usize];
                pieces.push(match decode_body(body, seq) {
                    Ok(entry) => Piece::Entry(entry),
                    Err(e) => lost(key.clone(), seq, seq, e)?,
                });
            }
            next = last + 1;
        }
        if next <= head.flushed {
            pieces.push(lost(keys.pack(next), next, head.flushed, missing())?);
        }
        for seq in head.flushed + 1..=head.seq {
            let key = keys.log(seq);
            let entry = match store.get(&key).await? {
                None => Err(missing()),
                Some(raw) => decode_entry(&raw, seq),
            };
            pieces.push(match entry {
                Ok(entry) => Piece::Entry(entry),
                Err(e) => lost(key, seq, seq, e)?,
            });
        }
    }
    let pos = LogPosition {
        keys,
        seq: head.seq,
        version: head.version,
        flushed: head.flushed,
        rewrites: head.rewrites,
        head_raw: raw,
        tail: Vec::new(),
        graphs: [0; 3],
        words: 0,
        last_sum: None,
        origin: head.origin,
        next_free: false,
    };
    Ok((pos, pieces))
}

// ---- What is read, made consistent ----

/// A damaged log's readable entries, made consistent.
#[derive(Debug)]
pub struct Salvaged {
    /// The state they fold to.
    pub state: State,
    /// The log that folds to it: every entry at its position, a lost entry
    /// with no events, a read entry with the events that applied and the
    /// placeholders before them.
    pub log: Vec<LogEntry>,
    /// What was lost and dropped, for `storage_warnings`.
    pub warnings: Vec<String>,
}

/// Folds the pieces a salvage read found (in log order) into a state.
pub fn rebuild(pieces: Vec<Piece>) -> Salvaged {
    let mut state = State::default();
    let mut log = Vec::with_capacity(pieces.len());
    let mut warnings = Vec::new();
    let (mut dropped, mut placeholders) = (0usize, 0usize);
    let mut last_at = 0;
    for piece in pieces {
        match piece {
            Piece::Lost {
                key,
                first,
                last,
                why,
            } => {
                let range = match first == last {
                    true => format!("log entry {first}"),
                    false => format!("log entries {first}..={last}"),
                };
                warnings.push(format!(
                    "{range} lost: {key} could not be read ({why}); skipped"
                ));
                log.extend((first..=last).map(|seq| LogEntry {
                    seq,
                    id: String::new(),
                    at: last_at,
                    events: Vec::new(),
                }));
            }
            Piece::Entry(entry) => {
                last_at = entry.at;
                let mut kept = Vec::with_capacity(entry.events.len());
                let mut changed = false;
                for event in entry.events {
                    let split = match event {
                        Event::PassagesIndexed { passages } if passages.len() > 1 => {
                            changed = true;
                            passages
                                .into_iter()
                                .map(|p| Event::PassagesIndexed { passages: vec![p] })
                                .collect()
                        }
                        e => vec![e],
                    };
                    for event in split {
                        let (applied, filled) = salvage_event(&mut state, event, &mut kept);
                        changed |= !applied || filled > 0;
                        dropped += usize::from(!applied);
                        placeholders += filled;
                    }
                }
                log.push(LogEntry {
                    seq: entry.seq,
                    // The id is a checksum of the events as written.
                    id: if changed { String::new() } else { entry.id },
                    at: entry.at,
                    events: kept,
                });
            }
        }
    }
    if dropped > 0 {
        warnings.push(format!(
            "{dropped} events of the entries read no longer applied (they refer to what was \
             lost) and were dropped"
        ));
    }
    if placeholders > 0 {
        warnings.push(format!(
            "{placeholders} items the lost entries made stand as erased placeholders, so later \
             items keep their ids"
        ));
    }
    Salvaged {
        state,
        log,
        warnings,
    }
}

/// Replays a salvaged log up to the last entry committed at or before `at`.
pub fn replay_until(log: &[LogEntry], at: i64) -> Result<State> {
    let mut state = State::default();
    for entry in log.iter().take_while(|e| e.at <= at) {
        for e in &entry.events {
            state.apply(e)?;
        }
    }
    Ok(state)
}

/// How many items a placeholder event makes.
fn items(e: &Event) -> usize {
    match e {
        Event::PassagesIndexed { passages } => passages.len(),
        Event::StateChanged { .. } => 0,
        _ => 1,
    }
}

/// Applies `event`, with placeholders first when its id is past the next
/// free one; pushes what applied onto `kept`. Returns whether the event
/// itself applied, and how many placeholder items were made.
fn salvage_event(state: &mut State, event: Event, kept: &mut Vec<Event>) -> (bool, usize) {
    if apply(state, &event) {
        kept.push(event);
        return (true, 0);
    }
    let mut filled = 0;
    for f in placeholders(state, &event) {
        if !apply(state, &f) {
            return (false, filled);
        }
        filled += items(&f);
        kept.push(f);
    }
    if filled > 0 && apply(state, &event) {
        kept.push(event);
        return (true, filled);
    }
    (false, filled)
}

/// Applies one event, leaving the state as it was when it does not fit.
fn apply(state: &mut State, event: &Event) -> bool {
    if let Event::Message(Message {
        client_id: Some(c),
        replaces,
        ..
    }) = event
    {
        // Apply would record the id before refusing the repeat (a
        // regenerated answer may repeat a replaced one's).
        let again = |&id: &u64| replaces.is_some() && state.message(id).replaced_by.is_some();
        if state.by_client_id.get(c).is_some_and(|id| !again(id)) {
            return false;
        }
    }
    match state.apply(event) {
        Ok(()) => true,
        Err(_) => {
            // The views' cached sizes were told of the event: recompute them.
            state
                .threads
                .values_mut()
                .for_each(|l| l.sizes = Default::default());
            false
        }
    }
}

/// The placeholders that let `event` apply: one per id between the next
/// free one and its own, of its kind. None when it is not past the next
/// free id, or nothing can stand for the missing items.
fn placeholders(state: &State, event: &Event) -> Vec<Event> {
    let next = |len: usize| len as u64 + 1;
    let first_episode = (!state.episodes.is_empty()).then_some(1u64);
    match event {
        Event::Message(m) if m.id > next(state.messages.len()) => (next(state.messages.len())
            ..m.id)
            .map(|id| {
                Event::Message(Message {
                    id,
                    role: Role::Assistant,
                    content: String::new(),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    at: m.at,
                    tokens: 0,
                    boundary: None,
                    judged: true,
                    client_id: None,
                    erased: true,
                    thread: m.thread.clone(),
                    metadata: None,
                    replaces: None,
                    replaced_by: None,
                })
            })
            .collect(),
        Event::EpisodeFormed {
            episode, first, at, ..
        } if *episode > next(state.episodes.len()) => {
            // The lost episodes covered the messages from the open stretch
            // to this one's first, at least one each.
            let from = next(state.episodes.len());
            let k = episode - from;
            // In the thread of this one's first message.
            let Some(thread) = first
                .checked_sub(1)
                .and_then(|i| state.messages.get(i as usize))
                .map(|m| m.thread.clone())
            else {
                return Vec::new();
            };
            let line = state.line(&thread);
            let open: Vec<u64> = line
                .open_ids()
                .iter()
                .copied()
                .take_while(|id| id < first)
                .collect();
            if (open.len() as u64) < k {
                return Vec::new();
            }
            let mut out = Vec::new();
            for i in 0..k as usize {
                let ids = match i + 1 == k as usize {
                    true => &open[i..],
                    false => &open[i..=i],
                };
                let (f, l) = (ids[0], ids[ids.len() - 1]);
                let tokens = ids.iter().map(|&id| state.message(id).tokens).sum();
                out.push(Event::EpisodeFormed {
                    episode: from + i as u64,
                    first: f,
                    last: l,
                    at: *at,
                    tokens,
                });
                out.push(Event::StateChanged {
                    episode: from + i as u64,
                    change: StateChange {
                        state: EpisodeState::Forgotten,
                        at: *at,
                        fade: None,
                    },
                });
            }
            out
        }
        Event::Trace(t) if t.id > next(state.traces.len()) => {
            let Some(episode) = first_episode else {
                return Vec::new();
            };
            (next(state.traces.len())..t.id)
                .map(|id| {
                    Event::Trace(Trace {
                        id,
                        episode,
                        cause: TraceCause::Encoding,
                        yes: false,
                        strength: 0.0,
                        at: t.at,
                    })
                })
                .collect()
        }
        Event::EntityAdded(n) if n.id > next(state.entities.len()) => (next(state.entities.len())
            ..n.id)
            .map(|id| {
                Event::EntityAdded(Entity {
                    id,
                    name: String::new(),
                    aliases: Vec::new(),
                    embedding: Embedding::default(),
                    erased: true,
                })
            })
            .collect(),
        Event::FactAdded(f) if f.id > next(state.facts.len()) => {
            let (Some(episode), false) = (first_episode, state.entities.is_empty()) else {
                return Vec::new();
            };
            (next(state.facts.len())..f.id)
                .map(|id| {
                    Event::FactAdded(Fact {
                        id,
                        subject: 1,
                        predicate: String::new(),
                        object: 1,
                        sentence: String::new(),
                        kind: FactKind::Fact,
                        episode,
                        said_at: f.noted_at,
                        noted_at: f.noted_at,
                        embedding: Embedding::default(),
                        sources: Vec::new(),
                        restated: Vec::new(),
                        retired: None,
                        erased: true,
                    })
                })
                .collect()
        }
        Event::FadeStarted(f) if f.id > next(state.fades.len()) => (next(state.fades.len())..f.id)
            .map(|id| {
                Event::FadeStarted(Fade {
                    id,
                    reason: FadeReason::Ceiling,
                    at: f.at,
                    view_tokens: 0,
                    ceiling: 0,
                    landing: 0,
                    turn_tokens: 0,
                    finished_at: Some(f.at),
                    view_after: Some(0),
                    thread: f.thread.clone(),
                })
            })
            .collect(),
        Event::PassagesIndexed { passages } => {
            let (Some(p), Some(episode)) = (passages.first(), first_episode) else {
                return Vec::new();
            };
            // A placeholder passage spans a tombstone: no text to search.
            let Some(m) = state.messages.iter().find(|m| m.erased).map(|m| m.id) else {
                return Vec::new();
            };
            if passages.len() != 1 || p.id <= next(state.passages.len()) {
                return Vec::new();
            }
            vec![Event::PassagesIndexed {
                passages: (next(state.passages.len())..p.id)
                    .map(|id| Passage {
                        id,
                        episode,
                        first: m,
                        last: m,
                        at: p.at,
                        embedding: Embedding::default(),
                    })
                    .collect(),
            }]
        }
        Event::Recalled(b)
            if b.id > next(state.recalls.len()) && b.message <= state.messages.len() as u64 =>
        {
            (next(state.recalls.len())..b.id)
                .map(|id| {
                    Event::Recalled(RecallBlock {
                        id,
                        message: b.message,
                        at: b.at,
                        parts: Vec::new(),
                        split_failed: true,
                        walk_failed: true,
                        items: Vec::new(),
                        distilled: None,
                        gave_way: Some(b.at),
                    })
                })
                .collect()
        }
        _ => Vec::new(),
    }
}
