//! The MCP client: one connection to one server over any [`Transport`].
//!
//! [`Client::connect`] runs the handshake (lifecycle, "Initialization"): `initialize` offering
//! [`ClientOptions::protocol_version`], a check that the server's answer is a version we speak
//! (else [`ClientError::UnsupportedVersion`] and the connection is closed), then
//! `notifications/initialized`. The server's [`InitializeResult`] stays available
//! ([`Client::server_info`], [`Client::capabilities`], [`Client::instructions`],
//! [`Client::protocol_version`]). [`ClientOptions::with_offered_version_str`] offers a version
//! string this crate does not know (only a supported counter-offer is accepted);
//! [`ClientOptions::with_discover_first`] probes with `server/discover` first, as the Python
//! SDK's `mode='auto'` does: a server that answers with 2026-07-28 gets a stateless session (no
//! `initialize`; every request carries the version, client info and capabilities in `_meta`),
//! one that answers with an error gets `initialize`.
//!
//! A [`Client`] is cheap to clone and every method takes `&self`: many calls may be in flight on
//! one connection from many tasks. Every request gets a timeout ([`ClientOptions::request_timeout`],
//! 60 s by default); dropping a call's future cancels it (`notifications/cancelled`). Params are
//! sent as typed [`Body`] values, so over the in-process transport nothing is serialized, and
//! results are decoded with [`Body::into_decoded`].
//!
//! Every client-to-server method has a typed call: tools, resources (with subscriptions),
//! prompts, completion, logging, tasks; list calls follow `nextCursor` to the end and give up
//! on a repeated cursor ([`ClientError::Pagination`]). A call the server did not advertise
//! (`resources/list` without `resources`, `completion/complete` without `completions`,
//! `resources/subscribe` without `resources.subscribe` …) fails with
//! [`ClientError::CapabilityNotSupported`] before anything is sent
//! ([capability negotiation](https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle#capability-negotiation)).
//! [`Client::call_tool_with_progress`] and [`Client::request_with_progress`] set
//! `_meta.progressToken` and route `notifications/progress` to a callback;
//! [`Client::request_raw`] sends any method with untyped params.
//!
//! What the server sends us: `ping` is answered `{}`; `sampling/createMessage`,
//! `elicitation/create` and `roots/list` go to the handlers of [`ClientOptions::with_sampling`],
//! [`ClientOptions::with_elicitation`] and the roots of [`ClientOptions::with_roots`], and only
//! those capabilities are declared in `initialize`; any other request (or one for a capability we
//! did not declare) is answered -32601, and an elicitation in a mode we did not declare -32602.
//! Notifications go to the [`ClientHandler`] the host plugs in ([`ClientOptions::handler`];
//! [`ServerNotification::parse`] gives them types).
//!
//! Not here: reconnecting, and the connection set over many servers.

pub mod config;
pub mod connection_set;
mod error;
mod handlers;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::{Map, Value};

pub use crate::peer::Progress;
pub use error::ClientError;
pub use handlers::{ElicitationHandler, ElicitationModes, HandlerFuture, SamplingHandler, ServerNotification};

use crate::peer::{Handler, Peer, RequestError};
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject, Id, Message, Notification, Request};
use crate::proto::mcp_types::Notification as NotificationMethod;
use crate::proto::mcp_types::{
    CallTool, CallToolOutput, CallToolRequestParams, CallToolResult, CancelTask, CapabilityObject, ClientCapabilities,
    Complete, CompleteArgument, CompleteRequestParams, CompleteResult, CompletionReference, CreateMessage,
    CreateTaskResult, Discover, Elicit, ElicitRequestParams, ElicitationCapability, EmptyParams, EmptyResult,
    GetPrompt, GetPromptRequestParams, GetPromptResult, GetTask, GetTaskPayload, GetTaskPayloadResult, GetTaskResult,
    Implementation, Initialize, InitializeRequestParams, InitializeResult, ListPrompts, ListPromptsRequestParams,
    ListPromptsResult, ListResourceTemplates, ListResourceTemplatesRequestParams, ListResourceTemplatesResult,
    ListResources, ListResourcesRequestParams, ListResourcesResult, ListRoots, ListRootsResult, ListTasks,
    ListTasksRequestParams, ListTasksResult, ListTools, ListToolsRequestParams, ListToolsResult, LoggingLevel, Method,
    Ping, Prompt, ReadResource, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate, Root,
    RootsCapability, RootsListChanged, SamplingCapability, ServerCapabilities, SetLevel, SetLevelRequestParams,
    Subscribe, SubscribeRequestParams, Task, TaskIdParams, TaskMetadata, Tool, Unsubscribe,
};
use crate::proto::session::{self, Mode, RequestOptions, Role};
use crate::proto::version::ProtocolVersion;
use crate::transport::stdio::{ChildCommand, StdioTransport};
use crate::transport::{Transport, TransportError};

/// What the host wants to hear from the server. Called from the connection's reader task: do
/// not block; spawn work that takes time.
///
/// Any `Fn(Notification) + Send + Sync + 'static` closure is a handler.
pub trait ClientHandler: Send + Sync + 'static {
    /// A notification from the server (`notifications/message`, `notifications/tools/list_changed`,
    /// …). Progress and cancellation are consumed by the session and do not arrive here.
    fn on_notification(&self, notification: Notification);
}

impl<F: Fn(Notification) + Send + Sync + 'static> ClientHandler for F {
    fn on_notification(&self, notification: Notification) {
        self(notification)
    }
}

/// How a [`Client`] introduces itself and how long it waits. Build it from
/// [`ClientOptions::default`] and the `with_*` methods.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// `clientInfo`: default `mcpwire` and this crate's version.
    pub client_info: Implementation,
    /// The capabilities we declare besides those derived from handlers: default none. Its
    /// `sampling`, `elicitation` and `roots` members are ignored: those are declared exactly
    /// when [`ClientOptions::sampling`], [`ClientOptions::elicitation`] or
    /// [`ClientOptions::roots`] is set.
    pub capabilities: ClientCapabilities,
    /// The version offered in `initialize`: default 2025-11-25.
    pub protocol_version: ProtocolVersion,
    /// The versions accepted when the server counter-offers: default 2024-11-05 … 2025-11-25.
    pub supported_versions: Vec<ProtocolVersion>,
    /// The timeout of every request that does not set its own, `initialize` included:
    /// default 60 s (the TypeScript SDK's). `None`: wait forever.
    pub request_timeout: Option<Duration>,
    /// The most pages a paginated list may have before [`ClientError::Pagination`]: default 1000.
    pub max_pages: usize,
    /// Limits of the session core (requests in flight each way …): the defaults of
    /// [`session::Limits`].
    pub session_limits: session::Limits,
    /// Where server notifications go: default nowhere.
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// Who answers `sampling/createMessage` (declares `sampling`): default nobody.
    pub sampling: Option<Arc<dyn SamplingHandler>>,
    /// Who answers `elicitation/create`, in which modes (declares `elicitation`): default nobody.
    pub elicitation: Option<(Arc<dyn ElicitationHandler>, ElicitationModes)>,
    /// The roots answered to `roots/list` (declares `roots` with `listChanged`): default none,
    /// and the capability is not declared. Change them later with [`Client::set_roots`].
    pub roots: Option<Vec<Root>>,
    /// Refuse, before sending, a call the server did not advertise
    /// ([`ClientError::CapabilityNotSupported`]): default `true`.
    pub strict_capabilities: bool,
    /// The version string offered in `initialize` in place of [`ClientOptions::protocol_version`],
    /// e.g. one newer than this crate knows: default none. The server's answer must still be in
    /// [`ClientOptions::supported_versions`].
    pub offered_version: Option<String>,
    /// Probe with `server/discover` (2026-07-28) before `initialize`, as the Python SDK's
    /// `mode='auto'` does: default `false`. A server that answers with a version of
    /// [`ClientOptions::supported_versions`] without handshake gets a stateless session; one that
    /// answers with an error (-32601 from servers before 2026-07-28), or with no version we take,
    /// gets `initialize`.
    pub discover_first: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: Implementation {
                name: "mcpwire".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                ..Implementation::default()
            },
            capabilities: ClientCapabilities::default(),
            protocol_version: ProtocolVersion::LATEST_HANDSHAKE,
            supported_versions: ProtocolVersion::ALL.into_iter().filter(|v| v.has_initialize_handshake()).collect(),
            request_timeout: Some(Duration::from_secs(60)),
            max_pages: 1000,
            session_limits: session::Limits::default(),
            handler: None,
            sampling: None,
            elicitation: None,
            roots: None,
            strict_capabilities: true,
            offered_version: None,
            discover_first: false,
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("client_info", &self.client_info)
            .field("capabilities", &self.capabilities)
            .field("protocol_version", &self.protocol_version)
            .field("supported_versions", &self.supported_versions)
            .field("request_timeout", &self.request_timeout)
            .field("max_pages", &self.max_pages)
            .field("session_limits", &self.session_limits)
            .field("handler", &self.handler.as_ref().map(|_| ".."))
            .field("sampling", &self.sampling.as_ref().map(|_| ".."))
            .field("elicitation", &self.elicitation.as_ref().map(|(_, modes)| modes))
            .field("roots", &self.roots)
            .field("strict_capabilities", &self.strict_capabilities)
            .field("offered_version", &self.offered_version)
            .field("discover_first", &self.discover_first)
            .finish()
    }
}

impl ClientOptions {
    /// These options with another `clientInfo` name and version.
    pub fn with_client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_info = Implementation { name: name.into(), version: version.into(), ..Implementation::default() };
        self
    }

    /// These options with other declared capabilities.
    pub fn with_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// These options offering another version in `initialize`.
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.protocol_version = version;
        self
    }

    /// These options accepting only `versions` from the server.
    pub fn with_supported_versions(mut self, versions: impl IntoIterator<Item = ProtocolVersion>) -> Self {
        self.supported_versions = versions.into_iter().collect();
        self
    }

    /// These options with another default request timeout (`None`: wait forever).
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// These options with another page cap for paginated lists (at least 1).
    pub fn with_max_pages(mut self, pages: usize) -> Self {
        self.max_pages = pages.max(1);
        self
    }

    /// These options with other session limits.
    pub fn with_session_limits(mut self, limits: session::Limits) -> Self {
        self.session_limits = limits;
        self
    }

    /// These options delivering server notifications to `handler`.
    pub fn with_handler(mut self, handler: impl ClientHandler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// These options answering `sampling/createMessage` with `handler` (declares `sampling`).
    pub fn with_sampling(mut self, handler: impl SamplingHandler) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// These options answering form-mode `elicitation/create` with `handler` (declares
    /// `elicitation`).
    pub fn with_elicitation(self, handler: impl ElicitationHandler) -> Self {
        self.with_elicitation_modes(handler, ElicitationModes::FORM)
    }

    /// These options answering `elicitation/create` in `modes` with `handler`.
    pub fn with_elicitation_modes(mut self, handler: impl ElicitationHandler, modes: ElicitationModes) -> Self {
        self.elicitation = Some((Arc::new(handler), modes));
        self
    }

    /// These options exposing `roots` (declares `roots` with `listChanged: true`).
    pub fn with_roots(mut self, roots: impl IntoIterator<Item = Root>) -> Self {
        self.roots = Some(roots.into_iter().collect());
        self
    }

    /// These options offering `version` in `initialize` as written, known to this crate or not
    /// (the version negotiation of a client newer than the server). Only a counter-offer in
    /// [`ClientOptions::supported_versions`] is accepted.
    pub fn with_offered_version_str(mut self, version: impl Into<String>) -> Self {
        self.offered_version = Some(version.into());
        self
    }

    /// These options probing with `server/discover` before `initialize` (see
    /// [`ClientOptions::discover_first`]); 2026-07-28 joins the supported versions.
    pub fn with_discover_first(mut self, discover: bool) -> Self {
        self.discover_first = discover;
        if discover && !self.supported_versions.contains(&ProtocolVersion::V2026_07_28) {
            self.supported_versions.push(ProtocolVersion::V2026_07_28);
        }
        self
    }

    /// The version string `initialize` offers: [`ClientOptions::offered_version`], else
    /// [`ClientOptions::protocol_version`].
    pub fn offered_version_str(&self) -> &str {
        self.offered_version.as_deref().unwrap_or(self.protocol_version.as_str())
    }

    /// These options checking (default) or not checking the server's capabilities before a call.
    pub fn with_strict_capabilities(mut self, strict: bool) -> Self {
        self.strict_capabilities = strict;
        self
    }

    /// The capabilities `initialize` declares with these options: [`ClientOptions::capabilities`]
    /// with `sampling`, `elicitation` and `roots` set exactly for the handlers given, in the
    /// shape of the offered version (elicitation exists from 2025-06-18; its `form` / `url`
    /// members from 2025-11-25).
    pub fn declared_capabilities(&self) -> ClientCapabilities {
        let mut caps = self.capabilities.clone();
        caps.sampling = self.sampling.as_ref().map(|_| SamplingCapability::default());
        caps.roots =
            self.roots.as_ref().map(|_| RootsCapability { list_changed: Some(true), ..RootsCapability::default() });
        caps.elicitation = match &self.elicitation {
            Some((_, modes)) if self.protocol_version.has_elicitation() => {
                let mut cap = ElicitationCapability::default();
                if self.protocol_version >= ProtocolVersion::V2025_11_25 {
                    cap.form = modes.form.then(CapabilityObject::new);
                    cap.url = modes.url.then(CapabilityObject::new);
                }
                Some(cap)
            }
            _ => None,
        };
        caps
    }
}

/// The connection's answers to what the server sends.
struct ClientPeerHandler {
    handler: Option<Arc<dyn ClientHandler>>,
    sampling: Option<Arc<dyn SamplingHandler>>,
    elicitation: Option<(Arc<dyn ElicitationHandler>, ElicitationModes)>,
    roots: Option<Arc<RwLock<Vec<Root>>>>,
    /// Handler tasks still running, by request id, so that `notifications/cancelled` stops them.
    running: Arc<Mutex<HashMap<Id, tokio::task::AbortHandle>>>,
}

fn invalid_params(e: serde_json::Error) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("invalid params: {e}"))
}

fn method_not_found() -> ErrorObject {
    ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, ErrorCode::METHOD_NOT_FOUND.default_message())
}

impl ClientPeerHandler {
    /// Runs `work` in a task that answers `request` when done, unless cancelled first.
    fn spawn_answer<T, F>(&self, peer: &Peer<T>, id: Id, work: F)
    where
        T: Transport,
        F: std::future::Future<Output = Result<Body, ErrorObject>> + Send + 'static,
    {
        let peer = peer.clone();
        let running = self.running.clone();
        let key = id.clone();
        let mut table = self.running.lock().expect("never poisoned");
        let task = tokio::spawn(async move {
            let outcome = work.await;
            running.lock().expect("never poisoned").remove(&id);
            let _ = peer.respond(&id, outcome).await;
        });
        // The task removes itself when done, which waits for this lock: insert first.
        table.insert(key, task.abort_handle());
    }
}

impl<T: Transport> Handler<T> for ClientPeerHandler {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        let params = request.params.clone();
        let decode = |p: Option<Body>| -> Result<Body, serde_json::Error> {
            p.map_or_else(|| Body::serialized(&serde_json::json!({})), Ok)
        };
        let outcome: Result<Body, ErrorObject> = match request.method.as_str() {
            // ping: "The receiver MUST respond promptly with an empty response".
            Ping::NAME => Ok(Body::typed(EmptyResult::default())),
            ListRoots::NAME => match &self.roots {
                Some(roots) => {
                    let roots = roots.read().expect("never poisoned").clone();
                    Ok(Body::typed(ListRootsResult { roots, meta: None, extra: Default::default() }))
                }
                None => Err(method_not_found()),
            },
            CreateMessage::NAME => match &self.sampling {
                Some(handler) => match decode(params).and_then(|b| b.into_decoded()) {
                    Ok(p) => {
                        let future = handler.create_message(p);
                        self.spawn_answer(peer, request.id, async move { future.await.map(Body::typed) });
                        return;
                    }
                    Err(e) => Err(invalid_params(e)),
                },
                None => Err(method_not_found()),
            },
            Elicit::NAME => match &self.elicitation {
                Some((handler, modes)) => match decode(params).and_then(|b| b.into_decoded::<ElicitRequestParams>()) {
                    Ok(p) => {
                        let allowed = match &p {
                            ElicitRequestParams::Form(_) => modes.form,
                            ElicitRequestParams::Url(_) => modes.url,
                            ElicitRequestParams::Other(_) => false,
                        };
                        if allowed {
                            let future = handler.elicit(p);
                            self.spawn_answer(peer, request.id, async move { future.await.map(Body::typed) });
                            return;
                        }
                        Err(ErrorObject::new(
                            ErrorCode::INVALID_PARAMS,
                            "elicitation mode not supported: the client did not declare it",
                        ))
                    }
                    Err(e) => Err(invalid_params(e)),
                },
                None => Err(method_not_found()),
            },
            _ => Err(method_not_found()),
        };
        let queued = peer.respond_now(&request.id, outcome);
        tokio::spawn(async move {
            let _ = queued.send().await;
        });
    }

    fn on_notification(&self, _peer: &Peer<T>, notification: Notification) {
        if let Some(handler) = &self.handler {
            handler.on_notification(notification);
        }
    }

    fn on_cancelled(&self, _peer: &Peer<T>, id: &Id) {
        if let Some(task) = self.running.lock().expect("never poisoned").remove(id) {
            task.abort();
        }
    }

    fn on_malformed(&self, _peer: &Peer<T>, _error: &TransportError) {
        // A client does not answer what it cannot read (JSON-RPC asks that of servers); the
        // line is skipped and the connection carries on.
    }
}

struct Inner<T: Transport> {
    peer: Peer<T>,
    init: InitializeResult,
    version: ProtocolVersion,
    request_timeout: Option<Duration>,
    max_pages: usize,
    /// [`Client::close`] was called: a call that fails because of it did not see the server exit.
    closed_by_us: AtomicBool,
    /// What we declared in `initialize`.
    declared: ClientCapabilities,
    /// The roots answered to `roots/list`, when declared.
    roots: Option<Arc<RwLock<Vec<Root>>>>,
    strict_capabilities: bool,
    /// The next progress token of ours.
    next_progress_token: AtomicU64,
    /// A stateless (2026-07-28) session: the `_meta` members every request carries (version,
    /// client info, client capabilities).
    session_meta: Option<Map<String, Value>>,
}

impl<T: Transport> Drop for Inner<T> {
    fn drop(&mut self) {
        // The peer's tasks keep the transport alive; the last client handle closes it (for a
        // child process: stdin closed, then the process is stopped).
        if self.peer.is_closed() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let peer = self.peer.clone();
            runtime.spawn(async move {
                let _ = peer.close().await;
            });
        }
    }
}

/// A connection to one MCP server. Cheap to clone; every clone drives the same connection, and
/// the last one dropped closes it.
pub struct Client<T: Transport> {
    inner: Arc<Inner<T>>,
}

impl<T: Transport> Clone for Client<T> {
    fn clone(&self) -> Self {
        Client { inner: self.inner.clone() }
    }
}

impl<T: Transport> std::fmt::Debug for Client<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.inner.init.server_info.name)
            .field("version", &self.inner.version)
            .finish_non_exhaustive()
    }
}

impl Client<StdioTransport> {
    /// Starts `command` as a child process and connects to it over its stdin/stdout.
    ///
    /// # Errors
    /// [`ClientError::Transport`] when the program cannot be started, else as
    /// [`Client::connect`].
    pub async fn spawn(command: ChildCommand, options: ClientOptions) -> Result<Client<StdioTransport>, ClientError> {
        let transport = command.spawn()?;
        Client::connect(transport, options).await
    }

    /// The server process's exit status, once it has exited.
    pub fn exit_status(&self) -> Option<std::process::ExitStatus> {
        self.inner.peer.transport().exit_status()
    }
}

impl<T: Transport> Client<T> {
    /// Connects over `transport`: `initialize`, version check, `notifications/initialized`.
    /// Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// [`ClientError::UnsupportedVersion`] when the server answers a version not in
    /// [`ClientOptions::supported_versions`]; [`ClientError::Rpc`] when it refuses `initialize`;
    /// [`ClientError::ServerExited`], [`ClientError::Closed`], [`ClientError::Timeout`] when
    /// it never answers. The connection is closed in every case.
    pub async fn connect(transport: T, options: ClientOptions) -> Result<Client<T>, ClientError> {
        let roots = options.roots.clone().map(|r| Arc::new(RwLock::new(r)));
        let handler = ClientPeerHandler {
            handler: options.handler.clone(),
            sampling: options.sampling.clone(),
            elicitation: options.elicitation.clone(),
            roots: roots.clone(),
            running: Arc::default(),
        };
        // With a discover probe the session has no handshake gate: whether there is a handshake
        // is known only from the server's answer, and `initialize` then runs as a plain request.
        let mode = if options.discover_first { Mode::Stateless } else { Mode::Handshake };
        let peer = Peer::start(transport, Role::Client, mode, options.session_limits, handler);
        let declared = options.declared_capabilities();
        let connected = match options.discover_first {
            true => match discover(&peer, &options, &declared).await {
                Ok(Some((init, version))) => Ok((init, version, Some(stateless_meta(version, &options, &declared)))),
                Ok(None) => handshake(&peer, &options, &declared, false).await.map(|(i, v)| (i, v, None)),
                Err(e) => Err(e),
            },
            false => handshake(&peer, &options, &declared, true).await.map(|(i, v)| (i, v, None)),
        };
        match connected {
            Ok((init, version, session_meta)) => Ok(Client {
                inner: Arc::new(Inner {
                    peer,
                    init,
                    version,
                    request_timeout: options.request_timeout,
                    max_pages: options.max_pages,
                    closed_by_us: AtomicBool::new(false),
                    declared,
                    roots,
                    strict_capabilities: options.strict_capabilities,
                    next_progress_token: AtomicU64::new(1),
                    session_meta,
                }),
            }),
            Err(e) => {
                let _ = peer.close().await;
                Err(e)
            }
        }
    }

    /// The server's answer to `initialize`, whole.
    pub fn initialize_result(&self) -> &InitializeResult {
        &self.inner.init
    }

    /// Who the server is (`serverInfo`).
    pub fn server_info(&self) -> &Implementation {
        &self.inner.init.server_info
    }

    /// What the server supports.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.init.capabilities
    }

    /// The server's instructions for the model, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.init.instructions.as_deref()
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// The transport under this client.
    pub fn transport(&self) -> &T {
        self.inner.peer.transport()
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.inner.peer.is_closed()
    }

    /// Completes when the connection has ended (the server exited or closed it, the transport
    /// failed, or [`Client::close`] was called); at once if it already has.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future only stops waiting.
    pub async fn closed(&self) {
        self.inner.peer.closed().await
    }

    /// Closes the connection: calls still waiting fail with [`ClientError::Closed`]; a child
    /// process gets its stdin closed, then is stopped.
    ///
    /// # Errors
    /// When flushing what was queued fails.
    pub async fn close(&self) -> Result<(), ClientError> {
        self.inner.closed_by_us.store(true, Ordering::Release);
        self.inner.peer.close().await.map_err(ClientError::Transport)
    }

    /// Sends any request of the method table and decodes its result. A `timeout` of `None` in
    /// `options` means [`ClientOptions::request_timeout`]. A method whose server capability was
    /// not advertised is refused before sending ([`ClientError::CapabilityNotSupported`]) unless
    /// [`ClientOptions::strict_capabilities`] is off.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request (`notifications/cancelled` is sent).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub fn request<M>(
        &self,
        params: M::Params,
        mut options: RequestOptions,
    ) -> impl Future<Output = Result<M::Output, ClientError>> + '_
    where
        M: Method,
        M::Params: Send + Sync + 'static,
        M::Output: Clone + Send + Sync + 'static,
    {
        // The params become a body before the future is built: the future then does not carry
        // them (tools/call params are ~1 KiB, copied at every await level otherwise).
        let body = self.request_body::<M>(params);
        if options.timeout.is_none() {
            options.timeout = self.inner.request_timeout;
        }
        async move {
            let outcome = self.inner.peer.request(M::NAME, Some(body?), options).await;
            decode_outcome::<T, M>(&self.inner.peer, outcome, Some(&self.inner.closed_by_us)).await
        }
    }

    /// The body of request `M`: `params` as they are, or serialized with the session's `_meta`
    /// added when the session needs it; refused when the server lacks the capability.
    fn request_body<M>(&self, params: M::Params) -> Result<Body, ClientError>
    where
        M: Method,
        M::Params: Send + Sync + 'static,
    {
        self.check_capability(M::NAME)?;
        let Some(session_meta) = &self.inner.session_meta else {
            return Ok(Body::typed(params));
        };
        let invalid = |source| ClientError::InvalidResult { method: M::NAME.to_owned(), source };
        let mut value = serde_json::to_value(&params).map_err(invalid)?;
        add_meta(&mut value, session_meta).map_err(invalid)?;
        Body::serialized(&value).map_err(invalid)
    }

    /// Sends request `method` with `params` as written, typed or not (an extension method,
    /// or params the typed API cannot express, e.g. a conformance test's invalid ones), and
    /// returns the result as JSON. The capability check, timeout and stateless `_meta` are
    /// those of [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request (`notifications/cancelled` is sent).
    ///
    /// # Errors
    /// See [`ClientError`]; [`ClientError::InvalidResult`] when the session needs `_meta`
    /// added and `params` are not an object.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        mut options: RequestOptions,
    ) -> Result<Value, ClientError> {
        self.check_capability(method)?;
        if options.timeout.is_none() {
            options.timeout = self.inner.request_timeout;
        }
        let invalid = |source| ClientError::InvalidResult { method: method.to_owned(), source };
        let params = match (&self.inner.session_meta, params) {
            (Some(session_meta), params) => {
                let mut value = params.unwrap_or_else(|| Value::Object(Map::new()));
                add_meta(&mut value, session_meta).map_err(invalid)?;
                Some(value)
            }
            (None, params) => params,
        };
        let body = params.map(|p| Body::serialized(&p)).transpose().map_err(invalid)?;
        let outcome = self.inner.peer.request(method, body, options).await;
        decode_named::<T, Value>(&self.inner.peer, method, outcome, Some(&self.inner.closed_by_us)).await
    }

    /// Like [`Client::request`], with `_meta.progressToken` set to a fresh token of ours and
    /// every `notifications/progress` for it passed to `on_progress` (from the connection's
    /// reader task: do not block). With [`RequestOptions::reset_timeout_on_progress`] progress
    /// keeps the call alive.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request (`notifications/cancelled` is sent).
    ///
    /// # Errors
    /// See [`ClientError`]; [`ClientError::InvalidResult`] also when `params` do not serialize
    /// to an object.
    pub async fn request_with_progress<M>(
        &self,
        params: M::Params,
        mut options: RequestOptions,
        on_progress: impl Fn(Progress) + Send + Sync + 'static,
    ) -> Result<M::Output, ClientError>
    where
        M: Method,
        M::Output: Clone + Send + Sync + 'static,
    {
        self.check_capability(M::NAME)?;
        if options.timeout.is_none() {
            options.timeout = self.inner.request_timeout;
        }
        let invalid = |source| ClientError::InvalidResult { method: M::NAME.to_owned(), source };
        let token = Id::String(format!("mcpwire-{}", self.inner.next_progress_token.fetch_add(1, Ordering::Relaxed)));
        let mut value = serde_json::to_value(&params).map_err(invalid)?;
        let Some(object) = value.as_object_mut() else {
            return Err(invalid(serde::de::Error::custom("params are not an object")));
        };
        let meta = object.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("progressToken".to_owned(), serde_json::to_value(&token).map_err(invalid)?);
        }
        if let Some(session_meta) = &self.inner.session_meta {
            add_meta(&mut value, session_meta).map_err(invalid)?;
        }
        options.progress_token = Some(token);
        let body = Body::serialized(&value).map_err(invalid)?;
        let peer = &self.inner.peer;
        let outcome = peer.request_with_progress(M::NAME, Some(body), options, Some(Box::new(on_progress))).await;
        decode_outcome::<T, M>(peer, outcome, Some(&self.inner.closed_by_us)).await
    }

    /// The capabilities this client declared in `initialize`.
    pub fn declared_capabilities(&self) -> &ClientCapabilities {
        &self.inner.declared
    }

    /// Fails with [`ClientError::CapabilityNotSupported`] when the server did not advertise what
    /// `method` needs (or the negotiated version lacks it), unless strict checking is off.
    fn check_capability(&self, method: &str) -> Result<(), ClientError> {
        if !self.inner.strict_capabilities {
            return Ok(());
        }
        match missing_capability(method, self.capabilities(), self.inner.version) {
            Some(capability) => Err(ClientError::CapabilityNotSupported { method: method.to_owned(), capability }),
            None => Ok(()),
        }
    }

    /// Reads every page of a list method.
    async fn list_all<M, I>(
        &self,
        page: impl Fn(Option<String>) -> M::Params,
        split: impl Fn(M::Output) -> (Vec<I>, Option<String>),
    ) -> Result<Vec<I>, ClientError>
    where
        M: Method,
        M::Params: Send + Sync + 'static,
        M::Output: Clone + Send + Sync + 'static,
    {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor = None;
        for pages in 1.. {
            let (mut more, next) = split(self.request::<M>(page(cursor.take()), RequestOptions::default()).await?);
            items.append(&mut more);
            let Some(next) = next else { return Ok(items) };
            if !seen.insert(next.clone()) || pages >= self.inner.max_pages {
                return Err(ClientError::Pagination { method: M::NAME.to_owned(), cursor: next, pages });
            }
            cursor = Some(next);
        }
        unreachable!("the page loop only ends by returning")
    }

    /// `ping`: checks that the server is alive.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn ping(&self) -> Result<(), ClientError> {
        self.request::<Ping>(EmptyParams::default(), RequestOptions::default()).await.map(drop)
    }

    /// One page of `tools/list`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_tools_page(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        let params = ListToolsRequestParams { cursor, ..ListToolsRequestParams::default() };
        self.request::<ListTools>(params, RequestOptions::default()).await
    }

    /// Every tool, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// [`ClientError::Pagination`] when the server repeats a cursor or sends more than
    /// [`ClientOptions::max_pages`] pages; otherwise as any request.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.list_all::<ListTools, _>(
            |cursor| ListToolsRequestParams { cursor, ..ListToolsRequestParams::default() },
            |page| (page.tools, page.next_cursor),
        )
        .await
    }

    /// Calls tool `name` with `arguments`, waiting at most [`ClientOptions::request_timeout`].
    /// A tool that fails is a result with `is_error: Some(true)`, not an `Err`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: Option<Map<String, Value>>,
    ) -> impl Future<Output = Result<CallToolResult, ClientError>> + '_ {
        let params = CallToolRequestParams { name: name.into(), arguments, ..CallToolRequestParams::default() };
        self.call_tool_with(params, RequestOptions::default())
    }

    /// Like [`Client::call_tool`], waiting at most `timeout`.
    ///
    /// # Errors
    /// [`ClientError::Timeout`] when `timeout` passes first; otherwise as [`Client::call_tool`].
    pub fn call_tool_with_timeout(
        &self,
        name: impl Into<String>,
        arguments: Option<Map<String, Value>>,
        timeout: Duration,
    ) -> impl Future<Output = Result<CallToolResult, ClientError>> + '_ {
        let params = CallToolRequestParams { name: name.into(), arguments, ..CallToolRequestParams::default() };
        self.call_tool_with(params, RequestOptions { timeout: Some(timeout), ..RequestOptions::default() })
    }

    /// `tools/call` with full params and request options (a `timeout` of `None` means
    /// [`ClientOptions::request_timeout`]).
    ///
    /// # Errors
    /// [`ClientError::InvalidResult`] when the server answers with something other than a
    /// final tool result (this client never asks for a task); otherwise as any request.
    pub fn call_tool_with(
        &self,
        params: CallToolRequestParams,
        options: RequestOptions,
    ) -> impl Future<Output = Result<CallToolResult, ClientError>> + '_ {
        let call = self.request::<CallTool>(params, options);
        async move { tool_result(call.await?) }
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `resources`; otherwise as
    /// any request.
    pub async fn list_resources_page(&self, cursor: Option<String>) -> Result<ListResourcesResult, ClientError> {
        let params = ListResourcesRequestParams { cursor, ..ListResourcesRequestParams::default() };
        self.request::<ListResources>(params, RequestOptions::default()).await
    }

    /// Every resource, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// As [`Client::list_tools`]; [`ClientError::CapabilityNotSupported`] without `resources`.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.list_all::<ListResources, _>(
            |cursor| ListResourcesRequestParams { cursor, ..ListResourcesRequestParams::default() },
            |page| (page.resources, page.next_cursor),
        )
        .await
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// As [`Client::list_resources_page`].
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        let params = ListResourceTemplatesRequestParams { cursor, ..ListResourceTemplatesRequestParams::default() };
        self.request::<ListResourceTemplates>(params, RequestOptions::default()).await
    }

    /// Every resource template, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// As [`Client::list_resources`].
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.list_all::<ListResourceTemplates, _>(
            |cursor| ListResourceTemplatesRequestParams { cursor, ..ListResourceTemplatesRequestParams::default() },
            |page| (page.resource_templates, page.next_cursor),
        )
        .await
    }

    /// `resources/read`: the contents of the resource at `uri`.
    ///
    /// # Errors
    /// As [`Client::list_resources_page`].
    pub async fn read_resource(&self, uri: impl Into<String>) -> Result<ReadResourceResult, ClientError> {
        let params = ReadResourceRequestParams {
            uri: uri.into(),
            input_responses: None,
            request_state: None,
            meta: None,
            extra: Default::default(),
        };
        self.request::<ReadResource>(params, RequestOptions::default()).await
    }

    /// `resources/subscribe`: ask for `notifications/resources/updated` about `uri`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] unless the server advertised
    /// `resources.subscribe`; otherwise as any request.
    pub async fn subscribe(&self, uri: impl Into<String>) -> Result<(), ClientError> {
        let params = SubscribeRequestParams { uri: uri.into(), meta: None, extra: Default::default() };
        self.request::<Subscribe>(params, RequestOptions::default()).await.map(drop)
    }

    /// `resources/unsubscribe`.
    ///
    /// # Errors
    /// As [`Client::subscribe`].
    pub async fn unsubscribe(&self, uri: impl Into<String>) -> Result<(), ClientError> {
        let params = SubscribeRequestParams { uri: uri.into(), meta: None, extra: Default::default() };
        self.request::<Unsubscribe>(params, RequestOptions::default()).await.map(drop)
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `prompts`; otherwise as
    /// any request.
    pub async fn list_prompts_page(&self, cursor: Option<String>) -> Result<ListPromptsResult, ClientError> {
        let params = ListPromptsRequestParams { cursor, ..ListPromptsRequestParams::default() };
        self.request::<ListPrompts>(params, RequestOptions::default()).await
    }

    /// Every prompt, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// As [`Client::list_tools`]; [`ClientError::CapabilityNotSupported`] without `prompts`.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.list_all::<ListPrompts, _>(
            |cursor| ListPromptsRequestParams { cursor, ..ListPromptsRequestParams::default() },
            |page| (page.prompts, page.next_cursor),
        )
        .await
    }

    /// `prompts/get`: prompt `name` rendered with `arguments`.
    ///
    /// # Errors
    /// As [`Client::list_prompts_page`].
    pub async fn get_prompt(
        &self,
        name: impl Into<String>,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, ClientError> {
        let params = GetPromptRequestParams {
            name: name.into(),
            arguments,
            input_responses: None,
            request_state: None,
            meta: None,
            extra: Default::default(),
        };
        self.request::<GetPrompt>(params, RequestOptions::default()).await
    }

    /// `completion/complete`: suggestions for argument `name` of `reference`, given what has
    /// been typed (`value`).
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `completions`; otherwise
    /// as any request.
    pub async fn complete(
        &self,
        reference: CompletionReference,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<CompleteResult, ClientError> {
        let params = CompleteRequestParams {
            reference,
            argument: CompleteArgument { name: name.into(), value: value.into(), extra: Default::default() },
            context: None,
            meta: None,
            extra: Default::default(),
        };
        self.complete_with(params).await
    }

    /// `completion/complete` with full params (e.g. a `context` of resolved arguments).
    ///
    /// # Errors
    /// As [`Client::complete`].
    pub async fn complete_with(&self, params: CompleteRequestParams) -> Result<CompleteResult, ClientError> {
        self.request::<Complete>(params, RequestOptions::default()).await
    }

    /// `logging/setLevel`: only `notifications/message` at `level` or more severe, from now on.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `logging`; otherwise as
    /// any request.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        let params = SetLevelRequestParams { level, meta: None, extra: Default::default() };
        self.request::<SetLevel>(params, RequestOptions::default()).await.map(drop)
    }

    /// `tools/call` reporting progress: `_meta.progressToken` is set and every
    /// `notifications/progress` for the call goes to `on_progress`.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled` is sent).
    ///
    /// # Errors
    /// As [`Client::call_tool_with`].
    pub async fn call_tool_with_progress(
        &self,
        params: CallToolRequestParams,
        options: RequestOptions,
        on_progress: impl Fn(Progress) + Send + Sync + 'static,
    ) -> Result<CallToolResult, ClientError> {
        tool_result(self.request_with_progress::<CallTool>(params, options, on_progress).await?)
    }

    /// `tools/call` as a task (2025-11-25): the server answers at once with the task, whose
    /// state [`Client::get_task`] polls and whose result [`Client::get_task_tool_result`]
    /// fetches. `ttl_ms` is the requested lifetime.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] unless the server advertised
    /// `tasks.requests.tools.call` (and 2025-11-25 was negotiated); [`ClientError::InvalidResult`]
    /// when it answers with something other than a task; otherwise as any request.
    pub async fn call_tool_as_task(
        &self,
        mut params: CallToolRequestParams,
        ttl_ms: Option<u64>,
    ) -> Result<CreateTaskResult, ClientError> {
        let callable = self
            .capabilities()
            .tasks
            .as_ref()
            .filter(|_| self.inner.version.has_tasks())
            .and_then(|t| t.requests.as_ref())
            .and_then(|r| r.tools.as_ref())
            .and_then(|t| t.call.as_ref());
        if callable.is_none() && self.inner.strict_capabilities {
            return Err(ClientError::CapabilityNotSupported {
                method: CallTool::NAME.to_owned(),
                capability: "tasks.requests.tools.call",
            });
        }
        params.task = Some(TaskMetadata { ttl: ttl_ms, extra: Default::default() });
        match self.request::<CallTool>(params, RequestOptions::default()).await? {
            CallToolOutput::Task(task) => Ok(task),
            CallToolOutput::Result(_) | CallToolOutput::Other(_) => Err(ClientError::InvalidResult {
                method: CallTool::NAME.to_owned(),
                source: serde::de::Error::custom("expected a task, got a final or partial result"),
            }),
        }
    }

    /// `tasks/get`: the state of task `task_id`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `tasks`; otherwise as any
    /// request.
    pub async fn get_task(&self, task_id: impl Into<String>) -> Result<Task, ClientError> {
        let params = TaskIdParams { task_id: task_id.into(), ..TaskIdParams::default() };
        self.request::<GetTask>(params, RequestOptions::default()).await.map(|r: GetTaskResult| r.task)
    }

    /// `tasks/result`: the result of the task's underlying request, as written (the server
    /// holds the answer until the task ends).
    ///
    /// # Errors
    /// As [`Client::get_task`].
    pub async fn get_task_result(
        &self,
        task_id: impl Into<String>,
        options: RequestOptions,
    ) -> Result<GetTaskPayloadResult, ClientError> {
        let params = TaskIdParams { task_id: task_id.into(), ..TaskIdParams::default() };
        self.request::<GetTaskPayload>(params, options).await
    }

    /// `tasks/result` of a task made by [`Client::call_tool_as_task`], as a tool result.
    ///
    /// # Errors
    /// As [`Client::get_task`]; [`ClientError::InvalidResult`] when the payload is not a tool
    /// result.
    pub async fn get_task_tool_result(
        &self,
        task_id: impl Into<String>,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let payload = self.get_task_result(task_id, options).await?;
        serde_json::to_value(&payload)
            .and_then(serde_json::from_value)
            .map_err(|source| ClientError::InvalidResult { method: GetTaskPayload::NAME.to_owned(), source })
    }

    /// One page of `tasks/list`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] without `tasks.list`; otherwise as any request.
    pub async fn list_tasks_page(&self, cursor: Option<String>) -> Result<ListTasksResult, ClientError> {
        let params = ListTasksRequestParams { cursor, ..ListTasksRequestParams::default() };
        self.request::<ListTasks>(params, RequestOptions::default()).await
    }

    /// Every task, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// As [`Client::list_tools`]; [`ClientError::CapabilityNotSupported`] without `tasks.list`.
    pub async fn list_tasks(&self) -> Result<Vec<Task>, ClientError> {
        self.list_all::<ListTasks, _>(
            |cursor| ListTasksRequestParams { cursor, ..ListTasksRequestParams::default() },
            |page| (page.tasks, page.next_cursor),
        )
        .await
    }

    /// `tasks/cancel`: cancels task `task_id`; returns its state afterwards.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] without `tasks.cancel`; otherwise as any request.
    pub async fn cancel_task(&self, task_id: impl Into<String>) -> Result<Task, ClientError> {
        let params = TaskIdParams { task_id: task_id.into(), ..TaskIdParams::default() };
        self.request::<CancelTask>(params, RequestOptions::default()).await.map(|r| r.task)
    }

    /// The roots currently answered to `roots/list` (`None` when roots were not declared).
    pub fn roots(&self) -> Option<Vec<Root>> {
        self.inner.roots.as_ref().map(|r| r.read().expect("never poisoned").clone())
    }

    /// Replaces the roots and tells the server (`notifications/roots/list_changed`).
    ///
    /// # Errors
    /// [`ClientError::NotDeclared`] when no roots were given in [`ClientOptions::with_roots`]
    /// (the capability was not declared); otherwise as [`Client::notify_roots_changed`].
    pub async fn set_roots(&self, roots: impl IntoIterator<Item = Root>) -> Result<(), ClientError> {
        let Some(current) = &self.inner.roots else {
            return Err(ClientError::NotDeclared { capability: "roots" });
        };
        *current.write().expect("never poisoned") = roots.into_iter().collect();
        self.notify_roots_changed().await
    }

    /// Sends `notifications/roots/list_changed` (the server will ask `roots/list` again).
    ///
    /// # Errors
    /// [`ClientError::NotDeclared`] without declared roots; [`ClientError::Session`] or
    /// [`ClientError::Transport`] when it cannot be sent.
    pub async fn notify_roots_changed(&self) -> Result<(), ClientError> {
        if self.inner.roots.is_none() {
            return Err(ClientError::NotDeclared { capability: "roots" });
        }
        self.inner.peer.notify(RootsListChanged::NAME, None).await.map_err(|e| error_for(RootsListChanged::NAME, e))
    }
}

fn tool_result(output: CallToolOutput) -> Result<CallToolResult, ClientError> {
    match output {
        CallToolOutput::Result(result) => Ok(result),
        CallToolOutput::Task(_) | CallToolOutput::Other(_) => Err(ClientError::InvalidResult {
            method: CallTool::NAME.to_owned(),
            source: serde::de::Error::custom("expected a tool result with content, got a task or partial result"),
        }),
    }
}

/// `initialize` and `notifications/initialized`; `gated`: the session has a handshake (else the
/// notification goes out on the transport, past a stateless session).
async fn handshake<T: Transport>(
    peer: &Peer<T>,
    options: &ClientOptions,
    declared: &ClientCapabilities,
    gated: bool,
) -> Result<(InitializeResult, ProtocolVersion), ClientError> {
    let params = InitializeRequestParams {
        protocol_version: options.offered_version_str().to_owned(),
        capabilities: declared.clone(),
        client_info: options.client_info.clone(),
        ..InitializeRequestParams::default()
    };
    let request_options = RequestOptions { timeout: options.request_timeout, ..RequestOptions::default() };
    let init = request::<T, Initialize>(peer, params, request_options, None).await?;
    let version =
        ProtocolVersion::client_accepts(&init.protocol_version, &options.supported_versions).map_err(|_| {
            ClientError::UnsupportedVersion {
                offered: options.protocol_version,
                answered: init.protocol_version.clone(),
            }
        })?;
    if let Some(stdio) = (peer.transport() as &dyn std::any::Any).downcast_ref::<StdioTransport>() {
        // Batches are legal only in 2025-03-26; the decoder must know.
        stdio.set_protocol_version(Some(version)).await;
    }
    if gated {
        peer.initialized().await.map_err(|e| error_for(Initialize::NAME, e))?;
    } else {
        let initialized = Notification { method: "notifications/initialized".to_owned(), params: None };
        peer.transport().send(Message::Notification(initialized)).await.map_err(ClientError::Transport)?;
    }
    Ok((init, version))
}

/// The `_meta` members of a 2026-07-28 request: version, client info and capabilities.
fn stateless_meta(
    version: ProtocolVersion,
    options: &ClientOptions,
    declared: &ClientCapabilities,
) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("io.modelcontextprotocol/protocolVersion".to_owned(), Value::from(version.as_str()));
    meta.insert(
        "io.modelcontextprotocol/clientInfo".to_owned(),
        serde_json::to_value(&options.client_info).unwrap_or_default(),
    );
    meta.insert(
        "io.modelcontextprotocol/clientCapabilities".to_owned(),
        serde_json::to_value(declared).unwrap_or_default(),
    );
    meta
}

/// Adds the session's `_meta` members (stateless sessions) to `params`, which must be an object.
fn add_meta(params: &mut Value, session_meta: &Map<String, Value>) -> Result<(), serde_json::Error> {
    let Some(object) = params.as_object_mut() else {
        return Err(serde::de::Error::custom("params are not an object"));
    };
    let meta = object.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return Err(serde::de::Error::custom("params._meta is not an object"));
    };
    for (key, value) in session_meta {
        meta.entry(key.clone()).or_insert_with(|| value.clone());
    }
    Ok(())
}

/// The `server/discover` probe: `Some` with a stateless session's server description when the
/// server answers with a version of ours that has no handshake; `None` when `initialize` should
/// follow (an error answer, or no such version).
async fn discover<T: Transport>(
    peer: &Peer<T>,
    options: &ClientOptions,
    declared: &ClientCapabilities,
) -> Result<Option<(InitializeResult, ProtocolVersion)>, ClientError> {
    let probe = ProtocolVersion::LATEST;
    let mut params = serde_json::json!({});
    add_meta(&mut params, &stateless_meta(probe, options, declared))
        .map_err(|source| ClientError::InvalidResult { method: Discover::NAME.to_owned(), source })?;
    let body = Body::serialized(&params)
        .map_err(|source| ClientError::InvalidResult { method: Discover::NAME.to_owned(), source })?;
    let request_options = RequestOptions { timeout: options.request_timeout, ..RequestOptions::default() };
    let outcome = peer.request(Discover::NAME, Some(body), request_options).await;
    let result = match outcome {
        Err(RequestError::Rpc(_)) => return Ok(None),
        other => decode_outcome::<T, Discover>(peer, other, None).await?,
    };
    let chosen = options
        .supported_versions
        .iter()
        .copied()
        .filter(|v| !v.has_initialize_handshake())
        .filter(|v| result.supported_versions.iter().any(|s| s == v.as_str()))
        .max();
    let Some(version) = chosen else {
        return Ok(None);
    };
    if let Some(stdio) = (peer.transport() as &dyn std::any::Any).downcast_ref::<StdioTransport>() {
        stdio.set_protocol_version(Some(version)).await;
    }
    let server_info = result.meta.as_ref().and_then(|m| m.server_info.clone()).unwrap_or_default();
    let init = InitializeResult {
        protocol_version: version.as_str().to_owned(),
        capabilities: result.capabilities,
        server_info,
        instructions: result.instructions,
        ..InitializeResult::default()
    };
    Ok(Some((init, version)))
}

async fn request<T, M>(
    peer: &Peer<T>,
    params: M::Params,
    options: RequestOptions,
    closed_by_us: Option<&AtomicBool>,
) -> Result<M::Output, ClientError>
where
    T: Transport,
    M: Method,
    M::Params: Send + Sync + 'static,
    M::Output: Clone + Send + Sync + 'static,
{
    let outcome = peer.request(M::NAME, Some(Body::typed(params)), options).await;
    decode_outcome::<T, M>(peer, outcome, closed_by_us).await
}

async fn decode_outcome<T, M>(
    peer: &Peer<T>,
    outcome: Result<Body, RequestError>,
    closed_by_us: Option<&AtomicBool>,
) -> Result<M::Output, ClientError>
where
    T: Transport,
    M: Method,
    M::Output: Clone + Send + Sync + 'static,
{
    decode_named::<T, M::Output>(peer, M::NAME, outcome, closed_by_us).await
}

async fn decode_named<T, O>(
    peer: &Peer<T>,
    method: &str,
    outcome: Result<Body, RequestError>,
    closed_by_us: Option<&AtomicBool>,
) -> Result<O, ClientError>
where
    T: Transport,
    O: serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
{
    match outcome {
        Ok(body) => {
            body.into_decoded::<O>().map_err(|source| ClientError::InvalidResult { method: method.to_owned(), source })
        }
        // Boxed: the wait for the child's exit status is rare, and would otherwise make every
        // call's future larger by a timer.
        Err(RequestError::Closed { reason }) if !by_us(closed_by_us) => {
            Err(Box::pin(closed_error(peer, method, reason)).await)
        }
        Err(RequestError::Transport(TransportError::Closed)) if !by_us(closed_by_us) => {
            Err(Box::pin(closed_error(peer, method, None)).await)
        }
        Err(e) => Err(error_for(method, e)),
    }
}

/// The server capability `method` needs that `caps` lacks (or the version that lacks the
/// method), named as in `initialize`; `None` when the call may be sent.
fn missing_capability(method: &str, caps: &ServerCapabilities, version: ProtocolVersion) -> Option<&'static str> {
    let tasks = caps.tasks.as_ref().filter(|_| version.has_tasks());
    let missing = match method {
        "tools/list" | "tools/call" => caps.tools.is_none().then_some("tools"),
        "resources/list" | "resources/templates/list" | "resources/read" => {
            caps.resources.is_none().then_some("resources")
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            (caps.resources.as_ref().and_then(|r| r.subscribe) != Some(true)).then_some("resources.subscribe")
        }
        "prompts/list" | "prompts/get" => caps.prompts.is_none().then_some("prompts"),
        "completion/complete" => caps.completions.is_none().then_some("completions"),
        "logging/setLevel" => caps.logging.is_none().then_some("logging"),
        "tasks/get" | "tasks/result" => tasks.is_none().then_some("tasks"),
        "tasks/list" => tasks.and_then(|t| t.list.as_ref()).is_none().then_some("tasks.list"),
        "tasks/cancel" => tasks.and_then(|t| t.cancel.as_ref()).is_none().then_some("tasks.cancel"),
        _ => None,
    };
    missing
}

fn by_us(flag: Option<&AtomicBool>) -> bool {
    flag.is_some_and(|f| f.load(Ordering::Acquire))
}

fn error_for(method: &str, e: RequestError) -> ClientError {
    let method = method.to_owned();
    match e {
        RequestError::Rpc(error) => ClientError::Rpc { method, error },
        RequestError::Timeout { after, .. } => ClientError::Timeout { method, after },
        RequestError::Closed { reason } => ClientError::Closed { method, reason },
        RequestError::Session(e) => ClientError::Session(e),
        RequestError::Transport(e) => ClientError::Transport(e),
    }
}

/// How long to wait for a child whose output ended to be reaped, so the error can name its exit.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// The error for a connection that ended: [`ClientError::ServerExited`] when the transport is a
/// child process that exited (waiting briefly for it to be reaped), else [`ClientError::Closed`].
async fn closed_error<T: Transport>(peer: &Peer<T>, method: &str, reason: Option<String>) -> ClientError {
    let method = method.to_owned();
    if let Some(stdio) = (peer.transport() as &dyn std::any::Any).downcast_ref::<StdioTransport>() {
        if stdio.child_pid().is_some() {
            let deadline = tokio::time::Instant::now() + EXIT_GRACE;
            loop {
                if let Some(status) = stdio.exit_status() {
                    return ClientError::ServerExited { method, status };
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
    ClientError::Closed { method, reason }
}

#[cfg(test)]
mod tests;
