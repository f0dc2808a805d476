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
//! Buckets of callers that went quiet are dropped once full again (a full bucket is what a new
//! one would be), when there are more than [`PRUNE_ABOVE`] of them: memory stays bounded by
//! the callers active within a refill period.
//!
//! Shared by replicas: [`RateLimiter::claim`] names the buckets a call needs (a key per limit
//! and caller, and tool), and a [`SharedBuckets`] store takes from them all at once for every
//! replica (`rate_limit_redis`, feature `redis`: one Lua script per call on Redis, its time
//! Redis's own). [`super::Gateway::share_rate_limits`] puts one in place of the memory.
//!
//! The same limiter serves limits on HTTP requests (`mcp-bridge serve`'s `per = "request"`):
//! asked with no server and tool, every limit without tools applies.
//!
//! Not here: the store's own code, the 429 of a refused request (the HTTP server's
//! [`crate::transport::sse_http::RequestLimit`]), reading the limits from a file
//! ([`super::settings`]).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
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
