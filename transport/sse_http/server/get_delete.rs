//! GET (the standalone stream, or a stream resumed with `Last-Event-ID`, also one of another
//! replica) and DELETE (ends the session) on the MCP endpoint.
//!
//! Not here: streams' bookkeeping (`stream.rs`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use hyper::header::ACCEPT;
use hyper::{Request, Response, StatusCode};
use tokio::sync::mpsc;

use crate::transport::sse_http::event_store::EventId;
use crate::transport::sse_http::service::RequestBody;

use super::answer::sse_response;
use super::registry::Shared;
use super::reply::{
    foreign_session, header, header_version, method_not_allowed, rpc_error, session_header_value, store_unavailable,
    SESSION_NOT_FOUND, TRANSPORT_ERROR,
};
use super::session::Session;
use super::stream::{AttachError, Outgoing};
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::{accepts, empty, HttpBody, LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};

/// Whether a GET or DELETE speaks 2026-07-28, which has neither (answered 405).
pub(super) fn is_per_request_version<B>(req: &Request<B>) -> bool {
    header(req, PROTOCOL_VERSION)
        .and_then(|v| v.trim().parse::<ProtocolVersion>().ok())
        .is_some_and(|v| !v.has_initialize_handshake())
}

pub(super) async fn get(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    if shared.config.stateless || !shared.config.standalone_get || is_per_request_version(&req) {
        return method_not_allowed(&shared);
    }
    if !header(&req, ACCEPT).is_some_and(|a| accepts(a, "text/event-stream")) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            TRANSPORT_ERROR,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    let Some(id) = header(&req, SESSION_ID) else {
        return rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "Bad Request: Mcp-Session-Id header is required");
    };
    let found = match shared.find_session(id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let Some(session) = found.filter(|s| !s.legacy) else {
        return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
    };
    if !session.bind_principal(&req) {
        return foreign_session();
    }
    if let Err(response) = header_version(&shared, &req) {
        return response;
    }
    session.touch();
    let depth = shared.config.limits.queue_depth.max(1);
    let resume = header(&req, LAST_EVENT_ID).and_then(EventId::parse);
    let target = resume.as_ref().and_then(|event| {
        if event.stream == session.standalone.name {
            return Some(session.standalone.clone());
        }
        session.routes.lock().expect("session lock").streams.iter().find(|s| s.name == event.stream).cloned()
    });
    let (attached, standalone) = match (target, resume) {
        (Some(stream), Some(event)) => {
            (stream.attach(&*session.store, Some(event.seq), depth).await, stream.standalone)
        }
        (None, Some(event)) if shared.config.session_store.is_some() => {
            (resume_elsewhere(&shared, &session, &event, depth).await, event.stream.ends_with("-0"))
        }
        _ => (session.standalone.attach(&*session.store, None, depth).await, true),
    };
    match attached {
        Ok((replay, live)) => {
            if let (true, Some(_), Some(store)) = (standalone, &live, &shared.config.session_store) {
                // Messages for the standalone stream made on other replicas come here from now on.
                let ttl = shared.config.session_idle_timeout;
                match store.hold_stream(&session.id, &shared.replica, ttl).await {
                    Ok(()) => tracing::info!(replica = %shared.replica, "holds the standalone stream"),
                    Err(e) => {
                        tracing::warn!(replica = %shared.replica, "other replicas keep messages for this standalone stream: {e}")
                    }
                }
                let hold = session.standalone_holds.fetch_add(1, Ordering::AcqRel) + 1;
                crate::transport::task::spawn(keep_holding(Arc::downgrade(&shared), Arc::downgrade(&session), hold));
            }
            let mut response = sse_response(&shared, session.clone(), Bytes::new(), replay, live, false, true);
            response.headers_mut().insert(SESSION_ID, session_header_value(&session.id));
            response
        }
        Err(AttachError::Store(e)) => store_unavailable(&e),
        Err(AttachError::Conflict) => {
            rpc_error(StatusCode::CONFLICT, TRANSPORT_ERROR, "Conflict: Only one SSE stream is allowed per session")
        }
    }
}

/// While standalone GET number `hold` of `session` stays open here, renews the store's records
/// of the session and of this replica as the stream's holder, every quarter of the idle
/// timeout: a client that only listens (no POST for longer than the idle timeout) keeps both,
/// so the other replicas still find the session and relay its messages here. Ends with the
/// stream, the session, the server, or a later GET (whose own renewal takes over). A renewal
/// the store refuses is logged and tried again at the next turn.
pub(super) async fn keep_holding(shared: Weak<Shared>, session: Weak<Session>, hold: u64) {
    loop {
        let Some(ttl) = shared.upgrade().map(|s| s.config.session_idle_timeout) else { return };
        tokio::time::sleep(ttl / 4).await;
        let (Some(shared), Some(session)) = (shared.upgrade(), session.upgrade()) else { return };
        let Some(store) = shared.config.session_store.clone() else { return };
        if session.is_closed()
            || session.standalone_holds.load(Ordering::Acquire) != hold
            || !session.standalone.has_live().await
        {
            return;
        }
        let renewed = match store.touch(&session.id, ttl).await {
            Ok(()) => store.hold_stream(&session.id, &shared.replica, ttl).await,
            Err(e) => Err(e),
        };
        if let Err(e) = renewed {
            tracing::warn!(replica = %shared.replica, "the standalone stream's records were not renewed: {e}");
        }
    }
}

/// A `Last-Event-ID` naming a stream of another replica (sessions shared through a store): the
/// stored events after it, then, for that replica's standalone stream, this replica's one.
pub(super) async fn resume_elsewhere(
    shared: &Shared,
    session: &Session,
    event: &EventId,
    depth: usize,
) -> Result<(Vec<Outgoing>, Option<mpsc::Receiver<Outgoing>>), AttachError> {
    let key = [&*session.id, "/", &event.stream].concat();
    let stored = session.store.replay(&key, event.seq).await.map_err(AttachError::Store)?;
    tracing::info!(
        replica = %shared.replica,
        stream = %event.stream,
        events = stored.len(),
        "resumed a stream of another replica"
    );
    let mut replay: Vec<Outgoing> =
        stored.into_iter().map(|e| (Some(EventId::encode(&event.stream, e.seq)), e.data)).collect();
    if !event.stream.ends_with("-0") {
        // A POST's stream: what was stored so far; the client comes back for the rest.
        return Ok((replay, None));
    }
    match session.standalone.attach(&*session.store, None, depth).await {
        Ok((queued, live)) => {
            replay.extend(queued);
            Ok((replay, live))
        }
        Err(AttachError::Conflict) => Ok((replay, None)),
        Err(e) => Err(e),
    }
}

pub(super) async fn delete(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    if shared.config.stateless || is_per_request_version(&req) {
        return method_not_allowed(&shared);
    }
    let Some(id) = header(&req, SESSION_ID) else {
        return rpc_error(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "Bad Request: Mcp-Session-Id header is required");
    };
    let found = match shared.find_session(id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let Some(session) = found.filter(|s| !s.legacy) else {
        return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
    };
    if !session.bind_principal(&req) {
        return foreign_session();
    }
    if let Err(response) = header_version(&shared, &req) {
        return response;
    }
    if let Some(store) = &shared.config.session_store {
        if let Err(e) = store.remove(&session.id).await {
            return store_unavailable(&e);
        }
    }
    session.close().await;
    Response::new(empty())
}
