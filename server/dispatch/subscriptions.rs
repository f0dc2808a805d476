//! `subscriptions/listen` (2026-07-28): a request that stays open and carries the change
//! notifications its client asked for — `notifications/{tools,prompts,resources}/list_changed`
//! and `notifications/resources/updated` for the URIs it named — each tagged with
//! `_meta["io.modelcontextprotocol/subscriptionId"]` (the listen request's id), after a first
//! `notifications/subscriptions/acknowledged` saying what the server agreed to send. Over
//! Streamable HTTP they travel on the request's SSE stream; on stdio beside everything else.
//!
//! The stream ends when the client cancels the request or the connection ends; it gets no
//! result before that. What a server does not offer (prompts or resources it never had) is
//! left out of the acknowledgement and never sent.
//!
//! Not here: handshake-era subscriptions (`resources/subscribe`, per session, in `features`)
//! and the broadcasting itself (the registry).
//!
//! Spec (2026-07-28): `basic/patterns/subscriptions`.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::{invalid_params, Dispatcher, Era};
use crate::peer::Peer;
use crate::proto::envelope::SUBSCRIPTION_ID_KEY;
use crate::proto::jsonrpc::{Body, Id};
use crate::proto::mcp_types::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
};
use crate::server::registry::{Listener, NOTIFY_QUEUE};
use crate::transport::Transport;

/// What of `asked` a server with these features can honour.
fn agreed(asked: &SubscriptionFilter, features: crate::server::registry::Features) -> SubscriptionFilter {
    let wanted = |flag: Option<bool>, offered: bool| (flag == Some(true) && offered).then_some(true);
    SubscriptionFilter {
        tools_list_changed: wanted(asked.tools_list_changed, true),
        prompts_list_changed: wanted(asked.prompts_list_changed, features.prompts),
        resources_list_changed: wanted(asked.resources_list_changed, features.resources),
        resource_subscriptions: asked.resource_subscriptions.clone().filter(|_| features.resources),
        extra: Default::default(),
    }
}

/// `params` with `_meta.subscriptionId` set to `id`.
fn tagged(params: Option<Body>, id: &Id) -> Body {
    let mut map: Map<String, Value> =
        params.and_then(|p| p.to_raw().ok().and_then(|raw| serde_json::from_str(raw.get()).ok())).unwrap_or_default();
    let meta = map.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(SUBSCRIPTION_ID_KEY.to_owned(), serde_json::to_value(id).unwrap_or(Value::Null));
    }
    Body::typed(Value::Object(map))
}

impl Dispatcher {
    /// Opens a listen stream for request `id`.
    pub(super) fn listen<T: Transport>(&self, peer: &Peer<T>, id: Id, params: Option<Body>, era: &Era) {
        let params: SubscriptionsListenRequestParams = match params.map(|p| p.into_decoded()) {
            Some(Ok(params)) => params,
            Some(Err(e)) => return self.answer(peer, id, era, Err(invalid_params(e))),
            None => return self.answer(peer, id, era, Err(invalid_params("subscriptions/listen needs params"))),
        };
        let filter = agreed(&params.notifications, self.inner.features);
        let (queue, mut queued) = mpsc::channel(NOTIFY_QUEUE);
        let key = self.inner.registry.add_listener(Arc::new(Listener { filter: filter.clone(), queue }));
        if let Some(replaced) = self.listeners.lock().expect("listeners lock").insert(id.clone(), key) {
            self.inner.registry.remove_listener(replaced);
        }
        let peer = peer.clone();
        crate::transport::task::spawn(async move {
            let mut meta = Map::new();
            meta.insert(SUBSCRIPTION_ID_KEY.to_owned(), serde_json::to_value(&id).unwrap_or(Value::Null));
            let ack = SubscriptionsAcknowledgedNotificationParams {
                notifications: filter,
                meta: Some(meta),
                extra: Default::default(),
            };
            let acknowledged = "notifications/subscriptions/acknowledged";
            if peer.notify_related(acknowledged, Some(Body::typed(ack)), &id).await.is_err() {
                return;
            }
            while let Some((method, params)) = queued.recv().await {
                if peer.notify_related(method, Some(tagged(params, &id)), &id).await.is_err() && peer.is_closed() {
                    break;
                }
            }
        });
    }

    /// Ends the listen stream of request `id`, if it is one.
    pub(super) fn stop_listening(&self, id: &Id) {
        if let Some(key) = self.listeners.lock().expect("listeners lock").remove(id) {
            self.inner.registry.remove_listener(key);
        }
    }

    /// Ends every listen stream of this connection.
    pub(super) fn stop_all_listening(&self) {
        let keys: Vec<u64> = self.listeners.lock().expect("listeners lock").drain().map(|(_, k)| k).collect();
        for key in keys {
            self.inner.registry.remove_listener(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_what_is_offered_is_agreed() {
        let asked: SubscriptionFilter = serde_json::from_value(json!({
            "toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": ["a://b"]
        }))
        .unwrap();
        let features =
            crate::server::registry::Features { resources: false, prompts: true, completions: false, forwarded: false };
        let agreed = agreed(&asked, features);
        assert_eq!(
            serde_json::to_value(&agreed).unwrap(),
            json!({"toolsListChanged": true, "promptsListChanged": true})
        );
    }

    #[test]
    fn notifications_are_tagged_with_the_subscription() {
        let body = tagged(None, &Id::from(7));
        assert_eq!(body.to_raw().unwrap().get(), r#"{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}"#);
        let body = tagged(Some(Body::typed(json!({"uri": "a://b"}))), &Id::String("s".into()));
        let value: Value = serde_json::from_str(body.to_raw().unwrap().get()).unwrap();
        assert_eq!(value, json!({"uri": "a://b", "_meta": {"io.modelcontextprotocol/subscriptionId": "s"}}));
    }
}
