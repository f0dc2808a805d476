//! The `agent` example driven by a scripted client (sampling answered with `list_dir`, then
//! `read_file`, then `write_file`, then a final text; elicitation approving or declining the
//! write), over stdio (the example as a child process) and over HTTP.

use crate::client;
use crate::examples;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use client::{call_seen, connect_slow, Answer, Seen};
use mcpwire::proto::jsonrpc::ErrorObject;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use mcpwire::transport::stdio::ChildCommand;
use mcpwire::transport::Transport;
use serde_json::{json, Value};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-agent-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("input.txt"), "hello agent\n").unwrap();
    dir
}

/// The host's side: a scripted "model" and a user who approves writes unless the path holds
/// `deny`. The goal's last word is the file to write.
fn host() -> Answer {
    Arc::new(|method: &str, params: &Value| -> Result<Value, ErrorObject> {
        match method {
            "sampling/createMessage" => {
                let messages = params["messages"].as_array().unwrap();
                let goal = messages[0]["content"]["text"].as_str().unwrap();
                let target = goal.split_whitespace().last().unwrap();
                let tool_use = |id: &str, name: &str, input: Value| {
                    json!({"role": "assistant", "model": "scripted", "stopReason": "toolUse",
                           "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]})
                };
                Ok(match messages.len() {
                    1 => tool_use("1", "list_dir", json!({"path": "."})),
                    3 => tool_use("2", "read_file", json!({"path": "input.txt"})),
                    5 => {
                        let read = messages[4]["content"][0]["content"][0]["text"].as_str().unwrap();
                        tool_use("3", "write_file", json!({"path": target, "content": read.to_uppercase()}))
                    }
                    _ => json!({"role": "assistant", "model": "scripted", "stopReason": "endTurn",
                                "content": {"type": "text", "text": format!("done: {goal}")}}),
                })
            }
            "elicitation/create" => {
                let approve = !params["message"].as_str().unwrap().contains("deny");
                Ok(json!({"action": "accept", "content": {"approve": approve}}))
            }
            _ => Err(ErrorObject::new(mcpwire::proto::jsonrpc::ErrorCode::METHOD_NOT_FOUND, "Method not found")),
        }
    })
}

fn capabilities() -> Value {
    json!({"sampling": {"tools": {}}, "elicitation": {"form": {}}})
}

fn run_params(root: &Path, goal: &str, token: &str) -> Value {
    json!({"name": "run_agent", "arguments": {"goal": goal, "root": root.to_str().unwrap()}, "_meta": {"progressToken": token}})
}

async fn full_run<T: Transport>(transport: T, root: &Path) {
    let (peer, seen) = connect_slow(transport, capabilities(), host(), Duration::ZERO).await;
    let result = call_seen(&peer, &seen, run_params(root, "copy input.txt upper into out.txt", "p1")).await.unwrap();
    assert_eq!(result["isError"], Value::Null, "{result}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["steps"], 4, "{result}");
    assert_eq!(structured["filesTouched"], json!(["out.txt"]));
    assert_eq!(structured["answer"], "done: copy input.txt upper into out.txt");
    assert_eq!(std::fs::read_to_string(root.join("out.txt")).unwrap(), "HELLO AGENT\n");

    // The model was offered the actions; the write was approved first.
    let sampling = seen.requests("sampling/createMessage");
    assert_eq!(sampling.len(), 4);
    let tools: Vec<&str> =
        sampling[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["list_dir", "read_file", "search_text", "write_file"]);
    assert!(sampling[1]["messages"][2]["content"][0]["content"][0]["text"].as_str().unwrap().contains("input.txt"));
    let elicit = seen.requests("elicitation/create");
    assert_eq!(elicit.len(), 1);
    assert_eq!(elicit[0]["requestedSchema"]["properties"]["approve"]["type"], "boolean");

    // Progress with the call's token, increasing; log messages along the way.
    let progress = seen.notifications("notifications/progress");
    assert_eq!(progress.len(), 4, "{progress:?}");
    assert!(progress.iter().all(|p| p["progressToken"] == "p1"));
    assert_eq!(progress.iter().map(|p| p["progress"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3, 4]);
    let logs = seen.notifications("notifications/message");
    assert!(logs.len() >= 5, "{logs:?}");
    assert!(logs.iter().any(|l| l["data"].as_str().unwrap().contains("write_file")));

    // A declined write does not happen; an escaping path is refused.
    let result = call_seen(&peer, &seen, run_params(root, "try to write deny.txt", "p2")).await.unwrap();
    assert!(!root.join("deny.txt").exists());
    assert_eq!(result["structuredContent"]["filesTouched"], json!([]));
    let result = call_seen(&peer, &seen, run_params(root, "escape ../escape.txt", "p3")).await.unwrap();
    assert!(!root.parent().unwrap().join("escape.txt").exists());
    assert_eq!(result["structuredContent"]["filesTouched"], json!([]));
    assert_eq!(seen.requests("elicitation/create").len(), 2, "the escaping write is refused before asking");

    // Two concurrent runs do not mix.
    let (a, b) = tokio::join!(
        call_seen(&peer, &seen, run_params(root, "first run writes a.txt", "pa")),
        call_seen(&peer, &seen, run_params(root, "second run writes b.txt", "pb")),
    );
    assert_eq!(a.unwrap()["structuredContent"]["filesTouched"], json!(["a.txt"]));
    assert_eq!(b.unwrap()["structuredContent"]["filesTouched"], json!(["b.txt"]));
    assert!(root.join("a.txt").exists() && root.join("b.txt").exists());
    let _ = peer.close().await;
}

async fn cancelled_run<T: Transport>(transport: T, root: &Path) -> Seen {
    let (peer, seen) = connect_slow(transport, capabilities(), host(), Duration::from_millis(300)).await;
    let run = call_seen(&peer, &seen, run_params(root, "slow run writes late.txt", "pc"));
    // Dropping the call mid-run sends notifications/cancelled.
    assert!(tokio::time::timeout(Duration::from_millis(450), run).await.is_err());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(seen.requests("sampling/createMessage").len() <= 2, "the run went on after the cancellation");
    assert!(seen.requests("elicitation/create").is_empty());
    assert!(!root.join("late.txt").exists());
    let _ = peer.close().await;
    seen
}

fn spawn_agent() -> mcpwire::transport::stdio::StdioTransport {
    let path = examples::example_path("agent");
    ChildCommand::new(path.to_str().unwrap()).spawn().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_over_stdio() {
    let root = scratch("stdio");
    full_run(spawn_agent(), &root).await;
    let root = scratch("stdio-cancel");
    cancelled_run(spawn_agent(), &root).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_over_http() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let path = examples::example_path("agent");
    let mut child = tokio::process::Command::new(path)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let root = scratch("http");
    full_run(HttpClientTransport::new(HttpClientConfig::new(url.clone())).unwrap(), &root).await;
    let root = scratch("http-cancel");
    cancelled_run(HttpClientTransport::new(HttpClientConfig::new(url)).unwrap(), &root).await;
    let _ = child.kill().await;
}
