//! [`HttpServer`]: the listener and its accept loop, each connection served as HTTP/1.1 or
//! HTTP/2 (h2c or TLS with ALPN) by the [`HttpService`].
//!
//! Not here: what a request is answered (`router.rs` and the handlers after it).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::transport::sse_http::connection;
use crate::transport::sse_http::service::{HttpService, RemoteAddr, RequestBody};

use super::config::HttpServerConfig;
use super::router::handle;
use super::session::ServerTransport;
use crate::transport::sse_http::HttpBody;

/// A running HTTP server: a listener whose connections are served by an [`HttpService`]
/// (HTTP/1.1 and HTTP/2 on the same port, see [`HttpServerConfig::http2`]). Dropping it does
/// not stop it: call [`HttpServer::shutdown`].
pub struct HttpServer {
    pub(super) addr: SocketAddr,
    pub(super) path: String,
    pub(super) tls: bool,
    pub(super) service: HttpService,
    pub(super) task: tokio::task::JoinHandle<()>,
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
    /// [`ProtectedResource`](crate::transport::sse_http::resource::ProtectedResource) on a port chosen by the system.
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

pub(super) async fn accept_loop(listener: TcpListener, service: HttpService) {
    let shared = service.shared().clone();
    let route = move |req: Request<RequestBody>| handle(shared.clone(), req);
    serve_listener(listener, service.clone(), vec![service], route).await;
}

/// Accepts on `listener` until `lead` is stopped (its configuration gives the HTTP and TLS
/// settings), each connection served as HTTP/1.1 or HTTP/2 and each request, with the peer's
/// address in its extensions, answered by `route`; then shuts down every one of `services`
/// gracefully: no new session, the connections given their grace, the sessions ended.
pub(in crate::transport::sse_http) async fn serve_listener<Answer>(
    listener: TcpListener,
    lead: HttpService,
    services: Vec<HttpService>,
    route: impl Fn(Request<RequestBody>) -> Answer + Send + Sync + 'static,
) where
    Answer: Future<Output = hyper::Response<HttpBody>> + Send + 'static,
{
    let mut stopped = lead.stopped();
    let config = &lead.shared().config;
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let builders = Arc::new(connection::Builders::new(config));
    #[cfg(feature = "tls")]
    let tls = config.tls.clone().map(|tls| crate::transport::sse_http::tls::offer_h2(tls, config.http2));
    let route = Arc::new(route);
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
        let route = route.clone();
        let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
            let (mut parts, body) = req.into_parts();
            parts.extensions.insert(RemoteAddr(remote));
            let answer = route(Request::from_parts(parts, RequestBody::from(body)));
            async move { Ok::<_, Infallible>(answer.await) }
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
    for service in &services {
        service.shared().begin_shutdown().await;
    }
    let _ = tokio::time::timeout(lead.shared().config.shutdown_grace, graceful.shutdown()).await;
    for service in &services {
        service.stop();
        service.shared().end_sessions().await;
    }
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
