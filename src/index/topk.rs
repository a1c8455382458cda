//! A bounded top-k: the `limit` best of a stream of (id, score) without
//! collecting and sorting it all, in the one ranking order of every search
//! ([`top`]: score descending by `total_cmp`, then id ascending).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The `limit` best of `scored`, best first, ties by key: the one ranking
/// rule of every search and of fusion, so results are the same on every host.
pub fn top<K: Ord>(mut scored: Vec<(K, f64)>, limit: usize) -> Vec<(K, f64)> {
    crate::base::sort::sort_by(&mut scored, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(limit);
    scored
}

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
    let mut top = TopK::new(limit);
    for (id, s) in scored {
        top.offer(id, s, &keep);
    }
    top.into_sorted()
}

/// The `limit` best offered so far (see [`best_kept`]), with the floor a
/// score must reach to enter.
pub struct TopK {
    heap: BinaryHeap<Ranked>,
    limit: usize,
    floor: f64,
}

impl TopK {
    /// An empty list of at most `limit`.
    pub fn new(limit: usize) -> TopK {
        TopK {
            heap: BinaryHeap::with_capacity(limit.min(1024) + 1),
            limit,
            floor: f64::NEG_INFINITY,
        }
    }

    /// The worst score kept once the list is full (minus infinity before):
    /// a score below it cannot enter (an equal one can, by its id).
    pub fn floor(&self) -> f64 {
        self.floor
    }

    /// Offers `id` with score `s`; `keep` is asked only when it would enter.
    pub fn offer(&mut self, id: u64, s: f64, keep: &impl Fn(u64) -> bool) {
        // One compare where most of a word search's documents end (`<` is
        // false for NaN and for -0 against 0, which then take the whole
        // comparison).
        if s < self.floor || self.limit == 0 {
            return;
        }
        let r = Ranked(id, s);
        if self.heap.len() < self.limit {
            if keep(id) {
                self.heap.push(r);
            }
        } else if self.heap.peek().is_some_and(|w| r < *w) && keep(id) {
            self.heap.pop();
            self.heap.push(r);
        }
        if self.heap.len() == self.limit {
            self.floor = self.heap.peek().map_or(self.floor, |w| w.1);
        }
    }

    /// The list, best first.
    pub fn into_sorted(self) -> Vec<(u64, f64)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|Ranked(id, s)| (id, s))
            .collect()
    }
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
                crate::index::topk::top(scored, limit)
            );
        }
    }

    #[test]
    fn best_ranks_nan_zeroes_and_infinities_as_the_sort_does() {
        let odd = [
            f64::NAN,
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.0,
            -1.0,
        ];
        let mut seed = 5u64;
        for limit in [1, 2, 3, 7, 50] {
            let scored: Vec<(u64, f64)> = (0..60u64)
                .map(|id| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (id, odd[(seed >> 33) as usize % odd.len()])
                })
                .collect();
            let got = best(scored.clone(), limit);
            let want = crate::index::topk::top(scored, limit);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!((g.0, g.1.to_bits()), (w.0, w.1.to_bits()));
            }
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
