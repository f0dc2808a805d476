//! One SSE stream of a session ([`Stream`]): the standalone GET stream or the answer to one
//! POST, with its event ids, the requests it still waits to answer, the messages queued for a
//! GET not open yet ([`QUEUED_FOR_GET`]), and attaching and replaying a connection from the
//! event store.
//!
//! Not here: which stream a message goes to (`session.rs`), writing a connection's bytes
//! (`answer.rs`).

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::transport::sse_http::event_store::{EventId, EventStore, StoredEvent};
use crate::transport::sse_http::session_store::StoreError;

use super::bookkeeping::{queue_for_get, QUEUED_FOR_GET};
use crate::proto::jsonrpc::Id;
use crate::transport::drops::Drops;

/// What is sent to one live SSE connection (or JSON collector): an event id and the data.
pub(super) type Outgoing = (Option<String>, Bytes);

pub(super) struct StreamInner {
    pub(super) next_seq: u64,
    pub(super) live: Option<mpsc::Sender<Outgoing>>,
    pub(super) pending: HashSet<Id>,
    pub(super) done: bool,
    /// The standalone stream's events sent while no GET connection was attached, for the next
    /// GET (without `Last-Event-ID`).
    pub(super) queued: VecDeque<Outgoing>,
}

impl StreamInner {
    /// The number of the next event (from 1: 0 is the priming event); `None` once the stream
    /// has finished.
    pub(super) fn next_event(&mut self) -> Option<u64> {
        if self.done {
            return None;
        }
        self.next_seq += 1;
        Some(self.next_seq)
    }

    /// Request `id` is answered on this stream: `true` when it was the last one a POST's
    /// stream waited for, which has finished from then on (the standalone stream never does).
    pub(super) fn answered(&mut self, id: &Id, standalone: bool) -> bool {
        self.pending.remove(id);
        let finished = self.pending.is_empty() && !standalone;
        self.done |= finished;
        finished
    }
}

/// The log line when the standalone stream's queue is full.
pub(super) const GET_QUEUE_FULL: &str =
    "mcpwire: messages for a session's GET stream, not open, past QUEUED_FOR_GET: the oldest dropped";

/// One SSE stream of a session: the standalone one (`0`) or the answer to one POST.
pub(super) struct Stream {
    pub(super) name: String,
    /// Key in the event store: `<session>/<name>`.
    pub(super) key: String,
    pub(super) standalone: bool,
    pub(super) json: bool,
    /// Bytes of this stream's events in the event store.
    pub(super) stored_bytes: AtomicUsize,
    /// Where the standalone stream counts the messages it drops past [`QUEUED_FOR_GET`].
    pub(super) drops: Option<Arc<Drops>>,
    pub(super) inner: tokio::sync::Mutex<StreamInner>,
}

impl Stream {
    pub(super) fn new(session: &str, name: String, json: bool, pending: HashSet<Id>) -> Arc<Stream> {
        Stream::build(session, name, None, json, pending)
    }

    /// The session's standalone stream, counting its drops in `drops`.
    pub(super) fn standalone(session: &str, name: String, drops: Arc<Drops>) -> Arc<Stream> {
        Stream::build(session, name, Some(drops), false, HashSet::new())
    }

    pub(super) fn build(
        session: &str,
        name: String,
        drops: Option<Arc<Drops>>,
        json: bool,
        pending: HashSet<Id>,
    ) -> Arc<Stream> {
        Arc::new(Stream {
            key: [session, "/", &name].concat(),
            name,
            standalone: drops.is_some(),
            json,
            stored_bytes: AtomicUsize::new(0),
            drops,
            inner: tokio::sync::Mutex::new(StreamInner {
                next_seq: 0,
                live: None,
                pending,
                done: false,
                queued: VecDeque::new(),
            }),
        })
    }

    /// Stores and delivers one message; `completes` is the request it answers. `false` when
    /// the stream is already finished.
    pub(super) async fn push(&self, store: &dyn EventStore, data: Bytes, completes: Option<&Id>) -> bool {
        let mut inner = self.inner.lock().await;
        let Some(seq) = inner.next_event() else { return false };
        if !self.json {
            self.stored_bytes.fetch_add(data.len(), Ordering::Relaxed);
            store.append(&self.key, StoredEvent { seq, data: data.clone() });
        }
        let event = (Some(EventId::encode(&self.name, seq)), data);
        let undelivered = match inner.live.clone() {
            Some(live) => match live.send(event).await {
                Ok(()) => None,
                Err(mpsc::error::SendError(event)) => {
                    inner.live = None;
                    Some(event)
                }
            },
            None => Some(event),
        };
        if let (Some(event), true) = (undelivered, self.standalone) {
            if queue_for_get(&mut inner.queued, event) {
                if let Some(drops) = &self.drops {
                    drops.note(None, GET_QUEUE_FULL, QUEUED_FOR_GET);
                }
            }
        }
        if let Some(id) = completes {
            if inner.answered(id, self.standalone) {
                match (self.json, store.flush()) {
                    (false, Some(written)) => {
                        // The stream ends once its events are in the store (see EventStore::flush).
                        let live = inner.live.take();
                        crate::transport::task::spawn(async move {
                            written.await;
                            drop(live);
                        });
                    }
                    _ => inner.live = None,
                }
            }
        }
        true
    }

    /// Attaches a new live connection; with `after`, first the stored events after it.
    /// `Err(Conflict)` when a live connection is already attached and this is no resumption.
    pub(super) async fn attach(
        &self,
        store: &dyn EventStore,
        after: Option<u64>,
        depth: usize,
    ) -> Result<(Vec<Outgoing>, Option<mpsc::Receiver<Outgoing>>), AttachError> {
        let mut inner = self.inner.lock().await;
        if after.is_none() && inner.live.as_ref().is_some_and(|l| !l.is_closed()) {
            return Err(AttachError::Conflict);
        }
        let replay = match after {
            Some(seq) => {
                let stored = store.replay(&self.key, seq).await.map_err(AttachError::Store)?;
                // What was queued is in the store too; the resumption replays it from there.
                inner.queued.clear();
                stored.into_iter().map(|e| (Some(EventId::encode(&self.name, e.seq)), e.data)).collect()
            }
            None => inner.queued.drain(..).collect(),
        };
        if inner.done {
            return Ok((replay, None));
        }
        let (tx, rx) = mpsc::channel(depth);
        inner.live = Some(tx);
        Ok((replay, Some(rx)))
    }

    pub(super) async fn has_live(&self) -> bool {
        self.inner.lock().await.live.as_ref().is_some_and(|l| !l.is_closed())
    }

    pub(super) async fn finish(&self) {
        let mut inner = self.inner.lock().await;
        inner.done = true;
        inner.live = None;
    }

    /// Ends the live connection (shutdown) without finishing the stream.
    pub(super) async fn detach(&self) {
        self.inner.lock().await.live = None;
    }
}

/// Why a connection could not be attached to a stream.
#[derive(Debug)]
pub(super) enum AttachError {
    /// A live connection is attached already.
    Conflict,
    /// The event store could not be asked for the events to replay.
    Store(StoreError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner(pending: &[i64]) -> StreamInner {
        StreamInner {
            next_seq: 0,
            live: None,
            pending: pending.iter().map(|n| Id::Number(*n)).collect(),
            done: false,
            queued: VecDeque::new(),
        }
    }

    #[test]
    fn a_post_stream_numbers_its_events_and_finishes_with_its_last_answer() {
        let mut post = inner(&[1, 2]);
        assert_eq!((post.next_event(), post.next_event()), (Some(1), Some(2)));
        assert!(!post.answered(&Id::Number(1), false), "request 2 still waits");
        assert!(!post.answered(&Id::Number(9), false), "an id it never carried changes nothing");
        assert_eq!(post.next_event(), Some(3));
        assert!(post.answered(&Id::Number(2), false));
        assert_eq!(post.next_event(), None, "finished: nothing more is numbered or sent");
        // The standalone stream carries answers too (to requests it does not hold) and never ends.
        let mut standalone = inner(&[]);
        assert!(!standalone.answered(&Id::Number(1), true));
        assert_eq!(standalone.next_event(), Some(1));
    }
}
