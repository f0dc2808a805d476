//! The Streamable HTTP server at the wire: every status code the transport answers, the SSE
//! shape of a response stream, sessions, JSON-response and stateless modes, batches, the
//! legacy transport, and resumption. Raw HTTP/1.1 over loopback, so the exact bytes show.

use crate::http_support;

use std::time::Duration;

use http_support::*;
use mcpwire::transport::sse_http::server::{OriginCheck, ResponseMode};
use mcpwire::transport::sse_http::{HttpServer, HttpServerConfig};
use serde_json::json;

async fn echo_server(config: HttpServerConfig) -> HttpServer {
    HttpServer::bind(config, serve_echo).await.unwrap()
}

fn ping(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string()
}

#[tokio::test]
async fn initialize_gets_a_session_id_and_a_primed_sse_stream() {
    let server = echo_server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let id = r.header("mcp-session-id").unwrap();
    assert!(id.len() >= 32 && id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
    // Priming event first: an id, a retry hint and empty data; then the response; then the end.
    assert!(r.body.starts_with("id: 1_0\nretry: 1000\ndata: \n\n"), "{:?}", r.body);
    let messages = r.sse_messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(r.sse_ids(), ["1_0", "1_1"]);
    server.shutdown().await;
}

#[tokio::test]
async fn no_priming_event_before_2025_11_25() {
    let server = echo_server(HttpServerConfig::default()).await;
    let r = raw(server.local_addr(), "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-03-26"), SHORT).await;
    assert_eq!(r.status, 200);
    assert!(r.body.starts_with("id: 1_1\ndata: {"), "{:?}", r.body);
    server.shutdown().await;
}

#[tokio::test]
async fn post_status_codes() {
    let server = echo_server(HttpServerConfig::default().max_body_bytes(1024)).await;
    let addr = server.local_addr();
    let init = initialize_body("2025-11-25");

    // 406: Accept lacks text/event-stream.
    let r = raw(addr, "POST", "/mcp", &[("Accept", "application/json"), JSON], &init, SHORT).await;
    assert_eq!(r.status, 406);
    // 415: not JSON.
    let r = raw(addr, "POST", "/mcp", &[BOTH, ("Content-Type", "text/plain")], &init, SHORT).await;
    assert_eq!(r.status, 415);
    // 413: over the body cap.
    let big = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#, "y".repeat(2000));
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &big, SHORT).await;
    assert_eq!(r.status, 413);
    // 400 with a -32700 body: not JSON.
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], "{not json", SHORT).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32700);
    assert_eq!(r.header("content-type"), Some("application/json"));
    // 400: no session id on something other than initialize.
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &ping(1), SHORT).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32000);
    // 404: unknown session.
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Mcp-Session-Id", "nope")], &ping(1), SHORT).await;
    assert_eq!(r.status, 404);

    let id = raw_session(addr, "2025-11-25").await;
    let session = ("Mcp-Session-Id", id.as_str());
    // 400: unsupported protocol version header.
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, session, ("MCP-Protocol-Version", "1999-01-01")], &ping(2), SHORT)
        .await;
    assert_eq!(r.status, 400);
    // 200: a request with the right headers; the answer is on an SSE stream.
    let v = ("MCP-Protocol-Version", "2025-11-25");
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, session, v], &ping(3), SHORT).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.sse_messages(), [json!({"jsonrpc": "2.0", "id": 3, "result": {}})]);
    // No header at all: assumed 2025-03-26, accepted.
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, session], &ping(4), SHORT).await;
    assert_eq!(r.status, 200);
    // 202: notifications and responses only.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}).to_string();
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, session, v], &note, SHORT).await;
    assert_eq!((r.status, r.body.as_str()), (202, ""));
    // 405: PUT.
    let r = raw(addr, "PUT", "/mcp", &[session], "", SHORT).await;
    assert_eq!(r.status, 405);
    assert!(r.header("allow").unwrap().contains("POST"));
    // DELETE ends the session: 200, then 404 for it.
    let r = raw(addr, "DELETE", "/mcp", &[session, v], "", SHORT).await;
    assert_eq!(r.status, 200);
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, session, v], &ping(5), SHORT).await;
    assert_eq!(r.status, 404);
    let r = raw(addr, "DELETE", "/mcp", &[session], "", SHORT).await;
    assert_eq!(r.status, 404);
    // 404 for other paths.
    let r = raw(addr, "POST", "/other", &[BOTH, JSON], &init, SHORT).await;
    assert_eq!(r.status, 404);
    server.shutdown().await;
}

#[tokio::test]
async fn origin_and_host_checks() {
    let server = echo_server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    let init = initialize_body("2025-11-25");
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Origin", "https://evil.example")], &init, SHORT).await;
    assert_eq!(r.status, 403);
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Origin", "http://localhost:5173")], &init, SHORT).await;
    assert_eq!(r.status, 200);
    // DNS rebinding: a foreign Host name pointing at our loopback address.
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{init}",
        init.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    server.shutdown().await;

    let server =
        echo_server(HttpServerConfig::default().origins(OriginCheck::Only(vec!["https://app.example".into()]))).await;
    let addr = server.local_addr();
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Origin", "http://localhost")], &init, SHORT).await;
    assert_eq!(r.status, 403);
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Origin", "https://app.example")], &init, SHORT).await;
    assert_eq!(r.status, 200);
    server.shutdown().await;
}

#[tokio::test]
async fn get_stream_status_codes() {
    let server = echo_server(HttpServerConfig::default().standalone_get(false)).await;
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    let r = raw(addr, "GET", "/mcp", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id)], "", SHORT).await;
    assert_eq!(r.status, 405);
    server.shutdown().await;

    let server = echo_server(HttpServerConfig::default().keep_alive(Some(Duration::from_millis(50)))).await;
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    let sse = ("Accept", "text/event-stream");
    let r = raw(addr, "GET", "/mcp", &[("Accept", "application/json"), ("Mcp-Session-Id", &id)], "", SHORT).await;
    assert_eq!(r.status, 406);
    let r = raw(addr, "GET", "/mcp", &[sse], "", SHORT).await;
    assert_eq!(r.status, 400);
    let r = raw(addr, "GET", "/mcp", &[sse, ("Mcp-Session-Id", "unknown")], "", SHORT).await;
    assert_eq!(r.status, 404);
    let r =
        raw(addr, "GET", "/mcp", &[sse, ("Mcp-Session-Id", &id), ("MCP-Protocol-Version", "bogus")], "", SHORT).await;
    assert_eq!(r.status, 400);
    // The open stream: keep-alive comments while nothing happens.
    let r = raw(addr, "GET", "/mcp", &[sse, ("Mcp-Session-Id", &id)], "", Duration::from_millis(300)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.body.starts_with(": keep-alive\n"), "{:?}", r.body);
    server.shutdown().await;
}

#[tokio::test]
async fn json_response_mode_and_batches_at_2025_03_26() {
    let server = echo_server(HttpServerConfig::default().response_mode(ResponseMode::Json)).await;
    let addr = server.local_addr();
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-03-26"), SHORT).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-03-26");
    let id = r.header("mcp-session-id").unwrap().to_owned();
    let session = ("Mcp-Session-Id", id.as_str());
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(raw(addr, "POST", "/mcp", &[BOTH, JSON, session], &note, SHORT).await.status, 202);
    let batch = format!("[{},{}]", ping(1), ping(2));
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, session], &batch, SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    let mut answers = r.json().as_array().unwrap().clone();
    answers.sort_by_key(|a| a["id"].as_u64());
    assert_eq!(
        answers,
        [json!({"jsonrpc": "2.0", "id": 1, "result": {}}), json!({"jsonrpc": "2.0", "id": 2, "result": {}})]
    );
    // Two requests with one id: refused whole, naming the id; the session serves the next batch.
    let twice = format!("[{},{}]", ping(3), ping(3));
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, session], &twice, SHORT).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32600);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("carry the id 3"), "{r:?}");
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, session], &batch, SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    server.shutdown().await;

    // At 2025-11-25 a batch is refused.
    let server = echo_server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    let v = ("MCP-Protocol-Version", "2025-11-25");
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Mcp-Session-Id", &id), v], &batch, SHORT).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32600);
    server.shutdown().await;
}

#[tokio::test]
async fn stateless_mode_answers_each_post_with_json_and_no_session() {
    let server = HttpServer::bind(HttpServerConfig::default().stateless(true), serve_echo_stateless).await.unwrap();
    let addr = server.local_addr();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("MCP-Protocol-Version", "2025-11-25")], &call.to_string(), SHORT)
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("mcp-session-id"), None);
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
    let r = raw(addr, "GET", "/mcp", &[("Accept", "text/event-stream")], "", SHORT).await;
    assert_eq!(r.status, 405);
    assert_eq!(server.session_count(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn idle_sessions_expire() {
    let server = echo_server(HttpServerConfig::default().session_idle_timeout(Duration::from_millis(100))).await;
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    assert_eq!(server.session_count(), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(server.session_count(), 0);
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Mcp-Session-Id", &id)], &ping(1), SHORT).await;
    assert_eq!(r.status, 404);
    server.shutdown().await;
}

#[tokio::test]
async fn delete_ends_the_applications_transport() {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let done_tx = std::sync::Mutex::new(Some(done_tx));
    let server = HttpServer::bind(HttpServerConfig::default(), move |t| {
        let done = done_tx.lock().unwrap().take();
        async move {
            serve_echo(t).await;
            if let Some(done) = done {
                let _ = done.send(());
            }
        }
    })
    .await
    .unwrap();
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    assert_eq!(raw(addr, "DELETE", "/mcp", &[("Mcp-Session-Id", &id)], "", SHORT).await.status, 200);
    tokio::time::timeout(SHORT, done_rx).await.expect("the application saw the end").unwrap();
    server.shutdown().await;
}

/// A server that, as soon as the client says `notifications/initialized`, sends a log
/// notification and a `roots/list` request: before the client can have opened its GET stream.
async fn eager_server(transport: mcpwire::transport::sse_http::ServerTransport) {
    use mcpwire::proto::jsonrpc::Message;
    use mcpwire::transport::Transport;
    while let Ok(Some(message)) = transport.recv().await {
        let text = String::from_utf8(message.to_vec()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        match value["method"].as_str() {
            Some("initialize") => {
                let result = json!({"jsonrpc": "2.0", "id": value["id"], "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": {"name": "eager", "version": "1"}}});
                transport.send(Message::from_str(&result.to_string()).unwrap()).await.unwrap();
            }
            Some("notifications/initialized") => {
                let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "before any GET"}});
                let roots = json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"});
                for m in [log, roots] {
                    transport.send(Message::from_str(&m.to_string()).unwrap()).await.unwrap();
                }
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn messages_sent_before_the_get_stream_opens_are_delivered_when_it_does() {
    let server = HttpServer::bind(HttpServerConfig::default(), eager_server).await.unwrap();
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    // Both messages went out with no stream open (nothing was in flight at all).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let headers = [("Accept", "text/event-stream"), ("Mcp-Session-Id", id.as_str())];
    let r = raw(addr, "GET", "/mcp", &headers, "", Duration::from_millis(500)).await;
    assert_eq!(r.status, 200);
    let messages = r.sse_messages();
    assert_eq!(messages.len(), 2, "{:?}", r.body);
    assert_eq!(messages[0]["params"]["data"], "before any GET");
    assert_eq!(messages[1]["method"], "roots/list");
    // Each with its event id, so a resumption goes on from there; and sent once only: the next
    // GET gets nothing new.
    assert_eq!(r.sse_ids().len(), 2, "{:?}", r.body);
    let r = raw(addr, "GET", "/mcp", &headers, "", Duration::from_millis(300)).await;
    assert_eq!(r.status, 200);
    assert!(r.sse_messages().is_empty(), "{:?}", r.body);
    server.shutdown().await;
}

/// A server that, once the client says `notifications/initialized`, sends `count` log
/// notifications numbered from 0, before the client can have opened its GET stream.
async fn flooding_server(transport: mcpwire::transport::sse_http::ServerTransport, count: usize) {
    use mcpwire::proto::jsonrpc::Message;
    use mcpwire::transport::Transport;
    while let Ok(Some(message)) = transport.recv().await {
        let value: serde_json::Value = serde_json::from_slice(&message.to_vec()).unwrap();
        match value["method"].as_str() {
            Some("initialize") => {
                let result = json!({"jsonrpc": "2.0", "id": value["id"], "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": {"name": "flood", "version": "1"}}});
                transport.send(Message::from_str(&result.to_string()).unwrap()).await.unwrap();
            }
            Some("notifications/initialized") => {
                for n in 0..count {
                    let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": n}});
                    transport.send(Message::from_str(&log.to_string()).unwrap()).await.unwrap();
                }
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn messages_past_the_queue_for_a_get_not_open_are_counted_and_the_newest_kept() {
    use mcpwire::transport::sse_http::server::QUEUED_FOR_GET;
    let over = 10;
    let server = HttpServer::bind(HttpServerConfig::default(), move |t| flooding_server(t, QUEUED_FOR_GET + over))
        .await
        .unwrap();
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    let counted = async {
        while server.standalone_messages_dropped() < over as u64 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), counted).await.expect("the drops are counted");
    assert_eq!(server.standalone_messages_dropped(), over as u64);
    let headers = [("Accept", "text/event-stream"), ("Mcp-Session-Id", id.as_str())];
    let r = raw(addr, "GET", "/mcp", &headers, "", Duration::from_secs(2)).await;
    assert_eq!(r.status, 200);
    let data: Vec<serde_json::Value> = r.sse_messages().iter().map(|m| m["params"]["data"].clone()).collect();
    let kept: Vec<serde_json::Value> = (over..QUEUED_FOR_GET + over).map(|n| json!(n)).collect();
    assert_eq!(data, kept, "the oldest {over} dropped, the newest {QUEUED_FOR_GET} delivered in order");
    server.shutdown().await;
}

/// An event store that counts the bytes it holds.
#[derive(Default)]
struct CountingStore {
    inner: std::sync::Mutex<std::collections::HashMap<String, Vec<mcpwire::transport::sse_http::StoredEvent>>>,
}

impl CountingStore {
    fn bytes(&self) -> usize {
        self.inner.lock().unwrap().values().flatten().map(|e| e.data.len()).sum()
    }
}

impl mcpwire::transport::sse_http::EventStore for CountingStore {
    fn append(&self, stream: &str, event: mcpwire::transport::sse_http::StoredEvent) {
        self.inner.lock().unwrap().entry(stream.to_owned()).or_default().push(event);
    }
    fn replay_after(&self, stream: &str, seq: u64) -> Vec<mcpwire::transport::sse_http::StoredEvent> {
        let streams = self.inner.lock().unwrap();
        streams.get(stream).map_or_else(Vec::new, |events| events.iter().filter(|e| e.seq > seq).cloned().collect())
    }
    fn remove(&self, stream: &str) {
        self.inner.lock().unwrap().remove(stream);
    }
}

#[tokio::test]
async fn answers_kept_for_resumption_are_bounded_in_bytes_per_session() {
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
    let store = std::sync::Arc::new(CountingStore::default());
    let server = echo_server(HttpServerConfig::default().event_store(store.clone())).await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(server.url())).unwrap();
    let (peer, _) = client_peer(transport, "2025-11-25").await;
    let text = "x".repeat(64 * 1024);
    for _ in 0..40 {
        let result = call(&peer, "echo", json!({ "text": text })).await;
        assert_eq!(result["content"][0]["text"].as_str().map(str::len), Some(text.len()));
    }
    // 40 answers of 64 KiB were stored as they went out; about 1 MiB of them is kept.
    let kept = store.bytes();
    assert!(kept <= (1 << 20) + 2 * 70 * 1024, "{kept} bytes kept for resumption");
    assert!(kept >= 512 * 1024, "{kept} bytes: recent answers must stay resumable");
    peer.close().await.unwrap();
    server.shutdown().await;
}

/// An application that answers `initialize` at once and each `ping` only when the test says:
/// it reports each ping it holds on `held`, and answers one for each `()` on `release`.
async fn held_pings(
    transport: mcpwire::transport::sse_http::ServerTransport,
    held: tokio::sync::mpsc::UnboundedSender<()>,
    release: std::sync::Arc<tokio::sync::Semaphore>,
) {
    use mcpwire::proto::jsonrpc::Message;
    use mcpwire::transport::Transport;
    while let Ok(Some(message)) = transport.recv().await {
        let value: serde_json::Value = serde_json::from_slice(&message.to_vec()).unwrap();
        let result = match value["method"].as_str() {
            Some("initialize") => json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "held", "version": "1"}}),
            Some("ping") => {
                held.send(()).unwrap();
                release.acquire().await.unwrap().forget();
                json!({})
            }
            _ => continue,
        };
        let answer = json!({"jsonrpc": "2.0", "id": value["id"], "result": result});
        transport.send(Message::from_str(&answer.to_string()).unwrap()).await.unwrap();
    }
}

/// A server of [`held_pings`] with `config`, a session on it, and a raw connection that has
/// posted one `ping` which the application now holds.
async fn posted_held_ping(
    config: HttpServerConfig,
) -> (HttpServer, tokio::net::TcpStream, std::sync::Arc<tokio::sync::Semaphore>) {
    let (server, session, mut held, release) = held_pings_server(config).await;
    let tcp = post_held_ping(server.local_addr(), &session, 7, &mut held).await;
    (server, tcp, release)
}

/// A server of [`held_pings`] with `config` and a session on it; the receiver tells when the
/// application holds a ping, the semaphore releases one.
async fn held_pings_server(
    config: HttpServerConfig,
) -> (HttpServer, String, tokio::sync::mpsc::UnboundedReceiver<()>, std::sync::Arc<tokio::sync::Semaphore>) {
    let (held_tx, held) = tokio::sync::mpsc::unbounded_channel();
    let release = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let app_release = release.clone();
    let server = HttpServer::bind(config, move |t| held_pings(t, held_tx.clone(), app_release.clone())).await.unwrap();
    let session = raw_session(server.local_addr(), "2025-11-25").await;
    (server, session, held, release)
}

/// Posts `ping` `id` on a new raw connection of `session`; returns once the application
/// holds it.
async fn post_held_ping(
    addr: std::net::SocketAddr,
    session: &str,
    id: u64,
    held: &mut tokio::sync::mpsc::UnboundedReceiver<()>,
) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let body = ping(id);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n{body}",
        body.len()
    );
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    tokio::time::timeout(SHORT, held.recv()).await.expect("the application got the ping").unwrap();
    tcp
}

#[tokio::test]
async fn an_answer_within_the_first_event_hold_goes_out_with_the_head_in_one_write() {
    use tokio::io::AsyncReadExt;
    let config = HttpServerConfig::default().first_event_hold(Duration::from_secs(3600));
    let (server, mut tcp, release) = posted_held_ping(config).await;
    // Nothing is written while the application holds the request inside the hold.
    let mut first = vec![0u8; 64 * 1024];
    let early = tokio::time::timeout(Duration::from_millis(300), tcp.read(&mut first)).await;
    assert!(early.is_err(), "bytes before the answer: {early:?}");
    release.add_permits(1);
    let n = tokio::time::timeout(SHORT, tcp.read(&mut first)).await.expect("an answer").unwrap();
    let text = String::from_utf8_lossy(&first[..n]).into_owned();
    // One write: the head, the priming event, the answer and the stream's end, read at once.
    assert!(text.starts_with("HTTP/1.1 200"), "{text:?}");
    let body = text.split_once("\r\n\r\n").unwrap().1;
    assert!(body.contains("retry: 1000"), "{text:?}");
    assert!(body.contains(r#""id":7"#), "{text:?}");
    assert!(body.ends_with("0\r\n\r\n"), "{text:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn without_a_first_event_hold_the_head_and_priming_event_go_out_before_the_answer() {
    let config = HttpServerConfig::default().first_event_hold(Duration::ZERO);
    let (server, tcp, release) = posted_held_ping(config).await;
    let (head, tcp) = read_until(tcp, "data: \n\n").await;
    assert!(head.starts_with("HTTP/1.1 200") && !head.contains(r#""id":7"#), "{head:?}");
    release.add_permits(1);
    let (rest, _) = read_until(tcp, "0\r\n\r\n").await;
    assert!(rest.contains(r#""id":7"#), "{rest:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn past_the_first_event_hold_the_stream_opens_on_its_own() {
    // The application answers only after the head has come: the hold must end by itself.
    let config = HttpServerConfig::default().first_event_hold(Duration::from_millis(20));
    let (server, tcp, release) = posted_held_ping(config).await;
    let (head, tcp) = read_until(tcp, "data: \n\n").await;
    assert!(head.contains("id: ") && !head.contains(r#""id":7"#), "{head:?}");
    release.add_permits(1);
    let (rest, _) = read_until(tcp, "0\r\n\r\n").await;
    assert!(rest.contains(r#""id":7"#), "{rest:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_sessions_later_posts_are_held_again_and_released_again() {
    // The hold's timer is kept by the session from one POST to the next: each later POST must
    // still be held for the whole hold, and still be released when it ends.
    use tokio::io::AsyncReadExt;
    let config = HttpServerConfig::default().first_event_hold(Duration::from_secs(3600));
    let (server, session, mut held, release) = held_pings_server(config).await;
    for id in [7, 8] {
        let mut tcp = post_held_ping(server.local_addr(), &session, id, &mut held).await;
        let mut first = vec![0u8; 64 * 1024];
        let early = tokio::time::timeout(Duration::from_millis(300), tcp.read(&mut first)).await;
        assert!(early.is_err(), "ping {id}: bytes before the answer: {early:?}");
        release.add_permits(1);
        let n = tokio::time::timeout(SHORT, tcp.read(&mut first)).await.expect("an answer").unwrap();
        let text = String::from_utf8_lossy(&first[..n]).into_owned();
        assert!(text.starts_with("HTTP/1.1 200") && text.ends_with("0\r\n\r\n"), "ping {id}: {text:?}");
        assert!(text.contains(&format!(r#""id":{id}"#)), "ping {id}: {text:?}");
    }
    server.shutdown().await;

    let config = HttpServerConfig::default().first_event_hold(Duration::from_millis(20));
    let (server, session, mut held, release) = held_pings_server(config).await;
    for id in [7, 8, 9] {
        let tcp = post_held_ping(server.local_addr(), &session, id, &mut held).await;
        let (head, tcp) = read_until(tcp, "data: \n\n").await;
        assert!(head.contains("id: ") && !head.contains(r#""id":"#), "ping {id}: {head:?}");
        release.add_permits(1);
        let (rest, _) = read_until(tcp, "0\r\n\r\n").await;
        assert!(rest.contains(&format!(r#""id":{id}"#)), "ping {id}: {rest:?}");
    }
    server.shutdown().await;
}

/// Reads from `tcp` until what came holds `marker`; gives what came and the stream.
async fn read_until(mut tcp: tokio::net::TcpStream, marker: &str) -> (String, tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    while !String::from_utf8_lossy(&got).contains(marker) {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(SHORT, tcp.read(&mut chunk)).await.expect("more bytes").unwrap();
        assert!(n > 0, "the stream ended before {marker:?}: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&chunk[..n]);
    }
    (String::from_utf8_lossy(&got).into_owned(), tcp)
}

/// The headers of a request in session `id` at 2025-11-25.
fn in_session(id: &str) -> [(&str, &str); 4] {
    [BOTH, JSON, ("Mcp-Session-Id", id), ("MCP-Protocol-Version", "2025-11-25")]
}

#[tokio::test]
async fn auto_mode_answers_a_call_answered_within_the_hold_in_one_json_body() {
    // A hold far longer than the test: the answer comes within it, whatever the machine's speed.
    let store = std::sync::Arc::new(CountingStore::default());
    let config = HttpServerConfig::default()
        .response_mode(ResponseMode::Auto)
        .first_event_hold(Duration::from_secs(30))
        .event_store(store.clone());
    let server = echo_server(config).await;
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let r = raw(addr, "POST", "/mcp", &in_session(&id), &call.to_string(), SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    assert_eq!(r.header("mcp-session-id"), Some(id.as_str()));
    assert_eq!(r.json()["id"], 3, "{r:?}");
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi", "{r:?}");
    // Nothing was kept to resume: not the initialize answer (stream 1), not the call's (2).
    assert_eq!(store.bytes(), 0);
    // A GET naming the event id that call's stream would have started with: the stream is
    // known and over, with nothing stored, so it ends at once with no event.
    let resume = [("Accept", "text/event-stream"), ("Mcp-Session-Id", id.as_str()), ("Last-Event-ID", "2_0")];
    let r = raw(addr, "GET", "/mcp", &resume, "", SHORT).await;
    assert_eq!((r.status, r.header("content-type")), (200, Some("text/event-stream")), "{r:?}");
    assert_eq!(r.body, "", "nothing to replay");
    // A batch (2025-03-26) keeps its SSE stream.
    let old = raw_session(addr, "2025-03-26").await;
    let headers = [BOTH, JSON, ("Mcp-Session-Id", old.as_str()), ("MCP-Protocol-Version", "2025-03-26")];
    let batch = format!("[{},{}]", ping(4), ping(5));
    let r = raw(addr, "POST", "/mcp", &headers, &batch, SHORT).await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"), "{r:?}");
    assert_eq!(r.sse_messages().len(), 2, "{r:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn auto_mode_streams_a_call_that_reports_progress_first_and_resumes_it() {
    let config =
        HttpServerConfig::default().response_mode(ResponseMode::Auto).first_event_hold(Duration::from_secs(30));
    let server = echo_server(config).await;
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    let slow = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": "p"}}});
    let r = raw(addr, "POST", "/mcp", &in_session(&id), &slow.to_string(), SHORT).await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"), "{r:?}");
    assert!(r.body.starts_with("id: 2_0\nretry: 1000\ndata: \n\n"), "the priming event first: {:?}", r.body);
    assert_eq!(r.sse_ids(), ["2_0", "2_1", "2_2", "2_3", "2_4"]);
    let messages = r.sse_messages();
    let progress: Vec<u64> = messages.iter().filter_map(|m| m["params"]["progress"].as_u64()).collect();
    assert_eq!(progress, [1, 2, 3]);
    assert_eq!(messages.last().unwrap()["result"]["content"][0]["text"], "slow done");
    // Resumable as any stream: what came after the first progress notification, from the store.
    let resume = [("Accept", "text/event-stream"), ("Mcp-Session-Id", id.as_str()), ("Last-Event-ID", "2_1")];
    let rest = raw(addr, "GET", "/mcp", &resume, "", SHORT).await;
    assert_eq!(rest.sse_ids(), ["2_2", "2_3", "2_4"], "{rest:?}");
    assert_eq!(rest.sse_messages().last().unwrap()["result"]["content"][0]["text"], "slow done");
    server.shutdown().await;
}

#[tokio::test]
async fn auto_mode_streams_an_answer_that_comes_after_the_hold_and_stores_it() {
    // The application answers only once the stream's head has come: the hold ended first.
    let config =
        HttpServerConfig::default().response_mode(ResponseMode::Auto).first_event_hold(Duration::from_millis(20));
    let (server, session, mut held, release) = held_pings_server(config).await;
    let addr = server.local_addr();
    let tcp = post_held_ping(addr, &session, 7, &mut held).await;
    let (head, tcp) = read_until(tcp, "data: \n\n").await;
    assert!(head.contains("content-type: text/event-stream"), "{head:?}");
    assert!(head.contains("id: 2_0\nretry: 1000\n") && !head.contains(r#""id":7"#), "{head:?}");
    release.add_permits(1);
    let (rest, _) = read_until(tcp, "0\r\n\r\n").await;
    assert!(rest.contains("id: 2_1\ndata: ") && rest.contains(r#""id":7"#), "{rest:?}");
    // The response was stored: a resumption from the priming event replays it.
    let resume = [("Accept", "text/event-stream"), ("Mcp-Session-Id", session.as_str()), ("Last-Event-ID", "2_0")];
    let replay = raw(addr, "GET", "/mcp", &resume, "", SHORT).await;
    assert_eq!(replay.sse_ids(), ["2_1"], "{replay:?}");
    assert_eq!(replay.sse_messages()[0]["id"], 7, "{replay:?}");
    server.shutdown().await;
}
