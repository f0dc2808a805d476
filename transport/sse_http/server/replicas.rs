//! Sessions shared between replicas through a [`SessionStore`]: sessions ended elsewhere,
//! messages relayed from other replicas, responses relayed to the replica that waits for them,
//! a session rebuilt from its record, and the state changes written to the record.
//!
//! Not here: the store itself (`session_store.rs`, `redis_store.rs`). None of this runs
//! without a session store.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use hyper::Response;
use tokio::sync::{mpsc, watch};

use crate::transport::sse_http::session_store::{changes_state, RelayKind, Relayed, StoreError};

use super::bookkeeping::{namespaced, relayed_fate, response_owner, RelayedFate, ResponseOwner};
use super::config::ResponseMode;
use super::registry::Shared;
use super::reply::store_unavailable;
use super::session::{answered_id, Forget, Session};
use crate::proto::jsonrpc::{self, Body, Id, Message};
use crate::transport::sse_http::{random_id, HttpBody};

/// Ends this server's copy of every session the session store announces as removed (a DELETE
/// through another replica).
pub(super) async fn end_sessions_ended_elsewhere(
    shared: Weak<Shared>,
    mut ended: tokio::sync::broadcast::Receiver<String>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let id = tokio::select! {
            id = ended.recv() => match id {
                Ok(id) => id,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = stopped.changed() => return,
        };
        let Some(shared) = shared.upgrade() else { return };
        if let Some(session) = shared.session(&id) {
            session.end(Forget::HereWithEvents).await;
        }
    }
}

/// Puts each message other replicas relay here where it belongs: a response with the request
/// of this replica's application that waits for it, a message for the standalone stream on
/// that stream (queued for the next GET when none is open, as for a message made here).
/// Dropped with a log line: one for a session this replica does not hold, and a response that
/// answers no request this replica sent in that session.
pub(super) async fn take_relayed(
    shared: Weak<Shared>,
    mut relayed: mpsc::Receiver<Relayed>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let relayed = tokio::select! {
            relayed = relayed.recv() => match relayed {
                Some(relayed) => relayed,
                None => return,
            },
            _ = stopped.changed() => return,
        };
        let Some(shared) = shared.upgrade() else { return };
        let replica = &shared.replica;
        let session = shared.session(&relayed.session);
        let message = match relayed.kind {
            RelayKind::Response if session.is_some() => match Message::from_slice(&relayed.message) {
                Ok(message) => Some(message),
                Err(e) => {
                    tracing::warn!(%replica, "dropped a relayed response that is not JSON-RPC: {e}");
                    continue;
                }
            },
            _ => None,
        };
        let response_to = match relayed.kind {
            RelayKind::Response => Some(message.as_ref().and_then(answered_id)),
            RelayKind::Standalone => None,
        };
        let (session, message) = match (relayed_fate(session.is_some(), response_to, replica), session) {
            (RelayedFate::NotHeld, _) | (_, None) => {
                tracing::warn!(%replica, kind = ?relayed.kind, "dropped a relayed message: its session is not held here");
                continue;
            }
            (RelayedFate::Standalone, Some(session)) => {
                session.standalone.push(&*session.store, relayed.message, None).await;
                tracing::info!(%replica, "wrote a relayed message on the standalone stream");
                continue;
            }
            (RelayedFate::Answer(n), Some(session)) => {
                let answer = message.and_then(|message| session.restore_answer(message, n));
                (session, answer)
            }
            (RelayedFate::AnswersNothing, Some(session)) => (session, None),
        };
        let Some(message) = message else {
            tracing::warn!(%replica, "dropped a relayed response that answers no request of its session here");
            continue;
        };
        tracing::info!(%replica, "a relayed response reached the request waiting for it");
        session.deliver(vec![message]).await;
    }
}

/// The client's responses among `messages` to requests of this replica get back the ids the
/// application gave them; those to requests of another replica are relayed to it and taken
/// out. Dropped with a log line: a response naming this replica that answers none of its
/// requests in this session, and one for a replica that is gone or never was. `Err` is the
/// answer (503) when the store cannot be reached to relay one; nothing of the POST is handed
/// on then.
#[allow(clippy::result_large_err)]
pub(super) async fn route_responses(
    shared: &Shared,
    session: &Session,
    messages: Vec<Message>,
) -> Result<Vec<Message>, Response<HttpBody>> {
    let Some(store) = shared.config.session_store.as_ref() else { return Ok(messages) };
    if !messages.iter().any(|m| answered_id(m).and_then(namespaced).is_some()) {
        return Ok(messages);
    }
    let replica = &shared.replica;
    let mut kept = Vec::with_capacity(messages.len());
    for message in messages {
        let owner = match response_owner(answered_id(&message), replica) {
            ResponseOwner::Unnamed => {
                kept.push(message);
                continue;
            }
            ResponseOwner::Here(n) => {
                match session.restore_answer(message, n) {
                    Some(message) => kept.push(message),
                    None => tracing::warn!(%replica, "dropped a response that answers no request of its session here"),
                }
                continue;
            }
            ResponseOwner::Replica(owner) => owner.to_owned(),
        };
        let relayed = Relayed {
            session: session.id.clone(),
            kind: RelayKind::Response,
            message: crate::transport::sse_http::buffers::BODIES.encode(&message),
        };
        match store.relay(&owner, &relayed).await {
            Ok(true) => tracing::info!(%replica, %owner, "relayed a response to the replica that asked"),
            Ok(false) => {
                tracing::warn!(%replica, %owner, "dropped a response for a replica that is gone or never was")
            }
            Err(e) => {
                tracing::warn!(%replica, %owner, "could not relay a response: {e}");
                return Err(store_unavailable(&e));
            }
        }
    }
    Ok(kept)
}

/// Whether `id` could be one this server (or a replica) minted: the store is asked about
/// nothing else.
pub(super) fn plausible_session_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// How long a rebuilt session's application may take to answer the replayed `initialize`
/// before the rest is replayed anyway.
pub(super) const REPLAYED_INITIALIZE_WAIT: Duration = Duration::from_secs(10);

/// Rebuilds a session this server does not hold from the session store: a new transport for
/// the application, fed the record's `initialize`, then, once it is answered,
/// `notifications/initialized` and the state-changing requests since; their answers are
/// dropped. As from a real client, `notifications/initialized` comes after the answer: the
/// server layer then counts the handshake complete, and may send its own requests and
/// gated notifications (elicitation, `list_changed`) on the rebuilt session too.
/// `Ok(None)`: no such session.
pub(super) async fn restore(shared: &Arc<Shared>, id: &str) -> Result<Option<Arc<Session>>, Response<HttpBody>> {
    let Some(store) = shared.config.session_store.clone() else { return Ok(None) };
    if !plausible_session_id(id) {
        return Ok(None);
    }
    let record = match store.load(id).await {
        Ok(Some(record)) => record,
        Ok(None) => return Ok(None),
        Err(e) => return Err(store_unavailable(&e)),
    };
    let raw = |text: &str| {
        serde_json::value::RawValue::from_string(text.to_owned())
            .map(Body::Raw)
            .map_err(|e| Box::new(store_unavailable(&StoreError::Corrupt(e.to_string()))))
    };
    let tag = random_id();
    let init_id = Id::String(format!("mcpwire-restore-{tag}-0"));
    let initialize = Message::Request(jsonrpc::Request {
        id: init_id.clone(),
        method: "initialize".to_owned(),
        params: Some(raw(&record.initialize).map_err(|r| *r)?),
    });
    let mut messages = vec![Message::Notification(jsonrpc::Notification {
        method: "notifications/initialized".to_owned(),
        params: None,
    })];
    let mut replayed_ids: HashSet<Id> = HashSet::from([init_id.clone()]);
    for (n, change) in record.replayed.iter().enumerate() {
        let id = Id::String(format!("mcpwire-restore-{tag}-{}", n + 1));
        replayed_ids.insert(id.clone());
        messages.push(Message::Request(jsonrpc::Request {
            id,
            method: change.method.clone(),
            params: Some(raw(&change.params).map_err(|r| *r)?),
        }));
    }
    let json = shared.config.response_mode == ResponseMode::Json;
    let (session, transport) = shared.build_session(id.to_owned(), false, json);
    *session.initialize_id.lock().expect("session lock") = Some(init_id);
    *session.replayed_ids.lock().expect("session lock") = replayed_ids;
    *session.record.lock().expect("session lock") = Some(record);
    let (answered, initialize_answered) = tokio::sync::oneshot::channel();
    *session.replayed_initialize_answered.lock().expect("session lock") = Some(answered);
    crate::transport::task::spawn((shared.app)(transport));
    if !session.deliver(vec![initialize]).await {
        return Ok(None);
    }
    let _ = tokio::time::timeout(REPLAYED_INITIALIZE_WAIT, initialize_answered).await;
    session.initialized_given.store(true, Ordering::Release);
    if !session.deliver(messages).await {
        return Ok(None);
    }
    // Two requests for the same unknown session may both have rebuilt it: the first kept wins.
    let kept = {
        let mut sessions = shared.sessions.lock().expect("sessions lock");
        match sessions.get(id) {
            Some(first) => Some(first.clone()),
            None => {
                sessions.insert(id.to_owned(), session.clone());
                None
            }
        }
    };
    match kept {
        Some(first) => {
            session.end(Forget::Here).await;
            Ok(Some(first))
        }
        None => Ok(Some(session)),
    }
}

/// Writes the state changes among `messages` (`logging/setLevel`, `resources/(un)subscribe`)
/// to the session store before they are handed on, so that another replica rebuilding the
/// session knows them. `Err` is the answer when the store cannot be written.
#[allow(clippy::result_large_err)]
pub(super) async fn record_changes(
    shared: &Shared,
    session: &Session,
    messages: &[Message],
) -> Result<(), Response<HttpBody>> {
    let Some(store) = shared.config.session_store.as_ref() else { return Ok(()) };
    let changes: Vec<&jsonrpc::Request> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) if changes_state(&r.method) => Some(r),
            _ => None,
        })
        .collect();
    if changes.is_empty() {
        return Ok(());
    }
    let Some(mut record) = session.record.lock().expect("session lock").clone() else { return Ok(()) };
    let mut changed = false;
    for request in changes {
        let params =
            request.params.as_ref().and_then(|p| p.to_raw().ok()).map_or("{}".to_owned(), |raw| raw.get().to_owned());
        changed |= record.apply(&request.method, &params);
    }
    if !changed {
        return Ok(());
    }
    store.save(&session.id, &record, shared.config.session_idle_timeout).await.map_err(|e| store_unavailable(&e))?;
    *session.record.lock().expect("session lock") = Some(record);
    Ok(())
}
