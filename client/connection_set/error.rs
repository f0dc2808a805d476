//! [`SetError`]: why a set operation failed, with the server (and tool) it concerns.

use super::events::ServerState;
use super::events::StartupSummary;
use crate::client::ClientError;
use std::fmt;
use std::time::Duration;
/// Why a set operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SetError {
    /// Required servers did not become ready.
    StartupFailed {
        /// Their names.
        required: Vec<String>,
        /// Every server's state.
        summary: StartupSummary,
    },
    /// Startup was cancelled (or the set shut down) before every server settled.
    StartupCancelled {
        /// Every server's state.
        summary: StartupSummary,
    },
    /// No tool has this qualified name.
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// No server has this name.
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// A bare server name that several scopes have, and no unscoped server: name one by its key.
    AmbiguousServer {
        /// The name asked for.
        server: String,
        /// The keys it could mean (`SCOPE/NAME`).
        candidates: Vec<String>,
    },
    /// The tool is filtered out by `enabled_tools` / `disabled_tools`; the server was not asked.
    ToolDisabled {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The server is not ready (failed, disabled, reconnecting, closed).
    Unavailable {
        /// The server.
        server: String,
        /// Its state.
        state: ServerState,
        /// Why, when known.
        reason: Option<String>,
    },
    /// The server's connection ended while the call was in flight. The call was not retried.
    Disconnected {
        /// The server.
        server: String,
        /// The method or tool.
        what: String,
        /// The client's error.
        source: ClientError,
    },
    /// The call took longer than the effective timeout (cancelled on the server).
    Timeout {
        /// The server.
        server: String,
        /// The method or tool.
        what: String,
        /// The effective timeout.
        after: Duration,
    },
    /// Any other client failure (the server answered an error, …).
    Client {
        /// The server.
        server: String,
        /// The client's error.
        source: ClientError,
    },
}

impl fmt::Display for SetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetError::StartupFailed { required, summary } => {
                f.write_str("required MCP servers failed to start: ")?;
                for (i, name) in required.iter().enumerate() {
                    let status = summary.servers.iter().find(|s| &s.name == name);
                    let reason = status.and_then(|s| s.error.as_deref()).unwrap_or("not ready");
                    write!(f, "{}{name} ({reason})", if i > 0 { ", " } else { "" })?;
                }
                Ok(())
            }
            SetError::StartupCancelled { .. } => f.write_str("startup was cancelled"),
            SetError::UnknownTool { name } => write!(f, "unknown tool {name}"),
            SetError::UnknownServer { server } => write!(f, "unknown server {server}"),
            SetError::AmbiguousServer { server, candidates } => {
                write!(f, "server name {server} is ambiguous: it could be {}", candidates.join(", "))
            }
            SetError::ToolDisabled { server, tool } => write!(f, "tool {tool} of server {server} is disabled"),
            SetError::Unavailable { server, state, reason: Some(reason) } => {
                write!(f, "server {server} is {state}: {reason}")
            }
            SetError::Unavailable { server, state, reason: None } => write!(f, "server {server} is {state}"),
            SetError::Disconnected { server, what, source } => {
                write!(f, "server {server} went away during {what} (not retried): {source}")
            }
            SetError::Timeout { server, what, after } => {
                write!(f, "{what} on server {server} timed out after {} ms", after.as_millis())
            }
            SetError::Client { server, source } => write!(f, "server {server}: {source}"),
        }
    }
}

impl SetError {
    /// Whether the call failed because the HTTP server no longer knows the session (it expired
    /// or was deleted): the set re-initializes the server from its recipe, and a later call
    /// can succeed.
    pub fn is_session_expired(&self) -> bool {
        match self {
            SetError::Disconnected { source: ClientError::Transport(e), .. }
            | SetError::Client { source: ClientError::Transport(e), .. } => e.is_session_expired(),
            _ => false,
        }
    }
}

impl std::error::Error for SetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SetError::Disconnected { source, .. } | SetError::Client { source, .. } => Some(source),
            _ => None,
        }
    }
}
