//! Our client in the 2026-07-28 era over Streamable HTTP, against a scripted server on
//! loopback that records every request's head: the `server/discover` probe re-sent at the
//! version an `UnsupportedProtocolVersion` 400 names, the request metadata headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` with Base64 where needed),
//! no session id even when the server hands one out, a tool with an invalid `x-mcp-header`
//! left out of `tools/list`, an `input_required` answer retried with the elicitation's answer;
//! a `subscriptions/listen` refused -32601 failing once, with no retry; and the fallback to
//! `initialize` when the probe gets a plain 4xx.

use crate::http_support;

use std::sync::{Arc, Mutex};

use http_support::read_request;
use mcpwire::client::{Client, ClientOptions};
use mcpwire::proto::mcp_types::{ElicitRequestParams, ElicitResult};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// One request as the server saw it: the head as written and the JSON body.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: Value,
}

impl Seen {
    /// The value of header `name` (names compare case-insensitively, values as written).
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// What the scripted server answers to a body: HTTP status and JSON body (`Value::Null`: none).
type Script = fn(&Value, usize) -> (u16, Value);

/// A server that answers every POST by `script` (given the body and how many requests of the
/// same method came before), with a session id on every answer, and records what it saw.
async fn scripted(script: Script) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while let Some((head, body)) = read_request(&mut socket, &mut buf).await {
                    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let before = {
                        let mut log = log.lock().unwrap();
                        let before = log.iter().filter(|s| s.body["method"] == body["method"]).count();
                        log.push(Seen { head: head.clone(), body: body.clone() });
                        before
                    };
                    let (status, answer) =
                        if head.starts_with("POST ") { script(&body, before) } else { (405, Value::Null) };
                    let text = if answer.is_null() { String::new() } else { answer.to_string() };
                    let response = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nmcp-session-id: should-be-ignored\r\ncontent-length: {}\r\n\r\n{text}",
                        text.len()
                    );
                    if socket.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

fn ok(body: &Value, result: Value) -> (u16, Value) {
    (200, json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
}

fn stateless_script(body: &Value, before: usize) -> (u16, Value) {
    match body["method"].as_str().unwrap_or_default() {
        "server/discover" if before == 0 => (
            400,
            json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}),
        ),
        "server/discover" => ok(
            body,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}}),
        ),
        "tools/list" => ok(
            body,
            json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": [
                {"name": "weather", "inputSchema": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "days": {"type": "integer", "x-mcp-header": "Days"},
                    "query": {"type": "string"}}}},
                {"name": "bad", "inputSchema": {"type": "object", "properties": {
                    "score": {"type": "number", "x-mcp-header": "Score"}}}},
            ]}),
        ),
        "tools/call" if body["params"].get("inputResponses").is_none() => ok(
            body,
            json!({"resultType": "input_required", "requestState": "opaque", "inputRequests": {"confirm": {
                "method": "elicitation/create",
                "params": {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}}}}),
        ),
        "tools/call" => ok(body, json!({"resultType": "complete", "content": [{"type": "text", "text": "sunny"}]})),
        _ => {
            (404, json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "Method not found"}}))
        }
    }
}

async fn accept(_: ElicitRequestParams) -> Result<ElicitResult, mcpwire::proto::jsonrpc::ErrorObject> {
    Ok(serde_json::from_value(json!({"action": "accept", "content": {}})).unwrap())
}

#[tokio::test]
async fn a_stateless_session_over_http_sends_the_request_metadata_headers() {
    let (url, seen) = scripted(stateless_script).await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(url)).unwrap();
    let client = Client::connect(transport, ClientOptions::default().with_elicitation(accept)).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_info().name, "scripted");

    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["weather"], "the tool with an x-mcp-header on a number is left out");

    let arguments = json!({"region": "Hello, 世界", "days": 3, "query": "rain?"});
    let result = client.call_tool("weather", arguments.as_object().cloned(), Default::default()).await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap(), json!([{"type": "text", "text": "sunny"}]));

    let seen = seen.lock().unwrap().clone();
    let methods: Vec<&str> = seen.iter().map(|s| s.body["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["server/discover", "server/discover", "tools/list", "tools/call", "tools/call"]);
    for s in &seen {
        assert_eq!(s.header("mcp-protocol-version"), Some("2026-07-28"), "{s:?}");
        assert_eq!(s.header("mcp-method"), s.body["method"].as_str(), "{s:?}");
        assert_eq!(s.header("mcp-session-id"), None, "no session in 2026-07-28: {s:?}");
        assert_eq!(s.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    }
    for call in &seen[3..] {
        assert_eq!(call.header("mcp-name"), Some("weather"));
        assert_eq!(call.header("mcp-param-region"), Some("=?base64?SGVsbG8sIOS4lueVjA==?="));
        assert_eq!(call.header("mcp-param-days"), Some("3"));
        assert_eq!(call.header("mcp-param-query"), None, "not designated");
    }
    assert_eq!(seen[2].header("mcp-name"), None, "tools/list has no name");
    assert_eq!(seen[4].body["params"]["requestState"], "opaque");
    assert_eq!(seen[4].body["params"]["inputResponses"], json!({"confirm": {"action": "accept", "content": {}}}));
    assert_ne!(seen[3].body["id"], seen[4].body["id"]);
}

#[tokio::test]
async fn the_tasks_extensions_requests_carry_their_task_id_in_mcp_name() {
    use mcpwire::proto::jsonrpc::Message;
    use mcpwire::transport::Transport;
    let (url, seen) = scripted(stateless_script).await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(url)).unwrap();
    transport.set_protocol_version(Some(ProtocolVersion::V2026_07_28));
    for (n, method) in ["tasks/get", "tasks/update", "tasks/cancel"].into_iter().enumerate() {
        let request = json!({"jsonrpc": "2.0", "id": n, "method": method, "params": {"taskId": format!("task-{n}"),
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        transport.send(Message::from_str(&request.to_string()).unwrap()).await.unwrap();
        let answer = transport.recv().await.unwrap().expect("the scripted server's answer");
        assert_eq!(answer.id(), Some(&mcpwire::proto::jsonrpc::Id::Number(n as i64)));
    }
    let seen = seen.lock().unwrap().clone();
    let names: Vec<Option<&str>> = seen.iter().map(|s| s.header("mcp-name")).collect();
    // The server checks `Mcp-Name` against `params.taskId` for these (proto::envelope::name_member).
    assert_eq!(names, [Some("task-0"), Some("task-1"), Some("task-2")]);
}

fn legacy_script(body: &Value, _: usize) -> (u16, Value) {
    match body["method"].as_str().unwrap_or_default() {
        // A handshake-era server: a request before initialize is refused with a plain 400.
        "server/discover" => (400, Value::Null),
        "initialize" => ok(
            body,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}}),
        ),
        "notifications/initialized" => (202, Value::Null),
        "tools/list" => ok(body, json!({"tools": []})),
        _ => (404, Value::Null),
    }
}

#[tokio::test]
async fn a_plain_4xx_to_the_probe_falls_back_to_initialize_on_the_same_transport() {
    let (url, seen) = scripted(legacy_script).await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(url).open_get_stream(false)).unwrap();
    let client = Client::connect(transport, ClientOptions::default()).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    client.list_tools().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let methods: Vec<&str> = seen.iter().map(|s| s.body["method"].as_str().unwrap_or("")).collect();
    assert_eq!(methods, ["server/discover", "initialize", "notifications/initialized", "tools/list"]);
    assert_eq!(seen[1].header("mcp-protocol-version"), None, "initialize carries no version header");
    assert_eq!(seen[1].header("mcp-method"), None, "no 2026 headers after the fallback");
    assert_eq!(seen[3].header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(seen[3].header("mcp-session-id"), Some("should-be-ignored"), "the handshake era keeps the session");
}

#[tokio::test]
async fn a_server_without_subscriptions_listen_refuses_it_once() {
    let (url, seen) = scripted(stateless_script).await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(url)).unwrap();
    let client = Client::connect(transport, ClientOptions::default()).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let filter = mcpwire::proto::mcp_types::SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let err = client.listen(filter).await.unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code.0), Some(-32601), "{err}");
    let listens: Vec<Seen> =
        seen.lock().unwrap().iter().filter(|s| s.body["method"] == "subscriptions/listen").cloned().collect();
    assert_eq!(listens.len(), 1, "one request, no retry: {listens:?}");
    assert_eq!(listens[0].header("Mcp-Method"), Some("subscriptions/listen"));
    assert_eq!(listens[0].body["params"]["notifications"], json!({"toolsListChanged": true}));
    assert_eq!(listens[0].body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    // The connection goes on.
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
}
