//! Load: many `tools/call` issued at once through the mcpwire client on every transport — a
//! stdio child (`examples/echo_server`), the in-process pair, Streamable HTTP with a session,
//! stateless 2026-07-28 HTTP, the legacy HTTP+SSE transport, and `mcp-bridge serve` (its
//! embedded echo upstream) as a child process — with every call's argument tagged, so that
//! each answer is checked to be its own: 0 lost, 0 duplicated, 0 crossed. Where the server runs
//! in this process it also counts, per tag, how often the tool ran (exactly once each).
//!
//! The loads ([`LOADS`]): 10,000 calls of 16 B, 1,000 of 64 KiB, 64 of 1 MiB (a 10,000 × 1 KiB
//! load behaved as the 16 B one and cost CI most of a minute more).
//! All of a load's calls are spawned before the first is awaited; the client keeps at most
//! `session::SessionLimits::max_outgoing_in_flight` (1,024) on the wire and the others wait for a
//! slot (the default `WhenFull::Wait`). 10,000 calls of 1 MiB would hold 10 GiB of arguments
//! in the caller alone, so the larger sizes run fewer calls.
//!
//! Peak RSS (`VmHWM`) is measured for this process (reset before each load through
//! `/proc/self/clear_refs`) and for the server child, and bounded: a server's memory must not
//! grow with the calls a client holds back, only with what its caps let in
//! ([`server_bound_kib`]). One line per load is printed (`load transport=… calls=… size=…
//! wall_ms=… client_peak_rss_kib=… server_peak_rss_kib=…`); docs/reliability.md quotes them.
//!
//! `#[ignore]`d from the default run (they take a minute in a debug build); `.ci/run` runs
//! them explicitly, one at a time so the RSS figures are each load's own:
//! `cargo test --test reliability -- --ignored --test-threads=1 --nocapture load::`.

use crate::examples;
use crate::reliability;
use crate::serving;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpwire::client::{Client, ClientOptions, EraPolicy};
use mcpwire::proto::mcp_types::ContentBlock;
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use mcpwire::transport::stdio::ChildCommand;
use mcpwire::transport::{inproc, Limits, Transport};
use reliability::Baseline;
use serde_json::{json, Map, Value};
use serving::ServingBridge;

/// `calls` calls whose argument is `size` bytes, all issued at once.
#[derive(Debug, Clone, Copy)]
struct Load {
    calls: usize,
    size: usize,
}

const LOADS: [Load; 3] =
    [Load { calls: 10_000, size: 16 }, Load { calls: 1_000, size: 64 * 1024 }, Load { calls: 64, size: 1024 * 1024 }];

/// The client's in-flight cap and the server's held queue (`peer::MAX_HELD_REQUESTS`): how
/// many requests a server can have taken in at most, whatever the client holds back.
const SERVER_ADMITS: usize = 1024 + 256;

/// The text of call `tag`: its tag in 8 digits, `|`, then letters up to `size` bytes.
fn text_of(tag: usize, size: usize) -> String {
    let mut text = format!("{tag:08}|");
    text.extend((text.len()..size).map(|i| (b'a' + (i % 26) as u8) as char));
    text
}

/// What a server in this process saw: how often each tag's call ran.
struct Tally {
    runs: Vec<AtomicU8>,
}

impl Tally {
    fn new(calls: usize) -> Arc<Tally> {
        Arc::new(Tally { runs: (0..calls).map(|_| AtomicU8::new(0)).collect() })
    }

    /// Tags that ran other than exactly once: (tag, runs).
    fn not_once(&self) -> Vec<(usize, u8)> {
        self.runs.iter().enumerate().map(|(t, n)| (t, n.load(Ordering::Relaxed))).filter(|(_, n)| *n != 1).collect()
    }
}

/// An echo server whose `echo` tool counts each tag it is called with in `tally`.
fn tallying_server(tally: Arc<Tally>) -> Server {
    Server::builder()
        .name("load")
        .version("1")
        .tool("echo", "Answers its text", json!({"type": "object"}), move |args, _ctx| {
            let tally = tally.clone();
            async move {
                let text = args.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
                if let Some(n) = text.get(..8).and_then(|t| t.parse::<usize>().ok()).and_then(|t| tally.runs.get(t)) {
                    n.fetch_add(1, Ordering::Relaxed);
                }
                Ok(text_result(text))
            }
        })
        .build()
        .unwrap()
}

/// How the calls of one load went, from the caller's side.
#[derive(Debug, Default)]
struct Outcome {
    own: usize,
    crossed: Vec<usize>,
    failed: Vec<(usize, String)>,
    wall: Duration,
}

/// Issues `load` on `client` at once and waits for every answer.
async fn fire<T: Transport>(client: &Arc<Client<T>>, tool: &str, load: Load) -> Outcome {
    let mut calls = tokio::task::JoinSet::new();
    let started = Instant::now();
    for tag in 0..load.calls {
        let (client, tool) = (client.clone(), tool.to_owned());
        calls.spawn(async move {
            let mut args = Map::new();
            args.insert("text".into(), Value::String(text_of(tag, load.size)));
            let answer = client.call_tool(tool, Some(args), Default::default()).await;
            (tag, answer)
        });
    }
    let mut outcome = Outcome::default();
    while let Some(joined) = calls.join_next().await {
        let (tag, answer) = joined.expect("a call task panicked");
        match answer {
            Ok(result) => match result.content.as_slice() {
                [ContentBlock::Text(t)] if t.text == text_of(tag, load.size) => outcome.own += 1,
                _ => outcome.crossed.push(tag),
            },
            Err(e) => outcome.failed.push((tag, e.to_string())),
        }
    }
    outcome.wall = started.elapsed();
    outcome
}

fn options(era: EraPolicy) -> ClientOptions {
    // No client-side timeout: a slow load is measured, never cut off into "lost".
    ClientOptions::default().with_client_info("load", "1").with_request_timeout(None).with_era(era)
}

/// The bound on a server's peak RSS under `load`: 96 MiB of base (a debug build's code, the
/// runtime) plus, for each request it can have taken in ([`SERVER_ADMITS`], or fewer calls),
/// 8 copies of the payload (the line read, the decoded params, the result, its encoding, each
/// for request and answer) and 16 KiB of bookkeeping (task, buffers, session entry).
fn server_bound_kib(load: Load) -> u64 {
    let admitted = load.calls.min(SERVER_ADMITS) as u64;
    96 * 1024 + admitted * (8 * load.size as u64 + 16 * 1024) / 1024
}

/// The bound on a process that holds the caller too: every call's argument exists from the
/// start (8 copies as above, 8 KiB per call task), on top of the server's bound.
fn caller_bound_kib(load: Load) -> u64 {
    server_bound_kib(load) + load.calls as u64 * (8 * load.size as u64 + 8 * 1024) / 1024
}

/// Checks one load's outcome and prints its figures line; `server` is a server child's peak
/// RSS and its bound, in KiB.
fn report(transport: &str, load: Load, outcome: &Outcome, server: Option<(u64, u64)>, tally: Option<&Tally>) {
    let client_peak = reliability::peak_rss_kib("self").unwrap();
    println!(
        "load transport={transport} calls={} size={} wall_ms={} own={} lost=0 duplicated=0 crossed={} \
         client_peak_rss_kib={client_peak} server_peak_rss_kib={}",
        load.calls,
        load.size,
        outcome.wall.as_millis(),
        outcome.own,
        outcome.crossed.len(),
        server.map_or("in-process".to_owned(), |(k, _)| k.to_string()),
    );
    assert!(
        outcome.failed.is_empty(),
        "{transport} {load:?}: {} failed, the first {:?}",
        outcome.failed.len(),
        outcome.failed[0]
    );
    assert!(outcome.crossed.is_empty(), "{transport} {load:?}: answers not their own: {:?}", outcome.crossed);
    assert_eq!(outcome.own, load.calls, "{transport} {load:?}: every call answered with its own text");
    if let Some(tally) = tally {
        let wrong = tally.not_once();
        assert!(wrong.is_empty(), "{transport} {load:?}: tags not run exactly once (tag, runs): {wrong:?}");
    }
    if let Some((peak, bound)) = server {
        assert!(peak <= bound, "{transport} {load:?}: server peak {peak} KiB over {bound}");
    }
    assert!(
        client_peak <= caller_bound_kib(load),
        "{transport} {load:?}: peak {client_peak} KiB over {}",
        caller_bound_kib(load)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load: run by .ci/run (cargo test --test reliability -- --ignored --test-threads=1 load::)"]
async fn stdio_child() {
    let baseline = Baseline::take().await;
    let server = examples::example_path("echo_server");
    for load in LOADS {
        reliability::reset_peak_rss();
        let command = ChildCommand::new(server.to_string_lossy());
        let client = Arc::new(Client::spawn(command, options(EraPolicy::Legacy)).await.unwrap());
        let pid = client.transport().child_pid().unwrap();
        let outcome = fire(&client, "echo", load).await;
        let server_peak = reliability::peak_rss_kib(&pid.to_string()).expect("the child's VmHWM");
        client.close().await.unwrap();
        report("stdio", load, &outcome, Some((server_peak, server_bound_kib(load))), None);
    }
    baseline.assert_nothing_left(Duration::from_secs(30)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load: run by .ci/run (cargo test --test reliability -- --ignored --test-threads=1 load::)"]
async fn in_process() {
    let baseline = Baseline::take().await;
    for load in LOADS {
        reliability::reset_peak_rss();
        let tally = Tally::new(load.calls);
        let (client_end, server_end) = inproc::pair(Limits::default());
        let serving = tokio::spawn(tallying_server(tally.clone()).serve(server_end));
        let client = Arc::new(Client::connect(client_end, options(EraPolicy::Legacy)).await.unwrap());
        let outcome = fire(&client, "echo", load).await;
        client.close().await.unwrap();
        serving.await.unwrap().unwrap();
        report("in-process", load, &outcome, None, Some(&tally));
    }
    baseline.assert_nothing_left(Duration::from_secs(30)).await;
}

/// Runs every load against an [`HttpServer`] in this process, the client made by `transport`
/// for its URLs (`/mcp` and the legacy `/sse`) and speaking `era`.
async fn over_http(name: &str, era: EraPolicy, transport: impl Fn(&HttpServer) -> HttpClientTransport) {
    let baseline = Baseline::take().await;
    for load in LOADS {
        reliability::reset_peak_rss();
        let tally = Tally::new(load.calls);
        let server_def = tallying_server(tally.clone());
        let server = server_def.serve_http(HttpServerConfig::default()).await.unwrap();
        let client = Arc::new(Client::connect(transport(&server), options(era)).await.unwrap());
        let outcome = fire(&client, "echo", load).await;
        client.close().await.unwrap();
        drop(client);
        server.shutdown().await;
        report(name, load, &outcome, None, Some(&tally));
    }
    baseline.assert_nothing_left(Duration::from_secs(30)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load: run by .ci/run (cargo test --test reliability -- --ignored --test-threads=1 load::)"]
async fn streamable_http_with_a_session() {
    over_http("http-session", EraPolicy::Legacy, |s| HttpClientTransport::new(HttpClientConfig::new(s.url())).unwrap())
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load: run by .ci/run (cargo test --test reliability -- --ignored --test-threads=1 load::)"]
async fn stateless_http_2026() {
    let era = EraPolicy::Adopt(ProtocolVersion::V2026_07_28);
    over_http("http-stateless-2026", era, |s| HttpClientTransport::new(HttpClientConfig::new(s.url())).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load: run by .ci/run (cargo test --test reliability -- --ignored --test-threads=1 load::)"]
async fn legacy_sse() {
    over_http("legacy-sse", EraPolicy::Legacy, |s| {
        HttpClientTransport::new(HttpClientConfig::new(s.legacy_url()).legacy(true)).unwrap()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load: run by .ci/run (cargo test --test reliability -- --ignored --test-threads=1 load::)"]
async fn through_mcp_bridge_serve() {
    let baseline = Baseline::take().await;
    for load in LOADS {
        reliability::reset_peak_rss();
        let bridge = ServingBridge::start(&[]);
        let transport = HttpClientTransport::new(HttpClientConfig::new(bridge.url.clone())).unwrap();
        let client = Arc::new(Client::connect(transport, options(EraPolicy::Legacy)).await.unwrap());
        let outcome = fire(&client, "mcp__echo__echo", load).await;
        let bridge_peak = reliability::peak_rss_kib(&bridge.pid().to_string()).expect("the bridge's VmHWM");
        client.close().await.unwrap();
        drop(client);
        drop(bridge);
        // The bridge holds a server (downstream) and a client with its upstream's server (the
        // embedded echo, in process): twice a server's room.
        report("mcp-bridge", load, &outcome, Some((bridge_peak, 2 * server_bound_kib(load))), None);
    }
    baseline.assert_nothing_left(Duration::from_secs(30)).await;
}
