//! `mcp-bridge serve` with `[gateway.endpoints.*]`: two virtual servers on one listener over the
//! same upstream (mcpwire's echo_server, over stdio, one child), run with the very config of
//! bridge/README.md's "Virtual servers" section. Through `readonly` an excluded tool is absent
//! and refused naming why, a renamed tool is listed and called under its new name and reaches
//! the upstream under its own; each endpoint refuses (401) the other's token; `/readyz` lists
//! both; a reload that changes `readonly` changes what its live session sees, without dropping
//! it; `dev`'s own rate limit refuses its sixth call while `readonly` goes on.

use crate::examples;
use crate::serving;

use std::path::PathBuf;
use std::time::Duration;

use mcpwire::client::{CallOptions, Client, ClientError, ClientOptions, EraPolicy};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use serde_json::{json, Value};
use serving::{http_get, ServingBridge};

const DEV_TOKEN: &str = "dev-token-5c1e94";
const READER_TOKEN: &str = "reader-token-0b7d23";

fn scratch(name: &str) -> PathBuf {
    crate::support::scratch_dir("bridge-endpoints", name)
}

/// The TOML block of bridge/README.md's "Virtual servers" section, as written.
fn readme_config() -> String {
    let readme = std::fs::read_to_string(crate::support::repo_path("bridge/README.md")).unwrap();
    let section = readme.split("## Virtual servers").nth(1).expect("the section");
    let block = section.split("```toml\n").nth(1).and_then(|b| b.split("```").next()).expect("a toml block");
    assert!(block.contains("target/release/examples/echo_server"), "{block}");
    block.to_owned()
}

/// `config` with the README's release path of echo_server replaced by the one built here.
fn runnable(config: &str) -> String {
    let built = examples::example_path("echo_server").display().to_string();
    config.replace("\"target/release/examples/echo_server\"", &format!("{built:?}"))
}

async fn connect(
    url: &str,
    token: &str,
    notified: tokio::sync::mpsc::UnboundedSender<String>,
) -> Client<HttpClientTransport> {
    let transport = HttpClientTransport::new(HttpClientConfig::new(url).bearer_token(token)).unwrap();
    let options = ClientOptions::default().with_era(EraPolicy::Legacy).with_handler(
        move |n: mcpwire::proto::jsonrpc::Notification| {
            let _ = notified.send(n.method);
        },
    );
    Client::connect(transport, options).await.unwrap()
}

async fn tools(client: &Client<HttpClientTransport>) -> Vec<(String, Option<String>)> {
    let mut tools: Vec<_> = client.list_tools().await.unwrap().into_iter().map(|t| (t.name, t.description)).collect();
    tools.sort();
    tools
}

fn names(tools: &[(String, Option<String>)]) -> Vec<&str> {
    tools.iter().map(|(n, _)| n.as_str()).collect()
}

async fn call(client: &Client<HttpClientTransport>, name: &str, arguments: Value) -> Result<Value, ClientError> {
    let result = client.call_tool(name, arguments.as_object().cloned(), CallOptions::default()).await?;
    Ok(serde_json::to_value(&result.content).unwrap()[0]["text"].clone())
}

fn rpc_error<T: std::fmt::Debug>(outcome: Result<T, ClientError>) -> (i32, String, Value) {
    match outcome {
        Err(ClientError::Rpc { error, .. }) => {
            let data = error.data.as_ref().map_or(Value::Null, |d| serde_json::from_str(d.get()).unwrap());
            (error.code.0, error.message.clone(), data)
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_endpoints_over_one_upstream_each_with_its_view_and_tokens() {
    let dir = scratch("readme");
    let config = dir.join("endpoints.toml");
    let audit = dir.join("audit.log");
    let written = readme_config();
    std::fs::write(&config, runnable(&written)).unwrap();
    let bridge = ServingBridge::start_with(
        &["--config", config.to_str().unwrap(), "--audit-log", audit.to_str().unwrap()],
        |command| {
            command.env("DEV_TOKEN", DEV_TOKEN).env("READER_TOKEN", READER_TOKEN);
        },
    );
    let origin = bridge.url.split("/mcp").next().unwrap().to_owned();
    let (dev_url, readonly_url) = (format!("{origin}/mcp/dev"), format!("{origin}/mcp/readonly"));

    // Each endpoint refuses the other's token, before MCP; the plain endpoint is not served.
    assert_eq!(http_get(&origin, "/mcp/dev", Some(READER_TOKEN)).0, 401);
    assert_eq!(http_get(&origin, "/mcp/readonly", Some(DEV_TOKEN)).0, 401);
    assert_ne!(http_get(&origin, "/mcp/readonly", Some(READER_TOKEN)).0, 401);
    assert_ne!(http_get(&origin, "/mcp/dev", Some(DEV_TOKEN)).0, 401);
    assert_eq!(http_get(&origin, "/mcp", Some(DEV_TOKEN)).0, 404);

    // /readyz: an entry per endpoint.
    let (status, body) = http_get(&origin, "/readyz", None);
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        ready["endpoints"],
        json!({"dev": {"path": "/mcp/dev", "ready": true}, "readonly": {"path": "/mcp/readonly", "ready": true}})
    );

    let (dev_tx, _dev_notified) = tokio::sync::mpsc::unbounded_channel();
    let (ro_tx, mut ro_notified) = tokio::sync::mpsc::unbounded_channel();
    let dev = connect(&dev_url, DEV_TOKEN, dev_tx).await;
    let readonly = connect(&readonly_url, READER_TOKEN, ro_tx).await;

    // Two views of one upstream.
    let dev_tools = tools(&dev).await;
    assert_eq!(names(&dev_tools), ["mcp__echo__add", "mcp__echo__echo", "mcp__echo__greet"]);
    let ro_tools = tools(&readonly).await;
    assert_eq!(names(&ro_tools), ["mcp__echo__greet", "say"]);
    assert_eq!(ro_tools[1].1.as_deref(), Some("Says the text back."));

    // The renamed tool: called under its new name, it reaches echo_server's `echo`.
    assert_eq!(call(&readonly, "say", json!({"text": "hi"})).await.unwrap(), "hi");
    assert_eq!(call(&dev, "mcp__echo__add", json!({"a": 2, "b": 3})).await.unwrap(), "5");

    // The hidden tool, and the renamed one's old name: refused, naming the endpoint and why.
    let (code, message, data) = rpc_error(call(&readonly, "mcp__echo__add", json!({"a": 2, "b": 3})).await);
    assert_eq!(code, -32003, "{message}");
    assert!(message.contains("endpoint readonly") && message.contains("exclude_tools \"echo/add\""), "{message}");
    assert_eq!((data["endpoint"].clone(), data["kind"].clone()), (json!("readonly"), json!("tool")));
    let (code, message, _) = rpc_error(call(&readonly, "mcp__echo__echo", json!({"text": "x"})).await);
    assert_eq!(code, -32003, "{message}");
    assert!(message.contains("renamed \"say\""), "{message}");

    // A reload that changes readonly: its live session is told, and sees the new view.
    while ro_notified.try_recv().is_ok() {}
    let changed = written.replace("exclude_tools = [\"echo/add\"]", "exclude_tools = [\"echo/add\", \"echo/greet\"]");
    assert_ne!(changed, written);
    std::fs::write(&config, runnable(&changed)).unwrap();
    bridge.signal("HUP");
    tokio::time::timeout(Duration::from_secs(30), async {
        while ro_notified.recv().await.expect("the session stays up") != "notifications/tools/list_changed" {}
    })
    .await
    .expect("the live session is told within 30 s");
    assert_eq!(names(&tools(&readonly).await), ["say"]);
    assert_eq!(call(&readonly, "say", json!({"text": "still here"})).await.unwrap(), "still here");
    assert_eq!(names(&tools(&dev).await), names(&dev_tools), "dev did not change");

    // The audit log: the renamed call under the upstream's own name, the refusal as denied.
    let _ = dev.close().await;
    let _ = readonly.close().await;
    drop(bridge);
    let log = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let said: Vec<&Value> = lines.iter().filter(|l| l["caller"] == "reader" && l["outcome"] == "ok").collect();
    assert_eq!(said.len(), 2, "{log}");
    assert!(said.iter().all(|l| l["server"] == "echo" && l["name"] == "echo"), "{log}");
    assert!(lines.iter().all(|l| l["endpoint"] == "readonly" || l["caller"] == "dev"), "{log}");
    assert!(lines.iter().any(|l| l["endpoint"] == "dev"), "{log}");
    assert!(lines.iter().any(|l| l["name"] == "add" && l["outcome"] == "denied"), "{log}");
    assert!(!log.contains(DEV_TOKEN) && !log.contains(READER_TOKEN));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's config: `dev`'s own limit (burst 5) refuses the sixth call through it, naming
/// itself with a retry hint; `readonly` over the same upstream is not touched by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoints_own_rate_limit_leaves_the_other_endpoint_alone() {
    let dir = scratch("limits");
    let config = dir.join("endpoints.toml");
    let written = readme_config();
    assert!(written.contains("[[gateway.endpoints.dev.rate_limits]]"), "{written}");
    std::fs::write(&config, runnable(&written)).unwrap();
    let bridge = ServingBridge::start_with(&["--config", config.to_str().unwrap()], |command| {
        command.env("DEV_TOKEN", DEV_TOKEN).env("READER_TOKEN", READER_TOKEN);
    });
    let origin = bridge.url.split("/mcp").next().unwrap().to_owned();
    let (dev_tx, _dev_notified) = tokio::sync::mpsc::unbounded_channel();
    let (ro_tx, _ro_notified) = tokio::sync::mpsc::unbounded_channel();
    let dev = connect(&format!("{origin}/mcp/dev"), DEV_TOKEN, dev_tx).await;
    let readonly = connect(&format!("{origin}/mcp/readonly"), READER_TOKEN, ro_tx).await;
    for i in 0..5 {
        assert_eq!(
            call(&dev, "mcp__echo__echo", json!({"text": format!("dev {i}")})).await.unwrap(),
            format!("dev {i}")
        );
    }
    let (code, message, data) = rpc_error(call(&dev, "mcp__echo__echo", json!({"text": "sixth"})).await);
    assert_eq!(code, -32029, "{message}");
    assert!(message.contains("dev-calls"), "{message}");
    assert_eq!(data["limit"], "dev-calls", "{data}");
    let retry = data["retryAfterMs"].as_u64().unwrap();
    assert!((1..=60_000).contains(&retry), "a token comes back within a minute at 60/hour: {retry}");
    // The other endpoint, the same upstream and tool: more calls than dev's burst, all answered.
    for i in 0..8 {
        assert_eq!(call(&readonly, "say", json!({"text": format!("ro {i}")})).await.unwrap(), format!("ro {i}"));
    }
    let (_, metrics) = http_get(&origin, "/metrics", Some(DEV_TOKEN));
    assert!(metrics.contains("mcp_bridge_rate_limited_total{limit=\"dev-calls\"} 1\n"), "{metrics}");
    let _ = dev.close().await;
    let _ = readonly.close().await;
    drop(bridge);
    let _ = std::fs::remove_dir_all(&dir);
}

/// With OAuth: each endpoint wants tokens for its own URL (a token for one is 401 at the
/// other), `ops` wants a scope more (403 without it), and `ops` is governed by its own policy
/// while `public` is by the gateway's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_endpoints_want_their_audience_and_scopes_and_apply_their_own_policy() {
    let auth = crate::oauth_support::AuthServer::start().await;
    let dir = scratch("oauth");
    let config = dir.join("endpoints.toml");
    let text = format!(
        r#"[mcp_servers.echo]
command = {echo:?}

[gateway.policy]
default = "allow"

[gateway.endpoints.ops]
path = "/mcp/ops"
scopes = ["mcp:ops"]

[gateway.endpoints.ops.policy]
default = "deny"

[[gateway.endpoints.ops.policy.rules]]
name = "ops-group-add"
effect = "allow"
callers = {{ claims = {{ groups = "ops" }} }}
tools = ["echo/add"]

[gateway.endpoints.public]
path = "/mcp/public"
exclude_tools = ["echo/add"]
"#,
        echo = examples::example_path("echo_server").display().to_string()
    );
    std::fs::write(&config, text).unwrap();
    let bridge = ServingBridge::start(&[
        "--config",
        config.to_str().unwrap(),
        "--auth-issuer",
        auth.issuer(),
        "--auth-jwks",
        auth.url("jwks_uri"),
    ]);
    let origin = bridge.url.split("/mcp").next().unwrap().to_owned();
    let (ops_url, public_url) = (format!("{origin}/mcp/ops"), format!("{origin}/mcp/public"));
    let mint =
        |aud: &str, scope: &str| json!({"claims": {"aud": aud, "scope": scope, "sub": "carol", "groups": ["ops"]}});
    let carol_ops = auth.mint(mint(&ops_url, "mcp mcp:ops")).await;
    let carol_public = auth.mint(mint(&public_url, "mcp")).await;
    let without_scope = auth.mint(mint(&ops_url, "mcp")).await;

    assert_eq!(http_get(&origin, "/mcp/ops", Some(&carol_public)).0, 401, "a token for another endpoint");
    assert_eq!(http_get(&origin, "/mcp/public", Some(&carol_ops)).0, 401, "a token for another endpoint");
    assert_eq!(http_get(&origin, "/mcp/ops", Some(&without_scope)).0, 403, "the endpoint's scope missing");
    let (status, metadata) = http_get(&origin, "/.well-known/oauth-protected-resource/mcp/ops", None);
    assert_eq!(status, 200, "{metadata}");
    assert_eq!(serde_json::from_str::<Value>(&metadata).unwrap()["resource"], json!(ops_url));

    let (tx, _notified) = tokio::sync::mpsc::unbounded_channel();
    let ops = connect(&ops_url, &carol_ops, tx.clone()).await;
    let public = connect(&public_url, &carol_public, tx).await;
    assert_eq!(names(&tools(&ops).await), ["mcp__echo__add"], "the endpoint's policy");
    assert_eq!(names(&tools(&public).await), ["mcp__echo__echo", "mcp__echo__greet"], "the gateway's policy");
    assert_eq!(call(&ops, "mcp__echo__add", json!({"a": 1, "b": 2})).await.unwrap(), "3");
    let (code, message, data) = rpc_error(call(&ops, "mcp__echo__echo", json!({"text": "x"})).await);
    assert_eq!((code, data["rule"].clone()), (-32003, json!("default")), "{message}");
    assert_eq!(call(&public, "mcp__echo__echo", json!({"text": "open"})).await.unwrap(), "open");
    let _ = ops.close().await;
    let _ = public.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
