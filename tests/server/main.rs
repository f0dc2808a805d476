//! The server integration tests, one module per file of this folder
//! (`cargo test --test server -- MODULE::`); the shared support modules are declared here once.

#[path = "../support/client.rs"]
mod client;
#[path = "../support/examples.rs"]
mod examples;
#[path = "../support/http.rs"]
mod http_support;
#[path = "../support/mod.rs"]
mod support;

mod agent;
mod demo_schemas;
mod example_programs;
mod server_backpressure;
mod server_context;
mod server_features;
mod server_stdio;
#[cfg(all(feature = "schema", feature = "validation"))]
mod typed_tools;
