//! Reading the log: entries and packs between the head's positions,
//! with retries while other writers move the tail into packs.

use crate::base::error::{Error, Result};
use crate::base::host::{Store, GET_MANY_MAX};
use crate::store::format::{decode_body, decode_entry, parse_pack, Sum, Visit};
use crate::store::{legacy, read_head, Head, Keys};

/// How a read of the log ended: all of it was read, or another writer
/// gathered the tail into a pack after the head was read (the caller
/// reads the head again and goes on from `next`, the first entry it did not
/// get: entries never change, only where they are stored). `missing` names
/// the key that was not there: when the head has not moved, nobody moved
/// it, and the log is damaged there.
pub(super) enum Read {
    /// Read to the end; `past_free`: the key of the entry after the last
    /// was read with them and is absent (see [`visit_to_end`]).
    Done {
        past_free: bool,
    },
    Moved {
        next: u64,
        missing: String,
    },
}

/// `e` with the stored key it came from named first (damage is reported by
/// key, so a person can find the value).
pub(super) fn at_key(e: Error, key: &str) -> Error {
    match e {
        Error::Corrupt(m) => Error::Corrupt(format!("{key}: {m}")),
        e => e,
    }
}

/// The body checksum in a stored entry's header (the value is checked).
pub(super) fn header_sum(value: &[u8]) -> u64 {
    u64::from_le_bytes(value[5..13].try_into().expect("8 bytes"))
}

/// Reads entries `from..=to` of a format-3 log whose head is `head`: the
/// packs that hold them, then the tail keys, handing each to `each` as
/// it is decoded (so a load never holds the decoded log and the state
/// together).
pub(super) async fn read_range<S: Store>(
    store: &S,
    keys: &Keys,
    head: &Head,
    from: u64,
    to: u64,
    probe: bool,
    each: &mut Visit<'_>,
) -> Result<Read> {
    let mut next = from;
    let stop = to.min(head.flushed);
    if from <= stop {
        let prefix = keys.packs();
        let mut starts: Vec<u64> = Vec::new();
        for key in store.list(&prefix).await? {
            let first = key[prefix.len()..]
                .parse::<u64>()
                .map_err(|_| Error::Corrupt(format!("pack key {key} is not a number")))?;
            if first <= head.flushed {
                starts.push(first);
            }
        }
        crate::base::sort::sort(&mut starts);
        // The pack holding `from` is the last one starting at or before it;
        // the packs from there up to `stop`, read a few at a time (a pack
        // holds a commit's worth of entries: a batch bounds the bytes held).
        let i = starts.partition_point(|&s| s <= from).saturating_sub(1);
        let end = starts.partition_point(|&s| s <= stop);
        for batch in starts[i.min(end)..end].chunks(PACKS_AT_ONCE) {
            let names: Vec<String> = batch.iter().map(|&first| keys.pack(first)).collect();
            let values = get_many(store, &names).await?;
            for ((&first, key), raw) in batch.iter().zip(names).zip(values) {
                if first > next {
                    // Packs are contiguous: the one missing starts at `next`.
                    let missing = keys.pack(next);
                    return Ok(Read::Moved { next, missing });
                }
                let Some(raw) = raw else {
                    return Ok(Read::Moved { next, missing: key });
                };
                let seg = parse_pack(&raw, &key)?;
                if seg.first != first {
                    return Err(Error::Corrupt(format!(
                        "pack {key} claims to start at {}",
                        seg.first
                    )));
                }
                if seg.last < next {
                    continue;
                }
                let last = seg.last.min(stop);
                while next <= last {
                    let body = seg.bodies[(next - first) as usize];
                    let entry = decode_body(body, next).map_err(|e| at_key(e, &key))?;
                    next += 1;
                    if each(entry, Sum::Of(body), None)? {
                        return Ok(Read::Done { past_free: false });
                    }
                }
            }
        }
        if next <= stop {
            let missing = keys.pack(next);
            return Ok(Read::Moved { next, missing });
        }
    }
    let mut tail: Vec<u64> = (next.max(head.flushed + 1)..=to).collect();
    // With `probe`, the key after `to` is read in the tail's last batch.
    let mut past_free = false;
    if probe {
        tail.push(to + 1);
    }
    for batch in tail.chunks(GET_MANY_MAX) {
        let names: Vec<String> = batch.iter().map(|&seq| keys.log(seq)).collect();
        let values = get_many(store, &names).await?;
        for ((&seq, key), raw) in batch.iter().zip(names).zip(values) {
            if seq > to {
                past_free = raw.is_none();
                break;
            }
            let Some(raw) = raw else {
                return Ok(Read::Moved {
                    next: seq,
                    missing: key,
                });
            };
            let entry = decode_entry(&raw, seq).map_err(|e| at_key(e, &key))?;
            let sum = header_sum(&raw);
            if each(entry, Sum::Known(sum), Some(raw))? {
                return Ok(Read::Done { past_free: false });
            }
        }
    }
    Ok(Read::Done { past_free })
}

/// Packs read by one [`Store::get_many`].
const PACKS_AT_ONCE: usize = 16;

/// [`Store::get_many`], checked: one value (or none) per key asked for.
pub(super) async fn get_many<S: Store>(store: &S, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
    let values = store.get_many(keys).await?;
    if values.len() != keys.len() {
        return Err(Error::Store(format!(
            "store.get_many returned {} values for {} keys",
            values.len(),
            keys.len()
        )));
    }
    Ok(values)
}

/// Refuses to read a namespace whose head is gone while its log is there:
/// opening it as empty would hide the memory and the next commit would
/// overwrite it.
pub(super) async fn check_headless<S: Store>(store: &S, keys: &Keys) -> Result<()> {
    for key in [keys.log(1), keys.snapshot()] {
        if store.get(&key).await?.is_some() {
            return Err(headless(&key));
        }
    }
    if let Some(key) = store.list(&keys.packs()).await?.into_iter().next() {
        return Err(headless(&key));
    }
    Ok(())
}

pub(super) fn headless(key: &str) -> Error {
    Error::Corrupt(format!(
        "the head is missing but {key} exists: refusing to open this memory as empty \
         (restore the head, or import an export into a new namespace)"
    ))
}

/// Times a read re-reads the head when other writers keep moving the tail
/// into packs under it.
pub(super) const READ_ATTEMPTS: u32 = 8;

/// Hands every entry `from..=head.seq` to `each`, in order (starting from a
/// head already read, if given). Returns the head they were read under.
pub(super) async fn visit_log<S: Store>(
    store: &S,
    keys: &Keys,
    first: Option<(Option<Vec<u8>>, Head)>,
    from: u64,
    each: &mut Visit<'_>,
) -> Result<(Option<Vec<u8>>, Head)> {
    let (raw, head, _) = visit(store, keys, first, from, false, each).await?;
    Ok((raw, head))
}

/// [`visit_log`] for a handle that goes on to write: the key of the entry
/// after the head is read in the same batch as the tail, and the third
/// value says it is absent (the next commit's key is free: no read of it
/// before the commit; the guarded write catches any writer since).
pub(super) async fn visit_to_end<S: Store>(
    store: &S,
    keys: &Keys,
    first: Option<(Option<Vec<u8>>, Head)>,
    from: u64,
    each: &mut Visit<'_>,
) -> Result<(Option<Vec<u8>>, Head, bool)> {
    visit(store, keys, first, from, true, each).await
}

async fn visit<S: Store>(
    store: &S,
    keys: &Keys,
    mut first: Option<(Option<Vec<u8>>, Head)>,
    mut from: u64,
    probe: bool,
    each: &mut Visit<'_>,
) -> Result<(Option<Vec<u8>>, Head, bool)> {
    // The head of the previous attempt and the key it found missing.
    let mut moved: Option<(Option<Vec<u8>>, String)> = None;
    for _ in 0..READ_ATTEMPTS {
        let (raw, head) = match first.take() {
            Some(h) => h,
            None => read_head(store, keys).await?,
        };
        if let Some((before, missing)) = moved.take() {
            if before == raw {
                // Nobody moved the log: the value is gone.
                return Err(Error::Corrupt(format!(
                    "{missing} is missing: log entry {from} cannot be read"
                )));
            }
        }
        if raw.is_none() {
            if let Err(headless) = check_headless(store, keys).await {
                // Another writer's first commit may have landed between the
                // head read and this check (a new memory created by two
                // hosts at once): its head is there now. Read again.
                if read_head(store, keys).await?.0.is_some() {
                    continue;
                }
                return Err(headless);
            }
        }
        if head.version < 3 {
            legacy::read_entries(store, keys, from, head.seq, each).await?;
            return Ok((raw, head, false));
        }
        // A head that names no entry (a new memory) has nothing past it to probe.
        let probe = probe && raw.is_some();
        match read_range(store, keys, &head, from, head.seq, probe, each).await? {
            Read::Done { past_free } => return Ok((raw, head, past_free)),
            Read::Moved { next, missing } => {
                from = next;
                moved = Some((raw, missing));
            }
        }
    }
    Err(Error::Busy(format!(
        "other writers moved the log {READ_ATTEMPTS} times while it was read"
    )))
}

/// The stored values of the tail after `flushed` up to `seq`, from the
/// values gathered while reading (`(seq, value)`), or none when some are
/// missing (a commit that needs them then reads them).
pub(super) fn tail_cache(mut seen: Vec<(u64, Vec<u8>)>, flushed: u64, seq: u64) -> Vec<Vec<u8>> {
    seen.retain(|(s, _)| *s > flushed && *s <= seq);
    let complete = seen.len() as u64 == seq - flushed
        && seen
            .iter()
            .enumerate()
            .all(|(i, (s, _))| *s == flushed + 1 + i as u64);
    if complete {
        seen.into_iter().map(|(_, v)| v).collect()
    } else {
        Vec::new()
    }
}
