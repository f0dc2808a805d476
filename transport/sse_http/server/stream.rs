//! One SSE stream of a session ([`Stream`]): the standalone GET stream or the answer to one
//! POST, with its event ids, the requests it still waits to answer, the messages queued for a
//! GET not open yet ([`QUEUED_FOR_GET`]), whether a POST's answer is one JSON body after all
//! ([`Framing`]), and attaching and replaying a connection from the event store.
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
    pub(super) pending: Pending,
    pub(super) done: bool,
    /// The standalone stream's events sent while no GET connection was attached, for the next
    /// GET (without `Last-Event-ID`).
    pub(super) queued: VecDeque<Outgoing>,
    /// How the POST's answer goes out ([`ResponseMode::Auto`](super::config::ResponseMode::Auto)).
    pub(super) framing: Framing,
}

/// Whether a POST's answer is an SSE stream or one JSON body, decided under the stream's lock
/// so that a response is never both left out of the event store and sent on a stream a client
/// could resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// Not yet: the POST's handler still holds the head, and nothing has been sent.
    Undecided,
    /// One JSON body: the response came first and alone while undecided (nothing stored, no
    /// event id).
    Json,
    /// An SSE stream (or a JSON-mode stream, which never decides).
    Sse,
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

    /// Decides the framing of an undecided answer as its first message goes out: JSON when
    /// that message answers the only request the stream waits for (`completes`), SSE when it
    /// is anything else. Changes nothing once decided.
    pub(super) fn decide_on_first(&mut self, completes: Option<&Id>) -> Framing {
        if self.framing == Framing::Undecided {
            let only_answer = completes.is_some_and(|id| self.pending.len() == 1 && self.pending.contains(id));
            self.framing = if only_answer && self.next_seq == 0 { Framing::Json } else { Framing::Sse };
        }
        self.framing
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

/// The requests a POST's stream still waits to answer. A POST carries one request but in a
/// batch: that one is held inline, without a hashed set's table and hashing; a batch's ids
/// take a set, so that answering each costs the same however many it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Pending {
    /// None or one.
    One(Option<Id>),
    /// Any number (a batch's).
    Many(HashSet<Id>),
}

impl Pending {
    pub(super) fn len(&self) -> usize {
        match self {
            Pending::One(one) => usize::from(one.is_some()),
            Pending::Many(ids) => ids.len(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn contains(&self, id: &Id) -> bool {
        match self {
            Pending::One(one) => one.as_ref() == Some(id),
            Pending::Many(ids) => ids.contains(id),
        }
    }

    /// Forgets `id`; `true` when it was waited for.
    pub(super) fn remove(&mut self, id: &Id) -> bool {
        match self {
            Pending::One(one) if one.as_ref() == Some(id) => one.take().is_some(),
            Pending::One(_) => false,
            Pending::Many(ids) => ids.remove(id),
        }
    }
}

impl FromIterator<Id> for Pending {
    fn from_iter<I: IntoIterator<Item = Id>>(ids: I) -> Self {
        let mut ids = ids.into_iter();
        let Some(first) = ids.next() else { return Pending::One(None) };
        match ids.next() {
            None => Pending::One(Some(first)),
            Some(second) => Pending::Many([first, second].into_iter().chain(ids).collect()),
        }
    }
}

/// The log line when the standalone stream's queue is full.
pub(super) const GET_QUEUE_FULL: &str =
    "mcpwire: messages for a session's GET stream, not open, past QUEUED_FOR_GET: the oldest dropped";

/// One SSE stream of a session: the standalone one (`0`) or the answer to one POST.
pub(super) struct Stream {
    /// Key in the event store: `<session>/<name>`, the name from `name_at` on (one string
    /// for both: one allocation per POST, not two).
    pub(super) key: String,
    name_at: usize,
    pub(super) standalone: bool,
    pub(super) json: bool,
    /// Bytes of this stream's events in the event store.
    pub(super) stored_bytes: AtomicUsize,
    /// Where the standalone stream counts the messages it drops past [`QUEUED_FOR_GET`].
    pub(super) drops: Option<Arc<Drops>>,
    pub(super) inner: tokio::sync::Mutex<StreamInner>,
}

impl Stream {
    /// The stream's name, as its event ids begin (`<name>_<seq>`).
    pub(super) fn name(&self) -> &str {
        &self.key[self.name_at..]
    }

    /// A POST's stream; `may_be_json`: its framing waits for the first message
    /// ([`Framing::Undecided`]).
    pub(super) fn new(
        session: &str,
        name: std::fmt::Arguments<'_>,
        json: bool,
        pending: Pending,
        may_be_json: bool,
    ) -> Arc<Stream> {
        let framing = if may_be_json { Framing::Undecided } else { Framing::Sse };
        Stream::build(session, name, None, json, pending, framing)
    }

    /// The session's standalone stream, counting its drops in `drops`.
    pub(super) fn standalone(session: &str, name: std::fmt::Arguments<'_>, drops: Arc<Drops>) -> Arc<Stream> {
        Stream::build(session, name, Some(drops), false, Pending::One(None), Framing::Sse)
    }

    pub(super) fn build(
        session: &str,
        name: std::fmt::Arguments<'_>,
        drops: Option<Arc<Drops>>,
        json: bool,
        pending: Pending,
        framing: Framing,
    ) -> Arc<Stream> {
        use std::fmt::Write as _;
        // Room for a session id, a replica's prefix and a 20-digit number: written once.
        let mut key = String::with_capacity(session.len() + 32);
        key.push_str(session);
        key.push('/');
        let name_at = key.len();
        key.write_fmt(name).expect("a String takes any text");
        Arc::new(Stream {
            key,
            name_at,
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
                framing,
            }),
        })
    }

    /// Stores and delivers one message; `completes` is the request it answers. `false` when
    /// the stream is already finished. The first message of an undecided answer decides it
    /// ([`StreamInner::decide_on_first`]); one answered in JSON stores nothing and has no id.
    pub(super) async fn push(&self, store: &dyn EventStore, data: Bytes, completes: Option<&Id>) -> bool {
        let mut inner = self.inner.lock().await;
        if inner.done {
            return false;
        }
        let json = self.json || inner.decide_on_first(completes) == Framing::Json;
        let Some(seq) = inner.next_event() else { return false };
        if !json {
            self.stored_bytes.fetch_add(data.len(), Ordering::Relaxed);
            store.append(&self.key, StoredEvent { seq, data: data.clone() });
        }
        let event = (if json { None } else { Some(EventId::encode(self.name(), seq)) }, data);
        // Sent through the stream's own sender (no clone of it per message: the lock is held
        // across the send anyway).
        let undelivered = match &inner.live {
            Some(live) => live.send(event).await.err().map(|mpsc::error::SendError(event)| event),
            None => Some(event),
        };
        if undelivered.is_some() {
            inner.live = None;
        }
        if let (Some(event), true) = (undelivered, self.standalone) {
            if queue_for_get(&mut inner.queued, event) {
                if let Some(drops) = &self.drops {
                    drops.note(None, GET_QUEUE_FULL, QUEUED_FOR_GET);
                }
            }
        }
        if let Some(id) = completes {
            if inner.answered(id, self.standalone) {
                match (json, if json { None } else { store.flush() }) {
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
                stored.into_iter().map(|e| (Some(EventId::encode(self.name(), e.seq)), e.data)).collect()
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

    /// Called by the POST's handler when it stops holding the head: the answer is SSE from now
    /// on unless its first message decided JSON already (then `true`, and that message, the
    /// response, is in the live channel or was taken from it).
    pub(super) async fn answered_in_json(&self) -> bool {
        let mut inner = self.inner.lock().await;
        if inner.framing == Framing::Undecided {
            inner.framing = Framing::Sse;
        }
        inner.framing == Framing::Json
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
            framing: Framing::Undecided,
        }
    }

    #[test]
    fn pending_holds_one_id_inline_and_a_batch_in_a_set() {
        let ids = |ns: &[i64]| ns.iter().map(|n| Id::Number(*n)).collect::<Pending>();
        assert_eq!(ids(&[]), Pending::One(None));
        let mut one = ids(&[7]);
        assert_eq!(one, Pending::One(Some(Id::Number(7))));
        assert!(one.contains(&Id::Number(7)) && !one.contains(&Id::Number(8)));
        assert!(!one.remove(&Id::Number(8)), "another id leaves it waiting");
        assert_eq!(one.len(), 1);
        assert!(one.remove(&Id::Number(7)));
        assert!(one.is_empty() && !one.remove(&Id::Number(7)));
        let mut batch = ids(&[1, 2, 3]);
        assert!(matches!(batch, Pending::Many(_)));
        assert_eq!(batch.len(), 3);
        assert!(batch.remove(&Id::Number(2)) && !batch.contains(&Id::Number(2)));
        assert!(batch.remove(&Id::Number(1)) && batch.remove(&Id::Number(3)));
        assert!(batch.is_empty());
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

    #[test]
    fn an_undecided_answer_is_json_only_when_its_first_message_is_its_only_response() {
        let one = Id::Number(1);
        // The response to its only request, first: JSON, and it stays so.
        let mut quick = inner(&[1]);
        assert_eq!(quick.decide_on_first(Some(&one)), Framing::Json);
        assert_eq!(quick.decide_on_first(None), Framing::Json);
        // Anything else first (a notification, a request to the client): SSE for good, even
        // when the response comes next.
        let mut notified = inner(&[1]);
        assert_eq!(notified.decide_on_first(None), Framing::Sse);
        assert_eq!(notified.decide_on_first(Some(&one)), Framing::Sse);
        // A response to another request than the one it waits for, or to one of two: SSE.
        assert_eq!(inner(&[1]).decide_on_first(Some(&Id::Number(2))), Framing::Sse);
        assert_eq!(inner(&[1, 2]).decide_on_first(Some(&one)), Framing::Sse);
        // Something sent already (the handler's hold ended and the head went out): SSE.
        let mut started = inner(&[1]);
        assert_eq!(started.next_event(), Some(1));
        assert_eq!(started.decide_on_first(Some(&one)), Framing::Sse);
        // Decided SSE by the handler before any message: the response keeps it SSE.
        let mut held_out = inner(&[1]);
        held_out.framing = Framing::Sse;
        assert_eq!(held_out.decide_on_first(Some(&one)), Framing::Sse);
    }
}
