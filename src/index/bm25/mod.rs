//! BM25 over small documents (fact sentences with their entity names,
//! passages), with k1 = 1.2 and b = 0.75 (Robertson & Zaragoza 2009), an
//! inverted index that supports replacing a document.
//!
//! Terms are interned to dense ids; each term's postings are an array of
//! (document slot, term frequency) in slot order; documents keep a slot for
//! life (a replaced document keeps its slot, and only the postings of terms
//! whose frequency changed are touched). A search adds each query term's
//! contribution (query terms in sorted order, as the ordered-map
//! implementation did, so every score is the same f64) into an accumulator
//! for a block of slots at a time, then keeps the best with a bounded heap.
//! Ranking: score, then id.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use crate::index::topk::TopK;

/// FNV-1a: a fixed, seedless hash for interning terms (a lookup table only:
/// nothing iterates it, so no order depends on it and every host agrees).
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        // FNV's high bits are poorly mixed for short words, and the table
        // reads its tag from them (near-equal tags cost a string compare
        // per probe): a splitmix64 finaliser mixes them.
        let mut h = self.0;
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^ (h >> 31)
    }
}

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalisation.
pub const B: f64 = 0.75;

/// Slots scored at a time by a search: 128 KB of scores and 64 KB of
/// lengths, which stay in a core's cache (512 KB of L2 on the machines of
/// `../shared/TOOLCHAIN.md`).
const BLOCK: usize = 16_384;

/// Words too common to help a search, sorted (looked up by binary search).
/// Question words are among them: a memory is searched with questions, and
/// "when" or "who" in a question says what kind of answer is wanted, not
/// what it is about.
const STOP: [&str; 57] = [
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "in", "is", "it",
    "its", "me", "my", "of", "on", "or", "our", "she", "so", "that", "the", "their", "them",
    "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why",
    "will", "with", "you", "your",
];

/// The longest stop word: longer words skip the lookup.
const STOP_MAX: usize = 5;

/// Search terms of a text: lower-cased words without stop words, stemmed
/// lightly (plural and verb endings off: "camped", "camping" and "camps"
/// all meet "camp").
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_term(text, &mut String::new(), |w| out.push(w.to_string()));
    out
}

/// Hands each of [`terms`] to `f`, in order, lower-cased in `buf` (no
/// allocation per word once `buf` is large enough): the words of
/// [`crate::base::text::words`], without the stop words, stemmed.
fn each_term(text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        buf.clear();
        match w.is_ascii() {
            true => {
                buf.push_str(w);
                buf.make_ascii_lowercase();
            }
            // (`to_lowercase` of the whole word: a final sigma depends on it.)
            false => buf.push_str(&w.to_lowercase()),
        }
        if buf.len() > STOP_MAX || STOP.binary_search(&buf.as_str()).is_err() {
            crate::base::text::stem_in_place(buf);
            f(buf);
        }
    }
}

/// Offers to `top` the documents of `chunk` (scores, `ids` alike) that
/// reach its floor, after one compare of the whole chunk (in lanes) finds
/// whether any does. A score of zero is a document no term touched.
fn offer_chunk(top: &mut TopK, chunk: &[f64], ids: &[u64], keep: &impl Fn(u64) -> bool) {
    let from = top.floor().max(f64::MIN_POSITIVE);
    if chunk.iter().fold(false, |a, &v| a | (v >= from)) {
        for (&v, &id) in chunk.iter().zip(ids) {
            if v >= from {
                top.offer(id, v, keep);
            }
        }
    }
}

/// Adds to `acc` (the scores of the block of slots from `lo` to `hi`) the
/// weight of each of `postings` in the block, up to the first whose
/// document's length `norm` does not reach; returns how many it added. Apart
/// so that its loop keeps everything in registers.
#[inline(never)]
fn add_postings(
    acc: &mut [f64; BLOCK],
    lens: &[u32],
    norm: &[f64],
    postings: &[(u32, u32)],
    lo: usize,
    hi: usize,
    idf: f64,
) -> usize {
    let mut added = 0;
    for &(slot, tf) in postings {
        let slot = slot as usize;
        if slot >= hi {
            break;
        }
        let s = slot - lo;
        let Some(&n) = norm.get(lens[s] as usize) else {
            break;
        };
        let tf = tf as f64;
        // (`s` is in the block: the mask only spares a bounds check.)
        acc[s & (BLOCK - 1)] += idf * tf * (K1 + 1.0) / (tf + n);
        added += 1;
    }
    added
}

/// Offers to `top` the documents of a block's scores `acc` (`ids` alike)
/// that reach its floor, and zeroes the scores: eight at a time, one
/// compare of the eight (in lanes) against the floor kept in a register,
/// so the documents that cannot make the list cost a compare each. (Chunks
/// of exactly eight, so their zeroing is two stores, not a call.)
#[inline(never)]
fn harvest(top: &mut TopK, acc: &mut [f64], ids: &[u64], keep: &impl Fn(u64) -> bool) {
    let mut from = top.floor().max(f64::MIN_POSITIVE);
    let mut chunks = acc.chunks_exact_mut(8);
    for (c, chunk) in (&mut chunks).enumerate() {
        let chunk: &mut [f64; 8] = chunk.try_into().expect("eight");
        if chunk.iter().fold(false, |a, &v| a | (v >= from)) {
            offer_chunk(top, chunk, &ids[c * 8..], keep);
            from = top.floor().max(f64::MIN_POSITIVE);
        }
        *chunk = [0.0; 8];
    }
    let rest = chunks.into_remainder();
    offer_chunk(top, rest, &ids[ids.len() - rest.len()..], keep);
    rest.fill(0.0);
}

/// A document: its (term id, frequency), sorted by term id, and its length.
type Doc = (Vec<(u32, u32)>, u32);

/// An inverted index over documents numbered by the caller.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bm25 {
    /// Term -> term id.
    term_ids: HashMap<String, u32, BuildHasherDefault<Fnv>>,
    /// Per term id: (document slot, term frequency), in slot order (a
    /// search walks the slots in blocks that stay in cache).
    postings: Vec<Vec<(u32, u32)>>,
    /// Document id -> slot.
    slots: BTreeMap<u64, u32>,
    /// Per slot: the document id.
    ids: Vec<u64>,
    /// Per slot: the document's (term id, frequency), sorted by term id, and
    /// its length in terms; `None` once removed.
    docs: Vec<Option<Doc>>,
    /// Per slot: the document's length in terms (0 once removed), apart
    /// from `docs` so a search reads one dense array.
    lens: Vec<u32>,
    /// Documents present.
    live: usize,
    total_len: u64,
    /// A word being lower-cased (reused between inserts).
    scratch: Scratch,
}

/// A buffer that is no part of the index's value: every two are equal.
#[derive(Debug, Clone, Default)]
struct Scratch(String);

impl PartialEq for Scratch {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A signed number as an unsigned one, small either way (0, -1, 1, -2, ...).
fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// The inverse of [`zigzag`].
fn unzigzag(n: u64) -> i64 {
    (n >> 1) as i64 ^ -((n & 1) as i64)
}

impl Bm25 {
    /// Adds (or replaces) document `id`.
    pub fn insert(&mut self, id: u64, text: &str) {
        let mut ids: Vec<u32> = Vec::new();
        each_term(text, &mut self.scratch.0, |w| {
            let t = match self.term_ids.get(w) {
                Some(&t) => t,
                None => {
                    let t = self.postings.len() as u32;
                    self.postings.push(Vec::new());
                    self.term_ids.insert(w.to_string(), t);
                    t
                }
            };
            ids.push(t);
        });
        let len = ids.len() as u32;
        crate::base::sort::sort(&mut ids);
        let mut new: Vec<(u32, u32)> = Vec::with_capacity(ids.len());
        for t in ids {
            match new.last_mut() {
                Some(last) if last.0 == t => last.1 += 1,
                _ => new.push((t, 1)),
            }
        }
        let slot = match self.slots.get(&id) {
            Some(&s) => s,
            None => {
                let s = self.ids.len() as u32;
                self.slots.insert(id, s);
                self.ids.push(id);
                self.docs.push(None);
                self.lens.push(0);
                s
            }
        };
        let old = match self.docs[slot as usize].take() {
            Some((terms, old_len)) => {
                self.total_len -= old_len as u64;
                self.live -= 1;
                terms
            }
            None => Vec::new(),
        };
        // Merge the old and new term lists (both sorted by term id).
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < new.len() {
            let o = old.get(i).copied();
            let n = new.get(j).copied();
            match (o, n) {
                (Some(a), Some(b)) if a.0 == b.0 => {
                    if a.1 != b.1 {
                        self.set(b.0, slot, Some(b.1));
                    }
                    i += 1;
                    j += 1;
                }
                (Some(a), Some(b)) if a.0 < b.0 => {
                    self.set(a.0, slot, None);
                    i += 1;
                }
                (Some(a), None) => {
                    self.set(a.0, slot, None);
                    i += 1;
                }
                (_, Some(b)) => {
                    self.set(b.0, slot, Some(b.1));
                    j += 1;
                }
                (None, None) => break,
            }
        }
        self.total_len += len as u64;
        self.live += 1;
        self.docs[slot as usize] = Some((new, len));
        self.lens[slot as usize] = len;
    }

    /// Sets (or with `None` removes) the posting of `slot` under `term`;
    /// a new posting goes to its place in slot order.
    fn set(&mut self, term: u32, slot: u32, tf: Option<u32>) {
        let p = &mut self.postings[term as usize];
        if let Some(tf) = tf.filter(|_| p.last().is_none_or(|&(last, _)| last < slot)) {
            p.push((slot, tf));
            return;
        }
        match (p.binary_search_by_key(&slot, |&(s, _)| s), tf) {
            (Ok(i), Some(tf)) => p[i].1 = tf,
            (Ok(i), None) => {
                p.remove(i);
            }
            (Err(i), Some(tf)) => p.insert(i, (slot, tf)),
            (Err(_), None) => {}
        }
    }

    /// Removes document `id` if present.
    pub fn remove(&mut self, id: u64) {
        let Some(&slot) = self.slots.get(&id) else {
            return;
        };
        if let Some((terms, len)) = self.docs[slot as usize].take() {
            for (term, _) in terms {
                self.set(term, slot, None);
            }
            self.total_len -= len as u64;
            self.live -= 1;
            self.lens[slot as usize] = 0;
        }
    }

    /// Ids of the documents holding search term `term` (as [`terms`] gives
    /// them), in slot order.
    pub fn documents_with(&self, term: &str) -> Vec<u64> {
        self.term_ids.get(term).map_or(Vec::new(), |&t| {
            self.postings[t as usize]
                .iter()
                .map(|&(slot, _)| self.ids[slot as usize])
                .collect()
        })
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Ids of the documents present, in slot order.
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.ids
            .iter()
            .zip(&self.docs)
            .filter(|(_, d)| d.is_some())
            .map(|(&id, _)| id)
    }

    /// Appends the index's compact bytes to `out` (read back by
    /// [`Bm25::read`] into an equal index): the terms in id order, then per
    /// slot its document id and length (0 for a removed document, else the
    /// length plus one), then per term its postings as stored. The documents'
    /// term lists are not written: they are the postings turned around.
    /// Document ids and each term's slots are written as the difference from
    /// the one before (zigzag, as removals can leave a term's postings out
    /// of slot order), the slot's difference doubled with its low bit set
    /// when the frequency is not 1 (then written after it): most postings
    /// take one byte.
    pub fn write(&self, out: &mut Vec<u8>) {
        use crate::base::codec::wire::put_varint;
        let mut terms: Vec<&str> = vec![""; self.postings.len()];
        for (w, &t) in &self.term_ids {
            terms[t as usize] = w;
        }
        put_varint(out, terms.len() as u64);
        for w in terms {
            put_varint(out, w.len() as u64);
            out.extend_from_slice(w.as_bytes());
        }
        put_varint(out, self.ids.len() as u64);
        let mut prev = 0u64;
        for (slot, &id) in self.ids.iter().enumerate() {
            put_varint(out, zigzag(id.wrapping_sub(prev) as i64));
            prev = id;
            let len = match &self.docs[slot] {
                Some((_, len)) => *len as u64 + 1,
                None => 0,
            };
            put_varint(out, len);
        }
        for p in &self.postings {
            put_varint(out, p.len() as u64);
            let mut prev = 0u32;
            for &(slot, tf) in p {
                let step = zigzag(slot as i64 - prev as i64) << 1;
                prev = slot;
                if tf == 1 {
                    put_varint(out, step);
                } else {
                    put_varint(out, step | 1);
                    put_varint(out, tf as u64);
                }
            }
        }
    }

    /// Reads an index written by [`Bm25::write`] from `input` at `*at`.
    /// Anything that does not make a consistent index is an error (never a
    /// panic): a term twice, a slot or term out of range, a posting of a
    /// removed document or twice in a document, a document whose postings
    /// do not add up to its length.
    pub fn read(input: &[u8], at: &mut usize) -> Result<Bm25, String> {
        let num = |at: &mut usize| {
            crate::base::codec::wire::get_varint(input, at).map_err(|e| e.to_string())
        };
        // A count can be no larger than the bytes left (each item takes one).
        let count = |at: &mut usize| -> Result<usize, String> {
            let n = num(at)?;
            match n <= (input.len() - *at) as u64 {
                true => Ok(n as usize),
                false => Err(format!("a count of {n} runs past the end")),
            }
        };
        let small =
            |n: u64, what: &str| u32::try_from(n).map_err(|_| format!("{what} {n} too large"));
        let mut ix = Bm25::default();
        let terms = count(at)?;
        ix.term_ids.reserve(terms);
        for t in 0..terms {
            let n = count(at)?;
            let w = std::str::from_utf8(&input[*at..*at + n]).map_err(|_| "a term is not UTF-8")?;
            *at += n;
            if ix.term_ids.insert(w.to_string(), t as u32).is_some() {
                return Err(format!("term {w:?} twice"));
            }
        }
        let slots = count(at)?;
        ix.ids.reserve(slots);
        ix.lens.reserve(slots);
        let mut present = Vec::with_capacity(slots);
        let mut prev = 0u64;
        for slot in 0..slots {
            let id = prev.wrapping_add(unzigzag(num(at)?) as u64);
            prev = id;
            let len = num(at)?;
            ix.ids.push(id);
            present.push(len > 0);
            ix.lens.push(small(len.saturating_sub(1), "a length of")?);
            if len > 0 {
                ix.live += 1;
                ix.total_len += len - 1;
            }
            if ix.slots.insert(id, slot as u32).is_some() {
                return Err(format!("document {id} twice"));
            }
        }
        // Each document's terms: counted first, so each list is allocated
        // once; filled in term order, so each is sorted by term id.
        let mut postings = Vec::with_capacity(terms);
        let mut per_doc = vec![0u32; slots];
        for _ in 0..terms {
            let n = count(at)?;
            let mut p = Vec::with_capacity(n);
            let mut prev = 0i64;
            for _ in 0..n {
                let step = num(at)?;
                let slot = prev.saturating_add(unzigzag(step >> 1));
                prev = slot;
                let tf = match step & 1 {
                    0 => 1,
                    _ => small(num(at)?, "a frequency of")?,
                };
                let fits = usize::try_from(slot)
                    .ok()
                    .filter(|&s| s < slots && present[s] && (step & 1 == 0 || tf > 1));
                let Some(slot) = fits else {
                    return Err(format!(
                        "a posting of slot {slot} ({tf} times) fits no document"
                    ));
                };
                per_doc[slot] += 1;
                p.push((slot as u32, tf));
            }
            // (An index written before postings were kept in slot order.)
            if !p.is_sorted_by_key(|&(slot, _)| slot) {
                crate::base::sort::sort_by_key(&mut p, |&(slot, _)| slot);
            }
            postings.push(p);
        }
        let mut docs: Vec<Option<Doc>> = per_doc
            .iter()
            .zip(&present)
            .zip(&ix.lens)
            .map(|((&n, &here), &len)| here.then(|| (Vec::with_capacity(n as usize), len)))
            .collect();
        let mut sums = vec![0u64; slots];
        for (t, p) in postings.iter().enumerate() {
            for &(slot, tf) in p {
                let (terms, _) = docs[slot as usize].as_mut().expect("present");
                if terms.last().is_some_and(|&(last, _)| last == t as u32) {
                    return Err(format!("slot {slot} has term {t} twice"));
                }
                terms.push((t as u32, tf));
                sums[slot as usize] += tf as u64;
            }
        }
        if let Some(slot) = (0..slots).find(|&s| present[s] && sums[s] != ix.lens[s] as u64) {
            return Err(format!(
                "document in slot {slot} does not add up to its length"
            ));
        }
        ix.postings = postings;
        ix.docs = docs;
        Ok(ix)
    }

    /// The `limit` best documents for `query` accepted by `keep`, best first
    /// (ties by id), with their scores. Documents matching no term are left out.
    pub fn search(&self, query: &str, limit: usize, keep: impl Fn(u64) -> bool) -> Vec<(u64, f64)> {
        self.search_terms(terms(query), limit, keep)
    }

    /// Documents holding `term` (a search term, as [`terms`] gives them).
    pub fn document_frequency(&self, term: &str) -> usize {
        self.term_ids
            .get(term)
            .map_or(0, |&t| self.postings[t as usize].len())
    }

    /// [`Bm25::search`] by search terms already split (and stemmed).
    pub fn search_terms(
        &self,
        q: Vec<String>,
        limit: usize,
        keep: impl Fn(u64) -> bool,
    ) -> Vec<(u64, f64)> {
        self.ranked(q, limit, &keep)
    }

    /// [`Bm25::search_terms`] with `keep` behind a pointer: one copy of the
    /// scoring loop for every caller (each caller's closure made its own;
    /// `keep` is asked only about documents that would make the top).
    fn ranked(
        &self,
        mut q: Vec<String>,
        limit: usize,
        keep: &dyn Fn(u64) -> bool,
    ) -> Vec<(u64, f64)> {
        let n = self.live as f64;
        if n == 0.0 || limit == 0 {
            return Vec::new();
        }
        let avg = (self.total_len as f64 / n).max(1.0);
        crate::base::sort::sort(&mut q);
        q.dedup();
        // The query's terms present: their postings and weights.
        let lists: Vec<(&[(u32, u32)], f64)> = q
            .iter()
            .filter_map(|w| self.term_ids.get(w.as_str()))
            .map(|&t| self.postings[t as usize].as_slice())
            .filter(|p| !p.is_empty())
            .map(|p| {
                let df = p.len() as f64;
                (p, ((n - df + 0.5) / (df + 0.5) + 1.0).ln())
            })
            .collect();
        // The slots are scored a block at a time, each term's postings
        // (in slot order) read up to the block's end: the block's scores
        // and lengths stay in cache, where a pass over all slots per term
        // missed it on every posting once the memory outgrew it. Each
        // document still adds its terms in the query's order, so every
        // score is the same f64. Every posting adds without a branch on
        // the document (a branch taken at random for the first touch
        // stalled the division behind it). A score above zero marks a
        // document touched (every term adds more than zero), and the block
        // is then read eight scores at a time against the list's floor, so
        // the documents that cannot make the list cost a compare each, in
        // lanes; `keep` is asked only about the documents that would make
        // the list.
        let mut acc: Box<[f64; BLOCK]> = vec![0.0f64; BLOCK].try_into().expect("a block");
        let mut at = vec![0usize; lists.len()];
        // Per document length: the length part of the denominator, the
        // same operations in the same order as written out, so scores stay
        // bit for bit those of the formula; one division a posting instead
        // of two. Grown to the longest length met.
        let mut norm: Vec<f64> = Vec::new();
        let mut top = TopK::new(limit);
        let slots = self.ids.len();
        let mut lo = 0usize;
        while lo < slots {
            let hi = (lo + BLOCK).min(slots);
            let lens = &self.lens[lo..hi];
            let starts = at.clone();
            for (&(p, idf), at) in lists.iter().zip(&mut at) {
                loop {
                    *at += add_postings(&mut acc, lens, &norm, &p[*at..], lo, hi, idf);
                    // Stopped at the block's end, or at a length `norm`
                    // does not reach yet: grown, and on.
                    match p.get(*at) {
                        Some(&(slot, _)) if (slot as usize) < hi => {
                            let len = lens[slot as usize - lo] as usize;
                            let from = norm.len();
                            norm.extend((from..=len).map(|l| K1 * (1.0 - B + B * l as f64 / avg)));
                        }
                        _ => break,
                    }
                }
            }
            let ids = &self.ids[lo..hi];
            let read: usize = at.iter().zip(&starts).map(|(a, s)| a - s).sum();
            if read < BLOCK / 16 {
                // Few postings (a rare word, a small index): the documents
                // they touched, each taken once (its score zeroed as it is
                // read), instead of a pass over the whole block.
                for ((&(p, _), &from), &to) in lists.iter().zip(&starts).zip(&at) {
                    for &(slot, _) in &p[from..to] {
                        let s = slot as usize - lo;
                        let v = std::mem::take(&mut acc[s]);
                        offer_chunk(&mut top, &[v], &ids[s..], &keep);
                    }
                }
                lo = hi;
                continue;
            }
            harvest(&mut top, &mut acc[..hi - lo], ids, &keep);
            lo = hi;
        }
        top.into_sorted()
    }
}

#[cfg(test)]
mod tests;
