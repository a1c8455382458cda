//! The encoding's wire format: the tag byte that opens every value, the
//! LEB128 numbers, and the codec's error. The serializer (`encode.rs`), the
//! deserializer (`decode.rs`) and the JSON transcoder (`json.rs`) share it.

use serde::{de, ser};

/// Why a value could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CodecError(pub(super) String);

impl ser::Error for CodecError {
    fn custom<T: core::fmt::Display>(msg: T) -> Self {
        CodecError(msg.to_string())
    }
}

impl de::Error for CodecError {
    fn custom<T: core::fmt::Display>(msg: T) -> Self {
        CodecError(msg.to_string())
    }
}

pub(super) type Res<T> = Result<T, CodecError>;

pub(super) const UNIT: u8 = 0;
pub(super) const FALSE: u8 = 1;
pub(super) const TRUE: u8 = 2;
pub(super) const UINT: u8 = 3;
pub(super) const NINT: u8 = 4;
pub(super) const F64: u8 = 5;
pub(super) const F32: u8 = 6;
pub(super) const STR: u8 = 7;
pub(super) const BYTES: u8 = 8;
pub(super) const SEQ: u8 = 9;
pub(super) const MAP: u8 = 10;
pub(super) const NAME_NEW: u8 = 11;
pub(super) const NAME_REF: u8 = 12;
/// Tags from this one up are a name used before, its id the tag minus this.
pub(super) const NAME_SHORT: u8 = 16;
/// Ids below this are written as one byte (`NAME_SHORT + id`).
pub(super) const SHORT_NAMES: u64 = (u8::MAX - NAME_SHORT) as u64 + 1;

/// Appends `n` as LEB128.
pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Reads a LEB128 number at `*pos`.
pub fn get_varint(input: &[u8], pos: &mut usize) -> Res<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *input
            .get(*pos)
            .ok_or_else(|| CodecError("truncated number".into()))?;
        *pos += 1;
        n |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(n);
        }
    }
    Err(CodecError("number longer than 64 bits".into()))
}
