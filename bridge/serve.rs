//! `mcp-bridge serve`: starts the upstreams (a config file, one inline server, or the embedded
//! default) as a connection set, puts the gateway in front of them, and serves it downstream
//! over stdio or Streamable HTTP (with legacy SSE on the same listener, TLS when asked) until
//! SIGINT/SIGTERM (or, over stdio, the end of stdin). Then every downstream session ends and
//! every upstream child is stopped with its process group.
//!
//! SIGHUP, or a change of the file (looked at every second), reloads `--config`
//! ([`ConnectionSet::reload`]: an upstream that did not change
//! keeps its connection; downstream clients get `list_changed`); each session's `--per-session`
//! upstreams are moved to the new configuration the same way.
//!
//! Security defaults: loopback binds; a non-loopback `--listen` refuses to start without
//! `--auth-token-env` or `--auth-issuer`; Origin and Host checked as the HTTP server does (Host
//! only on a loopback listen: on a network, clients name the host as they reach it);
//! downstream credentials never go upstream (the upstreams' own come from the config, or from
//! the stored login of `mcp-bridge login`); no secret in any log line. Upstream children get an
//! environment built from their config, the system basics and `--pass-env`, never the
//! variables holding the bridge's own credentials ([`child_env`]), and cannot read the
//! bridge's own environment or memory ([`forbid_reading_us`]; docs/security.md, "Secrets stay home").
//!
//! OAuth (`--auth-issuer`, with `--auth-jwks`, `--auth-introspect`, or neither: the `jwks_uri`
//! then comes from the issuer's metadata): the listener becomes a
//! protected resource (see [`mcpwire::auth`]): tokens of that issuer for `--auth-audience`
//! (default: the URL served), `--auth-scope` for every request, `--auth-tool-scope` per tool,
//! the metadata at the endpoint's well-known path. The downstream token is verified and
//! dropped there; upstream requests carry only the upstream's own credentials.
//!
//! The config file's `[gateway]` table ([`Settings`]): named bearer tokens (read from their
//! variables at start, withheld from children), the policy and the rate limits (reloaded with
//! the file; a table that does not read stops the start, and on reload keeps what is in force).
//!
//! Upstreams that fail at start, and those whose connection ends, are tried again with the same
//! backoff until they start (`--restart-attempts N` bounds the tries); their state is at
//! `/readyz/details` and in `/metrics`. A `required` one (an inline upstream is) that fails at
//! start stops `serve` instead.
//!
//! The console (`/ui`, ui/) is on the HTTP listener, with each upstream's stderr tail.
//!
//! Not here: the names and the routing (gateway.rs), the embedded servers (embedded.rs).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use mcpwire::auth::{IntrospectionVerifier, JwtVerifier, ProtectedResource, TokenVerifier};
use mcpwire::client::catalog::CatalogCache;
use mcpwire::client::config::{ChildEnv, McpConfig, ServerConfig};
use mcpwire::client::connection_set::{ChildStderr, ConnectionSet, ServerState, SetError, SetOptions};
use mcpwire::client::ClientOptions;
use mcpwire::recording::{RecordingDir, Side, SwitchedRecording};
use mcpwire::server::Server;
use mcpwire::transport::boxed::BoxTransport;
use mcpwire::transport::sse_http::failed_tokens::FailedTokenPause;
use mcpwire::transport::sse_http::server::{HostCheck, OriginCheck, ResponseMode};
use mcpwire::transport::sse_http::{
    HttpServer, HttpServerConfig, HttpService, MountedServer, RequestLimit, RequestRefused, RouteResponse,
};
use mcpwire::transport::stdio::{Stderr, StdioTransport};
use mcpwire::transport::Limits;

use super::ServeArgs;
use mcpwire::gateway::audit::{AuditLog, Sink};
use mcpwire::gateway::console::StderrTails;
use mcpwire::gateway::endpoint::Endpoint;
use mcpwire::gateway::policy::Glob;
use mcpwire::gateway::settings::Settings;
use mcpwire::gateway::{Callers, Gateway, PerSession, PrefixMode};
use mcpwire::transport::sse_http::NamedTokens;

/// Where `serve` listens when not told.
pub const DEFAULT_LISTEN: &str = "http://127.0.0.1:8000/mcp";

/// Where downstream clients connect.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Listen {
    Stdio,
    Http { addr: SocketAddr, path: String, tls: bool },
}

/// `--listen`: `stdio`, or `http(s)://IP:PORT[/PATH]` (`localhost` for 127.0.0.1; path `/mcp`
/// when absent).
fn parse_listen(text: &str) -> Result<Listen, String> {
    if text == "stdio" {
        return Ok(Listen::Stdio);
    }
    let (tls, rest) = if let Some(rest) = text.strip_prefix("http://") {
        (false, rest)
    } else if let Some(rest) = text.strip_prefix("https://") {
        (true, rest)
    } else {
        return Err(format!("--listen {text}: expected stdio or an http(s):// URL"));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/mcp"),
    };
    let authority = authority.replacen("localhost", "127.0.0.1", 1);
    let addr: SocketAddr = authority
        .parse()
        .map_err(|_| format!("--listen {text}: the host must be an IP address (or localhost) with a port"))?;
    Ok(Listen::Http { addr, path: path.to_owned(), tls })
}

/// A name for an inline upstream: the command's file name, or the URL's host.
fn inline_name(text: &str) -> String {
    let base = text.rsplit('/').find(|s| !s.is_empty()).unwrap_or(text);
    let name: String =
        base.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if name.is_empty() {
        "upstream".to_owned()
    } else {
        name
    }
}

/// The upstreams to serve and whether they were given inline (one server, served as it is).
fn upstreams(args: &ServeArgs) -> Result<(McpConfig, bool), String> {
    if let Some(file) = &args.config {
        return McpConfig::load(file).map(|c| (c, false)).map_err(|e| e.to_string());
    }
    let server = if let Some(url) = &args.url {
        let host = url.split("://").nth(1).unwrap_or(url).split(['/', ':']).next().unwrap_or("remote");
        let mut server = ServerConfig::http(inline_name(host), url.clone());
        server.required = true;
        server
    } else if let Some((program, rest)) = args.command.split_first() {
        let mut server = ServerConfig::stdio(inline_name(program), program.clone(), rest.iter().cloned());
        server.required = true;
        server
    } else {
        return Ok((super::embedded::config(), false));
    };
    let mut config = McpConfig::default();
    config.servers.insert(server.name.clone(), server);
    Ok((config, true))
}

/// Runs `serve` to its exit code.
pub fn main(args: ServeArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-bridge: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(run(args));
    drop(runtime);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp-bridge: {message}");
            ExitCode::from(1)
        }
    }
}

/// The shortest bearer token a listener on a non-loopback address accepts: 32 bytes, 128 bits of
/// hex or more of anything else, beyond what guessing over the network can reach. A loopback
/// listener takes any non-empty token (only this machine's processes reach it).
const MIN_PUBLIC_TOKEN_BYTES: usize = 32;

async fn run(args: ServeArgs) -> Result<(), String> {
    let listen = parse_listen(&args.listen)?;
    let settings = gateway_settings(&args)?;
    if let Listen::Http { addr, .. } = &listen {
        if !addr.ip().is_loopback()
            && args.auth_token_env.is_none()
            && args.auth_issuer.is_none()
            && settings.tokens.is_empty()
        {
            return Err(format!(
                "refusing to listen on {addr}, which is not a loopback address, without --auth-token-env VAR \
                 (a bearer token every downstream request must carry), [gateway.tokens] in the config (named \
                 tokens) or --auth-issuer URL (OAuth)"
            ));
        }
    }
    let named_tokens = named_tokens(&settings, &listen, &args)?;
    if matches!(listen, Listen::Http { .. }) {
        // The --auth-* options are checked before any upstream starts (building the verifier
        // does no IO); the real one is built once the listener's address is known.
        protected_resource(&args, "http://127.0.0.1/mcp")?;
    }
    let token = match (&args.auth_token_env, &listen) {
        (Some(var), Listen::Http { addr, .. }) => match std::env::var(var) {
            Ok(token) if !addr.ip().is_loopback() && token.len() < MIN_PUBLIC_TOKEN_BYTES => {
                return Err(format!(
                    "--auth-token-env {var}: the token is {} bytes; a listener on {addr}, which is not a loopback \
                     address, needs one of at least {MIN_PUBLIC_TOKEN_BYTES} (e.g. `openssl rand -hex 32`)",
                    token.len()
                ))
            }
            Ok(token) if !token.is_empty() => Some(token),
            _ => return Err(format!("--auth-token-env {var}: the variable is not set, or empty")),
        },
        _ => None,
    };
    let recordings = match &args.record {
        Some(dir) => Some(Arc::new(RecordingDir::new(dir).map_err(|e| format!("--record {}: {e}", dir.display()))?)),
        None => None,
    };
    let recordings = Arc::new(super::ui::recordings::Sessions::new(recordings));
    let child_env = child_env(&args, &settings)?;
    forbid_reading_us();
    let (config, inline) = upstreams(&args)?;
    let prefix =
        args.prefix.map(PrefixMode::from).unwrap_or(if inline { PrefixMode::Never } else { PrefixMode::Always });
    let client = ClientOptions::default().with_client_info("mcp-bridge", env!("CARGO_PKG_VERSION"));
    let callers = Arc::new(
        match args.client_request_timeout {
            Some(deadline) => Callers::with_deadline(deadline),
            None => Callers::default(),
        }
        .with_max_pending(args.max_pending_client_requests),
    );
    // Upstreams that fail at start are retried as those whose connection ends are: with the
    // same backoff, until they start (unless --restart-attempts says otherwise).
    let attempts = args.restart_attempts.unwrap_or(u32::MAX);
    let defaults = SetOptions::default();
    // Each line also kept in its upstream's tail, for the console.
    let tails = Arc::new(StderrTails::default());
    let tail = tails.clone();
    let mut options = SetOptions::default()
        .with_client_options(client)
        .with_stderr(ChildStderr::Lines(Arc::new(move |server: &str, line: &str| {
            write_upstream_line(Some(server), line);
            tail.push(server, line);
        })))
        .with_child_env(child_env)
        .with_backoff(defaults.initial_backoff, defaults.max_backoff, attempts)
        .with_startup_retries(attempts);
    // Upstreams behind OAuth use the login of `mcp-bridge login` (never a flow of their own).
    if let Ok(logins) = super::login::logins() {
        options = options.with_logins(logins);
    }
    let options = callers.handlers(options);
    let per_session =
        PerSession::new(args.per_session.clone(), &config, options.clone())?.with_max_sets(args.max_per_session_sets);
    let (mut options, events) = options.with_event_channel();
    if let Some(cache) = args.config.as_deref().and_then(CatalogCache::for_config) {
        options = options.with_catalog_cache(cache);
    }
    let set = ConnectionSet::new(config, options);
    let mut interrupt = signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut terminate = signal(tokio::signal::unix::SignalKind::terminate())?;
    // Whatever ends the serving (an error at any step, a signal), the upstreams are shut down.
    let outcome: Result<(), String> = async {
        let started = tokio::select! {
            started = set.start() => started,
            _ = stop_signal(&mut interrupt, &mut terminate) => Err(SetError::StartupCancelled { summary: set.summary() }),
        };
        started.map_err(|e| e.to_string())?;
        let gateway = Arc::new(Gateway::new(set.clone(), callers, per_session, prefix, args.timeout)?);
        crate::otel::attach_durations(gateway.metrics());
        if let Some(file) = &args.audit_log {
            let sink = if file.as_os_str() == "-" {
                Sink::Stderr
            } else {
                Sink::File { path: file.clone(), max_bytes: args.audit_max_bytes, keep: args.audit_keep }
            };
            let metrics = gateway.metrics().clone();
            let (log, writer) = AuditLog::new(sink, move || metrics.audit_dropped.inc([]))
                .map_err(|e| format!("--audit-log {}: {e}", file.display()))?;
            tokio::spawn(writer);
            gateway.set_audit(log.with_arguments(args.audit_arguments.iter().map(Glob::new).collect()));
        }
        gateway.set_policy(settings.policy.clone());
        gateway.set_rate_limits(settings.rate_limits.clone());
        gateway.set_request_limits(settings.request_limits.clone());
        let builder = || Server::builder().name("mcp-bridge").version(env!("CARGO_PKG_VERSION"));
        let server = gateway.server(builder())?;
        let mut endpoint_servers = Vec::new();
        if !settings.endpoints.is_empty() && !matches!(listen, Listen::Http { .. }) {
            tracing::warn!("[gateway.endpoints] ignored: --listen stdio has one endpoint");
        }
        if matches!(listen, Listen::Http { .. }) {
            for endpoint in &settings.endpoints {
                endpoint_servers.push((endpoint.clone(), gateway.endpoint_server(endpoint.clone(), builder())?));
            }
        }
        // As they stand now: those that failed are being retried.
        for status in &set.summary().servers {
            tracing::info!(server = %mcpwire::gateway::printable(&status.name), state = %status.state, tools = status.tools, "upstream");
            gateway.metrics().set_upstream_up(&status.name, status.state == ServerState::Ready);
        }
        tokio::spawn(gateway.clone().follow(events));
        if let Some(file) = &args.config {
            tokio::spawn(reload_on_change(
                gateway.clone(),
                file.clone(),
                settings.tokens.clone(),
                signal(tokio::signal::unix::SignalKind::hangup())?,
            ));
        }
        let listened = listen.clone();
        let outcome = match listen {
            Listen::Stdio => {
                let transport = StdioTransport::own_stdio(Limits::default()).with_typed_params(true);
                let _session = gateway.metrics().session_opened();
                tokio::select! {
                    served = serve_recorded(server.clone(), transport, recordings.clone(), "stdio") => served,
                    _ = stop_signal(&mut interrupt, &mut terminate) => Ok(()),
                }
            }
            Listen::Http { addr, path, tls } => {
                let listener =
                    tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
                let served_url = format!(
                    "{}://{}{path}",
                    if tls { "https" } else { "http" },
                    listener.local_addr().map_err(|e| e.to_string())?
                );
                // A call answered within the first event hold (most, through a gateway) goes
                // out as one JSON body: no stream to resume, so nothing stored for it.
                let mut http = HttpServerConfig::default()
                    .response_mode(ResponseMode::Auto)
                    .path(path.clone())
                    .bearer_token(token)
                    .named_tokens(named_tokens)
                    .max_sessions(args.max_sessions)
                    .max_sessions_per_address(args.max_sessions_per_address)
                    .max_sessions_per_principal(args.max_sessions_per_principal);
                http.failed_token_pause = (args.auth_failures > 0).then(|| FailedTokenPause {
                    failures: args.auth_failures,
                    pause: std::time::Duration::from_secs(args.auth_failure_pause),
                });
                if !args.allow_origin.is_empty() {
                    http = http.origins(OriginCheck::Loopback(args.allow_origin.clone()));
                }
                if args.config.is_some() {
                    // With a file (even one without them now): a reload may bring them.
                    http = http.request_limit(request_limit(gateway.clone()));
                }
                if !addr.ip().is_loopback() {
                    // On a network the clients name the host as they reach it (an address, a DNS
                    // name, a proxy's); the loopback-only Host check (against DNS rebinding of a
                    // local server) refused them all with 403. Such a listen always has a token (a
                    // static one or OAuth).
                    http = http.hosts(HostCheck::Any);
                }
                // Each virtual server: the listener's settings, its own path, tokens and scopes.
                let mut endpoint_configs = Vec::new();
                for (endpoint, _) in &endpoint_servers {
                    let url = format!("{}{}", served_url.strip_suffix(path.as_str()).unwrap_or(&served_url), endpoint.path);
                    endpoint_configs.push(endpoint_http(http.clone(), endpoint, &settings, &listened, &args, &url)?);
                }
                if let Some(resource) = protected_resource(&args, &served_url)? {
                    tracing::info!(issuer = ?args.auth_issuer, audience = %resource.resource(), "OAuth protection");
                    http = http.protected_resource(resource);
                }
                http = health_routes(http, &gateway);
                http = super::ui::routes(http, &gateway, tails.clone(), recordings.clone(), &path);
                if tls {
                    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else {
                        return Err("an https --listen needs --tls-cert and --tls-key".to_owned());
                    };
                    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
                    let tls = mcpwire::transport::sse_http::tls::server_config_from_pem(&read(cert)?, &read(key)?)
                        .map_err(|e| format!("TLS: {e}"))?;
                    http = http.tls(tls);
                }
                let store_url = args.session_store.clone().or_else(|| std::env::var(SESSION_STORE_ENV).ok());
                if let Some(url) = store_url.filter(|u| !u.is_empty()) {
                    let mut endpoints: Vec<(&str, &mut HttpServerConfig)> = endpoint_servers
                        .iter()
                        .map(|(endpoint, _)| endpoint.name.as_str())
                        .zip(endpoint_configs.iter_mut())
                        .collect();
                    http = with_session_store(http, &mut endpoints, &url, &gateway).await?;
                }
                let sessions = |serving: Server| {
                    let (metrics, recordings) = (gateway.metrics().clone(), recordings.clone());
                    move |transport: mcpwire::transport::sse_http::ServerTransport| {
                        let session = metrics.session_opened();
                        let carrier = if transport.is_legacy() { "sse" } else { "streamable-http" };
                        let served = serve_recorded(serving.clone(), transport, recordings.clone(), carrier);
                        async move {
                            if let Err(e) = served.await {
                                tracing::debug!("a downstream session ended: {e}");
                            }
                            drop(session);
                        }
                    }
                };
                if endpoint_servers.is_empty() {
                    let bound = HttpServer::serve_on(listener, http, sessions(server.clone())).await;
                    match bound {
                        Ok(http) => {
                            gateway.observe_http(http.service());
                            print_banner(&http.url());
                            stop_signal(&mut interrupt, &mut terminate).await;
                            http.shutdown().await;
                            Ok(())
                        }
                        Err(e) => Err(format!("cannot listen on {addr}: {e}")),
                    }
                } else {
                    let mut mounted = Vec::new();
                    for ((_, served), config) in endpoint_servers.iter().zip(endpoint_configs) {
                        let service = HttpService::new(config, sessions(served.clone())).await;
                        mounted.push(service.map_err(|e| format!("cannot serve an endpoint: {e}"))?);
                    }
                    let fallback = HttpService::new(http, sessions(server.clone()))
                        .await
                        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
                    // The plain endpoint is not served beside virtual servers: a token one of them
                    // refuses would reach everything there.
                    match MountedServer::serve_on(listener, fallback, mounted, false).await {
                        Ok(http) => {
                            gateway.observe_http(http.fallback());
                            for service in http.mounted() {
                                gateway.observe_http(service);
                            }
                            for (endpoint, _) in &endpoint_servers {
                                print_banner(&http.url(&endpoint.path));
                            }
                            stop_signal(&mut interrupt, &mut terminate).await;
                            http.shutdown().await;
                            Ok(())
                        }
                        Err(e) => Err(format!("cannot listen on {addr}: {e}")),
                    }
                }
            }
        };
        tracing::info!("shutting down");
        gateway.per_session().close_all().await;
        outcome
    }
    .await;
    set.shutdown().await;
    outcome
}

/// The variable `--session-store` falls back to (its URL may hold a password).
const SESSION_STORE_ENV: &str = "MCP_BRIDGE_SESSION_STORE";

/// How upstream children's environments are built: from their config, the system basics
/// ([`mcpwire::client::config::DEFAULT_ENV_VARS`], `LC_*`) and `--pass-env`; never the
/// variables holding the bridge's own credentials (`--auth-token-env`, the introspection
/// client's id and secret, the session store's URL), whatever a config or `--pass-env` asks.
fn child_env(args: &ServeArgs, settings: &Settings) -> Result<ChildEnv, String> {
    let mut rule = ChildEnv::clean();
    let mut credentials: Vec<(&str, &str)> = vec![
        (&args.auth_client_id_env, "--auth-client-id-env"),
        (&args.auth_client_secret_env, "--auth-client-secret-env"),
        (SESSION_STORE_ENV, "the session store's URL"),
    ];
    if let Some(var) = &args.auth_token_env {
        credentials.push((var, "--auth-token-env"));
    }
    for (_, var) in &settings.tokens {
        credentials.push((var, "a token of [gateway.tokens]"));
    }
    for (var, what) in &credentials {
        if args.pass_env.iter().any(|p| p == var) {
            return Err(format!(
                "--pass-env {var}: the variable holds a credential of mcp-bridge ({what}), never passed to upstreams"
            ));
        }
        rule = rule.withhold(*var);
    }
    for var in &args.pass_env {
        rule = rule.pass(var);
    }
    Ok(rule)
}

/// The `[gateway]` table of `--config` (a TOML file; none for JSON, inline and embedded
/// upstreams).
fn gateway_settings(args: &ServeArgs) -> Result<Settings, String> {
    args.config.as_deref().map_or(Ok(Settings::default()), reload_settings)
}

/// The named tokens of `[gateway.tokens]`, each read from its variable (which must be set and
/// not empty; on a non-loopback listener at least [`MIN_PUBLIC_TOKEN_BYTES`] long).
fn named_tokens(settings: &Settings, listen: &Listen, args: &ServeArgs) -> Result<NamedTokens, String> {
    named_tokens_of(settings, listen, args, None)
}

/// As [`named_tokens`], only those named in `only` when given.
fn named_tokens_of(
    settings: &Settings,
    listen: &Listen,
    args: &ServeArgs,
    only: Option<&[String]>,
) -> Result<NamedTokens, String> {
    let mut tokens = NamedTokens::new();
    if settings.tokens.is_empty() {
        return Ok(tokens);
    }
    let Listen::Http { addr, .. } = listen else {
        tracing::warn!("[gateway.tokens] ignored: --listen stdio has no bearer tokens");
        return Ok(tokens);
    };
    if args.auth_issuer.is_some() {
        return Err(
            "[gateway.tokens] and --auth-issuer cannot be used together (yet): choose named tokens or OAuth".into()
        );
    }
    for (name, var) in &settings.tokens {
        if only.is_some_and(|only| !only.contains(name)) {
            continue;
        }
        let token = match std::env::var(var) {
            Ok(token) if !token.is_empty() => token,
            _ => return Err(format!("gateway.tokens.{name}: the variable {var} is not set, or empty")),
        };
        if !addr.ip().is_loopback() && token.len() < MIN_PUBLIC_TOKEN_BYTES {
            return Err(format!(
                "gateway.tokens.{name}: the token in {var} is {} bytes; a listener on {addr}, which is not a \
                 loopback address, needs one of at least {MIN_PUBLIC_TOKEN_BYTES} (e.g. `openssl rand -hex 32`)",
                token.len()
            ));
        }
        tokens = tokens.with(name, token).map_err(|e| format!("gateway.tokens.{name} (the variable {var}): {e}"))?;
    }
    Ok(tokens)
}

/// The HTTP configuration of the virtual server `endpoint`, served at `url`: `listener`'s
/// (its limits, Host and Origin checks, token pause), on the endpoint's path (the legacy
/// HTTP+SSE transport under it: `PATH/sse`, `PATH/message`), letting in the named tokens it
/// lists (all of the listener's, and `--auth-token-env`'s, when it lists none), and with OAuth,
/// tokens for its own URL (unless `--auth-audience`) with its scopes.
fn endpoint_http(
    listener: HttpServerConfig,
    endpoint: &Endpoint,
    settings: &Settings,
    listen: &Listen,
    args: &ServeArgs,
    url: &str,
) -> Result<HttpServerConfig, String> {
    let mut http = listener.path(endpoint.path.clone());
    http.legacy_sse_path = format!("{}/sse", endpoint.path);
    http.legacy_message_path = format!("{}/message", endpoint.path);
    if !endpoint.tokens.is_empty() {
        http = http.bearer_token(None).named_tokens(named_tokens_of(settings, listen, args, Some(&endpoint.tokens))?);
    }
    if let Some(mut resource) = protected_resource(args, url)? {
        for scope in &endpoint.scopes {
            resource = resource.require_scope(scope);
        }
        http = http.protected_resource(resource);
    } else if !endpoint.scopes.is_empty() {
        return Err(format!("endpoint {}: scopes need OAuth (--auth-issuer)", endpoint.name));
    }
    Ok(http)
}

/// Makes the bridge's `/proc/PID/environ` and memory unreadable to the processes of its user,
/// its upstreams among them (Linux `prctl(PR_SET_DUMPABLE, 0)`, as ssh-agent does): they would
/// find the token there. Children are not affected (an exec makes a process dumpable again);
/// root still reads everything, and the bridge leaves no core dump.
fn forbid_reading_us() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(PR_SET_DUMPABLE) takes plain integers and touches no memory of ours.
        let done = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
        if done != 0 {
            tracing::warn!("cannot make the process undumpable: {}", std::io::Error::last_os_error());
        }
    }
}

/// The OAuth protection the `--auth-*` options ask for (`None` without `--auth-issuer`).
fn protected_resource(args: &ServeArgs, served_url: &str) -> Result<Option<ProtectedResource>, String> {
    let Some(issuer) = &args.auth_issuer else { return Ok(None) };
    let audience = args.auth_audience.clone().unwrap_or_else(|| served_url.to_owned());
    let verifier: Arc<dyn TokenVerifier> = match (&args.auth_jwks, &args.auth_introspect) {
        (Some(jwks), _) => {
            Arc::new(JwtVerifier::new(issuer, &audience, jwks).map_err(|e| format!("--auth-jwks: {e}"))?)
        }
        (None, Some(endpoint)) => {
            let read = |option: &str, var: &str| match std::env::var(var) {
                Ok(value) if !value.is_empty() => Ok(value),
                _ => Err(format!("--auth-introspect needs {option}: the variable {var} is not set, or empty")),
            };
            let id = read("a client id", &args.auth_client_id_env)?;
            let secret = read("a client secret", &args.auth_client_secret_env)?;
            let verifier = IntrospectionVerifier::new(endpoint, &audience, id, &secret)
                .map_err(|e| format!("--auth-introspect: {e}"))?
                .issuer(issuer)
                .max_cache_ttl(std::time::Duration::from_secs(args.auth_introspect_cache_secs));
            Arc::new(verifier)
        }
        (None, None) => Arc::new(JwtVerifier::discover(issuer, &audience).map_err(|e| format!("--auth-issuer: {e}"))?),
    };
    let mut resource =
        ProtectedResource::new(audience, verifier).authorization_server(issuer).resource_name("mcp-bridge");
    for scope in &args.auth_scope {
        resource = resource.require_scope(scope);
    }
    for rule in &args.auth_tool_scope {
        let Some((tool, scope)) = rule.split_once('=').filter(|(t, s)| !t.is_empty() && !s.is_empty()) else {
            return Err(format!("--auth-tool-scope {rule}: expected TOOL=SCOPE"));
        };
        resource = resource.tool_scope(tool, scope);
    }
    Ok(Some(resource))
}

/// Serves one downstream session, listed in `sessions`, whose recording can be started and
/// stopped there (it starts recording at once with `--record`; a file that cannot be made is
/// logged and the session served unrecorded). The recording is of the messages (its header's
/// `transport` is `stdio`, the message-level form, without `http` members, so it replays as any
/// stdio recording); `carrier` (`stdio`, `streamable-http`, `sse`) names what really carried
/// the session in its `description`. Every session, of any transport, is served over a
/// `BoxTransport`: the server's dispatch is then compiled once into the binary, not once per
/// transport. Only the recording switch is boxed, not the transport under it too: a second box
/// would allocate another future for every message in each direction (two per call), for one
/// more copy of the switch's few lines per transport.
async fn serve_recorded<T: mcpwire::transport::Transport>(
    server: Server,
    transport: T,
    sessions: Arc<super::ui::recordings::Sessions>,
    carrier: &'static str,
) -> Result<(), String> {
    let switched = SwitchedRecording::new(transport, Side::Server);
    let _listed = sessions.open(carrier, switched.switch());
    server.serve(BoxTransport::new(switched)).await.map_err(|e| e.to_string())
}

/// `http` and each virtual server's configuration in `endpoints` (by name) sharing their
/// sessions and streams, and `gateway` its rate limits' buckets, through the Redis at `url`.
#[cfg(feature = "redis")]
async fn with_session_store(
    http: HttpServerConfig,
    endpoints: &mut [(&str, &mut HttpServerConfig)],
    url: &str,
    gateway: &Gateway,
) -> Result<HttpServerConfig, String> {
    use mcpwire::gateway::rate_limit_redis::RedisBuckets;
    use mcpwire::transport::sse_http::redis_store::{RedisOptions, RedisStore};
    let unavailable = |e| format!("--session-store: {e}");
    let store = Arc::new(RedisStore::connect(url, RedisOptions::default()).await.map_err(unavailable)?);
    let buckets = RedisBuckets::new(&store).await.map_err(|e| format!("--session-store: {e}"))?;
    gateway.share_rate_limits(Arc::new(buckets));
    // Each virtual server's sessions under a prefix of their own: a session id of one endpoint
    // is unknown at another, whichever replica is asked (as it is without Redis). All on the
    // store's two connections, however many endpoints.
    for (name, config) in endpoints.iter_mut() {
        let prefix = format!("{}endpoint:{name}:", store.options().key_prefix);
        let store = Arc::new(store.with_prefix(prefix).await.map_err(unavailable)?);
        **config = std::mem::take(*config).session_store(store.clone()).event_store(store);
    }
    // Not the URL: it may hold a password.
    tracing::info!("sessions, streams and rate limits shared through Redis");
    Ok(http.session_store(store.clone()).event_store(store))
}

#[cfg(not(feature = "redis"))]
async fn with_session_store(
    _http: HttpServerConfig,
    _endpoints: &mut [(&str, &mut HttpServerConfig)],
    _url: &str,
    _gateway: &Gateway,
) -> Result<HttpServerConfig, String> {
    Err("--session-store (or MCP_BRIDGE_SESSION_STORE) needs mcp-bridge built with the `redis` feature".to_owned())
}

/// `/healthz` (the process answers) and `/readyz` (`{"ready": true}` with 200, or `false` with
/// 503 until every required upstream is ready; no more), both public; `/readyz/details` (the
/// same with every upstream's state, failed tries since it was last ready and last error, its
/// control characters escaped) and `/metrics` (Prometheus text, with each upstream's state), behind
/// the token or OAuth when the listener has either.
fn health_routes(http: HttpServerConfig, gateway: &Arc<Gateway>) -> HttpServerConfig {
    let (ready, details, metrics) = (gateway.clone(), gateway.clone(), gateway.clone());
    http.route_public("/healthz", || async { RouteResponse::text(200, "ok\n") })
        .route_public("/readyz", move || {
            // Public: ready or not, and each virtual server's (upstream names and errors name
            // commands and paths: not here).
            let summary = ready.set_summary();
            let failed = summary.failed_required();
            let endpoints = ready.endpoint_list();
            let mut answer = readiness(failed.is_empty(), None);
            if !endpoints.is_empty() {
                let entries: serde_json::Map<String, serde_json::Value> = endpoints
                    .iter()
                    .map(|e| {
                        let up = !failed.iter().any(|server| e.serves(server));
                        (e.name.clone(), serde_json::json!({"path": e.path, "ready": up}))
                    })
                    .collect();
                let mut body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
                body["endpoints"] = serde_json::Value::Object(entries);
                answer.body = body.to_string().into();
            }
            async move { answer }
        })
        .route("/readyz/details", move || {
            let summary = details.set_summary();
            let servers: Vec<serde_json::Value> = summary
                .servers
                .iter()
                .map(|s| {
                    serde_json::json!({
                        "server": s.name,
                        "state": s.state.as_str(),
                        "required": s.required,
                        "failed_attempts": s.failed_attempts,
                        "error": s.error.as_deref().map(mcpwire::gateway::printable),
                    })
                })
                .collect();
            let ready = summary.failed_required().is_empty();
            async move { readiness(ready, Some(servers)) }
        })
        .route("/metrics", move || {
            let mut text = metrics.render_metrics();
            crate::otel::render_metrics(&mut text);
            async move { RouteResponse::new(200, mcpwire::gateway::metrics::CONTENT_TYPE, text) }
        })
}

/// The answer of `/readyz` (200 when ready, else 503), with every upstream's state when given.
fn readiness(ready: bool, servers: Option<Vec<serde_json::Value>>) -> RouteResponse {
    let mut body = serde_json::json!({"ready": ready});
    if let Some(servers) = servers {
        body["servers"] = serde_json::Value::Array(servers);
    }
    RouteResponse::new(if ready { 200 } else { 503 }, "application/json", body.to_string())
}

/// Waits for SIGINT or SIGTERM, the signals that stop the bridge.
async fn stop_signal(interrupt: &mut tokio::signal::unix::Signal, terminate: &mut tokio::signal::unix::Signal) {
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Result<tokio::signal::unix::Signal, String> {
    tokio::signal::unix::signal(kind).map_err(|e| format!("cannot handle signals: {e}"))
}

/// The URL and ready-to-paste client configurations, on stdout (HTTP mode only: in stdio mode
/// stdout carries frames).
fn print_banner(url: &str) {
    let banner = format!(
        "mcp-bridge: serving MCP on {url}\n\n\
         Claude / VS Code (JSON):\n  \
         {{\"mcpServers\": {{\"mcp-bridge\": {{\"type\": \"http\", \"url\": \"{url}\"}}}}}}\n\
         codex (~/.codex/config.toml):\n  [mcp_servers.mcp-bridge]\n  url = \"{url}\"\n\
         Try it: mcp-bridge tools --url {url}\n"
    );
    // Not println!: a closed stdout (the operator's pipe gone) must not stop the gateway.
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
}

/// How often `serve` looks at its config file for a change.
const CONFIG_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// What tells a config file changed: its modification time and length.
fn stamp(file: &std::path::Path) -> Option<(std::time::SystemTime, u64)> {
    let meta = std::fs::metadata(file).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Reloads the gateway's sets (the shared one and every session's per-session one) from `file`
/// on every SIGHUP, and when the file changes (looked at every
/// [`CONFIG_POLL`]; a change is taken once it has held for one look, so a file being written
/// is not read half-way): unchanged upstreams keep their connections, and the catalog changes
/// reach the downstream sessions as `list_changed` (through the set's events). A file that no
/// longer reads is logged and changes nothing.
async fn reload_on_change(
    gateway: Arc<Gateway>,
    file: std::path::PathBuf,
    tokens: Vec<(String, String)>,
    mut hangup: tokio::signal::unix::Signal,
) {
    let mut loaded = stamp(&file);
    let mut seen = loaded;
    let mut poll = tokio::time::interval(CONFIG_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let why = tokio::select! {
            signal = hangup.recv() => match signal {
                Some(()) => "SIGHUP",
                None => return,
            },
            _ = poll.tick() => {
                let now = stamp(&file);
                let settled = now == seen;
                seen = now;
                if !settled || now == loaded || now.is_none() {
                    continue;
                }
                "the file changed"
            }
        };
        loaded = stamp(&file);
        seen = loaded;
        let settings = match reload_settings(&file) {
            Ok(settings) => settings,
            Err(e) => {
                tracing::warn!("reload skipped ({why}), the rules in force kept: {e}");
                continue;
            }
        };
        match McpConfig::load(&file) {
            Ok(config) => {
                if settings.tokens != tokens {
                    tracing::warn!("[gateway.tokens] changed: named tokens are read at start; restart to apply");
                }
                if settings.policy.as_ref() != gateway.policy().as_deref() {
                    tracing::info!(rules = settings.policy.as_ref().map_or(0, |p| p.rules.len()), "policy reloaded");
                    gateway.set_policy(settings.policy);
                }
                if settings.rate_limits != gateway.rate_limits() {
                    tracing::info!(limits = settings.rate_limits.len(), "rate limits reloaded");
                    gateway.set_rate_limits(settings.rate_limits);
                }
                if settings.request_limits != gateway.request_limits() {
                    tracing::info!(limits = settings.request_limits.len(), "request rate limits reloaded");
                    gateway.set_request_limits(settings.request_limits);
                }
                reload_endpoints(&gateway, settings.endpoints);
                let report = gateway.set().reload(config.clone()).await;
                tracing::info!(file = %file.display(), %report, "reloaded ({why})");
                let sessions = gateway.per_session().reload(&config).await;
                if sessions > 0 {
                    tracing::info!(sessions, "per-session upstreams reloaded");
                }
            }
            Err(e) => tracing::warn!("reload skipped ({why}): {e}"),
        }
    }
}

/// The virtual servers become `endpoints`: what each offers and its policy change at once (its
/// live sessions are told `list_changed`); a path, tokens or scopes that changed, and an
/// endpoint added or removed, need a restart (they are the listener's), and are logged.
fn reload_endpoints(gateway: &Gateway, endpoints: Vec<Endpoint>) {
    let serving = gateway.endpoint_list();
    for gone in serving.iter().filter(|e| !endpoints.iter().any(|n| n.name == e.name)) {
        tracing::warn!(endpoint = %gone.name, "endpoint removed from the config: restart to apply");
    }
    for endpoint in endpoints {
        let Some(old) = serving.iter().find(|e| e.name == endpoint.name) else {
            tracing::warn!(endpoint = %endpoint.name, "endpoint added to the config: restart to apply");
            continue;
        };
        if **old == endpoint {
            continue;
        }
        if (&old.path, &old.tokens, &old.scopes) != (&endpoint.path, &endpoint.tokens, &endpoint.scopes) {
            tracing::warn!(endpoint = %endpoint.name, "endpoint path, tokens or scopes changed: restart to apply");
        }
        let name = endpoint.name.clone();
        match gateway.set_endpoint(endpoint) {
            Ok(()) => tracing::info!(endpoint = %name, "endpoint reloaded"),
            Err(e) => tracing::warn!(endpoint = %name, "endpoint reload skipped: {}", mcpwire::gateway::printable(&e)),
        }
    }
}

/// The listener's hook: every request to an MCP endpoint asks the gateway's request limits
/// ([`Gateway::within_request_limits`], which counts a refusal); a refused one gets 429.
fn request_limit(gateway: Arc<Gateway>) -> RequestLimit {
    Arc::new(move |caller| {
        gateway
            .within_request_limits(caller)
            .map_err(|refused| RequestRefused { limit: refused.limit.to_string(), retry_after: refused.retry_after })
    })
}

/// The `[gateway]` table of `file` as it is now (nothing for a JSON file).
fn reload_settings(file: &std::path::Path) -> Result<Settings, String> {
    if !file.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml")) {
        return Ok(Settings::default());
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    Settings::from_toml(&text, &file.display().to_string())
}

/// An upstream's stderr, a line at a time, on ours after `upstream stderr: ` with control
/// characters escaped ([`mcpwire::gateway::printable`]): an upstream cannot drive the
/// operator's terminal, and no line it writes passes for one of the bridge's own.
pub(crate) fn escaped_stderr() -> Stderr {
    Stderr::Lines(std::sync::Arc::new(|line: &str| write_upstream_line(None, line)))
}

/// [`escaped_stderr`] for the children of a connection set, each line after
/// `upstream stderr (NAME): ` naming the server that wrote it (escaped too).
pub(crate) fn named_escaped_stderr() -> ChildStderr {
    ChildStderr::Lines(std::sync::Arc::new(|server: &str, line: &str| write_upstream_line(Some(server), line)))
}

fn write_upstream_line(server: Option<&str>, line: &str) {
    use mcpwire::gateway::printable;
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = match server {
        Some(server) => writeln!(err, "upstream stderr ({}): {}", printable(server), printable(line)),
        None => writeln!(err, "upstream stderr: {}", printable(line)),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen("stdio"), Ok(Listen::Stdio));
        assert_eq!(
            parse_listen("http://127.0.0.1:8000/mcp"),
            Ok(Listen::Http { addr: "127.0.0.1:8000".parse().unwrap(), path: "/mcp".into(), tls: false })
        );
        assert_eq!(
            parse_listen("https://localhost:9"),
            Ok(Listen::Http { addr: "127.0.0.1:9".parse().unwrap(), path: "/mcp".into(), tls: true })
        );
        assert_eq!(
            parse_listen("http://[::1]:80/x"),
            Ok(Listen::Http { addr: "[::1]:80".parse().unwrap(), path: "/x".into(), tls: false })
        );
        assert!(parse_listen("tcp://1.2.3.4:5").is_err());
        assert!(parse_listen("http://example.com:80/mcp").is_err());
    }

    #[test]
    fn inline_names() {
        assert_eq!(inline_name("/usr/bin/mcp-server-time"), "mcp-server-time");
        assert_eq!(inline_name("server.js"), "server_js");
        assert_eq!(inline_name("127.0.0.1"), "127_0_0_1");
    }
}
