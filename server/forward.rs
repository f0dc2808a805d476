//! Forwarding: a server whose tools, resources, prompts and completions are answered by
//! something else — another server, or many (a gateway) — instead of registered handlers.
//!
//! [`ServerBuilder::forward`](super::ServerBuilder::forward) plugs in a [`Forwarder`]; every
//! request of [`forwarded_methods`] then goes to it, params as received, with a [`Context`] of
//! its own, and its answer (a result body or a JSON-RPC error) goes back as it is. Everything
//! else stays with the server: `initialize`, `server/discover`, `ping`, `logging/setLevel` per
//! session, both eras (a 2026-07-28 result is stamped, a handler's asks to the client become
//! multi-round-trip rounds), progress (through the context), cancellation (the forwarder's
//! future is dropped), panics (-32603), shutdown (waits for forwarded requests in flight).
//! The catalogs change under the server's feet, so the forwarder announces changes with
//! [`Server::list_changed`](super::Server::list_changed).
//!
//! A method of a capability [`Forwarding`] does not advertise is -32601 and never reaches the
//! forwarder: the server's method table routes a forwardable method to the forwarder, its
//! fallback, only after the era and the capability are checked.
//!
//! Not here: argument and output schema checks (the server behind the forwarder makes them),
//! tasks (a forwarded `tools/call` runs synchronously), `resources/subscribe` (kept per session
//! by the server and not forwarded), what the forwarder does with a request.

use std::future::Future;
use std::pin::Pin;

use super::method_table;
use super::Context;
use crate::proto::jsonrpc::{Body, ErrorObject};

/// The methods a [`Forwarder`] answers: `tools/list`, `tools/call`, `resources/list`,
/// `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get` and
/// `completion/complete` (the forwardable rows of the server's method table).
pub fn forwarded_methods() -> impl Iterator<Item = &'static str> {
    method_table::forwarded_methods()
}

/// The future a forwarder returns: the result body, or the JSON-RPC error to answer.
pub type ForwardFuture = Pin<Box<dyn Future<Output = Result<Body, ErrorObject>> + Send>>;

/// One request handed to a [`Forwarder`].
#[non_exhaustive]
pub struct Forwarded {
    /// One of [`forwarded_methods`].
    pub method: &'static str,
    /// The params as the client sent them.
    pub params: Option<Body>,
    /// The request's context: progress, cancellation, log, and requests to the client.
    pub context: Context,
}

/// Answers the requests of [`forwarded_methods`]. Any
/// `Fn(Forwarded) -> impl Future<Output = Result<Body, ErrorObject>>` closure is one.
pub trait Forwarder: Send + Sync + 'static {
    /// Answers one request. The future is dropped when the client cancels the request.
    fn forward(&self, request: Forwarded) -> ForwardFuture;
}

impl<F, Fut> Forwarder for F
where
    F: Fn(Forwarded) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Body, ErrorObject>> + Send + 'static,
{
    fn forward(&self, request: Forwarded) -> ForwardFuture {
        Box::pin(self(request))
    }
}

/// Which capabilities a forwarding server advertises besides `tools` and `logging`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Forwarding {
    /// `resources` (lists and reads forwarded).
    pub resources: bool,
    /// `prompts`.
    pub prompts: bool,
    /// `completions`.
    pub completions: bool,
}

impl Forwarding {
    /// These capabilities.
    pub fn new(resources: bool, prompts: bool, completions: bool) -> Forwarding {
        Forwarding { resources, prompts, completions }
    }
}
