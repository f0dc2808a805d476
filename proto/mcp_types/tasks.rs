//! Tasks (2025-11-25 only; removed in 2026-07-28): durable handles for long-running requests.
//! A task-augmented request (params `task`) is answered at once with a [`CreateTaskResult`];
//! the requester then polls `tasks/get`, fetches the real result with `tasks/result`, and may
//! list or cancel tasks. Either side may hold tasks, so every method here goes both ways.
//!
//! Not here: the task-augmented requests themselves (`tools/call` lives in `tools`) and the
//! `tasks` capabilities (in `lifecycle`).

use serde::{Deserialize, Serialize};

use super::{
    method, notification, open_string_enum_serde, Cursor, Extra, MethodInfo, NotificationMeta, RequestMeta, ResultMeta,
};

/// Where a task is in its life ("TaskStatus").
///
/// Open: an unknown status is kept in [`TaskStatus::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    /// `working`.
    Working,
    /// `input_required`: the receiver waits for an answer from the requester.
    InputRequired,
    /// `completed`: `tasks/result` has the result.
    Completed,
    /// `failed`.
    Failed,
    /// `cancelled`.
    Cancelled,
    /// Any other value, as written.
    Other(String),
}

impl TaskStatus {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Other(s) => s,
        }
    }

    /// Whether the task is over (`completed`, `failed` or `cancelled`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

impl From<String> for TaskStatus {
    fn from(s: String) -> Self {
        match s.as_str() {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            _ => TaskStatus::Other(s),
        }
    }
}

open_string_enum_serde!(TaskStatus);

/// The state of a task ("Task").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Id chosen by the receiver.
    pub task_id: String,
    /// Current status.
    pub status: TaskStatus,
    /// Human-readable detail on the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last change.
    pub last_updated_at: String,
    /// Milliseconds the task is kept after creation; required but may be `null` (unlimited),
    /// so `None` is written as `null`. A task without the member does not decode as this type
    /// (it would be written back with a `null` it did not have): a message carrying one is kept
    /// as its raw JSON instead.
    #[serde(deserialize_with = "required_nullable")]
    pub ttl: Option<u64>,
    /// Suggested milliseconds between polls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A member that must be present and may be `null`.
fn required_nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<u64>::deserialize(d)
}

/// `task` in the params of a task-augmented request: asks the receiver to run it as a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskMetadata {
    /// Requested lifetime in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Value of `_meta["io.modelcontextprotocol/related-task"]`: the task a message belongs to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The task's id.
    pub task_id: String,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The immediate answer to a task-augmented request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct CreateTaskResult {
    /// The new task.
    pub task: Task,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `tasks/get`, `tasks/result` and `tasks/cancel`: which task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task's id.
    pub task_id: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Every other member (some clients copy `task` here).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `tasks/get`.
pub type GetTaskRequestParams = TaskIdParams;
/// Params of `tasks/result`.
pub type GetTaskPayloadRequestParams = TaskIdParams;
/// Params of `tasks/cancel`.
pub type CancelTaskRequestParams = TaskIdParams;

/// A result that is a task's state (`tasks/get`, `tasks/cancel`): the [`Task`] members at the
/// top level plus `_meta`. Unknown members land in `task.extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct GetTaskResult {
    /// The task's state.
    #[serde(flatten)]
    pub task: Task,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

/// Result of `tasks/cancel`: the task's state after cancelling.
pub type CancelTaskResult = GetTaskResult;

/// Result of `tasks/result`: whatever the underlying request would have returned, kept open
/// (decode `extra` with the underlying method's result type if needed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetTaskPayloadResult {
    /// `_meta` (usually carries the related task).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// The underlying result's members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `tasks/list`.
pub type ListTasksRequestParams = super::PaginatedRequestParams;

/// Result of `tasks/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// The tasks on this page.
    pub tasks: Vec<Task>,
    /// Cursor of the next page, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/tasks/status`: the task's new state plus `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatusNotificationParams {
    /// The task's state.
    #[serde(flatten)]
    pub task: Task,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
}

method!(
    /// `tasks/get`: poll a task's state.
    GetTask, "tasks/get", Both, GetTaskRequestParams, GetTaskResult,
    since V2025_11_25, removed V2026_07_28
);
method!(
    /// `tasks/result`: fetch the underlying request's result (waits until the task is over).
    GetTaskPayload, "tasks/result", Both, GetTaskPayloadRequestParams, GetTaskPayloadResult,
    since V2025_11_25, removed V2026_07_28
);
method!(
    /// `tasks/list`: list the requester's tasks.
    ListTasks, "tasks/list", Both, ListTasksRequestParams, ListTasksResult,
    since V2025_11_25, removed V2026_07_28
);
method!(
    /// `tasks/cancel`: cancel a task.
    CancelTask, "tasks/cancel", Both, CancelTaskRequestParams, CancelTaskResult,
    since V2025_11_25, removed V2026_07_28
);
notification!(
    /// `notifications/tasks/status`: a task changed state (optional for the receiver to send).
    TaskStatusNotification, "notifications/tasks/status", Both, TaskStatusNotificationParams,
    since V2025_11_25, removed V2026_07_28
);

/// The methods declared in this module (combined into the method registry).
pub(crate) const METHODS: &[MethodInfo] = &[
    MethodInfo::request::<GetTask>(),
    MethodInfo::request::<GetTaskPayload>(),
    MethodInfo::request::<ListTasks>(),
    MethodInfo::request::<CancelTask>(),
    MethodInfo::notification::<TaskStatusNotification>(),
];

super::decode::decode_via_value!(CreateTaskResult, GetTaskResult, ListTasksResult, Task);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn round_trip<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let typed: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), v);
        typed
    }

    fn task_json() -> Value {
        json!({
            "taskId": "abc", "status": "working", "ttl": 300000,
            "createdAt": "2026-11-30T01:01:48.106Z", "lastUpdatedAt": "2026-11-30T01:01:48.106Z",
            "pollInterval": 1000, "statusMessage": "Gathering sources..."
        })
    }

    #[test]
    fn create_task_result() {
        let r: CreateTaskResult = round_trip(json!({"task": task_json()}));
        assert_eq!(r.task.status, TaskStatus::Working);
        assert_eq!(r.task.ttl, Some(300000));
        assert_eq!(r.task.poll_interval, Some(1000));
    }

    #[test]
    fn get_task_result_flattens_task_and_keeps_unknowns_once() {
        let mut v = task_json();
        v["_meta"] = json!({"io.modelcontextprotocol/related-task": {"taskId": "abc"}});
        v["vendor"] = json!(1.5);
        let r: GetTaskResult = round_trip(v);
        assert_eq!(r.task.task_id, "abc");
        assert_eq!(r.task.extra.len(), 1);
        assert_eq!(r.meta.unwrap().related_task.unwrap().task_id, "abc");
    }

    #[test]
    fn a_task_without_ttl_is_refused_and_a_typed_answer_keeps_it_as_sent() {
        let mut v = task_json();
        v.as_object_mut().unwrap().remove("ttl");
        assert!(serde_json::from_value::<Task>(v.clone()).is_err(), "ttl is required (may be null)");
        // Found by the typed_decode fuzz target: the typed decode of a tools/call answer wrote
        // such a task back with `"ttl": null`.
        let text = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 9, "result": {"task": v}})).unwrap();
        let typed = crate::proto::jsonrpc::decode_answer::<crate::proto::mcp_types::ClientTypedResults>(
            &text,
            None,
            "tools/call",
        )
        .unwrap();
        let crate::proto::jsonrpc::Payload::Single(message) = typed else { panic!("one message") };
        let back: Value = serde_json::from_slice(&message.to_vec()).unwrap();
        assert_eq!(back, serde_json::from_slice::<Value>(&text).unwrap());
    }

    #[test]
    fn null_ttl_and_unknown_status() {
        let mut v = task_json();
        v["ttl"] = Value::Null;
        v["status"] = json!("paused");
        let t: Task = round_trip(v);
        assert_eq!(t.ttl, None);
        assert_eq!(t.status, TaskStatus::Other("paused".into()));
        assert!(!t.status.is_terminal());
    }

    #[test]
    fn status_notification_and_list() {
        let n: TaskStatusNotificationParams = round_trip(task_json());
        assert!(n.meta.is_none());
        let l: ListTasksResult = round_trip(json!({"tasks": [task_json()], "_meta": {}}));
        assert_eq!(l.meta, Some(ResultMeta::default()));
        let _: ListTasksRequestParams = round_trip(json!({"cursor": "c2"}));
    }

    #[test]
    fn task_id_params_keep_copied_task_member() {
        let p: TaskIdParams = round_trip(json!({"taskId": "abc", "task": {"ttl": 60000}}));
        assert_eq!(p.task_id, "abc");
        assert_eq!(p.extra["task"], json!({"ttl": 60000}));
    }

    #[test]
    fn payload_result_is_open() {
        let r: GetTaskPayloadResult = round_trip(json!({
            "content": [{"type": "text", "text": "done"}],
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "abc"}}
        }));
        assert!(r.extra.contains_key("content"));
        assert_eq!(r.meta.unwrap().related_task.unwrap().task_id, "abc");
    }
}
