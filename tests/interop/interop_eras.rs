//! Interop across the protocol eras with the third-party peers that speak both
//! (`tests/peers/README.md`):
//! - the TypeScript SDK v2 client (2.4.0) and the Python SDK 2.3 client against our
//!   `echo_server` example over stdio and Streamable HTTP: each negotiates the era its mode asks
//!   for, calls tools, and answers the elicitation of `greet`, in the 2026-07-28 era through its
//!   multi-round-trip loop (`InputRequiredResult`, retried with the answer), in the handshake era
//!   as a server-to-client request;
//! - the typed form of `greet` answered accept, decline and cancel by both SDK clients in both
//!   eras: each answer reaches the tool as its own outcome;
//! - our client, `auto` and `legacy`, against the TypeScript SDK v2 server over both transports
//!   (the Python SDK servers are in `tests/client_eras.rs`).

use crate::examples;
use crate::support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcpwire::client::{Client, ClientOptions, EraPolicy};
use mcpwire::proto::jsonrpc::ErrorObject;
use mcpwire::proto::mcp_types::{ContentBlock, ElicitRequestParams, ElicitResult};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::stdio::ChildCommand;
use serde_json::Value;
use support::{peer, repo_path};

const SCRIPT: &str = r#"[{"call":"echo","args":{"text":"across eras"}},{"call":"greet","args":{}}]"#;

/// A server process listening on a free loopback port (`command` is given the port), stopped
/// on drop.
struct Listening {
    child: Child,
    url: String,
}

impl Listening {
    fn start(command: impl FnOnce(u16) -> Command) -> Listening {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = command(port).stderr(Stdio::null()).spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the server never listened on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Listening { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `echo_server --http`.
fn http_echo() -> Listening {
    Listening::start(|port| {
        let mut command = Command::new(examples::example_path("echo_server"));
        command.args(["--http", &format!("127.0.0.1:{port}")]);
        command
    })
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
    let http = http_echo();
    assert_session(&ts2(&["--mode", "auto", "--url", &http.url]), "2026-07-28");
}

#[test]
fn typescript_sdk_v2_client_in_its_default_mode_runs_the_handshake_era_over_stdio_and_http() {
    // The SDK's default versionNegotiation mode is `legacy`: initialize, at 2025-11-25 with us.
    let server = examples::example_path("echo_server");
    assert_session(&ts2(&["--", server.to_str().unwrap()]), "2025-11-25");
    let http = http_echo();
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

/// `greet` over stdio through the TypeScript SDK v2 client in `mode` (`None`: its default,
/// the handshake era), its elicitation handler answering `action`: the negotiated version and
/// the greeting.
fn ts2_greet(mode: Option<&str>, action: &str) -> (String, String) {
    let server = examples::example_path("echo_server");
    let mut args = mode.map_or_else(Vec::new, |m| vec!["--mode", m]);
    args.extend(["--", server.to_str().unwrap()]);
    let out = Command::new(peer("MCP_NODE"))
        .arg(repo_path("tests/peers/ts2_client.mjs"))
        .args(&args)
        .env("MCP_TS2_DIR", peer("MCP_TS2_DIR"))
        .env("MCP_SCRIPT", r#"[{"call":"greet","args":{}}]"#)
        .env("MCP_ELICIT_ACTION", action)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[3], serde_json::json!({"step": "asked", "count": 1}), "{lines:?}");
    assert_eq!(lines[2]["ok"], true, "{lines:?}");
    (lines[0]["protocolVersion"].as_str().unwrap().to_owned(), lines[2]["result"].as_str().unwrap().to_owned())
}

/// `greet` over stdio through the Python SDK client in `mode`, its callback answering
/// `action`: the negotiated version and the greeting.
fn python_greet_with(mode: &str, action: &str) -> (String, String) {
    let server = examples::example_path("echo_server");
    let out = Command::new(peer("MCP_PYTHON"))
        .arg(repo_path("tests/peers/py_mrtr_client.py"))
        .args([server.to_str().unwrap(), "greet"])
        .env("MCP_PY_MODE", mode)
        .env("MCP_ELICIT_ACTION", action)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(line["asked"], serde_json::json!(["What is your name?"]), "{line}");
    let text = line["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{line}")).to_owned();
    (line["protocolVersion"].as_str().unwrap().to_owned(), text)
}

/// The typed form of `greet` (`Form<Name>`, `Elicited`): accept, decline and cancel, as each SDK
/// client answers them, reach the tool as three outcomes, in the handshake era (a
/// server-to-client request) and in 2026-07-28 (a multi-round-trip round).
#[test]
fn both_sdk_clients_accept_decline_and_cancel_the_typed_form_in_both_eras() {
    let expected = [("decline", "Hello, whoever you are!"), ("cancel", "Greeting cancelled.")];
    for (mode, version) in [(None, "2025-11-25"), (Some("auto"), "2026-07-28")] {
        assert_eq!(ts2_greet(mode, "accept"), (version.to_owned(), "Hello, from-ts2!".to_owned()), "{mode:?}");
        for (action, greeting) in expected {
            assert_eq!(ts2_greet(mode, action), (version.to_owned(), greeting.to_owned()), "{mode:?} {action}");
        }
    }
    for (mode, version) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        assert_eq!(python_greet_with(mode, "accept"), (version.to_owned(), "Hello, from-py!".to_owned()), "{mode}");
        for (action, greeting) in expected {
            assert_eq!(python_greet_with(mode, action), (version.to_owned(), greeting.to_owned()), "{mode} {action}");
        }
    }
}

#[test]
fn python_sdk_client_in_its_default_mode_answers_greet_through_mrtr_over_stdio_and_http() {
    let http = http_echo();
    let server = examples::example_path("echo_server");
    for line in [python_greet(server.to_str().unwrap()), python_greet(&http.url)] {
        assert_eq!(line["protocolVersion"], "2026-07-28", "{line}");
        assert_eq!(line["discover"], true, "{line}");
        assert_eq!(line["asked"], serde_json::json!(["What is your name?"]), "{line}");
        assert_eq!(line["result"]["content"][0]["text"], "Hello, from-py!", "{line}");
    }
}

/// `ts2_server.mjs` (the TypeScript SDK v2's server) as a stdio child.
fn ts2_server() -> ChildCommand {
    ChildCommand::new(peer("MCP_NODE"))
        .arg(repo_path("tests/peers/ts2_server.mjs").to_string_lossy().into_owned())
        .env("MCP_TS2_DIR", peer("MCP_TS2_DIR"))
}

/// `ts2_server.mjs --http`.
fn http_ts2() -> Listening {
    Listening::start(|port| {
        let mut command = Command::new(peer("MCP_NODE"));
        command.arg(repo_path("tests/peers/ts2_server.mjs")).args(["--http", &port.to_string()]);
        command.env("MCP_TS2_DIR", peer("MCP_TS2_DIR"));
        command
    })
}

async fn name_grace(params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
    assert!(matches!(&params, ElicitRequestParams::Form(f) if f.message == "What is your name?"), "{params:?}");
    Ok(serde_json::from_value(serde_json::json!({"action": "accept", "content": {"name": "grace"}})).unwrap())
}

async fn call_text<T: mcpwire::transport::Transport>(client: &Client<T>, tool: &str, args: Value) -> String {
    let result = client.call_tool(tool, args.as_object().cloned(), Default::default()).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    match &result.content[..] {
        [ContentBlock::Text(t)] => t.text.clone(),
        other => panic!("{tool}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn our_client_runs_the_era_its_policy_asks_against_the_typescript_sdk_v2_server_over_stdio() {
    for (era, expected) in
        [(EraPolicy::Auto, ProtocolVersion::V2026_07_28), (EraPolicy::Legacy, ProtocolVersion::V2025_11_25)]
    {
        let options = ClientOptions::default().with_era(era).with_elicitation(name_grace);
        let client = Client::spawn(ts2_server(), options).await.unwrap();
        assert_eq!(client.protocol_version(), expected, "{era}");
        assert_eq!(call_text(&client, "echo", serde_json::json!({"text": "to ts2"})).await, "to ts2");
        // Under auto an input_required round answered by our handler; under legacy a request.
        assert_eq!(call_text(&client, "greet", serde_json::json!({})).await, "Hello, grace!", "{era}");
        client.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn our_client_runs_the_era_its_policy_asks_against_the_typescript_sdk_v2_server_over_http() {
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
    let server = http_ts2();
    let connect = |era| {
        let transport = HttpClientTransport::new(HttpClientConfig::new(server.url.clone())).unwrap();
        Client::connect(transport, ClientOptions::default().with_era(era).with_elicitation(name_grace))
    };
    let client = connect(EraPolicy::Auto).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.transport().session_id(), None, "stateless");
    assert_eq!(call_text(&client, "greet", serde_json::json!({})).await, "Hello, grace!");
    client.close().await.unwrap();
    // Its 2025 side over HTTP is a stateless fallback (no back-channel for a server request).
    let client = connect(EraPolicy::Legacy).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(call_text(&client, "echo", serde_json::json!({"text": "to ts2"})).await, "to ts2");
    client.close().await.unwrap();
}
