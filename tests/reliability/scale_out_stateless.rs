//! Scale-out with nothing shared (2026-07-28): three `echo_server --http --replica rN`
//! processes given the same `requestState` secret (`--state-secret-env`) and no session store,
//! behind HAProxy balancing round robin without stickiness (haproxy from the Debian package,
//! `MCP_HAPROXY` in peers.env; scripts/install-peers installs it), all on free loopback ports.
//!
//! - The official Python SDK 2.x client (`py_mrtr_client.py`, its default mode: `server/discover`,
//!   then 2026-07-28) runs the multi-round tool `interview` (two elicitations: three rounds)
//!   through the balancer and gets the final result; the replicas' own logs (one line per round
//!   each served) show the rounds landed on more than one replica.
//! - A replica started with another secret refuses a round sealed by the cluster with -32602
//!   ("requestState failed its integrity check"), goes on serving new requests, and the same
//!   retry through the balancer completes.
//!
//! Each test ends with no child process, zombie or file descriptor of ours left.
//!
//! Not here: the handshake era across replicas, which needs a shared store (tests/scale_out.rs,
//! Redis); MRTR between two processes without a balancer (tests/mrtr_processes.rs).

use crate::examples;
use crate::http_support;
use crate::reliability;
use crate::support;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use http_support::{raw, BOTH, JSON, SHORT};
use reliability::Baseline;
use serde_json::{json, Value};

const V: &str = "2026-07-28";
const SECRET_VAR: &str = "ECHO_STATE_SECRET";
const SHARED_SECRET: &str = "the secret every replica of the cluster was given";
/// How long the whole of what a test started gets to go away once stopped.
const CLEANUP: Duration = Duration::from_secs(10);

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// A child process stopped (SIGTERM, then waited for) when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        // SIGTERM rather than SIGKILL: HAProxy's master then stops its worker too.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

/// Starts `command` with its stderr read line by line; returns once a line holds `ready`
/// (panics if the process ends first). Later lines go to the receiver.
fn start(mut command: Command, ready: &str) -> (Process, mpsc::Receiver<String>) {
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Read to the end even when nobody listens any more: the process must not see a
        // broken pipe.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let seen: Vec<String> = rx.iter().take_while(|line| !line.contains(ready)).collect();
    assert!(child.try_wait().unwrap().is_none(), "{command:?} ended before {ready:?}: {seen:?}");
    (Process(child), rx)
}

/// `echo_server --http ADDR --replica NAME` sealing its rounds with `secret`.
fn replica(echo_server: &PathBuf, name: &str, secret: &str) -> (SocketAddr, Process, mpsc::Receiver<String>) {
    let addr = free_addr();
    let mut command = Command::new(echo_server);
    command.args(["--http", &addr.to_string(), "--replica", name, "--state-secret-env", SECRET_VAR]);
    command.env(SECRET_VAR, secret);
    let (process, log) = start(command, "echo_server: serving");
    (addr, process, log)
}

/// Three replicas sharing [`SHARED_SECRET`] and nothing else, behind HAProxy.
struct Cluster {
    balancer: SocketAddr,
    logs: Vec<mpsc::Receiver<String>>,
    // Dropped in this order: the balancer, then the replicas.
    _haproxy: Process,
    _replicas: Vec<Process>,
    dir: PathBuf,
}

impl Cluster {
    fn start(name: &str) -> Cluster {
        let echo_server = examples::example_path("echo_server");
        let (mut addrs, mut replicas, mut logs) = (Vec::new(), Vec::new(), Vec::new());
        for n in 1..=3 {
            let (addr, process, log) = replica(&echo_server, &format!("r{n}"), SHARED_SECRET);
            addrs.push(addr);
            replicas.push(process);
            logs.push(log);
        }
        let balancer = free_addr();
        let dir = std::env::temp_dir().join(format!("mcpwire-scale-out-stateless-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let servers: String = addrs.iter().enumerate().map(|(i, a)| format!("  server r{} {a}\n", i + 1)).collect();
        // Round robin, each request balanced on its own, no stickiness of any kind.
        let config = format!(
            "global\n  maxconn 200\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  \
             timeout server 60s\nfrontend mcp\n  bind {balancer}\n  default_backend replicas\nbackend replicas\n  \
             balance roundrobin\n{servers}"
        );
        let config_path = dir.join("haproxy.cfg");
        std::fs::write(&config_path, config).unwrap();
        let mut command = Command::new(support::peer("MCP_HAPROXY"));
        command.args(["-W", "-db", "-f"]).arg(&config_path);
        let (haproxy, _) = start(command, "Loading success.");
        Cluster { balancer, logs, _haproxy: haproxy, _replicas: replicas, dir }
    }

    /// Waits for `count` lines equal to `line` across the replicas' logs (they may trail the
    /// answers they belong to: each is written before its answer, but read by another thread),
    /// failing after `within`; how many each replica logged.
    fn await_lines(&self, line: impl Fn(&str) -> String, count: usize, within: Duration) -> Vec<usize> {
        let mut seen = vec![0; self.logs.len()];
        let deadline = Instant::now() + within;
        while seen.iter().sum::<usize>() < count {
            assert!(
                Instant::now() < deadline,
                "{count} lines like {:?} expected, seen per replica {seen:?}",
                line("rN")
            );
            for (i, log) in self.logs.iter().enumerate() {
                if let Ok(got) = log.recv_timeout(Duration::from_millis(20)) {
                    if got == line(&format!("r{}", i + 1)) {
                        seen[i] += 1;
                    }
                }
            }
        }
        seen
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// POSTs a 2026-07-28 `tools/call interview {n}` to `addr`, with `extra` params (the retry's
/// `inputResponses` and `requestState`); the JSON-RPC answer.
async fn interview(addr: SocketAddr, id: u64, n: u64, extra: Value) -> Value {
    let mut params = json!({"name": "interview", "arguments": {"n": n}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    }});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string();
    let headers = [BOTH, JSON, ("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "interview")];
    let answer = raw(addr, "POST", "/mcp", &headers, &body, SHORT).await;
    answer.json()
}

/// The retry of `round` (an `input_required` result) answering its one ask with `answer`.
fn retry_of(round: &Value, answer: &str) -> Value {
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    let asks = round["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(asks.len(), 1, "{round}");
    let key = asks.keys().next().unwrap();
    json!({
        "inputResponses": {key.as_str(): {"action": "accept", "content": {"answer": answer}}},
        "requestState": round["result"]["requestState"].as_str().expect("a requestState"),
    })
}

#[tokio::test]
async fn the_python_sdk_runs_a_multi_round_call_across_replicas_with_no_store() {
    let baseline = Baseline::take().await;
    {
        let cluster = Cluster::start("py");
        let url = format!("http://{}/mcp", cluster.balancer);
        let output = Command::new(support::peer("MCP_PYTHON"))
            .arg(support::repo_path("tests/peers/py_mrtr_client.py"))
            .args([url.as_str(), "interview"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let line: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        assert_eq!(line["protocolVersion"], V, "{line}");
        assert_eq!(line["discover"], true, "{line}");
        assert_eq!(line["asked"], json!(["Question 1 of 2?", "Question 2 of 2?"]), "{line}");
        assert_eq!(line["result"]["content"][0]["text"], "answered from-py, from-py", "{line}");
        // Two asks, so three rounds: each replica logged each round it served.
        let rounds = cluster.await_lines(|name| format!("echo_server {name}: tools/call interview"), 3, SHORT);
        assert_eq!(rounds.iter().sum::<usize>(), 3, "{rounds:?}");
        let serving = rounds.iter().filter(|n| **n > 0).count();
        assert!(serving >= 2, "the three rounds were all served by one replica: {rounds:?}");
    }
    baseline.assert_nothing_left(CLEANUP).await;
}

#[tokio::test]
async fn a_replica_with_another_secret_refuses_the_state_and_harms_nothing_else() {
    let baseline = Baseline::take().await;
    {
        let cluster = Cluster::start("stranger");
        let echo_server = examples::example_path("echo_server");
        let (stranger, _stranger_process, _) = replica(&echo_server, "stranger", "a secret nobody else was given");

        let first = interview(cluster.balancer, 1, 2, json!({})).await;
        assert_eq!(
            first["result"]["inputRequests"].as_object().unwrap().values().next().unwrap()["method"],
            "elicitation/create",
            "{first}"
        );
        let retry = retry_of(&first, "Ada");

        let refused = interview(stranger, 2, 2, retry.clone()).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(refused["id"], 2, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("requestState failed its integrity check"), "{refused}");
        assert!(refused.get("result").is_none(), "{refused}");

        // The stranger still serves requests of its own...
        let own = interview(stranger, 3, 1, json!({})).await;
        assert_eq!(own["result"]["resultType"], "input_required", "{own}");
        // ...and the cluster completes the round the stranger refused.
        let second = interview(cluster.balancer, 4, 2, retry).await;
        let done = interview(cluster.balancer, 5, 2, retry_of(&second, "Lovelace")).await;
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        assert_eq!(done["result"]["content"][0]["text"], "answered Ada, Lovelace", "{done}");
    }
    baseline.assert_nothing_left(CLEANUP).await;
}
