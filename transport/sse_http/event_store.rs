//! Where a Streamable HTTP server keeps the events it sent, so that a client whose SSE stream
//! dropped can reconnect with `Last-Event-ID` and receive what it missed
//! ([2025-11-25 transports, "Resumability and Redelivery"](https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#resumability-and-redelivery)).
//!
//! Events are numbered per stream, from 1, by the server; the event id on the wire is
//! `<stream>_<seq>` (see [`EventId`]), so an id names the only stream it may be replayed on.
//! [`MemoryEventStore`] keeps the last `capacity` events of each stream; older ones are gone
//! and a resumption from before them replays only what is left.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;

use bytes::Bytes;

#[cfg(doc)]
use super::session_store::StoreError;
use super::session_store::StoreFuture;

/// What [`EventStore::flush`] gives: done once the earlier appends are written.
pub type Flushed = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>>;

/// One stored event: its number within its stream and its `data` (a JSON-RPC message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Position in the stream, from 1 (0 is the priming event, which is not stored).
    pub seq: u64,
    /// The message as sent.
    pub data: Bytes,
}

/// A stream's event id: `<stream>_<seq>`, where `stream` is made of ASCII letters, digits
/// and `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventId {
    /// The stream the event belongs to.
    pub stream: String,
    /// Its position in the stream.
    pub seq: u64,
}

impl EventId {
    /// Parses `<stream>_<seq>`; `None` for anything else.
    pub fn parse(text: &str) -> Option<EventId> {
        let (stream, seq) = text.rsplit_once('_')?;
        if stream.is_empty() || !stream.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return None;
        }
        Some(EventId { stream: stream.to_owned(), seq: seq.parse().ok()? })
    }

    /// `<stream>_<seq>`: what `to_string` gives, built without the formatting machinery (one
    /// per event sent).
    pub fn encode(stream: &str, seq: u64) -> String {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = seq;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut id = String::with_capacity(stream.len() + 1 + digits.len() - at);
        id.push_str(stream);
        id.push('_');
        id.push_str(std::str::from_utf8(&digits[at..]).expect("ascii digits"));
        id
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&EventId::encode(&self.stream, self.seq))
    }
}

/// Storage for replayable events. Called with the stream's lock held: keep it quick.
/// `append` and `remove` never wait: a store across the network queues them (and a failure
/// there loses the events for a later resumption only, not for the live stream).
pub trait EventStore: Send + Sync + 'static {
    /// Records `event` as the latest of `stream`.
    fn append(&self, stream: &str, event: StoredEvent);

    /// The events of `stream` numbered after `seq`, oldest first.
    fn replay_after(&self, stream: &str, seq: u64) -> Vec<StoredEvent>;

    /// [`replay_after`](Self::replay_after) for a store that has to ask over the network: what
    /// the server calls on a resumption. The default answers from `replay_after`.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the store cannot be asked (the resumption gets 503).
    fn replay<'a>(&'a self, stream: &'a str, seq: u64) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(std::future::ready(Ok(self.replay_after(stream, seq))))
    }

    /// Forgets `stream` (its session ended).
    fn remove(&self, stream: &str);

    /// For a store that writes in the background: a future done once every event appended
    /// before is written (or could not be). The server awaits it (in a task of its own) before
    /// it ends a POST's stream, so a client that read a whole stream and resumes it elsewhere
    /// finds every event in the store. `None` (the default): appends are written when `append`
    /// returns.
    fn flush(&self) -> Option<Flushed> {
        None
    }
}

/// The in-memory [`EventStore`]: at most `capacity` events per stream.
#[derive(Debug)]
pub struct MemoryEventStore {
    capacity: usize,
    streams: Mutex<HashMap<String, VecDeque<StoredEvent>>>,
}

impl MemoryEventStore {
    /// A store keeping the last `capacity` events of each stream (0 keeps none: no replay).
    pub fn new(capacity: usize) -> Self {
        MemoryEventStore { capacity, streams: Mutex::new(HashMap::new()) }
    }
}

impl EventStore for MemoryEventStore {
    fn append(&self, stream: &str, event: StoredEvent) {
        if self.capacity == 0 {
            return;
        }
        let mut streams = self.streams.lock().expect("event store lock");
        let events = streams.entry(stream.to_owned()).or_default();
        if events.len() == self.capacity {
            events.pop_front();
        }
        events.push_back(event);
    }

    fn replay_after(&self, stream: &str, seq: u64) -> Vec<StoredEvent> {
        let streams = self.streams.lock().expect("event store lock");
        streams.get(stream).map_or_else(Vec::new, |events| events.iter().filter(|e| e.seq > seq).cloned().collect())
    }

    fn remove(&self, stream: &str) {
        self.streams.lock().expect("event store lock").remove(stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_name_their_stream() {
        let id = EventId { stream: "ab-3".into(), seq: 7 };
        assert_eq!(id.to_string(), "ab-3_7");
        assert_eq!(EventId::parse("ab-3_7"), Some(id));
        assert_eq!(EventId::parse("x_y_2").map(|e| e.seq), None, "stream may not hold `_`");
        assert_eq!(EventId::parse("_2"), None);
        assert_eq!(EventId::parse("s_"), None);
        assert_eq!(EventId::parse("5dae3884-ffd1-4ac5"), None);
        for seq in [0, 1, 9, 10, 99, 100, 12345, u64::MAX] {
            assert_eq!(EventId::encode("s-1", seq), format!("s-1_{seq}"));
        }
    }

    #[test]
    fn keeps_the_last_events_of_each_stream() {
        let store = MemoryEventStore::new(2);
        for seq in 1..=3 {
            store.append("a", StoredEvent { seq, data: Bytes::from(seq.to_string()) });
        }
        store.append("b", StoredEvent { seq: 1, data: Bytes::from_static(b"b1") });
        let seqs = |v: Vec<StoredEvent>| v.into_iter().map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(seqs(store.replay_after("a", 0)), [2, 3]);
        assert_eq!(seqs(store.replay_after("a", 2)), [3]);
        assert_eq!(seqs(store.replay_after("b", 0)), [1]);
        store.remove("a");
        assert!(store.replay_after("a", 0).is_empty());
    }
}
