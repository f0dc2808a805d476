//! The echo server: tools `echo {text}` (answers that text as one text block), `add {a, b}`
//! (answers the sum as text; integers stay integers: `2 + 3` is `5`, `2.5 + 3` is `5.5`) and
//! `greet` (asks the user's name with a form elicitation, then answers `Hello, NAME!`: a
//! server-to-client request in the handshake era, a multi-round-trip request in 2026-07-28).
//!
//! Our counterpart of rmcp's `rmcp-echo-server`: the `echo_server` example serves it over
//! stdio, `mcp-bench` runs it in process, and the tests drive it. Nothing else lives here.

// Shared by the bridge, its examples, the tests and the benches, each using a part of it.
#![allow(dead_code)]

use mcpwire::proto::mcp_types::ElicitAction;
use mcpwire::server::{arguments, text_result, Server, ServerBuilder, ToolError};
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

/// The echo server: tools `echo {text}`, `add {a, b}` and `greet`.
pub fn echo_server() -> Server {
    echo_builder().build().expect("the echo server's tools are valid")
}

/// The echo server's builder, for a host that sets more (a `requestState` secret shared by
/// several processes, limits) before building it.
pub fn echo_builder() -> ServerBuilder {
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
        .tool(
            "greet",
            "Ask the user for their name (an elicitation), then greet them",
            json!({"type": "object", "properties": {}}),
            |_args, ctx| async move {
                let form = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
                let form = serde_json::from_value(form).expect("a valid elicitation form");
                let answer = ctx.elicit("What is your name?", form).await?;
                let name = answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("name"))
                    .and_then(|v| serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)));
                Ok(text_result(match name {
                    Some(name) if answer.action == ElicitAction::Accept => format!("Hello, {name}!"),
                    _ => "Hello, whoever you are!".to_owned(),
                }))
            },
        )
}
