//! What the host plugs into a [`Client`](super::Client) to answer the server: handlers for the
//! server-to-client requests (`sampling/createMessage`, `elicitation/create`, `roots/list`),
//! and a typed view of server notifications ([`ServerNotification`]).
//!
//! A handler is any closure `Fn(Params) -> impl Future<Output = Result<Result, ErrorObject>>`;
//! its future runs in a task of its own, so a slow human answering an elicitation never
//! blocks the connection. It is built and run inside the [`with_caller`](super::with_caller)
//! scope of the call that caused the server's request, when the client can tell which one did
//! (see the client module), so [`current_caller`](super::current_caller) names that caller.
//! Only the capabilities for which a handler (or roots) was given are
//! declared in `initialize` ([client features](https://modelcontextprotocol.io/specification/2025-11-25/client)).
//!
//! Not here: the dispatch of requests to these handlers (the client module's peer handler).

use std::future::Future;
use std::pin::Pin;

use crate::proto::jsonrpc::{ErrorObject, Notification as Message};
use crate::proto::mcp_types::{
    CancelledNotificationParams, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationCompleteNotificationParams, LoggingMessageNotificationParams, ProgressNotificationParams,
    ResourceUpdatedNotificationParams, Root, TaskStatusNotificationParams,
};

/// The future a request handler returns: the result, or the JSON-RPC error to answer.
pub type HandlerFuture<T> = Pin<Box<dyn Future<Output = Result<T, ErrorObject>> + Send>>;

/// Answers `sampling/createMessage`: the server asks the host's LLM for a completion. Any
/// `Fn(CreateMessageRequestParams) -> impl Future<Output = Result<CreateMessageResult, ErrorObject>>`
/// closure is one.
pub trait SamplingHandler: Send + Sync + 'static {
    /// Produces the message (the host should let the user review the request first).
    fn create_message(&self, params: CreateMessageRequestParams) -> HandlerFuture<CreateMessageResult>;
}

impl<F, Fut> SamplingHandler for F
where
    F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
{
    fn create_message(&self, params: CreateMessageRequestParams) -> HandlerFuture<CreateMessageResult> {
        Box::pin(self(params))
    }
}

/// Answers `elicitation/create`: the server asks the user for input, through a form
/// ([`ElicitRequestParams::Form`]) or by sending them to a URL ([`ElicitRequestParams::Url`]).
/// Any `Fn(ElicitRequestParams) -> impl Future<Output = Result<ElicitResult, ErrorObject>>`
/// closure is one.
pub trait ElicitationHandler: Send + Sync + 'static {
    /// Asks the user and reports what they did.
    fn elicit(&self, params: ElicitRequestParams) -> HandlerFuture<ElicitResult>;
}

impl<F, Fut> ElicitationHandler for F
where
    F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
{
    fn elicit(&self, params: ElicitRequestParams) -> HandlerFuture<ElicitResult> {
        Box::pin(self(params))
    }
}

/// Answers `roots/list` each time the server asks: the roots as they are now, e.g. those of
/// the downstream client a gateway is calling for ([`current_caller`](super::current_caller)
/// names it, when the request could be attributed). Any
/// `Fn() -> impl Future<Output = Result<Vec<Root>, ErrorObject>>` closure is one.
pub trait RootsHandler: Send + Sync + 'static {
    /// The roots to answer.
    fn list_roots(&self) -> HandlerFuture<Vec<Root>>;
}

impl<F, Fut> RootsHandler for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<Root>, ErrorObject>> + Send + 'static,
{
    fn list_roots(&self) -> HandlerFuture<Vec<Root>> {
        Box::pin(self())
    }
}

/// Which elicitation modes the client declares (2025-11-25 "Elicitation"; before 2025-11-25
/// there is only form mode and the capability is an empty object).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElicitationModes {
    /// Form mode: the server sends a schema, the user fills it in.
    pub form: bool,
    /// URL mode: the user is sent to a URL outside the client.
    pub url: bool,
}

impl ElicitationModes {
    /// Form mode only (the default, and all that revisions before 2025-11-25 know).
    pub const FORM: ElicitationModes = ElicitationModes { form: true, url: false };
    /// Both modes.
    pub const BOTH: ElicitationModes = ElicitationModes { form: true, url: true };
}

impl Default for ElicitationModes {
    fn default() -> Self {
        Self::FORM
    }
}

/// A server notification, decoded by method. What does not decode (or is not known) stays
/// [`ServerNotification::Other`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerNotification {
    /// `notifications/tools/list_changed`.
    ToolListChanged,
    /// `notifications/resources/list_changed`.
    ResourceListChanged,
    /// `notifications/prompts/list_changed`.
    PromptListChanged,
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated(ResourceUpdatedNotificationParams),
    /// `notifications/message`: a log entry.
    LoggingMessage(LoggingMessageNotificationParams),
    /// `notifications/progress` for a request that had no callback (those with one go to it).
    Progress(ProgressNotificationParams),
    /// `notifications/elicitation/complete`: a URL-mode elicitation finished.
    ElicitationComplete(ElicitationCompleteNotificationParams),
    /// `notifications/tasks/status`.
    TaskStatus(TaskStatusNotificationParams),
    /// `notifications/cancelled` the session did not consume.
    Cancelled(CancelledNotificationParams),
    /// Anything else, as received.
    Other(Message),
}

impl ServerNotification {
    /// Decodes `notification` by its method.
    pub fn parse(notification: &Message) -> ServerNotification {
        fn decode<T: serde::de::DeserializeOwned + Clone + 'static>(n: &Message) -> Option<T> {
            match &n.params {
                Some(body) => body.decode().ok(),
                None => serde_json::from_str("{}").ok(),
            }
        }
        let decoded = match notification.method.as_str() {
            "notifications/tools/list_changed" => Some(ServerNotification::ToolListChanged),
            "notifications/resources/list_changed" => Some(ServerNotification::ResourceListChanged),
            "notifications/prompts/list_changed" => Some(ServerNotification::PromptListChanged),
            "notifications/resources/updated" => decode(notification).map(ServerNotification::ResourceUpdated),
            "notifications/message" => decode(notification).map(ServerNotification::LoggingMessage),
            "notifications/progress" => decode(notification).map(ServerNotification::Progress),
            "notifications/elicitation/complete" => decode(notification).map(ServerNotification::ElicitationComplete),
            "notifications/tasks/status" => decode(notification).map(ServerNotification::TaskStatus),
            "notifications/cancelled" => decode(notification).map(ServerNotification::Cancelled),
            _ => None,
        };
        decoded.unwrap_or_else(|| ServerNotification::Other(notification.clone()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::proto::jsonrpc::Body;
    use crate::proto::mcp_types::LoggingLevel;

    fn note(method: &str, params: Option<serde_json::Value>) -> Message {
        Message { method: method.into(), params: params.map(|p| Body::serialized(&p).unwrap()) }
    }

    #[test]
    fn notifications_decode_by_method() {
        assert!(matches!(
            ServerNotification::parse(&note("notifications/tools/list_changed", None)),
            ServerNotification::ToolListChanged
        ));
        let ServerNotification::LoggingMessage(m) = ServerNotification::parse(&note(
            "notifications/message",
            Some(json!({"level": "warning", "logger": "x", "data": {"a": 1}})),
        )) else {
            panic!("a logging message")
        };
        assert_eq!((m.level, m.logger.as_deref(), m.data), (LoggingLevel::Warning, Some("x"), json!({"a": 1})));
        let ServerNotification::ResourceUpdated(u) =
            ServerNotification::parse(&note("notifications/resources/updated", Some(json!({"uri": "demo://x"}))))
        else {
            panic!("a resource update")
        };
        assert_eq!(u.uri, "demo://x");
        // A malformed known notification is kept whole rather than lost.
        let bad = note("notifications/message", Some(json!({"level": "loud"})));
        assert!(matches!(ServerNotification::parse(&bad), ServerNotification::Other(n) if n.method == bad.method));
    }
}
