//! The typed call of every client-to-server method: ping, tools, resources (with
//! subscriptions), prompts, completion, logging, tasks and roots, each a thin layer over
//! [`Client::request`](super::Client::request). Not here: how a request is sent, retried or
//! cached (`mod.rs`, `mrtr`, `cache`).

use super::{decode_result, error_for, typed, CallOptions, Client, ClientError};

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::proto::envelope::is_reserved_meta_key;
use crate::proto::jsonrpc::Body;
use crate::proto::mcp_types::NotificationMethod;
use crate::proto::mcp_types::RequestMeta;
use crate::proto::mcp_types::{
    CallTool, CallToolOutput, CallToolRequestParams, CallToolResult, CancelTask, Complete, CompleteArgument,
    CompleteRequestParams, CompleteResult, CompletionReference, CreateTaskResult, EmptyParams, GetPrompt,
    GetPromptRequestParams, GetPromptResult, GetTask, GetTaskPayload, GetTaskPayloadResult, GetTaskResult, ListPrompts,
    ListPromptsRequestParams, ListPromptsResult, ListResourceTemplates, ListResourceTemplatesRequestParams,
    ListResourceTemplatesResult, ListResources, ListResourcesRequestParams, ListResourcesResult, ListTasks,
    ListTasksRequestParams, ListTasksResult, ListTools, ListToolsRequestParams, ListToolsResult, LoggingLevel, Method,
    Ping, Prompt, ReadResource, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate, Root,
    RootsListChanged, SetLevel, SetLevelRequestParams, Subscribe, SubscribeRequestParams, Task, TaskIdParams,
    TaskMetadata, Tool, Unsubscribe,
};
use crate::proto::session::RequestOptions;
use crate::transport::Transport;

impl<T: Transport> Client<T> {
    /// Keeps the tools a stateless HTTP connection may call: those whose `x-mcp-header`
    /// declarations are valid (Streamable HTTP, "Custom Headers from Tool Parameters"); each
    /// one left out is named through `tracing` (a warning).
    pub(super) fn admit_tools(&self, tools: &mut Vec<Tool>) {
        if self.inner.session_meta.is_some() {
            for (name, why) in self.inner.peer.transport().admit_tools(tools) {
                tracing::warn!(tool = ?name, reason = %why, "mcpwire: a tool left out of tools/list");
            }
        }
        // Remembered for typed calls (`typed`).
        self.inner.cache.lock().expect("never poisoned").outputs.extend(typed::KnownOutput::of(tools));
    }

    /// `ping`: checks that the server is alive.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn ping(&self) -> Result<(), ClientError> {
        self.request::<Ping>(EmptyParams::default(), RequestOptions::default()).await.map(drop)
    }

    /// One page of `tools/list`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_tools_page(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        let params = ListToolsRequestParams { cursor, ..ListToolsRequestParams::default() };
        let mut page = self.request::<ListTools>(params, RequestOptions::default()).await?;
        self.admit_tools(&mut page.tools);
        Ok(page)
    }

    /// Every tool, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// [`ClientError::Pagination`] when the server repeats a cursor or sends more than
    /// [`ClientOptions::max_pages`](super::ClientOptions::max_pages) pages; otherwise as any request.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let mut tools = self
            .list_all::<ListTools, _>(
                |cursor| ListToolsRequestParams { cursor, ..ListToolsRequestParams::default() },
                |page| (page.tools, page.next_cursor),
            )
            .await?;
        self.admit_tools(&mut tools);
        Ok(tools)
    }

    /// `tools/call` of tool `name` with `arguments`, made as `options` say: the longest wait
    /// (default [`ClientOptions::request_timeout`](super::ClientOptions::request_timeout)), a
    /// progress callback (then `_meta.progressToken` is set to a fresh token of ours and every
    /// `notifications/progress` for the call goes to it, from the connection's reader task: do
    /// not block), and `_meta` members to send (a `progressToken` and the keys reserved to MCP
    /// are dropped: the client writes those itself). A tool that fails is a result with
    /// `is_error: Some(true)`, not an `Err`. The call is made on behalf of the caller of the
    /// [`with_caller`](super::with_caller) scope it runs in, if any.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled` is sent).
    ///
    /// # Errors
    /// [`ClientError::Timeout`] when the wait passes first; [`ClientError::InvalidResult`] when
    /// the server answers with something other than a final tool result (this call never asks
    /// for a task: see [`Client::call_tool_as_task`]); otherwise as any request.
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        decode_tool_result(self.call_tool_raw(name, arguments, options).await?)
    }

    /// [`Client::call_tool`], the result left as the transport delivered it: raw JSON from a
    /// stdio or stream transport, a typed [`CallToolOutput`] where the transport decoded it.
    /// For a host that passes the result on (a gateway) and so need not decode it;
    /// [`decode_tool_result`] gives what `call_tool` would have.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (`notifications/cancelled` is sent).
    ///
    /// # Errors
    /// As any request. The result is not checked to be a final tool result.
    pub async fn call_tool_raw(
        &self,
        name: impl Into<String>,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<Body, ClientError> {
        let CallOptions { timeout, on_progress, reset_timeout_on_progress, mut meta } = options;
        let mut params = CallToolRequestParams { name: name.into(), arguments, ..CallToolRequestParams::default() };
        meta.retain(|key, _| key != "progressToken" && !is_reserved_meta_key(key));
        if !meta.is_empty() {
            params.meta = Some(Box::new(RequestMeta { extra: meta, ..RequestMeta::default() }));
        }
        let request = RequestOptions { timeout, reset_timeout_on_progress, ..RequestOptions::default() };
        // One future is awaited in place on each branch (an async block holding both, or
        // holding one and moving it, makes every call in flight several KiB larger: the 10k
        // load test's bound); the progress one is boxed, so a plain call does not grow by it.
        match on_progress {
            None => self.request_undecoded::<CallTool>(params, request).await,
            Some(on_progress) => {
                Box::pin(self.request_with_progress_undecoded::<CallTool>(params, request, move |p| on_progress(p)))
                    .await
            }
        }
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `resources`; otherwise as
    /// any request.
    pub async fn list_resources_page(&self, cursor: Option<String>) -> Result<ListResourcesResult, ClientError> {
        let params = ListResourcesRequestParams { cursor, ..ListResourcesRequestParams::default() };
        self.request::<ListResources>(params, RequestOptions::default()).await
    }

    /// Every resource, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// As [`Client::list_tools`]; [`ClientError::CapabilityNotSupported`] without `resources`.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.list_all::<ListResources, _>(
            |cursor| ListResourcesRequestParams { cursor, ..ListResourcesRequestParams::default() },
            |page| (page.resources, page.next_cursor),
        )
        .await
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// As [`Client::list_resources_page`].
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        let params = ListResourceTemplatesRequestParams { cursor, ..ListResourceTemplatesRequestParams::default() };
        self.request::<ListResourceTemplates>(params, RequestOptions::default()).await
    }

    /// Every resource template, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// As [`Client::list_resources`].
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.list_all::<ListResourceTemplates, _>(
            |cursor| ListResourceTemplatesRequestParams { cursor, ..ListResourceTemplatesRequestParams::default() },
            |page| (page.resource_templates, page.next_cursor),
        )
        .await
    }

    /// `resources/read`: the contents of the resource at `uri`.
    ///
    /// # Errors
    /// As [`Client::list_resources_page`].
    pub async fn read_resource(&self, uri: impl Into<String>) -> Result<ReadResourceResult, ClientError> {
        let params = ReadResourceRequestParams {
            uri: uri.into(),
            input_responses: None,
            request_state: None,
            meta: None,
            extra: Default::default(),
        };
        self.request::<ReadResource>(params, RequestOptions::default()).await
    }

    /// `resources/subscribe`: ask for `notifications/resources/updated` about `uri`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] unless the server advertised
    /// `resources.subscribe`; otherwise as any request.
    pub async fn subscribe(&self, uri: impl Into<String>) -> Result<(), ClientError> {
        let params = SubscribeRequestParams { uri: uri.into(), meta: None, extra: Default::default() };
        self.request::<Subscribe>(params, RequestOptions::default()).await.map(drop)
    }

    /// `resources/unsubscribe`.
    ///
    /// # Errors
    /// As [`Client::subscribe`].
    pub async fn unsubscribe(&self, uri: impl Into<String>) -> Result<(), ClientError> {
        let params = SubscribeRequestParams { uri: uri.into(), meta: None, extra: Default::default() };
        self.request::<Unsubscribe>(params, RequestOptions::default()).await.map(drop)
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `prompts`; otherwise as
    /// any request.
    pub async fn list_prompts_page(&self, cursor: Option<String>) -> Result<ListPromptsResult, ClientError> {
        let params = ListPromptsRequestParams { cursor, ..ListPromptsRequestParams::default() };
        self.request::<ListPrompts>(params, RequestOptions::default()).await
    }

    /// Every prompt, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// As [`Client::list_tools`]; [`ClientError::CapabilityNotSupported`] without `prompts`.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.list_all::<ListPrompts, _>(
            |cursor| ListPromptsRequestParams { cursor, ..ListPromptsRequestParams::default() },
            |page| (page.prompts, page.next_cursor),
        )
        .await
    }

    /// `prompts/get`: prompt `name` rendered with `arguments`.
    ///
    /// # Errors
    /// As [`Client::list_prompts_page`].
    pub async fn get_prompt(
        &self,
        name: impl Into<String>,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, ClientError> {
        let params = GetPromptRequestParams {
            name: name.into(),
            arguments,
            input_responses: None,
            request_state: None,
            meta: None,
            extra: Default::default(),
        };
        self.request::<GetPrompt>(params, RequestOptions::default()).await
    }

    /// `completion/complete`: suggestions for argument `name` of `reference`, given what has
    /// been typed (`value`).
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `completions`; otherwise
    /// as any request.
    pub async fn complete(
        &self,
        reference: CompletionReference,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<CompleteResult, ClientError> {
        let params = CompleteRequestParams {
            reference,
            argument: CompleteArgument { name: name.into(), value: value.into(), extra: Default::default() },
            context: None,
            meta: None,
            extra: Default::default(),
        };
        self.complete_with(params).await
    }

    /// `completion/complete` with full params (e.g. a `context` of resolved arguments).
    ///
    /// # Errors
    /// As [`Client::complete`].
    pub async fn complete_with(&self, params: CompleteRequestParams) -> Result<CompleteResult, ClientError> {
        self.request::<Complete>(params, RequestOptions::default()).await
    }

    /// Only `notifications/message` at `level` or more severe, from now on: `logging/setLevel`
    /// in the handshake era; in a stateless session, where that method is gone, every later
    /// request carries `io.modelcontextprotocol/logLevel` in its `_meta` (logging,
    /// "Per-request log level") and nothing is sent now.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `logging`; otherwise as
    /// any request.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        if let Some(meta) = &self.inner.session_meta {
            self.check_capability(SetLevel::NAME)?;
            meta.write().expect("never poisoned").set_log_level(Some(level.as_str()));
            return Ok(());
        }
        let params = SetLevelRequestParams { level, meta: None, extra: Default::default() };
        self.request::<SetLevel>(params, RequestOptions::default()).await.map(drop)
    }

    /// `tools/call` as a task (2025-11-25): the server answers at once with the task, whose
    /// state [`Client::get_task`] polls and whose result [`Client::get_task_tool_result`]
    /// fetches. `ttl_ms` is the requested lifetime.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] unless the server advertised
    /// `tasks.requests.tools.call` (and 2025-11-25 was negotiated); [`ClientError::InvalidResult`]
    /// when it answers with something other than a task; otherwise as any request.
    pub async fn call_tool_as_task(
        &self,
        mut params: CallToolRequestParams,
        ttl_ms: Option<u64>,
    ) -> Result<CreateTaskResult, ClientError> {
        let callable = self
            .capabilities()
            .tasks
            .as_ref()
            .filter(|_| self.inner.version.has_tasks())
            .and_then(|t| t.requests.as_ref())
            .and_then(|r| r.tools.as_ref())
            .and_then(|t| t.call.as_ref());
        if callable.is_none() && self.inner.strict_capabilities {
            return Err(ClientError::CapabilityNotSupported {
                method: CallTool::NAME.to_owned(),
                capability: "tasks.requests.tools.call",
            });
        }
        params.task = Some(TaskMetadata { ttl: ttl_ms, extra: Default::default() });
        match self.request::<CallTool>(params, RequestOptions::default()).await? {
            CallToolOutput::Task(task) => Ok(*task),
            CallToolOutput::Result(_) | CallToolOutput::Other(_) => Err(ClientError::InvalidResult {
                method: CallTool::NAME.to_owned(),
                source: serde::de::Error::custom("expected a task, got a final or partial result"),
            }),
        }
    }

    /// `tasks/get`: the state of task `task_id`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] when the server has no `tasks`; otherwise as any
    /// request.
    pub async fn get_task(&self, task_id: impl Into<String>) -> Result<Task, ClientError> {
        let params = TaskIdParams { task_id: task_id.into(), ..TaskIdParams::default() };
        self.request::<GetTask>(params, RequestOptions::default()).await.map(|r: GetTaskResult| r.task)
    }

    /// `tasks/result`: the result of the task's underlying request, as written (the server
    /// holds the answer until the task ends).
    ///
    /// # Errors
    /// As [`Client::get_task`].
    pub async fn get_task_result(
        &self,
        task_id: impl Into<String>,
        options: RequestOptions,
    ) -> Result<GetTaskPayloadResult, ClientError> {
        let params = TaskIdParams { task_id: task_id.into(), ..TaskIdParams::default() };
        self.request::<GetTaskPayload>(params, options).await
    }

    /// `tasks/result` of a task made by [`Client::call_tool_as_task`], as a tool result.
    ///
    /// # Errors
    /// As [`Client::get_task`]; [`ClientError::InvalidResult`] when the payload is not a tool
    /// result.
    pub async fn get_task_tool_result(
        &self,
        task_id: impl Into<String>,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let payload = self.get_task_result(task_id, options).await?;
        serde_json::to_value(&payload)
            .and_then(serde_json::from_value)
            .map_err(|source| ClientError::InvalidResult { method: GetTaskPayload::NAME.to_owned(), source })
    }

    /// One page of `tasks/list`.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] without `tasks.list`; otherwise as any request.
    pub async fn list_tasks_page(&self, cursor: Option<String>) -> Result<ListTasksResult, ClientError> {
        let params = ListTasksRequestParams { cursor, ..ListTasksRequestParams::default() };
        self.request::<ListTasks>(params, RequestOptions::default()).await
    }

    /// Every task, following `nextCursor` to the last page.
    ///
    /// # Errors
    /// As [`Client::list_tools`]; [`ClientError::CapabilityNotSupported`] without `tasks.list`.
    pub async fn list_tasks(&self) -> Result<Vec<Task>, ClientError> {
        self.list_all::<ListTasks, _>(
            |cursor| ListTasksRequestParams { cursor, ..ListTasksRequestParams::default() },
            |page| (page.tasks, page.next_cursor),
        )
        .await
    }

    /// `tasks/cancel`: cancels task `task_id`; returns its state afterwards.
    ///
    /// # Errors
    /// [`ClientError::CapabilityNotSupported`] without `tasks.cancel`; otherwise as any request.
    pub async fn cancel_task(&self, task_id: impl Into<String>) -> Result<Task, ClientError> {
        let params = TaskIdParams { task_id: task_id.into(), ..TaskIdParams::default() };
        self.request::<CancelTask>(params, RequestOptions::default()).await.map(|r| r.task)
    }

    /// The roots currently answered to `roots/list` (`None` when roots were not declared, or a
    /// roots handler answers).
    pub fn roots(&self) -> Option<Vec<Root>> {
        self.inner.roots.as_ref().map(|r| r.read().expect("never poisoned").clone())
    }

    /// Replaces the roots and tells the server (`notifications/roots/list_changed`).
    ///
    /// # Errors
    /// [`ClientError::NotDeclared`] when no roots were given in [`ClientOptions::with_roots`](super::ClientOptions::with_roots)
    /// (the capability was not declared, or a [`ClientOptions::with_roots_handler`](super::ClientOptions::with_roots_handler) answers:
    /// then use [`Client::notify_roots_changed`]); otherwise as [`Client::notify_roots_changed`].
    pub async fn set_roots(&self, roots: impl IntoIterator<Item = Root>) -> Result<(), ClientError> {
        let Some(current) = &self.inner.roots else {
            return Err(ClientError::NotDeclared { capability: "roots" });
        };
        *current.write().expect("never poisoned") = roots.into_iter().collect();
        self.notify_roots_changed().await
    }

    /// Sends `notifications/roots/list_changed` (the server will ask `roots/list` again).
    ///
    /// # Errors
    /// [`ClientError::NotDeclared`] without declared roots; [`ClientError::Session`] or
    /// [`ClientError::Transport`] when it cannot be sent.
    pub async fn notify_roots_changed(&self) -> Result<(), ClientError> {
        if self.inner.declared.roots.is_none() {
            return Err(ClientError::NotDeclared { capability: "roots" });
        }
        self.inner.peer.notify(RootsListChanged::NAME, None).await.map_err(|e| error_for(RootsListChanged::NAME, e))
    }
}
/// The final tool result a `tools/call` result body holds (one from [`Client::call_tool_raw`]),
/// decoded as [`Client::call_tool`] decodes it.
///
/// # Errors
/// [`ClientError::InvalidResult`] when the body is not a tool result, or is a task or a
/// partial result.
pub fn decode_tool_result(body: Body) -> Result<CallToolResult, ClientError> {
    tool_result(decode_result::<CallToolOutput>(CallTool::NAME, body)?)
}

fn tool_result(output: CallToolOutput) -> Result<CallToolResult, ClientError> {
    match output {
        CallToolOutput::Result(result) => Ok(result),
        CallToolOutput::Task(_) | CallToolOutput::Other(_) => Err(ClientError::InvalidResult {
            method: CallTool::NAME.to_owned(),
            source: serde::de::Error::custom("expected a tool result with content, got a task or partial result"),
        }),
    }
}
