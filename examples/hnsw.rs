//! Bench of the meaning index's graph (issue 12): builds one index up to
//! 10k, 50k and 100k structured 384-d vectors (500 random centres, each
//! vector a centre plus noise), linking the new rows into the graph at each
//! size, and prints the build time per row, query p50 / p95 of the exact
//! scan and of the graph search (top 10, no cosine floor, 200 queries near
//! the centres), recall@10 of the graph against the exact answer, and the
//! graph's bytes per row. Run with
//! `cargo run --release --example hnsw [SIZES...]` (e.g. `10000 50000`);
//! `EF=32,64,128` lists the beam widths to try (default: the index's).

use std::time::Instant;

use engram::index::vector::VectorIndex;

#[path = "../tests/clustered/mod.rs"]
mod clustered;

use clustered::Clusters;

fn percentiles(mut t: Vec<f64>) -> (f64, f64) {
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], t[(t.len() * 95).div_ceil(100) - 1])
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 50_000, 100_000]
    } else {
        sizes
    };
    let efs: Vec<usize> = std::env::var("EF")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![0]);
    let dim = 384;
    let mut data = Clusters::new(12, dim, 500);
    if let Some((least, most)) = std::env::var("SPREAD").ok().and_then(|s| {
        let (a, b) = s.split_once(',')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    }) {
        data = data.with_spread(least, most);
    }
    let queries: Vec<Vec<f32>> = (0..200).map(|_| data.point()).collect();
    let mut vs: Vec<Vec<f32>> = Vec::new();
    let mut graph = VectorIndex::default();
    let mut exact = VectorIndex::default();
    println!("| rows | build ms/row | exact p50 / p95 ms | ef | graph p50 / p95 ms | recall@10 | bytes/row |");
    println!("|---|---|---|---|---|---|---|");
    for &n in &sizes {
        while vs.len() < n {
            let v = data.point();
            graph.push(vs.len() as u64 + 1, &v);
            exact.push(vs.len() as u64 + 1, &v);
            vs.push(v);
        }
        let before = graph.graph_stats().rows;
        let t = Instant::now();
        let linked = graph.extend_graph(usize::MAX);
        let build = t.elapsed().as_secs_f64() * 1e3 / (linked.max(1)) as f64;
        assert_eq!(before + linked, n);
        let bytes = graph.to_bytes();
        let vector = |id: u64| vs.get(id as usize - 1).map(|v| v.as_slice());
        let mut times = Vec::new();
        let mut want = Vec::new();
        for q in &queries {
            let t = Instant::now();
            want.push(exact.search(q, 10, -1.0, |_| true, vector));
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let (ep50, ep95) = percentiles(times);
        for &ef in &efs {
            graph.set_ef_search(ef);
            let mut times = Vec::new();
            let mut hits = 0;
            for (q, want) in queries.iter().zip(&want) {
                let t = Instant::now();
                let got = graph.search(q, 10, -1.0, |_| true, vector);
                times.push(t.elapsed().as_secs_f64() * 1e3);
                hits += got
                    .iter()
                    .filter(|g| want.iter().any(|w| w.0 == g.0))
                    .count();
            }
            let (p50, p95) = percentiles(times);
            println!(
                "| {n} | {build:.3} | {ep50:.2} / {ep95:.2} | {} | {p50:.3} / {p95:.3} | {:.3} | {:.1} |",
                graph.ef_search(),
                hits as f64 / (10 * queries.len()) as f64,
                bytes.len() as f64 / n as f64
            );
        }
    }
}
