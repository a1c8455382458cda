//! Search by meaning: a cosine search over a quantised matrix, exact below
//! [`GRAPH_MIN_ROWS`] rows, through an HNSW graph for the cold rows above.
//!
//! [`VectorIndex`] keeps the vectors of one kind of item (facts, passages,
//! entity names) as one contiguous matrix of i8 codes, each row the
//! unit-length vector divided by its own scale, with the ids alongside. It is
//! derived from the state: rows are appended as events are applied and the
//! whole matrix is rebuilt on load (see [`crate::state::State`]).
//!
//! A search is exact, bit for bit the ranking of [`search`] (the plain scan
//! with [`crate::base::text::cosine`] over every vector, kept as the reference):
//!
//! 1. the query is normalised once and quantised to i16; one pass over the
//!    i8 rows gives each an approximate cosine `a` and a proven error bound
//!    `e` (quantisation of row and query, plus f32 rounding of the cosine
//!    itself), so the exact cosine lies in `[a - e, a + e]`;
//! 2. a bounded heap keeps the `limit` best lower bounds of the rows `keep`
//!    accepts; a row whose upper bound is below the heap's worst lower bound
//!    (or below `min_cosine`) cannot be in the result and is dropped;
//! 3. the few rows left (about the `limit` best plus near ties) are rescored
//!    with today's f32 [`crate::base::text::cosine`] on the stored vector, and
//!    ranked by [`super::topk::top`]'s rule (cosine, then id).
//!
//! So results never depend on the quantisation, and hosts agree as before.
//! The scan reads 1 byte per dimension instead of 4 and allocates nothing per
//! row. Its kernel works on fixed chunks of 16 lanes; LLVM vectorises it at
//! opt-level 2 and 3 (the native release profile and the component, built
//! with simd128; the npm package's "z", chosen for size, leaves it scalar).
//!
//! From [`GRAPH_MIN_ROWS`] rows, [`VectorIndex::extend_graph`] links rows,
//! in order and a budget at a time, into an HNSW graph ([`super::hnsw`]),
//! off the critical path. Rows `0..graph_stats().rows` are then searched
//! through the graph, approximately: its best `max(ef_search, limit)`
//! rows that `keep` accepts (a wider beam when too few are accepted; the
//! exact scan of every row when even that fails); the rows after them (the
//! tail, pushed since) by the exact scan of step 1-2. Both sets of
//! candidates go through the same bound and f32 rescoring, so scores are
//! always exact cosines and ties go by id; only rows the graph misses can
//! be missing. Below [`GRAPH_MIN_ROWS`] there is no graph and nothing of the
//! above changes. The graph is persisted apart ([`VectorIndex::to_bytes`],
//! [`VectorIndex::graph_from_bytes`]); the matrix itself is always derived.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::base::text::cosine;
use crate::index::dot::{dot, LANES};
use crate::index::hnsw::{GraphError, Hnsw, Near, Rows, EF_SEARCH};
use crate::types::embedding::Vector;

/// Rows below which an index keeps no graph: every search is the exact scan
/// (and results are those of the reference, bit for bit).
pub const GRAPH_MIN_ROWS: usize = 4096;

/// Largest query code: keeps every dot product of a row within i32.
const QUERY_CODES: f64 = 16_383.0;

/// The `limit` most similar of `items` (id, vector) to `query` accepted by
/// `keep`, at or above `min_cosine`, best first (ties by id), with their
/// cosines. Vectors of another dimension are skipped. The reference scan:
/// [`VectorIndex::search`] gives the same answer faster.
pub fn search<'a>(
    query: &[f32],
    items: impl IntoIterator<Item = (u64, &'a [f32])>,
    limit: usize,
    min_cosine: f32,
    keep: impl Fn(u64) -> bool,
) -> Vec<(u64, f64)> {
    let out: Vec<(u64, f64)> = items
        .into_iter()
        .filter(|(id, v)| v.len() == query.len() && keep(*id))
        .map(|(id, v)| (id, cosine(query, v) as f64))
        .filter(|(_, c)| *c >= min_cosine as f64)
        .collect();
    crate::index::topk::best(out, limit)
}

/// A contiguous, quantised matrix of unit vectors with their ids.
///
/// The dimension is fixed by the first vector added; empty vectors and
/// vectors of another dimension are not indexed (the state refuses the
/// latter, and the reference scan skips them for a query of the index's
/// dimension).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VectorIndex {
    /// Dimension of the vectors (0 before the first).
    dim: usize,
    /// Row length: `dim` rounded up to [`LANES`].
    stride: usize,
    /// Id of each row.
    ids: Vec<u64>,
    /// Row-major codes, `stride` per row, zero-padded.
    codes: Vec<i8>,
    /// Per row: the value of one code step of the unit vector.
    scale: Vec<f32>,
    /// Per row: the L1 norm of the unit vector.
    l1: Vec<f32>,
    /// The graph over rows `0..graph.len()`; the rest is the exact tail.
    graph: Hnsw,
    /// Beam width of graph searches (0: [`EF_SEARCH`]).
    ef_search: usize,
}

/// A candidate's exact-cosine interval bound, ordered for the heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bound(f32);

impl Eq for Bound {}

impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bound {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// `v` scaled to unit length (in f64), or `None` for a zero vector.
fn unit(v: &[f32]) -> Option<Vec<f64>> {
    let norm = v.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
    (norm > 0.0 && norm.is_finite()).then(|| v.iter().map(|&x| x as f64 / norm).collect())
}

/// Quantises unit vector `u` into `out` with codes up to `max`: returns the
/// step and the L1 norm. Every coordinate is within half a step of its code.
fn quantise<T: Copy>(u: &[f64], max: f64, out: &mut [T], code: impl Fn(f64) -> T) -> (f32, f32) {
    let top = u.iter().fold(0.0f64, |m, &x| m.max(x.abs()));
    let step = (top / max) as f32;
    if step == 0.0 {
        return (0.0, 0.0);
    }
    for (o, &x) in out.iter_mut().zip(u) {
        *o = code(round(x / step as f64).clamp(-max, max));
    }
    (step, u.iter().map(|x| x.abs()).sum::<f64>() as f32)
}

/// `x.round()` (halves away from zero) for |x| < 2^31, without the libm
/// call `f64::round` is on baseline x86-64 (a fifth of building an index
/// row) and without branches on the value (half of them would be
/// mispredicted): the truncation is exact, and so is `x - t`; the sign is
/// `x`'s, as `round` keeps it (-0.4 gives -0.0). Larger values and NaN go
/// to `f64::round`.
#[inline]
fn round(x: f64) -> f64 {
    if x.is_nan() || x.abs() >= 2_147_483_648.0 {
        return x.round();
    }
    let t = x as i32 as f64;
    let d = x - t;
    let up = (d >= 0.5) as u8 as f64;
    let down = (d <= -0.5) as u8 as f64;
    (t + up - down).copysign(x)
}

/// Rows [`graph_checksum`] links at most.
pub const CHECKSUM_MAX_ROWS: usize = 20_000;

/// The checksum ([`crate::base::bytes::value_checksum`]) of the graph bytes of an
/// index of `rows` fixed pseudo-random vectors of `dim` dimensions, every
/// row linked (also below [`GRAPH_MIN_ROWS`]). The vectors come from a
/// Park-Miller generator as small multiples of 1/64, exact in every float
/// type; the graph is deterministic, so the checksum is the same on every
/// target: tests compare it natively, in the WASI component and in the npm
/// package against one golden value (`tests/fixtures/hnsw-golden.json`).
/// `rows` is capped at [`CHECKSUM_MAX_ROWS`] and `dim` kept to `1..=1024`.
pub fn graph_checksum(rows: usize, dim: usize) -> u64 {
    let (rows, dim) = (rows.min(CHECKSUM_MAX_ROWS), dim.clamp(1, 1024));
    let mut seed: u64 = 20_261_205;
    let mut index = VectorIndex::default();
    let mut v = vec![0f32; dim];
    for id in 1..=rows as u64 {
        for x in v.iter_mut() {
            seed = seed * 16_807 % 2_147_483_647;
            *x = (seed % 129) as f32 / 64.0 - 1.0;
        }
        index.push(id, &v);
    }
    index.link(usize::MAX);
    crate::base::bytes::value_checksum(&index.to_bytes())
}

impl VectorIndex {
    /// Number of vectors indexed.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Appends vector `v` under `id` (ids need not be ordered). Empty
    /// vectors and vectors of another dimension are not indexed.
    pub fn push(&mut self, id: u64, v: &[f32]) {
        self.push_values(id, v.len(), v.iter().copied());
    }

    /// [`VectorIndex::push`] of an embedding, widened as it is read.
    pub fn push_embedding(&mut self, id: u64, v: &crate::types::embedding::Embedding) {
        self.push_values(id, v.len(), v.iter());
    }

    /// Appends the `len` values of `values`: [`unit`] and
    /// [`quantise`] in two vectorised passes with no division per value
    /// (the scale is applied as one f32 product, `x * (1 / (norm * step))`).
    /// A code may differ from the divided-out one by one step where the
    /// value lies within an f32 rounding of a half step; the search's bound
    /// holds either way (its slack covers far more than that rounding), and
    /// rescoring makes the results exact. Building rows is most of opening
    /// a large memory.
    fn push_values(&mut self, id: u64, len: usize, values: impl Iterator<Item = f32>) {
        if len == 0 || (self.dim != 0 && len != self.dim) {
            return;
        }
        if self.dim == 0 {
            self.dim = len;
            self.stride = len.div_ceil(LANES) * LANES;
        }
        let at = self.codes.len();
        self.codes.resize(at + self.stride, 0);
        // The row widened once, zero-padded to the stride, then summed in
        // LANES-wide partial sums (f32: the bound's slack covers their
        // rounding) so both passes vectorise.
        let mut row = vec![0f32; self.stride];
        for (r, x) in row.iter_mut().zip(values) {
            *r = x;
        }
        let (mut squares, mut top, mut l1) = ([0f32; LANES], [0f32; LANES], [0f32; LANES]);
        for chunk in row.chunks_exact(LANES) {
            for i in 0..LANES {
                squares[i] += chunk[i] * chunk[i];
                top[i] = top[i].max(chunk[i].abs());
                l1[i] += chunk[i].abs();
            }
        }
        let norm = (squares.iter().map(|&x| x as f64).sum::<f64>()).sqrt();
        let top = top.iter().fold(0f32, |m, &x| m.max(x)) as f64;
        let mut l1 = l1.iter().map(|&x| x as f64).sum::<f64>();
        let mut step = 0.0f32;
        if norm > 0.0 && norm.is_finite() {
            step = (top / norm / 127.0) as f32;
        }
        if step > 0.0 {
            // Rounding halves away from zero by adding a signed half and
            // truncating (`as` saturates: the clamp to 127).
            let by = (1.0 / (norm * step as f64)) as f32;
            for (o, &x) in self.codes[at..].iter_mut().zip(&row) {
                let v = x * by;
                *o = (v + 0.5f32.copysign(v)) as i8;
            }
            l1 /= norm;
        } else {
            l1 = 0.0;
        }
        self.ids.push(id);
        self.scale.push(step);
        self.l1.push(l1 as f32);
    }

    /// The `limit` most similar indexed vectors to `query` accepted by
    /// `keep`, at or above `min_cosine`, best first (ties by id), with their
    /// cosines. `vector(id)` gives the stored vector of an id, for rescoring.
    ///
    /// Below [`GRAPH_MIN_ROWS`] rows, or before [`VectorIndex::extend_graph`]
    /// has linked any, this is exactly [`search`] over the same vectors.
    /// Above, the rows in the graph are searched through it (approximate:
    /// about 98 % of the exact top 10, see docs/bench-history.md) and the tail after
    /// them exactly; the candidates of both are ranked the same way.
    pub fn search<'a, V: Vector + ?Sized + 'a>(
        &self,
        query: &[f32],
        limit: usize,
        min_cosine: f32,
        keep: impl Fn(u64) -> bool,
        vector: impl Fn(u64) -> Option<&'a V>,
    ) -> Vec<(u64, f64)> {
        if limit == 0 || self.is_empty() || query.len() != self.dim {
            return Vec::new();
        }
        let rescore = |rows: &mut dyn Iterator<Item = usize>| {
            let out: Vec<(u64, f64)> = rows
                .filter_map(|r| {
                    let id = self.ids[r];
                    let v = vector(id).filter(|v| v.dim() == query.len())?;
                    let c = v.cosine_with(query) as f64;
                    (c >= min_cosine as f64).then_some((id, c))
                })
                .collect();
            crate::index::topk::best(out, limit)
        };
        let mut q = vec![0i16; self.stride];
        let Some(u) = unit(query) else {
            // A zero query: every cosine is 0.
            return rescore(&mut (0..self.len()).filter(|&r| keep(self.ids[r])));
        };
        let (qstep, ql1) = quantise(&u, QUERY_CODES.min(query_codes(self.dim)), &mut q, |x| {
            x as i16
        });
        // f32 rounding of the reference cosine (dot and norms over `dim`
        // terms), with a wide margin.
        let slack = self.dim as f32 * 1e-6 + 1e-6;
        let quarter = 0.25 * self.dim as f32 * qstep;
        let approx = |r: usize| dot(&q, self.row(r)) as f32 * (self.scale[r] * qstep);
        let error = |r: usize| {
            let s = self.scale[r];
            0.5 * (s * ql1 + qstep * self.l1[r]) + quarter * s + slack
        };
        let mut pass = Pass::new(limit, min_cosine);
        let linked = match self.graph_candidates(&q, qstep, limit, &keep) {
            Some(found) => {
                for n in found {
                    let r = n.row as usize;
                    pass.offer(r, n.sim, error(r), || true);
                }
                self.graph.len()
            }
            None => 0,
        };
        for r in linked..self.len() {
            pass.offer(r, approx(r), error(r), || keep(self.ids[r]));
        }
        rescore(&mut pass.rows())
    }

    /// Row `r`'s codes.
    fn row(&self, r: usize) -> &[i8] {
        &self.codes[r * self.stride..(r + 1) * self.stride]
    }

    /// The matrix as the graph sees it.
    fn rows(&self) -> Rows<'_> {
        Rows {
            codes: &self.codes,
            stride: self.stride,
            scale: &self.scale,
        }
    }

    /// The graph's candidates for quantised query `q` that `keep` accepts,
    /// or `None` when the graph is not used: below [`GRAPH_MIN_ROWS`], with
    /// no row linked, or when the filter leaves fewer than `limit` even in a
    /// widened beam (the caller then scans every row).
    fn graph_candidates(
        &self,
        q: &[i16],
        qstep: f32,
        limit: usize,
        keep: &impl Fn(u64) -> bool,
    ) -> Option<Vec<Near>> {
        let linked = self.graph.len();
        if self.len() < GRAPH_MIN_ROWS || linked == 0 {
            return None;
        }
        let mut ef = self.ef_search().max(limit);
        loop {
            let found = self.graph.search(self.rows(), q, qstep, ef);
            let everything = found.len() < ef;
            let kept: Vec<Near> = found
                .into_iter()
                .filter(|n| keep(self.ids[n.row as usize]))
                .collect();
            if kept.len() >= limit || everything {
                return Some(kept);
            }
            ef *= 4;
            if ef > linked / 8 {
                return None;
            }
        }
    }

    /// Beam width of graph searches (at least twice the result count).
    pub fn ef_search(&self) -> usize {
        if self.ef_search == 0 {
            EF_SEARCH
        } else {
            self.ef_search
        }
    }

    /// Sets the beam width of graph searches (0: the default,
    /// [`super::hnsw::EF_SEARCH`]). Wider finds more of the exact answer,
    /// slower.
    pub fn set_ef_search(&mut self, ef: usize) {
        self.ef_search = ef;
    }

    /// Links up to `budget_rows` more rows of the exact tail into the graph,
    /// in row order; returns how many. Does nothing below
    /// [`GRAPH_MIN_ROWS`] rows. Deterministic: the same rows linked in any
    /// number of calls give the same graph.
    pub fn extend_graph(&mut self, budget_rows: usize) -> usize {
        if self.len() < GRAPH_MIN_ROWS {
            return 0;
        }
        self.link(budget_rows)
    }

    /// Links up to `budget_rows` rows not in the graph yet, whatever the
    /// index's size; returns how many.
    fn link(&mut self, budget_rows: usize) -> usize {
        let rows = Rows {
            codes: &self.codes,
            stride: self.stride,
            scale: &self.scale,
        };
        let mut done = 0;
        while done < budget_rows && self.graph.len() < self.ids.len() {
            self.graph.insert(rows);
            done += 1;
        }
        done
    }

    /// Rows in the graph and rows in the exact tail after it.
    pub fn graph_stats(&self) -> GraphStats {
        GraphStats {
            rows: self.graph.len(),
            tail: self.len() - self.graph.len(),
        }
    }

    /// The graph part of the index as bytes (the rows themselves are not in
    /// them: they are derived from the state): see
    /// [`super::hnsw::Hnsw`]. Little-endian, closed by a checksum; about 50
    /// bytes per linked row.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.graph.to_bytes(self.dim, &self.ids)
    }

    /// Replaces the graph with one read from [`VectorIndex::to_bytes`]. Every
    /// byte is checked, and the graph must have been built on the first rows
    /// of this index (same dimension, same ids in the same order); on error
    /// the index keeps no graph (every search exact) and says why.
    pub fn graph_from_bytes(&mut self, bytes: &[u8]) -> Result<(), GraphError> {
        match Hnsw::from_bytes(bytes, self.dim, &self.ids) {
            Ok(g) => {
                self.graph = g;
                Ok(())
            }
            Err(e) => {
                self.graph = Hnsw::default();
                Err(e)
            }
        }
    }
}

/// How much of an index its graph links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GraphStats {
    /// Rows in the graph (the first ones).
    pub rows: usize,
    /// Rows after them, searched exactly.
    pub tail: usize,
}

/// The bounded pass over candidate rows: a heap of the `limit` best lower
/// bounds, and the rows whose upper bound can still reach it.
struct Pass {
    limit: usize,
    min_cosine: f32,
    worst: BinaryHeap<Reverse<Bound>>,
    cut: f32,
    rows: Vec<(usize, f32)>,
}

impl Pass {
    fn new(limit: usize, min_cosine: f32) -> Self {
        Pass {
            limit,
            min_cosine,
            worst: BinaryHeap::with_capacity(limit.min(1024) + 1),
            cut: f32::NEG_INFINITY,
            rows: Vec::new(),
        }
    }

    /// Offers row `r` with approximate cosine `a` within `e`; `keep` is only
    /// asked when the row can still rank.
    fn offer(&mut self, r: usize, a: f32, e: f32, keep: impl FnOnce() -> bool) {
        let upper = a + e;
        if upper < self.min_cosine || upper < self.cut || !keep() {
            return;
        }
        self.rows.push((r, upper));
        let lower = Bound(a - e);
        if self.worst.len() < self.limit {
            self.worst.push(Reverse(lower));
        } else if self.worst.peek().is_some_and(|w| lower > w.0) {
            self.worst.pop();
            self.worst.push(Reverse(lower));
        }
        if self.worst.len() == self.limit {
            self.cut = self.worst.peek().map_or(self.cut, |w| w.0 .0);
        }
    }

    /// The rows left to rescore.
    fn rows(self) -> impl Iterator<Item = usize> {
        let cut = self.cut;
        self.rows
            .into_iter()
            .filter(move |&(_, u)| u >= cut)
            .map(|(r, _)| r)
    }
}

/// Largest query code for dimension `dim` such that no dot product with a
/// row overflows i32.
fn query_codes(dim: usize) -> f64 {
    (i32::MAX as f64 / (127.0 * dim.max(1) as f64))
        .floor()
        .max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    #[test]
    fn round_is_f64_round_bit_for_bit() {
        let mut seed = 3u64;
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -2.5,
            0.49999999999999994,
            -0.49999999999999994,
            127.5,
            -127.5,
            2_147_483_647.5,
            -2_147_483_648.5,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ];
        for _ in 0..100_000 {
            let x = lcg(&mut seed) as f64 * 130.0;
            xs.extend([x, x.trunc() + 0.5, -(x.trunc() + 0.5), x / 1e3]);
        }
        for x in xs {
            assert_eq!(round(x).to_bits(), x.round().to_bits(), "{x}");
        }
    }

    #[test]
    fn index_matches_the_reference_scan_on_random_vectors() {
        let mut seed = 7;
        for dim in [1, 3, 17, 64] {
            let vs: Vec<Vec<f32>> = (0..300)
                .map(|i| {
                    if i % 10 == 3 {
                        // Duplicates: exact ties, broken by id.
                        vec![0.5; dim]
                    } else {
                        (0..dim).map(|_| lcg(&mut seed)).collect()
                    }
                })
                .collect();
            let mut ix = VectorIndex::default();
            for (i, v) in vs.iter().enumerate() {
                ix.push(i as u64 + 1, v);
            }
            for t in 0..20 {
                let q: Vec<f32> = (0..dim).map(|_| lcg(&mut seed)).collect();
                let (limit, min) = [(10, -1.0), (3, 0.2), (50, 0.0), (300, -1.0)][t % 4];
                let keep = |id: u64| id % 7 != 0;
                let items = vs
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i as u64 + 1, v.as_slice()));
                let want = search(&q, items, limit, min, keep);
                let got = ix.search(&q, limit, min, keep, |id| {
                    vs.get(id as usize - 1).map(|v| v.as_slice())
                });
                assert_eq!(got, want, "dim {dim} query {t}");
            }
        }
    }
}
