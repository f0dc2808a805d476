//! The few HTTP exchanges an OAuth client makes (metadata GETs, form POSTs to the token and
//! registration endpoints, the GET of an authorization URL), each on a connection of its own
//! opened by the shared [`Connector`]: they are rare, so no pool. https with the `tls` feature
//! (the same roots as the MCP transport). Redirects are never followed: a metadata document or token answer that redirects
//! is refused, and the `Location` of an authorization endpoint is what its caller wants.
//!
//! Not here: what the bodies mean (discovery, registration, token), retries.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, LOCATION};
use hyper::{Method, Request, StatusCode};
use url::Url;

use crate::transport::sse_http::connector::{read_capped, Connector};

use super::{AuthError, Secret};

/// Largest body read from an authorization server: 1 MiB.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// An answer, read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) location: Option<String>,
    /// `DPoP-Nonce` (RFC 9449 §8).
    pub(crate) dpop_nonce: Option<String>,
    /// Every `WWW-Authenticate` value.
    pub(crate) challenges: Vec<String>,
    pub(crate) body: Bytes,
}

impl Answer {
    /// The body as JSON of type `T`, for a 2xx answer.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self, what: &str) -> Result<T, AuthError> {
        serde_json::from_slice(&self.body).map_err(|e| AuthError::Malformed(format!("{what}: {e}")))
    }
}

/// How the OAuth client reaches servers: timeouts and (with `tls`) extra trusted roots.
#[derive(Clone)]
pub(crate) struct HttpClient {
    timeout: Duration,
    connector: Connector,
}

impl HttpClient {
    pub(crate) fn new(
        timeout: Duration,
        #[cfg(feature = "tls")] extra_roots: &[rustls_pki_types::CertificateDer<'static>],
    ) -> Result<HttpClient, AuthError> {
        #[cfg(feature = "tls")]
        let connector = Connector::with_roots(extra_roots);
        #[cfg(not(feature = "tls"))]
        let connector = Connector::new();
        // The whole exchange is under `timeout` already: the connection gets no shorter one.
        let connector = connector.map_err(|e| AuthError::Config(format!("tls: {e}")))?.connect_timeout(timeout);
        Ok(HttpClient { timeout, connector })
    }

    /// GET `url`, accepting JSON.
    pub(crate) async fn get(&self, url: &Url) -> Result<Answer, AuthError> {
        self.send(Method::GET, url, &[(ACCEPT, HeaderValue::from_static("application/json"))], Bytes::new()).await
    }

    /// POST `form` (`application/x-www-form-urlencoded`) to `url`, with HTTP Basic credentials
    /// and a `DPoP` proof when given.
    pub(crate) async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        basic: Option<(&str, &Secret)>,
        dpop: Option<&str>,
    ) -> Result<Answer, AuthError> {
        let body: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let mut headers = vec![
            (CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded")),
            (ACCEPT, HeaderValue::from_static("application/json")),
        ];
        if let Some((id, secret)) = basic {
            headers.push((AUTHORIZATION, basic_authorization(id, secret)?));
        }
        if let Some(proof) = dpop {
            let mut value = HeaderValue::from_str(proof)
                .map_err(|_| AuthError::Config("a dpop proof a header cannot carry".into()))?;
            value.set_sensitive(true);
            headers.push((HeaderName::from_static("dpop"), value));
        }
        self.send(Method::POST, url, &headers, Bytes::from(body)).await
    }

    /// POST `json` to `url`.
    pub(crate) async fn post_json(&self, url: &Url, json: &serde_json::Value) -> Result<Answer, AuthError> {
        let headers = [
            (CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (ACCEPT, HeaderValue::from_static("application/json")),
        ];
        self.send(Method::POST, url, &headers, Bytes::from(json.to_string())).await
    }

    async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Result<Answer, AuthError> {
        let exchange = self.exchange(method, url, headers, body);
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| AuthError::Http(format!("{}: timed out", without_query(url))))?
    }

    async fn exchange(
        &self,
        method: Method,
        url: &Url,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Result<Answer, AuthError> {
        let failed = |e: &dyn std::fmt::Display| AuthError::Http(format!("{}: {e}", without_query(url)));
        let host = url.host_str().ok_or_else(|| failed(&"no host"))?.trim_start_matches('[').trim_end_matches(']');
        let port = url.port_or_known_default().ok_or_else(|| failed(&"no port"))?;
        let https = match url.scheme() {
            "http" => false,
            #[cfg(feature = "tls")]
            "https" => true,
            other => return Err(failed(&format!("unsupported scheme {other}"))),
        };
        let mut sender = self.connector.http1(https, host, port).await.map_err(|e| failed(&e))?;
        let mut target = url.path().to_owned();
        if let Some(query) = url.query() {
            target.push('?');
            target.push_str(query);
        }
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = target.parse().map_err(|e| failed(&e))?;
        let authority = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str().unwrap_or(host)),
            None => url.host_str().unwrap_or(host).to_owned(),
        };
        request.headers_mut().insert(HOST, HeaderValue::from_str(&authority).map_err(|e| failed(&e))?);
        for (name, value) in headers {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        let response = sender.send_request(request).await.map_err(|e| failed(&e))?;
        let status = response.status();
        let location = response.headers().get(LOCATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let dpop_nonce = response.headers().get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let challenges = response
            .headers()
            .get_all(hyper::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        let body = read_capped(response.into_body(), MAX_BODY_BYTES).await.map_err(|e| failed(&e))?;
        Ok(Answer { status, location, dpop_nonce, challenges, body })
    }
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1), marked sensitive.
pub(crate) fn basic_authorization(id: &str, secret: &Secret) -> Result<HeaderValue, AuthError> {
    use base64::Engine as _;
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(id), encode(secret.expose()));
    let mut value = HeaderValue::from_str(&format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
        .map_err(|_| AuthError::Config("client credentials a header cannot carry".into()))?;
    value.set_sensitive(true);
    Ok(value)
}

/// A URL without its query and fragment, for error messages (a query may carry a code).
pub(crate) fn without_query(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}
