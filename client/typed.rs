//! Typed calls: a tool called with arguments of any `Serialize` type, its `structuredContent`
//! checked against the tool's `outputSchema` and decoded into a Rust type; `prompts/get` with
//! its arguments from a type.
//!
//! The output schema is the one this client last listed: each `tools/list` it makes remembers
//! every tool's `outputSchema` (compiled on the first typed call of that tool, with
//! [`crate::proto::validate`]), and `notifications/tools/list_changed` forgets them. A tool this
//! client has not listed is not checked (2025-11-25 `server/tools`: clients SHOULD validate
//! structured results against the output schema "if provided"); its value is still decoded into
//! the type, which names the path of what does not fit.
//!
//! Not here: the untyped calls (`call_tool` …), typed elicitation answers.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{CallOptions, Client, ClientError};
use crate::proto::mcp_types::{CallToolResult, GetPromptResult, StructuredError, Tool};
use crate::proto::validate::{InvalidSchema, Validator};
use crate::transport::Transport;

/// A tool's `outputSchema` as last listed, compiled when first needed.
pub(super) struct KnownOutput {
    schema: Value,
    compiled: OnceLock<Result<Validator, InvalidSchema>>,
}

impl KnownOutput {
    /// What each listed tool declares, by name (tools without an output schema included, so
    /// that a tool which lost its schema is not checked against the old one).
    pub(super) fn of(tools: &[Tool]) -> impl Iterator<Item = (String, Option<Arc<KnownOutput>>)> + '_ {
        tools.iter().map(|tool| {
            let known = tool
                .output_schema
                .as_ref()
                .map(|schema| Arc::new(KnownOutput { schema: schema.clone(), compiled: OnceLock::new() }));
            (tool.name.clone(), known)
        })
    }

    fn validator(&self) -> Result<&Validator, StructuredError> {
        self.compiled
            .get_or_init(|| Validator::new(&self.schema))
            .as_ref()
            .map_err(|e| StructuredError::Schema(e.clone()))
    }
}

/// `arguments` as a tool's (or a prompt's) arguments: an object, or none for a value that
/// serializes as `null` (`()`, `None`).
fn object<A: Serialize + ?Sized>(tool: &str, arguments: &A) -> Result<Option<Map<String, Value>>, ClientError> {
    let refused = |reason: String| ClientError::Arguments { tool: tool.to_owned(), reason };
    match serde_json::to_value(arguments).map_err(|e| refused(e.to_string()))? {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(None),
        other => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            };
            Err(refused(format!("they serialize as {kind}")))
        }
    }
}

impl<T: Transport> Client<T> {
    /// Calls tool `name` with `arguments` of any type that serializes as a JSON object (a
    /// struct, a map; `()` for none), as [`Client::call_tool`] does with the default
    /// [`CallOptions`].
    ///
    /// # Errors
    /// [`ClientError::Arguments`] (nothing sent) when they serialize as something else;
    /// otherwise as [`Client::call_tool`].
    pub async fn call_tool_with_args<A: Serialize + ?Sized>(
        &self,
        name: impl Into<String>,
        arguments: &A,
    ) -> Result<CallToolResult, ClientError> {
        let name = name.into();
        let arguments = object(&name, arguments)?;
        self.call_tool(name, arguments, CallOptions::default()).await
    }

    /// Calls tool `name` with `arguments` (as [`call_tool_with_args`](Self::call_tool_with_args))
    /// and decodes its `structuredContent` as an `R`, after checking it against the tool's
    /// `outputSchema` when this client listed one (see the module docs).
    ///
    /// # Errors
    /// [`ClientError::Structured`] when the tool failed (`isError: true`, with its text), sent
    /// no `structuredContent`, sent one that breaks its output schema (the path of each
    /// violation) or one that is not an `R` (the path of what does not fit); otherwise as
    /// [`call_tool_with_args`](Self::call_tool_with_args).
    pub async fn call_tool_typed<R: DeserializeOwned, A: Serialize + ?Sized>(
        &self,
        name: impl Into<String>,
        arguments: &A,
    ) -> Result<R, ClientError> {
        let name = name.into();
        let result = self.call_tool_with_args(name.as_str(), arguments).await?;
        let known = self.inner.cache.lock().expect("never poisoned").outputs.get(&name).cloned().flatten();
        let structured = |error| ClientError::Structured { tool: name.clone(), error };
        let validator = match &known {
            Some(known) if result.is_error != Some(true) => Some(known.validator().map_err(structured)?),
            _ => None,
        };
        result.into_structured(validator).map_err(structured)
    }

    /// The `outputSchema` of tool `name` as this client last listed it, if it had one.
    pub fn output_schema(&self, name: &str) -> Option<Value> {
        let cache = self.inner.cache.lock().expect("never poisoned");
        cache.outputs.get(name).cloned().flatten().map(|known| known.schema.clone())
    }

    /// `prompts/get` with the arguments taken from a type that serializes as a JSON object:
    /// each member a prompt argument, strings as they are, other values as their JSON text,
    /// `null` members left out (an `Option` that is `None`).
    ///
    /// # Errors
    /// [`ClientError::Arguments`] (nothing sent) when they serialize as no object; otherwise as
    /// [`Client::get_prompt`].
    pub async fn get_prompt_with<A: Serialize + ?Sized>(
        &self,
        name: impl Into<String>,
        arguments: &A,
    ) -> Result<GetPromptResult, ClientError> {
        let name = name.into();
        let arguments = object(&name, arguments)?.map(|map| {
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| match v {
                    Value::String(s) => (k, s),
                    other => (k, other.to_string()),
                })
                .collect::<BTreeMap<String, String>>()
        });
        self.get_prompt(name, arguments).await
    }
}
