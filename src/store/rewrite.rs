//! Rewriting and destroying a namespace (erasure).

use crate::base::error::{Error, Result};
use crate::base::host::{Store, StoreError, Write};
use crate::base::sort::CollectOrdered;
use crate::state::scrub::{scrub_event, Reach};
use crate::state::State;
use crate::store::copies::GRAPHS;
use crate::store::format::{encode_new_entry, encode_pack_bodies, parse_pack, LogEntry};
use crate::store::log::{into_packs, Committed};
use crate::store::read::{header_sum, visit_log};
use crate::store::{Head, LogPosition, FORMAT_VERSION};
use crate::types::erase::{Erased, Target};
use crate::types::event::Event;

// ---- Rewriting and destroying a namespace (erasure) -------------------------
//
// Erasure is the one time stored log entries change: the values that held
// what was erased (the packs and tail keys of the changed entries; a
// format 1 or 2 memory is rewritten whole, into packs) are replaced, with
// a new head counting the rewrite, in one `write_if` guarded by the head this
// handle read, so a concurrent writer gets a conflict, never a mix, and other
// handles reload instead of catching up.

/// Every log entry of the namespace up to `pos`, in order.
pub async fn read_log<S: Store>(store: &S, pos: &LogPosition) -> Result<Vec<LogEntry>> {
    let mut log = Vec::with_capacity(pos.seq as usize);
    visit_log(store, &pos.keys, None, 1, &mut |entry, _, _| {
        if entry.seq > pos.seq {
            return Ok(true);
        }
        log.push(entry);
        Ok(false)
    })
    .await?;
    Ok(log)
}

/// Replaces the log entries in `entries` (each at its own seq; the last one
/// is the new end of the log, one past `pos`) and writes the new head, in
/// one `write_if` guarded by the head `pos` read: every pack or tail key
/// holding a changed entry is written again with it. Each changed entry's
/// id is computed again from its new content. Returns the outcome and the
/// bytes written. A write that reports an error but landed (the head reads
/// back as written) is `Done`. A format 1 or 2 log is rewritten whole, in
/// packs of `pack_entries`.
pub async fn rewrite<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    entries: Vec<LogEntry>,
    pack_entries: u64,
) -> Result<(Committed, usize)> {
    let Some(seq) = entries.last().map(|e| e.seq) else {
        return Ok((Committed::Done, 0));
    };
    let mut changed: std::collections::BTreeMap<u64, Vec<u8>> = entries
        .into_iter()
        .map(|e| (e.seq, encode_new_entry(e.seq, e.at, &e.events).1))
        .into_map();
    let last_sum = changed.get(&seq).map(|v| header_sum(v));
    let mut writes: Vec<Write> = Vec::new();
    let flushed;
    if pos.version < 3 {
        into_packs(store, pos, &mut changed, pack_entries, &mut writes).await?;
        flushed = seq;
    } else {
        flushed = pos.flushed;
        let prefix = pos.keys.packs();
        for key in store.list(&prefix).await? {
            let Ok(first) = key[prefix.len()..].parse::<u64>() else {
                continue;
            };
            if first > pos.flushed {
                continue;
            }
            let Some(raw) = store.get(&key).await? else {
                return Ok((Committed::Conflict, 0));
            };
            let seg = parse_pack(&raw, &key)?;
            if changed.range(seg.first..=seg.last).next().is_none() {
                continue;
            }
            let replaced: Vec<Option<Vec<u8>>> =
                (seg.first..=seg.last).map(|s| changed.remove(&s)).collect();
            let bodies: Vec<&[u8]> = replaced
                .iter()
                .zip(&seg.bodies)
                .map(|(new, old)| new.as_deref().map_or(*old, |v| &v[13..]))
                .collect();
            writes.push((key.clone(), Some(encode_pack_bodies(seg.first, &bodies))));
        }
        for (s, value) in changed {
            if s <= pos.flushed {
                return Err(Error::Corrupt(format!(
                    "log entry {s} is in no stored pack"
                )));
            }
            writes.push((pos.keys.log(s), Some(value)));
        }
    }
    let rewrites = pos.rewrites + 1;
    // The stored word indexes may hold erased words, and the meaning graphs
    // were linked over erased vectors: gone in the same write (the handle
    // saves them again from the state without them).
    writes.push((pos.keys.words(), None));
    for kind in GRAPHS {
        writes.push((pos.keys.graph(kind), None));
    }
    let head = Head::current(seq, flushed, rewrites, pos.origin);
    writes.push((pos.keys.head(), Some(head.clone())));
    let bytes = writes
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    let result = store
        .write_if(&pos.keys.head(), pos.head_raw.as_deref(), &writes)
        .await;
    let landed = match &result {
        Ok(()) => true,
        Err(_) => store.get(&pos.keys.head()).await.ok().flatten().as_deref() == Some(&head[..]),
    };
    if landed {
        pos.seq = seq;
        pos.version = FORMAT_VERSION;
        pos.flushed = flushed;
        pos.rewrites = rewrites;
        pos.head_raw = Some(head);
        pos.last_sum = last_sum;
        pos.words = 0;
        pos.graphs = [0; 3];
        // The tail cache is read again by the commit that needs it.
        pos.tail.clear();
        return Ok((Committed::Done, bytes));
    }
    match result {
        Err(StoreError::Conflict) => Ok((Committed::Conflict, 0)),
        Err(e) => Err(e.into()),
        Ok(()) => unreachable!("a write that succeeded landed"),
    }
}

/// Deletes every key of the namespace (head, packs, log entries, a
/// format-2 snapshot, and any other key under its prefix) in one `write_if`
/// guarded by the head `pos` read. The position is then that of an empty
/// namespace.
pub async fn destroy<S: Store>(store: &S, pos: &mut LogPosition) -> Result<Committed> {
    let mut keys = store.list(pos.keys.prefix()).await?;
    crate::base::sort::sort(&mut keys);
    if keys.is_empty() && pos.head_raw.is_none() {
        return Ok(Committed::Done);
    }
    // The head is deleted last in the list (stores apply writes in order).
    keys.retain(|k| *k != pos.keys.head());
    let mut writes: Vec<Write> = keys.into_iter().map(|k| (k, None)).collect();
    writes.push((pos.keys.head(), None));
    match store
        .write_if(&pos.keys.head(), pos.head_raw.as_deref(), &writes)
        .await
    {
        Ok(()) => {}
        Err(StoreError::Conflict) => return Ok(Committed::Conflict),
        Err(e) => {
            // Landed despite the error? Then the head is gone.
            if !matches!(store.get(&pos.keys.head()).await, Ok(None)) {
                return Err(e.into());
            }
        }
    }
    pos.seq = 0;
    pos.version = FORMAT_VERSION;
    pos.flushed = 0;
    pos.rewrites = 0;
    pos.origin = 0;
    pos.tail.clear();
    pos.head_raw = None;
    pos.words = 0;
    pos.last_sum = None;
    Ok(Committed::Done)
}

/// The log rewritten without what `erased` reaches, plus the entry that
/// records the erasure, and the state it folds to. Returns the entries
/// that changed (the new one last) and that state. Fails, writing
/// nothing, if the rewritten log does not replay.
pub fn scrub_log(
    state: &State,
    log: Vec<LogEntry>,
    target: Target,
    erased: &Erased,
    at: i64,
) -> Result<(Vec<LogEntry>, State)> {
    let reach = Reach::new(state, erased);
    let mut changed = Vec::new();
    let mut folded = State::default();
    let replay = |folded: &mut State, entry: &LogEntry| -> Result<()> {
        for e in &entry.events {
            folded.apply(e).map_err(|e| {
                Error::Corrupt(format!(
                    "the log rewritten for erasure does not replay at entry {}: {e}",
                    entry.seq
                ))
            })?;
        }
        Ok(())
    };
    let seq = log.len() as u64 + 1;
    for mut entry in log {
        // Compared as JSON (what is stored): no PartialEq of every event
        // type in the wasm builds.
        let before = serde_json::to_string(&entry.events).expect("events serialise");
        entry.events.retain_mut(|e| scrub_event(e, &reach));
        replay(&mut folded, &entry)?;
        if serde_json::to_string(&entry.events).expect("events serialise") != before {
            changed.push(entry);
        }
    }
    let record = LogEntry {
        seq,
        id: String::new(),
        at,
        events: vec![Event::Erased {
            target,
            erased: reach.erased.clone(),
            at,
        }],
    };
    replay(&mut folded, &record)?;
    changed.push(record);
    Ok((changed, folded))
}
