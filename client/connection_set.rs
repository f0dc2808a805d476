//! The connection set: many MCP servers behind one catalog, as codex's `McpConnectionManager`.
//!
//! [`ConnectionSet::new`] takes an [`McpConfig`]; [`ConnectionSet::start`] starts every enabled
//! server in parallel, each within its `startup_timeout`, reporting [`SetEvent`]s (starting,
//! ready, failed with a reason, cancelled, disabled) and a [`StartupSummary`] once all have
//! settled. A required server that fails makes `start` fail naming it
//! ([`SetError::StartupFailed`]); [`ConnectionSet::cancel_startup`] (or dropping the `start`
//! future) cancels it. A server that is not required and fails may be tried again in the
//! background ([`SetOptions::with_startup_retries`]; the policy is at [`ConnectionSet::start`]).
//!
//! The [`Catalog`] aggregates the tools (and resources, resource templates and prompts, where
//! the server advertises them) of every ready server. Tools are offered under qualified names
//! `mcp__SERVER__TOOL` reduced to `[A-Za-z0-9_-]` and at most 64 bytes; a name that is too long
//! or taken is cut and given `_` and 8 hex digits of the FNV-1a hash of the unreduced name.
//! Servers are taken in name order and tools in the server's order, so names are stable.
//! `enabled_tools` / `disabled_tools` are enforced before a server is touched; each tool's
//! [`ApprovalMode`] is resolved per tool, then per server, then [`SetOptions::default_approval_mode`].
//! A call waits at most the smaller of the server's `tool_timeout` and the caller's timeout;
//! a server with `supports_parallel_tool_calls = false` gets one call at a time.
//!
//! Staying healthy: `notifications/{tools,resources,prompts}/list_changed` re-lists that server
//! (debounced, [`SetOptions::refresh_debounce`]) and emits [`SetEvent::CatalogChanged`]. A
//! 2026-07-28 server sends those only on a `subscriptions/listen` stream: the set opens one
//! for each such connection, right after connecting and before listing it (for the list
//! changes its capabilities advertise with `listChanged`, or all three when it advertises
//! none), and cancels it with the connection; a stream that ends while its connection lasts
//! counts as the connection's end (reconnect, list, listen again). A
//! server whose connection ends (a stdio child that exits, an HTTP session the server forgot)
//! is restarted from its recipe with exponential backoff and listed again; calls in flight on it
//! fail with [`SetError::Disconnected`] and are never replayed. [`ConnectionSet::shutdown`]
//! cancels startup, ends every session and stops every child process with its process group.
//!
//! Server-to-client traffic: notifications from every server reach the host as
//! [`SetEvent::Notification`] tagged with the server's name. `sampling/createMessage` and
//! `elicitation/create` from any server go to the host's [`SetSamplingHandler`] /
//! [`SetElicitationHandler`] ([`SetOptions::with_sampling`], [`SetOptions::with_elicitation`]),
//! which receive the server's name with the params: each server's [`ClientOptions`] gets an
//! adapter bound to its name, and declares only the capabilities the host gave handlers for.
//! The roots of [`SetOptions::with_roots`] are offered to every server (`roots/list`), or a
//! [`SetRootsHandler`] ([`SetOptions::with_roots_handler`]) is asked for them on each request;
//! [`ConnectionSet::set_roots`] replaces them and sends `notifications/roots/list_changed` to
//! every connected server, and servers (re)connected later get the new ones
//! ([`ConnectionSet::notify_roots_changed`] only tells them, for a handler's roots). `ping` is
//! answered by the client layer; any other request -32601. Every one of these handlers runs in
//! the [`with_caller`](super::with_caller) scope of the call that caused the server's request,
//! when it can be told (see the client module): wrap a call in `with_caller` and
//! [`current_caller`](super::current_caller) in the handler names its caller.
//!
//! Calls with more: [`ConnectionSet::call_tool_with`] takes [`SetCallOptions`] (a timeout, a
//! progress callback that gets the server's `notifications/progress` for the call, and extra
//! `_meta` members to send upstream); [`ConnectionSet::call_tool_with_progress`] is its short
//! form. Dropping any call's future cancels it upstream (`notifications/cancelled`).
//!
//! Deferred startup: with a catalog cache ([`SetOptions::with_catalog_cache`]), every
//! server's listing is written after each successful listing, and a `startup = "lazy"` server
//! whose cached listing still matches its identity is not started by `start`: it is
//! [`ServerState::Deferred`], listed from the cache at once, and started on its first call
//! (calls arriving meanwhile wait for the same start). Eager starts are announced
//! ([`SetEvent::Starting`]) as one batch before any reports ready. A server with
//! `ready = "connected"` is ready once connected, and listed right after in the background
//! (then [`SetEvent::CatalogChanged`]); startup does not wait for its listing.
//!
//! Scoped identities: a server is keyed by [`ServerConfig::key`] (`SCOPE/NAME`, or its name
//! when unscoped), so two servers of one name in two scopes are started, listed, called and
//! reported apart; a scoped server's tools are qualified `mcp__SCOPE__NAME__TOOL` (within the
//! same 64-byte rule) and say their scope ([`CatalogTool::scope`]). A bare name given where a
//! key is expected means the unscoped server of that name, else the one scoped server of
//! that name; several are [`SetError::AmbiguousServer`].
//!
//! Over time: [`ConnectionSet::reload`] moves the set to a new configuration, keeping every
//! connection whose identity (command, args, env, cwd, url, headers, auth, era) did not change,
//! changing per-call settings in place, restarting changed servers make-before-break, and
//! shutting removed ones down (see `reload`). Connections are shared through leases (see
//! `lease`): the slot, each call in flight and each [`ServerLease`] hold one, and a connection
//! is closed after its last, so a retired connection finishes its calls first.
//!
//! Limits and hygiene: at most [`SetOptions::max_items_per_server`] tools (and as many
//! resources, templates, prompts) are taken from one server, with a [`SetEvent::Warning`]
//! when it lists more; a re-listing that fails keeps the previous catalog (and warns); the
//! `_meta` a caller gives loses the keys reserved to MCP or to the host before the call goes
//! upstream.
//!
//! Not here: where the configuration comes from (the `catalog` module: sources, precedence,
//! the cache file; the `config` module: reading and editing files).
//!
//! Each connection is watched by a task waiting on [`Client::closed`], so a server that goes
//! away is noticed at once (no polling); a call that fails with a disconnection (an HTTP
//! session the server expired answers 404 only when asked) triggers the restart too.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::{AbortHandle, JoinSet};

use super::catalog::cache::{self, CachedListing, CatalogCache};
use super::config::{ApprovalMode, ChildEnv, McpConfig, Readiness, ServerConfig, Startup, TransportConfig};
use super::{
    decode_tool_result, Client, ClientError, ClientOptions, ElicitationModes, EraPolicy, HandlerFuture, Listening,
    Progress,
};
pub use crate::proto::envelope::is_reserved_meta_key;
use crate::proto::jsonrpc::{Body, ErrorObject, Notification};
use crate::proto::mcp_types::{
    CallToolRequestParams, CallToolResult, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, ListPrompts, ListPromptsRequestParams, ListResourceTemplates,
    ListResourceTemplatesRequestParams, ListResources, ListResourcesRequestParams, Method, Prompt, RequestMeta,
    Resource, ResourceTemplate, Root, ServerCapabilities, SubscriptionFilter, Tool,
};
use crate::proto::session::RequestOptions;
use crate::proto::version::ProtocolVersion;
use crate::transport::boxed::BoxTransport;
#[cfg(feature = "http")]
use crate::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use crate::transport::stdio::{ChildCommand, Stderr, StdioTransport};
use crate::transport::Transport;

mod lease;
mod reload;

use lease::Held;
pub use lease::ServerLease;
pub use reload::ReloadReport;

/// The longest qualified tool name (the limit of most model APIs).
pub const MAX_TOOL_NAME_BYTES: usize = 64;

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
    /// ([`SetOptions::startup_retries`]).
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
    /// A server's tools, resources or prompts changed; [`ConnectionSet::catalog`] has the new ones.
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

/// Answers `sampling/createMessage` from any server of the set, told which server asks. Any
/// `Fn(String, CreateMessageRequestParams) -> impl Future<Output = Result<CreateMessageResult, ErrorObject>>`
/// closure is one (the `String` is the server's configured name).
pub trait SetSamplingHandler: Send + Sync + 'static {
    /// Produces the message for `server` (the host should let the user review the request,
    /// naming the server, first).
    fn create_message(&self, server: &str, params: CreateMessageRequestParams) -> HandlerFuture<CreateMessageResult>;
}

impl<F, Fut> SetSamplingHandler for F
where
    F: Fn(String, CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
{
    fn create_message(&self, server: &str, params: CreateMessageRequestParams) -> HandlerFuture<CreateMessageResult> {
        Box::pin(self(server.to_owned(), params))
    }
}

/// Answers `elicitation/create` from any server of the set, told which server asks. Any
/// `Fn(String, ElicitRequestParams) -> impl Future<Output = Result<ElicitResult, ErrorObject>>`
/// closure is one.
pub trait SetElicitationHandler: Send + Sync + 'static {
    /// Asks the user on behalf of `server` and reports what they did.
    fn elicit(&self, server: &str, params: ElicitRequestParams) -> HandlerFuture<ElicitResult>;
}

impl<F, Fut> SetElicitationHandler for F
where
    F: Fn(String, ElicitRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
{
    fn elicit(&self, server: &str, params: ElicitRequestParams) -> HandlerFuture<ElicitResult> {
        Box::pin(self(server.to_owned(), params))
    }
}

/// Answers `roots/list` from any server of the set, told which server asks, each time it asks.
/// Any `Fn(String) -> impl Future<Output = Result<Vec<Root>, ErrorObject>>` closure is one.
pub trait SetRootsHandler: Send + Sync + 'static {
    /// The roots to offer `server` now.
    fn list_roots(&self, server: &str) -> HandlerFuture<Vec<Root>>;
}

impl<F, Fut> SetRootsHandler for F
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<Root>, ErrorObject>> + Send + 'static,
{
    fn list_roots(&self, server: &str) -> HandlerFuture<Vec<Root>> {
        Box::pin(self(server.to_owned()))
    }
}

/// A progress callback of [`SetCallOptions`].
pub type SetProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

/// How one call through the set is made ([`ConnectionSet::call_tool_with`]). Build from
/// [`SetCallOptions::default`] and the `with_*` methods.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct SetCallOptions {
    /// The longest wait, never longer than the server's `tool_timeout`: default that.
    pub timeout: Option<Duration>,
    /// Gets the server's progress for the call (the call then carries a progress token of the
    /// client's own): default none, and no token is sent.
    pub on_progress: Option<SetProgressCallback>,
    /// Members added to the request's `_meta` as given (e.g. what a gateway relays from its
    /// downstream request): default none. A `progressToken` among them is dropped (the client
    /// chooses its own), and so are keys reserved to MCP ([`is_reserved_meta_key`]) or to the
    /// host ([`SetOptions::reserved_meta_prefixes`]).
    pub meta: Map<String, Value>,
}

impl fmt::Debug for SetCallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetCallOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.as_ref().map(|_| ".."))
            .field("meta", &self.meta)
            .finish()
    }
}

impl SetCallOptions {
    /// These options waiting at most `timeout` (within the server's `tool_timeout`).
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// These options sending the call's progress to `on_progress`.
    pub fn with_progress(mut self, on_progress: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(on_progress));
        self
    }

    /// These options adding `_meta` member `key` (a `progressToken` is dropped).
    pub fn with_meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }
}

/// How the set behaves. Build from [`SetOptions::default`] and the `with_*` methods.
#[derive(Clone)]
#[non_exhaustive]
pub struct SetOptions {
    /// The options of every client (`clientInfo`, capabilities, versions); the handler is the
    /// set's own.
    pub client: ClientOptions,
    /// The approval mode of tools whose server and tool settings name none: default `prompt`.
    pub default_approval_mode: ApprovalMode,
    /// How long after a `list_changed` notification the server is re-listed (further
    /// notifications in between are folded in): default 200 ms.
    pub refresh_debounce: Duration,
    /// Whether a server whose connection ends is restarted: default true.
    pub reconnect: bool,
    /// Restart attempts before the server is marked failed: default 5; `u32::MAX`: until it
    /// starts again (or the set shuts down).
    pub max_reconnect_attempts: u32,
    /// The first wait before a restart, doubled each attempt: default 100 ms.
    pub initial_backoff: Duration,
    /// The longest wait between restarts: default 5 s.
    pub max_backoff: Duration,
    /// What stdio children do with their stderr: default discarded.
    pub stderr: Stderr,
    /// Who gets each line of a stdio child's stderr with its server's name, instead of
    /// [`SetOptions::stderr`]: default nobody.
    pub stderr_lines: Option<StderrLines>,
    /// Where events go: default nowhere.
    pub events: Option<EventSink>,
    /// Who answers `sampling/createMessage` from every server (declares `sampling`): default
    /// nobody (then [`ClientOptions::sampling`] of [`SetOptions::client`], if any, answers
    /// without the server's name).
    pub sampling: Option<Arc<dyn SetSamplingHandler>>,
    /// Who answers `elicitation/create` from every server, in which modes: default nobody (then
    /// [`ClientOptions::elicitation`], if any).
    pub elicitation: Option<(Arc<dyn SetElicitationHandler>, ElicitationModes)>,
    /// The roots offered to every server (declares `roots`): default none (then
    /// [`ClientOptions::roots`], if any). [`ConnectionSet::set_roots`] replaces them.
    pub roots: Option<Vec<Root>>,
    /// Who answers `roots/list` from every server, asked each time (declares `roots`): default
    /// nobody. Takes precedence over [`SetOptions::roots`].
    pub roots_handler: Option<Arc<dyn SetRootsHandler>>,
    /// How many times a server that is not `required` and fails at startup is tried again in
    /// the background: default 0 (never); `u32::MAX`: until it starts (or the set shuts down).
    pub startup_retries: u32,
    /// Where every server's listing is kept after each successful listing, and where
    /// `startup = "lazy"` servers are listed from at start: default nowhere (lazy servers then
    /// start as eager ones).
    pub catalog_cache: Option<CatalogCache>,
    /// The most tools, resources, resource templates and prompts (each) taken from one
    /// server: default [`DEFAULT_MAX_ITEMS`]. The rest are left out, with a
    /// [`SetEvent::Warning`].
    pub max_items_per_server: usize,
    /// `_meta` key prefixes the host keeps for itself (say `com.example.host/`): stripped,
    /// with the MCP-reserved ones ([`is_reserved_meta_key`]), from the `_meta` a caller gives
    /// in [`SetCallOptions::meta`]: default none.
    pub reserved_meta_prefixes: Vec<String>,
    /// Where HTTP servers' OAuth logins are kept ([`super::login`]): default none, i.e. such a
    /// server's 401 is just an error.
    #[cfg(feature = "oauth")]
    pub logins: Option<super::login::Logins>,
    /// How stdio children's environments are built, and which of our variables they never
    /// get: default each server's own rule, nothing withheld (see [`ChildEnv`]).
    pub child_env: ChildEnv,
}

/// A callback of [`SetOptions::stderr_lines`]: `(server, line)`.
pub type StderrLines = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The default of [`SetOptions::max_items_per_server`].
pub const DEFAULT_MAX_ITEMS: usize = 1000;

impl Default for SetOptions {
    fn default() -> Self {
        SetOptions {
            client: ClientOptions::default(),
            default_approval_mode: ApprovalMode::Prompt,
            refresh_debounce: Duration::from_millis(200),
            reconnect: true,
            max_reconnect_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            stderr: Stderr::Discard,
            stderr_lines: None,
            events: None,
            sampling: None,
            elicitation: None,
            roots: None,
            roots_handler: None,
            startup_retries: 0,
            catalog_cache: None,
            max_items_per_server: DEFAULT_MAX_ITEMS,
            reserved_meta_prefixes: Vec::new(),
            #[cfg(feature = "oauth")]
            logins: None,
            child_env: ChildEnv::default(),
        }
    }
}

impl fmt::Debug for SetOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetOptions")
            .field("client", &self.client)
            .field("default_approval_mode", &self.default_approval_mode)
            .field("refresh_debounce", &self.refresh_debounce)
            .field("reconnect", &self.reconnect)
            .field("max_reconnect_attempts", &self.max_reconnect_attempts)
            .field("sampling", &self.sampling.as_ref().map(|_| ".."))
            .field("elicitation", &self.elicitation.as_ref().map(|(_, modes)| modes))
            .field("roots", &self.roots)
            .field("roots_handler", &self.roots_handler.as_ref().map(|_| ".."))
            .field("startup_retries", &self.startup_retries)
            .field("child_env", &self.child_env)
            .finish_non_exhaustive()
    }
}

impl SetOptions {
    /// These options with other client options.
    pub fn with_client_options(mut self, client: ClientOptions) -> Self {
        self.client = client;
        self
    }

    /// These options with another host default approval mode.
    pub fn with_default_approval_mode(mut self, mode: ApprovalMode) -> Self {
        self.default_approval_mode = mode;
        self
    }

    /// These options with another refresh debounce.
    pub fn with_refresh_debounce(mut self, debounce: Duration) -> Self {
        self.refresh_debounce = debounce;
        self
    }

    /// These options with restarts on or off.
    pub fn with_reconnect(mut self, on: bool) -> Self {
        self.reconnect = on;
        self
    }

    /// These options with another restart policy.
    pub fn with_backoff(mut self, initial: Duration, max: Duration, attempts: u32) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self.max_reconnect_attempts = attempts;
        self
    }

    /// These options handling children's stderr so.
    pub fn with_stderr(mut self, stderr: Stderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// These options handing each line of a stdio child's stderr to `lines` with its
    /// server's name (`lines(server, line)`), instead of [`SetOptions::stderr`].
    pub fn with_stderr_lines(mut self, lines: impl Fn(&str, &str) + Send + Sync + 'static) -> Self {
        self.stderr_lines = Some(Arc::new(lines));
        self
    }

    /// These options sending events to `sink`.
    pub fn with_events(mut self, sink: impl Fn(SetEvent) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// These options answering `sampling/createMessage` from every server with `handler`, which
    /// is told the server's name (declares `sampling` to every server).
    pub fn with_sampling(mut self, handler: impl SetSamplingHandler) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// These options answering form-mode `elicitation/create` from every server with `handler`.
    pub fn with_elicitation(self, handler: impl SetElicitationHandler) -> Self {
        self.with_elicitation_modes(handler, ElicitationModes::FORM)
    }

    /// These options answering `elicitation/create` in `modes` from every server with `handler`.
    pub fn with_elicitation_modes(mut self, handler: impl SetElicitationHandler, modes: ElicitationModes) -> Self {
        self.elicitation = Some((Arc::new(handler), modes));
        self
    }

    /// These options asking `handler` for the roots of each `roots/list` of any server (declares
    /// `roots` with `listChanged`; takes precedence over [`SetOptions::with_roots`]).
    pub fn with_roots_handler(mut self, handler: impl SetRootsHandler) -> Self {
        self.roots_handler = Some(Arc::new(handler));
        self
    }

    /// These options offering `roots` to every server (declares `roots` with `listChanged`).
    pub fn with_roots(mut self, roots: impl IntoIterator<Item = Root>) -> Self {
        self.roots = Some(roots.into_iter().collect());
        self
    }

    /// These options trying a non-required server that fails at startup `retries` more times,
    /// in the background (see [`ConnectionSet::start`]).
    pub fn with_startup_retries(mut self, retries: u32) -> Self {
        self.startup_retries = retries;
        self
    }

    /// These options keeping the servers' listings in `cache` (see [`SetOptions::catalog_cache`]).
    pub fn with_catalog_cache(mut self, cache: CatalogCache) -> Self {
        self.catalog_cache = Some(cache);
        self
    }

    /// These options taking at most `max` items of each kind from one server.
    pub fn with_max_items_per_server(mut self, max: usize) -> Self {
        self.max_items_per_server = max;
        self
    }

    /// These options stripping `_meta` keys that start with `prefix` from callers' `_meta`.
    pub fn with_reserved_meta_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.reserved_meta_prefixes.push(prefix.into());
        self
    }

    /// These options sending the stored OAuth login of each HTTP server that has no
    /// credentials of its own (never starting a flow: see [`super::login`]).
    #[cfg(feature = "oauth")]
    pub fn with_logins(mut self, logins: super::login::Logins) -> Self {
        self.logins = Some(logins);
        self
    }

    /// These options building stdio children's environments by `rule` (see [`ChildEnv`]).
    pub fn with_child_env(mut self, rule: ChildEnv) -> Self {
        self.child_env = rule;
        self
    }

    /// These options sending events to a new unbounded channel, and its receiver (drain it).
    pub fn with_event_channel(self) -> (Self, mpsc::UnboundedReceiver<SetEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            self.with_events(move |event| {
                let _ = tx.send(event);
            }),
            rx,
        )
    }
}

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

/// One tool of the catalog.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CatalogTool {
    /// The name it is offered under: `mcp__SERVER__TOOL` (`mcp__SCOPE__SERVER__TOOL` for a
    /// scoped server), reduced.
    pub qualified_name: String,
    /// The server's key ([`ServerConfig::key`]: its name, or `SCOPE/NAME`).
    pub server: String,
    /// The scope the server runs in, if any.
    pub scope: Option<String>,
    /// The tool as the server lists it.
    pub tool: Tool,
    /// Its resolved approval mode.
    pub approval_mode: ApprovalMode,
}

/// Everything the ready servers offer, in stable order.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Catalog {
    /// Tools, by server name then the server's order.
    pub tools: Vec<CatalogTool>,
    /// `(server, resource)`.
    pub resources: Vec<(String, Resource)>,
    /// `(server, template)`.
    pub resource_templates: Vec<(String, ResourceTemplate)>,
    /// `(server, prompt)`.
    pub prompts: Vec<(String, Prompt)>,
}

impl Catalog {
    /// The tool offered as `qualified_name`.
    pub fn tool(&self, qualified_name: &str) -> Option<&CatalogTool> {
        self.tools.iter().find(|t| t.qualified_name == qualified_name)
    }
}

/// A connection over any transport: one `Client` type for all of them (a `BoxTransport`), so
/// the client's code is compiled once and not once per transport; `kind` keeps what differs.
#[derive(Clone)]
struct Conn {
    client: Client<BoxTransport>,
    kind: ConnKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ConnKind {
    Stdio,
    #[cfg(feature = "http")]
    Http,
    InProcess,
}

impl Conn {
    async fn connect<T: Transport>(transport: T, kind: ConnKind, options: ClientOptions) -> Result<Conn, String> {
        let client = Client::connect(BoxTransport::new(transport), options).await.map_err(|e| e.to_string())?;
        Ok(Conn { client, kind })
    }

    fn stdio(&self) -> Option<&StdioTransport> {
        self.client.transport().downcast_ref()
    }

    async fn closed(&self) {
        self.client.closed().await
    }

    fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Waits up to `grace` for a stdio child whose connection ended to be reaped, so that
    /// [`Conn::end_reason`] can name its exit.
    async fn wait_for_exit(&self, grace: Duration) {
        let Some(stdio) = self.stdio() else { return };
        let deadline = Instant::now() + grace;
        while stdio.exit_status().is_none() && stdio.child_pid().is_some() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn capabilities(&self) -> &ServerCapabilities {
        self.client.capabilities()
    }

    fn protocol_version(&self) -> ProtocolVersion {
        self.client.protocol_version()
    }

    fn instructions(&self) -> Option<&str> {
        self.client.instructions()
    }

    fn server_info(&self) -> &Implementation {
        self.client.server_info()
    }

    fn pid(&self) -> Option<u32> {
        self.stdio().and_then(StdioTransport::child_pid)
    }

    /// Why the connection ended, as far as we can tell.
    fn end_reason(&self) -> String {
        match self.kind {
            ConnKind::Stdio => match self.stdio().and_then(StdioTransport::exit_status) {
                Some(status) => format!("the server exited ({status})"),
                None => "the server closed the connection".to_owned(),
            },
            #[cfg(feature = "http")]
            ConnKind::Http => "the connection closed".to_owned(),
            ConnKind::InProcess => "the in-process server closed the connection".to_owned(),
        }
    }

    async fn close(&self) {
        let _ = self.client.close().await;
    }

    async fn request<M>(&self, params: M::Params, options: RequestOptions) -> Result<M::Output, ClientError>
    where
        M: Method,
        M::Params: Send + Sync + 'static,
        M::Output: Clone + Send + Sync + 'static,
    {
        Box::pin(self.client.request::<M>(params, options)).await
    }

    /// A call's future is boxed: inline, it is kilobytes, and every future awaiting it up to
    /// the gateway's forwarded request grows by as much and is copied whole at each level, on
    /// every call (a third of a bridged call's instructions were those copies).
    async fn call_tool(&self, params: CallToolRequestParams, options: RequestOptions) -> Result<Body, ClientError> {
        Box::pin(self.client.call_tool_body(params, options)).await
    }

    async fn call_tool_with_progress(
        &self,
        params: CallToolRequestParams,
        options: RequestOptions,
        on_progress: SetProgressCallback,
    ) -> Result<Body, ClientError> {
        Box::pin(self.client.call_tool_body_with_progress(params, options, move |p| on_progress(p))).await
    }

    async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.client.list_tools().await
    }

    fn roots(&self) -> Option<Vec<Root>> {
        self.client.roots()
    }

    async fn set_roots(&self, roots: Vec<Root>) -> Result<(), ClientError> {
        self.client.set_roots(roots).await
    }

    async fn notify_roots_changed(&self) -> Result<(), ClientError> {
        self.client.notify_roots_changed().await
    }

    /// Opens the `subscriptions/listen` stream that carries a 2026-07-28 server's list
    /// changes; `None` in the handshake era, where they arrive on the session.
    async fn listen_for_list_changes(&self) -> Option<Result<Listening, ClientError>> {
        if self.protocol_version().has_initialize_handshake() {
            return None;
        }
        let filter = list_changes_filter(self.capabilities());
        Some(self.client.listen(filter).await)
    }
}

/// The list changes to listen for: those the server advertises with `listChanged`, or all
/// three when it advertises none of them (a server adopted without discovery says nothing).
fn list_changes_filter(caps: &ServerCapabilities) -> SubscriptionFilter {
    let tools = caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true);
    let prompts = caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true);
    let resources = caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true);
    let unknown = !(tools || prompts || resources);
    SubscriptionFilter {
        tools_list_changed: (tools || unknown).then_some(true),
        prompts_list_changed: (prompts || unknown).then_some(true),
        resources_list_changed: (resources || unknown).then_some(true),
        ..SubscriptionFilter::default()
    }
}

/// What a server offers, as last listed.
#[derive(Default, Clone)]
struct Listing {
    tools: Vec<Tool>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<Prompt>,
    /// Not listed yet (`ready = "connected"`): listed right after the connection is installed.
    pending: bool,
}

impl From<CachedListing> for Listing {
    fn from(entry: CachedListing) -> Listing {
        Listing {
            tools: entry.tools,
            resources: entry.resources,
            templates: entry.resource_templates,
            prompts: entry.prompts,
            pending: false,
        }
    }
}

impl Listing {
    fn cached(&self, config: &ServerConfig) -> CachedListing {
        CachedListing {
            identity: cache::identity(config),
            tools: self.tools.clone(),
            resources: self.resources.clone(),
            resource_templates: self.templates.clone(),
            prompts: self.prompts.clone(),
        }
    }
}

struct SlotState {
    state: ServerState,
    /// The slot's lease on its connection; calls in flight and [`ServerLease`]s hold others.
    conn: Option<Arc<Held>>,
    /// Bumped by every new connection: a stale watcher or refresh can tell it is stale.
    generation: u64,
    error: Option<String>,
    /// Failed tries to start since it was last ready.
    failed_attempts: u32,
    protocol_version: Option<ProtocolVersion>,
    server_info: Option<Implementation>,
    listing: Listing,
    elapsed: Duration,
    watcher: Option<AbortHandle>,
}

struct Slot {
    name: String,
    /// Replaced in place by a reload that changes only per-call settings (filters, timeouts,
    /// approval modes), or after a restart with a new connection identity.
    config: RwLock<Arc<ServerConfig>>,
    state: Mutex<SlotState>,
    /// One permit: taken by each call while the server's `supports_parallel_tool_calls` is false.
    serial: Arc<Semaphore>,
    refresh_scheduled: AtomicBool,
    /// Bumped, under the state lock, when the start running for this slot is superseded (a
    /// reload changed or removed the server): that start gives up and leaves the state alone.
    epoch: watch::Sender<u64>,
    /// Removed from the set by a reload: nothing restarts or reinstalls it.
    retired: AtomicBool,
    /// Held by the call that starts a deferred server; the calls behind it wait.
    waking: tokio::sync::Mutex<()>,
}

impl Slot {
    fn new(config: ServerConfig) -> Slot {
        let state = if config.enabled { ServerState::Pending } else { ServerState::Disabled };
        Slot {
            name: config.key(),
            state: Mutex::new(SlotState {
                state,
                conn: None,
                generation: 0,
                error: None,
                failed_attempts: 0,
                protocol_version: None,
                server_info: None,
                listing: Listing::default(),
                elapsed: Duration::ZERO,
                watcher: None,
            }),
            config: RwLock::new(Arc::new(config)),
            serial: Arc::new(Semaphore::new(1)),
            refresh_scheduled: AtomicBool::new(false),
            epoch: watch::channel(0).0,
            retired: AtomicBool::new(false),
            waking: tokio::sync::Mutex::new(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().expect("slot lock")
    }

    fn config(&self) -> Arc<ServerConfig> {
        self.config.read().expect("config lock").clone()
    }

    fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    fn status(&self) -> ServerStatus {
        let config = self.config();
        let s = self.lock();
        ServerStatus {
            name: self.name.clone(),
            state: s.state,
            required: config.required,
            era: config.era,
            protocol_version: s.protocol_version,
            server_info: s.server_info.clone(),
            tools: s.listing.tools.len(),
            elapsed: s.elapsed,
            error: s.error.clone(),
            failed_attempts: s.failed_attempts,
            connections: s.generation,
        }
    }
}

struct Shared {
    /// Replaced by [`ConnectionSet::reload`]; never held across an await.
    slots: RwLock<BTreeMap<String, Arc<Slot>>>,
    options: SetOptions,
    catalog: Mutex<Arc<Catalog>>,
    cancel: watch::Sender<bool>,
    shut_down: AtomicBool,
    /// [`ConnectionSet::start`] has run: a reload starts the servers it adds or changes.
    started: AtomicBool,
    /// One reload at a time.
    reloading: tokio::sync::Mutex<()>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// The roots offered to every server: [`SetOptions::roots`], then [`ConnectionSet::set_roots`].
    roots: RwLock<Option<Vec<Root>>>,
}

impl Shared {
    /// The slots now, in name order (a snapshot: a reload may replace them meanwhile).
    fn slots(&self) -> Vec<Arc<Slot>> {
        self.slots.read().expect("slots lock").values().cloned().collect()
    }

    /// The slot of key `server`; or, for a bare name, the unscoped server of that name (the
    /// exact key), else the one scoped server of that name.
    fn slot(&self, server: &str) -> Option<Arc<Slot>> {
        self.find(server).ok().flatten()
    }

    /// As [`Shared::slot`], telling an ambiguous name (several scopes, none unscoped) apart:
    /// `Err` with the keys it could mean.
    fn find(&self, server: &str) -> Result<Option<Arc<Slot>>, Vec<String>> {
        let slots = self.slots.read().expect("slots lock");
        if let Some(slot) = slots.get(server) {
            return Ok(Some(slot.clone()));
        }
        let mut named = slots.values().filter(|slot| slot.config().name == server);
        match (named.next(), named.next()) {
            (None, _) => Ok(None),
            (Some(one), None) => Ok(Some(one.clone())),
            (Some(a), Some(b)) => {
                let mut keys = vec![a.name.clone(), b.name.clone()];
                keys.extend(named.map(|slot| slot.name.clone()));
                Err(keys)
            }
        }
    }

    fn emit(&self, event: SetEvent) {
        if let Some(sink) = &self.options.events {
            sink(event);
        }
    }

    fn track(&self, handle: AbortHandle) {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    /// Writes every listed server's listing to the catalog cache, if there is one (the entries
    /// of servers not listed now are kept). A write that fails is a warning.
    fn save_cache(&self) {
        let Some(cache) = &self.options.catalog_cache else { return };
        let mut entries = BTreeMap::new();
        for slot in self.slots() {
            let s = slot.lock();
            let listed = matches!(s.state, ServerState::Ready | ServerState::Reconnecting | ServerState::Deferred);
            if listed && !s.listing.pending {
                entries.insert(slot.name.clone(), s.listing.cached(&slot.config()));
            }
        }
        if let Err(e) = cache.update(&entries) {
            let message = format!("catalog cache {} not written: {e}", cache.path().display());
            self.emit(SetEvent::Warning { server: None, message });
        }
    }

    fn rebuild_catalog(&self) {
        let mut entries = Vec::new();
        let mut catalog = Catalog::default();
        for slot in self.slots() {
            let name = &slot.name;
            let config = slot.config();
            let s = slot.lock();
            if !matches!(s.state, ServerState::Ready | ServerState::Reconnecting | ServerState::Deferred) {
                continue;
            }
            // The scope joins the qualified name: mcp__SCOPE__NAME__TOOL.
            let naming = match &config.scope {
                Some(scope) => format!("{scope}__{}", config.name),
                None => config.name.clone(),
            };
            for tool in &s.listing.tools {
                if config.tool_allowed(&tool.name) {
                    let approval_mode = config.approval_mode(&tool.name, self.options.default_approval_mode);
                    entries.push((name.clone(), config.scope.clone(), naming.clone(), tool.clone(), approval_mode));
                }
            }
            catalog.resources.extend(s.listing.resources.iter().map(|r| (name.clone(), r.clone())));
            catalog.resource_templates.extend(s.listing.templates.iter().map(|r| (name.clone(), r.clone())));
            catalog.prompts.extend(s.listing.prompts.iter().map(|p| (name.clone(), p.clone())));
        }
        let names = qualify(entries.iter().map(|(_, _, naming, tool, _)| (naming.as_str(), tool.name.as_str())));
        catalog.tools = entries
            .into_iter()
            .zip(names)
            .map(|((server, scope, _, tool, approval_mode), qualified_name)| CatalogTool {
                qualified_name,
                server,
                scope,
                tool,
                approval_mode,
            })
            .collect();
        *self.catalog.lock().expect("catalog lock") = Arc::new(catalog);
    }
}

/// Qualified names for `(server, tool)` pairs, in order: `mcp__SERVER__TOOL` reduced to
/// `[A-Za-z0-9_-]`; when that is longer than [`MAX_TOOL_NAME_BYTES`] or already taken, cut to
/// 55 bytes and suffixed with `_` and the 8 hex digits of the FNV-1a hash of the unreduced name.
pub fn qualify<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut used = HashSet::new();
    let mut out = Vec::new();
    for (server, tool) in pairs {
        let full = format!("mcp__{server}__{tool}");
        let mut name = sanitize(&full);
        if name.len() > MAX_TOOL_NAME_BYTES || used.contains(&name) {
            let cut = MAX_TOOL_NAME_BYTES - 9;
            let mut salt = 0u32;
            loop {
                let hash = if salt == 0 { fnv1a(full.as_bytes()) } else { fnv1a(format!("{full}#{salt}").as_bytes()) };
                let candidate = format!("{}_{hash:08x}", &name[..name.len().min(cut)]);
                if !used.contains(&candidate) {
                    name = candidate;
                    break;
                }
                salt += 1;
            }
        }
        used.insert(name.clone());
        out.push(name);
    }
    out
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// 32-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |hash, b| (hash ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

/// Many MCP servers, one catalog. Cheap to clone; every clone drives the same set.
#[derive(Clone)]
pub struct ConnectionSet {
    shared: Arc<Shared>,
}

impl fmt::Debug for ConnectionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionSet").field("servers", &self.servers()).finish()
    }
}

impl ConnectionSet {
    /// A set of the servers of `config`; nothing is started until [`ConnectionSet::start`].
    pub fn new(config: McpConfig, options: SetOptions) -> ConnectionSet {
        let slots = config.servers.into_values().map(|config| (config.key(), Arc::new(Slot::new(config)))).collect();
        let (cancel, _) = watch::channel(false);
        let roots = RwLock::new(options.roots.clone());
        ConnectionSet {
            shared: Arc::new(Shared {
                slots: RwLock::new(slots),
                options,
                catalog: Mutex::new(Arc::new(Catalog::default())),
                cancel,
                shut_down: AtomicBool::new(false),
                started: AtomicBool::new(false),
                reloading: tokio::sync::Mutex::new(()),
                tasks: Mutex::new(Vec::new()),
                roots,
            }),
        }
    }

    /// Starts every enabled server in parallel, each within its `startup_timeout`, and waits
    /// for all to settle. Events are emitted as it goes, [`SetEvent::StartupComplete`] last.
    ///
    /// A server that fails is reported ([`SetEvent::Failed`] with the reason, and in the
    /// summary); with [`SetOptions::with_startup_retries`], a failed server that is not
    /// `required` is then tried again in the background (see the policy below). Required
    /// servers are never retried: `start` fails naming them and the host decides. Nor is a
    /// server our [`ChildEnv`] refuses (it names a withheld variable): no try would differ.
    ///
    /// Retry policy: up to [`SetOptions::startup_retries`] more tries (default 0), waiting
    /// [`SetOptions::initial_backoff`] before the first and doubling up to
    /// [`SetOptions::max_backoff`], each within the server's `startup_timeout`: the backoff of a
    /// server whose connection ended. Meanwhile the server is [`ServerState::Retrying`] with the
    /// last try's error and [`ServerStatus::failed_attempts`] (calls get
    /// [`SetError::Unavailable`]); each try emits [`SetEvent::Reconnecting`], success
    /// [`SetEvent::Reconnected`] and [`SetEvent::CatalogChanged`], and giving up
    /// [`SetEvent::Failed`] once more (the server is then [`ServerState::Failed`]). A server a
    /// reload adds or changes, and that fails to start, is retried the same way. Shutdown stops
    /// the retries.
    ///
    /// # Cancel safety
    /// Dropping the future aborts the starts still running (their children are killed).
    ///
    /// # Errors
    /// [`SetError::StartupFailed`] naming the required servers that did not start (the others
    /// stay up); [`SetError::StartupCancelled`] after [`ConnectionSet::cancel_startup`] or
    /// [`ConnectionSet::shutdown`].
    pub async fn start(&self) -> Result<StartupSummary, SetError> {
        let shared = &self.shared;
        shared.started.store(true, Ordering::Release);
        let slots = shared.slots();
        let mut cached = self.load_cache(&slots);
        let mut eager = Vec::new();
        for slot in slots {
            let config = slot.config();
            if !config.enabled {
                shared.emit(SetEvent::Disabled { server: slot.name.clone() });
                continue;
            }
            let mut s = slot.lock();
            if s.state != ServerState::Pending {
                continue;
            }
            if let Some(entry) = cached.remove(&slot.name).filter(|_| config.startup == Startup::Lazy) {
                s.state = ServerState::Deferred;
                s.listing = Listing::from(entry);
                let tools = s.listing.tools.len();
                drop(s);
                shared.emit(SetEvent::Deferred { server: slot.name.clone(), tools });
                continue;
            }
            s.state = ServerState::Starting;
            drop(s);
            eager.push(slot);
        }
        // Every eager start is announced before any can report ready.
        for slot in &eager {
            shared.emit(SetEvent::Starting { server: slot.name.clone() });
        }
        let mut starts = JoinSet::new();
        for slot in eager {
            let shared = shared.clone();
            starts.spawn(async move { start_one(&shared, &slot, false).await });
        }
        let mut cancelled = false;
        while let Some(outcome) = starts.join_next().await {
            cancelled |= matches!(outcome, Ok(StartEnd::Cancelled));
        }
        shared.rebuild_catalog();
        shared.save_cache();
        let summary = self.summary();
        shared.emit(SetEvent::StartupComplete(summary.clone()));
        if cancelled || *shared.cancel.borrow() {
            return Err(SetError::StartupCancelled { summary });
        }
        self.retry_failed_starts();
        let required = summary.failed_required();
        if !required.is_empty() {
            return Err(SetError::StartupFailed { required, summary });
        }
        Ok(summary)
    }

    /// The cached listings of the lazy servers among `slots` (the warnings emitted).
    fn load_cache(&self, slots: &[Arc<Slot>]) -> BTreeMap<String, CachedListing> {
        let Some(cache) = &self.shared.options.catalog_cache else { return BTreeMap::new() };
        let configs: Vec<Arc<ServerConfig>> =
            slots.iter().map(|s| s.config()).filter(|c| c.enabled && c.startup == Startup::Lazy).collect();
        if configs.is_empty() {
            return BTreeMap::new();
        }
        let loaded = cache.load(configs.iter().map(|c| c.as_ref()));
        for message in loaded.ignored {
            self.shared.emit(SetEvent::Warning { server: None, message });
        }
        loaded.servers
    }

    /// Starts a deferred server (its first call); the calls that arrive meanwhile wait for
    /// the same start.
    async fn wake(&self, slot: &Arc<Slot>) {
        // Starting: maybe woken by another call right now; wait for it behind the gate.
        if !matches!(slot.lock().state, ServerState::Deferred | ServerState::Starting) {
            return;
        }
        let _waking = slot.waking.lock().await;
        if slot.lock().state != ServerState::Deferred {
            return;
        }
        let shared = &self.shared;
        // Boxed: a start holds a whole connect of any transport, which would otherwise make
        // every call's future (this wait is a state of it) as large, for a path taken once.
        Box::pin(start_one(shared, slot, true)).await;
        shared.rebuild_catalog();
        shared.save_cache();
        shared.emit(SetEvent::CatalogChanged { server: slot.name.clone() });
    }

    /// Starts the retries of failed non-required servers (the policy of [`ConnectionSet::start`]).
    fn retry_failed_starts(&self) {
        for slot in self.shared.slots() {
            retry_failed_start(&self.shared, &slot);
        }
    }

    /// Cancels the starts still running: their servers end up [`ServerState::Cancelled`] and
    /// [`ConnectionSet::start`] fails with [`SetError::StartupCancelled`].
    pub fn cancel_startup(&self) {
        self.shared.cancel.send_replace(true);
    }

    /// Every server's state, in name order.
    pub fn summary(&self) -> StartupSummary {
        StartupSummary { servers: self.shared.slots().iter().map(|s| s.status()).collect() }
    }

    /// One server's state.
    pub fn status(&self, server: &str) -> Option<ServerStatus> {
        self.shared.slot(server).map(|s| s.status())
    }

    /// The configured server names, in order (as of now: a reload may change them).
    pub fn servers(&self) -> Vec<String> {
        self.shared.slots.read().expect("slots lock").keys().cloned().collect()
    }

    /// The current catalog (a snapshot).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.shared.catalog.lock().expect("catalog lock").clone()
    }

    /// The tools of the catalog.
    pub fn tools(&self) -> Vec<CatalogTool> {
        self.catalog().tools.clone()
    }

    /// The server and tool behind a qualified name.
    pub fn resolve(&self, qualified_name: &str) -> Option<(String, String)> {
        self.catalog().tool(qualified_name).map(|t| (t.server.clone(), t.tool.name.clone()))
    }

    /// The approval mode of tool `tool` of `server` (tool, then server, then the host's default),
    /// or `None` for an unknown server.
    pub fn approval_mode(&self, server: &str, tool: &str) -> Option<ApprovalMode> {
        let slot = self.shared.slot(server)?;
        Some(slot.config().approval_mode(tool, self.shared.options.default_approval_mode))
    }

    /// The process id of a stdio server's child (its process group id too), while connected.
    pub fn server_pid(&self, server: &str) -> Option<u32> {
        self.shared.slot(server)?.lock().conn.as_ref()?.pid()
    }

    /// A lease on `server`'s connection as it is now (see [`ServerLease`]): the connection
    /// lasts until every lease on it is given up, even when a reload replaces or removes the
    /// server; several leases share one connection (one child).
    ///
    /// # Errors
    /// [`SetError::UnknownServer`]; [`SetError::Unavailable`] when it is not ready.
    pub fn lease(&self, server: &str) -> Result<ServerLease, SetError> {
        let slot = self.slot(server)?;
        let (held, _) = self.ready_conn(&slot)?;
        Ok(ServerLease::new(slot.name.clone(), held, slot.config().tool_timeout))
    }

    /// What a connected server advertises (its `capabilities`) and its `instructions`, while
    /// connected.
    pub fn server_offer(&self, server: &str) -> Option<(ServerCapabilities, Option<String>)> {
        let slot = self.shared.slot(server)?;
        let s = slot.lock();
        let conn = s.conn.as_ref()?;
        Some((conn.capabilities().clone(), conn.instructions().map(str::to_owned)))
    }

    /// Calls the tool offered as `qualified_name`, waiting at most the smaller of the server's
    /// `tool_timeout` and `timeout`.
    ///
    /// # Errors
    /// [`SetError::UnknownTool`] when the catalog has no such name; otherwise as
    /// [`ConnectionSet::call_tool_on`].
    pub async fn call_tool(
        &self,
        qualified_name: &str,
        arguments: Option<Map<String, Value>>,
        timeout: Option<Duration>,
    ) -> Result<CallToolResult, SetError> {
        let (server, tool) =
            self.resolve(qualified_name).ok_or_else(|| SetError::UnknownTool { name: qualified_name.to_owned() })?;
        self.call_tool_on(&server, &tool, arguments, timeout).await
    }

    /// Calls tool `tool` of `server`. The tool filters are checked before the server is
    /// touched; a server that takes one call at a time is waited for.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled`).
    ///
    /// # Errors
    /// [`SetError::UnknownServer`], [`SetError::ToolDisabled`], [`SetError::Unavailable`],
    /// [`SetError::Timeout`], [`SetError::Disconnected`] (the server went away; the call is not
    /// retried, the server is restarted), [`SetError::Client`].
    pub async fn call_tool_on(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        timeout: Option<Duration>,
    ) -> Result<CallToolResult, SetError> {
        self.call_tool_with(server, tool, arguments, SetCallOptions::default().with_timeout(timeout)).await
    }

    /// Calls tool `tool` of `server` as [`ConnectionSet::call_tool_on`] does, relaying the
    /// server's progress for it to `on_progress`.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled`).
    ///
    /// # Errors
    /// As [`ConnectionSet::call_tool_on`].
    pub async fn call_tool_with_progress(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        timeout: Option<Duration>,
        on_progress: impl Fn(Progress) + Send + Sync + 'static,
    ) -> Result<CallToolResult, SetError> {
        let options = SetCallOptions::default().with_timeout(timeout).with_progress(on_progress);
        self.call_tool_with(server, tool, arguments, options).await
    }

    /// Calls tool `tool` of `server` as [`ConnectionSet::call_tool_on`] does, with the timeout,
    /// progress callback and `_meta` members of `options`.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled`).
    ///
    /// # Errors
    /// As [`ConnectionSet::call_tool_on`].
    pub async fn call_tool_with(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: SetCallOptions,
    ) -> Result<CallToolResult, SetError> {
        self.call_tool_then(server, tool, arguments, options, decode_tool_result).await
    }

    /// Calls tool `tool` of `server` as [`ConnectionSet::call_tool_with`] does, the result left
    /// as [`Client::call_tool_body`] leaves it (raw JSON, not checked to be a final tool
    /// result: [`decode_tool_result`] does that), for a host that passes it on.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled`).
    ///
    /// # Errors
    /// As [`ConnectionSet::call_tool_on`].
    pub async fn call_tool_body_with(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: SetCallOptions,
    ) -> Result<Body, SetError> {
        self.call_tool_then(server, tool, arguments, options, Ok).await
    }

    /// The call of [`ConnectionSet::call_tool_with`], its result body made into `R` by `finish`,
    /// whose error counts as the call's.
    async fn call_tool_then<R>(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: SetCallOptions,
        finish: impl FnOnce(Body) -> Result<R, ClientError>,
    ) -> Result<R, SetError> {
        let SetCallOptions { timeout, on_progress, mut meta } = options;
        let slot = self.slot(server)?;
        let config = slot.config();
        if !config.tool_allowed(tool) {
            return Err(SetError::ToolDisabled { server: server.to_owned(), tool: tool.to_owned() });
        }
        let after = timeout.map_or(config.tool_timeout, |t| t.min(config.tool_timeout));
        self.wake(&slot).await;
        let _permit = if config.supports_parallel_tool_calls {
            None
        } else {
            Some(slot.serial.clone().acquire_owned().await.expect("the semaphore is never closed"))
        };
        let (conn, generation) = self.ready_conn(&slot)?;
        let mut params = CallToolRequestParams { name: tool.to_owned(), arguments, ..CallToolRequestParams::default() };
        // What the client layer stamps itself, and what is reserved to MCP or to the host, is
        // not the caller's to send.
        let host_reserved = &self.shared.options.reserved_meta_prefixes;
        meta.retain(|key, _| {
            key != "progressToken"
                && !is_reserved_meta_key(key)
                && !host_reserved.iter().any(|prefix| key.starts_with(prefix.as_str()))
        });
        if !meta.is_empty() {
            params.meta = Some(RequestMeta { extra: meta, ..RequestMeta::default() });
        }
        let options = RequestOptions { timeout: Some(after), ..RequestOptions::default() };
        let outcome = match on_progress {
            None => conn.call_tool(params, options).await,
            Some(on_progress) => conn.call_tool_with_progress(params, options, on_progress).await,
        };
        outcome.and_then(finish).map_err(|e| self.failure(&slot, generation, tool, after, e))
    }

    /// Sends any request of the method table to `server` (`resources/read`, `prompts/get` …),
    /// waiting at most its `tool_timeout`.
    ///
    /// # Errors
    /// As [`ConnectionSet::call_tool_on`], less the tool filters.
    pub async fn request_on<M>(&self, server: &str, params: M::Params) -> Result<M::Output, SetError>
    where
        M: Method,
        M::Params: Send + Sync + 'static,
        M::Output: Clone + Send + Sync + 'static,
    {
        let slot = self.slot(server)?;
        let after = slot.config().tool_timeout;
        self.wake(&slot).await;
        let (conn, generation) = self.ready_conn(&slot)?;
        let options = RequestOptions { timeout: Some(after), ..RequestOptions::default() };
        let outcome = conn.request::<M>(params, options).await;
        outcome.map_err(|e| self.failure(&slot, generation, M::NAME, after, e))
    }

    /// The roots offered to every server (`None` when none were ever given).
    pub fn roots(&self) -> Option<Vec<Root>> {
        self.shared.roots.read().expect("roots lock").clone()
    }

    /// Replaces the roots offered to every server and tells each connected one
    /// (`notifications/roots/list_changed`, after which it asks `roots/list` again); servers
    /// connected later (restarts included) get them in their session. Returns the servers that
    /// could not be told, and why: one whose connection declared no roots (no roots were in
    /// [`SetOptions::with_roots`] when it connected) fails with [`ClientError::NotDeclared`]
    /// until it reconnects.
    pub async fn set_roots(&self, roots: impl IntoIterator<Item = Root>) -> Vec<(String, ClientError)> {
        let roots: Vec<Root> = roots.into_iter().collect();
        *self.shared.roots.write().expect("roots lock") = Some(roots.clone());
        let mut tell = JoinSet::new();
        for slot in self.shared.slots() {
            let conn = match &slot.lock().conn {
                Some(conn) => conn.conn().clone(),
                None => continue,
            };
            let (name, roots) = (slot.name.clone(), roots.clone());
            tell.spawn(async move { (name, conn.set_roots(roots).await) });
        }
        let mut failed = Vec::new();
        while let Some(outcome) = tell.join_next().await {
            if let Ok((name, Err(e))) = outcome {
                failed.push((name, e));
            }
        }
        failed.sort_by(|a, b| a.0.cmp(&b.0));
        failed
    }

    /// Tells every connected server its roots changed (`notifications/roots/list_changed`, after
    /// which it asks `roots/list` again): for a [`SetOptions::with_roots_handler`] whose answer
    /// changed. Returns the servers that could not be told, and why (one whose connection
    /// declared no roots fails with [`ClientError::NotDeclared`]).
    pub async fn notify_roots_changed(&self) -> Vec<(String, ClientError)> {
        let mut tell = JoinSet::new();
        for slot in self.shared.slots() {
            let conn = match &slot.lock().conn {
                Some(conn) => conn.conn().clone(),
                None => continue,
            };
            let name = slot.name.clone();
            tell.spawn(async move { (name, conn.notify_roots_changed().await) });
        }
        let mut failed = Vec::new();
        while let Some(outcome) = tell.join_next().await {
            if let Ok((name, Err(e))) = outcome {
                failed.push((name, e));
            }
        }
        failed.sort_by(|a, b| a.0.cmp(&b.0));
        failed
    }

    /// Cancels startup, stops restarts and refreshes, ends every session and stops every
    /// child process with its process group (stdin closed, then SIGTERM, then SIGKILL).
    /// Idempotent.
    pub async fn shutdown(&self) {
        let shared = &self.shared;
        shared.shut_down.store(true, Ordering::Release);
        shared.cancel.send_replace(true);
        for task in shared.tasks.lock().expect("tasks lock").drain(..) {
            task.abort();
        }
        let mut closes = JoinSet::new();
        for slot in shared.slots() {
            let mut s = slot.lock();
            if let Some(watcher) = s.watcher.take() {
                watcher.abort();
            }
            if let Some(conn) = s.conn.take() {
                closes.spawn(async move { conn.close().await });
            }
            if s.state != ServerState::Disabled {
                s.state = ServerState::Closed;
            }
        }
        while closes.join_next().await.is_some() {}
        shared.rebuild_catalog();
    }

    fn slot(&self, server: &str) -> Result<Arc<Slot>, SetError> {
        match self.shared.find(server) {
            Ok(Some(slot)) => Ok(slot),
            Ok(None) => Err(SetError::UnknownServer { server: server.to_owned() }),
            Err(candidates) => Err(SetError::AmbiguousServer { server: server.to_owned(), candidates }),
        }
    }

    /// The slot's connection while it is ready, leased for the length of one call: a reload that
    /// retires it meanwhile lets the call finish before the connection is closed.
    fn ready_conn(&self, slot: &Slot) -> Result<(Arc<Held>, u64), SetError> {
        let s = slot.lock();
        match (&s.conn, s.state) {
            (Some(conn), ServerState::Ready) => Ok((conn.clone(), s.generation)),
            (_, state) => Err(SetError::Unavailable { server: slot.name.clone(), state, reason: s.error.clone() }),
        }
    }

    fn failure(&self, slot: &Arc<Slot>, generation: u64, what: &str, after: Duration, e: ClientError) -> SetError {
        let server = slot.name.clone();
        if e.is_timeout() {
            return SetError::Timeout { server, what: what.to_owned(), after };
        }
        if e.is_disconnected() {
            connection_lost(&self.shared, slot, generation, e.to_string());
            return SetError::Disconnected { server, what: what.to_owned(), source: e };
        }
        SetError::Client { server, source: e }
    }
}

/// How one server's start ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StartEnd {
    /// Ready or failed.
    Settled,
    /// Startup was cancelled ([`ConnectionSet::cancel_startup`], shutdown).
    Cancelled,
    /// A reload changed or removed the server meanwhile: this start gave up, leaving the
    /// slot's state to the reload.
    Superseded,
}

/// Starts one server from its current configuration; `announce`: emit its
/// [`SetEvent::Starting`] (else the caller did).
async fn start_one(shared: &Arc<Shared>, slot: &Arc<Slot>, announce: bool) -> StartEnd {
    let name = slot.name.clone();
    let config = slot.config();
    let epoch = {
        let mut s = slot.lock();
        s.state = ServerState::Starting;
        *slot.epoch.borrow()
    };
    if announce {
        shared.emit(SetEvent::Starting { server: name.clone() });
    }
    let started = Instant::now();
    let mut cancel = shared.cancel.subscribe();
    let mut superseded = slot.epoch.subscribe();
    let outcome = tokio::select! {
        outcome = tokio::time::timeout(config.startup_timeout, connect(shared, slot, &config)) => Ok(outcome),
        _ = cancel.wait_for(|c| *c) => Err(StartEnd::Cancelled),
        _ = superseded.wait_for(|e| *e != epoch) => Err(StartEnd::Superseded),
    };
    let elapsed = started.elapsed();
    let end = match outcome {
        Err(end) => end,
        Ok(Ok(Ok((conn, listing, listening)))) => {
            let version = conn.protocol_version();
            let tools = listing.tools.len();
            if install(shared, slot, Some(epoch), None, conn, listing, listening, elapsed) {
                shared.emit(SetEvent::Ready { server: name, protocol_version: version, tools, elapsed });
                return StartEnd::Settled;
            }
            StartEnd::Superseded
        }
        Ok(outcome) => {
            let reason = match outcome {
                Ok(Err(reason)) => reason,
                _ => format!("did not start within {} ms", config.startup_timeout.as_millis()),
            };
            let mut s = slot.lock();
            if *slot.epoch.borrow() != epoch {
                return StartEnd::Superseded;
            }
            s.state = ServerState::Failed;
            s.elapsed = elapsed;
            s.error = Some(reason.clone());
            s.failed_attempts = s.failed_attempts.saturating_add(1);
            drop(s);
            shared.emit(SetEvent::Failed { server: name, required: config.required, reason });
            return StartEnd::Settled;
        }
    };
    if end == StartEnd::Cancelled {
        let mut s = slot.lock();
        if *slot.epoch.borrow() == epoch {
            s.state = ServerState::Cancelled;
            s.elapsed = elapsed;
            s.error = Some("startup cancelled".to_owned());
        }
    }
    shared.emit(SetEvent::Cancelled { server: name });
    end
}

/// Tries `slot` again in the background when it failed at start, is not `required`, and
/// [`SetOptions::startup_retries`] allows (the policy of [`ConnectionSet::start`]); it is
/// [`ServerState::Retrying`] meanwhile.
fn retry_failed_start(shared: &Arc<Shared>, slot: &Arc<Slot>) {
    let attempts = shared.options.startup_retries;
    let config = slot.config();
    if attempts == 0 || config.required || shared.shut_down.load(Ordering::Acquire) {
        return;
    }
    // A server our environment rule refuses would be refused by every try.
    if let TransportConfig::Stdio { env_vars, .. } = &config.transport {
        if shared.options.child_env.refusal(env_vars).is_some() {
            return;
        }
    }
    {
        let mut s = slot.lock();
        if s.state != ServerState::Failed {
            return;
        }
        s.state = ServerState::Retrying;
    }
    let (task_shared, slot) = (shared.clone(), slot.clone());
    let handle = crate::transport::task::spawn(async move { reconnect(&task_shared, &slot, attempts).await });
    shared.track(handle.abort_handle());
}

/// Makes `conn` the slot's connection and watches it, and its listen stream when it has one:
/// the stream ending while the connection lasts is the connection's end too (a 2026-07-28
/// server over HTTP has no session whose end would otherwise tell), so the server is
/// reconnected, listed and listened to again.
///
/// `epoch`: the slot's epoch when the start began; a start that a reload superseded since (or
/// one of a retired slot, or after shutdown) installs nothing: its connection is closed and
/// `false` returned. `config`: the configuration the connection was made from, when it
/// replaces the slot's (a reload's restart). A connection the slot held before is retired:
/// it finishes the calls in flight on it (and serves the leases on it) before it is closed.
#[allow(clippy::too_many_arguments)]
fn install(
    shared: &Arc<Shared>,
    slot: &Arc<Slot>,
    epoch: Option<u64>,
    config: Option<Arc<ServerConfig>>,
    conn: Conn,
    listing: Listing,
    listening: Option<Listening>,
    elapsed: Duration,
) -> bool {
    let mut s = slot.lock();
    let superseded = epoch.is_some_and(|epoch| *slot.epoch.borrow() != epoch);
    if shared.shut_down.load(Ordering::Acquire) || slot.is_retired() || superseded {
        drop(s);
        crate::transport::task::spawn(async move { conn.close().await });
        return false;
    }
    if let Some(config) = config {
        *slot.config.write().expect("config lock") = config;
    }
    s.generation += 1;
    let generation = s.generation;
    s.state = ServerState::Ready;
    s.error = None;
    s.failed_attempts = 0;
    s.elapsed = elapsed;
    s.protocol_version = Some(conn.protocol_version());
    s.server_info = Some(conn.server_info().clone());
    s.listing = listing;
    if let Some(old) = s.watcher.take() {
        old.abort();
    }
    let watched = conn.clone();
    // Roots replaced while this connection was being made: tell it.
    let roots = shared.roots.read().expect("roots lock").clone();
    if let (Some(roots), Some(offered)) = (roots, conn.roots()) {
        if roots != offered {
            let conn = conn.clone();
            crate::transport::task::spawn(async move {
                let _ = conn.set_roots(roots).await;
            });
        }
    }
    if let Some(old) = s.conn.replace(Held::new(conn)) {
        crate::transport::task::spawn(lease::retire(old));
    }
    let weak = Arc::downgrade(shared);
    let slot_ref = slot.clone();
    s.watcher = Some(
        crate::transport::task::spawn(async move {
            // Aborting this task drops the listen stream, which cancels it upstream.
            let stream_ended = async move {
                match listening {
                    Some(listening) => Some(listening.ended().await),
                    None => std::future::pending().await,
                }
            };
            let stream_end = tokio::select! {
                biased;
                () = watched.closed() => None,
                Some(end) = stream_ended => Some(end),
            };
            let reason = match stream_end {
                Some(Ok(_)) => "the server ended the subscriptions/listen stream".to_owned(),
                // The stream ended because the connection did (a stdio child that exited):
                // say why the connection did.
                Some(Err(e))
                    if !(e.is_disconnected() && tokio::time::timeout(EXIT_GRACE, watched.closed()).await.is_ok()) =>
                {
                    format!("the subscriptions/listen stream ended: {e}")
                }
                _ => {
                    watched.wait_for_exit(EXIT_GRACE).await;
                    watched.end_reason()
                }
            };
            if let Some(shared) = weak.upgrade() {
                connection_lost(&shared, &slot_ref, generation, reason);
            }
        })
        .abort_handle(),
    );
    let list_now = s.listing.pending;
    drop(s);
    if list_now {
        schedule_refresh(shared, slot, Duration::ZERO);
    }
    true
}

/// The connection of generation `generation` ended: fail it, and restart the server.
fn connection_lost(shared: &Arc<Shared>, slot: &Arc<Slot>, generation: u64, reason: String) {
    if shared.shut_down.load(Ordering::Acquire) {
        return;
    }
    let mut s = slot.lock();
    if s.generation != generation || s.state != ServerState::Ready {
        return;
    }
    let old = s.conn.take();
    s.state = if shared.options.reconnect { ServerState::Reconnecting } else { ServerState::Failed };
    s.error = Some(reason.clone());
    if let Some(watcher) = s.watcher.take() {
        watcher.abort();
    }
    drop(s);
    if let Some(old) = old {
        // An expired HTTP session or a half-dead child: make sure it is gone. A connection that
        // already ended is closed a little later, so that the calls that were in flight on it
        // can still tell a server exit from a close of ours.
        crate::transport::task::spawn(async move {
            if old.is_closed() {
                tokio::time::sleep(EXIT_GRACE * 2).await;
            }
            old.close().await
        });
    }
    let name = slot.name.clone();
    shared.emit(SetEvent::Disconnected { server: name.clone(), reason });
    if !shared.options.reconnect {
        shared.rebuild_catalog();
        shared.emit(SetEvent::CatalogChanged { server: name });
        return;
    }
    let task_shared = shared.clone();
    let slot = slot.clone();
    let attempts = shared.options.max_reconnect_attempts;
    let handle = crate::transport::task::spawn(async move { reconnect(&task_shared, &slot, attempts).await });
    shared.track(handle.abort_handle());
}

/// Tries to start the server again, up to `attempts` times (`u32::MAX`: until it starts) with
/// exponential backoff: after its connection ended, or after it failed at startup
/// ([`SetOptions::startup_retries`]).
async fn reconnect(shared: &Arc<Shared>, slot: &Arc<Slot>, attempts: u32) {
    let name = slot.name.clone();
    let options = &shared.options;
    let mut delay = options.initial_backoff;
    let mut last = String::new();
    // A reload that changes or removes the server ends these tries.
    let epoch = *slot.epoch.borrow();
    let superseded = || slot.is_retired() || *slot.epoch.borrow() != epoch;
    for attempt in 1..=attempts {
        shared.emit(SetEvent::Reconnecting { server: name.clone(), attempt, delay });
        tokio::time::sleep(delay).await;
        if shared.shut_down.load(Ordering::Acquire) || superseded() {
            return;
        }
        let started = Instant::now();
        let config = slot.config();
        match tokio::time::timeout(config.startup_timeout, connect(shared, slot, &config)).await {
            Ok(Ok((conn, listing, listening))) => {
                if !install(shared, slot, Some(epoch), None, conn, listing, listening, started.elapsed()) {
                    return;
                }
                shared.rebuild_catalog();
                shared.save_cache();
                shared.emit(SetEvent::Reconnected { server: name.clone() });
                shared.emit(SetEvent::CatalogChanged { server: name });
                return;
            }
            Ok(Err(reason)) => last = reason,
            Err(_) => last = format!("did not start within {} ms", config.startup_timeout.as_millis()),
        }
        {
            // The last try's reason is the server's error while the tries go on.
            let mut s = slot.lock();
            if superseded() {
                return;
            }
            s.error = Some(last.clone());
            s.failed_attempts = s.failed_attempts.saturating_add(1);
        }
        delay = (delay * 2).min(options.max_backoff);
    }
    let reason = format!("gave up restarting after {attempts} attempts: {last}");
    {
        let mut s = slot.lock();
        if superseded() {
            return;
        }
        s.state = ServerState::Failed;
        s.error = Some(reason.clone());
    }
    shared.rebuild_catalog();
    shared.emit(SetEvent::Failed { server: name.clone(), required: slot.config().required, reason });
    shared.emit(SetEvent::CatalogChanged { server: name });
}

/// How long a stdio child whose connection ended is given to be reaped (the client layer
/// waits as long to name the exit in the error of a call in flight).
const EXIT_GRACE: Duration = Duration::from_millis(500);

const LIST_CHANGED: [&str; 3] =
    ["notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed"];

fn client_options(shared: &Arc<Shared>, slot: &Arc<Slot>, config: &ServerConfig) -> ClientOptions {
    let weak: Weak<Shared> = Arc::downgrade(shared);
    let slot_weak = Arc::downgrade(slot);
    let name = slot.name.clone();
    let mut options = shared.options.client.clone().with_era(config.era);
    if let Some(handler) = &shared.options.sampling {
        let (handler, name) = (handler.clone(), name.clone());
        options = options.with_sampling(move |params| handler.create_message(&name, params));
    }
    if let Some((handler, modes)) = &shared.options.elicitation {
        let (handler, name) = (handler.clone(), name.clone());
        options = options.with_elicitation_modes(move |params| handler.elicit(&name, params), *modes);
    }
    if let Some(handler) = &shared.options.roots_handler {
        let (handler, name) = (handler.clone(), name.clone());
        options = options.with_roots_handler(move || handler.list_roots(&name));
    } else if let Some(roots) = shared.roots.read().expect("roots lock").clone() {
        options = options.with_roots(roots);
    }
    options.with_handler(move |notification: Notification| {
        let Some(shared) = weak.upgrade() else { return };
        if LIST_CHANGED.contains(&notification.method.as_str()) {
            if let Some(slot) = slot_weak.upgrade() {
                schedule_refresh(&shared, &slot, shared.options.refresh_debounce);
            }
        }
        shared.emit(SetEvent::Notification { server: name.clone(), notification });
    })
}

/// Re-lists the server after `delay` (list changes arriving meanwhile are folded in).
fn schedule_refresh(shared: &Arc<Shared>, slot: &Arc<Slot>, delay: Duration) {
    if slot.refresh_scheduled.swap(true, Ordering::AcqRel) {
        return;
    }
    let task_shared = shared.clone();
    let slot = slot.clone();
    let handle = crate::transport::task::spawn(async move {
        let shared = task_shared;
        tokio::time::sleep(delay).await;
        slot.refresh_scheduled.store(false, Ordering::Release);
        let (conn, generation) = {
            let s = slot.lock();
            match (&s.conn, s.state) {
                (Some(conn), ServerState::Ready) => (conn.clone(), s.generation),
                // Not ready yet: its start (or restart) lists it anyway.
                _ => return,
            }
        };
        let timeout = slot.config().startup_timeout.max(Duration::from_secs(1));
        let mut listing = match tokio::time::timeout(timeout, list_all(&conn)).await {
            Ok(Ok(listing)) => listing,
            outcome => {
                let why = match outcome {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no answer within {} ms", timeout.as_millis()),
                };
                let message = format!("re-listing after a list change failed, the previous catalog stays: {why}");
                shared.emit(SetEvent::Warning { server: Some(slot.name.clone()), message });
                return;
            }
        };
        cap_listing(&shared, &slot.name, &mut listing);
        {
            let mut s = slot.lock();
            if s.generation != generation {
                return;
            }
            s.listing = listing;
        }
        shared.rebuild_catalog();
        shared.save_cache();
        shared.emit(SetEvent::CatalogChanged { server: slot.name.clone() });
    });
    shared.track(handle.abort_handle());
}

/// Starts the server from its recipe: spawn or connect, `initialize` (or discovery), then in
/// the 2026-07-28 era the listen stream, acknowledged before the listing so that no change
/// falls between the two; then list. A server that refuses the stream (-32601) is used without
/// it: its catalog is then refreshed only when it reconnects.
async fn connect(
    shared: &Arc<Shared>,
    slot: &Arc<Slot>,
    config: &ServerConfig,
) -> Result<(Conn, Listing, Option<Listening>), String> {
    let options = client_options(shared, slot, config);
    let conn = match &config.transport {
        TransportConfig::Stdio { command, args, env, env_vars, cwd, inherit_env } => {
            let stderr = match &shared.options.stderr_lines {
                Some(lines) => {
                    let (lines, server) = (lines.clone(), slot.name.clone());
                    Stderr::Lines(Arc::new(move |line: &str| lines(&server, line)))
                }
                None => shared.options.stderr.clone(),
            };
            let child = ChildCommand::new(command).args(args).stderr(stderr);
            let mut child = shared.options.child_env.apply(child, *inherit_env, env_vars, env)?;
            if let Some(cwd) = cwd {
                child = child.current_dir(cwd);
            }
            let transport = child.spawn().map_err(|e| ClientError::from(e).to_string())?;
            Conn::connect(transport, ConnKind::Stdio, options).await?
        }
        #[cfg(feature = "http")]
        TransportConfig::Http { url, bearer_token_env_var, http_headers, env_http_headers, legacy_sse } => {
            let mut http = HttpClientConfig::new(url).connect_timeout(config.startup_timeout).legacy(*legacy_sse);
            for (k, v) in http_headers {
                http = http.header(k, v);
            }
            for (header, var) in env_http_headers {
                let value = std::env::var(var)
                    .map_err(|_| format!("env_http_headers.{header}: environment variable {var} is not set"))?;
                http = http.header(header, value);
            }
            if let Some(var) = bearer_token_env_var {
                http = http
                    .bearer_token_env(var)
                    .map_err(|_| format!("bearer_token_env_var: environment variable {var} is not set"))?;
            }
            #[cfg(feature = "oauth")]
            if let Some(authorizer) =
                shared.options.logins.as_ref().map(|l| l.authorizer(config)).transpose()?.flatten()
            {
                http = http.authorizer(authorizer);
            }
            let transport = HttpClientTransport::new(http).map_err(|e| e.to_string())?;
            Conn::connect(transport, ConnKind::Http, options).await?
        }
        #[cfg(not(feature = "http"))]
        TransportConfig::Http { .. } => return Err("this build has no HTTP transport (feature http)".to_owned()),
        TransportConfig::InProcess(connector) => {
            Conn::connect(connector.connect(), ConnKind::InProcess, options).await?
        }
    };
    let listening = match conn.listen_for_list_changes().await {
        Some(Ok(listening)) => Some(listening),
        Some(Err(e)) if e.is_disconnected() => {
            conn.close().await;
            return Err(e.to_string());
        }
        Some(Err(_)) | None => None,
    };
    if config.readiness == Readiness::Connected {
        return Ok((conn, Listing { pending: true, ..Listing::default() }, listening));
    }
    match list_all(&conn).await {
        Ok(mut listing) => {
            cap_listing(shared, &slot.name, &mut listing);
            Ok((conn, listing, listening))
        }
        Err(e) => {
            conn.close().await;
            Err(e.to_string())
        }
    }
}

/// Leaves out what `server` lists beyond [`SetOptions::max_items_per_server`] of each kind,
/// with a warning.
fn cap_listing(shared: &Shared, server: &str, listing: &mut Listing) {
    let max = shared.options.max_items_per_server;
    let mut over = Vec::new();
    let mut cap = |kind: &str, len: usize| {
        if len > max {
            over.push(format!("{len} {kind}"));
        }
        len.min(max)
    };
    let tools = cap("tools", listing.tools.len());
    let resources = cap("resources", listing.resources.len());
    let templates = cap("resource templates", listing.templates.len());
    let prompts = cap("prompts", listing.prompts.len());
    listing.tools.truncate(tools);
    listing.resources.truncate(resources);
    listing.templates.truncate(templates);
    listing.prompts.truncate(prompts);
    if !over.is_empty() {
        let message = format!("lists {}; only the first {max} of each are offered", over.join(", "));
        shared.emit(SetEvent::Warning { server: Some(server.to_owned()), message });
    }
}

macro_rules! list_pages {
    ($conn:expr, $method:ty, $params:ident, $field:ident) => {{
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor = None;
        loop {
            let params = $params { cursor: cursor.take(), ..$params::default() };
            let page = $conn.request::<$method>(params, RequestOptions::default()).await?;
            items.extend(page.$field);
            match page.next_cursor {
                Some(next) if seen.insert(next.clone()) && seen.len() < 1000 => cursor = Some(next),
                _ => break,
            }
        }
        items
    }};
}

/// Lists what the server advertises: tools (always asked for when advertised), resources and
/// templates, prompts.
async fn list_all(conn: &Conn) -> Result<Listing, ClientError> {
    let caps = conn.capabilities().clone();
    let mut listing = Listing::default();
    if caps.tools.is_some() {
        listing.tools = conn.list_tools().await?;
    }
    if caps.resources.is_some() {
        listing.resources = list_pages!(conn, ListResources, ListResourcesRequestParams, resources);
        // Templates are optional even for servers with resources.
        listing.templates = match async {
            Ok::<_, ClientError>(list_pages!(
                conn,
                ListResourceTemplates,
                ListResourceTemplatesRequestParams,
                resource_templates
            ))
        }
        .await
        {
            Ok(templates) => templates,
            Err(e) if e.rpc_error().is_some() => Vec::new(),
            Err(e) => return Err(e),
        };
    }
    if caps.prompts.is_some() {
        listing.prompts = list_pages!(conn, ListPrompts, ListPromptsRequestParams, prompts);
    }
    Ok(listing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn qualified_names_are_reduced_bounded_and_unique() {
        let long_tool = "a".repeat(80);
        let names = qualify([
            ("github", "search"),
            ("my.server", "get sum"),
            ("my_server", "get_sum"),
            ("x", long_tool.as_str()),
            ("x", long_tool.as_str()),
        ]);
        assert_eq!(names[0], "mcp__github__search");
        assert_eq!(names[1], "mcp__my_server__get_sum");
        let hash = fnv1a(b"mcp__my_server__get_sum");
        assert_eq!(names[2], format!("mcp__my_server__get_sum_{hash:08x}"), "the second one is suffixed");
        for name in &names {
            assert!(name.len() <= MAX_TOOL_NAME_BYTES, "{name}");
            assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "{name}");
        }
        assert_eq!(names[3].len(), 64);
        assert!(names[3].ends_with(&format!("_{:08x}", fnv1a(format!("mcp__x__{long_tool}").as_bytes()))));
        assert_ne!(names[3], names[4]);
        assert_eq!(
            names,
            qualify([
                ("github", "search"),
                ("my.server", "get sum"),
                ("my_server", "get_sum"),
                ("x", long_tool.as_str()),
                ("x", long_tool.as_str()),
            ]),
            "stable"
        );
    }

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a(b""), 0x811c9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c292c);
        assert_eq!(fnv1a(b"foobar"), 0xbf9cf968);
    }

    #[test]
    fn the_list_changes_listened_for_are_those_advertised_or_all_when_unknown() {
        let caps = |v: serde_json::Value| serde_json::from_value::<ServerCapabilities>(v).unwrap();
        let filter = |c| serde_json::to_value(list_changes_filter(&c)).unwrap();
        let advertised =
            caps(json!({"tools": {"listChanged": true}, "prompts": {}, "resources": {"listChanged": true}}));
        assert_eq!(filter(advertised), json!({"toolsListChanged": true, "resourcesListChanged": true}));
        let all = json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true});
        assert_eq!(filter(caps(json!({"tools": {}}))), all, "none advertised: all three");
        assert_eq!(filter(caps(json!({}))), all, "adopted without discovery: nothing known");
    }

    #[test]
    fn startup_failure_names_the_required_servers_and_why() {
        let status = |name: &str, state, error: Option<&str>| ServerStatus {
            name: name.into(),
            state,
            required: true,
            era: EraPolicy::Auto,
            protocol_version: None,
            server_info: None,
            tools: 0,
            elapsed: Duration::ZERO,
            error: error.map(str::to_owned),
            failed_attempts: u32::from(error.is_some()),
            connections: 0,
        };
        let summary = StartupSummary {
            servers: vec![
                status("a", ServerState::Failed, Some("cannot start x: No such file")),
                status("b", ServerState::Ready, None),
            ],
        };
        let e = SetError::StartupFailed { required: summary.failed_required(), summary };
        assert_eq!(e.to_string(), "required MCP servers failed to start: a (cannot start x: No such file)");
    }
}
