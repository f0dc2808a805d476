//! Building blocks of the hand-written `Deserialize` impls of the hot types (`tools/call`
//! params and results, text content): a map key that borrows from the input when it can, and a
//! macro that decodes a struct member by member, every unknown member going to its `extra` map.
//!
//! Why not `#[serde(flatten)]`: serde buffers a struct with a flattened member into its
//! intermediate `Content` tree before building it, an allocation per node on the way. The macro
//! decodes each member straight into its type. (Measured: small results decode ~7% faster; from
//! 4 KiB up the unescaping and allocation of the text dominate either way — docs/benchmarks.md.)
//!
//! Semantics match the derived impls: a missing required member, a member of the wrong type and
//! a known member given twice are errors; an optional member that is `null` is absent; an
//! unknown member given twice keeps the last value (as a JSON object decoded into a map does).
//!
//! And the other way round for the types no hot path decodes (capabilities, `initialize`,
//! sampling, elicitation, the list results …): [`decode_via_value!`] makes their derived
//! decoder run on a [`serde_json::Value`] only, whatever the input. Each derived `Deserialize`
//! is otherwise compiled once per deserializer it is used with (the `&str` reader of
//! [`Body::decode`](crate::proto::jsonrpc::Body::decode), the envelope reader of
//! `jsonrpc::decode_typed`, a `Value`), with every nested type's decoder inlined into each copy;
//! `ClientCapabilities` alone was five copies of 27 to 36 KB in `mcp-bridge`. The price is a
//! `Value` built first, and a wrong member's error without the line and column.

use std::fmt;

use serde::de::{Deserializer, Visitor};

use crate::proto::json_read::KNOWN_SPAN_MAX_NESTING;

/// An object key, borrowed from the input when it holds no escapes.
pub(crate) enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }

    pub(crate) fn into_string(self) -> String {
        match self {
            Key::Borrowed(s) => s.to_owned(),
            Key::Owned(s) => s,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(s))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// The last value of one type decoded on this thread, by the text it was decoded from: a
/// 2026-07-28 client sends the same `clientCapabilities` and `clientInfo` in every request's
/// `_meta`, and decoding them (through a `Value`, then the derived decoder) cost more than the
/// rest of a small `tools/call`. A clone of the memo's value stands for decoding equal text
/// again, which is what decoding is a pure function of, so nothing here can go stale.
///
/// Only [`json_read`](crate::proto::json_read)'s reader hands over a value's text
/// ([`VALUE_TEXT_TOKEN`](crate::proto::json_read::VALUE_TEXT_TOKEN)); with any other
/// deserializer the value is decoded as it would be without a memo. Texts longer than
/// [`Memo::MAX_TEXT`] are decoded and not kept. When the input begins with the remembered
/// text (an object or array: it ends where its text does), the reader takes those bytes
/// without checking them again, the check being what it already made of the same bytes.
pub(crate) struct Memo<T: 'static> {
    last: &'static std::thread::LocalKey<MemoSlot<T>>,
}

/// Where a [`Memo`] keeps its last text and value (a `thread_local!`).
pub(crate) type MemoSlot<T> = std::cell::RefCell<Option<Remembered<T>>>;

/// A memo's last text and the value decoded from it.
pub(crate) struct Remembered<T> {
    text: Box<str>,
    value: T,
    /// `text` may be taken from the input without its check when the input begins with it
    /// (see `json_read::ValueText`): an object or array nesting at most
    /// `KNOWN_SPAN_MAX_NESTING` deep.
    known_span: bool,
}

impl<T> Memo<T> {
    /// The longest text kept.
    pub(crate) const MAX_TEXT: usize = 4096;

    /// A memo kept in `last` (a `thread_local!` of its own for each use).
    pub(crate) const fn new(last: &'static std::thread::LocalKey<MemoSlot<T>>) -> Self {
        Memo { last }
    }
}

impl<T> Clone for Memo<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Memo<T> {}

/// Decodes an optional `T` (a JSON `null` is `None`) through the memo.
impl<'de, T: serde::de::DeserializeOwned + Clone + 'static> serde::de::DeserializeSeed<'de> for Memo<T> {
    type Value = Option<T>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        d.deserialize_newtype_struct(crate::proto::json_read::VALUE_TEXT_TOKEN, self)
    }
}

impl<'de, T: serde::de::DeserializeOwned + Clone + 'static> Visitor<'de> for Memo<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value")
    }

    /// Any deserializer but ours: the value as it is.
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        <Option<T> as serde::Deserialize>::deserialize(d)
    }

    /// Ours (`json_read::ValueText`): the input from the value on, then the value's text. When
    /// the input begins with the remembered text (an object or array, which ends where its
    /// text does), the reader is told to take those bytes without checking them again: they
    /// are the very bytes it checked when the memo kept them.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut value: A) -> Result<Option<T>, A::Error> {
        use serde::de::Error as _;
        let rest: &'de [u8] = value.next_element()?.ok_or_else(|| A::Error::custom("no input"))?;
        let known = self.last.with_borrow(|last| {
            last.as_ref()
                .filter(|last| last.known_span && rest.starts_with(last.text.as_bytes()))
                .map(|last| last.text.len())
        });
        let text = match known {
            Some(len) => value.next_element_seed(KnownSpan(len))?,
            None => value.next_element::<&'de str>()?,
        };
        self.visit_borrowed_str(text.ok_or_else(|| A::Error::custom("no value"))?)
    }

    /// The value's text.
    fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<Option<T>, E> {
        if text == "null" {
            return Ok(None);
        }
        let hit = self.last.with_borrow(|last| match last {
            Some(last) if *last.text == *text => Some(last.value.clone()),
            _ => None,
        });
        if let Some(value) = hit {
            return Ok(Some(value));
        }
        let value: T = serde_json::from_str(text).map_err(E::custom)?;
        if text.len() <= Self::MAX_TEXT {
            let known_span = text.ends_with(['}', ']']) && nests_at_most(text, KNOWN_SPAN_MAX_NESTING);
            self.last.set(Some(Remembered { text: text.into(), value: value.clone(), known_span }));
        }
        Ok(Some(value))
    }
}

/// Asks [`json_read`](crate::proto::json_read)'s reader for the next `len` bytes as a value's
/// text (`deserialize_tuple(len)` in its value-text protocol).
struct KnownSpan(usize);

impl<'de> serde::de::DeserializeSeed<'de> for KnownSpan {
    type Value = &'de str;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<&'de str, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = &'de str;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value's text")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<&'de str, E> {
                Ok(text)
            }
        }
        d.deserialize_tuple(self.0, Text)
    }
}

/// Whether the arrays and objects of JSON `text` nest at most `max` deep (brackets inside
/// strings do not count).
fn nests_at_most(text: &str, max: u32) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
    for &byte in text.as_bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return false;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// Implements `Deserialize` for a struct with an `extra: Extra` member, without flatten.
///
/// `required` members must be present (their Rust type as is); `optional` members have a Rust
/// type `Option<T>` and are written here with `T`. Each member is `field: Type = "wireName"`.
macro_rules! deserialize_with_extra {
    (
        $ty:ident, $what:literal,
        required { $($req:ident : $rty:ty = $rname:literal),* $(,)? }
        optional { $($opt:ident : $oty:ty = $oname:literal),* $(,)? }
    ) => {
        impl $ty {
            /// Decodes the members `map` has left (a caller may have read some before, e.g.
            /// the `type` of a content block).
            pub(crate) fn from_map_access<'de, A: serde::de::MapAccess<'de>>(mut map: A) -> Result<$ty, A::Error> {
                use serde::de::Error as _;
                $(let mut $req: Option<$rty> = None;)*
                $(let mut $opt: Option<Option<$oty>> = None;)*
                let mut extra = $crate::proto::mcp_types::Extra::new();
                while let Some(key) = map.next_key::<$crate::proto::mcp_types::decode::Key<'de>>()? {
                    match key.as_str() {
                        $($rname => {
                            if $req.is_some() {
                                return Err(A::Error::duplicate_field($rname));
                            }
                            $req = Some(map.next_value()?);
                        })*
                        $($oname => {
                            if $opt.is_some() {
                                return Err(A::Error::duplicate_field($oname));
                            }
                            $opt = Some(map.next_value()?);
                        })*
                        _ => {
                            let value: serde_json::Value = map.next_value()?;
                            extra.insert(key.into_string(), value);
                        }
                    }
                }
                Ok($ty {
                    $($req: $req.ok_or_else(|| A::Error::missing_field($rname))?,)*
                    $($opt: $opt.flatten(),)*
                    extra,
                })
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct FieldsVisitor;
                impl<'de> serde::de::Visitor<'de> for FieldsVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<$ty, A::Error> {
                        $ty::from_map_access(map)
                    }
                }
                d.deserialize_map(FieldsVisitor)
            }
        }
    };
}
pub(crate) use deserialize_with_extra;

/// Decodes a `T` by reading `d` into a [`serde_json::Value`] first and running `decode` (the
/// derived decoder) on that, so `decode` is compiled for `Value` alone.
pub(crate) fn via_value<'de, D, T>(
    d: D,
    decode: fn(serde_json::Value) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    use serde::de::Error as _;
    let value = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
    decode(value).map_err(D::Error::custom)
}

/// `Deserialize` and `Serialize` for types whose derives carry `#[serde(remote = "Self")]`
/// (which makes them inherent functions, public like the type: `T::deserialize(d)` called by
/// path is the derived decoder straight on `d`, same result): decoding goes through
/// [`via_value`], encoding is the derived one unchanged.
///
/// The derived decoder is called from a function that is not generic, so it is compiled here
/// once and not again in each crate that decodes the type (generic code is instantiated anew
/// in every crate that uses it).
macro_rules! decode_via_value {
    ($($ty:ident),* $(,)?) => {$(
        impl $ty {
            #[inline(never)]
            fn from_json_value(value: serde_json::Value) -> Result<$ty, serde_json::Error> {
                $ty::deserialize(value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::proto::mcp_types::decode::via_value(d, $ty::from_json_value)
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $ty::serialize(self, s)
            }
        }
    )*};
}
pub(crate) use decode_via_value;

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::proto::mcp_types::{ClientCapabilities, InitializeRequestParams, ListToolsResult};

    const INITIALIZE: &str = r#"{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},"sampling":{},"x-vendor":{"a":[1,2.5]}},"clientInfo":{"name":"c","version":"1"},"_meta":{"k":"v"},"later":null}"#;

    #[test]
    fn a_type_decoded_through_a_value_reads_alike_from_text_from_a_value_and_from_raw_json() {
        let from_text: InitializeRequestParams = serde_json::from_str(INITIALIZE).unwrap();
        let value: Value = serde_json::from_str(INITIALIZE).unwrap();
        let from_value: InitializeRequestParams = serde_json::from_value(value.clone()).unwrap();
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(INITIALIZE).unwrap();
        let from_raw: InitializeRequestParams = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(from_text, from_value);
        assert_eq!(from_text, from_raw);
        assert_eq!(from_text.capabilities.roots.as_ref().and_then(|r| r.list_changed), Some(true));
        // Unknown members and numbers survive, as with the derived decoder on the text.
        assert_eq!(from_text.capabilities.extra["x-vendor"], json!({"a": [1, 2.5]}));
        assert_eq!(serde_json::to_value(&from_text).unwrap(), value);
    }

    #[test]
    fn nesting_counts_brackets_outside_strings_only() {
        use super::nests_at_most;
        assert!(nests_at_most(r#"{"a":[{"b":"[[[[{{"}]}"#, 3));
        assert!(!nests_at_most(r#"{"a":[{"b":"[[[[{{"}]}"#, 2));
        assert!(nests_at_most(r#"{"a\"[[[":"\\"}"#, 1));
        assert!(!nests_at_most(r#"{"a\\":[[1]]}"#, 2));
        assert!(nests_at_most("1", 0));
    }

    #[test]
    fn a_type_decoded_through_a_value_still_rejects_what_its_derive_rejects() {
        let missing = serde_json::from_str::<InitializeRequestParams>(
            r#"{"capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#,
        );
        assert!(missing.unwrap_err().to_string().contains("missing field `protocolVersion`"));
        let wrong = serde_json::from_str::<ClientCapabilities>(r#"{"roots":{"listChanged":"yes"}}"#);
        assert!(wrong.unwrap_err().to_string().contains("expected a boolean"));
        let not_an_object = serde_json::from_str::<ListToolsResult>("[1]");
        assert!(not_an_object.is_err());
        // Text that is not JSON fails in the first pass, with its position.
        let broken = serde_json::from_str::<ListToolsResult>(r#"{"tools": [}"#).unwrap_err();
        assert_eq!((broken.line(), broken.column()), (1, 12));
    }
}
