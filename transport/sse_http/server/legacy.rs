//! The legacy HTTP+SSE transport (2024-11-05): `GET /sse` opens the session's only stream, whose
//! first event (`endpoint`) names where to POST; `POST /message?sessionId=…` delivers messages,
//! answered 202.
//!
//! Not here: the Streamable HTTP endpoint.

use std::sync::Arc;

use bytes::BytesMut;
use hyper::header::{ACCEPT, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};

use crate::transport::sse_http::service::RequestBody;
use crate::transport::sse_http::session_caps;

use super::answer::sse_response;
use super::guards::check_scopes;
use super::post::shared_head;
use super::registry::{reserve_session_place, too_many_sessions, Shared};
use super::reply::{decode, header, plain, read_body, rpc_error, TRANSPORT_ERROR};
use crate::proto::framing::{encode_event, SseEvent};
use crate::proto::jsonrpc::Message;
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::{accepts, is_media, HttpBody};

/// Legacy HTTP+SSE (2024-11-05): a GET opens the session's only stream, whose first event
/// (`endpoint`) names where to POST.

pub(super) async fn legacy_get(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    if !header(&req, ACCEPT).is_none_or(|a| accepts(a, "text/event-stream")) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            TRANSPORT_ERROR,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    let held = match reserve_session_place(&shared, req.extensions()) {
        Ok(held) => held,
        Err(refused) => return session_caps::refusal(refused, shared.config.sessions_retry_after),
    };
    let Some((session, transport)) = shared.new_session(true, false, true) else {
        return too_many_sessions(&shared);
    };
    *session.caps.lock().expect("session lock") = Some(held);
    *session.version.lock().expect("session lock") = Some(ProtocolVersion::V2024_11_05);
    session.bind_principal(&req);
    let depth = shared.config.limits.queue_depth.max(1);
    let (_, live) = session.standalone.attach(&*session.store, None, depth).await.expect("a new stream");
    crate::transport::task::spawn((shared.app)(transport));
    let mut prelude = BytesMut::new();
    let endpoint = format!("{}?sessionId={}", shared.config.legacy_message_path, session.id);
    encode_event(&SseEvent::new(endpoint).with_event("endpoint"), &mut prelude).expect("a plain event");
    sse_response(&shared, session, prelude.freeze(), Vec::new(), live, true, true)
}

pub(super) async fn legacy_post(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    let id = req
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="))
        .unwrap_or("")
        .to_owned();
    let Some(session) = shared.session(&id).filter(|s| s.legacy) else {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    };
    if !session.bind_principal(&req) {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    }
    if !header(&req, CONTENT_TYPE).is_some_and(|c| is_media(c, "application/json")) {
        return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type");
    }
    let (parts, body) = req.into_parts();
    let req_head = shared_head(&shared, parts);
    let bytes = match read_body(&shared, body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let messages = match decode(&shared, &bytes, session.version()) {
        Ok(m) => m,
        Err(response) => return response,
    };
    if let Err(response) = check_scopes(&shared, &req_head, &messages) {
        return response;
    }
    for message in &messages {
        if let Message::Request(r) = message {
            if r.method == "initialize" {
                *session.initialize_id.lock().expect("session lock") = Some(r.id.clone());
            }
        }
    }
    session.touch();
    session.hold_requests(&req_head, &messages);
    if !session.deliver(messages).await {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    }
    let mut response = plain(StatusCode::ACCEPTED, "Accepted");
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}
