//! [`RedisStore`]: the [`SessionStore`] and the [`EventStore`] on Redis (feature `redis`), so
//! that N replicas of a server behind a load balancer without sticky sessions serve every
//! handshake-era session and resume every stream (see SCALING.md).
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
//! task in order (the server's `append` never waits); one that cannot be written is lost for a
//! resumption only, never for the live stream.
//!
//! A removed session (DELETE) is announced on the pub/sub channel `<prefix>ended`; every
//! replica listens there and ends its own copy ([`SessionStore::ended_elsewhere`]). The
//! listener reconnects after an outage; a removal announced while it was away is missed, and
//! that replica's copy lives on until it is idle there.
//!
//! Not here: pub/sub of server-to-client messages between replicas (a request the server sends
//! on one replica reaches the client only through that replica's streams).

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::streams::StreamRangeReply;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::event_store::{EventStore, StoredEvent};
use super::session_store::{ReplayedRequest, SessionRecord, SessionStore, StoreError, StoreFuture};

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
    /// Connects to the Redis at `url` (`redis://[user:password@]host:port[/db]`).
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
        let (writes, queue) = mpsc::channel(options.write_queue.max(1));
        tokio::spawn(write_events(connection.clone(), options.clone(), queue));
        // Subscribed before the store is handed out, so no removal after it goes unheard.
        let channel = format!("{}ended", options.key_prefix);
        let subscribed = tokio::time::timeout(options.timeout, async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        })
        .await
        .map_err(|_| StoreError::Unavailable("Redis did not answer in time".into()))?
        .map_err(unavailable)?;
        let (ended, _) = broadcast::channel(256);
        tokio::spawn(listen_for_ended(client, channel, options.timeout, ended.downgrade(), subscribed));
        Ok(RedisStore { connection, options, writes, ended })
    }

    fn session_key(&self, id: &str) -> String {
        format!("{}session:{id}", self.options.key_prefix)
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

/// Forwards the ids announced on `channel` to `ended` until the store is dropped; after a
/// failure, tries again every `pause`.
async fn listen_for_ended(
    client: redis::Client,
    channel: String,
    pause: Duration,
    ended: broadcast::WeakSender<String>,
    subscribed: redis::aio::PubSub,
) {
    let mut subscribed = Some(subscribed);
    loop {
        let pubsub = match subscribed.take() {
            Some(pubsub) => Some(pubsub),
            None => match tokio::time::timeout(pause, client.get_async_pubsub()).await {
                Ok(Ok(mut pubsub)) => pubsub.subscribe(&channel).await.is_ok().then_some(pubsub),
                _ => None,
            },
        };
        if let Some(pubsub) = pubsub {
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                let Some(ended) = ended.upgrade() else { return };
                if let Ok(id) = message.get_payload::<String>() {
                    let _ = ended.send(id);
                }
            }
        }
        if ended.upgrade().is_none() {
            return;
        }
        // Redis is away: a pause between attempts, not a synchronisation.
        tokio::time::sleep(pause).await;
    }
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
            let channel = format!("{}ended", self.options.key_prefix);
            self.run(|| {
                let mut pipeline = redis::pipe();
                pipeline.cmd("DEL").arg(&key).ignore();
                pipeline.cmd("PUBLISH").arg(&channel).arg(id).ignore();
                pipeline
            })
            .await
        })
    }

    fn ended_elsewhere(&self) -> Option<broadcast::Receiver<String>> {
        Some(self.ended.subscribe())
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

    fn replay<'a>(&'a self, stream: &'a str, seq: u64) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(async move {
            // What this replica queued before is written first.
            let (done, written) = oneshot::channel();
            if self.writes.send(Write::Flush(done)).await.is_ok() {
                let _ = tokio::time::timeout(self.options.timeout, written).await;
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
