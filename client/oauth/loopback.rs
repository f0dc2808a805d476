//! The [`AuthorizationHandler`] of a command-line or desktop host: a redirect listener on
//! 127.0.0.1 ([RFC 8252 §7.3](https://www.rfc-editor.org/rfc/rfc8252#section-7.3)). The host's
//! `open` callback shows the authorization URL (opens a browser, prints it); the user's browser
//! comes back to `http://127.0.0.1:PORT/PATH?code=…&state=…`, and the listener answers it with a
//! short page and hands the parameters on. A request to another path, or one whose `state` is
//! not the request's, gets 400 and the listener keeps waiting (another tab, a stale redirect).
//!
//! Not here: opening a browser (the host's callback), a timeout (drop the future, or wrap it in
//! one), TLS (loopback redirects are plain http by RFC 8252).

use std::sync::Arc;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use url::Url;

use super::authorization::{AuthorizationHandler, AuthorizationRequest, AuthorizationResponse};
use super::{AuthError, AuthFuture};

/// Largest redirect request read: 16 KiB (a request line with a code and a few headers).
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// A redirect listener on 127.0.0.1. See the module docs.
pub struct LoopbackRedirect {
    listener: TcpListener,
    path: String,
    redirect_uri: String,
    open: Arc<dyn Fn(&Url) + Send + Sync>,
}

impl std::fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackRedirect").field("redirect_uri", &self.redirect_uri).finish_non_exhaustive()
    }
}

impl LoopbackRedirect {
    /// Listens on `127.0.0.1:port` (0 for any free port) for redirects to `path`; `open` is
    /// called with each authorization URL. Put [`LoopbackRedirect::redirect_uri`] in
    /// [`OAuthConfig::redirect_uri`](super::OAuthConfig::redirect_uri).
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn bind(
        port: u16,
        path: &str,
        open: impl Fn(&Url) + Send + Sync + 'static,
    ) -> std::io::Result<LoopbackRedirect> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        let path = format!("/{}", path.trim_start_matches('/'));
        let redirect_uri = format!("http://127.0.0.1:{port}{path}");
        Ok(LoopbackRedirect { listener, path, redirect_uri, open: Arc::new(open) })
    }

    /// The redirect URI this listener answers.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits for the redirect that carries `state`.
    async fn wait(&self, state: &str) -> Result<AuthorizationResponse, AuthError> {
        loop {
            let (mut tcp, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| AuthError::Authorization(format!("the redirect listener failed: {e}")))?;
            let Some(target) = read_request_target(&mut tcp).await else { continue };
            let Ok(url) = Url::parse(&format!("http://127.0.0.1{target}")) else { continue };
            let response = AuthorizationResponse::from_redirect(&url);
            if url.path() != self.path || response.state.as_deref() != Some(state) {
                let _ = tcp.write_all(&page(400, "This is not the redirect the application is waiting for.")).await;
                continue;
            }
            let text = if response.error.is_some() {
                "Authorization was refused. You can close this window."
            } else {
                "Authorization is complete. You can close this window."
            };
            let _ = tcp.write_all(&page(200, text)).await;
            let _ = tcp.shutdown().await;
            return Ok(response);
        }
    }
}

/// The target of a `GET` request line, once the head has arrived; `None` for anything else.
async fn read_request_target(tcp: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tcp.read(&mut chunk).await.ok()?;
        if n == 0 || head.len() + n > MAX_REQUEST_BYTES {
            return None;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let line = head.split(|&b| b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    (method == "GET" && target.starts_with('/')).then(|| target.to_owned())
}

fn page(status: u16, text: &str) -> Vec<u8> {
    let reason = if status == 200 { "OK" } else { "Bad Request" };
    let body = format!("<!doctype html><title>mcpwire</title><p>{text}</p>\n");
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\ncache-control: no-store\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

impl AuthorizationHandler for LoopbackRedirect {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> AuthFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin(async move {
            (self.open)(&request.url);
            self.wait(&request.state).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::oauth::Secret;

    async fn get(url: &str) -> String {
        let url = Url::parse(url).unwrap();
        let mut tcp = tokio::net::TcpStream::connect((url.host_str().unwrap(), url.port().unwrap())).await.unwrap();
        let target = format!("{}?{}", url.path(), url.query().unwrap_or(""));
        tcp.write_all(format!("GET {target} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").as_bytes()).await.unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn the_redirect_with_the_right_state_is_taken_and_others_are_refused() {
        let (opened_tx, mut opened) = tokio::sync::mpsc::unbounded_channel::<Url>();
        let listener = LoopbackRedirect::bind(0, "callback", move |url| {
            let _ = opened_tx.send(url.clone());
        })
        .await
        .unwrap();
        let redirect_uri = listener.redirect_uri().to_owned();
        assert!(redirect_uri.starts_with("http://127.0.0.1:") && redirect_uri.ends_with("/callback"));
        let request = AuthorizationRequest {
            url: Url::parse("https://as.example/authorize?state=s-1").unwrap(),
            redirect_uri: redirect_uri.clone(),
            state: "s-1".into(),
        };
        let browser = tokio::spawn(async move {
            let shown = opened.recv().await.unwrap();
            assert_eq!(shown.as_str(), "https://as.example/authorize?state=s-1");
            let stale = get(&format!("{redirect_uri}?code=old&state=s-0")).await;
            let elsewhere = get(&redirect_uri.replace("/callback", "/favicon.ico?state=s-1")).await;
            let right = get(&format!("{redirect_uri}?code=c-1&state=s-1&iss=https%3A%2F%2Fas.example")).await;
            (stale, elsewhere, right)
        });
        let response = listener.authorize(&request).await.unwrap();
        assert_eq!(response.code.as_ref().map(Secret::expose), Some("c-1"));
        assert_eq!(response.iss.as_deref(), Some("https://as.example"));
        let (stale, elsewhere, right) = browser.await.unwrap();
        assert!(stale.starts_with("HTTP/1.1 400"), "{stale}");
        assert!(elsewhere.starts_with("HTTP/1.1 400"), "{elsewhere}");
        assert!(right.starts_with("HTTP/1.1 200") && right.contains("complete"), "{right}");
    }
}
