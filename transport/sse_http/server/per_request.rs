//! A 2026-07-28 POST: one request standing alone, checked against its `_meta` and headers
//! ([`envelope::check_http`]), served by a transport of its own that ends with its answer or
//! when the client goes away.
//!
//! Not here: deciding that a POST is of this era (`post.rs`).

use std::sync::Arc;

use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};

use super::answer::{dispatch, is_event_stream};
use super::guards::check_scopes;
use super::registry::Shared;
use super::reply::{decode, rpc_error};
use super::session::Session;
use crate::proto::envelope;
use crate::proto::jsonrpc::{ErrorCode, ErrorResponse, Message};
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::{empty, full, HttpBody};

/// The value of header `name` (lowercase), `Err(())` when it appears more than once.
pub(super) fn single_header<'r, B>(req: &'r Request<B>, name: &str) -> Result<Option<&'r str>, ()> {
    let mut values = req.headers().get_all(name).iter();
    let first = values.next().map(|v| v.to_str().unwrap_or("\u{fffd}"));
    if values.next().is_some() {
        return Err(());
    }
    Ok(first)
}

/// A 2026-07-28 POST: one request (or notification) standing alone, no session. The ladder
/// (`_meta`, headers, version) runs here; a request that passes it is served by a transport
/// of its own, and an error answer goes out with the revision's status (400, 404).

pub(super) async fn per_request_post(shared: &Arc<Shared>, req: &Arc<Request<()>>, bytes: &[u8]) -> Response<HttpBody> {
    let version = ProtocolVersion::V2026_07_28;
    let message = match decode(shared, bytes, Some(version)) {
        Ok(mut messages) if messages.len() == 1 => messages.pop().expect("one message"),
        Ok(_) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "Body must be a single JSON-RPC request or notification",
            )
        }
        Err(response) => return response,
    };
    let request = match &message {
        // No client-to-server notification is defined over HTTP in this revision; accepted
        // and dropped, as the handshake era's transport does.
        Message::Notification(_) => {
            let mut response = Response::new(empty());
            *response.status_mut() = StatusCode::ACCEPTED;
            return response;
        }
        Message::Request(request) => request,
        _ => return rpc_error(StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST, "Clients must not POST responses"),
    };
    if let Err(response) = check_scopes(shared, req, std::slice::from_ref(&message)) {
        return response;
    }
    // The revisions served per request that this server is configured to accept.
    let served: Vec<ProtocolVersion> =
        ProtocolVersion::PER_REQUEST.into_iter().filter(|v| shared.config.versions.contains(v)).collect();
    let checked =
        envelope::check_http(&request.method, request.params.as_ref(), &served, |name| single_header(req, name));
    if let Err(error) = checked {
        let status = envelope::http_status(error.code).and_then(|s| StatusCode::from_u16(s).ok());
        let body = Message::Error(ErrorResponse::new(Some(request.id.clone()), error)).to_vec();
        let mut response = Response::new(full(body));
        *response.status_mut() = status.unwrap_or(StatusCode::OK);
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return response;
    }
    let param_headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .filter(|(name, _)| name.as_str().starts_with(envelope::PARAM_HEADER_PREFIX))
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap_or("\u{fffd}").to_owned()))
        .collect();
    let (session, transport) = shared.unkept_session(true);
    *session.version.lock().expect("session lock") = Some(version);
    *session.param_headers.lock().expect("session lock") = Some((request.id.clone(), param_headers));
    session.bind_principal(req);
    session.hold_requests(req, std::slice::from_ref(&message));
    crate::transport::task::spawn((shared.app)(transport));
    // A client that goes away before the answer cancels its request (2026-07-28
    // "Cancellation"): hyper drops this future, and the guard ends the session.
    let mut guard = CloseOnDrop(Some(session.clone()));
    let response = dispatch(shared, &session, vec![message], Some(version)).await;
    // Answered: an SSE stream's task ends the session when the stream ends; a JSON answer
    // ends it now.
    guard.0 = None;
    if !is_event_stream(&response) {
        session.close().await;
    }
    response
}

/// Ends a per-request session when dropped (from a task: closing awaits).
pub(super) struct CloseOnDrop(pub(super) Option<Arc<Session>>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            crate::transport::task::spawn(async move { session.close().await });
        }
    }
}
