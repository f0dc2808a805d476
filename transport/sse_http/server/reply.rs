//! The small answers and request readers every handler shares: plain and JSON-RPC error
//! responses, the session-id header, the body read under its cap and timeout, the
//! `MCP-Protocol-Version` header, JSON-RPC decoding into a 400.
//!
//! Not here: which of them a request gets (the handlers).

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{HeaderName, HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};

use crate::transport::sse_http::service::RequestBody;
use crate::transport::sse_http::session_store::StoreError;

use super::registry::Shared;
use crate::proto::jsonrpc::{self, ErrorCode, ErrorObject, ErrorResponse, Message, Payload};
use crate::proto::mcp_types::ServerTypedParams;
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::{full, HttpBody, PROTOCOL_VERSION};

pub(super) fn header<B>(req: &Request<B>, name: HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<HttpBody> {
    let mut response = Response::new(full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
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

/// A session id presented with another holder's token: answered as an unknown session.
pub(super) fn foreign_session() -> Response<HttpBody> {
    rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found")
}

pub(super) fn method_not_allowed(shared: &Shared) -> Response<HttpBody> {
    let mut response = rpc_error(StatusCode::METHOD_NOT_ALLOWED, TRANSPORT_ERROR, "Method not allowed");
    let allow =
        if shared.config.stateless || !shared.config.standalone_get { "POST, DELETE" } else { "GET, POST, DELETE" };
    response.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    response
}

/// Reads the body up to the cap: `Err` is the response to send instead.
pub(super) async fn read_body(shared: &Shared, body: RequestBody) -> Result<Bytes, Response<HttpBody>> {
    let limited = http_body_util::Limited::new(body, shared.config.max_body_bytes);
    let collected = match shared.config.body_read_timeout {
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

/// The `MCP-Protocol-Version` header: absent means 2025-03-26; `Err` for an unsupported one.
#[allow(clippy::result_large_err)] // the error is the HTTP answer itself, built once per refused request
pub(super) fn header_version<B>(shared: &Shared, req: &Request<B>) -> Result<ProtocolVersion, Response<HttpBody>> {
    match header(req, PROTOCOL_VERSION) {
        None => Ok(ProtocolVersion::HTTP_HEADER_DEFAULT),
        Some(text) => match text.trim().parse::<ProtocolVersion>() {
            Ok(v) if shared.config.versions.contains(&v) => Ok(v),
            _ => Err(rpc_error(
                StatusCode::BAD_REQUEST,
                TRANSPORT_ERROR,
                format!("Bad Request: Unsupported protocol version: {text}"),
            )),
        },
    }
}

#[allow(clippy::result_large_err)] // as above
pub(super) fn decode(
    shared: &Shared,
    bytes: &[u8],
    version: Option<ProtocolVersion>,
) -> Result<Vec<Message>, Response<HttpBody>> {
    let decoded = if shared.config.typed_params {
        jsonrpc::decode_typed::<ServerTypedParams>(bytes, version)
    } else {
        jsonrpc::decode(bytes, version)
    };
    match decoded {
        Ok(Payload::Single(message)) => Ok(vec![message]),
        Ok(Payload::Batch(messages)) => Ok(messages),
        Err(e) => Err(rpc_error(StatusCode::BAD_REQUEST, e.code(), e.to_string())),
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
