//! Interop: the official TypeScript SDK client and Python SDK client (third-party peers, see
//! `tests/peers/README.md`) against our `echo_server` example over stdio.
//!
//! Each driver prints one JSON line per step (initialize, tools/list, echo, add, an unknown
//! tool). What the client sent is recorded by a `tee` in front of the server, so the Python
//! client's `server/discover` probe and its 2026-07-28 requests are seen on the wire.

use crate::examples;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn echo_server_path() -> PathBuf {
    examples::example_path("echo_server")
}

/// Runs `runtime driver -- sh -c 'tee LOG | exec echo_server'`; returns the driver's output lines
/// and the client → server lines.
fn drive(runtime: &str, driver: &str, log_name: &str) -> (Vec<Value>, Vec<Value>) {
    let log = std::env::temp_dir().join(format!("mcpwire-interop-{}-{log_name}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let output = Command::new(runtime)
        .arg(support::repo_path(driver))
        .arg("--")
        .args(["sh", "-c", r#"tee "$0" | exec "$1""#])
        .arg(&log)
        .arg(echo_server_path())
        .envs(support::peers())
        .env_remove("MCP_SCRIPT")
        .output()
        .unwrap_or_else(|e| panic!("{runtime} {driver}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{driver} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let steps = stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    (steps, read_lines(&log))
}

fn read_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let _ = std::fs::remove_file(path);
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The steps after initialize are the same for both clients.
fn assert_tool_steps(steps: &[Value], echoed: &str) {
    assert_eq!(steps.len(), 5, "{steps:#?}");
    let list = &steps[1];
    assert_eq!(list["step"], "tools/list");
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["add", "echo", "greet"]);
    assert_eq!(list["result"]["tools"][1]["inputSchema"]["required"], json!(["text"]));

    assert_eq!(steps[2]["name"], "echo");
    assert_eq!(steps[2]["ok"], true);
    assert_eq!(steps[2]["result"]["content"], json!([{"type": "text", "text": echoed}]));
    assert_ne!(steps[2]["result"]["isError"], true);

    assert_eq!(steps[3]["name"], "add");
    assert_eq!(steps[3]["result"]["content"], json!([{"type": "text", "text": "5"}]));

    // An unknown tool is a protocol error (server/tools, "Error Handling"), as the SDK reports it.
    assert_eq!(steps[4]["name"], "no_such_tool");
    assert_eq!(steps[4]["ok"], false, "{}", steps[4]);
    assert_eq!(steps[4]["error"], json!({"code": -32602, "message": "Tool no_such_tool not found"}));
}

#[test]
fn typescript_sdk_client_against_echo_server() {
    let (steps, sent) = drive(&support::peer("MCP_NODE22"), "tests/peers/ts_client.mjs", "ts");
    let init = &steps[0];
    assert_eq!(init["step"], "initialize");
    assert_eq!(init["ok"], true, "{init}");
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["serverInfo"], json!({"name": "mcpwire-echo-server", "version": "0.1.0"}));
    assert_eq!(init["capabilities"], json!({"logging": {}, "tools": {"listChanged": true}}));
    assert_tool_steps(&steps, "hello from ts");

    let methods: Vec<&str> = sent.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "tools/list", "tools/call", "tools/call", "tools/call"]
    );
}

#[test]
fn python_sdk_client_runs_2026_07_28_against_echo_server() {
    let (steps, sent) = drive(&support::peer("MCP_PYTHON"), "tests/peers/py_client.py", "py");
    let init = &steps[0];
    assert_eq!(init["step"], "initialize");
    assert_eq!(init["ok"], true, "{init}");
    assert_eq!(init["handshake"], "discover", "the client adopted 2026-07-28 from server/discover: {init}");
    assert_eq!(init["protocolVersion"], "2026-07-28");
    assert_eq!(init["serverInfo"]["name"], "mcpwire-echo-server");
    assert_tool_steps(&steps, "hello from py");

    // On the wire: the discover probe, then requests that carry their own _meta; no handshake.
    let methods: Vec<&str> = sent.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(&methods[..3], ["server/discover", "tools/list", "tools/call"], "{methods:?}");
    assert!(!methods.contains(&"initialize"), "{methods:?}");
    assert_eq!(sent[1]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
}
