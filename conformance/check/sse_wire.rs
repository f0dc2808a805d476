//! The legacy HTTP+SSE transport of 2024-11-05, as the checker speaks it: a GET on the URL
//! opens an SSE stream whose first event, `endpoint`, names where to POST; every message of the
//! client is a POST there, and every message of the server comes on the stream.
//!
//! Bounded as the other wires are: every wait has a deadline, an event over [`MAX_FRAME`] is
//! reported and dropped. Not here: what the answers mean (the battery's business), the checks
//! of Streamable HTTP (statuses and headers of an endpoint this transport does not have).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{timeout_at, Instant};

use super::wire::{excerpt, HttpExchange, HttpWire, Inbox, Incoming, Next, Reply, MAX_FRAME};
use mcpwire::proto::framing::SseDecoder;

/// A connection over the legacy HTTP+SSE transport.
pub struct SseWire {
    /// The endpoint the server named, POSTed to.
    post: HttpWire,
    reader: tokio::task::JoinHandle<()>,
    /// What the server sends on the stream.
    pub inbox: Inbox,
}

impl SseWire {
    /// GETs `url` and waits (until `deadline`) for its `endpoint` event.
    ///
    /// # Errors
    /// Why there is no legacy SSE stream there: a refused GET, a stream whose first event is
    /// not `endpoint`, no event in time.
    pub async fn connect(url: &str, headers: Vec<(String, String)>, deadline: Instant) -> Result<SseWire, String> {
        let base = HttpWire::new(url, headers.clone())?;
        let mut request = hyper::Request::builder()
            .method("GET")
            .uri(base.path())
            .header("host", base.authority())
            .header("accept", "text/event-stream");
        for (k, v) in &headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let request = request.body(Full::new(Bytes::new())).map_err(|e| format!("building the GET: {e}"))?;
        let mut sender = timeout_at(deadline, base.connect()).await.map_err(|_| "GET: timed out".to_owned())??;
        let response = timeout_at(deadline, sender.send_request(request))
            .await
            .map_err(|_| format!("GET {url}: timed out"))?
            .map_err(|e| format!("GET {url}: {e}"))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
            .unwrap_or_default();
        if status != 200 || !content_type.starts_with("text/event-stream") {
            return Err(format!("GET {url}: http {status} ({content_type}), not an SSE stream"));
        }
        let (tx, incoming) = mpsc::channel(256);
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let reader = tokio::spawn(read_events(response.into_body(), sender, endpoint_tx, tx));
        let endpoint = match timeout_at(deadline, endpoint_rx).await {
            Ok(Ok(Ok(endpoint))) => endpoint,
            Ok(Ok(Err(why))) => {
                reader.abort();
                return Err(format!("GET {url}: {why}"));
            }
            _ => {
                reader.abort();
                return Err(format!("GET {url}: no endpoint event"));
            }
        };
        let post = HttpWire::new(&resolve(&base, url, &endpoint), headers)?;
        Ok(SseWire { post, reader, inbox: Inbox::new(incoming, "an event") })
    }

    /// POSTs one message to the endpoint; the server accepts it with a 2xx (its answer comes on
    /// the stream).
    ///
    /// # Errors
    /// The POST failed or was refused (the status and body said).
    pub async fn send(&mut self, message: &Value) -> Result<HttpExchange, String> {
        let body = message.to_string();
        let x = self
            .post
            .exchange("POST", Some(body.as_bytes()), &[], None, Instant::now() + Duration::from_secs(10))
            .await;
        if let Some(e) = &x.error {
            return Err(format!("POST: {e}"));
        }
        if !(200..300).contains(&x.seen.status) {
            return Err(format!("POST: http {} {}", x.seen.status, x.seen.body_excerpt));
        }
        Ok(x)
    }

    /// Waits until `deadline` for the response with `id` on the stream, noting everything else.
    pub async fn wait_for(&mut self, id: &Value, deadline: Instant) -> Reply {
        loop {
            match self.inbox.next(id, deadline).await {
                Next::Reply(reply) => return reply,
                Next::Answer(answer) => {
                    let _ = self.send(&answer).await;
                }
                Next::End(why) => self.inbox.end(why),
            }
        }
    }

    /// Sends `message` and waits for its response.
    pub async fn request(&mut self, message: &Value, timeout: Duration) -> Reply {
        if let Err(e) = self.send(message).await {
            return Reply::Closed(e);
        }
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        self.wait_for(&id, Instant::now() + timeout).await
    }

    /// Reads whatever comes until `deadline`.
    pub async fn drain_until(&mut self, deadline: Instant) {
        let _ = self.wait_for(&json!("mcp-conformance/never-used-id"), deadline).await;
    }

    /// Ends the stream (the server ends the session with it).
    pub fn close(self) {
        self.reader.abort();
    }
}

/// The endpoint event's URI against the stream's URL: absolute, from the root, or relative.
fn resolve(base: &HttpWire, url: &str, endpoint: &str) -> String {
    if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint.to_owned()
    } else if endpoint.starts_with('/') {
        format!("{}{endpoint}", base.origin())
    } else {
        let path = url.split('?').next().unwrap_or(url);
        let dir = path.rsplit_once('/').map_or(path, |(dir, _)| dir);
        format!("{dir}/{endpoint}")
    }
}

/// Decodes the stream: its first event must be `endpoint` (told once), every later one a
/// message. `_sender` keeps the connection's request side alive as long as the stream.
async fn read_events(
    mut body: hyper::body::Incoming,
    _sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    endpoint: oneshot::Sender<Result<String, String>>,
    tx: mpsc::Sender<Incoming>,
) {
    let mut endpoint = Some(endpoint);
    let mut decoder = SseDecoder::with_max_event_bytes(MAX_FRAME);
    let mut buf = BytesMut::new();
    loop {
        let data = match body.frame().await {
            None => {
                let _ = tx.send(Incoming::End("the SSE stream ended".into())).await;
                return;
            }
            Some(Err(e)) => {
                let _ = tx.send(Incoming::End(format!("the SSE stream broke: {e}"))).await;
                return;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
        };
        buf.extend_from_slice(&data);
        while let Some(event) = decoder.decode(&mut buf) {
            let item = match event {
                Err(e) => Incoming::Garbage(format!("a bad SSE event: {e}")),
                Ok(event) => {
                    if let Some(first) = endpoint.take() {
                        let told = if event.event.as_deref() == Some("endpoint") {
                            Ok(event.data.trim().to_owned())
                        } else {
                            Err(format!("the first event is not `endpoint`: {}", excerpt(&event.data)))
                        };
                        let _ = first.send(told);
                        continue;
                    }
                    if event.data.is_empty() {
                        continue;
                    }
                    match serde_json::from_str::<Value>(&event.data) {
                        Ok(v @ (Value::Object(_) | Value::Array(_))) => Incoming::Message(v),
                        _ => Incoming::Garbage(excerpt(&event.data)),
                    }
                }
            };
            if tx.send(item).await.is_err() {
                return;
            }
        }
    }
}

/// Whether `url` is a server of the legacy HTTP+SSE transport, found as the 2025-03-26
/// backwards-compatibility section tells clients to: a POST of `initialize` refused with 400,
/// 404 or 405, then a GET whose first event is `endpoint`. Returns what was seen, for the
/// report; `None`: speak Streamable HTTP.
pub async fn detect(url: &str, headers: &[(String, String)], timeout: Duration) -> Option<String> {
    let wire = HttpWire::new(url, headers.to_vec()).ok()?;
    let init = json!({"jsonrpc": "2.0", "id": "mcp-conformance-probe", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-conformance", "version": env!("CARGO_PKG_VERSION")}}});
    let body = init.to_string();
    let deadline = Instant::now() + timeout;
    let x = wire.exchange("POST", Some(body.as_bytes()), &[], init.get("id"), deadline).await;
    let status = x.seen.status;
    if !matches!(status, 400 | 404 | 405) {
        if let Some(session) = x.seen.headers.get("mcp-session-id") {
            let ended = [("mcp-session-id", Some(session.clone()))];
            let _ = wire.exchange("DELETE", None, &ended, None, deadline).await;
        }
        return None;
    }
    let sse = SseWire::connect(url, headers.to_vec(), deadline).await.ok()?;
    sse.close();
    Some(format!(
        "POST initialize got http {status} and GET gave an `endpoint` event: checked over the legacy HTTP+SSE transport (2024-11-05)"
    ))
}
