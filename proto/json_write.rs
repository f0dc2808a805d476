//! Compact JSON output for any `Serialize` value: byte for byte what `serde_json::to_writer`
//! writes, with a faster string escaper.
//!
//! serde_json escapes a string one byte at a time through a lookup table; on a 64 KiB tool
//! result that loop was the largest item in the server's profile. Here a string is scanned 16
//! bytes at a time (SSE2 on x86_64, two 64-bit words elsewhere) for the only bytes JSON must
//! escape (`"`, `\` and controls below 0x20), and each clean run is written with one
//! `write_all`. Escapes themselves are written exactly as serde_json writes them (`\n`, `\"`,
//! `\u001f` …), so output stays identical and recorded traffic still compares equal.
//!
//! Not here: pretty printing, and map keys other than strings, chars, integers and booleans
//! (serde_json quotes floats as keys; nothing in MCP has them): those are refused with an
//! error, never written wrongly. Numbers are formatted by serde_json itself.

use std::io::Write;

use serde::ser::{self, Impossible, Serialize};
use serde_json::Error;

mod size;
pub use size::estimated_len;

/// The struct name by which serde_json's `RawValue` asks to be written verbatim (and read
/// verbatim: see `json_read`).
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// `text`, JSON put together from valid parts, as a `RawValue` without parsing it again to check
/// it: serialized as serde_json's `RawValue` serializes itself, which its serializer writes
/// verbatim. The caller vouches for `text` being one JSON value.
pub(crate) fn trusted_raw(text: &str) -> Result<Box<serde_json::value::RawValue>, serde_json::Error> {
    use serde::ser::SerializeStruct;
    struct Verbatim<'a>(&'a str);
    impl Serialize for Verbatim<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut raw = serializer.serialize_struct(RAW_VALUE_TOKEN, 1)?;
            raw.serialize_field(RAW_VALUE_TOKEN, self.0)?;
            raw.end()
        }
    }
    serde_json::value::to_raw_value(&Verbatim(text))
}

/// Writes `value` as compact JSON to `out`.
///
/// # Errors
/// When `value`'s `Serialize` fails, a map key is not a string, or `out` fails.
pub fn to_writer<W: Write + ?Sized, T: Serialize + ?Sized>(out: &mut W, value: &T) -> Result<(), Error> {
    value.serialize(&mut Serializer { out })
}

/// Writes `text` as a JSON string literal (quotes included) to `out`.
///
/// # Errors
/// When `out` fails.
pub fn write_str<W: Write + ?Sized>(out: &mut W, text: &str) -> Result<(), Error> {
    write_escaped(out, text).map_err(Error::io)
}

const ONES: u64 = u64::MAX / 255;
const HIGHS: u64 = ONES << 7;

/// Whether any byte of `word` is `"`, `\` or below 0x20 (Mycroft's zero-byte test, per class).
#[inline(always)]
fn needs_escape(word: u64) -> bool {
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    (control | quote | backslash) & HIGHS != 0
}

#[inline(always)]
fn is_escaped(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// The index of the first byte of `bytes[from..]` that must be escaped, or `bytes.len()`.
#[inline]
pub(crate) fn next_escape(bytes: &[u8], from: usize) -> usize {
    scan::<false>(bytes, from).0
}

/// As [`next_escape`], and whether every byte before that index (from `from`) is ASCII: where
/// a reader stops in a string, and whether the run it passed needs a UTF-8 check.
#[inline]
pub(crate) fn next_escape_ascii(bytes: &[u8], from: usize) -> (usize, bool) {
    scan::<true>(bytes, from)
}

/// The scan behind [`next_escape`]: 64 bytes a step, then 16, with SSE2 (part of x86_64
/// itself: no runtime check); the ASCII flag is only worked out when `ASCII` asks for it.
#[cfg(target_arch = "x86_64")]
#[inline]
fn scan<const ASCII: bool>(bytes: &[u8], mut from: usize) -> (usize, bool) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_setzero_si128,
        _mm_subs_epu8,
    };
    // SAFETY: every load reads 16 bytes within `bytes` (`from + 16 <= len`, `from + 64 <= len`
    // for the four loads of a step), unaligned.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let below_space = _mm_set1_epi8(0x1f);
        let zero = _mm_setzero_si128();
        // A byte must be escaped when it is a quote, a backslash, or a control character (when
        // saturating `byte - 0x1f` leaves 0).
        let special = |chunk: __m128i| {
            let control = _mm_cmpeq_epi8(_mm_subs_epu8(chunk, below_space), zero);
            _mm_or_si128(control, _mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)))
        };
        let load = |at: usize| _mm_loadu_si128(bytes.as_ptr().add(at).cast::<__m128i>());
        // The bytes passed so far, or-ed: their high bits say whether any was not ASCII.
        let mut seen = zero;
        while from + 64 <= bytes.len() {
            let (a, b, c, d) = (load(from), load(from + 16), load(from + 32), load(from + 48));
            let any = _mm_or_si128(_mm_or_si128(special(a), special(b)), _mm_or_si128(special(c), special(d)));
            if _mm_movemask_epi8(any) != 0 {
                break;
            }
            if ASCII {
                seen = _mm_or_si128(seen, _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d)));
            }
            from += 64;
        }
        while from + 16 <= bytes.len() {
            let chunk = load(from);
            let mask = _mm_movemask_epi8(special(chunk));
            if mask != 0 {
                let at = from + mask.trailing_zeros() as usize;
                let ascii = !ASCII || (_mm_movemask_epi8(seen) == 0 && bytes[from..at].is_ascii());
                return (at, ascii);
            }
            if ASCII {
                seen = _mm_or_si128(seen, chunk);
            }
            from += 16;
        }
        let (at, tail_ascii) = scan_by_words::<ASCII>(bytes, from);
        (at, !ASCII || (tail_ascii && _mm_movemask_epi8(seen) == 0))
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn scan<const ASCII: bool>(bytes: &[u8], from: usize) -> (usize, bool) {
    scan_by_words::<ASCII>(bytes, from)
}

/// [`next_escape`] by the word scan alone, for the tests that compare it with the SSE2 scan.
#[cfg(test)]
fn next_escape_by_words(bytes: &[u8], from: usize) -> usize {
    scan_by_words::<false>(bytes, from).0
}

/// [`scan`] on 64-bit words, for any target (and the tail of the SSE2 scan).
#[inline]
fn scan_by_words<const ASCII: bool>(bytes: &[u8], mut from: usize) -> (usize, bool) {
    let start = from;
    while from + 16 <= bytes.len() {
        let a = u64::from_le_bytes(bytes[from..from + 8].try_into().expect("8 bytes"));
        let b = u64::from_le_bytes(bytes[from + 8..from + 16].try_into().expect("8 bytes"));
        if needs_escape(a) || needs_escape(b) {
            break;
        }
        from += 16;
    }
    while from < bytes.len() && !is_escaped(bytes[from]) {
        from += 1;
    }
    (from, !ASCII || bytes[start..from].is_ascii())
}

fn write_escaped<W: Write + ?Sized>(out: &mut W, text: &str) -> std::io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.write_all(b"\"")?;
    let mut start = 0;
    loop {
        let at = next_escape(bytes, start);
        if at > start {
            out.write_all(&bytes[start..at])?;
        }
        let Some(&byte) = bytes.get(at) else { break };
        match byte {
            b'"' => out.write_all(b"\\\"")?,
            b'\\' => out.write_all(b"\\\\")?,
            b'\n' => out.write_all(b"\\n")?,
            b'\r' => out.write_all(b"\\r")?,
            b'\t' => out.write_all(b"\\t")?,
            0x08 => out.write_all(b"\\b")?,
            0x0c => out.write_all(b"\\f")?,
            _ => {
                out.write_all(&[b'\\', b'u', b'0', b'0', HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]])?
            }
        }
        start = at + 1;
    }
    out.write_all(b"\"")
}

struct Serializer<'w, W: Write + ?Sized> {
    out: &'w mut W,
}

impl<W: Write + ?Sized> Serializer<'_, W> {
    fn raw(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.out.write_all(bytes).map_err(Error::io)
    }

    /// A number, formatted by serde_json so that integers and floats read exactly as before.
    fn number(&mut self, value: impl Serialize) -> Result<(), Error> {
        serde_json::to_writer(&mut *self.out, &value)
    }
}

/// A sequence, map or struct being written: whether a comma goes before the next element.
pub struct Compound<'a, 'w, W: Write + ?Sized> {
    ser: &'a mut Serializer<'w, W>,
    first: bool,
    /// What closes it: `]`, `}`, or `}}` for the variant forms, nothing for a raw value.
    close: &'static [u8],
}

impl<W: Write + ?Sized> Compound<'_, '_, W> {
    fn comma(&mut self) -> Result<(), Error> {
        if self.first {
            self.first = false;
            Ok(())
        } else {
            self.ser.raw(b",")
        }
    }

    fn key(&mut self, key: &str) -> Result<(), Error> {
        self.comma()?;
        write_escaped(self.ser.out, key).map_err(Error::io)?;
        self.ser.raw(b":")
    }
}

impl<'a, 'w, W: Write + ?Sized> ser::Serializer for &'a mut Serializer<'w, W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, 'w, W>;
    type SerializeTuple = Compound<'a, 'w, W>;
    type SerializeTupleStruct = Compound<'a, 'w, W>;
    type SerializeTupleVariant = Compound<'a, 'w, W>;
    type SerializeMap = Compound<'a, 'w, W>;
    type SerializeStruct = Compound<'a, 'w, W>;
    type SerializeStructVariant = Compound<'a, 'w, W>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.raw(if v { b"true" } else { b"false" })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_escaped(self.out, v).map_err(Error::io)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for byte in v {
            seq.serialize_element(byte)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.raw(b"null")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.raw(b"null")
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.raw(b"null")
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.raw(b"{")?;
        write_escaped(self.out, variant).map_err(Error::io)?;
        self.raw(b":")?;
        value.serialize(&mut *self)?;
        self.raw(b"}")
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a, 'w, W>, Error> {
        self.raw(b"[")?;
        Ok(Compound { ser: self, first: true, close: b"]" })
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, 'w, W>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a, 'w, W>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 'w, W>, Error> {
        self.raw(b"{")?;
        write_escaped(self.out, variant).map_err(Error::io)?;
        self.raw(b":[")?;
        Ok(Compound { ser: self, first: true, close: b"]}" })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a, 'w, W>, Error> {
        self.raw(b"{")?;
        Ok(Compound { ser: self, first: true, close: b"}" })
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Compound<'a, 'w, W>, Error> {
        if name == RAW_VALUE_TOKEN {
            return Ok(Compound { ser: self, first: true, close: b"" });
        }
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 'w, W>, Error> {
        self.raw(b"{")?;
        write_escaped(self.out, variant).map_err(Error::io)?;
        self.raw(b":{")?;
        Ok(Compound { ser: self, first: true, close: b"}}" })
    }
}

impl<W: Write + ?Sized> ser::SerializeSeq for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.comma()?;
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        self.ser.raw(self.close)
    }
}

/// Tuples, tuple structs and tuple variants are written as sequences (the variant's `{"name":`
/// and its closing brace come from `serialize_tuple_variant` and `close`). Also used by
/// [`size`] for its counter: `like_a_sequence!([generics] Type: Trait::method, ...)`.
macro_rules! like_a_sequence {
    ($generics:tt $ty:ty: $($trait:ident::$method:ident),*) => {
        $(like_a_sequence!(@impl $generics $ty, $trait::$method);)*
    };
    (@impl [$($generics:tt)*] $ty:ty, $trait:ident::$method:ident) => {
        impl<$($generics)*> ser::$trait for $ty {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                ser::SerializeSeq::serialize_element(self, value)
            }
            fn end(self) -> Result<(), Error> {
                ser::SerializeSeq::end(self)
            }
        }
    };
}
use like_a_sequence;

like_a_sequence!(
    [W: Write + ?Sized] Compound<'_, '_, W>:
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl<W: Write + ?Sized> ser::SerializeMap for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.comma()?;
        key.serialize(MapKey { ser: &mut *self.ser })?;
        self.ser.raw(b":")
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        self.ser.raw(self.close)
    }
}

impl<W: Write + ?Sized> ser::SerializeStruct for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        if self.close.is_empty() {
            // serde_json's RawValue: its one field is the JSON text, written as is.
            return value.serialize(RawText { ser: &mut *self.ser });
        }
        self.key(key)?;
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        self.ser.raw(self.close)
    }
}

impl<W: Write + ?Sized> ser::SerializeStructVariant for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result<(), Error> {
        ser::SerializeStruct::end(self)
    }
}

fn key_must_be_a_string() -> Error {
    ser::Error::custom("key must be a string")
}

/// Writes a map key: strings as they are, chars, integers and booleans quoted (as serde_json
/// does); anything else is refused.
struct MapKey<'a, 'w, W: Write + ?Sized> {
    ser: &'a mut Serializer<'w, W>,
}

impl<W: Write + ?Sized> MapKey<'_, '_, W> {
    fn quoted(self, value: impl Serialize) -> Result<(), Error> {
        self.ser.raw(b"\"")?;
        self.ser.number(value)?;
        self.ser.raw(b"\"")
    }
}

macro_rules! quoted_keys {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method(self, v: $ty) -> Result<(), Error> {
            self.quoted(v)
        })*
    };
}

macro_rules! refused {
    ($error:ident: $($method:ident($($arg:ty),*)),*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Error> {
            Err($error())
        })*
    };
}

/// The types and the methods of a serializer that accepts no option, variant with data,
/// sequence, map or struct: each of those methods returns `$error()`.
macro_rules! refused_compounds {
    ($error:ident) => {
        type Ok = ();
        type Error = Error;
        type SerializeSeq = Impossible<(), Error>;
        type SerializeTuple = Impossible<(), Error>;
        type SerializeTupleStruct = Impossible<(), Error>;
        type SerializeTupleVariant = Impossible<(), Error>;
        type SerializeMap = Impossible<(), Error>;
        type SerializeStruct = Impossible<(), Error>;
        type SerializeStructVariant = Impossible<(), Error>;
        fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Error> {
            Err($error())
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _name: &'static str,
            _index: u32,
            _variant: &'static str,
            _value: &T,
        ) -> Result<(), Error> {
            Err($error())
        }
        fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
            Err($error())
        }
        fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
            Err($error())
        }
        fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeTupleStruct, Error> {
            Err($error())
        }
        fn serialize_tuple_variant(
            self,
            _name: &'static str,
            _index: u32,
            _variant: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeTupleVariant, Error> {
            Err($error())
        }
        fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
            Err($error())
        }
        fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct, Error> {
            Err($error())
        }
        fn serialize_struct_variant(
            self,
            _name: &'static str,
            _index: u32,
            _variant: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeStructVariant, Error> {
            Err($error())
        }
    };
}

impl<W: Write + ?Sized> ser::Serializer for MapKey<'_, '_, W> {
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_escaped(self.ser.out, v).map_err(Error::io)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.ser.raw(if v { b"\"true\"" } else { b"\"false\"" })
    }
    quoted_keys!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64, serialize_i128: i128,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128);
    refused!(key_must_be_a_string:
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str)
    );
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    refused_compounds!(key_must_be_a_string);
}

/// The JSON text inside a `RawValue`, written verbatim.
struct RawText<'a, 'w, W: Write + ?Sized> {
    ser: &'a mut Serializer<'w, W>,
}

impl<W: Write + ?Sized> ser::Serializer for RawText<'_, '_, W> {
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.ser.raw(v.as_bytes())
    }
    refused!(not_raw_text:
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str)
    );
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, _variant: &'static str) -> Result<(), Error> {
        Err(not_raw_text())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, _value: &T) -> Result<(), Error> {
        Err(not_raw_text())
    }
    refused_compounds!(not_raw_text);
}

fn not_raw_text() -> Error {
    ser::Error::custom("a raw JSON value must hold its text as a string")
}

#[cfg(test)]
mod tests;
