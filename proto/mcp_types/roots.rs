//! Roots: the directories or files a client exposes to servers, `roots/list` (asked by the
//! server) and `notifications/roots/list_changed` (sent by the client; gone in 2026-07-28).
//!
//! In 2026-07-28 `roots/list` travels inside an `input_required` result (see
//! [`input`](super::input)) rather than as a JSON-RPC request; the types are the same.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::*;

/// A root the client lets servers work in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// Its URI (`file://` in current revisions).
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Free metadata (2025-06-18 on).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `roots/list`: only optional metadata.
pub type ListRootsRequestParams = EmptyParams;

/// Result of `roots/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

method!(
    /// `roots/list`: the server asks for the client's roots. From 2026-07-28 it is an input
    /// request inside a result instead.
    ListRoots, "roots/list", ServerToClient, ListRootsRequestParams, ListRootsResult, since V2024_11_05, removed V2026_07_28
);
notification!(
    /// `notifications/roots/list_changed`: the client's roots changed.
    RootsListChanged, "notifications/roots/list_changed", ClientToServer, EmptyParams, since V2024_11_05, removed V2026_07_28
);

/// Every method this module declares.
pub(crate) const METHODS: &[MethodInfo] =
    &[MethodInfo::request::<ListRoots>(), MethodInfo::notification::<RootsListChanged>()];

super::decode::decode_via_value!(ListRootsResult);

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
    fn list_result() {
        let r: ListRootsResult = rt(json!({"roots": [
            {"uri": "file:///tmp/mcp-fixtures/project", "name": "project"},
            {"uri": "file:///srv", "_meta": {"k": 1}}
        ]}));
        assert_eq!(r.roots[0].name.as_deref(), Some("project"));
        assert!(r.roots[1].name.is_none());
        let r: ListRootsResult = rt(json!({"roots": []}));
        assert!(r.roots.is_empty());
    }

    #[test]
    fn method_rows() {
        assert_eq!(METHODS[0].direction, Direction::ServerToClient);
        assert_eq!(METHODS[1].direction, Direction::ClientToServer);
        assert!(METHODS[1].is_notification);
        assert!(METHODS.iter().all(|m| m.removed_in == Some(ProtocolVersion::V2026_07_28)));
    }
}
