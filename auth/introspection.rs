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
//! Not here: caching of answers (every request asks; a cache would trade revocation latency
//! for load, a choice left to a wrapper), other client authentication methods.

use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hyper::{Method, Uri};
use serde_json::{Map, Value};

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
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.endpoint)
            .field("audience", &self.audience)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
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

    async fn check(&self, token: &str) -> Result<Principal, Refusal> {
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

    #[test]
    fn debug_hides_the_client_secret() {
        let v = IntrospectionVerifier::new("http://127.0.0.1:1/introspect", "https://r/mcp", "rs", "hunter2").unwrap();
        let shown = format!("{v:?}");
        assert!(!shown.contains("hunter2") && !shown.contains(&STANDARD.encode("rs:hunter2")), "{shown}");
        assert!(IntrospectionVerifier::new("ftp://x/introspect", "a", "b", "c").is_err());
    }
}
