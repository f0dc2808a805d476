//! The authorization request and its response: PKCE S256
//! ([RFC 7636](https://www.rfc-editor.org/rfc/rfc7636)), `state`, the RFC 8707 `resource`, the
//! URL the user is sent to, and the checks of the redirect that comes back (`state`, and the
//! RFC 9207 `iss` by the table of
//! [MCP "Authorization Response Validation"](https://modelcontextprotocol.io/specification/2026-07-28/basic/authorization#authorization-response-validation)).
//!
//! The host's part is an [`AuthorizationHandler`]: given the URL, it brings back the redirect's
//! parameters (open a browser and listen on a loopback port, print the URL and read what the
//! user pastes …). [`RedirectFollower`] is one for authorization servers that redirect at once
//! (tests, the conformance suite): it GETs the URL and reads the `Location`.
//!
//! Not here: discovery, registration, the token request that spends the code.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use url::Url;

use super::http::HttpClient;
use super::{AuthError, AuthFuture, Secret};

/// A PKCE pair: the verifier (kept, sent with the token request) and its S256 challenge (sent
/// with the authorization request).
#[derive(Debug, Clone)]
pub struct Pkce {
    /// 43 characters of base64url over 32 random bytes.
    pub verifier: Secret,
    /// `BASE64URL(SHA256(verifier))`.
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair from the operating system's random source.
    pub fn new() -> Pkce {
        Pkce::from_verifier(random_token())
    }

    /// The pair of a given verifier.
    pub fn from_verifier(verifier: String) -> Pkce {
        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
        Pkce { challenge: URL_SAFE_NO_PAD.encode(digest.as_ref()), verifier: Secret::new(verifier) }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Pkce::new()
    }
}

/// 32 random bytes as base64url (43 characters): PKCE verifiers, `state`, JWT ids.
pub(crate) fn random_token() -> String {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut bytes).expect("the operating system's random source is available");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// What the host is asked to do: send the user to `url`, and bring back the redirect to
/// `redirect_uri`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthorizationRequest {
    /// The authorization URL, with every parameter.
    pub url: Url,
    /// Where the authorization server will redirect the user agent.
    pub redirect_uri: String,
    /// The `state` the redirect must carry back (checked by the caller too).
    pub state: String,
}

/// The parameters of the redirect that ends an authorization request.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AuthorizationResponse {
    /// `code`.
    pub code: Option<Secret>,
    /// `state`.
    pub state: Option<String>,
    /// `iss` (RFC 9207), decoded, not normalized.
    pub iss: Option<String>,
    /// `error`, when the server refused.
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl AuthorizationResponse {
    /// The parameters in the query of a redirect URL.
    pub fn from_redirect(url: &Url) -> AuthorizationResponse {
        let mut response = AuthorizationResponse::default();
        for (name, value) in url.query_pairs() {
            let value = value.into_owned();
            match name.as_ref() {
                "code" => response.code = Some(Secret::new(value)),
                "state" => response.state = Some(value),
                "iss" => response.iss = Some(value),
                "error" => response.error = Some(value),
                "error_description" => response.error_description = Some(value),
                _ => {}
            }
        }
        response
    }
}

/// The host's part of the authorization code flow: bring the user to the authorization URL and
/// return the redirect's parameters. The future may take as long as the user does; dropping it
/// abandons the flow.
pub trait AuthorizationHandler: Send + Sync + 'static {
    /// Runs one authorization request.
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> AuthFuture<'a, Result<AuthorizationResponse, AuthError>>;
}

/// An [`AuthorizationHandler`] for authorization servers that redirect at once, without a user
/// (test servers, the conformance suite's): GETs the authorization URL and reads the redirect's
/// parameters from its `Location`, which it does not follow.
#[derive(Clone)]
pub struct RedirectFollower {
    http: HttpClient,
}

impl std::fmt::Debug for RedirectFollower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedirectFollower")
    }
}

impl RedirectFollower {
    /// A follower with a 30 s timeout.
    ///
    /// # Errors
    /// [`AuthError::Config`] when the TLS configuration cannot be built.
    pub fn new() -> Result<RedirectFollower, AuthError> {
        Ok(RedirectFollower {
            http: HttpClient::new(
                std::time::Duration::from_secs(30),
                #[cfg(feature = "tls")]
                &[],
            )?,
        })
    }
}

impl AuthorizationHandler for RedirectFollower {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> AuthFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin(async move {
            let answer = self.http.get(&request.url).await?;
            let location = answer.location.filter(|_| answer.status.is_redirection()).ok_or_else(|| {
                AuthError::Authorization(format!(
                    "the authorization endpoint answered {} without a redirect",
                    answer.status
                ))
            })?;
            let redirect = request
                .url
                .join(&location)
                .map_err(|e| AuthError::Authorization(format!("the redirect is not a url: {e}")))?;
            Ok(AuthorizationResponse::from_redirect(&redirect))
        })
    }
}

/// The authorization URL: `endpoint` with `response_type=code`, the client, the PKCE challenge,
/// `state`, `resource` and, when there are any, the scopes.
pub fn authorization_url(
    endpoint: &str,
    client_id: &str,
    redirect_uri: &str,
    pkce: &Pkce,
    state: &str,
    resource: &str,
    scopes: &[String],
) -> Result<Url, AuthError> {
    let mut url = Url::parse(endpoint)
        .map_err(|e| AuthError::Discovery(format!("the authorization endpoint is not a url: {e}")))?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state)
            .append_pair("resource", resource);
        if !scopes.is_empty() {
            query.append_pair("scope", &scopes.join(" "));
        }
    }
    Ok(url)
}

/// Checks a redirect against the request: `state` first, then `iss` against the recorded
/// issuer by simple string comparison (required when the server advertises
/// `authorization_response_iss_parameter_supported`, compared whenever present), and only then
/// an `error`; returns the code.
///
/// # Errors
/// [`AuthError::StateMismatch`], [`AuthError::IssMismatch`], [`AuthError::IssMissing`], or
/// [`AuthError::Authorization`] for an error response or one without a code.
pub fn check_response(
    response: AuthorizationResponse,
    state: &str,
    issuer: &str,
    iss_advertised: bool,
) -> Result<Secret, AuthError> {
    if response.state.as_deref() != Some(state) {
        return Err(AuthError::StateMismatch);
    }
    match response.iss.as_deref() {
        Some(iss) if iss != issuer => {
            return Err(AuthError::IssMismatch { expected: issuer.to_owned(), found: iss.to_owned() })
        }
        None if iss_advertised => return Err(AuthError::IssMissing),
        _ => {}
    }
    if let Some(error) = response.error {
        let description = response.error_description.map(|d| format!(": {d}")).unwrap_or_default();
        return Err(AuthError::Authorization(format!("the authorization server refused: {error}{description}")));
    }
    response.code.ok_or_else(|| AuthError::Authorization("the redirect carries no code".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_rfc_7636_appendix_b() {
        let pkce = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(pkce.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let fresh = Pkce::new();
        assert_eq!(fresh.verifier.expose().len(), 43);
        assert!(fresh.verifier.expose().bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(fresh.verifier.expose(), Pkce::new().verifier.expose());
        assert!(!format!("{fresh:?}").contains(fresh.verifier.expose()), "the verifier is redacted");
    }

    #[test]
    fn the_authorization_url_carries_every_parameter() {
        let pkce = Pkce::from_verifier("v".repeat(43));
        let url = authorization_url(
            "https://as.example/authorize?x=1",
            "client",
            "http://127.0.0.1:8/cb",
            &pkce,
            "st",
            "https://mcp.example/mcp",
            &["a".into(), "b".into()],
        )
        .unwrap();
        let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("x"), Some("1"));
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("code_challenge"), Some(pkce.challenge.as_str()));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("resource"), Some("https://mcp.example/mcp"));
        assert_eq!(get("scope"), Some("a b"));
        let bare = authorization_url("https://as/a", "c", "r", &pkce, "s", "res", &[]).unwrap();
        assert!(!bare.query().unwrap().contains("scope"), "no scopes, no scope parameter");
    }

    fn redirect(query: &str) -> AuthorizationResponse {
        AuthorizationResponse::from_redirect(&Url::parse(&format!("http://127.0.0.1/cb?{query}")).unwrap())
    }

    #[test]
    fn iss_is_checked_by_the_rfc_9207_table() {
        let issuer = "http://localhost:9";
        let ok = |q: &str, advertised| check_response(redirect(q), "s", issuer, advertised);
        assert_eq!(ok("code=c&state=s&iss=http%3A%2F%2Flocalhost%3A9", true).unwrap().expose(), "c");
        assert!(matches!(ok("code=c&state=s", true), Err(AuthError::IssMissing)));
        assert!(matches!(ok("code=c&state=s&iss=https%3A%2F%2Fevil", true), Err(AuthError::IssMismatch { .. })));
        assert!(
            matches!(ok("code=c&state=s&iss=http%3A%2F%2Flocalhost%3A9%2F", true), Err(AuthError::IssMismatch { .. })),
            "no normalization"
        );
        assert!(matches!(ok("code=c&state=s&iss=https%3A%2F%2Fevil", false), Err(AuthError::IssMismatch { .. })));
        assert_eq!(ok("code=c&state=s", false).unwrap().expose(), "c");
        assert!(matches!(ok("code=c&state=t", false), Err(AuthError::StateMismatch)));
        assert!(matches!(ok("error=access_denied&state=s", false), Err(AuthError::Authorization(_))));
        assert!(
            matches!(
                ok("error=access_denied&state=s&iss=https%3A%2F%2Fevil", false),
                Err(AuthError::IssMismatch { .. })
            ),
            "an error response from the wrong issuer is not acted on"
        );
    }
}
