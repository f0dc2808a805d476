//! The metrics `mcp-bridge serve` records, registered under their names, with one method per
//! thing that happens: a tool call forwarded (count, errors, latency per `server` and `tool`),
//! an upstream restarted, an upstream going up or down, an upstream's state and failed tries,
//! a downstream session opened and closed.
//!
//! Not here: deciding when these happen (the gateway calls them) or serving the text (a
//! `/metrics` route on the HTTP server renders [`BridgeMetrics::render`]).

use std::sync::Arc;
use std::time::Duration;

use super::{CounterVec, GaugeVec, HistogramVec, Registry, LATENCY_BUCKETS};
use crate::client::connection_set::ServerState;

/// The bridge's metrics and the registry they live in (more may be registered there).
#[derive(Debug)]
pub struct BridgeMetrics {
    registry: Registry,
    /// `mcp_bridge_calls_total{server,tool}`.
    pub calls: Arc<CounterVec<2>>,
    /// `mcp_bridge_call_errors_total{server,tool}`.
    pub call_errors: Arc<CounterVec<2>>,
    /// `mcp_bridge_call_duration_seconds{server,tool}`.
    pub call_duration: Arc<HistogramVec<2>>,
    /// `mcp_bridge_upstream_restarts_total{server}`.
    pub upstream_restarts: Arc<CounterVec<1>>,
    /// `mcp_bridge_downstream_sessions`.
    pub downstream_sessions: Arc<GaugeVec<0>>,
    /// `mcp_bridge_upstream_up{server}`.
    pub upstream_up: Arc<GaugeVec<1>>,
    /// `mcp_bridge_upstream_state{server,state}`: 1 for the state the upstream is in, 0 for
    /// every other ([`ServerState::as_str`]: `starting`, `ready`, `retrying`, `failed` …).
    pub upstream_state: Arc<GaugeVec<2>>,
    /// `mcp_bridge_upstream_failed_attempts{server}`: tries to start the upstream that failed
    /// since it was last ready.
    pub upstream_failed_attempts: Arc<GaugeVec<1>>,
    /// `mcp_bridge_notifications_dropped_total`: messages to downstream sessions dropped
    /// because a session's queue was full ([`crate::server::Server::notifications_dropped`]) or
    /// its standalone GET stream was not open and its queue full
    /// ([`crate::gateway::Gateway::observe_http`]).
    pub notifications_dropped: Arc<CounterVec<0>>,
    /// `mcp_bridge_policy_denied_total{kind}`: requests the policy refused, by target kind
    /// (`tool`, `prompt`, `resource`).
    pub policy_denied: Arc<CounterVec<1>>,
    /// `mcp_bridge_rate_limited_total{limit}`: calls refused by a rate limit, by the limit's
    /// name.
    pub rate_limited: Arc<CounterVec<1>>,
    /// `mcp_bridge_rate_limit_store_errors_total`: calls checked against the replica's own
    /// buckets because the shared store (Redis) could not be asked.
    pub rate_limit_store_errors: Arc<CounterVec<0>>,
    /// `mcp_bridge_audit_dropped_total`: audit lines dropped because the writer was behind.
    pub audit_dropped: Arc<CounterVec<0>>,
    /// `mcp_bridge_live_dropped_total`: live traffic items a listener lost because it fell
    /// behind ([`crate::gateway::live`]).
    pub live_dropped: Arc<CounterVec<0>>,
}

impl Default for BridgeMetrics {
    fn default() -> Self {
        BridgeMetrics::new(Registry::new())
    }
}

/// How a forwarded call ended, for [`BridgeMetrics::record_call`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// A result that is not an error.
    Ok,
    /// A JSON-RPC error, a transport failure, a timeout, or a result with `isError: true`:
    /// counted in `mcp_bridge_call_errors_total`.
    Error,
}

impl BridgeMetrics {
    /// Registers the bridge's metrics in `registry`.
    ///
    /// # Panics
    /// When `registry` already holds a metric of one of these names (a programming error:
    /// one `BridgeMetrics` per registry).
    pub fn new(registry: Registry) -> BridgeMetrics {
        let taken = "the bridge metrics are registered once per registry";
        let calls = registry
            .counter("mcp_bridge_calls_total", "Tool calls forwarded to an upstream server.", ["server", "tool"])
            .expect(taken);
        let call_errors = registry
            .counter(
                "mcp_bridge_call_errors_total",
                "Forwarded tool calls that ended in an error (JSON-RPC error, transport failure, timeout or isError result).",
                ["server", "tool"],
            )
            .expect(taken);
        let call_duration = registry
            .histogram(
                "mcp_bridge_call_duration_seconds",
                "Time from forwarding a tool call to its answer, in seconds.",
                ["server", "tool"],
                &LATENCY_BUCKETS,
            )
            .expect(taken);
        let upstream_restarts = registry
            .counter("mcp_bridge_upstream_restarts_total", "Restarts of an upstream server.", ["server"])
            .expect(taken);
        let downstream_sessions =
            registry.gauge("mcp_bridge_downstream_sessions", "Downstream MCP sessions open now.", []).expect(taken);
        let upstream_up = registry
            .gauge(
                "mcp_bridge_upstream_up",
                "Whether an upstream server is connected and initialized (1) or not (0).",
                ["server"],
            )
            .expect(taken);
        let upstream_state = registry
            .gauge(
                "mcp_bridge_upstream_state",
                "The state an upstream server is in (1), and those it is not in (0).",
                ["server", "state"],
            )
            .expect(taken);
        let upstream_failed_attempts = registry
            .gauge(
                "mcp_bridge_upstream_failed_attempts",
                "Tries to start an upstream server that failed since it was last ready.",
                ["server"],
            )
            .expect(taken);
        let notifications_dropped = registry
            .counter(
                "mcp_bridge_notifications_dropped_total",
                "Messages to downstream sessions dropped because a session's queue was full (its client reads \
                 more slowly than they come, or has not opened its GET stream).",
                [],
            )
            .expect(taken);
        let policy_denied = registry
            .counter(
                "mcp_bridge_policy_denied_total",
                "Requests refused by the gateway's policy, by target kind.",
                ["kind"],
            )
            .expect(taken);
        let rate_limited = registry
            .counter("mcp_bridge_rate_limited_total", "Calls refused by a rate limit, by the limit's name.", ["limit"])
            .expect(taken);
        let rate_limit_store_errors = registry
            .counter(
                "mcp_bridge_rate_limit_store_errors_total",
                "Calls checked against this replica's own rate-limit buckets because the shared store (Redis) could not be asked.",
                [],
            )
            .expect(taken);
        let audit_dropped = registry
            .counter(
                "mcp_bridge_audit_dropped_total",
                "Audit log lines dropped because the writer was behind (its queue full); calls never wait for it.",
                [],
            )
            .expect(taken);
        let live_dropped = registry
            .counter(
                "mcp_bridge_live_dropped_total",
                "Live traffic items a listener (the console's traffic view) lost by falling behind; calls never wait for it.",
                [],
            )
            .expect(taken);
        BridgeMetrics {
            registry,
            audit_dropped,
            live_dropped,
            policy_denied,
            rate_limited,
            rate_limit_store_errors,
            notifications_dropped,
            calls,
            call_errors,
            call_duration,
            upstream_restarts,
            downstream_sessions,
            upstream_up,
            upstream_state,
            upstream_failed_attempts,
        }
    }

    /// The registry, to render or to register more metrics in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// One forwarded tool call: counted, its latency observed, and counted as an error unless
    /// `outcome` is [`CallOutcome::Ok`].
    pub fn record_call(&self, server: &str, tool: &str, elapsed: Duration, outcome: CallOutcome) {
        let labels = [server, tool];
        self.calls.inc(labels);
        if outcome == CallOutcome::Error {
            self.call_errors.inc(labels);
        }
        self.call_duration.observe_duration(labels, elapsed);
    }

    /// The policy refused a request for a target of `kind`.
    pub fn policy_denied(&self, kind: &str) {
        self.policy_denied.inc([kind]);
    }

    /// The rate limit `limit` refused a call.
    pub fn rate_limited(&self, limit: &str) {
        self.rate_limited.inc([limit]);
    }

    /// An upstream server was restarted.
    pub fn upstream_restarted(&self, server: &str) {
        self.upstream_restarts.inc([server]);
    }

    /// An upstream server is up (connected and initialized) or down.
    pub fn set_upstream_up(&self, server: &str, up: bool) {
        self.upstream_up.set([server], i64::from(up));
    }

    /// An upstream server is in `state`, after `failed_attempts` failed tries to start it since
    /// it was last ready.
    pub fn set_upstream_state(&self, server: &str, state: ServerState, failed_attempts: u32) {
        for each in ServerState::ALL {
            self.upstream_state.set([server, each.as_str()], i64::from(each == state));
        }
        self.upstream_failed_attempts.set([server], i64::from(failed_attempts));
    }

    /// An upstream server left the configuration: its `up`, state and restart series are
    /// forgotten (its call series stay, as counters a scraper has seen should not vanish while
    /// tools of that name may come back).
    pub fn forget_upstream(&self, server: &str) {
        self.upstream_up.remove([server]);
        self.upstream_restarts.remove([server]);
        for each in ServerState::ALL {
            self.upstream_state.remove([server, each.as_str()]);
        }
        self.upstream_failed_attempts.remove([server]);
    }

    /// A downstream session opened; the session count goes down again when the guard drops.
    pub fn session_opened(self: &Arc<Self>) -> SessionGuard {
        self.downstream_sessions.with([], |g| g.inc());
        SessionGuard(self.clone())
    }

    /// Every metric in the text exposition format 0.0.4 (serve it with
    /// [`CONTENT_TYPE`](super::CONTENT_TYPE)).
    pub fn render(&self) -> String {
        self.registry.render()
    }
}

/// Counts one downstream session in `mcp_bridge_downstream_sessions` while it lives.
#[derive(Debug)]
#[must_use = "the session is counted only while the guard lives"]
pub struct SessionGuard(Arc<BridgeMetrics>);

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.0.downstream_sessions.with([], |g| g.dec());
    }
}
