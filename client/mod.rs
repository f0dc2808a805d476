//! The MCP client: one connection to one server over any [`Transport`].
//!
//! [`Client::connect`] runs the handshake (lifecycle, "Initialization"): `initialize` offering
//! [`ClientOptions::protocol_version`], a check that the server's answer is a version we speak
//! (else [`ClientError::UnsupportedVersion`] and the connection is closed), then
//! `notifications/initialized`. The server's [`InitializeResult`] stays available
//! ([`Client::server_info`], [`Client::capabilities`], [`Client::instructions`],
//! [`Client::protocol_version`]).
//!
//! A [`Client`] is cheap to clone and every method takes `&self`: many calls may be in flight on
//! one connection from many tasks. Every request gets a timeout ([`ClientOptions::request_timeout`],
//! 60 s by default); dropping a call's future cancels it (`notifications/cancelled`). Params are
//! sent as typed [`Body`] values, so over the in-process transport nothing is serialized, and
//! results are decoded with [`Body::into_decoded`].
//!
//! What the server sends us: `ping` is answered `{}`; every other request is answered -32601
//! for now; notifications go to the [`ClientHandler`] the host plugs in
//! ([`ClientOptions::handler`]).
//!
//! Not here (yet): the methods beyond tools and ping (they slot in through [`Client::request`]),
//! sampling / elicitation / roots handlers, reconnecting, and the connection set over many
//! servers.

pub mod config;
pub mod connection_set;
mod error;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

pub use error::ClientError;

use crate::peer::{Handler, Peer, RequestError};
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject, Notification, Request};
use crate::proto::mcp_types::{
    CallTool, CallToolOutput, CallToolRequestParams, CallToolResult, ClientCapabilities, EmptyParams, EmptyResult,
    Implementation, Initialize, InitializeRequestParams, InitializeResult, ListTools, ListToolsRequestParams,
    ListToolsResult, Method, Ping, ServerCapabilities, Tool,
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
    /// The capabilities we declare: default none (this first cut answers no server requests
    /// but `ping`).
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
}

/// The connection's answers to what the server sends.
struct ClientPeerHandler {
    handler: Option<Arc<dyn ClientHandler>>,
}

impl<T: Transport> Handler<T> for ClientPeerHandler {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        let outcome = match request.method.as_str() {
            // ping: "The receiver MUST respond promptly with an empty response".
            Ping::NAME => Ok(Body::typed(EmptyResult::default())),
            _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, ErrorCode::METHOD_NOT_FOUND.default_message())),
        };
        let peer = peer.clone();
        tokio::spawn(async move {
            let _ = peer.respond(&request.id, outcome).await;
        });
    }

    fn on_notification(&self, _peer: &Peer<T>, notification: Notification) {
        if let Some(handler) = &self.handler {
            handler.on_notification(notification);
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
        let handler = ClientPeerHandler { handler: options.handler.clone() };
        let peer = Peer::start(transport, Role::Client, Mode::Handshake, options.session_limits, handler);
        match handshake(&peer, &options).await {
            Ok((init, version)) => Ok(Client {
                inner: Arc::new(Inner {
                    peer,
                    init,
                    version,
                    request_timeout: options.request_timeout,
                    max_pages: options.max_pages,
                    closed_by_us: AtomicBool::new(false),
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
    /// `options` means [`ClientOptions::request_timeout`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request (`notifications/cancelled` is sent).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn request<M>(&self, params: M::Params, mut options: RequestOptions) -> Result<M::Output, ClientError>
    where
        M: Method,
        M::Params: Send + Sync + 'static,
        M::Output: Clone + Send + Sync + 'static,
    {
        if options.timeout.is_none() {
            options.timeout = self.inner.request_timeout;
        }
        request::<T, M>(&self.inner.peer, params, options, Some(&self.inner.closed_by_us)).await
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
        let mut tools = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor = None;
        for pages in 1.. {
            let page = self.list_tools_page(cursor.take()).await?;
            tools.extend(page.tools);
            let Some(next) = page.next_cursor else { return Ok(tools) };
            if !seen.insert(next.clone()) || pages >= self.inner.max_pages {
                return Err(ClientError::Pagination { method: ListTools::NAME.to_owned(), cursor: next, pages });
            }
            cursor = Some(next);
        }
        unreachable!("the page loop only ends by returning")
    }

    /// Calls tool `name` with `arguments`, waiting at most [`ClientOptions::request_timeout`].
    /// A tool that fails is a result with `is_error: Some(true)`, not an `Err`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: Option<Map<String, Value>>,
    ) -> Result<CallToolResult, ClientError> {
        let params = CallToolRequestParams { name: name.into(), arguments, ..CallToolRequestParams::default() };
        self.call_tool_with(params, RequestOptions::default()).await
    }

    /// Like [`Client::call_tool`], waiting at most `timeout`.
    ///
    /// # Errors
    /// [`ClientError::Timeout`] when `timeout` passes first; otherwise as [`Client::call_tool`].
    pub async fn call_tool_with_timeout(
        &self,
        name: impl Into<String>,
        arguments: Option<Map<String, Value>>,
        timeout: Duration,
    ) -> Result<CallToolResult, ClientError> {
        let params = CallToolRequestParams { name: name.into(), arguments, ..CallToolRequestParams::default() };
        self.call_tool_with(params, RequestOptions { timeout: Some(timeout), ..RequestOptions::default() }).await
    }

    /// `tools/call` with full params and request options (a `timeout` of `None` means
    /// [`ClientOptions::request_timeout`]).
    ///
    /// # Errors
    /// [`ClientError::InvalidResult`] when the server answers with something other than a
    /// final tool result (this client never asks for a task); otherwise as any request.
    pub async fn call_tool_with(
        &self,
        params: CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        match self.request::<CallTool>(params, options).await? {
            CallToolOutput::Result(result) => Ok(result),
            CallToolOutput::Task(_) | CallToolOutput::Other(_) => Err(ClientError::InvalidResult {
                method: CallTool::NAME.to_owned(),
                source: serde::de::Error::custom("expected a tool result with content, got a task or partial result"),
            }),
        }
    }
}

async fn handshake<T: Transport>(
    peer: &Peer<T>,
    options: &ClientOptions,
) -> Result<(InitializeResult, ProtocolVersion), ClientError> {
    let params = InitializeRequestParams {
        protocol_version: options.protocol_version.as_str().to_owned(),
        capabilities: options.capabilities.clone(),
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
    peer.initialized().await.map_err(|e| error_for(Initialize::NAME, e))?;
    Ok((init, version))
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
    match peer.request(M::NAME, Some(Body::typed(params)), options).await {
        Ok(body) => body
            .into_decoded::<M::Output>()
            .map_err(|source| ClientError::InvalidResult { method: M::NAME.to_owned(), source }),
        Err(RequestError::Closed { reason }) if !by_us(closed_by_us) => Err(closed_error(peer, M::NAME, reason).await),
        Err(RequestError::Transport(TransportError::Closed)) if !by_us(closed_by_us) => {
            Err(closed_error(peer, M::NAME, None).await)
        }
        Err(e) => Err(error_for(M::NAME, e)),
    }
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
