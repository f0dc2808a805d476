//! The handler context and tasks over Streamable HTTP (our `HttpServer` and
//! `HttpClientTransport`): cancellation, progress only with a token, requests to the client
//! refused without its capability (nothing sent), elicitation / sampling / roots round trips,
//! the roots cache, and the tasks lifecycle.

use crate::client;
use crate::support::wait_until;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use client::{call, call_seen, connect, request, Answer};
use mcpwire::proto::jsonrpc::{ErrorCode, ErrorObject};
use mcpwire::proto::mcp_types::{CreateMessageRequestParams, TaskSupport, Tool};
use mcpwire::server::{text_result, Server, ToolError};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use serde_json::{json, Value};

fn empty() -> Value {
    json!({"type": "object"})
}

/// Counts its drops: a handler holding one was dropped, not run to its end, when it counts one.
struct CountsDrop(Arc<AtomicUsize>);

impl Drop for CountsDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn server(dropped: Arc<AtomicUsize>, roots_changed: Arc<AtomicUsize>) -> Server {
    let slow = Tool::new("slow_task", empty()).task_support(TaskSupport::Required);
    let optional = Tool::new("maybe_task", empty()).task_support(TaskSupport::Optional);
    let counted =
        Tool::new("count_task", json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
            .task_support(TaskSupport::Optional);
    let ran = Arc::new(AtomicUsize::new(0));
    Server::builder()
        .on_roots_list_changed(move || {
            roots_changed.fetch_add(1, Ordering::SeqCst);
        })
        .tool("progress", "progress", empty(), |_a, ctx| async move {
            ctx.progress(1.0, Some(2.0), None).await.unwrap();
            ctx.progress(2.0, Some(2.0), None).await.unwrap();
            Ok(text_result("ok"))
        })
        .tool("hang", "waits until cancelled", empty(), move |_a, _ctx| {
            let guard = CountsDrop(dropped.clone());
            async move {
                std::future::pending::<()>().await;
                drop(guard);
                Ok(text_result("never"))
            }
        })
        .tool("ask_all", "elicit, sample, roots, ping", empty(), |_a, ctx| async move {
            let schema =
                serde_json::from_value(json!({"type": "object", "properties": {"name": {"type": "string"}}})).unwrap();
            let elicited = ctx.elicit("name?", schema).await?;
            let params: CreateMessageRequestParams = serde_json::from_value(
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}),
            )
            .unwrap();
            let sampled = ctx.create_message(params).await?;
            let roots = ctx.list_roots().await?;
            let roots_again = ctx.list_roots().await?;
            ctx.ping().await?;
            Ok(text_result(
                json!({"elicited": elicited, "sampled": sampled, "roots": roots.len(), "again": roots_again.len()})
                    .to_string(),
            ))
        })
        .tool("refused", "everything the client lacks", empty(), |_a, ctx| async move {
            let schema = serde_json::from_value(json!({"type": "object", "properties": {}})).unwrap();
            let mut refused = Vec::new();
            refused.push(ctx.elicit("x", schema).await.unwrap_err().to_string());
            refused.push(ctx.elicit_url("x", "https://example.com", "e1").await.unwrap_err().to_string());
            let params: CreateMessageRequestParams =
                serde_json::from_value(json!({"messages": [], "maxTokens": 1, "tools": []})).unwrap();
            refused.push(ctx.create_message(params).await.unwrap_err().to_string());
            refused.push(ctx.list_roots().await.unwrap_err().to_string());
            Ok(text_result(refused.join("|")))
        })
        .tool("needs_url", "returns -32042", empty(), |_a, _ctx| async move {
            let url = serde_json::from_value(
                json!({"mode": "url", "message": "log in", "url": "https://example.com/login", "elicitationId": "e9"}),
            )
            .unwrap();
            Err::<mcpwire::proto::mcp_types::CallToolResult, ToolError>(mcpwire::server::url_elicitation_required(
                "log in first",
                vec![url],
            ))
        })
        .tool_with(slow, |_a, ctx| async move {
            let schema =
                serde_json::from_value(json!({"type": "object", "properties": {"go": {"type": "boolean"}}})).unwrap();
            let answer = ctx.elicit("go?", schema).await?;
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(text_result(format!("task done {}", answer.action.as_str())))
        })
        .tool_with(optional, |_a, _ctx| async move {
            std::future::pending::<()>().await;
            Ok(text_result("never"))
        })
        .tool_with(counted, move |args, _ctx| {
            let ran = ran.clone();
            async move {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(text_result(format!("n={}", args["n"])))
            }
        })
        .build()
        .unwrap()
}

/// The server on loopback, with the count of `hang` handlers dropped and of roots changes.
async fn start() -> (HttpServer, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let dropped = Arc::new(AtomicUsize::new(0));
    let roots = Arc::new(AtomicUsize::new(0));
    let server = server(dropped.clone(), roots.clone());
    let http = server.serve_http(HttpServerConfig::default()).await.unwrap();
    (http, dropped, roots)
}

fn transport(http: &HttpServer) -> HttpClientTransport {
    HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap()
}

fn host() -> Answer {
    Arc::new(|method: &str, _params: &Value| -> Result<Value, ErrorObject> {
        match method {
            "elicitation/create" => Ok(json!({"action": "accept", "content": {"name": "Ada"}})),
            "sampling/createMessage" => {
                Ok(json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "hello"}}))
            }
            "roots/list" => Ok(json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]})),
            _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
        }
    })
}

fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_only_with_a_token_and_cancellation_stops_the_handler() {
    let (http, dropped, _) = start().await;
    let (peer, seen) = connect(transport(&http), json!({}), host()).await;
    call_seen(&peer, &seen, json!({"name": "progress", "_meta": {"progressToken": "t"}})).await.unwrap();
    assert_eq!(seen.notifications("notifications/progress").len(), 2);
    call_seen(&peer, &seen, json!({"name": "progress"})).await.unwrap();
    assert_eq!(seen.notifications("notifications/progress").len(), 2, "no token, no progress");

    let hang = call(&peer, json!({"name": "hang"}));
    assert!(tokio::time::timeout(Duration::from_millis(200), hang).await.is_err());
    wait_until(Duration::from_secs(10), "the cancelled handler is dropped", || dropped.load(Ordering::SeqCst) == 1)
        .await;
    let _ = peer.close().await;
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn round_trips_to_the_client_and_the_roots_cache() {
    let (http, _, roots_changed) = start().await;
    let caps = json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}});
    let (peer, seen) = connect(transport(&http), caps, host()).await;
    let result = call(&peer, json!({"name": "ask_all"})).await.unwrap();
    let out: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(out["elicited"], json!({"action": "accept", "content": {"name": "Ada"}}));
    assert_eq!(out["sampled"]["content"]["text"], "hello");
    assert_eq!((out["roots"].as_u64(), out["again"].as_u64()), (Some(1), Some(1)));
    assert_eq!(seen.requests("roots/list").len(), 1, "the second list came from the cache");
    assert_eq!(seen.requests("ping").len(), 1);
    peer.notify("notifications/roots/list_changed", None).await.unwrap();
    wait_until(Duration::from_secs(10), "the server hears roots changed", || roots_changed.load(Ordering::SeqCst) == 1)
        .await;
    call(&peer, json!({"name": "ask_all"})).await.unwrap();
    assert_eq!(seen.requests("roots/list").len(), 2, "the cache was invalidated");
    let _ = peer.close().await;
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_client_did_not_declare_is_refused_without_sending() {
    let (http, _, _) = start().await;
    let (peer, seen) = connect(transport(&http), json!({"sampling": {}}), host()).await;
    let result = call(&peer, json!({"name": "refused"})).await.unwrap();
    assert_eq!(
        text(&result),
        "the client did not declare the elicitation capability|the client did not declare the elicitation capability|the client did not declare the sampling.tools capability|the client did not declare the roots capability"
    );
    assert!(seen.requests.lock().unwrap().is_empty(), "nothing was sent");
    let error = call(&peer, json!({"name": "needs_url"})).await.unwrap_err().to_string();
    assert!(error.contains("-32042"), "{error}");
    let _ = peer.close().await;
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_lifecycle() {
    let (http, _, _) = start().await;
    let (peer, seen) = connect(transport(&http), json!({"elicitation": {}}), host()).await;

    // A required-task tool called without a task: -32601.
    let error = call(&peer, json!({"name": "slow_task"})).await.unwrap_err();
    assert!(error.to_string().contains("-32601"), "{error}");

    let created = call(&peer, json!({"name": "slow_task", "task": {"ttl": 60000}})).await.unwrap();
    let task_id = created["task"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(created["task"]["status"], "working");
    assert_eq!(created["task"]["ttl"], 60000);
    let got = request(&peer, "tasks/get", json!({"taskId": task_id})).await.unwrap();
    assert_eq!(got["taskId"], task_id.as_str());
    let result = request(&peer, "tasks/result", json!({"taskId": task_id})).await.unwrap();
    assert_eq!(text(&result), "task done accept");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task_id.as_str());
    let got = request(&peer, "tasks/get", json!({"taskId": task_id})).await.unwrap();
    assert_eq!(got["status"], "completed");
    let elicit = seen.requests("elicitation/create");
    assert_eq!(elicit[0]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task_id.as_str());
    let statuses = || -> Vec<String> {
        seen.notifications("notifications/tasks/status")
            .iter()
            .filter(|n| n["taskId"] == task_id.as_str())
            .map(|n| n["status"].as_str().unwrap().to_owned())
            .collect()
    };
    wait_until(Duration::from_secs(10), "three status notifications", || statuses().len() >= 3).await;
    assert_eq!(statuses(), ["input_required", "working", "completed"]);

    // Cancel a running task.
    let created = call(&peer, json!({"name": "maybe_task", "task": {}})).await.unwrap();
    let other = created["task"]["taskId"].as_str().unwrap().to_owned();
    let listed = request(&peer, "tasks/list", json!({})).await.unwrap();
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 2);
    let cancelled = request(&peer, "tasks/cancel", json!({"taskId": other})).await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    let again = request(&peer, "tasks/cancel", json!({"taskId": other})).await.unwrap_err();
    assert!(again.to_string().contains("-32602"), "{again}");
    let missing = request(&peer, "tasks/get", json!({"taskId": "nope"})).await.unwrap_err();
    assert!(missing.to_string().contains("-32602"), "{missing}");
    let _ = peer.close().await;
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_checks_its_arguments_like_a_plain_call() {
    let (http, _, _) = start().await;
    let (peer, _) = connect(transport(&http), json!({}), host()).await;
    // Valid arguments: the handler runs and its result is the task's.
    let created = call(&peer, json!({"name": "count_task", "arguments": {"n": 3}, "task": {}})).await.unwrap();
    let task_id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let result = request(&peer, "tasks/result", json!({"taskId": task_id})).await.unwrap();
    assert_eq!(text(&result), "n=3");
    // Arguments that fail the input schema: the task ends with the tool error of a plain call,
    // and the handler does not run.
    let plain = call(&peer, json!({"name": "count_task", "arguments": {"n": "three"}})).await.unwrap();
    assert_eq!(plain["isError"], true, "{plain}");
    let created = call(&peer, json!({"name": "count_task", "arguments": {"n": "three"}, "task": {}})).await.unwrap();
    let task_id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let result = request(&peer, "tasks/result", json!({"taskId": task_id})).await.unwrap();
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(text(&result), text(&plain));
    let got = request(&peer, "tasks/get", json!({"taskId": task_id})).await.unwrap();
    assert_eq!(got["status"], "failed", "{got}");
    let _ = peer.close().await;
    http.shutdown().await;
}
