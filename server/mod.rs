//! The server layer: declare what a server offers with [`Server::builder`], then serve it over
//! any [`Transport`] with [`Server::serve`] (or over our own stdin/stdout with
//! [`Server::serve_stdio`]).
//!
//! ```no_run
//! use mcpwire::server::{text_result, Server, ToolError};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder()
//!     .name("echo")
//!     .version("0.1.0")
//!     .tool(
//!         "echo",
//!         "Echoes text",
//!         json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
//!         |args, _ctx| async move {
//!             let text = args.get("text").and_then(|t| t.as_str()).ok_or_else(|| ToolError::invalid_arguments("text must be a string"))?;
//!             Ok(text_result(text))
//!         },
//!     )
//!     .build()?;
//! server.serve_stdio().await?;
//! # Ok(())
//! # }
//! ```
//!
//! What it does (handshake era, 2024-11-05 … 2025-11-25):
//! - `initialize`: version negotiation by counter-offer ([`ProtocolVersion::server_counter_offer`]
//!   over [`SUPPORTED_VERSIONS`]), our capabilities, `serverInfo` and `instructions`. A second
//!   `initialize`, and gated requests before it, are refused by the session core.
//! - `ping` → `{}`; `tools/list` (one page, or pages of [`ServerBuilder::page_size`] with an
//!   opaque cursor); `tools/call`: each call runs in its own tokio task under a concurrency
//!   limit ([`DEFAULT_MAX_CONCURRENT_TOOLS`]); an unknown tool is a tool error (`isError: true`,
//!   as the TypeScript SDK answers), params that are not a `CallToolRequestParams` are -32602,
//!   a panicking handler is -32603 and the server goes on; `notifications/cancelled` aborts the
//!   call's task and no response is sent.
//! - Typed tools (feature `schema`): `derived_tool` derives the input and output schemas from
//!   Rust types (schemars) and decodes the arguments; a `Json` result fills
//!   `structuredContent`; `Form` derives an elicitation form from a flat type (made by
//!   `ServerBuilder::with_form`, a type that is not flat fails `build`) and
//!   `Context::elicit_form` decodes the answer; `derived_prompt` derives a prompt's arguments.
//! - Each tool's schemas are compiled once, when it is registered (one that does not compile is
//!   [`ServerError::InvalidSchema`]). Tool arguments are checked against the input schema
//!   ([`schema`]: full JSON Schema 2020-12 with feature `validation`, a subset without) before
//!   the handler runs (a mismatch is a tool error naming the path of each violation);
//!   `structuredContent` is checked against the output schema before it leaves (a mismatch
//!   becomes a tool error; a typed result is checked in debug builds only) and mirrored into a
//!   text block when the handler gave no content.
//! - Resources ([`resources`]: static, templates, `resources/read` with -32002, per-session
//!   subscriptions and [`Server::resource_updated`]), prompts ([`prompts`]), completion
//!   ([`completion`]), `logging/setLevel` per session with [`Server::log`] (everything goes
//!   before a level is set), every list paginated with checked opaque cursors.
//! - The [`Server`] handle changes tools, resources, templates and prompts while serving
//!   (`add_*`/`remove_*`), which sends `notifications/*/list_changed` to every initialized
//!   session. Capabilities: `tools` and `logging` always, `resources`/`prompts` when some are
//!   registered (or `enable_*` was called), `completions` with either; `listChanged: true`.
//! - `server/discover` (2026-07-28) is answered in both eras; any other unknown method →
//!   -32601 "Method not found"; so is a method of a capability not advertised.
//! - Results go out as typed bodies ([`Body::typed`]): an in-process client gets the Rust value,
//!   a byte transport serializes it once.
//! - Shutdown when the input ends: the reader stops, calls in flight finish and their answers
//!   are written, then the transport is closed (its writer flushed). Nothing but frames is
//!   written to stdout; this layer logs nothing (a panicking handler's message goes to stderr
//!   through the panic hook).
//!
//! - Handlers get a [`Context`]: progress (only with a token), log messages, cancellation,
//!   and requests to the client (elicitation, sampling, roots, ping) checked against the
//!   client's declared capabilities. Tools declaring `execution.taskSupport` run as tasks
//!   (2025-11-25) when the client asks: `tasks/get`, `tasks/result`, `tasks/list`,
//!   `tasks/cancel`, `notifications/tasks/status`.
//!
//! The 2026-07-28 era, per request, on the same connection or endpoint (nothing in a handler
//! changes): a request whose `_meta` names its revision ([`crate::proto::envelope`]) is served
//! from that envelope, without `initialize` — the [`Context`] reports its client capabilities,
//! client info and `logLevel` (no log messages without one); a request to the client it did not
//! declare a capability for answers -32021; its result gets `resultType`, the server's identity
//! in `_meta` and, on cacheable results, `ttlMs`/`cacheScope` ([`ServerBuilder::cache_hint`]);
//! `initialize`, `ping`, `logging/setLevel`, `resources/(un)subscribe` and `tasks/*` are
//! -32601; `subscriptions/listen` opens a notification stream (`subscriptions`). A handler's
//! elicitation, sampling and roots requests become an `InputRequiredResult` resumed by a
//! re-run when the client retries ([`request_state`]). Over Streamable HTTP the transport runs
//! the envelope and header checks and serves each such POST without a session.
//!
//! A client that declares the tasks extension (`io.modelcontextprotocol/tasks`) in a 2026
//! request gets task tools run as tasks of the server ([`TASKS_EXTENSION`], `task_extension`):
//! the handler runs synchronously until it first waits (a fast one answers directly, an ask
//! before that point is an MRTR round), then the call becomes a task
//! ([`Context::run_as_task`] marks such a point).
//!
//! Spec (2026-07-28): `basic/index`, `basic/versioning`, `basic/patterns/{mrtr,subscriptions}`,
//! `server/utilities/caching`.
//! Spec (2025-11-25): `basic/lifecycle`, `server/tools`, `server/resources`, `server/prompts`,
//! `server/utilities/{completion,logging,pagination}`, `basic/utilities/cancellation`,
//! `basic/utilities/ping`.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::peer::Peer;
use crate::proto::mcp_types::{CacheScope, CallToolResult, Implementation, Tool};
use crate::proto::session::{self, Mode, Role};
use crate::proto::version::ProtocolVersion;
#[cfg(feature = "http")]
use crate::transport::sse_http::{HttpServer, HttpServerConfig, ServerTransport};
use crate::transport::stdio::StdioTransport;
use crate::transport::{Limits, Transport, TransportError};

mod client_requests;
pub mod completion;
mod context;
mod dispatch;
#[cfg(feature = "schema")]
mod form;
pub mod forward;
mod method_table;
pub(crate) mod own_keys;
mod pagination;
pub mod prompts;
mod registry;
pub mod request_state;
pub mod resources;
pub mod schema;
mod task_extension;
mod tasks;
mod tool;
#[cfg(feature = "schema")]
mod typed;
#[cfg(feature = "schema")]
mod typed_prompt;

#[cfg(test)]
mod tests;

#[cfg(doc)]
use crate::proto::jsonrpc::Body;

pub use client_requests::{url_elicitation_required, ClientRequestError};
pub use completion::{prefix_matches, CompletionRequest};
#[cfg(feature = "schema")]
pub use form::{Elicited, Form, NotAForm};
pub use prompts::{prompt, prompt_argument, prompt_message, prompt_result, PromptRequest};
pub use registry::{DROP_LOG_EVERY, NOTIFY_QUEUE};
pub use resources::{blob_contents, resource, resource_not_found, resource_template, text_contents, ResourceRequest};
pub use task_extension::TASKS_EXTENSION;
pub use tasks::{DEFAULT_TTL_MS, MAX_TTL_MS, POLL_INTERVAL_MS};
pub use tool::{arguments, error_result, text_result, Context, ToolError, ToolFuture};
#[cfg(feature = "schema")]
pub use typed::{Json, TypedOutput};

/// Tool calls that may run at once on one connection; more wait for a slot (still cancellable
/// while they wait).
pub const DEFAULT_MAX_CONCURRENT_TOOLS: usize = 64;

/// The revisions this server negotiates through `initialize`, oldest first.
pub const SUPPORTED_VERSIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
];

/// The methods whose 2026-07-28 results carry `ttlMs` and `cacheScope` (cacheable results).
pub const CACHEABLE_METHODS: [&str; 6] =
    ["server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"];

/// How long a client may reuse the result of a cacheable method, and who may share it
/// (2026-07-28 `ttlMs`, `cacheScope`). The default, `ttlMs: 0` and `private`, promises nothing:
/// the result is stale at once and is not shared across authorization contexts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheHint {
    /// `ttlMs`: milliseconds the result stays fresh.
    pub ttl_ms: u64,
    /// `cacheScope`.
    pub scope: CacheScope,
}

impl Default for CacheHint {
    fn default() -> Self {
        CacheHint { ttl_ms: 0, scope: CacheScope::Private }
    }
}

/// The hints declared per cacheable method; the others get the default.
#[derive(Debug, Clone, Default)]
pub(crate) struct CacheHints(Vec<(&'static str, CacheHint)>);

impl CacheHints {
    /// The hint for `method`'s results; `None` when its results are not cacheable.
    pub(crate) fn get(&self, method: &str) -> Option<CacheHint> {
        let cacheable = CACHEABLE_METHODS.iter().find(|m| **m == method)?;
        Some(self.0.iter().find(|(m, _)| m == cacheable).map(|(_, h)| h.clone()).unwrap_or_default())
    }
}

/// Why a server could not be built, or why serving ended badly.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerError {
    /// Two tools share a name.
    DuplicateTool {
        /// The name.
        name: String,
    },
    /// Two resources share a URI, two templates a URI template, or two prompts a name.
    Duplicate {
        /// `resource`, `resource template` or `prompt`.
        kind: &'static str,
        /// The URI, template or name.
        name: String,
    },
    /// [`ServerBuilder::cache_hint`] named a method whose results are not cacheable.
    NotCacheable {
        /// The method.
        method: String,
    },
    /// A tool's input schema is not a JSON object.
    InvalidInputSchema {
        /// The tool.
        name: String,
    },
    /// A tool's input or output schema does not compile (not a valid JSON Schema of its
    /// dialect, an unknown dialect, a `$ref` that does not resolve within it), or a typed
    /// tool's derived schema cannot serve as one (feature `schema`: the type is not an object).
    InvalidSchema {
        /// The tool.
        name: String,
        /// Why.
        reason: String,
    },
    /// A typed prompt's type cannot describe its arguments (feature `schema`: a field that is
    /// no string, or a schema that does not compile).
    InvalidPromptArguments {
        /// The prompt.
        name: String,
        /// Why.
        reason: String,
    },
    /// A type given to [`ServerBuilder::with_form`] is outside the elicitation subset (feature
    /// `schema`: a nested object, a list of anything but a unit-only enum …), naming the field.
    #[cfg(feature = "schema")]
    InvalidForm(NotAForm),
    /// The input failed (not a clean end of stream).
    Input(String),
    /// Flushing and closing the transport failed.
    Transport(TransportError),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::DuplicateTool { name } => write!(f, "two tools are named {name:?}"),
            ServerError::Duplicate { kind, name } => write!(f, "{kind} {name:?} is registered twice"),
            ServerError::InvalidInputSchema { name } => {
                write!(f, "the input schema of tool {name:?} is not a JSON object")
            }
            ServerError::InvalidSchema { name, reason } => write!(f, "tool {name:?}: {reason}"),
            ServerError::InvalidPromptArguments { name, reason } => write!(f, "prompt {name:?}: {reason}"),
            #[cfg(feature = "schema")]
            ServerError::InvalidForm(e) => write!(f, "{e}"),
            ServerError::NotCacheable { method } => {
                write!(f, "{method} has no cacheable result (see CACHEABLE_METHODS)")
            }
            ServerError::Input(reason) => write!(f, "reading from the client failed: {reason}"),
            ServerError::Transport(e) => write!(f, "closing the transport failed: {e}"),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::Transport(e) => Some(e),
            _ => None,
        }
    }
}

/// What [`ServerBuilder::on_session_closed`] calls.
pub(crate) type SessionClosed = Arc<dyn Fn(u64) + Send + Sync>;

/// A registered tool: its definition, its compiled schemas and its handler.
pub(crate) struct Registered {
    pub(crate) tool: Tool,
    pub(crate) schemas: schema::ToolSchemas,
    pub(crate) handler: tool::ToolFn,
}

impl Registered {
    /// `tool` with its schemas compiled; `typed_output` when its results come from a type whose
    /// derived schema is the output schema.
    ///
    /// # Errors
    /// [`ServerError::InvalidInputSchema`] when the input schema is not an object,
    /// [`ServerError::InvalidSchema`] when a schema does not compile.
    pub(crate) fn new(tool: Tool, handler: tool::ToolFn, typed_output: bool) -> Result<Registered, ServerError> {
        if !tool.input_schema.is_object() {
            return Err(ServerError::InvalidInputSchema { name: tool.name });
        }
        let schemas = schema::ToolSchemas::compile(&tool, typed_output)?;
        Ok(Registered { tool, schemas, handler })
    }
}

/// What a server offers; shared by every connection it serves.
pub(crate) struct Inner {
    pub(crate) info: Implementation,
    /// `info` as every 2026-07-28 result's `_meta` carries it, written once.
    pub(crate) info_meta: Option<crate::proto::envelope::ServerInfoMeta>,
    pub(crate) instructions: Option<String>,
    pub(crate) registry: registry::Registry,
    pub(crate) features: registry::Features,
    pub(crate) max_concurrent_tools: usize,
    pub(crate) page_size: Option<usize>,
    pub(crate) limits: Limits,
    pub(crate) on_roots_changed: Option<context::RootsChanged>,
    pub(crate) on_session_closed: Option<SessionClosed>,
    pub(crate) client_request_timeout: Option<std::time::Duration>,
    pub(crate) cache_hints: CacheHints,
    pub(crate) state_key: request_state::StateKey,
    pub(crate) task_registry: Arc<task_extension::TaskRegistry>,
    /// Who answers [`forward::forwarded_methods`], when set.
    pub(crate) forwarder: Option<Arc<dyn forward::Forwarder>>,
}

/// An MCP server definition. Cheap to clone; one definition can serve many connections.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .field("tools", &self.tools().into_iter().map(|t| t.name).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Server`]. See [`Server::builder`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<Registered>,
    max_concurrent_tools: usize,
    page_size: Option<usize>,
    limits: Limits,
    pending: registry::Pending,
    on_roots_changed: Option<context::RootsChanged>,
    on_session_closed: Option<SessionClosed>,
    client_request_timeout: Option<std::time::Duration>,
    cache_hints: Vec<(String, CacheHint)>,
    request_state_secret: Option<Vec<u8>>,
    forwarder: Option<(Arc<dyn forward::Forwarder>, forward::Forwarding)>,
    /// Tools, prompts and forms whose schemas cannot be used, reported by `build`.
    schema_errors: Vec<ServerError>,
}

impl Server {
    /// A builder with no tools, named `mcpwire` with this crate's version, at most
    /// [`DEFAULT_MAX_CONCURRENT_TOOLS`] concurrent calls, no pagination and default [`Limits`].
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            info: Implementation {
                name: "mcpwire".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                ..Implementation::default()
            },
            instructions: None,
            tools: Vec::new(),
            max_concurrent_tools: DEFAULT_MAX_CONCURRENT_TOOLS,
            page_size: None,
            limits: Limits::default(),
            pending: registry::Pending::default(),
            on_roots_changed: None,
            on_session_closed: None,
            client_request_timeout: None,
            cache_hints: Vec::new(),
            request_state_secret: None,
            forwarder: None,
            schema_errors: Vec::new(),
        }
    }

    /// Who this server says it is (`serverInfo`).
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The tools, in the order they were added.
    pub fn tools(&self) -> Vec<Tool> {
        self.inner.registry.tools.read().expect("tools lock").values().map(|r| r.tool.clone()).collect()
    }

    /// Serves one connection until its input ends: then lets the calls in flight finish, writes
    /// their answers and closes the transport.
    ///
    /// # Errors
    /// [`ServerError::Input`] when the input failed rather than ended, [`ServerError::Transport`]
    /// when closing the transport failed. Either way the connection is over.
    ///
    /// # Cancel safety
    /// Dropping the future stops waiting; the connection's tasks run on until its input ends.
    pub fn serve<T: Transport>(&self, transport: T) -> impl Future<Output = Result<(), ServerError>> + Send + 'static {
        let inner = self.inner.clone();
        async move {
            let dispatcher =
                dispatch::Dispatcher::new(inner.clone(), transport.is_stateless(), transport.outlives_its_input());
            let tracker = dispatcher.tracker();
            let input_error = dispatcher.input_error();
            let limits = session::SessionLimits {
                max_incoming_in_flight: inner.limits.max_in_flight,
                max_outgoing_in_flight: inner.limits.max_in_flight,
                ..session::SessionLimits::default()
            };
            // A stateless transport's exchanges never saw an `initialize`: nothing to gate on.
            let mode = if transport.is_stateless() { Mode::Stateless } else { Mode::Handshake };
            let peer = Peer::start(transport, Role::Server, mode, limits, dispatcher);
            // Reader first: it stops at the end of the input.
            peer.closed().await;
            // Then the processors: every call in flight answers.
            tracker.wait_idle().await;
            // Then the writer: flushed and closed.
            let closed = peer.close().await;
            if let Some(reason) = input_error.lock().expect("input error lock").take() {
                return Err(ServerError::Input(reason));
            }
            closed.map_err(ServerError::Transport)
        }
    }

    /// Serves over this process's stdin and stdout ([`StdioTransport::own_stdio`]) until stdin
    /// ends, `tools/call` params decoded into their type as each line is read
    /// ([`StdioTransport::with_typed_params`]). Must run inside a tokio runtime.
    ///
    /// # Errors
    /// As [`Server::serve`].
    pub async fn serve_stdio(&self) -> Result<(), ServerError> {
        self.serve(StdioTransport::own_stdio(self.inner.limits).with_typed_params(true)).await
    }

    /// Binds `config.bind` and serves every HTTP session with this server
    /// ([`HttpServer::bind`]), each in a task of its own. A session that ends in an error is
    /// logged at debug level (`tracing`) and harms no other.
    ///
    /// # Errors
    /// When the configuration is invalid or the address cannot be bound.
    #[cfg(feature = "http")]
    pub async fn serve_http(&self, config: HttpServerConfig) -> std::io::Result<HttpServer> {
        HttpServer::bind(config, self.session_app()).await
    }

    /// As [`serve_http`](Self::serve_http), on a listener already bound ([`HttpServer::serve_on`]):
    /// for a configuration that names its own address, such as a protected resource's URI on a
    /// port the system chose.
    ///
    /// # Errors
    /// When the configuration is invalid or the listener's address cannot be read.
    #[cfg(feature = "http")]
    pub async fn serve_http_on(
        &self,
        listener: tokio::net::TcpListener,
        config: HttpServerConfig,
    ) -> std::io::Result<HttpServer> {
        HttpServer::serve_on(listener, config, self.session_app()).await
    }

    /// This server as a `tower` Service an application mounts in its own HTTP stack (axum,
    /// hyper-util, tower layers): every HTTP session served by this server, with the guards of
    /// `config` (see [`HttpService`](crate::transport::sse_http::HttpService)). Handlers
    /// read the request through [`Context::http_request`].
    ///
    /// # Errors
    /// When the configuration is invalid, or its session store cannot be reached.
    #[cfg(feature = "http")]
    pub async fn http_service(
        &self,
        config: HttpServerConfig,
    ) -> std::io::Result<crate::transport::sse_http::HttpService> {
        crate::transport::sse_http::HttpService::new(config, self.session_app()).await
    }

    #[cfg(feature = "http")]
    fn session_app(&self) -> impl Fn(ServerTransport) -> crate::transport::task::TaskFuture + Send + Sync + 'static {
        let server = self.clone();
        move |transport| {
            let serving = server.serve(transport);
            Box::pin(async move {
                if let Err(e) = serving.await {
                    tracing::debug!("an HTTP session ended: {e}");
                }
            })
        }
    }
}

impl ServerBuilder {
    /// `serverInfo.name`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.info.name = name.into();
        self
    }

    /// `serverInfo.version`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.info.version = version.into();
        self
    }

    /// `serverInfo.title` (a display name, 2025-06-18).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// `instructions` of the `initialize` result: hints for the model on how to use the server.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool: a name, a description, the JSON Schema of its arguments (an object schema)
    /// and an async handler receiving the arguments (`{}` when the client sent none).
    pub fn tool<F, Fut>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Map<String, Value>, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        self.tool_with(Tool::new(name, input_schema).description(description), handler)
    }

    /// Adds a tool whose arguments are decoded as `A` first; arguments that do not fit are a
    /// tool error (`isError: true`) and the handler is not called.
    pub fn typed_tool<A, F, Fut>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        self.tool(name, description, input_schema, move |args, ctx| {
            let handler = handler.clone();
            async move { handler(arguments::<A>(args)?, ctx).await }
        })
    }

    /// Adds a tool from a full definition (title, annotations, output schema, icons …).
    pub fn tool_with<F, Fut>(mut self, tool: Tool, handler: F) -> Self
    where
        F: Fn(Map<String, Value>, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        let handler: tool::ToolFn = Arc::new(move |args, ctx| Box::pin(handler(args, ctx)) as ToolFuture);
        self.register(Registered::new(tool, handler, false));
        self
    }

    /// Keeps a tool, or the reason it cannot be served for [`build`](Self::build) to report.
    pub(crate) fn register(&mut self, registered: Result<Registered, ServerError>) {
        match registered {
            Ok(registered) => self.tools.push(registered),
            Err(e) => self.schema_errors.push(e),
        }
    }

    /// How many tool calls may run at once per connection (at least 1); default
    /// [`DEFAULT_MAX_CONCURRENT_TOOLS`].
    pub fn max_concurrent_tools(mut self, calls: usize) -> Self {
        self.max_concurrent_tools = calls.max(1);
        self
    }

    /// Answers `tools/list`, `resources/list`, `resources/templates/list` and `prompts/list`
    /// in pages of `items` (at least 1) with an opaque `nextCursor`; default: one page with
    /// everything.
    pub fn page_size(mut self, items: usize) -> Self {
        self.page_size = Some(items.max(1));
        self
    }

    /// Called whenever a client sends `notifications/roots/list_changed` (after the
    /// connection's cached roots were forgotten, so the next [`Context::list_roots`] asks again).
    pub fn on_roots_list_changed(mut self, callback: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_roots_changed = Some(Arc::new(callback));
        self
    }

    /// Called with a session's number ([`Context::session_id`]) when that session ends (its
    /// input ended, or it was deleted or expired): what was kept for the session can go.
    pub fn on_session_closed(mut self, callback: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.on_session_closed = Some(Arc::new(callback));
        self
    }

    /// How long a request to the client ([`Context::elicit`], [`Context::create_message`] …)
    /// may wait for its answer; default: no limit (a person may be answering).
    pub fn client_request_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.client_request_timeout = Some(timeout);
        self
    }

    /// The caching hint of a cacheable method's 2026-07-28 results (one of
    /// [`CACHEABLE_METHODS`]); the others keep [`CacheHint::default`]. A handler that sets
    /// `ttlMs` or `cacheScope` itself keeps its own.
    pub fn cache_hint(mut self, method: impl Into<String>, hint: CacheHint) -> Self {
        self.cache_hints.push((method.into(), hint));
        self
    }

    /// Hands tools, resources, prompts and completion to `forwarder` (a gateway: see
    /// [`forward`]) instead of the registered handlers, advertising `tools`, `logging` and the
    /// capabilities of `forwarding`. Tools, resources and prompts registered on the builder are
    /// then never reached.
    pub fn forward(mut self, forwarder: impl forward::Forwarder, forwarding: forward::Forwarding) -> Self {
        self.forwarder = Some((Arc::new(forwarder), forwarding));
        self
    }

    /// The secret that seals the `requestState` of multi-round 2026-07-28 requests (see
    /// [`request_state`]); default: random, made when the server is built, so a retry must
    /// reach the same process. Give every process behind one endpoint the same secret (32
    /// random bytes or more) and a retry may reach any of them.
    pub fn request_state_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.request_state_secret = Some(secret.into());
        self
    }

    /// Transport and session limits (frame size, queue depth, requests in flight).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The server.
    ///
    /// # Errors
    /// [`ServerError::DuplicateTool`], [`ServerError::InvalidInputSchema`],
    /// [`ServerError::Duplicate`], [`ServerError::InvalidSchema`],
    /// [`ServerError::InvalidPromptArguments`], and with feature `schema`
    /// `ServerError::InvalidForm`.
    pub fn build(mut self) -> Result<Server, ServerError> {
        if !self.schema_errors.is_empty() {
            return Err(self.schema_errors.remove(0));
        }
        let registry = registry::Registry::default();
        let mut names = HashSet::new();
        {
            let mut tools = registry.tools.write().expect("tools lock");
            for r in self.tools {
                if !names.insert(r.tool.name.clone()) {
                    return Err(ServerError::DuplicateTool { name: r.tool.name });
                }
                tools.insert(r.tool.name.clone(), r);
            }
        }
        let features = self.pending.install(&registry)?;
        let features = match &self.forwarder {
            Some((_, forwarding)) => registry::Features {
                resources: forwarding.resources,
                prompts: forwarding.prompts,
                completions: forwarding.completions,
                forwarded: true,
            },
            None => features,
        };
        let mut cache_hints = Vec::new();
        for (method, hint) in self.cache_hints {
            let Some(cacheable) = CACHEABLE_METHODS.iter().find(|m| **m == method) else {
                return Err(ServerError::NotCacheable { method });
            };
            cache_hints.retain(|(m, _)| m != cacheable);
            cache_hints.push((*cacheable, hint));
        }
        Ok(Server {
            inner: Arc::new(Inner {
                info_meta: crate::proto::envelope::ServerInfoMeta::new(&self.info).ok(),
                info: self.info,
                instructions: self.instructions,
                registry,
                features,
                max_concurrent_tools: self.max_concurrent_tools,
                page_size: self.page_size,
                limits: self.limits,
                on_roots_changed: self.on_roots_changed,
                on_session_closed: self.on_session_closed,
                client_request_timeout: self.client_request_timeout,
                cache_hints: CacheHints(cache_hints),
                task_registry: Arc::default(),
                forwarder: self.forwarder.map(|(forwarder, _)| forwarder),
                state_key: match &self.request_state_secret {
                    Some(secret) => request_state::StateKey::from_secret(secret),
                    None => request_state::StateKey::generate(),
                },
            }),
        })
    }
}
