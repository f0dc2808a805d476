//! The console's live traffic (`/ui/api/traffic` of `mcp-bridge serve`, over mcpwire's
//! echo_server and server-everything): with the token, a server-sent event stream that carries
//! each call made after it opened, in order, with its server, tool and outcome (ok, tool error,
//! unknown tool, cancelled by the client mid-call), and never the token or an argument; without the token 401, from a foreign Origin 403; the
//! listener, keeping up, lost nothing (`mcp_bridge_live_dropped_total 0`).

use crate::examples;
use crate::serving::ServingBridge;

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use mcpwire::client::{CallOptions, Client, ClientOptions, EraPolicy};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use serde_json::{json, Value};

const TOKEN: &str = "traffic-test-token-9c1e";
const SECRET_ARGUMENT: &str = "an-argument-never-shown-4b7d";

/// `GET path` with these extra header lines, answer read to its end: the status.
fn status_of(port: u16, path: &str, extra: &[&str]) -> u16 {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let extra: String = extra.iter().map(|h| format!("{h}\r\n")).collect();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}Connection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split(' ').nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_traffic_stream_carries_each_call_with_its_outcome_and_never_a_secret() {
    let dir = std::env::temp_dir().join(format!("mcp-bridge-console-traffic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("traffic.toml");
    let echo = examples::example_path("echo_server").display().to_string();
    let (node, everything) = (crate::support::peer("MCP_NODE"), crate::support::peer("MCP_EVERYTHING_JS"));
    std::fs::write(
        &config,
        format!(
            "[mcp_servers.echo]\ncommand = {echo:?}\n\n\
             [mcp_servers.everything]\ncommand = {node:?}\nargs = [{everything:?}, \"stdio\"]\n"
        ),
    )
    .unwrap();
    let bridge =
        ServingBridge::start_with(&["--config", config.to_str().unwrap(), "--auth-token-env", "TRAFFIC_TOKEN"], |c| {
            c.env("TRAFFIC_TOKEN", TOKEN);
        });
    let port = bridge.port();
    let bearer = format!("Authorization: Bearer {TOKEN}");

    assert_eq!(status_of(port, "/ui/api/traffic", &[]), 401, "no token");
    assert_eq!(status_of(port, "/ui/api/traffic", &["Authorization: Bearer not-it"]), 401, "another token");
    assert_eq!(status_of(port, "/ui/api/traffic", &[&bearer, "Origin: http://evil.example"]), 403, "foreign Origin");

    let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.url).bearer_token(TOKEN)).unwrap();
    let client = Client::connect(transport, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();

    // The stream, opened before the calls: its head means the bridge listens already.
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET /ui/api/traffic HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{bearer}\r\n\r\n").unwrap();
    let mut lines = BufReader::new(stream);
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        head.push(line.trim_end().to_ascii_lowercase());
    }
    assert!(head[0].starts_with("http/1.1 200"), "{head:?}");
    assert!(head.contains(&"content-type: text/event-stream".to_owned()), "{head:?}");
    assert!(head.iter().any(|h| h.starts_with("content-security-policy: default-src 'self'")), "{head:?}");
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel::<String>();
    let reader = std::thread::spawn(move || {
        // Every line of the chunked body; only the `data:` ones are events.
        for line in lines.lines() {
            let Ok(line) = line else { break };
            if events.send(line).is_err() {
                break;
            }
        }
    });

    let call = |name: &str, arguments: Value| {
        client.call_tool(name.to_owned(), arguments.as_object().cloned(), CallOptions::default())
    };
    let ok = call("mcp__echo__echo", json!({"text": SECRET_ARGUMENT})).await.unwrap();
    assert_ne!(ok.is_error, Some(true));
    let failed = call("mcp__echo__add", json!({"a": 1e308, "b": 1e308})).await.unwrap();
    assert_eq!(failed.is_error, Some(true), "an infinite sum is the tool's failure");
    assert!(call("no_such_tool", json!({})).await.is_err(), "an unknown tool is a protocol error");
    // A 30-step operation, dropped (so cancelled: notifications/cancelled) once its first
    // progress shows the bridge has it in flight.
    let (progressed, first_progress) = tokio::sync::oneshot::channel();
    let progressed = std::sync::Mutex::new(Some(progressed));
    let long = client.call_tool(
        "mcp__everything__trigger-long-running-operation".to_owned(),
        json!({"duration": 30, "steps": 30}).as_object().cloned(),
        CallOptions::default().with_progress(move |_| {
            if let Some(first) = progressed.lock().unwrap().take() {
                let _ = first.send(());
            }
        }),
    );
    tokio::select! {
        answered = long => panic!("the 30 s operation answered before it was cancelled: {answered:?}"),
        _ = first_progress => {}
    }

    let mut seen = Vec::new();
    let mut text = String::new();
    while seen.len() < 4 {
        let line = tokio::time::timeout(Duration::from_secs(30), received.recv())
            .await
            .unwrap_or_else(|_| panic!("4 events expected, got {seen:?}"))
            .expect("the stream stays open");
        text.push_str(&line);
        text.push('\n');
        if let Some(data) = line.strip_prefix("data: ") {
            seen.push(serde_json::from_str::<Value>(data).unwrap());
        }
    }
    let fields = |event: &Value| {
        json!({"kind": event["kind"], "method": event["method"], "server": event["server"],
            "name": event["name"], "outcome": event["outcome"]})
    };
    assert_eq!(
        seen.iter().map(fields).collect::<Vec<_>>(),
        [
            json!({"kind": "call", "method": "tools/call", "server": "echo", "name": "echo", "outcome": "ok"}),
            json!({"kind": "call", "method": "tools/call", "server": "echo", "name": "add", "outcome": "tool_error"}),
            json!({"kind": "call", "method": "tools/call", "server": null, "name": "no_such_tool", "outcome": "error"}),
            json!({"kind": "call", "method": "tools/call", "server": "everything",
                "name": "trigger-long-running-operation", "outcome": "cancelled"}),
        ]
    );
    let ids: Vec<&Value> = seen.iter().map(|e| &e["id"]).collect();
    assert!(ids.iter().all(|id| id.is_number()) && ids[0] != ids[1] && ids[1] != ids[2] && ids[2] != ids[3], "{ids:?}");
    for event in &seen {
        assert!(event["latencyMs"].as_f64().is_some_and(|ms| ms >= 0.0), "{event}");
        assert!(event["session"].is_u64(), "a session of the bridge: {event}");
        assert!(event["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{event}");
    }
    assert!(!text.contains(TOKEN) && !text.contains(SECRET_ARGUMENT), "a secret in the stream: {text}");
    // A listener that keeps up loses nothing, and the metrics say so.
    let (status, metrics) = crate::serving::http_get(&bridge.url, "/metrics", Some(TOKEN));
    assert_eq!(status, 200);
    assert!(metrics.lines().any(|l| l == "mcp_bridge_live_dropped_total 0"), "{metrics}");

    drop(client);
    drop(bridge);
    reader.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
