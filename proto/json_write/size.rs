//! How long a value's compact JSON will be, give or take, without writing it: a walk of the
//! value that adds up string lengths and punctuation and never reads a string's bytes.
//!
//! It is used to size the buffer a message is written into, so that a 64 KiB result is written
//! into one allocation instead of growing through eleven. Escapes are not counted (a string
//! with many of them comes out longer) and numbers count their widest form; nothing depends on
//! the figure being exact.

use serde::ser::{self, Serialize};
use serde_json::Error;

use super::{like_a_sequence, RAW_VALUE_TOKEN};

/// About how many bytes [`to_writer`](super::to_writer) writes for `value`; 0 when its
/// `Serialize` fails.
pub fn estimated_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = Counter { bytes: 0 };
    match value.serialize(&mut counter) {
        Ok(()) => counter.bytes,
        Err(_) => 0,
    }
}

struct Counter {
    bytes: usize,
}

impl Counter {
    fn add(&mut self, bytes: usize) -> Result<(), Error> {
        self.bytes += bytes;
        Ok(())
    }
}

/// Digits of an unsigned integer.
fn digits(n: u128) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

impl<'a> ser::Serializer for &'a mut Counter {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = &'a mut Counter;
    type SerializeTuple = &'a mut Counter;
    type SerializeTupleStruct = &'a mut Counter;
    type SerializeTupleVariant = &'a mut Counter;
    type SerializeMap = &'a mut Counter;
    type SerializeStruct = Struct<'a>;
    type SerializeStructVariant = &'a mut Counter;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.add(if v { 4 } else { 5 })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i128(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i128(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i128(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.serialize_i128(v.into())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.add(usize::from(v < 0) + digits(v.unsigned_abs()))
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u128(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u128(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u128(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.serialize_u128(v.into())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.add(digits(v))
    }
    fn serialize_f32(self, _: f32) -> Result<(), Error> {
        self.add(16)
    }
    fn serialize_f64(self, _: f64) -> Result<(), Error> {
        self.add(24)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.add(v.len_utf8() + 2)
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.add(v.len() + 2)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        self.add(2 + v.len() * 4)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.add(4)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.add(4)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.add(4)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Error> {
        self.add(variant.len() + 2)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.add(variant.len() + 5)?;
        value.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Error> {
        self.add(2)?;
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Error> {
        self.add(2)?;
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Error> {
        self.add(2)?;
        Ok(self)
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, variant: &'static str, _: usize) -> Result<Self, Error> {
        self.add(variant.len() + 7)?;
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Error> {
        self.add(2)?;
        Ok(self)
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Struct<'a>, Error> {
        let raw = name == RAW_VALUE_TOKEN;
        if !raw {
            self.add(2)?;
        }
        Ok(Struct { counter: self, raw })
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, variant: &'static str, _: usize) -> Result<Self, Error> {
        self.add(variant.len() + 7)?;
        Ok(self)
    }
}

impl ser::SerializeSeq for &mut Counter {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.bytes += 1;
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}

like_a_sequence!(
    [] &mut Counter:
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for &mut Counter {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        // The comma before it and the colon after it.
        self.bytes += 2;
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}

/// A struct being counted; serde_json's `RawValue` is a struct whose one field is the text.
pub struct Struct<'a> {
    counter: &'a mut Counter,
    raw: bool,
}

impl ser::SerializeStruct for Struct<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        // A raw value's text is counted as a string: two quotes too many.
        if !self.raw {
            self.counter.bytes += key.len() + 4;
        }
        value.serialize(&mut *self.counter)
    }
    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for &mut Counter {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.bytes += key.len() + 4;
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}
