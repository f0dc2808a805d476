//! Virtual servers in a host: one gateway over two servers of the host's own (in process),
//! served as two MCP endpoints on one HTTP listener — `/mcp/all` with every tool, and
//! `/mcp/weather` with the weather server only, its tool renamed — until Ctrl-C.
//!
//! ```text
//! cargo run --example gateway_endpoints --features gateway,http
//! ```

use std::sync::Arc;
use std::time::Duration;

use mcpwire::client::config::McpConfig;
use mcpwire::client::connection_set::{ConnectionSet, SetOptions};
use mcpwire::gateway::endpoint::{Endpoint, Rename};
use mcpwire::gateway::policy::Kind;
use mcpwire::gateway::{in_process, Callers, Gateway, PerSession, PrefixMode};
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpServerConfig, MountedServer};
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
    let callers = Arc::new(Callers::default());
    let options = callers.handlers(SetOptions::default());
    let per_session = PerSession::new(Vec::new(), &config, options.clone())?;
    let (options, events) = options.with_event_channel();
    let set = ConnectionSet::new(config, options);
    set.start().await.map_err(|e| e.to_string())?;
    let timeout = Some(Duration::from_secs(60));
    let gateway = Arc::new(Gateway::new(set.clone(), callers, per_session, PrefixMode::Always, timeout)?);
    tokio::spawn(gateway.clone().follow(events));

    // Two views of the same upstream connections, each a server of its own.
    let all = Endpoint::new("all", "/mcp/all");
    let weather = Endpoint::new("weather", "/mcp/weather")
        .servers(["weather"])
        .rename(Rename::new(Kind::Tool, "weather/forecast").to("forecast").described("Today's weather."));
    let mut mounted = Vec::new();
    for endpoint in [all, weather] {
        let path = endpoint.path.clone();
        let server = gateway.endpoint_server(endpoint, Server::builder().name("my-host"))?;
        let service = server.http_service(HttpServerConfig::default().path(path)).await.map_err(|e| e.to_string())?;
        mounted.push(service);
    }
    // Everything else on the listener (here: nothing but 404) is the fallback's.
    let gateway_server = gateway.server(Server::builder().name("my-host"))?;
    let fallback = gateway_server.http_service(HttpServerConfig::default()).await.map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
    let http = MountedServer::serve_on(listener, fallback, mounted, false).await.map_err(|e| e.to_string())?;
    println!("{}\n{}", http.url("/mcp/all"), http.url("/mcp/weather"));
    let _ = tokio::signal::ctrl_c().await;
    http.shutdown().await;
    set.shutdown().await;
    Ok(())
}
