//! The server's shared state ([`Shared`]): the sessions' table, creating and finding sessions,
//! admission (the session caps and `max_sessions`, answered 503 with `Retry-After`), idle
//! reaping, and shutdown.
//!
//! Not here: rebuilding a session another replica created (`replicas.rs`), HTTP handling.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use hyper::Response;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::transport::sse_http::event_store::{EventStore, MemoryEventStore};
use crate::transport::sse_http::failed_tokens::FailedTokens;
use crate::transport::sse_http::service::RemoteAddr;
use crate::transport::sse_http::session_caps::{self, SessionCaps};

use super::answer::HoldTimer;
use super::bookkeeping::{idle_expired, reap_tick, Outbound};
use super::config::HttpServerConfig;
use super::decide;
use super::guards::Authenticated;
use super::replicas::{end_sessions_ended_elsewhere, restore, take_relayed};
use super::reply::session_header_value;
use super::session::{Forget, Routes, ServerTransport, Session};
use super::stream::Stream;
use crate::transport::drops::Drops;
use crate::transport::sse_http::{random_id, HttpBody};

pub(in crate::transport::sse_http) type App =
    Arc<dyn Fn(ServerTransport) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

pub(in crate::transport::sse_http) struct Shared {
    pub(in crate::transport::sse_http) config: HttpServerConfig,
    pub(super) store: Arc<dyn EventStore>,
    /// `<8 hex digits>-` naming this server's streams when sessions are shared; empty otherwise.
    pub(super) stream_prefix: String,
    /// The 8 hex digits of `stream_prefix`: this replica's name for relays; empty when not shared.
    pub(super) replica: String,
    pub(super) sessions: Mutex<HashMap<String, Arc<Session>>>,
    pub(super) app: App,
    pub(super) shutting_down: AtomicBool,
    pub(super) failed_tokens: Mutex<FailedTokens>,
    pub(super) session_caps: Arc<SessionCaps>,
    /// Messages the sessions' standalone streams dropped for a GET not open ([`QUEUED_FOR_GET`]).
    pub(super) standalone_drops: Arc<Drops>,
    /// Turns true at shutdown: the routes' streamed bodies end.
    pub(super) route_streams_end: watch::Sender<bool>,
}

impl Shared {
    /// Checks `config`, builds the sessions' table and starts their background work (idle
    /// expiry; with a session store, the relays and the sessions ended elsewhere), which runs
    /// until `stopped` changes or its sender is dropped.
    pub(in crate::transport::sse_http) async fn start(
        config: HttpServerConfig,
        app: App,
        stopped: watch::Receiver<bool>,
    ) -> std::io::Result<Arc<Shared>> {
        if let Some(why) = config.invalid() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
        }
        let store: Arc<dyn EventStore> =
            config.event_store.clone().unwrap_or_else(|| Arc::new(MemoryEventStore::new(config.event_store_capacity)));
        let stream_prefix = match config.session_store {
            Some(_) => format!("{}-", &random_id()[..8]),
            None => String::new(),
        };
        let replica = stream_prefix.trim_end_matches('-').to_owned();
        let relayed = match &config.session_store {
            Some(sessions) => sessions.relayed(&replica).await.map_err(|e| std::io::Error::other(e.to_string()))?,
            None => None,
        };
        let shared = Arc::new(Shared {
            config,
            store,
            replica,
            stream_prefix,
            sessions: Mutex::new(HashMap::new()),
            app,
            shutting_down: AtomicBool::new(false),
            failed_tokens: Mutex::default(),
            session_caps: Arc::default(),
            standalone_drops: Arc::default(),
            route_streams_end: watch::channel(false).0,
        });
        crate::transport::task::spawn(reap_idle(Arc::downgrade(&shared), stopped.clone()));
        if let Some(ended) = shared.config.session_store.as_ref().and_then(|s| s.ended_elsewhere()) {
            crate::transport::task::spawn(end_sessions_ended_elsewhere(
                Arc::downgrade(&shared),
                ended,
                stopped.clone(),
            ));
        }
        if let Some(relayed) = relayed {
            crate::transport::task::spawn(take_relayed(Arc::downgrade(&shared), relayed, stopped));
        }
        Ok(shared)
    }

    pub(in crate::transport::sse_http) fn session_count(&self) -> usize {
        self.sessions.lock().expect("sessions lock").len()
    }

    pub(in crate::transport::sse_http) fn standalone_messages_dropped(&self) -> u64 {
        self.standalone_drops.total()
    }

    /// New requests get 503 from now on; the standalone streams and the legacy sessions end
    /// (nothing would ever end them), the POST streams in flight go on.
    pub(in crate::transport::sse_http) async fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        self.route_streams_end.send_replace(true);
        let sessions: Vec<Arc<Session>> = self.sessions.lock().expect("sessions lock").values().cloned().collect();
        for session in &sessions {
            if session.legacy {
                session.close().await;
            } else {
                session.standalone.detach().await;
            }
        }
    }

    /// Ends every session held here (other replicas go on serving a shared session).
    pub(in crate::transport::sse_http) async fn end_sessions(&self) {
        let sessions: Vec<Arc<Session>> = self.sessions.lock().expect("sessions lock").values().cloned().collect();
        for session in sessions {
            session.end(self.forget_when_gone_here(false)).await;
        }
    }

    /// A new session, kept in the table when `keep` (`None` when the table holds
    /// [`HttpServerConfig::max_sessions`] already: nothing was started).
    pub(super) fn new_session(
        self: &Arc<Self>,
        legacy: bool,
        json: bool,
        keep: bool,
    ) -> Option<(Arc<Session>, ServerTransport)> {
        let id = if keep { random_id() } else { String::new() };
        let (session, transport) = self.build_session(id, legacy, json);
        if keep {
            let mut sessions = self.sessions.lock().expect("sessions lock");
            if !decide::room_for_session(&self.config, sessions.len()) {
                return None;
            }
            sessions.insert(session.id.clone(), session.clone());
        }
        Some((session, transport))
    }

    /// A session that belongs to no table (stateless requests): never refused.
    pub(super) fn unkept_session(self: &Arc<Self>, json: bool) -> (Arc<Session>, ServerTransport) {
        self.build_session(String::new(), false, json)
    }

    /// A session of id `id`, not yet in the table.
    pub(super) fn build_session(
        self: &Arc<Self>,
        id: String,
        legacy: bool,
        json: bool,
    ) -> (Arc<Session>, ServerTransport) {
        // Only the sessions a store can share get prefixed stream names.
        let prefix = if id.is_empty() || legacy { String::new() } else { self.stream_prefix.clone() };
        let (tx, rx) = mpsc::channel(self.config.limits.queue_depth.max(1));
        let session = Arc::new(Session {
            standalone: Stream::standalone(&id, format_args!("{prefix}0"), self.standalone_drops.clone()),
            id_header: session_header_value(&id),
            id: id.clone(),
            caps: Mutex::new(None),
            legacy,
            json,
            incoming: Mutex::new(Some(tx)),
            version: Mutex::new(None),
            initialize_id: Mutex::new(None),
            param_headers: Mutex::new(None),
            principal: Mutex::new(None),
            routes: Mutex::new(Routes::default()),
            standalone_holds: AtomicU64::new(0),
            next_stream: AtomicU64::new(1),
            last_active: Mutex::new(Instant::now()),
            open_connections: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            shared: Arc::downgrade(self),
            store: self.store.clone(),
            stream_prefix: prefix,
            record: Mutex::new(None),
            replayed_ids: Mutex::new(HashSet::new()),
            replayed_initialize_answered: Mutex::new(None),
            initialized_given: AtomicBool::new(false),
            store_touched: Mutex::new(Instant::now()),
            outbound: Mutex::new(Outbound::default()),
            hold_timer: HoldTimer::default(),
        });
        let transport = ServerTransport { session: session.clone(), incoming: tokio::sync::Mutex::new(rx) };
        (session, transport)
    }

    pub(super) fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions.lock().expect("sessions lock").get(id).cloned()
    }

    /// How far a session idle here (`idle`), or of a replica shutting down, is forgotten:
    /// only here when a session store shares it (its record expires there on its own).
    pub(super) fn forget_when_gone_here(&self, idle: bool) -> Forget {
        match (self.config.session_store.is_some(), idle) {
            (false, _) => Forget::Everywhere,
            (true, true) => Forget::HereWithEvents,
            (true, false) => Forget::Here,
        }
    }

    /// The session of `id`: this server's, or, with a session store, rebuilt from it. `Err` is
    /// the answer when the store cannot be asked.
    pub(super) async fn find_session(self: &Arc<Self>, id: &str) -> Result<Option<Arc<Session>>, Response<HttpBody>> {
        if let Some(session) = self.session(id) {
            session.keep_in_store(self);
            return Ok(Some(session));
        }
        restore(self, id).await
    }
}

/// A place for a new session of the request whose extensions are `extensions` under the caps
/// per client address and per principal ([`crate::transport::sse_http::session_caps`]), or which cap refused it.
pub(super) fn reserve_session_place(
    shared: &Shared,
    extensions: &hyper::http::Extensions,
) -> Result<session_caps::Held, session_caps::Refused> {
    let (addr, principal) = (extensions.get::<RemoteAddr>(), extensions.get::<Authenticated>());
    let (config, principal) = (&shared.config, principal.map(|p| session_caps::principal_key(&p.0)));
    shared.session_caps.reserve(
        addr.map(|a| a.0.ip()),
        config.max_sessions_per_address,
        principal,
        config.max_sessions_per_principal,
    )
}

pub(super) async fn reap_idle(shared: Weak<Shared>, mut stopped: watch::Receiver<bool>) {
    loop {
        let Some(idle) = shared.upgrade().map(|s| s.config.session_idle_timeout) else { return };
        tokio::select! {
            _ = tokio::time::sleep(reap_tick(idle)) => {}
            _ = stopped.changed() => return,
        }
        let Some(shared) = shared.upgrade() else { return };
        let now = Instant::now();
        let expired: Vec<Arc<Session>> = shared
            .sessions
            .lock()
            .expect("sessions lock")
            .values()
            .filter(|s| {
                let last_active = *s.last_active.lock().expect("session lock");
                idle_expired(s.open_connections.load(Ordering::Acquire), last_active, now, idle)
            })
            .cloned()
            .collect();
        for session in expired {
            session.end(shared.forget_when_gone_here(true)).await;
        }
    }
}
