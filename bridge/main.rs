//! `mcp-bridge`: a command-line MCP client for stdio servers (first cut).
//!
//! ```text
//! mcp-bridge tools [--json] [OPTIONS] -- CMD ARGS...
//! mcp-bridge call TOOL [--args JSON] [--json] [OPTIONS] -- CMD ARGS...
//! ```
//!
//! Exit codes: 0 success, 1 protocol or connection failure (one line on stderr), 2 usage error
//! (usage on stderr), 3 the tool answered `isError: true`, 130 interrupted (Ctrl-C; the server
//! is killed with its process group).
//!
//! Not here (yet): configuration files, several servers at once, serving the tools again as
//! an MCP server, `--record`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use mcpwire::client::{Client, ClientError, ClientOptions};
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock, Tool};
use mcpwire::transport::stdio::{ChildCommand, Stderr};
use serde_json::{Map, Value};

const USAGE: &str = "\
usage: mcp-bridge tools [--json] [OPTIONS] -- CMD [ARGS...]
       mcp-bridge call TOOL [--args JSON] [--json] [OPTIONS] -- CMD [ARGS...]

Starts CMD as an MCP server over stdio and lists its tools, or calls one.

options:
  --args JSON      the tool's arguments, a JSON object (call only; default none)
  --json           print JSON: the tools array, or the whole tool result
  --timeout SECS   how long each request may take (default 60)
  --verbose        pass the server's stderr through to ours (default: dropped)
  -h, --help       print this help

exit status: 0 success, 1 connection or protocol failure, 2 usage error,
             3 the tool reported an error (isError), 130 interrupted";

#[derive(Debug, PartialEq)]
enum Command {
    Tools,
    Call { tool: String, arguments: Option<Map<String, Value>> },
}

#[derive(Debug, PartialEq)]
struct Args {
    command: Command,
    json: bool,
    verbose: bool,
    timeout: Option<Duration>,
    server: Vec<String>,
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
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            word => words.push(word.to_owned()),
        }
    }
    let command = match words.as_slice() {
        [] => return Err("missing command (tools or call)".to_owned()),
        [c] if c == "tools" => {
            if arguments.is_some() {
                return Err("--args applies to call only".to_owned());
            }
            Command::Tools
        }
        [c, tool] if c == "call" => Command::Call { tool: tool.clone(), arguments },
        [c] if c == "call" => return Err("call needs a tool name".to_owned()),
        [c, ..] if c == "tools" || c == "call" => return Err(format!("unexpected argument after {c}")),
        [c, ..] => return Err(format!("unknown command {c}")),
    };
    if server.is_empty() {
        return Err("missing server command after --".to_owned());
    }
    Ok(Parsed::Run(Args { command, json, verbose, timeout, server }))
}

/// How the run ended, beyond plain success.
enum Failure {
    /// Connection or protocol failure.
    Client(ClientError),
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

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Output(e)
    }
}

async fn run(args: Args) -> Result<(), Failure> {
    let stderr = if args.verbose { Stderr::Inherit } else { Stderr::Discard };
    let command = ChildCommand::new(&args.server[0]).args(&args.server[1..]).stderr(stderr);
    let mut options = ClientOptions::default().with_client_info("mcp-bridge", env!("CARGO_PKG_VERSION"));
    if let Some(timeout) = args.timeout {
        options = options.with_request_timeout(Some(timeout));
    }
    let client = Client::spawn(command, options).await?;
    let outcome = match args.command {
        Command::Tools => client.list_tools().await.map_err(Failure::from).and_then(|tools| {
            print_tools(&tools, args.json)?;
            Ok(())
        }),
        Command::Call { tool, arguments } => {
            client.call_tool(tool, arguments).await.map_err(Failure::from).and_then(|result| {
                print_result(&result, args.json)?;
                if result.is_error == Some(true) {
                    Err(Failure::ToolError)
                } else {
                    Ok(())
                }
            })
        }
    };
    let _ = client.close().await;
    outcome
}

fn print_tools(tools: &[Tool], json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, tools)?;
        writeln!(out)?;
    } else {
        for tool in tools {
            match tool.description.as_deref().and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty())) {
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
    // stop waiting, and dropping the runtime kills the server's group.
    let outcome = runtime.block_on(async {
        tokio::select! {
            outcome = run(args) => Some(outcome),
            _ = tokio::signal::ctrl_c() => None,
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
        assert_eq!(args.server, ["node", "s.js", "stdio"]);
        let Ok(Parsed::Run(args)) = parse(&argv("tools --timeout 1.5 -- srv --json")) else { panic!() };
        assert_eq!(args.command, Command::Tools);
        assert_eq!(args.timeout, Some(Duration::from_millis(1500)));
        assert!(!args.json, "--json after -- belongs to the server");
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        let cases = [
            ("tools", "missing server command after --"),
            ("-- srv", "missing command (tools or call)"),
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
}
