//! The binary encoding of stored values: a compact, self-describing serde
//! format (in the family of CBOR and MessagePack, without their dependency).
//!
//! Every value starts with a one-byte tag:
//!
//! | tag | value                                                     |
//! |-----|-----------------------------------------------------------|
//! | 0   | unit / none                                               |
//! | 1,2 | false, true                                               |
//! | 3   | integer >= 0, LEB128                                      |
//! | 4   | integer < 0: LEB128 of `-(n + 1)`                         |
//! | 5   | f64, 8 bytes little-endian                                |
//! | 6   | f32, 4 bytes little-endian                                |
//! | 7   | string: LEB128 length, UTF-8                              |
//! | 8   | bytes: LEB128 length, raw                                 |
//! | 9   | sequence: LEB128 count, values                            |
//! | 10  | map: LEB128 count, key and value pairs                    |
//! | 11  | a name, first use: LEB128 length, UTF-8 (gets the next id)|
//! | 12  | a name used before: LEB128 id                             |
//! | 16-255 | a name used before, id 0-239 (one byte; since version 4 of stored entries) |
//!
//! Names are struct field names and enum variant names: each is spelled once
//! per document and referred to by number after (in one byte for a
//! document's first 240 names), so a segment of a thousand facts spells
//! `"subject"` once. The tag of an internally tagged enum is a string to serde;
//! the encoder writes the value of the fields its caller names as tags as
//! a name too ([`to_bytes_tagged`]), which every reader takes where a
//! string is expected. Structs are maps keyed by name and enums
//! are a name (unit variants) or a one-entry map from name to content, so
//! optional and defaulted fields, internally tagged enums and renamed fields
//! read as they do in JSON: a value written by an older build reads in a
//! newer one. Vectors use `serialize_bytes` (see [`crate::base::bytes`]).

use serde::de::{self, DeserializeSeed};
use serde::ser::Serialize;

/// Serde helper for `skip_serializing_if`: skip `false`.
pub fn is_false(b: &bool) -> bool {
    !*b
}

/// Encodes `value`.
pub fn to_bytes<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    to_bytes_tagged(value, &[])
}

/// Encodes `value`, writing the string value of each field named in
/// `tag_fields` as a name: the tags of internally tagged enums, the same
/// few words over and over, which the caller knows (the stored format
/// names them). Any other string stays a string (interning free text
/// would grow the name list without bound).
pub fn to_bytes_tagged<T: Serialize + ?Sized>(
    value: &T,
    tag_fields: &'static [&'static str],
) -> Vec<u8> {
    let mut enc = Encoder::new(tag_fields);
    value
        .serialize(&mut enc)
        .expect("engram types encode (maps have known lengths)");
    enc.out
}

/// Decodes one value that must fill `bytes` exactly.
pub fn from_bytes<'a, T: de::Deserialize<'a>>(bytes: &'a [u8]) -> Res<T> {
    let mut dec = Decoder::new(bytes);
    let v = T::deserialize(&mut dec)?;
    filled(&dec)?;
    Ok(v)
}

/// Whether the value read filled its bytes (apart from [`from_bytes`], which
/// is compiled once per type read: the wasm keeps one copy of this).
fn filled(dec: &Decoder) -> Res<()> {
    match dec.input.len() - dec.pos {
        0 => Ok(()),
        left => Err(CodecError(format!(
            "{left} bytes left over after the value"
        ))),
    }
}

/// Reads JSON text as `T` through this encoding: the text is transcoded to
/// bytes (one pass, order and repeated keys kept), then decoded as
/// [`from_bytes`] does. Every type is then read by one generic path, the
/// decoder's, instead of two (serde monomorphises a type's reading for each
/// format; the JSON copy was a tenth of the `.wasm`). A syntax error names
/// its line and column; a value of the wrong shape is reported as the
/// decoder reports it (without a position).
pub fn from_json<T: de::DeserializeOwned>(text: &str) -> Res<T> {
    from_bytes(&json_to_bytes(text)?)
}

/// JSON text in this encoding (the part of [`from_json`] that is the same
/// for every type).
pub fn json_to_bytes(text: &str) -> Res<Vec<u8>> {
    let mut json = serde_json::Deserializer::from_str(text);
    let mut bytes = Vec::with_capacity(text.len());
    DeserializeSeed::deserialize(Transcode(&mut bytes), &mut json)
        .and_then(|()| json.end())
        .map_err(|e| CodecError(e.to_string()))?;
    Ok(bytes)
}

/// [`from_json`] over bytes, which must be UTF-8 (as JSON is).
pub fn from_json_slice<T: de::DeserializeOwned>(bytes: &[u8]) -> Res<T> {
    let text =
        core::str::from_utf8(bytes).map_err(|e| CodecError(format!("JSON is not UTF-8: {e}")))?;
    from_json(text)
}

mod decode;
pub mod encode;
mod json;
#[cfg(test)]
mod tests;
pub mod wire;

use crate::base::codec::decode::Decoder;
use crate::base::codec::encode::Encoder;
use crate::base::codec::json::Transcode;
use crate::base::codec::wire::{CodecError, Res};
