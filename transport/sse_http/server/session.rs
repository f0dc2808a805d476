//! One MCP session over HTTP: [`Session`] (its streams, where each outgoing message goes,
//! the requests it holds, its principal, the ids of a shared session's server-to-client
//! requests) and [`ServerTransport`], the application's end of it.
//!
//! Not here: the table of sessions and their lifetime (`registry.rs`), the HTTP requests that
//! feed a session (`post.rs`, `get_delete.rs`, `legacy.rs`), other replicas (`replicas.rs`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use hyper::http::request::Parts;
use hyper::http::Extensions;
use hyper::Request;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::transport::sse_http::event_store::EventStore;
use crate::transport::sse_http::request_context::HttpRequestParts;
use crate::transport::sse_http::session_caps;
use crate::transport::sse_http::session_store::{RelayKind, Relayed, SessionRecord};

use super::answer::HoldTimer;
use super::bookkeeping::{self, Outbound};
use super::decide::NotHeld;
use super::guards::Authenticated;
use super::registry::Shared;
use super::stream::{Pending, Stream};
use crate::proto::jsonrpc::{self, Body, Id, Message};
use crate::proto::mcp_types::CallToolRequestParams;
use crate::proto::version::ProtocolVersion;
use crate::transport::principal::Principal;
use crate::transport::{Transport, TransportError};

#[derive(Default)]
pub(super) struct Routes {
    /// Request id → the stream its response goes to.
    pub(super) requests: HashMap<Id, Arc<Stream>>,
    /// Progress token (as JSON text) → request id.
    pub(super) progress: HashMap<String, Id>,
    /// POST streams, oldest first, kept for resumption (at most [`KEPT_STREAMS`]); one
    /// answered in one JSON body leaves once answered ([`Session::forget_stream`]).
    pub(super) streams: VecDeque<Arc<Stream>>,
    /// Request id → the HTTP request that carried it (with its verified principal), until it
    /// is answered.
    pub(super) http_requests: HashMap<Id, Arc<HttpRequestParts>>,
}

/// Where an outgoing message goes, as decided under the session's lock ([`Routes::destination`]).
pub(super) enum Destination {
    /// The response to a request held here: that request's stream, which it completes.
    Answer(Arc<Stream>, Id),
    /// The stream of the request the message relates to (named, or by its progress token).
    Related(Arc<Stream>),
    /// A message related to no open request, or to one answered in one JSON body (which carries
    /// responses only): the newest SSE POST stream still waiting for a response, if any (`None`:
    /// the standalone stream). The standalone stream is preferred when a GET holds it open.
    Unrelated(Option<Arc<Stream>>),
    /// The standalone stream: every message of a legacy session, and a response to no request
    /// held here (answered already, or never asked).
    Standalone,
}

impl Routes {
    /// Where a message goes: `answered` is the id it answers (a response or an error),
    /// `related` the request it was sent for, `token` its progress token (read only when
    /// `related` is `None`). An answer forgets its request (its stream, its progress token,
    /// its HTTP request).
    pub(super) fn destination(
        &mut self,
        answered: Option<Id>,
        related: Option<&Id>,
        token: Option<&str>,
        legacy: bool,
        stateless: bool,
    ) -> Destination {
        if let Some(id) = answered {
            self.http_requests.remove(&id);
            return match self.requests.remove(&id) {
                Some(stream) => {
                    self.progress.retain(|_, request| *request != id);
                    Destination::Answer(stream, id)
                }
                None => Destination::Standalone,
            };
        }
        if legacy {
            return Destination::Standalone;
        }
        let related = related.or_else(|| token.and_then(|t| self.progress.get(t)));
        match related.and_then(|id| self.requests.get(id)) {
            // A JSON answer carries only responses, except in stateless mode, where nothing
            // else could carry the message (see `json_answer`).
            Some(stream) if !stream.json || stateless => Destination::Related(stream.clone()),
            _ => Destination::Unrelated(self.newest_waiting_sse()),
        }
    }

    /// The newest SSE POST stream still waiting for a response.
    fn newest_waiting_sse(&self) -> Option<Arc<Stream>> {
        self.streams.iter().rev().find(|s| !s.json && self.requests.values().any(|r| Arc::ptr_eq(r, s))).cloned()
    }
}

/// Header names (lowercase) and values, in the order received.
pub(super) type HeaderPairs = Vec<(String, String)>;

pub(super) struct Session {
    pub(super) id: String,
    /// `id` as the `Mcp-Session-Id` value of its answers, built once: each answer takes a
    /// count of it, not a copy.
    pub(super) id_header: hyper::header::HeaderValue,
    /// Its places under the per-address and per-principal caps, given back when it ends.
    pub(super) caps: Mutex<Option<session_caps::Held>>,
    pub(super) legacy: bool,
    pub(super) json: bool,
    pub(super) incoming: Mutex<Option<mpsc::Sender<Message>>>,
    pub(super) version: Mutex<Option<ProtocolVersion>>,
    pub(super) initialize_id: Mutex<Option<Id>>,
    /// A 2026-07-28 POST's `Mcp-Param-*` headers, for the application to check against the
    /// called tool's schema.
    pub(super) param_headers: Mutex<Option<(Id, HeaderPairs)>>,
    /// The holder of the session's token, as verified at its latest request (protected servers).
    pub(super) principal: Mutex<Option<Arc<Principal>>>,
    pub(super) routes: Mutex<Routes>,
    pub(super) standalone: Arc<Stream>,
    /// Counts the standalone GETs held here (sessions shared through a store): only the
    /// latest one's [`keep_holding`] renews the store's records.
    pub(super) standalone_holds: AtomicU64,
    pub(super) next_stream: AtomicU64,
    pub(super) last_active: Mutex<Instant>,
    pub(super) open_connections: AtomicUsize,
    pub(super) closed: AtomicBool,
    pub(super) shared: Weak<Shared>,
    pub(super) store: Arc<dyn EventStore>,
    /// With a session store: `<replica>-`, put before stream names so that the streams of
    /// replicas sharing an event store never share a name. Empty otherwise.
    pub(super) stream_prefix: String,
    /// With a session store: what it holds for this session.
    pub(super) record: Mutex<Option<SessionRecord>>,
    /// Ids of the requests replayed to rebuild this session, whose answers nobody awaits.
    pub(super) replayed_ids: Mutex<HashSet<Id>>,
    /// Whether the application has been given `notifications/initialized` (shared sessions:
    /// the client's may have gone to another replica).
    pub(super) initialized_given: AtomicBool,
    /// Told when the application has answered the replayed `initialize` (a rebuilt session).
    pub(super) replayed_initialize_answered: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// When the session store's expiry of this session was last pushed back.
    pub(super) store_touched: Mutex<Instant>,
    /// With a session store: the server's own requests to the client awaiting an answer, by
    /// the number in the id they went out with.
    pub(super) outbound: Mutex<Outbound>,
    /// The timer of the first event hold, kept between the session's POSTs (see
    /// [`first_message`]).
    pub(super) hold_timer: HoldTimer,
}

pub(super) fn answered_id(message: &Message) -> Option<&Id> {
    match message {
        Message::Response(r) => Some(&r.id),
        Message::Error(e) => e.id.as_ref(),
        _ => None,
    }
}

pub(super) fn set_answered_id(message: &mut Message, id: Id) {
    match message {
        Message::Response(r) => r.id = id,
        Message::Error(e) => e.id = Some(id),
        _ => {}
    }
}

/// How far an ended session is forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Forget {
    /// Here and in the shared stores (DELETE, the application closed it, no shared store).
    Everywhere,
    /// In this replica, and the events of its streams here: idle here, while other replicas
    /// may serve it (the record stays in the session store).
    HereWithEvents,
    /// In this replica only: shutting down (the record and the events stay, so that the
    /// other replicas take the session and its streams up).
    Here,
}

impl Session {
    /// The caller's session among what a lookup `found` for the endpoint (not a legacy
    /// session), bound to the principal of the request whose extensions are `extensions` ([`Session::bind_principal`]); else why not.
    pub(super) fn held(found: Option<Arc<Session>>, extensions: &Extensions) -> Result<Arc<Session>, NotHeld> {
        let session = found.filter(|s| !s.legacy).ok_or(NotHeld::Unknown)?;
        match session.bind_principal(extensions) {
            true => Ok(session),
            false => Err(NotHeld::OtherHolder),
        }
    }

    /// Binds the session to the principal of the request whose extensions are `extensions` (protected servers): the first one is kept,
    /// a later one must be the same holder and replaces it (a refreshed token's scopes and
    /// expiry). `false` for another holder's token.
    pub(super) fn bind_principal(&self, extensions: &Extensions) -> bool {
        let Some(Authenticated(presented)) = extensions.get::<Authenticated>() else { return true };
        let mut principal = self.principal.lock().expect("session lock");
        if principal.as_ref().is_some_and(|held| !held.same_holder(presented)) {
            return false;
        }
        *principal = Some(presented.clone());
        true
    }

    /// Keeps `req` (its head, with the principal of its token) as the HTTP request of each
    /// request in `messages` until it is answered: a handler then sees the request and the
    /// token its own request came with, not the latest ones of its session.
    pub(super) fn hold_requests(&self, head: Parts, messages: &[Message]) {
        if !messages.iter().any(|m| matches!(m, Message::Request(_))) {
            return;
        }
        let principal = head.extensions.get::<Authenticated>().map(|a| a.0.clone());
        // One allocation for the head and its principal, shared by a batch's requests.
        let parts = Arc::new(HttpRequestParts::of(Request::from_parts(head, ()), principal));
        let mut routes = self.routes.lock().expect("session lock");
        for message in messages {
            if let Message::Request(request) = message {
                routes.http_requests.insert(request.id.clone(), parts.clone());
            }
        }
    }

    pub(super) fn version(&self) -> Option<ProtocolVersion> {
        *self.version.lock().expect("session lock")
    }

    pub(super) fn touch(&self) {
        *self.last_active.lock().expect("session lock") = Instant::now();
    }

    /// Pushes back the session store's expiry of this session, at most every quarter of the
    /// idle timeout (in the background: a failure here is retried by a later request).
    pub(super) fn keep_in_store(&self, shared: &Shared) {
        let Some(store) = shared.config.session_store.clone() else { return };
        let ttl = shared.config.session_idle_timeout;
        {
            let mut touched = self.store_touched.lock().expect("session lock");
            let due = bookkeeping::store_touch_due(*touched, Instant::now(), ttl);
            if !due || self.record.lock().expect("session lock").is_none() {
                return;
            }
            *touched = Instant::now();
        }
        let id = self.id.clone();
        crate::transport::task::spawn(async move {
            let _ = store.touch(&id, ttl).await;
        });
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Stateless mode's per-POST sessions are the only ones without an id.
    pub(super) fn is_stateless(&self) -> bool {
        self.id.is_empty() && !self.legacy
    }

    /// A per-POST session serving one 2026-07-28 request: its errors go out with the statuses
    /// the revision gives them.
    pub(super) fn is_per_request(&self) -> bool {
        self.is_stateless() && self.version().is_some_and(|v| !v.has_initialize_handshake())
    }

    /// Hands messages to the application; `false` if the session has ended.
    pub(super) async fn deliver(&self, messages: Vec<Message>) -> bool {
        let Some(tx) = self.incoming.lock().expect("session lock").clone() else { return false };
        for message in messages {
            if tx.send(message).await.is_err() {
                return false;
            }
        }
        true
    }

    /// A new POST's stream, waiting for `pending`; `may_be_json`: answered in one JSON body if
    /// its first message is the response ([`ResponseMode::Auto`](super::config::ResponseMode::Auto)).
    pub(super) fn new_post_stream(&self, pending: Pending, may_be_json: bool) -> Arc<Stream> {
        let n = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let name = format_args!("{}{n}", self.stream_prefix);
        Stream::new(&self.id, name, self.json, pending, may_be_json && !self.json)
    }

    /// Drops a POST stream answered in one JSON body from the streams kept for resumption:
    /// it has no event ids and stored nothing, so nothing can resume it, and keeping it would
    /// push out the resumable streams (and cost every later POST a walk over the 64 kept).
    pub(super) fn forget_stream(&self, stream: &Arc<Stream>) {
        let mut routes = self.routes.lock().expect("session lock");
        // The newest, or nearly: searched from the back.
        if let Some(at) = routes.streams.iter().rposition(|kept| Arc::ptr_eq(kept, stream)) {
            routes.streams.remove(at);
        }
    }

    /// Whether `message` answers a request replayed to rebuild the session (then it is
    /// dropped: the client never asked it here).
    pub(super) fn answers_replayed(&self, message: &Message) -> bool {
        if self.stream_prefix.is_empty() {
            return false;
        }
        let id = match message {
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let Some(id) = id else { return false };
        if !self.replayed_ids.lock().expect("session lock").remove(id) {
            return false;
        }
        if self.initialize_id.lock().expect("session lock").as_ref() == Some(id) {
            if let Some(answered) = self.replayed_initialize_answered.lock().expect("session lock").take() {
                let _ = answered.send(());
            }
        }
        true
    }

    /// Whether this session is shared with other replicas (through a session store).
    pub(super) fn is_shared(&self) -> bool {
        !self.stream_prefix.is_empty()
    }

    /// A shared session whose client's `notifications/initialized` went to another replica:
    /// the first request here (but `ping`) implies it, since a client sends its requests only
    /// after it, so the application is given one first. Without it the server layer would
    /// never count the handshake complete here, and refuse to send its own requests
    /// (elicitation, sampling, `roots/list`) and gated notifications (`list_changed`).
    pub(super) fn imply_initialized(&self, messages: &mut Vec<Message>) {
        if self.initialized_given.load(Ordering::Acquire) {
            return;
        }
        let (mut given, mut implied) = (false, false);
        for message in messages.iter() {
            match message {
                Message::Notification(n) if n.method == "notifications/initialized" => given = true,
                Message::Request(r) if r.method != "ping" && r.method != "initialize" => implied = true,
                _ => {}
            }
        }
        if !given && !implied {
            return;
        }
        if self.initialized_given.swap(true, Ordering::AcqRel) || given {
            return;
        }
        let initialized = jsonrpc::Notification { method: "notifications/initialized".to_owned(), params: None };
        messages.insert(0, Message::Notification(initialized));
    }

    /// Gives a request of the application to the client an id naming this replica, and one
    /// of its `notifications/cancelled` the id the client knows that request by.
    pub(super) fn namespace_outgoing(&self, message: &mut Message) {
        match message {
            Message::Request(request) => {
                let mut outbound = self.outbound.lock().expect("session lock");
                let own = std::mem::replace(&mut request.id, Id::Number(0));
                let n = outbound.issue(own);
                request.id = Id::String(format!("{}{n}", self.stream_prefix));
            }
            Message::Notification(note) if note.method == "notifications/cancelled" => {
                let Some(raw) = note.params.as_ref().and_then(|p| p.to_raw().ok()) else { return };
                let Ok(mut params) = serde_json::from_str::<serde_json::Value>(raw.get()) else { return };
                let Some(own) = params.get("requestId").and_then(|v| serde_json::from_value::<Id>(v.clone()).ok())
                else {
                    return;
                };
                let wire = self.outbound.lock().expect("session lock").number_of(&own);
                if let Some(n) = wire {
                    params["requestId"] = serde_json::Value::String(format!("{}{n}", self.stream_prefix));
                    if let Ok(raw) = serde_json::value::to_raw_value(&params) {
                        note.params = Some(Body::Raw(raw));
                    }
                }
            }
            _ => {}
        }
    }

    /// `answer`, to the request this replica sent as number `n`, under the application's own
    /// id of that request, once: `None` when this session sent no such request, or it was
    /// answered already.
    pub(super) fn restore_answer(&self, mut answer: Message, n: u64) -> Option<Message> {
        let own = self.outbound.lock().expect("session lock").answer(n)?;
        set_answered_id(&mut answer, own);
        Some(answer)
    }

    /// Hands a message for the standalone stream to the replica holding that stream, when
    /// another one does. `false`: it stays here (no other holder, that replica is gone, or
    /// the store cannot be reached).
    pub(super) async fn relay_to_stream_holder(&self, data: &Bytes) -> bool {
        let Some(shared) = self.shared.upgrade() else { return false };
        let Some(store) = shared.config.session_store.clone() else { return false };
        let holder = match store.stream_holder(&self.id).await {
            Ok(Some(holder)) if holder != shared.replica => holder,
            Ok(_) => return false,
            Err(e) => {
                tracing::warn!(error = %e, "kept a message for the standalone stream here: {e}");
                return false;
            }
        };
        let relayed = Relayed { session: self.id.clone(), kind: RelayKind::Standalone, message: data.clone() };
        match store.relay(&holder, &relayed).await {
            Ok(true) => {
                tracing::info!(replica = %shared.replica, holder = %holder, "relayed a message to the replica holding the standalone stream");
                true
            }
            Ok(false) => {
                tracing::warn!(replica = %shared.replica, holder = %holder, "kept a message for the standalone stream here: its holder is gone");
                false
            }
            Err(e) => {
                tracing::warn!(replica = %shared.replica, error = %e, "kept a message for the standalone stream here: {e}");
                false
            }
        }
    }

    /// Routes one outgoing message to its stream. See the module docs.
    pub(super) async fn route(&self, mut message: Message, related: Option<&Id>) -> Result<(), TransportError> {
        if self.is_closed() {
            return Err(TransportError::Closed);
        }
        if let Message::Response(response) = &message {
            let is_init = self.initialize_id.lock().expect("session lock").as_ref() == Some(&response.id);
            if is_init {
                if let Some(v) = response_version(response) {
                    *self.version.lock().expect("session lock") = Some(v);
                }
            }
        }
        if self.answers_replayed(&message) {
            return Ok(());
        }
        if self.is_shared() {
            self.namespace_outgoing(&mut message);
        }
        let mut data = crate::transport::sse_http::buffers::BODIES.encode(&message);
        let max_frame = self.shared.upgrade().map_or(usize::MAX, |s| s.config.limits.max_frame_bytes);
        let message = match crate::transport::oversized_answer(&message, data.len(), max_frame) {
            Some(answer) => {
                data = crate::transport::sse_http::buffers::BODIES.encode(&answer);
                answer
            }
            None => message,
        };
        let answered = answered_id(&message).cloned();
        // Read only where it decides: a message that answers nothing, outside a legacy
        // session, with no related request named.
        let token = match (&answered, self.legacy, related) {
            (None, false, None) => progress_token(&message),
            _ => None,
        };
        let destination = self.routes.lock().expect("session lock").destination(
            answered,
            related,
            token.as_deref(),
            self.legacy,
            self.is_stateless(),
        );
        let (stream, completes, unrelated) = match destination {
            Destination::Answer(stream, id) => (stream, Some(id), false),
            Destination::Related(stream) => (stream, None, false),
            Destination::Unrelated(stream) => (stream.unwrap_or_else(|| self.standalone.clone()), None, true),
            Destination::Standalone => (self.standalone.clone(), None, false),
        };
        // Shared sessions: the standalone stream may be open on another replica; it is
        // preferred there as it is here.
        if unrelated
            && self.is_shared()
            && !self.standalone.has_live().await
            && self.relay_to_stream_holder(&data).await
        {
            return Ok(());
        }
        let stream = if completes.is_none() && !stream.standalone && self.standalone.has_live().await {
            // A message unrelated to a request prefers the standalone stream when one is open.
            if related.is_none() && token.is_none() {
                self.standalone.clone()
            } else {
                stream
            }
        } else {
            stream
        };
        if !stream.push(&*self.store, data.clone(), completes.as_ref()).await && !stream.standalone {
            // The POST stream has finished meanwhile: the message goes to the standalone stream.
            self.standalone.push(&*self.store, data, None).await;
        }
        Ok(())
    }

    /// Ends the session: the application's `recv` sees the end, every stream ends, the id is
    /// forgotten (also by the shared stores).
    pub(super) async fn close(&self) {
        self.end(Forget::Everywhere).await;
    }

    /// Ends the session here; with [`Forget::Everywhere`] the session store's record and the
    /// stored events go too.
    pub(super) async fn end(&self, forget: Forget) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.caps.lock().expect("session lock").take();
        self.incoming.lock().expect("session lock").take();
        let streams: Vec<Arc<Stream>> = {
            let mut routes = self.routes.lock().expect("session lock");
            routes.requests.clear();
            routes.progress.clear();
            routes.streams.drain(..).collect()
        };
        for stream in streams.iter().chain(std::iter::once(&self.standalone)) {
            stream.finish().await;
            if forget != Forget::Here {
                self.store.remove(&stream.key);
            }
        }
        if let Some(shared) = self.shared.upgrade() {
            shared.sessions.lock().expect("sessions lock").remove(&self.id);
            let record = self.record.lock().expect("session lock").take();
            if let (Forget::Everywhere, Some(store), Some(_)) = (forget, &shared.config.session_store, record) {
                let (store, id) = (store.clone(), self.id.clone());
                crate::transport::task::spawn(async move {
                    let _ = store.remove(&id).await;
                });
            }
        }
    }
}

pub(super) fn response_version(response: &jsonrpc::Response) -> Option<ProtocolVersion> {
    #[derive(serde::Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let raw = response.result.to_raw().ok()?;
    serde_json::from_str::<Init>(raw.get()).ok()?.protocol_version.parse().ok()
}

/// The `progressToken` of a request's `params._meta`, or of a progress notification's params,
/// as JSON text.
pub(super) fn progress_token(message: &Message) -> Option<String> {
    match message {
        Message::Request(r) => params_progress_token(r.params.as_ref()?, true),
        Message::Notification(n) if n.method == "notifications/progress" => {
            params_progress_token(n.params.as_ref()?, false)
        }
        _ => None,
    }
}

/// The progress token in a request's `params._meta` (`in_meta`) or a progress notification's
/// `params`, as JSON text.
pub(super) fn params_progress_token(params: &Body, in_meta: bool) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "progressToken")]
        progress_token: Option<serde_json::Value>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
        #[serde(rename = "progressToken")]
        progress_token: Option<serde_json::Value>,
    }
    if let Some(call) = params.typed_as::<CallToolRequestParams>() {
        let token = call.meta.as_ref()?.progress_token.as_ref()?;
        return serde_json::to_string(token).ok();
    }
    let raw = params.to_raw().ok()?;
    // Most requests carry no token: a substring search (SIMD) rules that out without parsing
    // the params, which for a large tool call means scanning all of its arguments. A key
    // could be written with `\u` escapes; then the params are parsed.
    let text = raw.get().as_bytes();
    if memchr::memmem::find(text, b"\"progressToken\"").is_none() && memchr::memmem::find(text, b"\\u").is_none() {
        return None;
    }
    let params: Params = serde_json::from_str(raw.get()).ok()?;
    let token = if in_meta { params.meta?.progress_token } else { params.progress_token };
    token.map(|t| t.to_string())
}

/// The application's end of one MCP session over HTTP.
///
/// `recv` yields what the client POSTed, in order; `None` once the session ended (DELETE,
/// idle expiry, server shutdown). `send` routes by message (see the module docs);
/// [`ServerTransport::send_related`] states the related request explicitly. `close` ends the
/// session.
///
/// # Cancel safety
/// As for [`Transport`]: `recv` and `send` are cancel safe.
pub struct ServerTransport {
    pub(super) session: Arc<Session>,
    pub(super) incoming: tokio::sync::Mutex<mpsc::Receiver<Message>>,
}

impl std::fmt::Debug for ServerTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTransport").field("legacy", &self.session.legacy).finish_non_exhaustive()
    }
}

impl ServerTransport {
    /// The protocol version agreed in `initialize`, once the application answered it.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.session.version()
    }

    /// Whether this session came over the legacy HTTP+SSE transport.
    pub fn is_legacy(&self) -> bool {
        self.session.legacy
    }

    /// Sends `message` on the stream of the client's request `request` (if that stream is
    /// still open; otherwise as [`Transport::send`] would).
    ///
    /// # Errors
    /// [`TransportError::Closed`] once the session has ended.
    pub async fn send_related(&self, message: Message, request: &Id) -> Result<(), TransportError> {
        self.session.route(message, Some(request)).await
    }
}

impl Transport for ServerTransport {
    fn is_stateless(&self) -> bool {
        self.session.is_stateless()
    }

    /// No: the input ends with the session, and an ended session's streams are gone.
    fn outlives_its_input(&self) -> bool {
        false
    }

    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.session.route(message, None).await
    }

    async fn send_related(&self, message: Message, related: &Id) -> Result<(), TransportError> {
        self.session.route(message, Some(related)).await
    }

    fn principal(&self, request: &Id) -> Option<Arc<Principal>> {
        let held = self.session.routes.lock().expect("session lock").http_requests.get(request).cloned();
        held.and_then(|parts| parts.principal_arc())
            .or_else(|| self.session.principal.lock().expect("session lock").clone())
    }

    fn network_transport(&self) -> Option<&'static str> {
        Some("tcp")
    }

    fn session_id(&self) -> Option<String> {
        (!self.session.is_stateless()).then(|| self.session.id.clone())
    }

    fn http_request(&self, request: &Id) -> Option<Arc<HttpRequestParts>> {
        self.session.routes.lock().expect("session lock").http_requests.get(request).cloned()
    }

    fn param_headers(&self, request: &Id) -> Option<Vec<(String, String)>> {
        let stored = self.session.param_headers.lock().expect("session lock");
        stored.as_ref().filter(|(id, _)| id == request).map(|(_, headers)| headers.clone())
    }

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        Ok(self.incoming.lock().await.recv().await)
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.session.close().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(name: &str, json: bool, waiting: &[i64]) -> Arc<Stream> {
        Stream::new("s", format_args!("{name}"), json, waiting.iter().map(|n| Id::Number(*n)).collect(), false)
    }

    /// Routes of requests 1 and 2 on SSE stream "1" (2 with progress token `"p"`), request 3
    /// on JSON stream "2", and the finished SSE stream "0" kept for resumption.
    fn routes() -> (Routes, [Arc<Stream>; 3]) {
        let (done, sse, json) = (stream("0", false, &[]), stream("1", false, &[1, 2]), stream("2", true, &[3]));
        let mut routes = Routes::default();
        routes.streams.extend([done.clone(), sse.clone(), json.clone()]);
        routes.requests.insert(Id::Number(1), sse.clone());
        routes.requests.insert(Id::Number(2), sse.clone());
        routes.requests.insert(Id::Number(3), json.clone());
        routes.progress.insert(r#""p""#.to_owned(), Id::Number(2));
        (routes, [done, sse, json])
    }

    fn name(destination: &Destination) -> String {
        match destination {
            Destination::Answer(stream, id) => format!("answer {id:?} on {}", stream.name()),
            Destination::Related(stream) => format!("related on {}", stream.name()),
            Destination::Unrelated(Some(stream)) => format!("unrelated on {}", stream.name()),
            Destination::Unrelated(None) => "unrelated on the standalone stream".into(),
            Destination::Standalone => "standalone".into(),
        }
    }

    #[test]
    fn answers_go_to_their_requests_stream_once_and_forget_the_request() {
        let (mut routes, _) = routes();
        let answer = routes.destination(Some(Id::Number(2)), None, None, false, false);
        assert_eq!(name(&answer), "answer Number(2) on 1");
        assert!(routes.progress.is_empty(), "its progress token is forgotten");
        assert!(!routes.requests.contains_key(&Id::Number(2)));
        // Answered already, or never asked: the standalone stream.
        assert_eq!(name(&routes.destination(Some(Id::Number(2)), None, None, false, false)), "standalone");
        assert_eq!(name(&routes.destination(Some(Id::Number(9)), None, None, false, false)), "standalone");
        // The JSON stream's answer goes to it.
        assert_eq!(name(&routes.destination(Some(Id::Number(3)), None, None, false, false)), "answer Number(3) on 2");
    }

    #[test]
    fn other_messages_follow_their_request_or_its_progress_token_else_the_newest_waiting_sse_stream() {
        let (mut routes, [_, sse, _]) = routes();
        let one = Id::Number(1);
        assert_eq!(name(&routes.destination(None, Some(&one), None, false, false)), "related on 1");
        assert_eq!(name(&routes.destination(None, None, Some(r#""p""#), false, false)), "related on 1");
        // The named request wins over a token, even one naming another request.
        assert_eq!(name(&routes.destination(None, Some(&Id::Number(3)), Some(r#""p""#), false, true)), "related on 2");
        // A request answered in one JSON body: its stream carries responses only, but in
        // stateless mode, where nothing else could carry the message.
        let three = Id::Number(3);
        assert_eq!(name(&routes.destination(None, Some(&three), None, false, false)), "unrelated on 1");
        assert_eq!(name(&routes.destination(None, Some(&three), None, false, true)), "related on 2");
        // Unrelated: the newest SSE stream still waiting (not the finished one, not JSON).
        assert_eq!(name(&routes.destination(None, None, Some(r#""q""#), false, false)), "unrelated on 1");
        assert_eq!(name(&routes.destination(None, Some(&Id::Number(9)), None, false, false)), "unrelated on 1");
        // Once stream "1" has answered all it carries, nothing waits but the JSON stream.
        routes.requests.retain(|_, stream| !Arc::ptr_eq(stream, &sse));
        assert_eq!(name(&routes.destination(None, None, None, false, false)), "unrelated on the standalone stream");
        // A legacy session has one stream.
        assert_eq!(name(&routes.destination(None, Some(&three), None, true, false)), "standalone");
    }
}
