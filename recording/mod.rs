//! Recorded MCP sessions: the JSON Lines format (a header, then one message per line with its
//! direction and time) and the two recorders that write it.
//!
//! - [`Recording`] reads a file of that format; [`Header`], [`Entry`] and [`Dir`] are its parts.
//! - [`RecordingTransport`] wraps any [`Transport`](crate::transport::Transport) and writes the
//!   session it carries ([`RecordingDir`]: one new file per session, as `mcp-bridge serve
//!   --record DIR` does); [`SwitchedRecording`] records its session only while its
//!   [`RecordingSwitch`] is on (a console's start and stop).
//! - [`record`]: the stdio recorder that sits between a client and a server process.
//!
//! Not here: replaying, serving or checking a recording (the `mcp-conformance` package).

mod format;
pub mod record;
mod tee;

pub use format::{Dir, Entry, Header, Recording, RecordingError};
pub use tee::{
    Recorder, RecordingDir, RecordingSwitch, RecordingTransport, Side, SwitchedRecording, TeeOptions, HEADER_RESERVE,
};
