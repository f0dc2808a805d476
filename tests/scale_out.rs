//! Scale-out (feature `redis`): three `echo_server --replica` processes sharing handshake-era
//! sessions and resumable streams through Redis, behind HAProxy balancing round robin without
//! stickiness, each started by the test on free loopback ports (redis-server and haproxy from
//! the Debian packages, paths in peers.env; scripts/install-peers installs them).
//!
//! - The official TypeScript SDK 1.x client runs a whole session through the balancer, and
//!   its calls are answered by different replicas (each `whoami` answer names its replica).
//! - A stream answered by one replica, cut after some events, is resumed with `Last-Event-ID`
//!   on every replica, each giving exactly the missed events.
//! - A replica killed (SIGKILL) mid-session loses no session: the next calls through the
//!   balancer (which retries a refused connection on another replica) continue it.
//! - `mcp-bridge serve --session-store` (or `MCP_BRIDGE_SESSION_STORE`): three bridges, each
//!   with its own upstream, serve one TypeScript SDK session between them.
//! - A DELETE through one replica ends the copies the others hold (Redis pub/sub).
//! - The TypeScript SDK client answers a tool's elicitation with a POST the balancer sends to
//!   another replica; that replica relays the answer through Redis to the one whose tool waits
//!   (both say so in their logs), and the tool's result holds what the client answered.
//! - A notification made on one replica for the session's standalone stream reaches the
//!   client's GET stream held by another (relayed through Redis, as both replicas log).
//! - `mcp-bridge serve --session-store` keeps its rate limits' buckets in Redis: two bridges
//!   behind the balancer, a burst of 5 never refilled, 15 calls of one caller served by both:
//!   exactly 5 answered, 10 refused with -32029 and a retry hint; another caller goes on; each
//!   replica counts its own refusals. The buckets' script directly: shared by two stores,
//!   refusing with Redis's time, expiring, and failing (not hanging) with Redis stopped.
//! - Virtual servers on two bridges sharing a Redis: each endpoint's sessions are served by
//!   both replicas, and a session id of one endpoint is unknown (404) at the other on both;
//!   each bridge has two connections to Redis, however many endpoints (one store lends its
//!   connections to every endpoint's key prefix, as tested directly too).
//! - Redis stopped: a new session gets 503 with a JSON-RPC error body within the store's
//!   timeout; restarted on the same port: new sessions are served again.
//!
//! Each test runs alone (its [`LeavesNothing`] waits for its turn) and ends by checking that no
//! child process, zombie or file descriptor of its own is left.

#[path = "support/examples.rs"]
mod examples;
#[path = "support/http.rs"]
mod http_support;
#[path = "support/reliability.rs"]
mod reliability;
mod support;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use http_support::{initialize_body, post_with_token, raw, raw_session, Raw, BOTH, JSON, SHORT};
use reliability::LeavesNothing;
use serde_json::{json, Value};

/// How long a test waits, after its processes are stopped, for nothing of ours to be left.
const CLEANUP: Duration = Duration::from_secs(10);

/// A port free on loopback now (the system's choice for a listener bound and dropped).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process killed (SIGTERM, then waited for) when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        // SIGTERM: HAProxy's master then stops its worker too.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

/// Starts `command`, its `stream` (stdout or stderr) read line by line; returns once a line
/// holds `ready` (panics if the process ends first). Later lines go to `log`.
fn start(mut command: Command, from_stderr: bool, ready: &str) -> (Process, mpsc::Receiver<String>) {
    command.stdin(Stdio::null());
    if from_stderr {
        command.stderr(Stdio::piped()).stdout(Stdio::null());
    } else {
        command.stdout(Stdio::piped()).stderr(Stdio::null());
    }
    let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let output: Box<dyn std::io::Read + Send> =
        if from_stderr { Box::new(child.stderr.take().unwrap()) } else { Box::new(child.stdout.take().unwrap()) };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Read to the end even when nobody listens any more: the process must not see a
        // broken pipe.
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let seen: Vec<String> = rx.iter().take_while(|line| !line.contains(ready)).collect();
    assert!(child.try_wait().unwrap().is_none(), "{command:?} ended before {ready:?}: {seen:?}");
    (Process(child), rx)
}

fn redis_server(port: u16) -> Process {
    let mut command = Command::new(support::peer("MCP_REDIS_SERVER"));
    command.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
    start(command, false, "Ready to accept connections").0
}

/// `echo_server`, built with the features this test is built with (`redis` among them).
fn echo_server_path() -> PathBuf {
    examples::example_path("echo_server")
}

struct Cluster {
    balancer: SocketAddr,
    replicas: Vec<SocketAddr>,
    redis_port: u16,
    redis: Option<Process>,
    servers: Vec<Process>,
    logs: Vec<mpsc::Receiver<String>>,
    _haproxy: Process,
    _dir: PathBuf,
}

impl Cluster {
    /// Three `echo_server --replica rN` sharing one Redis.
    fn start(name: &str) -> Cluster {
        let echo_server = echo_server_path();
        Cluster::start_with(name, move |n, addr, redis| {
            let mut command = Command::new(&echo_server);
            command.args(["--http", &addr.to_string(), "--replica", &format!("r{n}"), "--session-store", redis]);
            (command, true, "echo_server: serving")
        })
    }

    /// Three replicas made by `replica(n, address, redis URL)`: the command, whether its
    /// ready line comes on stderr (else stdout), and that line.
    fn start_with(name: &str, replica: impl Fn(usize, SocketAddr, &str) -> (Command, bool, &'static str)) -> Cluster {
        Cluster::start_n(name, 3, replica)
    }

    /// [`Cluster::start_with`] with `count` replicas.
    fn start_n(
        name: &str,
        count: usize,
        replica: impl Fn(usize, SocketAddr, &str) -> (Command, bool, &'static str),
    ) -> Cluster {
        let redis_port = free_port();
        let redis = redis_server(redis_port);
        let mut servers = Vec::new();
        let mut logs = Vec::new();
        let mut replicas = Vec::new();
        for n in 1..=count {
            let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
            let (command, from_stderr, ready) = replica(n, addr, &format!("redis://127.0.0.1:{redis_port}"));
            let (server, log) = start(command, from_stderr, ready);
            servers.push(server);
            logs.push(log);
            replicas.push(addr);
        }
        let balancer: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let dir = std::env::temp_dir().join(format!("mcpwire-scale-out-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let servers_cfg: String =
            replicas.iter().enumerate().map(|(i, a)| format!("  server r{} {a}\n", i + 1)).collect();
        // Round robin, no stickiness; each request balanced on its own (no prefer-last-server);
        // long client/server timeouts for SSE streams, which HAProxy does not buffer; a request
        // that finds its replica gone is retried on another (redispatch).
        let config = format!(
            "global\n  maxconn 200\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  \
             timeout server 60s\n  retries 2\n  option redispatch 1\n  retry-on conn-failure empty-response\nfrontend mcp\n  bind {balancer}\n  default_backend replicas\nbackend replicas\n  \
             balance roundrobin\n{servers_cfg}"
        );
        let config_path = dir.join("haproxy.cfg");
        std::fs::write(&config_path, config).unwrap();
        let mut command = Command::new(support::peer("MCP_HAPROXY"));
        command.args(["-W", "-db", "-f"]).arg(&config_path);
        let (haproxy, _) = start(command, true, "Loading success.");
        Cluster { balancer, replicas, redis_port, redis: Some(redis), servers, logs, _haproxy: haproxy, _dir: dir }
    }
}

/// Runs tests/peers/ts_client.mjs against `url` with `script`; its output lines.
fn ts_client(url: &str, script: &Value) -> Vec<Value> {
    ts_client_with(url, script, &[])
}

/// [`ts_client`] with more environment variables (e.g. `MCP_CLIENT_LABEL`, which gives the
/// client sampling and elicitation handlers).
fn ts_client_with(url: &str, script: &Value, env: &[(&str, &str)]) -> Vec<Value> {
    let output = Command::new(support::peer("MCP_NODE"))
        .arg(support::repo_path("tests/peers/ts_client.mjs"))
        .args(["--url", url])
        .env("MCP_SCRIPT", script.to_string())
        .env("MCP_TS_SDK_DIR", support::peer("MCP_TS_SDK_DIR"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "ts_client failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {result}"))
}

#[test]
fn a_ts_sdk_session_is_served_by_every_replica_behind_the_balancer() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let cluster = Cluster::start("ts");
    let whoami = json!({"call": "whoami", "args": {}});
    let script = json!([
        whoami, whoami, whoami, whoami, whoami, whoami,
        {"call": "count", "args": {"n": 4}, "progress": true},
        {"call": "echo", "args": {"text": "still the same session"}},
    ]);
    let lines = ts_client(&format!("http://{}/mcp", cluster.balancer), &script);
    assert_eq!(lines[0]["step"], "initialize", "{lines:?}");
    assert_eq!(lines[0]["serverInfo"]["name"], "mcpwire-echo-server");
    let results: Vec<&Value> = lines.iter().filter(|l| l["step"] == "tools/call").collect();
    assert_eq!(results.len(), 8, "{lines:?}");
    for line in &results {
        assert_eq!(line["ok"], true, "{line}");
    }
    let mut names: Vec<&str> = results[..6].iter().map(|l| text(&l["result"])).collect();
    names.sort();
    names.dedup();
    assert!(names.len() >= 2, "the calls of one session were answered by {names:?}");
    assert_eq!(text(&results[6]["result"]), "counted 4");
    assert_eq!(results[6]["result"]["progress"].as_array().map(Vec::len), Some(4), "{}", results[6]);
    assert_eq!(text(&results[7]["result"]), "still the same session");
    // Each replica's own log agrees: it logged each call it answered (awaited line by line:
    // the log may trail the answer).
    for (i, log) in cluster.logs.iter().enumerate() {
        let name = format!("r{}", i + 1);
        let answered = results[..6].iter().filter(|l| text(&l["result"]) == name).count();
        let wanted = format!("echo_server {name}: tools/call whoami");
        for n in 0..answered {
            let seen = std::iter::from_fn(|| log.recv_timeout(SHORT).ok()).find(|line| *line == wanted);
            assert!(seen.is_some(), "{name} logged {n} of its {answered} calls");
        }
    }
}

fn post(addr: SocketAddr, session: &str, body: &Value) -> Raw {
    let headers = [BOTH, JSON, ("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-11-25")];
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(raw(addr, "POST", "/mcp", &headers, &body.to_string(), SHORT))
}

#[test]
fn a_stream_cut_on_one_replica_resumes_on_each_of_the_others() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let cluster = Cluster::start("resume");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let session = runtime.block_on(raw_session(cluster.balancer, "2025-11-25"));
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "count", "arguments": {"n": 5}, "_meta": {"progressToken": "p"}}});
    let whole = post(cluster.balancer, &session, &call);
    assert_eq!(whole.status, 200, "{whole:?}");
    let ids = whole.sse_ids();
    assert_eq!(ids.len(), 7, "priming, 5 progress, the answer: {whole:?}");
    // The client read the priming event and two progress notifications, then lost the
    // connection: every replica, asked directly, replays the rest from Redis.
    for replica in &cluster.replicas {
        let headers = [
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Last-Event-ID", ids[2].as_str()),
        ];
        let resumed = runtime.block_on(raw(*replica, "GET", "/mcp", &headers, "", SHORT));
        assert_eq!(resumed.status, 200, "{replica}: {resumed:?}");
        assert_eq!(resumed.sse_ids(), ids[3..], "{replica}: the missed events, none lost or repeated");
        let messages = resumed.sse_messages();
        assert_eq!(messages.last().unwrap()["result"]["content"][0]["text"], "counted 5", "{replica}");
    }
}

#[test]
fn without_redis_new_sessions_get_503_in_bounded_time_and_come_back_with_it() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let mut cluster = Cluster::start("outage");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let initialize =
        |addr| runtime.block_on(raw(addr, "POST", "/mcp", &[BOTH, JSON], &initialize_body("2025-11-25"), SHORT));
    assert_eq!(initialize(cluster.replicas[0]).status, 200);
    drop(cluster.redis.take());
    // An answer at all shows the bound: `raw` gives up after SHORT, and the store's own
    // timeout (2 s) ends the wait for Redis well before that.
    for replica in cluster.replicas.clone() {
        let r = initialize(replica);
        assert_eq!(r.status, 503, "{replica}: {r:?}");
        assert_eq!(r.json()["error"]["code"], -32000, "{r:?}");
    }
    cluster.redis = Some(redis_server(cluster.redis_port));
    for replica in cluster.replicas.clone() {
        // The connection manager reconnects on the first call after the outage, which may
        // still fail; one of the next few succeeds.
        let served = (0..20).map(|_| initialize(replica).status).find(|s| *s == 200);
        assert_eq!(served, Some(200), "{replica} serves new sessions again");
    }
}

#[test]
fn a_replica_killed_mid_session_loses_no_session() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let mut cluster = Cluster::start("kill");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let session = runtime.block_on(raw_session(cluster.balancer, "2025-11-25"));
    let whoami = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}}})
    };
    let answered_by = |r: &Raw| r.sse_messages().last().map(|m| text(&m["result"]).to_owned());
    let before: Vec<Option<String>> =
        (1..=3).map(|id| answered_by(&post(cluster.balancer, &session, &whoami(id)))).collect();
    assert!(before.contains(&Some("r1".to_owned())), "{before:?}");
    // r1 dies without a word (SIGKILL): what it held in memory is gone.
    let mut r1 = cluster.servers.remove(0);
    unsafe { libc::kill(r1.0.id() as i32, libc::SIGKILL) };
    let _ = r1.0.wait();
    for id in 4..=9 {
        let r = post(cluster.balancer, &session, &whoami(id));
        assert_eq!(r.status, 200, "call {id} after r1 died: {r:?}");
        let name = answered_by(&r);
        assert!(matches!(name.as_deref(), Some("r2" | "r3")), "call {id}: {name:?}");
    }
}

/// The store itself, against the same Redis: a record's time to live, touch and removal; a
/// stream capped near its limit, replayed from any point.
#[test]
fn the_redis_store_keeps_records_for_their_ttl_and_caps_streams() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    use mcpwire::transport::sse_http::redis_store::{RedisOptions, RedisStore};
    use mcpwire::transport::sse_http::{EventStore, SessionRecord, SessionStore, StoredEvent};
    let port = free_port();
    let _redis = redis_server(port);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let options = RedisOptions::default().events_per_stream(10).key_prefix("t:");
        let store = RedisStore::connect(&format!("redis://127.0.0.1:{port}"), options).await.unwrap();
        let mut record = SessionRecord::new(r#"{"protocolVersion":"2025-11-25"}"#);
        record.apply("logging/setLevel", r#"{"level":"info"}"#);
        store.save("s1", &record, Duration::from_secs(60)).await.unwrap();
        assert_eq!(store.load("s1").await.unwrap(), Some(record.clone()));
        assert_eq!(store.load("nobody").await.unwrap(), None);
        // A TTL of 1 ms has passed by the time Redis is asked again after a round trip of its own.
        store.save("s2", &record, Duration::from_millis(1)).await.unwrap();
        store.touch("s1", Duration::from_secs(60)).await.unwrap();
        let mut expired = false;
        for _ in 0..100_000 {
            if store.load("s2").await.unwrap().is_none() {
                expired = true;
                break;
            }
        }
        assert!(expired, "a record outlives its TTL");
        SessionStore::remove(&store, "s1").await.unwrap();
        assert_eq!(store.load("s1").await.unwrap(), None);

        for seq in 1..=500u64 {
            store.append("s/a-1", StoredEvent { seq, data: bytes::Bytes::from(format!("{{\"n\":{seq}}}")) });
        }
        let seqs = |events: Vec<StoredEvent>| events.into_iter().map(|e| e.seq).collect::<Vec<_>>();
        let tail = seqs(store.replay("s/a-1", 495).await.unwrap());
        assert_eq!(tail, [496, 497, 498, 499, 500], "replay after 495");
        let kept = seqs(store.replay("s/a-1", 0).await.unwrap());
        assert!(kept.len() >= 10 && kept.len() < 500, "capped near 10 (MAXLEN ~): {}", kept.len());
        assert_eq!(kept.last(), Some(&500));
        assert!(kept.windows(2).all(|w| w[1] == w[0] + 1), "contiguous: {kept:?}");
        EventStore::remove(&store, "s/a-1");
        assert!(store.replay("s/a-1", 0).await.unwrap().is_empty(), "removed (after the queued writes)");
    });
}

#[test]
fn mcp_bridge_replicas_share_sessions_with_session_store() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let echo_server = echo_server_path();
    let cluster = Cluster::start_with("bridge", move |n, addr, redis| {
        let mut command = Command::new(examples::bin_path("mcp-bridge"));
        command.args(["serve", "--listen", &format!("http://{addr}/mcp")]);
        // Half of them from the variable, the other half from the option.
        if n % 2 == 0 {
            command.env("MCP_BRIDGE_SESSION_STORE", redis);
        } else {
            command.args(["--session-store", redis]);
        }
        command.arg("--").arg(&echo_server).args(["--replica", &format!("r{n}")]);
        (command, false, "serving MCP on")
    });
    let whoami = json!({"call": "whoami", "args": {}});
    let script = json!([whoami, whoami, whoami, whoami, whoami, whoami]);
    let lines = ts_client(&format!("http://{}/mcp", cluster.balancer), &script);
    assert_eq!(lines[0]["serverInfo"]["name"], "mcp-bridge", "{lines:?}");
    let mut names: Vec<&str> = lines
        .iter()
        .filter(|l| l["step"] == "tools/call")
        .map(|l| {
            assert_eq!(l["ok"], true, "{l}");
            text(&l["result"])
        })
        .collect();
    assert_eq!(names.len(), 6, "{lines:?}");
    names.sort();
    names.dedup();
    // Each bridge replica has its own upstream (echo_server --replica rN).
    assert!(names.len() >= 2, "the calls of one session were answered by {names:?}");
}

#[test]
fn a_delete_through_one_replica_ends_the_session_on_all() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let cluster = Cluster::start("delete");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let session = runtime.block_on(raw_session(cluster.replicas[0], "2025-11-25"));
    let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    // Every replica holds a copy now.
    for (n, replica) in cluster.replicas.iter().enumerate() {
        assert_eq!(post(*replica, &session, &ping(n as u64)).status, 200, "{replica}");
    }
    let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let deleted = runtime.block_on(raw(cluster.replicas[1], "DELETE", "/mcp", &headers, "", SHORT));
    assert_eq!(deleted.status, 200, "{deleted:?}");
    // The others hear of it through Redis pub/sub and end their copies: each answers 404
    // once it has (a few requests at most).
    for replica in [cluster.replicas[0], cluster.replicas[2]] {
        let status = (10..200).map(|id| post(replica, &session, &ping(id)).status).find(|s| *s != 200);
        assert_eq!(status, Some(404), "{replica} ends its copy");
    }
}

/// The first line of `log` holding `needle`, awaited line by line (the log may trail the
/// answers); `None` when none comes within SHORT.
fn await_line(log: &mpsc::Receiver<String>, needle: &str) -> Option<String> {
    std::iter::from_fn(|| log.recv_timeout(SHORT).ok()).find(|line| line.contains(needle))
}

/// The value of `key=` in a log line.
fn field<'l>(line: &'l str, key: &str) -> &'l str {
    let start = line.find(&format!("{key}=")).unwrap_or_else(|| panic!("no {key} in {line}")) + key.len() + 1;
    line[start..].split_whitespace().next().unwrap()
}

/// Which replica (index) relayed a message (its log holds `relayed`), and which one took it
/// (`taken`, under the name the relayer's line gives in `to`): both awaited in the logs.
fn relay_between(cluster: &Cluster, relayed: &str, to: &str, taken: &str) -> (usize, usize) {
    let (from, line) = cluster
        .logs
        .iter()
        .enumerate()
        .find_map(|(i, log)| await_line(log, relayed).map(|line| (i, line)))
        .unwrap_or_else(|| panic!("no replica logged {relayed:?}"));
    let owner = field(&line, to).to_owned();
    let by = cluster
        .logs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != from)
        .find_map(|(i, log)| {
            std::iter::from_fn(|| log.recv_timeout(SHORT).ok())
                .find(|l| l.contains(taken) && field(l, "replica") == owner)
                .map(|_| i)
        })
        .unwrap_or_else(|| panic!("no other replica, named {owner}, logged {taken:?}"));
    (from, by)
}

#[test]
fn a_ts_sdk_elicitation_is_answered_through_another_replica() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let cluster = Cluster::start("elicit");
    let ask = json!({"call": "ask", "args": {}});
    let script = json!([ask, ask, ask, ask]);
    let lines = ts_client_with(&format!("http://{}/mcp", cluster.balancer), &script, &[("MCP_CLIENT_LABEL", "Ada")]);
    let results: Vec<&Value> = lines.iter().filter(|l| l["step"] == "tools/call").collect();
    assert_eq!(results.len(), 4, "{lines:?}");
    let mut runners = Vec::new();
    for line in &results {
        assert_eq!(line["ok"], true, "{line}");
        let said = text(&line["result"]);
        let runner = said.strip_suffix(" was told Ada").unwrap_or_else(|| panic!("the client's answer: {said}"));
        runners.push(runner.to_owned());
    }
    assert_eq!(lines.iter().filter(|l| l["step"] == "elicitation").count(), 4, "{lines:?}");
    // Round robin sends each answer's POST to the replica after the one running the tool: it
    // relays the answer, and the one whose tool waits takes it.
    let (relayer, owner) = relay_between(
        &cluster,
        "relayed a response to the replica that asked",
        "owner",
        "a relayed response reached the request waiting for it",
    );
    assert_ne!(relayer, owner);
    assert!(runners.contains(&format!("r{}", owner + 1)), "r{} ran one of the tools: {runners:?}", owner + 1);
}

#[test]
fn a_notification_made_on_one_replica_reaches_the_get_stream_held_by_another() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let cluster = Cluster::start("standalone");
    let whoami = json!({"call": "whoami", "args": {}});
    let announce = json!({"call": "announce", "args": {}});
    let script = json!([
        whoami, whoami, announce, announce, announce,
        {"awaitNotification": "notifications/resources/list_changed", "count": 3},
    ]);
    let lines = ts_client(&format!("http://{}/mcp", cluster.balancer), &script);
    let waited = lines.last().unwrap();
    assert_eq!(waited["step"], "awaitNotification", "{lines:?}");
    assert_eq!(waited["ok"], true, "every announcement reached the client: {waited}");
    // Three calls in a row, round robin: at least two ran on replicas not holding the GET.
    let (relayer, holder) = relay_between(
        &cluster,
        "relayed a message to the replica holding the standalone stream",
        "holder",
        "wrote a relayed message on the standalone stream",
    );
    assert_ne!(relayer, holder);
}

/// A Redis started on `port`, and a current-thread runtime to talk to it from.
fn redis_and_runtime(port: u16) -> (Option<Process>, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    (Some(redis_server(port)), runtime)
}

/// Two stores on the Redis at `port` (two replicas' views of it), their keys under `prefix`,
/// each giving up on Redis after 500 ms.
async fn two_redis_stores(
    port: u16,
    prefix: &str,
) -> (mcpwire::transport::sse_http::redis_store::RedisStore, mcpwire::transport::sse_http::redis_store::RedisStore) {
    use mcpwire::transport::sse_http::redis_store::{RedisOptions, RedisStore};
    let url = format!("redis://127.0.0.1:{port}");
    let options = RedisOptions::default().key_prefix(prefix).timeout(Duration::from_millis(500));
    (RedisStore::connect(&url, options.clone()).await.unwrap(), RedisStore::connect(&url, options).await.unwrap())
}

/// The store's relays, against a real Redis: a message reaches the replica it names while that
/// replica listens, and nobody else; with Redis stopped a relay fails within the store's
/// timeout; restarted, the listener subscribes again by itself and relays arrive again.
#[test]
fn the_redis_store_relays_to_the_named_replica_and_recovers_after_an_outage() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    use mcpwire::transport::sse_http::{RelayKind, Relayed, SessionStore, StoreError};
    let port = free_port();
    let (mut redis, runtime) = redis_and_runtime(port);
    runtime.block_on(async {
        let (sender, receiver) = two_redis_stores(port, "t:").await;
        let message = Relayed {
            session: "s1".into(),
            kind: RelayKind::Response,
            message: bytes::Bytes::from_static(br#"{"jsonrpc":"2.0","id":"r1-1","result":{}}"#),
        };
        assert!(!sender.relay("r1", &message).await.unwrap(), "nobody listens as r1 yet");
        let mut r1 = receiver.relayed("r1").await.unwrap().expect("Redis relays");
        assert!(sender.relay("r1", &message).await.unwrap());
        assert_eq!(r1.recv().await, Some(message.clone()));
        assert!(!sender.relay("r2", &message).await.unwrap(), "no replica r2");
        let standalone = Relayed { kind: RelayKind::Standalone, ..message.clone() };
        assert!(sender.relay("r1", &standalone).await.unwrap());
        assert_eq!(r1.recv().await, Some(standalone));

        assert_eq!(sender.stream_holder("s1").await.unwrap(), None);
        receiver.hold_stream("s1", "r1", Duration::from_secs(60)).await.unwrap();
        assert_eq!(sender.stream_holder("s1").await.unwrap().as_deref(), Some("r1"));
        SessionStore::remove(&sender, "s1").await.unwrap();
        assert_eq!(sender.stream_holder("s1").await.unwrap(), None, "forgotten with the session");

        drop(redis.take());
        // Fails rather than waiting for Redis to come back (the minute only guards against a
        // hang: the store's own timeout is 2 s).
        let failed = tokio::time::timeout(Duration::from_secs(60), sender.relay("r1", &message))
            .await
            .expect("the relay gives up");
        assert!(matches!(failed, Err(StoreError::Unavailable(_))), "{failed:?}");

        redis = Some(redis_server(port));
        // The sender's connection and the receiver's subscription both come back on their own:
        // each attempt is bounded by the timeout; one of the next ones is heard.
        let mut heard = false;
        for _ in 0..40 {
            if sender.relay("r1", &message).await.unwrap_or(false) {
                heard = r1.recv().await == Some(message.clone());
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        assert!(heard, "relays reach r1 again after Redis came back");
    });
    drop(redis);
}

/// Runs tests/peers/ts_client.mjs as [`ts_client`] does, calling `at_pause` at each `pause`
/// step of the script (the client waits meanwhile); its output lines.
fn ts_client_pausing(url: &str, script: &Value, mut at_pause: impl FnMut()) -> Vec<Value> {
    use std::io::Write;
    let mut child = Command::new(support::peer("MCP_NODE"))
        .arg(support::repo_path("tests/peers/ts_client.mjs"))
        .args(["--url", url])
        .env("MCP_SCRIPT", script.to_string())
        .env("MCP_TS_SDK_DIR", support::peer("MCP_TS_SDK_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines().map_while(Result::ok) {
        let line: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if line["step"] == "pause" && line.get("ok").is_none() {
            at_pause();
            stdin.write_all(b"\n").unwrap();
            continue;
        }
        lines.push(line);
    }
    assert!(child.wait().unwrap().success(), "ts_client failed: {lines:?}");
    lines
}

#[test]
fn the_ts_sdk_resumes_its_get_stream_on_another_replica_when_its_replica_dies() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let mut cluster = Cluster::start("resume-get");
    let whoami = json!({"call": "whoami", "args": {}});
    let announce = json!({"call": "announce", "args": {}});
    let seen = |count: u64| json!({"awaitNotification": "notifications/resources/list_changed", "count": count});
    let script = json!([
        whoami, whoami, announce, announce, announce, seen(3),
        {"pause": true},
        {"awaitResumption": true},
        announce, announce, announce, seen(6),
    ]);
    let mut holder = None;
    let lines = ts_client_pausing(&format!("http://{}/mcp", cluster.balancer), &script, || {
        // The GET stream's replica (which got events for it) dies without a word.
        let at = cluster.logs.iter().position(|log| await_line(log, "holds the standalone stream").is_some());
        let at = at.expect("a replica holds the TS client's GET stream");
        let server = &mut cluster.servers[at];
        unsafe { libc::kill(server.0.id() as i32, libc::SIGKILL) };
        let _ = server.0.wait();
        holder = Some(at);
    });
    let holder = holder.expect("the script paused");
    for line in &lines {
        assert_eq!(line["ok"], true, "{line}");
    }
    let resumed = lines.iter().find(|l| l["step"] == "awaitResumption").unwrap();
    let last_event_id = resumed["result"]["lastEventId"].as_str().unwrap();
    // The SDK reconnected with the id of the last event it had from the dead replica: another
    // replica replayed that stream's events after it from Redis and took the stream over.
    let taker = (0..cluster.logs.len())
        .filter(|i| *i != holder)
        .find(|i| {
            std::iter::from_fn(|| cluster.logs[*i].recv_timeout(SHORT).ok())
                .find(|l| l.contains("resumed a stream of another replica"))
                .is_some_and(|l| last_event_id.starts_with(&format!("{}_", field(&l, "stream"))))
        })
        .unwrap_or_else(|| panic!("no live replica resumed {last_event_id}"));
    assert_ne!(taker, holder);
    // None lost, none repeated: exactly the six announcements, and every call answered.
    let counts: Vec<&Value> = lines.iter().filter(|l| l["step"] == "awaitNotification").collect();
    assert_eq!(counts.last().unwrap()["result"]["count"], 6, "{counts:?}");
    assert_eq!(lines.iter().filter(|l| l["step"] == "tools/call").count(), 8, "{lines:?}");
}

/// A replica's subscription connection dropped (killed in Redis with `CLIENT KILL TYPE
/// pubsub`): the listener subscribes again at once, and a message relayed to it in between is
/// published again until it is heard, not dropped as if the replica were gone.
#[test]
fn a_relay_sent_while_the_receivers_subscription_is_made_again_still_arrives() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    use mcpwire::transport::sse_http::redis_store::{RedisOptions, RedisStore};
    use mcpwire::transport::sse_http::{RelayKind, Relayed, SessionStore};
    let port = free_port();
    let redis = redis_server(port);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let url = format!("redis://127.0.0.1:{port}");
        // The reconnect pause (the timeout) is longer than every relay retry together.
        let options = RedisOptions::default().key_prefix("t:").timeout(Duration::from_secs(2));
        let sender = RedisStore::connect(&url, options.clone()).await.unwrap();
        let receiver = RedisStore::connect(&url, options).await.unwrap();
        let mut r1 = receiver.relayed("r1").await.unwrap().expect("Redis relays");
        let message = Relayed {
            session: "s1".into(),
            kind: RelayKind::Response,
            message: bytes::Bytes::from_static(br#"{"jsonrpc":"2.0","id":"r1-1","result":{}}"#),
        };
        assert!(sender.relay("r1", &message).await.unwrap());
        assert_eq!(r1.recv().await, Some(message.clone()));

        let mut admin = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
        let killed: i64 =
            redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query_async(&mut admin).await.unwrap();
        assert!(killed >= 1, "r1's subscription connection was killed");
        assert!(sender.relay("r1", &message).await.unwrap(), "heard once r1 subscribed again");
        let arrived = tokio::time::timeout(Duration::from_secs(5), r1.recv()).await;
        assert_eq!(arrived.expect("delivered"), Some(message.clone()));
        assert!(!sender.relay("r2", &message).await.unwrap(), "a replica nobody runs is still told apart");
    });
    drop(redis);
}

/// A connection to the Redis at `port`, for a test's own questions.
async fn redis_admin(port: u16) -> redis::aio::MultiplexedConnection {
    let url = format!("redis://127.0.0.1:{port}");
    redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap()
}

/// How many clients `admin`'s Redis has (`CLIENT LIST`), `admin` among them.
async fn redis_clients(admin: &mut redis::aio::MultiplexedConnection) -> usize {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(admin).await.unwrap();
    list.lines().count()
}

/// `RedisStore::with_prefix`, as `mcp-bridge serve` gives each virtual server its sessions: the
/// stores of three prefixes on the two connections of one (as many Redis clients as with one
/// prefix), each prefix's sessions, removals and relays apart from the others'.
#[test]
fn the_redis_stores_of_virtual_servers_share_one_stores_connections() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    use mcpwire::transport::sse_http::redis_store::{RedisOptions, RedisStore};
    use mcpwire::transport::sse_http::{RelayKind, Relayed, SessionRecord, SessionStore};
    let port = free_port();
    let (redis, runtime) = redis_and_runtime(port);
    runtime.block_on(async {
        let url = format!("redis://127.0.0.1:{port}");
        let mut admin = redis_admin(port).await;
        let root = RedisStore::connect(&url, RedisOptions::default().key_prefix("v:")).await.unwrap();
        let mut root_relayed = root.relayed("r1").await.unwrap().expect("Redis relays");
        let one_prefix = redis_clients(&mut admin).await;
        assert_eq!(one_prefix, 3, "the store's two connections (commands, pub/sub) and the one asking");
        let dev = root.with_prefix("v:endpoint:dev:").await.unwrap();
        let readonly = root.with_prefix("v:endpoint:readonly:").await.unwrap();
        let mut dev_relayed = dev.relayed("r1").await.unwrap().expect("Redis relays");
        let mut readonly_relayed = readonly.relayed("r1").await.unwrap().expect("Redis relays");
        assert_eq!(redis_clients(&mut admin).await, one_prefix, "two prefixes more, no connection more");

        // A session of one prefix is unknown under the others.
        let record = SessionRecord { initialize: "{}".into(), replayed: Vec::new() };
        dev.save("s1", &record, Duration::from_secs(60)).await.unwrap();
        assert_eq!(dev.load("s1").await.unwrap(), Some(record));
        assert_eq!(root.load("s1").await.unwrap(), None);
        assert_eq!(readonly.load("s1").await.unwrap(), None);

        // A removal is heard by the listeners of its prefix only: all three are on one
        // connection, in the order published, so a removal of dev's heard by root would come
        // before root's own.
        let (mut root_ended, mut dev_ended) = (root.ended_elsewhere().unwrap(), dev.ended_elsewhere().unwrap());
        SessionStore::remove(&dev, "s1").await.unwrap();
        SessionStore::remove(&root, "s2").await.unwrap();
        SessionStore::remove(&dev, "s3").await.unwrap();
        assert_eq!(root_ended.recv().await.unwrap(), "s2");
        assert_eq!((dev_ended.recv().await.unwrap(), dev_ended.recv().await.unwrap()), ("s1".into(), "s3".into()));

        // A relay to replica r1 reaches r1 under its prefix only (same reasoning).
        let relayed = |text: &'static str| Relayed {
            session: "s1".into(),
            kind: RelayKind::Response,
            message: bytes::Bytes::from_static(text.as_bytes()),
        };
        assert!(readonly.relay("r1", &relayed("to readonly")).await.unwrap());
        assert!(dev.relay("r1", &relayed("to dev")).await.unwrap());
        assert!(root.relay("r1", &relayed("to root")).await.unwrap());
        assert_eq!(readonly_relayed.recv().await, Some(relayed("to readonly")));
        assert_eq!(dev_relayed.recv().await, Some(relayed("to dev")));
        assert_eq!(root_relayed.recv().await, Some(relayed("to root")));
        assert!(readonly_relayed.try_recv().is_err() && dev_relayed.try_recv().is_err());

        // A prefix's store and listeners dropped: the others go on.
        drop((dev, dev_relayed, dev_ended));
        assert!(root.relay("r1", &relayed("again")).await.unwrap());
        assert_eq!(root_relayed.recv().await, Some(relayed("again")));
    });
    drop(redis);
}

const CI_TOKEN: &str = "ci-token-5b17e2";
const DEV_TOKEN: &str = "dev-token-90c4d8";

/// A handshake-era session of the bearer `token` through `addr`: its id.
fn session_with_token(runtime: &tokio::runtime::Runtime, addr: SocketAddr, token: &str) -> String {
    session_at(runtime, addr, "/mcp", token)
}

/// A handshake-era session of the bearer `token` at `path` of `addr`: its id.
fn session_at(runtime: &tokio::runtime::Runtime, addr: SocketAddr, path: &str, token: &str) -> String {
    runtime.block_on(http_support::session_with_token(addr, path, token))
}

/// The JSON-RPC answer to `body` posted by the bearer `token` in `session` through `addr`.
fn call_with_token(
    runtime: &tokio::runtime::Runtime,
    addr: SocketAddr,
    token: &str,
    session: &str,
    body: &Value,
) -> Value {
    let r = post_at(runtime, addr, "/mcp", token, session, body);
    assert_eq!(r.status, 200, "{r:?}");
    r.sse_messages().pop().unwrap_or_else(|| r.json())
}

/// `body` posted by the bearer `token` in `session` at `path` of `addr`: the HTTP answer.
fn post_at(
    runtime: &tokio::runtime::Runtime,
    addr: SocketAddr,
    path: &str,
    token: &str,
    session: &str,
    body: &Value,
) -> Raw {
    runtime.block_on(post_with_token(addr, path, token, Some(session), &body.to_string()))
}

/// The value of the sample `name` (labels and all, as rendered) in the /metrics text of
/// `addr`, 0 when absent.
fn metric(runtime: &tokio::runtime::Runtime, addr: SocketAddr, token: &str, name: &str) -> u64 {
    let auth = format!("Bearer {token}");
    let r = runtime.block_on(raw(addr, "GET", "/metrics", &[("Authorization", auth.as_str())], "", SHORT));
    assert_eq!(r.status, 200, "{r:?}");
    r.body
        .lines()
        .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .map_or(0, |v| v.trim().parse().unwrap_or_else(|e| panic!("{name}: {v}: {e}")))
}

/// `count` mcp-bridge replicas sharing a Redis, each over its own `echo_server --replica rN`,
/// the tokens ci and dev, and the limit `ci-hourly`: `burst` calls of ci, one an hour regained
/// (no bucket refills while a test runs). Their config files in `dir`.
fn limited_bridges(dir: &std::path::Path, count: usize, burst: u32) -> Cluster {
    let limit = format!(
        r#"[[gateway.rate_limits]]
name = "ci-hourly"
callers = {{ tokens = ["ci"] }}
rate = "1/hour"
burst = {burst}
"#
    );
    bridges("limits", dir, count, &limit)
}

/// `count` mcp-bridge replicas sharing a Redis, each over its own `echo_server --replica rN`
/// (upstream `echo`), with the tokens ci and dev and the rest of their config `gateway` (TOML).
/// Their config files in `dir`.
fn bridges(name: &str, dir: &std::path::Path, count: usize, gateway: &str) -> Cluster {
    let echo_server = echo_server_path();
    std::fs::create_dir_all(dir).unwrap();
    let config_for = |n: usize| {
        let config = dir.join(format!("gateway-r{n}.toml"));
        let text = format!(
            r#"[mcp_servers.echo]
command = {command:?}
args = ["--replica", "r{n}"]

[gateway.tokens]
ci = {{ env = "CI_TOKEN" }}
dev = {{ env = "DEV_TOKEN" }}

{gateway}"#,
            command = echo_server.display().to_string()
        );
        std::fs::write(&config, text).unwrap();
        config
    };
    Cluster::start_n(name, count, |n, addr, redis| {
        let mut command = Command::new(examples::bin_path("mcp-bridge"));
        command.args(["serve", "--listen", &format!("http://{addr}/mcp"), "--session-store", redis, "--config"]);
        command.arg(config_for(n)).env("CI_TOKEN", CI_TOKEN).env("DEV_TOKEN", DEV_TOKEN);
        (command, false, "serving MCP on")
    })
}

/// The name under which the bridge behind `addr` lists echo_server's `whoami`, asked in
/// `session` of ci.
fn whoami_name(runtime: &tokio::runtime::Runtime, addr: SocketAddr, session: &str) -> String {
    let list = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {}});
    let listed = call_with_token(runtime, addr, CI_TOKEN, session, &list);
    // Qualified or not, as the prefix mode says.
    listed["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().filter_map(|t| t["name"].as_str()).find(|n| n.ends_with("whoami")))
        .unwrap_or_else(|| panic!("no whoami in {listed}"))
        .to_owned()
}

#[test]
fn mcp_bridge_replicas_share_their_rate_limits_through_redis() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let dir = std::env::temp_dir().join(format!("mcpwire-scale-out-limits-{}", std::process::id()));
    let cluster = limited_bridges(&dir, 2, 5);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let ci = session_with_token(&runtime, cluster.balancer, CI_TOKEN);
    let name = whoami_name(&runtime, cluster.balancer, &ci);
    let whoami = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}});
    let answers: Vec<Value> =
        (1..=15).map(|id| call_with_token(&runtime, cluster.balancer, CI_TOKEN, &ci, &whoami(id))).collect();
    let mut answered_by: Vec<&str> =
        answers.iter().filter(|a| a.get("result").is_some()).map(|a| text(&a["result"])).collect();
    assert_eq!(answered_by.len(), 5, "exactly the burst is answered over both replicas: {answers:#?}");
    answered_by.sort();
    answered_by.dedup();
    assert_eq!(answered_by, ["r1", "r2"], "both replicas answered some of the budget");
    let refused: Vec<&Value> = answers.iter().filter(|a| a.get("error").is_some()).collect();
    assert_eq!(refused.len(), 10, "{answers:#?}");
    for answer in &refused {
        let error = &answer["error"];
        assert_eq!(error["code"], -32029, "{answer}");
        assert_eq!(error["data"]["limit"], "ci-hourly", "{answer}");
        let retry = error["data"]["retryAfterMs"].as_u64().expect("a retry hint in ms");
        assert!(retry > 60_000 && retry <= 3_600_000, "about an hour: {retry}");
        assert!(error["message"].as_str().unwrap().contains("retry in"), "{answer}");
    }
    // Another caller has buckets of its own (and here no limit at all).
    let dev = session_with_token(&runtime, cluster.balancer, DEV_TOKEN);
    for id in 1..=4 {
        let answer = call_with_token(&runtime, cluster.balancer, DEV_TOKEN, &dev, &whoami(id));
        assert!(matches!(text(&answer["result"]), "r1" | "r2"), "{answer}");
    }
    // Each replica counts the refusals it made; together, every one.
    let refusals: Vec<u64> = cluster
        .replicas
        .iter()
        .map(|r| metric(&runtime, *r, CI_TOKEN, "mcp_bridge_rate_limited_total{limit=\"ci-hourly\"}"))
        .collect();
    assert_eq!(refusals.iter().sum::<u64>(), 10, "{refusals:?}");
    assert!(refusals.iter().all(|n| *n > 0), "both replicas refused calls: {refusals:?}");
    for replica in &cluster.replicas {
        assert_eq!(metric(&runtime, *replica, CI_TOKEN, "mcp_bridge_rate_limit_store_errors_total"), 0);
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Redis stopped under a live session: its calls are checked against the replica's own
/// buckets (full, as new ones start), refused once those are empty, and counted.
#[test]
fn without_redis_a_replica_limits_calls_with_its_own_buckets() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let dir = std::env::temp_dir().join(format!("mcpwire-scale-out-limits-down-{}", std::process::id()));
    let mut cluster = limited_bridges(&dir, 1, 3);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let replica = cluster.replicas[0];
    let ci = session_with_token(&runtime, replica, CI_TOKEN);
    let name = whoami_name(&runtime, replica, &ci);
    let whoami = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}});
    let call = |id| call_with_token(&runtime, replica, CI_TOKEN, &ci, &whoami(id));
    // One of the 3 taken in Redis.
    assert_eq!(text(&call(1)["result"]), "r1");
    drop(cluster.redis.take());
    let answers: Vec<Value> = (2..=5).map(call).collect();
    for answer in &answers[..3] {
        assert_eq!(text(&answer["result"]), "r1", "the replica's own bucket starts full: {answers:#?}");
    }
    assert_eq!(answers[3]["error"]["code"], -32029, "{answers:#?}");
    assert_eq!(answers[3]["error"]["data"]["limit"], "ci-hourly");
    assert_eq!(metric(&runtime, replica, CI_TOKEN, "mcp_bridge_rate_limit_store_errors_total"), 4);
    assert_eq!(metric(&runtime, replica, CI_TOKEN, "mcp_bridge_rate_limited_total{limit=\"ci-hourly\"}"), 1);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The buckets' script against Redis, without a gateway: two stores (two replicas) share a
/// bucket; a refusal names the limit and Redis's wait; a bucket's key expires; with Redis
/// stopped a take fails within the store's timeout.
#[test]
fn redis_buckets_are_shared_refuse_with_a_wait_and_fail_without_redis() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    use mcpwire::gateway::rate_limit::{Limit, RateLimiter, SharedBuckets};
    use mcpwire::gateway::rate_limit_redis::RedisBuckets;
    let port = free_port();
    let (mut redis, runtime) = redis_and_runtime(port);
    runtime.block_on(async {
        let url = format!("redis://127.0.0.1:{port}");
        let (a, b) = two_redis_stores(port, "rl-test:").await;
        let (a, b) = (RedisBuckets::new(&a).await.unwrap(), RedisBuckets::new(&b).await.unwrap());
        // Two tokens an hour, a burst of 3: taken in turns through both stores.
        let limiter = RateLimiter::new(vec![Limit::new("hourly", 2.0 / 3600.0, 3)]);
        let claim = || limiter.claim(None, "echo", "add");
        for store in [&a, &b, &a] {
            store.take(claim()).await.unwrap().unwrap();
        }
        let refused = b.take(claim()).await.unwrap().unwrap_err();
        assert_eq!(&*refused.limit, "hourly");
        // Half an hour for one token, less the little time the calls took.
        assert!(
            refused.retry_after > Duration::from_secs(1700) && refused.retry_after <= Duration::from_secs(1800),
            "{refused:?}"
        );
        // The key expires once the bucket would be full again (3 tokens: 90 minutes + 1 s).
        let mut connection =
            redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
        let key = format!("rl-test:ratelimit:{}", claim()[0].key);
        let ttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut connection).await.unwrap();
        assert!(ttl > 5_300_000 && ttl <= 5_401_000, "{key}: {ttl} ms");
        // Redis restarted empty (its scripts forgotten): EVAL loads the script again, and the
        // buckets start full.
        drop(redis.take());
        let failed = a.take(claim()).await;
        assert!(failed.is_err(), "no Redis: {failed:?}");
        redis = Some(redis_server(port));
        let mut taken = None;
        for _ in 0..20 {
            if let Ok(answer) = a.take(claim()).await {
                taken = Some(answer);
                break;
            }
        }
        assert_eq!(taken, Some(Ok(())), "served again once Redis is back");
    });
    drop(redis);
}

/// Two `mcp-bridge` replicas sharing a Redis, each with the virtual servers `dev` (`/mcp/dev`)
/// and `readonly` (`/mcp/readonly`) over its own `echo_server --replica rN`: a session of either
/// endpoint is served by both replicas through the balancer, and its id is unknown (404) at the
/// other endpoint on every replica: each endpoint's sessions live under a key prefix of their own.
#[test]
fn mcp_bridge_replicas_share_each_virtual_servers_sessions_apart() {
    let _nothing_left = LeavesNothing::take(CLEANUP);
    let dir = std::env::temp_dir().join(format!("mcpwire-scale-out-endpoints-{}", std::process::id()));
    let endpoints = r#"[gateway.endpoints.dev]
path = "/mcp/dev"

[gateway.endpoints.readonly]
path = "/mcp/readonly"
exclude_tools = ["echo/add"]
"#;
    let cluster = bridges("endpoints", &dir, 2, endpoints);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Each replica's three key prefixes (its own and its two endpoints') on its store's two
    // connections; the last client is the one asking.
    let clients = runtime.block_on(async { redis_clients(&mut redis_admin(cluster.redis_port).await).await });
    assert_eq!(clients, 2 * 2 + 1, "two connections a replica");
    for (path, other) in [("/mcp/dev", "/mcp/readonly"), ("/mcp/readonly", "/mcp/dev")] {
        let session = session_at(&runtime, cluster.balancer, path, CI_TOKEN);
        let list = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {}});
        let listed = post_at(&runtime, cluster.balancer, path, CI_TOKEN, &session, &list);
        assert_eq!(listed.status, 200, "{path}: {listed:?}");
        let listed = listed.sse_messages().pop().unwrap_or_else(|| listed.json());
        let names: Vec<&str> =
            listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
        let whoami = *names.iter().find(|n| n.ends_with("whoami")).unwrap_or_else(|| panic!("{listed}"));
        // Each endpoint's own view, wherever the request lands.
        assert_eq!(names.iter().any(|n| n.ends_with("add")), path == "/mcp/dev", "{path}: {names:?}");
        let mut answered_by: Vec<String> = (1..=6)
            .map(|id| {
                let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": whoami, "arguments": {}}});
                let r = post_at(&runtime, cluster.balancer, path, CI_TOKEN, &session, &call);
                assert_eq!(r.status, 200, "{path}: {r:?}");
                let answer = r.sse_messages().pop().unwrap_or_else(|| r.json());
                text(&answer["result"]).to_owned()
            })
            .collect();
        answered_by.sort();
        answered_by.dedup();
        assert_eq!(answered_by, ["r1", "r2"], "{path}: the session is served by both replicas");
        let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
        for replica in &cluster.replicas {
            let r = post_at(&runtime, *replica, other, CI_TOKEN, &session, &ping);
            assert_eq!(r.status, 404, "a session of {path} at {other} of {replica}: {r:?}");
            let r = post_at(&runtime, *replica, path, CI_TOKEN, &session, &ping);
            assert_eq!(r.status, 200, "the session at {path} of {replica}: {r:?}");
        }
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}
