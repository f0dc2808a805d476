//! Many servers through the connection set: each server given on the command line is started
//! as a child process (named after its file), and one embedded in this process is reached
//! over an in-process pair. Their tools form one catalog under qualified names
//! (`mcp__SERVER__TOOL`), and a call by qualified name is routed to its server.
//!
//! Run: `cargo run --example connection_set -- SERVER...`, e.g. after
//! `cargo build --example server_tools --example structured_output`:
//! `cargo run --example connection_set -- target/debug/examples/server_tools target/debug/examples/structured_output`.

use std::path::Path;

use mcpwire::client::config::{InProcess, McpConfig, ServerConfig};
use mcpwire::client::connection_set::{ConnectionSet, SetOptions};
use mcpwire::proto::mcp_types::ContentBlock;
use mcpwire::server::{text_result, Server};
use mcpwire::transport::{inproc, Limits};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config = McpConfig::default();
    for path in std::env::args().skip(1) {
        let name = Path::new(&path).file_stem().and_then(|s| s.to_str()).ok_or("a server path")?.to_owned();
        config.insert(ServerConfig::stdio(name, path, Vec::<String>::new()));
    }
    // A server of this very process.
    let clock = Server::builder()
        .tool("ping", "Answers pong", json!({"type": "object"}), |_args, _ctx| async { Ok(text_result("pong")) })
        .build()?;
    config.insert(ServerConfig::in_process(
        "local",
        InProcess::new(move || {
            let (ours, theirs) = inproc::pair(Limits::default());
            tokio::spawn(clock.serve(theirs));
            ours
        }),
    ));

    let set = ConnectionSet::new(config, SetOptions::default());
    let summary = set.start().await?;
    println!("servers: {}", summary.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", "));
    for tool in set.tools() {
        println!("tool: {} ({} on {})", tool.qualified_name, tool.tool.name, tool.server);
    }

    for name in ["mcp__local__ping", "mcp__server_tools__add"] {
        if set.resolve(name).is_none() {
            continue;
        }
        let result = set.call_tool(name, json!({"a": 2, "b": 40}).as_object().cloned(), Default::default()).await?;
        if let Some(ContentBlock::Text(text)) = result.content.first() {
            println!("{name}: {}", text.text);
        }
    }
    set.shutdown().await;
    Ok(())
}
