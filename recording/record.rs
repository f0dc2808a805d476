//! Recording a stdio session: a wrapper a client launches as its server command. It starts the
//! real server, relays both byte streams unchanged (bytes are forwarded as read, never
//! re-encoded; lines are split only to log them) and, when either side closes, writes the
//! session in the recording format and exits with the server's status.
//!
//! The header's `client`, `server` and `protocol_version` come from the `initialize` exchange,
//! or in a 2026-07-28 session from the `_meta` of the first request and of the `server/discover`
//! result. Our stdout carries nothing but the server's bytes; the server's stderr is inherited.
//!
//! The header and line writing ([`Logged`], [`write_recording`], `header_line`, `push_entry`)
//! is shared with the recording tee ([`RecordingTransport`](super::RecordingTransport)) and with
//! other recorders (the conformance runner's HTTP capture proxy).

use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::format::Dir;
use crate::proto::timestamp::{utc_date, utc_rfc3339};

/// What a logged line carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// A JSON text (a JSON-RPC message or batch), spliced into the line as the sender wrote it.
    Message(String),
    /// A payload that is not JSON, kept as a string.
    Raw(String),
    /// No payload (an HTTP request or response that carried no JSON-RPC message): built by the
    /// HTTP capture proxy (`record_http`) only.
    Nothing,
}

impl Payload {
    /// `Message` when `text` is JSON once its line ends are dropped (which valid JSON can hold
    /// only as whitespace), else `Raw` with the text as it was.
    pub fn of_text(text: &str) -> Payload {
        let joined = text.replace(['\r', '\n'], "");
        match serde_json::from_str::<Box<RawValue>>(&joined) {
            Ok(_) => Payload::Message(joined.trim().to_owned()),
            Err(_) => Payload::Raw(text.to_owned()),
        }
    }
}

/// One logged line, as a recorder keeps it before writing it.
#[derive(Debug, Clone)]
pub struct Logged {
    /// Milliseconds since the recording started.
    pub t_ms: u64,
    /// Who sent it.
    pub dir: Dir,
    /// What it carried.
    pub payload: Payload,
    /// The line's `http` object as JSON text, on HTTP transports.
    pub http: Option<String>,
}

/// What `record` needs to know.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Where the recording is written.
    pub out: PathBuf,
    /// The header's description.
    pub description: Option<String>,
    /// The server program and its arguments.
    pub command: Vec<String>,
}

struct Log {
    start: Instant,
    /// The wall-clock time of `start`, for the header's `started_at`.
    started_at: SystemTime,
    lines: Mutex<Vec<Logged>>,
}

impl Log {
    fn push(&self, dir: Dir, line: &[u8]) {
        let text = String::from_utf8_lossy(line).replace(['\r', '\n'], "");
        if text.trim().is_empty() {
            return;
        }
        let t_ms = self.start.elapsed().as_millis() as u64;
        let payload = Payload::of_text(&text);
        self.lines.lock().expect("log lock").push(Logged { t_ms, dir, payload, http: None });
    }
}

/// Copies `from` to `to` as read, logging each complete line. Returns at end of input.
async fn relay(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    dir: Dir,
    log: Arc<Log>,
) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            if !partial.is_empty() {
                log.push(dir, &partial);
            }
            return Ok(());
        }
        // Log, then forward: a line is on record before the peer can answer it, so an answer is
        // never recorded before what it answers (a client retrying a multi-round request the
        // instant it reads the server's InputRequiredResult did overtake it).
        let mut rest = &buf[..n];
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            partial.extend_from_slice(&rest[..end]);
            log.push(dir, &partial);
            partial.clear();
            rest = &rest[end + 1..];
        }
        partial.extend_from_slice(rest);
        to.write_all(&buf[..n]).await?;
        to.flush().await?;
    }
}

/// Runs the recorder: relays between our stdin/stdout and the server until either side closes,
/// then writes the recording. Returns the server's exit status.
///
/// # Errors
/// When the server cannot be started or the recording cannot be written.
pub async fn record(options: &RecordOptions) -> io::Result<ExitStatus> {
    let (program, args) = options.command.split_first().ok_or_else(|| io::Error::other("no server command"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start {program}: {e}")))?;
    let log = Arc::new(Log { start: Instant::now(), started_at: SystemTime::now(), lines: Mutex::new(Vec::new()) });
    let child_in = child.stdin.take().expect("piped");
    let child_out = child.stdout.take().expect("piped");
    let to_server = tokio::spawn(relay(tokio::io::stdin(), child_in, Dir::ClientToServer, log.clone()));
    let mut to_client = tokio::spawn(relay(child_out, tokio::io::stdout(), Dir::ServerToClient, log.clone()));
    let status = tokio::select! {
        _ = to_server => {
            // The client closed our stdin; the relay dropped the server's stdin. Give the server
            // a moment to finish, as a client would, then stop it.
            match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
                Ok(status) => status?,
                Err(_) => {
                    let _ = child.start_kill();
                    child.wait().await?
                }
            }
        }
        _ = &mut to_client => child.wait().await?,
    };
    // Whatever the server wrote before exiting is still relayed and logged.
    let _ = tokio::time::timeout(Duration::from_millis(500), to_client).await;
    let lines = log.lines.lock().expect("log lock").clone();
    let description = options
        .description
        .clone()
        .unwrap_or_else(|| format!("recorded by mcp-conformance record: {}", options.command.join(" ")));
    write_recording(&options.out, "stdio", &description, log.started_at, &lines)?;
    Ok(status)
}

fn parse(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

fn info(v: Option<&Value>) -> Option<Value> {
    let v = v?.as_object()?;
    let mut out = Map::new();
    for key in ["name", "version"] {
        if let Some(x) = v.get(key) {
            out.insert(key.into(), x.clone());
        }
    }
    Some(Value::Object(out))
}

/// The header's client, server and protocol version, from the initialize exchange or 2026 `_meta`.
fn peers(lines: &[Logged]) -> (Value, Value, Value) {
    let messages: Vec<(Dir, Value)> = lines
        .iter()
        .filter_map(|l| match &l.payload {
            Payload::Message(text) => Some((l.dir, parse(text)?)),
            _ => None,
        })
        .collect();
    let response_to = |id: &Value| {
        messages
            .iter()
            .find(|(d, m)| *d == Dir::ServerToClient && m.get("id") == Some(id) && m.get("method").is_none())
            .map(|(_, m)| m)
    };
    let (mut client, mut server, mut version) = (Value::Null, Value::Null, Value::Null);
    let initialize = messages
        .iter()
        .find(|(d, m)| *d == Dir::ClientToServer && m.get("method").and_then(Value::as_str) == Some("initialize"));
    if let Some((_, init)) = initialize {
        client = info(init.pointer("/params/clientInfo")).unwrap_or(Value::Null);
        if let Some(result) = init.get("id").and_then(response_to).and_then(|r| r.get("result")) {
            server = info(result.get("serverInfo")).unwrap_or(Value::Null);
            version = result.get("protocolVersion").cloned().unwrap_or(Value::Null);
        }
    }
    let meta_request = messages.iter().find(|(d, m)| {
        *d == Dir::ClientToServer && m.pointer("/params/_meta/io.modelcontextprotocol~1clientInfo").is_some()
    });
    if let (Some((_, m)), Value::Null) = (meta_request, &client) {
        client = info(m.pointer("/params/_meta/io.modelcontextprotocol~1clientInfo")).unwrap_or(Value::Null);
        version = m.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion").cloned().unwrap_or(Value::Null);
    }
    if server.is_null() {
        let discover = messages.iter().find(|(d, m)| {
            *d == Dir::ClientToServer && m.get("method").and_then(Value::as_str) == Some("server/discover")
        });
        if let Some(result) =
            discover.and_then(|(_, m)| m.get("id")).and_then(response_to).and_then(|r| r.get("result"))
        {
            server = info(result.pointer("/_meta/io.modelcontextprotocol~1serverInfo")).unwrap_or(Value::Null);
        }
    }
    (client, server, version)
}

/// Writes a recording: the header (client, server and protocol version found in `lines`, the
/// date and the instant of `t_ms` 0 from `started`), then one line per entry, `seq` counting
/// from 1.
///
/// # Errors
/// When the file cannot be written.
pub fn write_recording(
    out: &Path,
    transport: &str,
    description: &str,
    started: SystemTime,
    lines: &[Logged],
) -> io::Result<()> {
    let name = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut text = header_line(&name, transport, description, started, lines);
    text.push('\n');
    for (i, line) in lines.iter().enumerate() {
        push_entry(&mut text, i as u64 + 1, line);
    }
    std::fs::write(out, text)
}

/// The header line (without its line end): client, server and protocol version as found in
/// `lines` (`"unknown"` for a version never negotiated), the date and the instant of `t_ms` 0
/// from `started`.
pub(crate) fn header_line(
    name: &str,
    transport: &str,
    description: &str,
    started: SystemTime,
    lines: &[Logged],
) -> String {
    let (client, server, mut version) = peers(lines);
    if version.is_null() {
        // No version was negotiated on record (no initialize answered, no 2026 `_meta`); the
        // format requires a string.
        version = Value::String("unknown".into());
    }
    // Members in the README's order (a serde_json map would sort them).
    let string = |s: &str| Value::String(s.to_owned()).to_string();
    format!(
        "{{\"mcp_recording\":1,\"name\":{},\"transport\":{},\"client\":{client},\"server\":{server},\"protocol_version\":{version},\"recorded_at\":{},\"started_at\":{},\"description\":{}}}",
        string(name),
        string(transport),
        string(&utc_date(started)),
        string(&utc_rfc3339(started)),
        string(description),
    )
}

/// Appends entry `seq` and its line end.
pub(crate) fn push_entry(text: &mut String, seq: u64, line: &Logged) {
    text.push_str(&format!("{{\"seq\":{seq},\"t_ms\":{},\"dir\":\"{}\"", line.t_ms, line.dir.as_str()));
    match &line.payload {
        // Spliced as the peer wrote it (only line ends dropped).
        Payload::Message(json) => text.push_str(&format!(",\"msg\":{json}")),
        Payload::Raw(raw) => text.push_str(&format!(",\"raw\":{}", Value::String(raw.clone()))),
        Payload::Nothing => {}
    }
    if let Some(http) = &line.http {
        text.push_str(&format!(",\"http\":{http}"));
    }
    text.push_str("}\n");
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::recording::Recording;

    /// A peer that, the moment a line reaches it, checks that the line is already on record.
    struct CheckingPeer {
        log: Arc<Log>,
        seen: usize,
    }

    impl AsyncWrite for CheckingPeer {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<io::Result<usize>> {
            let lines = buf.iter().filter(|b| **b == b'\n').count();
            self.seen += lines;
            let logged = self.log.lines.lock().unwrap().len();
            assert!(logged >= self.seen, "{} line(s) reached the peer, {logged} on record", self.seen);
            std::task::Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_line_is_on_record_before_the_peer_gets_it() {
        let log = Arc::new(Log { start: Instant::now(), started_at: SystemTime::now(), lines: Mutex::new(Vec::new()) });
        let input: &[u8] = b"{\"id\":1,\"result\":{}}\n{\"id\":2,\"res";
        let rest: &[u8] = b"ult\":{}}\n";
        let peer = CheckingPeer { log: log.clone(), seen: 0 };
        relay(input.chain(rest), peer, Dir::ServerToClient, log.clone()).await.unwrap();
        assert_eq!(log.lines.lock().unwrap().len(), 2);
    }

    #[test]
    fn recordings_are_written_in_the_readme_format() {
        let dir = std::env::temp_dir().join(format!("mcpwire-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("some-session.jsonl");
        let lines = [
            Logged {
                t_ms: 1,
                dir: Dir::ClientToServer,
                payload: Payload::of_text("{\"method\":\"ping\",\r\n\"jsonrpc\":\"2.0\",\"id\":1.0}"),
                http: Some(r#"{"method":"POST"}"#.into()),
            },
            Logged { t_ms: 2, dir: Dir::ServerToClient, payload: Payload::of_text("/message?x=1"), http: None },
            Logged { t_ms: 3, dir: Dir::ClientToServer, payload: Payload::Nothing, http: None },
        ];
        let started = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_000_532_400);
        write_recording(&out, "sse", "d \"q\"", started, &lines).unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        let mut text_lines = text.lines();
        assert!(text_lines
            .next()
            .unwrap()
            .starts_with(r#"{"mcp_recording":1,"name":"some-session","transport":"sse","client":null,"#));
        assert_eq!(
            text_lines.next().unwrap(),
            r#"{"seq":1,"t_ms":1,"dir":"c2s","msg":{"method":"ping","jsonrpc":"2.0","id":1.0},"http":{"method":"POST"}}"#
        );
        assert_eq!(text_lines.next().unwrap(), r#"{"seq":2,"t_ms":2,"dir":"s2c","raw":"/message?x=1"}"#);
        assert_eq!(text_lines.next().unwrap(), r#"{"seq":3,"t_ms":3,"dir":"c2s"}"#);
        let recording = Recording::read(&out).unwrap();
        assert_eq!(recording.header.extra["description"], "d \"q\"");
        assert_eq!(recording.header.extra["recorded_at"], "2026-11-30");
        assert_eq!(recording.header.extra["started_at"], "2026-11-30T01:02:12.400Z");
        assert_eq!(recording.entries.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn header_from_initialize_and_from_meta() {
        let l = |dir, text: &str| Logged { t_ms: 0, dir, payload: Payload::of_text(text), http: None };
        let lines = [
            l(
                Dir::ClientToServer,
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}"#,
            ),
            l(
                Dir::ServerToClient,
                r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","serverInfo":{"name":"s","version":"2","title":"S"}}}"#,
            ),
        ];
        assert_eq!(
            peers(&lines),
            (json!({"name":"c","version":"1"}), json!({"name":"s","version":"2"}), json!("2025-11-25"))
        );
        let lines = [
            l(
                Dir::ClientToServer,
                r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}"#,
            ),
            l(
                Dir::ServerToClient,
                r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"}}}}"#,
            ),
        ];
        assert_eq!(
            peers(&lines),
            (json!({"name":"c","version":"1"}), json!({"name":"s","version":"2"}), json!("2026-07-28"))
        );
    }
}
