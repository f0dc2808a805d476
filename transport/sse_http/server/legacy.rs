//! The legacy HTTP+SSE transport (2024-11-05): `GET /sse` opens the session's only stream, whose
//! first event (`endpoint`) names where to POST; `POST /message?sessionId=…` delivers messages,
//! answered 202.
//!
//! Not here: the Streamable HTTP endpoint.

use std::sync::Arc;

use bytes::BytesMut;
use hyper::{Request, Response, StatusCode};

use crate::transport::sse_http::service::RequestBody;
use crate::transport::sse_http::session_caps;

use super::answer::sse_response;
use super::decide;
use super::guards::check_scopes;
use super::registry::{reserve_session_place, Shared};
use super::reply::{plain, read_body};
use crate::proto::framing::{encode_event, SseEvent};
use crate::proto::jsonrpc::Message;
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::HttpBody;

/// Legacy HTTP+SSE (2024-11-05): a GET opens the session's only stream, whose first event
/// (`endpoint`) names where to POST.
pub(super) async fn legacy_get(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    let (parts, _) = req.into_parts();
    if let Err(refused) = decide::legacy_stream_accept(&parts) {
        return refused;
    }
    let held = match reserve_session_place(&shared, &parts.extensions) {
        Ok(held) => held,
        Err(refused) => return session_caps::refusal(refused, shared.config.sessions_retry_after),
    };
    let Some((session, transport)) = shared.new_session(true, false, true) else {
        return decide::too_many_sessions(&shared.config);
    };
    *session.caps.lock().expect("session lock") = Some(held);
    *session.version.lock().expect("session lock") = Some(ProtocolVersion::V2024_11_05);
    session.bind_principal(&parts.extensions);
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
    if !session.bind_principal(req.extensions()) {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    }
    let (parts, body) = req.into_parts();
    if let Err(refused) = decide::legacy_post_media(&parts) {
        return refused;
    }
    // Without `Authorization` when the server checked the token itself: never handed on.
    let req_head = decide::handed_on_head(&shared.config, parts);
    let bytes = match read_body(&shared.config, body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let messages = match decide::decode(&shared.config, &bytes, session.version()) {
        Ok(m) => m,
        Err(response) => return response,
    };
    if let Err(response) = check_scopes(&shared, &req_head.extensions, &messages) {
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
    session.hold_requests(req_head, &messages);
    if !session.deliver(messages).await {
        return plain(StatusCode::NOT_FOUND, "Session not found");
    }
    let mut response = plain(StatusCode::ACCEPTED, "Accepted");
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}
