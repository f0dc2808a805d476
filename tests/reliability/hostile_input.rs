//! Hostile clients against the HTTP server (the server layer's echo server on
//! `HttpServer`), over raw TCP on loopback: header floods and huge header values (431),
//! headers or a body trickled a byte at a time and chunked bodies that never end (cut off by
//! `header_read_timeout` / `body_read_timeout`, 408), idle connections (closed), invalid
//! percent-encoding in the legacy `sessionId`, session ids (128 bits, all distinct), a JSON
//! nesting bomb (refused at the reader's depth limit, over HTTP and over newline framing),
//! and 1,000 connections at once. In each, a well-behaved client is served meanwhile, and the
//! test ends with no fd or child process left behind.
//!
//! The status-code table of the MCP endpoint (403 Host/Origin, 400 no session, 404 dead
//! session, 400 bad version header, 413, 406, 415) is `tests/http_server.rs`
//! (`post_status_codes`, `origin_and_host_checks`, `get_stream_status_codes`).

use crate::http_support;
use crate::reliability;
use crate::serving;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::echo::echo_server;
use http_support::{initialize_body, raw, BOTH, JSON, SHORT};
use mcpwire::transport::sse_http::{HttpServer, HttpServerConfig};
use mcpwire::transport::stdio::StdioTransport;
use mcpwire::transport::Limits;
use reliability::Baseline;
use serde_json::Value;
use serving::ServingBridge;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A generous bound for anything that must happen "soon" on a loaded machine.
const BOUND: Duration = Duration::from_secs(20);

async fn server(config: HttpServerConfig) -> HttpServer {
    echo_server().serve_http(config).await.unwrap()
}

/// A well-behaved client is served: `initialize` answered 200.
async fn still_serves(addr: SocketAddr) {
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT).await;
    assert_eq!(r.status, 200, "a well-behaved client is served: {r:?}");
}

/// Writes `bytes` (ignoring a refusal mid-write: the server may close first), then reads
/// what comes back until the server closes, within [`BOUND`]. Returns the status, if any.
async fn send_raw(addr: SocketAddr, bytes: &[u8]) -> Option<u16> {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let _ = tcp.write_all(bytes).await;
    let mut answer = Vec::new();
    tokio::time::timeout(BOUND, async {
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = tcp.read(&mut chunk).await {
            answer.extend_from_slice(&chunk[..n]);
        }
    })
    .await
    .expect("the server answers or closes the connection");
    let text = String::from_utf8_lossy(&answer);
    text.split(' ').nth(1).and_then(|s| s.parse().ok())
}

fn post_head(addr: SocketAddr, extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\n{extra}"
    )
}

#[tokio::test]
async fn a_header_flood_and_a_huge_header_value_get_431() {
    let baseline = Baseline::take().await;
    let server = server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    let body = initialize_body("2025-11-25");
    let flood: String = (0..1000).map(|n| format!("X-Flood-{n}: {n}\r\n")).collect();
    let request = format!("{}{flood}Content-Length: {}\r\n\r\n{body}", post_head(addr, ""), body.len());
    assert_eq!(send_raw(addr, request.as_bytes()).await, Some(431));
    still_serves(addr).await;
    let huge = format!("X-Huge: {}\r\n", "v".repeat(1024 * 1024));
    let request = format!("{}{huge}Content-Length: {}\r\n\r\n{body}", post_head(addr, ""), body.len());
    assert_eq!(send_raw(addr, request.as_bytes()).await, Some(431));
    still_serves(addr).await;
    server.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

#[test]
fn the_slow_client_timeouts_have_documented_defaults() {
    let config = HttpServerConfig::default();
    assert_eq!(config.header_read_timeout, Some(Duration::from_secs(30)));
    assert_eq!(config.body_read_timeout, Some(Duration::from_secs(30)));
}

#[tokio::test]
async fn headers_trickled_a_byte_at_a_time_are_cut_off_and_others_are_served() {
    let baseline = Baseline::take().await;
    let timeout = Duration::from_millis(500);
    let server = server(HttpServerConfig::default().header_read_timeout(Some(timeout))).await;
    let addr = server.local_addr();
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    // 400 bytes at one every 50 ms would take 20 s: the server must cut it off long before.
    let head = post_head(addr, &format!("X-Slow: {}\r\n", "s".repeat(400)));
    let started = Instant::now();
    let mut cut_after = None;
    for (sent, byte) in head.bytes().enumerate() {
        if tcp.write_all(&[byte]).await.is_err() {
            cut_after = Some(sent);
            break;
        }
        // Is the connection closed? (A read of 0 bytes, or an error.)
        let mut probe = [0u8; 64];
        if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_millis(50), tcp.read(&mut probe)).await {
            cut_after = Some(sent);
            break;
        }
        if sent % 40 == 0 {
            still_serves(addr).await;
        }
    }
    let sent = cut_after.expect("the trickling connection is closed before its head is complete");
    assert!(sent < head.len(), "cut after {sent} of {} bytes", head.len());
    assert!(started.elapsed() >= timeout, "not before the timeout: {:?}", started.elapsed());
    drop(tcp);
    still_serves(addr).await;
    server.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_header_timeout() {
    let baseline = Baseline::take().await;
    let server = server(HttpServerConfig::default().header_read_timeout(Some(Duration::from_millis(300)))).await;
    let addr = server.local_addr();
    // Idle from the start, and idle after one request on a kept-alive connection.
    let mut fresh = TcpStream::connect(addr).await.unwrap();
    let mut kept = TcpStream::connect(addr).await.unwrap();
    let body = initialize_body("2025-11-25");
    let request = format!("{}Content-Length: {}\r\n\r\n{body}", post_head(addr, ""), body.len());
    kept.write_all(request.as_bytes()).await.unwrap();
    for tcp in [&mut fresh, &mut kept] {
        let ended = tokio::time::timeout(BOUND, async {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = tcp.read(&mut chunk).await {
                let _ = n;
            }
        })
        .await;
        assert!(ended.is_ok(), "an idle connection is closed by the server");
    }
    drop((fresh, kept));
    still_serves(addr).await;
    server.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test]
async fn a_body_that_never_ends_gets_408_and_others_are_served() {
    let baseline = Baseline::take().await;
    let config = HttpServerConfig::default().body_read_timeout(Some(Duration::from_millis(500)));
    let server = server(config).await;
    let addr = server.local_addr();
    // Chunked, one chunk, then nothing; and a Content-Length that is never reached.
    let chunked = format!("{}Transfer-Encoding: chunked\r\n\r\n5\r\n{{\"jso\r\n", post_head(addr, ""));
    let short = format!("{}Content-Length: 1000\r\n\r\n{{\"jsonrpc\"", post_head(addr, ""));
    let (a, b, ()) =
        tokio::join!(send_raw(addr, chunked.as_bytes()), send_raw(addr, short.as_bytes()), still_serves(addr));
    assert_eq!((a, b), (Some(408), Some(408)));
    still_serves(addr).await;
    server.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test]
async fn invalid_percent_encoding_in_the_legacy_session_id_is_refused() {
    let baseline = Baseline::take().await;
    let server = server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for query in ["sessionId=%zz", "sessionId=%", "sessionId=%ff%fe", "sessionId=%00", "sessionId=a%2", "sessionId="] {
        let r = raw(addr, "POST", &format!("/message?{query}"), &[JSON], ping, SHORT).await;
        assert!(matches!(r.status, 400 | 404), "{query}: {r:?}");
    }
    still_serves(addr).await;
    server.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test]
async fn session_ids_are_128_random_bits_and_never_repeat() {
    let baseline = Baseline::take().await;
    let server = server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    let mut ids = HashSet::new();
    for _ in 0..200 {
        let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT).await;
        let id = r.header("mcp-session-id").unwrap().to_owned();
        // 32 hex digits: 16 bytes from the operating system's random source (getrandom).
        assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert!(ids.insert(id), "a repeated session id");
    }
    // Every bit position varies across the ids: none is fixed.
    let bits = |id: &String| u128::from_str_radix(id, 16).unwrap();
    let (ones, zeros) = ids.iter().fold((0u128, 0u128), |(o, z), id| (o | bits(id), z | !bits(id)));
    assert_eq!((ones, zeros), (u128::MAX, u128::MAX), "every one of the 128 bits takes both values");
    server.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

/// A `tools/call echo` (2026-07-28: no handshake needed) whose `text` is `[[[[…]]]]`, `depth`
/// deep, and, at 0, a plain one with text "still here".
fn nesting_bomb(id: u64, depth: usize) -> String {
    let meta =
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let text =
        if depth == 0 { "\"still here\"".to_owned() } else { format!("{}{}", "[".repeat(depth), "]".repeat(depth)) };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{text}}},"_meta":{meta}}}}}"#
    )
}

/// Whether `answer` refuses the call: a JSON-RPC error, or a tool error result.
fn refused(answer: &Value) -> bool {
    answer["error"]["code"].is_i64() || answer["result"]["isError"] == true
}

const BOMB_DEPTHS: [usize; 3] = [129, 10_000, 1_000_000];

#[tokio::test]
async fn a_json_nesting_bomb_is_refused_over_http() {
    let baseline = Baseline::take().await;
    let server = server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    let version = ("MCP-Protocol-Version", "2026-07-28");
    let headers = [BOTH, JSON, version, ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")];
    for depth in BOMB_DEPTHS {
        let r = raw(addr, "POST", "/mcp", &headers, &nesting_bomb(1, depth), SHORT).await;
        let answer = if r.body.starts_with('{') { r.json() } else { r.sse_messages().pop().unwrap_or_default() };
        assert!(refused(&answer), "depth {depth}: {} {}", r.status, r.body.chars().take(300).collect::<String>());
    }
    let r = raw(addr, "POST", "/mcp", &headers, &nesting_bomb(2, 0), SHORT).await;
    assert!(r.body.contains("still here"), "{r:?}");
    still_serves(addr).await;
    server.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test]
async fn a_json_nesting_bomb_is_refused_over_newline_framing() {
    let baseline = Baseline::take().await;
    let (ours, theirs) = tokio::net::UnixStream::pair().unwrap();
    let (server_in, server_out) = theirs.into_split();
    let serving = tokio::spawn(echo_server().serve(StdioTransport::from_io(server_in, server_out, Limits::default())));
    let (read, mut write) = ours.into_split();
    let mut lines = tokio::io::BufReader::new(read);
    for (id, depth) in BOMB_DEPTHS.into_iter().chain([0]).enumerate() {
        write.write_all(format!("{}\n", nesting_bomb(id as u64, depth)).as_bytes()).await.unwrap();
        let mut line = String::new();
        tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut line).await.unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        if depth == 0 {
            // The server carries on.
            assert_eq!(answer["result"]["content"][0]["text"], "still here", "{line}");
        } else {
            assert!(refused(&answer), "depth {depth}: {}", line.chars().take(300).collect::<String>());
        }
    }
    drop(write);
    serving.await.unwrap().unwrap();
    drop(lines);
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_at_once_are_each_served() {
    let baseline = Baseline::take().await;
    let server = server(HttpServerConfig::default()).await;
    let addr = server.local_addr();
    // Every connection is open before any request is written.
    let mut connections = Vec::new();
    for _ in 0..1000 {
        connections.push(TcpStream::connect(addr).await.unwrap());
    }
    let body = initialize_body("2025-11-25");
    let request = format!("{}Connection: close\r\nContent-Length: {}\r\n\r\n{body}", post_head(addr, ""), body.len());
    let mut answers = tokio::task::JoinSet::new();
    for mut tcp in connections {
        let request = request.clone();
        answers.spawn(async move {
            tcp.write_all(request.as_bytes()).await.unwrap();
            let mut answer = Vec::new();
            tokio::time::timeout(BOUND, tcp.read_to_end(&mut answer)).await.expect("answered").unwrap();
            String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200")
        });
    }
    let mut served = 0;
    while let Some(ok) = answers.join_next().await {
        served += usize::from(ok.unwrap());
    }
    assert_eq!(served, 1000);
    assert_eq!(server.session_count(), 1000);
    still_serves(addr).await;
    server.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test]
async fn a_bridge_on_a_network_wants_its_token_and_takes_the_host_its_clients_name() {
    let baseline = Baseline::take().await;
    let token = "s3cret-token-for-the-test-only-0123456789";
    // `mcp-bridge serve` on its embedded default, on a network: its banner names the port.
    let bridge = ServingBridge::start_with(
        &["--listen", "http://0.0.0.0:0/mcp", "--auth-token-env", "MCPWIRE_TEST_TOKEN"],
        |command| {
            command.env("MCPWIRE_TEST_TOKEN", token).stderr(std::process::Stdio::null());
        },
    );
    let addr: SocketAddr = ([127, 0, 0, 1], bridge.port()).into();
    let body = initialize_body("2025-11-25");
    let host = format!("bridge.example:{}", bridge.port());
    let request = |auth: Option<&str>| {
        let auth = auth.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\n{auth}Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    // No token, a wrong one: 401. The right one, under the name the client reached it by: 200.
    assert_eq!(send_raw(addr, request(None).as_bytes()).await, Some(401));
    assert_eq!(send_raw(addr, request(Some("wrong")).as_bytes()).await, Some(401));
    assert_eq!(send_raw(addr, request(Some(token)).as_bytes()).await, Some(200));
    // A foreign browser origin is still refused, token or not.
    let foreign =
        request(Some(token)).replace("Connection: close", "Origin: https://evil.example\r\nConnection: close");
    assert_eq!(send_raw(addr, foreign.as_bytes()).await, Some(403));
    drop(bridge);
    baseline.assert_nothing_left(BOUND).await;
}
