//! `serve --listen`'s server: the recorded server's side of an HTTP recording played by
//! mcpwire's Streamable HTTP server, one script per session (one merged script for the POSTs of
//! a 2026-07-28 recording, see [`super::serve_stateless`]), as the configuration and the
//! application that a listener binds (`HttpServer::bind`, what the binary does) or that runs in
//! process behind an `HttpService` (the socketless replays of `tests/conformance`).
//!
//! Not here: the script itself ([`super::serve`]), the listener, the signals and the report
//! file (the binary).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;
use tokio::time::Instant;

use mcpwire::recording::Recording;
use mcpwire::transport::sse_http::{HttpServerConfig, ServerTransport};
use mcpwire::transport::Transport;

use super::matching::Matcher;
use super::serve::{serve_recording, Event};
use super::serve_stateless::MergedPosts;

/// Where each script's events go (notes, differences, matched client messages).
pub type Events = Arc<dyn Fn(Event<'_>) + Send + Sync>;

/// What the HTTP server calls with each new session's transport.
pub type App = Box<dyn Fn(ServerTransport) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The scripts still running, and a wake-up when one ends.
#[derive(Debug, Default)]
pub struct Running {
    count: AtomicUsize,
    ended: Notify,
}

impl Running {
    /// How many scripts are running.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Waits until no script runs, or `deadline`.
    pub async fn wait_until(&self, deadline: Instant) {
        loop {
            let ended = self.ended.notified();
            if self.count() == 0 || tokio::time::timeout_at(deadline, ended).await.is_err() {
                return;
            }
        }
    }

    fn start(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
    }

    fn end(&self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
        self.ended.notify_waiters();
    }
}

/// The recorded server of an HTTP recording, ready to serve.
pub struct RecordedHttpServer {
    /// The legacy transport for an `sse` recording, stateless for a 2026-07-28 one, params kept
    /// raw (the recording is matched against what the client sent, as sent); no bind address.
    pub config: HttpServerConfig,
    /// The scripts still running.
    pub running: Arc<Running>,
    merged: Option<Arc<MergedPosts>>,
}

impl RecordedHttpServer {
    /// The server of `recording` and its application. Called within a tokio runtime: a
    /// 2026-07-28 recording's merged script starts at once.
    pub fn new(recording: Arc<Recording>, matcher: Arc<Matcher>, events: Events) -> (RecordedHttpServer, App) {
        let legacy = recording.header.transport == "sse";
        let stateless = recording.header.protocol_version.as_str() >= "2026-07-28";
        let config = HttpServerConfig::default().legacy_sse(legacy).stateless(stateless).typed_params(false);
        let running = Arc::new(Running::default());
        // Stateless (2026-07-28): every POST feeds one script (see serve_stateless).
        let merged = stateless.then(|| Arc::new(MergedPosts::new()));
        if let Some(merged) = merged.clone() {
            let (recording, matcher, events, running) =
                (recording.clone(), matcher.clone(), events.clone(), running.clone());
            running.start();
            tokio::spawn(async move {
                if let Err(e) = serve_recording(&recording, &*merged, &matcher, &*events).await {
                    events(Event::Note(&e.to_string()));
                }
                running.end();
            });
        }
        let (sessions, feeds) = (running.clone(), merged.clone());
        let app: App = Box::new(move |transport: ServerTransport| {
            let (recording, matcher, events) = (recording.clone(), Matcher::clone(&matcher), events.clone());
            let (running, merged) = (sessions.clone(), feeds.clone());
            if merged.is_none() {
                running.start();
            }
            Box::pin(async move {
                if let Some(merged) = merged {
                    merged.feed(transport).await;
                    return;
                }
                if let Err(e) = serve_recording(&recording, &transport, &matcher, &*events).await {
                    events(Event::Note(&e.to_string()));
                }
                let _ = transport.close().await;
                running.end();
            })
        });
        (RecordedHttpServer { config, running, merged }, app)
    }

    /// Ends the merged script of a 2026-07-28 recording (after the server has shut down).
    pub fn stop(&self) {
        if let Some(merged) = &self.merged {
            merged.stop();
        }
    }
}
