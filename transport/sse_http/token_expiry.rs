//! An SSE stream opened with an access token ends when that token expires: the server side of
//! a protected resource ([`super::HttpServerConfig::protected_resource`]) wraps the body of
//! each `text/event-stream` answer (a GET stream, a POST's stream, the legacy stream) so that
//! it ends cleanly, with the terminating chunk, at the token's `exp`. The client reconnects
//! with a fresh token and resumes with `Last-Event-ID`: what was sent meanwhile is in the event
//! store, and a POST's responses still to come go to the resumed stream. The legacy
//! HTTP+SSE stream cannot be resumed: its end ends its session, as when the client leaves.
//!
//! A token accepted after its `exp` (within the verifier's leeway for clock skew) gets a stream
//! of [`MIN_STREAM_LIFETIME`] at least, so that a client reconnecting with it does not spin.
//! Without a verifier, or for a token without `exp`, nothing is wrapped.
//!
//! Not here: refusing an expired token (the verifiers), what happens to the stream's messages
//! once the connection is gone (the stream and its event store).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame};
use hyper::header::CONTENT_TYPE;
use hyper::Response;
use tokio::time::{Instant, Sleep};

use super::HttpBody;
use crate::transport::principal::Principal;

/// The least time a stream stays open for a token accepted after its `exp`: 1 s.
pub(crate) const MIN_STREAM_LIFETIME: Duration = Duration::from_secs(1);

/// When a stream opened with `principal`'s token must end (`None`: never for that reason).
pub(crate) fn deadline(principal: &Principal) -> Option<Instant> {
    let exp = principal.expires_at?;
    let left = exp.duration_since(SystemTime::now()).unwrap_or_default();
    Some(Instant::now() + left.max(MIN_STREAM_LIFETIME))
}

/// `response` with its body ending at `deadline` when it is an event stream.
pub(crate) fn cut_at(response: Response<HttpBody>, deadline: Option<Instant>) -> Response<HttpBody> {
    let Some(deadline) = deadline else { return response };
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_stream {
        return response;
    }
    response.map(|inner| Expiring { inner, deadline: Box::pin(tokio::time::sleep_until(deadline)) }.boxed())
}

/// A body that ends at its deadline.
struct Expiring {
    inner: HttpBody,
    deadline: Pin<Box<Sleep>>,
}

impl Body for Expiring {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::sse_http::full;

    #[test]
    fn the_deadline_is_the_tokens_exp_with_a_floor() {
        let mut principal = Principal::default();
        assert_eq!(deadline(&principal), None, "no exp: no deadline");
        principal.expires_at = Some(SystemTime::now() + Duration::from_secs(30));
        let left = deadline(&principal).unwrap() - Instant::now();
        assert!(left > Duration::from_secs(25) && left <= Duration::from_secs(30), "{left:?}");
        principal.expires_at = Some(SystemTime::now() - Duration::from_secs(30));
        let left = deadline(&principal).unwrap() - Instant::now();
        assert!(left > Duration::ZERO && left <= MIN_STREAM_LIFETIME, "{left:?}");
    }

    #[tokio::test]
    async fn only_event_streams_are_cut() {
        let stream = Response::builder().header(CONTENT_TYPE, "text/event-stream").body(full("data: x\n\n")).unwrap();
        let past = Instant::now().checked_sub(Duration::from_secs(10));
        let body = cut_at(stream, past).into_body().collect().await.unwrap().to_bytes();
        assert!(body.is_empty(), "past its deadline, the stream ends at once");
        let json = Response::builder().header(CONTENT_TYPE, "application/json").body(full("{}")).unwrap();
        assert_eq!(&cut_at(json, past).into_body().collect().await.unwrap().to_bytes()[..], b"{}");
    }
}
