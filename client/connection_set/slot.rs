//! One server's place in the set: its connection (`Conn`, one `Client` type for every
//! transport), what it listed, and its state under a lock (`Slot`). Not here: starting,
//! reconnecting and refreshing it (`reconnect`).

use super::events::ServerState;
use super::events::ServerStatus;
use super::lease::Held;
use crate::client::catalog::cache;
use crate::client::catalog::cache::CachedListing;
use crate::client::config::ServerConfig;
use crate::client::CallOptions;
use crate::client::Client;
use crate::client::ClientError;
use crate::client::ClientOptions;
use crate::client::Listening;
use crate::proto::jsonrpc::Body;
use crate::proto::mcp_types::Implementation;
use crate::proto::mcp_types::Method;
use crate::proto::mcp_types::Prompt;
use crate::proto::mcp_types::Resource;
use crate::proto::mcp_types::ResourceTemplate;
use crate::proto::mcp_types::Root;
use crate::proto::mcp_types::ServerCapabilities;
use crate::proto::mcp_types::SubscriptionFilter;
use crate::proto::mcp_types::Tool;
use crate::proto::session::RequestOptions;
use crate::proto::version::ProtocolVersion;
use crate::transport::boxed::BoxTransport;
use crate::transport::Transport;
use serde_json::Map;
use serde_json::Value;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::RwLock;
use std::time::Duration;
use std::time::Instant;
use tokio::sync::watch;
use tokio::sync::Semaphore;
use tokio::task::AbortHandle;
/// A connection over any transport: one `Client` type for all of them (a `BoxTransport`), so
/// the client's code is compiled once and not once per transport; `kind` keeps what differs.
#[derive(Clone)]
pub(super) struct Conn {
    pub(super) client: Client<BoxTransport>,
    pub(super) kind: ConnKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ConnKind {
    Stdio,
    #[cfg(feature = "http")]
    Http,
    InProcess,
}

impl Conn {
    pub(super) async fn connect<T: Transport>(
        transport: T,
        kind: ConnKind,
        options: ClientOptions,
    ) -> Result<Conn, String> {
        let client = Client::connect(BoxTransport::new(transport), options).await.map_err(|e| e.to_string())?;
        Ok(Conn { client, kind })
    }

    pub(super) async fn closed(&self) {
        self.client.closed().await
    }

    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Waits up to `grace` for a stdio child whose connection ended to be reaped, so that
    /// [`Conn::end_reason`] can name its exit.
    pub(super) async fn wait_for_exit(&self, grace: Duration) {
        let transport = self.client.transport();
        let deadline = Instant::now() + grace;
        while transport.exit_status().is_none() && transport.child_pid().is_some() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub(super) fn capabilities(&self) -> &ServerCapabilities {
        self.client.capabilities()
    }

    pub(super) fn protocol_version(&self) -> ProtocolVersion {
        self.client.protocol_version()
    }

    pub(super) fn instructions(&self) -> Option<&str> {
        self.client.instructions()
    }

    pub(super) fn server_info(&self) -> &Implementation {
        self.client.server_info()
    }

    pub(super) fn pid(&self) -> Option<u32> {
        self.client.transport().child_pid()
    }

    /// Why the connection ended, as far as we can tell.
    pub(super) fn end_reason(&self) -> String {
        match self.kind {
            ConnKind::Stdio => match self.client.transport().exit_status() {
                Some(status) => format!("the server exited ({status})"),
                None => "the server closed the connection".to_owned(),
            },
            #[cfg(feature = "http")]
            ConnKind::Http => "the connection closed".to_owned(),
            ConnKind::InProcess => "the in-process server closed the connection".to_owned(),
        }
    }

    pub(super) async fn close(&self) {
        let _ = self.client.close().await;
    }

    pub(super) async fn request<M>(&self, params: M::Params, options: RequestOptions) -> Result<M::Output, ClientError>
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
    pub(super) async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<Body, ClientError> {
        Box::pin(self.client.call_tool_raw(tool, arguments, options)).await
    }

    pub(super) async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.client.list_tools().await
    }

    pub(super) fn roots(&self) -> Option<Vec<Root>> {
        self.client.roots()
    }

    pub(super) async fn set_roots(&self, roots: Vec<Root>) -> Result<(), ClientError> {
        self.client.set_roots(roots).await
    }

    pub(super) async fn notify_roots_changed(&self) -> Result<(), ClientError> {
        self.client.notify_roots_changed().await
    }

    /// Opens the `subscriptions/listen` stream that carries a 2026-07-28 server's list
    /// changes; `None` in the handshake era, where they arrive on the session.
    pub(super) async fn listen_for_list_changes(&self) -> Option<Result<Listening, ClientError>> {
        if self.protocol_version().has_initialize_handshake() {
            return None;
        }
        let filter = list_changes_filter(self.capabilities());
        Some(self.client.listen(filter).await)
    }
}

/// The list changes to listen for: those the server advertises with `listChanged`, or all
/// three when it advertises none of them (a server adopted without discovery says nothing).
pub(super) fn list_changes_filter(caps: &ServerCapabilities) -> SubscriptionFilter {
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
pub(super) struct Listing {
    pub(super) tools: Vec<Tool>,
    pub(super) resources: Vec<Resource>,
    pub(super) templates: Vec<ResourceTemplate>,
    pub(super) prompts: Vec<Prompt>,
    /// Not listed yet (`ready = "connected"`): listed right after the connection is installed.
    pub(super) pending: bool,
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
    pub(super) fn cached(&self, config: &ServerConfig) -> CachedListing {
        CachedListing {
            identity: cache::identity(config),
            tools: self.tools.clone(),
            resources: self.resources.clone(),
            resource_templates: self.templates.clone(),
            prompts: self.prompts.clone(),
        }
    }
}

pub(super) struct SlotState {
    pub(super) state: ServerState,
    /// The slot's lease on its connection; calls in flight and [`ServerLease`]s hold others.
    pub(super) conn: Option<Arc<Held>>,
    /// Bumped by every new connection: a stale watcher or refresh can tell it is stale.
    pub(super) generation: u64,
    pub(super) error: Option<String>,
    /// Failed tries to start since it was last ready.
    pub(super) failed_attempts: u32,
    pub(super) protocol_version: Option<ProtocolVersion>,
    pub(super) server_info: Option<Implementation>,
    pub(super) listing: Listing,
    pub(super) elapsed: Duration,
    pub(super) watcher: Option<AbortHandle>,
}

pub(super) struct Slot {
    pub(super) name: String,
    /// Replaced in place by a reload that changes only per-call settings (filters, timeouts,
    /// approval modes), or after a restart with a new connection identity.
    pub(super) config: RwLock<Arc<ServerConfig>>,
    pub(super) state: Mutex<SlotState>,
    /// One permit: taken by each call while the server's `supports_parallel_tool_calls` is false.
    pub(super) serial: Arc<Semaphore>,
    pub(super) refresh_scheduled: AtomicBool,
    /// Bumped, under the state lock, when the start running for this slot is superseded (a
    /// reload changed or removed the server): that start gives up and leaves the state alone.
    pub(super) epoch: watch::Sender<u64>,
    /// Removed from the set by a reload: nothing restarts or reinstalls it.
    pub(super) retired: AtomicBool,
    /// Held by the call that starts a deferred server; the calls behind it wait.
    pub(super) waking: tokio::sync::Mutex<()>,
}

impl Slot {
    pub(super) fn new(config: ServerConfig) -> Slot {
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

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().expect("slot lock")
    }

    pub(super) fn config(&self) -> Arc<ServerConfig> {
        self.config.read().expect("config lock").clone()
    }

    pub(super) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    pub(super) fn status(&self) -> ServerStatus {
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
