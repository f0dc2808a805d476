//! The small answers and request readers every handler shares: plain and JSON-RPC error
//! responses, the 429 of a request over its rate limit, the session-id header, the body read under its cap and timeout, the
//! `MCP-Protocol-Version` header, JSON-RPC decoding into a 400.
//!
//! Not here: which of them a request gets (the handlers).

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use crate::transport::sse_http::session_store::StoreError;

use super::config::{HttpServerConfig, RequestRefused};
use crate::proto::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message};
use crate::transport::sse_http::{empty, full, HttpBody};

/// An empty body with `status` (202 for a POST of notifications and responses only).
pub(super) fn empty_with(status: StatusCode) -> Response<HttpBody> {
    let mut response = Response::new(empty());
    *response.status_mut() = status;
    response
}

pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<HttpBody> {
    let mut response = Response::new(full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

/// 429 for a request a [`RequestLimit`](super::config::RequestLimit) refused: `Retry-After`
/// (whole seconds, rounded up) and a JSON-RPC error -32029 naming the limit, as a call over a
/// rate limit gets (`data`: `limit`, `retryAfterMs`).
pub(super) fn rate_limited(refused: &RequestRefused) -> Response<HttpBody> {
    let wait = refused.retry_after;
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let millis = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
    let message = format!("Too Many Requests: over the rate limit {}; retry in {secs} s", refused.limit);
    let error = ErrorObject::rate_limited(message, &refused.limit, millis);
    let mut response = Response::new(full(Message::Error(ErrorResponse::new(None, error)).to_vec()));
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response.headers_mut().insert(hyper::header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// An HTTP error answered with a JSON-RPC error body (id absent), as the TypeScript SDK does.
pub(super) fn rpc_error(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Response<HttpBody> {
    let body = Message::Error(ErrorResponse::new(None, ErrorObject::new(code, message))).to_vec();
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// -32000: the code SDKs use for transport-level refusals.
pub(super) const TRANSPORT_ERROR: ErrorCode = ErrorCode(-32000);
/// -32001: session not found (as the TypeScript SDK answers it).
pub(super) const SESSION_NOT_FOUND: ErrorCode = ErrorCode(-32001);

/// Reads the body up to the cap: `Err` is the response to send instead.
pub(super) async fn read_body<B>(config: &HttpServerConfig, body: B) -> Result<Bytes, Response<HttpBody>>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limited = http_body_util::Limited::new(body, config.max_body_bytes);
    let collected = match config.body_read_timeout {
        Some(limit) => match tokio::time::timeout(limit, limited.collect()).await {
            Ok(collected) => collected,
            Err(_) => {
                return Err(rpc_error(StatusCode::REQUEST_TIMEOUT, TRANSPORT_ERROR, "Request Timeout: body too slow"))
            }
        },
        None => limited.collect().await,
    };
    match collected {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            Err(rpc_error(StatusCode::PAYLOAD_TOO_LARGE, TRANSPORT_ERROR, "Payload Too Large"))
        }
        Err(_) => Err(rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "Bad Request: unreadable body")),
    }
}

/// 503 for a request that needs a shared store that cannot be asked. The body names the
/// store's failure, never its address or credentials.
pub(super) fn store_unavailable(error: &StoreError) -> Response<HttpBody> {
    rpc_error(StatusCode::SERVICE_UNAVAILABLE, TRANSPORT_ERROR, format!("Service Unavailable: {error}"))
}

pub(super) fn session_header_value(id: &str) -> HeaderValue {
    HeaderValue::from_str(id).expect("session ids are visible ascii")
}
