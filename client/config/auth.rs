//! The OAuth settings of one HTTP server (`oauth`), read from codex TOML and from Claude /
//! VS Code JSON, and turned into an [`OAuthConfig`](crate::client::oauth::OAuthConfig) for
//! a host's login command and the connection set.
//!
//! ```toml
//! [mcp_servers.remote]
//! url = "https://example.com/mcp"
//! oauth = { client_id = "my-app", scopes = ["mcp", "files:read"], callback_port = 8976 }
//! # also: client_secret_env_var = "REMOTE_CLIENT_SECRET", client_metadata_url = "https://…"
//! ```
//! ```json
//! {"mcpServers": {"remote": {"type": "http", "url": "https://example.com/mcp",
//!   "oauth": {"clientId": "my-app", "scopes": "mcp files:read", "callbackPort": 8976}}}}
//! ```
//! - `client_id` / `clientId`: a pre-registered client (else a Client ID Metadata Document or
//!   Dynamic Client Registration, as the authorization server allows); its secret, for a
//!   confidential client, is read from the variable `client_secret_env_var` /
//!   `clientSecretEnvVar` names, never from the file.
//! - `scopes`: the scopes asked for instead of the server's challenge or metadata (TOML: an
//!   array; JSON: Claude Code's space-separated string, or an array).
//! - `callback_port` / `callbackPort`: the port of the loopback redirect
//!   (`http://127.0.0.1:PORT/callback`); default any free port.
//! - `client_metadata_url` / `clientMetadataUrl`: our Client ID Metadata Document.
//!
//! Unknown members are an error in TOML (as every codex field) and ignored in JSON (as the
//! JSON readers ignore what they do not know, e.g. Claude Code's `authServerMetadataUrl`).
//!
//! Not here: running a flow or keeping tokens (`client::oauth`, `client::login`).

use serde_json::Value;

use super::{ConfigError, Field};

/// How to log in to one HTTP server. Every field is optional; the default asks the server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// A pre-registered `client_id`.
    pub client_id: Option<String>,
    /// The variable holding the pre-registered client's secret.
    pub client_secret_env_var: Option<String>,
    /// The scopes to ask for.
    pub scopes: Option<Vec<String>>,
    /// The loopback redirect's port.
    pub callback_port: Option<u16>,
    /// Our Client ID Metadata Document's URL.
    pub client_metadata_url: Option<String>,
}

impl OAuthSettings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == OAuthSettings::default()
    }

    /// The [`OAuthConfig`](crate::client::oauth::OAuthConfig) of these settings for the client
    /// `client_name` (the application's), sending the user back to `redirect_uri`.
    ///
    /// # Errors
    /// When `client_secret_env_var` names a variable that is not set.
    #[cfg(feature = "oauth")]
    pub fn oauth_config(
        &self,
        client_name: &str,
        redirect_uri: &str,
    ) -> Result<crate::client::oauth::OAuthConfig, String> {
        use crate::client::oauth::{OAuthConfig, PreRegistered, Secret};
        let mut config = OAuthConfig::default().client_name(client_name).redirect_uri(redirect_uri);
        if let Some(client_id) = &self.client_id {
            let mut client = PreRegistered::public(client_id.clone());
            if let Some(var) = &self.client_secret_env_var {
                let secret = std::env::var(var)
                    .map_err(|_| format!("oauth.client_secret_env_var: environment variable {var} is not set"))?;
                client.client_secret = Some(Secret::new(secret));
            }
            config = config.pre_registered(client);
        }
        if let Some(url) = &self.client_metadata_url {
            config = config.client_metadata_url(url.clone());
        }
        if let Some(scopes) = &self.scopes {
            config = config.scopes(scopes.clone());
        }
        Ok(config)
    }
}

/// codex's `oauth` table.
#[cfg(feature = "config")]
pub(super) fn from_toml(v: &Value, at: &Field<'_>) -> Result<OAuthSettings, ConfigError> {
    let Value::Object(t) = v else { return Err(at.err("expected a table")) };
    let mut settings = OAuthSettings::default();
    for (k, v) in t {
        let f = at.child(k);
        match k.as_str() {
            "client_id" => settings.client_id = Some(f.string(v)?),
            "client_secret_env_var" => settings.client_secret_env_var = Some(f.string(v)?),
            "scopes" => settings.scopes = Some(f.strings(v)?),
            "callback_port" => settings.callback_port = Some(port(&f, v)?),
            "client_metadata_url" => settings.client_metadata_url = Some(f.string(v)?),
            _ => return Err(f.err("unknown field")),
        }
    }
    Ok(settings)
}

/// Claude Code's `oauth` object (camelCase).
pub(super) fn from_json(v: &Value, at: &Field<'_>) -> Result<OAuthSettings, ConfigError> {
    let Value::Object(t) = v else { return Err(at.err("expected an object")) };
    let mut settings = OAuthSettings::default();
    for (k, v) in t {
        let f = at.child(k);
        match k.as_str() {
            "clientId" => settings.client_id = Some(f.string(v)?),
            "clientSecretEnvVar" => settings.client_secret_env_var = Some(f.string(v)?),
            "scopes" => {
                settings.scopes = Some(match v {
                    Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
                    _ => f.strings(v).map_err(|_| f.err("expected a space-separated string or an array of strings"))?,
                })
            }
            "callbackPort" => settings.callback_port = Some(port(&f, v)?),
            "clientMetadataUrl" => settings.client_metadata_url = Some(f.string(v)?),
            _ => {}
        }
    }
    Ok(settings)
}

fn port(f: &Field<'_>, v: &Value) -> Result<u16, ConfigError> {
    v.as_u64().and_then(|n| u16::try_from(n).ok()).ok_or_else(|| f.err("expected a port number (0 to 65535)"))
}
