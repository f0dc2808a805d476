//! `mcp-conformance record --listen --target`: the HTTP capture proxy between real peers.
//!
//! The TypeScript SDK client talks through the proxy to the real server-everything, in
//! `streamableHttp` and in `sse` mode; the recording must carry the HTTP facts (statuses,
//! content types, session ids, event ids, priming and `endpoint` events), round-trip, and
//! replay with `--server-url` against a fresh server-everything. A hand-made client checks what
//! an SDK client does not provoke: an HTTP error answered with JSON, and an SSE response
//! relayed as it arrives rather than at its end.

use crate::examples;
use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{everything_http, peer, peers, repo_path};

fn bin() -> &'static str {
    examples::bin_path("mcp-conformance")
}

/// The recorder in front of `target`; [`Recorder::stop`] ends it and reads the recording.
struct Recorder {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    url: String,
    out: PathBuf,
    stderr: std::thread::JoinHandle<String>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn record(name: &str, target: u16) -> Recorder {
    let dir = std::env::temp_dir().join(format!("mcpwire-record-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}.jsonl"));
    let _ = std::fs::remove_file(&out);
    let mut child = Command::new(bin())
        .arg("record")
        .arg(&out)
        .args(["--listen", "127.0.0.1:0", "--target", &format!("http://127.0.0.1:{target}")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let url = first
        .trim()
        .strip_prefix("mcp-conformance record: listening on ")
        .unwrap_or_else(|| panic!("unexpected first stderr line: {first}"))
        .to_owned();
    let stderr = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });
    Recorder { child, url, out, stderr }
}

impl Recorder {
    /// SIGTERM, then the recording's header and lines.
    fn stop(mut self) -> (PathBuf, Value, Vec<Value>) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) }, 0);
        let status = self.child.wait().unwrap();
        let stderr = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new)).join().unwrap();
        assert!(status.success(), "record exited with {status}: {stderr}");
        assert!(stderr.contains("wrote "), "{stderr}");
        let text = std::fs::read_to_string(&self.out).unwrap();
        let mut lines = text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")));
        let header = lines.next().expect("a header");
        (self.out.clone(), header, lines.collect())
    }
}

/// The TypeScript SDK client (`tests/peers/ts_client.mjs`) with `args` and `script`.
fn ts_client(args: &[&str], script: &str) -> Vec<Value> {
    let output = Command::new(peer("MCP_NODE"))
        .arg(repo_path("tests/peers/ts_client.mjs"))
        .args(args)
        .envs(peers())
        .env("MCP_SCRIPT", script)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "ts_client: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

const SCRIPT: &str = r#"[{"call":"echo","args":{"message":"through the proxy"}},{"call":"trigger-long-running-operation","args":{"duration":0.3,"steps":2}},{"ping":true}]"#;

fn assert_script_ran(steps: &[Value]) {
    assert_eq!(steps.len(), 5, "{steps:#?}");
    assert!(steps.iter().all(|s| s["ok"] == true), "{steps:#?}");
    assert_eq!(steps[2]["result"]["content"][0]["text"], "Echo: through the proxy");
}

/// The parts every recording has: seq 1, 2, 3…, t_ms never decreasing, `http` on every line.
fn assert_well_formed(header: &Value, lines: &[Value], transport: &str) {
    assert_eq!(header["mcp_recording"], 1);
    assert_eq!(header["transport"], transport);
    assert_eq!(header["client"], serde_json::json!({"name": "mcpwire-ts-driver", "version": "0.1.0"}));
    assert_eq!(header["server"], serde_json::json!({"name": "mcp-servers/everything", "version": "2.0.0"}));
    assert_eq!(header["protocol_version"], "2025-11-25");
    let mut last_t = 0;
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], i as u64 + 1, "{line}");
        let t = line["t_ms"].as_u64().unwrap();
        assert!(t >= last_t, "{line}");
        last_t = t;
        assert!(line["http"]["status"].is_u64(), "{line}");
    }
}

fn method(line: &Value) -> Option<&str> {
    line["msg"]["method"].as_str()
}

fn roundtrip_and_replay(file: &PathBuf, mode: &str) {
    let out = Command::new(bin()).arg("roundtrip").arg(file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.ends_with(" passed, 0 failed\n"), "{stdout}");
    let fresh = everything_http(mode);
    let out = Command::new(bin())
        .arg("replay")
        .arg(file)
        .args(["--server-url", &format!("http://127.0.0.1:{}", fresh.port)])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.ends_with("1 passed, 0 failed\n"), "{stdout}");
}

#[test]
fn typescript_client_through_the_proxy_to_streamable_http_server_everything() {
    let server = everything_http("streamableHttp");
    let recorder = record("ts-everything-streamable", server.port);
    let url = format!("{}/mcp", recorder.url);
    assert_script_ran(&ts_client(&["--url", &url], SCRIPT));
    let (file, header, lines) = recorder.stop();
    assert_well_formed(&header, &lines, "streamable-http");

    // initialize: POST /mcp, 200; the answer is an SSE stream that starts with a priming
    // event (an id, empty data) and assigns the session id.
    let init = &lines[0];
    assert_eq!(method(init), Some("initialize"));
    assert_eq!(init["dir"], "c2s");
    assert_eq!(init["http"]["method"], "POST");
    assert_eq!(init["http"]["path"], "/mcp");
    assert_eq!(init["http"]["status"], 200);
    assert_eq!(init["http"]["headers"]["accept"], "application/json, text/event-stream");
    assert_eq!(init["http"]["headers"]["content-type"], "application/json");
    assert!(init["http"].get("response_headers").is_none(), "{init}");
    let priming = &lines[1];
    assert_eq!(priming["dir"], "s2c");
    assert_eq!(priming["raw"], "");
    assert_eq!(priming["http"]["headers"]["content-type"], "text/event-stream");
    let session = priming["http"]["headers"]["mcp-session-id"].as_str().expect("a session id").to_owned();
    assert!(priming["http"]["sse_event_id"].is_string(), "{priming}");
    assert_eq!(lines[2]["msg"]["result"]["protocolVersion"], "2025-11-25");

    // Every later request carries the session id and the version; every SSE event has an id.
    for line in &lines[3..] {
        let http = &line["http"];
        if line["dir"] == "c2s" {
            assert_eq!(http["headers"]["mcp-session-id"], session.as_str(), "{line}");
            assert_eq!(http["headers"]["mcp-protocol-version"], "2025-11-25", "{line}");
        } else {
            assert_eq!(http["headers"]["content-type"], "text/event-stream", "{line}");
            assert!(http["sse_event_id"].is_string(), "{line}");
        }
    }
    let initialized = lines.iter().find(|l| method(l) == Some("notifications/initialized")).unwrap();
    assert_eq!(initialized["http"]["status"], 202);
    assert!(initialized["http"]["response_headers"].is_object(), "{initialized}");
    // The standalone GET stream: opened, and silent (the client declared no capabilities).
    let get = lines.iter().find(|l| l["http"]["method"] == "GET").expect("the standalone GET");
    assert_eq!(get["http"]["status"], 200);
    assert_eq!(get["http"]["headers"]["accept"], "text/event-stream");
    assert!(get.get("msg").is_none() && get.get("raw").is_none(), "{get}");
    assert_eq!(get["http"]["response_headers"]["content-type"], "text/event-stream");
    // Each POSTed request: a priming event, then its response, on the same POST stream.
    let primings = lines.iter().filter(|l| l["raw"] == "").count();
    let requests = lines.iter().filter(|l| l["dir"] == "c2s" && l["msg"]["id"].is_number()).count();
    assert_eq!((primings, requests), (5, 5), "initialize, tools/list, two tools/call, ping");
    let delete = lines.last().unwrap();
    assert_eq!(delete["http"]["method"], "DELETE");
    assert_eq!(delete["http"]["status"], 200);
    assert!(delete["http"]["response_headers"].is_object(), "{delete}");

    roundtrip_and_replay(&file, "streamableHttp");
}

#[test]
fn typescript_client_through_the_proxy_to_legacy_sse_server_everything() {
    let server = everything_http("sse");
    let recorder = record("ts-everything-sse", server.port);
    let url = format!("{}/sse", recorder.url);
    assert_script_ran(&ts_client(&["--sse", &url], SCRIPT));
    let (file, header, lines) = recorder.stop();
    assert_well_formed(&header, &lines, "sse");

    let get = &lines[0];
    assert_eq!((get["dir"].as_str(), get["http"]["method"].as_str()), (Some("c2s"), Some("GET")));
    assert_eq!(get["http"]["path"], "/sse");
    assert_eq!(get["http"]["status"], 200);
    // The endpoint event: relative (so not rewritten), no id, event type `endpoint`.
    let endpoint = &lines[1];
    assert_eq!(endpoint["dir"], "s2c");
    assert_eq!(endpoint["http"]["sse_event"], "endpoint");
    assert!(endpoint["http"]["sse_event_id"].is_null(), "{endpoint}");
    let post_path = endpoint["raw"].as_str().unwrap();
    assert!(post_path.starts_with("/message?sessionId="), "{endpoint}");
    assert!(!header["description"].as_str().unwrap().contains("rewritten"), "{header}");
    // Every client message is a POST to that path answered 202 `Accepted`; every server message
    // comes on the GET stream.
    for line in &lines[2..] {
        let http = &line["http"];
        if line["dir"] == "c2s" {
            assert_eq!((http["method"].as_str(), http["path"].as_str()), (Some("POST"), Some(post_path)), "{line}");
            assert_eq!(http["status"], 202, "{line}");
            assert_eq!(http["response_body"], "Accepted", "{line}");
        } else {
            assert_eq!((http["method"].as_str(), http["path"].as_str()), (Some("GET"), Some("/sse")), "{line}");
            assert_eq!(http["headers"]["content-type"], "text/event-stream", "{line}");
            assert!(http["sse_event_id"].is_null() && http.get("sse_event").is_none(), "{line}");
            assert!(line["msg"].is_object(), "{line}");
        }
    }

    roundtrip_and_replay(&file, "sse");
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`); returns the connection
/// after the request is written.
fn send(base: &str, method: &str, session: Option<&str>, body: &str) -> TcpStream {
    let authority = base.strip_prefix("http://").unwrap();
    let mut tcp = TcpStream::connect(authority).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\n"
    );
    if let Some(session) = session {
        head.push_str(&format!("Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).unwrap();
    tcp.write_all(body.as_bytes()).unwrap();
    tcp
}

fn read_all(mut tcp: TcpStream) -> String {
    let mut out = Vec::new();
    tcp.read_to_end(&mut out).unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn http_errors_are_recorded_and_sse_is_relayed_as_it_arrives() {
    let server = everything_http("streamableHttp");
    let recorder = record("raw-everything", server.port);
    let base = recorder.url.clone();

    // No session: server-everything answers 400 with a JSON-RPC error body.
    let refused = read_all(send(&base, "POST", None, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#));
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-client","version":"0.0.1"}}}"#;
    let answer = read_all(send(&base, "POST", None, init));
    let session = answer
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(|s| s.trim().to_owned()))
        .unwrap_or_else(|| panic!("no session id: {answer}"));
    let accepted =
        read_all(send(&base, "POST", Some(&session), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#));
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");

    // A 1.2 s operation with three progress notifications: the first must reach us long before
    // the stream ends, i.e. the proxy forwards events as they come.
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1.2,"steps":3},"_meta":{"progressToken":"p"}}}"#;
    let mut tcp = send(&base, "POST", Some(&session), call);
    let (mut seen, mut buf) = (String::new(), [0u8; 4096]);
    let mut first_progress = None;
    loop {
        let n = tcp.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        if first_progress.is_none() && seen.contains(r#""progress":1"#) {
            first_progress = Some(Instant::now());
        }
    }
    let ended = Instant::now();
    let first_progress = first_progress.unwrap_or_else(|| panic!("no progress: {seen}"));
    assert!(seen.contains("Long running operation completed"), "{seen}");
    assert!(
        ended - first_progress >= Duration::from_millis(500),
        "progress arrived {:?} before the end",
        ended - first_progress
    );
    let deleted = read_all(send(&base, "DELETE", Some(&session), ""));
    assert!(deleted.starts_with("HTTP/1.1 200"), "{deleted}");

    let (file, header, lines) = recorder.stop();
    assert_eq!(header["client"], serde_json::json!({"name": "raw-client", "version": "0.0.1"}));
    // The refusal: the request's line has the status, the JSON error its own line with the
    // response's headers; neither has response_headers (the response carried a message).
    assert_eq!(lines[0]["http"]["status"], 400);
    assert!(lines[0]["http"].get("response_headers").is_none(), "{}", lines[0]);
    assert_eq!(lines[1]["dir"], "s2c");
    assert_eq!(lines[1]["msg"]["error"]["code"], -32000);
    assert!(lines[1]["http"]["headers"]["content-type"].as_str().unwrap().starts_with("application/json"));
    assert!(lines[1]["http"].get("sse_event_id").is_none(), "{}", lines[1]);
    let progress: Vec<&Value> = lines.iter().filter(|l| method(l) == Some("notifications/progress")).collect();
    assert_eq!(progress.len(), 3);
    for p in &progress {
        assert_eq!(p["http"]["method"], "POST");
        assert!(p["http"]["sse_event_id"].is_string(), "{p}");
    }
    // Logged as they came: about 400 ms apart, not all at the end.
    let t = |l: &Value| l["t_ms"].as_u64().unwrap();
    assert!(t(progress[2]) - t(progress[0]) >= 500, "{progress:?}");
    let out = Command::new(bin()).arg("roundtrip").arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn record_refuses_a_target_that_is_not_plain_http() {
    let out = Command::new(bin())
        .args(["record", "x.jsonl", "--listen", "127.0.0.1:0", "--target", "https://127.0.0.1:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only http://HOST:PORT targets"));
    let out = Command::new(bin()).args(["record", "x.jsonl", "--listen", "127.0.0.1:0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--listen without --target is a usage error");
}

/// `serve --listen` of a recording, stopped on drop.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_listen_sends_server_messages_where_they_were_recorded() {
    // pyfixture-http-python-2026-07-28 is stateless: its progress notifications came on the
    // answer to the tools/call POST, the only stream there is. everything-http-core-2025-11-25:
    // the roots/list that follows notifications/initialized goes out before the client's GET.
    for name in ["pyfixture-http-python-2026-07-28", "everything-http-core-2025-11-25"] {
        let file = repo_path(&format!("conformance/recordings/{name}.jsonl"));
        let mut child = Command::new(bin())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut url = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut url).unwrap();
        let _serve = Serve(child);
        let out = Command::new(bin()).arg("replay").arg(&file).args(["--server-url", url.trim()]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // Every message must match; only the listed HTTP framing of our server may differ.
        let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("    ")).collect();
        for failure in &failures {
            assert!(
                support::SERVE_LISTEN_FRAMING.iter().any(|known| failure.contains(known)),
                "{name}: {failure}\n{stdout}"
            );
        }
        assert!(stdout.lines().last().is_some_and(|l| l.ends_with(" failed")), "{name}: {stdout}");
    }
}
