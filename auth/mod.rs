//! Authorization, the resource server's half: an MCP server over HTTP accepting OAuth 2.1
//! access tokens ([MCP 2025-11-25 "Authorization"](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization)
//! and its 2026-07-28 successor).
//!
//! - [`principal`]: [`Principal`] (who a verified token speaks for, as handlers see it in
//!   `Context::principal`) and [`Refusal`] (why a token was refused, with its HTTP answer).
//! - [`verifier`] (feature `http`): the [`TokenVerifier`] trait and [`StaticTokenVerifier`];
//!   with the feature `auth`, [`jwks`]: `JwtVerifier` (JWT access tokens against a JWKS, given
//!   or discovered from the issuer's metadata, kept by its `Cache-Control`; on `jwt`) and
//!   [`introspection`]: `IntrospectionVerifier` (RFC 7662; answers cached by token hash,
//!   concurrent checks of one token sharing one request).
//! - [`resource`] (feature `http`): [`ProtectedResource`], the policy the HTTP server applies
//!   (metadata document, challenges, scopes per method and per tool).
//!
//! The HTTP server (`transport::sse_http::server`) is the only caller: it verifies the bearer
//! token of every request to the MCP endpoints, answers 401/403 with the challenges built here,
//! serves the metadata, and hands the principal to the session. Nothing here logs, and no
//! type here holds a token once verification is over.
//!
//! The types the HTTP server needs live below it, so that the transport never imports this
//! module: [`principal`] at the transport layer (`transport::principal`, what
//! `Transport::principal` returns), [`verifier`] and [`resource`] beside the HTTP server
//! (`transport::sse_http`); they are re-exported here, where a server's author looks for them.
//!
//! Not here: the client's half (discovery, the authorization code flow, token storage), and
//! being an authorization server (issuing tokens).

pub use crate::transport::principal;

#[cfg(feature = "auth")]
mod answer_cache;
#[cfg(feature = "auth")]
mod fetch;
#[cfg(feature = "auth")]
pub mod introspection;
#[cfg(feature = "auth")]
pub mod jwks;
#[cfg(feature = "auth")]
pub mod jwt;
#[cfg(feature = "http")]
pub use crate::transport::sse_http::{resource, verifier};

pub use principal::{Principal, Refusal};

#[cfg(feature = "auth")]
pub use introspection::IntrospectionVerifier;
#[cfg(feature = "auth")]
pub use jwks::{BadUrl, JwtVerifier};
#[cfg(feature = "http")]
pub use resource::ProtectedResource;
#[cfg(feature = "http")]
pub use verifier::{StaticTokenVerifier, TokenVerifier, VerifyFuture};
