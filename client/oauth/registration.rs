//! Getting a client identity at an authorization server, in the order of
//! [MCP "Client Registration"](https://modelcontextprotocol.io/specification/2026-07-28/basic/authorization/client-registration):
//! pre-registered credentials ([`PreRegistered`]), then a Client ID Metadata Document (our
//! metadata URL as `client_id`, when the server advertises
//! `client_id_metadata_document_supported`), then Dynamic Client Registration
//! ([RFC 7591](https://www.rfc-editor.org/rfc/rfc7591)) when the server has a
//! `registration_endpoint`.
//!
//! The token endpoint authentication method follows what the server supports: a client with a
//! secret uses `client_secret_basic` where allowed, else `client_secret_post`; a public client
//! uses `none`. Registration asks for `none` when the server allows it (we are a native client
//! with no way to keep a secret from the user), and keeps what the server answers.
//!
//! Not here: keeping registrations (the caller stores a DCR result under its issuer), tokens.

use serde::Deserialize;
use serde_json::json;
use url::Url;

use super::discovery::AuthorizationServerMetadata;
use super::http::HttpClient;
use super::store::ClientRegistration;
use super::{AuthError, Secret};

/// Client credentials the host was given for an authorization server (a pre-registration).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PreRegistered {
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`, for a confidential client.
    pub client_secret: Option<Secret>,
    /// The issuer the credentials belong to: when set, they are used with that authorization
    /// server only (another one is an error rather than a leak of credentials).
    pub issuer: Option<String>,
    /// The token endpoint authentication method; by default chosen from what the server
    /// supports.
    pub token_endpoint_auth_method: Option<String>,
}

impl PreRegistered {
    /// A public client.
    pub fn public(client_id: impl Into<String>) -> PreRegistered {
        PreRegistered {
            client_id: client_id.into(),
            client_secret: None,
            issuer: None,
            token_endpoint_auth_method: None,
        }
    }

    /// A confidential client.
    pub fn confidential(client_id: impl Into<String>, client_secret: impl Into<String>) -> PreRegistered {
        PreRegistered { client_secret: Some(Secret::new(client_secret)), ..PreRegistered::public(client_id) }
    }

    /// Binds the credentials to one authorization server.
    pub fn for_issuer(mut self, issuer: impl Into<String>) -> PreRegistered {
        self.issuer = Some(issuer.into());
        self
    }

    /// Sets the token endpoint authentication method.
    pub fn auth_method(mut self, method: impl Into<String>) -> PreRegistered {
        self.token_endpoint_auth_method = Some(method.into());
        self
    }
}

/// What we tell an authorization server about ourselves (DCR body, metadata document).
#[derive(Debug, Clone)]
pub(crate) struct ClientMetadata<'a> {
    pub(crate) client_name: &'a str,
    pub(crate) redirect_uri: &'a str,
    pub(crate) application_type: &'a str,
    pub(crate) wants_refresh_tokens: bool,
}

/// How a client with (or without) a secret authenticates at `server`'s token endpoint.
pub(crate) fn auth_method_for(server: &AuthorizationServerMetadata, has_secret: bool) -> String {
    if !has_secret {
        return "none".into();
    }
    if server.supports_auth_method("client_secret_basic") || !server.supports_auth_method("client_secret_post") {
        "client_secret_basic".into()
    } else {
        "client_secret_post".into()
    }
}

/// The registration of pre-registered credentials at `server`.
pub(crate) fn pre_registered(
    credentials: &PreRegistered,
    server: &AuthorizationServerMetadata,
) -> Result<ClientRegistration, AuthError> {
    if let Some(issuer) = credentials.issuer.as_deref().filter(|i| *i != server.issuer) {
        return Err(AuthError::Registration(format!(
            "the pre-registered client belongs to {issuer}, not to {}",
            server.issuer
        )));
    }
    let method = credentials
        .token_endpoint_auth_method
        .clone()
        .unwrap_or_else(|| auth_method_for(server, credentials.client_secret.is_some()));
    Ok(ClientRegistration {
        client_id: credentials.client_id.clone(),
        client_secret: credentials.client_secret.clone(),
        token_endpoint_auth_method: method,
    })
}

/// The registration by Client ID Metadata Document: `metadata_url` is the `client_id`, a public
/// client.
pub(crate) fn metadata_document(metadata_url: &str) -> ClientRegistration {
    ClientRegistration {
        client_id: metadata_url.to_owned(),
        client_secret: None,
        token_endpoint_auth_method: "none".into(),
    }
}

/// A Client ID Metadata Document for `metadata_url`, to be served there by the host.
pub fn metadata_document_json(
    metadata_url: &str,
    client_name: &str,
    redirect_uris: &[&str],
    wants_refresh_tokens: bool,
) -> serde_json::Value {
    let mut grant_types = vec!["authorization_code"];
    if wants_refresh_tokens {
        grant_types.push("refresh_token");
    }
    json!({
        "client_id": metadata_url,
        "client_name": client_name,
        "redirect_uris": redirect_uris,
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
}

#[derive(Deserialize)]
struct RegistrationAnswer {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// Dynamic Client Registration at `server`'s `registration_endpoint`.
///
/// # Errors
/// [`AuthError::Registration`] when the server has no endpoint or refuses.
pub(crate) async fn register(
    http: &HttpClient,
    server: &AuthorizationServerMetadata,
    metadata: &ClientMetadata<'_>,
) -> Result<ClientRegistration, AuthError> {
    let endpoint = server
        .registration_endpoint
        .as_deref()
        .ok_or_else(|| AuthError::Registration("the authorization server offers no way to register a client".into()))?;
    let endpoint = Url::parse(endpoint).map_err(|e| AuthError::Registration(format!("registration endpoint: {e}")))?;
    let method = if server.supports_auth_method("none") { "none".to_owned() } else { auth_method_for(server, true) };
    let mut grant_types = vec!["authorization_code"];
    if metadata.wants_refresh_tokens {
        grant_types.push("refresh_token");
    }
    let body = json!({
        "client_name": metadata.client_name,
        "redirect_uris": [metadata.redirect_uri],
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": metadata.application_type,
    });
    let answer = http.post_json(&endpoint, &body).await?;
    if !answer.status.is_success() {
        let text: String = String::from_utf8_lossy(&answer.body).chars().take(300).collect();
        return Err(AuthError::Registration(format!("registration refused ({}): {text}", answer.status)));
    }
    let registered: RegistrationAnswer = answer.json("registration answer")?;
    let client_secret = registered.client_secret.filter(|s| !s.is_empty()).map(Secret::new);
    let method = registered.token_endpoint_auth_method.unwrap_or(method);
    Ok(ClientRegistration { client_id: registered.client_id, client_secret, token_endpoint_auth_method: method })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(methods: Option<&[&str]>) -> AuthorizationServerMetadata {
        serde_json::from_value(json!({
            "issuer": "https://as",
            "token_endpoint": "https://as/token",
            "token_endpoint_auth_methods_supported": methods,
        }))
        .unwrap()
    }

    #[test]
    fn the_auth_method_follows_the_server() {
        assert_eq!(auth_method_for(&server(Some(&["client_secret_post"])), true), "client_secret_post");
        assert_eq!(
            auth_method_for(&server(Some(&["client_secret_basic", "client_secret_post"])), true),
            "client_secret_basic"
        );
        assert_eq!(auth_method_for(&server(None), true), "client_secret_basic", "RFC 8414's default");
        assert_eq!(auth_method_for(&server(Some(&["client_secret_post"])), false), "none");
    }

    #[test]
    fn pre_registered_credentials_stay_with_their_issuer() {
        let creds = PreRegistered::confidential("id", "secret").for_issuer("https://other");
        assert!(matches!(pre_registered(&creds, &server(None)), Err(AuthError::Registration(_))));
        let creds = PreRegistered::confidential("id", "secret");
        let registration = pre_registered(&creds, &server(Some(&["client_secret_basic"]))).unwrap();
        assert_eq!(registration.token_endpoint_auth_method, "client_secret_basic");
        assert!(!format!("{creds:?}{registration:?}").contains("secret\""), "the secret is redacted");
    }

    #[test]
    fn the_metadata_document_names_itself() {
        let doc = metadata_document_json("https://app/meta.json", "app", &["http://127.0.0.1:1/cb"], true);
        assert_eq!(doc["client_id"], "https://app/meta.json");
        assert_eq!(doc["grant_types"], json!(["authorization_code", "refresh_token"]));
    }
}
