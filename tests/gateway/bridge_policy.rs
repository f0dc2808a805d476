//! `mcp-bridge serve` with a `[gateway]` table: named bearer tokens and OAuth callers, and the
//! policy that decides, per caller, which tools, prompts and resources of the upstreams
//! (mcpwire's echo_server and server-everything, over stdio) each one lists and may use,
//! through one endpoint. Rules reload with the file (SIGHUP) while sessions stay up; a file
//! whose rules do not read is refused at start and on reload (the rules in force kept), with
//! the line and field named; a reload keeps the buckets of the limits it did not change.

use crate::examples;
use crate::oauth_support;
use crate::serving;
use crate::support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use mcpwire::client::{CallOptions, Client, ClientError, ClientOptions, EraPolicy};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use oauth_support::AuthServer;
use serde_json::{json, Value};
use serving::{http_get, ServingBridge};

const CI_TOKEN: &str = "ci-token-3f9a1c";
const DEV_TOKEN: &str = "dev-token-77b2e0";

fn scratch(name: &str) -> PathBuf {
    crate::support::scratch_dir("bridge-policy", name)
}

fn upstreams() -> String {
    format!(
        "[mcp_servers.echo]\ncommand = {:?}\n\n[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n",
        examples::example_path("echo_server").display().to_string(),
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS")
    )
}

/// The named-token policy: ci may use echo's tools and nothing of everything's (an explicit
/// rule, so that refusals name it); dev may use everything but everything's `echo`.
fn token_policy(ci_may_echo_everything: bool) -> String {
    let opening = if ci_may_echo_everything {
        "[[gateway.policy.rules]]\nname = \"ci-everything-echo\"\neffect = \"allow\"\ncallers = { tokens = [\"ci\"] }\ntools = [\"everything/echo\"]\n\n"
    } else {
        ""
    };
    format!(
        r#"{upstreams}
[gateway.tokens]
ci = {{ env = "CI_TOKEN" }}
dev = {{ env = "DEV_TOKEN" }}

[gateway.policy]
default = "deny"

{opening}[[gateway.policy.rules]]
name = "ci-echo"
effect = "allow"
callers = {{ tokens = ["ci"] }}
tools = ["echo/*"]

[[gateway.policy.rules]]
name = "ci-not-everything"
effect = "deny"
callers = {{ tokens = ["ci"] }}
tools = ["everything/*"]
prompts = ["everything/*"]
resources = ["everything/*"]

[[gateway.policy.rules]]
name = "dev-no-everything-echo"
effect = "deny"
callers = {{ tokens = ["dev"] }}
tools = ["everything/echo"]

[[gateway.policy.rules]]
name = "dev-all"
effect = "allow"
callers = {{ tokens = ["dev"] }}
tools = ["*"]
prompts = ["*"]
resources = ["*"]
"#,
        upstreams = upstreams()
    )
}

async fn connect(
    url: &str,
    token: &str,
    notified: Option<tokio::sync::mpsc::UnboundedSender<String>>,
) -> Client<HttpClientTransport> {
    let transport = HttpClientTransport::new(HttpClientConfig::new(url).bearer_token(token)).unwrap();
    let mut options = ClientOptions::default().with_era(EraPolicy::Legacy);
    if let Some(tx) = notified {
        options = options.with_handler(move |n: mcpwire::proto::jsonrpc::Notification| {
            let _ = tx.send(n.method);
        });
    }
    Client::connect(transport, options).await.unwrap()
}

async fn tool_names(client: &Client<HttpClientTransport>) -> Vec<String> {
    let mut names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    names.sort();
    names
}

/// The JSON-RPC error of a refused request: its code, message and data.
fn rpc_error<T: std::fmt::Debug>(outcome: Result<T, ClientError>) -> (i32, String, Value) {
    match outcome {
        Err(ClientError::Rpc { error, .. }) => {
            let data = error.data.as_ref().map_or(Value::Null, |d| serde_json::from_str(d.get()).unwrap());
            (error.code.0, error.message.clone(), data)
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn text(result: &mcpwire::proto::mcp_types::CallToolResult) -> Value {
    serde_json::to_value(&result.content).unwrap()[0]["text"].clone()
}

fn args(value: Value) -> Option<serde_json::Map<String, Value>> {
    value.as_object().cloned()
}

async fn call(
    client: &Client<HttpClientTransport>,
    name: &str,
    arguments: Option<serde_json::Map<String, Value>>,
) -> Result<mcpwire::proto::mcp_types::CallToolResult, ClientError> {
    client.call_tool(name, arguments, CallOptions::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_tokens_see_their_own_tools_and_reloaded_rules_reach_a_live_session() {
    let dir = scratch("tokens");
    let config = dir.join("gateway.toml");
    std::fs::write(&config, token_policy(false)).unwrap();
    let mut bridge = ServingBridge::start_with(&["--config", config.to_str().unwrap()], |command| {
        command.env("CI_TOKEN", CI_TOKEN).env("DEV_TOKEN", DEV_TOKEN).env("RUST_LOG", "info").stderr(Stdio::piped());
    });
    let mut log = log_lines(&mut bridge);

    // No token, or another one: refused before MCP.
    assert_eq!(http_get(&bridge.url, "/metrics", None).0, 401);
    assert_eq!(http_get(&bridge.url, "/metrics", Some("dev-token-77b2e")).0, 401);

    let (tx, mut ci_notified) = tokio::sync::mpsc::unbounded_channel();
    let ci = connect(&bridge.url, CI_TOKEN, Some(tx)).await;
    let dev = connect(&bridge.url, DEV_TOKEN, None).await;

    // Two callers, one endpoint, two lists.
    let ci_tools = tool_names(&ci).await;
    assert_eq!(ci_tools, ["mcp__echo__add", "mcp__echo__echo", "mcp__echo__greet"]);
    let dev_tools = tool_names(&dev).await;
    assert!(dev_tools.contains(&"mcp__echo__add".to_owned()), "{dev_tools:?}");
    assert!(dev_tools.iter().any(|t| t.starts_with("mcp__everything__")), "{dev_tools:?}");
    assert!(!dev_tools.contains(&"mcp__everything__echo".to_owned()), "denied to dev: {dev_tools:?}");

    // Different outcomes: each caller's refusal names its rule while the other's call goes through.
    let (ci_denied, dev_allowed) = tokio::join!(
        call(&ci, "mcp__everything__get-sum", args(json!({"a": 1, "b": 2}))),
        call(&dev, "mcp__everything__get-sum", args(json!({"a": 1, "b": 2}))),
    );
    let (code, message, data) = rpc_error(ci_denied);
    assert_eq!(code, -32003, "{message}");
    assert!(message.contains("ci-not-everything"), "{message}");
    assert_eq!(data["rule"], "ci-not-everything");
    assert_eq!(data["kind"], "tool");
    let sum = dev_allowed.unwrap();
    assert!(text(&sum).as_str().is_some_and(|t| t.contains('3')), "{sum:?}");
    let (_, message, _) = rpc_error(call(&dev, "mcp__everything__echo", args(json!({"message": "x"}))).await);
    assert!(message.contains("dev-no-everything-echo"), "{message}");
    assert_eq!(text(&call(&ci, "mcp__echo__echo", args(json!({"text": "ci"}))).await.unwrap()), "ci");

    // Prompts and resources likewise.
    let dev_prompts = dev.list_prompts().await.unwrap();
    assert!(!dev_prompts.is_empty(), "everything offers prompts");
    assert!(ci.list_prompts().await.unwrap().is_empty());
    let (_, message, data) = rpc_error(ci.get_prompt(dev_prompts[0].name.clone(), None).await);
    assert_eq!(
        (data["rule"].clone(), data["kind"].clone()),
        (json!("ci-not-everything"), json!("prompt")),
        "{message}"
    );
    let dev_resources = dev.list_resources().await.unwrap();
    assert!(!dev_resources.is_empty(), "everything offers resources");
    assert!(ci.list_resources().await.unwrap().is_empty());
    let uri = dev_resources[0].uri.clone();
    assert!(!dev.read_resource(uri.clone()).await.unwrap().contents.is_empty());
    let (_, _, data) = rpc_error(ci.read_resource(uri).await);
    assert_eq!((data["rule"].clone(), data["kind"].clone()), (json!("ci-not-everything"), json!("resource")));
    assert!(ci.list_resource_templates().await.unwrap().is_empty());

    // The refusals are counted.
    let (status, metrics) = http_get(&bridge.url, "/metrics", Some(DEV_TOKEN));
    assert_eq!(status, 200);
    assert!(metrics.contains("mcp_bridge_policy_denied_total{kind=\"tool\"} 2"), "{metrics}");
    assert!(metrics.contains("mcp_bridge_policy_denied_total{kind=\"resource\"} 1"), "{metrics}");

    // A file whose rules do not read: the reload is skipped, naming line and field; the rules
    // in force stay.
    std::fs::write(&config, token_policy(false).replace("name = \"dev-all\"\neffect", "name = \"dev-all\"\nefect"))
        .unwrap();
    bridge.signal("HUP");
    let skipped = wait_for_line(&mut log, "reload skipped").await;
    assert!(skipped.contains("line ") && skipped.contains("unknown field `efect`"), "{skipped}");
    assert_eq!(tool_names(&ci).await, ci_tools);

    // New rules: the live session is told, and sees and uses what they allow.
    while ci_notified.try_recv().is_ok() {}
    std::fs::write(&config, token_policy(true)).unwrap();
    bridge.signal("HUP");
    tokio::time::timeout(Duration::from_secs(30), async {
        while ci_notified.recv().await.expect("the session stays up") != "notifications/tools/list_changed" {}
    })
    .await
    .expect("the live session is told within 30 s");
    let after = tool_names(&ci).await;
    assert_eq!(after, ["mcp__echo__add", "mcp__echo__echo", "mcp__echo__greet", "mcp__everything__echo"]);
    let echoed = call(&ci, "mcp__everything__echo", args(json!({"message": "now"}))).await.unwrap();
    assert_eq!(text(&echoed), "Echo: now");
    let (_, message, _) = rpc_error(call(&ci, "mcp__everything__get-sum", args(json!({"a": 1, "b": 2}))).await);
    assert!(message.contains("ci-not-everything"), "{message}");

    // Nothing of a token in the log.
    let _ = ci.close().await;
    let _ = dev.close().await;
    let _ = bridge.stop();
    let mut rest = String::new();
    while let Ok(line) = log.try_recv() {
        rest.push_str(&line);
    }
    assert!(!rest.contains(CI_TOKEN) && !rest.contains(DEV_TOKEN) && !skipped.contains(CI_TOKEN));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The lines of `bridge`'s log (its stderr, piped), as it writes them.
fn log_lines(bridge: &mut ServingBridge) -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (log_tx, log) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stderr = bridge.take_stderr().expect("the bridge's stderr piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = log_tx.send(line);
        }
    });
    log
}

/// The next line of the bridge's log holding `needle` (30 s at most).
async fn wait_for_line(log: &mut tokio::sync::mpsc::UnboundedReceiver<String>, needle: &str) -> String {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let line = log.recv().await.expect("the bridge logs");
            if line.contains(needle) {
                return line;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no log line with {needle:?} within 30 s"))
}

#[test]
fn a_policy_that_does_not_read_is_refused_at_start_naming_line_and_field() {
    let dir = scratch("bad");
    let config = dir.join("gateway.toml");
    let text =
        token_policy(false).replace("tokens = [\"dev\"] }\ntools = [\"*\"]", "tokens = [\"deb\"] }\ntools = [\"*\"]");
    assert!(text.contains("\"deb\""));
    std::fs::write(&config, text).unwrap();
    let output = std::process::Command::new(examples::bin_path("mcp-bridge"))
        .args(["serve", "--listen", "http://127.0.0.1:0/mcp", "--config", config.to_str().unwrap()])
        .env("CI_TOKEN", CI_TOKEN)
        .env("DEV_TOKEN", DEV_TOKEN)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("gateway.toml: line "), "{stderr}");
    assert!(stderr.contains("callers.tokens: \"deb\" names no token of [gateway.tokens]"), "{stderr}");
    assert!(output.stdout.is_empty(), "no banner: nothing served");
    // A token variable that is not set is refused too, naming the variable.
    std::fs::write(&config, token_policy(false)).unwrap();
    let output = std::process::Command::new(examples::bin_path("mcp-bridge"))
        .args(["serve", "--listen", "http://127.0.0.1:0/mcp", "--config", config.to_str().unwrap()])
        .env("CI_TOKEN", CI_TOKEN)
        .env_remove("DEV_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("gateway.tokens.dev: the variable DEV_TOKEN is not set"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_callers_are_told_apart_by_subject_scope_and_claim() {
    let auth = AuthServer::start().await;
    let dir = scratch("oauth");
    let config = dir.join("gateway.toml");
    let policy = format!(
        r#"{upstreams}
[gateway.policy]
default = "deny"

[[gateway.policy.rules]]
name = "ops-everything"
effect = "allow"
callers = {{ scopes = ["mcp"], claims = {{ groups = "ops" }} }}
tools = ["*"]

[[gateway.policy.rules]]
name = "dana-echo"
effect = "allow"
callers = {{ subjects = ["dana"], client_ids = ["cli-*"] }}
tools = ["echo/echo"]
"#,
        upstreams = upstreams()
    );
    std::fs::write(&config, policy).unwrap();
    let bridge = ServingBridge::start(&[
        "--config",
        config.to_str().unwrap(),
        "--auth-issuer",
        auth.issuer(),
        "--auth-jwks",
        auth.url("jwks_uri"),
    ]);
    let carol = auth
        .mint(json!({"claims": {"aud": bridge.url, "scope": "mcp", "sub": "carol", "groups": ["ops", "dev"]}}))
        .await;
    let dana =
        auth.mint(json!({"claims": {"aud": bridge.url, "scope": "mcp", "sub": "dana", "client_id": "cli-7"}})).await;
    let carol = connect(&bridge.url, &carol, None).await;
    let dana = connect(&bridge.url, &dana, None).await;
    let carol_tools = tool_names(&carol).await;
    assert!(carol_tools.contains(&"mcp__everything__echo".to_owned()) && carol_tools.len() > 4, "{carol_tools:?}");
    assert_eq!(tool_names(&dana).await, ["mcp__echo__echo"]);
    let (denied, allowed) = tokio::join!(
        call(&dana, "mcp__echo__add", args(json!({"a": 1, "b": 2}))),
        call(&carol, "mcp__echo__add", args(json!({"a": 1, "b": 2}))),
    );
    let (code, message, data) = rpc_error(denied);
    assert_eq!((code, data["rule"].clone()), (-32003, json!("default")), "{message}");
    assert!(message.contains("the policy's default"), "{message}");
    assert_eq!(text(&allowed.unwrap()), "3");
    assert_eq!(text(&call(&dana, "mcp__echo__echo", args(json!({"text": "mine"}))).await.unwrap()), "mine");
    let _ = carol.close().await;
    let _ = dana.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_caller_gets_a_retry_hint_while_others_go_on() {
    let dir = scratch("limits");
    let config = dir.join("gateway.toml");
    // One call an hour regained: the buckets cannot refill while the test runs.
    let limits = format!(
        r#"{upstreams}
[gateway.tokens]
ci = {{ env = "CI_TOKEN" }}
dev = {{ env = "DEV_TOKEN" }}

[[gateway.rate_limits]]
name = "ci-per-tool"
callers = {{ tokens = ["ci"] }}
tools = ["echo/*"]
rate = "1/hour"
burst = 2
per = "tool"
"#,
        upstreams = upstreams()
    );
    std::fs::write(&config, limits).unwrap();
    let bridge = ServingBridge::start_with(&["--config", config.to_str().unwrap()], |command| {
        command.env("CI_TOKEN", CI_TOKEN).env("DEV_TOKEN", DEV_TOKEN);
    });
    let ci = connect(&bridge.url, CI_TOKEN, None).await;
    let dev = connect(&bridge.url, DEV_TOKEN, None).await;
    for n in 0..2 {
        let echoed = call(&ci, "mcp__echo__echo", args(json!({"text": format!("ci {n}")}))).await.unwrap();
        assert_eq!(text(&echoed), format!("ci {n}"));
    }
    let (limited, dev_calls) = tokio::join!(call(&ci, "mcp__echo__echo", args(json!({"text": "ci 2"}))), async {
        let mut answers = Vec::new();
        for n in 0..3 {
            answers.push(call(&dev, "mcp__echo__echo", args(json!({"text": format!("dev {n}")}))).await);
        }
        answers
    });
    let (code, message, data) = rpc_error(limited);
    assert_eq!(code, -32029, "{message}");
    assert!(message.contains("ci-per-tool"), "{message}");
    assert_eq!(data["limit"], "ci-per-tool");
    let retry = data["retryAfterMs"].as_u64().expect("a retry hint in ms");
    assert!(retry > 60_000 && retry <= 3_600_000, "about an hour: {retry}");
    for (n, answer) in dev_calls.into_iter().enumerate() {
        assert_eq!(text(&answer.unwrap()), format!("dev {n}"), "another caller is not limited");
    }
    // Per tool: ci's other tools have their own buckets; tools outside the limit none.
    assert_eq!(text(&call(&ci, "mcp__echo__add", args(json!({"a": 2, "b": 2}))).await.unwrap()), "4");
    let echoed = call(&ci, "mcp__everything__echo", args(json!({"message": "free"}))).await.unwrap();
    assert_eq!(text(&echoed), "Echo: free");
    let (_, metrics) = http_get(&bridge.url, "/metrics", Some(CI_TOKEN));
    assert!(metrics.contains("mcp_bridge_rate_limited_total{limit=\"ci-per-tool\"} 1"), "{metrics}");
    let _ = ci.close().await;
    let _ = dev.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// echo_server as the only upstream, and the named tokens ci and dev.
fn echo_with_tokens() -> String {
    let echo = examples::example_path("echo_server").display().to_string();
    format!("[mcp_servers.echo]\ncommand = {echo:?}\n\n[gateway.tokens]\nci = {{ env = \"CI_TOKEN\" }}\ndev = {{ env = \"DEV_TOKEN\" }}\n")
}

/// The request limit `name` (`per = "request"`) of the named token `token`: `burst` requests,
/// one an hour regained (no bucket refills while a test runs).
fn request_limit(name: &str, token: &str, burst: u32) -> String {
    format!(
        "[[gateway.rate_limits]]\nname = \"{name}\"\ncallers = {{ tokens = [\"{token}\"] }}\nrate = \"1/hour\"\nburst = {burst}\nper = \"request\"\n"
    )
}

/// A limit per request (`per = "request"`): every request of ci's to the MCP endpoint takes a
/// token, whatever it is; past the burst, 429 with `Retry-After` and the JSON-RPC error naming
/// the limit; dev's requests and the routes go on; the refusals are counted; reloaded without
/// the limit, ci's live session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_over_a_request_limit_gets_429_while_others_go_on() {
    use crate::http_support::{post_with_token, session_with_token};
    let dir = scratch("request-limits");
    let config = dir.join("gateway.toml");
    std::fs::write(&config, format!("{}\n{}", echo_with_tokens(), request_limit("ci-requests", "ci", 4))).unwrap();
    let bridge = ServingBridge::start_with(&["--config", config.to_str().unwrap()], |command| {
        command.env("CI_TOKEN", CI_TOKEN).env("DEV_TOKEN", DEV_TOKEN);
    });
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", bridge.port()).parse().unwrap();
    let post = |token: &'static str, session: Option<String>, body: String| async move {
        post_with_token(addr, "/mcp", token, session.as_deref(), &body).await
    };
    let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string();
    let open = |token: &'static str| session_with_token(addr, "/mcp", token);
    // ci: initialize and initialized are two requests of the four; a list and a ping the rest.
    let ci = open(CI_TOKEN).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    assert_eq!(post(CI_TOKEN, Some(ci.clone()), list).await.status, 200);
    assert_eq!(post(CI_TOKEN, Some(ci.clone()), ping(2)).await.status, 200);
    let refused = post(CI_TOKEN, Some(ci.clone()), ping(3)).await;
    assert_eq!(refused.status, 429, "{refused:?}");
    let retry: u64 = refused.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!(retry > 60 && retry <= 3600, "about an hour: {retry}");
    let error = &refused.json()["error"];
    assert_eq!(error["code"], -32029, "{error}");
    assert_eq!(error["data"]["limit"], "ci-requests", "{error}");
    assert!(error["message"].as_str().unwrap().contains("ci-requests"), "{error}");
    // Another caller is not limited; a route is not an MCP request.
    let dev = open(DEV_TOKEN).await;
    for id in 10..16 {
        assert_eq!(post(DEV_TOKEN, Some(dev.clone()), ping(id)).await.status, 200);
    }
    let (status, metrics) = http_get(&bridge.url, "/metrics", Some(CI_TOKEN));
    assert_eq!(status, 200);
    assert!(metrics.contains("mcp_bridge_rate_limited_total{limit=\"ci-requests\"} 1"), "{metrics}");
    // Reloaded without the limit: ci's session goes on.
    std::fs::write(&config, echo_with_tokens()).unwrap();
    bridge.signal("HUP");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = post(CI_TOKEN, Some(ci.clone()), ping(20)).await;
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 429, "{r:?}");
        assert!(std::time::Instant::now() < deadline, "the reload lifts the limit within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reload that adds a request limit and leaves another as it was: the unchanged limit keeps
/// its bucket (a caller who used it up is still refused), the added one starts full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_limit_unchanged_by_a_reload_keeps_its_bucket() {
    use crate::http_support::{post_with_token, session_with_token, Raw};
    let dir = scratch("request-limits-reload");
    let config = dir.join("gateway.toml");
    let ci_limit = request_limit("ci-requests", "ci", 3);
    std::fs::write(&config, format!("{}\n{ci_limit}", echo_with_tokens())).unwrap();
    let mut bridge = ServingBridge::start_with(&["--config", config.to_str().unwrap()], |command| {
        command.env("CI_TOKEN", CI_TOKEN).env("DEV_TOKEN", DEV_TOKEN).env("RUST_LOG", "info").stderr(Stdio::piped());
    });
    let mut log = log_lines(&mut bridge);
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", bridge.port()).parse().unwrap();
    let post = |token: &'static str, session: Option<String>, body: String| async move {
        post_with_token(addr, "/mcp", token, session.as_deref(), &body).await
    };
    let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string();
    let refused_by = |r: &Raw| {
        assert_eq!(r.status, 429, "{r:?}");
        r.json()["error"]["data"]["limit"].as_str().expect("the limit named").to_owned()
    };
    let open = |token: &'static str| session_with_token(addr, "/mcp", token);
    // ci: initialize, initialized and a ping use up the burst of 3.
    let ci = open(CI_TOKEN).await;
    assert_eq!(post(CI_TOKEN, Some(ci.clone()), ping(1)).await.status, 200);
    assert_eq!(refused_by(&post(CI_TOKEN, Some(ci.clone()), ping(2)).await), "ci-requests");
    // dev is not limited yet.
    let dev = open(DEV_TOKEN).await;
    for id in 10..14 {
        assert_eq!(post(DEV_TOKEN, Some(dev.clone()), ping(id)).await.status, 200);
    }

    // Reloaded with a limit for dev added, ci's as it was.
    let dev_limit = request_limit("dev-requests", "dev", 2);
    std::fs::write(&config, format!("{}\n{dev_limit}\n{ci_limit}", echo_with_tokens())).unwrap();
    bridge.signal("HUP");
    let reloaded = wait_for_line(&mut log, "request rate limits reloaded").await;
    assert!(reloaded.contains("limits=2"), "{reloaded}");
    // The same reload's closing line: the new limits are in force.
    wait_for_line(&mut log, "reloaded (").await;

    // ci's bucket is as it was: still empty.
    assert_eq!(refused_by(&post(CI_TOKEN, Some(ci.clone()), ping(3)).await), "ci-requests");
    // dev's new limit starts full: two requests, then refused.
    for id in 20..22 {
        assert_eq!(post(DEV_TOKEN, Some(dev.clone()), ping(id)).await.status, 200);
    }
    assert_eq!(refused_by(&post(DEV_TOKEN, Some(dev.clone()), ping(22)).await), "dev-requests");
    let (_, metrics) = http_get(&bridge.url, "/metrics", Some(CI_TOKEN));
    assert!(metrics.contains("mcp_bridge_rate_limited_total{limit=\"ci-requests\"} 2"), "{metrics}");
    assert!(metrics.contains("mcp_bridge_rate_limited_total{limit=\"dev-requests\"} 1"), "{metrics}");
    let _ = bridge.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_has_a_line_per_call_and_no_token() {
    let dir = scratch("audit");
    let config = dir.join("gateway.toml");
    let audit = dir.join("audit.log");
    let text = format!(
        r#"{upstreams}
[gateway.tokens]
ci = {{ env = "CI_TOKEN" }}
dev = {{ env = "DEV_TOKEN" }}

[gateway.policy]
default = "allow"

[[gateway.policy.rules]]
name = "ci-no-add"
effect = "deny"
callers = {{ tokens = ["ci"] }}
tools = ["echo/add"]

[[gateway.rate_limits]]
name = "dev-one-echo"
callers = {{ tokens = ["dev"] }}
tools = ["echo/echo"]
rate = "1/hour"
"#,
        upstreams = upstreams()
    );
    std::fs::write(&config, text).unwrap();
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--audit-log",
        audit.to_str().unwrap(),
        "--audit-arguments",
        "echo/echo",
    ];
    let bridge = ServingBridge::start_with(&args, |command| {
        command.env("CI_TOKEN", CI_TOKEN).env("DEV_TOKEN", DEV_TOKEN);
    });
    let ci = connect(&bridge.url, CI_TOKEN, None).await;
    let dev = connect(&bridge.url, DEV_TOKEN, None).await;
    let echo = |t: &str| self::args(json!({"text": t}));
    call(&ci, "mcp__echo__echo", echo("one")).await.unwrap();
    rpc_error(call(&ci, "mcp__echo__add", self::args(json!({"a": 1, "b": 1}))).await);
    call(&dev, "mcp__echo__echo", echo("two")).await.unwrap();
    rpc_error(call(&dev, "mcp__echo__echo", echo("three")).await);
    call(&dev, "mcp__echo__add", self::args(json!({"a": 2, "b": 3}))).await.unwrap();

    // Written off the call path: wait for the five lines.
    let lines: Vec<Value> = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let text = std::fs::read_to_string(&audit).unwrap_or_default();
            if text.lines().count() >= 5 {
                assert!(!text.contains(CI_TOKEN) && !text.contains(DEV_TOKEN), "a token in the audit log");
                return text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("five audit lines within 30 s");
    assert_eq!(lines.len(), 5, "one line per call: {lines:#?}");
    let seen: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|l| (l["caller"].as_str().unwrap(), l["name"].as_str().unwrap(), l["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [
            ("ci", "echo", "ok"),
            ("ci", "add", "denied"),
            ("dev", "echo", "ok"),
            ("dev", "echo", "rate_limited"),
            ("dev", "add", "ok")
        ]
    );
    for line in &lines {
        assert_eq!(
            (&line["caller_kind"], &line["method"], &line["server"]),
            (&json!("token"), &json!("tools/call"), &json!("echo"))
        );
        assert!(line["time"].as_str().is_some_and(|t| t.ends_with('Z') && t.len() == 24), "{line}");
        assert!(line["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{line}");
        assert!(line["session"].is_u64() && (line["id"].is_u64() || line["id"].is_string()), "{line}");
        let opted = line["name"] == "echo";
        assert_eq!(line.get("arguments").is_some(), opted, "arguments only for echo/echo: {line}");
    }
    assert_eq!(lines[0]["arguments"], json!({"text": "one"}));
    assert_ne!(lines[0]["session"], lines[2]["session"], "two sessions");
    let _ = ci.close().await;
    let _ = dev.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `prompts/get` and `resources/read` have their lines too (method and target; a prompt's
/// arguments never), allowed and denied; no token anywhere in the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_has_prompts_and_resources_and_no_token() {
    let dir = scratch("audit-prompts");
    let config = dir.join("gateway.toml");
    let audit = dir.join("audit.log");
    let text = format!(
        r#"{upstreams}
[gateway.tokens]
ci = {{ env = "CI_TOKEN" }}
dev = {{ env = "DEV_TOKEN" }}

[gateway.policy]
default = "allow"

[[gateway.policy.rules]]
name = "ci-nothing-of-everything"
effect = "deny"
callers = {{ tokens = ["ci"] }}
prompts = ["everything/*"]
resources = ["everything/*"]
"#,
        upstreams = upstreams()
    );
    std::fs::write(&config, text).unwrap();
    let args = ["--config", config.to_str().unwrap(), "--audit-log", audit.to_str().unwrap(), "--audit-arguments", "*"];
    let bridge = ServingBridge::start_with(&args, |command| {
        command.env("CI_TOKEN", CI_TOKEN).env("DEV_TOKEN", DEV_TOKEN);
    });
    let ci = connect(&bridge.url, CI_TOKEN, None).await;
    let dev = connect(&bridge.url, DEV_TOKEN, None).await;
    let prompts = dev.list_prompts().await.unwrap();
    let prompt = prompts
        .iter()
        .find(|p| p.arguments.as_ref().is_none_or(|a| a.iter().all(|a| a.required != Some(true))))
        .expect("a prompt without required arguments");
    let resource = dev.list_resources().await.unwrap().remove(0);
    dev.get_prompt(prompt.name.clone(), None).await.unwrap();
    dev.read_resource(resource.uri.clone()).await.unwrap();
    rpc_error(ci.get_prompt(prompt.name.clone(), None).await);
    rpc_error(ci.read_resource(resource.uri.clone()).await);

    let lines: Vec<Value> = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let text = std::fs::read_to_string(&audit).unwrap_or_default();
            if text.lines().count() >= 4 {
                return text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("four audit lines within 30 s");
    let seen: Vec<(&str, &str, &str, &str)> = lines
        .iter()
        .map(|l| {
            let field = |k: &str| l[k].as_str().unwrap();
            (field("caller"), field("method"), field("server"), field("outcome"))
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("dev", "prompts/get", "everything", "ok"),
            ("dev", "resources/read", "everything", "ok"),
            ("ci", "prompts/get", "everything", "denied"),
            ("ci", "resources/read", "everything", "denied"),
        ]
    );
    let upstream_uri = resource.uri.strip_prefix("everything+").expect("a prefixed URI");
    for line in &lines {
        let expected = if line["method"] == "prompts/get" {
            prompt.name.strip_prefix("mcp__everything__").unwrap()
        } else {
            upstream_uri
        };
        assert_eq!(line["name"], expected, "{line}");
        assert!(line.get("arguments").is_none(), "a prompt's arguments never: {line}");
    }
    let _ = ci.close().await;
    let _ = dev.close().await;
    drop(bridge);
    let text = std::fs::read_to_string(&audit).unwrap();
    assert!(!text.contains(CI_TOKEN) && !text.contains(DEV_TOKEN), "a token in the audit log");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `prompts/get` the client cancels once the upstream has it: its audit line says
/// `cancelled`, as a cancelled `tools/call`'s does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_prompt_get_has_its_audit_line() {
    use mcpwire::proto::jsonrpc::ErrorObject;
    use mcpwire::proto::mcp_types::GetPromptResult;
    use mcpwire::server::{prompt, Server};
    use mcpwire::transport::sse_http::HttpServerConfig;

    let reached = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = reached.clone();
    let upstream = Server::builder()
        .name("slow")
        .prompt(prompt("wait", "never answers", vec![]), move |_request| {
            let signal = signal.clone();
            async move {
                signal.notify_one();
                std::future::pending::<Result<GetPromptResult, ErrorObject>>().await
            }
        })
        .build()
        .unwrap()
        .serve_http(HttpServerConfig::default())
        .await
        .unwrap();
    let dir = scratch("audit-cancelled");
    let config = dir.join("gateway.toml");
    let audit = dir.join("audit.log");
    std::fs::write(&config, format!("[mcp_servers.slow]\nurl = {:?}\n", upstream.url())).unwrap();
    let bridge = ServingBridge::start(&["--config", config.to_str().unwrap(), "--audit-log", audit.to_str().unwrap()]);
    let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.url)).unwrap();
    let client = Client::connect(transport, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();
    tokio::select! {
        answered = client.get_prompt("mcp__slow__wait", None) => panic!("the prompt never answers: {answered:?}"),
        _ = reached.notified() => {}
    }
    // The get's future is dropped: the client sends notifications/cancelled.
    let line: Value = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let text = std::fs::read_to_string(&audit).unwrap_or_default();
            if let Some(line) = text.lines().next() {
                return serde_json::from_str(line).unwrap();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("an audit line within 30 s");
    assert_eq!(
        (&line["method"], &line["server"], &line["name"], &line["outcome"]),
        (&json!("prompts/get"), &json!("slow"), &json!("wait"), &json!("cancelled")),
        "{line}"
    );
    assert!(line["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{line}");
    let _ = client.close().await;
    drop(bridge);
    upstream.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
