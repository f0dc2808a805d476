//! [`JwtVerifier`]: JWT access tokens verified against the authorization server's JSON Web Key
//! Set, fetched over HTTP(S) from its `jwks_uri` and cached.
//!
//! Keys are looked up by the token's `kid`. A `kid` the cached set does not hold makes the set
//! be fetched again, once, then the lookup is repeated (a key rotation at the authorization
//! server is picked up at its first token); a token whose `kid` is still unknown is refused.
//! Fetches are single-flight (concurrent verifications wait for the one fetch in progress)
//! and rate-limited: at most one per [`JwtVerifier::min_refetch_interval`] (30 s) once a set is
//! cached, so a stream of tokens with made-up `kid`s cannot turn this server into a load on the
//! authorization server; a failed fetch is retried at most once a second. A key set that could
//! not be fetched at all answers [`Refusal::Unavailable`] (503), not 401: the token may be fine.
//!
//! Claims: `iss` equal to the configured issuer, `aud` holding this resource's URI (always
//! checked), `exp` required and `nbf` honoured with a leeway of 60 s by default
//! ([`JwtVerifier::leeway`]) for clock skew between the two servers.
//!
//! Not here: the JWS itself ([`super::jwt`]), OpenID Connect discovery of the `jwks_uri` (pass
//! it), `Cache-Control` of the JWKS answer (the interval above rules).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use hyper::{Method, Uri};

use super::fetch;
use super::jwt::{check_claims, ClaimRules, Jwk, Unverified};
use super::principal::Refusal;
use super::verifier::{TokenVerifier, VerifyFuture};

/// A URL a verifier was given that it cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadUrl(pub String);

impl std::fmt::Display for BadUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} is not an absolute http(s) URL", self.0)
    }
}

impl std::error::Error for BadUrl {}

pub(crate) fn parse_url(url: &str) -> Result<Uri, BadUrl> {
    let uri: Uri = url.parse().map_err(|_| BadUrl(url.to_owned()))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(_)) => Ok(uri),
        _ => Err(BadUrl(url.to_owned())),
    }
}

struct KeyCache {
    keys: Arc<Vec<Jwk>>,
    fetched_at: Option<Instant>,
    failed_at: Option<Instant>,
}

/// Verifies JWT access tokens with the keys of a JWKS endpoint. See the module docs.
pub struct JwtVerifier {
    rules: ClaimRules,
    jwks_uri: Uri,
    fetch_timeout: Duration,
    min_refetch: Duration,
    cache: Mutex<KeyCache>,
    fetching: tokio::sync::Mutex<()>,
    fetches: AtomicU64,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.rules.issuer)
            .field("audience", &self.rules.audience)
            .field("jwks_uri", &self.jwks_uri)
            .finish_non_exhaustive()
    }
}

/// Failed fetches are retried at most this often.
const RETRY_FAILED_FETCH: Duration = Duration::from_secs(1);

impl JwtVerifier {
    /// Tokens issued by `issuer` (their `iss`, exactly) for `audience` (this resource's
    /// canonical URI, e.g. `https://mcp.example.com/mcp`), signed with a key of `jwks_uri`.
    ///
    /// # Errors
    /// [`BadUrl`] when `jwks_uri` is not an absolute http(s) URL.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>, jwks_uri: &str) -> Result<JwtVerifier, BadUrl> {
        Ok(JwtVerifier {
            rules: ClaimRules { issuer: issuer.into(), audience: audience.into(), leeway: Duration::from_secs(60) },
            jwks_uri: parse_url(jwks_uri)?,
            fetch_timeout: Duration::from_secs(10),
            min_refetch: Duration::from_secs(30),
            cache: Mutex::new(KeyCache { keys: Arc::new(Vec::new()), fetched_at: None, failed_at: None }),
            fetching: tokio::sync::Mutex::new(()),
            fetches: AtomicU64::new(0),
        })
    }

    /// Clock skew tolerated on `exp` and `nbf`: 60 s.
    pub fn leeway(mut self, leeway: Duration) -> JwtVerifier {
        self.rules.leeway = leeway;
        self
    }

    /// The least time between two fetches of the key set once one is cached: 30 s.
    pub fn min_refetch_interval(mut self, interval: Duration) -> JwtVerifier {
        self.min_refetch = interval;
        self
    }

    /// How long one fetch of the key set may take: 10 s.
    pub fn fetch_timeout(mut self, timeout: Duration) -> JwtVerifier {
        self.fetch_timeout = timeout;
        self
    }

    /// How many times the key set has been fetched (successfully or not).
    pub fn fetch_count(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn cached(&self) -> Arc<Vec<Jwk>> {
        self.cache.lock().expect("key cache lock").keys.clone()
    }

    /// The key set after one more fetch, unless another caller fetched it since `seen` was
    /// read, or the rate limit says not yet.
    async fn refreshed(&self, seen: &Arc<Vec<Jwk>>) -> Result<Arc<Vec<Jwk>>, Refusal> {
        let _one_fetch = self.fetching.lock().await;
        {
            let cache = self.cache.lock().expect("key cache lock");
            if !Arc::ptr_eq(&cache.keys, seen) {
                return Ok(cache.keys.clone());
            }
            let recently = |at: Option<Instant>, within: Duration| at.is_some_and(|at| at.elapsed() < within);
            if recently(cache.fetched_at, self.min_refetch) || recently(cache.failed_at, RETRY_FAILED_FETCH) {
                return self.usable(&cache);
            }
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let request =
            fetch::Outgoing { method: Method::GET, url: &self.jwks_uri, headers: Vec::new(), body: Default::default() };
        let fetched = match fetch::send(request, self.fetch_timeout).await {
            Ok((200, body)) => serde_json::from_slice::<serde_json::Value>(&body)
                .map(|doc| Jwk::set_from_json(&doc))
                .map_err(|_| "the key set is not JSON".to_owned()),
            Ok((status, _)) => Err(format!("the key set answered {status}")),
            Err(e) => Err(e),
        };
        let mut cache = self.cache.lock().expect("key cache lock");
        match fetched {
            Ok(keys) => {
                cache.keys = Arc::new(keys);
                cache.fetched_at = Some(Instant::now());
                cache.failed_at = None;
                Ok(cache.keys.clone())
            }
            Err(why) => {
                cache.failed_at = Some(Instant::now());
                if cache.keys.is_empty() {
                    Err(Refusal::Unavailable(why))
                } else {
                    Ok(cache.keys.clone())
                }
            }
        }
    }

    fn usable(&self, cache: &KeyCache) -> Result<Arc<Vec<Jwk>>, Refusal> {
        if cache.fetched_at.is_none() && cache.keys.is_empty() {
            Err(Refusal::Unavailable("the key set could not be fetched".into()))
        } else {
            Ok(cache.keys.clone())
        }
    }

    async fn check(&self, token: &str) -> Result<super::Principal, Refusal> {
        let unverified = Unverified::parse(token)?;
        let mut keys = self.cached();
        if unverified.candidates(&keys).is_empty() {
            keys = self.refreshed(&keys).await?;
        }
        let candidates = unverified.candidates(&keys);
        if candidates.is_empty() {
            return Err(Refusal::UnknownKey);
        }
        let claims = unverified.verify_with(&candidates)?;
        check_claims(claims, &self.rules, SystemTime::now())
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.check(token))
    }
}
