//! The cache of verdicts behind [`super::IntrospectionVerifier`]: one entry per token, keyed
//! by the SHA-256 of the token (the token itself is never kept), holding either a verdict until
//! a deadline or the one introspection in flight for that token (single-flight: concurrent
//! checks of one token wait for that request instead of sending their own).
//!
//! Bounded: at most `capacity` entries. When a verdict is to be stored in a full cache, the
//! verdicts already past their deadline go first, then the one whose deadline is nearest (a
//! short-lived negative verdict, usually, before an active one); entries of requests in flight
//! are never evicted, and when only those fill the cache the new verdict is simply not kept.
//! The scan that eviction needs is linear, and only happens when the cache is full.
//!
//! Time comes in (`now`), it is never read here. Not here: which verdicts are kept and for how
//! long (the verifier decides), the request itself.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::watch;

use super::principal::{Principal, Refusal};

/// The verdict on one token.
pub(crate) type Verdict = Result<Principal, Refusal>;

/// SHA-256 of a token: what the cache is keyed by.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TokenKey([u8; 32]);

impl TokenKey {
    pub(crate) fn of(token: &str) -> TokenKey {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let mut key = [0u8; 32];
        key.copy_from_slice(digest.as_ref());
        TokenKey(key)
    }
}

enum Entry {
    Kept { verdict: Verdict, until: Instant },
    InFlight { flight: u64, answer: watch::Sender<Option<Verdict>> },
}

struct Entries {
    map: HashMap<TokenKey, Entry>,
    next_flight: u64,
}

/// What [`AnswerCache::claim`] found for a token.
pub(crate) enum Claim<'a> {
    /// A verdict kept and still valid.
    Kept(Verdict),
    /// Another check of the same token is asking; its verdict arrives here (`Err` from
    /// `wait_for` when that check was dropped before it got one: claim again).
    Wait(watch::Receiver<Option<Verdict>>),
    /// Nobody is asking: the caller asks, then hands the verdict to [`Flight::finish`].
    Lead(Flight<'a>),
}

/// The right and duty to ask about one token. Dropped without [`Flight::finish`] (the check
/// was cancelled), it removes its entry, and the waiting checks claim again.
pub(crate) struct Flight<'a> {
    cache: &'a AnswerCache,
    key: TokenKey,
    flight: u64,
    finished: bool,
}

/// See the module docs.
pub(crate) struct AnswerCache {
    entries: Mutex<Entries>,
    capacity: usize,
}

impl AnswerCache {
    pub(crate) fn new(capacity: usize) -> AnswerCache {
        AnswerCache { entries: Mutex::new(Entries { map: HashMap::new(), next_flight: 0 }), capacity }
    }

    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// How many entries (kept verdicts and requests in flight) the cache holds.
    pub(crate) fn len(&self) -> usize {
        self.lock().map.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The kept verdict on `key`, the request in flight to wait for, or the lead.
    pub(crate) fn claim(&self, key: TokenKey, now: Instant) -> Claim<'_> {
        let mut entries = self.lock();
        match entries.map.get(&key) {
            Some(Entry::Kept { verdict, until }) if now < *until => return Claim::Kept(verdict.clone()),
            Some(Entry::InFlight { answer, .. }) => return Claim::Wait(answer.subscribe()),
            _ => {}
        }
        let flight = entries.next_flight;
        entries.next_flight += 1;
        let (answer, _) = watch::channel(None);
        entries.map.insert(key, Entry::InFlight { flight, answer });
        Claim::Lead(Flight { cache: self, key, flight, finished: false })
    }

    /// How many checks wait for the request in flight for `key` (tests).
    #[cfg(test)]
    pub(crate) fn waiting(&self, key: TokenKey) -> usize {
        match self.lock().map.get(&key) {
            Some(Entry::InFlight { answer, .. }) => answer.receiver_count(),
            _ => 0,
        }
    }
}

impl Flight<'_> {
    /// Hands `verdict` to the checks waiting for it, and keeps it until `until` (`None`: not
    /// kept).
    pub(crate) fn finish(mut self, verdict: &Verdict, until: Option<Instant>, now: Instant) {
        self.finished = true;
        let mut entries = self.cache.lock();
        let Some(Entry::InFlight { answer, .. }) = entries.map.remove(&self.key) else {
            return;
        };
        answer.send_replace(Some(verdict.clone()));
        if let Some(until) = until.filter(|until| *until > now) {
            if entries.map.len() >= self.cache.capacity {
                evict(&mut entries.map, now);
            }
            if entries.map.len() < self.cache.capacity {
                entries.map.insert(self.key, Entry::Kept { verdict: verdict.clone(), until });
            }
        }
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut entries = self.cache.lock();
        if matches!(entries.map.get(&self.key), Some(Entry::InFlight { flight, .. }) if *flight == self.flight) {
            entries.map.remove(&self.key);
        }
    }
}

/// Makes room for one entry: the expired verdicts go, or else the one nearest its deadline.
fn evict(map: &mut HashMap<TokenKey, Entry>, now: Instant) {
    let before = map.len();
    map.retain(|_, entry| !matches!(entry, Entry::Kept { until, .. } if *until <= now));
    if map.len() < before {
        return;
    }
    let nearest = map
        .iter()
        .filter_map(|(key, entry)| match entry {
            Entry::Kept { until, .. } => Some((*until, *key)),
            Entry::InFlight { .. } => None,
        })
        .min_by_key(|(until, _)| *until)
        .map(|(_, key)| key);
    if let Some(key) = nearest {
        map.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn lead<'a>(cache: &'a AnswerCache, token: &str, now: Instant) -> Flight<'a> {
        match cache.claim(TokenKey::of(token), now) {
            Claim::Lead(flight) => flight,
            _ => panic!("{token}: expected the lead"),
        }
    }

    fn kept(cache: &AnswerCache, token: &str, now: Instant) -> Option<Verdict> {
        match cache.claim(TokenKey::of(token), now) {
            Claim::Kept(verdict) => Some(verdict),
            Claim::Lead(_) => None,
            Claim::Wait(_) => panic!("{token}: nothing should be in flight"),
        }
    }

    #[test]
    fn verdicts_are_kept_until_their_deadline() {
        let cache = AnswerCache::new(8);
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        lead(&cache, "a", t0).finish(&Ok(Principal::new(Some("alice".into()))), Some(t0 + 10 * s), t0);
        lead(&cache, "b", t0).finish(&Err(Refusal::Inactive), Some(t0 + 2 * s), t0);
        lead(&cache, "c", t0).finish(&Err(Refusal::Unavailable("x".into())), None, t0);
        assert_eq!(kept(&cache, "a", t0 + 9 * s).unwrap().unwrap().subject.as_deref(), Some("alice"));
        assert_eq!(kept(&cache, "b", t0 + s), Some(Err(Refusal::Inactive)));
        assert_eq!(kept(&cache, "b", t0 + 2 * s), None, "past its deadline: asked again");
        assert_eq!(kept(&cache, "c", t0), None, "not kept");
        assert_eq!(kept(&cache, "a", t0 + 10 * s), None);
    }

    #[test]
    fn a_full_cache_drops_expired_verdicts_then_the_nearest_deadline_and_never_a_flight() {
        let cache = AnswerCache::new(3);
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        lead(&cache, "long", t0).finish(&Ok(Principal::default()), Some(t0 + 60 * s), t0);
        lead(&cache, "short", t0).finish(&Err(Refusal::Inactive), Some(t0 + 5 * s), t0);
        let in_flight = lead(&cache, "asking", t0);
        lead(&cache, "new", t0).finish(&Ok(Principal::default()), Some(t0 + 30 * s), t0);
        assert_eq!(cache.len(), 3);
        assert!(kept(&cache, "short", t0).is_none(), "the nearest deadline went");
        assert!(matches!(cache.claim(TokenKey::of("asking"), t0), Claim::Wait(_)), "the flight stays");
        // "short" just claimed the lead again (and dropped it); at t0 + 40 s "new" is expired.
        lead(&cache, "later", t0 + 40 * s).finish(&Ok(Principal::default()), Some(t0 + 90 * s), t0 + 40 * s);
        assert!(kept(&cache, "long", t0 + 40 * s).is_some());
        assert!(kept(&cache, "later", t0 + 40 * s).is_some());
        drop(in_flight);
        assert_eq!(cache.len(), 2, "a dropped flight leaves no entry");
    }

    #[tokio::test]
    async fn waiters_get_the_leaders_verdict_or_learn_it_was_dropped() {
        let cache = AnswerCache::new(8);
        let t0 = Instant::now();
        let flight = lead(&cache, "t", t0);
        let Claim::Wait(mut waiter) = cache.claim(TokenKey::of("t"), t0) else { panic!("expected to wait") };
        assert_eq!(cache.waiting(TokenKey::of("t")), 1);
        flight.finish(&Err(Refusal::Inactive), None, t0);
        assert_eq!(waiter.wait_for(Option::is_some).await.unwrap().clone(), Some(Err(Refusal::Inactive)));

        let flight = lead(&cache, "u", t0);
        let Claim::Wait(mut waiter) = cache.claim(TokenKey::of("u"), t0) else { panic!("expected to wait") };
        drop(flight);
        assert!(waiter.wait_for(Option::is_some).await.is_err(), "the leader went away");
        assert!(matches!(cache.claim(TokenKey::of("u"), t0), Claim::Lead(_)));
    }
}
