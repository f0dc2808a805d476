//! examples/axum.rs (the library's `HttpService` mounted in an axum app beside its own
//! `GET /hello`, under tower-http CORS and an auth middleware that puts a user into the
//! request's extensions) driven by the official TypeScript SDK client (handshake era), the
//! TypeScript SDK v2 client in both of its negotiation modes, the Python SDK client in both eras
//! (its default mode: 2026-07-28 `server/discover`, one POST per request; and told to use the
//! handshake era) and the MCP inspector's CLI: the `whoami` tool sees the user the app's
//! middleware put into the extensions of its own request, and the peer's address; the app's own
//! route and its refusal answer beside it.

use crate::examples::example_path;
use crate::http_support::{self, raw, BOTH, JSON, SHORT};
use crate::support;

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The example, listening on a free loopback port (its first argument: `127.0.0.1:0`).
async fn axum_app() -> (Child, SocketAddr) {
    let mut child = Command::new(example_path("axum"))
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("examples/axum.rs runs");
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let read = stdout.read_line(&mut line);
    tokio::time::timeout(Duration::from_secs(60), read).await.expect("it says where it listens").unwrap();
    let url = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line:?}"));
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    (child, addr)
}

/// Runs an SDK driver (`tests/peers/SCRIPT`, with `options` before its `--url`) against the app
/// as `user`; returns its JSON lines.
async fn drive(program: String, script: &str, options: &[&str], addr: SocketAddr, user: &str) -> Vec<Value> {
    drive_with(program, script, options, &[], addr, user).await
}

/// [`drive`] with more environment variables for the driver.
async fn drive_with(
    program: String,
    script: &str,
    options: &[&str],
    env: &[(&str, &str)],
    addr: SocketAddr,
    user: &str,
) -> Vec<Value> {
    let driver = support::repo_path(&format!("tests/peers/{script}")).display().to_string();
    let steps = json!([{"call": "whoami", "args": {}}, {"call": "echo", "args": {"text": "through axum"}}]);
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(program)
            .arg(driver)
            .args(options)
            .args(["--url".into(), format!("http://{addr}/mcp")])
            .env("MCP_SCRIPT", steps.to_string())
            .env("MCP_HTTP_HEADERS", json!({"X-User": user}).to_string())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("driver finished in time")
    .expect("driver ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "driver failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The text of the result of the `tools/call` of `name` among a driver's lines (`ts2_client.mjs`
/// writes the text itself as the result, the other drivers the result object).
fn called<'l>(lines: &'l [Value], name: &str) -> &'l str {
    let line = lines
        .iter()
        .find(|l| l["step"] == "tools/call" && l["name"] == name)
        .unwrap_or_else(|| panic!("no call of {name} in {lines:?}"));
    assert_eq!(line["ok"], true, "{line}");
    let result = &line["result"];
    result.as_str().or_else(|| result["content"][0]["text"].as_str()).unwrap_or_else(|| panic!("{line}"))
}

/// The MCP inspector's CLI against the app as `user`, over Streamable HTTP: the result of one
/// method, as its JSON.
async fn inspector(addr: SocketAddr, user: &str, args: &[&str]) -> Value {
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(support::peer("MCP_NODE"))
            .arg(support::peer("MCP_INSPECTOR_CLI_JS"))
            .args(["--cli", &format!("http://{addr}/mcp"), "--transport", "http"])
            .args(["--header", &format!("X-User: {user}")])
            .args(args)
            .args(["--format", "json", "-q"])
            .env("HOME", std::env::temp_dir())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the inspector finished in time")
    .expect("the inspector ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{args:?}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    line["result"].clone()
}

#[tokio::test]
async fn sdk_clients_reach_the_mounted_service_and_its_tool_sees_the_apps_user() {
    let (_app, addr) = axum_app().await;

    // The app's own route, beside the MCP endpoint.
    let hello = raw(addr, "GET", "/hello", &[], "", SHORT).await;
    assert_eq!((hello.status, hello.body.as_str()), (200, "hello"), "{hello:?}");

    // The app's middleware runs before the MCP endpoint: no user, no MCP.
    let init = http_support::initialize_body("2025-11-25");
    let refused = raw(addr, "POST", "/mcp", &[BOTH, JSON], &init, SHORT).await;
    assert_eq!((refused.status, refused.body.as_str()), (401, "unknown user: send X-User"), "{refused:?}");

    // The library's own guards stay on inside the Service: a foreign Origin is refused.
    let foreign =
        raw(addr, "POST", "/mcp", &[BOTH, JSON, ("X-User", "eve"), ("Origin", "https://evil.example")], &init, SHORT)
            .await;
    assert_eq!(foreign.status, 403, "{foreign:?}");

    // tower-http's CORS answers a browser's preflight for the inspector's origin.
    let preflight = raw(
        addr,
        "OPTIONS",
        "/mcp",
        &[
            ("Origin", "http://localhost:6274"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type,mcp-protocol-version,x-user"),
        ],
        "",
        SHORT,
    )
    .await;
    assert_eq!(preflight.status, 200, "{preflight:?}");
    assert_eq!(preflight.header("access-control-allow-origin"), Some("http://localhost:6274"), "{preflight:?}");

    // The TypeScript SDK client: a handshake-era session; each call carries the POST it came in.
    let ts = drive(support::peer("MCP_NODE"), "ts_client.mjs", &[], addr, "alice").await;
    assert_eq!(ts[0]["step"], "initialize", "{ts:?}");
    assert_eq!(ts[0]["serverInfo"]["name"], "mcpwire-echo-server", "{ts:?}");
    let who = called(&ts, "whoami");
    assert!(who.starts_with("alice (from 127.0.0.1:"), "{who}");
    assert_eq!(called(&ts, "echo"), "through axum");

    // The Python SDK client in its default mode: 2026-07-28, each request its own POST.
    let py = drive(support::peer("MCP_PYTHON"), "py_client.py", &[], addr, "bob").await;
    assert_eq!(py[0]["step"], "initialize", "{py:?}");
    assert_eq!(py[0]["handshake"], "discover", "{py:?}");
    let who = called(&py, "whoami");
    assert!(who.starts_with("bob (from 127.0.0.1:"), "{who}");
    assert_eq!(called(&py, "echo"), "through axum");

    // The Python SDK client told to speak the handshake era: one session, initialize first.
    let legacy = [("MCP_PY_MODE", "legacy")];
    let py = drive_with(support::peer("MCP_PYTHON"), "py_client.py", &[], &legacy, addr, "bo").await;
    assert_eq!(
        (&py[0]["handshake"], &py[0]["protocolVersion"]),
        (&json!("initialize"), &json!("2025-11-25")),
        "{py:?}"
    );
    let who = called(&py, "whoami");
    assert!(who.starts_with("bo (from 127.0.0.1:"), "{who}");

    // The TypeScript SDK v2 client, in its default mode (initialize) and in `auto` (2026-07-28).
    for (mode, user, era) in [("legacy", "carol", "2025-11-25"), ("auto", "dave", "2026-07-28")] {
        let ts2 = drive(support::peer("MCP_NODE"), "ts2_client.mjs", &["--mode", mode], addr, user).await;
        assert_eq!((&ts2[0]["step"], &ts2[0]["protocolVersion"]), (&json!("connect"), &json!(era)), "{ts2:?}");
        let who = called(&ts2, "whoami");
        assert!(who.starts_with(&format!("{user} (from 127.0.0.1:")), "{mode}: {who}");
        assert_eq!(called(&ts2, "echo"), "through axum", "{mode}");
    }

    // The inspector's CLI: lists the tools and calls one as its own user.
    let tools = inspector(addr, "erin", &["--method", "tools/list"]).await;
    let mut names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert!(names.contains(&"whoami") && names.contains(&"echo"), "{names:?}");
    let who = inspector(addr, "erin", &["--method", "tools/call", "--tool-name", "whoami"]).await;
    let who = who["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{who}"));
    assert!(who.starts_with("erin (from 127.0.0.1:"), "{who}");
}
