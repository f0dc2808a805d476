//! One listener, several MCP endpoints: [`MountedServer`] accepts connections (TLS, HTTP/1.1
//! and HTTP/2, as [`HttpServer`](super::HttpServer) does) and hands each request to the
//! [`HttpService`] mounted on its path, or to the fallback service for every other path.
//!
//! Each mounted service keeps everything of its own: its sessions, its bearer tokens or OAuth
//! protection, its limits. A request goes to the mounted service whose endpoint path, legacy
//! HTTP+SSE paths (when on) or protected resource metadata path (when protected) it names
//! exactly; anything else (its routes such as `/readyz`, and its own endpoint unless that is
//! turned off: 404 then) to the fallback. The listener's settings (TLS, HTTP/2, the head read timeout, the shutdown grace)
//! are the fallback's configuration's.
//!
//! Not here: what any service answers (`server.rs`, `service.rs`), path patterns or prefixes: a
//! path is mounted as written.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::{Request, Response};
use tokio::net::TcpListener;

use super::resource::ProtectedResource;
use super::server::serve_listener;
use super::service::RequestBody;
use super::{HttpBody, HttpService};

/// A listener serving several [`HttpService`]s by path (see the [module](self) docs). Dropping
/// it does not stop it: call [`MountedServer::shutdown`].
pub struct MountedServer {
    addr: SocketAddr,
    tls: bool,
    mounted: Arc<Vec<HttpService>>,
    fallback: HttpService,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for MountedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountedServer")
            .field("addr", &self.addr)
            .field("mounted", &self.mounted)
            .finish_non_exhaustive()
    }
}

/// Whether `service` answers `path` (its endpoint, legacy or metadata paths).
fn answers(service: &HttpService, path: &str) -> bool {
    let config = &service.shared().config;
    path == config.path
        || (config.legacy_sse
            && !config.stateless
            && (path == config.legacy_sse_path || path == config.legacy_message_path))
        || (config.protected_resource.is_some() && path == ProtectedResource::metadata_path(&config.path))
}

/// Whether `path` is `service`'s MCP endpoint or one of its legacy paths.
fn is_endpoint(service: &HttpService, path: &str) -> bool {
    let config = &service.shared().config;
    path == config.path || (config.legacy_sse && (path == config.legacy_sse_path || path == config.legacy_message_path))
}

fn not_found() -> Response<HttpBody> {
    let mut response = Response::new(super::full("Not Found"));
    *response.status_mut() = hyper::StatusCode::NOT_FOUND;
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain"));
    response
}

impl MountedServer {
    /// Serves `listener` in a background task: requests for the paths of one of `mounted` go to
    /// it, every other request to `fallback`, whose own MCP endpoint (and legacy paths) answer
    /// 404 unless `fallback_endpoint`.
    ///
    /// # Errors
    /// Two services answer one path, or the listener's address cannot be read.
    pub async fn serve_on(
        listener: TcpListener,
        fallback: HttpService,
        mounted: Vec<HttpService>,
        fallback_endpoint: bool,
    ) -> std::io::Result<MountedServer> {
        let addr = listener.local_addr()?;
        for (i, service) in mounted.iter().enumerate() {
            let path = &service.shared().config.path;
            let clash = (fallback_endpoint && answers(&fallback, path))
                || mounted[..i].iter().any(|other| answers(other, path));
            if clash {
                let why = format!("two services are mounted on {path}");
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
            }
        }
        #[cfg(feature = "tls")]
        let tls = fallback.shared().config.tls.is_some();
        #[cfg(not(feature = "tls"))]
        let tls = false;
        let mounted = Arc::new(mounted);
        let task =
            crate::transport::task::spawn(accept_loop(listener, fallback.clone(), mounted.clone(), fallback_endpoint));
        Ok(MountedServer { addr, tls, mounted, fallback, task })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of `path` on this listener, e.g. `http://127.0.0.1:41234/mcp/dev`.
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{}", if self.tls { "https" } else { "http" }, self.addr, path)
    }

    /// The services mounted on their paths, in the order given.
    pub fn mounted(&self) -> &[HttpService] {
        &self.mounted
    }

    /// The service answering every other path.
    pub fn fallback(&self) -> &HttpService {
        &self.fallback
    }

    /// Graceful shutdown of the listener and of every service, as
    /// [`HttpServer::shutdown`](super::HttpServer::shutdown) does for one.
    pub async fn shutdown(self) {
        self.fallback.stop();
        let _ = self.task.await;
    }
}

async fn accept_loop(
    listener: TcpListener,
    fallback: HttpService,
    mounted: Arc<Vec<HttpService>>,
    fallback_endpoint: bool,
) {
    let every: Vec<HttpService> = std::iter::once(fallback.clone()).chain(mounted.iter().cloned()).collect();
    let lead = fallback.clone();
    let route = move |req: Request<RequestBody>| {
        let path = req.uri().path();
        let target = match mounted.iter().find(|s| answers(s, path)) {
            Some(service) => Some(service),
            None if !fallback_endpoint && is_endpoint(&fallback, path) => None,
            None => Some(&fallback),
        };
        let answer = target.map(|service| super::server::handle(service.shared().clone(), req));
        async move {
            match answer {
                Some(answer) => answer.await,
                None => not_found(),
            }
        }
    };
    serve_listener(listener, lead, every, route).await;
}
