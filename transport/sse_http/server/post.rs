//! A POST on the MCP endpoint in the handshake era: content negotiation, the session it
//! names (or the `initialize` that creates one), stateless mode; then the messages are handed
//! to the session (`answer.rs`). A POST of the 2026-07-28 era goes to `per_request.rs`.
//!
//! Not here: building the answer (`answer.rs`).

use std::sync::Arc;

use hyper::http::request::Parts;
use hyper::{Request, Response};

use crate::transport::sse_http::service::RequestBody;
use crate::transport::sse_http::session_caps;
use crate::transport::sse_http::session_store::SessionRecord;

use super::answer::{dispatch, is_event_stream};
use super::cancelled;
use super::config::ResponseMode;
use super::decide::{self, PostEra};
use super::guards::check_scopes;
use super::per_request::per_request_post;
use super::registry::{reserve_session_place, Shared};
use super::replicas::{record_changes, route_responses};
use super::reply::{read_body, store_unavailable};
use super::session::{Forget, Session};
use crate::proto::jsonrpc::Message;
use crate::transport::sse_http::{HttpBody, PROTOCOL_VERSION, SESSION_ID};

pub(super) async fn post(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    let (parts, body) = req.into_parts();
    if let Err(refused) = decide::post_media(&parts) {
        return refused;
    }
    let bytes = match read_body(&shared.config, body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let era = decide::post_era(&shared.config, &parts, &bytes);
    let head = decide::handed_on_head(&shared.config, parts);
    match era {
        PostEra::PerRequest => per_request_post(&shared, head, &bytes).await,
        PostEra::Stateless => stateless_post(&shared, head, &bytes).await,
        PostEra::InSession => session_post(&shared, head, &bytes).await,
        PostEra::Opening => opening_post(&shared, head, &bytes).await,
    }
}

/// A POST naming its session: the messages go to that session's transport.
async fn session_post(shared: &Arc<Shared>, head: Parts, bytes: &[u8]) -> Response<HttpBody> {
    let id = decide::header_value(&head, SESSION_ID).unwrap_or_default();
    let found = match shared.find_session(id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let session = match Session::held(found, &head.extensions) {
        Ok(session) => session,
        Err(not_held) => return decide::not_held(not_held),
    };
    if let Some(refused) = decide::session_version_refusal(&shared.config, &head, session.version()) {
        return refused;
    }
    let header_v = match decide::header_version(&shared.config, &head) {
        Ok(v) => v,
        Err(response) => return response,
    };
    let version_header = head.headers.contains_key(PROTOCOL_VERSION);
    let version = session.version().or(version_header.then_some(header_v));
    let messages = match decide::decode(&shared.config, bytes, Some(version.unwrap_or(header_v))) {
        Ok(m) => m,
        Err(response) => return response,
    };
    if let Err(response) = check_scopes(shared, &head.extensions, &messages) {
        return response;
    }
    if let Err(response) = record_changes(shared, &session, &messages).await {
        return response;
    }
    let mut messages = match route_responses(shared, &session, messages).await {
        Ok(messages) => messages,
        Err(response) => return response,
    };
    if session.is_shared() {
        session.imply_initialized(&mut messages);
    }
    session.touch();
    session.hold_requests(head, &messages);
    let cancelled = cancelled::cancelled_ids(&messages);
    let mut response = dispatch(shared, &session, messages, version).await;
    session.end_cancelled(cancelled).await;
    response.headers_mut().insert(SESSION_ID, session.id_header.clone());
    response
}

/// A POST without a session: a lone `initialize` opens one, if there is room.
async fn opening_post(shared: &Arc<Shared>, head: Parts, bytes: &[u8]) -> Response<HttpBody> {
    let messages = match decide::decode(&shared.config, bytes, None) {
        Ok(m) => m,
        Err(response) => return response,
    };
    let requested = match decide::opening_request(&messages) {
        Ok(requested) => requested,
        Err(refused) => return refused,
    };
    if let Err(response) = check_scopes(shared, &head.extensions, &messages) {
        return response;
    }
    let json = shared.config.response_mode == ResponseMode::Json;
    let held = match reserve_session_place(shared, &head.extensions) {
        Ok(held) => held,
        Err(refused) => return session_caps::refusal(refused, shared.config.sessions_retry_after),
    };
    let Some((session, transport)) = shared.new_session(false, json, true) else {
        return decide::too_many_sessions(&shared.config);
    };
    *session.caps.lock().expect("session lock") = Some(held);
    session.bind_principal(&head.extensions);
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
    session.hold_requests(head, &messages);
    let mut response = dispatch(shared, &session, messages, requested).await;
    if response.status().is_success() {
        response.headers_mut().insert(SESSION_ID, session.id_header.clone());
    } else {
        session.close().await;
    }
    response
}

/// A POST in stateless mode: a transport of its own for this POST alone, in the handshake era.
async fn stateless_post(shared: &Arc<Shared>, head: Parts, bytes: &[u8]) -> Response<HttpBody> {
    let version = match decide::header_version(&shared.config, &head) {
        Ok(v) => v,
        Err(response) => return response,
    };
    let messages = match decide::decode(&shared.config, bytes, Some(version)) {
        Ok(m) => m,
        Err(response) => return response,
    };
    if let Err(response) = check_scopes(shared, &head.extensions, &messages) {
        return response;
    }
    let (session, transport) = shared.unkept_session(true);
    *session.version.lock().expect("session lock") = Some(version);
    session.bind_principal(&head.extensions);
    crate::transport::task::spawn((shared.app)(transport));
    session.hold_requests(head, &messages);
    let response = dispatch(shared, &session, messages, Some(version)).await;
    // An SSE answer ends the session when its stream ends.
    if !is_event_stream(&response) {
        session.close().await;
    }
    response
}
