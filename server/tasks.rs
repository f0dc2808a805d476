//! Tasks (2025-11-25, experimental): a task-augmented `tools/call` (params `task: {ttl}`) is
//! answered at once with a `CreateTaskResult` while the tool runs in the background; the
//! client then uses `tasks/get`, `tasks/result` (waits until the task is over and returns the
//! tool's result, or its JSON-RPC error), `tasks/list` and `tasks/cancel`. Status changes are
//! announced with `notifications/tasks/status`. Tasks belong to their connection and are
//! forgotten `ttl` milliseconds after creation (the requested ttl, capped at
//! [`MAX_TTL_MS`]; [`DEFAULT_TTL_MS`] when none was asked for).
//!
//! Not here: which tools may run as tasks (the dispatch reads `execution.taskSupport`).
//!
//! Spec: 2025-11-25 `basic/utilities/tasks`.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;

use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject};
use crate::proto::mcp_types::{
    CallToolResult, GetTaskResult, ListTasksResult, NotificationMeta, RelatedTaskMetadata, Task, TaskStatus,
    TaskStatusNotificationParams, RELATED_TASK_META_KEY,
};

use super::context::{Canceller, Outgoing};

/// Lifetime of a task when the client asked for none: 5 minutes.
pub const DEFAULT_TTL_MS: u64 = 300_000;
/// The longest lifetime granted: 1 hour.
pub const MAX_TTL_MS: u64 = 3_600_000;
/// Suggested milliseconds between `tasks/get` polls.
pub const POLL_INTERVAL_MS: u64 = 500;
/// Tasks listed per `tasks/list` page.
const PAGE: usize = 50;

/// What a finished task produced: the tool's result, or the JSON-RPC error the call would
/// have been answered with.
type Outcome = Result<CallToolResult, ErrorObject>;

struct Entry {
    task: Task,
    seq: u64,
    expires: Instant,
    outcome: Option<Outcome>,
    done: watch::Sender<bool>,
    abort: Option<AbortHandle>,
    canceller: Option<Canceller>,
    input_waits: usize,
}

/// The tasks of one connection.
#[derive(Default)]
pub(crate) struct TaskStore {
    tasks: Mutex<HashMap<String, Entry>>,
    seq: AtomicU64,
    notifier: OnceLock<mpsc::Sender<Task>>,
}

fn not_found(task_id: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Task not found: {task_id}"))
}

fn random_task_id() -> String {
    let a = RandomState::new().build_hasher().finish();
    let mut h = RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos());
    format!("{a:016x}{:016x}", h.finish())
}

/// `t` as ISO 8601 UTC with milliseconds, e.g. `2025-11-25T10:00:00.000Z`.
pub(crate) fn iso8601(t: SystemTime) -> String {
    crate::proto::timestamp::utc_rfc3339(t)
}

fn now_iso() -> String {
    iso8601(SystemTime::now())
}

impl TaskStore {
    /// Starts sending `notifications/tasks/status` through `outgoing` (once per connection),
    /// in order, from a task of its own.
    pub(crate) fn attach(&self, outgoing: Arc<dyn Outgoing>) {
        self.notifier.get_or_init(|| {
            let (tx, mut rx) = mpsc::channel::<Task>(256);
            crate::transport::task::spawn(async move {
                while let Some(task) = rx.recv().await {
                    let params = TaskStatusNotificationParams { task, meta: None };
                    if outgoing.clone().notify("notifications/tasks/status", Body::typed(params), None).await.is_err() {
                        return;
                    }
                }
            });
            tx
        });
    }

    fn announce(&self, task: &Task) {
        if let Some(tx) = self.notifier.get() {
            // Status notifications are optional: a full queue drops one rather than blocking.
            let _ = tx.try_send(task.clone());
        }
    }

    fn purge(tasks: &mut HashMap<String, Entry>) {
        let now = Instant::now();
        tasks.retain(|_, e| {
            let keep = e.expires > now;
            if !keep {
                if let Some(abort) = &e.abort {
                    abort.abort();
                }
            }
            keep
        });
    }

    /// A new `working` task with the requested ttl.
    pub(crate) fn create(self: &Arc<Self>, ttl: Option<u64>) -> (Task, TaskLink) {
        let ttl = ttl.unwrap_or(DEFAULT_TTL_MS).min(MAX_TTL_MS);
        let now = now_iso();
        let task = Task {
            task_id: random_task_id(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: now.clone(),
            last_updated_at: now,
            ttl: Some(ttl),
            poll_interval: Some(POLL_INTERVAL_MS),
            extra: Map::new(),
        };
        let (done, _) = watch::channel(false);
        let entry = Entry {
            task: task.clone(),
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            expires: Instant::now() + Duration::from_millis(ttl),
            outcome: None,
            done,
            abort: None,
            canceller: None,
            input_waits: 0,
        };
        let mut tasks = self.tasks.lock().expect("tasks lock");
        Self::purge(&mut tasks);
        tasks.insert(task.task_id.clone(), entry);
        let link = TaskLink { store: self.clone(), task_id: task.task_id.clone() };
        (task, link)
    }

    /// Records how to stop the task's work.
    pub(crate) fn set_running(&self, task_id: &str, abort: AbortHandle, canceller: Canceller) {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        match tasks.get_mut(task_id) {
            Some(entry) if !entry.task.status.is_terminal() => {
                entry.abort = Some(abort);
                entry.canceller = Some(canceller);
            }
            _ => abort.abort(),
        }
    }

    /// Changes a live task's status; `false` when it is gone or over.
    fn update(&self, task_id: &str, change: impl FnOnce(&mut Entry) -> bool) -> bool {
        let task = {
            let mut tasks = self.tasks.lock().expect("tasks lock");
            let Some(entry) = tasks.get_mut(task_id) else { return false };
            if entry.task.status.is_terminal() || !change(entry) {
                return false;
            }
            entry.task.last_updated_at = now_iso();
            if entry.task.status.is_terminal() {
                entry.abort = None;
                entry.canceller = None;
                entry.done.send_replace(true);
            }
            entry.task.clone()
        };
        self.announce(&task);
        true
    }

    /// The tool finished: `completed` (or `failed` for an error result or a JSON-RPC error).
    pub(crate) fn finish(&self, task_id: &str, outcome: Outcome) {
        self.update(task_id, |entry| {
            let failed = match &outcome {
                Ok(result) => result.is_error == Some(true),
                Err(_) => true,
            };
            entry.task.status = if failed { TaskStatus::Failed } else { TaskStatus::Completed };
            if let Err(e) = &outcome {
                entry.task.status_message = Some(e.message.clone());
            }
            entry.outcome = Some(outcome);
            true
        });
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, task_id: &str) -> Result<GetTaskResult, ErrorObject> {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        Self::purge(&mut tasks);
        let entry = tasks.get(task_id).ok_or_else(|| not_found(task_id))?;
        Ok(GetTaskResult { task: entry.task.clone(), meta: None })
    }

    /// `tasks/list`: oldest first, in pages with an opaque cursor.
    pub(crate) fn list(&self, cursor: Option<&str>) -> Result<ListTasksResult, ErrorObject> {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        Self::purge(&mut tasks);
        let mut all: Vec<&Entry> = tasks.values().collect();
        all.sort_by_key(|e| e.seq);
        let start = match cursor {
            None => 0,
            Some(c) => {
                let after: u64 = c
                    .parse()
                    .map_err(|_| ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid cursor {c:?}")))?;
                all.iter().position(|e| e.seq >= after).unwrap_or(all.len())
            }
        };
        let page: Vec<&Entry> = all[start..].iter().take(PAGE).copied().collect();
        let next_cursor = all.get(start + PAGE).map(|e| e.seq.to_string());
        Ok(ListTasksResult {
            tasks: page.iter().map(|e| e.task.clone()).collect(),
            next_cursor,
            ..ListTasksResult::default()
        })
    }

    /// `tasks/cancel`: a live task becomes `cancelled` and its work is stopped; a task already
    /// over is an error (-32602).
    pub(crate) fn cancel(&self, task_id: &str) -> Result<GetTaskResult, ErrorObject> {
        let (abort, canceller) = {
            let mut tasks = self.tasks.lock().expect("tasks lock");
            let entry = tasks.get_mut(task_id).ok_or_else(|| not_found(task_id))?;
            if entry.task.status.is_terminal() {
                return Err(ErrorObject::new(
                    ErrorCode::INVALID_PARAMS,
                    format!("Cannot cancel task: already in terminal status {}", entry.task.status.as_str()),
                ));
            }
            (entry.abort.take(), entry.canceller.take())
        };
        if let Some(canceller) = canceller {
            canceller.cancel();
        }
        if let Some(abort) = abort {
            abort.abort();
        }
        self.update(task_id, |entry| {
            entry.task.status = TaskStatus::Cancelled;
            entry.task.status_message = Some("The task was cancelled by request.".to_owned());
            true
        });
        self.get(task_id)
    }

    /// `tasks/result`: waits until the task is over, then its result (with the related task in
    /// `_meta`) or its error. A cancelled task is an error.
    pub(crate) async fn result(&self, task_id: &str) -> Result<Value, ErrorObject> {
        let mut done = {
            let tasks = self.tasks.lock().expect("tasks lock");
            let entry = tasks.get(task_id).ok_or_else(|| not_found(task_id))?;
            entry.done.subscribe()
        };
        // The sender lives in the entry; a purged entry ends the wait as "not found".
        let _ = done.wait_for(|d| *d).await;
        let tasks = self.tasks.lock().expect("tasks lock");
        let entry = tasks.get(task_id).ok_or_else(|| not_found(task_id))?;
        match &entry.outcome {
            Some(Ok(result)) => {
                let mut value = serde_json::to_value(result).expect("a tool result serializes");
                let related =
                    serde_json::to_value(RelatedTaskMetadata { task_id: task_id.to_owned(), extra: Map::new() })
                        .expect("related task serializes");
                if let Value::Object(map) = &mut value {
                    let meta = map.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
                    if let Value::Object(meta) = meta {
                        meta.insert(RELATED_TASK_META_KEY.to_owned(), related);
                    }
                }
                Ok(value)
            }
            Some(Err(error)) => Err(error.clone()),
            None => Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Task {task_id} was cancelled"))),
        }
    }

    /// The connection ended: stop every task still running.
    pub(crate) fn abort_all(&self) {
        let tasks = self.tasks.lock().expect("tasks lock");
        for entry in tasks.values() {
            if let Some(canceller) = &entry.canceller {
                canceller.cancel();
            }
            if let Some(abort) = &entry.abort {
                abort.abort();
            }
        }
    }
}

/// A running call's handle on its task (in its [`super::Context`]).
#[derive(Clone)]
pub(crate) struct TaskLink {
    store: Arc<TaskStore>,
    task_id: String,
}

impl TaskLink {
    pub(crate) fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The task is `input_required` until the guard is dropped (the client answered).
    pub(crate) fn enter_input_required(&self) -> InputRequired {
        self.store.update(&self.task_id, |entry| {
            entry.input_waits += 1;
            let change = entry.task.status != TaskStatus::InputRequired;
            entry.task.status = TaskStatus::InputRequired;
            change
        });
        InputRequired { link: self.clone() }
    }

    /// `_meta` tying a notification to this task.
    #[allow(dead_code)]
    pub(crate) fn notification_meta(&self) -> NotificationMeta {
        NotificationMeta {
            related_task: Some(RelatedTaskMetadata { task_id: self.task_id.clone(), extra: Map::new() }),
            ..NotificationMeta::default()
        }
    }
}

/// See [`TaskLink::enter_input_required`].
pub(crate) struct InputRequired {
    link: TaskLink,
}

impl Drop for InputRequired {
    fn drop(&mut self) {
        self.link.store.update(&self.link.task_id, |entry| {
            entry.input_waits = entry.input_waits.saturating_sub(1);
            if entry.input_waits == 0 && entry.task.status == TaskStatus::InputRequired {
                entry.task.status = TaskStatus::Working;
                return true;
            }
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_dates() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_764_064_800_123);
        assert_eq!(iso8601(t), "2025-11-25T10:00:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }

    #[tokio::test]
    async fn lifecycle_without_a_connection() {
        let store = Arc::new(TaskStore::default());
        let (task, link) = store.create(Some(10 * MAX_TTL_MS));
        assert_eq!(task.ttl, Some(MAX_TTL_MS));
        assert_eq!(store.get(&task.task_id).unwrap().task.status, TaskStatus::Working);
        {
            let _wait = link.enter_input_required();
            assert_eq!(store.get(&task.task_id).unwrap().task.status, TaskStatus::InputRequired);
        }
        assert_eq!(store.get(&task.task_id).unwrap().task.status, TaskStatus::Working);
        store.finish(&task.task_id, Ok(super::super::text_result("done")));
        let value = store.result(&task.task_id).await.unwrap();
        assert_eq!(value["content"][0]["text"], "done");
        assert_eq!(value["_meta"][RELATED_TASK_META_KEY]["taskId"], task.task_id.as_str());
        assert!(store.cancel(&task.task_id).is_err());
        assert_eq!(store.list(None).unwrap().tasks.len(), 1);
        assert_eq!(store.get("nope").unwrap_err().code, ErrorCode::INVALID_PARAMS);
    }
}
