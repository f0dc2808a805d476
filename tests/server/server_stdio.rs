//! The server over stdio, byte for byte: the `echo_server` example as a child process driven with
//! raw JSON lines, and a test server with slow and panicking tools served through the stdio
//! transport over in-memory pipes (same framing, no child needed), those on a paused clock: a
//! handler's sleep passes at once, in the order the timers say.
//!
//! The child is `target/<profile>/examples/echo_server`, built if needed (`support/examples.rs`).

use crate::examples;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcpwire::server::{text_result, Server};
use mcpwire::transport::stdio::StdioTransport;
use mcpwire::transport::Limits;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

const WAIT: Duration = Duration::from_secs(10);

const INIT_2025: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"logging":{},"tools":{"listChanged":true}},"serverInfo":{"name":"mcpwire-echo-server","version":"0.1.0"}}}"#;

fn echo_server_path() -> PathBuf {
    examples::example_path("echo_server")
}

/// Raw lines to and from a server.
struct Wire {
    input: Option<Box<dyn AsyncWrite + Send + Unpin>>,
    output: BufReader<Box<dyn AsyncRead + Send + Unpin>>,
    child: Option<tokio::process::Child>,
}

impl Wire {
    fn child() -> Wire {
        let mut child = tokio::process::Command::new(echo_server_path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("echo_server starts");
        let input = Box::new(child.stdin.take().unwrap());
        let output: Box<dyn AsyncRead + Send + Unpin> = Box::new(child.stdout.take().unwrap());
        Wire { input: Some(input), output: BufReader::new(output), child: Some(child) }
    }

    /// `server` served through the stdio transport over in-memory pipes.
    fn in_memory(server: &Server) -> (Wire, tokio::task::JoinHandle<Result<(), mcpwire::server::ServerError>>) {
        let (client_write, server_read) = tokio::io::duplex(1 << 16);
        let (server_write, client_read) = tokio::io::duplex(1 << 16);
        let transport = StdioTransport::from_io(server_read, server_write, Limits::default());
        let task = tokio::spawn(server.serve(transport));
        let output: Box<dyn AsyncRead + Send + Unpin> = Box::new(client_read);
        (Wire { input: Some(Box::new(client_write)), output: BufReader::new(output), child: None }, task)
    }

    async fn write(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().expect("input still open");
        input.write_all(bytes).await.unwrap();
        input.flush().await.unwrap();
    }

    async fn send(&mut self, line: &str) {
        self.write(format!("{line}\n").as_bytes()).await;
    }

    /// The next line, without its newline; `None` at the end of the output.
    async fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        let n = tokio::time::timeout(WAIT, self.output.read_line(&mut line)).await.expect("output in time").unwrap();
        (n > 0).then(|| line.trim_end_matches('\n').to_owned())
    }

    async fn recv(&mut self) -> String {
        self.line().await.expect("a line, not the end")
    }

    /// Sends one request and returns the one line that answers it.
    async fn ask(&mut self, line: &str) -> String {
        self.send(line).await;
        self.recv().await
    }

    async fn close_input(&mut self) {
        let mut input = self.input.take().expect("input open");
        input.shutdown().await.unwrap();
    }

    async fn initialized(&mut self) {
        assert_eq!(self.ask(INIT_2025).await, INIT_RESULT);
        self.send(INITIALIZED).await;
    }

    /// Closes the input; the server must then end its output and (a child) exit successfully.
    async fn finish(mut self) {
        if self.input.is_some() {
            self.close_input().await;
        }
        assert_eq!(self.line().await, None, "nothing after the end");
        if let Some(mut child) = self.child.take() {
            let status = tokio::time::timeout(WAIT, child.wait()).await.expect("exits in time").unwrap();
            assert!(status.success(), "{status}");
        }
    }
}

fn call(id: i64, name: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}).to_string()
}

fn init(id: i64, version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string()
}

#[tokio::test]
async fn initialize_counter_offers_an_unknown_version_and_keeps_a_supported_one() {
    let mut wire = Wire::child();
    assert_eq!(
        wire.ask(&init(1, "2099-01-01")).await,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"logging":{},"tools":{"listChanged":true}},"serverInfo":{"name":"mcpwire-echo-server","version":"0.1.0"}}}"#
    );
    assert_eq!(
        wire.ask(&init(2, "2025-11-25")).await,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"initialize was already received in this session"}}"#
    );
    wire.finish().await;

    for version in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let mut wire = Wire::child();
        let answer: Value = serde_json::from_str(&wire.ask(&init(1, version)).await).unwrap();
        assert_eq!(answer["result"]["protocolVersion"], version);
        wire.finish().await;
    }
}

#[tokio::test]
async fn before_initialize_discover_is_answered_and_tools_are_gated() {
    let mut wire = Wire::child();
    // server/discover (2026-07-28) is answered in both eras, before any initialize.
    assert_eq!(
        wire.ask(r#"{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{}}"#).await,
        r#"{"jsonrpc":"2.0","id":"d","result":{"supportedVersions":["2026-07-28"],"capabilities":{"logging":{},"tools":{"listChanged":true}},"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpwire-echo-server","version":"0.1.0"}}}}"#
    );
    assert_eq!(
        wire.ask(&call(1, "echo", json!({"text": "early"}))).await,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"tools/call is not allowed before initialization completes"}}"#
    );
    assert_eq!(
        wire.ask(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await,
        r#"{"jsonrpc":"2.0","id":2,"result":{}}"#
    );
    // A handshake-era client goes on with initialize.
    wire.initialized().await;
    assert_eq!(
        wire.ask(&call(3, "echo", json!({"text": "now"}))).await,
        r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"now"}]}}"#
    );
    wire.finish().await;
}

#[tokio::test]
async fn tools_answer_with_exact_wire_shapes() {
    let mut wire = Wire::child();
    wire.initialized().await;
    assert_eq!(
        wire.ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await,
        // Derived schemas (the echo demo's tools are typed): `$schema` at the root, no `title`
        // (the Rust type's name stays in the server), the rest as hand-written before
        // (tests/server/demo_schemas.rs).
        r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"add","description":"Return a + b","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"type":"object"}},{"name":"echo","description":"Return the `text` argument as text content","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"text":{"description":"Text to send back unchanged.","type":"string"}},"required":["text"],"type":"object"}},{"name":"greet","description":"Ask the user for their name (an elicitation), then greet them","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{},"type":"object"}}]}}"#
    );
    assert_eq!(
        wire.ask(&call(2, "echo", json!({"text": "héllo \"wire\"\n"}))).await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"héllo \"wire\"\n"}]}}"#
    );
    let sums = [
        (json!(2), json!(3), "5"),
        (json!(2.5), json!(3), "5.5"),
        (json!(-7), json!(3), "-4"),
        (json!(9007199254740993_i64), json!(1), "9007199254740994"),
    ];
    for (i, (a, b, sum)) in sums.into_iter().enumerate() {
        let id = 10 + i as i64;
        assert_eq!(
            wire.ask(&call(id, "add", json!({"a": a, "b": b}))).await,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{sum}"}}]}}}}"#)
        );
    }
    assert_eq!(
        wire.ask(&call(3, "no_such_tool", json!({}))).await,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Tool no_such_tool not found"}}"#
    );
    // The message is the validator's: the full one with feature `validation`, else the subset.
    let why = if cfg!(feature = "validation") {
        r#"/a: \"two\" is not of type \"number\""#
    } else {
        r#"/a: expected type \"number\", got string"#
    };
    assert_eq!(
        wire.ask(&call(4, "add", json!({"a": "two", "b": 3}))).await,
        format!(
            r#"{{"jsonrpc":"2.0","id":4,"result":{{"content":[{{"type":"text","text":"Invalid arguments for tool add: {why}"}}],"isError":true}}}}"#
        )
    );
    let not_object = wire.ask(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":["echo"]}"#).await;
    assert!(
        not_object.starts_with(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: "#),
        "{not_object}"
    );
    let no_name = wire.ask(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments":{}}}"#).await;
    assert!(
        no_name.starts_with(
            r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: missing field `name`"#
        ),
        "{no_name}"
    );
    let no_params = wire.ask(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#).await;
    assert!(no_params.contains(r#""code":-32602"#), "{no_params}");
    assert_eq!(
        wire.ask(r#"{"jsonrpc":"2.0","id":8,"method":"resources/list"}"#).await,
        r#"{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found"}}"#
    );
    assert_eq!(
        wire.ask(r#"{"jsonrpc":"2.0","id":9,"method":"no/such/method","params":{}}"#).await,
        r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found"}}"#
    );
    assert_eq!(
        wire.ask(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#).await,
        r#"{"jsonrpc":"2.0","id":"p","result":{}}"#
    );
    // An unknown notification gets no answer: the next line answers the ping after it.
    wire.send(r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#).await;
    assert_eq!(
        wire.ask(r#"{"jsonrpc":"2.0","id":"q","method":"ping"}"#).await,
        r#"{"jsonrpc":"2.0","id":"q","result":{}}"#
    );
    wire.finish().await;
}

#[tokio::test]
async fn bad_input_is_answered_and_the_server_carries_on() {
    let mut wire = Wire::child();
    wire.initialized().await;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let pong = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

    let malformed = wire.ask("{not json").await;
    assert!(
        malformed.starts_with(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"malformed message: invalid json"#),
        "{malformed}"
    );
    assert_eq!(wire.ask(ping).await, pong);

    let not_rpc = wire.ask(r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#).await;
    assert!(not_rpc.contains(r#""code":-32600"#), "{not_rpc}");
    assert_eq!(wire.ask(ping).await, pong);

    // Past the 4 MiB default frame cap.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(5 << 20)
    );
    // Answered with its id (read from the line's ends), not an id-less frame error.
    let too_large: serde_json::Value = serde_json::from_str(&wire.ask(&huge).await).unwrap();
    assert_eq!(too_large["id"], 3, "{too_large}");
    assert_eq!(too_large["error"]["code"], -32600, "{too_large}");
    let message = too_large["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("request too large: ")
            && message.ends_with("the limit is 4194304 (Limits::max_frame_bytes)")
    );
    assert_eq!(wire.ask(ping).await, pong);

    wire.write(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"x\":\"\xff\xfe\"}\n").await;
    let invalid_utf8 = wire.recv().await;
    assert!(invalid_utf8.starts_with(r#"{"jsonrpc":"2.0","error":{"code":"#), "{invalid_utf8}");
    assert_eq!(wire.ask(ping).await, pong);

    // Every line the server wrote was a JSON-RPC message; it still works after all of it.
    assert_eq!(
        wire.ask(&call(5, "echo", json!({"text": "fine"}))).await,
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"fine"}]}}"#
    );
    wire.finish().await;
}

#[tokio::test]
async fn the_end_of_stdin_still_answers_the_calls_in_flight() {
    let mut wire = Wire::child();
    wire.initialized().await;
    // Requests and the end of input in one go: the server reads the end before it answers.
    let mut batch = String::new();
    for id in 1..=20 {
        batch.push_str(&call(id, "add", json!({"a": id, "b": 1000})));
        batch.push('\n');
    }
    wire.write(batch.as_bytes()).await;
    wire.close_input().await;
    let mut seen = Vec::new();
    while let Some(line) = wire.line().await {
        let answer: Value = serde_json::from_str(&line).unwrap();
        let id = answer["id"].as_i64().unwrap();
        assert_eq!(answer["result"]["content"][0]["text"], (id + 1000).to_string());
        seen.push(id);
    }
    seen.sort();
    assert_eq!(seen, (1..=20).collect::<Vec<_>>(), "every call answered before the output ended");
    wire.finish().await;
}

/// Sets its flag when dropped: proves the handler's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A server with a slow tool (`sleep {ms}`), a panicking one and an instant one.
fn test_server(dropped: Arc<AtomicBool>) -> Server {
    Server::builder()
        .name("test-server")
        .version("1")
        .tool("sleep", "Sleeps ms milliseconds", json!({"type": "object"}), move |args, _ctx| {
            let guard = DropFlag(dropped.clone());
            async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                drop(guard);
                Ok(text_result(format!("slept {ms}")))
            }
        })
        .tool("panic", "Panics", json!({"type": "object"}), |_args, _ctx| async move {
            if true {
                panic!("the tool fell over");
            }
            Ok(text_result(""))
        })
        .build()
        .unwrap()
}

const TEST_INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"logging":{},"tools":{"listChanged":true}},"serverInfo":{"name":"test-server","version":"1"}}}"#;

#[tokio::test(start_paused = true)]
async fn cancellation_aborts_a_call_mid_handler_and_it_gets_no_answer() {
    let dropped = Arc::new(AtomicBool::new(false));
    let (mut wire, task) = Wire::in_memory(&test_server(dropped.clone()));
    assert_eq!(wire.ask(INIT_2025).await, TEST_INIT_RESULT);
    wire.send(INITIALIZED).await;
    wire.send(&call(1, "sleep", json!({"ms": 30_000}))).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!dropped.load(Ordering::SeqCst), "running");
    wire.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"changed my mind"}}"#,
    )
    .await;
    assert_eq!(
        wire.ask(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await,
        r#"{"jsonrpc":"2.0","id":2,"result":{}}"#
    );
    assert!(dropped.load(Ordering::SeqCst), "the handler was aborted");
    // The id may be used again once cancelled.
    assert_eq!(
        wire.ask(&call(1, "sleep", json!({"ms": 1}))).await,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept 1"}]}}"#
    );
    wire.finish().await;
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_panicking_tool_is_an_internal_error_and_the_server_still_answers() {
    let (mut wire, task) = Wire::in_memory(&test_server(Arc::default()));
    wire.initialized_as_test().await;
    assert_eq!(
        wire.ask(&call(1, "panic", json!({}))).await,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Tool panic panicked: the tool fell over"}}"#
    );
    assert_eq!(
        wire.ask(&call(2, "sleep", json!({"ms": 1}))).await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"slept 1"}]}}"#
    );
    wire.finish().await;
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_id_while_the_first_is_in_flight_is_refused() {
    let (mut wire, task) = Wire::in_memory(&test_server(Arc::default()));
    wire.initialized_as_test().await;
    wire.send(&call(7, "sleep", json!({"ms": 300}))).await;
    assert_eq!(
        wire.ask(&call(7, "sleep", json!({"ms": 1}))).await,
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"duplicate request id 7: a request with this id is still in flight"}}"#
    );
    assert_eq!(
        wire.recv().await,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"slept 300"}]}}"#
    );
    wire.finish().await;
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_end_of_input_waits_for_a_slow_call_and_writes_its_answer() {
    let (mut wire, task) = Wire::in_memory(&test_server(Arc::default()));
    wire.initialized_as_test().await;
    wire.send(&call(1, "sleep", json!({"ms": 300}))).await;
    wire.close_input().await;
    assert_eq!(
        wire.recv().await,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept 300"}]}}"#
    );
    wire.finish().await;
    task.await.unwrap().unwrap();
}

impl Wire {
    async fn initialized_as_test(&mut self) {
        assert_eq!(self.ask(INIT_2025).await, TEST_INIT_RESULT);
        self.send(INITIALIZED).await;
    }
}

/// A 2026-07-28 `tools/call` of `who` carrying `capabilities` and `info` in its `_meta`.
fn call_2026(id: u32, capabilities: &str, info: &str, log_level: Option<&str>) -> String {
    let level = log_level.map(|l| format!(r#","io.modelcontextprotocol/logLevel":"{l}""#)).unwrap_or_default();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/clientCapabilities":{capabilities},"io.modelcontextprotocol/clientInfo":{info},"io.modelcontextprotocol/protocolVersion":"2026-07-28"{level}}},"name":"who","arguments":{{}}}}}}"#
    )
}

#[tokio::test]
async fn per_request_2026_calls_of_one_connection_each_see_their_own_envelope() {
    // Each request's handler sees what that request's `_meta` says, whatever the requests before
    // it on the connection said (the server decodes a repeated envelope once and shares it).
    let server = Server::builder()
        .name("test-who")
        .version("1")
        .tool("who", "Says who the client is", json!({"type": "object"}), |_args, ctx| async move {
            let info = ctx.client_info().map(|i| i.name).unwrap_or_default();
            let meta_info = ctx.meta().and_then(|m| m.client_info.as_ref()).map(|i| i.name.clone()).unwrap_or_default();
            let capabilities = serde_json::to_string(&ctx.client_capabilities()).unwrap();
            Ok(text_result(format!("{info}/{meta_info} {capabilities} {:?}", ctx.log_level())))
        })
        .build()
        .unwrap();
    let (mut wire, task) = Wire::in_memory(&server);
    let (sampling, elicitation) = (r#"{"sampling":{}}"#, r#"{"elicitation":{"form":{}}}"#);
    let (a, b) = (r#"{"name":"a","version":"1"}"#, r#"{"name":"b","version":"2"}"#);
    let answer = |id: u32, text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"resultType":"complete","_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"test-who","version":"1"}}}},"content":[{{"type":"text","text":{}}}]}}}}"#,
            serde_json::to_string(text).unwrap()
        )
    };
    let asked = [
        (sampling, a, None, r#"a/a {"sampling":{}} None"#),
        (sampling, a, None, r#"a/a {"sampling":{}} None"#),
        (elicitation, b, Some("info"), r#"b/b {"elicitation":{"form":{}}} Some(Info)"#),
        (sampling, a, None, r#"a/a {"sampling":{}} None"#),
        // Only the client info changes; then only the log level.
        (sampling, b, None, r#"b/b {"sampling":{}} None"#),
        (sampling, b, Some("error"), r#"b/b {"sampling":{}} Some(Error)"#),
        (elicitation, a, Some("error"), r#"a/a {"elicitation":{"form":{}}} Some(Error)"#),
    ];
    for (id, (capabilities, info, level, said)) in (1..).zip(asked) {
        assert_eq!(wire.ask(&call_2026(id, capabilities, info, level)).await, answer(id, said), "request {id}");
    }
    wire.finish().await;
    task.await.unwrap().unwrap();
}
