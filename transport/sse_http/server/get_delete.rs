//! GET (the standalone stream, or a stream resumed with `Last-Event-ID`, also one of another
//! replica) and DELETE (ends the session) on the MCP endpoint.
//!
//! Not here: streams' bookkeeping (`stream.rs`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use hyper::http::request::Parts;
use hyper::{Request, Response, StatusCode};
use tokio::sync::mpsc;

use crate::transport::sse_http::event_store::EventId;
use crate::transport::sse_http::service::RequestBody;

use super::answer::sse_response;
use super::bookkeeping::{resume_target, Resume};
use super::decide;
use super::registry::Shared;
use super::reply::{rpc_error, store_unavailable, TRANSPORT_ERROR};
use super::session::Session;
use super::stream::{AttachError, Outgoing};
use crate::transport::sse_http::{empty, HttpBody, LAST_EVENT_ID, SESSION_ID};

pub(super) async fn get(shared: Arc<Shared>, req: Request<RequestBody>) -> Response<HttpBody> {
    let (parts, _) = req.into_parts();
    if let Some(refused) = decide::stream_method_refusal(&shared.config, &parts) {
        return refused;
    }
    if let Err(refused) = decide::stream_accept(&parts) {
        return refused;
    }
    let session = match find_held(&shared, &parts).await {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    session.touch();
    let depth = shared.config.limits.queue_depth.max(1);
    let (resume, kept) = {
        let routes = session.routes.lock().expect("session lock");
        let last_event_id = decide::header_value(&parts, LAST_EVENT_ID);
        let names = routes.streams.iter().map(|s| s.name());
        let shared_store = shared.config.session_store.is_some();
        let resume = resume_target(last_event_id, session.standalone.name(), names, shared_store);
        let kept = match &resume {
            Resume::Here { index: Some(index), .. } => routes.streams.get(*index).cloned(),
            _ => None,
        };
        (resume, kept)
    };
    let (attached, standalone) = match resume {
        Resume::Here { index, seq } => {
            let stream = match index {
                None => session.standalone.clone(),
                Some(_) => kept.expect("the stream found under the same lock"),
            };
            (stream.attach(&*session.store, Some(seq), depth).await, stream.standalone)
        }
        Resume::Elsewhere { event, standalone } => {
            (resume_elsewhere(&shared, &session, &event, depth).await, standalone)
        }
        Resume::Fresh => (session.standalone.attach(&*session.store, None, depth).await, true),
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
            response.headers_mut().insert(SESSION_ID, session.id_header.clone());
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
    let (parts, _) = req.into_parts();
    if let Some(refused) = decide::stream_method_refusal(&shared.config, &parts) {
        return refused;
    }
    let session = match find_held(&shared, &parts).await {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    if let Some(store) = &shared.config.session_store {
        if let Err(e) = store.remove(&session.id).await {
            return store_unavailable(&e);
        }
    }
    session.close().await;
    Response::new(empty())
}

/// The caller's session named by a GET's or DELETE's `Mcp-Session-Id`, once its
/// `MCP-Protocol-Version` passed; else the refusal (400, 404, 503 when the store cannot be
/// asked).
async fn find_held(shared: &Arc<Shared>, parts: &Parts) -> Result<Arc<Session>, Response<HttpBody>> {
    let id = decide::session_id(parts)?;
    let found = shared.find_session(id).await?;
    let session = Session::held(found, &parts.extensions).map_err(decide::not_held)?;
    decide::header_version(&shared.config, parts)?;
    Ok(session)
}
