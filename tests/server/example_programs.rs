//! Every example of `examples/` run as its reader would run it, so none rots: each server
//! example is started as a real child process and driven over stdio by our client (the HTTP
//! one on a loopback port, over Streamable HTTP), and the client examples are run as processes
//! against the server examples, their output checked. `http_oauth_client` runs against an
//! authorization server of this file (metadata and token endpoint on loopback), the test
//! playing the browser.

#![cfg(all(feature = "client", feature = "server", feature = "http"))]

use crate::examples;
use crate::http_support;
use crate::support;

use std::path::PathBuf;
use std::sync::Arc;

use mcpwire::client::{CallOptions, Client, ClientOptions, ServerNotification};
use mcpwire::proto::jsonrpc::{ErrorObject, Notification};
use mcpwire::proto::mcp_types::{
    CallToolResult, CompletionReference, ContentBlock, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, LoggingLevel, LoggingMessageNotificationParams, PromptReference,
    ResourceTemplateReference,
};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use mcpwire::transport::stdio::{ChildCommand, Stderr, StdioTransport};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc::{self, UnboundedReceiver as Receiver};

fn example(name: &str) -> PathBuf {
    examples::example_path(name)
}

fn command(name: &str) -> ChildCommand {
    ChildCommand::new(example(name).to_str().expect("a UTF-8 path"))
}

async fn spawn(name: &str, options: ClientOptions) -> Client<StdioTransport> {
    Client::spawn(command(name), options).await.unwrap_or_else(|e| panic!("{name} starts and connects: {e}"))
}

fn args(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

fn text(result: &CallToolResult) -> &str {
    match result.content.first() {
        Some(ContentBlock::Text(t)) => &t.text,
        other => panic!("expected a text block, got {other:?}"),
    }
}

fn names<T>(items: &[T], name: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| name(i).to_owned()).collect()
}

/// Runs a client example to its end; its stdout, which it must have exited 0 with.
async fn run(name: &str, arguments: &[&str]) -> String {
    let output = tokio::process::Command::new(example(name)).args(arguments).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{name} failed: {stdout}{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

#[tokio::test]
async fn server_tools_decodes_typed_arguments() {
    let client = spawn("server_tools", ClientOptions::default()).await;
    assert_eq!(client.server_info().name, "server-tools");
    assert_eq!(names(&client.list_tools().await.unwrap(), |t| &t.name), ["add", "greet"]);
    let sum = client.call_tool("add", args(json!({"a": 2, "b": 40})), Default::default()).await.unwrap();
    assert_eq!((text(&sum), sum.is_error), ("42", None));
    let hello = client.call_tool("greet", args(json!({"name": "Ada"})), Default::default()).await.unwrap();
    assert_eq!(text(&hello), "Hello, Ada!");
    let bad = client.call_tool("add", args(json!({"a": "two", "b": 40})), Default::default()).await.unwrap();
    assert_eq!(bad.is_error, Some(true), "arguments that do not fit the schema are a tool error");
    client.close().await.unwrap();
}

#[tokio::test]
async fn structured_output_answers_with_structured_content() {
    let client = spawn("structured_output", ClientOptions::default()).await;
    let tools = client.list_tools().await.unwrap();
    let schema = tools[0].output_schema.as_ref().expect("weather declares an output schema");
    assert_eq!(schema["required"], json!(["city", "temperature_c", "conditions"]));
    let result = client.call_tool("weather", args(json!({"city": "Oslo"})), Default::default()).await.unwrap();
    let expected = json!({"city": "Oslo", "temperature_c": 21.5, "conditions": "sunny"});
    assert_eq!(result.structured_content, Some(expected.clone()));
    let mirrored: Value = serde_json::from_str(text(&result)).unwrap();
    assert_eq!(mirrored, expected, "the structured value mirrored into a text block");
    client.close().await.unwrap();
}

#[cfg(feature = "schema")]
#[tokio::test]
async fn typed_tools_derives_schemas_and_answers_typed_values() {
    let client = spawn("typed_tools", ClientOptions::default()).await;
    let tools = client.list_tools().await.unwrap();
    assert_eq!(names(&tools, |t| &t.name), ["forecast", "greet"]);
    let forecast = &tools[0];
    assert_eq!(forecast.title.as_deref(), Some("Forecast"));
    assert_eq!(forecast.input_schema["required"], json!(["city"]), "Option and serde(default) are not required");
    assert_eq!(forecast.input_schema["properties"]["days"]["description"], "How many days ahead (default 1).");
    assert_eq!(forecast.output_schema.as_ref().unwrap()["required"], json!(["city", "unit", "temperatures"]));
    assert_eq!(tools[1].output_schema, None, "content, no output schema");

    let result = client
        .call_tool("forecast", args(json!({"city": "Oslo", "days": 2, "unit": "fahrenheit"})), Default::default())
        .await
        .unwrap();
    let expected = json!({"city": "Oslo", "unit": "fahrenheit", "temperatures": [64.4, 66.2]});
    assert_eq!(result.structured_content, Some(expected.clone()));
    assert_eq!(serde_json::from_str::<Value>(text(&result)).unwrap(), expected, "the text mirror");
    let bad =
        client.call_tool("forecast", args(json!({"city": "Oslo", "days": 300})), Default::default()).await.unwrap();
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("/days"), "{}", text(&bad));
    let hello = client.call_tool("greet", args(json!({"name": "Ada"})), Default::default()).await.unwrap();
    assert_eq!(text(&hello), "Hello, Ada!");
    client.close().await.unwrap();
}

#[tokio::test]
async fn resources_reads_static_dynamic_and_templated_resources() {
    let client = spawn("resources", ClientOptions::default()).await;
    let resources = client.list_resources().await.unwrap();
    assert_eq!(names(&resources, |r| &r.uri), ["file:///readme.txt", "counter://reads"]);
    let templates = client.list_resource_templates().await.unwrap();
    assert_eq!(names(&templates, |t| &t.uri_template), ["greeting://{name}"]);
    let read = |uri: &'static str| {
        let client = client.clone();
        async move {
            let result = serde_json::to_value(client.read_resource(uri).await.unwrap()).unwrap();
            result["contents"][0]["text"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(read("file:///readme.txt").await, "mcpwire serves resources.");
    assert_eq!((read("counter://reads").await, read("counter://reads").await), ("1".into(), "2".into()));
    assert_eq!(read("greeting://Ada").await, "Hello, Ada!");
    assert!(client.read_resource("nothing://here").await.is_err(), "an unknown URI is an error");
    let reference = CompletionReference::ResourceTemplate(ResourceTemplateReference {
        uri: "greeting://{name}".into(),
        extra: Default::default(),
    });
    let completion = client.complete(reference, "name", "a").await.unwrap().completion;
    assert_eq!(completion.values, ["Ada", "Alan"]);
    client.close().await.unwrap();
}

#[tokio::test]
async fn prompts_renders_a_prompt_and_completes_its_argument() {
    let client = spawn("prompts", ClientOptions::default()).await;
    let prompts = client.list_prompts().await.unwrap();
    assert_eq!(names(&prompts, |p| &p.name), ["review"]);
    assert_eq!(serde_json::to_value(&prompts[0]).unwrap()["arguments"][0]["required"], true);
    let arguments = [("language".to_owned(), "rust".to_owned())].into();
    let rendered = serde_json::to_value(client.get_prompt("review", Some(arguments)).await.unwrap()).unwrap();
    assert_eq!(rendered["messages"][0]["role"], "user");
    assert_eq!(rendered["messages"][0]["content"]["text"], "Please review this rust code for correctness and style.");
    assert!(client.get_prompt("review", None).await.is_err(), "the required argument is checked");
    let reference =
        CompletionReference::Prompt(PromptReference { name: "review".into(), title: None, extra: Default::default() });
    let completion = client.complete(reference, "language", "r").await.unwrap().completion;
    assert_eq!(completion.values, ["ruby", "rust"]);
    client.close().await.unwrap();
}

#[tokio::test]
async fn progress_reports_each_step_and_notices_cancellation() {
    let (line_tx, mut stderr) = mpsc::unbounded_channel();
    let lines = Stderr::Lines(Arc::new(move |line: &str| drop(line_tx.send(line.to_owned()))));
    let client = Client::spawn(command("progress").stderr(lines), ClientOptions::default()).await.unwrap();
    let count = |to: u64, step_ms: u64| args(json!({"to": to, "step_ms": step_ms}));
    let progress_to = |tx: mpsc::UnboundedSender<_>| CallOptions::default().with_progress(move |p| drop(tx.send(p)));

    let (tx, mut seen) = mpsc::unbounded_channel();
    let result = client.call_tool("count", count(3, 0), progress_to(tx)).await;
    assert_eq!(text(&result.unwrap()), "counted to 3");
    let mut steps = Vec::new();
    while let Ok(p) = seen.try_recv() {
        steps.push((p.progress.as_u64().unwrap(), p.total.and_then(|t| t.as_u64()), p.message.unwrap()));
    }
    let expected: Vec<_> = (1..=3).map(|i| (i, Some(3), format!("step {i} of 3"))).collect();
    assert_eq!(steps, expected);

    // A long count, dropped once its first step is reported: the client sends
    // `notifications/cancelled` and the tool's watcher sees it.
    let (tx, mut seen) = mpsc::unbounded_channel();
    let call = client.call_tool("count", count(1000, 1000), progress_to(tx));
    tokio::select! {
        outcome = call => panic!("the long count finished: {outcome:?}"),
        first = seen.recv() => assert_eq!(first.unwrap().progress.as_u64(), Some(1)),
    }
    let line = stderr.recv().await.expect("the server reports the cancellation");
    assert!(line.starts_with("count: cancelled at step "), "{line}");
    let after = client.call_tool("count", count(1, 0), CallOptions::default()).await.unwrap();
    assert_eq!(text(&after), "counted to 1", "the connection serves on");
    client.close().await.unwrap();
}

#[tokio::test]
async fn elicitation_asks_the_user_and_the_model_through_the_client() {
    let (asked_tx, mut asked) = mpsc::unbounded_channel();
    let (sampled_tx, mut sampled) = mpsc::unbounded_channel();
    let options = ClientOptions::default()
        .with_elicitation(move |params: ElicitRequestParams| {
            let message = match &params {
                ElicitRequestParams::Form(form) => form.message.clone(),
                other => panic!("form mode expected: {other:?}"),
            };
            drop(asked_tx.send(message));
            async { Ok::<ElicitResult, ErrorObject>(serde_json::from_value(json!({"action": "accept", "content": {"travellers": 3}})).unwrap()) }
        })
        .with_sampling(move |params: CreateMessageRequestParams| {
            drop(sampled_tx.send(serde_json::to_value(&params.messages).unwrap()));
            let reply = json!({"role": "assistant", "content": {"type": "text", "text": "Tram 28, then the river."}, "model": "test-model"});
            async move { Ok::<CreateMessageResult, ErrorObject>(serde_json::from_value(reply).unwrap()) }
        });
    let client = spawn("elicitation", options).await;
    let result = client.call_tool("plan_trip", args(json!({"city": "Lisbon"})), Default::default()).await.unwrap();
    assert_eq!(text(&result), "3 travellers: Tram 28, then the river. (model test-model)");
    assert_eq!(asked.recv().await.unwrap(), "How many people travel to Lisbon?");
    let prompt = sampled.recv().await.unwrap();
    assert_eq!(prompt[0]["content"]["text"], "Plan a day in Lisbon for 3 people, in one line.");
    client.close().await.unwrap();

    // A client that declared neither capability: the tool fails cleanly, asking nothing.
    let client = spawn("elicitation", ClientOptions::default()).await;
    let result = client.call_tool("plan_trip", args(json!({"city": "Lisbon"})), Default::default()).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("elicitation"), "{}", text(&result));
    client.close().await.unwrap();
}

#[tokio::test]
async fn logging_sends_what_the_level_lets_through() {
    let (tx, mut logs) = mpsc::unbounded_channel::<LoggingMessageNotificationParams>();
    let options = ClientOptions::default().with_handler(move |n: Notification| {
        if let ServerNotification::LoggingMessage(m) = ServerNotification::parse(&n) {
            drop(tx.send(m));
        }
    });
    let client = spawn("logging", options).await;
    assert!(client.capabilities().logging.is_some());
    // The log messages of one call, in the order sent: `expected` of them.
    async fn import(
        client: &Client<StdioTransport>,
        logs: &mut Receiver<LoggingMessageNotificationParams>,
        expected: usize,
    ) -> Vec<(LoggingLevel, Value)> {
        let result = client.call_tool("import", args(json!({"rows": 3})), Default::default()).await.unwrap();
        assert_eq!(text(&result), "imported 3 rows");
        let mut seen = Vec::new();
        while seen.len() < expected {
            let m = logs.recv().await.expect("a log message");
            assert_eq!(m.logger.as_deref(), Some("import"));
            seen.push((m.level, m.data));
        }
        seen
    }
    // The client's level decides (`logging/setLevel`, or each request's `logLevel` in a
    // 2026-07-28 session, where a request without one gets no log messages).
    use LoggingLevel::{Info, Warning};
    client.set_logging_level(Info).await.unwrap();
    let info = import(&client, &mut logs, 4).await;
    let levels: Vec<LoggingLevel> = info.iter().map(|(l, _)| *l).collect();
    assert_eq!(levels, [Info, Info, Info, Warning], "no debug message at info");
    assert_eq!(info[0].1, json!("imported row 1"));

    // At `warning`, the first message after the call is its warning: the info messages, sent
    // before it, were held back by the server.
    client.set_logging_level(Warning).await.unwrap();
    assert_eq!(import(&client, &mut logs, 1).await, [(Warning, json!("row 2 had an empty name"))]);
    client.close().await.unwrap();
}

#[tokio::test]
async fn http_bearer_refuses_without_the_token_and_serves_with_it() {
    const TOKEN: &str = "example-secret-token";
    let mut child = tokio::process::Command::new(example("http_bearer"))
        .env("MCP_TOKEN", TOKEN)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).await.unwrap();
    let url = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line:?}")).to_owned();
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();

    let init = http_support::initialize_body("2025-11-25");
    let refused =
        http_support::raw(addr, "POST", "/mcp", &[http_support::BOTH, http_support::JSON], &init, http_support::SHORT)
            .await;
    assert_eq!(refused.status, 401);
    let challenge = refused.header("www-authenticate").expect("a challenge");
    assert!(challenge.starts_with("Bearer ") && challenge.contains("resource_metadata="), "{challenge}");

    let wrong = HttpClientTransport::new(HttpClientConfig::new(&url).bearer_token("not-it")).unwrap();
    assert!(Client::connect(wrong, ClientOptions::default()).await.is_err(), "a wrong token is refused");

    let transport = HttpClientTransport::new(HttpClientConfig::new(&url).bearer_token(TOKEN)).unwrap();
    let client = Client::connect(transport, ClientOptions::default()).await.unwrap();
    assert_eq!(client.server_info().name, "http-bearer");
    let whoami = client.call_tool("whoami", None, Default::default()).await.unwrap();
    assert_eq!(text(&whoami), "example-user", "the verifier's principal reaches the handler");
    client.close().await.unwrap();
}

#[tokio::test]
async fn stdio_client_lists_and_calls_the_server_tools_example() {
    let server = example("server_tools");
    let stdout = run("stdio_client", &[server.to_str().unwrap(), "add", r#"{"a":2,"b":40}"#]).await;
    assert_eq!(stdout, "connected to server-tools 0.1.0\ntools: add, greet\nadd: 42\n");
}

#[tokio::test]
async fn connection_set_routes_qualified_names_to_each_server() {
    let (tools, weather) = (example("server_tools"), example("structured_output"));
    let stdout = run("connection_set", &[tools.to_str().unwrap(), weather.to_str().unwrap()]).await;
    let expected = "servers: local, server_tools, structured_output\n\
        tool: mcp__local__ping (ping on local)\n\
        tool: mcp__server_tools__add (add on server_tools)\n\
        tool: mcp__server_tools__greet (greet on server_tools)\n\
        tool: mcp__structured_output__weather (weather on structured_output)\n\
        mcp__local__ping: pong\n\
        mcp__server_tools__add: 42\n";
    assert_eq!(stdout, expected);
}

/// An authorization server just big enough for one authorization code flow: its metadata, and
/// a token endpoint that trades `code` for `token`. The authorization endpoint is never
/// fetched: the test plays the browser and goes straight back to the redirect URI.
#[cfg(feature = "oauth")]
async fn authorization_server(code: &'static str, token: &'static str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let meta = json!({
        "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"), "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code"], "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"]
    });
    tokio::spawn(async move {
        loop {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let meta = meta.clone();
            tokio::spawn(async move {
                let mut bytes = Vec::new();
                let mut buf = [0; 4096];
                let (head, body) = loop {
                    let n = tcp.read(&mut buf).await.unwrap();
                    bytes.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                            })
                            .map_or(0, |v| v.parse().unwrap());
                        if body.len() >= length || n == 0 {
                            break (head.to_owned(), body.to_owned());
                        }
                    }
                };
                let target = head.split(' ').nth(1).unwrap_or_default().to_owned();
                let (status, answer) = if target == "/.well-known/oauth-authorization-server" {
                    ("200 OK", meta)
                } else if target == "/token"
                    && body.contains(&format!("code={code}"))
                    && body.contains("code_verifier=")
                {
                    ("200 OK", json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
                } else {
                    ("404 Not Found", json!({"error": "not_found"}))
                };
                let answer = answer.to_string();
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = tcp.write_all(response.as_bytes()).await;
            });
        }
    });
    issuer
}

#[cfg(feature = "oauth")]
#[tokio::test]
async fn http_oauth_client_logs_in_through_the_authorization_code_flow() {
    use mcpwire::auth::{Principal, ProtectedResource, StaticTokenVerifier};
    use mcpwire::server::{text_result, Server};
    use mcpwire::transport::sse_http::HttpServerConfig;

    const CODE: &str = "the-code";
    const TOKEN: &str = "the-access-token";
    let issuer = authorization_server(CODE, TOKEN).await;
    let server = Server::builder()
        .name("oauth-protected")
        .tool("whoami", "who", json!({"type": "object"}), |_args, ctx| async move {
            Ok(text_result(ctx.principal().and_then(|p| p.subject.clone()).unwrap_or_default()))
        })
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let verifier = StaticTokenVerifier::new(TOKEN).unwrap().principal(Principal::new(Some("oauth-user".into())));
    let policy = ProtectedResource::new(&resource, Arc::new(verifier)).authorization_server(&issuer);
    let http = server.serve_http_on(listener, HttpServerConfig::default().protected_resource(policy)).await.unwrap();

    let store = std::env::temp_dir().join(format!("mcpwire-example-oauth-{}.json", std::process::id()));
    let mut child = tokio::process::Command::new(example("http_oauth_client"))
        .args([http.url().as_str(), "example-client"])
        .env("MCP_TOKEN_FILE", &store)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let open = lines.next_line().await.unwrap().expect("the authorization URL");
    let authorize = url::Url::parse(open.strip_prefix("open: ").unwrap_or_else(|| panic!("{open:?}"))).unwrap();
    assert_eq!(authorize.as_str().split('?').next(), Some(format!("{issuer}/authorize").as_str()));
    let query: std::collections::HashMap<String, String> = authorize.query_pairs().into_owned().collect();
    assert_eq!(query["client_id"], "example-client");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["resource"], resource, "RFC 8707: the token is asked for this server");

    // The browser: the authorization server would send the user back with a code.
    let redirect = url::Url::parse(&query["redirect_uri"]).unwrap();
    let addr = format!("127.0.0.1:{}", redirect.port().unwrap()).parse().unwrap();
    let back = format!("{}?code={CODE}&state={}", redirect.path(), query["state"]);
    let page = http_support::raw(addr, "GET", &back, &[], "", http_support::SHORT).await;
    assert_eq!(page.status, 200, "{page:?}");

    let mut rest = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        rest.push(line);
    }
    assert!(child.wait().await.unwrap().success(), "{rest:?}");
    assert_eq!(rest, ["connected to oauth-protected", "tool: whoami"]);
    assert!(std::fs::read_to_string(&store).unwrap().contains(TOKEN), "the token is kept for the next run");
    std::fs::remove_file(&store).unwrap();
    http.shutdown().await;
}

/// The gateway embedded in a host (examples/gateway.rs): the host's two in-process servers and
/// the official `server-everything` (a stdio child) served as one over stdio.
#[cfg(feature = "gateway")]
#[tokio::test]
async fn gateway_example_serves_its_own_servers_and_a_third_party_one_as_one() {
    let everything = format!("{} {} stdio", support::peer("MCP_NODE"), support::peer("MCP_EVERYTHING_JS"));
    let command = ChildCommand::new(examples::example_path("gateway").display().to_string()).arg(everything);
    let client = Client::spawn(command, ClientOptions::default()).await.expect("the gateway example answers");
    assert_eq!(client.server_info().name, "my-host");
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    for name in ["mcp__weather__forecast", "mcp__clock__now", "mcp__stdio0__echo", "mcp__stdio0__get-sum"] {
        assert!(names.iter().any(|n| n == name), "{name} missing from {names:?}");
    }
    let own = client.call_tool("mcp__weather__forecast", None, Default::default()).await.unwrap();
    assert_eq!(gateway_texts(&own), ["sunny"]);
    let third_party = client
        .call_tool("mcp__stdio0__echo", json!({"message": "hi"}).as_object().cloned(), Default::default())
        .await
        .unwrap();
    assert_eq!(gateway_texts(&third_party), ["Echo: hi"]);
    let unknown = client.call_tool("mcp__weather__rain", None, Default::default()).await;
    assert!(unknown.is_err() || unknown.unwrap().is_error == Some(true), "an unknown tool is refused");
}

#[cfg(feature = "gateway")]
fn gateway_texts(result: &mcpwire::proto::mcp_types::CallToolResult) -> Vec<String> {
    result
        .content
        .iter()
        .map(|block| match block {
            mcpwire::proto::mcp_types::ContentBlock::Text(t) => t.text.clone(),
            other => panic!("expected text, got {other:?}"),
        })
        .collect()
}
