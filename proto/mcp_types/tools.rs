//! Tools: `tools/list`, `tools/call` and `notifications/tools/list_changed`, with [`Tool`], its
//! annotations and execution hints, and the result of a call — which in 2025-11-25 may be a
//! [`CreateTaskResult`] when the call was task-augmented (see [`CallToolOutput`]).
//!
//! Not here: the content blocks a result carries (`content`) and the 2026-07-28
//! `InputRequiredResult` / `InputResponses` types (kept raw here, see the field docs).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{
    method, notification, open_string_enum_serde, CacheScope, ContentBlock, CreateTaskResult, Cursor,
    EmptyNotificationParams, Extra, Icon, MethodInfo, RequestMeta, ResultMeta, ResultType, TaskMetadata,
};

/// A tool the server offers ("Tool"). Schemas are kept as raw JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name, used in `tools/call`.
    pub name: String,
    /// 2025-06-18: display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    /// 2025-06-18: JSON Schema of `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// 2025-03-26: behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// 2025-11-25: icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// 2025-11-25: execution hints (task support).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Hints about a tool's behaviour ("ToolAnnotations", 2025-03-26). Untrusted unless the
/// server is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// May destroy data (meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// Talks to an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// How a tool may be run ("ToolExecution", 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether `tools/call` may or must be task-augmented (absent means forbidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `execution.taskSupport` of a tool. Open: unknown values are kept in `Other`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskSupport {
    /// `forbidden`: never as a task.
    Forbidden,
    /// `optional`: either way.
    Optional,
    /// `required`: only as a task.
    Required,
    /// Any other value, as written.
    Other(String),
}

impl TaskSupport {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
            TaskSupport::Other(s) => s,
        }
    }
}

impl From<String> for TaskSupport {
    fn from(s: String) -> Self {
        match s.as_str() {
            "forbidden" => TaskSupport::Forbidden,
            "optional" => TaskSupport::Optional,
            "required" => TaskSupport::Required,
            _ => TaskSupport::Other(s),
        }
    }
}

open_string_enum_serde!(TaskSupport);

/// Params of `tools/list` (paginated). `Default` stands for absent params.
pub type ListToolsRequestParams = super::PaginatedRequestParams;

/// Result of `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Cursor of the next page, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// 2026-07-28 `resultType`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// 2026-07-28 `ttlMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// 2026-07-28 `cacheScope`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool's name.
    pub name: String,
    /// Arguments; absent and `{}` are kept apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// 2025-11-25: run the call as a task; the answer is then a [`CreateTaskResult`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// 2026-07-28: answers to a previous `input_required` result, by request key
    /// (`InputResponses`, kept as raw JSON here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// 2026-07-28: opaque state echoed from a previous `input_required` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of a completed `tools/call`. A tool failure is a result with `isError: true`, not a
/// JSON-RPC error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured output.
    pub content: Vec<ContentBlock>,
    /// 2025-06-18: structured output matching the tool's `outputSchema` (an object up to
    /// 2025-11-25, any JSON in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// 2026-07-28 `resultType`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a `tools/call` response carries.
///
/// Decoded by shape: `content` present → [`CallToolResult`]; else `task` present →
/// [`CreateTaskResult`] (2025-11-25 task-augmented call); else a `resultType` other than
/// `complete` (e.g. 2026-07-28 `input_required`) → [`CallToolOutput::Other`], kept whole.
/// Anything else is decoded as a `CallToolResult` and fails on the missing `content`.
#[derive(Debug, Clone, PartialEq)]
pub enum CallToolOutput {
    /// The tool's result.
    Result(CallToolResult),
    /// The call became a task.
    Task(CreateTaskResult),
    /// A non-final result of a kind not modelled here, as written.
    Other(Map<String, Value>),
}

impl Serialize for CallToolOutput {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CallToolOutput::Result(r) => r.serialize(s),
            CallToolOutput::Task(t) => t.serialize(s),
            CallToolOutput::Other(m) => m.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for CallToolOutput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::deserialize(d)?;
        fn decode<T: serde::de::DeserializeOwned, E: serde::de::Error>(map: Map<String, Value>) -> Result<T, E> {
            serde_json::from_value(Value::Object(map)).map_err(E::custom)
        }
        if !map.contains_key("content") {
            if map.contains_key("task") {
                return decode(map).map(CallToolOutput::Task);
            }
            if map.get("resultType").is_some_and(|t| t != "complete") {
                return Ok(CallToolOutput::Other(map));
            }
        }
        decode(map).map(CallToolOutput::Result)
    }
}

impl From<CallToolResult> for CallToolOutput {
    fn from(r: CallToolResult) -> Self {
        CallToolOutput::Result(r)
    }
}

impl From<CreateTaskResult> for CallToolOutput {
    fn from(t: CreateTaskResult) -> Self {
        CallToolOutput::Task(t)
    }
}

method!(
    /// `tools/list`: the server's tools, paginated.
    ListTools, "tools/list", ClientToServer, ListToolsRequestParams, ListToolsResult,
    since V2024_11_05
);
method!(
    /// `tools/call`: run a tool.
    CallTool, "tools/call", ClientToServer, CallToolRequestParams, CallToolOutput,
    since V2024_11_05
);
notification!(
    /// `notifications/tools/list_changed`: the tool list changed.
    ToolListChanged, "notifications/tools/list_changed", ServerToClient, EmptyNotificationParams,
    since V2024_11_05
);

/// The methods declared in this module (combined into the method registry).
pub(crate) const METHODS: &[MethodInfo] = &[
    MethodInfo::request::<ListTools>(),
    MethodInfo::request::<CallTool>(),
    MethodInfo::notification::<ToolListChanged>(),
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let typed: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), v);
        typed
    }

    #[test]
    fn tool_with_everything() {
        let t: Tool = round_trip(json!({
            "name": "echo", "title": "Echo", "description": "Echoes",
            "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                            "properties": {"message": {"type": "string"}}, "required": ["message"]},
            "outputSchema": {"type": "array", "items": {"type": "number"}},
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
            "execution": {"taskSupport": "required"},
            "icons": [{"src": "https://x/icon.png", "mimeType": "image/png"}],
            "_meta": {"ui": 1}
        }));
        assert_eq!(t.execution.unwrap().task_support, Some(TaskSupport::Required));
        assert_eq!(t.annotations.unwrap().read_only_hint, Some(true));
    }

    #[test]
    fn arguments_absent_and_empty_differ() {
        let a: CallToolRequestParams = round_trip(json!({"name": "t"}));
        assert_eq!(a.arguments, None);
        let b: CallToolRequestParams = round_trip(json!({"name": "t", "arguments": {}}));
        assert_eq!(b.arguments, Some(Map::new()));
    }

    #[test]
    fn call_result_2025_06_18_structured() {
        let r: CallToolOutput = round_trip(json!({
            "content": [{"type": "text", "text": "{\"a\":1}"}],
            "structuredContent": {"a": 1, "b": 2.0}, "isError": false
        }));
        let CallToolOutput::Result(r) = r else { panic!() };
        assert_eq!(r.structured_content.unwrap()["b"], json!(2.0));
    }

    #[test]
    fn task_augmented_call_2025_11_25() {
        let p: CallToolRequestParams = round_trip(json!({
            "name": "simulate-research-query", "arguments": {"topic": "tide pools"}, "task": {"ttl": 60000}
        }));
        assert_eq!(p.task.unwrap().ttl, Some(60000));
        let r: CallToolOutput = round_trip(json!({"task": {
            "taskId": "1069", "status": "working", "ttl": 300000,
            "createdAt": "2026-11-30T01:01:48.106Z", "lastUpdatedAt": "2026-11-30T01:01:48.106Z",
            "pollInterval": 1000
        }}));
        assert!(matches!(r, CallToolOutput::Task(ref t) if t.task.task_id == "1069"));
    }

    #[test]
    fn call_2026_07_28_shapes() {
        let p: CallToolRequestParams = round_trip(json!({
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "tok"},
            "name": "build", "arguments": {"city": "Micropolis"}, "requestState": "abc",
            "inputResponses": {"k": {"action": "accept"}}
        }));
        assert_eq!(p.request_state.as_deref(), Some("abc"));
        let r: CallToolOutput = round_trip(json!({
            "resultType": "complete", "content": [], "structuredContent": [1, 2],
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
        }));
        let CallToolOutput::Result(r) = r else { panic!() };
        assert_eq!(r.result_type, Some(ResultType::Complete));
        let r: CallToolOutput = round_trip(json!({"resultType": "input_required", "requestState": "x"}));
        assert!(matches!(r, CallToolOutput::Other(_)));
        assert!(serde_json::from_value::<CallToolOutput>(json!({"isError": true})).is_err());
    }

    #[test]
    fn list_tools_2026_cacheable() {
        let r: ListToolsResult = round_trip(json!({
            "tools": [], "nextCursor": "tools-5", "resultType": "complete", "ttlMs": 0, "cacheScope": "private"
        }));
        assert_eq!(r.cache_scope, Some(CacheScope::Private));
        assert_eq!(r.ttl_ms, Some(0));
        let _: ListToolsRequestParams = round_trip(json!({"cursor": "tools-5"}));
    }
}
