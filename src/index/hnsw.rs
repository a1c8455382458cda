//! A navigable small-world graph (HNSW) over the rows of a quantised matrix,
//! for meaning search over large cold sets (issue 12).
//!
//! [`Hnsw`] links the first rows of a [`super::vector::VectorIndex`] (its i8
//! codes with their per-row scale; the graph holds no vectors of its own).
//! It is the graph of Malkov and Yashunin (2016): each node sits on layers
//! `0..=level`, links to at most `m` nodes per upper layer and `2m` on layer
//! 0, chosen by the paper's neighbour-selection heuristic (a candidate is
//! kept only if it is closer to the new node than to every neighbour kept
//! before it); a search descends greedily from the entry point and runs a
//! beam of width `ef` on layer 0.
//!
//! Unlike the crates that implement it, this one is:
//! - single-threaded and deterministic: a node's level is read from the
//!   leading zero bits of splitmix64 of its row number and a fixed seed (no
//!   randomness source, no floating-point logarithm), distances are integer
//!   dot products times f32 scales, and every tie is broken by row number, so
//!   every host builds the same graph, byte for byte;
//! - incremental: `Hnsw::insert` adds the next row at any time, so a graph
//!   is built a few rows per maintenance call, off the critical path;
//! - tunable at search time: `ef` is an argument of `Hnsw::search`.
//!
//! Neighbour lists live in flat arrays (a block of `2m + 1` u32 per node for
//! layer 0: the count, then the ids in increasing order; the few nodes above
//! layer 0 have blocks of `m + 1` per upper layer in a second array).
//!
//! `Hnsw::to_bytes` encodes the links only: levels and the entry point
//! follow from the seed and the row count, and each list is a varint count
//! then the ids delta-coded as varints (about 2 bytes a link at 100k rows).
//! A fingerprint of the rows' ids ties the bytes to the rows they were built
//! on, and a checksum closes them; `Hnsw::from_bytes` checks all of it
//! and every link, so damaged or stale bytes are an error, never a panic or
//! a neighbour out of range.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::index::dot::{dot, dot8};

/// Default links per node on the upper layers (layer 0 takes twice as many).
pub const M: usize = 16;

/// Default beam width while inserting.
pub const EF_CONSTRUCTION: usize = 100;

/// Default beam width of a search (raised to the result count): at 32,
/// `search`'s top 10 over the scale bench's 100k facts is 0.994 of the exact
/// one, as at 64, 20 % faster.
pub const EF_SEARCH: usize = 32;

/// Default seed of the levels.
pub const SEED: u64 = 0x656e_6772_616d_0012;

/// Magic and version of [`Hnsw::to_bytes`].
const MAGIC: &[u8; 5] = b"EHNS\x01";

/// Highest level a node can take.
const MAX_LEVEL: u8 = 15;

/// The rows a graph links: the index's codes, `stride` per row, and scales.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows<'a> {
    /// Row-major i8 codes.
    pub codes: &'a [i8],
    /// Codes per row.
    pub stride: usize,
    /// Per row: the value of one code step.
    pub scale: &'a [f32],
}

impl<'a> Rows<'a> {
    fn row(&self, r: usize) -> &'a [i8] {
        &self.codes[r * self.stride..(r + 1) * self.stride]
    }

    /// Reads one byte per cache line of row `r` (their xor), so that its
    /// lines are fetched while other work goes on.
    #[inline]
    fn touch(&self, r: usize) -> u8 {
        let scale = self.scale[r].to_bits() as u8;
        self.row(r)
            .iter()
            .step_by(64)
            .fold(scale, |t, &b| t ^ b as u8)
    }

    /// Approximate cosine of rows `a` and `b` (symmetric).
    fn sim(&self, a: usize, b: usize) -> f32 {
        dot8(self.row(a), self.row(b)) as f32 * (self.scale[a] * self.scale[b])
    }
}

/// A node with its similarity to the query: greater is better (higher
/// similarity, then lower row).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Near {
    /// Approximate cosine to the query.
    pub sim: f32,
    /// Row number.
    pub row: u32,
}

impl Eq for Near {}

impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.sim
            .total_cmp(&other.sim)
            .then(other.row.cmp(&self.row))
    }
}

/// Visited nodes of one layer search, as a bitset.
#[derive(Debug, Default)]
struct Seen(Vec<u64>);

impl Seen {
    /// Forgets every node and makes room for `n`.
    fn reset(&mut self, n: usize) {
        self.0.clear();
        self.0.resize(n.div_ceil(64), 0);
    }

    /// Marks `r`; whether it was new.
    fn insert(&mut self, r: u32) -> bool {
        let (w, b) = (r as usize / 64, 1u64 << (r % 64));
        let new = self.0[w] & b == 0;
        self.0[w] |= b;
        new
    }
}

/// Why graph bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("graph bytes refused: {0}")]
pub struct GraphError(pub String);

fn bad(what: impl Into<String>) -> GraphError {
    GraphError(what.into())
}

/// The graph. Empty by default (with the default parameters).
#[derive(Debug, Clone, PartialEq)]
pub struct Hnsw {
    /// Links per node on upper layers; layer 0 takes `2m`.
    m: usize,
    /// Beam width while inserting.
    ef_construction: usize,
    /// Seed of the levels.
    seed: u64,
    /// Level of each node.
    levels: Vec<u8>,
    /// Layer 0: per node `2m + 1` slots, the count then the ids ascending.
    layer0: Vec<u32>,
    /// Per node: where its upper-layer blocks start in `upper` (unused for
    /// level 0 nodes).
    upper_at: Vec<u32>,
    /// Upper layers: per node above 0, `level` blocks of `m + 1` slots.
    upper: Vec<u32>,
    /// Entry point: the first node of the highest level.
    entry: u32,
}

impl Default for Hnsw {
    fn default() -> Self {
        Hnsw::new(M, EF_CONSTRUCTION, SEED)
    }
}

/// splitmix64: a fixed mix of 64 bits.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Level of row `row`: P(level >= l) = m^-l (for m a power of two; the next
/// lower power otherwise), from the hash's leading zero bits.
fn level_of(row: usize, seed: u64, m: usize) -> u8 {
    let bits = m.max(2).ilog2();
    let zeros = splitmix64(row as u64 ^ seed).leading_zeros();
    ((zeros / bits) as u8).min(MAX_LEVEL)
}

/// The first `m` of `cands` (best first) by the HNSW heuristic: a candidate
/// is kept unless a kept one is closer to it than the query is.
fn select(rows: Rows, cands: &[Near], m: usize) -> Vec<u32> {
    let mut out: Vec<Near> = Vec::with_capacity(m);
    for &c in cands {
        if out.len() >= m {
            break;
        }
        if out
            .iter()
            .all(|o| rows.sim(o.row as usize, c.row as usize) <= c.sim)
        {
            out.push(c);
        }
    }
    out.into_iter().map(|n| n.row).collect()
}

/// FNV-1a over 64-bit words: the fingerprint of the rows' ids.
pub(crate) fn ids_fingerprint(ids: &[u64]) -> u64 {
    let h = ids.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &id| {
        (h ^ id).wrapping_mul(0x100_0000_01b3)
    });
    (h ^ ids.len() as u64).wrapping_mul(0x100_0000_01b3)
}

fn put_varint(out: &mut Vec<u8>, mut x: u32) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// A cursor over bytes that fails instead of reading past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], GraphError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| bad("truncated"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, GraphError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn u64(&mut self) -> Result<u64, GraphError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }

    fn varint(&mut self) -> Result<u32, GraphError> {
        let mut x = 0u64;
        for i in 0..5 {
            let b = self.take(1)?[0];
            x |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return u32::try_from(x).map_err(|_| bad("varint overflows"));
            }
        }
        Err(bad("varint too long"))
    }
}

impl Hnsw {
    /// An empty graph with `m` links per upper-layer node (2 to 64),
    /// `ef_construction` (at least 1) and the levels' `seed`.
    pub fn new(m: usize, ef_construction: usize, seed: u64) -> Self {
        Hnsw {
            m: m.clamp(2, 64),
            ef_construction: ef_construction.max(1),
            seed,
            levels: Vec::new(),
            layer0: Vec::new(),
            upper_at: Vec::new(),
            upper: Vec::new(),
            entry: 0,
        }
    }

    /// Rows linked: rows `0..len()` of the matrix.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// Whether no row is linked.
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    fn cap(&self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.m
        } else {
            self.m
        }
    }

    fn block(&self, node: usize, layer: usize) -> usize {
        if layer == 0 {
            node * (2 * self.m + 1)
        } else {
            self.upper_at[node] as usize + (layer - 1) * (self.m + 1)
        }
    }

    /// Links of `node` on `layer`, ascending.
    fn links(&self, node: usize, layer: usize) -> &[u32] {
        let at = self.block(node, layer);
        let a = if layer == 0 {
            &self.layer0
        } else {
            &self.upper
        };
        &a[at + 1..at + 1 + a[at] as usize]
    }

    /// Sets the links of `node` on `layer` (at most the layer's cap), sorted.
    fn set_links(&mut self, node: usize, layer: usize, list: &mut [u32]) {
        crate::base::sort::sort(list);
        let at = self.block(node, layer);
        let a = if layer == 0 {
            &mut self.layer0
        } else {
            &mut self.upper
        };
        a[at] = list.len() as u32;
        a[at + 1..at + 1 + list.len()].copy_from_slice(list);
    }

    fn top(&self) -> usize {
        self.levels
            .get(self.entry as usize)
            .map_or(0, |&l| l as usize)
    }

    /// Adds a node for the next row with level `level` and no links.
    fn add_node(&mut self, level: u8) {
        let r = self.levels.len();
        self.levels.push(level);
        self.layer0.resize(self.layer0.len() + 2 * self.m + 1, 0);
        let at = self.upper.len();
        self.upper_at.push(at as u32);
        self.upper.resize(at + level as usize * (self.m + 1), 0);
        if r == 0 || level as usize > self.top() {
            self.entry = r as u32;
        }
    }

    /// Greedy walk on `layer` from `cur` to a local best.
    fn greedy(&self, sim: &impl Fn(usize) -> f32, mut cur: Near, layer: usize) -> Near {
        loop {
            let mut moved = false;
            for &n in self.links(cur.row as usize, layer) {
                let x = Near {
                    sim: sim(n as usize),
                    row: n,
                };
                if x > cur {
                    cur = x;
                    moved = true;
                }
            }
            if !moved {
                return cur;
            }
        }
    }

    /// Beam search of width `ef` on `layer` from `entry` (scored by `sim`,
    /// over `rows`): the best found, best first.
    fn search_layer(
        &self,
        sim: &impl Fn(usize) -> f32,
        rows: Rows,
        entry: &[Near],
        ef: usize,
        layer: usize,
        seen: &mut Seen,
    ) -> Vec<Near> {
        let mut cand: BinaryHeap<Near> = BinaryHeap::with_capacity(ef * 2);
        let mut best: BinaryHeap<Reverse<Near>> = BinaryHeap::with_capacity(ef + 1);
        for &e in entry {
            if seen.insert(e.row) {
                cand.push(e);
                best.push(Reverse(e));
                if best.len() > ef {
                    best.pop();
                }
            }
        }
        // The unseen neighbours of a candidate are scored together before
        // any of them is weighed: their rows are independent loads the CPU
        // overlaps (most of a search is waiting for rows), and the order in
        // which they are then weighed is the order of the links, as before.
        let mut fresh: Vec<Near> = Vec::with_capacity(2 * self.m);
        let mut unseen: Vec<u32> = Vec::with_capacity(2 * self.m);
        let mut t = 0u8;
        while let Some(c) = cand.pop() {
            if best.len() >= ef && best.peek().is_some_and(|w| c < w.0) {
                break;
            }
            unseen.clear();
            unseen.extend(
                self.links(c.row as usize, layer)
                    .iter()
                    .filter(|&&n| seen.insert(n)),
            );
            // One load per cache line of every unseen row first: the loads
            // are independent, so their misses overlap, and the dot
            // products below then read rows already on their way.
            for &n in &unseen {
                t ^= rows.touch(n as usize);
            }
            fresh.clear();
            fresh.extend(unseen.iter().map(|&n| Near {
                sim: sim(n as usize),
                row: n,
            }));
            for &x in &fresh {
                if best.len() < ef || best.peek().is_some_and(|w| x > w.0) {
                    // Its links are read when it is expanded: start now.
                    t ^= self
                        .links(x.row as usize, layer)
                        .first()
                        .copied()
                        .unwrap_or(0) as u8;
                    cand.push(x);
                    best.push(Reverse(x));
                    if best.len() > ef {
                        best.pop();
                    }
                }
            }
        }
        std::hint::black_box(t);
        let mut out: Vec<Near> = best.into_iter().map(|r| r.0).collect();
        crate::base::sort::sort_by(&mut out, |a, b| b.cmp(a));
        out
    }

    /// Links the next row (`len()`) of `rows` into the graph.
    pub(crate) fn insert(&mut self, rows: Rows) {
        let r = self.len();
        let level = level_of(r, self.seed, self.m);
        let (entry, top) = (self.entry as usize, self.top());
        self.add_node(level);
        if r == 0 {
            return;
        }
        let q: Vec<i16> = rows.row(r).iter().map(|&c| c as i16).collect();
        let step = rows.scale[r];
        let sim = |x: usize| dot(&q, rows.row(x)) as f32 * (rows.scale[x] * step);
        let mut ep = Near {
            sim: sim(entry),
            row: entry as u32,
        };
        for layer in (level as usize + 1..=top).rev() {
            ep = self.greedy(&sim, ep, layer);
        }
        let mut eps = vec![ep];
        let mut seen = Seen::default();
        for layer in (0..=top.min(level as usize)).rev() {
            seen.reset(r + 1);
            let found = self.search_layer(&sim, rows, &eps, self.ef_construction, layer, &mut seen);
            let mut chosen = select(rows, &found, self.m);
            self.set_links(r, layer, &mut chosen);
            for &c in &chosen {
                let s = found.iter().find(|n| n.row == c).map_or(0.0, |n| n.sim);
                self.connect(rows, c as usize, r as u32, s, layer);
            }
            eps = found;
        }
    }

    /// Adds link `new` (similarity `s`) to `node` on `layer`, pruning by the
    /// heuristic when the list is full.
    fn connect(&mut self, rows: Rows, node: usize, new: u32, s: f32, layer: usize) {
        let cap = self.cap(layer);
        let mut list = self.links(node, layer).to_vec();
        if list.len() < cap {
            list.push(new);
        } else {
            let mut cands: Vec<Near> = list
                .iter()
                .map(|&n| Near {
                    sim: rows.sim(node, n as usize),
                    row: n,
                })
                .collect();
            cands.push(Near { sim: s, row: new });
            crate::base::sort::sort_by(&mut cands, |a, b| b.cmp(a));
            list = select(rows, &cands, cap);
        }
        self.set_links(node, layer, &mut list);
    }

    /// Up to `ef` rows near `query` (i16 codes with step `step`, as the
    /// index's scan quantises it), best first by approximate cosine.
    pub(crate) fn search(&self, rows: Rows, query: &[i16], step: f32, ef: usize) -> Vec<Near> {
        if self.is_empty() {
            return Vec::new();
        }
        let sim = |x: usize| dot(query, rows.row(x)) as f32 * (rows.scale[x] * step);
        let entry = self.entry as usize;
        let mut ep = Near {
            sim: sim(entry),
            row: entry as u32,
        };
        for layer in (1..=self.top()).rev() {
            ep = self.greedy(&sim, ep, layer);
        }
        let mut seen = Seen::default();
        seen.reset(self.len());
        self.search_layer(&sim, rows, &[ep], ef.max(1), 0, &mut seen)
    }

    /// The graph as bytes: magic, parameters, the dimension, row count and
    /// ids' fingerprint of the rows it links, each layer's lists (varint
    /// count, then varint ids, the first as is and the rest as gaps minus
    /// one), and a checksum of all that.
    pub(crate) fn to_bytes(&self, dim: usize, ids: &[u64]) -> Vec<u8> {
        let n = self.len();
        let mut out = Vec::with_capacity(64 + n * 48);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.m as u32).to_le_bytes());
        out.extend_from_slice(&(self.ef_construction as u32).to_le_bytes());
        out.extend_from_slice(&self.seed.to_le_bytes());
        out.extend_from_slice(&(dim as u32).to_le_bytes());
        out.extend_from_slice(&(n as u32).to_le_bytes());
        out.extend_from_slice(&ids_fingerprint(&ids[..n]).to_le_bytes());
        for layer in 0..=self.top() {
            for node in (0..n).filter(|&i| self.levels[i] as usize >= layer) {
                let links = self.links(node, layer);
                put_varint(&mut out, links.len() as u32);
                let mut prev: Option<u32> = None;
                for &l in links {
                    put_varint(&mut out, prev.map_or(l, |p| l - p - 1));
                    prev = Some(l);
                }
            }
        }
        let sum = crate::base::bytes::value_checksum(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Reads [`Hnsw::to_bytes`] for an index of dimension `dim` whose rows
    /// have `ids`: refused unless every byte checks out and the graph was
    /// built on the first of these rows.
    pub(crate) fn from_bytes(bytes: &[u8], dim: usize, ids: &[u64]) -> Result<Hnsw, GraphError> {
        if bytes.len() < MAGIC.len() + 8 {
            return Err(bad("truncated"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 8);
        if crate::base::bytes::value_checksum(body).to_le_bytes() != sum {
            return Err(bad("checksum does not match"));
        }
        let mut rd = Reader { bytes: body, at: 0 };
        if rd.take(MAGIC.len())? != MAGIC {
            return Err(bad("not graph bytes of this version"));
        }
        let m = rd.u32()? as usize;
        let ef_construction = rd.u32()? as usize;
        let seed = rd.u64()?;
        if !(2..=64).contains(&m) || !(1..=1 << 16).contains(&ef_construction) {
            return Err(bad("parameters out of range"));
        }
        if rd.u32()? as usize != dim {
            return Err(bad("another dimension"));
        }
        let n = rd.u32()? as usize;
        if n > ids.len() {
            return Err(bad("more rows than the index holds"));
        }
        if rd.u64()? != ids_fingerprint(&ids[..n]) {
            return Err(bad("built on other rows"));
        }
        let mut g = Hnsw::new(m, ef_construction, seed);
        for r in 0..n {
            g.add_node(level_of(r, seed, m));
        }
        let mut list = Vec::with_capacity(2 * m);
        for layer in 0..=g.top() {
            for node in 0..n {
                if (g.levels[node] as usize) < layer {
                    continue;
                }
                let count = rd.varint()? as usize;
                if count > g.cap(layer) {
                    return Err(bad("too many links"));
                }
                list.clear();
                let mut prev: Option<u32> = None;
                for _ in 0..count {
                    let x = rd.varint()?;
                    let id = match prev {
                        None => Some(x),
                        Some(p) => p.checked_add(x).and_then(|v| v.checked_add(1)),
                    }
                    .filter(|&id| (id as usize) < n)
                    .ok_or_else(|| bad("link out of range"))?;
                    if id as usize == node || (g.levels[id as usize] as usize) < layer {
                        return Err(bad("link to itself or to a node not on the layer"));
                    }
                    list.push(id);
                    prev = Some(id);
                }
                g.set_links(node, layer, &mut list);
            }
        }
        if rd.at != body.len() {
            return Err(bad("trailing bytes"));
        }
        Ok(g)
    }
}
