//! A request the client cancelled (`notifications/cancelled`) no longer holds the POST stream
//! that waited for its answer: MCP has the receiver send no response to a cancelled request,
//! so that stream would otherwise stay open, with keep-alives, until the application gave up.
//! Once nothing else waits on it, the stream ends; a late answer goes where an unrelated
//! message goes. Not here: cancelling the work (the application's business, told by the same
//! notification), and 2026-07-28, where a client cancels by closing the stream itself.

use super::session::Session;
use super::stream::Stream;
use crate::proto::jsonrpc::{Id, Message};

/// The `requestId`s the `notifications/cancelled` among `messages` name.
pub(super) fn cancelled_ids(messages: &[Message]) -> Vec<Id> {
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "requestId")]
        request_id: Id,
    }
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Notification(n) if n.method == "notifications/cancelled" => n.params.as_ref(),
            _ => None,
        })
        .filter_map(|p| p.to_raw().ok())
        .filter_map(|raw| serde_json::from_str::<Params>(raw.get()).ok())
        .map(|p| p.request_id)
        .collect()
}

impl Session {
    /// Forgets where the answers to `ids` would go, ending each POST stream left waiting on
    /// nothing.
    pub(super) async fn end_cancelled(&self, ids: Vec<Id>) {
        for id in ids {
            let stream = {
                let mut routes = self.routes.lock().expect("session lock");
                let stream = routes.requests.remove(&id);
                if stream.is_some() {
                    routes.progress.retain(|_, request| *request != id);
                    routes.http_requests.remove(&id);
                }
                stream
            };
            if let Some(stream) = stream {
                stream.cancelled(&id).await;
            }
        }
    }
}

impl Stream {
    /// Request `id` of this POST stream was cancelled: the stream ends once no other waits.
    async fn cancelled(&self, id: &Id) {
        let mut inner = self.inner.lock().await;
        inner.pending.remove(id);
        if inner.pending.is_empty() && !self.standalone && !inner.done {
            inner.done = true;
            inner.live = None;
        }
    }
}
