//! BM25 over small documents (fact sentences with their entity names,
//! passages), with k1 = 1.2 and b = 0.75 (Robertson & Zaragoza 2009), an
//! inverted index that supports replacing a document.
//!
//! Terms are interned to dense ids; each term's postings are an array of
//! (document slot, term frequency); documents keep a slot for life (a
//! replaced document keeps its slot, and only the postings of terms whose
//! frequency changed are touched). A search adds each query term's
//! contribution (query terms in sorted order, as the ordered-map
//! implementation did, so every score is the same f64) into a dense
//! accumulator indexed by slot, then keeps the best with a bounded heap.
//! Ranking: score, then id.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

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

/// Words too common to help a search, sorted (looked up by binary search).
const STOP: [&str; 40] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "so",
    "that", "the", "this", "to", "was", "we", "were", "what", "with", "you", "your",
];

/// The longest stop word: longer words skip the lookup.
const STOP_MAX: usize = 4;

/// Search terms of a text: lower-cased words without stop words.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_term(text, &mut String::new(), |w| out.push(w.to_string()));
    out
}

/// Hands each of [`terms`] to `f`, in order, lower-cased in `buf` (no
/// allocation per word once `buf` is large enough): the words of
/// [`crate::text::words`], without the stop words.
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
            f(buf);
        }
    }
}

/// A document: its (term id, frequency), sorted by term id, and its length.
type Doc = (Vec<(u32, u32)>, u32);

/// An inverted index over documents numbered by the caller.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bm25 {
    /// Term -> term id.
    term_ids: HashMap<String, u32, BuildHasherDefault<Fnv>>,
    /// Per term id: (document slot, term frequency), in no order.
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
        ids.sort_unstable();
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
                    self.postings[b.0 as usize].push((slot, b.1));
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

    /// Sets (or with `None` removes) the posting of `slot` under `term`.
    fn set(&mut self, term: u32, slot: u32, tf: Option<u32>) {
        let p = &mut self.postings[term as usize];
        if let Some(i) = p.iter().position(|&(s, _)| s == slot) {
            match tf {
                Some(tf) => p[i].1 = tf,
                None => {
                    p.swap_remove(i);
                }
            }
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

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The `limit` best documents for `query` accepted by `keep`, best first
    /// (ties by id), with their scores. Documents matching no term are left out.
    pub fn search(&self, query: &str, limit: usize, keep: impl Fn(u64) -> bool) -> Vec<(u64, f64)> {
        let n = self.live as f64;
        if n == 0.0 || limit == 0 {
            return Vec::new();
        }
        let avg = (self.total_len as f64 / n).max(1.0);
        let mut q = terms(query);
        q.sort();
        q.dedup();
        // Per slot: 0 untouched, < 0 refused by `keep`, else the score so far
        // (every contribution is positive: idf > 0 and tf >= 1).
        let mut acc = vec![0.0f64; self.ids.len()];
        let mut touched: Vec<u32> = Vec::new();
        for w in &q {
            let Some(p) = self
                .term_ids
                .get(w.as_str())
                .map(|&t| &self.postings[t as usize])
            else {
                continue;
            };
            if p.is_empty() {
                continue;
            }
            let df = p.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(slot, tf) in p {
                let a = &mut acc[slot as usize];
                if *a < 0.0 {
                    continue;
                }
                if *a == 0.0 {
                    touched.push(slot);
                    if !keep(self.ids[slot as usize]) {
                        *a = -1.0;
                        continue;
                    }
                }
                let len = self.lens[slot as usize] as f64;
                let tf = tf as f64;
                *a += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg));
            }
        }
        super::topk::best(
            touched
                .into_iter()
                .map(|s| (self.ids[s as usize], acc[s as usize]))
                .filter(|&(_, a)| a > 0.0),
            limit,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The ordered-map implementation this index replaced, kept to check
    /// that scores and rankings did not change.
    /// An inverted index over documents numbered by the caller.
    #[derive(Default)]
    pub struct OldBm25 {
        docs: BTreeMap<u64, (BTreeMap<String, u32>, u32)>,
        postings: BTreeMap<String, BTreeMap<u64, u32>>,
        total_len: u64,
    }

    impl OldBm25 {
        /// Adds (or replaces) document `id`.
        pub fn insert(&mut self, id: u64, text: &str) {
            self.remove(id);
            let mut tf: BTreeMap<String, u32> = BTreeMap::new();
            let t = terms(text);
            for w in &t {
                *tf.entry(w.clone()).or_default() += 1;
            }
            for (w, n) in &tf {
                self.postings.entry(w.clone()).or_default().insert(id, *n);
            }
            self.total_len += t.len() as u64;
            self.docs.insert(id, (tf, t.len() as u32));
        }

        /// Removes document `id` if present.
        pub fn remove(&mut self, id: u64) {
            if let Some((tf, len)) = self.docs.remove(&id) {
                for w in tf.keys() {
                    if let Some(p) = self.postings.get_mut(w) {
                        p.remove(&id);
                        if p.is_empty() {
                            self.postings.remove(w);
                        }
                    }
                }
                self.total_len -= len as u64;
            }
        }

        /// Number of documents.
        pub fn len(&self) -> usize {
            self.docs.len()
        }

        /// The `limit` best documents for `query` accepted by `keep`, best first
        /// (ties by id), with their scores. Documents matching no term are left out.
        pub fn search(
            &self,
            query: &str,
            limit: usize,
            keep: impl Fn(u64) -> bool,
        ) -> Vec<(u64, f64)> {
            let n = self.docs.len() as f64;
            if n == 0.0 {
                return Vec::new();
            }
            let avg = (self.total_len as f64 / n).max(1.0);
            let mut q = terms(query);
            q.sort();
            q.dedup();
            let mut scores: BTreeMap<u64, f64> = BTreeMap::new();
            for w in &q {
                let Some(p) = self.postings.get(w) else {
                    continue;
                };
                let df = p.len() as f64;
                let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                for (&id, &tf) in p {
                    if !keep(id) {
                        continue;
                    }
                    let len = self.docs[&id].1 as f64;
                    let tf = tf as f64;
                    *scores.entry(id).or_default() +=
                        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg));
                }
            }
            let out: Vec<(u64, f64)> = scores.into_iter().collect();
            crate::recall::top(out, limit)
        }
    }

    #[test]
    fn stop_words_are_sorted_for_their_binary_search() {
        assert!(STOP.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP.iter().all(|w| w.len() <= STOP_MAX));
        assert_eq!(
            terms("The ÉCOLE of Ὀδυσσεύς and ΣΟΦΟΣ, it's 42"),
            crate::text::words("The ÉCOLE of Ὀδυσσεύς and ΣΟΦΟΣ, it's 42")
                .into_iter()
                .filter(|w| STOP.binary_search(&w.as_str()).is_err())
                .collect::<Vec<_>>()
        );
        assert_eq!(terms("What is the plan for Lisbon"), ["plan", "lisbon"]);
    }

    #[test]
    fn bm25_ranks_the_document_with_the_rare_term_first() {
        let mut ix = Bm25::default();
        ix.insert(1, "The offsite is in Lisbon");
        ix.insert(2, "The billing API ships in May");
        ix.insert(3, "Lisbon Lisbon offsite budget");
        let hits = ix.search("budget for Lisbon", 10, |_| true);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![3, 1]);
    }

    #[test]
    fn bm25_replacing_a_document_forgets_its_old_terms() {
        let mut ix = Bm25::default();
        ix.insert(1, "alpha beta");
        ix.insert(1, "gamma");
        assert!(ix.search("alpha", 10, |_| true).is_empty());
        assert_eq!(ix.search("gamma", 10, |_| true)[0].0, 1);
        assert_eq!(ix.len(), 1);
    }

    #[test]
    fn bm25_scores_and_ranks_as_the_ordered_map_index_on_random_documents() {
        let words = [
            "lisbon", "offsite", "budget", "api", "billing", "may", "ana", "team", "launch",
            "price", "the", "and", "plan", "date", "venue", "hotel", "flight", "cost",
        ];
        let mut seed = 11u64;
        let mut next = |m: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % m
        };
        let (mut new, mut old) = (Bm25::default(), OldBm25::default());
        for step in 0..600 {
            let id = next(150) as u64 + 1;
            if step % 9 == 4 {
                new.remove(id);
                old.remove(id);
            } else {
                let text: Vec<&str> = (0..next(12)).map(|_| words[next(words.len())]).collect();
                new.insert(id, &text.join(" "));
                old.insert(id, &text.join(" "));
            }
            assert_eq!(new.len(), old.len());
            if step % 5 == 0 {
                let query: Vec<&str> = (0..1 + next(4)).map(|_| words[next(words.len())]).collect();
                let query = query.join(" ");
                let limit = [1, 5, 20, 500][next(4)];
                let keep = |id: u64| id % 5 != 2;
                assert_eq!(
                    new.search(&query, limit, keep),
                    old.search(&query, limit, keep),
                    "step {step}: {query}"
                );
            }
        }
    }
}
