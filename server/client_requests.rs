//! Requests a handler sends to the client: elicitation (form and URL mode), sampling, roots,
//! ping. Each is checked first against what the client declared in `initialize` (and the
//! negotiated revision); what the client did not advertise is refused with
//! [`ClientRequestError::NotSupported`] and nothing is sent.
//!
//! Also here: the -32042 `URLElicitationRequired` error a tool can return
//! ([`url_elicitation_required`]).
//!
//! Spec (2025-11-25): `client/elicitation`, `client/sampling`, `client/roots`,
//! `basic/utilities/ping`.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::peer::RequestError;
use crate::proto::envelope;
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject};
use crate::proto::mcp_types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams, ElicitRequestParams,
    ElicitRequestURLParams, ElicitResult, ElicitationCompleteNotificationParams, ElicitationSchema, EmptyResult,
    ListRootsResult, RelatedTaskMetadata, RequestMeta, Root, UrlElicitationRequiredData, URL_ELICITATION_REQUIRED,
};
use crate::proto::version::ProtocolVersion;

use super::{Context, ToolError};

/// Why a request to the client got no answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientRequestError {
    /// The client did not declare what this request needs (or the negotiated revision lacks
    /// it); nothing was sent.
    NotSupported {
        /// The missing capability, e.g. `sampling.tools`.
        capability: &'static str,
    },
    /// 2026-07-28: the request's `_meta` did not declare what this needs; as a tool's error
    /// (`?`) it answers the request with -32021 `MissingRequiredClientCapability`.
    MissingCapability {
        /// The missing capability, e.g. `sampling`.
        capability: &'static str,
    },
    /// 2026-07-28: a request served per request cannot send requests to the client.
    NoBackChannel {
        /// The method that could not be sent.
        method: &'static str,
    },
    /// 2026-07-28: the client's input response under `key` does not fit the request's result;
    /// as a tool's error (`?`) it answers the request with -32602.
    InvalidInput {
        /// The key of the input response.
        key: String,
        /// Why it does not fit.
        reason: String,
    },
    /// The request failed: the client answered with an error, it timed out, the connection
    /// ended.
    Request(RequestError),
    /// The answer did not decode as the method's result.
    InvalidResult(serde_json::Error),
}

impl fmt::Display for ClientRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientRequestError::NotSupported { capability } => {
                write!(f, "the client did not declare the {capability} capability")
            }
            ClientRequestError::MissingCapability { capability } => {
                write!(f, "the request's _meta did not declare the {capability} capability")
            }
            ClientRequestError::NoBackChannel { method } => {
                write!(f, "{method} cannot be sent to the client of a per-request (2026-07-28) request")
            }
            ClientRequestError::InvalidInput { key, reason } => {
                write!(f, "inputResponses[{key:?}] is not a valid answer: {reason}")
            }
            ClientRequestError::Request(e) => e.fmt(f),
            ClientRequestError::InvalidResult(e) => write!(f, "the client's answer is not valid: {e}"),
        }
    }
}

impl std::error::Error for ClientRequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientRequestError::NotSupported { .. }
            | ClientRequestError::MissingCapability { .. }
            | ClientRequestError::NoBackChannel { .. }
            | ClientRequestError::InvalidInput { .. } => None,
            ClientRequestError::Request(e) => Some(e),
            ClientRequestError::InvalidResult(e) => Some(e),
        }
    }
}

impl ClientRequestError {
    /// Whether the request was refused before sending because the client lacks a capability.
    pub fn is_not_supported(&self) -> bool {
        matches!(self, ClientRequestError::NotSupported { .. } | ClientRequestError::MissingCapability { .. })
    }
}

/// A failed request to the client fails the tool (`isError: true` with the reason), so `?`
/// works in handlers.
impl From<ClientRequestError> for ToolError {
    fn from(e: ClientRequestError) -> Self {
        match e {
            ClientRequestError::MissingCapability { capability } => {
                ToolError::Protocol(envelope::missing_capability(&required(capability), capability))
            }
            e @ ClientRequestError::InvalidInput { .. } => {
                ToolError::Protocol(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {e}")))
            }
            e => ToolError::Failed(e.to_string()),
        }
    }
}

/// The client capabilities object that declares `capability` (`sampling.tools` →
/// `{"sampling": {"tools": {}}}`).
fn required(capability: &str) -> ClientCapabilities {
    let mut value = Value::Object(Map::new());
    for part in capability.rsplit('.') {
        let mut outer = Map::new();
        outer.insert(part.to_owned(), value);
        value = Value::Object(outer);
    }
    serde_json::from_value(value).unwrap_or_default()
}

/// The -32042 `URLElicitationRequired` error: the tool cannot go on until the user completed
/// these URL-mode elicitations. Return it from a handler (`Err(url_elicitation_required(..))`).
pub fn url_elicitation_required(message: impl Into<String>, elicitations: Vec<ElicitRequestURLParams>) -> ToolError {
    let data = UrlElicitationRequiredData { elicitations, extra: Map::new() };
    let error = ErrorObject::new(ErrorCode(URL_ELICITATION_REQUIRED), message)
        .with_data(&data)
        .expect("elicitation params serialize");
    ToolError::Protocol(error)
}

impl Context {
    /// The refusal of a request the client did not declare a capability for.
    fn refuse(&self, capability: &'static str) -> ClientRequestError {
        if self.is_per_request() {
            ClientRequestError::MissingCapability { capability }
        } else {
            ClientRequestError::NotSupported { capability }
        }
    }

    fn at_least(&self, version: ProtocolVersion) -> bool {
        self.protocol_version.is_none_or(|v| v >= version)
    }

    /// Sends `method` to the client and decodes its answer; while the call runs as a task, the
    /// task is `input_required` until the answer arrives.
    async fn ask<R: DeserializeOwned + Clone + 'static>(
        &self,
        method: &'static str,
        params: impl Serialize + Send + Sync + 'static,
    ) -> Result<R, ClientRequestError> {
        if self.is_per_request() {
            return self.ask_in_result(method, params).await;
        }
        let waiting = self.task.as_ref().map(|t| t.enter_input_required());
        let outcome = self
            .outgoing
            .clone()
            .request(method, Body::typed(params), Some(self.id.clone()), self.connection.client_request_timeout)
            .await;
        drop(waiting);
        let body = outcome.map_err(ClientRequestError::Request)?;
        body.decode::<R>().map_err(ClientRequestError::InvalidResult)
    }

    /// A 2026-07-28 ask: the answer from this round's input responses, or (none yet) the ask is
    /// recorded and this future never completes: the dispatch stops the handler and answers
    /// with an `InputRequiredResult` (see [`super::request_state`]).
    async fn ask_in_result<R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: impl Serialize,
    ) -> Result<R, ClientRequestError> {
        if let Some(task) = self.task_ask.as_ref().and_then(|slot| slot.get()) {
            let key = self.input_key.clone().unwrap_or_else(|| {
                let n = task.asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                format!("{}-{n}", method.replace('/', "-"))
            });
            let params = serde_json::to_value(params).map_err(ClientRequestError::InvalidResult)?;
            let answer = task.ask(key.clone(), serde_json::json!({"method": method, "params": params})).await;
            return serde_json::from_value(answer)
                .map_err(|e| ClientRequestError::InvalidInput { key, reason: e.to_string() });
        }
        let Some(round) = &self.input else { return Err(ClientRequestError::NoBackChannel { method }) };
        let key = self.input_key.clone().unwrap_or_else(|| round.next_key(method));
        if let Some(answer) = round.answers.get(&key) {
            return serde_json::from_value(answer.clone())
                .map_err(|e| ClientRequestError::InvalidInput { key, reason: e.to_string() });
        }
        let params = serde_json::to_value(params).map_err(ClientRequestError::InvalidResult)?;
        round.ask(key, serde_json::json!({"method": method, "params": params}));
        std::future::pending().await
    }

    /// `_meta` tying a request to this call's task, if it runs as one.
    fn task_meta(&self) -> Option<RequestMeta> {
        let task = self.task.as_ref()?;
        Some(RequestMeta {
            related_task: Some(RelatedTaskMetadata { task_id: task.task_id().to_owned(), extra: Map::new() }),
            ..RequestMeta::default()
        })
    }

    /// Asks the user to fill a form (`elicitation/create`, form mode).
    ///
    /// # Errors
    /// [`ClientRequestError::NotSupported`] when the client did not declare form elicitation
    /// (`elicitation: {}` or `elicitation.form`); otherwise as the request fails.
    pub async fn elicit(
        &self,
        message: impl Into<String>,
        requested_schema: ElicitationSchema,
    ) -> Result<ElicitResult, ClientRequestError> {
        let params = ElicitRequestFormParams {
            mode: None,
            message: message.into(),
            requested_schema,
            task: None,
            meta: self.task_meta(),
            extra: Map::new(),
        };
        self.elicit_with(ElicitRequestParams::Form(params)).await
    }

    /// Asks the user to visit `url` (`elicitation/create`, URL mode, 2025-11-25). The answer
    /// says whether the user agreed to go; completion is announced later with
    /// [`Context::elicitation_complete`].
    ///
    /// # Errors
    /// [`ClientRequestError::NotSupported`] when the client did not declare `elicitation.url`.
    pub async fn elicit_url(
        &self,
        message: impl Into<String>,
        url: impl Into<String>,
        elicitation_id: impl Into<String>,
    ) -> Result<ElicitResult, ClientRequestError> {
        let params = ElicitRequestURLParams {
            mode: Default::default(),
            message: message.into(),
            url: url.into(),
            elicitation_id: Some(elicitation_id.into()),
            task: None,
            meta: self.task_meta(),
            extra: Map::new(),
        };
        self.elicit_with(ElicitRequestParams::Url(params)).await
    }

    /// Sends `elicitation/create` with these params, after checking the client's capability
    /// for their mode.
    ///
    /// # Errors
    /// As [`Context::elicit`] and [`Context::elicit_url`].
    pub async fn elicit_with(&self, params: ElicitRequestParams) -> Result<ElicitResult, ClientRequestError> {
        let caps = self.client_capabilities().and_then(|c| c.elicitation);
        let Some(caps) = caps.filter(|_| self.at_least(ProtocolVersion::V2025_06_18)) else {
            return Err(self.refuse("elicitation"));
        };
        match &params {
            ElicitRequestParams::Url(_) => {
                if caps.url.is_none() || !self.at_least(ProtocolVersion::V2025_11_25) {
                    return Err(self.refuse("elicitation.url"));
                }
            }
            // An empty `elicitation` object means form mode.
            _ => {
                if caps.form.is_none() && caps.url.is_some() {
                    return Err(self.refuse("elicitation.form"));
                }
            }
        }
        self.ask("elicitation/create", params).await
    }

    /// Tells the client that the URL-mode elicitation `elicitation_id` is complete
    /// (`notifications/elicitation/complete`).
    ///
    /// # Errors
    /// [`ClientRequestError::NotSupported`] without `elicitation.url`; else when the
    /// connection is gone.
    pub async fn elicitation_complete(&self, elicitation_id: impl Into<String>) -> Result<(), ClientRequestError> {
        let url = self.client_capabilities().and_then(|c| c.elicitation).and_then(|e| e.url);
        if url.is_none() {
            return Err(self.refuse("elicitation.url"));
        }
        let params = ElicitationCompleteNotificationParams {
            elicitation_id: elicitation_id.into(),
            meta: None,
            extra: Map::new(),
        };
        self.outgoing
            .clone()
            .notify("notifications/elicitation/complete", Body::typed(params), None)
            .await
            .map_err(ClientRequestError::Request)
    }

    /// Asks the client's model for a message (`sampling/createMessage`). `tools` and
    /// `toolChoice` are only sent to a client that declared `sampling.tools`.
    ///
    /// # Errors
    /// [`ClientRequestError::NotSupported`] without `sampling` (or `sampling.tools` when the
    /// params carry tools or a tool choice).
    pub async fn create_message(
        &self,
        mut params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ClientRequestError> {
        let Some(sampling) = self.client_capabilities().and_then(|c| c.sampling) else {
            return Err(self.refuse("sampling"));
        };
        if (params.tools.is_some() || params.tool_choice.is_some())
            && (sampling.tools.is_none() || !self.at_least(ProtocolVersion::V2025_11_25))
        {
            return Err(self.refuse("sampling.tools"));
        }
        if params.meta.is_none() {
            params.meta = self.task_meta();
        }
        self.ask("sampling/createMessage", params).await
    }

    /// The client's roots (`roots/list`), from the cache when the client has not said they
    /// changed since the last call.
    ///
    /// # Errors
    /// [`ClientRequestError::NotSupported`] without `roots`.
    pub async fn list_roots(&self) -> Result<Vec<Root>, ClientRequestError> {
        if self.client_capabilities().and_then(|c| c.roots).is_none() {
            return Err(self.refuse("roots"));
        }
        if let Some(roots) = self.connection.cached_roots().filter(|_| !self.is_per_request()) {
            return Ok(roots);
        }
        let result: ListRootsResult = self.ask("roots/list", Map::<String, Value>::new()).await?;
        self.connection.cache_roots(result.roots.clone());
        Ok(result.roots)
    }

    /// Pings the client.
    ///
    /// # Errors
    /// When the client answers with an error, does not answer in time or is gone.
    pub async fn ping(&self) -> Result<(), ClientRequestError> {
        let _: EmptyResult = self.ask("ping", Map::<String, Value>::new()).await?;
        Ok(())
    }
}
