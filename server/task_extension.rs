//! The tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`, SEP-2663): for a client
//! that declares the extension in its request's `_meta`, a `tools/call` of a tool with
//! `execution.taskSupport` (`optional` or `required`) is answered at once with a flat
//! `CreateTaskResult` (`resultType: "task"`, `taskId`, `status`, `createdAt`, `lastUpdatedAt`,
//! `ttlMs`, `pollIntervalMs`) while the tool runs in the background; `tasks/get` reports the
//! task, with the tool's result inlined once `completed` (a tool error is `completed` with
//! `isError`), the JSON-RPC error once `failed`, and the pending `inputRequests` while
//! `input_required`; `tasks/update` delivers `inputResponses` (answered keys leave the pending
//! set; the task works again once none is left); `tasks/cancel` stops it (an empty ack, also
//! for a task already over). A `required` tool called by a client without the extension is
//! -32021; `tasks/*` from such a client are -32021; an unknown task id is -32602.
//!
//! The call runs synchronously until its handler first waits: a handler that finishes at once
//! is answered with its result (the extension's shortcut), one that asks for input first gets
//! MRTR rounds (`InputRequiredResult`, `requestState`) before any task exists; at the first wait
//! ([`super::Context::run_as_task`] is one) the task is created and the same handler goes on in
//! the background.
//!
//! Tasks belong to the server, not to a connection (a 2026 request has none): any request of
//! any client that knows the id reaches the task, so ids are long random strings. A task is
//! kept for its `ttlMs` after creation.
//!
//! Not here: the 2025-11-25 tasks of handshake-era sessions (`tasks`), MRTR of synchronous
//! requests (`request_state`).
//!
//! Spec: 2026-07-28 tasks extension (SEP-2663).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Map, Value};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::context::Canceller;
use super::tasks::{iso8601, DEFAULT_TTL_MS, POLL_INTERVAL_MS};
use crate::proto::jsonrpc::{ErrorCode, ErrorObject};
use crate::proto::mcp_types::{CallToolResult, ClientCapabilities};

/// Tasks kept at once (over every client); past it a task tool's call is refused with -32603
/// until tasks expire, so no client can grow the server's memory without bound.
pub(crate) const MAX_TASKS: usize = 4096;

/// The extension's identifier, in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether these client capabilities declare the tasks extension.
pub(crate) fn declared(capabilities: &ClientCapabilities) -> bool {
    capabilities.extensions.as_ref().is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

/// The capabilities object that declares the extension (for -32021's `data`).
pub(crate) fn required_capabilities() -> ClientCapabilities {
    let mut extensions = Map::new();
    extensions.insert(TASKS_EXTENSION.to_owned(), json!({}));
    ClientCapabilities { extensions: Some(extensions), ..ClientCapabilities::default() }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

struct Entry {
    status: Status,
    created: SystemTime,
    updated: SystemTime,
    expires: Instant,
    result: Option<Value>,
    error: Option<Value>,
    input: Arc<TaskInput>,
    abort: Option<AbortHandle>,
    canceller: Option<Canceller>,
}

/// The asks of a task's handler and the client's answers, delivered by `tasks/update`.
#[derive(Default)]
pub(crate) struct TaskInput {
    state: Mutex<InputState>,
    arrived: Notify,
}

#[derive(Default)]
struct InputState {
    pending: Map<String, Value>,
    answers: Map<String, Value>,
}

/// The tasks of one server.
#[derive(Default)]
pub(crate) struct TaskRegistry {
    tasks: Mutex<HashMap<String, Entry>>,
}

fn random_task_id() -> String {
    use std::fmt::Write;
    let mut bytes = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).expect("system randomness");
    bytes.iter().fold(String::with_capacity(32), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unknown(task_id: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: unknown task {task_id:?}"))
}

impl TaskRegistry {
    fn sweep(tasks: &mut HashMap<String, Entry>) {
        let now = Instant::now();
        tasks.retain(|_, e| e.expires > now);
    }

    /// A new working task; its `CreateTaskResult` and the input channel of its handler.
    ///
    /// # Errors
    /// -32603 when [`MAX_TASKS`] are kept already.
    pub(crate) fn create(&self) -> Result<(String, Value, Arc<TaskInput>), ErrorObject> {
        let id = random_task_id();
        let now = SystemTime::now();
        let input = Arc::new(TaskInput::default());
        let entry = Entry {
            status: Status::Working,
            created: now,
            updated: now,
            expires: Instant::now() + Duration::from_millis(DEFAULT_TTL_MS),
            result: None,
            error: None,
            input: input.clone(),
            abort: None,
            canceller: None,
        };
        let created = json!({
            "resultType": "task",
            "taskId": id,
            "status": "working",
            "createdAt": iso8601(now),
            "lastUpdatedAt": iso8601(now),
            "ttlMs": DEFAULT_TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        });
        let mut tasks = self.tasks.lock().expect("tasks lock");
        Self::sweep(&mut tasks);
        if tasks.len() >= MAX_TASKS {
            return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "Too many tasks: try again later"));
        }
        tasks.insert(id.clone(), entry);
        Ok((id, created, input))
    }

    pub(crate) fn set_running(&self, task_id: &str, abort: AbortHandle, canceller: Canceller) {
        if let Some(entry) = self.tasks.lock().expect("tasks lock").get_mut(task_id) {
            if entry.status.is_terminal() {
                abort.abort();
            } else {
                entry.abort = Some(abort);
                entry.canceller = Some(canceller);
            }
        }
    }

    /// The handler ended: its result (a tool error too) or the protocol error it became.
    pub(crate) fn finish(&self, task_id: &str, outcome: Result<CallToolResult, ErrorObject>) {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        let Some(entry) = tasks.get_mut(task_id) else { return };
        if entry.status.is_terminal() {
            return;
        }
        match outcome {
            Ok(result) => {
                let mut result = serde_json::to_value(result).unwrap_or_default();
                result["resultType"] = json!("complete");
                entry.result = Some(result);
                entry.status = Status::Completed;
            }
            Err(error) => {
                entry.error = Some(serde_json::to_value(error).unwrap_or_default());
                entry.status = Status::Failed;
            }
        }
        entry.updated = SystemTime::now();
        entry.abort = None;
        entry.canceller = None;
    }

    /// `tasks/get`: the task as it stands.
    ///
    /// # Errors
    /// -32602 for an unknown id.
    pub(crate) fn get(&self, task_id: &str) -> Result<Value, ErrorObject> {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        Self::sweep(&mut tasks);
        let entry = tasks.get(task_id).ok_or_else(|| unknown(task_id))?;
        let mut task = json!({
            "taskId": task_id,
            "status": entry.status.as_str(),
            "createdAt": iso8601(entry.created),
            "lastUpdatedAt": iso8601(entry.updated),
            "ttlMs": DEFAULT_TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        });
        if let Some(result) = &entry.result {
            task["result"] = result.clone();
        }
        if let Some(error) = &entry.error {
            task["error"] = error.clone();
        }
        if entry.status == Status::InputRequired {
            task["inputRequests"] = Value::Object(entry.input.state.lock().expect("input lock").pending.clone());
        }
        Ok(task)
    }

    /// `tasks/update`: answers to the task's pending input requests.
    ///
    /// # Errors
    /// -32602 for an unknown id or answers that are not objects.
    pub(crate) fn update(&self, task_id: &str, responses: &Map<String, Value>) -> Result<(), ErrorObject> {
        if let Some((key, _)) = responses.iter().find(|(_, v)| !v.is_object()) {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("Invalid params: inputResponses[{key:?}] must be an object"),
            ));
        }
        let mut tasks = self.tasks.lock().expect("tasks lock");
        let entry = tasks.get_mut(task_id).ok_or_else(|| unknown(task_id))?;
        {
            let mut state = entry.input.state.lock().expect("input lock");
            for (key, answer) in responses {
                state.pending.remove(key);
                state.answers.insert(key.clone(), answer.clone());
            }
            if state.pending.is_empty() && entry.status == Status::InputRequired {
                entry.status = Status::Working;
                entry.updated = SystemTime::now();
            }
        }
        entry.input.arrived.notify_waiters();
        Ok(())
    }

    /// `tasks/cancel`: stops a task still running; a task already over stays as it is.
    ///
    /// # Errors
    /// -32602 for an unknown id.
    pub(crate) fn cancel(&self, task_id: &str) -> Result<(), ErrorObject> {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        let entry = tasks.get_mut(task_id).ok_or_else(|| unknown(task_id))?;
        if !entry.status.is_terminal() {
            entry.status = Status::Cancelled;
            entry.updated = SystemTime::now();
            if let Some(canceller) = entry.canceller.take() {
                canceller.cancel();
            }
            if let Some(abort) = entry.abort.take() {
                abort.abort();
            }
        }
        Ok(())
    }

    /// The handler of `task_id` waits for input under `key`: the task is `input_required`
    /// while any ask is pending.
    fn park(&self, task_id: &str, input: &TaskInput, key: &str, request: Value) {
        input.state.lock().expect("input lock").pending.insert(key.to_owned(), request);
        if let Some(entry) = self.tasks.lock().expect("tasks lock").get_mut(task_id) {
            if !entry.status.is_terminal() {
                entry.status = Status::InputRequired;
                entry.updated = SystemTime::now();
            }
        }
    }
}

/// What a task's handler needs to ask its client: the registry, the task, its input channel.
#[derive(Clone)]
pub(crate) struct TaskAsk {
    pub(crate) registry: Arc<TaskRegistry>,
    pub(crate) task_id: String,
    pub(crate) input: Arc<TaskInput>,
    /// Asks so far, for the keys of asks made without [`super::Context::with_input_key`].
    pub(crate) asked: Arc<std::sync::atomic::AtomicUsize>,
}

impl TaskAsk {
    /// Parks the task on `request` under `key` until `tasks/update` answers it.
    pub(crate) async fn ask(&self, key: String, request: Value) -> Value {
        loop {
            let arrived = self.input.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            {
                let state = self.input.state.lock().expect("input lock");
                if let Some(answer) = state.answers.get(&key) {
                    return answer.clone();
                }
            }
            if !self.input.state.lock().expect("input lock").pending.contains_key(&key) {
                self.registry.park(&self.task_id, &self.input, &key, request.clone());
            }
            arrived.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_is_bounded() {
        let registry = TaskRegistry::default();
        for _ in 0..MAX_TASKS {
            assert!(registry.create().is_ok());
        }
        assert!(matches!(registry.create(), Err(e) if e.code == ErrorCode::INTERNAL_ERROR));
    }

    #[tokio::test]
    async fn a_task_parks_on_input_until_every_key_is_answered() {
        let registry = Arc::new(TaskRegistry::default());
        let Ok((id, created, input)) = registry.create() else { panic!("room for a task") };
        assert_eq!(created["resultType"], "task");
        assert_eq!(registry.get(&id).unwrap()["status"], "working");
        let ask = TaskAsk { registry: registry.clone(), task_id: id.clone(), input, asked: Arc::default() };
        let (a, b) = (ask.clone(), ask.clone());
        let first = tokio::spawn(async move { a.ask("a".into(), json!({"method": "elicitation/create"})).await });
        let second = tokio::spawn(async move { b.ask("b".into(), json!({"method": "elicitation/create"})).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let task = registry.get(&id).unwrap();
        assert_eq!(task["status"], "input_required");
        assert_eq!(task["inputRequests"].as_object().unwrap().len(), 2);
        registry.update(&id, json!({"a": {"action": "accept"}}).as_object().unwrap()).unwrap();
        assert_eq!(first.await.unwrap(), json!({"action": "accept"}));
        let task = registry.get(&id).unwrap();
        assert_eq!(task["status"], "input_required", "b is still pending");
        assert_eq!(task["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["b"]);
        registry.update(&id, json!({"b": {"action": "decline"}}).as_object().unwrap()).unwrap();
        assert_eq!(second.await.unwrap(), json!({"action": "decline"}));
        assert_eq!(registry.get(&id).unwrap()["status"], "working");
        registry.finish(&id, Ok(CallToolResult::default()));
        let task = registry.get(&id).unwrap();
        assert_eq!(
            (task["status"].clone(), task["result"]["resultType"].clone()),
            (json!("completed"), json!("complete"))
        );
        registry.cancel(&id).unwrap();
        assert_eq!(registry.get(&id).unwrap()["status"], "completed", "cancel leaves a finished task alone");
        assert_eq!(registry.get("nope").unwrap_err().code, ErrorCode::INVALID_PARAMS);
    }
}
