//! Typed tools (feature `schema`): the arguments and the result are Rust types, and the tool's
//! `inputSchema` and `outputSchema` are derived from them (JSON Schema 2020-12, doc comments as
//! descriptions, `Option` fields not required). Arguments that do not fit are a tool error
//! naming the JSON path; a `Json` result fills `structuredContent` and its text mirror.
//!
//! Run: `cargo run --example typed_tools --features schema` (MCP on stdin/stdout); call
//! `forecast` with `{"city": "Oslo", "days": 2}`.

// `use mcpwire::schemars` puts the crate where `#[derive(JsonSchema)]` looks for it, so no
// direct dependency on schemars is needed.
use mcpwire::proto::mcp_types::Tool;
use mcpwire::schemars::{self, JsonSchema};
use mcpwire::server::{text_result, Json, Server};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What to forecast.
#[derive(Deserialize, JsonSchema)]
struct ForecastArgs {
    /// The city.
    city: String,
    /// How many days ahead (default 1).
    days: Option<u8>,
    /// The unit of temperatures.
    #[serde(default)]
    unit: Unit,
}

/// A temperature unit.
#[derive(Default, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    /// Degrees Celsius.
    #[default]
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// A forecast.
#[derive(Serialize, JsonSchema)]
struct Forecast {
    /// The city.
    city: String,
    /// The unit of `temperatures`.
    unit: Unit,
    /// One temperature per day.
    temperatures: Vec<f64>,
}

/// Whom to greet.
#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// A name.
    name: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder()
        .name("typed-tools")
        // Title and annotations through the `Tool` builder; both schemas are derived.
        .derived_tool_with(
            Tool::new("forecast", json!({})).title("Forecast").description("The weather ahead").read_only(true),
            |args: ForecastArgs, _ctx| async move {
                let days = args.days.unwrap_or(1);
                let celsius = (0..days).map(|d| 18.0 + f64::from(d));
                let temperatures = match args.unit {
                    Unit::Celsius => celsius.collect(),
                    Unit::Fahrenheit => celsius.map(|c| c * 9.0 / 5.0 + 32.0).collect(),
                };
                Ok(Json(Forecast { city: args.city, unit: args.unit, temperatures }))
            },
        )
        // Typed arguments, plain content as the result (no output schema).
        .derived_tool("greet", "Greets someone", |args: GreetArgs, _ctx| async move {
            Ok(text_result(format!("Hello, {}!", args.name)))
        })
        .build()?;
    server.serve_stdio().await?;
    Ok(())
}
