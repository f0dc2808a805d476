//! A server over Streamable HTTP behind a bearer token: the library's token verifier
//! ([`StaticTokenVerifier`], one shared secret) guards the MCP endpoint as an OAuth protected
//! resource, so a request without the token gets 401 with a `WWW-Authenticate` challenge, and
//! handlers see who the token speaks for (`Context::principal`). Binds loopback only.
//!
//! Run: `MCP_TOKEN=secret cargo run --example http_bearer [PORT]`; it prints
//! `listening on http://127.0.0.1:PORT/mcp` and serves until Ctrl-C. For JWTs or token
//! introspection, swap in `auth::JwtVerifier` or `auth::IntrospectionVerifier`.

use std::sync::Arc;

use mcpwire::auth::{Principal, ProtectedResource, StaticTokenVerifier};
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::HttpServerConfig;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let token = std::env::var("MCP_TOKEN").map_err(|_| "set MCP_TOKEN to the bearer token to require")?;
    let port: u16 = std::env::args().nth(1).map(|p| p.parse()).transpose()?.unwrap_or(0);
    let server = Server::builder()
        .name("http-bearer")
        .tool("whoami", "Who the access token speaks for", json!({"type": "object"}), |_args, ctx| async move {
            let subject = ctx.principal().and_then(|p| p.subject.clone()).unwrap_or_default();
            Ok(text_result(subject))
        })
        .build()?;

    // The resource's URI names the address, so bind first (port 0: any free port).
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let resource = format!("http://{}/mcp", listener.local_addr()?);
    let verifier = StaticTokenVerifier::new(token)?.principal(Principal::new(Some("example-user".into())));
    let policy = ProtectedResource::new(&resource, Arc::new(verifier));
    let http = server.serve_http_on(listener, HttpServerConfig::default().protected_resource(policy)).await?;
    println!("listening on {}", http.url());

    tokio::signal::ctrl_c().await?;
    http.shutdown().await;
    Ok(())
}
