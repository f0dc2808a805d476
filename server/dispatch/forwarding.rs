//! The dispatcher's side of forwarding: a request of
//! [`forwarded_methods`](crate::server::forward::forwarded_methods) handed to the server's
//! [`Forwarder`](crate::server::forward::Forwarder) with a context of its own, in both eras
//! (a 2026-07-28 round's answers and binding), under the tool-call limit, cancellable, its
//! panic a -32603, and its answer sent back as the forwarder gives it.
//!
//! Not here: the forwarding API ([`crate::server::forward`]), what the forwarder does.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    forget_running, input_required, invalid_params, panicked, write_arguments, CatchUnwind, Dispatcher, Era, RoundOf,
};
use crate::peer::Peer;
use crate::proto::jsonrpc::{Body, Id};
use crate::proto::mcp_types::{CallToolRequestParams, RequestMeta};
use crate::server::context::UntilInput;
use crate::server::forward::Forwarded;
use crate::transport::Transport;

/// The members of a request's params the server itself needs: who asked (`_meta`), what the
/// request is about (for a 2026-07-28 round's binding), and a round's answers.
#[derive(Deserialize, Default, Clone)]
struct Head {
    #[serde(rename = "_meta", default)]
    meta: Option<Box<RequestMeta>>,
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
        let bound = |out: &mut Vec<u8>| match typed_call {
            Some(call) => write_arguments(out, call.arguments.as_ref().unwrap_or(&Map::new())),
            None => {
                let bound = params.as_ref().and_then(|p| p.decode::<Bound>().ok()).unwrap_or_default();
                write_arguments(out, &bound.arguments.unwrap_or_else(|| Value::Object(Map::new())))
            }
        };
        let round = RoundOf {
            method,
            target,
            arguments: bound,
            responses: head.input_responses.as_ref(),
            state: head.request_state.as_deref(),
        };
        let (context, canceller, input) = match self.context_with_round(peer, &id, era, head.meta, round) {
            Ok(opened) => opened,
            Err(e) => return self.answer(peer, id, era, Err(e)),
        };
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
                // Tried first, as for a plain call (`Dispatcher::route`).
                let _permit = match &semaphore {
                    Some(semaphore) => Some(match semaphore.try_acquire() {
                        Ok(permit) => permit,
                        Err(_) => semaphore.acquire().await.expect("the semaphore is never closed"),
                    }),
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
