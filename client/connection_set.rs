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
//! The [`MergedCatalog`] aggregates the tools (and resources, resource templates and prompts, where
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
//! which receive the server's name with the params: each server's [`ClientOptions`](crate::client::ClientOptions) gets an
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
//! Every call takes [`CallOptions`] (a timeout, a progress callback that gets the server's
//! `notifications/progress` for the call, extra `_meta` members to send upstream):
//! [`ConnectionSet::call_tool`] by qualified name, [`ConnectionSet::call_tool_on`] by server
//! and tool. Dropping any call's future cancels it upstream (`notifications/cancelled`).
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
//! Each connection is watched by a task waiting on [`Client::closed`](crate::client::Client::closed), so a server that goes
//! away is noticed at once (no polling); a call that fails with a disconnection (an HTTP
//! session the server expired answers 404 only when asked) triggers the restart too.

use self::reconnect::connection_lost;
use self::reconnect::retry_failed_start;
use self::reconnect::start_one;
use self::reconnect::StartEnd;
use self::slot::Listing;
use self::slot::Slot;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};

use super::catalog::cache::CachedListing;
use super::config::{ApprovalMode, McpConfig, ServerConfig, Startup};
use super::{decode_tool_result, CallOptions, ClientError};
pub use crate::proto::envelope::is_reserved_meta_key;
use crate::proto::jsonrpc::Body;
use crate::proto::mcp_types::{CallToolResult, Method, Root, ServerCapabilities};
use crate::proto::session::RequestOptions;

mod error;
mod events;
mod lease;
mod naming;
mod options;
mod reconnect;
mod reload;
mod slot;

pub use error::SetError;
pub use events::{EventSink, ServerState, ServerStatus, SetEvent, StartupSummary};
use lease::Held;
pub use lease::ServerLease;
pub use naming::{fnv1a, qualify, CatalogTool, MergedCatalog, MAX_TOOL_NAME_BYTES};
pub use options::{
    ChildStderr, ServerLineCallback, SetCallOptions, SetElicitationHandler, SetOptions, SetRootsHandler,
    SetSamplingHandler, DEFAULT_MAX_ITEMS,
};
pub use reload::ReloadReport;

struct Shared {
    /// Replaced by [`ConnectionSet::reload`]; never held across an await.
    slots: RwLock<BTreeMap<String, Arc<Slot>>>,
    options: SetOptions,
    catalog: Mutex<Arc<MergedCatalog>>,
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
        let mut catalog = MergedCatalog::default();
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
                catalog: Mutex::new(Arc::new(MergedCatalog::default())),
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
    /// server our [`ChildEnv`](crate::client::config::ChildEnv) refuses (it names a withheld variable): no try would differ.
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
    pub fn catalog(&self) -> Arc<MergedCatalog> {
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

    /// Calls the tool offered as `qualified_name`, as [`ConnectionSet::call_tool_on`] calls it.
    ///
    /// # Errors
    /// [`SetError::UnknownTool`] when the catalog has no such name; otherwise as
    /// [`ConnectionSet::call_tool_on`].
    pub async fn call_tool(
        &self,
        qualified_name: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<CallToolResult, SetError> {
        let (server, tool) =
            self.resolve(qualified_name).ok_or_else(|| SetError::UnknownTool { name: qualified_name.to_owned() })?;
        self.call_tool_on(&server, &tool, arguments, options).await
    }

    /// Calls tool `tool` of `server` with the timeout (never longer than the server's
    /// `tool_timeout`, default that), progress callback and `_meta` members of `options` (less
    /// those reserved to the host, [`SetOptions::reserved_meta_prefixes`]). The tool filters are
    /// checked before the server is touched; a server that takes one call at a time is waited
    /// for.
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
        options: CallOptions,
    ) -> Result<CallToolResult, SetError> {
        self.call_tool_then(server, tool, arguments, options, decode_tool_result).await
    }

    /// Calls tool `tool` of `server` as [`ConnectionSet::call_tool_on`] does, the result left
    /// as [`Client::call_tool_raw`](crate::client::Client::call_tool_raw) leaves it (raw JSON, not checked to be a final tool
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
        options: CallOptions,
    ) -> Result<Body, SetError> {
        self.call_tool_then(server, tool, arguments, options, Ok).await
    }

    /// The call of [`ConnectionSet::call_tool_on`], its result body made into `R` by `finish`,
    /// whose error counts as the call's.
    async fn call_tool_then<R>(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        mut options: CallOptions,
        finish: impl FnOnce(Body) -> Result<R, ClientError>,
    ) -> Result<R, SetError> {
        let slot = self.slot(server)?;
        let config = slot.config();
        if !config.tool_allowed(tool) {
            return Err(SetError::ToolDisabled { server: server.to_owned(), tool: tool.to_owned() });
        }
        let after = options.timeout.map_or(config.tool_timeout, |t| t.min(config.tool_timeout));
        self.wake(&slot).await;
        let _permit = if config.supports_parallel_tool_calls {
            None
        } else {
            Some(slot.serial.clone().acquire_owned().await.expect("the semaphore is never closed"))
        };
        let (conn, generation) = self.ready_conn(&slot)?;
        // What is reserved to the host is not the caller's to send (the client drops what is
        // reserved to MCP and the progress token).
        let host_reserved = &self.shared.options.reserved_meta_prefixes;
        options.meta.retain(|key, _| !host_reserved.iter().any(|prefix| key.starts_with(prefix.as_str())));
        options.timeout = Some(after);
        let outcome = conn.call_tool(tool, arguments, options).await;
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

#[cfg(test)]
mod tests {
    use super::slot::list_changes_filter;
    use super::*;
    use crate::client::EraPolicy;
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
