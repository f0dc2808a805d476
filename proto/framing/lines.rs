//! Newline-delimited frames: the MCP stdio transport, one JSON-RPC message per line.
//!
//! [`LineDecoder`] cuts a [`BytesMut`] that the caller keeps filling into [`Frame`]s, and
//! [`encode_line`] writes one message plus `\n`. Nothing here reads or writes a file
//! descriptor, and nothing parses JSON: a frame is valid UTF-8 without line breaks, and
//! whether it is a valid JSON-RPC message is decided by [`crate::proto::jsonrpc`]
//! (a `MessageDecoder` that combines both will sit on top).

use std::fmt;

use bytes::{Buf, Bytes, BytesMut};
use memchr::{memchr, memchr2, memchr2_iter};

use super::oversized::{Oversized, EDGE_BYTES};
use super::{FrameError, DEFAULT_MAX_FRAME_BYTES};

/// One decoded line, without its line ending: a [`Bytes`] that is guaranteed valid UTF-8.
///
/// Cheap to clone (reference counted) and zero-copy from the decoder's buffer.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame(Bytes);

impl Frame {
    /// Wraps `bytes` after checking that they are UTF-8.
    ///
    /// # Errors
    ///
    /// [`FrameError::InvalidUtf8`] if they are not.
    pub fn new(bytes: Bytes) -> Result<Self, FrameError> {
        match std::str::from_utf8(&bytes) {
            Ok(_) => Ok(Self(bytes)),
            Err(e) => Err(FrameError::InvalidUtf8 { valid_up_to: e.valid_up_to() }),
        }
    }

    /// The frame as text.
    pub fn as_str(&self) -> &str {
        // SAFETY: `Frame::new` is the only constructor and it checked that `self.0` is UTF-8;
        // `Bytes` is immutable, so it still is. Re-validating here would make every access
        // O(n) for nothing.
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }

    /// The frame as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The underlying buffer.
    pub fn into_bytes(self) -> Bytes {
        self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the frame is empty (the decoder never yields an empty frame).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Frame").field(&self.as_str()).finish()
    }
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for Frame {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<[u8]> for Frame {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl From<Frame> for Bytes {
    fn from(frame: Frame) -> Bytes {
        frame.0
    }
}

/// Splits a byte stream into lines, in the manner of tokio-util's `LinesCodec` with a maximum
/// length, without depending on it.
///
/// - A line ends at `\n`; one `\r` before it is dropped, so `\r\n` works too.
/// - Lines that are empty or only spaces and tabs yield nothing.
/// - A line longer than the cap (default [`DEFAULT_MAX_FRAME_BYTES`], the line ending not
///   counted) yields [`FrameError::TooLarge`] once; its bytes are then thrown away as they
///   arrive, up to the next `\n`, and decoding resumes with the following line.
/// - A line that is not UTF-8 yields [`FrameError::InvalidUtf8`]; the next line decodes
///   normally.
///
/// The decoder keeps no bytes of its own: everything pending lives in the caller's buffer,
/// which it never lets grow past the cap plus what one read appended.
#[derive(Debug, Clone)]
pub struct LineDecoder {
    max: usize,
    /// How far the caller's buffer has already been searched for `\n`.
    next_index: usize,
    /// Inside an oversized line that was already reported: drop bytes up to the next `\n`.
    discarding: bool,
    /// The ends of the oversized line being dropped (while `discarding`), then of the last one
    /// dropped, until [`LineDecoder::take_oversized`].
    oversized: Option<Oversized>,
    /// Whether `oversized` is complete (its line ended).
    oversized_done: bool,
}

impl Default for LineDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl LineDecoder {
    /// A decoder with the default cap, [`DEFAULT_MAX_FRAME_BYTES`].
    pub fn new() -> Self {
        Self::with_max_frame_bytes(DEFAULT_MAX_FRAME_BYTES)
    }

    /// A decoder whose lines may be at most `max` bytes, line ending not counted.
    pub fn with_max_frame_bytes(max: usize) -> Self {
        Self { max, next_index: 0, discarding: false, oversized: None, oversized_done: false }
    }

    /// The cap in bytes.
    pub fn max_frame_bytes(&self) -> usize {
        self.max
    }

    /// Takes the next frame out of `buf`, or `None` if `buf` holds no complete line yet.
    ///
    /// Call it repeatedly until it returns `None`, then append more input to `buf`. The same
    /// `buf` must be passed every time; bytes of frames returned are removed from it.
    ///
    /// # Errors
    ///
    /// `Some(Err(_))` concerns one line only ([`FrameError::TooLarge`] or
    /// [`FrameError::InvalidUtf8`]); keep calling to get the following lines.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Option<Result<Frame, FrameError>> {
        loop {
            if self.discarding {
                // `buf` holds only bytes appended since the last call (it is cleared while
                // discarding), so searching from 0 rescans nothing.
                match memchr(b'\n', buf) {
                    Some(i) => {
                        self.note_dropped(&buf[..i], true);
                        buf.advance(i + 1);
                        self.discarding = false;
                        self.next_index = 0;
                    }
                    None => {
                        self.note_dropped(buf, false);
                        buf.clear();
                        self.next_index = 0;
                        return None;
                    }
                }
            }
            // `min` only matters if the caller swapped or shrank `buf`; then search it anew.
            self.next_index = self.next_index.min(buf.len());
            let Some(i) = memchr(b'\n', &buf[self.next_index..]) else {
                self.next_index = buf.len();
                // The finished line is at least this long: a final `\r` may be the start of
                // the line ending, every other byte is content.
                let at_least = buf.len() - usize::from(buf.last() == Some(&b'\r'));
                if at_least > self.max {
                    self.oversized = Some(Oversized::default());
                    self.oversized_done = false;
                    self.note_dropped(&buf[..at_least], false);
                    buf.clear();
                    self.next_index = 0;
                    self.discarding = true;
                    return Some(Err(FrameError::TooLarge { max: self.max, seen: at_least }));
                }
                return None;
            };
            let end = self.next_index + i;
            self.next_index = 0;
            let line = buf.split_to(end + 1).freeze().slice(..end);
            if let Some(result) = self.finish_line(line) {
                return Some(result);
            }
        }
    }

    /// Like [`decode`](Self::decode), for when the input has ended: a last line without `\n`
    /// is returned as a frame. Call it until it returns `None`; the decoder is then reset and
    /// `buf` is empty.
    ///
    /// # Errors
    ///
    /// As for [`decode`](Self::decode).
    pub fn decode_eof(&mut self, buf: &mut BytesMut) -> Option<Result<Frame, FrameError>> {
        if let Some(result) = self.decode(buf) {
            return Some(result);
        }
        // `decode` left no complete line; if it was discarding, `buf` is already empty and the
        // oversized tail was reported when discarding started.
        if self.discarding {
            self.oversized_done = true;
        }
        self.discarding = false;
        self.next_index = 0;
        if buf.is_empty() {
            return None;
        }
        let line = buf.split().freeze();
        self.finish_line(line)
    }

    /// The ends of the last line dropped for being over the cap, once it has ended (or the
    /// input did): what [`Oversized::identify`] reads its id from. Each is handed out once.
    pub fn take_oversized(&mut self) -> Option<Oversized> {
        if !self.oversized_done {
            return None;
        }
        self.oversized_done = false;
        self.oversized.take()
    }

    /// Notes `bytes` of the oversized line being dropped; `last` when its line ending followed.
    fn note_dropped(&mut self, bytes: &[u8], last: bool) {
        let Some(o) = self.oversized.as_mut() else { return };
        let bytes = if last { bytes.strip_suffix(b"\r").unwrap_or(bytes) } else { bytes };
        if o.head.len() < EDGE_BYTES {
            let n = (EDGE_BYTES - o.head.len()).min(bytes.len());
            o.head.extend_from_slice(&bytes[..n]);
        }
        let keep = bytes.len().min(EDGE_BYTES);
        o.tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        if o.tail.len() > EDGE_BYTES {
            o.tail.drain(..o.tail.len() - EDGE_BYTES);
        }
        o.len += bytes.len();
        self.oversized_done = last;
    }

    /// Turns one line (without `\n`) into a frame, an error, or nothing for a blank line.
    fn finish_line(&mut self, mut line: Bytes) -> Option<Result<Frame, FrameError>> {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.len() > self.max {
            self.oversized = Some(Oversized::default());
            self.note_dropped(&line, true);
            return Some(Err(FrameError::TooLarge { max: self.max, seen: line.len() }));
        }
        if line.iter().all(|&b| b == b' ' || b == b'\t' || b == b'\r') {
            return None;
        }
        Some(Frame::new(line))
    }
}

/// Checks that `json` can be written as one line: it holds no raw `\r` or `\n`.
///
/// # Errors
///
/// [`FrameError::LineBreak`] with the offset of the first one.
pub fn check_line(json: &[u8]) -> Result<(), FrameError> {
    match memchr2(b'\n', b'\r', json) {
        None => Ok(()),
        Some(at) => Err(FrameError::LineBreak { at }),
    }
}

/// Appends `json` and a `\n` to `dst`, replacing any raw `\r` or `\n` in `json` by a space.
///
/// In valid JSON a raw line break can only be whitespace between tokens (inside strings it must
/// be escaped), so the replacement keeps the value intact: pretty-printed JSON becomes one line.
/// If `json` is not valid JSON the replacement may change it; use [`try_encode_line`] or
/// [`check_line`] to refuse instead. The cap of a decoder is not checked here.
pub fn encode_line(json: &[u8], dst: &mut BytesMut) {
    dst.reserve(json.len() + 1);
    if memchr2(b'\n', b'\r', json).is_none() {
        dst.extend_from_slice(json);
    } else {
        let mut start = 0;
        for at in memchr2_iter(b'\n', b'\r', json) {
            dst.extend_from_slice(&json[start..at]);
            dst.extend_from_slice(b" ");
            start = at + 1;
        }
        dst.extend_from_slice(&json[start..]);
    }
    dst.extend_from_slice(b"\n");
}

/// Appends `json` and a `\n` to `dst`, or refuses if `json` holds a raw `\r` or `\n`.
///
/// # Errors
///
/// [`FrameError::LineBreak`]; `dst` is then left untouched.
pub fn try_encode_line(json: &[u8], dst: &mut BytesMut) -> Result<(), FrameError> {
    check_line(json)?;
    dst.reserve(json.len() + 1);
    dst.extend_from_slice(json);
    dst.extend_from_slice(b"\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    type Out = Result<String, FrameError>;

    /// Runs `dec` over `input` cut into `chunks`, then to end of input. `TooLarge::seen`
    /// depends on the chunking, so it is zeroed for comparison.
    fn run(mut dec: LineDecoder, chunks: &[&[u8]]) -> Vec<Out> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut push = |r: Result<Frame, FrameError>| {
            out.push(match r {
                Ok(f) => Ok(f.as_str().to_owned()),
                Err(FrameError::TooLarge { max, .. }) => Err(FrameError::TooLarge { max, seen: 0 }),
                Err(e) => Err(e),
            })
        };
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(r) = dec.decode(&mut buf) {
                push(r);
            }
        }
        while let Some(r) = dec.decode_eof(&mut buf) {
            push(r);
        }
        assert!(buf.is_empty());
        out
    }

    fn whole(max: usize, input: &[u8]) -> Vec<Out> {
        run(LineDecoder::with_max_frame_bytes(max), &[input])
    }

    fn too_large(max: usize) -> Out {
        Err(FrameError::TooLarge { max, seen: 0 })
    }

    /// Normal lines, `\r\n`, blank lines, an oversized line, invalid UTF-8, multi-byte
    /// characters, and a last line without `\n`.
    const MIXED: &[u8] = b"{\"a\":1}\n\
        {\"b\":\"\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\xA6\x80\"}\r\n\
        \n\
        \r\n\
        \t  \r\n\
        0123456789012345678901234567890123456789\n\
        {\"c\":\"bad \xFF\xFE\"}\n\
        {\"d\":\"\xE6\x97\xA5\xE6\x9C\xAC\"}\r\n\
        exactly-thirty-two-bytes-long-xx\r\n\
        exactly-thirty-three-bytes-long-x\r\n\
        {\"last\":true}";

    #[test]
    fn mixed_input_whole() {
        let got = whole(32, MIXED);
        let want: Vec<Out> = vec![
            Ok("{\"a\":1}".into()),
            Ok("{\"b\":\"été € 🦀\"}".into()),
            too_large(32),
            Err(FrameError::InvalidUtf8 { valid_up_to: 10 }),
            Ok("{\"d\":\"日本\"}".into()),
            Ok("exactly-thirty-two-bytes-long-xx".into()),
            too_large(32),
            Ok("{\"last\":true}".into()),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn every_split_point_gives_the_same_frames() {
        let want = whole(32, MIXED);
        for i in 0..=MIXED.len() {
            let (a, b) = MIXED.split_at(i);
            assert_eq!(run(LineDecoder::with_max_frame_bytes(32), &[a, b]), want, "split at {i}");
        }
        for i in 0..=MIXED.len() {
            for j in i..=MIXED.len() {
                let chunks = [&MIXED[..i], &MIXED[i..j], &MIXED[j..]];
                assert_eq!(run(LineDecoder::with_max_frame_bytes(32), &chunks), want, "{i}/{j}");
            }
        }
        let bytes: Vec<&[u8]> = MIXED.chunks(1).collect();
        assert_eq!(run(LineDecoder::with_max_frame_bytes(32), &bytes), want);
    }

    #[test]
    fn oversize_is_reported_once_and_the_next_line_decodes() {
        let mut input = vec![b'x'; 1000];
        input.extend_from_slice(b"\n{\"ok\":1}\n");
        let want = vec![too_large(10), Ok("{\"ok\":1}".into())];
        assert_eq!(whole(10, &input), want);
        let chunks: Vec<&[u8]> = input.chunks(3).collect();
        assert_eq!(run(LineDecoder::with_max_frame_bytes(10), &chunks), want);
    }

    #[test]
    fn oversized_line_is_not_buffered() {
        const MAX: usize = 64;
        const CHUNK: usize = 7;
        let mut dec = LineDecoder::with_max_frame_bytes(MAX);
        let mut buf = BytesMut::new();
        let mut input = vec![b'y'; 100 * MAX];
        input.extend_from_slice(b"\nnext\n");
        let mut out = Vec::new();
        for chunk in input.chunks(CHUNK) {
            buf.extend_from_slice(chunk);
            assert!(buf.len() <= MAX + CHUNK, "buffered {}", buf.len());
            while let Some(r) = dec.decode(&mut buf) {
                out.push(r.map(|f| f.as_str().to_owned()));
            }
            assert!(buf.len() <= MAX + 1, "kept {}", buf.len());
        }
        assert_eq!(out.len(), 2);
        assert!(matches!(out[0], Err(FrameError::TooLarge { max: MAX, seen }) if seen > MAX));
        assert_eq!(out[1], Ok("next".to_owned()));
    }

    #[test]
    fn the_ends_of_an_oversized_line_are_kept_at_every_split_point() {
        use crate::proto::framing::oversized::Identified;
        use crate::proto::jsonrpc::Id;
        let text = "x".repeat(3 * EDGE_BYTES);
        let first = format!(r#"{{"jsonrpc":"2.0","id":9,"result":{{"text":"{text}"}}}}"#);
        let last = format!(r#"{{"result":{{"text":"{text}"}},"jsonrpc":"2.0","id":"t"}}"#);
        for (line, id) in [(first, Id::Number(9)), (last, Id::String("t".into()))] {
            let input = format!("{line}\r\n{{\"ok\":1}}\n");
            for at in (0..input.len()).step_by(97) {
                let mut dec = LineDecoder::with_max_frame_bytes(64);
                let mut buf = BytesMut::new();
                let mut frames = Vec::new();
                for chunk in [&input.as_bytes()[..at], &input.as_bytes()[at..]] {
                    buf.extend_from_slice(chunk);
                    while let Some(r) = dec.decode(&mut buf) {
                        frames.push(r.map(|f| f.as_str().to_owned()));
                    }
                }
                assert!(matches!(frames[0], Err(FrameError::TooLarge { max: 64, .. })), "{frames:?}");
                assert_eq!(frames[1], Ok("{\"ok\":1}".to_owned()));
                let o = dec.take_oversized().expect("the ends of the line");
                assert_eq!(o.len, line.len(), "split at {at}");
                assert_eq!(o.head, line.as_bytes()[..EDGE_BYTES]);
                assert_eq!(o.tail, line.as_bytes()[line.len() - EDGE_BYTES..]);
                assert_eq!(o.identify(), Some(Identified::Response(id.clone())));
                assert_eq!(dec.take_oversized(), None, "handed out once");
            }
        }
    }

    #[test]
    fn oversized_tail_at_eof_is_reported_once() {
        let input = vec![b'z'; 50];
        assert_eq!(whole(10, &input), vec![too_large(10)]);
        let chunks: Vec<&[u8]> = input.chunks(4).collect();
        assert_eq!(run(LineDecoder::with_max_frame_bytes(10), &chunks), vec![too_large(10)]);
    }

    #[test]
    fn cap_counts_content_not_the_line_ending() {
        assert_eq!(whole(3, b"abc\r\n"), vec![Ok("abc".into())]);
        assert_eq!(run(LineDecoder::with_max_frame_bytes(3), &[b"abc\r", b"\n"]), vec![Ok("abc".into())]);
        assert_eq!(whole(3, b"abcd\n"), vec![too_large(3)]);
        assert_eq!(whole(3, b"abc"), vec![Ok("abc".into())]);
        assert_eq!(whole(3, b"abc\r"), vec![Ok("abc".into())]);
    }

    #[test]
    fn invalid_utf8_affects_one_frame() {
        let got = whole(100, b"\xC3(\n{\"x\":2}\n");
        assert_eq!(got, vec![Err(FrameError::InvalidUtf8 { valid_up_to: 0 }), Ok("{\"x\":2}".into())]);
    }

    #[test]
    fn blank_lines_and_crlf() {
        assert_eq!(whole(100, b"\n\r\n \t\n\r\n"), Vec::<Out>::new());
        assert_eq!(whole(100, b"a\r\nb\n"), vec![Ok("a".into()), Ok("b".into())]);
        // Only one `\r` before `\n` is a line ending; an inner `\r` stays.
        assert_eq!(whole(100, b"a\rb\r\n"), vec![Ok("a\rb".into())]);
        // Leading whitespace of a non-blank line is kept.
        assert_eq!(whole(100, b"  {}\n"), vec![Ok("  {}".into())]);
    }

    #[test]
    fn decode_eof_returns_last_unterminated_line() {
        let mut dec = LineDecoder::new();
        let mut buf = BytesMut::from(&b"{\"a\":1}\n{\"b\":2}"[..]);
        assert_eq!(dec.decode(&mut buf).unwrap().unwrap().as_str(), "{\"a\":1}");
        assert!(dec.decode(&mut buf).is_none());
        assert_eq!(dec.decode_eof(&mut buf).unwrap().unwrap().as_str(), "{\"b\":2}");
        assert!(dec.decode_eof(&mut buf).is_none());
        assert!(buf.is_empty());
    }

    #[test]
    fn encoder_wire_shape() {
        let mut dst = BytesMut::new();
        encode_line(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, &mut dst);
        assert_eq!(&dst[..], b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        dst.clear();
        encode_line(b"{\r\n  \"a\": 1\n}", &mut dst);
        assert_eq!(&dst[..], b"{    \"a\": 1 }\n");
    }

    #[test]
    fn pretty_json_becomes_one_line_with_the_same_value() {
        let value = serde_json::json!({
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"text": "two\nlines\r\n", "list": [1, 2, {"deep": null}]}
        });
        let pretty = serde_json::to_vec_pretty(&value).unwrap();
        assert!(check_line(&pretty).is_err());
        let mut dst = BytesMut::new();
        encode_line(&pretty, &mut dst);
        assert_eq!(memchr(b'\n', &dst), Some(dst.len() - 1));
        assert!(check_line(&dst[..dst.len() - 1]).is_ok());
        let mut dec = LineDecoder::new();
        let frame = dec.decode(&mut dst).unwrap().unwrap();
        let back: serde_json::Value = serde_json::from_str(frame.as_str()).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn encoded_frame_decodes_to_itself() {
        let frames = ["{}", "{\"a\":\"\\n\"}", "[1,2,3]", "{\"é\":\"🦀\"}"];
        let mut dst = BytesMut::new();
        for f in frames {
            try_encode_line(f.as_bytes(), &mut dst).unwrap();
        }
        let mut dec = LineDecoder::new();
        for f in frames {
            assert_eq!(dec.decode(&mut dst).unwrap().unwrap().as_str(), f);
        }
        assert!(dec.decode(&mut dst).is_none());
    }

    #[test]
    fn try_encode_line_refuses_line_breaks() {
        let mut dst = BytesMut::new();
        assert_eq!(try_encode_line(b"{\n}", &mut dst), Err(FrameError::LineBreak { at: 1 }));
        assert_eq!(check_line(b"ab\r"), Err(FrameError::LineBreak { at: 2 }));
        assert!(dst.is_empty());
    }

    #[test]
    fn frame_accessors() {
        let f = Frame::new(Bytes::from_static("héllo".as_bytes())).unwrap();
        assert_eq!(f.as_str(), "héllo");
        assert_eq!(f.as_bytes(), "héllo".as_bytes());
        assert_eq!(f.len(), 6);
        assert_eq!(f.clone().into_bytes(), Bytes::from_static("héllo".as_bytes()));
        assert_eq!(Frame::new(Bytes::from_static(b"ab\xFF")), Err(FrameError::InvalidUtf8 { valid_up_to: 2 }));
    }

    /// Every bundled recording is JSONL: fed in odd-sized chunks, each line comes out as one
    /// frame that parses as JSON.
    #[test]
    fn bundled_recordings_decode_line_by_line() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/recordings");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension() != Some("jsonl".as_ref()) {
                continue;
            }
            files += 1;
            let input = std::fs::read(&path).unwrap();
            let text = std::str::from_utf8(&input).unwrap();
            let want: Vec<Out> = text.lines().filter(|l| !l.trim().is_empty()).map(|l| Ok(l.to_owned())).collect();
            let chunks: Vec<&[u8]> = input.chunks(113).collect();
            let got = run(LineDecoder::new(), &chunks);
            assert_eq!(got, want, "{}", path.display());
            for frame in got {
                serde_json::from_str::<serde_json::Value>(&frame.unwrap()).unwrap();
            }
        }
        assert!(files > 0);
    }
}
