//! A 2026-07-28 POST: one request standing alone, checked against its `_meta` and headers
//! ([`envelope::check_http`]), served by a transport of its own that ends with its answer or
//! when the client goes away.
//!
//! Not here: deciding that a POST is of this era (`post.rs`).

use std::sync::Arc;

use hyper::http::request::Parts;
use hyper::Response;

use super::answer::{dispatch, is_event_stream};
use super::decide;
use super::guards::check_scopes;
use super::registry::Shared;
use super::session::Session;
use crate::proto::jsonrpc::Message;
use crate::proto::version::ProtocolVersion;
use crate::transport::sse_http::HttpBody;

/// A 2026-07-28 POST: one request (or notification) standing alone, no session. The ladder
/// (`_meta`, headers, version) runs here; a request that passes it is served by a transport
/// of its own, and an error answer goes out with the revision's status (400, 404). `head` is
/// the POST's head as handed on to handlers ([`decide::handed_on_head`]).
pub(super) async fn per_request_post(shared: &Arc<Shared>, head: Parts, bytes: &[u8]) -> Response<HttpBody> {
    let version = ProtocolVersion::V2026_07_28;
    let decoded = decide::decode(&shared.config, bytes, Some(version));
    let message = match decoded.and_then(decide::per_request_message) {
        Ok(message) => message,
        Err(refused) => return refused,
    };
    let Message::Request(request) = &message else { unreachable!("per_request_message passes requests only") };
    if let Err(response) = check_scopes(shared, &head.extensions, std::slice::from_ref(&message)) {
        return response;
    }
    let param_headers = match decide::per_request_check(&shared.config, &head, request) {
        Ok(param_headers) => param_headers,
        Err(refused) => return refused,
    };
    let request_id = request.id.clone();
    let (session, transport) = shared.unkept_session(true);
    *session.version.lock().expect("session lock") = Some(version);
    *session.param_headers.lock().expect("session lock") = Some((request_id, param_headers));
    session.bind_principal(&head.extensions);
    session.hold_requests(head, std::slice::from_ref(&message));
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
