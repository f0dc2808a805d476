//! Lifecycle: who the peers are and what they can do (`Implementation`, `Icon`, capabilities),
//! the `initialize` handshake (up to 2025-11-25), `server/discover` (2026-07-28), `ping`, and
//! the cancellation and progress notifications that either side may send.
//!
//! Not here: the features the capabilities advertise (tools, resources, prompts, …) and the
//! task types referred to by the `tasks` capabilities' request maps (see `tasks`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::{
    method, notification, CacheScope, EmptyNotificationParams, EmptyParams, EmptyResult, Extra, MethodInfo,
    NotificationMeta, ProgressToken, RequestMeta, ResultMeta, ResultType,
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
#[serde(remote = "Self")]
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

/// Builders: `Implementation::new(name, version)` and a method per optional member (pure data).
impl Implementation {
    /// An implementation with a name and a version, the rest unset.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Implementation {
        Implementation { name: name.into(), version: version.into(), ..Implementation::default() }
    }

    /// `title`: the display name (2025-06-18).
    pub fn title(mut self, title: impl Into<String>) -> Implementation {
        self.title = Some(title.into());
        self
    }

    /// `description` (2025-11-25).
    pub fn description(mut self, description: impl Into<String>) -> Implementation {
        self.description = Some(description.into());
        self
    }

    /// `websiteUrl`: the home page (2025-11-25).
    pub fn website_url(mut self, website_url: impl Into<String>) -> Implementation {
        self.website_url = Some(website_url.into());
        self
    }

    /// `icons`, replaced.
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Implementation {
        self.icons = Some(icons.into_iter().collect());
        self
    }
}

/// What a client supports ("Capability Negotiation"). Every member is optional; a present
/// empty object means "supported".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
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
#[serde(remote = "Self")]
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
#[serde(remote = "Self")]
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
#[serde(remote = "Self")]
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
#[serde(remote = "Self")]
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
pub(crate) const METHODS: &[MethodInfo] = &[
    MethodInfo::request::<Initialize>(),
    MethodInfo::notification::<Initialized>(),
    MethodInfo::request::<Ping>(),
    MethodInfo::request::<Discover>(),
    MethodInfo::notification::<Cancelled>(),
    MethodInfo::notification::<Progress>(),
];

super::decode::decode_via_value!(
    ClientCapabilities,
    ServerCapabilities,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    DiscoverResult
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mcp_types::{Direction, Method, NotificationMethod};
    use crate::proto::version::ProtocolVersion;
    use serde_json::json;

    fn round_trip<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let typed: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), v);
        typed
    }

    #[test]
    fn initialize_2024_11_05() {
        let p: InitializeRequestParams = round_trip(json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"sampling": {}, "roots": {"listChanged": true}, "experimental": {"x": {"y": 1}}},
            "clientInfo": {"name": "typescript-sdk-client", "version": "1.0.4"}
        }));
        assert_eq!(p.protocol_version, "2024-11-05");
        assert_eq!(p.capabilities.sampling, Some(SamplingCapability::default()));
        assert_eq!(p.capabilities.roots.unwrap().list_changed, Some(true));
        let r: InitializeResult = round_trip(json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"prompts": {"listChanged": false}, "resources": {"listChanged": false, "subscribe": false},
                             "tools": {"listChanged": false}},
            "serverInfo": {"name": "mcp-time", "version": "2026.10.19"}
        }));
        assert_eq!(r.capabilities.resources.unwrap().subscribe, Some(false));
        assert!(r.instructions.is_none());
    }

    #[test]
    fn capabilities_2025_11_25_everything() {
        let c: ClientCapabilities = round_trip(json!({
            "roots": {"listChanged": true},
            "sampling": {"context": {}, "tools": {}},
            "elicitation": {"form": {}, "url": {}},
            "tasks": {"list": {}, "cancel": {}, "requests": {
                "sampling": {"createMessage": {}}, "elicitation": {"create": {}}}}
        }));
        let t = c.tasks.unwrap().requests.unwrap();
        assert!(t.sampling.unwrap().create_message.is_some());
        assert!(c.elicitation.unwrap().url.is_some());
        let s: ServerCapabilities = round_trip(json!({
            "tools": {"listChanged": true}, "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true}, "logging": {}, "completions": {},
            "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }));
        assert!(s.tasks.unwrap().requests.unwrap().tools.unwrap().call.is_some());
        assert_eq!(s.logging, Some(Map::new()));
        // Absent and empty stay apart.
        let empty: ServerCapabilities = round_trip(json!({}));
        assert!(empty.logging.is_none());
    }

    #[test]
    fn implementation_2025_11_25() {
        let i: Implementation = round_trip(json!({
            "name": "srv", "version": "1", "title": "Server", "description": "d",
            "websiteUrl": "https://example.com",
            "icons": [{"src": "https://example.com/i.svg", "mimeType": "image/svg+xml", "sizes": ["any"], "theme": "light"}]
        }));
        assert_eq!(i.icons.unwrap()[0].theme.as_deref(), Some("light"));
    }

    #[test]
    fn discover_2026_07_28() {
        let p: DiscoverRequestParams = round_trip(json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "2.3.0"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}
        }}));
        assert_eq!(p.meta.unwrap().protocol_version.as_deref(), Some("2026-07-28"));
        let r: DiscoverResult = round_trip(json!({
            "cacheScope": "private",
            "capabilities": {"tools": {"listChanged": false}},
            "instructions": "Fixture server.",
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "ttlMs": 0,
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mcp-time", "version": "2026.10.19"}}
        }));
        assert_eq!(r.result_type, Some(ResultType::Complete));
        assert_eq!(r.ttl_ms, Some(0));
        assert_eq!(r.cache_scope, Some(CacheScope::Private));
        assert_eq!(r.meta.unwrap().server_info.unwrap().name, "mcp-time");
    }

    #[test]
    fn cancelled_with_and_without_request_id() {
        let c: CancelledNotificationParams =
            round_trip(json!({"requestId": "123", "reason": "User requested cancellation"}));
        assert_eq!(c.request_id, Some(Id::String("123".into())));
        let c: CancelledNotificationParams = round_trip(json!({"requestId": 4}));
        assert_eq!(c.request_id, Some(Id::Number(4)));
        let c: CancelledNotificationParams = round_trip(json!({"reason": "task"}));
        assert!(c.request_id.is_none());
    }

    #[test]
    fn progress_numbers_keep_their_spelling() {
        let text = r#"{"progressToken":5,"progress":1,"total":2.0,"message":"step 1/2"}"#;
        let p: ProgressNotificationParams = serde_json::from_str(text).unwrap();
        assert_eq!(p.progress_token, Id::Number(5));
        assert!(p.progress.is_u64());
        assert!(p.total.as_ref().unwrap().is_f64());
        assert_eq!(serde_json::to_string(&p).unwrap(), text);
        let p: ProgressNotificationParams = round_trip(json!({"progressToken": "tok", "progress": 0.25}));
        assert_eq!(p.progress.as_f64(), Some(0.25));
    }

    #[test]
    fn ping_and_empty_params() {
        let _: EmptyParams = round_trip(json!({}));
        let _: EmptyResult = round_trip(json!({}));
        assert_eq!(Ping::DIRECTION, Direction::Both);
        assert_eq!(Ping::REMOVED_IN, Some(ProtocolVersion::V2026_07_28));
        assert_eq!(Discover::SINCE, ProtocolVersion::V2026_07_28);
        assert_eq!(Initialized::NAME, "notifications/initialized");
    }

    #[test]
    fn method_tables_are_consistent() {
        use crate::proto::mcp_types::{tasks, tools};
        let all: Vec<_> = METHODS.iter().chain(tools::METHODS).chain(tasks::METHODS).collect();
        for (i, a) in all.iter().enumerate() {
            assert!(all[i + 1..].iter().all(|b| b.name != a.name), "{} twice", a.name);
            assert_eq!(a.is_notification, a.name.starts_with("notifications/"), "{}", a.name);
        }
        let ping = all.iter().find(|m| m.name == "ping").unwrap();
        assert!(ping.exists_in(ProtocolVersion::V2025_11_25));
        assert!(!ping.exists_in(ProtocolVersion::V2026_07_28));
        let get = all.iter().find(|m| m.name == "tasks/get").unwrap();
        assert!(!get.exists_in(ProtocolVersion::V2025_06_18));
        assert!(get.exists_in(ProtocolVersion::V2025_11_25));
    }
}
