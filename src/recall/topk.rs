//! A bounded top-k: the `limit` best of a stream of (id, score) without
//! collecting and sorting it all, in the one ranking order of every search
//! ([`super::top`]: score descending by `total_cmp`, then id ascending).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A scored id ordered so that the better one is the smaller: the heap's
/// top is then the worst of the ones kept.
struct Ranked(u64, f64);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        other.1.total_cmp(&self.1).then(self.0.cmp(&other.0))
    }
}

/// The `limit` best of `scored` (ids distinct), best first: the same list as
/// `super::top(scored.collect(), limit)`.
pub fn best(scored: impl IntoIterator<Item = (u64, f64)>, limit: usize) -> Vec<(u64, f64)> {
    best_kept(scored, limit, |_| true)
}

/// [`best`] of the ids `keep` accepts, asking `keep` only about the ones
/// that would make the list so far (a filter is the costly part of a
/// search that touches most documents): the same list as
/// `best(scored.filter(keep), limit)`.
pub fn best_kept(
    scored: impl IntoIterator<Item = (u64, f64)>,
    limit: usize,
    keep: impl Fn(u64) -> bool,
) -> Vec<(u64, f64)> {
    if limit == 0 {
        return Vec::new();
    }
    let mut heap: BinaryHeap<Ranked> = BinaryHeap::new();
    for (id, s) in scored {
        let r = Ranked(id, s);
        if heap.len() < limit {
            if keep(id) {
                heap.push(r);
            }
        } else if heap.peek().is_some_and(|w| r < *w) && keep(id) {
            heap.pop();
            heap.push(r);
        }
    }
    heap.into_sorted_vec()
        .into_iter()
        .map(|Ranked(id, s)| (id, s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_is_the_sorted_prefix_with_ties_by_id() {
        let mut seed = 3u64;
        for limit in [0, 1, 5, 40, 200] {
            let scored: Vec<(u64, f64)> = (0..100u64)
                .map(|id| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (id * 7 % 101, ((seed >> 60) as f64) / 4.0)
                })
                .collect();
            assert_eq!(
                best(scored.clone(), limit),
                crate::recall::top(scored, limit)
            );
        }
    }

    #[test]
    fn best_kept_is_best_of_the_kept_and_asks_about_few() {
        let mut seed = 9u64;
        for limit in [0, 1, 5, 40, 200] {
            let scored: Vec<(u64, f64)> = (0..5_000u64)
                .map(|id| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (id, ((seed >> 54) as f64) / 8.0)
                })
                .collect();
            let asked = std::cell::Cell::new(0);
            let keep = |id: u64| {
                asked.set(asked.get() + 1);
                id % 3 != 1
            };
            let kept: Vec<(u64, f64)> = scored
                .iter()
                .copied()
                .filter(|&(id, _)| id % 3 != 1)
                .collect();
            assert_eq!(best_kept(scored.clone(), limit, keep), best(kept, limit));
            if limit > 0 && limit <= 40 {
                assert!(
                    asked.get() < 1_000,
                    "asked {} times for {limit}",
                    asked.get()
                );
            }
        }
    }
}
