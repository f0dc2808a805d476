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
//!
//! The same story with `--credentials-store keyring`: the tokens live in the kernel keyring
//! (read back here through `/proc/keys` and `keyctl(2)`, not through our code) and in no file
//! under the configuration directory; `logout` removes the entries. And `auto` in a process
//! whose kernel keyring refuses writes (a session keyring of its own without write permission,
//! set before exec) keeps the login in the file.

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
    /// `--credentials-store`.
    store: &'static str,
    /// Run each process in a session keyring of its own that refuses writes.
    keyring_refuses: bool,
    /// Everything every process printed, for the secrets check.
    outputs: String,
    /// The D-Bus session bus of a Secret Service, if any (none: the variable is removed).
    session_bus: Option<String>,
}

impl Bridge {
    fn new(dir: &Path, store: &'static str) -> Bridge {
        let config_dir = dir.join("config");
        std::fs::create_dir_all(&config_dir).unwrap();
        Bridge {
            config_dir,
            config: dir.join("mcp.toml"),
            store,
            keyring_refuses: false,
            outputs: String::new(),
            session_bus: None,
        }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(examples::bin_path("mcp-bridge"));
        if self.keyring_refuses {
            // SAFETY: two raw system calls between fork and exec, no allocation.
            unsafe { command.pre_exec(keyring_refusing_writes) };
        }
        command
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .arg("--credentials-store")
            .arg(self.store)
            .env("RUST_LOG", "trace")
            .env("MCPWIRE_CONFIG_DIR", &self.config_dir)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(bus) = &self.session_bus {
            command.env("DBUS_SESSION_BUS_ADDRESS", bus);
        }
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

    /// `login NAME`, the test following the printed URL to the loopback redirect (if one is
    /// printed: a login that fails first ends before).
    async fn login(&mut self, name: &str) -> Run {
        let mut child = self.command(&["login", name]).spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut printed = String::new();
        let url = loop {
            let mut line = String::new();
            let n = tokio::time::timeout(Duration::from_secs(30), stderr.read_line(&mut line)).await.unwrap().unwrap();
            if n == 0 {
                let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
                assert!(!status.success(), "login succeeded without a URL: {printed}");
                self.outputs.push_str(&printed);
                return Run { success: false, stdout: String::new(), stderr: printed };
            }
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

/// Gives the calling process a new session keyring it may read and search but not write: the
/// kernel refuses every key the keyring crate would add (`add_key(2)` on the session keyring)
/// and the persistent keyring it would link there.
fn keyring_refusing_writes() -> std::io::Result<()> {
    const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;
    const KEYCTL_SETPERM: libc::c_long = 5;
    const KEY_SPEC_SESSION_KEYRING: libc::c_long = -3;
    // Possessor: view, read, search; nothing for anyone else.
    const VIEW_READ_SEARCH: libc::c_long = 0x0b00_0000;
    // SAFETY: keyctl(2) with integer arguments and a null name.
    unsafe {
        if libc::syscall(libc::SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, std::ptr::null::<libc::c_char>()) < 0
            || libc::syscall(libc::SYS_keyctl, KEYCTL_SETPERM, KEY_SPEC_SESSION_KEYRING, VIEW_READ_SEARCH) < 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The kernel keyring's entries of the store for `resource` that this process can see, in
/// chunk order: (description, payload). Found by their description in `/proc/keys` and read
/// with `keyctl(KEYCTL_READ)`.
fn keyring_entries(resource: &str) -> Vec<(String, String)> {
    let listing = std::fs::read_to_string("/proc/keys").expect("the kernel keyring is there");
    let mut found = Vec::new();
    for line in listing.lines() {
        // "SERIAL FLAGS USAGE TIMEOUT PERM UID GID TYPE DESCRIPTION: LENGTH"
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Revoked, dead or invalidated keys wait there for the collector.
        if fields.len() < 9 || fields[7] != "user" || fields[1].contains(['R', 'D', 'i']) {
            continue;
        }
        let rest = fields[8..].join(" ");
        let description = rest.rsplit_once(": ").map_or(rest.as_str(), |(d, _)| d).to_owned();
        if !(description.contains(&format!("{resource}|")) && description.contains("mcpwire OAuth credentials")) {
            continue;
        }
        let serial = i64::from_str_radix(fields[0], 16).unwrap();
        found.push((description, read_key(serial)));
    }
    let chunk = |d: &str| d.split_once('#').and_then(|(_, n)| n.split('@').next()?.parse::<usize>().ok()).unwrap_or(0);
    found.sort_by_key(|(d, _)| chunk(d));
    found
}

/// Reads a key of the user's persistent keyring, where the keyring crate links every entry it
/// adds (a process without a login session gets a session keyring of its own, gone with it):
/// reading needs possession, so the persistent keyring is first linked into this thread's
/// keyring (this thread only, as the read right after it).
fn read_key(serial: i64) -> String {
    const KEYCTL_GET_PERSISTENT: libc::c_long = 22;
    const KEYCTL_READ: libc::c_long = 11;
    const KEY_SPEC_THREAD_KEYRING: libc::c_long = -1;
    // SAFETY: keyctl(2) with integer arguments.
    let persistent = unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_THREAD_KEYRING) };
    assert!(persistent > 0, "the persistent keyring: {}", std::io::Error::last_os_error());
    let mut buffer = vec![0u8; 65536];
    // SAFETY: the buffer outlives the call and its length is passed.
    let n = unsafe {
        libc::syscall(libc::SYS_keyctl, KEYCTL_READ, serial as libc::c_long, buffer.as_mut_ptr(), buffer.len())
    };
    assert!(n >= 0, "keyctl read {serial:x}: {}", std::io::Error::last_os_error());
    buffer.truncate(n as usize);
    String::from_utf8(buffer).unwrap()
}

/// The credentials in the keyring entries of `resource`, their chunks put together.
fn keyring_credentials(resource: &str) -> Option<Value> {
    let entries = keyring_entries(resource);
    let (_, first) = entries.first()?;
    let mut text = match first.strip_prefix("mcpwire-chunked:") {
        Some(rest) => rest.split_once(':').unwrap().1.to_owned(),
        None => first.clone(),
    };
    for (_, chunk) in &entries[1..] {
        text.push_str(chunk);
    }
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: the keyring entry is not JSON")))
}

/// Every file under `dir`, recursively, with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    files
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
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
    let mut bridge = Bridge::new(&dir, "file");
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
    assert_eq!(check_line(&lines, "prot")["authStore"], format!("file {}", bridge.store().display()));
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

/// The authorization server's secrets that any file under `dir` holds.
fn secrets_in_files(dir: &Path, secrets: &[String]) -> Vec<(PathBuf, usize)> {
    let mut found = Vec::new();
    for (path, bytes) in files_under(dir) {
        for (i, secret) in secrets.iter().enumerate() {
            if contains(&bytes, secret) {
                found.push((path.clone(), i));
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_keyring_store_the_login_lives_in_the_kernel_keyring_and_in_no_file() {
    let auth = AuthServer::start().await;
    let server = protected(&auth).await;
    let resource = server.url();
    let dir = temp_dir("bridge-keyring");
    let mut bridge = Bridge::new(&dir, "keyring");
    write_config(&bridge.config, &resource);
    assert_eq!(keyring_entries(&resource), vec![], "a new server: nothing kept yet");

    let login = bridge.login("prot").await;
    assert!(login.success, "{}", login.stderr);
    assert!(login.stderr.contains("logged in to prot"), "{}", login.stderr);
    assert!(login.stderr.contains("kept in the kernel keyring (mcpwire OAuth credentials)"), "{}", login.stderr);
    let secrets = auth.secrets().await;
    // The entries, read from the kernel as another program would.
    let entries = keyring_entries(&resource);
    assert!(!entries.is_empty(), "the login is in the kernel keyring");
    assert!(entries.iter().all(|(d, _)| d.starts_with("keyring-rs:")), "{:?}", entries.iter().map(|e| &e.0));
    let kept = keyring_credentials(&resource).unwrap();
    let access = kept["tokens"]["access_token"].as_str().unwrap().to_owned();
    let refresh = kept["tokens"]["refresh_token"].as_str().unwrap().to_owned();
    assert!(secrets.contains(&access) && secrets.contains(&refresh), "the tokens the server issued are kept");
    assert!(entries.len() > 1 || access.len() < 1200, "a long value is split over entries");

    let call = bridge.run(&["call", "whoami", "--server", "prot"]).await;
    assert_eq!(call.stdout.trim(), "johndoe", "the stored token is used: {}", call.stderr);
    let check = bridge.run(&["check", "--json"]).await;
    let line = check_line(&check_json(&check), "prot").clone();
    assert_eq!((line["auth"].as_str(), line["state"].as_str()), (Some("logged_in"), Some("ready")), "{line}");
    assert_eq!(line["authStore"], "kernel keyring (mcpwire OAuth credentials)", "{line}");
    let check = bridge.run(&["check"]).await;
    assert!(
        check.stdout.contains("auth logged_in, in the kernel keyring (mcpwire OAuth credentials)"),
        "{}",
        check.stdout
    );

    // Not a byte of any token in any file under the configuration directory (nor beside it).
    assert!(!files_under(&bridge.config_dir).iter().any(|(p, _)| p.ends_with("oauth-credentials.json")));
    let secrets = auth.secrets().await;
    assert_eq!(secrets_in_files(&dir, &secrets), vec![], "no issued secret in any file under {}", dir.display());

    let logout = bridge.run(&["logout", "prot"]).await;
    assert!(logout.success && logout.stderr.contains("logged out of prot"), "{}", logout.stderr);
    assert_eq!(keyring_entries(&resource), vec![], "logout removed every entry of the login");
    let tools = bridge.run(&["tools"]).await;
    assert!(tools.stderr.contains("needs login: run mcp-bridge login prot"), "{}", tools.stderr);
    let check = bridge.run(&["check", "--json"]).await;
    assert_eq!(check_line(&check_json(&check), "prot")["auth"], "needs_login", "{}", check.stdout);
    assert_eq!(check_line(&check_json(&check), "prot")["authStore"], Value::Null);

    for secret in &auth.secrets().await {
        assert!(!bridge.outputs.contains(secret.as_str()), "an issued secret was printed or logged");
    }
    let _ = std::fs::remove_dir_all(&dir);
    server.shutdown().await;
}

/// A D-Bus session bus of its own with GNOME Keyring's Secret Service on it, its keyrings
/// under `dir`: both end when this is dropped (the daemon leaves with its bus).
#[cfg(feature = "secret-service")]
struct SecretService {
    bus: std::process::Child,
    address: String,
}

#[cfg(feature = "secret-service")]
impl SecretService {
    fn start(dir: &Path) -> SecretService {
        use std::io::{BufRead, Write};
        let data = dir.join("xdg-data");
        std::fs::create_dir_all(&data).unwrap();
        let mut bus = std::process::Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .env("XDG_DATA_HOME", &data)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon (Debian: dbus)");
        let mut address = String::new();
        std::io::BufReader::new(bus.stdout.take().unwrap()).read_line(&mut address).unwrap();
        let address = address.trim().to_owned();
        assert!(address.starts_with("unix:"), "the bus address: {address:?}");
        // Unlocked with a password on stdin, as on a headless machine: the login collection is
        // made there, in `data`.
        let mut daemon = std::process::Command::new("gnome-keyring-daemon")
            .args(["--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("XDG_DATA_HOME", &data)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon (Debian: gnome-keyring)");
        daemon.stdin.take().unwrap().write_all(b"a-test-password").unwrap();
        assert!(daemon.wait().unwrap().success(), "gnome-keyring-daemon --unlock");
        let service = SecretService { bus, address };
        // `--unlock` returns before its daemon owns the service's name; a call made before that
        // would have the bus start another daemon, which has no password: wait for the name.
        let owned = || {
            let out = std::process::Command::new("dbus-send")
                .args(["--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus"])
                .args(["org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"])
                .env("DBUS_SESSION_BUS_ADDRESS", &service.address)
                .output()
                .expect("dbus-send (Debian: dbus)");
            String::from_utf8_lossy(&out.stdout).contains("boolean true")
        };
        let waited = std::time::Instant::now();
        while !owned() {
            assert!(waited.elapsed() < Duration::from_secs(30), "gnome-keyring-daemon never took its name");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Ready once an item can be stored in the default collection without a prompt.
        let mut store = std::process::Command::new("secret-tool")
            .args(["store", "--label=ready", "service", "mcpwire-test-ready", "username", "ready"])
            .env("DBUS_SESSION_BUS_ADDRESS", &service.address)
            .stdin(Stdio::piped())
            .spawn()
            .expect("secret-tool (Debian: libsecret-tools)");
        store.stdin.take().unwrap().write_all(b"ready").unwrap();
        assert!(store.wait().unwrap().success(), "secret-tool store in the new Secret Service");
        service
    }

    /// The secrets of the items of `service` whose account starts with `resource`, read by
    /// `secret-tool` (libsecret) as another program of the user would: it writes each item's
    /// secret to stdout and its attributes to stderr, both in the items' order.
    fn secrets(&self, service: &str, resource: &str) -> Vec<String> {
        let out = std::process::Command::new("secret-tool")
            .args(["search", "--all", "--unlock", "service", service])
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .output()
            .expect("secret-tool (Debian: libsecret-tools)");
        let values = |text: &[u8], name: &str| -> Vec<String> {
            let prefix = format!("{name} = ");
            String::from_utf8_lossy(text).lines().filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned)).collect()
        };
        let (secrets, accounts) = (values(&out.stdout, "secret"), values(&out.stderr, "attribute.username"));
        assert_eq!(secrets.len(), accounts.len(), "one account per item");
        let mine = format!("{resource}|");
        accounts.into_iter().zip(secrets).filter(|(account, _)| account.starts_with(&mine)).map(|(_, s)| s).collect()
    }
}

#[cfg(feature = "secret-service")]
impl Drop for SecretService {
    fn drop(&mut self) {
        let _ = self.bus.kill();
        let _ = self.bus.wait();
    }
}

#[cfg(feature = "secret-service")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_a_secret_service_answers_the_login_lives_there_and_in_no_file_nor_the_kernel_keyring() {
    let auth = AuthServer::start().await;
    let server = protected(&auth).await;
    let resource = server.url();
    let dir = temp_dir("bridge-secret-service");
    let service = SecretService::start(&dir);
    let mut bridge = Bridge::new(&dir, "keyring");
    bridge.session_bus = Some(service.address.clone());
    write_config(&bridge.config, &resource);
    assert_eq!(service.secrets("mcpwire OAuth credentials", &resource), Vec::<String>::new());

    let login = bridge.login("prot").await;
    assert!(login.success, "{}", login.stderr);
    assert!(login.stderr.contains("kept in the Secret Service (mcpwire OAuth credentials)"), "{}", login.stderr);
    let kept = service.secrets("mcpwire OAuth credentials", &resource);
    let access = auth.secrets().await;
    assert!(
        access.iter().any(|secret| kept.iter().any(|k| k.contains(secret.as_str()))),
        "an issued token is in the Secret Service: {} items",
        kept.len()
    );
    assert_eq!(keyring_entries(&resource), vec![], "nothing in the kernel keyring");
    let call = bridge.run(&["call", "whoami", "--server", "prot"]).await;
    assert_eq!(call.stdout.trim(), "johndoe", "the stored token is used: {}", call.stderr);
    let check = bridge.run(&["check", "--json"]).await;
    let line = check_line(&check_json(&check), "prot").clone();
    assert_eq!(line["authStore"], "Secret Service (mcpwire OAuth credentials)", "{line}");
    assert_eq!(secrets_in_files(&dir, &auth.secrets().await), vec![], "no issued secret in any file");

    let logout = bridge.run(&["logout", "prot"]).await;
    assert!(logout.success && logout.stderr.contains("logged out of prot"), "{}", logout.stderr);
    assert_eq!(service.secrets("mcpwire OAuth credentials", &resource), Vec::<String>::new(), "logout removed them");
    for secret in &auth.secrets().await {
        assert!(!bridge.outputs.contains(secret.as_str()), "an issued secret was printed or logged");
    }
    drop(service);
    let _ = std::fs::remove_dir_all(&dir);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_keeps_the_login_in_the_file_where_the_kernel_keyring_refuses_it() {
    let auth = AuthServer::start().await;
    let server = protected(&auth).await;
    let resource = server.url();
    let dir = temp_dir("bridge-keyring-refused");
    let mut bridge = Bridge::new(&dir, "keyring");
    bridge.keyring_refuses = true;
    write_config(&bridge.config, &resource);

    // The keyring store alone cannot keep the login: the kernel says no, and the user is told.
    let refused = bridge.login("prot").await;
    assert!(!refused.success, "{}", refused.stderr);
    let said = "login to prot failed: token store failed: keyring: the keyring refused to store the entry";
    assert!(refused.stderr.contains(said), "{}", refused.stderr);
    assert!(!bridge.store().exists());

    bridge.store = "auto";
    let login = bridge.login("prot").await;
    assert!(login.success, "{}", login.stderr);
    let kept_at = format!("kept in the file {}", bridge.store().display());
    assert!(login.stderr.contains(&kept_at), "{}", login.stderr);
    assert_eq!(keyring_entries(&resource), vec![], "nothing reached the kernel keyring");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(bridge.store()).unwrap().permissions().mode() & 0o777, 0o600);
    }
    assert_eq!(bridge.stored()["credentials"][0]["resource"], resource);
    let call = bridge.run(&["call", "whoami", "--server", "prot"]).await;
    assert_eq!(call.stdout.trim(), "johndoe", "{}", call.stderr);
    let check = bridge.run(&["check", "--json"]).await;
    let line = check_line(&check_json(&check), "prot").clone();
    assert_eq!(line["auth"], "logged_in", "{line}");
    assert_eq!(line["authStore"], format!("file {}", bridge.store().display()), "{line}");

    // Where the keyring answers again, auto finds the login in the file, and logout clears it.
    bridge.keyring_refuses = false;
    let call = bridge.run(&["call", "whoami", "--server", "prot"]).await;
    assert_eq!(call.stdout.trim(), "johndoe", "{}", call.stderr);
    let logout = bridge.run(&["logout", "prot"]).await;
    assert!(logout.success && logout.stderr.contains("logged out of prot"), "{}", logout.stderr);
    assert_eq!(bridge.stored()["credentials"], json!([]));
    assert_eq!(keyring_entries(&resource), vec![]);

    for secret in &auth.secrets().await {
        assert!(!bridge.outputs.contains(secret.as_str()), "an issued secret was printed or logged");
    }
    let _ = std::fs::remove_dir_all(&dir);
    server.shutdown().await;
}
