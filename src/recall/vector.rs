//! Search by meaning: exact cosine scan over stored embeddings.
//!
//! Exact search is the right tool below a few thousand vectors per memory
//! (0.6 ms for 10k 384-d vectors natively, see TOOLCHAIN.md); an HNSW index
//! for larger memories is a later step.

use crate::text::cosine;

/// The `limit` most similar of `items` (id, vector) to `query` accepted by
/// `keep`, at or above `min_cosine`, best first (ties by id), with their
/// cosines. Vectors of another dimension are skipped.
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
    super::top(out, limit)
}
