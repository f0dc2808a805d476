//! The HTTP server side: [`HttpServer`] serves the Streamable HTTP transport on one endpoint
//! (default `/mcp`) and the legacy HTTP+SSE transport (`GET /sse`, `POST /message`), and hands
//! each MCP session to the application as a [`ServerTransport`].
//!
//! How HTTP exchanges map onto the transport
//! ([2025-11-25 transports](https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http)):
//!
//! - A POST without `Mcp-Session-Id` carrying `initialize` creates a session: a new
//!   [`ServerTransport`] is handed to the application callback, and the initialize response
//!   carries the session id. Every message POSTed later with that id comes out of the same
//!   transport's [`recv`](Transport::recv).
//! - A POST holding only notifications and responses is answered 202 with no body. A POST
//!   holding requests is answered with an SSE stream (or one JSON body in JSON-response mode):
//!   the responses the application [`send`](Transport::send)s for those requests go there, with
//!   progress notifications whose token one of them carried; the stream ends after the last
//!   response.
//! - Other server-initiated messages go to the standalone stream opened by GET; when none is
//!   open, to the newest POST stream still waiting for a response; otherwise they are queued
//!   (at most [`QUEUED_FOR_GET`], the oldest dropped beyond) and sent when the client opens the
//!   standalone stream, and stored for a `Last-Event-ID` resumption of it. The spec leaves this
//!   open (the server MAY send on the GET stream); the TypeScript SDK drops such messages unless
//!   an event store keeps them for a resumption, which loses, e.g., a `roots/list` sent right
//!   after `notifications/initialized` by a client that opens its GET stream a moment later.
//! - Stateless mode: a POST's answer is one JSON body when only responses come; when a message
//!   related to one of its requests comes first (progress, a log), there is no other stream to
//!   carry it, so the answer becomes an SSE stream (without event ids: nothing can resume).
//! - 2026-07-28 (`MCP-Protocol-Version` naming it, or an unknown version; without a session,
//!   also a body whose `_meta` names it): each POST stands alone, like stateless mode, after
//!   the per-request checks of [`envelope::check_http`] (`_meta`, the `MCP-Protocol-Version`,
//!   `Mcp-Method` and `Mcp-Name` headers against the body, the version); a refusal or an error
//!   answer goes out with the revision's status (400, 404 for -32601). No session id is
//!   minted, GET and DELETE are 405, the `Mcp-Param-*` headers are kept for the application
//!   ([`Transport::param_headers`]), and a client that goes away before its answer ends the
//!   exchange's transport (its request is cancelled).
//! - DELETE, idle expiry, and [`Transport::close`] by the application end the session: the
//!   transport's `recv` returns `None`, every stream ends, and the id is answered 404 from then on.
//! - Sessions shared with other replicas ([`HttpServerConfig::session_store`]): a replica that
//!   does not hold a session rebuilds it from the store. The application's requests to the
//!   client go out under ids `<replica>-<n>` naming this replica; a response naming another
//!   replica is relayed to it through the store ([`SessionStore::relay`]) and the POST gets
//!   202, one naming this replica gets the application's id back. A message for the standalone
//!   stream while this replica's GET is not open goes to the replica that last opened it
//!   ([`SessionStore::stream_holder`]; renewed with the session's record while the GET stays
//!   open), else stays here as above. Dropped with a log line
//!   (`tracing`): a response for a replica that is gone or never was, one that answers no
//!   request of its session, a relayed message for a session not held here. The store
//!   unreachable while a response must be relayed: 503 with a JSON-RPC error body, nothing of
//!   that POST handed on. None of this runs without a session store.
//!
//! Checks, in order: `Host` (DNS rebinding, 403), `Origin` (403), the bearer token when one is
//! configured ([`HttpServerConfig::bearer_token`]; 401 with `WWW-Authenticate: Bearer`, on the
//! MCP and legacy endpoints and on guarded [extra routes](super::routes)) or the OAuth access
//! token of a [protected resource](HttpServerConfig::protected_resource) (401 with
//! `resource_metadata` and `scope`, 503 when the authorization server cannot be asked; its
//! metadata path answers before this check), method (405),
//! `Accept` (406), `Content-Type` (415), body size (413), session id (400 missing, 404
//! unknown), `MCP-Protocol-Version` (400 unsupported), JSON-RPC decoding (400 with a -32700 or
//! -32600 error body), and for a protected resource the scopes the decoded requests need (403
//! `insufficient_scope`) and the session's holder (404 for another holder's token).
//!
//! Slow and idle clients: a request's head must arrive within
//! [`HttpServerConfig::header_read_timeout`] (30 s, counted while the server waits for a head,
//! so it also closes a keep-alive connection idle that long), its body within
//! [`HttpServerConfig::body_read_timeout`] (30 s, else 408); hyper answers 431 to more than
//! 100 headers or a head over 408 KiB. Each holds only its own connection meanwhile.
//!
//! Why the token comes third: `Host` and `Origin` cost nothing and refuse a DNS-rebinding page
//! or a foreign browser origin before it can even learn whether a token is wanted (no 401 vs
//! 403 oracle for them); every later check either reads the body (up to 4 MiB buffered for a
//! stranger) or answers something about the endpoint (405, 406, 415, 404 of a session id),
//! which an unauthenticated client should not get. Paths that are neither an MCP endpoint nor
//! a guarded route are not guarded: unknown paths answer 404 as before, public routes answer.
//!
//! The principal a handler sees is the one of the HTTP request that carried its own request;
//! the session keeps the one of its latest request (a refreshed token
//! of the same holder replaces it); every request is verified anew, and a stream ends when the
//! token that opened it expires (`token_expiry.rs`): the client reconnects with a fresh
//! token and resumes with `Last-Event-ID`.
//!
//! The listener ([`HttpServer`]) serves HTTP/1.1 and HTTP/2 on one port; the same handling is
//! the [`HttpService`] an application mounts in its own stack ([`super::service`]).
//!
//! Not here: verifying tokens ([`crate::auth`]), what the messages mean.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::header::{
    HeaderName, HeaderValue, ACCEPT, ALLOW, AUTHORIZATION, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN,
    WWW_AUTHENTICATE,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use super::bearer::{self, BearerCheck, BearerToken, NamedTokens};
use super::connection;
use super::event_store::{EventId, EventStore, MemoryEventStore, StoredEvent};
use super::failed_tokens::{self, FailedTokenPause, FailedTokens};
use super::request_context::HttpRequestParts;
use super::routes::{self, Route, RouteRequest, RouteResponse};
use super::service::{HttpService, RemoteAddr, RequestBody};
use super::session_caps::{self, SessionCaps};
use super::session_store::{changes_state, RelayKind, Relayed, SessionRecord, SessionStore, StoreError};
use super::token_expiry;
use super::version_header;

mod cancelled;
use super::{
    accepts, empty, full, host_of_authority, is_loopback_host, is_media, random_id, requeue_once, ChannelBody,
    HttpBody, LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID,
};
use crate::proto::envelope;
use crate::proto::framing::{encode_comment, encode_data_event, encode_event, SseEvent};
use crate::proto::jsonrpc::{self, Body, ErrorCode, ErrorObject, ErrorResponse, Id, Message, Payload};
use crate::proto::mcp_types::{CallToolRequestParams, ServerTypedParams};
use crate::proto::version::ProtocolVersion;
use crate::transport::drops::Drops;
use crate::transport::{
    principal::{Principal, Refusal},
    sse_http::resource::ProtectedResource,
};
use crate::transport::{Limits, Transport, TransportError};

/// Which `Host` header values are accepted (protection against DNS rebinding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostCheck {
    /// Loopback names and addresses only (`localhost`, `127.0.0.1`, `[::1]` …), plus the
    /// listed host names (without port).
    Loopback(Vec<String>),
    /// Any host: for servers behind a proxy that checks it.
    Any,
}

/// Which `Origin` header values are accepted. A request without `Origin` (not from a
/// browser) is always accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginCheck {
    /// Origins whose host is a loopback name or address, plus the listed origins
    /// (`scheme://host[:port]`, compared exactly).
    Loopback(Vec<String>),
    /// Only the listed origins.
    Only(Vec<String>),
    /// Any origin.
    Any,
}

/// How the server answers a POST that holds requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseMode {
    /// An SSE stream (priming event, related messages, the responses, end). The default.
    Sse,
    /// One `application/json` body with the response (a JSON array for a batch); related
    /// messages go to the standalone stream.
    Json,
}

/// The default of [`HttpServerConfig::max_sessions`]: 10,000 sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// The configuration of an [`HttpServer`]. Every field has a documented default.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpServerConfig {
    /// Where to listen: `127.0.0.1:0` (loopback, a free port). Never all interfaces unless told.
    pub bind: SocketAddr,
    /// The Streamable HTTP endpoint path: `/mcp`.
    pub path: String,
    /// Largest request body accepted, in bytes: 4 MiB; larger ones get 413.
    pub max_body_bytes: usize,
    /// `Origin` check: loopback origins only.
    pub origins: OriginCheck,
    /// `Host` check: loopback names only.
    pub hosts: HostCheck,
    /// SSE streams (default) or JSON bodies for POSTed requests.
    pub response_mode: ResponseMode,
    /// No sessions at all: every POST gets a fresh transport and a JSON answer, GET is 405.
    /// Default off.
    pub stateless: bool,
    /// Whether GET opens the standalone stream (otherwise 405): on.
    pub standalone_get: bool,
    /// `tools/call` params decoded into [`CallToolRequestParams`]
    /// as the request is read ([`jsonrpc::decode_typed`]): on. A large call is then scanned
    /// and copied once. Off for an application that needs the params' exact JSON text (a proxy
    /// or a recorder): typed params are re-serialized when asked for their text.
    pub typed_params: bool,
    /// The legacy HTTP+SSE transport on `legacy_sse_path` / `legacy_message_path`: on.
    pub legacy_sse: bool,
    /// The legacy transport's stream: `/sse`.
    pub legacy_sse_path: String,
    /// The legacy transport's POST endpoint: `/message`.
    pub legacy_message_path: String,
    /// Interval of SSE keep-alive comments: 15 s (`None`: none).
    pub keep_alive: Option<Duration>,
    /// The `retry` hint (ms) in each stream's priming event: 1000.
    pub retry_ms: u64,
    /// How long the answer to a POST of requests may wait for its first message before its
    /// head and priming event go out on their own: 10 ms. A request answered within it (a
    /// gateway's upstream round trip, a quick database call) is written as one TCP segment —
    /// head, priming event, answer and end — instead of two, so the client wakes once; a
    /// slower one sees its stream open this much later, which nothing but a stopwatch can
    /// tell from a slower handler. `Duration::ZERO`: the head goes out as soon as the
    /// application has had one turn.
    pub first_event_hold: Duration,
    /// Events kept per stream for resumption: 64.
    pub event_store_capacity: usize,
    /// A session with no request and no open stream for this long is ended: 30 minutes.
    pub session_idle_timeout: Duration,
    /// The most sessions held at once (Streamable HTTP and legacy SSE together): 10,000
    /// ([`DEFAULT_MAX_SESSIONS`]; each costs about 11 KB with nothing in flight). Past it, a
    /// new session (`initialize` without a session id, a legacy `GET`) gets 503 with
    /// `Retry-After` and a JSON-RPC error naming the limit; the sessions held are untouched.
    /// Refused rather than evicting the oldest idle session: whoever can open sessions could
    /// otherwise end everyone else's. Idle sessions still end after
    /// [`session_idle_timeout`](HttpServerConfig::session_idle_timeout), and a closed one
    /// (`DELETE`) frees its place at once. Sessions rebuilt from a
    /// [`session_store`](HttpServerConfig::session_store) (known to a replica already) are
    /// never refused, and count.
    pub max_sessions: usize,
    /// The `Retry-After` of a refusal past [`max_sessions`](HttpServerConfig::max_sessions):
    /// 5 s (whole seconds, at least 1).
    pub sessions_retry_after: Duration,
    /// How long [`HttpServer::shutdown`] waits for requests in flight: 5 s.
    pub shutdown_grace: Duration,
    /// How long a connection may take to send a request's head (request line and headers),
    /// counted from when the server starts waiting for it, so it also ends a keep-alive
    /// connection idle that long between requests: 30 s (hyper's timer; `None`: no limit).
    /// Against slowloris: a client trickling its headers is cut off, and holds one connection
    /// until then, nothing of the others'.
    pub header_read_timeout: Option<Duration>,
    /// How long a POST's body may take to arrive whole once its head is in: 30 s, then 408
    /// (`None`: no limit). A body a byte at a time, or a chunked body that never ends, holds
    /// its connection no longer than this.
    pub body_read_timeout: Option<Duration>,
    /// Queue depths of transports and streams (see [`Limits`]).
    pub limits: Limits,
    /// HTTP/2 beside HTTP/1.1 on the listener: on. Told apart by the connection's first bytes
    /// (h2c with prior knowledge; over TLS, the `h2` a client chose by ALPN, which the
    /// listener then offers). No h2c upgrade from HTTP/1.1 (`Upgrade: h2c`): prior knowledge
    /// only, as curl's `--http2-prior-knowledge` and gRPC clients speak it. Off: HTTP/1.1 alone
    /// (and ALPN offers only `http/1.1`).
    pub http2: bool,
    /// The most streams (requests) a client may have open at once on one HTTP/2 connection:
    /// 256. Each open SSE answer holds one; a client past it waits for one to end (the h2
    /// flow, not an error).
    pub http2_max_concurrent_streams: u32,
    /// The largest header list (decoded, names and values plus 32 bytes each, RFC 9113
    /// §6.5.2) an HTTP/2 request may carry: 64 KiB, announced in the server's SETTINGS. A
    /// larger one's stream is refused (`RST_STREAM` `REFUSED_STREAM`, before anything of it
    /// is handled); the connection's other streams go on. (HTTP/1.1's limit is hyper's: 100
    /// headers, a 408 KiB head, else 431.)
    pub http2_max_header_list_size: u32,
    /// Where events are kept for resumption; `None` (the default) makes a
    /// [`MemoryEventStore`] of `event_store_capacity`.
    pub event_store: Option<Arc<dyn EventStore>>,
    /// Where handshake-era sessions are shared with other replicas (see
    /// [`super::session_store`]): none, each session lives in this server alone. With one,
    /// a session id this server does not know is looked up there and the session rebuilt, and
    /// stream names carry this server's replica id so that events of replicas sharing an
    /// [`EventStore`] never collide.
    pub session_store: Option<Arc<dyn SessionStore>>,
    /// Protocol versions accepted in `MCP-Protocol-Version`: all of [`ProtocolVersion::ALL`].
    pub versions: Vec<ProtocolVersion>,
    #[cfg(feature = "tls")]
    /// Serve https with this rustls configuration (see [`super::tls::server_config_from_pem`]).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The token every request to the MCP endpoint, the legacy endpoints and the guarded extra
    /// routes must carry as `Authorization: Bearer <token>`: none. Never shown by `Debug`.
    pub bearer_token: Option<BearerToken>,
    /// Named tokens accepted beside (or instead of) `bearer_token`, each making its requests'
    /// principal [`Principal::named_token`] (see [`HttpServerConfig::named_tokens`]): none.
    pub named_tokens: NamedTokens,
    /// The token given to [`HttpServerConfig::bearer_token`] when it is not a valid one:
    /// [`HttpServer::bind`] refuses to start with it (the builder cannot return the error).
    bad_bearer_token: Option<bearer::BadToken>,
    /// Extra GET routes (see [`super::routes`]): none.
    routes: Vec<Route>,
    /// Sessions open at once from one client address, and for one principal (see
    /// [`super::session_caps`]): no cap but `max_sessions`.
    pub max_sessions_per_address: Option<usize>,
    /// See `max_sessions_per_address`.
    pub max_sessions_per_principal: Option<usize>,
    /// The pause after failed bearer tokens from one client address (see
    /// [`super::failed_tokens`]): 10 in a row, then 30 s; `None`: no pause.
    pub failed_token_pause: Option<FailedTokenPause>,
    /// OAuth protection of the MCP endpoints and guarded routes (see
    /// [`HttpServerConfig::protected_resource`]): none.
    pub protected_resource: Option<ProtectedResource>,
}

impl Default for HttpServerConfig {
    fn default() -> Self {
        HttpServerConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            path: "/mcp".to_owned(),
            max_body_bytes: 4 * 1024 * 1024,
            origins: OriginCheck::Loopback(Vec::new()),
            hosts: HostCheck::Loopback(Vec::new()),
            response_mode: ResponseMode::Sse,
            stateless: false,
            standalone_get: true,
            typed_params: true,
            legacy_sse: true,
            legacy_sse_path: "/sse".to_owned(),
            legacy_message_path: "/message".to_owned(),
            keep_alive: Some(Duration::from_secs(15)),
            retry_ms: 1000,
            first_event_hold: Duration::from_millis(10),
            event_store_capacity: 64,
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_sessions: DEFAULT_MAX_SESSIONS,
            sessions_retry_after: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(5),
            header_read_timeout: Some(Duration::from_secs(30)),
            body_read_timeout: Some(Duration::from_secs(30)),
            limits: Limits::default(),
            http2: true,
            http2_max_concurrent_streams: 256,
            http2_max_header_list_size: 64 * 1024,
            event_store: None,
            session_store: None,
            versions: ProtocolVersion::ALL.to_vec(),
            #[cfg(feature = "tls")]
            tls: None,
            bearer_token: None,
            named_tokens: NamedTokens::default(),
            bad_bearer_token: None,
            failed_token_pause: Some(FailedTokenPause::default()),
            max_sessions_per_address: None,
            max_sessions_per_principal: None,
            routes: Vec::new(),
            protected_resource: None,
        }
    }
}

impl std::fmt::Debug for HttpServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServerConfig")
            .field("bind", &self.bind)
            .field("path", &self.path)
            .field("response_mode", &self.response_mode)
            .field("stateless", &self.stateless)
            .field("bearer_token", &self.bearer_token)
            .field("named_tokens", &self.named_tokens)
            .field("routes", &self.routes)
            .field("protected_resource", &self.protected_resource)
            .finish_non_exhaustive()
    }
}

impl HttpServerConfig {
    /// Another listening address.
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    /// Another endpoint path.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Another body cap.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Another `Origin` policy.
    pub fn origins(mut self, origins: OriginCheck) -> Self {
        self.origins = origins;
        self
    }

    /// Another `Host` policy.
    pub fn hosts(mut self, hosts: HostCheck) -> Self {
        self.hosts = hosts;
        self
    }

    /// JSON bodies or SSE streams for POSTed requests.
    pub fn response_mode(mut self, mode: ResponseMode) -> Self {
        self.response_mode = mode;
        self
    }

    /// Stateless mode (implies JSON responses, no GET stream).
    pub fn stateless(mut self, on: bool) -> Self {
        self.stateless = on;
        self
    }

    /// Whether `tools/call` params are decoded into their type as they are read.
    pub fn typed_params(mut self, on: bool) -> Self {
        self.typed_params = on;
        self
    }

    /// Whether GET opens the standalone stream.
    pub fn standalone_get(mut self, on: bool) -> Self {
        self.standalone_get = on;
        self
    }

    /// Whether the legacy HTTP+SSE transport is served.
    pub fn legacy_sse(mut self, on: bool) -> Self {
        self.legacy_sse = on;
        self
    }

    /// How long a POST's answer waits for its first message before its head goes out alone
    /// (see [`HttpServerConfig::first_event_hold`]).
    pub fn first_event_hold(mut self, hold: Duration) -> Self {
        self.first_event_hold = hold;
        self
    }

    /// Keep-alive comment interval.
    pub fn keep_alive(mut self, every: Option<Duration>) -> Self {
        self.keep_alive = every;
        self
    }

    /// Events kept per stream.
    pub fn event_store_capacity(mut self, events: usize) -> Self {
        self.event_store_capacity = events;
        self
    }

    /// A custom event store.
    pub fn event_store(mut self, store: Arc<dyn EventStore>) -> Self {
        self.event_store = Some(store);
        self
    }

    /// Shares handshake-era sessions with other replicas through `store` (see
    /// [`HttpServerConfig::session_store`]).
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = Some(store);
        self
    }

    /// At most `max` sessions at once (see [`HttpServerConfig::max_sessions`]).
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }

    /// Another `Retry-After` for refusals past [`max_sessions`](HttpServerConfig::max_sessions).
    pub fn sessions_retry_after(mut self, after: Duration) -> Self {
        self.sessions_retry_after = after;
        self
    }

    /// Idle time after which a session ends.
    pub fn session_idle_timeout(mut self, idle: Duration) -> Self {
        self.session_idle_timeout = idle;
        self
    }

    /// Grace period of [`HttpServer::shutdown`].
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Time allowed for a request's head (see [`HttpServerConfig::header_read_timeout`]).
    pub fn header_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Time allowed for a request's body (see [`HttpServerConfig::body_read_timeout`]).
    pub fn body_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// Queue depths.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// HTTP/2 on or off (see [`HttpServerConfig::http2`]).
    pub fn http2(mut self, on: bool) -> Self {
        self.http2 = on;
        self
    }

    /// Another limit of streams open at once per HTTP/2 connection.
    pub fn http2_max_concurrent_streams(mut self, streams: u32) -> Self {
        self.http2_max_concurrent_streams = streams;
        self
    }

    /// Another limit of an HTTP/2 request's header list, in bytes.
    pub fn http2_max_header_list_size(mut self, bytes: u32) -> Self {
        self.http2_max_header_list_size = bytes;
        self
    }

    /// Serve https.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// Requires `Authorization: Bearer <token>` on the MCP endpoint, the legacy endpoints and
    /// the guarded routes (`None`: no token, the default). A token that is empty or holds
    /// characters a header cannot carry makes [`HttpServer::bind`] fail.
    pub fn bearer_token(mut self, token: Option<String>) -> Self {
        match token.map(BearerToken::new).transpose() {
            Ok(token) => {
                self.bearer_token = token;
                self.bad_bearer_token = None;
            }
            Err(e) => {
                self.bearer_token = None;
                self.bad_bearer_token = Some(e);
            }
        }
        self
    }

    /// Accepts each of `tokens` as `Authorization: Bearer <token>` where
    /// [`bearer_token`](Self::bearer_token) is asked for (beside it, when both are set): a
    /// request with one of them reaches handlers with the principal of its name
    /// ([`Principal::token_name`]), and a session is bound to the name that opened it (another
    /// name's token gets 404 for its id). [`protected_resource`](Self::protected_resource)
    /// takes the place of these too.
    pub fn named_tokens(mut self, tokens: NamedTokens) -> Self {
        self.named_tokens = tokens;
        self
    }

    /// Protects the MCP endpoints, the legacy endpoints and the guarded routes with OAuth 2.1
    /// access tokens checked by `resource`'s verifier: a request without a valid token gets 401
    /// with a `WWW-Authenticate: Bearer resource_metadata="…"` challenge, one whose token lacks
    /// a scope the request needs gets 403 `insufficient_scope`, and the Protected Resource
    /// Metadata is served (public) at the well-known path of the endpoint and at the root one.
    /// The verified [`Principal`] reaches handlers (`Context::principal`); a session is bound to
    /// the holder that opened it (another holder's token gets 404 for its id); an SSE stream
    /// ends at the `exp` of the token that opened it. Takes the place
    /// of [`bearer_token`](Self::bearer_token) when both are set.
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.protected_resource = Some(resource);
        self
    }

    /// Adds a GET (and HEAD) route at `path` that needs the bearer token when one is
    /// configured, e.g. a metrics page. A route added again at the same path replaces the
    /// first; a path of an MCP endpoint makes [`HttpServer::bind`] fail.
    pub fn route<F, Fut>(self, path: impl Into<String>, handler: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RouteResponse> + Send + 'static,
    {
        self.add_route(path.into(), true, routes::handler(handler))
    }

    /// Adds a GET (and HEAD) route at `path` that answers without the bearer token, e.g. a
    /// health probe. The `Host` and `Origin` checks still apply.
    pub fn route_public<F, Fut>(self, path: impl Into<String>, handler: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RouteResponse> + Send + 'static,
    {
        self.add_route(path.into(), false, routes::handler(handler))
    }

    /// Adds a route at `path` that reads its request ([`RouteRequest`]: the query string, a
    /// POST's JSON body) and answers GET, HEAD and POST, guarded as [`route`](Self::route) is.
    /// A POST must be `Content-Type: application/json` (else 415) and its body at most
    /// [`max_body_bytes`](Self::max_body_bytes) (else 413).
    pub fn route_with_request<F, Fut>(self, path: impl Into<String>, handler: F) -> Self
    where
        F: Fn(RouteRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RouteResponse> + Send + 'static,
    {
        let path = path.into();
        let mut config = self.add_route(path.clone(), true, routes::request_handler(handler));
        if let Some(route) = config.routes.iter_mut().find(|r| r.path == path) {
            route.accepts_post = true;
        }
        config
    }

    fn add_route(mut self, path: String, guarded: bool, handler: routes::RouteHandler) -> Self {
        self.routes.retain(|r| r.path != path);
        self.routes.push(Route { path, guarded, accepts_post: false, handler });
        self
    }

    /// Why this configuration cannot be served, if it cannot.
    fn invalid(&self) -> Option<String> {
        if let Some(e) = &self.bad_bearer_token {
            return Some(e.to_string());
        }
        let legacy = self.legacy_sse && !self.stateless;
        let is_endpoint = |path: &str| {
            path == self.path || (legacy && (path == self.legacy_sse_path || path == self.legacy_message_path))
        };
        let metadata = self.protected_resource.as_ref().map(|_| ProtectedResource::metadata_path(&self.path));
        self.routes.iter().find_map(|r| {
            if metadata.as_deref() == Some(r.path.as_str())
                || (metadata.is_some() && r.path == super::resource::METADATA_PATH)
            {
                Some(format!("route {}: the path of the protected resource metadata", r.path))
            } else if !r.path.starts_with('/') {
                Some(format!("route {:?}: a path must start with /", r.path))
            } else if is_endpoint(&r.path) {
                Some(format!("route {}: the path of an MCP endpoint", r.path))
            } else {
                None
            }
        })
    }
}

pub(super) type App = Arc<dyn Fn(ServerTransport) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// What is sent to one live SSE connection (or JSON collector): an event id and the data.
type Outgoing = (Option<String>, Bytes);

struct StreamInner {
    next_seq: u64,
    live: Option<mpsc::Sender<Outgoing>>,
    pending: HashSet<Id>,
    done: bool,
    /// The standalone stream's events sent while no GET connection was attached, for the next
    /// GET (without `Last-Event-ID`).
    queued: VecDeque<Outgoing>,
}

/// How many messages the standalone stream keeps for a GET that is not open yet.
pub const QUEUED_FOR_GET: usize = 256;

/// The log line when the standalone stream's queue is full.
const GET_QUEUE_FULL: &str =
    "mcpwire: messages for a session's GET stream, not open, past QUEUED_FOR_GET: the oldest dropped";

/// One SSE stream of a session: the standalone one (`0`) or the answer to one POST.
struct Stream {
    name: String,
    /// Key in the event store: `<session>/<name>`.
    key: String,
    standalone: bool,
    json: bool,
    /// Bytes of this stream's events in the event store.
    stored_bytes: AtomicUsize,
    /// Where the standalone stream counts the messages it drops past [`QUEUED_FOR_GET`].
    drops: Option<Arc<Drops>>,
    inner: tokio::sync::Mutex<StreamInner>,
}

impl Stream {
    fn new(session: &str, name: String, json: bool, pending: HashSet<Id>) -> Arc<Stream> {
        Stream::build(session, name, None, json, pending)
    }

    /// The session's standalone stream, counting its drops in `drops`.
    fn standalone(session: &str, name: String, drops: Arc<Drops>) -> Arc<Stream> {
        Stream::build(session, name, Some(drops), false, HashSet::new())
    }

    fn build(session: &str, name: String, drops: Option<Arc<Drops>>, json: bool, pending: HashSet<Id>) -> Arc<Stream> {
        Arc::new(Stream {
            key: [session, "/", &name].concat(),
            name,
            standalone: drops.is_some(),
            json,
            stored_bytes: AtomicUsize::new(0),
            drops,
            inner: tokio::sync::Mutex::new(StreamInner {
                next_seq: 0,
                live: None,
                pending,
                done: false,
                queued: VecDeque::new(),
            }),
        })
    }

    /// Stores and delivers one message; `completes` is the request it answers. `false` when
    /// the stream is already finished.
    async fn push(&self, store: &dyn EventStore, data: Bytes, completes: Option<&Id>) -> bool {
        let mut inner = self.inner.lock().await;
        if inner.done {
            return false;
        }
        inner.next_seq += 1;
        let seq = inner.next_seq;
        if !self.json {
            self.stored_bytes.fetch_add(data.len(), Ordering::Relaxed);
            store.append(&self.key, StoredEvent { seq, data: data.clone() });
        }
        let event = (Some(EventId::encode(&self.name, seq)), data);
        let undelivered = match inner.live.clone() {
            Some(live) => match live.send(event).await {
                Ok(()) => None,
                Err(mpsc::error::SendError(event)) => {
                    inner.live = None;
                    Some(event)
                }
            },
            None => Some(event),
        };
        if let (Some(event), true) = (undelivered, self.standalone) {
            if inner.queued.len() >= QUEUED_FOR_GET && inner.queued.pop_front().is_some() {
                if let Some(drops) = &self.drops {
                    drops.note(None, GET_QUEUE_FULL, QUEUED_FOR_GET);
                }
            }
            inner.queued.push_back(event);
        }
        if let Some(id) = completes {
            inner.pending.remove(id);
            if inner.pending.is_empty() && !self.standalone {
                inner.done = true;
                match (self.json, store.flush()) {
                    (false, Some(written)) => {
                        // The stream ends once its events are in the store (see EventStore::flush).
                        let live = inner.live.take();
                        crate::transport::task::spawn(async move {
                            written.await;
                            drop(live);
                        });
                    }
                    _ => inner.live = None,
                }
            }
        }
        true
    }

    /// Attaches a new live connection; with `after`, first the stored events after it.
    /// `Err(Conflict)` when a live connection is already attached and this is no resumption.
    async fn attach(
        &self,
        store: &dyn EventStore,
        after: Option<u64>,
        depth: usize,
    ) -> Result<(Vec<Outgoing>, Option<mpsc::Receiver<Outgoing>>), AttachError> {
        let mut inner = self.inner.lock().await;
        if after.is_none() && inner.live.as_ref().is_some_and(|l| !l.is_closed()) {
            return Err(AttachError::Conflict);
        }
        let replay = match after {
            Some(seq) => {
                let stored = store.replay(&self.key, seq).await.map_err(AttachError::Store)?;
                // What was queued is in the store too; the resumption replays it from there.
                inner.queued.clear();
                stored.into_iter().map(|e| (Some(EventId::encode(&self.name, e.seq)), e.data)).collect()
            }
            None => inner.queued.drain(..).collect(),
        };
        if inner.done {
            return Ok((replay, None));
        }
        let (tx, rx) = mpsc::channel(depth);
        inner.live = Some(tx);
        Ok((replay, Some(rx)))
    }

    async fn has_live(&self) -> bool {
        self.inner.lock().await.live.as_ref().is_some_and(|l| !l.is_closed())
    }

    async fn finish(&self) {
        let mut inner = self.inner.lock().await;
        inner.done = true;
        inner.live = None;
    }

    /// Ends the live connection (shutdown) without finishing the stream.
    async fn detach(&self) {
        self.inner.lock().await.live = None;
    }
}

/// Why a connection could not be attached to a stream.
#[derive(Debug)]
enum AttachError {
    /// A live connection is attached already.
    Conflict,
    /// The event store could not be asked for the events to replay.
    Store(StoreError),
}

#[derive(Default)]
struct Routes {
    /// Request id → the stream its response goes to.
    requests: HashMap<Id, Arc<Stream>>,
    /// Progress token (as JSON text) → request id.
    progress: HashMap<String, Id>,
    /// POST streams, oldest first, kept for resumption (at most [`KEPT_STREAMS`]).
    streams: VecDeque<Arc<Stream>>,
    /// Request id → the HTTP request that carried it (with its verified principal), until it
    /// is answered.
    http_requests: HashMap<Id, Arc<HttpRequestParts>>,
}

/// Header names (lowercase) and values, in the order received.
type HeaderPairs = Vec<(String, String)>;

const KEPT_STREAMS: usize = 64;

/// The POST streams kept for resumption hold at most about this many bytes of events per
/// session; the oldest streams go first. Without it, 64 answers of 64 KiB each would keep
/// 4 MiB per session alive long after the client read them.
const KEPT_STREAM_BYTES: usize = 1 << 20;

struct Session {
    id: String,
    /// Its places under the per-address and per-principal caps, given back when it ends.
    caps: Mutex<Option<session_caps::Held>>,
    legacy: bool,
    json: bool,
    incoming: Mutex<Option<mpsc::Sender<Message>>>,
    version: Mutex<Option<ProtocolVersion>>,
    initialize_id: Mutex<Option<Id>>,
    /// A 2026-07-28 POST's `Mcp-Param-*` headers, for the application to check against the
    /// called tool's schema.
    param_headers: Mutex<Option<(Id, HeaderPairs)>>,
    /// The holder of the session's token, as verified at its latest request (protected servers).
    principal: Mutex<Option<Arc<Principal>>>,
    routes: Mutex<Routes>,
    standalone: Arc<Stream>,
    /// Counts the standalone GETs held here (sessions shared through a store): only the
    /// latest one's [`keep_holding`] renews the store's records.
    standalone_holds: AtomicU64,
    next_stream: AtomicU64,
    last_active: Mutex<Instant>,
    open_connections: AtomicUsize,
    closed: AtomicBool,
    shared: Weak<Shared>,
    store: Arc<dyn EventStore>,
    /// With a session store: `<replica>-`, put before stream names so that the streams of
    /// replicas sharing an event store never share a name. Empty otherwise.
    stream_prefix: String,
    /// With a session store: what it holds for this session.
    record: Mutex<Option<SessionRecord>>,
    /// Ids of the requests replayed to rebuild this session, whose answers nobody awaits.
    replayed_ids: Mutex<HashSet<Id>>,
    /// Whether the application has been given `notifications/initialized` (shared sessions:
    /// the client's may have gone to another replica).
    initialized_given: AtomicBool,
    /// Told when the application has answered the replayed `initialize` (a rebuilt session).
    replayed_initialize_answered: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// When the session store's expiry of this session was last pushed back.
    store_touched: Mutex<Instant>,
    /// With a session store: the server's own requests to the client awaiting an answer, by
    /// the number in the id they went out with.
    outbound: Mutex<Outbound>,
    /// The timer of the first event hold, kept between the session's POSTs (see
    /// [`first_message`]).
    hold_timer: HoldTimer,
}

/// The requests a replica sent to a shared session's client, under ids of its own.
///
/// On the wire the id of each is `<replica>-<n>`: unique across replicas, and naming the one
/// whose application waits for the answer, wherever the client POSTs it. The application's
/// own id comes back when the answer arrives.
#[derive(Default)]
struct Outbound {
    next: u64,
    waiting: std::collections::BTreeMap<u64, Id>,
}

/// Requests kept awaiting an answer per session; beyond, the oldest is forgotten (its answer
/// would then be dropped, and the application's own timeout ends its wait).
const OUTBOUND_KEPT: usize = 1024;

/// The replica and number of a server-to-client request id `<replica>-<n>`; `None` for an id
/// no replica issued.
fn namespaced(id: &Id) -> Option<(&str, u64)> {
    let Id::String(text) = id else { return None };
    let (replica, n) = text.split_once('-')?;
    if replica.is_empty() || !replica.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some((replica, n.parse().ok()?))
}

fn answered_id(message: &Message) -> Option<&Id> {
    match message {
        Message::Response(r) => Some(&r.id),
        Message::Error(e) => e.id.as_ref(),
        _ => None,
    }
}

fn set_answered_id(message: &mut Message, id: Id) {
    match message {
        Message::Response(r) => r.id = id,
        Message::Error(e) => e.id = Some(id),
        _ => {}
    }
}

/// How far an ended session is forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Forget {
    /// Here and in the shared stores (DELETE, the application closed it, no shared store).
    Everywhere,
    /// In this replica, and the events of its streams here: idle here, while other replicas
    /// may serve it (the record stays in the session store).
    HereWithEvents,
    /// In this replica only: shutting down (the record and the events stay, so that the
    /// other replicas take the session and its streams up).
    Here,
}

impl Session {
    /// Binds the session to the request's principal (protected servers): the first one is kept,
    /// a later one must be the same holder and replaces it (a refreshed token's scopes and
    /// expiry). `false` for another holder's token.
    fn bind_principal<B>(&self, req: &Request<B>) -> bool {
        let Some(Authenticated(presented)) = req.extensions().get::<Authenticated>() else { return true };
        let mut principal = self.principal.lock().expect("session lock");
        if principal.as_ref().is_some_and(|held| !held.same_holder(presented)) {
            return false;
        }
        *principal = Some(presented.clone());
        true
    }

    /// Keeps `req` (its head, with the principal of its token) as the HTTP request of each
    /// request in `messages` until it is answered: a handler then sees the request and the
    /// token its own request came with, not the latest ones of its session.
    fn hold_requests(&self, req: &Arc<Request<()>>, messages: &[Message]) {
        if !messages.iter().any(|m| matches!(m, Message::Request(_))) {
            return;
        }
        let principal = req.extensions().get::<Authenticated>().map(|a| a.0.clone());
        let parts = Arc::new(HttpRequestParts::of(req, principal));
        let mut routes = self.routes.lock().expect("session lock");
        for message in messages {
            if let Message::Request(request) = message {
                routes.http_requests.insert(request.id.clone(), parts.clone());
            }
        }
    }

    fn version(&self) -> Option<ProtocolVersion> {
        *self.version.lock().expect("session lock")
    }

    fn touch(&self) {
        *self.last_active.lock().expect("session lock") = Instant::now();
    }

    /// Pushes back the session store's expiry of this session, at most every quarter of the
    /// idle timeout (in the background: a failure here is retried by a later request).
    fn keep_in_store(&self, shared: &Shared) {
        let Some(store) = shared.config.session_store.clone() else { return };
        let ttl = shared.config.session_idle_timeout;
        {
            let mut touched = self.store_touched.lock().expect("session lock");
            if touched.elapsed() < ttl / 4 || self.record.lock().expect("session lock").is_none() {
                return;
            }
            *touched = Instant::now();
        }
        let id = self.id.clone();
        crate::transport::task::spawn(async move {
            let _ = store.touch(&id, ttl).await;
        });
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Stateless mode's per-POST sessions are the only ones without an id.
    fn is_stateless(&self) -> bool {
        self.id.is_empty() && !self.legacy
    }

    /// A per-POST session serving one 2026-07-28 request: its errors go out with the statuses
    /// the revision gives them.
    fn is_per_request(&self) -> bool {
        self.is_stateless() && self.version().is_some_and(|v| !v.has_initialize_handshake())
    }

    /// Hands messages to the application; `false` if the session has ended.
    async fn deliver(&self, messages: Vec<Message>) -> bool {
        let Some(tx) = self.incoming.lock().expect("session lock").clone() else { return false };
        for message in messages {
            if tx.send(message).await.is_err() {
                return false;
            }
        }
        true
    }

    fn new_post_stream(&self, pending: HashSet<Id>) -> Arc<Stream> {
        let n = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let name = if self.stream_prefix.is_empty() { n.to_string() } else { format!("{}{n}", self.stream_prefix) };
        Stream::new(&self.id, name, self.json, pending)
    }

    /// Whether `message` answers a request replayed to rebuild the session (then it is
    /// dropped: the client never asked it here).
    fn answers_replayed(&self, message: &Message) -> bool {
        if self.stream_prefix.is_empty() {
            return false;
        }
        let id = match message {
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let Some(id) = id else { return false };
        if !self.replayed_ids.lock().expect("session lock").remove(id) {
            return false;
        }
        if self.initialize_id.lock().expect("session lock").as_ref() == Some(id) {
            if let Some(answered) = self.replayed_initialize_answered.lock().expect("session lock").take() {
                let _ = answered.send(());
            }
        }
        true
    }

    /// Whether this session is shared with other replicas (through a session store).
    fn is_shared(&self) -> bool {
        !self.stream_prefix.is_empty()
    }

    /// A shared session whose client's `notifications/initialized` went to another replica:
    /// the first request here (but `ping`) implies it, since a client sends its requests only
    /// after it, so the application is given one first. Without it the server layer would
    /// never count the handshake complete here, and refuse to send its own requests
    /// (elicitation, sampling, `roots/list`) and gated notifications (`list_changed`).
    fn imply_initialized(&self, messages: &mut Vec<Message>) {
        if self.initialized_given.load(Ordering::Acquire) {
            return;
        }
        let (mut given, mut implied) = (false, false);
        for message in messages.iter() {
            match message {
                Message::Notification(n) if n.method == "notifications/initialized" => given = true,
                Message::Request(r) if r.method != "ping" && r.method != "initialize" => implied = true,
                _ => {}
            }
        }
        if !given && !implied {
            return;
        }
        if self.initialized_given.swap(true, Ordering::AcqRel) || given {
            return;
        }
        let initialized = jsonrpc::Notification { method: "notifications/initialized".to_owned(), params: None };
        messages.insert(0, Message::Notification(initialized));
    }

    /// Gives a request of the application to the client an id naming this replica, and one
    /// of its `notifications/cancelled` the id the client knows that request by.
    fn namespace_outgoing(&self, message: &mut Message) {
        match message {
            Message::Request(request) => {
                let mut outbound = self.outbound.lock().expect("session lock");
                outbound.next += 1;
                let n = outbound.next;
                let own = std::mem::replace(&mut request.id, Id::String(format!("{}{n}", self.stream_prefix)));
                outbound.waiting.insert(n, own);
                if outbound.waiting.len() > OUTBOUND_KEPT {
                    outbound.waiting.pop_first();
                }
            }
            Message::Notification(note) if note.method == "notifications/cancelled" => {
                let Some(raw) = note.params.as_ref().and_then(|p| p.to_raw().ok()) else { return };
                let Ok(mut params) = serde_json::from_str::<serde_json::Value>(raw.get()) else { return };
                let Some(own) = params.get("requestId").and_then(|v| serde_json::from_value::<Id>(v.clone()).ok())
                else {
                    return;
                };
                let wire = {
                    let outbound = self.outbound.lock().expect("session lock");
                    outbound.waiting.iter().find(|(_, id)| **id == own).map(|(n, _)| *n)
                };
                if let Some(n) = wire {
                    params["requestId"] = serde_json::Value::String(format!("{}{n}", self.stream_prefix));
                    if let Ok(raw) = serde_json::value::to_raw_value(&params) {
                        note.params = Some(Body::Raw(raw));
                    }
                }
            }
            _ => {}
        }
    }

    /// `answer`, to the request this replica sent as number `n`, under the application's own
    /// id of that request, once: `None` when this session sent no such request, or it was
    /// answered already.
    fn restore_answer(&self, mut answer: Message, n: u64) -> Option<Message> {
        let own = self.outbound.lock().expect("session lock").waiting.remove(&n)?;
        set_answered_id(&mut answer, own);
        Some(answer)
    }

    /// Hands a message for the standalone stream to the replica holding that stream, when
    /// another one does. `false`: it stays here (no other holder, that replica is gone, or
    /// the store cannot be reached).
    async fn relay_to_stream_holder(&self, data: &Bytes) -> bool {
        let Some(shared) = self.shared.upgrade() else { return false };
        let Some(store) = shared.config.session_store.clone() else { return false };
        let holder = match store.stream_holder(&self.id).await {
            Ok(Some(holder)) if holder != shared.replica => holder,
            Ok(_) => return false,
            Err(e) => {
                tracing::warn!(error = %e, "kept a message for the standalone stream here: {e}");
                return false;
            }
        };
        let relayed = Relayed { session: self.id.clone(), kind: RelayKind::Standalone, message: data.clone() };
        match store.relay(&holder, &relayed).await {
            Ok(true) => {
                tracing::info!(replica = %shared.replica, holder = %holder, "relayed a message to the replica holding the standalone stream");
                true
            }
            Ok(false) => {
                tracing::warn!(replica = %shared.replica, holder = %holder, "kept a message for the standalone stream here: its holder is gone");
                false
            }
            Err(e) => {
                tracing::warn!(replica = %shared.replica, error = %e, "kept a message for the standalone stream here: {e}");
                false
            }
        }
    }

    /// Routes one outgoing message to its stream. See the module docs.
    async fn route(&self, mut message: Message, related: Option<&Id>) -> Result<(), TransportError> {
        if self.is_closed() {
            return Err(TransportError::Closed);
        }
        if let Message::Response(response) = &message {
            let is_init = self.initialize_id.lock().expect("session lock").as_ref() == Some(&response.id);
            if is_init {
                if let Some(v) = response_version(response) {
                    *self.version.lock().expect("session lock") = Some(v);
                }
            }
        }
        if self.answers_replayed(&message) {
            return Ok(());
        }
        if self.is_shared() {
            self.namespace_outgoing(&mut message);
        }
        let mut data = super::buffers::BODIES.encode(&message);
        let max_frame = self.shared.upgrade().map_or(usize::MAX, |s| s.config.limits.max_frame_bytes);
        let message = match crate::transport::oversized_answer(&message, data.len(), max_frame) {
            Some(answer) => {
                data = super::buffers::BODIES.encode(&answer);
                answer
            }
            None => message,
        };
        let mut unrelated = false;
        let (stream, completes) = {
            let mut routes = self.routes.lock().expect("session lock");
            let answered = match &message {
                Message::Response(r) => Some(r.id.clone()),
                Message::Error(e) => e.id.clone(),
                _ => None,
            };
            if let Some(id) = &answered {
                routes.http_requests.remove(id);
            }
            if let Some(id) = answered {
                match routes.requests.remove(&id) {
                    Some(stream) => {
                        routes.progress.retain(|_, request| *request != id);
                        (stream, Some(id))
                    }
                    None => (self.standalone.clone(), None),
                }
            } else if self.legacy {
                (self.standalone.clone(), None)
            } else {
                let related = related
                    .cloned()
                    .or_else(|| progress_token(&message).and_then(|t| routes.progress.get(&t).cloned()));
                match related.and_then(|id| routes.requests.get(&id).cloned()) {
                    // A JSON answer carries only responses, except in stateless mode, where
                    // nothing else could carry the message (see `json_answer`).
                    Some(stream) if !stream.json || self.is_stateless() => (stream, None),
                    _ => {
                        unrelated = true;
                        (self.fallback_stream(&routes), None)
                    }
                }
            }
        };
        // Shared sessions: the standalone stream may be open on another replica; it is
        // preferred there as it is here.
        if unrelated
            && self.is_shared()
            && !self.standalone.has_live().await
            && self.relay_to_stream_holder(&data).await
        {
            return Ok(());
        }
        let stream = if completes.is_none() && !stream.standalone && self.standalone.has_live().await {
            // A message unrelated to a request prefers the standalone stream when one is open.
            if related.is_none() && progress_token(&message).is_none() {
                self.standalone.clone()
            } else {
                stream
            }
        } else {
            stream
        };
        if !stream.push(&*self.store, data.clone(), completes.as_ref()).await && !stream.standalone {
            // The POST stream has finished meanwhile: the message goes to the standalone stream.
            self.standalone.push(&*self.store, data, None).await;
        }
        Ok(())
    }

    /// Where a message unrelated to any request goes when the standalone stream may be closed:
    /// the newest SSE POST stream still waiting for a response, or the standalone stream.
    fn fallback_stream(&self, routes: &Routes) -> Arc<Stream> {
        routes
            .streams
            .iter()
            .rev()
            .find(|s| !s.json && routes.requests.values().any(|r| Arc::ptr_eq(r, s)))
            .cloned()
            .unwrap_or_else(|| self.standalone.clone())
    }

    /// Ends the session: the application's `recv` sees the end, every stream ends, the id is
    /// forgotten (also by the shared stores).
    async fn close(&self) {
        self.end(Forget::Everywhere).await;
    }

    /// Ends the session here; with [`Forget::Everywhere`] the session store's record and the
    /// stored events go too.
    async fn end(&self, forget: Forget) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.caps.lock().expect("session lock").take();
        self.incoming.lock().expect("session lock").take();
        let streams: Vec<Arc<Stream>> = {
            let mut routes = self.routes.lock().expect("session lock");
            routes.requests.clear();
            routes.progress.clear();
            routes.streams.drain(..).collect()
        };
        for stream in streams.iter().chain(std::iter::once(&self.standalone)) {
            stream.finish().await;
            if forget != Forget::Here {
                self.store.remove(&stream.key);
            }
        }
        if let Some(shared) = self.shared.upgrade() {
            shared.sessions.lock().expect("sessions lock").remove(&self.id);
            let record = self.record.lock().expect("session lock").take();
            if let (Forget::Everywhere, Some(store), Some(_)) = (forget, &shared.config.session_store, record) {
                let (store, id) = (store.clone(), self.id.clone());
                crate::transport::task::spawn(async move {
                    let _ = store.remove(&id).await;
                });
            }
        }
    }
}

fn response_version(response: &jsonrpc::Response) -> Option<ProtocolVersion> {
    #[derive(serde::Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let raw = response.result.to_raw().ok()?;
    serde_json::from_str::<Init>(raw.get()).ok()?.protocol_version.parse().ok()
}

/// The `progressToken` of a request's `params._meta`, or of a progress notification's params,
/// as JSON text.
fn progress_token(message: &Message) -> Option<String> {
    match message {
        Message::Request(r) => params_progress_token(r.params.as_ref()?, true),
        Message::Notification(n) if n.method == "notifications/progress" => {
            params_progress_token(n.params.as_ref()?, false)
        }
        _ => None,
    }
}

/// The progress token in a request's `params._meta` (`in_meta`) or a progress notification's
/// `params`, as JSON text.
fn params_progress_token(params: &Body, in_meta: bool) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "progressToken")]
        progress_token: Option<serde_json::Value>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
        #[serde(rename = "progressToken")]
        progress_token: Option<serde_json::Value>,
    }
    if let Some(call) = params.typed_as::<CallToolRequestParams>() {
        let token = call.meta.as_ref()?.progress_token.as_ref()?;
        return serde_json::to_string(token).ok();
    }
    let raw = params.to_raw().ok()?;
    // Most requests carry no token: a substring search (SIMD) rules that out without parsing
    // the params, which for a large tool call means scanning all of its arguments. A key
    // could be written with `\u` escapes; then the params are parsed.
    let text = raw.get().as_bytes();
    if memchr::memmem::find(text, b"\"progressToken\"").is_none() && memchr::memmem::find(text, b"\\u").is_none() {
        return None;
    }
    let params: Params = serde_json::from_str(raw.get()).ok()?;
    let token = if in_meta { params.meta?.progress_token } else { params.progress_token };
    token.map(|t| t.to_string())
}

/// The application's end of one MCP session over HTTP.
///
/// `recv` yields what the client POSTed, in order; `None` once the session ended (DELETE,
/// idle expiry, server shutdown). `send` routes by message (see the module docs);
/// [`ServerTransport::send_related`] states the related request explicitly. `close` ends the
/// session.
///
/// # Cancel safety
/// As for [`Transport`]: `recv` and `send` are cancel safe.
pub struct ServerTransport {
    session: Arc<Session>,
    incoming: tokio::sync::Mutex<mpsc::Receiver<Message>>,
}

impl std::fmt::Debug for ServerTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTransport").field("legacy", &self.session.legacy).finish_non_exhaustive()
    }
}

impl ServerTransport {
    /// The protocol version agreed in `initialize`, once the application answered it.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.session.version()
    }

    /// Whether this session came over the legacy HTTP+SSE transport.
    pub fn is_legacy(&self) -> bool {
        self.session.legacy
    }

    /// Sends `message` on the stream of the client's request `request` (if that stream is
    /// still open; otherwise as [`Transport::send`] would).
    ///
    /// # Errors
    /// [`TransportError::Closed`] once the session has ended.
    pub async fn send_related(&self, message: Message, request: &Id) -> Result<(), TransportError> {
        self.session.route(message, Some(request)).await
    }
}

impl Transport for ServerTransport {
    fn is_stateless(&self) -> bool {
        self.session.is_stateless()
    }

    /// No: the input ends with the session, and an ended session's streams are gone.
    fn outlives_its_input(&self) -> bool {
        false
    }

    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.session.route(message, None).await
    }

    async fn send_related(&self, message: Message, related: &Id) -> Result<(), TransportError> {
        self.session.route(message, Some(related)).await
    }

    fn principal(&self, request: &Id) -> Option<Arc<Principal>> {
        let held = self.session.routes.lock().expect("session lock").http_requests.get(request).cloned();
        held.and_then(|parts| parts.principal_arc())
            .or_else(|| self.session.principal.lock().expect("session lock").clone())
    }

    fn network_transport(&self) -> Option<&'static str> {
        Some("tcp")
    }

    fn session_id(&self) -> Option<String> {
        (!self.session.is_stateless()).then(|| self.session.id.clone())
    }

    fn http_request(&self, request: &Id) -> Option<Arc<HttpRequestParts>> {
        self.session.routes.lock().expect("session lock").http_requests.get(request).cloned()
    }

    fn param_headers(&self, request: &Id) -> Option<Vec<(String, String)>> {
        let stored = self.session.param_headers.lock().expect("session lock");
        stored.as_ref().filter(|(id, _)| id == request).map(|(_, headers)| headers.clone())
    }

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        Ok(self.incoming.lock().await.recv().await)
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.session.close().await;
        Ok(())
    }
}

pub(super) struct Shared {
    pub(super) config: HttpServerConfig,
    store: Arc<dyn EventStore>,
    /// `<8 hex digits>-` naming this server's streams when sessions are shared; empty otherwise.
    stream_prefix: String,
    /// The 8 hex digits of `stream_prefix`: this replica's name for relays; empty when not shared.
    replica: String,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    app: App,
    shutting_down: AtomicBool,
    failed_tokens: Mutex<FailedTokens>,
    session_caps: Arc<SessionCaps>,
    /// Messages the sessions' standalone streams dropped for a GET not open ([`QUEUED_FOR_GET`]).
    standalone_drops: Arc<Drops>,
    /// Turns true at shutdown: the routes' streamed bodies end.
    route_streams_end: watch::Sender<bool>,
}

impl Shared {
    /// Checks `config`, builds the sessions' table and starts their background work (idle
    /// expiry; with a session store, the relays and the sessions ended elsewhere), which runs
    /// until `stopped` changes or its sender is dropped.
    pub(super) async fn start(
        config: HttpServerConfig,
        app: App,
        stopped: watch::Receiver<bool>,
    ) -> std::io::Result<Arc<Shared>> {
        if let Some(why) = config.invalid() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
        }
        let store: Arc<dyn EventStore> =
            config.event_store.clone().unwrap_or_else(|| Arc::new(MemoryEventStore::new(config.event_store_capacity)));
        let stream_prefix = match config.session_store {
            Some(_) => format!("{}-", &random_id()[..8]),
            None => String::new(),
        };
        let replica = stream_prefix.trim_end_matches('-').to_owned();
        let relayed = match &config.session_store {
            Some(sessions) => sessions.relayed(&replica).await.map_err(|e| std::io::Error::other(e.to_string()))?,
            None => None,
        };
        let shared = Arc::new(Shared {
            config,
            store,
            replica,
            stream_prefix,
            sessions: Mutex::new(HashMap::new()),
            app,
            shutting_down: AtomicBool::new(false),
            failed_tokens: Mutex::default(),
            session_caps: Arc::default(),
            standalone_drops: Arc::default(),
            route_streams_end: watch::channel(false).0,
        });
        crate::transport::task::spawn(reap_idle(Arc::downgrade(&shared), stopped.clone()));
        if let Some(ended) = shared.config.session_store.as_ref().and_then(|s| s.ended_elsewhere()) {
            crate::transport::task::spawn(end_sessions_ended_elsewhere(
                Arc::downgrade(&shared),
                ended,
                stopped.clone(),
            ));
        }
        if let Some(relayed) = relayed {
            crate::transport::task::spawn(take_relayed(Arc::downgrade(&shared), relayed, stopped));
        }
        Ok(shared)
    }

    pub(super) fn session_count(&self) -> usize {
        self.sessions.lock().expect("sessions lock").len()
    }

    pub(super) fn standalone_messages_dropped(&self) -> u64 {
        self.standalone_drops.total()
    }

    /// New requests get 503 from now on; the standalone streams and the legacy sessions end
    /// (nothing would ever end them), the POST streams in flight go on.
    pub(super) async fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        self.route_streams_end.send_replace(true);
        let sessions: Vec<Arc<Session>> = self.sessions.lock().expect("sessions lock").values().cloned().collect();
        for session in &sessions {
            if session.legacy {
                session.close().await;
            } else {
                session.standalone.detach().await;
            }
        }
    }

    /// Ends every session held here (other replicas go on serving a shared session).
    pub(super) async fn end_sessions(&self) {
        let sessions: Vec<Arc<Session>> = self.sessions.lock().expect("sessions lock").values().cloned().collect();
        for session in sessions {
            session.end(self.forget_when_gone_here(false)).await;
        }
    }

    /// A new session, kept in the table when `keep` (`None` when the table holds
    /// [`HttpServerConfig::max_sessions`] already: nothing was started).
    fn new_session(self: &Arc<Self>, legacy: bool, json: bool, keep: bool) -> Option<(Arc<Session>, ServerTransport)> {
        let id = if keep { random_id() } else { String::new() };
        let (session, transport) = self.build_session(id, legacy, json);
        if keep {
            let mut sessions = self.sessions.lock().expect("sessions lock");
            if sessions.len() >= self.config.max_sessions {
                return None;
            }
            sessions.insert(session.id.clone(), session.clone());
        }
        Some((session, transport))
    }

    /// A session that belongs to no table (stateless requests): never refused.
    fn unkept_session(self: &Arc<Self>, json: bool) -> (Arc<Session>, ServerTransport) {
        self.build_session(String::new(), false, json)
    }

    /// A session of id `id`, not yet in the table.
    fn build_session(self: &Arc<Self>, id: String, legacy: bool, json: bool) -> (Arc<Session>, ServerTransport) {
        // Only the sessions a store can share get prefixed stream names.
        let prefix = if id.is_empty() || legacy { String::new() } else { self.stream_prefix.clone() };
        let (tx, rx) = mpsc::channel(self.config.limits.queue_depth.max(1));
        let session = Arc::new(Session {
            standalone: Stream::standalone(&id, format!("{prefix}0"), self.standalone_drops.clone()),
            id: id.clone(),
            caps: Mutex::new(None),
            legacy,
            json,
            incoming: Mutex::new(Some(tx)),
            version: Mutex::new(None),
            initialize_id: Mutex::new(None),
            param_headers: Mutex::new(None),
            principal: Mutex::new(None),
            routes: Mutex::new(Routes::default()),
            standalone_holds: AtomicU64::new(0),
            next_stream: AtomicU64::new(1),
            last_active: Mutex::new(Instant::now()),
            open_connections: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            shared: Arc::downgrade(self),
            store: self.store.clone(),
            stream_prefix: prefix,
            record: Mutex::new(None),
            replayed_ids: Mutex::new(HashSet::new()),
            replayed_initialize_answered: Mutex::new(None),
            initialized_given: AtomicBool::new(false),
            store_touched: Mutex::new(Instant::now()),
            outbound: Mutex::new(Outbound::default()),
            hold_timer: HoldTimer::default(),
        });
        let transport = ServerTransport { session: session.clone(), incoming: tokio::sync::Mutex::new(rx) };
        (session, transport)
    }

    fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions.lock().expect("sessions lock").get(id).cloned()
    }

    /// How far a session idle here (`idle`), or of a replica shutting down, is forgotten:
    /// only here when a session store shares it (its record expires there on its own).
    fn forget_when_gone_here(&self, idle: bool) -> Forget {
        match (self.config.session_store.is_some(), idle) {
            (false, _) => Forget::Everywhere,
            (true, true) => Forget::HereWithEvents,
            (true, false) => Forget::Here,
        }
    }

    /// The session of `id`: this server's, or, with a session store, rebuilt from it. `Err` is
    /// the answer when the store cannot be asked.
    async fn find_session(self: &Arc<Self>, id: &str) -> Result<Option<Arc<Session>>, Response<HttpBody>> {
        if let Some(session) = self.session(id) {
            session.keep_in_store(self);
            return Ok(Some(session));
        }
        restore(self, id).await
    }
}

/// A running HTTP server: a listener whose connections are served by an [`HttpService`]
/// (HTTP/1.1 and HTTP/2 on the same port, see [`HttpServerConfig::http2`]). Dropping it does
/// not stop it: call [`HttpServer::shutdown`].
pub struct HttpServer {
    addr: SocketAddr,
    path: String,
    tls: bool,
    service: HttpService,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Binds `config.bind` and serves in a background task. `app` is called once per new
    /// session with its transport; it runs in a task of its own. To serve an MCP
    /// [`Server`](crate::server::Server), `server.serve_http(config)` does this.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn bind<F, Fut>(config: HttpServerConfig, app: F) -> std::io::Result<HttpServer>
    where
        F: Fn(ServerTransport) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        if let Some(why) = config.invalid() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
        }
        let listener = TcpListener::bind(config.bind).await?;
        HttpServer::serve_on(listener, config, app).await
    }

    /// As [`bind`](Self::bind), on a listener already bound (`config.bind` is not used): the
    /// address is known before the configuration is made, e.g. to name the resource URI of a
    /// [`ProtectedResource`] on a port chosen by the system.
    ///
    /// # Errors
    /// When the configuration is invalid or the listener's address cannot be read.
    pub async fn serve_on<F, Fut>(
        listener: TcpListener,
        config: HttpServerConfig,
        app: F,
    ) -> std::io::Result<HttpServer>
    where
        F: Fn(ServerTransport) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let addr = listener.local_addr()?;
        #[cfg(feature = "tls")]
        let tls = config.tls.is_some();
        #[cfg(not(feature = "tls"))]
        let tls = false;
        let path = config.path.clone();
        let service = HttpService::new(config, app).await?;
        let task = crate::transport::task::spawn(accept_loop(listener, service.clone()));
        Ok(HttpServer { addr, path, tls, service, task })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint's URL, e.g. `http://127.0.0.1:41234/mcp`.
    pub fn url(&self) -> String {
        format!("{}://{}{}", if self.tls { "https" } else { "http" }, self.addr, self.path)
    }

    /// The legacy transport's stream URL, e.g. `http://127.0.0.1:41234/sse`.
    pub fn legacy_url(&self) -> String {
        let legacy = &self.service.shared().config.legacy_sse_path;
        format!("{}://{}{}", if self.tls { "https" } else { "http" }, self.addr, legacy)
    }

    /// Sessions currently open.
    pub fn session_count(&self) -> usize {
        self.service.session_count()
    }

    /// See [`HttpService::standalone_messages_dropped`].
    pub fn standalone_messages_dropped(&self) -> u64 {
        self.service.standalone_messages_dropped()
    }

    /// The Service behind the listener: the same sessions, for requests the application
    /// receives some other way.
    pub fn service(&self) -> &HttpService {
        &self.service
    }

    /// Graceful shutdown: stops accepting connections, ends the standalone and legacy streams,
    /// waits up to the grace period for requests in flight to be answered, then ends every
    /// session (their transports' `recv` returns `None`).
    pub async fn shutdown(self) {
        self.service.stop();
        let _ = self.task.await;
    }
}

async fn accept_loop(listener: TcpListener, service: HttpService) {
    let mut stopped = service.stopped();
    let shared = service.shared().clone();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let builders = Arc::new(connection::Builders::new(&shared.config));
    #[cfg(feature = "tls")]
    let tls = shared.config.tls.clone().map(|config| super::tls::offer_h2(config, shared.config.http2));
    loop {
        let (tcp, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = stopped.changed() => break,
        };
        let _ = tcp.set_nodelay(true);
        let service_shared = shared.clone();
        let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
            let shared = service_shared.clone();
            let (mut parts, body) = req.into_parts();
            parts.extensions.insert(RemoteAddr(remote));
            let req = Request::from_parts(parts, RequestBody::from(body));
            async move { Ok::<_, Infallible>(handle(shared, req).await) }
        });
        let watcher = graceful.watcher();
        let builders = builders.clone();
        #[cfg(feature = "tls")]
        if let Some(tls) = tls.clone() {
            crate::transport::task::spawn(async move {
                let acceptor = tokio_rustls::TlsAcceptor::from(tls);
                let Ok(Ok(stream)) = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await else {
                    return;
                };
                serve_connection(stream, service, &builders, watcher).await;
            });
            continue;
        }
        crate::transport::task::spawn(async move { serve_connection(tcp, service, &builders, watcher).await });
    }
    drop(listener);
    shared.begin_shutdown().await;
    let _ = tokio::time::timeout(shared.config.shutdown_grace, graceful.shutdown()).await;
    shared.end_sessions().await;
}

/// Serves one connection as HTTP/1.1 or HTTP/2, as its first bytes say (`connection.rs`).
async fn serve_connection<IO, S>(
    io: IO,
    service: S,
    builders: &connection::Builders,
    watcher: hyper_util::server::graceful::Watcher,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = HttpBody> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Ok((is_h2, io)) = connection::sniff(io, builders.sniff_timeout).await else { return };
    match &builders.http2 {
        Some(http2) if is_h2 => {
            let _ = watcher.watch(http2.serve_connection(TokioIo::new(io), service)).await;
        }
        _ => {
            let _ = watcher.watch(builders.http1.serve_connection(TokioIo::new(io), service)).await;
        }
    }
}

/// Ends this server's copy of every session the session store announces as removed (a DELETE
/// through another replica).
async fn end_sessions_ended_elsewhere(
    shared: Weak<Shared>,
    mut ended: tokio::sync::broadcast::Receiver<String>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let id = tokio::select! {
            id = ended.recv() => match id {
                Ok(id) => id,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = stopped.changed() => return,
        };
        let Some(shared) = shared.upgrade() else { return };
        if let Some(session) = shared.session(&id) {
            session.end(Forget::HereWithEvents).await;
        }
    }
}

/// Puts each message other replicas relay here where it belongs: a response with the request
/// of this replica's application that waits for it, a message for the standalone stream on
/// that stream (queued for the next GET when none is open, as for a message made here).
/// Dropped with a log line: one for a session this replica does not hold, and a response that
/// answers no request this replica sent in that session.
async fn take_relayed(shared: Weak<Shared>, mut relayed: mpsc::Receiver<Relayed>, mut stopped: watch::Receiver<bool>) {
    loop {
        let relayed = tokio::select! {
            relayed = relayed.recv() => match relayed {
                Some(relayed) => relayed,
                None => return,
            },
            _ = stopped.changed() => return,
        };
        let Some(shared) = shared.upgrade() else { return };
        let replica = &shared.replica;
        let Some(session) = shared.session(&relayed.session) else {
            tracing::warn!(%replica, kind = ?relayed.kind, "dropped a relayed message: its session is not held here");
            continue;
        };
        match relayed.kind {
            RelayKind::Response => {
                let message = match Message::from_slice(&relayed.message) {
                    Ok(message) => message,
                    Err(e) => {
                        tracing::warn!(%replica, "dropped a relayed response that is not JSON-RPC: {e}");
                        continue;
                    }
                };
                let sent_here =
                    answered_id(&message).and_then(namespaced).filter(|(to, _)| to == replica).map(|(_, n)| n);
                let Some(message) = sent_here.and_then(|n| session.restore_answer(message, n)) else {
                    tracing::warn!(%replica, "dropped a relayed response that answers no request of its session here");
                    continue;
                };
                tracing::info!(%replica, "a relayed response reached the request waiting for it");
                session.deliver(vec![message]).await;
            }
            RelayKind::Standalone => {
                session.standalone.push(&*session.store, relayed.message, None).await;
                tracing::info!(%replica, "wrote a relayed message on the standalone stream");
            }
        }
    }
}

/// The client's responses among `messages` to requests of this replica get back the ids the
/// application gave them; those to requests of another replica are relayed to it and taken
/// out. Dropped with a log line: a response naming this replica that answers none of its
/// requests in this session, and one for a replica that is gone or never was. `Err` is the
/// answer (503) when the store cannot be reached to relay one; nothing of the POST is handed
/// on then.
#[allow(clippy::result_large_err)]
async fn route_responses(
    shared: &Shared,
    session: &Session,
    messages: Vec<Message>,
) -> Result<Vec<Message>, Response<HttpBody>> {
    let Some(store) = shared.config.session_store.as_ref() else { return Ok(messages) };
    if !messages.iter().any(|m| answered_id(m).and_then(namespaced).is_some()) {
        return Ok(messages);
    }
    let replica = &shared.replica;
    let mut kept = Vec::with_capacity(messages.len());
    for message in messages {
        let Some((owner, n)) = answered_id(&message).and_then(namespaced) else {
            kept.push(message);
            continue;
        };
        if owner == replica {
            match session.restore_answer(message, n) {
                Some(message) => kept.push(message),
                None => tracing::warn!(%replica, "dropped a response that answers no request of its session here"),
            }
            continue;
        }
        let owner = owner.to_owned();
        let relayed = Relayed {
            session: session.id.clone(),
            kind: RelayKind::Response,
            message: super::buffers::BODIES.encode(&message),
        };
        match store.relay(&owner, &relayed).await {
            Ok(true) => tracing::info!(%replica, %owner, "relayed a response to the replica that asked"),
            Ok(false) => {
                tracing::warn!(%replica, %owner, "dropped a response for a replica that is gone or never was")
            }
            Err(e) => {
                tracing::warn!(%replica, %owner, "could not relay a response: {e}");
                return Err(store_unavailable(&e));
            }
        }
    }
    Ok(kept)
}

async fn reap_idle(shared: Weak<Shared>, mut stopped: watch::Receiver<bool>) {
    loop {
        let Some(idle) = shared.upgrade().map(|s| s.config.session_idle_timeout) else { return };
        let tick = (idle / 4).clamp(Duration::from_millis(20), Duration::from_secs(10));
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            _ = stopped.changed() => return,
        }
        let Some(shared) = shared.upgrade() else { return };
        let expired: Vec<Arc<Session>> = shared
            .sessions
            .lock()
            .expect("sessions lock")
            .values()
            .filter(|s| {
                s.open_connections.load(Ordering::Acquire) == 0
                    && s.last_active.lock().expect("session lock").elapsed() > idle
            })
            .cloned()
            .collect();
        for session in expired {
            session.end(shared.forget_when_gone_here(true)).await;
        }
    }
}

fn header<B>(req: &Request<B>, name: HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

fn plain(status: StatusCode, text: &'static str) -> Response<HttpBody> {
    let mut response = Response::new(full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

/// An HTTP error answered with a JSON-RPC error body (id absent), as the TypeScript SDK does.
fn rpc_error(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Response<HttpBody> {
    let body = Message::Error(ErrorResponse::new(None, ErrorObject::new(code, message))).to_vec();
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// 503 with `Retry-After` and a JSON-RPC error naming the limit: the server holds
/// [`HttpServerConfig::max_sessions`] sessions already.
fn too_many_sessions(shared: &Shared) -> Response<HttpBody> {
    let max = shared.config.max_sessions;
    tracing::debug!(max, "a new session refused: max_sessions reached");
    let message = format!("Service Unavailable: too many sessions (the limit max_sessions = {max}); try again later");
    let mut response = rpc_error(StatusCode::SERVICE_UNAVAILABLE, TRANSPORT_ERROR, message);
    let retry = shared.config.sessions_retry_after.as_secs().max(1);
    response.headers_mut().insert(hyper::header::RETRY_AFTER, HeaderValue::from(retry));
    response
}

/// -32000: the code SDKs use for transport-level refusals.
const TRANSPORT_ERROR: ErrorCode = ErrorCode(-32000);
/// -32001: session not found (as the TypeScript SDK answers it).
const SESSION_NOT_FOUND: ErrorCode = ErrorCode(-32001);

fn host_allowed(config: &HttpServerConfig, host: Option<&str>) -> bool {
    match &config.hosts {
        HostCheck::Any => true,
        HostCheck::Loopback(extra) => host.is_some_and(|h| {
            let name = host_of_authority(h);
            is_loopback_host(name) || extra.iter().any(|e| e.eq_ignore_ascii_case(name))
        }),
    }
}

fn origin_allowed(config: &HttpServerConfig, origin: &str) -> bool {
    let listed = |list: &[String]| list.iter().any(|o| o.eq_ignore_ascii_case(origin));
    match &config.origins {
        OriginCheck::Any => true,
        OriginCheck::Only(list) => listed(list),
        OriginCheck::Loopback(list) => {
            listed(list)
                || origin.split_once("://").is_some_and(|(scheme, authority)| {
                    matches!(scheme, "http" | "https") && is_loopback_host(host_of_authority(authority))
                })
        }
    }
}

pub(super) async fn handle(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    let config = &shared.config;
    // HTTP/2 carries `:authority` in the URI rather than a `Host` header.
    let host = header(&req, HOST).or_else(|| req.uri().authority().map(|a| a.as_str()));
    if !host_allowed(config, host) {
        return rpc_error(StatusCode::FORBIDDEN, TRANSPORT_ERROR, "Forbidden: Host not allowed");
    }
    if let Some(origin) = header(&req, ORIGIN) {
        if !origin_allowed(config, origin) {
            return rpc_error(StatusCode::FORBIDDEN, TRANSPORT_ERROR, "Forbidden: Origin not allowed");
        }
    }
    let path = req.uri().path().to_owned();
    let legacy_path = config.legacy_sse
        && !config.stateless
        && (path == config.legacy_sse_path || path == config.legacy_message_path);
    let route = config.routes.iter().find(|r| r.path == path);
    let mut req = req;
    if let Some(resource) = &config.protected_resource {
        if path == ProtectedResource::metadata_path(&config.path) || path == super::resource::METADATA_PATH {
            return resource_metadata(resource, req.method());
        }
        if path == config.path || legacy_path || route.is_some_and(|r| r.guarded) {
            match authenticate(resource, &req).await {
                Ok(principal) => {
                    // Checked here too, not only per JSON-RPC method: a GET (stream) or DELETE
                    // carries no method but needs these as well.
                    let every = resource.scopes_for_every_request().to_vec();
                    if let Err(refusal) = resource.check_scopes(&principal, every) {
                        return auth_refused(resource, Some(&refusal));
                    }
                    req.extensions_mut().insert(Authenticated(Arc::new(principal)));
                }
                Err(refusal) => return auth_refused(resource, refusal.as_ref()),
            }
        }
    } else if (config.bearer_token.is_some() || !config.named_tokens.is_empty())
        && (path == config.path || legacy_path || route.is_some_and(|r| r.guarded))
    {
        let mut named = None;
        let check = || {
            let values = req.headers().get_all(AUTHORIZATION).iter().map(HeaderValue::as_bytes);
            let (verdict, principal) = bearer::check_any(config.bearer_token.as_ref(), &config.named_tokens, values);
            named = principal;
            verdict
        };
        if let Err(refusal) = failed_tokens::guard(&shared.failed_tokens, config.failed_token_pause, &req, check) {
            return refusal.map_or_else(unauthorized, failed_tokens::paused);
        }
        if let Some(principal) = named {
            // The named caller reaches handlers as a principal; the session is bound to it.
            req.extensions_mut().insert(Authenticated(principal));
        }
    }
    if shared.shutting_down.load(Ordering::Acquire) {
        return rpc_error(StatusCode::SERVICE_UNAVAILABLE, TRANSPORT_ERROR, "Server shutting down");
    }
    if let Some(route) = route {
        let route = route.clone();
        return serve_route(&shared, &route, req, shared.route_streams_end.subscribe()).await;
    }
    let token_expires = match &config.protected_resource {
        Some(_) => req.extensions().get::<Authenticated>().and_then(|a| token_expiry::deadline(&a.0)),
        None => None,
    };
    if path == config.path {
        return match *req.method() {
            Method::POST => token_expiry::cut_at(post(shared, req).await, token_expires),
            Method::GET => token_expiry::cut_at(get(shared, req).await, token_expires),
            Method::DELETE => delete(shared, req).await,
            _ => method_not_allowed(&shared),
        };
    }
    if config.legacy_sse && !config.stateless {
        if path == config.legacy_sse_path && req.method() == Method::GET {
            return token_expiry::cut_at(legacy_get(shared, req).await, token_expires);
        }
        if path == config.legacy_message_path && req.method() == Method::POST {
            return legacy_post(shared, req).await;
        }
    }
    plain(StatusCode::NOT_FOUND, "Not Found")
}

/// The principal of a request that passed the protected resource's verifier.
#[derive(Clone)]
struct Authenticated(Arc<Principal>);

/// The bearer token of a request, verified. `Err(None)`: no token at all.
async fn authenticate<B>(resource: &ProtectedResource, req: &Request<B>) -> Result<Principal, Option<Refusal>> {
    let mut values = req.headers().get_all(AUTHORIZATION).iter();
    let Some(first) = values.next() else { return Err(None) };
    if values.next().is_some() {
        return Err(Some(Refusal::Malformed));
    }
    let value = first.as_bytes();
    let Some(scheme) = value.get(..7) else { return Err(None) };
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return Err(None);
    }
    let token = std::str::from_utf8(value[7..].trim_ascii()).map_err(|_| Some(Refusal::Malformed))?;
    if BearerToken::new(token).is_err() {
        return Err(Some(Refusal::Malformed));
    }
    resource.verifier().verify(token).await.map_err(Some)
}

/// The answer to a request refused by the protected resource: 401 (no or invalid token), 403
/// (insufficient scope), 503 (the authorization server could not be asked). The body names the
/// error, never the token.
fn auth_refused(resource: &ProtectedResource, refusal: Option<&Refusal>) -> Response<HttpBody> {
    let status = refusal.map_or(401, Refusal::status);
    let (error, description) = match refusal {
        None => ("invalid_request", "Missing bearer token".to_owned()),
        // What failed between us and the authorization server is not the client's business.
        Some(Refusal::Unavailable(_)) => {
            ("temporarily_unavailable", "the authorization server could not be asked".to_owned())
        }
        Some(r) => (r.error_code().unwrap_or("temporarily_unavailable"), r.to_string()),
    };
    let body = serde_json::json!({"error": error, "error_description": description}).to_string();
    let mut response = Response::new(full(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::UNAUTHORIZED);
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(challenge) = resource.challenge(refusal).and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
    }
    response
}

/// The Protected Resource Metadata document (GET, HEAD), public.
fn resource_metadata(resource: &ProtectedResource, method: &Method) -> Response<HttpBody> {
    if method != Method::GET && method != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        response.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let body = resource.metadata_document().to_string();
    let length = body.len();
    let mut response = Response::new(if method == Method::HEAD { empty() } else { full(body) });
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert(HeaderName::from_static("access-control-allow-origin"), HeaderValue::from_static("*"));
    response
}

/// For a protected server: the 403 for `messages` when the request's token lacks a scope one
/// of them needs (every scope needed by all of them, in one challenge).
#[allow(clippy::result_large_err)] // the error is the HTTP answer itself
fn check_scopes<B>(shared: &Shared, req: &Request<B>, messages: &[Message]) -> Result<(), Response<HttpBody>> {
    let Some(resource) = shared.config.protected_resource.as_ref().filter(|r| r.has_scope_rules()) else {
        return Ok(());
    };
    let Some(Authenticated(principal)) = req.extensions().get::<Authenticated>() else { return Ok(()) };
    let mut needed: Vec<String> = Vec::new();
    for message in messages {
        let Message::Request(request) = message else { continue };
        let tool = (request.method == "tools/call").then(|| called_tool(request)).flatten();
        for scope in resource.required_scopes(&request.method, tool.as_deref()) {
            if !needed.contains(&scope) {
                needed.push(scope);
            }
        }
    }
    resource.check_scopes(principal, needed).map_err(|refusal| auth_refused(resource, Some(&refusal)))
}

/// The tool a `tools/call` names.
fn called_tool(request: &jsonrpc::Request) -> Option<String> {
    let params = request.params.as_ref()?;
    if let Some(call) = params.typed_as::<CallToolRequestParams>() {
        return Some(call.name.clone());
    }
    #[derive(serde::Deserialize)]
    struct Name {
        name: String,
    }
    let raw = params.to_raw().ok()?;
    serde_json::from_str::<Name>(raw.get()).ok().map(|n| n.name)
}

/// A session id presented with another holder's token: answered as an unknown session.
fn foreign_session() -> Response<HttpBody> {
    rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found")
}

/// 401 with the challenge for `verdict`; nothing of the request is echoed.
fn unauthorized(verdict: BearerCheck) -> Response<HttpBody> {
    let (challenge, body) = bearer::challenge(verdict);
    let mut response = Response::new(full(body));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
}

/// An extra route: GET calls the handler, HEAD too but sends no body, POST too for a route
/// that reads its request (a JSON body, read up to the cap), other methods get 405; a handler
/// that panics is answered 500. A streamed body ends when `ended` turns true (the server shuts
/// down).
async fn serve_route(
    shared: &Shared,
    route: &Route,
    req: Request<RequestBody>,
    ended: watch::Receiver<bool>,
) -> Response<HttpBody> {
    let method = req.method().clone();
    let head = method == Method::HEAD;
    let post = method == Method::POST && route.accepts_post;
    if method != Method::GET && !head && !post {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        let allow = if route.accepts_post { "GET, HEAD, POST" } else { "GET, HEAD" };
        response.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
        return response;
    }
    let mut request = RouteRequest {
        method: method.as_str().to_owned(),
        query: req.uri().query().map(str::to_owned),
        body: Bytes::new(),
    };
    if post {
        let json = header(&req, CONTENT_TYPE)
            .and_then(|t| t.split(';').next())
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type: send application/json");
        }
        request.body = match read_body(shared, req.into_body()).await {
            Ok(body) => body,
            Err(refused) => return refused,
        };
    }
    // In a task of its own, so that a panicking handler is a 500, not a dropped connection.
    let answer = tokio::spawn((route.handler)(request))
        .await
        .unwrap_or_else(|_| RouteResponse::text(500, "Internal Server Error: the route's handler failed\n"));
    let length = answer.body.len();
    let stream = answer.stream.as_ref().and_then(|s| s.take()).filter(|_| !head);
    let body = match stream {
        Some(chunks) => streamed_route_body(answer.body.clone(), chunks, ended),
        None if head => empty(),
        None => full(answer.body.clone()),
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let content_type = HeaderValue::from_str(&answer.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    for (name, value) in &answer.headers {
        if let (Ok(name), Ok(value)) =
            (hyper::header::HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value))
        {
            response.headers_mut().append(name, value);
        }
    }
    if head && answer.stream.is_none() {
        response.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(length));
    }
    response
}

/// `first`, then the chunks of `chunks` as they come, until it closes, the client goes (the
/// body is dropped) or `ended` turns true.
fn streamed_route_body(first: Bytes, mut chunks: mpsc::Receiver<Bytes>, mut ended: watch::Receiver<bool>) -> HttpBody {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        if !first.is_empty() && tx.send(first).await.is_err() {
            return;
        }
        loop {
            let pass_one = async {
                let chunk = chunks.recv().await?;
                tx.send(chunk).await.ok()
            };
            tokio::select! {
                passed = pass_one => {
                    if passed.is_none() {
                        break;
                    }
                }
                _ = ended.wait_for(|ended| *ended) => break,
                () = tx.closed() => break,
            }
        }
    });
    ChannelBody::boxed(rx)
}

fn method_not_allowed(shared: &Shared) -> Response<HttpBody> {
    let mut response = rpc_error(StatusCode::METHOD_NOT_ALLOWED, TRANSPORT_ERROR, "Method not allowed");
    let allow =
        if shared.config.stateless || !shared.config.standalone_get { "POST, DELETE" } else { "GET, POST, DELETE" };
    response.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    response
}

/// Reads the body up to the cap: `Err` is the response to send instead.
async fn read_body(shared: &Shared, body: RequestBody) -> Result<Bytes, Response<HttpBody>> {
    let limited = http_body_util::Limited::new(body, shared.config.max_body_bytes);
    let collected = match shared.config.body_read_timeout {
        Some(limit) => match tokio::time::timeout(limit, limited.collect()).await {
            Ok(collected) => collected,
            Err(_) => {
                return Err(rpc_error(StatusCode::REQUEST_TIMEOUT, TRANSPORT_ERROR, "Request Timeout: body too slow"))
            }
        },
        None => limited.collect().await,
    };
    match collected {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            Err(rpc_error(StatusCode::PAYLOAD_TOO_LARGE, TRANSPORT_ERROR, "Payload Too Large"))
        }
        Err(_) => Err(rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "Bad Request: unreadable body")),
    }
}

/// The `MCP-Protocol-Version` header: absent means 2025-03-26; `Err` for an unsupported one.
#[allow(clippy::result_large_err)] // the error is the HTTP answer itself, built once per refused request
fn header_version<B>(shared: &Shared, req: &Request<B>) -> Result<ProtocolVersion, Response<HttpBody>> {
    match header(req, PROTOCOL_VERSION) {
        None => Ok(ProtocolVersion::HTTP_HEADER_DEFAULT),
        Some(text) => match text.trim().parse::<ProtocolVersion>() {
            Ok(v) if shared.config.versions.contains(&v) => Ok(v),
            _ => Err(rpc_error(
                StatusCode::BAD_REQUEST,
                TRANSPORT_ERROR,
                format!("Bad Request: Unsupported protocol version: {text}"),
            )),
        },
    }
}

#[allow(clippy::result_large_err)] // as above
fn decode(shared: &Shared, bytes: &[u8], version: Option<ProtocolVersion>) -> Result<Vec<Message>, Response<HttpBody>> {
    let decoded = if shared.config.typed_params {
        jsonrpc::decode_typed::<ServerTypedParams>(bytes, version)
    } else {
        jsonrpc::decode(bytes, version)
    };
    match decoded {
        Ok(Payload::Single(message)) => Ok(vec![message]),
        Ok(Payload::Batch(messages)) => Ok(messages),
        Err(e) => Err(rpc_error(StatusCode::BAD_REQUEST, e.code(), e.to_string())),
    }
}

/// 503 for a request that needs a shared store that cannot be asked. The body names the
/// store's failure, never its address or credentials.
fn store_unavailable(error: &StoreError) -> Response<HttpBody> {
    rpc_error(StatusCode::SERVICE_UNAVAILABLE, TRANSPORT_ERROR, format!("Service Unavailable: {error}"))
}

/// Whether `id` could be one this server (or a replica) minted: the store is asked about
/// nothing else.
fn plausible_session_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// How long a rebuilt session's application may take to answer the replayed `initialize`
/// before the rest is replayed anyway.
const REPLAYED_INITIALIZE_WAIT: Duration = Duration::from_secs(10);

/// Rebuilds a session this server does not hold from the session store: a new transport for
/// the application, fed the record's `initialize`, then, once it is answered,
/// `notifications/initialized` and the state-changing requests since; their answers are
/// dropped. As from a real client, `notifications/initialized` comes after the answer: the
/// server layer then counts the handshake complete, and may send its own requests and
/// gated notifications (elicitation, `list_changed`) on the rebuilt session too.
/// `Ok(None)`: no such session.
async fn restore(shared: &Arc<Shared>, id: &str) -> Result<Option<Arc<Session>>, Response<HttpBody>> {
    let Some(store) = shared.config.session_store.clone() else { return Ok(None) };
    if !plausible_session_id(id) {
        return Ok(None);
    }
    let record = match store.load(id).await {
        Ok(Some(record)) => record,
        Ok(None) => return Ok(None),
        Err(e) => return Err(store_unavailable(&e)),
    };
    let raw = |text: &str| {
        serde_json::value::RawValue::from_string(text.to_owned())
            .map(Body::Raw)
            .map_err(|e| Box::new(store_unavailable(&StoreError::Corrupt(e.to_string()))))
    };
    let tag = random_id();
    let init_id = Id::String(format!("mcpwire-restore-{tag}-0"));
    let initialize = Message::Request(jsonrpc::Request {
        id: init_id.clone(),
        method: "initialize".to_owned(),
        params: Some(raw(&record.initialize).map_err(|r| *r)?),
    });
    let mut messages = vec![Message::Notification(jsonrpc::Notification {
        method: "notifications/initialized".to_owned(),
        params: None,
    })];
    let mut replayed_ids: HashSet<Id> = HashSet::from([init_id.clone()]);
    for (n, change) in record.replayed.iter().enumerate() {
        let id = Id::String(format!("mcpwire-restore-{tag}-{}", n + 1));
        replayed_ids.insert(id.clone());
        messages.push(Message::Request(jsonrpc::Request {
            id,
            method: change.method.clone(),
            params: Some(raw(&change.params).map_err(|r| *r)?),
        }));
    }
    let json = shared.config.response_mode == ResponseMode::Json;
    let (session, transport) = shared.build_session(id.to_owned(), false, json);
    *session.initialize_id.lock().expect("session lock") = Some(init_id);
    *session.replayed_ids.lock().expect("session lock") = replayed_ids;
    *session.record.lock().expect("session lock") = Some(record);
    let (answered, initialize_answered) = tokio::sync::oneshot::channel();
    *session.replayed_initialize_answered.lock().expect("session lock") = Some(answered);
    crate::transport::task::spawn((shared.app)(transport));
    if !session.deliver(vec![initialize]).await {
        return Ok(None);
    }
    let _ = tokio::time::timeout(REPLAYED_INITIALIZE_WAIT, initialize_answered).await;
    session.initialized_given.store(true, Ordering::Release);
    if !session.deliver(messages).await {
        return Ok(None);
    }
    // Two requests for the same unknown session may both have rebuilt it: the first kept wins.
    let kept = {
        let mut sessions = shared.sessions.lock().expect("sessions lock");
        match sessions.get(id) {
            Some(first) => Some(first.clone()),
            None => {
                sessions.insert(id.to_owned(), session.clone());
                None
            }
        }
    };
    match kept {
        Some(first) => {
            session.end(Forget::Here).await;
            Ok(Some(first))
        }
        None => Ok(Some(session)),
    }
}

/// Writes the state changes among `messages` (`logging/setLevel`, `resources/(un)subscribe`)
/// to the session store before they are handed on, so that another replica rebuilding the
/// session knows them. `Err` is the answer when the store cannot be written.
#[allow(clippy::result_large_err)]
async fn record_changes(shared: &Shared, session: &Session, messages: &[Message]) -> Result<(), Response<HttpBody>> {
    let Some(store) = shared.config.session_store.as_ref() else { return Ok(()) };
    let changes: Vec<&jsonrpc::Request> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) if changes_state(&r.method) => Some(r),
            _ => None,
        })
        .collect();
    if changes.is_empty() {
        return Ok(());
    }
    let Some(mut record) = session.record.lock().expect("session lock").clone() else { return Ok(()) };
    let mut changed = false;
    for request in changes {
        let params =
            request.params.as_ref().and_then(|p| p.to_raw().ok()).map_or("{}".to_owned(), |raw| raw.get().to_owned());
        changed |= record.apply(&request.method, &params);
    }
    if !changed {
        return Ok(());
    }
    store.save(&session.id, &record, shared.config.session_idle_timeout).await.map_err(|e| store_unavailable(&e))?;
    *session.record.lock().expect("session lock") = Some(record);
    Ok(())
}

fn session_header_value(id: &str) -> HeaderValue {
    HeaderValue::from_str(id).expect("session ids are visible ascii")
}

async fn post(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    let accept = header(&req, ACCEPT).unwrap_or("");
    if !accepts(accept, "application/json") || !accepts(accept, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            TRANSPORT_ERROR,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        );
    }
    if !header(&req, CONTENT_TYPE).is_some_and(|c| is_media(c, "application/json")) {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            TRANSPORT_ERROR,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let session_id = header(&req, SESSION_ID).map(str::to_owned);
    let version_header = header(&req, PROTOCOL_VERSION).is_some();
    let (parts, body) = req.into_parts();
    let req_head = shared_head(&shared, parts);
    let bytes = match read_body(&shared, body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    // Stateless mode hands every POST to the application as it is: only the header moves a
    // POST to the 2026 ladder there (a client that names 2026-07-28 in its body alone is
    // served as before; the server layer still reads the body's envelope).
    let unknown_in_session = session_id.is_some() && version_header::is_unknown(header(&req_head, PROTOCOL_VERSION));
    if !unknown_in_session && is_per_request_post(&req_head, session_id.is_some() || shared.config.stateless, &bytes) {
        return per_request_post(&shared, &req_head, &bytes).await;
    }
    if shared.config.stateless {
        let version = match header_version(&shared, &req_head) {
            Ok(v) => v,
            Err(response) => return response,
        };
        let messages = match decode(&shared, &bytes, Some(version)) {
            Ok(m) => m,
            Err(response) => return response,
        };
        if let Err(response) = check_scopes(&shared, &req_head, &messages) {
            return response;
        }
        let (session, transport) = shared.unkept_session(true);
        *session.version.lock().expect("session lock") = Some(version);
        session.bind_principal(&req_head);
        crate::transport::task::spawn((shared.app)(transport));
        session.hold_requests(&req_head, &messages);
        let response = dispatch(&shared, &session, messages, Some(version)).await;
        // An SSE answer ends the session when its stream ends.
        if !is_event_stream(&response) {
            session.close().await;
        }
        return response;
    }
    match session_id {
        Some(id) => {
            let found = match shared.find_session(&id).await {
                Ok(found) => found,
                Err(response) => return response,
            };
            let Some(session) = found.filter(|s| !s.legacy) else {
                return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
            };
            if !session.bind_principal(&req_head) {
                return foreign_session();
            }
            let versions = &shared.config.versions;
            if let Some(why) =
                version_header::session_refusal(header(&req_head, PROTOCOL_VERSION), session.version(), versions)
            {
                return rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, why);
            }
            let header_v = match header_version(&shared, &req_head) {
                Ok(v) => v,
                Err(response) => return response,
            };
            let version = session.version().or(version_header.then_some(header_v));
            let messages = match decode(&shared, &bytes, Some(version.unwrap_or(header_v))) {
                Ok(m) => m,
                Err(response) => return response,
            };
            if let Err(response) = check_scopes(&shared, &req_head, &messages) {
                return response;
            }
            if let Err(response) = record_changes(&shared, &session, &messages).await {
                return response;
            }
            let mut messages = match route_responses(&shared, &session, messages).await {
                Ok(messages) => messages,
                Err(response) => return response,
            };
            if session.is_shared() {
                session.imply_initialized(&mut messages);
            }
            session.touch();
            session.hold_requests(&req_head, &messages);
            let cancelled = cancelled::cancelled_ids(&messages);
            let mut response = dispatch(&shared, &session, messages, version).await;
            session.end_cancelled(cancelled).await;
            response.headers_mut().insert(SESSION_ID, session_header_value(&session.id));
            response
        }
        None => {
            let messages = match decode(&shared, &bytes, None) {
                Ok(m) => m,
                Err(response) => return response,
            };
            let requested = match messages.as_slice() {
                [Message::Request(r)] if r.method == "initialize" => requested_version(r),
                _ => {
                    return rpc_error(
                        StatusCode::BAD_REQUEST,
                        TRANSPORT_ERROR,
                        "Bad Request: Mcp-Session-Id header is required",
                    )
                }
            };
            if let Err(response) = check_scopes(&shared, &req_head, &messages) {
                return response;
            }
            let json = shared.config.response_mode == ResponseMode::Json;
            let held = match reserve_session_place(&shared, req_head.extensions()) {
                Ok(held) => held,
                Err(refused) => return session_caps::refusal(refused, shared.config.sessions_retry_after),
            };
            let Some((session, transport)) = shared.new_session(false, json, true) else {
                return too_many_sessions(&shared);
            };
            *session.caps.lock().expect("session lock") = Some(held);
            session.bind_principal(&req_head);
            if let (Some(store), [Message::Request(init)]) = (&shared.config.session_store, messages.as_slice()) {
                let params = init.params.as_ref().and_then(|p| p.to_raw().ok());
                let record = SessionRecord::new(params.map_or("{}".to_owned(), |raw| raw.get().to_owned()));
                if let Err(e) = store.save(&session.id, &record, shared.config.session_idle_timeout).await {
                    session.end(Forget::Here).await;
                    return store_unavailable(&e);
                }
                *session.record.lock().expect("session lock") = Some(record);
            }
            crate::transport::task::spawn((shared.app)(transport));
            session.hold_requests(&req_head, &messages);
            let mut response = dispatch(&shared, &session, messages, requested).await;
            if response.status().is_success() {
                response.headers_mut().insert(SESSION_ID, session_header_value(&session.id));
            } else {
                session.close().await;
            }
            response
        }
    }
}

/// Whether a POST is of the 2026-07-28 era: its `MCP-Protocol-Version` names a revision without
/// a handshake (or one we do not know: the 2026 ladder answers that with the versions we
/// serve), or, unless `header_only`, its body names its revision in `_meta`.
fn is_per_request_post<B>(req: &Request<B>, header_only: bool, body: &[u8]) -> bool {
    match header(req, PROTOCOL_VERSION).map(|v| v.trim().parse::<ProtocolVersion>()) {
        Some(Ok(v)) if !v.has_initialize_handshake() => true,
        Some(Err(_)) => true,
        _ if header_only => false,
        // Cheap: only a body that spells the key is decoded.
        _ => {
            memchr::memmem::find(body, b"/protocolVersion\"").is_some() && {
                matches!(jsonrpc::decode(body, None), Ok(Payload::Single(Message::Request(r)))
                if envelope::names_revision(r.params.as_ref()))
            }
        }
    }
}

/// The value of header `name` (lowercase), `Err(())` when it appears more than once.
fn single_header<'r, B>(req: &'r Request<B>, name: &str) -> Result<Option<&'r str>, ()> {
    let mut values = req.headers().get_all(name).iter();
    let first = values.next().map(|v| v.to_str().unwrap_or("\u{fffd}"));
    if values.next().is_some() {
        return Err(());
    }
    Ok(first)
}

/// A 2026-07-28 POST: one request (or notification) standing alone, no session. The ladder
/// (`_meta`, headers, version) runs here; a request that passes it is served by a transport
/// of its own, and an error answer goes out with the revision's status (400, 404).
/// The head of a POST, kept for the handlers of the requests it carries
/// ([`HttpRequestParts`]): without `Authorization` when the server checked the token itself,
/// so that the token is never handed on.
fn shared_head(shared: &Shared, mut parts: hyper::http::request::Parts) -> Arc<Request<()>> {
    if shared.config.protected_resource.is_some()
        || shared.config.bearer_token.is_some()
        || !shared.config.named_tokens.is_empty()
    {
        parts.headers.remove(AUTHORIZATION);
    }
    Arc::new(Request::from_parts(parts, ()))
}

async fn per_request_post(shared: &Arc<Shared>, req: &Arc<Request<()>>, bytes: &[u8]) -> Response<HttpBody> {
    let version = ProtocolVersion::V2026_07_28;
    let message = match decode(shared, bytes, Some(version)) {
        Ok(mut messages) if messages.len() == 1 => messages.pop().expect("one message"),
        Ok(_) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "Body must be a single JSON-RPC request or notification",
            )
        }
        Err(response) => return response,
    };
    let request = match &message {
        // No client-to-server notification is defined over HTTP in this revision; accepted
        // and dropped, as the handshake era's transport does.
        Message::Notification(_) => {
            let mut response = Response::new(empty());
            *response.status_mut() = StatusCode::ACCEPTED;
            return response;
        }
        Message::Request(request) => request,
        _ => return rpc_error(StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST, "Clients must not POST responses"),
    };
    if let Err(response) = check_scopes(shared, req, std::slice::from_ref(&message)) {
        return response;
    }
    // The revisions served per request that this server is configured to accept.
    let served: Vec<ProtocolVersion> =
        ProtocolVersion::PER_REQUEST.into_iter().filter(|v| shared.config.versions.contains(v)).collect();
    let checked =
        envelope::check_http(&request.method, request.params.as_ref(), &served, |name| single_header(req, name));
    if let Err(error) = checked {
        let status = envelope::http_status(error.code).and_then(|s| StatusCode::from_u16(s).ok());
        let body = Message::Error(ErrorResponse::new(Some(request.id.clone()), error)).to_vec();
        let mut response = Response::new(full(body));
        *response.status_mut() = status.unwrap_or(StatusCode::OK);
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return response;
    }
    let param_headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .filter(|(name, _)| name.as_str().starts_with(envelope::PARAM_HEADER_PREFIX))
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap_or("\u{fffd}").to_owned()))
        .collect();
    let (session, transport) = shared.unkept_session(true);
    *session.version.lock().expect("session lock") = Some(version);
    *session.param_headers.lock().expect("session lock") = Some((request.id.clone(), param_headers));
    session.bind_principal(req);
    session.hold_requests(req, std::slice::from_ref(&message));
    crate::transport::task::spawn((shared.app)(transport));
    // A client that goes away before the answer cancels its request (2026-07-28
    // "Cancellation"): hyper drops this future, and the guard ends the session.
    let mut guard = CloseOnDrop(Some(session.clone()));
    let response = dispatch(shared, &session, vec![message], Some(version)).await;
    // Answered: an SSE stream's task ends the session when the stream ends; a JSON answer
    // ends it now.
    guard.0 = None;
    if !is_event_stream(&response) {
        session.close().await;
    }
    response
}

/// Ends a per-request session when dropped (from a task: closing awaits).
struct CloseOnDrop(Option<Arc<Session>>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            crate::transport::task::spawn(async move { session.close().await });
        }
    }
}

fn requested_version(request: &jsonrpc::Request) -> Option<ProtocolVersion> {
    #[derive(Clone, serde::Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    request.params_as::<Init>().ok()?.protocol_version.parse().ok()
}

/// Hands POSTed messages to the application and builds the answer: 202, an SSE stream or JSON.
async fn dispatch(
    shared: &Shared,
    session: &Arc<Session>,
    messages: Vec<Message>,
    version: Option<ProtocolVersion>,
) -> Response<HttpBody> {
    let requests: Vec<&jsonrpc::Request> =
        messages.iter().filter_map(|m| if let Message::Request(r) = m { Some(r) } else { None }).collect();
    if requests.is_empty() {
        if !session.deliver(messages).await {
            return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
        }
        let mut response = Response::new(empty());
        *response.status_mut() = StatusCode::ACCEPTED;
        return response;
    }
    let pending: HashSet<Id> = requests.iter().map(|r| r.id.clone()).collect();
    let stream = session.new_post_stream(pending);
    let (_, live) = stream
        .attach(&*session.store, None, shared.config.limits.queue_depth.max(1))
        .await
        .expect("a new stream has no live connection");
    let live = live.expect("a new stream is not finished");
    {
        let mut routes = session.routes.lock().expect("session lock");
        for request in &requests {
            routes.requests.insert(request.id.clone(), stream.clone());
            if let Some(token) = request.params.as_ref().and_then(|p| params_progress_token(p, true)) {
                routes.progress.insert(token, request.id.clone());
            }
            if request.method == "initialize" {
                *session.initialize_id.lock().expect("session lock") = Some(request.id.clone());
            }
        }
        routes.streams.push_back(stream.clone());
        let mut kept_bytes: usize = routes.streams.iter().map(|s| s.stored_bytes.load(Ordering::Relaxed)).sum();
        while routes.streams.len() > KEPT_STREAMS || (kept_bytes > KEPT_STREAM_BYTES && routes.streams.len() > 1) {
            if let Some(old) = routes.streams.pop_front() {
                kept_bytes = kept_bytes.saturating_sub(old.stored_bytes.load(Ordering::Relaxed));
                session.store.remove(&old.key);
            }
        }
    }
    let batch = messages.len() > 1;
    if !session.deliver(messages).await {
        return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
    }
    if stream.json {
        return json_answer(shared, session, live, batch).await;
    }
    // One turn for the application, so that an answer it gives at once goes out in the same
    // write as the response head and the priming event (one TCP segment instead of two); past
    // it, up to `first_event_hold` for the first message, for the same reason.
    requeue_once().await;
    let (first, live) = first_message(live, shared.config.first_event_hold, &session.hold_timer).await;
    let mut prelude = BytesMut::new();
    if version.is_some_and(|v| v >= ProtocolVersion::V2025_11_25) {
        let priming = SseEvent::new("").with_id(EventId::encode(&stream.name, 0)).with_retry(shared.config.retry_ms);
        encode_event(&priming, &mut prelude).expect("event ids are plain ascii");
    }
    sse_response(shared, session.clone(), prelude.freeze(), first, live, false, true)
}

/// Waits up to `hold` for the first message of a POST's stream when none is there yet; gives
/// it (as the start of what the stream replays) and the stream, `None` once the stream ended.
async fn first_message(
    mut live: mpsc::Receiver<Outgoing>,
    hold: Duration,
    timer: &HoldTimer,
) -> (Vec<Outgoing>, Option<mpsc::Receiver<Outgoing>>) {
    if hold.is_zero() || !live.is_empty() {
        return (Vec::new(), Some(live));
    }
    let mut sleep = timer.take(tokio::time::Instant::now() + hold);
    let first = tokio::select! {
        biased;
        first = live.recv() => Some(first),
        () = &mut sleep => None,
    };
    timer.put_back(sleep);
    match first {
        None => (Vec::new(), Some(live)),
        Some(None) => (Vec::new(), None),
        Some(Some(first)) => {
            // The rest of a quick answer (the end of the stream after the response) comes in
            // the same turn: let it, so the terminating chunk joins the same write.
            requeue_once().await;
            (vec![first], Some(live))
        }
    }
}

/// A session's first event hold timer, reused from one POST to the next. A new timer due
/// sooner than anything the runtime's timer driver waits for wakes the driver (an eventfd
/// write and one more `epoll_wait`, on every call of a gateway whose answers take a round trip
/// upstream); moving a registered timer's deadline later, as each next POST does, is an atomic
/// store the driver only sees when the old deadline comes. Two POSTs of one session held at
/// once: the second gets a timer of its own.
#[derive(Default)]
struct HoldTimer(Mutex<Option<Pin<Box<tokio::time::Sleep>>>>);

impl HoldTimer {
    fn take(&self, deadline: tokio::time::Instant) -> Pin<Box<tokio::time::Sleep>> {
        match self.0.lock().expect("hold timer lock").take() {
            Some(mut sleep) => {
                sleep.as_mut().reset(deadline);
                sleep
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        }
    }

    fn put_back(&self, sleep: Pin<Box<tokio::time::Sleep>>) {
        *self.0.lock().expect("hold timer lock") = Some(sleep);
    }
}

fn is_event_stream(response: &Response<HttpBody>) -> bool {
    response.headers().get(CONTENT_TYPE).is_some_and(|v| v.as_bytes() == b"text/event-stream")
}

/// Whether an outgoing message is a response (or error response), by its lack of `method`.
/// The members are read only up to the first of `method`, `result` and `error`, which decides:
/// a 64 KiB result is not scanned to the end to learn that it is one.
fn is_response(data: &[u8]) -> bool {
    struct Probe<'a>(&'a mut Option<bool>);
    impl<'de> serde::de::Visitor<'de> for Probe<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                match &*key {
                    "method" => {
                        *self.0 = Some(false);
                        return Ok(());
                    }
                    "result" | "error" => {
                        *self.0 = Some(true);
                        return Ok(());
                    }
                    _ => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(())
        }
    }
    let mut decided = None;
    // Stopping early leaves the object unfinished, which the deserializer reports as an error
    // once the visitor has decided: only the decision matters here.
    let _ = serde::Deserializer::deserialize_map(&mut serde_json::Deserializer::from_slice(data), Probe(&mut decided));
    decided.unwrap_or(true)
}

/// The answer of a POST in JSON mode: its responses as one body (an array for a batch). Only a
/// stateless session routes anything else here; when such a message comes, the answer becomes
/// an SSE stream of what came so far and the rest, ending with the session.
async fn json_answer(
    shared: &Shared,
    session: &Arc<Session>,
    mut live: mpsc::Receiver<Outgoing>,
    batch: bool,
) -> Response<HttpBody> {
    let mut bodies = Vec::new();
    while let Some((_, data)) = live.recv().await {
        if !is_response(&data) {
            let mut so_far: Vec<Outgoing> = bodies.into_iter().map(|d| (None, d)).collect();
            so_far.push((None, data));
            let stateless = session.is_stateless();
            return sse_response(shared, session.clone(), Bytes::new(), so_far, Some(live), stateless, false);
        }
        bodies.push(data);
    }
    let status = match bodies.as_slice() {
        [only] if session.is_per_request() => error_code(only)
            .and_then(envelope::http_status)
            .and_then(|s| StatusCode::from_u16(s).ok())
            .unwrap_or(StatusCode::OK),
        _ => StatusCode::OK,
    };
    let body = if batch || bodies.len() != 1 {
        let mut out = Vec::from(&b"["[..]);
        for (i, data) in bodies.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(data);
        }
        out.push(b']');
        Bytes::from(out)
    } else {
        bodies.pop().expect("one body")
    };
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The `error.code` of an encoded error response.
fn error_code(data: &[u8]) -> Option<ErrorCode> {
    #[derive(serde::Deserialize)]
    struct Code {
        code: i32,
    }
    #[derive(serde::Deserialize)]
    struct Error {
        error: Option<Code>,
    }
    serde_json::from_slice::<Error>(data).ok()?.error.map(|c| ErrorCode(c.code))
}

/// Starts the task writing one SSE connection: `prelude`, the replayed events, then live events
/// with keep-alive comments in between, until the stream ends or the client goes away. Without
/// `event_ids`, events go out without their ids (a stream nothing can resume).
fn sse_response(
    shared: &Shared,
    session: Arc<Session>,
    prelude: Bytes,
    replay: Vec<Outgoing>,
    live: Option<mpsc::Receiver<Outgoing>>,
    close_session_at_end: bool,
    event_ids: bool,
) -> Response<HttpBody> {
    let (body_tx, body_rx) = mpsc::channel::<Bytes>(8);
    let keep_alive = shared.config.keep_alive;
    session.open_connections.fetch_add(1, Ordering::AcqRel);
    let encode = move |(id, data): Outgoing| {
        let mut out = BytesMut::new();
        let id = id.as_deref().filter(|_| event_ids);
        encode_data_event(id, &data, &mut out).expect("event ids are plain ascii");
        out.freeze()
    };
    // What is ready now goes into the body before the response is returned, so that hyper
    // writes it with the head; a stream already finished ends right there too.
    let mut ready: VecDeque<Bytes> = VecDeque::new();
    if !prelude.is_empty() {
        ready.push_back(prelude);
    }
    ready.extend(replay.into_iter().map(encode));
    let mut live = live;
    if let Some(receiver) = live.as_mut() {
        loop {
            match receiver.try_recv() {
                Ok(item) => ready.push_back(encode(item)),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    live = None;
                    break;
                }
            }
        }
    }
    while let Some(chunk) = ready.pop_front() {
        if let Err(mpsc::error::TrySendError::Full(chunk)) = body_tx.try_send(chunk) {
            ready.push_front(chunk);
            break;
        }
    }
    // A stream that is over already ends with what was just queued: dropping the sender now
    // lets hyper write the terminating chunk in the same write.
    let body_tx = (live.is_some() || !ready.is_empty()).then_some(body_tx);
    if body_tx.is_none() && !close_session_at_end {
        // All of it is in the body already: no task to keep.
        session.touch();
        session.open_connections.fetch_sub(1, Ordering::AcqRel);
        return sse_head(body_rx);
    }
    crate::transport::task::spawn(async move {
        if let Some(body_tx) = body_tx {
            let mut ok = true;
            for chunk in ready {
                ok = ok && body_tx.send(chunk).await.is_ok();
            }
            if let (true, Some(mut live)) = (ok, live) {
                let mut ticker =
                    keep_alive.map(|every| tokio::time::interval_at(tokio::time::Instant::now() + every, every));
                loop {
                    let next = async {
                        match ticker.as_mut() {
                            Some(t) => {
                                t.tick().await;
                            }
                            None => std::future::pending::<()>().await,
                        }
                    };
                    let chunk = tokio::select! {
                        // The client went away (hyper dropped the body).
                        _ = body_tx.closed() => break,
                        item = live.recv() => match item {
                            Some(item) => encode(item),
                            None => break,
                        },
                        _ = next => {
                            let mut out = BytesMut::new();
                            encode_comment("keep-alive", &mut out);
                            out.freeze()
                        }
                    };
                    if body_tx.send(chunk).await.is_err() {
                        break;
                    }
                }
            }
        }
        session.touch();
        session.open_connections.fetch_sub(1, Ordering::AcqRel);
        if close_session_at_end {
            session.close().await;
        }
    });
    sse_head(body_rx)
}

fn sse_head(body_rx: mpsc::Receiver<Bytes>) -> Response<HttpBody> {
    let mut response = Response::new(ChannelBody::boxed(body_rx));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Whether a GET or DELETE speaks 2026-07-28, which has neither (answered 405).
fn is_per_request_version<B>(req: &Request<B>) -> bool {
    header(req, PROTOCOL_VERSION)
        .and_then(|v| v.trim().parse::<ProtocolVersion>().ok())
        .is_some_and(|v| !v.has_initialize_handshake())
}

async fn get(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    if shared.config.stateless || !shared.config.standalone_get || is_per_request_version(&req) {
        return method_not_allowed(&shared);
    }
    if !header(&req, ACCEPT).is_some_and(|a| accepts(a, "text/event-stream")) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            TRANSPORT_ERROR,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    let Some(id) = header(&req, SESSION_ID) else {
        return rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "Bad Request: Mcp-Session-Id header is required");
    };
    let found = match shared.find_session(id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let Some(session) = found.filter(|s| !s.legacy) else {
        return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
    };
    if !session.bind_principal(&req) {
        return foreign_session();
    }
    if let Err(response) = header_version(&shared, &req) {
        return response;
    }
    session.touch();
    let depth = shared.config.limits.queue_depth.max(1);
    let resume = header(&req, LAST_EVENT_ID).and_then(EventId::parse);
    let target = resume.as_ref().and_then(|event| {
        if event.stream == session.standalone.name {
            return Some(session.standalone.clone());
        }
        session.routes.lock().expect("session lock").streams.iter().find(|s| s.name == event.stream).cloned()
    });
    let (attached, standalone) = match (target, resume) {
        (Some(stream), Some(event)) => {
            (stream.attach(&*session.store, Some(event.seq), depth).await, stream.standalone)
        }
        (None, Some(event)) if shared.config.session_store.is_some() => {
            (resume_elsewhere(&shared, &session, &event, depth).await, event.stream.ends_with("-0"))
        }
        _ => (session.standalone.attach(&*session.store, None, depth).await, true),
    };
    match attached {
        Ok((replay, live)) => {
            if let (true, Some(_), Some(store)) = (standalone, &live, &shared.config.session_store) {
                // Messages for the standalone stream made on other replicas come here from now on.
                let ttl = shared.config.session_idle_timeout;
                match store.hold_stream(&session.id, &shared.replica, ttl).await {
                    Ok(()) => tracing::info!(replica = %shared.replica, "holds the standalone stream"),
                    Err(e) => {
                        tracing::warn!(replica = %shared.replica, "other replicas keep messages for this standalone stream: {e}")
                    }
                }
                let hold = session.standalone_holds.fetch_add(1, Ordering::AcqRel) + 1;
                crate::transport::task::spawn(keep_holding(Arc::downgrade(&shared), Arc::downgrade(&session), hold));
            }
            let mut response = sse_response(&shared, session.clone(), Bytes::new(), replay, live, false, true);
            response.headers_mut().insert(SESSION_ID, session_header_value(&session.id));
            response
        }
        Err(AttachError::Store(e)) => store_unavailable(&e),
        Err(AttachError::Conflict) => {
            rpc_error(StatusCode::CONFLICT, TRANSPORT_ERROR, "Conflict: Only one SSE stream is allowed per session")
        }
    }
}

/// While standalone GET number `hold` of `session` stays open here, renews the store's records
/// of the session and of this replica as the stream's holder, every quarter of the idle
/// timeout: a client that only listens (no POST for longer than the idle timeout) keeps both,
/// so the other replicas still find the session and relay its messages here. Ends with the
/// stream, the session, the server, or a later GET (whose own renewal takes over). A renewal
/// the store refuses is logged and tried again at the next turn.
async fn keep_holding(shared: Weak<Shared>, session: Weak<Session>, hold: u64) {
    loop {
        let Some(ttl) = shared.upgrade().map(|s| s.config.session_idle_timeout) else { return };
        tokio::time::sleep(ttl / 4).await;
        let (Some(shared), Some(session)) = (shared.upgrade(), session.upgrade()) else { return };
        let Some(store) = shared.config.session_store.clone() else { return };
        if session.is_closed()
            || session.standalone_holds.load(Ordering::Acquire) != hold
            || !session.standalone.has_live().await
        {
            return;
        }
        let renewed = match store.touch(&session.id, ttl).await {
            Ok(()) => store.hold_stream(&session.id, &shared.replica, ttl).await,
            Err(e) => Err(e),
        };
        if let Err(e) = renewed {
            tracing::warn!(replica = %shared.replica, "the standalone stream's records were not renewed: {e}");
        }
    }
}

/// A `Last-Event-ID` naming a stream of another replica (sessions shared through a store): the
/// stored events after it, then, for that replica's standalone stream, this replica's one.
async fn resume_elsewhere(
    shared: &Shared,
    session: &Session,
    event: &EventId,
    depth: usize,
) -> Result<(Vec<Outgoing>, Option<mpsc::Receiver<Outgoing>>), AttachError> {
    let key = [&*session.id, "/", &event.stream].concat();
    let stored = session.store.replay(&key, event.seq).await.map_err(AttachError::Store)?;
    tracing::info!(
        replica = %shared.replica,
        stream = %event.stream,
        events = stored.len(),
        "resumed a stream of another replica"
    );
    let mut replay: Vec<Outgoing> =
        stored.into_iter().map(|e| (Some(EventId::encode(&event.stream, e.seq)), e.data)).collect();
    if !event.stream.ends_with("-0") {
        // A POST's stream: what was stored so far; the client comes back for the rest.
        return Ok((replay, None));
    }
    match session.standalone.attach(&*session.store, None, depth).await {
        Ok((queued, live)) => {
            replay.extend(queued);
            Ok((replay, live))
        }
        Err(AttachError::Conflict) => Ok((replay, None)),
        Err(e) => Err(e),
    }
}

async fn delete(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    if shared.config.stateless || is_per_request_version(&req) {
        return method_not_allowed(&shared);
    }
    let Some(id) = header(&req, SESSION_ID) else {
        return rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "Bad Request: Mcp-Session-Id header is required");
    };
    let found = match shared.find_session(id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let Some(session) = found.filter(|s| !s.legacy) else {
        return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
    };
    if !session.bind_principal(&req) {
        return foreign_session();
    }
    if let Err(response) = header_version(&shared, &req) {
        return response;
    }
    if let Some(store) = &shared.config.session_store {
        if let Err(e) = store.remove(&session.id).await {
            return store_unavailable(&e);
        }
    }
    session.close().await;
    Response::new(empty())
}

/// Legacy HTTP+SSE (2024-11-05): a GET opens the session's only stream, whose first event
/// (`endpoint`) names where to POST.
/// A place for a new session of the request whose extensions are `extensions` under the caps
/// per client address and per principal ([`super::session_caps`]), or which cap refused it.
fn reserve_session_place(
    shared: &Shared,
    extensions: &hyper::http::Extensions,
) -> Result<session_caps::Held, session_caps::Refused> {
    let (addr, principal) = (extensions.get::<RemoteAddr>(), extensions.get::<Authenticated>());
    let (config, principal) = (&shared.config, principal.map(|p| session_caps::principal_key(&p.0)));
    shared.session_caps.reserve(
        addr.map(|a| a.0.ip()),
        config.max_sessions_per_address,
        principal,
        config.max_sessions_per_principal,
    )
}

async fn legacy_get(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    if !header(&req, ACCEPT).is_none_or(|a| accepts(a, "text/event-stream")) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            TRANSPORT_ERROR,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    let held = match reserve_session_place(&shared, req.extensions()) {
        Ok(held) => held,
        Err(refused) => return session_caps::refusal(refused, shared.config.sessions_retry_after),
    };
    let Some((session, transport)) = shared.new_session(true, false, true) else {
        return too_many_sessions(&shared);
    };
    *session.caps.lock().expect("session lock") = Some(held);
    *session.version.lock().expect("session lock") = Some(ProtocolVersion::V2024_11_05);
    session.bind_principal(&req);
    let depth = shared.config.limits.queue_depth.max(1);
    let (_, live) = session.standalone.attach(&*session.store, None, depth).await.expect("a new stream");
    crate::transport::task::spawn((shared.app)(transport));
    let mut prelude = BytesMut::new();
    let endpoint = format!("{}?sessionId={}", shared.config.legacy_message_path, session.id);
    encode_event(&SseEvent::new(endpoint).with_event("endpoint"), &mut prelude).expect("a plain event");
    sse_response(&shared, session, prelude.freeze(), Vec::new(), live, true, true)
}

async fn legacy_post(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    let id = req
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="))
        .unwrap_or("")
        .to_owned();
    let Some(session) = shared.session(&id).filter(|s| s.legacy) else {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    };
    if !session.bind_principal(&req) {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    }
    if !header(&req, CONTENT_TYPE).is_some_and(|c| is_media(c, "application/json")) {
        return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type");
    }
    let (parts, body) = req.into_parts();
    let req_head = shared_head(&shared, parts);
    let bytes = match read_body(&shared, body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let messages = match decode(&shared, &bytes, session.version()) {
        Ok(m) => m,
        Err(response) => return response,
    };
    if let Err(response) = check_scopes(&shared, &req_head, &messages) {
        return response;
    }
    for message in &messages {
        if let Message::Request(r) = message {
            if r.method == "initialize" {
                *session.initialize_id.lock().expect("session lock") = Some(r.id.clone());
            }
        }
    }
    session.touch();
    session.hold_requests(&req_head, &messages);
    if !session.deliver(messages).await {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    }
    let mut response = plain(StatusCode::ACCEPTED, "Accepted");
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

#[cfg(test)]
mod tests {
    use super::{is_response, params_progress_token};
    use crate::proto::jsonrpc::Body;

    #[test]
    fn progress_tokens_are_found_under_meta_even_with_escaped_keys_and_absent_otherwise() {
        let raw = |text: &str| Body::Raw(serde_json::value::RawValue::from_string(text.to_owned()).unwrap());
        let token = |text: &str, in_meta| params_progress_token(&raw(text), in_meta);
        let big = "x".repeat(70_000);
        assert_eq!(
            token(&format!(r#"{{"arguments":{{"text":"{big}"}},"_meta":{{"progressToken":7}}}}"#), true),
            Some("7".into())
        );
        assert_eq!(token(&format!(r#"{{"arguments":{{"text":"{big}"}}}}"#), true), None);
        assert_eq!(token(r#"{"_meta":{"progress\u0054oken":"t"}}"#, true), Some(r#""t""#.into()));
        assert_eq!(token(r#"{"progressToken":"t","progress":1}"#, false), Some(r#""t""#.into()));
        assert_eq!(token(r#"{"progressToken":"t"}"#, true), None, "a request's token is under _meta");
        let typed = Body::typed(serde_json::json!({"_meta": {"progressToken": "p"}}));
        assert_eq!(params_progress_token(&typed, true), Some(r#""p""#.into()));
        // Typed tools/call params (decode_typed's) are read without being written out.
        let call: crate::proto::mcp_types::CallToolRequestParams =
            serde_json::from_str(r#"{"name":"echo","_meta":{"progressToken":7}}"#).unwrap();
        assert_eq!(params_progress_token(&Body::typed(call.clone()), true), Some("7".into()));
        let call = crate::proto::mcp_types::CallToolRequestParams { meta: None, ..call };
        assert_eq!(params_progress_token(&Body::typed(call), true), None);
    }

    #[test]
    fn responses_are_told_from_requests_by_the_first_deciding_member() {
        assert!(is_response(br#"{"jsonrpc":"2.0","id":1,"result":{"text":"x"}}"#));
        assert!(is_response(br#"{"result":{},"jsonrpc":"2.0","id":1}"#));
        assert!(is_response(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#));
        assert!(!is_response(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#));
        // Members named alike inside params are not the message's own.
        assert!(!is_response(br#"{"params":{"result":1},"jsonrpc":"2.0","id":3,"method":"sampling/createMessage"}"#));
        assert!(!is_response(br#"{"jsonrpc":"2.0","\u006dethod":"ping","id":1}"#));
        // Anything else is taken for a response, as before.
        assert!(is_response(b"[]"));
    }
}
