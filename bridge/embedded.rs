//! The embedded default of `mcp-bridge serve`: the bundled example servers (the echo server of
//! [`crate::server::echo`] and the agent of [`crate::server::agent`]) as upstreams in this
//! very process, reached over in-process pairs (no child process, no socket).
//!
//! Not here: serving them (the gateway does, as any other upstreams).

use crate::client::config::{InProcess, McpConfig, ServerConfig};
use crate::server::Server;
use crate::transport::boxed::BoxTransport;
use crate::transport::{inproc, Limits};

/// An upstream served by `server` in process: each connection (start or restart) gets a new
/// in-process pair whose server end `server` serves until it closes.
fn in_process(name: &str, server: Server) -> ServerConfig {
    let connector = InProcess::new(move || {
        let (client_end, server_end) = inproc::pair(Limits::default());
        let serving = server.serve(BoxTransport::new(server_end));
        crate::transport::task::spawn(async move {
            let _ = serving.await;
        });
        client_end
    });
    let mut config = ServerConfig::in_process(name, connector);
    config.required = true;
    config
}

/// The configuration of the embedded default: `echo` and `agent`.
pub(crate) fn config() -> McpConfig {
    let echo = crate::server::echo::echo_builder().build().expect("the echo server's tools are valid");
    let agent = crate::server::agent::agent_server();
    let mut config = McpConfig::default();
    for server in [in_process("echo", echo), in_process("agent", agent)] {
        config.servers.insert(server.name.clone(), server);
    }
    config
}
