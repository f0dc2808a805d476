//! The sessions' and streams' bookkeeping as plain state and pure decisions, fed `now` where
//! time matters: where a `Last-Event-ID` resumes ([`resume_target`]), which sessions the reaper
//! ends ([`idle_expired`], [`reap_tick`]), how many old POST streams a session lets go
//! ([`streams_to_forget`]), the standalone stream's queue for a GET not open yet
//! ([`queue_for_get`]), the ids of a shared session's requests to its client ([`Outbound`]), and
//! whose a client's response is ([`response_owner`]).
//!
//! Not here: anything that waits (the event store, the session store, the connections), and
//! the sessions and streams that hold this state (`session.rs`, `stream.rs`, `registry.rs`,
//! `get_delete.rs`, `replicas.rs` call in here). Unit-tested below without a runtime.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use crate::proto::jsonrpc::Id;
use crate::transport::sse_http::event_store::EventId;

/// POST streams a session keeps for resumption, at most.
pub(super) const KEPT_STREAMS: usize = 64;

/// The POST streams kept for resumption hold at most about this many bytes of events per
/// session; the oldest streams go first. Without it, 64 answers of 64 KiB each would keep
/// 4 MiB per session alive long after the client read them.
pub(super) const KEPT_STREAM_BYTES: usize = 1 << 20;

/// How many messages the standalone stream keeps for a GET that is not open yet.
pub const QUEUED_FOR_GET: usize = 256;

/// Requests kept awaiting an answer per shared session; beyond, the oldest is forgotten (its
/// answer would then be dropped, and the application's own timeout ends its wait).
pub(super) const OUTBOUND_KEPT: usize = 1024;

/// Where a GET on the endpoint attaches, by its `Last-Event-ID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Resume {
    /// The standalone stream, from now on, with what was queued for it first: no
    /// `Last-Event-ID`, one that does not parse (forged, garbled), or one naming a stream this
    /// session never had here when no other replica could hold it (no session store). Answered
    /// 409 when a GET is live on it already.
    Fresh,
    /// A stream of this session held here (`index` into the kept POST streams, `None` for the
    /// standalone one): its stored events after `seq`, then, unless it has finished, what comes.
    Here { index: Option<usize>, seq: u64 },
    /// A stream this replica does not hold, of a session shared through a store: its stored
    /// events after the id, then, when it is another replica's standalone stream
    /// (`standalone`), this replica's standalone stream.
    Elsewhere { event: EventId, standalone: bool },
}

/// Where a GET with `last_event_id` resumes, among the session's standalone stream (named
/// `standalone`) and its kept POST streams (`kept`, oldest first); `shared`: the session is
/// shared with other replicas through a session store.
///
/// Event ids name a stream of the session the GET names (the event store's key is
/// `<session>/<stream>`), so an id taken from another session can only ever replay this
/// session's events.
pub(super) fn resume_target<'a>(
    last_event_id: Option<&str>,
    standalone: &str,
    kept: impl IntoIterator<Item = &'a str>,
    shared: bool,
) -> Resume {
    let Some(event) = last_event_id.and_then(EventId::parse) else { return Resume::Fresh };
    if event.stream == standalone {
        return Resume::Here { index: None, seq: event.seq };
    }
    if let Some(index) = kept.into_iter().position(|name| name == event.stream) {
        return Resume::Here { index: Some(index), seq: event.seq };
    }
    if shared {
        let standalone = event.stream.ends_with("-0");
        return Resume::Elsewhere { event, standalone };
    }
    Resume::Fresh
}

/// Whether the reaper ends a session: no connection open on it, and idle longer than `idle`
/// since `last_active`, at `now`.
pub(super) fn idle_expired(open_connections: usize, last_active: Instant, now: Instant, idle: Duration) -> bool {
    open_connections == 0 && now.saturating_duration_since(last_active) > idle
}

/// How often the reaper looks: a quarter of the idle timeout, between 20 ms and 10 s.
pub(super) fn reap_tick(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(20), Duration::from_secs(10))
}

/// Whether the session store's expiry of a session is due to be pushed back at `now`: at most
/// once every quarter of the idle timeout `ttl`.
pub(super) fn store_touch_due(touched: Instant, now: Instant, ttl: Duration) -> bool {
    now.saturating_duration_since(touched) >= ttl / 4
}

/// How many of the oldest kept POST streams a session forgets, given the bytes each holds in
/// the event store (oldest first): down to [`KEPT_STREAMS`] streams, and down to
/// [`KEPT_STREAM_BYTES`] bytes unless only the newest is left.
pub(super) fn streams_to_forget(stored_bytes: &[usize]) -> usize {
    let mut total: usize = stored_bytes.iter().sum();
    let mut left = stored_bytes.len();
    let mut forget = 0;
    while left > KEPT_STREAMS || (total > KEPT_STREAM_BYTES && left > 1) {
        total = total.saturating_sub(stored_bytes[forget]);
        forget += 1;
        left -= 1;
    }
    forget
}

/// Queues `event` for the standalone stream's next GET; `true` when the oldest was dropped to
/// make room ([`QUEUED_FOR_GET`]).
pub(super) fn queue_for_get<T>(queued: &mut VecDeque<T>, event: T) -> bool {
    let dropped = queued.len() >= QUEUED_FOR_GET && queued.pop_front().is_some();
    queued.push_back(event);
    dropped
}

/// The requests a replica sent to a shared session's client, under ids of its own.
///
/// On the wire the id of each is `<replica>-<n>`: unique across replicas, and naming the one
/// whose application waits for the answer, wherever the client POSTs it. The application's
/// own id comes back when the answer arrives.
#[derive(Debug, Default)]
pub(super) struct Outbound {
    next: u64,
    waiting: BTreeMap<u64, Id>,
}

impl Outbound {
    /// The number the application's request `own` goes out under; the oldest waiting request
    /// is forgotten past [`OUTBOUND_KEPT`].
    pub(super) fn issue(&mut self, own: Id) -> u64 {
        self.next += 1;
        self.waiting.insert(self.next, own);
        if self.waiting.len() > OUTBOUND_KEPT {
            self.waiting.pop_first();
        }
        self.next
    }

    /// The number a still-waiting request `own` went out under (its `notifications/cancelled`).
    pub(super) fn number_of(&self, own: &Id) -> Option<u64> {
        self.waiting.iter().find(|(_, id)| *id == own).map(|(n, _)| *n)
    }

    /// The application's id of request number `n`, once: `None` when no such request waits
    /// (never sent, answered already, or forgotten).
    pub(super) fn answer(&mut self, n: u64) -> Option<Id> {
        self.waiting.remove(&n)
    }
}

/// The replica and number of a server-to-client request id `<replica>-<n>`; `None` for an id
/// no replica issued.
pub(super) fn namespaced(id: &Id) -> Option<(&str, u64)> {
    let Id::String(text) = id else { return None };
    let (replica, n) = text.split_once('-')?;
    if replica.is_empty() || !replica.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some((replica, n.parse().ok()?))
}

/// Whose a client's response (answering `id`) is, seen from replica `replica`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ResponseOwner<'a> {
    /// An id no replica issued (an unshared session's, or a plain id): handed on as it is.
    Unnamed,
    /// Request number `n` of this replica.
    Here(u64),
    /// Another replica's request: relayed to it.
    Replica(&'a str),
}

/// Whose the response answering `id` is, seen from `replica`.
pub(super) fn response_owner<'a>(id: Option<&'a Id>, replica: &str) -> ResponseOwner<'a> {
    match id.and_then(namespaced) {
        None => ResponseOwner::Unnamed,
        Some((owner, n)) if owner == replica => ResponseOwner::Here(n),
        Some((owner, _)) => ResponseOwner::Replica(owner),
    }
}

/// What a replica does with a message another replica relayed to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum RelayedFate {
    /// Dropped (with a log line): the session is not held here.
    NotHeld,
    /// A response: to request number `n` of this replica, if it still waits.
    Answer(u64),
    /// Dropped (with a log line): a response that names no request of this replica.
    AnswersNothing,
    /// Written on the session's standalone stream (queued when no GET is open).
    Standalone,
}

/// The fate of a relayed message: `held` (the session is held here), and for a response
/// (`Some`), the id it answers.
pub(super) fn relayed_fate(held: bool, response_to: Option<Option<&Id>>, replica: &str) -> RelayedFate {
    if !held {
        return RelayedFate::NotHeld;
    }
    match response_to {
        None => RelayedFate::Standalone,
        Some(id) => match response_owner(id, replica) {
            ResponseOwner::Here(n) => RelayedFate::Answer(n),
            ResponseOwner::Unnamed | ResponseOwner::Replica(_) => RelayedFate::AnswersNothing,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumption_goes_to_the_stream_its_event_id_names_and_anything_else_starts_afresh() {
        let kept = ["1", "2", "5"];
        let here = |id: &str, shared| resume_target(Some(id), "0", kept, shared);
        assert_eq!(resume_target(None, "0", kept, false), Resume::Fresh);
        assert_eq!(here("0_3", false), Resume::Here { index: None, seq: 3 });
        assert_eq!(here("2_0", false), Resume::Here { index: Some(1), seq: 0 }, "from the priming event");
        assert_eq!(here("5_18446744073709551615", false), Resume::Here { index: Some(2), seq: u64::MAX });
        // Unknown, forged and garbled ids: a fresh standalone stream, never someone's events.
        for forged in ["3_1", "7_0", "x_y_2", "_2", "2_", "2_-1", "../1_1", "2_1e3", ""] {
            assert_eq!(here(forged, false), Resume::Fresh, "{forged}");
        }
        // A stream forgotten here (past KEPT_STREAMS) is unknown too.
        assert_eq!(resume_target(Some("1_4"), "0", ["2"], false), Resume::Fresh);
        // Shared sessions: a stream not held here may be another replica's.
        let event = |stream: &str, seq| EventId { stream: stream.into(), seq };
        assert_eq!(
            resume_target(Some("ab12cd34-0_4"), "99aa00bb-0", [], true),
            Resume::Elsewhere { event: event("ab12cd34-0", 4), standalone: true }
        );
        assert_eq!(
            resume_target(Some("ab12cd34-7_1"), "99aa00bb-0", [], true),
            Resume::Elsewhere { event: event("ab12cd34-7", 1), standalone: false }
        );
        assert_eq!(resume_target(Some("99aa00bb-0_2"), "99aa00bb-0", [], true), Resume::Here { index: None, seq: 2 });
        assert_eq!(resume_target(Some("garbage"), "99aa00bb-0", [], true), Resume::Fresh);
    }

    #[test]
    fn a_session_expires_when_idle_past_the_timeout_with_no_connection_open() {
        let start = Instant::now();
        let idle = Duration::from_secs(60);
        let at = |secs| start + Duration::from_secs(secs);
        assert!(!idle_expired(0, start, at(60), idle), "exactly the timeout is not past it");
        assert!(idle_expired(0, start, at(61), idle));
        assert!(!idle_expired(1, start, at(3600), idle), "an open stream keeps its session");
        // A clock read before the last activity (another task touched it meanwhile).
        assert!(!idle_expired(0, at(10), start, idle));
        assert_eq!(reap_tick(idle), Duration::from_secs(10));
        assert_eq!(reap_tick(Duration::from_secs(8)), Duration::from_secs(2));
        assert_eq!(reap_tick(Duration::from_millis(1)), Duration::from_millis(20));
        assert!(!store_touch_due(start, at(14), idle));
        assert!(store_touch_due(start, at(15), idle));
    }

    #[test]
    fn old_post_streams_go_first_by_count_and_by_bytes_but_the_newest_stays() {
        assert_eq!(streams_to_forget(&[]), 0);
        assert_eq!(streams_to_forget(&[10; KEPT_STREAMS]), 0);
        assert_eq!(streams_to_forget(&[10; KEPT_STREAMS + 1]), 1);
        assert_eq!(streams_to_forget(&[KEPT_STREAM_BYTES, 1]), 1);
        assert_eq!(streams_to_forget(&[KEPT_STREAM_BYTES / 2, KEPT_STREAM_BYTES / 2]), 0);
        assert_eq!(streams_to_forget(&[1, KEPT_STREAM_BYTES / 2, KEPT_STREAM_BYTES / 2, 1]), 2);
        assert_eq!(streams_to_forget(&[5, 5, 2 * KEPT_STREAM_BYTES]), 2, "the newest is kept, however large");
    }

    #[test]
    fn the_queue_for_a_get_not_open_keeps_the_newest() {
        let mut queued = VecDeque::new();
        for n in 0..QUEUED_FOR_GET {
            assert!(!queue_for_get(&mut queued, n));
        }
        assert!(queue_for_get(&mut queued, QUEUED_FOR_GET));
        assert_eq!(queued.len(), QUEUED_FOR_GET);
        assert_eq!((queued.front(), queued.back()), (Some(&1), Some(&QUEUED_FOR_GET)));
    }

    #[test]
    fn outbound_requests_are_numbered_answered_once_and_the_oldest_forgotten() {
        let mut outbound = Outbound::default();
        let (a, b) = (outbound.issue(Id::Number(7)), outbound.issue(Id::String("x".into())));
        assert_eq!((a, b), (1, 2));
        assert_eq!(outbound.number_of(&Id::String("x".into())), Some(2));
        assert_eq!(outbound.answer(1), Some(Id::Number(7)));
        assert_eq!(outbound.answer(1), None, "answered already");
        assert_eq!(outbound.answer(99), None, "never sent");
        for n in 0..OUTBOUND_KEPT as i64 {
            outbound.issue(Id::Number(100 + n));
        }
        assert_eq!(outbound.answer(2), None, "forgotten past OUTBOUND_KEPT");
        assert_eq!(outbound.answer(3), Some(Id::Number(100)));
        assert_eq!(outbound.number_of(&Id::Number(7)), None);
    }

    #[test]
    fn responses_belong_to_the_replica_their_id_names() {
        let id = |text: &str| Id::String(text.into());
        assert_eq!(namespaced(&id("ab12-7")), Some(("ab12", 7)));
        for plain in ["7", "-7", "ab 12-7", "ab12-", "ab12-x", "a-b-1"] {
            assert_eq!(namespaced(&id(plain)), None, "{plain}");
        }
        assert_eq!(namespaced(&Id::Number(7)), None);
        assert_eq!(response_owner(Some(&id("ab12-7")), "ab12"), ResponseOwner::Here(7));
        assert_eq!(response_owner(Some(&id("cd34-7")), "ab12"), ResponseOwner::Replica("cd34"));
        assert_eq!(response_owner(Some(&Id::Number(1)), "ab12"), ResponseOwner::Unnamed);
        assert_eq!(response_owner(None, "ab12"), ResponseOwner::Unnamed);
    }

    #[test]
    fn a_relayed_message_for_a_session_not_held_here_is_dropped() {
        let mine = Id::String("ab12-3".into());
        let theirs = Id::String("cd34-3".into());
        assert_eq!(relayed_fate(false, None, "ab12"), RelayedFate::NotHeld);
        assert_eq!(relayed_fate(false, Some(Some(&mine)), "ab12"), RelayedFate::NotHeld);
        assert_eq!(relayed_fate(true, None, "ab12"), RelayedFate::Standalone);
        assert_eq!(relayed_fate(true, Some(Some(&mine)), "ab12"), RelayedFate::Answer(3));
        assert_eq!(relayed_fate(true, Some(Some(&theirs)), "ab12"), RelayedFate::AnswersNothing);
        assert_eq!(relayed_fate(true, Some(None), "ab12"), RelayedFate::AnswersNothing);
    }
}
