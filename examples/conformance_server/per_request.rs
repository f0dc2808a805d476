//! The fixtures of the suite's 2026-07-28 scenarios (`server-stateless`,
//! `http-custom-header-server-validation`): a tool that needs a capability the client may not
//! have declared, one that elicits, one that logs (and so must stay silent without `logLevel`),
//! tools that change the tool and prompt lists (for `subscriptions/listen`), and a tool whose
//! argument is mirrored into an `Mcp-Param-Region` header (`x-mcp-header`).

use std::sync::OnceLock;

use mcpwire::proto::mcp_types::{
    ContentBlock, CreateMessageRequestParams, ElicitationSchema, LoggingLevel, Role, TextContent, Tool,
};
use mcpwire::server::{prompt, prompt_message, prompt_result, text_result, Server, ServerBuilder, ToolError};
use serde_json::{json, Map, Value};

/// The server, for the tools that change its lists (set once it is built).
pub static SERVER: OnceLock<Server> = OnceLock::new();

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

fn server() -> Result<&'static Server, ToolError> {
    SERVER.get().ok_or_else(|| ToolError::failed("the server is not built yet"))
}

/// Adds the 2026-07-28 fixtures to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(
            "test_missing_capability",
            "Asks the client's model for a message: needs the sampling capability",
            no_arguments(),
            |_args, ctx| async move {
                let params: CreateMessageRequestParams = serde_json::from_value(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}],
                    "maxTokens": 10
                }))
                .expect("valid sampling params");
                ctx.create_message(params).await?;
                Ok(text_result("sampled"))
            },
        )
        .tool("test_streaming_elicitation", "Asks the user for a name", no_arguments(), |_args, ctx| async move {
            let requested: ElicitationSchema = serde_json::from_value(json!({
                "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]
            }))
            .expect("a valid elicitation schema");
            let result = ctx.elicit("What is your name?", requested).await?;
            Ok(text_result(format!("action={}", result.action.as_str())))
        })
        .tool("test_logging_tool", "Logs three messages at info", no_arguments(), |_args, ctx| async move {
            for text in ["one", "two", "three"] {
                let _ = ctx.log(LoggingLevel::Info, None, text).await;
            }
            Ok(text_result("logged"))
        })
        .tool("test_trigger_tool_change", "Adds a tool (the tool list changes)", no_arguments(), |_args, _ctx| async {
            let tool = Tool {
                name: "test_dynamic_tool".to_owned(),
                description: Some("Added by test_trigger_tool_change".to_owned()),
                title: None,
                input_schema: no_arguments(),
                output_schema: None,
                annotations: None,
                icons: None,
                execution: None,
                meta: None,
                extra: Map::new(),
            };
            server()?
                .add_tool(tool, |_args, _ctx| async { Ok(text_result("dynamic")) })
                .map_err(|e| ToolError::failed(e.to_string()))?;
            Ok(text_result("tool list changed"))
        })
        .tool(
            "test_trigger_prompt_change",
            "Adds a prompt (the prompt list changes)",
            no_arguments(),
            |_args, _ctx| async {
                let added = prompt("test_dynamic_prompt", "Added by test_trigger_prompt_change", vec![]);
                server()?.add_prompt(added, |_request| async {
                    let text = ContentBlock::Text(TextContent { text: "dynamic".to_owned(), ..TextContent::default() });
                    Ok(prompt_result(vec![prompt_message(Role::User, text)]))
                });
                Ok(text_result("prompt list changed"))
            },
        )
        .tool(
            "test_header_param",
            "Echoes its region, which travels in the Mcp-Param-Region header too",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "description": "A region", "x-mcp-header": "Region"}
            }, "required": ["region"]}),
            |args: Map<String, Value>, _ctx| async move {
                let region = args.get("region").and_then(Value::as_str).unwrap_or_default().to_owned();
                Ok(text_result(format!("region={region}")))
            },
        )
}
