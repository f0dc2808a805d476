//! Logging from a tool: `import` sends log messages (`notifications/message`) at three
//! levels, and the client's level decides which reach it: `logging/setLevel` in a session
//! opened with `initialize` (everything until it sets one), or the `logLevel` each 2026-07-28
//! request carries (no log messages without one). The `logging` capability is always advertised.
//!
//! Run: `cargo run --example logging` (MCP on stdin/stdout); set the level to `warning`, then
//! call `import` with `{"rows": 3}`: only the warning arrives.

use mcpwire::proto::mcp_types::LoggingLevel;
use mcpwire::server::{text_result, Server, ToolError};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Import {
    rows: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let schema = json!({"type": "object", "properties": {"rows": {"type": "integer"}}, "required": ["rows"]});
    let server = Server::builder()
        .name("logging")
        .typed_tool("import", "Imports rows, logging as it goes", schema, |args: Import, ctx| async move {
            let log = |level, data| {
                let ctx = ctx.clone();
                async move { ctx.log(level, Some("import"), data).await.map_err(|e| ToolError::failed(e.to_string())) }
            };
            log(LoggingLevel::Debug, json!({"starting": args.rows})).await?;
            for row in 1..=args.rows {
                log(LoggingLevel::Info, json!(format!("imported row {row}"))).await?;
            }
            log(LoggingLevel::Warning, json!("row 2 had an empty name")).await?;
            Ok(text_result(format!("imported {} rows", args.rows)))
        })
        .build()?;
    server.serve_stdio().await?;
    Ok(())
}
