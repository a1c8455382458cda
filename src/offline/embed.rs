//! The built-in hashing embedder: content words and their character
//! n-grams hashed into a fixed number of signed buckets. No weights, no
//! network; similar wording gives similar vectors, meaning beyond wording
//! is out of its reach.

use crate::offline::words::terms;

/// Dimension of its vectors.
pub const DIMENSION: usize = 256;

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The unit vector of `text`.
pub fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMENSION];
    let mut add = |feature: &str, w: f32| {
        let h = fnv(feature);
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        v[(h % DIMENSION as u64) as usize] += sign * w;
    };
    let ts = terms(text);
    for t in &ts {
        add(t, 1.0);
        let padded: Vec<char> = format!("<{t}>").chars().collect();
        for n in [3usize, 4] {
            for g in padded.windows(n) {
                add(&g.iter().collect::<String>(), 0.25);
            }
        }
    }
    for pair in ts.windows(2) {
        add(&format!("{} {}", pair[0], pair[1]), 0.5);
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        // No content words: a fixed direction, so the vector is still valid.
        v[0] = 1.0;
    }
    v
}
