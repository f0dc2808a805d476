//! What a hostile upstream or client cannot do to `mcp-bridge serve`, over real processes and
//! loopback HTTP: forge the bridge's log lines or drive the operator's terminal with control
//! characters (in tool names, in its own stderr); guess the bearer token at speed (an address
//! is paused after repeated failures, another address is not); speak another protocol version
//! inside a session than the one it negotiated; hold more sessions from one address than its
//! cap.
//!
//! Elsewhere: the bounds and secrets, `bridge_bounds.rs`; answers that cannot come,
//! `bridge_faults.rs`.

use crate::examples;
use crate::http_support;
use crate::serving;
use crate::support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use http_support::{raw, raw_from, BOTH, JSON};
use serde_json::{json, Value};
use serving::ServingBridge;

const BOUND: Duration = Duration::from_secs(30);

fn addr_of(bridge: &ServingBridge) -> SocketAddr {
    ([127, 0, 0, 1], bridge.port()).into()
}

fn initialize(version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "guards", "version": "1"}}})
    .to_string()
}

/// A session at `version` (handshake done); its id.
async fn session(addr: SocketAddr, version: &str, extra: &[(&str, &str)]) -> String {
    let mut headers = vec![BOTH, JSON];
    headers.extend_from_slice(extra);
    let r = raw(addr, "POST", "/mcp", &headers, &initialize(version), BOUND).await;
    assert_eq!(r.status, 200, "{r:?}");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    headers.extend([("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", version)]);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let r = raw(addr, "POST", "/mcp", &headers, &note, BOUND).await;
    assert_eq!(r.status, 202, "{r:?}");
    id
}

fn answer_of(r: &http_support::Raw, id: u64) -> Value {
    r.messages().into_iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("no answer to {id}: {r:?}"))
}

#[tokio::test]
async fn an_upstream_cannot_forge_log_lines_with_control_characters() {
    let dir = std::env::temp_dir().join(format!("mcpwire-guards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = support::repo_path("tests/fixtures/fake_server.py").display().to_string();
    let toml = format!(
        "[mcp_servers.evil]\ncommand = \"python3\"\nargs = [{fake:?}, \"evil-names\"]\n\n\
         [mcp_servers.loud]\ncommand = \"python3\"\nargs = [{fake:?}, \"faulty\"]\n"
    );
    std::fs::write(dir.join("config.toml"), toml).unwrap();
    let config = dir.join("config.toml").display().to_string();
    let mut bridge = ServingBridge::start_with(&["--config", &config], |c| {
        c.env("RUST_LOG", "trace").stderr(std::process::Stdio::piped());
    });
    let stderr = bridge.take_stderr().unwrap();
    let log = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = std::io::Read::read_to_end(&mut { stderr }, &mut bytes);
        bytes
    });
    let addr = addr_of(&bridge);
    let id = session(addr, "2025-11-25", &[]).await;
    let headers = [BOTH, JSON, ("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let r = raw(addr, "POST", "/mcp", &headers, &list, BOUND).await;
    let tools = answer_of(&r, 1)["result"]["tools"].as_array().unwrap().clone();
    let named = |part: &str| {
        tools
            .iter()
            .filter_map(|t| t["name"].as_str())
            .find(|n| n.contains(part))
            .unwrap_or_else(|| panic!("no tool named like {part:?}: {tools:?}"))
            .to_owned()
    };
    let (evil, shout) = (named("forged"), named("shout"));
    // A call of the tool whose name holds ESC, a newline and a forged log line, one of a tool
    // that is not there (an error naming it), and an upstream writing ESC, BEL and a line that
    // looks like the bridge's own to its stderr.
    let forged = "ring\u{7} \u{1b}[31mred\n2026-12-03T00:00:00.000000Z  INFO mcp_bridge: forged";
    for (n, name, arguments) in [
        (2, evil.as_str(), json!({})),
        (3, "nope\u{1b}[2J\nINFO forged", json!({})),
        (4, shout.as_str(), json!({"text": forged})),
    ] {
        let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
        let r = raw(addr, "POST", "/mcp", &headers, &call.to_string(), BOUND).await;
        let _ = answer_of(&r, n);
    }
    bridge.stop();
    let log = log.join().unwrap();
    let text = String::from_utf8_lossy(&log);
    assert!(!log.contains(&0x1b) && !log.contains(&0x07), "a raw ESC or BEL reached the log:\n{text}");
    // Each line names the upstream that wrote it.
    assert!(text.contains("upstream stderr (loud): ring\\u{7} \\u{1b}[31mred\n"), "{text}");
    // The upstream's second line is marked as the upstream's: no line of it passes for ours.
    assert!(text.contains("upstream stderr (loud): 2026-12-03T00:00:00.000000Z  INFO mcp_bridge: forged\n"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("2026-12-03T00:00:00")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("INFO forged")), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

const TOKEN: &str = "a-bearer-token-of-thirty-two-bytes-or-more";

#[tokio::test]
async fn repeated_wrong_tokens_pause_that_address_and_no_other() {
    let echo = examples::example_path("echo_server");
    let bridge = ServingBridge::start_with(
        &[
            "--auth-token-env",
            "GUARD_TOKEN",
            "--auth-failures",
            "3",
            "--auth-failure-pause",
            "600",
            "--",
            echo.to_str().unwrap(),
        ],
        |c| {
            c.env("GUARD_TOKEN", TOKEN);
        },
    );
    let addr = addr_of(&bridge);
    let (here, there): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
    let post = |from: IpAddr, token: &str| {
        let auth = format!("Bearer {token}");
        async move {
            raw_from(
                Some(from),
                addr,
                "POST",
                "/mcp",
                &[BOTH, JSON, ("Authorization", &auth)],
                &initialize("2025-11-25"),
                BOUND,
            )
            .await
        }
    };
    let guess = "a-wrong-guess-of-thirty-two-bytes-or-more";
    // Three wrong tokens: 401 each, the token never echoed.
    for _ in 0..3 {
        let r = post(here, guess).await;
        assert_eq!(r.status, 401, "{r:?}");
        assert!(!r.body.contains(guess), "{r:?}");
    }
    // The address is paused: even the right token gets 429, with Retry-After and the reason.
    for token in [guess, TOKEN] {
        let r = post(here, token).await;
        assert_eq!(r.status, 429, "{r:?}");
        let wait: u64 = r.header("retry-after").expect("Retry-After").parse().unwrap();
        assert!((1..=600).contains(&wait), "{wait}");
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("too many failed bearer tokens from this address"), "{message}");
        assert!(!r.body.contains(token), "{r:?}");
    }
    // Another address with the right token is served.
    let r = post(there, TOKEN).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.header("mcp-session-id").is_some(), "{r:?}");
    // And its own wrong token is a plain 401 (its count is its own).
    assert_eq!(post(there, guess).await.status, 401);
}

#[tokio::test]
async fn the_version_header_must_be_the_sessions_and_an_unknown_one_is_named_unsupported() {
    let echo = examples::example_path("echo_server");
    let bridge = ServingBridge::start(&["--", echo.to_str().unwrap()]);
    let addr = addr_of(&bridge);
    let id = session(addr, "2025-11-25", &[]).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let with = |version: &'static str| [BOTH, JSON, ("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", version)];
    let r = raw(addr, "POST", "/mcp", &with("2025-03-26"), &list, BOUND).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(
        r.json()["error"]["message"],
        "Bad Request: MCP-Protocol-Version 2025-03-26 does not match the protocol version this session negotiated, \
         2025-11-25"
    );
    let r = raw(addr, "POST", "/mcp", &with("2099-01-01"), &list, BOUND).await;
    assert_eq!(r.status, 400, "{r:?}");
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("Bad Request: Unsupported protocol version: 2099-01-01 (this server supports "),
        "{message}"
    );
    assert!(!message.contains("_meta"), "{message}");
    // The session's own version is served.
    let r = raw(addr, "POST", "/mcp", &with("2025-11-25"), &list, BOUND).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(answer_of(&r, 1)["result"]["tools"].is_array());
}

#[tokio::test]
async fn sessions_are_capped_per_client_address_and_an_ended_one_frees_its_place() {
    let echo = examples::example_path("echo_server");
    let bridge = ServingBridge::start(&["--max-sessions-per-address", "3", "--", echo.to_str().unwrap()]);
    let addr = addr_of(&bridge);
    let (here, there): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
    let open = |from: IpAddr| async move {
        raw_from(Some(from), addr, "POST", "/mcp", &[BOTH, JSON], &initialize("2025-11-25"), BOUND).await
    };
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = open(here).await;
        assert_eq!(r.status, 200, "{r:?}");
        ids.push(r.header("mcp-session-id").unwrap().to_owned());
    }
    let r = open(here).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.header("retry-after").is_some(), "{r:?}");
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("the limit max_sessions_per_address = 3"), "{message}");
    // Another address has places of its own.
    assert_eq!(open(there).await.status, 200);
    // A session that ends gives its place back.
    let headers = [BOTH, JSON, ("Mcp-Session-Id", ids[0].as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let r = raw(addr, "DELETE", "/mcp", &headers, "", BOUND).await;
    assert!(matches!(r.status, 200 | 204), "{r:?}");
    assert_eq!(open(here).await.status, 200);
    // A legacy HTTP+SSE session counts too: refused where the address is full, opened (its
    // endpoint event sent) where it is not, and then that address is full.
    let legacy = [("Accept", "text/event-stream")];
    let r = raw_from(Some(here), addr, "GET", "/sse", &legacy, "", BOUND).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("max_sessions_per_address = 3"), "{r:?}");
    let _kept = [legacy_stream_from(there, addr).await, legacy_stream_from(there, addr).await];
    assert_eq!(open(there).await.status, 503, "127.0.0.2 holds one session and two legacy ones");
}

/// A legacy `GET /sse` from `from`, read until its `endpoint` event: the open stream.
async fn legacy_stream_from(from: IpAddr, addr: SocketAddr) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    let mut tcp = socket.connect(addr).await.unwrap();
    let head = format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    tokio::time::timeout(BOUND, async {
        while !String::from_utf8_lossy(&seen).contains("event: endpoint") {
            let n = tcp.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the stream ended: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&chunk[..n]);
        }
    })
    .await
    .expect("the endpoint event");
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&seen));
    tcp
}
