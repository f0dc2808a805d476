//! Completion: `completion/complete`, which asks the server for values of a prompt argument or
//! a resource-template variable, and its `CompleteResult`.
//!
//! The `ref` member is typed for the two reference kinds of the spec (`ref/prompt`,
//! `ref/resource`); any other kind is kept as written.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::*;

/// Names a prompt as the subject of a completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptReference {
    /// The prompt's name.
    pub name: String,
    /// Display name (2025-06-18 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Names a resource template as the subject of a completion (called `ResourceReference`
/// before 2025-06-18; same wire shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// The URI template (or URI).
    pub uri: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `ref` of a completion request, told apart by its `type` member.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionReference {
    /// `type: "ref/prompt"`.
    Prompt(PromptReference),
    /// `type: "ref/resource"`.
    ResourceTemplate(ResourceTemplateReference),
    /// Any other reference kind (or a known one that did not fit), kept whole.
    Other(Map<String, Value>),
}

const REF_PROMPT: &str = "ref/prompt";
const REF_RESOURCE: &str = "ref/resource";

impl Serialize for CompletionReference {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn tagged<T: Serialize>(tag: &str, v: &T) -> Result<Value, serde_json::Error> {
            let mut value = serde_json::to_value(v)?;
            if let Value::Object(map) = &mut value {
                map.insert("type".into(), Value::String(tag.into()));
            }
            Ok(value)
        }
        let value = match self {
            Self::Prompt(p) => tagged(REF_PROMPT, p),
            Self::ResourceTemplate(r) => tagged(REF_RESOURCE, r),
            Self::Other(m) => return m.serialize(s),
        }
        .map_err(serde::ser::Error::custom)?;
        value.serialize(s)
    }
}

impl<'de> Deserialize<'de> for CompletionReference {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = Map::deserialize(d)?;
        let known = match map.get("type").and_then(Value::as_str) {
            Some(REF_PROMPT) => Some(REF_PROMPT),
            Some(REF_RESOURCE) => Some(REF_RESOURCE),
            _ => None,
        };
        if let Some(tag) = known {
            let ty = map.remove("type");
            let value = Value::Object(map.clone());
            let parsed = if tag == REF_PROMPT {
                serde_json::from_value(value).map(Self::Prompt)
            } else {
                serde_json::from_value(value).map(Self::ResourceTemplate)
            };
            if let Ok(parsed) = parsed {
                return Ok(parsed);
            }
            if let Some(ty) = ty {
                map.insert("type".into(), ty);
            }
        }
        Ok(Self::Other(map))
    }
}

/// The argument being completed and what has been typed so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteArgument {
    /// Argument (or template variable) name.
    pub name: String,
    /// The partial value to complete.
    pub value: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Values already chosen for other arguments (2025-06-18 on).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompleteContext {
    /// Argument name to resolved value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct CompleteRequestParams {
    /// What is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument and its partial value.
    pub argument: CompleteArgument,
    /// Other arguments already resolved (2025-06-18 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The suggestions of a [`CompleteResult`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values (at most 100).
    pub values: Vec<String>,
    /// How many values exist in all, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than those sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here (2026-07-28: `resultType`).
    #[serde(flatten)]
    pub extra: Extra,
}

method!(
    /// `completion/complete`: suggestions for an argument value.
    Complete, "completion/complete", ClientToServer, CompleteRequestParams, CompleteResult, since V2024_11_05
);

/// Every method this module declares.
pub(crate) const METHODS: &[MethodInfo] = &[MethodInfo::request::<Complete>()];

super::decode::decode_via_value!(CompleteRequestParams, CompleteResult);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&t).expect("encode"), v);
        t
    }

    #[test]
    fn prompt_reference() {
        let p: CompleteRequestParams = rt(json!({
            "ref": {"type": "ref/prompt", "name": "completable-prompt"},
            "argument": {"name": "department", "value": "S"}
        }));
        match &p.reference {
            CompletionReference::Prompt(r) => assert_eq!(r.name, "completable-prompt"),
            other => panic!("{other:?}"),
        }
        assert_eq!(p.argument.value, "S");
        assert!(p.context.is_none());
    }

    #[test]
    fn resource_template_reference_with_context() {
        let p: CompleteRequestParams = rt(json!({
            "ref": {"type": "ref/resource", "uri": "fixture://user/{user_id}/profile"},
            "argument": {"name": "user_id", "value": "b"},
            "context": {"arguments": {"org": "acme"}}
        }));
        assert!(matches!(p.reference, CompletionReference::ResourceTemplate(ref r)
            if r.uri == "fixture://user/{user_id}/profile"));
        assert_eq!(p.context.unwrap().arguments.unwrap()["org"], "acme");
    }

    #[test]
    fn unknown_or_malformed_reference_is_kept() {
        let p: CompleteRequestParams = rt(json!({
            "ref": {"type": "ref/tool", "name": "t"}, "argument": {"name": "a", "value": ""}
        }));
        assert!(matches!(p.reference, CompletionReference::Other(_)));
        // A prompt reference without its name does not fit and stays whole too.
        let p: CompleteRequestParams = rt(json!({
            "ref": {"type": "ref/prompt"}, "argument": {"name": "a", "value": ""}
        }));
        assert!(matches!(p.reference, CompletionReference::Other(_)));
    }

    #[test]
    fn result() {
        let r: CompleteResult = rt(json!({"completion": {"values": ["rust", "ruby"], "total": 2, "hasMore": false}}));
        assert_eq!(r.completion.values, ["rust", "ruby"]);
        assert_eq!(r.completion.has_more, Some(false));
        let r: CompleteResult = rt(json!({"completion": {"values": []}, "resultType": "complete"}));
        assert!(r.completion.total.is_none());
    }
}
