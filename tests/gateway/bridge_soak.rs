//! A bounded soak of `mcp-bridge serve` (issue 36): rounds in which every kind of downstream
//! client calls at once through the bridge to real stdio upstreams — 2025-11-25 sessions over
//! Streamable HTTP, 2026-07-28 stateless clients, legacy HTTP+SSE sessions, and a stdio
//! downstream (a second bridge, `--listen stdio`, on the same configuration) — while one
//! upstream is crashed by its own tool (`die`), calls are abandoned mid-call (their connection
//! dropped while the upstream holds them), and a flood (hundreds of calls and sessions at once)
//! arrives.
//!
//! What it checks: every call got an answer or a clear error, counted by kind (none left
//! waiting past the hang guard, none answered with another call's text, none to the stable
//! upstream failed); and once the round is over, the bridge's RSS, file descriptors, threads,
//! downstream sessions and children are back to their level after a warm-up round, within
//! [`RSS_TOLERANCE_KIB`] for memory and exactly for the rest. Tokio's tasks are not observable
//! from outside the process (that needs `tokio_unstable`); the sessions gauge and the threads
//! stand for them.
//!
//! Bounded by count and by time: CI runs [`CI_ROUNDS`] rounds (well under a minute). The longer
//! mode runs rounds until `MCPWIRE_SOAK_SECS` seconds have passed and prints the figures
//! docs/reliability.md holds:
//! `MCPWIRE_SOAK_SECS=300 cargo test --test gateway bridge_soak::soak_every -- --nocapture`.

use crate::examples;
use crate::http_support;
use crate::serving;
use crate::support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_support::{raw, BOTH, JSON};
use mcpwire::client::{Client, ClientError, ClientOptions, EraPolicy};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use mcpwire::transport::stdio::{ChildCommand, Stderr};
use serde_json::{json, Map, Value};
use serving::{alive, children_of, ServingBridge};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Rounds of the CI run.
const CI_ROUNDS: usize = 3;
/// How far the bridge's RSS may end above its level after the warm-up round: the allocator
/// keeps some freed memory for reuse.
const RSS_TOLERANCE_KIB: u64 = 16 * 1024;
/// The hang guard of every call and wait: a call not answered by then counts as unanswered
/// (and fails the test), a wait not over by then fails it.
const GUARD: Duration = Duration::from_secs(60);

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// Answered with its own text.
    Ok,
    /// Answered with another call's text.
    Crossed,
    /// A tool error result (`isError`), by the start of its text.
    ToolError(String),
    /// A JSON-RPC error or a failure of the client, by kind.
    Error(String),
    /// No answer within [`GUARD`].
    Unanswered,
}

/// Calls made, by client kind, upstream and outcome.
#[derive(Default)]
struct Tally(Mutex<BTreeMap<(String, String, Outcome), u64>>);

impl Tally {
    fn add(&self, kind: &str, upstream: &str, outcome: Outcome) {
        *self.0.lock().unwrap().entry((kind.to_owned(), upstream.to_owned(), outcome)).or_default() += 1;
    }

    fn snapshot(&self) -> BTreeMap<(String, String, Outcome), u64> {
        self.0.lock().unwrap().clone()
    }
}

/// The kind of a failure, from its message: what an operator would count apart.
fn error_kind(message: &str) -> String {
    let kinds = [
        ("went away", "upstream went away mid-call"),
        ("is reconnecting", "upstream restarting"),
        ("is starting", "upstream restarting"),
        ("is retrying", "upstream restarting"),
        ("is failed", "upstream failed"),
        ("timed out", "timeout"),
        ("not found", "not found"),
    ];
    let kind = kinds.iter().find(|(needle, _)| message.contains(needle)).map(|(_, kind)| *kind);
    kind.map(str::to_owned).unwrap_or_else(|| format!("other: {}", message.chars().take(120).collect::<String>()))
}

fn args(text: &str) -> Option<Map<String, Value>> {
    json!({"text": text}).as_object().cloned()
}

/// The outcome of a call whose text should come back as `tag`.
fn outcome(
    answer: Result<Result<mcpwire::proto::mcp_types::CallToolResult, ClientError>, tokio::time::error::Elapsed>,
    tag: &str,
) -> Outcome {
    match answer {
        Err(_) => Outcome::Unanswered,
        Ok(Err(e)) => Outcome::Error(error_kind(&e.to_string())),
        Ok(Ok(result)) => {
            let value = serde_json::to_value(&result).unwrap();
            let text = value["content"][0]["text"].as_str().unwrap_or_default().to_owned();
            if result.is_error == Some(true) {
                Outcome::ToolError(error_kind(&text))
            } else if text == tag {
                Outcome::Ok
            } else {
                Outcome::Crossed
            }
        }
    }
}

/// Calls `tool` of `upstream` on `client` with `text`, and counts how it ended. The echo
/// server answers the text; the fake server (`crashy`) the tool's name and its arguments.
async fn counted_call<T: mcpwire::transport::Transport>(
    client: &Client<T>,
    tally: &Tally,
    kind: &str,
    upstream: &str,
    tool: &str,
    text: String,
) {
    let answer = tokio::time::timeout(
        GUARD,
        client.call_tool(format!("mcp__{upstream}__{tool}"), args(&text), Default::default()),
    )
    .await;
    let expected = if upstream == "crashy" { format!("{tool} {{\"text\": {}}}", json!(text)) } else { text };
    tally.add(kind, upstream, outcome(answer, &expected));
}

async fn http_client(url: &str, era: EraPolicy) -> Client<HttpClientTransport> {
    let transport = HttpClientTransport::new(HttpClientConfig::new(url)).unwrap();
    Client::connect(transport, ClientOptions::default().with_era(era)).await.unwrap()
}

async fn sse_client(url: &str) -> Client<HttpClientTransport> {
    let transport = HttpClientTransport::new(HttpClientConfig::new(url).legacy(true)).unwrap();
    Client::connect(transport, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap()
}

/// What the bridge holds now.
#[derive(Debug, Clone)]
struct Held {
    rss_kib: u64,
    peak_rss_kib: u64,
    /// The open descriptors by what they are (`socket`, `pipe`, `anon_inode:[eventpoll]` …).
    fd_kinds: BTreeMap<String, usize>,
    threads: u64,
    children: usize,
    sessions: i64,
}

fn status_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("no {field}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn held(bridge: &ServingBridge) -> Held {
    let pid = bridge.pid();
    // Read before the metrics request, whose connection would count.
    let (rss_kib, peak_rss_kib) = (status_field(pid, "VmRSS:"), status_field(pid, "VmHWM:"));
    let mut fd_kinds = BTreeMap::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten() {
        let target = std::fs::read_link(fd.path()).map(|t| t.display().to_string()).unwrap_or_default();
        *fd_kinds.entry(target.split(':').next().unwrap_or_default().to_owned()).or_default() += 1;
    }
    let (threads, children) = (status_field(pid, "Threads:"), children_of(pid).len());
    let (_, metrics) = serving::http_get(&bridge.url, "/metrics", None);
    let sessions = metrics
        .lines()
        .find_map(|l| l.strip_prefix("mcp_bridge_downstream_sessions "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no session gauge in\n{metrics}"));
    Held { rss_kib, peak_rss_kib, fd_kinds, threads, children, sessions }
}

/// Whether both upstreams are ready.
fn both_ready(bridge: &ServingBridge) -> bool {
    let (_, details) = serving::http_get(&bridge.url, "/readyz/details", None);
    details.matches("\"state\":\"ready\"").count() == 2
}

async fn until_ready(bridge: &ServingBridge) {
    let start = Instant::now();
    while !both_ready(bridge) {
        assert!(
            start.elapsed() < GUARD,
            "the upstreams did not come back: {:?}",
            serving::http_get(&bridge.url, "/readyz/details", None)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the bridge has no downstream session and `children` children, both upstreams
/// ready, and what it holds the same in readings 500 ms apart over 2 s (a crashed upstream's
/// old pipes are closed a second after it went away); gives what it holds then.
async fn settled(bridge: &ServingBridge, children: usize) -> Held {
    let start = Instant::now();
    let mut last: Option<Held> = None;
    let mut same_since = 0;
    loop {
        let now = held(bridge);
        let same = last
            .as_ref()
            .is_some_and(|l| (&l.fd_kinds, l.threads, l.children) == (&now.fd_kinds, now.threads, now.children));
        same_since = if same { same_since + 1 } else { 0 };
        if now.sessions == 0 && now.children == children && both_ready(bridge) && same_since >= 4 {
            return now;
        }
        assert!(
            start.elapsed() < GUARD,
            "the bridge did not settle: {now:?}, children {:?}",
            children_of(bridge.pid())
        );
        last = Some(now);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A 2025-11-25 session opened with raw requests (within [`GUARD`]); returns its id.
async fn open_session(addr: SocketAddr) -> String {
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &http_support::initialize_body("2025-11-25"), GUARD).await;
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let headers = [BOTH, JSON, ("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let r = raw(addr, "POST", "/mcp", &headers, &note, GUARD).await;
    assert_eq!(r.status, 202, "{r:?}");
    id
}

/// POSTs `body` with `headers` and drops the connection once the response has begun (the call
/// is then held by the upstream, abandoned by its client).
async fn abandon(addr: SocketAddr, headers: &[(&str, &str)], body: &str) {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    tcp.write_all(format!("{head}\r\n{body}").as_bytes()).await.unwrap();
    let mut first = [0u8; 64];
    let read = tokio::time::timeout(GUARD, tcp.read(&mut first)).await.expect("the response begins");
    assert!(read.unwrap() > 0);
    drop(tcp);
}

fn hang_call(id: u64, meta: Option<Value>) -> String {
    let mut params = json!({"name": "mcp__crashy__hang", "arguments": {}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// One round: every kind of client at once, the crash, the abandoned calls and the flood.
async fn round(bridge: &ServingBridge, config: &str, tally: &Arc<Tally>, n: usize) {
    // The previous round's crash restarted first: this round's `die` then meets a live child.
    until_ready(bridge).await;
    let url = bridge.url.clone();
    let sse_url = url.replace("/mcp", "/sse");
    let addr: SocketAddr = ([127, 0, 0, 1], bridge.port()).into();
    let mut work = tokio::task::JoinSet::new();
    // 2025-11-25 sessions over Streamable HTTP, 2026-07-28 clients, legacy SSE sessions.
    for (kind, clients, calls) in [("session", 4, 20), ("2026", 4, 20), ("sse", 2, 20)] {
        for c in 0..clients {
            let (url, sse_url, tally) = (url.clone(), sse_url.clone(), tally.clone());
            work.spawn(async move {
                let client = match kind {
                    "session" => http_client(&url, EraPolicy::Legacy).await,
                    "2026" => http_client(&url, EraPolicy::Auto).await,
                    _ => sse_client(&sse_url).await,
                };
                for i in 0..calls {
                    let upstream = if i % 5 == 4 { "crashy" } else { "echo" };
                    counted_call(&client, &tally, kind, upstream, "echo", format!("{kind} {n}.{c}.{i}")).await;
                }
                client.close().await.unwrap();
            });
        }
    }
    // A stdio downstream: its own bridge, whose children go with it.
    {
        let (config, tally) = (config.to_owned(), tally.clone());
        work.spawn(async move {
            let command = ChildCommand::new(examples::bin_path("mcp-bridge"))
                .args(["serve", "--listen", "stdio", "--config", &config])
                .stderr(Stderr::Discard);
            let client = Client::spawn(command, ClientOptions::default()).await.unwrap();
            let pid = client.transport().child_pid().unwrap();
            for i in 0..10 {
                let upstream = if i % 5 == 4 { "crashy" } else { "echo" };
                counted_call(&client, &tally, "stdio", upstream, "echo", format!("stdio {n}.{i}")).await;
            }
            let children: Vec<u32> = children_of(pid).into_iter().map(|(pid, _)| pid).collect();
            client.close().await.unwrap();
            let start = Instant::now();
            while alive(pid) || children.iter().any(|c| alive(*c)) {
                assert!(start.elapsed() < GUARD, "the stdio bridge or its children outlived it");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
    }
    // The crash: `die` exits the shared `crashy` child mid-call; it is restarted.
    {
        let (url, tally) = (url.clone(), tally.clone());
        work.spawn(async move {
            let client = http_client(&url, EraPolicy::Legacy).await;
            counted_call(&client, &tally, "crash", "crashy", "die", "dies".to_owned()).await;
            client.close().await.unwrap();
        });
    }
    // Abandoned calls: `hang` is never answered; each connection is dropped once its response
    // began. In a session (then ended by DELETE, which cancels what it runs), and stateless
    // (the dropped connection cancels it).
    for a in 0..4 {
        work.spawn(async move {
            let session = open_session(addr).await;
            let headers = [BOTH, JSON, ("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
            abandon(addr, &headers, &hang_call(a, None)).await;
            let r = raw(addr, "DELETE", "/mcp", &headers, "", GUARD).await;
            assert!(matches!(r.status, 200 | 204), "{r:?}");
        });
        work.spawn(async move {
            let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}});
            let headers = [
                BOTH,
                JSON,
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "mcp__crashy__hang"),
            ];
            abandon(addr, &headers, &hang_call(a, Some(meta))).await;
        });
    }
    // The flood: 256 calls at once on one 2026-07-28 client, 64 sessions opened and closed at once.
    {
        let (url, tally) = (url.clone(), tally.clone());
        work.spawn(async move {
            let client = Arc::new(http_client(&url, EraPolicy::Auto).await);
            let mut calls = tokio::task::JoinSet::new();
            for i in 0..256 {
                let (client, tally) = (client.clone(), tally.clone());
                calls.spawn(async move {
                    counted_call(&client, &tally, "flood", "echo", "echo", format!("flood {n}.{i}")).await;
                });
            }
            while calls.join_next().await.is_some() {}
            client.close().await.unwrap();
        });
    }
    for _ in 0..64 {
        work.spawn(async move {
            let session = open_session(addr).await;
            let headers = [BOTH, JSON, ("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
            let r = raw(addr, "DELETE", "/mcp", &headers, "", GUARD).await;
            assert!(matches!(r.status, 200 | 204), "{r:?}");
        });
    }
    while let Some(done) = work.join_next().await {
        done.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_every_client_kind_with_crashes_abandoned_calls_and_a_flood() {
    let dir = std::env::temp_dir().join(format!("mcpwire-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let echo = examples::example_path("echo_server").display().to_string();
    let fake = support::repo_path("tests/fixtures/fake_server.py").display().to_string();
    let toml =
        format!("[mcp_servers.echo]\ncommand = {echo:?}\n\n[mcp_servers.crashy]\ncommand = \"python3\"\nargs = [{fake:?}, \"plain\"]\n");
    std::fs::write(dir.join("config.toml"), toml).unwrap();
    let config = dir.join("config.toml").display().to_string();
    // Calls the upstream never answers end by the bridge's own timeout if nothing cancels them.
    let bridge = ServingBridge::start(&["--config", &config, "--timeout", "20"]);
    let tally = Arc::new(Tally::default());

    let started = Instant::now();
    round(&bridge, &config, &tally, 0).await;
    let baseline = settled(&bridge, 2).await;
    let secs: Option<u64> = std::env::var("MCPWIRE_SOAK_SECS").ok().and_then(|s| s.parse().ok());
    let mut rounds = 1;
    let mut peak = baseline.clone();
    loop {
        let more = match secs {
            Some(secs) => started.elapsed() < Duration::from_secs(secs),
            None => rounds < 1 + CI_ROUNDS,
        };
        if !more {
            break;
        }
        round(&bridge, &config, &tally, rounds).await;
        rounds += 1;
        let now = held(&bridge);
        if now.rss_kib > peak.rss_kib {
            peak = now;
        }
    }
    let end = settled(&bridge, 2).await;

    let counts = tally.snapshot();
    let total: u64 = counts.values().sum();
    println!("soak: {rounds} rounds (the first a warm-up) in {:.1} s, {total} calls", started.elapsed().as_secs_f64());
    for ((kind, upstream, outcome), count) in &counts {
        println!("  {kind:8} {upstream:7} {outcome:?}: {count}");
    }
    println!(
        "  bridge after warm-up: {baseline:?}\n  bridge at the end:    {end:?}\n  highest RSS seen between rounds: {} KiB; VmHWM {} KiB",
        peak.rss_kib, end.peak_rss_kib
    );

    let count = |keep: &dyn Fn(&str, &Outcome) -> bool| -> u64 {
        counts.iter().filter(|((_, upstream, outcome), _)| keep(upstream, outcome)).map(|(_, c)| c).sum()
    };
    assert_eq!(count(&|_, o| *o == Outcome::Unanswered), 0, "calls left without an answer: {counts:?}");
    assert_eq!(count(&|_, o| *o == Outcome::Crossed), 0, "answers to another call: {counts:?}");
    assert_eq!(count(&|u, o| u == "echo" && *o != Outcome::Ok), 0, "the stable upstream failed calls: {counts:?}");
    let other = |o: &Outcome| matches!(o, Outcome::Error(k) | Outcome::ToolError(k) if k.starts_with("other"));
    assert_eq!(count(&|_, o| other(o)), 0, "errors of no known kind: {counts:?}");
    // Every `die` failed its call, naming the upstream that went away.
    let died = counts.iter().filter(|((kind, _, _), _)| kind == "crash");
    assert!(
        died.clone().all(|((_, _, o), _)| *o == Outcome::Error("upstream went away mid-call".to_owned())),
        "{counts:?}"
    );
    assert_eq!(died.map(|(_, c)| c).sum::<u64>(), rounds as u64);

    assert!(end.rss_kib <= baseline.rss_kib + RSS_TOLERANCE_KIB, "RSS grew: {baseline:?} -> {end:?}");
    assert_eq!(end.fd_kinds, baseline.fd_kinds, "file descriptors: {baseline:?} -> {end:?}");
    assert_eq!(end.threads, baseline.threads, "threads: {baseline:?} -> {end:?}");
    assert_eq!((end.children, end.sessions), (2, 0), "{end:?}");
}

/// The bound on the bridge's memory with its default session cap (10,000) full: documented in
/// docs/security.md (`max_sessions`).
const FULL_SESSIONS_RSS_BOUND_KIB: u64 = 192 * 1024;

/// `initialize` requests POSTed one after another on a kept-alive connection to `addr`, each
/// opening a session (or refused): the statuses, with the `Retry-After` of each refusal.
async fn initialize_many(addr: SocketAddr, count: usize) -> Vec<(u16, Option<String>)> {
    use http_body_util::BodyExt;
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(conn);
    let body = http_support::initialize_body("2025-11-25");
    let mut seen = Vec::with_capacity(count);
    for _ in 0..count {
        let request = hyper::Request::post("/mcp")
            .header("Host", addr.to_string())
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(http_body_util::Full::new(hyper::body::Bytes::from(body.clone())))
            .unwrap();
        sender.ready().await.unwrap();
        let response = tokio::time::timeout(GUARD, sender.send_request(request)).await.unwrap().unwrap();
        let status = response.status().as_u16();
        let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
        let text = tokio::time::timeout(GUARD, response.into_body().collect()).await.unwrap().unwrap().to_bytes();
        let text = String::from_utf8_lossy(&text);
        match status {
            200 => assert!(text.contains("\"protocolVersion\""), "{text}"),
            503 => assert!(text.contains("too many sessions (the limit max_sessions = 10000)"), "{text}"),
            _ => panic!("{status}: {text}"),
        }
        seen.push((status, retry));
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_sessions_keep_the_bridge_under_its_memory_bound() {
    let echo = examples::example_path("echo_server").display().to_string();
    let bridge = ServingBridge::start(&["--", &echo]);
    let addr: SocketAddr = ([127, 0, 0, 1], bridge.port()).into();
    let before = held(&bridge);
    // 20,000 `initialize` on 32 kept-alive connections: the first 10,000 (the default cap) open
    // sessions, the rest are refused, each with Retry-After.
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..32 {
        opening.spawn(initialize_many(addr, 625));
    }
    let mut seen = Vec::new();
    while let Some(done) = opening.join_next().await {
        seen.extend(done.unwrap());
    }
    let opened = seen.iter().filter(|(status, _)| *status == 200).count();
    let refused: Vec<_> = seen.iter().filter(|(status, _)| *status == 503).collect();
    assert_eq!((opened, refused.len()), (10_000, 10_000));
    assert!(refused.iter().all(|(_, retry)| retry.as_deref() == Some("5")), "each refusal says when to retry");
    let full = held(&bridge);
    println!(
        "20,000 initialize: {opened} sessions held, {} refused; bridge RSS {} KiB before, {} KiB after, peak {} KiB",
        refused.len(),
        before.rss_kib,
        full.rss_kib,
        full.peak_rss_kib
    );
    assert_eq!(full.sessions, 10_000, "{full:?}");
    assert!(full.peak_rss_kib < FULL_SESSIONS_RSS_BOUND_KIB, "{full:?}");
    // Still serving: a call on a new 2026-07-28 client (no session needed).
    let client =
        http_client(&bridge.url, EraPolicy::Adopt(mcpwire::proto::version::ProtocolVersion::V2026_07_28)).await;
    let answer = client.call_tool("echo", args("after 20,000"), Default::default()).await.unwrap();
    assert_eq!(serde_json::to_value(&answer).unwrap()["content"][0]["text"], "after 20,000");
}
