//! The HTTP bodies the recording proxy builds: whole ones, and SSE streams written as events
//! arrive through a bounded channel.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use hyper::body::Frame;
use tokio::sync::mpsc;

/// The body type of every response and request the proxy builds.
pub type HttpBody = BoxBody<Bytes, Infallible>;

/// A body of `bytes`, whole.
pub fn full(bytes: impl Into<Bytes>) -> HttpBody {
    http_body_util::Full::new(bytes.into()).boxed()
}

/// An empty body.
pub fn empty() -> HttpBody {
    full(Bytes::new())
}

/// A body fed through a bounded channel.
pub struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl ChannelBody {
    /// The body of what `rx` receives, until its senders are gone.
    pub fn boxed(rx: mpsc::Receiver<Bytes>) -> HttpBody {
        BodyExt::boxed(ChannelBody { rx })
    }
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// Whether a `Content-Type` value is `media`, ignoring parameters such as `charset`.
pub fn is_media(content_type: &str, media: &str) -> bool {
    content_type.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(media)
}
