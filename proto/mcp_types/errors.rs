//! Error codes that MCP adds to JSON-RPC's, with the typed `data` of those that define one.
//!
//! Only the codes and payloads live here; the error object itself (`code`, `message`, `data`)
//! is the JSON-RPC layer's. The standard JSON-RPC codes (-32700, -32600..-32603) are not
//! repeated.

use serde::{Deserialize, Serialize};

use super::*;

/// The server needs the user to complete URL-mode elicitations first (2025-11-25; the
/// 2026-07-28 revision uses `input_required` results instead).
pub const URL_ELICITATION_REQUIRED: i32 = -32042;
/// The requested protocol version is not supported (2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
/// The request needs a client capability the client did not declare (2026-07-28).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
/// An HTTP header (`Mcp-Method`, `Mcp-Name`, ...) disagrees with the body (2026-07-28). No
/// `data` is defined for it.
pub const HEADER_MISMATCH: i32 = -32020;

/// `data` of [`URL_ELICITATION_REQUIRED`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlElicitationRequiredData {
    /// The elicitations to complete before retrying.
    pub elicitations: Vec<ElicitRequestURLParams>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `data` of [`UNSUPPORTED_PROTOCOL_VERSION`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsupportedProtocolVersionData {
    /// Versions the server does support; the client should retry with one of them.
    pub supported: Vec<String>,
    /// The version the client asked for.
    pub requested: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `data` of [`MISSING_REQUIRED_CLIENT_CAPABILITY`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the request needs.
    pub required_capabilities: ClientCapabilities,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&t).expect("encode"), v);
        t
    }

    #[test]
    fn codes() {
        assert_eq!(
            [
                URL_ELICITATION_REQUIRED,
                UNSUPPORTED_PROTOCOL_VERSION,
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                HEADER_MISMATCH
            ],
            [-32042, -32022, -32021, -32020]
        );
    }

    #[test]
    fn data_payloads() {
        let d: UnsupportedProtocolVersionData =
            rt(json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"}));
        assert_eq!(d.requested, "1900-01-01");
        let d: MissingRequiredClientCapabilityData = rt(json!({"requiredCapabilities": {"elicitation": {}}}));
        assert!(d.extra.is_empty());
        let d: UrlElicitationRequiredData = rt(json!({"elicitations": [{
            "mode": "url", "elicitationId": "e-1", "url": "https://example.com/connect",
            "message": "Connect your account"
        }], "hint": "retry after"}));
        assert_eq!(d.elicitations[0].elicitation_id.as_deref(), Some("e-1"));
        assert_eq!(d.extra["hint"], "retry after");
    }
}
