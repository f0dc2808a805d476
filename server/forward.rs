//! Forwarding: a server whose tools, resources, prompts and completions are answered by
//! something else — another server, or many (a gateway) — instead of registered handlers.
//!
//! [`ServerBuilder::forward`](super::ServerBuilder::forward) plugs in a [`Forwarder`]; every
//! request of [`FORWARDED_METHODS`] then goes to it, params as received, with a [`Context`] of
//! its own, and its answer (a result body or a JSON-RPC error) goes back as it is. Everything
//! else stays with the server: `initialize`, `server/discover`, `ping`, `logging/setLevel` per
//! session, both eras (a 2026-07-28 result is stamped, a handler's asks to the client become
//! multi-round-trip rounds), progress (through the context), cancellation (the forwarder's
//! future is dropped), panics (-32603), shutdown (waits for forwarded requests in flight).
//! The catalogs change under the server's feet, so the forwarder announces changes with
//! [`Server::list_changed`](super::Server::list_changed).
//!
//! A method of a capability [`Forwarding`] does not advertise is -32601 and never reaches the
//! forwarder.
//!
//! Not here: argument and output schema checks (the server behind the forwarder makes them),
//! tasks (a forwarded `tools/call` runs synchronously), `resources/subscribe` (kept per session
//! by the server and not forwarded), what the forwarder does with a request.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::context::UntilInput;
use super::dispatch::{forget_running, input_required, invalid_params, panicked, CatchUnwind, Dispatcher, Era};
use super::Context;
use crate::peer::Peer;
use crate::proto::jsonrpc::{Body, ErrorObject, Id};
use crate::proto::mcp_types::{CallToolRequestParams, RequestMeta};
use crate::transport::Transport;

/// The methods a [`Forwarder`] answers.
pub const FORWARDED_METHODS: [&str; 8] = [
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

/// The future a forwarder returns: the result body, or the JSON-RPC error to answer.
pub type ForwardFuture = Pin<Box<dyn Future<Output = Result<Body, ErrorObject>> + Send>>;

/// One request handed to a [`Forwarder`].
#[non_exhaustive]
pub struct Forwarded {
    /// One of [`FORWARDED_METHODS`].
    pub method: &'static str,
    /// The params as the client sent them.
    pub params: Option<Body>,
    /// The request's context: progress, cancellation, log, and requests to the client.
    pub context: Context,
}

/// Answers the requests of [`FORWARDED_METHODS`]. Any
/// `Fn(Forwarded) -> impl Future<Output = Result<Body, ErrorObject>>` closure is one.
pub trait Forwarder: Send + Sync + 'static {
    /// Answers one request. The future is dropped when the client cancels the request.
    fn forward(&self, request: Forwarded) -> ForwardFuture;
}

impl<F, Fut> Forwarder for F
where
    F: Fn(Forwarded) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Body, ErrorObject>> + Send + 'static,
{
    fn forward(&self, request: Forwarded) -> ForwardFuture {
        Box::pin(self(request))
    }
}

/// Which capabilities a forwarding server advertises besides `tools` and `logging`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Forwarding {
    /// `resources` (lists and reads forwarded).
    pub resources: bool,
    /// `prompts`.
    pub prompts: bool,
    /// `completions`.
    pub completions: bool,
}

impl Forwarding {
    /// These capabilities.
    pub fn new(resources: bool, prompts: bool, completions: bool) -> Forwarding {
        Forwarding { resources, prompts, completions }
    }
}

/// The members of a request's params the server itself needs: who asked (`_meta`), what the
/// request is about (for a 2026-07-28 round's binding), and a round's answers.
#[derive(Deserialize, Default, Clone)]
struct Head {
    #[serde(rename = "_meta", default)]
    meta: Option<RequestMeta>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<Map<String, Value>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

/// The members of the params that bind a 2026-07-28 round to its request.
#[derive(Deserialize, Default, Clone)]
struct Bound {
    #[serde(default)]
    arguments: Option<Value>,
}

impl Dispatcher {
    /// Hands request `id` to the forwarder and answers with what it gives.
    pub(super) fn forward<T: Transport>(
        &self,
        peer: &Peer<T>,
        id: Id,
        method: &'static str,
        params: Option<Body>,
        era: &Era,
    ) {
        let forwarder = self.inner.forwarder.clone().expect("called only with a forwarder");
        let features = self.inner.features;
        let offered = match method {
            "resources/list" | "resources/templates/list" | "resources/read" => features.resources,
            "prompts/list" | "prompts/get" => features.prompts,
            "completion/complete" => features.completions,
            _ => true,
        };
        if !offered {
            let error = ErrorObject::new(crate::proto::jsonrpc::ErrorCode::METHOD_NOT_FOUND, "Method not found");
            return self.answer(peer, id, era, Err(error));
        }
        // A `tools/call` the transport already decoded is read as it is: decoding a typed body
        // as another type would write all its arguments out as JSON first.
        let typed_call = params.as_ref().and_then(Body::typed_as::<CallToolRequestParams>);
        // The typed call's name is borrowed, not copied into the head: only a round needs it.
        let (head, typed_name) = match typed_call {
            Some(call) => (
                Head {
                    meta: call.meta.clone(),
                    name: None,
                    uri: None,
                    input_responses: call.input_responses.clone(),
                    request_state: call.request_state.clone(),
                },
                Some(call.name.as_str()),
            ),
            None => match params.as_ref().map(Body::decode::<Head>).transpose() {
                Ok(head) => (head.unwrap_or_default(), None),
                Err(e) => return self.answer(peer, id, era, Err(invalid_params(e))),
            },
        };
        let target = typed_name.or(head.name.as_deref()).or(head.uri.as_deref()).unwrap_or_default();
        let bound = || match typed_call {
            Some(call) => Value::Object(call.arguments.clone().unwrap_or_default()),
            None => {
                let bound = params.as_ref().and_then(|p| p.decode::<Bound>().ok()).unwrap_or_default();
                bound.arguments.unwrap_or_else(|| Value::Object(Map::new()))
            }
        };
        let input = match self.input_round(
            era,
            method,
            target,
            bound,
            head.input_responses.as_ref(),
            head.request_state.as_deref(),
        ) {
            Ok(input) => input,
            Err(e) => return self.answer(peer, id, era, Err(e)),
        };
        let (mut context, canceller) = self.context(peer, &id, head.meta, None, era);
        context.input = input.as_ref().map(|(round, _)| round.clone());
        let inner = input.as_ref().map(|_| self.inner.clone());
        let semaphore = (method == "tools/call").then(|| self.semaphore.clone());
        let serial = self.serial.fetch_add(1, Ordering::Relaxed);
        let guard = self.tracker.enter();
        let running = self.running.clone();
        let peer = peer.clone();
        let request_id = id.clone();
        let finish = era.clone();
        let work = Box::pin(async move {
            let joined = {
                let _permit = match semaphore {
                    Some(semaphore) => Some(semaphore.acquire_owned().await),
                    None => None,
                };
                let round = input.as_ref().map(|(round, _)| round.clone());
                let request = Forwarded { method, params, context };
                CatchUnwind(UntilInput { work: forwarder.forward(request), round }).await
            };
            forget_running(&running, &request_id, serial);
            let outcome = match joined {
                Ok(Some(outcome)) => outcome,
                Ok(None) => {
                    let (round, binding) = input.as_ref().expect("only a request with a round stops for input");
                    let inner: &Arc<_> = inner.as_ref().expect("kept with the round");
                    Ok(input_required(inner, round, binding))
                }
                Err(payload) => Err(panicked(method, payload)),
            };
            let _ = peer.respond(&request_id, finish.finish(outcome)).await;
            drop(guard);
        });
        self.run_cancellable(id, serial, canceller, work);
    }
}

/// The forwarded method `method` names, as a `'static` str.
pub(super) fn forwarded(method: &str) -> Option<&'static str> {
    FORWARDED_METHODS.iter().copied().find(|m| *m == method)
}
