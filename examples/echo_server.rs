//! `echo_server`: a small MCP server over our own stdin/stdout, with two tools — `echo {text}`
//! answers that text as one text block, `add {a, b}` answers the sum as text (integers stay
//! integers: `2 + 3` is `5`, `2.5 + 3` is `5.5`). Our counterpart of rmcp's `rmcp-echo-server`,
//! used by the interop tests and the benches.
//!
//! It writes nothing but frames to stdout and exits when stdin ends, after answering the calls
//! in flight. Not here: anything but these two tools.

use mcpwire::server::{arguments, text_result, Server, ToolError};
use serde::Deserialize;
use serde_json::{json, Number, Value};

#[derive(Deserialize)]
struct EchoArgs {
    text: String,
}

#[derive(Deserialize)]
struct AddArgs {
    a: Number,
    b: Number,
}

/// `a + b`, exact for integers (falling back to floats past `i64`/`u64`).
fn sum(a: &Number, b: &Number) -> Result<Value, ToolError> {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        if let Some(s) = a.checked_add(b) {
            return Ok(s.into());
        }
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        if let Some(s) = a.checked_add(b) {
            return Ok(s.into());
        }
    }
    let (a, b) = (a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN));
    Number::from_f64(a + b).map(Value::Number).ok_or_else(|| ToolError::failed("the sum is not a finite number"))
}

fn server() -> Result<Server, mcpwire::server::ServerError> {
    Server::builder()
        .name("mcpwire-echo-server")
        .version(env!("CARGO_PKG_VERSION"))
        .tool(
            "add",
            "Return a + b",
            json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            }),
            |args, _ctx| async move {
                let AddArgs { a, b } = arguments(args)?;
                Ok(text_result(sum(&a, &b)?.to_string()))
            },
        )
        .tool(
            "echo",
            "Return the `text` argument as text content",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "Text to send back unchanged."}},
                "required": ["text"]
            }),
            |args, _ctx| async move {
                let EchoArgs { text } = arguments(args)?;
                Ok(text_result(text))
            },
        )
        .build()
}

#[tokio::main]
async fn main() {
    let result = match server() {
        Ok(server) => server.serve_stdio().await,
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        eprintln!("echo_server: {e}");
        std::process::exit(1);
    }
}
