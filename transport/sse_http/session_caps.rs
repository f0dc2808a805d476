//! Sessions per client address and per principal ([`HttpServerConfig::max_sessions_per_address`],
//! [`HttpServerConfig::max_sessions_per_principal`]): past either, a new session is refused like
//! past the total cap (503, `Retry-After`, a -32000 error naming the limit), so one address or
//! one token holder cannot take every place of [`HttpServerConfig::max_sessions`]. Both are off
//! by default: behind a reverse proxy every client shares the proxy's address, and on loopback
//! every local client shares one; set them on a listener that clients reach directly.
//!
//! A held place is given back when its session ends. Not here: the total cap, and
//! sessions of the legacy HTTP+SSE transport (only the total cap counts those).
//!
//! [`HttpServerConfig::max_sessions_per_address`]: super::server::HttpServerConfig::max_sessions_per_address
//! [`HttpServerConfig::max_sessions_per_principal`]: super::server::HttpServerConfig::max_sessions_per_principal
//! [`HttpServerConfig::max_sessions`]: super::server::HttpServerConfig::max_sessions

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// What a session is counted under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Address(IpAddr),
    /// Issuer and subject (or client id) of the verified token.
    Principal(Option<String>, Option<String>),
}

/// The sessions held, by address and by principal.
#[derive(Default)]
pub(crate) struct SessionCaps {
    held: Mutex<HashMap<Key, usize>>,
}

/// A session's places, given back when dropped.
pub(crate) struct Held {
    caps: Arc<SessionCaps>,
    keys: Vec<Key>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self.caps.held.lock().expect("session caps lock");
        for key in &self.keys {
            if let Some(n) = held.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    held.remove(key);
                }
            }
        }
    }
}

/// Which cap refused a new session, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) limit: &'static str,
    pub(crate) max: usize,
}

impl SessionCaps {
    /// Places for a new session of `addr` (when known) and `principal` (issuer, subject), within
    /// `per_address` and `per_principal`; `Err` names the cap that is full.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        addr: Option<IpAddr>,
        per_address: Option<usize>,
        principal: Option<(Option<String>, Option<String>)>,
        per_principal: Option<usize>,
    ) -> Result<Held, Refused> {
        let mut wanted = Vec::new();
        if let (Some(addr), Some(max)) = (addr, per_address) {
            wanted.push((Key::Address(addr), Refused { limit: "max_sessions_per_address", max }));
        }
        if let (Some((issuer, subject)), Some(max)) = (principal, per_principal) {
            wanted.push((Key::Principal(issuer, subject), Refused { limit: "max_sessions_per_principal", max }));
        }
        let mut held = self.held.lock().expect("session caps lock");
        if let Some((_, refused)) = wanted.iter().find(|(key, cap)| held.get(key).copied().unwrap_or(0) >= cap.max) {
            return Err(*refused);
        }
        for (key, _) in &wanted {
            *held.entry(key.clone()).or_default() += 1;
        }
        Ok(Held { caps: self.clone(), keys: wanted.into_iter().map(|(key, _)| key).collect() })
    }
}

/// What a principal's sessions are counted under: its token's issuer, and its subject (or, for
/// a machine client, its client id; for a named static token, its name).
pub(crate) fn principal_key(p: &crate::transport::principal::Principal) -> (Option<String>, Option<String>) {
    let name = p.token_name.as_ref().map(|name| format!("token:{name}"));
    (p.issuer.clone(), p.subject.clone().or_else(|| p.client_id.clone()).or(name))
}

/// 503 with `Retry-After` and a -32000 error naming the cap, as past the total cap.
pub(crate) fn refusal(refused: Refused, retry_after: std::time::Duration) -> hyper::Response<super::HttpBody> {
    use crate::proto::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message};
    let Refused { limit, max } = refused;
    tracing::debug!(limit, max, "a new session refused");
    let message = format!("Service Unavailable: too many sessions (the limit {limit} = {max}); try again later");
    let body = Message::Error(ErrorResponse::new(None, ErrorObject::new(ErrorCode(-32000), message))).to_vec();
    let mut response = hyper::Response::new(super::full(body));
    *response.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    headers.insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from(retry_after.as_secs().max(1)));
    response
}

impl super::server::HttpServerConfig {
    /// At most `max` sessions open at once from one client address (`None`, the default: no
    /// cap but the total); see [`super::session_caps`].
    pub fn max_sessions_per_address(mut self, max: Option<usize>) -> Self {
        self.max_sessions_per_address = max;
        self
    }

    /// At most `max` sessions open at once for one principal (the issuer and subject of a
    /// verified OAuth token; `None`, the default: no cap but the total).
    pub fn max_sessions_per_principal(mut self, max: Option<usize>) -> Self {
        self.max_sessions_per_principal = max;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_and_principal_has_its_own_count_given_back_when_a_session_ends() {
        let caps = Arc::new(SessionCaps::default());
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let alice = || Some((Some("https://as".to_owned()), Some("alice".to_owned())));
        let first = caps.reserve(Some(a), Some(2), alice(), Some(3)).unwrap();
        let _second = caps.reserve(Some(a), Some(2), None, Some(3)).unwrap();
        let refused = caps.reserve(Some(a), Some(2), None, Some(3)).err().unwrap();
        assert_eq!(refused, Refused { limit: "max_sessions_per_address", max: 2 });
        // Another address is counted apart; the principal's count goes on across addresses.
        let _third = caps.reserve(Some(b), Some(2), alice(), Some(2)).unwrap();
        let refused = caps.reserve(Some(b), Some(2), alice(), Some(2)).err().unwrap();
        assert_eq!(refused, Refused { limit: "max_sessions_per_principal", max: 2 });
        // A refusal holds nothing; an ended session gives its places back.
        drop(first);
        assert!(caps.reserve(Some(a), Some(2), alice(), Some(2)).is_ok());
        // No caps: nothing counted.
        assert!(caps.reserve(Some(a), None, alice(), None).is_ok());
    }
}
