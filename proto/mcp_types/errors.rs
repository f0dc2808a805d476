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
