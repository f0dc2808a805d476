//! Our client's era policy against real servers over stdio: the Python SDK's `mcp-server-time`
//! (which speaks both eras) runs 2026-07-28 under `auto` and 2025-11-25 under `legacy`;
//! `server-everything` (handshake era only) makes `auto` fall back to `initialize` without the
//! host seeing an error; the SDK's `MCPServer` whose tools elicit and list roots gets the same
//! answers from the same handlers in both eras (MRTR retries under 2026-07-28, server requests
//! under 2025-11-25), over stdio and over Streamable HTTP.

use crate::support;

use mcpwire::client::{Client, ClientOptions, EraPolicy};
use mcpwire::proto::jsonrpc::ErrorObject;
use mcpwire::proto::mcp_types::{ContentBlock, ElicitRequestParams, ElicitResult, Root};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::stdio::ChildCommand;
use serde_json::json;

fn server_time() -> ChildCommand {
    ChildCommand::new(support::peer("MCP_SERVER_TIME")).arg("--local-timezone").arg("UTC")
}

fn everything() -> ChildCommand {
    ChildCommand::new(support::peer("MCP_NODE")).arg(support::peer("MCP_EVERYTHING_JS")).arg("stdio")
}

async fn current_time_in_utc(client: &Client<mcpwire::transport::stdio::StdioTransport>) -> String {
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "get_current_time"), "{tools:?}");
    let result = client
        .call_tool("get_current_time", json!({"timezone": "UTC"}).as_object().cloned(), Default::default())
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    match &result.content[..] {
        [ContentBlock::Text(t)] => t.text.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn auto_runs_2026_07_28_against_the_python_sdk_server() {
    let client = Client::spawn(server_time(), ClientOptions::default()).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert!(client.capabilities().tools.is_some());
    assert!(!client.server_info().name.is_empty(), "serverInfo comes from the discovery result");
    assert!(current_time_in_utc(&client).await.contains("UTC"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn an_adopted_2026_07_28_needs_no_probe() {
    let options = ClientOptions::default().with_era(EraPolicy::Adopt(ProtocolVersion::V2026_07_28));
    let client = Client::spawn(server_time(), options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert!(current_time_in_utc(&client).await.contains("UTC"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn legacy_runs_2025_11_25_against_the_same_server() {
    let client = Client::spawn(server_time(), ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert!(current_time_in_utc(&client).await.contains("UTC"));
    client.ping().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test]
async fn auto_falls_back_to_initialize_against_a_handshake_only_server() {
    let client = Client::spawn(everything(), ClientOptions::default()).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.initialize_result().protocol_version, "2025-11-25");
    // The session has its handshake back: handshake-era calls work as under `legacy`.
    client.ping().await.unwrap();
    let result =
        client.call_tool("echo", json!({"message": "hi"}).as_object().cloned(), Default::default()).await.unwrap();
    assert!(matches!(&result.content[..], [ContentBlock::Text(t)] if t.text.contains("hi")), "{result:?}");
    client.close().await.unwrap();
}

fn mrtr_server() -> ChildCommand {
    ChildCommand::new(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/peers/py_mrtr_server.py").to_string_lossy().into_owned())
}

async fn name_ada(params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
    assert!(matches!(&params, ElicitRequestParams::Form(f) if f.message == "What is your name?"), "{params:?}");
    Ok(serde_json::from_value(json!({"action": "accept", "content": {"name": "ada"}})).unwrap())
}

fn text_of(result: &mcpwire::proto::mcp_types::CallToolResult) -> &str {
    match &result.content[..] {
        [ContentBlock::Text(t)] => &t.text,
        other => panic!("{other:?}"),
    }
}

fn mrtr_options(era: EraPolicy) -> ClientOptions {
    let root = Root { uri: "file:///work".into(), name: None, meta: None, extra: Default::default() };
    ClientOptions::default().with_era(era).with_elicitation(name_ada).with_roots([root])
}

async fn greet_and_roots(era: EraPolicy, expected: ProtocolVersion) {
    let client = Client::spawn(mrtr_server(), mrtr_options(era)).await.unwrap();
    assert_eq!(client.protocol_version(), expected);
    greet_and_roots_on(&client).await;
    client.close().await.unwrap();
}

async fn greet_and_roots_on<T: mcpwire::transport::Transport>(client: &Client<T>) {
    let greeting = client.call_tool("greet", Some(Default::default()), Default::default()).await.unwrap();
    assert_ne!(greeting.is_error, Some(true), "{greeting:?}");
    assert_eq!(text_of(&greeting), "hello ada");
    let roots = client.call_tool("roots", Some(Default::default()), Default::default()).await.unwrap();
    assert_eq!(text_of(&roots), "file:///work");
}

#[tokio::test]
async fn the_python_sdks_input_requests_are_answered_by_our_handlers_in_both_eras() {
    greet_and_roots(EraPolicy::Auto, ProtocolVersion::V2026_07_28).await;
    greet_and_roots(EraPolicy::Legacy, ProtocolVersion::V2025_11_25).await;
}

/// The Python MRTR server over Streamable HTTP on a free loopback port; killed when dropped.
struct HttpMrtrServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpMrtrServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_mrtr_server() -> HttpMrtrServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = std::process::Command::new(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/peers/py_mrtr_server.py"))
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start py_mrtr_server.py --http");
    let server = HttpMrtrServer { child, url: format!("http://127.0.0.1:{port}/mcp") };
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "py_mrtr_server.py did not listen on {port}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    server
}

#[tokio::test]
async fn over_streamable_http_auto_runs_2026_07_28_with_mrtr_and_legacy_runs_2025_11_25() {
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
    let server = http_mrtr_server();
    for (era, expected) in
        [(EraPolicy::Auto, ProtocolVersion::V2026_07_28), (EraPolicy::Legacy, ProtocolVersion::V2025_11_25)]
    {
        let transport = HttpClientTransport::new(HttpClientConfig::new(server.url.clone())).unwrap();
        let client = Client::connect(transport, mrtr_options(era)).await.unwrap();
        assert_eq!(client.protocol_version(), expected, "{era}");
        assert_eq!(
            client.transport().session_id().is_some(),
            era == EraPolicy::Legacy,
            "{era}: a session only in the handshake era"
        );
        greet_and_roots_on(&client).await;
        client.close().await.unwrap();
    }
}
