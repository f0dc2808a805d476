#![doc = include_str!("docs/library.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(unreachable_pub)]

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

#[cfg(feature = "gateway")]
pub mod gateway;

#[cfg(feature = "recording")]
pub mod recording;

/// The schemars crate (feature `schema`), for `#[derive(JsonSchema)]` on the types of typed
/// tools without a direct dependency: `use mcpwire::schemars::{self, JsonSchema};` puts it
/// where the derive looks for it (see `examples/typed_tools.rs`).
#[cfg(feature = "schema")]
pub use schemars;

#[cfg(feature = "otel")]
pub mod telemetry;
