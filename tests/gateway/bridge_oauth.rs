//! `mcp-bridge serve --auth-issuer … --auth-jwks …`: the bridge's HTTP listener as an OAuth
//! protected resource in front of an upstream that has credentials of its own, against the real
//! authorization server of `tests/peers/oauth_as.mjs`. The TypeScript SDK client completes an
//! authorization-code flow against the bridge and calls upstream tools through it; the upstream
//! (our HTTP server, whose verifier records every token it is shown) only ever sees the
//! bridge's own token, never the downstream one; and with `RUST_LOG=trace` no token, refresh
//! token or authorization code of the whole flow appears in the bridge's log.

use crate::examples;
use crate::http_support;
use crate::oauth_support;
use crate::serving;
use crate::support;

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_support::{raw, BOTH, JSON, SHORT};
use mcpwire::auth::{Principal, ProtectedResource, Refusal, TokenVerifier, VerifyFuture};
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use oauth_support::AuthServer;
use serde_json::{json, Value};
use serving::ServingBridge;

const UPSTREAM_SECRET: &str = "upstream-secret-7Qf";

/// Accepts [`UPSTREAM_SECRET`] only, and keeps every token it was asked about.
#[derive(Default)]
struct Recording {
    seen: Mutex<Vec<String>>,
}

impl TokenVerifier for Recording {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        self.seen.lock().unwrap().push(token.to_owned());
        let verdict = if token == UPSTREAM_SECRET {
            Ok(Principal::new(Some("the-bridge".into())))
        } else {
            Err(Refusal::Inactive)
        };
        Box::pin(std::future::ready(verdict))
    }
}

/// The upstream: `echo` and `whoami`, behind [`Recording`].
async fn upstream() -> (HttpServer, Arc<Recording>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let recording = Arc::new(Recording::default());
    let server = Server::builder()
        .name("upstream")
        .tool("echo", "echo", json!({"type": "object"}), |args, _ctx| async move {
            Ok(text_result(args.get("text").and_then(Value::as_str).unwrap_or("").to_owned()))
        })
        .tool("whoami", "the principal", json!({"type": "object"}), |_args, ctx| async move {
            Ok(text_result(ctx.principal().and_then(|p| p.subject.clone()).unwrap_or_default()))
        })
        .build()
        .unwrap();
    let config = HttpServerConfig::default().protected_resource(ProtectedResource::new(url, recording.clone()));
    let http = server.serve_http_on(listener, config).await.unwrap();
    (http, recording)
}

/// `mcp-bridge serve` with OAuth, its log (RUST_LOG=trace) collected.
struct Bridge {
    serving: ServingBridge,
    log: Arc<Mutex<String>>,
    log_reader: Option<std::thread::JoinHandle<()>>,
}

impl Bridge {
    fn start(args: &[&str]) -> Bridge {
        Bridge::start_with_env(args, &[])
    }

    fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Bridge {
        let mut serving = ServingBridge::start_with(args, |command| {
            command
                .envs(env.iter().copied())
                .env("RUST_LOG", "trace")
                .env("UPSTREAM_TOKEN", UPSTREAM_SECRET)
                .stderr(Stdio::piped());
        });
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = serving.take_stderr().unwrap();
        let sink = log.clone();
        let log_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            sink.lock().unwrap().push_str(&text);
        });
        Bridge { serving, log, log_reader: Some(log_reader) }
    }

    /// Stops the bridge (SIGTERM) and returns all it logged.
    fn stop(mut self) -> String {
        let _ = self.serving.stop();
        if let Some(reader) = self.log_reader.take() {
            reader.join().unwrap();
        }
        let log = self.log.lock().unwrap().clone();
        log
    }
}

// Multi-threaded: the bridge is started (and its banner read) with blocking calls while the
// upstream served by this runtime must answer the bridge's connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_protects_its_listener_and_never_forwards_the_downstream_token() {
    let auth = AuthServer::start().await;
    let (upstream, recording) = upstream().await;
    let dir = std::env::temp_dir().join(format!("mcpwire-bridge-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!("[mcp_servers.up]\nurl = {:?}\nbearer_token_env_var = \"UPSTREAM_TOKEN\"\n", upstream.url()),
    )
    .unwrap();
    let bridge = Bridge::start(&[
        "--config",
        config.to_str().unwrap(),
        "--auth-issuer",
        auth.issuer(),
        "--auth-jwks",
        auth.url("jwks_uri"),
        "--auth-scope",
        "mcp",
        "--auth-tool-scope",
        "mcp__up__echo=echo:use",
    ]);
    let addr: std::net::SocketAddr =
        bridge.serving.url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();

    // No token: 401 naming the bridge's metadata, which names the authorization server.
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &http_support::initialize_body("2025-11-25"), SHORT).await;
    assert_eq!(r.status, 401, "{r:?}");
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        r.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"mcp\"").as_str())
    );
    let r = raw(addr, "GET", "/.well-known/oauth-protected-resource/mcp", &[], "", SHORT).await;
    assert_eq!(r.json()["resource"], bridge.serving.url);
    assert_eq!(r.json()["authorization_servers"], json!([auth.issuer()]));

    // The TypeScript SDK client through the authorization-code flow, then upstream tools.
    let calls = r#"[{"call":"mcp__up__whoami","args":{}},{"call":"mcp__up__echo","args":{"text":"x"}}]"#;
    let output = tokio::process::Command::new(support::peer("MCP_NODE"))
        .arg(support::repo_path("tests/peers/ts_oauth_client.mjs"))
        .args(["--url", &bridge.serving.url])
        .env("MCP_SCRIPT", calls)
        .env("MCP_TS_SDK_DIR", support::peer("MCP_TS_SDK_DIR"))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(90), output).await.unwrap().unwrap();
    let lines: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let whoami = lines.iter().find(|l| l["step"] == "tools/call").map(|l| l["result"]["content"][0]["text"].clone());
    if !output.status.success() || whoami != Some(json!("the-bridge")) {
        panic!("the driver failed: {lines:#?}\nthe bridge's log:\n{}", bridge.stop());
    }
    let results: Vec<&Value> = lines.iter().filter(|l| l["step"] == "tools/call").collect();
    assert_eq!(results[0]["result"]["content"][0]["text"], "the-bridge", "the upstream sees the bridge: {lines:#?}");
    // `mcp__up__echo` needs echo:use, which the SDK's token (scope mcp) lacks: 403 from the bridge.
    assert_eq!(results[1]["ok"], false, "{lines:#?}");

    // Our client with a token carrying both scopes.
    let token = auth
        .mint(json!({"claims": {"aud": bridge.serving.url, "scope": "mcp echo:use", "sub": "carol", "client_id": "ours"}}))
        .await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.serving.url).bearer_token(&token)).unwrap();
    let (peer, _) = http_support::client_peer(transport, "2025-11-25").await;
    let result = http_support::call(&peer, "mcp__up__echo", json!({"text": "relayed"})).await;
    assert_eq!(result["content"][0]["text"], "relayed");
    let _ = peer.close().await;

    let log = bridge.stop();
    let seen = recording.seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the upstream was asked");
    assert!(
        seen.iter().all(|t| t == UPSTREAM_SECRET),
        "only the bridge's own token goes upstream: {} others",
        seen.len()
    );
    assert!(log.contains("OAuth protection"), "the log was captured at trace level: {log}");
    let secrets = auth.secrets().await;
    assert!(secrets.len() >= 3, "a code, an access token and ours: {}", secrets.len());
    for secret in secrets.iter().map(String::as_str).chain([UPSTREAM_SECRET]) {
        assert!(!log.contains(secret), "a secret in the bridge's log");
    }
    upstream.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_issuer_alone_the_bridge_finds_the_key_set_in_the_issuers_metadata() {
    let auth = AuthServer::start().await;
    let (upstream, _recording) = upstream().await;
    let dir = std::env::temp_dir().join(format!("mcpwire-bridge-oauth-discover-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!("[mcp_servers.up]\nurl = {:?}\nbearer_token_env_var = \"UPSTREAM_TOKEN\"\n", upstream.url()),
    )
    .unwrap();
    let bridge = Bridge::start(&["--config", config.to_str().unwrap(), "--auth-issuer", auth.issuer()]);
    let token = auth.mint(json!({"claims": {"aud": bridge.serving.url, "scope": "mcp", "sub": "dana"}})).await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.serving.url).bearer_token(&token)).unwrap();
    let (peer, _) = http_support::client_peer(transport, "2025-11-25").await;
    let result = http_support::call(&peer, "mcp__up__echo", json!({"text": "found"})).await;
    assert_eq!(result["content"][0]["text"], "found");
    let _ = peer.close().await;
    assert_eq!(auth.jwks_fetches().await, 1, "the discovered jwks_uri was fetched once");

    let addr: std::net::SocketAddr =
        bridge.serving.url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    let rogue = auth.mint(json!({"claims": {"aud": bridge.serving.url, "scope": "mcp"}, "key": "rogue"})).await;
    let authorization = format!("Bearer {rogue}");
    let init = http_support::initialize_body("2025-11-25");
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &authorization)], &init, SHORT).await;
    assert_eq!(r.status, 401, "{r:?}");
    let log = bridge.stop();
    assert!(!log.contains(&token) && !log.contains(&rogue), "no token in the bridge's log");
    upstream.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_keeps_introspection_answers_for_its_cache_ttl() {
    let auth = AuthServer::start().await;
    let (upstream, _recording) = upstream().await;
    let dir = std::env::temp_dir().join(format!("mcpwire-bridge-oauth-introspect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!("[mcp_servers.up]\nurl = {:?}\nbearer_token_env_var = \"UPSTREAM_TOKEN\"\n", upstream.url()),
    )
    .unwrap();
    let credentials = [("MCP_BRIDGE_INTROSPECT_CLIENT_ID", "rs"), ("MCP_BRIDGE_INTROSPECT_CLIENT_SECRET", "rs-secret")];
    for (cache_secs, asked) in [("60", 1), ("0", 3)] {
        let args = [
            "--config",
            config.to_str().unwrap(),
            "--auth-issuer",
            auth.issuer(),
            "--auth-introspect",
            auth.url("introspection_endpoint"),
            "--auth-introspect-cache-secs",
            cache_secs,
        ];
        let bridge = Bridge::start_with_env(&args, &credentials);
        let addr: std::net::SocketAddr =
            bridge.serving.url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
        let spec = json!({"claims": {"aud": bridge.serving.url, "scope": "mcp", "sub": "erin", "jti": cache_secs}});
        let authorization = format!("Bearer {}", auth.mint(spec).await);
        let before = auth.introspections().await;
        for _ in 0..3 {
            let init = http_support::initialize_body("2025-11-25");
            let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &authorization)], &init, SHORT).await;
            assert_eq!(r.status, 200, "{r:?}");
        }
        assert_eq!(auth.introspections().await - before, asked, "--auth-introspect-cache-secs {cache_secs}");
        let log = bridge.stop();
        assert!(!log.contains("rs-secret") && !log.contains(&authorization[7..]), "no secret in the log");
    }
    upstream.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_auth_options_are_refused_before_anything_starts() {
    let serve = |args: &[&str], env: &[(&str, &str)]| {
        let output = Command::new(examples::bin_path("mcp-bridge"))
            .arg("serve")
            .args(args)
            .env_remove("MCP_BRIDGE_INTROSPECT_CLIENT_ID")
            .env_remove("MCP_BRIDGE_INTROSPECT_CLIENT_SECRET")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    for (args, why) in [
        (&["--auth-issuer", "notaurl"][..], "--auth-issuer: \"notaurl\" is not an absolute http(s) URL"),
        (
            &["--auth-issuer", "http://a", "--auth-jwks", "http://a/j", "--auth-introspect", "http://a/i"],
            "cannot be used with",
        ),
        (&["--auth-token-env", "T", "--auth-issuer", "http://a", "--auth-jwks", "http://a/j"], "cannot be used with"),
        (
            &["--auth-issuer", "http://a", "--auth-jwks", "notaurl"],
            "--auth-jwks: \"notaurl\" is not an absolute http(s) URL",
        ),
        (
            &["--auth-issuer", "http://a", "--auth-jwks", "http://a/j", "--auth-tool-scope", "bad"],
            "expected TOOL=SCOPE",
        ),
        (
            &["--auth-issuer", "http://a", "--auth-introspect", "http://a/i"],
            "MCP_BRIDGE_INTROSPECT_CLIENT_ID is not set",
        ),
        (
            &["--auth-issuer", "http://a", "--auth-introspect", "http://a/i", "--auth-introspect-cache-secs", "soon"],
            "invalid value 'soon'",
        ),
        (&["--auth-issuer", "http://a", "--auth-introspect-cache-secs", "5"], "--auth-introspect <URL>"),
    ] {
        let (code, stderr) = serve(args, &[]);
        assert_ne!(code, Some(0), "{args:?}");
        assert!(stderr.contains(why), "{args:?}: {stderr}");
        assert!(!stderr.contains("upstream server="), "refused before any upstream started: {stderr}");
    }
    // The secret comes from the environment only, and never shows in an error.
    let (code, stderr) = serve(
        &["--auth-issuer", "http://a", "--auth-introspect", "http://a/i"],
        &[("MCP_BRIDGE_INTROSPECT_CLIENT_ID", "rs"), ("MCP_BRIDGE_INTROSPECT_CLIENT_SECRET", "")],
    );
    assert_ne!(code, Some(0));
    assert!(stderr.contains("MCP_BRIDGE_INTROSPECT_CLIENT_SECRET is not set, or empty"), "{stderr}");
}
