//! Answers the HTTP client makes up for its own requests when the server's cannot be read: an
//! answer over the size cap (dropped, its request failed naming the limit) and an error
//! without an id in the answer to a POST of one request (that request's). Not here: reading
//! the bodies (the client).

use super::{jsonrpc, Awaited, Id, Message};

/// An error without an id in the answer to a POST of one request is that request's: the frame
/// just sent is the one the server could not read.
pub(super) fn attribute_idless(messages: &mut [Message], awaited: &Awaited) {
    if awaited.ids.len() != 1 {
        return;
    }
    for message in messages {
        if let Message::Error(e) = message {
            if e.id.is_none() {
                e.id = awaited.ids.iter().next().cloned();
            }
        }
    }
}

/// The error answer to our request `id` whose response (`seen` bytes so far) went over the
/// cap `max` and was dropped; logged, as the server's answer is lost.
pub(super) fn too_large_answer(id: &Id, seen: usize, max: usize) -> Message {
    tracing::warn!(%id, seen, max, "mcpwire: dropped the server's answer over the size cap; its request fails");
    let message = format!(
        "response too large: at least {seen} bytes, the limit is {max} (HttpClientConfig::max_event_bytes); \
         the server's answer was dropped"
    );
    Message::Error(jsonrpc::ErrorResponse {
        id: Some(id.clone()),
        error: jsonrpc::ErrorObject::new(jsonrpc::ErrorCode::INTERNAL_ERROR, message),
    })
}
