//! The MCP client: one connection to one server over any [`Transport`].
//!
//! [`Client::connect`] runs the handshake (lifecycle, "Initialization"): `initialize` offering
//! [`ClientOptions::protocol_version`], a check that the server's answer is a version we speak
//! (else [`ClientError::UnsupportedVersion`] and the connection is closed), then
//! `notifications/initialized`. The server's [`InitializeResult`] stays available
//! ([`Client::server_info`], [`Client::capabilities`], [`Client::instructions`],
//! [`Client::protocol_version`]). [`ClientOptions::with_offered_version_str`] offers a version
//! string this crate does not know (only a supported counter-offer is accepted).
//!
//! The era is chosen per connection ([`ClientOptions::era`], an [`EraPolicy`]): `auto` (the
//! default) probes with `server/discover` first, as the Python SDK's `mode='auto'` does — a
//! server that answers with a 2026-07-28 discovery result gets a stateless session (no
//! `initialize`; every request carries the version, client info and capabilities in `_meta`,
//! and over HTTP the `Mcp-*` headers), an `UnsupportedProtocolVersion` error naming a version
//! we speak gets one more probe at it, and any other error, an HTTP 4xx, an unusable result or
//! no answer within [`ClientOptions::discover_timeout`] gets `initialize` on the same
//! connection, with the session's handshake gate back ([`Session::set_mode`](crate::proto::session::Session::set_mode));
//! `legacy` never probes; a stateless version (`2026-07-28`) is adopted without a probe.
//!
//! In a stateless session, `tools/call`, `prompts/get` and `resources/read` run the
//! multi-round-trip loop (MRTR): an `input_required` result's input requests go to the same
//! sampling, elicitation and roots handlers that answer a handshake-era server's requests, and
//! the request is retried, with a new id, carrying their answers and the server's
//! `requestState` unchanged, at most [`ClientOptions::max_input_rounds`] times. An input
//! request no handler can answer fails the call ([`ClientError::InputRequest`]). Over HTTP,
//! tools whose `x-mcp-header` declarations are invalid are left out of `tools/list` with a
//! warning on stderr.
//!
//! List pages (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`)
//! that carry a positive `ttlMs` are kept, by method and cursor, and reused until it has passed
//! or the matching `notifications/*/list_changed` arrives
//! ([caching](https://modelcontextprotocol.io/specification/2026-07-28/server/utilities/caching));
//! [`Client::clear_list_cache`] drops them all. Handshake-era results have no `ttlMs`, so
//! nothing is kept for them.
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
//! [`ClientOptions::with_elicitation`] and [`ClientOptions::with_roots_handler`] (or the roots of
//! [`ClientOptions::with_roots`]), and only those capabilities are declared in `initialize`; any other request (or one for a capability we
//! did not declare) is answered -32601, and an elicitation in a mode we did not declare -32602.
//! Notifications go to the [`ClientHandler`] the host plugs in ([`ClientOptions::handler`];
//! [`ServerNotification::parse`] gives them types).
//!
//! Callers: a request sent inside [`with_caller`] is tagged with that [`CallerId`] while it is
//! in flight (the cost without a scope is one task-local lookup). A server's request is
//! attributed, in this order, to (a) the caller of our request the transport says it relates to
//! ([`Transport::related_request`]: Streamable HTTP, a request on the SSE stream of one of our
//! POSTs), whether that request had a caller or not; (b) in the MRTR loop, the caller of the call
//! being retried; (c) the one caller shared by every tagged request of ours in flight (stdio, or
//! the GET stream, with one caller active); (d) nobody. The sampling, elicitation and roots
//! handlers are built and run inside `with_caller(that caller)`, so [`current_caller`] in them
//! names it (and is `None` when nobody could be named).
//!
//! 2026-07-28 servers send list-changed and resource-updated notifications only on a
//! `subscriptions/listen` stream: [`Client::listen`] opens one ([`Listening`]; see `listen`).
//!
//! Authorization over HTTP is [`oauth`] (feature `oauth`): an OAuth 2.1 client that the HTTP
//! transport asks for its `Authorization` headers; nothing in this module knows tokens exist.
//!
//! Not here: reconnecting, and the connection set over many servers.

pub mod catalog;
pub mod config;
pub mod connection_set;
mod era;
mod error;
mod handlers;
mod listen;
#[cfg(feature = "oauth")]
pub mod login;
#[cfg(feature = "oauth")]
pub mod oauth;
mod typed;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::{Map, Value};

pub use crate::peer::{current_caller, with_caller, CallerId, Progress};
pub use era::{EraPolicy, InvalidEra};
pub use error::ClientError;
pub use handlers::{
    ElicitationHandler, ElicitationModes, HandlerFuture, RootsHandler, SamplingHandler, ServerNotification,
};
pub use listen::Listening;

use crate::peer::{sync_with_caller_opt, with_caller_opt, Handler, Peer, RequestError};
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject, Id, Notification, Request};
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
use crate::proto::mcp_types::{
    InputRequest, InputRequiredResult, InputResponse, InputResponses, PerRequestMeta, UnsupportedProtocolVersionData,
};
use crate::proto::session::{self, Mode, RequestOptions, Role};
use crate::proto::version::ProtocolVersion;
use crate::transport::boxed::downcast;
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
    /// [`ClientOptions::roots`] (or [`ClientOptions::roots_handler`]) is set.
    pub capabilities: ClientCapabilities,
    /// The version offered in `initialize`: default 2025-11-25.
    pub protocol_version: ProtocolVersion,
    /// The versions this client speaks: the ones accepted when the server counter-offers in
    /// `initialize`, and the stateless ones a discovery result may pick: default all of them.
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
    /// Who answers `roots/list`, asked each time (declares `roots` with `listChanged`): default
    /// nobody. Takes precedence over [`ClientOptions::roots`].
    pub roots_handler: Option<Arc<dyn RootsHandler>>,
    /// Refuse, before sending, a call the server did not advertise
    /// ([`ClientError::CapabilityNotSupported`]): default `true`.
    pub strict_capabilities: bool,
    /// The version string offered in `initialize` in place of [`ClientOptions::protocol_version`],
    /// e.g. one newer than this crate knows: default none. The server's answer must still be in
    /// [`ClientOptions::supported_versions`].
    pub offered_version: Option<String>,
    /// The era policy (see the module docs): default [`EraPolicy::Auto`].
    pub era: EraPolicy,
    /// How long the `server/discover` probe waits before falling back to `initialize`:
    /// default 10 s (the Python SDK's), never longer than [`ClientOptions::request_timeout`].
    pub discover_timeout: Duration,
    /// How many times a stateless request answered `input_required` is retried before
    /// [`ClientError::InputRounds`]: default 10 (the TypeScript and Python SDKs').
    pub max_input_rounds: usize,
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
            supported_versions: ProtocolVersion::ALL.to_vec(),
            request_timeout: Some(Duration::from_secs(60)),
            max_pages: 1000,
            session_limits: session::Limits::default(),
            handler: None,
            sampling: None,
            elicitation: None,
            roots: None,
            roots_handler: None,
            strict_capabilities: true,
            offered_version: None,
            era: EraPolicy::Auto,
            discover_timeout: Duration::from_secs(10),
            max_input_rounds: 10,
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
            .field("roots_handler", &self.roots_handler.as_ref().map(|_| ".."))
            .field("strict_capabilities", &self.strict_capabilities)
            .field("offered_version", &self.offered_version)
            .field("era", &self.era)
            .field("discover_timeout", &self.discover_timeout)
            .field("max_input_rounds", &self.max_input_rounds)
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

    /// These options answering `roots/list` with `handler`, called for each request (declares
    /// `roots` with `listChanged: true`; it takes precedence over [`ClientOptions::with_roots`]).
    /// Tell the server the roots changed with [`Client::notify_roots_changed`].
    pub fn with_roots_handler(mut self, handler: impl RootsHandler) -> Self {
        self.roots_handler = Some(Arc::new(handler));
        self
    }

    /// These options offering `version` in `initialize` as written, known to this crate or not
    /// (the version negotiation of a client newer than the server). Only a counter-offer in
    /// [`ClientOptions::supported_versions`] is accepted.
    pub fn with_offered_version_str(mut self, version: impl Into<String>) -> Self {
        self.offered_version = Some(version.into());
        self
    }

    /// These options with another era policy (see [`ClientOptions::era`]); a policy that can
    /// end stateless adds 2026-07-28 to the supported versions.
    pub fn with_era(mut self, era: EraPolicy) -> Self {
        self.era = era;
        let stateless = match era {
            EraPolicy::Legacy => None,
            EraPolicy::Adopt(v) => Some(v),
            EraPolicy::Auto => Some(ProtocolVersion::LATEST),
        };
        if let Some(v) = stateless.filter(|v| !self.supported_versions.contains(v)) {
            self.supported_versions.push(v);
        }
        self
    }

    /// [`EraPolicy::Auto`] when `discover`, else [`EraPolicy::Legacy`].
    pub fn with_discover_first(self, discover: bool) -> Self {
        self.with_era(if discover { EraPolicy::Auto } else { EraPolicy::Legacy })
    }

    /// These options with another `server/discover` probe timeout.
    pub fn with_discover_timeout(mut self, timeout: Duration) -> Self {
        self.discover_timeout = timeout;
        self
    }

    /// These options with another cap on `input_required` retries.
    pub fn with_max_input_rounds(mut self, rounds: usize) -> Self {
        self.max_input_rounds = rounds;
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
        caps.roots = (self.roots.is_some() || self.roots_handler.is_some())
            .then(|| RootsCapability { list_changed: Some(true), ..RootsCapability::default() });
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
    roots_handler: Option<Arc<dyn RootsHandler>>,
    /// Handler tasks still running, by request id, so that `notifications/cancelled` stops them.
    running: Arc<Mutex<HashMap<Id, tokio::task::AbortHandle>>>,
    /// Evicted by the list-changed notifications.
    cache: Arc<Mutex<ListCache>>,
    /// `subscriptions/listen` requests waiting for their acknowledgement.
    acks: Arc<listen::AwaitedAcks>,
}

/// List pages kept while their `ttlMs` lasts, by method and cursor; and the output schema of
/// each tool listed (for typed calls).
#[derive(Default)]
struct ListCache {
    pages: HashMap<(&'static str, Option<String>), CachedPage>,
    outputs: HashMap<String, Option<Arc<typed::KnownOutput>>>,
}

struct CachedPage {
    page: Arc<dyn std::any::Any + Send + Sync>,
    fresh_until: tokio::time::Instant,
}

impl ListCache {
    /// Drops the pages a list-changed notification makes stale.
    fn evict_for(&mut self, notification: &str) {
        let methods: &[&str] = match notification {
            "notifications/tools/list_changed" => &["tools/list"],
            "notifications/prompts/list_changed" => &["prompts/list"],
            "notifications/resources/list_changed" => &["resources/list", "resources/templates/list"],
            _ => return,
        };
        self.pages.retain(|(method, _), _| !methods.contains(method));
        if methods.contains(&"tools/list") {
            self.outputs.clear();
        }
    }
}

/// The `ttlMs` of a list result (2026-07-28), where a list has one.
trait CacheHint {
    fn ttl_ms(&self) -> Option<u64>;
}

impl CacheHint for ListToolsResult {
    fn ttl_ms(&self) -> Option<u64> {
        self.ttl_ms
    }
}

macro_rules! ttl_in_extra {
    ($($ty:ty),*) => {$(
        impl CacheHint for $ty {
            fn ttl_ms(&self) -> Option<u64> {
                self.extra.get("ttlMs").and_then(Value::as_u64)
            }
        }
    )*};
}
ttl_in_extra!(ListPromptsResult, ListResourcesResult, ListResourceTemplatesResult);

impl CacheHint for ListTasksResult {
    fn ttl_ms(&self) -> Option<u64> {
        None
    }
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
        let task = crate::transport::task::spawn(async move {
            let outcome = work.await;
            running.lock().expect("never poisoned").remove(&id);
            let _ = peer.respond(&id, outcome).await;
        });
        // The task removes itself when done, which waits for this lock: insert first.
        table.insert(key, task.abort_handle());
    }
}

/// On whose behalf the server sent its request `incoming`: the caller of our request the
/// transport says it relates to (whether that had a caller or not), else the one caller of all
/// our requests in flight that have one, else nobody.
fn caller_for<T: Transport>(peer: &Peer<T>, incoming: &Id) -> Option<CallerId> {
    match peer.transport().related_request(incoming) {
        Some(ours) => peer.caller_of(&ours),
        None => peer.sole_caller(),
    }
}

fn roots_result(roots: Vec<Root>) -> ListRootsResult {
    ListRootsResult { roots, meta: None, extra: Default::default() }
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
            ListRoots::NAME => match (&self.roots_handler, &self.roots) {
                (Some(handler), _) => {
                    let caller = caller_for(peer, &request.id);
                    let future = sync_with_caller_opt(caller, || handler.list_roots());
                    let work = async move { future.await.map(|roots| Body::typed(roots_result(roots))) };
                    self.spawn_answer(peer, request.id, with_caller_opt(caller, work));
                    return;
                }
                (None, Some(roots)) => Ok(Body::typed(roots_result(roots.read().expect("never poisoned").clone()))),
                (None, None) => Err(method_not_found()),
            },
            CreateMessage::NAME => match &self.sampling {
                Some(handler) => match decode(params).and_then(|b| b.into_decoded()) {
                    Ok(p) => {
                        let caller = caller_for(peer, &request.id);
                        let future = sync_with_caller_opt(caller, || handler.create_message(p));
                        let work = async move { future.await.map(Body::typed) };
                        self.spawn_answer(peer, request.id, with_caller_opt(caller, work));
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
                            let caller = caller_for(peer, &request.id);
                            let future = sync_with_caller_opt(caller, || handler.elicit(p));
                            let work = async move { future.await.map(Body::typed) };
                            self.spawn_answer(peer, request.id, with_caller_opt(caller, work));
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
        crate::transport::task::spawn(async move {
            let _ = queued.send().await;
        });
    }

    fn on_notification(&self, _peer: &Peer<T>, notification: Notification) {
        if notification.method.ends_with("/list_changed") {
            self.cache.lock().expect("never poisoned").evict_for(&notification.method);
        }
        self.acks.on_notification(&notification);
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
    session_meta: Option<RwLock<PerRequestMeta>>,
    /// Who answers the input requests of an `input_required` result (the handlers that answer
    /// a handshake-era server's requests).
    inputs: InputAnswerers,
    max_input_rounds: usize,
    /// List pages reusable while their `ttlMs` lasts.
    cache: Arc<Mutex<ListCache>>,
    /// `subscriptions/listen` requests waiting for their acknowledgement.
    acks: Arc<listen::AwaitedAcks>,
}

/// The host's handlers, as the MRTR loop calls them.
#[derive(Clone)]
struct InputAnswerers {
    sampling: Option<Arc<dyn SamplingHandler>>,
    elicitation: Option<(Arc<dyn ElicitationHandler>, ElicitationModes)>,
    roots: Option<Arc<RwLock<Vec<Root>>>>,
    roots_handler: Option<Arc<dyn RootsHandler>>,
}

impl InputAnswerers {
    /// The answer to one input request, as a future, or why there is none (the same errors a
    /// handshake-era server's request would get: -32601 without a handler, -32602 for an
    /// elicitation mode not declared).
    fn answer(&self, request: InputRequest) -> Result<HandlerFuture<InputResponse>, ErrorObject> {
        match request {
            InputRequest::CreateMessage(params) => {
                let handler = self.sampling.as_ref().ok_or_else(|| not_declared("sampling"))?;
                let future = handler.create_message(params);
                Ok(Box::pin(async move { future.await.map(|r| InputResponse::CreateMessage(Box::new(r))) }))
            }
            InputRequest::Elicit(params) => {
                let (handler, modes) = self.elicitation.as_ref().ok_or_else(|| not_declared("elicitation"))?;
                let allowed = match &params {
                    ElicitRequestParams::Form(_) => modes.form,
                    ElicitRequestParams::Url(_) => modes.url,
                    ElicitRequestParams::Other(_) => false,
                };
                if !allowed {
                    return Err(ErrorObject::new(
                        ErrorCode::INVALID_PARAMS,
                        "elicitation mode not supported: the client did not declare it",
                    ));
                }
                let future = handler.elicit(params);
                Ok(Box::pin(async move { future.await.map(InputResponse::Elicit) }))
            }
            InputRequest::ListRoots(_) => {
                if let Some(handler) = &self.roots_handler {
                    let future = handler.list_roots();
                    return Ok(Box::pin(
                        async move { future.await.map(|r| InputResponse::ListRoots(roots_result(r))) },
                    ));
                }
                let roots = self.roots.as_ref().ok_or_else(|| not_declared("roots"))?;
                let roots = roots.read().expect("never poisoned").clone();
                Ok(Box::pin(async move { Ok(InputResponse::ListRoots(roots_result(roots))) }))
            }
            InputRequest::Other(_) => Err(method_not_found()),
        }
    }
}

fn not_declared(capability: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("this client has no {capability} handler (the capability was not declared)"),
    )
}

/// Input handlers running for one MRTR round, by input key; those still running when it is
/// dropped are aborted.
struct AbortOnDrop(Vec<(String, tokio::task::JoinHandle<Result<InputResponse, ErrorObject>>)>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for (_, task) in &self.0 {
            task.abort();
        }
    }
}

/// The methods whose stateless result may be `input_required` (MRTR, "Supported Requests").
fn may_need_input(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// The first wait before retrying an `input_required` result that carries only
/// `requestState`; it doubles up to [`STATE_ONLY_BACKOFF_CAP`] (the Python SDK's pacing).
const STATE_ONLY_BACKOFF: Duration = Duration::from_millis(50);
const STATE_ONLY_BACKOFF_CAP: Duration = Duration::from_millis(250);

/// The `input_required` result in `body`, if that is what it is. Cheap for the common final
/// result: a typed tool result is matched on its variant, raw JSON is scanned for the tag
/// before anything is decoded.
fn input_required(body: &Body) -> Option<Result<InputRequiredResult, serde_json::Error>> {
    let candidate = match body.typed_as::<CallToolOutput>() {
        Some(CallToolOutput::Other(map)) => map.get("resultType").and_then(Value::as_str) == Some("input_required"),
        Some(CallToolOutput::Result(_) | CallToolOutput::Task(_)) => false,
        None => body.as_raw().is_none_or(|raw| raw.get().contains("input_required")),
    };
    if !candidate {
        return None;
    }
    #[derive(serde::Deserialize, Clone)]
    struct Kind {
        #[serde(rename = "resultType")]
        result_type: Option<String>,
    }
    match body.decode::<Kind>() {
        Ok(Kind { result_type: Some(t) }) if t == "input_required" => Some(body.decode::<InputRequiredResult>()),
        _ => None,
    }
}

/// The params of a request an MRTR retry may send again: as JSON with the session's `_meta`,
/// or as given, made JSON only when a retry comes (most calls never need one).
enum Retained {
    Json(Value),
    Params(LaterParams),
}

/// Typed params kept for a retry, as their JSON on demand.
type LaterParams = Box<dyn FnOnce() -> Result<Value, serde_json::Error> + Send + Sync>;

/// The params of an MRTR retry: the original ones with this round's answers and the server's
/// state, and without those of an earlier round.
fn retry_params(
    original: &Value,
    responses: Option<&InputResponses>,
    state: Option<&str>,
) -> Result<Value, serde_json::Error> {
    let mut params = original.clone();
    if let Some(object) = params.as_object_mut() {
        object.remove("inputResponses");
        object.remove("requestState");
        if let Some(responses) = responses {
            object.insert("inputResponses".to_owned(), serde_json::to_value(responses)?);
        }
        if let Some(state) = state {
            object.insert("requestState".to_owned(), Value::from(state));
        }
    }
    Ok(params)
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
        // A roots handler takes precedence: the static list is then not kept at all.
        let roots = options.roots.clone().filter(|_| options.roots_handler.is_none()).map(|r| Arc::new(RwLock::new(r)));
        let cache = Arc::new(Mutex::new(ListCache::default()));
        let acks = Arc::new(listen::AwaitedAcks::default());
        let handler = ClientPeerHandler {
            handler: options.handler.clone(),
            sampling: options.sampling.clone(),
            elicitation: options.elicitation.clone(),
            roots: roots.clone(),
            roots_handler: options.roots_handler.clone(),
            running: Arc::default(),
            cache: cache.clone(),
            acks: acks.clone(),
        };
        // A probe goes out statelessly; the session gets its handshake gate back if the server
        // does not take it.
        let mode = if options.era == EraPolicy::Legacy { Mode::Handshake } else { Mode::Stateless };
        let peer = Peer::start(transport, Role::Client, mode, options.session_limits, handler);
        // Dropping this future before the handshake settles (a cancelled start) closes the
        // connection too: the peer's tasks would otherwise keep it (and a child) alive.
        let guard = CloseOnDrop(Some(peer.clone()));
        let declared = options.declared_capabilities();
        let stateless =
            |init, version| (init, version, Some(PerRequestMeta::new(version, &options.client_info, &declared)));
        let mut strict_capabilities = options.strict_capabilities;
        let connected = match options.era {
            EraPolicy::Legacy => handshake(&peer, &options, &declared).await.map(|(i, v)| (i, v, None)),
            EraPolicy::Adopt(version) => {
                set_transport_version(&peer, Some(version)).await;
                // Nothing says what the server supports: calls are not checked against it.
                strict_capabilities = false;
                let init =
                    InitializeResult { protocol_version: version.as_str().to_owned(), ..InitializeResult::default() };
                Ok(stateless(init, version))
            }
            EraPolicy::Auto => match discover(&peer, &options, &declared).await {
                Ok(Some((init, version))) => Ok(stateless(init, version)),
                Ok(None) => match fall_back(&peer, &options, &declared).await {
                    // `initialize` refused as an unsupported version is a modern server after
                    // all (a probe that timed out on a slow start settled it): probe once more.
                    Err(e) if e.rpc_error().is_some_and(|e| e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION) => {
                        match peer.set_mode(Mode::Stateless).map(|()| discover(&peer, &options, &declared)) {
                            Ok(probe) => match probe.await {
                                Ok(Some((init, version))) => Ok(stateless(init, version)),
                                _ => Err(e),
                            },
                            Err(_) => Err(e),
                        }
                    }
                    other => other.map(|(i, v)| (i, v, None)),
                },
                Err(e) => Err(e),
            },
        };
        let inputs = InputAnswerers {
            sampling: options.sampling.clone(),
            elicitation: options.elicitation.clone(),
            roots: roots.clone(),
            roots_handler: options.roots_handler.clone(),
        };
        guard.disarm();
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
                    strict_capabilities,
                    next_progress_token: AtomicU64::new(1),
                    session_meta: session_meta.map(RwLock::new),
                    inputs,
                    max_input_rounds: options.max_input_rounds,
                    cache,
                    acks,
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
        options: RequestOptions,
    ) -> impl Future<Output = Result<M::Output, ClientError>> + '_
    where
        M: Method,
        M::Params: Send + Sync + 'static,
        M::Output: Clone + Send + Sync + 'static,
    {
        let answer = self.request_undecoded::<M>(params, options);
        async move { decode_result::<M::Output>(M::NAME, answer.await?) }
    }

    /// [`Client::request`] up to the result's decoding: the result body as the transport
    /// delivered it (after any MRTR rounds), or the request's error.
    fn request_undecoded<M>(
        &self,
        params: M::Params,
        mut options: RequestOptions,
    ) -> impl Future<Output = Result<Body, ClientError>> + '_
    where
        M: Method,
        M::Params: Send + Sync + 'static,
    {
        // The params become a body before the future is built: the future then does not carry
        // them (tools/call params are ~1 KiB, copied at every await level otherwise).
        let prepared = self.request_body::<M>(params);
        if options.timeout.is_none() {
            options.timeout = self.inner.request_timeout;
        }
        async move {
            let (body, retry) = prepared?;
            // Boxed, as the loop below: a handshake-era call's future grows by a pointer only.
            let retry = retry.map(|original| Box::new((original, options.clone())));
            let outcome = self.inner.peer.request(M::NAME, Some(body), options).await;
            match retry {
                None => settle(&self.inner.peer, M::NAME, outcome, Some(&self.inner.closed_by_us)).await,
                Some(retry) => {
                    let (original, options) = *retry;
                    Box::pin(self.resolve_input_required(M::NAME, outcome, original, options)).await
                }
            }
        }
    }

    /// The body of request `M`: `params` as they are, or serialized with the session's `_meta`
    /// added when the session needs it — then also the params as JSON when an MRTR retry may
    /// need them; refused when the server lacks the capability.
    fn request_body<M>(&self, params: M::Params) -> Result<(Body, Option<Retained>), ClientError>
    where
        M: Method,
        M::Params: Send + Sync + 'static,
    {
        self.check_capability(M::NAME)?;
        if self.inner.session_meta.is_none() {
            return Ok((Body::typed(params), None));
        }
        let invalid = |source| ClientError::InvalidResult { method: M::NAME.to_owned(), source };
        let stamped = match &self.inner.session_meta {
            Some(meta) => meta.read().expect("never poisoned").stamp(&params).map_err(invalid)?,
            None => None,
        };
        if let Some(raw) = stamped {
            let retained = may_need_input(M::NAME).then(|| {
                let later: LaterParams = Box::new(move || serde_json::to_value(&params));
                Retained::Params(later)
            });
            return Ok((Body::Raw(raw), retained));
        }
        let mut value = serde_json::to_value(&params).map_err(invalid)?;
        self.write_session_meta(&mut value).map_err(invalid)?;
        let body = Body::serialized(&value).map_err(invalid)?;
        Ok((body, may_need_input(M::NAME).then_some(Retained::Json(value))))
    }

    /// Adds a stateless session's per-request `_meta` fields to `params` (nothing in the
    /// handshake era).
    fn write_session_meta(&self, params: &mut Value) -> Result<(), serde_json::Error> {
        match &self.inner.session_meta {
            Some(meta) => meta.read().expect("never poisoned").write_into(params),
            None => Ok(()),
        }
    }

    /// The MRTR loop: while the answer to `method` is `input_required`, answers its input
    /// requests with the host's handlers and retries `original` with the answers and the
    /// server's state (a new request, so a new id); returns the first other answer.
    async fn resolve_input_required(
        &self,
        method: &str,
        mut outcome: Result<Body, RequestError>,
        original: Retained,
        options: RequestOptions,
    ) -> Result<Body, ClientError> {
        let invalid = |source| ClientError::InvalidResult { method: method.to_owned(), source };
        let mut retained = Some(original);
        let mut original = Value::Null;
        let mut state_only_wait = STATE_ONLY_BACKOFF;
        for round in 0.. {
            let body = match outcome {
                Ok(body) => body,
                Err(e) => {
                    return decode_named::<T, Value>(&self.inner.peer, method, Err(e), Some(&self.inner.closed_by_us))
                        .await
                        .map(|_| unreachable!("an error outcome never decodes"))
                }
            };
            let Some(needed) = input_required(&body) else { return Ok(body) };
            let needed = needed.map_err(invalid)?;
            if round >= self.inner.max_input_rounds {
                return Err(ClientError::InputRounds { method: method.to_owned(), rounds: round });
            }
            let responses = match needed.input_requests {
                Some(requests) if !requests.is_empty() => {
                    state_only_wait = STATE_ONLY_BACKOFF;
                    Some(self.answer_inputs(method, requests).await?)
                }
                _ => {
                    tokio::time::sleep(state_only_wait).await;
                    state_only_wait = (state_only_wait * 2).min(STATE_ONLY_BACKOFF_CAP);
                    None
                }
            };
            match retained.take() {
                Some(Retained::Json(value)) => original = value,
                Some(Retained::Params(later)) => {
                    original = later().map_err(invalid)?;
                    self.write_session_meta(&mut original).map_err(invalid)?;
                }
                None => {}
            }
            let params =
                retry_params(&original, responses.as_ref(), needed.request_state.as_deref()).map_err(invalid)?;
            let body = Body::serialized(&params).map_err(invalid)?;
            outcome = self.inner.peer.request(method, Some(body), options.clone()).await;
        }
        unreachable!("the retry loop only ends by returning")
    }

    /// Answers every input request of one round, concurrently. The first refusal, or the call
    /// being dropped, stops the handlers still running.
    async fn answer_inputs(
        &self,
        method: &str,
        requests: crate::proto::mcp_types::InputRequests,
    ) -> Result<InputResponses, ClientError> {
        let refused = |key, error| ClientError::InputRequest { method: method.to_owned(), key, error: Box::new(error) };
        let mut answering = AbortOnDrop(Vec::with_capacity(requests.len()));
        // The handlers answer on behalf of this call: its caller is theirs (the spawned tasks
        // would not inherit the scope).
        let caller = current_caller();
        for (key, request) in requests {
            match sync_with_caller_opt(caller, || self.inner.inputs.answer(request)) {
                Ok(future) => answering.0.push((key, tokio::spawn(with_caller_opt(caller, future)))),
                Err(error) => return Err(refused(key, error)),
            }
        }
        let mut responses = InputResponses::new();
        for (key, task) in &mut answering.0 {
            let answered = task.await.unwrap_or_else(|e| {
                Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("the input handler failed: {e}")))
            });
            match answered {
                Ok(response) => {
                    responses.insert(std::mem::take(key), response);
                }
                Err(error) => return Err(refused(std::mem::take(key), error)),
            }
        }
        Ok(responses)
    }

    /// Keeps the tools a stateless HTTP connection may call: those whose `x-mcp-header`
    /// declarations are valid (Streamable HTTP, "Custom Headers from Tool Parameters"); each
    /// one left out is named through `tracing` (a warning).
    #[cfg_attr(not(feature = "http"), allow(clippy::ptr_arg))]
    fn admit_tools(&self, tools: &mut Vec<Tool>) {
        #[cfg(feature = "http")]
        if self.inner.session_meta.is_some() {
            let transport = self.inner.peer.transport();
            if let Some(http) = downcast::<crate::transport::sse_http::HttpClientTransport, _>(transport) {
                for (name, why) in http.admit_tools(tools) {
                    tracing::warn!(tool = ?name, reason = ?why, "mcpwire: a tool left out of tools/list");
                }
            }
        }
        // Remembered for typed calls (`typed`).
        self.inner.cache.lock().expect("never poisoned").outputs.extend(typed::KnownOutput::of(tools));
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
            (Some(_), params) => {
                let mut value = params.unwrap_or_else(|| Value::Object(Map::new()));
                self.write_session_meta(&mut value).map_err(invalid)?;
                Some(value)
            }
            (None, params) => params,
        };
        let body = params.as_ref().map(Body::serialized).transpose().map_err(invalid)?;
        let outcome = self.inner.peer.request(method, body, options.clone()).await;
        let outcome = match params.filter(|_| self.inner.session_meta.is_some() && may_need_input(method)) {
            Some(original) => {
                self.resolve_input_required(method, outcome, Retained::Json(original), options).await.map(Ok)
            }
            None => Ok(outcome),
        };
        decode_named::<T, Value>(&self.inner.peer, method, outcome?, Some(&self.inner.closed_by_us)).await
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
        options: RequestOptions,
        on_progress: impl Fn(Progress) + Send + Sync + 'static,
    ) -> Result<M::Output, ClientError>
    where
        M: Method,
        M::Output: Clone + Send + Sync + 'static,
    {
        let body = self.request_with_progress_undecoded::<M>(params, options, on_progress).await?;
        decode_result::<M::Output>(M::NAME, body)
    }

    /// [`Client::request_with_progress`] up to the result's decoding, as
    /// [`Client::request_undecoded`].
    async fn request_with_progress_undecoded<M: Method>(
        &self,
        params: M::Params,
        mut options: RequestOptions,
        on_progress: impl Fn(Progress) + Send + Sync + 'static,
    ) -> Result<Body, ClientError> {
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
        self.write_session_meta(&mut value).map_err(invalid)?;
        options.progress_token = Some(token);
        let body = Body::serialized(&value).map_err(invalid)?;
        let peer = &self.inner.peer;
        let outcome =
            peer.request_with_progress(M::NAME, Some(body), options.clone(), Some(Box::new(on_progress))).await;
        if self.inner.session_meta.is_none() || !may_need_input(M::NAME) {
            return settle(peer, M::NAME, outcome, Some(&self.inner.closed_by_us)).await;
        }
        // The retries carry the same progress token; their progress is not reported.
        self.resolve_input_required(M::NAME, outcome, Retained::Json(value), options).await
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

    /// One page of a list method: the cached one while it is fresh, else fetched (and kept
    /// when it carries a positive `ttlMs`).
    async fn list_page<M>(&self, params: M::Params, cursor: Option<String>) -> Result<M::Output, ClientError>
    where
        M: Method,
        M::Params: Send + Sync + 'static,
        M::Output: CacheHint + Clone + Send + Sync + 'static,
    {
        let key = (M::NAME, cursor);
        let now = tokio::time::Instant::now();
        {
            let mut cache = self.inner.cache.lock().expect("never poisoned");
            match cache.pages.get(&key) {
                Some(c) if c.fresh_until > now => {
                    if let Some(page) = c.page.downcast_ref::<M::Output>() {
                        return Ok(page.clone());
                    }
                }
                Some(_) => {
                    cache.pages.remove(&key);
                }
                None => {}
            }
        }
        let page = self.request::<M>(params, RequestOptions::default()).await?;
        if let Some(ttl) = page.ttl_ms().filter(|&ttl| ttl > 0) {
            let fresh_until = tokio::time::Instant::now() + Duration::from_millis(ttl);
            let cached = CachedPage { page: Arc::new(page.clone()), fresh_until };
            self.inner.cache.lock().expect("never poisoned").pages.insert(key, cached);
        }
        Ok(page)
    }

    /// Forgets every cached list page: the next list call asks the server.
    pub fn clear_list_cache(&self) {
        self.inner.cache.lock().expect("never poisoned").pages.clear();
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
        M::Output: CacheHint + Clone + Send + Sync + 'static,
    {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for pages in 1.. {
            let params = page(cursor.clone());
            let (mut more, next) = split(self.list_page::<M>(params, cursor.take()).await?);
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
        let mut page = self.request::<ListTools>(params, RequestOptions::default()).await?;
        self.admit_tools(&mut page.tools);
        Ok(page)
    }

    /// Every tool, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// [`ClientError::Pagination`] when the server repeats a cursor or sends more than
    /// [`ClientOptions::max_pages`] pages; otherwise as any request.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let mut tools = self
            .list_all::<ListTools, _>(
                |cursor| ListToolsRequestParams { cursor, ..ListToolsRequestParams::default() },
                |page| (page.tools, page.next_cursor),
            )
            .await?;
        self.admit_tools(&mut tools);
        Ok(tools)
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
        let call = self.call_tool_body(params, options);
        async move { decode_tool_result(call.await?) }
    }

    /// `tools/call` as [`Client::call_tool_with`] makes it, the result left as the transport
    /// delivered it: raw JSON from a stdio or stream transport, a typed [`CallToolOutput`] where
    /// the transport decoded it. For a host that passes the result on (a gateway) and so need
    /// not decode it; [`decode_tool_result`] gives what `call_tool_with` would have.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled` is sent).
    ///
    /// # Errors
    /// As any request. The result is not checked to be a final tool result.
    pub fn call_tool_body(
        &self,
        params: CallToolRequestParams,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Body, ClientError>> + '_ {
        self.request_undecoded::<CallTool>(params, options)
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

    /// Only `notifications/message` at `level` or more severe, from now on: `logging/setLevel`
    /// in the handshake era; in a stateless session, where that method is gone, every later
    /// request carries `io.modelcontextprotocol/logLevel` in its `_meta` (logging,
    /// "Per-request log level") and nothing is sent now.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `logging`; otherwise as
    /// any request.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        if let Some(meta) = &self.inner.session_meta {
            self.check_capability(SetLevel::NAME)?;
            meta.write().expect("never poisoned").set_log_level(Some(level.as_str()));
            return Ok(());
        }
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
        decode_tool_result(self.call_tool_body_with_progress(params, options, on_progress).await?)
    }

    /// [`Client::call_tool_with_progress`], the result left as [`Client::call_tool_body`] leaves
    /// it.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled` is sent).
    ///
    /// # Errors
    /// As [`Client::call_tool_body`].
    pub async fn call_tool_body_with_progress(
        &self,
        params: CallToolRequestParams,
        options: RequestOptions,
        on_progress: impl Fn(Progress) + Send + Sync + 'static,
    ) -> Result<Body, ClientError> {
        self.request_with_progress_undecoded::<CallTool>(params, options, on_progress).await
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

    /// The roots currently answered to `roots/list` (`None` when roots were not declared, or a
    /// roots handler answers).
    pub fn roots(&self) -> Option<Vec<Root>> {
        self.inner.roots.as_ref().map(|r| r.read().expect("never poisoned").clone())
    }

    /// Replaces the roots and tells the server (`notifications/roots/list_changed`).
    ///
    /// # Errors
    /// [`ClientError::NotDeclared`] when no roots were given in [`ClientOptions::with_roots`]
    /// (the capability was not declared, or a [`ClientOptions::with_roots_handler`] answers:
    /// then use [`Client::notify_roots_changed`]); otherwise as [`Client::notify_roots_changed`].
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
        if self.inner.declared.roots.is_none() {
            return Err(ClientError::NotDeclared { capability: "roots" });
        }
        self.inner.peer.notify(RootsListChanged::NAME, None).await.map_err(|e| error_for(RootsListChanged::NAME, e))
    }
}

/// The final tool result a `tools/call` result body holds (one from [`Client::call_tool_body`]),
/// decoded as [`Client::call_tool_with`] decodes it.
///
/// # Errors
/// [`ClientError::InvalidResult`] when the body is not a tool result, or is a task or a
/// partial result.
pub fn decode_tool_result(body: Body) -> Result<CallToolResult, ClientError> {
    tool_result(decode_result::<CallToolOutput>(CallTool::NAME, body)?)
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

/// `initialize` and `notifications/initialized`, through the session's handshake gate.
async fn handshake<T: Transport>(
    peer: &Peer<T>,
    options: &ClientOptions,
    declared: &ClientCapabilities,
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
    if let Some(stdio) = downcast::<StdioTransport, _>(peer.transport()) {
        // Batches are legal only in 2025-03-26; the decoder must know.
        stdio.set_protocol_version(Some(version)).await;
    }
    peer.initialized().await.map_err(|e| error_for(Initialize::NAME, e))?;
    Ok((init, version))
}

/// The fallback of `auto`: the session's handshake gate back, the transport's stateless
/// version dropped, then the handshake.
async fn fall_back<T: Transport>(
    peer: &Peer<T>,
    options: &ClientOptions,
    declared: &ClientCapabilities,
) -> Result<(InitializeResult, ProtocolVersion), ClientError> {
    peer.set_mode(Mode::Handshake).map_err(ClientError::Session)?;
    set_transport_version(peer, None).await;
    handshake(peer, options, declared).await
}

/// Tells the transport which version the next messages speak, where it cares: stdio's decoder
/// (batches), and the HTTP client, whose POSTs are stateless under 2026-07-28 (`None`: back to
/// learning the version from `initialize`).
async fn set_transport_version<T: Transport>(peer: &Peer<T>, version: Option<ProtocolVersion>) {
    let transport = peer.transport();
    if let Some(stdio) = downcast::<StdioTransport, _>(transport) {
        stdio.set_protocol_version(version).await;
    }
    #[cfg(feature = "http")]
    if let Some(http) = downcast::<crate::transport::sse_http::HttpClientTransport, _>(transport) {
        match version {
            Some(v) => http.set_protocol_version(v),
            None => http.clear_protocol_version(),
        }
    }
}

/// The `server/discover` probe: `Some` with a stateless session's server description when the
/// server answers with a discovery result naming a stateless version of ours; `None` when
/// `initialize` should follow (any error but a usable `UnsupportedProtocolVersion`, an HTTP
/// 4xx, no answer within the probe timeout, a result that does not decode or names no version
/// we take). An `UnsupportedProtocolVersion` naming a stateless version of ours gets one more
/// probe at it; one naming only stateless versions we lack ends the connection.
async fn discover<T: Transport>(
    peer: &Peer<T>,
    options: &ClientOptions,
    declared: &ClientCapabilities,
) -> Result<Option<(InitializeResult, ProtocolVersion)>, ClientError> {
    let ours = |v: &&ProtocolVersion| !v.has_initialize_handshake();
    let Some(mut version) = options.supported_versions.iter().filter(ours).copied().max() else {
        return Ok(None);
    };
    let timeout = match options.request_timeout {
        Some(t) => t.min(options.discover_timeout),
        None => options.discover_timeout,
    };
    let invalid = |source| ClientError::InvalidResult { method: Discover::NAME.to_owned(), source };
    for attempt in 0..2 {
        set_transport_version(peer, Some(version)).await;
        let mut params = serde_json::json!({});
        PerRequestMeta::new(version, &options.client_info, declared).write_into(&mut params).map_err(invalid)?;
        let body = Body::serialized(&params).map_err(invalid)?;
        let request_options = RequestOptions { timeout: Some(timeout), ..RequestOptions::default() };
        let result = match peer.request(Discover::NAME, Some(body), request_options).await {
            Ok(body) => match body.into_decoded::<crate::proto::mcp_types::DiscoverResult>() {
                Ok(result) => result,
                Err(_) => return Ok(None),
            },
            Err(RequestError::Rpc(e)) if e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
                let supported =
                    e.data.as_ref().and_then(|d| serde_json::from_str::<UnsupportedProtocolVersionData>(d.get()).ok());
                let Some(supported) = supported else { return Ok(None) };
                let known: Vec<ProtocolVersion> = supported.supported.iter().filter_map(|v| v.parse().ok()).collect();
                let mutual =
                    options.supported_versions.iter().filter(ours).copied().filter(|v| known.contains(v)).max();
                match mutual {
                    Some(v) if attempt == 0 => {
                        version = v;
                        continue;
                    }
                    _ if known.iter().any(|v| v.has_initialize_handshake()) || supported.supported.is_empty() => {
                        return Ok(None)
                    }
                    _ => {
                        return Err(ClientError::UnsupportedVersion {
                            offered: version,
                            answered: supported.supported.join(", "),
                        })
                    }
                }
            }
            Err(RequestError::Rpc(_) | RequestError::Timeout { .. }) => return Ok(None),
            Err(RequestError::Transport(TransportError::Http { status, .. })) if (400..500).contains(&status) => {
                return Ok(None)
            }
            Err(e) => return Err(decode_named::<T, Value>(peer, Discover::NAME, Err(e), None).await.unwrap_err()),
        };
        let chosen = options
            .supported_versions
            .iter()
            .filter(ours)
            .copied()
            .filter(|v| result.supported_versions.iter().any(|s| s == v.as_str()))
            .max();
        let Some(chosen) = chosen else {
            return Ok(None);
        };
        if chosen != version {
            set_transport_version(peer, Some(chosen)).await;
        }
        let server_info = result.meta.as_ref().and_then(|m| m.server_info.clone()).or_else(|| {
            // Some servers put it beside the result's members, as `initialize` did.
            result.extra.get("serverInfo").and_then(|v| serde_json::from_value(v.clone()).ok())
        });
        let init = InitializeResult {
            protocol_version: chosen.as_str().to_owned(),
            capabilities: result.capabilities,
            server_info: server_info.unwrap_or_default(),
            instructions: result.instructions,
            ..InitializeResult::default()
        };
        return Ok(Some((init, chosen)));
    }
    Ok(None)
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
    decode_result(method, settle(peer, method, outcome, closed_by_us).await?)
}

/// The result of a `method` request, decoded.
fn decode_result<O>(method: &str, body: Body) -> Result<O, ClientError>
where
    O: serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
{
    body.into_decoded::<O>().map_err(|source| ClientError::InvalidResult { method: method.to_owned(), source })
}

/// A request's outcome with its error as a [`ClientError`]: a connection that ended under it
/// names the child's exit when there is one.
async fn settle<T: Transport>(
    peer: &Peer<T>,
    method: &str,
    outcome: Result<Body, RequestError>,
    closed_by_us: Option<&AtomicBool>,
) -> Result<Body, ClientError> {
    match outcome {
        Ok(body) => Ok(body),
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

/// Closes a connection whose handshake was abandoned (its future dropped); disarmed once the
/// handshake settles.
struct CloseOnDrop<T: Transport>(Option<Peer<T>>);

impl<T: Transport> CloseOnDrop<T> {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl<T: Transport> Drop for CloseOnDrop<T> {
    fn drop(&mut self) {
        let Some(peer) = self.0.take() else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.close().await;
            });
        }
    }
}

/// How long to wait for a child whose output ended to be reaped, so the error can name its exit.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// The error for a connection that ended: [`ClientError::ServerExited`] when the transport is a
/// child process that exited (waiting briefly for it to be reaped), else [`ClientError::Closed`].
async fn closed_error<T: Transport>(peer: &Peer<T>, method: &str, reason: Option<String>) -> ClientError {
    let method = method.to_owned();
    if let Some(stdio) = downcast::<StdioTransport, _>(peer.transport()) {
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
