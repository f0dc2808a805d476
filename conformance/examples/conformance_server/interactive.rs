//! The interactive fixtures of the official conformance suite (`@modelcontextprotocol/conformance`,
//! server scenarios `tools-call-with-logging`, `tools-call-with-progress`, `tools-call-sampling`,
//! `tools-call-elicitation`, `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`,
//! `server-sse-polling`): tools that log, report progress, and ask the client to sample or
//! elicit while they run.

use std::time::Duration;

use mcpwire::proto::mcp_types::{
    BooleanSchema, CreateMessageRequestParams, ElicitationSchema, LegacyTitledEnumSchema, LoggingLevel, NumberSchema,
    SamplingMessage, StringSchema, TitledEnumOption, TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema,
    UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};
use mcpwire::schemars::{self, JsonSchema};
use mcpwire::server::{text_result, ServerBuilder};
use serde::Deserialize;
use serde_json::Number;

use crate::fixtures::NoArguments;

/// A form with no required field, written with `"required": []` as the suite's own servers do.
fn nothing_required(form: ElicitationSchema) -> ElicitationSchema {
    ElicitationSchema { required: Some(Vec::new()), ..form }
}

/// Three titled options `valueN` named `"{first, second, third} {noun}"`.
fn three_titled(noun: &str) -> [TitledEnumOption; 3] {
    [
        TitledEnumOption::new("value1", format!("First {noun}")),
        TitledEnumOption::new("value2", format!("Second {noun}")),
        TitledEnumOption::new("value3", format!("Third {noun}")),
    ]
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
                let requested = nothing_required(
                    ElicitationSchema::new()
                        .field("name", StringSchema::new().description("User name").default_value("John Doe"))
                        .field("age", NumberSchema::integer().description("User age").default_value(30))
                        .field(
                            "score",
                            NumberSchema::number()
                                .description("User score")
                                .default_value(Number::from_f64(95.5).expect("a finite number")),
                        )
                        .field(
                            "status",
                            UntitledSingleSelectEnumSchema::new(["active", "inactive", "pending"])
                                .description("User status")
                                .default_value("active"),
                        )
                        .field("verified", BooleanSchema::new().description("Verification status").default_value(true)),
                );
                let result = ctx.elicit("Please review and update the form fields with defaults", requested).await?;
                Ok(completed(result))
            },
        )
        .derived_tool(
            "test_elicitation_sep1330_enums",
            "Elicitation with every enum variant (SEP-1330)",
            |NoArguments {}, ctx| async move {
                let options = ["option1", "option2", "option3"];
                let requested = nothing_required(
                    ElicitationSchema::new()
                        .field(
                            "untitledSingle",
                            UntitledSingleSelectEnumSchema::new(options).description("Untitled single-select"),
                        )
                        .field(
                            "titledSingle",
                            TitledSingleSelectEnumSchema::new(three_titled("Option"))
                                .description("Titled single-select"),
                        )
                        .field(
                            "legacyEnum",
                            LegacyTitledEnumSchema::new(
                                ["opt1", "opt2", "opt3"],
                                ["Option One", "Option Two", "Option Three"],
                            )
                            .description("Legacy titled enum"),
                        )
                        .field(
                            "untitledMulti",
                            UntitledMultiSelectEnumSchema::new(options).description("Untitled multi-select"),
                        )
                        .field(
                            "titledMulti",
                            TitledMultiSelectEnumSchema::new(three_titled("Choice")).description("Titled multi-select"),
                        ),
                );
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
