//! Shared connections: one upstream connection held by several holders at once.
//!
//! A connection of the set lives in a [`Held`] behind an `Arc`; every holder keeps a clone,
//! which is its lease: the server's slot (while the connection is the slot's current one),
//! each call in flight on it, and each [`ServerLease`] a host took with
//! [`ConnectionSet::lease`](super::ConnectionSet::lease). When the last lease goes, the
//! connection is closed (its child stopped with its process group). So a connection that a
//! reload retires finishes the calls in flight on it, and serves the holders of leases, before
//! it goes; [`retire`] closes it at once, and waits, when nobody else holds it.
//!
//! [`ConnectionSet::shutdown`](super::ConnectionSet::shutdown) does not wait for leases: it
//! closes every connection, and calls on a lease then fail as disconnected.
//!
//! Not here: which connection a slot holds, restarts, reloads (the set's own code).

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::slot::Conn;
use super::SetError;
use crate::client::{decode_tool_result, CallOptions};
use crate::proto::mcp_types::CallToolResult;

/// A connection and whether it was closed already (by shutdown, or by [`retire`]).
pub(super) struct Held {
    conn: Conn,
    closed: AtomicBool,
}

impl Held {
    pub(super) fn new(conn: Conn) -> Arc<Held> {
        Arc::new(Held { conn, closed: AtomicBool::new(false) })
    }

    /// The connection itself (a clone shares it but is no lease).
    pub(super) fn conn(&self) -> &Conn {
        &self.conn
    }

    /// Closes the connection now, whoever else holds it (calls on it then fail).
    pub(super) async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.conn.close().await;
    }
}

impl Deref for Held {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        // The last lease went without an await point to close it in. Without a runtime (the
        // host is exiting) the transport's own drop kills a child's process group.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let conn = self.conn.clone();
            runtime.spawn(async move { conn.close().await });
        }
    }
}

/// Gives up one lease on `held`: when it was the last, the connection is closed before this
/// returns; otherwise the last holder closes it.
pub(super) async fn retire(held: Arc<Held>) {
    if let Some(held) = Arc::into_inner(held) {
        held.close().await;
    }
}

/// A lease on the connection a server of the set had when the lease was taken
/// ([`ConnectionSet::lease`](super::ConnectionSet::lease)). The connection lasts at least as
/// long as the lease, even when a reload replaces or removes the server; dropping the lease
/// (or [`ServerLease::release`]) gives it up.
pub struct ServerLease {
    server: String,
    held: Arc<Held>,
    tool_timeout: Duration,
}

impl std::fmt::Debug for ServerLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerLease").field("server", &self.server).field("pid", &self.pid()).finish()
    }
}

impl ServerLease {
    pub(super) fn new(server: String, held: Arc<Held>, tool_timeout: Duration) -> ServerLease {
        ServerLease { server, held, tool_timeout }
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The process id (and process group id) of the child, for a stdio server.
    pub fn pid(&self) -> Option<u32> {
        self.held.pid()
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.held.is_closed()
    }

    /// Calls tool `tool` on this connection as `options` say, waiting at most the smaller of
    /// the server's `tool_timeout` (as of when the lease was taken) and their timeout. No tool
    /// filter applies: the holder has the connection itself.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled`).
    ///
    /// # Errors
    /// [`SetError::Timeout`], [`SetError::Disconnected`], [`SetError::Client`].
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        mut options: CallOptions,
    ) -> Result<CallToolResult, SetError> {
        let after = options.timeout.map_or(self.tool_timeout, |t| t.min(self.tool_timeout));
        options.timeout = Some(after);
        self.held.call_tool(tool, arguments, options).await.and_then(decode_tool_result).map_err(|source| {
            let server = self.server.clone();
            if source.is_timeout() {
                SetError::Timeout { server, what: tool.to_owned(), after }
            } else if source.is_disconnected() {
                SetError::Disconnected { server, what: tool.to_owned(), source }
            } else {
                SetError::Client { server, source }
            }
        })
    }

    /// Gives the lease up; when it was the last one, the connection is closed (the child
    /// stopped with its process group) before this returns.
    pub async fn release(self) {
        retire(self.held).await;
    }
}
