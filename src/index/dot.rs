//! The dot products of the meaning search: an i16 query against an i8 row
//! (the scan, [`crate::index::vector`]) and two i8 rows (the graph's
//! distance, [`crate::index::hnsw`]). Each is its own `#[inline(never)]`
//! function in fixed chunks of [`LANES`], so the compiler vectorises it and
//! V8 optimises it apart from its callers.

/// Lanes of the scan kernel: rows and the query are padded to a multiple.
pub const LANES: usize = 16;

/// Dot product of an i16 query and an i8 row, both `stride` long: fixed
/// chunks of [`LANES`], so the compiler can vectorise it.
#[inline(never)]
pub fn dot(query: &[i16], row: &[i8]) -> i32 {
    let mut acc = [0i32; LANES];
    for (q, r) in query.chunks_exact(LANES).zip(row.chunks_exact(LANES)) {
        for i in 0..LANES {
            acc[i] += q[i] as i32 * r[i] as i32;
        }
    }
    acc.iter().sum()
}

/// Dot product of two i8 rows, both `stride` long, in the same shape as
/// [`dot`]: the graph's distance between two stored rows.
#[inline(never)]
pub fn dot8(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; LANES];
    for (x, y) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for i in 0..LANES {
            acc[i] += x[i] as i32 * y[i] as i32;
        }
    }
    acc.iter().sum()
}
