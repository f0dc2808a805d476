//! The client against small misbehaving servers (`tests/fixtures/fake_server.py`) over real
//! pipes: malformed lines, stray responses, a child that exits mid-call, one that never
//! answers, an unsupported version, pagination, and the server's own requests.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpwire::client::{Client, ClientError, ClientOptions};
use mcpwire::proto::jsonrpc::Notification;
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::stdio::{ChildCommand, StdioTransport};
use serde_json::{json, Map, Value};

fn fake(mode: &str) -> ChildCommand {
    let script = support::repo_path("tests/fixtures/fake_server.py");
    ChildCommand::new("python3").arg(script.to_string_lossy()).arg(mode)
}

async fn connect(mode: &str) -> Client<StdioTransport> {
    Client::spawn(fake(mode), ClientOptions::default()).await.expect("connects to the fake server")
}

fn args(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

fn text(result: &CallToolResult) -> String {
    match result.content.as_slice() {
        [ContentBlock::Text(t)] => t.text.clone(),
        other => panic!("expected one text block, got {other:?}"),
    }
}

#[tokio::test]
async fn the_handshake_records_what_the_server_said() {
    let client = connect("plain").await;
    assert_eq!(client.server_info().name, "fake");
    assert_eq!(client.instructions(), Some("mode plain"));
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert!(client.capabilities().tools.is_some());
    client.ping().await.unwrap();
}

#[tokio::test]
async fn malformed_lines_from_the_server_are_skipped_and_the_call_completes() {
    let client = connect("malformed").await;
    let result = client.call_tool("echo", args(json!({"n": 1})), Default::default()).await.unwrap();
    assert_eq!(text(&result), r#"echo {"n": 1}"#);
    // The connection is still usable.
    let result = client.call_tool("echo", args(json!({"n": 2})), Default::default()).await.unwrap();
    assert_eq!(text(&result), r#"echo {"n": 2}"#);
}

#[tokio::test]
async fn responses_to_unknown_ids_are_ignored() {
    let client = connect("unknown-id").await;
    let result = client.call_tool("echo", None, Default::default()).await.unwrap();
    assert_eq!(text(&result), "echo {}");
    assert_eq!(result.is_error, None);
    let result = client.call_tool("echo", args(json!({"again": true})), Default::default()).await.unwrap();
    assert_eq!(text(&result), r#"echo {"again": true}"#);
}

#[tokio::test]
async fn a_child_that_exits_mid_call_fails_its_calls_with_its_exit_status() {
    let dying = connect("plain").await;
    let other = connect("plain").await;
    // A call waiting on the same connection when the child dies.
    let waiting = {
        let dying = dying.clone();
        tokio::spawn(async move { dying.call_tool("hang", None, Default::default()).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let err = dying.call_tool("die", None, Default::default()).await.unwrap_err();
    assert!(err.is_server_exit(), "{err:?}");
    assert_eq!(err.to_string(), "server exited during tools/call (exit status: 7)");
    let err = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("no hang").unwrap().unwrap_err();
    assert_eq!(err.to_string(), "server exited during tools/call (exit status: 7)");
    // Later calls on the dead connection fail at once.
    let err = tokio::time::timeout(Duration::from_secs(5), dying.ping()).await.expect("no hang").unwrap_err();
    assert!(err.is_disconnected(), "{err:?}");
    assert_eq!(err.to_string(), "server exited during ping (exit status: 7)");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(dying.exit_status().and_then(|s| s.code()), Some(7));
    // Another connection does not notice.
    let result = other.call_tool("echo", args(json!({"still": "here"})), Default::default()).await.unwrap();
    assert_eq!(text(&result), r#"echo {"still": "here"}"#);
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_and_is_told() {
    let client = connect("plain").await;
    let started = Instant::now();
    let err = client
        .call_tool("hang", None, mcpwire::client::CallOptions::default().with_timeout(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert_eq!(err.to_string(), "tools/call timed out after 200 ms");
    assert!(started.elapsed() >= Duration::from_millis(200));
    // The server got notifications/cancelled for it (request 2: the `auto` era's server/discover
    // probe was 0, initialize 1).
    let report = text(&client.call_tool("report", None, Default::default()).await.unwrap());
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["cancelled"], json!([2]));
}

#[tokio::test]
async fn the_default_timeout_comes_from_the_options() {
    let options = ClientOptions::default().with_request_timeout(Some(Duration::from_millis(1000)));
    let client = Client::spawn(fake("plain"), options).await.unwrap();
    let err = client.call_tool("hang", None, Default::default()).await.unwrap_err();
    assert_eq!(err.to_string(), "tools/call timed out after 1000 ms");
}

#[tokio::test]
async fn a_counter_offer_we_do_not_speak_is_refused_clearly() {
    let err = Client::spawn(fake("bad-version"), ClientOptions::default()).await.unwrap_err();
    assert!(matches!(&err, ClientError::UnsupportedVersion { answered, .. } if answered == "1999-01-01"), "{err:?}");
    assert_eq!(
        err.to_string(),
        "server chose protocol version \"1999-01-01\", which this client does not support (offered 2025-11-25)"
    );
}

#[tokio::test]
async fn a_counter_offer_outside_the_configured_versions_is_refused() {
    // The fake echoes the offer; accepting only older versions makes it unacceptable.
    let options = ClientOptions::default()
        .with_protocol_version(ProtocolVersion::V2025_06_18)
        .with_supported_versions([ProtocolVersion::V2024_11_05]);
    let err = Client::spawn(fake("plain"), options).await.unwrap_err();
    assert!(matches!(&err, ClientError::UnsupportedVersion { answered, .. } if answered == "2025-06-18"), "{err:?}");
    // An offer of an older version that is accepted is used.
    let options = ClientOptions::default().with_protocol_version(ProtocolVersion::V2024_11_05);
    let client = Client::spawn(fake("plain"), options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2024_11_05);
}

#[tokio::test]
async fn list_tools_follows_every_page() {
    let client = connect("paginate").await;
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    let first = client.list_tools_page(None).await.unwrap();
    assert_eq!(first.next_cursor.as_deref(), Some("p2"));
}

#[tokio::test]
async fn a_repeated_cursor_ends_the_listing_with_an_error() {
    let client = connect("loop").await;
    let err = tokio::time::timeout(Duration::from_secs(5), client.list_tools()).await.expect("no endless loop");
    let err = err.unwrap_err();
    assert_eq!(err.to_string(), "tools/list did not end after 2 pages (cursor \"again\")");
}

#[tokio::test]
async fn server_requests_are_answered_and_notifications_reach_the_handler() {
    let notes: Arc<Mutex<Vec<Notification>>> = Arc::default();
    let sink = notes.clone();
    let options = ClientOptions::default().with_handler(move |n: Notification| sink.lock().unwrap().push(n));
    let client = Client::spawn(fake("ask"), options).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let report = loop {
        let report: Value =
            serde_json::from_str(&text(&client.call_tool("report", None, Default::default()).await.unwrap())).unwrap();
        if report["responses"].as_object().is_some_and(|r| r.len() == 2) || Instant::now() > deadline {
            break report;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(report["responses"]["s1"], json!({}), "ping is answered with an empty result");
    assert_eq!(report["responses"]["s2"]["code"], -32601, "other requests are refused for now");
    let notes = notes.lock().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].method, "notifications/message");
    let params: Value = notes[0].params_as().unwrap();
    assert_eq!(params["data"], "hello from fake");
}

#[tokio::test]
async fn many_calls_in_flight_on_one_connection() {
    let client = connect("plain").await;
    let calls: Vec<_> = (0..40)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("echo", args(json!({"i": i})), Default::default()).await })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(text(&call.await.unwrap().unwrap()), format!("echo {{\"i\": {i}}}"));
    }
}

#[tokio::test]
async fn a_program_that_cannot_start_is_a_transport_error() {
    let err = Client::spawn(ChildCommand::new("/nonexistent/server"), ClientOptions::default()).await.unwrap_err();
    assert!(matches!(err, ClientError::Transport(_)), "{err:?}");
    assert!(err.to_string().starts_with("cannot start /nonexistent/server: "), "{err}");
}

#[tokio::test]
async fn closing_the_client_stops_the_child_and_fails_later_calls() {
    let client = connect("plain").await;
    client.close().await.unwrap();
    assert!(client.exit_status().is_some(), "the child was stopped and reaped");
    let err = client.ping().await.unwrap_err();
    assert!(matches!(err, ClientError::Closed { .. }), "closed by us, not a server exit: {err:?}");
}

#[tokio::test]
async fn a_typed_call_checks_structured_content_against_the_listed_output_schema() {
    #[derive(serde::Serialize)]
    struct Count {
        n: i64,
    }
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Counted {
        n: u32,
    }
    let client = connect("structured").await;
    // Not listed yet: nothing to check against, the value is only decoded.
    let unchecked: Counted = client.call_tool_typed("count", &Count { n: 0 }).await.unwrap();
    assert_eq!(unchecked, Counted { n: 0 });
    assert_eq!(client.output_schema("count"), None);

    client.list_tools().await.unwrap();
    assert_eq!(client.output_schema("count").unwrap()["properties"]["n"]["minimum"], 1);
    let good: Counted = client.call_tool_typed("count", &Count { n: 2 }).await.unwrap();
    assert_eq!(good, Counted { n: 2 });
    let err = client.call_tool_typed::<Counted, _>("count", &Count { n: 0 }).await.unwrap_err();
    let ClientError::Structured { tool, error } = &err else { panic!("{err:?}") };
    assert_eq!(tool, "count");
    assert!(matches!(error, mcpwire::proto::mcp_types::StructuredError::Invalid(_)), "{error:?}");
    assert!(
        err.to_string().starts_with("tool count: the structured content does not match the output schema: /n: "),
        "{err}"
    );
    // A value that passes the schema but not the type names the path too.
    let err = client.call_tool_typed::<Counted, _>("count", &Count { n: 1 << 40 }).await.unwrap_err();
    assert!(err.to_string().contains("does not fit: /n: "), "{err}");
    // Arguments that are no object are refused before anything is sent.
    let err = client.call_tool_with_args("count", &[1, 2]).await.unwrap_err();
    assert!(matches!(err, ClientError::Arguments { .. }), "{err:?}");
    assert_eq!(err.to_string(), "the arguments of count are no JSON object: they serialize as an array");
    // With the full validator, a schema whose `$ref` would need the network is no schema to
    // trust: the call fails rather than pass unchecked.
    if cfg!(feature = "validation") {
        let err = client.call_tool_typed::<Counted, _>("remote", &Count { n: 3 }).await.unwrap_err();
        assert!(err.to_string().starts_with("tool remote: the output schema cannot be checked: "), "{err}");
    }
}
