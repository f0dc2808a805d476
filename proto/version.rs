//! Protocol revisions and how two peers agree on one.
//!
//! Every difference between revisions that the rest of the stack must know about is answered
//! here, by a method on [`ProtocolVersion`], so that no other module compares date strings.
//! This module does no IO and holds no session state.

use std::fmt;
use std::str::FromStr;

/// A revision of the Model Context Protocol that this crate speaks.
///
/// Ordered by date, so `v >= ProtocolVersion::V2025_06_18` asks "does `v` have what 2025-06-18 added".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// The first published revision: HTTP+SSE transport, no batching.
    V2024_11_05,
    /// Streamable HTTP, JSON-RPC batches, tool annotations, audio content, completions capability.
    V2025_03_26,
    /// Structured tool output, elicitation, resource links, `MCP-Protocol-Version` header; batches removed.
    V2025_06_18,
    /// Tasks, URL-mode elicitation, sampling with tools, icons, SSE polling.
    V2025_11_25,
    /// Stateless: `server/discover` instead of `initialize`, per-request `_meta`, `resultType`.
    V2026_07_28,
}

/// A version string that names no revision this crate knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVersion(pub String);

impl fmt::Display for UnknownVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown protocol version {:?}", self.0)
    }
}

impl std::error::Error for UnknownVersion {}

impl ProtocolVersion {
    /// Every revision, oldest first.
    pub const ALL: [ProtocolVersion; 5] =
        [Self::V2024_11_05, Self::V2025_03_26, Self::V2025_06_18, Self::V2025_11_25, Self::V2026_07_28];

    /// The newest revision negotiated through `initialize` (the handshake era).
    pub const LATEST_HANDSHAKE: ProtocolVersion = Self::V2025_11_25;

    /// The revisions served per request, without a handshake (`_meta` names one of them).
    pub const PER_REQUEST: [ProtocolVersion; 1] = [Self::V2026_07_28];

    /// The newest revision of all.
    pub const LATEST: ProtocolVersion = Self::V2026_07_28;

    /// The version assumed for an HTTP request that carries no `MCP-Protocol-Version` header
    /// (2025-06-18 transports, "Protocol Version Header").
    pub const HTTP_HEADER_DEFAULT: ProtocolVersion = Self::V2025_03_26;

    /// The wire spelling, e.g. `"2025-11-25"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// JSON-RPC batches (a JSON array of messages) are allowed only in 2025-03-26.
    pub const fn allows_batches(self) -> bool {
        matches!(self, Self::V2025_03_26)
    }

    /// Sessions start with `initialize` / `notifications/initialized` up to 2025-11-25;
    /// from 2026-07-28 there is no handshake and every request carries its own `_meta`.
    pub const fn has_initialize_handshake(self) -> bool {
        (self as u8) < (Self::V2026_07_28 as u8)
    }

    /// Results carry `resultType` (absent means `complete`) from 2026-07-28 on.
    pub const fn has_result_type(self) -> bool {
        (self as u8) >= (Self::V2026_07_28 as u8)
    }

    /// `structuredContent` and `outputSchema` on tools, from 2025-06-18.
    pub const fn has_structured_tool_output(self) -> bool {
        (self as u8) >= (Self::V2025_06_18 as u8)
    }

    /// `elicitation/create` exists from 2025-06-18.
    pub const fn has_elicitation(self) -> bool {
        (self as u8) >= (Self::V2025_06_18 as u8)
    }

    /// Tasks (`tasks/*`, task-augmented requests) exist only in 2025-11-25.
    pub const fn has_tasks(self) -> bool {
        matches!(self, Self::V2025_11_25)
    }

    /// `ping` was removed in 2026-07-28.
    pub const fn has_ping(self) -> bool {
        self.has_initialize_handshake()
    }

    /// HTTP requests after `initialize` must carry `MCP-Protocol-Version` from 2025-06-18.
    pub const fn requires_version_header(self) -> bool {
        (self as u8) >= (Self::V2025_06_18 as u8)
    }

    /// A server's answer to a client's `initialize` that offered `requested`
    /// (lifecycle, "Version Negotiation"): the same version if the server supports it,
    /// otherwise the latest handshake version the server supports.
    ///
    /// `supported` lists what the server speaks; it must contain at least one handshake-era
    /// version or `None` is returned.
    pub fn server_counter_offer(requested: &str, supported: &[ProtocolVersion]) -> Option<ProtocolVersion> {
        if let Ok(v) = requested.parse::<ProtocolVersion>() {
            if supported.contains(&v) && v.has_initialize_handshake() {
                return Some(v);
            }
        }
        supported.iter().copied().filter(|v| v.has_initialize_handshake()).max()
    }

    /// The client's check of the server's `initialize` answer: the version the server chose,
    /// if the client supports it. A client that cannot speak it must disconnect.
    pub fn client_accepts(answered: &str, supported: &[ProtocolVersion]) -> Result<ProtocolVersion, UnknownVersion> {
        match answered.parse::<ProtocolVersion>() {
            Ok(v) if supported.contains(&v) && v.has_initialize_handshake() => Ok(v),
            _ => Err(UnknownVersion(answered.to_owned())),
        }
    }
}

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|v| v.as_str() == s).ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_every_revision() {
        for v in ProtocolVersion::ALL {
            assert_eq!(v.as_str().parse::<ProtocolVersion>(), Ok(v));
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{v}\""));
        }
        assert!("2099-01-01".parse::<ProtocolVersion>().is_err());
    }

    #[test]
    fn only_2025_03_26_allows_batches() {
        let allowing: Vec<_> = ProtocolVersion::ALL.into_iter().filter(|v| v.allows_batches()).collect();
        assert_eq!(allowing, [ProtocolVersion::V2025_03_26]);
    }

    #[test]
    fn server_answers_unknown_offer_with_its_latest_handshake_version() {
        let all = ProtocolVersion::ALL;
        assert_eq!(ProtocolVersion::server_counter_offer("2099-01-01", &all), Some(ProtocolVersion::V2025_11_25));
        assert_eq!(ProtocolVersion::server_counter_offer("2024-11-05", &all), Some(ProtocolVersion::V2024_11_05));
        // 2026-07-28 is never negotiated through initialize.
        assert_eq!(ProtocolVersion::server_counter_offer("2026-07-28", &all), Some(ProtocolVersion::V2025_11_25));
        let old_only = [ProtocolVersion::V2024_11_05];
        assert_eq!(ProtocolVersion::server_counter_offer("2025-11-25", &old_only), Some(ProtocolVersion::V2024_11_05));
    }

    #[test]
    fn client_rejects_a_version_it_does_not_speak() {
        let ours = [ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_11_25];
        assert_eq!(ProtocolVersion::client_accepts("2025-06-18", &ours), Ok(ProtocolVersion::V2025_06_18));
        assert!(ProtocolVersion::client_accepts("2024-11-05", &ours).is_err());
        assert!(ProtocolVersion::client_accepts("1999-01-01", &ours).is_err());
    }
}
