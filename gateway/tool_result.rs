//! An upstream's `tools/call` result passed on downstream as the upstream wrote it, with only
//! the members that are not the gateway's to pass on taken out: the upstream era's stamps
//! (`resultType`, `ttlMs`, `cacheScope`) and its identity (`_meta` serverInfo). The content is
//! neither decoded nor written again, which is most of what a forwarded call used to cost.
//!
//! The result's text was checked to be JSON when its message was read, so its top-level
//! members (and `_meta`'s) are found by a scan that only follows strings and nesting, not by
//! parsing it again; a result that had members taken off is written from those members' text
//! and made a `RawValue` without being parsed either.
//!
//! [`rewrite`] says when a result cannot be passed on so: not an object with a `content` array,
//! a member written twice or named with an escape, more members than the scan holds on the
//! stack (16, in the result or its `_meta`), an `isError`, `resultType` or `_meta` of
//! the wrong type (the typed decode then reports the error it always did), or content whose
//! URIs the gateway maps (its resource links and embedded resources; found by looking for a
//! `"uri"` key or any `\u` escape in the content's text). The caller then decodes and edits the
//! typed result instead.
//!
//! Not here: the typed path itself, and any check of the content blocks' shapes (the
//! downstream client gets them as the upstream wrote them).

use serde_json::value::RawValue;

/// The members of a result that say what era or server it came from, taken off by the gateway.
const STAMPS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// The `_meta` member naming the upstream (2026-07-28).
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// What [`rewrite`] makes of a tool result's JSON text.
#[derive(Debug)]
pub(crate) enum ResultCheck {
    /// Passed on as it is.
    AsWritten {
        /// `isError: true`.
        is_error: bool,
    },
    /// Passed on as this JSON, the members to take off taken off.
    Rewritten {
        /// The result to pass on.
        raw: Box<RawValue>,
        /// `isError: true`.
        is_error: bool,
    },
    /// To be decoded and edited as a typed result.
    Typed,
}

/// How the tool result `text` (JSON, as a `RawValue` holds it) is passed on; `uris_mapped`:
/// the gateway maps this server's URIs.
pub(crate) fn rewrite(text: &str, uris_mapped: bool) -> ResultCheck {
    let Some(members) = members(text) else { return ResultCheck::Typed };
    let find = |name: &str| members.iter().find(|(key, _)| *key == name).map(|(_, value)| *value);
    let Some(content) = find("content").filter(|c| c.starts_with('[')) else { return ResultCheck::Typed };
    if uris_mapped && (content.contains("\"uri\"") || content.contains("\\u")) {
        return ResultCheck::Typed;
    }
    let is_error = match find("isError") {
        None | Some("null" | "false") => false,
        Some("true") => true,
        Some(_) => return ResultCheck::Typed,
    };
    if find("resultType").is_some_and(|t| t != "null" && !t.starts_with('"')) {
        return ResultCheck::Typed;
    }
    // Which members go: the era's stamps, `null` optional members (absent in the typed result)
    // and the upstream's serverInfo in `_meta` (the whole `_meta` when nothing else is left).
    let dropped = |key: &str, value: &str| {
        let optional = matches!(key, "structuredContent" | "isError" | "_meta");
        STAMPS.contains(&key) || (optional && value == "null")
    };
    let mut edited = false;
    let (mut meta, mut meta_left) = (Meta::AsWritten, None);
    for &(key, value) in members.as_slice() {
        if dropped(key, value) {
            edited = true;
        } else if key == "_meta" {
            let Some((verdict, left)) = without_server_info(value) else { return ResultCheck::Typed };
            edited |= verdict != Meta::AsWritten;
            (meta, meta_left) = (verdict, Some(left));
        }
    }
    if !edited {
        return ResultCheck::AsWritten { is_error };
    }
    let mut out = String::with_capacity(text.len());
    out.push('{');
    for &(key, value) in members.as_slice() {
        if dropped(key, value) || (key == "_meta" && matches!(meta, Meta::Empty)) {
            continue;
        }
        if out.len() > 1 {
            out.push(',');
        }
        write_name(key, &mut out);
        match (&meta_left, meta, key) {
            (Some(left), Meta::Without, "_meta") => write_object(left.as_slice(), &mut out),
            _ => out.push_str(value),
        }
    }
    out.push('}');
    // JSON by construction: members of a JSON object, names without escapes.
    match crate::proto::json_write::trusted_raw(&out) {
        Ok(raw) => ResultCheck::Rewritten { raw, is_error },
        Err(_) => ResultCheck::Typed,
    }
}

/// A result's `_meta` without the upstream's serverInfo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Meta {
    /// It has none, and other members: as written.
    AsWritten,
    /// Nothing is left: dropped, as the typed result drops it.
    Empty,
    /// Its other members (given beside it).
    Without,
}

/// `_meta`'s text without the upstream's serverInfo, and its members left; `None` when it is
/// not an object (or a name in it is written twice or with an escape).
fn without_server_info(meta: &str) -> Option<(Meta, Members<'_>)> {
    let mut members = members(meta)?;
    let before = members.len;
    members.retain(|(key, _)| *key != SERVER_INFO);
    let verdict = match (members.len, before) {
        (0, _) => Meta::Empty,
        (left, before) if left == before => Meta::AsWritten,
        _ => Meta::Without,
    };
    Some((verdict, members))
}

/// Writes the object of `members` (names without escapes, values as JSON text) to `out`.
fn write_object(members: &[(&str, &str)], out: &mut String) {
    out.push('{');
    for (i, (key, text)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_name(key, out);
        out.push_str(text);
    }
    out.push('}');
}

fn write_name(key: &str, out: &mut String) {
    out.push('"');
    out.push_str(key);
    out.push_str("\":");
}

/// The most members [`members`] finds in an object: a result (or its `_meta`) with more goes
/// the typed way. Held on the stack, so that a call's result is scanned without allocating.
const MAX_MEMBERS: usize = 16;

/// The members of an object, in order: each name and its value's text.
struct Members<'a> {
    found: [(&'a str, &'a str); MAX_MEMBERS],
    len: usize,
}

impl<'a> Members<'a> {
    fn as_slice(&self) -> &[(&'a str, &'a str)] {
        &self.found[..self.len]
    }

    fn iter(&self) -> std::slice::Iter<'_, (&'a str, &'a str)> {
        self.as_slice().iter()
    }

    /// Adds a member; `None` when [`MAX_MEMBERS`] are there already.
    fn push(&mut self, member: (&'a str, &'a str)) -> Option<()> {
        *self.found.get_mut(self.len)? = member;
        self.len += 1;
        Some(())
    }

    /// Keeps only the members `keep` says yes to.
    fn retain(&mut self, keep: impl Fn(&(&'a str, &'a str)) -> bool) {
        let mut kept = 0;
        for i in 0..self.len {
            if keep(&self.found[i]) {
                self.found[kept] = self.found[i];
                kept += 1;
            }
        }
        self.len = kept;
    }
}

/// The members of the JSON object `text`, in order: each name and its value's text. `text` is
/// JSON (this does not check it); `None` when it is not an object, a name is written with an
/// escape or twice, or it has more than [`MAX_MEMBERS`].
fn members(text: &str) -> Option<Members<'_>> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(bytes, at + 1);
    let mut members = Members { found: [("", ""); MAX_MEMBERS], len: 0 };
    if bytes.get(at) == Some(&b'}') {
        return Some(members);
    }
    loop {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let end = string_end(bytes, at)?;
        let name = &text[at + 1..end - 1];
        if name.contains('\\') || members.iter().any(|(earlier, _)| *earlier == name) {
            return None;
        }
        at = skip_space(bytes, end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(bytes, at + 1);
        let value_end = value_end(bytes, at)?;
        members.push((name, &text[at..value_end]))?;
        at = skip_space(bytes, value_end);
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b'}') => return Some(members),
            _ => return None,
        }
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// Just past the string that starts at `start` (its opening quote).
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        at += memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
        if bytes[at] == b'"' {
            return Some(at + 1);
        }
        at += 2;
    }
}

/// Just past the value that starts at `start`.
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    match bytes.get(start)? {
        b'"' => string_end(bytes, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = start;
            loop {
                match bytes.get(at)? {
                    b'"' => {
                        at = string_end(bytes, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        _ => {
            let len = bytes[start..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(bytes.len() - start);
            Some(start + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(text: &str) -> String {
        match rewrite(text, false) {
            ResultCheck::Rewritten { raw, .. } => raw.get().to_owned(),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_plain_result_passes_as_written() {
        let text = r#"{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":1},"x-extra":null}"#;
        assert!(matches!(rewrite(text, false), ResultCheck::AsWritten { is_error: false }));
        let failed = r#"{"isError":true,"content":[{"type":"text","text":"no"}]}"#;
        assert!(matches!(rewrite(failed, false), ResultCheck::AsWritten { is_error: true }));
        assert!(matches!(
            rewrite(r#"{"content":[],"isError":false}"#, false),
            ResultCheck::AsWritten { is_error: false }
        ));
    }

    #[test]
    fn stamps_and_the_upstream_identity_are_taken_off() {
        let stamped = r#"{"content":[{"type":"text","text":"hi"}],"resultType":"complete","ttlMs":5,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}}}"#;
        assert_eq!(rewritten(stamped), r#"{"content":[{"type":"text","text":"hi"}]}"#);
        let more_meta =
            r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"},"k":[1]},"content":[]}"#;
        assert_eq!(rewritten(more_meta), r#"{"_meta":{"k":[1]},"content":[]}"#);
        // A `_meta` without serverInfo is kept as written.
        assert!(matches!(
            rewrite(r#"{"content":[],"_meta":{"k" : 1}}"#, false),
            ResultCheck::AsWritten { is_error: false }
        ));
        assert_eq!(rewritten(r#"{"content":[],"_meta":{ }}"#), r#"{"content":[]}"#);
        let failed = r#"{"content":[],"isError":true,"resultType":"complete"}"#;
        let ResultCheck::Rewritten { raw, is_error: true } = rewrite(failed, false) else { panic!("{failed}") };
        assert_eq!(raw.get(), r#"{"content":[],"isError":true}"#);
    }

    #[test]
    fn null_optional_members_go_and_other_nulls_stay() {
        let text =
            r#"{"content":[],"structuredContent":null,"isError":null,"_meta":null,"resultType":null,"other":null}"#;
        assert_eq!(rewritten(text), r#"{"content":[],"other":null}"#);
    }

    #[test]
    fn the_scan_follows_strings_nesting_and_space() {
        let text = "{ \"content\" : [ {\"type\":\"text\",\"text\":\"a\\\"}],{\\\\\"} ] ,\n\t\"n\": -1.5e3 ,\"s\":{\"x\":[[]]},\"resultType\" : \"complete\" }";
        assert_eq!(rewritten(text), r#"{"content":[ {"type":"text","text":"a\"}],{\\"} ],"n":-1.5e3,"s":{"x":[[]]}}"#);
        serde_json::from_str::<serde_json::Value>(text).expect("the input is JSON");
        assert!(matches!(rewrite("{ }", false), ResultCheck::Typed));
    }

    #[test]
    fn a_name_with_an_escape_goes_typed() {
        assert!(matches!(rewrite(r#"{"con\u0074ent":[],"resultType":"complete"}"#, false), ResultCheck::Typed));
        assert!(matches!(rewrite(r#"{"content":[],"a\"b":1}"#, false), ResultCheck::Typed));
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
            r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{},"\u006b":1}}"#,
            r#"{"content":[]"#,
        ] {
            assert!(matches!(rewrite(text, false), ResultCheck::Typed), "{text}");
        }
    }

    #[test]
    fn an_object_of_more_members_than_the_scan_holds_goes_typed() {
        let with = |n: usize| {
            let extra: String = (1..n).map(|i| format!(",\"m{i}\":{i}")).collect();
            format!(r#"{{"content":[]{extra},"resultType":"complete"}}"#)
        };
        // `content`, the extra members and `resultType`: MAX_MEMBERS in all, then one more.
        let full = with(MAX_MEMBERS - 1);
        assert_eq!(rewritten(&full), full.replace(r#","resultType":"complete""#, ""));
        assert!(matches!(rewrite(&with(MAX_MEMBERS), false), ResultCheck::Typed));
        let meta: String = (0..MAX_MEMBERS).map(|i| format!(r#","k{i}":{i}"#)).collect();
        let text = format!(r#"{{"content":[],"_meta":{{"io.modelcontextprotocol/serverInfo":{{}}{meta}}}}}"#);
        assert!(matches!(rewrite(&text, false), ResultCheck::Typed));
    }

    #[test]
    fn content_with_uris_goes_typed_only_where_they_are_mapped() {
        let link = r#"{"content":[{"type":"resource_link","uri":"demo://a","name":"a"}]}"#;
        assert!(matches!(rewrite(link, false), ResultCheck::AsWritten { is_error: false }));
        assert!(matches!(rewrite(link, true), ResultCheck::Typed));
        let escaped = r#"{"content":[{"type":"resource_link","\u0075ri":"demo://a","name":"a"}]}"#;
        assert!(matches!(rewrite(escaped, true), ResultCheck::Typed));
        let text_only = r#"{"content":[{"type":"text","text":"no links"}],"resultType":"complete"}"#;
        assert_eq!(rewritten_mapped(text_only), r#"{"content":[{"type":"text","text":"no links"}]}"#);
    }

    fn rewritten_mapped(text: &str) -> String {
        match rewrite(text, true) {
            ResultCheck::Rewritten { raw, .. } => raw.get().to_owned(),
            other => panic!("{text}: {other:?}"),
        }
    }
}
