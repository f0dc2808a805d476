//! The transports integration tests, one module per file of this folder
//! (`cargo test --test transports -- MODULE::`); the shared support modules are declared here once.

#[path = "../../bridge/demo/echo.rs"]
mod echo;
#[path = "../support/http.rs"]
mod http_support;
#[path = "../support/oauth.rs"]
mod oauth_support;
#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "tls")]
mod http2_client;
mod http_client;
mod http_client_authorizer;
mod http_client_stateless;
mod http_oauth;
mod http_principal;
mod http_request_context;
mod http_server;
mod http_server_auth;
mod http_stateless_server;
#[cfg(feature = "tls")]
mod http_tls;
mod oauth_client_e2e;
