//! The interop integration tests, one module per file of this folder
//! (`cargo test --test interop -- MODULE::`); the shared support modules are declared here once.

#[path = "../support/examples.rs"]
mod examples;
#[path = "../support/http.rs"]
mod http_support;
#[path = "../support/mod.rs"]
mod support;

mod axum_app;
mod http2;
mod http_interop;
mod interop_clients;
mod interop_eras;
mod python_sdk_types;
