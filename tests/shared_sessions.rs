//! Handshake-era sessions shared between HTTP servers through a session store and an event
//! store (the in-memory ones, so several servers of this process stand in for replicas): a
//! session initialized on one server is served by another that never saw its `initialize`,
//! its state changes reach the store, DELETE on any server ends it everywhere it is looked up,
//! a stream is resumed on another server with `Last-Event-ID`, and a store that cannot be
//! reached gets 503 with a JSON-RPC error body. Raw HTTP/1.1 over loopback. The same with
//! Redis, HAProxy and separate processes is tests/scale_out.rs (feature `redis`).

mod http_support;

use std::sync::Arc;
use std::time::Duration;

use http_support::*;
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{
    EventStore, HttpServer, HttpServerConfig, MemoryEventStore, MemorySessionStore, SessionRecord, SessionStore,
    StoreError, StoreFuture,
};
use serde_json::{json, Value};

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
    HttpServer::bind(config, move |transport| {
        let serving = server.serve(transport);
        async move {
            let _ = serving.await;
        }
    })
    .await
    .unwrap()
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
}

#[tokio::test]
async fn a_stream_answered_by_one_server_resumes_on_another() {
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
    let server = replica("a", Arc::new(Unreachable), Arc::new(MemoryEventStore::new(64))).await;
    let r = raw(server.local_addr(), "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32000);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("session store unavailable"), "{r:?}");
    assert_eq!(server.session_count(), 0, "the session is not kept");
    let r = post(&server, "0123456789abcdef0123456789abcdef", &call(1, "whoami", json!({}))).await;
    assert_eq!(r.status, 503, "an unknown id cannot be looked up: {r:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_shutting_down_leaves_its_sessions_and_streams_to_the_others() {
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
}
