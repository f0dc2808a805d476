//! typed-bench: `tools/call echo {text}` through a typed tool (`derived_tool`: schema derived,
//! arguments decoded into a struct) against the same tool untyped (`tool`: a hand-written
//! schema, arguments read from the JSON map), in one process and one run, in alternating
//! rounds; and what the full validator (feature `validation`, the `jsonschema` crate) costs per
//! call for the echo schema.
//!
//!   typed-bench [--rounds 10] [--n 20000] [--size 16] [--transport duplex|channel]
//!
//! Each round calls each variant `n` times, one call in flight, the order of the variants
//! swapped every round; a warm-up round first is not counted. Variants:
//! - `typed`: `derived_tool("echo", …, |EchoArgs { text }, _| …)`, as the echo demo serves it;
//! - `untyped`: `tool("echo_untyped", …, json!(schema), |args, _| args["text"] …)`;
//! - `untyped_full`: as `untyped` with `minLength: 0` added to `text`, which the server's
//!   flat-schema shortcut does not take: every call runs the full validator.
//!
//! Transports: `duplex` (default) is a tokio byte pipe with JSON lines, as stdio; `channel`
//! is the in-process pair (typed messages, no JSON). One JSON line per variant per round
//! (`calls_per_s`), then a summary: the median of each variant, the ratio typed / untyped,
//! and `validator_ns`: the time of one `Validator::check` of the echo arguments against the
//! echo tool's derived schema, and of the built-in subset validator, each the median of 5
//! runs of 200,000 checks.

use std::time::Instant;

use mcpwire::client::{Client, ClientOptions};
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock};
use mcpwire::proto::validate::{self, Validator};
use mcpwire::schemars::{self, JsonSchema};
use mcpwire::server::{text_result, Server, ToolError};
use mcpwire::transport::stdio::StdioTransport;
use mcpwire::transport::{inproc, Limits, Transport};
use serde::Deserialize;
use serde_json::{json, Map, Value};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to send back unchanged.
    text: String,
}

const VARIANTS: [&str; 3] = ["typed", "untyped", "untyped_full"];

fn server() -> Server {
    let schema = |extra: Value| {
        let mut text = json!({"type": "string", "description": "Text to send back unchanged."});
        text.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"type": "object", "properties": {"text": text}, "required": ["text"]})
    };
    let untyped = |args: Map<String, Value>, _ctx| async move {
        let text = args.get("text").and_then(Value::as_str).ok_or_else(|| ToolError::invalid_arguments("text"))?;
        Ok(text_result(text))
    };
    Server::builder()
        .derived_tool("typed", "Return the `text` argument as text content", |EchoArgs { text }, _ctx| async move {
            Ok(text_result(text))
        })
        .tool("untyped", "Return the `text` argument as text content", schema(json!({})), untyped)
        .tool("untyped_full", "Return the `text` argument as text content", schema(json!({"minLength": 0})), untyped)
        .build()
        .expect("valid tools")
}

struct Opts {
    rounds: usize,
    n: usize,
    size: usize,
    duplex: bool,
}

fn parse_args() -> Result<Opts, BoxError> {
    let mut o = Opts { rounds: 10, n: 20_000, size: 16, duplex: true };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--rounds" => o.rounds = value()?.parse()?,
            "--n" => o.n = value()?.parse()?,
            "--size" => o.size = value()?.parse()?,
            "--transport" => {
                o.duplex = match value()?.as_str() {
                    "duplex" => true,
                    "channel" => false,
                    other => return Err(format!("unknown transport {other}").into()),
                }
            }
            _ => return Err(format!("unknown argument {flag}; see the header of benches/typed_bench.rs").into()),
        }
    }
    Ok(o)
}

fn echoed(result: &CallToolResult, size: usize) -> bool {
    matches!(result.content.first(), Some(ContentBlock::Text(t)) if t.text.len() == size)
        && result.is_error != Some(true)
}

/// `n` sequential calls of `tool`; calls per second.
async fn round<T: Transport>(
    client: &Client<T>,
    tool: &str,
    args: &Map<String, Value>,
    n: usize,
) -> Result<f64, BoxError> {
    let size = args["text"].as_str().map_or(0, str::len);
    let start = Instant::now();
    for _ in 0..n {
        let result = client.call_tool(tool, Some(args.clone()), Default::default()).await?;
        if !echoed(&result, size) {
            return Err(format!("{tool}: unexpected result {result:?}").into());
        }
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Nanoseconds per call of `check`, the median of 5 runs of 200,000.
fn per_check(check: impl Fn() -> bool) -> f64 {
    const N: u32 = 200_000;
    median(
        (0..5)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..N {
                    assert!(std::hint::black_box(check()));
                }
                start.elapsed().as_nanos() as f64 / f64::from(N)
            })
            .collect(),
    )
}

async fn bench<T: Transport>(client: Client<T>, o: &Opts, transport: &str) -> Result<Value, BoxError> {
    let text: String = (0..o.size).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    let args = json!({"text": text}).as_object().unwrap().clone();
    for tool in VARIANTS {
        round(&client, tool, &args, o.n / 10 + 1).await?; // warm-up
    }
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
    for r in 0..o.rounds {
        let order: Vec<usize> = if r % 2 == 0 { vec![0, 1, 2] } else { vec![2, 1, 0] };
        for i in order {
            let rate = round(&client, VARIANTS[i], &args, o.n).await?;
            println!(
                "{}",
                json!({"scenario": "typed_vs_untyped", "transport": transport, "round": r, "variant": VARIANTS[i],
                       "payload_bytes": o.size, "n": o.n, "calls_per_s": rate.round()})
            );
            rates[i].push(rate);
        }
    }
    let _ = client.close().await;
    let medians: Vec<f64> = rates.into_iter().map(median).collect();
    Ok(json!({
        "typed": medians[0].round(), "untyped": medians[1].round(), "untyped_full": medians[2].round(),
        "typed_over_untyped": (medians[0] / medians[1] * 1000.0).round() / 1000.0,
        "full_over_untyped": (medians[2] / medians[1] * 1000.0).round() / 1000.0,
    }))
}

fn main() -> Result<(), BoxError> {
    let o = parse_args()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let summary = runtime.block_on(async {
        let server = server();
        if o.duplex {
            let (client_io, server_io) = tokio::io::duplex(64 * 1024);
            let (client_read, client_write) = tokio::io::split(client_io);
            let (server_read, server_write) = tokio::io::split(server_io);
            tokio::spawn(server.serve(StdioTransport::from_io(server_read, server_write, Limits::default())));
            let transport = StdioTransport::from_io(client_read, client_write, Limits::default());
            bench(Client::connect(transport, ClientOptions::default().with_request_timeout(None)).await?, &o, "duplex")
                .await
        } else {
            let (client_end, server_end) = inproc::pair(Limits::default());
            tokio::spawn(server.serve(server_end));
            bench(
                Client::connect(client_end, ClientOptions::default().with_request_timeout(None)).await?,
                &o,
                "channel",
            )
            .await
        }
    })?;
    let schema = server().tools().into_iter().find(|t| t.name == "typed").expect("typed").input_schema;
    let args = json!({"text": "abcdefghijklmnop"});
    let full = Validator::new(&schema)?;
    let full_ns = per_check(|| full.check(&args).is_ok());
    let builtin_ns = per_check(|| validate::validate(&schema, &args).is_ok());
    let mut summary = summary;
    summary["scenario"] = json!("summary");
    summary["rounds"] = json!(o.rounds);
    summary["validator_ns"] =
        json!({"full": (full_ns * 10.0).round() / 10.0, "builtin": (builtin_ns * 10.0).round() / 10.0});
    println!("{summary}");
    Ok(())
}
