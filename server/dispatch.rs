//! The dispatch: the [`Handler`] the peer's reader calls for each request of one connection.
//! It answers `initialize`, `ping` and `tools/list` at once (from a small task, since sending
//! awaits), runs each `tools/call` in a task of its own under the connection's concurrency
//! limit, aborts a call the client cancelled, turns a panic into -32603, and counts what is in
//! flight so that shutdown can wait for it.
//!
//! The era is decided per request: one whose `_meta` names a revision served per request
//! (2026-07-28) is answered from that envelope ([`Era::PerRequest`]: no handshake, removed
//! methods -32601, its result stamped; MRTR rounds and the tasks extension); any other as the
//! session's handshake says.
//!
//! Every request of both eras is routed through the server's method table (`method_table`:
//! which era serves a method, the capability it needs, its handler, forwarding as the fallback).
//!
//! Not here: the lifecycle gate, duplicate ids and the in-flight cap (the session core answers
//! those before a request gets here), or framing errors (the peer's default `on_malformed`).

mod features;
mod forwarding;
mod subscriptions;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::{Map, Value};

use tokio::sync::{Notify, Semaphore};
use tokio::task::AbortHandle;

use super::context::{cancel_pair, Canceller, Connection, InputRound, Outgoing, UntilInput};
use super::method_table::{self, Feature, Lifecycle, Prompts, Tasks, Tools};
use super::registry::SessionState;
use super::request_state::Binding;
use super::task_extension::{self, TaskAsk};
use super::tasks::{TaskLink, TaskStore};
use super::tool::Context;
use super::{schema, Inner, SUPPORTED_VERSIONS};
use crate::peer::{Handler, Peer};
use crate::proto::envelope::{self, Envelope, ResultStamp};
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject, Id, Notification, Request};
use crate::proto::mcp_types::{
    CallToolOutput, CallToolRequestParams, CallToolResult, CapabilityObject, CreateTaskResult, DiscoverResult,
    EmptyResult, InitializeRequestParams, InitializeResult, ListTasksRequestParams, ListToolsRequestParams,
    ListToolsResult, RequestMeta, ResultMeta, ResultType, ServerTaskRequests, ServerTasksCapability, TaskIdParams,
    TaskSupport, ToolsTaskRequests,
};
use crate::proto::version::ProtocolVersion;
use crate::transport::{Transport, TransportError};

/// The era a request is served in, and what its answer needs.
#[derive(Clone, Default)]
pub(crate) enum Era {
    /// The handshake era: the session's `initialize` said who the client is.
    #[default]
    Handshake,
    /// 2026-07-28: the request's `_meta` says it, and its result gets `resultType` (plus the
    /// caching fields of a cacheable result and the server's identity).
    PerRequest(Arc<PerRequest>),
}

/// What a 2026-07-28 request carried and what its result is stamped with.
pub(crate) struct PerRequest {
    pub(crate) envelope: Arc<Envelope>,
    pub(crate) stamp: ResultStamp,
}

impl Era {
    /// The outcome as it goes out: a 2026-07-28 result stamped, anything else as it is.
    pub(crate) fn finish(&self, outcome: Result<Body, ErrorObject>) -> Result<Body, ErrorObject> {
        match self {
            Era::Handshake => outcome,
            Era::PerRequest(request) => outcome.and_then(|body| {
                envelope::stamp_result(body, &request.stamp).map_err(|e| {
                    ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("the result does not serialize: {e}"))
                })
            }),
        }
    }

    /// The request's envelope, in the per-request era.
    pub(crate) fn envelope(&self) -> Option<Arc<Envelope>> {
        match self {
            Era::Handshake => None,
            Era::PerRequest(request) => Some(request.envelope.clone()),
        }
    }
}

/// Counts work in flight; [`Tracker::wait_idle`] waits until there is none.
#[derive(Clone, Default)]
pub(crate) struct Tracker {
    inner: Arc<TrackerInner>,
}

#[derive(Default)]
struct TrackerInner {
    count: AtomicUsize,
    /// Set once somebody waits for idle: until then the last guard skips the wake-up (a lock
    /// inside `Notify`, on every call that leaves nothing in flight).
    watched: AtomicBool,
    idle: Notify,
}

/// One unit of work in flight; dropping it ends it.
pub(crate) struct TrackGuard {
    tracker: Tracker,
}

impl Tracker {
    fn enter(&self) -> TrackGuard {
        self.inner.count.fetch_add(1, Ordering::AcqRel);
        TrackGuard { tracker: self.clone() }
    }

    /// Waits until nothing is in flight.
    pub(crate) async fn wait_idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // SeqCst pairs with the guard's decrement and load: either this load sees the
            // count at zero, or the guard sees `watched` and wakes us.
            self.inner.watched.store(true, Ordering::SeqCst);
            if self.inner.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for TrackGuard {
    fn drop(&mut self) {
        let inner = &self.tracker.inner;
        if inner.count.fetch_sub(1, Ordering::SeqCst) == 1 && inner.watched.load(Ordering::SeqCst) {
            inner.idle.notify_waiters();
        }
    }
}

/// Tool calls running, by request id, with a serial so that a finished call never removes a
/// later call that reused its id.
type Running = Arc<Mutex<HashMap<Id, (u64, AbortHandle, Canceller)>>>;

/// What a call's task ended with: `None` when it was aborted (cancelled: no answer), a panic
/// as -32603.
fn outcome_of(
    joined: Result<Result<CallToolResult, super::ToolError>, tokio::task::JoinError>,
    name: &str,
) -> Option<Result<CallToolResult, ErrorObject>> {
    match joined {
        Ok(Ok(result)) => Some(Ok(result)),
        Ok(Err(error)) => Some(error.into_outcome(name)),
        Err(e) if e.is_panic() => Some(Err(panicked(name, e.into_panic()))),
        Err(_) => None,
    }
}

/// A tool's `execution.taskSupport` (absent: forbidden).
fn task_support(tool: &crate::proto::mcp_types::Tool) -> TaskSupport {
    tool.execution.as_ref().and_then(|e| e.task_support.clone()).unwrap_or(TaskSupport::Forbidden)
}

pub(crate) struct Dispatcher {
    inner: Arc<Inner>,
    semaphore: Arc<Semaphore>,
    running: Running,
    serial: AtomicU64,
    tracker: Tracker,
    input_error: Arc<Mutex<Option<String>>>,
    /// This connection's logging level and subscriptions, and its id in the registry.
    session: (u64, Arc<SessionState>),
    connection: Arc<Connection>,
    tasks: Arc<TaskStore>,
    /// This connection's `subscriptions/listen` requests and their keys in the registry.
    listeners: Mutex<HashMap<Id, u64>>,
    /// The 2026-07-28 envelope this connection's last such request carried: the next request
    /// that carries the same one shares it ([`envelope::read_shared`]).
    last_envelope: Mutex<Option<Arc<Envelope>>>,
    /// The transport serves one exchange (stateless HTTP), or cannot answer once its input has
    /// ended (an HTTP session: [`Transport::outlives_its_input`]): when it ends, the client is
    /// gone and what still runs is cancelled (2026-07-28: closing the stream cancels).
    cancel_on_close: bool,
}

fn invalid_params(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {e}"))
}

/// Decodes optional params; absent params decode as `T::default()`.
fn params_or_default<T: serde::de::DeserializeOwned + Clone + Default + Send + Sync + 'static>(
    params: Option<Body>,
) -> Result<T, ErrorObject> {
    match params {
        None => Ok(T::default()),
        Some(body) => body.into_decoded().map_err(invalid_params),
    }
}

impl Dispatcher {
    /// The dispatcher of one connection: `stateless` when the transport serves one exchange;
    /// `outlives_its_input` as [`Transport::outlives_its_input`] says.
    pub(crate) fn new(inner: Arc<Inner>, stateless: bool, outlives_its_input: bool) -> Dispatcher {
        let session = inner.registry.new_session();
        let connection = Arc::new(Connection::new(
            inner.on_roots_changed.clone(),
            inner.client_request_timeout,
            (!stateless).then_some(session.0),
        ));
        Dispatcher {
            // When the input's end is the peer's, what still runs could never be answered.
            cancel_on_close: stateless || !outlives_its_input,
            session,
            semaphore: Arc::new(Semaphore::new(inner.max_concurrent_tools)),
            inner,
            running: Running::default(),
            serial: AtomicU64::new(0),
            tracker: Tracker::default(),
            input_error: Arc::default(),
            connection,
            tasks: Arc::default(),
            listeners: Mutex::default(),
            last_envelope: Mutex::default(),
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
    fn answer<T: Transport>(&self, peer: &Peer<T>, id: Id, era: &Era, outcome: Result<Body, ErrorObject>) {
        let queued = peer.respond_now(&id, era.finish(outcome));
        let guard = self.tracker.enter();
        crate::transport::task::spawn(async move {
            let _ = queued.send().await;
            drop(guard);
        });
    }

    fn initialize(&self, params: Option<Body>) -> Result<Body, ErrorObject> {
        let Some(params) = params else { return Err(invalid_params("initialize needs params")) };
        let params: InitializeRequestParams = params.into_decoded().map_err(invalid_params)?;
        let version = ProtocolVersion::server_counter_offer(&params.protocol_version, &SUPPORTED_VERSIONS)
            .expect("SUPPORTED_VERSIONS holds handshake versions");
        self.connection.set_client(params.capabilities.clone(), params.client_info.clone());
        let mut capabilities = self.inner.features.capabilities();
        if version >= ProtocolVersion::V2025_11_25 {
            capabilities.tasks = self.tasks_capability();
        }
        Ok(Body::typed(InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities,
            server_info: self.inner.info.clone(),
            instructions: self.inner.instructions.clone(),
            ..InitializeResult::default()
        }))
    }

    /// `tasks` of our capabilities: present when some tool may run as a task.
    fn tasks_capability(&self) -> Option<ServerTasksCapability> {
        let any = self
            .inner
            .registry
            .tools
            .read()
            .expect("tools lock")
            .values()
            .any(|r| matches!(task_support(&r.tool), TaskSupport::Optional | TaskSupport::Required));
        any.then(|| ServerTasksCapability {
            list: Some(CapabilityObject::default()),
            cancel: Some(CapabilityObject::default()),
            requests: Some(ServerTaskRequests {
                tools: Some(ToolsTaskRequests { call: Some(CapabilityObject::default()), ..Default::default() }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    /// The context of a handler serving request `id`.
    fn context<T: Transport>(
        &self,
        peer: &Peer<T>,
        id: &Id,
        meta: Option<Box<RequestMeta>>,
        task: Option<TaskLink>,
        era: &Era,
    ) -> (Context, Canceller) {
        let (canceller, cancel) = cancel_pair();
        let envelope = era.envelope();
        let context = Context {
            id: id.clone(),
            meta,
            protocol_version: envelope.as_ref().map(|e| e.protocol_version).or_else(|| peer.protocol_version()),
            envelope,
            input: None,
            input_key: None,
            task_ask: None,
            outgoing: peer.shared(),
            connection: self.connection.clone(),
            cancel,
            task,
            principal: peer.transport().principal(id),
            #[cfg(feature = "http")]
            http: peer.transport().http_request(id),
        };
        (context, canceller)
    }

    fn task_params(params: Option<Body>) -> Result<TaskIdParams, ErrorObject> {
        match params {
            None => Err(invalid_params("tasks requests need params")),
            Some(body) => body.into_decoded().map_err(invalid_params),
        }
    }

    /// `tasks/result` waits for the task: answered from a tracked task of its own.
    fn task_result<T: Transport>(&self, peer: &Peer<T>, id: Id, params: Option<Body>) {
        let params = match Self::task_params(params) {
            Ok(p) => p,
            Err(e) => return self.answer(peer, id, &Era::Handshake, Err(e)),
        };
        let tasks = self.tasks.clone();
        let peer = peer.clone();
        let guard = self.tracker.enter();
        crate::transport::task::spawn(async move {
            let outcome = tasks.result(&params.task_id).await.map(Body::typed);
            let _ = peer.respond(&id, outcome).await;
            drop(guard);
        });
    }

    /// Runs a call as a task: answers with the new task at once, the tool runs in the
    /// background and its outcome lands in the task store.
    fn start_task<T: Transport>(
        &self,
        peer: &Peer<T>,
        id: Id,
        params: CallToolRequestParams,
        registered: Arc<super::Registered>,
    ) {
        let outgoing: Arc<dyn Outgoing> = peer.shared();
        self.tasks.attach(outgoing);
        let ttl = params.task.as_ref().and_then(|t| t.ttl);
        let (task, link) = self.tasks.create(ttl);
        let task_id = task.task_id.clone();
        let (context, canceller) = self.context(peer, &id, params.meta, Some(link), &Era::Handshake);
        // Checked as for a plain call; a task whose arguments fail the input schema ends at once
        // with that tool error as its result, and the handler never runs.
        let checked =
            schema::check_arguments(&registered.tool, &registered.schemas, params.arguments.unwrap_or_default());
        let semaphore = self.semaphore.clone();
        let work = tokio::spawn(async move {
            let args = match checked {
                Ok(args) => args,
                Err(result) => return Ok(*result),
            };
            let _permit = semaphore.acquire_owned().await;
            let result = (registered.handler)(args, context).await?;
            Ok(schema::check_output(&registered.tool, &registered.schemas, result))
        });
        self.tasks.set_running(&task_id, work.abort_handle(), canceller);
        let tasks = self.tasks.clone();
        let name = params.name;
        let finished_id = task_id.clone();
        crate::transport::task::spawn(async move {
            if let Some(outcome) = outcome_of(work.await, &name) {
                tasks.finish(&finished_id, outcome);
            }
        });
        self.answer(
            peer,
            id,
            &Era::Handshake,
            Ok(Body::typed(CreateTaskResult { task, meta: None, extra: Default::default() })),
        );
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

    fn call_tool<T: Transport>(&self, peer: &Peer<T>, id: Id, params: Option<Body>, era: &Era) {
        let params = match params {
            None => Err(invalid_params("tools/call needs params")),
            Some(body) => body.into_decoded::<CallToolRequestParams>().map_err(invalid_params),
        };
        let mut params = match params {
            Ok(params) => params,
            Err(e) => return self.answer(peer, id, era, Err(e)),
        };
        let Some(registered) = self.inner.registry.tools.read().expect("tools lock").get(&params.name) else {
            // A protocol error, not a tool result: the spec lists an unknown tool among the
            // protocol errors (server/tools, "Error Handling": -32602 in its example).
            let unknown = ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Tool {} not found", params.name));
            return self.answer(peer, id, era, Err(unknown));
        };
        let param_headers = match era {
            Era::PerRequest(_) => peer.transport().param_headers(&id),
            Era::Handshake => None,
        };
        if let Some(headers) = param_headers {
            let arguments = params.arguments.clone().unwrap_or_default();
            let header = |name: &str| {
                let mut values = headers.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str());
                let first = values.next();
                if values.next().is_some() {
                    Err(())
                } else {
                    Ok(first)
                }
            };
            if let Err(mismatch) = envelope::check_param_headers(&registered.tool.input_schema, &arguments, header) {
                return self.answer(peer, id, era, Err(mismatch));
            }
        }
        let handler = registered.handler.clone();
        if let Era::PerRequest(request) = era {
            // 2026-07-28: the server decides; a legacy `task` param changes nothing.
            let declared = task_extension::declared(&request.envelope.client_capabilities);
            match task_support(&registered.tool) {
                TaskSupport::Required if !declared => {
                    let required = task_extension::required_capabilities();
                    let error = envelope::missing_capability(&required, task_extension::TASKS_EXTENSION);
                    return self.answer(peer, id, era, Err(error));
                }
                TaskSupport::Required | TaskSupport::Optional if declared => {
                    return self.start_extension_task(peer, id, params, registered, era);
                }
                _ => {}
            }
        }
        match (task_support(&registered.tool), params.task.is_some() && matches!(era, Era::Handshake)) {
            (TaskSupport::Required, false) => {
                let message = format!("Tool {} requires task-augmented execution", params.name);
                return self.answer(peer, id, era, Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, message)));
            }
            (TaskSupport::Required | TaskSupport::Optional, true) => {
                return self.start_task(peer, id, params, registered)
            }
            (_, true) => {
                let message = format!("Tool {} does not support task-augmented execution", params.name);
                return self.answer(peer, id, era, Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, message)));
            }
            _ => {}
        }
        let args = match schema::check_arguments(
            &registered.tool,
            &registered.schemas,
            params.arguments.take().unwrap_or_default(),
        ) {
            Ok(args) => args,
            Err(result) => return self.answer(peer, id, era, Ok(Body::typed(CallToolOutput::Result(*result)))),
        };
        let meta = params.meta.take();
        let round = RoundOf::call(&params, &args);
        let (context, canceller, input) = match self.context_with_round(peer, &id, era, meta, round) {
            Ok(opened) => opened,
            Err(e) => return self.answer(peer, id, era, Err(e)),
        };
        // Only a 2026 request may need the server's key (for its `requestState`).
        let inner = input.as_ref().map(|_| self.inner.clone());
        let semaphore = self.semaphore.clone();
        let serial = self.serial.fetch_add(1, Ordering::Relaxed);
        let guard = self.tracker.enter();
        let running = self.running.clone();
        let peer = peer.clone();
        let name = params.name;
        let request_id = id.clone();
        let finish = era.clone();
        // One future runs the handler and answers: aborting its task (the client cancelled)
        // drops the handler and sends nothing; a panic inside the handler is caught and
        // answered -32603.
        let work = Box::pin(async move {
            // The handler's outcome lives in this block only: kept across the answer's await, it
            // would make this future (boxed per call) past the allocator's small sizes.
            let answer = {
                let joined = {
                    // The semaphore is never closed. Tried first: while a permit is free this
                    // skips the `Acquire` future (its queue entry and waker), about 330
                    // instructions a call.
                    let _permit = match semaphore.try_acquire() {
                        Ok(permit) => permit,
                        Err(_) => semaphore.acquire().await.expect("the semaphore is never closed"),
                    };
                    let round = input.as_ref().map(|(round, _)| round.clone());
                    CatchUnwind(UntilInput { work: handler(args, context), round }).await
                };
                forget_running(&running, &request_id, serial);
                let outcome = match joined {
                    Ok(Some(Ok(result))) => Ok(Some(result)),
                    Ok(Some(Err(error))) => error.into_outcome(&name).map(Some),
                    Ok(None) => Ok(None),
                    Err(payload) => Err(panicked(&name, payload)),
                };
                outcome.map(|result| match result {
                    // Typed as the method's output type, so an in-process client takes it as is.
                    Some(result) => Body::typed(CallToolOutput::Result(schema::check_output(
                        &registered.tool,
                        &registered.schemas,
                        result,
                    ))),
                    None => {
                        let (round, binding) = input.as_ref().expect("only a request with a round stops for input");
                        input_required(inner.as_ref().expect("kept with the round"), round, binding)
                    }
                })
            };
            let _ = peer.respond(&request_id, finish.finish(answer)).await;
            drop(guard);
        });
        self.run_cancellable(id, serial, canceller, work);
    }

    /// Runs `work` (which answers request `id`) so that `notifications/cancelled` can stop it.
    ///
    /// Polled once here, on the reader: a call that never waits (a permit is free, the tool
    /// answers at once, the transport takes the answer) costs no task and no hop. Anything that
    /// waits goes on in a task of its own, polled again from there (the no-op waker of this
    /// first poll is never relied on).
    fn run_cancellable<F>(&self, id: Id, serial: u64, canceller: Canceller, mut work: std::pin::Pin<Box<F>>)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        if crate::transport::task::poll_once(work.as_mut()).is_ready() {
            return;
        }
        let work = crate::transport::task::spawn_boxed_for_request(work);
        self.running.lock().expect("running lock").insert(id.clone(), (serial, work.abort_handle(), canceller));
        if work.is_finished() {
            // It ended before it was registered: nothing is left to cancel.
            forget_running(&self.running, &id, serial);
        }
    }
}

impl Dispatcher {
    /// A 2026-07-28 request: served from what its `_meta` says, whatever the connection did
    /// before; its result is stamped.
    fn per_request<T: Transport>(
        &self,
        peer: &Peer<T>,
        id: Id,
        method: &str,
        params: Option<Body>,
        envelope: Arc<Envelope>,
    ) {
        let hint = self.inner.cache_hints.get(method);
        let stamp = ResultStamp {
            ttl_ms: hint.as_ref().map(|h| h.ttl_ms),
            cache_scope: hint.map(|h| h.scope.clone()),
            server_info: self.inner.info_meta.clone(),
        };
        let era = &Era::PerRequest(Arc::new(PerRequest { envelope, stamp }));
        self.route(peer, id, method, params, era);
    }

    /// Routes a request of either era through the method table: -32601 for a method the era
    /// does not serve or whose capability the server does not advertise; the forwarder, when
    /// there is one, for a forwardable method; its handler otherwise.
    fn route<T: Transport>(&self, peer: &Peer<T>, id: Id, method: &str, params: Option<Body>, era: &Era) {
        let per_request = matches!(era, Era::PerRequest(_));
        let route = method_table::find(method).filter(|route| route.serves(per_request));
        let Some(route) = route.filter(|route| route.capability.offered_by(self.inner.features)) else {
            return self.answer(peer, id, era, Err(ErrorObject::method_not_found()));
        };
        if route.forwardable && self.inner.forwarder.is_some() {
            return self.forward(peer, id, route.name, params, era);
        }
        match route.handler {
            Feature::Lifecycle(Lifecycle::Initialize) => {
                let outcome = self.initialize(params);
                self.answer(peer, id, era, outcome);
            }
            Feature::Lifecycle(Lifecycle::Ping) => self.answer(peer, id, era, Ok(Body::typed(EmptyResult::default()))),
            Feature::Lifecycle(Lifecycle::Discover) => self.answer(peer, id, era, Ok(self.discover())),
            Feature::Tools(Tools::List) => {
                let outcome = self.list_tools(params);
                self.answer(peer, id, era, outcome);
            }
            Feature::Tools(Tools::Call) => self.call_tool(peer, id, params, era),
            Feature::Resources(method) => self.resources(peer, id, (method, route.name), params, era),
            Feature::Prompts(Prompts::List) => {
                let outcome = self.list_prompts(params);
                self.answer(peer, id, era, outcome);
            }
            Feature::Prompts(Prompts::Get) => self.get_prompt(peer, id, params, era),
            Feature::Completion => self.complete(peer, id, params, era),
            Feature::Logging => {
                let outcome = self.set_level(params);
                self.answer(peer, id, era, outcome);
            }
            Feature::Tasks(method) => self.tasks(peer, id, (method, route.name), params, era),
            Feature::Subscriptions => self.listen(peer, id, params, era),
        }
    }

    /// `tasks/*`: the session's tasks in the handshake era; the tasks extension's in the
    /// per-request era, for a client that declared it.
    fn tasks<T: Transport>(
        &self,
        peer: &Peer<T>,
        id: Id,
        (method, name): (Tasks, &str),
        params: Option<Body>,
        era: &Era,
    ) {
        if let Era::PerRequest(request) = era {
            let outcome = if task_extension::declared(&request.envelope.client_capabilities) {
                self.extension_task_request(method, name, params)
            } else {
                let required = task_extension::required_capabilities();
                Err(envelope::missing_capability(&required, task_extension::TASKS_EXTENSION))
            };
            return self.answer(peer, id, era, outcome);
        }
        let outcome = match method {
            Tasks::Get => Self::task_params(params).and_then(|p| self.tasks.get(&p.task_id)).map(Body::typed),
            Tasks::Cancel => Self::task_params(params).and_then(|p| self.tasks.cancel(&p.task_id)).map(Body::typed),
            Tasks::List => params_or_default::<ListTasksRequestParams>(params)
                .and_then(|p| self.tasks.list(p.cursor.as_deref()))
                .map(Body::typed),
            Tasks::Result => return self.task_result(peer, id, params),
            // The table serves `tasks/update` only per request.
            Tasks::Update => Err(ErrorObject::method_not_found()),
        };
        self.answer(peer, id, era, outcome);
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel` of the 2026-07-28 tasks extension.
    fn extension_task_request(&self, method: Tasks, name: &str, params: Option<Body>) -> Result<Body, ErrorObject> {
        #[derive(Clone, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct TaskParams {
            task_id: String,
            #[serde(default)]
            input_responses: Option<Map<String, Value>>,
        }
        let params: TaskParams = match params {
            None => return Err(invalid_params(format!("{name} needs params"))),
            Some(body) => body.into_decoded().map_err(invalid_params)?,
        };
        let tasks = &self.inner.task_registry;
        match method {
            Tasks::Get => tasks.get(&params.task_id).map(Body::typed),
            Tasks::Update => tasks
                .update(&params.task_id, &params.input_responses.unwrap_or_default())
                .map(|()| Body::typed(EmptyResult::default())),
            Tasks::Cancel => tasks.cancel(&params.task_id).map(|()| Body::typed(EmptyResult::default())),
            // The table serves only these three per request.
            Tasks::List | Tasks::Result => Err(ErrorObject::method_not_found()),
        }
    }

    /// Runs a 2026-07-28 call of a task tool for a client of the tasks extension. The handler
    /// runs synchronously until it would wait: if it finished, the answer is its result (the
    /// extension allows that shortcut); if it asked for input, an `InputRequiredResult` (input
    /// gathered by MRTR before any task exists); otherwise the call becomes a task — the answer
    /// is the flat `CreateTaskResult` and the same handler goes on in the background, its asks
    /// from then on parking the task until `tasks/update` ([`Context::run_as_task`] is such a
    /// point of waiting, for a handler that wants its asks to park the task).
    fn start_extension_task<T: Transport>(
        &self,
        peer: &Peer<T>,
        id: Id,
        mut params: CallToolRequestParams,
        registered: Arc<super::Registered>,
        era: &Era,
    ) {
        let args = match schema::check_arguments(
            &registered.tool,
            &registered.schemas,
            params.arguments.take().unwrap_or_default(),
        ) {
            Ok(args) => args,
            Err(result) => return self.answer(peer, id, era, Ok(Body::typed(CallToolOutput::Result(*result)))),
        };
        let (round, binding) = match self.input_round(era, RoundOf::call(&params, &args)) {
            Ok(Some(input)) => input,
            Ok(None) => return self.answer(peer, id, era, Err(invalid_params("a task needs a 2026-07-28 request"))),
            Err(e) => return self.answer(peer, id, era, Err(e)),
        };
        let slot: Arc<std::sync::OnceLock<TaskAsk>> = Arc::default();
        let (mut context, canceller) = self.context(peer, &id, params.meta, None, era);
        context.input = Some(round.clone());
        context.task_ask = Some(slot.clone());
        let mut work = (registered.handler)(args, context);
        let (inner, peer, era, guard, name) =
            (self.inner.clone(), peer.clone(), era.clone(), self.tracker.enter(), params.name);
        crate::transport::task::spawn_for_request(async move {
            enum Phase {
                Done(Box<Result<CallToolResult, super::ToolError>>),
                Panicked(Box<dyn std::any::Any + Send>),
                NeedsInput,
                Waits,
            }
            let phase = std::future::poll_fn(|cx| {
                let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.as_mut().poll(cx)));
                std::task::Poll::Ready(match polled {
                    Err(payload) => Phase::Panicked(payload),
                    Ok(std::task::Poll::Ready(output)) => Phase::Done(Box::new(output)),
                    Ok(std::task::Poll::Pending) if round.has_needed() => Phase::NeedsInput,
                    Ok(std::task::Poll::Pending) => Phase::Waits,
                })
            })
            .await;
            let outcome = match phase {
                Phase::Done(done) => match *done {
                    Ok(result) => Ok(Body::typed(CallToolOutput::Result(schema::check_output(
                        &registered.tool,
                        &registered.schemas,
                        result,
                    )))),
                    Err(error) => error.into_outcome(&name).map(|result| Body::typed(CallToolOutput::Result(result))),
                },
                Phase::Panicked(payload) => Err(panicked(&name, payload)),
                Phase::NeedsInput => Ok(input_required(&inner, &round, &binding)),
                Phase::Waits => {
                    let registry = inner.task_registry.clone();
                    let (task_id, created, input) = match registry.create() {
                        Ok(created) => created,
                        Err(full) => {
                            // The handler is dropped unfinished: the client may retry later.
                            let _ = peer.respond(&id, Err(full)).await;
                            drop(guard);
                            return;
                        }
                    };
                    let ask =
                        TaskAsk { registry: registry.clone(), task_id: task_id.clone(), input, asked: Arc::default() };
                    let _ = slot.set(ask);
                    let running = tokio::spawn(async move {
                        let result = work.await?;
                        Ok(schema::check_output(&registered.tool, &registered.schemas, result))
                    });
                    registry.set_running(&task_id, running.abort_handle(), canceller);
                    crate::transport::task::spawn(async move {
                        if let Some(outcome) = outcome_of(running.await, &name) {
                            registry.finish(&task_id, outcome);
                        }
                    });
                    Ok(Body::typed(created))
                }
            };
            let _ = peer.respond(&id, era.finish(outcome)).await;
            drop(guard);
        });
    }

    /// `server/discover` (2026-07-28, answered in both eras): the revisions served per
    /// request, our capabilities, identity and instructions.
    fn discover(&self) -> Body {
        let hint = self.inner.cache_hints.get("server/discover").unwrap_or_default();
        let mut capabilities = self.inner.features.capabilities();
        if self.tasks_capability().is_some() {
            let mut extensions = Map::new();
            extensions.insert(task_extension::TASKS_EXTENSION.to_owned(), Value::Object(Map::new()));
            capabilities.extensions = Some(extensions);
        }
        Body::typed(DiscoverResult {
            supported_versions: ProtocolVersion::PER_REQUEST.iter().map(|v| v.as_str().to_owned()).collect(),
            capabilities,
            instructions: self.inner.instructions.clone(),
            result_type: Some(ResultType::Complete),
            ttl_ms: Some(hint.ttl_ms),
            cache_scope: Some(hint.scope),
            meta: Some(ResultMeta { server_info: Some(self.inner.info.clone()), ..ResultMeta::default() }),
            extra: Default::default(),
        })
    }
}

/// The answer of a 2026-07-28 request whose handler stopped on asks without answers: the asks,
/// and every answer so far sealed in `requestState`.
fn input_required(inner: &Inner, round: &InputRound, binding: &Binding) -> Body {
    let state = inner.state_key.seal(binding, &round.answers, SystemTime::now());
    Body::typed(serde_json::json!({
        "resultType": "input_required",
        "inputRequests": round.take_needed(),
        "requestState": state,
    }))
}

impl Dispatcher {
    /// The round of a 2026-07-28 request that may ask the client for input (MRTR): the answers
    /// in its `requestState` (opened for this very request) and its `inputResponses`. `None`
    /// in the handshake era.
    ///
    /// # Errors
    /// -32602 for a `requestState` that does not open or input responses that are not objects.
    fn input_round(
        &self,
        era: &Era,
        request: RoundOf<'_, impl FnOnce(&mut Vec<u8>)>,
    ) -> Result<Option<Round>, ErrorObject> {
        if matches!(era, Era::Handshake) {
            return Ok(None);
        }
        // Read only in the per-request era: the handshake era's hot path copies nothing here.
        let RoundOf { method, target, arguments, responses, state } = request;
        let binding = Binding::new(method, target, arguments);
        let mut answers = match state {
            Some(token) => self.inner.state_key.open(token, &binding, SystemTime::now()).map_err(invalid_params)?,
            None => Map::new(),
        };
        for (key, answer) in responses.into_iter().flatten() {
            if !answer.is_object() {
                return Err(invalid_params(format!("inputResponses[{key:?}] must be an object")));
            }
            answers.insert(key.clone(), answer.clone());
        }
        Ok(Some((Arc::new(InputRound::new(answers)), binding)))
    }

    /// The context of a handler serving request `id` that may ask the client for input: the
    /// request's round ([`Dispatcher::input_round`]) opened and put in the context, returned
    /// beside it for the answer (`None` in the handshake era).
    ///
    /// # Errors
    /// As [`Dispatcher::input_round`].
    fn context_with_round<T: Transport>(
        &self,
        peer: &Peer<T>,
        id: &Id,
        era: &Era,
        meta: Option<Box<RequestMeta>>,
        request: RoundOf<'_, impl FnOnce(&mut Vec<u8>)>,
    ) -> Result<(Context, Canceller, Option<Round>), ErrorObject> {
        let input = self.input_round(era, request)?;
        let (mut context, canceller) = self.context(peer, id, meta, None, era);
        context.input = input.as_ref().map(|(round, _)| round.clone());
        Ok((context, canceller, input))
    }
}

/// A 2026-07-28 request's round as it is opened: the answers so far and what binds them to
/// the request.
type Round = (Arc<InputRound>, Binding);

/// What a request that may ask the client for input carries for its round: what binds the
/// round to it (the method, its target, its arguments, read only in the per-request era) and
/// the answers it brings (`inputResponses`, `requestState`).
struct RoundOf<'a, F> {
    method: &'static str,
    target: &'a str,
    arguments: F,
    responses: Option<&'a Map<String, Value>>,
    state: Option<&'a str>,
}

impl<'a> RoundOf<'a, ()> {
    /// The round of a `tools/call` whose arguments passed the tool's input schema.
    fn call(
        params: &'a CallToolRequestParams,
        arguments: &'a Map<String, Value>,
    ) -> RoundOf<'a, impl FnOnce(&mut Vec<u8>) + 'a> {
        RoundOf {
            method: "tools/call",
            target: &params.name,
            arguments: |out: &mut Vec<u8>| write_arguments(out, arguments),
            responses: params.input_responses.as_ref(),
            state: params.request_state.as_deref(),
        }
    }
}

/// Writes `arguments` as the JSON a round's binding digests ([`Binding::new`]).
fn write_arguments<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, arguments: &T) {
    // Maps of JSON values (or of strings) always serialize, and a Vec takes every write.
    let _ = crate::proto::json_write::to_writer(out, arguments);
}

/// Removes `id` from the running calls if the entry is still the one numbered `serial` (the
/// client may have reused the id since).
fn forget_running(running: &Running, id: &Id, serial: u64) {
    let mut running = running.lock().expect("running lock");
    if running.get(id).is_some_and(|(s, _, _)| *s == serial) {
        running.remove(id);
    }
}

/// The -32603 answer to a tool that panicked.
fn panicked(name: &str, payload: Box<dyn std::any::Any + Send>) -> ErrorObject {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".to_owned());
    ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("Tool {name} panicked: {what}"))
}

/// A future whose panics become an `Err` holding the panic payload.
struct CatchUnwind<F>(pub(super) F);

impl<F: std::future::Future + Unpin> std::future::Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| std::pin::Pin::new(inner).poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(output)) => std::task::Poll::Ready(Ok(output)),
            Err(payload) => std::task::Poll::Ready(Err(payload)),
        }
    }
}

impl<T: Transport> Handler<T> for Dispatcher {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        let Request { id, method, params } = request;
        // A handshake-era request is told apart without the lock.
        if !params.as_ref().is_some_and(envelope::mentions_envelope) {
            return self.route(peer, id, &method, params, &Era::Handshake);
        }
        let mut last = self.last_envelope.lock().expect("envelope lock");
        match envelope::read_shared(params.as_ref(), &ProtocolVersion::PER_REQUEST, last.as_ref()) {
            None => {
                drop(last);
                self.route(peer, id, &method, params, &Era::Handshake)
            }
            Some(Err(refused)) => {
                drop(last);
                self.answer(peer, id, &Era::Handshake, Err(refused))
            }
            Some(Ok(envelope)) => {
                if !last.as_ref().is_some_and(|last| Arc::ptr_eq(last, &envelope)) {
                    *last = Some(envelope.clone());
                }
                drop(last);
                self.per_request(peer, id, &method, params, envelope)
            }
        }
    }

    fn on_notification(&self, _peer: &Peer<T>, notification: Notification) {
        if notification.method == "notifications/roots/list_changed" {
            self.connection.roots_changed();
        }
    }

    fn on_cancelled(&self, _peer: &Peer<T>, id: &Id) {
        self.stop_listening(id);
        if let Some((_, handle, canceller)) = self.running.lock().expect("running lock").remove(id) {
            canceller.cancel();
            handle.abort();
        }
    }

    fn on_initialized(&self, peer: &Peer<T>) {
        self.inner.registry.open_session(self.session.0, &self.session.1, peer);
    }

    fn on_closed(&self, error: Option<&TransportError>) {
        self.inner.registry.close_session(self.session.0, &self.session.1);
        if let (Some(closed), Some(session)) = (&self.inner.on_session_closed, self.connection.session) {
            closed(session);
        }
        self.tasks.abort_all();
        self.stop_all_listening();
        if self.cancel_on_close {
            for (_, (_, handle, canceller)) in self.running.lock().expect("running lock").drain() {
                canceller.cancel();
                handle.abort();
            }
        }
        if let Some(e) = error {
            *self.input_error.lock().expect("input error lock") = Some(e.to_string());
        }
    }
}
