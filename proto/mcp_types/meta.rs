//! Shared building blocks: the typed `_meta` objects of requests, results and notifications,
//! the 2026-07-28 result enums (`resultType`, `cacheScope`), empty params and results,
//! progress tokens and cursors; the per-request protocol fields a 2026-07-28 client writes into
//! every request ([`PerRequestMeta`]).
//!
//! Not here: the method-specific params and results (see the sibling modules) and the JSON-RPC
//! envelope (`proto::jsonrpc`).

use serde::{Deserialize, Serialize};

use serde_json::{Map, Value};

use super::{ClientCapabilities, Extra, Implementation, RelatedTaskMetadata};
use crate::proto::jsonrpc::Id;
use crate::proto::version::ProtocolVersion;

/// A progress token: an integer or a string, kept as the sender wrote it (same shape as a
/// request id).
pub type ProgressToken = Id;

/// An opaque pagination cursor.
pub type Cursor = String;

/// The `_meta` key that ties a message to a task (2025-11-25, "Tasks").
pub const RELATED_TASK_META_KEY: &str = "io.modelcontextprotocol/related-task";

/// The typed view of a request's `params._meta`.
///
/// Up to 2025-11-25 it is optional and holds at most `progressToken`; from 2026-07-28 every
/// request carries the protocol version, client capabilities and client info here (the
/// stateless revision has no `initialize`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RequestMeta {
    /// Token the receiver puts on `notifications/progress` for this request.
    #[serde(rename = "progressToken", default, skip_serializing_if = "Option::is_none")]
    pub progress_token: Option<ProgressToken>,
    /// 2026-07-28: the revision this request speaks (kept as a string so unknown versions
    /// survive).
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// 2026-07-28: the client's capabilities, sent with every request.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default, skip_serializing_if = "Option::is_none")]
    pub client_capabilities: Option<ClientCapabilities>,
    /// 2026-07-28: who the client is.
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
    /// 2026-07-28: the log level the client wants for this request (a `LoggingLevel` string).
    #[serde(rename = "io.modelcontextprotocol/logLevel", default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// 2025-11-25: the task this request belongs to.
    #[serde(rename = "io.modelcontextprotocol/related-task", default, skip_serializing_if = "Option::is_none")]
    pub related_task: Option<RelatedTaskMetadata>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Extra,
}

std::thread_local! {
    static LAST_CLIENT_CAPABILITIES: super::decode::MemoSlot<ClientCapabilities> = const { std::cell::RefCell::new(None) };
    static LAST_CLIENT_INFO: super::decode::MemoSlot<Implementation> = const { std::cell::RefCell::new(None) };
}

/// Hand-written, as `decode`'s macro writes them (no `flatten`: no buffering of the whole
/// `_meta`), with the client's capabilities and info decoded once per distinct text on a
/// thread (`decode::Memo`): every 2026-07-28 request repeats them.
impl<'de> Deserialize<'de> for RequestMeta {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use super::decode::{Key, Memo};
        use serde::de::Error as _;
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = RequestMeta;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a request's _meta")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RequestMeta, A::Error> {
                let mut meta = RequestMeta::default();
                let mut seen = [false; 6];
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    let slot = match key.as_str() {
                        "progressToken" => 0,
                        PROTOCOL_VERSION_META_KEY => 1,
                        CLIENT_CAPABILITIES_META_KEY => 2,
                        CLIENT_INFO_META_KEY => 3,
                        LOG_LEVEL_META_KEY => 4,
                        RELATED_TASK_META_KEY => 5,
                        _ => {
                            let value: Value = map.next_value()?;
                            meta.extra.insert(key.into_string(), value);
                            continue;
                        }
                    };
                    if std::mem::replace(&mut seen[slot], true) {
                        return Err(A::Error::custom(format_args!("duplicate field `{}`", key.as_str())));
                    }
                    match slot {
                        0 => meta.progress_token = map.next_value()?,
                        1 => meta.protocol_version = map.next_value()?,
                        2 => meta.client_capabilities = map.next_value_seed(Memo::new(&LAST_CLIENT_CAPABILITIES))?,
                        3 => meta.client_info = map.next_value_seed(Memo::new(&LAST_CLIENT_INFO))?,
                        4 => meta.log_level = map.next_value()?,
                        _ => meta.related_task = map.next_value()?,
                    }
                }
                Ok(meta)
            }
        }
        d.deserialize_map(Fields)
    }
}

/// The typed view of a result's `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResultMeta {
    /// 2026-07-28: who the server is (replaces `InitializeResult.serverInfo`).
    #[serde(rename = "io.modelcontextprotocol/serverInfo", default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<Implementation>,
    /// 2025-11-25: the task this result belongs to (e.g. on a `tasks/result` payload).
    #[serde(rename = "io.modelcontextprotocol/related-task", default, skip_serializing_if = "Option::is_none")]
    pub related_task: Option<RelatedTaskMetadata>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Extra,
}

std::thread_local! {
    static LAST_SERVER_INFO: super::decode::MemoSlot<Implementation> = const { std::cell::RefCell::new(None) };
}

/// Hand-written as [`RequestMeta`]'s: a 2026-07-28 server puts the same `serverInfo` in every
/// result, decoded once per distinct text on a thread.
impl<'de> Deserialize<'de> for ResultMeta {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use super::decode::{Key, Memo};
        use serde::de::Error as _;
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = ResultMeta;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a result's _meta")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ResultMeta, A::Error> {
                let mut meta = ResultMeta::default();
                let mut seen = [false; 2];
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    let slot = match key.as_str() {
                        "io.modelcontextprotocol/serverInfo" => 0,
                        RELATED_TASK_META_KEY => 1,
                        _ => {
                            let value: Value = map.next_value()?;
                            meta.extra.insert(key.into_string(), value);
                            continue;
                        }
                    };
                    if std::mem::replace(&mut seen[slot], true) {
                        return Err(A::Error::custom(format_args!("duplicate field `{}`", key.as_str())));
                    }
                    match slot {
                        0 => meta.server_info = map.next_value_seed(Memo::new(&LAST_SERVER_INFO))?,
                        _ => meta.related_task = map.next_value()?,
                    }
                }
                Ok(meta)
            }
        }
        d.deserialize_map(Fields)
    }
}

/// The typed view of a notification's `params._meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationMeta {
    /// 2026-07-28: the `subscriptions/listen` stream this notification belongs to.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId", default, skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<Id>,
    /// 2025-11-25: the task this notification belongs to.
    #[serde(rename = "io.modelcontextprotocol/related-task", default, skip_serializing_if = "Option::is_none")]
    pub related_task: Option<RelatedTaskMetadata>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Extra,
}

/// 2026-07-28 `resultType`: whether a result is final. Absent means `complete`.
///
/// Open: a value this crate does not know is kept in [`ResultType::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// `complete`: the request is done.
    Complete,
    /// `input_required`: the server needs answers from the client before it can finish
    /// (an `InputRequiredResult`).
    InputRequired,
    /// Any other value, as written.
    Other(String),
}

impl ResultType {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Other(s) => s,
        }
    }
}

impl From<String> for ResultType {
    fn from(s: String) -> Self {
        match s.as_str() {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            _ => ResultType::Other(s),
        }
    }
}

/// 2026-07-28 `cacheScope` of a cacheable result ("CacheableResult"), like HTTP
/// `Cache-Control: public`/`private`. Cacheable results carry it, with `ttlMs` and
/// `resultType`, as explicit optional fields.
///
/// Open: an unknown value is kept in [`CacheScope::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CacheScope {
    /// `private`: reusable only within the same authorization context.
    Private,
    /// `public`: holds no user-specific data; any cache may share it.
    Public,
    /// Any other value, as written.
    Other(String),
}

impl CacheScope {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            CacheScope::Private => "private",
            CacheScope::Public => "public",
            CacheScope::Other(s) => s,
        }
    }
}

impl From<String> for CacheScope {
    fn from(s: String) -> Self {
        match s.as_str() {
            "private" => CacheScope::Private,
            "public" => CacheScope::Public,
            _ => CacheScope::Other(s),
        }
    }
}

/// Implements `Serialize`/`Deserialize` as a plain string for an open string enum that has
/// `as_str` and `From<String>`.
macro_rules! open_string_enum_serde {
    ($ty:ty) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Ok(<$ty>::from(String::deserialize(d)?))
            }
        }
    };
}
pub(crate) use open_string_enum_serde;

open_string_enum_serde!(ResultType);
open_string_enum_serde!(CacheScope);

/// A result with nothing in it (e.g. the answer to `ping`), or any result whose members are
/// not modelled: everything but `_meta` and `resultType` stays in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyResult {
    /// 2026-07-28 `resultType`.
    #[serde(rename = "resultType", default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of a request that has none of its own (only `_meta`, required from 2026-07-28).
/// `Default` stands for absent params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyParams {
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of a notification that has none of its own (only an optional `_meta`).
/// `Default` stands for absent params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyNotificationParams {
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of every paginated list request (`tools/list`, `prompts/list`, `resources/list`,
/// `resources/templates/list`, `tasks/list`): an optional page cursor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// Request metadata (progress token; in 2026-07-28 the per-request envelope).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `_meta` key of a 2026-07-28 request's protocol version.
pub const PROTOCOL_VERSION_META_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a 2026-07-28 request's client info.
pub const CLIENT_INFO_META_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of a 2026-07-28 request's client capabilities.
pub const CLIENT_CAPABILITIES_META_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the log level a 2026-07-28 request asks for (logging, "Per-request log level").
pub const LOG_LEVEL_META_KEY: &str = "io.modelcontextprotocol/logLevel";

/// The per-request protocol fields every 2026-07-28 request carries in `params._meta`
/// (basic, "Per-request protocol fields"): the protocol version, the client's info and its
/// capabilities, and the log level when one is set. Built once per connection;
/// [`PerRequestMeta::write_into`] is the one place that writes them into a request.
#[derive(Debug, Clone, PartialEq)]
pub struct PerRequestMeta {
    version: ProtocolVersion,
    fields: Map<String, Value>,
    /// `fields` as JSON members, without the braces: what [`PerRequestMeta::stamp`] splices in.
    members: String,
}

impl PerRequestMeta {
    /// The fields of a client speaking `version`.
    pub fn new(version: ProtocolVersion, client_info: &Implementation, capabilities: &ClientCapabilities) -> Self {
        let mut fields = Map::new();
        fields.insert(PROTOCOL_VERSION_META_KEY.to_owned(), Value::from(version.as_str()));
        // Plain structs of strings and maps: they always serialize.
        fields.insert(CLIENT_INFO_META_KEY.to_owned(), serde_json::to_value(client_info).unwrap_or_default());
        fields.insert(CLIENT_CAPABILITIES_META_KEY.to_owned(), serde_json::to_value(capabilities).unwrap_or_default());
        let members = members_text(&fields);
        PerRequestMeta { version, fields, members }
    }

    /// The version these fields declare.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// Asks for `notifications/message` at `level` or more severe on every later request
    /// (a `LoggingLevel` string; `None`: no log messages, the default).
    pub fn set_log_level(&mut self, level: Option<&str>) {
        match level {
            Some(level) => self.fields.insert(LOG_LEVEL_META_KEY.to_owned(), Value::from(level)),
            None => self.fields.remove(LOG_LEVEL_META_KEY),
        };
        self.members = members_text(&self.fields);
    }

    /// `params` as JSON with the fields in its `_meta`, in one serialization: the fields
    /// are spliced in as text written once per connection, where [`PerRequestMeta::write_into`]
    /// builds the params as a `Value` and clones the fields into it on every request. `None`
    /// when `params` have a `_meta` member (anywhere: a nested one too) or are not an object:
    /// then use `write_into`, which merges.
    ///
    /// # Errors
    /// When `params` cannot be serialized.
    pub fn stamp<P: Serialize + ?Sized>(
        &self,
        params: &P,
    ) -> Result<Option<Box<serde_json::value::RawValue>>, serde_json::Error> {
        let mut out = Vec::with_capacity(self.members.len() + 64);
        out.extend_from_slice(b"{\"_meta\":{");
        out.extend_from_slice(self.members.as_bytes());
        out.push(b'}');
        let start = out.len();
        serde_json::to_writer(&mut out, params)?;
        // serde_json writes UTF-8 and never escapes `_`: a `_meta` key of the params' own shows
        // as this text wherever it is (a nested one only sends us the slower way).
        let written = std::str::from_utf8(&out[start..]).map_err(serde::ser::Error::custom)?;
        if !written.starts_with('{') || written.contains("\"_meta\"") {
            return Ok(None);
        }
        if written == "{}" {
            out.truncate(start);
            out.push(b'}');
        } else {
            out[start] = b',';
        }
        let text = std::str::from_utf8(&out).map_err(serde::ser::Error::custom)?;
        crate::proto::json_write::trusted_raw(text).map(Some)
    }

    /// Adds the fields to `params._meta` (made when absent); members already there, e.g. a
    /// `progressToken` or a caller's own protocol fields, are kept.
    ///
    /// # Errors
    /// When `params` or its `_meta` is not an object.
    pub fn write_into(&self, params: &mut Value) -> Result<(), serde_json::Error> {
        use serde::de::Error as _;
        let Some(object) = params.as_object_mut() else {
            return Err(serde_json::Error::custom("params are not an object"));
        };
        let meta = object.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        let Some(meta) = meta.as_object_mut() else {
            return Err(serde_json::Error::custom("params._meta is not an object"));
        };
        for (key, value) in &self.fields {
            meta.entry(key.clone()).or_insert_with(|| value.clone());
        }
        Ok(())
    }
}

/// The members of `fields` as JSON text, without the braces.
fn members_text(fields: &Map<String, Value>) -> String {
    // A map of strings and plain values: it always serializes.
    let text = serde_json::to_string(fields).unwrap_or_else(|_| "{}".to_owned());
    text[1..text.len() - 1].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// `text` decoded by our reader (which hands the memo a value's text) and by serde_json
    /// (which does not), which must agree.
    fn both_ways<T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(text: &str) -> T {
        let mut reader = crate::proto::json_read::Reader::new(text.as_bytes());
        let ours = T::deserialize(&mut reader).unwrap();
        reader.end().unwrap();
        let theirs: T = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs, "{text}");
        ours
    }

    #[test]
    fn a_remembered_envelope_is_never_taken_for_another() {
        let meta = |capabilities: &str, info: &str| {
            format!(
                r#"{{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{capabilities},"io.modelcontextprotocol/clientInfo":{info},"x-other":[1]}}"#
            )
        };
        let (sampling, roots) = (r#"{"sampling":{}}"#, r#"{"roots":{"listChanged":true},"x":{"y":1}}"#);
        let (a, b) = (r#"{"name":"a","version":"1"}"#, r#"{"name":"b","version":"1","title":"B"}"#);
        for (capabilities, info) in [(sampling, a), (sampling, a), (roots, a), (roots, b), (sampling, b), (sampling, a)]
        {
            let decoded: RequestMeta = both_ways(&meta(capabilities, info));
            let expected: Value = serde_json::from_str(capabilities).unwrap();
            assert_eq!(serde_json::to_value(decoded.client_capabilities.unwrap()).unwrap(), expected);
            assert_eq!(decoded.client_info.unwrap(), serde_json::from_str::<Implementation>(info).unwrap());
            assert_eq!(decoded.progress_token, Some(Id::Number(7)));
            assert_eq!(decoded.extra.get("x-other"), Some(&json!([1])));
        }
        // null is absent; a duplicate known member and a wrong type are errors, as derived.
        let absent: RequestMeta = both_ways(r#"{"io.modelcontextprotocol/clientCapabilities":null}"#);
        assert_eq!(absent, RequestMeta::default());
        for bad in [
            r#"{"io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"},"io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"}}"#,
            r#"{"io.modelcontextprotocol/clientCapabilities":{"sampling":1}}"#,
            r#"{"io.modelcontextprotocol/clientCapabilities":[]}"#,
        ] {
            assert!(serde_json::from_str::<RequestMeta>(bad).is_err(), "{bad}");
            let mut reader = crate::proto::json_read::Reader::new(bad.as_bytes());
            assert!(RequestMeta::deserialize(&mut reader).is_err(), "{bad}");
        }
        let result: ResultMeta =
            both_ways(r#"{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"},"k":"v"}"#);
        assert_eq!(result.server_info.unwrap().name, "s");
        let result: ResultMeta = both_ways(r#"{"io.modelcontextprotocol/serverInfo":{"name":"t","version":"1"}}"#);
        assert_eq!(result.server_info.unwrap().name, "t");
    }

    #[test]
    fn a_remembered_text_is_taken_from_the_input_only_as_a_whole_value() {
        let meta = |capabilities: &str| {
            format!(
                r#"{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{capabilities}}}"#
            )
        };
        let decode = |text: &str| {
            let mut reader = crate::proto::json_read::Reader::new(text.as_bytes());
            RequestMeta::deserialize(&mut reader).and_then(|meta| reader.end().map(|()| meta))
        };
        let remembered = r#"{"roots":{"listChanged":true}}"#;
        let first: RequestMeta = both_ways(&meta(remembered));
        // Begins with the remembered text, then goes on: what follows is read, and must be right.
        for broken in [
            format!(r#"{{"io.modelcontextprotocol/clientCapabilities":{remembered}x}}"#),
            format!(r#"{{"io.modelcontextprotocol/clientCapabilities":{remembered}}}"#).replace("}}}", "}}"),
            format!(r#"{{"io.modelcontextprotocol/clientCapabilities":{remembered}, }}"#),
        ] {
            assert!(decode(&broken).is_err(), "{broken}");
            assert!(serde_json::from_str::<RequestMeta>(&broken).is_err(), "{broken}");
        }
        let spaced: RequestMeta = both_ways(&meta(&format!("  {remembered}  ")));
        assert_eq!(spaced, first);
        // The remembered text's first bytes, but another value: read, not taken.
        let longer: RequestMeta = both_ways(&meta(r#"{"roots":{"listChanged":true},"sampling":{}}"#));
        assert!(longer.client_capabilities.unwrap().sampling.is_some());
        let other: RequestMeta =
            both_ways(&meta(r#"{"roots":{"listChanged":true}}"#.replace("true", "false").as_str()));
        assert_eq!(other.client_capabilities.unwrap().roots.unwrap().list_changed, Some(false));
        // Nested deeper than a known span may be: remembered, never taken unchecked.
        let deep = format!(r#"{{"experimental":{{"x":{}1{}}}}}"#, "[".repeat(20), "]".repeat(20));
        for _ in 0..2 {
            let decoded: RequestMeta = both_ways(&meta(&deep));
            assert!(decoded.client_capabilities.unwrap().experimental.is_some());
        }
    }

    fn round_trip<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let typed: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), v);
        typed
    }

    #[test]
    fn stamp_gives_the_params_write_into_gives() {
        let info: Implementation = serde_json::from_value(json!({"name": "c", "version": "1"})).unwrap();
        let caps: ClientCapabilities = serde_json::from_value(json!({"roots": {"listChanged": true}})).unwrap();
        let mut meta = PerRequestMeta::new(ProtocolVersion::V2026_07_28, &info, &caps);
        meta.set_log_level(Some("debug"));
        for params in [
            json!({}),
            json!({"name": "echo", "arguments": {"text": "a \"quoted\" {brace} _meta", "n": [1, {"meta": 2}]}}),
            json!({"cursor": null}),
        ] {
            let stamped = meta.stamp(&params).unwrap().expect("no _meta of its own");
            let mut expected = params.clone();
            meta.write_into(&mut expected).unwrap();
            assert_eq!(serde_json::from_str::<Value>(stamped.get()).unwrap(), expected, "{stamped}");
        }
        // A `_meta` of the params' own (also written with an escape) or params that are not an
        // object are left to write_into.
        assert!(meta.stamp(&json!({"_meta": {"progressToken": 1}, "name": "x"})).unwrap().is_none());
        assert!(meta.stamp(&json!({"arguments": {"_meta": 2}})).unwrap().is_none());
        assert!(meta.stamp(&json!([1])).unwrap().is_none());
        assert!(meta.stamp(&json!(null)).unwrap().is_none());
    }

    #[test]
    fn request_meta_2026_keys_are_typed() {
        let m: RequestMeta = round_trip(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
            "io.modelcontextprotocol/logLevel": "debug",
            "progressToken": 7,
            "vendor/x": true
        }));
        assert_eq!(m.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(m.client_info.unwrap().name, "c");
        assert!(m.client_capabilities.unwrap().sampling.is_some());
        assert_eq!(m.log_level.as_deref(), Some("debug"));
        assert_eq!(m.progress_token, Some(Id::Number(7)));
        assert_eq!(m.extra["vendor/x"], json!(true));
    }

    #[test]
    fn progress_token_keeps_its_kind() {
        let s: RequestMeta = round_trip(json!({"progressToken": "7"}));
        assert_eq!(s.progress_token, Some(Id::String("7".into())));
    }

    #[test]
    fn result_meta_and_related_task() {
        let m: ResultMeta = round_trip(json!({
            "io.modelcontextprotocol/serverInfo": {"name": "s", "version": "2"},
            "io.modelcontextprotocol/related-task": {"taskId": "t1"}
        }));
        assert_eq!(m.server_info.unwrap().version, "2");
        assert_eq!(m.related_task.unwrap().task_id, "t1");
    }

    #[test]
    fn open_enums_keep_unknown_values() {
        let r: ResultType = round_trip(json!("input_required"));
        assert_eq!(r, ResultType::InputRequired);
        let r: ResultType = round_trip(json!("partial"));
        assert_eq!(r, ResultType::Other("partial".into()));
        let c: CacheScope = round_trip(json!("public"));
        assert_eq!(c, CacheScope::Public);
        let c: CacheScope = round_trip(json!("shared"));
        assert_eq!(c.as_str(), "shared");
    }

    #[test]
    fn empty_result_shapes() {
        let e: EmptyResult = round_trip(json!({}));
        assert_eq!(e, EmptyResult::default());
        let e: EmptyResult = round_trip(json!({"_meta": {}}));
        assert_eq!(e.meta, Some(ResultMeta::default()));
        let e: EmptyResult = round_trip(json!({"resultType": "complete", "other": 1.0}));
        assert_eq!(e.result_type, Some(ResultType::Complete));
        assert_eq!(e.extra["other"], json!(1.0));
    }

    #[test]
    fn empty_params_keep_meta() {
        let p: EmptyParams = round_trip(json!({"_meta": {"progressToken": 1}}));
        assert_eq!(p.meta.unwrap().progress_token, Some(Id::Number(1)));
        let _: EmptyNotificationParams = round_trip(json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "s"}}));
    }

    #[test]
    fn per_request_meta_is_added_beside_what_params_already_carry() {
        let info = Implementation { name: "c".into(), version: "1".into(), ..Implementation::default() };
        let meta = PerRequestMeta::new(ProtocolVersion::V2026_07_28, &info, &ClientCapabilities::default());
        let mut params = json!({"name": "t", "_meta": {"progressToken": 7}});
        meta.write_into(&mut params).unwrap();
        assert_eq!(
            params,
            json!({"name": "t", "_meta": {
                "progressToken": 7,
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}
            }})
        );
        assert!(meta.write_into(&mut json!([])).is_err());
        let mut meta = meta;
        meta.set_log_level(Some("warning"));
        let mut params = json!({});
        meta.write_into(&mut params).unwrap();
        assert_eq!(params["_meta"]["io.modelcontextprotocol/logLevel"], "warning");
        meta.set_log_level(None);
        let mut params = json!({});
        meta.write_into(&mut params).unwrap();
        assert_eq!(params["_meta"].get("io.modelcontextprotocol/logLevel"), None);
        assert!(meta.write_into(&mut json!({"_meta": 1})).is_err());
    }
}
