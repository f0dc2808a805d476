//! Tools: `tools/list`, `tools/call` and `notifications/tools/list_changed`, with [`Tool`], its
//! annotations and execution hints, and the result of a call — which in 2025-11-25 may be a
//! [`CreateTaskResult`] when the call was task-augmented (see [`CallToolOutput`]).
//!
//! Not here: the content blocks a result carries (`content`) and the 2026-07-28
//! `InputRequiredResult` / `InputResponses` types (kept raw here, see the field docs).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::decode::{deserialize_with_extra, Key};
use super::{
    method, notification, open_string_enum_serde, CacheScope, ContentBlock, CreateTaskResult, Cursor,
    EmptyNotificationParams, Extra, Icon, MethodInfo, RequestMeta, ResultMeta, ResultType, TaskMetadata,
};

/// A tool the server offers ("Tool"). Schemas are kept as raw JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
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

/// Builders: `Tool::new(name, input_schema)` and a method per optional member, each consuming
/// and returning the tool (pure data, no validation; the server checks what it serves).
///
/// ```
/// use mcpwire::proto::mcp_types::Tool;
/// use serde_json::json;
///
/// let tool = Tool::new("add", json!({"type": "object"}))
///     .title("Add")
///     .description("Adds two numbers")
///     .read_only(true)
///     .output_schema(json!({"type": "object", "properties": {"sum": {"type": "number"}}}));
/// assert_eq!(tool.annotations.unwrap().read_only_hint, Some(true));
/// ```
impl Tool {
    /// A tool with a name and the JSON Schema of its arguments (an object schema), the rest
    /// unset.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Tool {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
            icons: None,
            execution: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// `title`: the display name.
    pub fn title(mut self, title: impl Into<String>) -> Tool {
        self.title = Some(title.into());
        self
    }

    /// `description`: what the tool does.
    pub fn description(mut self, description: impl Into<String>) -> Tool {
        self.description = Some(description.into());
        self
    }

    /// `inputSchema`, replaced.
    pub fn input_schema(mut self, schema: Value) -> Tool {
        self.input_schema = schema;
        self
    }

    /// `outputSchema`: the JSON Schema of `structuredContent`.
    pub fn output_schema(mut self, schema: Value) -> Tool {
        self.output_schema = Some(schema);
        self
    }

    /// `annotations`, replaced whole.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Tool {
        self.annotations = Some(annotations);
        self
    }

    /// `annotations.readOnlyHint`.
    pub fn read_only(self, hint: bool) -> Tool {
        self.annotate(|a| a.read_only_hint = Some(hint))
    }

    /// `annotations.destructiveHint`.
    pub fn destructive(self, hint: bool) -> Tool {
        self.annotate(|a| a.destructive_hint = Some(hint))
    }

    /// `annotations.idempotentHint`.
    pub fn idempotent(self, hint: bool) -> Tool {
        self.annotate(|a| a.idempotent_hint = Some(hint))
    }

    /// `annotations.openWorldHint`.
    pub fn open_world(self, hint: bool) -> Tool {
        self.annotate(|a| a.open_world_hint = Some(hint))
    }

    fn annotate(mut self, set: impl FnOnce(&mut ToolAnnotations)) -> Tool {
        set(self.annotations.get_or_insert_with(ToolAnnotations::default));
        self
    }

    /// `execution.taskSupport`: whether calls may or must run as tasks (2025-11-25).
    pub fn task_support(mut self, support: TaskSupport) -> Tool {
        self.execution.get_or_insert_with(ToolExecution::default).task_support = Some(support);
        self
    }

    /// `icons`, replaced.
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Tool {
        self.icons = Some(icons.into_iter().collect());
        self
    }

    /// `_meta`, replaced.
    pub fn meta(mut self, meta: Map<String, Value>) -> Tool {
        self.meta = Some(meta);
        self
    }
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
#[serde(remote = "Self")]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
    /// `_meta`, boxed: a [`RequestMeta`] is most of a kilobyte and most calls have none, so
    /// the params (moved by value from the client's call to the server's handler) stay small.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<RequestMeta>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The params a server decodes in the same pass as the envelope
/// ([`decode_typed`](crate::proto::jsonrpc::decode_typed)): `tools/call`'s, the request whose
/// params can be large. They come as a typed [`CallToolRequestParams`] body.
pub struct ServerTypedParams;

impl crate::proto::jsonrpc::TypedParams for ServerTypedParams {
    fn wants(method: &str) -> bool {
        method == "tools/call"
    }

    fn decode<'de, D: Deserializer<'de>>(_: &str, params: D) -> Result<crate::proto::jsonrpc::Body, D::Error> {
        CallToolRequestParams::deserialize(params).map(crate::proto::jsonrpc::Body::typed)
    }
}

/// The results a client decodes in the same pass as the envelope
/// ([`decode_answer`](crate::proto::jsonrpc::decode_answer)): `tools/call`'s, the result that
/// can be large. It comes as a typed [`CallToolOutput`] body, the type
/// `Client::call_tool` decodes it into.
pub struct ClientTypedResults;

impl crate::proto::jsonrpc::TypedResults for ClientTypedResults {
    fn wants(method: &str) -> bool {
        method == "tools/call"
    }

    fn decode<'de, D: Deserializer<'de>>(_: &str, result: D) -> Result<crate::proto::jsonrpc::Body, D::Error> {
        CallToolOutput::deserialize(result).map(crate::proto::jsonrpc::Body::typed)
    }
}

// Hand-written (see `decode`): the params of every call, and the arguments can be large.
deserialize_with_extra!(CallToolRequestParams, "tools/call params",
    required { name: String = "name" }
    optional {
        arguments: Map<String, Value> = "arguments",
        task: TaskMetadata = "task",
        input_responses: Map<String, Value> = "inputResponses",
        request_state: String = "requestState",
        meta: Box<RequestMeta> = "_meta",
    }
);

/// Result of a completed `tools/call`. A tool failure is a result with `isError: true`, not a
/// JSON-RPC error.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
    /// `_meta`, boxed: a [`ResultMeta`] holds a server's `Implementation` inline and most
    /// results have none, so the result (moved by value from the handler to the caller) stays
    /// small.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<ResultMeta>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Why [`CallToolResult::structured`] gave no value.
#[derive(Debug)]
#[non_exhaustive]
pub enum StructuredError {
    /// The result has no `structuredContent`.
    Missing,
    /// The tool failed (`isError: true`); the text of its content.
    ToolFailed(String),
    /// `structuredContent` does not fit the type.
    Decode(DecodeError),
    /// `structuredContent` breaks the tool's `outputSchema`.
    Invalid(crate::proto::validate::Violations),
    /// The tool's `outputSchema` does not compile, so nothing can be checked against it (a
    /// schema that cannot be checked is not taken as permissive: 2026-07-28 `basic/index`).
    Schema(crate::proto::validate::InvalidSchema),
}

impl std::fmt::Display for StructuredError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StructuredError::Missing => f.write_str("the tool result has no structured content"),
            StructuredError::ToolFailed(text) => write!(f, "the tool failed: {text}"),
            StructuredError::Decode(e) => write!(f, "the structured content does not fit: {e}"),
            StructuredError::Invalid(e) => write!(f, "the structured content does not match the output schema: {e}"),
            StructuredError::Schema(e) => write!(f, "the output schema cannot be checked: {e}"),
        }
    }
}

impl std::error::Error for StructuredError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StructuredError::Decode(e) => Some(e),
            StructuredError::Invalid(e) => Some(e),
            StructuredError::Schema(e) => Some(e),
            StructuredError::Missing | StructuredError::ToolFailed(_) => None,
        }
    }
}

/// A JSON value that does not decode as a Rust type: where (a JSON pointer into the value,
/// `""` for the whole value) and serde's reason.
#[derive(Debug)]
pub struct DecodeError {
    /// A JSON pointer to the offending value, as the server's schema errors write it.
    pub path: String,
    /// serde's error.
    pub source: serde_json::Error,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.source)
        } else {
            write!(f, "{}: {}", self.path, self.source)
        }
    }
}

impl std::error::Error for DecodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Decodes `value` as `T`, naming the JSON pointer of the first part that does not fit.
///
/// # Errors
/// [`DecodeError`] when `value` does not fit `T`.
pub fn decode_value<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, DecodeError> {
    // A value that fits (nearly every one) is decoded without tracking the path, which clones
    // every key it passes; only one that does not fit is decoded again to say where.
    if let Ok(decoded) = T::deserialize(&value) {
        return Ok(decoded);
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        use serde_path_to_error::Segment;
        let mut path = String::new();
        for segment in e.path().iter() {
            path.push('/');
            match segment {
                Segment::Seq { index } => path.push_str(&index.to_string()),
                Segment::Map { key } | Segment::Enum { variant: key } => {
                    path.push_str(&key.replace('~', "~0").replace('/', "~1"))
                }
                Segment::Unknown => path.push('?'),
            }
        }
        DecodeError { path, source: e.into_inner() }
    })
}

impl CallToolResult {
    /// Decodes `structuredContent` as `T` (client side: the typed result of a tool, such as one
    /// a server made with `derived_tool` and `Json<T>`).
    ///
    /// # Errors
    /// [`StructuredError::ToolFailed`] for a tool error, [`StructuredError::Missing`] without
    /// `structuredContent`, [`StructuredError::Decode`] (with the JSON pointer of the part that
    /// does not fit) when it is not a `T`.
    pub fn structured<T: serde::de::DeserializeOwned>(&self) -> Result<T, StructuredError> {
        self.failure()?;
        let value = self.structured_content.clone().ok_or(StructuredError::Missing)?;
        decode_value(value).map_err(StructuredError::Decode)
    }

    /// As [`structured`](Self::structured), taking the result (`structuredContent` is not
    /// copied), and checking `structuredContent` against `output_schema` first when given: the
    /// check a client makes of a tool's declared `outputSchema`.
    ///
    /// # Errors
    /// As [`structured`](Self::structured); [`StructuredError::Invalid`] naming the path of each
    /// violation of the schema.
    pub fn into_structured<T: serde::de::DeserializeOwned>(
        self,
        output_schema: Option<&crate::proto::validate::Validator>,
    ) -> Result<T, StructuredError> {
        self.failure()?;
        let value = self.structured_content.ok_or(StructuredError::Missing)?;
        if let Some(schema) = output_schema {
            schema.check(&value).map_err(StructuredError::Invalid)?;
        }
        decode_value(value).map_err(StructuredError::Decode)
    }

    /// [`StructuredError::ToolFailed`] with the text of the content when this is a tool error.
    fn failure(&self) -> Result<(), StructuredError> {
        if self.is_error != Some(true) {
            return Ok(());
        }
        let text = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        Err(StructuredError::ToolFailed(text))
    }
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
    /// The call became a task. Boxed: a [`CreateTaskResult`] is several times a final
    /// result's size, and the output of every call is moved by value on its way to the caller.
    Task(Box<CreateTaskResult>),
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

deserialize_with_extra!(CallToolResult, "a tool result",
    required { content: Vec<ContentBlock> = "content" }
    optional {
        structured_content: Value = "structuredContent",
        is_error: bool = "isError",
        result_type: ResultType = "resultType",
        meta: Box<ResultMeta> = "_meta",
    }
);

impl<'de> Deserialize<'de> for CallToolOutput {
    /// One pass: `content` (the large member) is decoded as content blocks as it is read, the
    /// other members are kept as JSON until the shape is known.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct OutputVisitor;
        impl<'de> serde::de::Visitor<'de> for OutputVisitor {
            type Value = CallToolOutput;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a tools/call result")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<CallToolOutput, A::Error> {
                use serde::de::Error as _;
                let mut content: Option<Vec<ContentBlock>> = None;
                let mut rest = Map::new();
                while let Some(key) = access.next_key::<Key<'de>>()? {
                    if key.as_str() == "content" {
                        if content.is_some() {
                            return Err(A::Error::duplicate_field("content"));
                        }
                        content = Some(access.next_value()?);
                    } else {
                        let value: Value = access.next_value()?;
                        rest.insert(key.into_string(), value);
                    }
                }
                fn decode<T: serde::de::DeserializeOwned, E: serde::de::Error>(
                    map: Map<String, Value>,
                ) -> Result<T, E> {
                    serde_json::from_value(Value::Object(map)).map_err(E::custom)
                }
                match content {
                    Some(content) => result_from_parts(content, rest).map(CallToolOutput::Result),
                    None if rest.contains_key("task") => decode(rest).map(|t| CallToolOutput::Task(Box::new(t))),
                    None if rest.get("resultType").is_some_and(|t| t != "complete") => Ok(CallToolOutput::Other(rest)),
                    None => Err(A::Error::missing_field("content")),
                }
            }
        }
        d.deserialize_map(OutputVisitor)
    }
}

/// A [`CallToolResult`] from its decoded `content` and its other members as JSON.
fn result_from_parts<E: serde::de::Error>(
    content: Vec<ContentBlock>,
    mut rest: Map<String, Value>,
) -> Result<CallToolResult, E> {
    fn take<T: serde::de::DeserializeOwned, E: serde::de::Error>(
        rest: &mut Map<String, Value>,
        key: &str,
    ) -> Result<Option<T>, E> {
        match rest.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => serde_json::from_value(value).map(Some).map_err(|e| E::custom(format_args!("{key}: {e}"))),
        }
    }
    Ok(CallToolResult {
        content,
        structured_content: take(&mut rest, "structuredContent")?,
        is_error: take(&mut rest, "isError")?,
        result_type: take(&mut rest, "resultType")?,
        meta: take(&mut rest, "_meta")?,
        extra: rest,
    })
}

impl From<CallToolResult> for CallToolOutput {
    fn from(r: CallToolResult) -> Self {
        CallToolOutput::Result(r)
    }
}

impl From<CreateTaskResult> for CallToolOutput {
    fn from(t: CreateTaskResult) -> Self {
        CallToolOutput::Task(Box::new(t))
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

super::decode::decode_via_value!(ListToolsResult, Tool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_past_64_bits_round_trip_to_a_fixed_point() {
        // Found by fuzz/method_table: a 51-digit integer became a float one ULP off each time it
        // was decoded again, until serde_json's float_roundtrip (correct rounding) was turned on.
        let text = r#"{"name":"x","arguments":{"n":211111111111111111111111111111111111111111111111111,"f":2.1111111111111114e50}}"#;
        let once: CallToolRequestParams = serde_json::from_str(text).unwrap();
        let encoded = serde_json::to_string(&once).unwrap();
        let twice: CallToolRequestParams = serde_json::from_str(&encoded).unwrap();
        assert_eq!(serde_json::to_string(&twice).unwrap(), encoded);
        assert_eq!(once.arguments.as_ref().unwrap()["f"].as_f64(), Some(2.1111111111111114e50));
    }
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
    fn the_builder_writes_every_member() {
        let tool = Tool::new("echo", json!({"type": "object"}))
            .title("Echo")
            .description("Echoes")
            .output_schema(json!({"type": "object"}))
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
            .task_support(TaskSupport::Optional)
            .icons([Icon { src: "https://x/icon.png".into(), ..Icon::default() }])
            .meta([("ui".to_owned(), json!(1))].into_iter().collect());
        assert_eq!(
            serde_json::to_value(&tool).unwrap(),
            json!({
                "name": "echo", "title": "Echo", "description": "Echoes",
                "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
                "execution": {"taskSupport": "optional"},
                "icons": [{"src": "https://x/icon.png"}],
                "_meta": {"ui": 1}
            })
        );
        let bare = Tool::new("t", json!({"type": "object"}));
        assert_eq!(serde_json::to_value(&bare).unwrap(), json!({"name": "t", "inputSchema": {"type": "object"}}));
    }

    #[test]
    fn structured_content_decodes_into_a_type_or_names_the_path() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct Point {
            x: i32,
            tags: Vec<String>,
        }
        let ok = CallToolResult { structured_content: Some(json!({"x": 1, "tags": ["a"]})), ..Default::default() };
        assert_eq!(ok.structured::<Point>().unwrap(), Point { x: 1, tags: vec!["a".into()] });
        let bad = CallToolResult { structured_content: Some(json!({"x": 1, "tags": ["a", 2]})), ..Default::default() };
        let err = bad.structured::<Point>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "the structured content does not fit: /tags/1: invalid type: integer `2`, expected a string"
        );
        let missing = CallToolResult { structured_content: Some(json!({"tags": []})), ..Default::default() };
        assert_eq!(
            missing.structured::<Point>().unwrap_err().to_string(),
            "the structured content does not fit: missing field `x`"
        );
        assert!(matches!(CallToolResult::default().structured::<Point>(), Err(StructuredError::Missing)));
        let failed = CallToolResult {
            content: vec![serde_json::from_value(json!({"type": "text", "text": "boom"})).unwrap()],
            is_error: Some(true),
            ..Default::default()
        };
        assert_eq!(failed.structured::<Point>().unwrap_err().to_string(), "the tool failed: boom");
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
    fn call_params_keep_unknown_members() {
        let p: CallToolRequestParams = round_trip(json!({
            "name": "t", "arguments": {"a": [1, {"b": null}]}, "x-vendor": {"deep": [true]}, "n": 1.0
        }));
        assert_eq!(p.extra.len(), 2);
        assert_eq!(p.extra["n"], json!(1.0));
        let text = r#"{"name":"t","arguments":null,"task":null,"_meta":null,"requestState":null}"#;
        let p: CallToolRequestParams = serde_json::from_str(text).unwrap();
        assert_eq!(p, CallToolRequestParams { name: "t".into(), ..Default::default() }, "null is absent");
    }

    #[test]
    fn call_params_wrong_types_missing_and_duplicates_fail() {
        let bad = [
            r#"{"arguments":{}}"#,
            r#"{"name":1}"#,
            r#"{"name":"t","arguments":[1]}"#,
            r#"{"name":"t","task":{"ttl":"soon"}}"#,
            r#"{"name":"t","_meta":{"progressToken":[1]}}"#,
            r#"{"name":"t","name":"u"}"#,
            r#"{"name":"t","arguments":{},"arguments":{}}"#,
            r#"["t"]"#,
            r#""t""#,
        ];
        for text in bad {
            assert!(serde_json::from_str::<CallToolRequestParams>(text).is_err(), "{text} must not decode");
        }
        let err = serde_json::from_str::<CallToolRequestParams>(r#"{"name":"t","name":"u"}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate field `name`"), "{err}");
        // An unknown member given twice keeps the last value, as any JSON object in a map.
        let p: CallToolRequestParams = serde_json::from_str(r#"{"name":"t","x":1,"x":2}"#).unwrap();
        assert_eq!(p.extra["x"], json!(2));
    }

    #[test]
    fn call_params_escaped_keys_and_strings() {
        // Escaped keys are the keys they spell; escaped and borrowed strings decode alike.
        let text = r#"{"n\u0061me":"e\"cho\n","arguments":{"te\u0078t":"a\\b\u00e9","plain":"x"},"\u005fmeta":{"progressToken":"p"},"k\u00e9y":"v"}"#;
        let p: CallToolRequestParams = serde_json::from_str(text).unwrap();
        assert_eq!(p.name, "e\"cho\n");
        let args = p.arguments.as_ref().unwrap();
        assert_eq!(args["text"], json!("a\\bé"));
        assert_eq!(args["plain"], json!("x"));
        assert!(p.meta.as_ref().unwrap().progress_token.is_some());
        assert_eq!(p.extra["kéy"], json!("v"));
        // The same from a `Value` (owned keys and strings).
        let from_value: CallToolRequestParams = serde_json::from_value(serde_json::from_str(text).unwrap()).unwrap();
        assert_eq!(from_value, p);
    }

    #[test]
    fn call_result_keeps_unknown_members_and_rejects_bad_ones() {
        let r: CallToolResult = round_trip(json!({
            "content": [{"type": "text", "text": "hi", "x-block": 1}], "isError": true, "x-result": {"a": 1}
        }));
        assert_eq!(r.extra["x-result"], json!({"a": 1}));
        let ContentBlock::Text(t) = &r.content[0] else { panic!("text") };
        assert_eq!(t.extra["x-block"], json!(1));
        for text in [
            r#"{"isError":false}"#,
            r#"{"content":{}}"#,
            r#"{"content":[],"isError":"yes"}"#,
            r#"{"content":[],"content":[]}"#,
            r#"{"content":[{"type":"text","text":1}]}"#,
            r#"{"content":[{"type":"text"}]}"#,
            r#"{"content":[],"_meta":[]}"#,
        ] {
            assert!(serde_json::from_str::<CallToolResult>(text).is_err(), "{text} must not decode");
            assert!(serde_json::from_str::<CallToolOutput>(text).is_err(), "{text} must not decode as output");
        }
    }

    #[test]
    fn a_results_meta_round_trips_boxed_from_text_value_and_output() {
        let meta = json!({
            "io.modelcontextprotocol/serverInfo": {"name": "up", "version": "1"},
            "io.modelcontextprotocol/related-task": {"taskId": "t1"},
            "x-trace": {"span": 7}
        });
        let value = json!({"content": [{"type": "text", "text": "hi"}], "_meta": meta});
        let r: CallToolResult = round_trip(value.clone());
        let m = r.meta.as_deref().expect("_meta");
        assert_eq!(m.server_info.as_ref().map(|i| i.name.as_str()), Some("up"));
        assert_eq!(m.related_task.as_ref().map(|t| t.task_id.as_str()), Some("t1"));
        assert_eq!(m.extra["x-trace"], json!({"span": 7}));
        let from_text: CallToolResult = serde_json::from_str(&value.to_string()).unwrap();
        assert_eq!(from_text, r);
        let Ok(CallToolOutput::Result(output)) = serde_json::from_str::<CallToolOutput>(&value.to_string()) else {
            panic!("a final result")
        };
        assert_eq!(output, r);
        assert_eq!(serde_json::to_value(CallToolOutput::Result(output)).unwrap(), value);
        // The box keeps the result small: it is moved by value from the handler to the caller.
        assert!(std::mem::size_of::<CallToolResult>() <= 160, "{}", std::mem::size_of::<CallToolResult>());
        assert!(std::mem::size_of::<CallToolOutput>() <= 160, "{}", std::mem::size_of::<CallToolOutput>());
    }

    #[test]
    fn call_output_from_text_matches_from_value() {
        let texts = [
            r#"{"content":[{"type":"text","text":"a\"b\\\u00e9"}],"structuredContent":null,"isError":null,"y":[1]}"#,
            r#"{"content":[{"text":"late type","type":"text","annotations":{"priority":1}}],"resultType":"complete"}"#,
            r#"{"task":{"taskId":"1","status":"working","createdAt":"t","lastUpdatedAt":"t","ttl":null},"z":1}"#,
            r#"{"resultType":"input_required","isError":"kept as written","requestState":"s"}"#,
        ];
        for text in texts {
            let from_text: CallToolOutput = serde_json::from_str(text).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            let from_value: CallToolOutput = serde_json::from_value(value).unwrap();
            assert_eq!(from_text, from_value, "{text}");
        }
        let CallToolOutput::Other(other) = serde_json::from_str(texts[3]).unwrap() else { panic!("other") };
        assert_eq!(other["isError"], json!("kept as written"));
        let CallToolOutput::Result(r) = serde_json::from_str(texts[0]).unwrap() else { panic!("result") };
        assert_eq!((r.structured_content, r.is_error), (None, None), "null is absent");
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
