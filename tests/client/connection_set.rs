//! The connection set over real servers at once: server-everything and server-memory over
//! stdio, server-everything over Streamable HTTP, and small fake servers (tests/fixtures) for
//! names, filters and list changes. Startup events, routing, timeouts, restarts and shutdown.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpwire::client::config::{ApprovalMode, McpConfig};
use mcpwire::client::connection_set::{ConnectionSet, ServerState, SetCallOptions, SetError, SetEvent, SetOptions};
use mcpwire::client::ClientError;
use mcpwire::proto::jsonrpc::ErrorObject;
use mcpwire::proto::mcp_types::{
    ContentBlock, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ReadResource,
    ReadResourceRequestParams, Root,
};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc::UnboundedReceiver;

fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn everything_stdio(name: &str, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}, \"stdio\"]\n{extra}\n",
        toml_str(&support::peer("MCP_NODE")),
        toml_str(&support::peer("MCP_EVERYTHING_JS"))
    )
}

fn memory_stdio(name: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\nenv = {{ MEMORY_FILE_PATH = {} }}\n",
        toml_str(&support::peer("MCP_NODE")),
        toml_str(&support::peer("MCP_MEMORY_JS")),
        toml_str(&std::env::temp_dir().join(format!("mcpwire-memory-{}.json", std::process::id())).to_string_lossy())
    )
}

/// A server of tests/fixtures/catalog_server.py offering `tools`.
fn catalog_server(name: &str, tools: &[&str], extra: &str) -> String {
    let script = support::repo_path("tests/fixtures/catalog_server.py");
    let args: Vec<String> =
        std::iter::once(script.to_string_lossy().into_owned()).chain(tools.iter().map(|t| t.to_string())).collect();
    format!("[mcp_servers.{name}]\ncommand = \"python3\"\nargs = {}\n{extra}\n", serde_json::to_string(&args).unwrap())
}

fn set(toml: &str, options: SetOptions) -> (ConnectionSet, UnboundedReceiver<SetEvent>) {
    let config = McpConfig::from_toml(toml, "test.toml").unwrap_or_else(|e| panic!("{e}\n{toml}"));
    let (options, events) = options.with_event_channel();
    (ConnectionSet::new(config, options), events)
}

fn drain(events: &mut UnboundedReceiver<SetEvent>) -> Vec<SetEvent> {
    let mut out = Vec::new();
    while let Ok(event) = events.try_recv() {
        out.push(event);
    }
    out
}

/// Waits for an event matching `want`, returning it (and failing after `within`).
async fn wait_for(
    events: &mut UnboundedReceiver<SetEvent>,
    within: Duration,
    want: impl Fn(&SetEvent) -> bool,
) -> SetEvent {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(event)) if want(&event) => return event,
            Ok(Some(_)) => {}
            Ok(None) => panic!("event channel closed"),
            Err(_) => panic!("no matching event within {within:?}"),
        }
    }
}

fn args(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn text(result: &mcpwire::proto::mcp_types::CallToolResult) -> String {
    match result.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn three_real_servers_start_together_and_route_calls() {
    let server = support::everything_http("streamableHttp");
    let port = server.port;
    let toml = format!(
        "{}{}[mcp_servers.everything_http]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\n\
         [mcp_servers.off]\ncommand = \"false\"\nenabled = false\n\n\
         [mcp_servers.broken]\ncommand = \"/nonexistent/server\"\n",
        everything_stdio("everything", ""),
        memory_stdio("memory"),
    );
    let (set, mut events) = set(&toml, SetOptions::default());
    let summary = set.start().await.expect("no required server failed");
    let states: Vec<(&str, ServerState)> = summary.servers.iter().map(|s| (s.name.as_str(), s.state)).collect();
    assert_eq!(
        states,
        [
            ("broken", ServerState::Failed),
            ("everything", ServerState::Ready),
            ("everything_http", ServerState::Ready),
            ("memory", ServerState::Ready),
            ("off", ServerState::Disabled),
        ]
    );
    let broken = &summary.servers[0];
    assert!(broken.error.as_deref().unwrap().starts_with("cannot start /nonexistent/server: "), "{broken:?}");
    for ready in summary.in_state(ServerState::Ready) {
        assert!(ready.protocol_version.is_some() && ready.tools > 0, "{ready:?}");
    }

    let seen = drain(&mut events);
    let starting: Vec<&str> = seen
        .iter()
        .filter_map(|e| match e {
            SetEvent::Starting { server } => Some(server.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(starting.len(), 4, "{seen:?}");
    assert!(seen.iter().any(|e| matches!(e, SetEvent::Disabled { server } if server == "off")));
    assert!(seen.iter().any(|e| matches!(e, SetEvent::Failed { server, required: false, .. } if server == "broken")));
    let ready = seen.iter().filter(|e| matches!(e, SetEvent::Ready { .. })).count();
    assert_eq!(ready, 3);
    let complete = seen.iter().position(|e| matches!(e, SetEvent::StartupComplete(_))).expect("a summary event");
    assert!(seen[..complete].iter().all(|e| !matches!(e, SetEvent::StartupComplete(_))));

    // The catalog: tools of all three under qualified names, resources and prompts of everything.
    let catalog = set.catalog();
    let names: Vec<&str> = catalog.tools.iter().map(|t| t.qualified_name.as_str()).collect();
    for expected in ["mcp__everything__echo", "mcp__everything_http__echo", "mcp__memory__create_entities"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let mut sorted_servers: Vec<&str> = catalog.tools.iter().map(|t| t.server.as_str()).collect();
    sorted_servers.dedup();
    assert_eq!(sorted_servers, ["everything", "everything_http", "memory"], "server order is stable");
    assert!(catalog.resources.iter().any(|(s, _)| s == "everything"));
    assert!(catalog.prompts.iter().any(|(s, _)| s == "everything_http"));

    // Routing, by qualified name and by (server, tool), over both transports.
    let stdio = set
        .call_tool("mcp__everything__echo", args(json!({"message": "via stdio"})), Default::default())
        .await
        .unwrap();
    assert_eq!(text(&stdio), "Echo: via stdio");
    let http = set
        .call_tool_on("everything_http", "echo", args(json!({"message": "via http"})), Default::default())
        .await
        .unwrap();
    assert_eq!(text(&http), "Echo: via http");
    let graph = set.call_tool("mcp__memory__read_graph", None, Default::default()).await.unwrap();
    assert_ne!(graph.is_error, Some(true), "{graph:?}");
    let (uri, _) = (catalog.resources.iter().find(|(s, _)| s == "everything").map(|(_, r)| r.uri.clone()).unwrap(), ());
    let read = set
        .request_on::<ReadResource>(
            "everything",
            serde_json::from_value::<ReadResourceRequestParams>(json!({"uri": uri})).unwrap(),
        )
        .await
        .unwrap();
    assert!(!read.contents.is_empty());
    assert!(matches!(
        set.call_tool("mcp__nope__x", None, Default::default()).await,
        Err(SetError::UnknownTool { name }) if name == "mcp__nope__x"
    ));
    assert!(matches!(
        set.call_tool_on("broken", "x", None, Default::default()).await,
        Err(SetError::Unavailable { state: ServerState::Failed, .. })
    ));

    let groups: Vec<u32> = ["everything", "memory"].iter().map(|s| set.server_pid(s).unwrap()).collect();
    set.shutdown().await;
    support::assert_groups_gone(&groups).await;
    assert!(set.summary().servers.iter().all(|s| matches!(s.state, ServerState::Closed | ServerState::Disabled)));
    assert!(set.tools().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_required_server_that_cannot_start_fails_startup_naming_it() {
    let toml = format!(
        "{}[mcp_servers.gh]\ncommand = \"/nonexistent/github-server\"\nrequired = true\n\n\
         [mcp_servers.slow]\ncommand = \"sleep\"\nargs = [\"30\"]\nrequired = true\nstartup_timeout_ms = 300\n",
        memory_stdio("memory")
    );
    let (set, mut events) = set(&toml, SetOptions::default());
    let started = Instant::now();
    let err = set.start().await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    let SetError::StartupFailed { required, summary } = &err else { panic!("{err}") };
    assert_eq!(required, &["gh", "slow"]);
    let message = err.to_string();
    assert!(
        message.starts_with("required MCP servers failed to start: gh (cannot start /nonexistent/github-server: "),
        "{message}"
    );
    assert!(message.ends_with(", slow (did not start within 300 ms)"), "{message}");
    assert_eq!(summary.in_state(ServerState::Ready).count(), 1, "the others stay up");
    let seen = drain(&mut events);
    assert!(seen.iter().any(|e| matches!(e, SetEvent::Failed { server, required: true, .. } if server == "slow")));
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn startup_can_be_cancelled() {
    let toml = "[mcp_servers.slow]\ncommand = \"sleep\"\nargs = [\"30\"]\nstartup_timeout_sec = 30\n";
    let (set, mut events) = set(toml, SetOptions::default());
    let canceller = set.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel_startup();
    });
    let started = Instant::now();
    let err = set.start().await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(matches!(err, SetError::StartupCancelled { .. }), "{err}");
    assert_eq!(set.status("slow").unwrap().state, ServerState::Cancelled);
    assert!(drain(&mut events).iter().any(|e| matches!(e, SetEvent::Cancelled { server } if server == "slow")));
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn names_collide_and_overflow_filters_and_approval_modes() {
    let long = "a_tool_whose_name_is_far_too_long_for_the_sixty_four_byte_limit_of_model_apis";
    let toml = format!(
        "{}{}{}",
        catalog_server(
            "\"fake.a\"",
            &["t", "die"],
            "disabled_tools = [\"die\"]\ndefault_tools_approval_mode = \"approve\""
        ),
        catalog_server("fake_a", &["t", "u", "v"], "enabled_tools = [\"t\", \"u\"]\ntools.u.approval_mode = \"auto\""),
        catalog_server("long", &[long], ""),
    );
    let (set, _events) = set(&toml, SetOptions::default().with_default_approval_mode(ApprovalMode::Prompt));
    set.start().await.unwrap();
    let tools = set.tools();
    let listed: Vec<(&str, &str, &str, ApprovalMode)> = tools
        .iter()
        .map(|t| (t.qualified_name.as_str(), t.server.as_str(), t.tool.name.as_str(), t.approval_mode))
        .collect();
    let collided = format!("mcp__fake_a__t_{:08x}", mcpwire::client::connection_set::fnv1a(b"mcp__fake_a__t"));
    let long_full = format!("mcp__long__{long}");
    let long_name =
        format!("{}_{:08x}", &long_full[..55], mcpwire::client::connection_set::fnv1a(long_full.as_bytes()));
    assert_eq!(
        listed,
        [
            ("mcp__fake_a__t", "fake.a", "t", ApprovalMode::Approve),
            (collided.as_str(), "fake_a", "t", ApprovalMode::Prompt),
            ("mcp__fake_a__u", "fake_a", "u", ApprovalMode::Auto),
            (long_name.as_str(), "long", long, ApprovalMode::Prompt),
        ]
    );
    assert_eq!(long_name.len(), 64);

    // Both colliding tools route to their own server.
    let a = text(&set.call_tool("mcp__fake_a__t", None, Default::default()).await.unwrap());
    let b = text(&set.call_tool(&collided, None, Default::default()).await.unwrap());
    assert_eq!(a, format!("t called by {}", set.server_pid("fake.a").unwrap()));
    assert_eq!(b, format!("t called by {}", set.server_pid("fake_a").unwrap()));
    assert!(text(&set.call_tool(&long_name, None, Default::default()).await.unwrap()).starts_with(long));

    // Filters are enforced before the server is touched: `die` would kill fake.a.
    let pid = set.server_pid("fake.a").unwrap();
    let err = set.call_tool_on("fake.a", "die", None, Default::default()).await.unwrap_err();
    assert_eq!(err.to_string(), "tool die of server fake.a is disabled");
    let err = set.call_tool_on("fake_a", "v", None, Default::default()).await.unwrap_err();
    assert!(matches!(err, SetError::ToolDisabled { .. }), "{err}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(set.server_pid("fake.a"), Some(pid));
    assert_eq!(set.status("fake.a").unwrap().state, ServerState::Ready);

    assert_eq!(set.approval_mode("fake_a", "u"), Some(ApprovalMode::Auto));
    assert_eq!(set.approval_mode("fake_a", "t"), Some(ApprovalMode::Prompt));
    assert_eq!(set.approval_mode("fake.a", "t"), Some(ApprovalMode::Approve));
    assert_eq!(set.approval_mode("nope", "t"), None);
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_tool_hits_the_smaller_timeout() {
    let toml = everything_stdio("everything", "tool_timeout_sec = 0.3");
    let (set, _events) = set(&toml, SetOptions::default());
    set.start().await.unwrap();
    let slow = || args(json!({"duration": 5, "steps": 5}));
    let started = Instant::now();
    let err = set
        .call_tool(
            "mcp__everything__trigger-long-running-operation",
            slow(),
            mcpwire::client::CallOptions::default().with_timeout(Some(Duration::from_secs(30))),
        )
        .await;
    let elapsed = started.elapsed();
    let Err(SetError::Timeout { server, after, .. }) = &err else { panic!("{err:?}") };
    assert_eq!((server.as_str(), *after), ("everything", Duration::from_millis(300)));
    assert!(elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(2), "{elapsed:?}");
    let err = set
        .call_tool(
            "mcp__everything__trigger-long-running-operation",
            slow(),
            mcpwire::client::CallOptions::default().with_timeout(Some(Duration::from_millis(150))),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, SetError::Timeout { after, .. } if after == Duration::from_millis(150)), "{err}");
    assert_eq!(err.to_string(), "trigger-long-running-operation on server everything timed out after 150 ms");
    // The server is still fine.
    let echo = set
        .call_tool("mcp__everything__echo", args(json!({"message": "still here"})), Default::default())
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: still here");
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_parallel_calls_gets_one_at_a_time() {
    let toml = format!(
        "{}{}",
        everything_stdio("parallel", ""),
        everything_stdio("serial", "supports_parallel_tool_calls = false")
    );
    let (set, _events) = set(&toml, SetOptions::default());
    set.start().await.unwrap();
    let op = || args(json!({"duration": 0.5, "steps": 1}));
    for (server, min, max) in [("parallel", 500, 950), ("serial", 1000, 3000)] {
        let started = Instant::now();
        let (a, b) = tokio::join!(
            set.call_tool_on(server, "trigger-long-running-operation", op(), Default::default()),
            set.call_tool_on(server, "trigger-long-running-operation", op(), Default::default())
        );
        a.unwrap();
        b.unwrap();
        let ms = started.elapsed().as_millis();
        assert!((min..max).contains(&ms), "{server}: two calls took {ms} ms");
    }
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_killed_mid_call_fails_that_call_and_comes_back() {
    let toml = everything_stdio("everything", "");
    let (set, mut events) =
        set(&toml, SetOptions::default().with_backoff(Duration::from_millis(50), Duration::from_secs(1), 5));
    set.start().await.unwrap();
    let first = set.server_pid("everything").unwrap();
    let caller = set.clone();
    let call = tokio::spawn(async move {
        caller
            .call_tool(
                "mcp__everything__trigger-long-running-operation",
                args(json!({"duration": 10, "steps": 10})),
                Default::default(),
            )
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SAFETY: kill(2) on a process group we started.
    unsafe {
        libc::kill(-(first as i32), libc::SIGKILL);
    }
    let err = tokio::time::timeout(Duration::from_secs(5), call).await.expect("the call ends").unwrap().unwrap_err();
    let SetError::Disconnected { server, what, .. } = &err else { panic!("{err}") };
    assert_eq!((server.as_str(), what.as_str()), ("everything", "trigger-long-running-operation"));
    assert!(err.to_string().contains("(not retried)"), "{err}");

    let disconnected =
        wait_for(&mut events, Duration::from_secs(5), |e| matches!(e, SetEvent::Disconnected { .. })).await;
    let SetEvent::Disconnected { reason, .. } = disconnected else { unreachable!() };
    assert!(!reason.is_empty());
    wait_for(&mut events, Duration::from_secs(10), |e| matches!(e, SetEvent::Reconnecting { attempt: 1, .. })).await;
    wait_for(&mut events, Duration::from_secs(15), |e| matches!(e, SetEvent::Reconnected { .. })).await;
    let second = set.server_pid("everything").unwrap();
    assert_ne!(first, second, "a new process");
    assert_eq!(set.status("everything").unwrap().state, ServerState::Ready);
    assert!(set.resolve("mcp__everything__echo").is_some(), "its tools are listed again");
    let echo =
        set.call_tool("mcp__everything__echo", args(json!({"message": "back"})), Default::default()).await.unwrap();
    assert_eq!(text(&echo), "Echo: back");
    set.shutdown().await;
    support::assert_groups_gone(&[first, second]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fake_server_that_dies_is_restarted_with_its_tools() {
    let toml = catalog_server("fake", &["t", "die"], "");
    let (set, mut events) =
        set(&toml, SetOptions::default().with_backoff(Duration::from_millis(20), Duration::from_millis(200), 3));
    set.start().await.unwrap();
    let first = set.server_pid("fake").unwrap();
    let err = set.call_tool("mcp__fake__die", None, Default::default()).await.unwrap_err();
    assert!(matches!(&err, SetError::Disconnected { .. }), "{err}");
    assert!(err.to_string().contains("exit status: 7"), "{err}");
    wait_for(&mut events, Duration::from_secs(10), |e| matches!(e, SetEvent::Reconnected { .. })).await;
    assert_ne!(set.server_pid("fake"), Some(first));
    let t = text(&set.call_tool("mcp__fake__t", None, Default::default()).await.unwrap());
    assert_eq!(t, format!("t called by {}", set.server_pid("fake").unwrap()));
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_list_changed_refreshes_the_catalog() {
    let toml = catalog_server("fake", &["t", "add"], "");
    let (set, mut events) = set(&toml, SetOptions::default().with_refresh_debounce(Duration::from_millis(100)));
    set.start().await.unwrap();
    assert!(set.resolve("mcp__fake__fresh").is_none());
    set.call_tool("mcp__fake__add", args(json!({"name": "fresh"})), Default::default()).await.unwrap();
    wait_for(&mut events, Duration::from_secs(5), |e| {
        matches!(e, SetEvent::Notification { server, notification } if server == "fake" && notification.method == "notifications/tools/list_changed")
    })
    .await;
    wait_for(
        &mut events,
        Duration::from_secs(5),
        |e| matches!(e, SetEvent::CatalogChanged { server } if server == "fake"),
    )
    .await;
    assert_eq!(set.resolve("mcp__fake__fresh"), Some(("fake".to_owned(), "fresh".to_owned())));
    let fresh = text(&set.call_tool("mcp__fake__fresh", None, Default::default()).await.unwrap());
    assert!(fresh.starts_with("fresh called by"), "{fresh}");
    set.shutdown().await;
}

fn root(uri: &str, name: &str) -> Root {
    serde_json::from_value(json!({"uri": uri, "name": name})).unwrap()
}

/// Calls `get-roots-list` on `server` until its text contains `want` (the server asks
/// `roots/list` in the background).
async fn roots_seen_by(set: &ConnectionSet, server: &str, want: &str) -> String {
    let mut seen = String::new();
    for _ in 0..100 {
        seen = text(&set.call_tool_on(server, "get-roots-list", args(json!({})), Default::default()).await.unwrap());
        if seen.contains(want) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn server_requests_reach_the_host_handlers_tagged_with_the_server() {
    let toml = format!("{}{}", everything_stdio("everything", ""), everything_stdio("second", ""));
    let asked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let sampling_log = asked.clone();
    let elicit_log = asked.clone();
    let options = SetOptions::default()
        .with_sampling(move |server: String, params: CreateMessageRequestParams| {
            let prompt =
                serde_json::to_value(&params.messages[0].content).unwrap()["text"].as_str().unwrap().to_owned();
            sampling_log.lock().unwrap().push((server.clone(), format!("sampling: {prompt}")));
            async move {
                Ok::<CreateMessageResult, ErrorObject>(
                    serde_json::from_value(json!({
                        "role": "assistant",
                        "content": {"type": "text", "text": format!("reply for {server}")},
                        "model": "canned-model-1",
                        "stopReason": "endTurn"
                    }))
                    .unwrap(),
                )
            }
        })
        .with_elicitation(move |server: String, params: ElicitRequestParams| {
            assert!(matches!(params, ElicitRequestParams::Form(_)));
            elicit_log.lock().unwrap().push((server, "elicitation".to_owned()));
            async move {
                Ok::<ElicitResult, ErrorObject>(
                    serde_json::from_value(json!({
                        "action": "accept",
                        "content": {"name": "Ada Lovelace", "check": true, "email": "ada@example.com", "integer": 42}
                    }))
                    .unwrap(),
                )
            }
        })
        .with_roots([root("file:///tmp/project", "project")]);
    let (set, _events) = set(&toml, options);
    set.start().await.unwrap();
    for tool in ["trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"] {
        for server in ["everything", "second"] {
            assert!(set.resolve(&format!("mcp__{server}__{tool}")).is_some(), "{server} lists {tool}");
        }
    }

    // Sampling from one server reaches the host handler with that server's name.
    let sampled = set
        .call_tool(
            "mcp__everything__trigger-sampling-request",
            args(json!({"prompt": "Name a colour", "maxTokens": 10})),
            Default::default(),
        )
        .await
        .unwrap();
    assert!(text(&sampled).contains("reply for everything"), "{sampled:?}");
    let sampled = set
        .call_tool_on(
            "second",
            "trigger-sampling-request",
            args(json!({"prompt": "Say hi", "maxTokens": 10})),
            Default::default(),
        )
        .await
        .unwrap();
    assert!(text(&sampled).contains("reply for second"), "{sampled:?}");
    let elicited =
        set.call_tool_on("second", "trigger-elicitation-request", args(json!({})), Default::default()).await.unwrap();
    assert!(format!("{elicited:?}").contains("Name: Ada Lovelace"), "{elicited:?}");
    assert_eq!(
        *asked.lock().unwrap(),
        [
            ("everything".to_owned(), "sampling: Resource trigger-sampling-request context: Name a colour".to_owned()),
            ("second".to_owned(), "sampling: Resource trigger-sampling-request context: Say hi".to_owned()),
            ("second".to_owned(), "elicitation".to_owned()),
        ]
    );

    // Every server is offered the host's roots, and hears when they change.
    for server in ["everything", "second"] {
        let seen = roots_seen_by(&set, server, "file:///tmp/project").await;
        assert!(seen.contains("file:///tmp/project"), "{server}: {seen}");
    }
    let failed = set.set_roots([root("file:///tmp/other", "other")]).await;
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(set.roots(), Some(vec![root("file:///tmp/other", "other")]));
    for server in ["everything", "second"] {
        let seen = roots_seen_by(&set, server, "file:///tmp/other").await;
        assert!(seen.contains("file:///tmp/other") && !seen.contains("file:///tmp/project"), "{server}: {seen}");
    }
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_host_handlers_nothing_is_declared_and_roots_cannot_be_told() {
    let (set, _events) = set(&everything_stdio("everything", ""), SetOptions::default());
    set.start().await.unwrap();
    assert!(set.resolve("mcp__everything__trigger-sampling-request").is_none(), "sampling was not declared");
    assert_eq!(set.roots(), None);
    let failed = set.set_roots([root("file:///tmp/x", "x")]).await;
    assert!(
        matches!(failed.as_slice(), [(server, ClientError::NotDeclared { capability: "roots" })] if server == "everything"),
        "{failed:?}"
    );
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_http_session_fails_one_call_then_the_server_is_reinitialized() {
    use crate::echo::echo_server;
    use mcpwire::transport::sse_http::HttpServerConfig;
    // No standalone GET stream (it would keep the session alive) and a short idle timeout.
    let config = HttpServerConfig::default().standalone_get(false).session_idle_timeout(Duration::from_millis(300));
    let server = echo_server();
    let http = server.serve_http(config).await.unwrap();
    // A handshake-era session is what expires: the stateless 2026-07-28 era has none.
    let toml = format!("[mcp_servers.echo]\nurl = {}\nera = \"legacy\"\n", toml_str(&http.url()));
    let (set, mut events) =
        set(&toml, SetOptions::default().with_backoff(Duration::from_millis(20), Duration::from_millis(200), 5));
    set.start().await.unwrap();
    let echo = || args(json!({"text": "hi"}));
    let first = set.call_tool("mcp__echo__echo", echo(), Default::default()).await.unwrap();
    assert_eq!(http.session_count(), 1);

    // The server forgets the idle session; the client does not know yet.
    let deadline = Instant::now() + Duration::from_secs(5);
    while http.session_count() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(http.session_count(), 0, "the session expired");
    assert_eq!(set.status("echo").unwrap().state, ServerState::Ready);
    drain(&mut events);

    // The next call fails clearly and is not replayed.
    let err = set.call_tool("mcp__echo__echo", echo(), Default::default()).await.unwrap_err();
    assert!(err.is_session_expired(), "{err}");
    assert!(matches!(&err, SetError::Disconnected { server, .. } if server == "echo"), "{err}");
    let message = err.to_string();
    assert!(message.contains("no longer knows this session") && message.contains("not retried"), "{message}");

    // The set re-initializes it from its recipe and lists it again.
    wait_for(
        &mut events,
        Duration::from_secs(5),
        |e| matches!(e, SetEvent::Disconnected { server, .. } if server == "echo"),
    )
    .await;
    wait_for(
        &mut events,
        Duration::from_secs(10),
        |e| matches!(e, SetEvent::Reconnected { server } if server == "echo"),
    )
    .await;
    wait_for(
        &mut events,
        Duration::from_secs(5),
        |e| matches!(e, SetEvent::CatalogChanged { server } if server == "echo"),
    )
    .await;
    assert_eq!(set.status("echo").unwrap().state, ServerState::Ready);
    assert_eq!(http.session_count(), 1, "a new session");
    assert!(set.resolve("mcp__echo__echo").is_some(), "its tools are listed again");
    let again = set.call_tool("mcp__echo__echo", echo(), Default::default()).await.unwrap();
    assert_eq!(text(&again), text(&first));
    set.shutdown().await;
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_optional_server_that_fails_at_startup_is_retried_in_the_background() {
    // `flaky` fails its first start (exits before answering) and works from the second; `gone`
    // never works; `needed` is required and never works, so it is not retried.
    let marker = std::env::temp_dir().join(format!("mcpwire-flaky-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let script = support::repo_path("tests/fixtures/catalog_server.py");
    let flaky = "if [ -e \"$1\" ]; then exec python3 \"$2\" t; else touch \"$1\"; exit 3; fi";
    let toml = format!(
        "[mcp_servers.flaky]\ncommand = \"sh\"\nargs = [\"-c\", {}, \"sh\", {}, {}]\n\n\
         [mcp_servers.gone]\ncommand = \"/nonexistent/server\"\n\n\
         [mcp_servers.needed]\ncommand = \"/nonexistent/needed\"\nrequired = true\n",
        toml_str(flaky),
        toml_str(&marker.to_string_lossy()),
        toml_str(&script.to_string_lossy()),
    );
    let options = SetOptions::default()
        .with_backoff(Duration::from_millis(50), Duration::from_millis(100), 5)
        .with_startup_retries(2);
    let (set, mut events) = set(&toml, options);
    let err = set.start().await.unwrap_err();
    let SetError::StartupFailed { required, summary } = &err else { panic!("{err}") };
    assert_eq!(required, &["needed"]);
    let states: Vec<(&str, ServerState)> = summary.servers.iter().map(|s| (s.name.as_str(), s.state)).collect();
    assert_eq!(
        states,
        [("flaky", ServerState::Failed), ("gone", ServerState::Failed), ("needed", ServerState::Failed)]
    );
    assert!(summary.servers[0].error.is_some(), "{:?}", summary.servers[0]);
    assert!(summary.servers.iter().all(|s| s.failed_attempts == 1), "{summary:?}");
    // The required one is not tried again.
    assert_eq!(set.status("needed").unwrap().state, ServerState::Failed);

    // flaky comes up on its first retry and joins the catalog; gone is given up on after two
    // more tries, with the reason; needed is never retried.
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let settled = |seen: &[SetEvent]| {
        seen.iter().any(|e| matches!(e, SetEvent::Reconnected { server } if server == "flaky"))
            && seen.iter().any(|e| matches!(e, SetEvent::Failed { server, reason, .. } if server == "gone" && reason.starts_with("gave up")))
    };
    while !settled(&seen) {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(event)) => seen.push(event),
            _ => panic!("not settled: {seen:#?}"),
        }
    }
    assert_eq!(set.status("flaky").unwrap().state, ServerState::Ready);
    let t = text(&set.call_tool("mcp__flaky__t", None, Default::default()).await.unwrap());
    assert_eq!(t, format!("t called by {}", set.server_pid("flaky").unwrap()));
    let reason = seen
        .iter()
        .find_map(|e| match e {
            SetEvent::Failed { server, reason, required: false }
                if server == "gone" && reason.starts_with("gave up") =>
            {
                Some(reason.as_str())
            }
            _ => None,
        })
        .unwrap();
    assert!(reason.starts_with("gave up restarting after 2 attempts: cannot start /nonexistent/server"), "{reason}");
    assert_eq!(set.status("gone").unwrap().state, ServerState::Failed);
    // Its start and both retries failed; flaky's count went back to 0 when it started.
    assert_eq!(set.status("gone").unwrap().failed_attempts, 3);
    assert_eq!(set.status("flaky").unwrap().failed_attempts, 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    seen.extend(drain(&mut events));
    let retried: Vec<String> = seen
        .into_iter()
        .filter_map(|e| match e {
            SetEvent::Reconnecting { server, .. } => Some(server),
            _ => None,
        })
        .collect();
    assert!(!retried.iter().any(|s| s == "needed"), "{retried:?}");
    set.shutdown().await;
    let _ = std::fs::remove_file(&marker);
}

/// A call's future is what every layer above awaits and moves at each level (a gateway boxes
/// one per forwarded request): the request state of each transport and a server's start stay
/// boxed behind it, so it does not grow to the largest of them (the HTTP client's, kilobytes).
#[tokio::test]
async fn a_call_future_stays_small_whatever_transports_the_set_can_hold() {
    let (set, _events) = set(&catalog_server("small", &["t"], ""), SetOptions::default());
    let call = set.call_tool_on("small", "t", None, SetCallOptions::default());
    let size = std::mem::size_of_val(&call);
    assert!(size <= 4096, "ConnectionSet::call_tool_on's future is {size} bytes");
    let params = serde_json::from_value::<ReadResourceRequestParams>(json!({"uri": "file:///x"})).unwrap();
    let request = set.request_on::<ReadResource>("small", params);
    let size = std::mem::size_of_val(&request);
    assert!(size <= 4096, "ConnectionSet::request_on's future is {size} bytes");
}
