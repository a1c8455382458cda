//! The log's life: load, catch-up, commit, replay.

use crate::base::error::{Error, Result};
use crate::base::host::{Store, StoreError, Write, GET_MANY_MAX};
use crate::state::State;
use crate::store::copies::{load_graphs, read_words, words_warning, WORDS_MIN_DOCS};
use crate::store::format::{decode_entry, encode_entry, encode_new_entry, encode_pack, LogEntry};
use crate::store::read::{get_many, header_sum, tail_cache, visit_log, visit_to_end};
use crate::store::{legacy, parse_head, read_head, Head, Keys, LogPosition, FORMAT_VERSION};
use crate::types::event::Event;

/// Loads a namespace: its packs and tail (or, for formats 1 and 2, its
/// snapshot and the entries after it). Returns the state, the position, and
/// why stored data was not used as is (a damaged format-2 snapshot: the
/// state is then rebuilt from the whole log; a stored meaning graph that
/// does not fit: search is exact until maintain links the rows again; the
/// caller reports them).
pub async fn load<S: Store>(store: &S, keys: Keys) -> Result<(State, LogPosition, Vec<String>)> {
    let (raw, head) = read_head(store, &keys).await?;
    let mut first = Some((raw.clone(), head.clone()));
    if head.version < 3 && raw.is_some() {
        let (state, warning) = legacy::load(store, &keys).await?;
        let (raw, head) = read_head(store, &keys).await?;
        first = None;
        if head.version < 3 {
            let seq = head.seq;
            let pos = LogPosition {
                keys,
                seq,
                version: head.version,
                flushed: 0,
                rewrites: 0,
                head_raw: raw,
                tail: Vec::new(),
                graphs: [0; 3],
                words: 0,
                last_sum: None,
                origin: 0,
                next_free: false,
            };
            let mut state = state;
            let mut pos = pos;
            let mut warnings: Vec<String> = warning.into_iter().collect();
            warnings.extend(load_graphs(store, &mut state, &mut pos).await);
            return Ok((state, pos, warnings));
        }
    }
    let mut warnings = Vec::new();
    // The stored word indexes, put in place once the entry they were saved
    // after is applied (building them until then is skipped).
    let mut words = match raw.is_some() {
        true => match read_words(store, &keys, &head).await {
            Ok(w) => w,
            Err(why) => {
                warnings.push(words_warning(&why));
                None
            }
        },
        false => None,
    };
    let stored_words = words.is_some();
    let mut state = State {
        words_deferred: stored_words,
        ..State::default()
    };
    let mut seen = Vec::new();
    let mut last_sum = None;
    let mut restored = false;
    let (raw, head, past_free) = visit_to_end(store, &keys, first, 1, &mut |entry, sum, value| {
        apply_entry(&mut state, &entry)?;
        let at_head = entry.seq == head.seq;
        if at_head {
            last_sum = Some((entry.seq, sum.get()));
        }
        if let Some(w) = words.take_if(|w| w.seq == entry.seq) {
            let sum = match at_head {
                true => last_sum.map_or(0, |(_, s)| s),
                false => sum.get(),
            };
            match w.restore(&mut state, sum) {
                Ok(()) => restored = true,
                Err(why) => {
                    warnings.push(words_warning(&why));
                    state.rebuild_word_indexes();
                }
            }
        }
        if let Some(v) = value {
            seen.push((entry.seq, v));
        }
        Ok(false)
    })
    .await?;
    if state.words_deferred {
        // (Not reached: read_words refuses an index saved after the head.)
        warnings.push(words_warning("saved after the end of the log"));
        state.rebuild_word_indexes();
    }
    let docs = state.fact_index.len() + state.passage_index.len();
    if !stored_words && warnings.is_empty() && docs >= WORDS_MIN_DOCS {
        warnings.push(words_warning("not stored"));
    }
    let pos = LogPosition {
        keys,
        seq: head.seq,
        version: head.version,
        flushed: head.flushed,
        rewrites: head.rewrites,
        tail: tail_cache(seen, head.flushed, head.seq),
        head_raw: raw,
        graphs: [0; 3],
        words: match restored {
            true => docs,
            false => 0,
        },
        last_sum: last_sum.filter(|(s, _)| *s == head.seq).map(|(_, s)| s),
        origin: head.origin,
        next_free: false,
    };
    if !past_free {
        check_nothing_past_head(store, &pos).await?;
    }
    let mut pos = pos;
    pos.next_free = true;
    warnings.extend(load_graphs(store, &mut state, &mut pos).await);
    Ok((state, pos, warnings))
}

/// A log entry stored past the head means the head was rolled back (a
/// store restored from an older backup of its head alone, say): the memory
/// would show the log cut short and refuse its next write. `Corrupt`, so
/// `open` says how to salvage it, unless the head moved meanwhile (another
/// writer's commit, which writes its entry and the head at once).
pub(super) async fn check_nothing_past_head<S: Store>(store: &S, pos: &LogPosition) -> Result<()> {
    if pos.head_raw.is_none() {
        return Ok(());
    }
    let next = pos.seq + 1;
    if store.get(&pos.keys.log(next)).await?.is_none() {
        return Ok(());
    }
    if store.get(&pos.keys.head()).await? != pos.head_raw {
        return Ok(());
    }
    Err(Error::Corrupt(format!(
        "log entry {next} is stored past the head (entry {}): the head was rolled back \
         or the log damaged",
        pos.seq
    )))
}

pub(super) fn apply_entry(state: &mut State, entry: &LogEntry) -> Result<()> {
    for e in &entry.events {
        state
            .apply(e)
            .map_err(|e| Error::Corrupt(format!("log entry {}: {e}", entry.seq)))?;
    }
    Ok(())
}

/// Applies the entries other writers committed since `pos`. Returns whether
/// anything was applied.
pub async fn catch_up<S: Store>(
    store: &S,
    state: &mut State,
    pos: &mut LogPosition,
) -> Result<bool> {
    // The head unchanged (the common case) needs no parsing.
    let raw = store.get(&pos.keys.head()).await?;
    if raw == pos.head_raw {
        return Ok(false);
    }
    let head = parse_head(raw.as_deref())?;
    if raw.is_none()
        || head.seq < pos.seq
        || head.version != pos.version
        || head.version < 3
        || head.rewrites != pos.rewrites
        || head.origin != pos.origin
    {
        // Another handle destroyed the namespace (an empty load; a head gone
        // with entries left is `Corrupt` there) and perhaps wrote another
        // log in it (another origin, or a shorter log), another build
        // rewrote the format, or an erasure rewrote entries this handle has
        // applied: read it all again.
        let (s, p, _) = load(store, pos.keys.clone()).await?;
        *state = s;
        *pos = p;
        return Ok(true);
    }
    let mut seen: Vec<(u64, Vec<u8>)> = (pos.flushed + 1..)
        .zip(std::mem::take(&mut pos.tail))
        .collect();
    let mut applied = pos.seq;
    let mut last_sum = pos.last_sum;
    let read = visit_to_end(
        store,
        &pos.keys,
        Some((raw, head)),
        pos.seq + 1,
        &mut |entry, sum, value| {
            for e in &entry.events {
                state.apply(e)?;
            }
            applied = entry.seq;
            last_sum = Some(sum.get());
            if let Some(v) = value {
                seen.push((entry.seq, v));
            }
            Ok(false)
        },
    )
    .await;
    // What was applied stays applied: the position follows it.
    pos.seq = applied;
    pos.last_sum = last_sum;
    let (raw, head, past_free) = read?;
    pos.flushed = head.flushed;
    pos.tail = tail_cache(seen, head.flushed, head.seq);
    pos.head_raw = raw;
    pos.next_free = past_free;
    Ok(true)
}

/// How a commit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    /// The entry is in the log (written now, or found there after a write
    /// that reported an error but had landed).
    Done,
    /// Another writer moved the head first: reload and run the call again.
    Conflict,
}

/// Commits `events` as the next log entry, guarded by the head `pos` read.
/// The entry's id is a checksum of its position, time and events: when the
/// write reports a conflict or a failure, the log is read back and, if entry
/// `seq` carries this id, the write landed and the commit is done (an entry
/// identical in every event is the same call). An existing entry at the
/// position is never overwritten. Ids are deterministic, so two runs with the
/// same clock readings and model answers write identical logs.
///
/// When `pack_entries` entries wait after the last pack, this commit
/// writes them and its own as a pack and deletes their single keys. A
/// memory of format 1 or 2 is rewritten into packs by its first commit.
pub async fn commit<S: Store>(
    store: &S,
    pos: &mut LogPosition,
    events: Vec<Event>,
    at: i64,
    pack_entries: u64,
) -> Result<Committed> {
    let seq = pos.seq + 1;
    let (id, entry) = encode_new_entry(seq, at, &events);
    let sum = header_sum(&entry);
    drop(events);
    let key = pos.keys.log(seq);
    if !pos.next_free && store.get(&key).await?.is_some() {
        // Another writer committed `seq` since this call read the head (a
        // conflict), or the head is behind its own log (damage: never
        // overwrite what is there).
        let now = store.get(&pos.keys.head()).await?;
        if now != pos.head_raw {
            return Ok(Committed::Conflict);
        }
        return Err(Error::Corrupt(format!(
            "log entry {seq} exists beyond the head: refusing to overwrite it"
        )));
    }
    let mut writes: Vec<Write> = Vec::new();
    let mut flushed = pos.flushed;
    let flush = pos.version >= 3 && pos.seq + 1 - pos.flushed >= pack_entries;
    // The tail as stored, when the cache is incomplete (the tail moved
    // under a catch-up) and this commit writes the pack: read it.
    let mut read_tail = None;
    if flush && pos.tail.len() as u64 != pos.seq - pos.flushed {
        let mut tail = Vec::new();
        let seqs: Vec<u64> = (pos.flushed + 1..=pos.seq).collect();
        for batch in seqs.chunks(GET_MANY_MAX) {
            let names: Vec<String> = batch.iter().map(|&s| pos.keys.log(s)).collect();
            for (&s, raw) in batch.iter().zip(get_many(store, &names).await?) {
                let raw = raw.ok_or_else(|| Error::Corrupt(format!("log entry {s} is missing")))?;
                decode_entry(&raw, s)?;
                tail.push(raw);
            }
        }
        read_tail = Some(tail);
    }
    // The entry's own key, when the entry is written there (its value is
    // taken back into the tail cache once it landed).
    let mut own = None;
    if pos.version < 3 {
        let mut new = std::collections::BTreeMap::from([(seq, entry)]);
        into_packs(store, pos, &mut new, pack_entries, &mut writes).await?;
        flushed = seq;
    } else if flush {
        let tail = read_tail.as_ref().unwrap_or(&pos.tail);
        let mut all: Vec<&[u8]> = tail.iter().map(Vec::as_slice).collect();
        all.push(&entry);
        writes.push((
            pos.keys.pack(pos.flushed + 1),
            Some(encode_pack(pos.flushed + 1, &all)),
        ));
        for s in pos.flushed + 1..seq {
            writes.push((pos.keys.log(s), None));
        }
        flushed = seq;
    } else {
        own = Some(writes.len());
        writes.push((key, Some(entry)));
    }
    // The first entry names the log (see `Head::origin`).
    let origin = if seq == 1 { sum } else { pos.origin };
    let head = Head::current(seq, flushed, pos.rewrites, origin);
    writes.push((pos.keys.head(), Some(head.clone())));
    let result = store
        .write_if(&pos.keys.head(), pos.head_raw.as_deref(), &writes)
        .await;
    let landed = match &result {
        Ok(()) => true,
        // A write can land and still report an error (a timeout after the
        // store applied it): read the entry back before retrying.
        Err(_) => landed_entry(store, &pos.keys, seq, &id).await,
    };
    if landed {
        pos.seq = seq;
        pos.version = FORMAT_VERSION;
        pos.flushed = flushed;
        pos.head_raw = Some(head);
        pos.last_sum = Some(sum);
        pos.origin = origin;
        pos.next_free = true;
        match own.and_then(|i| writes[i].1.take()) {
            Some(entry) => {
                if let Some(tail) = read_tail {
                    pos.tail = tail;
                }
                pos.tail.push(entry);
            }
            None => pos.tail.clear(),
        }
        return Ok(Committed::Done);
    }
    match result {
        Err(StoreError::Conflict) => Ok(Committed::Conflict),
        Err(e) => Err(e.into()),
        Ok(()) => unreachable!("a write that succeeded landed"),
    }
}

/// Whether entry `seq` is in the log with attempt id `id`.
pub(super) async fn landed_entry<S: Store>(store: &S, keys: &Keys, seq: u64, id: &str) -> bool {
    let mut ours = false;
    let read = visit_log(store, keys, None, seq, &mut |entry, _, _| {
        ours = entry.seq == seq && entry.id == id;
        Ok(true)
    })
    .await;
    read.is_ok() && ours
}

/// Adds the writes that turn a format 1 or 2 log into format-3 packs:
/// every old entry (replaced by its stored value in `new` when there is
/// one), then the rest of `new` (entries after the old log), in packs of
/// `per`; the old entries' keys and the snapshot are deleted.
pub(super) async fn into_packs<S: Store>(
    store: &S,
    pos: &LogPosition,
    new: &mut std::collections::BTreeMap<u64, Vec<u8>>,
    per: u64,
    writes: &mut Vec<Write>,
) -> Result<()> {
    let mut all: Vec<Vec<u8>> = Vec::with_capacity(pos.seq as usize + new.len());
    legacy::read_entries(store, &pos.keys, 1, pos.seq, &mut |entry, _, _| {
        let s = entry.seq;
        all.push(new.remove(&s).unwrap_or_else(|| encode_entry(&entry)));
        Ok(false)
    })
    .await?;
    all.extend(std::mem::take(new).into_values());
    let refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
    packs_of(&pos.keys, 1, &refs, per, writes);
    for s in 1..=pos.seq {
        writes.push((pos.keys.log(s), None));
    }
    writes.push((pos.keys.snapshot(), None));
    Ok(())
}

/// Adds the writes of `entries` (stored values, starting at `first`) as
/// packs of at most `per` entries.
pub(super) fn packs_of(
    keys: &Keys,
    first: u64,
    entries: &[&[u8]],
    per: u64,
    writes: &mut Vec<Write>,
) {
    for (i, chunk) in entries.chunks(per.max(1) as usize).enumerate() {
        let start = first + i as u64 * per.max(1);
        writes.push((keys.pack(start), Some(encode_pack(start, chunk))));
    }
}

/// Replays the log from the start up to the last entry committed at or
/// before `at`: the memory as it was then.
pub async fn replay_until<S: Store>(store: &S, pos: &LogPosition, at: i64) -> Result<State> {
    let mut state = State::default();
    visit_log(store, &pos.keys, None, 1, &mut |entry, _, _| {
        if entry.at > at || entry.seq > pos.seq {
            return Ok(true);
        }
        for e in &entry.events {
            state.apply(e)?;
        }
        Ok(false)
    })
    .await?;
    Ok(state)
}
