//! The client integration tests, one module per file of this folder
//! (`cargo test --test client -- MODULE::`); the shared support modules are declared here once.

#[path = "../../bridge/demo/echo.rs"]
mod echo;
#[path = "../support/examples.rs"]
mod examples;
#[path = "../support/mod.rs"]
mod support;

mod catalog_lazy;
mod catalog_limits;
mod catalog_reload;
mod catalog_scopes;
mod catalog_sources;
mod client_bad_servers;
mod client_callers;
mod client_eras;
mod client_everything;
mod client_listen;
mod client_own_transport;
mod client_stdio;
mod connection_set;
