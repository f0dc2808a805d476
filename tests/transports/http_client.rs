//! Our HTTP client transport against our HTTP server over loopback: SSE and JSON replies, the
//! session and version headers, session expiry surfacing as a distinct error, resumption of a
//! dropped stream (no event lost or duplicated), the legacy HTTP+SSE transport both ways,
//! graceful shutdown, and (against a scripted server) answers that come in pieces or over the
//! event cap, and `tools/call` results decoded typed only where they answer the request.

use crate::http_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_support::*;
use mcpwire::peer::RequestError;
use mcpwire::proto::jsonrpc::Body;
use mcpwire::transport::sse_http::server::ResponseMode;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use mcpwire::transport::TransportError;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn echo_server(config: HttpServerConfig) -> HttpServer {
    HttpServer::bind(config, serve_echo).await.unwrap()
}

fn client(url: String) -> HttpClientTransport {
    HttpClientTransport::new(HttpClientConfig::new(url)).unwrap()
}

#[tokio::test]
async fn round_trip_over_sse_and_json_replies() {
    for mode in [ResponseMode::Sse, ResponseMode::Json, ResponseMode::Auto] {
        let server = echo_server(HttpServerConfig::default().response_mode(mode)).await;
        let (peer, init) = client_peer(client(server.url()), "2025-11-25").await;
        assert_eq!(init["protocolVersion"], "2025-11-25");
        assert_eq!(peer.transport().session_id().map(|s| s.len()), Some(32));
        let tools: Value = peer.request("tools/list", None, Default::default()).await.unwrap().decode().unwrap();
        assert_eq!(tools["tools"][0]["name"], "echo");
        let result = call(&peer, "echo", json!({"text": "hello"})).await;
        assert_eq!(result["content"][0]["text"], "hello", "{mode:?}");
        // A JSON-RPC error travels like any response.
        let error = peer.request("nope", None, Default::default()).await.unwrap_err();
        assert!(matches!(error, RequestError::Rpc(e) if e.code.0 == -32601));
        assert_eq!(server.session_count(), 1);
        peer.close().await.unwrap();
        // close sent DELETE: the session is gone.
        assert_eq!(server.session_count(), 0);
        server.shutdown().await;
    }
}

#[tokio::test]
async fn the_negotiated_version_is_sent_and_an_older_one_is_accepted() {
    let server = echo_server(HttpServerConfig::default()).await;
    let (peer, init) = client_peer(client(server.url()), "2025-03-26").await;
    assert_eq!(init["protocolVersion"], "2025-03-26");
    assert_eq!(peer.transport().protocol_version().map(|v| v.as_str()), Some("2025-03-26"));
    assert_eq!(call(&peer, "echo", json!({"text": "x"})).await["content"][0]["text"], "x");
    peer.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn an_expired_session_is_a_distinct_error_and_the_transport_can_start_over() {
    let server = echo_server(HttpServerConfig::default().session_idle_timeout(Duration::from_millis(100))).await;
    let transport = Arc::new(client(server.url()));
    // Drive the transport by hand to see the exact error.
    use mcpwire::proto::jsonrpc::{Message, Request};
    use mcpwire::transport::Transport;
    let init = Request::new(
        0,
        "initialize",
        &json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}),
    )
    .unwrap();
    transport.send(Message::Request(init.clone())).await.unwrap();
    assert!(matches!(transport.recv().await.unwrap(), Some(Message::Response(_))));
    let first = transport.session_id().unwrap();
    // The GET stream would keep the session alive: none opened (no initialized sent).
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(server.session_count(), 0);
    let ping = Request::new(1, "ping", &json!({})).unwrap();
    let error = transport.send(Message::Request(ping)).await.unwrap_err();
    assert!(error.is_session_expired(), "{error}");
    assert!(matches!(error, TransportError::SessionExpired));
    assert_eq!(transport.session_id(), None);
    // Re-initialize on the same transport: a new session.
    transport.send(Message::Request(init)).await.unwrap();
    assert!(matches!(transport.recv().await.unwrap(), Some(Message::Response(_))));
    assert_ne!(transport.session_id().unwrap(), first);
    server.shutdown().await;
}

#[tokio::test]
async fn server_replays_a_dropped_post_stream_after_last_event_id() {
    let server = echo_server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    let id = raw_session(addr, "2025-11-25").await;
    let headers = [BOTH, JSON, ("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let slow = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": "p"}}});
    // Read the stream for 150 ms (priming + first progress), then drop the connection.
    let first = raw(addr, "POST", "/mcp", &headers, &slow.to_string(), Duration::from_millis(150)).await;
    let first_ids = first.sse_ids();
    assert_eq!(first_ids, ["2_0", "2_1"], "{:?}", first.body);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let resume = [("Accept", "text/event-stream"), ("Mcp-Session-Id", id.as_str()), ("Last-Event-ID", "2_1")];
    let rest = raw(addr, "GET", "/mcp", &resume, "", SHORT).await;
    assert_eq!(rest.status, 200);
    assert_eq!(rest.sse_ids(), ["2_2", "2_3", "2_4"], "only that stream's later events");
    let messages: Vec<Value> = first.sse_messages().into_iter().chain(rest.sse_messages()).collect();
    let progress: Vec<u64> = messages.iter().filter_map(|m| m["params"]["progress"].as_u64()).collect();
    assert_eq!(progress, [1, 2, 3]);
    assert_eq!(messages.last().unwrap()["result"]["content"][0]["text"], "slow done");
    server.shutdown().await;
}

/// A proxy that forwards connections to `upstream`, but cuts the one carrying a `slow` tool
/// call right after the first progress notification went through.
async fn cutting_proxy(upstream: std::net::SocketAddr) -> (std::net::SocketAddr, Arc<Mutex<u32>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cuts = Arc::new(Mutex::new(0));
    let cuts_out = cuts.clone();
    tokio::spawn(async move {
        loop {
            let (down, _) = listener.accept().await.unwrap();
            let up = TcpStream::connect(upstream).await.unwrap();
            let cuts = cuts.clone();
            tokio::spawn(async move {
                // The client reuses connections, so any request on this connection may be the
                // slow one: watch everything going up, cut the first response stream carrying
                // progress after a slow request went by.
                let slow_seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let (mut down_r, mut down_w) = down.into_split();
                let (mut up_r, mut up_w) = up.into_split();
                let flag = slow_seen.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = down_r.read(&mut buf).await {
                        if n == 0 || up_w.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                        if String::from_utf8_lossy(&buf[..n]).contains("\"slow\"") {
                            flag.store(true, std::sync::atomic::Ordering::SeqCst);
                        }
                    }
                });
                let mut seen = Vec::new();
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n) = up_r.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    if slow_seen.load(std::sync::atomic::Ordering::SeqCst) {
                        seen.extend_from_slice(&buf[..n]);
                    }
                    if down_w.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    if String::from_utf8_lossy(&seen).contains("notifications/progress") {
                        *cuts.lock().unwrap() += 1;
                        break;
                    }
                }
            });
        }
    });
    (addr, cuts_out)
}

#[tokio::test]
async fn client_resumes_a_dropped_stream_without_losing_or_repeating_events() {
    let mut config = HttpServerConfig::default();
    config.retry_ms = 50;
    let server = echo_server(config).await;
    let (proxy, cuts) = cutting_proxy(server.local_addr()).await;
    let (peer, _) = client_peer(client(format!("http://{proxy}/mcp")), "2025-11-25").await;
    let (seen, text) = slow_call(&peer, json!("tok")).await;
    assert_eq!(text, "slow done");
    assert_eq!(*cuts.lock().unwrap(), 1, "the stream was cut once");
    assert_eq!(seen, [1, 2, 3], "every progress event once, in order");
    peer.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn legacy_transport_between_our_client_and_server() {
    let server = echo_server(HttpServerConfig::default()).await;
    // Explicitly legacy, at the /sse URL.
    let transport = HttpClientTransport::new(HttpClientConfig::new(server.legacy_url()).legacy(true)).unwrap();
    let (peer, init) = client_peer(transport, "2024-11-05").await;
    assert_eq!(init["protocolVersion"], "2024-11-05");
    assert!(peer.transport().is_legacy());
    assert_eq!(call(&peer, "echo", json!({"text": "old"})).await["content"][0]["text"], "old");
    peer.close().await.unwrap();

    // Fallback: POST to /sse is refused (404), so the client opens GET /sse.
    let (peer, _) = client_peer(client(server.legacy_url()), "2025-11-25").await;
    assert!(peer.transport().is_legacy());
    assert_eq!(call(&peer, "echo", json!({"text": "fell back"})).await["content"][0]["text"], "fell back");
    peer.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn legacy_server_wire_shape() {
    let server = echo_server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let get = format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    tcp.write_all(get.as_bytes()).await.unwrap();
    let mut stream = String::new();
    let mut buf = vec![0u8; 8192];
    while !stream.contains("\n\n") {
        let n = tokio::time::timeout(SHORT, tcp.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "stream ended: {stream}");
        stream.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(stream.starts_with("HTTP/1.1 200 OK\r\n"), "{stream}");
    assert!(stream.to_ascii_lowercase().contains("content-type: text/event-stream"));
    let event = stream.split("\r\n\r\n").nth(1).unwrap();
    // (chunked encoding: skip the chunk size line)
    let endpoint = event.lines().find_map(|l| l.strip_prefix("data: ")).unwrap().to_owned();
    assert!(event.contains("event: endpoint\n"), "{event}");
    assert!(endpoint.starts_with("/message?sessionId="), "{endpoint}");
    let r = raw(addr, "POST", &endpoint, &[JSON], &initialize_body("2024-11-05"), SHORT).await;
    assert_eq!((r.status, r.body.as_str()), (202, "Accepted"));
    // The reply comes on the GET stream, as a default (`message`) event.
    let mut stream = String::new();
    let mut buf = vec![0u8; 8192];
    while !stream.contains("protocolVersion") {
        let n = tokio::time::timeout(SHORT, tcp.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0);
        stream.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(stream.contains(r#"data: {"jsonrpc":"2.0","id":0,"result":{"#), "{stream}");
    assert!(stream.contains(r#""protocolVersion":"2024-11-05""#), "{stream}");
    assert!(!stream.contains("event:"));
    let r = raw(addr, "POST", "/message?sessionId=unknown", &[JSON], &initialize_body("2024-11-05"), SHORT).await;
    assert_eq!(r.status, 404);
    server.shutdown().await;
}

#[tokio::test]
async fn graceful_shutdown_finishes_requests_in_flight() {
    let server = echo_server(HttpServerConfig::default()).await;
    let (peer, _) = client_peer(client(server.url()), "2025-11-25").await;
    let params = json!({"name": "slow", "arguments": {}});
    let slow = {
        let peer = peer.clone();
        tokio::spawn(async move { peer.request("tools/call", Some(Body::typed(params)), Default::default()).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let addr = server.local_addr();
    server.shutdown().await;
    let result: Value = slow.await.unwrap().expect("the request in flight was answered").decode().unwrap();
    assert_eq!(result["content"][0]["text"], "slow done");
    assert!(TcpStream::connect(addr).await.is_err(), "no longer accepting");
}

#[tokio::test]
async fn custom_headers_and_bearer_token_are_sent() {
    // A one-shot raw listener shows what the client sends.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 8192];
        let n = tcp.read(&mut buf).await.unwrap();
        tcp.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n").await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    });
    std::env::set_var("MCPWIRE_TEST_BEARER", "tok-123");
    let config = HttpClientConfig::new(format!("http://{addr}/mcp"))
        .header("X-Trace", "abc")
        .bearer_token_env("MCPWIRE_TEST_BEARER")
        .unwrap();
    let transport = HttpClientTransport::new(config).unwrap();
    use mcpwire::transport::Transport;
    let note = mcpwire::proto::jsonrpc::Notification::new("notifications/x", &json!({})).unwrap();
    transport.send(note.into()).await.unwrap();
    let request = seen.await.unwrap().to_ascii_lowercase();
    assert!(request.starts_with("post /mcp http/1.1\r\n"), "{request}");
    assert!(request.contains("authorization: bearer tok-123\r\n"));
    assert!(request.contains("x-trace: abc\r\n"));
    assert!(request.contains("accept: application/json, text/event-stream\r\n"));
    assert!(request.contains("content-type: application/json\r\n"));
    assert!(request.contains(&format!("host: {addr}\r\n")));
}

/// Counts the TCP connections made through it.
async fn counting_proxy(upstream: std::net::SocketAddr) -> (std::net::SocketAddr, Arc<Mutex<u32>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(Mutex::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        loop {
            let (down, _) = listener.accept().await.unwrap();
            *count.lock().unwrap() += 1;
            let up = TcpStream::connect(upstream).await.unwrap();
            tokio::spawn(async move {
                let (mut down_r, mut down_w) = down.into_split();
                let (mut up_r, mut up_w) = up.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut down_r, &mut up_w).await;
                });
                let _ = tokio::io::copy(&mut up_r, &mut down_w).await;
            });
        }
    });
    (addr, accepted)
}

async fn count_connections_for_sequential_calls(mode: ResponseMode) -> u32 {
    let server = echo_server(HttpServerConfig::default().response_mode(mode)).await;
    let (proxy, accepted) = counting_proxy(server.local_addr()).await;
    let config = HttpClientConfig::new(format!("http://{proxy}/mcp"));
    let (peer, _) = client_peer(HttpClientTransport::new(config).unwrap(), "2025-11-25").await;
    for i in 0..20 {
        let text = format!("n{i}");
        let params = json!({"name": "echo", "arguments": {"text": text}});
        let result = peer.request("tools/call", Some(Body::typed(params)), Default::default()).await.unwrap();
        let result = result.to_raw().unwrap();
        assert!(result.get().contains(&text), "{}", result.get());
    }
    let connections = *accepted.lock().unwrap();
    peer.close().await.unwrap();
    server.shutdown().await;
    connections
}

#[tokio::test]
async fn sequential_requests_reuse_connections_with_json_replies() {
    // initialize, initialized and 20 calls go over pooled connections; the standalone GET
    // stream holds one of its own. Without reuse this would be 23.
    let connections = count_connections_for_sequential_calls(ResponseMode::Json).await;
    assert!(connections <= 4, "{connections} connections for 22 POSTs and one GET");
}

#[tokio::test]
async fn a_connection_is_reused_once_its_sse_reply_has_ended() {
    let connections = count_connections_for_sequential_calls(ResponseMode::Sse).await;
    assert!(connections <= 4, "{connections} connections for 22 POSTs and one GET");
}

#[tokio::test]
async fn without_reuse_every_request_has_a_connection_of_its_own() {
    let server = echo_server(HttpServerConfig::default().response_mode(ResponseMode::Sse)).await;
    let (proxy, accepted) = counting_proxy(server.local_addr()).await;
    let config = HttpClientConfig::new(format!("http://{proxy}/mcp")).reuse_connections(false);
    let (peer, _) = client_peer(HttpClientTransport::new(config).unwrap(), "2025-11-25").await;
    for i in 0..5 {
        let params = json!({"name": "echo", "arguments": {"text": format!("n{i}")}});
        peer.request("tools/call", Some(Body::typed(params)), Default::default()).await.unwrap();
    }
    let connections = *accepted.lock().unwrap();
    assert!(connections >= 8, "{connections} connections for 7 POSTs and one GET");
    peer.close().await.unwrap();
    server.shutdown().await;
}

/// A proxy that holds back the response to a GET (the standalone stream) for `delay`, and
/// records when the GET's response was let through and when a `tools/call` POST went by.
async fn slow_get_proxy(
    upstream: std::net::SocketAddr,
    delay: Duration,
) -> (std::net::SocketAddr, Arc<Mutex<Vec<(&'static str, std::time::Instant)>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    tokio::spawn(async move {
        loop {
            let (down, _) = listener.accept().await.unwrap();
            let up = TcpStream::connect(upstream).await.unwrap();
            let log = log.clone();
            tokio::spawn(async move {
                let (mut down_r, mut down_w) = down.into_split();
                let (mut up_r, mut up_w) = up.into_split();
                let is_get = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let saw_get = is_get.clone();
                let requests = log.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match down_r.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        let chunk = String::from_utf8_lossy(&buf[..n]);
                        if chunk.starts_with("GET ") {
                            saw_get.store(true, std::sync::atomic::Ordering::SeqCst);
                        }
                        if chunk.contains("\"tools/call\"") {
                            requests.lock().unwrap().push(("call", std::time::Instant::now()));
                        }
                        if up_w.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match up_r.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    // The first bytes after a GET went up are the GET's response head (a
                    // connection carries one exchange at a time).
                    if is_get.swap(false, std::sync::atomic::Ordering::SeqCst) {
                        tokio::time::sleep(delay).await;
                        log.lock().unwrap().push(("get-opened", std::time::Instant::now()));
                    }
                    if down_w.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, events)
}

#[tokio::test]
async fn requests_wait_for_the_standalone_stream_to_open() {
    // Servers on the TypeScript SDK drop a request they make during a tool call when the GET
    // stream is not open yet; a call on a warm pooled connection must not overtake the GET.
    let server = echo_server(HttpServerConfig::default()).await;
    let (proxy, events) = slow_get_proxy(server.local_addr(), Duration::from_millis(300)).await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(format!("http://{proxy}/mcp"))).unwrap();
    let (peer, _) = client_peer(transport, "2025-11-25").await;
    assert_eq!(call(&peer, "echo", json!({"text": "after"})).await["content"][0]["text"], "after");
    let events = events.lock().unwrap().clone();
    let opened = events.iter().find(|(what, _)| *what == "get-opened").expect("GET stream opened").1;
    let called = events.iter().find(|(what, _)| *what == "call").expect("tools/call sent").1;
    assert!(called >= opened, "tools/call went out {:?} before the GET stream opened", opened - called);
    peer.close().await.unwrap();
    server.shutdown().await;
}

/// One scripted answer of [`scripted_server`]: chunks of the raw HTTP response, each written
/// after its delay.
type Script = fn(id: &Value) -> Vec<(u64, String)>;

/// A server that answers every POST on a connection by `script`, given the request's id:
/// exact bytes and timing, which our own server would not produce.
async fn scripted_server(script: Script) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while let Some((_, body)) = read_request(&mut socket, &mut buf).await {
                    let body: Value = serde_json::from_slice(&body).unwrap();
                    for (delay, chunk) in script(&body["id"]) {
                        tokio::time::sleep(Duration::from_millis(delay)).await;
                        if socket.write_all(chunk.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

fn sse_head() -> String {
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_owned()
}

fn chunk(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n", data.len())
}

fn response_event(id: &Value, text: &str) -> String {
    let message = json!({"jsonrpc": "2.0", "id": id, "result": {"text": text}});
    chunk(&format!("id: s-{id}\ndata: {message}\n\n"))
}

async fn request(transport: &HttpClientTransport, id: i64) {
    use mcpwire::proto::jsonrpc::{Message, Request};
    use mcpwire::transport::Transport;
    let request = Request::new(id, "tools/call", &json!({"name": "echo"})).unwrap();
    transport.send(Message::Request(request)).await.unwrap();
}

async fn next_result(transport: &HttpClientTransport) -> Result<(Value, Value), TransportError> {
    use mcpwire::proto::jsonrpc::Message;
    use mcpwire::transport::Transport;
    match transport.recv().await? {
        Some(Message::Response(r)) => Ok((json!(r.id), r.result.decode::<Value>().unwrap())),
        other => panic!("expected a response, got {other:?}"),
    }
}

#[tokio::test]
async fn an_sse_answer_that_comes_in_pieces_is_read_to_its_end() {
    // Head and priming event first; the response 150 ms later, in two writes; then the end.
    let addr = scripted_server(|id| {
        let event = response_event(id, "late");
        let (a, b) = event.split_at(event.len() / 2);
        vec![
            (0, sse_head() + &chunk("id: p\nretry: 10\ndata: \n\n")),
            (150, a.to_owned()),
            (20, b.to_owned()),
            (20, "0\r\n\r\n".to_owned()),
        ]
    })
    .await;
    let transport = client(format!("http://{addr}/mcp"));
    request(&transport, 1).await;
    let (id, result) = next_result(&transport).await.unwrap();
    assert_eq!((id, result), (json!(1), json!({"text": "late"})));
    // The next request is answered too.
    request(&transport, 2).await;
    assert_eq!(next_result(&transport).await.unwrap().0, json!(2));
}

#[tokio::test]
async fn answers_over_the_event_cap_fail_their_requests_naming_the_limit_and_the_next_goes_through() {
    let addr = scripted_server(|id| {
        let text = if id == &json!(1) { "x".repeat(4000) } else { "small".to_owned() };
        if id.as_i64() < Some(3) {
            vec![(0, sse_head() + &response_event(id, &text) + "0\r\n\r\n")]
        } else {
            // JSON answers: the first over the cap, the second not.
            let text = if id == &json!(3) { "y".repeat(4000) } else { "small".to_owned() };
            let body = json!({"jsonrpc": "2.0", "id": id, "result": {"text": text}}).to_string();
            vec![(
                0,
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                ),
            )]
        }
    })
    .await;
    let transport =
        HttpClientTransport::new(HttpClientConfig::new(format!("http://{addr}/mcp")).max_event_bytes(1024)).unwrap();
    for (big, small) in [(1, 2), (3, 4)] {
        request(&transport, big).await;
        if big == 1 {
            // An SSE event over the cap is reported as it is dropped …
            match next_result(&transport).await {
                Err(TransportError::Malformed(e)) => assert!(e.to_string().contains("1024"), "{e}"),
                other => panic!("expected the cap to refuse answer {big}, got {other:?}"),
            }
        }
        // … and the request it may have answered fails once the stream ends without an answer;
        // a JSON answer over the cap fails its request at once. Either way naming the limit.
        use mcpwire::proto::jsonrpc::Message;
        use mcpwire::transport::Transport;
        match transport.recv().await.unwrap() {
            Some(Message::Error(e)) => {
                assert_eq!(e.id, Some(big.into()));
                assert!(e.error.message.starts_with("response too large: at least "), "{}", e.error.message);
                assert!(
                    e.error.message.contains("the limit is 1024 (HttpClientConfig::max_event_bytes)"),
                    "{}",
                    e.error.message
                );
            }
            other => panic!("expected the error answer to {big}, got {other:?}"),
        }
        request(&transport, small).await;
        assert_eq!(next_result(&transport).await.unwrap(), (json!(small), json!({"text": "small"})));
    }
}

#[tokio::test]
async fn an_error_without_id_answering_a_post_is_its_requests() {
    let addr = scripted_server(|_| {
        let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#;
        vec![(
            0,
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            ),
        )]
    })
    .await;
    let transport = client(format!("http://{addr}/mcp"));
    request(&transport, 5).await;
    use mcpwire::proto::jsonrpc::Message;
    use mcpwire::transport::Transport;
    match transport.recv().await.unwrap() {
        Some(Message::Error(e)) => assert_eq!((e.id, e.error.code.0), (Some(5.into()), -32700)),
        other => panic!("expected the error, with the POST's id, got {other:?}"),
    }
}

/// A `tools/call` result written the TypeScript SDK's way (result before id).
fn tool_answer(id: &Value) -> String {
    format!(r#"{{"result":{{"content":[{{"type":"text","text":"for {id}"}}],"x":1}},"jsonrpc":"2.0","id":{id}}}"#)
}

/// Whether the next message is a response to `id` with a typed (not raw) result, checking that
/// either way it decodes to the tool's answer.
async fn next_answer_is_typed(transport: &HttpClientTransport, id: i64) -> bool {
    use mcpwire::proto::jsonrpc::Message;
    use mcpwire::proto::mcp_types::{CallToolOutput, ContentBlock};
    use mcpwire::transport::Transport;
    let Some(Message::Response(r)) = transport.recv().await.unwrap() else { panic!("expected a response") };
    assert_eq!(r.id, id.into());
    let typed = r.result.as_raw().is_none();
    let Ok(CallToolOutput::Result(result)) = r.result.into_decoded::<CallToolOutput>() else { panic!("a tool result") };
    assert!(matches!(&result.content[..], [ContentBlock::Text(t)] if t.text == format!("for {id}")));
    assert_eq!(result.extra["x"], 1);
    typed
}

#[tokio::test]
async fn tool_results_come_typed_when_they_answer_the_request_and_raw_otherwise() {
    let addr = scripted_server(|id| {
        let json_body = |answer: String| {
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
                answer.len()
            )
        };
        match id.as_i64().unwrap() {
            // JSON answers.
            1 | 4 => vec![(0, json_body(tool_answer(id)))],
            // A server's mistake first: an answer to a request this POST did not make.
            3 => vec![(
                0,
                sse_head()
                    + &chunk(&format!("data: {}\n\n", tool_answer(&json!(77))))
                    + &chunk(&format!("data: {}\n\n", tool_answer(id)))
                    + "0\r\n\r\n",
            )],
            _ => vec![(0, sse_head() + &chunk(&format!("data: {}\n\n", tool_answer(id))) + "0\r\n\r\n")],
        }
    })
    .await;
    let transport = client(format!("http://{addr}/mcp"));
    for id in [1, 2] {
        request(&transport, id).await;
        assert!(next_answer_is_typed(&transport, id).await, "answer {id}");
    }
    request(&transport, 3).await;
    assert!(!next_answer_is_typed(&transport, 77).await, "an answer to another request stays raw");
    assert!(next_answer_is_typed(&transport, 3).await);

    let untyped = HttpClientTransport::new(HttpClientConfig::new(format!("http://{addr}/mcp")).typed_results(false));
    let untyped = untyped.unwrap();
    for id in [4, 5] {
        request(&untyped, id).await;
        assert!(!next_answer_is_typed(&untyped, id).await, "typed_results off: answer {id}");
    }
}
