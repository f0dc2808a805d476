//! A POST on the MCP endpoint in the handshake era: content negotiation, the session it
//! names (or the `initialize` that creates one), stateless mode; then the messages are handed
//! to the session (`answer.rs`). A POST of the 2026-07-28 era goes to `per_request.rs`.
//!
//! Not here: building the answer (`answer.rs`).

use std::sync::Arc;

use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};

use crate::transport::sse_http::service::RequestBody;
use crate::transport::sse_http::session_caps;
use crate::transport::sse_http::session_store::SessionRecord;
use crate::transport::sse_http::version_header;

use super::answer::{dispatch, is_event_stream};
use super::cancelled;
use super::config::ResponseMode;
use super::guards::check_scopes;
use super::per_request::per_request_post;
use super::registry::{reserve_session_place, too_many_sessions, Shared};
use super::replicas::{record_changes, route_responses};
use super::reply::{
    decode, foreign_session, header, header_version, read_body, rpc_error, session_header_value, store_unavailable,
    SESSION_NOT_FOUND, TRANSPORT_ERROR,
};
use super::session::Forget;
use crate::proto::envelope;
use crate::proto::jsonrpc::{self, Message, Payload};
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::{accepts, is_media, HttpBody, PROTOCOL_VERSION, SESSION_ID};

pub(super) async fn post(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    let accept = header(&req, ACCEPT).unwrap_or("");
    if !accepts(accept, "application/json") || !accepts(accept, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            TRANSPORT_ERROR,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        );
    }
    if !header(&req, CONTENT_TYPE).is_some_and(|c| is_media(c, "application/json")) {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            TRANSPORT_ERROR,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let session_id = header(&req, SESSION_ID).map(str::to_owned);
    let version_header = header(&req, PROTOCOL_VERSION).is_some();
    let (parts, body) = req.into_parts();
    let req_head = shared_head(&shared, parts);
    let bytes = match read_body(&shared, body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    // Stateless mode hands every POST to the application as it is: only the header moves a
    // POST to the 2026 ladder there (a client that names 2026-07-28 in its body alone is
    // served as before; the server layer still reads the body's envelope).
    let unknown_in_session = session_id.is_some() && version_header::is_unknown(header(&req_head, PROTOCOL_VERSION));
    if !unknown_in_session && is_per_request_post(&req_head, session_id.is_some() || shared.config.stateless, &bytes) {
        return per_request_post(&shared, &req_head, &bytes).await;
    }
    if shared.config.stateless {
        let version = match header_version(&shared, &req_head) {
            Ok(v) => v,
            Err(response) => return response,
        };
        let messages = match decode(&shared, &bytes, Some(version)) {
            Ok(m) => m,
            Err(response) => return response,
        };
        if let Err(response) = check_scopes(&shared, &req_head, &messages) {
            return response;
        }
        let (session, transport) = shared.unkept_session(true);
        *session.version.lock().expect("session lock") = Some(version);
        session.bind_principal(&req_head);
        crate::transport::task::spawn((shared.app)(transport));
        session.hold_requests(&req_head, &messages);
        let response = dispatch(&shared, &session, messages, Some(version)).await;
        // An SSE answer ends the session when its stream ends.
        if !is_event_stream(&response) {
            session.close().await;
        }
        return response;
    }
    match session_id {
        Some(id) => {
            let found = match shared.find_session(&id).await {
                Ok(found) => found,
                Err(response) => return response,
            };
            let Some(session) = found.filter(|s| !s.legacy) else {
                return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
            };
            if !session.bind_principal(&req_head) {
                return foreign_session();
            }
            let versions = &shared.config.versions;
            if let Some(why) =
                version_header::session_refusal(header(&req_head, PROTOCOL_VERSION), session.version(), versions)
            {
                return rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, why);
            }
            let header_v = match header_version(&shared, &req_head) {
                Ok(v) => v,
                Err(response) => return response,
            };
            let version = session.version().or(version_header.then_some(header_v));
            let messages = match decode(&shared, &bytes, Some(version.unwrap_or(header_v))) {
                Ok(m) => m,
                Err(response) => return response,
            };
            if let Err(response) = check_scopes(&shared, &req_head, &messages) {
                return response;
            }
            if let Err(response) = record_changes(&shared, &session, &messages).await {
                return response;
            }
            let mut messages = match route_responses(&shared, &session, messages).await {
                Ok(messages) => messages,
                Err(response) => return response,
            };
            if session.is_shared() {
                session.imply_initialized(&mut messages);
            }
            session.touch();
            session.hold_requests(&req_head, &messages);
            let cancelled = cancelled::cancelled_ids(&messages);
            let mut response = dispatch(&shared, &session, messages, version).await;
            session.end_cancelled(cancelled).await;
            response.headers_mut().insert(SESSION_ID, session_header_value(&session.id));
            response
        }
        None => {
            let messages = match decode(&shared, &bytes, None) {
                Ok(m) => m,
                Err(response) => return response,
            };
            let requested = match messages.as_slice() {
                [Message::Request(r)] if r.method == "initialize" => requested_version(r),
                _ => {
                    return rpc_error(
                        StatusCode::BAD_REQUEST,
                        TRANSPORT_ERROR,
                        "Bad Request: Mcp-Session-Id header is required",
                    )
                }
            };
            if let Err(response) = check_scopes(&shared, &req_head, &messages) {
                return response;
            }
            let json = shared.config.response_mode == ResponseMode::Json;
            let held = match reserve_session_place(&shared, req_head.extensions()) {
                Ok(held) => held,
                Err(refused) => return session_caps::refusal(refused, shared.config.sessions_retry_after),
            };
            let Some((session, transport)) = shared.new_session(false, json, true) else {
                return too_many_sessions(&shared);
            };
            *session.caps.lock().expect("session lock") = Some(held);
            session.bind_principal(&req_head);
            if let (Some(store), [Message::Request(init)]) = (&shared.config.session_store, messages.as_slice()) {
                let params = init.params.as_ref().and_then(|p| p.to_raw().ok());
                let record = SessionRecord::new(params.map_or("{}".to_owned(), |raw| raw.get().to_owned()));
                if let Err(e) = store.save(&session.id, &record, shared.config.session_idle_timeout).await {
                    session.end(Forget::Here).await;
                    return store_unavailable(&e);
                }
                *session.record.lock().expect("session lock") = Some(record);
            }
            crate::transport::task::spawn((shared.app)(transport));
            session.hold_requests(&req_head, &messages);
            let mut response = dispatch(&shared, &session, messages, requested).await;
            if response.status().is_success() {
                response.headers_mut().insert(SESSION_ID, session_header_value(&session.id));
            } else {
                session.close().await;
            }
            response
        }
    }
}

/// Whether a POST is of the 2026-07-28 era: its `MCP-Protocol-Version` names a revision without
/// a handshake (or one we do not know: the 2026 ladder answers that with the versions we
/// serve), or, unless `header_only`, its body names its revision in `_meta`.
pub(super) fn is_per_request_post<B>(req: &Request<B>, header_only: bool, body: &[u8]) -> bool {
    match header(req, PROTOCOL_VERSION).map(|v| v.trim().parse::<ProtocolVersion>()) {
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

/// The head of a POST, kept for the handlers of the requests it carries
/// ([`HttpRequestParts`]): without `Authorization` when the server checked the token itself,
/// so that the token is never handed on.
pub(super) fn shared_head(shared: &Shared, mut parts: hyper::http::request::Parts) -> Arc<Request<()>> {
    if shared.config.protected_resource.is_some()
        || shared.config.bearer_token.is_some()
        || !shared.config.named_tokens.is_empty()
    {
        parts.headers.remove(AUTHORIZATION);
    }
    Arc::new(Request::from_parts(parts, ()))
}

pub(super) fn requested_version(request: &jsonrpc::Request) -> Option<ProtocolVersion> {
    #[derive(Clone, serde::Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    request.params_as::<Init>().ok()?.protocol_version.parse().ok()
}
