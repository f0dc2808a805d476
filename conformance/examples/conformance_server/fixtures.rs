//! The fixtures of the conformance suite's server scenarios (its reference is
//! `examples/servers/typescript/everything-server.ts` in `modelcontextprotocol/conformance`),
//! built with the public server API only. The tools and the prompts with arguments are typed
//! (`derived_tool`, `derived_prompt_with`): their schemas are derived from Rust types; only
//! `json_schema_2020_12_tool` keeps a hand-written schema, which SEP-1613's scenario checks
//! is listed exactly as written.

use mcpwire::proto::mcp_types::{
    AudioContent, CallToolResult, ContentBlock, EmbeddedResource, ImageContent, Prompt, ResourceContents, Role,
    TextContent, TextResourceContents, Tool,
};
use mcpwire::schemars::{self, JsonSchema};
use mcpwire::server::{
    prefix_matches, prompt, prompt_message, prompt_result, resource, resource_template, text_contents, Server,
    ServerBuilder, ToolError,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// The resource that "changes" every 3 seconds.
pub const WATCHED_URI: &str = "test://watched-resource";

/// A 1x1 red PNG.
pub const TEST_IMAGE_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A minimal WAV file.
pub const TEST_AUDIO_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent { text: text.into(), ..TextContent::default() })
}

fn image() -> ContentBlock {
    ContentBlock::Image(ImageContent {
        data: TEST_IMAGE_BASE64.to_owned(),
        mime_type: "image/png".to_owned(),
        ..ImageContent::default()
    })
}

fn embedded(uri: &str, mime_type: &str, body: impl Into<String>) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource {
        resource: ResourceContents::Text(TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(mime_type.to_owned()),
            text: body.into(),
            ..TextResourceContents::default()
        }),
        annotations: None,
        meta: None,
        extra: Map::new(),
    })
}

fn result(content: Vec<ContentBlock>) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult { content, ..CallToolResult::default() })
}

/// The arguments of a tool that takes none.
#[derive(Deserialize, JsonSchema)]
pub struct NoArguments {}

/// A tool definition with a name, a description and an input schema.
fn tool(name: &str, description: &str, input_schema: Value) -> Tool {
    Tool::new(name, input_schema).description(description)
}

/// SEP-1613: a JSON Schema 2020-12 input schema with `$schema`, `$defs`, composition and
/// conditionals, listed exactly as written.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

fn tools(builder: ServerBuilder) -> ServerBuilder {
    builder
        .derived_tool("test_simple_text", "Tests simple text content response", |NoArguments {}, _| async {
            result(vec![text("This is a simple text response for testing.")])
        })
        .derived_tool("test_image_content", "Tests image content response", |NoArguments {}, _| async {
            result(vec![image()])
        })
        .derived_tool("test_audio_content", "Tests audio content response", |NoArguments {}, _| async {
            result(vec![ContentBlock::Audio(AudioContent {
                data: TEST_AUDIO_BASE64.to_owned(),
                mime_type: "audio/wav".to_owned(),
                ..AudioContent::default()
            })])
        })
        .derived_tool("test_embedded_resource", "Tests embedded resource content response", |NoArguments {}, _| async {
            result(vec![embedded("test://embedded-resource", "text/plain", "This is an embedded resource content.")])
        })
        .derived_tool(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            |NoArguments {}, _| async {
                result(vec![
                    text("Multiple content types test:"),
                    image(),
                    embedded(
                        "test://mixed-content-resource",
                        "application/json",
                        json!({"test": "data", "value": 123}).to_string(),
                    ),
                ])
            },
        )
        .derived_tool("test_error_handling", "Tests error response handling", |NoArguments {}, _| async {
            Err::<CallToolResult, _>(ToolError::failed("This tool intentionally returns an error for testing"))
        })
        .tool_with(
            tool(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
                json_schema_2020_12(),
            ),
            |args: Map<String, Value>, _| async move {
                result(vec![text(format!("JSON Schema 2020-12 tool called with: {}", Value::Object(args)))])
            },
        )
}

fn resources(builder: ServerBuilder) -> ServerBuilder {
    let static_text = mcpwire::proto::mcp_types::Resource {
        title: Some("Static Text Resource".into()),
        description: Some("A static text resource for testing".into()),
        mime_type: Some("text/plain".into()),
        ..resource("test://static-text", "static-text")
    };
    let static_binary = mcpwire::proto::mcp_types::Resource {
        title: Some("Static Binary Resource".into()),
        description: Some("A static binary resource (image) for testing".into()),
        mime_type: Some("image/png".into()),
        ..resource("test://static-binary", "static-binary")
    };
    let watched = mcpwire::proto::mcp_types::Resource {
        title: Some("Watched Resource".into()),
        description: Some("A resource that auto-updates every 3 seconds".into()),
        mime_type: Some("text/plain".into()),
        ..resource(WATCHED_URI, "watched-resource")
    };
    let template = mcpwire::proto::mcp_types::ResourceTemplate {
        title: Some("Resource Template".into()),
        description: Some("A resource template with parameter substitution".into()),
        mime_type: Some("application/json".into()),
        ..resource_template("test://template/{id}/data", "template")
    };
    builder
        .resource_text(static_text, "This is the content of the static text resource.")
        .resource_blob(static_binary, TEST_IMAGE_BASE64)
        .resource_text(watched, "Watched resource content")
        .resource_template(template, |request| async move {
            let id = request.variables.get("id").cloned().unwrap_or_default();
            let body = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(text_contents(request.uri, Some("application/json"), body.to_string()))
        })
        .complete_template_variable("test://template/{id}/data", "id", |request| async move {
            Ok(prefix_matches(&["1", "2", "3", "123"], &request.value))
        })
}

/// The arguments of `test_prompt_with_arguments`.
#[derive(Deserialize, JsonSchema)]
struct PromptArgs {
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
}

/// The argument of `test_prompt_with_embedded_resource`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EmbedArgs {
    /// URI of the resource to embed
    resource_uri: String,
}

fn prompts(builder: ServerBuilder) -> ServerBuilder {
    let simple = mcpwire::proto::mcp_types::Prompt {
        title: Some("Simple Test Prompt".into()),
        ..prompt("test_simple_prompt", "A simple prompt without arguments", vec![])
    };
    let with_image = mcpwire::proto::mcp_types::Prompt {
        title: Some("Prompt With Image".into()),
        ..prompt("test_prompt_with_image", "A prompt that includes image content", vec![])
    };
    builder
        .prompt(simple, |_| async {
            Ok(prompt_result(vec![prompt_message(Role::User, text("This is a simple prompt for testing."))]))
        })
        .derived_prompt_with(
            Prompt::new("test_prompt_with_arguments")
                .title("Prompt With Arguments")
                .description("A prompt with required arguments"),
            |PromptArgs { arg1, arg2 }, _| async move {
                let line = format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'");
                Ok(prompt_result(vec![prompt_message(Role::User, text(line))]))
            },
        )
        .derived_prompt_with(
            Prompt::new("test_prompt_with_embedded_resource")
                .title("Prompt With Embedded Resource")
                .description("A prompt that includes an embedded resource"),
            |EmbedArgs { resource_uri }, _| async move {
                Ok(prompt_result(vec![
                    prompt_message(
                        Role::User,
                        embedded(&resource_uri, "text/plain", "Embedded resource content for testing."),
                    ),
                    prompt_message(Role::User, text("Please process the embedded resource above.")),
                ]))
            },
        )
        .prompt(with_image, |_| async {
            Ok(prompt_result(vec![
                prompt_message(Role::User, image()),
                prompt_message(Role::User, text("Please analyze the image above.")),
            ]))
        })
        .complete_prompt_argument("test_prompt_with_arguments", "arg1", |request| async move {
            Ok(prefix_matches(&["paris", "park", "party", "test", "testing"], &request.value))
        })
}

/// The server with every fixture of this module.
pub fn builder() -> ServerBuilder {
    let builder = Server::builder()
        .name("mcpwire-conformance-server")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions("Fixtures for the MCP conformance suite's server scenarios.");
    prompts(resources(tools(builder)))
}
