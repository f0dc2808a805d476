//! A server with typed-argument tools over stdio: `add` and `greet`, whose arguments are
//! decoded into Rust structs before the handler runs (arguments that do not fit are a tool
//! error and the handler is not called).
//!
//! Run: `cargo run --example server_tools` speaks MCP on stdin/stdout; drive it with
//! `cargo run --example stdio_client -- target/debug/examples/server_tools add '{"a":2,"b":40}'`.

use mcpwire::server::{text_result, Server};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Deserialize)]
struct Greet {
    name: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder()
        .name("server-tools")
        .version("0.1.0")
        .typed_tool(
            "add",
            "Adds two integers",
            json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }),
            |args: Add, _ctx| async move { Ok(text_result((args.a + args.b).to_string())) },
        )
        .typed_tool(
            "greet",
            "Greets someone by name",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            |args: Greet, _ctx| async move { Ok(text_result(format!("Hello, {}!", args.name))) },
        )
        .build()?;
    server.serve_stdio().await?;
    Ok(())
}
