//! The gateway embedded in a host: two servers of the host's own (in process) and any stdio
//! servers named on the command line, served as one MCP server over stdio, each tool under
//! its qualified name (`mcp__SERVER__TOOL`).
//!
//! ```text
//! cargo run --example gateway --features gateway -- [STDIO_SERVER_COMMAND ...]
//! ```

use std::sync::Arc;
use std::time::Duration;

use mcpwire::client::config::{McpConfig, ServerConfig};
use mcpwire::client::connection_set::{ConnectionSet, SetOptions};
use mcpwire::gateway::{in_process, Callers, Gateway, PerSession, PrefixMode};
use mcpwire::server::{text_result, Server};
use serde_json::json;

/// A host's own server with one tool, `name` answering `reply`.
fn own_server(name: &str, reply: &'static str) -> Server {
    let schema = json!({"type": "object", "properties": {}});
    Server::builder()
        .name(name)
        .tool(name, "Answers with a fixed text", schema, move |_args, _ctx| async move { Ok(text_result(reply)) })
        .build()
        .expect("a valid server")
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut config = McpConfig::default();
    config.insert(in_process("weather", own_server("forecast", "sunny")));
    config.insert(in_process("clock", own_server("now", "noon")));
    for (i, command) in std::env::args().skip(1).enumerate() {
        let mut words = command.split_whitespace();
        let program = words.next().ok_or("an empty server command")?;
        config.insert(ServerConfig::stdio(format!("stdio{i}"), program, words));
    }

    // Upstream requests to the client (sampling, elicitation, roots) go to the downstream
    // client whose call caused them; the set's events keep the gateway's catalog current.
    let callers = Arc::new(Callers::default());
    let options = callers.handlers(SetOptions::default());
    let per_session = PerSession::new(Vec::new(), &config, options.clone())?;
    let (options, events) = options.with_event_channel();
    let set = ConnectionSet::new(config, options);
    set.start().await.map_err(|e| e.to_string())?;

    let timeout = Some(Duration::from_secs(60));
    let gateway = Arc::new(Gateway::new(set.clone(), callers, per_session, PrefixMode::Always, timeout)?);
    let server = gateway.server(Server::builder().name("my-host"))?;
    tokio::spawn(gateway.clone().follow(events));

    let served = server.serve_stdio().await;
    set.shutdown().await;
    served.map_err(|e| e.to_string())
}
