//! Formats 1 and 2: JSON log entries and a whole-state snapshot. Read only;
//! the first commit rewrites them as packs.

use serde::Deserialize;

use crate::base::error::{Error, Result};
use crate::base::host::Store;
use crate::state::State;
use crate::store::format::{checksum, LogEntry, Sum, Visit};
use crate::store::{corrupt, read_head, text, unknown_or_corrupt, Head, Keys};

#[derive(Deserialize)]
pub(super) struct Snapshot {
    pub(super) seq: u64,
    #[serde(default)]
    pub(super) sum: Option<String>,
    pub(super) state: State,
}

/// Hands JSON entries `from..=to` to `each`, in order.
pub(super) async fn read_entries<S: Store>(
    store: &S,
    keys: &Keys,
    from: u64,
    to: u64,
    each: &mut Visit<'_>,
) -> Result<()> {
    for seq in from..=to {
        let raw = store
            .get(&keys.log(seq))
            .await?
            .map(text)
            .transpose()?
            .ok_or_else(|| Error::Corrupt(format!("log entry {seq} is missing")))?;
        let entry: LogEntry = crate::base::codec::from_json(&raw)
            .map_err(|e| unknown_or_corrupt(e, format!("log entry {seq} does not parse")))?;
        if entry.seq != seq {
            return Err(Error::Corrupt(format!(
                "log entry {seq} claims seq {}",
                entry.seq
            )));
        }
        if each(entry, Sum::Of(raw.as_bytes()), None)? {
            break;
        }
    }
    Ok(())
}

/// The snapshot the head names, or why it cannot be used.
pub(super) async fn read_snapshot<S: Store>(
    store: &S,
    keys: &Keys,
    head: &Head,
) -> Result<core::result::Result<(u64, State), String>> {
    let Some(raw) = store.get(&keys.snapshot()).await?.map(text).transpose()? else {
        return Ok(Err("the snapshot is missing".into()));
    };
    let snap: Snapshot = match crate::base::codec::from_json(&raw) {
        Ok(s) => s,
        Err(e) => return Ok(Err(format!("the snapshot does not parse: {e}"))),
    };
    if snap.seq != head.snapshot {
        return Ok(Err(format!(
            "the head names snapshot {} but the stored one is at {}",
            head.snapshot, snap.seq
        )));
    }
    // The checksum is of the state's JSON as written: re-serialising
    // would differ (vectors are read back at f16), so take the text.
    let state_json = raw
        .find("\"state\":")
        .map(|i| raw[i + 8..raw.len() - 1].to_string())
        .unwrap_or_default();
    let sum = checksum(&state_json);
    if snap.sum.as_deref().is_some_and(|s| s != sum)
        || head.sum.as_deref().is_some_and(|s| s != sum)
    {
        return Ok(Err("the snapshot does not match its checksum".into()));
    }
    if let Err(e) = snap.state.check() {
        return Ok(Err(e.to_string()));
    }
    Ok(Ok((snap.seq, snap.state)))
}

/// Loads a format 1 or 2 memory: its snapshot and the entries after it,
/// or the whole log when the snapshot cannot be used.
pub(super) async fn load<S: Store>(store: &S, keys: &Keys) -> Result<(State, Option<String>)> {
    let (_, head) = read_head(store, keys).await?;
    let (mut state, from, warning) = if head.snapshot == 0 {
        (State::default(), 1, None)
    } else {
        match read_snapshot(store, keys, &head).await? {
            Ok((seq, mut state)) => {
                state.rebuild_derived();
                (state, seq + 1, None)
            }
            Err(why) => (State::default(), 1, Some(why)),
        }
    };
    read_entries(store, keys, from, head.seq, &mut |entry, _, _| {
        for e in &entry.events {
            state
                .apply(e)
                .map_err(|e| corrupt(&format!("log entry {}", entry.seq), e))?;
        }
        Ok(false)
    })
    .await?;
    Ok((state, warning))
}
