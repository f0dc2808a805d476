//! Lifecycle: who the peers are and what they can do (`Implementation`, `Icon`, capabilities),
//! the `initialize` handshake (up to 2025-11-25), `server/discover` (2026-07-28), `ping`, and
//! the cancellation and progress notifications that either side may send.
//!
//! Not here: the features the capabilities advertise (tools, resources, prompts, …) and the
//! task types referred to by the `tasks` capabilities' request maps (see `tasks`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::{
    method, notification, CacheScope, EmptyNotificationParams, EmptyParams, EmptyResult, Extra,
    MethodInfo, NotificationMeta, ProgressToken, RequestMeta, ResultMeta, ResultType,
};
use crate::proto::jsonrpc::Id;

/// An open JSON object used as a capability flag (`{}` means "supported"), kept as written.
pub type CapabilityObject = Map<String, Value>;

/// An icon for an implementation, tool, resource or prompt (2025-11-25, "Icons").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// URI of the image (`https:` or `data:`).
    pub src: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `light` or `dark`: the background it is meant for (kept as a string, open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Name and version of an MCP client or server (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// 2025-06-18: display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// 2025-11-25: human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// 2025-11-25: home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// 2025-11-25: icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a client supports ("Capability Negotiation"). Every member is optional; a present
/// empty object means "supported".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Non-standard capabilities, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// The client can list roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// The client can sample an LLM (`sampling/createMessage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// 2025-06-18: the client can answer `elicitation/create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// 2025-11-25: task-augmented requests the client accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ClientTasksCapability>,
    /// 2026-07-28: protocol extensions, by identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `roots` client capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// The client sends `notifications/roots/list_changed` (up to 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `sampling` client capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingCapability {
    /// 2025-11-25: the client honours `includeContext` (deprecated since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CapabilityObject>,
    /// 2025-11-25: the client accepts `tools` / `toolChoice` in sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<CapabilityObject>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `elicitation` client capability (an empty object means form mode only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCapability {
    /// 2025-11-25: form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<CapabilityObject>,
    /// 2025-11-25: URL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<CapabilityObject>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// 2025-11-25 `tasks` client capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientTasksCapability {
    /// The client answers `tasks/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<CapabilityObject>,
    /// The client answers `tasks/cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<CapabilityObject>,
    /// Which server requests may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ClientTaskRequests>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Server requests a client accepts as tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientTaskRequests {
    /// `sampling.createMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingTaskRequests>,
    /// `elicitation.create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationTaskRequests>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tasks.requests.sampling` of the client capabilities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingTaskRequests {
    /// `sampling/createMessage` may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_message: Option<CapabilityObject>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tasks.requests.elicitation` of the client capabilities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationTaskRequests {
    /// `elicitation/create` may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<CapabilityObject>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a server supports ("Capability Negotiation").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Non-standard capabilities, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// The server sends log messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<CapabilityObject>,
    /// 2025-03-26: the server answers `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<CapabilityObject>,
    /// The server offers prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// The server offers resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The server offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// 2025-11-25: task support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ServerTasksCapability>,
    /// 2026-07-28: protocol extensions, by identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `prompts` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// The server sends `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `resources` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// The server supports subscribing to resource updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tools` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// The server sends `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// 2025-11-25 `tasks` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerTasksCapability {
    /// The server answers `tasks/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<CapabilityObject>,
    /// The server answers `tasks/cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<CapabilityObject>,
    /// Which client requests may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ServerTaskRequests>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Client requests a server accepts as tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerTaskRequests {
    /// `tools.call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsTaskRequests>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tasks.requests.tools` of the server capabilities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsTaskRequests {
    /// `tools/call` may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CapabilityObject>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `initialize` (up to 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The newest revision the client speaks (any string: the server may not know it).
    pub protocol_version: String,
    /// What the client supports.
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: String,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// Hints for the model on how to use this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `server/discover` (2026-07-28): only the request `_meta`.
pub type DiscoverRequestParams = EmptyParams;

/// Result of `server/discover` (2026-07-28): what `initialize` used to answer, minus the
/// negotiation, plus caching fields. Server info travels in `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Revisions the server speaks (strings, so unknown ones survive).
    pub supported_versions: Vec<String>,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// Hints for the model on how to use this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `resultType` (required by the schema; optional here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// `ttlMs`: how long the answer may be reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// `cacheScope`: who may reuse it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta` (carries `io.modelcontextprotocol/serverInfo`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/cancelled`: the sender no longer wants the answer to a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The request being cancelled (required up to 2025-06-18; 2025-11-25 lets task
    /// cancellation omit it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Id>,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/progress`. Numbers stay `serde_json::Number`, so `1` and `1.0`
/// are re-encoded as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with each notification.
    pub progress: Number,
    /// Total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<Number>,
    /// 2025-03-26: a human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

method!(
    /// `initialize`: the client opens a session (handshake era only).
    Initialize, "initialize", ClientToServer, InitializeRequestParams, InitializeResult,
    since V2024_11_05, removed V2026_07_28
);
notification!(
    /// `notifications/initialized`: the client finished the handshake.
    Initialized, "notifications/initialized", ClientToServer, EmptyNotificationParams,
    since V2024_11_05, removed V2026_07_28
);
method!(
    /// `ping`: liveness check, either direction.
    Ping, "ping", Both, EmptyParams, EmptyResult, since V2024_11_05, removed V2026_07_28
);
method!(
    /// `server/discover`: the stateless revision's replacement for `initialize`.
    Discover, "server/discover", ClientToServer, DiscoverRequestParams, DiscoverResult,
    since V2026_07_28
);
notification!(
    /// `notifications/cancelled`: cancel an in-flight request.
    Cancelled, "notifications/cancelled", Both, CancelledNotificationParams, since V2024_11_05
);
notification!(
    /// `notifications/progress`: progress on a long-running request.
    Progress, "notifications/progress", Both, ProgressNotificationParams, since V2024_11_05
);

/// The methods declared in this module (combined into the method registry).
#[allow(dead_code)]
pub(crate) const METHODS: &[MethodInfo] = &[
    MethodInfo::request::<Initialize>(),
    MethodInfo::notification::<Initialized>(),
    MethodInfo::request::<Ping>(),
    MethodInfo::request::<Discover>(),
    MethodInfo::notification::<Cancelled>(),
    MethodInfo::notification::<Progress>(),
];
