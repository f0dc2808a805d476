//! The recording tee: a [`Transport`] wrapper ([`RecordingTransport`]) that writes every
//! message it receives and sends, with its direction and `t_ms` since it started, to a file in
//! the recording format (`conformance/recordings/README.md`), so that live traffic (each
//! downstream session of `mcp-bridge serve --record DIR`) becomes recordings the conformance
//! suite replays.
//!
//! Which way a message went depends on which end the wrapped transport is ([`Side`]): a
//! server's transport receives `c2s` and sends `s2c`, a client's the reverse. A recording made
//! on the server side replays against a server (`mcp-conformance replay FILE --server CMD`);
//! one made on the client side, too: either way it holds both directions.
//!
//! The file is valid at every moment, not only at the end: the header comes first, written at
//! creation padded with spaces to [`HEADER_RESERVE`] bytes (JSON allows trailing whitespace)
//! and rewritten in place as soon as the `initialize` exchange (or the 2026-07-28 `_meta` and
//! `server/discover`) names client, server and protocol version; every message is one line
//! written with one `write` call before the message is handed on (for `recv`: before it is
//! returned), so an answer is never on record before what it answers and a crash of the
//! process loses at most the message being written. Lines are not `fsync`ed: a crash of the
//! machine may lose what the kernel had not written out. A header that outgrows the reserve
//! (a very long description or peer name) is written by rewriting the file when the
//! transport is closed or dropped.
//!
//! A failing write (disk full) stops the recording, never the session: the transport goes on
//! and [`RecordingTransport::recording_error`] tells what happened.
//!
//! The file is opened for each write and closed after it, never held between messages: a host
//! recording thousands of sessions at once (`mcp-bridge serve --record`) holds no file
//! descriptor for them, only while a line is written, and cannot run out under a low
//! `ulimit -n`. The price is an `open` and a `close` per message, small beside the session's
//! own IO.
//!
//! Messages are recorded as this crate encodes them (a peer's raw params and results keep their
//! text; typed ones are re-serialized), without `http` members: the file's `transport` is the
//! message-level form, `stdio` by default ([`TeeOptions::transport`]), whatever carried the
//! session.
//!
//! One transport is one recording: a stateless HTTP server (and a 2026-07-28 one) hands each
//! POST a transport of its own, so there each exchange becomes a file of its own.
//!
//! Not here: the HTTP exchanges (statuses, headers, SSE framing — `record_http` captures
//! those, as a proxy), frames that failed to decode (there is no message to record), rotation
//! or size caps.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use super::format::Dir;
use super::record::{header_line, push_entry, Logged, Payload};
use crate::proto::jsonrpc::{Id, Message};
use crate::proto::timestamp::utc_rfc3339;
use crate::transport::forward_queries::forward_queries;
use crate::transport::{Transport, TransportError};

/// Bytes kept for the header line (its line end included) so that it can be rewritten in
/// place: 2048.
pub const HEADER_RESERVE: usize = 2048;

/// Which end of the session the wrapped transport is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// A server's transport: what it receives is `c2s`, what it sends `s2c`.
    Server,
    /// A client's transport: what it sends is `c2s`, what it receives `s2c`.
    Client,
}

impl Side {
    fn received(self) -> Dir {
        match self {
            Side::Server => Dir::ClientToServer,
            Side::Client => Dir::ServerToClient,
        }
    }
}

/// How a recording is made. Every field has a documented default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TeeOptions {
    /// Which end the wrapped transport is.
    pub side: Side,
    /// The header's `transport`: `stdio` (the message-level form: no `http` members).
    pub transport: String,
    /// The header's `description`: `recorded by mcpwire RecordingTransport (server side)`.
    pub description: Option<String>,
}

impl TeeOptions {
    /// Recording a server's transport (a downstream session of the bridge).
    pub fn server_side() -> TeeOptions {
        TeeOptions { side: Side::Server, transport: "stdio".into(), description: None }
    }

    /// Recording a client's transport.
    pub fn client_side() -> TeeOptions {
        TeeOptions { side: Side::Client, ..TeeOptions::server_side() }
    }

    /// Another header `description`.
    pub fn description(mut self, description: impl Into<String>) -> TeeOptions {
        self.description = Some(description.into());
        self
    }

    /// Another header `transport`.
    pub fn transport(mut self, transport: impl Into<String>) -> TeeOptions {
        self.transport = transport.into();
        self
    }
}

/// An open recording file, not yet attached to a transport: [`Recorder::wrap`] attaches it.
/// Opening first lets a host that cannot create the file still serve the session unrecorded.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    side: Side,
    writer: Writer,
}

impl Recorder {
    /// Creates (or truncates) the recording at `path` and writes its provisional header.
    ///
    /// # Errors
    /// When the file cannot be created or written.
    pub fn create(path: impl Into<PathBuf>, options: TeeOptions) -> io::Result<Recorder> {
        let path = path.into();
        let file = File::create(&path)?;
        Recorder::start(path, file, options)
    }

    fn start(path: PathBuf, file: File, options: TeeOptions) -> io::Result<Recorder> {
        let side_name = match options.side {
            Side::Server => "server side",
            Side::Client => "client side",
        };
        let mut writer = Writer {
            path: path.clone(),
            name: path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
            transport: options.transport,
            description: options
                .description
                .unwrap_or_else(|| format!("recorded by mcpwire RecordingTransport ({side_name})")),
            start: Instant::now(),
            started: SystemTime::now(),
            seq: 0,
            evidence: Vec::new(),
            awaited: Vec::new(),
            header: String::new(),
            header_outgrown: false,
            error: None,
        };
        writer.write_header(Some(file))?;
        Ok(Recorder { path, side: options.side, writer })
    }

    /// Where the recording is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records everything `inner` receives and sends from now on.
    pub fn wrap<T: Transport>(self, inner: T) -> RecordingTransport<T> {
        RecordingTransport { inner, side: self.side, path: self.path, writer: Mutex::new(self.writer) }
    }
}

/// A directory of recordings, one file per session, named by the time it started and a
/// counter: `session-20261201T101400.123Z-0001.jsonl`.
#[derive(Debug)]
pub struct RecordingDir {
    dir: PathBuf,
    counter: AtomicU64,
}

impl RecordingDir {
    /// Uses `dir`, creating it (and its parents) if needed.
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<RecordingDir> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(RecordingDir { dir, counter: AtomicU64::new(0) })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Opens the next session's recording. A name taken already (another process recording
    /// into the same directory) is skipped: files are created, never overwritten.
    ///
    /// # Errors
    /// When no file can be created.
    pub fn next(&self, options: TeeOptions) -> io::Result<Recorder> {
        let stamp: String = utc_rfc3339(SystemTime::now()).chars().filter(|c| !matches!(c, '-' | ':')).collect();
        let mut last = None;
        for _ in 0..64 {
            let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
            let path = self.dir.join(format!("session-{stamp}-{n:04}.jsonl"));
            match File::options().write(true).create_new(true).open(&path) {
                Ok(file) => return Recorder::start(path, file, options),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free recording name")))
    }
}

#[derive(Debug)]
struct Writer {
    /// The recording, opened for each write.
    path: PathBuf,
    name: String,
    transport: String,
    description: String,
    start: Instant,
    started: SystemTime,
    seq: u64,
    /// The few messages the header is made of: `initialize`, `server/discover`, the first
    /// request with `_meta` client info, and their answers.
    evidence: Vec<Logged>,
    /// Ids of evidence requests whose answers are evidence too.
    awaited: Vec<Id>,
    /// The header as last written (without padding).
    header: String,
    /// The header no longer fits [`HEADER_RESERVE`]: the file is rewritten when finished.
    header_outgrown: bool,
    /// Why the recording stopped.
    error: Option<io::Error>,
}

impl Writer {
    /// The recording, open for writing at its end.
    fn open(&self) -> io::Result<File> {
        File::options().append(true).open(&self.path)
    }

    /// Writes the header if it changed; `first`: the new, empty file, written at its start.
    fn write_header(&mut self, first: Option<File>) -> io::Result<()> {
        let header = header_line(&self.name, &self.transport, &self.description, self.started, &self.evidence);
        if header == self.header && first.is_none() {
            return Ok(());
        }
        self.header = header;
        if self.header.len() + 1 > HEADER_RESERVE {
            if let Some(mut file) = first {
                // Written whole now; rewritten with the file at the end.
                file.write_all(format!("{}\n", self.header).as_bytes())?;
            }
            self.header_outgrown = true;
            return Ok(());
        }
        if self.header_outgrown {
            return Ok(());
        }
        let mut line = self.header.clone();
        line.extend(std::iter::repeat_n(' ', HEADER_RESERVE - 1 - self.header.len()));
        line.push('\n');
        match first {
            Some(mut file) => file.write_all(line.as_bytes()),
            None => {
                // Not in append mode: the header is rewritten where it stands.
                let mut file = File::options().write(true).open(&self.path)?;
                file.seek(SeekFrom::Start(0))?;
                file.write_all(line.as_bytes())
            }
        }
    }

    fn record(&mut self, dir: Dir, message: &Message) {
        if self.error.is_some() {
            return;
        }
        let mut text = String::from_utf8_lossy(&message.to_vec()).into_owned();
        if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
            // Only whitespace in valid JSON; the format keeps one message per line.
            text.retain(|c| c != '\n' && c != '\r');
        }
        let t_ms = self.start.elapsed().as_millis() as u64;
        let logged = Logged { t_ms, dir, payload: Payload::Message(text), http: None };
        self.seq += 1;
        let mut line = String::new();
        push_entry(&mut line, self.seq, &logged);
        let evidence = self.is_evidence(dir, message);
        if evidence {
            self.evidence.push(logged);
        }
        let written = self.open().and_then(|mut file| file.write_all(line.as_bytes())).and_then(|()| {
            if evidence {
                self.write_header(None)
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            self.error = Some(e);
        }
    }

    /// Whether `message` names a peer or the version (see `record::peers`), noting the
    /// requests whose answers will.
    fn is_evidence(&mut self, dir: Dir, message: &Message) -> bool {
        match (dir, message) {
            (Dir::ClientToServer, Message::Request(r)) => {
                let named = r.method == "initialize" || r.method == "server/discover";
                let meta = !named
                    && self.evidence.is_empty()
                    && r.params.as_ref().and_then(|p| p.to_raw().ok()).is_some_and(|raw| {
                        memchr::memmem::find(raw.get().as_bytes(), b"io.modelcontextprotocol/clientInfo").is_some()
                    });
                if named {
                    self.awaited.push(r.id.clone());
                }
                named || meta
            }
            (Dir::ServerToClient, Message::Response(r)) => self.take_awaited(&r.id),
            (Dir::ServerToClient, Message::Error(e)) => e.id.as_ref().is_some_and(|id| self.take_awaited(id)),
            _ => false,
        }
    }

    fn take_awaited(&mut self, id: &Id) -> bool {
        let found = self.awaited.iter().position(|a| a == id);
        found.map(|i| self.awaited.remove(i)).is_some()
    }

    /// Makes the file whole: the final header in place, or the whole file rewritten when the
    /// header outgrew its reserve.
    fn finish(&mut self, path: &Path) {
        if self.error.is_some() || !self.header_outgrown {
            return;
        }
        let rewritten = (|| -> io::Result<()> {
            // Every line went out with `write`: the file holds them all.
            let text = std::fs::read_to_string(path)?;
            let body = text.split_once('\n').map_or("", |(_, rest)| rest);
            let header = header_line(&self.name, &self.transport, &self.description, self.started, &self.evidence);
            let temporary = path.with_extension("jsonl.partial");
            std::fs::write(&temporary, format!("{header}\n{body}"))?;
            std::fs::rename(&temporary, path)?;
            self.header = header;
            self.header_outgrown = false;
            Ok(())
        })();
        if let Err(e) = rewritten {
            self.error = Some(e);
        }
    }
}

/// A transport that records everything passing through it (see the module docs).
///
/// # Cancel safety
/// As the wrapped transport's: a message is recorded when `recv` returns it, and before `send`
/// hands it on (a message whose `send` is then cancelled or fails is on record even so).
pub struct RecordingTransport<T> {
    inner: T,
    side: Side,
    path: PathBuf,
    writer: Mutex<Writer>,
}

impl<T> std::fmt::Debug for RecordingTransport<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingTransport").field("path", &self.path).field("side", &self.side).finish_non_exhaustive()
    }
}

impl<T> RecordingTransport<T> {
    /// Creates the recording at `path` and wraps `inner` (see [`Recorder`] to open the file
    /// before giving up the transport).
    ///
    /// # Errors
    /// When the file cannot be created.
    pub fn create(inner: T, path: impl Into<PathBuf>, options: TeeOptions) -> io::Result<RecordingTransport<T>>
    where
        T: Transport,
    {
        Ok(Recorder::create(path, options)?.wrap(inner))
    }

    /// Where the recording is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The wrapped transport.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// Why the recording stopped, if a write failed (the transport went on regardless).
    pub fn recording_error(&self) -> Option<String> {
        self.lock().error.as_ref().map(ToString::to_string)
    }

    /// Messages recorded so far.
    pub fn recorded(&self) -> u64 {
        self.lock().seq
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, dir: Dir, message: &Message) {
        self.lock().record(dir, message);
    }

    fn finish(&self) {
        let mut writer = self.lock();
        writer.finish(&self.path);
    }
}

impl<T: Transport> Transport for RecordingTransport<T> {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.record(self.side.received().reverse(), &message);
        self.inner.send(message).await
    }

    async fn send_related(&self, message: Message, related: &Id) -> Result<(), TransportError> {
        self.record(self.side.received().reverse(), &message);
        self.inner.send_related(message, related).await
    }

    forward_queries!(Transport, |this| &this.inner);

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        let received = self.inner.recv().await;
        if let Ok(Some(message)) = &received {
            self.record(self.side.received(), message);
        }
        received
    }

    async fn close(&self) -> Result<(), TransportError> {
        let closed = self.inner.close().await;
        self.finish();
        closed
    }
}

impl<T> Drop for RecordingTransport<T> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The switch of a [`SwitchedRecording`]: records its session from [`start`](Self::start) to
/// [`stop`](Self::stop), as many times as wanted, each time in the file of the [`Recorder`]
/// given (e.g. a console's "record this session").
///
/// A recording started after the session opened still replays as a session: it begins with
/// the session's opening exchange (`initialize`, its answer and `notifications/initialized`,
/// kept by the switch from the start; `t_ms` 0), then what passes from the moment it started.
#[derive(Debug)]
pub struct RecordingSwitch {
    /// Whether a message passing needs the state at all (the opening is still being kept, or a
    /// recording is under way): off, a message costs one atomic load.
    active: std::sync::atomic::AtomicBool,
    state: Mutex<SwitchState>,
}

impl Default for RecordingSwitch {
    fn default() -> Self {
        RecordingSwitch { active: std::sync::atomic::AtomicBool::new(true), state: Mutex::default() }
    }
}

#[derive(Debug, Default)]
struct SwitchState {
    /// The session's opening messages, kept until the first other message passes.
    opening: Vec<(Dir, Message)>,
    opened: bool,
    /// The recording under way: its file and writer.
    recording: Option<(PathBuf, Writer)>,
}

impl RecordingSwitch {
    fn lock(&self) -> std::sync::MutexGuard<'_, SwitchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records from now on in `recorder`'s file (its side is the [`SwitchedRecording`]'s),
    /// after the session's opening exchange; a recording under way is finished first.
    pub fn start(&self, recorder: Recorder) {
        let mut state = self.lock();
        if let Some((path, mut writer)) = state.recording.take() {
            writer.finish(&path);
        }
        let Recorder { path, mut writer, .. } = recorder;
        for (dir, message) in &state.opening {
            writer.record(*dir, message);
        }
        state.recording = Some((path, writer));
        self.active.store(true, Ordering::Release);
    }

    /// Stops recording: the file is made whole; its path, if a recording was under way.
    pub fn stop(&self) -> Option<PathBuf> {
        let mut state = self.lock();
        let (path, mut writer) = state.recording.take()?;
        self.active.store(!state.opened, Ordering::Release);
        drop(state);
        writer.finish(&path);
        Some(path)
    }

    /// The file being written, if recording.
    pub fn recording(&self) -> Option<PathBuf> {
        self.lock().recording.as_ref().map(|(path, _)| path.clone())
    }

    /// Why the recording under way stopped writing (a failed write), if it did.
    pub fn recording_error(&self) -> Option<String> {
        self.lock().recording.as_ref().and_then(|(_, writer)| writer.error.as_ref().map(ToString::to_string))
    }

    /// The `clientInfo` of the session's `initialize`, once it passed.
    pub fn client_info(&self) -> Option<serde_json::Value> {
        let state = self.lock();
        state.opening.iter().find_map(|(_, message)| match message {
            Message::Request(r) if r.method == "initialize" => {
                let raw = r.params.as_ref()?.to_raw().ok()?;
                let params: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
                params.get("clientInfo").cloned()
            }
            _ => None,
        })
    }

    fn record(&self, dir: Dir, message: &Message) {
        if !self.active.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.lock();
        if !state.opened {
            let opening = match message {
                Message::Request(r) => r.method == "initialize",
                Message::Notification(n) => n.method == "notifications/initialized",
                Message::Response(_) | Message::Error(_) => state.opening.len() == 1,
            };
            if opening {
                state.opening.push((dir, message.clone()));
            }
            state.opened = !opening || state.opening.len() == 3;
            if state.opened && state.recording.is_none() {
                self.active.store(false, Ordering::Release);
            }
        }
        if let Some((_, writer)) = state.recording.as_mut() {
            writer.record(dir, message);
        }
    }
}

/// A transport that records its session only while its [`RecordingSwitch`] is on (see there);
/// off (once the opening exchange is kept), it costs an atomic load per message.
pub struct SwitchedRecording<T> {
    inner: T,
    side: Side,
    switch: std::sync::Arc<RecordingSwitch>,
}

impl<T> std::fmt::Debug for SwitchedRecording<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwitchedRecording")
            .field("side", &self.side)
            .field("switch", &self.switch)
            .finish_non_exhaustive()
    }
}

impl<T> SwitchedRecording<T> {
    /// Wraps `inner`, the `side` end of its session, with a switch that is off.
    pub fn new(inner: T, side: Side) -> SwitchedRecording<T> {
        SwitchedRecording { inner, side, switch: std::sync::Arc::default() }
    }

    /// The switch, to keep where whoever starts and stops the recording finds it.
    pub fn switch(&self) -> std::sync::Arc<RecordingSwitch> {
        self.switch.clone()
    }
}

impl<T: Transport> Transport for SwitchedRecording<T> {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.switch.record(self.side.received().reverse(), &message);
        self.inner.send(message).await
    }

    async fn send_related(&self, message: Message, related: &Id) -> Result<(), TransportError> {
        self.switch.record(self.side.received().reverse(), &message);
        self.inner.send_related(message, related).await
    }

    forward_queries!(Transport, |this| &this.inner);

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        let received = self.inner.recv().await;
        if let Ok(Some(message)) = &received {
            self.switch.record(self.side.received(), message);
        }
        received
    }

    async fn close(&self) -> Result<(), TransportError> {
        let closed = self.inner.close().await;
        self.switch.stop();
        closed
    }
}

impl<T> Drop for SwitchedRecording<T> {
    fn drop(&mut self) {
        self.switch.stop();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::recording::Recording;
    use crate::transport::inproc;
    use crate::transport::Limits;

    fn message(value: serde_json::Value) -> Message {
        Message::from_str(&value.to_string()).unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpwire-tee-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test]
    async fn a_switched_recording_holds_the_opening_and_what_passed_while_on() {
        let dir = scratch("switched");
        let (server_end, client_end) = inproc::pair(Limits::default());
        let tee = SwitchedRecording::new(server_end, Side::Server);
        let switch = tee.switch();
        let from_client = |value: serde_json::Value| {
            let (client_end, tee) = (&client_end, &tee);
            async move {
                client_end.send(message(value)).await.unwrap();
                tee.recv().await.unwrap().unwrap();
            }
        };
        from_client(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}))
        .await;
        tee.send(message(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25",
            "capabilities":{},"serverInfo":{"name":"s","version":"2"}}})))
            .await
            .unwrap();
        from_client(json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
        from_client(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})).await;
        assert_eq!(switch.client_info(), Some(json!({"name":"c","version":"1"})));
        assert_eq!(switch.recording(), None);

        let recordings = RecordingDir::new(&dir).unwrap();
        switch.start(recordings.next(TeeOptions::server_side()).unwrap());
        let path = switch.recording().unwrap();
        from_client(json!({"jsonrpc":"2.0","id":2,"method":"ping"})).await;
        tee.send(message(json!({"jsonrpc":"2.0","id":2,"result":{}}))).await.unwrap();
        assert_eq!(switch.stop(), Some(path.clone()));
        from_client(json!({"jsonrpc":"2.0","id":3,"method":"ping"})).await;

        let r = Recording::read(&path).unwrap();
        let methods: Vec<String> = r
            .entries
            .iter()
            .map(|e| {
                let value: serde_json::Value = serde_json::from_str(e.msg.as_ref().unwrap().get()).unwrap();
                format!(
                    "{} {}",
                    e.dir.as_str(),
                    value.get("method").map_or(format!("answer {}", value["id"]), |m| m.to_string())
                )
            })
            .collect();
        assert_eq!(
            methods,
            ["c2s \"initialize\"", "s2c answer 0", "c2s \"notifications/initialized\"", "c2s \"ping\"", "s2c answer 2"]
        );
        assert_eq!(r.header.client, Some(json!({"name":"c","version":"1"})));
        assert_eq!(r.header.server, Some(json!({"name":"s","version":"2"})));
        assert_eq!(switch.stop(), None, "stopped already");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn the_file_is_a_valid_recording_after_every_message() {
        let dir = scratch("valid");
        let path = dir.join("s.jsonl");
        let (server_end, client_end) = inproc::pair(Limits::default());
        let tee = RecordingTransport::create(server_end, &path, TeeOptions::server_side()).unwrap();
        let read = || Recording::read(&path).unwrap();
        assert_eq!(read().header.protocol_version, "unknown");
        assert_eq!(read().entries.len(), 0);

        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}});
        client_end.send(message(init)).await.unwrap();
        tee.recv().await.unwrap().unwrap();
        let r = read();
        assert_eq!(r.entries.len(), 1);
        assert_eq!(r.header.client, Some(json!({"name":"c","version":"1"})));
        assert_eq!(r.header.protocol_version, "unknown", "not answered yet");

        let answer = json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18",
            "capabilities":{},"serverInfo":{"name":"s","version":"2"}}});
        tee.send(message(answer)).await.unwrap();
        let r = read();
        assert_eq!(r.header.protocol_version, "2025-06-18");
        assert_eq!(r.header.server, Some(json!({"name":"s","version":"2"})));
        assert_eq!(r.header.transport, "stdio");
        assert!(r.header.extra["started_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!((r.entries[0].dir, r.entries[1].dir), (Dir::ClientToServer, Dir::ServerToClient));
        assert_eq!(r.entries[1].seq, 2);
        // The in-place header keeps its reserve: the first entry starts at the same offset.
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.find("\n{\"seq\":1,").unwrap(), HEADER_RESERVE - 1);

        // Line ends inside a peer's raw params (whitespace) are dropped: one message, one line.
        let spaced = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"a\":\r\n1}}";
        client_end.send(Message::from_str(spaced).unwrap()).await.unwrap();
        tee.recv().await.unwrap().unwrap();
        let r = read();
        let recorded = r.entries[2].msg.as_ref().unwrap().get();
        assert!(!recorded.contains(['\n', '\r']), "{recorded:?}");
        let value: serde_json::Value = serde_json::from_str(recorded).unwrap();
        assert_eq!(value, json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"a":1}}));
        drop(tee);
        assert_eq!(read().entries.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn the_client_side_records_sends_as_c2s_and_a_long_header_is_rewritten_at_close() {
        let dir = scratch("client");
        let path = dir.join("c.jsonl");
        let (client_end, server_end) = inproc::pair(Limits::default());
        let long = "d".repeat(HEADER_RESERVE * 2);
        let options = TeeOptions::client_side().description(long.clone());
        let tee = RecordingTransport::create(client_end, &path, options).unwrap();
        tee.send(message(json!({"jsonrpc":"2.0","id":1,"method":"ping"}))).await.unwrap();
        server_end.recv().await.unwrap().unwrap();
        server_end.send(message(json!({"jsonrpc":"2.0","id":1,"result":{}}))).await.unwrap();
        tee.recv().await.unwrap().unwrap();
        tee.close().await.unwrap();
        let r = Recording::read(&path).unwrap();
        assert_eq!(r.header.extra["description"], long.as_str());
        let dirs: Vec<Dir> = r.entries.iter().map(|e| e.dir).collect();
        assert_eq!(dirs, [Dir::ClientToServer, Dir::ServerToClient]);
        assert!(!dir.join("c.jsonl.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_failing_write_stops_the_recording_not_the_session() {
        let Ok(full) = File::options().write(true).open("/dev/full") else { return };
        let (server_end, client_end) = inproc::pair(Limits::default());
        // The header write to /dev/full fails already: start from a writer that got past it.
        let mut writer =
            Recorder::start(PathBuf::from("/dev/null"), File::create("/dev/null").unwrap(), TeeOptions::server_side())
                .unwrap();
        drop(full);
        writer.writer.path = PathBuf::from("/dev/full");
        let tee = writer.wrap(server_end);
        client_end.send(message(json!({"jsonrpc":"2.0","id":1,"method":"ping"}))).await.unwrap();
        let got = tee.recv().await.unwrap().unwrap();
        assert!(matches!(got, Message::Request(r) if r.method == "ping"));
        tee.send(message(json!({"jsonrpc":"2.0","id":1,"result":{}}))).await.unwrap();
        assert!(matches!(client_end.recv().await, Ok(Some(Message::Response(_)))));
        assert!(tee.recording_error().is_some_and(|e| e.contains("space")), "{:?}", tee.recording_error());
    }

    #[test]
    fn a_recording_dir_names_files_by_time_and_counter_and_never_overwrites() {
        let dir = scratch("dir");
        let recordings = RecordingDir::new(dir.join("nested")).unwrap();
        let a = recordings.next(TeeOptions::server_side()).unwrap();
        let b = recordings.next(TeeOptions::server_side()).unwrap();
        let name = |r: &Recorder| r.path().file_name().unwrap().to_string_lossy().into_owned();
        let (a_name, b_name) = (name(&a), name(&b));
        assert!(a_name.starts_with("session-2") && a_name.ends_with("Z-0001.jsonl"), "{a_name}");
        assert!(b_name.ends_with("-0002.jsonl"), "{b_name}");
        assert!(!a_name.contains(':'), "{a_name}");
        // A fresh counter in the same directory skips names taken.
        let again = RecordingDir::new(dir.join("nested")).unwrap();
        let c = again.next(TeeOptions::server_side()).unwrap();
        assert_ne!(c.path(), a.path());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A transport whose every answer differs from the trait's default.
    struct Unusual;

    impl Transport for Unusual {
        async fn send(&self, _message: Message) -> Result<(), TransportError> {
            Ok(())
        }

        fn is_stateless(&self) -> bool {
            true
        }

        fn outlives_its_input(&self) -> bool {
            false
        }

        fn param_headers(&self, _request: &Id) -> Option<Vec<(String, String)>> {
            Some(vec![("Mcp-Param-X".into(), "1".into())])
        }

        fn related_request(&self, incoming: &Id) -> Option<Id> {
            Some(incoming.clone())
        }

        fn admit_tools(&self, tools: &mut Vec<crate::proto::mcp_types::Tool>) -> Vec<(String, String)> {
            tools.clear();
            vec![("t".into(), "left out".into())]
        }

        fn network_transport(&self) -> Option<&'static str> {
            Some("tcp")
        }

        fn server_endpoint(&self) -> Option<(String, u16)> {
            Some(("upstream.example".into(), 8443))
        }

        fn session_id(&self) -> Option<String> {
            Some("s-1".into())
        }

        fn child_pid(&self) -> Option<u32> {
            Some(42)
        }

        async fn recv(&self) -> Result<Option<Message>, TransportError> {
            Ok(None)
        }

        async fn close(&self) -> Result<(), TransportError> {
            Ok(())
        }
    }

    fn answers_as_unusual<T: Transport>(wrapped: &T) {
        let id = Id::Number(7);
        assert!(wrapped.is_stateless());
        assert!(!wrapped.outlives_its_input(), "cancel on close survives the wrapper");
        assert_eq!(wrapped.param_headers(&id), Some(vec![("Mcp-Param-X".into(), "1".into())]));
        assert_eq!(wrapped.related_request(&id), Some(id.clone()));
        let mut tools = vec![crate::proto::mcp_types::Tool::new("t", json!({"type": "object"}))];
        assert_eq!(wrapped.admit_tools(&mut tools), [("t".to_owned(), "left out".to_owned())]);
        assert!(tools.is_empty());
        assert_eq!(wrapped.network_transport(), Some("tcp"));
        assert_eq!(wrapped.server_endpoint(), Some(("upstream.example".into(), 8443)));
        assert_eq!(wrapped.session_id().as_deref(), Some("s-1"));
        assert_eq!(wrapped.child_pid(), Some(42));
    }

    #[test]
    fn both_recording_wrappers_answer_every_question_as_the_transport_they_wrap() {
        answers_as_unusual(&SwitchedRecording::new(Unusual, Side::Server));
        let dir = scratch("forwarding");
        let recording = RecordingTransport::create(Unusual, dir.join("r.jsonl"), TeeOptions::server_side()).unwrap();
        answers_as_unusual(&recording);
        drop(recording);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
