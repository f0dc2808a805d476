//! The demo servers of `mcp-bridge serve`'s embedded default: an echo server and an agent.
//! Also served alone by the `echo_server` and `agent` examples of this package (the tests and
//! benches of the workspace start them).

pub mod agent;
pub mod echo;
