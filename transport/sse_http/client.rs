//! The HTTP client side: [`HttpClientTransport`] speaks Streamable HTTP to one endpoint, and
//! the legacy HTTP+SSE transport when the server is an old one
//! ([2025-11-25 transports](https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http),
//! ["Backwards Compatibility"](https://modelcontextprotocol.io/specification/2025-03-26/basic/transports#backwards-compatibility)).
//!
//! - [`send`](Transport::send) POSTs one message with `Accept: application/json,
//!   text/event-stream` and waits for the response head: 202 ends it; a JSON body or an SSE
//!   stream is read by a task of its own, whose messages come out of [`recv`](Transport::recv).
//! - The `Mcp-Session-Id` of the initialize response is sent on every later request, and so is
//!   `MCP-Protocol-Version` once the initialize result (seen passing through `recv`) named it, or
//!   once [`HttpClientTransport::set_protocol_version`] was called.
//! - A server request read on the SSE stream of a POST is remembered as related to the request
//!   that POST carried ([`Transport::related_request`]) until it is answered or the server
//!   cancels it (at most 4096 at once); the GET stream and the legacy transport relate nothing.
//! - After `notifications/initialized` the standalone GET stream is opened (405 is fine).
//! - A stream that drops before its responses arrived is resumed with GET and `Last-Event-ID`,
//!   after the server's `retry` delay.
//! - 404 to a request carrying a session id is [`TransportError::SessionExpired`]: the
//!   transport forgets the session, and a new `initialize` starts another.
//! - When POSTing `initialize` gets 400, 404 or 405, the transport falls back to the legacy
//!   transport: GET the same URL, then `/sse` at its root, wait for the `endpoint` event, POST
//!   there; every reply comes on that stream.
//! - [`close`](Transport::close) sends DELETE for the session.
//! - With an [`Authorizer`](super::authorizer::Authorizer) ([`HttpClientConfig::authorizer`]),
//!   every request carries the `Authorization` value it gives, and a 401 (or a 403 with a
//!   challenge) is handed to it and the request sent again when it says so
//!   ([`authorizer`](super::authorizer)).
//! - Once the version is 2026-07-28 ([`HttpClientTransport::set_protocol_version`], before the
//!   first request of a stateless connection), every POST carries `MCP-Protocol-Version`,
//!   `Mcp-Method`, `Mcp-Name` where the method has one, and the `Mcp-Param-*` headers of the
//!   tools registered with [`HttpClientTransport::admit_tools`] ([`request_headers`]);
//!   no session id is kept or sent, no GET stream opened. A 4xx or 5xx whose body is a JSON-RPC
//!   error (an unsupported version, a header mismatch …) is that request's answer, not a
//!   transport failure. A `notifications/cancelled` is not POSTed: the response stream of the
//!   request it names is closed instead, which is the cancellation on this transport
//!   ([2026-07-28 cancellation](https://modelcontextprotocol.io/specification/2026-07-28/basic/patterns/cancellation));
//!   a POST's SSE stream that ends for good before its answer gets an error answer
//!   (-32603, "the server ended the response stream without answering") rather than none.
//!
//! Connections are HTTP/1.1 with keep-alive, or HTTP/2:
//! - HTTP/1.1: a connection goes back to a small pool only once the response it carried has
//!   been read to its end (a JSON body, a 202, or an SSE stream that the server ended), so a
//!   request never queues behind a stream that is still open — a stream that may be waiting
//!   for that very request (an elicitation answer during a tool call).
//! - HTTP/2: over TLS the client offers `h2` then `http/1.1` by ALPN
//!   ([`HttpClientConfig::http2`], on) and speaks h2 when the server picks it; on plain http,
//!   h2c with prior knowledge when asked ([`HttpClientConfig::http2_prior_knowledge`], off:
//!   there is no way to learn that a plain-http server speaks h2 without trying). One h2
//!   connection per server then carries every request and SSE stream at once, each a stream
//!   of its own, up to the server's `SETTINGS_MAX_CONCURRENT_STREAMS` (a request past it waits
//!   for a stream to end: the h2 flow, not an error). Requests that start while that
//!   connection is being opened wait for it rather than open connections of their own. No h2c
//!   upgrade from HTTP/1.1 (`Upgrade: h2c`).
//!
//! The parts, in `client/`: `config` ([`HttpClientConfig`]), `connections` (the HTTP/1.1 pool,
//! the shared HTTP/2 connection, one request with the authorizer's retries), `streams`
//! (reading JSON and SSE answers, resuming with `Last-Event-ID`, the standalone GET stream,
//! related requests), `legacy` (the HTTP+SSE fallback), `answers` (what the client answers
//! itself when the server's answer cannot be read). This file: the transport, its state and
//! what it sends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Response, StatusCode, Uri};
use tokio::sync::{mpsc, watch, Notify};

use super::{is_media, requeue_once, SESSION_ID};
use crate::proto::envelope::{self, encode_header_value};
use crate::proto::framing::SseDecoder;
use crate::proto::jsonrpc::{self, Id, Message, TypedResults};
use crate::proto::mcp_types::{ClientTypedResults, Tool};
use crate::proto::request_headers::{self, InvalidParamHeader, ParamHeader};
use crate::proto::version::ProtocolVersion;
use crate::transport::{Transport, TransportError};

mod answers;
mod config;
mod connections;
mod legacy;
mod streams;
pub use config::HttpClientConfig;
use config::Secret;
use connections::{Http2Slot, Pooled, Target};
use streams::{Awaited, Read};

type Item = Result<Option<Message>, TransportError>;

struct Inner {
    config: HttpClientConfig,
    url: Uri,
    endpoint: Target,
    headers: Vec<(HeaderName, HeaderValue)>,
    tx: mpsc::Sender<Item>,
    session_id: Mutex<Option<String>>,
    version: Mutex<Option<ProtocolVersion>>,
    initialize_id: Mutex<Option<Id>>,
    /// Legacy transport: where to POST, once the `endpoint` event named it.
    legacy: Mutex<Option<watch::Receiver<Option<Uri>>>>,
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    closed: AtomicBool,
    closed_notify: Notify,
    /// Open HTTP/1.1 connections, by authority, kept for reuse (keep-alive).
    pool: Mutex<Vec<Pooled>>,
    /// HTTP/2: the one connection per authority that every request shares, or the note that
    /// the server chose HTTP/1.1 by ALPN. Held while that connection is being opened, so that
    /// requests starting meanwhile wait for it instead of opening their own.
    http2: tokio::sync::Mutex<HashMap<Arc<str>, Http2Slot>>,
    /// Where the standalone GET stream is; requests wait while it is being opened.
    standalone: watch::Sender<Standalone>,
    /// 2026-07-28: the `x-mcp-header` designations of the admitted tools, by tool name.
    tool_headers: Mutex<HashMap<String, Arc<[ParamHeader]>>>,
    /// The server's requests that came on the stream of one of our POSTs, and the id of the
    /// request that POST carried; each leaves when we answer it or the server cancels it.
    related: Mutex<HashMap<Id, Id>>,
    /// 2026-07-28: the tasks reading the answer to one of our stateless POSTs, by the id of
    /// the request it carried; closing one is how that request is cancelled.
    readers: Mutex<HashMap<Id, tokio::task::AbortHandle>>,
    /// Opens connections (TCP, TLS with ALPN), under the connect timeout.
    connector: super::connector::Connector,
}

/// How many of the server's requests related to ours are remembered at once (see
/// [`Transport::related_request`]).
const MAX_RELATED_REQUESTS: usize = 4096;

/// The standalone GET stream's progress. Requests after `notifications/initialized` wait while
/// it is `Opening`: a server sends the requests it makes during a tool call (elicitation,
/// sampling) on this stream, and servers built on the TypeScript SDK drop them when the stream
/// is not open yet — a race that a request on a warm pooled connection would otherwise win.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standalone {
    NotOpened,
    Opening,
    /// Open, refused (405) or failed: nothing to wait for.
    Settled,
}

/// The longest a request waits for the standalone stream to open.
const STANDALONE_OPEN_WAIT: Duration = Duration::from_secs(5);

/// How many turns a POST's sender gives hyper to bring the rest of an answer that is already on
/// its way, before a task takes over the reading: an answer in one write is a head, a priming
/// event, the response and the end, each a frame.
const READY_TURNS: usize = 4;

/// The client end of an MCP connection over HTTP. See the module docs.
///
/// # Cancel safety
/// `recv` is cancel safe. Dropping a `send` future may leave its POST unsent or sent; the
/// message is then neither retried nor reported.
pub struct HttpClientTransport {
    inner: Arc<Inner>,
    incoming: tokio::sync::Mutex<mpsc::Receiver<Item>>,
}

impl std::fmt::Debug for HttpClientTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClientTransport").field("url", &self.inner.url).finish_non_exhaustive()
    }
}

fn bad_config(what: impl std::fmt::Display) -> TransportError {
    TransportError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, what.to_string()))
}

impl HttpClientTransport {
    /// A transport for `config`. No IO happens until the first `send`. Must be called inside a
    /// tokio runtime.
    ///
    /// # Errors
    /// When the URL or a header is invalid, or https is asked for without the `tls` feature.
    pub fn new(config: HttpClientConfig) -> Result<HttpClientTransport, TransportError> {
        let url: Uri = config.url.parse().map_err(bad_config)?;
        match url.scheme_str() {
            Some("http") => {}
            #[cfg(feature = "tls")]
            Some("https") => {}
            _ => return Err(bad_config(format!("unsupported url {url}"))),
        }
        if url.host().is_none() {
            return Err(bad_config(format!("no host in {url}")));
        }
        let endpoint = Target::of(&url)?;
        let mut headers = Vec::new();
        for (name, value) in &config.headers {
            headers.push((
                HeaderName::from_bytes(name.as_bytes()).map_err(bad_config)?,
                HeaderValue::from_str(value).map_err(bad_config)?,
            ));
        }
        if let Some(Secret(token)) = &config.bearer {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| bad_config("bad bearer token"))?;
            value.set_sensitive(true);
            headers.push((AUTHORIZATION, value));
        }
        #[cfg(feature = "tls")]
        let connector = super::connector::Connector::with_roots(&config.extra_roots)?;
        #[cfg(not(feature = "tls"))]
        let connector = super::connector::Connector::new()?;
        let connector = connector.offer_http2(config.http2).connect_timeout(config.connect_timeout);
        let (tx, rx) = mpsc::channel(config.queue_depth.max(1));
        let inner = Arc::new(Inner {
            url,
            endpoint,
            headers,
            tx,
            session_id: Mutex::new(None),
            version: Mutex::new(None),
            initialize_id: Mutex::new(None),
            legacy: Mutex::new(None),
            tasks: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            closed_notify: Notify::new(),
            pool: Mutex::new(Vec::new()),
            http2: tokio::sync::Mutex::new(HashMap::new()),
            standalone: watch::channel(Standalone::NotOpened).0,
            tool_headers: Mutex::new(HashMap::new()),
            related: Mutex::new(HashMap::new()),
            readers: Mutex::new(HashMap::new()),
            connector,
            config,
        });
        Ok(HttpClientTransport { inner, incoming: tokio::sync::Mutex::new(rx) })
    }

    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<String> {
        self.inner.session_id.lock().expect("client lock").clone()
    }

    /// The protocol version sent in `MCP-Protocol-Version`, if known.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        *self.inner.version.lock().expect("client lock")
    }

    /// Keeps the tools of a `tools/list` page whose `x-mcp-header` declarations are valid, and
    /// remembers which arguments their calls mirror into `Mcp-Param-*` headers; returns the
    /// tools left out, with why (Streamable HTTP: such tools MUST be excluded).
    pub fn admit_tools(&self, tools: &mut Vec<Tool>) -> Vec<(String, InvalidParamHeader)> {
        let mut rejected = Vec::new();
        let mut table = self.inner.tool_headers.lock().expect("client lock");
        tools.retain(|tool| match request_headers::param_headers(&tool.input_schema) {
            Ok(headers) => {
                if headers.is_empty() {
                    table.remove(&tool.name);
                } else {
                    table.insert(tool.name.clone(), headers.into());
                }
                true
            }
            Err(why) => {
                table.remove(&tool.name);
                rejected.push((tool.name.clone(), why));
                false
            }
        });
        rejected
    }

    async fn send_unboxed(&self, message: Message) -> Result<(), TransportError> {
        let inner = &self.inner;
        let answered = match &message {
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            _ => None,
        };
        if let Some(id) = answered {
            inner.related.lock().expect("client lock").remove(id);
        }
        if inner.closed.load(Ordering::Acquire) {
            return Err(TransportError::Closed);
        }
        if inner.config.legacy && !self.is_legacy() {
            inner.clone().start_legacy().await?;
        }
        if self.is_legacy() {
            return inner.legacy_send(&message).await;
        }
        if let Some(cancelled) = stateless_cancellation(inner, &message) {
            // Closing the request's response stream is the cancellation; nothing is POSTed.
            if let Some(reader) = inner.readers.lock().expect("client lock").remove(&cancelled) {
                reader.abort();
            }
            return Ok(());
        }
        inner.send_streamable(&message).await
    }

    /// Whether the transport fell back to (or started with) the legacy HTTP+SSE transport.
    pub fn is_legacy(&self) -> bool {
        self.inner.legacy.lock().expect("client lock").is_some()
    }
}

/// The request a `notifications/cancelled` names, when the connection is stateless
/// (2026-07-28), where the spec has the client close the request's response stream instead
/// ("Transport-Specific Cancellation").
fn stateless_cancellation(inner: &Inner, message: &Message) -> Option<Id> {
    let Message::Notification(n) = message else { return None };
    if n.method != "notifications/cancelled" {
        return None;
    }
    if !inner.version.lock().expect("client lock").is_some_and(|v| !v.has_initialize_handshake()) {
        return None;
    }
    #[derive(serde::Deserialize, Clone)]
    struct Cancelled {
        #[serde(rename = "requestId")]
        request_id: Id,
    }
    n.params.as_ref().and_then(|p| p.decode::<Cancelled>().ok()).map(|c| c.request_id)
}

impl Transport for HttpClientTransport {
    /// Sets the protocol version to send (normally learned from the initialize result); a
    /// 2026-07-28 one makes every later POST stateless (see the module docs). `None` forgets
    /// it: the next POST carries none, as before an `initialize` (a dual-era client falling
    /// back from a 2026-07-28 probe).
    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        *self.inner.version.lock().expect("client lock") = version;
    }

    fn admit_tools(&self, tools: &mut Vec<Tool>) -> Vec<(String, String)> {
        HttpClientTransport::admit_tools(self, tools).into_iter().map(|(name, why)| (name, why.to_string())).collect()
    }

    async fn send(&self, message: Message) -> Result<(), TransportError> {
        // Boxed: the POST's future is several KiB, and every request future that awaits a
        // send would otherwise carry (and move) it inline.
        Box::pin(self.send_unboxed(message)).await
    }

    fn network_transport(&self) -> Option<&'static str> {
        Some("tcp")
    }

    fn server_endpoint(&self) -> Option<(String, u16)> {
        let url = &self.inner.url;
        let host = url.host()?.trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = url.port_u16().unwrap_or(if url.scheme_str() == Some("https") { 443 } else { 80 });
        Some((host, port))
    }

    fn session_id(&self) -> Option<String> {
        HttpClientTransport::session_id(self)
    }

    fn related_request(&self, incoming: &Id) -> Option<Id> {
        self.inner.related.lock().expect("client lock").get(incoming).cloned()
    }

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Ok(None);
        }
        let mut incoming = self.incoming.lock().await;
        tokio::select! {
            item = incoming.recv() => item.unwrap_or(Ok(None)),
            _ = self.inner.closed_notify.notified() => Ok(None),
        }
    }

    async fn close(&self) -> Result<(), TransportError> {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        inner.closed_notify.notify_waiters();
        for task in inner.tasks.lock().expect("client lock").drain(..) {
            task.abort();
        }
        let session = inner.session_id.lock().expect("client lock").take();
        if let (Some(_), false) = (&session, self.is_legacy()) {
            // The server may answer 405 (it does not allow clients to end sessions): fine.
            let _ = inner.request(Method::DELETE, &inner.endpoint, session.as_deref(), &[], Bytes::new()).await;
        }
        Ok(())
    }
}

impl Drop for HttpClientTransport {
    fn drop(&mut self) {
        for task in self.inner.tasks.lock().expect("client lock").drain(..) {
            task.abort();
        }
    }
}

impl Inner {
    fn spawn(self: &Arc<Self>, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let handle = crate::transport::task::spawn(task);
        let mut tasks = self.tasks.lock().expect("client lock");
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle.abort_handle());
    }

    /// Spawns the task reading the answer to a POST; a stateless POST's is kept by its
    /// request's id ([`Inner::readers`]) while it runs, so cancelling the request can close it.
    fn spawn_reader(
        self: &Arc<Self>,
        stateless: bool,
        origin: Option<Id>,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let Some(origin) = origin.filter(|_| stateless) else { return self.spawn(task) };
        let inner = self.clone();
        let key = origin.clone();
        let mut readers = self.readers.lock().expect("client lock");
        let handle = crate::transport::task::spawn(async move {
            task.await;
            inner.readers.lock().expect("client lock").remove(&key);
        });
        // The task removes itself when done, which waits for this lock: insert first.
        readers.insert(origin, handle.abort_handle());
        drop(readers);
        let mut tasks = self.tasks.lock().expect("client lock");
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle.abort_handle());
    }

    async fn push(&self, item: Item) {
        let _ = self.tx.send(item).await;
    }

    async fn send_streamable(self: &Arc<Self>, message: &Message) -> Result<(), TransportError> {
        if *self.standalone.borrow() == Standalone::Opening {
            let mut opened = self.standalone.subscribe();
            let _ = tokio::time::timeout(STANDALONE_OPEN_WAIT, opened.wait_for(|s| *s == Standalone::Settled)).await;
        }
        let stateless = self.version.lock().expect("client lock").is_some_and(|v| !v.has_initialize_handshake());
        let session = if stateless { None } else { self.session_id.lock().expect("client lock").clone() };
        let mut awaited = Awaited::default();
        if let Message::Request(r) = message {
            awaited.ids.insert(r.id.clone());
            awaited.origin = Some(r.id.clone());
            if r.method == "initialize" {
                *self.initialize_id.lock().expect("client lock") = Some(r.id.clone());
            }
            if self.config.typed_results && ClientTypedResults::wants(&r.method) {
                awaited.typed_method = Some(r.method.clone());
            }
        }
        let base = [
            (ACCEPT, HeaderValue::from_static("application/json, text/event-stream")),
            (CONTENT_TYPE, HeaderValue::from_static("application/json")),
        ];
        // Only a stateless POST has headers of its own (and allocates for them).
        let mut with_metadata = Vec::new();
        if stateless {
            with_metadata.extend(base.iter().cloned());
            self.request_metadata(message, &mut with_metadata)?;
        }
        let extra: &[(HeaderName, HeaderValue)] = if stateless { &with_metadata } else { &base };
        let (response, lease) = self
            .request(Method::POST, &self.endpoint, session.as_deref(), extra, super::buffers::BODIES.encode(message))
            .await?;
        let status = response.status();
        if let Some(id) = response.headers().get(SESSION_ID).and_then(|v| v.to_str().ok()).filter(|_| !stateless) {
            *self.session_id.lock().expect("client lock") = Some(id.to_owned());
        }
        if status == StatusCode::NOT_FOUND && session.is_some() {
            *self.session_id.lock().expect("client lock") = None;
            *self.version.lock().expect("client lock") = None;
            return Err(TransportError::SessionExpired);
        }
        let is_initialize = message.method() == Some("initialize");
        if !status.is_success() {
            if is_initialize
                && session.is_none()
                && self.config.legacy_fallback
                && matches!(status.as_u16(), 400 | 404 | 405)
            {
                self.clone().start_legacy().await?;
                return self.legacy_send(message).await;
            }
            if let (true, Message::Request(r)) = (stateless, message) {
                let answer = rpc_error_answer(response, &r.id).await?;
                self.push(Ok(Some(answer))).await;
                return Ok(());
            }
            return Err(http_error(response).await);
        }
        if message.method() == Some("notifications/initialized") && self.config.open_get_stream {
            self.standalone.send_replace(Standalone::Opening);
            let inner = self.clone();
            self.spawn(async move { inner.standalone_stream().await });
        }
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        if status == StatusCode::ACCEPTED || awaited.ids.is_empty() && !is_media(&content_type, "text/event-stream") {
            // Nothing to read but the (normally empty) body, which frees the connection.
            self.drain(response.into_body(), lease).await;
            return Ok(());
        }
        let sse = is_media(&content_type, "text/event-stream");
        if !sse && !is_media(&content_type, "application/json") {
            return Ok(());
        }
        // A quick answer usually comes whole with the head (our server writes what is ready in
        // one go): it is read here then, with no task to start.
        let mut body = response.into_body();
        let mut read = Read::default();
        read.take_ready(&mut body, self.config.max_event_bytes).await;
        // hyper's connection task reads the body a frame at a time, as it is asked for: a few
        // turns for it, as long as each brings more.
        for _ in 0..READY_TURNS {
            let seen = read.buf.len();
            requeue_once().await;
            read.take_ready(&mut body, self.config.max_event_bytes).await;
            if read.end.is_some() || read.buf.len() == seen {
                break;
            }
        }
        let inner = self.clone();
        if !sse {
            if read.end.is_some() || read.buf.len() > self.config.max_event_bytes {
                self.finish_json(body, lease, read, &awaited).await;
            } else {
                let origin = awaited.origin.clone();
                self.spawn_reader(stateless, origin, async move { inner.read_json(body, lease, read, &awaited).await });
            }
            return Ok(());
        }
        let mut decoder = SseDecoder::with_max_event_bytes(self.config.max_event_bytes);
        if !read.ended_cleanly() {
            let origin = awaited.origin.clone();
            let reading = async move { inner.read_stream(Some((body, lease, read)), decoder, awaited, false).await };
            self.spawn_reader(stateless, origin, reading);
            return Ok(());
        }
        self.read_events(body, Some(lease), read, &mut decoder, &mut awaited, None).await;
        if !awaited.ids.is_empty() && !self.closed.load(Ordering::Acquire) {
            // The stream ended before its answers: resuming it takes a task of its own.
            let origin = awaited.origin.clone();
            self.spawn_reader(stateless, origin, async move { inner.read_stream(None, decoder, awaited, false).await });
        }
        Ok(())
    }

    /// The 2026-07-28 request metadata headers of `message` (`Mcp-Method`, `Mcp-Name`,
    /// `Mcp-Param-*`), added to `headers`.
    fn request_metadata(
        &self,
        message: &Message,
        headers: &mut Vec<(HeaderName, HeaderValue)>,
    ) -> Result<(), TransportError> {
        let (method, params) = match message {
            Message::Request(r) => (r.method.as_str(), r.params.as_ref()),
            Message::Notification(n) => (n.method.as_str(), n.params.as_ref()),
            Message::Response(_) | Message::Error(_) => return Ok(()),
        };
        let value = |text: &str| HeaderValue::from_str(text).map_err(bad_config);
        headers.push((HeaderName::from_static(envelope::METHOD_HEADER), value(method)?));
        let Some(source) = envelope::name_member(method) else { return Ok(()) };
        #[derive(serde::Deserialize)]
        struct Named {
            name: Option<String>,
            uri: Option<String>,
            #[serde(rename = "taskId")]
            task_id: Option<String>,
            arguments: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let Some(raw) = params.and_then(|p| p.to_raw().ok()) else { return Ok(()) };
        let Ok(named) = serde_json::from_str::<Named>(raw.get()) else { return Ok(()) };
        let name = match source {
            "uri" => named.uri,
            "taskId" => named.task_id,
            _ => named.name,
        };
        let Some(name) = name else { return Ok(()) };
        headers.push((HeaderName::from_static(envelope::NAME_HEADER), value(&encode_header_value(&name))?));
        if method == "tools/call" {
            let designated = self.tool_headers.lock().expect("client lock").get(&name).cloned();
            if let Some(designated) = designated {
                for (header, text) in request_headers::param_header_values(&designated, named.arguments.as_ref()) {
                    headers.push((HeaderName::from_bytes(header.as_bytes()).map_err(bad_config)?, value(&text)?));
                }
            }
        }
        Ok(())
    }
}

async fn http_error(response: Response<Incoming>) -> TransportError {
    let status = response.status();
    let limited = http_body_util::Limited::new(response.into_body(), 4096);
    let body = match tokio::time::timeout(Duration::from_secs(5), limited.collect()).await {
        Ok(Ok(b)) => String::from_utf8_lossy(&b.to_bytes()).chars().take(300).collect(),
        _ => String::new(),
    };
    let message = if body.is_empty() { status.canonical_reason().unwrap_or("").to_owned() } else { body };
    TransportError::Http { status: status.as_u16(), message }
}

/// A 2026-07-28 request's answer carried by an HTTP error status: the JSON-RPC error in the
/// body (one without an id is the answer to `id`: the POST scopes it); else the status as a
/// transport error.
async fn rpc_error_answer(response: Response<Incoming>, id: &Id) -> Result<Message, TransportError> {
    let status = response.status();
    let limited = http_body_util::Limited::new(response.into_body(), 64 * 1024);
    let body = match tokio::time::timeout(Duration::from_secs(5), limited.collect()).await {
        Ok(Ok(b)) => b.to_bytes(),
        _ => Bytes::new(),
    };
    match Message::from_slice(&body) {
        Ok(Message::Error(mut e)) if e.id.as_ref().is_none_or(|got| got == id) => {
            e.id = Some(id.clone());
            Ok(Message::Error(e))
        }
        _ => {
            let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            let message = if text.is_empty() { status.canonical_reason().unwrap_or("").to_owned() } else { text };
            Err(TransportError::Http { status: status.as_u16(), message })
        }
    }
}

fn negotiated_version(response: &jsonrpc::Response) -> Option<ProtocolVersion> {
    #[derive(serde::Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let raw = response.result.to_raw().ok()?;
    serde_json::from_str::<Init>(raw.get()).ok()?.protocol_version.parse().ok()
}

/// Resolves `reference` (absolute URL, absolute path or relative path) against `base`.
fn resolve(base: &Uri, reference: &str) -> Option<Uri> {
    if reference.starts_with("http://") || reference.starts_with("https://") {
        return reference.parse().ok();
    }
    let scheme = base.scheme_str()?;
    let authority = base.authority()?.as_str();
    let path = if reference.starts_with('/') {
        reference.to_owned()
    } else {
        let dir = base.path().rsplit_once('/').map_or("", |(dir, _)| dir);
        format!("{dir}/{reference}")
    };
    format!("{scheme}://{authority}{path}").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_stream_url() {
        let base: Uri = "http://127.0.0.1:9/sse".parse().unwrap();
        assert_eq!(
            resolve(&base, "/message?sessionId=ab").unwrap().to_string(),
            "http://127.0.0.1:9/message?sessionId=ab"
        );
        assert_eq!(resolve(&base, "messages?x=1").unwrap().to_string(), "http://127.0.0.1:9/messages?x=1");
        assert_eq!(resolve(&base, "http://h:1/m").unwrap().to_string(), "http://h:1/m");
        let nested: Uri = "http://h/a/mcp".parse().unwrap();
        assert_eq!(resolve(&nested, "/sse").unwrap().to_string(), "http://h/sse");
    }

    #[test]
    fn the_bearer_token_is_not_in_debug_output() {
        std::env::set_var("MCPWIRE_TEST_TOKEN_DEBUG", "s3cr3t");
        let config =
            HttpClientConfig::new("http://127.0.0.1:1/mcp").bearer_token_env("MCPWIRE_TEST_TOKEN_DEBUG").unwrap();
        assert!(!format!("{config:?}").contains("s3cr3t"));
    }
}
