//! Transports move JSON-RPC messages between two peers, and nothing else: no MCP semantics,
//! no request tracking, no retries. Every transport implements [`Transport`].
//!
//! - [`stdio`]: newline-delimited JSON over a child process's stdin/stdout, or our own.
//! - [`inproc`]: a bounded in-process pair passing [`Message`] values, no bytes at all.
//! - [`boxed`]: any of them behind one type, so generic code over transports is compiled once.
//! - `sse_http` (feature `http`): Streamable HTTP client and server, and the legacy HTTP+SSE
//!   transport of 2024-11-05, on hyper; https with the feature `tls`.
//!
//! Every queue is bounded ([`Limits::queue_depth`]): a sender that outpaces its peer waits in
//! [`Transport::send`] instead of growing memory.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use crate::proto::framing::LineError;
use crate::proto::jsonrpc::Message;
use crate::proto::mcp_types::Tool;
use crate::proto::version::ProtocolVersion;

pub mod boxed;
pub(crate) mod drops;
pub(crate) mod forward_queries;
pub mod inproc;
pub mod principal;
#[cfg(feature = "http")]
pub mod sse_http;
pub mod stdio;
pub(crate) mod task;

pub use drops::DROP_LOG_EVERY;

/// Sizes and times that bound what a connection may hold or wait for. Every field has a
/// documented default and may be overridden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest frame (one line, one SSE event, one HTTP body) accepted: 4 MiB
    /// ([`crate::proto::framing::DEFAULT_MAX_FRAME_BYTES`]). Larger ones are rejected and
    /// skipped; the connection carries on. The stdio and HTTP server transports also keep their
    /// own responses under it: a larger one goes out as an error answer to its request instead
    /// (see `oversized_answer`), since a peer with the same cap could not tell which call the
    /// skipped frame answered and would leave it waiting for its timeout. For the same reason
    /// the stdio transport does not write a request of ours over it: the request fails at once
    /// with -32600 naming the limit (see `oversized_request`); the peer's cap is taken to be
    /// ours, so raise this for a peer known to take larger frames.
    pub max_frame_bytes: usize,
    /// Messages that may wait in a transport's outgoing queue before `send` waits: 256.
    pub queue_depth: usize,
    /// Requests that may be in flight at once, per direction: 1024.
    pub max_in_flight: usize,
    /// How long a request may wait for its response: 60 s (the TypeScript SDK's default).
    pub request_timeout: Duration,
    /// How long a child process gets after its stdin closes, and again after SIGTERM: 2 s.
    pub shutdown_grace: Duration,
    /// How long the stdio transport's reader keeps polling a pipe for input before it waits to
    /// be woken: 50 µs (a child's stdout, our own stdin when it is a pipe; see
    /// `StdioTransport::with_read_spin`). On virtual machines whose idle CPUs are slow to wake
    /// (tens of µs), waiting costs a call that much on each side of a pipe; polling a little
    /// longer catches an answer that is on its way. Each poll lets the runtime's other tasks and
    /// the CPU's other threads run first; polling stops for a while when another thread turns
    /// out to share the CPU (the peer, likely, which the polling would only delay), and never
    /// starts while part of a line is at hand. Zero waits at once.
    pub read_spin: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: crate::proto::framing::DEFAULT_MAX_FRAME_BYTES,
            queue_depth: 256,
            max_in_flight: 1024,
            request_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(2),
            read_spin: Duration::from_micros(50),
        }
    }
}

impl Limits {
    /// These limits with another frame cap.
    pub fn with_max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame_bytes = bytes;
        self
    }

    /// These limits with another outgoing queue depth (at least 1).
    pub fn with_queue_depth(mut self, depth: usize) -> Self {
        self.queue_depth = depth.max(1);
        self
    }

    /// These limits with another in-flight cap.
    pub fn with_max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests.max(1);
        self
    }

    /// These limits with another request timeout.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// These limits with another shutdown grace period.
    pub fn with_shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// These limits with another read spin ([`Limits::read_spin`]; zero for none).
    pub fn with_read_spin(mut self, spin: Duration) -> Self {
        self.read_spin = spin;
        self
    }
}

/// What goes out instead of `message`, whose encoding is `encoded` bytes, when that is over
/// `max` ([`Limits::max_frame_bytes`]): for a response, an error answer to the same request
/// (-32603, "response too large: N bytes, the limit is M"), so the caller learns at once
/// instead of by its timeout. `None` when the message fits, and for anything but a response (a
/// notification over our cap is still sent: the peer's cap may be larger; a request over it,
/// see [`oversized_request`]).
pub(crate) fn oversized_answer(message: &Message, encoded: usize, max: usize) -> Option<Message> {
    use crate::proto::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse};
    match message {
        Message::Response(response) if encoded > max => Some(Message::Error(ErrorResponse::new(
            Some(response.id.clone()),
            ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("response too large: {encoded} bytes, the limit is {max} (Limits::max_frame_bytes)"),
            ),
        ))),
        _ => None,
    }
}

/// The error answer to our own request `message` when it encodes to `encoded` bytes, over
/// `max`: it is not sent (a peer with the same cap would skip it, unable to say which request
/// it was, and the caller would wait for its timeout), and the caller gets this at once
/// (-32600, "request too large: N bytes, the limit is M"). `None` when the message fits, and for
/// anything but a request.
pub(crate) fn oversized_request(message: &Message, encoded: usize, max: usize) -> Option<Message> {
    use crate::proto::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse};
    match message {
        Message::Request(request) if encoded > max => Some(Message::Error(ErrorResponse::new(
            Some(request.id.clone()),
            ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "request too large: {encoded} bytes, the limit is {max} (Limits::max_frame_bytes); \
                     not sent to the peer"
                ),
            ),
        ))),
        _ => None,
    }
}

/// What becomes of `message` when its body cannot be serialized (`why`): a response of ours
/// becomes an internal error answer to the peer, which would otherwise wait for it; a request of
/// ours becomes the error its caller reads at once (-32603, naming serde_json's error), never
/// sent; a notification is dropped, said through `tracing`, as nothing waits on it.
pub(crate) enum Unserializable {
    /// Send this to the peer instead.
    AnswerPeer(Message),
    /// Hand this to our own reader, as if the peer had answered.
    AnswerCaller(Message),
    /// Nothing to send.
    Dropped,
}

pub(crate) fn unserializable(message: &Message, why: &serde_json::Error) -> Unserializable {
    use crate::proto::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse};
    let error = |id| {
        Message::Error(ErrorResponse::new(
            Some(id),
            ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("the message could not be serialized: {why}")),
        ))
    };
    match message {
        Message::Response(response) => Unserializable::AnswerPeer(error(response.id.clone())),
        Message::Request(request) => Unserializable::AnswerCaller(error(request.id.clone())),
        _ => {
            tracing::warn!(error = %why, "mcpwire: dropped an outgoing message whose body cannot be serialized");
            Unserializable::Dropped
        }
    }
}

/// Why a transport could not send or receive.
#[derive(Debug)]
#[non_exhaustive]
pub enum TransportError {
    /// The underlying pipe or socket failed.
    Io(std::io::Error),
    /// A child process could not be started.
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// One incoming frame was not a valid message. Not fatal: the next `recv` carries on with
    /// the next frame.
    Malformed(LineError),
    /// The transport was closed (by us, or the peer went away) and cannot send any more.
    Closed,
    /// HTTP: the server no longer knows our session (404 to a request carrying
    /// `Mcp-Session-Id`). The transport has forgotten the session id and protocol version, so
    /// the layer above may start over with a new `initialize` on the same transport.
    SessionExpired,
    /// HTTP: the server refused one exchange with this status. Fatal only for what was sent.
    Http {
        /// The HTTP status code.
        status: u16,
        /// The start of the response body, or the reason phrase.
        message: String,
    },
    /// No answer within the configured time (connect or response timeout).
    Timeout,
}

impl TransportError {
    /// Whether the transport is unusable after this error. Only [`TransportError::Malformed`]
    /// is not: it concerns one frame.
    pub fn is_fatal(&self) -> bool {
        !matches!(self, TransportError::Malformed(_) | TransportError::Http { .. } | TransportError::Timeout)
    }

    /// Whether this is [`TransportError::SessionExpired`]: re-initialize to carry on.
    pub fn is_session_expired(&self) -> bool {
        matches!(self, TransportError::SessionExpired)
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Io(e) => write!(f, "transport i/o failed: {e}"),
            TransportError::Spawn { program, source } => write!(f, "cannot start {program}: {source}"),
            TransportError::Malformed(e) => write!(f, "malformed message: {e}"),
            TransportError::Closed => f.write_str("transport closed"),
            TransportError::SessionExpired => f.write_str("the server no longer knows this session (http 404)"),
            TransportError::Http { status, message } => write!(f, "http status {status}: {message}"),
            TransportError::Timeout => f.write_str("timed out waiting for the server"),
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TransportError::Io(e) | TransportError::Spawn { source: e, .. } => Some(e),
            TransportError::Malformed(e) => Some(e),
            TransportError::Closed
            | TransportError::SessionExpired
            | TransportError::Http { .. }
            | TransportError::Timeout => None,
        }
    }
}

impl From<std::io::Error> for TransportError {
    fn from(e: std::io::Error) -> Self {
        TransportError::Io(e)
    }
}

/// A bidirectional message pipe to one peer.
///
/// All methods take `&self` so that one task can wait in [`recv`](Transport::recv) while others
/// send; share a transport through an `Arc`.
///
/// # Cancel safety
/// `recv` is cancel safe: dropping its future loses no message (bytes already read stay
/// buffered for the next call). `send` is cancel safe: a message is either queued whole or not
/// at all. Dropping the future is the supported way to stop waiting.
pub trait Transport: Send + Sync + 'static {
    /// Queues `message` for the peer, waiting while the outgoing queue is full.
    ///
    /// # Errors
    /// [`TransportError::Closed`] once the transport is closed or its peer is gone.
    fn send(&self, message: Message) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Queues `message`, which belongs to the peer's request `related` (a server's progress,
    /// log or request to the client made while handling it). Transports that route per request
    /// (Streamable HTTP: that request's SSE stream) override this; the default is
    /// [`send`](Transport::send).
    ///
    /// # Errors
    /// As [`send`](Transport::send).
    fn send_related(
        &self,
        message: Message,
        related: &crate::proto::jsonrpc::Id,
    ) -> impl Future<Output = Result<(), TransportError>> + Send {
        let _ = related;
        self.send(message)
    }

    /// Whether every exchange on this transport stands alone, with no session behind it
    /// (stateless Streamable HTTP: each POST gets a transport of its own). The layer above then
    /// cannot rely on an `initialize` handshake having happened on this transport.
    fn is_stateless(&self) -> bool {
        false
    }

    /// Whether messages can still reach the peer after [`recv`](Transport::recv) has returned
    /// `None`: yes by default (stdio: our stdout stays open after the peer's input ends, so a
    /// server answers the calls in flight); no for an HTTP server session, whose input ends
    /// only when the session does (DELETE, idle expiry, shutdown), after which its id is
    /// answered 404. A server cancels what still runs when the answer cannot arrive.
    fn outlives_its_input(&self) -> bool {
        true
    }

    /// The `Mcp-Param-*` headers (names in lowercase, in the order received, duplicates kept)
    /// of the HTTP request that carried the peer's request `request`, for a transport that has
    /// headers (Streamable HTTP, 2026-07-28); `None` for the others.
    fn param_headers(&self, request: &crate::proto::jsonrpc::Id) -> Option<Vec<(String, String)>> {
        let _ = request;
        None
    }

    /// Who the verified access token of the peer's request `request` speaks for, on a
    /// transport that authenticates its peer (Streamable HTTP and the legacy HTTP+SSE transport
    /// behind a [`ProtectedResource`](crate::transport::sse_http::resource::ProtectedResource)); `None` for the others
    /// and for an unprotected server.
    fn principal(&self, request: &crate::proto::jsonrpc::Id) -> Option<std::sync::Arc<principal::Principal>> {
        let _ = request;
        None
    }

    /// The HTTP request that carried the peer's request `request` (its headers, the
    /// application's extensions, the peer's address, the verified principal), on the HTTP
    /// server's transports until `request` is answered; `None` for the others. Which request
    /// that is in each era: [`sse_http::request_context`].
    #[cfg(feature = "http")]
    fn http_request(&self, request: &crate::proto::jsonrpc::Id) -> Option<std::sync::Arc<sse_http::HttpRequestParts>> {
        let _ = request;
        None
    }

    /// Our request that the peer's request `incoming` was sent on behalf of, when the transport
    /// can tell: Streamable HTTP, for a request that arrived on the SSE stream answering the
    /// POST of one of ours (servers send requests related to a client request on that
    /// request's stream). `None` for the others (stdio, the legacy HTTP+SSE transport, the
    /// standalone GET stream). Known from before `incoming` comes out of
    /// [`recv`](Transport::recv) until it has been answered.
    fn related_request(&self, incoming: &crate::proto::jsonrpc::Id) -> Option<crate::proto::jsonrpc::Id> {
        let _ = incoming;
        None
    }

    /// Tells the transport which protocol revision the session speaks from now on (`None`: not
    /// settled, e.g. a client falling back from a 2026-07-28 probe to `initialize`), for a
    /// transport whose framing or headers depend on it: stdio's decoder accepts batches only
    /// in 2025-03-26; the HTTP client sends `MCP-Protocol-Version` and, under 2026-07-28, makes
    /// every POST stateless. The client calls it for every transport, its user's own included,
    /// as soon as the version is known. Takes effect from the next message; must not wait (it
    /// may be called while another task waits in [`recv`](Transport::recv)). The default
    /// ignores it.
    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        let _ = version;
    }

    /// The tools of a `tools/list` page this transport can call, for one that has a say: the
    /// HTTP client in a 2026-07-28 session keeps only the tools whose `x-mcp-header`
    /// declarations are valid (Streamable HTTP, "Custom Headers from Tool Parameters"). Returns
    /// each tool left out, with why. The default keeps every tool.
    fn admit_tools(&self, tools: &mut Vec<Tool>) -> Vec<(String, String)> {
        let _ = tools;
        Vec::new()
    }

    /// The OpenTelemetry `network.transport` of this transport: `pipe` for stdio, `tcp` for
    /// HTTP; `None` for the others (in-process pairs) and by default.
    fn network_transport(&self) -> Option<&'static str> {
        None
    }

    /// The OpenTelemetry `server.address` and `server.port` of the peer this transport reaches:
    /// an HTTP client's URL's host and port (the scheme's default when the URL has none);
    /// `None` for the others and by default.
    fn server_endpoint(&self) -> Option<(String, u16)> {
        None
    }

    /// The MCP session id this transport carries (Streamable HTTP's `Mcp-Session-Id`), when
    /// it has one; `None` for the others and by default.
    fn session_id(&self) -> Option<String> {
        None
    }

    /// For a transport over a child process: its process id (`None` for the others).
    fn child_pid(&self) -> Option<u32> {
        None
    }

    /// For a transport over a child process: its exit status once it has exited (`None` while
    /// it runs, and for the others).
    fn exit_status(&self) -> Option<std::process::ExitStatus> {
        None
    }

    /// The next message from the peer, or `Ok(None)` when the peer ended the stream cleanly.
    ///
    /// # Errors
    /// [`TransportError::Malformed`] for one bad frame (call again for the next), or a fatal
    /// error (see [`TransportError::is_fatal`]).
    fn recv(&self) -> impl Future<Output = Result<Option<Message>, TransportError>> + Send;

    /// Stops sending: every message already queued is still delivered, then the outgoing side
    /// is closed (for a child process: stdin closed, then the process is stopped). Idempotent.
    ///
    /// # Errors
    /// When flushing what was queued fails.
    fn close(&self) -> impl Future<Output = Result<(), TransportError>> + Send;
}
