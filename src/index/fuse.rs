//! Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009): each document
//! scores Σ 1 / (k + rank) over the ranked lists it appears in (rank from 1).
//! Lists of different scales (BM25 scores, cosines) fuse without
//! calibration.
//!
//! k is 5, not the paper's 60: the paper fused TREC runs 1,000 deep, where
//! a flat curve lets agreement far down the lists count. engram's lists are
//! 10-40 deep and are words against meaning, which disagree exactly where
//! hybrid search earns its keep (a paraphrase only meaning finds, a name
//! only words find): at k = 60 the first place of one list (1/61) lost to
//! any item both lists hold near their ends (1/71 + 1/62), and mediocre
//! items that both lists half-matched filled the top ten. Measured on the
//! LoCoMo bench (docs/bench-history.md): k = 60, 20, 10, 5, 2, 1 gave recall@10
//! 0.712, 0.710, 0.716, 0.730, 0.729, 0.727.

use std::collections::BTreeMap;

/// The fusion constant k.
pub const RRF_K: f64 = 5.0;

/// What place `rank` (from 1) of one list adds to a fused score, for a
/// list of `weight` (a search's own is 1): `weight / (k + rank)`.
pub fn share(rank: usize, weight: f64) -> f64 {
    weight / (RRF_K + rank as f64)
}

/// Fuses ranked lists of keys into one ranking, best first (ties by key),
/// at most `limit` long.
pub fn fuse<K: Ord + Clone, L: AsRef<[K]>>(lists: &[L], limit: usize) -> Vec<(K, f64)> {
    let mut scores: BTreeMap<K, f64> = BTreeMap::new();
    for list in lists {
        for (i, k) in list.as_ref().iter().enumerate() {
            *scores.entry(k.clone()).or_default() += share(i + 1, 1.0);
        }
    }
    let out: Vec<(K, f64)> = scores.into_iter().collect();
    crate::index::topk::top(out, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_prefers_documents_ranked_well_by_several_lists() {
        let fused = fuse(&[vec!["a", "b", "c"], vec!["b", "c", "a"], vec!["b"]], 10);
        assert_eq!(fused[0].0, "b");
        let expected = 1.0 / (RRF_K + 2.0) + 2.0 / (RRF_K + 1.0);
        assert!((fused[0].1 - expected).abs() < 1e-12);
    }
}
