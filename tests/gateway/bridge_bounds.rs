//! `mcp-bridge serve` held to its bounds (issue 36): no secret of the bridge reaches an
//! upstream child (its environment read through `/proc/PID/environ`, in inline and `--config`
//! modes), and the bridge's own environment is unreadable to its upstreams; sessions holding
//! per-session children are capped, and so are HTTP sessions. Every test drives the real
//! binary over loopback HTTP in front of real child processes.

use crate::examples;
use crate::http_support;
use crate::serving;
use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;
use serving::{children_of, ServingBridge};

/// The bearer token of the tests: a value no other variable holds.
const SECRET: &str = "bridge-secret-0f9e8d7c6b5a49382716";

fn scratch(name: &str) -> PathBuf {
    crate::support::scratch_dir("bounds", name)
}

fn echo_server() -> String {
    examples::example_path("echo_server").display().to_string()
}

/// The environment of process `pid`, from `/proc/PID/environ`.
fn environ(pid: u32) -> BTreeMap<String, String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_else(|e| panic!("/proc/{pid}/environ: {e}"));
    raw.split(|b| *b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (k, v) = entry.split_once('=').unwrap_or((&entry, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// The environments of the bridge's children running `program`.
fn child_environs(bridge: &ServingBridge, program: &str) -> Vec<BTreeMap<String, String>> {
    children_of(bridge.pid())
        .into_iter()
        .filter(|(_, cmd)| cmd.contains(program))
        .map(|(pid, _)| environ(pid))
        .collect()
}

/// The variables every test bridge is started with: the token, the introspection client's
/// secret (read by the bridge only with `--auth-introspect`, withheld all the same), a
/// variable nobody configured, and a locale variable of the allow-list.
fn bridge_env(command: &mut Command) {
    command
        .env("MYTOK", SECRET)
        .env("MCP_BRIDGE_INTROSPECT_CLIENT_SECRET", "introspection-secret")
        .env("BRIDGE_TEST_CANARY", "not-configured")
        .env("BRIDGE_TEST_PASSED", "passed")
        .env("LC_MESSAGES", "C");
}

/// No trace of the bridge's credentials in `env`, and the system basics there.
fn assert_clean(env: &BTreeMap<String, String>) {
    assert!(!env.contains_key("MYTOK"), "the --auth-token-env variable reached a child: {env:?}");
    assert!(!env.values().any(|v| v.contains(SECRET)), "the token's value reached a child: {env:?}");
    assert!(!env.contains_key("MCP_BRIDGE_INTROSPECT_CLIENT_SECRET"), "the introspection secret reached a child");
    assert!(!env.contains_key("BRIDGE_TEST_CANARY"), "a variable nobody configured reached a child: {env:?}");
    assert_eq!(env.get("PATH").map(String::as_str), std::env::var("PATH").ok().as_deref(), "PATH is passed");
    assert_eq!(env.get("LC_MESSAGES").map(String::as_str), Some("C"), "LC_* are passed: {env:?}");
}

#[test]
fn an_inline_upstream_gets_no_credential_of_the_bridge() {
    let echo = echo_server();
    let bridge = ServingBridge::start_with(&["--auth-token-env", "MYTOK", "--", &echo], bridge_env);
    let envs = child_environs(&bridge, "echo_server");
    assert_eq!(envs.len(), 1, "one upstream child");
    assert_clean(&envs[0]);
    assert!(!envs[0].contains_key("BRIDGE_TEST_PASSED"), "not asked for");

    // --pass-env passes a variable of the operator's choice, and never a credential.
    let bridge = ServingBridge::start_with(
        &["--auth-token-env", "MYTOK", "--pass-env", "BRIDGE_TEST_PASSED", "--", &echo],
        bridge_env,
    );
    let envs = child_environs(&bridge, "echo_server");
    assert_clean(&envs[0]);
    assert_eq!(envs[0].get("BRIDGE_TEST_PASSED").map(String::as_str), Some("passed"));
    let refused = Command::new(examples::bin_path("mcp-bridge"))
        .args(["serve", "--listen", "http://127.0.0.1:0/mcp", "--auth-token-env", "MYTOK", "--pass-env", "MYTOK"])
        .arg("--")
        .arg(&echo)
        .env("MYTOK", SECRET)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--pass-env MYTOK") && stderr.contains("credential"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
}

#[test]
fn configured_upstreams_get_their_own_variables_and_no_credential_of_the_bridge() {
    let dir = scratch("env-toml");
    let echo = echo_server();
    // codex TOML: `plain` asks for a variable of ours and sets one; `greedy` asks for the
    // bridge's token and is refused, naming the variable (never its value).
    let toml = format!(
        "[mcp_servers.plain]\ncommand = {echo:?}\nenv_vars = [\"BRIDGE_TEST_PASSED\"]\n\
         env = {{ BRIDGE_TEST_LITERAL = \"literal\" }}\n\n\
         [mcp_servers.greedy]\ncommand = {echo:?}\nenv_vars = [\"MYTOK\"]\n"
    );
    std::fs::write(dir.join("config.toml"), toml).unwrap();
    let config = dir.join("config.toml").display().to_string();
    let bridge = ServingBridge::start_with(&["--auth-token-env", "MYTOK", "--config", &config], bridge_env);
    let envs = child_environs(&bridge, "echo_server");
    assert_eq!(envs.len(), 1, "only `plain` runs: {envs:?}");
    assert_clean(&envs[0]);
    assert_eq!(envs[0].get("BRIDGE_TEST_PASSED").map(String::as_str), Some("passed"));
    assert_eq!(envs[0].get("BRIDGE_TEST_LITERAL").map(String::as_str), Some("literal"));
    // /readyz says ready (greedy is not required) and no more; the details want the token.
    assert_eq!(serving::http_get(&bridge.url, "/readyz", None), (200, r#"{"ready":true}"#.to_owned()));
    assert_eq!(serving::http_get(&bridge.url, "/readyz/details", None).0, 401);
    let (_, body) = serving::http_get(&bridge.url, "/readyz/details", Some(SECRET));
    let ready: Value = serde_json::from_str(&body).unwrap();
    let greedy = ready["servers"].as_array().unwrap().iter().find(|s| s["server"] == "greedy").unwrap().clone();
    assert_eq!(greedy["state"], "failed", "{ready}");
    assert!(greedy["error"].as_str().unwrap().contains("MYTOK"), "{greedy}");
    assert!(!body.contains(SECRET), "{body}");
    drop(bridge);

    // A Claude-style JSON import, whose servers would inherit our whole environment.
    let json =
        serde_json::json!({"mcpServers": {"imported": {"command": echo, "env": {"BRIDGE_TEST_LITERAL": "json"}}}});
    std::fs::write(dir.join("claude.json"), json.to_string()).unwrap();
    let config = dir.join("claude.json").display().to_string();
    let bridge = ServingBridge::start_with(&["--auth-token-env", "MYTOK", "--config", &config], bridge_env);
    let envs = child_environs(&bridge, "echo_server");
    assert_eq!(envs.len(), 1);
    assert_clean(&envs[0]);
    assert_eq!(envs[0].get("BRIDGE_TEST_LITERAL").map(String::as_str), Some("json"));
}

/// `COMMAND` as user nobody when we are root (an upstream runs as the bridge's user: the test
/// needs a user without CAP_SYS_PTRACE, which reads any process's environment).
fn as_unprivileged(program: &str) -> Command {
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"));
    if root {
        let mut command = Command::new("setpriv");
        command.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
        command
    } else {
        Command::new(program)
    }
}

#[test]
fn an_upstream_of_the_same_user_cannot_read_the_bridges_own_environment() {
    let echo = echo_server();
    let mut bridge = as_unprivileged(examples::bin_path("mcp-bridge"))
        .args(["serve", "--listen", "http://127.0.0.1:0/mcp", "--auth-token-env", "MYTOK", "--", &echo])
        .env("MYTOK", SECRET)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    /// Stops the bridge however the test ends.
    struct Stop(u32);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = Command::new("kill").args(["-TERM", &self.0.to_string()]).status();
        }
    }
    let stop = Stop(bridge.id());
    let mut lines = BufReader::new(bridge.stdout.take().unwrap()).lines();
    let banner = lines.next().unwrap().unwrap();
    assert!(banner.starts_with("mcp-bridge: serving MCP on "), "{banner}");
    std::thread::spawn(move || lines.for_each(drop));
    let upstream = children_of(bridge.id()).into_iter().find(|(_, c)| c.contains("echo_server")).unwrap().0;
    // A process of the upstreams' user reads an upstream's environment (same user) ...
    let read = |pid: u32| as_unprivileged("cat").arg(format!("/proc/{pid}/environ")).output().unwrap();
    let child = read(upstream);
    assert!(child.status.success(), "the reader can read its peers: {}", String::from_utf8_lossy(&child.stderr));
    // ... and not the bridge's, which holds the token.
    assert!(serving::alive(bridge.id()));
    let own = read(bridge.id());
    assert!(!own.status.success(), "the bridge's environment is readable by its upstreams' user");
    assert!(!String::from_utf8_lossy(&own.stdout).contains(SECRET));
    assert!(serving::alive(bridge.id()), "the bridge was there to be read");
    assert!(serving::alive(upstream));
    drop(stop);
    bridge.wait().unwrap();
}

/// A handshake-era client of the bridge at `url` (a session of its own on the bridge).
async fn legacy_client(url: &str) -> HttpClient {
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
    let transport = HttpClientTransport::new(HttpClientConfig::new(url)).unwrap();
    let options = mcpwire::client::ClientOptions::default().with_era(mcpwire::client::EraPolicy::Legacy);
    mcpwire::client::Client::connect(transport, options).await.unwrap()
}

/// How many echo_server children the bridge has.
fn echo_children(bridge: &ServingBridge) -> usize {
    children_of(bridge.pid()).iter().filter(|(_, cmd)| cmd.contains("echo_server")).count()
}

/// Waits (polling `/proc`, at most 20 s) until the bridge has `count` echo_server children.
async fn until_echo_children(bridge: &ServingBridge, count: usize) {
    let waited = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while echo_children(bridge) != count {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    assert!(waited.await.is_ok(), "{count} echo_server children: {:?}", children_of(bridge.pid()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_session_children_are_capped_and_a_session_past_the_cap_is_told_the_limit() {
    let dir = scratch("per-session-cap");
    let echo = echo_server();
    std::fs::write(dir.join("config.toml"), format!("[mcp_servers.echo]\ncommand = {echo:?}\n")).unwrap();
    let config = dir.join("config.toml").display().to_string();
    let bridge = ServingBridge::start(&["--config", &config, "--per-session", "echo", "--max-per-session-sets", "2"]);
    until_echo_children(&bridge, 1).await; // the shared connection, which lists the tools
    let (first, second, third) =
        (legacy_client(&bridge.url).await, legacy_client(&bridge.url).await, legacy_client(&bridge.url).await);
    assert_eq!(text(&echo_in(&first, "one").await.unwrap()), "one");
    assert_eq!(text(&echo_in(&second, "two").await.unwrap()), "two");
    assert_eq!(echo_children(&bridge), 3, "the shared child and one per session");
    // The third session is past the cap: an error naming the limit, and no child started.
    for _ in 0..3 {
        let refused = echo_in(&third, "three").await.expect_err("past the cap");
        let message = refused.to_string();
        assert!(message.contains("max_per_session_sets = 2"), "{message}");
    }
    assert_eq!(echo_children(&bridge), 3, "no child past the cap");
    // The sessions inside the cap are unharmed; one ends, and the third gets its place.
    assert_eq!(text(&echo_in(&second, "still").await.unwrap()), "still");
    first.close().await.unwrap();
    until_echo_children(&bridge, 2).await;
    assert_eq!(text(&echo_in(&third, "three").await.unwrap()), "three");
    assert_eq!(echo_children(&bridge), 3);
    assert_eq!(text(&echo_in(&second, "two again").await.unwrap()), "two again");
    let _ = std::fs::remove_dir_all(&dir);
}

type HttpClient = mcpwire::client::Client<mcpwire::transport::sse_http::HttpClientTransport>;

/// Calls the per-session echo server's `echo` through the bridge.
async fn echo_in(
    client: &HttpClient,
    text: &str,
) -> Result<mcpwire::proto::mcp_types::CallToolResult, mcpwire::client::ClientError> {
    client
        .call_tool("mcp__echo__echo", serde_json::json!({"text": text}).as_object().cloned(), Default::default())
        .await
}

fn text(result: &mcpwire::proto::mcp_types::CallToolResult) -> String {
    let content = serde_json::to_value(&result.content).unwrap();
    content.as_array().into_iter().flatten().filter_map(|b| b["text"].as_str()).collect()
}

/// A `tools/call` of `echo` in session `id` (2025-11-25): the text it answered.
async fn echo_in_session(addr: std::net::SocketAddr, id: &str, text: &str) -> String {
    use http_support::{raw, BOTH, JSON, SHORT};
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}}});
    let headers = [BOTH, JSON, ("Mcp-Session-Id", id), ("MCP-Protocol-Version", "2025-11-25")];
    let r = raw(addr, "POST", "/mcp", &headers, &call.to_string(), SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    let answer = r.messages().into_iter().find(|m| m["id"] == 7).unwrap_or_else(|| panic!("{r:?}"));
    answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}")).to_owned()
}

#[test]
fn the_session_cap_has_a_documented_default() {
    use mcpwire::transport::sse_http::server::DEFAULT_MAX_SESSIONS;
    let config = mcpwire::transport::sse_http::HttpServerConfig::default();
    assert_eq!((config.max_sessions, DEFAULT_MAX_SESSIONS), (10_000, 10_000));
    assert_eq!(config.sessions_retry_after, std::time::Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_past_the_cap_get_503_with_retry_after_and_a_closed_one_makes_room() {
    use http_support::{initialize_body, raw, raw_session, BOTH, JSON, SHORT};
    let echo = echo_server();
    let bridge = ServingBridge::start(&["--max-sessions", "3", "--", &echo]);
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], bridge.port()).into();
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(raw_session(addr, "2025-11-25").await);
    }
    let refused = || async {
        let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT).await;
        assert_eq!(r.status, 503, "{r:?}");
        assert_eq!(r.header("retry-after"), Some("5"), "{r:?}");
        assert!(r.header("mcp-session-id").is_none(), "{r:?}");
        let error = r.json();
        assert_eq!(error["error"]["code"], -32000, "{error}");
        assert!(error["error"]["message"].as_str().unwrap().contains("max_sessions = 3"), "{error}");
    };
    for _ in 0..3 {
        refused().await;
    }
    // The legacy transport's sessions count too.
    let legacy = raw(addr, "GET", "/sse", &[("Accept", "text/event-stream")], "", SHORT).await;
    assert_eq!(legacy.status, 503, "{legacy:?}");
    // The sessions held are unharmed.
    for (n, id) in ids.iter().enumerate() {
        assert_eq!(echo_in_session(addr, id, &format!("held {n}")).await, format!("held {n}"));
    }
    // One closes: its place goes to a new session, and the cap holds again.
    let headers = [("Mcp-Session-Id", ids[0].as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    assert_eq!(raw(addr, "DELETE", "/mcp", &headers, "", SHORT).await.status, 200);
    let fresh = raw_session(addr, "2025-11-25").await;
    refused().await;
    assert_eq!(echo_in_session(addr, &fresh, "fresh").await, "fresh");
    assert_eq!(echo_in_session(addr, &ids[1], "still").await, "still");
}

#[test]
fn names_an_upstream_chose_are_printed_with_their_control_characters_escaped() {
    let output = Command::new(examples::bin_path("mcp-bridge"))
        .args(["tools", "--"])
        .arg(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/fixtures/fake_server.py"))
        .arg("evil-names")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(!stdout.contains('\x1b') && !stdout.contains('\x07'), "{stdout:?}");
    let evil: Vec<&str> = stdout.lines().filter(|l| l.starts_with("evil")).collect();
    assert_eq!(evil, [r"evil\u{1b}[2J\nINFO forged line — rings\u{7} a bell"], "{stdout}");
    assert!(!stdout.lines().any(|l| l.starts_with("INFO forged")), "no forged line: {stdout}");
}

/// How many file descriptors process `pid` holds.
fn fds_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or_else(|e| panic!("/proc/{pid}/fd: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recording_two_thousand_sessions_under_ulimit_256_holds_no_file_each_and_serves_everyone() {
    use http_support::raw_session;
    let dir = scratch("record-fds");
    let echo = echo_server();
    let record = dir.join("recordings").display().to_string();
    let bridge = ServingBridge::start(&["--record", &record, "--", &echo]);
    let limited = Command::new("prlimit")
        .args([&format!("--pid={}", bridge.pid()), "--nofile=256:256"])
        .status()
        .expect("prlimit runs");
    assert!(limited.success());
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], bridge.port()).into();
    let mut ids = Vec::new();
    for _ in 0..2000 {
        ids.push(raw_session(addr, "2025-11-25").await);
    }
    // Every session is held and recorded, and none holds a file open.
    assert!(fds_of(bridge.pid()) < 64, "fds: {}", fds_of(bridge.pid()));
    let files = std::fs::read_dir(&record).unwrap().count();
    assert_eq!(files, 2000, "one recording per session");
    // Old and new sessions are served, and recorded.
    assert_eq!(echo_in_session(addr, &ids[0], "first").await, "first");
    assert_eq!(echo_in_session(addr, &ids[1999], "last").await, "last");
    let fresh = raw_session(addr, "2025-11-25").await;
    assert_eq!(echo_in_session(addr, &fresh, "fresh").await, "fresh");
    let recorded: Vec<String> = std::fs::read_dir(&record)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .filter(|text| text.contains("\"fresh\""))
        .collect();
    assert_eq!(recorded.len(), 1, "the fresh session's call is on record");
    let header: Value = serde_json::from_str(recorded[0].lines().next().unwrap()).unwrap();
    assert_eq!(header["transport"], "stdio", "message level: {header}");
    assert!(header["description"].as_str().unwrap().contains("streamable-http session"), "{header}");
    assert!(recorded[0].lines().count() >= 5, "initialize, its answer, initialized, the call, its answer");
    drop(bridge);
    let _ = std::fs::remove_dir_all(&dir);
}
