//! Becoming the recorded server: a mock any client can be developed against.
//!
//! The recording is followed as a script. Each client request is answered with the recorded
//! response of the recorded request it matches — same method, params equal under the rules of
//! `matching` (ids are the client's own and are remapped) — and the server's notifications and
//! requests are sent at the points where they were recorded: right after the client message
//! they followed. A request that matches a recorded request further on (or one already
//! answered) is answered at once with that recorded response; a request whose params match no
//! recorded request of its method is answered with the first unanswered one of that method (the
//! difference is logged); a request of a method never recorded gets error -32601.
//!
//! Every departure from the script is also reported as a [`Failure`] through [`Event`]: a
//! request that matches no recorded one, a request whose params differ, an answer to one of
//! our requests that differs from the recorded answer, and at the end the client messages that
//! matched nothing. [`Event::Matched`] names each recorded client message that was matched, so
//! a runner can tell which recorded messages the client never sent (even when this process is
//! stopped before the end).
//!
//! Over HTTP, a recorded server message that came on the POST stream of a request still in
//! flight is sent with [`Transport::send_related`] to that request's live id, so it travels on
//! that request's stream again (in stateless mode there is no other); one answered out of the
//! script's order takes its recorded notifications with it (progress, logs).
//!
//! Two kinds of recorded HTTP exchange are not scripted as they were sent. A request the
//! recorded server refused at the HTTP level before any session saw it (a 4xx answered without
//! the request's id, or with no message at all: bad headers, an unknown session, a request after
//! DELETE) is left out with its answer, since an HTTP server (ours too) rejects such a request
//! itself — [`rejected_at_http_level`] lists them. A JSON-RPC batch is scripted as its messages,
//! in order, which is how an HTTP server hands a batch to its session.
//!
//! Not here: timing (messages go out as soon as their turn comes) and the HTTP exchanges
//! themselves.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::matching::{kind_of, plain_difference, would_match, Kind, Matcher};
use super::replay::Failure;
use mcpwire::proto::jsonrpc::Message;
use mcpwire::recording::{Dir, Recording};
use mcpwire::transport::{Transport, TransportError};

struct Entry {
    seq: u64,
    dir: Dir,
    msg: Value,
    raw: String,
    /// The HTTP method of the exchange that carried it, on HTTP recordings.
    http_method: Option<String>,
}

/// What [`serve_recording`] tells its caller as it goes.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// Something worth a line in a log that is not a departure from the script.
    Note(&'a str),
    /// The client departed from the recording.
    Failure(Failure),
    /// The recorded client message with this `seq` was matched by a live one.
    Matched(u64),
}

/// Serves `recording` over `transport` until the client goes away, telling `events` about
/// every departure from the script and every recorded client message matched.
///
/// # Errors
/// When the transport fails.
pub async fn serve_recording<T: Transport>(
    recording: &Recording,
    transport: &T,
    matcher: &Matcher,
    events: &(dyn Fn(Event<'_>) + Sync),
) -> Result<(), TransportError> {
    let log = &|line: &str| events(Event::Note(line));
    let fail = |seq: u64, what: String, detail: String| {
        events(Event::Failure(Failure { seq, dir: Dir::ClientToServer, what, detail }))
    };
    let rejected = rejected_at_http_level(recording);
    let mut entries: Vec<Entry> = Vec::new();
    for e in recording.entries.iter().filter(|e| !rejected.contains(&e.seq)) {
        let Some(raw) = &e.msg else { continue };
        let Ok(msg) = serde_json::from_str::<Value>(raw.get()) else { continue };
        let http_method = e.http.as_ref().and_then(|h| h.get("method")).and_then(Value::as_str).map(str::to_owned);
        match msg {
            // A batch: its messages one by one, each with the batch's seq.
            Value::Array(batch) => entries.extend(batch.into_iter().map(|msg| Entry {
                seq: e.seq,
                dir: e.dir,
                raw: msg.to_string(),
                msg,
                http_method: http_method.clone(),
            })),
            msg => entries.push(Entry { seq: e.seq, dir: e.dir, msg, raw: raw.get().to_owned(), http_method }),
        }
    }
    let mut consumed = vec![false; entries.len()];
    let mut cursor = 0;
    let mut pool: Vec<Value> = Vec::new();
    // Recorded id of a client request -> the live id.
    let mut live_ids: HashMap<String, Value> = HashMap::new();
    loop {
        // Go through the script as far as the client's messages allow.
        while cursor < entries.len() {
            if consumed[cursor] {
                cursor += 1;
                continue;
            }
            let entry = &entries[cursor];
            match entry.dir {
                Dir::ServerToClient => {
                    let mut id = None;
                    let mut related = None;
                    if kind_of(&entry.msg) == Kind::Response {
                        let recorded = id_key(&entry.msg);
                        match live_ids.get(&recorded) {
                            Some(live) => id = Some(live.clone()),
                            None => log(&format!("seq {}: response to request {recorded} that never came", entry.seq)),
                        }
                    } else if let Some(r) = related_request(&entries, cursor) {
                        related = live_ids.get(&id_key(&entries[r].msg));
                    }
                    send_recorded(transport, matcher, &entry.raw, id.as_ref(), related, log).await?;
                    consumed[cursor] = true;
                    cursor += 1;
                }
                Dir::ClientToServer => {
                    let Some(i) = pool.iter().position(|live| matches_exactly(matcher, &entry.msg, live)) else {
                        break;
                    };
                    let live = pool.remove(i);
                    match kind_of(&entry.msg) {
                        Kind::Request => {
                            live_ids.insert(id_key(&entry.msg), live.get("id").cloned().unwrap_or(Value::Null));
                        }
                        Kind::Response => {
                            // An answer to one of our requests: is it the recorded answer?
                            let method = request_method(&entries[..cursor], &entry.msg);
                            if !would_match(matcher, &method, &entry.msg, &live) {
                                let expected = matcher.substitute(&entry.msg);
                                let detail = match (expected.get("result"), live.get("error")) {
                                    (Some(_), Some(error)) => format!("$: expected a result, got error {error}"),
                                    _ => plain_difference(&expected, &live).map(|d| d.to_string()).unwrap_or_default(),
                                };
                                fail(entry.seq, format!("{method} response"), detail);
                            }
                        }
                        Kind::Notification => {}
                    }
                    events(Event::Matched(entry.seq));
                    consumed[cursor] = true;
                    cursor += 1;
                }
            }
        }
        let Some(message) = transport.recv().await? else {
            // The client is gone: what it sent that fits nothing is a difference.
            for live in pool {
                let later = (0..entries.len()).find(|&j| {
                    !consumed[j]
                        && entries[j].dir == Dir::ClientToServer
                        && matches_exactly(matcher, &entries[j].msg, &live)
                });
                match later {
                    Some(j) => {
                        consumed[j] = true;
                        events(Event::Matched(entries[j].seq));
                    }
                    None => {
                        let method = live.get("method").and_then(Value::as_str).unwrap_or("(response)").to_owned();
                        let what = match kind_of(&live) {
                            Kind::Notification => format!("{method} notification"),
                            _ => format!("{method} response"),
                        };
                        fail(
                            0,
                            what,
                            format!("$: matches no recorded message: {}", super::replay::abbreviate(&live.to_string())),
                        );
                    }
                }
            }
            return Ok(());
        };
        let live: Value = serde_json::from_slice(&message.to_vec()).unwrap_or(Value::Null);
        if cursor < entries.len()
            && entries[cursor].dir == Dir::ClientToServer
            && matches_exactly(matcher, &entries[cursor].msg, &live)
        {
            pool.push(live);
            continue;
        }
        if kind_of(&live) != Kind::Request {
            // A notification or an answer for later in the script (or never): keep it.
            pool.push(live);
            continue;
        }
        let method = live.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
        let is_request_of = |e: &Entry| {
            e.dir == Dir::ClientToServer
                && kind_of(&e.msg) == Kind::Request
                && e.msg.get("method").and_then(Value::as_str) == Some(&method)
        };
        // The cursor's request with other params, a later request, then one answered before.
        let later = (cursor..entries.len()).find(|&j| !consumed[j] && is_request_of(&entries[j]));
        let exact_later = (cursor..entries.len())
            .find(|&j| !consumed[j] && is_request_of(&entries[j]) && matches_exactly(matcher, &entries[j].msg, &live));
        let exact_any = (0..entries.len())
            .find(|&j| is_request_of(&entries[j]) && matches_exactly(matcher, &entries[j].msg, &live));
        let Some(j) = exact_later.or(exact_any).or(later) else {
            log(&format!("no recorded {method} request: answering -32601"));
            fail(
                0,
                format!("{method} request"),
                format!("matches no recorded request: {}", super::replay::abbreviate(&live.to_string())),
            );
            let id = live.get("id").cloned().unwrap_or(Value::Null);
            let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                "message": format!("mcp-conformance serve: no recorded {method} request")}});
            send(transport, &error).await?;
            continue;
        };
        if exact_later.is_none() && exact_any.is_none() {
            let expected = matcher.substitute(&params_of(&entries[j].msg));
            let d =
                super::diff::first_difference(&expected, &params_of(&live)).map(|d| d.to_string()).unwrap_or_default();
            log(&format!("{method}: no recorded request has these params; answering as seq {} ({d})", entries[j].seq));
            fail(entries[j].seq, format!("{method} request"), format!("$.params{}", d.strip_prefix('$').unwrap_or(&d)));
        } else if exact_later.is_none() && consumed[j] {
            fail(entries[j].seq, format!("{method} request"), "sent again, though recorded once".into());
        }
        events(Event::Matched(entries[j].seq));
        if j == cursor {
            // The request the script waits for, with other params: take it as that one.
            live_ids.insert(id_key(&entries[j].msg), live.get("id").cloned().unwrap_or(Value::Null));
            consumed[j] = true;
            continue;
        }
        // Out of the script's order: answer at once with the recorded response.
        let recorded_id = entries[j].msg.get("id").cloned();
        let response = (j + 1..entries.len()).find(|&k| {
            entries[k].dir == Dir::ServerToClient
                && kind_of(&entries[k].msg) == Kind::Response
                && entries[k].msg.get("id") == recorded_id.as_ref()
        });
        let Some(k) = response else {
            log(&format!("seq {}: recorded without a response; not answering", entries[j].seq));
            consumed[j] = true;
            continue;
        };
        for n in j + 1..k {
            let related = entries[n].dir == Dir::ServerToClient
                && kind_of(&entries[n].msg) == Kind::Notification
                && related_request(&entries, n) == Some(j);
            if related && !consumed[n] {
                send_recorded(transport, matcher, &entries[n].raw, None, live.get("id"), log).await?;
                consumed[n] = true;
            }
        }
        send_recorded(transport, matcher, &entries[k].raw, live.get("id"), None, log).await?;
        consumed[j] = true;
        consumed[k] = true;
    }
}

/// The `seq`s of the HTTP exchanges the recorded server refused at the HTTP level, before any
/// session saw the request: a client message answered with a 4xx whose message does not carry
/// its id (server-everything's `-32000` errors with `id: null` or none) or with no message, and
/// that answer. Such a request can only be made by hand (bad headers, an unknown session, a
/// request after DELETE); a 4xx carrying the request's id is a session's answer and stays.
pub fn rejected_at_http_level(recording: &Recording) -> BTreeSet<u64> {
    let http = |e: &mcpwire::recording::Entry, key: &str| e.http.as_ref().and_then(|h| h.get(key)).cloned();
    let status = |e: &mcpwire::recording::Entry| http(e, "status").and_then(|s| s.as_u64()).unwrap_or(0);
    let mut rejected = BTreeSet::new();
    for (i, request) in recording.entries.iter().enumerate() {
        if request.dir != Dir::ClientToServer || status(request) < 400 {
            continue;
        }
        let same_exchange = |e: &&mcpwire::recording::Entry| {
            e.dir == Dir::ServerToClient
                && e.msg.is_some()
                && http(e, "method") == http(request, "method")
                && http(e, "path") == http(request, "path")
                && status(e) == status(request)
        };
        let answer = recording.entries[i + 1..].iter().find(same_exchange);
        let id_of = |raw: &serde_json::value::RawValue| {
            serde_json::from_str::<Value>(raw.get()).ok().and_then(|m| m.get("id").cloned()).filter(|id| !id.is_null())
        };
        let request_id = request.msg.as_deref().and_then(id_of);
        let answer_id = answer.and_then(|a| a.msg.as_deref()).and_then(id_of);
        if answer_id.is_none() || answer_id != request_id {
            rejected.insert(request.seq);
            rejected.extend(answer.map(|a| a.seq));
        }
    }
    rejected
}

/// The recorded client request that the server message `entries[at]` (a request or
/// notification) relates to: on HTTP, one whose POST stream carried it, i.e. a request POSTed
/// before it and answered after it — the one whose progress token it carries, else the latest.
/// `None` for a message on the GET stream, and for one sent while no request was in flight.
fn related_request(entries: &[Entry], at: usize) -> Option<usize> {
    let entry = &entries[at];
    if entry.http_method.as_deref() != Some("POST") {
        return None;
    }
    let token = entry.msg.pointer("/params/progressToken");
    let in_flight = (0..at).rev().filter(|&i| {
        let request = &entries[i];
        request.dir == Dir::ClientToServer
            && kind_of(&request.msg) == Kind::Request
            && request.http_method.as_deref() == Some("POST")
            && !entries[i + 1..at].iter().any(|e| {
                e.dir == Dir::ServerToClient
                    && kind_of(&e.msg) == Kind::Response
                    && e.msg.get("id") == request.msg.get("id")
            })
    });
    let mut latest = None;
    for i in in_flight {
        if token.is_some() && entries[i].msg.pointer("/params/_meta/progressToken") == token {
            return Some(i);
        }
        latest.get_or_insert(i);
    }
    latest
}

/// The method of the server request that `answer` (a recorded client response) answers.
fn request_method(before: &[Entry], answer: &Value) -> String {
    before
        .iter()
        .rev()
        .find(|e| {
            e.dir == Dir::ServerToClient && kind_of(&e.msg) == Kind::Request && e.msg.get("id") == answer.get("id")
        })
        .and_then(|e| e.msg.get("method").and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned()
}

/// A request's params, absent params being `{}`: both mean "no params" (JSON-RPC 2.0 §4.2; MCP
/// params objects have only optional members when a request takes none), and SDKs differ in
/// which they send.
fn params_of(request: &Value) -> Value {
    match request.get("params") {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(p) => p.clone(),
    }
}

fn id_key(msg: &Value) -> String {
    msg.get("id").map(Value::to_string).unwrap_or_default()
}

/// Whether a live client message is the recorded one: same kind and method; a request's params
/// equal under the rules; an answer to our request by id; notifications by method.
fn matches_exactly(matcher: &Matcher, recorded: &Value, live: &Value) -> bool {
    let kind = kind_of(recorded);
    if kind != kind_of(live) {
        return false;
    }
    let method = recorded.get("method").and_then(Value::as_str).unwrap_or_default();
    match kind {
        Kind::Response => recorded.get("id") == live.get("id"),
        Kind::Notification => live.get("method").and_then(Value::as_str) == Some(method),
        Kind::Request => {
            live.get("method").and_then(Value::as_str) == Some(method) && {
                would_match(matcher, method, &params_of(recorded), &params_of(live))
            }
        }
    }
}

async fn send<T: Transport>(transport: &T, msg: &Value) -> Result<(), TransportError> {
    match Message::from_str(&msg.to_string()) {
        Ok(m) => transport.send(m).await,
        Err(_) => Ok(()),
    }
}

/// Sends a recorded message as the recording has it (key order kept), with `id` replaced;
/// with `related` (a live request id), on that request's stream.
async fn send_recorded<T: Transport>(
    transport: &T,
    matcher: &Matcher,
    raw: &str,
    id: Option<&Value>,
    related: Option<&Value>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), TransportError> {
    let related = related.and_then(|r| serde_json::from_value::<mcpwire::proto::jsonrpc::Id>(r.clone()).ok());
    match super::replay::outgoing(raw, matcher, id) {
        Ok(m) => match related {
            Some(request) => transport.send_related(m, &request).await,
            None => transport.send(m).await,
        },
        Err(e) => {
            log(&format!("cannot send a recorded message: {e}"));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(name: &str) -> Recording {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("recordings/{name}.jsonl"));
        Recording::read(&path).expect("a stored recording")
    }

    #[test]
    fn only_exchanges_refused_before_a_session_are_rejected_at_http_level() {
        // No session (1-2), a bogus session id (3-4), Accept (5-6), Content-Type (7-8), the GET's
        // Accept (13-14), Mcp-Protocol-Version (19-20), after DELETE (25-26).
        let errors: Vec<u64> = rejected_at_http_level(&recording("everything-http-errors")).into_iter().collect();
        assert_eq!(errors, [1, 2, 3, 4, 5, 6, 7, 8, 13, 14, 19, 20, 25, 26]);
        // HTTP 400 answers carrying the request's id came from the session: they stay.
        assert!(rejected_at_http_level(&recording("pyfixture-http-python-2026-07-28")).is_empty());
        assert!(rejected_at_http_level(&recording("everything-tools")).is_empty());
    }
}
