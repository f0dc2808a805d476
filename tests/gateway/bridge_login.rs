//! `mcp-bridge login NAME` / `logout NAME` and the stored login used by the client commands,
//! against the real authorization server of `tests/peers/oauth_as.mjs` (oauth2-mock-server,
//! which redirects at once: the test plays the browser, reading the authorization URL from the
//! bridge's stderr, following it to the loopback redirect) and our HTTP server protected by it
//! (JWT access tokens checked against the JWKS, scope `mcp` required).
//!
//! One story, every step a new `mcp-bridge` process with `RUST_LOG=trace` and its own
//! `MCPWIRE_CONFIG_DIR`: login stores the tokens (mode 0600); `tools` lists the protected
//! server's tools with them and `check --json` says `logged_in`; once the stored access token is
//! past its expiry, `tools` refreshes it; `logout` removes it, after which `tools` and `check`
//! say the server needs a login. No access token, refresh token or authorization code the
//! authorization server issued appears in any output of any of those processes.

use crate::examples;
use crate::http_support;
use crate::oauth_support;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use http_support::{raw, SHORT};
use mcpwire::auth::{JwtVerifier, ProtectedResource};
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpServer, HttpServerConfig};
use oauth_support::AuthServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// Our server behind the authorization server: every request needs scope `mcp`.
async fn protected(auth: &AuthServer) -> HttpServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let verifier = JwtVerifier::new(auth.issuer(), &resource, auth.url("jwks_uri")).unwrap();
    let policy =
        ProtectedResource::new(&resource, Arc::new(verifier)).authorization_server(auth.issuer()).require_scope("mcp");
    let server = Server::builder()
        .name("oauth-protected")
        .tool("whoami", "the verified subject", json!({"type": "object"}), |_args, ctx| async move {
            Ok(text_result(ctx.principal().and_then(|p| p.subject.clone()).unwrap_or_default()))
        })
        .build()
        .unwrap();
    server.serve_http_on(listener, HttpServerConfig::default().protected_resource(policy)).await.unwrap()
}

/// A finished `mcp-bridge` process.
struct Run {
    success: bool,
    stdout: String,
    stderr: String,
}

struct Bridge {
    config_dir: PathBuf,
    config: PathBuf,
    /// Everything every process printed, for the secrets check.
    outputs: String,
}

impl Bridge {
    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(examples::bin_path("mcp-bridge"));
        command
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "trace")
            .env("MCPWIRE_CONFIG_DIR", &self.config_dir)
            .env_remove("XDG_CONFIG_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    async fn run(&mut self, args: &[&str]) -> Run {
        let output = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("mcp-bridge {args:?} finishes"))
            .unwrap();
        let run = Run {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        self.outputs.push_str(&run.stdout);
        self.outputs.push_str(&run.stderr);
        run
    }

    /// `login NAME`, the test following the printed URL to the loopback redirect.
    async fn login(&mut self, name: &str) -> Run {
        let mut child = self.command(&["login", name]).spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut printed = String::new();
        let url = loop {
            let mut line = String::new();
            let n = tokio::time::timeout(Duration::from_secs(30), stderr.read_line(&mut line)).await.unwrap().unwrap();
            assert!(n > 0, "login ended before printing a URL: {printed}");
            printed.push_str(&line);
            if line.starts_with("http://") {
                break url::Url::parse(line.trim()).unwrap();
            }
        };
        assert!(printed.contains(&format!("to log in to {name}, open this URL")), "{printed}");
        // The browser: the authorization server redirects at once to the loopback listener.
        let target = format!("{}?{}", url.path(), url.query().unwrap_or_default());
        let authorize = raw(addr_of(&url), "GET", &target, &[], "", SHORT).await;
        assert_eq!(authorize.status, 302, "{authorize:?}");
        let location = url::Url::parse(authorize.header("location").expect("a redirect")).unwrap();
        assert_eq!(location.host_str(), Some("127.0.0.1"), "a loopback redirect: {location}");
        let target = format!("{}?{}", location.path(), location.query().unwrap_or_default());
        let callback = raw(addr_of(&location), "GET", &target, &[], "", SHORT).await;
        assert_eq!(callback.status, 200, "{callback:?}");
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).await.unwrap();
        let mut stdout = String::new();
        child.stdout.take().unwrap().read_to_string(&mut stdout).await.unwrap();
        let run = Run { success: status.success(), stdout, stderr: printed + &rest };
        self.outputs.push_str(&run.stdout);
        self.outputs.push_str(&run.stderr);
        run
    }

    fn store(&self) -> PathBuf {
        self.config_dir.join("oauth-credentials.json")
    }

    fn stored(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.store()).unwrap()).unwrap()
    }
}

fn addr_of(url: &url::Url) -> std::net::SocketAddr {
    format!("{}:{}", url.host_str().unwrap(), url.port_or_known_default().unwrap()).parse().unwrap()
}

fn check_line<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines.iter().find(|l| l["server"] == name).unwrap_or_else(|| panic!("no status of {name}: {lines:?}"))
}

fn check_json(run: &Run) -> Vec<Value> {
    run.stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_config(path: &Path, url: &str) {
    let toml = format!(
        "[mcp_servers.prot]\nurl = {url:?}\noauth = {{ client_id = \"mcpwire-bridge\" }}\n\n[mcp_servers.local]\ncommand = {:?}\nargs = [\"-e\", \"process.stdin.resume()\"]\nenabled = false\n",
        support::peer("MCP_NODE")
    );
    std::fs::write(path, toml).unwrap();
}

// Multi-threaded: the protected server and the authorization server's test calls run on this
// runtime while the test waits for child processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_stores_a_token_that_tools_uses_refreshes_and_logout_removes() {
    let auth = AuthServer::start().await;
    let server = protected(&auth).await;
    let dir = temp_dir("bridge-login");
    let mut bridge = Bridge { config_dir: dir.join("config"), config: dir.join("mcp.toml"), outputs: String::new() };
    write_config(&bridge.config, &server.url());

    // Before any login: the server needs one, and the bridge says how.
    let tools = bridge.run(&["tools"]).await;
    assert!(tools.stderr.contains("needs login: run mcp-bridge login prot"), "{}", tools.stderr);
    assert!(!bridge.store().exists(), "no registration or token request without a login");

    let login = bridge.login("prot").await;
    assert!(login.success, "{}", login.stderr);
    assert!(login.stderr.contains("logged in to prot"), "{}", login.stderr);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(bridge.store()).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let issued = auth.secrets().await.len();
    let stored = bridge.stored();
    let entry = &stored["credentials"][0];
    assert_eq!(entry["issuer"], auth.issuer());
    assert_eq!(entry["resource"], server.url());
    let first_refresh = entry["tokens"]["refresh_token"].as_str().unwrap_or_default().to_owned();
    assert!(entry["tokens"]["refresh_token"].is_string(), "a refresh token is kept: {entry}");

    let tools = bridge.run(&["tools", "--json"]).await;
    assert!(tools.success, "{}", tools.stderr);
    let listed: Value = serde_json::from_str(&tools.stdout).unwrap();
    assert_eq!(listed[0]["name"], "mcp__prot__whoami", "{listed}");
    let call = bridge.run(&["call", "whoami", "--server", "prot"]).await;
    assert_eq!(call.stdout.trim(), "johndoe", "the authorization server's user: {}", call.stderr);
    let check = bridge.run(&["check", "--json"]).await;
    let lines = check_json(&check);
    assert_eq!(check_line(&lines, "prot")["auth"], "logged_in", "{lines:?}");
    assert_eq!(check_line(&lines, "prot")["state"], "ready");
    assert_eq!(check_line(&lines, "local")["auth"], "not_needed");
    // The same login serves the server as Claude Code's JSON names it.
    let toml = std::mem::replace(&mut bridge.config, dir.join("claude.json"));
    let claude =
        json!({"mcpServers": {"prot": {"type": "http", "url": server.url(), "oauth": {"clientId": "mcpwire-bridge"}}}});
    std::fs::write(&bridge.config, claude.to_string()).unwrap();
    let check = bridge.run(&["check", "--json"]).await;
    assert_eq!(check_line(&check_json(&check), "prot")["auth"], "logged_in", "{}", check.stdout);
    bridge.config = toml;
    assert_eq!(auth.secrets().await.len(), issued, "no refresh nor new flow yet");

    // The access token's expiry passes (edited in the file): the next process refreshes it.
    let mut stored = bridge.stored();
    stored["credentials"][0]["tokens"]["expires_at"] = json!(1);
    std::fs::write(bridge.store(), serde_json::to_vec_pretty(&stored).unwrap()).unwrap();
    let tools = bridge.run(&["tools"]).await;
    assert!(tools.success && tools.stdout.contains("mcp__prot__whoami"), "{}\n{}", tools.stdout, tools.stderr);
    let refreshed = bridge.stored();
    let tokens = &refreshed["credentials"][0]["tokens"];
    // (The access token may be byte for byte the old one: RS256 is deterministic and the
    // claims are the same within a second. The refresh token is new.)
    assert!(auth.secrets().await.len() > issued, "the token endpoint issued new tokens");
    assert!(tokens["refresh_token"].as_str().is_some_and(|t| t != first_refresh), "the new refresh token kept");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert!(tokens["expires_at"].as_u64().unwrap() > now, "with its new expiry: {tokens}");
    assert!(tokens["refresh_token"].is_string(), "a refresh token still kept: {tokens}");

    let logout = bridge.run(&["logout", "prot"]).await;
    assert!(logout.success && logout.stderr.contains("logged out of prot"), "{}", logout.stderr);
    assert_eq!(bridge.stored()["credentials"], json!([]), "nothing kept");
    let tools = bridge.run(&["tools"]).await;
    assert!(tools.stderr.contains("needs login: run mcp-bridge login prot"), "{}", tools.stderr);
    assert!(!tools.stdout.contains("whoami"), "{}", tools.stdout);
    let check = bridge.run(&["check", "--json"]).await;
    assert_eq!(check_line(&check_json(&check), "prot")["auth"], "needs_login", "{}", check.stdout);

    let secrets = auth.secrets().await;
    assert!(secrets.len() >= 4, "a code, two access tokens, a refresh token at least: {}", secrets.len());
    for secret in &secrets {
        assert!(!bridge.outputs.contains(secret.as_str()), "an issued secret was printed or logged");
    }
    let _ = std::fs::remove_dir_all(&dir);
    server.shutdown().await;
}
