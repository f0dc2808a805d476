//! What the set tells its host: each server's state and status, the startup summary, and the
//! [`SetEvent`]s sent to the host's sink. Plain data: nothing here acts on a server.

use crate::client::EraPolicy;
use crate::proto::jsonrpc::Notification;
use crate::proto::mcp_types::Implementation;
use crate::proto::version::ProtocolVersion;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
/// Where a server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// Configured but not started yet.
    Pending,
    /// Starting (spawning or connecting, `initialize`, listing).
    Starting,
    /// Connected and listed.
    Ready,
    /// Could not start (or could not be restarted), and is not being tried again.
    Failed,
    /// Could not start, and is being tried again in the background
    /// ([`SetOptions::startup_retries`](super::SetOptions::startup_retries)).
    Retrying,
    /// Its startup was cancelled.
    Cancelled,
    /// `enabled = false`: skipped.
    Disabled,
    /// Its connection ended; being restarted.
    Reconnecting,
    /// Shut down.
    Closed,
    /// `startup = "lazy"` with a cached catalog: listed from the cache, started on its first
    /// call.
    Deferred,
}

impl ServerState {
    /// Every state, in declaration order.
    pub const ALL: [ServerState; 10] = [
        ServerState::Pending,
        ServerState::Starting,
        ServerState::Ready,
        ServerState::Failed,
        ServerState::Retrying,
        ServerState::Cancelled,
        ServerState::Disabled,
        ServerState::Reconnecting,
        ServerState::Closed,
        ServerState::Deferred,
    ];

    /// A lowercase word: `ready`, `failed` …
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Pending => "pending",
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Failed => "failed",
            ServerState::Retrying => "retrying",
            ServerState::Cancelled => "cancelled",
            ServerState::Disabled => "disabled",
            ServerState::Reconnecting => "reconnecting",
            ServerState::Closed => "closed",
            ServerState::Deferred => "deferred",
        }
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One server's state, for status lines.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The server's configured name.
    pub name: String,
    /// Where it stands.
    pub state: ServerState,
    /// Whether it is `required`.
    pub required: bool,
    /// The configured era policy.
    pub era: EraPolicy,
    /// The negotiated protocol version, once connected (2026-07-28: stateless).
    pub protocol_version: Option<ProtocolVersion>,
    /// Its `serverInfo`, once connected.
    pub server_info: Option<Implementation>,
    /// How many tools it lists (before filtering).
    pub tools: usize,
    /// How long its (last) start took.
    pub elapsed: Duration,
    /// Why it failed, when it did (the last try's reason while it is retrying or reconnecting).
    pub error: Option<String>,
    /// How many tries to start it failed since it was last ready (0 once it is): its start and
    /// every restart tried after it.
    pub failed_attempts: u32,
    /// How many connections were made to it so far: 1 after its start, one more for each
    /// restart (a reconnect, or a reload that changed it); a reload that kept it adds none.
    pub connections: u64,
}

/// Every server's state once startup has settled.
#[derive(Debug, Clone)]
pub struct StartupSummary {
    /// In name order, disabled servers included.
    pub servers: Vec<ServerStatus>,
}

impl StartupSummary {
    /// The servers in `state`.
    pub fn in_state(&self, state: ServerState) -> impl Iterator<Item = &ServerStatus> {
        self.servers.iter().filter(move |s| s.state == state)
    }

    /// The required servers that did not become ready (a deferred one counts as ready: it is
    /// listed, and starts on its first call).
    pub fn failed_required(&self) -> Vec<String> {
        let up = |s: &ServerStatus| matches!(s.state, ServerState::Ready | ServerState::Deferred);
        self.servers.iter().filter(|s| s.required && !up(s)).map(|s| s.name.clone()).collect()
    }
}

/// What happens in the set, as it happens.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SetEvent {
    /// A server is being started.
    Starting {
        /// Its name.
        server: String,
    },
    /// A server is connected and listed.
    Ready {
        /// Its name.
        server: String,
        /// The negotiated version.
        protocol_version: ProtocolVersion,
        /// How many tools it lists.
        tools: usize,
        /// How long the start took.
        elapsed: Duration,
    },
    /// A server could not start (or be restarted).
    Failed {
        /// Its name.
        server: String,
        /// Whether it is required.
        required: bool,
        /// Why.
        reason: String,
    },
    /// A server's startup was cancelled.
    Cancelled {
        /// Its name.
        server: String,
    },
    /// A server is disabled and was not started.
    Disabled {
        /// Its name.
        server: String,
    },
    /// Every server has settled.
    StartupComplete(StartupSummary),
    /// A server's tools, resources or prompts changed; [`ConnectionSet::catalog`](super::ConnectionSet::catalog) has the new ones.
    CatalogChanged {
        /// Its name.
        server: String,
    },
    /// A ready server's connection ended.
    Disconnected {
        /// Its name.
        server: String,
        /// Why (exit status, closed connection, expired session).
        reason: String,
    },
    /// A restart is about to be tried after `delay`.
    Reconnecting {
        /// Its name.
        server: String,
        /// 1 for the first try.
        attempt: u32,
        /// The wait before this try.
        delay: Duration,
    },
    /// A reload could not restart a server whose connection identity changed: it keeps its
    /// previous connection and configuration.
    RestartFailed {
        /// Its name.
        server: String,
        /// Why the new connection could not be made.
        reason: String,
    },
    /// A `startup = "lazy"` server is listed from the catalog cache and not started.
    Deferred {
        /// Its name.
        server: String,
        /// How many tools the cache lists for it.
        tools: usize,
    },
    /// Something the host should warn about (a catalog cache ignored, a server listing more
    /// items than the cap …); nothing failed.
    Warning {
        /// The server concerned, if one is.
        server: Option<String>,
        /// What happened.
        message: String,
    },
    /// A restarted server is ready again (its catalog re-listed).
    Reconnected {
        /// Its name.
        server: String,
    },
    /// A notification from a server (logging, progress not routed to a call, list changes …).
    Notification {
        /// Its name.
        server: String,
        /// The notification.
        notification: Notification,
    },
}

/// Where [`SetEvent`]s go. Called from the set's tasks: do not block.
pub type EventSink = Arc<dyn Fn(SetEvent) + Send + Sync>;
