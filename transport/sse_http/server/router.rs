//! The entry of every request: the guards in order (`Host`, `Origin`, the token), then the
//! handler its path and method name (POST, GET, DELETE on the endpoint, the legacy paths, the
//! extra routes, the protected resource's metadata), 404 otherwise.
//!
//! Not here: the handlers themselves.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use hyper::header::{HeaderValue, AUTHORIZATION, HOST, ORIGIN};
use hyper::{Method, Request, Response, StatusCode};

use crate::transport::sse_http::bearer;
use crate::transport::sse_http::failed_tokens;
use crate::transport::sse_http::service::RequestBody;
use crate::transport::sse_http::token_expiry;

use super::get_delete::{delete, get};
use super::guards::{
    auth_refused, authenticate, host_allowed, origin_allowed, resource_metadata, unauthorized, Authenticated,
};
use super::legacy::{legacy_get, legacy_post};
use super::post::post;
use super::registry::Shared;
use super::reply::{header, method_not_allowed, plain, rpc_error, TRANSPORT_ERROR};
use super::routes_served::serve_route;
use crate::transport::sse_http::resource::ProtectedResource;
use crate::transport::sse_http::HttpBody;

pub(in crate::transport::sse_http) async fn handle(
    shared: Arc<Shared>,
    req: Request<RequestBody>,
) -> Response<HttpBody> {
    let config = &shared.config;
    // HTTP/2 carries `:authority` in the URI rather than a `Host` header.
    let host = header(&req, HOST).or_else(|| req.uri().authority().map(|a| a.as_str()));
    if !host_allowed(config, host) {
        return rpc_error(StatusCode::FORBIDDEN, TRANSPORT_ERROR, "Forbidden: Host not allowed");
    }
    if let Some(origin) = header(&req, ORIGIN) {
        if !origin_allowed(config, origin) {
            return rpc_error(StatusCode::FORBIDDEN, TRANSPORT_ERROR, "Forbidden: Origin not allowed");
        }
    }
    let path = req.uri().path().to_owned();
    let legacy_path = config.legacy_sse
        && !config.stateless
        && (path == config.legacy_sse_path || path == config.legacy_message_path);
    let route = config.routes.iter().find(|r| r.path == path);
    let mut req = req;
    if let Some(resource) = &config.protected_resource {
        if path == ProtectedResource::metadata_path(&config.path)
            || path == crate::transport::sse_http::resource::METADATA_PATH
        {
            return resource_metadata(resource, req.method());
        }
        if path == config.path || legacy_path || route.is_some_and(|r| r.guarded) {
            match authenticate(resource, &req).await {
                Ok(principal) => {
                    // Checked here too, not only per JSON-RPC method: a GET (stream) or DELETE
                    // carries no method but needs these as well.
                    let every = resource.scopes_for_every_request().to_vec();
                    if let Err(refusal) = resource.check_scopes(&principal, every) {
                        return auth_refused(resource, Some(&refusal));
                    }
                    req.extensions_mut().insert(Authenticated(Arc::new(principal)));
                }
                Err(refusal) => return auth_refused(resource, refusal.as_ref()),
            }
        }
    } else if (config.bearer_token.is_some() || !config.named_tokens.is_empty())
        && (path == config.path || legacy_path || route.is_some_and(|r| r.guarded))
    {
        let mut named = None;
        let check = || {
            let values = req.headers().get_all(AUTHORIZATION).iter().map(HeaderValue::as_bytes);
            let (verdict, principal) = bearer::check_any(config.bearer_token.as_ref(), &config.named_tokens, values);
            named = principal;
            verdict
        };
        if let Err(refusal) = failed_tokens::guard(&shared.failed_tokens, config.failed_token_pause, &req, check) {
            return refusal.map_or_else(unauthorized, failed_tokens::paused);
        }
        if let Some(principal) = named {
            // The named caller reaches handlers as a principal; the session is bound to it.
            req.extensions_mut().insert(Authenticated(principal));
        }
    }
    if shared.shutting_down.load(Ordering::Acquire) {
        return rpc_error(StatusCode::SERVICE_UNAVAILABLE, TRANSPORT_ERROR, "Server shutting down");
    }
    if let Some(route) = route {
        return serve_route(route, req.method(), shared.route_streams_end.subscribe()).await;
    }
    let token_expires = match &config.protected_resource {
        Some(_) => req.extensions().get::<Authenticated>().and_then(|a| token_expiry::deadline(&a.0)),
        None => None,
    };
    if path == config.path {
        return match *req.method() {
            Method::POST => token_expiry::cut_at(post(shared, req).await, token_expires),
            Method::GET => token_expiry::cut_at(get(shared, req).await, token_expires),
            Method::DELETE => delete(shared, req).await,
            _ => method_not_allowed(&shared),
        };
    }
    if config.legacy_sse && !config.stateless {
        if path == config.legacy_sse_path && req.method() == Method::GET {
            return token_expiry::cut_at(legacy_get(shared, req).await, token_expires);
        }
        if path == config.legacy_message_path && req.method() == Method::POST {
            return legacy_post(shared, req).await;
        }
    }
    plain(StatusCode::NOT_FOUND, "Not Found")
}
