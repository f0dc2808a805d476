//! The echo server: tools `echo {text}` (answers that text as one text block), `add {a, b}`
//! (answers the sum as text; integers stay integers: `2 + 3` is `5`, `2.5 + 3` is `5.5`) and
//! `greet` (asks the user's name with a form elicitation, then answers `Hello, NAME!`, or
//! `Hello, whoever you are!` when the user declines, `Greeting cancelled.` when they cancel: a
//! server-to-client request in the handshake era, a multi-round-trip request in 2026-07-28).
//!
//! Typed tools: each input schema is derived from its argument type (`derived_tool`), and
//! `greet`'s form from the type of its answer (`Form`).
//!
//! Our counterpart of rmcp's `rmcp-echo-server`: the `echo_server` example serves it over
//! stdio, `mcp-bench` runs it in process, and the tests drive it. Nothing else lives here.

// Shared by the bridge, its examples, the tests and the benches, each using a part of it.
#![allow(dead_code)]

use mcpwire::schemars::{self, JsonSchema};
use mcpwire::server::{text_result, ClientRequestError, Elicited, Form, Server, ServerBuilder, ToolError};
use serde::Deserialize;
use serde_json::{Number, Value};

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to send back unchanged.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: Number,
    b: Number,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(extend("properties" = {}))]
struct NoArgs {}

/// What `greet` asks the user for.
#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
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
        .derived_tool("add", "Return a + b", |AddArgs { a, b }, _ctx| async move {
            Ok(text_result(sum(&a, &b)?.to_string()))
        })
        .derived_tool("echo", "Return the `text` argument as text content", |EchoArgs { text }, _ctx| async move {
            Ok(text_result(text))
        })
        .with_form(|builder, name: Form<Name>| {
            builder.derived_tool(
                "greet",
                "Ask the user for their name (an elicitation), then greet them",
                move |NoArgs {}, ctx| {
                    let form = name.clone();
                    async move {
                        let greeting = match ctx.elicit_form("What is your name?", &form).await {
                            Ok(Elicited::Accept(Name { name })) => format!("Hello, {name}!"),
                            Ok(Elicited::Cancel) => "Greeting cancelled.".to_owned(),
                            // Declined, or an answer that is no name.
                            Ok(Elicited::Decline) | Err(ClientRequestError::InvalidResult(_)) => {
                                "Hello, whoever you are!".to_owned()
                            }
                            Err(e) => return Err(e.into()),
                        };
                        Ok(text_result(greeting))
                    }
                },
            )
        })
}
