//! `echo_server`: the echo server ([`mcpwire::server::echo`]: tools `echo {text}`, `add {a, b}`
//! and `greet`) — our counterpart of rmcp's `rmcp-echo-server`, used by the interop tests and
//! the benches.
//!
//! ```text
//! echo_server                          stdio (our own stdin/stdout)
//! echo_server --http ADDR [--stateless] Streamable HTTP at http://ADDR/mcp (legacy SSE at /sse);
//!                                      --stateless: no sessions, JSON responses
//! --threads N                          tokio worker threads (default 1: a current-thread
//!                                      runtime, the fastest for a server whose tools only do IO)
//! --state-secret-env VAR               seal 2026-07-28 requestState with the secret in env VAR
//!                                      (not on the command line, where `ps` shows it), so that
//!                                      processes sharing it resume each other's rounds; default:
//!                                      a random secret of this process
//! ```
//!
//! Over stdio it writes nothing but frames to stdout and exits when stdin ends, after answering
//! the calls in flight. Over HTTP it serves until interrupted (Ctrl-C, SIGTERM), then shuts down
//! gracefully.

use std::net::SocketAddr;

use mcpwire::server::echo::echo_builder;
use mcpwire::server::Server;
use mcpwire::transport::sse_http::{HttpServer, HttpServerConfig};

const USAGE: &str = "usage: echo_server [--http ADDR [--stateless]] [--threads N] [--state-secret-env VAR]";

struct Args {
    mode: Mode,
    threads: usize,
    state_secret: Option<Vec<u8>>,
}

enum Mode {
    Stdio,
    Http { addr: SocketAddr, stateless: bool },
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut addr, mut stateless, mut threads, mut state_secret) = (None, false, 1, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => {
                let value = args.next().ok_or("--http needs an address, e.g. 127.0.0.1:8931")?;
                addr = Some(value.parse::<SocketAddr>().map_err(|e| format!("--http {value}: {e}"))?);
            }
            "--stateless" => stateless = true,
            "--threads" => {
                let value = args.next().ok_or("--threads needs a number")?;
                threads = value.parse().map_err(|e| format!("--threads {value}: {e}"))?;
            }
            "--state-secret-env" => {
                let var = args.next().ok_or("--state-secret-env needs a variable name")?;
                let secret = std::env::var(&var).map_err(|_| format!("--state-secret-env: {var} is not set"))?;
                if secret.len() < 16 {
                    return Err(format!("--state-secret-env: {var} holds fewer than 16 bytes"));
                }
                state_secret = Some(secret.into_bytes());
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    let mode = match addr {
        Some(addr) => Mode::Http { addr, stateless },
        None if stateless => return Err(format!("--stateless needs --http\n{USAGE}")),
        None => Mode::Stdio,
    };
    Ok(Args { mode, threads, state_secret })
}

async fn serve_http(server: Server, addr: SocketAddr, stateless: bool) -> std::io::Result<()> {
    let config = HttpServerConfig::default().bind(addr).stateless(stateless);
    let http = HttpServer::bind(config, move |transport| {
        let serving = server.serve(transport);
        async move {
            let _ = serving.await;
        }
    })
    .await?;
    eprintln!("echo_server: serving {}", http.url());
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    http.shutdown().await;
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let runtime = match args.threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        n => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build(),
    };
    let runtime = runtime.unwrap_or_else(|e| {
        eprintln!("echo_server: cannot start the runtime: {e}");
        std::process::exit(1);
    });
    let mut builder = echo_builder();
    if let Some(secret) = args.state_secret {
        builder = builder.request_state_secret(secret);
    }
    let server = builder.build().expect("the echo server's tools are valid");
    let result = runtime.block_on(async {
        match args.mode {
            Mode::Stdio => server.serve_stdio().await.map_err(|e| e.to_string()),
            Mode::Http { addr, stateless } => serve_http(server, addr, stateless).await.map_err(|e| e.to_string()),
        }
    });
    if let Err(e) = result {
        eprintln!("echo_server: {e}");
        std::process::exit(1);
    }
}
