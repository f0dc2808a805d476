//! The dispatch: the [`Handler`] the peer's reader calls for each request of one connection.
//! It answers `initialize`, `ping` and `tools/list` at once (from a small task, since sending
//! awaits), runs each `tools/call` in a task of its own under the connection's concurrency
//! limit, aborts a call the client cancelled, turns a panic into -32603, and counts what is in
//! flight so that shutdown can wait for it.
//!
//! Not here: the lifecycle gate, duplicate ids and the in-flight cap (the session core answers
//! those before a request gets here), or framing errors (the peer's default `on_malformed`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, Semaphore};
use tokio::task::AbortHandle;

use super::registry::SessionState;
use super::tool::Context;
use super::{schema, Inner, SUPPORTED_VERSIONS};
use crate::peer::{Handler, Peer};
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject, Id, Request};
use crate::proto::mcp_types::{
    CallToolOutput, CallToolRequestParams, EmptyResult, InitializeRequestParams, InitializeResult,
    ListToolsRequestParams, ListToolsResult,
};
use crate::proto::version::ProtocolVersion;
use crate::transport::{Transport, TransportError};

/// Counts work in flight; [`Tracker::wait_idle`] waits until there is none.
#[derive(Clone, Default)]
pub(crate) struct Tracker {
    inner: Arc<TrackerInner>,
}

#[derive(Default)]
struct TrackerInner {
    count: AtomicUsize,
    idle: Notify,
}

/// One unit of work in flight; dropping it ends it.
pub(crate) struct TrackGuard {
    tracker: Tracker,
}

impl Tracker {
    pub(super) fn enter(&self) -> TrackGuard {
        self.inner.count.fetch_add(1, Ordering::AcqRel);
        TrackGuard { tracker: self.clone() }
    }

    /// Waits until nothing is in flight.
    pub(crate) async fn wait_idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.inner.count.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for TrackGuard {
    fn drop(&mut self) {
        if self.tracker.inner.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.tracker.inner.idle.notify_waiters();
        }
    }
}

/// Tool calls running, by request id, with a serial so that a finished call never removes a
/// later call that reused its id.
type Running = Arc<Mutex<HashMap<Id, (u64, AbortHandle)>>>;

pub(crate) struct Dispatcher {
    pub(super) inner: Arc<Inner>,
    semaphore: Arc<Semaphore>,
    running: Running,
    serial: AtomicU64,
    pub(super) tracker: Tracker,
    input_error: Arc<Mutex<Option<String>>>,
    /// This connection's logging level and subscriptions, and its id in the registry.
    pub(super) session: (u64, Arc<SessionState>),
}

pub(super) fn invalid_params(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {e}"))
}

/// Decodes optional params; absent params decode as `T::default()`.
pub(super) fn params_or_default<T: serde::de::DeserializeOwned + Clone + Default + Send + Sync + 'static>(
    params: Option<Body>,
) -> Result<T, ErrorObject> {
    match params {
        None => Ok(T::default()),
        Some(body) => body.into_decoded().map_err(invalid_params),
    }
}

impl Dispatcher {
    pub(crate) fn new(inner: Arc<Inner>) -> Dispatcher {
        Dispatcher {
            session: inner.registry.new_session(),
            semaphore: Arc::new(Semaphore::new(inner.max_concurrent_tools)),
            inner,
            running: Running::default(),
            serial: AtomicU64::new(0),
            tracker: Tracker::default(),
            input_error: Arc::default(),
        }
    }

    pub(crate) fn tracker(&self) -> Tracker {
        self.tracker.clone()
    }

    pub(crate) fn input_error(&self) -> Arc<Mutex<Option<String>>> {
        self.input_error.clone()
    }

    /// Records `outcome` as the answer to `id` now (so that an `initialize` answered here opens
    /// the gate for the requests read after it) and sends it from a tracked task.
    pub(super) fn answer<T: Transport>(&self, peer: &Peer<T>, id: Id, outcome: Result<Body, ErrorObject>) {
        let queued = peer.respond_now(&id, outcome);
        let guard = self.tracker.enter();
        tokio::spawn(async move {
            let _ = queued.send().await;
            drop(guard);
        });
    }

    fn initialize(&self, params: Option<Body>) -> Result<Body, ErrorObject> {
        let Some(params) = params else { return Err(invalid_params("initialize needs params")) };
        let params: InitializeRequestParams = params.into_decoded().map_err(invalid_params)?;
        let version = ProtocolVersion::server_counter_offer(&params.protocol_version, &SUPPORTED_VERSIONS)
            .expect("SUPPORTED_VERSIONS holds handshake versions");
        let capabilities = self.inner.features.capabilities();
        Ok(Body::typed(InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities,
            server_info: self.inner.info.clone(),
            instructions: self.inner.instructions.clone(),
            ..InitializeResult::default()
        }))
    }

    fn list_tools(&self, params: Option<Body>) -> Result<Body, ErrorObject> {
        let params: ListToolsRequestParams = params_or_default(params)?;
        let all: Vec<_> = self.inner.registry.tools.read().expect("tools lock").values().cloned().collect();
        let (page, next_cursor) = super::pagination::page(&all, params.cursor.as_deref(), self.inner.page_size)?;
        Ok(Body::typed(ListToolsResult {
            tools: page.into_iter().map(|r| r.tool.clone()).collect(),
            next_cursor,
            ..ListToolsResult::default()
        }))
    }

    fn call_tool<T: Transport>(&self, peer: &Peer<T>, id: Id, params: Option<Body>) {
        let params = match params {
            None => Err(invalid_params("tools/call needs params")),
            Some(body) => body.into_decoded::<CallToolRequestParams>().map_err(invalid_params),
        };
        let params = match params {
            Ok(params) => params,
            Err(e) => return self.answer(peer, id, Err(e)),
        };
        let Some(registered) = self.inner.registry.tools.read().expect("tools lock").get(&params.name) else {
            let result = super::error_result(format!("Tool {} not found", params.name));
            return self.answer(peer, id, Ok(Body::typed(CallToolOutput::Result(result))));
        };
        let args = params.arguments.unwrap_or_default();
        if let Err(result) = schema::check_arguments(&registered.tool, &args) {
            return self.answer(peer, id, Ok(Body::typed(CallToolOutput::Result(*result))));
        }
        let handler = registered.handler.clone();
        let context = Context {
            id: id.clone(),
            meta: params.meta,
            protocol_version: peer.protocol_version(),
            outgoing: Arc::new(peer.clone()),
        };
        let semaphore = self.semaphore.clone();
        let work = tokio::spawn(async move {
            // The semaphore is never closed.
            let _permit = semaphore.acquire_owned().await;
            handler(args, context).await
        });
        let serial = self.serial.fetch_add(1, Ordering::Relaxed);
        self.running.lock().expect("running lock").insert(id.clone(), (serial, work.abort_handle()));

        let guard = self.tracker.enter();
        let running = self.running.clone();
        let peer = peer.clone();
        let name = params.name;
        tokio::spawn(async move {
            let joined = work.await;
            {
                let mut running = running.lock().expect("running lock");
                if running.get(&id).is_some_and(|(s, _)| *s == serial) {
                    running.remove(&id);
                }
            }
            let outcome = match joined {
                // Typed as the method's output type, so an in-process client takes it as is.
                Ok(Ok(result)) => {
                    Ok(Body::typed(CallToolOutput::Result(schema::check_output(&registered.tool, result))))
                }
                Ok(Err(error)) => error.into_outcome(&name).map(|r| Body::typed(CallToolOutput::Result(r))),
                Err(e) if e.is_panic() => {
                    let payload = e.into_panic();
                    let what = payload
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a non-string payload".to_owned());
                    Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("Tool {name} panicked: {what}")))
                }
                // Aborted because the client cancelled it: no answer (the MCP rule).
                Err(_) => return drop(guard),
            };
            let _ = peer.respond(&id, outcome).await;
            drop(guard);
        });
    }
}

impl<T: Transport> Handler<T> for Dispatcher {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        let Request { id, method, params } = request;
        match method.as_str() {
            "initialize" => {
                let outcome = self.initialize(params);
                self.answer(peer, id, outcome);
            }
            "ping" => self.answer(peer, id, Ok(Body::typed(EmptyResult::default()))),
            "tools/list" => {
                let outcome = self.list_tools(params);
                self.answer(peer, id, outcome);
            }
            "tools/call" => self.call_tool(peer, id, params),
            "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "prompts/list"
            | "prompts/get"
            | "completion/complete"
            | "logging/setLevel" => self.feature(peer, id, &method, params),
            _ => self.answer(peer, id, Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found"))),
        }
    }

    fn on_cancelled(&self, _peer: &Peer<T>, id: &Id) {
        if let Some((_, handle)) = self.running.lock().expect("running lock").remove(id) {
            handle.abort();
        }
    }

    fn on_initialized(&self, peer: &Peer<T>) {
        self.inner.registry.open_session(self.session.0, &self.session.1, peer);
    }

    fn on_closed(&self, error: Option<&TransportError>) {
        self.inner.registry.close_session(self.session.0, &self.session.1);
        if let Some(e) = error {
            *self.input_error.lock().expect("input error lock") = Some(e.to_string());
        }
    }
}
