//! The server's configuration: [`HttpServerConfig`] with its builder methods and defaults, and
//! the checks it names ([`HostCheck`], [`OriginCheck`], [`ResponseMode`]).
//!
//! Not here: applying the checks (`guards.rs`, `router.rs`), serving (`listener.rs`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::transport::sse_http::bearer::{self, BearerToken, NamedTokens};
use crate::transport::sse_http::event_store::EventStore;
use crate::transport::sse_http::failed_tokens::FailedTokenPause;
use crate::transport::sse_http::routes::{self, Route, RouteRequest, RouteResponse};
use crate::transport::sse_http::session_store::SessionStore;

use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::resource::ProtectedResource;
use crate::transport::Limits;

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
    /// One `application/json` body when the answer is complete as soon as it exists, an SSE
    /// stream otherwise. JSON when a POST of one request gets its response as the first
    /// message for it while the answer's head is held (the one turn the application gets,
    /// then up to [`HttpServerConfig::first_event_hold`]): no stream is left to resume, so no
    /// priming event, no event id and nothing kept in the event store. The SSE stream of
    /// [`Sse`](ResponseMode::Sse), as it would have been, for anything else: a batch; a
    /// progress notification, a log or a request to the client before the response; a
    /// response that comes after the hold (resumable from the store, as any stream). The spec
    /// lets a server choose either per POST and requires clients to take both
    /// ([2025-11-25 transports, "Sending Messages to the Server"](https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#sending-messages-to-the-server)).
    /// `mcp-bridge serve` uses it: most of a gateway's answers come within the hold.
    Auto,
}

/// The default of [`HttpServerConfig::max_sessions`]: 10,000 sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// The configuration of an [`HttpServer`](crate::transport::sse_http::HttpServer). Every field has a documented default.
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
    /// SSE streams (default), JSON bodies, or either per POST ([`ResponseMode::Auto`]) for
    /// POSTed requests.
    pub response_mode: ResponseMode,
    /// No sessions at all: every POST gets a fresh transport and a JSON answer, GET is 405.
    /// Default off.
    pub stateless: bool,
    /// Whether GET opens the standalone stream (otherwise 405): on.
    pub standalone_get: bool,
    /// `tools/call` params decoded into [`CallToolRequestParams`](crate::proto::mcp_types::CallToolRequestParams)
    /// as the request is read ([`jsonrpc::decode_typed`](crate::proto::jsonrpc::decode_typed)): on. A large call is then scanned
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
    /// How long [`HttpServer::shutdown`](crate::transport::sse_http::HttpServer::shutdown) waits for requests in flight: 5 s.
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
    /// [`MemoryEventStore`](crate::transport::sse_http::MemoryEventStore) of `event_store_capacity`.
    pub event_store: Option<Arc<dyn EventStore>>,
    /// Where handshake-era sessions are shared with other replicas (see
    /// [`crate::transport::sse_http::session_store`]): none, each session lives in this server alone. With one,
    /// a session id this server does not know is looked up there and the session rebuilt, and
    /// stream names carry this server's replica id so that events of replicas sharing an
    /// [`EventStore`] never collide.
    pub session_store: Option<Arc<dyn SessionStore>>,
    /// Protocol versions accepted in `MCP-Protocol-Version`: all of [`ProtocolVersion::ALL`].
    pub versions: Vec<ProtocolVersion>,
    #[cfg(feature = "tls")]
    /// Serve https with this rustls configuration (see [`crate::transport::sse_http::tls::server_config_from_pem`]).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The token every request to the MCP endpoint, the legacy endpoints and the guarded extra
    /// routes must carry as `Authorization: Bearer <token>`: none. Never shown by `Debug`.
    pub bearer_token: Option<BearerToken>,
    /// Named tokens accepted beside (or instead of) `bearer_token`, each making its requests'
    /// principal [`Principal::named_token`](crate::transport::principal::Principal::named_token) (see [`HttpServerConfig::named_tokens`]): none.
    pub named_tokens: NamedTokens,
    /// The token given to [`HttpServerConfig::bearer_token`] when it is not a valid one:
    /// [`HttpServer::bind`] refuses to start with it (the builder cannot return the error).
    pub(super) bad_bearer_token: Option<bearer::BadToken>,
    /// Extra GET routes (see [`crate::transport::sse_http::routes`]): none.
    pub(super) routes: Vec<Route>,
    /// Sessions open at once from one client address, and for one principal (see
    /// [`crate::transport::sse_http::session_caps`]): no cap but `max_sessions`.
    pub max_sessions_per_address: Option<usize>,
    /// See `max_sessions_per_address`.
    pub max_sessions_per_principal: Option<usize>,
    /// The pause after failed bearer tokens from one client address (see
    /// [`crate::transport::sse_http::failed_tokens`]): 10 in a row, then 30 s; `None`: no pause.
    pub failed_token_pause: Option<FailedTokenPause>,
    /// OAuth protection of the MCP endpoints and guarded routes (see
    /// [`HttpServerConfig::protected_resource`]): none.
    pub protected_resource: Option<ProtectedResource>,
    /// The rate limit on each caller's requests to the MCP endpoints (see
    /// [`HttpServerConfig::request_limit`]): none.
    pub request_limit: Option<RequestLimit>,
}

/// Asked once per request to an MCP endpoint (POST, GET, DELETE, the legacy endpoints), with the
/// request's caller (`None` without authentication): `Err` refuses the request with 429.
pub type RequestLimit =
    Arc<dyn Fn(Option<&crate::transport::principal::Principal>) -> Result<(), RequestRefused> + Send + Sync>;

/// A request a [`RequestLimit`] refused: the limit's name and how long until it would pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRefused {
    /// The limit's name (in the refusal's message and data).
    pub limit: String,
    /// How long until the caller's next request would pass.
    pub retry_after: Duration,
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
            request_limit: None,
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

    /// Grace period of [`HttpServer::shutdown`](crate::transport::sse_http::HttpServer::shutdown).
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
    /// characters a header cannot carry makes [`HttpServer::bind`](crate::transport::sse_http::HttpServer::bind) fail.
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
    /// ([`Principal::token_name`](crate::transport::principal::Principal::token_name)), and a session is bound to the name that opened it (another
    /// name's token gets 404 for its id). [`protected_resource`](Self::protected_resource)
    /// takes the place of these too.
    pub fn named_tokens(mut self, tokens: NamedTokens) -> Self {
        self.named_tokens = tokens;
        self
    }

    /// Limits each caller's requests to the MCP endpoints: `limit` is asked once per request,
    /// after its token is checked (so with the caller's principal), and a request it refuses gets
    /// 429 with `Retry-After` (whole seconds, rounded up) and a JSON-RPC error -32029 naming the
    /// limit (`data`: `limit`, `retryAfterMs`), before anything of it is read or any session
    /// touched. Routes and the metadata document are not limited.
    pub fn request_limit(mut self, limit: RequestLimit) -> Self {
        self.request_limit = Some(limit);
        self
    }

    /// Protects the MCP endpoints, the legacy endpoints and the guarded routes with OAuth 2.1
    /// access tokens checked by `resource`'s verifier: a request without a valid token gets 401
    /// with a `WWW-Authenticate: Bearer resource_metadata="…"` challenge, one whose token lacks
    /// a scope the request needs gets 403 `insufficient_scope`, and the Protected Resource
    /// Metadata is served (public) at the well-known path of the endpoint and at the root one.
    /// The verified [`Principal`](crate::transport::principal::Principal) reaches handlers (`Context::principal`); a session is bound to
    /// the holder that opened it (another holder's token gets 404 for its id); an SSE stream
    /// ends at the `exp` of the token that opened it. Takes the place
    /// of [`bearer_token`](Self::bearer_token) when both are set.
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.protected_resource = Some(resource);
        self
    }

    /// Adds a GET (and HEAD) route at `path` that needs the bearer token when one is
    /// configured, e.g. a metrics page. A route added again at the same path replaces the
    /// first; a path of an MCP endpoint makes [`HttpServer::bind`](crate::transport::sse_http::HttpServer::bind) fail.
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

    pub(super) fn add_route(mut self, path: String, guarded: bool, handler: routes::RouteHandler) -> Self {
        self.routes.retain(|r| r.path != path);
        self.routes.push(Route { path, guarded, accepts_post: false, handler });
        self
    }

    /// Why this configuration cannot be served, if it cannot.
    pub(super) fn invalid(&self) -> Option<String> {
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
                || (metadata.is_some() && r.path == crate::transport::sse_http::resource::METADATA_PATH)
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
