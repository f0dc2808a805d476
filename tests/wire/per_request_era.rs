//! The 2026-07-28 era per request, on the same endpoints as the handshake era: a server built
//! with `Server::builder()` answers requests whose `_meta` names 2026-07-28 without any
//! `initialize`, over Streamable HTTP (no session id; the ladder's 400/404 statuses; Mcp-*
//! header checks; `subscriptions/listen` as an SSE stream), in process and over stdio, while a
//! handshake-era session on the same server goes on as before. The Python SDK 2.3 client, in
//! its default mode, negotiates 2026-07-28 with our echo server over stdio and over HTTP.

use crate::http_support;
use crate::support;

use std::time::Duration;

use crate::echo::echo_server;
use http_support::{initialize_body, raw, BOTH, JSON, SHORT};
use mcpwire::proto::jsonrpc::Message;
use mcpwire::proto::mcp_types::LoggingLevel;
use mcpwire::server::{text_result, CacheHint, Server};
use mcpwire::transport::inproc;
use mcpwire::transport::sse_http::{HttpServer, HttpServerConfig};
use mcpwire::transport::{Limits, Transport};
use serde_json::{json, Value};

const V: &str = "2026-07-28";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    })
}

fn request(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A server with a tool that needs sampling, one that logs, one with an `x-mcp-header`
/// argument, a prompt, and a one-minute public hint on `tools/list`.
fn test_server() -> Server {
    Server::builder()
        .name("per-request")
        .instructions("be brief")
        .cache_hint("tools/list", CacheHint { ttl_ms: 60_000, scope: mcpwire::proto::mcp_types::CacheScope::Public })
        .tool("needs_sampling", "samples", json!({"type": "object"}), |_args, ctx| async move {
            let params = serde_json::from_value(json!({"messages": [], "maxTokens": 1})).unwrap();
            ctx.create_message(params).await?;
            Ok(text_result("sampled"))
        })
        .tool("logs", "logs", json!({"type": "object"}), |_args, ctx| async move {
            let _ = ctx.log(LoggingLevel::Info, None, "hello").await;
            let level = ctx.log_level().map(|l| format!("{l:?}")).unwrap_or_default();
            let client = ctx.client_info().map(|c| c.name).unwrap_or_default();
            Ok(text_result(format!("{client}:{level}:{}", ctx.is_per_request())))
        })
        .tool(
            "regional",
            "x-mcp-header",
            json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}),
            |args, _ctx| async move { Ok(text_result(args["region"].as_str().unwrap_or_default().to_owned())) },
        )
        .prompt(mcpwire::server::prompt("p", "a prompt", vec![]), |_request| async {
            Ok(mcpwire::server::prompt_result(vec![]))
        })
        .build()
        .unwrap()
}

async fn http(server: Server) -> HttpServer {
    server.serve_http(HttpServerConfig::default()).await.unwrap()
}

/// POSTs a 2026-07-28 request with correct routing headers (plus `extra`).
async fn post(
    server: &HttpServer,
    method: &str,
    name: Option<&str>,
    body: &str,
    extra: &[(&str, &str)],
) -> http_support::Raw {
    let mut headers = vec![BOTH, JSON, ("MCP-Protocol-Version", V), ("Mcp-Method", method)];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    headers.extend_from_slice(extra);
    raw(server.local_addr(), "POST", "/mcp", &headers, body, SHORT).await
}

#[tokio::test]
async fn http_serves_2026_requests_without_a_session_beside_a_handshake_session() {
    let server = http(test_server()).await;
    let discover = post(&server, "server/discover", None, &request(1, "server/discover", json!({})), &[]).await;
    assert_eq!(discover.status, 200, "{discover:?}");
    assert_eq!(discover.header("mcp-session-id"), None);
    let result = &discover.json()["result"];
    assert_eq!(result["supportedVersions"], json!([V]));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["instructions"], "be brief");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "per-request");
    assert!(result["capabilities"]["prompts"].is_object(), "{result}");
    assert_eq!((result["ttlMs"].clone(), result["cacheScope"].clone()), (json!(0), json!("private")));

    let list = post(&server, "tools/list", None, &request(2, "tools/list", json!({})), &[]).await;
    let result = &list.json()["result"];
    assert_eq!((result["ttlMs"].clone(), result["cacheScope"].clone()), (json!(60_000), json!("public")));
    assert_eq!(result["resultType"], "complete");

    // The handshake era on the same endpoint: a session as before.
    let init = raw(server.local_addr(), "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT).await;
    assert_eq!(init.status, 200);
    assert!(init.header("mcp-session-id").is_some());
    assert!(init.sse_messages()[0]["result"].get("resultType").is_none(), "{init:?}");
    assert_eq!(server.session_count(), 1, "only the handshake client has a session");
    server.shutdown().await;
}

#[tokio::test]
async fn http_answers_the_ladder_with_the_revisions_statuses() {
    let server = http(test_server()).await;
    // No _meta: -32602, 400, with the request's id.
    let bare = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}).to_string();
    let r = post(&server, "tools/list", None, &bare, &[]).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone(), r.json()["id"].clone()), (400, json!(-32602), json!(9)));
    // Unknown version in header and body: -32022 listing what we serve.
    let mut body: Value = serde_json::from_str(&request(3, "server/discover", json!({}))).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v9");
    let headers = [BOTH, JSON, ("MCP-Protocol-Version", "v9"), ("Mcp-Method", "server/discover")];
    let r = raw(server.local_addr(), "POST", "/mcp", &headers, &body.to_string(), SHORT).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["data"], json!({"supported": [V], "requested": "v9"}));
    // Header and body disagree: -32020.
    let r = post(&server, "server/discover", None, &body.to_string(), &[]).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)));
    // Mcp-Method / Mcp-Name mismatches: -32020.
    let r = post(&server, "prompts/list", None, &request(4, "tools/list", json!({})), &[]).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)));
    let call = request(5, "tools/call", json!({"name": "logs", "arguments": {}}));
    let r = post(&server, "tools/call", Some("other"), &call, &[]).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)));
    let r = post(&server, "tools/call", Some("=?base64?bG9ncw==?="), &call, &[]).await;
    assert_eq!(r.status, 200, "a base64 Mcp-Name is decoded: {r:?}");
    // Removed and unknown methods: 404 with -32601.
    for method in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such"] {
        let r = post(&server, method, None, &request(6, method, json!({})), &[]).await;
        assert_eq!((r.status, r.json()["error"]["code"].clone()), (404, json!(-32601)), "{method}");
    }
    // A missing client capability: -32021 naming it, 400.
    let call = request(7, "tools/call", json!({"name": "needs_sampling", "arguments": {}}));
    let r = post(&server, "tools/call", Some("needs_sampling"), &call, &[]).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32021);
    assert_eq!(r.json()["error"]["data"], json!({"requiredCapabilities": {"sampling": {}}}));
    // DNS-rebinding protection holds in this era too: a foreign Origin is refused first.
    let r = post(
        &server,
        "tools/list",
        None,
        &request(8, "tools/list", json!({})),
        &[("Origin", "http://evil.example.com")],
    )
    .await;
    assert_eq!(r.status, 403, "{r:?}");
    // No GET stream, no DELETE in this revision.
    for method in ["GET", "DELETE"] {
        let r = raw(server.local_addr(), method, "/mcp", &[BOTH, ("MCP-Protocol-Version", V)], "", SHORT).await;
        assert_eq!(r.status, 405, "{method}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn http_checks_mcp_param_headers_against_the_tools_schema() {
    let server = http(test_server()).await;
    let call = |region: &str| request(1, "tools/call", json!({"name": "regional", "arguments": {"region": region}}));
    let ok =
        post(&server, "tools/call", Some("regional"), &call("Hello"), &[("Mcp-Param-Region", "=?base64?SGVsbG8=?=")])
            .await;
    assert_eq!(ok.status, 200, "{ok:?}");
    assert_eq!(ok.json()["result"]["content"][0]["text"], "Hello");
    for given in [&[][..], &[("Mcp-Param-Region", "=?base64?SGVsbG8?=")], &[("Mcp-Param-Region", "Bye")]] {
        let r = post(&server, "tools/call", Some("regional"), &call("Hello"), given).await;
        assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)), "{given:?}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn logs_need_a_log_level_and_handlers_see_the_envelope() {
    let server = http(test_server()).await;
    let call = request(1, "tools/call", json!({"name": "logs", "arguments": {}}));
    let r = post(&server, "tools/call", Some("logs"), &call, &[]).await;
    assert_eq!(r.header("content-type"), Some("application/json"), "no logLevel, no log message: {r:?}");
    assert_eq!(r.json()["result"]["content"][0]["text"], "t::true");
    let mut body: Value = serde_json::from_str(&call).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let r = post(&server, "tools/call", Some("logs"), &body.to_string(), &[]).await;
    let messages = r.sse_messages();
    assert_eq!(messages[0]["method"], "notifications/message", "{r:?}");
    assert_eq!(messages[1]["result"]["content"][0]["text"], "t:Debug:true");
    server.shutdown().await;
}

#[tokio::test]
async fn subscriptions_listen_acknowledges_then_carries_what_was_asked() {
    let app = test_server();
    let server = http(app.clone()).await;
    let addr = server.local_addr();
    let listen = request(
        42,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "resourcesListChanged": true}}),
    );
    let headers = [BOTH, JSON, ("MCP-Protocol-Version", V), ("Mcp-Method", "subscriptions/listen")];
    let stream =
        tokio::spawn(async move { raw(addr, "POST", "/mcp", &headers, &listen, Duration::from_millis(800)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    app.remove_tool("logs");
    app.remove_prompt("p");
    let r = stream.await.unwrap();
    assert_eq!(r.header("content-type"), Some("text/event-stream"), "{r:?}");
    let messages = r.sse_messages();
    assert_eq!(messages[0]["method"], "notifications/subscriptions/acknowledged", "{messages:?}");
    assert_eq!(messages[0]["params"]["notifications"], json!({"toolsListChanged": true}), "no resources offered");
    assert_eq!(messages[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 42);
    assert_eq!(messages[1]["method"], "notifications/tools/list_changed");
    assert_eq!(messages[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 42);
    assert_eq!(messages.len(), 2, "the prompt change was not asked for: {messages:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn in_process_a_2026_request_needs_no_initialize() {
    let (ours, theirs) = inproc::pair(Limits::default());
    let serving = tokio::spawn(test_server().serve(ours));
    let message = Message::from_str(&request(1, "tools/call", json!({"name": "logs", "arguments": {}}))).unwrap();
    theirs.send(message).await.unwrap();
    let Some(Message::Response(response)) = theirs.recv().await.unwrap() else { panic!("a response") };
    let result: Value = response.result_as().unwrap();
    assert_eq!(result["content"][0]["text"], "t::true");
    assert_eq!(result["resultType"], "complete");
    // A handshake-era request on the same connection is still gated until initialize.
    let gated = Message::from_str(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).unwrap();
    theirs.send(gated).await.unwrap();
    let Some(Message::Error(error)) = theirs.recv().await.unwrap() else { panic!("an error") };
    assert_eq!(error.error.code.0, -32600);
    theirs.close().await.unwrap();
    drop(theirs);
    let _ = serving.await;
}

/// The Python SDK 2.3 client (default mode 'auto') against our echo server: it opens with
/// `server/discover`, adopts 2026-07-28 and calls tools, with no `initialize`.
fn check_python_2026(stdout: &str) {
    let steps: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(steps[0]["handshake"], "discover", "{steps:?}");
    assert_eq!(steps[0]["protocolVersion"], V);
    assert_eq!(steps[0]["serverInfo"]["name"], "mcpwire-echo-server");
    assert_eq!(steps[1]["result"]["resultType"], "complete");
    assert_eq!(steps[2]["result"]["content"][0]["text"], "hello from py", "{steps:?}");
    assert_eq!(steps[3]["result"]["content"][0]["text"], "5");
}

#[tokio::test]
async fn python_sdk_client_runs_2026_over_streamable_http() {
    let server = http(echo_server()).await;
    let output = tokio::process::Command::new(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/peers/py_client.py"))
        .args(["--url", &server.url()])
        .env_remove("MCP_SCRIPT")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    check_python_2026(&String::from_utf8_lossy(&output.stdout));
    assert_eq!(server.session_count(), 0, "no session was opened");
    server.shutdown().await;
}

/// A server whose `greet` tool asks for a name, then a color (two rounds), sealed with `secret`.
fn asking_server(secret: &[u8]) -> Server {
    let form = |field: &str| {
        serde_json::from_value(
            json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}),
        )
        .unwrap()
    };
    Server::builder()
        .request_state_secret(secret.to_vec())
        .tool("greet", "asks twice", json!({"type": "object"}), move |_args, ctx| async move {
            let name = ctx.with_input_key("name").elicit("Name?", form("name")).await?;
            let color = ctx.elicit("Color?", form("color")).await?;
            let field = |r: &mcpwire::proto::mcp_types::ElicitResult, f: &str| {
                serde_json::to_value(&r.content).unwrap()[f].as_str().unwrap_or_default().to_owned()
            };
            Ok(text_result(format!("{} likes {}", field(&name, "name"), field(&color, "color"))))
        })
        .build()
        .unwrap()
}

fn greet(id: u64, extra: Value) -> String {
    let mut params = json!({"name": "greet", "arguments": {}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let mut params_with_meta = params;
    params_with_meta["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params_with_meta}).to_string()
}

fn accept(field: &str, value: &str) -> Value {
    json!({"action": "accept", "content": {field: value}})
}

#[tokio::test]
async fn mrtr_resumes_on_another_server_with_the_same_secret() {
    // Two servers that share nothing but the secret, as two processes behind a load balancer.
    let (a, b) = (http(asking_server(b"shared secret")).await, http(asking_server(b"shared secret")).await);
    let first = post(&a, "tools/call", Some("greet"), &greet(1, json!({})), &[]).await.json();
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(result["inputRequests"]["name"]["method"], "elicitation/create");
    assert_eq!(result["inputRequests"]["name"]["params"]["message"], "Name?");
    let state = result["requestState"].as_str().unwrap().to_owned();

    let second = greet(2, json!({"inputResponses": {"name": accept("name", "Ada")}, "requestState": state}));
    let second = post(&b, "tools/call", Some("greet"), &second, &[]).await.json();
    let result = &second["result"];
    assert_eq!(result["resultType"], "input_required", "a second round: {second}");
    let key = result["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    assert_eq!(key, "elicitation-create-0", "an unnamed ask is keyed by its method and place");
    let state = result["requestState"].as_str().unwrap().to_owned();

    // Round 3 back on the first server: the name travelled in the state.
    let third = greet(3, json!({"inputResponses": {key: accept("color", "green")}, "requestState": state}));
    let third = post(&a, "tools/call", Some("greet"), &third, &[]).await.json();
    assert_eq!(third["result"]["resultType"], "complete", "{third}");
    assert_eq!(third["result"]["content"][0]["text"], "Ada likes green");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn mrtr_refuses_a_tampered_foreign_or_unknown_state() {
    let server = http(asking_server(b"one secret")).await;
    let other = http(asking_server(b"another secret")).await;
    let first = post(&server, "tools/call", Some("greet"), &greet(1, json!({})), &[]).await.json();
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let mut tampered = state.clone();
    tampered.insert(3, if tampered.as_bytes()[3] == b'A' { 'B' } else { 'A' });
    for (target, token) in [(&server, tampered.as_str()), (&other, state.as_str()), (&server, "garbage")] {
        let retry = greet(2, json!({"inputResponses": {"name": accept("name", "Eve")}, "requestState": token}));
        let r = post(target, "tools/call", Some("greet"), &retry, &[]).await;
        assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32602)), "{token}: {r:?}");
    }
    // An answer that is not an object is refused too.
    let retry = greet(3, json!({"inputResponses": {"name": 42}}));
    let r = post(&server, "tools/call", Some("greet"), &retry, &[]).await;
    assert_eq!(r.json()["error"]["code"], -32602);
    server.shutdown().await;
    other.shutdown().await;
}

#[tokio::test]
async fn mrtr_works_in_process_too() {
    let (ours, theirs) = inproc::pair(Limits::default());
    let serving = tokio::spawn(asking_server(b"s").serve(ours));
    let next = |text: String| {
        let theirs = &theirs;
        async move {
            theirs.send(Message::from_str(&text).unwrap()).await.unwrap();
            let Some(Message::Response(response)) = theirs.recv().await.unwrap() else { panic!("a response") };
            response.result_as::<Value>().unwrap()
        }
    };
    let first = next(greet(1, json!({}))).await;
    assert_eq!(first["resultType"], "input_required");
    let state = first["requestState"].as_str().unwrap().to_owned();
    let second = next(greet(2, json!({"inputResponses": {"name": accept("name", "Bo")}, "requestState": state}))).await;
    let state = second["requestState"].as_str().unwrap().to_owned();
    let third = next(greet(
        3,
        json!({"inputResponses": {"elicitation-create-0": accept("color", "red")}, "requestState": state}),
    ))
    .await;
    assert_eq!(third["content"][0]["text"], "Bo likes red");
    theirs.close().await.unwrap();
    drop(theirs);
    let _ = serving.await;
}

/// The Python SDK 2.3 client answers our handler's two elicitations through its MRTR loop.
#[tokio::test]
async fn python_sdk_client_completes_a_multi_round_tool_call() {
    let server = http(asking_server(b"py")).await;
    let output = tokio::process::Command::new(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/peers/py_mrtr_client.py"))
        .args([server.url().as_str(), "greet"])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(line["protocolVersion"], V, "{line}");
    assert_eq!(line["discover"], true);
    assert_eq!(line["asked"], json!(["Name?", "Color?"]));
    assert_eq!(line["result"]["content"][0]["text"], "from-py likes from-py", "{line}");
    server.shutdown().await;
}

/// Closing a 2026-07-28 request's HTTP exchange cancels it: the handler is dropped.
#[tokio::test]
async fn a_client_that_goes_away_cancels_its_request() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let app = Server::builder()
        .tool("slow", "sleeps", json!({"type": "object"}), move |_args, _ctx| {
            let guard = SetOnDrop(flag.clone());
            async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                drop(guard);
                Ok(text_result("late"))
            }
        })
        .build()
        .unwrap();
    let server = http(app).await;
    let call = request(1, "tools/call", json!({"name": "slow", "arguments": {}}));
    let headers = [BOTH, JSON, ("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "slow")];
    // Gives up after 200 ms: the connection is closed with no answer read.
    let r = tokio::time::timeout(
        Duration::from_millis(200),
        raw(server.local_addr(), "POST", "/mcp", &headers, &call, Duration::from_secs(30)),
    )
    .await;
    assert!(r.is_err(), "no answer came");
    for _ in 0..50 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(dropped.load(Ordering::SeqCst), "the handler was dropped");
    server.shutdown().await;
}

/// The tasks extension (SEP-2663) over HTTP: a declaring client's call of a task tool becomes
/// a task that parks on input until `tasks/update`, then completes with its result inlined on
/// `tasks/get`; without the extension a required task tool and `tasks/*` are -32021.
#[tokio::test]
async fn tasks_extension_runs_a_call_as_a_task_across_requests() {
    let tool = |name: &str, support: &str| -> mcpwire::proto::mcp_types::Tool {
        serde_json::from_value(
            json!({"name": name, "inputSchema": {"type": "object"}, "execution": {"taskSupport": support}}),
        )
        .unwrap()
    };
    let app = Server::builder()
        .tool_with(tool("confirm", "optional"), |_args, ctx| async move {
            ctx.run_as_task().await;
            let schema =
                serde_json::from_value(json!({"type": "object", "properties": {"ok": {"type": "boolean"}}})).unwrap();
            let answer = ctx.with_input_key("sure").elicit("Sure?", schema).await?;
            Ok(text_result(format!("answered {}", answer.action.as_str())))
        })
        .tool_with(tool("must_task", "required"), |_args, _ctx| async { Ok(text_result("ran")) })
        .tool_with(tool("gather", "required"), |_args, ctx| async move {
            let schema =
                serde_json::from_value(json!({"type": "object", "properties": {"n": {"type": "string"}}})).unwrap();
            let answer = ctx.with_input_key("n").elicit("Name?", schema).await?;
            ctx.run_as_task().await;
            let n = serde_json::to_value(&answer.content).unwrap()["n"].as_str().unwrap_or_default().to_owned();
            Ok(text_result(format!("gathered {n}")))
        })
        .build()
        .unwrap();
    let server = http(app).await;
    let with_tasks = |id: u64, method: &str, params: Value| {
        let mut body: Value = serde_json::from_str(&request(id, method, params)).unwrap();
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
        body.to_string()
    };
    let discover = post(&server, "server/discover", None, &request(1, "server/discover", json!({})), &[]).await.json();
    assert!(
        discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{discover}"
    );
    assert!(discover["result"]["capabilities"].get("tasks").is_none(), "no v1 slot");

    let created = post(
        &server,
        "tools/call",
        Some("confirm"),
        &with_tasks(2, "tools/call", json!({"name": "confirm", "arguments": {}})),
        &[],
    )
    .await
    .json();
    let created = &created["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(created["ttlMs"], 300_000);

    let get = |id: u64| with_tasks(id, "tasks/get", json!({"taskId": task_id}));
    let mut task = Value::Null;
    for n in 0..50 {
        task = post(&server, "tasks/get", Some(&task_id), &get(10 + n), &[]).await.json()["result"].clone();
        if task["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(task["status"], "input_required", "{task}");
    assert_eq!(task["inputRequests"]["sure"]["method"], "elicitation/create");
    let update = with_tasks(
        3,
        "tasks/update",
        json!({"taskId": task_id, "inputResponses": {"sure": {"action": "accept", "content": {"ok": true}}}}),
    );
    let ack = post(&server, "tasks/update", Some(&task_id), &update, &[]).await.json();
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    for n in 0..50 {
        task = post(&server, "tasks/get", Some(&task_id), &get(100 + n), &[]).await.json()["result"].clone();
        if task["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(task["result"]["content"][0]["text"], "answered accept", "{task}");

    // Input gathered by MRTR first, then the call becomes a task (SEP-2663's composition).
    let round1 = post(
        &server,
        "tools/call",
        Some("gather"),
        &with_tasks(20, "tools/call", json!({"name": "gather", "arguments": {}})),
        &[],
    )
    .await
    .json();
    assert_eq!(round1["result"]["resultType"], "input_required", "{round1}");
    assert!(round1["result"].get("taskId").is_none());
    let state = round1["result"]["requestState"].clone();
    let retry = json!({"name": "gather", "arguments": {}, "inputResponses": {"n": {"action": "accept", "content": {"n": "Io"}}}, "requestState": state});
    let round2 = post(&server, "tools/call", Some("gather"), &with_tasks(21, "tools/call", retry), &[]).await.json();
    assert_eq!(round2["result"]["resultType"], "task", "{round2}");
    assert!(round2["result"].get("requestState").is_none());
    let gathered = round2["result"]["taskId"].as_str().unwrap().to_owned();
    for n in 0..50 {
        task = post(
            &server,
            "tasks/get",
            Some(&gathered),
            &with_tasks(200 + n, "tasks/get", json!({"taskId": gathered})),
            &[],
        )
        .await
        .json()["result"]
            .clone();
        if task["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(task["result"]["content"][0]["text"], "gathered Io", "{task}");

    // Without the extension.
    let call = request(4, "tools/call", json!({"name": "must_task", "arguments": {}}));
    let r = post(&server, "tools/call", Some("must_task"), &call, &[]).await;
    assert_eq!(r.json()["error"]["code"], -32021, "{r:?}");
    assert_eq!(
        r.json()["error"]["data"]["requiredCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    let r = post(&server, "tasks/get", Some(&task_id), &request(5, "tasks/get", json!({"taskId": task_id})), &[]).await;
    assert_eq!(r.json()["error"]["code"], -32021);
    // An unknown task, and a task id header that does not match.
    let r = post(&server, "tasks/get", Some("nope"), &with_tasks(6, "tasks/get", json!({"taskId": "nope"})), &[]).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32602)));
    let r = post(&server, "tasks/get", Some("other"), &get(7), &[]).await;
    assert_eq!(r.json()["error"]["code"], -32020);
    server.shutdown().await;
}

/// `subscriptions/listen` on a connection that carries everything (in process, as stdio):
/// the acknowledgement first, then the change, tagged; cancelling the request ends it.
#[tokio::test]
async fn subscriptions_listen_in_process() {
    let (ours, theirs) = inproc::pair(Limits::default());
    let app = test_server();
    let serving = tokio::spawn(app.serve(ours));
    let listen = request(7, "subscriptions/listen", json!({"notifications": {"promptsListChanged": true}}));
    theirs.send(Message::from_str(&listen).unwrap()).await.unwrap();
    let next = || async {
        let Some(Message::Notification(n)) = theirs.recv().await.unwrap() else { panic!("a notification") };
        (n.method.clone(), n.params_as::<Value>().unwrap())
    };
    let (method, params) = next().await;
    assert_eq!(method, "notifications/subscriptions/acknowledged");
    assert_eq!(params["notifications"], json!({"promptsListChanged": true}));
    app.remove_prompt("p");
    let (method, params) = next().await;
    assert_eq!(method, "notifications/prompts/list_changed");
    assert_eq!(params["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    theirs.close().await.unwrap();
    drop(theirs);
    let _ = serving.await;
}

/// A server configured without 2026-07-28 answers its requests -32022, listing nothing.
#[tokio::test]
async fn http_without_the_revision_configured_refuses_it() {
    let mut config = HttpServerConfig::default();
    config.versions = vec![mcpwire::proto::version::ProtocolVersion::V2025_11_25];
    let app = test_server();
    let server = app.serve_http(config).await.unwrap();
    let r = post(&server, "server/discover", None, &request(1, "server/discover", json!({})), &[]).await;
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32022)), "{r:?}");
    assert_eq!(r.json()["error"]["data"]["supported"], json!([]));
    server.shutdown().await;
}
