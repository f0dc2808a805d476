//! `echo_server`: the echo server (the bridge's demo, `demo/echo.rs`: tools `echo {text}`, `add {a, b}`
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
//! --replica NAME                       one of several replicas: adds the tools `whoami` (answers
//!                                      NAME), `count {n}` (n progress notifications, then
//!                                      `counted n`), `interview {n}` (n form elicitations, one
//!                                      after the other: n + 1 rounds of a 2026-07-28 multi-round
//!                                      request), `ask` (elicits a `name`, answers
//!                                      `NAME was told <name>`) and `announce` (adds a resource:
//!                                      `notifications/resources/list_changed` to every session
//!                                      here), and logs `echo_server NAME: ...` lines, with the
//!                                      HTTP server's own log (relays between replicas) on stderr
//! --session-store URL                  (feature `redis`) share handshake-era sessions and
//!                                      resumable streams through the Redis at URL
//!                                      (redis://host:port)
//! ```
//!
//! Over stdio it writes nothing but frames to stdout and exits when stdin ends, after answering
//! the calls in flight. Over HTTP it serves until interrupted (Ctrl-C, SIGTERM), then shuts down
//! gracefully.

use std::net::SocketAddr;
use std::sync::OnceLock;

#[path = "../demo/echo.rs"]
mod echo;
use echo::echo_builder;
use mcpwire::proto::mcp_types::{ElicitationSchema, StringSchema};
use mcpwire::server::{text_result, Server, ServerBuilder, ToolError};
use mcpwire::transport::sse_http::HttpServerConfig;
use serde_json::json;

const USAGE: &str = "usage: echo_server [--http ADDR [--stateless]] [--threads N] [--state-secret-env VAR] \
                     [--replica NAME] [--session-store redis://HOST:PORT]";

struct Args {
    mode: Mode,
    threads: usize,
    state_secret: Option<Vec<u8>>,
    replica: Option<String>,
    session_store: Option<String>,
}

enum Mode {
    Stdio,
    Http { addr: SocketAddr, stateless: bool },
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut addr, mut stateless, mut threads, mut state_secret) = (None, false, 1, None);
    let (mut replica, mut session_store) = (None, None);
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
            "--replica" => replica = Some(args.next().ok_or("--replica needs a name")?),
            "--session-store" => session_store = Some(args.next().ok_or("--session-store needs a redis:// URL")?),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    let mode = match addr {
        Some(addr) => Mode::Http { addr, stateless },
        None if stateless => return Err(format!("--stateless needs --http\n{USAGE}")),
        None => Mode::Stdio,
    };
    if session_store.is_some() && !matches!(mode, Mode::Http { stateless: false, .. }) {
        return Err(format!("--session-store needs --http without --stateless\n{USAGE}"));
    }
    Ok(Args { mode, threads, state_secret, replica, session_store })
}

async fn serve_http(server: Server, addr: SocketAddr, stateless: bool, store: Option<String>) -> Result<(), String> {
    let mut config = HttpServerConfig::default().bind(addr).stateless(stateless);
    if let Some(url) = store {
        config = with_session_store(config, &url).await?;
    }
    let http = server.serve_http(config).await.map_err(|e| e.to_string())?;
    eprintln!("echo_server: serving {}", http.url());
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|e| e.to_string())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    http.shutdown().await;
    Ok(())
}

/// The HTTP server's log (`tracing`) on stderr, one plain line per event.
fn log_to_stderr() {
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).with_target(false).try_init();
}

#[cfg(feature = "redis")]
async fn with_session_store(config: HttpServerConfig, url: &str) -> Result<HttpServerConfig, String> {
    use mcpwire::transport::sse_http::redis_store::{RedisOptions, RedisStore};
    let store =
        std::sync::Arc::new(RedisStore::connect(url, RedisOptions::default()).await.map_err(|e| e.to_string())?);
    eprintln!("echo_server: sessions and streams shared through Redis");
    Ok(config.session_store(store.clone()).event_store(store))
}

#[cfg(not(feature = "redis"))]
async fn with_session_store(_config: HttpServerConfig, _url: &str) -> Result<HttpServerConfig, String> {
    Err("--session-store needs a build with the `redis` feature".to_owned())
}

/// The server being served, for the tool that changes its resources.
static SERVER: OnceLock<Server> = OnceLock::new();

/// The tools of a replica named `name`: which one answered, a stream of progress, a
/// multi-round request whose rounds it logs, an elicitation, and a change announced to every
/// session.
fn replica_tools(builder: ServerBuilder, name: String) -> ServerBuilder {
    let interviewer = name.clone();
    let (asked_by, announced_by) = (name.clone(), name.clone());
    builder
        .enable_resources()
        .tool("ask", "Ask the user for a name (elicitation)", json!({"type": "object"}), move |_args, ctx| {
            let name = asked_by.clone();
            async move {
                eprintln!("echo_server {name}: tools/call ask");
                let schema = ElicitationSchema::new().required_field("name", StringSchema::new());
                let answer = ctx.elicit("Your name?", schema).await.map_err(|e| ToolError::failed(e.to_string()))?;
                let content = answer.content.and_then(|c| serde_json::to_value(c).ok()).unwrap_or_default();
                let told = content["name"].as_str().unwrap_or("nothing").to_owned();
                Ok(text_result(format!("{name} was told {told}")))
            }
        })
        .tool(
            "announce",
            "Add a resource, announced to every session (notifications/resources/list_changed)",
            json!({"type": "object"}),
            move |_args, _ctx| {
                let name = announced_by.clone();
                async move {
                    eprintln!("echo_server {name}: tools/call announce");
                    let server = SERVER.get().ok_or_else(|| ToolError::failed("the server is not built yet"))?;
                    let uri = format!("echo://{name}/{}", server.resources().len());
                    let resource = mcpwire::proto::mcp_types::Resource::new(uri.clone(), uri.clone());
                    server.add_resource_text(resource, "announced");
                    Ok(text_result(format!("{name} announced {uri}")))
                }
            },
        )
        .tool("whoami", "The name of the replica that answers", json!({"type": "object"}), move |_args, _ctx| {
            let name = name.clone();
            async move {
                eprintln!("echo_server {name}: tools/call whoami");
                Ok(text_result(name))
            }
        })
        .tool(
            "count",
            "Send n progress notifications, then answer `counted n`",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            |args, ctx| async move {
                let n = args.get("n").and_then(serde_json::Value::as_u64).unwrap_or(3).min(1000);
                for i in 1..=n {
                    let _ = ctx.progress(i as f64, Some(n as f64), None).await;
                }
                Ok(text_result(format!("counted {n}")))
            },
        )
        .tool(
            "interview",
            "Ask n questions one after the other (a form elicitation each), then answer with the answers",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            move |args, ctx| {
                let name = interviewer.clone();
                async move {
                    // In 2026-07-28 the handler runs once per round (the answers so far come
                    // back in `requestState`): one line per round, on the replica serving it.
                    eprintln!("echo_server {name}: tools/call interview");
                    let n = args.get("n").and_then(serde_json::Value::as_u64).unwrap_or(2).clamp(1, 10);
                    let mut answers = Vec::new();
                    for i in 1..=n {
                        let form = json!({"type": "object", "properties": {"answer": {"type": "string"}},
                            "required": ["answer"]});
                        let form = serde_json::from_value(form).expect("a valid elicitation form");
                        let reply = ctx.elicit(format!("Question {i} of {n}?"), form).await?;
                        let answer = reply
                            .content
                            .as_ref()
                            .and_then(|c| c.get("answer"))
                            .and_then(|v| serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)));
                        answers.push(answer.unwrap_or_else(|| "-".to_owned()));
                    }
                    Ok(text_result(format!("answered {}", answers.join(", "))))
                }
            },
        )
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
    if let Some(name) = args.replica.clone() {
        builder = replica_tools(builder, name);
    }
    if let Some(secret) = args.state_secret {
        builder = builder.request_state_secret(secret);
    }
    let server = builder.build().expect("the echo server's tools are valid");
    if args.replica.is_some() {
        let _ = SERVER.set(server.clone());
        log_to_stderr();
    }
    let result = runtime.block_on(async {
        match args.mode {
            Mode::Stdio => server.serve_stdio().await.map_err(|e| e.to_string()),
            Mode::Http { addr, stateless } => serve_http(server, addr, stateless, args.session_store).await,
        }
    });
    if let Err(e) = result {
        eprintln!("echo_server: {e}");
        std::process::exit(1);
    }
}
