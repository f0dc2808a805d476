//! The gateway's audit log: one JSON line per use of a tool, a prompt or a resource
//! (`tools/call`, `prompts/get`, `resources/read`, forwarded or refused), written off the call
//! path.
//!
//! A line: `time` (RFC 3339, UTC, milliseconds), `caller` (the token's name, else the OAuth
//! subject, else the client id; absent when anonymous) and `caller_kind` (`token`, `subject`,
//! `client`), `session` (the downstream session's number in this process, absent for a
//! stateless request), `endpoint` (the virtual server it came through, absent for the
//! gateway's own endpoint), `method`, `server`, `name` (the tool, prompt or resource URI as the
//! upstream knows it), `outcome` (`ok`, `tool_error`, `error`, `denied`, `rate_limited`),
//! `latency_ms`, `id` (the JSON-RPC id). A tool's `arguments` only when the tool is opted in
//! ([`AuditLog::with_arguments`]); results never. Never a token: a caller is named, not
//! quoted.
//!
//! [`AuditLog::record`] hands the line to a bounded channel and returns: when the writer is
//! behind and the channel full, the line is dropped and counted
//! (`mcp_bridge_audit_dropped_total`), the call never waits. The writer ([`AuditLog::new`] with a [`Sink`])
//! appends to a file and rotates it by size: past `max_bytes` the file becomes `FILE.1`,
//! `FILE.1` becomes `FILE.2` …, and only `keep` old files are kept; or it writes to stderr.
//!
//! Not here: traces (trace ids), the HTTP requests' own log.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::policy::Glob;
use crate::auth::Principal;

/// Lines waiting for the writer at most; past it lines are dropped and counted.
pub const QUEUE: usize = 4096;

/// How a forwarded request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result.
    Ok,
    /// A tool result with `isError: true`.
    ToolError,
    /// A JSON-RPC error (the upstream's, or the bridge's: down, timed out …).
    Error,
    /// Refused by the policy.
    Denied,
    /// Refused by a rate limit.
    RateLimited,
    /// Cancelled by the client before it was answered.
    Cancelled,
}

impl Outcome {
    /// As written in a line: `ok`, `tool_error`, `error`, `denied`, `rate_limited`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
            Outcome::RateLimited => "rate_limited",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// One forwarded request, as the gateway saw it.
#[derive(Debug)]
pub struct Entry<'a> {
    /// Who asked (`None`: anonymous).
    pub caller: Option<&'a Principal>,
    /// The downstream session's number, if any.
    pub session: Option<u64>,
    /// The virtual server it came through ([`super::endpoint`]); `None`: the gateway's own
    /// endpoint.
    pub endpoint: Option<&'a str>,
    /// `tools/call`, `prompts/get`, `resources/read`.
    pub method: &'a str,
    /// The upstream server.
    pub server: &'a str,
    /// The tool, prompt or URI, as the upstream knows it.
    pub name: &'a str,
    /// How it ended.
    pub outcome: Outcome,
    /// From receiving it to answering.
    pub latency: Duration,
    /// The JSON-RPC id, as the client sent it.
    pub id: Value,
    /// The tool's arguments (kept only for opted-in tools).
    pub arguments: Option<&'a Map<String, Value>>,
}

/// The sending side of the audit log (cheap to clone).
#[derive(Clone)]
pub struct AuditLog {
    lines: mpsc::Sender<String>,
    arguments: Arc<Vec<Glob>>,
    dropped: Arc<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").field("arguments", &self.arguments).finish_non_exhaustive()
    }
}

/// Where the writer writes.
#[derive(Debug, Clone)]
pub enum Sink {
    /// The process's stderr.
    Stderr,
    /// A file rotated by size.
    File {
        /// The file.
        path: PathBuf,
        /// Past this size the file is rotated.
        max_bytes: u64,
        /// Old files kept (`FILE.1` … `FILE.keep`).
        keep: u32,
    },
}

impl AuditLog {
    /// An audit log writing to `sink`, and the writer to spawn (it ends when every
    /// [`AuditLog`] is dropped). `dropped` is called for each line dropped because the queue
    /// was full.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn new(
        sink: Sink,
        dropped: impl Fn() + Send + Sync + 'static,
    ) -> std::io::Result<(AuditLog, impl std::future::Future<Output = ()> + Send + 'static)> {
        let (tx, rx) = mpsc::channel::<String>(QUEUE);
        let mut writer = Writer::open(sink)?;
        let task = async move {
            let mut rx = rx;
            while let Some(line) = rx.recv().await {
                if let Err(e) = writer.write(&line) {
                    tracing::warn!("audit log: cannot write: {e}");
                }
            }
        };
        Ok((AuditLog { lines: tx, arguments: Arc::default(), dropped: Arc::new(dropped) }, task))
    }

    /// The arguments of the tools matching `globs` (`SERVER/TOOL`) written in their lines.
    pub fn with_arguments(mut self, globs: Vec<Glob>) -> AuditLog {
        self.arguments = Arc::new(globs);
        self
    }

    /// Queues the line of `entry` (never waits: dropped and counted when the queue is full).
    pub fn record(&self, entry: &Entry<'_>) {
        let line = self.line(entry, SystemTime::now());
        if self.lines.try_send(line).is_err() {
            (self.dropped)();
        }
    }

    fn line(&self, entry: &Entry<'_>, now: SystemTime) -> String {
        let mut line = Map::new();
        line.insert("time".into(), Value::String(rfc3339(now)));
        let caller = entry.caller.and_then(caller_name);
        if let Some((kind, name)) = caller {
            line.insert("caller".into(), Value::String(name.to_owned()));
            line.insert("caller_kind".into(), Value::String(kind.into()));
        }
        if let Some(session) = entry.session {
            line.insert("session".into(), Value::from(session));
        }
        if let Some(endpoint) = entry.endpoint {
            line.insert("endpoint".into(), Value::String(endpoint.into()));
        }
        line.insert("method".into(), Value::String(entry.method.into()));
        line.insert("server".into(), Value::String(entry.server.into()));
        line.insert("name".into(), Value::String(entry.name.into()));
        line.insert("outcome".into(), Value::String(entry.outcome.as_str().into()));
        line.insert(
            "latency_ms".into(),
            serde_json::Number::from_f64(latency_ms(entry.latency)).map_or(Value::Null, Value::Number),
        );
        line.insert("id".into(), entry.id.clone());
        if let Some(arguments) = entry.arguments {
            let target = format!("{}/{}", entry.server, entry.name);
            if entry.method == "tools/call" && self.arguments.iter().any(|g| g.matches(&target)) {
                line.insert("arguments".into(), Value::Object(arguments.clone()));
            }
        }
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        text
    }
}

/// How a line names `caller`: `("token", its name)`, else `("subject", the OAuth subject)`,
/// else `("client", the client id)`; `None` when it has none of them.
pub(crate) fn caller_name(caller: &Principal) -> Option<(&'static str, &str)> {
    if let Some(name) = &caller.token_name {
        Some(("token", name.as_str()))
    } else if let Some(subject) = &caller.subject {
        Some(("subject", subject.as_str()))
    } else {
        caller.client_id.as_deref().map(|c| ("client", c))
    }
}

/// `latency` in milliseconds, to the microsecond.
pub(crate) fn latency_ms(latency: Duration) -> f64 {
    (latency.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

/// `time` as RFC 3339 in UTC with milliseconds (`2026-12-03T19:05:01.123Z`).
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let (secs, millis) = (since.as_secs(), since.subsec_millis());
    let (days, rest) = ((secs / 86400) as i64, secs % 86400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// The writing end: stderr, or a file and its size.
enum Writer {
    Stderr,
    File { path: PathBuf, max_bytes: u64, keep: u32, file: std::fs::File, size: u64 },
}

fn append(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().create(true).append(true).open(path)
}

/// `FILE.n`.
fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

impl Writer {
    fn open(sink: Sink) -> std::io::Result<Writer> {
        Ok(match sink {
            Sink::Stderr => Writer::Stderr,
            Sink::File { path, max_bytes, keep } => {
                let file = append(&path)?;
                let size = file.metadata()?.len();
                Writer::File { path, max_bytes, keep, file, size }
            }
        })
    }

    fn write(&mut self, line: &str) -> std::io::Result<()> {
        match self {
            Writer::Stderr => std::io::stderr().lock().write_all(line.as_bytes()),
            Writer::File { path, max_bytes, keep, file, size } => {
                let len = line.len() as u64;
                if *size > 0 && *size + len > *max_bytes {
                    // FILE.keep goes; each FILE.n becomes FILE.n+1; FILE becomes FILE.1.
                    if *keep == 0 {
                        std::fs::remove_file(&*path)?;
                    } else {
                        let _ = std::fs::remove_file(numbered(path, *keep));
                        for n in (1..*keep).rev() {
                            let _ = std::fs::rename(numbered(path, n), numbered(path, n + 1));
                        }
                        std::fs::rename(&*path, numbered(path, 1))?;
                    }
                    *file = append(path)?;
                    *size = 0;
                }
                file.write_all(line.as_bytes())?;
                *size += len;
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_in_utc() {
        let at = |secs: u64, ms: u64| rfc3339(SystemTime::UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_796_324_701, 123), "2026-12-03T19:05:01.123Z");
    }

    #[test]
    fn a_line_names_the_caller_never_more_and_arguments_only_when_opted_in() {
        let (log, _writer) = AuditLog::new(Sink::Stderr, || {}).unwrap();
        let log = log.with_arguments(vec![Glob::new("echo/echo")]);
        let ci = Principal::named_token("ci");
        let arguments = serde_json::json!({"text": "hi"}).as_object().cloned().unwrap();
        let entry = |name, outcome| Entry {
            caller: Some(&ci),
            session: Some(7),
            endpoint: None,
            method: "tools/call",
            server: "echo",
            name,
            outcome,
            latency: Duration::from_micros(1500),
            id: Value::from(3),
            arguments: Some(&arguments),
        };
        let at = SystemTime::UNIX_EPOCH;
        let line: Value = serde_json::from_str(&log.line(&entry("echo", Outcome::Ok), at)).unwrap();
        assert_eq!(
            line,
            serde_json::json!({"time": "1970-01-01T00:00:00.000Z", "caller": "ci", "caller_kind": "token",
                "session": 7, "method": "tools/call", "server": "echo", "name": "echo", "outcome": "ok",
                "latency_ms": 1.5, "id": 3, "arguments": {"text": "hi"}})
        );
        let line: Value = serde_json::from_str(&log.line(&entry("add", Outcome::Denied), at)).unwrap();
        assert_eq!((line.get("arguments"), &line["outcome"]), (None, &Value::from("denied")));
    }

    /// An anonymous `tools/call` of `s`'s tool `t` numbered `id`, answered at once.
    fn anonymous_call(id: usize) -> Entry<'static> {
        Entry {
            caller: None,
            session: None,
            endpoint: None,
            method: "tools/call",
            server: "s",
            name: "t",
            outcome: Outcome::Ok,
            latency: Duration::ZERO,
            id: Value::from(id),
            arguments: None,
        }
    }

    #[tokio::test]
    async fn the_file_rotates_by_size_keeping_n_old_files() {
        let dir = std::env::temp_dir().join(format!("mcpwire-audit-rotate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.log");
        let sink = Sink::File { path: path.clone(), max_bytes: 250, keep: 2 };
        let (log, writer) = AuditLog::new(sink, || {}).unwrap();
        let written = tokio::spawn(writer);
        for i in 0..20 {
            log.record(&anonymous_call(i));
        }
        drop(log);
        written.await.unwrap();
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        let files = [path.clone(), numbered(&path, 1), numbered(&path, 2)];
        for file in &files {
            let text = read(file);
            assert!(!text.is_empty() && text.len() <= 250, "{}: {} bytes", file.display(), text.len());
            assert!(text.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()), "whole lines only");
        }
        assert!(!numbered(&path, 3).exists(), "only 2 old files kept");
        // The newest lines are in FILE, the last id 19.
        let last: Value = serde_json::from_str(read(&path).lines().last().unwrap()).unwrap();
        assert_eq!(last["id"], 19);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_full_queue_drops_and_counts_never_waits() {
        let dropped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = dropped.clone();
        let (log, _writer_not_running) = AuditLog::new(Sink::Stderr, move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        for i in 0..QUEUE + 5 {
            log.record(&anonymous_call(i));
        }
        assert_eq!(dropped.load(std::sync::atomic::Ordering::Relaxed), 5);
    }
}
