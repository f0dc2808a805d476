//! The HTTP server under test, as the runner reaches it: its URL taken apart (scheme, host,
//! port, authority, path) and a connection opened to it (TCP without Nagle, rustls for
//! `https://` with feature `tls`), by the library's [`Connector`]. `check` and
//! `replay --server-url` both start here.
//!
//! Not here: the HTTP handshake over the connection and what is sent on it (each caller's).

use mcpwire::transport::sse_http::connector::Connector;
pub use mcpwire::transport::sse_http::connector::Io;

/// Where the server under test listens.
#[derive(Clone)]
pub struct Endpoint {
    /// `https://`.
    pub https: bool,
    /// The host, without IPv6 brackets.
    pub host: String,
    /// The port, the scheme's default when the URL has none.
    pub port: u16,
    /// `host[:port]` as the URL spells it (the `Host` header).
    pub authority: String,
    /// The path and query (`/` when the URL has none).
    pub path: String,
    connector: Connector,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("authority", &self.authority).field("path", &self.path).finish()
    }
}

impl Endpoint {
    /// The endpoint at `url`; `flag` names the option it came from, for the error.
    ///
    /// # Errors
    /// A URL that is not `http://` or `https://` with a host, or `https://` without feature `tls`.
    pub fn parse(url: &str, flag: &str) -> Result<Endpoint, String> {
        let uri: hyper::Uri = url.parse().map_err(|e| format!("{flag} {url}: {e}"))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(format!("{flag} {url}: http:// or https:// expected")),
        };
        let authority = uri.authority().ok_or_else(|| format!("{flag} {url}: no host"))?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path = uri.path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
        let connector = Connector::new().map_err(|e| e.to_string())?;
        #[cfg(not(feature = "tls"))]
        if https {
            return Err("https needs the `tls` feature".into());
        }
        Ok(Endpoint { https, host, port, authority: authority.as_str().to_owned(), path, connector })
    }

    /// The URL's origin (`http://host:port`), the one a same-origin page would send.
    pub fn origin(&self) -> String {
        format!("{}://{}", if self.https { "https" } else { "http" }, self.authority)
    }

    /// A new connection to the endpoint.
    ///
    /// # Errors
    /// The connection or the TLS handshake failed, naming the endpoint.
    pub async fn open(&self) -> Result<Box<dyn Io>, String> {
        // A TLS failure's message says it is one (rustls' own words).
        let connection = self.connector.open(self.https, &self.host, self.port).await;
        Ok(connection.map_err(|e| format!("cannot connect to {}: {e}", self.authority))?.io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_taken_apart() {
        let e = Endpoint::parse("http://[::1]:8080/mcp?x=1", "--url").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.authority.as_str(), e.path.as_str()),
            ("::1", 8080, "[::1]:8080", "/mcp?x=1")
        );
        assert_eq!(e.origin(), "http://[::1]:8080");
        let e = Endpoint::parse("http://localhost", "--url").unwrap();
        assert_eq!((e.port, e.path.as_str()), (80, "/"));
        assert!(Endpoint::parse("ftp://x/mcp", "--server-url").unwrap_err().starts_with("--server-url ftp://x/mcp"));
    }
}
