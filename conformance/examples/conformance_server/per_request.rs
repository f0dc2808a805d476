//! The fixtures of the suite's 2026-07-28 scenarios (`server-stateless`,
//! `http-custom-header-server-validation`): a tool that needs a capability the client may not
//! have declared, one that elicits, one that logs (and so must stay silent without `logLevel`),
//! tools that change the tool and prompt lists (for `subscriptions/listen`), and a tool whose
//! argument is mirrored into an `Mcp-Param-Region` header (`x-mcp-header`); and the
//! `input-required-result-*` fixtures: tools (and a prompt) that ask the client for input with
//! the ordinary `Context` calls, which a 2026-07-28 request turns into `InputRequiredResult`s.

use std::sync::OnceLock;

use mcpwire::proto::mcp_types::{
    BooleanSchema, CallToolResult, ContentBlock, CreateMessageRequestParams, ElicitationSchema, LoggingLevel,
    PrimitiveSchemaDefinition, Role, SamplingMessage, StringSchema, TaskSupport, TextContent, Tool,
};
use mcpwire::schemars::{self, JsonSchema};
use mcpwire::server::{prompt, prompt_message, prompt_result, text_result, Server, ServerBuilder, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::fixtures::NoArguments;

/// The server, for the tools that change its lists (set once it is built).
pub static SERVER: OnceLock<Server> = OnceLock::new();

/// The input schema of the tool added while serving, the one untyped tool here.
fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

/// `greet`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct GreetArguments {
    name: Option<String>,
}

/// `slow_compute`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct ComputeArguments {
    seconds: Option<f64>,
}

/// `test_header_param`'s arguments: the region travels in the `Mcp-Param-Region` header too.
#[derive(Deserialize, JsonSchema)]
struct RegionArguments {
    /// A region
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

fn server() -> Result<&'static Server, ToolError> {
    SERVER.get().ok_or_else(|| ToolError::failed("the server is not built yet"))
}

fn sampling(text: &str, max_tokens: u32) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text(text)], max_tokens)
}

fn form(property: &str, field: impl Into<PrimitiveSchemaDefinition>) -> ElicitationSchema {
    ElicitationSchema::new().required_field(property, field)
}

fn elicited(result: &mcpwire::proto::mcp_types::ElicitResult, field: &str) -> String {
    let content = result.content.as_ref().and_then(|c| serde_json::to_value(c).ok()).unwrap_or_default();
    match &content[field] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Adds the MRTR fixtures (`input-required-result-*` scenarios).
fn register_input_required(builder: ServerBuilder) -> ServerBuilder {
    builder
        .derived_tool(
            "test_input_required_result_elicitation",
            "Asks for the user's name",
            |NoArguments {}, ctx| async move {
                let result = ctx
                    .with_input_key("user_name")
                    .elicit("What is your name?", form("name", StringSchema::new()))
                    .await?;
                Ok(text_result(format!("Hello, {}!", elicited(&result, "name"))))
            },
        )
        .derived_tool(
            "test_input_required_result_sampling",
            "Asks the model a question",
            |NoArguments {}, ctx| async move {
                let result = ctx
                    .with_input_key("capital_question")
                    .create_message(sampling("What is the capital of France?", 100))
                    .await?;
                Ok(text_result(format!("LLM said: {}", result.text())))
            },
        )
        .derived_tool(
            "test_input_required_result_list_roots",
            "Lists the client's roots",
            |NoArguments {}, ctx| async move {
                let roots = ctx.with_input_key("client_roots").list_roots().await?;
                let uris: Vec<String> = roots.into_iter().map(|r| r.uri).collect();
                Ok(text_result(format!("Roots: {}", uris.join(", "))))
            },
        )
        .derived_tool(
            "test_input_required_result_request_state",
            "Asks for a confirmation",
            |NoArguments {}, ctx| async move {
                let result =
                    ctx.with_input_key("confirm").elicit("Please confirm", form("ok", BooleanSchema::new())).await?;
                // The framework opened and checked the sealed requestState before this run.
                Ok(text_result(format!("state-ok: confirmed={}", elicited(&result, "ok"))))
            },
        )
        .derived_tool(
            "test_input_required_result_multiple_inputs",
            "Asks for three things at once",
            |NoArguments {}, ctx| async move {
                let (name, greeting, roots) = (
                    ctx.with_input_key("user_name"),
                    ctx.with_input_key("greeting"),
                    ctx.with_input_key("client_roots"),
                );
                let (name, greeting, roots) = tokio::join!(
                    name.elicit("What is your name?", form("name", StringSchema::new())),
                    greeting.create_message(sampling("Generate a greeting", 50)),
                    roots.list_roots(),
                );
                let (name, _greeting, roots) = (name?, greeting?, roots?);
                Ok(text_result(format!("name={}, roots={}", elicited(&name, "name"), roots.len())))
            },
        )
        .derived_tool(
            "test_input_required_result_multi_round",
            "Asks two questions, one after the other",
            |NoArguments {}, ctx| async move {
                let name = ctx
                    .with_input_key("step1")
                    .elicit("Step 1: What is your name?", form("name", StringSchema::new()))
                    .await?;
                let color = ctx
                    .with_input_key("step2")
                    .elicit("Step 2: What is your favorite color?", form("color", StringSchema::new()))
                    .await?;
                Ok(text_result(format!("{} likes {}", elicited(&name, "name"), elicited(&color, "color"))))
            },
        )
        .derived_tool(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation",
            |NoArguments {}, ctx| async move {
                let result =
                    ctx.with_input_key("confirm").elicit("Please confirm", form("ok", BooleanSchema::new())).await?;
                Ok(text_result(format!("confirmed={}", elicited(&result, "ok"))))
            },
        )
        .derived_tool(
            "test_input_required_result_capabilities",
            "Asks only for what the client can give",
            |NoArguments {}, ctx| async move {
                let caps = ctx.client_capabilities().unwrap_or_default();
                let (sample, elicit) = (ctx.with_input_key("sampling"), ctx.with_input_key("elicitation"));
                let sampled = async {
                    match caps.sampling {
                        Some(_) => sample.create_message(sampling("Say hi", 10)).await.map(|_| true),
                        None => Ok(false),
                    }
                };
                let asked = async {
                    match caps.elicitation {
                        Some(_) => elicit.elicit("Your name?", form("name", StringSchema::new())).await.map(|_| true),
                        None => Ok(false),
                    }
                };
                let (sampled, asked) = tokio::join!(sampled, asked);
                Ok(text_result(format!("sampled={}, elicited={}", sampled?, asked?)))
            },
        )
        .prompt(
            prompt("test_input_required_result_prompt", "A prompt that needs context from the user", vec![]),
            |request| async move {
                let ctx = request.context().cloned().ok_or_else(|| {
                    mcpwire::proto::jsonrpc::ErrorObject::new(
                        mcpwire::proto::jsonrpc::ErrorCode::INTERNAL_ERROR,
                        "no context",
                    )
                })?;
                let result = ctx
                    .with_input_key("user_context")
                    .elicit("What context should the prompt use?", form("context", StringSchema::new()))
                    .await
                    .map_err(|e| {
                        mcpwire::proto::jsonrpc::ErrorObject::new(
                            mcpwire::proto::jsonrpc::ErrorCode::INTERNAL_ERROR,
                            e.to_string(),
                        )
                    })?;
                let text = ContentBlock::Text(TextContent {
                    text: format!("Use this context: {}", elicited(&result, "context")),
                    ..TextContent::default()
                });
                Ok(prompt_result(vec![prompt_message(Role::User, text)]))
            },
        )
}

/// A typed tool's definition that may (`optional`) or must (`required`) run as a task (its
/// input schema is derived when it is added).
fn task_tool(name: &str, description: &str, support: &str) -> Tool {
    Tool::new(name, json!({})).description(description).task_support(TaskSupport::from(support.to_owned()))
}

/// Adds the fixtures of the tasks extension (`tasks-*` scenarios, SEP-2663).
fn register_tasks(builder: ServerBuilder) -> ServerBuilder {
    builder
        .derived_tool("greet", "Greets by name (never a task)", |GreetArguments { name }, _ctx| async move {
            Ok(text_result(format!("Hello, {}!", name.as_deref().unwrap_or("world"))))
        })
        .derived_tool_with(
            task_tool("slow_compute", "Sleeps `seconds`, then answers", "optional"),
            |ComputeArguments { seconds }, _ctx| async move {
                let seconds = seconds.unwrap_or(1.0).clamp(0.0, 60.0);
                tokio::time::sleep(std::time::Duration::from_secs_f64(seconds)).await;
                Ok(text_result(format!("computed after {seconds} s")))
            },
        )
        .derived_tool_with(
            task_tool("failing_job", "Fails as a tool after about a second", "required"),
            |NoArguments {}, _ctx| async {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                Err::<CallToolResult, _>(ToolError::failed("the job failed"))
            },
        )
        .derived_tool_with(
            task_tool("protocol_error_job", "Panics: a protocol error", "optional"),
            |NoArguments {}, _ctx| async {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                if SERVER.get().is_some() {
                    panic!("protocol_error_job always fails");
                }
                Ok(text_result("unreachable"))
            },
        )
        .derived_tool_with(
            task_tool("confirm_delete", "Asks for a confirmation, then deletes", "optional"),
            |NoArguments {}, ctx| async move {
                ctx.run_as_task().await;
                let result = ctx.elicit("Delete the file?", form("confirm", BooleanSchema::new())).await?;
                Ok(text_result(format!("delete: {}", result.action.as_str())))
            },
        )
        .derived_tool_with(
            task_tool("multi_input", "Asks two questions at once", "optional"),
            |NoArguments {}, ctx| async move {
                ctx.run_as_task().await;
                let (a, b) = tokio::join!(
                    ctx.elicit("First?", form("first", StringSchema::new())),
                    ctx.elicit("Second?", form("second", StringSchema::new()))
                );
                Ok(text_result(format!("{} / {}", elicited(&a?, "first"), elicited(&b?, "second"))))
            },
        )
}

/// SEP-2663's composition: input gathered by MRTR first, then the call becomes a task.
fn register_composition(builder: ServerBuilder) -> ServerBuilder {
    builder.derived_tool_with(
        task_tool("test_tool_with_task", "Asks for a name, then greets as a task", "required"),
        |NoArguments {}, ctx| async move {
            let name =
                ctx.with_input_key("user_name").elicit("What is your name?", form("name", StringSchema::new())).await?;
            ctx.run_as_task().await;
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            Ok(text_result(format!("Hello, {}!", elicited(&name, "name"))))
        },
    )
}

/// Adds the 2026-07-28 fixtures to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    register_composition(register_tasks(register_input_required(builder)))
        .derived_tool(
            "test_missing_capability",
            "Asks the client's model for a message: needs the sampling capability",
            |NoArguments {}, ctx| async move {
                ctx.create_message(sampling("hello", 10)).await?;
                Ok(text_result("sampled"))
            },
        )
        .derived_tool("test_streaming_elicitation", "Asks the user for a name", |NoArguments {}, ctx| async move {
            let result = ctx.elicit("What is your name?", form("name", StringSchema::new())).await?;
            Ok(text_result(format!("action={}", result.action.as_str())))
        })
        .derived_tool("test_logging_tool", "Logs three messages at info", |NoArguments {}, ctx| async move {
            for text in ["one", "two", "three"] {
                let _ = ctx.log(LoggingLevel::Info, None, text).await;
            }
            Ok(text_result("logged"))
        })
        .derived_tool("test_trigger_tool_change", "Adds a tool (the tool list changes)", |NoArguments {}, _ctx| async {
            let tool = Tool::new("test_dynamic_tool", no_arguments()).description("Added by test_trigger_tool_change");
            server()?
                .add_tool(tool, |_args, _ctx| async { Ok(text_result("dynamic")) })
                .map_err(|e| ToolError::failed(e.to_string()))?;
            Ok(text_result("tool list changed"))
        })
        .derived_tool(
            "test_trigger_prompt_change",
            "Adds a prompt (the prompt list changes)",
            |NoArguments {}, _ctx| async {
                let added = prompt("test_dynamic_prompt", "Added by test_trigger_prompt_change", vec![]);
                server()?.add_prompt(added, |_request| async {
                    let text = ContentBlock::Text(TextContent { text: "dynamic".to_owned(), ..TextContent::default() });
                    Ok(prompt_result(vec![prompt_message(Role::User, text)]))
                });
                Ok(text_result("prompt list changed"))
            },
        )
        .derived_tool(
            "test_header_param",
            "Echoes its region, which travels in the Mcp-Param-Region header too",
            |RegionArguments { region }, _ctx| async move { Ok(text_result(format!("region={region}"))) },
        )
}
