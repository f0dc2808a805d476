//! What a handler sees of its connection: [`Context`], given to every tool handler. It reports
//! progress (only when the request carried a progress token), logs (`notifications/message`,
//! filtered by the session's log level), tells whether the request was cancelled, and sends
//! requests to the client ([`Context::elicit`], [`Context::create_message`],
//! [`Context::list_roots`], [`Context::ping`], in [`super::client_requests`]).
//!
//! Messages a handler sends are related to its request: over Streamable HTTP they travel on
//! that request's SSE stream ([`crate::transport::Transport::send_related`]).
//!
//! Not here: running handlers (the dispatch) or tasks ([`super::tasks`]).
//!
//! Spec (2025-11-25): `basic/utilities/progress`, `server/utilities/logging`,
//! `basic/utilities/cancellation`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::Notify;

use crate::peer::{Peer, RequestError};
use crate::proto::envelope::Envelope;
use crate::proto::jsonrpc::{Body, Id};
use crate::proto::mcp_types::{
    ClientCapabilities, Implementation, LoggingLevel, LoggingMessageNotificationParams, ProgressNotificationParams,
    RequestMeta, Root,
};
use crate::proto::session::RequestOptions;
use crate::proto::version::ProtocolVersion;
use crate::transport::Transport;

use super::tasks::TaskLink;
use super::tool::number;

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Sends messages to the client on behalf of a handler, whatever the transport. Implemented on
/// what a [`Peer`]'s clones share, so that a handler's `Arc<dyn Outgoing>` is that `Arc` (one
/// reference more, no allocation); each call takes a reference of its own (`self: Arc<Self>`).
pub(crate) trait Outgoing: Send + Sync {
    /// A notification about the client's request `related`.
    fn notify(
        self: Arc<Self>,
        method: &'static str,
        params: Body,
        related: Option<Id>,
    ) -> BoxFuture<'static, Result<(), RequestError>>;

    /// A request to the client, made while handling its request `related`.
    fn request(
        self: Arc<Self>,
        method: &'static str,
        params: Body,
        related: Option<Id>,
        timeout: Option<Duration>,
    ) -> BoxFuture<'static, Result<Body, RequestError>>;
}

impl<T: Transport> Outgoing for crate::peer::Shared<T> {
    fn notify(
        self: Arc<Self>,
        method: &'static str,
        params: Body,
        related: Option<Id>,
    ) -> BoxFuture<'static, Result<(), RequestError>> {
        let peer = Peer::from_shared(self);
        Box::pin(async move {
            match related {
                Some(id) => peer.notify_related(method, Some(params), &id).await,
                None => peer.notify(method, Some(params)).await,
            }
        })
    }

    fn request(
        self: Arc<Self>,
        method: &'static str,
        params: Body,
        related: Option<Id>,
        timeout: Option<Duration>,
    ) -> BoxFuture<'static, Result<Body, RequestError>> {
        let peer = Peer::from_shared(self);
        Box::pin(async move {
            let options = RequestOptions { timeout, ..RequestOptions::default() };
            match related {
                Some(id) => peer.request_related(method, Some(params), options, &id).await,
                None => peer.request(method, Some(params), options).await,
            }
        })
    }
}

/// A callback the application registers for `notifications/roots/list_changed`.
pub(crate) type RootsChanged = Arc<dyn Fn() + Send + Sync>;

/// What one connection knows about its client, shared by the dispatch and every handler's
/// [`Context`].
#[derive(Default)]
pub(crate) struct Connection {
    client: Mutex<Option<(ClientCapabilities, Implementation)>>,
    /// The minimum level of `notifications/message`; `None`: everything is sent.
    log_level: Mutex<Option<LoggingLevel>>,
    /// The roots the client listed, until it says they changed.
    roots: Mutex<Option<Vec<Root>>>,
    /// Called when the client says its roots changed.
    pub(crate) on_roots_changed: Option<RootsChanged>,
    /// How long a request to the client may wait for its answer; `None`: forever (a human may
    /// be answering an elicitation).
    pub(crate) client_request_timeout: Option<Duration>,
    /// The session's number in the registry, when the connection is a session (not one
    /// stateless exchange).
    pub(crate) session: Option<u64>,
}

impl Connection {
    pub(crate) fn new(
        on_roots_changed: Option<RootsChanged>,
        client_request_timeout: Option<Duration>,
        session: Option<u64>,
    ) -> Connection {
        Connection { on_roots_changed, client_request_timeout, session, ..Connection::default() }
    }

    /// Records what the client said of itself in `initialize`.
    pub(crate) fn set_client(&self, capabilities: ClientCapabilities, info: Implementation) {
        *self.client.lock().expect("connection lock") = Some((capabilities, info));
    }

    pub(crate) fn client_capabilities(&self) -> Option<ClientCapabilities> {
        self.client.lock().expect("connection lock").as_ref().map(|(c, _)| c.clone())
    }

    pub(crate) fn client_info(&self) -> Option<Implementation> {
        self.client.lock().expect("connection lock").as_ref().map(|(_, i)| i.clone())
    }

    /// The hook for `logging/setLevel`: messages below `level` are no longer sent.
    #[allow(dead_code)] // called by the logging/setLevel handler
    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *self.log_level.lock().expect("connection lock") = Some(level);
    }

    /// The minimum level sent, `None` when the client never set one (everything is sent).
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        *self.log_level.lock().expect("connection lock")
    }

    pub(crate) fn cached_roots(&self) -> Option<Vec<Root>> {
        self.roots.lock().expect("connection lock").clone()
    }

    pub(crate) fn cache_roots(&self, roots: Vec<Root>) {
        *self.roots.lock().expect("connection lock") = Some(roots);
    }

    /// `notifications/roots/list_changed`: forget the cached list, tell the application.
    pub(crate) fn roots_changed(&self) {
        self.roots.lock().expect("connection lock").take();
        if let Some(callback) = &self.on_roots_changed {
            callback();
        }
    }
}

/// One round of a 2026-07-28 request's asks (see [`super::request_state`]): the answers the
/// client gave (this retry's `inputResponses` and those sealed in its `requestState`), and the
/// asks of this run that have none yet.
#[derive(Default)]
pub(crate) struct InputRound {
    pub(crate) answers: Map<String, Value>,
    needed: Mutex<Map<String, Value>>,
    asked: std::sync::atomic::AtomicUsize,
    waker: Mutex<Option<Waker>>,
}

impl InputRound {
    pub(crate) fn new(answers: Map<String, Value>) -> InputRound {
        InputRound { answers, ..InputRound::default() }
    }

    /// The key of an ask made without [`Context::with_input_key`]: the method and the ask's
    /// place in the run (`elicitation-create-0`), the same on every run of the handler.
    pub(super) fn next_key(&self, method: &str) -> String {
        let n = self.asked.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", method.replace('/', "-"))
    }

    /// Records an ask without an answer and wakes the run, which then stops.
    pub(super) fn ask(&self, key: String, request: Value) {
        self.needed.lock().expect("input lock").insert(key, request);
        if let Some(waker) = self.waker.lock().expect("input lock").take() {
            waker.wake();
        }
    }

    /// Whether this run made an ask that has no answer.
    pub(crate) fn has_needed(&self) -> bool {
        !self.needed.lock().expect("input lock").is_empty()
    }

    /// The asks of this run without an answer (`inputRequests`).
    pub(crate) fn take_needed(&self) -> Map<String, Value> {
        std::mem::take(&mut *self.needed.lock().expect("input lock"))
    }
}

/// Runs `work` until it completes (`Some`), or, in a 2026-07-28 request, until it waits on an
/// ask this round has no answer for (`None`; `work` is dropped with the future).
pub(crate) struct UntilInput<F> {
    pub(crate) work: F,
    pub(crate) round: Option<Arc<InputRound>>,
}

impl<F: Future + Unpin> Future for UntilInput<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        if let std::task::Poll::Ready(output) = Pin::new(&mut self.work).poll(cx) {
            return std::task::Poll::Ready(Some(output));
        }
        match &self.round {
            Some(round) if !round.needed.lock().expect("input lock").is_empty() => std::task::Poll::Ready(None),
            Some(round) => {
                *round.waker.lock().expect("input lock") = Some(cx.waker().clone());
                std::task::Poll::Pending
            }
            None => std::task::Poll::Pending,
        }
    }
}

/// Set once when the request is cancelled (by `notifications/cancelled` or `tasks/cancel`).
/// One small allocation per call (a `watch` channel, used before, cost a larger one and a
/// wake-all on every drop).
#[derive(Clone, Default)]
pub(crate) struct CancelFlag {
    shared: Arc<CancelShared>,
}

#[derive(Default)]
struct CancelShared {
    cancelled: AtomicBool,
    notify: Notify,
}

/// The dispatch's end of a [`CancelFlag`].
pub(crate) struct Canceller {
    shared: Arc<CancelShared>,
}

pub(crate) fn cancel_pair() -> (Canceller, CancelFlag) {
    let flag = CancelFlag::default();
    (Canceller { shared: flag.shared.clone() }, flag)
}

impl Canceller {
    pub(crate) fn cancel(&self) {
        self.shared.cancelled.store(true, Ordering::SeqCst);
        self.shared.notify.notify_waiters();
    }
}

/// What a tool handler knows about the call it serves, and its way back to the client.
#[derive(Clone)]
pub struct Context {
    pub(crate) id: Id,
    /// Boxed: a `RequestMeta` is most of a kilobyte, and the context is moved by value several
    /// times on its way into the handler's future; most requests have no `_meta`.
    pub(crate) meta: Option<Box<RequestMeta>>,
    pub(crate) protocol_version: Option<ProtocolVersion>,
    /// What a 2026-07-28 request said of its client in `_meta` (`None` in the handshake era).
    pub(crate) envelope: Option<Arc<Envelope>>,
    /// A 2026-07-28 request's answers to its asks, and the asks still open (MRTR).
    pub(crate) input: Option<Arc<InputRound>>,
    /// The key the next ask gets in `inputRequests` ([`Context::with_input_key`]).
    pub(crate) input_key: Option<String>,
    /// Set once a 2026-07-28 call of the tasks extension became a task: its asks then park the
    /// task until `tasks/update` answers.
    pub(crate) task_ask: Option<Arc<std::sync::OnceLock<super::task_extension::TaskAsk>>>,
    pub(crate) outgoing: Arc<dyn Outgoing>,
    pub(crate) connection: Arc<Connection>,
    pub(crate) cancel: CancelFlag,
    pub(crate) task: Option<TaskLink>,
    /// Who the request's verified access token speaks for (a protected HTTP server only).
    pub(crate) principal: Option<Arc<crate::auth::Principal>>,
    /// The HTTP request the request arrived in (the HTTP server's transports only).
    #[cfg(feature = "http")]
    pub(crate) http: Option<Arc<crate::transport::sse_http::HttpRequestParts>>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.id)
            .field("meta", &self.meta)
            .field("protocol_version", &self.protocol_version)
            .field("task", &self.task.as_ref().map(|t| t.task_id()))
            .finish_non_exhaustive()
    }
}

impl Context {
    /// Who the verified access token of this request speaks for: its subject, scopes, client
    /// and audience. `Some` only on an HTTP server protected by a
    /// [`ProtectedResource`](crate::auth::ProtectedResource) (Streamable HTTP with sessions or
    /// stateless, and the legacy HTTP+SSE transport); `None` over stdio and on an open server.
    /// The token itself is never kept.
    pub fn principal(&self) -> Option<&crate::auth::Principal> {
        self.principal.as_deref()
    }

    /// The HTTP request this request arrived in: its headers, the extensions the
    /// application's middleware inserted (`ctx.http_request()?.extensions().get::<User>()`),
    /// the peer's address where known and the verified principal. `Some` on the HTTP server's
    /// transports (Streamable HTTP in every era, the legacy HTTP+SSE transport, a mounted
    /// [`HttpService`](crate::transport::sse_http::HttpService)); `None` over stdio and in
    /// process. A 2026-07-28 request carries its own POST; a request of a handshake-era
    /// session the POST it arrived on (see [`crate::transport::sse_http::request_context`]).
    #[cfg(feature = "http")]
    pub fn http_request(&self) -> Option<&crate::transport::sse_http::HttpRequestParts> {
        self.http.as_deref()
    }

    /// The id of the `tools/call` request.
    pub fn request_id(&self) -> &Id {
        &self.id
    }

    /// The request's `_meta`, if it had one.
    pub fn meta(&self) -> Option<&RequestMeta> {
        self.meta.as_deref()
    }

    /// The protocol version of this request: the one its `_meta` names (2026-07-28), or the
    /// one negotiated for the session.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.protocol_version
    }

    /// Whether this request is served per request (2026-07-28: no session, no requests to
    /// the client).
    pub fn is_per_request(&self) -> bool {
        self.envelope.is_some()
    }

    /// What the client declared: in this request's `_meta` (2026-07-28), else in `initialize`
    /// (`None` before it did).
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        match &self.envelope {
            Some(envelope) => Some(envelope.client_capabilities.clone()),
            None => self.connection.client_capabilities(),
        }
    }

    /// Who the client said it is: in this request's `_meta` (2026-07-28), else in `initialize`.
    pub fn client_info(&self) -> Option<Implementation> {
        match &self.envelope {
            Some(envelope) => envelope.client_info.clone(),
            None => self.connection.client_info(),
        }
    }

    /// The log level this request asked for (`_meta` `logLevel`, 2026-07-28), or the
    /// session's `logging/setLevel`.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        match &self.envelope {
            Some(envelope) => envelope.log_level,
            None => self.connection.log_level(),
        }
    }

    /// The number of the session this request belongs to (unique in this server while it
    /// runs; [`ServerBuilder::on_session_closed`](super::ServerBuilder::on_session_closed) says
    /// when it ends), or `None` for a request that stands alone: a 2026-07-28 request, or one
    /// exchange of a stateless transport.
    pub fn session_id(&self) -> Option<u64> {
        if self.envelope.is_some() {
            return None;
        }
        self.connection.session
    }

    /// This context, with `key` as the key of its next request to the client in a 2026-07-28
    /// `inputRequests` (otherwise the key is the method and the ask's place in the handler's
    /// run). The client answers under the same key; handshake-era requests ignore it.
    pub fn with_input_key(&self, key: impl Into<String>) -> Context {
        Context { input_key: Some(key.into()), ..self.clone() }
    }

    /// A point where the handler waits: in a 2026-07-28 call of a task tool for a client of the
    /// tasks extension, the call becomes a task here (answered with its `CreateTaskResult`;
    /// what follows runs in the background, and requests to the client park the task until
    /// `tasks/update`). What the handler asked before this point was gathered by MRTR rounds.
    /// Anywhere else it only yields once.
    pub async fn run_as_task(&self) {
        tokio::task::yield_now().await;
    }

    /// The id of the task this call runs as, when the client asked for a task.
    pub fn task_id(&self) -> Option<&str> {
        self.task.as_ref().map(|t| t.task_id())
    }

    /// Whether the client cancelled this request (`notifications/cancelled`, or `tasks/cancel`
    /// of its task). The handler's future is aborted right after the flag is set; the flag is
    /// for work the handler spawned or for code that must notice between two awaits.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.shared.cancelled.load(Ordering::SeqCst)
    }

    /// Completes when the request is cancelled (never, if it is not).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn cancelled(&self) {
        let shared = &self.cancel.shared;
        loop {
            let notified = shared.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read, so a cancel in between is not missed.
            notified.as_mut().enable();
            if shared.cancelled.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Sends `notifications/progress` for this call, if the client asked for progress
    /// (`_meta.progressToken`); does nothing otherwise. Integral values are written as
    /// integers (`1`, not `1.0`).
    ///
    /// # Errors
    /// When the connection is gone.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Result<(), RequestError> {
        let Some(token) = self.meta.as_ref().and_then(|m| m.progress_token.clone()) else { return Ok(()) };
        let params = ProgressNotificationParams {
            progress_token: token,
            progress: number(progress),
            total: total.map(number),
            message,
            meta: None,
            extra: Map::new(),
        };
        self.outgoing.clone().notify("notifications/progress", Body::typed(params), Some(self.id.clone())).await
    }

    /// Whether a message at `level` would be sent (the client's `logging/setLevel` threshold;
    /// everything when it set none).
    /// In the per-request era a request without `logLevel` gets no log messages at all.
    pub fn log_enabled(&self, level: LoggingLevel) -> bool {
        match &self.envelope {
            Some(envelope) => envelope.log_level.is_some_and(|min| level >= min),
            None => self.connection.log_level().is_none_or(|min| level >= min),
        }
    }

    /// Sends a log message (`notifications/message`) related to this call, unless the client
    /// set a higher level.
    ///
    /// # Errors
    /// When the connection is gone.
    pub async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: impl Into<Value>,
    ) -> Result<(), RequestError> {
        if !self.log_enabled(level) {
            return Ok(());
        }
        let params = LoggingMessageNotificationParams {
            level,
            logger: logger.map(str::to_owned),
            data: data.into(),
            meta: None,
            extra: Map::new(),
        };
        self.outgoing.clone().notify("notifications/message", Body::typed(params), Some(self.id.clone())).await
    }

    /// [`Context::log`] at `info` without a logger name.
    ///
    /// # Errors
    /// As [`Context::log`].
    pub async fn info(&self, data: impl Into<Value>) -> Result<(), RequestError> {
        self.log(LoggingLevel::Info, None, data).await
    }
}
