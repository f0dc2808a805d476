//! Server configuration for the [connection set](super::connection_set): codex's
//! `[mcp_servers.NAME]` TOML schema, and imports of Claude Desktop / Claude Code `mcpServers`
//! JSON and VS Code `mcp.json` (`servers`).
//!
//! # codex TOML (`mcp.toml`, `config.toml`)
//! ```toml
//! [mcp_servers.github]
//! command = "npx"                      # stdio: the program, looked up in PATH
//! args = ["-y", "@modelcontextprotocol/server-github"]
//! env = { GITHUB_API = "https://api.github.com" }
//! env_vars = ["GITHUB_TOKEN"]          # passed through from our environment
//! cwd = "/srv/github"
//! startup_timeout_sec = 10             # default 10; or startup_timeout_ms = 10000
//! tool_timeout_sec = 60                # default 60
//! enabled = true                       # default true: false skips the server
//! required = false                     # default false: true makes startup fail without it
//! supports_parallel_tool_calls = true  # default true: false sends one call at a time
//! enabled_tools = ["search"]           # default: every tool
//! disabled_tools = ["delete_repo"]     # applied after enabled_tools
//! default_tools_approval_mode = "prompt"
//! tools.search.approval_mode = "approve"
//! scope = "work"                       # default none: servers are told apart by scope + name
//! ready = "listed"                     # default listed: ready once listed; "connected": ready
//!                                      # once connected, listed right after in the background
//! startup = "eager"                    # default eager; "lazy": not started at launch when its
//!                                      # tools are in the catalog cache, started on first call
//! era = "auto"                         # default auto: probe server/discover, fall back to
//!                                      # initialize; "legacy": initialize only; "2026-07-28":
//!                                      # stateless from the start, no probe
//!
//! [mcp_servers.remote]
//! url = "https://example.com/mcp"      # Streamable HTTP, falling back to legacy SSE
//! bearer_token_env_var = "REMOTE_TOKEN"       # Authorization: Bearer $REMOTE_TOKEN (never logged)
//! oauth = { client_id = "my-app", scopes = ["mcp"], callback_port = 8976 }  # see [`auth`]
//! http_headers = { "X-Team" = "core" }
//! env_http_headers = { "X-Api-Key" = "REMOTE_API_KEY" }  # header name -> variable name
//! ```
//! A stdio server started from TOML gets a clean environment, as codex does: the variables of
//! [`DEFAULT_ENV_VARS`] (and `LC_*`) that are set here, then those named in `env_vars`, then
//! `env`. A host holding secrets of its own in its environment (a gateway's bearer token, an
//! introspection client secret) starts every child that way, JSON imports too, and withholds
//! those variables whatever a configuration asks: see [`ChildEnv`].
//! An `mcp_servers` table may sit at the top level of the file or be the only thing in it.
//!
//! # Approval modes
//! `approval_mode` / `default_tools_approval_mode` take one of [`ApprovalMode`]'s names:
//! `auto` (the host applies its own policy), `prompt` (ask the user before every call),
//! `approve` (pre-approved: call without asking). The mode of a tool is resolved per tool, then
//! per server, then the host's default.
//!
//! # Claude / VS Code JSON
//! `{"mcpServers": {NAME: {...}}}` (Claude Desktop, Claude Code `.mcp.json`) or
//! `{"servers": {NAME: {...}}}` (VS Code `mcp.json`), each server with `command`, `args`, `env`,
//! `cwd`, `type` (`stdio`, `http`, `sse`; VS Code's `streamableHttp` is taken as `http`), `url`
//! and `headers`, Claude Code's `oauth` (see [`auth`]), and our `era` and `startup` (as in TOML). `${VAR}` and `${VAR:-default}` are expanded in every string; an unset
//! variable without a default is an error. Imported stdio servers inherit our environment
//! (as Claude and VS Code start them). Other members (`disabled`, `alwaysAllow`, `inputs` …)
//! are ignored, except `disabled: true`, which disables the server.
//!
//! Every error names the file, the server and the field:
//! `mcp.toml: mcp_servers.github.startup_timeout_sec: expected a number`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::EraPolicy;

pub mod auth;
pub use auth::OAuthSettings;

/// The variables a stdio server configured in TOML gets from our environment without asking
/// (codex's list).
pub const DEFAULT_ENV_VARS: &[&str] =
    &["HOME", "LOGNAME", "PATH", "SHELL", "USER", "__CF_USER_TEXT_ENCODING", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"];

/// Prefixes of further variables a stdio server gets like those of [`DEFAULT_ENV_VARS`]: the
/// locale categories (`LC_CTYPE`, `LC_MESSAGES` …).
pub const DEFAULT_ENV_PREFIXES: &[&str] = &["LC_"];

/// How a connection set builds its stdio children's environments (see
/// [`SetOptions::with_child_env`](super::connection_set::SetOptions::with_child_env)).
///
/// The default keeps each server's own rule (TOML: clean; JSON imports and
/// [`ServerConfig::stdio`]: our whole environment). A host that keeps credentials in its
/// environment (a gateway's `--auth-token-env`) sets [`clean`](ChildEnv::clean), so that every
/// child gets only [`DEFAULT_ENV_VARS`], `LC_*`, [`pass`](ChildEnv::pass), its `env_vars` and
/// its `env`, and names those credentials in [`withheld`](ChildEnv::withheld): never passed
/// from our environment, even when inherited or named in `env_vars` (such a server is refused
/// at start, with an error naming the variable, never its value). A value written in a
/// server's `env` is the configuration's own and is set as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChildEnv {
    /// Every child starts from a clean environment, even one whose configuration inherits
    /// ours.
    pub clean: bool,
    /// Variables of ours every child gets (when set), as if each named them in `env_vars`.
    pub pass: Vec<String>,
    /// Variables of ours no child gets.
    pub withheld: Vec<String>,
}

impl ChildEnv {
    /// Every child from a clean environment (see [`ChildEnv::clean`]).
    pub fn clean() -> Self {
        ChildEnv { clean: true, ..ChildEnv::default() }
    }

    /// This rule, also passing `var` to every child.
    pub fn pass(mut self, var: impl Into<String>) -> Self {
        self.pass.push(var.into());
        self
    }

    /// This rule, never passing `var` to a child.
    pub fn withhold(mut self, var: impl Into<String>) -> Self {
        self.withheld.push(var.into());
        self
    }

    /// Whether `var` is withheld.
    pub fn is_withheld(&self, var: &str) -> bool {
        self.withheld.iter().any(|w| w == var)
    }

    /// Why a server whose recipe names `env_vars` is refused under this rule (`env_vars`, or
    /// [`pass`](ChildEnv::pass), names a withheld variable; the message names the variable),
    /// or `None`.
    pub fn refusal(&self, env_vars: &[String]) -> Option<String> {
        let var = self.pass.iter().chain(env_vars).find(|v| self.is_withheld(v))?;
        Some(format!("env_vars: {var} holds a credential of this host, never passed to a server's environment"))
    }

    /// `child` with the environment of a server whose recipe says `inherit_env`, `env_vars`
    /// and `env`, under this rule, with the values of our environment.
    ///
    /// # Errors
    /// When `env_vars` (or [`pass`](ChildEnv::pass)) names a withheld variable: the message
    /// names the variable.
    pub fn apply(
        &self,
        mut child: crate::transport::stdio::ChildCommand,
        inherit_env: bool,
        env_vars: &[String],
        env: &BTreeMap<String, String>,
    ) -> Result<crate::transport::stdio::ChildCommand, String> {
        if let Some(refusal) = self.refusal(env_vars) {
            return Err(refusal);
        }
        let asked = self.pass.iter().chain(env_vars);
        if inherit_env && !self.clean {
            for var in &self.withheld {
                child = child.env_remove(var);
            }
            for var in &self.pass {
                if let Ok(value) = std::env::var(var) {
                    child = child.env(var, value);
                }
            }
        } else {
            child = child.env_clear();
            let ours = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
            for (var, value) in ours {
                if DEFAULT_ENV_PREFIXES.iter().any(|p| var.starts_with(p)) && !self.is_withheld(&var) {
                    child = child.env(var, value);
                }
            }
            for var in DEFAULT_ENV_VARS.iter().copied().chain(asked.map(String::as_str)) {
                if self.is_withheld(var) {
                    continue;
                }
                if let Ok(value) = std::env::var(var) {
                    child = child.env(var, value);
                }
            }
        }
        for (k, v) in env {
            child = child.env(k, v);
        }
        Ok(child)
    }
}

/// Default `startup_timeout_sec`: 10 s.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `tool_timeout_sec`: 60 s.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether a tool call needs the user's approval, as configured (`approval_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalMode {
    /// `auto`: the host decides with its own policy.
    Auto,
    /// `prompt`: ask the user before every call.
    Prompt,
    /// `approve`: pre-approved, call without asking.
    Approve,
}

impl ApprovalMode {
    /// The configuration name: `auto`, `prompt` or `approve`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Auto => "auto",
            ApprovalMode::Prompt => "prompt",
            ApprovalMode::Approve => "approve",
        }
    }

    #[cfg(feature = "config")]
    fn parse(s: &str) -> Option<ApprovalMode> {
        match s {
            "auto" => Some(ApprovalMode::Auto),
            "prompt" => Some(ApprovalMode::Prompt),
            "approve" => Some(ApprovalMode::Approve),
            _ => None,
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to reach one server: the recipe the set starts it with, and restarts it with.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TransportConfig {
    /// A child process over stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it.
        env: BTreeMap<String, String>,
        /// Variables passed through from our environment (when set).
        env_vars: Vec<String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
        /// Whether it inherits our whole environment (JSON imports) or only
        /// [`DEFAULT_ENV_VARS`] and `env_vars` (codex TOML).
        inherit_env: bool,
    },
    /// Streamable HTTP (with fallback to the legacy HTTP+SSE transport), or legacy SSE only.
    Http {
        /// The endpoint.
        url: String,
        /// The variable holding a bearer token for `Authorization`.
        bearer_token_env_var: Option<String>,
        /// Headers sent with every request.
        http_headers: BTreeMap<String, String>,
        /// Headers whose values are read from our environment: header name → variable name.
        env_http_headers: BTreeMap<String, String>,
        /// `type = "sse"` in a JSON import: speak the legacy HTTP+SSE transport only.
        legacy_sse: bool,
    },
    /// A server in this very process, reached over an in-process pair ([`InProcess`]): never
    /// read from a file, given by the program that embeds the set.
    InProcess(InProcess),
}

/// Makes the client end of an in-process connection to a server of this process: called at
/// every start and restart, it serves the other end (say with `Server::serve`) and returns
/// this one.
#[derive(Clone)]
pub struct InProcess {
    connect: std::sync::Arc<dyn Fn() -> crate::transport::inproc::InprocTransport + Send + Sync>,
}

impl InProcess {
    /// A connector calling `connect` for each connection.
    pub fn new(connect: impl Fn() -> crate::transport::inproc::InprocTransport + Send + Sync + 'static) -> Self {
        InProcess { connect: std::sync::Arc::new(connect) }
    }

    /// A new connection's client end.
    pub fn connect(&self) -> crate::transport::inproc::InprocTransport {
        (self.connect)()
    }
}

impl fmt::Debug for InProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InProcess")
    }
}

/// Two connectors are the same recipe only when they are the same connector.
impl PartialEq for InProcess {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.connect, &other.connect)
    }
}

/// Per-tool settings (`tools.NAME`).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolConfig {
    /// `approval_mode`.
    pub approval_mode: Option<ApprovalMode>,
}

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Its name (the key under `mcp_servers`).
    pub name: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// How long starting (spawn or connect, `initialize`, listing) may take: default 10 s.
    pub startup_timeout: Duration,
    /// The longest a tool call may take: default 60 s.
    pub tool_timeout: Duration,
    /// `false`: skipped (reported as disabled). Default true.
    pub enabled: bool,
    /// `true`: startup fails when this server cannot start. Default false.
    pub required: bool,
    /// `false`: one tool call at a time. Default true.
    pub supports_parallel_tool_calls: bool,
    /// Only these tools are offered (default: all).
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered nor called.
    pub disabled_tools: Vec<String>,
    /// The approval mode of tools without their own.
    pub default_tools_approval_mode: Option<ApprovalMode>,
    /// Per-tool settings.
    pub tools: BTreeMap<String, ToolConfig>,
    /// Which protocol era to speak (`era`): default [`EraPolicy::Auto`].
    pub era: EraPolicy,
    /// When the server is started (`startup`): default [`Startup::Eager`].
    pub startup: Startup,
    /// When it counts as ready (`ready = "listed" | "connected"`): default
    /// [`Readiness::Listed`].
    pub readiness: Readiness,
    /// The scope it runs in (a workspace, an environment …; `scope`): default none. Servers
    /// are identified by [`ServerConfig::key`], so two servers of one name in two scopes are
    /// two servers.
    pub scope: Option<String>,
    /// How to log in to an HTTP server with OAuth (`oauth`): default nothing set.
    pub oauth: OAuthSettings,
}

/// When a server of the set counts as ready (`ready`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Readiness {
    /// `listed`: once connected and its catalog listed (startup waits for the listing).
    #[default]
    Listed,
    /// `connected`: once connected; its catalog is listed right after, in the background
    /// (the catalog then changes, with a `CatalogChanged` event).
    Connected,
}

/// When a server of the set is started (`startup = "eager" | "lazy"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Startup {
    /// At [`ConnectionSet::start`](super::connection_set::ConnectionSet::start).
    #[default]
    Eager,
    /// On its first call, when its catalog is in the set's catalog cache (listed from there
    /// meanwhile); without a cached catalog, as `eager`.
    Lazy,
}

impl Startup {
    /// `eager` or `lazy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Startup::Eager => "eager",
            Startup::Lazy => "lazy",
        }
    }
}

impl ServerConfig {
    /// A server with every setting at its default.
    pub fn new(name: impl Into<String>, transport: TransportConfig) -> Self {
        ServerConfig {
            name: name.into(),
            transport,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled: true,
            required: false,
            supports_parallel_tool_calls: true,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            default_tools_approval_mode: None,
            tools: BTreeMap::new(),
            era: EraPolicy::Auto,
            startup: Startup::Eager,
            scope: None,
            readiness: Readiness::Listed,
            oauth: OAuthSettings::default(),
        }
    }

    /// A stdio server running `command` with `args`, inheriting our environment.
    pub fn stdio<I, S>(name: impl Into<String>, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ServerConfig::new(
            name,
            TransportConfig::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                env_vars: Vec::new(),
                cwd: None,
                inherit_env: true,
            },
        )
    }

    /// A Streamable HTTP server at `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        ServerConfig::new(
            name,
            TransportConfig::Http {
                url: url.into(),
                bearer_token_env_var: None,
                http_headers: BTreeMap::new(),
                env_http_headers: BTreeMap::new(),
                legacy_sse: false,
            },
        )
    }

    /// A server of this process, reached in process through `connector`.
    pub fn in_process(name: impl Into<String>, connector: InProcess) -> Self {
        ServerConfig::new(name, TransportConfig::InProcess(connector))
    }

    /// Whether `other` reaches its server the same way: the same transport recipe (command,
    /// args, env, env_vars, cwd, url, headers, auth) and era, and both enabled or both not.
    /// Everything else (filters, timeouts, approval modes, `required`) is a per-call setting
    /// that a reload changes in place.
    pub fn same_connection(&self, other: &ServerConfig) -> bool {
        self.transport == other.transport && self.era == other.era && self.enabled == other.enabled
    }

    /// The server's identity in a set: `SCOPE/NAME` when it has a scope, else its name.
    pub fn key(&self) -> String {
        match &self.scope {
            Some(scope) => format!("{scope}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// This server in `scope`.
    pub fn in_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Whether `tool` passes `enabled_tools` and `disabled_tools`.
    pub fn tool_allowed(&self, tool: &str) -> bool {
        self.enabled_tools.as_ref().is_none_or(|enabled| enabled.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }

    /// The approval mode of `tool`: its own, else the server's default, else `host_default`.
    pub fn approval_mode(&self, tool: &str, host_default: ApprovalMode) -> ApprovalMode {
        self.tools.get(tool).and_then(|t| t.approval_mode).or(self.default_tools_approval_mode).unwrap_or(host_default)
    }
}

/// Every configured server, by key ([`ServerConfig::key`]: the name, or `SCOPE/NAME`), in
/// key order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpConfig {
    /// The servers.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Where OAuth logins are kept: `keyring`, `file` or `auto` (codex's top-level
    /// `mcp_oauth_credentials_store`; see `client::oauth::CredentialsStoreMode`), if the file
    /// says.
    pub oauth_credentials_store: Option<String>,
}

impl McpConfig {
    /// These servers, every one in `scope` (and keyed `SCOPE/NAME`): e.g. a workspace's
    /// project file, whose `git` must not be confused with another workspace's.
    pub fn in_scope(self, scope: &str) -> McpConfig {
        let mut scoped = McpConfig::default();
        for server in self.servers.into_values() {
            scoped.insert(server.in_scope(scope));
        }
        scoped
    }

    /// Adds (or replaces) `server` under its key.
    pub fn insert(&mut self, server: ServerConfig) {
        self.servers.insert(server.key(), server);
    }
}

/// Why a configuration could not be read: the file, where in it, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (as given), or `<config>`.
    pub file: String,
    /// Where: `mcp_servers.github.startup_timeout_sec`; empty for the whole file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Which schema a file follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// codex's TOML (`mcp_servers`).
    CodexToml,
    /// JSON with `mcpServers` (Claude) or `servers` (VS Code), told apart by the top-level key.
    Json,
}

/// Looks up an environment variable (our environment, or a test's).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl McpConfig {
    /// Reads `path`, choosing the schema by extension: `.toml` → codex, `.json` → Claude or
    /// VS Code (by top-level key). Errors name the file as given.
    ///
    /// # Errors
    /// When the file cannot be read, parsed or validated.
    pub fn load(path: impl AsRef<Path>) -> Result<McpConfig, ConfigError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let format = match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("toml") => ConfigFormat::CodexToml,
            Some(e) if e.eq_ignore_ascii_case("json") => ConfigFormat::Json,
            _ => return Err(error(&file, "", "unknown configuration format (expected a .toml or .json file)")),
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(&file, "", format!("cannot read: {e}")))?;
        McpConfig::parse(&text, format, &file, &process_env)
    }

    /// Parses `text` in `format`; `file` names it in errors; `env` expands `${VAR}` in JSON
    /// imports.
    ///
    /// # Errors
    /// When the text cannot be parsed or validated.
    pub fn parse(text: &str, format: ConfigFormat, file: &str, env: EnvLookup<'_>) -> Result<McpConfig, ConfigError> {
        match format {
            #[cfg(feature = "config")]
            ConfigFormat::CodexToml => McpConfig::from_toml(text, file),
            #[cfg(not(feature = "config"))]
            ConfigFormat::CodexToml => Err(error(file, "", "reading codex TOML needs mcpwire's `config` feature")),
            ConfigFormat::Json => McpConfig::from_json(text, file, env),
        }
    }

    /// Parses codex TOML (feature `config`).
    ///
    /// # Errors
    /// When the text is not TOML or a field is wrong.
    #[cfg(feature = "config")]
    pub fn from_toml(text: &str, file: &str) -> Result<McpConfig, ConfigError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            let message = e.message().to_owned();
            match e.span() {
                Some(span) => {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                    error(file, "", format!("line {line}: {message}"))
                }
                None => error(file, "", message),
            }
        })?;
        let root = toml_to_json(toml::Value::Table(table));
        let Value::Object(root) = root else { unreachable!("a table converts to an object") };
        let mut config = McpConfig::default();
        if let Some(store) = root.get(STORE_KEY) {
            match store.as_str() {
                Some(mode @ ("keyring" | "file" | "auto")) => config.oauth_credentials_store = Some(mode.to_owned()),
                _ => return Err(error(file, STORE_KEY, "expected \"keyring\", \"file\" or \"auto\"")),
            }
        }
        let Some(servers) = root.get("mcp_servers") else { return Ok(config) };
        let Value::Object(servers) = servers else { return Err(error(file, "mcp_servers", "expected a table")) };
        for (name, server) in servers {
            let at = Field { file, path: format!("mcp_servers.{}", key(name)) };
            config.insert(codex_server(name, server, &at)?);
        }
        Ok(config)
    }

    /// Parses Claude (`mcpServers`) or VS Code (`servers`) JSON, expanding `${VAR}` and
    /// `${VAR:-default}` with `env`.
    ///
    /// # Errors
    /// When the text is not JSON, has neither key, or a field is wrong.
    pub fn from_json(text: &str, file: &str, env: EnvLookup<'_>) -> Result<McpConfig, ConfigError> {
        let root: Value = serde_json::from_str(text).map_err(|e| error(file, "", format!("invalid JSON: {e}")))?;
        let Value::Object(root) = root else { return Err(error(file, "", "expected a JSON object")) };
        let (top, servers) = if let Some(s) = root.get("mcpServers") {
            ("mcpServers", s)
        } else if let Some(s) = root.get("servers") {
            ("servers", s)
        } else {
            return Err(error(
                file,
                "",
                "expected a top-level \"mcpServers\" (Claude) or \"servers\" (VS Code) object",
            ));
        };
        let Value::Object(servers) = servers else { return Err(error(file, top, "expected an object")) };
        let mut config = McpConfig::default();
        for (name, server) in servers {
            let at = Field { file, path: format!("{top}.{}", key(name)) };
            config.insert(json_server(name, server, &at, env)?);
        }
        Ok(config)
    }

    /// The servers whose `required` is set.
    pub fn required(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.values().filter(|s| s.required)
    }
}

fn error(file: &str, path: &str, message: impl Into<String>) -> ConfigError {
    ConfigError { file: file.to_owned(), path: path.to_owned(), message: message.into() }
}

/// A dotted path component, quoted when it is not a bare key.
fn key(name: &str) -> String {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

/// Where we are in the file, for errors.
struct Field<'a> {
    file: &'a str,
    path: String,
}

impl Field<'_> {
    fn child(&self, name: &str) -> Field<'_> {
        Field { file: self.file, path: format!("{}.{}", self.path, key(name)) }
    }

    fn err(&self, message: impl Into<String>) -> ConfigError {
        error(self.file, &self.path, message)
    }

    fn string(&self, v: &Value) -> Result<String, ConfigError> {
        v.as_str().map(str::to_owned).ok_or_else(|| self.err("expected a string"))
    }

    fn bool(&self, v: &Value) -> Result<bool, ConfigError> {
        v.as_bool().ok_or_else(|| self.err("expected true or false"))
    }

    fn strings(&self, v: &Value) -> Result<Vec<String>, ConfigError> {
        let Value::Array(items) = v else { return Err(self.err("expected an array of strings")) };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str().map(str::to_owned).ok_or_else(|| self.child(&i.to_string()).err("expected a string"))
            })
            .collect()
    }

    fn string_map(&self, v: &Value) -> Result<BTreeMap<String, String>, ConfigError> {
        let Value::Object(map) = v else { return Err(self.err("expected a table of strings")) };
        map.iter().map(|(k, v)| Ok((k.clone(), self.child(k).string(v)?))).collect()
    }

    #[cfg(feature = "config")]
    fn seconds(&self, v: &Value, scale: f64) -> Result<Duration, ConfigError> {
        let n = v.as_f64().ok_or_else(|| self.err("expected a number"))?;
        if !(n.is_finite() && n >= 0.0) {
            return Err(self.err("expected a non-negative number"));
        }
        Duration::try_from_secs_f64(n * scale).map_err(|_| self.err("out of range"))
    }

    fn era(&self, v: &Value) -> Result<EraPolicy, ConfigError> {
        self.string(v)?.parse().map_err(|e: super::InvalidEra| self.err(e.to_string()))
    }

    fn startup(&self, v: &Value) -> Result<Startup, ConfigError> {
        match self.string(v)?.as_str() {
            "eager" => Ok(Startup::Eager),
            "lazy" => Ok(Startup::Lazy),
            other => Err(self.err(format!("unknown startup {other:?} (expected eager or lazy)"))),
        }
    }

    fn readiness(&self, v: &Value) -> Result<Readiness, ConfigError> {
        match self.string(v)?.as_str() {
            "listed" => Ok(Readiness::Listed),
            "connected" => Ok(Readiness::Connected),
            other => Err(self.err(format!("unknown ready {other:?} (expected listed or connected)"))),
        }
    }

    fn scope(&self, v: &Value) -> Result<String, ConfigError> {
        let scope = self.string(v)?;
        if scope.is_empty() || scope.contains('/') {
            return Err(self.err("expected a non-empty scope without '/'"));
        }
        Ok(scope)
    }

    #[cfg(feature = "config")]
    fn approval(&self, v: &Value) -> Result<ApprovalMode, ConfigError> {
        let s = self.string(v)?;
        ApprovalMode::parse(&s)
            .ok_or_else(|| self.err(format!("unknown approval mode {s:?} (expected auto, prompt or approve)")))
    }
}

#[cfg(feature = "config")]
fn toml_to_json(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(t.into_iter().map(|(k, v)| (k, toml_to_json(v))).collect()),
    }
}

/// codex's top-level key naming where OAuth logins are kept.
#[cfg(feature = "config")]
const STORE_KEY: &str = "mcp_oauth_credentials_store";

#[cfg(feature = "config")]
const CODEX_FIELDS: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled",
    "required",
    "supports_parallel_tool_calls",
    "enabled_tools",
    "disabled_tools",
    "default_tools_approval_mode",
    "tools",
    "era",
    "startup",
    "scope",
    "ready",
    "oauth",
];

#[cfg(feature = "config")]
fn codex_server(name: &str, v: &Value, at: &Field<'_>) -> Result<ServerConfig, ConfigError> {
    let Value::Object(t) = v else { return Err(at.err("expected a table")) };
    if let Some(unknown) = t.keys().find(|k| !CODEX_FIELDS.contains(&k.as_str())) {
        return Err(at.child(unknown).err("unknown field"));
    }
    let get = |k: &str| t.get(k).map(|v| (at.child(k), v));
    let transport = match (t.get("command"), t.get("url")) {
        (Some(_), Some(_)) => return Err(at.err("set either command (stdio) or url (http), not both")),
        (None, None) => return Err(at.err("missing command (stdio) or url (http)")),
        (Some(command), None) => {
            for http_only in ["bearer_token_env_var", "http_headers", "env_http_headers", "oauth"] {
                if t.contains_key(http_only) {
                    return Err(at.child(http_only).err("applies to url servers only"));
                }
            }
            TransportConfig::Stdio {
                command: at.child("command").string(command)?,
                args: get("args").map(|(f, v)| f.strings(v)).transpose()?.unwrap_or_default(),
                env: get("env").map(|(f, v)| f.string_map(v)).transpose()?.unwrap_or_default(),
                env_vars: get("env_vars").map(|(f, v)| f.strings(v)).transpose()?.unwrap_or_default(),
                cwd: get("cwd").map(|(f, v)| f.string(v)).transpose()?.map(PathBuf::from),
                inherit_env: false,
            }
        }
        (None, Some(url)) => {
            for stdio_only in ["args", "env", "env_vars", "cwd"] {
                if t.contains_key(stdio_only) {
                    return Err(at.child(stdio_only).err("applies to command servers only"));
                }
            }
            TransportConfig::Http {
                url: at.child("url").string(url)?,
                bearer_token_env_var: get("bearer_token_env_var").map(|(f, v)| f.string(v)).transpose()?,
                http_headers: get("http_headers").map(|(f, v)| f.string_map(v)).transpose()?.unwrap_or_default(),
                env_http_headers: get("env_http_headers")
                    .map(|(f, v)| f.string_map(v))
                    .transpose()?
                    .unwrap_or_default(),
                legacy_sse: false,
            }
        }
    };
    let mut server = ServerConfig::new(name, transport);
    if let Some((f, v)) = get("startup_timeout_sec") {
        server.startup_timeout = f.seconds(v, 1.0)?;
    } else if let Some((f, v)) = get("startup_timeout_ms") {
        server.startup_timeout = f.seconds(v, 0.001)?;
    }
    if let Some((f, v)) = get("tool_timeout_sec") {
        server.tool_timeout = f.seconds(v, 1.0)?;
    }
    if let Some((f, v)) = get("enabled") {
        server.enabled = f.bool(v)?;
    }
    if let Some((f, v)) = get("required") {
        server.required = f.bool(v)?;
    }
    if let Some((f, v)) = get("supports_parallel_tool_calls") {
        server.supports_parallel_tool_calls = f.bool(v)?;
    }
    server.enabled_tools = get("enabled_tools").map(|(f, v)| f.strings(v)).transpose()?;
    server.disabled_tools = get("disabled_tools").map(|(f, v)| f.strings(v)).transpose()?.unwrap_or_default();
    server.default_tools_approval_mode = get("default_tools_approval_mode").map(|(f, v)| f.approval(v)).transpose()?;
    if let Some((f, v)) = get("era") {
        server.era = f.era(v)?;
    }
    if let Some((f, v)) = get("startup") {
        server.startup = f.startup(v)?;
    }
    if let Some((f, v)) = get("ready") {
        server.readiness = f.readiness(v)?;
    }
    if let Some((f, v)) = get("scope") {
        server.scope = Some(f.scope(v)?);
    }
    if let Some((f, v)) = get("oauth") {
        if t.contains_key("bearer_token_env_var") {
            return Err(f.err("set either bearer_token_env_var or oauth, not both"));
        }
        server.oauth = auth::from_toml(v, &f)?;
    }
    if let Some((f, v)) = get("tools") {
        let Value::Object(tools) = v else { return Err(f.err("expected a table")) };
        for (tool, settings) in tools {
            let f = f.child(tool);
            let Value::Object(settings) = settings else { return Err(f.err("expected a table")) };
            let mut config = ToolConfig::default();
            for (k, v) in settings {
                match k.as_str() {
                    "approval_mode" => config.approval_mode = Some(f.child(k).approval(v)?),
                    _ => return Err(f.child(k).err("unknown field")),
                }
            }
            server.tools.insert(tool.clone(), config);
        }
    }
    Ok(server)
}

fn json_server(name: &str, v: &Value, at: &Field<'_>, env: EnvLookup<'_>) -> Result<ServerConfig, ConfigError> {
    let Value::Object(t) = v else { return Err(at.err("expected an object")) };
    let t = expand_object(t, at, env)?;
    let get = |k: &str| t.get(k).map(|v| (at.child(k), v));
    let kind = get("type").map(|(f, v)| f.string(v)).transpose()?;
    let kind = match kind.as_deref() {
        None => {
            if t.contains_key("url") && !t.contains_key("command") {
                "http"
            } else {
                "stdio"
            }
        }
        Some("stdio") => "stdio",
        Some("http" | "streamableHttp" | "streamable-http") => "http",
        Some("sse") => "sse",
        Some(other) => {
            return Err(at.child("type").err(format!("unknown server type {other:?} (expected stdio, http or sse)")))
        }
    };
    let transport = if kind == "stdio" {
        let Some((f, command)) = get("command") else { return Err(at.err("missing command")) };
        TransportConfig::Stdio {
            command: f.string(command)?,
            args: get("args").map(|(f, v)| f.strings(v)).transpose()?.unwrap_or_default(),
            env: get("env").map(|(f, v)| f.string_map(v)).transpose()?.unwrap_or_default(),
            env_vars: Vec::new(),
            cwd: get("cwd").map(|(f, v)| f.string(v)).transpose()?.map(PathBuf::from),
            inherit_env: true,
        }
    } else {
        let Some((f, url)) = get("url") else { return Err(at.err("missing url")) };
        TransportConfig::Http {
            url: f.string(url)?,
            bearer_token_env_var: None,
            http_headers: get("headers").map(|(f, v)| f.string_map(v)).transpose()?.unwrap_or_default(),
            env_http_headers: BTreeMap::new(),
            legacy_sse: kind == "sse",
        }
    };
    let mut server = ServerConfig::new(name, transport);
    if let Some((f, v)) = get("disabled") {
        server.enabled = !f.bool(v)?;
    }
    if let Some((f, v)) = get("era") {
        server.era = f.era(v)?;
    }
    if let Some((f, v)) = get("startup") {
        server.startup = f.startup(v)?;
    }
    if let Some((f, v)) = get("ready") {
        server.readiness = f.readiness(v)?;
    }
    if let Some((f, v)) = get("scope") {
        server.scope = Some(f.scope(v)?);
    }
    if let Some((f, v)) = get("oauth") {
        if kind == "stdio" {
            return Err(f.err("applies to url servers only"));
        }
        server.oauth = auth::from_json(v, &f)?;
    }
    Ok(server)
}

fn expand_object(
    t: &Map<String, Value>,
    at: &Field<'_>,
    env: EnvLookup<'_>,
) -> Result<Map<String, Value>, ConfigError> {
    t.iter().map(|(k, v)| Ok((k.clone(), expand_value(v, &at.child(k), env)?))).collect()
}

fn expand_value(v: &Value, at: &Field<'_>, env: EnvLookup<'_>) -> Result<Value, ConfigError> {
    Ok(match v {
        Value::String(s) => Value::String(expand(s, env).map_err(|m| at.err(m))?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| expand_value(v, &at.child(&i.to_string()), env))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(expand_object(map, at, env)?),
        other => other.clone(),
    })
}

/// Expands `${VAR}` and `${VAR:-default}` (Claude Code's syntax) in `s`.
///
/// # Errors
/// An unset variable without a default, or an unterminated `${`.
pub fn expand(s: &str, env: EnvLookup<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| format!("unterminated ${{ in {s:?}"))?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!("environment variable {name} is not set (and ${{{name}}} has no default)"))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(feature = "config")]
pub mod edit;

// The tests read codex TOML.
#[cfg(all(test, feature = "config"))]
mod tests;
