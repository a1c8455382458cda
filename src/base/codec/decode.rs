//! Reading values: the serde deserializer of the encoding, with typed
//! readings that accept only their own tags and a depth limit.

use serde::de;
use serde::de::{DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use crate::base::codec::wire::{
    get_varint, CodecError, Res, BYTES, F32, F64, FALSE, MAP, NAME_NEW, NAME_REF, NAME_SHORT, NINT,
    SEQ, STR, TRUE, UINT, UNIT,
};

/// Nesting deeper than this is refused (a crafted value cannot exhaust the
/// stack).
const MAX_DEPTH: usize = 128;

pub(super) struct Decoder<'de> {
    pub(super) input: &'de [u8],
    /// Where the next value starts.
    pub(super) pos: usize,
    /// Spans of the names defined so far in this document.
    names: Vec<(usize, usize)>,
    depth: usize,
}

impl<'de> Decoder<'de> {
    /// A decoder at the start of `input`.
    pub(super) fn new(input: &'de [u8]) -> Self {
        Decoder {
            input,
            pos: 0,
            names: Vec::new(),
            depth: 0,
        }
    }

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
    // 50-odd derived readers small in the shipped .wasm (docs/bench-history.md
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
