//! Finding the authorization server of an MCP server: the `WWW-Authenticate` challenge
//! ([RFC 6750 §3](https://www.rfc-editor.org/rfc/rfc6750#section-3)), the protected resource
//! metadata ([RFC 9728](https://www.rfc-editor.org/rfc/rfc9728)) and the authorization server
//! metadata ([RFC 8414](https://www.rfc-editor.org/rfc/rfc8414), OpenID Connect Discovery), in
//! the order of
//! [MCP "Authorization Server Discovery"](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization#authorization-server-discovery).
//!
//! - Protected resource metadata: the challenge's `resource_metadata` URL first, then
//!   `/.well-known/oauth-protected-resource/<path of the server URL>`, then
//!   `/.well-known/oauth-protected-resource` at the root ([`resource_metadata_urls`]). The
//!   document's `resource` must name the server (same origin, and the server URL's path within
//!   the resource's path), else [`AuthError::ResourceMismatch`].
//! - Authorization server metadata, for an issuer with a path: OAuth path insertion, OpenID
//!   path insertion, OpenID path appending; without a path: OAuth, then OpenID
//!   ([`authorization_server_metadata_urls`]). The document's `issuer` must be the issuer the
//!   URL was made from (RFC 8414 §3.3), else [`AuthError::IssuerMismatch`].
//! - A server without protected resource metadata is a 2025-03-26 one: its origin is the
//!   authorization server, and one without metadata gets the default endpoints (`/authorize`,
//!   `/token`, `/register`).
//!
//! Not here: which scopes to ask for, registration, tokens.

use serde::Deserialize;
use url::Url;

use super::http::{without_query, HttpClient};
use super::AuthError;

/// One `Bearer` challenge of a `WWW-Authenticate` header: the parameters we use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`, split on spaces.
    pub scope: Option<Vec<String>>,
    /// `error` (`invalid_token`, `insufficient_scope` …).
    pub error: Option<String>,
}

/// The first `Bearer` (or `DPoP`, RFC 9449 §7.1) challenge among `values` (each a
/// `WWW-Authenticate` header, possibly holding several challenges), if any.
pub fn bearer_challenge<S: AsRef<str>>(values: &[S]) -> Option<BearerChallenge> {
    for value in values {
        for (scheme, params) in challenges(value.as_ref()) {
            if scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("dpop") {
                let mut challenge = BearerChallenge::default();
                for (name, value) in params {
                    match name.to_ascii_lowercase().as_str() {
                        "resource_metadata" => challenge.resource_metadata = Some(value),
                        "scope" => challenge.scope = Some(value.split_whitespace().map(str::to_owned).collect()),
                        "error" => challenge.error = Some(value),
                        _ => {}
                    }
                }
                return Some(challenge);
            }
        }
    }
    None
}

/// Splits a `WWW-Authenticate` value into its challenges (RFC 9110 §11.6.1): a scheme, then
/// `name=value` or `name="quoted"` parameters separated by commas; a token that is not followed
/// by `=` starts the next challenge. A `token68` is skipped.
fn challenges(value: &str) -> Vec<(String, Vec<(String, String)>)> {
    let bytes = value.as_bytes();
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut i = 0;
    let is_token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/".contains(&b);
    loop {
        while i < bytes.len() && (bytes[i] == b',' || bytes[i].is_ascii_whitespace()) {
            i += 1;
        }
        if i >= bytes.len() {
            return out;
        }
        let start = i;
        while i < bytes.len() && is_token(bytes[i]) {
            i += 1;
        }
        if i == start {
            i += 1; // a stray character: skip it
            continue;
        }
        let token = &value[start..i];
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'=' && !out.is_empty() {
            // A parameter, unless it is a token68 ending in '=' padding.
            j += 1;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            let mut param = String::new();
            if j < bytes.len() && bytes[j] == b'"' {
                j += 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    if bytes[j] == b'\\' && j + 1 < bytes.len() {
                        j += 1;
                    }
                    let ch = value[j..].chars().next().unwrap_or('\u{fffd}');
                    param.push(ch);
                    j += ch.len_utf8();
                }
                j += 1;
            } else {
                let from = j;
                while j < bytes.len() && bytes[j] != b',' && !bytes[j].is_ascii_whitespace() {
                    j += 1;
                }
                param.push_str(&value[from..j]);
            }
            if let Some(last) = out.last_mut() {
                last.1.push((token.to_owned(), param));
            }
            i = j;
        } else {
            out.push((token.to_owned(), Vec::new()));
            i = j;
        }
    }
}

/// The protected resource metadata (RFC 9728 §2): the fields we use.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceMetadata {
    /// The protected resource's identifier.
    pub resource: String,
    /// Its authorization servers' issuer identifiers.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// The authorization server metadata (RFC 8414 §2, and what OpenID Connect Discovery shares
/// with it): the fields we use.
#[derive(Debug, Clone, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier, checked against the URL the document was found from.
    pub issuer: String,
    /// Where the user authorizes.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes and refresh tokens are exchanged.
    pub token_endpoint: String,
    /// Dynamic client registration (RFC 7591), when offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// Grants the server supports.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// PKCE methods; S256 must be among them.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint (RFC 8414 default:
    /// `client_secret_basic`).
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Client ID Metadata Documents are accepted as `client_id`.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9449 §5.1: the algorithms of DPoP proofs the server takes.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl AuthorizationServerMetadata {
    /// The default endpoints of a 2025-03-26 server without metadata: `/authorize`, `/token`
    /// and `/register` at the issuer's origin, PKCE S256 assumed.
    fn defaults(issuer: &str, origin: &Url) -> Result<AuthorizationServerMetadata, AuthError> {
        let at = |path: &str| origin.join(path).map(|u| u.to_string()).map_err(|e| AuthError::Config(e.to_string()));
        Ok(AuthorizationServerMetadata {
            issuer: issuer.to_owned(),
            authorization_endpoint: Some(at("/authorize")?),
            token_endpoint: at("/token")?,
            registration_endpoint: Some(at("/register")?),
            scopes_supported: None,
            grant_types_supported: None,
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            token_endpoint_auth_methods_supported: None,
            authorization_response_iss_parameter_supported: None,
            client_id_metadata_document_supported: None,
            dpop_signing_alg_values_supported: None,
        })
    }

    /// Whether the server lists `scope` in `scopes_supported`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported.as_ref().is_some_and(|s| s.iter().any(|x| x == scope))
    }

    /// Whether the server accepts client authentication `method` at its token endpoint.
    pub fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }
}

/// What discovery found for one MCP server.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The resource identifier: the protected resource metadata's `resource`, or the server URL
    /// when there is none. Sent as RFC 8707 `resource`, and half of the credentials' key.
    pub resource: String,
    /// The protected resource metadata, when the server has one.
    pub resource_metadata: Option<ResourceMetadata>,
    /// The chosen authorization server's metadata (its `issuer` checked).
    pub authorization_server: AuthorizationServerMetadata,
}

/// The protected resource metadata URLs to try, in order, for the server at `server`.
pub fn resource_metadata_urls(server: &Url, from_challenge: Option<&str>) -> Vec<Url> {
    let mut urls = Vec::new();
    if let Some(url) = from_challenge.and_then(|u| server.join(u).ok()) {
        urls.push(url);
    }
    let path = server.path().trim_end_matches('/');
    for candidate in
        [format!("/.well-known/oauth-protected-resource{path}"), "/.well-known/oauth-protected-resource".into()]
    {
        if let Ok(url) = server.join(&candidate) {
            if !urls.contains(&url) {
                urls.push(url);
            }
        }
    }
    urls
}

/// The authorization server metadata URLs to try, in order, for `issuer`.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let candidates = if path.is_empty() {
        vec!["/.well-known/oauth-authorization-server".to_owned(), "/.well-known/openid-configuration".to_owned()]
    } else {
        vec![
            format!("/.well-known/oauth-authorization-server{path}"),
            format!("/.well-known/openid-configuration{path}"),
            format!("{path}/.well-known/openid-configuration"),
        ]
    };
    candidates.iter().filter_map(|c| issuer.join(c).ok()).collect()
}

/// Whether the protected resource `resource` covers the MCP server at `server`: same scheme,
/// host (ignoring case) and port, and the server's path equal to or below the resource's.
pub fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else { return false };
    if resource.scheme() != server.scheme()
        || resource.host_str().map(str::to_ascii_lowercase) != server.host_str().map(str::to_ascii_lowercase)
        || resource.port_or_known_default() != server.port_or_known_default()
        || resource.fragment().is_some()
    {
        return false;
    }
    let base = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == base || path.strip_prefix(base).is_some_and(|rest| rest.starts_with('/'))
}

/// Whether a metadata document's `issuer` is the issuer identifier its URL was made from
/// (RFC 8414 §3.3: identical). The one difference allowed is a trailing slash on an empty path
/// (`https://as.example` and `https://as.example/` name the same well-known URLs).
pub fn issuer_matches(expected: &str, found: &str) -> bool {
    if expected == found {
        return true;
    }
    let bare = |s: &str| s.strip_suffix('/').map(str::to_owned).unwrap_or_else(|| s.to_owned());
    let empty_path = |s: &str| Url::parse(s).is_ok_and(|u| u.path() == "/" && u.query().is_none());
    bare(expected) == bare(found) && empty_path(expected) && empty_path(found)
}

/// The canonical resource identifier of a server URL without metadata: no fragment, and no
/// trailing slash on an empty path.
pub fn canonical_resource(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    let text = url.to_string();
    if url.path() == "/" && url.query().is_none() {
        text.trim_end_matches('/').to_owned()
    } else {
        text
    }
}

/// Runs discovery for the server at `server`, with the challenge of its 401 if there was one.
///
/// # Errors
/// [`AuthError::ResourceMismatch`], [`AuthError::IssuerMismatch`], [`AuthError::Discovery`]
/// when metadata is missing or unusable, [`AuthError::Http`] when a server cannot be reached.
pub(crate) async fn discover(
    http: &HttpClient,
    server: &Url,
    challenge: Option<&BearerChallenge>,
) -> Result<Discovered, AuthError> {
    let from_challenge = challenge.and_then(|c| c.resource_metadata.as_deref());
    let mut resource_metadata = None;
    for url in resource_metadata_urls(server, from_challenge) {
        let answer = http.get(&url).await?;
        if !answer.status.is_success() {
            continue;
        }
        let metadata: ResourceMetadata = answer.json("protected resource metadata")?;
        if !resource_covers(&metadata.resource, server) {
            return Err(AuthError::ResourceMismatch { expected: without_query(server), found: metadata.resource });
        }
        resource_metadata = Some(metadata);
        break;
    }
    let (issuer, resource) = match &resource_metadata {
        Some(metadata) => {
            let issuer = metadata.authorization_servers.first().cloned().ok_or_else(|| {
                AuthError::Discovery("the protected resource metadata names no authorization server".into())
            })?;
            (issuer, metadata.resource.clone())
        }
        // 2025-03-26: no resource metadata; the server's origin is its authorization server.
        None => (canonical_resource(&origin(server)), canonical_resource(server)),
    };
    let issuer_url = Url::parse(&issuer)
        .map_err(|e| AuthError::Discovery(format!("authorization server {issuer:?} is not a url: {e}")))?;
    let mut authorization_server = None;
    for url in authorization_server_metadata_urls(&issuer_url) {
        let answer = http.get(&url).await?;
        if !answer.status.is_success() {
            continue;
        }
        let metadata: AuthorizationServerMetadata = answer.json("authorization server metadata")?;
        if !issuer_matches(&issuer, &metadata.issuer) {
            return Err(AuthError::IssuerMismatch { expected: issuer, found: metadata.issuer });
        }
        authorization_server = Some(metadata);
        break;
    }
    let authorization_server = match authorization_server {
        Some(metadata) => metadata,
        None if resource_metadata.is_none() => AuthorizationServerMetadata::defaults(&issuer, &issuer_url)?,
        None => return Err(AuthError::Discovery(format!("no authorization server metadata for {issuer}"))),
    };
    Ok(Discovered { resource, resource_metadata, authorization_server })
}

fn origin(url: &Url) -> Url {
    let mut origin = url.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    origin
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn challenges_are_parsed_with_quoted_and_bare_parameters() {
        let c = bearer_challenge(&[
            r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#,
        ])
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope, Some(vec!["files:read".to_owned(), "files:write".to_owned()]));
        assert_eq!(c.resource_metadata.as_deref(), Some("https://h/.well-known/oauth-protected-resource/mcp"));
        let c = bearer_challenge(&["Basic realm=\"x\", bearer error=invalid_token,scope=a"]).unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope, Some(vec!["a".to_owned()]));
        assert_eq!(bearer_challenge(&["Bearer"]), Some(BearerChallenge::default()));
        assert_eq!(bearer_challenge(&["Basic realm=\"Bearer x=1\""]), None, "a quoted scheme name is not a scheme");
        assert_eq!(bearer_challenge::<&str>(&[]), None);
        let c = bearer_challenge(&[r#"Bearer scope="a\"b""#]).unwrap();
        assert_eq!(c.scope, Some(vec!["a\"b".to_owned()]));
    }

    #[test]
    fn resource_metadata_is_looked_for_in_the_spec_order() {
        assert_eq!(
            strings(resource_metadata_urls(&url("http://h:1/mcp"), Some("http://h:1/custom/meta.json"))),
            [
                "http://h:1/custom/meta.json",
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            strings(resource_metadata_urls(&url("https://h/a/b/"), None)),
            ["https://h/.well-known/oauth-protected-resource/a/b", "https://h/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            strings(resource_metadata_urls(&url("https://h/"), None)),
            ["https://h/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn authorization_server_metadata_is_looked_for_in_the_spec_order() {
        assert_eq!(
            strings(authorization_server_metadata_urls(&url("https://as.example/tenant1"))),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            strings(authorization_server_metadata_urls(&url("http://localhost:9"))),
            [
                "http://localhost:9/.well-known/oauth-authorization-server",
                "http://localhost:9/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn a_resource_covers_its_server_and_nothing_else() {
        let server = url("http://localhost:3000/mcp");
        assert!(resource_covers("http://localhost:3000/mcp", &server));
        assert!(resource_covers("http://localhost:3000", &server));
        assert!(resource_covers("HTTP://LOCALHOST:3000/", &server));
        assert!(!resource_covers("https://evil.example.com/mcp", &server));
        assert!(!resource_covers("http://localhost:3001/mcp", &server));
        assert!(!resource_covers("http://localhost:3000/mc", &server), "a path prefix must end at a segment");
        assert!(!resource_covers("http://localhost:3000/other", &server));
        assert!(!resource_covers("not a url", &server));
    }

    #[test]
    fn issuers_compare_exactly_but_for_an_empty_path_slash() {
        assert!(issuer_matches("http://localhost:9", "http://localhost:9"));
        assert!(issuer_matches("http://localhost:9", "http://localhost:9/"));
        assert!(!issuer_matches("http://localhost:9", "https://attacker.example.com"));
        assert!(!issuer_matches("https://as/tenant1", "https://as/tenant1/"));
        assert!(!issuer_matches("https://as/tenant1", "https://AS/tenant1"));
    }

    #[test]
    fn canonical_resources_drop_the_empty_path_slash_and_fragment() {
        assert_eq!(canonical_resource(&url("https://h/")), "https://h");
        assert_eq!(canonical_resource(&url("https://h/mcp#x")), "https://h/mcp");
    }
}
