//! [`ClientError`]: why a client operation failed, one variant per cause a caller may want to
//! act on (the server process exited, the call timed out, the server answered an error, …).
//!
//! Not here: tool failures. A tool that fails answers a normal result with `isError: true`;
//! that is a successful call as far as the client is concerned.

use std::fmt;
use std::process::ExitStatus;
use std::time::Duration;

use crate::proto::jsonrpc::ErrorObject;
use crate::proto::session::SessionError;
use crate::proto::version::ProtocolVersion;
use crate::transport::TransportError;

/// Why a client operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered the request with a JSON-RPC error.
    Rpc {
        /// The request's method.
        method: String,
        /// The error as the server wrote it.
        error: ErrorObject,
    },
    /// No response within the timeout; `notifications/cancelled` was sent to the server.
    Timeout {
        /// The request's method.
        method: String,
        /// The timeout that expired.
        after: Option<Duration>,
    },
    /// The server process exited before the response arrived.
    ServerExited {
        /// The request that was waiting (or could not be sent).
        method: String,
        /// How it exited.
        status: ExitStatus,
    },
    /// The connection ended before the response arrived (the server closed its output, or we
    /// closed the connection), with no process exit to report.
    Closed {
        /// The request that was waiting (or could not be sent).
        method: String,
        /// Why, when known.
        reason: Option<String>,
    },
    /// The server chose a protocol version this client does not speak; the connection was
    /// closed ("Version Negotiation").
    UnsupportedVersion {
        /// What we offered.
        offered: ProtocolVersion,
        /// What the server answered.
        answered: String,
    },
    /// The server's result did not have the shape the method requires.
    InvalidResult {
        /// The request's method.
        method: String,
        /// What did not fit.
        source: serde_json::Error,
    },
    /// A paginated list did not end: the server sent a cursor it had sent before, or more
    /// pages than [`ClientOptions::max_pages`](super::ClientOptions::max_pages).
    Pagination {
        /// The list method.
        method: String,
        /// The cursor that repeated, or the last one.
        cursor: String,
        /// Pages read before giving up.
        pages: usize,
    },
    /// The server did not advertise the capability the call needs (or the negotiated version
    /// lacks the method); nothing was sent.
    CapabilityNotSupported {
        /// The method not sent.
        method: String,
        /// The missing server capability, as named in `initialize` (e.g. `resources.subscribe`).
        capability: &'static str,
    },
    /// The operation needs a client capability this client did not declare (e.g. `roots` for
    /// [`Client::set_roots`](super::Client::set_roots)).
    NotDeclared {
        /// The client capability.
        capability: &'static str,
    },
    /// 2026-07-28: the server asked for input this client cannot give (no handler for the
    /// method, or the handler refused), so the request cannot be retried.
    InputRequest {
        /// The request that asked for input.
        method: String,
        /// The input request's key in `inputRequests`.
        key: String,
        /// Why it could not be answered (boxed: it is rare, and `ClientError` stays small).
        error: Box<ErrorObject>,
    },
    /// 2026-07-28: the server kept answering with `input_required` past
    /// [`ClientOptions::max_input_rounds`](super::ClientOptions::max_input_rounds) retries.
    InputRounds {
        /// The request.
        method: String,
        /// Retries sent.
        rounds: usize,
    },
    /// Typed arguments that do not serialize as a JSON object (a tool's or a prompt's
    /// arguments are one); nothing was sent.
    Arguments {
        /// The tool or prompt.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A typed call's result gave no value of the type: the tool failed, sent no
    /// `structuredContent`, sent one that breaks the tool's `outputSchema`, or one that does not
    /// decode.
    Structured {
        /// The tool.
        tool: String,
        /// What went wrong.
        error: crate::proto::mcp_types::StructuredError,
    },
    /// The session refused to send the request (too many in flight, …).
    Session(SessionError),
    /// The transport failed (the server could not be started, a pipe broke, …).
    Transport(TransportError),
}

impl ClientError {
    /// Whether the server process exited (see [`ClientError::ServerExited`]).
    pub fn is_server_exit(&self) -> bool {
        matches!(self, ClientError::ServerExited { .. })
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Timeout { .. })
    }

    /// The JSON-RPC error the server answered, if that is what happened.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            ClientError::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Whether the connection is gone (server exited, connection closed, transport failed):
    /// every later call on the same client fails too.
    pub fn is_disconnected(&self) -> bool {
        matches!(self, ClientError::ServerExited { .. } | ClientError::Closed { .. } | ClientError::Transport(_))
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Rpc { method, error } => {
                write!(f, "server answered {method} with error {}: {}", error.code, error.message)
            }
            ClientError::Timeout { method, after: Some(after) } => {
                write!(f, "{method} timed out after {} ms", after.as_millis())
            }
            ClientError::Timeout { method, after: None } => write!(f, "{method} timed out"),
            ClientError::ServerExited { method, status } => write!(f, "server exited during {method} ({status})"),
            ClientError::Closed { method, reason: Some(reason) } => {
                write!(f, "connection closed during {method}: {reason}")
            }
            ClientError::Closed { method, reason: None } => {
                write!(f, "connection closed during {method}: the server closed its output")
            }
            ClientError::UnsupportedVersion { offered, answered } => write!(
                f,
                "server chose protocol version {answered:?}, which this client does not support (offered {offered})"
            ),
            ClientError::InvalidResult { method, source } => write!(f, "invalid {method} result: {source}"),
            ClientError::Pagination { method, cursor, pages } => {
                write!(f, "{method} did not end after {pages} pages (cursor {cursor:?})")
            }
            ClientError::CapabilityNotSupported { method, capability } => {
                write!(f, "server does not support {method}: it did not advertise the {capability} capability")
            }
            ClientError::NotDeclared { capability } => {
                write!(f, "this client did not declare the {capability} capability")
            }
            ClientError::InputRequest { method, key, error } => {
                write!(f, "{method}: input request {key:?} could not be answered: {}", error.message)
            }
            ClientError::InputRounds { method, rounds } => {
                write!(f, "{method} still needed input after {rounds} retries")
            }
            ClientError::Arguments { tool, reason } => {
                write!(f, "the arguments of {tool} are no JSON object: {reason}")
            }
            ClientError::Structured { tool, error } => write!(f, "tool {tool}: {error}"),
            ClientError::Session(e) => e.fmt(f),
            ClientError::Transport(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Rpc { error, .. } => Some(error),
            ClientError::InputRequest { error, .. } => Some(error.as_ref()),
            ClientError::InvalidResult { source, .. } => Some(source),
            ClientError::Session(e) => Some(e),
            ClientError::Transport(e) => Some(e),
            ClientError::Structured { error, .. } => Some(error),
            ClientError::Arguments { .. }
            | ClientError::Timeout { .. }
            | ClientError::ServerExited { .. }
            | ClientError::Closed { .. }
            | ClientError::UnsupportedVersion { .. }
            | ClientError::Pagination { .. }
            | ClientError::CapabilityNotSupported { .. }
            | ClientError::NotDeclared { .. }
            | ClientError::InputRounds { .. } => None,
        }
    }
}

impl From<TransportError> for ClientError {
    fn from(e: TransportError) -> Self {
        ClientError::Transport(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::jsonrpc::ErrorCode;

    #[test]
    fn messages_are_lowercase_without_a_period() {
        let errors = [
            ClientError::Rpc {
                method: "tools/call".into(),
                error: ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found"),
            },
            ClientError::Timeout { method: "tools/call".into(), after: Some(Duration::from_millis(250)) },
            ClientError::Closed { method: "ping".into(), reason: None },
            ClientError::UnsupportedVersion { offered: ProtocolVersion::V2025_11_25, answered: "1999-01-01".into() },
            ClientError::Pagination { method: "tools/list".into(), cursor: "a".into(), pages: 2 },
            ClientError::CapabilityNotSupported {
                method: "resources/subscribe".into(),
                capability: "resources.subscribe",
            },
            ClientError::NotDeclared { capability: "roots" },
            ClientError::InputRequest {
                method: "tools/call".into(),
                key: "confirm".into(),
                error: Box::new(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "no elicitation handler")),
            },
            ClientError::InputRounds { method: "prompts/get".into(), rounds: 10 },
        ];
        let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "server answered tools/call with error -32601: Method not found",
                "tools/call timed out after 250 ms",
                "connection closed during ping: the server closed its output",
                "server chose protocol version \"1999-01-01\", which this client does not support (offered 2025-11-25)",
                "tools/list did not end after 2 pages (cursor \"a\")",
                "server does not support resources/subscribe: it did not advertise the resources.subscribe capability",
                "this client did not declare the roots capability",
                "tools/call: input request \"confirm\" could not be answered: no elicitation handler",
                "prompts/get still needed input after 10 retries",
            ]
        );
        for t in texts {
            assert!(t.starts_with(|c: char| c.is_lowercase()) && !t.ends_with('.'), "{t}");
        }
    }
}
