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

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper::header::{HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, watch, Notify};

use super::{full, is_media, requeue_once, HttpBody, LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};
use crate::proto::envelope::{self, encode_header_value};
use crate::proto::framing::{FrameError, LineError, SseDecoder, DEFAULT_MAX_FRAME_BYTES};
use crate::proto::jsonrpc::{self, Id, Message, Payload, TypedResults};
use crate::proto::mcp_types::{ClientTypedResults, Tool};
use crate::proto::request_headers::{self, InvalidParamHeader, ParamHeader};
use crate::proto::version::ProtocolVersion;
use crate::transport::{Transport, TransportError};

mod answers;
use answers::{attribute_idless, too_large_answer};

/// A secret header value that never shows in `Debug` output.
#[derive(Clone)]
struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// How to reach an MCP server over HTTP. Every field has a documented default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpClientConfig {
    /// The endpoint, e.g. `http://127.0.0.1:3000/mcp` (https with the `tls` feature).
    pub url: String,
    /// Extra headers sent with every request: none.
    pub headers: Vec<(String, String)>,
    bearer: Option<Secret>,
    /// Where the `Authorization` header of each request comes from, and who hears of a 401 or
    /// 403: none (only [`HttpClientConfig::bearer_token`], if set).
    pub authorizer: Option<super::authorizer::SharedAuthorizer>,
    /// Time to open a connection (TCP and TLS): 10 s.
    pub connect_timeout: Duration,
    /// Time to wait for a response head, and for a whole JSON body: 60 s.
    pub request_timeout: Duration,
    /// Largest SSE event or JSON body accepted: 4 MiB.
    pub max_event_bytes: usize,
    /// Messages received but not yet taken by `recv` before readers wait: 256.
    pub queue_depth: usize,
    /// Fall back to the legacy HTTP+SSE transport when `initialize` gets 400/404/405: on.
    pub legacy_fallback: bool,
    /// Start with the legacy transport (the URL is the `/sse` stream): off.
    pub legacy: bool,
    /// Open the standalone GET stream after initialize: on.
    pub open_get_stream: bool,
    /// Consecutive failed reconnections of a stream before giving up: 5.
    pub max_reconnects: u32,
    /// Delay before reconnecting when the server sent no `retry`: 1 s.
    pub default_retry: Duration,
    /// Keep a connection for the next request once its response has been read to the end: on.
    /// Off, every request opens a connection of its own.
    pub reuse_connections: bool,
    /// Decode a `tools/call` result into its type in the pass that reads the answer
    /// ([`jsonrpc::decode_answer`] with [`ClientTypedResults`]): on. The result is then
    /// re-serialized if anything asks for its JSON; turn this off where the exact bytes matter.
    pub typed_results: bool,
    /// Over TLS, offer HTTP/2 by ALPN (`h2`, then `http/1.1`) and speak it when the server
    /// picks it: on. Off, only `http/1.1` is offered.
    pub http2: bool,
    /// On plain http, speak HTTP/2 from the first byte (h2c with prior knowledge, as curl's
    /// `--http2-prior-knowledge`): off. Only for a server known to speak h2c (ours does); an
    /// HTTP/1.1-only server fails every request then.
    pub http2_prior_knowledge: bool,
    /// HTTP/2: how many bytes of one response body the server may send before we read them
    /// (`SETTINGS_INITIAL_WINDOW_SIZE`): 2 MiB, hyper's default. A slow reader of one SSE
    /// stream holds back that stream alone up to this.
    pub http2_initial_stream_window_size: u32,
    /// HTTP/2: how many bytes of all response bodies together the server may send before we
    /// read them (the connection's window): 5 MiB, hyper's default.
    pub http2_initial_connection_window_size: u32,
    /// HTTP/2: the largest header list of a response we accept (`SETTINGS_MAX_HEADER_LIST_SIZE`):
    /// 16 KiB, hyper's default.
    pub http2_max_header_list_size: u32,
    #[cfg(feature = "tls")]
    /// Root certificates trusted on top of the webpki roots (e.g. a test CA).
    pub extra_roots: Vec<rustls_pki_types::CertificateDer<'static>>,
}

impl HttpClientConfig {
    /// The defaults, for `url`.
    pub fn new(url: impl Into<String>) -> Self {
        HttpClientConfig {
            url: url.into(),
            headers: Vec::new(),
            bearer: None,
            authorizer: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            max_event_bytes: DEFAULT_MAX_FRAME_BYTES,
            queue_depth: 256,
            legacy_fallback: true,
            legacy: false,
            open_get_stream: true,
            reuse_connections: true,
            typed_results: true,
            max_reconnects: 5,
            default_retry: Duration::from_secs(1),
            http2: true,
            http2_prior_knowledge: false,
            http2_initial_stream_window_size: 2 * 1024 * 1024,
            http2_initial_connection_window_size: 5 * 1024 * 1024,
            http2_max_header_list_size: 16 * 1024,
            #[cfg(feature = "tls")]
            extra_roots: Vec::new(),
        }
    }

    /// Adds a header sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request (never logged, never shown by
    /// `Debug`). A token a header cannot carry makes [`HttpClientTransport::new`] fail.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(Secret(token.into()));
        self
    }

    /// Sends `Authorization: Bearer <token>` with the token read from the environment variable
    /// `var` now (never logged, never shown by `Debug`).
    ///
    /// # Errors
    /// When the variable is unset or not unicode.
    pub fn bearer_token_env(mut self, var: &str) -> Result<Self, std::env::VarError> {
        self.bearer = Some(Secret(std::env::var(var)?));
        Ok(self)
    }

    /// Takes the `Authorization` header of every request from `authorizer`, and tells it of
    /// refusals (see [`authorizer`](super::authorizer)); it wins over
    /// [`HttpClientConfig::bearer_token`].
    pub fn authorizer(mut self, authorizer: Arc<dyn super::authorizer::Authorizer>) -> Self {
        self.authorizer = Some(super::authorizer::SharedAuthorizer(authorizer));
        self
    }

    /// Connect timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Response timeout.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Cap on one SSE event or JSON body.
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// Whether to fall back to the legacy transport.
    pub fn legacy_fallback(mut self, on: bool) -> Self {
        self.legacy_fallback = on;
        self
    }

    /// Whether to speak only the legacy transport (the URL is then the `/sse` stream).
    pub fn legacy(mut self, on: bool) -> Self {
        self.legacy = on;
        self
    }

    /// Whether to open the standalone GET stream.
    pub fn open_get_stream(mut self, on: bool) -> Self {
        self.open_get_stream = on;
        self
    }

    /// Whether to decode `tools/call` results typed (see [`HttpClientConfig::typed_results`]).
    pub fn typed_results(mut self, on: bool) -> Self {
        self.typed_results = on;
        self
    }

    /// Whether to reuse connections (see [`HttpClientConfig::reuse_connections`]).
    pub fn reuse_connections(mut self, on: bool) -> Self {
        self.reuse_connections = on;
        self
    }

    /// Delay before reconnecting when the server gave no `retry`.
    pub fn default_retry(mut self, delay: Duration) -> Self {
        self.default_retry = delay;
        self
    }

    /// Whether to offer HTTP/2 by ALPN over TLS (see [`HttpClientConfig::http2`]).
    pub fn http2(mut self, on: bool) -> Self {
        self.http2 = on;
        self
    }

    /// Whether to speak h2c with prior knowledge on plain http (see
    /// [`HttpClientConfig::http2_prior_knowledge`]).
    pub fn http2_prior_knowledge(mut self, on: bool) -> Self {
        self.http2_prior_knowledge = on;
        self
    }

    /// HTTP/2 stream and connection receive windows, in bytes (see
    /// [`HttpClientConfig::http2_initial_stream_window_size`]).
    pub fn http2_windows(mut self, stream: u32, connection: u32) -> Self {
        self.http2_initial_stream_window_size = stream;
        self.http2_initial_connection_window_size = connection;
        self
    }

    /// HTTP/2: the largest response header list accepted (see
    /// [`HttpClientConfig::http2_max_header_list_size`]).
    pub fn http2_max_header_list_size(mut self, bytes: u32) -> Self {
        self.http2_max_header_list_size = bytes;
        self
    }

    /// Trusts another root certificate (DER).
    #[cfg(feature = "tls")]
    pub fn add_root_certificate(mut self, cert: rustls_pki_types::CertificateDer<'static>) -> Self {
        self.extra_roots.push(cert);
        self
    }
}

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

/// How many idle connections are kept for reuse; more are closed when their response ends.
const MAX_POOLED_CONNECTIONS: usize = 32;

/// A pooled connection is not reused after being idle this long, well before common server
/// keep-alive timeouts (Node's is 5 s), so a request rarely meets a connection the server is
/// closing (and one that it closed before the request went out is retried on a fresh one).
const POOLED_CONNECTION_LIFETIME: Duration = Duration::from_secs(2);

/// How long a pooled connection may take to accept the next request after its response ended.
const POOLED_READY_WAIT: Duration = Duration::from_millis(200);

/// What a request needs of its URL, worked out once for the endpoint rather than per request.
struct Target {
    /// `scheme://host:port`, the key of the connection pool.
    key: Arc<str>,
    host: String,
    port: u16,
    https: bool,
    /// The request target: the URL's path and query.
    path: Uri,
    /// The whole URL, the target of an HTTP/2 request (its `:scheme`, `:authority` and `:path`).
    absolute: Uri,
    /// The `Host` header.
    authority: HeaderValue,
}

impl Target {
    /// The `Host` value as text (what a DPoP proof's `htu` names).
    fn host_header(&self) -> &str {
        self.authority.to_str().unwrap_or(&self.host)
    }

    fn of(uri: &Uri) -> Result<Target, TransportError> {
        let host = uri.host().ok_or_else(|| bad_config("no host"))?.trim_start_matches('[').trim_end_matches(']');
        let https = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let key = format!("{}://{host}:{port}", if https { "https" } else { "http" }).into();
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).parse().map_err(bad_config)?;
        let authority = uri.authority().map_or(host, |a| a.as_str());
        let absolute =
            format!("{}://{authority}{path}", if https { "https" } else { "http" }).parse().map_err(bad_config)?;
        let authority = HeaderValue::from_str(authority).map_err(bad_config)?;
        Ok(Target { key, host: host.to_owned(), port, https, path, absolute, authority })
    }
}

/// An idle connection kept for reuse: its authority, its sender, and when it went idle.
struct Pooled {
    key: Arc<str>,
    sender: http1::SendRequest<HttpBody>,
    idle_since: std::time::Instant,
}

/// What is known of HTTP/2 with one server.
enum Http2Slot {
    /// The shared connection (a cheap clone each request).
    Open(http2::SendRequest<HttpBody>),
    /// The server chose `http/1.1` by ALPN: connections to it go to the HTTP/1.1 pool.
    Refused,
}

/// A connection's request half, of either version.
enum Sender {
    Http1(http1::SendRequest<HttpBody>),
    Http2(http2::SendRequest<HttpBody>),
}

impl Sender {
    async fn try_send_request(
        &mut self,
        request: Request<HttpBody>,
    ) -> Result<Response<Incoming>, hyper::client::conn::TrySendError<Request<HttpBody>>> {
        match self {
            Sender::Http1(s) => s.try_send_request(request).await,
            Sender::Http2(s) => s.try_send_request(request).await,
        }
    }

    async fn send_request(&mut self, request: Request<HttpBody>) -> Result<Response<Incoming>, hyper::Error> {
        match self {
            Sender::Http1(s) => s.send_request(request).await,
            Sender::Http2(s) => s.send_request(request).await,
        }
    }
}

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

/// The connection a response arrived on. Handed back with [`Inner::release`] once that
/// response has been read to its end; dropped otherwise (the connection then closes).
struct Lease {
    key: Arc<str>,
    sender: Sender,
}

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

    /// Sends one request on a pooled or new connection; returns the response head (body
    /// unread) and the connection, to [`release`](Inner::release) once the body has ended.
    /// With an authorizer, the request carries its `Authorization` value and goes again after
    /// a refusal it answers with [`Verdict::Retry`](super::authorizer::Verdict::Retry).
    async fn request(
        &self,
        method: Method,
        target: &Target,
        session: Option<&str>,
        extra: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Result<(Response<Incoming>, Lease), TransportError> {
        use super::authorizer::{Denial, Verdict, MAX_RETRIES};
        let Some(authorizer) = &self.config.authorizer else {
            return self.request_once(method, target, session, extra, body, Vec::new()).await;
        };
        let mut retries = 0;
        loop {
            let url = format!(
                "{}://{}{}",
                if target.https { "https" } else { "http" },
                target.host_header(),
                target.path.path()
            );
            let credentials = authorizer.0.authorization(method.as_str(), &url).await;
            let mut headers = Vec::new();
            if let Some(credentials) = &credentials {
                let sensitive = |value: &str| {
                    let mut value = HeaderValue::from_str(value).map_err(|_| bad_config("bad authorization value"))?;
                    value.set_sensitive(true);
                    Ok::<_, TransportError>(value)
                };
                headers.push((AUTHORIZATION, sensitive(&credentials.authorization)?));
                if let Some(proof) = &credentials.dpop {
                    headers.push((HeaderName::from_static("dpop"), sensitive(proof)?));
                }
            }
            let sent = self.request_once(method.clone(), target, session, extra, body.clone(), headers).await?;
            let status = sent.0.status();
            let challenges: Vec<String> = sent
                .0
                .headers()
                .get_all(hyper::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok().map(str::to_owned))
                .collect();
            let refused =
                status == StatusCode::UNAUTHORIZED || (status == StatusCode::FORBIDDEN && !challenges.is_empty());
            if !refused || retries >= MAX_RETRIES {
                return Ok(sent);
            }
            let (response, lease) = sent;
            let dpop_nonce = response.headers().get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let body_text = self.read_short(response.into_body(), lease).await;
            let refusal = Denial {
                status: status.as_u16(),
                challenges: &challenges,
                url: &self.config.url,
                sent: credentials.as_ref().map(|c| c.authorization.as_str()),
                dpop_nonce: dpop_nonce.as_deref(),
                retries,
            };
            match authorizer.0.refused(refusal).await {
                Verdict::Retry => retries += 1,
                Verdict::GiveUp(reason) => {
                    let message = if body_text.is_empty() { reason } else { format!("{reason} ({body_text})") };
                    return Err(TransportError::Http { status: status.as_u16(), message });
                }
            }
        }
    }

    /// Reads the short body of a refusal (at most 4 KiB, as text), releasing its connection
    /// when it ended.
    async fn read_short(&self, body: Incoming, lease: Lease) -> String {
        let limited = http_body_util::Limited::new(body, 4096);
        match tokio::time::timeout(Duration::from_secs(5), limited.collect()).await {
            Ok(Ok(collected)) => {
                self.release(lease);
                String::from_utf8_lossy(&collected.to_bytes()).chars().take(300).collect()
            }
            _ => String::new(),
        }
    }

    async fn request_once(
        &self,
        method: Method,
        target: &Target,
        session: Option<&str>,
        extra: &[(HeaderName, HeaderValue)],
        body: Bytes,
        authorization: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<(Response<Incoming>, Lease), TransportError> {
        let (mut sender, reused) = self.sender(target, true).await?;
        let mut request = Request::new(full(body));
        *request.method_mut() = method;
        if let Sender::Http2(_) = sender {
            // The authority goes in `:authority`, which replaces `Host` in HTTP/2.
            *request.uri_mut() = target.absolute.clone();
        } else {
            *request.uri_mut() = target.path.clone();
            request.headers_mut().insert(HOST, target.authority.clone());
        }
        let headers = request.headers_mut();
        if let Some(id) = session {
            headers.insert(SESSION_ID, HeaderValue::from_str(id).map_err(bad_config)?);
        }
        if let Some(v) = *self.version.lock().expect("client lock") {
            headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(v.as_str()));
        }
        for (name, value) in self.headers.iter().chain(extra) {
            headers.insert(name.clone(), value.clone());
        }
        for (name, value) in authorization {
            headers.insert(name, value);
        }
        let io = |e: hyper::Error| TransportError::Io(std::io::Error::other(e));
        let sent = tokio::time::timeout(self.config.request_timeout, sender.try_send_request(request))
            .await
            .map_err(|_| TransportError::Timeout)?;
        let response = match sent {
            Ok(response) => response,
            // A reused connection that the server closed before the request went out: the
            // request comes back unsent, so it goes again on a fresh connection.
            Err(mut e) if reused && e.message().is_some() => {
                let request = e.take_message().expect("checked above");
                sender = self.sender(target, false).await?.0;
                tokio::time::timeout(self.config.request_timeout, sender.send_request(request))
                    .await
                    .map_err(|_| TransportError::Timeout)?
                    .map_err(io)?
            }
            Err(e) => return Err(io(e.into_error())),
        };
        Ok((response, Lease { key: target.key.clone(), sender }))
    }

    /// A connection for a request to `target`: the shared HTTP/2 one, or with `reuse` a pooled
    /// HTTP/1.1 one, else a new one. The flag says whether it was reused (and so may have been
    /// closed by the server a moment ago).
    async fn sender(&self, target: &Target, reuse: bool) -> Result<(Sender, bool), TransportError> {
        let Target { key, host, port, https, .. } = target;
        let may_be_http2 = if *https { self.config.http2 } else { self.config.http2_prior_knowledge };
        if may_be_http2 && self.config.reuse_connections {
            let mut shared = self.http2.lock().await;
            match shared.get(key) {
                Some(Http2Slot::Open(sender)) if reuse && !sender.is_closed() => {
                    return Ok((Sender::Http2(sender.clone()), true));
                }
                Some(Http2Slot::Refused) => {}
                _ => {
                    let sender = self.connect(host, *port, *https).await?;
                    let slot = match &sender {
                        Sender::Http2(sender) => Http2Slot::Open(sender.clone()),
                        Sender::Http1(_) => Http2Slot::Refused,
                    };
                    shared.insert(key.clone(), slot);
                    return Ok((sender, false));
                }
            }
        }
        if reuse {
            if let Some(sender) = self.pooled(key).await {
                return Ok((Sender::Http1(sender), true));
            }
        }
        Ok((self.connect(host, *port, *https).await?, false))
    }

    /// Puts the connection of a response that has been read to its end back in the pool.
    /// Only then: a connection still carrying a body (an open SSE stream) is never handed out,
    /// so no request waits behind a stream.
    /// An HTTP/2 lease is a clone of the shared connection's sender: nothing to give back.
    fn release(&self, lease: Lease) {
        let Sender::Http1(sender) = lease.sender else { return };
        if !self.config.reuse_connections || sender.is_closed() || self.closed.load(Ordering::Acquire) {
            return;
        }
        let mut pool = self.pool.lock().expect("pool lock");
        if pool.len() < MAX_POOLED_CONNECTIONS {
            pool.push(Pooled { key: lease.key, sender, idle_since: std::time::Instant::now() });
        }
    }

    /// Reads a short body that carries no message (a 202, the legacy `Accepted`) to its end,
    /// then releases its connection; a body that is too long or too slow is dropped with it.
    async fn drain(&self, body: Incoming, lease: Lease) {
        let limited = http_body_util::Limited::new(body, 64 * 1024);
        if let Ok(Ok(_)) = tokio::time::timeout(self.config.request_timeout, limited.collect()).await {
            self.release(lease);
        }
    }

    /// An idle pooled connection to `key`, ready for a request; stale ones are dropped.
    async fn pooled(&self, key: &str) -> Option<http1::SendRequest<HttpBody>> {
        loop {
            let mut sender = {
                let mut pool = self.pool.lock().expect("pool lock");
                pool.retain(|p| !p.sender.is_closed() && p.idle_since.elapsed() < POOLED_CONNECTION_LIFETIME);
                let index = pool.iter().rposition(|p| *p.key == *key)?;
                pool.swap_remove(index).sender
            };
            // The body has ended; hyper marks the connection ready a moment later.
            if let Ok(Ok(())) = tokio::time::timeout(POOLED_READY_WAIT, sender.ready()).await {
                return Some(sender);
            }
        }
    }

    /// A new connection: TCP, then TLS for https, then the HTTP/2 handshake when the server
    /// chose `h2` by ALPN or prior knowledge is configured on plain http, else HTTP/1.1's.
    async fn connect(&self, host: &str, port: u16, https: bool) -> Result<Sender, TransportError> {
        let connection = self.connector.open(https, host, port).await.map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut => TransportError::Timeout,
            _ => TransportError::Io(e),
        })?;
        let http2 = if https { connection.http2 } else { self.config.http2_prior_knowledge };
        self.handshake(connection.io, http2).await
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

    /// Reads a JSON answer to its end (within the request timeout and the size cap) and hands
    /// its messages on.
    async fn read_json(&self, mut body: Incoming, lease: Lease, mut read: Read, awaited: &Awaited) {
        let max = self.config.max_event_bytes;
        let rest = async {
            while read.end.is_none() && read.buf.len() <= max {
                read.take(body.frame().await);
            }
        };
        if tokio::time::timeout(self.config.request_timeout, rest).await.is_err() {
            return self.push(Err(TransportError::Timeout)).await;
        }
        self.finish_json(body, lease, read, awaited).await;
    }

    /// Hands on a JSON answer read as far as it goes (its end, an error, or past the cap).
    async fn finish_json(&self, body: Incoming, lease: Lease, read: Read, awaited: &Awaited) {
        let max = self.config.max_event_bytes;
        if read.buf.len() > max {
            let seen = read.buf.len();
            if awaited.ids.is_empty() {
                return self
                    .push(Err(TransportError::Malformed(LineError::Frame(FrameError::TooLarge { max, seen }))))
                    .await;
            }
            // The body answers the POST's requests: they fail now, naming the limit.
            for id in &awaited.ids {
                self.push(Ok(Some(too_large_answer(id, seen, max)))).await;
            }
            return;
        }
        match read.end {
            Some(Ok(())) => {
                drop(body);
                self.release(lease);
                self.deliver(&read.buf, awaited).await;
            }
            end => {
                let message = end.and_then(Result::err).unwrap_or_else(|| "the body ended early".to_owned());
                self.push(Err(TransportError::Http { status: 200, message })).await
            }
        }
    }

    /// Decodes one message (or batch) and hands it to `recv`.
    async fn deliver(&self, data: &[u8], awaited: &Awaited) {
        match self.decode(data, awaited) {
            Ok(messages) => {
                for message in messages {
                    self.push(Ok(Some(message))).await;
                }
            }
            Err(e) => self.push(Err(e)).await,
        }
    }

    /// Decodes one message (or batch), learning the negotiated version from an initialize
    /// result on the way. The answer to the request `awaited` names a typed method for comes
    /// with its result typed.
    fn decode(&self, data: &[u8], awaited: &Awaited) -> Result<Vec<Message>, TransportError> {
        let version = *self.version.lock().expect("client lock");
        if let Some(method) = &awaited.typed_method {
            match jsonrpc::decode_answer::<ClientTypedResults>(data, version, method) {
                // A response to some other request (a server's mistake) is decoded again, raw.
                Ok(Payload::Single(Message::Response(r))) if !awaited.ids.contains(&r.id) => {}
                Ok(Payload::Single(message)) => {
                    let mut messages = vec![message];
                    attribute_idless(&mut messages, awaited);
                    return Ok(messages);
                }
                _ => {}
            }
        }
        // Replies to a 2025-03-26 batch may come as an array; decode leniently.
        let mut messages = match jsonrpc::decode(data, version.or(Some(ProtocolVersion::V2025_03_26))) {
            Ok(Payload::Single(m)) => vec![m],
            Ok(Payload::Batch(ms)) => ms,
            Err(jsonrpc::DecodeError::BatchNotAllowed { .. }) => {
                match jsonrpc::decode(data, Some(ProtocolVersion::V2025_03_26)) {
                    Ok(Payload::Batch(ms)) => ms,
                    Ok(Payload::Single(m)) => vec![m],
                    Err(e) => return Err(TransportError::Malformed(LineError::Message(e))),
                }
            }
            Err(e) => return Err(TransportError::Malformed(LineError::Message(e))),
        };
        attribute_idless(&mut messages, awaited);
        for message in &messages {
            if let Message::Response(r) = message {
                let is_init = self.initialize_id.lock().expect("client lock").as_ref() == Some(&r.id);
                if is_init {
                    if let Some(v) = negotiated_version(r) {
                        *self.version.lock().expect("client lock") = Some(v);
                    }
                }
            }
        }
        Ok(messages)
    }

    /// Reads one SSE stream; when it drops with responses still missing (or it is the
    /// standalone stream), resumes it with GET and `Last-Event-ID`. A stateless POST's stream
    /// that ends for good with its request unanswered answers that request with an error, so
    /// that it does not wait for an answer that cannot come (a `subscriptions/listen` stream
    /// the server dropped).
    async fn read_stream(
        self: &Arc<Self>,
        first: Option<(Incoming, Lease, Read)>,
        decoder: SseDecoder,
        mut pending: Awaited,
        standalone: bool,
    ) {
        self.read_stream_until_over(first, decoder, &mut pending, standalone).await;
        if let Some(seen) = pending.dropped {
            // An event over the cap was dropped and the stream ended without the answers it
            // may have carried: the requests fail now, naming the limit.
            for id in pending.ids.drain() {
                self.push(Ok(Some(too_large_answer(&id, seen, self.config.max_event_bytes)))).await;
            }
        }
        let stateless = self.version.lock().expect("client lock").is_some_and(|v| !v.has_initialize_handshake());
        if standalone || !stateless || self.closed.load(Ordering::Acquire) {
            return;
        }
        for id in pending.ids.drain() {
            let error = jsonrpc::ErrorObject::new(
                jsonrpc::ErrorCode::INTERNAL_ERROR,
                "the server ended the response stream without answering",
            );
            self.push(Ok(Some(Message::Error(jsonrpc::ErrorResponse { id: Some(id), error })))).await;
        }
    }

    async fn read_stream_until_over(
        self: &Arc<Self>,
        first: Option<(Incoming, Lease, Read)>,
        mut decoder: SseDecoder,
        pending: &mut Awaited,
        standalone: bool,
    ) {
        let mut body = first;
        let mut failures = 0;
        loop {
            if let Some((b, lease, read)) = body.take() {
                self.read_events(b, Some(lease), read, &mut decoder, pending, None).await;
            }
            if self.closed.load(Ordering::Acquire) || (!standalone && pending.ids.is_empty()) {
                return;
            }
            // Resumption needs an event id (a POST stream without one cannot be resumed).
            let last = decoder.last_event_id().map(str::to_owned);
            if last.is_none() && !standalone {
                return;
            }
            if failures >= self.config.max_reconnects {
                return;
            }
            let delay = decoder.retry().map_or(self.config.default_retry, Duration::from_millis);
            tokio::time::sleep(delay).await;
            match self.open_get(last.as_deref()).await {
                Ok(Some((b, lease))) => {
                    failures = 0;
                    body = Some((b, lease, Read::default()));
                }
                Ok(None) => return,
                Err(_) => failures += 1,
            }
        }
    }

    /// GET on the endpoint: `Ok(None)` when the server will not give a stream (405, 404, …).
    async fn open_get(&self, last_event_id: Option<&str>) -> Result<Option<(Incoming, Lease)>, TransportError> {
        let session = self.session_id.lock().expect("client lock").clone();
        let mut extra = vec![(ACCEPT, HeaderValue::from_static("text/event-stream"))];
        if let Some(id) = last_event_id {
            extra.push((LAST_EVENT_ID, HeaderValue::from_str(id).map_err(bad_config)?));
        }
        let (response, lease) =
            self.request(Method::GET, &self.endpoint, session.as_deref(), &extra, Bytes::new()).await?;
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        if response.status().is_success() && is_media(content_type, "text/event-stream") {
            return Ok(Some((response.into_body(), lease)));
        }
        if response.status().is_server_error() {
            return Err(TransportError::Http { status: response.status().as_u16(), message: String::new() });
        }
        Ok(None)
    }

    async fn standalone_stream(self: Arc<Self>) {
        let opened = self.open_get(None).await;
        self.standalone.send_replace(Standalone::Settled);
        if let Ok(Some((body, lease))) = opened {
            let decoder = SseDecoder::with_max_event_bytes(self.config.max_event_bytes);
            self.read_stream(Some((body, lease, Read::default())), decoder, Awaited::default(), true).await;
        }
    }

    /// Reads events until the body ends; a clean end releases `lease` (its connection can be
    /// reused). With `endpoint`, an `endpoint` event sets it (legacy).
    ///
    /// When an event carries the last response the stream was waiting for, the end of the body
    /// usually arrived with it: it is checked before the response is handed on, so the
    /// connection is back in the pool by the time the caller sends its next request.
    async fn read_events(
        &self,
        mut body: Incoming,
        mut lease: Option<Lease>,
        mut read: Read,
        decoder: &mut SseDecoder,
        pending: &mut Awaited,
        endpoint: Option<&watch::Sender<Option<Uri>>>,
    ) {
        loop {
            while let Some(event) = decoder.decode(&mut read.buf) {
                let waiting = !pending.ids.is_empty();
                let messages = self.event(event, pending, endpoint).await;
                if waiting && pending.ids.is_empty() && read.buf.is_empty() && read.end.is_none() {
                    read.take_ready(&mut body, self.config.max_event_bytes).await;
                }
                if read.ended_cleanly() {
                    if let Some(lease) = lease.take() {
                        self.release(lease);
                    }
                }
                for message in messages {
                    self.push(Ok(Some(message))).await;
                }
            }
            if read.end.is_some() {
                break;
            }
            read.take(body.frame().await);
        }
        while let Some(event) = decoder.decode_eof(&mut read.buf) {
            for message in self.event(event, pending, endpoint).await {
                self.push(Ok(Some(message))).await;
            }
        }
        if let (true, Some(lease)) = (read.ended_cleanly(), lease) {
            self.release(lease);
        }
    }

    /// Handles one SSE event; returns the messages it carried, to hand on. The ids of the
    /// responses among them leave `pending`.
    async fn event(
        &self,
        event: Result<crate::proto::framing::SseEvent, FrameError>,
        pending: &mut Awaited,
        endpoint: Option<&watch::Sender<Option<Uri>>>,
    ) -> Vec<Message> {
        match event {
            Err(e) => {
                if let (FrameError::TooLarge { seen, .. }, false) = (&e, pending.ids.is_empty()) {
                    pending.dropped = Some(*seen);
                }
                self.push(Err(TransportError::Malformed(LineError::Frame(e)))).await
            }
            Ok(event) if event.event_type() == "endpoint" => {
                if let Some(endpoint) = endpoint {
                    if let Some(uri) = resolve(&self.url, event.data.trim()) {
                        let _ = endpoint.send(Some(uri));
                    }
                }
            }
            Ok(event) if event.event_type() != "message" || event.data.is_empty() => {}
            Ok(event) => match self.decode(event.data.as_bytes(), pending) {
                Ok(messages) => {
                    for message in &messages {
                        let answered = match message {
                            Message::Response(r) => Some(&r.id),
                            Message::Error(e) => e.id.as_ref(),
                            _ => None,
                        };
                        if let Some(id) = answered {
                            pending.ids.remove(id);
                        }
                    }
                    self.note_related(&messages, pending.origin.as_ref());
                    return messages;
                }
                Err(e) => self.push(Err(e)).await,
            },
        }
        Vec::new()
    }

    /// Remembers which of our requests the server's requests in `messages` (read on the stream
    /// of the POST that carried `origin`) relate to, and forgets those the server cancelled.
    fn note_related(&self, messages: &[Message], origin: Option<&Id>) {
        for message in messages {
            match message {
                Message::Request(r) => {
                    let Some(origin) = origin else { continue };
                    let mut related = self.related.lock().expect("client lock");
                    // A server that never lets its requests end cannot grow this without bound;
                    // past the cap its requests are simply not known as related.
                    if related.len() < MAX_RELATED_REQUESTS {
                        related.insert(r.id.clone(), origin.clone());
                    }
                }
                Message::Notification(n) if n.method == "notifications/cancelled" => {
                    #[derive(serde::Deserialize, Clone)]
                    struct Cancelled {
                        #[serde(rename = "requestId")]
                        request_id: Id,
                    }
                    let cancelled = n.params.as_ref().and_then(|p| p.decode::<Cancelled>().ok());
                    if let Some(Cancelled { request_id }) = cancelled {
                        self.related.lock().expect("client lock").remove(&request_id);
                    }
                }
                _ => {}
            }
        }
    }

    /// Opens the legacy stream: GET the URL itself, then `/sse` at its root; waits for the
    /// `endpoint` event.
    async fn start_legacy(self: Arc<Self>) -> Result<(), TransportError> {
        let mut candidates = vec![self.url.clone()];
        if let Some(root) = resolve(&self.url, "/sse").filter(|u| *u != self.url) {
            candidates.push(root);
        }
        let accept = [(ACCEPT, HeaderValue::from_static("text/event-stream"))];
        let mut last_error = TransportError::Http { status: 404, message: "no legacy sse endpoint".into() };
        for url in candidates {
            // The legacy stream lasts as long as the session: its connection is never reused.
            let attempt = match Target::of(&url) {
                Ok(target) => self.request(Method::GET, &target, None, &accept, Bytes::new()).await,
                Err(e) => Err(e),
            };
            let (response, _lease) = match attempt {
                Ok(r) => r,
                Err(e) => {
                    last_error = e;
                    continue;
                }
            };
            let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
            if !response.status().is_success() || !is_media(content_type, "text/event-stream") {
                last_error = http_error(response).await;
                continue;
            }
            let (endpoint_tx, mut endpoint_rx) = watch::channel(None);
            *self.legacy.lock().expect("client lock") = Some(endpoint_rx.clone());
            let inner = self.clone();
            self.spawn(async move {
                let mut decoder = SseDecoder::with_max_event_bytes(inner.config.max_event_bytes);
                let mut pending = Awaited::default();
                let body = response.into_body();
                inner.read_events(body, None, Read::default(), &mut decoder, &mut pending, Some(&endpoint_tx)).await;
                // The legacy session lives as long as its stream.
                inner.push(Ok(None)).await;
            });
            let waited = tokio::time::timeout(self.config.request_timeout, endpoint_rx.wait_for(|e| e.is_some())).await;
            return match waited {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(_)) => Err(TransportError::Closed),
                Err(_) => Err(TransportError::Timeout),
            };
        }
        Err(last_error)
    }

    async fn legacy_send(&self, message: &Message) -> Result<(), TransportError> {
        if let Message::Request(r) = message {
            if r.method == "initialize" {
                *self.initialize_id.lock().expect("client lock") = Some(r.id.clone());
            }
        }
        let endpoint = self.legacy.lock().expect("client lock").as_ref().and_then(|rx| rx.borrow().clone());
        let endpoint = endpoint.ok_or(TransportError::Closed)?;
        let extra = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
        let (response, lease) = self
            .request(Method::POST, &Target::of(&endpoint)?, None, &extra, super::buffers::BODIES.encode(message))
            .await?;
        if response.status().is_success() {
            // The short body ("Accepted"), read to free the connection.
            self.drain(response.into_body(), lease).await;
            return Ok(());
        }
        Err(http_error(response).await)
    }
}

/// The answers a stream still owes, and how to decode them.
#[derive(Default)]
struct Awaited {
    /// The ids of the POST's requests not answered yet.
    ids: HashSet<Id>,
    /// The method of the POST's request, when its result is decoded typed.
    typed_method: Option<String>,
    /// The id of the request the POST carried: the server's requests on its stream are related
    /// to it.
    origin: Option<Id>,
    /// Bytes seen of an event dropped for being over the cap while answers were awaited.
    dropped: Option<usize>,
}

/// What has been read of a response body: its bytes so far and, once it is over, how it ended.
#[derive(Default)]
struct Read {
    buf: BytesMut,
    /// Once the body is over: `Ok` for a clean end, else hyper's error.
    end: Option<Result<(), String>>,
}

impl Read {
    fn ended_cleanly(&self) -> bool {
        matches!(self.end, Some(Ok(())))
    }

    fn take(&mut self, frame: Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>) {
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.buf.extend_from_slice(&data);
                }
            }
            Some(Err(e)) => self.end = Some(Err(e.to_string())),
            None => self.end = Some(Ok(())),
        }
    }

    /// Takes the frames that are already here, without waiting for more, until `buf` holds
    /// more than `limit` bytes.
    async fn take_ready(&mut self, body: &mut Incoming, limit: usize) {
        use hyper::body::Body as _;
        std::future::poll_fn(|cx| {
            while self.end.is_none() && self.buf.len() <= limit {
                match std::pin::Pin::new(&mut *body).poll_frame(cx) {
                    std::task::Poll::Ready(frame) => self.take(frame),
                    std::task::Poll::Pending => break,
                }
            }
            std::task::Poll::Ready(())
        })
        .await
    }
}

impl Inner {
    /// The HTTP handshake on an open connection, and the task that drives the connection.
    async fn handshake(&self, io: Box<dyn super::connector::Io>, http2: bool) -> Result<Sender, TransportError> {
        if !http2 {
            return Ok(Sender::Http1(super::connector::http1_handshake(io).await?.0));
        }
        let failed = |e: hyper::Error| TransportError::Io(std::io::Error::other(e));
        let io = TokioIo::new(io);
        let config = &self.config;
        let (sender, conn) = http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .initial_stream_window_size(config.http2_initial_stream_window_size)
            .initial_connection_window_size(config.http2_initial_connection_window_size)
            .max_header_list_size(config.http2_max_header_list_size)
            .handshake(io)
            .await
            .map_err(failed)?;
        crate::transport::task::spawn(async move {
            let _ = conn.await;
        });
        Ok(Sender::Http2(sender))
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
