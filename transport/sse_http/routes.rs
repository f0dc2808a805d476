//! Extra GET routes on the HTTP server's listener, beside the MCP endpoints: health probes,
//! a metrics page, anything an operator reads with `curl`.
//!
//! A route answers `GET` and `HEAD` (the same head, no body) and 405 to other methods; its
//! handler takes no input and returns a [`RouteResponse`] (a handler that panics is answered
//! 500, and the server goes on). The `Host` and `Origin` checks of
//! the server apply to every route; the bearer token only to routes added with
//! [`HttpServerConfig::route`](super::HttpServerConfig::route), not to those added with
//! [`route_public`](super::HttpServerConfig::route_public).
//!
//! Not here: request bodies, query parameters, path patterns, other methods: a route is one
//! fixed path that reports something.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

/// What a route answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteResponse {
    /// The HTTP status, e.g. 200 (a value outside 100..=999 is answered as 500).
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: Cow<'static, str>,
    /// The body.
    pub body: Bytes,
    /// More response headers (e.g. `Content-Security-Policy`), in order; a name or value that
    /// is not a valid header is left out.
    pub headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
}

impl RouteResponse {
    /// A response of `status` with `content_type` and `body`.
    pub fn new(status: u16, content_type: impl Into<Cow<'static, str>>, body: impl Into<Bytes>) -> RouteResponse {
        RouteResponse { status, content_type: content_type.into(), body: body.into(), headers: Vec::new() }
    }

    /// This response with header `name: value` too.
    pub fn header(mut self, name: impl Into<Cow<'static, str>>, value: impl Into<Cow<'static, str>>) -> RouteResponse {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// A `text/plain; charset=utf-8` response.
    pub fn text(status: u16, body: impl Into<Bytes>) -> RouteResponse {
        RouteResponse::new(status, "text/plain; charset=utf-8", body)
    }
}

/// A route's handler: called once per GET or HEAD.
pub type RouteHandler = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = RouteResponse> + Send>> + Send + Sync>;

/// One extra route.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) path: String,
    /// Whether the bearer token (when one is configured) is required.
    pub(crate) guarded: bool,
    pub(crate) handler: RouteHandler,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route").field("path", &self.path).field("guarded", &self.guarded).finish_non_exhaustive()
    }
}

/// Makes a [`RouteHandler`] of an async function.
pub(crate) fn handler<F, Fut>(f: F) -> RouteHandler
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = RouteResponse> + Send + 'static,
{
    Arc::new(move || Box::pin(f()))
}
