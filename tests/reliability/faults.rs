//! Faults over real processes and sockets: a stdio child SIGKILLed mid-call and mid-write of a
//! large frame, a child that stops reading its stdin, one that floods stderr and stdout noise
//! (`tests/fixtures/fake_server.py`); over HTTP, a client that vanishes mid-stream (the
//! handler is cancelled, the session freed: counted), sessions expiring under load, and a
//! server restarting under a connected client. In each, another connection is served
//! meanwhile, and the test ends with no child process, zombie or fd of ours left behind.
//!
//! Elsewhere: the TCP connection cut mid-SSE and resumed with `Last-Event-ID` is
//! `tests/http_client.rs` (`client_resumes_a_dropped_stream_without_losing_or_repeating_events`,
//! `server_replays_a_dropped_post_stream_after_last_event_id`); a child exiting mid-call,
//! `tests/client_bad_servers.rs`; a dead child restarted by the connection set,
//! `tests/connection_set.rs` (`a_fake_server_that_dies_is_restarted_with_its_tools`).

use crate::http_support;
use crate::reliability;
use crate::support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_support::{initialize_body, raw, raw_session, BOTH, JSON, SHORT};
use mcpwire::client::{Client, ClientOptions, EraPolicy};
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock};
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use mcpwire::transport::stdio::{ChildCommand, StdioTransport};
use reliability::Baseline;
use serde_json::{json, Map, Value};
use tokio::io::AsyncWriteExt;

/// A generous bound for what must happen "soon" on a loaded machine.
const BOUND: Duration = Duration::from_secs(20);

fn fake() -> ChildCommand {
    let script = support::repo_path("tests/fixtures/fake_server.py");
    ChildCommand::new("python3").arg(script.to_string_lossy()).arg("plain")
}

async fn connect() -> Arc<Client<StdioTransport>> {
    Arc::new(Client::spawn(fake(), ClientOptions::default()).await.expect("connects to the fake server"))
}

fn args(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

fn text(result: &CallToolResult) -> &str {
    match result.content.as_slice() {
        [ContentBlock::Text(t)] => &t.text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

/// The other connection is served: an echo call answered within [`BOUND`].
async fn other_is_served(other: &Client<StdioTransport>, n: usize) {
    let result = tokio::time::timeout(BOUND, other.call_tool("echo", args(json!({"n": n})), Default::default()))
        .await
        .expect("the other connection answers")
        .unwrap();
    assert_eq!(text(&result), format!(r#"echo {{"n": {n}}}"#));
}

fn sigkill(pid: u32) {
    let status = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

/// Bytes process `pid` has written (`wchar` of /proc/PID/io).
fn written(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("wchar: ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

#[tokio::test]
async fn a_child_sigkilled_mid_call_fails_its_calls_at_once() {
    let baseline = Baseline::take().await;
    let (dying, other) = (connect().await, connect().await);
    let pid = dying.transport().child_pid().unwrap();
    let waiting: Vec<_> = (0..5)
        .map(|_| {
            let dying = dying.clone();
            tokio::spawn(async move { dying.call_tool("hang", None, Default::default()).await })
        })
        .collect();
    // The calls are in the child's hands once it has answered a call sent after them.
    dying.call_tool("echo", None, Default::default()).await.unwrap();
    sigkill(pid);
    for call in waiting {
        let err = tokio::time::timeout(BOUND, call).await.expect("no hang").unwrap().unwrap_err();
        assert!(err.is_server_exit(), "{err:?}");
        assert!(err.to_string().contains("signal: 9"), "{err}");
    }
    let err = tokio::time::timeout(BOUND, dying.ping()).await.expect("no hang").unwrap_err();
    assert!(err.is_disconnected(), "{err:?}");
    other_is_served(&other, 1).await;
    other.close().await.unwrap();
    dying.close().await.unwrap();
    drop((dying, other));
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test]
async fn a_child_sigkilled_mid_write_of_a_large_frame_fails_that_call_and_nothing_else() {
    let baseline = Baseline::take().await;
    let (dying, other) = (connect().await, connect().await);
    let pid = dying.transport().child_pid().unwrap();
    let before = written(pid);
    let call = {
        let dying = dying.clone();
        tokio::spawn(
            async move { dying.call_tool("half", args(json!({"bytes": 3_000_000})), Default::default()).await },
        )
    };
    // Half of a 3 MB answer is on the pipe (or in our buffer) before the kill.
    support::wait_until(BOUND, "the child wrote half of its frame", || written(pid) >= before + 1_500_000).await;
    sigkill(pid);
    let err = tokio::time::timeout(BOUND, call).await.expect("no hang").unwrap().unwrap_err();
    assert!(err.is_server_exit(), "{err:?}");
    other_is_served(&other, 2).await;
    other.close().await.unwrap();
    dying.close().await.unwrap();
    drop((dying, other));
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_stops_reading_blocks_only_its_own_connection() {
    let baseline = Baseline::take().await;
    let (deaf, other) = (connect().await, connect().await);
    // After this call the child never reads its stdin again (the call is never answered). Its
    // progress says the child has read it: only then do the calls that must wait go out (sent
    // at once, some could reach the child before it, and be answered).
    let (reading_stopped, stopped) = tokio::sync::oneshot::channel();
    let reading_stopped = std::sync::Mutex::new(Some(reading_stopped));
    let deafening = {
        let deaf = deaf.clone();
        tokio::spawn(async move {
            let options =
                mcpwire::client::CallOptions::default().with_timeout(Duration::from_secs(3)).with_progress(move |_| {
                    if let Some(tx) = reading_stopped.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                });
            deaf.call_tool("deaf", None, options).await
        })
    };
    tokio::time::timeout(BOUND, stopped).await.expect("the child read the deaf call").unwrap();
    // 64 MiB of calls: far more than a pipe and our outgoing queue hold, so our writes to it
    // wait. Each call gives up after 3 s.
    let big = "b".repeat(256 * 1024);
    let stuck: Vec<_> = (0..256)
        .map(|_| {
            let (deaf, big) = (deaf.clone(), big.clone());
            tokio::spawn(async move {
                deaf.call_tool(
                    "echo",
                    args(json!({"big": big})),
                    mcpwire::client::CallOptions::default().with_timeout(Duration::from_secs(3)),
                )
                .await
            })
        })
        .collect();
    // Meanwhile the other connection answers.
    for n in 0..50 {
        other_is_served(&other, n).await;
    }
    let started = Instant::now();
    for call in stuck {
        let outcome = tokio::time::timeout(BOUND, call).await.expect("a stuck call ends by its timeout").unwrap();
        assert!(outcome.unwrap_err().is_timeout(), "the call times out");
    }
    assert!(deafening.await.unwrap().unwrap_err().is_timeout());
    assert!(started.elapsed() < BOUND);
    // Closing it ends the child: the flush of what is queued gets the grace period (2 s), then
    // SIGTERM. What could not be flushed is reported.
    let closed = tokio::time::timeout(BOUND, deaf.close()).await.expect("close does not wait on the full pipe");
    assert!(closed.is_err(), "the unflushed calls are reported");
    other.close().await.unwrap();
    drop((deaf, other));
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test]
async fn a_child_flooding_stderr_and_stdout_noise_is_still_answered() {
    let baseline = Baseline::take().await;
    let (noisy, other) = (connect().await, connect().await);
    for round in 0..3 {
        let call = noisy.call_tool(
            "noise",
            args(json!({"stderr_bytes": 16 * 1024 * 1024, "lines": 20_000, "round": round})),
            Default::default(),
        );
        let result = tokio::time::timeout(BOUND, call).await.expect("answered despite the noise").unwrap();
        assert!(text(&result).starts_with("noise "), "{}", text(&result));
        other_is_served(&other, round).await;
    }
    noisy.close().await.unwrap();
    other.close().await.unwrap();
    drop((noisy, other));
    baseline.assert_nothing_left(BOUND).await;
}

/// A server whose `wait` tool runs until cancelled, counting the handlers alive in `running`.
fn waiting_server(running: Arc<AtomicUsize>) -> Server {
    struct Alive(Arc<AtomicUsize>);
    impl Drop for Alive {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    Server::builder()
        .name("waiting")
        .version("1")
        .tool("wait", "Never answers", json!({"type": "object"}), move |_args, _ctx| {
            running.fetch_add(1, Ordering::SeqCst);
            let alive = Alive(running.clone());
            async move {
                let _alive = alive;
                std::future::pending::<()>().await;
                Ok(text_result("never"))
            }
        })
        .tool("echo", "Answers its text", json!({"type": "object"}), |args, _ctx| async move {
            Ok(text_result(args.get("text").and_then(Value::as_str).unwrap_or_default()))
        })
        .build()
        .unwrap()
}

async fn waiting_http(config: HttpServerConfig, running: Arc<AtomicUsize>) -> HttpServer {
    let definition = waiting_server(running);
    definition.serve_http(config).await.unwrap()
}

async fn wait_for_count(what: &str, count: impl Fn() -> usize, want: usize) {
    let started = Instant::now();
    while count() != want {
        assert!(started.elapsed() < BOUND, "{what}: {} where {want} was awaited", count());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_client_vanishing_mid_stream_frees_its_handler_and_its_session() {
    let baseline = Baseline::take().await;
    let running = Arc::new(AtomicUsize::new(0));
    let config = HttpServerConfig::default().session_idle_timeout(Duration::from_millis(300));
    let server = waiting_http(config, running.clone()).await;
    let addr = server.local_addr();

    // 2026-07-28: the exchange is the POST; a client gone before its answer cancels the call.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait", "arguments": {}, "_meta": meta}});
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "wait")];
    for _ in 0..10 {
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let body = call.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        tcp.write_all(format!("{head}\r\n{body}").as_bytes()).await.unwrap();
        wait_for_count("the handler started", || running.load(Ordering::SeqCst), 1).await;
        drop(tcp);
        wait_for_count("the handler of a vanished 2026 client is dropped", || running.load(Ordering::SeqCst), 0).await;
    }

    // A session: the client opens its call's SSE stream and vanishes; the session lives on
    // (its answer could be resumed) until it is idle past its timeout; then it is freed and
    // what still runs for it is cancelled (nobody could receive the answer).
    let id = raw_session(addr, "2025-11-25").await;
    assert_eq!(server.session_count(), 1);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait", "arguments": {}}});
    let session = [BOTH, JSON, ("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    // raw() waits a moment for the stream and then drops the connection.
    let r = raw(addr, "POST", "/mcp", &session, &call.to_string(), Duration::from_millis(300)).await;
    assert_eq!(r.status, 200);
    wait_for_count("the session's handler ran", || running.load(Ordering::SeqCst), 1).await;
    wait_for_count("the idle session is ended", || server.session_count(), 0).await;
    wait_for_count("the ended session's handler is dropped", || running.load(Ordering::SeqCst), 0).await;
    let r = raw(addr, "POST", "/mcp", &session, &call.to_string(), SHORT).await;
    assert_eq!(r.status, 404, "the session is gone");
    server.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_expire_under_load_and_the_active_ones_carry_on() {
    let baseline = Baseline::take().await;
    let running = Arc::new(AtomicUsize::new(0));
    let config = HttpServerConfig::default().session_idle_timeout(Duration::from_millis(400));
    let server = Arc::new(waiting_http(config, running).await);
    let addr = server.local_addr();
    // 20 idle sessions, opened raw, and 10 clients calling without pause.
    let idle: Vec<String> = {
        let mut ids = Vec::new();
        for _ in 0..20 {
            ids.push(raw_session(addr, "2025-11-25").await);
        }
        ids
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut active = tokio::task::JoinSet::new();
    for c in 0..10 {
        let (url, stop) = (server.url(), stop.clone());
        active.spawn(async move {
            let transport = HttpClientTransport::new(HttpClientConfig::new(url).open_get_stream(false)).unwrap();
            let options = ClientOptions::default().with_era(EraPolicy::Legacy);
            let client = Client::connect(transport, options).await.unwrap();
            let mut calls = 0;
            while !stop.load(Ordering::SeqCst) || calls == 0 {
                let text_arg = format!("{c}/{calls}");
                let result =
                    client.call_tool("echo", args(json!({"text": text_arg})), Default::default()).await.unwrap();
                assert_eq!(text(&result), text_arg);
                calls += 1;
            }
            client.close().await.unwrap();
            calls
        });
    }
    // The idle ones go; the active ten stay.
    wait_for_count("only the active sessions are left", || server.session_count(), 10).await;
    stop.store(true, Ordering::SeqCst);
    let mut calls = 0;
    while let Some(done) = active.join_next().await {
        calls += done.unwrap();
    }
    assert!(calls >= 10);
    for id in &idle {
        let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}).to_string();
        let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Mcp-Session-Id", id)], &ping, SHORT).await;
        assert_eq!(r.status, 404, "an expired session is answered 404");
    }
    Arc::try_unwrap(server).unwrap().shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}

#[tokio::test]
async fn a_server_restarting_under_a_connected_client_is_a_clear_error_then_a_new_session() {
    let baseline = Baseline::take().await;
    let running = Arc::new(AtomicUsize::new(0));
    let first = waiting_http(HttpServerConfig::default(), running.clone()).await;
    let addr = first.local_addr();
    let transport = HttpClientTransport::new(HttpClientConfig::new(first.url()).open_get_stream(false)).unwrap();
    let client = Client::connect(transport, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();
    assert_eq!(
        text(&client.call_tool("echo", args(json!({"text": "before"})), Default::default()).await.unwrap()),
        "before"
    );
    first.shutdown().await;
    // While it is down: a clear error, not a hang.
    let err = tokio::time::timeout(BOUND, client.call_tool("echo", args(json!({"text": "down"})), Default::default()))
        .await
        .expect("no hang while the server is down")
        .unwrap_err();
    assert!(!err.to_string().is_empty());
    // Back on the same port: the old session is unknown there (404), told apart.
    let second = waiting_http(HttpServerConfig::default().bind(addr), running).await;
    let err = tokio::time::timeout(BOUND, client.call_tool("echo", args(json!({"text": "after"})), Default::default()))
        .await
        .expect("no hang after the restart")
        .unwrap_err();
    let expired = matches!(&err, mcpwire::client::ClientError::Transport(e) if e.is_session_expired());
    assert!(expired, "the old session is reported expired: {err:?}");
    client.close().await.unwrap();
    drop(client);
    // A new connection gets a new session.
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT).await;
    assert_eq!(r.status, 200);
    second.shutdown().await;
    baseline.assert_nothing_left(BOUND).await;
}
