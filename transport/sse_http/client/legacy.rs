//! The fallback to the legacy HTTP+SSE transport (2024-11-05): the GET stream whose
//! `endpoint` event names where to POST, and every message POSTed there; replies come on that
//! stream.
//!
//! Not here: Streamable HTTP.

use std::sync::Arc;

use bytes::Bytes;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::Method;
use tokio::sync::watch;

use super::connections::Target;
use super::streams::{Awaited, Read};
use super::{http_error, resolve, Inner};
use crate::proto::framing::SseDecoder;
use crate::proto::jsonrpc::Message;
use crate::transport::sse_http::is_media;
use crate::transport::TransportError;

impl Inner {
    /// Opens the legacy stream: GET the URL itself, then `/sse` at its root; waits for the
    /// `endpoint` event.
    pub(super) async fn start_legacy(self: Arc<Self>) -> Result<(), TransportError> {
        let mut candidates = vec![self.url.clone()];
        if let Some(root) = resolve(&self.url, "/sse").filter(|u| *u != self.url) {
            candidates.push(root);
        }
        let accept = [(ACCEPT, HeaderValue::from_static("text/event-stream"))];
        let mut last_error = TransportError::Http { status: 404, message: "no legacy sse endpoint".into() };
        for url in candidates {
            // The legacy stream lasts as long as the session: its connection is never reused.
            let attempt = match Target::of(&url) {
                Ok(target) => self.request(Method::GET, &target, None, &accept, Bytes::new()).await,
                Err(e) => Err(e),
            };
            let (response, _lease) = match attempt {
                Ok(r) => r,
                Err(e) => {
                    last_error = e;
                    continue;
                }
            };
            let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
            if !response.status().is_success() || !is_media(content_type, "text/event-stream") {
                last_error = http_error(response).await;
                continue;
            }
            let (endpoint_tx, mut endpoint_rx) = watch::channel(None);
            *self.legacy.lock().expect("client lock") = Some(endpoint_rx.clone());
            let inner = self.clone();
            self.spawn(async move {
                let mut decoder = SseDecoder::with_max_event_bytes(inner.config.max_event_bytes);
                let mut pending = Awaited::default();
                let body = response.into_body();
                inner.read_events(body, None, Read::default(), &mut decoder, &mut pending, Some(&endpoint_tx)).await;
                // The legacy session lives as long as its stream.
                inner.push(Ok(None)).await;
            });
            let waited = tokio::time::timeout(self.config.request_timeout, endpoint_rx.wait_for(|e| e.is_some())).await;
            return match waited {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(_)) => Err(TransportError::Closed),
                Err(_) => Err(TransportError::Timeout),
            };
        }
        Err(last_error)
    }

    pub(super) async fn legacy_send(&self, message: &Message) -> Result<(), TransportError> {
        if let Message::Request(r) = message {
            if r.method == "initialize" {
                *self.initialize_id.lock().expect("client lock") = Some(r.id.clone());
            }
        }
        let endpoint = self.legacy.lock().expect("client lock").as_ref().and_then(|rx| rx.borrow().clone());
        let endpoint = endpoint.ok_or(TransportError::Closed)?;
        let extra = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
        let (response, lease) = self
            .request(
                Method::POST,
                &Target::of(&endpoint)?,
                None,
                &extra,
                crate::transport::sse_http::buffers::BODIES.encode(message),
            )
            .await?;
        if response.status().is_success() {
            // The short body ("Accepted"), read to free the connection.
            self.drain(response.into_body(), lease).await;
            return Ok(());
        }
        Err(http_error(response).await)
    }
}
