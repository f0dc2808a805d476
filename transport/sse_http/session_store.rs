//! Where a Streamable HTTP server keeps what a handshake-era session needs so that a replica
//! that did not see its `initialize` can serve it: N server processes behind a load balancer
//! without sticky sessions (see docs/scaling.md).
//!
//! A [`SessionRecord`] holds the client's `initialize` params and the later requests that
//! changed the session's state (`logging/setLevel`, `resources/subscribe` and
//! `unsubscribe`). It is written when the session is created and when such a request comes,
//! read by a replica that gets a session id it does not know, and deleted on DELETE (or left
//! to expire: every write and [`SessionStore::touch`] sets its time to live). The replica
//! rebuilds the session by replaying the record to its application as the first messages of
//! a new transport (an `initialize` whose answer is dropped, `notifications/initialized`, then
//! the changes), so the server layer above needs nothing of this: it negotiates the same
//! version from the same params, and learns the same client capabilities, info and level.
//!
//! What is not in a record: requests in flight, the server's own requests to the client, and
//! anything an application keeps per session beyond what these requests tell it.
//!
//! The store also carries messages between replicas ([`SessionStore::relay`], received through
//! [`SessionStore::relayed`]): the client's response to a server-to-client request, POSTed to
//! a replica that did not send that request, goes to the one that did; a message for the
//! session's standalone GET stream goes to the replica holding that stream
//! ([`SessionStore::hold_stream`], [`SessionStore::stream_holder`]). A store that does not
//! relay (the trait's defaults) leaves both where they arose, as before.
//!
//! [`MemorySessionStore`] shares sessions between servers of one process (tests, or several
//! listeners); the Redis store (feature `redis`) between processes. With no store configured
//! (the default) sessions live in their server alone, as before.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;

/// What a store's call returns: boxed, so the stores can be trait objects.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The store cannot be reached, or did not answer within its timeout.
    Unavailable(String),
    /// What the store holds under that key is not a record this version can read.
    Corrupt(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unavailable(why) => write!(f, "session store unavailable: {why}"),
            StoreError::Corrupt(why) => write!(f, "session store holds an unreadable record: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// One request replayed after `initialize` when a replica rebuilds a session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReplayedRequest {
    /// Its method.
    pub method: String,
    /// Its params, as JSON text.
    pub params: String,
}

/// What a replica needs to serve a handshake-era session it did not create.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionRecord {
    /// The params of the client's `initialize`, as JSON text (protocol version, capabilities,
    /// client info).
    pub initialize: String,
    /// The state-changing requests since, oldest first: the latest `logging/setLevel` and one
    /// `resources/subscribe` per URI still subscribed.
    pub replayed: Vec<ReplayedRequest>,
}

/// The methods whose effect outlives their request and so goes into the record.
pub(crate) fn changes_state(method: &str) -> bool {
    matches!(method, "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe")
}

impl SessionRecord {
    /// A record for a session just initialized with `params`.
    pub fn new(initialize: impl Into<String>) -> Self {
        SessionRecord { initialize: initialize.into(), replayed: Vec::new() }
    }

    /// Takes in a state-changing request; `false` when it changes nothing the record keeps (a
    /// method of no state, or a repeated subscription).
    pub fn apply(&mut self, method: &str, params: &str) -> bool {
        let uri = |params: &str| {
            serde_json::from_str::<serde_json::Value>(params)
                .ok()
                .and_then(|v| v.get("uri").and_then(|u| u.as_str()).map(str::to_owned))
        };
        match method {
            "logging/setLevel" => {
                self.replayed.retain(|r| r.method != method);
            }
            "resources/subscribe" => {
                let new = uri(params);
                if self.replayed.iter().any(|r| r.method == method && uri(&r.params) == new) {
                    return false;
                }
            }
            "resources/unsubscribe" => {
                let gone = uri(params);
                let before = self.replayed.len();
                self.replayed.retain(|r| !(r.method == "resources/subscribe" && uri(&r.params) == gone));
                return self.replayed.len() != before;
            }
            _ => return false,
        }
        self.replayed.push(ReplayedRequest { method: method.to_owned(), params: params.to_owned() });
        true
    }
}

/// What a relayed message is for: where the receiving replica puts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayKind {
    /// The client's response (or error response) to a request the receiving replica sent.
    Response,
    /// A message for the session's standalone GET stream, which the receiving replica holds.
    Standalone,
}

/// A message one replica hands to another through the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relayed {
    /// The session it belongs to.
    pub session: String,
    /// Where the receiver puts it.
    pub kind: RelayKind,
    /// The JSON-RPC message, as JSON text.
    pub message: Bytes,
}

/// How many relayed messages wait for their replica to take them before newer ones are dropped.
pub const RELAY_QUEUE: usize = 1024;

/// Storage for sessions shared between replicas. Each call may go over the network: the
/// server awaits it where the answer matters (a new session, a state change, an unknown id)
/// and answers 503 when it fails.
pub trait SessionStore: Send + Sync + 'static {
    /// Writes `record` under `id`, to expire after `ttl` without a [`touch`](Self::touch).
    fn save<'a>(&'a self, id: &'a str, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()>;

    /// The record under `id`, `None` when there is none (never was, deleted, expired).
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>>;

    /// Pushes the expiry of `id` to `ttl` from now (the session is in use).
    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, ()>;

    /// Deletes `id` (DELETE, or the application ended the session), and announces it to
    /// [`ended_elsewhere`](Self::ended_elsewhere) if the store can.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;

    /// The ids of sessions removed through any server sharing this store, as they are
    /// announced: a server holding a copy of one ends it. `None` (the default): nothing is
    /// announced, and a copy on another server lives on until it is idle there.
    fn ended_elsewhere(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }

    /// Hands `message` to the replica named `replica`. `Ok(true)` when a replica of that name
    /// listens ([`relayed`](Self::relayed)), `Ok(false)` when none does (gone, or never was).
    /// The default relays nothing: `Ok(false)`.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the store cannot be reached.
    fn relay<'a>(&'a self, replica: &'a str, message: &'a Relayed) -> StoreFuture<'a, bool> {
        let _ = (replica, message);
        Box::pin(std::future::ready(Ok(false)))
    }

    /// Listens for the messages relayed to `replica`, in the order each sender relayed them;
    /// `None` (the default) when this store relays nothing. Called once per server.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the store cannot be reached.
    fn relayed<'a>(&'a self, replica: &'a str) -> StoreFuture<'a, Option<mpsc::Receiver<Relayed>>> {
        let _ = replica;
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Records that `replica` now holds the standalone GET stream of session `id` (for `ttl`,
    /// renewed at every GET and, while the GET stays open, every quarter of `ttl`). The
    /// default records nothing.
    fn hold_stream<'a>(&'a self, id: &'a str, replica: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        let _ = (id, replica, ttl);
        Box::pin(std::future::ready(Ok(())))
    }

    /// The replica that last opened the standalone GET stream of session `id`, if any.
    fn stream_holder<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<String>> {
        let _ = id;
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// A [`SessionStore`] in this process's memory: shares sessions between the servers of one
/// process. Expired records are dropped when next looked at.
#[derive(Debug)]
pub struct MemorySessionStore {
    records: Mutex<HashMap<String, (SessionRecord, Instant)>>,
    ended: tokio::sync::broadcast::Sender<String>,
    /// Replica name → where the messages relayed to it go.
    replicas: Mutex<HashMap<String, mpsc::Sender<Relayed>>>,
    /// Session id → the replica holding its standalone stream, until when.
    stream_holders: Mutex<HashMap<String, (String, Instant)>>,
}

impl Default for MemorySessionStore {
    fn default() -> Self {
        MemorySessionStore {
            records: Mutex::new(HashMap::new()),
            ended: tokio::sync::broadcast::channel(256).0,
            replicas: Mutex::new(HashMap::new()),
            stream_holders: Mutex::new(HashMap::new()),
        }
    }
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records held and not expired.
    pub fn len(&self) -> usize {
        let now = Instant::now();
        self.records.lock().expect("session store lock").values().filter(|(_, until)| *until > now).count()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SessionStore for MemorySessionStore {
    fn save<'a>(&'a self, id: &'a str, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        let until = Instant::now() + ttl;
        self.records.lock().expect("session store lock").insert(id.to_owned(), (record.clone(), until));
        Box::pin(std::future::ready(Ok(())))
    }

    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        let mut records = self.records.lock().expect("session store lock");
        let found = match records.get(id) {
            Some((record, until)) if *until > Instant::now() => Some(record.clone()),
            Some(_) => {
                records.remove(id);
                None
            }
            None => None,
        };
        Box::pin(std::future::ready(Ok(found)))
    }

    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        if let Some((_, until)) = self.records.lock().expect("session store lock").get_mut(id) {
            *until = Instant::now() + ttl;
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.stream_holders.lock().expect("session store lock").remove(id);
        if self.records.lock().expect("session store lock").remove(id).is_some() {
            let _ = self.ended.send(id.to_owned());
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn ended_elsewhere(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.ended.subscribe())
    }

    fn relay<'a>(&'a self, replica: &'a str, message: &'a Relayed) -> StoreFuture<'a, bool> {
        let to = self.replicas.lock().expect("session store lock").get(replica).cloned();
        let delivered = match to {
            // As a pub/sub message would be, dropped when its receiver is that far behind.
            Some(to) => match to.try_send(message.clone()) {
                Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => true,
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.replicas.lock().expect("session store lock").remove(replica);
                    false
                }
            },
            None => false,
        };
        Box::pin(std::future::ready(Ok(delivered)))
    }

    fn relayed<'a>(&'a self, replica: &'a str) -> StoreFuture<'a, Option<mpsc::Receiver<Relayed>>> {
        let (tx, rx) = mpsc::channel(RELAY_QUEUE);
        self.replicas.lock().expect("session store lock").insert(replica.to_owned(), tx);
        Box::pin(std::future::ready(Ok(Some(rx))))
    }

    fn hold_stream<'a>(&'a self, id: &'a str, replica: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        let until = Instant::now() + ttl;
        self.stream_holders.lock().expect("session store lock").insert(id.to_owned(), (replica.to_owned(), until));
        Box::pin(std::future::ready(Ok(())))
    }

    fn stream_holder<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<String>> {
        let holders = self.stream_holders.lock().expect("session store lock");
        let holder = holders.get(id).filter(|(_, until)| *until > Instant::now()).map(|(replica, _)| replica.clone());
        Box::pin(std::future::ready(Ok(holder)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_the_latest_level_and_live_subscriptions() {
        let mut record = SessionRecord::new(r#"{"protocolVersion":"2025-11-25"}"#);
        assert!(record.apply("logging/setLevel", r#"{"level":"info"}"#));
        assert!(record.apply("resources/subscribe", r#"{"uri":"a://1"}"#));
        assert!(!record.apply("resources/subscribe", r#"{"uri":"a://1"}"#), "a repeated subscription");
        assert!(record.apply("resources/subscribe", r#"{"uri":"a://2"}"#));
        assert!(record.apply("logging/setLevel", r#"{"level":"error"}"#));
        assert!(record.apply("resources/unsubscribe", r#"{"uri":"a://1"}"#));
        assert!(!record.apply("resources/unsubscribe", r#"{"uri":"a://9"}"#));
        assert!(!record.apply("tools/call", "{}"));
        let kept: Vec<(&str, &str)> = record.replayed.iter().map(|r| (&*r.method, &*r.params)).collect();
        assert_eq!(kept, [("resources/subscribe", r#"{"uri":"a://2"}"#), ("logging/setLevel", r#"{"level":"error"}"#)]);
        let json = serde_json::to_string(&record).unwrap();
        assert_eq!(serde_json::from_str::<SessionRecord>(&json).unwrap(), record);
    }

    #[tokio::test]
    async fn memory_records_expire_and_are_removed() {
        let store = MemorySessionStore::new();
        let record = SessionRecord::new("{}");
        store.save("a", &record, Duration::from_secs(60)).await.unwrap();
        store.save("b", &record, Duration::ZERO).await.unwrap();
        assert_eq!(store.load("a").await.unwrap(), Some(record));
        assert_eq!(store.load("b").await.unwrap(), None, "expired");
        store.remove("a").await.unwrap();
        assert_eq!(store.load("a").await.unwrap(), None);
        assert!(store.is_empty());
    }

    #[tokio::test]
    async fn memory_relays_reach_the_named_replica_only_while_it_listens() {
        let store = MemorySessionStore::new();
        let message = Relayed { session: "s".into(), kind: RelayKind::Response, message: Bytes::from_static(b"{}") };
        assert!(!store.relay("r1", &message).await.unwrap(), "nobody listens as r1 yet");
        let mut r1 = store.relayed("r1").await.unwrap().expect("the memory store relays");
        assert!(store.relay("r1", &message).await.unwrap());
        assert_eq!(r1.recv().await, Some(message.clone()));
        assert!(!store.relay("r2", &message).await.unwrap(), "another name");
        drop(r1);
        assert!(!store.relay("r1", &message).await.unwrap(), "r1 is gone");

        assert_eq!(store.stream_holder("s").await.unwrap(), None);
        store.hold_stream("s", "r1", Duration::from_secs(60)).await.unwrap();
        store.hold_stream("s", "r2", Duration::from_secs(60)).await.unwrap();
        assert_eq!(store.stream_holder("s").await.unwrap().as_deref(), Some("r2"), "the latest GET");
        store.hold_stream("t", "r1", Duration::ZERO).await.unwrap();
        assert_eq!(store.stream_holder("t").await.unwrap(), None, "expired");
        SessionStore::remove(&store, "s").await.unwrap();
        assert_eq!(store.stream_holder("s").await.unwrap(), None, "forgotten with its session");
    }
}
