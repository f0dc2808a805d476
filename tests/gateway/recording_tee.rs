//! The recording tee end to end: sessions recorded through `RecordingTransport` over real
//! transports, then replayed by the conformance engine against the echo server, which must
//! pass; and an altered recording, which must not.
//!
//! - Server side over Streamable HTTP: our HTTP server wraps each session's transport in a
//!   tee (as `mcp-bridge serve --record DIR` will), serves the echo server through it, and our
//!   client calls tools over loopback HTTP.
//! - Client side over stdio: our client's transport to an `echo_server` child process is
//!   wrapped instead, in the default era policy (`server/discover` first).
//! - Client side against a third-party server: the TypeScript SDK's server-everything over
//!   stdio, recorded and replayed against itself.

use crate::examples;
use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::echo::echo_server;
use mcp_conformance::replay::{replay_stdio, ReplayOptions};
use mcpwire::client::{Client, ClientOptions, EraPolicy};
use mcpwire::recording::{Dir, Recording};
use mcpwire::recording::{RecordingDir, RecordingTransport, TeeOptions};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use mcpwire::transport::stdio::{ChildCommand, Stderr};
use mcpwire::transport::Transport;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-recording-tee-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn args(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

/// A few calls of every kind the echo server answers: tools/list, two tools, an unknown tool,
/// and in the handshake era ping (2026-07-28 has none). Not `greet`: at 2026-07-28 it asks the
/// client to elicit, which this client does not.
async fn exercise<T: Transport>(client: &Client<T>, handshake_era: bool) {
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    let echoed = client.call_tool("echo", args(json!({"text": "recorded"})), Default::default()).await.unwrap();
    assert_eq!(serde_json::to_value(&echoed).unwrap()["content"][0]["text"], "recorded");
    let sum = client.call_tool("add", args(json!({"a": 2, "b": 40})), Default::default()).await.unwrap();
    assert_eq!(serde_json::to_value(&sum).unwrap()["content"][0]["text"], "42");
    // An unknown tool is a protocol error (server/tools, "Error Handling"): recorded as one.
    let unknown = client.call_tool("no-such-tool", None, Default::default()).await.unwrap_err().to_string();
    assert!(unknown.contains("-32602") && unknown.contains("Tool no-such-tool not found"), "{unknown}");
    if handshake_era {
        client.ping().await.unwrap();
    }
}

async fn replay_against_echo(path: &Path) -> Vec<String> {
    let echo = examples::example_path("echo_server");
    let outcome = replay_stdio(path, &echo.to_string_lossy(), ReplayOptions::default()).await;
    outcome.failures
}

/// Changes the echoed text in the recorded answer: a replay of that must fail.
fn altered_copy(path: &Path) -> PathBuf {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("\"text\":\"recorded\"}]"), "the echo answer is on record");
    let altered = path.with_file_name("altered.jsonl");
    std::fs::write(&altered, text.replacen("\"text\":\"recorded\"}]", "\"text\":\"RECORDED\"}]", 1)).unwrap();
    altered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_side_recording_over_http_replays_against_the_echo_server() {
    let dir = scratch("http");
    let recordings = std::sync::Arc::new(RecordingDir::new(&dir).unwrap());
    let (done_tx, mut done_rx) = mpsc::channel::<PathBuf>(4);
    let app = move |transport| {
        let recordings = recordings.clone();
        let done = done_tx.clone();
        async move {
            let tee = recordings.next(TeeOptions::server_side()).unwrap().wrap(transport);
            let path = tee.path().to_owned();
            let _ = echo_server().serve(tee).await;
            // The tee was dropped with the serve future: the file is complete.
            let _ = done.send(path).await;
        }
    };
    let server = HttpServer::bind(HttpServerConfig::default(), app).await.unwrap();
    let transport = HttpClientTransport::new(HttpClientConfig::new(server.url())).unwrap();
    let client = Client::connect(transport, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();
    exercise(&client, true).await;
    client.close().await.unwrap();
    let path = tokio::time::timeout(Duration::from_secs(10), done_rx.recv()).await.expect("the session ends").unwrap();
    server.shutdown().await;

    let recording = Recording::read(&path).unwrap();
    assert_eq!(recording.header.transport, "stdio");
    assert_eq!(recording.header.protocol_version, "2025-11-25");
    assert_eq!(recording.header.server.as_ref().unwrap()["name"], "mcpwire-echo-server");
    assert_eq!(recording.header.client.as_ref().unwrap()["name"], "mcpwire");
    assert!(recording.header.extra["started_at"].is_string());
    let methods: Vec<(Dir, String)> = recording
        .entries
        .iter()
        .map(|e| {
            let msg: Value = serde_json::from_str(e.msg.as_ref().unwrap().get()).unwrap();
            (e.dir, msg["method"].as_str().unwrap_or("(response)").to_owned())
        })
        .collect();
    assert_eq!(methods[0], (Dir::ClientToServer, "initialize".into()));
    assert_eq!(methods[1], (Dir::ServerToClient, "(response)".into()));
    assert_eq!(methods.iter().filter(|(d, m)| *d == Dir::ClientToServer && m == "tools/call").count(), 3);
    // initialize, tools/list, three calls, ping.
    assert_eq!(methods.iter().filter(|(d, _)| *d == Dir::ServerToClient).count(), 6, "{methods:?}");
    assert!(recording.entries.windows(2).all(|w| w[0].t_ms <= w[1].t_ms && w[0].seq + 1 == w[1].seq));

    let failures = replay_against_echo(&path).await;
    assert!(failures.is_empty(), "replay failed: {failures:#?}");
    let failures = replay_against_echo(&altered_copy(&path)).await;
    assert!(failures.iter().any(|f| f.contains("RECORDED")), "an altered answer is caught: {failures:#?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_side_recording_over_stdio_replays_against_the_echo_server() {
    let dir = scratch("stdio");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("client-side.jsonl");
    let echo = examples::example_path("echo_server");
    let child = ChildCommand::new(echo.to_string_lossy()).stderr(Stderr::Discard).spawn().unwrap();
    let tee = RecordingTransport::create(child, &path, TeeOptions::client_side()).unwrap();
    let client = Client::connect(tee, ClientOptions::default()).await.unwrap();
    exercise(&client, false).await;
    client.close().await.unwrap();
    drop(client);

    let recording = Recording::read(&path).unwrap();
    let first: Value = serde_json::from_str(recording.entries[0].msg.as_ref().unwrap().get()).unwrap();
    assert_eq!(recording.entries[0].dir, Dir::ClientToServer, "what the client sent is c2s");
    assert_eq!(recording.entries[1].dir, Dir::ServerToClient);
    // The default era policy: server/discover first; the header names the era it settled on.
    assert_eq!(first["method"], "server/discover");
    assert_ne!(recording.header.protocol_version, "unknown");
    assert_eq!(recording.header.server.as_ref().unwrap()["name"], "mcpwire-echo-server");

    let failures = replay_against_echo(&path).await;
    assert!(failures.is_empty(), "replay failed: {failures:#?}");
    let failures = replay_against_echo(&altered_copy(&path)).await;
    assert!(!failures.is_empty(), "an altered answer is caught");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_of_server_everything_replays_against_it() {
    let dir = scratch("everything");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("everything-via-tee.jsonl");
    let (node, everything) = (support::peer("MCP_NODE"), support::peer("MCP_EVERYTHING_JS"));
    let child = ChildCommand::new(node.clone())
        .args([everything.clone(), "stdio".into()])
        .stderr(Stderr::Discard)
        .spawn()
        .unwrap();
    let tee = RecordingTransport::create(child, &path, TeeOptions::client_side()).unwrap();
    let client = Client::connect(tee, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "get-sum"));
    let echoed = client.call_tool("echo", args(json!({"message": "recorded"})), Default::default()).await.unwrap();
    assert_eq!(serde_json::to_value(&echoed).unwrap()["content"][0]["text"], "Echo: recorded");
    let sum = client.call_tool("get-sum", args(json!({"a": 2, "b": 40})), Default::default()).await.unwrap();
    assert!(serde_json::to_value(&sum).unwrap()["content"][0]["text"].as_str().unwrap().contains("42"));
    client.ping().await.unwrap();
    client.close().await.unwrap();
    drop(client);

    let recording = Recording::read(&path).unwrap();
    assert_eq!(recording.header.server.as_ref().unwrap()["name"], "mcp-servers/everything");
    assert_eq!(recording.header.protocol_version, "2025-11-25");
    let outcome = replay_stdio(&path, &format!("{node} {everything} stdio"), ReplayOptions::default()).await;
    assert!(outcome.passed(), "replay failed: {:#?}", outcome.failures);
    std::fs::remove_dir_all(&dir).unwrap();
}
