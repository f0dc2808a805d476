//! The HTTP request a peer's request arrived in, as handlers see it
//! ([`Context::http_request`](crate::server::Context::http_request)):
//! [`HttpRequestParts`] holds its method, URI, headers, the [`http::Extensions`] the
//! application's middleware inserted (an authenticated user, a tenant), the peer's address and
//! the principal of its verified access token.
//!
//! Which request that is, by era:
//! - 2026-07-28 (per request): the POST that carried the request itself.
//! - Handshake-era sessions (Streamable HTTP, stateful or stateless): the POST the request
//!   arrived on; each request of a session has its own (a batch's requests share theirs).
//! - The legacy HTTP+SSE transport: the `POST /message` that carried it.
//! - Not over HTTP (stdio, in process): none.
//!
//! The `Authorization` header is left out when the server itself checked it (a
//! [bearer token](super::HttpServerConfig::bearer_token) or a
//! [protected resource](super::HttpServerConfig::protected_resource)): the verified
//! [`principal`](HttpRequestParts::principal) says who it speaks for, and the token is never
//! handed on. Kept until the request is answered; nothing here outlives it.
//!
//! Not here: reading the request (the [`server`](super::server) does), request headers of the
//! client side.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::{HeaderMap, Method, Request, Uri, Version};

use super::service::RemoteAddr;
use crate::transport::principal::Principal;

/// The parts of the HTTP request a peer's request arrived in (see the [module docs](self)).
///
/// The request's head is shared, not copied: the server keeps it once per HTTP request,
/// whatever number of peer requests it carried.
#[derive(Debug)]
pub struct HttpRequestParts {
    head: Request<()>,
    principal: Option<Arc<Principal>>,
}

impl HttpRequestParts {
    /// `head` (already without `Authorization` when the server checked it itself), with the
    /// principal of its token.
    pub(crate) fn of(head: Request<()>, principal: Option<Arc<Principal>>) -> Self {
        HttpRequestParts { head, principal }
    }

    /// The request's method (`POST` for every request a handler sees today).
    pub fn method(&self) -> &Method {
        self.head.method()
    }

    /// The request's URI as the server saw it (behind a router that strips a prefix, what
    /// is left of the path).
    pub fn uri(&self) -> &Uri {
        self.head.uri()
    }

    /// HTTP/1.1 or HTTP/2.
    pub fn version(&self) -> Version {
        self.head.version()
    }

    /// The request's headers (without `Authorization` when the server checked it).
    pub fn headers(&self) -> &HeaderMap {
        self.head.headers()
    }

    /// What the application's middleware put into the request's extensions, e.g. an
    /// authenticated user: `parts.extensions().get::<User>()`.
    pub fn extensions(&self) -> &http::Extensions {
        self.head.extensions()
    }

    /// The peer's address: known when the listener is [`HttpServer`](super::HttpServer), or
    /// when the application put a [`RemoteAddr`] into the request's extensions (a mounted
    /// [`HttpService`](super::HttpService)); `None` otherwise.
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.head.extensions().get::<RemoteAddr>().map(|a| a.0)
    }

    /// Who the request's verified access token speaks for (a protected resource only).
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_deref()
    }

    pub(crate) fn principal_arc(&self) -> Option<Arc<Principal>> {
        self.principal.clone()
    }
}
