//! What a tool handler returns: [`ToolError`] (a tool failure, bad arguments, or a
//! JSON-RPC error), and small helpers to build a [`CallToolResult`] and to decode arguments.
//!
//! Not here: registering tools (the builder in [`super`]) or running them (the dispatch).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::proto::jsonrpc::ErrorObject;
use crate::proto::mcp_types::{CallToolResult, ContentBlock, TextContent};

pub use super::context::Context;

/// The future a tool handler returns, boxed.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<CallToolResult, ToolError>> + Send>>;

/// A tool handler with its argument decoding erased.
pub(crate) type ToolFn = Arc<dyn Fn(Map<String, Value>, Context) -> ToolFuture + Send + Sync>;

/// Why a tool call produced no normal result.
///
/// [`ToolError::Failed`] and [`ToolError::InvalidArguments`] reach the client as a
/// `CallToolResult` with `isError: true` (a tool error the model can read and correct, as the
/// 2025-11-25 spec asks for input validation errors, "Error Handling" under
/// `server/tools`); [`ToolError::Protocol`] becomes a JSON-RPC error response instead.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool ran and failed; the message is sent as the result's text.
    Failed(String),
    /// The arguments did not fit the tool's input.
    InvalidArguments(String),
    /// Answer with this JSON-RPC error instead of a result.
    Protocol(ErrorObject),
}

impl ToolError {
    /// A tool failure with this message.
    pub fn failed(message: impl Into<String>) -> ToolError {
        ToolError::Failed(message.into())
    }

    /// Arguments that do not fit, with this message.
    pub fn invalid_arguments(message: impl Into<String>) -> ToolError {
        ToolError::InvalidArguments(message.into())
    }

    /// The `isError: true` result this error becomes for tool `tool`, or the JSON-RPC error.
    pub(crate) fn into_outcome(self, tool: &str) -> Result<CallToolResult, ErrorObject> {
        match self {
            ToolError::Failed(message) => Ok(error_result(message)),
            ToolError::InvalidArguments(message) => {
                Ok(error_result(format!("Invalid arguments for tool {tool}: {message}")))
            }
            ToolError::Protocol(error) => Err(error),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Failed(m) => write!(f, "tool failed: {m}"),
            ToolError::InvalidArguments(m) => write!(f, "invalid arguments: {m}"),
            ToolError::Protocol(e) => write!(f, "protocol error: {e}"),
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ToolError::Protocol(e) => Some(e),
            ToolError::Failed(_) | ToolError::InvalidArguments(_) => None,
        }
    }
}

/// Arguments that fail to decode are invalid arguments, so `?` works on [`arguments`].
impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        ToolError::InvalidArguments(e.to_string())
    }
}

/// A successful result holding one text block.
pub fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult { content: vec![text_block(text)], ..CallToolResult::default() }
}

/// A tool-error result (`isError: true`) holding one text block.
pub fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult { content: vec![text_block(text)], is_error: Some(true), ..CallToolResult::default() }
}

fn text_block(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent { text: text.into(), ..TextContent::default() })
}

/// Decodes a tool's arguments as `T`.
///
/// # Errors
/// [`ToolError::InvalidArguments`] when they do not fit, naming the JSON pointer of the part
/// that does not (`/items/2/count: invalid type: string "x", expected u32`).
pub fn arguments<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, ToolError> {
    crate::proto::mcp_types::decode_value(Value::Object(args)).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// `x` as a JSON number: an integer when it is one, else a float (NaN and infinities become 0).
pub(crate) fn number(x: f64) -> Number {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Number::from(x as i64)
    } else {
        Number::from_f64(x).unwrap_or_else(|| Number::from(0))
    }
}
