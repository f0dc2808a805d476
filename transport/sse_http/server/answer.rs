//! The answer to a POST whose messages went to the application: 202 for notifications and
//! responses only, an SSE stream (event ids, keep-alives, the first event's hold) or one JSON
//! body for requests (JSON mode, or in auto mode a response that came within the hold).
//!
//! Not here: which session or stream a message belongs to (`session.rs`).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;

use crate::transport::sse_http::event_store::EventId;

use super::bookkeeping::{streams_to_forget, KEPT_STREAMS, KEPT_STREAM_BYTES};
use super::config::ResponseMode;
use super::registry::Shared;
use super::reply::{rpc_error, SESSION_NOT_FOUND};
use super::session::{params_progress_token, Session};
use super::stream::{Outgoing, Pending};
use crate::proto::envelope;
use crate::proto::framing::{encode_comment, encode_data_event, encode_event, SseEvent};
use crate::proto::jsonrpc::{self, ErrorCode, Message};
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::{empty, full, requeue_once, ChannelBody, HttpBody};

/// Hands POSTed messages to the application and builds the answer: 202, an SSE stream or JSON.
pub(super) async fn dispatch(
    shared: &Shared,
    session: &Arc<Session>,
    messages: Vec<Message>,
    version: Option<ProtocolVersion>,
) -> Response<HttpBody> {
    // Walked where needed rather than collected: one allocation less per POST.
    let requests = || messages.iter().filter_map(|m| if let Message::Request(r) = m { Some(r) } else { None });
    if requests().next().is_none() {
        if !session.deliver(messages).await {
            return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
        }
        let mut response = Response::new(empty());
        *response.status_mut() = StatusCode::ACCEPTED;
        return response;
    }
    let pending: Pending = requests().map(|r| r.id.clone()).collect();
    let may_be_json = shared.config.response_mode == ResponseMode::Auto && messages.len() == 1;
    let stream = session.new_post_stream(pending, may_be_json);
    let (_, live) = stream
        .attach(&*session.store, None, shared.config.limits.queue_depth.max(1))
        .await
        .expect("a new stream has no live connection");
    let live = live.expect("a new stream is not finished");
    {
        let mut routes = session.routes.lock().expect("session lock");
        for request in requests() {
            routes.requests.insert(request.id.clone(), stream.clone());
            if let Some(token) = request.params.as_ref().and_then(|p| params_progress_token(p, true)) {
                routes.progress.insert(token, request.id.clone());
            }
            if request.method == "initialize" {
                *session.initialize_id.lock().expect("session lock") = Some(request.id.clone());
            }
        }
        routes.streams.push_back(stream.clone());
        let stored = || routes.streams.iter().map(|s| s.stored_bytes.load(Ordering::Relaxed));
        // Collected only when some stream is to go (one allocation less per POST otherwise).
        if routes.streams.len() > KEPT_STREAMS || stored().sum::<usize>() > KEPT_STREAM_BYTES {
            let stored: Vec<usize> = stored().collect();
            for old in routes.streams.drain(..streams_to_forget(&stored)) {
                session.store.remove(&old.key);
            }
        }
    }
    let batch = messages.len() > 1;
    if !session.deliver(messages).await {
        return rpc_error(StatusCode::NOT_FOUND, SESSION_NOT_FOUND, "Session not found");
    }
    if stream.json {
        let response = json_answer(shared, session, live, batch).await;
        if !is_event_stream(&response) {
            session.forget_stream(&stream);
        }
        return response;
    }
    // One turn for the application, so that an answer it gives at once goes out in the same
    // write as the response head and the priming event (one TCP segment instead of two); past
    // it, up to `first_event_hold` for the first message, for the same reason.
    requeue_once().await;
    let (first, live) = first_message(live, shared.config.first_event_hold, &session.hold_timer).await;
    if may_be_json && stream.answered_in_json().await {
        session.forget_stream(&stream);
        return response_in_json(first, live);
    }
    let mut prelude = BytesMut::new();
    if version.is_some_and(|v| v >= ProtocolVersion::V2025_11_25) {
        let priming = SseEvent::new("").with_id(EventId::encode(stream.name(), 0)).with_retry(shared.config.retry_ms);
        encode_event(&priming, &mut prelude).expect("event ids are plain ascii");
    }
    sse_response(shared, session.clone(), prelude.freeze(), first, live, false, true)
}

/// The answer of a POST whose first message, its response, decided JSON
/// ([`Stream::answered_in_json`](super::stream::Stream::answered_in_json)): that response, which
/// [`first_message`] took or left in the channel.
fn response_in_json(first: Option<Outgoing>, live: Option<mpsc::Receiver<Outgoing>>) -> Response<HttpBody> {
    let taken = first.or_else(|| live.and_then(|mut live| live.try_recv().ok()));
    match taken {
        Some((_, data)) => json_body(StatusCode::OK, data),
        // Not reached: the stream's lock orders the response's send before the decision is seen.
        None => rpc_error(StatusCode::INTERNAL_SERVER_ERROR, jsonrpc::ErrorCode::INTERNAL_ERROR, "no response"),
    }
}

/// Waits up to `hold` for the first message of a POST's stream when none is there yet; gives
/// it (as the start of what the stream replays) and the stream, `None` once the stream ended.
pub(super) async fn first_message(
    mut live: mpsc::Receiver<Outgoing>,
    hold: Duration,
    timer: &HoldTimer,
) -> (Option<Outgoing>, Option<mpsc::Receiver<Outgoing>>) {
    if hold.is_zero() || !live.is_empty() {
        return (None, Some(live));
    }
    let mut sleep = timer.take(tokio::time::Instant::now() + hold);
    let first = tokio::select! {
        biased;
        first = live.recv() => Some(first),
        () = &mut sleep => None,
    };
    timer.put_back(sleep);
    match first {
        None => (None, Some(live)),
        Some(None) => (None, None),
        Some(Some(first)) => {
            // The rest of a quick answer (the end of the stream after the response) comes in
            // the same turn: let it, so the terminating chunk joins the same write.
            requeue_once().await;
            (Some(first), Some(live))
        }
    }
}

/// A session's first event hold timer, reused from one POST to the next. A new timer due
/// sooner than anything the runtime's timer driver waits for wakes the driver (an eventfd
/// write and one more `epoll_wait`, on every call of a gateway whose answers take a round trip
/// upstream); moving a registered timer's deadline later, as each next POST does, is an atomic
/// store the driver only sees when the old deadline comes. Two POSTs of one session held at
/// once: the second gets a timer of its own.
#[derive(Default)]
pub(super) struct HoldTimer(pub(super) Mutex<Option<Pin<Box<tokio::time::Sleep>>>>);

impl HoldTimer {
    pub(super) fn take(&self, deadline: tokio::time::Instant) -> Pin<Box<tokio::time::Sleep>> {
        match self.0.lock().expect("hold timer lock").take() {
            Some(mut sleep) => {
                sleep.as_mut().reset(deadline);
                sleep
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        }
    }

    pub(super) fn put_back(&self, sleep: Pin<Box<tokio::time::Sleep>>) {
        *self.0.lock().expect("hold timer lock") = Some(sleep);
    }
}

pub(super) fn is_event_stream(response: &Response<HttpBody>) -> bool {
    response.headers().get(CONTENT_TYPE).is_some_and(|v| v.as_bytes() == b"text/event-stream")
}

/// Whether an outgoing message is a response (or error response), by its lack of `method`.
/// The members are read only up to the first of `method`, `result` and `error`, which decides:
/// a 64 KiB result is not scanned to the end to learn that it is one.
pub(super) fn is_response(data: &[u8]) -> bool {
    struct Probe<'a>(&'a mut Option<bool>);
    impl<'de> serde::de::Visitor<'de> for Probe<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                match &*key {
                    "method" => {
                        *self.0 = Some(false);
                        return Ok(());
                    }
                    "result" | "error" => {
                        *self.0 = Some(true);
                        return Ok(());
                    }
                    _ => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(())
        }
    }
    let mut decided = None;
    // Stopping early leaves the object unfinished, which the deserializer reports as an error
    // once the visitor has decided: only the decision matters here.
    let _ = serde::Deserializer::deserialize_map(&mut serde_json::Deserializer::from_slice(data), Probe(&mut decided));
    decided.unwrap_or(true)
}

/// The answer of a POST in JSON mode: its responses as one body (an array for a batch). Only a
/// stateless session routes anything else here; when such a message comes, the answer becomes
/// an SSE stream of what came so far and the rest, ending with the session.
pub(super) async fn json_answer(
    shared: &Shared,
    session: &Arc<Session>,
    mut live: mpsc::Receiver<Outgoing>,
    batch: bool,
) -> Response<HttpBody> {
    let mut bodies = Vec::new();
    while let Some((_, data)) = live.recv().await {
        if !is_response(&data) {
            let mut so_far: Vec<Outgoing> = bodies.into_iter().map(|d| (None, d)).collect();
            so_far.push((None, data));
            let stateless = session.is_stateless();
            return sse_response(shared, session.clone(), Bytes::new(), so_far, Some(live), stateless, false);
        }
        bodies.push(data);
    }
    let status = match bodies.as_slice() {
        [only] if session.is_per_request() => error_code(only)
            .and_then(envelope::http_status)
            .and_then(|s| StatusCode::from_u16(s).ok())
            .unwrap_or(StatusCode::OK),
        _ => StatusCode::OK,
    };
    let body = if batch || bodies.len() != 1 {
        let mut out = Vec::from(&b"["[..]);
        for (i, data) in bodies.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(data);
        }
        out.push(b']');
        Bytes::from(out)
    } else {
        bodies.pop().expect("one body")
    };
    json_body(status, body)
}

fn json_body(status: StatusCode, body: Bytes) -> Response<HttpBody> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The `error.code` of an encoded error response.
pub(super) fn error_code(data: &[u8]) -> Option<ErrorCode> {
    #[derive(serde::Deserialize)]
    struct Code {
        code: i32,
    }
    #[derive(serde::Deserialize)]
    struct Error {
        error: Option<Code>,
    }
    serde_json::from_slice::<Error>(data).ok()?.error.map(|c| ErrorCode(c.code))
}

/// Starts the task writing one SSE connection: `prelude`, the replayed events, then live events
/// with keep-alive comments in between, until the stream ends or the client goes away. Without
/// `event_ids`, events go out without their ids (a stream nothing can resume).
pub(super) fn sse_response(
    shared: &Shared,
    session: Arc<Session>,
    prelude: Bytes,
    replay: impl IntoIterator<Item = Outgoing>,
    live: Option<mpsc::Receiver<Outgoing>>,
    close_session_at_end: bool,
    event_ids: bool,
) -> Response<HttpBody> {
    let (body_tx, body_rx) = mpsc::channel::<Bytes>(8);
    let keep_alive = shared.config.keep_alive;
    session.open_connections.fetch_add(1, Ordering::AcqRel);
    let encode = move |(id, data): Outgoing| {
        let mut out = BytesMut::new();
        let id = id.as_deref().filter(|_| event_ids);
        encode_data_event(id, &data, &mut out).expect("event ids are plain ascii");
        out.freeze()
    };
    // What is ready now goes into the body before the response is returned, so that hyper
    // writes it with the head; a stream already finished ends right there too.
    let mut ready: VecDeque<Bytes> = VecDeque::new();
    if !prelude.is_empty() {
        ready.push_back(prelude);
    }
    ready.extend(replay.into_iter().map(encode));
    let mut live = live;
    if let Some(receiver) = live.as_mut() {
        loop {
            match receiver.try_recv() {
                Ok(item) => ready.push_back(encode(item)),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    live = None;
                    break;
                }
            }
        }
    }
    while let Some(chunk) = ready.pop_front() {
        if let Err(mpsc::error::TrySendError::Full(chunk)) = body_tx.try_send(chunk) {
            ready.push_front(chunk);
            break;
        }
    }
    // A stream that is over already ends with what was just queued: dropping the sender now
    // lets hyper write the terminating chunk in the same write.
    let body_tx = (live.is_some() || !ready.is_empty()).then_some(body_tx);
    if body_tx.is_none() && !close_session_at_end {
        // All of it is in the body already: no task to keep.
        session.touch();
        session.open_connections.fetch_sub(1, Ordering::AcqRel);
        return sse_head(body_rx);
    }
    crate::transport::task::spawn(async move {
        if let Some(body_tx) = body_tx {
            let mut ok = true;
            for chunk in ready {
                ok = ok && body_tx.send(chunk).await.is_ok();
            }
            if let (true, Some(mut live)) = (ok, live) {
                let mut ticker =
                    keep_alive.map(|every| tokio::time::interval_at(tokio::time::Instant::now() + every, every));
                loop {
                    let next = async {
                        match ticker.as_mut() {
                            Some(t) => {
                                t.tick().await;
                            }
                            None => std::future::pending::<()>().await,
                        }
                    };
                    let chunk = tokio::select! {
                        // The client went away (hyper dropped the body).
                        _ = body_tx.closed() => break,
                        item = live.recv() => match item {
                            Some(item) => encode(item),
                            None => break,
                        },
                        _ = next => {
                            let mut out = BytesMut::new();
                            encode_comment("keep-alive", &mut out);
                            out.freeze()
                        }
                    };
                    if body_tx.send(chunk).await.is_err() {
                        break;
                    }
                }
            }
        }
        session.touch();
        session.open_connections.fetch_sub(1, Ordering::AcqRel);
        if close_session_at_end {
            session.close().await;
        }
    });
    sse_head(body_rx)
}

pub(super) fn sse_head(body_rx: mpsc::Receiver<Bytes>) -> Response<HttpBody> {
    let mut response = Response::new(ChannelBody::boxed(body_rx));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
