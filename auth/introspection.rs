//! [`IntrospectionVerifier`]: opaque (or any) access tokens checked by asking the
//! authorization server ([RFC 7662](https://www.rfc-editor.org/rfc/rfc7662)).
//!
//! Each verification POSTs `token=…&token_type_hint=access_token` to the introspection
//! endpoint, authenticated as this resource server with HTTP Basic (`client_secret_basic`, the
//! id and secret form-encoded first, RFC 6749 §2.3.1). The answer must say `"active": true`;
//! then `aud` must hold this resource's URI (always checked: an answer without `aud` is
//! refused), `iss` must be the configured issuer when the answer has one, and `exp` (when
//! given) must not be past beyond the leeway. A 401/403 from the endpoint (our credentials
//! refused) or any failure to get an answer is [`Refusal::Unavailable`]: 503, the token may
//! be fine.
//!
//! Answers are cached (see `auth/answer_cache.rs`), keyed by the SHA-256 of the token, never
//! the token itself:
//! - an active answer until the token's `exp` or [`IntrospectionVerifier::max_cache_ttl`]
//!   (60 s) from now, whichever is sooner: a token revoked at the authorization server is still
//!   accepted here for up to that long (the price of not asking on every request;
//!   `Duration::ZERO` asks every time);
//! - an inactive or refused answer (inactive, another audience or issuer, expired) for
//!   [`IntrospectionVerifier::negative_cache_ttl`] (5 s), so that a flood of bad tokens, or one
//!   bad token retried in a loop, reaches the authorization server once per token per period;
//! - a failure to get an answer (503) is not kept: the next check asks again.
//!
//! Concurrent checks of one token share one request (single-flight). At most
//! [`IntrospectionVerifier::max_cached_tokens`] (10,000) answers are kept.
//!
//! Not here: other client authentication methods, revocation notices pushed by the
//! authorization server (nothing standard to listen to).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hyper::{Method, Uri};
use serde_json::{Map, Value};

use super::answer_cache::{AnswerCache, Claim, TokenKey, Verdict};
use super::fetch::{self, form_encode};
use super::jwks::{parse_url, BadUrl};
use super::jwt::check_audience;
use super::principal::{Principal, Refusal};
use super::verifier::{TokenVerifier, VerifyFuture};

/// Asks an RFC 7662 endpoint about each token. See the module docs.
pub struct IntrospectionVerifier {
    endpoint: Uri,
    audience: String,
    issuer: Option<String>,
    /// `Basic base64(id:secret)`, built once; never shown.
    authorization: String,
    client_id: String,
    leeway: Duration,
    timeout: Duration,
    max_cache_ttl: Duration,
    negative_cache_ttl: Duration,
    cache: AnswerCache,
    introspections: AtomicU64,
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.endpoint)
            .field("audience", &self.audience)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("cached_tokens", &self.cache.len())
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Tokens for `audience` (this resource's URI), asked about at `endpoint` as client
    /// `client_id` with `client_secret`.
    ///
    /// # Errors
    /// [`BadUrl`] when `endpoint` is not an absolute http(s) URL.
    pub fn new(
        endpoint: &str,
        audience: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: &str,
    ) -> Result<IntrospectionVerifier, BadUrl> {
        let client_id = client_id.into();
        let pair = format!("{}:{}", form_encode(&client_id), form_encode(client_secret));
        Ok(IntrospectionVerifier {
            endpoint: parse_url(endpoint)?,
            audience: audience.into(),
            issuer: None,
            authorization: format!("Basic {}", STANDARD.encode(pair)),
            client_id,
            leeway: Duration::from_secs(60),
            timeout: Duration::from_secs(10),
            max_cache_ttl: Duration::from_secs(60),
            negative_cache_ttl: Duration::from_secs(5),
            cache: AnswerCache::new(10_000),
            introspections: AtomicU64::new(0),
        })
    }

    /// Requires `iss` of the answer, when it has one, to be `issuer`.
    pub fn issuer(mut self, issuer: impl Into<String>) -> IntrospectionVerifier {
        self.issuer = Some(issuer.into());
        self
    }

    /// Clock skew tolerated on `exp` and `nbf`: 60 s.
    pub fn leeway(mut self, leeway: Duration) -> IntrospectionVerifier {
        self.leeway = leeway;
        self
    }

    /// How long one introspection may take: 10 s.
    pub fn timeout(mut self, timeout: Duration) -> IntrospectionVerifier {
        self.timeout = timeout;
        self
    }

    /// The longest an active answer is kept (never past the token's `exp`): 60 s.
    /// `Duration::ZERO` keeps none: every request asks.
    pub fn max_cache_ttl(mut self, ttl: Duration) -> IntrospectionVerifier {
        self.max_cache_ttl = ttl;
        self
    }

    /// How long an inactive or refused answer is kept: 5 s. `Duration::ZERO` keeps none.
    pub fn negative_cache_ttl(mut self, ttl: Duration) -> IntrospectionVerifier {
        self.negative_cache_ttl = ttl;
        self
    }

    /// The most answers kept at once: 10,000 (see the module docs for what goes when full).
    pub fn max_cached_tokens(mut self, tokens: usize) -> IntrospectionVerifier {
        self.cache.set_capacity(tokens);
        self
    }

    /// How many introspection requests were sent (answered or not).
    pub fn introspection_count(&self) -> u64 {
        self.introspections.load(Ordering::Relaxed)
    }

    async fn check(&self, token: &str) -> Verdict {
        let key = TokenKey::of(token);
        loop {
            match self.cache.claim(key, Instant::now()) {
                Claim::Kept(verdict) => return verdict,
                Claim::Wait(mut answer) => {
                    if let Ok(verdict) = answer.wait_for(Option::is_some).await {
                        return verdict.clone().expect("waited for an answer");
                    }
                    // The check that was asking went away before its answer: ask ourselves.
                }
                Claim::Lead(flight) => {
                    let verdict = self.introspect(token).await;
                    let until = self.keep_until(&verdict, SystemTime::now(), Instant::now());
                    flight.finish(&verdict, until, Instant::now());
                    return verdict;
                }
            }
        }
    }

    /// Until when `verdict` may be served from the cache (`None`: not at all).
    fn keep_until(&self, verdict: &Verdict, wall: SystemTime, now: Instant) -> Option<Instant> {
        let ttl = match verdict {
            Ok(principal) => match principal.claims.get("exp").and_then(Value::as_f64) {
                Some(exp) => {
                    let now_secs = wall.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
                    let left = Duration::try_from_secs_f64(exp - now_secs).ok()?;
                    left.min(self.max_cache_ttl)
                }
                None => self.max_cache_ttl,
            },
            Err(Refusal::Unavailable(_)) => return None,
            Err(_) => self.negative_cache_ttl,
        };
        (!ttl.is_zero()).then(|| now + ttl)
    }

    async fn introspect(&self, token: &str) -> Verdict {
        self.introspections.fetch_add(1, Ordering::Relaxed);
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let request = fetch::Outgoing {
            method: Method::POST,
            url: &self.endpoint,
            headers: vec![("authorization", self.authorization.clone())],
            body: body.into(),
        };
        let answer = match fetch::send(request, self.timeout).await {
            Ok((200, body)) => body,
            Ok((status, _)) => {
                return Err(Refusal::Unavailable(format!("the introspection endpoint answered {status}")))
            }
            Err(e) => return Err(Refusal::Unavailable(e)),
        };
        let claims: Map<String, Value> = serde_json::from_slice(&answer)
            .map_err(|_| Refusal::Unavailable("the introspection answer is not a JSON object".into()))?;
        judge(claims, &self.audience, self.issuer.as_deref(), self.leeway, SystemTime::now())
    }
}

/// The verdict on one introspection answer at time `now`.
fn judge(
    claims: Map<String, Value>,
    audience: &str,
    issuer: Option<&str>,
    leeway: Duration,
    now: SystemTime,
) -> Result<Principal, Refusal> {
    if claims.get("active") != Some(&Value::Bool(true)) {
        return Err(Refusal::Inactive);
    }
    check_audience(claims.get("aud"), audience)?;
    if let (Some(expected), Some(iss)) = (issuer, claims.get("iss")) {
        if iss.as_str() != Some(expected) {
            return Err(Refusal::WrongIssuer);
        }
    }
    let now = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    let leeway = leeway.as_secs_f64();
    if let Some(exp) = claims.get("exp").and_then(Value::as_f64) {
        if now >= exp + leeway {
            return Err(Refusal::Expired);
        }
    }
    if let Some(nbf) = claims.get("nbf").and_then(Value::as_f64) {
        if now + leeway < nbf {
            return Err(Refusal::NotYetValid);
        }
    }
    Ok(Principal::from_claims(claims))
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.check(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    const NOW: u64 = 1_900_000_000;

    fn verdict(answer: Value) -> Result<Principal, Refusal> {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(NOW);
        judge(answer.as_object().unwrap().clone(), "https://r/mcp", Some("https://as"), Duration::from_secs(60), now)
    }

    #[test]
    fn introspection_answers_are_judged() {
        let p = verdict(json!({"active": true, "aud": "https://r/mcp", "iss": "https://as", "sub": "u",
            "scope": "a b", "client_id": "c", "exp": NOW + 5}))
        .unwrap();
        assert_eq!((p.subject.as_deref(), p.client_id.as_deref()), (Some("u"), Some("c")));
        assert_eq!(p.scopes, ["a", "b"]);
        assert_eq!(verdict(json!({"active": false, "aud": "https://r/mcp"})).unwrap_err(), Refusal::Inactive);
        assert_eq!(verdict(json!({"active": "true", "aud": "https://r/mcp"})).unwrap_err(), Refusal::Inactive);
        assert_eq!(verdict(json!({"active": true})).unwrap_err(), Refusal::WrongAudience, "aud is required");
        assert_eq!(verdict(json!({"active": true, "aud": ["https://other/mcp"]})).unwrap_err(), Refusal::WrongAudience);
        assert_eq!(
            verdict(json!({"active": true, "aud": "https://r/mcp", "iss": "https://x"})).unwrap_err(),
            Refusal::WrongIssuer
        );
        assert_eq!(
            verdict(json!({"active": true, "aud": "https://r/mcp", "exp": NOW - 61})).unwrap_err(),
            Refusal::Expired
        );
        assert!(verdict(json!({"active": true, "aud": "https://r/mcp", "exp": NOW - 59})).is_ok());
    }

    fn verifier(endpoint: &str) -> IntrospectionVerifier {
        IntrospectionVerifier::new(endpoint, "https://r/mcp", "rs", "pw").unwrap()
    }

    #[test]
    fn active_answers_are_kept_until_exp_or_the_max_ttl_refusals_briefly_failures_not_at_all() {
        let v = verifier("http://127.0.0.1:1/i").max_cache_ttl(Duration::from_secs(60));
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(NOW);
        let now = Instant::now();
        let active = |exp: Option<u64>| {
            let mut claims = json!({"active": true, "aud": "https://r/mcp"});
            if let Some(exp) = exp {
                claims["exp"] = json!(exp);
            }
            Ok(Principal::from_claims(claims.as_object().unwrap().clone()))
        };
        let secs = |n| Some(now + Duration::from_secs(n));
        assert_eq!(v.keep_until(&active(Some(NOW + 5)), wall, now), secs(5), "exp comes first");
        assert_eq!(v.keep_until(&active(Some(NOW + 3600)), wall, now), secs(60), "the max ttl comes first");
        assert_eq!(v.keep_until(&active(None), wall, now), secs(60));
        assert_eq!(v.keep_until(&active(Some(NOW - 1)), wall, now), None, "accepted within the leeway: not kept");
        assert_eq!(v.keep_until(&Err(Refusal::Inactive), wall, now), secs(5));
        assert_eq!(v.keep_until(&Err(Refusal::WrongAudience), wall, now), secs(5));
        assert_eq!(v.keep_until(&Err(Refusal::Unavailable("down".into())), wall, now), None);
        let v = v.max_cache_ttl(Duration::ZERO).negative_cache_ttl(Duration::ZERO);
        assert_eq!(v.keep_until(&active(Some(NOW + 5)), wall, now), None);
        assert_eq!(v.keep_until(&Err(Refusal::Inactive), wall, now), None);
    }

    /// An introspection endpoint on 127.0.0.1 that counts its requests and answers each only
    /// when released: `active` for the token `good`, inactive for any other.
    struct Endpoint {
        url: String,
        requests: tokio::sync::mpsc::UnboundedReceiver<()>,
        release: Arc<tokio::sync::Semaphore>,
    }

    async fn endpoint() -> Endpoint {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/introspect", listener.local_addr().unwrap());
        let (seen, requests) = tokio::sync::mpsc::unbounded_channel();
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let permits = release.clone();
        crate::transport::task::spawn(async move {
            loop {
                let Ok((mut tcp, _)) = listener.accept().await else { return };
                let (seen, permits) = (seen.clone(), permits.clone());
                crate::transport::task::spawn(async move {
                    let mut request = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let body = loop {
                        let n = tcp.read(&mut chunk).await.unwrap();
                        assert!(n > 0, "the request ended early");
                        request.extend_from_slice(&chunk[..n]);
                        let text = String::from_utf8_lossy(&request).into_owned();
                        if let Some((head, body)) = text.split_once("\r\n\r\n") {
                            let length: usize = head
                                .lines()
                                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(str::to_owned))
                                .map(|n| n.trim().parse().unwrap())
                                .unwrap_or(0);
                            if body.len() >= length {
                                break body.to_owned();
                            }
                        }
                    };
                    let _ = seen.send(());
                    permits.acquire().await.unwrap().forget();
                    let answer = if body.starts_with("token=good&") {
                        json!({"active": true, "aud": "https://r/mcp", "sub": "alice"})
                    } else {
                        json!({"active": false})
                    }
                    .to_string();
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                        answer.len()
                    );
                    let _ = tcp.write_all(response.as_bytes()).await;
                });
            }
        });
        Endpoint { url, requests, release }
    }

    #[tokio::test]
    async fn concurrent_checks_of_one_token_share_one_request_and_later_ones_are_served_from_the_cache() {
        let mut endpoint = endpoint().await;
        let v = Arc::new(verifier(&endpoint.url));
        let check = |token: &'static str| {
            let v = v.clone();
            tokio::spawn(async move { v.verify(token).await })
        };
        let leader = check("good");
        endpoint.requests.recv().await.unwrap();
        let followers: Vec<_> = (0..7).map(|_| check("good")).collect();
        while v.cache.waiting(TokenKey::of("good")) < 7 {
            tokio::task::yield_now().await;
        }
        endpoint.release.add_permits(1);
        assert_eq!(leader.await.unwrap().unwrap().subject.as_deref(), Some("alice"));
        for follower in followers {
            assert_eq!(follower.await.unwrap().unwrap().subject.as_deref(), Some("alice"));
        }
        assert_eq!(v.introspection_count(), 1);
        assert!(v.verify("good").await.is_ok());
        assert_eq!(v.introspection_count(), 1, "kept");

        // Inactive tokens: one request each, then the negative cache answers.
        endpoint.release.add_permits(2);
        for _ in 0..5 {
            assert_eq!(v.verify("bad-1").await.unwrap_err(), Refusal::Inactive);
        }
        assert_eq!(v.verify("bad-2").await.unwrap_err(), Refusal::Inactive);
        assert_eq!(v.introspection_count(), 3);
        assert!(!format!("{v:?}").contains("good"), "no token in Debug");
    }

    #[tokio::test]
    async fn a_cancelled_check_hands_the_request_to_a_waiting_one() {
        let mut endpoint = endpoint().await;
        let v = Arc::new(verifier(&endpoint.url));
        let leader = {
            let v = v.clone();
            tokio::spawn(async move { v.verify("good").await })
        };
        endpoint.requests.recv().await.unwrap();
        let follower = {
            let v = v.clone();
            tokio::spawn(async move { v.verify("good").await })
        };
        while v.cache.waiting(TokenKey::of("good")) < 1 {
            tokio::task::yield_now().await;
        }
        leader.abort();
        endpoint.requests.recv().await.unwrap();
        endpoint.release.add_permits(2);
        assert_eq!(follower.await.unwrap().unwrap().subject.as_deref(), Some("alice"));
        assert_eq!(v.introspection_count(), 2, "the follower asked once the leader was gone");
    }

    #[test]
    fn debug_hides_the_client_secret() {
        let v = IntrospectionVerifier::new("http://127.0.0.1:1/introspect", "https://r/mcp", "rs", "hunter2").unwrap();
        let shown = format!("{v:?}");
        assert!(!shown.contains("hunter2") && !shown.contains(&STANDARD.encode("rs:hunter2")), "{shown}");
        assert!(IntrospectionVerifier::new("ftp://x/introspect", "a", "b", "c").is_err());
    }
}
