//! Helper macros for string enums of the specification that must tolerate values this crate
//! does not know: known values get a variant, anything else is kept in `Other(String)` and
//! written back unchanged; and one-value enums for `const` members. Not wire types themselves.

/// Declares a string enum with known variants and an `Other(String)` catch-all, with serde
/// impls that map each variant to its wire string.
macro_rules! open_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
            /// A value this crate does not know, kept as written.
            Other(String),
        }

        impl $name {
            /// The string on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $wire,)+
                    Self::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $($wire => Self::$variant,)+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as serde::Deserialize>::deserialize(d)?;
                Ok(Self::from(s.as_str()))
            }
        }
    };
}
pub(crate) use open_enum;

/// Declares a one-value string enum standing for a `const` member of the schema.
macro_rules! const_tag {
    ($(#[$doc:meta])* $name:ident = $wire:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            /// The only value.
            #[default]
            #[serde(rename = $wire)]
            Value,
        }
    };
}
pub(crate) use const_tag;
