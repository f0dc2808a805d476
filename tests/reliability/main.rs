//! The reliability integration tests, one module per file of this folder
//! (`cargo test --test reliability -- MODULE::`); the shared support modules are declared here once.

#[path = "../../bridge/demo/echo.rs"]
mod echo;
#[path = "../support/examples.rs"]
mod examples;
#[path = "../support/http.rs"]
mod http_support;
#[path = "../support/reliability.rs"]
mod reliability;
#[path = "../support/bridge.rs"]
mod serving;
#[path = "../support/mod.rs"]
mod support;

mod faults;
mod hostile_input;
mod large_messages;
mod load;
mod scale_out_stateless;
mod shared_sessions;
