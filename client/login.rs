//! Stored OAuth logins of configured HTTP servers: what the [connection set](super::connection_set)
//! uses to reach a server behind OAuth without ever bringing a user to a browser itself, and
//! what a host's `login` / `logout` / status commands are made of.
//!
//! [`Logins`] holds a [`TokenStore`] and the command a user runs to log in (for messages:
//! `my-app login`, set by the application). For an HTTP server without credentials of its own (no
//! `bearer_token_env_var`, no `Authorization` header configured), [`Logins::authorizer`] is the
//! transport's [`Authorizer`]: an [`OAuthClient`] without an [`AuthorizationHandler`], so the
//! stored token is sent, refreshed when it is about to expire or refused, and a server that
//! wants a new authorization fails with `needs login: run my-app login NAME` — without a
//! registration or any other exchange with the authorization server when nothing is stored.
//! [`Logins::client`] is the same client with a handler, for the login command itself;
//! [`Logins::status`] tells what a status line shows ([`AuthStatus`]).
//!
//! Not here: the flow (`client::oauth`), the loopback listener (`oauth::loopback`), the config
//! fields (`config::auth`).

use std::sync::Arc;

use super::config::{ServerConfig, TransportConfig};
use super::oauth::{AuthError, AuthorizationHandler, OAuthClient, TokenStore};
use crate::transport::sse_http::authorizer::{AuthFuture, Authorizer, Credentials, Denial, Verdict};

/// Where logins are kept, and how a user makes one.
#[derive(Clone)]
pub struct Logins {
    store: Arc<dyn TokenStore>,
    login_command: String,
    client_name: String,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logins").field("login_command", &self.login_command).finish_non_exhaustive()
    }
}

/// A server's login state, as `check` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthStatus {
    /// Not an OAuth server: stdio, in process, credentials of its own, or an HTTP server that
    /// answered without asking for any.
    NotNeeded,
    /// A stored token (perhaps expired but refreshable: see [`AuthReport::note`]).
    LoggedIn,
    /// The server wants a login and none is stored.
    NeedsLogin,
    /// The stored access token has expired and there is no refresh token.
    Expired,
}

impl AuthStatus {
    /// `not_needed`, `logged_in`, `needs_login` or `expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthStatus::NotNeeded => "not_needed",
            AuthStatus::LoggedIn => "logged_in",
            AuthStatus::NeedsLogin => "needs_login",
            AuthStatus::Expired => "expired",
        }
    }
}

/// A server's [`AuthStatus`] and what more there is to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthReport {
    /// The state.
    pub status: AuthStatus,
    /// E.g. `access token expired; it is refreshed on the next use`.
    pub note: Option<String>,
    /// Where the login is kept ([`TokenStore::location`]: `file PATH`, `keyring (SERVICE)`),
    /// when one is.
    pub location: Option<String>,
}

/// Whether `server` is one whose credentials come from a login: an HTTP server with no
/// `bearer_token_env_var` and no `Authorization` header of its own.
pub fn uses_login(server: &ServerConfig) -> bool {
    match &server.transport {
        TransportConfig::Http { bearer_token_env_var, http_headers, env_http_headers, .. } => {
            bearer_token_env_var.is_none()
                && !http_headers.keys().chain(env_http_headers.keys()).any(|h| h.eq_ignore_ascii_case("authorization"))
        }
        _ => false,
    }
}

impl Logins {
    /// Logins kept in `store`; `login_command` is what messages tell the user to run, followed
    /// by the server's name (e.g. `my-app login`). The client registers itself as `mcpwire`
    /// unless [`Logins::client_name`] says otherwise.
    pub fn new(store: Arc<dyn TokenStore>, login_command: impl Into<String>) -> Logins {
        Logins { store, login_command: login_command.into(), client_name: "mcpwire".to_owned() }
    }

    /// The `client_name` the OAuth client registers with (shown by authorization servers on
    /// their consent pages): the application's name.
    pub fn client_name(mut self, name: impl Into<String>) -> Logins {
        self.client_name = name.into();
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TokenStore> {
        &self.store
    }

    /// `needs login: run LOGIN_COMMAND NAME`.
    pub fn needs_login_message(&self, server: &str) -> String {
        format!("needs login: run {} {server}", self.login_command)
    }

    /// The OAuth client of `server` (an HTTP server), bringing the user to the authorization
    /// server through `handler` (which answers `redirect_uri`), or never (`None`).
    ///
    /// # Errors
    /// A server that is not HTTP, a URL that is not http(s), a client secret variable that is
    /// not set.
    pub fn client(
        &self,
        server: &ServerConfig,
        handler: Option<(Arc<dyn AuthorizationHandler>, String)>,
    ) -> Result<OAuthClient, String> {
        let TransportConfig::Http { url, .. } = &server.transport else {
            return Err(format!("{} is not an HTTP server: there is nothing to log in to", server.name));
        };
        let (handler, redirect_uri) = match handler {
            Some((handler, redirect_uri)) => (Some(handler), redirect_uri),
            None => (None, super::oauth::OAuthConfig::default().redirect_uri),
        };
        let config = server.oauth.oauth_config(&self.client_name, &redirect_uri)?;
        OAuthClient::new(url, config, self.store.clone(), handler).map_err(|e| e.to_string())
    }

    /// The transport's authorizer for `server`, when it [uses a login](uses_login): the stored
    /// token, never a new flow.
    ///
    /// # Errors
    /// As [`Logins::client`].
    pub fn authorizer(&self, server: &ServerConfig) -> Result<Option<Arc<dyn Authorizer>>, String> {
        if !uses_login(server) {
            return Ok(None);
        }
        let oauth = self.client(server, None)?;
        Ok(Some(Arc::new(StoredLogin { oauth, needs_login: self.needs_login_message(&server.name) })))
    }

    /// What a status line says of `server`; `start_error` is why it did not start, if it did
    /// not.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn status(&self, server: &ServerConfig, start_error: Option<&str>) -> Result<AuthReport, AuthError> {
        let report = |status, note: Option<&str>| AuthReport { status, note: note.map(str::to_owned), location: None };
        if !uses_login(server) {
            return Ok(report(AuthStatus::NotNeeded, None));
        }
        let client = self.client(server, None).map_err(AuthError::Config)?;
        let Some((key, tokens)) = client.stored_tokens()? else {
            let wants_login = start_error.is_some_and(|e| e.contains("needs login"));
            return Ok(report(if wants_login { AuthStatus::NeedsLogin } else { AuthStatus::NotNeeded }, None));
        };
        let location = self.store.location(&key);
        let report = |status, note| AuthReport { location: location.clone(), ..report(status, note) };
        if !tokens.expires_within(super::oauth::unix_now(), 0) {
            return Ok(report(AuthStatus::LoggedIn, None));
        }
        Ok(if tokens.refresh_token.is_some() {
            report(AuthStatus::LoggedIn, Some("access token expired; it is refreshed on the next use"))
        } else {
            report(AuthStatus::Expired, Some("access token expired and there is no refresh token: log in again"))
        })
    }
}

/// An [`OAuthClient`] without a handler whose refusals say what the user must do.
struct StoredLogin {
    oauth: OAuthClient,
    needs_login: String,
}

impl Authorizer for StoredLogin {
    fn authorization<'a>(&'a self, method: &'a str, url: &'a str) -> AuthFuture<'a, Option<Credentials>> {
        self.oauth.authorization(method, url)
    }

    fn refused<'a>(&'a self, refusal: Denial<'a>) -> AuthFuture<'a, Verdict> {
        Box::pin(async move {
            // Nothing stored: no discovery, no registration, just the user's next step.
            if matches!(self.oauth.stored_tokens(), Ok(None)) {
                return Verdict::GiveUp(self.needs_login.clone());
            }
            let status = refusal.status;
            match self.oauth.refused(refusal).await {
                Verdict::Retry => Verdict::Retry,
                Verdict::GiveUp(reason) if status == 401 => Verdict::GiveUp(format!("{} ({reason})", self.needs_login)),
                Verdict::GiveUp(reason) => Verdict::GiveUp(format!("{reason}; {} to ask for more", self.needs_login)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::oauth::{CredentialKey, MemoryTokenStore, Secret, StoredCredentials, TokenSet};

    const URL: &str = "http://127.0.0.1:9/mcp";

    fn logins_with(expires_at: Option<u64>, refresh: bool) -> Logins {
        let store = MemoryTokenStore::new();
        if let Some(expires_at) = expires_at {
            let tokens = TokenSet {
                access_token: Secret::new("access"),
                refresh_token: refresh.then(|| Secret::new("refresh")),
                expires_at: Some(expires_at),
                scopes: vec![],
                token_type: None,
                dpop_key: None,
            };
            let stored = StoredCredentials { client: None, tokens: Some(tokens) };
            store.save(&CredentialKey::new("http://as", URL), &stored).unwrap();
        }
        Logins::new(Arc::new(store), "mcp-bridge login")
    }

    fn status(logins: &Logins, server: &ServerConfig, error: Option<&str>) -> (AuthStatus, Option<String>) {
        let report = logins.status(server, error).unwrap();
        (report.status, report.note)
    }

    #[test]
    fn the_status_follows_what_is_stored_and_why_the_server_failed() {
        let http = ServerConfig::http("r", URL);
        let later = crate::client::oauth::unix_now() + 3600;
        assert_eq!(status(&logins_with(Some(later), true), &http, None), (AuthStatus::LoggedIn, None));
        let (state, note) = status(&logins_with(Some(1), true), &http, None);
        assert_eq!(state, AuthStatus::LoggedIn, "expired but refreshable counts as logged in");
        assert!(note.unwrap().contains("refreshed"));
        assert_eq!(status(&logins_with(Some(1), false), &http, None).0, AuthStatus::Expired);
        let nothing = logins_with(None, false);
        assert_eq!(status(&nothing, &http, None).0, AuthStatus::NotNeeded, "it answered without a login");
        let refused = nothing.needs_login_message("r");
        assert_eq!(refused, "needs login: run mcp-bridge login r");
        assert_eq!(status(&nothing, &http, Some(&format!("http status 401: {refused}"))).0, AuthStatus::NeedsLogin);
        let stdio = ServerConfig::stdio("s", "x", ["y"]);
        assert_eq!(status(&nothing, &stdio, Some("needs login")).0, AuthStatus::NotNeeded);
        let mut own = ServerConfig::http("o", URL);
        if let TransportConfig::Http { bearer_token_env_var, .. } = &mut own.transport {
            *bearer_token_env_var = Some("TOKEN".into());
        }
        assert!(!uses_login(&own) && uses_login(&http) && !uses_login(&stdio));
        assert!(nothing.authorizer(&own).unwrap().is_none(), "its own credentials, no login");
    }

    #[tokio::test]
    async fn with_nothing_stored_a_refusal_asks_for_a_login_without_any_exchange() {
        // Nothing listens on port 9: any discovery would fail with another message.
        let authorizer = logins_with(None, false).authorizer(&ServerConfig::http("r", URL)).unwrap().unwrap();
        assert!(authorizer.authorization("POST", URL).await.is_none());
        let challenges = vec!["Bearer resource_metadata=\"http://127.0.0.1:9/.well-known/x\"".to_owned()];
        let refusal =
            Denial { status: 401, challenges: &challenges, url: URL, sent: None, dpop_nonce: None, retries: 0 };
        assert_eq!(authorizer.refused(refusal).await, Verdict::GiveUp("needs login: run mcp-bridge login r".into()));
    }
}
