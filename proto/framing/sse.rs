//! Server-Sent Events framing, for the Streamable HTTP and legacy HTTP+SSE transports.
//!
//! [`SseDecoder`] follows the WHATWG HTML "event stream interpretation" rules on a
//! [`BytesMut`] the caller keeps filling; [`encode_event`] and [`encode_comment`] write events.
//! No IO and no JSON here: an event's `data` is handed on as text, to be parsed by
//! [`crate::proto::jsonrpc`].
//!
//! # Deviation from WHATWG: events with empty data
//!
//! WHATWG drops an event whose data buffer is empty. MCP servers (2025-11-25, resumable
//! streams) send a "priming" event `id: 123\ndata: \n\n` whose only purpose is to tell the
//! client the event id to resume from, so this decoder dispatches an event whenever it carried
//! a `data`, `id` or `retry` field, even with empty data. A block made only of comments,
//! `event:` lines or unknown fields still yields nothing.
//!
//! # Wire format written
//!
//! ```text
//! id: 7
//! event: message
//! retry: 1000
//! data: {"jsonrpc":"2.0"}
//!
//! ```
//!
//! Fields in that order, each present only if set (`data` always, at least one line),
//! a space after every colon, `\n` line endings, a blank line at the end.

use bytes::{Buf, BytesMut};
use memchr::{memchr2, memchr3};

use super::{FrameError, DEFAULT_MAX_FRAME_BYTES};

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field; `None` means the default type, `message`. An empty value is `None`.
    pub event: Option<String>,
    /// The `data` lines joined by `\n` (empty for an MCP priming event).
    pub data: String,
    /// The `id` field carried by this event, if any. `Some("")` clears the last event id.
    /// The id to resume from (`Last-Event-ID`) persists across events that carry none:
    /// read it from [`SseDecoder::last_event_id`].
    pub id: Option<String>,
    /// The `retry` field (reconnection time in milliseconds), if this event carried a valid one.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// An event of the default type with this data and no id.
    pub fn new(data: impl Into<String>) -> Self {
        Self { data: data.into(), ..Self::default() }
    }

    /// Sets the `id` field.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the `event` field.
    pub fn with_event(mut self, event: impl Into<String>) -> Self {
        self.event = Some(event.into());
        self
    }

    /// Sets the `retry` field.
    pub fn with_retry(mut self, millis: u64) -> Self {
        self.retry = Some(millis);
        self
    }

    /// The event type: the `event` field, or `"message"` if it had none.
    pub fn event_type(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

/// What [`SseDecoder::decode_item`] yields: an event, or a comment line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event.
    Event(SseEvent),
    /// A comment line (`: text`), without the colon and one optional following space.
    /// Servers send these as keep-alives; they carry no meaning.
    Comment(String),
}

/// What to throw away after an oversized line was reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Discard {
    Nothing,
    /// The rest of the current (comment) line.
    Line,
    /// Every line up to and including the next blank line.
    Event,
}

/// Decodes a Server-Sent Events stream.
///
/// - Lines end in `\r\n`, `\n` or `\r` (a `\r\n` split across two reads is one line ending).
/// - A UTF-8 byte order mark at the start of the stream is dropped.
/// - Bytes that are not UTF-8 become U+FFFD, as WHATWG prescribes; that is not an error.
/// - One event may take at most [`DEFAULT_MAX_FRAME_BYTES`] (overridable) counting the bytes of
///   its field lines without line endings, and the two more bytes each invalid UTF-8 byte of a
///   `data`, `event` or `id` value takes as U+FFFD; a comment line on its own is held to the
///   same cap.
///   A larger event yields [`FrameError::TooLarge`] once, is skipped up to the blank line that
///   ends it without being buffered, and decoding resumes after it.
/// - An event is dispatched by a blank line; see the module docs for events with empty data.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    max: usize,
    /// How far the caller's buffer has already been searched for a line ending.
    next_index: usize,
    /// Whether the start of the stream (and a possible BOM) is behind us.
    started: bool,
    /// The last line ended in `\r`: a `\n` right after it belongs to that line ending.
    after_cr: bool,
    discard: Discard,
    /// While discarding, part of the current line was already thrown away, so its ending does
    /// not make a blank line.
    dropped_partial: bool,
    /// Bytes of field lines of the event being built.
    event_bytes: usize,
    /// The event being built (fields seen since the last blank line).
    cur_event: Option<String>,
    cur_data: String,
    cur_has_data: bool,
    cur_id: Option<String>,
    cur_retry: Option<u64>,
    /// Kept across events and streams.
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseDecoder {
    /// A decoder with the default per-event cap, [`DEFAULT_MAX_FRAME_BYTES`].
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_FRAME_BYTES)
    }

    /// A decoder whose events may hold at most `max` bytes of field lines.
    pub fn with_max_event_bytes(max: usize) -> Self {
        Self {
            max,
            next_index: 0,
            started: false,
            after_cr: false,
            discard: Discard::Nothing,
            dropped_partial: false,
            event_bytes: 0,
            cur_event: None,
            cur_data: String::new(),
            cur_has_data: false,
            cur_id: None,
            cur_retry: None,
            last_event_id: None,
            retry_ms: None,
        }
    }

    /// The per-event cap in bytes.
    pub fn max_event_bytes(&self) -> usize {
        self.max
    }

    /// The last event id of the stream: set by every dispatched event that carried an `id`
    /// (an empty one clears it), kept across events and across [`decode_eof`](Self::decode_eof).
    /// This is what a client sends as `Last-Event-ID` when it reconnects.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection time in milliseconds last set by a `retry` field, if any.
    pub fn retry(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Takes the next event out of `buf`, skipping comments, or `None` if `buf` holds no
    /// complete event yet. Call it repeatedly until it returns `None`, then append more input;
    /// pass the same `buf` every time.
    ///
    /// # Errors
    ///
    /// `Some(Err(FrameError::TooLarge { .. }))` for an oversized event (or comment line); keep
    /// calling to get the events after it.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Option<Result<SseEvent, FrameError>> {
        loop {
            match self.decode_item(buf)? {
                Ok(SseItem::Event(event)) => return Some(Ok(event)),
                Ok(SseItem::Comment(_)) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Like [`decode`](Self::decode), but also yields comment lines.
    ///
    /// # Errors
    ///
    /// As for [`decode`](Self::decode).
    pub fn decode_item(&mut self, buf: &mut BytesMut) -> Option<Result<SseItem, FrameError>> {
        loop {
            if !self.started {
                let n = buf.len().min(BOM.len());
                if buf[..n] != BOM[..n] {
                    self.started = true;
                } else if n == BOM.len() {
                    buf.advance(BOM.len());
                    self.started = true;
                } else {
                    // Empty, or a prefix of the BOM: wait for more.
                    return None;
                }
            }
            if self.after_cr {
                let &first = buf.first()?;
                if first == b'\n' {
                    buf.advance(1);
                }
                self.after_cr = false;
            }
            // `min` only matters if the caller swapped or shrank `buf`; then search it anew.
            self.next_index = self.next_index.min(buf.len());
            let Some(i) = memchr2(b'\n', b'\r', &buf[self.next_index..]) else {
                return self.partial_line(buf);
            };
            let end = self.next_index + i;
            self.next_index = 0;
            self.after_cr = buf[end] == b'\r';
            let item = self.line(&buf[..end]);
            buf.advance(end + 1);
            if let Some(item) = item {
                return Some(item);
            }
        }
    }

    /// At the end of the stream: yields what complete events `buf` still holds, then drops an
    /// unfinished event (WHATWG: it is not dispatched) and empties `buf`. The decoder is then
    /// ready for a new stream (a reconnection), keeping [`last_event_id`](Self::last_event_id)
    /// and [`retry`](Self::retry).
    ///
    /// # Errors
    ///
    /// As for [`decode`](Self::decode).
    pub fn decode_eof(&mut self, buf: &mut BytesMut) -> Option<Result<SseEvent, FrameError>> {
        if let Some(result) = self.decode(buf) {
            return Some(result);
        }
        buf.clear();
        self.next_index = 0;
        self.started = false;
        self.after_cr = false;
        self.discard = Discard::Nothing;
        self.dropped_partial = false;
        self.reset_event();
        None
    }

    /// No line ending in `buf` yet: check the cap on what is pending, or drop it if discarding.
    fn partial_line(&mut self, buf: &mut BytesMut) -> Option<Result<SseItem, FrameError>> {
        self.next_index = buf.len();
        if buf.is_empty() {
            return None;
        }
        if self.discard != Discard::Nothing {
            buf.clear();
            self.next_index = 0;
            self.dropped_partial = true;
            return None;
        }
        let comment = buf[0] == b':';
        let seen = buf.len() + if comment { 0 } else { self.event_bytes };
        if seen <= self.max {
            return None;
        }
        buf.clear();
        self.next_index = 0;
        self.dropped_partial = true;
        self.discard = if comment {
            Discard::Line
        } else {
            self.reset_event();
            Discard::Event
        };
        Some(Err(self.too_large(seen)))
    }

    /// Interprets one complete line (without its ending).
    fn line(&mut self, line: &[u8]) -> Option<Result<SseItem, FrameError>> {
        let dropped_partial = std::mem::take(&mut self.dropped_partial);
        match self.discard {
            Discard::Nothing => {}
            Discard::Line => {
                self.discard = Discard::Nothing;
                return None;
            }
            Discard::Event => {
                if line.is_empty() && !dropped_partial {
                    self.discard = Discard::Nothing;
                }
                return None;
            }
        }
        if line.is_empty() {
            return self.dispatch().map(|e| Ok(SseItem::Event(e)));
        }
        if let Some(comment) = line.strip_prefix(b":") {
            if line.len() > self.max {
                return Some(Err(self.too_large(line.len())));
            }
            let text = comment.strip_prefix(b" ").unwrap_or(comment);
            return Some(Ok(SseItem::Comment(String::from_utf8_lossy(text).into_owned())));
        }
        self.event_bytes += line.len();
        if self.event_bytes > self.max {
            let seen = self.event_bytes;
            self.reset_event();
            self.discard = Discard::Event;
            return Some(Err(self.too_large(seen)));
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        // from_utf8 is the fast path (MCP data is JSON, valid UTF-8); lossy otherwise, and then
        // each invalid byte becomes U+FFFD, three bytes: those count against the cap too, so
        // what is kept never exceeds it.
        let text = match name {
            b"data" | b"event" | b"id" => match std::str::from_utf8(value) {
                Ok(text) => std::borrow::Cow::Borrowed(text),
                Err(_) => {
                    let text = String::from_utf8_lossy(value);
                    self.event_bytes += text.len().saturating_sub(value.len());
                    if self.event_bytes > self.max {
                        let seen = self.event_bytes;
                        self.reset_event();
                        self.discard = Discard::Event;
                        return Some(Err(self.too_large(seen)));
                    }
                    text
                }
            },
            _ => std::borrow::Cow::Borrowed(""),
        };
        match name {
            b"data" => {
                if self.cur_has_data {
                    self.cur_data.push('\n');
                }
                self.cur_has_data = true;
                self.cur_data.push_str(&text);
            }
            b"event" => {
                self.cur_event = (!value.is_empty()).then(|| text.into_owned());
            }
            // An id containing NUL is ignored.
            b"id" if !value.contains(&0) => {
                self.cur_id = Some(text.into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // All digits, so parsing fails only on overflow: ignore the field then.
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("").parse() {
                    self.cur_retry = Some(ms);
                }
            }
            _ => {}
        }
        None
    }

    /// A blank line: hand out the event built so far, if it carried data, an id or a retry.
    fn dispatch(&mut self) -> Option<SseEvent> {
        if !self.cur_has_data && self.cur_id.is_none() && self.cur_retry.is_none() {
            self.reset_event();
            return None;
        }
        let event = SseEvent {
            event: self.cur_event.take(),
            data: std::mem::take(&mut self.cur_data),
            id: self.cur_id.take(),
            retry: self.cur_retry.take(),
        };
        if let Some(id) = &event.id {
            self.last_event_id = (!id.is_empty()).then(|| id.clone());
        }
        if event.retry.is_some() {
            self.retry_ms = event.retry;
        }
        self.reset_event();
        Some(event)
    }

    fn reset_event(&mut self) {
        self.event_bytes = 0;
        self.cur_event = None;
        self.cur_data.clear();
        self.cur_has_data = false;
        self.cur_id = None;
        self.cur_retry = None;
    }

    fn too_large(&self, seen: usize) -> FrameError {
        FrameError::TooLarge { max: self.max, seen }
    }
}

/// Appends `event` to `dst` in the format shown in the module docs.
///
/// `data` is split at every line ending (`\r\n`, `\n` or `\r`) into several `data:` lines, so
/// after a round trip its line endings all read `\n`. An empty `event` is not written.
///
/// # Errors
///
/// [`FrameError::InvalidField`] if `id` contains `\r`, `\n` or NUL, or `event` contains `\r`
/// or `\n`: those would end the field early (or make decoders ignore the id), and changing an
/// id silently would break resumption, so they are refused rather than cleaned. `dst` is then
/// left untouched.
pub fn encode_event(event: &SseEvent, dst: &mut BytesMut) -> Result<(), FrameError> {
    if let Some(id) = &event.id {
        if let Some(at) = memchr3(b'\r', b'\n', 0, id.as_bytes()) {
            return Err(FrameError::InvalidField { field: "id", byte: id.as_bytes()[at] });
        }
    }
    if let Some(ty) = &event.event {
        if let Some(at) = memchr2(b'\r', b'\n', ty.as_bytes()) {
            return Err(FrameError::InvalidField { field: "event", byte: ty.as_bytes()[at] });
        }
    }
    dst.reserve(event.data.len() + 32);
    if let Some(id) = &event.id {
        put_field(dst, b"id", id.as_bytes());
    }
    if let Some(ty) = event.event.as_deref().filter(|t| !t.is_empty()) {
        put_field(dst, b"event", ty.as_bytes());
    }
    if let Some(ms) = event.retry {
        put_field(dst, b"retry", ms.to_string().as_bytes());
    }
    for line in split_lines(event.data.as_bytes()) {
        put_field(dst, b"data", line);
    }
    dst.extend_from_slice(b"\n");
    Ok(())
}

/// Appends a `message` event with `data` (raw bytes, split into `data` lines like
/// [`encode_event`] does) and an optional `id`, without building an [`SseEvent`] first: the
/// writer's path for serialized messages.
///
/// # Errors
/// [`FrameError::InvalidField`] for an id [`encode_event`] would refuse; `dst` is then untouched.
pub fn encode_data_event(id: Option<&str>, data: &[u8], dst: &mut BytesMut) -> Result<(), FrameError> {
    if let Some(id) = id {
        if let Some(at) = memchr3(b'\r', b'\n', 0, id.as_bytes()) {
            return Err(FrameError::InvalidField { field: "id", byte: id.as_bytes()[at] });
        }
    }
    dst.reserve(data.len() + 32);
    if let Some(id) = id {
        put_field(dst, b"id", id.as_bytes());
    }
    for line in split_lines(data) {
        put_field(dst, b"data", line);
    }
    dst.extend_from_slice(b"\n");
    Ok(())
}

/// Appends a comment, for keep-alives: `: text\n`, one comment line per line of `text`
/// (`:\n` for empty text). Decoders ignore comments, and a comment never ends an event.
pub fn encode_comment(text: &str, dst: &mut BytesMut) {
    for line in split_lines(text.as_bytes()) {
        if line.is_empty() {
            dst.extend_from_slice(b":\n");
        } else {
            put_field(dst, b"", line);
        }
    }
}

fn put_field(dst: &mut BytesMut, name: &[u8], value: &[u8]) {
    dst.extend_from_slice(name);
    dst.extend_from_slice(b": ");
    dst.extend_from_slice(value);
    dst.extend_from_slice(b"\n");
}

/// Splits at `\r\n`, `\n` and `\r`; always yields at least one (possibly empty) line.
fn split_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let t = rest?;
        match memchr2(b'\r', b'\n', t) {
            None => {
                rest = None;
                Some(t)
            }
            Some(i) => {
                let skip = if t[i] == b'\r' && t.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                rest = Some(&t[i + skip..]);
                Some(&t[..i])
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Out = Result<SseItem, FrameError>;

    /// Feeds `chunks` to a fresh decoder with cap `max`, then ends the stream. `TooLarge::seen`
    /// depends on the chunking, so it is zeroed for comparison.
    fn run(max: usize, chunks: &[&[u8]]) -> Vec<Out> {
        let mut dec = SseDecoder::with_max_event_bytes(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(r) = dec.decode_item(&mut buf) {
                out.push(match r {
                    Err(FrameError::TooLarge { max, .. }) => Err(FrameError::TooLarge { max, seen: 0 }),
                    other => other,
                });
            }
        }
        assert!(dec.decode_eof(&mut buf).is_none());
        assert!(buf.is_empty());
        out
    }

    fn ev(event: Option<&str>, data: &str, id: Option<&str>, retry: Option<u64>) -> Out {
        Ok(SseItem::Event(SseEvent { event: event.map(Into::into), data: data.into(), id: id.map(Into::into), retry }))
    }

    fn comment(text: &str) -> Out {
        Ok(SseItem::Comment(text.into()))
    }

    /// BOM, comments, priming event, multi-line data with multi-byte characters, `\r\n`, `\n`
    /// and lone `\r` endings, retry, ignored fields, an oversized event (cap 64), invalid UTF-8
    /// and an unterminated last event.
    const MIXED: &[u8] = b"\xEF\xBB\xBF: hello\r\n\
        id: 1\r\n\
        data: \r\n\
        \r\n\
        event: message\n\
        data: {\"a\":\n\
        data:  \"\xC3\xA9\xF0\x9F\xA6\x80\"}\n\
        \n\
        \n\
        :keep-alive\r\r\
        id: 2\rretry: 3000\rdata:x\r\r\
        retry: 12a\n\
        id: bad\x00id\n\
        event\n\
        data\n\
        unknown: field\n\
        \n\
        data: 01234567890123456789012345678901234567890123456789012345678901234567890123456789\n\
        data: more\n\
        \n\
        event: only-type\n\
        \n\
        id:\n\
        \n\
        data: \xE6\x97\xA5\xFF\n\
        \n\
        data: never dispatched";

    fn mixed_expected() -> Vec<Out> {
        vec![
            comment("hello"),
            ev(None, "", Some("1"), None),
            ev(Some("message"), "{\"a\":\n \"é🦀\"}", None, None),
            comment("keep-alive"),
            ev(None, "x", Some("2"), Some(3000)),
            ev(None, "", None, None),
            Err(FrameError::TooLarge { max: 64, seen: 0 }),
            ev(None, "", Some(""), None),
            ev(None, "日\u{FFFD}", None, None),
        ]
    }

    #[test]
    fn invalid_utf8_counts_as_the_replacement_characters_it_becomes() {
        // "data: " and 20 invalid bytes: 26 bytes on the wire, 20 × U+FFFD = 60 bytes kept.
        let mut stream = b"data: ".to_vec();
        stream.extend([0xFF; 20]);
        stream.extend_from_slice(b"\n\ndata: ok\n\n");
        assert_eq!(run(40, &[&stream]), [Err(FrameError::TooLarge { max: 40, seen: 0 }), ev(None, "ok", None, None)]);
        let kept = run(80, &[&stream]);
        assert_eq!(kept[0], ev(None, &"\u{FFFD}".repeat(20), None, None), "within the cap it is kept, replaced");
        let mut id = b"id: ".to_vec();
        id.extend([0xC0; 30]);
        id.extend_from_slice(b"\ndata: x\n\n");
        assert_eq!(run(40, &[&id]), [Err(FrameError::TooLarge { max: 40, seen: 0 })]);
    }

    #[test]
    fn mixed_stream_whole() {
        assert_eq!(run(64, &[MIXED]), mixed_expected());
    }

    #[test]
    fn every_split_point_gives_the_same_items() {
        let want = mixed_expected();
        for i in 0..=MIXED.len() {
            let (a, b) = MIXED.split_at(i);
            assert_eq!(run(64, &[a, b]), want, "split at {i}");
        }
        for i in 0..=MIXED.len() {
            for j in i..=MIXED.len() {
                let chunks = [&MIXED[..i], &MIXED[i..j], &MIXED[j..]];
                assert_eq!(run(64, &chunks), want, "split at {i}/{j}");
            }
        }
        let bytes: Vec<&[u8]> = MIXED.chunks(1).collect();
        assert_eq!(run(64, &bytes), want);
    }

    #[test]
    fn last_event_id_persists() {
        let mut dec = SseDecoder::new();
        let mut buf = BytesMut::from(&b"id: 123\ndata: \n\ndata: a\n\nretry: 50\n\n"[..]);
        let priming = dec.decode(&mut buf).unwrap().unwrap();
        assert_eq!(priming.id.as_deref(), Some("123"));
        assert_eq!(priming.data, "");
        assert_eq!(dec.last_event_id(), Some("123"));
        let next = dec.decode(&mut buf).unwrap().unwrap();
        assert_eq!((next.id, next.data.as_str()), (None, "a"));
        assert_eq!(dec.last_event_id(), Some("123"));
        assert_eq!(dec.decode(&mut buf).unwrap().unwrap().retry, Some(50));
        assert_eq!(dec.retry(), Some(50));
        // A new stream after reconnecting keeps the id.
        assert!(dec.decode_eof(&mut buf).is_none());
        assert_eq!(dec.last_event_id(), Some("123"));
        buf.extend_from_slice(b"id:\ndata: z\n\n");
        assert_eq!(dec.decode(&mut buf).unwrap().unwrap().id.as_deref(), Some(""));
        assert_eq!(dec.last_event_id(), None);
    }

    #[test]
    fn blank_lines_alone_and_comments_yield_no_event() {
        let mut dec = SseDecoder::new();
        let mut buf = BytesMut::from(&b"\n\r\n\r: ping\n\n:\n\nevent: x\n\n"[..]);
        assert!(dec.decode(&mut buf).is_none());
        assert!(buf.is_empty());
    }

    #[test]
    fn crlf_split_across_reads_is_one_line_ending() {
        // `data: a\r` then `\n` then `data: b\n\n`: one event with two data lines. A spurious
        // blank line would dispatch "a" alone.
        let want = vec![ev(None, "a\nb", None, None)];
        assert_eq!(run(100, &[b"data: a\r", b"\n", b"data: b\n\n"]), want);
        assert_eq!(run(100, &[b"data: a\r", b"", b"\ndata: b\r", b"\n\r", b"\n"]), want);
        // A lone `\r` is a line ending too.
        assert_eq!(run(100, &[b"data: a\rdata: b\r\r"]), want);
    }

    #[test]
    fn bom_only_at_stream_start() {
        let want = vec![ev(None, "x", None, None)];
        assert_eq!(run(100, &[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]), want);
        // A second BOM is part of the first field name, which becomes unknown.
        assert_eq!(run(100, &[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"]), vec![]);
    }

    #[test]
    fn oversized_event_reported_once_and_not_buffered() {
        const MAX: usize = 64;
        const CHUNK: usize = 5;
        let mut input = b"id: 9\ndata: ".to_vec();
        input.extend(std::iter::repeat_n(b'q', 50 * MAX));
        input.extend_from_slice(b"\ndata: tail\n: note\n\ndata: after\n\n");
        let mut dec = SseDecoder::with_max_event_bytes(MAX);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in input.chunks(CHUNK) {
            buf.extend_from_slice(chunk);
            while let Some(r) = dec.decode(&mut buf) {
                out.push(r);
            }
            assert!(buf.len() <= MAX + CHUNK, "kept {}", buf.len());
        }
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(matches!(out[0], Err(FrameError::TooLarge { max: MAX, seen }) if seen > MAX));
        assert_eq!(out[1], Ok(SseEvent::new("after")));
        // The id of the dropped event was not committed.
        assert_eq!(dec.last_event_id(), None);
    }

    #[test]
    fn cap_counts_all_field_lines_of_an_event() {
        // 10 + 10 bytes fit a cap of 20; one more byte does not.
        assert_eq!(run(20, &[b"data: 1234\ndata: 1234\n\n"]), vec![ev(None, "1234\n1234", None, None)]);
        assert_eq!(
            run(20, &[b"data: 1234\ndata: 12345\n\ndata: ok\n\n"]),
            vec![Err(FrameError::TooLarge { max: 20, seen: 0 }), ev(None, "ok", None, None)]
        );
        // An oversized comment drops that line only.
        let mut long = b":".to_vec();
        long.extend([b'c'; 30]);
        long.extend_from_slice(b"\ndata: ok\n\n");
        assert_eq!(run(20, &[&long]), vec![Err(FrameError::TooLarge { max: 20, seen: 0 }), ev(None, "ok", None, None)]);
    }

    #[test]
    fn field_parsing_rules() {
        // One leading space stripped, not two; no colon means empty value.
        assert_eq!(run(100, &[b"data:  a\n\n"]), vec![ev(None, " a", None, None)]);
        assert_eq!(run(100, &[b"data\ndata\n\n"]), vec![ev(None, "\n", None, None)]);
        // retry must be all digits.
        assert_eq!(run(100, &[b"retry: 1 0\ndata: x\n\n"]), vec![ev(None, "x", None, None)]);
        assert_eq!(run(100, &[b"retry: 99999999999999999999999\ndata: x\n\n"]), vec![ev(None, "x", None, None)]);
        // A colon in the value is kept.
        assert_eq!(run(100, &[b"data: a: b\n\n"]), vec![ev(None, "a: b", None, None)]);
    }

    #[test]
    fn encode_data_event_matches_encode_event() {
        for (id, data) in [(Some("1_2"), "{\"a\":1}"), (None, ""), (Some(""), "x\ny\r\nz"), (None, "\u{e9}")] {
            let mut direct = BytesMut::new();
            encode_data_event(id, data.as_bytes(), &mut direct).unwrap();
            let mut event = SseEvent::new(data);
            event.id = id.map(str::to_owned);
            let mut via_event = BytesMut::new();
            encode_event(&event, &mut via_event).unwrap();
            assert_eq!(direct, via_event);
        }
        let mut dst = BytesMut::new();
        assert!(encode_data_event(Some("a\nb"), b"{}", &mut dst).is_err());
        assert!(dst.is_empty());
    }

    #[test]
    fn encode_event_wire_shape() {
        let mut dst = BytesMut::new();
        let event = SseEvent::new("{}").with_id("7").with_event("message");
        encode_event(&event, &mut dst).unwrap();
        assert_eq!(&dst[..], b"id: 7\nevent: message\ndata: {}\n\n");

        dst.clear();
        encode_event(&SseEvent::new("").with_id("123"), &mut dst).unwrap();
        assert_eq!(&dst[..], b"id: 123\ndata: \n\n");

        dst.clear();
        let event = SseEvent::new("a\nb\r\nc\rd").with_retry(1000);
        encode_event(&event, &mut dst).unwrap();
        assert_eq!(&dst[..], b"retry: 1000\ndata: a\ndata: b\ndata: c\ndata: d\n\n");

        dst.clear();
        encode_comment("ping", &mut dst);
        encode_comment("", &mut dst);
        encode_comment("two\nlines", &mut dst);
        assert_eq!(&dst[..], b": ping\n:\n: two\n: lines\n");
    }

    #[test]
    fn encode_event_refuses_line_breaks_in_id_and_event() {
        let mut dst = BytesMut::new();
        let bad = [
            (SseEvent::new("x").with_id("1\n2"), "id", b'\n'),
            (SseEvent::new("x").with_id("1\r"), "id", b'\r'),
            (SseEvent::new("x").with_id("a\0b"), "id", 0),
            (SseEvent::new("x").with_event("a\nb"), "event", b'\n'),
            (SseEvent::new("x").with_id("ok").with_event("\r"), "event", b'\r'),
        ];
        for (event, field, byte) in bad {
            assert_eq!(encode_event(&event, &mut dst), Err(FrameError::InvalidField { field, byte }));
            assert!(dst.is_empty());
        }
    }

    #[test]
    fn encode_decode_round_trip() {
        let events = [
            SseEvent::new("line one\nline two\n\nline four").with_id("e-1"),
            SseEvent::new("").with_id("e-2").with_retry(500),
            SseEvent::new("{\"jsonrpc\":\"2.0\",\"result\":{}}").with_event("message"),
            SseEvent::new("\n"),
            SseEvent::new("trailing\n").with_event("custom"),
        ];
        let mut dst = BytesMut::new();
        for e in &events {
            encode_event(e, &mut dst).unwrap();
            encode_comment("keep-alive", &mut dst);
        }
        let mut dec = SseDecoder::new();
        for e in &events {
            assert_eq!(dec.decode(&mut dst).unwrap().as_ref(), Ok(e));
        }
        assert!(dec.decode(&mut dst).is_none());
        assert_eq!(dec.last_event_id(), Some("e-2"));
    }

    #[test]
    fn event_type_defaults_to_message() {
        assert_eq!(SseEvent::new("x").event_type(), "message");
        assert_eq!(SseEvent::new("x").with_event("ping").event_type(), "ping");
        assert_eq!(run(100, &[b"event:\ndata: x\n\n"]), vec![ev(None, "x", None, None)]);
    }

    /// Replays every SSE-borne message of the bundled recordings (priming events with empty
    /// data and the legacy `endpoint` event included) through the encoder and decoder.
    #[test]
    fn bundled_recordings_round_trip_as_events() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/recordings");
        let mut events = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension() != Some("jsonl".as_ref()) {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let Some(http) = v.get("http").filter(|h| h.get("sse_event_id").is_some()) else {
                    continue;
                };
                let data = match (v.get("msg"), v.get("raw")) {
                    (Some(msg), _) => msg.to_string(),
                    (None, Some(raw)) => raw.as_str().unwrap().to_owned(),
                    (None, None) => continue,
                };
                events.push(SseEvent {
                    event: http["sse_event"].as_str().map(Into::into),
                    data,
                    id: http["sse_event_id"].as_str().map(Into::into),
                    retry: None,
                });
            }
        }
        assert!(events.iter().any(|e| e.data.is_empty() && e.id.is_some()));
        let mut wire = BytesMut::new();
        for e in &events {
            encode_event(e, &mut wire).unwrap();
        }
        let chunks: Vec<&[u8]> = wire.chunks(97).collect();
        let want: Vec<Out> = events.into_iter().map(|e| Ok(SseItem::Event(e))).collect();
        assert_eq!(run(DEFAULT_MAX_FRAME_BYTES, &chunks), want);
    }
}
