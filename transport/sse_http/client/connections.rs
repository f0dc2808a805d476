//! Connections to the server and one request over them: the HTTP/1.1 keep-alive pool, the one
//! HTTP/2 connection per authority every request shares (or the note that ALPN chose
//! HTTP/1.1), the handshake, and a request sent again when the authorizer says so.
//!
//! Not here: what the answers hold (`streams.rs`), what is sent (the transport).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION, HOST};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;

use super::{bad_config, Inner};
use crate::transport::sse_http::{full, HttpBody, PROTOCOL_VERSION, SESSION_ID};
use crate::transport::TransportError;

/// How many idle connections are kept for reuse; more are closed when their response ends.
pub(super) const MAX_POOLED_CONNECTIONS: usize = 32;

/// A pooled connection is not reused after being idle this long, well before common server
/// keep-alive timeouts (Node's is 5 s), so a request rarely meets a connection the server is
/// closing (and one that it closed before the request went out is retried on a fresh one).
pub(super) const POOLED_CONNECTION_LIFETIME: Duration = Duration::from_secs(2);

/// How long a pooled connection may take to accept the next request after its response ended.
pub(super) const POOLED_READY_WAIT: Duration = Duration::from_millis(200);

/// What a request needs of its URL, worked out once for the endpoint rather than per request.
pub(super) struct Target {
    /// `scheme://host:port`, the key of the connection pool.
    pub(super) key: Arc<str>,
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) https: bool,
    /// The request target: the URL's path and query.
    pub(super) path: Uri,
    /// The whole URL, the target of an HTTP/2 request (its `:scheme`, `:authority` and `:path`).
    pub(super) absolute: Uri,
    /// The `Host` header.
    pub(super) authority: HeaderValue,
}

impl Target {
    /// The `Host` value as text (what a DPoP proof's `htu` names).
    pub(super) fn host_header(&self) -> &str {
        self.authority.to_str().unwrap_or(&self.host)
    }

    pub(super) fn of(uri: &Uri) -> Result<Target, TransportError> {
        let host = uri.host().ok_or_else(|| bad_config("no host"))?.trim_start_matches('[').trim_end_matches(']');
        let https = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let key = format!("{}://{host}:{port}", if https { "https" } else { "http" }).into();
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).parse().map_err(bad_config)?;
        let authority = uri.authority().map_or(host, |a| a.as_str());
        let absolute =
            format!("{}://{authority}{path}", if https { "https" } else { "http" }).parse().map_err(bad_config)?;
        let authority = HeaderValue::from_str(authority).map_err(bad_config)?;
        Ok(Target { key, host: host.to_owned(), port, https, path, absolute, authority })
    }
}

/// An idle connection kept for reuse: its authority, its sender, and when it went idle.
pub(super) struct Pooled {
    pub(super) key: Arc<str>,
    pub(super) sender: http1::SendRequest<HttpBody>,
    pub(super) idle_since: std::time::Instant,
}

/// What is known of HTTP/2 with one server.
pub(super) enum Http2Slot {
    /// The shared connection (a cheap clone each request).
    Open(http2::SendRequest<HttpBody>),
    /// The server chose `http/1.1` by ALPN: connections to it go to the HTTP/1.1 pool.
    Refused,
}

/// A connection's request half, of either version.
pub(super) enum Sender {
    Http1(http1::SendRequest<HttpBody>),
    Http2(http2::SendRequest<HttpBody>),
}

impl Sender {
    pub(super) async fn try_send_request(
        &mut self,
        request: Request<HttpBody>,
    ) -> Result<Response<Incoming>, hyper::client::conn::TrySendError<Request<HttpBody>>> {
        match self {
            Sender::Http1(s) => s.try_send_request(request).await,
            Sender::Http2(s) => s.try_send_request(request).await,
        }
    }

    pub(super) async fn send_request(
        &mut self,
        request: Request<HttpBody>,
    ) -> Result<Response<Incoming>, hyper::Error> {
        match self {
            Sender::Http1(s) => s.send_request(request).await,
            Sender::Http2(s) => s.send_request(request).await,
        }
    }
}

/// The connection a response arrived on. Handed back with [`Inner::release`] once that
/// response has been read to its end; dropped otherwise (the connection then closes).
pub(super) struct Lease {
    pub(super) key: Arc<str>,
    pub(super) sender: Sender,
}

impl Inner {
    /// Sends one request on a pooled or new connection; returns the response head (body
    /// unread) and the connection, to [`release`](Inner::release) once the body has ended.
    /// With an authorizer, the request carries its `Authorization` value and goes again after
    /// a refusal it answers with [`Verdict::Retry`](crate::transport::sse_http::authorizer::Verdict::Retry).
    pub(super) async fn request(
        &self,
        method: Method,
        target: &Target,
        session: Option<&str>,
        extra: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Result<(Response<Incoming>, Lease), TransportError> {
        use crate::transport::sse_http::authorizer::{Denial, Verdict, MAX_RETRIES};
        let Some(authorizer) = &self.config.authorizer else {
            return self.request_once(method, target, session, extra, body, Vec::new()).await;
        };
        let mut retries = 0;
        loop {
            let url = format!(
                "{}://{}{}",
                if target.https { "https" } else { "http" },
                target.host_header(),
                target.path.path()
            );
            let credentials = authorizer.0.authorization(method.as_str(), &url).await;
            let mut headers = Vec::new();
            if let Some(credentials) = &credentials {
                let sensitive = |value: &str| {
                    let mut value = HeaderValue::from_str(value).map_err(|_| bad_config("bad authorization value"))?;
                    value.set_sensitive(true);
                    Ok::<_, TransportError>(value)
                };
                headers.push((AUTHORIZATION, sensitive(&credentials.authorization)?));
                if let Some(proof) = &credentials.dpop {
                    headers.push((HeaderName::from_static("dpop"), sensitive(proof)?));
                }
            }
            let sent = self.request_once(method.clone(), target, session, extra, body.clone(), headers).await?;
            let status = sent.0.status();
            let challenges: Vec<String> = sent
                .0
                .headers()
                .get_all(hyper::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok().map(str::to_owned))
                .collect();
            let refused =
                status == StatusCode::UNAUTHORIZED || (status == StatusCode::FORBIDDEN && !challenges.is_empty());
            if !refused || retries >= MAX_RETRIES {
                return Ok(sent);
            }
            let (response, lease) = sent;
            let dpop_nonce = response.headers().get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let body_text = self.read_short(response.into_body(), lease).await;
            let refusal = Denial {
                status: status.as_u16(),
                challenges: &challenges,
                url: &self.config.url,
                sent: credentials.as_ref().map(|c| c.authorization.as_str()),
                dpop_nonce: dpop_nonce.as_deref(),
                retries,
            };
            match authorizer.0.refused(refusal).await {
                Verdict::Retry => retries += 1,
                Verdict::GiveUp(reason) => {
                    let message = if body_text.is_empty() { reason } else { format!("{reason} ({body_text})") };
                    return Err(TransportError::Http { status: status.as_u16(), message });
                }
            }
        }
    }

    /// Reads the short body of a refusal (at most 4 KiB, as text), releasing its connection
    /// when it ended.
    pub(super) async fn read_short(&self, body: Incoming, lease: Lease) -> String {
        let limited = http_body_util::Limited::new(body, 4096);
        match tokio::time::timeout(Duration::from_secs(5), limited.collect()).await {
            Ok(Ok(collected)) => {
                self.release(lease);
                String::from_utf8_lossy(&collected.to_bytes()).chars().take(300).collect()
            }
            _ => String::new(),
        }
    }

    pub(super) async fn request_once(
        &self,
        method: Method,
        target: &Target,
        session: Option<&str>,
        extra: &[(HeaderName, HeaderValue)],
        body: Bytes,
        authorization: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<(Response<Incoming>, Lease), TransportError> {
        let (mut sender, reused) = self.sender(target, true).await?;
        let mut request = Request::new(full(body));
        *request.method_mut() = method;
        if let Sender::Http2(_) = sender {
            // The authority goes in `:authority`, which replaces `Host` in HTTP/2.
            *request.uri_mut() = target.absolute.clone();
        } else {
            *request.uri_mut() = target.path.clone();
            request.headers_mut().insert(HOST, target.authority.clone());
        }
        let headers = request.headers_mut();
        if let Some(id) = session {
            headers.insert(SESSION_ID, HeaderValue::from_str(id).map_err(bad_config)?);
        }
        if let Some(v) = *self.version.lock().expect("client lock") {
            headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(v.as_str()));
        }
        for (name, value) in self.headers.iter().chain(extra) {
            headers.insert(name.clone(), value.clone());
        }
        for (name, value) in authorization {
            headers.insert(name, value);
        }
        let io = |e: hyper::Error| TransportError::Io(std::io::Error::other(e));
        let sent = tokio::time::timeout(self.config.request_timeout, sender.try_send_request(request))
            .await
            .map_err(|_| TransportError::Timeout)?;
        let response = match sent {
            Ok(response) => response,
            // A reused connection that the server closed before the request went out: the
            // request comes back unsent, so it goes again on a fresh connection.
            Err(mut e) if reused && e.message().is_some() => {
                let request = e.take_message().expect("checked above");
                sender = self.sender(target, false).await?.0;
                tokio::time::timeout(self.config.request_timeout, sender.send_request(request))
                    .await
                    .map_err(|_| TransportError::Timeout)?
                    .map_err(io)?
            }
            Err(e) => return Err(io(e.into_error())),
        };
        Ok((response, Lease { key: target.key.clone(), sender }))
    }

    /// A connection for a request to `target`: the shared HTTP/2 one, or with `reuse` a pooled
    /// HTTP/1.1 one, else a new one. The flag says whether it was reused (and so may have been
    /// closed by the server a moment ago).
    pub(super) async fn sender(&self, target: &Target, reuse: bool) -> Result<(Sender, bool), TransportError> {
        let Target { key, host, port, https, .. } = target;
        let may_be_http2 = if *https { self.config.http2 } else { self.config.http2_prior_knowledge };
        if may_be_http2 && self.config.reuse_connections {
            let mut shared = self.http2.lock().await;
            match shared.get(key) {
                Some(Http2Slot::Open(sender)) if reuse && !sender.is_closed() => {
                    return Ok((Sender::Http2(sender.clone()), true));
                }
                Some(Http2Slot::Refused) => {}
                _ => {
                    let sender = self.connect(host, *port, *https).await?;
                    let slot = match &sender {
                        Sender::Http2(sender) => Http2Slot::Open(sender.clone()),
                        Sender::Http1(_) => Http2Slot::Refused,
                    };
                    shared.insert(key.clone(), slot);
                    return Ok((sender, false));
                }
            }
        }
        if reuse {
            if let Some(sender) = self.pooled(key).await {
                return Ok((Sender::Http1(sender), true));
            }
        }
        Ok((self.connect(host, *port, *https).await?, false))
    }

    /// Puts the connection of a response that has been read to its end back in the pool.
    /// Only then: a connection still carrying a body (an open SSE stream) is never handed out,
    /// so no request waits behind a stream.
    /// An HTTP/2 lease is a clone of the shared connection's sender: nothing to give back.
    pub(super) fn release(&self, lease: Lease) {
        let Sender::Http1(sender) = lease.sender else { return };
        if !self.config.reuse_connections || sender.is_closed() || self.closed.load(Ordering::Acquire) {
            return;
        }
        let mut pool = self.pool.lock().expect("pool lock");
        if pool.len() < MAX_POOLED_CONNECTIONS {
            pool.push(Pooled { key: lease.key, sender, idle_since: std::time::Instant::now() });
        }
    }

    /// Reads a short body that carries no message (a 202, the legacy `Accepted`) to its end,
    /// then releases its connection; a body that is too long or too slow is dropped with it.
    pub(super) async fn drain(&self, body: Incoming, lease: Lease) {
        let limited = http_body_util::Limited::new(body, 64 * 1024);
        if let Ok(Ok(_)) = tokio::time::timeout(self.config.request_timeout, limited.collect()).await {
            self.release(lease);
        }
    }

    /// An idle pooled connection to `key`, ready for a request; stale ones are dropped.
    pub(super) async fn pooled(&self, key: &str) -> Option<http1::SendRequest<HttpBody>> {
        loop {
            let mut sender = {
                let mut pool = self.pool.lock().expect("pool lock");
                pool.retain(|p| !p.sender.is_closed() && p.idle_since.elapsed() < POOLED_CONNECTION_LIFETIME);
                let index = pool.iter().rposition(|p| *p.key == *key)?;
                pool.swap_remove(index).sender
            };
            // The body has ended; hyper marks the connection ready a moment later.
            if let Ok(Ok(())) = tokio::time::timeout(POOLED_READY_WAIT, sender.ready()).await {
                return Some(sender);
            }
        }
    }

    /// A new connection: TCP, then TLS for https, then the HTTP/2 handshake when the server
    /// chose `h2` by ALPN or prior knowledge is configured on plain http, else HTTP/1.1's.
    pub(super) async fn connect(&self, host: &str, port: u16, https: bool) -> Result<Sender, TransportError> {
        let connection = self.connector.open(https, host, port).await.map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut => TransportError::Timeout,
            _ => TransportError::Io(e),
        })?;
        let http2 = if https { connection.http2 } else { self.config.http2_prior_knowledge };
        self.handshake(connection.io, http2).await
    }

    /// The HTTP handshake on an open connection, and the task that drives the connection.
    pub(super) async fn handshake(
        &self,
        io: Box<dyn crate::transport::sse_http::connector::Io>,
        http2: bool,
    ) -> Result<Sender, TransportError> {
        if !http2 {
            return Ok(Sender::Http1(crate::transport::sse_http::connector::http1_handshake(io).await?.0));
        }
        let failed = |e: hyper::Error| TransportError::Io(std::io::Error::other(e));
        let io = TokioIo::new(io);
        let config = &self.config;
        let (sender, conn) = http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .initial_stream_window_size(config.http2_initial_stream_window_size)
            .initial_connection_window_size(config.http2_initial_connection_window_size)
            .max_header_list_size(config.http2_max_header_list_size)
            .handshake(io)
            .await
            .map_err(failed)?;
        crate::transport::task::spawn(async move {
            let _ = conn.await;
        });
        Ok(Sender::Http2(sender))
    }
}
