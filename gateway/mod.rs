//! The gateway: the servers of a [`ConnectionSet`] served as one MCP server, through the
//! server layer's forwarding ([`crate::server::forward`]).
//!
//! - Names: tools and prompts under their set-qualified names (`mcp__SERVER__NAME`, at most
//!   64 bytes) or their own, per [`PrefixMode`]; resource URIs and templates under
//!   `SLUG+URI` (the server's name as a URI scheme prefix: reversible, and a template stays a
//!   template) when prefixed. `View` is the downstream catalog, rebuilt whenever the set's
//!   catalog changes; `list_changed` goes to every downstream session for the lists that
//!   changed.
//! - Routing: `tools/call`, `prompts/get`, `resources/read` and `completion/complete` reach the
//!   server that listed the name, URI or template, with the upstream's own name; an upstream
//!   JSON-RPC error passes through as it is, and so does a tool result, as written, less its
//!   stamps (`tool_result`; decoded only where its URIs are mapped); a bridge-side failure (the server is down, went
//!   away mid-call, timed out) is -32603 naming the server. A call is never replayed.
//! - Server-to-client requests (sampling, elicitation, roots) from an upstream are answered by
//!   the downstream session whose request caused them ([`Callers`]; the client layer attributes
//!   each to the upstream request it came with), never broadcast, each within a deadline
//!   ([`DEFAULT_CLIENT_REQUEST_DEADLINE`], [`Callers::with_deadline`]): a downstream client that
//!   drops its stream and never answers fails the upstream's request then, not never; one whose
//!   session ends fails it at once. One that cannot be attributed
//!   (a shared stdio upstream with calls of two sessions in flight) is refused with an error
//!   the upstream sees; an unrelated `roots/list` gets the bridge's own roots: none. Over a
//!   2026-07-28 downstream, such a request becomes a multi-round-trip round: the forwarded
//!   request is re-run with the answer, so the upstream sees its call made again.
//! - Upstream log messages reach every downstream session at or above its `logging/setLevel`,
//!   with the server's name as the logger.
//! - Sharing: an upstream is shared by every downstream session, unless it is `per-session`
//!   ([`PerSession`]): then each handshake-era downstream session gets its own connection (its
//!   own child), started on the session's first request to it and stopped when the session
//!   ends; a reload of the configuration moves every session's own connections too. The
//!   shared connection still serves the listings and the 2026-07-28 requests, which belong to
//!   no session.
//!
//! - Policy and rate limits: [`Gateway::set_policy`] ([`policy`]: what a caller lists and
//!   may use, a refusal -32003 naming the rule) and [`Gateway::set_rate_limits`]
//!   ([`rate_limit`]: token buckets per caller and tool, a refusal -32029 with
//!   `retryAfterMs`), the caller being the request's verified principal; beside them the
//!   limits on requests of [`Gateway::set_request_limits`], which an HTTP listener asks
//!   ([`Gateway::within_request_limits`]) before it reads a request.
//! - Virtual servers: [`Gateway::endpoint_server`] ([`endpoint`]): more downstream servers over
//!   the same upstream connections, each offering a part of the view (renamed as it says)
//!   under its own policy or the gateway's, and its own rate limits besides the gateway's;
//!   every request is served through a `Scope`, the view, policy and limits of the endpoint it
//!   came through.
//! - Audit: one line per `tools/call`, `prompts/get` and `resources/read` ([`audit`]), a
//!   cancelled one included.
//! - Metrics: [`BridgeMetrics`] ([`metrics`]), the MCP conventions' operation and session
//!   durations among them, also handed to a `DurationsSink` when the application sets one.
//!
//! Not here: listening, signals, reloading a configuration file, the command line: the
//! application does that (`mcp-bridge serve` in the `mcp-bridge` package is one).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use self::metrics::bridge::{BridgeMetrics, CallOutcome, Ended, Operation, SessionEnd};
use crate::client::config::{InProcess, McpConfig, ServerConfig};
use crate::client::connection_set::{
    qualify, ConnectionSet, MergedCatalog, ServerState, SetCallOptions, SetError, SetEvent, SetOptions,
};
use crate::client::{
    current_caller, decode_tool_result, with_caller, CallerId, ClientError, ElicitationModes, ServerNotification,
};
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject};
use crate::proto::mcp_types::{
    CallToolRequestParams, CallToolResult, Complete, CompleteRequestParams, CompletionReference, ContentBlock,
    CreateMessageRequestParams, ElicitRequestParams, GetPrompt, GetPromptRequestParams, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingMessageNotificationParams, Prompt,
    ReadResource, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResultMeta, Root, Tool,
};
use crate::server::forward::{ForwardFuture, Forwarded, Forwarder, Forwarding as Advertised};
use crate::server::{ClientRequestError, Context, Server, ServerBuilder};
use crate::transport::boxed::BoxTransport;
use crate::transport::{inproc, Limits};

use self::audit::{AuditLog, Entry as AuditEntry, Outcome as AuditOutcome};
use self::endpoint::{Endpoint, Served};
use self::live::{Listener, LiveFeed};
use self::policy::{Decision, Kind, Policy};
use self::rate_limit::{Limit, LimitsInForce, Refused, SharedBuckets};
use self::tool_result::ResultCheck;

pub mod audit;
mod callers;
pub mod console;
pub mod endpoint;
pub mod live;
pub mod metrics;
mod pending;
mod per_session;
pub mod policy;
pub mod rate_limit;
#[cfg(feature = "redis")]
pub mod rate_limit_redis;
mod routing;
#[cfg(feature = "config")]
pub mod settings;
mod tool_result;
mod view;

pub use crate::proto::printable::printable;
pub use callers::{Callers, DEFAULT_CLIENT_REQUEST_DEADLINE};
use per_session::*;
pub use per_session::{PerSession, DEFAULT_MAX_PER_SESSION_SETS};
use routing::*;
pub use routing::{DENIED, RATE_LIMITED};
pub use view::PrefixMode;
use view::*;

pub use pending::DEFAULT_MAX_PENDING_CLIENT_REQUESTS;

/// An upstream served by `server` in this very process: each connection (a start or a
/// restart) gets a new in-process pair whose server end `server` serves until it closes. No
/// child process, no socket: how a host puts its own servers behind the gateway beside others.
pub fn in_process(name: &str, server: Server) -> ServerConfig {
    let connector = InProcess::new(move || {
        let (client_end, server_end) = inproc::pair(Limits::default());
        let serving = server.serve(BoxTransport::new(server_end));
        crate::transport::task::spawn(async move {
            let _ = serving.await;
        });
        client_end
    });
    ServerConfig::in_process(name, connector)
}

/// What the downstream server advertises: resources, prompts and completions when an upstream
/// offers them.
fn advertised(set: &ConnectionSet) -> Advertised {
    let (mut resources, mut prompts, mut completions) = (false, false, false);
    for name in set.servers() {
        if let Some((caps, _)) = set.server_offer(&name) {
            resources |= caps.resources.is_some();
            prompts |= caps.prompts.is_some();
            completions |= caps.completions.is_some();
        }
    }
    Advertised::new(resources, prompts, completions)
}

/// The upstreams' instructions, each under its server's name.
fn merged_instructions(set: &ConnectionSet) -> Option<String> {
    let parts: Vec<String> = set
        .servers()
        .into_iter()
        .filter_map(|name| {
            let (_, instructions) = set.server_offer(&name)?;
            let text = instructions?;
            let text = text.trim();
            (!text.is_empty()).then(|| format!("## {name}\n{text}"))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The gateway's state, shared by every downstream session.
pub struct Gateway {
    set: ConnectionSet,
    callers: Arc<Callers>,
    per_session: PerSession,
    prefix: PrefixMode,
    timeout: Option<Duration>,
    view: RwLock<Arc<View>>,
    server: OnceLock<Server>,
    /// The HTTP listener serving the gateway, for the messages its streams dropped.
    #[cfg(feature = "http")]
    http: Mutex<Vec<crate::transport::sse_http::HttpService>>,
    metrics: Arc<BridgeMetrics>,
    /// The rules of [`Gateway::set_policy`]; `None`: everything allowed, nothing asked.
    policy: RwLock<Option<Arc<Policy>>>,
    /// The limits of [`Gateway::set_rate_limits`] and their buckets.
    call_limits: LimitsInForce,
    /// The limits of [`Gateway::set_request_limits`] and their buckets.
    request_limits: LimitsInForce,
    /// The store of [`Gateway::share_rate_limits`]: the buckets shared with other replicas.
    shared_buckets: OnceLock<Arc<dyn SharedBuckets>>,
    /// The audit log of [`Gateway::set_audit`], if any.
    audit: OnceLock<AuditLog>,
    /// The calls as they end, for [`Gateway::live`].
    live: LiveFeed,
    /// The virtual servers of [`Gateway::endpoint_server`].
    endpoints: RwLock<Vec<Arc<Served>>>,
}

/// What one request is served through: the gateway's own endpoint (`endpoint` `None`) or one
/// of its virtual servers, with the view and the policy it has now.
pub(crate) struct Scope {
    view: Arc<View>,
    policy: Option<Arc<Policy>>,
    endpoint: Option<Arc<Served>>,
}

impl Scope {
    /// The name of the virtual server served through, if any.
    fn endpoint_name(&self) -> Option<&str> {
        self.endpoint.as_ref().map(|e| e.name.as_str())
    }

    /// The key of the session of `context` among every endpoint's sessions (per-session
    /// upstreams are by it).
    fn session_key(&self, context: &Context) -> Option<u64> {
        let session = context.session_id()?;
        Some(self.endpoint.as_ref().map_or(session, |e| e.session_key(session)))
    }

    /// The refusal of a request for the `kind` `asked` (its name here) that this scope's view
    /// lacks, when the gateway's own view has it as `name` of `server`: -32003 naming the
    /// endpoint and why.
    fn hidden(&self, kind: Kind, asked: &str, server: &str, name: &str) -> Option<ErrorObject> {
        let served = self.endpoint.as_ref()?;
        let endpoint = served.endpoint();
        let why = match endpoint.why_hidden(kind, server, name) {
            Some(why) => why,
            None => match endpoint.renames.iter().find(|r| r.kind == kind && r.target == format!("{server}/{name}")) {
                Some(rename) => format!("renamed {:?}", rename.name.as_deref().unwrap_or(asked)),
                None => return None,
            },
        };
        let message = format!(
            "mcp-bridge: {} {} is not offered by endpoint {}: {}",
            kind.as_str(),
            printable(asked),
            printable(&endpoint.name),
            printable(&why)
        );
        let error = ErrorObject::new(DENIED, message);
        let data = serde_json::json!({"endpoint": endpoint.name, "kind": kind.as_str(), "name": asked, "reason": why});
        Some(error.clone().with_data(&data).unwrap_or(error))
    }
}

impl Gateway {
    /// A gateway over `set` (started), with the view of its catalog now.
    ///
    /// # Errors
    /// When two upstreams offer the same name and `prefix` is [`PrefixMode::Never`].
    pub fn new(
        set: ConnectionSet,
        callers: Arc<Callers>,
        per_session: PerSession,
        prefix: PrefixMode,
        timeout: Option<Duration>,
    ) -> Result<Gateway, String> {
        let view = View::build(&set.catalog(), prefix)?;
        Ok(Gateway {
            set,
            callers,
            per_session,
            prefix,
            timeout,
            view: RwLock::new(Arc::new(view)),
            server: OnceLock::new(),
            #[cfg(feature = "http")]
            http: Mutex::default(),
            metrics: Arc::default(),
            policy: RwLock::new(None),
            call_limits: LimitsInForce::default(),
            request_limits: LimitsInForce::default(),
            shared_buckets: OnceLock::new(),
            audit: OnceLock::new(),
            live: LiveFeed::default(),
            endpoints: RwLock::default(),
        })
    }

    /// Who may list and use what from now on (`None`: everyone everything): every session,
    /// live ones too, sees the new rules on its next list or call; sessions are told their
    /// lists changed (`list_changed`) when the rules did.
    pub fn set_policy(&self, policy: Option<Policy>) {
        let policy = policy.map(Arc::new);
        let old = std::mem::replace(&mut *self.policy.write().expect("policy lock"), policy.clone());
        if old != policy {
            // The endpoints with a policy of their own see no change.
            let governed: Vec<Server> = self
                .endpoints()
                .iter()
                .filter(|e| e.endpoint().policy.is_none())
                .filter_map(|e| e.server.get().cloned())
                .collect();
            for server in self.server.get().into_iter().chain(&governed) {
                for list in ["tools", "prompts", "resources"] {
                    server.list_changed(list);
                }
            }
        }
    }

    /// The rate limits on tool calls from now on (none: no limit). Each limit equal to one in
    /// force keeps its buckets (a reload that changed another one does not refill them); a
    /// limit added or changed starts full ([`rate_limit::RateLimiter::reloaded`]).
    pub fn set_rate_limits(&self, limits: Vec<Limit>) {
        self.call_limits.set(limits);
    }

    /// The rate limits in force (see [`Gateway::set_rate_limits`]).
    pub fn rate_limits(&self) -> Vec<Limit> {
        self.call_limits.limits()
    }

    /// The rate limits on requests from now on (none: no limit), asked by
    /// [`Gateway::within_request_limits`], reloaded as [`Gateway::set_rate_limits`] reloads
    /// (unchanged limits keep their buckets). Kept in this process's memory, also when the
    /// call limits are shared ([`Gateway::share_rate_limits`]).
    pub fn set_request_limits(&self, limits: Vec<Limit>) {
        self.request_limits.set(limits);
    }

    /// The rate limits on requests in force (see [`Gateway::set_request_limits`]).
    pub fn request_limits(&self) -> Vec<Limit> {
        self.request_limits.limits()
    }

    /// Takes a token for a request of `caller` from every request limit that applies (those
    /// without tools: asked with no server and tool); when one is empty, takes none and says
    /// which, counted in `mcp_bridge_rate_limited_total{limit}`. An HTTP listener's
    /// `RequestLimit` hook asks this for every request. Without request limits, one atomic
    /// load and nothing else.
    ///
    /// # Errors
    /// [`Refused`]: a bucket is empty.
    pub fn within_request_limits(&self, caller: Option<&crate::auth::Principal>) -> Result<(), Refused> {
        self.request_limits.check(caller, "", "", Instant::now()).inspect_err(|refused| {
            self.metrics.rate_limited(&refused.limit);
        })
    }

    /// Keeps the rate limits' buckets in `store`, shared with the other replicas using it,
    /// from now on (see [`rate_limit::SharedBuckets`]; `rate_limit_redis::RedisBuckets` with
    /// feature `redis`), instead of in this process's memory. When the store cannot be asked,
    /// a call is checked against this replica's own buckets instead (fail open to the local
    /// limit: at worst each replica allows the whole budget), and
    /// `mcp_bridge_rate_limit_store_errors_total` counts it. Set once: `false` if a store was
    /// set already.
    pub fn share_rate_limits(&self, store: Arc<dyn SharedBuckets>) -> bool {
        self.shared_buckets.set(store).is_ok()
    }

    /// Takes a token for the caller of `context` calling `tool` of `server` from every limit
    /// that applies, in this process's buckets; the error naming the limit and when to retry
    /// when one is empty.
    fn within_limits(&self, context: &Context, server: &str, tool: &str) -> Result<(), ErrorObject> {
        let checked = self.call_limits.check(context.principal(), server, tool, Instant::now());
        self.refusal(checked)
    }

    /// [`Gateway::within_limits`] for the limits of the endpoint the call came through, if it
    /// has any (its own buckets, in memory).
    fn within_endpoint_limits(
        &self,
        scope: &Scope,
        context: &Context,
        server: &str,
        tool: &str,
    ) -> Result<(), ErrorObject> {
        let Some(served) = scope.endpoint.as_ref() else { return Ok(()) };
        let checked = served.limits.check(context.principal(), server, tool, Instant::now());
        self.refusal(checked)
    }

    /// [`Gateway::within_limits`] in the buckets of `shared` (see
    /// [`Gateway::share_rate_limits`]), or in this process's when `shared` cannot be asked.
    async fn within_shared_limits(
        &self,
        shared: &dyn SharedBuckets,
        context: &Context,
        server: &str,
        tool: &str,
    ) -> Result<(), ErrorObject> {
        let buckets = self.call_limits.claim(context.principal(), server, tool);
        if buckets.is_empty() {
            return Ok(());
        }
        let checked = match shared.take(buckets).await {
            Ok(checked) => checked,
            Err(_) => {
                self.metrics.rate_limit_store_errors.inc([]);
                self.call_limits.check(context.principal(), server, tool, Instant::now())
            }
        };
        self.refusal(checked)
    }

    /// A check's refusal as the error the caller gets, counted.
    fn refusal(&self, checked: Result<(), Refused>) -> Result<(), ErrorObject> {
        let Err(refused) = checked else { return Ok(()) };
        self.metrics.rate_limited(&refused.limit);
        let retry_ms = u64::try_from(refused.retry_after.as_millis()).unwrap_or(u64::MAX).max(1);
        let message = format!(
            "mcp-bridge: rate limit {} reached for this caller; retry in {retry_ms} ms",
            printable(&refused.limit)
        );
        Err(ErrorObject::rate_limited(message, &refused.limit, retry_ms))
    }

    /// The rules in force (see [`Gateway::set_policy`]).
    pub fn policy(&self) -> Option<Arc<Policy>> {
        self.policy.read().expect("policy lock").clone()
    }

    /// Whether the caller of `context` may use the `kind` `name` of `server`; the error naming
    /// the deciding rule when not (`asked`: the name the client used).
    fn permit(
        &self,
        scope: &Scope,
        context: &Context,
        kind: Kind,
        server: &str,
        name: &str,
        asked: &str,
    ) -> Result<(), ErrorObject> {
        let Some(policy) = &scope.policy else { return Ok(()) };
        let decision = policy.decide(context.principal(), kind, server, name);
        if decision.allowed() {
            return Ok(());
        }
        self.metrics.policy_denied(kind.as_str());
        Err(denied(kind, asked, &decision))
    }

    /// The gateway's metrics (calls, errors, latency, restarts, sessions, upstream states).
    pub fn metrics(&self) -> &Arc<BridgeMetrics> {
        &self.metrics
    }

    /// The metrics as text (see [`BridgeMetrics::render`]), with every shared upstream's state
    /// and failed tries as they are now.
    pub fn render_metrics(&self) -> String {
        let endpoints = self.endpoints();
        let servers = self.server.get().into_iter().chain(endpoints.iter().filter_map(|e| e.server.get()));
        let dropped: u64 = servers.map(Server::notifications_dropped).sum();
        #[cfg(feature = "http")]
        let dropped = dropped
            + self
                .http
                .lock()
                .expect("http services lock")
                .iter()
                .map(|h| h.standalone_messages_dropped())
                .sum::<u64>();
        self.metrics.notifications_dropped.raise_to([], dropped);
        self.metrics.live_dropped.raise_to([], self.live.dropped());
        for status in self.set.summary().servers {
            self.metrics.set_upstream_state(&status.name, status.state, status.failed_attempts);
            self.metrics.set_upstream_up(&status.name, status.state == ServerState::Ready);
        }
        self.metrics.render()
    }

    /// Counts the messages `service`'s standalone streams drop (a GET stream not open: see
    /// [`HttpService::standalone_messages_dropped`](crate::transport::sse_http::HttpService::standalone_messages_dropped))
    /// in `mcp_bridge_notifications_dropped_total`, beside those of the sessions' own queues.
    /// Each service given is counted (the listener's, and each virtual server's): give each
    /// once.
    #[cfg(feature = "http")]
    pub fn observe_http(&self, service: &crate::transport::sse_http::HttpService) {
        self.http.lock().expect("http services lock").push(service.clone());
    }

    /// The shared upstreams.
    pub fn set(&self) -> &ConnectionSet {
        &self.set
    }

    /// Every shared upstream's state.
    pub fn set_summary(&self) -> crate::client::connection_set::StartupSummary {
        self.set.summary()
    }

    /// The per-session upstreams.
    pub fn per_session(&self) -> &PerSession {
        &self.per_session
    }

    /// The set that serves `server` for the request of `context`.
    async fn set_for(&self, server: &str, scope: &Scope, context: &Context) -> Result<ConnectionSet, ErrorObject> {
        match scope.session_key(context) {
            Some(session) if self.per_session.serves(server) => {
                // Boxed: starting a session's set is rare and its future large; inline, it
                // would be part of every forwarded call's future.
                Box::pin(self.per_session.set(session)).await.map_err(|e| match e {
                    SessionSetError::Start(e) => upstream_error(server, e),
                    SessionSetError::Full(max) => {
                        tracing::debug!(server = %printable(server), max, "per-session upstream refused: limit reached");
                        let message = format!(
                            "mcp-bridge: {} is per-session and {max} sessions already hold their own \
                             upstreams (the limit max_per_session_sets = {max}); try again when one ends",
                            printable(server)
                        );
                        let error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, message);
                        let data = serde_json::json!({"server": server, "limit": "max_per_session_sets", "max": max});
                        error.clone().with_data(&data).unwrap_or(error)
                    }
                })
            }
            _ => Ok(self.set.clone()),
        }
    }

    /// The downstream server, once built: list changes and log messages go through it.
    pub fn attach(&self, server: Server) {
        let _ = self.server.set(server);
    }

    /// The downstream server: `builder` (a host's name, version and anything else it sets)
    /// forwarding every request to the upstreams, advertising what they offer, with their
    /// instructions merged; attached to this gateway (see [`Gateway::attach`]), and stopping a
    /// session's per-session upstreams when that session closes. Serve it over any transport.
    ///
    /// # Errors
    /// When the server cannot be built (see [`ServerBuilder::build`]).
    pub fn server(self: &Arc<Self>, builder: ServerBuilder) -> Result<Server, String> {
        let closing = Arc::downgrade(self);
        let mut builder = builder.on_session_closed(move |session| {
            if let Some(gateway) = closing.upgrade() {
                gateway.per_session().close(session);
            }
        });
        if let Some(instructions) = merged_instructions(&self.set) {
            builder = builder.instructions(instructions);
        }
        let server = builder
            .forward(Forwarding(self.clone(), None), advertised(&self.set))
            .build()
            .map_err(|e| format!("cannot build the downstream server: {e}"))?;
        self.attach(server.clone());
        Ok(server)
    }

    /// The downstream server of the virtual server `endpoint` (see [`endpoint`]): as
    /// [`Gateway::server`], serving the part of the upstreams `endpoint` offers, under its
    /// policy (or the gateway's). Serve it on the endpoint's path (its own HTTP service);
    /// [`Gateway::set_endpoint`] changes what it offers.
    ///
    /// # Errors
    /// Another endpoint has its name or path, its view cannot be built (a rename collides), or
    /// the server cannot be built.
    pub fn endpoint_server(self: &Arc<Self>, endpoint: Endpoint, builder: ServerBuilder) -> Result<Server, String> {
        let served = {
            let mut endpoints = self.endpoints.write().expect("endpoints lock");
            if let Some(other) =
                endpoints.iter().map(|e| e.endpoint()).find(|e| e.name == endpoint.name || e.path == endpoint.path)
            {
                return Err(format!("endpoint {}: its name or path is that of endpoint {}", endpoint.name, other.name));
            }
            let view = self.view().restrict(&endpoint)?;
            let served = Arc::new(Served {
                name: endpoint.name.clone(),
                policy: RwLock::new(endpoint.policy.clone().map(Arc::new)),
                limits: LimitsInForce::new(endpoint.rate_limits.clone()),
                endpoint: RwLock::new(Arc::new(endpoint)),
                view: RwLock::new(Arc::new(view)),
                server: OnceLock::new(),
                ordinal: endpoints.len() as u64 + 1,
            });
            endpoints.push(served.clone());
            served
        };
        let closing = Arc::downgrade(self);
        let closed = Arc::downgrade(&served);
        let mut builder = builder.on_session_closed(move |session| {
            if let (Some(gateway), Some(served)) = (closing.upgrade(), closed.upgrade()) {
                gateway.per_session().close(served.session_key(session));
            }
        });
        if let Some(instructions) = merged_instructions(&self.set) {
            builder = builder.instructions(instructions);
        }
        let server = builder
            .forward(Forwarding(self.clone(), Some(served.clone())), advertised(&self.set))
            .build()
            .map_err(|e| format!("cannot build the server of endpoint {}: {e}", served.endpoint().name))?;
        let _ = served.server.set(server.clone());
        Ok(server)
    }

    /// The virtual servers, as they are described now.
    pub fn endpoint_list(&self) -> Vec<Arc<Endpoint>> {
        self.endpoints().iter().map(|e| e.endpoint()).collect()
    }

    fn endpoints(&self) -> Vec<Arc<Served>> {
        self.endpoints.read().expect("endpoints lock").clone()
    }

    /// The virtual server of `endpoint`'s name offers from now on what `endpoint` says, under
    /// its policy: its live sessions are told the lists that changed (`list_changed`), none is
    /// dropped. Its path, tokens and scopes are the listener's concern: a change of them here
    /// changes nothing on the wire.
    ///
    /// # Errors
    /// No endpoint has that name, or the new view cannot be built (the previous one stays).
    pub fn set_endpoint(&self, endpoint: Endpoint) -> Result<(), String> {
        let served = self.endpoints().into_iter().find(|e| e.endpoint().name == endpoint.name);
        let Some(served) = served else { return Err(format!("no endpoint {}", endpoint.name)) };
        served.update(Some(endpoint), &self.view(), false)
    }

    /// What a request through `endpoint` (`None`: the gateway's own) is served with now.
    fn scope(&self, endpoint: Option<&Arc<Served>>) -> Scope {
        match endpoint {
            None => Scope { view: self.view(), policy: self.policy(), endpoint: None },
            Some(served) => Scope {
                view: served.view(),
                policy: if served.endpoint().policy.is_some() { served.policy() } else { self.policy() },
                endpoint: Some(served.clone()),
            },
        }
    }

    /// Follows the shared set's events (from [`SetOptions::with_event_channel`]) until the set
    /// is gone: catalog changes rebuild the view and reach downstream sessions as
    /// `list_changed`, upstream log messages and resource updates are relayed, and the metrics
    /// track each upstream's state. Spawn it beside the server.
    pub async fn follow(self: Arc<Self>, mut events: tokio::sync::mpsc::UnboundedReceiver<SetEvent>) {
        while let Some(event) = events.recv().await {
            match event {
                SetEvent::CatalogChanged { .. } => self.refresh(),
                SetEvent::Notification { server, notification } => match ServerNotification::parse(&notification) {
                    ServerNotification::LoggingMessage(params) => self.relay_log(&server, params),
                    ServerNotification::ResourceUpdated(params) => self.relay_resource_updated(&server, &params.uri),
                    _ => {}
                },
                SetEvent::Disconnected { server, reason } => {
                    tracing::warn!(server = %printable(&server), reason = %printable(&reason), "upstream disconnected");
                    self.metrics().set_upstream_up(&server, false);
                    self.metrics().upstream_session_ended(&server, SessionEnd::Disconnected);
                }
                SetEvent::Ready { server, elapsed, .. } => {
                    self.metrics().set_upstream_up(&server, true);
                    self.metrics().upstream_session_started(&server, elapsed);
                }
                SetEvent::Disabled { server } => self.metrics().upstream_session_ended(&server, SessionEnd::Closed),
                SetEvent::Reconnecting { server, attempt, delay } => {
                    let server = printable(&server);
                    tracing::info!(server = %printable(&server), attempt, delay_ms = delay.as_millis() as u64, "restarting upstream")
                }
                SetEvent::Reconnected { server } => {
                    tracing::info!(server = %printable(&server), "upstream restarted");
                    self.metrics().upstream_restarted(&server);
                    self.metrics().set_upstream_up(&server, true);
                    self.metrics().upstream_session_started(&server, Duration::ZERO);
                    self.refresh();
                }
                SetEvent::RestartFailed { server, reason } => {
                    let (server, reason) = (printable(&server), printable(&reason));
                    tracing::warn!(server = %printable(&server), reason = %printable(&reason), "upstream kept its previous connection: the changed one did not start")
                }
                SetEvent::Warning { server, message } => {
                    tracing::warn!(server = server.as_deref().map(printable).as_deref(), "{}", printable(&message))
                }
                SetEvent::Failed { server, reason, .. } => {
                    tracing::warn!(server = %printable(&server), reason = %printable(&reason), "upstream failed");
                    self.metrics().set_upstream_up(&server, false);
                }
                _ => {}
            }
        }
    }

    pub(crate) fn view(&self) -> Arc<View> {
        self.view.read().expect("view lock").clone()
    }

    /// Rebuilds the view after the set's catalog changed and tells the downstream sessions
    /// which lists changed. A `never` collision keeps the previous view (and is logged).
    pub fn refresh(&self) {
        let new = match View::build(&self.set.catalog(), self.prefix) {
            Ok(view) => view,
            Err(e) => {
                tracing::warn!("catalog change ignored: {}", printable(&e.to_string()));
                return;
            }
        };
        let old = std::mem::replace(&mut *self.view.write().expect("view lock"), Arc::new(new));
        let new = self.view();
        for served in self.endpoints() {
            if let Err(e) = served.update(None, &new, false) {
                tracing::warn!("catalog change ignored by an endpoint: {}", printable(&e));
            }
        }
        let Some(server) = self.server.get() else { return };
        if old.tools != new.tools {
            server.list_changed("tools");
        }
        if old.prompts != new.prompts {
            server.list_changed("prompts");
        }
        if old.resources != new.resources || old.templates != new.templates {
            server.list_changed("resources");
        }
    }

    /// An upstream's log message, relayed to the downstream sessions that want it.
    pub fn relay_log(&self, server_name: &str, params: LoggingMessageNotificationParams) {
        let Some(server) = self.server.get() else { return };
        let logger = match &params.logger {
            Some(logger) => format!("{server_name}/{logger}"),
            None => server_name.to_owned(),
        };
        server.log(params.level, Some(&logger), params.data);
    }

    /// An upstream resource changed: tell the downstream sessions under its downstream URI.
    pub fn relay_resource_updated(&self, server_name: &str, uri: &str) {
        let Some(server) = self.server.get() else { return };
        server.resource_updated(&self.view().map_uri(server_name, uri));
    }

    /// A downstream `tools/call`, its duration observed (labelled with the tool's name when
    /// the view lists it).
    ///
    /// The one function of the call's path that owns what it is given; those below borrow it.
    /// An async fn keeps its arguments for its whole life, so a `Context` or the decoded params
    /// passed down by value would be held again by each future of the chain, and this one, the
    /// largest, is moved whole into its box on every call.
    pub(super) async fn call_tool(
        self: Arc<Self>,
        scope: Scope,
        params: Option<Body>,
        context: Arc<Context>,
    ) -> Result<Body, ErrorObject> {
        let started = Instant::now();
        let (name, arguments) = match name_and_arguments(params) {
            Ok(call) => call,
            Err(e) => {
                let answer = Err(e);
                self.served("tools/call", started, &answer);
                return answer;
            }
        };
        // Borrowed from the view, which outlives the call: no copy of the name per call. One
        // lookup gives the name the duration is labelled with and the route.
        let listed = scope.view.tool_routes.get_key_value(&name);
        let route = listed.map(|(_, route)| route);
        let listed = listed.map_or("", |(name, _)| name.as_str());
        let outcome = self.call_tool_decoded(&scope, &name, route, arguments, &context).await;
        let ended = Ended::of_call(&outcome);
        self.metrics.server_operation(Operation { method: "tools/call", tool: listed, ended }, started.elapsed());
        outcome.map(|(body, _)| body)
    }

    /// [`Gateway::call_tool`] once decoded (`name`: the tool as the client named it, `route`:
    /// its server and upstream name in `scope`'s view): the result, and whether it is a tool's
    /// failure.
    async fn call_tool_decoded(
        &self,
        scope: &Scope,
        name: &str,
        route: Option<&(String, String)>,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        context: &Arc<Context>,
    ) -> Result<(Body, bool), ErrorObject> {
        let Some((server, tool)) = route else {
            return Err(self.unrouted(scope, name, context));
        };
        if self.audit.get().is_none() && !self.live.listening() {
            return self.call_routed(scope, server, tool, name, arguments, context).await;
        }
        // Only the audit log may keep arguments; the live feed never shows them.
        let kept = if self.audit.get().is_some() { arguments.clone() } else { None };
        // Observed when the call ends, or as cancelled when the client's cancellation drops
        // this future first.
        let mut unanswered = Unanswered {
            gateway: self,
            endpoint: scope.endpoint_name(),
            context,
            method: "tools/call",
            server,
            tool,
            arguments: kept.as_ref(),
            started: Instant::now(),
            ended: None,
        };
        let outcome = self.call_routed(scope, server, tool, name, arguments, context).await;
        unanswered.ended = Some(match &outcome {
            Ok((_, false)) => AuditOutcome::Ok,
            Ok((_, true)) => AuditOutcome::ToolError,
            Err(e) => outcome_of(e),
        });
        drop(unanswered);
        outcome
    }

    /// The error of a call of `name`, which `scope`'s view routes nowhere: -32003 when the
    /// scope's endpoint hides a tool the gateway has (observed as denied), else the protocol
    /// error of an unknown tool (shown to the live feed's listeners).
    fn unrouted(&self, scope: &Scope, name: &str, context: &Context) -> ErrorObject {
        let hidden = self.view().tool_route(name).and_then(|(server, tool)| {
            scope.hidden(Kind::Tool, name, server, tool).map(|e| (e, server.clone(), tool.clone()))
        });
        if self.live.listening() {
            let entry = observed(context, "tools/call", "", name, AuditOutcome::Error, Instant::now());
            self.live.publish(&entry);
        }
        if let Some((error, server, tool)) = hidden {
            let mut entry = observed(context, "tools/call", &server, &tool, AuditOutcome::Denied, Instant::now());
            entry.endpoint = scope.endpoint_name();
            self.observe(&entry);
            return error;
        }
        // A protocol error, as for any server (server/tools, "Error Handling").
        ErrorObject::new(ErrorCode::INVALID_PARAMS, self.not_found(name))
    }

    /// Hands a call that ended to the audit log (a `tools/call` routed to a server) and to the
    /// live feed's listeners: the one place both are fed.
    fn observe(&self, entry: &AuditEntry<'_>) {
        if let Some(audit) = self.audit.get() {
            if AUDITED.contains(&entry.method) && !entry.server.is_empty() {
                audit.record(entry);
            }
        }
        self.live.publish(entry);
    }

    /// A listener of every call from now on, as it ends (see [`live`]).
    pub fn live(&self) -> Listener {
        self.live.listen()
    }

    /// Items the listeners of [`Gateway::live`] lost by falling behind, since the start.
    pub fn live_dropped(&self) -> u64 {
        self.live.dropped()
    }

    /// [`Gateway::call_tool`] once routed to `tool` of `server` (`asked`: the name the client
    /// used): the result, and whether it is a tool's failure (`isError`).
    async fn call_routed(
        &self,
        scope: &Scope,
        server: &str,
        tool: &str,
        asked: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        context: &Arc<Context>,
    ) -> Result<(Body, bool), ErrorObject> {
        self.permit(scope, context, Kind::Tool, server, tool, asked)?;
        // The endpoint's limits first: a call they refuse takes nothing from the gateway's,
        // which every endpoint shares.
        self.within_endpoint_limits(scope, context, server, tool)?;
        // The check in memory stays synchronous: no await on the path of every call.
        match self.shared_buckets.get() {
            None => self.within_limits(context, server, tool)?,
            Some(shared) => self.within_shared_limits(shared.as_ref(), context, server, tool).await?,
        }
        let set = self.set_for(server, scope, context).await?;
        let _caller = self.callers.enter(context);
        let caller = _caller.id;
        let mut options = SetCallOptions::default().with_timeout(self.timeout);
        let mut relay = None;
        if context.meta().is_some_and(|m| m.progress_token.is_some()) {
            let (callback, queue) = relay_progress(context.clone());
            options = options.with_progress(callback);
            relay = Some(queue);
        }
        let started = Instant::now();
        // Boxed: the set's call future holds a connection's whole call; inline it would be
        // part of this future and of `Forwarding::route`'s box, and be moved whole into each
        // on every call.
        let call = Box::pin(set.call_tool_body_with(server, tool, arguments, options));
        let outcome = with_caller(caller, call).await;
        if let Some(queue) = &relay {
            // Progress sent by the upstream before its result reaches the client before ours.
            flush(queue).await;
        }
        let passed = outcome.and_then(|body| pass_on(&scope.view, server, body));
        let failed = passed.as_ref().map_or(true, |(_, is_error)| *is_error);
        let counted = if failed { CallOutcome::Error } else { CallOutcome::Ok };
        let elapsed = started.elapsed();
        self.metrics.record_call(server, tool, elapsed, counted);
        let passed = passed.map_err(|e| upstream_error(server, e));
        let ended = Ended::of_call(&passed);
        self.metrics.client_operation(Operation { method: "tools/call", tool, ended }, elapsed);
        passed
    }

    /// Writes a line for every tool call to `log` from now on (see [`audit`]).
    pub fn set_audit(&self, log: AuditLog) {
        let _ = self.audit.set(log);
    }

    /// Why no tool is named `name`: not found, and when the name is qualified with an upstream
    /// that is not ready (say one that failed to start and is retried), that upstream's state
    /// and last error.
    fn not_found(&self, name: &str) -> String {
        let not_found = format!("Tool {name} not found");
        let Some(rest) = name.strip_prefix("mcp__") else { return not_found };
        let summary = self.set.summary();
        let down = summary.servers.iter().find(|s| {
            rest.strip_prefix(s.name.as_str()).is_some_and(|tool| tool.starts_with("__"))
                && !matches!(s.state, ServerState::Ready | ServerState::Deferred)
        });
        let Some(status) = down else { return not_found };
        let mut message = format!("{not_found}: its upstream {} is {}", status.name, status.state);
        if status.failed_attempts > 0 {
            message.push_str(&format!(" after {} failed tries", status.failed_attempts));
        }
        if let Some(error) = &status.error {
            message.push_str(&format!(" (last error: {})", printable(error)));
        }
        message
    }

    async fn read_resource(
        &self,
        scope: &Scope,
        params: Option<Body>,
        context: &Arc<Context>,
    ) -> Result<Body, ErrorObject> {
        let mut params: ReadResourceRequestParams = decode(params, "resources/read")?;
        let view = &scope.view;
        let Some((server, uri)) = view.resolve_uri(&params.uri) else {
            return Err(crate::server::resource_not_found(&params.uri));
        };
        if let Some(error) = scope.hidden(Kind::Resource, &params.uri, &server, &uri) {
            return Err(error);
        }
        self.permit(scope, context, Kind::Resource, &server, &uri, &params.uri)?;
        let asked = std::mem::replace(&mut params.uri, uri.clone());
        params.meta = None;
        let mut result: ReadResourceResult = self.request::<ReadResource>(scope, &server, params, context, "").await?;
        unstamp(&mut result.meta, &mut result.extra);
        if asked != uri {
            for contents in &mut result.contents {
                match contents {
                    ResourceContents::Text(c) => c.uri = view.map_uri(&server, &c.uri),
                    ResourceContents::Blob(c) => c.uri = view.map_uri(&server, &c.uri),
                    ResourceContents::Other(_) => {}
                }
            }
        }
        Ok(Body::typed(result))
    }

    /// A downstream `prompts/get`, its duration observed (labelled with the prompt's name when
    /// the view lists it).
    async fn get_prompt(
        &self,
        scope: &Scope,
        params: Option<Body>,
        context: &Arc<Context>,
    ) -> Result<Body, ErrorObject> {
        let started = Instant::now();
        let observe = |prompt: &str, answer: &Result<Body, ErrorObject>| {
            let ended = Ended::of(answer);
            self.metrics.server_operation(Operation { method: "prompts/get", tool: prompt, ended }, started.elapsed());
        };
        let params: GetPromptRequestParams = match decode(params, "prompts/get") {
            Ok(params) => params,
            Err(e) => {
                let answer = Err(e);
                observe("", &answer);
                return answer;
            }
        };
        // Borrowed from the view, which outlives the call, as in `call_tool`.
        let listed = scope.view.prompt_routes.get_key_value(&params.name).map_or("", |(name, _)| name.as_str());
        let answer = self.get_prompt_decoded(scope, params, context).await;
        observe(listed, &answer);
        answer
    }

    async fn get_prompt_decoded(
        &self,
        scope: &Scope,
        mut params: GetPromptRequestParams,
        context: &Arc<Context>,
    ) -> Result<Body, ErrorObject> {
        let Some((server, name)) = self.prompt_route(scope, &params.name)? else {
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Prompt {} not found", params.name)));
        };
        self.permit(scope, context, Kind::Prompt, &server, &name, &params.name)?;
        params.name = name;
        params.meta = None;
        let target = params.name.clone();
        let mut result = self.request::<GetPrompt>(scope, &server, params, context, &target).await?;
        unstamp(&mut result.meta, &mut result.extra);
        Ok(Body::typed(result))
    }

    /// The server and upstream name of the prompt `asked` in `scope`'s view; the refusal naming
    /// why when the scope's endpoint hides a prompt the gateway has.
    fn prompt_route(&self, scope: &Scope, asked: &str) -> Result<Option<(String, String)>, ErrorObject> {
        if let Some(route) = scope.view.prompt_routes.get(asked) {
            return Ok(Some(route.clone()));
        }
        match self.view().prompt_routes.get(asked) {
            Some((server, name)) => match scope.hidden(Kind::Prompt, asked, server, name) {
                Some(error) => Err(error),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    /// Sends `params` of method `M` to `server` (its per-session connection when it has one) on
    /// behalf of `context`, whose client then answers what the upstream asks meanwhile;
    /// `target` is the name its duration is labelled with (a prompt's upstream name), or empty.
    async fn request<M>(
        &self,
        scope: &Scope,
        server: &str,
        params: M::Params,
        context: &Arc<Context>,
        target: &str,
    ) -> Result<M::Output, ErrorObject>
    where
        M: crate::proto::mcp_types::Method,
        M::Params: Send + Sync + 'static,
        M::Output: Clone + Send + Sync + 'static,
    {
        let set = self.set_for(server, scope, context).await?;
        let caller = self.callers.enter(context);
        // Boxed for the reason given in `call_tool`.
        let request = Box::pin(set.request_on::<M>(server, params));
        let started = Instant::now();
        let answer = with_caller(caller.id, request).await.map_err(|e| upstream_error(server, e));
        let ended = Ended::of(&answer);
        self.metrics.client_operation(Operation { method: M::NAME, tool: target, ended }, started.elapsed());
        answer
    }

    async fn complete(&self, scope: &Scope, params: Option<Body>, context: &Arc<Context>) -> Result<Body, ErrorObject> {
        let mut params: CompleteRequestParams = decode(params, "completion/complete")?;
        let view = &scope.view;
        let server = match &mut params.reference {
            CompletionReference::Prompt(p) => {
                let Some((server, name)) = self.prompt_route(scope, &p.name)? else {
                    return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Prompt {} not found", p.name)));
                };
                self.permit(scope, context, Kind::Prompt, &server, &name, &p.name)?;
                p.name = name;
                server
            }
            CompletionReference::ResourceTemplate(r) => {
                let Some((server, uri)) = view.resolve_uri(&r.uri) else {
                    return Err(ErrorObject::new(
                        ErrorCode::INVALID_PARAMS,
                        format!("Resource template {} not found", r.uri),
                    ));
                };
                if let Some(error) = scope.hidden(Kind::Resource, &r.uri, &server, &uri) {
                    return Err(error);
                }
                self.permit(scope, context, Kind::Resource, &server, &uri, &r.uri)?;
                r.uri = uri;
                server
            }
            CompletionReference::Other(_) => {
                return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "Invalid params: unknown completion reference"))
            }
        };
        params.meta = None;
        let mut result = self.request::<Complete>(scope, &server, params, context, "").await?;
        unstamp(&mut result.meta, &mut result.extra);
        Ok(Body::typed(result))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;

    #[test]
    fn slugs_are_uri_scheme_prefixes() {
        assert_eq!(slug("everything"), "everything");
        assert_eq!(slug("My_Server"), "my-server");
        assert_eq!(slug("9lives"), "s9lives");
    }

    /// What reaches the downstream client: the body's JSON, and whether it counts as failed.
    fn passed(outcome: Result<(Body, bool), SetError>) -> (serde_json::Value, bool) {
        let (body, is_error) = outcome.expect("a tool result");
        (serde_json::from_str(body.to_raw().expect("serializes").get()).expect("JSON"), is_error)
    }

    #[test]
    fn a_result_passed_on_as_written_is_what_the_typed_edit_gives() {
        let mut mapped = View::default();
        mapped.slug_of.insert("up".to_owned(), "up".to_owned());
        for text in [
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
            r#"{"content":[{"type":"text","text":"no"}],"isError":true,"resultType":"complete"}"#,
            r#"{"content":[],"structuredContent":{"n":1},"ttlMs":3,"cacheScope":"public","x":null}"#,
            r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}}}"#,
            r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"},"k":1}}"#,
            r#"{"content":[],"isError":null,"structuredContent":null,"_meta":{}}"#,
            r#"{"content":[{"type":"resource_link","uri":"demo://a","name":"a"}],"resultType":"complete"}"#,
        ] {
            for view in [&View::default(), &mapped] {
                let raw = || Body::Raw(RawValue::from_string(text.to_owned()).expect("JSON"));
                assert_eq!(passed(pass_on(view, "up", raw())), passed(edit_typed(view, "up", raw())), "{text}");
            }
        }
        // The mapped URI is the downstream one.
        let link = r#"{"content":[{"type":"resource_link","uri":"demo://a","name":"a"}]}"#;
        let (body, _) = passed(pass_on(&mapped, "up", Body::Raw(RawValue::from_string(link.to_owned()).unwrap())));
        assert_eq!(body["content"][0]["uri"], "up+demo://a");
    }

    #[test]
    fn an_upstream_result_that_is_no_tool_result_is_the_error_it_was() {
        for text in [r#"{"task":{"taskId":"t"}}"#, r#"{"content":"x"}"#, r#"{"isError":true}"#] {
            let raw = Body::Raw(RawValue::from_string(text.to_owned()).expect("JSON"));
            let Err(error) = pass_on(&View::default(), "up", raw) else { panic!("{text} passed") };
            let expected = decode_tool_result(Body::Raw(RawValue::from_string(text.to_owned()).unwrap()))
                .expect_err("no tool result");
            assert_eq!(error.to_string(), SetError::Client { server: "up".to_owned(), source: expected }.to_string());
            assert_eq!(upstream_error("up", error).code, ErrorCode::INTERNAL_ERROR);
        }
    }

    /// The size of the future `f` returns, without calling it.
    fn returned<A, B, C, D, F: std::future::Future>(_: fn(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A forwarded `tools/call`'s future is moved whole into its box on every call
    /// (`Forwarding::route`): it stays under 1 KiB, the `Context` and the decoded params held
    /// by no future of the chain (it was 10.7 KB when each held its own).
    #[test]
    fn a_tool_calls_future_is_under_1_kib() {
        let call_tool = returned::<Arc<Gateway>, Scope, Option<Body>, Arc<Context>, _>(Gateway::call_tool);
        assert!(call_tool < 1024, "the future of Gateway::call_tool: {call_tool} bytes");
    }

    #[test]
    fn a_tool_calls_name_and_arguments_are_those_of_its_params_typed_or_raw() {
        let json = serde_json::json!({"name": "t", "arguments": {"a": 1}, "_meta": {"progressToken": 3}});
        let typed: CallToolRequestParams = serde_json::from_value(json.clone()).expect("params");
        let expected = ("t".to_owned(), json["arguments"].as_object().cloned());
        let raw = Body::Raw(RawValue::from_string(json.to_string()).expect("JSON"));
        assert_eq!(name_and_arguments(Some(raw)).expect("raw"), expected);
        assert_eq!(name_and_arguments(Some(Body::typed(typed.clone()))).expect("typed, one owner"), expected);
        let shared = Body::typed(typed);
        let Body::Typed(arc) = &shared else { panic!("typed") };
        let kept = arc.clone();
        assert_eq!(name_and_arguments(Some(shared)).expect("typed, shared"), expected);
        assert!(kept.as_any().downcast_ref::<CallToolRequestParams>().is_some_and(|p| p.name == "t"));
        let error = name_and_arguments(None).expect_err("no params");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn template_literal_prefix() {
        assert_eq!(literal_prefix("demo://resource/dynamic/{id}"), "demo://resource/dynamic/");
        assert_eq!(literal_prefix("file:///x"), "file:///x");
    }
}
