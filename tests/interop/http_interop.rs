//! Interop over real loopback HTTP: our client transport against the reference
//! `server-everything` (Streamable HTTP and legacy SSE), and the official TypeScript and Python
//! SDK clients against our server. Peers come from `scripts/install-peers` (see tests/support).

use crate::http_support;
use crate::support;

use std::process::Stdio;
use std::time::Duration;

use http_support::*;
use mcpwire::peer::Peer;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use serde_json::{json, Value};
use tokio::process::Command;

async fn drive_everything<T: mcpwire::transport::Transport>(peer: &Peer<T>) {
    let tools: Value = peer.request("tools/list", None, Default::default()).await.unwrap().decode().unwrap();
    assert!(tools["tools"].as_array().unwrap().iter().any(|t| t["name"] == "echo"), "{tools}");
    let params = json!({"name": "echo", "arguments": {"message": "hello over http"}});
    let result: Value = peer
        .request("tools/call", Some(mcpwire::proto::jsonrpc::Body::typed(params)), Default::default())
        .await
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(result["content"][0]["text"], "Echo: hello over http", "{result}");
}

#[tokio::test]
async fn our_client_against_everything_streamable_http() {
    let server = support::everything_http("streamableHttp");
    let port = server.port;
    let transport = HttpClientTransport::new(HttpClientConfig::new(format!("http://127.0.0.1:{port}/mcp"))).unwrap();
    let (peer, init) = client_peer(transport, "2025-11-25").await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(peer.transport().session_id().is_some());
    assert_eq!(peer.transport().protocol_version().map(|v| v.as_str()), Some("2025-11-25"));
    assert!(!peer.transport().is_legacy());
    drive_everything(&peer).await;
    peer.close().await.unwrap();
}

#[tokio::test]
async fn our_client_against_everything_legacy_sse() {
    let server = support::everything_http("sse");
    let port = server.port;
    // Given the endpoint a Streamable HTTP client would use: POST initialize fails, the client
    // falls back to GET /sse and the endpoint event.
    let transport = HttpClientTransport::new(HttpClientConfig::new(format!("http://127.0.0.1:{port}/mcp"))).unwrap();
    let (peer, init) = client_peer(transport, "2025-11-25").await;
    assert_eq!(init["serverInfo"]["name"], "mcp-servers/everything");
    assert!(peer.transport().is_legacy());
    drive_everything(&peer).await;
    peer.close().await.unwrap();
}

async fn our_echo_server() -> HttpServer {
    HttpServer::bind(HttpServerConfig::default(), serve_echo).await.unwrap()
}

const SCRIPT: &str =
    r#"[{"call":"echo","args":{"text":"hi from the sdk"}},{"ping":true},{"call":"no_such_tool","args":{}}]"#;

/// Runs a driver, returns its JSON lines.
async fn driver(program: String, args: Vec<String>) -> Vec<Value> {
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(program).args(args).env("MCP_SCRIPT", SCRIPT).stdin(Stdio::null()).kill_on_drop(true).output(),
    )
    .await
    .expect("driver finished in time")
    .expect("driver ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "driver failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn check_script_output(lines: &[Value]) {
    assert_eq!(lines[0]["step"], "initialize", "{lines:?}");
    assert_eq!(lines[0]["ok"], true, "{lines:?}");
    assert_eq!(lines[0]["serverInfo"]["name"], "mcpwire-http-test");
    assert_eq!(lines[1]["step"], "tools/list");
    assert_eq!(lines[1]["result"]["tools"][0]["name"], "echo");
    assert_eq!(lines[2]["result"]["content"][0]["text"], "hi from the sdk", "{lines:?}");
    assert_eq!(lines[3]["step"], "ping");
    assert_eq!(lines[3]["ok"], true);
    assert_eq!(lines[4]["ok"], false);
    assert_eq!(lines[4]["error"]["code"], -32602);
}

fn driver_path(name: &str) -> String {
    support::repo_path(&format!("tests/peers/{name}")).display().to_string()
}

#[tokio::test]
async fn typescript_sdk_client_against_our_server_streamable_http() {
    let server = our_echo_server().await;
    let lines =
        driver(support::peer("MCP_NODE"), vec![driver_path("ts_client.mjs"), "--url".into(), server.url()]).await;
    check_script_output(&lines);
    server.shutdown().await;
}

#[tokio::test]
async fn typescript_sdk_client_against_our_server_legacy_sse() {
    let server = our_echo_server().await;
    let lines =
        driver(support::peer("MCP_NODE"), vec![driver_path("ts_client.mjs"), "--sse".into(), server.legacy_url()])
            .await;
    check_script_output(&lines);
    server.shutdown().await;
}

#[tokio::test]
async fn python_sdk_client_against_our_server_streamable_http() {
    let server = our_echo_server().await;
    let lines =
        driver(support::peer("MCP_PYTHON"), vec![driver_path("py_client.py"), "--url".into(), server.url()]).await;
    check_script_output(&lines);
    server.shutdown().await;
}
