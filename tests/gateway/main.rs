//! The gateway integration tests, one module per file of this folder
//! (`cargo test --test gateway -- MODULE::`); the shared support modules are declared here once.

#[path = "../../bridge/demo/echo.rs"]
mod echo;
#[path = "../support/examples.rs"]
mod examples;
#[path = "../support/http.rs"]
mod http_support;
#[path = "../support/oauth.rs"]
mod oauth_support;
#[path = "../support/bridge.rs"]
mod serving;
#[path = "../support/mod.rs"]
mod support;

mod bridge_bounds;
mod bridge_cli;
mod bridge_config_cli;
mod bridge_endpoints;
mod bridge_faults;
mod bridge_guards;
mod bridge_login;
mod bridge_oauth;
#[cfg(feature = "otel")]
mod bridge_otel;
mod bridge_policy;
mod bridge_reach;
mod bridge_reload;
mod bridge_serve;
mod bridge_soak;
mod console_browser;
mod console_http;
mod console_traffic;
mod recording_tee;
