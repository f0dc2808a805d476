//! The recorded-session format: JSON Lines, a header then one entry per message seen on the
//! wire (`conformance/recordings/README.md` is the reference).
//!
//! Entries keep their `msg` as raw JSON so that checks compare exactly what was on the wire.
//! This module reads and writes that format; it does not interpret the messages.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Line 1 of a recording.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// Format version; always 1.
    pub mcp_recording: u32,
    /// The file name without `.jsonl`.
    pub name: String,
    /// `stdio`, `streamable-http` or `sse`.
    pub transport: String,
    /// The client's `name` and `version` as it reported them.
    #[serde(default)]
    pub client: Option<Value>,
    /// The server's `name` and `version` as it reported them.
    #[serde(default)]
    pub server: Option<Value>,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// Other header members, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Which way a message travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dir {
    /// Client to server.
    #[serde(rename = "c2s")]
    ClientToServer,
    /// Server to client.
    #[serde(rename = "s2c")]
    ServerToClient,
}

impl Dir {
    /// The other direction.
    pub fn reverse(self) -> Dir {
        match self {
            Dir::ClientToServer => Dir::ServerToClient,
            Dir::ServerToClient => Dir::ClientToServer,
        }
    }

    /// `c2s` or `s2c`.
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::ClientToServer => "c2s",
            Dir::ServerToClient => "s2c",
        }
    }
}

/// Lines 2 and on: one message (or HTTP exchange) as seen.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// 1, 2, 3… in the order seen.
    pub seq: u64,
    /// Milliseconds since the recorder started.
    pub t_ms: u64,
    /// Which way it went.
    pub dir: Dir,
    /// The JSON-RPC message (or batch) as written on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<Box<RawValue>>,
    /// A payload that is not JSON (an SSE priming event, the legacy `endpoint` event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// The HTTP exchange that carried it (HTTP transports only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<Value>,
}

/// A whole recording.
#[derive(Debug, Clone)]
pub struct Recording {
    /// Where it was read from.
    pub path: PathBuf,
    /// Line 1.
    pub header: Header,
    /// The other lines, in order.
    pub entries: Vec<Entry>,
}

/// Why a recording could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum RecordingError {
    /// The file could not be read.
    Io(PathBuf, std::io::Error),
    /// The file is empty.
    Empty(PathBuf),
    /// A line is not what the format says.
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        source: serde_json::Error,
    },
}

impl fmt::Display for RecordingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordingError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            RecordingError::Empty(p) => write!(f, "{}: empty file, expected a recording header", p.display()),
            RecordingError::Line { path, line, source } => write!(f, "{}:{line}: {source}", path.display()),
        }
    }
}

impl std::error::Error for RecordingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordingError::Io(_, e) => Some(e),
            RecordingError::Line { source, .. } => Some(source),
            RecordingError::Empty(_) => None,
        }
    }
}

impl Recording {
    /// Reads a recording from `path`.
    ///
    /// # Errors
    /// When the file cannot be read or a line does not follow the format.
    pub fn read(path: &Path) -> Result<Recording, RecordingError> {
        let text = std::fs::read_to_string(path).map_err(|e| RecordingError::Io(path.to_owned(), e))?;
        Recording::parse(path, &text)
    }

    /// Parses the text of a recording; `path` is used in errors only.
    ///
    /// # Errors
    /// When a line does not follow the format.
    pub fn parse(path: &Path, text: &str) -> Result<Recording, RecordingError> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or_else(|| RecordingError::Empty(path.to_owned()))?;
        let line_error = |line: usize, source| RecordingError::Line { path: path.to_owned(), line: line + 1, source };
        let header: Header = serde_json::from_str(first).map_err(|e| line_error(0, e))?;
        let entries =
            lines.map(|(i, l)| serde_json::from_str(l).map_err(|e| line_error(i, e))).collect::<Result<_, _>>()?;
        Ok(Recording { path: path.to_owned(), header, entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_header_and_entries() {
        let text = concat!(
            r#"{"mcp_recording":1,"name":"x","transport":"stdio","client":{"name":"c","version":"1"},"server":{"name":"s","version":"2"},"protocol_version":"2025-11-25","recorded_at":"2026-11-30","description":"d"}"#,
            "\n",
            r#"{"seq":1,"t_ms":0,"dir":"c2s","msg":{"method":"ping","jsonrpc":"2.0","id":1}}"#,
            "\n",
            r#"{"seq":2,"t_ms":3,"dir":"s2c","raw":"","http":{"method":"POST","path":"/mcp","status":200}}"#,
            "\n"
        );
        let r = Recording::parse(Path::new("x.jsonl"), text).unwrap();
        assert_eq!(r.header.protocol_version, "2025-11-25");
        assert_eq!(r.header.extra["recorded_at"], "2026-11-30");
        assert_eq!(r.entries.len(), 2);
        assert_eq!(r.entries[0].dir, Dir::ClientToServer);
        assert_eq!(r.entries[0].msg.as_ref().unwrap().get(), r#"{"method":"ping","jsonrpc":"2.0","id":1}"#);
        assert_eq!(r.entries[1].raw.as_deref(), Some(""));
    }

    #[test]
    fn a_bad_line_names_file_and_line() {
        let text =
            "{\"mcp_recording\":1,\"name\":\"x\",\"transport\":\"stdio\",\"protocol_version\":\"v\"}\n{\"seq\":1}\n";
        let err = Recording::parse(Path::new("f.jsonl"), text).unwrap_err();
        assert!(err.to_string().starts_with("f.jsonl:2: "), "{err}");
    }
}
