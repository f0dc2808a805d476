//! The [`TokenVerifier`] trait the HTTP server calls for every request's bearer token, and
//! the simplest implementation, [`StaticTokenVerifier`] (one shared secret, as
//! `HttpServerConfig::bearer_token` has always allowed).
//!
//! The other implementations: [`JwtVerifier`](crate::auth::jwks::JwtVerifier) (JWT access tokens against the
//! authorization server's JWKS) and [`IntrospectionVerifier`](crate::auth::introspection::IntrospectionVerifier) (RFC 7662).
//! Not here: scopes per request (the server checks them against the principal, see
//! [`super::resource`]), challenges.

use std::future::Future;
use std::pin::Pin;

use super::bearer::{BadToken, BearerToken};
use crate::transport::principal::{Principal, Refusal};

/// What [`TokenVerifier::verify`] returns.
pub type VerifyFuture<'a> = Pin<Box<dyn Future<Output = Result<Principal, Refusal>> + Send + 'a>>;

/// Checks one bearer token and says whom it speaks for.
///
/// An implementation must check that the token was issued for this resource (its audience)
/// and is still valid; the server checks scopes itself against [`Principal::scopes`]. It must
/// never log the token or put it in a [`Refusal`].
///
/// # Cancel safety
/// The server drops the future when the client goes away; an implementation that shares work
/// between calls (a key fetch) must leave that work usable by the next call.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` (the text after `Bearer `).
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a>;
}

/// One static secret: a token equal to it (compared in constant time) is accepted as
/// `principal`; any other is [`Refusal::Inactive`].
#[derive(Debug, Clone)]
pub struct StaticTokenVerifier {
    token: BearerToken,
    principal: Principal,
}

impl StaticTokenVerifier {
    /// A verifier accepting `token` only, as a principal with no subject and no scopes.
    ///
    /// # Errors
    /// [`BadToken`] for a token a header cannot carry.
    pub fn new(token: impl Into<String>) -> Result<StaticTokenVerifier, BadToken> {
        Ok(StaticTokenVerifier { token: BearerToken::new(token)?, principal: Principal::default() })
    }

    /// The principal the token stands for (its subject, scopes, audience).
    pub fn principal(mut self, principal: Principal) -> StaticTokenVerifier {
        self.principal = principal;
        self
    }
}

impl TokenVerifier for StaticTokenVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        let verdict =
            if self.token.matches(token.as_bytes()) { Ok(self.principal.clone()) } else { Err(Refusal::Inactive) };
        Box::pin(std::future::ready(verdict))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_static_verifier_accepts_its_token_only() {
        let verifier = StaticTokenVerifier::new("s3cret").unwrap().principal(Principal::new(Some("ops".into())));
        assert_eq!(verifier.verify("s3cret").await.unwrap().subject.as_deref(), Some("ops"));
        assert_eq!(verifier.verify("s3cre").await.unwrap_err(), Refusal::Inactive);
        assert!(!format!("{verifier:?}").contains("s3cret"));
    }
}
