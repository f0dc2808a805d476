//! An upstream's `tools/call` result passed on downstream as the upstream wrote it, with only
//! the members that are not the gateway's to pass on taken out: the upstream era's stamps
//! (`resultType`, `ttlMs`, `cacheScope`) and its identity (`_meta` serverInfo). The content is
//! neither decoded nor written again, which is most of what a forwarded call used to cost.
//!
//! [`rewrite`] says when a result cannot be passed on so: not an object with a `content` array,
//! a member written twice, an `isError`, `resultType` or `_meta` of the wrong type (the typed
//! decode then reports the error it always did), or content whose URIs the gateway maps (its
//! resource links and embedded resources; found by looking for a `"uri"` key or any `\u`
//! escape in the content's text). The caller then decodes and edits the typed result instead.
//!
//! Not here: the typed path itself, and any check of the content blocks' shapes (the
//! downstream client gets them as the upstream wrote them).

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The members of a result that say what era or server it came from, taken off by the gateway.
const STAMPS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// The `_meta` member naming the upstream (2026-07-28).
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// What [`rewrite`] makes of a tool result's JSON text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Passed on as it is.
    AsWritten {
        /// `isError: true`.
        is_error: bool,
    },
    /// Passed on as this text, the members to take off taken off.
    Rewritten {
        /// The JSON text of the result to pass on.
        text: String,
        /// `isError: true`.
        is_error: bool,
    },
    /// To be decoded and edited as a typed result.
    Typed,
}

/// How the tool result `text` is passed on; `uris_mapped`: the gateway maps this server's URIs.
pub(crate) fn rewrite(text: &str, uris_mapped: bool) -> Verdict {
    let Ok(Members(members)) = serde_json::from_str::<Members>(text) else { return Verdict::Typed };
    if has_duplicates(&members) {
        return Verdict::Typed;
    }
    let find = |name: &str| members.iter().find(|(key, _)| key == name).map(|(_, value)| value.get());
    let Some(content) = find("content").filter(|c| c.starts_with('[')) else { return Verdict::Typed };
    if uris_mapped && (content.contains("\"uri\"") || content.contains("\\u")) {
        return Verdict::Typed;
    }
    let is_error = match find("isError") {
        None | Some("null" | "false") => false,
        Some("true") => true,
        Some(_) => return Verdict::Typed,
    };
    if find("resultType").is_some_and(|t| t != "null" && !t.starts_with('"')) {
        return Verdict::Typed;
    }
    let mut edited = false;
    let mut kept: Vec<(&str, Cow<'_, str>)> = Vec::with_capacity(members.len());
    for (key, value) in &members {
        let value = value.get();
        // As the typed result: `null` is an absent optional member, and its stamps go.
        let optional = matches!(key.as_ref(), "structuredContent" | "isError" | "_meta");
        if STAMPS.contains(&key.as_ref()) || (optional && value == "null") {
            edited = true;
            continue;
        }
        if key == "_meta" {
            match without_server_info(value) {
                Some(Cow::Borrowed(meta)) => kept.push((key, Cow::Borrowed(meta))),
                Some(Cow::Owned(meta)) if meta == "{}" => edited = true,
                Some(Cow::Owned(meta)) => {
                    edited = true;
                    kept.push((key, Cow::Owned(meta)));
                }
                None => return Verdict::Typed,
            }
            continue;
        }
        kept.push((key, Cow::Borrowed(value)));
    }
    if !edited {
        return Verdict::AsWritten { is_error };
    }
    Verdict::Rewritten { text: object(&kept, text.len()), is_error }
}

/// `_meta`'s text without the upstream's serverInfo: as written when it has none and is not
/// empty (borrowed), else written again (`{}` when nothing is left, which the caller drops as
/// the typed result does); `None` when it is not an object.
fn without_server_info(meta: &str) -> Option<Cow<'_, str>> {
    let Members(members) = serde_json::from_str::<Members>(meta).ok()?;
    if has_duplicates(&members) {
        return None;
    }
    if !members.is_empty() && !members.iter().any(|(key, _)| key == SERVER_INFO) {
        return Some(Cow::Borrowed(meta));
    }
    let kept: Vec<(&str, Cow<'_, str>)> = members
        .iter()
        .filter(|(key, _)| key != SERVER_INFO)
        .map(|(key, value)| (key.as_ref(), Cow::Borrowed(value.get())))
        .collect();
    Some(Cow::Owned(object(&kept, meta.len())))
}

fn has_duplicates(members: &[(Cow<'_, str>, &RawValue)]) -> bool {
    members.iter().enumerate().any(|(i, (key, _))| members[..i].iter().any(|(earlier, _)| earlier == key))
}

/// A JSON object of `members` (values as JSON text), about `capacity` bytes long.
fn object(members: &[(&str, Cow<'_, str>)], capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    out.push('{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if key.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
            out.push_str(&serde_json::to_string(key).expect("a string serializes"));
        } else {
            out.push('"');
            out.push_str(key);
            out.push('"');
        }
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    out
}

/// An object's members as written, in order: each key, and its value's JSON text.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::with_capacity(access.size_hint().unwrap_or(4));
                while let Some(Key(key)) = access.next_key()? {
                    members.push((key, access.next_value::<&'de RawValue>()?));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(MembersVisitor)
    }
}

/// A member's name, borrowed from the text unless it has escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
            fn visit_string<E>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(text: &str) -> String {
        match rewrite(text, false) {
            Verdict::Rewritten { text, .. } => text,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_plain_result_passes_as_written() {
        let text = r#"{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":1},"x-extra":null}"#;
        assert_eq!(rewrite(text, false), Verdict::AsWritten { is_error: false });
        let failed = r#"{"isError":true,"content":[{"type":"text","text":"no"}]}"#;
        assert_eq!(rewrite(failed, false), Verdict::AsWritten { is_error: true });
        assert_eq!(rewrite(r#"{"content":[],"isError":false}"#, false), Verdict::AsWritten { is_error: false });
    }

    #[test]
    fn stamps_and_the_upstream_identity_are_taken_off() {
        let stamped = r#"{"content":[{"type":"text","text":"hi"}],"resultType":"complete","ttlMs":5,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}}}"#;
        assert_eq!(rewritten(stamped), r#"{"content":[{"type":"text","text":"hi"}]}"#);
        let more_meta =
            r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"},"k":[1]},"content":[]}"#;
        assert_eq!(rewritten(more_meta), r#"{"_meta":{"k":[1]},"content":[]}"#);
        // A `_meta` without serverInfo is kept as written.
        assert_eq!(rewrite(r#"{"content":[],"_meta":{"k" : 1}}"#, false), Verdict::AsWritten { is_error: false });
        assert_eq!(rewritten(r#"{"content":[],"_meta":{ }}"#), r#"{"content":[]}"#);
        let failed = r#"{"content":[],"isError":true,"resultType":"complete"}"#;
        assert_eq!(
            rewrite(failed, false),
            Verdict::Rewritten { text: r#"{"content":[],"isError":true}"#.to_owned(), is_error: true }
        );
    }

    #[test]
    fn null_optional_members_go_and_other_nulls_stay() {
        let text =
            r#"{"content":[],"structuredContent":null,"isError":null,"_meta":null,"resultType":null,"other":null}"#;
        assert_eq!(rewritten(text), r#"{"content":[],"other":null}"#);
    }

    #[test]
    fn escaped_names_are_read_and_written_again_escaped() {
        let text = r#"{"con\u0074ent":[],"resultType":"complete","a\"b":1}"#;
        assert_eq!(rewritten(text), r#"{"content":[],"a\"b":1}"#);
    }

    #[test]
    fn what_the_typed_path_must_decide_goes_to_it() {
        for text in [
            r#"[]"#,
            r#"{"content":"text"}"#,
            r#"{"task":{"taskId":"t"}}"#,
            r#"{"resultType":"input_required","requestState":"s"}"#,
            r#"{"content":[],"content":[]}"#,
            r#"{"content":[],"isError":"yes"}"#,
            r#"{"content":[],"resultType":5}"#,
            r#"{"content":[],"_meta":5}"#,
            r#"{"content":[],"_meta":{"k":1,"k":2}}"#,
            r#"{"content":[]"#,
        ] {
            assert_eq!(rewrite(text, false), Verdict::Typed, "{text}");
        }
    }

    #[test]
    fn content_with_uris_goes_typed_only_where_they_are_mapped() {
        let link = r#"{"content":[{"type":"resource_link","uri":"demo://a","name":"a"}]}"#;
        assert_eq!(rewrite(link, false), Verdict::AsWritten { is_error: false });
        assert_eq!(rewrite(link, true), Verdict::Typed);
        let escaped = r#"{"content":[{"type":"resource_link","\u0075ri":"demo://a","name":"a"}]}"#;
        assert_eq!(rewrite(escaped, true), Verdict::Typed);
        let text_only = r#"{"content":[{"type":"text","text":"no links"}],"resultType":"complete"}"#;
        assert_eq!(rewritten_mapped(text_only), r#"{"content":[{"type":"text","text":"no links"}]}"#);
    }

    fn rewritten_mapped(text: &str) -> String {
        match rewrite(text, true) {
            Verdict::Rewritten { text, .. } => text,
            other => panic!("{text}: {other:?}"),
        }
    }
}
