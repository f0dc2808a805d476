//! The resource server's policy, [`ProtectedResource`]: which token verifier, which
//! authorization servers, which scopes each request needs; and what follows from it on the
//! wire: the Protected Resource Metadata document
//! ([RFC 9728](https://www.rfc-editor.org/rfc/rfc9728)) and its well-known path, and the
//! `WWW-Authenticate` challenges of the 401 and 403 answers
//! ([RFC 6750 §3](https://www.rfc-editor.org/rfc/rfc6750#section-3)).
//!
//! Per the MCP authorization pages (2025-11-25 and 2026-07-28, "Authorization Server
//! Discovery"), the metadata is served at the path of the MCP endpoint under
//! `/.well-known/oauth-protected-resource` (`/mcp` → `/.well-known/oauth-protected-resource/mcp`)
//! and at the root `/.well-known/oauth-protected-resource`; every 401 carries
//! `resource_metadata="<that URL>"` and `scope="…"` (the scopes needed by every request, else
//! `scopes_supported`); an invalid token adds `error="invalid_token"`; a token lacking a scope
//! gets 403 `error="insufficient_scope"` with every scope the request needs.
//!
//! Not here: verifying tokens ([`super::verifier`]), serving HTTP (the server calls in).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::verifier::TokenVerifier;
use crate::transport::principal::{Principal, Refusal};

/// The well-known path prefix of RFC 9728.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// How an MCP endpoint over HTTP is protected. Cheap to clone (the verifier is shared).
#[derive(Clone)]
pub struct ProtectedResource {
    resource: String,
    verifier: Arc<dyn TokenVerifier>,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    resource_name: Option<String>,
    always: Vec<String>,
    per_method: BTreeMap<String, Vec<String>>,
    per_tool: BTreeMap<String, Vec<String>>,
}

impl std::fmt::Debug for ProtectedResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtectedResource")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("always", &self.always)
            .field("per_method", &self.per_method)
            .field("per_tool", &self.per_tool)
            .finish_non_exhaustive()
    }
}

impl ProtectedResource {
    /// The resource at `resource` (its canonical URI, the audience tokens must name, e.g.
    /// `https://mcp.example.com/mcp`), whose tokens `verifier` checks.
    pub fn new(resource: impl Into<String>, verifier: Arc<dyn TokenVerifier>) -> ProtectedResource {
        ProtectedResource {
            resource: resource.into(),
            verifier,
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            resource_name: None,
            always: Vec::new(),
            per_method: BTreeMap::new(),
            per_tool: BTreeMap::new(),
        }
    }

    /// An authorization server (its issuer URL) listed in the metadata.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> ProtectedResource {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// `scopes_supported` of the metadata. When none is given, the scopes named by
    /// [`require_scope`](Self::require_scope), [`method_scope`](Self::method_scope) and
    /// [`tool_scope`](Self::tool_scope) are listed.
    pub fn scopes_supported<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> ProtectedResource {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// `resource_name` of the metadata.
    pub fn resource_name(mut self, name: impl Into<String>) -> ProtectedResource {
        self.resource_name = Some(name.into());
        self
    }

    /// A scope every request needs.
    pub fn require_scope(mut self, scope: impl Into<String>) -> ProtectedResource {
        push_unique(&mut self.always, scope.into());
        self
    }

    /// A scope every request of JSON-RPC method `method` (e.g. `resources/read`) needs.
    pub fn method_scope(mut self, method: impl Into<String>, scope: impl Into<String>) -> ProtectedResource {
        push_unique(self.per_method.entry(method.into()).or_default(), scope.into());
        self
    }

    /// A scope a `tools/call` of tool `tool` needs.
    pub fn tool_scope(mut self, tool: impl Into<String>, scope: impl Into<String>) -> ProtectedResource {
        push_unique(self.per_tool.entry(tool.into()).or_default(), scope.into());
        self
    }

    /// The resource URI (the audience).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The verifier.
    pub fn verifier(&self) -> &Arc<dyn TokenVerifier> {
        &self.verifier
    }

    /// The scopes every request needs ([`require_scope`](Self::require_scope)), whatever it is:
    /// also a GET of a stream or a DELETE, which carry no JSON-RPC method.
    pub fn scopes_for_every_request(&self) -> &[String] {
        &self.always
    }

    /// Whether any request needs a scope beyond a valid token.
    pub fn has_scope_rules(&self) -> bool {
        !self.always.is_empty() || !self.per_method.is_empty() || !self.per_tool.is_empty()
    }

    /// Every scope a request of `method` (for `tools/call`, of tool `tool`) needs, in a stable
    /// order without duplicates.
    pub fn required_scopes(&self, method: &str, tool: Option<&str>) -> Vec<String> {
        let mut needed = self.always.clone();
        for scope in self.per_method.get(method).into_iter().flatten() {
            push_unique(&mut needed, scope.clone());
        }
        if method == "tools/call" {
            for scope in tool.and_then(|t| self.per_tool.get(t)).into_iter().flatten() {
                push_unique(&mut needed, scope.clone());
            }
        }
        needed
    }

    /// [`Refusal::InsufficientScope`] (with every scope needed) when `principal` lacks one of
    /// `needed`.
    pub fn check_scopes(&self, principal: &Principal, needed: Vec<String>) -> Result<(), Refusal> {
        if principal.missing_scopes(&needed).is_empty() {
            Ok(())
        } else {
            Err(Refusal::InsufficientScope { required: needed })
        }
    }

    /// The well-known path of the metadata for an endpoint at `endpoint_path`:
    /// `/mcp` → `/.well-known/oauth-protected-resource/mcp`, `/` → the root one.
    pub fn metadata_path(endpoint_path: &str) -> String {
        let path = endpoint_path.trim_end_matches('/');
        format!("{METADATA_PATH}{path}")
    }

    /// The absolute URL of the metadata: the resource URI's origin and the well-known path of
    /// its path.
    pub fn metadata_url(&self) -> String {
        let canonical = canonical_resource(&self.resource);
        let (origin, path) = match canonical.split_once("://") {
            Some((scheme, rest)) => match rest.find('/') {
                Some(i) => (format!("{scheme}://{}", &rest[..i]), rest[i..].split('?').next().unwrap_or("").to_owned()),
                None => (canonical.clone(), String::new()),
            },
            None => (String::new(), canonical.clone()),
        };
        format!("{origin}{}", Self::metadata_path(&path))
    }

    /// The RFC 9728 metadata document.
    pub fn metadata_document(&self) -> Value {
        let mut scopes = self.scopes_supported.clone();
        if scopes.is_empty() {
            for scope in
                self.always.iter().chain(self.per_method.values().flatten()).chain(self.per_tool.values().flatten())
            {
                push_unique(&mut scopes, scope.clone());
            }
        }
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        doc
    }

    /// The scopes named in a 401 challenge: those every request needs, else `scopes_supported`.
    fn challenge_scopes(&self) -> Vec<String> {
        if self.always.is_empty() {
            self.scopes_supported.clone()
        } else {
            self.always.clone()
        }
    }

    /// The `WWW-Authenticate` value for a request without a token (`refusal` `None`) or with a
    /// refused one; `None` for a refusal that has no challenge (503).
    pub fn challenge(&self, refusal: Option<&Refusal>) -> Option<String> {
        let mut out = format!("Bearer resource_metadata=\"{}\"", quoted(&self.metadata_url()));
        let scopes = match refusal {
            Some(Refusal::InsufficientScope { required }) => required.clone(),
            _ => self.challenge_scopes(),
        };
        if let Some(r) = refusal {
            let code = r.error_code()?;
            out.push_str(&format!(", error=\"{code}\", error_description=\"{}\"", quoted(&r.to_string())));
        }
        if !scopes.is_empty() {
            out.push_str(&format!(", scope=\"{}\"", quoted(&scopes.join(" "))));
        }
        Some(out)
    }
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// A value fit for a quoted-string: `"` and `\` and control characters dropped (scopes and our
/// descriptions never hold them; the resource URI could).
fn quoted(text: &str) -> String {
    text.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect()
}

/// The canonical form of a resource URI used for comparisons: lowercase scheme and host, no
/// fragment, no trailing `/`.
pub fn canonical_resource(uri: &str) -> String {
    let uri = uri.split('#').next().unwrap_or(uri);
    let (scheme, rest) = match uri.split_once("://") {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        None => return uri.trim_end_matches('/').to_owned(),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    format!("{scheme}://{}{}", authority.to_ascii_lowercase(), path.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::super::verifier::StaticTokenVerifier;
    use super::*;

    fn resource() -> ProtectedResource {
        let verifier = Arc::new(StaticTokenVerifier::new("t").unwrap());
        ProtectedResource::new("https://MCP.example.com/public/mcp", verifier)
            .authorization_server("https://auth.example.com")
            .require_scope("mcp")
            .tool_scope("write", "files:write")
            .method_scope("resources/read", "files:read")
    }

    #[test]
    fn metadata_lives_at_the_path_of_the_endpoint() {
        assert_eq!(ProtectedResource::metadata_path("/mcp"), "/.well-known/oauth-protected-resource/mcp");
        assert_eq!(ProtectedResource::metadata_path("/"), "/.well-known/oauth-protected-resource");
        let r = resource();
        assert_eq!(r.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp");
        assert_eq!(
            r.metadata_document(),
            json!({"resource": "https://MCP.example.com/public/mcp", "authorization_servers": ["https://auth.example.com"],
                "bearer_methods_supported": ["header"], "scopes_supported": ["mcp", "files:read", "files:write"]})
        );
    }

    #[test]
    fn scopes_per_method_and_tool_add_up() {
        let r = resource();
        assert_eq!(r.required_scopes("tools/list", None), ["mcp"]);
        assert_eq!(r.required_scopes("tools/call", Some("write")), ["mcp", "files:write"]);
        assert_eq!(r.required_scopes("tools/call", Some("read")), ["mcp"]);
        assert_eq!(r.required_scopes("resources/read", None), ["mcp", "files:read"]);
        let mut p = Principal::new(None);
        p.scopes = vec!["mcp".into()];
        assert!(r.check_scopes(&p, r.required_scopes("tools/list", None)).is_ok());
        assert_eq!(
            r.check_scopes(&p, r.required_scopes("tools/call", Some("write"))).unwrap_err(),
            Refusal::InsufficientScope { required: vec!["mcp".into(), "files:write".into()] }
        );
    }

    #[test]
    fn challenges_name_the_metadata_and_the_scopes() {
        let r = resource();
        let meta = "resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp\"";
        assert_eq!(r.challenge(None).unwrap(), format!("Bearer {meta}, scope=\"mcp\""));
        assert_eq!(
            r.challenge(Some(&Refusal::Expired)).unwrap(),
            format!(
                "Bearer {meta}, error=\"invalid_token\", error_description=\"the access token expired\", scope=\"mcp\""
            )
        );
        let scope = Refusal::InsufficientScope { required: vec!["mcp".into(), "files:write".into()] };
        let challenge = r.challenge(Some(&scope)).unwrap();
        assert!(
            challenge.contains("error=\"insufficient_scope\"") && challenge.ends_with("scope=\"mcp files:write\""),
            "{challenge}"
        );
        assert_eq!(r.challenge(Some(&Refusal::Unavailable("down".into()))), None);
    }
}
