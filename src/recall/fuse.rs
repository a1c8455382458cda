//! Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009): each document
//! scores Σ 1 / (k + rank) over the ranked lists it appears in (rank from 1),
//! with k = 60 as in the paper. Lists of different scales (BM25 scores,
//! cosines) fuse without calibration.

use std::collections::BTreeMap;

/// The fusion constant k.
pub const RRF_K: f64 = 60.0;

/// Fuses ranked lists of keys into one ranking, best first (ties by key),
/// at most `limit` long.
pub fn fuse<K: Ord + Clone>(lists: &[Vec<K>], limit: usize) -> Vec<(K, f64)> {
    let mut scores: BTreeMap<K, f64> = BTreeMap::new();
    for list in lists {
        for (i, k) in list.iter().enumerate() {
            *scores.entry(k.clone()).or_default() += 1.0 / (RRF_K + i as f64 + 1.0);
        }
    }
    let out: Vec<(K, f64)> = scores.into_iter().collect();
    super::top(out, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_prefers_documents_ranked_well_by_several_lists() {
        let fused = fuse(&[vec!["a", "b", "c"], vec!["b", "c", "a"], vec!["b"]], 10);
        assert_eq!(fused[0].0, "b");
        assert!((fused[0].1 - (1.0 / 62.0 + 2.0 / 61.0)).abs() < 1e-12);
    }
}
