//! Byte helpers every layer uses: f16 and base64 for
//! vectors, and the checksum of stored values.
//!
//! Every vector the memory keeps is at f16 precision ([`round`] at the
//! model boundary and on every read), so it is stored exactly in half the
//! bytes of f32: as raw little-endian f16 in the binary encoding, and as
//! little-endian f32 bytes in base64 in JSON (exports and format 1 and 2
//! values, exact and a fifth of a JSON number array; see
//! [`crate::types::embedding`]). f16 keeps 11 significant bits: a cosine between
//! unit vectors moves by at most about 1e-3, below any threshold's meaning
//! (docs/DECISIONS.md).

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `x` rounded to the nearest f16 (ties to even), as f32.
pub fn round(x: f32) -> f32 {
    from_f16(to_f16(x))
}

/// The f16 bits nearest `x` (ties to even; beyond the range: infinity).
pub fn to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rem = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

/// The value of f16 bits `h`.
pub fn from_f16(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            let v = man as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        0x1f => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// Encodes a vector as base64 of its f32 bytes.
pub fn encode(v: &[f32]) -> String {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes base64 f32 bytes.
pub fn decode(s: &str) -> Result<Vec<f32>, String> {
    let mut bytes = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = ALPHABET
            .iter()
            .position(|&a| a == c)
            .ok_or("bad base64 in a vector")? as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if bytes.len() % 4 != 0 {
        return Err("vector bytes are not a whole number of f32".into());
    }
    Ok(bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// The checksum of stored entries and segments (format 3): FNV-1a's step
/// over 8-byte little-endian words, then the remaining bytes and the length.
/// Each step is a bijection of the running value, so any change confined to
/// one word is always caught; it catches damage and edits, not a forger. It
/// runs at memory speed (a byte-wise FNV was 7 % of opening a memory).
pub fn value_checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x100000001b3;
    let mut h = 0xcbf29ce484222325u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().expect("8 bytes"))).wrapping_mul(PRIME);
    }
    for &b in words.remainder() {
        h = (h ^ b as u64).wrapping_mul(PRIME);
    }
    (h ^ bytes.len() as u64).wrapping_mul(PRIME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_exactly() {
        for v in [
            vec![],
            vec![1.0f32],
            vec![0.1, -2.5, f32::MIN_POSITIVE],
            vec![3.0; 7],
        ] {
            assert_eq!(decode(&encode(&v)).unwrap(), v);
        }
    }

    #[test]
    fn every_f16_survives_the_round_trip() {
        for h in 0..=u16::MAX {
            let x = from_f16(h);
            if x.is_nan() {
                continue;
            }
            assert_eq!(to_f16(x), h, "{h:#06x}");
        }
    }

    #[test]
    fn rounding_is_to_the_nearest_half() {
        let mut seed = 7u64;
        for _ in 0..100_000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let x = f32::from_bits((seed >> 32) as u32 & 0xbfff_ffff);
            if !x.is_finite() || x.abs() > 60_000.0 {
                continue;
            }
            let r = round(x);
            let h = to_f16(x);
            let (lo, hi) = (from_f16(h.wrapping_sub(1)), from_f16(h.wrapping_add(1)));
            for n in [lo, hi] {
                if n.is_finite() && (n - x).abs() < (r - x).abs() {
                    panic!("{x} rounded to {r}, but {n} is nearer");
                }
            }
        }
        assert_eq!(round(1.0 + 1.0 / 4096.0), 1.0, "ties go to even");
    }
}
