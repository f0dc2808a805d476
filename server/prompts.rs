//! Prompts: templates of messages a client can ask for by name with arguments.
//!
//! - `prompts/list`, paginated.
//! - `prompts/get`: an unknown name, or a missing required argument, is -32602 "Invalid
//!   params" (2025-11-25 `server/prompts` "Error Handling") and the handler is not called;
//!   arguments the prompt does not declare are passed on untouched. Messages may hold any
//!   [`ContentBlock`]: text, image, audio, embedded resource, resource link.
//!
//! Not here: completion of prompt arguments ([`super::completion`]).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Map;

use super::{Server, ServerBuilder};
use crate::proto::jsonrpc::{ErrorCode, ErrorObject};
use crate::proto::mcp_types::{
    ContentBlock, GetPromptResult, Prompt, PromptArgument, PromptMessage, RequestMeta, Role,
};

/// The future a prompt handler returns, boxed.
pub type PromptFuture = Pin<Box<dyn Future<Output = Result<GetPromptResult, ErrorObject>> + Send>>;

pub(crate) type PromptFn = Arc<dyn Fn(PromptRequest) -> PromptFuture + Send + Sync>;

/// What a prompt handler is asked for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PromptRequest {
    /// The prompt's name.
    pub name: String,
    /// The arguments the client gave (every required one is there).
    pub arguments: BTreeMap<String, String>,
    /// The request's `_meta`.
    pub meta: Option<RequestMeta>,
    pub(crate) context: Option<super::Context>,
}

impl PartialEq for PromptRequest {
    /// Equal names, arguments and `_meta` (the context is no value).
    fn eq(&self, other: &Self) -> bool {
        (&self.name, &self.arguments, &self.meta) == (&other.name, &other.arguments, &other.meta)
    }
}

impl PromptRequest {
    /// The request's context: who the client is and the requests to it (elicitation,
    /// sampling, roots), which in a 2026-07-28 request become its `inputRequests`.
    pub fn context(&self) -> Option<&super::Context> {
        self.context.as_ref()
    }
}

pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) get: PromptFn,
}

/// A [`Prompt`] with a name, a description and arguments (none when `arguments` is empty).
pub fn prompt(name: impl Into<String>, description: impl Into<String>, arguments: Vec<PromptArgument>) -> Prompt {
    arguments.into_iter().fold(Prompt::new(name).description(description), Prompt::argument)
}

/// A [`PromptArgument`].
pub fn prompt_argument(name: impl Into<String>, description: impl Into<String>, required: bool) -> PromptArgument {
    PromptArgument::new(name).description(description).required(required)
}

/// A [`PromptMessage`] from `role` holding `content`.
pub fn prompt_message(role: Role, content: ContentBlock) -> PromptMessage {
    PromptMessage { role, content, extra: Map::new() }
}

/// A [`GetPromptResult`] with these messages and no description.
pub fn prompt_result(messages: Vec<PromptMessage>) -> GetPromptResult {
    GetPromptResult { description: None, messages, meta: None, extra: Map::new() }
}

fn boxed<F, Fut>(handler: F) -> PromptFn
where
    F: Fn(PromptRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
{
    Arc::new(move |request| Box::pin(handler(request)) as PromptFuture)
}

impl ServerBuilder {
    /// Adds a prompt rendered by `handler`.
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(PromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        self.pending.prompts.push(PromptEntry { prompt, get: boxed(handler) });
        self
    }

    /// Advertises the `prompts` capability even with no prompt at build time.
    pub fn enable_prompts(mut self) -> Self {
        self.pending.features.prompts = true;
        self
    }
}

impl Server {
    /// Adds (or replaces) a prompt while serving, and sends `notifications/prompts/list_changed`.
    pub fn add_prompt<F, Fut>(&self, prompt: Prompt, handler: F)
    where
        F: Fn(PromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        self.insert_prompt(PromptEntry { get: boxed(handler), prompt });
    }

    /// Adds (or replaces) `entry` and sends `notifications/prompts/list_changed`.
    pub(crate) fn insert_prompt(&self, entry: PromptEntry) {
        self.inner.registry.prompts.write().expect("prompts lock").insert(entry.prompt.name.clone(), entry);
        self.inner.registry.broadcast("notifications/prompts/list_changed");
    }

    /// Removes a prompt while serving; sends `list_changed` when it was there.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.inner.registry.prompts.write().expect("prompts lock").remove(name);
        if removed {
            self.inner.registry.broadcast("notifications/prompts/list_changed");
        }
        removed
    }

    /// The prompts, in the order added.
    pub fn prompts(&self) -> Vec<Prompt> {
        self.inner.registry.prompts.read().expect("prompts lock").values().map(|e| e.prompt.clone()).collect()
    }
}

/// Checks the arguments of `prompts/get` against the prompt's declaration.
///
/// # Errors
/// -32602 naming the first missing required argument.
pub(crate) fn check_arguments(prompt: &Prompt, arguments: &BTreeMap<String, String>) -> Result<(), ErrorObject> {
    let declared = prompt.arguments.as_deref().unwrap_or_default();
    let missing: Vec<&str> = declared
        .iter()
        .filter(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ErrorObject::new(
            ErrorCode::INVALID_PARAMS,
            format!("Missing required arguments for prompt {}: {}", prompt.name, missing.join(", ")),
        ))
    }
}
