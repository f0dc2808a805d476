//! The multi-round-trip loop (MRTR) of a stateless session: an `input_required` answer to
//! `tools/call`, `prompts/get` or `resources/read` has its input requests answered by the host's
//! handlers, concurrently, and the request retried (a new id) with the answers and the server's
//! `requestState`, at most [`ClientOptions::max_input_rounds`](super::ClientOptions::max_input_rounds)
//! times. Not here: sending the first request (`Client::request`), handshake-era server requests
//! (`server_requests`).

use super::server_requests::roots_result;
use super::{current_caller, decode_named, Client, ClientError};

use super::handlers::{ElicitationHandler, ElicitationModes, HandlerFuture, RootsHandler, SamplingHandler};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::peer::{sync_with_caller_opt, with_caller_opt, RequestError};
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject};
use crate::proto::mcp_types::{CallToolOutput, ElicitRequestParams, Root};
use crate::proto::mcp_types::{InputRequest, InputRequiredResult, InputResponse, InputResponses};
use crate::proto::session::RequestOptions;
use crate::transport::Transport;

/// The host's handlers, as the MRTR loop calls them.
#[derive(Clone)]
pub(super) struct InputAnswerers {
    pub(super) sampling: Option<Arc<dyn SamplingHandler>>,
    pub(super) elicitation: Option<(Arc<dyn ElicitationHandler>, ElicitationModes)>,
    pub(super) roots: Option<Arc<RwLock<Vec<Root>>>>,
    pub(super) roots_handler: Option<Arc<dyn RootsHandler>>,
}

impl InputAnswerers {
    /// The answer to one input request, as a future, or why there is none (the same errors a
    /// handshake-era server's request would get: -32601 without a handler, -32602 for an
    /// elicitation mode not declared).
    pub(super) fn answer(&self, request: InputRequest) -> Result<HandlerFuture<InputResponse>, ErrorObject> {
        match request {
            InputRequest::CreateMessage(params) => {
                let handler = self.sampling.as_ref().ok_or_else(|| not_declared("sampling"))?;
                let future = handler.create_message(params);
                Ok(Box::pin(async move { future.await.map(|r| InputResponse::CreateMessage(Box::new(r))) }))
            }
            InputRequest::Elicit(params) => {
                let (handler, modes) = self.elicitation.as_ref().ok_or_else(|| not_declared("elicitation"))?;
                let allowed = match &params {
                    ElicitRequestParams::Form(_) => modes.form,
                    ElicitRequestParams::Url(_) => modes.url,
                    ElicitRequestParams::Other(_) => false,
                };
                if !allowed {
                    return Err(ErrorObject::new(
                        ErrorCode::INVALID_PARAMS,
                        "elicitation mode not supported: the client did not declare it",
                    ));
                }
                let future = handler.elicit(params);
                Ok(Box::pin(async move { future.await.map(InputResponse::Elicit) }))
            }
            InputRequest::ListRoots(_) => {
                if let Some(handler) = &self.roots_handler {
                    let future = handler.list_roots();
                    return Ok(Box::pin(
                        async move { future.await.map(|r| InputResponse::ListRoots(roots_result(r))) },
                    ));
                }
                let roots = self.roots.as_ref().ok_or_else(|| not_declared("roots"))?;
                let roots = roots.read().expect("never poisoned").clone();
                Ok(Box::pin(async move { Ok(InputResponse::ListRoots(roots_result(roots))) }))
            }
            InputRequest::Other(_) => Err(ErrorObject::method_not_found()),
        }
    }
}

pub(super) fn not_declared(capability: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("this client has no {capability} handler (the capability was not declared)"),
    )
}

/// Input handlers running for one MRTR round, by input key; those still running when it is
/// dropped are aborted.
pub(super) struct AbortOnDrop(pub(super) Vec<(String, tokio::task::JoinHandle<Result<InputResponse, ErrorObject>>)>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for (_, task) in &self.0 {
            task.abort();
        }
    }
}

/// The methods whose stateless result may be `input_required` (MRTR, "Supported Requests").
pub(super) fn may_need_input(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// The first wait before retrying an `input_required` result that carries only
/// `requestState`; it doubles up to [`STATE_ONLY_BACKOFF_CAP`] (the Python SDK's pacing).
pub(super) const STATE_ONLY_BACKOFF: Duration = Duration::from_millis(50);
pub(super) const STATE_ONLY_BACKOFF_CAP: Duration = Duration::from_millis(250);

/// The `input_required` result in `body`, if that is what it is. Cheap for the common final
/// result: a typed tool result is matched on its variant, raw JSON is scanned for the tag
/// before anything is decoded.
pub(super) fn input_required(body: &Body) -> Option<Result<InputRequiredResult, serde_json::Error>> {
    let candidate = match body.typed_as::<CallToolOutput>() {
        Some(CallToolOutput::Other(map)) => map.get("resultType").and_then(Value::as_str) == Some("input_required"),
        Some(CallToolOutput::Result(_) | CallToolOutput::Task(_)) => false,
        None => body.as_raw().is_none_or(|raw| raw.get().contains("input_required")),
    };
    if !candidate {
        return None;
    }
    #[derive(serde::Deserialize, Clone)]
    struct Kind {
        #[serde(rename = "resultType")]
        result_type: Option<String>,
    }
    match body.decode::<Kind>() {
        Ok(Kind { result_type: Some(t) }) if t == "input_required" => Some(body.decode::<InputRequiredResult>()),
        _ => None,
    }
}

/// The params of a request an MRTR retry may send again: as JSON with the session's `_meta`,
/// or as given, made JSON only when a retry comes (most calls never need one).
pub(super) enum Retained {
    Json(Value),
    Params(LaterParams),
}

/// Typed params kept for a retry, as their JSON on demand.
pub(super) type LaterParams = Box<dyn FnOnce() -> Result<Value, serde_json::Error> + Send + Sync>;

/// The params of an MRTR retry: the original ones with this round's answers and the server's
/// state, and without those of an earlier round.
pub(super) fn retry_params(
    original: &Value,
    responses: Option<&InputResponses>,
    state: Option<&str>,
) -> Result<Value, serde_json::Error> {
    let mut params = original.clone();
    if let Some(object) = params.as_object_mut() {
        object.remove("inputResponses");
        object.remove("requestState");
        if let Some(responses) = responses {
            object.insert("inputResponses".to_owned(), serde_json::to_value(responses)?);
        }
        if let Some(state) = state {
            object.insert("requestState".to_owned(), Value::from(state));
        }
    }
    Ok(params)
}

impl<T: Transport> Client<T> {
    /// The MRTR loop: while the answer to `method` is `input_required`, answers its input
    /// requests with the host's handlers and retries `original` with the answers and the
    /// server's state (a new request, so a new id); returns the first other answer.
    pub(super) async fn resolve_input_required(
        &self,
        method: &str,
        mut outcome: Result<Body, RequestError>,
        original: Retained,
        options: RequestOptions,
    ) -> Result<Body, ClientError> {
        let invalid = |source| ClientError::InvalidResult { method: method.to_owned(), source };
        let mut retained = Some(original);
        let mut original = Value::Null;
        let mut state_only_wait = STATE_ONLY_BACKOFF;
        for round in 0.. {
            let body = match outcome {
                Ok(body) => body,
                Err(e) => {
                    return decode_named::<T, Value>(&self.inner.peer, method, Err(e), Some(&self.inner.closed_by_us))
                        .await
                        .map(|_| unreachable!("an error outcome never decodes"))
                }
            };
            let Some(needed) = input_required(&body) else { return Ok(body) };
            let needed = needed.map_err(invalid)?;
            if round >= self.inner.max_input_rounds {
                return Err(ClientError::InputRounds { method: method.to_owned(), rounds: round });
            }
            let responses = match needed.input_requests {
                Some(requests) if !requests.is_empty() => {
                    state_only_wait = STATE_ONLY_BACKOFF;
                    Some(self.answer_inputs(method, requests).await?)
                }
                _ => {
                    tokio::time::sleep(state_only_wait).await;
                    state_only_wait = (state_only_wait * 2).min(STATE_ONLY_BACKOFF_CAP);
                    None
                }
            };
            match retained.take() {
                Some(Retained::Json(value)) => original = value,
                Some(Retained::Params(later)) => {
                    original = later().map_err(invalid)?;
                    self.write_session_meta(&mut original).map_err(invalid)?;
                }
                None => {}
            }
            let params =
                retry_params(&original, responses.as_ref(), needed.request_state.as_deref()).map_err(invalid)?;
            let body = Body::serialized(&params).map_err(invalid)?;
            outcome = self.inner.peer.request(method, Some(body), options.clone()).await;
        }
        unreachable!("the retry loop only ends by returning")
    }

    /// Answers every input request of one round, concurrently. The first refusal, or the call
    /// being dropped, stops the handlers still running.
    pub(super) async fn answer_inputs(
        &self,
        method: &str,
        requests: crate::proto::mcp_types::InputRequests,
    ) -> Result<InputResponses, ClientError> {
        let refused = |key, error| ClientError::InputRequest { method: method.to_owned(), key, error: Box::new(error) };
        let mut answering = AbortOnDrop(Vec::with_capacity(requests.len()));
        // The handlers answer on behalf of this call: its caller is theirs (the spawned tasks
        // would not inherit the scope).
        let caller = current_caller();
        for (key, request) in requests {
            match sync_with_caller_opt(caller, || self.inner.inputs.answer(request)) {
                Ok(future) => answering.0.push((key, tokio::spawn(with_caller_opt(caller, future)))),
                Err(error) => return Err(refused(key, error)),
            }
        }
        let mut responses = InputResponses::new();
        for (key, task) in &mut answering.0 {
            let answered = task.await.unwrap_or_else(|e| {
                Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("the input handler failed: {e}")))
            });
            match answered {
                Ok(response) => {
                    responses.insert(std::mem::take(key), response);
                }
                Err(error) => return Err(refused(std::mem::take(key), error)),
            }
        }
        Ok(responses)
    }
}
