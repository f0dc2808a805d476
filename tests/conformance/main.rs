//! The conformance integration tests, one module per file of this folder
//! (`cargo test --test conformance -- MODULE::`); the shared support modules are declared here once.

#[path = "../support/examples.rs"]
mod examples;
#[path = "../support/bridge.rs"]
mod serving;
#[path = "../support/mod.rs"]
mod support;

mod conformance_check;
mod conformance_client;
mod conformance_client_http;
mod conformance_http;
mod conformance_in_process;
mod conformance_record_http;
mod conformance_replay;
