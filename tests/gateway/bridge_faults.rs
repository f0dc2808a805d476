//! `mcp-bridge serve` where an answer cannot come, over real processes and loopback HTTP: a
//! downstream client that drops each call's stream right after the upstream's elicitation
//! reached it (the session still serves calls); a call just under the HTTP body cap that the
//! forwarding takes over the upstream's frame cap (refused at once, naming the limit); an
//! upstream whose dependency is not there yet when the bridge starts (retried, its state and
//! last error in `/readyz/details` and `/metrics`, served once it starts); an upstream's answer
//! over the frame cap and its errors without an id (the calls they may answer fail at once); a
//! call the client cancelled (its stream ends); relayed requests capped per client; log
//! messages a client cannot take (counted and logged, none lost silently).
//!
//! Elsewhere: faults of the library's own transports, `tests/faults.rs`; hostile HTTP
//! clients, `tests/hostile_input.rs`.

use crate::examples;
use crate::http_support;
use crate::serving;

use std::net::SocketAddr;
use std::time::Duration;

use http_support::{raw, BOTH, JSON};
use serde_json::{json, Value};
use serving::ServingBridge;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A generous bound for what must happen "soon" on a loaded machine: a test that fails by it
/// fails rather than hangs.
const BOUND: Duration = Duration::from_secs(30);

fn addr_of(bridge: &ServingBridge) -> SocketAddr {
    ([127, 0, 0, 1], bridge.port()).into()
}

/// A 2025-11-25 session whose client declares form elicitation; returns its id.
async fn session_with_elicitation(addr: SocketAddr) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "abandoning", "version": "1"}}});
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &initialize.to_string(), BOUND).await;
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let r = raw(addr, "POST", "/mcp", &session_headers(&id), &note, BOUND).await;
    assert_eq!(r.status, 202, "{r:?}");
    id
}

fn session_headers(id: &str) -> [(&str, &str); 4] {
    [BOTH, JSON, ("Mcp-Session-Id", id), ("MCP-Protocol-Version", "2025-11-25")]
}

/// POSTs `body` in session `id` and reads the response until `until` appears in it; then the
/// connection is dropped. Returns what was read.
async fn post_until(addr: SocketAddr, id: &str, body: &str, until: &str) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in session_headers(id) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    tcp.write_all(format!("{head}\r\n{body}").as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    tokio::time::timeout(BOUND, async {
        let mut chunk = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains(until) {
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {until:?} within {BOUND:?}: {}", String::from_utf8_lossy(&seen)));
    String::from_utf8_lossy(&seen).into_owned()
}

fn call(id: u64, tool: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
        .to_string()
}

#[tokio::test]
async fn abandoned_elicitations_release_the_session_that_relayed_them() {
    let echo = examples::example_path("echo_server");
    let echo = echo.to_str().unwrap();
    // The upstream (a 2026-07-28 server: its elicitation is an input request of the call's
    // result, answered by the bridge between two round trips, outside the call's own timeout)
    // asks through the bridge, whose relayed requests wait one second downstream.
    // (The cap on relayed requests waiting per client, 16 by default, is set past the 65 here:
    // this test is about their deadline; the cap has its own.)
    let bridge =
        ServingBridge::start(&["--client-request-timeout", "1", "--max-pending-client-requests", "100", "--", echo]);
    let addr = addr_of(&bridge);
    let session = session_with_elicitation(addr).await;
    // More abandoned calls than the session may run at once (64): each stream is dropped as
    // soon as the upstream's elicitation reached it, and nobody ever answers.
    for n in 1..=65 {
        let seen = post_until(addr, &session, &call(n, "greet", json!({})), "elicitation/create").await;
        assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    }
    // A client that stays but does not answer gets its call failed, naming the deadline.
    let r = raw(addr, "POST", "/mcp", &session_headers(&session), &call(99, "greet", json!({})), BOUND).await;
    let answers = r.messages();
    let answer = answers.iter().find(|m| m["id"] == 99).unwrap_or_else(|| panic!("no answer to the call: {r:?}"));
    let text = answer.to_string();
    assert!(text.contains("did not answer elicitation/create within 1000 ms"), "{answer}");
    // The same session still serves a call.
    let r =
        raw(addr, "POST", "/mcp", &session_headers(&session), &call(100, "echo", json!({"text": "still here"})), BOUND)
            .await;
    assert_eq!(r.status, 200, "{r:?}");
    let answers = r.messages();
    let answer = answers.iter().find(|m| m["id"] == 100).unwrap_or_else(|| panic!("no answer to the call: {r:?}"));
    assert_eq!(answer["result"]["content"][0]["text"], "still here", "{answer}");
}

#[tokio::test]
async fn a_call_just_under_the_body_cap_fails_at_once_naming_the_upstreams_frame_cap() {
    let echo = examples::example_path("echo_server");
    // A short call timeout: a regression fails by it rather than hangs.
    let bridge = ServingBridge::start(&["--timeout", "10", "--", echo.to_str().unwrap()]);
    let addr = addr_of(&bridge);
    let session = session_with_elicitation(addr).await;
    // 4 MiB less 200 bytes on the wire: accepted by the bridge (its body cap is 4 MiB), over
    // the upstream's 4 MiB frames once forwarded with the bridge's own `_meta`.
    let cap = 4 * 1024 * 1024;
    let envelope = call(1, "echo", json!({"text": ""})).len();
    let body = call(1, "echo", json!({"text": "x".repeat(cap - 200 - envelope)}));
    assert_eq!(body.len(), cap - 200);
    let r = raw(addr, "POST", "/mcp", &session_headers(&session), &body, BOUND).await;
    assert_eq!(r.status, 200, "{}", r.body.chars().take(300).collect::<String>());
    let answers = r.messages();
    let answer = answers.iter().find(|m| m["id"] == 1).unwrap_or_else(|| panic!("no answer: {r:?}"));
    let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("not an error: {answer}"));
    assert!(message.starts_with("request too large: "), "{message}");
    assert!(message.contains(&format!("the limit is {cap} (Limits::max_frame_bytes)")), "{message}");
    // The upstream still serves the session.
    let r =
        raw(addr, "POST", "/mcp", &session_headers(&session), &call(2, "echo", json!({"text": "next"})), BOUND).await;
    let answers = r.messages();
    let answer = answers.iter().find(|m| m["id"] == 2).unwrap_or_else(|| panic!("no answer: {r:?}"));
    assert_eq!(answer["result"]["content"][0]["text"], "next", "{answer}");
}

/// The fake server of `tests/fixtures/fake_server.py` in `mode`, as an inline upstream.
fn fake(mode: &str) -> [String; 3] {
    [
        "python3".to_owned(),
        crate::support::repo_path("tests/fixtures/fake_server.py").display().to_string(),
        mode.to_owned(),
    ]
}

/// A call's answer, from the SSE stream (or JSON body) of its POST.
async fn answer_to(addr: SocketAddr, session: &str, id: u64, tool: &str, arguments: Value) -> Value {
    let r = raw(addr, "POST", "/mcp", &session_headers(session), &call(id, tool, arguments), BOUND).await;
    assert_eq!(r.status, 200, "{r:?}");
    r.messages().into_iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("no answer to {id}"))
}

#[tokio::test]
async fn an_upstreams_oversize_answer_or_error_without_id_fails_its_call_at_once() {
    // A call timeout far past the hang guard: a call left waiting fails the test by the guard.
    let [python, script, mode] = fake("faulty");
    let mut bridge = ServingBridge::start_with(&["--timeout", "300", "--", &python, &script, &mode], |c| {
        c.stderr(std::process::Stdio::piped());
    });
    let stderr = bridge.take_stderr().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut { stderr }, &mut text);
        text
    });
    let addr = addr_of(&bridge);
    let session = session_with_elicitation(addr).await;
    let cap = 4 * 1024 * 1024;
    // A 20 MB answer, with its id first (as we and Python write it) and last (as TypeScript).
    for (n, result_first) in [(1, false), (2, true)] {
        let answer =
            answer_to(addr, &session, n, "huge", json!({"bytes": 20_000_000, "result_first": result_first})).await;
        let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("not an error: {answer}"));
        assert!(message.starts_with("response too large: 200000"), "{message}");
        assert!(message.contains(&format!("the limit is {cap} (Limits::max_frame_bytes)")), "{message}");
    }
    // An error with a null id while one call is in flight: that call's answer.
    let answer = answer_to(addr, &session, 3, "nullerr", json!({})).await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "Parse error (the peer's error carried no id; this is the only request it can answer)"
    );
    // Two calls sent since the upstream last spoke, then its error without id: either may be
    // the one it answers, so both fail saying why; neither is left waiting.
    let other = session_with_elicitation(addr).await;
    let first = tokio::spawn(async move { answer_to(addr, &other, 4, "nullerr", json!({"pair": true})).await });
    let answer = answer_to(addr, &session, 5, "nullerr", json!({"pair": true})).await;
    let why = "the peer answered an error without an id while 2 requests it may answer were in flight, this one \
               among them: Parse error";
    assert_eq!(answer["error"]["message"], why, "{answer}");
    let answer = tokio::time::timeout(BOUND, first).await.expect("the first call answered").unwrap();
    assert_eq!(answer["error"]["message"], why, "{answer}");
    // The upstream still serves.
    let answer = answer_to(addr, &session, 6, "echo", json!({"text": "next"})).await;
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("next"), "{answer}");
    // A request of the upstream's over the frame cap is refused with its own id (the upstream
    // is not left waiting, nor told of a frame error it cannot place).
    answer_to(addr, &session, 7, "bigask", json!({"bytes": 5_000_000})).await;
    let report = answer_to(addr, &session, 8, "report", json!({})).await;
    let seen: Value = serde_json::from_str(report["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["responses"]["big"]["code"], -32600, "{seen}");
    let message = seen["responses"]["big"]["message"].as_str().unwrap_or_else(|| panic!("{seen}"));
    assert!(message.starts_with("request too large: 50000"), "{message}");
    assert!(message.ends_with(&format!("the limit is {cap} (Limits::max_frame_bytes)")), "{message}");
    bridge.stop();
    let log = log.join().unwrap();
    assert_eq!(log.matches("refused a request of the peer's over the frame cap").count(), 1, "{log}");
    assert_eq!(log.matches("dropped the peer's answer over the frame cap; its request fails").count(), 2, "{log}");
    assert_eq!(log.matches("the peer sent an error without an id").count(), 2, "{log}");
}

#[tokio::test]
async fn a_call_the_client_cancelled_closes_its_stream() {
    // The call would wait 300 s upstream (a tool never answered); the hang guard is 30 s.
    let [python, script, mode] = fake("plain");
    let bridge = ServingBridge::start(&["--timeout", "300", "--", &python, &script, &mode]);
    let addr = addr_of(&bridge);
    let session = session_with_elicitation(addr).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let body = call(7, "hang", json!({}));
    let mut head =
        format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in session_headers(&session) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    tcp.write_all(format!("{head}\r\n{body}").as_bytes()).await.unwrap();
    // The stream has started (its priming event): the bridge holds the call.
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    tokio::time::timeout(BOUND, async {
        while !String::from_utf8_lossy(&seen).contains("retry:") {
            let n = tcp.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the stream ended before the cancellation: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&chunk[..n]);
        }
    })
    .await
    .expect("the call's stream started");
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "enough"}});
    let r = raw(addr, "POST", "/mcp", &session_headers(&session), &cancel.to_string(), BOUND).await;
    assert_eq!(r.status, 202, "{r:?}");
    // The stream ends (not keep-alives until the call's timeout), with no answer to the call.
    tokio::time::timeout(BOUND, tcp.read_to_end(&mut seen))
        .await
        .unwrap_or_else(|_| panic!("the cancelled call's stream is still open: {}", String::from_utf8_lossy(&seen)))
        .unwrap();
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(!text.contains("\"id\":7"), "no answer to a cancelled request: {text}");
    // The upstream was told, and the session still serves.
    let report = answer_to(addr, &session, 9, "report", json!({})).await;
    let seen: Value = serde_json::from_str(report["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["cancelled"].as_array().map(Vec::len), Some(1), "{seen}");
}

#[tokio::test]
async fn requests_waiting_on_one_client_are_capped_and_another_session_is_not_held_back() {
    let echo = examples::example_path("echo_server");
    // Relayed requests wait 300 s for an answer: only the cap can refuse one within the test.
    let bridge = ServingBridge::start(&[
        "--max-pending-client-requests",
        "2",
        "--client-request-timeout",
        "300",
        "--",
        echo.to_str().unwrap(),
    ]);
    let addr = addr_of(&bridge);
    let session = session_with_elicitation(addr).await;
    // Two calls whose elicitations reach the client, which never answers them.
    for n in 1..=2 {
        let seen = post_until(addr, &session, &call(n, "greet", json!({})), "elicitation/create").await;
        assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    }
    // A third: its upstream's elicitation is refused at once, naming the limit.
    let answer = answer_to(addr, &session, 3, "greet", json!({})).await;
    let text = answer.to_string();
    assert!(text.contains("the limit max_pending_client_requests = 2"), "{answer}");
    // Another session's client is asked as usual.
    let other = session_with_elicitation(addr).await;
    let seen = post_until(addr, &other, &call(4, "greet", json!({})), "elicitation/create").await;
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
}

/// `mcp_bridge_notifications_dropped_total` as the bridge's `/metrics` says it now.
fn notifications_dropped(bridge: &ServingBridge) -> u64 {
    let (status, metrics) = crate::serving::http_get(&bridge.url, "/metrics", None);
    assert_eq!(status, 200, "{metrics}");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("mcp_bridge_notifications_dropped_total "))
        .unwrap_or_else(|| panic!("no dropped count: {metrics}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_a_client_cannot_take_are_counted_and_logged_never_lost_silently() {
    const COUNT: u64 = 20_000;
    let [python, script, mode] = fake("faulty");
    let mut bridge = ServingBridge::start_with(&["--", &python, &script, &mode], |c| {
        c.stderr(std::process::Stdio::piped());
    });
    let stderr = bridge.take_stderr().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut { stderr }, &mut text);
        text
    });
    let addr = addr_of(&bridge);
    let session = session_with_elicitation(addr).await;
    // The session's GET stream (HTTP/1.0: the body is the bare event stream), not read while
    // the upstream sends 20,000 log messages of 1 KB: the bridge cannot hold them all.
    let mut get = TcpStream::connect(addr).await.unwrap();
    let mut head = format!("GET /mcp HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
    for (name, value) in session_headers(&session).iter().skip(2) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    get.write_all(format!("{head}\r\n").as_bytes()).await.unwrap();
    let answer = answer_to(addr, &session, 1, "flood", json!({"count": COUNT, "size": 1000})).await;
    assert!(answer["result"].is_object(), "{answer}");
    // Now read: every message arrives or is counted as dropped, none lost silently.
    let (mut seen, mut received, mut dropped) = (String::new(), 0u64, 0u64);
    let mut chunk = vec![0u8; 64 * 1024];
    tokio::time::timeout(BOUND, async {
        loop {
            while let Some(end) = seen.find("\n\n") {
                received += u64::from(seen[..end].contains("notifications/message"));
                seen.drain(..end + 2);
            }
            dropped = notifications_dropped(&bridge);
            if received + dropped >= COUNT {
                break;
            }
            let n = get.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the stream ended at {received} received, {dropped} dropped");
            seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{received} received and {dropped} dropped of {COUNT}: some lost silently"));
    assert_eq!(received + dropped, COUNT, "{received} received, {dropped} dropped");
    assert!(dropped > 0, "a client that does not read cannot take 20 MB: {received} received");
    bridge.stop();
    let log = log.join().unwrap();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("notification queue is full")).collect();
    // Rate-limited (one line per 10 s), not one per message.
    assert!(!lines.is_empty() && lines.len() < 10, "{} lines: {lines:?}", lines.len());
}

/// `tools/list` in session `id`: the tools' names.
async fn tool_names(addr: SocketAddr, id: &str) -> Vec<String> {
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let r = raw(addr, "POST", "/mcp", &session_headers(id), &list, BOUND).await;
    let answers = r.messages();
    let answer = answers.iter().find(|m| m["id"] == 1).unwrap_or_else(|| panic!("no answer: {r:?}"));
    let tools = answer["result"]["tools"].as_array().unwrap_or_else(|| panic!("no tools: {answer}"));
    tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

/// The answer to `tools/call` of `tool` with `arguments` in session `id`.
async fn call_in(addr: SocketAddr, id: &str, tool: &str, arguments: Value) -> Value {
    let r = raw(addr, "POST", "/mcp", &session_headers(id), &call(7, tool, arguments), BOUND).await;
    let answers = r.messages();
    answers.iter().find(|m| m["id"] == 7).unwrap_or_else(|| panic!("no answer: {r:?}")).clone()
}

/// The upstream `server`'s entry in `/readyz/details`.
fn details_of(bridge: &ServingBridge, server: &str) -> Value {
    let (status, body) = serving::http_get(&bridge.url, "/readyz/details", None);
    assert_eq!(status, 200, "{body}");
    let details: Value = serde_json::from_str(&body).unwrap();
    let servers = details["servers"].as_array().unwrap_or_else(|| panic!("{details}"));
    servers.iter().find(|s| s["server"] == server).unwrap_or_else(|| panic!("no {server} in {details}")).clone()
}

#[tokio::test]
async fn an_upstream_that_fails_at_start_is_retried_and_served_once_it_starts() {
    let dir = std::env::temp_dir().join(format!("mcpwire-faults-{}-late", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("dependency-up");
    let echo = examples::example_path("echo_server");
    // `late` fails (exits 3 before answering) until the marker exists, then is the echo server;
    // `ghost` never starts, and its command holds control characters that must not reach a
    // terminal or a log reader raw.
    let late = "if [ -e \"$1\" ]; then exec \"$2\"; fi; exit 3";
    let toml = format!(
        "[mcp_servers.late]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {late:?}, \"sh\", {marker:?}, {echo:?}]\n\n\
         [mcp_servers.ghost]\ncommand = \"/nonexistent/\\u001b]0;pwned\\u0007\"\n",
    );
    std::fs::write(dir.join("config.toml"), toml).unwrap();
    let config = dir.join("config.toml").display().to_string();
    let bridge = ServingBridge::start(&["--config", &config]);
    let addr = addr_of(&bridge);

    // Up, without `late`'s tools: a call is refused, saying why.
    assert_eq!(serving::http_get(&bridge.url, "/readyz", None), (200, r#"{"ready":true}"#.to_owned()));
    let session = session_with_elicitation(addr).await;
    assert!(!tool_names(addr, &session).await.iter().any(|t| t.starts_with("mcp__late__")));
    let refused = call_in(addr, &session, "mcp__late__echo", json!({"text": "early"})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Tool mcp__late__echo not found: its upstream late is retrying"), "{message}");
    // Its state, tries and last error in the details and the metrics.
    let late_state = details_of(&bridge, "late");
    assert_eq!(late_state["state"], "retrying", "{late_state}");
    assert!(late_state["failed_attempts"].as_u64().unwrap() >= 1, "{late_state}");
    assert!(late_state["error"].as_str().is_some_and(|e| !e.is_empty()), "{late_state}");
    let ghost = details_of(&bridge, "ghost");
    assert_eq!(ghost["state"], "retrying", "{ghost}");
    let error = ghost["error"].as_str().unwrap();
    assert!(error.contains(r"/nonexistent/\u{1b}]0;pwned\u{7}"), "escaped: {error:?}");
    assert!(!error.contains(['\x1b', '\x07']), "raw control characters: {error:?}");
    let (_, metrics) = serving::http_get(&bridge.url, "/metrics", None);
    assert!(metrics.contains("mcp_bridge_upstream_state{server=\"late\",state=\"retrying\"} 1\n"), "{metrics}");
    assert!(metrics.contains("mcp_bridge_upstream_state{server=\"late\",state=\"ready\"} 0\n"), "{metrics}");
    assert!(metrics.contains("mcp_bridge_upstream_failed_attempts{server=\"late\"} "), "{metrics}");
    assert!(metrics.contains("mcp_bridge_upstream_up{server=\"late\"} 0\n"), "{metrics}");

    // The dependency comes up: `late` is served through the bridge, in the same session.
    std::fs::write(&marker, "").unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !tool_names(addr, &session).await.iter().any(|t| t == "mcp__late__echo") {
        assert!(tokio::time::Instant::now() < deadline, "late not listed: {}", details_of(&bridge, "late"));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let answer = call_in(addr, &session, "mcp__late__echo", json!({"text": "late but here"})).await;
    assert_eq!(answer["result"]["content"][0]["text"], "late but here", "{answer}");
    let late_state = details_of(&bridge, "late");
    assert_eq!((&late_state["state"], &late_state["failed_attempts"]), (&json!("ready"), &json!(0)), "{late_state}");
    let (_, metrics) = serving::http_get(&bridge.url, "/metrics", None);
    assert!(metrics.contains("mcp_bridge_upstream_state{server=\"late\",state=\"ready\"} 1\n"), "{metrics}");
    assert!(metrics.contains("mcp_bridge_upstream_up{server=\"late\"} 1\n"), "{metrics}");
    // `ghost` is still being tried.
    assert_eq!(details_of(&bridge, "ghost")["state"], "retrying");
}

#[test]
fn a_required_upstream_that_fails_at_start_still_stops_the_bridge() {
    let dir = std::env::temp_dir().join(format!("mcpwire-faults-{}-required", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[mcp_servers.needed]\ncommand = \"/nonexistent/needed\"\nrequired = true\n",
    )
    .unwrap();
    let out = std::process::Command::new(examples::bin_path("mcp-bridge"))
        .args(["serve", "--listen", "http://127.0.0.1:0/mcp", "--config"])
        .arg(dir.join("config.toml"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("required MCP servers failed to start: needed (cannot start /nonexistent/needed"),
        "{stderr}"
    );
}
