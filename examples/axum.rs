//! The MCP server mounted in an axum app: the echo server (tools `echo`, `add`, `greet`) plus a
//! `whoami` tool, served at `/mcp` by the library's [`HttpService`] beside the app's own
//! `GET /hello` (answers `hello`), under the app's own layers:
//!
//! - an authentication middleware that reads the user from the `X-User` header (a stand-in
//!   for a real session cookie or token check), refuses a request without one (401), and puts
//!   a `User` into the request's extensions, with the peer's address as a [`RemoteAddr`];
//! - tower-http's CORS, for a browser client at `http://localhost:6274` (the MCP
//!   inspector's): the headers MCP needs allowed, `Mcp-Session-Id` exposed.
//!
//! `whoami` answers `NAME (from ADDR)`: the user the middleware found, read in the handler
//! through `ctx.http_request()`. The library's own guards stay on inside the Service (loopback
//! `Host` and `Origin`, the 4 MiB body cap).
//!
//! Run: `cargo run --example axum -- 127.0.0.1:PORT` (default `127.0.0.1:0`, any free port);
//! it prints `listening on http://ADDR/mcp` and serves until Ctrl-C.

#[path = "../bridge/demo/echo.rs"]
mod echo;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request};
use axum::http::{header, HeaderName, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use mcpwire::server::text_result;
use mcpwire::transport::sse_http::{HttpServerConfig, HttpService, RemoteAddr};
use serde_json::json;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// Who the app's middleware says is calling.
#[derive(Clone, Debug)]
struct User(String);

/// The app's own authentication: a user from `X-User`, else 401.
async fn authenticate(mut req: Request, next: Next) -> Response {
    let user = req.headers().get("x-user").and_then(|v| v.to_str().ok()).map(str::trim).filter(|u| !u.is_empty());
    let Some(user) = user.map(|u| User(u.to_owned())) else {
        return (StatusCode::UNAUTHORIZED, "unknown user: send X-User").into_response();
    };
    req.extensions_mut().insert(user);
    if let Some(ConnectInfo(addr)) = req.extensions().get::<ConnectInfo<SocketAddr>>().copied() {
        req.extensions_mut().insert(RemoteAddr(addr));
    }
    next.run(req).await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args().nth(1).as_deref().unwrap_or("127.0.0.1:0").parse()?;
    let server = echo::echo_builder()
        .tool("whoami", "The user the app's middleware authenticated", json!({"type": "object"}), |_args, ctx| {
            let http = ctx.http_request();
            let user = http.and_then(|r| r.extensions().get::<User>()).map(|u| u.0.clone());
            let from = http.and_then(|r| r.remote_addr()).map(|a| a.to_string()).unwrap_or_else(|| "?".into());
            async move { Ok(text_result(format!("{} (from {from})", user.unwrap_or_else(|| "nobody".into())))) }
        })
        .build()?;
    let mcp: HttpService = server.http_service(HttpServerConfig::default()).await?;

    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::exact("http://localhost:6274".parse()?))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers([
            header::CONTENT_TYPE,
            header::ACCEPT,
            HeaderName::from_static("x-user"),
            HeaderName::from_static("mcp-session-id"),
            HeaderName::from_static("mcp-protocol-version"),
            HeaderName::from_static("last-event-id"),
        ])
        .expose_headers([HeaderName::from_static("mcp-session-id")]);
    let app = Router::new()
        .route_service("/mcp", mcp.clone())
        .route_layer(middleware::from_fn(authenticate))
        .route("/hello", get(|| async { "hello" }))
        .layer(cors);

    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    mcp.shutdown().await;
    Ok(())
}
