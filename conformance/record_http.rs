//! Recording an HTTP session: a loopback reverse proxy between a client and a Streamable HTTP
//! or legacy HTTP+SSE server (`mcp-conformance record OUT.jsonl --listen ADDR --target URL`).
//!
//! Every request is forwarded to the target (same method, path and query, body and headers,
//! except `Host`, which names the target, and the hop-by-hop headers), and its response is sent
//! back with the target's status, headers and bytes. An SSE response is relayed chunk by chunk
//! as it arrives, never buffered to its end; a response of any other type (a JSON body, 202,
//! an error) is read whole, logged, then sent on in one piece, byte for byte. Each message is
//! logged before it is forwarded, so the recording's order is never the reverse of cause and
//! effect (a server request is always logged before the client's answer to it).
//!
//! The one rewrite: a legacy `endpoint` event whose URL is absolute and names the target is
//! rewritten to name the proxy (else the client would bypass it); the description says so.
//! A relative endpoint (what server-everything sends) passes untouched.
//!
//! The recording follows `conformance/recordings/README.md`: one line per request (when its
//! body has arrived), per JSON response body and per SSE event, each with its `http` object;
//! `response_headers`/`response_body` on a request's line when its response carried no
//! JSON-RPC message. The header is filled as by the stdio recorder
//! ([`mcpwire::recording::record::write_recording`]); `transport` is `sse` when the client opened a legacy
//! stream (`GET /sse`, or any stream whose first event is `endpoint`).
//!
//! The proxy runs until the `stop` future given to [`record_http`] completes (the CLI: SIGINT
//! or SIGTERM), then writes the file. Streams still open at that moment are recorded up to
//! there. Only plain `http://` targets; one upstream connection per request.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

use mcpwire::transport::sse_http::connector::Connector;
use tokio::sync::mpsc;

use super::replay_http::headers_where;
use crate::http_body::{full, is_media, ChannelBody, HttpBody};
use mcpwire::proto::framing::SseDecoder;
use mcpwire::recording::record::{write_recording, Logged, Payload};
use mcpwire::recording::Dir;

/// What `record --listen` needs to know.
#[derive(Debug, Clone)]
pub struct HttpRecordOptions {
    /// Where the recording is written.
    pub out: PathBuf,
    /// The header's description.
    pub description: Option<String>,
    /// Where the proxy listens (`127.0.0.1:0` for a free port).
    pub listen: SocketAddr,
    /// The server: `http://HOST:PORT` (a path in it is ignored: clients' paths are forwarded
    /// as they are).
    pub target: String,
}

/// What a finished recording holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRecordSummary {
    /// Lines written after the header.
    pub lines: usize,
    /// `streamable-http` or `sse`.
    pub transport: &'static str,
}

/// Header names kept in `http.headers` and `response_headers`: the README's list.
fn kept_header(name: &str) -> bool {
    matches!(name, "content-type" | "accept" | "last-event-id" | "allow") || name.starts_with("mcp-")
}

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1); never forwarded.
fn hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

type Headers = BTreeMap<String, String>;

fn kept_headers(headers: &HeaderMap) -> Headers {
    headers_where(headers, kept_header)
}

/// One HTTP request and what came back.
#[derive(Debug, Clone, Default)]
struct Exchange {
    method: String,
    /// Path and query, as requested.
    path: String,
    request_headers: Headers,
    status: Option<u16>,
    response_headers: Option<Headers>,
    /// A response body that was not a JSON-RPC message.
    response_body: String,
    /// Whether any line carried a JSON-RPC message of this response.
    carried_message: bool,
}

/// The SSE fields of a line that came as an event.
#[derive(Debug, Clone, Default)]
struct SseFields {
    id: Option<String>,
    event: Option<String>,
    retry: Option<u64>,
}

#[derive(Debug, Clone)]
struct Entry {
    t_ms: u64,
    dir: Dir,
    payload: Payload,
    exchange: usize,
    sse: Option<SseFields>,
}

#[derive(Default)]
struct State {
    exchanges: Vec<Exchange>,
    entries: Vec<Entry>,
    legacy: bool,
    notes: Vec<String>,
}

struct Capture {
    start: Instant,
    /// The wall-clock time of `start`, for the header's `started_at`.
    started_at: SystemTime,
    state: Mutex<State>,
}

impl Capture {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("capture lock")
    }

    fn t_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Logs a request (once its body has arrived); returns its exchange number.
    fn request(&self, exchange: Exchange, payload: Payload) -> usize {
        let mut state = self.lock();
        // Under the lock: `t_ms` never decreases along `seq`.
        let t_ms = self.t_ms();
        let id = state.exchanges.len();
        state.exchanges.push(exchange);
        state.entries.push(Entry { t_ms, dir: Dir::ClientToServer, payload, exchange: id, sse: None });
        id
    }

    fn response_head(&self, exchange: usize, status: u16, headers: Headers) {
        let mut state = self.lock();
        let x = &mut state.exchanges[exchange];
        x.status = Some(status);
        x.response_headers = Some(headers);
    }

    fn response(&self, exchange: usize, payload: Payload, sse: Option<SseFields>) {
        let mut state = self.lock();
        let t_ms = self.t_ms();
        if matches!(payload, Payload::Message(_)) {
            state.exchanges[exchange].carried_message = true;
        }
        state.entries.push(Entry { t_ms, dir: Dir::ServerToClient, payload, exchange, sse });
    }

    fn note(&self, note: String) {
        eprintln!("mcp-conformance record: {note}");
        self.lock().notes.push(note);
    }
}

/// The `http` object of one line, members in the README's order.
fn http_object(entry: &Entry, x: &Exchange) -> String {
    let s = |v: &str| Value::String(v.to_owned()).to_string();
    let headers = |h: &Headers| serde_json::to_string(h).expect("a string map serializes");
    let empty = Headers::new();
    let mut out = format!("{{\"method\":{},\"path\":{}", s(&x.method), s(&x.path));
    match x.status {
        Some(status) => out.push_str(&format!(",\"status\":{status}")),
        None => out.push_str(",\"status\":null"),
    }
    let shown = match entry.dir {
        Dir::ClientToServer => &x.request_headers,
        Dir::ServerToClient => x.response_headers.as_ref().unwrap_or(&empty),
    };
    out.push_str(&format!(",\"headers\":{}", headers(shown)));
    if let Some(sse) = &entry.sse {
        out.push_str(&format!(",\"sse_event_id\":{}", sse.id.as_deref().map(s).unwrap_or_else(|| "null".into())));
        if let Some(event) = sse.event.as_deref().filter(|e| *e != "message") {
            out.push_str(&format!(",\"sse_event\":{}", s(event)));
        }
        if let Some(retry) = sse.retry {
            out.push_str(&format!(",\"sse_retry\":{retry}"));
        }
    }
    if entry.dir == Dir::ClientToServer && !x.carried_message {
        if let Some(response_headers) = &x.response_headers {
            out.push_str(&format!(",\"response_headers\":{}", headers(response_headers)));
        }
        if !x.response_body.is_empty() {
            out.push_str(&format!(",\"response_body\":{}", s(&x.response_body)));
        }
    }
    out.push('}');
    out
}

/// The target server.
#[derive(Debug, Clone)]
struct Target {
    /// `host:port` as given.
    authority: String,
    host: String,
    port: u16,
}

impl Target {
    fn parse(url: &str) -> io::Result<Target> {
        let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("--target {url}: {why}"));
        let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
        if uri.scheme_str() != Some("http") {
            return Err(bad("only http://HOST:PORT targets are supported"));
        }
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = authority.port_u16().unwrap_or(80);
        Ok(Target { authority: authority.as_str().to_owned(), host, port })
    }
}

struct Proxy {
    capture: Capture,
    target: Target,
    /// The proxy's own `host:port`, for rewriting an absolute legacy endpoint.
    own_authority: String,
}

/// Runs the proxy on `options.listen` until `stop` completes, then writes the recording.
/// `ready` is called with the bound address once the proxy accepts connections.
///
/// # Errors
/// When the address cannot be bound, the target is not an `http://` URL, or the file cannot be
/// written.
pub async fn record_http(
    options: &HttpRecordOptions,
    ready: impl FnOnce(SocketAddr),
    stop: impl Future<Output = ()>,
) -> io::Result<HttpRecordSummary> {
    let target = Target::parse(&options.target)?;
    let listener = TcpListener::bind(options.listen).await?;
    let addr = listener.local_addr()?;
    let proxy = Arc::new(Proxy {
        capture: Capture { start: Instant::now(), started_at: SystemTime::now(), state: Mutex::new(State::default()) },
        target,
        own_authority: addr.to_string(),
    });
    ready(addr);
    tokio::pin!(stop);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let _ = tcp.set_nodelay(true);
        let proxy = proxy.clone();
        let service = hyper::service::service_fn(move |req| {
            let proxy = proxy.clone();
            async move { Ok::<_, Infallible>(proxy.forward(req).await) }
        });
        tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service));
    }
    drop(listener);
    let state = proxy.capture.lock();
    let transport = if state.legacy { "sse" } else { "streamable-http" };
    let lines: Vec<Logged> = state
        .entries
        .iter()
        .map(|e| Logged {
            t_ms: e.t_ms,
            dir: e.dir,
            payload: e.payload.clone(),
            http: Some(http_object(e, &state.exchanges[e.exchange])),
        })
        .collect();
    let mut description = options
        .description
        .clone()
        .unwrap_or_else(|| format!("recorded by mcp-conformance record --target {}", options.target));
    for note in &state.notes {
        description.push_str(&format!(" [recorder: {note}]"));
    }
    write_recording(&options.out, transport, &description, proxy.capture.started_at, &lines)?;
    Ok(HttpRecordSummary { lines: lines.len(), transport })
}

fn text_response(status: StatusCode, text: String) -> Response<HttpBody> {
    let mut response = Response::new(full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| is_media(v, "text/event-stream"))
}

impl Proxy {
    async fn forward(self: Arc<Self>, req: Request<Incoming>) -> Response<HttpBody> {
        let (parts, body) = req.into_parts();
        let body = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return text_response(StatusCode::BAD_REQUEST, format!("reading the request body: {e}")),
        };
        let path = parts.uri.path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_else(|| "/".into());
        let is_get = parts.method == hyper::Method::GET;
        let exchange = Exchange {
            method: parts.method.as_str().to_owned(),
            path: path.clone(),
            request_headers: kept_headers(&parts.headers),
            ..Exchange::default()
        };
        let payload =
            if body.is_empty() { Payload::Nothing } else { Payload::of_text(&String::from_utf8_lossy(&body)) };
        let capture = &self.capture;
        let id = capture.request(exchange, payload);
        if is_get && parts.uri.path() == "/sse" {
            capture.lock().legacy = true;
        }

        let mut upstream = Request::builder().method(parts.method.clone()).uri(path.as_str());
        for (name, value) in &parts.headers {
            if name != HOST && name != CONTENT_LENGTH && !hop_by_hop(name.as_str()) {
                upstream = upstream.header(name, value);
            }
        }
        let upstream = upstream.header(HOST, self.target.authority.as_str()).body(full(body));
        let response = match upstream {
            Ok(request) => self.send(request).await,
            Err(e) => Err(io::Error::other(e)),
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                let text = format!("mcp-conformance record: target {} failed: {e}", self.target.authority);
                capture.note(format!("{} {path}: {text}", parts.method));
                capture.response_head(id, 502, Headers::new());
                capture.lock().exchanges[id].response_body = text.clone();
                return text_response(StatusCode::BAD_GATEWAY, text);
            }
        };
        let (rparts, rbody) = response.into_parts();
        capture.response_head(id, rparts.status.as_u16(), kept_headers(&rparts.headers));
        let sse = is_event_stream(&rparts.headers);
        let mut out = Response::new(crate::http_body::empty());
        *out.status_mut() = rparts.status;
        for (name, value) in &rparts.headers {
            // An SSE stream is relayed chunk by chunk (and its first event may be rewritten),
            // so a length, if the server gave one, is left for hyper to work out.
            let dropped = hop_by_hop(name.as_str()) || (sse && name == CONTENT_LENGTH);
            if !dropped {
                out.headers_mut().append(name, value.clone());
            }
        }
        if sse {
            let (tx, rx) = mpsc::channel(64);
            tokio::spawn(self.clone().relay_events(id, rbody, tx, is_get));
            *out.body_mut() = ChannelBody::boxed(rx);
        } else {
            let bytes = match rbody.collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => {
                    capture.note(format!("{} {path}: the response body broke off: {e}", parts.method));
                    Bytes::new()
                }
            };
            let text = String::from_utf8_lossy(&bytes);
            match Payload::of_text(&text) {
                Payload::Message(json) => capture.response(id, Payload::Message(json), None),
                _ => capture.lock().exchanges[id].response_body = text.into_owned(),
            }
            *out.body_mut() = full(bytes);
        }
        out
    }

    async fn send(&self, request: Request<HttpBody>) -> io::Result<Response<Incoming>> {
        // The target is plain http (checked by `Target::parse`); no connect timeout of our own
        // (a proxy waits as long as its client does).
        let connector = Connector::new()?.connect_timeout(Duration::MAX);
        let mut sender = connector.http1(false, &self.target.host, self.target.port).await?;
        sender.send_request(request).await.map_err(io::Error::other)
    }

    /// Relays an SSE response to the client as it arrives, logging each event before the bytes
    /// that complete it are forwarded. On a GET, bytes are held until the first event is
    /// complete, so that a legacy `endpoint` event naming the target can be rewritten.
    async fn relay_events(self: Arc<Self>, exchange: usize, mut body: Incoming, tx: mpsc::Sender<Bytes>, is_get: bool) {
        let mut decoder = SseDecoder::new();
        let mut pending = BytesMut::new();
        let mut held: Option<Vec<u8>> = is_get.then(Vec::new);
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                () = tx.closed() => return,
            };
            let chunk = match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
                Some(Err(e)) => {
                    self.capture.note(format!("exchange {}: the SSE stream broke off: {e}", exchange + 1));
                    break;
                }
                None => break,
            };
            pending.extend_from_slice(&chunk);
            let mut rewrite = None;
            let mut first_done = false;
            while let Some(event) = decoder.decode(&mut pending) {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => {
                        self.capture.note(format!("exchange {}: an SSE event was skipped: {e}", exchange + 1));
                        continue;
                    }
                };
                let endpoint = event.event.as_deref() == Some("endpoint");
                let mut data = event.data;
                if endpoint {
                    self.capture.lock().legacy = true;
                    if held.is_some() && !first_done {
                        if let Some(new) = self.rewritten_endpoint(&data) {
                            rewrite = Some((data.clone(), new.clone()));
                            data = new;
                        }
                    }
                }
                first_done = true;
                let payload = if endpoint { Payload::Raw(data) } else { Payload::of_text(&data) };
                let sse = SseFields { id: event.id, event: event.event, retry: event.retry };
                self.capture.response(exchange, payload, Some(sse));
            }
            let out = match held.take() {
                Some(mut bytes) => {
                    bytes.extend_from_slice(&chunk);
                    if !first_done {
                        held = Some(bytes);
                        continue;
                    }
                    if let Some((old, new)) = rewrite {
                        self.capture.note(format!("the endpoint event's URL {old} was rewritten to {new}"));
                        bytes = replace_once(&bytes, old.as_bytes(), new.as_bytes());
                    }
                    Bytes::from(bytes)
                }
                None => chunk,
            };
            if tx.send(out).await.is_err() {
                return;
            }
        }
        if let Some(bytes) = held.filter(|b| !b.is_empty()) {
            let _ = tx.send(Bytes::from(bytes)).await;
        }
    }

    /// The proxy's URL for an absolute endpoint URL naming the target; `None` for anything else.
    fn rewritten_endpoint(&self, url: &str) -> Option<String> {
        let rest = url.strip_prefix("http://")?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        (authority.eq_ignore_ascii_case(&self.target.authority)).then(|| format!("http://{}{path}", self.own_authority))
    }
}

fn replace_once(haystack: &[u8], old: &[u8], new: &[u8]) -> Vec<u8> {
    match haystack.windows(old.len().max(1)).position(|w| w == old) {
        Some(at) if !old.is_empty() => [&haystack[..at], new, &haystack[at + old.len()..]].concat(),
        _ => haystack.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy(target: &str) -> Proxy {
        Proxy {
            capture: Capture {
                start: Instant::now(),
                started_at: SystemTime::now(),
                state: Mutex::new(State::default()),
            },
            target: Target::parse(target).unwrap(),
            own_authority: "127.0.0.1:4000".into(),
        }
    }

    #[test]
    fn only_an_absolute_endpoint_naming_the_target_is_rewritten() {
        let p = proxy("http://127.0.0.1:3002");
        assert_eq!(
            p.rewritten_endpoint("http://127.0.0.1:3002/message?sessionId=a").as_deref(),
            Some("http://127.0.0.1:4000/message?sessionId=a")
        );
        assert_eq!(p.rewritten_endpoint("/message?sessionId=a"), None);
        assert_eq!(p.rewritten_endpoint("http://example.com/message"), None);
        let bytes = replace_once(b"event: endpoint\ndata: http://x/m\n\n", b"http://x/m", b"http://y/m");
        assert_eq!(bytes, b"event: endpoint\ndata: http://y/m\n\n");
    }

    #[test]
    fn targets_must_be_plain_http() {
        assert!(Target::parse("https://127.0.0.1:1").is_err());
        assert!(Target::parse("nonsense").is_err());
        let t = Target::parse("http://localhost:3001/mcp").unwrap();
        assert_eq!((t.authority.as_str(), t.host.as_str(), t.port), ("localhost:3001", "localhost", 3001));
    }

    #[test]
    fn http_objects_follow_the_readme() {
        let mut request_headers = Headers::new();
        request_headers.insert("content-type".into(), "application/json".into());
        let x = Exchange {
            method: "POST".into(),
            path: "/message?sessionId=1".into(),
            request_headers,
            status: Some(202),
            response_headers: Some(Headers::new()),
            response_body: "Accepted".into(),
            carried_message: false,
        };
        let c2s = Entry { t_ms: 0, dir: Dir::ClientToServer, payload: Payload::Nothing, exchange: 0, sse: None };
        assert_eq!(
            http_object(&c2s, &x),
            r#"{"method":"POST","path":"/message?sessionId=1","status":202,"headers":{"content-type":"application/json"},"response_headers":{},"response_body":"Accepted"}"#
        );
        let sse = SseFields { id: None, event: Some("endpoint".into()), retry: Some(5) };
        let s2c = Entry { t_ms: 0, dir: Dir::ServerToClient, payload: Payload::Nothing, exchange: 0, sse: Some(sse) };
        assert_eq!(
            http_object(&s2c, &x),
            r#"{"method":"POST","path":"/message?sessionId=1","status":202,"headers":{},"sse_event_id":null,"sse_event":"endpoint","sse_retry":5}"#
        );
    }

    #[test]
    fn kept_headers_are_lower_case_and_filtered() {
        let mut h = HeaderMap::new();
        h.insert("Mcp-Session-Id", HeaderValue::from_static("abc"));
        h.insert("Content-Type", HeaderValue::from_static("text/event-stream"));
        h.insert("Cache-Control", HeaderValue::from_static("no-cache"));
        h.append("Accept", HeaderValue::from_static("application/json"));
        h.append("Accept", HeaderValue::from_static("text/event-stream"));
        let kept = kept_headers(&h);
        assert_eq!(
            serde_json::to_string(&kept).unwrap(),
            r#"{"accept":"application/json, text/event-stream","content-type":"text/event-stream","mcp-session-id":"abc"}"#
        );
    }
}
