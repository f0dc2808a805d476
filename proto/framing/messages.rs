//! Newline-delimited JSON-RPC messages: [`LineDecoder`] and [`jsonrpc::decode`] glued together,
//! the way the stdio transport reads and writes them.
//!
//! Each line is one message (or, in a 2025-03-26 session, a batch). A line that is too long,
//! not UTF-8, not JSON or not a valid JSON-RPC message is an error for that line alone: the
//! decoder carries on with the next one, so one bad frame never costs the messages after it.

use std::fmt;

use bytes::BytesMut;

use super::{FrameError, LineDecoder};
use crate::proto::jsonrpc::{self, DecodeError, Message, Payload};
use crate::proto::mcp_types::ServerTypedParams;
use crate::proto::version::ProtocolVersion;

/// Why one line did not give a message.
#[derive(Debug)]
#[non_exhaustive]
pub enum LineError {
    /// The line could not be framed (too large, not UTF-8).
    Frame(FrameError),
    /// The line is not a valid JSON-RPC message.
    Message(DecodeError),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::Frame(e) => e.fmt(f),
            LineError::Message(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LineError::Frame(e) => Some(e),
            LineError::Message(e) => Some(e),
        }
    }
}

impl LineError {
    /// The JSON-RPC error code to answer with: -32700 for a line that is not JSON text,
    /// -32600 for JSON that is not a valid message (too large: -32600 too, as the frame is
    /// rejected without being read).
    pub fn code(&self) -> jsonrpc::ErrorCode {
        match self {
            LineError::Frame(FrameError::InvalidUtf8 { .. }) => jsonrpc::ErrorCode::PARSE_ERROR,
            LineError::Frame(_) => jsonrpc::ErrorCode::INVALID_REQUEST,
            LineError::Message(e) => e.code(),
        }
    }
}

/// Decodes JSON-RPC messages from a newline-delimited byte stream.
#[derive(Debug, Default)]
pub struct MessageDecoder {
    lines: LineDecoder,
    version: Option<ProtocolVersion>,
    typed_params: bool,
}

impl MessageDecoder {
    /// A decoder with the default frame cap ([`super::DEFAULT_MAX_FRAME_BYTES`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder whose lines may be at most `max` bytes.
    pub fn with_max_frame_bytes(max: usize) -> Self {
        MessageDecoder { lines: LineDecoder::with_max_frame_bytes(max), version: None, typed_params: false }
    }

    /// Tells the decoder the session's revision, which decides whether batches are accepted.
    pub fn set_version(&mut self, version: Option<ProtocolVersion>) {
        self.version = version;
    }

    /// Whether a server's `tools/call` params are decoded into their type in the envelope's pass
    /// ([`jsonrpc::decode_typed`] with [`ServerTypedParams`]): off by default. For a receiver
    /// that decodes them anyway (the server layer), not where the exact bytes matter (a proxy, a
    /// recorder, a conformance replay).
    pub fn set_typed_params(&mut self, on: bool) {
        self.typed_params = on;
    }

    /// The next message (or batch) in `buf`, `None` when `buf` holds no complete line.
    ///
    /// # Errors
    /// A [`LineError`] for a line that gave no message; call again for the next one.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Option<Result<Payload, LineError>> {
        let frame = self.lines.decode(buf)?;
        Some(self.decode_frame(frame))
    }

    /// Like [`MessageDecoder::decode`] at the end of input: a last line without a newline is
    /// still a message.
    ///
    /// # Errors
    /// As [`MessageDecoder::decode`].
    pub fn decode_eof(&mut self, buf: &mut BytesMut) -> Option<Result<Payload, LineError>> {
        let frame = self.lines.decode_eof(buf)?;
        Some(self.decode_frame(frame))
    }

    /// The cap in bytes.
    pub fn max_frame_bytes(&self) -> usize {
        self.lines.max_frame_bytes()
    }

    /// The ends of the last line dropped for being over the cap ([`LineDecoder::take_oversized`]).
    pub fn take_oversized(&mut self) -> Option<super::oversized::Oversized> {
        self.lines.take_oversized()
    }

    fn decode_frame(&self, frame: Result<super::Frame, FrameError>) -> Result<Payload, LineError> {
        let frame = frame.map_err(LineError::Frame)?;
        let decoded = if self.typed_params {
            jsonrpc::decode_typed::<ServerTypedParams>(frame.as_bytes(), self.version)
        } else {
            jsonrpc::decode(frame.as_bytes(), self.version)
        };
        decoded.map_err(LineError::Message)
    }
}

/// Appends `message` to `dst` as one line, serializing straight into `dst` (no intermediate
/// buffer). A message whose typed body fails to serialize (a `Serialize` impl that refuses,
/// a map with keys JSON cannot have) leaves `dst` as it was and returns serde_json's error: the
/// caller decides what its sender learns.
pub fn encode_message(message: &Message, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
    use bytes::BufMut;
    let start = dst.len();
    if let Err(e) = message.write_json(&mut dst.writer()) {
        dst.truncate(start);
        return Err(e);
    }
    // serde_json escapes line breaks inside strings and writes no whitespace of its own, but raw
    // bodies passed through from elsewhere may hold insignificant line breaks: they become
    // spaces, which JSON treats the same.
    let breaks: Vec<usize> = memchr::memchr2_iter(b'\n', b'\r', &dst[start..]).collect();
    for at in breaks {
        dst[start + at] = b' ';
    }
    dst.extend_from_slice(b"\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8], decoder: &mut MessageDecoder) -> Vec<Result<String, String>> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(item) = decoder.decode_eof(&mut buf) {
            out.push(match item {
                Ok(Payload::Single(m)) => Ok(m.to_string()),
                Ok(Payload::Batch(ms)) => Ok(format!("batch of {}", ms.len())),
                Err(e) => Err(format!("{} {e}", e.code())),
            });
        }
        out
    }

    #[test]
    fn bad_lines_cost_only_themselves() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\
            not json\n\
            {\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}\n\
            {\"id\":2,\"method\":\"ping\"}\n\
            \r\n\
            {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n\
            {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        let out = decode_all(input, &mut MessageDecoder::new());
        assert_eq!(out.len(), 6, "{out:?}");
        assert_eq!(out[0], Ok(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_owned()));
        assert!(out[1].as_ref().unwrap_err().starts_with("-32700 invalid json"), "{:?}", out[1]);
        assert!(out[2].as_ref().unwrap_err().starts_with("-32700 frame is not valid utf-8"), "{:?}", out[2]);
        assert_eq!(out[3], Err("-32600 missing \"jsonrpc\": \"2.0\"".to_owned()));
        assert_eq!(out[4], Ok(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#.to_owned()));
        assert_eq!(out[5], Ok(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned()));
    }

    #[test]
    fn last_line_without_newline_and_oversize() {
        let mut decoder = MessageDecoder::with_max_frame_bytes(64);
        let long = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{{\"p\":\"{}\"}}}}\n", "a".repeat(100));
        let input = format!("{long}{{\"jsonrpc\":\"2.0\",\"method\":\"y\"}}");
        let out = decode_all(input.as_bytes(), &mut decoder);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(out[0].as_ref().unwrap_err().starts_with("-32600 frame too large"), "{:?}", out[0]);
        assert_eq!(out[1], Ok(r#"{"jsonrpc":"2.0","method":"y"}"#.to_owned()));
    }

    #[test]
    fn batches_follow_the_session_version() {
        let input = b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]\n";
        let mut decoder = MessageDecoder::new();
        assert!(decode_all(input, &mut decoder)[0].as_ref().unwrap_err().contains("batches are not allowed"));
        decoder.set_version(Some(ProtocolVersion::V2025_03_26));
        assert_eq!(decode_all(input, &mut decoder), [Ok("batch of 2".to_owned())]);
    }

    #[test]
    fn encoded_messages_are_one_line_each() {
        let pretty = "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"result\": {\n    \"a\": [1,\n 2]\n  }\n}";
        let message = Message::from_str(pretty).unwrap();
        let mut buf = BytesMut::new();
        encode_message(&message, &mut buf).unwrap();
        encode_message(&message, &mut buf).unwrap();
        assert_eq!(buf.iter().filter(|b| **b == b'\n').count(), 2);
        let out = decode_all(&buf, &mut MessageDecoder::new());
        assert_eq!(out.len(), 2);
        let value: serde_json::Value = serde_json::from_str(out[0].as_ref().unwrap()).unwrap();
        assert_eq!(value, serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"a": [1, 2]}}));
    }
}
