//! Elicitation and sampling requested from inside a tool: `plan_trip` asks the user for the
//! number of travellers (`elicitation/create`, form mode), then asks the client's model for a
//! one-line plan (`sampling/createMessage`). Both fail cleanly when the client did not declare
//! the capability.
//!
//! Run: `cargo run --example elicitation` (MCP on stdin/stdout), with a client that answers
//! elicitation and sampling; call `plan_trip` with `{"city": "Lisbon"}`.

use mcpwire::proto::mcp_types::{
    CreateMessageRequestParams, ElicitAction, ElicitValue, ElicitationSchema, NumberSchema, SamplingMessage,
};
use mcpwire::server::{error_result, text_result, Server, ToolError};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Trip {
    city: String,
}

fn failed(e: impl std::fmt::Display) -> ToolError {
    ToolError::failed(e.to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let server = Server::builder()
        .name("elicitation")
        .typed_tool("plan_trip", "Plans a trip with the user and the model", schema, |trip: Trip, ctx| async move {
            // With feature `schema`, `server::Form` derives the form from a Rust type instead.
            let form = ElicitationSchema::new().required_field("travellers", NumberSchema::integer().minimum(1));
            let answer = ctx.elicit(format!("How many people travel to {}?", trip.city), form).await.map_err(failed)?;
            let travellers = match (answer.action, answer.content.unwrap_or_default().remove("travellers")) {
                (ElicitAction::Accept, Some(ElicitValue::Number(n))) => n.to_string(),
                _ => return Ok(error_result("the user did not say")),
            };
            let ask = format!("Plan a day in {} for {travellers} people, in one line.", trip.city);
            let request = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(ask)], 100);
            let reply = ctx.create_message(request).await.map_err(failed)?;
            let plan = reply.text();
            Ok(text_result(format!("{travellers} travellers: {plan} (model {})", reply.model)))
        })
        .build()?;
    server.serve_stdio().await?;
    Ok(())
}
