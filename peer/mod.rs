//! A [`Session`] driven over a [`Transport`]: the IO half of the session core, shared by the
//! client and the server layers.
//!
//! [`Peer::start`] spawns a reader task that feeds incoming messages to the session and hands
//! what comes out to the waiting callers or to the [`Handler`]; a timer task that expires
//! requests at their deadline starts with the first request that has one (a stateless HTTP
//! server makes a peer per POST and never needs it). Callers use [`Peer::request`] (await the
//! response; dropping the future cancels the request with `notifications/cancelled`),
//! [`Peer::notify`] and [`Peer::respond`] (or [`Peer::respond_now`], which records the answer
//! synchronously and sends it later). When the input ends, requests already received can still
//! be answered until [`Peer::close`], so a server can finish its work in flight before closing
//! the transport. The session sits behind a short-held `std` mutex that is never held across
//! an `.await`: each call takes the messages its operation produced and sends them after
//! releasing the lock, so a slow transport never blocks the reader.
//!
//! Past an in-flight cap ([`session::SessionLimits`], under the default [`session::WhenFull::Wait`])
//! nothing is refused. A request of ours waits for a slot, within its own timeout. A request of
//! the peer's is held back from the session in arrival order, up to [`MAX_HELD_REQUESTS`], and
//! handed over as our answers make room; past that the reader stops reading the connection, so
//! the peer's writes wait. While requests are held, responses and notifications are still read,
//! so a handler awaiting the peer's answer goes on. Only a peer that leaves every handler waiting
//! on answers it sends after a full held queue could stall the connection.
//! [`session::WhenFull::Refuse`] restores the immediate refusals.
//!
//! Each request of ours remembers the [`CallerId`] in scope when it was sent ([`with_caller`]),
//! for as long as it is in flight: [`Peer::caller_of`] and [`Peer::sole_caller`] tell the layer
//! above on whose behalf the peer's own requests are probably made.
//!
//! Not here: MCP semantics (what to answer to `initialize`, `ping`, `tools/call` …): the layers
//! above implement [`Handler`].

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Number, Value};
use tokio::sync::{oneshot, Notify};

mod caller;
mod slots;

pub use caller::{current_caller, with_caller, CallerId};
#[cfg(feature = "client")]
pub(crate) use caller::{sync_with_caller_opt, with_caller_opt};

use crate::proto::jsonrpc::{Body, ErrorObject, ErrorResponse, Id, Message, Notification, Request};
use crate::proto::session::{self, Event, Mode, ProtocolEvent, RequestOptions, Role, Session, SessionError};
use crate::transport::{Transport, TransportError};
use slots::{SlotTaken, Slots};

/// Progress reported on one of our requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far, as the peer wrote it.
    pub progress: Number,
    /// The total, if the peer knows it.
    pub total: Option<Number>,
    /// A human-readable message.
    pub message: Option<String>,
}

/// A callback receiving progress for one request.
pub type ProgressCallback = Box<dyn Fn(Progress) + Send + Sync>;

/// A callback told a request's id before the request goes out ([`Peer::request_noting_id`]).
pub type IdCallback = Box<dyn FnOnce(&Id) + Send>;

/// Why a request got no result.
#[derive(Debug)]
#[non_exhaustive]
pub enum RequestError {
    /// The peer answered with an error.
    Rpc(ErrorObject),
    /// No response within the request's timeout; `notifications/cancelled` was sent.
    Timeout {
        /// The request's method.
        method: String,
        /// The timeout that expired.
        after: Option<Duration>,
    },
    /// The connection ended before the response arrived.
    Closed {
        /// Why, when the transport said.
        reason: Option<String>,
    },
    /// The session refused to send it (not initialized, too many in flight …).
    Session(SessionError),
    /// The transport failed while sending it.
    Transport(TransportError),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Rpc(e) => write!(f, "peer answered with error {}: {}", e.code, e.message),
            RequestError::Timeout { method, after: Some(after) } => {
                write!(f, "{method} timed out after {} ms", after.as_millis())
            }
            RequestError::Timeout { method, after: None } => write!(f, "{method} timed out"),
            RequestError::Closed { reason: Some(reason) } => write!(f, "connection closed: {reason}"),
            RequestError::Closed { reason: None } => f.write_str("connection closed before the response arrived"),
            RequestError::Session(e) => e.fmt(f),
            RequestError::Transport(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RequestError::Rpc(e) => Some(e),
            RequestError::Session(e) => Some(e),
            RequestError::Transport(e) => Some(e),
            RequestError::Timeout { .. } | RequestError::Closed { .. } => None,
        }
    }
}

/// What the layer above does with what the peer sends. Called from the reader task: do not
/// block in these methods; spawn work that takes time.
pub trait Handler<T: Transport>: Send + Sync + 'static {
    /// A request from the peer; answer it with [`Peer::respond`] (now or later).
    fn on_request(&self, peer: &Peer<T>, request: Request);

    /// A notification from the peer that the session did not consume.
    fn on_notification(&self, peer: &Peer<T>, notification: Notification) {
        let _ = (peer, notification);
    }

    /// The peer cancelled its request `id`: stop working on it; no response will be sent.
    fn on_cancelled(&self, peer: &Peer<T>, id: &Id) {
        let _ = (peer, id);
    }

    /// Server side: the client sent `notifications/initialized`.
    fn on_initialized(&self, peer: &Peer<T>) {
        let _ = peer;
    }

    /// A frame that was not a valid message. The default answers it with a JSON-RPC error
    /// (id `null`), as JSON-RPC asks of a server.
    fn on_malformed(&self, peer: &Peer<T>, error: &TransportError) {
        let code = match error {
            TransportError::Malformed(e) => e.code(),
            _ => crate::proto::jsonrpc::ErrorCode::INVALID_REQUEST,
        };
        peer.send_detached(vec![Message::Error(ErrorResponse::new(None, ErrorObject::new(code, error.to_string())))]);
    }

    /// A protocol violation the session absorbed (a response to an unknown id, …).
    fn on_protocol_event(&self, peer: &Peer<T>, event: ProtocolEvent) {
        let _ = (peer, event);
    }

    /// The connection ended (`error` is why, if it did not end cleanly).
    fn on_closed(&self, error: Option<&TransportError>) {
        let _ = error;
    }
}

type Outcome = Result<Body, RequestError>;

struct Waiter {
    done: oneshot::Sender<Outcome>,
    timeout: Option<Duration>,
    progress: Option<ProgressCallback>,
    /// The caller in scope when the request was sent.
    caller: Option<CallerId>,
}

struct Core {
    session: Session,
    /// The peer's requests read while its cap of them was in flight, in order, held back from
    /// the session ([`session::WhenFull::Wait`]); at most [`MAX_HELD_REQUESTS`].
    held: VecDeque<Message>,
    /// Keyed by ids the session allocated (never by ids the peer chose), so a cheap hasher is
    /// safe here: nobody outside can pick keys that collide.
    waiters: HashMap<Id, Waiter, OwnIds>,
    /// The deadline the timer task sleeps until, to wake it only when an earlier one appears.
    timer_deadline: Option<Instant>,
    closed_reason: Option<String>,
    /// The spans of the peer's requests being served, until each is answered or cancelled
    /// (only those a subscriber wanted).
    #[cfg(feature = "otel")]
    served: HashMap<Id, ServedSpan>,
}

/// A request being served, for its span's outcome.
#[cfg(feature = "otel")]
struct ServedSpan {
    span: tracing::Span,
    method: String,
}

/// The hasher of maps keyed by ids we allocated ([`Core::waiters`]): a multiply-rotate hash in
/// the manner of rustc's FxHash, a few instructions where SipHash costs a few hundred. Not for
/// keys a peer chooses (ids of its requests, tokens): those could be picked to collide, and keep
/// the standard library's keyed SipHash.
#[derive(Clone, Copy, Default)]
struct OwnIds;

impl std::hash::BuildHasher for OwnIds {
    type Hasher = OwnIdHasher;
    fn build_hasher(&self) -> OwnIdHasher {
        OwnIdHasher(0)
    }
}

/// The state of [`OwnIds`]' hasher.
struct OwnIdHasher(u64);

impl OwnIdHasher {
    /// An odd constant with well-spread bits (FxHash's): multiplying by it is a bijection on
    /// the low bits the table indexes by, so consecutive ids land in distinct buckets.
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl std::hash::Hasher for OwnIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("chunks of 8")));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.add(u64::from_le_bytes(tail));
    }
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The peer's requests held back, past its in-flight cap, before the reader stops reading the
/// connection. Responses and notifications are read on meanwhile, so a handler waiting for the
/// peer's answer is not stuck behind the held requests.
pub const MAX_HELD_REQUESTS: usize = 256;

/// What the session gave out for one operation: the messages to send or the events to
/// dispatch. Nearly always one (a request, its answer, the message read), which is held without
/// an allocation; a second and later ones go to a `Vec`.
struct Few<T> {
    first: Option<T>,
    rest: Vec<T>,
}

impl<T> Few<T> {
    /// Everything `next` gives until it gives `None`.
    fn from_fn(mut next: impl FnMut() -> Option<T>) -> Few<T> {
        let first = next();
        let rest = if first.is_some() { std::iter::from_fn(next).collect() } else { Vec::new() };
        Few { first, rest }
    }
}

impl<T> From<Vec<T>> for Few<T> {
    fn from(rest: Vec<T>) -> Few<T> {
        Few { first: None, rest }
    }
}

impl<T> IntoIterator for Few<T> {
    type Item = T;
    type IntoIter = std::iter::Chain<std::option::IntoIter<T>, std::vec::IntoIter<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

impl Core {
    fn drain(&mut self) -> Few<Message> {
        Few::from_fn(|| self.session.poll_transmit())
    }

    /// Hands held requests to the session while it has room for them.
    fn release_held(&mut self, max_incoming: usize) {
        while self.session.incoming_in_flight() < max_incoming {
            let Some(request) = self.held.pop_front() else { return };
            self.session.handle_incoming(request, now());
        }
    }

    /// Records the answer's outcome on the span of the peer's request `id`, if it has one, and
    /// returns the span: the caller drops it once the lock is released (closing a span hands it
    /// to the exporter).
    #[cfg(feature = "otel")]
    fn end_served_span(&mut self, id: &Id, outcome: Result<&Body, &ErrorObject>) -> Option<ServedSpan> {
        let served = self.served.remove(id)?;
        crate::telemetry::record_outcome(&served.span, &served.method, outcome);
        Some(served)
    }

    /// Forgets a held request the peer cancelled: it was never handed over, so nothing answers it.
    fn drop_cancelled_held(&mut self, notification: &crate::proto::jsonrpc::Notification) {
        let cancelled = notification.params.as_ref().and_then(|p| p.decode::<Value>().ok());
        let Some(id) = cancelled.as_ref().and_then(|p| p.get("requestId")).cloned() else { return };
        let Ok(id) = serde_json::from_value::<Id>(id) else { return };
        self.held.retain(|m| !matches!(m, Message::Request(r) if r.id == id));
    }
}

/// What the clones of a [`Peer`] share. A handle of another type can be this `Arc` itself
/// ([`Peer::shared`], [`Peer::from_shared`]): the server's handlers hold the connection as an
/// `Arc<dyn Outgoing>` of it, without an allocation of their own per request.
pub(crate) struct Shared<T: Transport> {
    transport: T,
    core: Mutex<Core>,
    /// One slot per outgoing request the session may have in flight, when a request past the
    /// cap waits ([`session::WhenFull::Wait`]); `None` when it is refused.
    slots: Option<Slots>,
    /// The peer's cap, when its requests past it are held ([`Core::held`]) rather than refused.
    hold_past: Option<usize>,
    /// Told when an answer may have made room for held requests.
    room: Notify,
    handler: Box<dyn Handler<T>>,
    timer: Notify,
    timer_started: AtomicBool,
    closed: AtomicBool,
    closed_notify: Notify,
}

/// One end of a connection: a session over a transport. Cheap to clone.
pub struct Peer<T: Transport> {
    shared: Arc<Shared<T>>,
}

impl<T: Transport> Clone for Peer<T> {
    fn clone(&self) -> Self {
        Peer { shared: self.shared.clone() }
    }
}

#[cfg(feature = "server")]
impl<T: Transport> Peer<T> {
    /// What this peer's clones share (one more reference to it).
    pub(crate) fn shared(&self) -> Arc<Shared<T>> {
        self.shared.clone()
    }

    /// The peer whose clones share `shared`.
    pub(crate) fn from_shared(shared: Arc<Shared<T>>) -> Peer<T> {
        Peer { shared }
    }
}

fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

impl<T: Transport> Peer<T> {
    /// Starts the reader task. Must be called inside a tokio runtime.
    pub fn start(
        transport: T,
        role: Role,
        mode: Mode,
        limits: session::SessionLimits,
        handler: impl Handler<T>,
    ) -> Peer<T> {
        let slots = (limits.when_full == session::WhenFull::Wait).then(|| Slots::new(limits.max_outgoing_in_flight));
        let hold_past = (limits.when_full == session::WhenFull::Wait).then_some(limits.max_incoming_in_flight);
        let shared = Arc::new(Shared {
            transport,
            slots,
            hold_past,
            room: Notify::new(),
            core: Mutex::new(Core {
                session: Session::new(role, mode, limits),
                held: VecDeque::new(),
                waiters: HashMap::default(),
                timer_deadline: None,
                closed_reason: None,
                #[cfg(feature = "otel")]
                served: HashMap::new(),
            }),
            handler: Box::new(handler),
            timer: Notify::new(),
            timer_started: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            closed_notify: Notify::new(),
        });
        let peer = Peer { shared };
        crate::transport::task::spawn(peer.clone().read_loop());
        peer
    }

    /// The transport under this peer.
    pub fn transport(&self) -> &T {
        &self.shared.transport
    }

    /// The protocol version the session recorded from the `initialize` exchange.
    pub fn protocol_version(&self) -> Option<crate::proto::version::ProtocolVersion> {
        self.lock().session.protocol_version()
    }

    /// Whether the connection has ended: the input ended or failed, or [`Peer::close`] was
    /// called. Once the input has ended, requests already received may still be answered with
    /// [`Peer::respond`] until [`Peer::close`]; new requests of ours are refused.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Waits until the connection has ended.
    pub async fn closed(&self) {
        loop {
            let notified = self.shared.closed_notify.notified();
            if self.is_closed() {
                return;
            }
            notified.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Core> {
        self.shared.core.lock().expect("a peer's core is never poisoned: nothing panics while holding it")
    }

    async fn send_all(&self, messages: Few<Message>) -> Result<(), TransportError> {
        for message in messages {
            self.shared.transport.send(message).await?;
        }
        Ok(())
    }

    /// Sends `messages`, each related to the peer's request `related` when given
    /// ([`Transport::send_related`]).
    async fn send_all_related(&self, messages: Few<Message>, related: Option<&Id>) -> Result<(), TransportError> {
        match related {
            None => self.send_all(messages).await,
            Some(id) => {
                for message in messages {
                    self.shared.transport.send_related(message, id).await?;
                }
                Ok(())
            }
        }
    }

    /// Sends `messages` from a task of its own (for callers that cannot await, e.g. `Drop`).
    pub fn send_detached(&self, messages: Vec<Message>) {
        self.detach(messages.into());
    }

    /// [`Peer::send_detached`] of what the session gave out.
    fn detach(&self, messages: Few<Message>) {
        if messages.first.is_none() && messages.rest.is_empty() {
            return;
        }
        let peer = self.clone();
        crate::transport::task::spawn(async move {
            let _ = peer.send_all(messages).await;
        });
    }

    /// Sends a request and waits for its result.
    ///
    /// # Cancel safety
    /// Dropping the future before it completes cancels the request: `notifications/cancelled`
    /// is sent and a late response is dropped.
    ///
    /// # Errors
    /// [`RequestError`] when the peer answers with an error, the request times out, the
    /// connection ends first, or the session refuses to send it.
    pub fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Body>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Body, RequestError>> + 'a {
        // Not an `async fn` wrapping the inner one: that would copy the arguments and the inner
        // future into a second, larger future on every call.
        self.request_inner(Cow::Owned(method.to_owned()), params, options, None, None, None)
    }

    /// Like [`Peer::request`], calling `on_id` with the request's id once it is allocated and
    /// before the request goes out (while the session's lock is held: keep it short), so that
    /// the caller can recognise what the peer sends about the request before it is answered
    /// (a `subscriptions/listen` acknowledgement).
    ///
    /// # Cancel safety
    /// As [`Peer::request`].
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub fn request_noting_id<'a>(
        &'a self,
        method: &'a str,
        params: Option<Body>,
        options: RequestOptions,
        on_id: IdCallback,
    ) -> impl Future<Output = Result<Body, RequestError>> + 'a {
        self.request_inner(Cow::Owned(method.to_owned()), params, options, None, None, Some(on_id))
    }

    /// Like [`Peer::request`], routing progress notifications for it to `on_progress`.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub fn request_with_progress<'a>(
        &'a self,
        method: &'a str,
        params: Option<Body>,
        options: RequestOptions,
        on_progress: Option<ProgressCallback>,
    ) -> impl Future<Output = Result<Body, RequestError>> + 'a {
        self.request_inner(Cow::Owned(method.to_owned()), params, options, on_progress, None, None)
    }

    /// [`Peer::request_with_progress`] of a method named by a `&'static str` (the layers above
    /// name every method they send so): the session keeps that name for the request in flight
    /// rather than a copy of it, one allocation fewer a request.
    #[cfg(feature = "client")]
    pub(crate) fn request_static(
        &self,
        method: &'static str,
        params: Option<Body>,
        options: RequestOptions,
        on_progress: Option<ProgressCallback>,
    ) -> impl Future<Output = Result<Body, RequestError>> + '_ {
        self.request_inner(Cow::Borrowed(method), params, options, on_progress, None, None)
    }

    /// Like [`Peer::request`], for a request made on behalf of the peer's request `related`
    /// (a server asking the client something while handling its call): the transport may route
    /// it with that request ([`Transport::send_related`]).
    ///
    /// # Cancel safety
    /// As [`Peer::request`].
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub fn request_related<'a>(
        &'a self,
        method: &'a str,
        params: Option<Body>,
        options: RequestOptions,
        related: &'a Id,
    ) -> impl Future<Output = Result<Body, RequestError>> + 'a {
        self.request_inner(Cow::Owned(method.to_owned()), params, options, None, Some(related), None)
    }

    async fn request_inner(
        &self,
        method: Cow<'static, str>,
        params: Option<Body>,
        options: RequestOptions,
        on_progress: Option<ProgressCallback>,
        related: Option<&Id>,
        on_id: Option<IdCallback>,
    ) -> Result<Body, RequestError> {
        let mut options = options;
        // Past the in-flight cap, wait for a slot: the wait counts against the request's timeout.
        let _slot = match &self.shared.slots {
            Some(slots) => match slots.try_take() {
                Some(slot) => Some(slot),
                // Boxed: the wait (a timer and a semaphore's queue entry) is rare, and would
                // otherwise make every request's future larger, copied at every layer.
                None => Some(Box::pin(self.wait_for_slot(slots, &method, &mut options)).await?),
            },
            None => None,
        };
        let timeout = options.timeout;
        let caller = current_caller();
        #[cfg(feature = "otel")]
        let span = crate::telemetry::client_span(&method, params.as_ref(), || self.telemetry_connection());
        #[cfg(feature = "otel")]
        let method_for_span = method.clone();
        #[cfg(feature = "otel")]
        let params = crate::telemetry::inject_params(&span, params);
        let (done, outcome) = oneshot::channel();
        let (id, messages, wake_timer) = {
            let mut core = self.lock();
            if let Some(reason) = &core.closed_reason {
                return Err(RequestError::Closed { reason: Some(reason.clone()) });
            }
            let id = core.session.send_request_with(method, params, now(), options).map_err(RequestError::Session)?;
            #[cfg(feature = "otel")]
            crate::telemetry::record_id(&span, &id);
            core.waiters.insert(id.clone(), Waiter { done, timeout, progress: on_progress, caller });
            if let Some(on_id) = on_id {
                on_id(&id);
            }
            let deadline = core.session.poll_timeout();
            let wake_timer = deadline.is_some() && (core.timer_deadline.is_none() || deadline < core.timer_deadline);
            (id, core.drain(), wake_timer)
        };
        if wake_timer {
            if !self.shared.timer_started.swap(true, Ordering::AcqRel) {
                crate::transport::task::spawn(self.clone().timer_loop());
            }
            self.shared.timer.notify_one();
        }
        let guard = CancelOnDrop { peer: self, id: Some(id) };
        let mut outcome = outcome;
        // The send may wait (a peer that stops reading fills the pipe and our queue); the
        // request's timeout runs meanwhile, and ends the wait: dropping the send is cancel
        // safe, the message is queued whole or not at all.
        let sending = self.send_all_related(messages, related);
        tokio::pin!(sending);
        // Biased (the send first, as it is nearly always done at its first poll): an unbiased
        // select draws a random number on every poll.
        let early = tokio::select! {
            biased;
            sent = &mut sending => match sent {
                Ok(()) => None,
                Err(e) => {
                    let mut guard = guard;
                    if let Some(id) = guard.id.take() {
                        self.lock().waiters.remove(&id);
                    }
                    return Err(RequestError::Transport(e));
                }
            },
            ended = &mut outcome => Some(ended),
        };
        let result = match early {
            // Answered while messages queued behind the request were still being sent (the
            // core's other work, e.g. a cancellation): those still go.
            Some(Ok(Ok(body))) => {
                let _ = sending.await;
                Ok(Ok(body))
            }
            Some(ended) => ended,
            None => outcome.await,
        }
        .unwrap_or(Err(RequestError::Closed { reason: None }));
        let mut guard = guard;
        guard.id = None;
        #[cfg(feature = "otel")]
        record_request_outcome(&span, &method_for_span, &result);
        result
    }

    /// What the spans of this peer's requests say about its connection.
    #[cfg(feature = "otel")]
    fn telemetry_connection(&self) -> crate::telemetry::Connection {
        crate::telemetry::Connection {
            network_transport: self.shared.transport.network_transport(),
            server_endpoint: self.shared.transport.server_endpoint(),
            session_id: self.shared.transport.session_id(),
            protocol_version: self.protocol_version().map(|v| v.to_string()),
        }
    }

    /// The span of the peer's request `request`, kept until it is answered when a subscriber
    /// wants it.
    #[cfg(feature = "otel")]
    fn serve_span(&self, request: &Request) -> tracing::Span {
        let span = crate::telemetry::server_span(
            &request.method,
            &request.id,
            request.params.as_ref(),
            || self.telemetry_connection(),
            || self.traceparent_header(&request.id),
        );
        if !span.is_disabled() {
            let served = ServedSpan { span: span.clone(), method: request.method.clone() };
            self.lock().served.insert(request.id.clone(), served);
        }
        span
    }

    /// The `traceparent` and `tracestate` headers of the HTTP request that carried `id`.
    #[cfg(feature = "otel")]
    fn traceparent_header(&self, id: &Id) -> Option<(String, Option<String>)> {
        #[cfg(feature = "http")]
        {
            let parts = self.shared.transport.http_request(id)?;
            let header = |name: &str| parts.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            Some((header("traceparent")?, header("tracestate")))
        }
        #[cfg(not(feature = "http"))]
        {
            let _ = id;
            None
        }
    }

    /// The caller our request `id` was sent on behalf of, while it is in flight (`None` when it
    /// had none, or has ended).
    pub fn caller_of(&self, id: &Id) -> Option<CallerId> {
        self.lock().waiters.get(id).and_then(|w| w.caller)
    }

    /// The caller of every request of ours in flight that has one, when they all have the same;
    /// `None` when none has a caller or two differ. Requests without a caller do not count.
    pub fn sole_caller(&self) -> Option<CallerId> {
        let core = self.lock();
        let mut callers = core.waiters.values().filter_map(|w| w.caller);
        let first = callers.next()?;
        callers.all(|c| c == first).then_some(first)
    }

    /// Waits until fewer than the cap of requests are in flight, within `options.timeout`, which
    /// is then shortened by the time waited.
    async fn wait_for_slot<'s>(
        &self,
        slots: &'s Slots,
        method: &str,
        options: &mut RequestOptions,
    ) -> Result<SlotTaken<'s>, RequestError> {
        let started = tokio::time::Instant::now();
        let taken = match options.timeout {
            Some(limit) => tokio::time::timeout(limit, slots.take()).await.ok(),
            None => Some(slots.take().await),
        };
        let permit =
            taken.ok_or_else(|| RequestError::Timeout { method: method.to_owned(), after: options.timeout })?;
        if let Some(limit) = &mut options.timeout {
            *limit = limit.saturating_sub(started.elapsed());
        }
        Ok(permit)
    }

    /// Sends a notification.
    ///
    /// # Errors
    /// When the session refuses it or the transport fails.
    pub async fn notify(&self, method: &str, params: Option<Body>) -> Result<(), RequestError> {
        let messages = {
            let mut core = self.lock();
            core.session.notify(method, params).map_err(RequestError::Session)?;
            core.drain()
        };
        self.send_all(messages).await.map_err(RequestError::Transport)
    }

    /// Like [`Peer::notify`], for a notification about the peer's request `related` (progress,
    /// log messages): the transport may route it with that request
    /// ([`Transport::send_related`]).
    ///
    /// # Errors
    /// As [`Peer::notify`].
    pub async fn notify_related(&self, method: &str, params: Option<Body>, related: &Id) -> Result<(), RequestError> {
        let messages = {
            let mut core = self.lock();
            core.session.notify(method, params).map_err(RequestError::Session)?;
            core.drain()
        };
        self.send_all_related(messages, Some(related)).await.map_err(RequestError::Transport)
    }

    /// Client side: completes the handshake by sending `notifications/initialized`.
    ///
    /// # Errors
    /// When the session refuses it (no `initialize` answered yet) or the transport fails.
    pub async fn initialized(&self) -> Result<(), RequestError> {
        let messages = {
            let mut core = self.lock();
            core.session.initialized().map_err(RequestError::Session)?;
            core.drain()
        };
        self.send_all(messages).await.map_err(RequestError::Transport)
    }

    /// Switches the session's mode ([`Session::set_mode`]): a dual-era client falls back to the
    /// handshake after a `server/discover` probe the server did not take.
    ///
    /// # Errors
    /// As [`Session::set_mode`].
    pub fn set_mode(&self, mode: Mode) -> Result<(), SessionError> {
        self.lock().session.set_mode(mode)
    }

    /// Answers the peer's request `id`. Returns `false` (and sends nothing) when that request
    /// is no longer in flight, e.g. because the peer cancelled it.
    ///
    /// # Errors
    /// When the transport fails.
    pub async fn respond(&self, id: &Id, outcome: Result<Body, ErrorObject>) -> Result<bool, TransportError> {
        #[cfg(feature = "otel")]
        let ended;
        let (sent, messages) = {
            let mut core = self.lock();
            #[cfg(feature = "otel")]
            {
                ended = core.end_served_span(id, outcome.as_ref());
            }
            let sent = match outcome {
                Ok(result) => core.session.respond(id, result),
                Err(error) => core.session.respond_error(id, error),
            };
            if !core.held.is_empty() {
                self.shared.room.notify_one();
            }
            (sent, core.drain())
        };
        #[cfg(feature = "otel")]
        drop(ended);
        self.send_all(messages).await?;
        Ok(sent)
    }

    /// Records the answer to the peer's request `id` in the session now, from a synchronous
    /// context such as [`Handler::on_request`], and returns it ready to send. The session's
    /// lifecycle advances in the order requests arrived (an `initialize` answered this way lets
    /// the requests read after it through the gate), while the sending may happen in a task.
    /// [`Queued::sent`] is `false` (and nothing is sent) when `id` was no longer in flight.
    pub fn respond_now(&self, id: &Id, outcome: Result<Body, ErrorObject>) -> Queued<T> {
        let mut core = self.lock();
        #[cfg(feature = "otel")]
        let ended = core.end_served_span(id, outcome.as_ref());
        let sent = match outcome {
            Ok(result) => core.session.respond(id, result),
            Err(error) => core.session.respond_error(id, error),
        };
        if !core.held.is_empty() {
            self.shared.room.notify_one();
        }
        let queued = Queued { peer: self.clone(), sent, messages: core.drain() };
        drop(core);
        #[cfg(feature = "otel")]
        drop(ended);
        queued
    }

    /// Closes the transport (queued messages are still delivered) and fails every request
    /// still waiting.
    ///
    /// # Errors
    /// When flushing the transport fails.
    pub async fn close(&self) -> Result<(), TransportError> {
        self.finish(Some("closed by us".to_owned()), true);
        self.shared.transport.close().await
    }

    /// Marks the connection ended and fails every waiting request. When only the input ended
    /// (`close_session` false), the session stays open so that requests already received can
    /// still be answered ([`Peer::respond`]) until [`Peer::close`].
    fn finish(&self, reason: Option<String>, close_session: bool) {
        #[cfg(feature = "otel")]
        let ended;
        let waiters: Vec<Waiter> = {
            let mut core = self.lock();
            if core.closed_reason.is_none() {
                core.closed_reason = Some(reason.clone().unwrap_or_else(|| "connection closed".to_owned()));
            }
            if close_session {
                core.session.close();
            }
            #[cfg(feature = "otel")]
            {
                ended = std::mem::take(&mut core.served);
            }
            core.waiters.drain().map(|(_, w)| w).collect()
        };
        #[cfg(feature = "otel")]
        drop(ended);
        for waiter in waiters {
            let _ = waiter.done.send(Err(RequestError::Closed { reason: reason.clone() }));
        }
        self.shared.closed.store(true, Ordering::Release);
        self.shared.closed_notify.notify_waiters();
        self.shared.timer.notify_one();
    }

    /// Routes events produced by the session to waiters and to the handler.
    fn dispatch(&self, events: Few<Event>) {
        for event in events {
            match event {
                Event::Response { id, result, .. } => self.complete(&id, Ok(result)),
                Event::ErrorResponse { id, error, .. } => self.complete(&id, Err(RequestError::Rpc(error))),
                Event::TimedOut { id, method } => {
                    let after = self.lock().waiters.get(&id).and_then(|w| w.timeout);
                    self.complete(&id, Err(RequestError::Timeout { method: method.into_owned(), after }));
                }
                Event::Progress { request_id, progress, total, message } => {
                    let core = self.lock();
                    if let Some(callback) = core.waiters.get(&request_id).and_then(|w| w.progress.as_ref()) {
                        callback(Progress { progress, total, message });
                    }
                }
                Event::Request(request) => {
                    #[cfg(feature = "otel")]
                    let span = self.serve_span(&request);
                    #[cfg(feature = "otel")]
                    let _in_span = span.enter();
                    self.shared.handler.on_request(self, request)
                }
                Event::Notification(notification) => self.shared.handler.on_notification(self, notification),
                Event::Cancelled { id, .. } => {
                    #[cfg(feature = "otel")]
                    {
                        let cancelled = self.lock().served.remove(&id);
                        drop(cancelled);
                    }
                    self.shared.handler.on_cancelled(self, &id)
                }
                Event::Initialized => self.shared.handler.on_initialized(self),
                Event::Protocol(event) => {
                    if let ProtocolEvent::ErrorWithoutId { error } = &event {
                        // The session ended the requests it may answer; say so where an
                        // operator looks.
                        let message = crate::proto::printable::printable(&error.message);
                        tracing::warn!(code = error.code.0, %message, "mcpwire: the peer sent an error without an id");
                    }
                    self.shared.handler.on_protocol_event(self, event)
                }
            }
        }
    }

    fn complete(&self, id: &Id, outcome: Outcome) {
        let waiter = self.lock().waiters.remove(id);
        if let Some(waiter) = waiter {
            let _ = waiter.done.send(outcome);
        }
    }

    async fn read_loop(self) {
        // Whether requests are held, and whether the queue of them is full: only the reader
        // changes the queue, so what the last hand-over saw holds until the next.
        let (mut held, mut full) = (false, false);
        loop {
            // Past the peer's cap with the held queue full: read nothing until an answer of ours
            // makes room (that is the backpressure the peer feels).
            let received = if full {
                self.shared.room.notified().await;
                None
            } else if held {
                tokio::select! {
                    biased;
                    () = self.shared.room.notified() => None,
                    received = self.shared.transport.recv() => Some(received),
                }
            } else {
                Some(self.shared.transport.recv().await)
            };
            let message = match received {
                None => None,
                Some(Ok(Some(message))) => Some(message),
                Some(Ok(None)) => {
                    // Requests read before the end are still handed over, as room is made.
                    while held {
                        self.shared.room.notified().await;
                        let out;
                        (out, held, _) = self.hand_over(None);
                        let _ = self.send_all(out).await;
                    }
                    self.finish(None, false);
                    self.shared.handler.on_closed(None);
                    return;
                }
                Some(Err(e)) if !e.is_fatal() => {
                    self.shared.handler.on_malformed(&self, &e);
                    continue;
                }
                Some(Err(e)) => {
                    self.finish(Some(e.to_string()), false);
                    self.shared.handler.on_closed(Some(&e));
                    return;
                }
            };
            let out;
            (out, held, full) = self.hand_over(message);
            if self.send_all(out).await.is_err() {
                // The outgoing side is gone; the reader carries on until the input ends.
            }
        }
    }

    /// Gives the session `message` (a request is held instead while the peer's cap of them is
    /// in flight, or others are held before it) and what held requests it now has room for,
    /// then dispatches the events. Returns what the session queued to send, whether requests
    /// are still held, and whether their queue is full.
    fn hand_over(&self, message: Option<Message>) -> (Few<Message>, bool, bool) {
        let state = {
            let mut core = self.lock();
            match (message, self.shared.hold_past) {
                (Some(Message::Request(r)), Some(max))
                    if !core.held.is_empty() || core.session.incoming_in_flight() >= max =>
                {
                    core.held.push_back(Message::Request(r));
                }
                (Some(Message::Notification(n)), Some(_))
                    if !core.held.is_empty() && n.method == "notifications/cancelled" =>
                {
                    core.drop_cancelled_held(&n);
                    core.session.handle_incoming(Message::Notification(n), now());
                }
                (Some(message), _) => core.session.handle_incoming(message, now()),
                (None, _) => {}
            }
            if let Some(max) = self.shared.hold_past {
                core.release_held(max);
            }
            let events = Few::from_fn(|| core.session.poll_event());
            (core.drain(), events, !core.held.is_empty(), core.held.len() >= MAX_HELD_REQUESTS)
        };
        let (out, events, held, full) = state;
        self.dispatch(events);
        (out, held, full)
    }

    async fn timer_loop(self) {
        loop {
            if self.is_closed() {
                return;
            }
            let notified = self.shared.timer.notified();
            let deadline = {
                let mut core = self.lock();
                core.timer_deadline = core.session.poll_timeout();
                core.timer_deadline
            };
            match deadline {
                None => notified.await,
                Some(deadline) => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep_until(deadline.into()) => {
                            let (out, events) = {
                                let mut core = self.lock();
                                core.session.handle_timeout(now());
                                let events = Few::from_fn(|| core.session.poll_event());
                                (core.drain(), events)
                            };
                            self.dispatch(events);
                            // Not awaited here: a peer that stops reading would hold the
                            // timer, and with it every later request's timeout.
                            self.detach(out);
                        }
                    }
                }
            }
        }
    }
}

/// Records the outcome of a request of ours on its span.
#[cfg(feature = "otel")]
fn record_request_outcome(span: &tracing::Span, method: &str, result: &Result<Body, RequestError>) {
    match result {
        Ok(body) => crate::telemetry::record_outcome(span, method, Ok(body)),
        Err(RequestError::Rpc(error)) => crate::telemetry::record_outcome(span, method, Err(error)),
        Err(RequestError::Timeout { .. }) => crate::telemetry::record_error_type(span, "timeout"),
        Err(RequestError::Closed { .. }) => crate::telemetry::record_error_type(span, "connection_closed"),
        Err(RequestError::Session(_)) => crate::telemetry::record_error_type(span, "session"),
        Err(RequestError::Transport(_)) => crate::telemetry::record_error_type(span, "transport"),
    }
}

/// An answer recorded by [`Peer::respond_now`], not sent yet.
#[must_use = "a queued answer is only sent by Queued::send"]
pub struct Queued<T: Transport> {
    peer: Peer<T>,
    sent: bool,
    messages: Few<Message>,
}

impl<T: Transport> Queued<T> {
    /// Whether the answer was accepted (its request was still in flight).
    pub fn sent(&self) -> bool {
        self.sent
    }

    /// Writes the answer to the transport.
    ///
    /// # Errors
    /// When the transport fails.
    pub async fn send(self) -> Result<bool, TransportError> {
        self.peer.send_all(self.messages).await?;
        Ok(self.sent)
    }
}

/// Cancels a request whose caller stopped waiting.
struct CancelOnDrop<'a, T: Transport> {
    peer: &'a Peer<T>,
    id: Option<Id>,
}

impl<T: Transport> Drop for CancelOnDrop<'_, T> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let messages = {
            let mut core = self.peer.lock();
            core.waiters.remove(&id);
            match core.session.cancel(&id, Some("the caller stopped waiting")) {
                Ok(()) => core.drain(),
                // Already answered, or initialize (never cancelled): nothing to send.
                Err(_) => Few::from(Vec::new()),
            }
        };
        self.peer.detach(messages);
    }
}

#[cfg(test)]
mod tests;
