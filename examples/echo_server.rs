//! `echo_server`: the echo server ([`mcpwire::server::echo`]: tools `echo {text}` and
//! `add {a, b}`) over our own stdin/stdout — our counterpart of rmcp's `rmcp-echo-server`, used
//! by the interop tests and the benches.
//!
//! It writes nothing but frames to stdout and exits when stdin ends, after answering the calls
//! in flight.

#[tokio::main]
async fn main() {
    if let Err(e) = mcpwire::server::echo::echo_server().serve_stdio().await {
        eprintln!("echo_server: {e}");
        std::process::exit(1);
    }
}
