//! Resources: the `Resource` and `ResourceTemplate` descriptions, `resources/list`,
//! `resources/templates/list`, `resources/read`, the per-resource `resources/subscribe` /
//! `resources/unsubscribe` of the session era (gone in 2026-07-28, where `subscriptions/listen`
//! in [`input`](super::input) replaces them) and the two resource notifications.
//!
//! Not here: the contents themselves ([`ResourceContents`] and the embedded forms belong to the
//! content module). 2026-07-28 results also carry `resultType`, `ttlMs` and `cacheScope`; they
//! stay in `extra` for now.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::*;

/// A resource a server can read, as listed by `resources/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Where the resource lives.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is, for a person or a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Size in bytes before any encoding, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons to show for it (2025-11-25 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Free metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A family of resources described by an RFC 6570 URI template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the template yields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type shared by every matching resource, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons (2025-11-25 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Free metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Builders: `Resource::new(uri, name)` and a method per optional member (pure data).
///
/// ```
/// use mcpwire::proto::mcp_types::Resource;
///
/// let readme = Resource::new("file:///README.md", "readme").mime_type("text/markdown").size(1024);
/// assert_eq!(readme.size, Some(1024));
/// ```
impl Resource {
    /// A resource with a URI and a name, the rest unset.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Resource {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            size: None,
            icons: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// `title`: the display name.
    pub fn title(mut self, title: impl Into<String>) -> Resource {
        self.title = Some(title.into());
        self
    }

    /// `description`: what it is, for a person or a model.
    pub fn description(mut self, description: impl Into<String>) -> Resource {
        self.description = Some(description.into());
        self
    }

    /// `mimeType`.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Resource {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// `annotations`: audience and priority hints.
    pub fn annotations(mut self, annotations: Annotations) -> Resource {
        self.annotations = Some(annotations);
        self
    }

    /// `icons`, replaced.
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Resource {
        self.icons = Some(icons.into_iter().collect());
        self
    }

    /// `_meta`, replaced.
    pub fn meta(mut self, meta: Map<String, Value>) -> Resource {
        self.meta = Some(meta);
        self
    }

    /// `size`: bytes before any encoding.
    pub fn size(mut self, size: u64) -> Resource {
        self.size = Some(size);
        self
    }
}

/// Builders: `ResourceTemplate::new(uri_template, name)` and a method per optional member (pure
/// data).
impl ResourceTemplate {
    /// A template with an RFC 6570 URI template and a name, the rest unset.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> ResourceTemplate {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            icons: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// `title`: the display name.
    pub fn title(mut self, title: impl Into<String>) -> ResourceTemplate {
        self.title = Some(title.into());
        self
    }

    /// `description`: what it is, for a person or a model.
    pub fn description(mut self, description: impl Into<String>) -> ResourceTemplate {
        self.description = Some(description.into());
        self
    }

    /// `mimeType`.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> ResourceTemplate {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// `annotations`: audience and priority hints.
    pub fn annotations(mut self, annotations: Annotations) -> ResourceTemplate {
        self.annotations = Some(annotations);
        self
    }

    /// `icons`, replaced.
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> ResourceTemplate {
        self.icons = Some(icons.into_iter().collect());
        self
    }

    /// `_meta`, replaced.
    pub fn meta(mut self, meta: Map<String, Value>) -> ResourceTemplate {
        self.meta = Some(meta);
        self
    }
}

/// Params of `resources/list`: an optional page cursor.
pub type ListResourcesRequestParams = super::PaginatedRequestParams;

/// Result of `resources/list`: one page of resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// This page.
    pub resources: Vec<Resource>,
    /// Cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here (2026-07-28: `resultType`, `ttlMs`, `cacheScope`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `resources/templates/list`: an optional page cursor.
pub type ListResourceTemplatesRequestParams = super::PaginatedRequestParams;

/// Result of `resources/templates/list`: one page of templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// This page.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here (2026-07-28: `resultType`, `ttlMs`, `cacheScope`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// The resource to read.
    pub uri: String,
    /// 2026-07-28: answers to the input requests of an earlier `input_required` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// 2026-07-28: the opaque state echoed back from an `input_required` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `resources/read`: the contents (a resource may yield several parts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ReadResourceResult {
    /// Text or blob contents.
    pub contents: Vec<ResourceContents>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here (2026-07-28: `resultType`, `ttlMs`, `cacheScope`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `resources/subscribe` and `resources/unsubscribe`: the resource concerned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscribeRequestParams {
    /// The resource to (un)subscribe.
    pub uri: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `resources/unsubscribe` (same shape as subscribe).
pub type UnsubscribeRequestParams = SubscribeRequestParams;

/// Params of `notifications/resources/updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedNotificationParams {
    /// The resource that changed (possibly a sub-resource of the subscribed one).
    pub uri: String,
    /// Notification metadata (2026-07-28: the subscription id).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

method!(
    /// `resources/list`: one page of the server's resources.
    ListResources, "resources/list", ClientToServer, ListResourcesRequestParams, ListResourcesResult, since V2024_11_05
);
method!(
    /// `resources/templates/list`: one page of the server's resource templates.
    ListResourceTemplates, "resources/templates/list", ClientToServer, ListResourceTemplatesRequestParams, ListResourceTemplatesResult, since V2024_11_05
);
method!(
    /// `resources/read`: the contents of one resource.
    ReadResource, "resources/read", ClientToServer, ReadResourceRequestParams, ReadResourceResult, since V2024_11_05
);
method!(
    /// `resources/subscribe`: ask for `notifications/resources/updated` about one resource.
    Subscribe, "resources/subscribe", ClientToServer, SubscribeRequestParams, EmptyResult, since V2024_11_05, removed V2026_07_28
);
method!(
    /// `resources/unsubscribe`: stop those notifications.
    Unsubscribe, "resources/unsubscribe", ClientToServer, UnsubscribeRequestParams, EmptyResult, since V2024_11_05, removed V2026_07_28
);
notification!(
    /// `notifications/resources/list_changed`: the list of resources changed.
    ResourceListChanged, "notifications/resources/list_changed", ServerToClient, EmptyParams, since V2024_11_05
);
notification!(
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated, "notifications/resources/updated", ServerToClient, ResourceUpdatedNotificationParams, since V2024_11_05
);

/// Every method this module declares.
pub(crate) const METHODS: &[MethodInfo] = &[
    MethodInfo::request::<ListResources>(),
    MethodInfo::request::<ListResourceTemplates>(),
    MethodInfo::request::<ReadResource>(),
    MethodInfo::request::<Subscribe>(),
    MethodInfo::request::<Unsubscribe>(),
    MethodInfo::notification::<ResourceListChanged>(),
    MethodInfo::notification::<ResourceUpdated>(),
];

super::decode::decode_via_value!(
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    Resource,
    ResourceTemplate
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::version::ProtocolVersion;
    use serde_json::json;

    /// Decodes `v` as `T`, checks that encoding gives `v` back, and returns the typed value.
    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&t).expect("encode"), v);
        t
    }

    #[test]
    fn builders_of_resources_templates_prompts_and_implementations() {
        let r = Resource::new("file:///a.txt", "a").title("A").description("d").mime_type("text/plain").size(3);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"uri": "file:///a.txt", "name": "a", "title": "A", "description": "d", "mimeType": "text/plain", "size": 3})
        );
        let t = ResourceTemplate::new("file:///{path}", "files").mime_type("text/plain");
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            json!({"uriTemplate": "file:///{path}", "name": "files", "mimeType": "text/plain"})
        );
        let p = Prompt::new("review").title("Review").argument(PromptArgument::new("code").required(true));
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"name": "review", "title": "Review", "arguments": [{"name": "code", "required": true}]})
        );
        let i = Implementation::new("srv", "1.0").title("Server").website_url("https://example.com");
        assert_eq!(
            serde_json::to_value(&i).unwrap(),
            json!({"name": "srv", "version": "1.0", "title": "Server", "websiteUrl": "https://example.com"})
        );
    }

    #[test]
    fn resource_with_every_member_and_an_unknown_one() {
        let r: Resource = rt(json!({
            "uri": "file:///a.txt", "name": "a", "title": "A", "description": "d",
            "mimeType": "text/plain", "size": 12,
            "annotations": {"audience": ["user"], "priority": 0.5},
            "icons": [{"src": "https://x/i.png"}], "_meta": {"k": 1}, "x-vendor": true
        }));
        assert_eq!(r.uri, "file:///a.txt");
        assert_eq!(r.mime_type.as_deref(), Some("text/plain"));
        assert_eq!(r.size, Some(12));
        assert_eq!(r.extra["x-vendor"], json!(true));
        // 2024-11-05 minimal shape: absent members stay absent.
        let r: Resource = rt(json!({"uri": "demo://1", "name": "one"}));
        assert!(r.title.is_none() && r.meta.is_none() && r.extra.is_empty());
    }

    #[test]
    fn list_results_2025_and_2026() {
        let l: ListResourcesResult = rt(json!({
            "resources": [{"uri": "demo://1", "name": "one"}], "nextCursor": "2"
        }));
        assert_eq!(l.next_cursor.as_deref(), Some("2"));
        // 2026-07-28 adds resultType / ttlMs / cacheScope, kept in `extra`.
        let l: ListResourcesResult = rt(json!({
            "cacheScope": "private", "resources": [], "resultType": "complete", "ttlMs": 0,
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
        }));
        assert_eq!(l.extra["ttlMs"], json!(0));
        assert!(l.meta.is_some());
        let t: ListResourceTemplatesResult = rt(json!({
            "resourceTemplates": [{"uriTemplate": "fixture://user/{id}", "name": "user",
                                   "mimeType": "application/json"}]
        }));
        assert_eq!(t.resource_templates[0].uri_template, "fixture://user/{id}");
    }

    #[test]
    fn list_params_absent_cursor_and_meta() {
        let p: ListResourcesRequestParams = rt(json!({}));
        assert_eq!(p, ListResourcesRequestParams::default());
        let p: ListResourcesRequestParams = rt(json!({"cursor": "res-2", "_meta": {"progressToken": 3}}));
        assert_eq!(p.cursor.as_deref(), Some("res-2"));
    }

    #[test]
    fn read_params_and_result() {
        let p: ReadResourceRequestParams = rt(json!({"uri": "demo://r/1"}));
        assert!(p.input_responses.is_none() && p.request_state.is_none());
        // A 2026-07-28 retry carrying input responses and the request state.
        let p: ReadResourceRequestParams = rt(json!({
            "uri": "demo://r/1", "requestState": "abc",
            "inputResponses": {"k": {"action": "decline"}},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}
        }));
        assert!(matches!(p.input_responses.unwrap()["k"], InputResponse::Elicit(_)));
        assert!(serde_json::from_value::<ReadResourceRequestParams>(json!({})).is_err());
        let r: ReadResourceResult = rt(json!({"contents": [
            {"uri": "demo://r/1", "mimeType": "text/plain", "text": "hi"},
            {"uri": "demo://r/2", "blob": "AAEC"}
        ]}));
        assert_eq!(r.contents.len(), 2);
    }

    #[test]
    fn notifications_and_subscribe() {
        let n: ResourceUpdatedNotificationParams = rt(json!({"uri": "demo://r/2"}));
        assert_eq!(n.uri, "demo://r/2");
        let n: ResourceUpdatedNotificationParams =
            rt(json!({"uri": "demo://r/2", "_meta": {"io.modelcontextprotocol/subscriptionId": 7}}));
        assert!(n.meta.is_some());
        let s: SubscribeRequestParams = rt(json!({"uri": "demo://r/2"}));
        assert_eq!(s.uri, "demo://r/2");
        let _: EmptyParams = rt(json!({}));
    }

    #[test]
    fn method_rows() {
        let names: Vec<_> = METHODS.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), 7);
        let sub = METHODS.iter().find(|m| m.name == "resources/subscribe").unwrap();
        assert_eq!(sub.direction, Direction::ClientToServer);
        assert!(sub.exists_in(ProtocolVersion::V2025_11_25));
        assert!(!sub.exists_in(ProtocolVersion::V2026_07_28));
        let upd = METHODS.iter().find(|m| m.name == "notifications/resources/updated").unwrap();
        assert!(upd.is_notification && upd.direction == Direction::ServerToClient);
        assert!(upd.exists_in(ProtocolVersion::V2026_07_28));
    }
}
