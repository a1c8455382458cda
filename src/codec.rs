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
//! `"subject"` once. The tag of an internally tagged enum (the `"type"` of
//! an event) is a string to serde; the encoder writes it as a name too (see
//! [`TAG_FIELDS`]), which every reader takes where a string is expected. Structs are maps keyed by name and enums
//! are a name (unit variants) or a one-entry map from name to content, so
//! optional and defaulted fields, internally tagged enums and renamed fields
//! read as they do in JSON: a value written by an older build reads in a
//! newer one. Vectors use `serialize_bytes` (see [`crate::bytes`]).

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, Serialize};
use std::borrow::Cow;

/// Why a value could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CodecError(String);

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

type Res<T> = Result<T, CodecError>;

const UNIT: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const UINT: u8 = 3;
const NINT: u8 = 4;
const F64: u8 = 5;
const F32: u8 = 6;
const STR: u8 = 7;
const BYTES: u8 = 8;
const SEQ: u8 = 9;
const MAP: u8 = 10;
const NAME_NEW: u8 = 11;
const NAME_REF: u8 = 12;
/// Tags from this one up are a name used before, its id the tag minus this.
const NAME_SHORT: u8 = 16;
/// Ids below this are written as one byte (`NAME_SHORT + id`).
const SHORT_NAMES: u64 = (u8::MAX - NAME_SHORT) as u64 + 1;

/// Fields whose string value is written as a name: the tags of this
/// crate's internally tagged enums (`Event`'s `type`, `Resolution`'s
/// `how`), the same few words over and over. Any other string stays a
/// string (interning free text would grow the name list without bound).
const TAG_FIELDS: [&str; 2] = ["type", "how"];

/// Serde helper for `skip_serializing_if`: skip `false`.
pub fn is_false(b: &bool) -> bool {
    !*b
}

/// Encodes `value`.
pub fn to_bytes<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut enc = Encoder::default();
    value
        .serialize(&mut enc)
        .expect("engram types encode (maps have known lengths)");
    enc.out
}

/// Decodes one value that must fill `bytes` exactly.
pub fn from_bytes<'a, T: de::Deserialize<'a>>(bytes: &'a [u8]) -> Res<T> {
    let mut dec = Decoder {
        input: bytes,
        pos: 0,
        names: Vec::new(),
        depth: 0,
    };
    let v = T::deserialize(&mut dec)?;
    if dec.pos != bytes.len() {
        return Err(CodecError(format!(
            "{} bytes left over after the value",
            bytes.len() - dec.pos
        )));
    }
    Ok(v)
}

/// Reads JSON text as `T` through this encoding: the text is transcoded to
/// bytes (one pass, order and repeated keys kept), then decoded as
/// [`from_bytes`] does. Every type is then read by one generic path, the
/// decoder's, instead of two (serde monomorphises a type's reading for each
/// format; the JSON copy was a tenth of the `.wasm`). A syntax error names
/// its line and column; a value of the wrong shape is reported as the
/// decoder reports it (without a position).
pub fn from_json<T: de::DeserializeOwned>(text: &str) -> Res<T> {
    let mut json = serde_json::Deserializer::from_str(text);
    let mut bytes = Vec::with_capacity(text.len());
    DeserializeSeed::deserialize(Transcode(&mut bytes), &mut json)
        .and_then(|()| json.end())
        .map_err(|e| CodecError(e.to_string()))?;
    from_bytes(&bytes)
}

/// [`from_json`] over bytes, which must be UTF-8 (as JSON is).
pub fn from_json_slice<T: de::DeserializeOwned>(bytes: &[u8]) -> Res<T> {
    let text =
        core::str::from_utf8(bytes).map_err(|e| CodecError(format!("JSON is not UTF-8: {e}")))?;
    from_json(text)
}

/// Writes the JSON value it is given in this encoding (see [`from_json`]).
struct Transcode<'a>(&'a mut Vec<u8>);

/// The bytes a transcoded count takes: LEB128 padded to this length (the
/// decoder reads padded numbers), written once the items are counted, so
/// nothing is moved (up to 2^35 items, more than any text holds).
const COUNT_BYTES: usize = 5;

impl Transcode<'_> {
    /// Leaves room for a count; returns where it goes.
    fn count_room(&mut self) -> usize {
        let at = self.0.len();
        self.0.extend_from_slice(&[0; COUNT_BYTES]);
        at
    }
    /// Writes the count of a sequence or map in the room left before its items.
    fn count_at(&mut self, at: usize, n: u64) {
        for (i, b) in self.0[at..at + COUNT_BYTES].iter_mut().enumerate() {
            let more = if i + 1 < COUNT_BYTES { 0x80 } else { 0 };
            *b = ((n >> (7 * i)) & 0x7f) as u8 | more;
        }
    }
}

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();
    fn expecting(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.push(UNIT);
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.0.push(if v { TRUE } else { FALSE });
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.0.push(UINT);
        put_varint(self.0, v);
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        if v >= 0 {
            return self.visit_u64(v as u64);
        }
        self.0.push(NINT);
        put_varint(self.0, !(v as u64));
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.0.push(F64);
        self.0.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push(STR);
        put_varint(self.0, v.len() as u64);
        self.0.extend_from_slice(v.as_bytes());
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.0.push(SEQ);
        let at = self.count_room();
        let mut n = 0;
        while seq.next_element_seed(Transcode(self.0))?.is_some() {
            n += 1;
        }
        self.count_at(at, n);
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.0.push(MAP);
        let at = self.count_room();
        let mut n = 0;
        while map.next_key_seed(Transcode(self.0))?.is_some() {
            map.next_value_seed(Transcode(self.0))?;
            n += 1;
        }
        self.count_at(at, n);
        Ok(())
    }
}

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

/// Encodes a struct field by field, for a value whose encoding is needed in
/// parts: [`StructWriter::bytes`] gives the fields written so far (a log
/// entry's id is a checksum of its other fields, then written after them).
/// The result decodes as the struct with those fields, in any order.
pub struct StructWriter {
    enc: Encoder,
}

impl StructWriter {
    /// Starts a struct of `fields` fields (exactly that many must follow).
    pub fn new(fields: usize) -> StructWriter {
        let mut enc = Encoder {
            out: Vec::with_capacity(4096),
            names: Vec::with_capacity(64),
        };
        enc.tag(MAP);
        enc.len(fields);
        StructWriter { enc }
    }

    /// Writes one field.
    pub fn field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) {
        self.enc.name(name);
        value
            .serialize(&mut self.enc)
            .expect("engram types encode (maps have known lengths)");
    }

    /// The bytes written so far.
    pub fn bytes(&self) -> &[u8] {
        &self.enc.out
    }

    /// The encoded struct.
    pub fn finish(self) -> Vec<u8> {
        self.enc.out
    }
}

#[derive(Default)]
struct Encoder {
    out: Vec<u8>,
    // The names spelled so far, in order of their ids: a list, not a map (a
    // value has a few dozen; a name is nearly always the same `&'static str`
    // as before, found by its address; no random seed either way). A tag
    // value (see [`TAG_FIELDS`]) is owned: serde hands it over as a `&str`.
    names: Vec<Cow<'static, str>>,
}

impl Encoder {
    fn tag(&mut self, t: u8) {
        self.out.push(t);
    }
    fn len(&mut self, n: usize) {
        put_varint(&mut self.out, n as u64);
    }
    fn name(&mut self, name: &'static str) {
        let same = |n: &Cow<str>| core::ptr::eq(n.as_ptr(), name.as_ptr()) && n.len() == name.len();
        let found = match self.names.iter().position(same) {
            Some(i) => Some(i),
            None => self.names.iter().position(|n| n == name),
        };
        match found {
            Some(id) => self.name_ref(id),
            None => self.name_new(Cow::Borrowed(name)),
        }
    }
    fn name_ref(&mut self, id: usize) {
        if (id as u64) < SHORT_NAMES {
            self.tag(NAME_SHORT + id as u8);
        } else {
            self.tag(NAME_REF);
            put_varint(&mut self.out, id as u64);
        }
    }
    fn name_new(&mut self, name: Cow<'static, str>) {
        self.tag(NAME_NEW);
        self.len(name.len());
        self.out.extend_from_slice(name.as_bytes());
        self.names.push(name);
    }
    /// Rewrites the string written from `start` (if it is one) as a name.
    fn intern_from(&mut self, start: usize) {
        if self.out.get(start) != Some(&STR) {
            return;
        }
        let mut at = start + 1;
        let n = get_varint(&self.out, &mut at).expect("written just now") as usize;
        let Ok(text) = core::str::from_utf8(&self.out[at..at + n]) else {
            return;
        };
        let found = self.names.iter().position(|m| m == text);
        let text = text.to_string();
        self.out.truncate(start);
        match found {
            Some(id) => self.name_ref(id),
            None => self.name_new(Cow::Owned(text)),
        }
    }
    fn uint(&mut self, v: u64) {
        self.tag(UINT);
        put_varint(&mut self.out, v);
    }
    fn int(&mut self, v: i64) {
        if v >= 0 {
            self.uint(v as u64);
        } else {
            self.tag(NINT);
            put_varint(&mut self.out, !(v as u64));
        }
    }
}

impl<'a> ser::Serializer for &'a mut Encoder {
    type Ok = ();
    type Error = CodecError;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn is_human_readable(&self) -> bool {
        false
    }
    fn serialize_bool(self, v: bool) -> Res<()> {
        self.tag(if v { TRUE } else { FALSE });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Res<()> {
        self.int(v as i64);
        Ok(())
    }
    fn serialize_i16(self, v: i16) -> Res<()> {
        self.int(v as i64);
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> Res<()> {
        self.int(v as i64);
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> Res<()> {
        self.int(v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Res<()> {
        self.uint(v as u64);
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> Res<()> {
        self.uint(v as u64);
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> Res<()> {
        self.uint(v as u64);
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Res<()> {
        self.uint(v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Res<()> {
        self.tag(F32);
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Res<()> {
        self.tag(F64);
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Res<()> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Res<()> {
        self.tag(STR);
        self.len(v.len());
        self.out.extend_from_slice(v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Res<()> {
        self.tag(BYTES);
        self.len(v.len());
        self.out.extend_from_slice(v);
        Ok(())
    }
    fn serialize_none(self) -> Res<()> {
        self.tag(UNIT);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Res<()> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Res<()> {
        self.tag(UNIT);
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Res<()> {
        self.tag(UNIT);
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Res<()> {
        self.name(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Res<()> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Res<()> {
        self.tag(MAP);
        self.len(1);
        self.name(variant);
        value.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Res<Compound<'a>> {
        let len = len.ok_or_else(|| CodecError("sequences need a known length".into()))?;
        self.tag(SEQ);
        self.len(len);
        Ok(Compound(self))
    }
    fn serialize_tuple(self, len: usize) -> Res<Compound<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Res<Compound<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Res<Compound<'a>> {
        self.tag(MAP);
        self.len(1);
        self.name(variant);
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, len: Option<usize>) -> Res<Compound<'a>> {
        let len = len.ok_or_else(|| CodecError("maps need a known length".into()))?;
        self.tag(MAP);
        self.len(len);
        Ok(Compound(self))
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Res<Compound<'a>> {
        // Fields skipped by `skip_serializing_if` are not counted in `len`
        // by serde_derive (it counts them out before calling this).
        self.tag(MAP);
        self.len(len);
        Ok(Compound(self))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Res<Compound<'a>> {
        self.tag(MAP);
        self.len(1);
        self.name(variant);
        self.serialize_struct("", len)
    }
}

struct Compound<'a>(&'a mut Encoder);

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = CodecError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Res<()> {
        v.serialize(&mut *self.0)
    }
    fn end(self) -> Res<()> {
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = CodecError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Res<()> {
        v.serialize(&mut *self.0)
    }
    fn end(self) -> Res<()> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = CodecError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Res<()> {
        v.serialize(&mut *self.0)
    }
    fn end(self) -> Res<()> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = CodecError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Res<()> {
        v.serialize(&mut *self.0)
    }
    fn end(self) -> Res<()> {
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = CodecError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Res<()> {
        k.serialize(&mut *self.0)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Res<()> {
        v.serialize(&mut *self.0)
    }
    fn end(self) -> Res<()> {
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = CodecError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Res<()> {
        self.0.name(key);
        let start = self.0.out.len();
        v.serialize(&mut *self.0)?;
        if TAG_FIELDS.contains(&key) {
            self.0.intern_from(start);
        }
        Ok(())
    }
    fn end(self) -> Res<()> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = CodecError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Res<()> {
        self.0.name(key);
        v.serialize(&mut *self.0)
    }
    fn end(self) -> Res<()> {
        Ok(())
    }
}

/// Nesting deeper than this is refused (a crafted value cannot exhaust the
/// stack).
const MAX_DEPTH: usize = 128;

struct Decoder<'de> {
    input: &'de [u8],
    pos: usize,
    /// Spans of the names defined so far in this document.
    names: Vec<(usize, usize)>,
    depth: usize,
}

impl<'de> Decoder<'de> {
    fn peek(&self) -> Res<u8> {
        self.input
            .get(self.pos)
            .copied()
            .ok_or_else(|| CodecError("truncated value".into()))
    }
    fn take(&mut self, n: usize) -> Res<&'de [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.input.len())
            .ok_or_else(|| CodecError("truncated value".into()))?;
        let s = &self.input[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn varint(&mut self) -> Res<u64> {
        get_varint(self.input, &mut self.pos)
    }
    /// A length or count, which cannot exceed the bytes left (every item
    /// takes at least one byte).
    fn count(&mut self) -> Res<usize> {
        let n = self.varint()?;
        if n > (self.input.len() - self.pos) as u64 {
            return Err(CodecError(format!("length {n} runs past the end")));
        }
        Ok(n as usize)
    }
    fn str_at(&self, (start, end): (usize, usize)) -> Res<&'de str> {
        core::str::from_utf8(&self.input[start..end])
            .map_err(|_| CodecError("a string is not UTF-8".into()))
    }
    fn text(&mut self) -> Res<&'de str> {
        let n = self.count()?;
        let start = self.pos;
        self.take(n)?;
        self.str_at((start, start + n))
    }
    /// Reads a string or a name.
    fn string(&mut self) -> Res<&'de str> {
        match self.take(1)?[0] {
            STR => self.text(),
            NAME_NEW => {
                let n = self.count()?;
                let start = self.pos;
                self.take(n)?;
                let s = self.str_at((start, start + n))?;
                self.names.push((start, start + n));
                Ok(s)
            }
            NAME_REF => {
                let id = self.varint()?;
                self.name_at(id)
            }
            t if t >= NAME_SHORT => self.name_at((t - NAME_SHORT) as u64),
            t => Err(CodecError(format!("expected a string, found tag {t}"))),
        }
    }
    fn name_at(&self, id: u64) -> Res<&'de str> {
        let span = *self
            .names
            .get(id as usize)
            .ok_or_else(|| CodecError(format!("name {id} was never defined")))?;
        self.str_at(span)
    }
    /// An integer value: `Ok` for one >= 0, `Err` for a negative one;
    /// `None` (nothing read) when the next value is not an integer.
    fn integer(&mut self) -> Res<Option<Result<u64, i64>>> {
        match self.peek()? {
            UINT => {
                self.pos += 1;
                Ok(Some(Ok(self.varint()?)))
            }
            NINT => {
                self.pos += 1;
                let n = self.varint()?;
                if n > i64::MAX as u64 {
                    return Err(CodecError("negative integer out of range".into()));
                }
                Ok(Some(Err(!(n as i64))))
            }
            _ => Ok(None),
        }
    }
    /// A float value (the tag is F64 or F32).
    fn float(&mut self) -> Res<f64> {
        if self.take(1)?[0] == F64 {
            let b = self.take(8)?;
            Ok(f64::from_le_bytes(b.try_into().expect("8 bytes")))
        } else {
            let b = self.take(4)?;
            Ok(f32::from_le_bytes(b.try_into().expect("4 bytes")) as f64)
        }
    }
    /// Skips one value of any kind (names it defines are kept).
    fn skip(&mut self) -> Res<()> {
        match self.take(1)?[0] {
            UNIT | FALSE | TRUE => Ok(()),
            UINT | NINT => self.varint().map(drop),
            F64 => self.take(8).map(drop),
            F32 => self.take(4).map(drop),
            STR | NAME_NEW | NAME_REF | NAME_SHORT.. => {
                self.pos -= 1;
                self.string().map(drop)
            }
            BYTES => {
                let n = self.count()?;
                self.take(n).map(drop)
            }
            t @ (SEQ | MAP) => {
                let n = self.count()?;
                self.enter()?;
                let items = if t == MAP { n.saturating_mul(2) } else { n };
                for _ in 0..items {
                    self.skip()?;
                }
                self.depth -= 1;
                Ok(())
            }
            t => Err(CodecError(format!("unknown tag {t}"))),
        }
    }
    /// serde's "invalid type: <what is there>, expected <what the reader
    /// wanted>" for the value at the cursor (nothing is consumed).
    fn invalid(&self, expected: &dyn de::Expected) -> CodecError {
        let mut probe = Decoder {
            input: self.input,
            pos: self.pos,
            names: self.names.clone(),
            depth: self.depth,
        };
        let unexpected = match probe.take(1).map(|t| t[0]) {
            Ok(UNIT) => de::Unexpected::Unit,
            Ok(FALSE) => de::Unexpected::Bool(false),
            Ok(TRUE) => de::Unexpected::Bool(true),
            Ok(UINT | NINT) => {
                probe.pos -= 1;
                match probe.integer() {
                    Ok(Some(Ok(n))) => de::Unexpected::Unsigned(n),
                    Ok(Some(Err(n))) => de::Unexpected::Signed(n),
                    _ => de::Unexpected::Other("an integer"),
                }
            }
            Ok(F64 | F32) => {
                probe.pos -= 1;
                match probe.float() {
                    Ok(v) => de::Unexpected::Float(v),
                    Err(_) => de::Unexpected::Other("a float"),
                }
            }
            Ok(STR | NAME_NEW | NAME_REF | NAME_SHORT..) => {
                probe.pos -= 1;
                match probe.string() {
                    Ok(s) => de::Unexpected::Str(s),
                    Err(e) => return e,
                }
            }
            Ok(BYTES) => de::Unexpected::Other("bytes"),
            Ok(SEQ) => de::Unexpected::Seq,
            Ok(MAP) => de::Unexpected::Map,
            Ok(t) => return CodecError(format!("unknown tag {t}")),
            Err(e) => return e,
        };
        de::Error::invalid_type(unexpected, expected)
    }
    fn enter(&mut self) -> Res<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CodecError("nested too deeply".into()));
        }
        Ok(())
    }
}

impl<'de> de::Deserializer<'de> for &mut Decoder<'de> {
    type Error = CodecError;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        match self.peek()? {
            UNIT => {
                self.pos += 1;
                visitor.visit_unit()
            }
            FALSE => {
                self.pos += 1;
                visitor.visit_bool(false)
            }
            TRUE => {
                self.pos += 1;
                visitor.visit_bool(true)
            }
            UINT => {
                self.pos += 1;
                visitor.visit_u64(self.varint()?)
            }
            NINT => {
                self.pos += 1;
                let n = self.varint()?;
                if n > i64::MAX as u64 {
                    return Err(CodecError("negative integer out of range".into()));
                }
                visitor.visit_i64(!(n as i64))
            }
            F64 => {
                self.pos += 1;
                let b = self.take(8)?;
                visitor.visit_f64(f64::from_le_bytes(b.try_into().expect("8 bytes")))
            }
            F32 => {
                self.pos += 1;
                let b = self.take(4)?;
                visitor.visit_f32(f32::from_le_bytes(b.try_into().expect("4 bytes")))
            }
            STR | NAME_NEW | NAME_REF | NAME_SHORT.. => visitor.visit_borrowed_str(self.string()?),
            BYTES => {
                self.pos += 1;
                let n = self.count()?;
                visitor.visit_borrowed_bytes(self.take(n)?)
            }
            SEQ => {
                self.pos += 1;
                let n = self.count()?;
                self.enter()?;
                let v = visitor.visit_seq(Items {
                    dec: &mut *self,
                    left: n,
                })?;
                self.depth -= 1;
                Ok(v)
            }
            MAP => {
                self.pos += 1;
                let n = self.count()?;
                self.enter()?;
                let v = visitor.visit_map(Items {
                    dec: &mut *self,
                    left: n,
                })?;
                self.depth -= 1;
                Ok(v)
            }
            t => Err(CodecError(format!("unknown tag {t}"))),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        if self.peek()? == UNIT {
            self.pos += 1;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Res<V::Value> {
        match self.peek()? {
            STR | NAME_NEW | NAME_REF | NAME_SHORT.. => {
                let name = self.string()?;
                visitor.visit_enum(name.into_deserializer())
            }
            MAP => {
                self.pos += 1;
                if self.count()? != 1 {
                    return Err(CodecError("an enum value is a map of one entry".into()));
                }
                self.enter()?;
                let v = visitor.visit_enum(Variant { dec: &mut *self })?;
                self.depth -= 1;
                Ok(v)
            }
            t => Err(CodecError(format!("expected an enum, found tag {t}"))),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Res<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    // Each typed reading below takes only the tags its type can be read
    // from and calls one visitor method, so a type's derived reading
    // compiles that one method (and one error call through `&dyn
    // Expected`), not all of `deserialize_any`'s: this is what keeps the
    // 50-odd derived readers small in the shipped .wasm (docs/BENCH.md
    // "Size"). Values of another tag are refused with serde's usual
    // "invalid type" message.

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        match self.peek()? {
            FALSE | TRUE => {
                self.pos += 1;
                visitor.visit_bool(self.input[self.pos - 1] == TRUE)
            }
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        match self.integer()? {
            Some(Ok(n)) => visitor.visit_u64(n),
            Some(Err(n)) => visitor.visit_i64(n),
            None => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        match self.peek()? {
            F64 | F32 => {
                let v = self.float()?;
                visitor.visit_f64(v)
            }
            _ => match self.integer()? {
                Some(Ok(n)) => visitor.visit_u64(n),
                Some(Err(n)) => visitor.visit_i64(n),
                None => Err(self.invalid(&visitor)),
            },
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        match self.peek()? {
            STR | NAME_NEW | NAME_REF | NAME_SHORT.. => visitor.visit_borrowed_str(self.string()?),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        match self.peek()? {
            UNIT => {
                self.pos += 1;
                visitor.visit_unit()
            }
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Res<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        match self.peek()? {
            SEQ => {
                self.pos += 1;
                let n = self.count()?;
                self.enter()?;
                let v = visitor.visit_seq(Items {
                    dec: &mut *self,
                    left: n,
                })?;
                self.depth -= 1;
                Ok(v)
            }
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Res<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Res<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        match self.peek()? {
            MAP => {
                self.pos += 1;
                let n = self.count()?;
                self.enter()?;
                let v = visitor.visit_map(Items {
                    dec: &mut *self,
                    left: n,
                })?;
                self.depth -= 1;
                Ok(v)
            }
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Res<V::Value> {
        self.deserialize_map(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.skip()?;
        visitor.visit_unit()
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_str(visitor)
    }
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Res<V::Value> {
        self.deserialize_str(visitor)
    }

    serde::forward_to_deserialize_any! {
        i128 u128 bytes byte_buf
    }
}

struct Items<'a, 'de> {
    dec: &'a mut Decoder<'de>,
    left: usize,
}

impl<'de> SeqAccess<'de> for Items<'_, 'de> {
    type Error = CodecError;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Res<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.dec).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> MapAccess<'de> for Items<'_, 'de> {
    type Error = CodecError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Res<Option<K::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.dec).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Res<V::Value> {
        seed.deserialize(&mut *self.dec)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

struct Variant<'a, 'de> {
    dec: &'a mut Decoder<'de>,
}

impl<'de> de::EnumAccess<'de> for Variant<'_, 'de> {
    type Error = CodecError;
    type Variant = Self;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Res<(V::Value, Self)> {
        let name = self.dec.string()?;
        let v = seed.deserialize(de::value::BorrowedStrDeserializer::<CodecError>::new(name))?;
        Ok((v, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant<'_, 'de> {
    type Error = CodecError;
    fn unit_variant(self) -> Res<()> {
        de::Deserialize::deserialize(&mut *self.dec)
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Res<T::Value> {
        seed.deserialize(&mut *self.dec)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Res<V::Value> {
        de::Deserializer::deserialize_seq(&mut *self.dec, visitor)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        visitor: V,
    ) -> Res<V::Value> {
        de::Deserializer::deserialize_map(&mut *self.dec, visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Ev {
        A { x: i64, name: String },
        B(Inner),
        C,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Inner {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        maybe: Option<u32>,
        list: Vec<f32>,
        kind: Kind,
        pair: (u8, String),
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Plain,
        Wrapped(u64),
        Shaped { a: bool },
    }

    #[test]
    fn values_round_trip() {
        let evs = vec![
            Ev::A {
                x: -5,
                name: "héllo".into(),
            },
            Ev::B(Inner {
                maybe: None,
                list: vec![0.5, -1.25],
                kind: Kind::Wrapped(u64::MAX),
                pair: (7, String::new()),
            }),
            Ev::B(Inner {
                maybe: Some(3),
                list: vec![],
                kind: Kind::Shaped { a: true },
                pair: (0, "x".into()),
            }),
            Ev::C,
            Ev::B(Inner {
                maybe: None,
                list: vec![f32::MIN_POSITIVE],
                kind: Kind::Plain,
                pair: (255, "y".into()),
            }),
        ];
        let bytes = to_bytes(&evs);
        assert_eq!(from_bytes::<Vec<Ev>>(&bytes).unwrap(), evs);
        let mut m = BTreeMap::new();
        m.insert(i64::MIN, Some(vec![1u8, 2]));
        m.insert(0, None);
        assert_eq!(
            from_bytes::<BTreeMap<i64, Option<Vec<u8>>>>(&to_bytes(&m)).unwrap(),
            m
        );
    }

    #[test]
    fn names_are_spelled_once() {
        let evs: Vec<Ev> = (0..100)
            .map(|x| Ev::A {
                x,
                name: String::new(),
            })
            .collect();
        let bytes = to_bytes(&evs);
        let spelled = bytes.windows(4).filter(|w| w == b"name").count();
        assert_eq!(spelled, 1);
    }

    #[test]
    fn json_reads_through_the_decoder_as_serde_json_reads_it() {
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct Doc {
            name: String,
            counts: Vec<i64>,
            nested: Vec<Vec<f32>>,
            flag: Option<bool>,
        }
        let counts: Vec<String> = (-150..150).map(|i| i.to_string()).collect();
        let text = format!(
            r#"{{"nested": [[1.5, 2], []], "name": "a \"q\" é", "counts": [{}], "flag": null}}"#,
            counts.join(",")
        );
        let ours: Doc = from_json(&text).expect("reads");
        assert_eq!(ours.counts.len(), 300);
        assert_eq!(ours.name, "a \"q\" é");
        assert_eq!(ours.nested, vec![vec![1.5, 2.0], vec![]]);
        assert_eq!(ours.flag, None);
        let repeated =
            from_json::<Doc>(r#"{"name": "a", "name": "b", "counts": [], "nested": []}"#)
                .expect_err("a repeated field");
        assert!(
            repeated.to_string().contains("duplicate field"),
            "{repeated}"
        );
        let syntax = from_json::<Doc>("{\"name\": }").expect_err("bad JSON");
        assert!(syntax.to_string().contains("line 1"), "{syntax}");
        let trailing = from_json::<Vec<u8>>("[1] x").expect_err("trailing text");
        assert!(trailing.to_string().contains("trailing"), "{trailing}");
    }

    #[test]
    fn tags_are_names_and_names_used_before_take_one_byte() {
        let evs = vec![Ev::C, Ev::C];
        let bytes = to_bytes(&evs);
        let mut want = vec![SEQ, 2, MAP, 1, NAME_NEW, 4];
        want.extend_from_slice(b"type");
        want.extend_from_slice(&[NAME_NEW, 1, b'c', MAP, 1, NAME_SHORT, NAME_SHORT + 1]);
        assert_eq!(bytes, want);
        assert_eq!(from_bytes::<Vec<Ev>>(&bytes).unwrap(), evs);
        // As entries of version 3 wrote them: names used before as
        // `NAME_REF` and a LEB128 id, the tag as a string each time.
        let mut old = vec![SEQ, 2, MAP, 1, NAME_NEW, 4];
        old.extend_from_slice(b"type");
        old.extend_from_slice(&[STR, 1, b'c', MAP, 1, NAME_REF, 0, STR, 1, b'c']);
        assert_eq!(from_bytes::<Vec<Ev>>(&old).unwrap(), evs);
    }

    #[test]
    fn names_past_the_first_240_are_referred_to_by_number() {
        // A map with 300 distinct keys as names: a struct's names are
        // `&'static str`, so leak a few for the test.
        #[derive(Debug, PartialEq)]
        struct Many(Vec<u32>);
        impl Serialize for Many {
            fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use ser::SerializeStruct;
                let names: &'static [String] =
                    Box::leak((0..300).map(|i| format!("f{i}")).collect::<Box<[_]>>());
                let mut st = s.serialize_struct("Many", 600)?;
                for round in 0..2 {
                    for (i, n) in names.iter().enumerate() {
                        let n: &'static str = n.as_str();
                        st.serialize_field(n, &(self.0[i] + round))?;
                    }
                }
                st.end()
            }
        }
        let many = Many((0..300).collect());
        let bytes = to_bytes(&many);
        from_bytes::<serde::de::IgnoredAny>(&bytes).unwrap();
        // The second round: 240 one-byte references, then 60 of three bytes
        // (the byte 12 also occurs as a value).
        assert!(bytes.iter().filter(|&&b| b == NAME_REF).count() >= 60);
        let back: Vec<(String, u32)> = {
            let mut dec = Decoder {
                input: &bytes,
                pos: 0,
                names: Vec::new(),
                depth: 0,
            };
            struct Pairs;
            impl<'de> Visitor<'de> for Pairs {
                type Value = Vec<(String, u32)>;
                fn expecting(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
                    f.write_str("a map")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                    let mut out = Vec::new();
                    while let Some(kv) = a.next_entry::<String, u32>()? {
                        out.push(kv);
                    }
                    Ok(out)
                }
            }
            de::Deserializer::deserialize_any(&mut dec, Pairs).unwrap()
        };
        assert_eq!(back.len(), 600);
        for (i, (k, v)) in back.iter().enumerate() {
            assert_eq!(k, &format!("f{}", i % 300));
            assert_eq!(*v, (i % 300) as u32 + (i / 300) as u32);
        }
    }

    #[test]
    fn unknown_fields_are_skipped_and_keep_the_names_they_define() {
        #[derive(Serialize)]
        struct Pair {
            zeta: u8,
            eta: String,
        }
        #[derive(Serialize)]
        struct Wide {
            skipped: Vec<Pair>,
            kept: Vec<Pair>,
        }
        #[derive(Debug, PartialEq, Deserialize)]
        struct Half {
            zeta: u8,
        }
        #[derive(Debug, PartialEq, Deserialize)]
        struct Narrow {
            kept: Vec<Half>,
        }
        let pair = |zeta| Pair {
            zeta,
            eta: "x".into(),
        };
        // `zeta` and `eta` are spelled inside `skipped` and referred to by
        // number inside `kept`: skipping must still learn them.
        let bytes = to_bytes(&Wide {
            skipped: vec![pair(1)],
            kept: vec![pair(2), pair(3)],
        });
        let narrow: Narrow = from_bytes(&bytes).unwrap();
        assert_eq!(narrow.kept, vec![Half { zeta: 2 }, Half { zeta: 3 }]);
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused_naming_both_types() {
        let e = from_bytes::<Inner>(&to_bytes("text"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "invalid type: string \"text\", expected struct Inner");
        let e = from_bytes::<u32>(&to_bytes(&true)).unwrap_err().to_string();
        assert_eq!(e, "invalid type: boolean `true`, expected u32");
        let e = from_bytes::<bool>(&to_bytes(&7u8)).unwrap_err().to_string();
        assert_eq!(e, "invalid type: integer `7`, expected a boolean");
        let e = from_bytes::<Vec<u8>>(&to_bytes(&-2i64))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "invalid type: integer `-2`, expected a sequence");
        let e = from_bytes::<u8>(&to_bytes(&300u32))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "invalid value: integer `300`, expected u8");
        // A float field takes an integer, as serde_json's readers do.
        assert_eq!(from_bytes::<f64>(&to_bytes(&3u8)).unwrap(), 3.0);
        assert_eq!(from_bytes::<f32>(&to_bytes(&-3i8)).unwrap(), -3.0);
    }

    #[test]
    fn damage_is_an_error_never_a_panic() {
        let bytes = to_bytes(&vec![Ev::A {
            x: 1,
            name: "abc".into(),
        }]);
        for cut in 0..bytes.len() {
            assert!(from_bytes::<Vec<Ev>>(&bytes[..cut]).is_err());
        }
        let mut rng = 1u64;
        for _ in 0..2000 {
            let mut b = bytes.clone();
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
            let i = (rng >> 33) as usize % b.len();
            b[i] = (rng >> 20) as u8;
            let _ = from_bytes::<Vec<Ev>>(&b);
        }
        assert!(from_bytes::<Vec<Ev>>(&[SEQ, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        let deep: Vec<u8> = std::iter::repeat_n([SEQ, 1], 10_000).flatten().collect();
        assert!(from_bytes::<serde::de::IgnoredAny>(&deep).is_err());
    }
}
