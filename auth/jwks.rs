//! [`JwtVerifier`]: JWT access tokens verified against the authorization server's JSON Web Key
//! Set, fetched over HTTP(S) from its `jwks_uri` and cached.
//!
//! The `jwks_uri` is given ([`JwtVerifier::new`]) or discovered from the issuer's metadata
//! ([`JwtVerifier::discover`]) at the first verification: RFC 8414 `oauth-authorization-server`
//! then OpenID Connect `openid-configuration`, at the well-known URLs the MCP authorization spec
//! lists for an issuer with or without a path. The document's `issuer` must be the configured
//! issuer exactly (RFC 8414 §3.3; a trailing slash on an empty path aside), else the metadata is
//! refused (503: a misconfiguration or a substitution, not the token's fault). A discovered
//! `jwks_uri` is kept for the verifier's life; a failed discovery is retried as a failed fetch.
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
//! The key set is also refetched when it gets old, so that a key the authorization server
//! withdrew stops verifying: its age limit is the answer's `Cache-Control: max-age`, bounded by
//! [`JwtVerifier::key_set_age_bounds`] (60 s to 24 h; no `max-age` is the upper bound,
//! `no-cache`/`no-store` the lower). The verification that finds the set old fetches it while
//! the others go on with the old set; if the fetch fails, the old set goes on serving.
//!
//! Claims: `iss` equal to the configured issuer, `aud` holding this resource's URI (always
//! checked), `exp` required and `nbf` honoured with a leeway of 60 s by default
//! ([`JwtVerifier::leeway`]) for clock skew between the two servers.
//!
//! Not here: the JWS itself ([`super::jwt`]), the rest of the metadata document (the client's
//! business), `Expires` and `ETag` of the key set answer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use hyper::header::CACHE_CONTROL;
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
    /// When the set is old and the next verification fetches it again (from `max-age`).
    stale_at: Option<Instant>,
}

/// Verifies JWT access tokens with the keys of a JWKS endpoint. See the module docs.
pub struct JwtVerifier {
    rules: ClaimRules,
    /// Given, or filled by discovery from `issuer_uri`.
    jwks_uri: OnceLock<Uri>,
    issuer_uri: Option<Uri>,
    fetch_timeout: Duration,
    min_refetch: Duration,
    key_set_age: (Duration, Duration),
    cache: Mutex<KeyCache>,
    fetching: tokio::sync::Mutex<()>,
    fetches: AtomicU64,
}

/// Why the key set is fetched again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refetch {
    /// A token names a key the set does not hold (rate-limited by `min_refetch`).
    UnknownKey,
    /// The set is past its age (at most one verification waits for it).
    Old,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.rules.issuer)
            .field("audience", &self.rules.audience)
            .field("jwks_uri", &self.jwks_uri.get())
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
        let verifier = JwtVerifier::with_source(issuer.into(), audience.into(), None);
        verifier.jwks_uri.set(parse_url(jwks_uri)?).expect("a new verifier has no jwks_uri");
        Ok(verifier)
    }

    /// Tokens issued by `issuer` for `audience`, signed with a key of the `jwks_uri` named by
    /// the issuer's metadata (RFC 8414 or OpenID Connect discovery, at the first verification).
    ///
    /// # Errors
    /// [`BadUrl`] when `issuer` is not an absolute http(s) URL.
    pub fn discover(issuer: impl Into<String>, audience: impl Into<String>) -> Result<JwtVerifier, BadUrl> {
        let issuer = issuer.into();
        let issuer_uri = parse_url(&issuer)?;
        Ok(JwtVerifier::with_source(issuer, audience.into(), Some(issuer_uri)))
    }

    fn with_source(issuer: String, audience: String, issuer_uri: Option<Uri>) -> JwtVerifier {
        JwtVerifier {
            rules: ClaimRules { issuer, audience, leeway: Duration::from_secs(60) },
            jwks_uri: OnceLock::new(),
            issuer_uri,
            fetch_timeout: Duration::from_secs(10),
            min_refetch: Duration::from_secs(30),
            key_set_age: (Duration::from_secs(60), Duration::from_secs(24 * 3600)),
            cache: Mutex::new(KeyCache {
                keys: Arc::new(Vec::new()),
                fetched_at: None,
                failed_at: None,
                stale_at: None,
            }),
            fetching: tokio::sync::Mutex::new(()),
            fetches: AtomicU64::new(0),
        }
    }

    /// The bounds of the key set's age limit, whatever its `Cache-Control: max-age` says: 60 s
    /// and 24 h. Without `max-age` the set is kept for `max`.
    pub fn key_set_age_bounds(mut self, min: Duration, max: Duration) -> JwtVerifier {
        self.key_set_age = (min.min(max), max);
        self
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

    /// How many times the key set has been fetched (successfully or not); discovery not counted.
    pub fn fetch_count(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn cached(&self) -> Arc<Vec<Jwk>> {
        self.cache.lock().expect("key cache lock").keys.clone()
    }

    /// The key set after one more fetch, unless another caller fetched it since `seen` was
    /// read, or the rate limit says not yet. An old set with another fetch in progress is
    /// returned at once.
    async fn refreshed(&self, seen: &Arc<Vec<Jwk>>, why: Refetch) -> Result<Arc<Vec<Jwk>>, Refusal> {
        let _one_fetch = match why {
            Refetch::UnknownKey => self.fetching.lock().await,
            Refetch::Old => match self.fetching.try_lock() {
                Ok(guard) => guard,
                Err(_) => return Ok(seen.clone()),
            },
        };
        {
            let cache = self.cache.lock().expect("key cache lock");
            if !Arc::ptr_eq(&cache.keys, seen) {
                return Ok(cache.keys.clone());
            }
            let recently = |at: Option<Instant>, within: Duration| at.is_some_and(|at| at.elapsed() < within);
            let rate_limited = why == Refetch::UnknownKey && recently(cache.fetched_at, self.min_refetch);
            if rate_limited || recently(cache.failed_at, RETRY_FAILED_FETCH) {
                return self.usable(&cache);
            }
        }
        let fetched = match self.jwks_uri().await {
            Ok(jwks_uri) => {
                self.fetches.fetch_add(1, Ordering::Relaxed);
                let request = fetch::Outgoing {
                    method: Method::GET,
                    url: jwks_uri,
                    headers: Vec::new(),
                    body: Default::default(),
                };
                match fetch::send_for_headers(request, self.fetch_timeout).await {
                    Ok((200, headers, body)) => serde_json::from_slice::<serde_json::Value>(&body)
                        .map(|doc| {
                            let cache_control = headers.get(CACHE_CONTROL).and_then(|v| v.to_str().ok());
                            (Jwk::set_from_json(&doc), key_set_age(cache_control, self.key_set_age))
                        })
                        .map_err(|_| "the key set is not JSON".to_owned()),
                    Ok((status, _, _)) => Err(format!("the key set answered {status}")),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        let mut cache = self.cache.lock().expect("key cache lock");
        let now = Instant::now();
        match fetched {
            Ok((keys, age)) => {
                cache.keys = Arc::new(keys);
                cache.fetched_at = Some(now);
                cache.failed_at = None;
                cache.stale_at = Some(now + age);
                Ok(cache.keys.clone())
            }
            Err(why) => {
                cache.failed_at = Some(now);
                if cache.keys.is_empty() {
                    Err(Refusal::Unavailable(why))
                } else {
                    Ok(cache.keys.clone())
                }
            }
        }
    }

    /// The `jwks_uri`: given, or read from the issuer's metadata (called under `fetching`).
    async fn jwks_uri(&self) -> Result<&Uri, String> {
        if let Some(uri) = self.jwks_uri.get() {
            return Ok(uri);
        }
        let issuer_uri = self.issuer_uri.as_ref().expect("a verifier without jwks_uri discovers it");
        let found = discover_jwks_uri(&self.rules.issuer, issuer_uri, self.fetch_timeout).await?;
        Ok(self.jwks_uri.get_or_init(|| found))
    }

    fn is_old(&self) -> bool {
        self.cache.lock().expect("key cache lock").stale_at.is_some_and(|at| Instant::now() >= at)
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
        if self.is_old() {
            keys = self.refreshed(&keys, Refetch::Old).await?;
        }
        if unverified.candidates(&keys).is_empty() {
            keys = self.refreshed(&keys, Refetch::UnknownKey).await?;
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

/// How long a key set answered with `cache_control` is kept, within `(min, max)`.
fn key_set_age(cache_control: Option<&str>, (min, max): (Duration, Duration)) -> Duration {
    let mut age = None;
    for directive in cache_control.unwrap_or("").split(',').map(str::trim) {
        let (name, value) = directive.split_once('=').unwrap_or((directive, ""));
        match name.trim().to_ascii_lowercase().as_str() {
            "no-cache" | "no-store" => return min,
            "max-age" => age = value.trim().trim_matches('"').parse::<u64>().ok().map(Duration::from_secs),
            _ => {}
        }
    }
    age.unwrap_or(max).clamp(min, max)
}

/// The metadata URLs to try for an issuer, in the order of the MCP authorization spec
/// ("Authorization Server Metadata Discovery"): RFC 8414 then OpenID Connect, path inserted
/// after the well-known prefix, then OpenID Connect's path appended.
fn metadata_urls(issuer: &Uri) -> Vec<String> {
    let origin =
        format!("{}://{}", issuer.scheme_str().unwrap_or("https"), issuer.authority().map_or("", |a| a.as_str()));
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Whether a metadata document's `issuer` is the configured one: identical, or differing only
/// by the trailing slash of an empty path.
fn issuer_matches(expected: &str, found: &str) -> bool {
    let bare_origin = |s: &str| {
        let uri: Option<Uri> = s.parse().ok();
        uri.filter(|u| matches!(u.path(), "" | "/") && u.query().is_none()).map(|_| s.trim_end_matches('/').to_owned())
    };
    expected == found || bare_origin(expected).is_some_and(|e| Some(e) == bare_origin(found))
}

/// The `jwks_uri` of `issuer`'s metadata: the first well-known URL answering 200 with a JSON
/// document wins; its `issuer` must match and it must name a usable `jwks_uri`.
async fn discover_jwks_uri(issuer: &str, issuer_uri: &Uri, timeout: Duration) -> Result<Uri, String> {
    let mut last = String::from("no metadata document");
    for url in metadata_urls(issuer_uri) {
        let Ok(url) = url.parse::<Uri>() else { continue };
        let request = fetch::Outgoing { method: Method::GET, url: &url, headers: Vec::new(), body: Default::default() };
        let document = match fetch::send(request, timeout).await {
            Ok((200, body)) => match serde_json::from_slice::<serde_json::Value>(&body) {
                Ok(document) if document.is_object() => document,
                _ => return Err(format!("the metadata at {url} is not a JSON object")),
            },
            Ok((status, _)) => {
                last = format!("the metadata at {url} answered {status}");
                continue;
            }
            Err(e) => return Err(e),
        };
        let found = document.get("issuer").and_then(serde_json::Value::as_str).unwrap_or("");
        if !issuer_matches(issuer, found) {
            return Err(format!("the metadata at {url} names another issuer ({found:?})"));
        }
        let jwks_uri = document
            .get("jwks_uri")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| format!("the metadata at {url} has no jwks_uri"))?;
        return parse_url(jwks_uri).map_err(|e| format!("the metadata at {url}: jwks_uri {e}"));
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_set_age_follows_max_age_within_its_bounds() {
        let bounds = (Duration::from_secs(60), Duration::from_secs(86_400));
        let age = |cc| key_set_age(cc, bounds).as_secs();
        assert_eq!(age(Some("public, max-age=3600")), 3600);
        assert_eq!(age(Some("max-age=\"600\", must-revalidate")), 600);
        assert_eq!(age(Some("max-age=5")), 60, "the lower bound");
        assert_eq!(age(Some("max-age=99999999")), 86_400, "the upper bound");
        assert_eq!(age(Some("no-store")), 60);
        assert_eq!(age(Some("max-age=3600, No-Cache")), 60);
        assert_eq!(age(Some("max-age=soon")), 86_400, "unreadable: as if absent");
        assert_eq!(age(None), 86_400);
    }

    #[test]
    fn metadata_is_looked_for_in_the_spec_order() {
        let urls = |issuer: &str| metadata_urls(&issuer.parse().unwrap());
        assert_eq!(
            urls("https://as.example"),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(urls("https://as.example/"), urls("https://as.example"));
        assert_eq!(
            urls("http://as:8080/tenant1/"),
            [
                "http://as:8080/.well-known/oauth-authorization-server/tenant1",
                "http://as:8080/.well-known/openid-configuration/tenant1",
                "http://as:8080/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn the_metadata_issuer_must_be_the_configured_one() {
        assert!(issuer_matches("https://as.example", "https://as.example"));
        assert!(issuer_matches("https://as.example", "https://as.example/"));
        assert!(!issuer_matches("https://as.example/t1", "https://as.example/t1/"), "a path compares exactly");
        assert!(!issuer_matches("https://as.example", "https://evil.example"));
        assert!(!issuer_matches("http://localhost:1", "http://127.0.0.1:1"));
        assert!(!issuer_matches("https://as.example", ""));
    }
}
