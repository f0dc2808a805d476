//! The battery's Streamable HTTP checks: one probe per transport rule (methods, media types,
//! the session and protocol-version headers, the 2026-07-28 request headers), each with what a
//! conforming server answers; the session's `DELETE` last.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::super::wire::{excerpt, HttpWire, Wire};
use super::{http_wire, Run, UNKNOWN_VERSION};

impl Run<'_> {
    pub(super) async fn http_checks(&mut self, wire: &mut Wire) {
        let timeout = self.timeout();
        let modern = self.modern();
        let probe = if modern { self.message("server/discover", json!({})) } else { self.message("ping", json!({})) };
        let Some(w) = http_wire(wire) else { return };
        let w = w.clone();
        let meta: Vec<(&str, Option<String>)> = if modern {
            vec![("mcp-method", Some(probe["method"].as_str().unwrap_or_default().to_owned()))]
        } else {
            Vec::new()
        };
        let deadline = || Instant::now() + timeout;
        let with = |header: &'static str, value: &str| {
            let mut extra = meta.clone();
            extra.retain(|(k, _)| *k != header);
            extra.push((header, Some(value.to_owned())));
            extra
        };
        let status_is = |want: u16| move |status: u16, _: Option<i64>| status == want;
        let mismatch = |status: u16, code: Option<i64>| status == 400 && code == Some(-32020);
        let foreign = "http://mcp-conformance.invalid";
        let probes = [
            HttpProbe {
                id: "http.origin",
                sent: probe.clone(),
                headers: with("origin", foreign),
                ok: Box::new(status_is(403)),
                shown: format!("Origin: {foreign}"),
                why: "a foreign Origin must get 403 Forbidden (DNS rebinding)",
            },
            HttpProbe {
                id: "http.accept",
                sent: probe.clone(),
                headers: with("accept", "text/plain"),
                ok: Box::new(status_is(406)),
                shown: "Accept: text/plain".into(),
                why: "a client that accepts neither JSON nor SSE should get 406 Not Acceptable",
            },
            HttpProbe {
                id: "http.content-type",
                sent: probe.clone(),
                headers: with("content-type", "text/plain"),
                ok: Box::new(status_is(415)),
                shown: "Content-Type: text/plain".into(),
                why: "a body that is not application/json should get 415 Unsupported Media Type",
            },
        ];
        for p in probes {
            self.expect_http(&w, p, deadline()).await;
        }
        if w.is_local() {
            let rebound = "mcp-conformance.invalid";
            self.expect_http(
                &w,
                HttpProbe {
                    id: "http.host",
                    sent: probe.clone(),
                    headers: with("host", rebound),
                    ok: Box::new(|status: u16, _: Option<i64>| (400..500).contains(&status)),
                    shown: format!("Host: {rebound}"),
                    why: "a local server reached under a foreign name (a rebound DNS name) should refuse the request",
                },
                deadline(),
            )
            .await;
        } else {
            self.skip("http.host", "not a local server (its Host is the name it is reached by)");
        }
        if modern {
            // No tool of that name exists: a server that skips the header check answers
            // "unknown tool", and nothing is ever run.
            let call = self.message("tools/call", json!({"name": "mcp-conformance-no-such-tool", "arguments": {}}));
            let mut headers = meta_for(&call);
            headers.push(("mcp-name", Some("mcp-conformance-other-tool".into())));
            self.expect_http(
                &w,
                HttpProbe {
                    id: "http.name-mismatch",
                    sent: call,
                    headers,
                    ok: Box::new(mismatch),
                    shown: "Mcp-Name: mcp-conformance-other-tool".into(),
                    why: "Mcp-Name differs from the body's params.name: 400 with -32020 (HeaderMismatch) is required",
                },
                deadline(),
            )
            .await;
            let list = self.message("tools/list", json!({}));
            let mut headers = meta_for(&list);
            headers.push(("mcp-protocol-version", Some("2025-11-25".into())));
            self.expect_http(
                &w,
                HttpProbe {
                    id: "http.version-header-mismatch",
                    sent: list,
                    headers,
                    ok: Box::new(mismatch),
                    shown: "MCP-Protocol-Version: 2025-11-25, the body's _meta 2026-07-28".into(),
                    why: "the MCP-Protocol-Version header differs from the body's protocolVersion: 400 with -32020 \
                          (HeaderMismatch) is required",
                },
                deadline(),
            )
            .await;
        }
        // Malformed body.
        let broken = "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ";
        let x = w.exchange("POST", Some(broken.as_bytes()), &meta, None, deadline()).await;
        if (400..500).contains(&x.seen.status) {
            self.pass("http.malformed-body");
        } else {
            self.fail(
                "http.malformed-body",
                Some(&json!(broken)),
                Some(format!("http {}", x.seen.status)),
                "malformed JSON must get an HTTP error status (4xx)",
            );
        }
        if modern {
            let x = w
                .exchange(
                    "GET",
                    None,
                    &[("accept", Some("text/event-stream".into()))],
                    None,
                    Instant::now() + timeout.min(Duration::from_secs(3)),
                )
                .await;
            if x.seen.status == 405 {
                self.pass("http.get-405");
            } else {
                self.fail(
                    "http.get-405",
                    None,
                    Some(format!("http {} to GET", x.seen.status)),
                    "a server of 2026-07-28 only should answer GET with 405 Method Not Allowed",
                );
            }
            let list = self.message("tools/list", json!({}));
            self.expect_http(
                &w,
                HttpProbe {
                    id: "http.header-mismatch",
                    sent: list,
                    headers: vec![("mcp-method", Some("prompts/list".into()))],
                    ok: Box::new(mismatch),
                    shown: "Mcp-Method: prompts/list".into(),
                    why: "Mcp-Method differs from the body's method: 400 with -32020 (HeaderMismatch) is required",
                },
                deadline(),
            )
            .await;
            let mut odd = self
                .message("tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": UNKNOWN_VERSION}}));
            odd["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(UNKNOWN_VERSION);
            let x = w
                .exchange(
                    "POST",
                    Some(odd.to_string().as_bytes()),
                    &[
                        ("mcp-method", Some("tools/list".into())),
                        ("mcp-protocol-version", Some(UNKNOWN_VERSION.into())),
                    ],
                    odd.get("id"),
                    deadline(),
                )
                .await;
            let error = x.messages.iter().find_map(|m| m.get("error")).cloned();
            let got = format!(
                "http {}: {}",
                x.seen.status,
                x.messages.first().map(|m| excerpt(&m.to_string())).unwrap_or(x.seen.body_excerpt.clone())
            );
            self.unsupported_version_error(&odd, error.as_ref(), got);
            if x.seen.status == 400 {
                self.pass("http.unsupported-version-400");
            } else {
                self.fail(
                    "http.unsupported-version-400",
                    Some(&odd),
                    Some(format!("http {}", x.seen.status)),
                    "a request at a version the server does not implement must get 400 Bad Request",
                );
            }
        } else if w.session.is_some() {
            let list = self.message("tools/list", json!({}));
            let x = w
                .exchange(
                    "POST",
                    Some(list.to_string().as_bytes()),
                    &[("mcp-session-id", None)],
                    list.get("id"),
                    deadline(),
                )
                .await;
            if x.seen.status == 400 {
                self.pass("http.session-required");
            } else {
                self.fail(
                    "http.session-required",
                    Some(&list),
                    Some(format!("http {} without Mcp-Session-Id", x.seen.status)),
                    "the server issued a session: a request without it should get 400 Bad Request",
                );
            }
        } else {
            self.skip("http.session-required", "the server issued no session id");
        }
    }

    /// Sends `probe` and judges the answer by its status and JSON-RPC error code.
    async fn expect_http(&mut self, w: &HttpWire, probe: HttpProbe, deadline: Instant) {
        let body = probe.sent.to_string();
        let x = w.exchange("POST", Some(body.as_bytes()), &probe.headers, probe.sent.get("id"), deadline).await;
        let code = x.messages.iter().find_map(|m| m.pointer("/error/code").and_then(Value::as_i64));
        if (probe.ok)(x.seen.status, code) {
            self.pass(probe.id);
        } else {
            let code = code.map_or_else(String::new, |c| format!(", error {c}"));
            let got = format!("http {}{code} ({})", x.seen.status, probe.shown);
            self.fail(probe.id, Some(&probe.sent), Some(got), probe.why);
        }
    }

    pub(super) fn unsupported_version_error(&mut self, sent: &Value, error: Option<&Value>, got: String) {
        match error {
            Some(e)
                if e.get("code") == Some(&json!(-32022))
                    && e.pointer("/data/supported").is_some_and(Value::is_array) =>
            {
                self.pass("lifecycle.unsupported-version")
            }
            other => self.fail(
                "lifecycle.unsupported-version",
                Some(sent),
                Some(match other {
                    Some(e) => format!("error {}", excerpt(&e.to_string())),
                    None => got,
                }),
                "a request at 1900-01-01 must get -32022 (UnsupportedProtocolVersionError) with data.supported",
            ),
        }
    }

    pub(super) async fn session_delete(&mut self, wire: &mut Wire) {
        let timeout = self.timeout();
        let list = self.message("tools/list", json!({}));
        let Some(w) = http_wire(wire) else { return };
        if w.session.is_none() {
            self.skip("http.session-deleted", "the server issued no session id");
            return;
        }
        let x = w.exchange("DELETE", None, &[], None, Instant::now() + timeout).await;
        match x.seen.status {
            405 => self.skip("http.session-deleted", "the server does not let clients end sessions (405 to DELETE)"),
            200..=299 => {
                let after = w
                    .exchange("POST", Some(list.to_string().as_bytes()), &[], list.get("id"), Instant::now() + timeout)
                    .await;
                if after.seen.status == 404 {
                    self.pass("http.session-deleted");
                } else {
                    self.fail(
                        "http.session-deleted",
                        Some(&list),
                        Some(format!("http {}", after.seen.status)),
                        "after DELETE ended the session, a request with its id must get 404 Not Found",
                    );
                }
            }
            other => self.fail(
                "http.session-deleted",
                None,
                Some(format!("http {other} to DELETE")),
                "DELETE of the session must end it (2xx) or be refused with 405",
            ),
        }
    }
}

/// One HTTP request of the transport checks: the message, the headers that make it a probe,
/// and what a conforming server answers.
struct HttpProbe {
    id: &'static str,
    sent: Value,
    headers: Vec<(&'static str, Option<String>)>,
    ok: Box<dyn Fn(u16, Option<i64>) -> bool + Send>,
    /// The probe's headers, as the report shows them.
    shown: String,
    why: &'static str,
}

/// The `Mcp-Method` header of a 2026-07-28 `message`.
fn meta_for(message: &Value) -> Vec<(&'static str, Option<String>)> {
    vec![("mcp-method", message["method"].as_str().map(str::to_owned))]
}
