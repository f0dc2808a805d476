//! mcpwire — a Model Context Protocol stack written by hand.
//!
//! - [`proto`]: JSON-RPC 2.0 messages, framing and every MCP type of every revision; no IO.
//! - `transport` (feature `transport`): stdio (child process and our own stdin/stdout) and
//!   in-process transports on tokio; with the feature `http` (default) Streamable HTTP and the
//!   legacy HTTP+SSE transport, client and server, on hyper (`tls` adds https via rustls).
//! - `peer` (feature `transport`): a session core driven over a transport, shared by client
//!   and server.
//! - `server` (feature `server`): a builder of tools and the dispatch that serves them over
//!   any transport (`serve`, `serve_stdio`).
//! - `auth` (feature `transport`; verifiers with `http`): the resource server's half of OAuth
//!   2.1: token verifiers (static, JWT with JWKS, introspection), the principal handlers see,
//!   protected resource metadata and challenges.
//! - `client` (feature `client`): an MCP client over any transport, one connection per server;
//!   the `mcp-bridge` binary is built on it.
//! - `metrics` (feature `server`): counters, gauges and histograms rendered in the Prometheus
//!   text format, and the named metrics of the bridge.
//! - `conformance` (feature `conformance`): the recorded-session format and the checks the
//!   `mcp-conformance` binary runs over it.
//! - `bridge` (feature `bridge`): the `mcp-bridge` binary's code (gateway, shell client, config
//!   commands), here so that the generic code it uses is compiled once; only its `main` is public.
//!
//! Transports, client, server and the conformance runner are built on top of `proto`;
//! features gate the heavy parts so that a user who only wants the types builds `proto`
//! with serde and serde_json alone (`default-features = false`).

pub mod proto;

#[cfg(feature = "transport")]
pub mod transport;

#[cfg(feature = "transport")]
pub mod peer;

#[cfg(feature = "transport")]
pub mod auth;

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "server")]
pub mod server;

#[cfg(feature = "server")]
pub mod metrics;

#[cfg(feature = "recording")]
pub mod conformance;

#[cfg(feature = "bridge")]
pub mod bridge;
