//! Writing values: the serde serializer of the encoding and
//! [`StructWriter`].

use serde::ser;
use serde::ser::Serialize;
use std::borrow::Cow;

use crate::base::codec::wire::{
    get_varint, put_varint, CodecError, Res, BYTES, F32, F64, FALSE, MAP, NAME_NEW, NAME_REF,
    NAME_SHORT, NINT, SEQ, SHORT_NAMES, STR, TRUE, UINT, UNIT,
};

/// Encodes a struct field by field, for a value whose encoding is needed in
/// parts: [`StructWriter::bytes`] gives the fields written so far (a log
/// entry's id is a checksum of its other fields, then written after them).
/// The result decodes as the struct with those fields, in any order.
pub struct StructWriter {
    enc: Encoder,
}

impl StructWriter {
    /// Starts a struct of `fields` fields (exactly that many must follow),
    /// the values of `tag_fields` written as names ([`to_bytes_tagged`]).
    pub fn new(fields: usize, tag_fields: &'static [&'static str]) -> StructWriter {
        let mut enc = Encoder::new(tag_fields);
        enc.out.reserve(4096);
        enc.names.reserve(64);
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

pub(super) struct Encoder {
    pub(super) out: Vec<u8>,
    // The names spelled so far, in order of their ids: a list, not a map (a
    // value has a few dozen; a name is nearly always the same `&'static str`
    // as before, found by its address; no random seed either way). A tag
    // value (see `tag_fields`) is owned: serde hands it over as a `&str`.
    names: Vec<Cow<'static, str>>,
    /// Fields whose string value is written as a name.
    tag_fields: &'static [&'static str],
}

impl Encoder {
    pub(super) fn new(tag_fields: &'static [&'static str]) -> Self {
        Encoder {
            out: Vec::new(),
            names: Vec::new(),
            tag_fields,
        }
    }
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

pub(super) struct Compound<'a>(&'a mut Encoder);

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
        if self.0.tag_fields.contains(&key) {
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
