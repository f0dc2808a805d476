//! The stateless flow of 2026-07-28: a server that needs something from the client (sampling,
//! elicitation, roots) answers with an [`InputRequiredResult`]; the client retries the original
//! request with [`InputResponses`] and the echoed `requestState` ([`InputResponseRequestParams`]).
//! Also `subscriptions/listen`, the long-lived request that replaces per-resource subscriptions
//! and list-changed capabilities, and its `notifications/subscriptions/acknowledged`.
//!
//! Not here: the params and results of the embedded requests themselves (see
//! [`sampling`](super::sampling), [`elicitation`](super::elicitation), [`roots`](super::roots)).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::open_enum::const_tag;
use super::*;
use crate::proto::jsonrpc::Id;

const CREATE_MESSAGE: &str = "sampling/createMessage";
const ELICIT: &str = "elicitation/create";
const LIST_ROOTS: &str = "roots/list";

/// One request the server needs answered before it can finish: `{method, params}` without an
/// id.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageRequestParams),
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `roots/list`; `None` when it has no `params`.
    ListRoots(Option<ListRootsRequestParams>),
    /// Another method, extra members, or params that did not fit: the whole object as written.
    Other(Map<String, Value>),
}

impl InputRequest {
    /// The `method` of this request, if it has a string one.
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::CreateMessage(_) => Some(CREATE_MESSAGE),
            Self::Elicit(_) => Some(ELICIT),
            Self::ListRoots(_) => Some(LIST_ROOTS),
            Self::Other(m) => m.get("method").and_then(Value::as_str),
        }
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        fn entry<S: Serializer, P: Serialize>(s: S, method: &str, params: Option<&P>) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(None)?;
            map.serialize_entry("method", method)?;
            if let Some(p) = params {
                map.serialize_entry("params", p)?;
            }
            map.end()
        }
        match self {
            Self::CreateMessage(p) => entry(s, CREATE_MESSAGE, Some(p)),
            Self::Elicit(p) => entry(s, ELICIT, Some(p)),
            Self::ListRoots(p) => entry(s, LIST_ROOTS, p.as_ref()),
            Self::Other(m) => m.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::deserialize(d)?;
        let only_known_keys = map.keys().all(|k| k == "method" || k == "params");
        let params = map.get("params").cloned();
        let typed = match (only_known_keys, map.get("method").and_then(Value::as_str)) {
            (true, Some(CREATE_MESSAGE)) => {
                params.and_then(|p| serde_json::from_value(p).ok()).map(Self::CreateMessage)
            }
            (true, Some(ELICIT)) => params.and_then(|p| serde_json::from_value(p).ok()).map(Self::Elicit),
            (true, Some(LIST_ROOTS)) => match params {
                None => Some(Self::ListRoots(None)),
                Some(p) => serde_json::from_value(p).ok().map(|p| Self::ListRoots(Some(p))),
            },
            _ => None,
        };
        Ok(typed.unwrap_or(Self::Other(map)))
    }
}

/// The input requests of an [`InputRequiredResult`], by a key the server chooses; the client
/// answers under the same keys.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answer to one [`InputRequest`]: the result the request would have had.
///
/// The wire form carries no tag; decoding picks by shape (`action` → elicitation, `roots` →
/// roots, `model` → sampling) and keeps anything else whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InputResponse {
    /// Answer to `sampling/createMessage`.
    CreateMessage(Box<CreateMessageResult>),
    /// Answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// Answer to `roots/list`.
    ListRoots(ListRootsResult),
    /// Something else, as written.
    Other(Map<String, Value>),
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::deserialize(d)?;
        let value = || Value::Object(map.clone());
        let typed = if map.contains_key("action") {
            serde_json::from_value(value()).ok().map(Self::Elicit)
        } else if map.contains_key("roots") {
            serde_json::from_value(value()).ok().map(Self::ListRoots)
        } else if map.contains_key("model") {
            serde_json::from_value(value()).ok().map(Self::CreateMessage)
        } else {
            None
        };
        Ok(typed.unwrap_or(Self::Other(map)))
    }
}

/// The client's answers, under the keys of the [`InputRequests`] they answer.
pub type InputResponses = BTreeMap<String, InputResponse>;

const_tag!(
    /// `resultType: "input_required"`.
    InputRequiredType = "input_required"
);

/// A result saying the server needs input first (2026-07-28). It can stand in for the result
/// of `tools/call`, `prompts/get` and `resources/read`; only its `resultType` tells it apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always `"input_required"`.
    pub result_type: InputRequiredType,
    /// What the client must answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state to send back unchanged with the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The members a retried request adds to its params (2026-07-28). The request types that can
/// be retried (`prompts/get`, `resources/read`, `tools/call`) carry the same two fields
/// directly; this struct is for code that handles them generically.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputResponseRequestParams {
    /// Answers to the earlier input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` of the earlier result, unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Which notifications a `subscriptions/listen` stream should carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// URIs to get `notifications/resources/updated` about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `subscriptions/listen`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct SubscriptionsListenRequestParams {
    /// What to listen for.
    pub notifications: SubscriptionFilter,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `_meta` of a [`SubscriptionsListenResult`]: which subscription ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenResultMeta {
    /// The id of the `subscriptions/listen` request.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: Id,
    /// The server's name and version.
    #[serde(rename = "io.modelcontextprotocol/serverInfo", default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<Implementation>,
    /// Other metadata.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `subscriptions/listen`, sent when the server closes the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct SubscriptionsListenResult {
    /// Which subscription this closes.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionsListenResultMeta,
    /// Members not modelled here (`resultType`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/subscriptions/acknowledged`: what the server agreed to send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The notifications the stream will carry (may be fewer than asked).
    pub notifications: SubscriptionFilter,
    /// Notification metadata, normally `io.modelcontextprotocol/subscriptionId`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

method!(
    /// `subscriptions/listen`: open a stream of list-changed and resource-updated
    /// notifications (2026-07-28).
    SubscriptionsListen, "subscriptions/listen", ClientToServer, SubscriptionsListenRequestParams, SubscriptionsListenResult, since V2026_07_28
);
notification!(
    /// `notifications/subscriptions/acknowledged`: the first message of a listen stream.
    SubscriptionsAcknowledged, "notifications/subscriptions/acknowledged", ServerToClient, SubscriptionsAcknowledgedNotificationParams, since V2026_07_28
);

/// Every method this module declares.
pub(crate) const METHODS: &[MethodInfo] =
    &[MethodInfo::request::<SubscriptionsListen>(), MethodInfo::notification::<SubscriptionsAcknowledged>()];

super::decode::decode_via_value!(InputRequiredResult, SubscriptionsListenRequestParams, SubscriptionsListenResult);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::version::ProtocolVersion;
    use serde_json::json;

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&t).expect("encode"), v);
        t
    }

    #[test]
    fn input_required_result_with_requests_and_state() {
        let r: InputRequiredResult = rt(json!({
            "resultType": "input_required",
            "inputRequests": {
                "github_login": {"method": "elicitation/create", "params": {
                    "message": "Please provide your GitHub username",
                    "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string"}}, "required": ["name"]}}},
                "capital_of_france": {"method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user",
                                  "content": {"type": "text", "text": "Capital of France?"}}],
                    "maxTokens": 100}},
                "where": {"method": "roots/list"},
                "future": {"method": "something/new", "params": {"x": 1}}
            },
            "requestState": "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0"
        }));
        let reqs = r.input_requests.unwrap();
        assert!(matches!(reqs["github_login"], InputRequest::Elicit(ElicitRequestParams::Form(_))));
        assert!(matches!(reqs["capital_of_france"], InputRequest::CreateMessage(_)));
        assert_eq!(reqs["where"], InputRequest::ListRoots(None));
        assert!(matches!(reqs["future"], InputRequest::Other(_)));
        assert_eq!(reqs["future"].method(), Some("something/new"));
        assert_eq!(r.request_state.as_deref(), Some("eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0"));
        // Only `resultType: "input_required"` decodes as this type.
        let r: InputRequiredResult = rt(json!({"resultType": "input_required", "requestState": "s"}));
        assert!(r.input_requests.is_none());
        let done = json!({"resultType": "complete", "content": []});
        assert!(serde_json::from_value::<InputRequiredResult>(done).is_err());
    }

    #[test]
    fn retried_request_carries_responses_and_state() {
        let p: InputResponseRequestParams = rt(json!({
            "inputResponses": {
                "github_login": {"action": "accept", "content": {"name": "octocat"}},
                "capital_of_france": {"role": "assistant",
                    "content": {"type": "text", "text": "Paris."},
                    "model": "claude-3-sonnet-20240307", "stopReason": "endTurn"},
                "where": {"roots": [{"uri": "file:///p"}]},
                "odd": {"something": true}
            },
            "requestState": "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}
        }));
        let resp = p.input_responses.unwrap();
        assert!(matches!(resp["github_login"], InputResponse::Elicit(_)));
        assert!(matches!(resp["capital_of_france"], InputResponse::CreateMessage(_)));
        assert!(matches!(resp["where"], InputResponse::ListRoots(_)));
        assert!(matches!(resp["odd"], InputResponse::Other(_)));
        // The same members inside a typed request of a feature module.
        let g: GetPromptRequestParams = rt(json!({
            "name": "review", "requestState": "s",
            "inputResponses": {"k": {"action": "cancel"}}
        }));
        assert_eq!(g.request_state.as_deref(), Some("s"));
    }

    #[test]
    fn subscriptions_listen_exchange() {
        let p: SubscriptionsListenRequestParams = rt(json!({
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
                      "io.modelcontextprotocol/clientCapabilities": {}},
            "notifications": {"toolsListChanged": true,
                              "resourceSubscriptions": ["file:///project/config.json"]}
        }));
        assert_eq!(p.notifications.tools_list_changed, Some(true));
        assert!(p.notifications.prompts_list_changed.is_none());
        let ack: SubscriptionsAcknowledgedNotificationParams = rt(json!({
            "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"},
            "notifications": {"toolsListChanged": true,
                              "resourceSubscriptions": ["file:///project/config.json"]}
        }));
        assert_eq!(ack.notifications, p.notifications);
        let done: SubscriptionsListenResult = rt(json!({
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}
        }));
        assert_eq!(done.meta.subscription_id, Id::String("listen-1".into()));
        assert_eq!(done.extra["resultType"], "complete");
        let done: SubscriptionsListenResult = rt(json!({
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": 4,
                      "io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
        }));
        assert_eq!(done.meta.subscription_id, Id::Number(4));
        assert!(done.meta.server_info.is_some());
    }

    #[test]
    fn method_rows() {
        for m in METHODS {
            assert_eq!(m.since, ProtocolVersion::V2026_07_28);
            assert!(!m.exists_in(ProtocolVersion::V2025_11_25));
        }
        assert_eq!(METHODS[0].direction, Direction::ClientToServer);
        assert_eq!(METHODS[1].direction, Direction::ServerToClient);
    }
}
