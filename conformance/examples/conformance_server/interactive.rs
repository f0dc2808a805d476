//! The interactive fixtures of the official conformance suite (`@modelcontextprotocol/conformance`,
//! server scenarios `tools-call-with-logging`, `tools-call-with-progress`, `tools-call-sampling`,
//! `tools-call-elicitation`, `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`,
//! `server-sse-polling`): tools that log, report progress, and ask the client to sample or
//! elicit while they run.

use std::time::Duration;

use mcpwire::proto::mcp_types::{
    CreateMessageRequestParams, ElicitationSchema, LoggingLevel, SamplingMessage, StringSchema,
};
use mcpwire::schemars::{self, JsonSchema};
use mcpwire::server::{text_result, ServerBuilder};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::fixtures::NoArguments;

/// The legacy and titled enum shapes of SEP-1330 (`enumNames`, `anyOf` items) as the suite
/// writes them: the builder makes the shapes the 2025-11-25 schema names, not these.
fn schema(value: Value) -> ElicitationSchema {
    serde_json::from_value(value).expect("a valid elicitation schema")
}

/// `test_sampling`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct SamplingArguments {
    /// The prompt to send to the LLM
    prompt: String,
}

/// `test_elicitation`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct ElicitationArguments {
    /// The message to show the user
    message: String,
}

/// Adds the interactive fixtures to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .derived_tool(
            "test_tool_with_logging",
            "Sends three info log messages while it runs",
            |NoArguments {}, ctx| async move {
                let nap = Duration::from_millis(50);
                let _ = ctx.log(LoggingLevel::Info, None, "Tool execution started").await;
                tokio::time::sleep(nap).await;
                let _ = ctx.log(LoggingLevel::Info, None, "Tool processing data").await;
                tokio::time::sleep(nap).await;
                let _ = ctx.log(LoggingLevel::Info, None, "Tool execution completed").await;
                Ok(text_result("Tool with logging executed successfully"))
            },
        )
        .derived_tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100 when asked for progress",
            |NoArguments {}, ctx| async move {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let _ = ctx.progress(step, Some(100.0), None).await;
                }
                Ok(text_result("Tool with progress executed successfully"))
            },
        )
        .derived_tool(
            "test_sampling",
            "Asks the client's model to answer a prompt",
            |SamplingArguments { prompt }, ctx| async move {
                let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
                let result = ctx.create_message(params).await?;
                Ok(text_result(format!("LLM response: {}", result.text())))
            },
        )
        .derived_tool(
            "test_elicitation",
            "Asks the user for a username and an email address",
            |ElicitationArguments { message }, ctx| async move {
                let requested = ElicitationSchema::new()
                    .required_field("username", StringSchema::new().description("User's response"))
                    .required_field("email", StringSchema::new().description("User's email address"));
                let result = ctx.elicit(message, requested).await?;
                let content = serde_json::to_string(&result.content.unwrap_or_default()).unwrap_or_default();
                Ok(text_result(format!("User response: action={}, content={content}", result.action.as_str())))
            },
        )
        .derived_tool(
            "test_elicitation_sep1034_defaults",
            "Elicitation with a default for every primitive type (SEP-1034)",
            |NoArguments {}, ctx| async move {
                let requested = schema(json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "User name", "default": "John Doe"},
                        "age": {"type": "integer", "description": "User age", "default": 30},
                        "score": {"type": "number", "description": "User score", "default": 95.5},
                        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "description": "Verification status", "default": true}
                    },
                    "required": []
                }));
                let result = ctx.elicit("Please review and update the form fields with defaults", requested).await?;
                Ok(completed(result))
            },
        )
        .derived_tool(
            "test_elicitation_sep1330_enums",
            "Elicitation with every enum variant (SEP-1330)",
            |NoArguments {}, ctx| async move {
                let requested = schema(json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "description": "Untitled single-select", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "description": "Titled single-select", "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}
                        ]},
                        "legacyEnum": {"type": "string", "description": "Legacy titled enum", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "description": "Untitled multi-select", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "description": "Titled multi-select", "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}
                        ]}}
                    },
                    "required": []
                }));
                let result = ctx.elicit("Please select options from the enum fields", requested).await?;
                Ok(completed(result))
            },
        )
        .derived_tool(
            "test_reconnection",
            "Takes a moment, so that a client may lose and resume its stream (SEP-1699)",
            |NoArguments {}, _ctx| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(text_result("Reconnection test completed successfully"))
            },
        )
}

fn completed(result: mcpwire::proto::mcp_types::ElicitResult) -> mcpwire::proto::mcp_types::CallToolResult {
    let content = serde_json::to_string(&result.content.unwrap_or_default()).unwrap_or_default();
    text_result(format!("Elicitation completed: action={}, content={content}", result.action.as_str()))
}
