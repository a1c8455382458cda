//! JSON text transcoded to the binary encoding, so JSON is read by the
//! decoder's one generic path ([`super::from_json`]).

use serde::de;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::base::codec::wire::{put_varint, F64, FALSE, MAP, NINT, SEQ, STR, TRUE, UINT, UNIT};

/// Writes the JSON value it is given in this encoding (see [`from_json`]).
pub(super) struct Transcode<'a>(pub(super) &'a mut Vec<u8>);

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
