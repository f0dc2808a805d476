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
//! `tracing` warning.
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
//! [`Client::call_tool`] with [`CallOptions::with_progress`] and [`Client::request_with_progress`] set
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

mod cache;
mod calls;
pub mod catalog;
pub mod config;
pub mod connection_set;
mod era;
mod error;
mod handlers;
mod handshake;
mod listen;
#[cfg(feature = "oauth")]
pub mod login;
mod mrtr;
#[cfg(feature = "oauth")]
pub mod oauth;
mod options;
mod server_requests;
mod typed;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::{Map, Value};

pub use crate::peer::{current_caller, with_caller, CallerId, Progress};
pub use calls::decode_tool_result;
pub use era::{EraPolicy, InvalidEra};
pub use error::ClientError;
pub use handlers::{
    ElicitationHandler, ElicitationModes, HandlerFuture, RootsHandler, SamplingHandler, ServerNotification,
};
pub use listen::Listening;
pub use options::{CallOptions, ClientHandler, ClientOptions, ProgressCallback};

use cache::ListCache;
use mrtr::{may_need_input, InputAnswerers, LaterParams, Retained};

use crate::peer::{Peer, RequestError};
use crate::proto::jsonrpc::{Body, Id};
use crate::proto::mcp_types::PerRequestMeta;
use crate::proto::mcp_types::{ClientCapabilities, Implementation, InitializeResult, Method, Root, ServerCapabilities};
use crate::proto::session::RequestOptions;
use crate::proto::version::ProtocolVersion;
use crate::transport::stdio::{ChildCommand, StdioTransport};
use crate::transport::{Transport, TransportError};

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
    // Inlined, as `request_body`: the params (most of a kilobyte for tools/call) then go from
    // the caller's frame into their `Arc` without a copy per function between.
    #[inline]
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
            let outcome = self.inner.peer.request_static(M::NAME, Some(body), options, None).await;
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
    #[inline]
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
        let outcome = peer.request_static(M::NAME, Some(body), options.clone(), Some(Box::new(on_progress))).await;
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
    let outcome = peer.request_static(M::NAME, Some(Body::typed(params)), options, None).await;
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

/// How long to wait for a child whose output ended to be reaped, so the error can name its exit
/// (the client's, for a call in flight; the connection set's, for the server's end).
pub(crate) const EXIT_GRACE: Duration = Duration::from_millis(500);

/// The error for a connection that ended: [`ClientError::ServerExited`] when the transport is a
/// child process that exited (waiting briefly for it to be reaped), else [`ClientError::Closed`].
async fn closed_error<T: Transport>(peer: &Peer<T>, method: &str, reason: Option<String>) -> ClientError {
    let method = method.to_owned();
    let transport = peer.transport();
    if transport.child_pid().is_some() {
        let deadline = tokio::time::Instant::now() + EXIT_GRACE;
        loop {
            if let Some(status) = transport.exit_status() {
                return ClientError::ServerExited { method, status };
            }
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    ClientError::Closed { method, reason }
}

#[cfg(test)]
mod tests;
