//! Content: what tools return, prompts hold and sampling exchanges — text, image, audio,
//! resource links and embedded resources (`ContentBlock`), the 2025-11-25 sampling blocks
//! (`ToolUseContent`, `ToolResultContent`, `SamplingMessageContentBlock`), annotations, roles,
//! and resource contents (`TextResourceContents` / `BlobResourceContents`).
//!
//! Not here: resources, prompts and sampling messages themselves (their own modules).
//!
//! The tagged unions are decoded by hand: the `type` (or, for resource contents, which of
//! `text`/`blob` is present) picks the variant, and an object of an unknown `type` is kept
//! whole in an `Other` variant so that it survives a round trip.

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use super::decode::deserialize_with_extra;
use super::{meta::open_string_enum_serde, Extra, Icon};

/// The sender or recipient of a message ("Role"): `user` or `assistant`.
///
/// Open: an unknown role is kept in [`Role::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// Any other value, as written.
    Other(String),
}

impl Role {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Other(s) => s,
        }
    }
}

impl From<String> for Role {
    fn from(s: String) -> Self {
        match s.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            _ => Role::Other(s),
        }
    }
}

open_string_enum_serde!(Role);

/// Hints for the client about how to use an object ("Annotations"; `Annotated` in 2024-11-05).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the object is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 to 1, spelled as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Number>,
    /// 2025-06-18: ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type: "text"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

// Hand-written (see `decode`): the content of most tool results.
deserialize_with_extra!(TextContent, "text content",
    required { text: String = "text" }
    optional { annotations: Annotations = "annotations", meta: Map<String, Value> = "_meta" }
);

/// `type: "image"`: base64 image data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64 data.
    pub data: String,
    /// MIME type of the image.
    pub mime_type: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type: "audio"` (2025-03-26): base64 audio data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64 data.
    pub data: String,
    /// MIME type of the audio.
    pub mime_type: String,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type: "resource_link"` (2025-06-18): a pointer to a resource, not its contents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// URI of the resource.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// 2025-11-25: icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type: "resource"`: a resource's contents inlined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type: "tool_use"` (2025-11-25): the model asks to call a tool during sampling.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// Id that the matching `tool_result` refers to.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    pub input: Map<String, Value>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type: "tool_result"` (2025-11-25): the outcome of a `tool_use`, sent back to the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The `id` of the `tool_use` this answers.
    pub tool_use_id: String,
    /// What the tool returned.
    pub content: Vec<ContentBlock>,
    /// Structured output (an object in 2025-11-25, any JSON in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One piece of content in a tool result, prompt message or sampling message ("ContentBlock").
///
/// The variant structs do not hold `type`: the enum writes it. (A variant struct decoded on its
/// own keeps `type` in its `extra`; wrapping such a struct in the enum replaces it.)
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `text`.
    Text(TextContent),
    /// `image`.
    Image(ImageContent),
    /// `audio`.
    Audio(AudioContent),
    /// `resource_link`.
    ResourceLink(ResourceLink),
    /// `resource`.
    Resource(EmbeddedResource),
    /// Any other `type`: the whole object, `type` included, as written.
    Other(Map<String, Value>),
}

/// Content of a sampling message from 2025-11-25 on ("SamplingMessageContentBlock").
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingMessageContentBlock {
    /// `text`.
    Text(TextContent),
    /// `image`.
    Image(ImageContent),
    /// `audio`.
    Audio(AudioContent),
    /// `tool_use`.
    ToolUse(ToolUseContent),
    /// `tool_result`.
    ToolResult(ToolResultContent),
    /// Any other `type`: the whole object, `type` included, as written.
    Other(Map<String, Value>),
}

/// Decodes an object, without its `type`, as `T`.
fn from_map<T: serde::de::DeserializeOwned, E: serde::de::Error>(map: Map<String, Value>) -> Result<T, E> {
    serde_json::from_value(Value::Object(map)).map_err(E::custom)
}

/// Splits off the `type` of a tagged object; `None` if it is missing or not a string.
fn take_type(map: &mut Map<String, Value>) -> Option<String> {
    match map.get("type") {
        Some(Value::String(_)) => match map.remove("type") {
            Some(Value::String(t)) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Implements `Serialize` and `Deserialize` for a union of content kinds tagged by `type`:
/// each listed variant holds a struct without the tag, `Other` keeps an unknown kind whole.
macro_rules! tagged_union {
    ($union:ident, $what:literal, { $($variant:ident($inner:ty) => $tag:literal),+ $(,)? }) => {
        impl Serialize for $union {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                // serde's internal tagging writes `type` first, then the kind's own members,
                // straight to the output (a 64 KiB text is not copied into a `Value` first).
                #[derive(Serialize)]
                #[serde(tag = "type")]
                enum Tagged<'a> {
                    $(#[serde(rename = $tag)] $variant(&'a $inner),)+
                }
                match self {
                    // A `type` among the extra members (only a hand-built block has one) would
                    // be written twice: the tag's value wins, as it always has.
                    $($union::$variant(c) if c.extra.contains_key("type") => {
                        let mut map = match serde_json::to_value(c).map_err(S::Error::custom)? {
                            Value::Object(map) => map,
                            _ => return Err(S::Error::custom(concat!($what, " did not encode as an object"))),
                        };
                        map.insert("type".to_owned(), Value::String($tag.to_owned()));
                        map.serialize(s)
                    })+
                    $($union::$variant(c) => Tagged::$variant(c).serialize(s),)+
                    $union::Other(m) => m.serialize(s),
                }
            }
        }

        impl<'de> Deserialize<'de> for $union {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct UnionVisitor;
                impl<'de> serde::de::Visitor<'de> for UnionVisitor {
                    type Value = $union;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<$union, A::Error> {
                        let mut map = Map::new();
                        // A block usually starts with its `type`: a text block then decodes
                        // straight from the input, its text never copied into a `Value` first.
                        if let Some(key) = access.next_key::<super::decode::Key<'de>>()? {
                            let value: Value = access.next_value()?;
                            if key.as_str() == "type" && value == "text" {
                                let text = TextContent::from_map_access(access)?;
                                if text.extra.contains_key("type") {
                                    return Err(A::Error::duplicate_field("type"));
                                }
                                return Ok($union::Text(text));
                            }
                            map.insert(key.into_string(), value);
                        }
                        while let Some((key, value)) = access.next_entry::<String, Value>()? {
                            map.insert(key, value);
                        }
                        let Some(ty) = take_type(&mut map) else {
                            return Err(A::Error::custom(concat!($what, " without a string `type`")));
                        };
                        Ok(match ty.as_str() {
                            $($tag => $union::$variant(from_map(map)?),)+
                            _ => {
                                map.insert("type".to_owned(), Value::String(ty));
                                $union::Other(map)
                            }
                        })
                    }
                }
                d.deserialize_map(UnionVisitor)
            }
        }
    };
}

tagged_union!(ContentBlock, "content block", {
    Text(TextContent) => "text",
    Image(ImageContent) => "image",
    Audio(AudioContent) => "audio",
    ResourceLink(ResourceLink) => "resource_link",
    Resource(EmbeddedResource) => "resource",
});

tagged_union!(SamplingMessageContentBlock, "sampling content", {
    Text(TextContent) => "text",
    Image(ImageContent) => "image",
    Audio(AudioContent) => "audio",
    ToolUse(ToolUseContent) => "tool_use",
    ToolResult(ToolResultContent) => "tool_result",
});

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        ContentBlock::Text(c)
    }
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent { text: text.into(), ..Default::default() })
    }
}

/// Text contents of a resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// URI of the resource.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Binary contents of a resource, base64.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// URI of the resource.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64 data.
    pub blob: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The contents of a resource: text or blob, told apart by which member is present
/// (`text` wins if both are). An object with neither is kept whole in `Other`.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceContents {
    /// Has `text`.
    Text(TextResourceContents),
    /// Has `blob`.
    Blob(BlobResourceContents),
    /// Has neither, as written.
    Other(Map<String, Value>),
}

impl Serialize for ResourceContents {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ResourceContents::Text(c) => c.serialize(s),
            ResourceContents::Blob(c) => c.serialize(s),
            ResourceContents::Other(m) => m.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::deserialize(d)?;
        Ok(if map.contains_key("text") {
            ResourceContents::Text(from_map(map)?)
        } else if map.contains_key("blob") {
            ResourceContents::Blob(from_map(map)?)
        } else {
            ResourceContents::Other(map)
        })
    }
}

impl ResourceContents {
    /// The resource's URI, if the contents have one.
    pub fn uri(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(c) => Some(&c.uri),
            ResourceContents::Blob(c) => Some(&c.uri),
            ResourceContents::Other(m) => m.get("uri").and_then(Value::as_str),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let typed: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), v);
        typed
    }

    #[test]
    fn blocks_decode_alike_from_text_and_from_values_whatever_the_member_order() {
        let texts = [
            r#"{"type":"text","text":"a\"b","_meta":{"k":1},"x":[1]}"#,
            r#"{"text":"late","annotations":{"priority":1},"type":"text"}"#,
            r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#,
            r#"{"data":"AA==","type":"audio","mimeType":"audio/wav"}"#,
            r#"{"type":"novel","payload":{"a":1}}"#,
        ];
        for text in texts {
            let from_text: ContentBlock = serde_json::from_str(text).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            let from_value: ContentBlock = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(from_text, from_value, "{text}");
            assert_eq!(serde_json::to_value(&from_text).unwrap(), value, "{text}");
        }
        let ContentBlock::Text(first) = serde_json::from_str(texts[0]).unwrap() else { panic!("not text") };
        assert_eq!((first.text.as_str(), first.extra.len()), ("a\"b", 1));
        let twice = r#"{"type":"text","text":"t","type":"image"}"#;
        for bad in [r#"{"text":"no type"}"#, r#"{"type":"text"}"#, r#"{"type":7,"text":"t"}"#, "[1]", twice] {
            assert!(serde_json::from_str::<ContentBlock>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_type_among_the_extra_members_is_written_once_with_the_tag_value() {
        let mut text = TextContent { text: "t".into(), ..TextContent::default() };
        text.extra.insert("type".into(), json!("image"));
        text.extra.insert("x".into(), json!(1));
        let written = serde_json::to_string(&ContentBlock::Text(text)).unwrap();
        assert_eq!(written.matches("\"type\"").count(), 1, "{written}");
        assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), json!({"type": "text", "text": "t", "x": 1}));
    }

    #[test]
    fn text_block_with_annotations() {
        let b: ContentBlock = round_trip(json!({
            "type": "text", "text": "hi",
            "annotations": {"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2025-01-01T00:00:00Z"}
        }));
        let ContentBlock::Text(t) = b else { panic!("not text") };
        assert_eq!(t.text, "hi");
        let a = t.annotations.unwrap();
        assert_eq!(a.audience.unwrap(), [Role::User, Role::Assistant]);
        assert!(t.extra.is_empty(), "type must not leak into extra");
    }

    #[test]
    fn priority_keeps_its_spelling() {
        let b: ContentBlock = round_trip(json!({"type": "text", "text": "x", "annotations": {"priority": 1}}));
        assert!(serde_json::to_string(&b).unwrap().contains("\"priority\":1}"));
        let b: ContentBlock = round_trip(json!({"type": "text", "text": "x", "annotations": {"priority": 1.0}}));
        assert!(serde_json::to_string(&b).unwrap().contains("\"priority\":1.0"));
    }

    #[test]
    fn image_audio_and_link() {
        let _: ContentBlock = round_trip(json!({"type": "image", "data": "AAA=", "mimeType": "image/png"}));
        let b: ContentBlock =
            round_trip(json!({"type": "audio", "data": "AAA=", "mimeType": "audio/wav", "_meta": {"k": 1}}));
        assert!(matches!(b, ContentBlock::Audio(ref a) if a.meta.is_some()));
        let b: ContentBlock = round_trip(json!({
            "type": "resource_link", "uri": "file:///a", "name": "a", "size": 12,
            "icons": [{"src": "data:image/png;base64,AA", "sizes": ["any"], "theme": "dark"}]
        }));
        let ContentBlock::ResourceLink(l) = b else { panic!() };
        assert_eq!(l.size, Some(12));
    }

    #[test]
    fn embedded_resources_text_and_blob() {
        let b: ContentBlock =
            round_trip(json!({"type": "resource", "resource": {"uri": "x:1", "mimeType": "text/plain", "text": "t"}}));
        let ContentBlock::Resource(r) = b else { panic!() };
        assert!(matches!(r.resource, ResourceContents::Text(_)));
        let b: ContentBlock = round_trip(json!({"type": "resource", "resource": {"uri": "x:2", "blob": "AA=="}}));
        let ContentBlock::Resource(r) = b else { panic!() };
        assert!(matches!(r.resource, ResourceContents::Blob(_)));
        let c: ResourceContents = round_trip(json!({"uri": "x:3"}));
        assert_eq!(c.uri(), Some("x:3"));
        assert!(matches!(c, ResourceContents::Other(_)));
    }

    #[test]
    fn unknown_content_type_survives() {
        let v = json!({"type": "video", "url": "https://v", "frames": [1, 2.5]});
        let b: ContentBlock = round_trip(v.clone());
        assert!(matches!(b, ContentBlock::Other(_)));
        let s: SamplingMessageContentBlock = round_trip(v);
        assert!(matches!(s, SamplingMessageContentBlock::Other(_)));
        assert!(serde_json::from_value::<ContentBlock>(json!({"text": "no type"})).is_err());
    }

    #[test]
    fn sampling_tool_blocks() {
        let u: SamplingMessageContentBlock =
            round_trip(json!({"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}));
        assert!(matches!(u, SamplingMessageContentBlock::ToolUse(ref t) if t.name == "get_weather"));
        let r: SamplingMessageContentBlock = round_trip(json!({
            "type": "tool_result", "toolUseId": "call_1",
            "content": [{"type": "text", "text": "18°C"}],
            "structuredContent": [1, 2], "isError": false
        }));
        let SamplingMessageContentBlock::ToolResult(r) = r else { panic!() };
        assert_eq!(r.content.len(), 1);
        assert_eq!(r.structured_content, Some(json!([1, 2])));
    }

    #[test]
    fn role_is_open() {
        let r: Role = round_trip(json!("system"));
        assert_eq!(r, Role::Other("system".into()));
    }
}
