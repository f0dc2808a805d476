//! A tool with an `outputSchema` that answers with `structuredContent`: the server checks the
//! value against the schema before it leaves, and mirrors it into a text block for clients
//! that only read `content`.
//!
//! Run: `cargo run --example structured_output` (MCP on stdin/stdout); call `weather` with
//! `{"city": "Oslo"}`.

use mcpwire::proto::mcp_types::{CallToolResult, Tool};
use mcpwire::server::{arguments, Server};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize)]
struct Query {
    city: String,
}

#[derive(Serialize)]
struct Weather {
    city: String,
    temperature_c: f64,
    conditions: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A full definition through `Tool`'s builder: the schemas written by hand here (the
    // `schema` feature derives them from Rust types instead).
    let tool = Tool::new(
        "weather",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
    .description("Current weather of a city")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "temperature_c": {"type": "number"},
            "conditions": {"type": "string"}
        },
        "required": ["city", "temperature_c", "conditions"]
    }));
    let server = Server::builder()
        .name("structured-output")
        .tool_with(tool, |args, _ctx| async move {
            let query: Query = arguments(args)?;
            let weather = Weather { city: query.city, temperature_c: 21.5, conditions: "sunny".into() };
            // No `content`: the server mirrors the structured value into a text block.
            Ok(CallToolResult { structured_content: Some(serde_json::to_value(weather)?), ..Default::default() })
        })
        .build()?;
    server.serve_stdio().await?;
    Ok(())
}
