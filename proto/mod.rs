//! The wire layer, sans IO: it never imports tokio, hyper or rustls.
//!
//! - [`json_write`]: compact JSON output, as serde_json writes it, with a faster escaper.
//! - `json_read`: a JSON reader for the typed decode of large params and results.
//! - [`envelope`]: the 2026-07-28 per-request `_meta`, its validation ladder, errors and HTTP
//!   request headers.
//! - [`jsonrpc`]: the JSON-RPC 2.0 message model, decoding with validation, encoding.
//! - [`mcp_types`]: every MCP type of every revision, and the method table.
//! - [`version`]: protocol revisions and negotiation.
//! - [`session`]: the sans-IO session core: ids, pending requests, lifecycle, cancellation,
//!   progress, timeouts.
//! - [`timestamp`]: UTC timestamps as MCP writes them, and the calendar behind them.
//! - [`validate`]: values checked against a JSON Schema compiled once (full 2020-12 with feature
//!   `validation`, a built-in subset without).
//! - `json_schema` (feature `schema`): JSON Schemas derived from Rust types, for typed tools.
//! - `framing` (feature `framing`): newline-delimited and SSE framing on `bytes::BytesMut`.

pub mod envelope;
mod json_read;
pub mod json_write;
pub mod jsonrpc;
pub mod mcp_types;
pub mod printable;
pub mod request_headers;
pub mod session;
pub mod timestamp;
pub mod validate;
pub mod version;

#[cfg(feature = "framing")]
pub mod framing;

#[cfg(feature = "schema")]
pub mod json_schema;
