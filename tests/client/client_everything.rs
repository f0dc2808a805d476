//! The whole client surface against the real `@modelcontextprotocol/server-everything`, over
//! stdio (and once over Streamable HTTP): resources, prompts, completion, logging levels,
//! sampling / elicitation / roots answered by our handlers, progress callbacks, cancellation
//! seen by the server, capability checks before sending (against our own echo server, which
//! has tools only), and version negotiation at older revisions.

use crate::examples;
use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::client::{Client, ClientError, ClientOptions, ElicitationModes, EraPolicy, Progress, ServerNotification};
use mcpwire::proto::jsonrpc::{ErrorObject, Notification};
use mcpwire::proto::mcp_types::{
    CallToolRequestParams, CallToolResult, CompletionReference, ContentBlock, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, LoggingLevel, PromptReference, ResourceContents, Root,
    TaskStatus,
};
use mcpwire::proto::session::RequestOptions;
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::stdio::{ChildCommand, StdioTransport};
use serde_json::json;

fn everything() -> ChildCommand {
    ChildCommand::new(support::peer("MCP_NODE")).arg(support::peer("MCP_EVERYTHING_JS")).arg("stdio")
}

async fn connect(options: ClientOptions) -> Client<StdioTransport> {
    Client::spawn(everything(), options).await.expect("connects to server-everything")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn args(value: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
    value.as_object().cloned()
}

/// Collects the server's notifications.
#[derive(Clone, Default)]
struct Notes(Arc<Mutex<Vec<Notification>>>);

impl Notes {
    fn options(&self) -> ClientOptions {
        let sink = self.0.clone();
        ClientOptions::default().with_handler(move |n: Notification| sink.lock().unwrap().push(n))
    }

    fn log_lines(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|n| match ServerNotification::parse(n) {
                ServerNotification::LoggingMessage(m) => Some(m.data.as_str().unwrap_or_default().to_owned()),
                _ => None,
            })
            .collect()
    }

    async fn wait_for(&self, what: &str, pred: impl Fn(&[Notification]) -> bool) {
        for _ in 0..200 {
            if pred(&self.0.lock().unwrap()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no {what} within 5 s: {:?}", self.0.lock().unwrap());
    }
}

fn root(uri: &str, name: &str) -> Root {
    serde_json::from_value(json!({"uri": uri, "name": name})).unwrap()
}

#[tokio::test]
async fn resources_read_subscribe_and_update() {
    let notes = Notes::default();
    let client = connect(notes.options()).await;
    let resources = client.list_resources().await.unwrap();
    assert!(resources.iter().any(|r| r.uri == "demo://resource/static/document/architecture.md"), "{resources:?}");
    let templates = client.list_resource_templates().await.unwrap();
    assert!(templates.iter().any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"));

    let read = client.read_resource("demo://resource/dynamic/text/1").await.unwrap();
    let [ResourceContents::Text(contents)] = read.contents.as_slice() else { panic!("one text part: {read:?}") };
    assert!(contents.text.starts_with("Resource 1: This is a plaintext resource"), "{}", contents.text);
    let blob = client.read_resource("demo://resource/dynamic/blob/2").await.unwrap();
    assert!(matches!(blob.contents.as_slice(), [ResourceContents::Blob(_)]), "{blob:?}");
    let unknown = client.read_resource("demo://resource/dynamic/text/0").await.unwrap_err();
    assert!(unknown.rpc_error().is_some(), "{unknown:?}");

    client.subscribe("demo://resource/dynamic/text/1").await.unwrap();
    client.call_tool("toggle-subscriber-updates", args(json!({})), Default::default()).await.unwrap();
    notes
        .wait_for("resources/updated", |ns| {
            ns.iter().any(|n| {
                matches!(ServerNotification::parse(n), ServerNotification::ResourceUpdated(u)
                    if u.uri == "demo://resource/dynamic/text/1")
            })
        })
        .await;
    client.call_tool("toggle-subscriber-updates", args(json!({})), Default::default()).await.unwrap();
    client.unsubscribe("demo://resource/dynamic/text/1").await.unwrap();
}

#[tokio::test]
async fn prompts_with_arguments_and_completion() {
    let client = connect(ClientOptions::default()).await;
    let prompts = client.list_prompts().await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "args-prompt"), "{prompts:?}");
    let arguments = BTreeMap::from([("city".to_owned(), "Oslo".to_owned())]);
    let prompt = client.get_prompt("args-prompt", Some(arguments)).await.unwrap();
    let content = serde_json::to_value(&prompt.messages[0].content).unwrap();
    assert_eq!(content["text"], "What's weather in Oslo?", "{prompt:?}");

    let reference = CompletionReference::Prompt(PromptReference {
        name: "completable-prompt".into(),
        title: None,
        extra: Default::default(),
    });
    let completion = client.complete(reference, "department", "M").await.unwrap();
    assert_eq!(completion.completion.values, ["Marketing"]);
}

#[tokio::test]
async fn set_level_filters_log_messages() {
    let notes = Notes::default();
    let client = connect(notes.options()).await;
    // The subscribe acknowledgement is an info-level log message.
    client.set_logging_level(LoggingLevel::Warning).await.unwrap();
    client.subscribe("demo://resource/dynamic/text/2").await.unwrap();
    client.unsubscribe("demo://resource/dynamic/text/2").await.unwrap();
    client.ping().await.unwrap();
    assert!(!notes.log_lines().iter().any(|l| l.contains("Subscribe")), "{:?}", notes.log_lines());

    client.set_logging_level(LoggingLevel::Info).await.unwrap();
    client.subscribe("demo://resource/dynamic/text/3").await.unwrap();
    notes
        .wait_for("the info message", |ns| {
            ns.iter().any(|n| {
                matches!(ServerNotification::parse(n), ServerNotification::LoggingMessage(m)
                    if m.level == LoggingLevel::Info && m.data.as_str().is_some_and(|d| d.contains("text/3")))
            })
        })
        .await;
}

async fn canned_sampling(params: CreateMessageRequestParams) -> Result<CreateMessageResult, ErrorObject> {
    let asked = serde_json::to_value(&params.messages[0].content).unwrap();
    Ok(serde_json::from_value(json!({
        "role": "assistant",
        "content": {"type": "text", "text": format!("canned reply to {}", asked["text"].as_str().unwrap_or("?"))},
        "model": "canned-model-1",
        "stopReason": "endTurn"
    }))
    .unwrap())
}

async fn ada(params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
    match params {
        ElicitRequestParams::Form(form) => {
            assert!(form.requested_schema.properties.contains_key("name"));
            Ok(serde_json::from_value(json!({
                "action": "accept",
                "content": {"name": "Ada Lovelace", "check": true, "email": "ada@example.com", "integer": 42}
            }))
            .unwrap())
        }
        ElicitRequestParams::Url(url) => {
            assert_eq!(url.url, "https://example.com/consent");
            Ok(serde_json::from_value(json!({"action": "accept"})).unwrap())
        }
        ElicitRequestParams::Other(_) => panic!("an unknown mode"),
    }
}

#[tokio::test]
async fn sampling_elicitation_and_roots_are_answered_by_our_handlers() {
    let notes = Notes::default();
    let options = notes
        .options()
        .with_sampling(canned_sampling)
        .with_elicitation_modes(ada, ElicitationModes::BOTH)
        .with_roots([root("file:///tmp/project", "project")]);
    let declared = serde_json::to_value(options.declared_capabilities()).unwrap();
    assert_eq!(
        declared,
        json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": true}})
    );
    let client = connect(options).await;

    // With those capabilities declared the server lists the tools that use them.
    let tools = client.list_tools().await.unwrap();
    for name in ["trigger-sampling-request", "trigger-elicitation-request", "get-roots-list", "trigger-url-elicitation"]
    {
        assert!(tools.iter().any(|t| t.name == name), "{name} is listed");
    }

    let sampled = client
        .call_tool("trigger-sampling-request", args(json!({"prompt": "Say hi", "maxTokens": 20})), Default::default())
        .await
        .unwrap();
    assert!(
        text(&sampled).contains("canned reply to Resource trigger-sampling-request context: Say hi"),
        "{sampled:?}"
    );

    let elicited = client.call_tool("trigger-elicitation-request", args(json!({})), Default::default()).await.unwrap();
    assert!(text(&elicited).contains("Name: Ada Lovelace"), "{elicited:?}");

    let url = client
        .call_tool(
            "trigger-url-elicitation",
            args(json!({"url": "https://example.com/consent", "elicitationId": "e-1"})),
            Default::default(),
        )
        .await
        .unwrap();
    assert_ne!(url.is_error, Some(true), "{url:?}");

    // The server asks roots/list after the handshake; the tool shows what it got.
    let mut roots = String::new();
    for _ in 0..100 {
        roots = text(&client.call_tool("get-roots-list", args(json!({})), Default::default()).await.unwrap());
        if roots.contains("file:///tmp/project") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(roots.contains("file:///tmp/project"), "{roots}");

    // Changing them sends notifications/roots/list_changed; the server asks again.
    client.set_roots([root("file:///tmp/other", "other")]).await.unwrap();
    for _ in 0..100 {
        roots = text(&client.call_tool("get-roots-list", args(json!({})), Default::default()).await.unwrap());
        if roots.contains("file:///tmp/other") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(roots.contains("file:///tmp/other") && !roots.contains("file:///tmp/project"), "{roots}");
}

#[tokio::test]
async fn without_handlers_nothing_is_declared_and_roots_cannot_change() {
    let options = ClientOptions::default();
    assert_eq!(serde_json::to_value(options.declared_capabilities()).unwrap(), json!({}));
    let client = connect(options).await;
    let tools = client.list_tools().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "trigger-sampling-request"));
    let err = client.set_roots([root("file:///x", "x")]).await.unwrap_err();
    assert!(matches!(err, ClientError::NotDeclared { capability: "roots" }), "{err:?}");
}

#[tokio::test]
async fn progress_reaches_the_callback() {
    let client = connect(ClientOptions::default()).await;
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = seen.clone();
    let arguments = args(json!({"duration": 0.6, "steps": 3}));
    let options = mcpwire::client::CallOptions::default().with_progress(move |p| sink.lock().unwrap().push(p));
    let result = client.call_tool("trigger-long-running-operation", arguments, options).await.unwrap();
    assert!(text(&result).contains("Long running operation completed"), "{result:?}");
    let seen = seen.lock().unwrap();
    let steps: Vec<String> = seen.iter().map(|p| p.progress.to_string()).collect();
    assert_eq!(steps, ["1", "2", "3"], "{seen:?}");
    assert!(seen.iter().all(|p| p.total.as_ref().map(ToString::to_string).as_deref() == Some("3")));
}

#[tokio::test]
async fn a_dropped_call_is_cancelled_at_the_server() {
    // The server's stdin and stdout are copied to files, to see what it received and sent.
    let dir = std::env::temp_dir().join(format!("mcpwire-cancel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output) = (dir.join("in.jsonl"), dir.join("out.jsonl"));
    let script = format!(
        "tee '{}' | '{}' '{}' stdio | tee '{}'",
        input.display(),
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS"),
        output.display()
    );
    let client = Client::spawn(ChildCommand::new("sh").arg("-c").arg(script), ClientOptions::default()).await.unwrap();
    let call = client.call_tool(
        "trigger-long-running-operation",
        args(json!({"duration": 1.5, "steps": 3})),
        Default::default(),
    );
    // Give up on it after 300 ms: the future is dropped.
    assert!(tokio::time::timeout(Duration::from_millis(300), call).await.is_err());
    // The connection carries on, and the server never answers the cancelled call.
    client.call_tool("echo", args(json!({"message": "still here"})), Default::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let sent = std::fs::read_to_string(&input).unwrap();
    let call_id = sent
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|m| m["params"]["name"] == "trigger-long-running-operation")
        .map(|m| m["id"].clone())
        .expect("the call was sent");
    let cancelled = sent
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("notifications/cancelled reached the server");
    assert_eq!(cancelled["params"]["requestId"], call_id, "{cancelled}");
    let answered = std::fs::read_to_string(&output).unwrap();
    let responses: Vec<serde_json::Value> = answered
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|m| m.get("method").is_none() && m["id"] == call_id)
        .collect();
    assert!(responses.is_empty(), "a cancelled request gets no response: {responses:?}");
    client.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_per_request_timeout_cancels_the_call() {
    let client = connect(ClientOptions::default()).await;
    let err = client
        .call_tool(
            "trigger-long-running-operation",
            args(json!({"duration": 5, "steps": 1})),
            mcpwire::client::CallOptions::default().with_timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    client.ping().await.unwrap();
}

#[tokio::test]
async fn calls_the_server_did_not_advertise_are_refused_before_sending() {
    // Our echo server declares tools and logging only; its input is copied to a file.
    let dir = std::env::temp_dir().join(format!("mcpwire-caps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.jsonl");
    let echo = examples::example_path("echo_server");
    let script = format!("tee '{}' | '{}'", input.display(), echo.display());
    // Legacy: the wire below is the handshake era's, with no server/discover probe first.
    let options = ClientOptions::default().with_era(EraPolicy::Legacy);
    let client = Client::spawn(ChildCommand::new("sh").arg("-c").arg(script), options).await.unwrap();
    assert!(client.capabilities().resources.is_none());
    let reference =
        CompletionReference::Prompt(PromptReference { name: "p".into(), title: None, extra: Default::default() });
    let refusals = [
        (client.list_resources().await.unwrap_err(), "resources"),
        (client.read_resource("file:///x").await.unwrap_err(), "resources"),
        (client.subscribe("file:///x").await.unwrap_err(), "resources.subscribe"),
        (client.list_prompts().await.unwrap_err(), "prompts"),
        (client.complete(reference, "a", "b").await.unwrap_err(), "completions"),
        (client.list_tasks().await.unwrap_err(), "tasks.list"),
    ];
    for (err, expected) in refusals {
        assert!(
            matches!(&err, ClientError::CapabilityNotSupported { capability, .. } if *capability == expected),
            "{err:?}"
        );
    }
    client.list_tools().await.unwrap();
    client.close().await.unwrap();
    let sent = std::fs::read_to_string(&input).unwrap();
    let methods: Vec<String> = sent
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["method"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(methods, ["initialize", "notifications/initialized", "tools/list"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn negotiates_2024_11_05_and_2025_03_26() {
    for version in [ProtocolVersion::V2024_11_05, ProtocolVersion::V2025_03_26] {
        let options = ClientOptions::default()
            .with_protocol_version(version)
            .with_elicitation(ada)
            .with_sampling(canned_sampling);
        // Elicitation does not exist before 2025-06-18: it is not declared.
        assert_eq!(serde_json::to_value(options.declared_capabilities()).unwrap(), json!({"sampling": {}}));
        let client = connect(options).await;
        assert_eq!(client.protocol_version(), version);
        let echo = client.call_tool("echo", args(json!({"message": "old"})), Default::default()).await.unwrap();
        assert_eq!(text(&echo), "Echo: old");
        client.read_resource("demo://resource/dynamic/text/1").await.unwrap();
        // Tasks came in 2025-11-25: refused before sending even though the server has them.
        let err = client.get_task("t").await.unwrap_err();
        assert!(matches!(err, ClientError::CapabilityNotSupported { capability: "tasks", .. }), "{err:?}");
    }
}

#[tokio::test]
async fn tools_as_tasks() {
    let client = connect(ClientOptions::default()).await;
    let params = CallToolRequestParams {
        name: "simulate-research-query".into(),
        arguments: args(json!({"topic": "tide pools", "ambiguous": false})),
        ..CallToolRequestParams::default()
    };
    let created = client.call_tool_as_task(params, Some(60_000)).await.unwrap();
    let id = created.task.task_id.clone();
    let task = client.get_task(&id).await.unwrap();
    assert_eq!(task.task_id, id);
    let listed = client.list_tasks().await.unwrap();
    assert!(listed.iter().any(|t| t.task_id == id));
    let result = client
        .get_task_tool_result(&id, RequestOptions { timeout: Some(Duration::from_secs(20)), ..Default::default() })
        .await
        .unwrap();
    assert!(text(&result).contains("Research Report: tide pools"), "{result:?}");

    // A second task, cancelled.
    let params = CallToolRequestParams {
        name: "simulate-research-query".into(),
        arguments: args(json!({"topic": "kelp", "ambiguous": false})),
        ..CallToolRequestParams::default()
    };
    let created = client.call_tool_as_task(params, None).await.unwrap();
    let cancelled = client.cancel_task(&created.task.task_id).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn streamable_http_resources_prompts_and_sampling() {
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
    let server = support::everything_http("streamableHttp");
    let port = server.port;
    let transport = HttpClientTransport::new(HttpClientConfig::new(format!("http://localhost:{port}/mcp"))).unwrap();
    let notes = Notes::default();
    let client = Client::connect(transport, notes.options().with_sampling(canned_sampling)).await.unwrap();
    let read = client.read_resource("demo://resource/dynamic/text/1").await.unwrap();
    assert_eq!(read.contents.len(), 1);
    let arguments = BTreeMap::from([("city".to_owned(), "Lisbon".to_owned())]);
    let prompt = client.get_prompt("args-prompt", Some(arguments)).await.unwrap();
    assert_eq!(serde_json::to_value(&prompt.messages[0].content).unwrap()["text"], "What's weather in Lisbon?");
    let sampled = client
        .call_tool("trigger-sampling-request", args(json!({"prompt": "Say hi", "maxTokens": 20})), Default::default())
        .await
        .unwrap();
    assert!(text(&sampled).contains("canned reply to"), "{sampled:?}");
    client.set_logging_level(LoggingLevel::Info).await.unwrap();
    client.close().await.unwrap();
}
