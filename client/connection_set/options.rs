//! How the set behaves ([`SetOptions`]) and the handlers that answer what any of its servers
//! asks (sampling, elicitation, roots), told which server asks. Plain data and builders: nothing
//! here starts a server.

use super::events::EventSink;
use super::events::SetEvent;
use crate::client::catalog::cache::CatalogCache;
use crate::client::config::ApprovalMode;
use crate::client::config::ChildEnv;
use crate::client::CallOptions;
use crate::client::ClientOptions;
use crate::client::ElicitationModes;
use crate::client::HandlerFuture;
use crate::proto::jsonrpc::ErrorObject;
use crate::proto::mcp_types::CreateMessageRequestParams;
use crate::proto::mcp_types::CreateMessageResult;
use crate::proto::mcp_types::ElicitRequestParams;
use crate::proto::mcp_types::ElicitResult;
use crate::proto::mcp_types::Root;
use crate::transport::stdio::Stderr;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
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

/// The [`CallOptions`] of a call through the set, under the name the gateway imports: the same
/// type. Through the set, the timeout is never longer than the server's `tool_timeout` (default
/// that), and `_meta` keys reserved to the host ([`SetOptions::reserved_meta_prefixes`]) are
/// dropped too.
pub type SetCallOptions = CallOptions;

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
    pub stderr: ChildStderr,
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
    /// [`ClientOptions::roots`], if any). [`ConnectionSet::set_roots`](super::ConnectionSet::set_roots) replaces them.
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
    /// with the MCP-reserved ones ([`is_reserved_meta_key`](super::is_reserved_meta_key)), from the `_meta` a caller gives
    /// in [`SetCallOptions::meta`]: default none.
    pub reserved_meta_prefixes: Vec<String>,
    /// Where HTTP servers' OAuth logins are kept ([`login`](crate::client::login)): default none, i.e. such a
    /// server's 401 is just an error.
    #[cfg(feature = "oauth")]
    pub logins: Option<crate::client::login::Logins>,
    /// How stdio children's environments are built, and which of our variables they never
    /// get: default each server's own rule, nothing withheld (see [`ChildEnv`]).
    pub child_env: ChildEnv,
}

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
            stderr: ChildStderr::Discard,
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

/// What the set's stdio children do with their stderr.
#[derive(Clone, Default)]
pub enum ChildStderr {
    /// Read and dropped (the pipe is drained so that a child never blocks on it).
    #[default]
    Discard,
    /// Inherited: every child writes straight to our stderr, its lines not told apart.
    Inherit,
    /// Each line (as [`Stderr::Lines`] gives it) is handed to the callback with the name of
    /// the server that wrote it: `(server, line)`.
    Lines(ServerLineCallback),
}

/// The callback of [`ChildStderr::Lines`]: `(server, line)`.
pub type ServerLineCallback = Arc<dyn Fn(&str, &str) + Send + Sync>;

impl ChildStderr {
    /// What the child of server `server` does with its stderr.
    pub(super) fn for_server(&self, server: &str) -> Stderr {
        match self {
            ChildStderr::Discard => Stderr::Discard,
            ChildStderr::Inherit => Stderr::Inherit,
            ChildStderr::Lines(lines) => {
                let (lines, server) = (lines.clone(), server.to_owned());
                Stderr::Lines(Arc::new(move |line: &str| lines(&server, line)))
            }
        }
    }
}

impl fmt::Debug for ChildStderr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChildStderr::Discard => "Discard",
            ChildStderr::Inherit => "Inherit",
            ChildStderr::Lines(_) => "Lines(..)",
        })
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
            .field("stderr", &self.stderr)
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
    pub fn with_stderr(mut self, stderr: ChildStderr) -> Self {
        self.stderr = stderr;
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
    /// in the background (see [`ConnectionSet::start`](super::ConnectionSet::start)).
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
    /// credentials of its own (never starting a flow: see [`login`](crate::client::login)).
    #[cfg(feature = "oauth")]
    pub fn with_logins(mut self, logins: crate::client::login::Logins) -> Self {
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
