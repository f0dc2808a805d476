//! The client's configuration: [`HttpClientConfig`] and its builder (the endpoint, headers,
//! the bearer token kept out of `Debug`, the authorizer, timeouts, size caps, HTTP/2).
//!
//! Not here: using it (the transport, `connections.rs`).

use std::sync::Arc;
use std::time::Duration;

use crate::proto::framing::DEFAULT_MAX_FRAME_BYTES;

/// A secret header value that never shows in `Debug` output.
#[derive(Clone)]
pub(super) struct Secret(pub(super) String);

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
    pub(super) bearer: Option<Secret>,
    /// Where the `Authorization` header of each request comes from, and who hears of a 401 or
    /// 403: none (only [`HttpClientConfig::bearer_token`], if set).
    pub authorizer: Option<crate::transport::sse_http::authorizer::SharedAuthorizer>,
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
    /// ([`jsonrpc::decode_answer`](crate::proto::jsonrpc::decode_answer) with [`ClientTypedResults`](crate::proto::mcp_types::ClientTypedResults)): on. The result is then
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
    /// `Debug`). A token a header cannot carry makes [`HttpClientTransport::new`](crate::transport::sse_http::HttpClientTransport::new) fail.
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
    /// refusals (see [`authorizer`](crate::transport::sse_http::authorizer)); it wins over
    /// [`HttpClientConfig::bearer_token`].
    pub fn authorizer(mut self, authorizer: Arc<dyn crate::transport::sse_http::authorizer::Authorizer>) -> Self {
        self.authorizer = Some(crate::transport::sse_http::authorizer::SharedAuthorizer(authorizer));
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
