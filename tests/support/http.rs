//! Shared by the `http_*` tests: a minimal MCP server on `peer::Peer` (the server layer lives
//! elsewhere) and a raw HTTP/1.1 client that shows exact status codes, headers and bodies.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use mcpwire::peer::{Handler, Peer, Progress};
use mcpwire::proto::jsonrpc::{Body, ErrorCode, ErrorObject, Request};
use mcpwire::proto::session::{self, Mode, Role};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::Transport;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Answers `initialize` (with the counter-offer rule), `ping`, `tools/list` (one tool, `echo
/// {text}`), `tools/call echo`, and -32601 for everything else (`server/discover` included).
pub struct EchoServer;

impl<T: Transport> Handler<T> for EchoServer {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        let peer = peer.clone();
        tokio::spawn(async move {
            let params: Value = request.params_as().unwrap_or(Value::Null);
            if request.method == "tools/call" && params["name"] == "slow" {
                // Three progress notifications 100 ms apart, then the result.
                let token = params["_meta"]["progressToken"].clone();
                for n in 1..=3 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let progress = json!({"progressToken": token, "progress": n, "total": 3});
                    let _ = peer.notify("notifications/progress", Some(Body::typed(progress))).await;
                }
                let done = json!({"content": [{"type": "text", "text": "slow done"}]});
                let _ = peer.respond(&request.id, Ok(Body::typed(done))).await;
                return;
            }
            let outcome = answer(&request);
            let _ = peer.respond(&request.id, outcome).await;
        });
    }
}

fn answer(request: &Request) -> Result<Body, ErrorObject> {
    match request.method.as_str() {
        "initialize" => {
            let params: Value = request.params_as().unwrap_or(Value::Null);
            let offered = params["protocolVersion"].as_str().unwrap_or("");
            let version = ProtocolVersion::server_counter_offer(offered, &ProtocolVersion::ALL).expect("a version");
            Ok(Body::typed(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcpwire-http-test", "version": "0.1.0"}
            })))
        }
        "ping" => Ok(Body::typed(json!({}))),
        "tools/list" => Ok(Body::typed(json!({"tools": [{
            "name": "echo",
            "description": "Echoes its text",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
        }]}))),
        "tools/call" => {
            let params: Value = request.params_as().unwrap_or(Value::Null);
            match params["name"].as_str() {
                Some("echo") => {
                    let text = params["arguments"]["text"].as_str().unwrap_or("").to_owned();
                    Ok(Body::typed(json!({"content": [{"type": "text", "text": text}]})))
                }
                other => Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("unknown tool {other:?}"))),
            }
        }
        method => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {method}"))),
    }
}

/// A client peer over `transport`, initialized at `version`; returns it and the result.
pub async fn client_peer<T: Transport>(transport: T, version: &str) -> (Peer<T>, Value) {
    let peer = Peer::start(transport, Role::Client, Mode::Handshake, session::SessionLimits::default(), NoRequests);
    let params =
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "mcpwire-test", "version": "0"}});
    let result: Value = peer
        .request("initialize", Some(Body::typed(params)), Default::default())
        .await
        .expect("initialize")
        .decode()
        .unwrap();
    peer.initialized().await.expect("initialized");
    (peer, result)
}

/// Calls a tool and returns the result as JSON.
pub async fn call<T: Transport>(peer: &Peer<T>, name: &str, args: Value) -> Value {
    let params = json!({"name": name, "arguments": args});
    peer.request("tools/call", Some(Body::typed(params)), Default::default())
        .await
        .expect("tools/call")
        .decode()
        .unwrap()
}

/// Calls the echo server's `slow` tool under progress token `token` (three progress
/// notifications, then its result, all on the POST's SSE stream) and returns the progress
/// values seen, in order, and the result's text.
pub async fn slow_call<T: Transport>(peer: &Peer<T>, token: Value) -> (Vec<u64>, String) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let params = json!({"name": "slow", "arguments": {}, "_meta": {"progressToken": token}});
    let result: Value = peer
        .request_with_progress(
            "tools/call",
            Some(Body::serialized(&params).unwrap()),
            Default::default(),
            Some(Box::new(move |p: Progress| sink.lock().unwrap().push(p.progress.as_u64().unwrap()))),
        )
        .await
        .expect("tools/call slow")
        .decode()
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    (seen, result["content"][0]["text"].as_str().expect("a text result").to_owned())
}

/// A client that answers no server requests.
pub struct NoRequests;

impl<T: Transport> Handler<T> for NoRequests {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        let peer = peer.clone();
        tokio::spawn(async move {
            let error = ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "no client features");
            let _ = peer.respond(&request.id, Err(error)).await;
        });
    }
}

/// Runs the echo server over `transport` until the session ends.
pub async fn serve_echo<T: Transport>(transport: T) {
    let peer = Peer::start(transport, Role::Server, Mode::Handshake, session::SessionLimits::default(), EchoServer);
    peer.closed().await;
}

/// [`serve_echo`] for a stateless server: each transport is one POST, with no handshake.
pub async fn serve_echo_stateless<T: Transport>(transport: T) {
    let peer = Peer::start(transport, Role::Server, Mode::Stateless, session::SessionLimits::default(), EchoServer);
    peer.closed().await;
}

/// A raw HTTP/1.1 response.
#[derive(Debug)]
pub struct Raw {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }

    /// The `data` of every SSE event with non-empty data, as JSON.
    pub fn sse_messages(&self) -> Vec<Value> {
        self.body
            .split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
                (!data.is_empty() && !data.join("").is_empty()).then(|| serde_json::from_str(&data.join("\n")).unwrap())
            })
            .collect()
    }

    /// The messages of a POST's answer, whichever its framing: the SSE events' (as
    /// [`Raw::sse_messages`]) or the one JSON body's (a batch's members).
    pub fn messages(&self) -> Vec<Value> {
        if !self.header("content-type").is_some_and(|t| t.starts_with("application/json")) {
            return self.sse_messages();
        }
        match self.json() {
            Value::Array(batch) => batch,
            one => vec![one],
        }
    }

    /// The `id` of every SSE event.
    pub fn sse_ids(&self) -> Vec<String> {
        self.body.lines().filter_map(|l| l.strip_prefix("id: ")).map(str::to_owned).collect()
    }
}

/// Sends one request with `Connection: close` and reads the response until the server closes
/// it or `wait` passes (for streams that stay open).
pub async fn raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    wait: Duration,
) -> Raw {
    raw_from(None, addr, method, path, headers, body, wait).await
}

/// As [`raw`], from the local address `from` when given (any 127.0.0.0/8 address reaches a
/// loopback listener: a second client address on one machine).
pub async fn raw_from(
    from: Option<std::net::IpAddr>,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    wait: Duration,
) -> Raw {
    let mut tcp = match from {
        None => TcpStream::connect(addr).await.unwrap(),
        Some(ip) => {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(SocketAddr::new(ip, 0)).unwrap();
            socket.connect(addr).await.unwrap()
        }
    };
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(body.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let _ = tokio::time::timeout(wait, tcp.read_to_end(&mut bytes)).await;
    parse(&bytes)
}

fn parse(bytes: &[u8]) -> Raw {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no response head in {text:?}"));
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_owned() };
    Raw { status, headers, body }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { break };
        if n == 0 || after.len() < n {
            out.push_str(&after[..n.min(after.len())]);
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    out
}

pub const BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");
pub const JSON: (&str, &str) = ("Content-Type", "application/json");
pub const SHORT: Duration = Duration::from_secs(5);

pub fn initialize_body(version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
}

/// `body` POSTed to `path` of `addr` by the bearer `token`, in `session` when given, at
/// protocol revision 2025-11-25: the HTTP answer as it came.
pub async fn post_with_token(addr: SocketAddr, path: &str, token: &str, session: Option<&str>, body: &str) -> Raw {
    let auth = format!("Bearer {token}");
    let mut headers = vec![BOTH, JSON, ("Authorization", auth.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    raw(addr, "POST", path, &headers, body, SHORT).await
}

/// A handshake-era session of the bearer `token` at `path` of `addr` (initialize, then
/// initialized, each asserted): its id.
pub async fn session_with_token(addr: SocketAddr, path: &str, token: &str) -> String {
    let r = post_with_token(addr, path, token, None, &initialize_body("2025-11-25")).await;
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.header("mcp-session-id").expect("a session id").to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let r = post_with_token(addr, path, token, Some(&session), &note).await;
    assert_eq!(r.status, 202, "{r:?}");
    session
}

/// Initializes a session with raw requests; returns its id.
pub async fn raw_session(addr: SocketAddr, version: &str) -> String {
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &initialize_body(version), SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let r = raw(
        addr,
        "POST",
        "/mcp",
        &[BOTH, JSON, ("Mcp-Session-Id", &id), ("MCP-Protocol-Version", version)],
        &note,
        SHORT,
    )
    .await;
    assert_eq!(r.status, 202, "{r:?}");
    id
}

/// Reads one HTTP/1.1 request from `socket`: the head (as sent), then `Content-Length` bytes of
/// body; what came after stays in `buf` for the next call. `None` when the connection ends
/// before a whole head.
pub async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .to_lowercase()
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().expect("a numeric Content-Length"));
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = buf[head_end..head_end + length].to_vec();
    buf.drain(..head_end + length);
    Some((head, body))
}

/// A TCP relay in front of `target` that counts the connections it accepts: how a test shows
/// that a client multiplexed its requests over one connection (HTTP/2) rather than opened
/// several. Returns the relay's address and the count.
pub async fn counting_relay(target: SocketAddr) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut down, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut up) = TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                }
            });
        }
    });
    (addr, accepted)
}
