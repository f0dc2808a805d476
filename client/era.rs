//! Which protocol era a connection speaks, as the host asks for it: the handshake era
//! (`initialize`, 2024-11-05 … 2025-11-25), the stateless 2026-07-28 era adopted without a
//! probe, or `auto` — probe with `server/discover` and fall back to `initialize` when the server
//! does not take it (the Python SDK's `mode=` and codex's protocol modes).
//!
//! Not here: the probe and the fallback themselves (the client's `connect`), and what differs
//! between revisions (`proto::version`).

use std::fmt;
use std::str::FromStr;

use crate::proto::version::ProtocolVersion;

/// A connection's era policy. Written in config files as `"legacy"`, `"auto"` or a stateless
/// version such as `"2026-07-28"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EraPolicy {
    /// The `initialize` handshake, never a probe.
    Legacy,
    /// This stateless version from the first request, without a probe (the server's
    /// capabilities are then unknown and calls are not checked against them).
    Adopt(ProtocolVersion),
    /// `server/discover` first (at the newest stateless version we support); `initialize`
    /// when the server answers with anything but a usable discovery result.
    #[default]
    Auto,
}

/// An era policy string that is none of `legacy`, `auto` or a stateless version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidEra(pub String);

impl fmt::Display for InvalidEra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.parse::<ProtocolVersion>() {
            Ok(v) => write!(f, "era {v} is a handshake-era version: use \"legacy\" (or \"auto\")"),
            Err(_) => {
                write!(f, "unknown era {:?}: expected \"legacy\", \"auto\" or a version such as \"2026-07-28\"", self.0)
            }
        }
    }
}

impl std::error::Error for InvalidEra {}

impl FromStr for EraPolicy {
    type Err = InvalidEra;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "legacy" => Ok(EraPolicy::Legacy),
            "auto" => Ok(EraPolicy::Auto),
            _ => match s.parse::<ProtocolVersion>() {
                Ok(v) if !v.has_initialize_handshake() => Ok(EraPolicy::Adopt(v)),
                _ => Err(InvalidEra(s.to_owned())),
            },
        }
    }
}

impl fmt::Display for EraPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EraPolicy::Legacy => f.write_str("legacy"),
            EraPolicy::Adopt(v) => f.write_str(v.as_str()),
            EraPolicy::Auto => f.write_str("auto"),
        }
    }
}

impl serde::Serialize for EraPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for EraPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_the_three_policies() {
        for (text, era) in [
            ("legacy", EraPolicy::Legacy),
            ("auto", EraPolicy::Auto),
            ("2026-07-28", EraPolicy::Adopt(ProtocolVersion::V2026_07_28)),
        ] {
            assert_eq!(text.parse::<EraPolicy>(), Ok(era));
            assert_eq!(era.to_string(), text);
            assert_eq!(serde_json::to_string(&era).unwrap(), format!("\"{text}\""));
        }
        assert_eq!(EraPolicy::default(), EraPolicy::Auto);
    }

    #[test]
    fn a_handshake_version_or_a_typo_is_refused_with_a_hint() {
        let err = "2025-11-25".parse::<EraPolicy>().unwrap_err();
        assert_eq!(err.to_string(), "era 2025-11-25 is a handshake-era version: use \"legacy\" (or \"auto\")");
        let err = serde_json::from_str::<EraPolicy>("\"modern\"").unwrap_err().to_string();
        assert!(err.starts_with("unknown era \"modern\""), "{err}");
    }
}
