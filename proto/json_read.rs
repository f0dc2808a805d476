//! A JSON reader for the typed decode of large params and results
//! ([`jsonrpc::decode_typed`](super::jsonrpc::decode_typed) and
//! [`jsonrpc::decode_answer`](super::jsonrpc::decode_answer)): a serde `Deserializer` over a byte
//! slice that scans strings 16 bytes at a time, with the escaper's scan of
//! [`json_write`](super::json_write) (SSE2 on x86_64).
//!
//! serde_json scans a string 8 bytes at a time and then checks its UTF-8 in a second pass; on a
//! 64 KiB tool call that scan was the largest item of the server's profile. Here one pass finds
//! where the string's text ends and whether it was all ASCII; only text that was not gets a
//! UTF-8 check.
//!
//! It accepts exactly what serde_json accepts and gives visitors the same calls (borrowed
//! strings when there is no escape, `u64`/`i64`/`f64` as serde_json picks them, serde_json's
//! own float parsing), which the tests check against serde_json on grids, recordings and random
//! inputs. What it is not: a replacement for serde_json. Its errors say little and carry no
//! position, because the caller answers any error by decoding again with serde_json, whose
//! errors are the ones reported. It nests at most [`MAX_DEPTH`] deep (serde_json 128), so
//! anything deeper goes to serde_json too. Not supported (an error, hence serde_json):
//! serde_json's `RawValue` inside a typed value, and map keys read as numbers or booleans. One
//! addition of its own: a decoder may ask for a value's text ([`VALUE_TEXT_TOKEN`]).

use std::fmt;

use serde::de::{self, DeserializeSeed, Visitor};

use super::json_write::{next_escape_ascii, RAW_VALUE_TOKEN};

/// The newtype name by which a decoder asks this reader for the text of the next value: what
/// [`Memo`](super::mcp_types::decode::Memo) keys its decoded values on. This reader answers
/// with `visit_seq` of two elements ([`ValueText`]): the input from the value on, then the
/// value's text. Any other deserializer treats it as the plain newtype it looks like
/// (`visit_newtype_struct`).
pub(crate) const VALUE_TEXT_TOKEN: &str = "$mcpwire::private::ValueText";

/// How deep a value taken as a known span ([`ValueText`]) may nest: the reader takes one only
/// where that much depth is left, so skipping its check never lets through what the check
/// would have refused as nested too deep.
pub(crate) const KNOWN_SPAN_MAX_NESTING: u32 = 16;

/// How deep arrays and objects may nest in one value read here.
pub(crate) const MAX_DEPTH: u32 = 100;

/// Why a read failed. Only the fallback to serde_json sees it.
#[derive(Debug)]
pub(crate) struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

fn fail<T>(what: &str) -> Result<T, Error> {
    Err(Error(what.to_owned()))
}

/// A string as read: borrowed from the input when it had no escape.
enum Str<'de, 's> {
    Borrowed(&'de str),
    Copied(&'s str),
}

impl Str<'_, '_> {
    fn as_str(&self) -> &str {
        match self {
            Str::Borrowed(s) => s,
            Str::Copied(s) => s,
        }
    }
}

/// Reads JSON values from `bytes`, from a position on.
pub(crate) struct Reader<'de> {
    bytes: &'de [u8],
    pos: usize,
    depth: u32,
    scratch: String,
}

impl<'de> Reader<'de> {
    pub(crate) fn new(bytes: &'de [u8]) -> Reader<'de> {
        Reader { bytes, pos: 0, depth: 0, scratch: String::new() }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.pos) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// Consumes `byte` (after whitespace), or fails.
    pub(crate) fn expect(&mut self, byte: u8) -> Result<(), Error> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            fail("unexpected byte")
        }
    }

    /// Succeeds when nothing but whitespace is left.
    pub(crate) fn end(&mut self) -> Result<(), Error> {
        match self.peek() {
            None => Ok(()),
            Some(_) => fail("trailing characters"),
        }
    }

    /// Starts an object: consumes `{` and returns whether it is empty (then `}` is consumed too).
    pub(crate) fn begin_object(&mut self) -> Result<bool, Error> {
        self.expect(b'{')?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// After an object member: `true` when another member follows (`,` consumed), `false` at
    /// the end (`}` consumed).
    pub(crate) fn next_member(&mut self) -> Result<bool, Error> {
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b'}') => {
                self.pos += 1;
                Ok(false)
            }
            _ => fail("expected , or }"),
        }
    }

    /// Reads a member's key and its colon; `f` gets the key.
    pub(crate) fn key<T>(&mut self, f: impl FnOnce(&str) -> T) -> Result<T, Error> {
        if self.peek() != Some(b'"') {
            return fail("a key must be a string");
        }
        let key = f(self.string()?.as_str());
        self.expect(b':')?;
        Ok(key)
    }

    /// Skips one value, checking it as [`Reader`] reads it, and returns its text.
    pub(crate) fn value_text(&mut self) -> Result<&'de str, Error> {
        self.peek();
        let start = self.pos;
        de::Deserializer::deserialize_ignored_any(&mut *self, de::IgnoredAny)?;
        std::str::from_utf8(&self.bytes[start..self.pos]).or_else(|_| fail("invalid utf-8"))
    }

    /// Reads the string at `self.pos` (its opening quote). Checks UTF-8 and escapes as
    /// serde_json does: controls below 0x20 and lone surrogates are errors.
    fn string(&mut self) -> Result<Str<'de, '_>, Error> {
        let bytes = self.bytes;
        self.pos += 1;
        let start = self.pos;
        let mut copied = false;
        let mut run = start;
        loop {
            let (at, ascii) = next_escape_ascii(bytes, run);
            let Some(&byte) = bytes.get(at) else { return fail("unterminated string") };
            let text = if ascii {
                // SAFETY: every byte of the run is ASCII, hence UTF-8 (the scan checked each).
                unsafe { std::str::from_utf8_unchecked(&bytes[run..at]) }
            } else {
                std::str::from_utf8(&bytes[run..at]).or_else(|_| fail("invalid utf-8"))?
            };
            match byte {
                b'"' => {
                    self.pos = at + 1;
                    if !copied {
                        return Ok(Str::Borrowed(text));
                    }
                    self.scratch.push_str(text);
                    return Ok(Str::Copied(&self.scratch));
                }
                b'\\' => {
                    if !copied {
                        self.scratch.clear();
                        copied = true;
                    }
                    self.scratch.push_str(text);
                    self.pos = at + 1;
                    self.escape()?;
                    run = self.pos;
                }
                _ => return fail("control character in a string"),
            }
        }
    }

    /// Reads one escape after its backslash into the scratch string.
    fn escape(&mut self) -> Result<(), Error> {
        let Some(&kind) = self.bytes.get(self.pos) else { return fail("unterminated escape") };
        self.pos += 1;
        let c = match kind {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                let code = match first {
                    0xDC00..=0xDFFF => return fail("lone trailing surrogate"),
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return fail("lone leading surrogate");
                        }
                        self.pos += 2;
                        let second = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return fail("lone leading surrogate");
                        }
                        0x1_0000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00)
                    }
                    other => u32::from(other),
                };
                char::from_u32(code).expect("surrogates are handled above")
            }
            _ => return fail("invalid escape"),
        };
        self.scratch.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u16, Error> {
        let Some(digits) = self.bytes.get(self.pos..self.pos + 4) else { return fail("unterminated escape") };
        let mut n = 0u16;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return fail("invalid hex escape"),
            };
            n = n * 16 + u16::from(v);
        }
        self.pos += 4;
        Ok(n)
    }

    /// Consumes `word` (`true`, `false`, `null`) at `self.pos`.
    fn literal(&mut self, word: &[u8]) -> Result<(), Error> {
        if self.bytes.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            fail("invalid literal")
        }
    }

    /// Reads the number at `self.pos` and hands it to `visitor` as serde_json would.
    fn number<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        let bytes = self.bytes;
        let start = self.pos;
        let negative = bytes[start] == b'-';
        let mut at = start + usize::from(negative);
        let digits_start = at;
        match bytes.get(at) {
            Some(b'0') => at += 1,
            Some(b'1'..=b'9') => {
                while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                    at += 1;
                }
            }
            _ => return fail("invalid number"),
        }
        if bytes.get(at).is_some_and(u8::is_ascii_digit) {
            return fail("leading zero");
        }
        let integer_end = at;
        let mut is_float = false;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            let fraction = at;
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            if at == fraction {
                return fail("invalid number");
            }
            is_float = true;
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            let exponent = at;
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            if at == exponent {
                return fail("invalid number");
            }
            is_float = true;
        }
        self.pos = at;
        if !is_float {
            let significand = bytes[digits_start..integer_end]
                .iter()
                .try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')));
            match (significand, negative) {
                (Some(n), false) => return visitor.visit_u64(n),
                // serde_json's rule: `-0` and anything below i64::MIN become floats.
                (Some(n), true) => {
                    let negated = (n as i64).wrapping_neg();
                    return if negated >= 0 { visitor.visit_f64(-(n as f64)) } else { visitor.visit_i64(negated) };
                }
                (None, _) => {}
            }
        }
        // Floats, and integers past 64 bits: serde_json's own parsing, for the same value.
        let text = std::str::from_utf8(&bytes[start..at]).expect("a number is ascii");
        match serde_json::from_str::<f64>(text) {
            Ok(f) => visitor.visit_f64(f),
            Err(_) => fail("number out of range"),
        }
    }

    /// Before an array element or object member: `false` at the closing `close` (left for the
    /// caller), else `true` once the `,` that must follow an earlier item is consumed.
    fn next_item(&mut self, first: &mut bool, close: u8) -> Result<bool, Error> {
        match self.peek() {
            Some(b) if b == close => return Ok(false),
            Some(b',') if !*first => self.pos += 1,
            _ if *first => {}
            _ => return fail("expected a comma or the end"),
        }
        *first = false;
        Ok(true)
    }

    fn enter(&mut self) -> Result<(), Error> {
        if self.depth >= MAX_DEPTH {
            return fail("nested too deep");
        }
        self.depth += 1;
        self.pos += 1;
        Ok(())
    }

    /// After a visitor's `visit_seq`: the array must end here.
    fn end_seq(&mut self) -> Result<(), Error> {
        self.depth -= 1;
        self.expect(b']')
    }

    /// After a visitor's `visit_map` (or `visit_enum` on an object): the object must end here.
    fn end_map(&mut self) -> Result<(), Error> {
        self.depth -= 1;
        self.expect(b'}')
    }

    fn seq<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        self.enter()?;
        let value = visitor.visit_seq(Items { reader: self, first: true })?;
        self.end_seq()?;
        Ok(value)
    }

    fn map<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        self.enter()?;
        let value = visitor.visit_map(Items { reader: self, first: true })?;
        self.end_map()?;
        Ok(value)
    }

    fn str<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        match self.string()? {
            Str::Borrowed(s) => visitor.visit_borrowed_str(s),
            Str::Copied(s) => visitor.visit_str(s),
        }
    }
}

/// Deserializer methods that do what `$target` does.
macro_rules! forward_to {
    ($target:ident: $($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.$target(visitor)
            }
        )*
    };
}

/// Deserializer methods that fail with `$why`.
macro_rules! refuse {
    ($why:literal: $($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
                fail($why)
            }
        )*
    };
}

/// Fails unless the next value starts with one of `starts`.
macro_rules! require {
    ($reader:expr, $($start:pat_param)|+) => {
        match $reader.peek() {
            Some($($start)|+) => {}
            _ => return fail("unexpected value type"),
        }
    };
}

impl<'de> de::Deserializer<'de> for &mut Reader<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'n') => {
                self.literal(b"null")?;
                visitor.visit_unit()
            }
            Some(b't') => {
                self.literal(b"true")?;
                visitor.visit_bool(true)
            }
            Some(b'f') => {
                self.literal(b"false")?;
                visitor.visit_bool(false)
            }
            Some(b'-' | b'0'..=b'9') => self.number(visitor),
            Some(b'"') => self.str(visitor),
            Some(b'[') => self.seq(visitor),
            Some(b'{') => self.map(visitor),
            _ => fail("expected a value"),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        require!(self, b't' | b'f');
        self.deserialize_any(visitor)
    }

    forward_to!(deserialize_f64: deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8
        deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32);

    /// Every number type: serde_json hands any number to the visitor as it reads it.
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        require!(self, b'-' | b'0'..=b'9');
        self.number(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        require!(self, b'"');
        self.str(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'"') => match self.string()? {
                Str::Borrowed(s) => visitor.visit_borrowed_bytes(s.as_bytes()),
                Str::Copied(s) => visitor.visit_bytes(s.as_bytes()),
            },
            Some(b'[') => self.seq(visitor),
            _ => fail("unexpected value type"),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        require!(self, b'n');
        self.literal(b"null")?;
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Error> {
        if name == RAW_VALUE_TOKEN {
            return fail("RawValue is left to serde_json");
        }
        if name == VALUE_TEXT_TOKEN {
            self.peek();
            return visitor.visit_seq(ValueText { reader: self });
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        require!(self, b'[');
        self.seq(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        require!(self, b'{');
        self.map(visitor)
    }

    /// An object, or (as serde_json allows) an array of the fields in order.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'{') => self.map(visitor),
            Some(b'[') => self.seq(visitor),
            _ => fail("unexpected value type"),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'"') => visitor.visit_enum(UnitVariant { reader: self }),
            Some(b'{') => {
                self.enter()?;
                let value = visitor.visit_enum(VariantObject { reader: self })?;
                self.end_map()?;
                Ok(value)
            }
            _ => fail("expected an enum"),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    /// Skips the value, checking it all the same.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'"') => {
                self.string()?;
            }
            Some(b'[') => {
                self.seq(de::IgnoredAny)?;
            }
            Some(b'{') => {
                self.map(de::IgnoredAny)?;
            }
            _ => {
                self.deserialize_any(de::IgnoredAny)?;
            }
        }
        visitor.visit_unit()
    }
}

/// The elements of an array or the members of an object, read in turn.
struct Items<'a, 'de> {
    reader: &'a mut Reader<'de>,
    first: bool,
}

impl<'de> de::SeqAccess<'de> for Items<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        if !self.reader.next_item(&mut self.first, b']')? {
            return Ok(None);
        }
        // After a trailing comma this meets the `]`, which is not a value: an error.
        seed.deserialize(&mut *self.reader).map(Some)
    }
}

impl<'de> de::MapAccess<'de> for Items<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        if !self.reader.next_item(&mut self.first, b'}')? {
            return Ok(None);
        }
        if self.reader.peek() != Some(b'"') {
            return fail("a key must be a string");
        }
        seed.deserialize(Key { reader: &mut *self.reader }).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        self.reader.expect(b':')?;
        seed.deserialize(&mut *self.reader)
    }
}

/// An object key: a string, handed over as such (or as an enum's variant name).
struct Key<'a, 'de> {
    reader: &'a mut Reader<'de>,
}

impl<'de> de::Deserializer<'de> for Key<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.reader.str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Error> {
        if name == RAW_VALUE_TOKEN {
            return fail("RawValue is left to serde_json");
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(UnitVariant { reader: self.reader })
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_bytes(self.reader, visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_bytes(self.reader, visitor)
    }

    // serde_json reads these from inside the quotes; left to it.
    refuse!("a key read as a boolean": deserialize_bool);
    refuse!("a key read as a number": deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64);

    serde::forward_to_deserialize_any! {
        char str string unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// The two elements a [`VALUE_TEXT_TOKEN`] decoder reads, in this order:
/// 1. as `&[u8]`: the input from the value's first byte to the end, unchecked (to compare with
///    a text seen before);
/// 2. as `&str`: the value's text, checked as [`Reader::value_text`] reads it; or, asked for
///    with `deserialize_tuple(len)`, the next `len` bytes taken as they are, when the decoder
///    knows them to be a value this reader checked before (the same bytes) and they end an
///    object or array (so the value cannot go on past them) nesting at most
///    [`KNOWN_SPAN_MAX_NESTING`] deep. Anything else is checked.
struct ValueText<'a, 'de> {
    reader: &'a mut Reader<'de>,
}

impl<'de> de::SeqAccess<'de> for ValueText<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        seed.deserialize(ValuePart { reader: &mut *self.reader }).map(Some)
    }
}

/// One element of [`ValueText`].
struct ValuePart<'a, 'de> {
    reader: &'a mut Reader<'de>,
}

impl<'de> de::Deserializer<'de> for ValuePart<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.reader.value_text()?)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let reader = self.reader;
        visitor.visit_borrowed_bytes(&reader.bytes[reader.pos.min(reader.bytes.len())..])
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        let reader = self.reader;
        let start = reader.pos;
        let known = (reader.depth + KNOWN_SPAN_MAX_NESTING <= MAX_DEPTH)
            .then(|| reader.bytes.get(start..start.saturating_add(len)))
            .flatten()
            .filter(|span| matches!(span.last(), Some(b'}' | b']')))
            .and_then(|span| std::str::from_utf8(span).ok());
        match known {
            Some(text) => {
                reader.pos += len;
                visitor.visit_borrowed_str(text)
            }
            None => visitor.visit_borrowed_str(reader.value_text()?),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string byte_buf option unit
        unit_struct newtype_struct seq tuple_struct map struct enum identifier ignored_any
    }
}

/// An enum written as its variant's name: a unit variant.
struct UnitVariant<'a, 'de> {
    reader: &'a mut Reader<'de>,
}

impl<'de> de::EnumAccess<'de> for UnitVariant<'_, 'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        let variant = seed.deserialize(&mut *self.reader)?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for UnitVariant<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value, Error> {
        fail("expected a newtype variant")
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Error> {
        fail("expected a tuple variant")
    }

    fn struct_variant<V: Visitor<'de>>(self, _: &'static [&'static str], _: V) -> Result<V::Value, Error> {
        fail("expected a struct variant")
    }
}

/// An enum written as `{"Variant": value}` (the `{` already consumed).
struct VariantObject<'a, 'de> {
    reader: &'a mut Reader<'de>,
}

impl<'de> de::EnumAccess<'de> for VariantObject<'_, 'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        if self.reader.peek() != Some(b'"') {
            return fail("a key must be a string");
        }
        let variant = seed.deserialize(&mut *self.reader)?;
        self.reader.expect(b':')?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for VariantObject<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        de::Deserialize::deserialize(self.reader)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self.reader)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_seq(self.reader, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_struct(self.reader, "", fields, visitor)
    }
}

#[cfg(test)]
mod tests;
