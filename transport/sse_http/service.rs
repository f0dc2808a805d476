//! The Streamable HTTP server as a [`tower_service::Service`]: [`HttpService`] serves every
//! path [`HttpServer`](super::HttpServer) serves (handshake-era sessions, 2026-07-28
//! per-request POSTs, the legacy HTTP+SSE transport, the extra routes, the protected resource
//! metadata) for requests of any body type, so an application mounts it in its own stack:
//!
//! ```no_run
//! # async fn mount(server: mcpwire::server::Server) -> std::io::Result<()> {
//! use mcpwire::transport::sse_http::{HttpServerConfig, HttpService};
//! let service: HttpService = server.http_service(HttpServerConfig::default()).await?;
//! // axum: Router::new().route_service("/mcp", service.clone()) (the path is kept), or
//! // .fallback_service(service) to serve the legacy `/sse` and `/message` paths as well.
//! # Ok(()) }
//! ```
//!
//! What stays on inside the Service, as on [`HttpServer`](super::HttpServer): the `Host` and
//! `Origin` checks, the bearer token or OAuth check, the body cap
//! ([`HttpServerConfig::max_body_bytes`], read through [`http_body_util::Limited`] whatever
//! the body type) and its read timeout, every status the server answers. The application's
//! own layers (CORS, tracing, timeouts, its own authentication) wrap it. Paths are matched
//! as they arrive: a router that strips a prefix (axum's `nest_service`) needs
//! [`HttpServerConfig::path`] set to what is left (`"/"`).
//!
//! What a mounted Service does not do (the listener's part, [`HttpServer`](super::HttpServer)
//! does it): accept connections, TLS, HTTP/2, the head read timeout, the graceful wait for
//! requests in flight at [`HttpServer::shutdown`](super::HttpServer::shutdown).
//!
//! The peer's address reaches handlers ([`HttpRequestParts::remote_addr`](super::HttpRequestParts::remote_addr)) from a
//! [`RemoteAddr`] in the request's extensions: [`HttpServer`](super::HttpServer) puts it there
//! for each request; an application that mounts the Service inserts it itself (with axum:
//! copy `ConnectInfo<SocketAddr>` into a `RemoteAddr` in a middleware, as examples/axum.rs
//! does).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response};
use tokio::sync::watch;

use super::server::{HttpServerConfig, ServerTransport, Shared};
use super::HttpBody;

/// The address of the peer that sent a request, as a request extension: the HTTP request
/// context of handlers reads it ([`HttpRequestParts::remote_addr`](super::HttpRequestParts::remote_addr)).
///
/// [`HttpServer`](super::HttpServer) inserts it into every request; a mounted
/// [`HttpService`] sees one only if the application's stack inserted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteAddr(pub SocketAddr);

/// The Streamable HTTP server as a `tower` Service (see the [module docs](self)). Cheap to
/// clone: the clones share the sessions. Made by [`HttpService::new`] or
/// `Server::http_service`.
///
/// The sessions' background work (idle expiry, a session store's relays) runs until the last
/// clone is dropped or [`HttpService::shutdown`] is called.
#[derive(Clone)]
pub struct HttpService {
    core: Arc<Core>,
}

struct Core {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
}

impl std::fmt::Debug for HttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpService").field("path", &self.core.shared.config.path).finish_non_exhaustive()
    }
}

impl HttpService {
    /// A Service serving `config`'s endpoints; `app` is called once per new session with its
    /// transport, in a task of its own. `config.bind`, `tls`, `header_read_timeout`,
    /// `shutdown_grace` and the HTTP/2 options are the listener's and are not used here.
    ///
    /// # Errors
    /// When the configuration is invalid, or its session store cannot be reached.
    pub async fn new<F, Fut>(config: HttpServerConfig, app: F) -> std::io::Result<HttpService>
    where
        F: Fn(ServerTransport) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (stop, stopped) = watch::channel(false);
        let shared = Shared::start(config, Arc::new(move |t| Box::pin(app(t))), stopped).await?;
        Ok(HttpService { core: Arc::new(Core { shared, stop }) })
    }

    /// Answers one request. The same as [`Service::call`](tower_service::Service::call),
    /// without the need for `poll_ready` (always ready).
    pub fn handle<B>(&self, req: Request<B>) -> impl Future<Output = Response<HttpBody>> + Send + 'static
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let shared = self.core.shared.clone();
        let (parts, body) = req.into_parts();
        let body = RequestBody::from_app(body);
        super::server::handle(shared, Request::from_parts(parts, body))
    }

    /// Sessions currently open.
    pub fn session_count(&self) -> usize {
        self.core.shared.session_count()
    }

    /// Messages dropped so far because a session's standalone (GET) stream was not open and
    /// [`QUEUED_FOR_GET`](super::server::QUEUED_FOR_GET) were already waiting for it (the
    /// oldest go first; each time this grows, at most one log line per
    /// [`DROP_LOG_EVERY`](crate::transport::DROP_LOG_EVERY) says so).
    pub fn standalone_messages_dropped(&self) -> u64 {
        self.core.shared.standalone_messages_dropped()
    }

    /// Ends the service: new requests get 503, the standalone and legacy streams end, every
    /// session ends (its transport's `recv` returns `None`) and the background work stops.
    /// An application that mounted the Service calls it after its own server stopped taking
    /// requests (axum: after `with_graceful_shutdown`'s future is done).
    pub async fn shutdown(&self) {
        let _ = self.core.stop.send(true);
        self.core.shared.begin_shutdown().await;
        self.core.shared.end_sessions().await;
    }

    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.core.shared
    }

    pub(super) fn stopped(&self) -> watch::Receiver<bool> {
        self.core.stop.subscribe()
    }

    pub(super) fn stop(&self) {
        let _ = self.core.stop.send(true);
    }
}

impl<B> tower_service::Service<Request<B>> for HttpService
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<HttpBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let answer = self.handle(req);
        Box::pin(async move { Ok(answer.await) })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type AppBody = Pin<Box<dyn Body<Data = Bytes, Error = BoxError> + Send>>;

/// A request's body inside the server: hyper's own (no allocation on the listener's path), or
/// the application's, boxed. The application's sits in a `Mutex` only to be `Sync` (the
/// handlers hold `&Request` across awaits); it is reached through `&mut` alone, never locked.
pub(crate) enum RequestBody {
    Hyper(Incoming),
    App(Mutex<AppBody>),
}

impl RequestBody {
    fn from_app<B>(body: B) -> RequestBody
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let body = body.map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())));
        RequestBody::App(Mutex::new(Box::pin(body.map_err(Into::into))))
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            RequestBody::Hyper(body) => Pin::new(body).poll_frame(cx).map_err(Into::into),
            RequestBody::App(body) => body.get_mut().unwrap_or_else(|e| e.into_inner()).as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Hyper(body) => body.is_end_stream(),
            // Would need the lock: the caller polls and finds out.
            RequestBody::App(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RequestBody::Hyper(body) => body.size_hint(),
            RequestBody::App(_) => SizeHint::default(),
        }
    }
}

impl From<Incoming> for RequestBody {
    fn from(body: Incoming) -> Self {
        RequestBody::Hyper(body)
    }
}
