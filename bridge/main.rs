//! `mcp-bridge`: a command-line MCP client for one server (stdio or HTTP) or a configured set.
//!
//! ```text
//! mcp-bridge tools [--json] [OPTIONS] (-- CMD ARGS... | --url URL | --config FILE [--server NAME])
//! mcp-bridge call TOOL [--args JSON] [--json] [OPTIONS] (-- CMD ARGS... | --url URL | --config FILE --server NAME)
//! mcp-bridge check --config FILE [--json]
//! ```
//!
//! `--url` speaks Streamable HTTP, falling back to the legacy HTTP+SSE transport. `--config`
//! reads codex TOML (`.toml`) or Claude / VS Code JSON (`.json`, told apart by the top-level
//! key) and starts the servers as a [`ConnectionSet`]: `tools` lists the aggregated tools under
//! their qualified names, `call` calls one tool of one server, `check` starts every server and
//! prints one status line each.
//!
//! Exit codes: 0 success, 1 protocol or connection failure (one line on stderr; for `check`, a
//! required server failed), 2 usage error (usage on stderr), 3 the tool answered
//! `isError: true`, 130 interrupted (Ctrl-C; the servers are killed with their process groups).
//!
//! Not here (yet): serving the tools again as an MCP server, `--record`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use mcpwire::client::config::{ConfigError, McpConfig};
use mcpwire::client::connection_set::{CatalogTool, ConnectionSet, ServerState, ServerStatus, SetError, SetOptions};
use mcpwire::client::{Client, ClientError, ClientOptions};
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock, Tool};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use mcpwire::transport::stdio::{ChildCommand, Stderr};
use mcpwire::transport::Transport;
use serde_json::{json, Map, Value};

const USAGE: &str = "\
usage: mcp-bridge tools [--json] [OPTIONS] SERVER
       mcp-bridge call TOOL [--args JSON] [--json] [OPTIONS] SERVER
       mcp-bridge check --config FILE [--json] [OPTIONS]

SERVER is one of:
  -- CMD [ARGS...]           start CMD as an MCP server over stdio
  --url URL                  Streamable HTTP (falling back to legacy SSE)
  --config FILE [--server NAME]
                             the servers of FILE (.toml: codex [mcp_servers];
                             .json: Claude mcpServers or VS Code servers);
                             call needs --server, tools lists every server's
                             tools under qualified names unless --server is given

Lists the server's tools, calls one, or checks that every configured server starts.

options:
  --args JSON      the tool's arguments, a JSON object (call only; default none)
  --json           print JSON: the tools array, the whole tool result, or statuses
  --timeout SECS   how long each request may take (default 60)
  --verbose        pass the servers' stderr through to ours (default: dropped)
  -h, --help       print this help

exit status: 0 success, 1 connection or protocol failure (check: a required
             server failed), 2 usage error, 3 the tool reported an error
             (isError), 130 interrupted";

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
    Config { file: String, server: Option<String> },
}

#[derive(Debug, PartialEq)]
struct Args {
    command: Command,
    json: bool,
    verbose: bool,
    timeout: Option<Duration>,
    source: Source,
}

/// What the command line asked for: run, print help, or a usage error.
#[derive(Debug, PartialEq)]
enum Parsed {
    Run(Args),
    Help,
}

fn parse(argv: &[String]) -> Result<Parsed, String> {
    let (ours, server) = match argv.iter().position(|a| a == "--") {
        Some(i) => (&argv[..i], argv[i + 1..].to_vec()),
        None => (argv, Vec::new()),
    };
    if ours.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(Parsed::Help);
    }
    let mut words = Vec::new();
    let mut json = false;
    let mut verbose = false;
    let mut timeout = None;
    let mut arguments = None;
    let mut url = None;
    let mut config = None;
    let mut server_name = None;
    let mut it = ours.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--verbose" | "-v" => verbose = true,
            "--timeout" => {
                let value = it.next().ok_or("--timeout needs a number of seconds")?;
                let secs: f64 = value.parse().map_err(|_| format!("--timeout: not a number of seconds: {value}"))?;
                if !(secs.is_finite() && secs > 0.0) {
                    return Err(format!("--timeout: must be positive: {value}"));
                }
                timeout = Some(Duration::from_secs_f64(secs));
            }
            "--args" => {
                let value = it.next().ok_or("--args needs a JSON object")?;
                match serde_json::from_str::<Value>(value) {
                    Ok(Value::Object(map)) => arguments = Some(map),
                    Ok(_) => return Err("--args: must be a JSON object".to_owned()),
                    Err(e) => return Err(format!("--args: invalid JSON: {e}")),
                }
            }
            "--url" => url = Some(it.next().ok_or("--url needs a URL")?.clone()),
            "--config" => config = Some(it.next().ok_or("--config needs a file")?.clone()),
            "--server" => server_name = Some(it.next().ok_or("--server needs a server name")?.clone()),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            word => words.push(word.to_owned()),
        }
    }
    let command = match words.as_slice() {
        [] => return Err("missing command (tools, call or check)".to_owned()),
        [c] if c == "tools" || c == "check" => {
            if arguments.is_some() {
                return Err("--args applies to call only".to_owned());
            }
            if c == "tools" {
                Command::Tools
            } else {
                Command::Check
            }
        }
        [c, tool] if c == "call" => Command::Call { tool: tool.clone(), arguments },
        [c] if c == "call" => return Err("call needs a tool name".to_owned()),
        [c, ..] if c == "tools" || c == "call" || c == "check" => return Err(format!("unexpected argument after {c}")),
        [c, ..] => return Err(format!("unknown command {c}")),
    };
    let given = usize::from(!server.is_empty()) + usize::from(url.is_some()) + usize::from(config.is_some());
    if given > 1 {
        return Err("give one of -- CMD, --url and --config".to_owned());
    }
    if server_name.is_some() && config.is_none() {
        return Err("--server applies to --config only".to_owned());
    }
    let source = if let Some(file) = config {
        if matches!(command, Command::Call { .. }) && server_name.is_none() {
            return Err("call --config needs --server NAME".to_owned());
        }
        if command == Command::Check && server_name.is_some() {
            return Err("check takes no --server".to_owned());
        }
        Source::Config { file, server: server_name }
    } else if command == Command::Check {
        return Err("check needs --config FILE".to_owned());
    } else if let Some(url) = url {
        Source::Url(url)
    } else if server.is_empty() {
        return Err("missing server command after -- (or --url, --config)".to_owned());
    } else {
        Source::Stdio(server)
    };
    Ok(Parsed::Run(Args { command, json, verbose, timeout, source }))
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

fn client_options(args: &Args) -> ClientOptions {
    let mut options = ClientOptions::default().with_client_info("mcp-bridge", env!("CARGO_PKG_VERSION"));
    if let Some(timeout) = args.timeout {
        options = options.with_request_timeout(Some(timeout));
    }
    options
}

async fn run(args: Args) -> Result<(), Failure> {
    let options = client_options(&args);
    let stderr = if args.verbose { Stderr::Inherit } else { Stderr::Discard };
    match &args.source {
        Source::Stdio(server) => {
            let command = ChildCommand::new(&server[0]).args(&server[1..]).stderr(stderr);
            let client = Client::spawn(command, options).await?;
            run_one(client, args.command, args.json).await
        }
        Source::Url(url) => {
            let mut config = HttpClientConfig::new(url.clone());
            if let Some(timeout) = args.timeout {
                config = config.request_timeout(timeout).connect_timeout(timeout);
            }
            let transport = HttpClientTransport::new(config).map_err(ClientError::Transport)?;
            let client = Client::connect(transport, options).await?;
            run_one(client, args.command, args.json).await
        }
        Source::Config { file, server } => {
            let mut config = McpConfig::load(file).map_err(Failure::Config)?;
            if let Some(name) = server {
                let Some(mut one) = config.servers.remove(name) else {
                    return Err(Failure::Other(format!("{file}: no server named {name}")));
                };
                // The one server asked for must start.
                one.required = true;
                one.enabled = true;
                config.servers = [(name.clone(), one)].into();
            }
            let set =
                ConnectionSet::new(config, SetOptions::default().with_client_options(options).with_stderr(stderr));
            let outcome = run_set(&set, args.command, server.as_deref(), args.timeout, args.json).await;
            set.shutdown().await;
            outcome
        }
    }
}

async fn run_one<T: Transport>(client: Client<T>, command: Command, json: bool) -> Result<(), Failure> {
    let outcome = match command {
        Command::Tools => client.list_tools().await.map_err(Failure::from).and_then(|tools| {
            print_tools(&tools, json)?;
            Ok(())
        }),
        Command::Call { tool, arguments } => {
            client.call_tool(tool, arguments).await.map_err(Failure::from).and_then(|result| finish_call(&result, json))
        }
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

async fn run_set(
    set: &ConnectionSet,
    command: Command,
    server: Option<&str>,
    timeout: Option<Duration>,
    json: bool,
) -> Result<(), Failure> {
    match command {
        Command::Check => {
            let summary = match set.start().await {
                Ok(summary) => summary,
                Err(SetError::StartupFailed { summary, .. }) => summary,
                Err(e) => return Err(e.into()),
            };
            print_statuses(&summary.servers, json)?;
            let failed = summary.failed_required();
            if failed.is_empty() {
                Ok(())
            } else {
                Err(Failure::RequiredFailed(failed))
            }
        }
        Command::Tools => {
            set.start().await?;
            print_catalog(&set.tools(), json)?;
            Ok(())
        }
        Command::Call { tool, arguments } => {
            set.start().await?;
            let server = server.expect("parse requires --server for call --config");
            let result = set.call_tool_on(server, &tool, arguments, timeout).await?;
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
                Some(description) => writeln!(out, "{} — {description}", t.qualified_name)?,
                None => writeln!(out, "{}", t.qualified_name)?,
            }
        }
    }
    out.flush()
}

fn print_statuses(statuses: &[ServerStatus], json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for s in statuses {
        let ms = s.elapsed.as_millis();
        if json {
            let line = json!({
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
            });
            writeln!(out, "{line}")?;
            continue;
        }
        let required = if s.required { " (required)" } else { "" };
        match (s.state, s.protocol_version) {
            (ServerState::Ready, Some(version)) => {
                writeln!(out, "{}{required}: ready, protocol {version}, {} tools, {ms} ms", s.name, s.tools)?
            }
            (ServerState::Disabled, _) => writeln!(out, "{}{required}: disabled", s.name)?,
            (state, _) => writeln!(
                out,
                "{}{required}: {state} after {ms} ms: {}",
                s.name,
                s.error.as_deref().unwrap_or("no reason given")
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
                Some(description) => writeln!(out, "{} — {description}", tool.name)?,
                None => writeln!(out, "{}", tool.name)?,
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

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&argv) {
        Ok(Parsed::Run(args)) => args,
        Ok(Parsed::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("mcp-bridge: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
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
            eprintln!("mcp-bridge: required servers failed: {}", names.join(", "));
            ExitCode::from(1)
        }
        Err(Failure::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Failure::Output(e)) => {
            eprintln!("mcp-bridge: cannot write the output: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn parses_both_commands_with_options_anywhere_before_the_separator() {
        let parsed = parse(&argv("--verbose call echo --args {\"message\":\"hi\"} --json -- node s.js stdio")).unwrap();
        let Parsed::Run(args) = parsed else { panic!("{parsed:?}") };
        let mut expected = Map::new();
        expected.insert("message".into(), "hi".into());
        assert_eq!(args.command, Command::Call { tool: "echo".into(), arguments: Some(expected) });
        assert!(args.json && args.verbose);
        assert_eq!(args.source, Source::Stdio(argv("node s.js stdio")));
        let Ok(Parsed::Run(args)) = parse(&argv("tools --timeout 1.5 -- srv --json")) else { panic!() };
        assert_eq!(args.command, Command::Tools);
        assert_eq!(args.timeout, Some(Duration::from_millis(1500)));
        assert!(!args.json, "--json after -- belongs to the server");
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        let cases = [
            ("tools", "missing server command after -- (or --url, --config)"),
            ("-- srv", "missing command (tools, call or check)"),
            ("check -- srv", "check needs --config FILE"),
            ("call t --config a.toml", "call --config needs --server NAME"),
            ("tools --url http://h/mcp -- srv", "give one of -- CMD, --url and --config"),
            ("tools --server a -- srv", "--server applies to --config only"),
            ("check --config a.toml --server a", "check takes no --server"),
            ("call -- srv", "call needs a tool name"),
            ("list -- srv", "unknown command list"),
            ("call echo --args [1] -- srv", "--args: must be a JSON object"),
            ("tools --args {} -- srv", "--args applies to call only"),
            ("tools --timeout -3 -- srv", "--timeout: must be positive: -3"),
            ("tools --frob -- srv", "unknown option --frob"),
        ];
        for (line, message) in cases {
            assert_eq!(parse(&argv(line)), Err(message.to_owned()), "{line}");
        }
        assert_eq!(parse(&argv("call -h")), Ok(Parsed::Help));
    }

    #[test]
    fn url_and_config_sources() {
        let Ok(Parsed::Run(args)) = parse(&argv("tools --url http://127.0.0.1:1/mcp --json")) else { panic!() };
        assert_eq!(args.source, Source::Url("http://127.0.0.1:1/mcp".into()));
        let Ok(Parsed::Run(args)) = parse(&argv("call echo --config m.toml --server e")) else { panic!() };
        assert_eq!(args.source, Source::Config { file: "m.toml".into(), server: Some("e".into()) });
        let Ok(Parsed::Run(args)) = parse(&argv("check --config m.json --json")) else { panic!() };
        assert_eq!((args.command, args.json), (Command::Check, true));
    }
}
