//! The HTTP server's bearer token and extra routes over real loopback HTTP: the 401s and their
//! challenges (raw HTTP/1.1, so the exact status and headers show), a full MCP exchange through
//! our own client carrying the token, over Streamable HTTP and the legacy transport; public and
//! guarded routes, HEAD, 405, and the `Host` check in front of all of them; and the TypeScript
//! SDK client (a third-party peer) through the token, and refused without it.

use crate::http_support;
use crate::support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use http_support::*;
use mcpwire::transport::sse_http::{
    HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig, RouteResponse,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "tok-3f9a.B_~+/";

/// A server requiring [`TOKEN`], with a public `/healthz` and a guarded `/metrics`; the count
/// is how many times `/metrics` ran.
async fn guarded_server() -> (HttpServer, Arc<AtomicUsize>) {
    let metrics_calls = Arc::new(AtomicUsize::new(0));
    let calls = metrics_calls.clone();
    let config = HttpServerConfig::default()
        .bearer_token(Some(TOKEN.to_owned()))
        .route_public("/healthz", || async { RouteResponse::text(200, "ok\n") })
        .route("/metrics", move || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { RouteResponse::new(200, "text/plain; version=0.0.4; charset=utf-8", "up 1\n") }
        });
    (HttpServer::bind(config, serve_echo).await.unwrap(), metrics_calls)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// One raw request with `host` as the `Host` header (the shared `raw` always sends the
/// listening address).
async fn raw_with_host(addr: SocketAddr, path: &str, host: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    tokio::time::timeout(SHORT, tcp.read_to_end(&mut bytes)).await.expect("the server closes").unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    (status, text)
}

#[tokio::test]
async fn the_mcp_endpoint_refuses_a_missing_or_wrong_token_with_a_bearer_challenge() {
    let (server, _) = guarded_server().await;
    let addr = server.local_addr();
    let init = initialize_body("2025-11-25");

    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &init, SHORT).await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    assert_eq!(r.json()["error"], "invalid_request");
    assert!(r.header("mcp-session-id").is_none(), "nothing processed");

    // Another scheme counts as no bearer token at all.
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", "Basic dXNlcjpwYXNz")], &init, SHORT).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));

    let wrong = bearer("tok-3f9a.B_~+");
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &wrong)], &init, SHORT).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some(r#"Bearer error="invalid_token""#));
    assert_eq!(r.json()["error"], "invalid_token");
    assert!(!r.body.contains("tok-"), "the body echoes no token: {}", r.body);

    // The token comes before every other check: a GET, a DELETE and a bad body all get 401,
    // not 405/400/404, and no session was created by any of the above.
    for method in ["GET", "DELETE"] {
        let r = raw(addr, method, "/mcp", &[BOTH, ("Mcp-Session-Id", "nope")], "", SHORT).await;
        assert_eq!(r.status, 401, "{method}");
    }
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], "{not json", SHORT).await;
    assert_eq!(r.status, 401);
    assert_eq!(server.session_count(), 0);

    // The right token, in any case of the scheme: the raw exchange goes on as without a token.
    let right = format!("bearer {TOKEN}");
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &right)], &init, SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.header("mcp-session-id").is_some());
    server.shutdown().await;
}

#[tokio::test]
async fn our_client_with_the_token_initializes_and_calls_a_tool() {
    let (server, _) = guarded_server().await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(server.url()).bearer_token(TOKEN)).unwrap();
    let (peer, init) = client_peer(transport, "2025-11-25").await;
    assert_eq!(init["serverInfo"]["name"], "mcpwire-http-test");
    let result = call(&peer, "echo", json!({"text": "through the token"})).await;
    assert_eq!(result["content"][0]["text"], "through the token");
    assert_eq!(server.session_count(), 1);
    let _ = peer.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn our_client_without_the_token_is_refused_with_401() {
    let (server, _) = guarded_server().await;
    for config in [HttpClientConfig::new(server.url()), HttpClientConfig::new(server.url()).bearer_token("nope")] {
        let transport = HttpClientTransport::new(config.legacy_fallback(false)).unwrap();
        let peer = mcpwire::peer::Peer::start(
            transport,
            mcpwire::proto::session::Role::Client,
            mcpwire::proto::session::Mode::Handshake,
            Default::default(),
            NoRequests,
        );
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "no-token", "version": "0"}});
        let outcome =
            peer.request("initialize", Some(mcpwire::proto::jsonrpc::Body::typed(params)), Default::default()).await;
        let error = outcome.expect_err("refused").to_string();
        assert!(error.contains("401"), "{error}");
        let _ = peer.close().await;
    }
    assert_eq!(server.session_count(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn the_legacy_endpoints_are_guarded_too() {
    let (server, _) = guarded_server().await;
    let addr = server.local_addr();
    let r = raw(addr, "GET", "/sse", &[("Accept", "text/event-stream")], "", SHORT).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let wrong = bearer("wrong");
    let r = raw(addr, "POST", "/message?sessionId=x", &[JSON, ("Authorization", &wrong)], "{}", SHORT).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some(r#"Bearer error="invalid_token""#));
    assert_eq!(server.session_count(), 0);

    // Our client on the legacy transport, with the token: GET /sse and POST /message both pass.
    let config = HttpClientConfig::new(server.legacy_url()).legacy(true).bearer_token(TOKEN);
    let (peer, init) = client_peer(HttpClientTransport::new(config).unwrap(), "2024-11-05").await;
    assert_eq!(init["protocolVersion"], "2024-11-05");
    let result = call(&peer, "echo", json!({"text": "legacy"})).await;
    assert_eq!(result["content"][0]["text"], "legacy");
    let _ = peer.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn routes_public_and_guarded_head_and_405() {
    let (server, metrics_calls) = guarded_server().await;
    let addr = server.local_addr();

    let r = raw(addr, "GET", "/healthz", &[], "", SHORT).await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok\n"), "a public route needs no token");
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));

    let r = raw(addr, "GET", "/metrics", &[], "", SHORT).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let wrong = bearer("wrong");
    let r = raw(addr, "GET", "/metrics", &[("Authorization", &wrong)], "", SHORT).await;
    assert_eq!(r.status, 401);
    assert_eq!(metrics_calls.load(Ordering::SeqCst), 0, "a refused request never reaches the handler");

    let right = bearer(TOKEN);
    let r = raw(addr, "GET", "/metrics", &[("Authorization", &right)], "", SHORT).await;
    assert_eq!((r.status, r.body.as_str()), (200, "up 1\n"));
    assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    assert_eq!(metrics_calls.load(Ordering::SeqCst), 1);

    // HEAD: the same head with the body's length, no body.
    let r = raw(addr, "HEAD", "/healthz", &[], "", SHORT).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("3"));
    assert_eq!(r.body, "");

    let r = raw(addr, "POST", "/healthz", &[JSON], "{}", SHORT).await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));

    // Unknown paths answer 404 as before, token or not.
    let r = raw(addr, "GET", "/nothing-here", &[], "", SHORT).await;
    assert_eq!(r.status, 404);
    server.shutdown().await;
}

#[tokio::test]
async fn the_host_check_applies_to_routes() {
    let (server, _) = guarded_server().await;
    let addr = server.local_addr();
    let (status, _) = raw_with_host(addr, "/healthz", &format!("localhost:{}", addr.port()), &[]).await;
    assert_eq!(status, 200);
    let (status, text) = raw_with_host(addr, "/healthz", "evil.example:80", &[]).await;
    assert_eq!(status, 403, "{text}");
    let right = bearer(TOKEN);
    let (status, _) = raw_with_host(addr, "/metrics", "evil.example", &[("Authorization", &right)]).await;
    assert_eq!(status, 403, "a token does not lift the Host check");
    // A foreign Host is refused before the token is looked at: 403, not 401.
    let (status, _) = raw_with_host(addr, "/mcp", "evil.example", &[]).await;
    assert_eq!(status, 403);
    server.shutdown().await;
}

#[tokio::test]
async fn routes_work_without_a_token_configured() {
    let config = HttpServerConfig::default()
        .route("/metrics", || async { RouteResponse::text(503, "down\n") })
        .route_public("/panics", || async { panic!("a broken handler") });
    let server = HttpServer::bind(config, serve_echo).await.unwrap();
    let r = raw(server.local_addr(), "GET", "/metrics", &[], "", SHORT).await;
    assert_eq!((r.status, r.body.as_str()), (503, "down\n"));
    // A panicking handler is a 500, and the server goes on.
    let r = raw(server.local_addr(), "GET", "/panics", &[], "", SHORT).await;
    assert_eq!(r.status, 500);
    let r = raw(server.local_addr(), "GET", "/metrics", &[], "", SHORT).await;
    assert_eq!(r.status, 503);
    // And the MCP endpoint needs none.
    let r = raw(server.local_addr(), "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT).await;
    assert_eq!(r.status, 200);
    server.shutdown().await;
}

#[tokio::test]
async fn bad_configurations_are_refused_at_bind_and_debug_hides_the_token() {
    let config = HttpServerConfig::default().bearer_token(Some(TOKEN.to_owned()));
    let shown = format!("{config:?}");
    assert!(!shown.contains(TOKEN) && !shown.contains("tok-"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
    let client = format!("{:?}", HttpClientConfig::new("http://127.0.0.1:1/mcp").bearer_token(TOKEN));
    assert!(!client.contains("tok-"), "{client}");

    for (config, why) in [
        (HttpServerConfig::default().bearer_token(Some(String::new())), "empty"),
        (HttpServerConfig::default().bearer_token(Some("two words".into())), "character"),
        (HttpServerConfig::default().route("/mcp", || async { RouteResponse::text(200, "") }), "MCP endpoint"),
        (HttpServerConfig::default().route_public("/sse", || async { RouteResponse::text(200, "") }), "MCP endpoint"),
        (HttpServerConfig::default().route("metrics", || async { RouteResponse::text(200, "") }), "start with /"),
    ] {
        let error = HttpServer::bind(config, serve_echo).await.expect_err(why);
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains(why), "{error}");
        assert!(!error.to_string().contains("two words"), "the refused token is not repeated: {error}");
    }
    // Turning the legacy transport off frees its paths for routes.
    let config = HttpServerConfig::default()
        .legacy_sse(false)
        .route_public("/sse", || async { RouteResponse::text(200, "a route\n") });
    let server = HttpServer::bind(config, serve_echo).await.unwrap();
    let r = raw(server.local_addr(), "GET", "/sse", &[], "", SHORT).await;
    assert_eq!(r.body, "a route\n");
    server.shutdown().await;
}

#[tokio::test]
async fn a_guarded_route_serves_the_bridge_metrics() {
    use mcpwire::gateway::metrics::bridge::{BridgeMetrics, CallOutcome};
    let metrics = Arc::new(BridgeMetrics::default());
    let served = metrics.clone();
    let config = HttpServerConfig::default().bearer_token(Some(TOKEN.to_owned())).route("/metrics", move || {
        let metrics = served.clone();
        async move { RouteResponse::new(200, mcpwire::gateway::metrics::CONTENT_TYPE, metrics.render()) }
    });
    let server = HttpServer::bind(config, serve_echo).await.unwrap();
    metrics.record_call("fs", "read", std::time::Duration::from_millis(2), CallOutcome::Ok);
    let right = bearer(TOKEN);
    let r = raw(server.local_addr(), "GET", "/metrics", &[("Authorization", &right)], "", SHORT).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    assert!(r.body.contains("\nmcp_bridge_calls_total{server=\"fs\",tool=\"read\"} 1\n"), "{}", r.body);
    assert!(r.body.contains("mcp_bridge_call_duration_seconds_bucket{server=\"fs\",tool=\"read\",le=\"0.0025\"} 1"));
    server.shutdown().await;
}

/// Runs the TypeScript SDK client driver (`tests/peers/ts_client.mjs`) against `args`, with
/// `token` in `MCP_BEARER_TOKEN`; returns its exit code and JSON lines.
async fn typescript_client(args: &[&str], token: Option<&str>) -> (i32, Vec<serde_json::Value>) {
    let mut command = tokio::process::Command::new(support::peer("MCP_NODE"));
    command
        .arg(support::repo_path("tests/peers/ts_client.mjs"))
        .args(args)
        .env("MCP_SCRIPT", r#"[{"call":"echo","args":{"text":"sdk through the token"}}]"#)
        .env_remove("MCP_BEARER_TOKEN")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    if let Some(token) = token {
        command.env("MCP_BEARER_TOKEN", token);
    }
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
        .await
        .expect("the driver finishes")
        .expect("the driver runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (output.status.code().unwrap_or(-1), lines)
}

#[tokio::test]
async fn the_typescript_sdk_client_passes_with_the_token_and_is_refused_without() {
    let (server, _) = guarded_server().await;
    let url = server.url();
    let (code, lines) = typescript_client(&["--url", &url], Some(TOKEN)).await;
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(lines[0]["serverInfo"]["name"], "mcpwire-http-test");
    assert_eq!(lines[2]["result"]["content"][0]["text"], "sdk through the token", "{lines:?}");

    let legacy = server.legacy_url();
    let (code, lines) = typescript_client(&["--sse", &legacy], Some(TOKEN)).await;
    assert_eq!(code, 0, "legacy SSE with the token: {lines:?}");
    assert_eq!(lines[2]["result"]["content"][0]["text"], "sdk through the token", "{lines:?}");

    // The SDK reports the HTTP status as the error's code, and our short body as its message.
    for (token, error) in [(None, "invalid_request"), (Some("not-the-token"), "invalid_token")] {
        let (code, lines) = typescript_client(&["--url", &url], token).await;
        assert_eq!(code, 1, "{lines:?}");
        assert_eq!(lines[0]["ok"], false);
        assert_eq!(lines[0]["error"]["code"], 401, "{lines:?}");
        let message = lines[0]["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(error), "{message}");
    }
    server.shutdown().await;
}
