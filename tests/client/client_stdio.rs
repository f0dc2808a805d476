//! Our client against the real `@modelcontextprotocol/server-everything` over stdio: the
//! handshake, its tools, `echo` and `get-sum`, and a failing call (an unknown tool is an
//! `isError: true` result from this server, not a JSON-RPC error).

use crate::support;

use std::sync::{Arc, Mutex};

use mcpwire::client::{Client, ClientOptions};
use mcpwire::proto::jsonrpc::Notification;
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::stdio::{ChildCommand, StdioTransport};
use serde_json::json;

fn everything() -> ChildCommand {
    ChildCommand::new(support::peer("MCP_NODE")).arg(support::peer("MCP_EVERYTHING_JS")).arg("stdio")
}

async fn connect(options: ClientOptions) -> Client<StdioTransport> {
    Client::spawn(everything(), options).await.expect("connects to server-everything")
}

fn texts(result: &CallToolResult) -> Vec<&str> {
    result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => t.text.as_str(),
            other => panic!("expected text, got {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn handshake_lists_and_calls_tools() {
    let notes: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = notes.clone();
    let options = ClientOptions::default().with_handler(move |n: Notification| sink.lock().unwrap().push(n.method));
    let client = connect(options).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.server_info().name, "mcp-servers/everything");
    assert!(client.capabilities().tools.is_some());
    assert!(client.instructions().is_some_and(|i| i.contains("Everything Server")));

    let tools = client.list_tools().await.unwrap();
    let echo = tools.iter().find(|t| t.name == "echo").expect("echo is listed");
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");
    let sum = tools.iter().find(|t| t.name == "get-sum").expect("get-sum is listed");
    assert_eq!(sum.input_schema["required"], json!(["a", "b"]));

    let result = client
        .call_tool("echo", json!({"message": "Hello, MCP!"}).as_object().cloned(), Default::default())
        .await
        .unwrap();
    assert_eq!(texts(&result), ["Echo: Hello, MCP!"]);
    assert_eq!(result.is_error, None);

    let result =
        client.call_tool("get-sum", json!({"a": 2, "b": 40}).as_object().cloned(), Default::default()).await.unwrap();
    assert_eq!(texts(&result), ["The sum of 2 and 40 is 42."]);

    client.ping().await.unwrap();
    // The server announces its tool list before it answers initialize (a quirk of this peer).
    assert!(notes.lock().unwrap().iter().any(|m| m == "notifications/tools/list_changed"), "{notes:?}");
}

#[tokio::test]
async fn failing_calls_are_results_with_is_error() {
    let client = connect(ClientOptions::default()).await;
    let result = client.call_tool("no-such-tool", None, Default::default()).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(texts(&result), ["MCP error -32602: Tool no-such-tool not found"]);

    let result = client
        .call_tool("get-sum", json!({"a": "one", "b": 2}).as_object().cloned(), Default::default())
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(texts(&result)[0].contains("Invalid arguments for tool get-sum"), "{result:?}");
}

#[tokio::test]
async fn older_versions_are_negotiated_and_calls_run_concurrently() {
    let options = ClientOptions::default().with_protocol_version(ProtocolVersion::V2024_11_05);
    let client = connect(options).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2024_11_05);
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                client.call_tool("get-sum", json!({"a": i, "b": 1}).as_object().cloned(), Default::default()).await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let result = call.await.unwrap().unwrap();
        assert_eq!(texts(&result), [format!("The sum of {i} and 1 is {}.", i + 1)]);
    }
    client.close().await.unwrap();
    assert!(client.exit_status().is_some(), "stopped and reaped");
    assert!(client.ping().await.is_err(), "no calls after close");
}
