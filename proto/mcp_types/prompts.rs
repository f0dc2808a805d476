//! Prompts: the `Prompt` description with its arguments, `prompts/list`, `prompts/get` with the
//! resulting messages, and `notifications/prompts/list_changed`.
//!
//! Not here: the content blocks inside a message ([`ContentBlock`] belongs to the content
//! module). 2026-07-28 results also carry `resultType` (and for the list `ttlMs`/`cacheScope`);
//! they stay in `extra` for now.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::*;

/// A prompt or prompt template the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Prompt {
    /// Programmatic name, used by `prompts/get`.
    pub name: String,
    /// Display name (2025-06-18 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons (2025-11-25 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Free metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One argument of a prompt template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Argument name.
    pub name: String,
    /// Display name (2025-06-18 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Builders: `Prompt::new(name)` and a method per optional member (pure data).
///
/// ```
/// use mcpwire::proto::mcp_types::{Prompt, PromptArgument};
///
/// let prompt = Prompt::new("review")
///     .description("Reviews code")
///     .argument(PromptArgument::new("code").description("The code").required(true));
/// assert_eq!(prompt.arguments.unwrap()[0].required, Some(true));
/// ```
impl Prompt {
    /// A prompt with a name, the rest unset.
    pub fn new(name: impl Into<String>) -> Prompt {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: None,
            icons: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// `title`: the display name.
    pub fn title(mut self, title: impl Into<String>) -> Prompt {
        self.title = Some(title.into());
        self
    }

    /// `description`: what the prompt does.
    pub fn description(mut self, description: impl Into<String>) -> Prompt {
        self.description = Some(description.into());
        self
    }

    /// Appends one argument to `arguments`.
    pub fn argument(mut self, argument: PromptArgument) -> Prompt {
        self.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }

    /// `icons`, replaced.
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Prompt {
        self.icons = Some(icons.into_iter().collect());
        self
    }

    /// `_meta`, replaced.
    pub fn meta(mut self, meta: Map<String, Value>) -> Prompt {
        self.meta = Some(meta);
        self
    }
}

/// Builders: `PromptArgument::new(name)` and a method per optional member (pure data).
impl PromptArgument {
    /// An argument with a name, the rest unset (so not required).
    pub fn new(name: impl Into<String>) -> PromptArgument {
        PromptArgument { name: name.into(), title: None, description: None, required: None, extra: Extra::new() }
    }

    /// `title`: the display name.
    pub fn title(mut self, title: impl Into<String>) -> PromptArgument {
        self.title = Some(title.into());
        self
    }

    /// `description`: what it means.
    pub fn description(mut self, description: impl Into<String>) -> PromptArgument {
        self.description = Some(description.into());
        self
    }

    /// `required`: whether it must be given.
    pub fn required(mut self, required: bool) -> PromptArgument {
        self.required = Some(required);
        self
    }
}

/// One message of a prompt: a role and a single content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `prompts/list`: an optional page cursor.
pub type ListPromptsRequestParams = super::PaginatedRequestParams;

/// Result of `prompts/list`: one page of prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// This page.
    pub prompts: Vec<Prompt>,
    /// Cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here (2026-07-28: `resultType`, `ttlMs`, `cacheScope`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// Which prompt.
    pub name: String,
    /// Values for its arguments; absent and `{}` stay apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// 2026-07-28: answers to the input requests of an earlier `input_required` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// 2026-07-28: the opaque state echoed back from an `input_required` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `prompts/get`: the rendered messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here (2026-07-28: `resultType`).
    #[serde(flatten)]
    pub extra: Extra,
}

method!(
    /// `prompts/list`: one page of the server's prompts.
    ListPrompts, "prompts/list", ClientToServer, ListPromptsRequestParams, ListPromptsResult, since V2024_11_05
);
method!(
    /// `prompts/get`: render one prompt with arguments.
    GetPrompt, "prompts/get", ClientToServer, GetPromptRequestParams, GetPromptResult, since V2024_11_05
);
notification!(
    /// `notifications/prompts/list_changed`: the list of prompts changed.
    PromptListChanged, "notifications/prompts/list_changed", ServerToClient, EmptyParams, since V2024_11_05
);

/// Every method this module declares.
pub(crate) const METHODS: &[MethodInfo] = &[
    MethodInfo::request::<ListPrompts>(),
    MethodInfo::request::<GetPrompt>(),
    MethodInfo::notification::<PromptListChanged>(),
];

super::decode::decode_via_value!(ListPromptsResult, GetPromptResult, GetPromptRequestParams, Prompt);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&t).expect("encode"), v);
        t
    }

    #[test]
    fn list_result_with_arguments() {
        let l: ListPromptsResult = rt(json!({"prompts": [{
            "name": "review", "title": "Review", "description": "Review code",
            "arguments": [{"name": "code", "required": true},
                          {"name": "language", "description": "lang", "required": false}],
            "icons": [{"src": "data:image/png;base64,AA"}]
        }]}));
        let args = l.prompts[0].arguments.as_ref().unwrap();
        assert_eq!(args[0].required, Some(true));
        assert_eq!(args[1].required, Some(false));
    }

    #[test]
    fn get_params_absent_and_empty_arguments_stay_apart() {
        let p: GetPromptRequestParams = rt(json!({"name": "simple-prompt"}));
        assert!(p.arguments.is_none());
        let p: GetPromptRequestParams = rt(json!({"name": "args-prompt", "arguments": {}}));
        assert_eq!(p.arguments, Some(BTreeMap::new()));
        let p: GetPromptRequestParams =
            rt(json!({"name": "review", "arguments": {"code": "x = 1", "language": "python"}}));
        assert_eq!(p.arguments.unwrap()["language"], "python");
    }

    #[test]
    fn get_result_2026() {
        let r: GetPromptResult = rt(json!({
            "description": "Review some code",
            "messages": [{"content": {"text": "Please review", "type": "text"}, "role": "user"}],
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
        }));
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.extra["resultType"], "complete");
    }

    #[test]
    fn method_rows() {
        assert_eq!(METHODS.len(), 3);
        assert!(METHODS.iter().all(|m| m.direction != Direction::Both));
        assert!(METHODS.iter().all(|m| m.removed_in.is_none()));
    }
}
