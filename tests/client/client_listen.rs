//! `subscriptions/listen` from our client (2026-07-28), over real transports: our server over
//! Streamable HTTP (a tool that adds a tool through the server handle; the client's handler
//! hears `notifications/tools/list_changed` on the stream, its list cache is evicted, dropping
//! the handle ends the stream at the server; the connection set's catalog follows), the Python
//! SDK 2.3 `MCPServer` over stdio and over HTTP (its `grow` tool changes the tool list), the
//! TypeScript SDK v2 server over stdio (acknowledged, then cancelled cleanly); the connection
//! set listening again after an HTTP server comes back. A
//! server without the method: `tests/http_client_stateless.rs`.

use crate::support;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use mcpwire::client::config::McpConfig;
use mcpwire::client::connection_set::{ConnectionSet, SetEvent, SetOptions};
use mcpwire::client::{Client, ClientError, ClientOptions, EraPolicy, Listening};
use mcpwire::proto::jsonrpc::{Id, Notification};
use mcpwire::proto::mcp_types::{CacheScope, SubscriptionFilter, Tool};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::server::{resource, text_contents, text_result, CacheHint, Server, ToolError};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use mcpwire::transport::stdio::ChildCommand;
use mcpwire::transport::Transport;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

const WITHIN: Duration = Duration::from_secs(10);

fn tools_only() -> SubscriptionFilter {
    SubscriptionFilter { tools_list_changed: Some(true), ..SubscriptionFilter::default() }
}

fn named(name: &str) -> Option<Map<String, Value>> {
    json!({"name": name}).as_object().cloned()
}

/// Our server: `grow {name}` adds a tool called `name` through the server handle (the tool
/// list changes); one resource; `tools/list` cacheable for a minute, so only the list-changed
/// notification can make a client see the new tool.
fn growing_server() -> Server {
    let handle: Arc<OnceLock<Server>> = Arc::default();
    let for_tool = handle.clone();
    let server = Server::builder()
        .name("growing")
        .cache_hint("tools/list", CacheHint { ttl_ms: 60_000, scope: CacheScope::Public })
        .tool("grow", "adds a tool", json!({"type": "object"}), move |args, _ctx| {
            let server = for_tool.get().cloned();
            async move {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("grown").to_owned();
                let tool = Tool::new(name.clone(), json!({"type": "object"}));
                let server = server.ok_or_else(|| ToolError::failed("no server yet"))?;
                server
                    .add_tool(tool, |_args, _ctx| async { Ok(text_result("grown")) })
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                Ok(text_result(format!("added {name}")))
            }
        })
        .resource(resource("note://a", "a note"), |_request| async { Ok(text_contents("note://a", None, "a")) })
        .build()
        .unwrap();
    let _ = handle.set(server.clone());
    server
}

async fn http(server: &Server) -> HttpServer {
    let server = server.clone();
    server.serve_http(HttpServerConfig::default()).await.unwrap()
}

/// Options whose handler forwards every notification to the returned channel.
fn heard() -> (ClientOptions, mpsc::UnboundedReceiver<Notification>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let options = ClientOptions::default().with_era(EraPolicy::Auto).with_handler(move |n: Notification| {
        let _ = tx.send(n);
    });
    (options, rx)
}

fn subscription_of(n: &Notification) -> Option<Id> {
    let params: Value = n.params.as_ref()?.decode().ok()?;
    serde_json::from_value(params["_meta"]["io.modelcontextprotocol/subscriptionId"].clone()).ok()
}

/// Waits for a notification `method` tagged with the subscription `id`.
async fn wait_for(rx: &mut mpsc::UnboundedReceiver<Notification>, method: &str, id: &Id) -> Notification {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(n)) if n.method == method && subscription_of(&n).as_ref() == Some(id) => return n,
            Ok(Some(_)) => {}
            Ok(None) => panic!("the handler is gone"),
            Err(_) => panic!("no {method} for subscription {id} within {WITHIN:?}"),
        }
    }
}

async fn tool_names<T: Transport>(client: &Client<T>) -> Vec<String> {
    client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn our_server_over_http_tells_a_listening_client_that_its_tools_changed() {
    let server = growing_server();
    let http = http(&server).await;
    let (options, mut rx) = heard();
    let transport = HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap();
    let client = Client::connect(transport, options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(tool_names(&client).await, ["grow"]);

    let asked = SubscriptionFilter { resource_subscriptions: Some(vec!["note://a".into()]), ..tools_only() };
    let listening = client.listen(asked.clone()).await.unwrap();
    assert_eq!(listening.agreed(), &asked, "our server offers both");
    let id = listening.id().clone();
    let ack = wait_for(&mut rx, "notifications/subscriptions/acknowledged", &id).await;
    assert!(ack.params.is_some());

    let added = client.call_tool("grow", named("fresh"), Default::default()).await.unwrap();
    assert_ne!(added.is_error, Some(true), "{added:?}");
    wait_for(&mut rx, "notifications/tools/list_changed", &id).await;
    // The cached page (ttl one minute) was evicted by the notification.
    assert_eq!(tool_names(&client).await, ["grow", "fresh"]);

    // The stream is the server's only listener for the note; dropping the handle closes it.
    assert_eq!(server.resource_updated("note://a"), 1);
    wait_for(&mut rx, "notifications/resources/updated", &id).await;
    drop(listening);
    let deadline = Instant::now() + WITHIN;
    while server.resource_updated("note://a") != 0 {
        assert!(Instant::now() < deadline, "the server still has the listener");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The connection goes on.
    assert_eq!(tool_names(&client).await, ["grow", "fresh"]);
    client.close().await.unwrap();
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_handshake_era_refuses_to_listen() {
    // The session already carries the notifications there.
    let server = growing_server();
    let http = http(&server).await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap();
    let legacy = Client::connect(transport, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();
    assert_eq!(legacy.protocol_version(), ProtocolVersion::V2025_11_25);
    let refused = legacy.listen(tools_only()).await.unwrap_err();
    assert!(matches!(refused, ClientError::CapabilityNotSupported { .. }), "{refused}");
    legacy.close().await.unwrap();
    http.shutdown().await;
}

fn set_over(url: &str) -> (ConnectionSet, mpsc::UnboundedReceiver<SetEvent>) {
    let toml = format!("[mcp_servers.grower]\nurl = {}\n", serde_json::to_string(url).unwrap());
    let config = McpConfig::from_toml(&toml, "test.toml").unwrap();
    let options = SetOptions::default().with_refresh_debounce(Duration::from_millis(20));
    let (options, events) = options.with_event_channel();
    (ConnectionSet::new(config, options), events)
}

async fn wait_for_event(events: &mut mpsc::UnboundedReceiver<SetEvent>, want: impl Fn(&SetEvent) -> bool) {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(event)) if want(&event) => return,
            Ok(Some(_)) => {}
            Ok(None) => panic!("event channel closed"),
            Err(_) => panic!("no matching event within {WITHIN:?}"),
        }
    }
}

/// The connection set over a 2026-07-28 server: `grow` makes the catalog change.
async fn catalog_follows(set: &ConnectionSet, events: &mut mpsc::UnboundedReceiver<SetEvent>) {
    set.start().await.unwrap();
    assert_eq!(set.status("grower").unwrap().protocol_version, Some(ProtocolVersion::V2026_07_28));
    assert!(set.resolve("mcp__grower__fresh").is_none());
    set.call_tool("mcp__grower__grow", named("fresh"), Default::default()).await.unwrap();
    wait_for_event(events, |e| matches!(e, SetEvent::CatalogChanged { server } if server == "grower")).await;
    assert_eq!(set.resolve("mcp__grower__fresh"), Some(("grower".to_owned(), "fresh".to_owned())));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_connection_set_refreshes_a_2026_server_over_http() {
    let server = growing_server();
    let http = http(&server).await;
    let (set, mut events) = set_over(&http.url());
    catalog_follows(&set, &mut events).await;
    let called = set.call_tool("mcp__grower__fresh", None, Default::default()).await.unwrap();
    assert_ne!(called.is_error, Some(true), "{called:?}");
    // Shutdown cancels the stream: the server forgets its listener.
    set.shutdown().await;
    let deadline = Instant::now() + WITHIN;
    while server.resource_updated("note://a") != 0 || http.session_count() != 0 {
        assert!(Instant::now() < deadline, "the server still serves the set");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    http.shutdown().await;
}

fn python_server() -> ChildCommand {
    ChildCommand::new(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/peers/py_mrtr_server.py").to_string_lossy().into_owned())
}

/// The Python MRTR server over Streamable HTTP on a free loopback port; killed when dropped.
struct PythonHttp {
    child: std::process::Child,
    url: String,
}

impl Drop for PythonHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Held by each test that runs Python servers over HTTP: a port found free and released can be
/// found free again by a concurrent test, and one of them restarts its server on its port.
static PYTHON_HTTP_PORTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn python_http() -> PythonHttp {
    // Its own statement: the probe listener must be closed before the server binds the port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    python_http_on(port)
}

fn python_http_on(port: u16) -> PythonHttp {
    let child = std::process::Command::new(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/peers/py_mrtr_server.py"))
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start py_mrtr_server.py --http");
    let server = PythonHttp { child, url: format!("http://127.0.0.1:{port}/mcp") };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "py_mrtr_server.py did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// Against the Python SDK: the stream is acknowledged, `grow` is heard on it, the new tool is
/// listed, and after the handle is dropped the connection still answers.
async fn python_listens<T: Transport>(client: Client<T>, mut rx: mpsc::UnboundedReceiver<Notification>, name: &str) {
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let listening: Listening = client.listen(tools_only()).await.unwrap();
    assert_eq!(listening.agreed(), &tools_only());
    let id = listening.id().clone();
    let grown = client.call_tool("grow", named(name), Default::default()).await.unwrap();
    assert_ne!(grown.is_error, Some(true), "{grown:?}");
    wait_for(&mut rx, "notifications/tools/list_changed", &id).await;
    assert!(tool_names(&client).await.iter().any(|t| t == name));
    drop(listening);
    let called = client.call_tool(name, Some(Map::new()), Default::default()).await.unwrap();
    assert_ne!(called.is_error, Some(true), "{called:?}");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_server_is_heard_on_a_listen_stream_over_stdio_and_http() {
    let (options, rx) = heard();
    let client = Client::spawn(python_server(), options).await.unwrap();
    python_listens(client, rx, "sprout").await;

    let _ports = PYTHON_HTTP_PORTS.lock().await;
    let python = python_http();
    let (options, rx) = heard();
    let transport = HttpClientTransport::new(HttpClientConfig::new(python.url.clone())).unwrap();
    python_listens(Client::connect(transport, options).await.unwrap(), rx, "shoot").await;

    // The connection set over it follows its catalog too.
    let (set, mut events) = set_over(&python.url);
    catalog_follows(&set, &mut events).await;
    set.shutdown().await;

    // A server that dies: the stream ends, and says so instead of waiting forever.
    let (options, _rx) = heard();
    let transport = HttpClientTransport::new(HttpClientConfig::new(python.url.clone())).unwrap();
    let client = Client::connect(transport, options).await.unwrap();
    let listening = client.listen(tools_only()).await.unwrap();
    drop(python);
    let ended = tokio::time::timeout(WITHIN, listening.ended()).await.expect("the stream ended");
    let err = ended.unwrap_err();
    assert!(err.rpc_error().is_some_and(|e| e.code.0 == -32603), "{err}");
}

/// The TypeScript SDK v2's server over stdio: it acknowledges the stream (its tools cannot
/// change the tool list, so no change is heard), the cancellation is taken cleanly, and the
/// connection answers calls after it.
#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_v2_server_acknowledges_a_listen_stream_and_takes_its_cancellation() {
    let command = ChildCommand::new(support::peer("MCP_NODE"))
        .arg(support::repo_path("tests/peers/ts2_server.mjs").to_string_lossy().into_owned())
        .env("MCP_TS2_DIR", support::peer("MCP_TS2_DIR"));
    let (options, mut rx) = heard();
    let client = Client::spawn(command, options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    for round in 0..2 {
        let listening = client.listen(tools_only()).await.unwrap();
        assert_eq!(listening.agreed().tools_list_changed, Some(true), "round {round}");
        let id = listening.id().clone();
        wait_for(&mut rx, "notifications/subscriptions/acknowledged", &id).await;
        assert!(!listening.is_finished());
        drop(listening);
        let echoed = client
            .call_tool("echo", json!({"text": "still here"}).as_object().cloned(), Default::default())
            .await
            .unwrap();
        assert_ne!(echoed.is_error, Some(true), "{echoed:?}");
    }
    assert!(client.exit_status().is_none(), "the server took both cancellations and runs on");
    client.close().await.unwrap();
}

/// A 2026-07-28 server over HTTP has no session whose end would tell the set it went away: its
/// listen stream ending does. The set reconnects, lists and listens again, and hears the new
/// process's changes.
#[tokio::test(flavor = "multi_thread")]
async fn the_connection_set_listens_again_after_the_server_comes_back() {
    let _ports = PYTHON_HTTP_PORTS.lock().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let python = python_http_on(port);
    let toml = format!("[mcp_servers.grower]\nurl = {}\n", serde_json::to_string(&python.url).unwrap());
    let config = McpConfig::from_toml(&toml, "test.toml").unwrap();
    let options = SetOptions::default().with_refresh_debounce(Duration::from_millis(20)).with_backoff(
        Duration::from_millis(100),
        Duration::from_millis(500),
        40,
    );
    let (options, mut events) = options.with_event_channel();
    let set = ConnectionSet::new(config, options);
    set.start().await.unwrap();
    drop(python);
    wait_for_event(&mut events, |e| {
        matches!(e, SetEvent::Disconnected { server, reason } if server == "grower" && reason.contains("subscriptions/listen"))
    })
    .await;
    let _python = python_http_on(port);
    wait_for_event(&mut events, |e| matches!(e, SetEvent::Reconnected { server } if server == "grower")).await;
    // The relisting after the reconnect.
    wait_for_event(&mut events, |e| matches!(e, SetEvent::CatalogChanged { server } if server == "grower")).await;
    set.call_tool("mcp__grower__grow", named("again"), Default::default()).await.unwrap();
    wait_for_event(&mut events, |e| matches!(e, SetEvent::CatalogChanged { server } if server == "grower")).await;
    assert_eq!(set.resolve("mcp__grower__again"), Some(("grower".to_owned(), "again".to_owned())));
    set.shutdown().await;
}
