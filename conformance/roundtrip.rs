//! `mcp-conformance roundtrip`: every recorded message, decoded into this crate's types and
//! encoded again, must give back the JSON that was on the wire.
//!
//! Each message is checked twice. The envelope: [`jsonrpc::Message`](mcpwire::proto::jsonrpc::Message) decoded and re-encoded
//! must equal the original as a JSON value. The payload: requests and notifications are
//! classified by method, responses by the method of the request they answer (matched by id in
//! the opposite direction, since ids are per direction); the params or result is decoded into
//! the typed struct of that method and re-encoded. Unknown methods are checked at the envelope
//! level only and counted as untyped.
//!
//! Two rules decide what is not a failure, and only these two. An error response whose id is
//! `null` re-encodes without the `id` member (the MCP schema's form); both mean "the request id
//! could not be read". And a request whose params do not fit the method's type (a recording may
//! provoke errors on purpose, e.g. `resources/read` without `uri`) passes only if the peer
//! answered it with an error: our types reject what the peer rejected. Answered with a result,
//! it fails.

use std::collections::HashMap;
use std::fmt;

use serde_json::value::RawValue;
use serde_json::Value;

use super::diff::{first_difference, Difference};
use mcpwire::proto::jsonrpc::{Body, Id, Message};
use mcpwire::proto::mcp_types::{find_method, round_trip_result, MethodInfo};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::recording::{Dir, Recording};

/// Why one message failed its round trip.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The message could not be decoded at all.
    Decode(String),
    /// The message was decoded but encodes to different JSON.
    Differs(Difference),
    /// A method travelled in a direction the protocol does not allow.
    WrongDirection,
    /// A response whose id matches no request seen in the opposite direction.
    UnmatchedResponse,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Decode(e) => write!(f, "does not decode: {e}"),
            Failure::Differs(d) => write!(f, "{d}"),
            Failure::WrongDirection => f.write_str("this method does not travel in this direction"),
            Failure::UnmatchedResponse => f.write_str("answers no request seen in the other direction"),
        }
    }
}

/// The result of checking one message.
#[derive(Debug, Clone)]
pub struct MessageCheck {
    /// The entry's `seq`.
    pub seq: u64,
    /// Which way it went.
    pub dir: Dir,
    /// What it was classified as, e.g. `tools/call result`, `notifications/progress`.
    pub label: String,
    /// Whether its payload was checked against a typed struct (false for unknown methods and
    /// error responses, which are checked as envelopes).
    pub typed: bool,
    /// The first failure, if any.
    pub failure: Option<Failure>,
}

/// The result of checking one recording.
#[derive(Debug, Clone)]
pub struct FileCheck {
    /// The file's name.
    pub name: String,
    /// One entry per JSON-RPC message (a batch counts each of its messages).
    pub messages: Vec<MessageCheck>,
}

impl FileCheck {
    /// How many messages failed.
    pub fn failed(&self) -> usize {
        self.messages.iter().filter(|m| m.failure.is_some()).count()
    }

    /// How many messages passed.
    pub fn passed(&self) -> usize {
        self.messages.len() - self.failed()
    }
}

/// A request waiting for its response.
struct Waiting {
    method: Option<&'static MethodInfo>,
    /// Index in the file's checks of a request whose params did not decode: its verdict waits
    /// for the answer.
    invalid_params: Option<usize>,
}

/// Which requests are waiting for a response, per direction of the request.
#[derive(Default)]
struct Pending {
    requests: HashMap<(Dir, Id), Waiting>,
}

fn to_value(raw: &RawValue) -> Result<Value, Failure> {
    serde_json::from_str(raw.get()).map_err(|e| Failure::Decode(e.to_string()))
}

fn compare(expected: &RawValue, actual: Result<Value, serde_json::Error>) -> Result<(), Failure> {
    let actual = actual.map_err(|e| Failure::Decode(e.to_string()))?;
    match first_difference(&to_value(expected)?, &actual) {
        None => Ok(()),
        Some(d) => Err(Failure::Differs(d)),
    }
}

fn check_envelope(original: &RawValue, message: &Message) -> Result<(), Failure> {
    let mut expected = to_value(original)?;
    if let (Message::Error(e), Value::Object(members)) = (message, &mut expected) {
        if e.id.is_none() && members.get("id") == Some(&Value::Null) {
            members.remove("id");
        }
    }
    let actual = serde_json::to_value(message).map_err(|e| Failure::Decode(e.to_string()))?;
    match first_difference(&expected, &actual) {
        None => Ok(()),
        Some(d) => Err(Failure::Differs(d)),
    }
}

/// The revision a request claims in its own `_meta` (2026-07-28 requests carry one).
fn claimed_version(params: Option<&RawValue>) -> Option<ProtocolVersion> {
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
        version: Option<String>,
    }
    let params: Params = serde_json::from_str(params?.get()).ok()?;
    params.meta?.version?.parse().ok()
}

fn check_payload(
    message: &Message,
    dir: Dir,
    session: Option<ProtocolVersion>,
    pending: &mut Pending,
    index: usize,
) -> (String, bool, Result<(), Failure>) {
    let client_to_server = dir == Dir::ClientToServer;
    match message {
        Message::Request(r) => {
            let method = find_method(&r.method);
            let params = r.params.as_ref().and_then(Body::as_raw);
            let outcome = check_call(&r.method, method, params, client_to_server, session, "request");
            let invalid_params = matches!(outcome.2, Err(Failure::Decode(_))).then_some(index);
            pending.requests.insert((dir, r.id.clone()), Waiting { method, invalid_params });
            outcome
        }
        Message::Notification(n) => {
            let method = find_method(&n.method);
            let params = n.params.as_ref().and_then(Body::as_raw);
            check_call(&n.method, method, params, client_to_server, session, "notification")
        }
        Message::Response(r) => match pending.requests.remove(&(dir.reverse(), r.id.clone())) {
            None => ("response".to_owned(), false, Err(Failure::UnmatchedResponse)),
            Some(Waiting { method: None, .. }) => ("response to an unknown method".to_owned(), false, Ok(())),
            Some(Waiting { method: Some(info), .. }) => {
                let raw = r.result.as_raw().expect("decoded messages hold raw bodies");
                (format!("{} result", info.name), true, compare(raw, round_trip_result(info, raw)))
            }
        },
        Message::Error(e) => {
            let answered = e.id.as_ref().and_then(|id| pending.requests.remove(&(dir.reverse(), id.clone())));
            let label = match answered.as_ref().and_then(|w| w.method) {
                Some(info) => format!("{} error {}", info.name, e.error.code),
                None => format!("error {}", e.error.code),
            };
            (label, false, Ok(()))
        }
    }
}

/// Settles requests whose params did not decode: rejected by the peer is a pass.
fn settle_invalid_params(message: &Message, dir: Dir, pending: &Pending, checks: &mut [MessageCheck]) {
    let Message::Error(e) = message else { return };
    let Some(id) = &e.id else { return };
    // Looked up before check_payload removes the entry.
    if let Some(Waiting { invalid_params: Some(index), .. }) = pending.requests.get(&(dir.reverse(), id.clone())) {
        let request = &mut checks[*index];
        request.failure = None;
        request.label.push_str(" (invalid params, rejected by the peer)");
    }
}

fn check_call(
    method: &str,
    info: Option<&'static MethodInfo>,
    params: Option<&RawValue>,
    client_to_server: bool,
    session: Option<ProtocolVersion>,
    kind: &str,
) -> (String, bool, Result<(), Failure>) {
    let Some(info) = info else {
        return (format!("{method} (unknown method)"), false, Ok(()));
    };
    let version = claimed_version(params).or(session);
    let mut label = format!("{method} {kind}");
    if let Some(v) = version.filter(|v| !info.exists_in(*v)) {
        label.push_str(&format!(" (not in {v})"));
    }
    if !info.direction.allows(client_to_server) {
        return (label, true, Err(Failure::WrongDirection));
    }
    let outcome = match params {
        Some(p) => compare(p, (info.params)(p)),
        None => Ok(()),
    };
    (label, true, outcome)
}

/// Checks every message of `recording`.
pub fn check_recording(recording: &Recording) -> FileCheck {
    let session = recording.header.protocol_version.parse::<ProtocolVersion>().ok();
    let mut pending = Pending::default();
    let mut messages = Vec::new();
    for entry in &recording.entries {
        let Some(msg) = &entry.msg else { continue };
        let items: Vec<&RawValue> = if msg.get().starts_with('[') {
            match serde_json::from_str(msg.get()) {
                Ok(items) => items,
                Err(e) => {
                    messages.push(MessageCheck {
                        seq: entry.seq,
                        dir: entry.dir,
                        label: "batch".to_owned(),
                        typed: false,
                        failure: Some(Failure::Decode(e.to_string())),
                    });
                    continue;
                }
            }
        } else {
            vec![&**msg]
        };
        for item in items {
            let check = match Message::from_str(item.get()) {
                Err(e) => MessageCheck {
                    seq: entry.seq,
                    dir: entry.dir,
                    label: "message".to_owned(),
                    typed: false,
                    failure: Some(Failure::Decode(e.to_string())),
                },
                Ok(message) => {
                    let envelope = check_envelope(item, &message);
                    settle_invalid_params(&message, entry.dir, &pending, &mut messages);
                    let (label, typed, payload) =
                        check_payload(&message, entry.dir, session, &mut pending, messages.len());
                    MessageCheck { seq: entry.seq, dir: entry.dir, label, typed, failure: envelope.and(payload).err() }
                }
            };
            messages.push(check);
        }
    }
    let name = recording.path.file_name().map_or_else(|| recording.header.name.clone(), |n| n.to_string_lossy().into());
    FileCheck { name, messages }
}

/// Writes the report of `checks` the way the CLI prints it: one line per file, the first
/// difference of each failing message under it, and `N passed, N failed` (messages) last.
pub fn write_report(out: &mut impl fmt::Write, checks: &[FileCheck]) -> fmt::Result {
    let (mut passed, mut failed) = (0, 0);
    for check in checks {
        let typed = check.messages.iter().filter(|m| m.typed).count();
        if check.failed() == 0 {
            writeln!(out, "ok   {} ({} messages, {} typed)", check.name, check.messages.len(), typed)?;
        } else {
            writeln!(out, "FAIL {} ({} of {} messages failed)", check.name, check.failed(), check.messages.len())?;
            for m in check.messages.iter().filter(|m| m.failure.is_some()) {
                let failure = m.failure.as_ref().map(ToString::to_string).unwrap_or_default();
                writeln!(out, "  seq {} {} {}: {}", m.seq, m.dir.as_str(), m.label, failure)?;
            }
        }
        passed += check.passed();
        failed += check.failed();
    }
    writeln!(out, "{passed} passed, {failed} failed")
}
