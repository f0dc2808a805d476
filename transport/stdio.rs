//! The stdio transport: newline-delimited JSON-RPC over a pair of byte streams — a child
//! process's stdin/stdout ([`ChildCommand`]), our own stdin/stdout ([`StdioTransport::own_stdio`]),
//! or any reader/writer pair ([`StdioTransport::from_io`]).
//!
//! Reading happens in the caller's task, inside [`Transport::recv`]: bytes are decoded in place
//! with [`MessageDecoder`], so an incoming message costs no task hop. With no input at hand the
//! reader polls a little longer before it waits to be woken ([`Limits::read_spin`], 50 µs):
//! where waking an idle CPU is slow, as on many virtual machines, that saves the wakeup on each
//! side of a call that is answered within it. Writing goes through a
//! bounded queue to one writer task that batches whatever is queued into one write and one
//! flush, so many concurrent senders cost few system calls. With many lines at hand from one
//! read (a batch of the peer's requests), the reader lets the writer run after every few, so
//! the answers to the first go out while the rest are handled and the peer works meanwhile.
//!
//! A child process runs in its own process group, its stderr is read line by line and handed
//! to a callback (never inherited unless asked for), and it is stopped on [`Transport::close`]
//! (stdin closed, a grace period, SIGTERM to the group, another grace period, SIGKILL) or killed
//! with its group when the transport is dropped. tokio reaps it either way: no zombies.
//!
//! A child inherits our whole environment unless told otherwise ([`ChildCommand::env_clear`],
//! [`ChildCommand::env_remove`]): a host that holds credentials in its environment must not
//! start third-party servers that way. The connection set builds each child's environment from
//! its configuration by `client::config::ChildEnv`, which `mcp-bridge serve` uses to start every
//! child from a clean environment and withhold its own credentials (docs/security.md, "Secrets stay
//! home").
//!
//! Not here: MCP semantics, request tracking, reconnecting a crashed child (the client layer
//! does that).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, ChildStderr};
use tokio::sync::{mpsc, oneshot, Mutex};

use super::{Limits, Transport, TransportError};
use crate::proto::framing::oversized::{Identified, Oversized};
use crate::proto::framing::{encode_message, FrameError, LineError, MessageDecoder};
use crate::proto::jsonrpc::{Message, Payload};
use crate::proto::version::ProtocolVersion;

/// A callback that receives one line of text (a child's stderr line, or a note about a
/// stdout line that was not a message).
pub type LineCallback = Arc<dyn Fn(&str) + Send + Sync>;

/// What happens to a child process's stderr.
#[derive(Clone, Default)]
pub enum Stderr {
    /// Read and dropped (the default: the pipe is drained so the child never blocks on it).
    #[default]
    Discard,
    /// Inherited: the child writes straight to our stderr.
    Inherit,
    /// Each line (without its line end, lossily decoded, at most 64 KiB) is handed to the
    /// callback.
    Lines(LineCallback),
}

impl std::fmt::Debug for Stderr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stderr::Discard => f.write_str("Discard"),
            Stderr::Inherit => f.write_str("Inherit"),
            Stderr::Lines(_) => f.write_str("Lines(..)"),
        }
    }
}

/// How to start an MCP server as a child process.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    env_remove: Vec<String>,
    env_clear: bool,
    cwd: Option<PathBuf>,
    stderr: Stderr,
    limits: Limits,
}

impl ChildCommand {
    /// A command running `program` (looked up in `PATH`).
    pub fn new(program: impl Into<String>) -> Self {
        ChildCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            env_clear: false,
            cwd: None,
            stderr: Stderr::default(),
            limits: Limits::default(),
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child (on top of ours, unless [`env_clear`](Self::env_clear)).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Keeps one of our variables from the child (when it inherits ours); a variable set
    /// through [`env`](Self::env) is set all the same.
    pub fn env_remove(mut self, key: impl Into<String>) -> Self {
        self.env_remove.push(key.into());
        self
    }

    /// Starts the child with only the variables set through [`env`](Self::env).
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }

    /// The child's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// What to do with the child's stderr.
    pub fn stderr(mut self, stderr: Stderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// The limits the transport applies.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The program this command runs.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// Starts the child and connects to its stdin/stdout. Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// [`TransportError::Spawn`] when the program cannot be started.
    pub fn spawn(&self) -> Result<StdioTransport, TransportError> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match self.stderr {
                Stderr::Inherit => Stdio::inherit(),
                Stderr::Discard | Stderr::Lines(_) => Stdio::piped(),
            })
            .process_group(0)
            .kill_on_drop(true);
        if self.env_clear {
            command.env_clear();
        }
        for key in &self.env_remove {
            command.env_remove(key);
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        let mut child =
            command.spawn().map_err(|source| TransportError::Spawn { program: self.program.clone(), source })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        grow_pipe(&stdin);
        grow_pipe(&stdout);
        if let Some(stderr) = child.stderr.take() {
            let callback = match &self.stderr {
                Stderr::Lines(f) => Some(f.clone()),
                _ => None,
            };
            crate::transport::task::spawn(drain_stderr(stderr, callback));
        }
        let pid = child.id().expect("a child that was just spawned has a pid");
        let notes = match &self.stderr {
            Stderr::Lines(f) => Some(f.clone()),
            _ => None,
        };
        let mut transport = StdioTransport::from_io(stdout, stdin, self.limits).with_read_spin(self.limits.read_spin);
        transport.malformed = MalformedLines::Skip(notes);
        transport.child = Some(ChildProcess {
            pid,
            child: StdMutex::new(Some(child)),
            status: StdMutex::new(None),
            grace: self.limits.shutdown_grace,
        });
        Ok(transport)
    }
}

const STDERR_LINE_CAP: usize = 64 * 1024;

async fn drain_stderr(mut stderr: ChildStderr, callback: Option<LineCallback>) {
    let mut buf = BytesMut::with_capacity(8 * 1024);
    loop {
        match stderr.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        while let Some(end) = buf.iter().position(|b| *b == b'\n') {
            let line = buf.split_to(end + 1);
            if let Some(f) = &callback {
                let text = String::from_utf8_lossy(&line[..end.min(STDERR_LINE_CAP)]);
                f(text.trim_end_matches('\r'));
            }
        }
        if buf.len() > STDERR_LINE_CAP {
            // A line with no end in sight: hand over what we have and keep going.
            if let Some(f) = &callback {
                f(&String::from_utf8_lossy(&buf[..STDERR_LINE_CAP]));
            }
            buf.clear();
        }
    }
    if let (Some(f), false) = (&callback, buf.is_empty()) {
        f(String::from_utf8_lossy(&buf).trim_end());
    }
}

/// What `recv` does with a line that is not a valid message.
enum MalformedLines {
    /// Returns [`TransportError::Malformed`] (servers answer such lines with an error).
    Report,
    /// Skips it, telling the callback if there is one (a child's stray output is not fatal).
    Skip(Option<LineCallback>),
}

struct Reader {
    io: Box<dyn AsyncRead + Send + Unpin>,
    buf: BytesMut,
    decoder: MessageDecoder,
    /// Messages of a batch not handed out yet.
    queued: VecDeque<Message>,
    eof: bool,
    /// What the other halves leave for the reader: a protocol version, answers of our own.
    local: Arc<Local>,
    /// What was decoded and is handed out before the next decode: an oversized line's frame
    /// error and its answer, the line decoded after it.
    stashed: VecDeque<Result<Payload, LineError>>,
    /// The frame error of the oversized line being dropped, held until its end tells its id.
    too_large: Option<LineError>,
    /// Where a request of the peer's over the frame cap is answered (the writer's queue).
    refusals: mpsc::Sender<WriterCommand>,
    /// [`Limits::read_spin`].
    spin: Duration,
    /// Reads left before spinning again (see [`spin_for_input`]).
    spin_off: u32,
    /// Lines handed out since the reader last yielded (see [`YIELD_EVERY_LINES`]).
    handed: u32,
}

/// What the transport and its writer leave for the reader while a `recv` holds it.
#[derive(Default)]
struct Local {
    state: StdMutex<LocalState>,
    /// Wakes a reader waiting for input when an answer of our own is queued.
    answered: tokio::sync::Notify,
}

impl Local {
    /// Queues the error answer to a request of ours that was not sent, for `recv`.
    fn answer(&self, refusal: Message) {
        self.state.lock().expect("stdio local lock").answers.push_back(refusal);
        self.answered.notify_one();
    }
}

#[derive(Default)]
struct LocalState {
    /// A protocol version set while a `recv` held the reader, applied before the next decode.
    version: Option<Option<ProtocolVersion>>,
    /// Error answers to our own requests that were never sent (over the frame cap, or not
    /// serializable), handed out by `recv` as if the peer had sent them.
    answers: VecDeque<Message>,
}

const READ_CHUNK: usize = 64 * 1024;

/// A `std::thread::yield_now` that took longer than this gave the CPU to another thread.
const SHARED_CPU_YIELD: Duration = Duration::from_micros(10);

/// Reads (waits for input) without spinning after the CPU was found shared.
const SPIN_OFF_READS: u32 = 256;

/// Reads without spinning after a spin in which no input came.
const SPIN_OFF_AFTER_MISS: u32 = 8;

/// Lines handed out from input at hand before the reader lets the runtime's other tasks run
/// (the writer among them): what the first of a batch of requests produced goes out while the
/// rest are handled, so the peer, another process, works on it meanwhile. Only where the read
/// spins ([`Limits::read_spin`]): an in-process peer on the same thread gains nothing by it.
const YIELD_EVERY_LINES: u32 = 4;

impl Reader {
    /// The next decoded line, reading more when needed; `None` at the end of input.
    async fn next_line(&mut self) -> Result<Option<Result<Payload, LineError>>, TransportError> {
        loop {
            {
                let mut local = self.local.state.lock().expect("stdio local lock");
                if let Some(version) = local.version.take() {
                    self.decoder.set_version(version);
                }
                if let Some(answer) = local.answers.pop_front() {
                    return Ok(Some(Ok(Payload::Single(answer))));
                }
            }
            if let Some(item) = self.stashed.pop_front() {
                return Ok(Some(item));
            }
            if self.handed >= YIELD_EVERY_LINES && !self.spin.is_zero() && !self.buf.is_empty() {
                self.handed = 0;
                tokio::task::yield_now().await;
            }
            let item =
                if self.eof { self.decoder.decode_eof(&mut self.buf) } else { self.decoder.decode(&mut self.buf) };
            let item = match item {
                // Held until the line's end: a request's refusal then carries its id.
                Some(Err(e @ LineError::Frame(FrameError::TooLarge { .. }))) if !self.eof => {
                    self.too_large = Some(e);
                    None
                }
                item => item,
            };
            if let Some(oversized) = self.decoder.take_oversized() {
                let frame_error = self.too_large.take().map(Err);
                match oversized_line(&oversized, self.decoder.max_frame_bytes()) {
                    OversizedLine::OurRequestFails(answer) => {
                        // The line's frame error first (as for any oversized line), then the answer.
                        self.stashed.extend(frame_error);
                        self.stashed.push_back(Ok(Payload::Single(answer)));
                    }
                    OversizedLine::Refuse(refusal) => {
                        // Answered here with its id, so the frame error (which has none) goes.
                        if self.refusals.send(WriterCommand::Send(refusal)).await.is_err() {
                            return Err(TransportError::Closed);
                        }
                    }
                    OversizedLine::Unknown => self.stashed.extend(frame_error),
                }
                self.stashed.extend(item);
                continue;
            }
            if self.eof {
                if let Some(e) = self.too_large.take() {
                    // The input ended inside the oversized line: its id is not known.
                    self.stashed.push_back(Err(e));
                    self.stashed.extend(item);
                    continue;
                }
            }
            if item.is_some() || self.eof {
                self.handed += 1;
                return Ok(item);
            }
            // Part of a line at hand: the rest is being written, and comes faster by waiting
            // for it than by polling it in pieces.
            let partial = !self.buf.is_empty();
            self.handed = 0;
            self.buf.reserve(READ_CHUNK);
            let read = self.io.read_buf(&mut self.buf);
            tokio::pin!(read);
            let early = if self.spin.is_zero() || self.spin_off > 0 || partial {
                self.spin_off = self.spin_off.saturating_sub(1);
                None
            } else {
                spin_for_input(self.spin, &mut self.spin_off, read.as_mut()).await
            };
            let read = match early {
                Some(r) => Some(r),
                // Cancel safety: `read_buf` either appends bytes or is dropped having read none.
                None => tokio::select! {
                    biased;
                    () = self.local.answered.notified() => None,
                    read = &mut read => Some(read),
                },
            };
            if let Some(read) = read {
                if read? == 0 {
                    self.eof = true;
                }
            }
        }
    }
}

/// Polls `read` until it has input or [`Limits::read_spin`] has passed, letting the
/// runtime's other tasks (each `yield_now` also polls the IO driver) and the CPU's other
/// threads run between polls. `None` when nothing came: the caller waits to be woken, and the
/// next [`SPIN_OFF_AFTER_MISS`] reads do not spin. When a thread yield finds another thread
/// on this CPU, spinning stops for the next [`SPIN_OFF_READS`] reads (counted down in
/// `spin_off`).
async fn spin_for_input<F: std::future::Future>(
    spin: Duration,
    spin_off: &mut u32,
    mut read: std::pin::Pin<&mut F>,
) -> Option<F::Output> {
    let until = std::time::Instant::now() + spin;
    loop {
        if let std::task::Poll::Ready(output) =
            std::future::poll_fn(|cx| std::task::Poll::Ready(read.as_mut().poll(cx))).await
        {
            return Some(output);
        }
        let before = std::time::Instant::now();
        if before >= until {
            // Nothing came in time: the peer is busy or idle, and polling would only burn CPU.
            *spin_off = SPIN_OFF_AFTER_MISS;
            return None;
        }
        std::thread::yield_now();
        if before.elapsed() > SHARED_CPU_YIELD {
            *spin_off = SPIN_OFF_READS;
            return None;
        }
        tokio::task::yield_now().await;
    }
}

/// What becomes of a line over the frame cap.
enum OversizedLine {
    /// A response to one of our requests: this error answer to it, handed out as if the peer
    /// had sent it (the request fails at once instead of waiting for an answer that was
    /// dropped).
    OurRequestFails(Message),
    /// A request of the peer's: this error answer (-32600, naming the limit), sent to the peer
    /// with the request's id instead of an id-less frame error.
    Refuse(Message),
    /// No id could be read: only the frame error says what happened.
    Unknown,
}

/// What a line over the frame cap becomes, told by its ends ([`Oversized::identify`]). Logged
/// in every case: the peer's message is lost.
fn oversized_line(o: &Oversized, max: usize) -> OversizedLine {
    use crate::proto::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse};
    let len = o.len;
    match o.identify() {
        Some(Identified::Response(id)) => {
            tracing::warn!(%id, len, max, "mcpwire: dropped the peer's answer over the frame cap; its request fails");
            let message = format!(
                "response too large: {len} bytes, the limit is {max} (Limits::max_frame_bytes); \
                 the peer's answer was dropped"
            );
            let error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, message);
            OversizedLine::OurRequestFails(Message::Error(ErrorResponse::new(Some(id), error)))
        }
        Some(Identified::Request(id)) => {
            tracing::warn!(%id, len, max, "mcpwire: refused a request of the peer's over the frame cap");
            let message = format!("request too large: {len} bytes, the limit is {max} (Limits::max_frame_bytes)");
            let error = ErrorObject::new(ErrorCode::INVALID_REQUEST, message);
            let data = serde_json::json!({"limit": max, "size": len});
            let error = error.clone().with_data(&data).unwrap_or(error);
            OversizedLine::Refuse(Message::Error(ErrorResponse::new(Some(id), error)))
        }
        None => {
            tracing::warn!(len, max, "mcpwire: dropped a line over the frame cap whose id could not be read");
            OversizedLine::Unknown
        }
    }
}

enum WriterCommand {
    Send(Message),
    Close(oneshot::Sender<std::io::Result<()>>),
}

/// How much the writer gathers before one write.
const WRITE_BATCH_BYTES: usize = 1024 * 1024;

/// Writes what `commands` brings, keeping each response under `max_frame_bytes` (a larger one
/// is replaced by its error answer, see [`super::oversized_answer`]). A request of ours over it
/// is not written (a peer with the same cap would skip it and could not tell which request it
/// was, leaving it to its timeout): its error answer, naming the limit, goes to our own reader
/// through `local`, as if the peer had sent it.
async fn write_loop(
    mut out: Box<dyn AsyncWrite + Send + Unpin>,
    mut commands: mpsc::Receiver<WriterCommand>,
    max_frame_bytes: usize,
    local: Arc<Local>,
) {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    while let Some(first) = commands.recv().await {
        let mut close = None;
        let mut next = Some(first);
        while let Some(command) = next.take() {
            match command {
                WriterCommand::Send(message) => {
                    let start = buf.len();
                    if let Err(why) = encode_message(&message, &mut buf) {
                        match super::unserializable(&message, &why) {
                            super::Unserializable::AnswerPeer(answer) => {
                                let _ = encode_message(&answer, &mut buf);
                            }
                            super::Unserializable::AnswerCaller(refusal) => local.answer(refusal),
                            super::Unserializable::Dropped => {}
                        }
                    } else {
                        // The line's length without its newline, as the peer's decoder counts it.
                        let encoded = (buf.len() - start).saturating_sub(1);
                        if let Some(answer) = super::oversized_answer(&message, encoded, max_frame_bytes) {
                            buf.truncate(start);
                            let _ = encode_message(&answer, &mut buf);
                        } else if let Some(refusal) = super::oversized_request(&message, encoded, max_frame_bytes) {
                            buf.truncate(start);
                            local.answer(refusal);
                        }
                    }
                }
                WriterCommand::Close(done) => close = Some(done),
            }
            if close.is_none() && buf.len() < WRITE_BATCH_BYTES {
                next = commands.try_recv().ok();
            }
        }
        let mut result = Ok(());
        if !buf.is_empty() {
            result = async {
                out.write_all(&buf).await?;
                out.flush().await
            }
            .await;
            buf.clear();
        }
        if let Some(done) = close {
            let shutdown = out.shutdown().await;
            let _ = done.send(result.and(shutdown));
            return;
        }
        if result.is_err() {
            // The peer is gone: dropping the receiver makes every later send fail as closed.
            return;
        }
    }
}

struct ChildProcess {
    pid: u32,
    child: StdMutex<Option<Child>>,
    status: StdMutex<Option<ExitStatus>>,
    grace: Duration,
}

fn signal_group(pid: u32, signal: libc::c_int) {
    // The child was started with process_group(0), so its pid is its group id; a negative
    // pid signals the whole group, grandchildren included.
    let group = -(pid as libc::pid_t);
    // SAFETY: kill(2) has no memory effects; a group that no longer exists yields ESRCH.
    unsafe {
        libc::kill(group, signal);
    }
}

impl ChildProcess {
    async fn stop(&self) -> Option<ExitStatus> {
        let Some(mut child) = self.child.lock().expect("child lock").take() else {
            return *self.status.lock().expect("status lock");
        };
        let mut status = tokio::time::timeout(self.grace, child.wait()).await.ok().and_then(Result::ok);
        if status.is_none() {
            signal_group(self.pid, libc::SIGTERM);
            status = tokio::time::timeout(self.grace, child.wait()).await.ok().and_then(Result::ok);
        }
        // SIGKILL what is left of the group, the leader if it ignored SIGTERM and any
        // grandchild it left behind.
        signal_group(self.pid, libc::SIGKILL);
        if status.is_none() {
            status = child.wait().await.ok();
        }
        *self.status.lock().expect("status lock") = status;
        status
    }

    fn try_status(&self) -> Option<ExitStatus> {
        if let Some(status) = *self.status.lock().expect("status lock") {
            return Some(status);
        }
        let mut guard = self.child.lock().expect("child lock");
        let status = guard.as_mut()?.try_wait().ok().flatten();
        *self.status.lock().expect("status lock") = status;
        status
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.child.lock().map(|c| c.is_some()).unwrap_or(false) {
            signal_group(self.pid, libc::SIGKILL);
        }
    }
}

/// The pipe capacity asked for. Not the 1 MiB ceiling (`/proc/sys/fs/pipe-max-size`): Linux
/// charges a pipe's full capacity to its user, and once a user holds more than
/// `pipe-user-pages-soft` (64 MiB) every new pipe of theirs is cut to two pages; 256 KiB keeps a
/// client of a hundred servers well under that.
const PIPE_BYTES: libc::c_int = 256 << 10;

/// Asks for a pipe of [`PIPE_BYTES`] instead of the default 64 KiB, so that a message of 64 KiB
/// or more crosses in one write and one wakeup of the reader instead of several rounds of
/// "pipe full, wait for the reader". Best effort: a refusal (a lower ceiling, the per-user pipe
/// quota, not a pipe) leaves the pipe as it was.
fn grow_pipe(pipe: &impl std::os::fd::AsRawFd) {
    // SAFETY: F_SETPIPE_SZ takes an int and touches no memory of ours; any fd value is safe
    // (a bad one fails with EBADF).
    #[cfg(target_os = "linux")]
    unsafe {
        libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pipe;
}

/// Stdin and stdout reopened as reactor-driven pipes, if both are pipes (Linux).
fn reopen_stdio_pipes() -> Option<(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let reopen = |fd: i32, write: bool| -> Option<std::fs::File> {
        let file = std::fs::OpenOptions::new()
            .read(!write)
            .write(write)
            .custom_flags(libc::O_NONBLOCK)
            .open(format!("/proc/self/fd/{fd}"))
            .ok()?;
        file.metadata().ok()?.file_type().is_fifo().then_some(file)
    };
    let input = reopen(libc::STDIN_FILENO, false)?;
    let output = reopen(libc::STDOUT_FILENO, true)?;
    grow_pipe(&input);
    grow_pipe(&output);
    let receiver = tokio::net::unix::pipe::Receiver::from_file(input).ok()?;
    let sender = tokio::net::unix::pipe::Sender::from_file(output).ok()?;
    Some((receiver, sender))
}

/// Newline-delimited JSON-RPC over a byte stream pair. See the module docs.
pub struct StdioTransport {
    reader: Mutex<Reader>,
    writer: mpsc::Sender<WriterCommand>,
    malformed: MalformedLines,
    child: Option<ChildProcess>,
    local: Arc<Local>,
}

impl StdioTransport {
    /// A transport reading messages from `input` and writing them to `output`. Must be called
    /// inside a tokio runtime (it starts the writer task). Malformed lines are reported by
    /// `recv` as [`TransportError::Malformed`].
    pub fn from_io<R, W>(input: R, output: W, limits: Limits) -> StdioTransport
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (writer, commands) = mpsc::channel(limits.queue_depth.max(1));
        let local = Arc::new(Local::default());
        crate::transport::task::spawn(write_loop(Box::new(output), commands, limits.max_frame_bytes, local.clone()));
        StdioTransport {
            reader: Mutex::new(Reader {
                io: Box::new(input),
                buf: BytesMut::with_capacity(READ_CHUNK),
                decoder: MessageDecoder::with_max_frame_bytes(limits.max_frame_bytes),
                queued: VecDeque::new(),
                eof: false,
                local: local.clone(),
                stashed: VecDeque::new(),
                too_large: None,
                refusals: writer.clone(),
                spin: Duration::ZERO,
                spin_off: 0,
                handed: 0,
            }),
            local,
            writer,
            malformed: MalformedLines::Report,
            child: None,
        }
    }

    /// A transport on this process's own stdin and stdout, for a server launched by a client.
    /// Nothing but frames is written to stdout.
    ///
    /// When both are pipes (the usual case for a server a client spawned) they are reopened
    /// through `/proc/self/fd` as non-blocking pipes driven by the reactor; the reopened
    /// descriptors have their own file descriptions, so `O_NONBLOCK` does not leak into the
    /// process's standard streams. Otherwise (a terminal, a file) tokio's blocking-pool
    /// stdin/stdout are used, which cost a thread hop per read and write.
    pub fn own_stdio(limits: Limits) -> StdioTransport {
        match reopen_stdio_pipes() {
            Some((input, output)) => StdioTransport::from_io(input, output, limits).with_read_spin(limits.read_spin),
            None => StdioTransport::from_io(tokio::io::stdin(), tokio::io::stdout(), limits),
        }
    }

    /// Decodes a server's `tools/call` params into their type as each line is read (see
    /// [`MessageDecoder::set_typed_params`]): for a server that decodes them anyway, as the
    /// server layer's `Server::serve_stdio` does. Off by default:
    /// a proxy or a recorder keeps the exact bytes.
    #[must_use]
    pub fn with_typed_params(mut self, on: bool) -> StdioTransport {
        self.reader.get_mut().decoder.set_typed_params(on);
        self
    }

    /// Polls for input this long before waiting to be woken ([`Limits::read_spin`]). Set by
    /// [`ChildCommand::spawn`] and [`StdioTransport::own_stdio`] on a pipe from their limits;
    /// [`StdioTransport::from_io`] starts with none (its streams may be in-process, where the
    /// peer runs on the same thread and polling only delays it).
    #[must_use]
    pub fn with_read_spin(mut self, spin: Duration) -> StdioTransport {
        self.reader.get_mut().spin = spin;
        self
    }

    /// The child's process id, for a transport started by [`ChildCommand::spawn`].
    pub fn child_pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.pid)
    }

    /// The child's exit status if it has exited (`None` while it runs, or for no child).
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.child.as_ref().and_then(ChildProcess::try_status)
    }
}

impl Transport for StdioTransport {
    /// Tells the decoder the session's protocol revision (batches are accepted in 2025-03-26).
    /// Takes effect from the next line decoded, even while another task waits in `recv` (which
    /// holds the reader for as long as the peer is silent, so this does not wait for it).
    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        self.local.state.lock().expect("stdio local lock").version = Some(version);
    }

    fn network_transport(&self) -> Option<&'static str> {
        Some("pipe")
    }

    fn child_pid(&self) -> Option<u32> {
        StdioTransport::child_pid(self)
    }

    fn exit_status(&self) -> Option<ExitStatus> {
        StdioTransport::exit_status(self)
    }

    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.writer.send(WriterCommand::Send(message)).await.map_err(|_| TransportError::Closed)
    }

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        let mut reader = self.reader.lock().await;
        if let Some(message) = reader.queued.pop_front() {
            return Ok(Some(message));
        }
        loop {
            match reader.next_line().await? {
                None => return Ok(None),
                Some(Ok(Payload::Single(message))) => return Ok(Some(message)),
                Some(Ok(Payload::Batch(messages))) => {
                    reader.queued.extend(messages);
                    if let Some(message) = reader.queued.pop_front() {
                        return Ok(Some(message));
                    }
                }
                Some(Err(e)) => match &self.malformed {
                    MalformedLines::Report => return Err(TransportError::Malformed(e)),
                    MalformedLines::Skip(note) => {
                        if let Some(note) = note {
                            note(&format!("skipped a stdout line that is not a JSON-RPC message: {e}"));
                        }
                    }
                },
            }
        }
    }

    async fn close(&self) -> Result<(), TransportError> {
        let flush = async {
            let (done, flushed) = oneshot::channel();
            match self.writer.send(WriterCommand::Close(done)).await {
                Ok(()) => flushed.await.unwrap_or(Ok(())).map_err(TransportError::Io),
                // Already closed, or the peer is gone: nothing left to flush.
                Err(_) => Ok(()),
            }
        };
        let flush = match &self.child {
            // A child that stops reading its stdin would hold the flush forever: it gets the
            // grace period, then is stopped all the same (and the writer's pipe breaks).
            Some(child) => tokio::time::timeout(child.grace, flush).await.unwrap_or(Err(TransportError::Timeout)),
            None => flush.await,
        };
        if let Some(child) = &self.child {
            child.stop().await;
        }
        flush
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::jsonrpc::{Id, Request};

    fn ping(id: i64) -> Message {
        Message::Request(Request { id: Id::Number(id), method: "ping".into(), params: None })
    }

    /// A transport writing into `ours` (reading nothing), its queue `queue_depth` deep.
    fn writing_into(ours: tokio::io::DuplexStream, queue_depth: usize) -> StdioTransport {
        StdioTransport::from_io(tokio::io::empty(), ours, Limits { queue_depth, ..Limits::default() })
    }

    /// The ids of the first `count` lines the peer reads, each line whole JSON.
    async fn ids_read(peer: tokio::io::DuplexStream, count: usize) -> Vec<i64> {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(peer).lines();
        let mut ids = Vec::new();
        while ids.len() < count {
            let line = lines.next_line().await.unwrap().expect("a line per message");
            let value: serde_json::Value = serde_json::from_str(&line).expect("each line is whole JSON");
            ids.push(value["id"].as_i64().unwrap());
        }
        ids
    }

    #[tokio::test]
    async fn a_sender_waits_on_a_peer_that_is_not_reading_only_past_the_queue() {
        // 64 bytes of room: the first message already does not fit.
        let (ours, peer) = tokio::io::duplex(64);
        let transport = writing_into(ours, 8);
        let mut sent = 0;
        while let std::task::Poll::Ready(result) =
            crate::transport::task::poll_once(std::pin::pin!(transport.send(ping(sent))))
        {
            result.unwrap();
            sent += 1;
            assert!(sent <= 8 + 3, "a sender waits once the queue is past its depth");
        }
        assert!(sent >= 8, "only {sent} sends finished at once, fewer than the queue's depth");
        // Once the peer reads, what was sent arrives whole and in order.
        assert_eq!(ids_read(peer, sent as usize).await, (0..sent).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_senders_lose_nothing_and_cut_no_line() {
        let (ours, peer) = tokio::io::duplex(4096);
        let transport = Arc::new(writing_into(ours, 4));
        let reading = tokio::spawn(ids_read(peer, 800));
        let senders: Vec<_> = (0..8)
            .map(|task| {
                let transport = transport.clone();
                tokio::spawn(async move {
                    for i in 0..100 {
                        transport.send(ping(task * 1000 + i)).await.unwrap();
                    }
                })
            })
            .collect();
        for sender in senders {
            sender.await.unwrap();
        }
        let mut ids = reading.await.unwrap();
        for task in 0..8 {
            let own: Vec<i64> = ids.iter().copied().filter(|id| id / 1000 == task).collect();
            assert_eq!(own, (0..100).map(|i| task * 1000 + i).collect::<Vec<_>>(), "each sender's in its order");
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 800);
    }

    #[tokio::test]
    async fn close_writes_what_is_queued_then_refuses_more() {
        let (ours, peer) = tokio::io::duplex(64);
        let transport = writing_into(ours, 8);
        for id in 0..3 {
            transport.send(ping(id)).await.unwrap();
        }
        let reading = tokio::spawn(async move {
            let mut text = String::new();
            tokio::io::AsyncReadExt::read_to_string(&mut tokio::io::BufReader::new(peer), &mut text).await.unwrap();
            text
        });
        transport.close().await.unwrap();
        assert!(matches!(transport.send(ping(3)).await, Err(TransportError::Closed)));
        transport.close().await.unwrap();
        let ids: Vec<i64> = reading
            .await
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, vec![0, 1, 2], "whole lines, then the end of the stream");
    }

    #[tokio::test]
    async fn a_broken_stream_fails_later_sends_as_closed() {
        let (ours, peer) = tokio::io::duplex(64);
        drop(peer);
        let transport = writing_into(ours, 8);
        // Sends are taken until the writer finds the stream gone; from then on each is refused.
        let mut refused = false;
        for id in 0..100 {
            if matches!(transport.send(ping(id)).await, Err(TransportError::Closed)) {
                refused = true;
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(refused, "a send to a broken stream is refused as closed");
        assert!(matches!(transport.send(ping(100)).await, Err(TransportError::Closed)));
    }

    #[test]
    fn pipes_are_grown_up_to_the_ceiling() {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors `pipe` writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just opened and are owned (and closed) by these alone.
        let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        grow_pipe(&write_end);
        // SAFETY: F_GETPIPE_SZ reads no memory of ours.
        let size = unsafe { libc::fcntl(read_end.as_raw_fd(), libc::F_GETPIPE_SZ) };
        let ceiling: libc::c_int =
            std::fs::read_to_string("/proc/sys/fs/pipe-max-size").unwrap().trim().parse().unwrap();
        assert!(size >= PIPE_BYTES.min(ceiling), "pipe of {size} bytes");
    }

    #[tokio::test]
    async fn a_response_over_the_frame_cap_goes_out_as_an_error_answer_to_its_request() {
        use crate::proto::jsonrpc::{Body, Response};
        let (a_read, b_write) = tokio::io::duplex(4096);
        let (b_read, a_write) = tokio::io::duplex(4096);
        let a = StdioTransport::from_io(a_read, a_write, Limits::default().with_max_frame_bytes(64));
        let b = StdioTransport::from_io(b_read, b_write, Limits::default());
        let big = Body::typed(serde_json::json!({"text": "x".repeat(100)}));
        a.send(Message::Response(Response { id: Id::Number(7), result: big })).await.unwrap();
        let small = Body::typed(serde_json::json!({}));
        a.send(Message::Response(Response { id: Id::Number(8), result: small })).await.unwrap();
        match b.recv().await.unwrap().unwrap() {
            Message::Error(e) => {
                assert_eq!(e.id, Some(Id::Number(7)));
                assert_eq!(e.error.code.0, -32603);
                assert_eq!(e.error.message, "response too large: 145 bytes, the limit is 64 (Limits::max_frame_bytes)");
            }
            other => panic!("expected the error answer, got {other:?}"),
        }
        assert!(matches!(b.recv().await.unwrap().unwrap(), Message::Response(r) if r.id == Id::Number(8)));
    }

    #[tokio::test]
    async fn a_request_over_the_frame_cap_is_not_sent_and_its_sender_reads_the_refusal() {
        use crate::proto::jsonrpc::Body;
        let (a_read, b_write) = tokio::io::duplex(4096);
        let (b_read, a_write) = tokio::io::duplex(4096);
        let a = Arc::new(StdioTransport::from_io(a_read, a_write, Limits::default().with_max_frame_bytes(100)));
        let b = StdioTransport::from_io(b_read, b_write, Limits::default());
        // `a` already waits in `recv` for its silent peer when the refusal is queued.
        let reader = a.clone();
        let reading = tokio::spawn(async move { reader.recv().await });
        let request = |id, text: &str| {
            let params = Some(Body::typed(serde_json::json!({ "text": text })));
            Message::Request(Request { id: Id::Number(id), method: "tools/call".into(), params })
        };
        a.send(request(7, &"x".repeat(100))).await.unwrap();
        a.send(request(8, "small")).await.unwrap();
        match reading.await.unwrap().unwrap().unwrap() {
            Message::Error(e) => {
                assert_eq!(e.id, Some(Id::Number(7)));
                assert_eq!(e.error.code.0, -32600);
                assert_eq!(
                    e.error.message,
                    "request too large: 167 bytes, the limit is 100 (Limits::max_frame_bytes); not sent to the peer"
                );
            }
            other => panic!("expected the refusal, got {other:?}"),
        }
        // The peer never saw the large one; the next request (71 bytes) went out.
        assert_eq!(b.recv().await.unwrap().unwrap().id(), Some(&Id::Number(8)));
    }

    /// A body JSON cannot hold: a map whose keys are not strings.
    fn unserializable() -> crate::proto::jsonrpc::Body {
        let map: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into_iter().collect();
        crate::proto::jsonrpc::Body::typed(map)
    }

    #[tokio::test]
    async fn a_request_that_cannot_be_serialized_is_answered_to_its_sender_and_the_next_goes_out() {
        let (a_read, b_write) = tokio::io::duplex(4096);
        let (b_read, a_write) = tokio::io::duplex(4096);
        let a = Arc::new(StdioTransport::from_io(a_read, a_write, Limits::default()));
        let b = StdioTransport::from_io(b_read, b_write, Limits::default());
        let reader = a.clone();
        let reading = tokio::spawn(async move { reader.recv().await });
        let request = Request { id: Id::Number(7), method: "tools/call".into(), params: Some(unserializable()) };
        a.send(Message::Request(request)).await.unwrap();
        a.send(ping(8)).await.unwrap();
        match reading.await.unwrap().unwrap().unwrap() {
            Message::Error(e) => {
                assert_eq!(e.id, Some(Id::Number(7)));
                assert_eq!(e.error.code.0, -32603);
                assert!(e.error.message.starts_with("the message could not be serialized: "), "{}", e.error.message);
            }
            other => panic!("expected the error answer, got {other:?}"),
        }
        assert_eq!(b.recv().await.unwrap().unwrap().id(), Some(&Id::Number(8)));
    }

    #[tokio::test]
    async fn a_response_that_cannot_be_serialized_reaches_the_peer_as_an_internal_error() {
        use crate::proto::jsonrpc::Response;
        let (a_read, b_write) = tokio::io::duplex(4096);
        let (b_read, a_write) = tokio::io::duplex(4096);
        let a = StdioTransport::from_io(a_read, a_write, Limits::default());
        let b = StdioTransport::from_io(b_read, b_write, Limits::default());
        a.send(Message::Response(Response { id: Id::Number(3), result: unserializable() })).await.unwrap();
        match b.recv().await.unwrap().unwrap() {
            Message::Error(e) => {
                assert_eq!(e.id, Some(Id::Number(3)));
                assert_eq!(e.error.code.0, -32603);
                assert!(e.error.message.contains("could not be serialized"), "{}", e.error.message);
            }
            other => panic!("expected the internal error, got {other:?}"),
        }
    }

    /// A batch of the peer's requests at hand (the read spinning, as for another process): what
    /// is sent for the first of them goes out while the rest are still being handed out, not
    /// all of it after the last. On a current-thread runtime, the writer runs only when the
    /// reader lets it.
    #[tokio::test]
    async fn what_the_first_of_a_batch_produces_goes_out_before_the_last_is_handed_out() {
        use tokio::io::AsyncReadExt;
        let input: String =
            (0..16).map(|id| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")).collect();
        let (ours, mut peer) = tokio::io::duplex(64 * 1024);
        let transport = StdioTransport::from_io(std::io::Cursor::new(input.into_bytes()), ours, Limits::default())
            .with_read_spin(Duration::from_micros(50));
        let mut out = vec![0; 64 * 1024];
        for id in 0..16 {
            assert_eq!(transport.recv().await.unwrap().unwrap().id(), Some(&Id::Number(id)));
            if id == 15 {
                let written = match crate::transport::task::poll_once(std::pin::pin!(peer.read(&mut out))) {
                    std::task::Poll::Ready(read) => read.unwrap(),
                    std::task::Poll::Pending => 0,
                };
                let lines = out[..written].iter().filter(|b| **b == b'\n').count();
                assert!(lines >= 8, "{lines} of the first 15 were written before the last was handed out");
            }
            transport.send(ping(100 + id)).await.unwrap();
        }
        // An in-process peer (no spin): handed out in one go, nothing gained by yielding.
        let input: String =
            (0..16).map(|id| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")).collect();
        let (ours, mut peer) = tokio::io::duplex(64 * 1024);
        let transport = StdioTransport::from_io(std::io::Cursor::new(input.into_bytes()), ours, Limits::default());
        for id in 0..16 {
            assert_eq!(transport.recv().await.unwrap().unwrap().id(), Some(&Id::Number(id)));
            transport.send(ping(100 + id)).await.unwrap();
        }
        let pending = crate::transport::task::poll_once(std::pin::pin!(peer.read(&mut out)));
        assert!(pending.is_pending(), "without spinning, the writer has not run yet");
    }

    #[tokio::test]
    async fn messages_cross_a_pipe_pair_in_order() {
        let (a_read, b_write) = tokio::io::duplex(1024);
        let (b_read, a_write) = tokio::io::duplex(1024);
        let a = StdioTransport::from_io(a_read, a_write, Limits::default());
        let b = StdioTransport::from_io(b_read, b_write, Limits::default());
        for id in 0..100 {
            a.send(ping(id)).await.unwrap();
        }
        for id in 0..100 {
            assert_eq!(b.recv().await.unwrap().unwrap().id(), Some(&Id::Number(id)));
        }
        a.close().await.unwrap();
        assert!(b.recv().await.unwrap().is_none(), "closing a ends b's input cleanly");
        assert!(matches!(a.send(ping(1)).await, Err(TransportError::Closed)));
    }

    #[tokio::test]
    async fn tools_call_params_come_typed_only_when_asked_for() {
        use crate::proto::mcp_types::CallToolRequestParams;
        let input: &'static [u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}\n\
            {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":7}}\n\
            {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{}}\n";
        let params_of = |message: Option<Message>| match message {
            Some(Message::Request(r)) => r.params.unwrap(),
            other => panic!("expected a request, got {other:?}"),
        };
        let typed = StdioTransport::from_io(input, tokio::io::sink(), Limits::default()).with_typed_params(true);
        let first = params_of(typed.recv().await.unwrap());
        let call = first.typed_as::<CallToolRequestParams>().expect("typed params");
        assert_eq!((call.name.as_str(), &call.arguments.as_ref().unwrap()["text"]), ("echo", &serde_json::json!("hi")));
        // Params that do not fit, and other methods, stay raw for the handler to judge.
        assert_eq!(params_of(typed.recv().await.unwrap()).as_raw().unwrap().get(), r#"{"name":7}"#);
        assert_eq!(params_of(typed.recv().await.unwrap()).as_raw().unwrap().get(), "{}");

        let raw = StdioTransport::from_io(input, tokio::io::sink(), Limits::default());
        let exact = params_of(raw.recv().await.unwrap());
        assert_eq!(exact.as_raw().unwrap().get(), r#"{"name":"echo","arguments":{"text":"hi"}}"#);
    }

    #[tokio::test]
    async fn malformed_lines_are_reported_one_at_a_time() {
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nnot json\n\
            {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n";
        let t = StdioTransport::from_io(input, tokio::io::sink(), Limits::default());
        assert_eq!(t.recv().await.unwrap().unwrap().id(), Some(&Id::Number(1)));
        let err = t.recv().await.unwrap_err();
        assert!(!err.is_fatal());
        assert_eq!(err.to_string(), "malformed message: invalid json: expected ident at line 1 column 2");
        assert_eq!(t.recv().await.unwrap().unwrap().id(), Some(&Id::Number(2)));
        assert!(t.recv().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn oversized_line_is_rejected_and_the_next_one_read() {
        let big = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{{\"a\":\"{}\"}}}}\n", "z".repeat(5000));
        let input = format!("{big}{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}}\n").into_bytes();
        let t = StdioTransport::from_io(
            std::io::Cursor::new(input),
            tokio::io::sink(),
            Limits::default().with_max_frame_bytes(1024),
        );
        let err = t.recv().await.unwrap_err();
        assert!(err.to_string().contains("frame too large"), "{err}");
        assert_eq!(t.recv().await.unwrap().unwrap().id(), Some(&Id::Number(9)));
    }

    #[tokio::test]
    async fn an_answer_over_the_frame_cap_becomes_an_error_answer_to_its_request() {
        let text = "z".repeat(5000);
        let ours = format!("{{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{{\"t\":\"{text}\"}}}}\n");
        let typescript = format!("{{\"result\":{{\"t\":\"{text}\"}},\"jsonrpc\":\"2.0\",\"id\":\"s\"}}\n");
        let input = format!("{ours}{typescript}{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}}\n");
        let t = StdioTransport::from_io(
            std::io::Cursor::new(input.into_bytes()),
            tokio::io::sink(),
            Limits::default().with_max_frame_bytes(1024),
        );
        for (id, len) in [(Id::Number(4), ours.len() - 1), (Id::String("s".into()), typescript.len() - 1)] {
            // The frame error first (as for any oversized line), then the answer's error.
            let err = t.recv().await.unwrap_err();
            assert!(err.to_string().contains("frame too large"), "{err}");
            match t.recv().await.unwrap().unwrap() {
                Message::Error(e) => {
                    assert_eq!(e.id, Some(id));
                    assert_eq!(e.error.code.0, -32603);
                    assert_eq!(
                        e.error.message,
                        format!(
                            "response too large: {len} bytes, the limit is 1024 (Limits::max_frame_bytes); \
                             the peer's answer was dropped"
                        )
                    );
                }
                other => panic!("expected the error answer, got {other:?}"),
            }
        }
        assert_eq!(t.recv().await.unwrap().unwrap().id(), Some(&Id::Number(9)));
    }

    #[tokio::test]
    async fn a_request_of_the_peers_over_the_frame_cap_is_refused_with_its_id() {
        use tokio::io::AsyncBufReadExt;
        let text = "z".repeat(5000);
        let ours =
            format!("{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{{\"t\":\"{text}\"}}}}\n");
        let typescript =
            format!("{{\"method\":\"tools/call\",\"params\":{{\"t\":\"{text}\"}},\"jsonrpc\":\"2.0\",\"id\":\"r\"}}\n");
        let notification = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{{\"t\":\"{text}\"}}}}\n");
        let input = format!("{ours}{typescript}{notification}{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}}\n");
        let (output, peer_side) = tokio::io::duplex(64 * 1024);
        let t = StdioTransport::from_io(
            std::io::Cursor::new(input.into_bytes()),
            output,
            Limits::default().with_max_frame_bytes(1024),
        );
        // The requests are answered on the wire, not reported: the first thing `recv` gives is
        // the notification's frame error (it has no id to answer), then the next line.
        let err = t.recv().await.unwrap_err();
        assert!(err.to_string().contains("frame too large"), "{err}");
        assert_eq!(t.recv().await.unwrap().unwrap().id(), Some(&Id::Number(9)));
        let mut lines = tokio::io::BufReader::new(peer_side).lines();
        for (id, len) in [(serde_json::json!(5), ours.len() - 1), (serde_json::json!("r"), typescript.len() - 1)] {
            let line = lines.next_line().await.unwrap().expect("the refusal was written");
            let refusal: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(refusal["id"], id, "{line}");
            assert_eq!(refusal["error"]["code"], -32600, "{line}");
            assert_eq!(
                refusal["error"]["message"],
                format!("request too large: {len} bytes, the limit is 1024 (Limits::max_frame_bytes)")
            );
            assert_eq!(refusal["error"]["data"], serde_json::json!({"limit": 1024, "size": len}));
        }
    }

    #[tokio::test]
    async fn child_stdout_noise_is_skipped_and_stderr_lines_reach_the_callback() {
        let lines = Arc::new(StdMutex::new(Vec::<String>::new()));
        let seen = lines.clone();
        let script = r#"echo 'warming up'; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; echo 'oops' >&2; read line; echo "$line""#;
        let t = ChildCommand::new("sh")
            .args(["-c", script])
            .stderr(Stderr::Lines(Arc::new(move |l: &str| seen.lock().unwrap().push(l.to_owned()))))
            .spawn()
            .unwrap();
        let first = t.recv().await.unwrap().unwrap();
        assert!(matches!(first, Message::Response(_)), "{first:?}");
        t.send(ping(4)).await.unwrap();
        assert_eq!(t.recv().await.unwrap().unwrap().id(), Some(&Id::Number(4)));
        assert!(t.recv().await.unwrap().is_none());
        t.close().await.unwrap();
        assert!(t.exit_status().unwrap().success());
        let lines = lines.lock().unwrap().clone();
        assert!(lines.iter().any(|l| l == "oops"), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("skipped a stdout line")), "{lines:?}");
    }

    #[tokio::test]
    async fn close_stops_a_child_that_ignores_stdin_and_sigterm() {
        let t = ChildCommand::new("sh")
            .args(["-c", "trap '' TERM; sleep 30 & wait"])
            .limits(Limits::default().with_shutdown_grace(Duration::from_millis(100)))
            .spawn()
            .unwrap();
        let pid = t.child_pid().unwrap();
        t.close().await.unwrap();
        let status = t.exit_status().expect("reaped");
        assert!(!status.success());
        // The grandchild `sleep` was killed with the group; it may linger a moment as a zombie
        // until whoever inherited it reaps it, but nothing in the group may still run.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while !running_in_group(pid).is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(running_in_group(pid), Vec::<u32>::new(), "the whole process group is gone");
    }

    /// Processes of group `pgid` that are not zombies, read from /proc.
    fn running_in_group(pgid: u32) -> Vec<u32> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
            // Fields after the parenthesised command: state, ppid, pgrp, ...
            let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else { continue };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if fields.get(2) == Some(&pgid.to_string().as_str()) && fields.first() != Some(&"Z") {
                found.push(pid);
            }
        }
        found
    }

    #[tokio::test]
    async fn setting_the_version_does_not_wait_for_a_pending_recv() {
        let (input, mut feed) = tokio::io::duplex(1024);
        let t = Arc::new(StdioTransport::from_io(input, tokio::io::sink(), Limits::default()));
        let reader = t.clone();
        let pending = tokio::spawn(async move { reader.recv().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        // A plain call: it cannot wait for the reader the pending `recv` holds.
        Transport::set_protocol_version(&*t, Some(ProtocolVersion::V2025_03_26));
        // The batch that arrives next is decoded under 2025-03-26, which allows batches.
        use tokio::io::AsyncWriteExt;
        feed.write_all(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n").await.unwrap();
        assert_eq!(pending.await.unwrap().unwrap().unwrap().id(), Some(&Id::Number(1)));
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error() {
        let err = ChildCommand::new("/nonexistent/mcp-server").spawn().err().unwrap();
        assert!(err.to_string().starts_with("cannot start /nonexistent/mcp-server: "), "{err}");
    }
}
