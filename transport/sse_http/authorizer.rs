//! The hook through which [`HttpClientTransport`](super::HttpClientTransport) gets the
//! `Authorization` header of each request and reports the server's refusals (401, and 403 with a
//! `WWW-Authenticate` challenge), so that an OAuth client (`client::oauth`) or any other
//! credential source can sit behind it.
//!
//! The transport asks [`Authorizer::authorization`] before every request (POST, GET, DELETE),
//! naming its method and URL, and sends the [`Credentials`] it gets: `Authorization` and, for a
//! sender-constrained token, the request's `DPoP` proof
//! ([RFC 9449](https://www.rfc-editor.org/rfc/rfc9449)), both marked sensitive. When the server answers 401, or
//! 403 with a challenge, the transport reads the short body, hands the status and the
//! `WWW-Authenticate` values to [`Authorizer::refused`], and sends the same request again if told
//! to ([`Verdict::Retry`]), at most [`MAX_RETRIES`] times per request; otherwise the request
//! fails with [`TransportError::Http`](crate::transport::TransportError::Http) carrying the
//! refusal's status and the authorizer's reason.
//!
//! Not here: what a token is, how it is obtained or stored (the authorizer's business); the
//! transport never logs or shows a credential.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, as the object-safe [`Authorizer`] methods return.
pub type AuthFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How many times one request is sent again after refusals the authorizer answered with
/// [`Verdict::Retry`].
pub const MAX_RETRIES: u32 = 4;

/// A refusal of one request by the server.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Denial<'a> {
    /// 401 or 403.
    pub status: u16,
    /// Every `WWW-Authenticate` value of the response, as sent.
    pub challenges: &'a [String],
    /// The endpoint the request went to.
    pub url: &'a str,
    /// The `Authorization` value the refused request carried, if any: an authorizer that has
    /// meanwhile obtained another credential (a concurrent request's refusal) can retry at once.
    pub sent: Option<&'a str>,
    /// The response's `DPoP-Nonce`, if any (RFC 9449 §9: the nonce the next proof must carry).
    pub dpop_nonce: Option<&'a str>,
    /// How many times this request had already been sent again after refusals (0 for its first
    /// refusal).
    pub retries: u32,
}

/// What the transport does after a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Send the request again; [`Authorizer::authorization`] is asked again first.
    Retry,
    /// Fail the request; the text says why (no secret in it: it may be shown and logged).
    GiveUp(String),
}

/// What one request carries.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// The `Authorization` value (`Bearer …`, `DPoP …`).
    pub authorization: String,
    /// The `DPoP` proof for this request (RFC 9449 §7.1), for a DPoP-bound token.
    pub dpop: Option<String>,
}

impl Credentials {
    /// `Authorization: Bearer <token>`.
    pub fn bearer(token: &str) -> Credentials {
        Credentials { authorization: format!("Bearer {token}"), dpop: None }
    }

    /// Any `Authorization` value, with a `DPoP` proof or none.
    pub fn new(authorization: String, dpop: Option<String>) -> Credentials {
        Credentials { authorization, dpop }
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(<redacted>)")
    }
}

/// A source of credentials for one HTTP endpoint. See the module docs.
pub trait Authorizer: Send + Sync + 'static {
    /// The credentials for the next request, `method` to `url` (without query), or `None` to
    /// send none. May refresh a credential that is about to expire.
    fn authorization<'a>(&'a self, method: &'a str, url: &'a str) -> AuthFuture<'a, Option<Credentials>>;

    /// The server refused a request; decides whether to send it again (after obtaining a
    /// credential, which may take a whole authorization flow).
    fn refused<'a>(&'a self, refusal: Denial<'a>) -> AuthFuture<'a, Verdict>;
}

/// An [`Authorizer`] held by an [`HttpClientConfig`](super::HttpClientConfig); `Debug` shows
/// nothing of it.
#[derive(Clone)]
pub struct SharedAuthorizer(pub Arc<dyn Authorizer>);

impl std::fmt::Debug for SharedAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedAuthorizer(..)")
    }
}
