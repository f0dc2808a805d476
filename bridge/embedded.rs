//! The embedded default of `mcp-bridge serve`: the demo servers (the echo server and the agent
//! of `demo`) as upstreams in this very process, reached over in-process pairs (no child
//! process, no socket).
//!
//! Not here: serving them (the gateway does, as any other upstreams).

use mcpwire::client::config::{McpConfig, ServerConfig};
use mcpwire::server::Server;

/// An upstream served by `server` in process, required.
fn in_process(name: &str, server: Server) -> ServerConfig {
    let mut config = mcpwire::gateway::in_process(name, server);
    config.required = true;
    config
}

/// The configuration of the embedded default: `echo` and `agent`.
pub(crate) fn config() -> McpConfig {
    let echo = crate::demo::echo::echo_builder().build().expect("the echo server's tools are valid");
    let agent = crate::demo::agent::agent_server();
    let mut config = McpConfig::default();
    for server in [in_process("echo", echo), in_process("agent", agent)] {
        config.servers.insert(server.name.clone(), server);
    }
    config
}
