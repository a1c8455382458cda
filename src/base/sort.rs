//! The one sort of the crate: stable and small in code. std's sorts are
//! compiled again for every element type and comparison, 4-8 KB of wasm
//! each (a tenth of the component's code, and 80 KB of the npm module's,
//! was sorts). Here one merge sort of positions is compiled once (the
//! comparison reaches it as a `dyn`), and each list is then put in that
//! order by swaps. Every sort in `src/` goes through it (an unstable sort
//! and this stable one agree wherever equal elements are alike, which is
//! the case for every `Ord` sort here); the long lists of a search (every
//! row, every document) are never sorted whole: they pass through the
//! bounded top-k of `index::topk`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Ordered sets and maps built by insertion. std's `collect` into a
/// `BTreeSet` or `BTreeMap` sorts the items first, with a stable sort
/// compiled again for each element type (and, for a map, for each source
/// iterator): 2-3 KB of wasm each. Insertion gives the same collection (for
/// a key given twice, the later value, as `collect` keeps).
pub trait CollectOrdered: Iterator + Sized {
    /// The items as a set, as `collect::<BTreeSet<_>>()` gives it.
    fn into_set(self) -> BTreeSet<Self::Item>
    where
        Self::Item: Ord,
    {
        let mut set = BTreeSet::new();
        for item in self {
            set.insert(item);
        }
        set
    }

    /// The pairs as a map, as `collect::<BTreeMap<_, _>>()` gives it.
    fn into_map<K: Ord, V>(self) -> BTreeMap<K, V>
    where
        Self: Iterator<Item = (K, V)>,
    {
        let mut map = BTreeMap::new();
        for (k, v) in self {
            map.insert(k, v);
        }
        map
    }
}

impl<I: Iterator> CollectOrdered for I {}

/// Sorts `v` by `cmp`, stable (equal elements keep their order), as
/// `v.sort_by(cmp)` does.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let order = {
        let items = &*v;
        sorted_positions(items.len(), &mut |a, b| {
            cmp(&items[a], &items[b]) == Ordering::Greater
        })
    };
    permute(v, order);
}

/// Sorts `v` ascending, as `v.sort()` does (and `v.sort_unstable()`, equal
/// elements being alike).
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp)
}

/// Sorts `v` by `key`, stable, as `v.sort_by_key(key)` does.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)))
}

/// The positions `0..n` in sorted order (bottom-up merge sort; `after(a, b)`:
/// the element at `a` goes after the one at `b`).
fn sorted_positions(n: usize, after: &mut dyn FnMut(usize, usize) -> bool) -> Vec<usize> {
    let mut from: Vec<usize> = (0..n).collect();
    let mut to = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut l, mut r) = (start, mid);
            for slot in &mut to[start..end] {
                if l < mid && (r >= end || !after(from[l], from[r])) {
                    *slot = from[l];
                    l += 1;
                } else {
                    *slot = from[r];
                    r += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut from, &mut to);
        width *= 2;
    }
    from
}

/// Puts `v` in `order` (`order[k]`: the position of the element that goes
/// to `k`), one cycle of swaps at a time.
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..v.len() {
        let mut k = start;
        while order[k] != DONE {
            let next = order[k];
            order[k] = DONE;
            if next == start {
                break;
            }
            v.swap(k, next);
            k = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_std_stable_sort_does() {
        let mut seed = 7u64;
        for n in [0, 1, 2, 3, 5, 8, 17, 64, 100, 257] {
            let v: Vec<(u8, usize)> = (0..n)
                .map(|i| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((seed >> 60) as u8, i)
                })
                .collect();
            let mut ours = v.clone();
            sort_by(&mut ours, |a, b| b.0.cmp(&a.0));
            let mut std = v.clone();
            std.sort_by_key(|x| std::cmp::Reverse(x.0));
            assert_eq!(ours, std, "n = {n}");
            let mut by_key = v.clone();
            sort_by_key(&mut by_key, |x| x.0);
            let mut std_key = v;
            std_key.sort_by_key(|x| x.0);
            assert_eq!(by_key, std_key, "n = {n}");
        }
    }
}
