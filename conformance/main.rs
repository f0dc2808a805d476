//! `mcp-conformance`: checks MCP implementations against recorded sessions.
//!
//! Subcommands:
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

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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

const USAGE: &str = "usage: mcp-conformance roundtrip FILE...
       mcp-conformance record [--description TEXT] OUT.jsonl -- SERVER_CMD ARGS...
       mcp-conformance record [--description TEXT] [--ready-file FILE] OUT.jsonl --listen ADDR:PORT --target URL
       mcp-conformance replay FILE... (--server \"CMD ARGS\" [--clock recorded|system] | --server-url URL | --client \"CMD ARGS\") [--timeout-ms N] [--junit FILE] [--expected-failures FILE]
       mcp-conformance serve [--fixtures DIR] [--report FILE] [--listen ADDR:PORT] FILE";

fn usage_error(why: &str) -> ExitCode {
    eprintln!("mcp-conformance: {why}\n{USAGE}");
    ExitCode::from(2)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("roundtrip") => roundtrip(args.map(PathBuf::from).collect()),
        Some("record") => record_cmd(args.collect()),
        Some("replay") => replay_cmd(args.collect()),
        Some("serve") => serve_cmd(args.collect()),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => usage_error("which subcommand?"),
    }
}

fn roundtrip(files: Vec<PathBuf>) -> ExitCode {
    if files.is_empty() {
        return usage_error("roundtrip needs files");
    }
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

fn record_cmd(args: Vec<String>) -> ExitCode {
    let (before, command) = match args.iter().position(|a| a == "--") {
        Some(split) => (&args[..split], args[split + 1..].to_vec()),
        None => (&args[..], Vec::new()),
    };
    let mut description = None;
    let mut out = None;
    let mut listen = None;
    let mut target = None;
    let mut ready_file = None;
    let mut it = before.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--description" => description = it.next().cloned(),
            "--listen" => match it.next().and_then(|a| a.parse::<std::net::SocketAddr>().ok()) {
                Some(addr) => listen = Some(addr),
                None => return usage_error("--listen needs ADDR:PORT"),
            },
            "--target" => target = it.next().cloned(),
            "--ready-file" => ready_file = it.next().map(PathBuf::from),
            _ if a.starts_with("--") => return usage_error(&format!("unknown option {a}")),
            _ if out.is_none() => out = Some(PathBuf::from(a)),
            _ => return usage_error(&format!("unexpected argument {a}")),
        }
    }
    let Some(out) = out else { return usage_error("record needs OUT.jsonl") };
    match (listen, target, command.is_empty()) {
        (Some(listen), Some(target), true) => {
            return record_http_cmd(out, description, listen, target, ready_file);
        }
        (None, None, false) if ready_file.is_none() => {}
        _ => return usage_error("record needs either -- SERVER_CMD or --listen ADDR:PORT --target URL"),
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

fn replay_cmd(args: Vec<String>) -> ExitCode {
    let mut files = Vec::new();
    let mut server = None;
    let mut client = None;
    let mut server_url = None;
    let mut junit_out = None;
    let mut expected = ExpectedFailures::default();
    let mut options = ReplayOptions::default();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--server" => server = it.next(),
            "--client" => client = it.next(),
            "--server-url" => server_url = it.next(),
            "--junit" => junit_out = it.next().map(PathBuf::from),
            "--clock" => match it.next().as_deref().and_then(ClockMode::parse) {
                Some(mode) => options.clock = Some(mode),
                None => return usage_error("--clock needs recorded or system"),
            },
            "--timeout-ms" => match it.next().and_then(|v| v.parse::<u64>().ok()) {
                Some(ms) => options.timeout = Duration::from_millis(ms),
                None => return usage_error("--timeout-ms needs a number"),
            },
            "--expected-failures" => {
                let Some(path) = it.next() else { return usage_error("--expected-failures needs a file") };
                match std::fs::read_to_string(&path) {
                    Ok(text) => expected = ExpectedFailures::parse(&text),
                    Err(e) => {
                        eprintln!("mcp-conformance: {path}: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            _ if a.starts_with("--") => return usage_error(&format!("unknown option {a}")),
            _ => files.push(PathBuf::from(a)),
        }
    }
    if files.is_empty() {
        return usage_error("replay needs recordings");
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
            return usage_error("replay needs one of --server \"CMD ARGS\", --server-url URL and --client \"CMD ARGS\"")
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

fn serve_cmd(args: Vec<String>) -> ExitCode {
    let mut fixtures = None;
    let mut report = None;
    let mut listen = None;
    let mut file = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--fixtures" => fixtures = it.next().map(PathBuf::from),
            "--report" => report = it.next().map(PathBuf::from),
            "--listen" => match it.next().and_then(|a| a.parse::<std::net::SocketAddr>().ok()) {
                Some(addr) => listen = Some(addr),
                None => return usage_error("--listen needs ADDR:PORT"),
            },
            _ if a.starts_with("--") => return usage_error(&format!("unknown option {a}")),
            _ if file.is_none() => file = Some(PathBuf::from(a)),
            _ => return usage_error("serve needs exactly one recording"),
        }
    }
    let Some(path) = file else { return usage_error("serve needs exactly one recording") };
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

    use mcp_conformance::serve_stateless::MergedPosts;
    use mcpwire::transport::sse_http::{HttpServer, HttpServerConfig};

    let legacy = recording.header.transport == "sse";
    let stateless = recording.header.protocol_version.as_str() >= "2026-07-28";
    let recording = Arc::new(recording);
    let matcher = Arc::new(matcher);
    let report = Arc::new(report);
    // The recording is matched against what the client sent, as sent: params stay raw.
    let config = HttpServerConfig::default().bind(addr).legacy_sse(legacy).stateless(stateless).typed_params(false);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    rt.block_on(async move {
        // Sessions still running, and a wake-up when one ends.
        let running = Arc::new((std::sync::atomic::AtomicUsize::new(0), tokio::sync::Notify::new()));
        // Stateless (2026-07-28): every POST feeds one script (see serve_stateless).
        let merged = stateless.then(|| Arc::new(MergedPosts::new()));
        if let Some(merged) = merged.clone() {
            let (recording, matcher, report, running) =
                (recording.clone(), matcher.clone(), report.clone(), running.clone());
            running.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let events = |event: Event<'_>| serve_event(Option::as_ref(&report), event);
                if let Err(e) = serve_recording(&recording, &*merged, &matcher, &events).await {
                    eprintln!("mcp-conformance serve: {e}");
                }
                running.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                running.1.notify_waiters();
            });
        }
        let sessions = running.clone();
        let feeds = merged.clone();
        let app = move |transport: mcpwire::transport::sse_http::ServerTransport| {
            let recording = recording.clone();
            let matcher = Matcher::clone(&matcher);
            let report = report.clone();
            let running = sessions.clone();
            let merged = feeds.clone();
            if merged.is_none() {
                running.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            async move {
                if let Some(merged) = merged {
                    merged.feed(transport).await;
                    return;
                }
                let events = |event: Event<'_>| serve_event(Option::as_ref(&report), event);
                if let Err(e) = serve_recording(&recording, &transport, &matcher, &events).await {
                    eprintln!("mcp-conformance serve: {e}");
                }
                let _ = transport.close().await;
                running.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                running.1.notify_waiters();
            }
        };
        let server = match HttpServer::bind(config, app).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("mcp-conformance serve: --listen {addr}: {e}");
                return ExitCode::from(1);
            }
        };
        println!("{}", if legacy { server.legacy_url() } else { server.url() });
        let _ = tokio::signal::ctrl_c().await;
        server.shutdown().await;
        if let Some(merged) = &merged {
            merged.stop();
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let ended = running.1.notified();
            if running.0.load(std::sync::atomic::Ordering::SeqCst) == 0
                || tokio::time::timeout_at(deadline, ended).await.is_err()
            {
                break;
            }
        }
        ExitCode::SUCCESS
    })
}
