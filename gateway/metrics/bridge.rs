//! The metrics `mcp-bridge serve` records, registered under their names, with one method per
//! thing that happens: a tool call forwarded (count, errors, latency per `server` and `tool`),
//! an upstream restarted, an upstream going up or down, an upstream's state and failed tries,
//! a downstream session opened and closed; and the OpenTelemetry MCP conventions' durations
//! ([`Operation`]): `mcp_server_operation_duration_seconds` (a downstream request, from the
//! gateway's forwarding to its answer), `mcp_client_operation_duration_seconds` (the gateway's
//! request to an upstream), `mcp_server_session_duration_seconds` (a downstream session) and
//! `mcp_client_session_duration_seconds` (a session of the shared connection set to an
//! upstream, from connect to close), named as the OpenTelemetry-to-Prometheus rules name
//! `mcp.server.operation.duration` (unit `s`), with the conventions' bucket boundaries
//! ([`MCP_DURATION_BUCKETS`]) and labels `mcp_method_name`, `gen_ai_tool_name` (a tool call's),
//! `gen_ai_prompt_name` (a `prompts/get`'s) and `error_type` (on failure: the JSON-RPC error
//! code, or `tool_error` for a result with `isError`; for an upstream session, `disconnected`
//! when the upstream ended it). The same observations go to a [`DurationsSink`] when one is set
//! (`mcp-bridge serve` sets one that records them through OpenTelemetry's metrics API): each
//! duration is measured once and recorded into both.
//!
//! Not here: deciding when these happen (the gateway calls them), serving the text (a
//! `/metrics` route on the HTTP server renders [`BridgeMetrics::render`]), OpenTelemetry itself
//! (the sink is the bridge's), or the sessions of per-session upstream connections
//! (`--per-session`): only the shared set's are timed.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::{CounterVec, GaugeVec, HistogramVec, Registry, LATENCY_BUCKETS};
use crate::client::connection_set::ServerState;
use crate::proto::jsonrpc::ErrorObject;

/// The bucket boundaries, in seconds, the OpenTelemetry MCP conventions advise for the
/// operation and session durations
/// ([mcp.md](https://github.com/open-telemetry/semantic-conventions-genai/blob/main/docs/gen-ai/mcp.md#metrics)).
pub const MCP_DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// How an MCP operation ended, as the conventions' `error.type` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// A result (no `error_type`).
    Ok,
    /// A tool result with `isError` (`tool_error`).
    ToolError,
    /// A JSON-RPC error with this code (its decimal text).
    Error(i32),
}

impl Ended {
    /// The `error_type` label: empty (absent, to Prometheus) for [`Ended::Ok`].
    pub fn error_type(self) -> Cow<'static, str> {
        match self {
            Ended::Ok => Cow::Borrowed(""),
            Ended::ToolError => Cow::Borrowed("tool_error"),
            Ended::Error(code) => match code {
                -32700 => Cow::Borrowed("-32700"),
                -32600 => Cow::Borrowed("-32600"),
                -32601 => Cow::Borrowed("-32601"),
                -32602 => Cow::Borrowed("-32602"),
                -32603 => Cow::Borrowed("-32603"),
                -32003 => Cow::Borrowed("-32003"),
                -32029 => Cow::Borrowed("-32029"),
                other => Cow::Owned(other.to_string()),
            },
        }
    }
}

impl Ended {
    /// How a request that got `answer` ended: [`Ended::Ok`], or its error's code.
    pub(crate) fn of<T>(answer: &Result<T, ErrorObject>) -> Ended {
        match answer {
            Ok(_) => Ended::Ok,
            Err(e) => Ended::Error(e.code.0),
        }
    }

    /// How a tool call that got `outcome` (a result, and whether it is a tool's failure,
    /// `isError`) ended.
    pub(crate) fn of_call<T>(outcome: &Result<(T, bool), ErrorObject>) -> Ended {
        match outcome {
            Ok((_, true)) => Ended::ToolError,
            answer => Ended::of(answer),
        }
    }
}

/// One MCP operation for the duration histograms: its method, what it targets by name (empty
/// when nothing) and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation<'a> {
    /// `mcp_method_name`.
    pub method: &'a str,
    /// The name the operation targets: a `tools/call`'s tool (`gen_ai_tool_name`), a
    /// `prompts/get`'s prompt (`gen_ai_prompt_name`); empty: none. Which label it is follows
    /// from the method ([`Operation::names`]).
    pub tool: &'a str,
    /// `error_type`.
    pub ended: Ended,
}

impl<'a> Operation<'a> {
    /// The `gen_ai_tool_name` and `gen_ai_prompt_name` values: the target under the label its
    /// method names, the other empty.
    pub fn names(&self) -> (&'a str, &'a str) {
        if self.method == "prompts/get" {
            ("", self.tool)
        } else {
            (self.tool, "")
        }
    }
}

/// How a session to an upstream ended, for `mcp_client_session_duration_seconds`' `error_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// Closed by the gateway (a reload replaced or removed the upstream): no `error_type`.
    Closed,
    /// The connection ended without the gateway closing it (the process exited, the HTTP
    /// session expired or the connection broke): `error_type="disconnected"`.
    Disconnected,
}

impl SessionEnd {
    /// The `error_type` label: empty (absent, to Prometheus) for [`SessionEnd::Closed`].
    pub fn error_type(self) -> &'static str {
        match self {
            SessionEnd::Closed => "",
            SessionEnd::Disconnected => "disconnected",
        }
    }
}

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
    /// `mcp_server_operation_duration_seconds{mcp_method_name,gen_ai_tool_name,gen_ai_prompt_name,error_type}`:
    /// the downstream requests the gateway forwarded, from forwarding to answer.
    pub server_operation_duration: Arc<HistogramVec<4>>,
    /// `mcp_client_operation_duration_seconds{mcp_method_name,gen_ai_tool_name,gen_ai_prompt_name,error_type}`:
    /// the gateway's requests to upstreams (a tool or prompt under its upstream name).
    pub client_operation_duration: Arc<HistogramVec<4>>,
    /// `mcp_server_session_duration_seconds`: the downstream sessions that ended.
    pub server_session_duration: Arc<HistogramVec<0>>,
    /// `mcp_client_session_duration_seconds{error_type}`: the gateway's sessions to its
    /// upstreams (the shared connection set's) that ended, from connect to close.
    pub client_session_duration: Arc<HistogramVec<1>>,
    /// When each upstream's current session started (its connect), by server name.
    upstream_sessions: Mutex<HashMap<String, Instant>>,
    /// The same observations for OpenTelemetry, when exporting ([`BridgeMetrics::set_durations_sink`]).
    durations_sink: OnceLock<Arc<dyn DurationsSink>>,
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
        let operation_labels = ["mcp_method_name", "gen_ai_tool_name", "gen_ai_prompt_name", "error_type"];
        let server_operation_duration = registry
            .histogram(
                "mcp_server_operation_duration_seconds",
                "MCP request duration as observed on the receiver (the gateway, for the downstream requests it forwards) \
                 from the time it was received until the result was sent (OpenTelemetry mcp.server.operation.duration).",
                operation_labels,
                &MCP_DURATION_BUCKETS,
            )
            .expect(taken);
        let client_operation_duration = registry
            .histogram(
                "mcp_client_operation_duration_seconds",
                "MCP request duration as observed on the sender (the gateway, for its requests to upstreams) from the \
                 time it was sent until the response was received (OpenTelemetry mcp.client.operation.duration).",
                operation_labels,
                &MCP_DURATION_BUCKETS,
            )
            .expect(taken);
        let server_session_duration = registry
            .histogram(
                "mcp_server_session_duration_seconds",
                "The duration of the downstream MCP sessions that ended (OpenTelemetry mcp.server.session.duration).",
                [],
                &MCP_DURATION_BUCKETS,
            )
            .expect(taken);
        let client_session_duration = registry
            .histogram(
                "mcp_client_session_duration_seconds",
                "The duration of the gateway's sessions to its upstream servers that ended, from connect to close \
                 (OpenTelemetry mcp.client.session.duration); error_type=\"disconnected\" when the upstream ended it.",
                ["error_type"],
                &MCP_DURATION_BUCKETS,
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
            server_operation_duration,
            client_operation_duration,
            server_session_duration,
            client_session_duration,
            upstream_sessions: Mutex::new(HashMap::new()),
            durations_sink: OnceLock::new(),
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

    /// A downstream request the gateway forwarded ended, `elapsed` after it was received.
    pub fn server_operation(&self, operation: Operation<'_>, elapsed: Duration) {
        let error_type = operation.ended.error_type();
        let (tool, prompt) = operation.names();
        self.server_operation_duration.observe_duration([operation.method, tool, prompt, &error_type], elapsed);
        if let Some(sink) = self.durations_sink.get() {
            sink.operation(Side::Server, operation, elapsed);
        }
    }

    /// A request of the gateway to an upstream ended, `elapsed` after it was sent.
    pub fn client_operation(&self, operation: Operation<'_>, elapsed: Duration) {
        let error_type = operation.ended.error_type();
        let (tool, prompt) = operation.names();
        self.client_operation_duration.observe_duration([operation.method, tool, prompt, &error_type], elapsed);
        if let Some(sink) = self.durations_sink.get() {
            sink.operation(Side::Client, operation, elapsed);
        }
    }

    /// A session to the upstream `server` is connected (`elapsed` ago: connecting and
    /// initializing took that long). A session of `server` still open is taken as closed by
    /// the gateway now (a reload replaced it).
    pub fn upstream_session_started(&self, server: &str, elapsed: Duration) {
        let now = Instant::now();
        let started = now.checked_sub(elapsed).unwrap_or(now);
        let replaced =
            self.upstream_sessions.lock().unwrap_or_else(|e| e.into_inner()).insert(server.to_owned(), started);
        if let Some(replaced) = replaced {
            self.client_session_ended(SessionEnd::Closed, now.saturating_duration_since(replaced));
        }
    }

    /// The session to the upstream `server` ended as `end`; nothing when none was open.
    pub fn upstream_session_ended(&self, server: &str, end: SessionEnd) {
        let started = self.upstream_sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(server);
        if let Some(started) = started {
            self.client_session_ended(end, started.elapsed());
        }
    }

    fn client_session_ended(&self, end: SessionEnd, elapsed: Duration) {
        self.client_session_duration.observe_duration([end.error_type()], elapsed);
        if let Some(sink) = self.durations_sink.get() {
            sink.session(Side::Client, end.error_type(), elapsed);
        }
    }

    /// Sends every duration observed from now on to `sink` as well (OpenTelemetry's
    /// histograms, when `mcp-bridge serve` exports metrics); the same observation feeds both,
    /// the call is timed once. Only the first sink set is kept.
    pub fn set_durations_sink(&self, sink: Arc<dyn DurationsSink>) {
        let _ = self.durations_sink.set(sink);
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
        SessionGuard(self.clone(), Instant::now())
    }

    /// Every metric in the text exposition format 0.0.4 (serve it with
    /// [`CONTENT_TYPE`](super::CONTENT_TYPE)).
    pub fn render(&self) -> String {
        self.registry.render()
    }
}

/// Counts one downstream session in `mcp_bridge_downstream_sessions` while it lives, and its
/// duration in `mcp_server_session_duration_seconds` when it drops.
#[derive(Debug)]
#[must_use = "the session is counted only while the guard lives"]
pub struct SessionGuard(Arc<BridgeMetrics>, Instant);

impl Drop for SessionGuard {
    fn drop(&mut self) {
        let elapsed = self.1.elapsed();
        self.0.downstream_sessions.with([], |g| g.dec());
        self.0.server_session_duration.observe_duration([], elapsed);
        if let Some(sink) = self.0.durations_sink.get() {
            sink.session(Side::Server, "", elapsed);
        }
    }
}

/// Which side of MCP a duration was observed on: the gateway as a server (to its downstream
/// clients) or as a client (to its upstreams).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `mcp.server.*`.
    Server,
    /// `mcp.client.*`.
    Client,
}

/// Where the durations go besides the Prometheus histograms: OpenTelemetry's metrics API,
/// when `mcp-bridge serve` exports them over OTLP. Called on the call path: record and return,
/// never wait.
pub trait DurationsSink: Send + Sync + std::fmt::Debug {
    /// An operation ended, `elapsed` after it began.
    fn operation(&self, side: Side, operation: Operation<'_>, elapsed: Duration);
    /// A session ended, `elapsed` after it began; `error_type` empty when it ended well.
    fn session(&self, side: Side, error_type: &str, elapsed: Duration);
}
