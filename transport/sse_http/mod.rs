//! MCP over HTTP: the Streamable HTTP transport (2025-03-26 and later) and the legacy HTTP+SSE
//! transport (2024-11-05), client and server, on hyper 1; https through rustls with the `tls`
//! feature.
//!
//! - [`server`]: [`HttpServer`] accepts connections (HTTP/1.1 and HTTP/2) and turns every MCP
//!   session into a [`ServerTransport`] handed to the application, so the session and server
//!   layers run over HTTP unchanged. It also speaks the legacy transport (`GET /sse` +
//!   `POST /message`).
//! - [`service`]: the same server as a `tower` Service, [`HttpService`], that an application
//!   mounts in its own stack (axum, hyper-util, tower layers).
//! - [`request_context`]: the HTTP request a handler's request came in
//!   ([`HttpRequestParts`]: headers, the application's extensions, the peer's address, the
//!   verified principal).
//! - [`client`]: [`HttpClientTransport`] POSTs every message, reads JSON and SSE replies, keeps
//!   the session, opens the standalone GET stream, resumes dropped streams with
//!   `Last-Event-ID`, and falls back to the legacy transport for old servers.
//! - [`event_store`]: the replay buffer behind resumability; [`session_store`]: what a replica
//!   needs to serve a session it did not create (N replicas behind a load balancer);
//!   `redis_store` (feature `redis`): both on Redis.
//! - [`authorizer`]: the hook that gives the client its `Authorization` headers and hears of
//!   401/403 (the OAuth client of `client::oauth` plugs in there).
//! - [`bearer`]: the static bearer token the server can require; [`routes`]: extra GET routes
//!   (health, metrics) on the server's listener. OAuth access tokens are verified through
//!   [`HttpServerConfig::protected_resource`] with the verifiers of [`crate::auth`].
//!
//! The rules implemented are those of
//! [2025-11-25 "Transports"](https://modelcontextprotocol.io/specification/2025-11-25/basic/transports)
//! (and its 2025-03-26 and 2024-11-05 predecessors for batches and the legacy transport).
//! Not here: what messages mean (the session and server layers), how tokens are verified
//! ([`crate::auth`]), the client's OAuth flows (the client transport only asks an
//! [`Authorizer`] for credentials; the flows live in `client::oauth`), HTTP/2 on the client.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::header::HeaderName;
use tokio::sync::mpsc;

pub mod authorizer;
pub mod bearer;
mod buffers;
pub mod client;
mod connection;
pub mod connector;
pub mod event_store;
pub mod failed_tokens;
pub mod mount;
#[cfg(feature = "redis")]
pub mod redis_store;
pub mod request_context;
pub mod resource;
pub mod routes;
pub mod server;
pub mod service;
pub mod session_caps;
pub mod session_store;
#[cfg(feature = "tls")]
pub mod tls;
mod token_expiry;
pub mod verifier;
mod version_header;

pub use authorizer::{Authorizer, Credentials, Denial, Verdict};
pub use bearer::{BearerToken, NamedTokens};
pub use client::{HttpClientConfig, HttpClientTransport};
pub use event_store::{EventId, EventStore, Flushed, MemoryEventStore, StoredEvent};
pub use mount::MountedServer;
pub use request_context::HttpRequestParts;
pub use routes::{RouteRequest, RouteResponse, Streamed};
pub use server::{HttpServer, HttpServerConfig, RequestLimit, RequestRefused, ServerTransport};
pub use service::{HttpService, RemoteAddr};
pub use session_store::{
    MemorySessionStore, RelayKind, Relayed, ReplayedRequest, SessionRecord, SessionStore, StoreError, StoreFuture,
};

/// `Mcp-Session-Id`.
pub const SESSION_ID_HEADER: &str = "mcp-session-id";
/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// `Last-Event-ID`.
pub const LAST_EVENT_ID_HEADER: &str = "last-event-id";

pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static(SESSION_ID_HEADER);
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static(PROTOCOL_VERSION_HEADER);
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static(LAST_EVENT_ID_HEADER);

/// The body type of every response and request we build: what [`HttpService`] answers with.
pub type HttpBody = BoxBody<Bytes, Infallible>;

pub(crate) fn full(bytes: impl Into<Bytes>) -> HttpBody {
    http_body_util::Full::new(bytes.into()).boxed()
}

pub(crate) fn empty() -> HttpBody {
    full(Bytes::new())
}

/// A body fed through a bounded channel: an SSE stream being written as events happen.
pub(crate) struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl ChannelBody {
    pub(crate) fn boxed(rx: mpsc::Receiver<Bytes>) -> HttpBody {
        ChannelBody { rx }.boxed()
    }
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// Lets the tasks already woken run before this one goes on, without polling for IO:
/// `tokio::task::yield_now` defers the task until the runtime has polled its IO driver: one
/// more `epoll_wait` for a turn that needs none.
pub(crate) fn requeue_once() -> impl std::future::Future<Output = ()> {
    let mut requeued = false;
    std::future::poll_fn(move |cx| {
        if requeued {
            return std::task::Poll::Ready(());
        }
        requeued = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
}

/// 128 bits from the operating system's CSPRNG (through ring, already the TLS provider, rather
/// than a second version of `getrandom`), as 32 lowercase hex digits (visible ASCII, as the
/// spec asks of a session id).
pub(crate) fn random_id() -> String {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).expect("the operating system's random source is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether an `Accept` value lists `media` (or a wildcard covering it), ignoring parameters.
pub(crate) fn accepts(accept: &str, media: &str) -> bool {
    let media = media.as_bytes();
    let kind = media.split(|&b| b == b'/').next().unwrap_or(media);
    accept.as_bytes().split(|&b| b == b',').any(|item| {
        let item = item.split(|&b| b == b';').next().unwrap_or(item).trim_ascii();
        item.eq_ignore_ascii_case(media)
            || item == b"*/*"
            || item.strip_suffix(b"/*").is_some_and(|k| k.eq_ignore_ascii_case(kind))
    })
}

/// Whether a `Content-Type` value is `media`, ignoring parameters such as `charset`.
pub(crate) fn is_media(content_type: &str, media: &str) -> bool {
    content_type.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(media)
}

/// Whether `host` (a name or address, without port; IPv6 with or without brackets) is this
/// machine's loopback.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    // The suffix compared in place (no lowercased copy of the host per request).
    let suffix = host.len().checked_sub(".localhost".len()).map(|at| &host.as_bytes()[at..]);
    host.eq_ignore_ascii_case("localhost")
        || suffix.is_some_and(|tail| tail.eq_ignore_ascii_case(b".localhost"))
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The host part of a `Host` header value or URL authority (`name:port`, `[v6]:port`).
pub(crate) fn host_of_authority(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_lists_are_matched_by_media_type() {
        assert!(accepts("application/json, text/event-stream", "text/event-stream"));
        assert!(accepts("application/json;q=0.9,text/event-stream", "application/json"));
        assert!(accepts("*/*", "application/json"));
        assert!(accepts("text/*", "text/event-stream"));
        assert!(!accepts("application/json", "text/event-stream"));
        assert!(!accepts("", "application/json"));
        assert!(accepts("Application/JSON, TEXT/*", "text/event-stream"), "media types ignore case");
    }

    #[test]
    fn content_type_ignores_parameters() {
        assert!(is_media("application/json; charset=utf-8", "application/json"));
        assert!(!is_media("text/plain", "application/json"));
    }

    #[test]
    fn loopback_hosts() {
        for host in
            ["localhost:3000", "127.0.0.1:1", "[::1]:80", "127.0.0.2", "a.localhost", "A.LocalHost", "é.localhost"]
        {
            assert!(is_loopback_host(host_of_authority(host)), "{host}");
        }
        for host in ["example.com", "evil.com:80", "10.0.0.1", "localhost.evil.com", "evillocalhost", "host", "éééééé"]
        {
            assert!(!is_loopback_host(host_of_authority(host)), "{host}");
        }
    }

    #[test]
    fn random_ids_are_128_bits_of_hex() {
        let a = random_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, random_id());
    }
}
