//! mcp-bench: throughput and latency of `tools/call echo {text}` through the mcpwire client,
//! with the scenarios, flags and JSON fields of rmcp-bench (`../shared/peers/rmcp-peer`), so
//! the two can be crossed against each other's servers.
//!
//!   mcp-bench [--n 2000] [--concurrency 16] [--sizes 16,65536] [--startup-runs 20]
//!             [--stdio "CMD ARG.."]... [--http URL]... [--h2c URL]... [--inproc]
//!
//! --stdio   spawn CMD as a child process and speak MCP over its stdin/stdout (split on
//!           whitespace; any stdio MCP server with an `echo {text}` tool)
//! --http    Streamable HTTP endpoint, e.g. http://127.0.0.1:8931/mcp
//! --h2c     the same over HTTP/2 with prior knowledge (cleartext; one connection, a stream
//!           per request)
//! --threads tokio worker threads of this client (default 1: a current-thread runtime)
//! --tool    the echo tool's name (default `echo`; e.g. `mcp__echo__echo` behind a gateway that
//!           qualifies names)
//! --era     legacy (default: initialize, as rmcp-bench speaks), auto or 2026-07-28 (stateless;
//!           with a 2026-07-28 server over HTTP: no session, every POST on its own)
//! --inproc  mcpwire's echo server in this process, over the in-process transport (typed
//!           messages, no JSON) and over a tokio duplex byte pipe (JSON lines, like stdio);
//!           --inproc-channel / --inproc-duplex for one of the two
//! --inproc-floor  the thinnest in-process echo pair this runtime allows, for scale: a handle
//!           sends each call (an id and the argument's text) over a tokio mpsc to one server
//!           task that answers through the call's oneshot; no MCP, no JSON, no task per call
//! No target => `--stdio "<dir of this exe>/examples/echo_server" --inproc`
//!
//! Per target: `startup` (spawn/connect until `notifications/initialized` is sent,
//! --startup-runs times), then for each size `echo` at concurrency 1 and C (C tasks, each
//! keeping one call in flight), after a warm-up of 10% of N (10..200) calls; then
//! `server_peak_rss` of a stdio child; last `bench_peak_rss` of this process. One JSON object
//! per line.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpwire::client::{Client, ClientOptions, EraPolicy};
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock};
#[path = "../bridge/demo/echo.rs"]
mod echo;
use echo::echo_server;
use mcpwire::transport::inproc;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use mcpwire::transport::stdio::{ChildCommand, StdioTransport};
use mcpwire::transport::Limits;
use serde_json::{json, Map, Value};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Clone, Debug)]
enum Target {
    Stdio(Vec<String>),
    Http(String),
    H2c(String),
    InprocChannel,
    InprocDuplex,
    InprocFloor,
}

impl Target {
    fn label(&self) -> (String, &'static str) {
        match self {
            Target::Stdio(cmd) => (cmd.join(" "), "stdio"),
            Target::Http(url) => (url.clone(), "http"),
            Target::H2c(url) => (url.clone(), "h2c"),
            Target::InprocChannel => ("mcpwire echo_server".into(), "inproc-channel"),
            Target::InprocDuplex => ("mcpwire echo_server".into(), "inproc-duplex"),
            Target::InprocFloor => ("tokio mpsc + oneshot echo".into(), "inproc-floor"),
        }
    }
}

/// A connected client over whichever transport the target uses.
enum Connected {
    Stdio(Client<StdioTransport>),
    Http(Client<HttpClientTransport>),
    Channel(Client<inproc::InprocTransport>),
    Duplex(Client<StdioTransport>),
    Floor(floor::EchoClient),
}

fn options(era: EraPolicy) -> ClientOptions {
    // No client-side timeout: a slow call is measured, not cut off.
    ClientOptions::default()
        .with_client_info("mcp-bench", env!("CARGO_PKG_VERSION"))
        .with_request_timeout(None)
        .with_era(era)
}

async fn connect(target: &Target, era: EraPolicy) -> Result<(Connected, Option<u32>), BoxError> {
    Ok(match target {
        Target::Stdio(cmd) => {
            let client = Client::spawn(ChildCommand::new(&cmd[0]).args(&cmd[1..]), options(era)).await?;
            let pid = client.transport().child_pid();
            (Connected::Stdio(client), pid)
        }
        Target::Http(url) | Target::H2c(url) => {
            let h2c = matches!(target, Target::H2c(_));
            let config = HttpClientConfig::new(url.clone()).http2_prior_knowledge(h2c);
            let transport = HttpClientTransport::new(config)?;
            (Connected::Http(Client::connect(transport, options(era)).await?), None)
        }
        Target::InprocChannel => {
            let (client_end, server_end) = inproc::pair(Limits::default());
            tokio::spawn(echo_server().serve(server_end));
            (Connected::Channel(Client::connect(client_end, options(era)).await?), None)
        }
        Target::InprocDuplex => {
            // 64 KiB buffer, like a Linux pipe (and like rmcp-bench's inproc-duplex).
            let (client_io, server_io) = tokio::io::duplex(64 * 1024);
            let (client_read, client_write) = tokio::io::split(client_io);
            let (server_read, server_write) = tokio::io::split(server_io);
            tokio::spawn(echo_server().serve(StdioTransport::from_io(server_read, server_write, Limits::default())));
            let transport = StdioTransport::from_io(client_read, client_write, Limits::default());
            (Connected::Duplex(Client::connect(transport, options(era)).await?), None)
        }
        Target::InprocFloor => (Connected::Floor(floor::EchoClient::spawn(Limits::default().queue_depth)), None),
    })
}

impl Connected {
    /// One call of the echo tool: the length of the text echoed, `None` for an error result or
    /// one that is not text.
    async fn call(&self, tool: &str, args: &Map<String, Value>) -> Result<Option<usize>, BoxError> {
        if let Connected::Floor(c) = self {
            let text = args.get("text").and_then(Value::as_str).ok_or("echo needs a text argument")?;
            return Ok(Some(c.echo(text.to_owned()).await?.len()));
        }
        let args = Some(args.clone());
        let result = match self {
            Connected::Stdio(c) | Connected::Duplex(c) => c.call_tool(tool, args, Default::default()).await?,
            Connected::Http(c) => c.call_tool(tool, args, Default::default()).await?,
            Connected::Channel(c) => c.call_tool(tool, args, Default::default()).await?,
            Connected::Floor(_) => unreachable!("answered above"),
        };
        Ok(echoed_len(&result))
    }

    async fn has_tool(&self, tool: &str) -> Result<bool, BoxError> {
        let tools = match self {
            Connected::Stdio(c) | Connected::Duplex(c) => c.list_tools().await?,
            Connected::Http(c) => c.list_tools().await?,
            Connected::Channel(c) => c.list_tools().await?,
            Connected::Floor(_) => return Ok(true),
        };
        Ok(tools.iter().any(|t| t.name == tool))
    }

    async fn close(&self) {
        let _ = match self {
            Connected::Stdio(c) | Connected::Duplex(c) => c.close().await,
            Connected::Http(c) => c.close().await,
            Connected::Channel(c) => c.close().await,
            // The server task ends when the handle's sender is dropped.
            Connected::Floor(_) => Ok(()),
        };
    }
}

struct Opts {
    n: usize,
    concurrency: usize,
    sizes: Vec<usize>,
    startup_runs: usize,
    threads: usize,
    /// The era the client runs: `legacy` by default, the handshake era that rmcp-bench speaks,
    /// so the cells compare the same protocol (and startup has no probe).
    era: EraPolicy,
    /// The name of the echo tool.
    tool: Arc<str>,
    targets: Vec<Target>,
}

fn parse_args() -> Result<Opts, BoxError> {
    let mut o = Opts {
        n: 2000,
        concurrency: 16,
        sizes: vec![16, 65536],
        startup_runs: 20,
        threads: 1,
        era: EraPolicy::Legacy,
        tool: Arc::from("echo"),
        targets: vec![],
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--n" => o.n = value()?.parse()?,
            "--concurrency" => o.concurrency = value()?.parse()?,
            "--startup-runs" => o.startup_runs = value()?.parse()?,
            "--threads" => o.threads = value()?.parse()?,
            "--era" => o.era = value()?.parse()?,
            "--tool" => o.tool = Arc::from(value()?),
            "--sizes" => o.sizes = value()?.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "--stdio" => o.targets.push(Target::Stdio(value()?.split_whitespace().map(String::from).collect())),
            "--http" => o.targets.push(Target::Http(value()?)),
            "--h2c" => o.targets.push(Target::H2c(value()?)),
            "--inproc" => o.targets.extend([Target::InprocChannel, Target::InprocDuplex]),
            "--inproc-channel" => o.targets.push(Target::InprocChannel),
            "--inproc-duplex" => o.targets.push(Target::InprocDuplex),
            "--inproc-floor" => o.targets.push(Target::InprocFloor),
            // `cargo bench` passes --bench; nothing to do with it.
            "--bench" => {}
            _ => return Err(format!("unknown argument {flag}; see the header of benches/mcp_bench.rs").into()),
        }
    }
    if o.targets.is_empty() {
        let exe = std::env::current_exe()?;
        let server = exe.parent().and_then(|d| d.parent()).map(|d| d.join("examples/echo_server"));
        let server =
            server.filter(|p| p.exists()).ok_or("no target given and no examples/echo_server beside this binary")?;
        o.targets.push(Target::Stdio(vec![server.to_string_lossy().into_owned()]));
        o.targets.extend([Target::InprocChannel, Target::InprocDuplex]);
    }
    Ok(o)
}

fn echo_args(size: usize) -> Map<String, Value> {
    let text: String = (0..size).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    let mut args = Map::new();
    args.insert("text".into(), Value::String(text));
    args
}

/// The length of the text `result` echoes; `None` for an error or a result that is not text.
fn echoed_len(result: &CallToolResult) -> Option<usize> {
    match result.content.first() {
        Some(ContentBlock::Text(t)) if result.is_error != Some(true) => Some(t.text.len()),
        _ => None,
    }
}

/// `n` calls spread over `concurrency` tasks that each keep one call in flight.
async fn run_calls(
    client: &Arc<Connected>,
    tool: &Arc<str>,
    size: usize,
    n: usize,
    concurrency: usize,
) -> (Vec<Duration>, usize, Duration) {
    let args = Arc::new(echo_args(size));
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, tool, args, next) = (client.clone(), tool.clone(), args.clone(), next.clone());
            tokio::spawn(async move {
                let (mut lat, mut errors) = (Vec::new(), 0);
                while next.fetch_add(1, Ordering::Relaxed) < n {
                    let t = Instant::now();
                    match client.call(&tool, &args).await {
                        Ok(Some(echoed)) if echoed == size => lat.push(t.elapsed()),
                        _ => errors += 1,
                    }
                }
                (lat, errors)
            })
        })
        .collect();
    let (mut all, mut errors) = (Vec::with_capacity(n), 0);
    for w in workers {
        let (lat, e) = w.await.expect("worker panicked");
        all.extend(lat);
        errors += e;
    }
    (all, errors, start.elapsed())
}

fn pct(sorted: &[Duration], p: usize) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)].as_secs_f64()
}

fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

/// Peak resident set size (VmHWM) of a process, in KiB (Linux only).
fn peak_rss_kb(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

async fn bench_target(target: &Target, o: &Opts) -> Result<(), BoxError> {
    let (name, transport) = target.label();
    let base = json!({ "target": name, "transport": transport, "client": "mcp-bench", "era": o.era.to_string() });
    let emit = |mut extra: Value| {
        let mut line = base.clone();
        line.as_object_mut().unwrap().append(extra.as_object_mut().unwrap());
        println!("{line}");
    };

    let mut startup = Vec::with_capacity(o.startup_runs);
    for _ in 0..o.startup_runs {
        let t = Instant::now();
        let (client, _) = connect(target, o.era).await?;
        startup.push(t.elapsed());
        client.close().await;
    }
    startup.sort();
    if !startup.is_empty() {
        let ms = |d: Duration| round(d.as_secs_f64() * 1e3, 3);
        emit(json!({ "scenario": "startup", "runs": startup.len(),
            "p50_ms": round(pct(&startup, 50) * 1e3, 3), "min_ms": ms(startup[0]),
            "max_ms": ms(*startup.last().unwrap()) }));
    }

    let (client, pid) = connect(target, o.era).await?;
    let client = Arc::new(client);
    if !client.has_tool(&o.tool).await? {
        return Err(format!("{name}: server has no `{}` tool", o.tool).into());
    }
    for &size in &o.sizes {
        run_calls(&client, &o.tool, size, (o.n / 10).clamp(10, 200), 1).await; // warm-up
        for concurrency in [1, o.concurrency] {
            let (mut lat, errors, elapsed) = run_calls(&client, &o.tool, size, o.n, concurrency).await;
            lat.sort();
            emit(json!({ "scenario": "echo", "payload_bytes": size, "concurrency": concurrency,
                "n": o.n, "errors": errors, "elapsed_ms": round(elapsed.as_secs_f64() * 1e3, 1),
                "calls_per_s": round(lat.len() as f64 / elapsed.as_secs_f64(), 0),
                "p50_us": round(pct(&lat, 50) * 1e6, 1), "p99_us": round(pct(&lat, 99) * 1e6, 1),
                "max_us": round(lat.last().map_or(f64::NAN, |d| d.as_secs_f64() * 1e6), 1) }));
        }
    }
    if let Some(rss) = pid.and_then(|p| peak_rss_kb(&p.to_string())) {
        emit(json!({ "scenario": "server_peak_rss", "kb": rss }));
    }
    client.close().await;
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let o = parse_args()?;
    let runtime = match o.threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread().enable_all().build()?,
        n => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build()?,
    };
    runtime.block_on(run(o))
}

async fn run(o: Opts) -> Result<(), BoxError> {
    for target in &o.targets {
        if let Err(e) = bench_target(target, &o).await {
            eprintln!("mcp-bench: {target:?}: {e}");
            std::process::exit(1);
        }
    }
    println!("{}", json!({ "scenario": "bench_peak_rss", "client": "mcp-bench", "kb": peak_rss_kb("self") }));
    Ok(())
}

/// The thinnest in-process echo pair a tokio program can have, to set our in-process pair's
/// figures against: what any pair of a caller and a server task pays for a call (one channel
/// send, one server task woken per batch, one oneshot answer that wakes the caller), and
/// nothing of MCP (no JSON-RPC ids matched by a reader task, no session, no task per call).
mod floor {
    use std::sync::atomic::{AtomicU64, Ordering};

    use tokio::sync::{mpsc, oneshot};

    /// One call: its id, the argument, and where to answer.
    struct Request {
        id: u64,
        text: String,
        reply: oneshot::Sender<Response>,
    }

    struct Response {
        id: u64,
        text: String,
    }

    /// The caller's end; calls from many tasks are in flight at once, each awaiting its oneshot.
    pub struct EchoClient {
        requests: mpsc::Sender<Request>,
        next_id: AtomicU64,
    }

    /// The server ended before it answered.
    #[derive(Debug)]
    pub struct Closed;

    impl std::fmt::Display for Closed {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the floor's echo server is gone")
        }
    }

    impl std::error::Error for Closed {}

    impl EchoClient {
        /// A client and its server task (spawned on the current runtime), `depth` requests queued
        /// at most, as our in-process pair's channel.
        pub fn spawn(depth: usize) -> Self {
            let (requests, incoming) = mpsc::channel(depth.max(1));
            tokio::spawn(serve(incoming));
            EchoClient { requests, next_id: AtomicU64::new(1) }
        }

        /// Sends `text` and waits for it to come back.
        pub async fn echo(&self, text: String) -> Result<String, Closed> {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let (reply, answer) = oneshot::channel();
            self.requests.send(Request { id, text, reply }).await.map_err(|_| Closed)?;
            let response = answer.await.map_err(|_| Closed)?;
            debug_assert_eq!(response.id, id);
            Ok(response.text)
        }
    }

    /// Answers each request in the order it comes, in this task: the echo is the argument moved back.
    async fn serve(mut incoming: mpsc::Receiver<Request>) {
        while let Some(Request { id, text, reply }) = incoming.recv().await {
            // A caller that stopped waiting has nothing to receive.
            let _ = reply.send(Response { id, text });
        }
    }
}
