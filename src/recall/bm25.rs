//! BM25 over small documents (fact sentences with their entity names,
//! passages), with k1 = 1.2 and b = 0.75 (Robertson & Zaragoza 2009), an
//! inverted index that supports replacing a document.

use std::collections::BTreeMap;

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalisation.
pub const B: f64 = 0.75;

/// Words too common to help a search.
const STOP: [&str; 40] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "so",
    "that", "the", "this", "to", "was", "we", "were", "what", "with", "you", "your",
];

/// Search terms of a text: lower-cased words without stop words.
pub fn terms(text: &str) -> Vec<String> {
    crate::text::words(text)
        .into_iter()
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

/// An inverted index over documents numbered by the caller.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bm25 {
    docs: BTreeMap<u64, (BTreeMap<String, u32>, u32)>,
    postings: BTreeMap<String, BTreeMap<u64, u32>>,
    total_len: u64,
}

impl Bm25 {
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

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The `limit` best documents for `query` accepted by `keep`, best first
    /// (ties by id), with their scores. Documents matching no term are left out.
    pub fn search(&self, query: &str, limit: usize, keep: impl Fn(u64) -> bool) -> Vec<(u64, f64)> {
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
        super::top(out, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
