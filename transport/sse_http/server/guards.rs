//! The checks before a request reaches the MCP endpoint: `Host` and `Origin`, the protected
//! resource's bearer token, scopes and their 401/403 answers, the static bearer token's 401.
//!
//! Not here: the order they run in (`router.rs`), verifying tokens ([`crate::auth`]).

use std::sync::Arc;

use hyper::header::{HeaderName, HeaderValue, ALLOW, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};

use crate::transport::sse_http::bearer::{self, BearerCheck, BearerToken};

use super::config::{HostCheck, HttpServerConfig, OriginCheck};
use super::registry::Shared;
use super::reply::plain;
use crate::proto::jsonrpc::{self, Message};
use crate::proto::mcp_types::CallToolRequestParams;
use crate::transport::sse_http::{empty, full, host_of_authority, is_loopback_host, HttpBody};
use crate::transport::{
    principal::{Principal, Refusal},
    sse_http::resource::ProtectedResource,
};

pub(super) fn host_allowed(config: &HttpServerConfig, host: Option<&str>) -> bool {
    match &config.hosts {
        HostCheck::Any => true,
        HostCheck::Loopback(extra) => host.is_some_and(|h| {
            let name = host_of_authority(h);
            is_loopback_host(name) || extra.iter().any(|e| e.eq_ignore_ascii_case(name))
        }),
    }
}

pub(super) fn origin_allowed(config: &HttpServerConfig, origin: &str) -> bool {
    let listed = |list: &[String]| list.iter().any(|o| o.eq_ignore_ascii_case(origin));
    match &config.origins {
        OriginCheck::Any => true,
        OriginCheck::Only(list) => listed(list),
        OriginCheck::Loopback(list) => {
            listed(list)
                || origin.split_once("://").is_some_and(|(scheme, authority)| {
                    matches!(scheme, "http" | "https") && is_loopback_host(host_of_authority(authority))
                })
        }
    }
}

/// The principal of a request that passed the protected resource's verifier.
#[derive(Clone)]
pub(super) struct Authenticated(pub(super) Arc<Principal>);

/// The bearer token of a request, verified. `Err(None)`: no token at all.
pub(super) async fn authenticate<B>(
    resource: &ProtectedResource,
    req: &Request<B>,
) -> Result<Principal, Option<Refusal>> {
    let mut values = req.headers().get_all(AUTHORIZATION).iter();
    let Some(first) = values.next() else { return Err(None) };
    if values.next().is_some() {
        return Err(Some(Refusal::Malformed));
    }
    let value = first.as_bytes();
    let Some(scheme) = value.get(..7) else { return Err(None) };
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return Err(None);
    }
    let token = std::str::from_utf8(value[7..].trim_ascii()).map_err(|_| Some(Refusal::Malformed))?;
    if BearerToken::new(token).is_err() {
        return Err(Some(Refusal::Malformed));
    }
    resource.verifier().verify(token).await.map_err(Some)
}

/// The answer to a request refused by the protected resource: 401 (no or invalid token), 403
/// (insufficient scope), 503 (the authorization server could not be asked). The body names the
/// error, never the token.
pub(super) fn auth_refused(resource: &ProtectedResource, refusal: Option<&Refusal>) -> Response<HttpBody> {
    let status = refusal.map_or(401, Refusal::status);
    let (error, description) = match refusal {
        None => ("invalid_request", "Missing bearer token".to_owned()),
        // What failed between us and the authorization server is not the client's business.
        Some(Refusal::Unavailable(_)) => {
            ("temporarily_unavailable", "the authorization server could not be asked".to_owned())
        }
        Some(r) => (r.error_code().unwrap_or("temporarily_unavailable"), r.to_string()),
    };
    let body = serde_json::json!({"error": error, "error_description": description}).to_string();
    let mut response = Response::new(full(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::UNAUTHORIZED);
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(challenge) = resource.challenge(refusal).and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
    }
    response
}

/// The Protected Resource Metadata document (GET, HEAD), public.
pub(super) fn resource_metadata(resource: &ProtectedResource, method: &Method) -> Response<HttpBody> {
    if method != Method::GET && method != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        response.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let body = resource.metadata_document().to_string();
    let length = body.len();
    let mut response = Response::new(if method == Method::HEAD { empty() } else { full(body) });
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert(HeaderName::from_static("access-control-allow-origin"), HeaderValue::from_static("*"));
    response
}

/// For a protected server: the 403 for `messages` when the request's token lacks a scope one
/// of them needs (every scope needed by all of them, in one challenge).
#[allow(clippy::result_large_err)] // the error is the HTTP answer itself
pub(super) fn check_scopes<B>(
    shared: &Shared,
    req: &Request<B>,
    messages: &[Message],
) -> Result<(), Response<HttpBody>> {
    let Some(resource) = shared.config.protected_resource.as_ref().filter(|r| r.has_scope_rules()) else {
        return Ok(());
    };
    let Some(Authenticated(principal)) = req.extensions().get::<Authenticated>() else { return Ok(()) };
    let mut needed: Vec<String> = Vec::new();
    for message in messages {
        let Message::Request(request) = message else { continue };
        let tool = (request.method == "tools/call").then(|| called_tool(request)).flatten();
        for scope in resource.required_scopes(&request.method, tool.as_deref()) {
            if !needed.contains(&scope) {
                needed.push(scope);
            }
        }
    }
    resource.check_scopes(principal, needed).map_err(|refusal| auth_refused(resource, Some(&refusal)))
}

/// The tool a `tools/call` names.
pub(super) fn called_tool(request: &jsonrpc::Request) -> Option<String> {
    let params = request.params.as_ref()?;
    if let Some(call) = params.typed_as::<CallToolRequestParams>() {
        return Some(call.name.clone());
    }
    #[derive(serde::Deserialize)]
    struct Name {
        name: String,
    }
    let raw = params.to_raw().ok()?;
    serde_json::from_str::<Name>(raw.get()).ok().map(|n| n.name)
}

/// 401 with the challenge for `verdict`; nothing of the request is echoed.
pub(super) fn unauthorized(verdict: BearerCheck) -> Response<HttpBody> {
    let (challenge, body) = bearer::challenge(verdict);
    let mut response = Response::new(full(body));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
}
