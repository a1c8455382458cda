//! The derived index copies: stored meaning graphs and word indexes
//! (derived data: a copy that does not fit is not used).

use crate::base::bytes::value_checksum;
use crate::base::codec;
use crate::base::host::{Store, StoreError};
use crate::state::State;
use crate::store::{Head, Keys, LogPosition};

/// The key names of the meaning graphs, in [`State::meaning_indexes`]' order.
pub(super) const GRAPHS: [&str; 3] = ["facts", "passages", "entities"];

/// Reads the stored meaning graphs into `state`'s indexes (derived data: a
/// graph that is missing, unreadable or built on other rows is not used,
/// search over those rows is exact, and `maintain` links them again).
/// Returns why a stored graph was not used.
pub(super) async fn load_graphs<S: Store>(
    store: &S,
    state: &mut State,
    pos: &mut LogPosition,
) -> Vec<String> {
    let mut warnings = Vec::new();
    for (kind, (name, index)) in GRAPHS.iter().zip(state.meaning_indexes_mut()).enumerate() {
        pos.graphs[kind] = 0;
        if index.len() < crate::index::vector::GRAPH_MIN_ROWS {
            continue;
        }
        match store.get(&pos.keys.graph(name)).await {
            Ok(None) => {}
            Ok(Some(bytes)) => match index.graph_from_bytes(&bytes) {
                Ok(()) => pos.graphs[kind] = index.graph_stats().rows,
                Err(e) => warnings.push(format!(
                    "the stored meaning graph of {name} was not used ({}): search over them is exact until maintain links them again",
                    e.0
                )),
            },
            Err(e) => warnings.push(format!(
                "the stored meaning graph of {name} could not be read ({e}): search over them is exact until maintain links them again"
            )),
        }
    }
    warnings
}

/// Writes each meaning graph that grew by at least
/// [`crate::index::vector::GRAPH_MIN_ROWS`] rows or an eighth since it was
/// last read or written (so the bytes written over a memory's life stay a
/// small multiple of its graph's size), with a plain `put` outside the log:
/// a graph is derived data, checked against the rows when it is read, and
/// every handle builds the same one from the same rows. Returns why a graph
/// could not be written (the next call tries again).
pub async fn save_graphs<S: Store>(store: &S, pos: &mut LogPosition, state: &State) -> Vec<String> {
    let mut warnings = Vec::new();
    for (kind, (name, index)) in GRAPHS.iter().zip(state.meaning_indexes()).enumerate() {
        let rows = index.graph_stats().rows;
        if rows < pos.graphs[kind] {
            // Rebuilt since (an erasure): the stored graph no longer fits.
            pos.graphs[kind] = 0;
        }
        let saved = pos.graphs[kind];
        let step = crate::index::vector::GRAPH_MIN_ROWS.max(saved / 8);
        if rows == 0 || (saved > 0 && rows < saved + step) || rows == saved {
            continue;
        }
        match store.put(&pos.keys.graph(name), &index.to_bytes()).await {
            Ok(()) => pos.graphs[kind] = rows,
            Err(e) => warnings.push(format!(
                "the meaning graph of {name} could not be saved ({e}): the next call tries again"
            )),
        }
    }
    warnings
}

/// Word indexes smaller than this (documents of facts and passages) are
/// not stored: building them at load takes a few milliseconds.
pub const WORDS_MIN_DOCS: usize = 4096;

pub(super) const WORDS_MAGIC: &[u8; 4] = b"EWIX";
/// The stored word index's layout and the search terms in it: any change to
/// [`crate::index::bm25::terms`] (stop words, stemming) bumps it, so a copy
/// of other terms is rebuilt rather than searched with the wrong words.
/// Version 3 writes document ids and postings as differences (about half
/// the bytes of version 2, which is rebuilt from the log once).
pub(super) const WORDS_VERSION: u8 = 3;

/// Why stored word indexes were not used, as a storage warning.
pub(super) fn words_warning(why: &str) -> String {
    format!("the stored word index was not used ({why}): built from the log instead")
}

/// Word indexes as stored: saved after entry `seq` (whose stored body had
/// checksum `sum`), their bytes not read yet.
pub(super) struct StoredWords {
    pub(super) seq: u64,
    pub(super) sum: u64,
    pub(super) body: Vec<u8>,
}

impl StoredWords {
    /// Puts the indexes in place in `state`, which has applied entries up to
    /// `seq`, whose body has checksum `sum`.
    pub(super) fn restore(self, state: &mut State, sum: u64) -> core::result::Result<(), String> {
        if sum != self.sum {
            return Err(format!("saved after another entry {}", self.seq));
        }
        let mut at = 0;
        let facts = crate::index::bm25::Bm25::read(&self.body, &mut at)?;
        let passages = crate::index::bm25::Bm25::read(&self.body, &mut at)?;
        if at != self.body.len() {
            return Err("bytes left over".into());
        }
        state
            .restore_word_indexes(facts, passages)
            .map_err(|e| e.to_string())
    }
}

/// The stored word indexes of a format-3 namespace whose head is `head`:
/// none when there are none; an error saying why they cannot be used
/// (unreadable, damaged, saved before an erasure rewrote the log or after
/// its end).
pub(super) async fn read_words<S: Store>(
    store: &S,
    keys: &Keys,
    head: &Head,
) -> core::result::Result<Option<StoredWords>, String> {
    if head.version < 3 {
        return Ok(None);
    }
    let raw = match store.get(&keys.words()).await {
        Ok(Some(raw)) => raw,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("could not be read: {e}")),
    };
    if raw.len() < 5 || &raw[..4] != WORDS_MAGIC || raw[4] != WORDS_VERSION {
        return Err("not an engram word index of this version".into());
    }
    let mut at = 5;
    let num = |at: &mut usize| codec::wire::get_varint(&raw, at).map_err(|e| e.to_string());
    let seq = num(&mut at)?;
    let rewrites = num(&mut at)?;
    let word = |at: usize| -> core::result::Result<u64, String> {
        raw.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .ok_or_else(|| "truncated".to_string())
    };
    let sum = word(at)?;
    let check = word(at + 8)?;
    let body = &raw[at + 16..];
    if value_checksum(body) != check {
        return Err("does not match its checksum".into());
    }
    if rewrites != head.rewrites {
        return Err("saved before an erasure rewrote the log".into());
    }
    if seq == 0 || seq > head.seq {
        return Err(format!(
            "saved after entry {seq}, past the log's end at {}",
            head.seq
        ));
    }
    Ok(Some(StoredWords {
        seq,
        sum,
        body: body.to_vec(),
    }))
}

/// Writes the word indexes of `state` (at `pos`) when they hold at least
/// [`WORDS_MIN_DOCS`] documents and grew by that many or an eighth since
/// last read or written. Like the meaning graphs they are derived data, so
/// a stale, damaged or missing copy is rebuilt at load (and reported); they
/// are bound to the log entry they were saved after (its position, its
/// body's checksum and the erasures so far) and written with `write_if` on
/// the head this handle holds, so a copy never outlives an erasure that
/// rewrote the log (which deletes it in the same write). Returns why they
/// could not be written (the next call tries again).
pub async fn save_words<S: Store>(store: &S, pos: &mut LogPosition, state: &State) -> Vec<String> {
    let docs = state.fact_index.len() + state.passage_index.len();
    let saved = pos.words;
    let step = WORDS_MIN_DOCS.max(saved / 8);
    if pos.version < 3 || state.words_deferred || docs < WORDS_MIN_DOCS {
        return Vec::new();
    }
    if saved > 0 && docs < saved + step {
        return Vec::new();
    }
    let (Some(sum), Some(head)) = (pos.last_sum, pos.head_raw.as_deref()) else {
        return Vec::new();
    };
    let mut body = Vec::new();
    state.fact_index.write(&mut body);
    state.passage_index.write(&mut body);
    let mut value = Vec::with_capacity(body.len() + 40);
    value.extend_from_slice(WORDS_MAGIC);
    value.push(WORDS_VERSION);
    codec::wire::put_varint(&mut value, pos.seq);
    codec::wire::put_varint(&mut value, pos.rewrites);
    value.extend_from_slice(&sum.to_le_bytes());
    value.extend_from_slice(&value_checksum(&body).to_le_bytes());
    value.extend_from_slice(&body);
    let writes = [(pos.keys.words(), Some(value))];
    match store.write_if(&pos.keys.head(), Some(head), &writes).await {
        Ok(()) => {
            pos.words = docs;
            Vec::new()
        }
        // Another writer moved the log: a later call saves.
        Err(StoreError::Conflict) => Vec::new(),
        Err(e) => vec![format!(
            "the word index could not be saved ({e}): the next call tries again"
        )],
    }
}
