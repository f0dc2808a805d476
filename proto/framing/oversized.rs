//! What can be told of a line that was too large to keep: its first and last bytes, and from
//! them the JSON-RPC id and kind of the message it held, so the request it answered can fail at
//! once instead of waiting for an answer that was thrown away.
//!
//! [`LineDecoder`](super::LineDecoder) keeps [`EDGE_BYTES`] from each end of an oversized line
//! while it skips the rest ([`Oversized`]); [`Oversized::identify`] reads the id from either
//! end without parsing the middle: from the start, the top-level members before the first
//! object or array (`{"jsonrpc":"2.0","id":7,"result":{…`, as we, Python and most peers write
//! it); from the end, a last member `"id": V }` (`{"result":{…},"jsonrpc":"2.0","id":7}`, as
//! the TypeScript SDK writes it). Only a line of valid JSON can be told this way: a line that
//! is not is never identified.
//!
//! Not here: what to do with the id (the stdio transport answers its own request with an error
//! naming the limit).

use crate::proto::jsonrpc::Id;

/// How many bytes of each end of an oversized line are kept.
pub const EDGE_BYTES: usize = 1024;

/// The ends of a line that went over the frame cap, and its length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Oversized {
    /// Up to [`EDGE_BYTES`] from its start.
    pub head: Vec<u8>,
    /// Up to [`EDGE_BYTES`] from its end (the line ending excluded).
    pub tail: Vec<u8>,
    /// Its length in bytes, the line ending excluded.
    pub len: usize,
}

/// What an oversized line held, as far as its ends tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identified {
    /// A response or error response to our request `id`.
    Response(Id),
    /// A request of the peer's, with its id.
    Request(Id),
}

impl Oversized {
    /// The message's kind and id, when its ends tell both.
    pub fn identify(&self) -> Option<Identified> {
        let head = scan_head(&self.head);
        let id = head.id.or_else(|| tail_id(&self.tail))?;
        if head.method {
            Some(Identified::Request(id))
        } else if head.response {
            Some(Identified::Response(id))
        } else {
            None
        }
    }
}

#[derive(Default)]
struct Head {
    id: Option<Id>,
    method: bool,
    response: bool,
}

/// Walks the top-level members at the start of `bytes` until a member whose value is an
/// object or array (or the bytes end): notes `id`, and whether `method` or `result`/`error`
/// was among the keys.
fn scan_head(bytes: &[u8]) -> Head {
    let mut head = Head::default();
    let mut at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return head;
    }
    at += 1;
    loop {
        at = skip_ws(bytes, at);
        let Some((key, after)) = string_at(bytes, at) else { return head };
        at = skip_ws(bytes, after);
        if bytes.get(at) != Some(&b':') {
            return head;
        }
        at = skip_ws(bytes, at + 1);
        match key.as_str() {
            "method" => head.method = true,
            "result" | "error" => head.response = true,
            _ => {}
        }
        let value_end = match bytes.get(at) {
            Some(b'{' | b'[') | None => return head,
            Some(b'"') => match string_at(bytes, at) {
                Some((text, end)) => {
                    if key == "id" {
                        head.id = Some(Id::String(text));
                    }
                    end
                }
                None => return head,
            },
            Some(_) => {
                let end = at + bytes[at..].iter().position(|b| matches!(b, b',' | b'}' | b' ' | b'\t')).unwrap_or(0);
                if end == at {
                    return head;
                }
                if key == "id" {
                    head.id = std::str::from_utf8(&bytes[at..end]).ok().and_then(|t| t.parse().ok()).map(Id::Number);
                }
                end
            }
        };
        at = skip_ws(bytes, value_end);
        match bytes.get(at) {
            Some(b',') => at += 1,
            _ => return head,
        }
    }
}

/// The id of a line ending in `"id": V }` with V a number or a string without escapes.
fn tail_id(bytes: &[u8]) -> Option<Id> {
    let mut end = bytes.len();
    while end > 0 && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    if end == 0 || bytes[end - 1] != b'}' {
        return None;
    }
    end -= 1;
    while end > 0 && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    // The value.
    let (id, start) = if end > 0 && bytes[end - 1] == b'"' {
        let open = bytes[..end - 1].iter().rposition(|&b| b == b'"')?;
        let text = &bytes[open + 1..end - 1];
        if text.contains(&b'\\') || (open > 0 && bytes[open - 1] == b'\\') {
            return None;
        }
        (Id::String(std::str::from_utf8(text).ok()?.to_owned()), open)
    } else {
        let start = bytes[..end].iter().rposition(|b| !(b.is_ascii_digit() || *b == b'-')).map_or(0, |i| i + 1);
        let n = std::str::from_utf8(&bytes[start..end]).ok()?.parse().ok()?;
        (Id::Number(n), start)
    };
    let mut at = start;
    while at > 0 && bytes[at - 1].is_ascii_whitespace() {
        at -= 1;
    }
    if at == 0 || bytes[at - 1] != b':' {
        return None;
    }
    at -= 1;
    while at > 0 && bytes[at - 1].is_ascii_whitespace() {
        at -= 1;
    }
    let key = bytes[..at].strip_suffix(b"\"id\"")?;
    // The key opens a member: `,` or `{` before it, never a backslash (a key ending in `\"id`).
    let before = key.iter().rev().find(|b| !b.is_ascii_whitespace())?;
    matches!(before, b',' | b'{').then_some(id)
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The JSON string starting at `at` (its text, escapes resolved) and the index after it.
fn string_at(bytes: &[u8], at: usize) -> Option<(String, usize)> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut end = at + 1;
    loop {
        match bytes.get(end)? {
            b'\\' => end += 2,
            b'"' => break,
            _ => end += 1,
        }
    }
    let text: String = serde_json::from_slice(&bytes[at..=end]).ok()?;
    Some((text, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends(line: &str) -> Oversized {
        let b = line.as_bytes();
        let n = b.len().min(EDGE_BYTES);
        Oversized { head: b[..n].to_vec(), tail: b[b.len() - n..].to_vec(), len: b.len() }
    }

    fn big(text_len: usize) -> String {
        format!(r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#, "x".repeat(text_len))
    }

    #[test]
    fn the_id_is_read_from_the_start_as_we_and_python_write_it() {
        let line = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{}}}"#, big(5000));
        assert_eq!(ends(&line).identify(), Some(Identified::Response(Id::Number(7))));
        let line =
            format!(r#"{{"jsonrpc": "2.0", "id": "a\"b", "error": {{"code": 1, "message": "{}"}}}}"#, "y".repeat(5000));
        assert_eq!(ends(&line).identify(), Some(Identified::Response(Id::String("a\"b".into()))));
    }

    #[test]
    fn the_id_is_read_from_the_end_as_the_typescript_sdk_writes_it() {
        let line = format!(r#"{{"result":{},"jsonrpc":"2.0","id":-12}}"#, big(5000));
        assert_eq!(ends(&line).identify(), Some(Identified::Response(Id::Number(-12))));
        let line = format!(r#"{{"result":{}, "jsonrpc":"2.0", "id" : "r-1" }} "#, big(5000));
        assert_eq!(ends(&line).identify(), Some(Identified::Response(Id::String("r-1".into()))));
    }

    #[test]
    fn a_request_is_told_from_a_response() {
        let line = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}}"#, big(5000));
        assert_eq!(ends(&line).identify(), Some(Identified::Request(Id::Number(3))));
        let line = format!(r#"{{"method":"x","params":{},"jsonrpc":"2.0","id":4}}"#, big(5000));
        assert_eq!(ends(&line).identify(), Some(Identified::Request(Id::Number(4))));
    }

    #[test]
    fn an_id_nested_in_the_result_or_inside_a_string_is_not_taken() {
        // The last `"id"` belongs to an object inside the result: two closing braces follow it.
        let line = format!(r#"{{"result":{{"x":"{}","inner":{{"id":5}}}},"jsonrpc":"2.0"}}"#, "z".repeat(5000));
        assert_eq!(ends(&line).identify(), None);
        // A key ending in an escaped quote before `id`.
        let line = format!(r#"{{"result":{{"x":"{}"}},"a\"id":5}}"#, "z".repeat(5000));
        assert_eq!(ends(&line).identify(), None);
        // A notification has no id; a line that is not an object tells nothing.
        let line = format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{}}}"#, big(5000));
        assert_eq!(ends(&line).identify(), None);
        assert_eq!(ends(&"x".repeat(5000)).identify(), None);
        // Cut short at the start: an id cut before its end is not read.
        assert_eq!(Oversized { head: br#"{"jsonrpc":"2.0","id":12"#.to_vec(), tail: vec![], len: 0 }.identify(), None);
    }
}
