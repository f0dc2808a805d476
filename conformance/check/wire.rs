//! The checker's raw connections to the server under test: a child process spoken to over
//! stdio, and Streamable HTTP exchanges, both at the byte level so that the checker can send
//! what a well-behaved client never would (malformed JSON, a response to nothing, a foreign
//! `Origin`) and see exactly what comes back (garbage on stdout, statuses, headers).
//!
//! Everything is bounded: every wait has a deadline, a line or body over [`MAX_FRAME`] is
//! skipped (reported, never kept), and at most [`MAX_KEPT`] unsolicited messages are kept for
//! the report. The server's requests to us are answered with -32601 (we declare no client
//! capabilities). Not here: what the answers mean (the battery's business).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::{timeout_at, Instant};

use crate::endpoint::Endpoint;
use mcpwire::proto::framing::SseDecoder;

/// Largest line, body or SSE event read: 16 MiB. Larger ones are skipped and reported.
pub const MAX_FRAME: usize = 16 << 20;
/// Unsolicited messages (notifications, stray responses, garbage) kept for the report.
pub const MAX_KEPT: usize = 200;

/// What the server sent that was not the answer awaited.
#[derive(Debug, Default, Clone)]
pub struct Unsolicited {
    /// Notifications, counted; the first [`MAX_KEPT`] kept.
    pub notifications: Vec<Value>,
    /// How many notifications came in all.
    pub notification_count: usize,
    /// Responses whose id matches no request of ours in flight (an answer to a notification, to a
    /// cancelled request, to our response …).
    pub stray_responses: Vec<Value>,
    /// Lines or bodies that were not a JSON-RPC message (an excerpt each).
    pub garbage: Vec<String>,
}

impl Unsolicited {
    fn note(&mut self, message: Value) {
        if message.get("method").is_some() && message.get("id").is_none() {
            self.notification_count += 1;
            if self.notifications.len() < MAX_KEPT {
                self.notifications.push(message);
            }
        } else if self.stray_responses.len() < MAX_KEPT {
            self.stray_responses.push(message);
        }
    }

    fn garbage(&mut self, excerpt: String) {
        if self.garbage.len() < MAX_KEPT {
            self.garbage.push(excerpt);
        }
    }
}

/// The answer to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The response (result or error) with the request's id.
    Message(Value),
    /// None within the deadline.
    Timeout,
    /// The connection ended, or the exchange failed, before an answer (why).
    Closed(String),
}

impl Reply {
    /// The `result` member, when the reply is a result.
    pub fn result(&self) -> Option<&Value> {
        match self {
            Reply::Message(m) => m.get("result"),
            _ => None,
        }
    }

    /// The `error` member, when the reply is an error.
    pub fn error(&self) -> Option<&Value> {
        match self {
            Reply::Message(m) => m.get("error"),
            _ => None,
        }
    }

    /// The error code, when the reply is an error with an integer code.
    pub fn error_code(&self) -> Option<i64> {
        self.error().and_then(|e| e.get("code")).and_then(Value::as_i64)
    }

    /// One line saying what came back, abbreviated.
    pub fn describe(&self) -> String {
        match self {
            Reply::Message(m) => excerpt(&m.to_string()),
            Reply::Timeout => "nothing (timed out)".into(),
            Reply::Closed(why) => format!("nothing: {why}"),
        }
    }
}

/// The HTTP side of one exchange.
#[derive(Debug, Clone, Default)]
pub struct HttpSeen {
    /// The status.
    pub status: u16,
    /// The response headers, names lower-case.
    pub headers: BTreeMap<String, String>,
    /// The start of a body that was not JSON-RPC (an error page, …).
    pub body_excerpt: String,
}

/// At most 300 characters of `text`.
pub fn excerpt(text: &str) -> String {
    if text.len() <= 300 {
        return text.to_owned();
    }
    let mut end = 297;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// Items the stdout reader hands over.
pub(super) enum Incoming {
    Message(Value),
    Garbage(String),
    TooLong(usize),
    End(String),
}

/// The messages read from one stream of the server (a child's stdout, a legacy SSE stream),
/// and what came on it unasked.
pub struct Inbox {
    incoming: mpsc::Receiver<Incoming>,
    ended: Option<String>,
    /// What a frame is called in the report (`a line`, `an event`).
    frame: &'static str,
    /// What came unasked.
    pub unsolicited: Unsolicited,
}

/// What the next item of an [`Inbox`] means to the one waiting.
pub(super) enum Next {
    /// The response awaited, or the end of the wait.
    Reply(Reply),
    /// A request of the server's: send this answer, and wait on.
    Answer(Value),
    /// The stream ended (why): say so with [`Inbox::end`], with what the caller knows more.
    End(String),
}

impl Inbox {
    pub(super) fn new(incoming: mpsc::Receiver<Incoming>, frame: &'static str) -> Inbox {
        Inbox { incoming, ended: None, frame, unsolicited: Unsolicited::default() }
    }

    /// Reads until the response with `id` (null: an id that could not be read, null or
    /// missing), a request of the server's, the end of the stream or `deadline`, noting
    /// everything else.
    pub(super) async fn next(&mut self, id: &Value, deadline: Instant) -> Next {
        loop {
            if let Some(why) = &self.ended {
                return Next::Reply(Reply::Closed(why.clone()));
            }
            let item = match timeout_at(deadline, self.incoming.recv()).await {
                Err(_) => return Next::Reply(Reply::Timeout),
                Ok(None) => return Next::End("the stream ended".into()),
                Ok(Some(item)) => item,
            };
            match item {
                Incoming::Message(message) => {
                    let matches = match message.get("id") {
                        None => id.is_null(),
                        found => found == Some(id),
                    };
                    if is_response(&message) && matches {
                        return Next::Reply(Reply::Message(message));
                    }
                    if let Some(answer) = refuse_server_request(&message) {
                        return Next::Answer(answer);
                    }
                    self.unsolicited.note(message);
                }
                Incoming::Garbage(text) => self.unsolicited.garbage(text),
                Incoming::TooLong(n) => self
                    .unsolicited
                    .garbage(format!("{} of more than {n} bytes (skipped; the limit is {MAX_FRAME})", self.frame)),
                Incoming::End(why) => return Next::End(why),
            }
        }
    }

    /// The stream is over: every later wait ends at once with `why`.
    pub(super) fn end(&mut self, why: String) {
        self.ended = Some(why);
    }
}

/// A server started as a child process, spoken to in newline-delimited JSON.
pub struct StdioWire {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// What the server writes on stdout.
    pub inbox: Inbox,
}

impl StdioWire {
    /// Starts `command` (program and arguments).
    ///
    /// # Errors
    /// Why it could not be started.
    pub fn spawn(command: &[String]) -> Result<StdioWire, String> {
        let (program, args) = command.split_first().ok_or("an empty command")?;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stderr_pipe = child.stderr.take().ok_or("no stderr")?;
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let lines = stderr.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncBufReadExt;
            let mut reader = tokio::io::BufReader::new(stderr_pipe);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let mut kept = lines.lock().expect("stderr lines");
                        if kept.len() >= 20 {
                            kept.remove(0);
                        }
                        kept.push(excerpt(String::from_utf8_lossy(&line).trim_end()));
                    }
                }
            }
        });
        let (tx, incoming) = mpsc::channel(256);
        tokio::spawn(read_lines(stdout, tx));
        Ok(StdioWire { stdin: child.stdin.take(), child, stderr, inbox: Inbox::new(incoming, "a line") })
    }

    /// The last lines the server wrote on stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lock().expect("stderr lines").clone()
    }

    /// Writes `bytes` as they are (a newline is not added).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), String> {
        let Some(stdin) = self.stdin.as_mut() else { return Err("stdin is closed".into()) };
        let write = async {
            stdin.write_all(bytes).await?;
            stdin.flush().await
        };
        // A server that never reads would block a large write forever.
        match tokio::time::timeout(Duration::from_secs(10), write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("writing to the server's stdin: {e}")),
            Err(_) => Err("writing to the server's stdin: it reads nothing (10 s)".into()),
        }
    }

    /// Sends one message (a line).
    pub async fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        self.send_raw(line.as_bytes()).await
    }

    /// Waits until `deadline` for the response with `id`, noting everything else.
    pub async fn wait_for(&mut self, id: &Value, deadline: Instant) -> Reply {
        loop {
            match self.inbox.next(id, deadline).await {
                Next::Reply(reply) => return reply,
                Next::Answer(answer) => {
                    let _ = self.send(&answer).await;
                }
                Next::End(why) => {
                    let status = match tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await {
                        Ok(Ok(status)) => format!(", {status}"),
                        _ => String::new(),
                    };
                    self.inbox.end(format!("{why}{status}"));
                }
            }
        }
    }

    /// Sends `message` and waits for its response.
    pub async fn request(&mut self, message: &Value, timeout: Duration) -> Reply {
        if let Err(e) = self.send(message).await {
            return Reply::Closed(e);
        }
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        self.wait_for(&id, Instant::now() + timeout).await
    }

    /// Reads whatever comes until `deadline` (to see what a notification provoked).
    pub async fn drain_until(&mut self, deadline: Instant) {
        let _ = self.wait_for(&json!("mcp-conformance/never-used-id"), deadline).await;
    }

    /// Closes stdin, then kills the process group after a short grace.
    pub async fn close(mut self) {
        self.stdin = None;
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await.is_err() {
            if let Some(pid) = self.child.id() {
                // SAFETY: kill(2) with a negative pid signals the group we created (process_group(0)).
                unsafe {
                    libc::kill(-(pid as i32), libc::SIGKILL);
                }
            }
            let _ = self.child.kill().await;
        }
    }
}

impl Drop for StdioWire {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: as in close: the child's own process group.
            unsafe {
                libc::kill(-(pid as i32), libc::SIGKILL);
            }
        }
    }
}

fn is_response(message: &Value) -> bool {
    message.get("method").is_none() && (message.get("result").is_some() || message.get("error").is_some())
}

/// Our answer to a request from the server: we offer no client features.
fn refuse_server_request(message: &Value) -> Option<Value> {
    let id = message.get("id")?;
    let method = message.get("method")?.as_str()?;
    if method == "ping" {
        return Some(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    }
    Some(
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("the checker offers no {method}")}}),
    )
}

/// Reads `stdout` line by line, never holding more than [`MAX_FRAME`] of one line.
async fn read_lines(mut stdout: tokio::process::ChildStdout, tx: mpsc::Sender<Incoming>) {
    let mut buf = BytesMut::with_capacity(64 << 10);
    // Bytes of an over-long line being skipped, if any.
    let mut skipping: Option<usize> = None;
    let mut scanned = 0;
    loop {
        if buf.capacity() - buf.len() < 32 << 10 {
            buf.reserve(64 << 10);
        }
        match stdout.read_buf(&mut buf).await {
            Ok(0) => {
                let _ = tx.send(Incoming::End("the server's stdout ended".into())).await;
                return;
            }
            Ok(_) => {}
            Err(e) => {
                let _ = tx.send(Incoming::End(format!("reading the server's stdout: {e}"))).await;
                return;
            }
        }
        loop {
            let Some(pos) = buf[scanned..].iter().position(|&b| b == b'\n').map(|p| p + scanned) else {
                scanned = buf.len();
                if let Some(skipped) = skipping.as_mut() {
                    *skipped += buf.len();
                    buf.clear();
                    scanned = 0;
                } else if buf.len() > MAX_FRAME {
                    skipping = Some(buf.len());
                    buf.clear();
                    scanned = 0;
                }
                break;
            };
            let line = buf.split_to(pos + 1);
            scanned = 0;
            if let Some(skipped) = skipping.take() {
                if tx.send(Incoming::TooLong(skipped + line.len())).await.is_err() {
                    return;
                }
                continue;
            }
            let text = &line[..line.len() - 1];
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let item = match serde_json::from_slice::<Value>(text) {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => Incoming::Message(v),
                _ => Incoming::Garbage(excerpt(&String::from_utf8_lossy(text))),
            };
            if tx.send(item).await.is_err() {
                return;
            }
        }
    }
}

/// A Streamable HTTP endpoint.
#[derive(Clone)]
pub struct HttpWire {
    endpoint: Endpoint,
    path: String,
    headers: Vec<(String, String)>,
    /// The session id the server issued, sent with every request.
    pub session: Option<String>,
    /// The `MCP-Protocol-Version` header sent after the handshake.
    pub protocol_version: Option<String>,
}

/// One HTTP exchange: what came back at the HTTP level, and the messages it carried.
#[derive(Debug, Clone, Default)]
pub struct HttpExchange {
    /// Status, headers, a non-JSON body.
    pub seen: HttpSeen,
    /// The JSON-RPC messages of the body or stream.
    pub messages: Vec<Value>,
    /// Why the exchange failed or was cut short, if it was.
    pub error: Option<String>,
    /// The ids of the SSE events, in order, each with whether its event carried the response
    /// awaited (what a resumption with `Last-Event-ID` starts after).
    pub event_ids: Vec<(String, bool)>,
}

impl HttpWire {
    /// The endpoint at `url`, with `headers` sent on every request.
    ///
    /// # Errors
    /// A URL that is not `http://` or `https://` with a host.
    pub fn new(url: &str, headers: Vec<(String, String)>) -> Result<HttpWire, String> {
        let endpoint = Endpoint::parse(url, "--url")?;
        let path = if endpoint.path.is_empty() { "/".to_owned() } else { endpoint.path.clone() };
        Ok(HttpWire { endpoint, path, headers, session: None, protocol_version: None })
    }

    /// The path (and query) requested.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `host:port`, as the URL gave it.
    pub fn authority(&self) -> &str {
        &self.endpoint.authority
    }

    /// Whether the URL names this machine (`localhost`, 127.0.0.0/8, `::1`): a server that a
    /// rebound name can reach.
    pub fn is_local(&self) -> bool {
        let host = self.endpoint.host.as_str();
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// The URL's origin (`http://host:port`), the one a same-origin page would send.
    pub fn origin(&self) -> String {
        self.endpoint.origin()
    }

    pub(super) async fn connect(&self) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, String> {
        handshake(self.endpoint.open().await?).await
    }

    /// Sends one HTTP request to the endpoint: `method`, `body` (JSON when not empty), our
    /// headers and the session's, then `extra` (which override: a `None` value removes one).
    /// Reads the response until `deadline`; an SSE stream is read until the response with
    /// `until_id` arrives (or its end).
    pub async fn exchange(
        &self,
        method: &str,
        body: Option<&[u8]>,
        extra: &[(&str, Option<String>)],
        until_id: Option<&Value>,
        deadline: Instant,
    ) -> HttpExchange {
        self.exchange_telling_head(method, body, extra, until_id, deadline, None).await
    }

    /// [`HttpWire::exchange`], telling `head` when the response's status and headers have come
    /// (before its body or stream: what a request in flight on an SSE stream looks like).
    pub async fn exchange_telling_head(
        &self,
        method: &str,
        body: Option<&[u8]>,
        extra: &[(&str, Option<String>)],
        until_id: Option<&Value>,
        deadline: Instant,
        head: Option<tokio::sync::oneshot::Sender<()>>,
    ) -> HttpExchange {
        let mut headers: Vec<(String, String)> = vec![
            ("host".into(), self.endpoint.authority.clone()),
            ("accept".into(), "application/json, text/event-stream".into()),
        ];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        if let Some(session) = &self.session {
            headers.push(("mcp-session-id".into(), session.clone()));
        }
        if let Some(version) = &self.protocol_version {
            headers.push(("mcp-protocol-version".into(), version.clone()));
        }
        for (k, v) in &self.headers {
            headers.push((k.to_ascii_lowercase(), v.clone()));
        }
        for (k, v) in extra {
            headers.retain(|(name, _)| name != k);
            if let Some(v) = v {
                headers.push(((*k).to_owned(), v.clone()));
            }
        }
        let mut request = hyper::Request::builder().method(method).uri(self.path.as_str());
        for (k, v) in &headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let request = match request.body(Full::new(Bytes::copy_from_slice(body.unwrap_or_default()))) {
            Ok(r) => r,
            Err(e) => return HttpExchange { error: Some(format!("building the request: {e}")), ..Default::default() },
        };
        match timeout_at(deadline, self.run(request, until_id, head)).await {
            Ok(exchange) => exchange,
            Err(_) => HttpExchange { error: Some("timed out".into()), ..Default::default() },
        }
    }

    async fn run(
        &self,
        request: hyper::Request<Full<Bytes>>,
        until_id: Option<&Value>,
        head: Option<tokio::sync::oneshot::Sender<()>>,
    ) -> HttpExchange {
        let mut out = HttpExchange::default();
        let mut sender = match self.connect().await {
            Ok(s) => s,
            Err(e) => {
                out.error = Some(e);
                return out;
            }
        };
        let response = match sender.send_request(request).await {
            Ok(r) => r,
            Err(e) => {
                out.error = Some(format!("the request failed: {e}"));
                return out;
            }
        };
        if let Some(head) = head {
            let _ = head.send(());
        }
        out.seen.status = response.status().as_u16();
        for (name, value) in response.headers() {
            out.seen.headers.insert(name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned());
        }
        let sse = out
            .seen
            .headers
            .get("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
        let mut body = response.into_body();
        if !sse {
            match http_body_util::Limited::new(body, MAX_FRAME).collect().await {
                Ok(bytes) => {
                    let bytes = bytes.to_bytes();
                    match serde_json::from_slice::<Value>(&bytes) {
                        Ok(Value::Array(items)) => out.messages.extend(items),
                        Ok(v @ Value::Object(_)) => out.messages.push(v),
                        _ if bytes.is_empty() => {}
                        _ => out.seen.body_excerpt = excerpt(&String::from_utf8_lossy(&bytes)),
                    }
                }
                Err(e) => out.error = Some(format!("reading the body: {e}")),
            }
            return out;
        }
        let mut decoder = SseDecoder::with_max_event_bytes(MAX_FRAME);
        let mut buf = BytesMut::new();
        loop {
            match body.frame().await {
                None => break,
                Some(Err(e)) => {
                    out.error = Some(format!("the stream broke: {e}"));
                    break;
                }
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else { continue };
                    buf.extend_from_slice(&data);
                    while let Some(event) = decoder.decode(&mut buf) {
                        match event {
                            Ok(event) if event.data.is_empty() => {
                                if let Some(id) = event.id.filter(|i| !i.is_empty()) {
                                    out.event_ids.push((id, false));
                                }
                            }
                            Ok(event) => match serde_json::from_str::<Value>(&event.data) {
                                Ok(message) => {
                                    let done = until_id
                                        .is_some_and(|id| is_response(&message) && message.get("id") == Some(id));
                                    if let Some(id) = event.id.filter(|i| !i.is_empty()) {
                                        out.event_ids.push((id, done));
                                    }
                                    out.messages.push(message);
                                    if done {
                                        return out;
                                    }
                                }
                                Err(_) => out.seen.body_excerpt = excerpt(&event.data),
                            },
                            Err(e) => {
                                out.error = Some(format!("bad SSE: {e}"));
                                return out;
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

async fn handshake(
    io: Box<dyn crate::endpoint::Io>,
) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, String> {
    let handshake = mcpwire::transport::sse_http::connector::http1_handshake(io).await;
    Ok(handshake.map_err(|e| format!("http handshake: {e}"))?.0)
}

/// A connection to the server under test, whichever the transport: what the battery uses.
pub enum Wire {
    /// A child process.
    Stdio(StdioWire),
    /// The legacy HTTP+SSE transport.
    Sse(super::sse_wire::SseWire),
    /// An HTTP endpoint, and the unsolicited messages seen on its streams.
    Http(HttpWire, Unsolicited),
}

/// The result of a request over a [`Wire`]: the reply and, over HTTP, the exchange's status and
/// headers.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The JSON-RPC reply.
    pub reply: Reply,
    /// The HTTP side, over HTTP.
    pub http: Option<HttpSeen>,
}

impl Wire {
    /// Sends a request and waits (at most `timeout`) for its response.
    pub async fn request(&mut self, message: &Value, timeout: Duration) -> Answer {
        match self {
            Wire::Stdio(w) => Answer { reply: w.request(message, timeout).await, http: None },
            Wire::Sse(w) => Answer { reply: w.request(message, timeout).await, http: None },
            Wire::Http(w, unsolicited) => {
                let body = message.to_string();
                let id = message.get("id").cloned().unwrap_or(Value::Null);
                let extra = metadata_headers(w, message);
                let exchange =
                    w.exchange("POST", Some(body.as_bytes()), &extra, Some(&id), Instant::now() + timeout).await;
                let mut reply = None;
                for m in exchange.messages {
                    if reply.is_none() && is_response(&m) && m.get("id") == Some(&id) {
                        reply = Some(m);
                    } else if refuse_server_request(&m).is_none() {
                        unsolicited.note(m);
                    }
                }
                let reply = match (reply, exchange.error) {
                    (Some(m), _) => Reply::Message(m),
                    (None, Some(e)) if e == "timed out" => Reply::Timeout,
                    (None, Some(e)) => Reply::Closed(e),
                    (None, None) if !exchange.seen.body_excerpt.is_empty() => {
                        Reply::Closed(format!("http {}: {}", exchange.seen.status, exchange.seen.body_excerpt))
                    }
                    (None, None) => {
                        Reply::Closed(format!("http {} with no answer to the request", exchange.seen.status))
                    }
                };
                Answer { reply, http: Some(exchange.seen) }
            }
        }
    }

    /// Sends a notification (or a response); over HTTP, returns the exchange (202 expected).
    pub async fn notify(&mut self, message: &Value, timeout: Duration) -> Result<Option<HttpExchange>, String> {
        match self {
            Wire::Stdio(w) => w.send(message).await.map(|()| None),
            Wire::Sse(w) => w.send(message).await.map(|_| None),
            Wire::Http(w, unsolicited) => {
                let body = message.to_string();
                let extra = metadata_headers(w, message);
                let exchange = w.exchange("POST", Some(body.as_bytes()), &extra, None, Instant::now() + timeout).await;
                for m in &exchange.messages {
                    unsolicited.note(m.clone());
                }
                Ok(Some(exchange))
            }
        }
    }

    /// What came unasked so far.
    pub fn unsolicited(&self) -> &Unsolicited {
        match self {
            Wire::Stdio(w) => &w.inbox.unsolicited,
            Wire::Sse(w) => &w.inbox.unsolicited,
            Wire::Http(_, u) => u,
        }
    }

    /// Ends the connection (a child process is stopped; an HTTP session is left to the caller).
    pub async fn close(self) {
        match self {
            Wire::Stdio(w) => w.close().await,
            Wire::Sse(w) => w.close(),
            Wire::Http(..) => {}
        }
    }
}

/// The 2026-07-28 request metadata headers (`Mcp-Method`, `Mcp-Name`) for a request sent at
/// that revision; none for earlier ones.
fn metadata_headers(wire: &HttpWire, message: &Value) -> Vec<(&'static str, Option<String>)> {
    if wire.protocol_version.as_deref() != Some("2026-07-28") {
        return Vec::new();
    }
    let mut extra = Vec::new();
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        extra.push(("mcp-method", Some(method.to_owned())));
        if let Some(key) = mcpwire::proto::envelope::name_member(method) {
            if let Some(name) = message.pointer(&format!("/params/{key}")).and_then(Value::as_str) {
                extra.push(("mcp-name", Some(mcpwire::proto::envelope::encode_header_value(name).into_owned())));
            }
        }
    }
    extra
}
