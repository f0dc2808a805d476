//! Token requests ([OAuth 2.1 §3.2](https://datatracker.ietf.org/doc/html/draft-ietf-oauth-v2-1-13#section-3.2)):
//! the authorization code exchange (with the PKCE verifier), the refresh (the new refresh token
//! kept, or the old one when the server sends none), and for machine clients the client
//! credentials grant or the JWT-bearer grant of a workload identity
//! ([RFC 7523 §2.1](https://www.rfc-editor.org/rfc/rfc7523#section-2.1)); every one carries the RFC 8707 `resource` and the client's authentication:
//! `none` (`client_id` in the body), `client_secret_basic`, `client_secret_post`, or
//! `private_key_jwt` ([RFC 7523](https://www.rfc-editor.org/rfc/rfc7523): a JWT signed with
//! ring, ES256 or RS256, `aud` the issuer).
//!
//! Expiry is turned into an absolute time (Unix seconds) as the answer arrives.
//!
//! Not here: deciding when to refresh (the caller), storing.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Deserialize;
use url::Url;

use super::authorization::random_token;
use super::discovery::AuthorizationServerMetadata;
use super::dpop::DpopKey;
use super::http::HttpClient;
use super::store::{ClientRegistration, TokenSet};
use super::{unix_now, AuthError, Secret};

/// A private key for `private_key_jwt`: PKCS#8, in PEM or DER.
#[derive(Clone)]
pub struct SigningKey {
    algorithm: JwtAlgorithm,
    pkcs8: Secret,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("algorithm", &self.algorithm).finish_non_exhaustive()
    }
}

/// The JWS algorithms we sign client assertions with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// ECDSA P-256 with SHA-256.
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl JwtAlgorithm {
    fn name(self) -> &'static str {
        match self {
            JwtAlgorithm::Es256 => "ES256",
            JwtAlgorithm::Rs256 => "RS256",
        }
    }
}

impl std::str::FromStr for JwtAlgorithm {
    type Err = AuthError;
    fn from_str(s: &str) -> Result<Self, AuthError> {
        match s {
            "ES256" => Ok(JwtAlgorithm::Es256),
            "RS256" => Ok(JwtAlgorithm::Rs256),
            other => Err(AuthError::Config(format!("unsupported signing algorithm {other:?} (ES256, RS256)"))),
        }
    }
}

impl SigningKey {
    /// A key from a PKCS#8 PEM text (`-----BEGIN PRIVATE KEY-----`), checked now.
    ///
    /// # Errors
    /// [`AuthError::Config`] when the text is not a PKCS#8 key of `algorithm`.
    pub fn from_pkcs8_pem(algorithm: JwtAlgorithm, pem: &str) -> Result<SigningKey, AuthError> {
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).map(str::trim).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|e| AuthError::Config(format!("the private key is not base64 pem: {e}")))?;
        let key = SigningKey { algorithm, pkcs8: Secret(URL_SAFE_NO_PAD.encode(&der)) };
        key.sign(b"check")?;
        Ok(key)
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, AuthError> {
        let der = URL_SAFE_NO_PAD.decode(self.pkcs8.expose()).map_err(|_| AuthError::Config("bad key".into()))?;
        let rng = ring::rand::SystemRandom::new();
        let bad = |e: &dyn std::fmt::Display| AuthError::Config(format!("the private key is unusable: {e}"));
        match self.algorithm {
            JwtAlgorithm::Es256 => {
                let pair = ring::signature::EcdsaKeyPair::from_pkcs8(
                    &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    &der,
                    &rng,
                )
                .map_err(|e| bad(&e))?;
                Ok(pair.sign(&rng, message).map_err(|e| bad(&e))?.as_ref().to_vec())
            }
            JwtAlgorithm::Rs256 => {
                let pair = ring::signature::RsaKeyPair::from_pkcs8(&der).map_err(|e| bad(&e))?;
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(&ring::signature::RSA_PKCS1_SHA256, &rng, message, &mut signature).map_err(|e| bad(&e))?;
                Ok(signature)
            }
        }
    }

    /// A client assertion (RFC 7523 §3): `iss` = `sub` = the client, `aud` the issuer, valid
    /// for five minutes from `now`, with a fresh `jti`.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str, now: u64) -> Result<String, AuthError> {
        let header = serde_json::json!({"alg": self.algorithm.name(), "typ": "JWT"});
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": random_token(),
        });
        let signing_input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature = self.sign(signing_input.as_bytes())?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// `grant_type` of the RFC 7523 JWT-bearer grant.
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// What a token request is for.
pub(crate) enum Grant<'a> {
    AuthorizationCode {
        code: &'a Secret,
        verifier: &'a Secret,
        redirect_uri: &'a str,
    },
    Refresh {
        refresh_token: &'a Secret,
    },
    ClientCredentials,
    /// RFC 7523 §2.1: a JWT from another issuer (a workload identity) as the grant.
    JwtBearer {
        assertion: &'a Secret,
    },
}

/// Where and as whom token requests go: `server`'s token endpoint, as `client`, with a DPoP
/// proof when `dpop` is given (and again with the server's nonce if it answers
/// `use_dpop_nonce`, RFC 9449 §8).
///
/// # Errors
/// [`AuthError::TokenEndpoint`] for an error answer, [`AuthError::Http`] when the server cannot
/// be reached, [`AuthError::Malformed`] for an answer that is not a token.
#[derive(Clone, Copy)]
pub(crate) struct TokenEndpoint<'a> {
    pub(crate) http: &'a HttpClient,
    pub(crate) server: &'a AuthorizationServerMetadata,
    pub(crate) client: &'a ClientRegistration,
    /// For `private_key_jwt`.
    pub(crate) signing_key: Option<&'a SigningKey>,
    /// For a DPoP-bound token.
    pub(crate) dpop: Option<&'a DpopKey>,
}

impl TokenEndpoint<'_> {
    /// One token request (see [`TokenEndpoint`]).
    pub(crate) async fn request(
        self,
        grant: Grant<'_>,
        resource: &str,
        scopes: &[String],
    ) -> Result<TokenSet, AuthError> {
        let TokenEndpoint { http, server, client, signing_key, dpop } = self;
        let endpoint =
            Url::parse(&server.token_endpoint).map_err(|e| AuthError::Discovery(format!("token endpoint: {e}")))?;
        let scope = scopes.join(" ");
        let mut form: Vec<(&str, &str)> = Vec::new();
        let previous_refresh = match &grant {
            Grant::AuthorizationCode { code, verifier, redirect_uri } => {
                form.extend([
                    ("grant_type", "authorization_code"),
                    ("code", code.expose()),
                    ("code_verifier", verifier.expose()),
                    ("redirect_uri", redirect_uri),
                ]);
                None
            }
            Grant::Refresh { refresh_token } => {
                form.extend([("grant_type", "refresh_token"), ("refresh_token", refresh_token.expose())]);
                Some((*refresh_token).clone())
            }
            Grant::ClientCredentials => {
                form.push(("grant_type", "client_credentials"));
                None
            }
            Grant::JwtBearer { assertion } => {
                form.extend([("grant_type", JWT_BEARER_GRANT), ("assertion", assertion.expose())]);
                None
            }
        };
        form.push(("resource", resource));
        if !scope.is_empty() && !matches!(grant, Grant::Refresh { .. }) {
            form.push(("scope", &scope));
        }
        let assertion;
        let mut basic = None;
        match client.token_endpoint_auth_method.as_str() {
            "client_secret_basic" => {
                let secret = client.client_secret.as_ref().ok_or_else(|| no_secret(client))?;
                basic = Some((client.client_id.as_str(), secret));
            }
            "client_secret_post" => {
                let secret = client.client_secret.as_ref().ok_or_else(|| no_secret(client))?;
                form.extend([("client_id", client.client_id.as_str()), ("client_secret", secret.expose())]);
            }
            "private_key_jwt" => {
                let key = signing_key.ok_or_else(|| AuthError::Config("private_key_jwt needs a signing key".into()))?;
                assertion = key.assertion(&client.client_id, &server.issuer, unix_now())?;
                form.extend([
                    ("client_id", client.client_id.as_str()),
                    ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                    ("client_assertion", &assertion),
                ]);
            }
            _ => form.push(("client_id", client.client_id.as_str())),
        }
        let proof = |nonce: Option<&str>| dpop.map(|key| key.proof("POST", endpoint.as_str(), nonce, None)).transpose();
        let mut answer = http.post_form(&endpoint, &form, basic, proof(None)?.as_deref()).await?;
        if let (Some(nonce), false) = (answer.dpop_nonce.clone(), answer.status.is_success()) {
            let refused: Option<ErrorAnswer> = serde_json::from_slice(&answer.body).ok();
            if dpop.is_some() && refused.is_some_and(|r| r.error == "use_dpop_nonce") {
                answer = http.post_form(&endpoint, &form, basic, proof(Some(&nonce))?.as_deref()).await?;
            }
        }
        if !answer.status.is_success() {
            let refused: Option<ErrorAnswer> = serde_json::from_slice(&answer.body).ok();
            return Err(AuthError::TokenEndpoint {
                status: answer.status.as_u16(),
                error: refused.as_ref().map_or_else(String::new, |r| r.error.clone()),
                description: refused.and_then(|r| r.error_description).unwrap_or_default(),
            });
        }
        let token: TokenAnswer = answer.json("token answer")?;
        let dpop_bound = token.token_type.as_deref().is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
        if let Some(kind) = token.token_type.as_deref().filter(|t| !t.eq_ignore_ascii_case("bearer") && !dpop_bound) {
            return Err(AuthError::Malformed(format!("token type {kind:?} is not supported (bearer, dpop)")));
        }
        if dpop_bound && dpop.is_none() {
            return Err(AuthError::Malformed("a dpop-bound token for a request without a proof".into()));
        }
        let expires_in = match token.expires_in {
            Some(serde_json::Value::Number(n)) => n.as_u64(),
            Some(serde_json::Value::String(s)) => s.parse().ok(),
            _ => None,
        };
        let granted: Option<Vec<String>> = token.scope.map(|s| s.split_whitespace().map(str::to_owned).collect());
        Ok(TokenSet {
            access_token: Secret::new(token.access_token),
            refresh_token: token.refresh_token.map(Secret::new).or(previous_refresh),
            expires_at: expires_in.map(|secs| unix_now().saturating_add(secs)),
            scopes: granted.filter(|g| !g.is_empty()).unwrap_or_else(|| scopes.to_vec()),
            token_type: dpop_bound.then(|| "DPoP".to_owned()),
            dpop_key: dpop.filter(|_| dpop_bound).map(|key| key.pkcs8().clone()),
        })
    }
}

/// What an enterprise-managed client holds (SEP-990): the user's ID token from the enterprise
/// identity provider, which it exchanges there for an identity assertion grant (ID-JAG, by an
/// [RFC 8693](https://www.rfc-editor.org/rfc/rfc8693) token exchange) and presents to the MCP
/// server's authorization server as a JWT-bearer grant.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EnterpriseGrant {
    /// The identity provider's token endpoint.
    pub idp_token_endpoint: String,
    /// Our `client_id` at the identity provider, sent with the exchange when known.
    pub idp_client_id: Option<String>,
    /// The user's ID token (the exchange's `subject_token`).
    pub id_token: Secret,
    /// Our client secret at the MCP server's authorization server, if confidential there.
    pub client_secret: Option<Secret>,
}

impl EnterpriseGrant {
    /// A grant from `id_token`, exchanged at `idp_token_endpoint`.
    pub fn new(idp_token_endpoint: impl Into<String>, id_token: impl Into<String>) -> EnterpriseGrant {
        EnterpriseGrant {
            idp_token_endpoint: idp_token_endpoint.into(),
            idp_client_id: None,
            id_token: Secret::new(id_token),
            client_secret: None,
        }
    }

    /// Sets our `client_id` at the identity provider.
    pub fn idp_client_id(mut self, id: impl Into<String>) -> EnterpriseGrant {
        self.idp_client_id = Some(id.into());
        self
    }

    /// Sets our client secret at the authorization server.
    pub fn client_secret(mut self, secret: impl Into<String>) -> EnterpriseGrant {
        self.client_secret = Some(Secret::new(secret));
        self
    }
}

#[derive(Deserialize)]
struct ExchangeAnswer {
    access_token: String,
    #[serde(default)]
    issued_token_type: Option<String>,
}

/// `requested_token_type` / `issued_token_type` of an identity assertion grant.
const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// The RFC 8693 token exchange at the identity provider: the ID token for an ID-JAG meant for
/// `audience` (the authorization server's issuer) and `resource`.
///
/// # Errors
/// [`AuthError::TokenEndpoint`] when the identity provider refuses, [`AuthError::Malformed`]
/// when it issues something else than an ID-JAG.
pub(crate) async fn exchange_for_id_jag(
    http: &HttpClient,
    grant: &EnterpriseGrant,
    audience: &str,
    resource: &str,
    scopes: &[String],
) -> Result<Secret, AuthError> {
    let endpoint = Url::parse(&grant.idp_token_endpoint)
        .map_err(|e| AuthError::Config(format!("identity provider token endpoint: {e}")))?;
    let scope = scopes.join(" ");
    let mut form = vec![
        ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
        ("requested_token_type", ID_JAG_TOKEN_TYPE),
        ("subject_token", grant.id_token.expose()),
        ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"),
        ("audience", audience),
        ("resource", resource),
    ];
    if let Some(id) = &grant.idp_client_id {
        form.push(("client_id", id));
    }
    if !scope.is_empty() {
        form.push(("scope", &scope));
    }
    let answer = http.post_form(&endpoint, &form, None, None).await?;
    if !answer.status.is_success() {
        let refused: Option<ErrorAnswer> = serde_json::from_slice(&answer.body).ok();
        return Err(AuthError::TokenEndpoint {
            status: answer.status.as_u16(),
            error: refused.as_ref().map_or_else(String::new, |r| r.error.clone()),
            description: refused.and_then(|r| r.error_description).unwrap_or_default(),
        });
    }
    let exchanged: ExchangeAnswer = answer.json("token exchange answer")?;
    if exchanged.issued_token_type.as_deref().is_some_and(|t| t != ID_JAG_TOKEN_TYPE) {
        return Err(AuthError::Malformed("the identity provider issued another token type than an id-jag".into()));
    }
    Ok(Secret::new(exchanged.access_token))
}

fn no_secret(client: &ClientRegistration) -> AuthError {
    AuthError::Config(format!("{} needs a client secret", client.token_endpoint_auth_method))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh P-256 key as PKCS#8 PEM (v1 with the public key, as WebCrypto and `openssl
    /// genpkey` write it), and its DER.
    fn p256_pem() -> (String, Vec<u8>) {
        let rng = ring::rand::SystemRandom::new();
        let der =
            ring::signature::EcdsaKeyPair::generate_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                .unwrap()
                .as_ref()
                .to_vec();
        let body = base64::engine::general_purpose::STANDARD.encode(&der);
        let lines: Vec<&str> = body.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect();
        (format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", lines.join("\n")), der)
    }

    #[test]
    fn client_assertions_are_es256_jwts_that_verify() {
        let (pem, der) = p256_pem();
        let key = SigningKey::from_pkcs8_pem(JwtAlgorithm::Es256, &pem).unwrap();
        assert!(!format!("{key:?}").contains(&pem[28..60]), "the key is not shown");
        let jwt = key.assertion("client-1", "https://as.example", 1_700_000_000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header, serde_json::json!({"alg": "ES256", "typ": "JWT"}));
        let claims: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(claims["exp"], 1_700_000_300);
        // Verify with the public key inside the PKCS#8 document.
        let rng = ring::rand::SystemRandom::new();
        let pair =
            ring::signature::EcdsaKeyPair::from_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                .unwrap();
        use ring::signature::KeyPair as _;
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            pair.public_key().as_ref(),
        );
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        public.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).unwrap();
    }

    #[test]
    fn a_key_that_is_not_pkcs8_is_refused_at_once() {
        assert!(matches!(
            SigningKey::from_pkcs8_pem(
                JwtAlgorithm::Es256,
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"
            ),
            Err(AuthError::Config(_))
        ));
        assert!(matches!(SigningKey::from_pkcs8_pem(JwtAlgorithm::Rs256, &p256_pem().0), Err(AuthError::Config(_))));
    }
}
