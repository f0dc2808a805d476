//! Interop across the protocol eras: the TypeScript SDK v2 client (2.4.0) and the Python SDK 2.3
//! client, third-party peers that speak both eras (`tests/peers/README.md`), against our
//! `echo_server` example over stdio and Streamable HTTP. Each negotiates the era its mode asks
//! for, calls tools, and answers the elicitation of `greet`: in the 2026-07-28 era through its
//! multi-round-trip loop (`InputRequiredResult`, retried with the answer), in the handshake era
//! as a server-to-client request.

#[path = "support/examples.rs"]
mod examples;
mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{peer, repo_path};

const SCRIPT: &str = r#"[{"call":"echo","args":{"text":"across eras"}},{"call":"greet","args":{}}]"#;

/// `echo_server --http` on a free loopback port, stopped on drop.
struct HttpEcho {
    child: Child,
    url: String,
}

impl HttpEcho {
    fn start() -> HttpEcho {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(examples::example_path("echo_server"))
            .args(["--http", &format!("127.0.0.1:{port}")])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "echo_server never listened on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        HttpEcho { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for HttpEcho {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `ts2_client.mjs` with `args`; its output lines.
fn ts2(args: &[&str]) -> Vec<Value> {
    let out = Command::new(peer("MCP_NODE"))
        .arg(repo_path("tests/peers/ts2_client.mjs"))
        .args(args)
        .env("MCP_TS2_DIR", peer("MCP_TS2_DIR"))
        .env("MCP_SCRIPT", SCRIPT)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The TypeScript v2 client's session: negotiated `version`, the tools, the calls, one
/// elicitation answered by its handler.
fn assert_session(lines: &[Value], version: &str) {
    assert_eq!(lines[0]["protocolVersion"], version, "{lines:?}");
    assert_eq!(lines[1]["result"], serde_json::json!(["add", "echo", "greet"]), "{lines:?}");
    assert_eq!((lines[2]["ok"].as_bool(), lines[2]["result"].as_str()), (Some(true), Some("across eras")), "{lines:?}");
    assert_eq!(
        (lines[3]["ok"].as_bool(), lines[3]["result"].as_str()),
        (Some(true), Some("Hello, from-ts2!")),
        "{lines:?}"
    );
    assert_eq!(lines[4], serde_json::json!({"step": "asked", "count": 1}), "{lines:?}");
}

#[test]
fn typescript_sdk_v2_client_in_auto_mode_runs_2026_07_28_over_stdio_and_http() {
    let server = examples::example_path("echo_server");
    assert_session(&ts2(&["--mode", "auto", "--", server.to_str().unwrap()]), "2026-07-28");
    let http = HttpEcho::start();
    assert_session(&ts2(&["--mode", "auto", "--url", &http.url]), "2026-07-28");
}

#[test]
fn typescript_sdk_v2_client_in_its_default_mode_runs_the_handshake_era_over_stdio_and_http() {
    // The SDK's default versionNegotiation mode is `legacy`: initialize, at 2025-11-25 with us.
    let server = examples::example_path("echo_server");
    assert_session(&ts2(&["--", server.to_str().unwrap()]), "2025-11-25");
    let http = HttpEcho::start();
    assert_session(&ts2(&["--url", &http.url]), "2025-11-25");
}

/// Runs `py_mrtr_client.py TARGET greet` (the Python SDK client, default mode 'auto'); its line.
fn python_greet(target: &str) -> Value {
    let out = Command::new(peer("MCP_PYTHON"))
        .arg(repo_path("tests/peers/py_mrtr_client.py"))
        .args([target, "greet"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap()
}

#[test]
fn python_sdk_client_in_its_default_mode_answers_greet_through_mrtr_over_stdio_and_http() {
    let http = HttpEcho::start();
    let server = examples::example_path("echo_server");
    for line in [python_greet(server.to_str().unwrap()), python_greet(&http.url)] {
        assert_eq!(line["protocolVersion"], "2026-07-28", "{line}");
        assert_eq!(line["discover"], true, "{line}");
        assert_eq!(line["asked"], serde_json::json!(["What is your name?"]), "{line}");
        assert_eq!(line["result"]["content"][0]["text"], "Hello, from-py!", "{line}");
    }
}
