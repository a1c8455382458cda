//! Clustered test vectors, shared by `tests/hnsw.rs` and (by path)
//! `examples/hnsw.rs`: random unit centres, each point one of them plus
//! noise of a norm drawn from a range (uniform random vectors are every
//! graph index's worst case and unlike embeddings). Seeded, so every run
//! draws the same vectors.

#![allow(dead_code)]

/// A seeded linear congruential generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A random vector of `dim` values scaled to length `norm`.
    pub fn vector(&mut self, dim: usize, norm: f32) -> Vec<f32> {
        let v: Vec<f32> = (0..dim)
            .map(|_| (self.next() % 2_000_001) as f32 / 1e6 - 1.0)
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x * norm / n).collect()
    }
}

/// Centres and points near them.
pub struct Clusters {
    pub rng: Rng,
    centres: Vec<Vec<f32>>,
    /// The noise's norm: the least, and how much more it may be.
    spread: (f32, f32),
}

impl Clusters {
    /// `centres` random unit centres of `dim` values; noise of norm 0.3 to 0.9.
    pub fn new(seed: u64, dim: usize, centres: usize) -> Self {
        let mut rng = Rng(seed);
        let centres = (0..centres).map(|_| rng.vector(dim, 1.0)).collect();
        Clusters {
            rng,
            centres,
            spread: (0.3, 0.6),
        }
    }

    /// The same with noise of norm `least` to `most`.
    pub fn with_spread(mut self, least: f32, most: f32) -> Self {
        self.spread = (least, most - least);
        self
    }

    /// A point: a random centre plus noise.
    pub fn point(&mut self) -> Vec<f32> {
        let c = self.rng.next() as usize % self.centres.len();
        let spread = self.spread.0 + (self.rng.next() % 1000) as f32 / 1000.0 * self.spread.1;
        let noise = self.rng.vector(self.centres[c].len(), spread);
        self.centres[c]
            .iter()
            .zip(&noise)
            .map(|(a, b)| a + b)
            .collect()
    }
}
