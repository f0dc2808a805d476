//! Extra GET routes on the HTTP server's listener, beside the MCP endpoints: health probes,
//! a metrics page, anything an operator reads with `curl`.
//!
//! A route answers `GET` and `HEAD` (the same head, no body) and 405 to other methods; its
//! handler takes no input and returns a [`RouteResponse`] (a handler that panics is answered
//! 500, and the server goes on). A route added with
//! [`route_with_request`](super::HttpServerConfig::route_with_request) reads its request
//! ([`RouteRequest`]: the query string, and the JSON body of a `POST`, which it answers too),
//! e.g. a console's actions; a `POST` whose `Content-Type` is not `application/json` gets 415
//! (no HTML form of another site can send one without a CORS preflight, which is refused). The `Host` and `Origin` checks of
//! the server apply to every route; the bearer token only to routes added with
//! [`HttpServerConfig::route`](super::HttpServerConfig::route), not to those added with
//! [`route_public`](super::HttpServerConfig::route_public).
//!
//! A route may stream its body ([`RouteResponse::streaming`], e.g. server-sent events): the
//! chunks go out as the handler's channel yields them, until it closes, the client goes, or
//! the server shuts down.
//!
//! Not here: path patterns, headers of the request, other methods than GET, HEAD and POST: a
//! route is one fixed path.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

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
    /// The chunks of a streamed body, sent after `body` (see [`RouteResponse::streaming`]).
    pub stream: Option<Streamed>,
}

/// The chunks of a streamed route body. A clone shares the one channel: whichever copy is
/// served first takes it, the others send nothing more than their `body`.
#[derive(Debug, Clone)]
pub struct Streamed(Arc<Mutex<Option<mpsc::Receiver<Bytes>>>>);

impl Streamed {
    /// The channel, if no copy took it yet.
    pub(crate) fn take(&self) -> Option<mpsc::Receiver<Bytes>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl PartialEq for Streamed {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Streamed {}

impl RouteResponse {
    /// A response of `status` with `content_type` and `body`.
    pub fn new(status: u16, content_type: impl Into<Cow<'static, str>>, body: impl Into<Bytes>) -> RouteResponse {
        RouteResponse {
            status,
            content_type: content_type.into(),
            body: body.into(),
            headers: Vec::new(),
            stream: None,
        }
    }

    /// A 200 response of `content_type` whose body is what `chunks` yields, as it yields it:
    /// it ends when every sender is dropped, and the receiver is dropped when the client goes
    /// (a sender sees its channel closed) or the server shuts down. A HEAD gets the head only.
    pub fn streaming(content_type: impl Into<Cow<'static, str>>, chunks: mpsc::Receiver<Bytes>) -> RouteResponse {
        RouteResponse {
            stream: Some(Streamed(Arc::new(Mutex::new(Some(chunks))))),
            ..RouteResponse::new(200, content_type, Bytes::new())
        }
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

/// What a route added with [`route_with_request`](super::HttpServerConfig::route_with_request)
/// is given of its request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteRequest {
    /// `GET`, `HEAD` or `POST`.
    pub method: String,
    /// The query string, without its `?` (`None`: the URL has none).
    pub query: Option<String>,
    /// A POST's body (JSON, at most the server's `max_body_bytes`); empty for GET and HEAD.
    pub body: Bytes,
}

impl RouteRequest {
    /// The value of the first `name=value` pair of the query named `name`, as written (no
    /// percent-decoding).
    pub fn query_value(&self, name: &str) -> Option<&str> {
        self.query.as_deref()?.split('&').find_map(|pair| match pair.split_once('=') {
            Some((key, value)) if key == name => Some(value),
            None if pair == name => Some(""),
            _ => None,
        })
    }
}

/// A route's handler: called once per request it answers.
pub type RouteHandler = Arc<dyn Fn(RouteRequest) -> Pin<Box<dyn Future<Output = RouteResponse> + Send>> + Send + Sync>;

/// One extra route.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) path: String,
    /// Whether the bearer token (when one is configured) is required.
    pub(crate) guarded: bool,
    /// Whether POST is answered too (a route that reads its request).
    pub(crate) accepts_post: bool,
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
    Arc::new(move |_| Box::pin(f()))
}

/// Makes a [`RouteHandler`] of an async function of the request.
pub(crate) fn request_handler<F, Fut>(f: F) -> RouteHandler
where
    F: Fn(RouteRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = RouteResponse> + Send + 'static,
{
    Arc::new(move |request| Box::pin(f(request)))
}

#[cfg(test)]
mod tests {
    use super::RouteRequest;

    #[test]
    fn a_query_value_is_found_by_its_name() {
        let request = RouteRequest { query: Some("a=1&flag&b=two&a=3".into()), ..RouteRequest::default() };
        assert_eq!(request.query_value("a"), Some("1"));
        assert_eq!(request.query_value("b"), Some("two"));
        assert_eq!(request.query_value("flag"), Some(""));
        assert_eq!(request.query_value("c"), None);
        assert_eq!(RouteRequest::default().query_value("a"), None);
    }
}
