//! The fixtures that need the handler context or server → client requests
//! (`test_tool_with_logging`, `test_tool_with_progress`, `test_sampling`, `test_elicitation`,
//! `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`, `test_reconnection`).
//!
//! A stub: it registers nothing. The work on the handler `Context` (branch `server-context`)
//! replaces this file.

use mcpwire::server::ServerBuilder;

/// Adds the interactive fixtures to `builder` (none yet).
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
}
