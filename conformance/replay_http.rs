//! Replaying an HTTP recording (`streamable-http` or `sse`) as raw HTTP exchanges against a live
//! server, checking the recorded `http` members as well as the messages. The server is at a URL
//! ([`replay_raw_http`]) or a `tower` Service called in process ([`replay_raw_http_service`]:
//! the same exchanges and checks without a socket).
//!
//! Each recorded `c2s` line is re-issued as the request it was: method, path, the recorded
//! request headers, the recorded body (our request ids as recorded, the answers to the server's
//! requests with the live ids). Run-to-run values are carried over as they appear: the session
//! id the live server issued replaces the recorded one, the live `endpoint` URL of the legacy
//! transport replaces the recorded one, and a recorded `Last-Event-ID` becomes the live id of
//! the event it named. Every response is read by a task of its own (SSE streams stay open while
//! the script goes on, so a server request on a POST's stream is answered while that stream
//! waits), and what arrives is checked against the recording:
//!
//! - the status; the kept response headers ([`header_differences`]: `content-type` up to
//!   parameters, `mcp-session-id` present iff recorded, other `mcp-*` and `allow` equal);
//! - per `s2c` line: that it came on the stream of the same request, as an SSE event or a JSON
//!   body as recorded, with an event id iff one was recorded, of the recorded event type; priming
//!   and `endpoint` events where recorded; the message under the rules of `matching`;
//! - `response_headers`/`response_body` of `c2s` lines (202, DELETE, the legacy `Accepted`).
//!
//! Order: each stream's messages are matched in their own pool (the rules' notification
//! reordering applies within it), so the interleaving of independent streams is not demanded;
//! a request is sent only once every server message recorded before it has arrived. A stream
//! the recorded client abandoned (its last event is the `Last-Event-ID` of a later request) is
//! dropped after that event, and resumed as recorded; events lost or repeated show up as missing
//! or unexpected messages. Not checked: `t_ms` (except that a resumption waits as long as the
//! recorded client did), `sse_retry`, headers other than the kept ones.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::{timeout_at, Instant};

use super::endpoint::Endpoint;
use super::matching::{kind_of, would_match, Kind, Matcher};
use super::replay::{abbreviate, describe, outgoing, Failure, ReplayOptions};
use mcpwire::proto::framing::{SseDecoder, SseEvent};
use mcpwire::recording::{Dir, Entry, Recording};

/// Largest response body or SSE event read: 16 MiB.
const MAX_BODY: usize = 16 << 20;

/// The media type of a `Content-Type` value: lower case, without parameters.
pub fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// Whether a response header is one the recordings keep: `content-type`, `allow`, `mcp-*`.
pub fn is_kept_response_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "content-type" || name == "allow" || name.starts_with("mcp-")
}

/// The kept response headers, names lower case (several values of one header joined by `, `).
pub fn kept_headers(headers: &hyper::HeaderMap) -> BTreeMap<String, String> {
    headers_where(headers, is_kept_response_header)
}

/// The headers whose (lower-case) name `keep` accepts, several values of one header joined by
/// `, ` (also how the recorder keeps request headers).
pub(crate) fn headers_where(headers: &hyper::HeaderMap, keep: impl Fn(&str) -> bool) -> BTreeMap<String, String> {
    let mut kept: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        if !keep(name.as_str()) {
            continue;
        }
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        kept.entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    kept
}

/// One kept header that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderDifference {
    /// Lower-case name.
    pub name: String,
    /// What was recorded (`None`: absent).
    pub expected: Option<String>,
    /// What the live server sent (`None`: absent).
    pub actual: Option<String>,
}

fn allow_set(value: &str) -> Vec<String> {
    let mut methods: Vec<String> =
        value.split(',').map(|m| m.trim().to_ascii_uppercase()).filter(|m| !m.is_empty()).collect();
    methods.sort();
    methods.dedup();
    methods
}

/// The differences between recorded and live kept response headers: `content-type` compared by
/// media type, `mcp-session-id` by presence only (its value is the server's choice), `allow`
/// as a set of methods, every other header exactly; a header on one side only is a difference.
pub fn header_differences(recorded: &Map<String, Value>, live: &BTreeMap<String, String>) -> Vec<HeaderDifference> {
    let mut names: Vec<String> = recorded.keys().map(|k| k.to_ascii_lowercase()).collect();
    names.extend(live.keys().cloned());
    names.sort();
    names.dedup();
    let mut differences = Vec::new();
    for name in names {
        if !is_kept_response_header(&name) {
            continue;
        }
        let expected = recorded
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(&name))
            .map(|(_, v)| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()));
        let actual = live.get(&name).cloned();
        let same = match (&expected, &actual) {
            (None, None) => true,
            (Some(e), Some(a)) => match name.as_str() {
                "content-type" => media_type(e) == media_type(a),
                "mcp-session-id" => true,
                "allow" => allow_set(e) == allow_set(a),
                _ => e == a,
            },
            _ => false,
        };
        if !same {
            differences.push(HeaderDifference { name, expected, actual });
        }
    }
    differences
}

/// Recorded SSE event ids and the live ids of the same events, learned as events are matched.
#[derive(Debug, Default, Clone)]
pub struct EventIds {
    live: HashMap<String, String>,
}

impl EventIds {
    /// Records that the event recorded with id `recorded` came live with id `live`.
    ///
    /// # Errors
    /// When `recorded` already stood for another live id, or `live` for another recorded one.
    pub fn learn(&mut self, recorded: &str, live: &str) -> Result<(), String> {
        if let Some(before) = self.live.get(recorded) {
            return if before == live {
                Ok(())
            } else {
                Err(format!("event id {recorded:?} was live {before:?} before, now {live:?}"))
            };
        }
        if let Some((other, _)) = self.live.iter().find(|(_, l)| l.as_str() == live) {
            return Err(format!("live event id {live:?} already stood for recorded {other:?}"));
        }
        self.live.insert(recorded.to_owned(), live.to_owned());
        Ok(())
    }

    /// The live id of the event recorded as `recorded`, once matched.
    pub fn live(&self, recorded: &str) -> Option<&str> {
        self.live.get(recorded).map(String::as_str)
    }
}

fn http_str<'e>(entry: &'e Entry, key: &str) -> Option<&'e str> {
    entry.http.as_ref()?.get(key)?.as_str()
}

fn parsed(entry: &Entry) -> Option<Value> {
    serde_json::from_str(entry.msg.as_ref()?.get()).ok()
}

/// The ids (as JSON text) of the requests in a message or batch.
fn request_ids(msg: &Value) -> Vec<String> {
    let one = |m: &Value| (kind_of(m) == Kind::Request).then(|| m.get("id").map(Value::to_string)).flatten();
    match msg {
        Value::Array(items) => items.iter().filter_map(one).collect(),
        m => one(m).into_iter().collect(),
    }
}

/// For each entry, the index of the `c2s` entry whose HTTP exchange carried it (`None`: no
/// `http` member, or no open exchange fits).
///
/// A `c2s` line opens an exchange, closed at once when its response is on the line itself
/// (`response_headers`). An `s2c` line belongs to an open exchange of its `method` and `path`:
/// a response to the one whose body held its request, an error without id (an HTTP-level
/// rejection) or a priming event to the newest one that had nothing yet, anything else to the
/// newest. A POST exchange closes when every request it carried is answered.
pub fn assign_exchanges(entries: &[Entry]) -> Vec<Option<usize>> {
    struct Open {
        index: usize,
        method: String,
        path: String,
        pending: Vec<String>,
        got: usize,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let (Some(method), Some(path)) = (http_str(entry, "method"), http_str(entry, "path")) else {
            out.push(None);
            continue;
        };
        if entry.dir == Dir::ClientToServer {
            out.push(Some(i));
            let closed = entry.http.as_ref().is_some_and(|h| h.get("response_headers").is_some());
            if !closed {
                let pending = parsed(entry).map(|m| request_ids(&m)).unwrap_or_default();
                open.push(Open { index: i, method: method.to_owned(), path: path.to_owned(), pending, got: 0 });
            }
            continue;
        }
        let msg = parsed(entry);
        let candidates: Vec<usize> =
            (0..open.len()).rev().filter(|&k| open[k].method == method && open[k].path == path).collect();
        let response_id = msg.as_ref().filter(|m| kind_of(m) == Kind::Response).map(|m| m.get("id").cloned());
        let chosen = match &response_id {
            Some(Some(id)) if !id.is_null() => {
                let id = id.to_string();
                candidates.iter().copied().find(|&k| open[k].pending.contains(&id))
            }
            Some(_) => candidates.iter().copied().find(|&k| open[k].got == 0),
            None if entry.raw.as_deref() == Some("") => candidates.iter().copied().find(|&k| open[k].got == 0),
            None => None,
        }
        .or_else(|| candidates.first().copied());
        let Some(k) = chosen else {
            out.push(None);
            continue;
        };
        out.push(Some(open[k].index));
        open[k].got += 1;
        match response_id {
            Some(Some(id)) if !id.is_null() => {
                let id = id.to_string();
                open[k].pending.retain(|p| *p != id);
                if open[k].pending.is_empty() && method != "GET" {
                    open.remove(k);
                }
            }
            Some(_) => {
                open.remove(k);
            }
            None => {}
        }
    }
    out
}

/// Where the server under test is, and the path standing for the recording's first path (when
/// the URL has one).
#[derive(Clone)]
struct Target {
    server: Server,
    /// What the `Host` header says.
    authority: String,
    /// Recorded first path → the URL's path.
    path_map: Option<(String, String)>,
}

/// A server reached over a connection, or called in process.
#[derive(Clone)]
enum Server {
    Url(Endpoint),
    InProcess(InProcess),
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A response body as the replay reads it, whichever server gave it; its error as text (a
/// boxed error here trips rustc's check that the exchange's future is `Send`).
type LiveBody = http_body_util::combinators::UnsyncBoxBody<Bytes, String>;

type Exchanged = std::pin::Pin<Box<dyn std::future::Future<Output = Result<hyper::Response<LiveBody>, String>> + Send>>;

/// A server under test called in process: a request in, its response out.
type InProcess = std::sync::Arc<dyn Fn(hyper::Request<Full<Bytes>>) -> Exchanged + Send + Sync>;

impl Target {
    fn new(url: &str, recorded_first_path: &str) -> Result<Target, String> {
        let endpoint = Endpoint::parse(url, "--server-url")?;
        let path = endpoint.path.as_str();
        let path_map = (!path.is_empty() && path != "/").then(|| (recorded_first_path.to_owned(), path.to_owned()));
        Ok(Target { authority: endpoint.authority.clone(), server: Server::Url(endpoint), path_map })
    }

    /// Sends `request` (over a connection of its own, whose task goes into `conn_slot`) and
    /// gives the response head with its body still to read.
    async fn exchange(
        &self,
        request: hyper::Request<Full<Bytes>>,
        conn_slot: &std::sync::Mutex<Option<AbortHandle>>,
    ) -> Result<hyper::Response<LiveBody>, String> {
        match &self.server {
            Server::Url(endpoint) => {
                let (mut sender, conn) = handshake(endpoint.open().await?).await?;
                *conn_slot.lock().expect("connection slot") = Some(conn);
                let response = sender.send_request(request).await.map_err(|e| format!("request failed: {e}"))?;
                Ok(response.map(|body| body.map_err(|e| e.to_string()).boxed_unsync()))
            }
            Server::InProcess(call) => call(request).await,
        }
    }
}

async fn handshake(io: Box<dyn crate::endpoint::Io>) -> Result<(SendRequest<Full<Bytes>>, AbortHandle), String> {
    mcpwire::transport::sse_http::connector::http1_handshake(io).await.map_err(|e| format!("http handshake: {e}"))
}

/// What the task reading one exchange reports.
#[derive(Debug)]
enum Update {
    Head { status: u16, headers: BTreeMap<String, String> },
    Event(SseEvent),
    Body(Bytes),
    End(Option<String>),
}

/// One exchange in flight, or done.
async fn run_exchange(
    target: Target,
    request: hyper::Request<Full<Bytes>>,
    key: usize,
    tx: mpsc::UnboundedSender<(usize, Update)>,
    conn_slot: std::sync::Arc<std::sync::Mutex<Option<AbortHandle>>>,
) {
    let response = match target.exchange(request, &conn_slot).await {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send((key, Update::End(Some(e))));
            return;
        }
    };
    let headers = kept_headers(response.headers());
    let sse = headers.get("content-type").is_some_and(|c| media_type(c) == "text/event-stream");
    let _ = tx.send((key, Update::Head { status: response.status().as_u16(), headers }));
    let mut body = response.into_body();
    if !sse {
        let end = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
            Ok(b) => {
                let _ = tx.send((key, Update::Body(b.to_bytes())));
                None
            }
            Err(e) => Some(format!("reading the body: {e}")),
        };
        let _ = tx.send((key, Update::End(end)));
        return;
    }
    let mut decoder = SseDecoder::with_max_event_bytes(MAX_BODY);
    let mut buf = BytesMut::new();
    let end = loop {
        match body.frame().await {
            None => break None,
            Some(Err(e)) => break Some(format!("the stream broke: {e}")),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                    while let Some(event) = decoder.decode(&mut buf) {
                        match event {
                            Ok(event) => {
                                let _ = tx.send((key, Update::Event(event)));
                            }
                            Err(e) => {
                                let _ = tx.send((key, Update::End(Some(format!("bad SSE: {e}")))));
                                return;
                            }
                        }
                    }
                }
            }
        }
    };
    while let Some(Ok(event)) = decoder.decode_eof(&mut buf) {
        let _ = tx.send((key, Update::Event(event)));
    }
    let _ = tx.send((key, Update::End(end)));
}

/// What came: a JSON-RPC message (or batch), or a payload that is not JSON (priming event,
/// `endpoint` event, a body that is not JSON).
#[derive(Debug, Clone)]
enum Payload {
    Message(Value),
    Raw(String),
}

/// An SSE event's framing: its id and type.
#[derive(Debug, Clone)]
struct SseMeta {
    id: Option<String>,
    event: Option<String>,
}

#[derive(Debug, Clone)]
struct LiveItem {
    sse: Option<SseMeta>,
    payload: Payload,
}

impl LiveItem {
    fn describe(&self) -> String {
        let framing = match &self.sse {
            None => "in a JSON body".to_owned(),
            Some(m) => match &m.id {
                Some(id) => format!("as SSE event id {id:?}"),
                None => "as SSE event without id".to_owned(),
            },
        };
        match &self.payload {
            Payload::Message(v) => format!("{} {framing}", abbreviate(&v.to_string())),
            Payload::Raw(d) if d.is_empty() => format!("a priming event (empty data) {framing}"),
            Payload::Raw(d) => {
                let kind = self.sse.as_ref().and_then(|m| m.event.clone()).unwrap_or_else(|| "message".into());
                format!("{kind} data {:?} {framing}", abbreviate(d))
            }
        }
    }
}

#[derive(Debug, Default)]
struct LiveExchange {
    status: Option<u16>,
    headers: BTreeMap<String, String>,
    sse: bool,
    pool: Vec<LiveItem>,
    body: Option<Bytes>,
    ended: bool,
    abandoned: bool,
    tasks: Vec<AbortHandle>,
    conn: Option<std::sync::Arc<std::sync::Mutex<Option<AbortHandle>>>>,
}

impl LiveExchange {
    fn stop(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        if let Some(slot) = &self.conn {
            if let Some(conn) = slot.lock().expect("connection slot").take() {
                conn.abort();
            }
        }
    }
}

struct RawReplay<'r> {
    recording: &'r Recording,
    assignment: Vec<Option<usize>>,
    options: ReplayOptions,
    target: Target,
    tx: mpsc::UnboundedSender<(usize, Update)>,
    rx: mpsc::UnboundedReceiver<(usize, Update)>,
    live: HashMap<usize, LiveExchange>,
    /// Recorded session id → live one.
    sessions: HashMap<String, String>,
    /// Recorded `endpoint` data → live one.
    endpoints: Vec<(String, String)>,
    event_ids: EventIds,
    /// Recorded id (JSON text) of each of our requests → its method.
    our_requests: HashMap<String, String>,
    failures: Vec<Failure>,
}

/// Plays the client side of `recording` against the server at `url` as raw HTTP exchanges (see
/// the module docs) and returns every difference. `url` without a path means the recorded
/// paths; with one, it replaces the recording's first path (`/mcp`, `/sse`).
pub async fn replay_raw_http(
    recording: &Recording,
    url: &str,
    matcher: &mut Matcher,
    options: ReplayOptions,
) -> Vec<Failure> {
    let first_path = recording.entries.iter().find_map(|e| http_str(e, "path")).unwrap_or("/mcp").to_owned();
    let target = match Target::new(url, &first_path) {
        Ok(t) => t,
        Err(e) => {
            return vec![Failure { seq: 0, dir: Dir::ClientToServer, what: "connection".into(), detail: e }];
        }
    };
    replay_against(recording, target, matcher, options).await
}

/// [`replay_raw_http`] against a server called in process, as a `tower` Service (mcpwire's
/// `HttpService`, an axum `Router` …) rather than at a URL: the same requests, the same
/// checks, no socket. Requests carry the recorded paths and `Host: 127.0.0.1`; an abandoned
/// stream is dropped as its connection would be (its response body is dropped).
pub async fn replay_raw_http_service<S, B>(
    recording: &Recording,
    service: S,
    matcher: &mut Matcher,
    options: ReplayOptions,
) -> Vec<Failure>
where
    S: tower_service::Service<hyper::Request<Full<Bytes>>, Response = hyper::Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let call: InProcess = std::sync::Arc::new(move |request| {
        let mut service = service.clone();
        Box::pin(async move {
            std::future::poll_fn(|cx| service.poll_ready(cx)).await.map_err(|e| format!("service not ready: {e}"))?;
            let response = service.call(request).await.map_err(|e| format!("request failed: {e}"))?;
            Ok(response.map(|body| body.map_err(|e| Into::<BoxError>::into(e).to_string()).boxed_unsync()))
        })
    });
    let target = Target { server: Server::InProcess(call), authority: "127.0.0.1".into(), path_map: None };
    replay_against(recording, target, matcher, options).await
}

async fn replay_against(
    recording: &Recording,
    target: Target,
    matcher: &mut Matcher,
    options: ReplayOptions,
) -> Vec<Failure> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut replay = RawReplay {
        recording,
        assignment: assign_exchanges(&recording.entries),
        options,
        target,
        tx,
        rx,
        live: HashMap::new(),
        sessions: HashMap::new(),
        endpoints: Vec::new(),
        event_ids: EventIds::default(),
        our_requests: HashMap::new(),
        failures: Vec::new(),
    };
    for i in 0..recording.entries.len() {
        let go_on = match recording.entries[i].dir {
            Dir::ClientToServer => replay.send(i, matcher).await,
            Dir::ServerToClient => replay.expect(i, matcher).await,
        };
        if !go_on {
            break;
        }
    }
    replay.finish().await;
    replay.failures
}

impl RawReplay<'_> {
    fn entry(&self, i: usize) -> &Entry {
        &self.recording.entries[i]
    }

    /// What a recorded line is about, for reports.
    fn what(&self, i: usize) -> String {
        let entry = self.entry(i);
        let http = |k| http_str(entry, k).unwrap_or("?");
        match (&entry.msg, &entry.raw) {
            (Some(_), _) => match parsed(entry) {
                Some(Value::Array(_)) => format!("batch {} {}", http("method"), http("path")),
                Some(msg) => {
                    let kind = kind_of(&msg);
                    let method = match kind {
                        Kind::Response => self.response_method(i, &msg),
                        _ => msg.get("method").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    };
                    describe(kind, &method)
                }
                None => "message".into(),
            },
            (None, Some(_)) if http_str(entry, "sse_event").is_some_and(|e| e != "message") => {
                format!("{} event", http("sse_event"))
            }
            (None, Some(_)) => "priming event".into(),
            (None, None) => format!("{} {}", http("method"), http("path")),
        }
    }

    /// The method of the request a recorded response answers.
    fn response_method(&self, i: usize, msg: &Value) -> String {
        let entry = self.entry(i);
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        if entry.dir == Dir::ServerToClient {
            if let Some(m) = self.our_requests.get(&id.to_string()) {
                return m.clone();
            }
            // An HTTP-level rejection without id: the method of the rejected request.
            return self.assignment[i]
                .and_then(|k| parsed(self.entry(k)))
                .and_then(|m| m.get("method").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
        }
        // Our answer to a server request: the method of the latest such request before it.
        self.recording.entries[..i]
            .iter()
            .rev()
            .filter(|e| e.dir == Dir::ServerToClient)
            .filter_map(parsed)
            .find(|m| kind_of(m) == Kind::Request && m.get("id") == Some(&id))
            .and_then(|m| m.get("method").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default()
    }

    fn fail(&mut self, i: usize, detail: String) {
        let entry = self.entry(i);
        let failure = Failure { seq: entry.seq, dir: entry.dir, what: self.what(i), detail };
        self.failures.push(failure);
    }

    /// Takes one update (waiting until `deadline` at most); false when none came in time.
    async fn pump(&mut self, deadline: Instant) -> bool {
        match timeout_at(deadline, self.rx.recv()).await {
            Ok(Some((key, update))) => {
                self.apply(key, update);
                true
            }
            _ => false,
        }
    }

    fn apply(&mut self, key: usize, update: Update) {
        let abandoned = self.live.get(&key).is_none_or(|l| l.abandoned);
        if abandoned {
            return;
        }
        match update {
            Update::Head { status, headers } => {
                let sse = headers.get("content-type").is_some_and(|c| media_type(c) == "text/event-stream");
                if let Some(live) = self.live.get_mut(&key) {
                    live.status = Some(status);
                    live.headers = headers.clone();
                    live.sse = sse;
                }
                self.check_head(key, status, &headers);
            }
            Update::Event(event) => {
                let payload = match event.event_type() {
                    "message" if !event.data.is_empty() => match serde_json::from_str::<Value>(&event.data) {
                        Ok(v) => Payload::Message(v),
                        Err(_) => Payload::Raw(event.data.clone()),
                    },
                    _ => Payload::Raw(event.data.clone()),
                };
                let id = event.id.clone().filter(|id| !id.is_empty());
                let item = LiveItem { sse: Some(SseMeta { id, event: event.event.clone() }), payload };
                if let Some(live) = self.live.get_mut(&key) {
                    live.pool.push(item);
                }
            }
            Update::Body(bytes) => {
                let on_request_line = self.closed_at_request(key);
                let Some(live) = self.live.get_mut(&key) else { return };
                if on_request_line {
                    live.body = Some(bytes);
                } else if !bytes.is_empty() {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    let payload = match serde_json::from_str::<Value>(&text) {
                        Ok(v) => Payload::Message(v),
                        Err(_) => Payload::Raw(text),
                    };
                    live.pool.push(LiveItem { sse: None, payload });
                }
            }
            Update::End(error) => {
                if let Some(live) = self.live.get_mut(&key) {
                    live.ended = true;
                }
                if let Some(error) = error {
                    if !self.live.get(&key).is_some_and(|l| l.abandoned) {
                        self.fail(key, format!("http: {error}"));
                    }
                }
            }
        }
    }

    /// Whether the recording has this exchange's response on its request line.
    fn closed_at_request(&self, key: usize) -> bool {
        self.entry(key).http.as_ref().is_some_and(|h| h.get("response_headers").is_some())
    }

    /// The recorded response headers of exchange `key`: where they are (line index, member
    /// name) and what.
    fn recorded_response_headers(&self, key: usize) -> Option<(usize, &'static str, Map<String, Value>)> {
        let own = self.entry(key).http.as_ref().and_then(|h| h.get("response_headers"));
        if let Some(Value::Object(headers)) = own {
            return Some((key, "response_headers", headers.clone()));
        }
        let line = (0..self.assignment.len())
            .find(|&j| self.assignment[j] == Some(key) && self.entry(j).dir == Dir::ServerToClient)?;
        match self.entry(line).http.as_ref()?.get("headers") {
            Some(Value::Object(headers)) => Some((line, "headers", headers.clone())),
            _ => None,
        }
    }

    fn check_head(&mut self, key: usize, status: u16, headers: &BTreeMap<String, String>) {
        let recorded_status = self.entry(key).http.as_ref().and_then(|h| h.get("status")).and_then(Value::as_u64);
        if let Some(expected) = recorded_status {
            if expected != u64::from(status) {
                self.fail(key, format!("http.status: expected {expected}, got {status}"));
            }
        }
        let Some((line, member, recorded)) = self.recorded_response_headers(key) else { return };
        if let (Some(Value::String(r)), Some(l)) = (recorded.get("mcp-session-id"), headers.get("mcp-session-id")) {
            self.sessions.entry(r.clone()).or_insert_with(|| l.clone());
        }
        // Headers recorded on server lines are checked line by line as the lines are matched.
        if line == key {
            self.check_headers(line, member, &recorded, headers);
        }
    }

    fn check_headers(
        &mut self,
        line: usize,
        member: &str,
        recorded: &Map<String, Value>,
        live: &BTreeMap<String, String>,
    ) {
        for d in header_differences(recorded, live) {
            let show = |v: &Option<String>| match v {
                None => "(missing)".to_owned(),
                Some(v) if d.name == "mcp-session-id" => format!("a session id ({v:?})"),
                Some(v) => Value::String(v.clone()).to_string(),
            };
            let detail = format!("http.{member}.{}: expected {}, got {}", d.name, show(&d.expected), show(&d.actual));
            self.fail(line, detail);
        }
    }

    /// The live request path for a recorded one.
    fn live_path(&self, recorded: &str) -> String {
        if let Some((from, to)) =
            self.endpoints.iter().find(|(from, _)| recorded == from || recorded.starts_with(from.as_str()))
        {
            let live = format!("{to}{}", &recorded[from.len()..]);
            // An absolute endpoint URL: keep its path and query.
            return match live.split_once("://") {
                Some((_, rest)) => rest.find('/').map(|i| rest[i..].to_owned()).unwrap_or_else(|| "/".into()),
                None => live,
            };
        }
        match &self.target.path_map {
            Some((from, to)) if recorded == from => to.clone(),
            _ => recorded.to_owned(),
        }
    }

    /// Issues the request of recorded line `i`; false when the replay cannot go on.
    async fn send(&mut self, i: usize, matcher: &mut Matcher) -> bool {
        let entry = self.entry(i).clone();
        let Some(http) = entry.http.as_ref().and_then(Value::as_object) else {
            self.fail(i, "http: the line has no http member".into());
            return true;
        };
        let method = http.get("method").and_then(Value::as_str).unwrap_or("POST").to_owned();
        let path = http.get("path").and_then(Value::as_str).unwrap_or("/").to_owned();
        let empty = Map::new();
        let recorded_headers = http.get("headers").and_then(Value::as_object).unwrap_or(&empty).clone();

        // A resumption: drop the stream the recorded client abandoned, wait as it did.
        if let Some(last) = recorded_headers.get("last-event-id").and_then(Value::as_str) {
            self.abandon_stream_of(last, i).await;
        }

        let body = match self.body_of(&entry, matcher) {
            Ok(b) => b,
            Err(detail) => {
                self.fail(i, detail);
                return true;
            }
        };
        let mut builder = hyper::Request::builder()
            .method(method.as_str())
            .uri(self.live_path(&path))
            .header("host", &self.target.authority);
        for (name, value) in &recorded_headers {
            let Some(value) = value.as_str() else { continue };
            let value = match name.as_str() {
                "mcp-session-id" => self.sessions.get(value).cloned().unwrap_or_else(|| value.to_owned()),
                "last-event-id" => match self.event_ids.live(value) {
                    Some(live) => live.to_owned(),
                    None => {
                        self.fail(
                            i,
                            format!("http.headers.last-event-id: recorded event id {value:?} never came live"),
                        );
                        value.to_owned()
                    }
                },
                _ => value.to_owned(),
            };
            builder = builder.header(name.as_str(), value);
        }
        let request = match builder.body(Full::new(Bytes::from(body))) {
            Ok(r) => r,
            Err(e) => {
                self.fail(i, format!("http: cannot build the request: {e}"));
                return true;
            }
        };
        let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
        let task = tokio::spawn(run_exchange(self.target.clone(), request, i, self.tx.clone(), slot.clone()));
        self.live
            .insert(i, LiveExchange { tasks: vec![task.abort_handle()], conn: Some(slot), ..LiveExchange::default() });

        // The response head (status, session id) before going on, as a client would.
        let deadline = Instant::now() + self.options.timeout;
        while self.live[&i].status.is_none() && !self.live[&i].ended {
            if !self.pump(deadline).await {
                let expected = http.get("status").map(Value::to_string).unwrap_or_default();
                self.fail(i, format!("http.status: expected {expected}, got no response (timed out)"));
                return true;
            }
        }
        if self.live[&i].status.is_none() {
            // The task reported why (connection refused…): nothing else will work.
            return !self.failures.iter().any(|f| f.seq == entry.seq && f.detail.contains("cannot connect"));
        }
        if self.closed_at_request(i) && !self.live[&i].sse {
            while !self.live[&i].ended {
                if !self.pump(deadline).await {
                    self.fail(i, "http.response_body: the body did not end (timed out)".into());
                    return true;
                }
            }
            let expected = http.get("response_body").and_then(Value::as_str).unwrap_or("").to_owned();
            let actual = self.live[&i].body.clone().unwrap_or_default();
            let actual = String::from_utf8_lossy(&actual).into_owned();
            let same = expected == actual
                || matches!(
                    (serde_json::from_str::<Value>(&expected), serde_json::from_str::<Value>(&actual)),
                    (Ok(e), Ok(a)) if would_match(matcher, "", &e, &a)
                );
            if !same {
                self.fail(
                    i,
                    format!(
                        "http.response_body: expected {}, got {}",
                        Value::String(expected),
                        Value::String(abbreviate(&actual))
                    ),
                );
            }
        }
        true
    }

    /// The body to send for recorded line `i`.
    fn body_of(&mut self, entry: &Entry, matcher: &Matcher) -> Result<Vec<u8>, String> {
        let Some(raw) = &entry.msg else { return Ok(Vec::new()) };
        let recorded: Value = serde_json::from_str(raw.get()).map_err(|e| format!("$: {e}"))?;
        let items = match &recorded {
            Value::Array(items) => items.clone(),
            one => vec![one.clone()],
        };
        for item in &items {
            if kind_of(item) == Kind::Request {
                let id = item.get("id").map(Value::to_string).unwrap_or_default();
                let method = item.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
                self.our_requests.insert(id, method);
            }
        }
        if recorded.is_array() || kind_of(&recorded) != Kind::Response {
            return Ok(matcher.substitute_text(raw.get()).into_bytes());
        }
        let recorded_id = recorded.get("id").cloned().unwrap_or(Value::Null);
        let Some(live_id) = matcher.live_id(&recorded_id).cloned() else {
            return Err(format!("answers server request {recorded_id}, which the server never sent"));
        };
        outgoing(raw.get(), matcher, Some(&live_id))
            .map(|m| m.to_vec())
            .map_err(|e| format!("recorded message is not valid JSON-RPC: {e}"))
    }

    /// Before a request with `Last-Event-ID: last` (line `i`): the stream that carried that
    /// event was abandoned by the recorded client; drop our connection of it (what it still
    /// had in its pool is dropped too: the resumption is to bring it again) and wait as long as
    /// the recorded client did between that event and this request (5 s at most).
    async fn abandon_stream_of(&mut self, last: &str, i: usize) {
        let carried = (0..i).rev().find(|&j| {
            let e = self.entry(j);
            e.dir == Dir::ServerToClient
                && e.http.as_ref().and_then(|h| h.get("sse_event_id")).and_then(Value::as_str) == Some(last)
        });
        let Some(j) = carried else { return };
        let Some(key) = self.assignment[j] else { return };
        let Some(live) = self.live.get_mut(&key) else { return };
        if live.ended || live.abandoned {
            return;
        }
        live.stop();
        live.abandoned = true;
        live.pool.clear();
        let gap = self.entry(i).t_ms.saturating_sub(self.entry(j).t_ms);
        tokio::time::sleep(Duration::from_millis(gap.min(5000))).await;
    }

    /// Waits for the server line `i` on its exchange and checks it.
    async fn expect(&mut self, i: usize, matcher: &mut Matcher) -> bool {
        let entry = self.entry(i).clone();
        let Some(key) = self.assignment[i] else {
            self.fail(i, "http: no recorded request fits this line (method and path)".into());
            return true;
        };
        let recorded = parsed(&entry);
        let (kind, method) = match &recorded {
            Some(m) if !m.is_array() => {
                let kind = kind_of(m);
                let method = match kind {
                    Kind::Response => self.response_method(i, m),
                    _ => m.get("method").and_then(Value::as_str).unwrap_or_default().to_owned(),
                };
                (Some(kind), method)
            }
            _ => (None, String::new()),
        };
        let reorder = kind == Some(Kind::Notification) && matcher.rules().may_reorder(&method);
        let gap_ms = i.checked_sub(1).map_or(0, |before| entry.t_ms.saturating_sub(self.entry(before).t_ms));
        let deadline = Instant::now() + self.options.patience(gap_ms);
        loop {
            let expired = Instant::now() >= deadline;
            let ended = self.live.get(&key).is_none_or(|l| l.ended);
            let relaxed = expired || ended;
            let found = self.find(key, &entry, recorded.as_ref(), kind, &method, reorder, relaxed, matcher);
            if let Some(position) = found {
                let item = self.live.get_mut(&key).map(|l| (l.pool.remove(position), l.headers.clone()));
                if let Some((item, headers)) = item {
                    self.check_item(i, &entry, recorded.as_ref(), kind, &method, (&item, &headers), matcher);
                }
                return true;
            }
            if relaxed {
                // Not on its own stream: on another one?
                let elsewhere = self.live.keys().copied().filter(|&k| k != key).find_map(|k| {
                    self.find(k, &entry, recorded.as_ref(), kind, &method, reorder, true, matcher).map(|p| (k, p))
                });
                let own = format!("{} seq {}", http_str(self.entry(key), "method").unwrap_or("?"), self.entry(key).seq);
                if let Some((k, position)) = elsewhere {
                    let item = self.live.get_mut(&k).map(|l| (l.pool.remove(position), l.headers.clone()));
                    let other =
                        format!("{} seq {}", http_str(self.entry(k), "method").unwrap_or("?"), self.entry(k).seq);
                    self.fail(i, format!("http: expected on the response to {own}, came on the response to {other}"));
                    if let Some((item, headers)) = item {
                        self.check_item(i, &entry, recorded.as_ref(), kind, &method, (&item, &headers), matcher);
                    }
                    return true;
                }
                let why = if expired { "timed out" } else { "its stream ended" };
                let what = if recorded.is_some() { "$" } else { "raw" };
                self.fail(i, format!("{what}: expected this on the response to {own}, got nothing ({why})"));
                // A server that stopped answering would make every later wait time out too.
                return !expired;
            }
            self.pump(deadline).await;
        }
    }

    /// The position in exchange `key`'s pool of the live item for recorded line `entry`.
    #[allow(clippy::too_many_arguments)]
    fn find(
        &self,
        key: usize,
        entry: &Entry,
        recorded: Option<&Value>,
        kind: Option<Kind>,
        method: &str,
        reorder: bool,
        relaxed: bool,
        matcher: &Matcher,
    ) -> Option<usize> {
        let pool = &self.live.get(&key)?.pool;
        match (recorded, kind) {
            (None, _) => {
                let event = http_str(entry, "sse_event").unwrap_or("message");
                pool.iter().position(|item| {
                    matches!(item.payload, Payload::Raw(_))
                        && item.sse.as_ref().map(|m| m.event.as_deref().unwrap_or("message")) == Some(event)
                })
            }
            (Some(batch), None) => pool.iter().position(|item| match &item.payload {
                Payload::Message(v) => v.is_array() == batch.is_array(),
                Payload::Raw(_) => false,
            }),
            (Some(recorded), Some(kind)) => {
                let candidate = |item: &LiveItem| match &item.payload {
                    Payload::Message(v) if !v.is_array() && kind_of(v) == kind => match kind {
                        Kind::Response => {
                            let id = |m: &Value| m.get("id").filter(|i| !i.is_null()).cloned();
                            id(v) == id(recorded)
                        }
                        _ => v.get("method").and_then(Value::as_str) == Some(method),
                    },
                    _ => false,
                };
                let live = |item: &LiveItem| match &item.payload {
                    Payload::Message(v) => v.clone(),
                    Payload::Raw(_) => Value::Null,
                };
                let clean = if reorder {
                    pool.iter().position(|it| candidate(it) && would_match(matcher, method, recorded, &live(it)))
                } else {
                    pool.iter().position(candidate)
                };
                clean.or_else(|| relaxed.then(|| pool.iter().position(candidate)).flatten())
            }
        }
    }

    /// Checks a live item (and the response headers of the stream it came on) against recorded
    /// line `i`: headers, framing, then payload.
    #[allow(clippy::too_many_arguments)]
    fn check_item(
        &mut self,
        i: usize,
        entry: &Entry,
        recorded: Option<&Value>,
        kind: Option<Kind>,
        method: &str,
        (item, live_headers): (&LiveItem, &BTreeMap<String, String>),
        matcher: &mut Matcher,
    ) {
        let http = entry.http.as_ref();
        if let Some(Value::Object(headers)) = http.and_then(|h| h.get("headers")) {
            self.check_headers(i, "headers", headers, live_headers);
        }
        match (http.and_then(|h| h.get("sse_event_id")), &item.sse) {
            (None, None) => {}
            (None, Some(_)) => self.fail(i, "http.sse_event_id: expected a JSON body, got an SSE event".into()),
            (Some(_), None) => self.fail(i, "http.sse_event_id: expected an SSE event, got a JSON body".into()),
            (Some(Value::String(r)), Some(meta)) => match &meta.id {
                None => self.fail(i, format!("http.sse_event_id: expected an event id ({r:?}), got none")),
                Some(l) => {
                    if let Err(e) = self.event_ids.learn(r, l) {
                        self.fail(i, format!("http.sse_event_id: {e}"));
                    }
                }
            },
            (Some(_), Some(meta)) => {
                if let Some(l) = &meta.id {
                    self.fail(i, format!("http.sse_event_id: expected none, got {l:?}"));
                }
            }
        }
        if let Some(meta) = &item.sse {
            let expected = http_str(entry, "sse_event").unwrap_or("message");
            let actual = meta.event.as_deref().unwrap_or("message");
            if expected != actual {
                self.fail(i, format!("http.sse_event: expected {expected:?}, got {actual:?}"));
            }
        }
        match (recorded, &item.payload) {
            (None, Payload::Raw(live)) => {
                let expected = entry.raw.clone().unwrap_or_default();
                if http_str(entry, "sse_event") == Some("endpoint") {
                    if let Some(d) = endpoint_difference(&expected, live) {
                        self.fail(i, format!("raw: {d}"));
                    }
                    self.endpoints.push((expected, live.clone()));
                } else if expected != *live {
                    self.fail(i, format!("raw: expected {:?}, got {:?}", expected, abbreviate(live)));
                }
            }
            (Some(recorded), Payload::Message(live)) => {
                let result = match kind {
                    Some(Kind::Request) => matcher.compare_peer_request(method, recorded, live),
                    _ => matcher.compare(method, recorded, live),
                };
                if let Err(d) = result {
                    self.fail(i, d.to_string());
                }
            }
            _ => self.fail(i, format!("$: expected this line, got {}", item.describe())),
        }
    }

    /// After the script: listens for `settle`, reports what nobody expected, stops every stream.
    async fn finish(&mut self) {
        let settle = Instant::now() + self.options.settle;
        while self.pump(settle).await {}
        let mut keys: Vec<usize> = self.live.keys().copied().collect();
        keys.sort_unstable();
        for key in keys {
            let Some(live) = self.live.get_mut(&key) else { continue };
            live.stop();
            let pool = std::mem::take(&mut live.pool);
            let own = format!("{} seq {}", http_str(self.entry(key), "method").unwrap_or("?"), self.entry(key).seq);
            for item in pool {
                let what = match &item.payload {
                    Payload::Message(v) if !v.is_array() => match v.get("method").and_then(Value::as_str) {
                        Some(method) => describe(kind_of(v), method),
                        None => "response".into(),
                    },
                    Payload::Message(_) => "batch".into(),
                    Payload::Raw(d) if d.is_empty() => "priming event".into(),
                    Payload::Raw(_) => "event".into(),
                };
                self.failures.push(Failure {
                    seq: 0,
                    dir: Dir::ServerToClient,
                    what,
                    detail: format!("$: expected nothing, got {} on the response to {own}", item.describe()),
                });
            }
        }
    }
}

/// How a live `endpoint` event's URL differs from the recorded one beyond the session id: the
/// path must be the same, and the query must have the same parameter names.
pub fn endpoint_difference(recorded: &str, live: &str) -> Option<String> {
    let split = |url: &str| {
        let path = match url.split_once("://") {
            Some((_, rest)) => rest.find('/').map(|i| rest[i..].to_owned()).unwrap_or_else(|| "/".into()),
            None => url.to_owned(),
        };
        let (path, query) =
            path.split_once('?').map(|(p, q)| (p.to_owned(), q.to_owned())).unwrap_or((path, String::new()));
        let mut names: Vec<String> =
            query.split('&').filter(|p| !p.is_empty()).map(|p| p.split('=').next().unwrap_or("").to_owned()).collect();
        names.sort();
        (path, names)
    };
    let (rp, rq) = split(recorded);
    let (lp, lq) = split(live);
    if rp != lp {
        return Some(format!("endpoint path: expected {rp:?}, got {lp:?} (in {live:?})"));
    }
    if rq != lq {
        return Some(format!("endpoint query parameters: expected {rq:?}, got {lq:?} (in {live:?})"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn recorded(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn content_type_compares_by_media_type() {
        assert_eq!(media_type("Application/JSON; charset=utf-8"), "application/json");
        let r = recorded(json!({"content-type": "application/json; charset=utf-8"}));
        assert!(header_differences(&r, &headers(&[("content-type", "application/json")])).is_empty());
        let d = header_differences(&r, &headers(&[("content-type", "text/event-stream")]));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].name, "content-type");
        assert_eq!(d[0].actual.as_deref(), Some("text/event-stream"));
    }

    #[test]
    fn session_id_is_compared_by_presence_and_others_exactly() {
        let r = recorded(json!({"content-type": "text/event-stream", "mcp-session-id": "abc"}));
        let live = headers(&[("content-type", "text/event-stream"), ("mcp-session-id", "xyz")]);
        assert!(header_differences(&r, &live).is_empty());
        let d = header_differences(&r, &headers(&[("content-type", "text/event-stream")]));
        assert_eq!(
            d,
            vec![HeaderDifference { name: "mcp-session-id".into(), expected: Some("abc".into()), actual: None }]
        );
        let d = header_differences(&recorded(json!({})), &headers(&[("mcp-protocol-version", "2025-11-25")]));
        assert_eq!(d[0].name, "mcp-protocol-version");
        assert_eq!(d[0].expected, None);
        let r = recorded(json!({"allow": "GET, POST, DELETE"}));
        assert!(header_differences(&r, &headers(&[("allow", "POST,DELETE,GET")])).is_empty());
        assert_eq!(header_differences(&r, &headers(&[("allow", "POST")])).len(), 1);
    }

    #[test]
    fn only_kept_headers_are_read() {
        let mut map = hyper::HeaderMap::new();
        map.insert("content-type", "text/event-stream".parse().unwrap());
        map.insert("cache-control", "no-cache".parse().unwrap());
        map.insert("Mcp-Session-Id", "s1".parse().unwrap());
        map.append("allow", "GET".parse().unwrap());
        map.append("allow", "POST".parse().unwrap());
        let kept = kept_headers(&map);
        assert_eq!(
            kept,
            headers(&[("allow", "GET, POST"), ("content-type", "text/event-stream"), ("mcp-session-id", "s1")])
        );
    }

    #[test]
    fn event_ids_map_one_to_one() {
        let mut ids = EventIds::default();
        ids.learn("rec-1", "live-1").unwrap();
        ids.learn("rec-1", "live-1").unwrap();
        assert_eq!(ids.live("rec-1"), Some("live-1"));
        assert_eq!(ids.live("rec-2"), None);
        assert!(ids.learn("rec-1", "live-2").is_err());
        assert!(ids.learn("rec-2", "live-1").is_err());
        ids.learn("rec-2", "live-2").unwrap();
        assert_eq!(ids.live("rec-2"), Some("live-2"));
    }

    #[test]
    fn endpoints_differ_only_beyond_the_session_id() {
        assert_eq!(endpoint_difference("/message?sessionId=abc", "/message?sessionId=def"), None);
        assert_eq!(endpoint_difference("/message?sessionId=abc", "http://127.0.0.1:9/message?sessionId=d"), None);
        assert!(endpoint_difference("/message?sessionId=abc", "/messages?sessionId=d").is_some());
        assert!(endpoint_difference("/message?sessionId=abc", "/message?session_id=d").is_some());
    }

    fn recording(lines: &[Value]) -> Recording {
        let mut text = String::from(
            r#"{"mcp_recording":1,"name":"t","transport":"streamable-http","protocol_version":"2025-11-25"}"#,
        );
        for (n, l) in lines.iter().enumerate() {
            let mut l = l.clone();
            l["seq"] = json!(n + 1);
            l["t_ms"] = json!(n);
            text.push('\n');
            text.push_str(&l.to_string());
        }
        Recording::parse(Path::new("t.jsonl"), &text).unwrap()
    }

    #[test]
    fn lines_are_assigned_to_the_exchange_that_carried_them() {
        let post = |status| json!({"method": "POST", "path": "/mcp", "status": status, "headers": {}});
        let get = json!({"method": "GET", "path": "/mcp", "status": 200, "headers": {}});
        let r = recording(&[
            json!({"dir": "c2s", "msg": {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}, "http": post(200)}), // 0
            json!({"dir": "s2c", "raw": "", "http": post(200)}),
            json!({"dir": "c2s", "http": get}), // 2
            json!({"dir": "c2s", "msg": {"jsonrpc": "2.0", "id": 2, "method": "ping"}, "http": post(200)}), // 3
            json!({"dir": "s2c", "raw": "", "http": post(200)}),
            json!({"dir": "s2c", "msg": {"jsonrpc": "2.0", "id": 0, "method": "roots/list"}, "http": get}),
            json!({"dir": "s2c", "msg": {"jsonrpc": "2.0", "id": 2, "result": {}}, "http": post(200)}),
            json!({"dir": "s2c", "msg": {"jsonrpc": "2.0", "method": "notifications/progress"}, "http": post(200)}),
            json!({"dir": "c2s", "msg": {"jsonrpc": "2.0", "id": 0, "result": {}},
                   "http": {"method": "POST", "path": "/mcp", "status": 202, "headers": {}, "response_headers": {}}}), // 8
            json!({"dir": "s2c", "msg": {"jsonrpc": "2.0", "id": 1, "result": {}}, "http": post(200)}),
            json!({"dir": "c2s", "msg": {"jsonrpc": "2.0", "id": 3, "method": "ping"}, "http": post(400)}), // 10
            json!({"dir": "s2c", "msg": {"jsonrpc": "2.0", "id": null, "error": {"code": -1, "message": "x"}}, "http": post(400)}),
        ]);
        assert_eq!(
            assign_exchanges(&r.entries),
            vec![
                Some(0),
                Some(0),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(3),
                Some(0),
                Some(8),
                Some(0),
                Some(10),
                Some(10)
            ]
        );
    }

    #[test]
    fn every_line_of_the_http_recordings_finds_its_exchange() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
        let mut checked = 0;
        for file in std::fs::read_dir(dir).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let r = Recording::read(&path).unwrap();
            if r.header.transport == "stdio" {
                continue;
            }
            let assigned = assign_exchanges(&r.entries);
            for (entry, key) in r.entries.iter().zip(&assigned) {
                let key = key.unwrap_or_else(|| panic!("{}: seq {} has no exchange", r.header.name, entry.seq));
                let (opener, line) = (&r.entries[key], entry.http.as_ref().unwrap());
                assert_eq!(opener.dir, Dir::ClientToServer);
                assert_eq!(
                    opener.http.as_ref().unwrap()["method"],
                    line["method"],
                    "{} seq {}",
                    r.header.name,
                    entry.seq
                );
            }
            checked += 1;
        }
        assert_eq!(checked, 7);
    }
}
