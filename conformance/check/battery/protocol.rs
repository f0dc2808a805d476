//! The battery's protocol checks: a malformed line and a response to nothing over stdio,
//! cancellation, a response to nothing over HTTP, resumption, what a server does before
//! `initialize` and with a version it does not know, and the notifications it sent unasked.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::super::wire::{excerpt, Reply, Unsolicited, Wire};
use super::super::Era;
use super::{client_info, connect, http_wire, Run, UNKNOWN_VERSION};

impl Run<'_> {
    /// stdio: a malformed line, then a response to nothing; the server must carry on.
    pub(super) async fn parse_error(&mut self, wire: &mut Wire) {
        let Wire::Stdio(w) = wire else { return };
        let garbage = "{\"jsonrpc\": \"2.0\", \"id\": \"mcp-conformance-broken\", \"method\": \n";
        if let Err(e) = w.send_raw(garbage.as_bytes()).await {
            self.fail("errors.parse-error", None, Some(e), "the server stopped reading");
            return;
        }
        let answer = w.wait_for(&Value::Null, Instant::now() + self.timeout().min(Duration::from_secs(2))).await;
        let sent = json!(garbage.trim_end());
        match &answer {
            Reply::Message(m) if m.pointer("/error/code") == Some(&json!(-32700)) => self.pass("errors.parse-error"),
            other => self.fail(
                "errors.parse-error",
                Some(&sent),
                Some(other.describe()),
                "malformed JSON should get error -32700 with a null id",
            ),
        }
        // A response to a request never made.
        let stray = json!({"jsonrpc": "2.0", "id": "mcp-conformance-unasked", "result": {}});
        if w.send(&stray).await.is_ok() {
            self.pass("jsonrpc.response-to-nothing");
        }
        // Still there?
        let ping =
            if self.modern() { self.message("server/discover", json!({})) } else { self.message("ping", json!({})) };
        let answer = w.request(&ping, self.timeout()).await;
        if answer.result().is_none() {
            self.fail(
                "errors.parse-error",
                Some(&ping),
                Some(answer.describe()),
                "after a malformed line the server must carry on answering",
            );
        }
    }

    /// `--slow-tool`: call it, cancel it, and see that no answer comes. Over stdio the
    /// cancellation follows the call on the same pipe; over HTTP (handshake era) it is POSTed
    /// once the call's response stream has begun, so the server has the call when it comes.
    pub(super) async fn cancellation(&mut self, wire: &mut Wire) {
        let id = "cancellation.no-response";
        let Some((name, arguments)) = self.options.slow_tool.clone() else {
            self.skip(id, "no --slow-tool given");
            return;
        };
        if self.http && self.modern() {
            self.skip(
                id,
                "at 2026-07-28 over HTTP, closing the response stream is the cancellation (no \
                 notifications/cancelled): nothing to observe",
            );
            return;
        }
        let call = self.message("tools/call", json!({"name": name, "arguments": arguments}));
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": self.with_meta(json!({"requestId": call["id"], "reason": "mcp-conformance cancels"}))});
        let deadline = Instant::now() + self.timeout();
        let http = http_wire(wire).cloned();
        let reply = match (wire, http) {
            (Wire::Stdio(w), _) => {
                if let (Ok(()), Ok(())) = (w.send(&call).await, w.send(&cancel).await) {
                    w.wait_for(&call["id"], deadline).await
                } else {
                    return;
                }
            }
            (Wire::Sse(w), _) => {
                // The call is accepted (202) before the cancellation is POSTed: in order.
                if let (Ok(_), Ok(_)) = (w.send(&call).await, w.send(&cancel).await) {
                    w.wait_for(&call["id"], deadline).await
                } else {
                    return;
                }
            }
            (wire @ Wire::Http(..), Some(w)) => {
                let (head_tx, head_rx) = tokio::sync::oneshot::channel();
                let body = call.to_string();
                let call_id = call["id"].clone();
                let task = tokio::spawn(async move {
                    w.exchange_telling_head("POST", Some(body.as_bytes()), &[], Some(&call_id), deadline, Some(head_tx))
                        .await
                });
                if !matches!(tokio::time::timeout_at(deadline, head_rx).await, Ok(Ok(()))) {
                    task.abort();
                    self.skip(id, "the call's response did not begin within the timeout: no cancellation sent");
                    return;
                }
                let _ = wire.notify(&cancel, self.timeout()).await;
                let Ok(x) = task.await else { return };
                let sse = x.seen.headers.get("content-type").is_some_and(|c| c.starts_with("text/event-stream"));
                let answer = x.messages.iter().find(|m| m.get("id") == Some(&call["id"]) && m.get("method").is_none());
                match answer {
                    Some(_) if !sse => {
                        self.skip(
                            id,
                            "the server answered the call whole, in JSON, before a cancellation could follow",
                        );
                        return;
                    }
                    Some(m) => Reply::Message(m.clone()),
                    None if x.error.as_deref() == Some("timed out") => Reply::Timeout,
                    None => Reply::Closed(format!("http {}: the stream ended with no answer", x.seen.status)),
                }
            }
            _ => return,
        };
        match reply {
            Reply::Message(m) => {
                self.fail(id, Some(&call), Some(excerpt(&m.to_string())), "the request was cancelled, yet answered")
            }
            Reply::Timeout => self.pass(id),
            Reply::Closed(_) if self.http => self.pass(id),
            Reply::Closed(why) => self.fail(id, Some(&call), Some(why), "the server went away"),
        }
    }

    /// Over HTTP in the handshake era, a response to no request POSTed: accepted (202, no
    /// body) or refused with an error status, never answered.
    pub(super) async fn response_to_nothing_over_http(&mut self, wire: &mut Wire) {
        let id = "jsonrpc.response-to-nothing";
        if self.modern() {
            self.skip(
                id,
                "at 2026-07-28 clients send no responses over HTTP (\"The client MUST NOT send JSON-RPC responses\")",
            );
            return;
        }
        let timeout = self.timeout();
        let stray = json!({"jsonrpc": "2.0", "id": "mcp-conformance-unasked", "result": {}});
        if let Wire::Sse(w) = wire {
            // An answer would come on the stream: the unsolicited checks see it.
            match w.send(&stray).await {
                Ok(_) => self.pass(id),
                Err(e) => self.fail(
                    id,
                    Some(&stray),
                    Some(e),
                    "a response POSTed must be accepted or refused, not break the session",
                ),
            }
            return;
        }
        let Some(w) = http_wire(wire) else { return };
        let x = w.exchange("POST", Some(stray.to_string().as_bytes()), &[], None, Instant::now() + timeout).await;
        let answered = x.messages.iter().find(|m| m.get("id") == stray.get("id"));
        let status = x.seen.status;
        match answered {
            None if status == 202 || (400..500).contains(&status) => self.pass(id),
            None => self.fail(
                id,
                Some(&stray),
                Some(format!("http {status} {}", x.error.unwrap_or_default())),
                "a response POSTed must get 202 Accepted with no body, or an HTTP error status",
            ),
            Some(m) => self.fail(
                id,
                Some(&stray),
                Some(format!("http {status}: {}", excerpt(&m.to_string()))),
                "our response to no request was answered",
            ),
        }
    }

    /// When a request's SSE stream carries event ids, a GET with `Last-Event-ID` set to an id
    /// before the response replays the response.
    pub(super) async fn resume(&mut self, wire: &mut Wire) {
        let id = "http.resume";
        if self.modern() {
            return;
        }
        let timeout = self.timeout();
        let ping = self.message("ping", json!({}));
        let Some(w) = http_wire(wire) else { return };
        let w = w.clone();
        let x =
            w.exchange("POST", Some(ping.to_string().as_bytes()), &[], ping.get("id"), Instant::now() + timeout).await;
        if x.event_ids.is_empty() {
            self.skip(id, "the server gives no SSE event ids (JSON answers, or events without ids): nothing to resume");
            return;
        }
        let Some((last, _)) = x.event_ids.iter().take_while(|(_, response)| !response).last() else {
            self.skip(id, "the first event id came with the response itself: nothing after it to replay");
            return;
        };
        let headers = [("accept", Some("text/event-stream".to_owned())), ("last-event-id", Some(last.clone()))];
        let resumed = w
            .exchange("GET", None, &headers, ping.get("id"), Instant::now() + timeout.min(Duration::from_secs(3)))
            .await;
        let replayed = resumed.messages.iter().any(|m| m.get("id") == ping.get("id") && m.get("method").is_none());
        if replayed {
            self.pass(id);
        } else {
            self.fail(
                id,
                Some(&json!({"method": "GET", "last-event-id": last})),
                Some(format!(
                    "http {}: {} message(s), none the response to ping {}",
                    resumed.seen.status,
                    resumed.messages.len(),
                    resumed.error.map(|e| format!("({e})")).unwrap_or_default()
                )),
                "the server gave event ids; resuming after one before the response should replay the response",
            );
        }
    }

    /// A fresh connection whose first message is `tools/list`, no `initialize` before it: a
    /// server of the handshake era refuses it (an error, an HTTP error status, or the connection
    /// closed), and never answers it with a result.
    pub(super) async fn before_initialize(&mut self) {
        let id = "lifecycle.before-initialize";
        let Ok(mut wire) = connect(&self.options.target, None, self.timeout()).await else { return };
        let list = self.message("tools/list", json!({}));
        let answer = wire.request(&list, self.timeout()).await;
        match (&answer.reply, &answer.http) {
            (Reply::Message(m), _) if m.get("error").is_some() => self.pass(id),
            (Reply::Message(m), _) => self.fail(
                id,
                Some(&list),
                Some(excerpt(&m.to_string())),
                "tools/list was served before initialize: the initialization phase must come first",
            ),
            (Reply::Closed(_), Some(h)) if h.status >= 400 => self.pass(id),
            (Reply::Closed(_), None) => self.pass(id),
            (other, _) => self.fail(
                id,
                Some(&list),
                Some(other.describe()),
                "a request before initialize must be refused with an error (every request is answered)",
            ),
        }
        if let (Some(w), Some(h)) = (http_wire(&mut wire), &answer.http) {
            if let Some(session) = h.headers.get("mcp-session-id") {
                w.session = Some(session.clone());
                let _ = w.exchange("DELETE", None, &[], None, Instant::now() + self.options.timeout).await;
            }
        }
        wire.close().await;
    }

    /// A second connection offering an unknown version.
    pub(super) async fn unknown_version(&mut self) {
        let target = &self.options.target;
        let Ok(mut wire) = connect(target, None, self.timeout()).await else { return };
        let init = self.message(
            "initialize",
            json!({"protocolVersion": UNKNOWN_VERSION, "capabilities": {}, "clientInfo": client_info()}),
        );
        let answer = wire.request(&init, self.timeout()).await;
        let version =
            answer.reply.result().and_then(|r| r.get("protocolVersion")).and_then(Value::as_str).map(str::to_owned);
        match version {
            Some(v) if v != UNKNOWN_VERSION && Era::parse(&v).is_some() => self.pass("lifecycle.unknown-version"),
            Some(v) => self.fail(
                "lifecycle.unknown-version",
                Some(&init),
                Some(answer.reply.describe()),
                format!(
                    "the server answered {v}, which it cannot support: it must answer with another version it supports"
                ),
            ),
            None => self.fail(
                "lifecycle.unknown-version",
                Some(&init),
                Some(answer.reply.describe()),
                "the server must respond with another protocol version it supports (its latest), not refuse",
            ),
        }
        if let (Some(w), Some(h)) = (http_wire(&mut wire), &answer.http) {
            if let Some(session) = h.headers.get("mcp-session-id") {
                w.session = Some(session.clone());
                let _ = w.exchange("DELETE", None, &[], None, Instant::now() + self.options.timeout).await;
            }
        }
        wire.close().await;
    }

    pub(super) fn unsolicited_checks(&mut self, seen: Unsolicited) {
        let to_notifications: Vec<&Value> =
            seen.stray_responses.iter().filter(|r| r.get("id").is_none_or(Value::is_null)).collect();
        if let Some(first) = to_notifications.first() {
            self.fail(
                "jsonrpc.notifications-unanswered",
                None,
                Some(excerpt(&first.to_string())),
                format!(
                    "{} response(s) without an id came: notifications must not be answered",
                    to_notifications.len()
                ),
            );
        }
        self.pass("jsonrpc.notifications-unanswered");
        let to_stray: Vec<&Value> =
            seen.stray_responses.iter().filter(|r| r.get("id") == Some(&json!("mcp-conformance-unasked"))).collect();
        if let Some(first) = to_stray.first() {
            self.findings.remove("jsonrpc.response-to-nothing");
            self.fail(
                "jsonrpc.response-to-nothing",
                Some(&json!({"jsonrpc": "2.0", "id": "mcp-conformance-unasked", "result": {}})),
                Some(excerpt(&first.to_string())),
                "our response to no request was answered",
            );
        }
        let unknown: Vec<&Value> = seen
            .stray_responses
            .iter()
            .filter(|r| {
                r.get("id").is_some_and(|id| {
                    !id.is_null() && *id != json!("mcp-conformance-unasked") && !self.sent_ids.contains(&id.to_string())
                })
            })
            .collect();
        match unknown.first() {
            Some(first) => self.fail(
                "jsonrpc.response-ids",
                None,
                Some(excerpt(&first.to_string())),
                format!("{} response(s) with ids we never sent", unknown.len()),
            ),
            None => self.pass("jsonrpc.response-ids"),
        }
        if !self.http {
            match seen.garbage.first() {
                Some(first) => self.fail(
                    "stdio.stdout-messages-only",
                    None,
                    Some(first.clone()),
                    format!("{} line(s) on stdout were not JSON-RPC messages", seen.garbage.len()),
                ),
                None => self.pass("stdio.stdout-messages-only"),
            }
        }
        if seen.notification_count > 0 {
            self.notes.push(format!("{} notification(s) from the server", seen.notification_count));
        }
    }
}
