//! `mcp-bridge`: many MCP servers as one (`serve`, the gateway), and a command-line MCP client
//! for one server or a configured set (`tools`, `call`, `check`).
//!
//! The command line and logging setup of the binary; the gateway itself is the library's
//! ([`mcpwire::gateway`]), and so are the client, the configuration files and the recorders.
//! The demo servers of the embedded default (an echo server and an agent) live here (`demo`).
//!
//! ```text
//! mcp-bridge serve [--listen stdio|http://127.0.0.1:8000/mcp] [--config FILE | --url URL | -- CMD ARGS...]
//! mcp-bridge tools [--json] (-- CMD ARGS... | --url URL | --config FILE [--server NAME])
//! mcp-bridge call TOOL [--args JSON] [--json] (-- CMD ARGS... | --url URL | --config FILE --server NAME)
//! mcp-bridge resources list|templates|read URI, prompts list|get NAME, complete, log-level LEVEL (shell_reach.rs)
//! mcp-bridge list [--config FILE] [--json]       (default FILE: ~/.codex/config.toml)
//! mcp-bridge get NAME [--config FILE] [--json]
//! mcp-bridge add NAME [--config FILE] [--env K=V]... (--url URL [--bearer-token-env-var VAR] | -- CMD ARGS...)
//! mcp-bridge remove NAME [--config FILE]
//! mcp-bridge check --config FILE [--project FILE] [--import FILE]... [--on-conflict KIND=ACTION]... [--json]
//! mcp-bridge login NAME --config FILE [--open] [--timeout SECS]
//! mcp-bridge logout NAME --config FILE
//! ```
//!
//! `login` / `logout` keep an OAuth login to one configured HTTP server (see login.rs); the
//! client commands use it, never starting a login themselves. Where logins are kept is
//! `--credentials-store keyring|file|auto` (any command), else the config file's
//! `mcp_oauth_credentials_store`, else `auto`.
//!
//! The command line is clap's (`--help` on every subcommand); logs are `tracing`'s, filtered
//! by `RUST_LOG` (default `info` for `serve`, `warn` otherwise), always on stderr: in stdio mode
//! stdout carries only protocol frames.
//!
//! Exit codes: 0 success, 1 protocol or connection failure (one line on stderr; for `check`, a
//! required server failed; for `serve`, it could not start), 2 usage error, 3 the tool answered
//! `isError: true`, 130 interrupted (Ctrl-C; the servers are killed with their process groups).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod config_cli;
mod demo;
mod embedded;
mod login;
mod otel;
mod serve;
mod shell;
mod shell_reach;
mod ui;

use mcpwire::client::oauth::CredentialsStoreMode;
use mcpwire::gateway::PrefixMode;

#[derive(Parser, Debug)]
#[command(name = "mcp-bridge", version, about = "Many MCP servers as one, and an MCP client for the shell")]
struct Cli {
    /// Where OAuth logins are kept: `keyring` (the system's: Keychain, Credential Manager, the
    /// Linux kernel keyring), `file` (oauth-credentials.json, mode 0600, in the config
    /// directory) or `auto` (the keyring where it answers, else the file). Default: the
    /// config file's mcp_oauth_credentials_store, else auto.
    #[arg(long, global = true, value_name = "keyring|file|auto", value_parser = parse_store_mode)]
    credentials_store: Option<CredentialsStoreMode>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve MCP servers as one: aggregated, over stdio or Streamable HTTP (with legacy SSE).
    ///
    /// With no upstream given, serves the bundled examples (an echo server and an agent) in
    /// process on http://127.0.0.1:8000/mcp.
    Serve(Box<ServeArgs>),
    /// List a server's tools (or every configured server's, under qualified names).
    Tools {
        /// The one server of --config to list (default: every server, under qualified names).
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        source: Source,
    },
    /// Call one tool.
    Call {
        /// The tool's name (with --config: its name on --server, not the qualified one).
        tool: String,
        /// The tool's arguments, a JSON object.
        #[arg(long, value_name = "JSON", value_parser = parse_object)]
        args: Option<serde_json::Map<String, serde_json::Value>>,
        /// The server of --config whose tool it is (needed with --config).
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        source: Source,
    },
    #[command(flatten)]
    Reach(shell_reach::ReachCommand),
    /// List the configured servers (of --config, default ~/.codex/config.toml; with --project
    /// and --import, of every source, resolved).
    List {
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(flatten)]
        sources: MoreSources,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Show one configured server.
    Get {
        /// Its name (or SCOPE/NAME).
        name: String,
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(flatten)]
        sources: MoreSources,
        /// Print a JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Add a server to the config file (edited in place, comments kept): a stdio command after
    /// `--`, or --url.
    Add {
        /// Its name.
        name: String,
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// A variable set for a stdio server (repeatable).
        #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
        env: Vec<(String, String)>,
        /// A Streamable HTTP server's endpoint, instead of a command.
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        url: Option<String>,
        /// The variable holding a bearer token for --url.
        #[arg(long, value_name = "VAR", requires = "url")]
        bearer_token_env_var: Option<String>,
        /// The command and its arguments, after `--`.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Remove a server from the config file (edited in place, comments kept).
    Remove {
        /// Its name.
        name: String,
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Start every configured server and print one status line each, with the source of its
    /// definition (and the definitions it shadows) when there are several sources.
    Check {
        /// The configuration: .toml (codex `[mcp_servers]`) or .json (Claude mcpServers, VS Code servers).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        #[command(flatten)]
        sources: MoreSources,
        #[command(flatten)]
        common: Common,
    },
    /// Log in to a configured HTTP server with OAuth and keep the tokens for the other commands.
    ///
    /// Prints the authorization URL on stderr and waits for the browser's redirect to
    /// 127.0.0.1. Tokens go to the --credentials-store: by default (auto) the system's keyring
    /// where it answers, else oauth-credentials.json (mode 0600) in $MCPWIRE_CONFIG_DIR, else
    /// $XDG_CONFIG_HOME/mcpwire, else ~/.config/mcpwire.
    Login {
        /// The server's name in --config.
        name: String,
        /// The configuration: .toml (codex `[mcp_servers]`) or .json (Claude mcpServers, VS Code servers).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Also open the URL in a browser (xdg-open, or open on macOS).
        #[arg(long)]
        open: bool,
        /// How long to wait for the whole login, in seconds (default 300).
        #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
        timeout: Option<Duration>,
    },
    /// Forget the stored OAuth login of a configured server.
    Logout {
        /// The server's name in --config.
        name: String,
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
}

/// Options of the client commands.
#[derive(Args, Debug, Clone)]
struct Common {
    /// Print JSON: the tools array, the whole tool result, or statuses.
    #[arg(long)]
    json: bool,
    /// How long each request may take, in seconds (default 60).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    timeout: Option<Duration>,
    /// Pass the servers' stderr through to ours (default: dropped).
    #[arg(long, short)]
    verbose: bool,
}

/// Sources below --config, in precedence order (see `mcpwire::client::catalog::sources`).
#[derive(Args, Debug, Clone, Default, PartialEq)]
pub struct MoreSources {
    /// A project file: its servers fill the gaps of --config.
    #[arg(long, value_name = "FILE")]
    pub project: Option<PathBuf>,
    /// A file of another host (Claude, VS Code, codex) read as it is (repeatable; the first
    /// ranks highest).
    #[arg(long = "import", value_name = "FILE")]
    pub imports: Vec<PathBuf>,
    /// What a kind of source does when it wins a name another source defines too:
    /// `KIND=override` (the default) or `KIND=disable` (run neither); KIND is config, project
    /// or imported (repeatable).
    #[arg(long, value_name = "KIND=ACTION", value_parser = parse_conflict)]
    pub on_conflict: Vec<(mcpwire::client::catalog::SourceKind, mcpwire::client::catalog::ConflictAction)>,
}

fn parse_conflict(
    text: &str,
) -> Result<(mcpwire::client::catalog::SourceKind, mcpwire::client::catalog::ConflictAction), String> {
    use mcpwire::client::catalog::SourceKind;
    let (kind, action) = text.split_once('=').ok_or("expected KIND=ACTION, e.g. project=disable")?;
    let kind = match kind {
        "config" => SourceKind::Config,
        "project" => SourceKind::Project,
        "imported" => SourceKind::Imported,
        other => return Err(format!("unknown source kind {other:?} (expected config, project or imported)")),
    };
    Ok((kind, action.parse()?))
}

/// Where the server(s) of a client command come from: exactly one of these.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
struct Source {
    /// Streamable HTTP endpoint (falling back to legacy SSE).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The servers of FILE (.toml: codex `[mcp_servers]`; .json: Claude mcpServers or VS Code servers).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A stdio server: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

/// How upstream tools and prompts are named downstream (`--prefix`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    /// Always `mcp__SERVER__NAME` (resource URIs as `SERVER+URI`).
    Always,
    /// The upstream name, unless two servers share it.
    OnCollision,
    /// The upstream name; two servers sharing one is an error at start.
    Never,
}

impl From<Prefix> for PrefixMode {
    fn from(prefix: Prefix) -> PrefixMode {
        match prefix {
            Prefix::Always => PrefixMode::Always,
            Prefix::OnCollision => PrefixMode::OnCollision,
            Prefix::Never => PrefixMode::Never,
        }
    }
}

/// `mcp-bridge serve`'s options.
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Where to serve: `stdio`, or an http(s) URL whose host, port and path are bound
    /// (loopback by default; another address needs --auth-token-env or --auth-issuer).
    #[arg(long, value_name = "stdio|URL", default_value = serve::DEFAULT_LISTEN)]
    pub listen: String,
    /// Upstreams: every server of FILE (.toml codex, .json Claude / VS Code).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url", "command"])]
    pub config: Option<PathBuf>,
    /// Upstream: one Streamable HTTP (or legacy SSE) server, e.g. to serve it over stdio.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// How tool and prompt names are prefixed with their server's (default: always; never for
    /// one upstream given inline, which is served as it is).
    #[arg(long, value_enum)]
    pub prefix: Option<Prefix>,
    /// The variable holding the bearer token every downstream request must carry (at least 32
    /// bytes on a non-loopback listen).
    #[arg(long, value_name = "VAR", conflicts_with = "auth_issuer")]
    pub auth_token_env: Option<String>,
    /// Wrong bearer tokens in a row from one client address before that address is paused:
    /// every request from it then gets 429 with Retry-After for --auth-failure-pause seconds,
    /// its token unchecked (0: never paused).
    #[arg(long, value_name = "N", default_value_t = 10, requires = "auth_token_env")]
    pub auth_failures: u32,
    /// How long an address is paused after --auth-failures wrong tokens, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30, requires = "auth_token_env")]
    pub auth_failure_pause: u64,
    /// Protect the HTTP listener with OAuth 2.1: access tokens issued by this authorization
    /// server (its issuer URL), checked with --auth-jwks or --auth-introspect, or else with
    /// the keys of the jwks_uri its metadata names (RFC 8414 / OpenID Connect discovery).
    #[arg(long, value_name = "URL")]
    pub auth_issuer: Option<String>,
    /// The resource URI tokens must name as audience (default: the URL served, e.g.
    /// http://127.0.0.1:8931/mcp; set it to the public URL behind a proxy).
    #[arg(long, value_name = "URI", requires = "auth_issuer")]
    pub auth_audience: Option<String>,
    /// Verify JWT access tokens with the keys of this JWKS URL (default: discovered from the
    /// issuer's metadata).
    #[arg(long, value_name = "URL", group = "auth_verify", requires = "auth_issuer")]
    pub auth_jwks: Option<String>,
    /// Verify tokens by RFC 7662 introspection at this URL, authenticated with the client id
    /// and secret in the variables of --auth-client-id-env and --auth-client-secret-env.
    #[arg(long, value_name = "URL", group = "auth_verify", requires = "auth_issuer")]
    pub auth_introspect: Option<String>,
    /// How long an active introspection answer is kept (never past the token's exp), in
    /// seconds; 0 asks the authorization server on every request.
    #[arg(long, value_name = "SECS", default_value_t = 60, requires = "auth_introspect")]
    pub auth_introspect_cache_secs: u64,
    /// The variable holding the introspection client id.
    #[arg(long, value_name = "VAR", default_value = "MCP_BRIDGE_INTROSPECT_CLIENT_ID")]
    pub auth_client_id_env: String,
    /// The variable holding the introspection client secret.
    #[arg(long, value_name = "VAR", default_value = "MCP_BRIDGE_INTROSPECT_CLIENT_SECRET")]
    pub auth_client_secret_env: String,
    /// A scope every downstream request needs (repeatable).
    #[arg(long, value_name = "SCOPE", requires = "auth_issuer")]
    pub auth_scope: Vec<String>,
    /// A scope calls of one tool need, as TOOL=SCOPE with the tool's downstream name (repeatable).
    #[arg(long, value_name = "TOOL=SCOPE", requires = "auth_issuer")]
    pub auth_tool_scope: Vec<String>,
    /// TLS certificate chain (PEM) for an https --listen.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) for an https --listen.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Also accept requests whose Origin is this (repeatable; loopback origins always are).
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Also pass this variable of ours to every upstream child (repeatable). Children get only
    /// their config's env and env_vars, the system basics (PATH, HOME, USER, LANG, LC_*, TERM,
    /// TMPDIR, SHELL, TZ, LOGNAME) and these; never the bridge's own credentials.
    #[arg(long, value_name = "VAR")]
    pub pass_env: Vec<String>,
    /// Give each downstream session its own connection to this (stdio) server (repeatable).
    #[arg(long, value_name = "SERVER")]
    pub per_session: Vec<String>,
    /// How many downstream HTTP sessions may be open at once; past it, a new session gets 503
    /// with Retry-After and a JSON-RPC error naming the limit (open sessions are never evicted;
    /// idle ones end after 30 minutes, closed ones at once).
    #[arg(long, value_name = "N", default_value_t = mcpwire::transport::sse_http::server::DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
    /// How many downstream HTTP sessions one client address may hold open at once (default: no
    /// cap but --max-sessions; behind a reverse proxy every client has the proxy's address);
    /// past it, 503 with Retry-After and an error naming the limit.
    #[arg(long, value_name = "N")]
    pub max_sessions_per_address: Option<usize>,
    /// How many downstream HTTP sessions one OAuth principal (issuer and subject of its token)
    /// may hold open at once (default: no cap but --max-sessions).
    #[arg(long, value_name = "N")]
    pub max_sessions_per_principal: Option<usize>,
    /// How many requests of upstreams (sampling, elicitation, roots) may wait for one downstream
    /// client's answers at once; past it the upstream's request gets a JSON-RPC error naming the
    /// limit and nothing is sent downstream.
    #[arg(long, value_name = "N", default_value_t = mcpwire::gateway::DEFAULT_MAX_PENDING_CLIENT_REQUESTS)]
    pub max_pending_client_requests: usize,
    /// How many downstream sessions may hold their own --per-session upstreams (a child each)
    /// at once; a session past it gets a JSON-RPC error naming the limit for its calls to them.
    #[arg(long, value_name = "N", default_value_t = mcpwire::gateway::DEFAULT_MAX_PER_SESSION_SETS)]
    pub max_per_session_sets: usize,
    /// How many times an upstream is tried again, one after another, when it fails to start or
    /// its connection ends (waiting 100 ms before the first try, doubling up to 5 s between
    /// tries); past it the upstream is failed until a reload or a restart of the bridge
    /// (default: no limit). A `required` upstream that fails at start is not retried: the
    /// bridge refuses to start.
    #[arg(long, value_name = "N")]
    pub restart_attempts: Option<u32>,
    /// Write each downstream session as a recording (conformance format) in DIR.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Write one JSON line per tool call (time, caller, session, server, tool, outcome,
    /// latency, JSON-RPC id; never a token) to FILE, rotated by size; `-` for stderr.
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// Past this size the audit log becomes FILE.1 (FILE.1 becomes FILE.2 …).
    #[arg(long, value_name = "BYTES", default_value_t = 10 * 1024 * 1024, requires = "audit_log")]
    pub audit_max_bytes: u64,
    /// Old audit log files kept (FILE.1 … FILE.N).
    #[arg(long, value_name = "N", default_value_t = 5, requires = "audit_log")]
    pub audit_keep: u32,
    /// Also write the arguments of the tools matching GLOB (SERVER/TOOL, as in the policy);
    /// repeatable. Results are never written.
    #[arg(long, value_name = "GLOB", requires = "audit_log")]
    pub audit_arguments: Vec<String>,
    /// How long each upstream request may take, in seconds (default: the server's tool_timeout).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
    /// How long a request an upstream makes of the client (elicitation, sampling, roots),
    /// relayed to the downstream client whose call caused it, waits for that client's answer, in
    /// seconds (default 120); past it the upstream gets an error and the downstream request is
    /// cancelled.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub client_request_timeout: Option<Duration>,
    /// Share handshake-era sessions and resumable streams with the other replicas behind a
    /// load balancer through the Redis at this URL (redis://host:port; env
    /// MCP_BRIDGE_SESSION_STORE otherwise). Needs a build with the `redis` feature.
    #[arg(long, value_name = "redis://HOST:PORT")]
    pub session_store: Option<String>,
    /// Export OpenTelemetry traces of every call (the bridge's server and client spans) and the
    /// MCP duration metrics to the OTLP/HTTP collector at this base URL (e.g.
    /// http://127.0.0.1:4318); the standard OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME,
    /// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_METRIC_EXPORT_INTERVAL and
    /// OTEL_{TRACES,METRICS}_EXPORTER=none apply too. Needs a build with the `otel` feature.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Upstream: a stdio server, the command and its arguments after `--` (e.g. to serve it over HTTP).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE: {text}")),
    }
}

fn parse_object(text: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err("must be a JSON object".to_owned()),
        Err(e) => Err(format!("invalid JSON: {e}")),
    }
}

fn parse_store_mode(text: &str) -> Result<CredentialsStoreMode, String> {
    text.parse()
}

/// The config file a command reads, for its `mcp_oauth_credentials_store`.
fn config_of(command: &Command) -> Option<&std::path::Path> {
    match command {
        Command::Serve(args) => args.config.as_deref(),
        Command::Tools { source, .. } | Command::Call { source, .. } => source.config.as_deref(),
        Command::Reach(reach) => reach.config(),
        Command::Check { config, .. } | Command::Login { config, .. } | Command::Logout { config, .. } => {
            Some(config.as_path())
        }
        Command::List { .. } | Command::Get { .. } | Command::Add { .. } | Command::Remove { .. } => None,
    }
}

/// The flag's mode, else the config file's, else `auto`. A file that cannot be read says
/// nothing here: the command reports it.
fn store_mode(flag: Option<CredentialsStoreMode>, command: &Command) -> CredentialsStoreMode {
    flag.or_else(|| {
        let config = mcpwire::client::config::McpConfig::load(config_of(command)?).ok()?;
        config.oauth_credentials_store?.parse().ok()
    })
    .unwrap_or_default()
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text.parse().map_err(|_| format!("not a number of seconds: {text}"))?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("must be positive: {text}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Logs to stderr, filtered by `RUST_LOG` (`target=level,...`), `default` otherwise.
fn init_logs(default: &str) {
    use tracing_subscriber::prelude::*;
    tracing_subscriber::registry().with(log_layer(default)).init();
}

/// The stderr log layer, filtered by `RUST_LOG`, `default` otherwise (its own filter, so that
/// the traces' layer sees spans the logs leave out).
fn log_layer<S>(default: &str) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::Layer;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|spec| spec.parse::<Targets>().ok())
        .unwrap_or_else(|| default.parse().expect("a valid default filter"));
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .with_filter(filter)
}

/// `serve`'s logs, and its traces when an OTLP endpoint is configured (otel.rs): the exporter
/// to keep until the bridge exits, or why it could not start.
#[cfg(feature = "otel")]
fn init_serve_logs(otlp_endpoint: Option<&str>) -> Result<Option<otel::Exporting>, String> {
    use tracing_subscriber::prelude::*;
    let metrics = otel::metrics_wanted(otlp_endpoint).map(|endpoint| otel::meter_provider(&endpoint)).transpose()?;
    let Some(endpoint) = otel::wanted(otlp_endpoint) else {
        init_logs("info");
        return Ok(metrics.is_some().then(|| otel::Exporting::new(None, metrics)));
    };
    let (traces, provider) = otel::layer(&endpoint)?;
    tracing_subscriber::registry().with(log_layer("info")).with(traces).init();
    Ok(Some(otel::Exporting::new(Some(provider), metrics)))
}

/// `serve`'s logs; an OTLP endpoint needs the `otel` feature.
#[cfg(not(feature = "otel"))]
fn init_serve_logs(otlp_endpoint: Option<&str>) -> Result<Option<()>, String> {
    match otel::wanted(otlp_endpoint) {
        Some(otel::Endpoint::Flag(_)) => {
            Err("--otlp-endpoint needs an mcp-bridge built with the `otel` feature".into())
        }
        Some(otel::Endpoint::Environment) => {
            init_logs("info");
            tracing::warn!("OTEL_EXPORTER_OTLP_ENDPOINT is set, but this mcp-bridge was built without the `otel` feature: no traces");
            Ok(None)
        }
        None => {
            init_logs("info");
            Ok(None)
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print to stdout and succeed; usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    login::set_store_mode(store_mode(cli.credentials_store, &cli.command));
    match cli.command {
        Command::Serve(args) => {
            // Kept until serve returns: dropping it flushes the spans still queued.
            let _exporting = match init_serve_logs(args.otlp_endpoint.as_deref()) {
                Ok(exporting) => exporting,
                Err(why) => {
                    eprintln!("mcp-bridge: {why}");
                    return ExitCode::from(2);
                }
            };
            serve::main(*args)
        }
        Command::List { config, sources, json } => {
            config_cli::main(config_cli::ConfigCommand::List { config, sources, json })
        }
        Command::Get { name, config, sources, json } => {
            config_cli::main(config_cli::ConfigCommand::Get { name, config, sources, json })
        }
        Command::Add { name, config, env, url, bearer_token_env_var, command } => {
            use mcpwire::client::config::edit::NewServer;
            let mut server = match (url, command.split_first()) {
                (Some(url), _) => NewServer::http(name, url),
                (None, Some((program, args))) => NewServer::stdio(name, program.clone(), args.to_vec()),
                (None, None) => {
                    let mut command = <Cli as clap::CommandFactory>::command();
                    let message = "add needs a command after -- or --url URL";
                    command.error(clap::error::ErrorKind::MissingRequiredArgument, message).print().ok();
                    return ExitCode::from(2);
                }
            };
            server.env = env.into_iter().collect();
            server.bearer_token_env_var = bearer_token_env_var;
            config_cli::main(config_cli::ConfigCommand::Add { server, config })
        }
        Command::Remove { name, config } => config_cli::main(config_cli::ConfigCommand::Remove { name, config }),
        Command::Login { name, config, open, timeout } => {
            init_logs("warn");
            let timeout = timeout.unwrap_or(Duration::from_secs(300));
            login::main(login::Invocation::Login { server: name, config, open, timeout })
        }
        Command::Logout { name, config } => {
            init_logs("warn");
            login::main(login::Invocation::Logout { server: name, config })
        }
        command => {
            init_logs("warn");
            match shell::Invocation::from_command(command) {
                Ok(invocation) => shell::main(invocation),
                Err(message) => {
                    let mut command = <Cli as clap::CommandFactory>::command();
                    command.error(clap::error::ErrorKind::ArgumentConflict, message).print().ok();
                    ExitCode::from(2)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command, Prefix};

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mcp-bridge").chain(line.split_whitespace()))
    }

    #[test]
    fn options_before_the_separator_are_ours_and_after_it_the_servers() {
        let Ok(Cli { command: Command::Call { tool, args, common, source, .. }, .. }) =
            parse("call echo --verbose --args {\"message\":\"hi\"} --json -- node s.js --json")
        else {
            panic!("call did not parse")
        };
        assert_eq!(tool, "echo");
        assert_eq!(args.unwrap()["message"], "hi");
        assert!(common.json && common.verbose);
        assert_eq!(source.command, ["node", "s.js", "--json"]);
        let Ok(Cli { command: Command::Tools { common, .. }, .. }) = parse("tools --timeout 1.5 -- srv") else {
            panic!()
        };
        assert_eq!(common.timeout, Some(std::time::Duration::from_millis(1500)));
    }

    #[test]
    fn usage_errors_are_refused() {
        for line in [
            "tools",
            "tools --url http://h/mcp -- srv",
            "call -- srv",
            "call echo --args [1] -- srv",
            "tools --timeout -3 -- srv",
            "tools --frob -- srv",
            "frobnicate",
            "serve --config a.toml -- srv",
            "serve --prefix sometimes",
            "login",
            "login prot",
            "logout --config a.toml",
            "login prot --config a.toml --timeout 0",
            "login prot --config a.toml --credentials-store vault",
        ] {
            let e = parse(line).expect_err(line);
            assert!(e.use_stderr(), "{line}: {e}");
        }
        let Ok(cli) = parse("call t --config a.toml") else { panic!() };
        assert_eq!(
            super::shell::Invocation::from_command(cli.command),
            Err("call --config needs --server NAME".into())
        );
    }

    #[test]
    fn login_and_logout_take_a_server_and_a_config() {
        let Ok(Cli { command: Command::Login { name, config, open, timeout }, .. }) =
            parse("login prot --config a.toml --open --timeout 30")
        else {
            panic!("login did not parse")
        };
        assert_eq!((name.as_str(), config.to_str(), open), ("prot", Some("a.toml"), true));
        assert_eq!(timeout, Some(std::time::Duration::from_secs(30)));
        let Ok(Cli { command: Command::Logout { name, .. }, .. }) = parse("logout prot --config a.json") else {
            panic!()
        };
        assert_eq!(name, "prot");
    }

    #[test]
    fn the_credentials_store_comes_from_the_flag_else_the_config_else_auto() {
        use mcpwire::client::oauth::CredentialsStoreMode;
        let dir = std::env::temp_dir().join(format!("mcp-bridge-store-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("mcp.toml");
        std::fs::write(&config, "mcp_oauth_credentials_store = \"file\"\n").unwrap();
        let line = format!("logout prot --config {}", config.display());
        let cli = parse(&line).unwrap();
        assert_eq!(super::store_mode(cli.credentials_store, &cli.command), CredentialsStoreMode::File);
        let cli = parse(&format!("tools --credentials-store keyring --config {}", config.display())).unwrap();
        assert_eq!(super::store_mode(cli.credentials_store, &cli.command), CredentialsStoreMode::Keyring);
        let cli = parse(&format!("{line} --credentials-store auto")).unwrap();
        assert_eq!(cli.credentials_store, Some(CredentialsStoreMode::Auto), "after the subcommand too");
        std::fs::write(&config, "[mcp_servers.a]\ncommand = \"x\"\n").unwrap();
        let cli = parse(&line).unwrap();
        assert_eq!(super::store_mode(cli.credentials_store, &cli.command), CredentialsStoreMode::Auto);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn serve_defaults_to_the_embedded_servers_on_loopback() {
        let Ok(Cli { command: Command::Serve(args), .. }) = parse("serve") else { panic!() };
        assert_eq!(args.listen, "http://127.0.0.1:8000/mcp");
        assert!(args.config.is_none() && args.url.is_none() && args.command.is_empty());
        assert_eq!(args.prefix, None);
        let Ok(Cli { command: Command::Serve(args), .. }) =
            parse("serve --listen stdio --prefix on-collision --url http://h/mcp")
        else {
            panic!()
        };
        assert_eq!((args.listen.as_str(), args.prefix), ("stdio", Some(Prefix::OnCollision)));
    }
}
