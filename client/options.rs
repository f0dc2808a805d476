//! What a client asks of its connection: [`ClientOptions`] (identity, capabilities, versions,
//! timeouts, limits, the handlers that answer the server) and the [`ClientHandler`] that hears
//! its notifications. Plain data and builders: nothing here sends or receives.

use super::{EraPolicy, Progress};

use super::handlers::{ElicitationHandler, ElicitationModes, RootsHandler, SamplingHandler};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::proto::jsonrpc::Notification;
use crate::proto::mcp_types::{
    CapabilityObject, ClientCapabilities, ElicitationCapability, Implementation, Root, RootsCapability,
    SamplingCapability,
};
use crate::proto::session::{self};
use crate::proto::version::ProtocolVersion;

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

/// How a [`Client`](super::Client) introduces itself and how long it waits. Build it from
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
    /// The most pages a paginated list may have before [`ClientError::Pagination`](super::ClientError::Pagination): default 1000.
    pub max_pages: usize,
    /// Limits of the session core (requests in flight each way …): the defaults of
    /// [`session::SessionLimits`].
    pub session_limits: session::SessionLimits,
    /// Where server notifications go: default nowhere.
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// Who answers `sampling/createMessage` (declares `sampling`): default nobody.
    pub sampling: Option<Arc<dyn SamplingHandler>>,
    /// Who answers `elicitation/create`, in which modes (declares `elicitation`): default nobody.
    pub elicitation: Option<(Arc<dyn ElicitationHandler>, ElicitationModes)>,
    /// The roots answered to `roots/list` (declares `roots` with `listChanged`): default none,
    /// and the capability is not declared. Change them later with [`Client::set_roots`](super::Client::set_roots).
    pub roots: Option<Vec<Root>>,
    /// Who answers `roots/list`, asked each time (declares `roots` with `listChanged`): default
    /// nobody. Takes precedence over [`ClientOptions::roots`].
    pub roots_handler: Option<Arc<dyn RootsHandler>>,
    /// Refuse, before sending, a call the server did not advertise
    /// ([`ClientError::CapabilityNotSupported`](super::ClientError::CapabilityNotSupported)): default `true`.
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
    /// [`ClientError::InputRounds`](super::ClientError::InputRounds): default 10 (the TypeScript and Python SDKs').
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
            session_limits: session::SessionLimits::default(),
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
    pub fn with_session_limits(mut self, limits: session::SessionLimits) -> Self {
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
    /// Tell the server the roots changed with [`Client::notify_roots_changed`](super::Client::notify_roots_changed).
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

/// A progress callback of [`CallOptions`]: called from the connection's reader task (do not
/// block).
pub type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

/// How one `tools/call` is made, beside the tool's name and arguments
/// ([`Client::call_tool`](super::Client::call_tool), the connection set's calls). Build from
/// [`CallOptions::default`] and the `with_*` methods.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// The longest wait: default [`ClientOptions::request_timeout`] (through the connection
    /// set, never longer than the server's `tool_timeout`).
    pub timeout: Option<Duration>,
    /// Gets the server's progress for the call (the call then carries a progress token of the
    /// client's own): default none, and no token is sent.
    pub on_progress: Option<ProgressCallback>,
    /// Each progress notification for the call restarts `timeout` (the TypeScript SDK's
    /// `resetTimeoutOnProgress`): default off.
    pub reset_timeout_on_progress: bool,
    /// Members added to the request's `_meta` as given (e.g. what a gateway relays from its
    /// downstream request): default none. A `progressToken` among them is dropped (the client
    /// chooses its own), and so are keys reserved to MCP
    /// ([`is_reserved_meta_key`](crate::proto::envelope::is_reserved_meta_key)).
    pub meta: Map<String, Value>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.as_ref().map(|_| ".."))
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("meta", &self.meta)
            .finish()
    }
}

impl CallOptions {
    /// These options waiting at most `timeout` (a `Duration`, or `None` for the default).
    pub fn with_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.timeout = timeout.into();
        self
    }

    /// These options sending the call's progress to `on_progress`.
    pub fn with_progress(mut self, on_progress: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(on_progress));
        self
    }

    /// These options restarting the timeout at each progress notification.
    pub fn with_reset_timeout_on_progress(mut self, reset: bool) -> Self {
        self.reset_timeout_on_progress = reset;
        self
    }

    /// These options adding `_meta` member `key` (a `progressToken` is dropped).
    pub fn with_meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }
}
