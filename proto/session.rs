//! The session core: request ids, the pending-request table, response routing, the lifecycle
//! gate, cancellation, progress routing and timeouts — sans IO and deterministic, in the style
//! of quinn-proto.
//!
//! One [`Session`] type serves both ends; its [`Role`] says which end it is (only the handshake
//! differs). Work goes in through `handle_*` and the application calls ([`Session::send_request`],
//! [`Session::respond`], [`Session::cancel`] …), and comes out through [`Session::poll_transmit`]
//! (messages to write) and [`Session::poll_event`] (things for the application). Time is passed
//! in as an [`Instant`]: the core never reads a clock, spawns nothing and blocks on nothing, so a
//! test can run two sessions against each other on a virtual clock.
//!
//! What it does:
//! - allocates integer ids for outgoing requests, from 0, never reused within a session;
//! - routes responses to their pending request; a response to an id it never issued is dropped
//!   and reported as [`Event::Protocol`], a late response to a cancelled or timed-out request is
//!   dropped quietly (the last [`SessionLimits::max_remembered_abandoned`] such ids are remembered);
//! - tracks incoming requests in flight: a duplicate id is answered with -32600, a response to
//!   an id no longer in flight (cancelled by the peer) is not sent;
//! - cancellation both ways (`notifications/cancelled`); `initialize` is never cancelled; a
//!   server's cancellation of our `subscriptions/listen` (2026-07-28) ends it with -32603;
//! - routes `notifications/progress` to the request that owns the token (`_meta.progressToken`);
//! - the 2024-11-05 … 2025-11-25 lifecycle (`initialize`, `notifications/initialized`), or no
//!   handshake at all in [`Mode::Stateless`] (2026-07-28); a session that has not started a
//!   handshake can change mode ([`Session::set_mode`]): a dual-era client probes statelessly
//!   with `server/discover`, then falls back to the handshake and its gate;
//! - timeouts: [`Session::poll_timeout`] and [`Session::handle_timeout`].
//!
//! What it does not do: IO, framing, typed MCP payloads (it reads only `_meta.progressToken`,
//! the params of `notifications/cancelled` and `notifications/progress`, and `protocolVersion`
//! of an `initialize` result, with private structs), version negotiation (the layer above picks
//! the version with [`ProtocolVersion::server_counter_offer`] / [`ProtocolVersion::client_accepts`];
//! the core records the `protocolVersion` of the `initialize` result that passes through it),
//! answering `ping` or unknown methods (-32601 is the layer above's business), or checking which
//! side may send which method.
//!
//! # The lifecycle gate
//! Until the handshake completes, the gate covers the *known* handshake-era MCP methods other
//! than `initialize` and `ping` (`tools/call`, `sampling/createMessage`, the `*/list_changed`
//! notifications … see `GATED_REQUESTS` and `GATED_NOTIFICATIONS`). Unknown methods, and
//! `server/discover` (which the Python SDK 2.x client sends before `initialize` and which must
//! reach the layer above to be answered -32601), always pass. Gated incoming requests are
//! answered -32600 by the core; gated outgoing ones are refused with
//! [`SessionError::NotInitialized`]. Incoming notifications are never gated (they need no answer).
//!
//! A server accepts gated requests once it has answered `initialize`, before
//! `notifications/initialized` arrives: over Streamable HTTP the two may be delivered in either
//! order (the TypeScript SDK is just as lenient). A client accepts them only after it has sent
//! `notifications/initialized` ([`Session::initialized`]).
//!
//! # Bounds
//! Outgoing requests in flight are capped by [`SessionLimits::max_outgoing_in_flight`]
//! ([`SessionError::TooManyInFlight`] past it; a driver following [`SessionLimits::when_full`] makes
//! callers wait for a slot instead of asking), incoming ones by
//! [`SessionLimits::max_incoming_in_flight`] (answered -32603 past it). The transmit and event queues
//! are not capped by themselves: each call queues at most one message and one event, except
//! [`Session::handle_timeout`], which queues at most one of each per expired request (so at most
//! `max_outgoing_in_flight`). A driver that drains both queues after each call keeps them that
//! small.
//!
//! Spec (2025-11-25): `basic/lifecycle`, `basic/utilities/cancellation`,
//! `basic/utilities/progress`, `basic/utilities/ping`.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Number;

use crate::proto::envelope;
use crate::proto::jsonrpc::{
    Body, ErrorCode, ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response,
};
use crate::proto::version::ProtocolVersion;

const INITIALIZE: &str = "initialize";
/// The long-lived 2026-07-28 request a server may end with `notifications/cancelled`.
const LISTEN: &str = "subscriptions/listen";
const INITIALIZED: &str = "notifications/initialized";
const CANCELLED: &str = "notifications/cancelled";
const PROGRESS: &str = "notifications/progress";

/// The reason sent in `notifications/cancelled` when a request times out.
pub const TIMEOUT_REASON: &str = "request timed out";

/// Requests of the handshake era that may not flow before initialization completes
/// (everything but `initialize` and `ping`), in either direction.
const GATED_REQUESTS: &[&str] = &[
    "completion/complete",
    "elicitation/create",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/templates/list",
    "resources/unsubscribe",
    "roots/list",
    "sampling/createMessage",
    "tasks/cancel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tools/call",
    "tools/list",
];

/// Notifications we refuse to send before initialization completes (logging, progress and
/// cancellation may flow; `notifications/initialized` has its own method).
const GATED_NOTIFICATIONS: &[&str] = &[
    "notifications/elicitation/complete",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/tasks/status",
    "notifications/tools/list_changed",
];

/// Which end of the connection a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sends `initialize` and `notifications/initialized`.
    Client,
    /// Answers `initialize`.
    Server,
}

/// Whether the session starts with a handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 2024-11-05 … 2025-11-25: `initialize`, then `notifications/initialized`.
    Handshake,
    /// 2026-07-28: no handshake, every request is allowed from the start.
    Stateless,
}

/// Where a session is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Nothing sent or received yet (or the last `initialize` failed).
    AwaitingInitialize,
    /// `initialize` sent (client) or received (server); `notifications/initialized` not yet.
    Initializing,
    /// The handshake is complete.
    Initialized,
    /// [`Mode::Stateless`]: no handshake, always operational.
    Stateless,
    /// [`Session::close`] was called.
    Closed,
}

/// What happens to a request past an in-flight cap ([`SessionLimits::when_full`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WhenFull {
    /// It waits for a slot. Outgoing: the driver (`peer`) holds the call back until an earlier
    /// request is answered, within the call's own timeout, and dropping it stops the wait.
    /// Incoming: the driver holds the peer's request unread by the core (and, past a small
    /// queue, stops reading the connection) until one of ours is answered. The core itself
    /// cannot wait: asked past a cap, it still refuses.
    #[default]
    Wait,
    /// It is refused at once: an outgoing call fails with [`SessionError::TooManyInFlight`], an
    /// incoming request is answered -32603.
    Refuse,
}

/// The caps of one session. Defaults: 1024 each; a request past the outgoing cap waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Outgoing requests awaiting a response; past it `send_request` fails (and a driver
    /// honouring [`SessionLimits::when_full`] waits before it asks).
    pub max_outgoing_in_flight: usize,
    /// What a request past either cap gets, ours or the peer's: a wait (the default) or a
    /// refusal.
    pub when_full: WhenFull,
    /// Incoming requests awaiting our response; past it the core answers -32603 (and a driver
    /// honouring [`SessionLimits::when_full`] holds them back before it hands them over).
    pub max_incoming_in_flight: usize,
    /// Cancelled or timed-out request ids remembered so their late responses are dropped
    /// quietly; past it the oldest is forgotten (its late response is then reported as unknown).
    pub max_remembered_abandoned: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_outgoing_in_flight: 1024,
            when_full: WhenFull::Wait,
            max_incoming_in_flight: 1024,
            max_remembered_abandoned: 1024,
        }
    }
}

/// Per-request options for [`Session::send_request_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestOptions {
    /// Time without a response after which the request times out; `None`: never.
    pub timeout: Option<Duration>,
    /// Each routed progress notification restarts `timeout` (as the TypeScript SDK's
    /// `resetTimeoutOnProgress`).
    pub reset_timeout_on_progress: bool,
    /// A deadline from sending that progress cannot extend (the TypeScript SDK's `maxTotalTimeout`).
    pub max_total_timeout: Option<Duration>,
    /// The progress token the params carry. Needed for typed params, which the core does not
    /// serialize; raw params are probed for `_meta.progressToken` when this is `None`.
    pub progress_token: Option<Id>,
}

/// Something the application must know about.
#[derive(Debug, Clone)]
pub enum Event {
    /// An incoming request; answer it with [`Session::respond`] or [`Session::respond_error`].
    Request(Request),
    /// An incoming notification the core does not consume.
    Notification(Notification),
    /// The successful response to one of our requests.
    Response {
        /// Our request's id.
        id: Id,
        /// Our request's method (borrowed when it was sent as a `&'static str`).
        method: Cow<'static, str>,
        /// The result as written.
        result: Body,
    },
    /// The error response to one of our requests.
    ErrorResponse {
        /// Our request's id.
        id: Id,
        /// Our request's method (borrowed when it was sent as a `&'static str`).
        method: Cow<'static, str>,
        /// What the peer said.
        error: ErrorObject,
    },
    /// The peer cancelled one of its requests; the core will not send a response to it.
    Cancelled {
        /// The peer's request id.
        id: Id,
        /// The peer's reason, if any.
        reason: Option<String>,
    },
    /// Progress on one of our requests.
    Progress {
        /// Our request's id.
        request_id: Id,
        /// Progress so far, as written.
        progress: Number,
        /// The total, if known.
        total: Option<Number>,
        /// A human-readable message.
        message: Option<String>,
    },
    /// One of our requests got no response in time; `notifications/cancelled` was sent for it
    /// (except for `initialize`, which is never cancelled).
    TimedOut {
        /// Our request's id.
        id: Id,
        /// Our request's method (borrowed when it was sent as a `&'static str`).
        method: Cow<'static, str>,
    },
    /// Server only: `notifications/initialized` arrived, the handshake is complete.
    Initialized,
    /// The peer broke a rule; the session goes on.
    Protocol(ProtocolEvent),
}

/// A protocol violation by the peer that the core absorbed. One variant per violation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProtocolEvent {
    /// A response to an id we never issued (or answered already); dropped.
    UnknownResponse {
        /// The id it carried.
        id: Id,
    },
    /// An error response without an id; it cannot be routed.
    ErrorWithoutId {
        /// What the peer said.
        error: ErrorObject,
    },
    /// A request reused the id of one still in flight; answered -32600.
    DuplicateRequest {
        /// The reused id.
        id: Id,
        /// The second request's method.
        method: String,
    },
    /// A gated request arrived before initialization completed; answered -32600.
    BeforeInitialized {
        /// The request's id.
        id: Id,
        /// Its method.
        method: String,
    },
    /// A second `initialize`; answered -32600.
    RepeatedInitialize {
        /// The request's id.
        id: Id,
    },
    /// More requests in flight than [`SessionLimits::max_incoming_in_flight`]; answered -32603.
    TooManyRequests {
        /// The request's id.
        id: Id,
        /// Its method.
        method: String,
    },
    /// `notifications/cancelled` named an `initialize` request; ignored.
    CancelledInitialize {
        /// The `initialize` request's id.
        id: Id,
    },
    /// `notifications/progress` for a token no request of ours holds (or no longer holds); dropped.
    UnknownProgressToken {
        /// The token.
        token: Id,
    },
    /// `notifications/initialized` before `initialize` was answered, or twice; ignored.
    UnexpectedInitialized,
    /// A notification the core reads had params it could not read; dropped.
    InvalidNotification {
        /// The notification's method.
        method: String,
        /// Why its params could not be read.
        error: String,
    },
}

impl fmt::Display for ProtocolEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolEvent::UnknownResponse { id } => write!(f, "response to unknown request id {id}"),
            ProtocolEvent::ErrorWithoutId { error } => write!(f, "error response without an id: {error}"),
            ProtocolEvent::DuplicateRequest { id, method } => {
                write!(f, "{method} reused request id {id} while it is still in flight")
            }
            ProtocolEvent::BeforeInitialized { id, method } => {
                write!(f, "{method} (id {id}) before initialization completed")
            }
            ProtocolEvent::RepeatedInitialize { id } => write!(f, "second initialize (id {id})"),
            ProtocolEvent::TooManyRequests { id, method } => {
                write!(f, "{method} (id {id}) past the limit of requests in flight")
            }
            ProtocolEvent::CancelledInitialize { id } => write!(f, "cancellation of initialize (id {id}) ignored"),
            ProtocolEvent::UnknownProgressToken { token } => write!(f, "progress for unknown token {token}"),
            ProtocolEvent::UnexpectedInitialized => f.write_str("unexpected notifications/initialized"),
            ProtocolEvent::InvalidNotification { method, error } => write!(f, "invalid {method}: {error}"),
        }
    }
}

/// Why the core refused an application call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SessionError {
    /// The session is closed.
    Closed,
    /// [`SessionLimits::max_outgoing_in_flight`] requests are already awaiting a response.
    TooManyInFlight {
        /// The limit.
        limit: usize,
    },
    /// The method may not be sent before initialization completes.
    NotInitialized {
        /// The refused method.
        method: String,
    },
    /// `initialize` was already sent.
    InitializeAgain,
    /// `initialize` is never cancelled.
    InitializeNotCancellable,
    /// No request of ours with this id is awaiting a response.
    NotPending(Id),
    /// Another request in flight already uses this progress token.
    DuplicateProgressToken(Id),
    /// The core sends this method itself (through [`Session::initialized`] or [`Session::cancel`]).
    Reserved {
        /// The refused method.
        method: String,
    },
    /// `notifications/initialized` before a successful `initialize` response, or twice.
    InitializeNotAnswered,
    /// Only a client sends `notifications/initialized`.
    NotAClient,
    /// A stateless session has no handshake.
    NoHandshake,
    /// The mode can change only before a handshake starts (see [`Session::set_mode`]).
    ModeFixed,
    /// Every integer id was used (after 2^63 requests).
    IdsExhausted,
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Closed => f.write_str("session closed"),
            SessionError::TooManyInFlight { limit } => write!(f, "too many requests in flight (limit {limit})"),
            SessionError::NotInitialized { method } => {
                write!(f, "{method} may not be sent before initialization completes")
            }
            SessionError::InitializeAgain => f.write_str("initialize was already sent"),
            SessionError::InitializeNotCancellable => f.write_str("initialize cannot be cancelled"),
            SessionError::NotPending(id) => write!(f, "no request with id {id} is pending"),
            SessionError::DuplicateProgressToken(t) => write!(f, "progress token {t} is already in use"),
            SessionError::Reserved { method } => write!(f, "{method} is sent by the session core itself"),
            SessionError::InitializeNotAnswered => {
                f.write_str("notifications/initialized needs a successful initialize response first")
            }
            SessionError::NotAClient => f.write_str("only a client sends notifications/initialized"),
            SessionError::NoHandshake => f.write_str("a stateless session has no handshake"),
            SessionError::ModeFixed => f.write_str("the session mode cannot change once a handshake has started"),
            SessionError::IdsExhausted => f.write_str("request ids exhausted"),
        }
    }
}

impl std::error::Error for SessionError {}

/// `params` of `notifications/cancelled` (`requestId` is optional since 2025-11-25, for tasks).
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request_id: Option<Id>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// `params` of `notifications/progress`, the members the core reads.
#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProgressParams {
    progress_token: Id,
    progress: Number,
    #[serde(default)]
    total: Option<Number>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct MetaProbe {
    #[serde(rename = "_meta", default)]
    meta: Option<TokenProbe>,
}

#[derive(Deserialize)]
struct TokenProbe {
    #[serde(rename = "progressToken", default)]
    progress_token: Option<Id>,
}

#[derive(Deserialize)]
struct VersionProbe {
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
}

/// `params._meta.progressToken`, if raw params carry a readable one. Typed params are not
/// serialized to look: their sender names the token in [`RequestOptions::progress_token`].
fn progress_token(params: Option<&Body>) -> Option<Id> {
    let text = params?.as_raw()?.get();
    if !text.contains("progressToken") {
        return None;
    }
    serde_json::from_str::<MetaProbe>(text).ok()?.meta?.progress_token
}

fn result_version(result: &Body) -> Option<ProtocolVersion> {
    let raw = result.to_raw().ok()?;
    serde_json::from_str::<VersionProbe>(raw.get()).ok()?.protocol_version.parse().ok()
}

/// Whether an incoming request in flight is `initialize`.
#[derive(Debug, Clone, Copy)]
struct IsInitialize(bool);

/// One of our requests awaiting a response.
#[derive(Debug)]
struct Pending {
    /// A method sent as a `&'static str` (every method the client layer sends) is not copied.
    method: Cow<'static, str>,
    token: Option<Id>,
    /// How many messages the peer had sent when this went out (see `on_error_without_id`).
    after: u64,
    sent: Instant,
    deadline: Option<Instant>,
    options: RequestOptions,
}

/// The state of one MCP session. See the module docs.
#[derive(Debug)]
pub struct Session {
    role: Role,
    mode: Mode,
    state: State,
    limits: SessionLimits,
    version: Option<ProtocolVersion>,
    /// Handshake: the `initialize` result passed through (received by a client, sent by a server).
    initialize_answered: bool,
    next_id: i64,
    pending: BTreeMap<i64, Pending>,
    deadlines: BTreeSet<(Instant, i64)>,
    tokens: HashMap<Id, i64>,
    abandoned: BTreeSet<i64>,
    /// Incoming requests in flight, and whether each is `initialize` (all the core asks of
    /// their methods: a copy of each method's name would cost an allocation per request).
    incoming: HashMap<Id, IsInitialize>,
    /// Messages received from the peer so far.
    received: u64,
    transmit: VecDeque<Message>,
    events: VecDeque<Event>,
}

impl Session {
    /// A new session. A stateless session records [`ProtocolVersion::V2026_07_28`].
    pub fn new(role: Role, mode: Mode, limits: SessionLimits) -> Session {
        let (state, version) = match mode {
            Mode::Handshake => (State::AwaitingInitialize, None),
            Mode::Stateless => (State::Stateless, Some(ProtocolVersion::V2026_07_28)),
        };
        Session {
            role,
            mode,
            state,
            limits,
            version,
            initialize_answered: false,
            next_id: 0,
            pending: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            tokens: HashMap::new(),
            abandoned: BTreeSet::new(),
            incoming: HashMap::new(),
            received: 0,
            transmit: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// Switches the session to `mode`, as if it had been made in it: [`Mode::Handshake`] puts
    /// the lifecycle gate back ([`State::AwaitingInitialize`], no version), [`Mode::Stateless`]
    /// lifts it (2026-07-28). Requests in flight stay pending. This is how a dual-era client
    /// falls back to `initialize` after a `server/discover` probe the server did not take.
    ///
    /// # Errors
    /// [`SessionError::Closed`]; [`SessionError::ModeFixed`] once a handshake has started
    /// (`initialize` sent or received): its outcome decides the session from then on.
    pub fn set_mode(&mut self, mode: Mode) -> Result<(), SessionError> {
        match self.state {
            State::Closed => return Err(SessionError::Closed),
            State::Initializing | State::Initialized => return Err(SessionError::ModeFixed),
            State::AwaitingInitialize | State::Stateless => {}
        }
        let (state, version) = match mode {
            Mode::Handshake => (State::AwaitingInitialize, None),
            Mode::Stateless => (State::Stateless, Some(ProtocolVersion::V2026_07_28)),
        };
        self.mode = mode;
        self.state = state;
        self.version = version;
        self.initialize_answered = false;
        Ok(())
    }

    /// Whether the session has a handshake (and its gate) or is stateless.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Which end this session is.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Where the lifecycle is.
    pub fn state(&self) -> State {
        self.state
    }

    /// The `protocolVersion` of the successful `initialize` result (or 2026-07-28 when stateless);
    /// `None` before, or when the result named a version this crate does not know.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.version
    }

    /// Our requests awaiting a response.
    pub fn outgoing_in_flight(&self) -> usize {
        self.pending.len()
    }

    /// The peer's requests awaiting our response.
    pub fn incoming_in_flight(&self) -> usize {
        self.incoming.len()
    }

    fn operational(&self) -> bool {
        matches!(self.state, State::Initialized | State::Stateless)
    }

    /// Sends a request with an optional timeout; returns its id.
    ///
    /// # Errors
    /// See [`Session::send_request_with`].
    pub fn send_request(
        &mut self,
        method: impl Into<Cow<'static, str>>,
        params: Option<Body>,
        now: Instant,
        timeout: Option<Duration>,
    ) -> Result<Id, SessionError> {
        self.send_request_with(method, params, now, RequestOptions { timeout, ..RequestOptions::default() })
    }

    /// Sends a request; returns its id. A `params._meta.progressToken` makes incoming progress
    /// with that token route to this request.
    ///
    /// # Errors
    /// [`SessionError::Closed`]; [`SessionError::NotInitialized`] for a gated method before the
    /// handshake completes; [`SessionError::InitializeAgain`]; [`SessionError::TooManyInFlight`];
    /// [`SessionError::DuplicateProgressToken`]; [`SessionError::IdsExhausted`].
    pub fn send_request_with(
        &mut self,
        method: impl Into<Cow<'static, str>>,
        params: Option<Body>,
        now: Instant,
        options: RequestOptions,
    ) -> Result<Id, SessionError> {
        let method = method.into();
        if self.state == State::Closed {
            return Err(SessionError::Closed);
        }
        let client_initialize = self.mode == Mode::Handshake && self.role == Role::Client && method == INITIALIZE;
        if client_initialize && self.state != State::AwaitingInitialize {
            return Err(SessionError::InitializeAgain);
        }
        if self.mode == Mode::Handshake && !self.operational() && GATED_REQUESTS.contains(&&*method) {
            return Err(SessionError::NotInitialized { method: method.into_owned() });
        }
        if self.pending.len() >= self.limits.max_outgoing_in_flight {
            return Err(SessionError::TooManyInFlight { limit: self.limits.max_outgoing_in_flight });
        }
        let token = options.progress_token.clone().or_else(|| progress_token(params.as_ref()));
        if let Some(t) = token.as_ref().filter(|t| self.tokens.contains_key(t)) {
            return Err(SessionError::DuplicateProgressToken(t.clone()));
        }
        let n = self.next_id;
        self.next_id = n.checked_add(1).ok_or(SessionError::IdsExhausted)?;
        let deadline = options.timeout.and_then(|t| now.checked_add(t));
        let deadline = min_deadline(deadline, options.max_total_timeout.and_then(|t| now.checked_add(t)));
        if let Some(d) = deadline {
            self.deadlines.insert((d, n));
        }
        if let Some(t) = &token {
            self.tokens.insert(t.clone(), n);
        }
        if client_initialize {
            self.state = State::Initializing;
            self.initialize_answered = false;
        }
        self.transmit.push_back(Message::Request(Request {
            id: Id::Number(n),
            method: String::from(&*method),
            params,
        }));
        self.pending.insert(n, Pending { method, token, after: self.received, sent: now, deadline, options });
        Ok(Id::Number(n))
    }

    /// Sends a notification.
    ///
    /// # Errors
    /// [`SessionError::Closed`]; [`SessionError::Reserved`] for `notifications/initialized` and
    /// `notifications/cancelled`; [`SessionError::NotInitialized`] for a gated notification
    /// (e.g. `notifications/tools/list_changed`) before the handshake completes.
    pub fn notify(&mut self, method: impl Into<String>, params: Option<Body>) -> Result<(), SessionError> {
        let method = method.into();
        if self.state == State::Closed {
            return Err(SessionError::Closed);
        }
        if method == INITIALIZED || method == CANCELLED {
            return Err(SessionError::Reserved { method });
        }
        // A notification of a 2026-07-28 `subscriptions/listen` stream (its `_meta` names the
        // subscription) belongs to a request that needed no handshake.
        if self.mode == Mode::Handshake
            && !self.operational()
            && GATED_NOTIFICATIONS.contains(&method.as_str())
            && !envelope::names_subscription(params.as_ref())
        {
            return Err(SessionError::NotInitialized { method });
        }
        self.transmit.push_back(Message::Notification(Notification { method, params }));
        Ok(())
    }

    /// Client: sends `notifications/initialized` after a successful `initialize` response,
    /// completing the handshake.
    ///
    /// # Errors
    /// [`SessionError::Closed`], [`SessionError::NoHandshake`], [`SessionError::NotAClient`],
    /// [`SessionError::InitializeNotAnswered`].
    pub fn initialized(&mut self) -> Result<(), SessionError> {
        if self.state == State::Closed {
            return Err(SessionError::Closed);
        }
        if self.mode == Mode::Stateless {
            return Err(SessionError::NoHandshake);
        }
        if self.role != Role::Client {
            return Err(SessionError::NotAClient);
        }
        if self.state != State::Initializing || !self.initialize_answered {
            return Err(SessionError::InitializeNotAnswered);
        }
        self.state = State::Initialized;
        self.transmit.push_back(Message::Notification(Notification { method: INITIALIZED.to_owned(), params: None }));
        Ok(())
    }

    /// Cancels one of our requests: sends `notifications/cancelled` and forgets the request; its
    /// late response will be dropped quietly.
    ///
    /// # Errors
    /// [`SessionError::Closed`]; [`SessionError::NotPending`] when it is not awaiting a response
    /// (e.g. already answered); [`SessionError::InitializeNotCancellable`].
    pub fn cancel(&mut self, id: &Id, reason: Option<&str>) -> Result<(), SessionError> {
        if self.state == State::Closed {
            return Err(SessionError::Closed);
        }
        let n = match id {
            Id::Number(n) if self.pending.contains_key(n) => *n,
            _ => return Err(SessionError::NotPending(id.clone())),
        };
        if self.pending[&n].method == INITIALIZE {
            return Err(SessionError::InitializeNotCancellable);
        }
        self.forget(n);
        self.abandon(n);
        self.send_cancelled(n, reason);
        Ok(())
    }

    /// Answers an incoming request. Returns `false`, sending nothing, when `id` is not in flight
    /// (never received, answered already, or cancelled by the peer).
    pub fn respond(&mut self, id: &Id, result: Body) -> bool {
        if self.state == State::Closed {
            return false;
        }
        let Some(is_initialize) = self.incoming.remove(id) else { return false };
        if self.server_handshake() && is_initialize.0 {
            self.version = result_version(&result);
            self.initialize_answered = true;
        }
        self.transmit.push_back(Message::Response(Response { id: id.clone(), result }));
        true
    }

    /// Answers an incoming request with an error; returns `false` as [`Session::respond`] does.
    pub fn respond_error(&mut self, id: &Id, error: ErrorObject) -> bool {
        if self.state == State::Closed {
            return false;
        }
        let Some(is_initialize) = self.incoming.remove(id) else { return false };
        if self.server_handshake() && is_initialize.0 {
            // The client may try again (e.g. with another version).
            self.state = State::AwaitingInitialize;
        }
        self.transmit.push_back(Message::Error(ErrorResponse { id: Some(id.clone()), error }));
        true
    }

    /// Closes the session: forgets every request in both directions and refuses further calls.
    /// Messages and events already queued stay to be polled; nothing new is queued.
    pub fn close(&mut self) {
        self.state = State::Closed;
        self.pending.clear();
        self.deadlines.clear();
        self.tokens.clear();
        self.abandoned.clear();
        self.incoming.clear();
    }

    /// Feeds in one message from the peer. Never fails: violations are answered or reported as
    /// [`Event::Protocol`], and the session goes on. Ignored once closed.
    pub fn handle_incoming(&mut self, msg: Message, now: Instant) {
        if self.state == State::Closed {
            return;
        }
        let seen = self.received;
        self.received += 1;
        match msg {
            Message::Request(r) => self.on_request(r),
            Message::Notification(n) => self.on_notification(n, now),
            Message::Response(r) => self.on_response(r.id, Ok(r.result)),
            Message::Error(ErrorResponse { id: Some(id), error }) => self.on_response(id, Err(error)),
            Message::Error(ErrorResponse { id: None, error }) => self.on_error_without_id(error, seen),
        }
    }

    /// An error answer without an id (the peer could not read the id of something we sent),
    /// while `seen` messages had come before it. It is reported as
    /// [`ProtocolEvent::ErrorWithoutId`], and it ends the requests it may answer rather than
    /// leave them to their timeouts: those sent since the peer's previous message (a peer
    /// reports an unreadable line when it reads it, so an older request would have been
    /// reported before that message), or every request in flight when none was. One such
    /// request gets the peer's error as its answer; several each get an error saying the answer
    /// may be theirs.
    fn on_error_without_id(&mut self, error: ErrorObject, seen: u64) {
        let mut suspects: Vec<i64> = self.pending.iter().filter(|(_, p)| p.after == seen).map(|(&n, _)| n).collect();
        if suspects.is_empty() {
            suspects = self.pending.keys().copied().collect();
        }
        let count = suspects.len();
        for n in suspects {
            let Some(p) = self.forget(n) else { continue };
            // A late answer with the id after all is dropped quietly.
            self.abandon(n);
            if p.method == INITIALIZE && self.role == Role::Client && self.state == State::Initializing {
                self.state = State::AwaitingInitialize;
            }
            let answer = if count == 1 {
                ErrorObject::new(
                    error.code,
                    format!(
                        "{} (the peer's error carried no id; this is the only request it can answer)",
                        error.message
                    ),
                )
            } else {
                ErrorObject::new(
                    error.code,
                    format!(
                        "the peer answered an error without an id while {count} requests it may answer were in \
                         flight, this one among them: {}",
                        error.message
                    ),
                )
            };
            self.events.push_back(Event::ErrorResponse { id: Id::Number(n), method: p.method, error: answer });
        }
        self.events.push_back(Event::Protocol(ProtocolEvent::ErrorWithoutId { error }));
    }

    /// The earliest deadline of our requests, if any: call [`Session::handle_timeout`] then.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.first().map(|(t, _)| *t)
    }

    /// Expires every request whose deadline is at or before `now`: each gives
    /// [`Event::TimedOut`] and (except `initialize`) a `notifications/cancelled` with reason
    /// [`TIMEOUT_REASON`]. A timed-out `initialize` returns a client to
    /// [`State::AwaitingInitialize`].
    pub fn handle_timeout(&mut self, now: Instant) {
        while self.deadlines.first().is_some_and(|&(deadline, _)| deadline <= now) {
            let Some((_, n)) = self.deadlines.pop_first() else { break };
            let Some(p) = self.forget(n) else { continue };
            self.abandon(n);
            if p.method == INITIALIZE {
                if self.role == Role::Client && self.state == State::Initializing {
                    self.state = State::AwaitingInitialize;
                }
            } else {
                self.send_cancelled(n, Some(TIMEOUT_REASON));
            }
            self.events.push_back(Event::TimedOut { id: Id::Number(n), method: p.method });
        }
    }

    /// The next message to write to the peer.
    pub fn poll_transmit(&mut self) -> Option<Message> {
        self.transmit.pop_front()
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn server_handshake(&self) -> bool {
        self.mode == Mode::Handshake && self.role == Role::Server
    }

    /// Removes a pending request and everything that points at it.
    fn forget(&mut self, n: i64) -> Option<Pending> {
        let p = self.pending.remove(&n)?;
        if let Some(d) = p.deadline {
            self.deadlines.remove(&(d, n));
        }
        if let Some(t) = &p.token {
            self.tokens.remove(t);
        }
        Some(p)
    }

    /// Remembers a cancelled or timed-out id so that its late response is dropped quietly.
    fn abandon(&mut self, n: i64) {
        if self.limits.max_remembered_abandoned == 0 {
            return;
        }
        while self.abandoned.len() >= self.limits.max_remembered_abandoned {
            self.abandoned.pop_first();
        }
        self.abandoned.insert(n);
    }

    fn send_cancelled(&mut self, n: i64, reason: Option<&str>) {
        let params = CancelledParams { request_id: Some(Id::Number(n)), reason: reason.map(str::to_owned) };
        // An integer and an optional string always serialize.
        let params = Body::typed(params);
        self.transmit
            .push_back(Message::Notification(Notification { method: CANCELLED.to_owned(), params: Some(params) }));
    }

    fn answer_error(&mut self, id: Id, code: ErrorCode, message: String, event: ProtocolEvent) {
        self.transmit.push_back(Message::Error(ErrorResponse { id: Some(id), error: ErrorObject::new(code, message) }));
        self.events.push_back(Event::Protocol(event));
    }

    /// Whether gated incoming requests are accepted now (see "The lifecycle gate").
    fn accepts_gated(&self) -> bool {
        match self.state {
            State::Initialized | State::Stateless => true,
            State::Initializing => self.role == Role::Server && self.initialize_answered,
            State::AwaitingInitialize | State::Closed => false,
        }
    }

    fn on_request(&mut self, r: Request) {
        if self.incoming.contains_key(&r.id) {
            let message = format!("duplicate request id {}: a request with this id is still in flight", r.id);
            let event = ProtocolEvent::DuplicateRequest { id: r.id.clone(), method: r.method };
            return self.answer_error(r.id, ErrorCode::INVALID_REQUEST, message, event);
        }
        if self.incoming.len() >= self.limits.max_incoming_in_flight {
            let message = format!("too many requests in flight (limit {})", self.limits.max_incoming_in_flight);
            let event = ProtocolEvent::TooManyRequests { id: r.id.clone(), method: r.method };
            return self.answer_error(r.id, ErrorCode::INTERNAL_ERROR, message, event);
        }
        // A request that names its revision in `_meta` (2026-07-28) is served without the
        // handshake, on the same connection: the gate is not its business. Read only when the
        // gate would act, so requests of an initialized session never pay for it.
        let gate_acts = (self.role == Role::Server && r.method == INITIALIZE)
            || (!self.accepts_gated() && GATED_REQUESTS.contains(&r.method.as_str()));
        if self.mode == Mode::Handshake && !(gate_acts && envelope::names_revision(r.params.as_ref())) {
            if self.role == Role::Server && r.method == INITIALIZE {
                if self.state != State::AwaitingInitialize {
                    let message = "initialize was already received in this session".to_owned();
                    let event = ProtocolEvent::RepeatedInitialize { id: r.id.clone() };
                    return self.answer_error(r.id, ErrorCode::INVALID_REQUEST, message, event);
                }
                self.state = State::Initializing;
                self.initialize_answered = false;
            } else if !self.accepts_gated() && GATED_REQUESTS.contains(&r.method.as_str()) {
                let message = format!("{} is not allowed before initialization completes", r.method);
                let event = ProtocolEvent::BeforeInitialized { id: r.id.clone(), method: r.method };
                return self.answer_error(r.id, ErrorCode::INVALID_REQUEST, message, event);
            }
        }
        self.incoming.insert(r.id.clone(), IsInitialize(r.method == INITIALIZE));
        self.events.push_back(Event::Request(r));
    }

    fn on_notification(&mut self, n: Notification, now: Instant) {
        match n.method.as_str() {
            CANCELLED => match n.params_as::<CancelledParams>() {
                Err(e) => self.invalid(n.method, e),
                // A task cancellation or a request no longer in flight: nothing to do.
                Ok(CancelledParams { request_id: None, .. }) => {}
                Ok(CancelledParams { request_id: Some(id), reason }) => match self.incoming.get(&id) {
                    None => self.on_subscription_cancelled(id, reason),
                    Some(IsInitialize(true)) => {
                        self.events.push_back(Event::Protocol(ProtocolEvent::CancelledInitialize { id }));
                    }
                    Some(_) => {
                        self.incoming.remove(&id);
                        self.events.push_back(Event::Cancelled { id, reason });
                    }
                },
            },
            PROGRESS => match n.params_as::<ProgressParams>() {
                Err(e) => self.invalid(n.method, e),
                Ok(p) => self.on_progress(p, now),
            },
            INITIALIZED if self.server_handshake() => {
                if self.state == State::Initializing && self.initialize_answered {
                    self.state = State::Initialized;
                    self.events.push_back(Event::Initialized);
                } else {
                    self.events.push_back(Event::Protocol(ProtocolEvent::UnexpectedInitialized));
                }
            }
            _ => self.events.push_back(Event::Notification(n)),
        }
    }

    /// A server's `notifications/cancelled` naming one of our `subscriptions/listen` requests:
    /// the server tore the stream down (2026-07-28 cancellation: the only cancellation a
    /// server sends). The request ends with a -32603 error naming that, as no response will
    /// come. A cancellation naming any other request of ours is ignored.
    fn on_subscription_cancelled(&mut self, id: Id, reason: Option<String>) {
        let n = match id {
            Id::Number(n) if self.role == Role::Client && self.pending.get(&n).is_some_and(|p| p.method == LISTEN) => n,
            _ => return,
        };
        let Some(p) = self.forget(n) else { return };
        let message = match reason {
            Some(reason) => format!("the server ended the subscription: {reason}"),
            None => "the server ended the subscription".to_owned(),
        };
        let error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, message);
        self.events.push_back(Event::ErrorResponse { id, method: p.method, error });
    }

    fn invalid(&mut self, method: String, e: serde_json::Error) {
        self.events.push_back(Event::Protocol(ProtocolEvent::InvalidNotification { method, error: e.to_string() }));
    }

    fn on_progress(&mut self, p: ProgressParams, now: Instant) {
        let Some(&n) = self.tokens.get(&p.progress_token) else {
            let event = ProtocolEvent::UnknownProgressToken { token: p.progress_token };
            return self.events.push_back(Event::Protocol(event));
        };
        if let Some(pending) = self.pending.get_mut(&n) {
            if let (true, Some(timeout)) = (pending.options.reset_timeout_on_progress, pending.options.timeout) {
                let cap = pending.options.max_total_timeout.and_then(|t| pending.sent.checked_add(t));
                let deadline = min_deadline(now.checked_add(timeout), cap);
                if let Some(old) = pending.deadline {
                    self.deadlines.remove(&(old, n));
                }
                if let Some(d) = deadline {
                    self.deadlines.insert((d, n));
                }
                pending.deadline = deadline;
            }
        }
        self.events.push_back(Event::Progress {
            request_id: Id::Number(n),
            progress: p.progress,
            total: p.total,
            message: p.message,
        });
    }

    fn on_response(&mut self, id: Id, outcome: Result<Body, ErrorObject>) {
        let n = match id {
            Id::Number(n) if self.pending.contains_key(&n) => n,
            Id::Number(n) if self.abandoned.remove(&n) => return,
            _ => return self.events.push_back(Event::Protocol(ProtocolEvent::UnknownResponse { id })),
        };
        let Some(p) = self.forget(n) else { return };
        let client_initialize = self.mode == Mode::Handshake && self.role == Role::Client && p.method == INITIALIZE;
        self.events.push_back(match outcome {
            Ok(result) => {
                if client_initialize && self.state == State::Initializing {
                    self.version = result_version(&result);
                    self.initialize_answered = true;
                }
                Event::Response { id, method: p.method, result }
            }
            Err(error) => {
                if client_initialize && self.state == State::Initializing {
                    self.state = State::AwaitingInitialize;
                }
                Event::ErrorResponse { id, method: p.method, error }
            }
        });
    }
}

/// The earlier of two optional deadlines.
fn min_deadline(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The driver panics when two sessions are still talking after this many steps.
    const MAX_STEPS: usize = 1_000;

    fn raw(v: serde_json::Value) -> Body {
        Body::serialized(&v).unwrap()
    }

    fn msg(text: &str) -> Message {
        Message::from_str(text).unwrap()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A client and a server driven against each other on a virtual clock.
    struct Pair {
        client: Session,
        server: Session,
        origin: Instant,
        now: Instant,
        /// Everything that crossed the wire, as `c>s {json}` / `s>c {json}`.
        wire: Vec<String>,
        client_events: VecDeque<Event>,
        server_events: VecDeque<Event>,
        steps: usize,
    }

    impl Pair {
        fn new(mode: Mode) -> Pair {
            Pair::with_limits(mode, SessionLimits::default())
        }

        fn with_limits(mode: Mode, limits: SessionLimits) -> Pair {
            // The only clock read: an arbitrary origin; everything after is virtual.
            let origin = Instant::now();
            Pair {
                client: Session::new(Role::Client, mode, limits),
                server: Session::new(Role::Server, mode, limits),
                origin,
                now: origin,
                wire: Vec::new(),
                client_events: VecDeque::new(),
                server_events: VecDeque::new(),
                steps: 0,
            }
        }

        fn at(&self, d: Duration) -> Instant {
            self.origin + d
        }

        /// Moves at most one message each way and collects events; `false` when both were idle.
        fn step(&mut self) -> bool {
            self.steps += 1;
            assert!(self.steps <= MAX_STEPS, "still busy after {MAX_STEPS} steps");
            let mut moved = false;
            if let Some(m) = self.client.poll_transmit() {
                self.wire.push(format!("c>s {m}"));
                self.server.handle_incoming(m, self.now);
                moved = true;
            }
            if let Some(m) = self.server.poll_transmit() {
                self.wire.push(format!("s>c {m}"));
                self.client.handle_incoming(m, self.now);
                moved = true;
            }
            self.client_events.extend(std::iter::from_fn(|| self.client.poll_event()));
            self.server_events.extend(std::iter::from_fn(|| self.server.poll_event()));
            moved
        }

        /// Moves messages until both sides are idle.
        fn drive(&mut self) {
            while self.step() {}
        }

        /// Drives, advancing the clock to each timer due at or before `until`, then to `until`.
        fn run_until(&mut self, until: Instant) {
            loop {
                self.drive();
                match min_deadline(self.client.poll_timeout(), self.server.poll_timeout()) {
                    Some(t) if t <= until => {
                        self.now = self.now.max(t);
                        self.client.handle_timeout(self.now);
                        self.server.handle_timeout(self.now);
                    }
                    _ => {
                        self.now = self.now.max(until);
                        return;
                    }
                }
            }
        }

        fn take_wire(&mut self) -> Vec<String> {
            std::mem::take(&mut self.wire)
        }

        fn client_event(&mut self) -> Event {
            self.client_events.pop_front().expect("a client event")
        }

        fn server_event(&mut self) -> Event {
            self.server_events.pop_front().expect("a server event")
        }

        fn assert_no_events(&self) {
            assert!(self.client_events.is_empty(), "client events: {:?}", self.client_events);
            assert!(self.server_events.is_empty(), "server events: {:?}", self.server_events);
        }

        fn server_request(&mut self) -> Request {
            match self.server_event() {
                Event::Request(r) => r,
                e => panic!("expected a request, got {e:?}"),
            }
        }

        fn client_request(&mut self) -> Request {
            match self.client_event() {
                Event::Request(r) => r,
                e => panic!("expected a request, got {e:?}"),
            }
        }

        fn handshake(&mut self) {
            let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}});
            let id = self.client.send_request(INITIALIZE, Some(raw(params)), self.now, Some(ms(30_000))).unwrap();
            assert_eq!(self.client.state(), State::Initializing);
            self.drive();
            let r = self.server_request();
            assert_eq!((r.id.clone(), r.method.as_str()), (id.clone(), INITIALIZE));
            assert_eq!(self.server.state(), State::Initializing);
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}});
            assert!(self.server.respond(&r.id, raw(result)));
            self.drive();
            match self.client_event() {
                Event::Response { id: got, method, .. } => assert_eq!((got, &*method), (id, INITIALIZE)),
                e => panic!("{e:?}"),
            }
            self.client.initialized().unwrap();
            self.drive();
            assert!(matches!(self.server_event(), Event::Initialized));
            assert_eq!((self.client.state(), self.server.state()), (State::Initialized, State::Initialized));
            self.assert_no_events();
        }
    }

    #[test]
    fn handshake_wire_and_state() {
        let mut p = Pair::new(Mode::Handshake);
        assert_eq!(p.client.state(), State::AwaitingInitialize);
        p.handshake();
        assert_eq!(
            p.take_wire(),
            [
                r#"c>s {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"c","version":"1"},"protocolVersion":"2025-11-25"}}"#,
                r#"s>c {"jsonrpc":"2.0","id":0,"result":{"capabilities":{},"protocolVersion":"2025-11-25","serverInfo":{"name":"s","version":"1"}}}"#,
                r#"c>s {"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ]
        );
        assert_eq!(p.client.protocol_version(), Some(ProtocolVersion::V2025_11_25));
        assert_eq!(p.server.protocol_version(), Some(ProtocolVersion::V2025_11_25));
        assert_eq!(p.client.poll_timeout(), None, "the answered initialize left no timer");
        // A second handshake is refused both ways.
        assert_eq!(p.client.send_request(INITIALIZE, None, p.now, None), Err(SessionError::InitializeAgain));
        assert_eq!(p.client.initialized(), Err(SessionError::InitializeNotAnswered));
        assert_eq!(p.server.initialized(), Err(SessionError::NotAClient));
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}"#), p.now);
        assert_eq!(
            p.server.poll_transmit().unwrap().to_string(),
            r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"initialize was already received in this session"}}"#
        );
        assert_eq!(p.server.poll_event().unwrap_err_protocol(), ProtocolEvent::RepeatedInitialize { id: Id::from(9) });
        assert_eq!(p.server.state(), State::Initialized);
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), p.now);
        assert_eq!(p.server.poll_event().unwrap_err_protocol(), ProtocolEvent::UnexpectedInitialized);
    }

    trait ProtocolOf {
        fn unwrap_err_protocol(self) -> ProtocolEvent;
    }

    impl ProtocolOf for Option<Event> {
        fn unwrap_err_protocol(self) -> ProtocolEvent {
            match self {
                Some(Event::Protocol(e)) => e,
                e => panic!("expected a protocol event, got {e:?}"),
            }
        }
    }

    #[test]
    fn many_requests_answered_out_of_order() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        let ids: Vec<Id> = (0..20)
            .map(|i| {
                p.client
                    .send_request("tools/call", Some(raw(json!({"name": "echo", "arguments": {"i": i}}))), p.now, None)
                    .unwrap()
            })
            .collect();
        assert_eq!(ids.first(), Some(&Id::from(1)), "initialize took id 0");
        assert_eq!(ids.last(), Some(&Id::from(20)));
        assert_eq!(p.client.outgoing_in_flight(), 20);
        p.drive();
        let requests: Vec<Request> = (0..20).map(|_| p.server_request()).collect();
        assert_eq!(p.server.incoming_in_flight(), 20);
        // Answer in reverse order, echoing the argument.
        for r in requests.iter().rev() {
            let i = r.params_as::<serde_json::Value>().unwrap()["arguments"]["i"].clone();
            assert!(p.server.respond(&r.id, raw(json!({"i": i}))));
        }
        p.drive();
        for k in (0..20).rev() {
            match p.client_event() {
                Event::Response { id, method, result } => {
                    assert_eq!(id, ids[k]);
                    assert_eq!(method, "tools/call");
                    assert_eq!(result.as_raw().unwrap().get(), format!(r#"{{"i":{k}}}"#));
                }
                e => panic!("{e:?}"),
            }
        }
        assert_eq!((p.client.outgoing_in_flight(), p.server.incoming_in_flight()), (0, 0));
        p.assert_no_events();
        // Ids are never reused.
        assert_eq!(p.client.send_request("ping", None, p.now, None).unwrap(), Id::from(21));
    }

    #[test]
    fn a_method_sent_as_a_static_str_comes_back_borrowed_and_a_string_owned() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        let by_name = p.client.send_request("tools/list", None, p.now, None).unwrap();
        let by_string = p.client.send_request(String::from("tools/call"), None, p.now, None).unwrap();
        p.drive();
        let requests: Vec<Request> = (0..2).map(|_| p.server_request()).collect();
        assert_eq!(requests.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(), ["tools/list", "tools/call"]);
        for r in &requests {
            assert!(p.server.respond(&r.id, raw(json!({}))));
        }
        p.drive();
        match p.client_event() {
            Event::Response { id, method: Cow::Borrowed(method), .. } => {
                assert_eq!((id, method), (by_name, "tools/list"))
            }
            e => panic!("expected the name borrowed: {e:?}"),
        }
        match p.client_event() {
            Event::Response { id, method: Cow::Owned(method), .. } => {
                assert_eq!((id, method.as_str()), (by_string, "tools/call"))
            }
            e => panic!("expected the string kept: {e:?}"),
        }
    }

    #[test]
    fn an_error_without_id_ends_the_requests_it_may_answer() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        let null_error = || msg(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
        let ended = |p: &mut Pair| -> Vec<(Id, String)> {
            std::iter::from_fn(|| p.client.poll_event())
                .filter_map(|e| match e {
                    Event::ErrorResponse { id, error, .. } => Some((id, error.message)),
                    Event::Protocol(ProtocolEvent::ErrorWithoutId { .. }) => None,
                    e => panic!("{e:?}"),
                })
                .collect()
        };
        // Two requests sent since the peer's last message: either may be the one; both end.
        let a = p.client.send_request("tools/call", None, p.now, None).unwrap();
        let b = p.client.send_request("tools/call", None, p.now, None).unwrap();
        while p.client.poll_transmit().is_some() {}
        p.client.handle_incoming(null_error(), p.now);
        let why = "the peer answered an error without an id while 2 requests it may answer were in flight, this one \
                   among them: Parse error";
        assert_eq!(ended(&mut p), [(a, why.to_owned()), (b, why.to_owned())]);
        // One request before the peer's last message, one after: only the later one ends.
        let c = p.client.send_request("tools/call", None, p.now, None).unwrap();
        p.client.handle_incoming(
            msg(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}"#),
            p.now,
        );
        let d = p.client.send_request("tools/call", None, p.now, None).unwrap();
        while p.client.poll_transmit().is_some() {}
        let _ = p.client.poll_event();
        p.client.handle_incoming(null_error(), p.now);
        let why = "Parse error (the peer's error carried no id; this is the only request it can answer)";
        assert_eq!(ended(&mut p), [(d.clone(), why.to_owned())]);
        assert_eq!(p.client.outgoing_in_flight(), 1, "c still waits");
        // A late answer to d is dropped quietly; c's answer still reaches it.
        let Id::Number(dn) = d else { panic!() };
        let Id::Number(cn) = c.clone() else { panic!() };
        p.client.handle_incoming(msg(&format!(r#"{{"jsonrpc":"2.0","id":{dn},"result":{{}}}}"#)), p.now);
        assert!(p.client.poll_event().is_none());
        p.client.handle_incoming(msg(&format!(r#"{{"jsonrpc":"2.0","id":{cn},"result":{{}}}}"#)), p.now);
        assert!(matches!(p.client.poll_event(), Some(Event::Response { id, .. }) if id == c));
        // Nothing in flight: reported, nothing else.
        p.client.handle_incoming(null_error(), p.now);
        assert!(matches!(p.client.poll_event(), Some(Event::Protocol(ProtocolEvent::ErrorWithoutId { .. }))));
        assert!(p.client.poll_event().is_none());
    }

    #[test]
    fn response_to_unknown_id_is_dropped_and_reported() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        for (text, id) in [
            (r#"{"jsonrpc":"2.0","id":99,"result":{}}"#, Id::from(99)),
            (r#"{"jsonrpc":"2.0","id":"0","result":{}}"#, Id::from("0")),
            (r#"{"jsonrpc":"2.0","id":0,"error":{"code":-1,"message":"x"}}"#, Id::from(0)),
        ] {
            p.client.handle_incoming(msg(text), p.now);
            assert_eq!(p.client.poll_event().unwrap_err_protocol(), ProtocolEvent::UnknownResponse { id });
        }
        p.client.handle_incoming(msg(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#), p.now);
        assert_eq!(
            p.client.poll_event().unwrap_err_protocol(),
            ProtocolEvent::ErrorWithoutId { error: ErrorObject::new(ErrorCode::PARSE_ERROR, "Parse error") }
        );
        assert!(p.client.poll_transmit().is_none(), "nothing is answered to a response");
        // The session lives on.
        let id = p.client.send_request("tools/list", None, p.now, None).unwrap();
        p.drive();
        let r = p.server_request();
        p.server.respond_error(&r.id, ErrorObject::new(ErrorCode::INTERNAL_ERROR, "boom"));
        p.drive();
        match p.client_event() {
            Event::ErrorResponse { id: got, method, error } => {
                assert_eq!((got, &*method, error.code), (id, "tools/list", ErrorCode::INTERNAL_ERROR));
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn duplicate_incoming_request_id_is_answered_and_the_original_survives() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#), p.now);
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#), p.now);
        assert!(matches!(p.server.poll_event(), Some(Event::Request(r)) if r.method == "tools/list"));
        assert_eq!(
            p.server.poll_event().unwrap_err_protocol(),
            ProtocolEvent::DuplicateRequest { id: Id::from(7), method: "tools/call".into() }
        );
        assert_eq!(
            p.server.poll_transmit().unwrap().to_string(),
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"duplicate request id 7: a request with this id is still in flight"}}"#
        );
        // The same id as a string is another id.
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":"7","method":"tools/list"}"#), p.now);
        assert!(matches!(p.server.poll_event(), Some(Event::Request(r)) if r.id == Id::from("7")));
        assert_eq!(p.server.incoming_in_flight(), 2);
        assert!(p.server.respond(&Id::from(7), raw(json!({"tools": []}))));
        assert_eq!(p.server.poll_transmit().unwrap().to_string(), r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#);
        assert!(!p.server.respond(&Id::from(7), raw(json!({}))), "answered once only");
        assert!(p.server.poll_transmit().is_none());
        // Once answered, the id may be used again.
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#), p.now);
        assert!(matches!(p.server.poll_event(), Some(Event::Request(r)) if r.method == "ping"));
    }

    #[test]
    fn per_request_era_requests_pass_the_gate_on_a_handshake_connection() {
        let mut p = Pair::new(Mode::Handshake);
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        for (id, method) in [(1, "tools/list"), (2, "initialize")] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{meta}}}}}"#);
            p.server.handle_incoming(msg(&text), p.now);
            assert!(matches!(p.server.poll_event(), Some(Event::Request(r)) if r.method == method), "{method}");
        }
        assert!(p.server.poll_transmit().is_none(), "the layer above answers those");
        assert_eq!(p.server.state(), State::AwaitingInitialize, "no handshake began");
        // Without the envelope, the gate holds.
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#), p.now);
        assert!(p.server.poll_transmit().is_some_and(|m| m.to_string().contains("-32600")));
        // A listen stream's notifications need no handshake either; others still do.
        let tagged = raw(json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 1}}));
        assert!(p.server.notify("notifications/tools/list_changed", Some(tagged)).is_ok());
        assert!(p.server.notify("notifications/tools/list_changed", None).is_err());
    }

    #[test]
    fn requests_before_initialize_are_gated() {
        let mut p = Pair::new(Mode::Handshake);
        // Server: a known method before initialize is answered -32600 by the core.
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), p.now);
        assert_eq!(
            p.server.poll_transmit().unwrap().to_string(),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"tools/list is not allowed before initialization completes"}}"#
        );
        assert_eq!(
            p.server.poll_event().unwrap_err_protocol(),
            ProtocolEvent::BeforeInitialized { id: Id::from(1), method: "tools/list".into() }
        );
        // ping, server/discover and unknown methods reach the application.
        for (id, method) in [(2, "ping"), (3, "server/discover"), (4, "vendor/thing")] {
            p.server.handle_incoming(msg(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#)), p.now);
            assert!(matches!(p.server.poll_event(), Some(Event::Request(r)) if r.method == method), "{method}");
        }
        assert!(p.server.poll_transmit().is_none(), "the layer above answers those");
        assert!(p
            .server
            .respond_error(&Id::from(3), ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")));
        assert_eq!(
            p.server.poll_transmit().unwrap().to_string(),
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}"#
        );
        assert_eq!(p.server.state(), State::AwaitingInitialize);
        // Client: outgoing gated requests and notifications are refused, ping and unknown ones pass.
        let e = p.client.send_request("tools/call", None, p.now, None).unwrap_err();
        assert_eq!(e, SessionError::NotInitialized { method: "tools/call".into() });
        assert_eq!(e.to_string(), "tools/call may not be sent before initialization completes");
        assert!(p.client.notify("notifications/roots/list_changed", None).is_err());
        assert_eq!(p.client.send_request("ping", None, p.now, None), Ok(Id::from(0)));
        assert_eq!(p.client.send_request("server/discover", None, p.now, None), Ok(Id::from(1)));
        assert_eq!(p.client.initialized(), Err(SessionError::InitializeNotAnswered));
        // Client: a server request before the client sent initialized is answered -32600.
        p.client
            .handle_incoming(msg(r#"{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}}"#), p.now);
        assert_eq!(
            p.client.poll_event().unwrap_err_protocol(),
            ProtocolEvent::BeforeInitialized { id: Id::from(0), method: "sampling/createMessage".into() }
        );
        // Server: may log and ping before initialized, but not announce list changes.
        assert!(p.server.notify("notifications/message", Some(raw(json!({"level": "info", "data": "hi"})))).is_ok());
        assert!(p.server.notify("notifications/tools/list_changed", None).is_err());
        assert!(p.server.send_request("roots/list", None, p.now, None).is_err());
        assert!(p.server.send_request("ping", None, p.now, None).is_ok());
    }

    #[test]
    fn server_accepts_requests_once_it_answered_initialize() {
        let mut p = Pair::new(Mode::Handshake);
        p.client.send_request(INITIALIZE, Some(raw(json!({"protocolVersion": "2099-01-01"}))), p.now, None).unwrap();
        p.drive();
        let init = p.server_request();
        // Before the answer: gated.
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#), p.now);
        assert!(matches!(p.server.poll_event(), Some(Event::Protocol(ProtocolEvent::BeforeInitialized { .. }))));
        p.server.poll_transmit().unwrap();
        // The server counter-offers a version the core does not know: recorded as unknown.
        assert!(p.server.respond(&init.id, raw(json!({"protocolVersion": "2099-01-01"}))));
        assert_eq!(p.server.protocol_version(), None);
        // Answered, initialized not yet here: Streamable HTTP may reorder, so let it through.
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":6,"method":"tools/list"}"#), p.now);
        assert!(matches!(p.server.poll_event(), Some(Event::Request(r)) if r.id == Id::from(6)));
    }

    #[test]
    fn failed_initialize_can_be_retried() {
        let mut p = Pair::new(Mode::Handshake);
        p.client.send_request(INITIALIZE, Some(raw(json!({}))), p.now, None).unwrap();
        p.drive();
        let init = p.server_request();
        assert!(p.server.respond_error(&init.id, ErrorObject::new(ErrorCode::INVALID_PARAMS, "Invalid params")));
        assert_eq!(p.server.state(), State::AwaitingInitialize);
        p.drive();
        assert!(matches!(p.client_event(), Event::ErrorResponse { method, .. } if method == INITIALIZE));
        assert_eq!(p.client.state(), State::AwaitingInitialize);
        p.handshake();
    }

    #[test]
    fn outgoing_cancellation_drops_the_late_response_quietly() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        let id = p.client.send_request("tools/call", Some(raw(json!({"name": "slow"}))), p.now, None).unwrap();
        p.drive();
        let r = p.server_request();
        p.take_wire();
        p.client.cancel(&id, Some("user pressed stop")).unwrap();
        assert_eq!(p.client.outgoing_in_flight(), 0);
        p.drive();
        assert_eq!(
            p.take_wire(),
            [
                r#"c>s {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user pressed stop"}}"#
            ]
        );
        match p.server_event() {
            Event::Cancelled { id: got, reason } => {
                assert_eq!((got, reason.as_deref()), (r.id.clone(), Some("user pressed stop")));
            }
            e => panic!("{e:?}"),
        }
        // The server's answer after the cancellation sends nothing.
        assert!(!p.server.respond(&r.id, raw(json!({"content": []}))));
        assert!(!p.server.respond_error(&r.id, ErrorObject::new(ErrorCode::INTERNAL_ERROR, "x")));
        p.drive();
        assert!(p.take_wire().is_empty());
        // A peer that answers anyway: dropped quietly, once; a second copy is reported.
        p.client.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#), p.now);
        assert!(p.client.poll_event().is_none());
        p.client.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#), p.now);
        assert_eq!(p.client.poll_event().unwrap_err_protocol(), ProtocolEvent::UnknownResponse { id: Id::from(1) });
        // Cancelling again, or something never sent, is refused.
        assert_eq!(p.client.cancel(&id, None), Err(SessionError::NotPending(Id::from(1))));
        assert_eq!(p.client.cancel(&Id::from("x"), None), Err(SessionError::NotPending(Id::from("x"))));
        assert_eq!(
            p.client.notify(CANCELLED, None),
            Err(SessionError::Reserved { method: CANCELLED.into() }),
            "cancellation goes through cancel()"
        );
        // A cancellation the server no longer needs (unknown id) is ignored quietly.
        p.server.handle_incoming(
            msg(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}"#),
            p.now,
        );
        assert!(p.server.poll_event().is_none());
    }

    #[test]
    fn incoming_cancellation_server_to_client() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        let id =
            p.server.send_request("sampling/createMessage", Some(raw(json!({"messages": []}))), p.now, None).unwrap();
        assert_eq!(id, Id::from(0), "each side has its own ids");
        p.drive();
        let r = p.client_request();
        p.server.cancel(&id, None).unwrap();
        p.take_wire();
        p.drive();
        assert_eq!(
            p.take_wire(),
            [r#"s>c {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}"#]
        );
        assert!(matches!(p.client_event(), Event::Cancelled { id, reason: None } if id == r.id));
        assert_eq!(p.client.incoming_in_flight(), 0);
        assert!(!p.client.respond(&r.id, raw(json!({}))));
        p.drive();
        assert!(p.take_wire().is_empty());
        p.assert_no_events();
    }

    #[test]
    fn initialize_is_never_cancelled() {
        let mut p = Pair::new(Mode::Handshake);
        let id = p.client.send_request(INITIALIZE, Some(raw(json!({}))), p.now, None).unwrap();
        assert_eq!(p.client.cancel(&id, None), Err(SessionError::InitializeNotCancellable));
        assert_eq!(p.client.outgoing_in_flight(), 1);
        p.drive();
        let init = p.server_request();
        // A peer that cancels initialize anyway is ignored.
        p.server.handle_incoming(
            msg(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0,"reason":"no"}}"#),
            p.now,
        );
        assert_eq!(p.server.poll_event().unwrap_err_protocol(), ProtocolEvent::CancelledInitialize { id: Id::from(0) });
        assert!(p.server.respond(&init.id, raw(json!({"protocolVersion": "2025-06-18"}))));
        p.drive();
        assert!(matches!(p.client_event(), Event::Response { method, .. } if method == INITIALIZE));
        assert_eq!(p.client.protocol_version(), Some(ProtocolVersion::V2025_06_18));
    }

    #[test]
    fn progress_is_routed_by_token() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        let params = |token: serde_json::Value| raw(json!({"name": "long", "_meta": {"progressToken": token}}));
        let a = p.client.send_request("tools/call", Some(params(json!("a"))), p.now, None).unwrap();
        let b = p.client.send_request("tools/call", Some(params(json!(7))), p.now, None).unwrap();
        let _plain = p.client.send_request("tools/call", Some(raw(json!({"name": "x"}))), p.now, None).unwrap();
        assert_eq!(
            p.client.send_request("tools/call", Some(params(json!(7))), p.now, None),
            Err(SessionError::DuplicateProgressToken(Id::from(7)))
        );
        p.drive();
        let requests: Vec<Request> = (0..3).map(|_| p.server_request()).collect();
        for text in [
            r#"{"progressToken":7,"progress":0.5,"total":1.0,"message":"half"}"#,
            r#"{"progressToken":"a","progress":1}"#,
            r#"{"progressToken":"7","progress":1}"#,
            r#"{"progressToken":"zzz","progress":1}"#,
            r#"{"progress":1}"#,
        ] {
            p.server
                .notify(PROGRESS, Some(Body::Raw(serde_json::value::RawValue::from_string(text.into()).unwrap())))
                .unwrap();
        }
        p.drive();
        match p.client_event() {
            Event::Progress { request_id, progress, total, message } => {
                assert_eq!(request_id, b);
                assert_eq!((progress.to_string(), total.map(|t| t.to_string())), ("0.5".into(), Some("1.0".into())));
                assert_eq!(message.as_deref(), Some("half"));
            }
            e => panic!("{e:?}"),
        }
        assert!(
            matches!(p.client_event(), Event::Progress { request_id, total: None, message: None, .. } if request_id == a)
        );
        let e = Some(p.client_event()).unwrap_err_protocol();
        assert_eq!(e, ProtocolEvent::UnknownProgressToken { token: Id::from("7") });
        let e = Some(p.client_event()).unwrap_err_protocol();
        assert_eq!(e, ProtocolEvent::UnknownProgressToken { token: Id::from("zzz") });
        assert!(
            matches!(Some(p.client_event()).unwrap_err_protocol(), ProtocolEvent::InvalidNotification { method, .. } if method == PROGRESS)
        );
        // Once the request is answered, its token is dead.
        assert!(p.server.respond(&requests[1].id, raw(json!({"content": []}))));
        p.server.notify(PROGRESS, Some(raw(json!({"progressToken": 7, "progress": 2})))).unwrap();
        p.drive();
        assert!(matches!(p.client_event(), Event::Response { id, .. } if id == b));
        assert_eq!(
            Some(p.client_event()).unwrap_err_protocol(),
            ProtocolEvent::UnknownProgressToken { token: Id::from(7) }
        );
        // …and free for a new request.
        assert!(p.client.send_request("tools/call", Some(params(json!(7))), p.now, None).is_ok());
        p.assert_no_events();
    }

    #[test]
    fn timeout_fires_exactly_at_the_deadline_and_cancels() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        let t0 = p.now;
        let id = p.client.send_request("tools/call", Some(raw(json!({"name": "slow"}))), t0, Some(ms(5_000))).unwrap();
        let deadline = t0 + ms(5_000);
        assert_eq!(p.client.poll_timeout(), Some(deadline));
        p.drive();
        let r = p.server_request();
        p.take_wire();
        // Not a nanosecond early.
        p.client.handle_timeout(deadline - Duration::from_nanos(1));
        assert!(p.client.poll_event().is_none() && p.client.poll_transmit().is_none());
        assert_eq!(p.client.outgoing_in_flight(), 1);
        p.run_until(deadline);
        assert_eq!(p.now, deadline);
        assert!(matches!(p.client_event(), Event::TimedOut { id: got, method } if got == id && method == "tools/call"));
        assert_eq!(
            p.take_wire(),
            [
                r#"c>s {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"request timed out"}}"#
            ]
        );
        assert!(matches!(p.server_event(), Event::Cancelled { id: got, .. } if got == r.id));
        assert_eq!(p.client.poll_timeout(), None);
        // A late response is dropped quietly.
        p.client.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#), p.now);
        assert!(p.client.poll_event().is_none());
        p.assert_no_events();
    }

    #[test]
    fn timers_fire_in_deadline_order_on_the_virtual_clock() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        let a = p.client.send_request("tools/call", None, p.now, Some(ms(300))).unwrap();
        let b = p.client.send_request("tools/call", None, p.now, Some(ms(100))).unwrap();
        let c = p.client.send_request("tools/call", None, p.now, Some(ms(200))).unwrap();
        let _never = p.client.send_request("tools/call", None, p.now, None).unwrap();
        let end = p.at(ms(10_000));
        p.run_until(end);
        assert_eq!(p.now, end);
        for want in [&b, &c, &a] {
            assert!(matches!(p.client_event(), Event::TimedOut { id, .. } if id == *want));
        }
        for _ in 0..4 {
            p.server_request();
        }
        for want in [b, c, a] {
            assert!(matches!(p.server_event(), Event::Cancelled { id, .. } if id == want));
        }
        assert_eq!(p.client.outgoing_in_flight(), 1);
        assert_eq!(p.client.poll_timeout(), None);
    }

    #[test]
    fn progress_resets_the_timeout_up_to_the_total_cap() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        let t0 = p.now;
        let options = RequestOptions {
            timeout: Some(ms(1_000)),
            reset_timeout_on_progress: true,
            max_total_timeout: Some(ms(2_500)),
            progress_token: None,
        };
        let params = raw(json!({"_meta": {"progressToken": "p"}}));
        let id = p.client.send_request_with("tools/call", Some(params), t0, options).unwrap();
        assert_eq!(p.client.poll_timeout(), Some(t0 + ms(1_000)));
        p.drive();
        let progress = raw(json!({"progressToken": "p", "progress": 1}));
        p.now = t0 + ms(900);
        p.server.notify(PROGRESS, Some(progress.clone())).unwrap();
        p.drive();
        assert!(matches!(p.client_event(), Event::Progress { .. }));
        assert_eq!(p.client.poll_timeout(), Some(t0 + ms(1_900)));
        p.now = t0 + ms(1_800);
        p.server.notify(PROGRESS, Some(progress)).unwrap();
        p.drive();
        assert!(matches!(p.client_event(), Event::Progress { .. }));
        assert_eq!(p.client.poll_timeout(), Some(t0 + ms(2_500)), "capped by max_total_timeout");
        p.run_until(t0 + ms(10_000));
        assert!(matches!(p.client_event(), Event::TimedOut { id: got, .. } if got == id));
        // Without the flag, progress does not move the deadline.
        let params = raw(json!({"_meta": {"progressToken": "q"}}));
        let t1 = p.now;
        p.client.send_request("tools/call", Some(params), t1, Some(ms(1_000))).unwrap();
        p.drive();
        p.now = t1 + ms(900);
        p.server.notify(PROGRESS, Some(raw(json!({"progressToken": "q", "progress": 1})))).unwrap();
        p.drive();
        assert_eq!(p.client.poll_timeout(), Some(t1 + ms(1_000)));
    }

    #[test]
    fn initialize_timeout_sends_no_cancellation() {
        let mut p = Pair::new(Mode::Handshake);
        let id = p.client.send_request(INITIALIZE, Some(raw(json!({}))), p.now, Some(ms(50))).unwrap();
        p.client.poll_transmit().unwrap();
        p.client.handle_timeout(p.at(ms(50)));
        assert!(
            matches!(p.client.poll_event(), Some(Event::TimedOut { id: got, method }) if got == id && method == INITIALIZE)
        );
        assert!(p.client.poll_transmit().is_none(), "initialize is never cancelled");
        assert_eq!(p.client.state(), State::AwaitingInitialize);
        // A late answer is dropped quietly and does not complete the handshake.
        p.client.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#), p.now);
        assert!(p.client.poll_event().is_none());
        assert_eq!(p.client.protocol_version(), None);
    }

    #[test]
    fn stateless_mode_has_no_handshake() {
        let mut p = Pair::new(Mode::Stateless);
        assert_eq!((p.client.state(), p.server.state()), (State::Stateless, State::Stateless));
        assert_eq!(p.client.protocol_version(), Some(ProtocolVersion::V2026_07_28));
        let id = p.client.send_request("tools/call", Some(raw(json!({"name": "echo"}))), p.now, None).unwrap();
        assert_eq!(id, Id::from(0));
        p.drive();
        let r = p.server_request();
        assert!(p.server.respond(&r.id, raw(json!({"content": []}))));
        p.drive();
        assert!(matches!(p.client_event(), Event::Response { id: got, .. } if got == id));
        assert_eq!(p.client.initialized(), Err(SessionError::NoHandshake));
        assert!(p.server.notify("notifications/tools/list_changed", None).is_ok());
        // `initialize` is an ordinary (unknown) method here, left to the layer above.
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#), p.now);
        p.server.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}"#), p.now);
        p.drive();
        assert_eq!(p.server_request().id, Id::from(1));
        assert_eq!(p.server_request().id, Id::from(2));
        assert_eq!(p.server.state(), State::Stateless);
    }

    #[test]
    fn a_stateless_probe_falls_back_to_the_handshake_and_its_gate() {
        let mut p = Pair::new(Mode::Stateless);
        p.server.set_mode(Mode::Handshake).unwrap();
        // The probe goes out without a handshake and the handshake-era server refuses it.
        p.client.send_request("server/discover", Some(raw(json!({}))), p.now, None).unwrap();
        p.drive();
        let probe = p.server_request();
        assert!(p.server.respond_error(&probe.id, ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "no")));
        p.drive();
        assert!(matches!(p.client_event(), Event::ErrorResponse { method, .. } if method == "server/discover"));

        p.client.set_mode(Mode::Handshake).unwrap();
        assert_eq!(
            (p.client.mode(), p.client.state(), p.client.protocol_version()),
            (Mode::Handshake, State::AwaitingInitialize, None)
        );
        // The gate is back: nothing gated goes out before the handshake ...
        assert_eq!(
            p.client.send_request("tools/list", None, p.now, None),
            Err(SessionError::NotInitialized { method: "tools/list".to_owned() })
        );
        // ... which then runs as in a session made in handshake mode.
        p.handshake();
        assert_eq!(p.client.state(), State::Initialized);
        assert_eq!(p.client.protocol_version(), Some(ProtocolVersion::V2025_11_25));
        assert_eq!(p.client.set_mode(Mode::Stateless), Err(SessionError::ModeFixed));
        p.client.send_request("tools/list", None, p.now, None).unwrap();
    }

    #[test]
    fn mode_switches_back_to_stateless_before_a_handshake_and_never_when_closed() {
        let mut s = Session::new(Role::Client, Mode::Handshake, SessionLimits::default());
        s.set_mode(Mode::Stateless).unwrap();
        assert_eq!((s.state(), s.protocol_version()), (State::Stateless, Some(ProtocolVersion::V2026_07_28)));
        s.send_request("tools/list", None, Instant::now(), None).unwrap();
        s.close();
        assert_eq!(s.set_mode(Mode::Handshake), Err(SessionError::Closed));
    }

    #[test]
    fn limits_bound_requests_in_flight() {
        let limits = SessionLimits {
            max_outgoing_in_flight: 2,
            when_full: WhenFull::Refuse,
            max_incoming_in_flight: 1,
            max_remembered_abandoned: 1,
        };
        let mut p = Pair::with_limits(Mode::Stateless, limits);
        p.client.send_request("a", None, p.now, None).unwrap();
        p.client.send_request("b", None, p.now, None).unwrap();
        let e = p.client.send_request("c", None, p.now, None).unwrap_err();
        assert_eq!(e, SessionError::TooManyInFlight { limit: 2 });
        assert_eq!(e.to_string(), "too many requests in flight (limit 2)");
        p.drive();
        assert!(matches!(p.server_event(), Event::Request(r) if r.method == "a"));
        assert_eq!(
            p.server_event().into_protocol(),
            ProtocolEvent::TooManyRequests { id: Id::from(1), method: "b".into() }
        );
        let wire = p.take_wire();
        let answer = wire.iter().find(|l| l.starts_with("s>c")).unwrap();
        assert_eq!(
            answer,
            r#"s>c {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"too many requests in flight (limit 1)"}}"#
        );
        assert!(matches!(p.client_event(), Event::ErrorResponse { id, .. } if id == Id::from(1)));
        // Only the newest abandoned id is remembered.
        let x = p.client.send_request("x", None, p.now, None).unwrap();
        let y = p.client.send_request("y", None, p.now, None).unwrap_err();
        assert_eq!(y, SessionError::TooManyInFlight { limit: 2 });
        p.client.cancel(&Id::from(0), None).unwrap();
        p.client.cancel(&x, None).unwrap();
        p.client.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#), p.now);
        assert!(p.client.poll_event().is_none(), "remembered: quiet");
        p.client.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":0,"result":{}}"#), p.now);
        assert_eq!(p.client.poll_event().unwrap_err_protocol(), ProtocolEvent::UnknownResponse { id: Id::from(0) });
    }

    impl Event {
        fn into_protocol(self) -> ProtocolEvent {
            Some(self).unwrap_err_protocol()
        }
    }

    #[test]
    fn closed_session_refuses_and_ignores() {
        let mut p = Pair::new(Mode::Handshake);
        p.handshake();
        p.client.send_request("tools/list", None, p.now, Some(ms(10))).unwrap();
        p.client.close();
        assert_eq!(p.client.state(), State::Closed);
        assert_eq!(p.client.poll_timeout(), None);
        assert_eq!(p.client.send_request("ping", None, p.now, None), Err(SessionError::Closed));
        assert_eq!(p.client.notify("x", None), Err(SessionError::Closed));
        p.client.handle_incoming(msg(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#), p.now);
        assert!(p.client.poll_event().is_none());
        assert!(!p.client.respond(&Id::from(5), raw(json!({}))));
    }

    /// A deterministic pseudo-random walk (an LCG, no crate) of sends, cancellations, answers
    /// and clock jumps, with messages crossing mid-flight: every request ends exactly once, races
    /// between an answer and a cancellation or timeout stay quiet, and nothing is left over.
    #[test]
    fn random_walk_settles_every_request_exactly_once() {
        let mut seed: u64 = 0x5eed;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut p = Pair::with_limits(
            Mode::Handshake,
            SessionLimits { max_outgoing_in_flight: 16, ..SessionLimits::default() },
        );
        p.handshake();
        let mut sent = BTreeSet::new();
        let mut client_open: Vec<Id> = Vec::new();
        let mut settled: HashMap<Id, &'static str> = HashMap::new();
        let mut server_open: Vec<Id> = Vec::new();
        for _ in 0..2_000 {
            match next(4) {
                0 => match p.client.send_request("tools/call", None, p.now, Some(ms(10 + next(500)))) {
                    Ok(id) => {
                        assert!(sent.insert(id.clone()), "id {id} reused");
                        client_open.push(id);
                    }
                    Err(e) => assert_eq!(e, SessionError::TooManyInFlight { limit: 16 }),
                },
                1 if !client_open.is_empty() => {
                    let id = client_open.swap_remove(next(client_open.len() as u64) as usize);
                    p.client.cancel(&id, None).unwrap();
                    settled.insert(id, "cancelled");
                }
                2 if !server_open.is_empty() => {
                    let id = server_open.swap_remove(next(server_open.len() as u64) as usize);
                    assert!(p.server.respond(&id, raw(json!({}))));
                }
                3 => {
                    let until = p.now + ms(next(100));
                    p.run_until(until);
                }
                _ => {}
            }
            for _ in 0..next(3) {
                p.step();
            }
            p.steps = 0; // the bound is per action here
            while let Some(e) = p.client_events.pop_front() {
                let (id, how) = match e {
                    Event::Response { id, .. } => (id, "answered"),
                    Event::TimedOut { id, .. } => (id, "timed out"),
                    e => panic!("client: {e:?}"),
                };
                client_open.retain(|open| *open != id);
                assert!(settled.insert(id.clone(), how).is_none(), "{id} settled twice");
            }
            while let Some(e) = p.server_events.pop_front() {
                match e {
                    Event::Request(r) => server_open.push(r.id),
                    Event::Cancelled { id, .. } => server_open.retain(|open| *open != id),
                    e => panic!("server: {e:?}"),
                }
            }
        }
        let end = p.now + ms(1_000);
        p.run_until(end);
        for e in p.client_events.drain(..) {
            let Event::TimedOut { id, .. } = e else { panic!("{e:?}") };
            assert!(settled.insert(id, "timed out").is_none());
        }
        assert_eq!(settled.len(), sent.len(), "every request settled");
        assert!(settled.values().any(|h| *h == "answered") && settled.values().any(|h| *h == "cancelled"));
        assert!(settled.values().any(|h| *h == "timed out"));
        assert_eq!(p.client.outgoing_in_flight(), 0);
        for e in p.server_events.drain(..) {
            assert!(matches!(e, Event::Cancelled { .. } | Event::Request(_)), "{e:?}");
        }
    }

    #[test]
    fn error_display_is_lowercase_without_period() {
        let errors = [
            SessionError::Closed,
            SessionError::TooManyInFlight { limit: 1 },
            SessionError::NotInitialized { method: "tools/call".into() },
            SessionError::InitializeAgain,
            SessionError::InitializeNotCancellable,
            SessionError::NotPending(Id::from(1)),
            SessionError::DuplicateProgressToken(Id::from("t")),
            SessionError::Reserved { method: CANCELLED.into() },
            SessionError::InitializeNotAnswered,
            SessionError::NotAClient,
            SessionError::NoHandshake,
            SessionError::ModeFixed,
            SessionError::IdsExhausted,
        ];
        for e in errors {
            let s = e.to_string();
            assert!(!s.ends_with('.') && s.chars().next().is_some_and(|c| !c.is_uppercase()), "{s}");
        }
    }

    #[test]
    fn a_server_cancelling_our_listen_request_ends_it() {
        let mut p = Pair::new(Mode::Stateless);
        let listen = p.client.send_request(LISTEN, Some(raw(json!({"notifications": {}}))), p.now, None).unwrap();
        let other = p.client.send_request("tools/call", None, p.now, None).unwrap();
        p.drive();
        let cancel = |id: &Id| {
            msg(&format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"shutting down"}}}}"#
            ))
        };
        // Only a listen request ends so: another request of ours is not the server's to cancel.
        p.client.handle_incoming(cancel(&other), p.now);
        assert!(p.client.poll_event().is_none());
        p.client.handle_incoming(cancel(&listen), p.now);
        match p.client.poll_event() {
            Some(Event::ErrorResponse { id, method, error }) => {
                assert_eq!((id, &*method), (listen.clone(), LISTEN));
                assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
                assert_eq!(error.message, "the server ended the subscription: shutting down");
            }
            other => panic!("{other:?}"),
        }
        // Gone from the pending table: a late response is not routed.
        p.client.handle_incoming(msg(&format!(r#"{{"jsonrpc":"2.0","id":{listen},"result":{{}}}}"#)), p.now);
        assert!(!matches!(p.client.poll_event(), Some(Event::Response { .. })));
    }
}
