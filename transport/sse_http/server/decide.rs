//! The request's decisions, pure: functions of the request head ([`Parts`]), the server's
//! configuration and, where it matters, what a session lookup found or the body decoded to.
//! Each answers what the request gets: the handler to run, or the refusal with its status,
//! headers and JSON-RPC error.
//!
//! In the order a request meets them: `Host` and `Origin` ([`screen`]), where the path and
//! method lead ([`target`], [`needs_token`]), the methods the endpoint serves in this mode
//! ([`method_not_allowed`], [`stream_method_refusal`]), `Accept` and `Content-Type`
//! ([`post_media`], [`stream_accept`], [`legacy_stream_accept`], [`legacy_post_media`]), which
//! era and path a POST takes ([`post_era`]), the `MCP-Protocol-Version` header
//! ([`header_version`]), decoding ([`decode`]), the first POST of a session
//! ([`opening_request`]), a session lookup's outcome ([`not_held`], [`session_version_refusal`]), admission
//! ([`room_for_session`], [`too_many_sessions`]), the shape of a 2026-07-28 POST
//! ([`per_request_message`], [`per_request_check`]) and what of the head is handed on
//! ([`handed_on_head`]).
//!
//! Not here: anything that waits (reading the body, verifying a token, asking a store), the
//! sessions themselves, and the tokens' own checks (`guards.rs`, whose answers are pure too).
//! Tests drive every function with built `http::Request`s: no listener, no socket.

use hyper::header::{HeaderValue, ACCEPT, ALLOW, AUTHORIZATION, CONTENT_TYPE, HOST, ORIGIN};
use hyper::http::request::Parts;
use hyper::{Method, Response, StatusCode};

use super::config::{HostCheck, HttpServerConfig, OriginCheck};
use super::reply::{empty_with, rpc_error, SESSION_NOT_FOUND, TRANSPORT_ERROR};
use crate::proto::envelope;
use crate::proto::jsonrpc::{self, ErrorCode, ErrorObject, ErrorResponse, Id, Message, Payload};
use crate::proto::mcp_types::ServerTypedParams;
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::resource::{self, ProtectedResource};
use crate::transport::sse_http::routes::Route;
use crate::transport::sse_http::{
    accepts, full, host_of_authority, is_loopback_host, is_media, version_header, HttpBody, PROTOCOL_VERSION,
    SESSION_ID,
};

/// A refusal: the whole answer to the request.
pub(super) type Refused = Response<HttpBody>;

/// The value of header `name` when it is visible ASCII.
pub(super) fn header_value(parts: &Parts, name: impl hyper::header::AsHeaderName) -> Option<&str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// `Host` (DNS rebinding) then `Origin`: 403 with a -32000 error for either. HTTP/2 carries
/// `:authority` in the URI rather than a `Host` header.
#[allow(clippy::result_large_err)] // the error is the HTTP answer itself
pub(super) fn screen(config: &HttpServerConfig, parts: &Parts) -> Result<(), Refused> {
    let host = header_value(parts, HOST).or_else(|| parts.uri.authority().map(|a| a.as_str()));
    if !host_allowed(config, host) {
        return Err(rpc_error(StatusCode::FORBIDDEN, TRANSPORT_ERROR, "Forbidden: Host not allowed"));
    }
    if let Some(origin) = header_value(parts, ORIGIN) {
        if !origin_allowed(config, origin) {
            return Err(rpc_error(StatusCode::FORBIDDEN, TRANSPORT_ERROR, "Forbidden: Origin not allowed"));
        }
    }
    Ok(())
}

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

/// Where a request goes once past the guards, by its path and method.
#[derive(Debug)]
pub(super) enum Target<'c> {
    /// The protected resource's metadata document (public: answered before the token check).
    ResourceMetadata(&'c ProtectedResource),
    /// An extra route.
    Route(&'c Route),
    /// POST on the MCP endpoint.
    Post,
    /// GET on the MCP endpoint.
    Get,
    /// DELETE on the MCP endpoint.
    Delete,
    /// Another method on the MCP endpoint: 405.
    OtherMethod,
    /// GET on the legacy transport's stream path.
    LegacyStream,
    /// POST on the legacy transport's message path.
    LegacyMessage,
    /// Anything else: 404.
    NotFound,
}

impl PartialEq for Target<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Target::ResourceMetadata(a), Target::ResourceMetadata(b)) => std::ptr::eq(*a, *b),
            (Target::Route(a), Target::Route(b)) => std::ptr::eq(*a, *b),
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

fn serves_legacy(config: &HttpServerConfig) -> bool {
    config.legacy_sse && !config.stateless
}

fn is_legacy_path(config: &HttpServerConfig, path: &str) -> bool {
    serves_legacy(config) && (path == config.legacy_sse_path || path == config.legacy_message_path)
}

/// Where `method` on `path` leads.
pub(super) fn target<'c>(config: &'c HttpServerConfig, method: &Method, path: &str) -> Target<'c> {
    if let Some(resource) = &config.protected_resource {
        if path == ProtectedResource::metadata_path(&config.path) || path == resource::METADATA_PATH {
            return Target::ResourceMetadata(resource);
        }
    }
    if let Some(route) = config.routes.iter().find(|r| r.path == path) {
        return Target::Route(route);
    }
    if path == config.path {
        return match *method {
            Method::POST => Target::Post,
            Method::GET => Target::Get,
            Method::DELETE => Target::Delete,
            _ => Target::OtherMethod,
        };
    }
    if serves_legacy(config) {
        if path == config.legacy_sse_path && method == Method::GET {
            return Target::LegacyStream;
        }
        if path == config.legacy_message_path && method == Method::POST {
            return Target::LegacyMessage;
        }
    }
    Target::NotFound
}

/// Whether a request to `path` must carry the configured token (bearer or protected
/// resource): the MCP endpoint, the legacy paths (any method: the token is checked before the
/// 404 of a wrong one) and the guarded extra routes.
pub(super) fn needs_token(config: &HttpServerConfig, path: &str) -> bool {
    path == config.path || is_legacy_path(config, path) || config.routes.iter().any(|r| r.path == path && r.guarded)
}

/// 405 with the methods the endpoint serves in this mode.
pub(super) fn method_not_allowed(config: &HttpServerConfig) -> Refused {
    let mut response = rpc_error(StatusCode::METHOD_NOT_ALLOWED, TRANSPORT_ERROR, "Method not allowed");
    let allow = if config.stateless || !config.standalone_get { "POST, DELETE" } else { "GET, POST, DELETE" };
    response.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    response
}

/// Whether a GET or DELETE speaks 2026-07-28, which has neither (answered 405).
pub(super) fn is_per_request_version(parts: &Parts) -> bool {
    header_value(parts, PROTOCOL_VERSION)
        .and_then(|v| v.trim().parse::<ProtocolVersion>().ok())
        .is_some_and(|v| !v.has_initialize_handshake())
}

/// The 405 for a GET or DELETE the endpoint does not serve: none in stateless mode or
/// 2026-07-28, no GET without the standalone stream.
pub(super) fn stream_method_refusal(config: &HttpServerConfig, parts: &Parts) -> Option<Refused> {
    let refused =
        config.stateless || is_per_request_version(parts) || (parts.method == Method::GET && !config.standalone_get);
    refused.then(|| method_not_allowed(config))
}

/// A POST's `Accept` (406 unless both JSON and SSE) and `Content-Type` (415 unless JSON).
#[allow(clippy::result_large_err)]
pub(super) fn post_media(parts: &Parts) -> Result<(), Refused> {
    let accept = header_value(parts, ACCEPT).unwrap_or("");
    if !accepts(accept, "application/json") || !accepts(accept, "text/event-stream") {
        return Err(rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            TRANSPORT_ERROR,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        ));
    }
    if !header_value(parts, CONTENT_TYPE).is_some_and(|c| is_media(c, "application/json")) {
        return Err(rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            TRANSPORT_ERROR,
            "Unsupported Media Type: Content-Type must be application/json",
        ));
    }
    Ok(())
}

fn sse_not_acceptable() -> Refused {
    rpc_error(StatusCode::NOT_ACCEPTABLE, TRANSPORT_ERROR, "Not Acceptable: Client must accept text/event-stream")
}

/// A GET's `Accept`: 406 unless it names SSE.
#[allow(clippy::result_large_err)]
pub(super) fn stream_accept(parts: &Parts) -> Result<(), Refused> {
    match header_value(parts, ACCEPT).is_some_and(|a| accepts(a, "text/event-stream")) {
        true => Ok(()),
        false => Err(sse_not_acceptable()),
    }
}

/// The legacy GET's `Accept`: absent is fine (old clients), else 406 unless it names SSE.
#[allow(clippy::result_large_err)]
pub(super) fn legacy_stream_accept(parts: &Parts) -> Result<(), Refused> {
    match header_value(parts, ACCEPT).is_none_or(|a| accepts(a, "text/event-stream")) {
        true => Ok(()),
        false => Err(sse_not_acceptable()),
    }
}

/// The legacy POST's `Content-Type`: 415 (plain text, as that transport answers) unless JSON.
#[allow(clippy::result_large_err)]
pub(super) fn legacy_post_media(parts: &Parts) -> Result<(), Refused> {
    match header_value(parts, CONTENT_TYPE).is_some_and(|c| is_media(c, "application/json")) {
        true => Ok(()),
        false => Err(super::reply::plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type")),
    }
}

/// The path a POST on the endpoint takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PostEra {
    /// 2026-07-28: one request standing alone.
    PerRequest,
    /// Stateless mode: a transport of its own for this POST, in the handshake era.
    Stateless,
    /// A POST naming its session (in its `Mcp-Session-Id`, read again where it is looked up:
    /// no copy of it per POST).
    InSession,
    /// No session yet: must be `initialize`.
    Opening,
}

/// Which path a POST takes, by its head and body. Stateless mode hands every POST to the
/// application as it is: only the header moves a POST to the 2026 ladder there (a client that
/// names 2026-07-28 in its body alone is served as before; the server layer still reads the
/// body's envelope). In a session, a version header we do not know stays with the session
/// (answered 400 by its version rule).
pub(super) fn post_era(config: &HttpServerConfig, parts: &Parts, body: &[u8]) -> PostEra {
    let session_id = header_value(parts, SESSION_ID);
    let unknown_in_session = session_id.is_some() && version_header::is_unknown(header_value(parts, PROTOCOL_VERSION));
    if !unknown_in_session && is_per_request_post(parts, session_id.is_some() || config.stateless, body) {
        return PostEra::PerRequest;
    }
    match (config.stateless, session_id) {
        (true, _) => PostEra::Stateless,
        (false, Some(_)) => PostEra::InSession,
        (false, None) => PostEra::Opening,
    }
}

/// Whether a POST is of the 2026-07-28 era: its `MCP-Protocol-Version` names a revision without
/// a handshake (or one we do not know: the 2026 ladder answers that with the versions we
/// serve), or, unless `header_only`, its body names its revision in `_meta`.
pub(super) fn is_per_request_post(parts: &Parts, header_only: bool, body: &[u8]) -> bool {
    match header_value(parts, PROTOCOL_VERSION).map(|v| v.trim().parse::<ProtocolVersion>()) {
        Some(Ok(v)) if !v.has_initialize_handshake() => true,
        Some(Err(_)) => true,
        _ if header_only => false,
        // Cheap: only a body that spells the key is decoded.
        _ => {
            memchr::memmem::find(body, b"/protocolVersion\"").is_some() && {
                matches!(jsonrpc::decode(body, None), Ok(Payload::Single(Message::Request(r)))
                if envelope::names_revision(r.params.as_ref()))
            }
        }
    }
}

/// The `MCP-Protocol-Version` header: absent means 2025-03-26; `Err` for one this server does
/// not serve.
#[allow(clippy::result_large_err)] // the error is the HTTP answer itself, built once per refused request
pub(super) fn header_version(config: &HttpServerConfig, parts: &Parts) -> Result<ProtocolVersion, Refused> {
    match header_value(parts, PROTOCOL_VERSION) {
        None => Ok(ProtocolVersion::HTTP_HEADER_DEFAULT),
        Some(text) => match text.trim().parse::<ProtocolVersion>() {
            Ok(v) if config.versions.contains(&v) => Ok(v),
            _ => Err(rpc_error(
                StatusCode::BAD_REQUEST,
                TRANSPORT_ERROR,
                format!("Bad Request: Unsupported protocol version: {text}"),
            )),
        },
    }
}

/// A body's messages: 400 with the decoder's JSON-RPC error (-32700, -32600) when it holds none.
#[allow(clippy::result_large_err)] // as above
pub(super) fn decode(
    config: &HttpServerConfig,
    bytes: &[u8],
    version: Option<ProtocolVersion>,
) -> Result<Vec<Message>, Refused> {
    let decoded = if config.typed_params {
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

/// The first POST of a session must be a lone `initialize`: the revision it asks for (`None`
/// when it names none we know), or 400.
#[allow(clippy::result_large_err)]
pub(super) fn opening_request(messages: &[Message]) -> Result<Option<ProtocolVersion>, Refused> {
    match messages {
        [Message::Request(r)] if r.method == "initialize" => Ok(requested_version(r)),
        _ => Err(session_id_required()),
    }
}

fn requested_version(request: &jsonrpc::Request) -> Option<ProtocolVersion> {
    #[derive(Clone, serde::Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    request.params_as::<Init>().ok()?.protocol_version.parse().ok()
}

/// 400: a request of the handshake era that needs a session names none.
pub(super) fn session_id_required() -> Refused {
    rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "Bad Request: Mcp-Session-Id header is required")
}

/// A GET's or DELETE's session id, or 400.
#[allow(clippy::result_large_err)]
pub(super) fn session_id(parts: &Parts) -> Result<&str, Refused> {
    header_value(parts, SESSION_ID).ok_or_else(session_id_required)
}

/// Why a session id does not lead to the caller's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NotHeld {
    /// No such session here or in the store (or a legacy session's id on the endpoint).
    Unknown,
    /// A session bound to another holder's token.
    OtherHolder,
}

/// The 404 of a session id that is unknown or another holder's: answered alike, so that a
/// token learns nothing of the sessions of others.
pub(super) fn not_held(why: NotHeld) -> Refused {
    match why {
        NotHeld::Unknown | NotHeld::OtherHolder => session_not_found(),
    }
}

/// The `MCP-Protocol-Version` of a request in a session against the version the session
/// negotiated (`session_version`): 400 when it names another, or one this server does not
/// serve ([`version_header::session_refusal`]).
pub(super) fn session_version_refusal(
    config: &HttpServerConfig,
    parts: &Parts,
    session_version: Option<ProtocolVersion>,
) -> Option<Refused> {
    let why =
        version_header::session_refusal(header_value(parts, PROTOCOL_VERSION), session_version, &config.versions)?;
    Some(rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, why))
}

/// 404 with -32001, as the TypeScript SDK answers an unknown session.
pub(super) fn session_not_found() -> Refused {
    rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found")
}

/// Whether a new session fits beside the `open` ones ([`HttpServerConfig::max_sessions`]).
pub(super) fn room_for_session(config: &HttpServerConfig, open: usize) -> bool {
    open < config.max_sessions
}

/// 503 with `Retry-After` and a JSON-RPC error naming the limit: the server holds
/// [`HttpServerConfig::max_sessions`] sessions already.
pub(super) fn too_many_sessions(config: &HttpServerConfig) -> Refused {
    let max = config.max_sessions;
    tracing::debug!(max, "a new session refused: max_sessions reached");
    let message = format!("Service Unavailable: too many sessions (the limit max_sessions = {max}); try again later");
    let mut response = rpc_error(StatusCode::SERVICE_UNAVAILABLE, TRANSPORT_ERROR, message);
    let retry = config.sessions_retry_after.as_secs().max(1);
    response.headers_mut().insert(hyper::header::RETRY_AFTER, HeaderValue::from(retry));
    response
}

/// A 2026-07-28 POST's one message, decoded: a request goes on; a notification is accepted
/// and dropped (202: none is defined from client to server over HTTP in this revision, as the
/// handshake era's transport does); a batch or a response is 400.
#[allow(clippy::result_large_err)]
pub(super) fn per_request_message(mut messages: Vec<Message>) -> Result<Message, Refused> {
    if messages.len() != 1 {
        return Err(rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "Body must be a single JSON-RPC request or notification",
        ));
    }
    let message = messages.pop().expect("one message");
    match message {
        Message::Request(_) => Ok(message),
        Message::Notification(_) => Err(empty_with(StatusCode::ACCEPTED)),
        _ => Err(rpc_error(StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST, "Clients must not POST responses")),
    }
}

/// The value of header `name` (lowercase), `Err(())` when it appears more than once.
pub(super) fn single_header<'p>(parts: &'p Parts, name: &str) -> Result<Option<&'p str>, ()> {
    let mut values = parts.headers.get_all(name).iter();
    let first = values.next().map(|v| v.to_str().unwrap_or("\u{fffd}"));
    if values.next().is_some() {
        return Err(());
    }
    Ok(first)
}

/// A 2026-07-28 request against its head: the rules of [`envelope::check_http`] (`_meta`,
/// `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) for the per-request revisions this server
/// is configured to serve. `Ok`: the `Mcp-Param-*` headers, kept for the application
/// ([`Transport::param_headers`](crate::transport::Transport::param_headers)); `Err`: the
/// refusal ([`envelope_refusal`]).
#[allow(clippy::result_large_err)]
pub(super) fn per_request_check(
    config: &HttpServerConfig,
    parts: &Parts,
    request: &jsonrpc::Request,
) -> Result<Vec<(String, String)>, Refused> {
    let served: Vec<ProtocolVersion> =
        ProtocolVersion::PER_REQUEST.into_iter().filter(|v| config.versions.contains(v)).collect();
    envelope::check_http(&request.method, request.params.as_ref(), &served, |name| single_header(parts, name))
        .map_err(|error| envelope_refusal(request.id.clone(), error))?;
    Ok(parts
        .headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with(envelope::PARAM_HEADER_PREFIX))
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap_or("\u{fffd}").to_owned()))
        .collect())
}

/// The answer to a 2026-07-28 request its envelope check refused: the error under the
/// request's id, with the revision's status for its code (400, 404), 200 for others.
pub(super) fn envelope_refusal(id: Id, error: ErrorObject) -> Refused {
    let status = envelope::http_status(error.code).and_then(|s| StatusCode::from_u16(s).ok());
    let body = Message::Error(ErrorResponse::new(Some(id), error)).to_vec();
    let mut response = Response::new(full(body));
    *response.status_mut() = status.unwrap_or(StatusCode::OK);
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The head kept for the handlers of the requests a POST carries
/// ([`HttpRequestParts`](crate::transport::sse_http::HttpRequestParts)): without
/// `Authorization` when the server checked the token itself, so that the token is never
/// handed on.
pub(super) fn handed_on_head(config: &HttpServerConfig, mut parts: Parts) -> Parts {
    if config.protected_resource.is_some() || config.bearer_token.is_some() || !config.named_tokens.is_empty() {
        parts.headers.remove(AUTHORIZATION);
    }
    parts
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
