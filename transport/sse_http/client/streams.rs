//! Reading the server's answers: a JSON body, the SSE stream of a POST and the standalone GET
//! stream, event by event, under the size caps; a stream that drops before its responses came
//! is resumed with `Last-Event-ID` after the server's `retry`; the server's requests that come
//! on a POST's stream are remembered as related to the request that POST carried.
//!
//! Not here: connections (`connections.rs`), the legacy transport (`legacy.rs`).

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::{Method, Uri};
use tokio::sync::watch;

use super::answers::{attribute_idless, too_large_answer};
use super::connections::Lease;
use super::{bad_config, negotiated_version, resolve, Inner, Standalone, MAX_RELATED_REQUESTS};
use crate::proto::framing::{FrameError, LineError, SseDecoder};
use crate::proto::jsonrpc::{self, Id, Message, Payload};
use crate::proto::mcp_types::ClientTypedResults;
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::{is_media, LAST_EVENT_ID};
use crate::transport::TransportError;

/// The answers a stream still owes, and how to decode them.
#[derive(Default)]
pub(super) struct Awaited {
    /// The ids of the POST's requests not answered yet.
    pub(super) ids: HashSet<Id>,
    /// The method of the POST's request, when its result is decoded typed.
    pub(super) typed_method: Option<String>,
    /// The id of the request the POST carried: the server's requests on its stream are related
    /// to it.
    pub(super) origin: Option<Id>,
    /// Bytes seen of an event dropped for being over the cap while answers were awaited.
    pub(super) dropped: Option<usize>,
}

/// What has been read of a response body: its bytes so far and, once it is over, how it ended.
#[derive(Default)]
pub(super) struct Read {
    pub(super) buf: BytesMut,
    /// Once the body is over: `Ok` for a clean end, else hyper's error.
    pub(super) end: Option<Result<(), String>>,
}

impl Read {
    pub(super) fn ended_cleanly(&self) -> bool {
        matches!(self.end, Some(Ok(())))
    }

    pub(super) fn take(&mut self, frame: Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>) {
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.buf.extend_from_slice(&data);
                }
            }
            Some(Err(e)) => self.end = Some(Err(e.to_string())),
            None => self.end = Some(Ok(())),
        }
    }

    /// Takes the frames that are already here, without waiting for more, until `buf` holds
    /// more than `limit` bytes.
    pub(super) async fn take_ready(&mut self, body: &mut Incoming, limit: usize) {
        use hyper::body::Body as _;
        std::future::poll_fn(|cx| {
            while self.end.is_none() && self.buf.len() <= limit {
                match std::pin::Pin::new(&mut *body).poll_frame(cx) {
                    std::task::Poll::Ready(frame) => self.take(frame),
                    std::task::Poll::Pending => break,
                }
            }
            std::task::Poll::Ready(())
        })
        .await
    }
}

impl Inner {
    /// Reads a JSON answer to its end (within the request timeout and the size cap) and hands
    /// its messages on.
    pub(super) async fn read_json(&self, mut body: Incoming, lease: Lease, mut read: Read, awaited: &Awaited) {
        let max = self.config.max_event_bytes;
        let rest = async {
            while read.end.is_none() && read.buf.len() <= max {
                read.take(body.frame().await);
            }
        };
        if tokio::time::timeout(self.config.request_timeout, rest).await.is_err() {
            return self.push(Err(TransportError::Timeout)).await;
        }
        self.finish_json(body, lease, read, awaited).await;
    }

    /// Hands on a JSON answer read as far as it goes (its end, an error, or past the cap).
    pub(super) async fn finish_json(&self, body: Incoming, lease: Lease, read: Read, awaited: &Awaited) {
        let max = self.config.max_event_bytes;
        if read.buf.len() > max {
            let seen = read.buf.len();
            if awaited.ids.is_empty() {
                return self
                    .push(Err(TransportError::Malformed(LineError::Frame(FrameError::TooLarge { max, seen }))))
                    .await;
            }
            // The body answers the POST's requests: they fail now, naming the limit.
            for id in &awaited.ids {
                self.push(Ok(Some(too_large_answer(id, seen, max)))).await;
            }
            return;
        }
        match read.end {
            Some(Ok(())) => {
                drop(body);
                self.release(lease);
                self.deliver(&read.buf, awaited).await;
            }
            end => {
                let message = end.and_then(Result::err).unwrap_or_else(|| "the body ended early".to_owned());
                self.push(Err(TransportError::Http { status: 200, message })).await
            }
        }
    }

    /// Decodes one message (or batch) and hands it to `recv`.
    pub(super) async fn deliver(&self, data: &[u8], awaited: &Awaited) {
        match self.decode(data, awaited) {
            Ok(messages) => {
                for message in messages {
                    self.push(Ok(Some(message))).await;
                }
            }
            Err(e) => self.push(Err(e)).await,
        }
    }

    /// Decodes one message (or batch), learning the negotiated version from an initialize
    /// result on the way. The answer to the request `awaited` names a typed method for comes
    /// with its result typed.
    pub(super) fn decode(&self, data: &[u8], awaited: &Awaited) -> Result<Vec<Message>, TransportError> {
        let version = *self.version.lock().expect("client lock");
        if let Some(method) = &awaited.typed_method {
            match jsonrpc::decode_answer::<ClientTypedResults>(data, version, method) {
                // A response to some other request (a server's mistake) is decoded again, raw.
                Ok(Payload::Single(Message::Response(r))) if !awaited.ids.contains(&r.id) => {}
                Ok(Payload::Single(message)) => {
                    let mut messages = vec![message];
                    attribute_idless(&mut messages, awaited);
                    return Ok(messages);
                }
                _ => {}
            }
        }
        // Replies to a 2025-03-26 batch may come as an array; decode leniently.
        let mut messages = match jsonrpc::decode(data, version.or(Some(ProtocolVersion::V2025_03_26))) {
            Ok(Payload::Single(m)) => vec![m],
            Ok(Payload::Batch(ms)) => ms,
            Err(jsonrpc::DecodeError::BatchNotAllowed { .. }) => {
                match jsonrpc::decode(data, Some(ProtocolVersion::V2025_03_26)) {
                    Ok(Payload::Batch(ms)) => ms,
                    Ok(Payload::Single(m)) => vec![m],
                    Err(e) => return Err(TransportError::Malformed(LineError::Message(e))),
                }
            }
            Err(e) => return Err(TransportError::Malformed(LineError::Message(e))),
        };
        attribute_idless(&mut messages, awaited);
        for message in &messages {
            if let Message::Response(r) = message {
                let is_init = self.initialize_id.lock().expect("client lock").as_ref() == Some(&r.id);
                if is_init {
                    if let Some(v) = negotiated_version(r) {
                        *self.version.lock().expect("client lock") = Some(v);
                    }
                }
            }
        }
        Ok(messages)
    }

    /// Reads one SSE stream; when it drops with responses still missing (or it is the
    /// standalone stream), resumes it with GET and `Last-Event-ID`. A stateless POST's stream
    /// that ends for good with its request unanswered answers that request with an error, so
    /// that it does not wait for an answer that cannot come (a `subscriptions/listen` stream
    /// the server dropped).
    pub(super) async fn read_stream(
        self: &Arc<Self>,
        first: Option<(Incoming, Lease, Read)>,
        decoder: SseDecoder,
        mut pending: Awaited,
        standalone: bool,
    ) {
        self.read_stream_until_over(first, decoder, &mut pending, standalone).await;
        if let Some(seen) = pending.dropped {
            // An event over the cap was dropped and the stream ended without the answers it
            // may have carried: the requests fail now, naming the limit.
            for id in pending.ids.drain() {
                self.push(Ok(Some(too_large_answer(&id, seen, self.config.max_event_bytes)))).await;
            }
        }
        let stateless = self.version.lock().expect("client lock").is_some_and(|v| !v.has_initialize_handshake());
        if standalone || !stateless || self.closed.load(Ordering::Acquire) {
            return;
        }
        for id in pending.ids.drain() {
            let error = jsonrpc::ErrorObject::new(
                jsonrpc::ErrorCode::INTERNAL_ERROR,
                "the server ended the response stream without answering",
            );
            self.push(Ok(Some(Message::Error(jsonrpc::ErrorResponse { id: Some(id), error })))).await;
        }
    }

    pub(super) async fn read_stream_until_over(
        self: &Arc<Self>,
        first: Option<(Incoming, Lease, Read)>,
        mut decoder: SseDecoder,
        pending: &mut Awaited,
        standalone: bool,
    ) {
        let mut body = first;
        let mut failures = 0;
        loop {
            if let Some((b, lease, read)) = body.take() {
                self.read_events(b, Some(lease), read, &mut decoder, pending, None).await;
            }
            if self.closed.load(Ordering::Acquire) || (!standalone && pending.ids.is_empty()) {
                return;
            }
            // Resumption needs an event id (a POST stream without one cannot be resumed).
            let last = decoder.last_event_id().map(str::to_owned);
            if last.is_none() && !standalone {
                return;
            }
            if failures >= self.config.max_reconnects {
                return;
            }
            let delay = decoder.retry().map_or(self.config.default_retry, Duration::from_millis);
            tokio::time::sleep(delay).await;
            match self.open_get(last.as_deref()).await {
                Ok(Some((b, lease))) => {
                    failures = 0;
                    body = Some((b, lease, Read::default()));
                }
                Ok(None) => return,
                Err(_) => failures += 1,
            }
        }
    }

    /// GET on the endpoint: `Ok(None)` when the server will not give a stream (405, 404, …).
    pub(super) async fn open_get(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<Option<(Incoming, Lease)>, TransportError> {
        let session = self.session_id.lock().expect("client lock").clone();
        let mut extra = vec![(ACCEPT, HeaderValue::from_static("text/event-stream"))];
        if let Some(id) = last_event_id {
            extra.push((LAST_EVENT_ID, HeaderValue::from_str(id).map_err(bad_config)?));
        }
        let (response, lease) =
            self.request(Method::GET, &self.endpoint, session.as_deref(), &extra, Bytes::new()).await?;
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        if response.status().is_success() && is_media(content_type, "text/event-stream") {
            return Ok(Some((response.into_body(), lease)));
        }
        if response.status().is_server_error() {
            return Err(TransportError::Http { status: response.status().as_u16(), message: String::new() });
        }
        Ok(None)
    }

    pub(super) async fn standalone_stream(self: Arc<Self>) {
        let opened = self.open_get(None).await;
        self.standalone.send_replace(Standalone::Settled);
        if let Ok(Some((body, lease))) = opened {
            let decoder = SseDecoder::with_max_event_bytes(self.config.max_event_bytes);
            self.read_stream(Some((body, lease, Read::default())), decoder, Awaited::default(), true).await;
        }
    }

    /// Reads events until the body ends; a clean end releases `lease` (its connection can be
    /// reused). With `endpoint`, an `endpoint` event sets it (legacy).
    ///
    /// When an event carries the last response the stream was waiting for, the end of the body
    /// usually arrived with it: it is checked before the response is handed on, so the
    /// connection is back in the pool by the time the caller sends its next request.
    pub(super) async fn read_events(
        &self,
        mut body: Incoming,
        mut lease: Option<Lease>,
        mut read: Read,
        decoder: &mut SseDecoder,
        pending: &mut Awaited,
        endpoint: Option<&watch::Sender<Option<Uri>>>,
    ) {
        loop {
            while let Some(event) = decoder.decode(&mut read.buf) {
                let waiting = !pending.ids.is_empty();
                let messages = self.event(event, pending, endpoint).await;
                if waiting && pending.ids.is_empty() && read.buf.is_empty() && read.end.is_none() {
                    read.take_ready(&mut body, self.config.max_event_bytes).await;
                }
                if read.ended_cleanly() {
                    if let Some(lease) = lease.take() {
                        self.release(lease);
                    }
                }
                for message in messages {
                    self.push(Ok(Some(message))).await;
                }
            }
            if read.end.is_some() {
                break;
            }
            read.take(body.frame().await);
        }
        while let Some(event) = decoder.decode_eof(&mut read.buf) {
            for message in self.event(event, pending, endpoint).await {
                self.push(Ok(Some(message))).await;
            }
        }
        if let (true, Some(lease)) = (read.ended_cleanly(), lease) {
            self.release(lease);
        }
    }

    /// Handles one SSE event; returns the messages it carried, to hand on. The ids of the
    /// responses among them leave `pending`.
    pub(super) async fn event(
        &self,
        event: Result<crate::proto::framing::SseEvent, FrameError>,
        pending: &mut Awaited,
        endpoint: Option<&watch::Sender<Option<Uri>>>,
    ) -> Vec<Message> {
        match event {
            Err(e) => {
                if let (FrameError::TooLarge { seen, .. }, false) = (&e, pending.ids.is_empty()) {
                    pending.dropped = Some(*seen);
                }
                self.push(Err(TransportError::Malformed(LineError::Frame(e)))).await
            }
            Ok(event) if event.event_type() == "endpoint" => {
                if let Some(endpoint) = endpoint {
                    if let Some(uri) = resolve(&self.url, event.data.trim()) {
                        let _ = endpoint.send(Some(uri));
                    }
                }
            }
            Ok(event) if event.event_type() != "message" || event.data.is_empty() => {}
            Ok(event) => match self.decode(event.data.as_bytes(), pending) {
                Ok(messages) => {
                    for message in &messages {
                        let answered = match message {
                            Message::Response(r) => Some(&r.id),
                            Message::Error(e) => e.id.as_ref(),
                            _ => None,
                        };
                        if let Some(id) = answered {
                            pending.ids.remove(id);
                        }
                    }
                    self.note_related(&messages, pending.origin.as_ref());
                    return messages;
                }
                Err(e) => self.push(Err(e)).await,
            },
        }
        Vec::new()
    }

    /// Remembers which of our requests the server's requests in `messages` (read on the stream
    /// of the POST that carried `origin`) relate to, and forgets those the server cancelled.
    pub(super) fn note_related(&self, messages: &[Message], origin: Option<&Id>) {
        for message in messages {
            match message {
                Message::Request(r) => {
                    let Some(origin) = origin else { continue };
                    let mut related = self.related.lock().expect("client lock");
                    // A server that never lets its requests end cannot grow this without bound;
                    // past the cap its requests are simply not known as related.
                    if related.len() < MAX_RELATED_REQUESTS {
                        related.insert(r.id.clone(), origin.clone());
                    }
                }
                Message::Notification(n) if n.method == "notifications/cancelled" => {
                    #[derive(serde::Deserialize, Clone)]
                    struct Cancelled {
                        #[serde(rename = "requestId")]
                        request_id: Id,
                    }
                    let cancelled = n.params.as_ref().and_then(|p| p.decode::<Cancelled>().ok());
                    if let Some(Cancelled { request_id }) = cancelled {
                        self.related.lock().expect("client lock").remove(&request_id);
                    }
                }
                _ => {}
            }
        }
    }
}
