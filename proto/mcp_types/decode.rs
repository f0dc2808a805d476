//! Building blocks of the hand-written `Deserialize` impls of the hot types (`tools/call`
//! params and results, text content): a map key that borrows from the input when it can, and a
//! macro that decodes a struct member by member, every unknown member going to its `extra` map.
//!
//! Why not `#[serde(flatten)]`: serde buffers a struct with a flattened member into its
//! intermediate `Content` tree before building it, an allocation per node on the way. The macro
//! decodes each member straight into its type. (Measured: small results decode ~7% faster; from
//! 4 KiB up the unescaping and allocation of the text dominate either way — BENCHMARKS.md.)
//!
//! Semantics match the derived impls: a missing required member, a member of the wrong type and
//! a known member given twice are errors; an optional member that is `null` is absent; an
//! unknown member given twice keeps the last value (as a JSON object decoded into a map does).

use std::fmt;

use serde::de::{Deserializer, Visitor};

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
