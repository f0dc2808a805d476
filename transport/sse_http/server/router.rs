//! The entry of every request: the guards in order (`Host`, `Origin`, the token), then the
//! handler its path and method name (POST, GET, DELETE on the endpoint, the legacy paths, the
//! extra routes, the protected resource's metadata), 404 otherwise.
//!
//! Not here: the handlers themselves.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use hyper::header::{HeaderValue, AUTHORIZATION};
use hyper::{Request, Response, StatusCode};

use crate::transport::sse_http::bearer;
use crate::transport::sse_http::failed_tokens;
use crate::transport::sse_http::service::RequestBody;
use crate::transport::sse_http::token_expiry;

use super::decide::{self, Target};
use super::get_delete::{delete, get};
use super::guards::{auth_refused, authenticate, resource_metadata, unauthorized, Authenticated};
use super::legacy::{legacy_get, legacy_post};
use super::post::post;
use super::registry::Shared;
use super::reply::{plain, rate_limited, rpc_error, TRANSPORT_ERROR};
use super::routes_served::serve_route;
use crate::transport::sse_http::HttpBody;

pub(in crate::transport::sse_http) async fn handle(
    shared: Arc<Shared>,
    req: Request<RequestBody>,
) -> Response<HttpBody> {
    let config = &shared.config;
    let (parts, body) = req.into_parts();
    if let Err(refused) = decide::screen(config, &parts) {
        return refused;
    }
    let target = decide::target(config, &parts.method, parts.uri.path());
    if let Target::ResourceMetadata(resource) = target {
        return resource_metadata(resource, &parts.method);
    }
    let guarded = decide::needs_token(config, parts.uri.path());
    let mut req = Request::from_parts(parts, body);
    if let Some(resource) = &config.protected_resource {
        if guarded {
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
    } else if (config.bearer_token.is_some() || !config.named_tokens.is_empty()) && guarded {
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
    if let (Some(limit), false) = (&config.request_limit, matches!(target, Target::Route(_))) {
        let caller = req.extensions().get::<Authenticated>().map(|a| &*a.0);
        if let Err(refused) = limit(caller) {
            return rate_limited(&refused);
        }
    }
    let token_expires = match &config.protected_resource {
        Some(_) => req.extensions().get::<Authenticated>().and_then(|a| token_expiry::deadline(&a.0)),
        None => None,
    };
    match target {
        Target::Route(route) => serve_route(&shared, route, req, shared.route_streams_end.subscribe()).await,
        Target::Post => token_expiry::cut_at(post(shared, req).await, token_expires),
        Target::Get => token_expiry::cut_at(get(shared, req).await, token_expires),
        Target::Delete => delete(shared, req).await,
        Target::OtherMethod => decide::method_not_allowed(config),
        Target::LegacyStream => token_expiry::cut_at(legacy_get(shared, req).await, token_expires),
        Target::LegacyMessage => legacy_post(shared, req).await,
        Target::ResourceMetadata(_) | Target::NotFound => plain(StatusCode::NOT_FOUND, "Not Found"),
    }
}
