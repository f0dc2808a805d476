//! The shell client of `mcp-bridge`: `tools`, `call` and `check` against one server (stdio or
//! HTTP) or a configured set.
//!
//! `--url` speaks Streamable HTTP, falling back to the legacy HTTP+SSE transport. `--config`
//! reads codex TOML (`.toml`) or Claude / VS Code JSON (`.json`, told apart by the top-level
//! key) and starts the servers as a [`ConnectionSet`]: `tools` lists the aggregated tools under
//! their qualified names, `call` calls one tool of one server, `check` starts every server and
//! prints one status line each, with its OAuth login state (`auth`: `not_needed`, `logged_in`,
//! `needs_login`, `expired`; `authStore`: where a login is kept, `keyring (SERVICE)` or `file
//! PATH`). HTTP servers without credentials of their own get the stored
//! login of `mcp-bridge login` (login.rs); `tools` names on stderr each server that failed.
//!
//! Not here: the command line itself (main.rs), serving (serve.rs).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use mcpwire::client::catalog::{CatalogBuilder, CatalogCache, Resolution, ResolvedCatalog, SourceKind};
use mcpwire::client::config::{ConfigError, McpConfig};
use mcpwire::client::connection_set::{
    CatalogTool, ChildStderr, ConnectionSet, ServerState, ServerStatus, SetError, SetOptions,
};
use mcpwire::client::login::{AuthReport, AuthStatus, Logins};
use mcpwire::client::{Client, ClientError, ClientOptions};
use mcpwire::gateway::printable;
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock, Tool};
use mcpwire::transport::boxed::BoxTransport;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use mcpwire::transport::stdio::{ChildCommand, Stderr};
use serde_json::{json, Map, Value};

#[derive(Debug, PartialEq)]
enum Command {
    Tools,
    Call { tool: String, arguments: Option<Map<String, Value>> },
    Check,
}

/// Where the server(s) come from.
#[derive(Debug, PartialEq)]
enum Source {
    Stdio(Vec<String>),
    Url(String),
    Config { file: String, server: Option<String>, more: super::MoreSources },
}

/// One client command, checked.
#[derive(Debug, PartialEq)]
pub(crate) struct Invocation {
    command: Command,
    json: bool,
    verbose: bool,
    timeout: Option<Duration>,
    source: Source,
}

impl Invocation {
    /// The invocation of a client command (`tools`, `call`, `check`), or what is wrong with
    /// it beyond what clap checks.
    pub(crate) fn from_command(command: super::Command) -> Result<Invocation, String> {
        let (command, common, source) = match command {
            super::Command::Tools { server, common, source } => (Command::Tools, common, Some((source, server))),
            super::Command::Call { tool, args, server, common, source } => {
                (Command::Call { tool, arguments: args }, common, Some((source, server)))
            }
            super::Command::Check { config, sources, common } => {
                let source = Source::Config { file: config.display().to_string(), server: None, more: sources };
                return Ok(Invocation {
                    command: Command::Check,
                    json: common.json,
                    verbose: common.verbose,
                    timeout: common.timeout,
                    source,
                });
            }
            _ => return Err("not a client command".to_owned()),
        };
        let (source, server) = source.expect("tools and call have a source");
        if server.is_some() && source.config.is_none() {
            return Err("--server applies to --config only".to_owned());
        }
        let source = if let Some(file) = source.config {
            if matches!(command, Command::Call { .. }) && server.is_none() {
                return Err("call --config needs --server NAME".to_owned());
            }
            Source::Config { file: file.display().to_string(), server, more: super::MoreSources::default() }
        } else if let Some(url) = source.url {
            Source::Url(url)
        } else {
            Source::Stdio(source.command)
        };
        Ok(Invocation { command, json: common.json, verbose: common.verbose, timeout: common.timeout, source })
    }
}

/// How the run ended, beyond plain success.
enum Failure {
    /// Connection or protocol failure.
    Client(ClientError),
    /// The connection set failed (startup, routing, a call).
    Set(SetError),
    /// The configuration file is wrong.
    Config(ConfigError),
    /// Another failure, already described.
    Other(String),
    /// `check`: a required server failed (the statuses were printed).
    RequiredFailed(Vec<String>),
    /// The tool answered `isError: true` (its result was printed).
    ToolError,
    /// Printing failed (e.g. a closed pipe).
    Output(std::io::Error),
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        Failure::Client(e)
    }
}

impl From<SetError> for Failure {
    fn from(e: SetError) -> Self {
        Failure::Set(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Output(e)
    }
}

fn client_options(args: &Invocation) -> ClientOptions {
    let mut options = ClientOptions::default().with_client_info("mcp-bridge", env!("CARGO_PKG_VERSION"));
    if let Some(timeout) = args.timeout {
        options = options.with_request_timeout(Some(timeout));
    }
    options
}

async fn run(args: Invocation) -> Result<(), Failure> {
    let options = client_options(&args);
    let stderr = if args.verbose { super::serve::escaped_stderr() } else { Stderr::Discard };
    match &args.source {
        Source::Stdio(server) => {
            let command = ChildCommand::new(&server[0]).args(&server[1..]).stderr(stderr);
            let transport = command.spawn().map_err(ClientError::Transport)?;
            let client = Client::connect(BoxTransport::new(transport), options).await?;
            run_one(client, args.command, args.json).await
        }
        Source::Url(url) => {
            let mut config = HttpClientConfig::new(url.clone());
            if let Some(timeout) = args.timeout {
                config = config.request_timeout(timeout).connect_timeout(timeout);
            }
            let transport = HttpClientTransport::new(config).map_err(ClientError::Transport)?;
            let client = Client::connect(BoxTransport::new(transport), options).await?;
            run_one(client, args.command, args.json).await
        }
        Source::Config { file, server, more } => {
            let catalog = resolve(file, more).map_err(Failure::Config)?;
            let several = catalog.resolutions().iter().any(|r| r.source.kind != SourceKind::Config);
            let resolutions = several.then(|| catalog.resolutions().to_vec());
            let mut config = catalog.into_config();
            if let Some(name) = server {
                let Some(mut one) = config.servers.remove(name) else {
                    return Err(Failure::Other(format!("{file}: no server named {name}")));
                };
                // The one server asked for must start.
                one.required = true;
                one.enabled = true;
                config.servers = [(name.clone(), one)].into();
            }
            let children = if args.verbose { super::serve::named_escaped_stderr() } else { ChildStderr::Discard };
            let mut set_options = SetOptions::default().with_client_options(options).with_stderr(children);
            // `check` starts every server, lazy or not; the others list lazy ones from the cache.
            if let Some(cache) = CatalogCache::for_config(file.as_ref()).filter(|_| args.command != Command::Check) {
                set_options = set_options.with_catalog_cache(cache);
            }
            // Without a place for logins, servers behind OAuth just fail with their 401.
            let logins = super::login::logins().ok();
            if let Some(logins) = &logins {
                set_options = set_options.with_logins(logins.clone());
            }
            let set = ConnectionSet::new(config.clone(), set_options);
            let auth = AuthView { config: &config, logins: logins.as_ref() };
            let outcome =
                run_set(&set, args.command, server.as_deref(), args.timeout, args.json, resolutions.as_deref(), auth)
                    .await;
            set.shutdown().await;
            outcome
        }
    }
}

async fn run_one(client: Client<BoxTransport>, command: Command, json: bool) -> Result<(), Failure> {
    let outcome = match command {
        Command::Tools => client.list_tools().await.map_err(Failure::from).and_then(|tools| {
            print_tools(&tools, json)?;
            Ok(())
        }),
        Command::Call { tool, arguments } => client
            .call_tool(tool, arguments, Default::default())
            .await
            .map_err(Failure::from)
            .and_then(|result| finish_call(&result, json)),
        Command::Check => unreachable!("check needs --config"),
    };
    let _ = client.close().await;
    outcome
}

fn finish_call(result: &CallToolResult, json: bool) -> Result<(), Failure> {
    print_result(result, json)?;
    if result.is_error == Some(true) {
        Err(Failure::ToolError)
    } else {
        Ok(())
    }
}

/// What `check` needs to tell each server's login state.
#[derive(Clone, Copy)]
struct AuthView<'a> {
    config: &'a McpConfig,
    logins: Option<&'a Logins>,
}

impl AuthView<'_> {
    /// The login state of `status`'s server, after its start.
    fn report(&self, status: &ServerStatus) -> AuthReport {
        let server = self.config.servers.get(&status.name);
        match (server, self.logins) {
            (Some(server), Some(logins)) => {
                logins.status(server, status.error.as_deref()).unwrap_or_else(|e| AuthReport {
                    status: AuthStatus::NeedsLogin,
                    note: Some(format!("the stored login cannot be read: {e}")),
                    location: None,
                })
            }
            _ => AuthReport { status: AuthStatus::NotNeeded, note: None, location: None },
        }
    }
}

async fn run_set(
    set: &ConnectionSet,
    command: Command,
    server: Option<&str>,
    timeout: Option<Duration>,
    json: bool,
    resolutions: Option<&[Resolution]>,
    auth: AuthView<'_>,
) -> Result<(), Failure> {
    match command {
        Command::Check => {
            let summary = match set.start().await {
                Ok(summary) => summary,
                Err(SetError::StartupFailed { summary, .. }) => summary,
                Err(e) => return Err(e.into()),
            };
            print_statuses(&summary.servers, json, resolutions, auth)?;
            let failed = summary.failed_required();
            if failed.is_empty() {
                Ok(())
            } else {
                Err(Failure::RequiredFailed(failed))
            }
        }
        Command::Tools => {
            let summary = set.start().await?;
            for failed in summary.in_state(ServerState::Failed) {
                eprintln!(
                    "mcp-bridge: {}: {}",
                    printable(&failed.name),
                    printable(failed.error.as_deref().unwrap_or("failed"))
                );
            }
            print_catalog(&set.tools(), json)?;
            Ok(())
        }
        Command::Call { tool, arguments } => {
            set.start().await?;
            let server = server.expect("parse requires --server for call --config");
            let result = set
                .call_tool_on(server, &tool, arguments, mcpwire::client::CallOptions::default().with_timeout(timeout))
                .await?;
            finish_call(&result, json)
        }
    }
}

fn first_line(text: Option<&str>) -> Option<&str> {
    text.and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()))
}

fn print_catalog(tools: &[CatalogTool], json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let items: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.qualified_name,
                    "server": t.server,
                    "scope": t.scope,
                    "approvalMode": t.approval_mode.as_str(),
                    "tool": t.tool,
                })
            })
            .collect();
        serde_json::to_writer(&mut out, &items)?;
        writeln!(out)?;
    } else {
        for t in tools {
            match first_line(t.tool.description.as_deref()) {
                Some(description) => writeln!(out, "{} — {}", printable(&t.qualified_name), printable(description))?,
                None => writeln!(out, "{}", printable(&t.qualified_name))?,
            }
        }
    }
    out.flush()
}

/// The sources of `--config` and the sources below it, resolved by precedence.
fn resolve(file: &str, more: &super::MoreSources) -> Result<ResolvedCatalog, ConfigError> {
    let action = |kind| more.on_conflict.iter().rev().find(|(k, _)| *k == kind).map_or(Default::default(), |(_, a)| *a);
    let mut builder = CatalogBuilder::new().file(SourceKind::Config, file, action(SourceKind::Config))?;
    if let Some(project) = &more.project {
        builder = builder.file(SourceKind::Project, project, action(SourceKind::Project))?;
    }
    for import in &more.imports {
        builder = builder.file(SourceKind::Imported, import, action(SourceKind::Imported))?;
    }
    Ok(builder.build())
}

fn source_json(resolution: &Resolution) -> Value {
    json!({
        "source": {"kind": resolution.source.kind.as_str(), "file": resolution.source.label},
        "shadowed": resolution.shadowed.iter().map(|s| json!({"kind": s.source.kind.as_str(), "file": s.source.label})).collect::<Vec<_>>(),
        "disabledBy": resolution.disabled,
    })
}

fn print_statuses(
    statuses: &[ServerStatus],
    json: bool,
    resolutions: Option<&[Resolution]>,
    auth: AuthView<'_>,
) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for s in statuses {
        let ms = s.elapsed.as_millis();
        let resolution = resolutions.and_then(|all| all.iter().find(|r| r.name == s.name));
        let login = auth.report(s);
        if json {
            let mut line = json!({
                "server": s.name,
                "state": s.state.as_str(),
                "required": s.required,
                "eraPolicy": s.era.to_string(),
                // The era spoken: `legacy` (the initialize handshake) or the stateless version.
                "era": s.protocol_version.map(|v| if v.has_initialize_handshake() { "legacy" } else { v.as_str() }),
                "protocolVersion": s.protocol_version.map(|v| v.as_str()),
                "tools": s.tools,
                "startupMs": ms,
                "error": s.error,
                "auth": login.status.as_str(),
                "authNote": login.note,
                "authStore": login.location,
            });
            if let (Some(resolution), Value::Object(line)) = (resolution, &mut line) {
                if let Value::Object(source) = source_json(resolution) {
                    line.extend(source);
                }
            }
            writeln!(out, "{line}")?;
            continue;
        }
        if let Some(resolution) = resolution {
            writeln!(out, "{resolution}")?;
        }
        let required = if s.required { " (required)" } else { "" };
        let kept = login.location.map(|at| format!(", in the {at}")).unwrap_or_default();
        let login = match (login.status, login.note) {
            (AuthStatus::NotNeeded, _) => String::new(),
            (status, None) => format!(", auth {}{kept}", status.as_str()),
            (status, Some(note)) => format!(", auth {}{kept} ({note})", status.as_str()),
        };
        match (s.state, s.protocol_version) {
            (ServerState::Ready, Some(version)) => writeln!(
                out,
                "{}{required}: ready, protocol {version}, {} tools, {ms} ms{login}",
                printable(&s.name),
                s.tools
            )?,
            (ServerState::Disabled, _) => writeln!(out, "{}{required}: disabled", printable(&s.name))?,
            (ServerState::Deferred, _) => {
                writeln!(out, "{}{required}: deferred (startup = lazy), {} tools cached", printable(&s.name), s.tools)?
            }
            (state, _) => writeln!(
                out,
                "{}{required}: {state} after {ms} ms: {}",
                printable(&s.name),
                printable(s.error.as_deref().unwrap_or("no reason given"))
            )?,
        }
    }
    out.flush()
}

fn print_tools(tools: &[Tool], json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, tools)?;
        writeln!(out)?;
    } else {
        for tool in tools {
            match first_line(tool.description.as_deref()) {
                Some(description) => writeln!(out, "{} — {}", printable(&tool.name), printable(description))?,
                None => writeln!(out, "{}", printable(&tool.name))?,
            }
        }
    }
    out.flush()
}

fn print_result(result: &CallToolResult, json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, result)?;
        writeln!(out)?;
        return out.flush();
    }
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => writeln!(out, "{}", text.text)?,
            ContentBlock::Image(image) => {
                writeln!(out, "[image: {}, {} bytes of base64]", image.mime_type, image.data.len())?
            }
            ContentBlock::Audio(audio) => {
                writeln!(out, "[audio: {}, {} bytes of base64]", audio.mime_type, audio.data.len())?
            }
            ContentBlock::ResourceLink(link) => writeln!(out, "[resource link: {}]", link.uri)?,
            ContentBlock::Resource(_) => writeln!(out, "[embedded resource; use --json to see it]")?,
            ContentBlock::Other(map) => {
                let kind = map.get("type").and_then(Value::as_str).unwrap_or("unknown");
                writeln!(out, "[{kind} content; use --json to see it]")?
            }
        }
    }
    if result.content.is_empty() {
        if let Some(structured) = &result.structured_content {
            writeln!(out, "{structured}")?;
        }
    }
    out.flush()
}

/// Runs one client command to its exit code.
pub(crate) fn main(args: Invocation) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-bridge: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // The server runs in its own process group, so a Ctrl-C at the terminal reaches only us:
    // stop waiting, and dropping the runtime kills the server's group. The handler is in place
    // before anything starts (`ctrl_c()` would install it only when first polled, which may be
    // after the server is already running).
    let outcome = runtime.block_on(async {
        let mut interrupt = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            Ok(signal) => signal,
            Err(e) => return Some(Err(Failure::Other(format!("cannot handle SIGINT: {e}")))),
        };
        tokio::select! {
            outcome = run(args) => Some(outcome),
            _ = interrupt.recv() => None,
        }
    });
    drop(runtime);
    let Some(outcome) = outcome else {
        eprintln!("mcp-bridge: interrupted");
        return ExitCode::from(130);
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::ToolError) => ExitCode::from(3),
        Err(Failure::Client(e)) => {
            eprintln!("mcp-bridge: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Set(e)) => {
            eprintln!("mcp-bridge: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Config(e)) => {
            eprintln!("mcp-bridge: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Other(message)) => {
            eprintln!("mcp-bridge: {message}");
            ExitCode::from(1)
        }
        Err(Failure::RequiredFailed(names)) => {
            eprintln!("mcp-bridge: required servers failed: {}", printable(&names.join(", ")));
            ExitCode::from(1)
        }
        Err(Failure::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Failure::Output(e)) => {
            eprintln!("mcp-bridge: cannot write the output: {e}");
            ExitCode::from(1)
        }
    }
}
