//! Reading what can be read of a damaged log (for salvage).

#[allow(unused_imports)]
use super::*;

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
        crate::sort::sort(&mut starts);
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
    };
    Ok((pos, pieces))
}
