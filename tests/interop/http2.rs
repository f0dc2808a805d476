//! HTTP/2 on the server's listener, beside HTTP/1.1 on the same port, against third-party
//! HTTP/2 clients: curl (`--http2-prior-knowledge`, h2c) opening a session and calling a tool
//! on `echo_server --http ADDR`, answered exactly as over HTTP/1.1; Node's `http2` module
//! running 100 concurrent calls with SSE answers over one connection; and our own client with
//! prior knowledge doing the same through a relay that counts its TCP connections, in the
//! handshake era and in 2026-07-28 (a POST per request, each a stream of the one connection).

use crate::examples::example_path;
use crate::support;

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::{Child, Command};

/// `echo_server --http 127.0.0.1:PORT` on a free port, killed on drop.
async fn echo_http() -> (Child, SocketAddr) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let child = Command::new(example_path("echo_server"))
        .args(["--http", &addr.to_string()])
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    waited.await.expect("echo_server listens");
    (child, addr)
}

/// One answer as curl saw it.
struct Answer {
    status_line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC answer in an SSE body (the data line of a message with an id).
    fn message(&self) -> Value {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| panic!("no answer in {:?}", self.body))
    }
}

/// POSTs `body` to the endpoint with curl, over `protocol` (`--http1.1` or
/// `--http2-prior-knowledge`).
async fn curl(protocol: &str, addr: SocketAddr, session: Option<&str>, body: &Value) -> Answer {
    let mut command = Command::new("curl");
    command.args(["-sS", "-i", protocol, "-H", "Content-Type: application/json"]);
    command.args(["-H", "Accept: application/json, text/event-stream"]);
    if let Some(id) = session {
        command.args(["-H", &format!("Mcp-Session-Id: {id}"), "-H", "MCP-Protocol-Version: 2025-11-25"]);
    }
    command.args(["--data-binary", &body.to_string(), &format!("http://{addr}/mcp")]);
    let output = tokio::time::timeout(Duration::from_secs(30), command.kill_on_drop(true).output())
        .await
        .expect("curl finished")
        .expect("curl runs");
    assert!(output.status.success(), "curl: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{text:?}"));
    let mut lines = head.lines();
    let status_line = lines.next().unwrap().trim().to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer { status_line, headers, body: body.to_owned() }
}

/// initialize, notifications/initialized and `echo` over one protocol: the two answers.
async fn session_over(protocol: &str, addr: SocketAddr) -> (Answer, Answer) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}});
    let initialized = curl(protocol, addr, None, &init).await;
    let id = initialized.header("mcp-session-id").unwrap_or_else(|| panic!("{:?}", initialized.headers)).to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = curl(protocol, addr, Some(&id), &note).await;
    let expected = if protocol == "--http1.1" { "HTTP/1.1 202 Accepted" } else { "HTTP/2 202" };
    assert_eq!(accepted.status_line, expected);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "over either protocol"}}});
    let called = curl(protocol, addr, Some(&id), &call).await;
    (initialized, called)
}

#[tokio::test]
async fn curl_with_http2_prior_knowledge_gets_what_http1_gets() {
    let (_server, addr) = echo_http().await;
    let (init1, call1) = session_over("--http1.1", addr).await;
    let (init2, call2) = session_over("--http2-prior-knowledge", addr).await;
    assert_eq!(init1.status_line, "HTTP/1.1 200 OK");
    assert_eq!(init2.status_line, "HTTP/2 200");
    assert_eq!(call2.status_line, "HTTP/2 200");
    assert_eq!(init2.header("content-type"), Some("text/event-stream"));
    assert_eq!(init2.message()["result"]["serverInfo"]["name"], "mcpwire-echo-server");
    // The same JSON, whichever protocol carried it.
    assert_eq!(init1.message(), init2.message());
    assert_eq!(
        call2.message(),
        json!({"jsonrpc": "2.0", "id": 2,
        "result": {"content": [{"type": "text", "text": "over either protocol"}]}})
    );
    assert_eq!(call1.message(), call2.message());
}

#[tokio::test]
async fn node_http2_runs_a_hundred_concurrent_calls_over_one_connection() {
    let (_server, addr) = echo_http().await;
    let script = support::repo_path("tests/peers/h2_client.mjs").display().to_string();
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(support::peer("MCP_NODE"))
            .args([script, format!("http://{addr}/mcp"), "100".into()])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the client finished")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("{stdout}"));
    assert_eq!(report["initStatus"], 200, "{report}");
    assert_eq!(report["protocol"], "h2c", "{report}");
    assert_eq!(report["session"], true, "{report}");
    assert_eq!(report["answered"], 100, "{report}");
    assert_eq!(report["sse"], 100, "{report}");
    // initialize, notifications/initialized and the 100 calls: 102 streams of one connection.
    assert_eq!(report["nextStreamId"], 2 * 102 + 1, "{report}");
    // The documented default, as the server announced it.
    assert_eq!(report["maxConcurrentStreams"], 256, "{report}");
}

#[tokio::test]
async fn an_http2_header_list_over_the_limit_is_refused_and_the_listener_serves_on() {
    let (_server, addr) = echo_http().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}});
    let with_header = |bytes: usize| {
        let mut command = Command::new("curl");
        command.args(["-sS", "-v", "-i", "--retry", "0", "--http2-prior-knowledge"]);
        command.args(["-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream"]);
        command.args(["-H", &format!("X-Big: {}", "x".repeat(bytes)), "--data-binary", &init.to_string()]);
        command.arg(format!("http://{addr}/mcp")).kill_on_drop(true).output()
    };
    // 70 KB of header against the 64 KiB default: the stream is refused.
    let refused = tokio::time::timeout(Duration::from_secs(30), with_header(70_000)).await.unwrap().unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("REFUSED_STREAM"));
    // 30 KB is under it: served.
    let served = tokio::time::timeout(Duration::from_secs(30), with_header(30_000)).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&served.stdout);
    assert!(text.starts_with("HTTP/2 200"), "{text}");
}

#[tokio::test]
async fn our_client_with_prior_knowledge_runs_a_hundred_concurrent_calls_over_one_connection() {
    use crate::http_support::{client_peer, counting_relay};
    use mcpwire::proto::jsonrpc::Body;
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
    use std::sync::atomic::Ordering;

    let (_server, addr) = echo_http().await;
    let (relay, accepted) = counting_relay(addr).await;
    let config = HttpClientConfig::new(format!("http://{relay}/mcp")).http2_prior_knowledge(true);
    let (peer, init) = client_peer(HttpClientTransport::new(config).unwrap(), "2025-11-25").await;
    assert_eq!(init["serverInfo"]["name"], "mcpwire-echo-server");
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..100 {
        let peer = peer.clone();
        calls.spawn(async move {
            let params = json!({"name": "echo", "arguments": {"text": format!("call {n}")}});
            let result: Value = peer
                .request("tools/call", Some(Body::typed(params)), Default::default())
                .await
                .unwrap()
                .decode()
                .unwrap();
            (n, result)
        });
    }
    let mut answered = 0;
    while let Some(joined) = calls.join_next().await {
        let (n, result) = joined.unwrap();
        assert_eq!(result, json!({"content": [{"type": "text", "text": format!("call {n}")}]}));
        answered += 1;
    }
    assert_eq!(answered, 100);
    peer.close().await.unwrap();
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "every request and stream on one h2c connection");
}

#[tokio::test]
async fn our_client_runs_2026_07_28_over_h2c_with_concurrent_calls_on_one_connection() {
    use crate::http_support::counting_relay;
    use mcpwire::client::{Client, ClientOptions};
    use mcpwire::proto::mcp_types::ContentBlock;
    use mcpwire::proto::version::ProtocolVersion;
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    let (_server, addr) = echo_http().await;
    let (relay, accepted) = counting_relay(addr).await;
    let config = HttpClientConfig::new(format!("http://{relay}/mcp")).http2_prior_knowledge(true);
    let client =
        Arc::new(Client::connect(HttpClientTransport::new(config).unwrap(), ClientOptions::default()).await.unwrap());
    // Each request a POST of its own, with its own metadata headers, as streams of one connection.
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..20 {
        let client = client.clone();
        calls.spawn(async move {
            let text = format!("stateless {n}");
            let arguments = json!({"text": text}).as_object().cloned();
            let result = client.call_tool("echo", arguments, Default::default()).await.unwrap();
            assert!(matches!(&result.content[..], [ContentBlock::Text(t)] if t.text == text), "{result:?}");
        });
    }
    while let Some(joined) = calls.join_next().await {
        joined.unwrap();
    }
    client.close().await.unwrap();
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "every 2026-07-28 POST on one h2c connection");
}
