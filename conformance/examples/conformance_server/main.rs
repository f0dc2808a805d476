//! `conformance_server`: the fixtures the official MCP conformance suite's server scenarios
//! expect (tools `test_*`, resources `test://…`, prompts `test_*`, logging, completion), served
//! over Streamable HTTP at `http://ADDR/mcp`.
//!
//! ```text
//! conformance_server [--listen 127.0.0.1:3100]
//! ```
//!
//! `scripts/conformance-server-suite` starts it and runs the suite against it. The fixtures
//! that need the handler context or server → client requests live in `interactive.rs`.

mod fixtures;
mod interactive;
mod per_request;

use std::net::SocketAddr;
use std::time::Duration;

use mcpwire::transport::sse_http::HttpServerConfig;

const DEFAULT_LISTEN: &str = "127.0.0.1:3100";

fn listen_address() -> Result<SocketAddr, String> {
    let mut args = std::env::args().skip(1);
    let mut listen = DEFAULT_LISTEN.to_owned();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next().ok_or("--listen needs an address")?,
            "-h" | "--help" => {
                println!("usage: conformance_server [--listen ADDR]   (default {DEFAULT_LISTEN}, endpoint /mcp)");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    listen.parse().map_err(|e| format!("bad --listen address {listen:?}: {e}"))
}

#[tokio::main]
async fn main() {
    let addr = match listen_address() {
        Ok(addr) => addr,
        Err(e) => {
            eprintln!("conformance_server: {e}");
            std::process::exit(2);
        }
    };
    let server =
        per_request::register(interactive::register(fixtures::builder())).build().expect("the fixtures are valid");
    let _ = per_request::SERVER.set(server.clone());

    // test://watched-resource changes every 3 seconds, as the suite's reference server says.
    let watcher = server.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(3));
        tick.tick().await;
        loop {
            tick.tick().await;
            watcher.resource_updated(fixtures::WATCHED_URI);
        }
    });

    let config = HttpServerConfig::default().bind(addr);
    let http = server.serve_http(config).await.unwrap_or_else(|e| {
        eprintln!("conformance_server: cannot listen on {addr}: {e}");
        std::process::exit(1);
    });
    eprintln!("conformance_server: listening on {}", http.url());
    // Runs until killed (the suite script sends SIGTERM).
    std::future::pending::<()>().await;
    http.shutdown().await;
}
