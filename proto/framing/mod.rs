//! Framing: cutting a byte stream into messages and writing messages back as bytes.
//!
//! - [`lines`]: newline-delimited frames, the MCP stdio transport (one JSON-RPC message per line).
//! - [`messages`]: lines decoded into JSON-RPC messages, one bad line costing only itself.
//! - [`oversized`]: the id of a line too large to keep, read from its ends.
//! - [`sse`]: Server-Sent Events, for the Streamable HTTP and legacy HTTP+SSE transports.
//!
//! Both work on [`bytes::BytesMut`] buffers that the caller fills; this module does no IO
//! (no tokio, no `std::io::Read`) and, but for [`messages`], does not parse JSON. A frame is only "one message's worth
//! of valid UTF-8"; turning it into a JSON-RPC message is the job of [`crate::proto::jsonrpc`],
//! which [`MessageDecoder`] calls for each line.
//!
//! Decoders never rescan bytes they have already searched, and never hold more than their
//! size cap plus what one read appended: an oversized frame is reported once and then skipped
//! without being buffered.

use std::fmt;

pub mod lines;
pub mod messages;
pub mod oversized;
pub mod sse;

pub use lines::{check_line, encode_line, try_encode_line, Frame, LineDecoder};
pub use messages::{encode_message, LineError, MessageDecoder};
pub use sse::{encode_comment, encode_data_event, encode_event, SseDecoder, SseEvent, SseItem};

/// Default cap on one frame (a line, or one SSE event): 4 MiB.
///
/// MCP messages are usually a few kilobytes, but tool results and resources carry images,
/// audio and file contents as base64 inline, so a single honest message can reach megabytes.
/// 4 MiB admits those while bounding what a broken or hostile peer can make us buffer.
/// Override it with [`LineDecoder::with_max_frame_bytes`] or [`SseDecoder::with_max_event_bytes`].
pub const DEFAULT_MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

/// Why a frame could not be decoded or encoded.
///
/// Decoding errors concern one frame only: the decoder that returned one carries on with the
/// next frame.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// A frame was longer than the decoder's cap. It is reported once and then skipped.
    TooLarge {
        /// The cap in bytes.
        max: usize,
        /// Bytes of the frame seen when the decoder gave up (more than `max`). This is a lower
        /// bound, and depends on how the input was split into reads.
        seen: usize,
    },
    /// A line was not valid UTF-8.
    InvalidUtf8 {
        /// Length of the valid prefix of the line, as in [`std::str::Utf8Error::valid_up_to`].
        valid_up_to: usize,
    },
    /// A raw `\r` or `\n` where one line was required (see [`check_line`]).
    LineBreak {
        /// Byte offset of the first offending byte.
        at: usize,
    },
    /// An SSE field value that would break the stream: a line break in `id` or `event`,
    /// or a NUL in `id` (which decoders ignore).
    InvalidField {
        /// The field name, `"id"` or `"event"`.
        field: &'static str,
        /// The offending byte.
        byte: u8,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { max, seen } => {
                write!(f, "frame too large: saw {seen} bytes, limit is {max}")
            }
            Self::InvalidUtf8 { valid_up_to } => {
                write!(f, "frame is not valid utf-8 after byte {valid_up_to}")
            }
            Self::LineBreak { at } => write!(f, "raw line break at byte {at} inside a frame"),
            Self::InvalidField { field, byte } => {
                write!(f, "sse field `{field}` must not contain byte {byte:#04x}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_lowercase_without_period() {
        let errors = [
            FrameError::TooLarge { max: 4, seen: 5 },
            FrameError::InvalidUtf8 { valid_up_to: 3 },
            FrameError::LineBreak { at: 1 },
            FrameError::InvalidField { field: "id", byte: b'\n' },
        ];
        for e in errors {
            let s = e.to_string();
            assert!(!s.ends_with('.'), "{s}");
            assert_eq!(s.chars().next().unwrap().to_lowercase().next(), s.chars().next());
        }
        assert_eq!(
            FrameError::InvalidField { field: "id", byte: b'\n' }.to_string(),
            "sse field `id` must not contain byte 0x0a"
        );
    }

    #[test]
    fn default_cap_is_four_mib() {
        assert_eq!(DEFAULT_MAX_FRAME_BYTES, 4_194_304);
    }
}
