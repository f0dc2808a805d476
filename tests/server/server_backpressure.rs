//! A client that floods a server past its in-flight cap gets every answer, not -32603. The server
//! (the server layer, a `slow` tool that takes 5 ms) serves over a real Unix socket pair; the other
//! end is a raw writer that puts 5,000 `tools/call` lines on the wire at once, without waiting for
//! answers (no MCP client: nothing of ours limits it on the sending side), while a reader collects
//! the answers. Past its cap (1,024) the server holds requests back, then stops reading, so the
//! socket fills and the writer waits: backpressure instead of refusals.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use mcpwire::server::{text_result, Server};
use mcpwire::transport::stdio::StdioTransport;
use mcpwire::transport::Limits;
use serde_json::{json, Value};

const CALLS: u64 = 5_000;

fn slow_server() -> Server {
    Server::builder()
        .name("slow")
        .version("1")
        .tool("slow", "Answers its text after 5 ms", json!({"type": "object"}), |args, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(text_result(args.get("text").and_then(Value::as_str).unwrap_or_default()))
        })
        .build()
        .unwrap()
}

#[test]
fn five_thousand_calls_written_at_once_are_each_answered_once() {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let serving = runtime.spawn(async move {
        ours.set_nonblocking(true).unwrap();
        let (input, output) = tokio::net::UnixStream::from_std(ours).unwrap().into_split();
        slow_server().serve(StdioTransport::from_io(input, output, Limits::default())).await
    });
    let mut writer_end = theirs.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}});
        for id in 0..CALLS {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "slow", "arguments": {"text": format!("call {id}")}, "_meta": meta}});
            writer_end.write_all(format!("{call}\n").as_bytes()).unwrap();
        }
        writer_end
    });
    let mut answered = HashSet::new();
    let mut refused = Vec::new();
    for line in BufReader::new(theirs).lines() {
        let message: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let id = message["id"].as_u64().unwrap();
        match message["result"]["content"][0]["text"].as_str() {
            Some(text) => assert_eq!(text, format!("call {id}"), "the answer of {id} is its own"),
            None => refused.push(message),
        }
        assert!(answered.insert(id), "{id} answered twice");
        if answered.len() as u64 == CALLS {
            break;
        }
    }
    assert!(refused.is_empty(), "{} refused, the first: {}", refused.len(), refused[0]);
    assert_eq!(answered.len() as u64, CALLS);
    let writer_end = writer.join().unwrap();
    writer_end.shutdown(std::net::Shutdown::Write).unwrap();
    runtime.block_on(serving).unwrap().unwrap();
}
