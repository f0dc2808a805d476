//! http-floor: the floor for an MCP `tools/call` over HTTP on this machine, the counterpart of
//! the rmcp peer's floor-bench/floor-echo-server for stdio.
//!
//! ```text
//! http-floor serve ADDR                       # answers POSTs until killed
//! http-floor gateway ADDR -- CMD ARGS...      # forwards POSTs to a stdio server, until killed
//! http-floor bench URL [--n N] [--concurrency C] [--sizes 16,65536]
//! ```
//!
//! Blocking std::net IO, no async runtime, no HTTP library, no MCP: the server reads a POST
//! (headers, then a `content-length` body), parses the body with serde_json into a `Value`,
//! answers the echo as one `application/json` response; the client does the same in reverse,
//! one keep-alive connection and one thread per call in flight. What is left is the cost of the
//! loopback TCP round trip plus one JSON parse and one JSON write per message on each side,
//! which no MCP server over Streamable HTTP can beat. Output: one JSON line per cell, with the
//! fields of mcp-bench.
//!
//! `gateway` is the floor of a stdio → Streamable HTTP gateway: the same server, but each
//! request goes to one child MCP server over its stdin and the child's answer comes back as
//! the response. It initializes the child once at start and answers every client's
//! `initialize` with the child's result (so that several clients can connect, as with a real
//! gateway); each forwarded request gets an id of its own on the child's side (clients' ids may
//! collide) and its own id back on the answer: one JSON parse and one JSON write per message on
//! each side again, one thread per connection; the caller reads the child's answers itself
//! (one at a time, keeping others' answers for them), so a lone call wakes no other thread.
//! Notifications go to the child and get 202; GET and DELETE get 405 (no sessions, no streams);
//! what the child sends unasked (its notifications, its requests) is dropped. Against a direct
//! HTTP server measured by the same client, it shows what any gateway that moves each message
//! through a child process adds on this machine.
//!
//! Not a conforming MCP server (no sessions, no SSE, no server-to-client requests): a measuring
//! instrument.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    match args.first().map(String::as_str) {
        Some("serve") => serve(args.get(1).ok_or("serve ADDR")?),
        Some("gateway") => {
            let addr = args.get(1).ok_or("gateway ADDR -- CMD ARGS")?;
            let command = args.iter().position(|a| a == "--").map(|i| &args[i + 1..]).unwrap_or_default();
            gateway(addr, command)
        }
        Some("bench") => {
            let url = args.get(1).ok_or("bench URL")?;
            let n: usize = flag("--n").map_or(Ok(2000), |v| v.parse())?;
            let concurrency: usize = flag("--concurrency").map_or(Ok(16), |v| v.parse())?;
            let sizes: Vec<usize> = match flag("--sizes") {
                Some(v) => v.split(',').map(str::parse).collect::<Result<_, _>>()?,
                None => vec![16, 65536],
            };
            for size in sizes {
                for c in [1, concurrency] {
                    bench(url, size, n, c)?;
                }
            }
            Ok(())
        }
        _ => Err("usage: http-floor serve ADDR | http-floor gateway ADDR -- CMD ARGS | http-floor bench URL [--n N] [--concurrency C] [--sizes A,B]".into()),
    }
}

/// Reads one HTTP/1.1 message (head and `content-length` body); `None` at a clean end.
fn read_message(reader: &mut BufReader<TcpStream>, head: &mut String) -> Result<Option<Vec<u8>>, BoxError> {
    head.clear();
    let mut length = 0;
    loop {
        let start = head.len();
        if reader.read_line(head)? == 0 {
            return Ok(None);
        }
        let line = head[start..].trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}

/// Writes `reply` as one `200 OK` `application/json` response.
fn write_json(out: &mut TcpStream, reply: &Value) -> Result<(), BoxError> {
    let reply = serde_json::to_vec(reply)?;
    let mut response =
        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", reply.len())
            .into_bytes();
    response.extend_from_slice(&reply);
    out.write_all(&response)?;
    Ok(())
}

fn serve(addr: &str) -> Result<(), BoxError> {
    let listener = TcpListener::bind(addr)?;
    eprintln!("http-floor listening on http://{}/mcp", listener.local_addr()?);
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            let _ = serve_connection(stream);
        });
    }
    Ok(())
}

fn serve_connection(stream: TcpStream) -> Result<(), BoxError> {
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    while let Some(body) = read_message(&mut reader, &mut head)? {
        let request: Value = serde_json::from_slice(&body)?;
        let text = request["params"]["arguments"]["text"].as_str().unwrap_or_default();
        let reply =
            json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": text}]}});
        write_json(&mut out, &reply)?;
    }
    Ok(())
}

/// The child's side of `gateway`: its stdin, the requests waiting for an answer by the id
/// given on the child's side, and the child's `initialize` result.
struct Child {
    stdin: Mutex<ChildStdin>,
    /// Whoever holds it reads the child's next answer (leader/followers: no thread in between
    /// when one call is in flight).
    stdout: Mutex<BufReader<ChildStdout>>,
    /// Answers read by another caller, by the id of the child's side.
    answered: Mutex<HashMap<u64, Value>>,
    next_id: AtomicU64,
    initialized: Value,
}

impl Child {
    /// Sends `message` (one line) to the child.
    fn send(&self, message: &Value) -> Result<(), BoxError> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.stdin.lock().expect("stdin lock").write_all(&line)?;
        Ok(())
    }

    /// Sends `request` under an id of the child's side and waits for its answer: reads the
    /// child's answers itself, keeping the other callers' for them, until its own comes.
    fn call(&self, mut request: Value) -> Result<Value, BoxError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        request["id"] = json!(id);
        self.send(&request)?;
        let mut line = String::new();
        loop {
            let mut stdout = self.stdout.lock().expect("stdout lock");
            if let Some(answer) = self.answered.lock().expect("answers lock").remove(&id) {
                return Ok(answer);
            }
            line.clear();
            if stdout.read_line(&mut line)? == 0 {
                return Err("the child exited".into());
            }
            let Ok(answer) = serde_json::from_str::<Value>(&line) else { continue };
            match answer["id"].as_u64().filter(|_| answer.get("method").is_none()) {
                Some(theirs) if theirs == id => return Ok(answer),
                Some(theirs) => {
                    self.answered.lock().expect("answers lock").insert(theirs, answer);
                }
                None => {}
            }
        }
    }
}

fn gateway(addr: &str, command: &[String]) -> Result<(), BoxError> {
    let (program, args) = command.split_first().ok_or("gateway ADDR -- CMD ARGS: no command")?;
    let mut process = Command::new(program).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    let mut stdout = BufReader::new(process.stdout.take().expect("piped"));
    let mut stdin = process.stdin.take().expect("piped");
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "http-floor", "version": "0"}}});
    writeln!(stdin, "{initialize}")?;
    let mut line = String::new();
    let initialized = loop {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            return Err("the child exited before answering initialize".into());
        }
        let answer: Value = serde_json::from_str(&line)?;
        if answer["id"] == 0 {
            break answer["result"].clone();
        }
    };
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let child = Arc::new(Child {
        stdin: Mutex::new(stdin),
        stdout: Mutex::new(stdout),
        answered: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(1),
        initialized,
    });
    let listener = TcpListener::bind(addr)?;
    eprintln!("http-floor gateway listening on http://{}/mcp", listener.local_addr()?);
    for stream in listener.incoming() {
        let (stream, child) = (stream?, child.clone());
        std::thread::spawn(move || {
            let _ = forward_connection(stream, &child);
        });
    }
    Ok(())
}

fn forward_connection(stream: TcpStream, child: &Child) -> Result<(), BoxError> {
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    while let Some(body) = read_message(&mut reader, &mut head)? {
        if !head.starts_with("POST ") {
            out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nallow: POST\r\ncontent-length: 0\r\n\r\n")?;
            continue;
        }
        let request: Value = serde_json::from_slice(&body)?;
        let Some(id) = request.get("id").cloned() else {
            if request["method"] != "notifications/initialized" {
                child.send(&request)?;
            }
            out.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")?;
            continue;
        };
        let mut answer = if request["method"] == "initialize" {
            json!({"jsonrpc": "2.0", "result": child.initialized})
        } else {
            child.call(request)?
        };
        answer["id"] = id;
        write_json(&mut out, &answer)?;
    }
    Ok(())
}

/// `n` calls of `size` bytes over `concurrency` connections, each with one call in flight.
fn bench(url: &str, size: usize, n: usize, concurrency: usize) -> Result<(), BoxError> {
    let authority = url.strip_prefix("http://").ok_or("an http:// URL")?;
    let (host, path) = authority.split_once('/').map_or((authority, "/"), |(h, _)| (h, &url[7 + h.len()..]));
    let text = "x".repeat(size);
    let per_connection = n.div_ceil(concurrency);
    let warm = (per_connection / 10).clamp(10, 200);
    let start = std::sync::Barrier::new(concurrency + 1);
    let (elapsed, mut latencies, errors) = std::thread::scope(|scope| -> Result<_, BoxError> {
        let workers: Vec<_> = (0..concurrency)
            .map(|_| {
                let (text, start) = (&text, &start);
                scope.spawn(move || -> Result<(Vec<f64>, usize), BoxError> {
                    let stream = TcpStream::connect(host)?;
                    stream.set_nodelay(true)?;
                    let mut out = stream.try_clone()?;
                    let mut reader = BufReader::new(stream);
                    let (mut head, mut latencies, mut errors) = (String::new(), Vec::new(), 0);
                    for i in 0..warm + per_connection {
                        if i == warm {
                            start.wait();
                        }
                        let began = Instant::now();
                        let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": text}}});
                        let call = serde_json::to_vec(&call)?;
                        let mut request = format!(
                            "POST {path} HTTP/1.1\r\nhost: {host}\r\naccept: application/json, text/event-stream\r\n\
                             content-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            call.len()
                        )
                        .into_bytes();
                        request.extend_from_slice(&call);
                        out.write_all(&request)?;
                        let body = read_message(&mut reader, &mut head)?.ok_or("the server closed the connection")?;
                        let reply: Value = serde_json::from_slice(&body)?;
                        if reply["result"]["content"][0]["text"].as_str().map(str::len) != Some(size) {
                            errors += 1;
                        }
                        if i >= warm {
                            latencies.push(began.elapsed().as_secs_f64() * 1e6);
                        }
                    }
                    Ok((latencies, errors))
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        let (mut latencies, mut errors) = (Vec::new(), 0);
        for worker in workers {
            let (l, e) = worker.join().map_err(|_| "a worker panicked")??;
            latencies.extend(l);
            errors += e;
        }
        Ok((began.elapsed().as_secs_f64(), latencies, errors))
    })?;
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let calls = latencies.len();
    println!(
        "{}",
        json!({"scenario": "echo", "target": url, "transport": "http-floor", "client": "http-floor",
            "payload_bytes": size, "concurrency": concurrency, "n": calls,
            "calls_per_s": (calls as f64 / elapsed).round(), "p50_us": (pct(0.5) * 10.0).round() / 10.0,
            "p99_us": (pct(0.99) * 10.0).round() / 10.0, "errors": errors})
    );
    Ok(())
}
