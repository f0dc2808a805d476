//! The checks before a request reaches the MCP endpoint: `Host` and `Origin`, the protected
//! resource's bearer token, scopes and their 401/403 answers, the static bearer token's 401.
//!
//! Not here: the order they run in (`router.rs`), verifying tokens ([`crate::auth`]).

use std::sync::Arc;

use hyper::header::{HeaderName, HeaderValue, ALLOW, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::http::Extensions;
use hyper::{Method, Request, Response, StatusCode};

use crate::transport::sse_http::bearer::{self, BearerCheck, BearerToken};

use super::registry::Shared;
use super::reply::plain;
use crate::proto::jsonrpc::{self, Message};
use crate::proto::mcp_types::CallToolRequestParams;
use crate::transport::sse_http::{empty, full, HttpBody};
use crate::transport::{
    principal::{Principal, Refusal},
    sse_http::resource::ProtectedResource,
};

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
pub(super) fn check_scopes(
    shared: &Shared,
    extensions: &Extensions,
    messages: &[Message],
) -> Result<(), Response<HttpBody>> {
    let Some(resource) = shared.config.protected_resource.as_ref().filter(|r| r.has_scope_rules()) else {
        return Ok(());
    };
    let Some(Authenticated(principal)) = extensions.get::<Authenticated>() else { return Ok(()) };
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

#[cfg(test)]
mod tests {
    //! The guards' answers, built without a request on the wire: status, challenge, body.

    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use http_body_util::BodyExt;

    use super::*;
    use crate::transport::sse_http::verifier::StaticTokenVerifier;

    fn open(response: Response<HttpBody>) -> (u16, hyper::HeaderMap, serde_json::Value) {
        let (parts, body) = response.into_parts();
        let mut collect = pin!(body.collect());
        let Poll::Ready(Ok(collected)) = collect.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
            panic!("a built body is complete at once")
        };
        let bytes = collected.to_bytes();
        let json = match serde_json::from_slice(&bytes) {
            _ if bytes.is_empty() => serde_json::Value::Null,
            Ok(json) => json,
            Err(_) => serde_json::Value::String(String::from_utf8_lossy(&bytes).into_owned()),
        };
        (parts.status.as_u16(), parts.headers, json)
    }

    fn resource() -> ProtectedResource {
        let verifier = Arc::new(StaticTokenVerifier::new("t0ken").unwrap());
        ProtectedResource::new("https://mcp.example/mcp", verifier).authorization_server("https://as.example")
    }

    #[test]
    fn a_missing_or_wrong_static_token_is_401_with_its_challenge() {
        let (status, headers, body) = open(unauthorized(BearerCheck::Missing));
        assert_eq!((status, headers["www-authenticate"].to_str().unwrap()), (401, "Bearer"));
        assert_eq!(body["error"], "invalid_request");
        let (status, headers, body) = open(unauthorized(BearerCheck::Invalid));
        assert_eq!((status, headers["www-authenticate"].to_str().unwrap()), (401, r#"Bearer error="invalid_token""#));
        assert_eq!(body["error"], "invalid_token");
    }

    #[test]
    fn the_protected_resource_answers_401_403_503_by_refusal() {
        let resource = resource();
        let (status, headers, body) = open(auth_refused(&resource, None));
        assert_eq!(status, 401);
        let challenge = headers["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.starts_with(
                r#"Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp""#
            ),
            "{challenge}"
        );
        assert!(!challenge.contains("error="), "no token: no error code in the challenge");
        assert_eq!(body["error"], "invalid_request");

        let (status, headers, body) = open(auth_refused(&resource, Some(&Refusal::Expired)));
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_token")));
        assert!(headers["www-authenticate"].to_str().unwrap().contains(r#"error="invalid_token""#));

        let scope = Refusal::InsufficientScope { required: vec!["mcp:tools".into(), "mcp:admin".into()] };
        let (status, headers, body) = open(auth_refused(&resource, Some(&scope)));
        assert_eq!((status, body["error"].as_str()), (403, Some("insufficient_scope")));
        assert!(headers["www-authenticate"].to_str().unwrap().contains(r#"scope="mcp:tools mcp:admin""#));

        // What failed between us and the authorization server is not told, and has no challenge.
        let down = Refusal::Unavailable("connect 10.0.0.7:443: refused".into());
        let (status, headers, body) = open(auth_refused(&resource, Some(&down)));
        assert_eq!((status, body["error"].as_str()), (503, Some("temporarily_unavailable")));
        assert!(!body.to_string().contains("10.0.0.7"));
        assert!(headers.get("www-authenticate").is_none());
    }

    #[test]
    fn the_metadata_document_is_public_get_and_head_only() {
        let resource = resource();
        let (status, headers, body) = open(resource_metadata(&resource, &Method::GET));
        assert_eq!((status, headers["access-control-allow-origin"].to_str().unwrap()), (200, "*"));
        assert_eq!(body["resource"], "https://mcp.example/mcp");
        assert_eq!(body["authorization_servers"][0], "https://as.example");
        let length: usize = headers["content-length"].to_str().unwrap().parse().unwrap();
        assert_eq!(length, body.to_string().len());
        let (status, head_headers, head_body) = open(resource_metadata(&resource, &Method::HEAD));
        assert_eq!((status, head_body), (200, serde_json::Value::Null));
        assert_eq!(head_headers["content-length"], headers["content-length"], "HEAD: the length GET would send");
        let (status, headers, _) = open(resource_metadata(&resource, &Method::POST));
        assert_eq!((status, headers["allow"].to_str().unwrap()), (405, "GET, HEAD"));
    }
}
