//! [`RedisStore`]: the [`SessionStore`] and the [`EventStore`] on Redis (feature `redis`), so
//! that N replicas of a server behind a load balancer without sticky sessions serve every
//! handshake-era session and resume every stream (see docs/scaling.md).
//!
//! Layout, under a key prefix (`mcpwire:` by default):
//! - `<prefix>session:<id>`: a hash (`initialize`: the params as JSON text, `replayed`: a JSON
//!   array of the state-changing requests since), with a time to live (the server's idle
//!   timeout, pushed back as the session is used).
//! - `<prefix>events:<session>/<stream>`: a Redis stream capped at
//!   [`RedisOptions::events_per_stream`] (`XADD … MAXLEN ~`), one entry per event, its entry id
//!   `<seq>-0` and its message in field `d`; `XRANGE` from `<seq+1>-0` replays what a client
//!   missed, on any replica. Each stream's key expires [`RedisOptions::event_ttl`] after its
//!   latest event.
//!
//! The connection is the `redis` crate's tokio `ConnectionManager` (one multiplexed
//! connection, reconnected when it breaks). Every call is bounded by
//! [`RedisOptions::timeout`]: when Redis cannot be reached the call fails with
//! [`StoreError::Unavailable`] in that time (the server answers 503) and the next call tries
//! again, so service resumes by itself when Redis is back. Events are written by a background
//! task in order (the server's `append` never waits; it awaits [`EventStore::flush`] only
//! before it ends a POST's stream, so that the whole stream is in Redis once the client has
//! read it); one that cannot be written is lost for a resumption only, never for the live
//! stream.
//!
//! A removed session (DELETE) is announced on the pub/sub channel `<prefix>ended`; every
//! replica listens there and ends its own copy ([`SessionStore::ended_elsewhere`]). The
//! listener reconnects after an outage; a removal announced while it was away is missed, and
//! that replica's copy lives on until it is idle there.
//!
//! Several stores on one connection ([`RedisStore::with_prefix`]): a store lends its
//! connection, its pub/sub connection and its pub/sub listener to another store under another
//! key prefix, so that N key prefixes (the virtual servers of `mcp-bridge serve`) cost two
//! connections to Redis, as one does.
//!
//! Messages between replicas ([`SessionStore::relay`]): each replica subscribes to the pub/sub
//! channel `<prefix>replica:<name>`; a relayed message is published there (`PUBLISH`, whose
//! count of receivers tells whether that replica is alive). Its payload is one byte of kind
//! (`r` a response, `s` a message for the standalone stream), the session id, a newline, then
//! the JSON-RPC message. The replica holding a session's standalone GET stream is kept under
//! `<prefix>stream:<id>` (its name, expiring with the session's idle timeout, replaced at
//! every GET and renewed while it stays open, deleted with the session). Every channel of the
//! stores sharing a connection is on one pub/sub connection, each message handed to its
//! channel's listeners; when that connection drops it is made again at once, and, while Redis
//! is away, every [`RedisOptions::timeout`], subscribed again to every channel. A message
//! nobody heard is published again after 50, 100 and 200 ms ([`RELAY_RETRIES`]), which covers
//! a subscription being made again; what is published during an outage is lost (pub/sub keeps
//! nothing), as it is for a replica that is gone.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSubSink, PubSubStream};
use redis::streams::StreamRangeReply;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::event_store::{EventStore, Flushed, StoredEvent};
use super::session_store::{
    RelayKind, Relayed, ReplayedRequest, SessionRecord, SessionStore, StoreError, StoreFuture, RELAY_QUEUE,
};

/// The pauses before a relayed message that no replica heard is published again: a replica
/// whose subscription connection dropped is subscribed again within them.
pub const RELAY_RETRIES: [Duration; 3] =
    [Duration::from_millis(50), Duration::from_millis(100), Duration::from_millis(200)];

/// How a [`RedisStore`] uses Redis. Every field has a documented default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedisOptions {
    /// The longest any call (and a connection attempt) may take: 2 s.
    pub timeout: Duration,
    /// Events kept per stream for resumption: 1000 (at least; trimming is approximate).
    pub events_per_stream: usize,
    /// How long a stream's events are kept after its latest one: 30 minutes.
    pub event_ttl: Duration,
    /// What every key starts with: `mcpwire:`.
    pub key_prefix: String,
    /// Events waiting to be written, beyond which new ones are not stored: 4096.
    pub write_queue: usize,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            timeout: Duration::from_secs(2),
            events_per_stream: 1000,
            event_ttl: Duration::from_secs(30 * 60),
            key_prefix: "mcpwire:".to_owned(),
            write_queue: 4096,
        }
    }
}

impl RedisOptions {
    /// Another call timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Another cap of events per stream.
    pub fn events_per_stream(mut self, events: usize) -> Self {
        self.events_per_stream = events;
        self
    }

    /// Another key prefix (several deployments on one Redis).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }
}

enum Write {
    Append {
        key: String,
        seq: u64,
        data: Bytes,
    },
    Remove {
        key: String,
    },
    /// Answered once everything queued before it is written (or failed).
    Flush(oneshot::Sender<()>),
}

/// Sessions and events in Redis. One value serves as both stores:
/// `Arc<RedisStore>` coerces to `Arc<dyn SessionStore>` and to `Arc<dyn EventStore>`.
pub struct RedisStore {
    connection: ConnectionManager,
    /// The pub/sub connection, shared with the stores of [`RedisStore::with_prefix`].
    subscriptions: Arc<Subscriptions>,
    options: RedisOptions,
    writes: mpsc::Sender<Write>,
    ended: broadcast::Sender<String>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the URL: it may hold a password.
        f.debug_struct("RedisStore").field("options", &self.options).finish_non_exhaustive()
    }
}

fn unavailable(error: redis::RedisError) -> StoreError {
    // The error's kind and text, which name neither the URL nor credentials.
    StoreError::Unavailable(error.to_string())
}

impl RedisStore {
    /// Connects to the Redis at `url` (`redis://[user:password@]host:port[/db]`): one
    /// multiplexed connection for commands, one for pub/sub.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the URL is not one, or Redis cannot be reached within
    /// [`RedisOptions::timeout`].
    pub async fn connect(url: &str, options: RedisOptions) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(|e| StoreError::Unavailable(format!("bad Redis URL: {e}")))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(options.timeout)
            .set_response_timeout(options.timeout)
            .set_number_of_retries(1)
            .set_max_delay(options.timeout.as_millis() as u64);
        let connection =
            tokio::time::timeout(options.timeout, ConnectionManager::new_with_config(client.clone(), config))
                .await
                .map_err(|_| StoreError::Unavailable("Redis did not answer in time".into()))?
                .map_err(unavailable)?;
        let subscriptions = Subscriptions::start(client, options.timeout).await?;
        RedisStore::over(connection, subscriptions, options).await
    }

    /// Another store on this one's connections (commands and pub/sub), its keys and channels
    /// under `prefix` instead: what it keeps is apart from this store's, as with a connection
    /// of its own, and no connection is opened. The options other than the prefix are this
    /// store's.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`]: its channel of ended sessions cannot be subscribed to
    /// (Redis away) within [`RedisOptions::timeout`].
    pub async fn with_prefix(&self, prefix: impl Into<String>) -> Result<RedisStore, StoreError> {
        let options = self.options.clone().key_prefix(prefix);
        RedisStore::over(self.connection.clone(), self.subscriptions.clone(), options).await
    }

    /// A store of `options` on these connections: its event writer started, its channel of
    /// ended sessions subscribed to (before the store is handed out, so that no removal after
    /// it goes unheard).
    async fn over(
        connection: ConnectionManager,
        subscriptions: Arc<Subscriptions>,
        options: RedisOptions,
    ) -> Result<RedisStore, StoreError> {
        let (ended, _) = broadcast::channel(256);
        let weak = ended.downgrade();
        let forward_ended = move |payload: &[u8]| match weak.upgrade() {
            Some(ended) => {
                // An empty payload only asks whether to go on.
                match std::str::from_utf8(payload) {
                    Ok(id) if !id.is_empty() => {
                        let _ = ended.send(id.to_owned());
                    }
                    _ => {}
                }
                true
            }
            None => false,
        };
        subscriptions.subscribe(format!("{}ended", options.key_prefix), Box::new(forward_ended)).await?;
        let (writes, queue) = mpsc::channel(options.write_queue.max(1));
        crate::transport::task::spawn(write_events(connection.clone(), options.clone(), queue));
        Ok(RedisStore { connection, subscriptions, options, writes, ended })
    }

    /// Its connection (a clone shares the one multiplexed connection), for other state kept in
    /// the same Redis (the gateway's shared rate limits).
    #[cfg(feature = "gateway")]
    pub(crate) fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    /// Its options (the timeout and key prefix other users of its connection keep to).
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    fn session_key(&self, id: &str) -> String {
        format!("{}session:{id}", self.options.key_prefix)
    }

    fn stream_key(&self, id: &str) -> String {
        format!("{}stream:{id}", self.options.key_prefix)
    }

    fn replica_channel(&self, replica: &str) -> String {
        format!("{}replica:{replica}", self.options.key_prefix)
    }

    fn events_key(&self, stream: &str) -> String {
        format!("{}events:{stream}", self.options.key_prefix)
    }

    async fn run<T: redis::FromRedisValue>(&self, command: impl FnOnce() -> redis::Pipeline) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        let pipeline = command();
        match tokio::time::timeout(self.options.timeout, pipeline.query_async::<T>(&mut connection)).await {
            Ok(result) => result.map_err(unavailable),
            Err(_) => Err(StoreError::Unavailable("Redis did not answer in time".into())),
        }
    }
}

/// What a listener of a channel is handed each payload published there with; it answers
/// whether to go on (`false`: its receiver is gone). An empty payload only asks that (after
/// the pub/sub connection dropped).
type Deliver = Box<dyn FnMut(&[u8]) -> bool + Send>;

/// One pub/sub connection for every channel of the stores sharing it, each message handed to
/// the listeners of its channel. A connection that drops is made again at once and, while
/// Redis is away, every `pause`, subscribed to every channel listened on.
struct Subscriptions {
    client: redis::Client,
    pause: Duration,
    /// The listeners, each with its number (to remove the one whose subscription failed) and
    /// channel.
    listeners: Mutex<Vec<(u64, String, Deliver)>>,
    next_listener: std::sync::atomic::AtomicU64,
    /// The sink of the connection up now (`None` while it is made again), held while a channel
    /// is subscribed to or left and while the connection is made again: no channel is missed.
    sink: tokio::sync::Mutex<Option<PubSubSink>>,
    /// Dropped with the last store: ends the reading task (and so the connection).
    _alive: oneshot::Sender<()>,
}

impl Subscriptions {
    /// Connected, its reading task started.
    async fn start(client: redis::Client, pause: Duration) -> Result<Arc<Subscriptions>, StoreError> {
        let (sink, stream) = tokio::time::timeout(pause, client.get_async_pubsub())
            .await
            .map_err(|_| StoreError::Unavailable("Redis did not answer in time".into()))?
            .map_err(unavailable)?
            .split();
        let (alive, gone) = oneshot::channel();
        let subscriptions = Arc::new(Subscriptions {
            client,
            pause,
            listeners: Mutex::default(),
            next_listener: Default::default(),
            sink: tokio::sync::Mutex::new(Some(sink)),
            _alive: alive,
        });
        crate::transport::task::spawn(read_subscriptions(Arc::downgrade(&subscriptions), stream, gone));
        Ok(subscriptions)
    }

    /// Hands each payload published on `channel` from now on to `deliver`, until it answers
    /// `false`.
    async fn subscribe(&self, channel: String, deliver: Deliver) -> Result<(), StoreError> {
        let mut sink = self.sink.lock().await;
        let Some(sink) = sink.as_mut() else {
            return Err(StoreError::Unavailable("Redis is away (its pub/sub connection is being made again)".into()));
        };
        let number = self.next_listener.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Listening before subscribed: no message published once subscribed is missed.
        self.listeners().push((number, channel.clone(), deliver));
        let subscribed = match tokio::time::timeout(self.pause, sink.subscribe(&channel)).await {
            Ok(subscribed) => subscribed.map_err(unavailable),
            Err(_) => Err(StoreError::Unavailable("Redis did not answer in time".into())),
        };
        if subscribed.is_err() {
            self.listeners().retain(|(n, _, _)| *n != number);
        }
        subscribed
    }

    fn listeners(&self) -> std::sync::MutexGuard<'_, Vec<(u64, String, Deliver)>> {
        self.listeners.lock().expect("listeners lock")
    }

    /// Hands `payload` to the listeners of `channel`; leaves the channel when none is left.
    async fn deliver(&self, channel: &str, payload: &[u8]) {
        let mut gone = false;
        self.listeners().retain_mut(|(_, heard, deliver)| {
            let keep = heard != channel || deliver(payload);
            gone |= !keep;
            keep
        });
        if gone {
            let mut sink = self.sink.lock().await;
            let unheard = !self.listeners().iter().any(|(_, heard, _)| heard == channel);
            if let (true, Some(sink)) = (unheard, sink.as_mut()) {
                // At worst (no answer) the channel stays subscribed, its messages dropped.
                let _ = tokio::time::timeout(self.pause, sink.unsubscribe(channel)).await;
            }
        }
    }

    /// After the connection dropped: asks every listener whether to go on (an empty payload),
    /// then connects again and subscribes to the channels of those that do; `None` when Redis
    /// cannot be reached (or does not answer) within `pause`.
    async fn reconnect(&self) -> Option<PubSubStream> {
        let mut sink = self.sink.lock().await;
        *sink = None;
        self.listeners().retain_mut(|(_, _, deliver)| deliver(&[]));
        let (mut new_sink, stream) =
            tokio::time::timeout(self.pause, self.client.get_async_pubsub()).await.ok()?.ok()?.split();
        let mut channels: Vec<String> = self.listeners().iter().map(|(_, channel, _)| channel.clone()).collect();
        channels.sort();
        channels.dedup();
        if !channels.is_empty() {
            tokio::time::timeout(self.pause, new_sink.subscribe(&channels)).await.ok()?.ok()?;
        }
        *sink = Some(new_sink);
        Some(stream)
    }
}

/// Hands each message of `stream` to its channel's listeners until `subscriptions` is gone;
/// when the connection drops, makes it again (at once, then every pause while Redis is away).
async fn read_subscriptions(
    subscriptions: Weak<Subscriptions>,
    mut stream: PubSubStream,
    mut gone: oneshot::Receiver<()>,
) {
    loop {
        loop {
            let message = tokio::select! {
                message = stream.next() => message,
                _ = &mut gone => return,
            };
            let Some(message) = message else { break };
            let Some(subscriptions) = subscriptions.upgrade() else { return };
            subscriptions.deliver(message.get_channel_name(), message.get_payload_bytes()).await;
        }
        let mut first = true;
        stream = loop {
            let Some(current) = subscriptions.upgrade() else { return };
            let pause = current.pause;
            if !first {
                drop(current);
                // While Redis is away, a pause between attempts, not a synchronisation.
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = &mut gone => return,
                }
            }
            first = false;
            let Some(current) = subscriptions.upgrade() else { return };
            if let Some(stream) = current.reconnect().await {
                break stream;
            }
        };
    }
}

/// A relayed message as published: kind byte, session id, newline, message.
fn encode_relayed(relayed: &Relayed) -> Vec<u8> {
    let kind = match relayed.kind {
        RelayKind::Response => b'r',
        RelayKind::Standalone => b's',
    };
    let mut payload = Vec::with_capacity(2 + relayed.session.len() + relayed.message.len());
    payload.push(kind);
    payload.extend_from_slice(relayed.session.as_bytes());
    payload.push(b'\n');
    payload.extend_from_slice(&relayed.message);
    payload
}

fn decode_relayed(payload: &[u8]) -> Option<Relayed> {
    let (&kind, rest) = payload.split_first()?;
    let kind = match kind {
        b'r' => RelayKind::Response,
        b's' => RelayKind::Standalone,
        _ => return None,
    };
    let newline = memchr::memchr(b'\n', rest)?;
    let session = std::str::from_utf8(&rest[..newline]).ok()?.to_owned();
    Some(Relayed { session, kind, message: Bytes::copy_from_slice(&rest[newline + 1..]) })
}

/// Writes queued events in order, a batch per round trip.
async fn write_events(mut connection: ConnectionManager, options: RedisOptions, mut queue: mpsc::Receiver<Write>) {
    let prefix = options.key_prefix.clone();
    let ttl_ms = options.event_ttl.as_millis() as u64;
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < 256 {
            match queue.try_recv() {
                Ok(write) => batch.push(write),
                Err(_) => break,
            }
        }
        let mut pipeline = redis::pipe();
        let mut flushed = Vec::new();
        for write in batch {
            match write {
                Write::Append { key, seq, data } => {
                    let key = format!("{prefix}events:{key}");
                    pipeline
                        .cmd("XADD")
                        .arg(&key)
                        .arg("MAXLEN")
                        .arg("~")
                        .arg(options.events_per_stream.max(1))
                        .arg(format!("{seq}-0"))
                        .arg("d")
                        .arg(&data[..])
                        .ignore();
                    pipeline.cmd("PEXPIRE").arg(&key).arg(ttl_ms).ignore();
                }
                Write::Remove { key } => {
                    pipeline.cmd("DEL").arg(format!("{prefix}events:{key}")).ignore();
                }
                Write::Flush(done) => flushed.push(done),
            }
        }
        // A failed batch is lost for resumption only (documented); the next one tries again.
        let _ = tokio::time::timeout(options.timeout, pipeline.query_async::<()>(&mut connection)).await;
        for done in flushed {
            let _ = done.send(());
        }
    }
}

impl SessionStore for RedisStore {
    fn save<'a>(&'a self, id: &'a str, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.session_key(id);
            let replayed = serde_json::to_string(&record.replayed).expect("requests serialize");
            self.run(|| {
                let mut pipeline = redis::pipe();
                pipeline.atomic();
                pipeline.cmd("DEL").arg(&key).ignore();
                pipeline
                    .cmd("HSET")
                    .arg(&key)
                    .arg("initialize")
                    .arg(&record.initialize)
                    .arg("replayed")
                    .arg(&replayed)
                    .ignore();
                pipeline.cmd("PEXPIRE").arg(&key).arg(ttl.as_millis().max(1) as u64).ignore();
                pipeline
            })
            .await
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let key = self.session_key(id);
            let (mut fields,): (std::collections::HashMap<String, String>,) = self
                .run(|| {
                    let mut pipeline = redis::pipe();
                    pipeline.cmd("HGETALL").arg(&key);
                    pipeline
                })
                .await?;
            let Some(initialize) = fields.remove("initialize") else { return Ok(None) };
            let replayed: Vec<ReplayedRequest> = match fields.remove("replayed") {
                Some(text) => serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                None => Vec::new(),
            };
            Ok(Some(SessionRecord { initialize, replayed }))
        })
    }

    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.session_key(id);
            self.run(|| {
                let mut pipeline = redis::pipe();
                pipeline.cmd("PEXPIRE").arg(&key).arg(ttl.as_millis().max(1) as u64).ignore();
                pipeline
            })
            .await
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.session_key(id);
            let stream_key = self.stream_key(id);
            let channel = format!("{}ended", self.options.key_prefix);
            self.run(|| {
                let mut pipeline = redis::pipe();
                pipeline.cmd("DEL").arg(&key).arg(&stream_key).ignore();
                pipeline.cmd("PUBLISH").arg(&channel).arg(id).ignore();
                pipeline
            })
            .await
        })
    }

    fn ended_elsewhere(&self) -> Option<broadcast::Receiver<String>> {
        Some(self.ended.subscribe())
    }

    fn relay<'a>(&'a self, replica: &'a str, message: &'a Relayed) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let channel = self.replica_channel(replica);
            let payload = encode_relayed(message);
            // Nobody subscribed: the replica is gone, or its subscription is being made again
            // (a dropped connection); a few short retries tell the two apart.
            let pauses = std::iter::once(None).chain(RELAY_RETRIES.iter().copied().map(Some));
            for pause in pauses {
                if let Some(pause) = pause {
                    tokio::time::sleep(pause).await;
                }
                let (receivers,): (u64,) = self
                    .run(|| {
                        let mut pipeline = redis::pipe();
                        pipeline.cmd("PUBLISH").arg(&channel).arg(&payload);
                        pipeline
                    })
                    .await?;
                if receivers > 0 {
                    return Ok(true);
                }
            }
            Ok(false)
        })
    }

    fn relayed<'a>(&'a self, replica: &'a str) -> StoreFuture<'a, Option<mpsc::Receiver<Relayed>>> {
        Box::pin(async move {
            let (tx, rx) = mpsc::channel(RELAY_QUEUE);
            let forward = move |payload: &[u8]| {
                if tx.is_closed() {
                    return false;
                }
                // An empty payload only asks whether to go on; a full queue drops, as pub/sub would.
                if let Some(relayed) = decode_relayed(payload) {
                    let _ = tx.try_send(relayed);
                }
                true
            };
            self.subscriptions.subscribe(self.replica_channel(replica), Box::new(forward)).await?;
            Ok(Some(rx))
        })
    }

    fn hold_stream<'a>(&'a self, id: &'a str, replica: &'a str, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.stream_key(id);
            self.run(|| {
                let mut pipeline = redis::pipe();
                pipeline.cmd("SET").arg(&key).arg(replica).arg("PX").arg(ttl.as_millis().max(1) as u64).ignore();
                pipeline
            })
            .await
        })
    }

    fn stream_holder<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(async move {
            let key = self.stream_key(id);
            let (holder,): (Option<String>,) = self
                .run(|| {
                    let mut pipeline = redis::pipe();
                    pipeline.cmd("GET").arg(&key);
                    pipeline
                })
                .await?;
            Ok(holder)
        })
    }
}

impl EventStore for RedisStore {
    fn append(&self, stream: &str, event: StoredEvent) {
        // Never waits: a full queue means Redis is behind or away; this event is then not kept
        // for resumption.
        let _ = self.writes.try_send(Write::Append { key: stream.to_owned(), seq: event.seq, data: event.data });
    }

    /// Always empty: Redis cannot be asked without waiting. The server calls
    /// [`replay`](EventStore::replay).
    fn replay_after(&self, _stream: &str, _seq: u64) -> Vec<StoredEvent> {
        Vec::new()
    }

    fn flush(&self) -> Option<Flushed> {
        let (writes, timeout) = (self.writes.clone(), self.options.timeout);
        Some(Box::pin(async move {
            let (done, written) = oneshot::channel();
            if writes.send(Write::Flush(done)).await.is_ok() {
                let _ = tokio::time::timeout(timeout, written).await;
            }
        }))
    }

    fn replay<'a>(&'a self, stream: &'a str, seq: u64) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(async move {
            // What this replica queued before is written first.
            if let Some(written) = EventStore::flush(self) {
                written.await;
            }
            let key = self.events_key(stream);
            let (reply,): (StreamRangeReply,) = self
                .run(|| {
                    let mut pipeline = redis::pipe();
                    pipeline.cmd("XRANGE").arg(&key).arg(format!("{}-0", seq.saturating_add(1))).arg("+");
                    pipeline
                })
                .await?;
            let mut events = Vec::with_capacity(reply.ids.len());
            for entry in reply.ids {
                let seq = entry.id.split('-').next().and_then(|s| s.parse().ok());
                let data = match entry.map.get("d") {
                    Some(redis::Value::BulkString(bytes)) => Some(Bytes::copy_from_slice(bytes)),
                    _ => None,
                };
                match (seq, data) {
                    (Some(seq), Some(data)) => events.push(StoredEvent { seq, data }),
                    _ => return Err(StoreError::Corrupt(format!("stream entry {} of {stream}", entry.id))),
                }
            }
            Ok(events)
        })
    }

    fn remove(&self, stream: &str) {
        let _ = self.writes.try_send(Write::Remove { key: stream.to_owned() });
    }
}
