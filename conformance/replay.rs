//! Replaying the client side of a recording against a live server, over any [`Transport`].
//!
//! The recorded `c2s` messages are sent in order — requests and notifications as recorded, the
//! answers to the server's own requests with the live request ids. Before each one is sent,
//! every server message recorded before it must have arrived and matched (under the rules of
//! `matching`); each awaited message gets at most [`ReplayOptions::timeout`]. At the end any
//! server message nobody expected is a difference too.
//!
//! [`replay_stdio`] runs one recording against a server started as a child process;
//! [`replay_http`] replays an HTTP recording as raw exchanges (`replay_http` module), which
//! checks the `http` members too.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::time::{timeout_at, Instant};

use super::clock::{fake_clock_env, find_libfaketime, recorded_start, ClockMode};
use super::fixtures::{Fixtures, RECORDED_ROOT};
use super::matching::{kind_of, would_match, Kind, Matcher, Rules};
use mcpwire::proto::jsonrpc::Message;
use mcpwire::recording::{Dir, Recording};
use mcpwire::transport::stdio::{ChildCommand, Stderr};
use mcpwire::transport::{Limits, Transport};

/// How patient a replay is.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// How long each expected server message is waited for beyond its recorded gap: 5 s by
    /// default (see [`ReplayOptions::patience`]).
    pub timeout: Duration,
    /// How many times its recorded gap (`t_ms` since the message before it) an expected
    /// message is waited for on top of `timeout`: 2 by default, so a server whose timer fired
    /// 5 s after the previous message replays without a hand-set timeout.
    pub gap_factor: u32,
    /// How long after the last expected message the replay listens for unexpected ones: 100 ms.
    pub settle: Duration,
    /// The clock a server started by [`replay_stdio`] reads; `None` (the default): as the
    /// recording's sidecar says (see [`super::clock`]), else the machine's.
    pub clock: Option<ClockMode>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            timeout: Duration::from_secs(5),
            gap_factor: 2,
            settle: Duration::from_millis(100),
            clock: None,
        }
    }
}

impl ReplayOptions {
    /// How long to wait for a server message recorded `gap_ms` after the message before it:
    /// `timeout + gap_ms × gap_factor`, the gap counted up to a day (a deadline must stay
    /// representable whatever `t_ms` a file holds).
    pub fn patience(&self, gap_ms: u64) -> Duration {
        const DAY_MS: u64 = 86_400_000;
        self.timeout + Duration::from_millis(gap_ms.min(DAY_MS) * u64::from(self.gap_factor.min(1000)))
    }
}

/// One way a live session departed from its recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The recorded message concerned (0: none, e.g. an unexpected live message).
    pub seq: u64,
    /// Its direction.
    pub dir: Dir,
    /// Its method (for a response, the method of its request) and kind.
    pub what: String,
    /// The difference: `JSON path: expected X, got Y`, or what went wrong.
    pub detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seq {} {} {}: {}", self.seq, self.dir.as_str(), self.what, self.detail)
    }
}

/// The result of replaying one recording.
#[derive(Debug, Clone)]
pub struct SessionOutcome {
    /// The recording's name.
    pub name: String,
    /// Every difference; empty when the session passed.
    pub failures: Vec<String>,
}

impl SessionOutcome {
    /// A session that failed for one reason.
    pub fn failed(name: String, why: String) -> SessionOutcome {
        SessionOutcome { name, failures: vec![why] }
    }

    /// Whether the session matched its recording.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

pub(crate) fn describe(kind: Kind, method: &str) -> String {
    match kind {
        Kind::Request => format!("{method} request"),
        Kind::Notification => format!("{method} notification"),
        Kind::Response => format!("{method} response"),
    }
}

/// The message to send for a recorded one: the recorded text with bound values substituted
/// (so key order and number spelling stay the sender's), and `id` replaced when given.
///
/// # Errors
/// When the result is not a valid JSON-RPC message.
pub fn outgoing(raw: &str, matcher: &Matcher, id: Option<&Value>) -> Result<Message, String> {
    let mut message = Message::from_str(&matcher.substitute_text(raw)).map_err(|e| e.to_string())?;
    if let Some(id) = id {
        let id: mcpwire::proto::jsonrpc::Id =
            serde_json::from_value(id.clone()).map_err(|e| format!("id {id}: {e}"))?;
        match &mut message {
            Message::Request(r) => r.id = id,
            Message::Response(r) => r.id = id,
            Message::Error(r) => r.id = Some(id),
            Message::Notification(_) => {}
        }
    }
    Ok(message)
}

fn to_value(message: &Message) -> Value {
    serde_json::from_slice(&message.to_vec()).unwrap_or(Value::Null)
}

/// Plays the client side of `recording` over `transport` (connected to the server under test)
/// and returns every difference found. Does not close the transport.
pub async fn replay_client<T: Transport>(
    recording: &Recording,
    transport: &T,
    matcher: &mut Matcher,
    options: ReplayOptions,
) -> Vec<Failure> {
    let mut failures = Vec::new();
    let mut pool: Vec<Value> = Vec::new();
    let mut our_requests: HashMap<String, String> = HashMap::new();
    let mut ended = false;
    let mut previous_t_ms = recording.entries.first().map_or(0, |e| e.t_ms);
    for entry in &recording.entries {
        let gap_ms = entry.t_ms.saturating_sub(previous_t_ms);
        previous_t_ms = entry.t_ms;
        let Some(raw) = &entry.msg else { continue };
        let recorded: Value = match serde_json::from_str(raw.get()) {
            Ok(v) => v,
            Err(e) => {
                failures.push(Failure {
                    seq: entry.seq,
                    dir: entry.dir,
                    what: "message".into(),
                    detail: e.to_string(),
                });
                return failures;
            }
        };
        let kind = kind_of(&recorded);
        let method = match kind {
            Kind::Response => {
                let id = recorded.get("id").map(Value::to_string).unwrap_or_default();
                our_requests.get(&id).cloned().unwrap_or_default()
            }
            _ => recorded.get("method").and_then(Value::as_str).unwrap_or_default().to_owned(),
        };
        let fail = |detail: String| Failure { seq: entry.seq, dir: entry.dir, what: describe(kind, &method), detail };
        match entry.dir {
            Dir::ClientToServer => {
                let mut live_id = None;
                match kind {
                    Kind::Response => {
                        let recorded_id = recorded.get("id").cloned().unwrap_or(Value::Null);
                        match matcher.live_id(&recorded_id) {
                            Some(live) => live_id = Some(live.clone()),
                            None => {
                                failures.push(fail(format!(
                                    "answers server request {recorded_id}, which the server never sent"
                                )));
                                continue;
                            }
                        }
                    }
                    Kind::Request => {
                        let id = recorded.get("id").map(Value::to_string).unwrap_or_default();
                        our_requests.insert(id, method.clone());
                    }
                    Kind::Notification => {}
                }
                let message = match outgoing(raw.get(), matcher, live_id.as_ref()) {
                    Ok(m) => m,
                    Err(e) => {
                        failures.push(fail(format!("recorded message is not valid JSON-RPC: {e}")));
                        continue;
                    }
                };
                if let Err(e) = transport.send(message).await {
                    failures.push(fail(format!("could not send: {e}")));
                    return failures;
                }
            }
            Dir::ServerToClient => {
                let reorder = kind == Kind::Notification && matcher.rules().may_reorder(&method);
                let deadline = Instant::now() + options.patience(gap_ms);
                loop {
                    let candidate = |v: &Value| {
                        kind_of(v) == kind
                            && match kind {
                                Kind::Response => v.get("id") == recorded.get("id"),
                                _ => v.get("method").and_then(Value::as_str) == Some(method.as_str()),
                            }
                    };
                    let clean = if reorder {
                        pool.iter().position(|v| candidate(v) && would_match(matcher, &method, &recorded, v))
                    } else {
                        pool.iter().position(candidate)
                    };
                    let chosen = clean.or_else(|| {
                        (ended || Instant::now() >= deadline).then(|| pool.iter().position(candidate)).flatten()
                    });
                    if let Some(i) = chosen {
                        let live = pool.remove(i);
                        let result = match kind {
                            Kind::Request => matcher.compare_peer_request(&method, &recorded, &live),
                            _ => matcher.compare(&method, &recorded, &live),
                        };
                        if let Err(d) = result {
                            failures.push(fail(d.to_string()));
                        }
                        break;
                    }
                    if ended || Instant::now() >= deadline {
                        let why = if ended { "the server closed the connection" } else { "timed out" };
                        failures.push(fail(format!("$: expected this message, got nothing ({why})")));
                        return failures;
                    }
                    match timeout_at(deadline, transport.recv()).await {
                        Err(_) => {}
                        Ok(Ok(Some(message))) => pool.push(to_value(&message)),
                        Ok(Ok(None)) => ended = true,
                        Ok(Err(e)) if !e.is_fatal() => failures.push(fail(format!("server sent a bad line: {e}"))),
                        Ok(Err(e)) => {
                            failures.push(fail(format!("connection failed: {e}")));
                            ended = true;
                        }
                    }
                }
            }
        }
    }
    let settle = Instant::now() + options.settle;
    if !ended {
        loop {
            match timeout_at(settle, transport.recv()).await {
                Ok(Ok(Some(message))) => pool.push(to_value(&message)),
                Ok(Err(e)) if !e.is_fatal() => continue,
                _ => break,
            }
        }
    }
    for live in pool {
        let method = live.get("method").and_then(Value::as_str).unwrap_or("(response)").to_owned();
        failures.push(Failure {
            seq: 0,
            dir: Dir::ServerToClient,
            what: describe(kind_of(&live), &method),
            detail: format!("$: expected nothing, got {}", abbreviate(&live.to_string())),
        });
    }
    failures
}

pub(crate) fn abbreviate(text: &str) -> String {
    if text.len() <= 200 {
        return text.to_owned();
    }
    let mut end = 197;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Splits a command line at whitespace, honouring single and double quotes (no escapes but
/// `\` before a quote or backslash inside double quotes).
pub fn split_command(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\')) => word.push(chars.next().unwrap_or('\\')),
                        c => word.push(c),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The recording at `path`, or the failed outcome (named after the file) when it cannot be read.
fn read_session(path: &Path) -> Result<Recording, SessionOutcome> {
    Recording::read(path).map_err(|e| {
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        SessionOutcome::failed(name, e.to_string())
    })
}

/// Replays the recording at `path` against `server` (a command line; in it `{fixtures}` stands
/// for the live fixture directory, `{recording}` for `path` and `{name}` for the recording's
/// name) over stdio. The child is always stopped. Under [`ClockMode::Recorded`] (asked for by
/// the options or the recording's sidecar) the child starts with the recording's clock.
pub async fn replay_stdio(path: &Path, server: &str, options: ReplayOptions) -> SessionOutcome {
    let recording = match read_session(path) {
        Ok(r) => r,
        Err(outcome) => return outcome,
    };
    let name = recording.header.name.clone();
    if recording.header.transport != "stdio" {
        return SessionOutcome::failed(
            name,
            format!("transport {}: this runner replays stdio sessions only", recording.header.transport),
        );
    }
    let rules = match Rules::for_recording(path) {
        Ok(r) => r,
        Err(e) => return SessionOutcome::failed(name, e),
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let needs_fixtures = text.contains(RECORDED_ROOT) || server.contains("{fixtures}");
    let fixtures = if needs_fixtures {
        match Fixtures::create() {
            Ok(f) => Some(f),
            Err(e) => return SessionOutcome::failed(name, format!("cannot create the fixture tree: {e}")),
        }
    } else {
        None
    };
    let root = fixtures.as_ref().map(|f| f.root().to_string_lossy().into_owned());
    let words: Vec<String> = split_command(server)
        .into_iter()
        .map(|w| match &root {
            Some(root) => w.replace("{fixtures}", root),
            None => w,
        })
        .map(|w| w.replace("{recording}", &path.to_string_lossy()).replace("{name}", &name))
        .collect();
    let Some((program, args)) = words.split_first() else {
        return SessionOutcome::failed(name, "empty --server command".into());
    };
    let stderr =
        if std::env::var_os("MCP_CONFORMANCE_SERVER_STDERR").is_some() { Stderr::Inherit } else { Stderr::Discard };
    let limits = Limits::default().with_shutdown_grace(Duration::from_millis(500));
    let mut command = ChildCommand::new(program).args(args).stderr(stderr).limits(limits);
    if options.clock.unwrap_or(rules.clock) == ClockMode::Recorded {
        let clock = recorded_start(&recording.header).and_then(|start| Ok((find_libfaketime()?, start)));
        let (lib, start) = match clock {
            Ok(found) => found,
            Err(e) => return SessionOutcome::failed(name, format!("the recorded clock: {e}")),
        };
        let inherited = std::env::var("LD_PRELOAD").ok();
        for (key, value) in fake_clock_env(&lib, start, inherited.as_deref()) {
            command = command.env(key, value);
        }
    }
    let transport = match command.spawn() {
        Ok(t) => t,
        Err(e) => return SessionOutcome::failed(name, e.to_string()),
    };
    let mut matcher = Matcher::new(rules, fixtures.as_ref().map(Fixtures::root));
    let failures = replay_client(&recording, &transport, &mut matcher, options).await;
    let _ = transport.close().await;
    drop(fixtures);
    SessionOutcome { name, failures: failures.iter().map(ToString::to_string).collect() }
}

/// Replays the recording at `path` (transport `streamable-http` or `sse`) against the server at
/// `url` as raw HTTP exchanges ([`super::replay_http`]): each recorded request is re-issued as
/// recorded, and statuses, kept headers, SSE framing (event ids, priming and `endpoint` events)
/// and the bodies of bodiless responses are checked along with the messages. When `url` has no
/// path the recorded paths are used; with one, it stands for the recording's first path
/// (`/mcp`, `/sse`). The session ends as recorded (DELETE where the client sent one); open
/// streams are dropped at the end.
pub async fn replay_http(path: &Path, url: &str, options: ReplayOptions) -> SessionOutcome {
    let recording = match read_session(path) {
        Ok(r) => r,
        Err(outcome) => return outcome,
    };
    let name = recording.header.name.clone();
    if !matches!(recording.header.transport.as_str(), "streamable-http" | "sse") {
        return SessionOutcome::failed(
            name,
            format!("transport {}: --server-url replays HTTP sessions only", recording.header.transport),
        );
    }
    let rules = match Rules::for_recording(path) {
        Ok(r) => r,
        Err(e) => return SessionOutcome::failed(name, e),
    };
    // The server is not ours to start, so it has no fixture directory of ours: recorded paths
    // under /tmp/mcp-fixtures are sent and expected as they are.
    let mut matcher = Matcher::new(rules, None);
    let failures = super::replay_http::replay_raw_http(&recording, url, &mut matcher, options).await;
    SessionOutcome { name, failures: failures.iter().map(ToString::to_string).collect() }
}

/// One line of the report `serve --report FILE` appends to as it goes.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServeReportLine {
    /// The recorded client message with this `seq` was matched.
    Matched(u64),
    /// A difference, as [`Failure`] displays it.
    Failure(String),
}

/// Plays the recorded server of the recording at `path` to a client under test.
///
/// For a stdio recording the client is started as `CLIENT_CMD ARGS RUNNER serve [--fixtures DIR]
/// --report FILE RECORDING`: the words appended are the server command it is to launch (the
/// recorded server, `runner` being the `mcp-conformance` binary). For an HTTP recording
/// (`streamable-http` or `sse`) the runner first starts `RUNNER serve --listen 127.0.0.1:0
/// --fixtures DIR --report FILE RECORDING` and the client is started as `CLIENT_CMD ARGS URL`: the
/// word appended is the URL it is to connect to — the Streamable HTTP endpoint
/// (`http://127.0.0.1:PORT/mcp`), or for an `sse` recording the legacy transport's stream
/// (`http://127.0.0.1:PORT/sse`); `serve` is stopped (SIGINT, then its sessions report what is
/// left) once the client has exited. In `client`, `{fixtures}`, `{recording}` and `{name}` are
/// replaced as in [`replay_stdio`]. The session is over when the client exits (within
/// `options.timeout` × the number of recorded messages, at least 30 s); then the differences
/// `serve` reported, a failed exit of the client, and every recorded client message the client
/// never sent are the failures. Only messages are compared, not the HTTP framing
/// (`replay --server-url` checks that).
pub async fn replay_with_client(path: &Path, client: &str, runner: &Path, options: ReplayOptions) -> SessionOutcome {
    let recording = match read_session(path) {
        Ok(r) => r,
        Err(outcome) => return outcome,
    };
    let name = recording.header.name.clone();
    let http = match recording.header.transport.as_str() {
        "stdio" => false,
        "streamable-http" | "sse" => true,
        other => {
            return SessionOutcome::failed(
                name,
                format!("transport {other}: --client replays stdio and HTTP sessions only"),
            )
        }
    };
    if let Err(e) = Rules::for_recording(path) {
        return SessionOutcome::failed(name, e);
    }
    let fixtures = match Fixtures::create() {
        Ok(f) => f,
        Err(e) => return SessionOutcome::failed(name, format!("cannot create the fixture tree: {e}")),
    };
    let root = fixtures.root().to_string_lossy().into_owned();
    let report = fixtures.root().join("serve-report.jsonl");
    let mut words: Vec<String> = split_command(client)
        .into_iter()
        .map(|w| {
            w.replace("{fixtures}", &root).replace("{recording}", &path.to_string_lossy()).replace("{name}", &name)
        })
        .collect();
    if words.is_empty() {
        return SessionOutcome::failed(name, "empty --client command".into());
    }
    let mut serve_args: Vec<String> = vec!["serve".into()];
    if http {
        serve_args.extend(["--listen".into(), "127.0.0.1:0".into()]);
    }
    serve_args.extend(["--fixtures".into(), root.clone(), "--report".into()]);
    serve_args.push(report.to_string_lossy().into_owned());
    serve_args.push(path.to_string_lossy().into_owned());
    let mut listener = None;
    if http {
        match ServeListen::start(runner, &serve_args).await {
            Ok((serve, url)) => {
                words.push(url);
                listener = Some(serve);
            }
            Err(e) => return SessionOutcome::failed(name, e),
        }
    } else {
        words.push(runner.to_string_lossy().into_owned());
        words.extend(serve_args);
    }
    let (program, args) = words.split_first().expect("not empty");
    let inherit = std::env::var_os("MCP_CONFORMANCE_CLIENT_STDERR").is_some();
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(if inherit { std::process::Stdio::inherit() } else { std::process::Stdio::piped() })
        .kill_on_drop(true);
    let mut failures = Vec::new();
    match command.spawn() {
        Err(e) => failures.push(format!("cannot start the client {program}: {e}")),
        Ok(child) => {
            let patience = (options.timeout * recording.entries.len() as u32).max(Duration::from_secs(30));
            match tokio::time::timeout(patience, child.wait_with_output()).await {
                Err(_) => failures.push(format!("the client did not finish within {} s", patience.as_secs())),
                Ok(Err(e)) => failures.push(format!("waiting for the client: {e}")),
                Ok(Ok(out)) if !out.status.success() => {
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
                    let tail: Vec<&str> = tail.into_iter().rev().collect();
                    failures.push(format!("the client exited with {}: {}", out.status, tail.join(" | ")));
                }
                Ok(Ok(_)) => {}
            }
        }
    }
    if let Some(serve) = listener {
        if let Err(e) = serve.stop().await {
            failures.push(e);
        }
    }
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let mut matched = std::collections::HashSet::new();
    for line in text.lines() {
        match serde_json::from_str::<ServeReportLine>(line) {
            Ok(ServeReportLine::Matched(seq)) => {
                matched.insert(seq);
            }
            Ok(ServeReportLine::Failure(f)) => failures.push(f),
            Err(_) => {}
        }
    }
    // Requests the recorded server refused at the HTTP level before any session saw them (bad
    // headers, an unknown session) test the server, not the client: no client is expected to
    // make them, and `serve` does not script them.
    let refused = super::serve::rejected_at_http_level(&recording);
    for entry in &recording.entries {
        let Some(raw) = &entry.msg else { continue };
        if entry.dir != Dir::ClientToServer || matched.contains(&entry.seq) || refused.contains(&entry.seq) {
            continue;
        }
        let recorded: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        let kind = kind_of(&recorded);
        let method = match kind {
            Kind::Response => recording
                .entries
                .iter()
                .rev()
                .filter(|e| e.dir == Dir::ServerToClient && e.seq < entry.seq)
                .filter_map(|e| serde_json::from_str::<Value>(e.msg.as_ref()?.get()).ok())
                .find(|m| kind_of(m) == Kind::Request && m.get("id") == recorded.get("id"))
                .and_then(|m| m.get("method").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default(),
            _ => recorded.get("method").and_then(Value::as_str).unwrap_or_default().to_owned(),
        };
        let what = match &recorded {
            Value::Array(batch) => {
                let methods: Vec<&str> =
                    batch.iter().map(|m| m.get("method").and_then(Value::as_str).unwrap_or("(response)")).collect();
                format!("batch ({})", methods.join(", "))
            }
            _ => describe(kind, &method),
        };
        let failure = Failure {
            seq: entry.seq,
            dir: entry.dir,
            what,
            detail: "$: recorded, but the client never sent it".into(),
        };
        failures.push(failure.to_string());
    }
    drop(fixtures);
    SessionOutcome { name, failures }
}

/// `mcp-conformance serve --listen` as a child process of the runner, for `--client` over HTTP.
struct ServeListen {
    child: tokio::process::Child,
}

impl ServeListen {
    /// Starts `runner` with `args` and reads the URL it prints on its first line (10 s at most).
    async fn start(runner: &Path, args: &[String]) -> Result<(ServeListen, String), String> {
        use tokio::io::AsyncBufReadExt as _;
        let inherit = std::env::var_os("MCP_CONFORMANCE_SERVER_STDERR").is_some();
        let mut child = tokio::process::Command::new(runner)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(if inherit { std::process::Stdio::inherit() } else { std::process::Stdio::null() })
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {} serve --listen: {e}", runner.display()))?;
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        let mut reader = tokio::io::BufReader::new(stdout);
        match tokio::time::timeout(Duration::from_secs(10), reader.read_line(&mut line)).await {
            Ok(Ok(n)) if n > 0 && line.trim().starts_with("http") => {
                Ok((ServeListen { child }, line.trim().to_owned()))
            }
            Ok(Ok(_)) => Err(format!("serve --listen printed no URL: {:?}", line.trim())),
            Ok(Err(e)) => Err(format!("reading the URL of serve --listen: {e}")),
            Err(_) => Err("serve --listen printed no URL within 10 s".into()),
        }
    }

    /// Stops it as Ctrl-C does (SIGINT: its sessions end and report what is left), killing it
    /// if it has not exited within 10 s.
    async fn stop(mut self) -> Result<(), String> {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) has no memory effects; the child is ours and not yet reaped.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGINT);
            }
        }
        match tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(format!("serve --listen exited with {status}")),
            Ok(Err(e)) => Err(format!("waiting for serve --listen: {e}")),
            Err(_) => {
                let _ = self.child.kill().await;
                Err("serve --listen did not stop within 10 s of SIGINT".into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patience_grows_with_the_recorded_gap() {
        let options = ReplayOptions { timeout: Duration::from_millis(1000), ..ReplayOptions::default() };
        assert_eq!(options.patience(0), Duration::from_millis(1000));
        assert_eq!(options.patience(5000), Duration::from_millis(11_000));
        assert_eq!(ReplayOptions { gap_factor: 0, ..options }.patience(5000), Duration::from_millis(1000));
        assert_eq!(options.patience(u64::MAX), Duration::from_secs(1 + 2 * 86_400), "a gap counts up to a day");
    }

    #[test]
    fn commands_split_like_a_shell() {
        assert_eq!(split_command("node  'a b' \"c \\\" d\" e"), ["node", "a b", "c \" d", "e"]);
        assert_eq!(split_command(""), Vec::<String>::new());
    }
}
