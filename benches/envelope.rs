//! Decode speed of JSON-RPC envelopes and typed MCP results, against the floor.
//!
//! For `tools/call` results of 16 B to 1 MiB of text it measures:
//! - `floor`: `serde_json::from_slice::<IgnoredAny>` — validating the JSON and nothing else;
//! - `envelope`: `jsonrpc::decode` — validation plus the envelope, with the result kept raw;
//! - `typed`: `envelope` plus decoding the result into `CallToolResult`;
//! - `typed_one_pass`: `jsonrpc::decode_answer` for `tools/call` — the envelope and the result,
//!   decoded into `CallToolOutput` in one pass (what the HTTP client does with a tool's answer);
//! - `result_value`: the result's JSON text alone decoded into a `serde_json::Value` — what
//!   serde_json's string unescaping and allocation cost, the floor of any owned typed decode.
//!
//! One JSON line per scenario on stdout, with the ratio of each to the floor's throughput
//! (1.0 = as fast as the floor). `cargo bench --bench envelope` measures for about a second per
//! cell (15 interleaved rounds, best of each); `-- --quick`, or a run without `--bench` (as
//! `cargo test --bench envelope` runs it: CI does that), runs each cell briefly, only to prove
//! the bench works.

use std::hint::black_box;
use std::time::{Duration, Instant};

use mcpwire::proto::jsonrpc::{decode, decode_answer, Message, Payload};
use mcpwire::proto::mcp_types::{CallToolResult, ClientTypedResults};

const SIZES: [usize; 6] = [16, 256, 4096, 65536, 262_144, 1_048_576];

/// A `tools/call` response whose text content has `size` bytes, with an escape every 64 bytes
/// as real text has (newlines, quotes).
fn call_tool_response(size: usize) -> Vec<u8> {
    let mut text = String::with_capacity(size + size / 32);
    while text.len() < size {
        let chunk = "the quick brown fox jumps over the lazy dog 0123456789 abcdefgh";
        text.push_str(&chunk[..chunk.len().min(size - text.len())]);
        if text.len() < size {
            text.push('\n');
        }
    }
    let result = serde_json::json!({"content": [{"type": "text", "text": text}], "isError": false});
    serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": result})).unwrap()
}

/// Nanoseconds per call of `f`, run in chunks of about `chunk`.
fn time_chunk(chunk: Duration, f: &mut dyn FnMut()) -> f64 {
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < chunk {
        for _ in 0..8 {
            f();
        }
        calls += 8;
    }
    start.elapsed().as_nanos() as f64 / calls as f64
}

/// Best nanoseconds per call of each scenario over `rounds` rounds. Scenarios take turns
/// within a round, so a slow spell on this shared machine hits them all alike.
fn best_of_rounds(rounds: usize, chunk: Duration, scenarios: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; scenarios.len()];
    for _ in 0..rounds {
        for (f, best) in scenarios.iter_mut().zip(best.iter_mut()) {
            *best = best.min(time_chunk(chunk, *f));
        }
    }
    best
}

fn envelope(bytes: &[u8]) -> Message {
    match decode(bytes, None).expect("valid message") {
        Payload::Single(m) => m,
        Payload::Batch(_) => unreachable!("not a batch"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick") || !args.iter().any(|a| a == "--bench");
    let (rounds, chunk) = if quick { (2, Duration::from_millis(5)) } else { (15, Duration::from_millis(100)) };
    for size in SIZES {
        let bytes = call_tool_response(size);
        let mut floor = || {
            black_box(serde_json::from_slice::<serde::de::IgnoredAny>(black_box(&bytes)).unwrap());
        };
        let mut env = || {
            black_box(envelope(black_box(&bytes)));
        };
        let mut typed = || {
            let Message::Response(r) = envelope(black_box(&bytes)) else { unreachable!() };
            black_box(r.result_as::<CallToolResult>().unwrap());
        };
        let mut one_pass = || {
            let Ok(Payload::Single(Message::Response(r))) =
                decode_answer::<ClientTypedResults>(black_box(&bytes), None, "tools/call")
            else {
                unreachable!()
            };
            assert!(r.result.as_raw().is_none(), "decoded typed");
            black_box(r);
        };
        let Message::Response(response) = envelope(&bytes) else { unreachable!("a response") };
        let result = response.result.as_raw().expect("read from JSON").get().to_owned();
        let mut value = || {
            black_box(serde_json::from_str::<serde_json::Value>(black_box(&result)).unwrap());
        };
        let times = best_of_rounds(rounds, chunk, &mut [&mut floor, &mut env, &mut typed, &mut one_pass, &mut value]);
        let (floor, env, typed, one_pass, value) = (times[0], times[1], times[2], times[3], times[4]);
        for (scenario, ns) in [
            ("floor", floor),
            ("envelope", env),
            ("typed", typed),
            ("typed_one_pass", one_pass),
            ("result_value", value),
        ] {
            println!(
                "{{\"bench\":\"decode\",\"scenario\":\"{scenario}\",\"payload_bytes\":{size},\"frame_bytes\":{},\"ns_per_op\":{:.0},\"mib_per_s\":{:.1},\"ratio_to_floor\":{:.3},\"quick\":{quick}}}",
                bytes.len(),
                ns,
                bytes.len() as f64 / ns * 1e9 / (1024.0 * 1024.0),
                floor / ns,
            );
        }
    }
}
