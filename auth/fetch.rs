//! The few HTTP requests a verifier makes to its authorization server: GET a JWKS document,
//! POST an introspection form. One connection per request, opened by the shared
//! [`Connector`] (http, or https through rustls with Mozilla's roots when the `tls` feature is
//! on), a timeout on the whole exchange, a cap on the answer's size.
//!
//! Not here: connection pooling, redirects, proxies, retries (the callers decide when to ask
//! again). Nothing here logs; a request's headers (which may hold client credentials) are never
//! part of an error.

use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Uri};

use crate::transport::sse_http::connector::{read_capped, Connector};
use crate::transport::sse_http::full;

/// Largest answer read from an authorization server: 1 MiB.
pub(crate) const MAX_ANSWER_BYTES: usize = 1 << 20;

/// A request to send: method, URL, extra headers, body.
pub(crate) struct Outgoing<'a> {
    pub method: Method,
    pub url: &'a Uri,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
}

/// Sends `request` and reads the answer: status and body. `Err` is a short reason (no
/// credential in it).
pub(crate) async fn send(request: Outgoing<'_>, timeout: Duration) -> Result<(u16, Bytes), String> {
    send_for_headers(request, timeout).await.map(|(status, _, body)| (status, body))
}

/// [`send`], with the answer's headers.
pub(crate) async fn send_for_headers(
    request: Outgoing<'_>,
    timeout: Duration,
) -> Result<(u16, hyper::HeaderMap, Bytes), String> {
    match tokio::time::timeout(timeout, exchange(request, timeout)).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {timeout:?}")),
    }
}

async fn exchange(request: Outgoing<'_>, timeout: Duration) -> Result<(u16, hyper::HeaderMap, Bytes), String> {
    let url = request.url;
    let https = match url.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err(format!("{url}: not an http(s) URL")),
    };
    let host = url.host().ok_or_else(|| format!("{url}: no host"))?.to_owned();
    let port = url.port_u16().unwrap_or(if https { 443 } else { 80 });
    let authority = url.authority().map(|a| a.as_str().to_owned()).unwrap_or_else(|| host.clone());
    let tcp_host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let path = url.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut builder = Request::builder()
        .method(request.method)
        .uri(path)
        .header(HOST, authority)
        .header(ACCEPT, HeaderValue::from_static("application/json"));
    for (name, value) in request.headers {
        builder = builder.header(name, value);
    }
    if !request.body.is_empty() && !builder.headers_ref().is_some_and(|h| h.contains_key(CONTENT_TYPE)) {
        builder = builder.header(CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    let http_request = builder.body(full(request.body)).map_err(|_| format!("{url}: a header cannot be sent"))?;
    // The whole exchange is under `timeout` already: the connection gets no shorter one.
    let connector = Connector::new().map_err(|e| format!("{url}: {e}"))?.connect_timeout(timeout);
    let mut sender = connector.http1(https, &tcp_host, port).await.map_err(|e| format!("{url}: {e}"))?;
    let response = sender.send_request(http_request).await.map_err(|e| format!("{url}: {e}"))?;
    let status = response.status().as_u16();
    let (parts, body) = response.into_parts();
    let body = read_capped(body, MAX_ANSWER_BYTES)
        .await
        .map_err(|_| format!("the answer is unreadable or larger than {MAX_ANSWER_BYTES} bytes"))?;
    Ok((status, parts.headers, body))
}

/// `application/x-www-form-urlencoded` encoding of one value (RFC 6749 Appendix B).
pub(crate) fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(byte as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::form_encode;

    #[test]
    fn form_values_are_percent_encoded() {
        assert_eq!(form_encode("a b+c/d=e~"), "a+b%2Bc%2Fd%3De~");
        assert_eq!(form_encode("é"), "%C3%A9");
    }
}
