//! The wire integration tests, one module per file of this folder
//! (`cargo test --test wire -- MODULE::`); the shared support modules are declared here once.

#[path = "../../bridge/demo/echo.rs"]
mod echo;
#[path = "../support/examples.rs"]
mod examples;
#[path = "../support/http.rs"]
mod http_support;
#[path = "../support/mod.rs"]
mod support;

mod mrtr_processes;
mod per_request_era;
mod roundtrip_recordings;
