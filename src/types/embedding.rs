//! Embeddings as a memory keeps them: at f16, in memory as in the store.
//!
//! Every vector a model returns is normalised and rounded to f16 once, where
//! it enters ([`crate::llm::normalise`]); from then on it is exactly a
//! vector of f16 values, so keeping the 16-bit codes loses nothing and
//! halves the memory an f32 copy took (at 100k facts of 384 dimensions,
//! 77 MB less for facts alone). Cosines are computed in f32 over the decoded
//! values in the same order as [`crate::base::text::cosine`], so every ranking is
//! bit for bit the one the f32 vectors gave.
//!
//! Stored values hold the codes as raw little-endian bytes; exports hold
//! base64 f32 text (see [`crate::base::bytes`]).

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::bytes::{decode, encode, to_f16};

/// A vector kept at f16 (empty for an item with no embedding).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Embedding(Vec<u16>);

impl Embedding {
    /// `v` rounded to f16 (ties to even).
    pub fn from_f32(v: &[f32]) -> Embedding {
        Embedding(v.iter().map(|&x| to_f16(x)).collect())
    }

    /// Its dimension (0 for none).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no vector.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Drops the vector (erasure).
    pub fn clear(&mut self) {
        self.0 = Vec::new();
    }

    /// The values, as f32.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = f32> + '_ {
        self.0.iter().map(|&h| widen(h))
    }

    /// The values, as f32.
    pub fn to_f32(&self) -> Vec<f32> {
        self.iter().collect()
    }

    /// Cosine of `q` and this vector, exactly [`crate::base::text::cosine`] of
    /// `q` and [`Embedding::to_f32`].
    /// The cosine with `q`: exactly [`crate::base::text::cosine_of`] over
    /// `q` and the decoded values (the same sums in the same order), the
    /// values decoded a block at a time (a loop the compiler vectorises)
    /// before they are summed.
    pub fn cosine(&self, q: &[f32]) -> f32 {
        let [c] = cosines(q, [self]);
        c
    }
}

/// Values decoded at a time by [`cosines`].
const BLOCK: usize = 64;

/// The cosines of `q` with `N` embeddings at once, each exactly
/// [`Embedding::cosine`]: the same sums in the same order for each, but
/// the `N` sums run side by side, so a cosine no longer waits on each
/// addition of the one before (a sum of 384 terms in order is a chain of
/// 384 dependent additions; `N` chains overlap), and each block of values
/// is decoded in a loop the compiler vectorises.
pub fn cosines<const N: usize>(q: &[f32], es: [&Embedding; N]) -> [f32; N] {
    let mut out = [0.0f32; N];
    // Embeddings of unequal lengths: one at a time (each sums over the
    // shorter of it and the query).
    let n = q.len().min(es.first().map_or(0, |e| e.len()));
    if es.iter().any(|e| q.len().min(e.len()) != n) && N > 1 {
        for (o, e) in out.iter_mut().zip(es) {
            *o = e.cosine(q);
        }
        return out;
    }
    let (mut dot, mut nb) = ([0.0f32; N], [0.0f32; N]);
    let mut na = 0.0f32;
    let mut buf = [[0.0f32; BLOCK]; N];
    let mut at = 0;
    while at < n {
        let len = BLOCK.min(n - at);
        for (b, e) in buf.iter_mut().zip(es) {
            for (o, &h) in b[..len].iter_mut().zip(&e.0[at..at + len]) {
                *o = widen(h);
            }
        }
        for (i, &x) in q[at..at + len].iter().enumerate() {
            for k in 0..N {
                let y = buf[k][i];
                dot[k] += x * y;
                nb[k] += y * y;
            }
            na += x * x;
        }
        at += len;
    }
    for k in 0..N {
        out[k] = if na == 0.0 || nb[k] == 0.0 {
            0.0
        } else {
            dot[k] / (na.sqrt() * nb[k].sqrt())
        };
    }
    out
}

/// The value of f16 bits `h`, without a branch (so loops over a vector can
/// be vectorised): normal numbers by a shift and an add, zeros and
/// subnormals as their mantissa times 2^-24 (exact in f32), infinities and
/// NaNs with the f32 exponent's bits all set; the sign is put back last.
/// Tested against `bytes::from_f16` over every value.
#[inline]
fn widen(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let magnitude = (h & 0x7fff) as u32;
    let normal = (magnitude << 13) + 0x3800_0000;
    let special = (magnitude << 13) | 0x7f80_0000;
    let tiny = (magnitude as f32 * (1.0 / 16_777_216.0)).to_bits();
    let bits = if magnitude < 0x0400 {
        tiny
    } else if magnitude >= 0x7c00 {
        special
    } else {
        normal
    };
    f32::from_bits(sign | bits)
}

impl From<Vec<f32>> for Embedding {
    fn from(v: Vec<f32>) -> Embedding {
        Embedding::from_f32(&v)
    }
}

impl From<&[f32]> for Embedding {
    fn from(v: &[f32]) -> Embedding {
        Embedding::from_f32(v)
    }
}

impl std::fmt::Debug for Embedding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A vector of either search index: the decoded f32 of a query or a test,
/// or an [`Embedding`].
pub trait Vector {
    /// Its dimension.
    fn dim(&self) -> usize;
    /// Cosine with `q`, exactly [`crate::base::text::cosine`] over f32 values.
    fn cosine_with(&self, q: &[f32]) -> f32;
}

impl Vector for [f32] {
    fn dim(&self) -> usize {
        self.len()
    }
    fn cosine_with(&self, q: &[f32]) -> f32 {
        crate::base::text::cosine(q, self)
    }
}

impl Vector for Embedding {
    fn dim(&self) -> usize {
        self.len()
    }
    fn cosine_with(&self, q: &[f32]) -> f32 {
        self.cosine(q)
    }
}

impl Serialize for Embedding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&encode(&self.to_f32()))
        } else {
            let bytes: Vec<u8> = self.0.iter().flat_map(|h| h.to_le_bytes()).collect();
            s.serialize_bytes(&bytes)
        }
    }
}

impl<'de> Deserialize<'de> for Embedding {
    /// Either form, whatever the deserializer claims to be (serde's
    /// buffering of tagged enums reports human-readable).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Embedding, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Embedding;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a vector: base64 f32 text or f16 bytes")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Embedding, E> {
                Ok(Embedding::from_f32(&decode(s).map_err(E::custom)?))
            }
            fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Embedding, E> {
                if b.len() % 2 != 0 {
                    return Err(E::custom("vector bytes are not a whole number of f16"));
                }
                Ok(Embedding(
                    b.chunks_exact(2)
                        .map(|c| u16::from_le_bytes([c[0], c[1]]))
                        .collect(),
                ))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::bytes::from_f16;

    #[test]
    fn an_embedding_keeps_the_f16_values_and_ranks_as_f32_did() {
        let v: Vec<f32> = (0..50)
            .map(|i| ((i * 37 % 11) as f32 - 5.0) / 7.3)
            .collect();
        let rounded: Vec<f32> = v.iter().map(|&x| crate::base::bytes::round(x)).collect();
        let e = Embedding::from_f32(&v);
        assert_eq!(e.to_f32(), rounded);
        let q: Vec<f32> = (0..50).map(|i| (i as f32).sin()).collect();
        assert_eq!(
            e.cosine(&q).to_bits(),
            crate::base::text::cosine(&q, &rounded).to_bits()
        );
        assert_eq!(Embedding::default().cosine(&q), 0.0);
    }

    #[test]
    fn cosines_side_by_side_are_each_the_cosine_bit_for_bit() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        for case in 0..300 {
            let dim = [0, 1, 5, 63, 64, 65, 200, 384][case % 8];
            let mut vector = |scale: f32| -> Vec<f32> {
                (0..dim)
                    .map(|_| match next() % 40 {
                        0 => 0.0,
                        1 => 1e-6 * scale,
                        _ => (next() % 2001) as f32 / 1000.0 - 1.0,
                    })
                    .collect()
            };
            let q = vector(1.0);
            let es: Vec<Embedding> = (0..4)
                .map(|k| match (case + k) % 11 {
                    0 => Embedding::default(),
                    1 => Embedding::from_f32(&vector(0.0)[..dim / 2]),
                    _ => Embedding::from_f32(&vector(1.0)),
                })
                .collect();
            let want: Vec<u32> = es
                .iter()
                .map(|e| crate::base::text::cosine_of(q.iter().copied(), e.iter()).to_bits())
                .collect();
            let four = cosines(&q, [&es[0], &es[1], &es[2], &es[3]]);
            assert_eq!(four.map(f32::to_bits).to_vec(), want, "case {case}");
            for (e, w) in es.iter().zip(&want) {
                assert_eq!(e.cosine(&q).to_bits(), *w, "case {case}");
            }
        }
    }

    #[test]
    fn every_f16_widens_to_its_value() {
        for h in 0..=u16::MAX {
            let (a, b) = (widen(h), from_f16(h));
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{h:#x}"
            );
        }
    }

    #[test]
    fn an_embedding_reads_back_from_both_stored_forms() {
        let e = Embedding::from_f32(&[0.5, -0.25, 0.125, 1.0]);
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Embedding>(&json).unwrap(), e);
        let bytes = crate::base::codec::to_bytes(&e);
        assert_eq!(
            crate::base::codec::from_bytes::<Embedding>(&bytes).unwrap(),
            e
        );
    }
}
