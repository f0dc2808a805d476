//! `mcp-bridge login NAME` and `mcp-bridge logout NAME`: an OAuth login to one configured HTTP
//! server, kept for the client commands (`tools`, `call`, `check`, `serve`), and its removal.
//!
//! `login` runs discovery and the authorization code flow with a loopback redirect on
//! 127.0.0.1 (the server's `oauth.callback_port`, else any free port): the authorization URL is
//! printed on stderr, and opened in a browser only with `--open`. The tokens go to the store of
//! the [mode](CredentialsStoreMode) set by `--credentials-store`, else by the config file's
//! `mcp_oauth_credentials_store`, else `auto` (codex's default): the operating system's keyring
//! where it answers (the kernel keyring on a headless Linux), else the file
//! `oauth-credentials.json` (mode 0600) in the configuration directory (`$MCPWIRE_CONFIG_DIR`,
//! else `$XDG_CONFIG_HOME/mcpwire`, else `~/.config/mcpwire`). `logout` forgets every stored
//! credential of the server, in the keyring and in the file. No token, code or secret is ever
//! printed.
//!
//! Not here: the flow itself (`mcpwire::client::oauth`), using the stored token
//! (`mcpwire::client::login`, through the connection set).

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpwire::client::config::TransportConfig;
use mcpwire::client::config::{McpConfig, ServerConfig};
use mcpwire::client::login::{uses_login, Logins};
use mcpwire::client::oauth::{credentials_store, CredentialsStoreMode, LoopbackRedirect};

/// What users run to log in, for messages.
pub(crate) const LOGIN_COMMAND: &str = "mcp-bridge login";

static STORE_MODE: OnceLock<CredentialsStoreMode> = OnceLock::new();

/// Sets where logins are kept for this process (once, before any command runs).
pub(crate) fn set_store_mode(mode: CredentialsStoreMode) {
    let _ = STORE_MODE.set(mode);
}

fn store_mode() -> CredentialsStoreMode {
    STORE_MODE.get().copied().unwrap_or_default()
}

/// The logins of the user's store, of the mode set (default `auto`).
///
/// # Errors
/// When no configuration directory can be found, or the mode is `keyring` in a build without
/// one.
pub(crate) fn logins() -> Result<Logins, String> {
    let mode = store_mode();
    let store = credentials_store(mode).map_err(|e| format!("no place for OAuth credentials ({mode}): {e}"))?;
    Ok(Logins::new(store, LOGIN_COMMAND).client_name("mcp-bridge"))
}

/// `login` or `logout`, checked by clap.
#[derive(Debug)]
pub(crate) enum Invocation {
    Login { server: String, config: std::path::PathBuf, open: bool, timeout: Duration },
    Logout { server: String, config: std::path::PathBuf },
}

fn server_of(config: &std::path::Path, name: &str) -> Result<ServerConfig, String> {
    let mut servers = McpConfig::load(config).map_err(|e| e.to_string())?.servers;
    servers.remove(name).ok_or_else(|| format!("{}: no server named {name}", config.display()))
}

/// Tries the platform's opener; a failure only means the user opens the printed URL.
fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        eprintln!("mcp-bridge: could not open a browser ({opener}: {e}); open the URL above");
    }
}

async fn login(server: ServerConfig, open: bool, timeout: Duration) -> Result<String, String> {
    let logins = logins()?;
    let name = server.name.clone();
    if matches!(server.transport, TransportConfig::Http { .. }) && !uses_login(&server) {
        return Err(format!(
            "{name} has credentials of its own (bearer_token_env_var or an Authorization header): there is nothing to log in to"
        ));
    }
    // A store that cannot be read fails now, not after the user's trip to the browser.
    logins.store().keys().map_err(|e| format!("the {} credentials store cannot be used: {e}", store_mode()))?;
    let port = server.oauth.callback_port.unwrap_or(0);
    let shown = name.clone();
    let listener = LoopbackRedirect::bind(port, "/callback", move |url| {
        eprintln!("mcp-bridge: to log in to {shown}, open this URL in a browser:\n{url}");
        if open {
            open_in_browser(url.as_str());
        }
    })
    .await
    .map_err(|e| format!("cannot listen for the redirect on 127.0.0.1:{port}: {e}"))?;
    let redirect_uri = listener.redirect_uri().to_owned();
    let client = logins.client(&server, Some((Arc::new(listener), redirect_uri)))?;
    let key = tokio::time::timeout(timeout, client.login())
        .await
        .map_err(|_| format!("login to {name} timed out after {} s", timeout.as_secs()))?
        .map_err(|e| format!("login to {name} failed: {e}"))?;
    let kept = logins.store().location(&key).map(|at| format!("; kept in the {at}")).unwrap_or_default();
    Ok(format!("logged in to {name} (authorization server {}){kept}", key.issuer))
}

fn logout(server: &ServerConfig) -> Result<String, String> {
    let client = logins()?.client(server, None)?;
    let removed = client.logout().map_err(|e| e.to_string())?;
    Ok(if removed == 0 {
        format!("{} had no stored login", server.name)
    } else {
        format!("logged out of {}", server.name)
    })
}

pub(crate) fn main(invocation: Invocation) -> ExitCode {
    let outcome = match invocation {
        Invocation::Login { server, config, open, timeout } => server_of(&config, &server).and_then(|server| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the runtime: {e}"))?;
            runtime.block_on(login(server, open, timeout))
        }),
        Invocation::Logout { server, config } => server_of(&config, &server).and_then(|server| logout(&server)),
    };
    match outcome {
        Ok(done) => {
            eprintln!("mcp-bridge: {done}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcp-bridge: {e}");
            ExitCode::from(1)
        }
    }
}
