//! The one place an HTTP client connection is opened: TCP without Nagle, then for https rustls
//! with Mozilla's roots (plus any extra ones) and ALPN, all under a connect timeout; the
//! HTTP/1.1 handshake with the task that drives the connection; and reading a response body
//! whole under a size cap. The one-shot clients (the verifier's JWKS and introspection fetches,
//! the OAuth client, the conformance runner's replay, record and check) and the HTTP client
//! transport all open their connections here.
//!
//! Not here: what is sent on a connection, pooling, redirects, retries, proxies (each caller's),
//! and the HTTP/2 handshake (only the transport speaks h2: [`Connection::http2`] tells it what
//! ALPN chose).

use std::io;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::AbortHandle;

/// A connection's byte stream: plain TCP or TLS over it.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// An open connection, before any HTTP.
pub struct Connection {
    /// The byte stream.
    pub io: Box<dyn Io>,
    /// The server chose `h2` by ALPN (only when [`Connector::offer_http2`] asked for it).
    pub http2: bool,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("http2", &self.http2).finish_non_exhaustive()
    }
}

/// How to open connections: the connect timeout and (feature `tls`) the TLS configuration.
/// Cheap to clone.
#[derive(Clone)]
pub struct Connector {
    connect_timeout: Duration,
    #[cfg(feature = "tls")]
    tls: std::sync::Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector").field("connect_timeout", &self.connect_timeout).finish_non_exhaustive()
    }
}

/// The default connect timeout (TCP and TLS together): 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}

impl Connector {
    /// Mozilla's roots, ALPN `http/1.1` alone, a connect timeout of 10 s. The TLS configuration
    /// is built once per process and shared.
    ///
    /// # Errors
    /// When rustls has no safe protocol version to offer (a broken build).
    pub fn new() -> io::Result<Connector> {
        #[cfg(feature = "tls")]
        {
            static SHARED: std::sync::OnceLock<std::sync::Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
            let tls = match SHARED.get() {
                Some(tls) => tls.clone(),
                None => {
                    let tls = super::tls::client_config(&[])?;
                    SHARED.get_or_init(|| tls).clone()
                }
            };
            Ok(Connector { connect_timeout: DEFAULT_CONNECT_TIMEOUT, tls })
        }
        #[cfg(not(feature = "tls"))]
        Ok(Connector { connect_timeout: DEFAULT_CONNECT_TIMEOUT })
    }

    /// [`Connector::new`], trusting `extra_roots` too (e.g. a test CA).
    ///
    /// # Errors
    /// When an extra root is not a valid certificate.
    #[cfg(feature = "tls")]
    pub fn with_roots(extra_roots: &[rustls_pki_types::CertificateDer<'static>]) -> io::Result<Connector> {
        if extra_roots.is_empty() {
            return Connector::new();
        }
        Ok(Connector { connect_timeout: DEFAULT_CONNECT_TIMEOUT, tls: super::tls::client_config(extra_roots)? })
    }

    /// Offer `h2` before `http/1.1` by ALPN on https (off by default); what the server chose
    /// is [`Connection::http2`]. Only for a caller that speaks HTTP/2 when it is chosen.
    #[must_use]
    pub fn offer_http2(self, on: bool) -> Connector {
        #[cfg(feature = "tls")]
        {
            let mut this = self;
            let alpn: Vec<Vec<u8>> =
                if on { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
            if this.tls.alpn_protocols != alpn {
                std::sync::Arc::make_mut(&mut this.tls).alpn_protocols = alpn;
            }
            this
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = on;
            self
        }
    }

    /// The time TCP and TLS together may take: 10 s by default.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Connector {
        self.connect_timeout = timeout;
        self
    }

    /// Opens a connection to `host:port` (no IPv6 brackets), with TLS for `https` (the
    /// certificate checked for `host`).
    ///
    /// # Errors
    /// The connection or the TLS handshake failed or took longer than the connect timeout
    /// ([`io::ErrorKind::TimedOut`]); https without the `tls` feature
    /// ([`io::ErrorKind::InvalidInput`]).
    pub async fn open(&self, https: bool, host: &str, port: u16) -> io::Result<Connection> {
        let timed_out =
            || io::Error::new(io::ErrorKind::TimedOut, format!("no connection within {:?}", self.connect_timeout));
        tokio::time::timeout(self.connect_timeout, self.open_untimed(https, host, port))
            .await
            .map_err(|_| timed_out())?
    }

    async fn open_untimed(&self, https: bool, host: &str, port: u16) -> io::Result<Connection> {
        let tcp = TcpStream::connect((host, port)).await?;
        let _ = tcp.set_nodelay(true);
        if !https {
            return Ok(Connection { io: Box::new(tcp), http2: false });
        }
        #[cfg(feature = "tls")]
        {
            let name = rustls_pki_types::ServerName::try_from(host.to_owned()).map_err(invalid)?;
            let stream = tokio_rustls::TlsConnector::from(self.tls.clone()).connect(name, tcp).await?;
            let http2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
            Ok(Connection { io: Box::new(stream), http2 })
        }
        #[cfg(not(feature = "tls"))]
        Err(invalid("https needs the `tls` feature"))
    }

    /// [`Connector::open`], then the HTTP/1.1 handshake (see [`http1_handshake`]).
    ///
    /// # Errors
    /// As [`Connector::open`], or the handshake failed.
    pub async fn http1<B>(&self, https: bool, host: &str, port: u16) -> io::Result<http1::SendRequest<B>>
    where
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let connection = self.open(https, host, port).await?;
        Ok(http1_handshake(connection.io).await?.0)
    }
}

/// The HTTP/1.1 handshake over `io`, and a task that drives the connection until it closes;
/// its handle aborts that task (dropping the handle does not).
///
/// # Errors
/// hyper's handshake failed.
pub async fn http1_handshake<B, IO>(io: IO) -> io::Result<(http1::SendRequest<B>, AbortHandle)>
where
    IO: Io,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (sender, connection) = http1::handshake(TokioIo::new(io)).await.map_err(io::Error::other)?;
    let task = crate::transport::task::spawn(async move {
        let _ = connection.await;
    });
    Ok((sender, task.abort_handle()))
}

/// Reads `body` whole, refusing one longer than `max_bytes`.
///
/// # Errors
/// The body broke off, or is longer than `max_bytes` (then the error says so, naming the cap).
pub async fn read_capped<B>(body: B, max_bytes: usize) -> io::Result<Bytes>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match http_body_util::Limited::new(body, max_bytes).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            Err(io::Error::new(io::ErrorKind::InvalidData, format!("the answer is larger than {max_bytes} bytes")))
        }
        Err(e) => Err(io::Error::other(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_over_the_cap_is_refused_naming_it_and_one_at_it_is_read() {
        let body = http_body_util::Full::new(Bytes::from_static(b"0123456789"));
        assert_eq!(read_capped(body.clone(), 10).await.unwrap(), Bytes::from_static(b"0123456789"));
        let refused = read_capped(body, 9).await.unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::InvalidData);
        assert_eq!(refused.to_string(), "the answer is larger than 9 bytes");
    }

    #[tokio::test]
    async fn open_reaches_a_listener_and_fails_once_it_is_gone() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connector = Connector::new().unwrap();
        let opened = connector.open(false, "127.0.0.1", port).await.unwrap();
        assert!(!opened.http2);
        drop(listener);
        assert!(connector.open(false, "127.0.0.1", port).await.is_err());
    }
}
