//! The agent of the bridge's demo (`demo/agent.rs`) as a program: over stdio, or Streamable HTTP.
//!
//! ```text
//! cargo run --example agent                       # over stdio
//! cargo run --example agent -- --http 127.0.0.1:8080
//! ```

#[path = "../demo/agent.rs"]
mod agent;
use agent::agent_server;
use mcpwire::transport::sse_http::HttpServerConfig;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = agent_server();
    match args.iter().position(|a| a == "--http") {
        Some(i) => {
            let addr = args.get(i + 1).ok_or("--http needs an address")?.parse()?;
            let http = server.serve_http(HttpServerConfig::default().bind(addr)).await?;
            eprintln!("agent listening on {}", http.url());
            // Serves until the process is stopped.
            std::future::pending::<()>().await;
            http.shutdown().await;
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}
