//! mcpwire — a Model Context Protocol stack written by hand.
//!
//! - [`proto`]: JSON-RPC 2.0 messages, framing and every MCP type of every revision; no IO.
//! - `conformance` (feature `conformance`): the recorded-session format and the checks the
//!   `mcp-conformance` binary runs over it.
//!
//! Transports, client, server and the conformance runner are built on top of `proto`;
//! features gate the heavy parts so that a user who only wants the types builds `proto`
//! with serde and serde_json alone (`default-features = false`).

pub mod proto;

#[cfg(feature = "conformance")]
pub mod conformance;
