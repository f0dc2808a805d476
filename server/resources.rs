//! Resources: static resources (text, blob, or read by a handler), resource templates matched
//! by their RFC 6570 URI template, and subscriptions.
//!
//! - `resources/list` and `resources/templates/list`, paginated ([`ServerBuilder::page_size`]).
//! - `resources/read`: an exact URI first, then each template in the order added; a URI that
//!   matches nothing is -32002 "Resource not found" with `{"uri": …}` in `data` (the code of
//!   2025-11-25's `server/resources` "Error Handling"; the 2026-07-28 draft moves to -32602).
//! - `resources/subscribe` / `resources/unsubscribe`: per session; any URI is accepted (a
//!   resource may come to exist later). [`Server::resource_updated`] notifies the subscribers.
//!
//! URI templates: level 1 `{var}` (one value without `/`, `?`, `#` or `,`, percent-decoded),
//! `{+var}` (reserved expansion: any characters, `/` included) and `{/var}` (one `/segment`).
//! Other operators (`{?q}`, `{#f}`, `{.x}`, `{;p}`, `{&a}`) and several variables in one
//! expression never match; such templates are still listed.
//!
//! Not here: resource links and embedded resources in tool results and prompts (plain
//! [`ContentBlock`](crate::proto::mcp_types::ContentBlock)s).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{json, Map};

use super::{Server, ServerBuilder};
use crate::proto::jsonrpc::{ErrorCode, ErrorObject};
use crate::proto::mcp_types::{
    BlobResourceContents, ReadResourceResult, RequestMeta, Resource, ResourceContents, ResourceTemplate,
    TextResourceContents,
};

/// The future a resource handler returns, boxed.
pub type ResourceFuture = Pin<Box<dyn Future<Output = Result<ReadResourceResult, ErrorObject>> + Send>>;

pub(crate) type ReadFn = Arc<dyn Fn(ResourceRequest) -> ResourceFuture + Send + Sync>;

/// What a resource handler is asked to read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourceRequest {
    /// The URI the client asked for.
    pub uri: String,
    /// The template's variables, percent-decoded (empty for a static resource).
    pub variables: BTreeMap<String, String>,
    /// The request's `_meta`.
    pub meta: Option<RequestMeta>,
    pub(crate) context: Option<super::Context>,
}

impl PartialEq for ResourceRequest {
    /// Equal URIs, variables and `_meta` (the context is no value).
    fn eq(&self, other: &Self) -> bool {
        (&self.uri, &self.variables, &self.meta) == (&other.uri, &other.variables, &other.meta)
    }
}

impl ResourceRequest {
    /// The request's context: who the client is and the requests to it (elicitation,
    /// sampling, roots), which in a 2026-07-28 request become its `inputRequests`.
    pub fn context(&self) -> Option<&super::Context> {
        self.context.as_ref()
    }
}

pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    pub(crate) read: ReadFn,
}

pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    pub(crate) pattern: UriTemplate,
    pub(crate) read: ReadFn,
}

/// A [`Resource`] with a URI and a name, the rest unset.
pub fn resource(uri: impl Into<String>, name: impl Into<String>) -> Resource {
    Resource::new(uri, name)
}

/// A [`ResourceTemplate`] with a URI template and a name, the rest unset.
pub fn resource_template(uri_template: impl Into<String>, name: impl Into<String>) -> ResourceTemplate {
    ResourceTemplate::new(uri_template, name)
}

/// A read result holding one text part.
pub fn text_contents(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> ReadResourceResult {
    ReadResourceResult {
        contents: vec![ResourceContents::Text(TextResourceContents {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            text: text.into(),
            ..TextResourceContents::default()
        })],
        meta: None,
        extra: Map::new(),
    }
}

/// A read result holding one blob part (`blob` is base64).
pub fn blob_contents(uri: impl Into<String>, mime_type: Option<&str>, blob: impl Into<String>) -> ReadResourceResult {
    ReadResourceResult {
        contents: vec![ResourceContents::Blob(BlobResourceContents {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            blob: blob.into(),
            ..BlobResourceContents::default()
        })],
        meta: None,
        extra: Map::new(),
    }
}

/// The "Resource not found" error: -32002 with the URI in `data`.
pub fn resource_not_found(uri: &str) -> ErrorObject {
    let error = ErrorObject::new(ErrorCode::RESOURCE_NOT_FOUND, "Resource not found");
    error.clone().with_data(&json!({ "uri": uri })).unwrap_or(error)
}

fn boxed<F, Fut>(handler: F) -> ReadFn
where
    F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
{
    Arc::new(move |request| Box::pin(handler(request)) as ResourceFuture)
}

fn static_text(resource: &Resource, text: String) -> ReadFn {
    let (uri, mime) = (resource.uri.clone(), resource.mime_type.clone());
    boxed(move |_| {
        let result = text_contents(uri.clone(), mime.as_deref(), text.clone());
        async move { Ok(result) }
    })
}

fn static_blob(resource: &Resource, blob: String) -> ReadFn {
    let (uri, mime) = (resource.uri.clone(), resource.mime_type.clone());
    boxed(move |_| {
        let result = blob_contents(uri.clone(), mime.as_deref(), blob.clone());
        async move { Ok(result) }
    })
}

impl ServerBuilder {
    /// Adds a resource whose contents are this text (with the resource's `mimeType`).
    pub fn resource_text(mut self, resource: Resource, text: impl Into<String>) -> Self {
        let read = static_text(&resource, text.into());
        self.pending.resources.push(ResourceEntry { resource, read });
        self
    }

    /// Adds a resource whose contents are this base64 blob (with the resource's `mimeType`).
    pub fn resource_blob(mut self, resource: Resource, base64: impl Into<String>) -> Self {
        let read = static_blob(&resource, base64.into());
        self.pending.resources.push(ResourceEntry { resource, read });
        self
    }

    /// Adds a resource read by `handler` each time.
    pub fn resource<F, Fut>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        self.pending.resources.push(ResourceEntry { resource, read: boxed(handler) });
        self
    }

    /// Adds a resource template; `handler` reads each URI that matches it, with the
    /// template's variables in [`ResourceRequest::variables`].
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        let pattern = UriTemplate::parse(&template.uri_template);
        self.pending.templates.push(TemplateEntry { template, pattern, read: boxed(handler) });
        self
    }

    /// Advertises the `resources` capability even with no resource at build time (for a server
    /// that adds them while serving).
    pub fn enable_resources(mut self) -> Self {
        self.pending.features.resources = true;
        self
    }
}

impl Server {
    /// Adds (or replaces) a resource while serving, read by `handler`, and sends
    /// `notifications/resources/list_changed`.
    pub fn add_resource<F, Fut>(&self, resource: Resource, handler: F)
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        let entry = ResourceEntry { read: boxed(handler), resource };
        self.inner.registry.resources.write().expect("resources lock").insert(entry.resource.uri.clone(), entry);
        self.inner.registry.broadcast("notifications/resources/list_changed");
    }

    /// Adds (or replaces) a text resource while serving, and sends `list_changed`.
    pub fn add_resource_text(&self, resource: Resource, text: impl Into<String>) {
        let read = static_text(&resource, text.into());
        let entry = ResourceEntry { read, resource };
        self.inner.registry.resources.write().expect("resources lock").insert(entry.resource.uri.clone(), entry);
        self.inner.registry.broadcast("notifications/resources/list_changed");
    }

    /// Removes a resource (by URI) while serving; sends `list_changed` when it was there.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = self.inner.registry.resources.write().expect("resources lock").remove(uri);
        if removed {
            self.inner.registry.broadcast("notifications/resources/list_changed");
        }
        removed
    }

    /// Adds (or replaces) a resource template while serving, and sends `list_changed`.
    pub fn add_resource_template<F, Fut>(&self, template: ResourceTemplate, handler: F)
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        let pattern = UriTemplate::parse(&template.uri_template);
        let key = template.uri_template.clone();
        let entry = TemplateEntry { template, pattern, read: boxed(handler) };
        self.inner.registry.templates.write().expect("templates lock").insert(key, entry);
        self.inner.registry.broadcast("notifications/resources/list_changed");
    }

    /// Removes a resource template (by its URI template); sends `list_changed` when it was there.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        let removed = self.inner.registry.templates.write().expect("templates lock").remove(uri_template);
        if removed {
            self.inner.registry.broadcast("notifications/resources/list_changed");
        }
        removed
    }

    /// The resources, in the order added.
    pub fn resources(&self) -> Vec<Resource> {
        self.inner.registry.resources.read().expect("resources lock").values().map(|e| e.resource.clone()).collect()
    }

    /// The resource templates, in the order added.
    pub fn resource_templates(&self) -> Vec<ResourceTemplate> {
        self.inner.registry.templates.read().expect("templates lock").values().map(|e| e.template.clone()).collect()
    }
}

/// Finds what reads `uri`: the handler and the template variables.
pub(crate) fn find(server: &super::Inner, uri: &str) -> Option<(ReadFn, BTreeMap<String, String>)> {
    if let Some(entry) = server.registry.resources.read().expect("resources lock").get(uri) {
        return Some((entry.read.clone(), BTreeMap::new()));
    }
    let templates = server.registry.templates.read().expect("templates lock");
    let found = templates.values().find_map(|t| t.pattern.matches(uri).map(|vars| (t.read.clone(), vars)));
    found
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    /// A variable: its name, and whether its value may hold `/` (`{+var}`).
    Var {
        name: String,
        reserved: bool,
    },
    /// `{/var}`: a `/` then one segment.
    Segment(String),
    /// An expression we do not match.
    Unsupported,
}

/// A parsed RFC 6570 URI template, for matching URIs against it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

impl UriTemplate {
    pub(crate) fn parse(template: &str) -> UriTemplate {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                parts.push(Part::Literal(rest[open..].to_owned()));
                rest = "";
                break;
            };
            let expression = &rest[open + 1..open + close];
            let (op, names) = match expression.chars().next() {
                Some(c @ ('+' | '/' | '#' | '.' | ';' | '?' | '&')) => (Some(c), &expression[1..]),
                _ => (None, expression),
            };
            let name = names.trim_end_matches('*');
            let simple_name = !name.is_empty() && !name.contains([',', ':']);
            parts.push(match (op, simple_name) {
                (None, true) => Part::Var { name: name.to_owned(), reserved: false },
                (Some('+'), true) => Part::Var { name: name.to_owned(), reserved: true },
                (Some('/'), true) => Part::Segment(name.to_owned()),
                _ => Part::Unsupported,
            });
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        UriTemplate { parts }
    }

    /// The variables when `uri` matches, percent-decoded.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        match_parts(&self.parts, uri, &mut vars).then_some(vars)
    }
}

fn match_parts(parts: &[Part], input: &str, vars: &mut BTreeMap<String, String>) -> bool {
    let Some((first, rest)) = parts.split_first() else { return input.is_empty() };
    match first {
        Part::Literal(lit) => input.strip_prefix(lit.as_str()).is_some_and(|tail| match_parts(rest, tail, vars)),
        Part::Unsupported => false,
        Part::Var { name, reserved } => {
            let allowed = |c: char| *reserved || !matches!(c, '/' | '?' | '#' | ',');
            let limit = input.find(|c: char| !allowed(c)).unwrap_or(input.len());
            // Longest first, so that a later literal takes the last occurrence it can.
            for end in (1..=limit).rev().filter(|&e| input.is_char_boundary(e)) {
                if match_parts(rest, &input[end..], vars) {
                    vars.insert(name.clone(), percent_decode(&input[..end]));
                    return true;
                }
            }
            false
        }
        Part::Segment(name) => {
            let Some(tail) = input.strip_prefix('/') else { return false };
            let limit = tail.find(['/', '?', '#']).unwrap_or(tail.len());
            for end in (1..=limit).rev().filter(|&e| tail.is_char_boundary(e)) {
                if match_parts(rest, &tail[end..], vars) {
                    vars.insert(name.clone(), percent_decode(&tail[..end]));
                    return true;
                }
            }
            false
        }
    }
}

/// `%XX` sequences decoded; the text as written when the result would not be UTF-8.
fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let (hi, lo) = (bytes[i + 1], bytes[i + 2]);
            if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() {
                let digit = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                out.push(digit(hi) * 16 + digit(lo));
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template).matches(uri).map(|v| v.into_iter().collect())
    }

    fn pairs(list: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(list.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect())
    }

    #[test]
    fn level_one_variables() {
        assert_eq!(vars("test://template/{id}/data", "test://template/123/data"), pairs(&[("id", "123")]));
        assert_eq!(vars("test://template/{id}/data", "test://template/1/2/data"), None);
        assert_eq!(vars("test://template/{id}/data", "test://template//data"), None);
        assert_eq!(vars("test://template/{id}/data", "test://template/123/datum"), None);
        assert_eq!(vars("u://{a}-{b}", "u://x-y-z"), pairs(&[("a", "x-y"), ("b", "z")]));
        assert_eq!(vars("u://{name}", "u://caf%C3%A9%20au%20lait"), pairs(&[("name", "café au lait")]));
        assert_eq!(vars("u://{name}", "u://100%"), pairs(&[("name", "100%")]));
    }

    #[test]
    fn reserved_and_path_segments() {
        assert_eq!(vars("file:///{+path}", "file:///a/b/c.txt"), pairs(&[("path", "a/b/c.txt")]));
        assert_eq!(vars("repo://x{/owner}{/name}", "repo://x/me/proj"), pairs(&[("name", "proj"), ("owner", "me")]));
        assert_eq!(vars("repo://x{/owner}", "repo://x/me/proj"), None);
        assert_eq!(vars("search://{?q}", "search://?q=1"), None);
        assert_eq!(vars("u://{a,b}", "u://1,2"), None);
    }
}
