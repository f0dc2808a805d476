//! Handshake-era sessions shared between HTTP servers through a session store and an event
//! store (the in-memory ones, so several servers of this process stand in for replicas): a
//! session initialized on one server is served by another that never saw its `initialize`,
//! its state changes reach the store, DELETE on any server ends it everywhere it is looked up,
//! a stream is resumed on another server with `Last-Event-ID`, and a store that cannot be
//! reached gets 503 with a JSON-RPC error body. Raw HTTP/1.1 over loopback. The same with
//! Redis, HAProxy and separate processes is tests/scale_out.rs (feature `redis`).
//!
//! Each test runs alone (its `Baseline` waits for its turn) and ends by checking that no
//! socket or child of its own is left.

use crate::http_support;
use crate::reliability;

use std::sync::Arc;
use std::time::Duration;

use http_support::*;
use mcpwire::server::{text_result, Server, ToolError};
use mcpwire::transport::sse_http::{
    EventStore, HttpServer, HttpServerConfig, MemoryEventStore, MemorySessionStore, Relayed, SessionRecord,
    SessionStore, StoreError, StoreFuture,
};
use reliability::Baseline;
use serde_json::{json, Value};

/// How long a test waits, after its servers are shut down, for nothing of ours to be left.
const CLEANUP: Duration = Duration::from_secs(10);

/// A server named `name` whose tool `whoami` answers that name, and `count {n}` sends n
/// progress notifications before answering `counted`.
async fn replica(name: &'static str, sessions: Arc<dyn SessionStore>, events: Arc<dyn EventStore>) -> HttpServer {
    let server = Server::builder()
        .name(name)
        .version("1")
        .tool("whoami", "This server's name", json!({"type": "object"}), move |_args, _ctx| async move {
            Ok(text_result(name))
        })
        .tool(
            "count",
            "n progress notifications, then the answer",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            |args, ctx| async move {
                let n = args.get("n").and_then(Value::as_u64).unwrap_or(3);
                for i in 1..=n {
                    let _ = ctx.progress(i as f64, Some(n as f64), None).await;
                }
                Ok(text_result("counted"))
            },
        )
        .build()
        .unwrap();
    let config = HttpServerConfig::default().session_store(sessions).event_store(events);
    server.serve_http(config).await.unwrap()
}

fn call(id: u64, tool: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args, "_meta": {"progressToken": id}}})
    .to_string()
}

async fn post(server: &HttpServer, session: &str, body: &str) -> Raw {
    let headers = [BOTH, JSON, ("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-11-25")];
    raw(server.local_addr(), "POST", "/mcp", &headers, body, SHORT).await
}

fn text_of(r: &Raw) -> String {
    let messages = r.sse_messages();
    let last = messages.last().unwrap_or_else(|| panic!("no message in {r:?}"));
    last["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {last}")).to_owned()
}

#[tokio::test]
async fn a_session_initialized_on_one_server_is_served_by_the_others() {
    let baseline = Baseline::take().await;
    let store = Arc::new(MemorySessionStore::new());
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
    let a = replica("a", store.clone(), events.clone()).await;
    let b = replica("b", store.clone(), events.clone()).await;
    let c = replica("c", store.clone(), events.clone()).await;

    let id = raw_session(a.local_addr(), "2025-11-25").await;
    let record = store.load(&id).await.unwrap().expect("written at initialize");
    assert_eq!(serde_json::from_str::<Value>(&record.initialize).unwrap()["clientInfo"]["name"], "raw");
    assert_eq!(b.session_count(), 0);

    let r = post(&b, &id, &call(1, "whoami", json!({}))).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("mcp-session-id"), Some(id.as_str()));
    assert_eq!(text_of(&r), "b");
    assert_eq!(r.sse_messages().len(), 1, "the replayed initialize's answer is not the client's: {r:?}");
    assert_eq!(b.session_count(), 1, "rebuilt on b");

    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "error"}});
    let r = post(&b, &id, &level.to_string()).await;
    assert_eq!(r.status, 200, "{r:?}");
    let record = store.load(&id).await.unwrap().unwrap();
    assert_eq!(record.replayed.len(), 1);
    assert_eq!(record.replayed[0].method, "logging/setLevel");

    assert_eq!(text_of(&post(&a, &id, &call(3, "whoami", json!({}))).await), "a");
    let r = post(&c, &id, &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).to_string()).await;
    let messages = r.sse_messages();
    let tools: Vec<&str> =
        messages[0]["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["whoami", "count"], "{r:?}");

    let headers = [("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let r = raw(b.local_addr(), "DELETE", "/mcp", &headers, "", SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(store.load(&id).await.unwrap(), None, "DELETE removes the record");
    // The others hear of it and end their copies (a, which made it, and c, which rebuilt it).
    for _ in 0..10_000 {
        if a.session_count() == 0 && c.session_count() == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!((a.session_count(), c.session_count()), (0, 0), "the copies elsewhere end");
    assert_eq!(post(&a, &id, &call(5, "whoami", json!({}))).await.status, 404);
    let d = replica("d", store.clone(), events.clone()).await;
    assert_eq!(post(&d, &id, &call(5, "whoami", json!({}))).await.status, 404);
    assert_eq!(post(&d, "0123456789abcdef0123456789abcdef", &call(6, "whoami", json!({}))).await.status, 404);
    for server in [a, b, c, d] {
        server.shutdown().await;
    }
    baseline.assert_nothing_left(CLEANUP).await;
}

#[tokio::test]
async fn a_stream_answered_by_one_server_resumes_on_another() {
    let baseline = Baseline::take().await;
    let store = Arc::new(MemorySessionStore::new());
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
    let a = replica("a", store.clone(), events.clone()).await;
    let b = replica("b", store.clone(), events.clone()).await;
    let id = raw_session(a.local_addr(), "2025-11-25").await;

    let whole = post(&a, &id, &call(7, "count", json!({"n": 4}))).await;
    assert_eq!(whole.status, 200);
    let ids = whole.sse_ids();
    assert_eq!(ids.len(), 6, "priming, 4 progress, the answer: {whole:?}");
    let stream = ids[0].rsplit_once('_').unwrap().0.to_owned();
    assert!(stream.len() > 2, "named after its replica when sessions are shared: {stream}");

    // The client saw the priming event and the first progress notification, then lost the
    // connection; it resumes through the other server.
    let headers = [
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", id.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Last-Event-ID", ids[1].as_str()),
    ];
    let resumed = raw(b.local_addr(), "GET", "/mcp", &headers, "", SHORT).await;
    assert_eq!(resumed.status, 200, "{resumed:?}");
    assert_eq!(resumed.sse_ids(), ids[2..], "the missed events, none repeated");
    let messages = resumed.sse_messages();
    assert_eq!(messages.iter().filter(|m| m["method"] == "notifications/progress").count(), 3);
    assert_eq!(messages.last().unwrap()["result"]["content"][0]["text"], "counted");
    a.shutdown().await;
    b.shutdown().await;
    baseline.assert_nothing_left(CLEANUP).await;
}

/// A store that cannot be reached.
struct Unreachable;

impl SessionStore for Unreachable {
    fn save<'a>(&'a self, _: &'a str, _: &'a SessionRecord, _: Duration) -> StoreFuture<'a, ()> {
        Box::pin(std::future::ready(Err(StoreError::Unavailable("connection refused".into()))))
    }
    fn load<'a>(&'a self, _: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(std::future::ready(Err(StoreError::Unavailable("connection refused".into()))))
    }
    fn touch<'a>(&'a self, _: &'a str, _: Duration) -> StoreFuture<'a, ()> {
        Box::pin(std::future::ready(Err(StoreError::Unavailable("connection refused".into()))))
    }
    fn remove<'a>(&'a self, _: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(std::future::ready(Err(StoreError::Unavailable("connection refused".into()))))
    }
}

#[tokio::test]
async fn a_store_that_cannot_be_reached_gets_503_with_a_json_rpc_error() {
    let baseline = Baseline::take().await;
    let server = replica("a", Arc::new(Unreachable), Arc::new(MemoryEventStore::new(64))).await;
    let r = raw(server.local_addr(), "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32000);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("session store unavailable"), "{r:?}");
    assert_eq!(server.session_count(), 0, "the session is not kept");
    let r = post(&server, "0123456789abcdef0123456789abcdef", &call(1, "whoami", json!({}))).await;
    assert_eq!(r.status, 503, "an unknown id cannot be looked up: {r:?}");
    server.shutdown().await;
    baseline.assert_nothing_left(CLEANUP).await;
}

#[tokio::test]
async fn a_server_shutting_down_leaves_its_sessions_and_streams_to_the_others() {
    let baseline = Baseline::take().await;
    let store = Arc::new(MemorySessionStore::new());
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
    let a = replica("a", store.clone(), events.clone()).await;
    let b = replica("b", store.clone(), events.clone()).await;
    let id = raw_session(a.local_addr(), "2025-11-25").await;
    let whole = post(&a, &id, &call(1, "count", json!({"n": 2}))).await;
    let ids = whole.sse_ids();
    assert_eq!(ids.len(), 4, "{whole:?}");
    a.shutdown().await;
    assert!(store.load(&id).await.unwrap().is_some(), "the record outlives the server that made it");
    assert_eq!(text_of(&post(&b, &id, &call(2, "whoami", json!({}))).await), "b");
    let headers = [
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", id.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Last-Event-ID", ids[1].as_str()),
    ];
    let resumed = raw(b.local_addr(), "GET", "/mcp", &headers, "", SHORT).await;
    assert_eq!(resumed.sse_ids(), ids[2..], "the stream's events outlive it too");
    b.shutdown().await;
    baseline.assert_nothing_left(CLEANUP).await;
}

/// A server named `name` with the tools `ask` (elicits a `name`, answers `<server> was told
/// <name>`) and `announce` (adds a resource: `notifications/resources/list_changed` to every
/// session it holds).
async fn relaying_replica(
    name: &'static str,
    sessions: Arc<dyn SessionStore>,
    events: Arc<dyn EventStore>,
) -> HttpServer {
    let itself: Arc<std::sync::OnceLock<Server>> = Arc::default();
    let announcer = itself.clone();
    let server = Server::builder()
        .name(name)
        .version("1")
        .enable_resources()
        .tool("ask", "Ask for a name", json!({"type": "object"}), move |_args, ctx| async move {
            let schema = serde_json::from_value(json!({
                "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]
            }))
            .unwrap();
            let answer = ctx.elicit("Your name?", schema).await.map_err(|e| ToolError::failed(e.to_string()))?;
            let content = serde_json::to_value(answer.content).unwrap();
            Ok(text_result(format!("{name} was told {}", content["name"].as_str().unwrap_or("nothing"))))
        })
        .tool("announce", "Add a resource", json!({"type": "object"}), move |_args, _ctx| {
            let server = announcer.get().cloned();
            async move {
                let server = server.ok_or_else(|| ToolError::failed("not built yet"))?;
                let uri = format!("test://{name}/{}", server.resources().len());
                server.add_resource_text(mcpwire::proto::mcp_types::Resource::new(uri.clone(), uri), "new");
                Ok(text_result("announced"))
            }
        })
        .build()
        .unwrap();
    let _ = itself.set(server.clone());
    let config = HttpServerConfig::default().session_store(sessions).event_store(events);
    server.serve_http(config).await.unwrap()
}

/// Initializes a session whose client can answer elicitations, its `initialize` POSTed to
/// `addr` and its `notifications/initialized` to `then`; returns its id.
async fn eliciting_session(addr: std::net::SocketAddr, then: std::net::SocketAddr) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &init.to_string(), SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").unwrap().to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let headers = [BOTH, JSON, ("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    assert_eq!(raw(then, "POST", "/mcp", &headers, &note, SHORT).await.status, 202);
    id
}

/// An SSE response read as it comes (one event per chunk, as the server writes them).
struct OpenStream {
    tcp: tokio::net::TcpStream,
    text: String,
    taken: usize,
}

impl OpenStream {
    async fn open(addr: std::net::SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> OpenStream {
        use tokio::io::AsyncWriteExt;
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut head = format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n", body.len());
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.write_all(body.as_bytes()).await.unwrap();
        OpenStream { tcp, text: String::new(), taken: 0 }
    }

    /// The response head, once it has come.
    async fn head(&mut self) -> String {
        use tokio::io::AsyncReadExt;
        let deadline = tokio::time::Instant::now() + SHORT;
        while !self.text.contains("\r\n\r\n") {
            let mut buf = [0u8; 8192];
            match tokio::time::timeout_at(deadline, self.tcp.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => self.text.push_str(&String::from_utf8_lossy(&buf[..n])),
                other => panic!("no head ({other:?}) in {:?}", self.text),
            }
        }
        self.text.split("\r\n\r\n").next().unwrap().to_owned()
    }

    fn messages(&self) -> Vec<Value> {
        self.text
            .split('\n')
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect()
    }

    /// The next message (after those returned before) for which `wanted` holds; panics when
    /// none comes within SHORT.
    async fn next(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        use tokio::io::AsyncReadExt;
        let deadline = tokio::time::Instant::now() + SHORT;
        loop {
            let messages = self.messages();
            if let Some((at, found)) = messages.iter().enumerate().skip(self.taken).find(|(_, m)| wanted(m)) {
                self.taken = at + 1;
                return found.clone();
            }
            let mut buf = [0u8; 8192];
            match tokio::time::timeout_at(deadline, self.tcp.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => self.text.push_str(&String::from_utf8_lossy(&buf[..n])),
                other => panic!("no such message ({other:?}) in {:?}", self.text),
            }
        }
    }
}

fn session_headers(id: &str) -> [(&str, &str); 4] {
    [BOTH, JSON, ("Mcp-Session-Id", id), ("MCP-Protocol-Version", "2025-11-25")]
}

fn answer(id: &Value, name: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"name": name}}}).to_string()
}

/// A session store whose relays fail while `down` (Redis stopped between two requests).
struct RelayDown {
    inner: Arc<MemorySessionStore>,
    down: std::sync::atomic::AtomicBool,
}

impl SessionStore for RelayDown {
    fn save<'a>(&'a self, id: &'a str, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        self.inner.save(id, record, ttl)
    }
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        self.inner.load(id)
    }
    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        self.inner.touch(id, ttl)
    }
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        SessionStore::remove(&*self.inner, id)
    }
    fn relay<'a>(&'a self, replica: &'a str, message: &'a Relayed) -> StoreFuture<'a, bool> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Box::pin(std::future::ready(Err(StoreError::Unavailable("connection refused".into()))));
        }
        self.inner.relay(replica, message)
    }
    fn relayed<'a>(&'a self, replica: &'a str) -> StoreFuture<'a, Option<tokio::sync::mpsc::Receiver<Relayed>>> {
        self.inner.relayed(replica)
    }
    fn hold_stream<'a>(&'a self, id: &'a str, replica: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        self.inner.hold_stream(id, replica, ttl)
    }
    fn stream_holder<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<String>> {
        self.inner.stream_holder(id)
    }
}

#[tokio::test]
async fn an_elicitation_answered_through_another_server_reaches_the_tool_that_asked() {
    let baseline = Baseline::take().await;
    let store = Arc::new(MemorySessionStore::new());
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
    let a = relaying_replica("a", store.clone(), events.clone()).await;
    let b = relaying_replica("b", store.clone(), events.clone()).await;
    // As through a balancer: `notifications/initialized` goes to b, not to a, where the session
    // began (a counts its handshake complete at the first request it gets).
    let id = eliciting_session(a.local_addr(), b.local_addr()).await;

    for (asker, answerer, said) in [(&a, &b, "a was told Ada"), (&b, &a, "b was told Ada")] {
        // The second time the tool runs on b, which rebuilds the session from the store: its
        // copy may elicit as well as the original.
        let mut call_stream =
            OpenStream::open(asker.local_addr(), "POST", &session_headers(&id), &call(1, "ask", json!({}))).await;
        let asked = call_stream.next(|m| m["method"] == "elicitation/create").await;
        let wire_id = asked["id"].as_str().unwrap_or_else(|| panic!("a string id: {asked}")).to_owned();
        let (replica, n) = wire_id.split_once('-').unwrap();
        assert!(replica.len() == 8 && replica.bytes().all(|b| b.is_ascii_hexdigit()), "names its replica: {wire_id}");
        assert!(n.parse::<u64>().is_ok(), "{wire_id}");

        let r = post(answerer, &id, &answer(&asked["id"], "Ada")).await;
        assert_eq!(r.status, 202, "the other server takes the answer it did not ask for: {r:?}");
        let result = call_stream.next(|m| m["id"] == 1).await;
        assert_eq!(result["result"]["content"][0]["text"], said, "{result}");
    }
    a.shutdown().await;
    b.shutdown().await;
    baseline.assert_nothing_left(CLEANUP).await;
}

#[tokio::test]
async fn forged_and_misdirected_answers_are_dropped_and_harm_nothing_in_flight() {
    let baseline = Baseline::take().await;
    let memory = Arc::new(MemorySessionStore::new());
    let relaying = Arc::new(RelayDown { inner: memory.clone(), down: false.into() });
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
    let a = relaying_replica("a", memory.clone(), events.clone()).await;
    let b = relaying_replica("b", relaying.clone(), events.clone()).await;
    let id = eliciting_session(a.local_addr(), a.local_addr()).await;
    let other = eliciting_session(a.local_addr(), a.local_addr()).await;
    let ping = json!({"jsonrpc": "2.0", "id": 50, "method": "ping"}).to_string();
    for session in [&id, &other] {
        assert_eq!(post(&b, session, &ping).await.status, 200, "b holds a copy of each session");
    }

    let mut call_stream =
        OpenStream::open(a.local_addr(), "POST", &session_headers(&id), &call(1, "ask", json!({}))).await;
    let asked = call_stream.next(|m| m["method"] == "elicitation/create").await;
    let wire_id = asked["id"].as_str().unwrap().to_owned();
    let replica = wire_id.split_once('-').unwrap().0.to_owned();

    // An id naming a replica that does not exist: dropped by b (nobody listens under it).
    assert_eq!(post(&b, &id, &answer(&json!("deadbeef-1"), "Mallory")).await.status, 202);
    // Naming a's replica but no request of a's: dropped by a.
    assert_eq!(post(&b, &id, &answer(&json!(format!("{replica}-999")), "Mallory")).await.status, 202);
    // The right id, POSTed for another session: through b, then straight to a.
    assert_eq!(post(&b, &other, &answer(&asked["id"], "Mallory")).await.status, 202);
    assert_eq!(post(&a, &other, &answer(&asked["id"], "Mallory")).await.status, 202);
    // Not JSON-RPC at all: 400, as ever.
    assert_eq!(post(&b, &id, "{\"jsonrpc\":\"2.0\",\"id\":").await.status, 400);

    // The store cannot relay: the client is told (503 with a JSON-RPC error) and may retry.
    relaying.down.store(true, std::sync::atomic::Ordering::SeqCst);
    let r = post(&b, &id, &answer(&asked["id"], "Ada")).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32000, "{r:?}");
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("session store unavailable"), "{r:?}");
    relaying.down.store(false, std::sync::atomic::Ordering::SeqCst);

    // Still waiting, and still served: the session's other calls go on meanwhile.
    assert_eq!(post(&b, &id, &ping).await.status, 200);
    assert_eq!(post(&b, &id, &answer(&asked["id"], "Ada")).await.status, 202, "the retry");
    let result = call_stream.next(|m| m["id"] == 1).await;
    assert_eq!(result["result"]["content"][0]["text"], "a was told Ada", "only the real answer counts: {result}");
    assert!(
        !call_stream.messages().iter().any(|m| m.to_string().contains("Mallory")),
        "no forged answer reached the tool"
    );
    a.shutdown().await;
    b.shutdown().await;
    drop(call_stream);
    baseline.assert_nothing_left(CLEANUP).await;
}

#[tokio::test]
async fn a_message_for_the_standalone_stream_reaches_the_server_holding_it() {
    let baseline = Baseline::take().await;
    let store = Arc::new(MemorySessionStore::new());
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
    let a = relaying_replica("a", store.clone(), events.clone()).await;
    let b = relaying_replica("b", store.clone(), events.clone()).await;
    let c = relaying_replica("c", store.clone(), events.clone()).await;
    let id = eliciting_session(a.local_addr(), a.local_addr()).await;
    let get_headers =
        [("Accept", "text/event-stream"), ("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let mut standalone = OpenStream::open(c.local_addr(), "GET", &get_headers, "").await;
    // The stream is attached, and its holder recorded, before its head goes out.
    assert!(standalone.head().await.starts_with("HTTP/1.1 200"), "{:?}", standalone.text);
    assert_eq!(store.stream_holder(&id).await.unwrap().as_deref().map(str::len), Some(8), "c holds the GET");

    let r = post(&a, &id, &call(2, "announce", json!({}))).await;
    assert_eq!(text_of(&r), "announced");
    assert!(
        !r.sse_messages().iter().any(|m| m["method"] == "notifications/resources/list_changed"),
        "not on a's POST stream while c holds the GET: {r:?}"
    );
    let changed = standalone.next(|m| m["method"] == "notifications/resources/list_changed").await;
    assert_eq!(changed["jsonrpc"], "2.0");
    // From b, which rebuilds the session to serve the call: the same.
    assert_eq!(text_of(&post(&b, &id, &call(4, "announce", json!({}))).await), "announced");
    standalone.next(|m| m["method"] == "notifications/resources/list_changed").await;

    // The holder gone: a keeps what it makes for the next GET, as with one server.
    drop(standalone);
    c.shutdown().await;
    let r = post(&a, &id, &call(3, "announce", json!({}))).await;
    assert_eq!(text_of(&r), "announced");
    if !r.sse_messages().iter().any(|m| m["method"] == "notifications/resources/list_changed") {
        let mut here = OpenStream::open(a.local_addr(), "GET", &get_headers, "").await;
        here.next(|m| m["method"] == "notifications/resources/list_changed").await;
    }
    a.shutdown().await;
    b.shutdown().await;
    baseline.assert_nothing_left(CLEANUP).await;
}

#[tokio::test]
async fn a_request_left_unanswered_is_cancelled_under_the_id_the_client_knows() {
    let baseline = Baseline::take().await;
    let store = Arc::new(MemorySessionStore::new());
    let server = Server::builder()
        .name("a")
        .version("1")
        .client_request_timeout(Duration::from_millis(100))
        .tool("ask", "Ask for a name", json!({"type": "object"}), |_args, ctx| async move {
            let schema = serde_json::from_value(json!({"type": "object", "properties": {}})).unwrap();
            let outcome = ctx.elicit("Your name?", schema).await;
            Ok(text_result(if outcome.is_err() { "no answer" } else { "answered" }))
        })
        .build()
        .unwrap();
    let config = HttpServerConfig::default().session_store(store).event_store(Arc::new(MemoryEventStore::new(64)));
    let a = server.serve_http(config).await.unwrap();
    let id = eliciting_session(a.local_addr(), a.local_addr()).await;
    let mut call_stream =
        OpenStream::open(a.local_addr(), "POST", &session_headers(&id), &call(1, "ask", json!({}))).await;
    let asked = call_stream.next(|m| m["method"] == "elicitation/create").await;
    let result = call_stream.next(|m| m["id"] == 1).await;
    assert_eq!(result["result"]["content"][0]["text"], "no answer");
    // The cancellation goes on the call's stream, or, once that ended, to the standalone one.
    let cancelled = match call_stream.messages().into_iter().find(|m| m["method"] == "notifications/cancelled") {
        Some(cancelled) => cancelled,
        None => {
            let get_headers = [
                ("Accept", "text/event-stream"),
                ("Mcp-Session-Id", id.as_str()),
                ("MCP-Protocol-Version", "2025-11-25"),
            ];
            let mut standalone = OpenStream::open(a.local_addr(), "GET", &get_headers, "").await;
            standalone.next(|m| m["method"] == "notifications/cancelled").await
        }
    };
    assert_eq!(cancelled["params"]["requestId"], asked["id"], "{cancelled}");
    // The answer that comes too late is dropped; the session goes on.
    assert_eq!(post(&a, &id, &answer(&asked["id"], "Ada")).await.status, 202);
    assert_eq!(post(&a, &id, &json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}).to_string()).await.status, 200);
    a.shutdown().await;
    drop(call_stream);
    baseline.assert_nothing_left(CLEANUP).await;
}

#[tokio::test]
async fn a_standalone_stream_held_past_the_idle_timeout_keeps_its_records_in_the_store() {
    let baseline = Baseline::take().await;
    let store = Arc::new(MemorySessionStore::new());
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
    let idle = Duration::from_secs(1);
    let server = Server::builder().name("a").version("1").build().unwrap();
    let config =
        HttpServerConfig::default().session_store(store.clone()).event_store(events).session_idle_timeout(idle);
    let a = server.serve_http(config).await.unwrap();
    let id = raw_session(a.local_addr(), "2025-11-25").await;
    let get_headers =
        [("Accept", "text/event-stream"), ("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let mut standalone = OpenStream::open(a.local_addr(), "GET", &get_headers, "").await;
    assert!(standalone.head().await.starts_with("HTTP/1.1 200"), "{:?}", standalone.text);

    // Only listening, for three idle timeouts: both records are renewed while the GET is open.
    tokio::time::sleep(3 * idle).await;
    assert!(store.load(&id).await.unwrap().is_some(), "the session's record outlived its idle timeout");
    assert!(store.stream_holder(&id).await.unwrap().is_some(), "so did its holder");

    // The GET closed: the holder is no longer renewed and expires.
    drop(standalone);
    let expired = tokio::time::timeout(Duration::from_secs(10), async {
        while store.stream_holder(&id).await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    assert!(expired.await.is_ok(), "the renewal stopped with its stream");
    a.shutdown().await;
    baseline.assert_nothing_left(CLEANUP).await;
}
