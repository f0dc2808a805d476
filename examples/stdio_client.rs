//! A client that starts a stdio server as a child process, lists its tools and calls one.
//!
//! Run: `cargo run --example stdio_client -- SERVER [TOOL [JSON_ARGS]]`, e.g.
//! `cargo run --example stdio_client -- target/debug/examples/server_tools add '{"a":2,"b":40}'`
//! (build the server first: `cargo build --example server_tools`).

use mcpwire::client::{Client, ClientOptions};
use mcpwire::proto::mcp_types::ContentBlock;
use mcpwire::transport::stdio::ChildCommand;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let server = args.next().ok_or("usage: stdio_client SERVER [TOOL [JSON_ARGS]]")?;
    let client = Client::spawn(ChildCommand::new(server), ClientOptions::default()).await?;
    println!("connected to {} {}", client.server_info().name, client.server_info().version);

    let tools = client.list_tools().await?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    println!("tools: {}", names.join(", "));

    if let Some(tool) = args.next() {
        let arguments = serde_json::from_str(&args.next().unwrap_or_else(|| "{}".into()))?;
        let result = client.call_tool(tool.as_str(), Some(arguments), Default::default()).await?;
        for block in &result.content {
            match block {
                ContentBlock::Text(text) => println!("{tool}: {}", text.text),
                other => println!("{tool}: {}", serde_json::to_string(other)?),
            }
        }
        if result.is_error == Some(true) {
            return Err(format!("{tool} failed").into());
        }
    }
    client.close().await?;
    Ok(())
}
