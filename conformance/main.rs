//! `mcp-conformance`: checks MCP implementations, live or against recorded sessions. The
//! command line is clap's (`--help` on every subcommand).
//!
//! Subcommands:
//! - `check (--server "CMD ARGS" | --url URL) [...]` — runs the battery of spec checks
//!   ([`mcp_conformance::check`]) against a live server, in each era it speaks: one line per
//!   check, `--junit`, `--json`, `--expected-failures`; exit 1 when a MUST-level check fails
//!   (`--strict`: a SHOULD-level one too).
//! - `roundtrip FILE...` — every message of each recording must survive a decode/encode round
//!   trip through mcpwire's types.
//! - `record [--description TEXT] OUT.jsonl -- SERVER_CMD ARGS...` — a stdio wrapper a client
//!   launches as its server command: relays both streams unchanged and writes the session.
//! - `record [--description TEXT] [--ready-file FILE] OUT.jsonl --listen ADDR:PORT --target URL`
//!   — a loopback HTTP capture proxy (Streamable HTTP and the legacy HTTP+SSE transport) in
//!   front of the server at `URL` (`http://HOST:PORT`): clients connect to `ADDR:PORT` instead
//!   (`127.0.0.1:0` picks a free port). Once listening it prints `listening on http://ADDR:PORT`
//!   on stderr and writes that URL to `FILE`; on SIGINT or SIGTERM it writes the session and
//!   exits 0.
//! - `replay FILE... --server "CMD ARGS" [--clock recorded|system] [--timeout-ms N] [--junit FILE]
//!   [--expected-failures FILE]` — plays each recording's client side against a server started
//!   over stdio (in the command, `{fixtures}` stands for the replay's fixture directory,
//!   `{recording}` for the recording's path and `{name}` for its name). A recording whose
//!   sidecar says `"clock": "recorded"` has its server started under the recording's clock
//!   (libfaketime; `--clock` decides for every recording instead). Each expected server
//!   message is waited for `--timeout-ms` (5000) plus twice its recorded gap.
//! - `replay FILE... --server-url URL [...]` — plays each `streamable-http` or `sse` recording's
//!   client side against the server at `URL` as raw HTTP exchanges, checking the recorded
//!   statuses, headers and SSE framing with the messages (a URL without a path gets the recorded
//!   paths; one with a path stands for the first, `/mcp` or `/sse`).
//! - `replay FILE... --client "CMD ARGS" [...]` — plays each recording's server side to a client
//!   under test. For a stdio recording the client is started as `CMD ARGS MCP-CONFORMANCE serve
//!   --fixtures DIR --report REPORT FILE`, i.e. the last words are the server command it is to
//!   launch (the recorded server). For a `streamable-http` or `sse` recording the runner starts
//!   `MCP-CONFORMANCE serve --listen 127.0.0.1:0 --fixtures DIR --report REPORT FILE` itself and
//!   the client as `CMD ARGS URL`, the last word being the URL to connect to
//!   (`http://127.0.0.1:PORT/mcp`, or the legacy `/sse` stream for an `sse` recording); serve is
//!   stopped with SIGINT when the client has exited. Requests that match nothing, answers that
//!   differ, a failed exit and recorded client messages the client never sent are the
//!   differences (messages only: the HTTP framing is `--server-url`'s business).
//! - `serve [--fixtures DIR] [--report FILE] FILE` — becomes the recorded server on stdin/stdout
//!   (with `--fixtures`, the recordings' `/tmp/mcp-fixtures` is `DIR` in what it sends and
//!   expects; with `--report`, every matched recorded client message and every difference is
//!   appended to `FILE` as a JSON line as it happens; with `--listen ADDR:PORT`, the recorded
//!   server over HTTP instead — Streamable HTTP at `/mcp`, and the legacy transport at `/sse`
//!   for an `sse` recording; stateless for a 2026-07-28 one, whose POSTs all follow one script
//!   (a listen stream stays open while later POSTs run) — otherwise each session following the
//!   script afresh and reporting to the one `--report` file; the URL is printed on stdout, and
//!   Ctrl-C (SIGINT) stops it, after its sessions have reported what was left).
//!
//! Exit status: 0 when everything passed, 1 on failures, 2 on usage errors.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use mcp_conformance::check::{self, CheckOptions, Era, Target};
use mcp_conformance::clock::ClockMode;
use mcp_conformance::matching::{Matcher, Rules};
use mcp_conformance::replay::{replay_stdio, replay_with_client, ReplayOptions, ServeReportLine};
use mcp_conformance::report::{junit, render, ExpectedFailures};
use mcp_conformance::roundtrip::{check_recording, write_report};
use mcp_conformance::serve::{serve_recording, Event};
use mcpwire::recording::record::{record, RecordOptions};
use mcpwire::recording::Recording;
use mcpwire::transport::stdio::StdioTransport;
use mcpwire::transport::{Limits, Transport};

#[derive(Parser)]
#[command(
    name = "mcp-conformance",
    version,
    about = "Check MCP servers and clients: a live check against the spec, and recorded sessions (round trip, record, replay, serve)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the spec checks against a live server (stdio or Streamable HTTP), in each era it speaks.
    Check(CheckArgs),
    /// Decode and re-encode every message of each recording through mcpwire's types.
    Roundtrip {
        /// Recordings (JSON Lines).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Record a session: a stdio wrapper (`OUT -- SERVER_CMD ARGS`) or an HTTP capture proxy
    /// (`OUT --listen ADDR:PORT --target URL`).
    Record(RecordArgs),
    /// Play recordings' client side against a server, or their server side to a client.
    Replay(ReplayArgs),
    /// Become the recorded server of one recording, on stdin/stdout or over HTTP.
    Serve(ServeArgs),
}

/// The transport spoken to `--url`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum HttpTransport {
    /// Streamable HTTP, or the legacy HTTP+SSE transport when the server turns out to speak it.
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// The legacy HTTP+SSE transport (2024-11-05).
    Sse,
}

#[derive(Args)]
// A repeated option overrides the earlier one, as the hand-written parser had it (the tests pass a
// default `--timeout-ms` first and a case's own after it).
#[command(args_override_self = true)]
struct CheckArgs {
    /// The server to start and speak to over stdio (a command line; quotes group words).
    #[arg(long, value_name = "CMD ARGS", required_unless_present = "url", conflicts_with = "url")]
    server: Option<String>,
    /// The Streamable HTTP endpoint of a running server (`http://127.0.0.1:3001/mcp`).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The transport of `--url`: `auto` (Streamable HTTP, falling back to the legacy HTTP+SSE
    /// transport as clients do: a POST of initialize refused with 400, 404 or 405, then a GET
    /// that gives an `endpoint` event), `streamable-http`, or `sse` (the URL of the SSE stream).
    #[arg(long, value_name = "auto|streamable-http|sse", default_value = "auto", requires = "url")]
    transport: HttpTransport,
    /// A header sent with every HTTP request (`K:V`; repeatable).
    #[arg(long = "header", value_name = "K:V", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    /// Send `Authorization: Bearer $VAR` with every HTTP request (the token is never printed).
    #[arg(long, value_name = "VAR")]
    bearer_env: Option<String>,
    /// The eras to check: `both` (the handshake era at 2025-11-25 and 2026-07-28, each only when
    /// the server speaks it), or one revision (`2026-07-28`, `2025-11-25`, `2025-06-18`, …),
    /// which the server must speak.
    #[arg(long, value_name = "both|REV", default_value = "both", value_parser = parse_era)]
    era: EraChoice,
    /// How long to wait for each answer, in milliseconds.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    timeout_ms: u64,
    /// Count SHOULD-level findings as failures too.
    #[arg(long)]
    strict: bool,
    /// Call tool NAME with these arguments and check its result (repeatable).
    #[arg(long = "call", value_name = "NAME=JSON", value_parser = parse_call)]
    calls: Vec<(String, serde_json::Value)>,
    /// Also call every tool annotated `readOnlyHint: true`, with arguments made up from its
    /// input schema, and check its result.
    #[arg(long)]
    call_readonly: bool,
    /// A tool call that takes long enough to be cancelled (`NAME=JSON`): checks that a
    /// cancelled request is never answered.
    #[arg(long, value_name = "NAME=JSON", value_parser = parse_call)]
    slow_tool: Option<(String, serde_json::Value)>,
    /// The `schema/` folder of a checkout of the specification's repository
    /// (modelcontextprotocol/modelcontextprotocol), holding `REV/schema.json` for each
    /// revision: results and tool definitions are then validated against their revision's
    /// schema (results.schema, tools.definitions); without it those two checks are skipped.
    #[arg(long, value_name = "DIR")]
    spec_schemas: Option<PathBuf>,
    /// Write a JUnit XML report.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write a JSON report.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Check ids (`ID` or `ERA/ID`, one per line, `#` comments) expected to fail: they do not
    /// fail the run, and one that passes does (the entry is stale).
    #[arg(long, value_name = "FILE")]
    expected_failures: Option<PathBuf>,
}

#[derive(Clone, Debug)]
enum EraChoice {
    Both,
    One(Era),
}

fn parse_era(text: &str) -> Result<EraChoice, String> {
    if text == "both" {
        return Ok(EraChoice::Both);
    }
    Era::parse(text)
        .map(EraChoice::One)
        .ok_or_else(|| format!("{text}: not `both` nor a revision this checker knows ({})", Era::known().join(", ")))
}

fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once(':').ok_or("K:V expected")?;
    let name = name.trim();
    if name.is_empty() {
        return Err("an empty header name".into());
    }
    Ok((name.to_owned(), value.trim().to_owned()))
}

fn parse_call(text: &str) -> Result<(String, serde_json::Value), String> {
    let (name, json) = text.split_once('=').ok_or("NAME=JSON expected")?;
    let args: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("the arguments of {name}: {e}"))?;
    if !args.is_object() {
        return Err(format!("the arguments of {name} must be a JSON object"));
    }
    Ok((name.to_owned(), args))
}

#[derive(Args)]
// A repeated option overrides the earlier one, as the hand-written parser had it (the tests pass a
// default `--timeout-ms` first and a case's own after it).
#[command(args_override_self = true)]
struct RecordArgs {
    /// What the session does, written into the recording's header.
    #[arg(long, value_name = "TEXT")]
    description: Option<String>,
    /// HTTP proxy: once listening, write its URL to this file (written whole, then renamed).
    #[arg(long, value_name = "FILE", requires = "listen")]
    ready_file: Option<PathBuf>,
    /// HTTP proxy: where clients connect (`127.0.0.1:0` picks a free port).
    #[arg(long, value_name = "ADDR:PORT", requires = "target", conflicts_with = "command")]
    listen: Option<SocketAddr>,
    /// HTTP proxy: the server behind it (`http://HOST:PORT`).
    #[arg(long, value_name = "URL", requires = "listen")]
    target: Option<String>,
    /// The recording to write.
    #[arg(value_name = "OUT.jsonl")]
    out: PathBuf,
    /// stdio wrapper: the server command, after `--`.
    #[arg(last = true, value_name = "SERVER_CMD")]
    command: Vec<String>,
}

#[derive(Args)]
// A repeated option overrides the earlier one, as the hand-written parser had it (the tests pass a
// default `--timeout-ms` first and a case's own after it).
#[command(args_override_self = true)]
struct ReplayArgs {
    /// Recordings to replay.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Replay the client side against this server, started over stdio.
    #[arg(long, value_name = "CMD ARGS", required_unless_present_any = ["server_url", "client"], conflicts_with_all = ["server_url", "client"])]
    server: Option<String>,
    /// Replay the client side as raw HTTP exchanges against the server at this URL.
    #[arg(long, value_name = "URL", conflicts_with = "client")]
    server_url: Option<String>,
    /// Play the server side to this client.
    #[arg(long, value_name = "CMD ARGS")]
    client: Option<String>,
    /// Whose clock a replayed stdio server reads (default: what each recording's sidecar says).
    #[arg(long, value_enum)]
    clock: Option<ClockArg>,
    /// How long each expected message is waited for, in milliseconds (plus twice its recorded gap).
    #[arg(long, value_name = "N")]
    timeout_ms: Option<u64>,
    /// Write a JUnit XML report.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Session names expected to fail (one per line, `#` comments); a listed one that passes fails the run.
    #[arg(long, value_name = "FILE")]
    expected_failures: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ClockArg {
    Recorded,
    System,
}

#[derive(Args)]
// A repeated option overrides the earlier one, as the hand-written parser had it (the tests pass a
// default `--timeout-ms` first and a case's own after it).
#[command(args_override_self = true)]
struct ServeArgs {
    /// The directory standing for the recordings' `/tmp/mcp-fixtures`.
    #[arg(long, value_name = "DIR")]
    fixtures: Option<PathBuf>,
    /// Append every matched client message and every difference to this file (JSON lines).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Serve over HTTP on this address instead of stdin/stdout.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,
    /// The recording whose server side to play.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Check(args) => check_cmd(args),
        Command::Roundtrip { files } => roundtrip(files),
        Command::Record(args) => record_cmd(args),
        Command::Replay(args) => replay_cmd(args),
        Command::Serve(args) => serve_cmd(args),
    }
}

fn check_cmd(args: CheckArgs) -> ExitCode {
    let target = match (args.server, args.url) {
        (Some(_), None) if !args.headers.is_empty() || args.bearer_env.is_some() => {
            eprintln!("mcp-conformance check: --header and --bearer-env are for --url");
            return ExitCode::from(2);
        }
        (Some(command), None) => {
            let words = mcp_conformance::replay::split_command(&command);
            if words.is_empty() {
                eprintln!("mcp-conformance check: --server needs a command");
                return ExitCode::from(2);
            }
            Target::Stdio(words)
        }
        (None, Some(url)) => {
            let mut headers = args.headers;
            if let Some(var) = &args.bearer_env {
                match std::env::var(var) {
                    Ok(token) if !token.is_empty() => headers.push(("authorization".into(), format!("Bearer {token}"))),
                    _ => {
                        eprintln!("mcp-conformance check: --bearer-env {var}: the variable is not set");
                        return ExitCode::from(2);
                    }
                }
            }
            match args.transport {
                HttpTransport::Sse => Target::LegacySse { url, headers },
                _ => Target::Http { url, headers },
            }
        }
        _ => {
            eprintln!("mcp-conformance check: one of --server and --url");
            return ExitCode::from(2);
        }
    };
    let expected = match &args.expected_failures {
        None => check::Expected::default(),
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => check::Expected::parse(&text),
            Err(e) => {
                eprintln!("mcp-conformance check: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
    };
    let options = CheckOptions {
        target,
        eras: match args.era {
            EraChoice::Both => None,
            EraChoice::One(era) => Some(era),
        },
        timeout: Duration::from_millis(args.timeout_ms.max(1)),
        calls: args.calls,
        slow_tool: args.slow_tool,
        call_readonly: args.call_readonly,
        spec_schemas: args.spec_schemas,
        detect_legacy_sse: args.transport == HttpTransport::Auto,
    };
    let report = runtime().block_on(check::run(&options));
    let verdict = report.verdict(args.strict, &expected);
    print!("{}", report.render(args.strict, &expected));
    let mut ok = verdict;
    if let Some(path) = &args.junit {
        if let Err(e) = std::fs::write(path, report.junit(args.strict)) {
            eprintln!("mcp-conformance check: {}: {e}", path.display());
            ok = false;
        }
    }
    if let Some(path) = &args.json {
        if let Err(e) = std::fs::write(path, report.json(args.strict)) {
            eprintln!("mcp-conformance check: {}: {e}", path.display());
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn roundtrip(files: Vec<PathBuf>) -> ExitCode {
    let mut checks = Vec::new();
    for path in &files {
        match Recording::read(path) {
            Ok(recording) => checks.push(check_recording(&recording)),
            Err(e) => {
                eprintln!("mcp-conformance: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let mut report = String::new();
    write_report(&mut report, &checks).expect("writing to a String cannot fail");
    print!("{report}");
    if checks.iter().all(|c| c.failed() == 0) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn record_cmd(args: RecordArgs) -> ExitCode {
    let RecordArgs { description, ready_file, listen, target, out, command } = args;
    match (listen, target) {
        (Some(listen), Some(target)) => return record_http_cmd(out, description, listen, target, ready_file),
        (None, None) if !command.is_empty() => {}
        _ => {
            eprintln!("mcp-conformance record: either -- SERVER_CMD or --listen ADDR:PORT --target URL");
            return ExitCode::from(2);
        }
    }
    let options = RecordOptions { out, description, command };
    match runtime().block_on(record(&options)) {
        Ok(status) => {
            // Exit with the server's status (a signal counts as failure).
            let code = status.code().unwrap_or(1);
            std::process::exit(code)
        }
        Err(e) => {
            eprintln!("mcp-conformance record: {e}");
            ExitCode::from(1)
        }
    }
}

/// `record --listen --target`: the HTTP capture proxy until SIGINT or SIGTERM.
fn record_http_cmd(
    out: PathBuf,
    description: Option<String>,
    listen: std::net::SocketAddr,
    target: String,
    ready_file: Option<PathBuf>,
) -> ExitCode {
    use mcp_conformance::record_http::{record_http, HttpRecordOptions};
    use tokio::signal::unix::{signal, SignalKind};

    let options = HttpRecordOptions { out, description, listen, target };
    let result = runtime().block_on(async {
        let (mut interrupt, mut terminate) = match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
            (Ok(i), Ok(t)) => (i, t),
            (Err(e), _) | (_, Err(e)) => return Err(e),
        };
        let stop = async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        };
        let mut ready_error = None;
        let ready = |addr: std::net::SocketAddr| {
            let url = format!("http://{addr}");
            if let Some(path) = &ready_file {
                // Written whole, then renamed: a test polling for the file never reads half a URL.
                let partial = path.with_extension("partial");
                if let Err(e) =
                    std::fs::write(&partial, format!("{url}\n")).and_then(|()| std::fs::rename(&partial, path))
                {
                    ready_error = Some(e);
                }
            }
            eprintln!("mcp-conformance record: listening on {url}");
        };
        let summary = record_http(&options, ready, stop).await?;
        if let Some(e) = ready_error {
            eprintln!("mcp-conformance record: --ready-file: {e}");
        }
        Ok(summary)
    });
    match result {
        Ok(summary) => {
            eprintln!(
                "mcp-conformance record: wrote {} ({}, {} lines)",
                options.out.display(),
                summary.transport,
                summary.lines
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcp-conformance record: {e}");
            ExitCode::from(1)
        }
    }
}

fn replay_cmd(args: ReplayArgs) -> ExitCode {
    let ReplayArgs { files, server, server_url, client, clock, timeout_ms, junit: junit_out, expected_failures } = args;
    let mut options = ReplayOptions::default();
    if let Some(clock) = clock {
        options.clock = Some(match clock {
            ClockArg::Recorded => ClockMode::Recorded,
            ClockArg::System => ClockMode::System,
        });
    }
    if let Some(ms) = timeout_ms {
        options.timeout = Duration::from_millis(ms);
    }
    let mut expected = ExpectedFailures::default();
    if let Some(path) = expected_failures {
        match std::fs::read_to_string(&path) {
            Ok(text) => expected = ExpectedFailures::parse(&text),
            Err(e) => {
                eprintln!("mcp-conformance: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    let rt = runtime();
    let mut outcomes = Vec::new();
    match (server, client) {
        (None, None) if server_url.is_some() => {
            for file in &files {
                let url = server_url.as_deref().unwrap_or_default();
                outcomes.push(rt.block_on(mcp_conformance::replay::replay_http(file, url, options)));
            }
        }
        (Some(server), None) => {
            for file in &files {
                outcomes.push(rt.block_on(replay_stdio(file, &server, options)));
            }
        }
        (None, Some(client)) => {
            let runner = match std::env::current_exe() {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("mcp-conformance: where am I? {e}");
                    return ExitCode::from(1);
                }
            };
            for file in &files {
                outcomes.push(rt.block_on(replay_with_client(file, &client, &runner, options)));
            }
        }
        _ => {
            eprintln!(
                "mcp-conformance replay: one of --server \"CMD ARGS\", --server-url URL and --client \"CMD ARGS\""
            );
            return ExitCode::from(2);
        }
    }
    let (text, ok) = render(&outcomes, &expected);
    print!("{text}");
    if let Some(path) = junit_out {
        if let Err(e) = std::fs::write(&path, junit(&outcomes)) {
            eprintln!("mcp-conformance: {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn serve_cmd(args: ServeArgs) -> ExitCode {
    let ServeArgs { fixtures, report, listen, file: path } = args;
    let report = match report.map(|p| std::fs::OpenOptions::new().create(true).append(true).open(&p).map(|f| (p, f))) {
        None => None,
        Some(Ok((_, f))) => Some(std::sync::Mutex::new(f)),
        Some(Err(e)) => {
            eprintln!("mcp-conformance serve: --report: {e}");
            return ExitCode::from(2);
        }
    };
    let recording = match Recording::read(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp-conformance: {e}");
            return ExitCode::from(1);
        }
    };
    let rules = match Rules::for_recording(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp-conformance: {e}");
            return ExitCode::from(1);
        }
    };
    let matcher = Matcher::new(rules, fixtures.as_deref());
    if let Some(addr) = listen {
        return serve_http(recording, matcher, addr, report);
    }
    let events = |event: Event<'_>| serve_event(report.as_ref(), event);
    let result = runtime().block_on(async {
        let transport = StdioTransport::own_stdio(Limits::default());
        let result = serve_recording(&recording, &transport, &matcher, &events).await;
        let _ = transport.close().await;
        result
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-conformance serve: {e}");
            ExitCode::from(1)
        }
    }
}

/// What `serve` does with an event of the script: notes and differences go to stderr;
/// differences and matched client messages are appended to the `--report` file, if any.
fn serve_event(report: Option<&std::sync::Mutex<std::fs::File>>, event: Event<'_>) {
    let write = |line: ServeReportLine| {
        if let Some(file) = report {
            use std::io::Write as _;
            let mut text = serde_json::to_string(&line).expect("a report line serializes");
            text.push('\n');
            let _ = file.lock().expect("report lock").write_all(text.as_bytes());
        }
    };
    match event {
        Event::Note(line) => eprintln!("mcp-conformance serve: {line}"),
        Event::Failure(f) => {
            eprintln!("mcp-conformance serve: {f}");
            write(ServeReportLine::Failure(f.to_string()));
        }
        Event::Matched(seq) => write(ServeReportLine::Matched(seq)),
    }
}

/// `serve --listen`: the recorded server over HTTP, one script per session, until Ctrl-C
/// (SIGINT). Every session's events go to the one `--report` file; on Ctrl-C the server shuts
/// down (which ends every session) and the sessions get up to 5 s to report what was left.
fn serve_http(
    recording: Recording,
    matcher: Matcher,
    addr: std::net::SocketAddr,
    report: Option<std::sync::Mutex<std::fs::File>>,
) -> ExitCode {
    use std::sync::Arc;

    use mcp_conformance::serve_http::{Events, RecordedHttpServer};
    use mcpwire::transport::sse_http::HttpServer;

    let legacy = recording.header.transport == "sse";
    let (recording, matcher) = (Arc::new(recording), Arc::new(matcher));
    let events: Events = Arc::new(move |event: Event<'_>| serve_event(report.as_ref(), event));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    rt.block_on(async move {
        let (served, app) = RecordedHttpServer::new(recording, matcher, events);
        let server = match HttpServer::bind(served.config.clone().bind(addr), app).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("mcp-conformance serve: --listen {addr}: {e}");
                return ExitCode::from(1);
            }
        };
        println!("{}", if legacy { server.legacy_url() } else { server.url() });
        let _ = tokio::signal::ctrl_c().await;
        server.shutdown().await;
        served.stop();
        served.running.wait_until(tokio::time::Instant::now() + Duration::from_secs(5)).await;
        ExitCode::SUCCESS
    })
}
