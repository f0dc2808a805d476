//! The OAuth 2.1 client of an MCP client over HTTP
//! ([MCP "Authorization"](https://modelcontextprotocol.io/specification/2026-07-28/basic/authorization)):
//! [`OAuthClient`] is an [`Authorizer`] for
//! [`HttpClientTransport`](crate::transport::sse_http::HttpClientTransport), so the transport
//! asks it for the `Authorization` header of every request and tells it of 401 and 403.
//!
//! - On a 401: discovery ([`discovery`]: the protected resource metadata from the challenge's
//!   `resource_metadata` or the well-known paths, the resource checked against the server; the
//!   authorization server metadata, its issuer checked), then — if we hold a refresh token from
//!   that same issuer — a refresh, else a new flow. The key of credentials is issuer + resource,
//!   so a server that moved to another authorization server gets a new registration and flow,
//!   never the old tokens or client.
//! - A flow: a client identity ([`registration`]: pre-registered, Client ID Metadata Document,
//!   Dynamic Client Registration), then the authorization code grant with PKCE S256 (refused
//!   when the server does not advertise S256), `state`, the RFC 8707 `resource` and the RFC 9207
//!   `iss` check ([`authorization`]), the host's [`AuthorizationHandler`] bringing the user
//!   there; or, for a machine client ([`OAuthConfig::client_credentials`]), the client
//!   credentials grant with a secret or `private_key_jwt`, the JWT-bearer grant of a workload
//!   identity, or enterprise-managed authorization (an ID token exchanged at the identity
//!   provider for an ID-JAG, then the JWT-bearer grant) ([`token`]).
//! - Scopes: the challenge's `scope`, else the resource metadata's `scopes_supported`, else
//!   none; `offline_access` added when the authorization server lists it (and
//!   [`OAuthConfig::request_offline_access`]). A 403 `insufficient_scope` re-authorizes with the
//!   union of the scopes held and those challenged, at most [`OAuthConfig::max_step_ups`] times
//!   per challenged scope set.
//! - Tokens: refreshed before they expire ([`OAuthConfig::refresh_skew`]) and after a 401, one
//!   refresh or flow at a time per [`OAuthClient`] (the others wait and use its result); kept in
//!   a [`TokenStore`] with absolute expiry, so a restarted process refreshes as it should.
//!
//! No token, secret, code or verifier is ever logged; `Debug` of anything holding one shows
//! `<redacted>` ([`Secret`]).
//!
//! The host brings the user to the authorization server through an [`AuthorizationHandler`]:
//! [`LoopbackRedirect`] (a redirect listener on 127.0.0.1 and a callback that opens the URL) for
//! a command line or desktop host, [`RedirectFollower`] for servers that redirect at once.
//!
//! - DPoP ([RFC 9449](https://www.rfc-editor.org/rfc/rfc9449)): where the authorization server
//!   takes ES256 proofs, every token request carries one, a DPoP-bound token goes out as
//!   `Authorization: DPoP` with a fresh proof per request, and a `use_dpop_nonce` answer (from
//!   the token endpoint or the MCP server) is met by the same request again with the nonce.
//!
//!   The key is kept with the tokens it binds, so a restarted process goes on with them.
//!
//! Not here: opening a browser (the host's callback), the resource server side (`server/`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use url::Url;

pub use crate::transport::sse_http::authorizer::AuthFuture;
use crate::transport::sse_http::authorizer::{Authorizer, Credentials, Denial, Verdict};

pub mod authorization;
pub mod discovery;
mod dpop;
mod http;
#[cfg(feature = "keyring")]
pub mod keyring;
pub mod loopback;
pub mod registration;
pub mod store;
pub mod token;

pub use authorization::{AuthorizationHandler, AuthorizationRequest, AuthorizationResponse, Pkce, RedirectFollower};
pub use discovery::{AuthorizationServerMetadata, BearerChallenge, Discovered, ResourceMetadata};
#[cfg(feature = "keyring")]
pub use keyring::KeyringTokenStore;
pub use loopback::LoopbackRedirect;
pub use registration::{metadata_document_json, PreRegistered};
pub use store::{
    config_dir, credentials_store, AutoTokenStore, ClientRegistration, CredentialKey, CredentialsStoreMode,
    FileTokenStore, MemoryTokenStore, StoredCredentials, TokenSet, TokenStore,
};
pub use token::{EnterpriseGrant, JwtAlgorithm, SigningKey};

/// A string that must not be seen: a token, a secret, a code, a verifier. `Debug` shows
/// `<redacted>`; serde reads and writes it as the plain string (for the [`FileTokenStore`]).
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Why an authorization step failed. No variant carries a secret.
#[derive(Debug)]
#[non_exhaustive]
pub enum AuthError {
    /// An authorization or resource server could not be reached, or the exchange failed.
    Http(String),
    /// An answer that is not what it should be (JSON that does not parse …).
    Malformed(String),
    /// Metadata missing or unusable.
    Discovery(String),
    /// The protected resource metadata names another resource than the server we talk to.
    ResourceMismatch {
        /// The server URL.
        expected: String,
        /// The metadata's `resource`.
        found: String,
    },
    /// The authorization server metadata's `issuer` is not the issuer it was looked up for.
    IssuerMismatch {
        /// The issuer from the protected resource metadata.
        expected: String,
        /// The metadata's `issuer`.
        found: String,
    },
    /// The authorization server does not advertise PKCE S256.
    PkceUnsupported,
    /// No client identity could be had (no pre-registration, metadata document or DCR), or
    /// registration was refused.
    Registration(String),
    /// The authorization code flow needs an [`AuthorizationHandler`] and there is none.
    NoAuthorizationHandler,
    /// The redirect's `state` is not the request's.
    StateMismatch,
    /// The redirect's `iss` is not the recorded issuer (RFC 9207).
    IssMismatch {
        /// The recorded issuer.
        expected: String,
        /// The redirect's `iss`.
        found: String,
    },
    /// The server advertises `iss` in authorization responses and the redirect has none.
    IssMissing,
    /// The authorization request failed (an error redirect, no code, the handler's failure).
    Authorization(String),
    /// The token endpoint refused.
    TokenEndpoint {
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code.
        error: String,
        /// `error_description`.
        description: String,
    },
    /// The [`TokenStore`] failed.
    Store(std::io::Error),
    /// The configuration cannot work (a bad URL, a key that does not parse …).
    Config(String),
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::Http(e) => write!(f, "oauth http exchange failed: {e}"),
            AuthError::Malformed(e) => write!(f, "malformed oauth answer: {e}"),
            AuthError::Discovery(e) => write!(f, "authorization discovery failed: {e}"),
            AuthError::ResourceMismatch { expected, found } => {
                write!(f, "the protected resource metadata is for {found}, not {expected}")
            }
            AuthError::IssuerMismatch { expected, found } => {
                write!(f, "the authorization server metadata names issuer {found}, not {expected}")
            }
            AuthError::PkceUnsupported => f.write_str("the authorization server does not advertise pkce s256"),
            AuthError::Registration(e) => write!(f, "client registration failed: {e}"),
            AuthError::NoAuthorizationHandler => f.write_str("authorization needs a user and no handler was given"),
            AuthError::StateMismatch => f.write_str("the authorization response's state is not the request's"),
            AuthError::IssMismatch { expected, found } => {
                write!(f, "the authorization response comes from issuer {found}, not {expected}")
            }
            AuthError::IssMissing => f.write_str("the authorization response lacks the iss the server advertises"),
            AuthError::Authorization(e) => write!(f, "authorization failed: {e}"),
            AuthError::TokenEndpoint { status, error, description } => {
                write!(f, "the token endpoint refused ({status}): {error}")?;
                if !description.is_empty() {
                    write!(f, ": {description}")?;
                }
                Ok(())
            }
            AuthError::Store(e) => write!(f, "token store failed: {e}"),
            AuthError::Config(e) => write!(f, "oauth configuration: {e}"),
        }
    }
}

impl std::error::Error for AuthError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AuthError::Store(e) => Some(e),
            _ => None,
        }
    }
}

/// Seconds since the Unix epoch, now.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A machine client's credential for the client credentials grant.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum MachineCredential {
    /// A client secret (`client_secret_basic` or `client_secret_post`, as the server allows).
    Secret(Secret),
    /// A private key (`private_key_jwt`).
    PrivateKey(SigningKey),
    /// A JWT from the workload's identity provider, presented as the RFC 7523 JWT-bearer
    /// grant (workload identity federation); the client authenticates with `none`. A refused
    /// assertion is not retried with another grant.
    Assertion(Secret),
    /// Enterprise-managed authorization (SEP-990): the user's ID token, exchanged at the
    /// identity provider for an ID-JAG, presented as a JWT-bearer grant.
    Enterprise(EnterpriseGrant),
}

/// How an [`OAuthClient`] behaves. Every field has a documented default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// Our name in registrations: `mcpwire`.
    pub client_name: String,
    /// Where the authorization server sends the user back: `http://127.0.0.1:8976/callback`.
    pub redirect_uri: String,
    /// `application_type` in Dynamic Client Registration: `native`.
    pub application_type: String,
    /// The URL of our Client ID Metadata Document, used as `client_id` where the server accepts
    /// such documents: none.
    pub client_metadata_url: Option<String>,
    /// Pre-registered credentials, tried first: none.
    pub pre_registered: Option<PreRegistered>,
    /// The scopes to ask for, instead of the challenge's or the resource metadata's: none (a
    /// step-up still adds what a 403 challenges).
    pub scopes: Option<Vec<String>>,
    /// A machine client (the client credentials grant, no user): none, i.e. the authorization
    /// code grant.
    pub machine: Option<(String, MachineCredential)>,
    /// Add `offline_access` to the scopes when the authorization server lists it: on.
    pub request_offline_access: bool,
    /// Re-authorizations after 403 `insufficient_scope` per challenged scope set: 2.
    pub max_step_ups: u32,
    /// Refresh when the access token expires within this: 60 s.
    pub refresh_skew: Duration,
    /// Time for each exchange with an authorization or resource server: 30 s.
    pub timeout: Duration,
    /// Ask for DPoP-bound tokens (RFC 9449, ES256 proofs) where the authorization server
    /// advertises ES256 in `dpop_signing_alg_values_supported`: on.
    pub use_dpop: bool,
    #[cfg(feature = "tls")]
    /// Root certificates trusted on top of the webpki roots.
    pub extra_roots: Vec<rustls_pki_types::CertificateDer<'static>>,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            client_name: "mcpwire".into(),
            redirect_uri: "http://127.0.0.1:8976/callback".into(),
            application_type: "native".into(),
            client_metadata_url: None,
            pre_registered: None,
            scopes: None,
            machine: None,
            request_offline_access: true,
            max_step_ups: 2,
            refresh_skew: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
            use_dpop: true,
            #[cfg(feature = "tls")]
            extra_roots: Vec::new(),
        }
    }
}

impl OAuthConfig {
    /// Sets the redirect URI.
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = uri.into();
        self
    }

    /// Sets our name.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Uses `url` as our Client ID Metadata Document where the server supports them.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Uses pre-registered credentials.
    pub fn pre_registered(mut self, credentials: PreRegistered) -> Self {
        self.pre_registered = Some(credentials);
        self
    }

    /// Asks for `scopes` instead of the challenge's or the resource metadata's.
    pub fn scopes(mut self, scopes: Vec<String>) -> Self {
        self.scopes = Some(scopes);
        self
    }

    /// Makes this a machine client: the client credentials grant as `client_id`.
    pub fn client_credentials(mut self, client_id: impl Into<String>, credential: MachineCredential) -> Self {
        self.machine = Some((client_id.into(), credential));
        self
    }

    /// Whether to ask for `offline_access` where supported.
    pub fn request_offline_access(mut self, on: bool) -> Self {
        self.request_offline_access = on;
        self
    }

    /// Whether to ask for DPoP-bound tokens where supported.
    pub fn use_dpop(mut self, on: bool) -> Self {
        self.use_dpop = on;
        self
    }

    /// Sets the step-up limit.
    pub fn max_step_ups(mut self, limit: u32) -> Self {
        self.max_step_ups = limit;
        self
    }
}

/// The credentials in use.
struct Current {
    key: CredentialKey,
    tokens: TokenSet,
    /// The authorization server's metadata, once discovery ran in this process.
    server: Option<AuthorizationServerMetadata>,
}

impl Current {
    fn header(&self) -> String {
        let scheme = if self.tokens.is_dpop() { "DPoP" } else { "Bearer" };
        format!("{scheme} {}", self.tokens.access_token.expose())
    }
}

#[derive(Default)]
struct FlowState {
    /// Whether the store has been looked in for this server's credentials.
    loaded: bool,
    /// Step-ups done, by challenged scope set (sorted).
    step_ups: HashMap<Vec<String>, u32>,
}

/// The OAuth client for one MCP server. See the module docs. Cheap to share (`Arc`); give it
/// to the transport with [`HttpClientConfig::authorizer`](crate::transport::sse_http::HttpClientConfig::authorizer).
///
/// A flow started by a 401 runs inside the request that met it, so within that request's
/// timeout; a host whose user needs minutes in a browser runs [`OAuthClient::login`] first.
pub struct OAuthClient {
    server: Url,
    config: OAuthConfig,
    store: Arc<dyn TokenStore>,
    handler: Option<Arc<dyn AuthorizationHandler>>,
    http: http::HttpClient,
    current: Mutex<Option<Current>>,
    /// Held by whoever refreshes or runs a flow: one at a time.
    flow: tokio::sync::Mutex<FlowState>,
    /// The key of our DPoP proofs, and the MCP server's last nonce for them.
    dpop_key: Mutex<Arc<dpop::DpopKey>>,
    resource_nonce: Mutex<Option<String>>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient").field("server", &self.server.as_str()).finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// A client for the MCP server at `server_url`, keeping credentials in `store`, bringing
    /// the user to the authorization server through `handler` (none for a machine client).
    ///
    /// # Errors
    /// [`AuthError::Config`] for a URL that is not http(s), or a TLS configuration that cannot
    /// be built.
    pub fn new(
        server_url: &str,
        config: OAuthConfig,
        store: Arc<dyn TokenStore>,
        handler: Option<Arc<dyn AuthorizationHandler>>,
    ) -> Result<OAuthClient, AuthError> {
        let server = Url::parse(server_url).map_err(|e| AuthError::Config(format!("server url: {e}")))?;
        if !matches!(server.scheme(), "http" | "https") {
            return Err(AuthError::Config(format!("server url {server} is not http(s)")));
        }
        let http = http::HttpClient::new(
            config.timeout,
            #[cfg(feature = "tls")]
            &config.extra_roots,
        )?;
        Ok(OAuthClient {
            server,
            config,
            store,
            handler,
            http,
            current: Mutex::new(None),
            flow: tokio::sync::Mutex::new(FlowState::default()),
            dpop_key: Mutex::new(Arc::new(dpop::DpopKey::generate()?)),
            resource_nonce: Mutex::new(None),
        })
    }

    /// Runs discovery and a whole flow now, without waiting for a request's 401 (a `login`
    /// command). The server is asked first (a GET without credentials) for the challenge its
    /// 401 carries; the scopes are the challenge's, else the resource metadata's
    /// `scopes_supported`.
    ///
    /// # Errors
    /// Any [`AuthError`] of discovery, registration, authorization or the token request.
    pub async fn login(&self) -> Result<CredentialKey, AuthError> {
        let mut flow = self.flow.lock().await;
        flow.loaded = true;
        let challenge = match self.http.get(&self.server).await {
            Ok(answer) if answer.status == hyper::StatusCode::UNAUTHORIZED => {
                discovery::bearer_challenge(&answer.challenges)
            }
            _ => None,
        };
        let discovered = discovery::discover(&self.http, &self.server, challenge.as_ref()).await?;
        let scopes = self.first_scopes(challenge.as_ref(), &discovered);
        self.run_flow(&discovered, scopes).await
    }

    /// The scopes of a first flow: configured, else the challenge's, else the resource
    /// metadata's `scopes_supported`, else none.
    fn first_scopes(&self, challenge: Option<&BearerChallenge>, discovered: &Discovered) -> Vec<String> {
        self.config
            .scopes
            .clone()
            .or_else(|| challenge.and_then(|c| c.scope.clone()))
            .or_else(|| discovered.resource_metadata.as_ref().and_then(|m| m.scopes_supported.clone()))
            .unwrap_or_default()
    }

    /// Forgets every stored credential for this server (a `logout` command); returns how many
    /// entries went.
    ///
    /// # Errors
    /// [`AuthError::Store`].
    pub fn logout(&self) -> Result<usize, AuthError> {
        *self.current.lock().expect("oauth lock") = None;
        let mut removed = 0;
        for key in self.store.keys().map_err(AuthError::Store)? {
            if discovery::resource_covers(&key.resource, &self.server) {
                self.store.remove(&key).map_err(AuthError::Store)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// The stored tokens for this server (the first found), to show a login state: expiry and
    /// whether they can be refreshed.
    ///
    /// # Errors
    /// [`AuthError::Store`].
    pub fn stored_tokens(&self) -> Result<Option<(CredentialKey, TokenSet)>, AuthError> {
        for key in self.store.keys().map_err(AuthError::Store)? {
            if !discovery::resource_covers(&key.resource, &self.server) {
                continue;
            }
            if let Some(tokens) = self.store.load(&key).map_err(AuthError::Store)?.and_then(|c| c.tokens) {
                return Ok(Some((key, tokens)));
            }
        }
        Ok(None)
    }

    fn current_header(&self) -> Option<String> {
        self.current.lock().expect("oauth lock").as_ref().map(Current::header)
    }

    /// The credentials of a request, `method` to `url`: the token (refreshed first when about
    /// to expire) and, for a DPoP-bound one, the request's proof.
    async fn credentials(&self, method: &str, url: &str) -> Option<Credentials> {
        let (authorization, tokens) = {
            let authorization = self.header().await?;
            let current = self.current.lock().expect("oauth lock");
            (authorization, current.as_ref()?.tokens.clone())
        };
        if !tokens.is_dpop() {
            return Some(Credentials::new(authorization, None));
        }
        let nonce = self.resource_nonce.lock().expect("oauth lock").clone();
        // A proof that cannot be made leaves the token unusable: the server's 401 starts over.
        let proof = self
            .dpop_key_of(&tokens)
            .and_then(|key| key.proof(method, url, nonce.as_deref(), Some(tokens.access_token.expose())))
            .ok();
        Some(Credentials::new(authorization, proof))
    }

    /// Our DPoP key, when `server` takes DPoP proofs and we use them.
    fn dpop_for(&self, server: &AuthorizationServerMetadata) -> Option<Arc<dpop::DpopKey>> {
        (self.config.use_dpop && dpop::DpopKey::accepted_by(server))
            .then(|| self.dpop_key.lock().expect("oauth lock").clone())
    }

    /// The key `tokens` are bound to: ours, or the one kept with them (a previous process's),
    /// which becomes ours.
    fn dpop_key_of(&self, tokens: &TokenSet) -> Result<Arc<dpop::DpopKey>, AuthError> {
        let mut ours = self.dpop_key.lock().expect("oauth lock");
        if let Some(kept) = tokens.dpop_key.as_ref().filter(|kept| *kept != ours.pkcs8()) {
            *ours = Arc::new(dpop::DpopKey::from_pkcs8(kept)?);
        }
        Ok(ours.clone())
    }

    /// The `Authorization` value to send, refreshing first when the token is about to expire.
    async fn header(&self) -> Option<String> {
        let skew = self.config.refresh_skew.as_secs();
        {
            let current = self.current.lock().expect("oauth lock");
            if let Some(c) = current.as_ref() {
                if !(c.tokens.expires_within(unix_now(), skew) && c.tokens.refresh_token.is_some()) {
                    return Some(c.header());
                }
            }
        }
        let mut flow = self.flow.lock().await;
        if !flow.loaded {
            flow.loaded = true;
            if let Ok(Some((key, tokens))) = self.stored_tokens() {
                *self.current.lock().expect("oauth lock") = Some(Current { key, tokens, server: None });
            }
        }
        let due = self
            .current
            .lock()
            .expect("oauth lock")
            .as_ref()
            .is_some_and(|c| c.tokens.expires_within(unix_now(), skew) && c.tokens.refresh_token.is_some());
        if due && self.refresh(None).await.is_err() {
            // The server will refuse the old token and a new flow will start.
            self.drop_refresh_token();
        }
        self.current_header()
    }

    /// Refreshes the current tokens (discovering the authorization server's metadata if this
    /// process has not yet). Fails when there is nothing to refresh, or the server refuses.
    async fn refresh(&self, discovered: Option<&Discovered>) -> Result<(), AuthError> {
        let (key, refresh_token, scopes, known, bound) = {
            let current = self.current.lock().expect("oauth lock");
            let c = current.as_ref().ok_or_else(|| AuthError::Config("no credentials to refresh".into()))?;
            let refresh_token =
                c.tokens.refresh_token.clone().ok_or_else(|| AuthError::Config("no refresh token".into()))?;
            let bound = c.tokens.is_dpop().then(|| c.tokens.clone());
            (c.key.clone(), refresh_token, c.tokens.scopes.clone(), c.server.clone(), bound)
        };
        let server = match (discovered, known) {
            (Some(d), _) => d.authorization_server.clone(),
            (None, Some(server)) => server,
            (None, None) => discovery::discover(&self.http, &self.server, None).await?.authorization_server,
        };
        if server.issuer != key.issuer {
            return Err(AuthError::Discovery("the server's authorization server has changed".into()));
        }
        let stored = self.store.load(&key).map_err(AuthError::Store)?.unwrap_or_default();
        let client = self
            .known_client(&server, &stored)?
            .ok_or_else(|| AuthError::Registration("no client registration kept to refresh with".into()))?;
        let signing_key = self.signing_key();
        let grant = token::Grant::Refresh { refresh_token: &refresh_token };
        let dpop = match &bound {
            Some(tokens) => Some(self.dpop_key_of(tokens)?),
            None => self.dpop_for(&server),
        };
        let endpoint = token::TokenEndpoint {
            http: &self.http,
            server: &server,
            client: &client,
            signing_key,
            dpop: dpop.as_deref(),
        };
        let mut tokens = endpoint.request(grant, &key.resource, &scopes).await?;
        if tokens.scopes.is_empty() {
            tokens.scopes = scopes;
        }
        self.keep(key, stored.client, tokens, server)
    }

    /// Forgets a refresh token the server would not honour, here and in the store.
    fn drop_refresh_token(&self) {
        let mut current = self.current.lock().expect("oauth lock");
        let Some(c) = current.as_mut() else { return };
        c.tokens.refresh_token = None;
        let client = self.store.load(&c.key).ok().flatten().and_then(|s| s.client);
        // Best effort: a store that cannot be written only costs a refresh attempt next run.
        let _ = self.store.save(&c.key, &StoredCredentials { client, tokens: Some(c.tokens.clone()) });
    }

    /// Stores `tokens` (with the DCR registration, if one is to be kept) and makes them current.
    fn keep(
        &self,
        key: CredentialKey,
        client: Option<ClientRegistration>,
        tokens: TokenSet,
        server: AuthorizationServerMetadata,
    ) -> Result<(), AuthError> {
        let stored = StoredCredentials { client, tokens: Some(tokens.clone()) };
        self.store.save(&key, &stored).map_err(AuthError::Store)?;
        *self.current.lock().expect("oauth lock") = Some(Current { key, tokens, server: Some(server) });
        Ok(())
    }

    fn signing_key(&self) -> Option<&SigningKey> {
        match &self.config.machine {
            Some((_, MachineCredential::PrivateKey(key))) => Some(key),
            _ => None,
        }
    }

    /// The client identity at `server` that needs no registration now: a machine client's,
    /// pre-registered credentials, a metadata document, or a stored DCR registration; `None`
    /// when only registering can give one. Pre-registered credentials bound to another issuer
    /// are an error, not a reason to register elsewhere.
    fn known_client(
        &self,
        server: &AuthorizationServerMetadata,
        stored: &StoredCredentials,
    ) -> Result<Option<ClientRegistration>, AuthError> {
        if let Some((client_id, credential)) = &self.config.machine {
            let (secret, method) = match credential {
                MachineCredential::Secret(secret) => {
                    (Some(secret.clone()), registration::auth_method_for(server, true))
                }
                MachineCredential::PrivateKey(_) => (None, "private_key_jwt".to_owned()),
                MachineCredential::Assertion(_) => (None, "none".to_owned()),
                MachineCredential::Enterprise(grant) => {
                    let method = registration::auth_method_for(server, grant.client_secret.is_some());
                    (grant.client_secret.clone(), method)
                }
            };
            return Ok(Some(ClientRegistration {
                client_id: client_id.clone(),
                client_secret: secret,
                token_endpoint_auth_method: method,
            }));
        }
        if let Some(credentials) = &self.config.pre_registered {
            return registration::pre_registered(credentials, server).map(Some);
        }
        if let Some(url) = self.config.client_metadata_url.as_deref() {
            if server.client_id_metadata_document_supported == Some(true) {
                return Ok(Some(registration::metadata_document(url)));
            }
        }
        Ok(stored.client.clone())
    }

    /// A whole flow for `discovered` asking for `scopes`: a client identity, then the grant.
    async fn run_flow(&self, discovered: &Discovered, mut scopes: Vec<String>) -> Result<CredentialKey, AuthError> {
        let server = &discovered.authorization_server;
        let key = CredentialKey::new(server.issuer.clone(), discovered.resource.clone());
        let stored = self.store.load(&key).map_err(AuthError::Store)?.unwrap_or_default();
        let (client, registered) = match self.known_client(server, &stored)? {
            Some(client) => (client, None),
            None => {
                let metadata = registration::ClientMetadata {
                    client_name: &self.config.client_name,
                    redirect_uri: &self.config.redirect_uri,
                    application_type: &self.config.application_type,
                    wants_refresh_tokens: true,
                };
                let client = registration::register(&self.http, server, &metadata).await?;
                (client.clone(), Some(client))
            }
        };
        let kept_client = registered.or(stored.client);
        let tokens = if let Some((_, credential)) = &self.config.machine {
            let id_jag = match credential {
                MachineCredential::Enterprise(grant) => Some(
                    token::exchange_for_id_jag(&self.http, grant, &server.issuer, &discovered.resource, &scopes)
                        .await?,
                ),
                _ => None,
            };
            let grant = match (credential, &id_jag) {
                (MachineCredential::Assertion(assertion), _) | (_, Some(assertion)) => {
                    token::Grant::JwtBearer { assertion }
                }
                _ => token::Grant::ClientCredentials,
            };
            let dpop = self.dpop_for(server);
            let endpoint = token::TokenEndpoint {
                http: &self.http,
                server,
                client: &client,
                signing_key: self.signing_key(),
                dpop: dpop.as_deref(),
            };
            endpoint.request(grant, &discovered.resource, &scopes).await?
        } else {
            if !server.code_challenge_methods_supported.as_ref().is_some_and(|m| m.iter().any(|m| m == "S256")) {
                return Err(AuthError::PkceUnsupported);
            }
            let endpoint = server
                .authorization_endpoint
                .as_deref()
                .ok_or_else(|| AuthError::Discovery("the authorization server has no authorization endpoint".into()))?;
            let handler = self.handler.as_ref().ok_or(AuthError::NoAuthorizationHandler)?;
            if self.config.request_offline_access
                && server.supports_scope("offline_access")
                && !scopes.iter().any(|s| s == "offline_access")
            {
                scopes.push("offline_access".into());
            }
            let pkce = Pkce::new();
            let state = authorization::random_token();
            let url = authorization::authorization_url(
                endpoint,
                &client.client_id,
                &self.config.redirect_uri,
                &pkce,
                &state,
                &discovered.resource,
                &scopes,
            )?;
            let request =
                AuthorizationRequest { url, redirect_uri: self.config.redirect_uri.clone(), state: state.clone() };
            let response = handler.authorize(&request).await?;
            let advertised = server.authorization_response_iss_parameter_supported == Some(true);
            let code = authorization::check_response(response, &state, &server.issuer, advertised)?;
            let grant = token::Grant::AuthorizationCode {
                code: &code,
                verifier: &pkce.verifier,
                redirect_uri: &self.config.redirect_uri,
            };
            let dpop = self.dpop_for(server);
            let endpoint = token::TokenEndpoint {
                http: &self.http,
                server,
                client: &client,
                signing_key: None,
                dpop: dpop.as_deref(),
            };
            endpoint.request(grant, &discovered.resource, &scopes).await?
        };
        self.keep(key.clone(), kept_client, tokens, server.clone())?;
        Ok(key)
    }

    /// What to do about one refusal; see the module docs.
    async fn on_refusal(&self, refusal: Denial<'_>) -> Result<(), AuthError> {
        let challenge = discovery::bearer_challenge(refusal.challenges);
        if let (Some("use_dpop_nonce"), Some(nonce)) =
            (challenge.as_ref().and_then(|c| c.error.as_deref()), refusal.dpop_nonce)
        {
            // RFC 9449 §9: the same request again, its proof carrying the server's nonce.
            let mut held = self.resource_nonce.lock().expect("oauth lock");
            if held.as_deref() == Some(nonce) {
                return Err(AuthError::Authorization("the server refused the dpop nonce it gave".into()));
            }
            *held = Some(nonce.to_owned());
            return Ok(());
        }
        let mut flow = self.flow.lock().await;
        flow.loaded = true;
        let current_header = self.current_header();
        if current_header.is_some() && refusal.sent != current_header.as_deref() {
            // Another request's refusal already brought a new credential.
            return Ok(());
        }
        if refusal.status == 403 {
            let challenge = challenge.unwrap_or_default();
            if challenge.error.as_deref() != Some("insufficient_scope") {
                return Err(AuthError::Authorization("the server forbids this request".into()));
            }
            let mut required = challenge.scope.clone().unwrap_or_default();
            required.sort();
            required.dedup();
            let done = flow.step_ups.entry(required.clone()).or_insert(0);
            if *done >= self.config.max_step_ups {
                return Err(AuthError::Authorization(format!(
                    "the server still wants scope {:?} after {done} step-ups",
                    required.join(" ")
                )));
            }
            *done += 1;
            let mut scopes =
                self.current.lock().expect("oauth lock").as_ref().map(|c| c.tokens.scopes.clone()).unwrap_or_default();
            for scope in required {
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            let discovered = discovery::discover(&self.http, &self.server, Some(&challenge)).await?;
            self.run_flow(&discovered, scopes).await?;
            return Ok(());
        }
        if refusal.retries >= 2 {
            return Err(AuthError::Authorization("the server refused the credentials just obtained".into()));
        }
        let discovered = discovery::discover(&self.http, &self.server, challenge.as_ref()).await?;
        let key = CredentialKey::new(discovered.authorization_server.issuer.clone(), discovered.resource.clone());
        let held_key = self.current.lock().expect("oauth lock").as_ref().map(|c| c.key.clone());
        if held_key.as_ref() != Some(&key) {
            // The credentials sent were another authorization server's (a migration, or an entry
            // of the store picked before discovery): this one's, if kept, are tried first.
            let kept = self.store.load(&key).map_err(AuthError::Store)?.and_then(|c| c.tokens);
            if let Some(tokens) = kept {
                let server = Some(discovered.authorization_server.clone());
                *self.current.lock().expect("oauth lock") = Some(Current { key: key.clone(), tokens, server });
                if self.current_header().as_deref() != refusal.sent {
                    return Ok(());
                }
            }
        }
        let same_issuer = self
            .current
            .lock()
            .expect("oauth lock")
            .as_ref()
            .is_some_and(|c| c.key == key && c.tokens.refresh_token.is_some());
        if same_issuer && refusal.retries == 0 && self.refresh(Some(&discovered)).await.is_ok() {
            return Ok(());
        }
        let scopes = self.first_scopes(challenge.as_ref(), &discovered);
        self.run_flow(&discovered, scopes).await?;
        Ok(())
    }
}

impl Authorizer for OAuthClient {
    fn authorization<'a>(&'a self, method: &'a str, url: &'a str) -> AuthFuture<'a, Option<Credentials>> {
        Box::pin(self.credentials(method, url))
    }

    fn refused<'a>(&'a self, refusal: Denial<'a>) -> AuthFuture<'a, Verdict> {
        Box::pin(async move {
            match self.on_refusal(refusal).await {
                Ok(()) => Verdict::Retry,
                Err(e) => Verdict::GiveUp(e.to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests;
