//! One script for a stateless HTTP server: `serve --listen` of a 2026-07-28 recording.
//!
//! A stateless Streamable HTTP server gives each POST a transport of its own, but a 2026-07-28
//! session is still one script: a `subscriptions/listen` POST stays open while later POSTs run,
//! and a notification one of them causes (`notifications/resources/updated` after a `touch`)
//! travels on the listen's stream. [`MergedPosts`] joins the POSTs' transports into one
//! [`Transport`] that [`super::serve::serve_recording`] follows the script over: what any POST
//! brings in is received in order of arrival; an answer goes back on the POST that carried its
//! request, and a message related to a request (`send_related`) on that request's stream.
//!
//! Not here: the HTTP exchanges themselves (the HTTP server), the script (`serve`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use mcpwire::proto::jsonrpc::{Id, Message};
use mcpwire::transport::sse_http::ServerTransport;
use mcpwire::transport::{Transport, TransportError};

/// How many messages from POSTs may wait for the script before their POSTs wait too.
const QUEUE_DEPTH: usize = 64;

/// A message from a POST, with the POST that carried it.
type Fed = (Arc<ServerTransport>, Message);

/// The POSTs of a stateless server as one transport; [`MergedPosts::feed`] runs each new
/// POST's transport to it.
pub struct MergedPosts {
    incoming: tokio::sync::Mutex<mpsc::Receiver<Fed>>,
    feed: Mutex<Option<mpsc::Sender<Fed>>>,
    /// The POST that carried each request still unanswered, by the request's live id.
    carriers: Mutex<HashMap<Id, Arc<ServerTransport>>>,
}

impl Default for MergedPosts {
    fn default() -> Self {
        MergedPosts::new()
    }
}

impl MergedPosts {
    /// A merged transport with no POST yet.
    pub fn new() -> MergedPosts {
        let (tx, rx) = mpsc::channel(QUEUE_DEPTH);
        MergedPosts {
            incoming: tokio::sync::Mutex::new(rx),
            feed: Mutex::new(Some(tx)),
            carriers: Mutex::new(HashMap::new()),
        }
    }

    /// Runs one POST's transport: everything it receives goes to the merged transport, until
    /// the POST's exchange ends. Returns at once once [`MergedPosts::stop`] was called.
    pub async fn feed(&self, post: ServerTransport) {
        let Some(feed) = self.feed.lock().expect("feed lock").clone() else { return };
        let post = Arc::new(post);
        while let Ok(Some(message)) = post.recv().await {
            if feed.send((post.clone(), message)).await.is_err() {
                return;
            }
        }
    }

    /// Ends the merged transport: once what was fed is received, `recv` gives `None`.
    pub fn stop(&self) {
        self.feed.lock().expect("feed lock").take();
    }

    fn carrier(&self, id: &Id, done: bool) -> Option<Arc<ServerTransport>> {
        let mut carriers = self.carriers.lock().expect("carriers lock");
        if done {
            carriers.remove(id)
        } else {
            carriers.get(id).cloned()
        }
    }
}

impl Transport for MergedPosts {
    fn is_stateless(&self) -> bool {
        true
    }

    /// An answer goes back on the POST of its request; anything else has no stream of its own
    /// in a stateless server and is dropped (the script logs what it sends).
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let answer = matches!(message, Message::Response(_) | Message::Error(_));
        let carrier = match message.id() {
            Some(id) if answer => self.carrier(id, true),
            _ => None,
        };
        match carrier {
            Some(post) => post.send(message).await,
            None => Ok(()),
        }
    }

    async fn send_related(&self, message: Message, related: &Id) -> Result<(), TransportError> {
        match self.carrier(related, false) {
            Some(post) => post.send_related(message, related).await,
            None => self.send(message).await,
        }
    }

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        let Some((post, message)) = self.incoming.lock().await.recv().await else { return Ok(None) };
        if let Message::Request(request) = &message {
            self.carriers.lock().expect("carriers lock").insert(request.id.clone(), post);
        }
        Ok(Some(message))
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.stop();
        Ok(())
    }
}
