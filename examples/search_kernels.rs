//! Micro-benchmark of the search kernels (issue 12): the meaning index
//! against the reference scan over 10k and 100k random 384-d unit vectors
//! (top 20, `min_cosine` 0.25 as recall uses), and BM25 over 100k documents
//! of 12 words. Prints p50 per query. Run with
//! `cargo run --release --example search_kernels`.

use std::time::Instant;

use engram::index::bm25::Bm25;
use engram::index::vector::{search, VectorIndex};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn vector(&mut self, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim)
            .map(|_| (self.next() % 2_000_001) as f32 / 1e6 - 1.0)
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }
}

fn p50(mut f: impl FnMut(usize) -> usize, runs: usize) -> (f64, usize) {
    let mut t = Vec::new();
    let mut n = 0;
    for i in 0..runs {
        let s = Instant::now();
        n += f(i);
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], n)
}

fn main() {
    let mut rng = Rng(1);
    for n in [10_000, 100_000] {
        let vs: Vec<Vec<f32>> = (0..n).map(|_| rng.vector(384)).collect();
        let mut ix = VectorIndex::default();
        for (i, v) in vs.iter().enumerate() {
            ix.push(i as u64 + 1, v);
        }
        // Queries near stored vectors, so matches clear min_cosine.
        let qs: Vec<Vec<f32>> = (0..21)
            .map(|i| {
                let noise = rng.vector(384);
                vs[i * 37 % n]
                    .iter()
                    .zip(&noise)
                    .map(|(a, b)| a + 0.8 * b)
                    .collect()
            })
            .collect();
        let (before, _) = p50(
            |i| {
                let items = vs
                    .iter()
                    .enumerate()
                    .map(|(j, v)| (j as u64 + 1, v.as_slice()));
                search(&qs[i], items, 20, 0.25, |_| true).len()
            },
            qs.len(),
        );
        let (after, _) = p50(
            |i| {
                ix.search(
                    &qs[i],
                    20,
                    0.25,
                    |_| true,
                    |id| vs.get(id as usize - 1).map(|v| v.as_slice()),
                )
                .len()
            },
            qs.len(),
        );
        println!(
            "meaning, {n} x 384-d: reference scan p50 {before:.2} ms, index p50 {after:.2} ms"
        );
    }
    let words: Vec<String> = (0..20_000).map(|i| format!("w{i}")).collect();
    let zipf = |r: &mut Rng| {
        // Skewed vocabulary: a few words in many documents.
        let x = (r.next() % 1_000_000) as f64 / 1e6;
        ((x * x * x) * words.len() as f64) as usize
    };
    let mut bm = Bm25::default();
    for id in 1..=100_000u64 {
        let doc: Vec<&str> = (0..12).map(|_| words[zipf(&mut rng)].as_str()).collect();
        bm.insert(id, &doc.join(" "));
    }
    let queries: Vec<String> = (0..51)
        .map(|_| {
            (0..4)
                .map(|_| words[zipf(&mut rng)].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let (t, _) = p50(
        |i| bm.search(&queries[i], 20, |_| true).len(),
        queries.len(),
    );
    println!("words, 100k documents of 12 words: BM25 p50 {t:.3} ms");
}
