//! A pause after repeated failed bearer tokens from one client address: past
//! [`FailedTokenPause::failures`] failures in a row, every request from that address is
//! refused (429 with `Retry-After`) for [`FailedTokenPause::pause`], its token not even
//! checked, so guessing the token gets a few tries a minute instead of thousands a second. A
//! good token before the pause starts clears the count; another address is never affected.
//!
//! The table is bounded ([`MAX_ADDRESSES`]): when full, the entry seen longest ago goes. Time is
//! passed in. Not here: the HTTP answers (the server's) and the token check itself
//! ([`super::bearer`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::bearer::BearerCheck;

/// Client addresses remembered at once.
pub const MAX_ADDRESSES: usize = 4096;

/// When to pause an address, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailedTokenPause {
    /// Failed tokens in a row from one address before it is paused: 10.
    pub failures: u32,
    /// How long the pause lasts: 30 s.
    pub pause: Duration,
}

impl Default for FailedTokenPause {
    fn default() -> Self {
        Self { failures: 10, pause: Duration::from_secs(30) }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    paused_until: Option<Instant>,
    seen: Instant,
}

/// The failures counted per address.
#[derive(Debug, Default)]
pub(crate) struct FailedTokens {
    entries: HashMap<IpAddr, Entry>,
}

impl FailedTokens {
    /// How long `addr` is still paused at `now`, if it is.
    pub(crate) fn paused(&mut self, addr: IpAddr, now: Instant) -> Option<Duration> {
        let entry = self.entries.get_mut(&addr)?;
        match entry.paused_until {
            Some(until) if until > now => Some(until - now),
            Some(_) => {
                // The pause is over: a fresh count.
                self.entries.remove(&addr);
                None
            }
            None => None,
        }
    }

    /// Counts a failed token from `addr`; returns the pause it starts, if it starts one.
    pub(crate) fn failed(&mut self, addr: IpAddr, now: Instant, policy: FailedTokenPause) -> Option<Duration> {
        if !self.entries.contains_key(&addr) && self.entries.len() >= MAX_ADDRESSES {
            if let Some(oldest) = self.entries.iter().min_by_key(|(_, e)| e.seen).map(|(a, _)| *a) {
                self.entries.remove(&oldest);
            }
        }
        let entry = self.entries.entry(addr).or_insert(Entry { failures: 0, paused_until: None, seen: now });
        entry.failures += 1;
        entry.seen = now;
        if entry.failures >= policy.failures.max(1) {
            entry.paused_until = Some(now + policy.pause);
            return Some(policy.pause);
        }
        None
    }

    /// A good token from `addr`: its count starts again.
    pub(crate) fn succeeded(&mut self, addr: IpAddr) {
        if !self.entries.is_empty() {
            self.entries.remove(&addr);
        }
    }
}

/// Checks a request's bearer token (`check`) unless its client address is paused, counting a
/// wrong token (a missing one is no guess) and clearing the count on a good one. `Err(Ok(wait))`:
/// the address is paused for `wait` more; `Err(Err(verdict))`: the token was refused.
pub(crate) fn guard<B>(
    table: &Mutex<FailedTokens>,
    policy: Option<FailedTokenPause>,
    req: &hyper::Request<B>,
    check: impl FnOnce() -> BearerCheck,
) -> Result<(), Result<Duration, BearerCheck>> {
    let addr = req.extensions().get::<super::service::RemoteAddr>().map(|a| a.0.ip());
    let (Some(policy), Some(addr)) = (policy, addr) else {
        return match check() {
            BearerCheck::Accepted => Ok(()),
            refused => Err(Err(refused)),
        };
    };
    let now = Instant::now();
    if let Some(wait) = table.lock().expect("failed tokens lock").paused(addr, now) {
        return Err(Ok(wait));
    }
    match check() {
        BearerCheck::Accepted => {
            table.lock().expect("failed tokens lock").succeeded(addr);
            Ok(())
        }
        BearerCheck::Invalid => {
            if let Some(pause) = table.lock().expect("failed tokens lock").failed(addr, now, policy) {
                tracing::warn!(client = %addr, pause_s = pause.as_secs(), "bearer token failures: client address paused");
            }
            Err(Err(BearerCheck::Invalid))
        }
        refused => Err(Err(refused)),
    }
}

/// 429 with `Retry-After` (whole seconds, rounded up) and a JSON-RPC error naming the pause.
pub(crate) fn paused(wait: Duration) -> hyper::Response<super::HttpBody> {
    use crate::proto::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message};
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let message = format!(
        "Too Many Requests: too many failed bearer tokens from this address; paused for {secs} s \
         (HttpServerConfig::failed_token_pause)"
    );
    let body = Message::Error(ErrorResponse::new(None, ErrorObject::new(ErrorCode(-32000), message))).to_vec();
    let mut response = hyper::Response::new(super::full(body));
    *response.status_mut() = hyper::StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    headers.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    headers.insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from(secs));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_paused_after_its_failures_in_a_row_and_no_other() {
        let policy = FailedTokenPause { failures: 3, pause: Duration::from_secs(30) };
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let t = Instant::now();
        let mut table = FailedTokens::default();
        assert_eq!(table.failed(a, t, policy), None);
        assert_eq!(table.failed(a, t, policy), None);
        // A good token clears the count.
        table.succeeded(a);
        assert_eq!(table.failed(a, t, policy), None);
        assert_eq!(table.failed(a, t, policy), None);
        assert_eq!(table.failed(a, t, policy), Some(Duration::from_secs(30)));
        assert_eq!(table.paused(a, t + Duration::from_secs(10)), Some(Duration::from_secs(20)));
        assert_eq!(table.paused(b, t), None, "another address is not paused");
        // Over: a fresh count.
        assert_eq!(table.paused(a, t + Duration::from_secs(30)), None);
        assert_eq!(table.failed(a, t, policy), None);
    }

    #[test]
    fn the_table_is_bounded_and_forgets_the_address_seen_longest_ago() {
        let policy = FailedTokenPause { failures: 1, pause: Duration::from_secs(60) };
        let t = Instant::now();
        let mut table = FailedTokens::default();
        for n in 0..=MAX_ADDRESSES as u32 {
            table.failed(IpAddr::from(n.to_be_bytes()), t + Duration::from_millis(u64::from(n)), policy);
        }
        assert_eq!(table.entries.len(), MAX_ADDRESSES);
        assert_eq!(table.paused(IpAddr::from(0u32.to_be_bytes()), t), None, "the first one went");
        assert!(table.paused(IpAddr::from(1u32.to_be_bytes()), t).is_some());
    }
}
