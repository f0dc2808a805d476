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
//!   `retryAfterMs`), the caller being the request's verified principal.
//! - Virtual servers: [`Gateway::endpoint_server`] ([`endpoint`]): more downstream servers over
//!   the same upstream connections, each offering a part of the view (renamed as it says)
//!   under its own policy or the gateway's; every request is served through a `Scope`, the
//!   view and policy of the endpoint it came through.
//! - Audit: one line per `tools/call`, `prompts/get` and `resources/read` ([`audit`]).
//!
//! Not here: listening, signals, reloading a configuration file, the command line: the
//! application does that (`mcp-bridge serve` in the `mcp-bridge` package is one).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use self::metrics::bridge::{BridgeMetrics, CallOutcome};
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
use self::rate_limit::{Limit, RateLimiter};
use self::tool_result::ResultCheck;

pub mod audit;
pub mod console;
pub mod endpoint;
pub mod live;
pub mod metrics;
mod pending;
pub mod policy;
pub mod rate_limit;
#[cfg(feature = "config")]
pub mod settings;
mod tool_result;

pub use pending::DEFAULT_MAX_PENDING_CLIENT_REQUESTS;

/// How upstream tools and prompts are named downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixMode {
    /// Always `mcp__SERVER__NAME` (resource URIs as `SERVER+URI`).
    Always,
    /// The upstream name, unless two servers share it.
    OnCollision,
    /// The upstream name; two servers sharing one is an error at start.
    Never,
}

/// The downstream catalog: what each upstream offers, under the names offered downstream.
#[derive(Default)]
pub(crate) struct View {
    pub(crate) tools: Vec<Tool>,
    tool_routes: HashMap<String, (String, String)>,
    pub(crate) prompts: Vec<Prompt>,
    prompt_routes: HashMap<String, (String, String)>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    /// Unprefixed URIs (and template literal prefixes) → the server that listed them.
    resource_routes: HashMap<String, String>,
    template_prefixes: Vec<(String, String)>,
    /// Servers whose URIs are prefixed, by slug; and the slug of each server.
    slugs: HashMap<String, String>,
    slug_of: HashMap<String, String>,
}

/// A URI scheme prefix for `server`: lowercase letters, digits, `-` and `.`, starting with a
/// letter.
fn slug(server: &str) -> String {
    let mut slug: String = server
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    if !slug.starts_with(|c: char| c.is_ascii_alphabetic()) {
        slug.insert(0, 's');
    }
    slug
}

/// The literal part of a URI template, before its first expression.
fn literal_prefix(template: &str) -> &str {
    template.split('{').next().unwrap_or(template)
}

impl View {
    /// The view of `catalog` under `prefix`.
    ///
    /// # Errors
    /// With [`PrefixMode::Never`], a name (or URI) two servers offer, naming both.
    pub(crate) fn build(catalog: &MergedCatalog, prefix: PrefixMode) -> Result<View, String> {
        let mut view = View::default();
        let mut owners: HashMap<&str, Vec<&str>> = HashMap::new();
        for t in &catalog.tools {
            owners.entry(t.tool.name.as_str()).or_default().push(t.server.as_str());
        }
        for t in &catalog.tools {
            let shared = owners[t.tool.name.as_str()].len() > 1;
            let name = match prefix {
                PrefixMode::Always => t.qualified_name.clone(),
                PrefixMode::OnCollision if shared => t.qualified_name.clone(),
                PrefixMode::Never if shared => {
                    let servers = &owners[t.tool.name.as_str()];
                    return Err(format!(
                        "tool {:?} is offered by both {} and {} (--prefix never)",
                        t.tool.name, servers[0], servers[1]
                    ));
                }
                _ => t.tool.name.clone(),
            };
            view.tool_routes.insert(name.clone(), (t.server.clone(), t.tool.name.clone()));
            view.tools.push(Tool { name, ..t.tool.clone() });
        }
        let mut prompt_owners: HashMap<&str, Vec<&str>> = HashMap::new();
        for (server, p) in &catalog.prompts {
            prompt_owners.entry(p.name.as_str()).or_default().push(server.as_str());
        }
        let qualified = qualify(catalog.prompts.iter().map(|(s, p)| (s.as_str(), p.name.as_str())));
        for ((server, p), qualified) in catalog.prompts.iter().zip(qualified) {
            let owners = &prompt_owners[p.name.as_str()];
            let name = match prefix {
                PrefixMode::Always => qualified,
                PrefixMode::OnCollision if owners.len() > 1 => qualified,
                PrefixMode::Never if owners.len() > 1 => {
                    return Err(format!(
                        "prompt {:?} is offered by both {} and {} (--prefix never)",
                        p.name, owners[0], owners[1]
                    ))
                }
                _ => p.name.clone(),
            };
            view.prompt_routes.insert(name.clone(), (server.clone(), p.name.clone()));
            view.prompts.push(Prompt { name, ..p.clone() });
        }
        let mut uri_owners: HashMap<&str, HashSet<&str>> = HashMap::new();
        for (server, r) in &catalog.resources {
            uri_owners.entry(r.uri.as_str()).or_default().insert(server.as_str());
        }
        for (server, t) in &catalog.resource_templates {
            uri_owners.entry(t.uri_template.as_str()).or_default().insert(server.as_str());
        }
        let mut mapped: HashSet<&str> = HashSet::new();
        for (uri, servers) in &uri_owners {
            match prefix {
                PrefixMode::Always => mapped.extend(servers.iter().copied()),
                PrefixMode::OnCollision if servers.len() > 1 => mapped.extend(servers.iter().copied()),
                PrefixMode::Never if servers.len() > 1 => {
                    let mut servers: Vec<_> = servers.iter().collect();
                    servers.sort();
                    return Err(format!(
                        "resource {uri:?} is offered by both {} and {} (--prefix never)",
                        servers[0], servers[1]
                    ));
                }
                _ => {}
            }
        }
        let mut servers: Vec<&str> = mapped.into_iter().collect();
        servers.sort();
        for server in servers {
            let mut s = slug(server);
            if view.slugs.contains_key(&s) {
                s = format!("{s}-{:08x}", crate::client::connection_set::fnv1a(server.as_bytes()));
            }
            view.slugs.insert(s.clone(), server.to_owned());
            view.slug_of.insert(server.to_owned(), s);
        }
        for (server, r) in &catalog.resources {
            view.resource_routes.entry(r.uri.clone()).or_insert_with(|| server.clone());
            view.resources.push(Resource { uri: view.map_uri(server, &r.uri), ..r.clone() });
        }
        for (server, t) in &catalog.resource_templates {
            view.template_prefixes.push((literal_prefix(&t.uri_template).to_owned(), server.clone()));
            view.templates.push(ResourceTemplate { uri_template: view.map_uri(server, &t.uri_template), ..t.clone() });
        }
        // Longest literal first: the most specific template wins.
        view.template_prefixes.sort_by_key(|(literal, _)| std::cmp::Reverse(literal.len()));
        Ok(view)
    }

    /// `uri` of `server` as offered downstream.
    fn map_uri(&self, server: &str, uri: &str) -> String {
        match self.slug_of.get(server) {
            Some(slug) => format!("{slug}+{uri}"),
            None => uri.to_owned(),
        }
    }

    /// The server and upstream name `method` with `params` reaches (the server empty when
    /// none, as for a list), for the live view: the prompt of `prompts/get`, the URI of
    /// `resources/read`, the prompt or template of `completion/complete`.
    fn target(&self, method: &str, params: Option<&Body>) -> (String, String) {
        #[derive(serde::Deserialize)]
        struct Target {
            name: Option<String>,
            uri: Option<String>,
            #[serde(rename = "ref")]
            reference: Option<Box<Target>>,
        }
        let raw = params.and_then(|p| p.to_raw().ok());
        let asked = raw.and_then(|raw| serde_json::from_str::<Target>(raw.get()).ok());
        let asked = match (method, asked) {
            ("completion/complete", Some(target)) => target.reference.map(|r| *r),
            (_, asked) => asked,
        };
        let Some(asked) = asked else { return (String::new(), String::new()) };
        if let Some(name) = asked.name {
            return self.prompt_routes.get(&name).cloned().unwrap_or((String::new(), name));
        }
        match asked.uri {
            Some(uri) => self.resolve_uri(&uri).unwrap_or((String::new(), uri)),
            None => (String::new(), String::new()),
        }
    }

    /// The server behind a downstream URI (or template), and the URI as that server knows it.
    fn resolve_uri(&self, uri: &str) -> Option<(String, String)> {
        if let Some((slug, rest)) = uri.split_once('+') {
            if let Some(server) = self.slugs.get(slug) {
                return Some((server.clone(), rest.to_owned()));
            }
        }
        if let Some(server) = self.resource_routes.get(uri) {
            return Some((server.clone(), uri.to_owned()));
        }
        let (_, server) = self.template_prefixes.iter().find(|(literal, _)| uri.starts_with(literal.as_str()))?;
        Some((server.clone(), uri.to_owned()))
    }

    /// The server and upstream name of a downstream tool name.
    pub(crate) fn tool_route(&self, name: &str) -> Option<&(String, String)> {
        self.tool_routes.get(name)
    }
}

/// How long a request an upstream makes of the client (sampling, elicitation, roots), relayed to
/// a downstream client, waits for that client's answer unless told otherwise
/// ([`Callers::with_deadline`]): two minutes, time for a person to fill a form. Past it the
/// downstream request is cancelled (`notifications/cancelled`) and the upstream gets an error
/// naming the deadline, so that a client that went away (a dropped stream nobody resumes)
/// cannot hold the calls waiting on it, nor the session's slots, for ever.
pub const DEFAULT_CLIENT_REQUEST_DEADLINE: Duration = Duration::from_secs(120);

/// The downstream requests being forwarded, by caller: an upstream's request to the client made
/// while one of them runs is answered by that request's downstream client (its [`Context`]),
/// within a deadline ([`DEFAULT_CLIENT_REQUEST_DEADLINE`] unless set).
pub struct Callers {
    next: AtomicU64,
    contexts: Mutex<HashMap<CallerId, Caller>>,
    deadline: Duration,
    pending: Arc<pending::Pending>,
    max_pending: usize,
}

impl Default for Callers {
    fn default() -> Self {
        Callers::with_deadline(DEFAULT_CLIENT_REQUEST_DEADLINE)
    }
}

/// A downstream request being forwarded: its context, and the span it is served in (with
/// feature `otel`, what a request relayed to its client on its behalf stays in the trace of).
#[derive(Clone)]
struct Caller {
    context: Context,
    span: tracing::Span,
}

/// A forwarded request's entry in [`Callers`], removed when dropped.
struct CallerGuard<'a> {
    callers: &'a Callers,
    id: CallerId,
}

impl Drop for CallerGuard<'_> {
    fn drop(&mut self) {
        self.callers.contexts.lock().expect("callers lock").remove(&self.id);
    }
}

/// Why an upstream's request to the client cannot be answered downstream.
fn unrelated(method: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!(
            "mcp-bridge: {method} is not related to a downstream request in flight (or to several at once), \
             so no downstream client can answer it"
        ),
    )
}

/// What the downstream client answered to `asked` (a relayed request `method`), or, when it did
/// not within `deadline`, an error naming the deadline; `asked` is then dropped, which cancels
/// the downstream request.
async fn answered_within<R>(
    deadline: Duration,
    method: &str,
    asked: impl std::future::Future<Output = Result<R, ClientRequestError>>,
) -> Result<R, ErrorObject> {
    match tokio::time::timeout(deadline, asked).await {
        Ok(answer) => answer.map_err(refused),
        Err(_) => Err(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!(
                "mcp-bridge: the downstream client did not answer {method} within {} ms (the bridge's deadline \
                 for requests to a client)",
                deadline.as_millis()
            ),
        )),
    }
}

/// `asked` (a request relayed to the downstream client of `call`), sent so that it stays in
/// the trace of the call it is made on behalf of, whether or not the upstream propagated that
/// trace (`telemetry::relay_parent`); as it is without feature `otel`.
fn in_trace_of<F: std::future::Future>(call: &tracing::Span, asked: F) -> impl std::future::Future<Output = F::Output> {
    #[cfg(feature = "otel")]
    {
        tracing::Instrument::instrument(asked, crate::telemetry::relay_parent(call))
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = call;
        asked
    }
}

/// A downstream client's refusal, as the upstream gets it.
fn refused(e: ClientRequestError) -> ErrorObject {
    match e {
        ClientRequestError::Request(crate::peer::RequestError::Rpc(error)) => error,
        ClientRequestError::NotSupported { .. } | ClientRequestError::MissingCapability { .. } => {
            ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("mcp-bridge: the downstream client: {e}"))
        }
        e => ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("mcp-bridge: the downstream client: {e}")),
    }
}

impl Callers {
    /// No callers yet; each relayed request waits at most `deadline` for the downstream
    /// client's answer.
    pub fn with_deadline(deadline: Duration) -> Callers {
        Callers {
            next: AtomicU64::new(0),
            contexts: Mutex::default(),
            deadline,
            pending: Arc::default(),
            max_pending: DEFAULT_MAX_PENDING_CLIENT_REQUESTS,
        }
    }

    /// At most `max` relayed requests wait for one downstream connection's answers at once
    /// (default [`DEFAULT_MAX_PENDING_CLIENT_REQUESTS`]); past it the upstream's request gets a
    /// -32603 error naming the limit (`data.limit` = `"max_pending_client_requests"`).
    pub fn with_max_pending(mut self, max: usize) -> Callers {
        self.max_pending = max;
        self
    }

    /// How long a relayed request waits for the downstream client's answer.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Registers `context` as a caller for as long as the guard lives.
    fn enter(&self, context: &Context) -> CallerGuard<'_> {
        let id = CallerId(self.next.fetch_add(1, Ordering::Relaxed));
        let caller = Caller { context: context.clone(), span: tracing::Span::current() };
        self.contexts.lock().expect("callers lock").insert(id, caller);
        CallerGuard { callers: self, id }
    }

    /// The caller the client layer attributed the current request to.
    fn current(&self, method: &str) -> Result<Caller, ErrorObject> {
        let id = current_caller().ok_or_else(|| unrelated(method))?;
        self.contexts.lock().expect("callers lock").get(&id).cloned().ok_or_else(|| unrelated(method))
    }

    /// As [`current`](Self::current), with a place among the requests waiting on that
    /// caller's downstream connection, held until the answer.
    fn current_with_slot(&self, method: &str) -> Result<(Caller, pending::Slot), ErrorObject> {
        let caller = self.current(method)?;
        let slot = self.pending.reserve(&caller.context, method, self.max_pending)?;
        Ok((caller, slot))
    }

    /// `options` with handlers that answer every upstream's sampling, elicitation (form and URL)
    /// and roots requests through the downstream client whose request caused them, each within
    /// [`Callers::deadline`].
    pub fn handlers(self: &Arc<Self>, options: SetOptions) -> SetOptions {
        let (sampling, elicitation, roots) = (self.clone(), self.clone(), self.clone());
        let deadline = self.deadline;
        options
            .with_sampling(move |_server: String, params: CreateMessageRequestParams| {
                const METHOD: &str = "sampling/createMessage";
                let caller = sampling.current_with_slot(METHOD);
                async move {
                    let (caller, _slot) = caller?;
                    let asked = in_trace_of(&caller.span, caller.context.create_message(params));
                    answered_within(deadline, METHOD, asked).await
                }
            })
            .with_elicitation_modes(
                move |_server: String, params: ElicitRequestParams| {
                    const METHOD: &str = "elicitation/create";
                    let caller = elicitation.current_with_slot(METHOD);
                    async move {
                        let (caller, _slot) = caller?;
                        let asked = in_trace_of(&caller.span, caller.context.elicit_with(params));
                        answered_within(deadline, METHOD, asked).await
                    }
                },
                ElicitationModes { form: true, url: true },
            )
            .with_roots_handler(move |_server: String| {
                // Unrelated (a server asks right after connecting): the bridge's own roots, none.
                let caller = match roots.current("roots/list") {
                    Ok(_) => roots.current_with_slot("roots/list").map(Some),
                    Err(_) => Ok(None),
                };
                async move {
                    let Some((caller, _slot)) = caller? else { return Ok(Vec::new()) };
                    let asked = in_trace_of(&caller.span, caller.context.list_roots());
                    let roots: Vec<Root> = answered_within(deadline, "roots/list", asked).await?;
                    Ok(roots)
                }
            })
    }
}

/// The upstreams each downstream session gets for itself: their configuration (the servers
/// named by `--per-session`, as the config file has them now), and the sets started so far, by
/// session.
///
/// A reload ([`PerSession::reload`]) moves every started set to the new configuration, each
/// through [`ConnectionSet::reload`] (an unchanged server keeps its child; a changed one is
/// restarted; a removed one is stopped); a set started while a reload runs is moved on its next
/// use, by the generation it was made with.
///
/// At most [`max_sets`](PerSession::with_max_sets) sessions hold sets of their own at once
/// (default [`DEFAULT_MAX_PER_SESSION_SETS`]): each holds a child process per per-session
/// server. A session past it gets, for each request to a per-session server, a -32603 error
/// naming the limit (`data.limit` = `"max_per_session_sets"`) and starts nothing; a session
/// that ends frees its place. Sessions that hold a set keep it: nothing is evicted.
pub struct PerSession {
    names: Vec<String>,
    config: RwLock<(u64, McpConfig)>,
    options: SetOptions,
    sets: Mutex<HashMap<u64, Arc<tokio::sync::OnceCell<SessionSet>>>>,
    max_sets: usize,
}

/// The default of [`PerSession::with_max_sets`]: 64 sessions holding their own upstreams.
pub const DEFAULT_MAX_PER_SESSION_SETS: usize = 64;

/// Why a session has no set of its own.
enum SessionSetError {
    /// [`PerSession::max_sets`] sessions hold one already.
    Full(usize),
    /// Its set did not start.
    Start(SetError),
}

/// One session's set, and the configuration generation it was last moved to.
struct SessionSet {
    set: ConnectionSet,
    generation: AtomicU64,
}

impl PerSession {
    /// Per-session connections to the servers `names` of `config`, made with `options`.
    ///
    /// # Errors
    /// A name `config` does not have.
    pub fn new(names: Vec<String>, config: &McpConfig, options: SetOptions) -> Result<PerSession, String> {
        if let Some(missing) = names.iter().find(|name| !config.servers.contains_key(*name)) {
            return Err(format!("--per-session {missing}: no such upstream"));
        }
        let config = RwLock::new((0, Self::subset(&names, config)));
        Ok(PerSession { names, config, options, sets: Mutex::default(), max_sets: DEFAULT_MAX_PER_SESSION_SETS })
    }

    /// At most `max` sessions holding their own upstreams at once (see [`PerSession`]).
    pub fn with_max_sets(mut self, max: usize) -> PerSession {
        self.max_sets = max;
        self
    }

    /// How many sessions may hold their own upstreams at once.
    pub fn max_sets(&self) -> usize {
        self.max_sets
    }

    /// How many sessions hold (or are starting) their own upstreams.
    pub fn sets(&self) -> usize {
        self.sets.lock().expect("sessions lock").len()
    }

    /// The servers of `config` that are per-session.
    fn subset(names: &[String], config: &McpConfig) -> McpConfig {
        let mut subset = config.clone();
        subset.servers.retain(|name, _| names.contains(name));
        subset
    }

    fn current(&self) -> (u64, McpConfig) {
        self.config.read().expect("per-session config lock").clone()
    }

    /// The set of session `session`, started on first use (and moved to the current
    /// configuration when a reload came after it was made).
    async fn set(&self, session: u64) -> Result<ConnectionSet, SessionSetError> {
        let cell = {
            let mut sets = self.sets.lock().expect("sessions lock");
            if !sets.contains_key(&session) && sets.len() >= self.max_sets {
                return Err(SessionSetError::Full(self.max_sets));
            }
            sets.entry(session).or_default().clone()
        };
        let set = cell
            .get_or_try_init(|| async {
                let (generation, config) = self.current();
                let set = ConnectionSet::new(config, self.options.clone());
                match set.start().await {
                    Ok(_) => Ok(SessionSet { set, generation: AtomicU64::new(generation) }),
                    Err(e) => {
                        set.shutdown().await;
                        Err(e)
                    }
                }
            })
            .await;
        let session_set = match set {
            Ok(session_set) => session_set,
            Err(e) => {
                self.sets.lock().expect("sessions lock").remove(&session);
                return Err(SessionSetError::Start(e));
            }
        };
        let generation = self.config.read().expect("per-session config lock").0;
        if session_set.generation.load(Ordering::Acquire) != generation {
            Box::pin(Self::move_to(session_set, self.current())).await;
        }
        Ok(session_set.set.clone())
    }

    /// Moves `session_set` to `config` of `generation`, unless it is there already.
    async fn move_to(session_set: &SessionSet, (generation, config): (u64, McpConfig)) {
        if session_set.generation.swap(generation, Ordering::AcqRel) != generation {
            let report = session_set.set.reload(config).await;
            tracing::debug!(%report, "a session's per-session upstreams reloaded");
        }
    }

    /// The configuration file became `config`: the per-session servers are taken from it
    /// (a `--per-session` name it no longer has is no longer served), and every started
    /// session's set is moved to them. Returns how many sets were moved.
    pub async fn reload(&self, config: &McpConfig) -> usize {
        let current = {
            let mut held = self.config.write().expect("per-session config lock");
            let subset = Self::subset(&self.names, config);
            if subset == held.1 {
                return 0;
            }
            for gone in self.names.iter().filter(|name| !subset.servers.contains_key(*name)) {
                tracing::warn!(server = %printable(gone), "--per-session server no longer in the config: no longer served");
            }
            *held = (held.0 + 1, subset);
            held.clone()
        };
        let started: Vec<_> = self.sets.lock().expect("sessions lock").values().cloned().collect();
        let mut moved = 0;
        for cell in &started {
            if let Some(session_set) = cell.get() {
                Self::move_to(session_set, current.clone()).await;
                moved += 1;
            }
        }
        moved
    }

    /// Session `session` ended: its connections are shut down (children and process groups).
    pub fn close(&self, session: u64) {
        let Some(cell) = self.sets.lock().expect("sessions lock").remove(&session) else { return };
        if let Some(set) = cell.get().map(|s| s.set.clone()) {
            crate::transport::task::spawn(async move { set.shutdown().await });
        }
    }

    /// Every session's connections shut down.
    pub async fn close_all(&self) {
        let cells: Vec<_> = self.sets.lock().expect("sessions lock").drain().map(|(_, c)| c).collect();
        for session_set in cells.iter().filter_map(|c| c.get()) {
            session_set.set.shutdown().await;
        }
    }

    fn serves(&self, server: &str) -> bool {
        // The names first: with no `--per-session`, no lock on the call path.
        self.names.iter().any(|name| name == server)
            && self.config.read().expect("per-session config lock").1.servers.contains_key(server)
    }
}

pub use crate::proto::printable::printable;

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
    /// The limits of [`Gateway::set_rate_limits`] and their buckets; `None`: no limit.
    limiter: RwLock<Option<Arc<RateLimiter>>>,
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
            limiter: RwLock::new(None),
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

    /// The rate limits on tool calls from now on (none: no limit). Limits equal to those in
    /// force keep their buckets (a reload that changed something else does not refill them);
    /// changed limits start full.
    pub fn set_rate_limits(&self, limits: Vec<Limit>) {
        let mut held = self.limiter.write().expect("limiter lock");
        if held.as_ref().map_or(&[][..], |l| l.limits()) == limits.as_slice() {
            return;
        }
        *held = (!limits.is_empty()).then(|| Arc::new(RateLimiter::new(limits)));
    }

    /// The rate limits in force (see [`Gateway::set_rate_limits`]).
    pub fn rate_limits(&self) -> Vec<Limit> {
        self.limiter.read().expect("limiter lock").as_ref().map_or_else(Vec::new, |l| l.limits().to_vec())
    }

    /// Takes a token for the caller of `context` calling `tool` of `server` from every limit
    /// that applies; the error naming the limit and when to retry when one is empty.
    fn within_limits(&self, context: &Context, server: &str, tool: &str) -> Result<(), ErrorObject> {
        let Some(limiter) = self.limiter.read().expect("limiter lock").clone() else { return Ok(()) };
        let Err(refused) = limiter.check(context.principal(), server, tool, Instant::now()) else { return Ok(()) };
        self.metrics.rate_limited(&refused.limit);
        let retry_ms = u64::try_from(refused.retry_after.as_millis()).unwrap_or(u64::MAX).max(1);
        let message = format!(
            "mcp-bridge: rate limit {} reached for this caller; retry in {retry_ms} ms",
            printable(&refused.limit)
        );
        let error = ErrorObject::new(RATE_LIMITED, message);
        let data = serde_json::json!({"limit": &*refused.limit, "retryAfterMs": retry_ms});
        Err(error.clone().with_data(&data).unwrap_or(error))
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
                }
                SetEvent::Ready { server, .. } => self.metrics().set_upstream_up(&server, true),
                SetEvent::Reconnecting { server, attempt, delay } => {
                    let server = printable(&server);
                    tracing::info!(server = %printable(&server), attempt, delay_ms = delay.as_millis() as u64, "restarting upstream")
                }
                SetEvent::Reconnected { server } => {
                    tracing::info!(server = %printable(&server), "upstream restarted");
                    self.metrics().upstream_restarted(&server);
                    self.metrics().set_upstream_up(&server, true);
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

    async fn call_tool(&self, scope: &Scope, params: Option<Body>, context: Context) -> Result<Body, ErrorObject> {
        let params: CallToolRequestParams = decode(params, "tools/call")?;
        let view = &scope.view;
        let Some((server, tool)) = view.tool_route(&params.name) else {
            let hidden = self.view().tool_route(&params.name).and_then(|(server, tool)| {
                scope.hidden(Kind::Tool, &params.name, server, tool).map(|e| (e, server.clone(), tool.clone()))
            });
            if self.live.listening() {
                let entry = observed(&context, "tools/call", "", &params.name, AuditOutcome::Error, Instant::now());
                self.live.publish(&entry);
            }
            if let Some((error, server, tool)) = hidden {
                let mut entry = observed(&context, "tools/call", &server, &tool, AuditOutcome::Denied, Instant::now());
                entry.endpoint = scope.endpoint_name();
                self.observe(&entry);
                return Err(error);
            }
            // A protocol error, as for any server (server/tools, "Error Handling").
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, self.not_found(&params.name)));
        };
        if self.audit.get().is_none() && !self.live.listening() {
            return self.call_routed(scope, server, tool, params, &context).await.map(|(body, _)| body);
        }
        // Only the audit log may keep arguments; the live feed never shows them.
        let arguments = if self.audit.get().is_some() { params.arguments.clone() } else { None };
        // Observed when the call ends, or as cancelled when the client's cancellation drops
        // this future first.
        let mut unanswered = Unanswered {
            gateway: self,
            endpoint: scope.endpoint_name(),
            context: &context,
            server,
            tool,
            arguments: arguments.as_ref(),
            started: Instant::now(),
            ended: None,
        };
        let outcome = self.call_routed(scope, server, tool, params, &context).await;
        unanswered.ended = Some(match &outcome {
            Ok((_, false)) => AuditOutcome::Ok,
            Ok((_, true)) => AuditOutcome::ToolError,
            Err(e) => outcome_of(e),
        });
        drop(unanswered);
        outcome.map(|(body, _)| body)
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

    /// [`Gateway::call_tool`] once routed to `tool` of `server`: the result, and whether it
    /// is a tool's failure (`isError`).
    async fn call_routed(
        &self,
        scope: &Scope,
        server: &str,
        tool: &str,
        params: CallToolRequestParams,
        context: &Context,
    ) -> Result<(Body, bool), ErrorObject> {
        let context = context.clone();
        self.permit(scope, &context, Kind::Tool, server, tool, &params.name)?;
        self.within_limits(&context, server, tool)?;
        let set = self.set_for(server, scope, &context).await?;
        let _caller = self.callers.enter(&context);
        let caller = _caller.id;
        let mut options = SetCallOptions::default().with_timeout(self.timeout);
        let mut relay = None;
        if context.meta().is_some_and(|m| m.progress_token.is_some()) {
            let (callback, queue) = relay_progress(context.clone());
            options = options.with_progress(callback);
            relay = Some(queue);
        }
        let started = Instant::now();
        // Boxed: the set's call future holds a connection's whole call (kilobytes); inline it
        // would be part of this future and of `Forwarding::forward`'s box, and be moved whole
        // into each on every call.
        let call = Box::pin(set.call_tool_body_with(server, tool, params.arguments, options));
        let outcome = with_caller(caller, call).await;
        if let Some(queue) = &relay {
            // Progress sent by the upstream before its result reaches the client before ours.
            flush(queue).await;
        }
        let passed = outcome.and_then(|body| pass_on(&scope.view, server, body));
        let failed = passed.as_ref().map_or(true, |(_, is_error)| *is_error);
        let counted = if failed { CallOutcome::Error } else { CallOutcome::Ok };
        self.metrics.record_call(server, tool, started.elapsed(), counted);
        passed.map_err(|e| upstream_error(server, e))
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

    async fn read_resource(&self, scope: &Scope, params: Option<Body>, context: Context) -> Result<Body, ErrorObject> {
        let mut params: ReadResourceRequestParams = decode(params, "resources/read")?;
        let view = &scope.view;
        let Some((server, uri)) = view.resolve_uri(&params.uri) else {
            return Err(crate::server::resource_not_found(&params.uri));
        };
        if let Some(error) = scope.hidden(Kind::Resource, &params.uri, &server, &uri) {
            return Err(error);
        }
        self.permit(scope, &context, Kind::Resource, &server, &uri, &params.uri)?;
        let asked = std::mem::replace(&mut params.uri, uri.clone());
        params.meta = None;
        let mut result: ReadResourceResult = self.request::<ReadResource>(scope, &server, params, &context).await?;
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

    async fn get_prompt(&self, scope: &Scope, params: Option<Body>, context: Context) -> Result<Body, ErrorObject> {
        let mut params: GetPromptRequestParams = decode(params, "prompts/get")?;
        let Some((server, name)) = self.prompt_route(scope, &params.name)? else {
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Prompt {} not found", params.name)));
        };
        self.permit(scope, &context, Kind::Prompt, &server, &name, &params.name)?;
        params.name = name;
        params.meta = None;
        let mut result = self.request::<GetPrompt>(scope, &server, params, &context).await?;
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
    /// behalf of `context`, whose client then answers what the upstream asks meanwhile.
    async fn request<M>(
        &self,
        scope: &Scope,
        server: &str,
        params: M::Params,
        context: &Context,
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
        with_caller(caller.id, request).await.map_err(|e| upstream_error(server, e))
    }

    async fn complete(&self, scope: &Scope, params: Option<Body>, context: Context) -> Result<Body, ErrorObject> {
        let mut params: CompleteRequestParams = decode(params, "completion/complete")?;
        let view = &scope.view;
        let server = match &mut params.reference {
            CompletionReference::Prompt(p) => {
                let Some((server, name)) = self.prompt_route(scope, &p.name)? else {
                    return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Prompt {} not found", p.name)));
                };
                self.permit(scope, &context, Kind::Prompt, &server, &name, &p.name)?;
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
                self.permit(scope, &context, Kind::Resource, &server, &uri, &r.uri)?;
                r.uri = uri;
                server
            }
            CompletionReference::Other(_) => {
                return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "Invalid params: unknown completion reference"))
            }
        };
        params.meta = None;
        let mut result = self.request::<Complete>(scope, &server, params, &context).await?;
        unstamp(&mut result.meta, &mut result.extra);
        Ok(Body::typed(result))
    }
}

/// The gateway as the downstream server's forwarder.
pub(crate) struct Forwarding(pub(crate) Arc<Gateway>, pub(crate) Option<Arc<Served>>);

impl Forwarder for Forwarding {
    fn forward(&self, request: Forwarded) -> ForwardFuture {
        let gateway = self.0.clone();
        let scope = gateway.scope(self.1.as_ref());
        let Forwarded { method, params, context, .. } = request;
        // `tools/call` feeds the live view and the audit log itself; the other methods are
        // observed here, only while someone listens or (`prompts/get`, `resources/read`) the
        // audit log is on.
        let audited = gateway.audit.get().is_some() && AUDITED.contains(&method);
        if method == "tools/call" || !(gateway.live.listening() || audited) {
            return Forwarding::route(gateway, scope, method, params, context);
        }
        let (server, name) = scope.view.target(method, params.as_ref());
        let endpoint = self.1.as_ref().map(|e| e.name.clone());
        let started = Instant::now();
        let observed_context = context.clone();
        let answer = Forwarding::route(gateway.clone(), scope, method, params, context);
        Box::pin(async move {
            let answer = answer.await;
            let outcome = answer.as_ref().map_or_else(outcome_of, |_| AuditOutcome::Ok);
            let mut entry = observed(&observed_context, method, &server, &name, outcome, started);
            entry.endpoint = endpoint.as_deref();
            gateway.observe(&entry);
            answer
        })
    }
}

impl Forwarding {
    fn route(
        gateway: Arc<Gateway>,
        scope: Scope,
        method: &'static str,
        params: Option<Body>,
        context: Context,
    ) -> ForwardFuture {
        // Each method's future is boxed on its own: one future holding every method's states
        // would be as large as the largest, and be moved whole into its box on every call.
        match method {
            "tools/call" => Box::pin(async move { gateway.call_tool(&scope, params, context).await }),
            "prompts/get" => Box::pin(async move { gateway.get_prompt(&scope, params, context).await }),
            "resources/read" => Box::pin(async move { gateway.read_resource(&scope, params, context).await }),
            "completion/complete" => Box::pin(async move { gateway.complete(&scope, params, context).await }),
            listing => Box::pin(std::future::ready(gateway.listing(&scope, listing, &context))),
        }
    }
}

/// The methods the audit log has a line for: those that use a tool, a prompt or a resource.
const AUDITED: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// How a call that failed with `error` ended, as the audit log and the live view say it.
fn outcome_of(error: &ErrorObject) -> AuditOutcome {
    match error.code {
        DENIED => AuditOutcome::Denied,
        RATE_LIMITED => AuditOutcome::RateLimited,
        _ => AuditOutcome::Error,
    }
}

/// A routed `tools/call` on its way: observed once, when dropped, with how it ended, or as
/// [`AuditOutcome::Cancelled`] when it never did (its future dropped by a cancellation).
struct Unanswered<'a> {
    gateway: &'a Gateway,
    endpoint: Option<&'a str>,
    context: &'a Context,
    server: &'a str,
    tool: &'a str,
    arguments: Option<&'a serde_json::Map<String, serde_json::Value>>,
    started: Instant,
    ended: Option<AuditOutcome>,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        let ended = self.ended.unwrap_or(AuditOutcome::Cancelled);
        let mut entry = observed(self.context, "tools/call", self.server, self.tool, ended, self.started);
        entry.arguments = self.arguments;
        entry.endpoint = self.endpoint;
        self.gateway.observe(&entry);
    }
}

/// The entry of the `method` request of `context` to `name` of `server` (empty: none), which
/// ended with `outcome`, `started` then.
fn observed<'a>(
    context: &'a Context,
    method: &'a str,
    server: &'a str,
    name: &'a str,
    outcome: AuditOutcome,
    started: Instant,
) -> AuditEntry<'a> {
    AuditEntry {
        caller: context.principal(),
        session: context.session_id(),
        endpoint: None,
        method,
        server,
        name,
        outcome,
        latency: started.elapsed(),
        id: serde_json::to_value(context.request_id()).unwrap_or_default(),
        arguments: None,
    }
}

/// A route's server and name as borrowed strings.
fn pair(route: Option<&(String, String)>) -> Option<(&str, &str)> {
    route.map(|(s, n)| (s.as_str(), n.as_str()))
}

impl Gateway {
    /// The answer to one of the list methods, from the current view, less what the policy
    /// denies the caller of `context`.
    fn listing(&self, scope: &Scope, method: &str, context: &Context) -> Result<Body, ErrorObject> {
        let view = &scope.view;
        let policy = &scope.policy;
        let caller = context.principal();
        let allowed = |kind: Kind, route: Option<(&str, &str)>| match (&policy, route) {
            (None, _) => true,
            (Some(policy), Some((server, name))) => policy.decide(caller, kind, server, name).allowed(),
            (Some(_), None) => false,
        };
        match method {
            "tools/list" => {
                let tools = view.tools.iter().filter(|t| allowed(Kind::Tool, pair(view.tool_routes.get(&t.name))));
                Ok(Body::typed(ListToolsResult { tools: tools.cloned().collect(), ..ListToolsResult::default() }))
            }
            "prompts/list" => Ok(Body::typed(ListPromptsResult {
                prompts: view
                    .prompts
                    .iter()
                    .filter(|p| allowed(Kind::Prompt, pair(view.prompt_routes.get(&p.name))))
                    .cloned()
                    .collect(),
                next_cursor: None,
                meta: None,
                extra: Default::default(),
            })),
            "resources/list" => Ok(Body::typed(ListResourcesResult {
                resources: view
                    .resources
                    .iter()
                    .filter(|r| allowed(Kind::Resource, pair(view.resolve_uri(&r.uri).as_ref())))
                    .cloned()
                    .collect(),
                next_cursor: None,
                meta: None,
                extra: Default::default(),
            })),
            "resources/templates/list" => Ok(Body::typed(ListResourceTemplatesResult {
                resource_templates: view
                    .templates
                    .iter()
                    .filter(|t| allowed(Kind::Resource, pair(view.resolve_uri(&t.uri_template).as_ref())))
                    .cloned()
                    .collect(),
                next_cursor: None,
                meta: None,
                extra: Default::default(),
            })),
            _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
        }
    }
}

fn decode<T: serde::de::DeserializeOwned + Clone + Send + Sync + 'static>(
    params: Option<Body>,
    method: &str,
) -> Result<T, ErrorObject> {
    let Some(params) = params else {
        return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {method} needs params")));
    };
    params.into_decoded().map_err(|e| ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {e}")))
}

/// `server`'s tool result `body` as the downstream client gets it, and whether it is a tool's
/// failure (`isError`): passed on as written where only stamps are to go
/// ([`tool_result::rewrite`]), else decoded and edited ([`edit_typed`]).
fn pass_on(view: &View, server: &str, body: Body) -> Result<(Body, bool), SetError> {
    let uris_mapped = view.slug_of.contains_key(server);
    let body = match body {
        Body::Raw(raw) => match tool_result::rewrite(raw.get(), uris_mapped) {
            ResultCheck::AsWritten { is_error } => return Ok((Body::Raw(raw), is_error)),
            ResultCheck::Rewritten { raw, is_error } => return Ok((Body::Raw(raw), is_error)),
            ResultCheck::Typed => Body::Raw(raw),
        },
        typed => typed,
    };
    edit_typed(view, server, body)
}

/// [`pass_on`] through the typed result: decoded (an upstream result that is no final tool
/// result is the error [`ConnectionSet::call_tool_on`] gives), its stamps taken off, its
/// content's URIs mapped.
fn edit_typed(view: &View, server: &str, body: Body) -> Result<(Body, bool), SetError> {
    let mut result =
        decode_tool_result(body).map_err(|source| SetError::Client { server: server.to_owned(), source })?;
    let is_error = result.is_error == Some(true);
    result.result_type = None;
    unstamp(&mut result.meta, &mut result.extra);
    if view.slug_of.contains_key(server) {
        map_content_uris(view, server, &mut result);
    }
    Ok((Body::typed(result), is_error))
}

/// The error of a request the policy refuses: -32003, naming the target and the rule
/// (`data`: `rule`, `kind`, `name`).
fn denied(kind: Kind, name: &str, decision: &Decision) -> ErrorObject {
    let rule = decision.rule_name();
    let message = match &decision.rule {
        Some(rule) => format!(
            "mcp-bridge: {} {} is denied to this caller by policy rule {}",
            kind.as_str(),
            name,
            printable(rule)
        ),
        None => format!("mcp-bridge: {} {} is denied to this caller by the policy's default", kind.as_str(), name),
    };
    let error = ErrorObject::new(DENIED, message);
    let data = serde_json::json!({"rule": rule, "kind": kind.as_str(), "name": name});
    error.clone().with_data(&data).unwrap_or(error)
}

/// The code of a request the gateway's policy refuses.
pub const DENIED: ErrorCode = ErrorCode(-32003);

/// The code of a call a rate limit refuses (`data`: `limit`, `retryAfterMs`).
pub const RATE_LIMITED: ErrorCode = ErrorCode(-32029);

/// What a downstream client gets for an upstream failure: the upstream's own JSON-RPC error as
/// it is, anything else -32603 naming the server.
fn upstream_error(server: &str, e: SetError) -> ErrorObject {
    if let SetError::Client { source: ClientError::Rpc { error, .. }, .. } = e {
        return error;
    }
    let mut error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("mcp-bridge: {e}"));
    if let Ok(with) = error.clone().with_data(&serde_json::json!({ "server": server })) {
        error = with;
    }
    error
}

/// Takes off a result what was the upstream's to say, not ours: its identity (2026-07-28
/// `_meta` serverInfo) and its era's stamps (`resultType`, `ttlMs`, `cacheScope`); the
/// downstream server stamps its own where the downstream era has them.
fn unstamp(meta: &mut Option<ResultMeta>, extra: &mut serde_json::Map<String, serde_json::Value>) {
    if let Some(m) = meta {
        m.server_info = None;
        if m.related_task.is_none() && m.extra.is_empty() {
            *meta = None;
        }
    }
    for key in ["resultType", "ttlMs", "cacheScope"] {
        extra.remove(key);
    }
}

/// What the progress relay's task is given: a notification to send, or a flush to answer once
/// everything before it is sent.
enum Relayed {
    Progress(crate::peer::Progress),
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// A progress callback that sends each upstream progress notification downstream, in order,
/// under the downstream request's own token; and the relay's queue, so that the caller can wait
/// for every notification to be sent before the result goes out ([`flush`]).
fn relay_progress(
    context: Context,
) -> (impl Fn(crate::peer::Progress) + Send + Sync + 'static, tokio::sync::mpsc::UnboundedSender<Relayed>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Relayed>();
    crate::transport::task::spawn(async move {
        while let Some(relayed) = rx.recv().await {
            match relayed {
                Relayed::Progress(p) => {
                    let progress = p.progress.as_f64().unwrap_or_default();
                    let _ = context.progress(progress, p.total.and_then(|t| t.as_f64()), p.message).await;
                }
                Relayed::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    });
    let queue = tx.clone();
    (
        move |p| {
            let _ = tx.send(Relayed::Progress(p));
        },
        queue,
    )
}

/// Waits until the relay has sent every notification queued so far.
async fn flush(queue: &tokio::sync::mpsc::UnboundedSender<Relayed>) {
    let (done, sent) = tokio::sync::oneshot::channel();
    if queue.send(Relayed::Flush(done)).is_ok() {
        let _ = sent.await;
    }
}

/// Maps the URIs of resource links and embedded resources in a result to their downstream form.
fn map_content_uris(view: &View, server: &str, result: &mut CallToolResult) {
    for block in &mut result.content {
        match block {
            ContentBlock::ResourceLink(link) => link.uri = view.map_uri(server, &link.uri),
            ContentBlock::Resource(embedded) => match &mut embedded.resource {
                ResourceContents::Text(c) => c.uri = view.map_uri(server, &c.uri),
                ResourceContents::Blob(c) => c.uri = view.map_uri(server, &c.uri),
                ResourceContents::Other(_) => {}
            },
            _ => {}
        }
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

    #[test]
    fn template_literal_prefix() {
        assert_eq!(literal_prefix("demo://resource/dynamic/{id}"), "demo://resource/dynamic/");
        assert_eq!(literal_prefix("file:///x"), "file:///x");
    }
}
