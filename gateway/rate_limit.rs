//! Rate limits on tool calls through the gateway, per caller and per tool: token buckets
//! (a rate and a burst) held in memory, one per limit and caller (and tool, when the limit
//! says `per = "tool"`).
//!
//! A call is checked against every [`Limit`] whose callers and tools match it; it goes
//! through only when each of their buckets holds a token, and then takes one from each. A
//! refused call takes nothing and learns how long until its bucket refills enough
//! ([`Refused::retry_after`]). Time is passed in ([`RateLimiter::check`] takes `now`), so the
//! arithmetic is tested without a clock.
//!
//! Reloading ([`RateLimiter::reloaded`], and [`super::Gateway::set_rate_limits`] and the
//! gateway's other setters of limits through it) keeps the buckets of every limit that did not
//! change (equal in every field), wherever it moved in the list; a limit added or changed
//! starts with full buckets.
//!
//! Buckets of callers that went quiet are dropped once full again (a full bucket is what a new
//! one would be), when there are more than [`PRUNE_ABOVE`] of them: memory stays bounded by
//! the callers active within a refill period.
//!
//! Shared by replicas: [`RateLimiter::claim`] names the buckets a call needs (a key per limit
//! and caller, and tool), and a [`SharedBuckets`] store takes from them all at once for every
//! replica (`rate_limit_redis`, feature `redis`: one Lua script per call on Redis, its time
//! Redis's own). [`super::Gateway::share_rate_limits`] puts one in place of the memory.
//!
//! The same limiter serves limits on HTTP requests (`mcp-bridge serve`'s `per = "request"`,
//! [`super::Gateway::within_request_limits`]): asked with no server and tool, every limit
//! without tools applies.
//!
//! Not here: the store's own code, the 429 of a refused request (the HTTP server's
//! [`crate::transport::sse_http::RequestLimit`]), reading the limits from a file
//! ([`super::settings`]).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::policy::{Callers, Glob};
use crate::auth::Principal;

/// Above this many buckets, full ones are dropped.
pub const PRUNE_ABOVE: usize = 10_000;

/// What one bucket is kept for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    /// One bucket per caller, for all the tools the limit names.
    Caller,
    /// One bucket per caller and tool.
    Tool,
}

/// One limit: these callers, on these tools, at most `burst` calls at once and `rate` calls
/// per second over time.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Limit {
    /// The limit's name (in the refusal and in `/metrics`).
    pub name: Arc<str>,
    /// Whom it applies to (empty: everyone).
    pub callers: Callers,
    /// `SERVER/TOOL` globs (empty: every tool).
    pub tools: Vec<Glob>,
    /// Calls per second a bucket regains.
    pub rate: f64,
    /// The most calls a bucket holds (and a new bucket starts with).
    pub burst: u32,
    /// What a bucket is kept for.
    pub per: Per,
}

impl Limit {
    /// A limit named `name` of `rate` calls per second and `burst`, one bucket per caller,
    /// for every caller and tool.
    pub fn new(name: impl Into<Arc<str>>, rate: f64, burst: u32) -> Limit {
        Limit { name: name.into(), callers: Callers::default(), tools: Vec::new(), rate, burst, per: Per::Caller }
    }

    fn applies(&self, caller: Option<&Principal>, target: &str) -> bool {
        self.callers.matches(caller) && (self.tools.is_empty() || self.tools.iter().any(|g| g.matches(target)))
    }
}

/// A call a limit refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The limit's name.
    pub limit: Arc<str>,
    /// How long until the bucket holds a token again.
    pub retry_after: Duration,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// The tokens at `now`, refilled at `rate` up to `burst`.
    fn refilled(self, limit: &Limit, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * limit.rate).min(f64::from(limit.burst))
    }
}

/// One bucket a call takes a token from, as a store shared between replicas keeps it: its key
/// (the same on every replica for the same limit, caller and tool) and its limit's figures.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SharedBucket {
    /// The limit's name.
    pub limit: Arc<str>,
    /// `{CALLER}:LIMIT/RATE/BURST` (and `:SERVER/TOOL` per tool): the caller in braces (one
    /// Redis Cluster hash slot for all of a call's buckets), the rate and burst in it so that
    /// a limit changed by a reload starts with full buckets, as in memory.
    pub key: String,
    /// Calls per second the bucket regains.
    pub rate: f64,
    /// The most calls it holds.
    pub burst: u32,
}

/// A store of buckets shared by every replica of the gateway.
pub trait SharedBuckets: Send + Sync {
    /// Takes a token from each of `buckets`, or, when one of them is empty, from none and says
    /// which (the one to wait longest for), all in one step that no other replica's call can
    /// split; a bucket never seen is full.
    ///
    /// # Errors
    /// [`StoreUnavailable`]: the store could not be asked (the gateway then counts it and
    /// falls back to this replica's own buckets).
    fn take(&self, buckets: Vec<SharedBucket>) -> SharedTake<'_>;
}

/// The future of [`SharedBuckets::take`].
pub type SharedTake<'a> = Pin<Box<dyn Future<Output = Result<Result<(), Refused>, StoreUnavailable>> + Send + 'a>>;

/// A [`SharedBuckets`] store that could not be asked, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUnavailable(pub String);

impl fmt::Display for StoreUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rate limit store unavailable: {}", self.0)
    }
}

impl std::error::Error for StoreUnavailable {}

/// How long until a bucket holding `tokens` at `rate` has one: `Duration::MAX` when it never
/// will (rate 0).
pub fn wait_for_token(tokens: f64, rate: f64) -> Duration {
    let wait = if rate > 0.0 { (1.0 - tokens) / rate } else { f64::MAX };
    Duration::try_from_secs_f64(wait.max(0.0)).unwrap_or(Duration::MAX)
}

/// The limits and their buckets.
#[derive(Debug)]
pub struct RateLimiter {
    limits: Vec<Limit>,
    buckets: Mutex<HashMap<(usize, String), Bucket>>,
}

/// Who a bucket is kept for: the token's name, else the OAuth subject or client, else
/// `anonymous` (every caller without a principal shares it).
fn caller_key(caller: Option<&Principal>) -> String {
    match caller {
        Some(Principal { token_name: Some(name), .. }) => format!("token:{name}"),
        Some(Principal { subject: Some(subject), issuer, .. }) => {
            format!("sub:{}:{subject}", issuer.as_deref().unwrap_or_default())
        }
        Some(Principal { client_id: Some(client), .. }) => format!("client:{client}"),
        _ => "anonymous".to_owned(),
    }
}

impl RateLimiter {
    /// A limiter of `limits`, every bucket full.
    pub fn new(limits: Vec<Limit>) -> RateLimiter {
        RateLimiter { limits, buckets: Mutex::default() }
    }

    /// The limits.
    pub fn limits(&self) -> &[Limit] {
        &self.limits
    }

    /// A limiter of `limits` holding the buckets this one holds for each of them it has too
    /// (equal in every field, wherever it stands in the list); the others start full.
    pub fn reloaded(&self, limits: Vec<Limit>) -> RateLimiter {
        // Where each of this limiter's limits stands in `limits`, if there.
        let mut taken = vec![false; limits.len()];
        let moved: Vec<Option<usize>> = self
            .limits
            .iter()
            .map(|old| {
                let new = (0..limits.len()).find(|&j| !taken[j] && limits[j] == *old)?;
                taken[new] = true;
                Some(new)
            })
            .collect();
        let buckets = self
            .buckets
            .lock()
            .expect("buckets lock")
            .iter()
            .filter_map(|((i, who), bucket)| Some(((moved[*i]?, who.clone()), *bucket)))
            .collect();
        RateLimiter { limits, buckets: Mutex::new(buckets) }
    }

    /// The buckets a call of `caller` to `tool` of `server` takes a token from, one per limit
    /// that applies (none: the call is not limited), keyed for a [`SharedBuckets`] store.
    pub fn claim(&self, caller: Option<&Principal>, server: &str, tool: &str) -> Vec<SharedBucket> {
        let target = format!("{server}/{tool}");
        let mut applying = self.limits.iter().filter(|l| l.applies(caller, &target)).peekable();
        if applying.peek().is_none() {
            return Vec::new();
        }
        let who = caller_key(caller);
        applying
            .map(|limit| {
                let mut key = format!("{{{who}}}:{}/{}/{}", limit.name, limit.rate, limit.burst);
                if limit.per == Per::Tool {
                    key.push(':');
                    key.push_str(&target);
                }
                SharedBucket { limit: limit.name.clone(), key, rate: limit.rate, burst: limit.burst }
            })
            .collect()
    }

    /// Takes a token for `caller` calling `tool` of `server` at `now` from the bucket of every
    /// limit that applies; or, when one of them is empty, takes none and says which (the one
    /// to wait longest for).
    ///
    /// # Errors
    /// [`Refused`]: a bucket is empty.
    pub fn check(&self, caller: Option<&Principal>, server: &str, tool: &str, now: Instant) -> Result<(), Refused> {
        let target = format!("{server}/{tool}");
        let applying: Vec<(usize, &Limit)> =
            self.limits.iter().enumerate().filter(|(_, l)| l.applies(caller, &target)).collect();
        if applying.is_empty() {
            return Ok(());
        }
        let who = caller_key(caller);
        let key = |i: usize, limit: &Limit| match limit.per {
            Per::Caller => (i, who.clone()),
            Per::Tool => (i, format!("{who}\n{target}")),
        };
        let mut buckets = self.buckets.lock().expect("buckets lock");
        let mut refused: Option<Refused> = None;
        let mut levels = Vec::with_capacity(applying.len());
        for &(i, limit) in &applying {
            let key = key(i, limit);
            let tokens = buckets.get(&key).map_or(f64::from(limit.burst), |b| b.refilled(limit, now));
            if tokens < 1.0 {
                let retry_after = wait_for_token(tokens, limit.rate);
                if refused.as_ref().is_none_or(|r| r.retry_after < retry_after) {
                    refused = Some(Refused { limit: limit.name.clone(), retry_after });
                }
            }
            levels.push((key, tokens));
        }
        if let Some(refused) = refused {
            return Err(refused);
        }
        if buckets.len() > PRUNE_ABOVE {
            let limits = &self.limits;
            buckets.retain(|(i, _), b| b.refilled(&limits[*i], now) < f64::from(limits[*i].burst));
        }
        for (key, tokens) in levels {
            buckets.insert(key, Bucket { tokens: tokens - 1.0, at: now });
        }
        Ok(())
    }
}

/// The limits in force and their buckets, replaced by a reload that keeps the buckets of the
/// limits that did not change ([`RateLimiter::reloaded`]). Without any limit, a check is one
/// atomic load: no lock, no reference count.
#[derive(Debug, Default)]
pub(crate) struct LimitsInForce {
    /// Whether `limiter` holds any limit, read before (and instead of) taking its lock.
    any: AtomicBool,
    limiter: RwLock<Option<RateLimiter>>,
}

impl LimitsInForce {
    /// `limits` in force, every bucket full.
    pub(crate) fn new(limits: Vec<Limit>) -> LimitsInForce {
        let held = LimitsInForce::default();
        held.set(limits);
        held
    }

    /// Puts `limits` in force, keeping the buckets of those that were already; whether they
    /// differ from those in force (`false`: nothing done).
    pub(crate) fn set(&self, limits: Vec<Limit>) -> bool {
        let mut held = self.limiter.write().expect("limiter lock");
        if held.as_ref().map_or(&[][..], RateLimiter::limits) == limits.as_slice() {
            return false;
        }
        let any = !limits.is_empty();
        *held = match held.as_ref() {
            _ if !any => None,
            Some(old) => Some(old.reloaded(limits)),
            None => Some(RateLimiter::new(limits)),
        };
        self.any.store(any, Ordering::Release);
        true
    }

    /// The limits in force.
    pub(crate) fn limits(&self) -> Vec<Limit> {
        self.with_limiter(|limiter| limiter.limits().to_vec()).unwrap_or_default()
    }

    /// Whether no limit is in force.
    pub(crate) fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    /// [`RateLimiter::check`] against the limits in force (none: `Ok` at once).
    pub(crate) fn check(
        &self,
        caller: Option<&Principal>,
        server: &str,
        tool: &str,
        now: Instant,
    ) -> Result<(), Refused> {
        self.with_limiter(|limiter| limiter.check(caller, server, tool, now)).unwrap_or(Ok(()))
    }

    /// [`RateLimiter::claim`] of the limits in force (none: no bucket).
    pub(crate) fn claim(&self, caller: Option<&Principal>, server: &str, tool: &str) -> Vec<SharedBucket> {
        self.with_limiter(|limiter| limiter.claim(caller, server, tool)).unwrap_or_default()
    }

    /// `f` of the limiter in force, under its read lock; `None` without limits (the lock not
    /// taken).
    fn with_limiter<T>(&self, f: impl FnOnce(&RateLimiter) -> T) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        self.limiter.read().expect("limiter lock").as_ref().map(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Principal {
        Principal::named_token(name)
    }

    #[test]
    fn a_bucket_gives_its_burst_then_refills_at_its_rate() {
        let limiter = RateLimiter::new(vec![Limit::new("two-per-second", 2.0, 3)]);
        let t0 = Instant::now();
        let ci = named("ci");
        for _ in 0..3 {
            limiter.check(Some(&ci), "echo", "add", t0).unwrap();
        }
        let refused = limiter.check(Some(&ci), "echo", "add", t0).unwrap_err();
        assert_eq!(&*refused.limit, "two-per-second");
        assert_eq!(refused.retry_after, Duration::from_millis(500));
        // Another caller has a bucket of its own.
        limiter.check(Some(&named("dev")), "echo", "add", t0).unwrap();
        // 250 ms later half a token: still refused, 250 ms to go.
        let refused = limiter.check(Some(&ci), "echo", "add", t0 + Duration::from_millis(250)).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_millis(250));
        limiter.check(Some(&ci), "echo", "add", t0 + Duration::from_millis(500)).unwrap();
        // Never above the burst, however long it waited.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..3 {
            limiter.check(Some(&ci), "echo", "add", later).unwrap();
        }
        assert!(limiter.check(Some(&ci), "echo", "add", later).is_err());
    }

    #[test]
    fn limits_apply_by_caller_and_tool_and_a_refusal_takes_nothing() {
        let mut per_tool = Limit::new("ci-per-tool", 1.0 / 3600.0, 2);
        per_tool.callers = Callers { tokens: vec![Glob::new("ci")], ..Callers::default() };
        per_tool.tools = vec![Glob::new("echo/*")];
        per_tool.per = Per::Tool;
        let mut overall = Limit::new("everyone", 1.0 / 3600.0, 3);
        overall.per = Per::Caller;
        let limiter = RateLimiter::new(vec![per_tool, overall]);
        let (t, ci, dev) = (Instant::now(), named("ci"), named("dev"));
        limiter.check(Some(&ci), "echo", "add", t).unwrap();
        limiter.check(Some(&ci), "echo", "add", t).unwrap();
        let refused = limiter.check(Some(&ci), "echo", "add", t).unwrap_err();
        assert_eq!(&*refused.limit, "ci-per-tool");
        assert!(refused.retry_after > Duration::from_secs(3000), "{refused:?}");
        // Another tool: its own per-tool bucket; the overall one had 2 taken, not 3.
        limiter.check(Some(&ci), "echo", "echo", t).unwrap();
        let refused = limiter.check(Some(&ci), "echo", "echo", t).unwrap_err();
        assert_eq!(&*refused.limit, "everyone");
        // dev: only the overall limit.
        for _ in 0..3 {
            limiter.check(Some(&dev), "echo", "add", t).unwrap();
        }
        assert_eq!(&*limiter.check(Some(&dev), "time", "now", t).unwrap_err().limit, "everyone");
        // Anonymous callers share one bucket.
        for _ in 0..3 {
            limiter.check(None, "time", "now", t).unwrap();
        }
        assert!(limiter.check(None, "time", "now", t).is_err());
    }

    #[test]
    fn a_claim_names_one_bucket_per_limit_that_applies_the_same_on_every_replica() {
        let mut per_tool = Limit::new("ci-per-tool", 2.0, 5);
        per_tool.callers = Callers { tokens: vec![Glob::new("ci")], ..Callers::default() };
        per_tool.per = Per::Tool;
        let limiter = RateLimiter::new(vec![per_tool, Limit::new("everyone", 0.5, 3)]);
        let keys = |caller: Option<&Principal>| {
            limiter.claim(caller, "echo", "add").into_iter().map(|b| (b.key, b.rate, b.burst)).collect::<Vec<_>>()
        };
        assert_eq!(
            keys(Some(&named("ci"))),
            [
                ("{token:ci}:ci-per-tool/2/5:echo/add".to_owned(), 2.0, 5),
                ("{token:ci}:everyone/0.5/3".to_owned(), 0.5, 3)
            ]
        );
        assert_eq!(keys(None), [("{anonymous}:everyone/0.5/3".to_owned(), 0.5, 3)]);
        assert!(RateLimiter::new(Vec::new()).claim(None, "echo", "add").is_empty());
    }

    #[test]
    fn the_wait_for_a_token_is_what_is_missing_over_the_rate() {
        assert_eq!(wait_for_token(0.5, 2.0), Duration::from_millis(250));
        assert_eq!(wait_for_token(0.0, 0.25), Duration::from_secs(4));
        assert_eq!(wait_for_token(0.0, 0.0), Duration::MAX);
    }

    #[test]
    fn a_reload_keeps_the_buckets_of_the_limits_that_did_not_change() {
        let (t, ci) = (Instant::now(), named("ci"));
        let hourly = |name: &str, burst| Limit::new(name, 1.0 / 3600.0, burst);
        let limits = LimitsInForce::new(vec![hourly("kept", 2), hourly("changed", 2)]);
        for _ in 0..2 {
            limits.check(Some(&ci), "echo", "add", t).unwrap();
        }
        assert_eq!(&*limits.check(Some(&ci), "echo", "add", t).unwrap_err().limit, "kept");
        // The same limits again: nothing done.
        assert!(!limits.set(vec![hourly("kept", 2), hourly("changed", 2)]));
        // One added in front, one changed: "kept" moved in the list and is still empty; the
        // changed one and the new one start full.
        assert!(limits.set(vec![hourly("added", 5), hourly("kept", 2), hourly("changed", 3)]));
        assert_eq!(&*limits.check(Some(&ci), "echo", "add", t).unwrap_err().limit, "kept");
        limits.check(Some(&named("dev")), "echo", "add", t).unwrap();
        // Without "kept", the others' buckets as they were: "changed" had one call of dev taken.
        assert!(limits.set(vec![hourly("added", 5), hourly("changed", 3)]));
        for _ in 0..3 {
            limits.check(Some(&ci), "echo", "add", t).unwrap();
        }
        assert_eq!(&*limits.check(Some(&ci), "echo", "add", t).unwrap_err().limit, "changed");
        for _ in 0..2 {
            limits.check(Some(&named("dev")), "echo", "add", t).unwrap();
        }
        assert_eq!(&*limits.check(Some(&named("dev")), "echo", "add", t).unwrap_err().limit, "changed");
        assert_eq!(limits.limits(), [hourly("added", 5), hourly("changed", 3)]);
    }

    /// Poisons `limits`' lock: whoever takes it afterwards panics.
    fn poison(limits: &LimitsInForce) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _held = limits.limiter.write().unwrap();
            panic!("poisoning the lock");
        }));
        assert!(limits.limiter.is_poisoned());
    }

    #[test]
    fn without_limits_a_check_takes_no_lock() {
        let limits = LimitsInForce::new(vec![Limit::new("l", 1.0, 1)]);
        assert!(!limits.is_empty());
        assert!(limits.set(Vec::new()), "the limits removed");
        assert!(limits.is_empty());
        poison(&limits);
        let t = Instant::now();
        assert_eq!(limits.check(Some(&named("ci")), "", "", t), Ok(()));
        assert!(limits.claim(None, "echo", "add").is_empty());
        assert!(limits.limits().is_empty());
        // With a limit, the same check takes the lock (and so panics on the poisoned one).
        let limited = LimitsInForce::new(vec![Limit::new("l", 1.0, 1)]);
        poison(&limited);
        let took_the_lock =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| limited.check(None, "", "", t))).is_err();
        assert!(took_the_lock);
    }

    #[test]
    fn quiet_callers_buckets_are_dropped_once_full() {
        let limiter = RateLimiter::new(vec![Limit::new("l", 1.0, 1)]);
        let t = Instant::now();
        for i in 0..=PRUNE_ABOVE {
            limiter.check(Some(&named(&format!("c{i}"))), "s", "t", t).unwrap();
        }
        limiter.check(Some(&named("late")), "s", "t", t + Duration::from_secs(2)).unwrap();
        assert_eq!(limiter.buckets.lock().unwrap().len(), 1, "only the late caller's bucket is not full");
    }
}
