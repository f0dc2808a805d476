//! A multi-round-trip request (2026-07-28) that moves between server processes: `echo_server
//! --http` run twice with the same `requestState` secret (`--state-secret-env`), as replicas
//! behind a load balancer with no sticky sessions. The first round of `greet` is answered by one
//! process and the retry, carrying the answer and the sealed state, completes on the other; a
//! process with another secret refuses the same state.

use crate::examples;
use crate::http_support;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http_support::{raw, BOTH, JSON, SHORT};
use serde_json::{json, Value};

const V: &str = "2026-07-28";

/// `echo_server --http` with the secret `secret`, stopped on drop.
struct Replica {
    child: Child,
    addr: SocketAddr,
}

impl Replica {
    fn start(secret: &str) -> Replica {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let child = Command::new(examples::example_path("echo_server"))
            .args(["--http", &addr.to_string(), "--state-secret-env", "ECHO_STATE_SECRET"])
            .env("ECHO_STATE_SECRET", secret)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "echo_server never listened on {addr}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Replica { child, addr }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// POSTs `tools/call greet` with `extra` params (inputResponses, requestState).
    async fn greet(&self, id: u64, extra: Value) -> Value {
        let mut params = json!({"name": "greet", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
        }});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string();
        let headers = [BOTH, JSON, ("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "greet")];
        raw(self.addr, "POST", "/mcp", &headers, &body, SHORT).await.json()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_retry_completes_on_another_process_with_the_same_secret_and_only_there() {
    let shared = "a secret both replicas were given";
    let (a, b, stranger) = (Replica::start(shared), Replica::start(shared), Replica::start("another replica's secret"));
    assert_ne!(a.pid(), b.pid());

    let first = a.greet(1, json!({})).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let asks = first["result"]["inputRequests"].as_object().unwrap();
    let (key, ask) = asks.iter().next().unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{first}");
    assert_eq!(ask["params"]["message"], "What is your name?", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({key.as_str(): {"action": "accept", "content": {"name": "Ada"}}});
    let retry = json!({"inputResponses": answer, "requestState": state});

    let done = b.greet(2, retry.clone()).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!", "{done}");

    let refused = stranger.greet(3, retry).await;
    assert_eq!(refused["error"]["code"], -32602, "a state sealed with another secret: {refused}");
    assert!(refused.get("result").is_none(), "{refused}");
}
