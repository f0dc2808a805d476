//! tokio-floor: the floor of an async stdio pair — what the rmcp peer's floor-bench and
//! floor-echo-server do, one JSON parse and one JSON write per message, but with tokio's reactor
//! in place of blocking reads and writes. Nothing else: no tasks besides the one loop, no
//! channels, no MCP layers.
//!
//! ```text
//! tokio-floor serve [--spin-us N]                                  # a stdio echo server
//! tokio-floor bench --stdio CMD [--n N] [--concurrency C] [--sizes 16,65536] [--spin-us N]
//! ```
//!
//! `serve` answers `initialize`, `tools/list` and `tools/call echo` on stdin/stdout (reopened as
//! non-blocking pipes driven by the reactor, as mcpwire's stdio transport does); `bench` spawns
//! CMD, initializes it and makes `tools/call echo` calls with C in flight, printing one JSON
//! line per cell with mcp-bench's fields. Both run on a current-thread runtime. `--spin-us N`
//! polls the pipe for up to N µs (yielding the thread between polls) before waiting on the
//! reactor, with the back-offs of `Limits::read_spin` in mcpwire's transport; 0 (the default)
//! waits at once.
//!
//! Measured beside the blocking floor pair and our pair (docs/benchmarks.md), it tells what the
//! reactor itself costs per call on this machine, which no tokio-based MCP stack can avoid.
//! A measuring instrument, not an MCP server.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let spin = Duration::from_micros(flag("--spin-us").map_or(Ok(0), |v| v.parse())?);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    match args.first().map(String::as_str) {
        Some("serve") => runtime.block_on(serve(spin)),
        Some("bench") => {
            let cmd = flag("--stdio").ok_or("bench --stdio CMD")?;
            let n: usize = flag("--n").map_or(Ok(5000), |v| v.parse())?;
            let concurrency: usize = flag("--concurrency").map_or(Ok(16), |v| v.parse())?;
            let sizes: Vec<usize> = match flag("--sizes") {
                Some(list) => list.split(',').map(str::parse).collect::<Result<_, _>>()?,
                None => vec![16, 65536],
            };
            runtime.block_on(bench(&cmd, n, concurrency, &sizes, spin))
        }
        _ => {
            Err("usage: tokio-floor serve | bench --stdio CMD [--n N] [--concurrency C] [--sizes S] [--spin-us N]"
                .into())
        }
    }
}

/// Lines read from a byte stream, each handed out without its newline.
struct Lines<R> {
    io: R,
    buf: Vec<u8>,
    start: usize,
    spin: Duration,
    spin_off: u32,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    fn new(io: R, spin: Duration) -> Self {
        Lines { io, buf: Vec::with_capacity(64 * 1024), start: 0, spin, spin_off: 0 }
    }

    /// The next line, or `None` at the end of the stream.
    async fn next(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(at) = self.buf[self.start..].iter().position(|&b| b == b'\n') {
                let line = self.buf[self.start..self.start + at].to_vec();
                self.start += at + 1;
                if self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                }
                return Ok(Some(line));
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let len = self.buf.len();
            self.buf.resize(len + 64 * 1024, 0);
            let read = self.read_into(len).await;
            let read = match read {
                Ok(read) => read,
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            };
            self.buf.truncate(len + read);
            if read == 0 {
                return Ok(None);
            }
        }
    }

    /// One read into the buffer from `at`, polled without waiting for up to the spin first,
    /// with mcpwire's back-offs: no spin for the next 8 reads after a spin that found nothing,
    /// nor for the next 256 when a thread yield found the CPU shared.
    async fn read_into(&mut self, at: usize) -> std::io::Result<usize> {
        if !self.spin.is_zero() && self.spin_off == 0 {
            let until = Instant::now() + self.spin;
            loop {
                let mut read = std::pin::pin!(self.io.read(&mut self.buf[at..]));
                let polled =
                    std::future::poll_fn(|cx| std::task::Poll::Ready(std::future::Future::poll(read.as_mut(), cx)))
                        .await;
                if let std::task::Poll::Ready(result) = polled {
                    return result;
                }
                let before = Instant::now();
                if before >= until {
                    self.spin_off = 8;
                    break;
                }
                std::thread::yield_now();
                if before.elapsed() > Duration::from_micros(10) {
                    self.spin_off = 256;
                    break;
                }
            }
        }
        self.spin_off = self.spin_off.saturating_sub(1);
        self.io.read(&mut self.buf[at..]).await
    }
}

fn reopen(fd: u32, write: bool) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().read(!write).write(write).open(format!("/proc/self/fd/{fd}"))
}

async fn serve(spin: Duration) -> Result<(), BoxError> {
    let input = tokio::net::unix::pipe::Receiver::from_file(reopen(0, false)?)?;
    let mut output = tokio::net::unix::pipe::Sender::from_file(reopen(1, true)?)?;
    let mut lines = Lines::new(input, spin);
    let mut out = Vec::with_capacity(1024);
    while let Some(line) = lines.next().await? {
        let Ok(message) = serde_json::from_slice::<Value>(&line) else { continue };
        let Some(id) = message.get("id").cloned() else { continue };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let result = match message.get("method").and_then(Value::as_str) {
            Some("initialize") => json!({
                "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2025-11-25")),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "tokio-floor", "version": "0.0.0"}
            }),
            Some("tools/list") => json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
            ]}),
            Some("tools/call") => {
                let text = params["arguments"]["text"].as_str().unwrap_or_default().to_owned();
                json!({"content": [{"type": "text", "text": text}]})
            }
            Some("ping") => json!({}),
            _ => json!({}),
        };
        out.clear();
        serde_json::to_writer(&mut out, &json!({"jsonrpc": "2.0", "id": id, "result": result}))?;
        out.push(b'\n');
        output.write_all(&out).await?;
    }
    Ok(())
}

async fn write_line<W: AsyncWrite + Unpin>(w: &mut W, message: &Value) -> Result<(), BoxError> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    w.write_all(&line).await?;
    Ok(())
}

/// The next answer (a message with an id and no method), skipping anything else.
async fn read_reply<R: AsyncRead + Unpin>(lines: &mut Lines<R>) -> Result<Value, BoxError> {
    loop {
        let line = lines.next().await?.ok_or("the server closed its stdout")?;
        let message: Value = serde_json::from_slice(&line)?;
        if message.get("id").is_some() && message.get("method").is_none() {
            return Ok(message);
        }
    }
}

async fn bench(cmd: &str, n: usize, concurrency: usize, sizes: &[usize], spin: Duration) -> Result<(), BoxError> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let mut child = tokio::process::Command::new(words[0])
        .args(&words[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut w = child.stdin.take().ok_or("no stdin")?;
    let mut r = Lines::new(child.stdout.take().ok_or("no stdout")?, spin);
    let mut next_id = 0u64;
    let init = json!({"jsonrpc": "2.0", "id": next_id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "tokio-floor", "version": "0.0.0"}}});
    next_id += 1;
    write_line(&mut w, &init).await?;
    read_reply(&mut r).await?;
    write_line(&mut w, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    for &size in sizes {
        let text = "x".repeat(size);
        let levels: &[usize] = if size > 4096 { &[1] } else { &[1, concurrency] };
        for &c in levels {
            let warm = (n / 10).clamp(10, 200);
            let total = warm + n;
            let mut sent_at = HashMap::with_capacity(c * 2);
            let mut latencies = Vec::with_capacity(n);
            let mut errors = 0usize;
            let (mut sent, mut done) = (0usize, 0usize);
            let mut t0 = Instant::now();
            let mut batch = Vec::new();
            let request = |id: u64, batch: &mut Vec<u8>| -> Result<(), BoxError> {
                let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": text}}});
                serde_json::to_writer(&mut *batch, &call)?;
                batch.push(b'\n');
                Ok(())
            };
            while sent < c.min(total) {
                request(next_id, &mut batch)?;
                sent_at.insert(next_id, Instant::now());
                next_id += 1;
                sent += 1;
            }
            w.write_all(&batch).await?;
            while done < total {
                let reply = read_reply(&mut r).await?;
                let id = reply["id"].as_u64().ok_or("an answer without a numeric id")?;
                let started: Instant = sent_at.remove(&id).ok_or("an answer to no call")?;
                let ok = reply["result"]["content"][0]["text"].as_str().map(str::len) == Some(size);
                done += 1;
                if done == warm {
                    t0 = Instant::now();
                }
                if done > warm {
                    latencies.push(started.elapsed().as_secs_f64() * 1e6);
                    errors += usize::from(!ok);
                }
                if sent < total {
                    batch.clear();
                    request(next_id, &mut batch)?;
                    sent_at.insert(next_id, Instant::now());
                    next_id += 1;
                    sent += 1;
                    w.write_all(&batch).await?;
                }
            }
            let elapsed = t0.elapsed().as_secs_f64();
            latencies.sort_by(f64::total_cmp);
            let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
            println!(
                "{}",
                json!({"scenario": "echo", "target": cmd, "transport": "stdio", "client": "tokio-floor",
                    "payload_bytes": size, "concurrency": c, "n": n, "calls_per_s": (n as f64 / elapsed).round(),
                    "p50_us": (pct(0.5) * 10.0).round() / 10.0, "p99_us": (pct(0.99) * 10.0).round() / 10.0,
                    "errors": errors, "spin_us": spin.as_micros() as u64})
            );
        }
    }
    drop(w);
    let _ = child.wait().await;
    Ok(())
}
