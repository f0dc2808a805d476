//! Who a verified access token speaks for ([`Principal`]) and why a token was refused
//! ([`Refusal`]): the types shared by the verifiers, the HTTP server that calls them and the
//! handlers that read the principal from their `Context`.
//!
//! Plain data, no IO, nothing that holds the token itself: a principal can be logged or shown
//! without leaking a credential. Not here: how a token is checked (see [`verifier`](crate::transport::sse_http::verifier)).

use std::time::SystemTime;

use serde_json::{Map, Value};

/// What a verified access token says about its holder. Never holds the token.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Principal {
    /// `sub`: the user (or machine client) the token was issued for.
    pub subject: Option<String>,
    /// `client_id` (or `azp`): the OAuth client the token was issued to.
    pub client_id: Option<String>,
    /// The granted scopes (`scope`, space separated, or `scp`).
    pub scopes: Vec<String>,
    /// `aud`: the resources the token is meant for; holds this server's resource URI.
    pub audience: Vec<String>,
    /// `iss`: the authorization server that issued the token.
    pub issuer: Option<String>,
    /// `exp`, when the token says.
    pub expires_at: Option<SystemTime>,
    /// Every claim of the token (or of the introspection answer) as verified, for what the
    /// fields above do not name. Never the token.
    pub claims: Map<String, Value>,
    /// The name of the static bearer token presented, when the server accepts several named
    /// ones (the HTTP server's `NamedTokens`); `None` for an
    /// OAuth token. The name only, never the token.
    pub token_name: Option<String>,
}

impl Principal {
    /// A principal for `subject` with nothing else known.
    pub fn new(subject: Option<String>) -> Principal {
        Principal { subject, ..Principal::default() }
    }

    /// Whether the token granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The scopes of `required` the token did not grant, in the order given.
    pub fn missing_scopes<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        required.iter().filter(|r| !self.has_scope(r)).map(String::as_str).collect()
    }

    /// Whether `other` is the same holder: same issuer, subject, client and token name. A
    /// session is bound to the holder that opened it; a refreshed token of the same holder may
    /// go on using it.
    pub fn same_holder(&self, other: &Principal) -> bool {
        self.issuer == other.issuer
            && self.subject == other.subject
            && self.client_id == other.client_id
            && self.token_name == other.token_name
    }

    /// A principal for the named static token `name` (no subject, no scopes).
    pub fn named_token(name: impl Into<String>) -> Principal {
        Principal { token_name: Some(name.into()), ..Principal::default() }
    }

    /// Reads the standard claims (`sub`, `client_id`/`azp`, `scope`/`scp`, `aud`, `iss`, `exp`)
    /// of a JWT payload or an RFC 7662 introspection answer.
    pub fn from_claims(claims: Map<String, Value>) -> Principal {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let scopes = match claims.get("scope").or_else(|| claims.get("scp")) {
            Some(Value::String(s)) => s.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect(),
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        let audience = match claims.get("aud") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        let expires_at = claims
            .get("exp")
            .and_then(Value::as_u64)
            .map(|secs| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs));
        Principal {
            subject: text("sub"),
            client_id: text("client_id").or_else(|| text("azp")),
            scopes,
            audience,
            issuer: text("iss"),
            expires_at,
            claims,
            token_name: None,
        }
    }
}

/// Why a bearer token was not accepted. Each maps to the HTTP answer of
/// [OAuth 2.1 §5.3](https://datatracker.ietf.org/doc/html/draft-ietf-oauth-v2-1-13#section-5.3):
/// 401 `invalid_token` for a token that is not valid here, 403 `insufficient_scope`, 503 when
/// the authorization server could not be asked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Not a token this verifier can read (not a JWS, bad base64 or JSON, a claim of the wrong type).
    Malformed,
    /// The JWS algorithm is not one we accept (`none`, HMAC, or unknown).
    UnsupportedAlgorithm,
    /// A JWT of another kind (its `typ` says so: a DPoP proof, a logout token …), not an
    /// access token.
    NotAnAccessToken,
    /// The signature does not verify with the key the token names.
    BadSignature,
    /// The token names a key (`kid`) that the authorization server's key set does not hold,
    /// even after fetching the key set again.
    UnknownKey,
    /// `exp` is past (beyond the leeway), or the token has no `exp`.
    Expired,
    /// `nbf` is in the future (beyond the leeway).
    NotYetValid,
    /// `iss` is not the configured authorization server.
    WrongIssuer,
    /// `aud` does not name this resource (RFC 8707): a token meant for another server.
    WrongAudience,
    /// Introspection says the token is not active, or a static token does not match.
    Inactive,
    /// The token is valid but does not grant these scopes, all of them needed.
    InsufficientScope {
        /// Every scope the request needs (not only the missing ones), for the challenge.
        required: Vec<String>,
    },
    /// The authorization server (JWKS or introspection endpoint) could not be asked; the
    /// token may be fine.
    Unavailable(String),
}

impl Refusal {
    /// The HTTP status of the answer: 401, 403 for insufficient scope, 503 when unavailable.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::InsufficientScope { .. } => 403,
            Refusal::Unavailable(_) => 503,
            _ => 401,
        }
    }

    /// The RFC 6750 `error` code of the challenge (`None` for 503, which has no challenge code).
    pub fn error_code(&self) -> Option<&'static str> {
        match self {
            Refusal::InsufficientScope { .. } => Some("insufficient_scope"),
            Refusal::Unavailable(_) => None,
            _ => Some("invalid_token"),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Malformed => f.write_str("the access token is malformed"),
            Refusal::UnsupportedAlgorithm => f.write_str("the access token's signature algorithm is not accepted"),
            Refusal::NotAnAccessToken => f.write_str("the token is not an access token"),
            Refusal::BadSignature => f.write_str("the access token's signature does not verify"),
            Refusal::UnknownKey => f.write_str("the access token is signed with an unknown key"),
            Refusal::Expired => f.write_str("the access token expired"),
            Refusal::NotYetValid => f.write_str("the access token is not valid yet"),
            Refusal::WrongIssuer => f.write_str("the access token was issued by another authorization server"),
            Refusal::WrongAudience => f.write_str("the access token is meant for another resource"),
            Refusal::Inactive => f.write_str("the access token is not active"),
            Refusal::InsufficientScope { required } => {
                write!(f, "the access token lacks a required scope (needs {})", required.join(" "))
            }
            Refusal::Unavailable(why) => write!(f, "the authorization server could not be reached: {why}"),
        }
    }
}

impl std::error::Error for Refusal {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn standard_claims_are_read_from_either_spelling() {
        let claims = json!({"sub": "alice", "azp": "app", "scp": ["a", "b"], "aud": "https://r/mcp",
            "iss": "https://as", "exp": 2_000_000_000u64, "extra": 1});
        let p = Principal::from_claims(claims.as_object().unwrap().clone());
        assert_eq!(p.subject.as_deref(), Some("alice"));
        assert_eq!(p.client_id.as_deref(), Some("app"));
        assert_eq!(p.scopes, ["a", "b"]);
        assert_eq!(p.audience, ["https://r/mcp"]);
        assert_eq!(p.expires_at, Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(2_000_000_000)));
        assert_eq!(p.claims["extra"], 1);
        let p = Principal::from_claims(
            json!({"scope": "x  y", "aud": ["r1", "r2"], "client_id": "c"}).as_object().unwrap().clone(),
        );
        assert_eq!(p.scopes, ["x", "y"]);
        assert_eq!(p.audience, ["r1", "r2"]);
        assert_eq!(p.client_id.as_deref(), Some("c"));
        assert_eq!(p.missing_scopes(&["x".into(), "z".into()]), ["z"]);
    }

    #[test]
    fn refusals_map_to_statuses_and_codes() {
        assert_eq!((Refusal::Expired.status(), Refusal::Expired.error_code()), (401, Some("invalid_token")));
        let scope = Refusal::InsufficientScope { required: vec!["a".into()] };
        assert_eq!((scope.status(), scope.error_code()), (403, Some("insufficient_scope")));
        assert_eq!(Refusal::Unavailable("x".into()).status(), 503);
        assert_eq!(Refusal::WrongAudience.to_string(), "the access token is meant for another resource");
    }
}
