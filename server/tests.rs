//! The server over the in-process transport, driven with raw messages: cancellation, panics,
//! the concurrency limit, typed bodies, pagination, progress, and shutdown with calls in flight.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::*;
use crate::proto::jsonrpc::{Body, ErrorObject, Id, Message, Request};
use crate::proto::mcp_types::{CallToolRequestParams, CallToolResult, ContentBlock};
use crate::transport::inproc::{self, InprocTransport};

const WAIT: Duration = Duration::from_secs(5);

fn schema() -> Value {
    json!({"type": "object"})
}

/// A client end wired to `server`, already initialized; and the server's task.
async fn connect(server: &Server) -> (InprocTransport, tokio::task::JoinHandle<Result<(), ServerError>>) {
    let (client, end) = inproc::pair(Limits::default());
    let task = tokio::spawn(server.serve(end));
    send(
        &client,
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    )
    .await;
    let answer = recv(&client).await;
    assert!(answer.contains(r#""protocolVersion":"2025-06-18""#), "{answer}");
    send(&client, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    (client, task)
}

async fn send(t: &InprocTransport, text: &str) {
    t.send(Message::from_str(text).unwrap()).await.unwrap();
}

async fn recv_message(t: &InprocTransport) -> Option<Message> {
    tokio::time::timeout(WAIT, t.recv()).await.expect("an answer in time").unwrap()
}

async fn recv(t: &InprocTransport) -> String {
    recv_message(t).await.expect("a message, not the end").to_string()
}

fn call(id: i64, name: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}).to_string()
}

/// Sets its flag when dropped: proves a handler's future was dropped (aborted).
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_cancelled_call_is_aborted_and_gets_no_answer() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let server = Server::builder()
        .tool("slow", "sleeps", schema(), move |_args: Map<String, Value>, _ctx| {
            let guard = DropFlag(flag.clone());
            async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                drop(guard);
                Ok(text_result("done"))
            }
        })
        .build()
        .unwrap();
    let (client, task) = connect(&server).await;
    send(&client, &call(5, "slow", json!({}))).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    send(&client, r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"no"}}"#)
        .await;
    send(&client, r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#).await;
    assert_eq!(recv(&client).await, r#"{"jsonrpc":"2.0","id":6,"result":{}}"#);
    assert!(dropped.load(Ordering::SeqCst), "the handler's future was dropped");
    client.close().await.unwrap();
    assert!(recv_message(&client).await.is_none(), "no answer to the cancelled call, then the end");
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_panicking_tool_is_an_internal_error_and_the_server_goes_on() {
    let server = Server::builder()
        .tool("boom", "panics", schema(), |_args, _ctx| async move {
            if true {
                panic!("kaboom");
            }
            Ok(text_result("unreachable"))
        })
        .build()
        .unwrap();
    let (client, task) = connect(&server).await;
    send(&client, &call(1, "boom", json!({}))).await;
    assert_eq!(
        recv(&client).await,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Tool boom panicked: kaboom"}}"#
    );
    send(&client, &call(2, "boom", json!({}))).await;
    assert!(recv(&client).await.contains("-32603"));
    send(&client, r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#).await;
    assert_eq!(recv(&client).await, r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
    client.close().await.unwrap();
    task.await.unwrap().unwrap();
}

/// A call that answers at once is answered on the reader (no task), one that waits goes on in a
/// task of its own: a later quick call overtakes it, and a panic after the wait is still caught.
#[tokio::test]
async fn quick_calls_overtake_waiting_ones_and_late_panics_are_caught() {
    let server = Server::builder()
        .tool("late-boom", "waits, then panics", schema(), |_args, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if true {
                panic!("late kaboom");
            }
            Ok(text_result("unreachable"))
        })
        .tool("quick", "answers at once", schema(), |_args, _ctx| async move { Ok(text_result("now")) })
        .build()
        .unwrap();
    let (client, task) = connect(&server).await;
    send(&client, &call(1, "late-boom", json!({}))).await;
    send(&client, &call(2, "quick", json!({}))).await;
    send(&client, &call(3, "quick", json!({}))).await;
    let answers = [recv(&client).await, recv(&client).await, recv(&client).await];
    assert!(answers[0].contains(r#""id":2"#) && answers[0].contains("now"), "{}", answers[0]);
    assert!(answers[1].contains(r#""id":3"#) && answers[1].contains("now"), "{}", answers[1]);
    assert_eq!(
        answers[2],
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Tool late-boom panicked: late kaboom"}}"#
    );
    client.close().await.unwrap();
    task.await.unwrap().unwrap();
}

/// A server whose one tool sleeps 150 ms and records how many calls ran at once.
fn counting_server(limit: Option<usize>) -> (Server, Arc<AtomicUsize>) {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (a, p) = (active.clone(), peak.clone());
    let mut builder = Server::builder().tool("nap", "naps", schema(), move |_args, _ctx| {
        let (active, peak) = (a.clone(), p.clone());
        async move {
            let now = active.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(150)).await;
            active.fetch_sub(1, Ordering::SeqCst);
            Ok(text_result("rested"))
        }
    });
    if let Some(limit) = limit {
        builder = builder.max_concurrent_tools(limit);
    }
    (builder.build().unwrap(), peak)
}

async fn run_four_naps(server: &Server) {
    let (client, task) = connect(server).await;
    for id in 0..4 {
        send(&client, &call(id, "nap", json!({}))).await;
    }
    for _ in 0..4 {
        assert!(recv(&client).await.contains("rested"));
    }
    client.close().await.unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn calls_run_concurrently_up_to_the_limit() {
    let (limited, peak) = counting_server(Some(1));
    run_four_naps(&limited).await;
    assert_eq!(peak.load(Ordering::SeqCst), 1, "one at a time under a limit of 1");

    let (free, peak) = counting_server(None);
    run_four_naps(&free).await;
    assert_eq!(peak.load(Ordering::SeqCst), 4, "all four at once under the default limit");
}

#[tokio::test]
async fn typed_bodies_cross_unserialized_both_ways() {
    let server = Server::builder()
        .typed_tool("shout", "upper-cases", schema(), |args: Map<String, Value>, ctx| async move {
            let text = args["text"].as_str().unwrap_or_default().to_uppercase();
            Ok(text_result(format!("{text} (id {})", ctx.request_id())))
        })
        .build()
        .unwrap();
    let (client, task) = connect(&server).await;
    let mut arguments = Map::new();
    arguments.insert("text".into(), json!("hey"));
    let params = CallToolRequestParams { name: "shout".into(), arguments: Some(arguments), ..Default::default() };
    let request = Request { id: Id::Number(9), method: "tools/call".into(), params: Some(Body::typed(params)) };
    client.send(Message::Request(request)).await.unwrap();
    let Some(Message::Response(response)) = recv_message(&client).await else { panic!("expected a response") };
    assert!(response.result.as_raw().is_none(), "the result was never serialized");
    let result: CallToolResult = response.result.into_decoded().unwrap();
    let [ContentBlock::Text(text)] = result.content.as_slice() else { panic!("one text block: {result:?}") };
    assert_eq!(text.text, "HEY (id 9)");
    client.close().await.unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn tools_list_pages_with_an_opaque_cursor() {
    let server = Server::builder()
        .tool("a", "first", schema(), |_args, _ctx| async move { Ok(text_result("a")) })
        .tool("b", "second", schema(), |_args, _ctx| async move { Ok(text_result("b")) })
        .tool("c", "third", schema(), |_args, _ctx| async move { Ok(text_result("c")) })
        .page_size(2)
        .build()
        .unwrap();
    let (client, task) = connect(&server).await;
    send(&client, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await;
    assert_eq!(
        recv(&client).await,
        r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","description":"first","inputSchema":{"type":"object"}},{"name":"b","description":"second","inputSchema":{"type":"object"}}],"nextCursor":"CURSOR"}}"#
            .replace("CURSOR", &super::pagination::encode(2))
    );
    let second = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{"cursor":"{}"}}}}"#,
        super::pagination::encode(2)
    );
    send(&client, &second).await;
    assert_eq!(
        recv(&client).await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"c","description":"third","inputSchema":{"type":"object"}}]}}"#
    );
    send(&client, r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"2"}}"#).await;
    assert_eq!(
        recv(&client).await,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid cursor \"2\""}}"#
    );
    client.close().await.unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn progress_goes_to_the_token_of_the_call() {
    let server = Server::builder()
        .tool("work", "reports progress", schema(), |_args, ctx| async move {
            ctx.progress(1.0, Some(2.0), Some("half".into())).await.map_err(|e| ToolError::failed(e.to_string()))?;
            Ok(text_result("done"))
        })
        .build()
        .unwrap();
    let (client, task) = connect(&server).await;
    send(
        &client,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","_meta":{"progressToken":"tok"}}}"#,
    )
    .await;
    assert_eq!(
        recv(&client).await,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1,"total":2,"message":"half"}}"#
    );
    assert_eq!(recv(&client).await, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}"#);
    client.close().await.unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_end_of_input_waits_for_calls_in_flight() {
    let server = Server::builder()
        .tool("late", "answers late", schema(), |_args, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(text_result("still here"))
        })
        .build()
        .unwrap();
    let (client, task) = connect(&server).await;
    send(&client, &call(1, "late", json!({}))).await;
    client.close().await.unwrap();
    assert!(recv(&client).await.contains("still here"));
    assert!(recv_message(&client).await.is_none());
    task.await.unwrap().unwrap();
}

#[test]
fn the_builder_refuses_duplicate_names_and_non_object_schemas() {
    let dup = Server::builder()
        .tool("x", "one", schema(), |_a, _c| async move { Ok(text_result("")) })
        .tool("x", "two", schema(), |_a, _c| async move { Ok(text_result("")) })
        .build()
        .unwrap_err();
    assert_eq!(dup.to_string(), r#"two tools are named "x""#);
    let bad = Server::builder().tool("y", "bad", json!(true), |_a, _c| async move { Ok(text_result("")) }).build();
    assert_eq!(bad.unwrap_err().to_string(), r#"the input schema of tool "y" is not a JSON object"#);
}

/// A forwarding server: `tools/list` lists one tool, `tools/call` of `echo` answers its
/// arguments as text, `sleep` waits (setting a flag when dropped), `boom` panics.
fn forwarding_server(dropped: Arc<AtomicBool>) -> Server {
    let forwarder = move |request: forward::Forwarded| {
        let dropped = dropped.clone();
        async move {
            let forward::Forwarded { method, params, context, .. } = request;
            match method {
                "tools/list" => {
                    Ok(Body::typed(json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})))
                }
                "tools/call" => {
                    let params: Value = params.unwrap().into_decoded().unwrap();
                    match params["name"].as_str() {
                        Some("sleep") => {
                            let _flag = DropFlag(dropped);
                            context.cancelled().await;
                            Ok(Body::typed(json!({"content": []})))
                        }
                        Some("boom") => panic!("forwarder panicked"),
                        _ => Ok(Body::typed(
                            json!({"content": [{"type": "text", "text": params["arguments"].to_string()}]}),
                        )),
                    }
                }
                other => Err(ErrorObject::new(crate::proto::jsonrpc::ErrorCode::INVALID_PARAMS, format!("no {other}"))),
            }
        }
    };
    Server::builder().forward(forwarder, forward::Forwarding::new(false, true, false)).build().unwrap()
}

#[tokio::test]
async fn a_forwarder_answers_the_catalog_methods_in_both_eras_and_is_cancelled_and_survives_panics() {
    let dropped = Arc::new(AtomicBool::new(false));
    let server = forwarding_server(dropped.clone());
    let (client, _task) = connect(&server).await;
    send(&client, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await;
    assert!(recv(&client).await.contains(r#""name":"echo""#));
    send(&client, &call(2, "echo", json!({"a": 1}))).await;
    let answer = recv(&client).await;
    assert!(answer.contains(r#"{\"a\":1}"#), "the params reach the forwarder as sent: {answer}");
    // Prompts are advertised, and their errors pass through as the forwarder gave them.
    send(&client, r#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p"}}"#).await;
    assert!(recv(&client).await.contains(r#""message":"no prompts/get""#));
    // Resources are not: -32601 without reaching the forwarder; subscribe neither.
    send(&client, r#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#).await;
    assert!(recv(&client).await.contains("-32601"));
    send(&client, &call(5, "sleep", json!({}))).await;
    send(&client, r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#).await;
    send(&client, &call(6, "boom", json!({}))).await;
    let answer = recv(&client).await;
    assert!(answer.contains(r#""id":6"#) && answer.contains("-32603"), "a panic is -32603: {answer}");
    send(&client, r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).await;
    assert!(recv(&client).await.contains(r#""id":7"#), "no answer to the cancelled call; the server goes on");
    assert!(dropped.load(Ordering::SeqCst), "the cancelled request's future was dropped");
    // 2026-07-28 on the same connection: stamped results.
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}}"#;
    send(
        &client,
        &format!(
            r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"echo","arguments":{{}},{meta}}}}}"#
        ),
    )
    .await;
    let answer = recv(&client).await;
    assert!(answer.contains(r#""resultType":"complete""#), "{answer}");
}

/// A tool result's `_meta` (boxed in [`CallToolResult`]) reaches our client whole in each
/// era: as a Rust value in 2025-06-18 and 2025-11-25 (never serialized in process), and
/// through the 2026-07-28 stamp, which writes the result as JSON and leaves a `_meta` the
/// handler set as it was.
#[cfg(feature = "client")]
#[tokio::test]
async fn a_tool_results_meta_reaches_the_client_in_every_era() {
    use crate::client::{Client, ClientOptions, EraPolicy};
    use crate::proto::mcp_types::{RelatedTaskMetadata, ResultMeta};
    use crate::proto::version::ProtocolVersion;
    let server = Server::builder()
        .tool("stamped", "a result with _meta", schema(), |_args, _ctx| async move {
            let mut meta = ResultMeta {
                related_task: Some(RelatedTaskMetadata { task_id: "t1".into(), extra: Map::new() }),
                ..ResultMeta::default()
            };
            meta.extra.insert("x-trace".into(), json!({"span": 7}));
            Ok(CallToolResult { meta: Some(Box::new(meta)), ..text_result("ok") })
        })
        .tool("plain", "a result without _meta", schema(), |_args, _ctx| async move { Ok(text_result("ok")) })
        .build()
        .unwrap();
    let legacy = || ClientOptions::default().with_era(EraPolicy::Legacy);
    for (options, era) in [
        (legacy().with_offered_version_str("2025-06-18"), ProtocolVersion::V2025_06_18),
        (legacy(), ProtocolVersion::V2025_11_25),
        (ClientOptions::default(), ProtocolVersion::V2026_07_28),
    ] {
        let (a, b) = inproc::pair(Limits::default());
        let _task = tokio::spawn(server.serve(b));
        let client = Client::connect(a, options).await.unwrap();
        assert_eq!(client.protocol_version(), era);
        let result = client.call_tool("stamped", Some(Map::new()), Default::default()).await.unwrap();
        let meta = result.meta.expect("the handler's _meta");
        assert_eq!(meta.related_task.map(|t| t.task_id).as_deref(), Some("t1"), "{era:?}");
        assert_eq!(meta.extra.get("x-trace"), Some(&json!({"span": 7})), "{era:?}");
        assert_eq!(meta.server_info, None, "a _meta the handler set is not stamped over: {era:?}");
        // Without one, only the 2026-07-28 stamp gives the result a `_meta`: the server's identity.
        let plain = client.call_tool("plain", Some(Map::new()), Default::default()).await.unwrap();
        let server_info = plain.meta.and_then(|m| m.server_info).map(|info| info.name);
        let expected = (era == ProtocolVersion::V2026_07_28).then(|| server.info().name.clone());
        assert_eq!(server_info, expected, "{era:?}");
    }
}
