//! Sampling: `sampling/createMessage`, by which a server asks the client's model for a
//! completion, with [`SamplingMessage`], [`ModelPreferences`], the 2025-11-25 tool use members
//! (`tools`, `toolChoice`) and task augmentation, and [`CreateMessageResult`].
//!
//! In 2026-07-28 the request no longer travels as a JSON-RPC request of its own but inside an
//! `input_required` result (see [`input`](super::input)); the params and result types are the
//! same. Not here: the content blocks themselves and [`Tool`] (other modules).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::open_enum::open_enum;
use super::*;

/// The content of a sampling message or result: one block, or (2025-11-25 on) an array of
/// blocks. Which form was used is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SamplingContent {
    /// An array of blocks (2025-11-25 on).
    Multiple(Vec<SamplingMessageContentBlock>),
    /// A single block.
    Single(SamplingMessageContentBlock),
}

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: SamplingContent,
    /// Free metadata (2025-11-25 on).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The server's wishes about which model the client picks. Priorities are numbers in 0..=1,
/// kept as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model names or families to prefer, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<Number>,
    /// How much speed matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<Number>,
    /// How much capability matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<Number>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A hint about a model: a (sub)string of its name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelHint {
    /// Name or fragment, e.g. `"sonnet"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

open_enum!(
    /// Which servers' context the client should add to the prompt. Open: an unknown value is
    /// kept, and a client may ignore the request anyway.
    IncludeContext {
        /// No context.
        None = "none",
        /// Context from the requesting server.
        ThisServer = "thisServer",
        /// Context from every connected server.
        AllServers = "allServers",
    }
);

open_enum!(
    /// How the model may use the offered tools (2025-11-25). Open: an unknown mode is kept.
    ToolChoiceMode {
        /// The model decides.
        Auto = "auto",
        /// The model must use at least one tool.
        Required = "required",
        /// The model must not use tools.
        None = "none",
    }
);

open_enum!(
    /// Why sampling stopped. The spec gives known values but allows any string, so this is
    /// open.
    StopReason {
        /// The model ended its turn.
        EndTurn = "endTurn",
        /// A stop sequence was hit.
        StopSequence = "stopSequence",
        /// The token limit was hit.
        MaxTokens = "maxTokens",
        /// The model wants to call tools (2025-11-25).
        ToolUse = "toolUse",
    }
);

/// Tool use policy of a sampling request (2025-11-25 on).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The policy; the client's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// Model selection wishes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// System prompt the server asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Context to include.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Upper bound of tokens to generate. The spec says integer; kept as written.
    pub max_tokens: Number,
    /// Sequences that end generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Tools the model may call (2025-11-25 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How it may call them (2025-11-25 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Run as a task (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `sampling/createMessage`: the generated message and which model wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Normally `assistant`.
    pub role: Role,
    /// The generated content, one block or (2025-11-25 on) several.
    pub content: SamplingContent,
    /// The model used.
    pub model: String,
    /// Why generation stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl From<SamplingMessageContentBlock> for SamplingContent {
    fn from(block: SamplingMessageContentBlock) -> Self {
        SamplingContent::Single(block)
    }
}

impl From<Vec<SamplingMessageContentBlock>> for SamplingContent {
    fn from(blocks: Vec<SamplingMessageContentBlock>) -> Self {
        SamplingContent::Multiple(blocks)
    }
}

impl SamplingContent {
    /// The blocks, one or several.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            SamplingContent::Multiple(blocks) => blocks,
            SamplingContent::Single(block) => std::slice::from_ref(block),
        }
    }

    /// The text of the text blocks, joined.
    pub fn text(&self) -> String {
        self.blocks()
            .iter()
            .filter_map(|b| match b {
                SamplingMessageContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool uses the model asks for (2025-11-25 on), in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUseContent> {
        self.blocks().iter().filter_map(|b| match b {
            SamplingMessageContentBlock::ToolUse(u) => Some(u),
            _ => None,
        })
    }
}

impl SamplingMessageContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        SamplingMessageContentBlock::Text(TextContent { text: text.into(), ..TextContent::default() })
    }

    /// The result of the tool use `tool_use_id` (2025-11-25 on), an error result when
    /// `is_error`.
    pub fn tool_result(tool_use_id: impl Into<String>, content: Vec<ContentBlock>, is_error: bool) -> Self {
        SamplingMessageContentBlock::ToolResult(ToolResultContent {
            tool_use_id: tool_use_id.into(),
            content,
            is_error: is_error.then_some(true),
            ..ToolResultContent::default()
        })
    }
}

impl SamplingMessage {
    /// A message from `role` holding `content` (a block or several).
    pub fn new(role: Role, content: impl Into<SamplingContent>) -> Self {
        SamplingMessage { role, content: content.into(), meta: None, extra: Extra::new() }
    }

    /// A user message of plain text.
    pub fn user_text(text: impl Into<String>) -> Self {
        SamplingMessage::new(Role::User, SamplingMessageContentBlock::text(text))
    }

    /// An assistant message of plain text.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text(text))
    }
}

impl CreateMessageRequestParams {
    /// A request for a completion of `messages` of at most `max_tokens` tokens; the other
    /// members absent (set them with the methods below).
    ///
    /// ```
    /// use mcpwire::proto::mcp_types::{CreateMessageRequestParams, SamplingMessage, ToolChoiceMode};
    ///
    /// let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Hello?")], 200)
    ///     .system_prompt("Answer briefly.")
    ///     .temperature(0.2)
    ///     .tool_choice(ToolChoiceMode::None);
    /// assert_eq!(
    ///     serde_json::to_value(&params).unwrap(),
    ///     serde_json::json!({
    ///         "messages": [{"role": "user", "content": {"type": "text", "text": "Hello?"}}],
    ///         "maxTokens": 200,
    ///         "systemPrompt": "Answer briefly.",
    ///         "temperature": 0.2,
    ///         "toolChoice": {"mode": "none"}
    ///     })
    /// );
    /// ```
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u32) -> Self {
        CreateMessageRequestParams {
            messages,
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: None,
            max_tokens: Number::from(max_tokens),
            stop_sequences: None,
            metadata: None,
            tools: None,
            tool_choice: None,
            task: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// The system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// The sampling temperature; a value that is no finite number is left out.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Number::from_f64(temperature);
        self
    }

    /// The model preferences.
    pub fn model_preferences(mut self, preferences: ModelPreferences) -> Self {
        self.model_preferences = Some(preferences);
        self
    }

    /// Which servers' context to include.
    pub fn include_context(mut self, context: IncludeContext) -> Self {
        self.include_context = Some(context);
        self
    }

    /// Sequences that end generation.
    pub fn stop_sequences(mut self, sequences: Vec<String>) -> Self {
        self.stop_sequences = Some(sequences);
        self
    }

    /// Provider-specific metadata, passed through to the client as written.
    pub fn metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Tools the model may ask to call (2025-11-25 on).
    pub fn tools(mut self, tools: Vec<Tool>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// How the model may use the tools (2025-11-25 on).
    pub fn tool_choice(mut self, mode: ToolChoiceMode) -> Self {
        self.tool_choice = Some(ToolChoice { mode: Some(mode), extra: Extra::new() });
        self
    }
}

impl ModelPreferences {
    /// No preference yet; add hints and priorities with the setters.
    pub fn new() -> Self {
        ModelPreferences::default()
    }

    /// Adds a hint: a model name or a fragment of one (`"sonnet"`), after those already given
    /// (the client weighs them in order).
    pub fn hint(mut self, name: impl Into<String>) -> Self {
        let hint = ModelHint { name: Some(name.into()), ..ModelHint::default() };
        self.hints.get_or_insert_with(Vec::new).push(hint);
        self
    }

    /// How much cost matters, 0..=1; a value that is no finite number is left out.
    pub fn cost_priority(mut self, priority: f64) -> Self {
        self.cost_priority = Number::from_f64(priority);
        self
    }

    /// How much speed matters, 0..=1; a value that is no finite number is left out.
    pub fn speed_priority(mut self, priority: f64) -> Self {
        self.speed_priority = Number::from_f64(priority);
        self
    }

    /// How much capability matters, 0..=1; a value that is no finite number is left out.
    pub fn intelligence_priority(mut self, priority: f64) -> Self {
        self.intelligence_priority = Number::from_f64(priority);
        self
    }
}

impl CreateMessageResult {
    /// An `assistant` result of `content` (a block or several) written by `model`, with no stop
    /// reason (set one with [`stop_reason`](Self::stop_reason)).
    pub fn new(model: impl Into<String>, content: impl Into<SamplingContent>) -> Self {
        CreateMessageResult {
            role: Role::Assistant,
            content: content.into(),
            model: model.into(),
            stop_reason: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// Why generation stopped.
    pub fn stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    /// The text of the result's text blocks, joined.
    pub fn text(&self) -> String {
        self.content.text()
    }

    /// The tool uses the model asks for (2025-11-25 on), in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUseContent> {
        self.content.tool_uses()
    }
}

method!(
    /// `sampling/createMessage`: the server asks the client for an LLM completion. From
    /// 2026-07-28 it is an input request inside a result instead.
    CreateMessage, "sampling/createMessage", ServerToClient, CreateMessageRequestParams, CreateMessageResult, since V2024_11_05, removed V2026_07_28
);

/// Every method this module declares.
pub(crate) const METHODS: &[MethodInfo] = &[MethodInfo::request::<CreateMessage>()];

super::decode::decode_via_value!(CreateMessageRequestParams, CreateMessageResult);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::version::ProtocolVersion;
    use serde_json::json;

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&t).expect("encode"), v);
        t
    }

    #[test]
    fn request_2024_11_05() {
        let p: CreateMessageRequestParams = rt(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
            "modelPreferences": {"hints": [{"name": "claude-3-sonnet"}],
                                 "intelligencePriority": 0.8, "speedPriority": 0.5},
            "systemPrompt": "You are a helpful test server.",
            "includeContext": "thisServer",
            "maxTokens": 20, "temperature": 0.7, "stopSequences": ["\n\n"],
            "metadata": {"provider": {"x": 1}}
        }));
        assert!(matches!(p.messages[0].content, SamplingContent::Single(_)));
        assert_eq!(p.include_context, Some(IncludeContext::ThisServer));
        assert_eq!(p.max_tokens.as_u64(), Some(20));
        let prefs = p.model_preferences.unwrap();
        assert_eq!(prefs.hints.unwrap()[0].name.as_deref(), Some("claude-3-sonnet"));
        assert!(prefs.cost_priority.is_none());
        assert!(p.tools.is_none() && p.tool_choice.is_none() && p.task.is_none());
    }

    #[test]
    fn number_spelling_is_kept() {
        let p: CreateMessageRequestParams = rt(json!({"messages": [], "maxTokens": 100, "temperature": 1.0}));
        assert_eq!(serde_json::to_string(&p.temperature).unwrap(), "1.0");
        let p: CreateMessageRequestParams = rt(json!({"messages": [], "maxTokens": 100, "temperature": 1}));
        assert_eq!(serde_json::to_string(&p.temperature).unwrap(), "1");
    }

    #[test]
    fn request_2025_11_25_with_tools_and_array_content() {
        let p: CreateMessageRequestParams = rt(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "toolUseId": "c1",
                     "content": [{"type": "text", "text": "18C"}]}
                ], "_meta": {"k": "v"}}
            ],
            "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "auto"},
            "task": {"ttl": 60000},
            "maxTokens": 1000
        }));
        assert!(matches!(p.messages[1].content, SamplingContent::Multiple(ref v) if v.len() == 1));
        assert_eq!(p.tool_choice.unwrap().mode, Some(ToolChoiceMode::Auto));
        assert_eq!(p.tools.unwrap().len(), 1);
        assert!(p.task.is_some());
        assert!(p.messages[2].meta.is_some());
    }

    #[test]
    fn results_single_and_array() {
        let r: CreateMessageResult = rt(json!({
            "role": "assistant", "content": {"type": "text", "text": "Canned reply to: hi"},
            "model": "canned-model-1", "stopReason": "endTurn"
        }));
        assert!(matches!(r.content, SamplingContent::Single(_)));
        assert_eq!(r.stop_reason, Some(StopReason::EndTurn));
        let r: CreateMessageResult = rt(json!({
            "role": "assistant", "model": "m", "stopReason": "toolUse",
            "content": [{"type": "tool_use", "id": "c2", "name": "get_weather", "input": {}}]
        }));
        assert!(matches!(r.content, SamplingContent::Multiple(_)));
        assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
        // stopReason is an open string.
        let r: CreateMessageResult = rt(json!({
            "role": "assistant", "model": "m", "stopReason": "refusal",
            "content": {"type": "text", "text": ""}
        }));
        assert_eq!(r.stop_reason, Some(StopReason::Other("refusal".into())));
    }

    #[test]
    fn open_enums_keep_unknown_values() {
        let c: ToolChoice = rt(json!({"mode": "any"}));
        assert_eq!(c.mode, Some(ToolChoiceMode::Other("any".into())));
        let c: ToolChoice = rt(json!({}));
        assert!(c.mode.is_none());
        let i: IncludeContext = rt(json!("everything"));
        assert_eq!(i.as_str(), "everything");
    }

    #[test]
    fn builders_write_what_the_spec_shows() {
        let weather = Tool::new("get_weather", json!({"type": "object"}));
        let params = CreateMessageRequestParams::new(
            vec![
                SamplingMessage::user_text("Weather in Paris?"),
                SamplingMessage::new(
                    Role::Assistant,
                    vec![SamplingMessageContentBlock::ToolUse(ToolUseContent {
                        id: "c1".into(),
                        name: "get_weather".into(),
                        input: Map::new(),
                        meta: None,
                        extra: Extra::new(),
                    })],
                ),
                SamplingMessage::new(
                    Role::User,
                    vec![SamplingMessageContentBlock::tool_result("c1", vec![ContentBlock::text("18C")], false)],
                ),
            ],
            1000,
        )
        .tools(vec![weather])
        .tool_choice(ToolChoiceMode::Auto)
        .temperature(f64::NAN);
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "18C"}]}]}
                ],
                "maxTokens": 1000,
                "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
                "toolChoice": {"mode": "auto"}
            })
        );
        let result = CreateMessageResult::new(
            "m",
            vec![SamplingMessageContentBlock::text("Let me look. "), SamplingMessageContentBlock::text("One moment.")],
        )
        .stop_reason(StopReason::ToolUse);
        assert_eq!(result.text(), "Let me look. One moment.");
        assert_eq!(result.tool_uses().count(), 0);
        let decoded: CreateMessageResult = serde_json::from_value(json!({
            "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "c2", "name": "f", "input": {"x": 1}}]
        }))
        .unwrap();
        assert_eq!(
            (decoded.text().as_str(), decoded.tool_uses().map(|u| u.name.as_str()).collect::<Vec<_>>()),
            ("ok", vec!["f"])
        );
    }

    /// What the builders write with every member set, exactly: our own expectation. Whether a
    /// third party reads it as the spec means it is checked in `tests/interop/python_sdk_types.rs`
    /// (the Python SDK's pydantic models).
    #[test]
    fn builders_write_every_member_under_the_spec_name() {
        let params = CreateMessageRequestParams::new(
            vec![
                SamplingMessage::user_text("What is 2 + 2?"),
                SamplingMessage::assistant_text("4."),
                SamplingMessage::user_text("And 3 + 3?"),
            ],
            64,
        )
        .system_prompt("Answer with a number.")
        .model_preferences(
            ModelPreferences::new()
                .hint("claude-3-sonnet")
                .hint("claude")
                .cost_priority(0.3)
                .speed_priority(0.5)
                .intelligence_priority(0.9),
        )
        .temperature(0.2)
        .stop_sequences(vec!["\n\n".into()])
        .include_context(IncludeContext::ThisServer)
        .metadata(Map::from_iter([("provider".to_owned(), json!({"seed": 7}))]));
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": "What is 2 + 2?"}},
                    {"role": "assistant", "content": {"type": "text", "text": "4."}},
                    {"role": "user", "content": {"type": "text", "text": "And 3 + 3?"}}
                ],
                "modelPreferences": {
                    "hints": [{"name": "claude-3-sonnet"}, {"name": "claude"}],
                    "costPriority": 0.3, "speedPriority": 0.5, "intelligencePriority": 0.9
                },
                "systemPrompt": "Answer with a number.",
                "includeContext": "thisServer",
                "temperature": 0.2,
                "maxTokens": 64,
                "stopSequences": ["\n\n"],
                "metadata": {"provider": {"seed": 7}}
            })
        );

        let result = CreateMessageResult::new("claude-3-sonnet", SamplingMessageContentBlock::text("6"))
            .stop_reason(StopReason::EndTurn);
        let written = serde_json::to_value(&result).unwrap();
        assert_eq!(
            written,
            json!({"role": "assistant", "content": {"type": "text", "text": "6"}, "model": "claude-3-sonnet", "stopReason": "endTurn"})
        );
        // Read back typed: the answer's text, the model, the stop reason.
        let read: CreateMessageResult = serde_json::from_value(written).unwrap();
        assert_eq!((read.text().as_str(), read.model.as_str()), ("6", "claude-3-sonnet"));
        assert_eq!(read.stop_reason, Some(StopReason::EndTurn));
    }

    #[test]
    fn method_row() {
        let m = &METHODS[0];
        assert_eq!((m.name, m.direction), ("sampling/createMessage", Direction::ServerToClient));
        assert!(m.exists_in(ProtocolVersion::V2024_11_05));
        assert!(!m.exists_in(ProtocolVersion::V2026_07_28));
    }
}
