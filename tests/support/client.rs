//! A scripted MCP client on our own `Peer`: it answers the server's requests (sampling,
//! elicitation, roots, ping) with closures, records every request and notification it gets,
//! and performs the `initialize` handshake with the capabilities a test chooses.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use mcpwire::peer::{Handler, Peer};
use mcpwire::proto::jsonrpc::{Body, ErrorCode, ErrorObject, Notification, Request};
use mcpwire::proto::session::{Mode, RequestOptions, Role};
use mcpwire::transport::Transport;
use serde_json::{json, Value};

/// Answers one server request: `(method, params)` → result or error.
pub type Answer = Arc<dyn Fn(&str, &Value) -> Result<Value, ErrorObject> + Send + Sync>;

/// What the client saw.
#[derive(Clone, Default)]
pub struct Seen {
    pub requests: Arc<Mutex<Vec<(String, Value)>>>,
    pub notifications: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Seen {
    pub fn requests(&self, method: &str) -> Vec<Value> {
        self.requests.lock().unwrap().iter().filter(|(m, _)| m == method).map(|(_, p)| p.clone()).collect()
    }

    pub fn notifications(&self, method: &str) -> Vec<Value> {
        self.notifications.lock().unwrap().iter().filter(|(m, _)| m == method).map(|(_, p)| p.clone()).collect()
    }
}

pub struct Scripted {
    pub seen: Seen,
    pub answer: Answer,
    /// How long each answer takes.
    pub delay: std::time::Duration,
}

fn params_value(params: &Option<Body>) -> Value {
    params
        .as_ref()
        .and_then(|b| b.to_raw().ok())
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null)
}

impl<T: Transport> Handler<T> for Scripted {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        let params = params_value(&request.params);
        self.seen.requests.lock().unwrap().push((request.method.clone(), params.clone()));
        let answer = self.answer.clone();
        let peer = peer.clone();
        let delay = self.delay;
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let outcome = if request.method == "ping" { Ok(json!({})) } else { answer(&request.method, &params) };
            let outcome = outcome.map(|v| Body::serialized(&v).unwrap());
            let _ = peer.respond(&request.id, outcome).await;
        });
    }

    fn on_notification(&self, _peer: &Peer<T>, notification: Notification) {
        let params = params_value(&notification.params);
        self.seen.notifications.lock().unwrap().push((notification.method, params));
    }
}

/// An answer that refuses everything (-32601).
pub fn refuse_all() -> Answer {
    Arc::new(|_, _| Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")))
}

/// Starts a client over `transport` and completes the handshake with `capabilities`.
pub async fn connect<T: Transport>(transport: T, capabilities: Value, answer: Answer) -> (Peer<T>, Seen) {
    connect_slow(transport, capabilities, answer, std::time::Duration::ZERO).await
}

/// As [`connect`], each answer taking `delay`.
pub async fn connect_slow<T: Transport>(
    transport: T,
    capabilities: Value,
    answer: Answer,
    delay: std::time::Duration,
) -> (Peer<T>, Seen) {
    let seen = Seen::default();
    let handler = Scripted { seen: seen.clone(), answer, delay };
    let peer = Peer::start(transport, Role::Client, Mode::Handshake, Default::default(), handler);
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "scripted", "version": "1"}});
    peer.request("initialize", Some(Body::serialized(&init).unwrap()), RequestOptions::default())
        .await
        .expect("initialize");
    peer.initialized().await.expect("initialized");
    (peer, seen)
}

/// Calls `tools/call` and returns the result as JSON; progress lands in `seen` as
/// `notifications/progress` (the session routes it to the call).
pub async fn call_seen<T: Transport>(
    peer: &Peer<T>,
    seen: &Seen,
    params: Value,
) -> Result<Value, mcpwire::peer::RequestError> {
    let token = params["_meta"]["progressToken"].clone();
    let progress = seen.notifications.clone();
    let on_progress: mcpwire::peer::ProgressCallback = Box::new(move |p| {
        let value = json!({"progressToken": token, "progress": p.progress, "total": p.total, "message": p.message});
        progress.lock().unwrap().push(("notifications/progress".to_owned(), value));
    });
    let body = peer
        .request_with_progress(
            "tools/call",
            Some(Body::serialized(&params).unwrap()),
            RequestOptions::default(),
            Some(on_progress),
        )
        .await?;
    Ok(serde_json::from_str(body.to_raw().unwrap().get()).unwrap())
}

/// Calls `tools/call` and returns the result as JSON.
pub async fn call<T: Transport>(peer: &Peer<T>, params: Value) -> Result<Value, mcpwire::peer::RequestError> {
    let body = peer.request("tools/call", Some(Body::serialized(&params).unwrap()), RequestOptions::default()).await?;
    Ok(serde_json::from_str(body.to_raw().unwrap().get()).unwrap())
}

/// Any request, result as JSON.
pub async fn request<T: Transport>(
    peer: &Peer<T>,
    method: &str,
    params: Value,
) -> Result<Value, mcpwire::peer::RequestError> {
    let body = peer.request(method, Some(Body::serialized(&params).unwrap()), RequestOptions::default()).await?;
    Ok(serde_json::from_str(body.to_raw().unwrap().get()).unwrap())
}
