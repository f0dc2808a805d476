//! What the server sends us: its requests (`ping`, `roots/list`, `sampling/createMessage`,
//! `elicitation/create`) answered by the host's handlers, each in a task that a
//! `notifications/cancelled` stops, inside the caller scope it is attributed to; its
//! notifications passed to the [`ClientHandler`](super::ClientHandler) (list-changed ones evict
//! the list cache first). Not here: the same handlers answering a stateless server's input
//! requests (`mrtr`).

use super::{listen, CallerId, ClientHandler, ListCache};

use super::handlers::{ElicitationHandler, ElicitationModes, RootsHandler, SamplingHandler};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::peer::{sync_with_caller_opt, with_caller_opt, Handler, Peer};
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject, Id, Notification, Request};
use crate::proto::mcp_types::{
    CreateMessage, Elicit, ElicitRequestParams, EmptyResult, ListRoots, ListRootsResult, Method, Ping, Root,
};
use crate::transport::{Transport, TransportError};

/// The connection's answers to what the server sends.
pub(super) struct ClientPeerHandler {
    pub(super) handler: Option<Arc<dyn ClientHandler>>,
    pub(super) sampling: Option<Arc<dyn SamplingHandler>>,
    pub(super) elicitation: Option<(Arc<dyn ElicitationHandler>, ElicitationModes)>,
    pub(super) roots: Option<Arc<RwLock<Vec<Root>>>>,
    pub(super) roots_handler: Option<Arc<dyn RootsHandler>>,
    /// Handler tasks still running, by request id, so that `notifications/cancelled` stops them.
    pub(super) running: Arc<Mutex<HashMap<Id, tokio::task::AbortHandle>>>,
    /// Evicted by the list-changed notifications.
    pub(super) cache: Arc<Mutex<ListCache>>,
    /// `subscriptions/listen` requests waiting for their acknowledgement.
    pub(super) acks: Arc<listen::AwaitedAcks>,
}

pub(super) fn invalid_params(e: serde_json::Error) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("invalid params: {e}"))
}

impl ClientPeerHandler {
    /// Runs `work` in a task that answers `request` when done, unless cancelled first.
    pub(super) fn spawn_answer<T, F>(&self, peer: &Peer<T>, id: Id, work: F)
    where
        T: Transport,
        F: std::future::Future<Output = Result<Body, ErrorObject>> + Send + 'static,
    {
        let peer = peer.clone();
        let running = self.running.clone();
        let key = id.clone();
        let mut table = self.running.lock().expect("never poisoned");
        let task = crate::transport::task::spawn(async move {
            let outcome = work.await;
            running.lock().expect("never poisoned").remove(&id);
            let _ = peer.respond(&id, outcome).await;
        });
        // The task removes itself when done, which waits for this lock: insert first.
        table.insert(key, task.abort_handle());
    }
}

/// On whose behalf the server sent its request `incoming`: the caller of our request the
/// transport says it relates to (whether that had a caller or not), else the one caller of all
/// our requests in flight that have one, else nobody.
pub(super) fn caller_for<T: Transport>(peer: &Peer<T>, incoming: &Id) -> Option<CallerId> {
    match peer.transport().related_request(incoming) {
        Some(ours) => peer.caller_of(&ours),
        None => peer.sole_caller(),
    }
}

pub(super) fn roots_result(roots: Vec<Root>) -> ListRootsResult {
    ListRootsResult { roots, meta: None, extra: Default::default() }
}

impl<T: Transport> Handler<T> for ClientPeerHandler {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        let params = request.params.clone();
        let decode = |p: Option<Body>| -> Result<Body, serde_json::Error> {
            p.map_or_else(|| Body::serialized(&serde_json::json!({})), Ok)
        };
        let outcome: Result<Body, ErrorObject> = match request.method.as_str() {
            // ping: "The receiver MUST respond promptly with an empty response".
            Ping::NAME => Ok(Body::typed(EmptyResult::default())),
            ListRoots::NAME => match (&self.roots_handler, &self.roots) {
                (Some(handler), _) => {
                    let caller = caller_for(peer, &request.id);
                    let future = sync_with_caller_opt(caller, || handler.list_roots());
                    let work = async move { future.await.map(|roots| Body::typed(roots_result(roots))) };
                    self.spawn_answer(peer, request.id, with_caller_opt(caller, work));
                    return;
                }
                (None, Some(roots)) => Ok(Body::typed(roots_result(roots.read().expect("never poisoned").clone()))),
                (None, None) => Err(ErrorObject::method_not_found()),
            },
            CreateMessage::NAME => match &self.sampling {
                Some(handler) => match decode(params).and_then(|b| b.into_decoded()) {
                    Ok(p) => {
                        let caller = caller_for(peer, &request.id);
                        let future = sync_with_caller_opt(caller, || handler.create_message(p));
                        let work = async move { future.await.map(Body::typed) };
                        self.spawn_answer(peer, request.id, with_caller_opt(caller, work));
                        return;
                    }
                    Err(e) => Err(invalid_params(e)),
                },
                None => Err(ErrorObject::method_not_found()),
            },
            Elicit::NAME => match &self.elicitation {
                Some((handler, modes)) => match decode(params).and_then(|b| b.into_decoded::<ElicitRequestParams>()) {
                    Ok(p) => {
                        let allowed = match &p {
                            ElicitRequestParams::Form(_) => modes.form,
                            ElicitRequestParams::Url(_) => modes.url,
                            ElicitRequestParams::Other(_) => false,
                        };
                        if allowed {
                            let caller = caller_for(peer, &request.id);
                            let future = sync_with_caller_opt(caller, || handler.elicit(p));
                            let work = async move { future.await.map(Body::typed) };
                            self.spawn_answer(peer, request.id, with_caller_opt(caller, work));
                            return;
                        }
                        Err(ErrorObject::new(
                            ErrorCode::INVALID_PARAMS,
                            "elicitation mode not supported: the client did not declare it",
                        ))
                    }
                    Err(e) => Err(invalid_params(e)),
                },
                None => Err(ErrorObject::method_not_found()),
            },
            _ => Err(ErrorObject::method_not_found()),
        };
        let queued = peer.respond_now(&request.id, outcome);
        crate::transport::task::spawn(async move {
            let _ = queued.send().await;
        });
    }

    fn on_notification(&self, _peer: &Peer<T>, notification: Notification) {
        if notification.method.ends_with("/list_changed") {
            self.cache.lock().expect("never poisoned").evict_for(&notification.method);
        }
        self.acks.on_notification(&notification);
        if let Some(handler) = &self.handler {
            handler.on_notification(notification);
        }
    }

    fn on_cancelled(&self, _peer: &Peer<T>, id: &Id) {
        if let Some(task) = self.running.lock().expect("never poisoned").remove(id) {
            task.abort();
        }
    }

    fn on_malformed(&self, _peer: &Peer<T>, _error: &TransportError) {
        // A client does not answer what it cannot read (JSON-RPC asks that of servers); the
        // line is skipped and the connection carries on.
    }
}
