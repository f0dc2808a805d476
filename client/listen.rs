//! `subscriptions/listen` on the client side (2026-07-28): [`Client::listen`] opens the
//! long-lived request whose stream carries the list-changed and resource-updated notifications
//! a client without a session would otherwise never hear
//! ([subscriptions](https://modelcontextprotocol.io/specification/2026-07-28/basic/patterns/subscriptions)).
//!
//! The request is sent with no timeout and kept open by a task of its own. [`Client::listen`]
//! returns once the server's first message, `notifications/subscriptions/acknowledged`, has
//! arrived (waiting at most [`ClientOptions::request_timeout`](super::ClientOptions::request_timeout)
//! for it), with the filter the server agreed to ([`Listening::agreed`]). Every notification on
//! the stream, the acknowledgement included, goes to the client's
//! [`ClientHandler`](super::ClientHandler) like any other, and the list-changed ones evict the
//! client's list cache. Dropping the [`Listening`] handle cancels the request: on stdio
//! `notifications/cancelled` is sent; over Streamable HTTP the request's SSE stream is closed,
//! which is the cancellation there.
//!
//! How a stream ends, as [`Listening::ended`] reports it: the server's result
//! (`Ok`, a graceful end); [`ClientError::Closed`] or [`ClientError::ServerExited`] when the
//! connection ends; [`ClientError::Rpc`] -32603 when the server tears it down with
//! `notifications/cancelled` (the session core ends the request: "the server ended the
//! subscription") and, over HTTP, when the server drops the stream ("the server ended the
//! response stream without answering"). Nothing here re-opens a stream: that is the caller's
//! choice (the connection set reconnects the server). A server without the method (-32601)
//! makes [`Client::listen`] fail with [`ClientError::Rpc`], once.
//!
//! Not here: the handshake era, where the session's notifications arrive without asking:
//! [`Client::listen`] refuses there with [`ClientError::CapabilityNotSupported`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::oneshot;

use super::{decode_named, Client, ClientError};
use crate::proto::envelope::SUBSCRIPTION_ID_KEY;
use crate::proto::jsonrpc::{Body, Id, Notification};
use crate::proto::mcp_types::{
    Method, SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams, SubscriptionsListen,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use crate::proto::session::RequestOptions;
use crate::transport::Transport;

const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// The listen requests of one connection still waiting for their acknowledgement, by id.
#[derive(Default)]
pub(super) struct AwaitedAcks(Mutex<HashMap<Id, oneshot::Sender<SubscriptionFilter>>>);

impl AwaitedAcks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Id, oneshot::Sender<SubscriptionFilter>>> {
        self.0.lock().expect("never poisoned")
    }

    /// Hands an acknowledgement to the listen request it names, if one is waiting for it.
    pub(super) fn on_notification(&self, notification: &Notification) {
        if notification.method != ACKNOWLEDGED {
            return;
        }
        let Some(params) =
            notification.params.as_ref().and_then(|p| p.decode::<SubscriptionsAcknowledgedNotificationParams>().ok())
        else {
            return;
        };
        let id = params
            .meta
            .as_ref()
            .and_then(|m| m.get(SUBSCRIPTION_ID_KEY))
            .and_then(|v| serde_json::from_value::<Id>(v.clone()).ok());
        if let Some(waiting) = id.and_then(|id| self.lock().remove(&id)) {
            let _ = waiting.send(params.notifications);
        }
    }
}

/// Forgets a listen request's awaited acknowledgement when its task ends, however it ends.
struct ForgetAck {
    acks: Arc<AwaitedAcks>,
    id: Arc<Mutex<Option<Id>>>,
}

impl Drop for ForgetAck {
    fn drop(&mut self) {
        if let Some(id) = self.id.lock().expect("never poisoned").take() {
            self.acks.lock().remove(&id);
        }
    }
}

/// An open `subscriptions/listen` stream. Dropping it cancels the request.
#[derive(Debug)]
pub struct Listening {
    id: Id,
    agreed: SubscriptionFilter,
    task: Option<tokio::task::JoinHandle<Result<SubscriptionsListenResult, ClientError>>>,
}

impl Listening {
    /// The listen request's id: the `io.modelcontextprotocol/subscriptionId` of every
    /// notification on this stream.
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// What the server agreed to send (its acknowledgement): may be less than was asked.
    pub fn agreed(&self) -> &SubscriptionFilter {
        &self.agreed
    }

    /// Whether the stream has ended.
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Waits for the stream to end: `Ok` with the server's result when it ended it gracefully,
    /// else why it ended (see the module docs).
    ///
    /// # Cancel safety
    /// Dropping the future drops the handle, which cancels the request.
    ///
    /// # Errors
    /// [`ClientError::Closed`] / [`ClientError::ServerExited`] when the connection ended;
    /// [`ClientError::Rpc`] when the server answered an error (or, over HTTP, dropped the stream).
    pub async fn ended(mut self) -> Result<SubscriptionsListenResult, ClientError> {
        let task = self.task.take().expect("only taken here");
        joined(task.await)
    }

    /// Cancels the request (the same as dropping the handle).
    pub fn cancel(self) {}
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            // Dropping the request's future inside the task cancels it upstream.
            task.abort();
        }
    }
}

fn joined(
    outcome: Result<Result<SubscriptionsListenResult, ClientError>, tokio::task::JoinError>,
) -> Result<SubscriptionsListenResult, ClientError> {
    outcome.unwrap_or_else(|e| {
        Err(ClientError::Closed {
            method: SubscriptionsListen::NAME.to_owned(),
            reason: Some(format!("the listen task stopped: {e}")),
        })
    })
}

impl<T: Transport> Client<T> {
    /// `subscriptions/listen` (2026-07-28): opens a stream of the notifications `filter` asks
    /// for and returns once the server acknowledged it.
    ///
    /// # Cancel safety
    /// Dropping the future before it completes cancels the request.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] in the handshake era (the session's
    /// notifications arrive without it); [`ClientError::Rpc`] when the server refuses (-32601
    /// when it has no such method); [`ClientError::Timeout`] when no acknowledgement comes
    /// within the request timeout (the request is then cancelled);
    /// [`ClientError::InvalidResult`] when the server ends the stream before acknowledging it;
    /// otherwise as any request.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Listening, ClientError> {
        let method = SubscriptionsListen::NAME;
        if self.inner.session_meta.is_none() {
            return Err(ClientError::CapabilityNotSupported {
                method: method.to_owned(),
                capability: "protocol version 2026-07-28",
            });
        }
        let invalid = |source| ClientError::InvalidResult { method: method.to_owned(), source };
        let params = SubscriptionsListenRequestParams { notifications: filter, meta: None, extra: Default::default() };
        let mut value: Value = serde_json::to_value(&params).map_err(invalid)?;
        self.write_session_meta(&mut value).map_err(invalid)?;
        let body = Body::serialized(&value).map_err(invalid)?;

        let (acknowledged, ack) = oneshot::channel();
        let acks = self.inner.acks.clone();
        let noted = Arc::new(Mutex::new(None::<Id>));
        let forget = ForgetAck { acks: acks.clone(), id: noted.clone() };
        let on_id = {
            let noted = noted.clone();
            Box::new(move |id: &Id| {
                acks.lock().insert(id.clone(), acknowledged);
                *noted.lock().expect("never poisoned") = Some(id.clone());
            })
        };
        let peer = self.inner.peer.clone();
        let mut task = Some(tokio::spawn(async move {
            let _forget = forget;
            // The stream lasts as long as it lasts: no timeout.
            let options = RequestOptions { timeout: None, ..RequestOptions::default() };
            let outcome = peer.request_noting_id(method, Some(body), options, on_id).await;
            decode_named::<T, SubscriptionsListenResult>(&peer, method, outcome, None).await
        }));
        // Dropping this future (or failing below) aborts the task, which cancels the request.
        struct AbortOnDrop<'a, R>(&'a mut Option<tokio::task::JoinHandle<R>>);
        impl<R> Drop for AbortOnDrop<'_, R> {
            fn drop(&mut self) {
                if let Some(task) = self.0.take() {
                    task.abort();
                }
            }
        }
        let guard = AbortOnDrop(&mut task);
        let waited = match self.inner.request_timeout {
            Some(limit) => tokio::time::timeout(limit, ack)
                .await
                .map_err(|_| ClientError::Timeout { method: method.to_owned(), after: Some(limit) })?,
            None => ack.await,
        };
        match waited {
            Ok(agreed) => {
                let id = noted.lock().expect("never poisoned").clone().expect("noted before the request went out");
                Ok(Listening { id, agreed, task: guard.0.take() })
            }
            // The acknowledgement can no longer come: the request ended first.
            Err(_) => {
                let task = guard.0.take().expect("still there");
                match joined(task.await) {
                    Ok(_) => Err(invalid(serde::de::Error::custom(
                        "the server ended the subscriptions/listen stream before acknowledging it",
                    ))),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_acknowledgement_reaches_the_listen_request_it_names() {
        let acks = AwaitedAcks::default();
        let (tx, mut rx) = oneshot::channel();
        acks.lock().insert(Id::from(7), tx);
        let other = Notification {
            method: ACKNOWLEDGED.to_owned(),
            params: Some(Body::typed(json!({
                "_meta": {"io.modelcontextprotocol/subscriptionId": 8},
                "notifications": {"toolsListChanged": true}
            }))),
        };
        acks.on_notification(&other);
        assert!(rx.try_recv().is_err(), "an acknowledgement of another stream is not ours");
        let ours = Notification {
            method: ACKNOWLEDGED.to_owned(),
            params: Some(Body::typed(json!({
                "_meta": {"io.modelcontextprotocol/subscriptionId": 7},
                "notifications": {"toolsListChanged": true}
            }))),
        };
        acks.on_notification(&ours);
        let agreed = rx.try_recv().expect("delivered");
        assert_eq!(serde_json::to_value(agreed).unwrap(), json!({"toolsListChanged": true}));
        assert!(acks.lock().is_empty());
    }
}
