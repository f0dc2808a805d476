//! The server layer behind stateless Streamable HTTP: every POST gets a transport of its own
//! that never saw `initialize`, so the server must not gate requests on a handshake; and what
//! the server sends about a request while handling it (progress) comes on that POST's answer,
//! the only stream there is.

use crate::http_support;

use crate::echo::echo_server;
use http_support::{raw, serve_echo_stateless, BOTH, JSON, SHORT};
use mcpwire::client::{Client, ClientOptions};
use mcpwire::proto::mcp_types::ContentBlock;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use serde_json::json;

#[tokio::test]
async fn echo_server_answers_over_stateless_http() {
    let server = echo_server();
    let config = HttpServerConfig::default().stateless(true);
    let http = server.serve_http(config).await.unwrap();
    let transport = HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap();
    let client = Client::connect(transport, ClientOptions::default()).await.unwrap();
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["add", "echo", "greet"]);
    let args = json!({"text": "stateless"}).as_object().cloned();
    let result = client.call_tool("echo", args, Default::default()).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "stateless"), "{result:?}");
    assert_eq!(http.session_count(), 0, "stateless mode keeps no sessions");
    client.close().await.unwrap();
    http.shutdown().await;
}

#[tokio::test]
async fn progress_comes_on_the_posts_answer_in_stateless_mode() {
    let server = HttpServer::bind(HttpServerConfig::default().stateless(true), serve_echo_stateless).await.unwrap();
    let addr = server.local_addr();
    // A handshake-era revision: a 2026-07-28 request would need its `_meta` envelope (see
    // tests/per_request_era.rs).
    let version = ("MCP-Protocol-Version", "2025-11-25");
    // `slow` sends three progress notifications, then its result: the answer is an SSE stream
    // with all four, without event ids (nothing can resume a stateless stream).
    let slow = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": "t"}}});
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, version], &slow.to_string(), SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("mcp-session-id"), None);
    let messages = r.sse_messages();
    assert_eq!(messages.len(), 4, "{:?}", r.body);
    for (n, progress) in messages[..3].iter().enumerate() {
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(progress["params"]["progressToken"], "t");
        assert_eq!(progress["params"]["progress"], n as u64 + 1);
    }
    assert_eq!(messages[3]["id"], 7);
    assert_eq!(messages[3]["result"]["content"][0]["text"], "slow done");
    assert!(r.sse_ids().is_empty(), "{:?}", r.body);
    // A request with nothing to report before its result is still answered with JSON.
    let echo = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "plain"}}});
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, version], &echo.to_string(), SHORT).await;
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    assert_eq!(r.json()["result"]["content"][0]["text"], "plain");
    assert_eq!(server.session_count(), 0);
    server.shutdown().await;
}
