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
        crate::index::topk::top(out, limit)
    }
}

/// A seeded pseudo-random `0..m` (a linear congruential generator).
fn lcg(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |m| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % m
    }
}

#[test]
fn stop_words_are_sorted_for_their_binary_search() {
    assert!(STOP.windows(2).all(|w| w[0] < w[1]));
    assert!(STOP.iter().all(|w| w.len() <= STOP_MAX));
    assert_eq!(
        terms("The ÉCOLE of Ὀδυσσεύς and ΣΟΦΟΣ, it's 42"),
        crate::base::text::words("The ÉCOLE of Ὀδυσσεύς and ΣΟΦΟΣ, it's 42")
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
fn an_index_read_back_from_its_bytes_is_equal_and_damage_is_an_error() {
    let words = [
        "lisbon", "offsite", "budget", "api", "billing", "may", "ana", "team",
    ];
    let mut next = lcg(5);
    let mut ix = Bm25::default();
    let mut bytes = Vec::new();
    ix.write(&mut bytes);
    assert_eq!(Bm25::read(&bytes, &mut 0), Ok(Bm25::default()));
    for step in 0..400 {
        let id = next(60) as u64 * 7 + 1;
        match step % 7 {
            3 => ix.remove(id),
            _ => {
                let text: Vec<&str> = (0..next(9)).map(|_| words[next(words.len())]).collect();
                ix.insert(id, &text.join(" "));
            }
        }
    }
    // Replacements and removals keep every term's postings in slot
    // order (a search reads them a block of slots at a time), and some
    // documents hold a word twice.
    assert!(ix
        .postings
        .iter()
        .all(|p| p.windows(2).all(|w| w[0].0 < w[1].0)));
    assert!(ix.postings.iter().flatten().any(|&(_, tf)| tf > 1));
    // An index written before postings were kept in order (negative
    // differences) reads back in order.
    let mut shuffled = ix.clone();
    for p in &mut shuffled.postings {
        p.reverse();
    }
    let mut old = Vec::new();
    shuffled.write(&mut old);
    assert_eq!(Bm25::read(&old, &mut 0), Ok(ix.clone()));
    ix.insert(u64::MAX, "budget budget api");
    ix.insert(0, "api");
    let mut bytes = vec![9];
    ix.write(&mut bytes);
    let mut at = 1;
    let back = Bm25::read(&bytes, &mut at).expect("reads");
    assert_eq!(at, bytes.len());
    assert_eq!(back, ix);
    assert_eq!(back.ids().collect::<Vec<_>>(), ix.ids().collect::<Vec<_>>());
    for cut in 1..bytes.len() {
        assert!(Bm25::read(&bytes[..cut], &mut 1).is_err(), "cut at {cut}");
    }
    for i in 1..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x41;
        // Read or refused, never a panic; an index that reads is whole.
        if let Ok(d) = Bm25::read(&b, &mut 1) {
            let _ = d.search("lisbon budget", 5, |_| true);
        }
    }
}

#[test]
fn bm25_scores_and_ranks_as_the_ordered_map_index_on_random_documents() {
    let words = [
        "lisbon", "offsite", "budget", "api", "billing", "may", "ana", "team", "launch", "price",
        "the", "and", "plan", "date", "venue", "hotel", "flight", "cost",
    ];
    let mut next = lcg(11);
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

#[test]
fn bm25_scores_documents_across_many_slot_blocks_as_the_ordered_map_index() {
    // A vocabulary drawn with a Zipf law, as real text: the commonest
    // words are in most documents of every block.
    let words: Vec<String> = (0..60).map(|i| format!("w{i}x")).collect();
    let weights: Vec<f64> = (0..words.len()).map(|i| 1.0 / (i + 1) as f64).collect();
    let total: f64 = weights.iter().sum();
    let mut next = lcg(17);
    let word = |next: &mut dyn FnMut(usize) -> usize| {
        let mut r = next(1 << 20) as f64 / (1 << 20) as f64 * total;
        for (w, &p) in words.iter().zip(&weights) {
            if r < p {
                return w.clone();
            }
            r -= p;
        }
        words[0].clone()
    };
    let text = |next: &mut dyn FnMut(usize) -> usize| {
        let n = 1 + next(9);
        (0..n).map(|_| word(next)).collect::<Vec<_>>().join(" ")
    };
    let (mut new, mut old) = (Bm25::default(), OldBm25::default());
    let docs = 2 * BLOCK as u64 + 300;
    for id in 0..docs {
        let t = text(&mut next);
        new.insert(id, &t);
        old.insert(id, &t);
    }
    // Documents replaced and removed in every block: their postings go
    // back to their place in slot order.
    for _ in 0..300 {
        let id = next(docs as usize) as u64;
        match next(3) {
            0 => {
                new.remove(id);
                old.remove(id);
            }
            _ => {
                let t = text(&mut next);
                new.insert(id, &t);
                old.insert(id, &t);
            }
        }
    }
    let mut later_blocks = 0;
    for round in 0..60 {
        let query = (0..1 + next(6))
            .map(|_| word(&mut next))
            .collect::<Vec<_>>();
        let query = query.join(" ");
        let limit = [1, 10, 40, 5_000][round % 4];
        let keep = |id: u64| id % 7 != 3;
        let got = new.search(&query, limit, keep);
        assert_eq!(got, old.search(&query, limit, keep), "{query}");
        later_blocks += got.iter().filter(|&&(id, _)| id >= BLOCK as u64).count();
    }
    assert!(
        later_blocks > 1_000,
        "{later_blocks} hits past the first block"
    );
}
