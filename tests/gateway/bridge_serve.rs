//! `mcp-bridge serve` as a gateway, driven by clients nobody here wrote (the TypeScript and
//! Python SDK clients) over real Streamable HTTP, in front of real upstreams: server-everything
//! and server-memory over stdio and server-everything over Streamable HTTP, all at once; and
//! a 2026-07-28 upstream whose tool-list change, heard on its `subscriptions/listen` stream,
//! reaches the bridge's clients.

use crate::examples;
use crate::serving;
use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};
use serving::{alive, children_of, ServingBridge};

fn scratch(name: &str) -> PathBuf {
    crate::support::scratch_dir("bridge", name)
}

/// A codex config with server-everything and server-memory over stdio, and `web`: a
/// server-everything over Streamable HTTP on `port`.
fn three_upstreams(dir: &std::path::Path, port: u16) -> PathBuf {
    let node = support::peer("MCP_NODE");
    let toml = format!(
        "[mcp_servers.everything]\ncommand = {node:?}\nargs = [{everything:?}, \"stdio\"]\n\n\
         [mcp_servers.memory]\ncommand = {node:?}\nargs = [{memory:?}]\nenv = {{ MEMORY_FILE_PATH = {file:?} }}\n\n\
         [mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\n",
        everything = support::peer("MCP_EVERYTHING_JS"),
        memory = support::peer("MCP_MEMORY_JS"),
        file = dir.join("memory.jsonl").display().to_string(),
    );
    let path = dir.join("config.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Runs a driver (`node ts_client.mjs` or `python py_client.py`) against `url` with `script`;
/// returns its output lines, keyed by step in order.
fn drive(driver: &[String], url: &str, script: &Value, env: &[(&str, &str)]) -> Vec<Value> {
    let output = Command::new(&driver[0])
        .args(&driver[1..])
        .args(["--url", url])
        .env("MCP_SCRIPT", script.to_string())
        .envs(env.iter().copied())
        .output()
        .expect("the driver runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "driver failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn ts_driver() -> Vec<String> {
    vec![support::peer("MCP_NODE"), support::repo_path("tests/peers/ts_client.mjs").display().to_string()]
}

fn py_driver() -> Vec<String> {
    vec![support::peer("MCP_PYTHON"), support::repo_path("tests/peers/py_client.py").display().to_string()]
}

fn text_of(result: &Value) -> String {
    result["content"].as_array().into_iter().flatten().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("")
}

fn ok(line: &Value) -> &Value {
    assert_eq!(line["ok"], true, "{line}");
    &line["result"]
}

#[test]
fn the_typescript_client_reaches_three_upstreams_through_one_endpoint() {
    let dir = scratch("ts");
    let web = support::everything_http("streamableHttp");
    let config = three_upstreams(&dir, web.port);
    let bridge = ServingBridge::start(&["--config", config.to_str().unwrap()]);
    let script = json!([
        {"call": "mcp__web__get-sum", "args": {"a": 2, "b": 40}},
        {"call": "mcp__everything__echo", "args": {"message": "through the bridge"}},
        {"call": "mcp__memory__create_entities", "args": {"entities": [{"name": "bridge", "entityType": "thing", "observations": ["relays"]}]}},
        {"call": "mcp__memory__read_graph", "args": {}},
        {"list": "resources"},
        {"list": "resourceTemplates"},
        {"list": "prompts"},
        {"prompt": "mcp__everything__args-prompt", "args": {"city": "Lyon"}},
        {"complete": {"ref": {"type": "ref/prompt", "name": "mcp__everything__completable-prompt"}, "argument": {"name": "department", "value": "E"}}},
        {"call": "mcp__everything__trigger-long-running-operation", "args": {"duration": 1, "steps": 3}, "progress": true},
        {"call": "mcp__web__trigger-long-running-operation", "args": {"duration": 60, "steps": 60}, "cancelAfterProgress": 1},
        {"call": "mcp__web__echo", "args": {"message": "after the cancel"}},
        {"call": "mcp__nobody__echo", "args": {}},
        {"call": "mcp__everything__get-resource-links", "args": {"count": 2}},
        {"call": "mcp__everything__get-resource-reference", "args": {"resourceType": "Text", "resourceId": 1}},
    ]);
    let lines = drive(&ts_driver(), &bridge.url, &script, &[]);
    let init = &lines[0];
    assert_eq!(init["serverInfo"]["name"], "mcp-bridge", "{init}");
    let caps = &init["capabilities"];
    assert!(caps["tools"].is_object() && caps["resources"].is_object() && caps["prompts"].is_object(), "{caps}");
    assert!(caps["completions"].is_object(), "{caps}");
    let tools: Vec<&str> =
        ok(&lines[1])["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in ["mcp__everything__echo", "mcp__memory__create_entities", "mcp__web__get-sum"] {
        assert!(tools.contains(&name), "{name} not in {tools:?}");
    }
    assert!(tools.iter().all(|t| t.len() <= 64 && t.starts_with("mcp__")), "{tools:?}");
    assert!(text_of(ok(&lines[2])).contains("42"), "{}", lines[2]);
    assert!(text_of(ok(&lines[3])).contains("through the bridge"), "{}", lines[3]);
    ok(&lines[4]);
    assert!(text_of(ok(&lines[5])).contains("relays"), "the memory server kept the entity: {}", lines[5]);
    let resources = ok(&lines[6])["resources"].as_array().unwrap().clone();
    assert!(!resources.is_empty(), "{}", lines[6]);
    for r in &resources {
        let uri = r["uri"].as_str().unwrap();
        assert!(["everything+", "web+", "memory+"].iter().any(|p| uri.starts_with(p)), "unmapped URI {uri}");
    }
    let templates = ok(&lines[7])["resourceTemplates"].as_array().unwrap().clone();
    assert!(templates.iter().all(|t| t["uriTemplate"].as_str().unwrap().contains('+')), "{templates:?}");
    let prompts: Vec<&str> =
        ok(&lines[8])["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert!(prompts.contains(&"mcp__everything__args-prompt") && prompts.contains(&"mcp__web__simple-prompt"));
    assert!(ok(&lines[9]).to_string().contains("Lyon"), "{}", lines[9]);
    let values = &ok(&lines[10])["completion"]["values"];
    assert!(values.as_array().unwrap().iter().any(|v| v == "Engineering"), "{}", lines[10]);
    let progressed = ok(&lines[11]);
    assert_eq!(progressed["progress"].as_array().unwrap().len(), 3, "{progressed}");
    assert_eq!(lines[12]["ok"], false, "the cancelled call must not succeed: {}", lines[12]);
    assert!(text_of(ok(&lines[13])).contains("after the cancel"), "{}", lines[13]);
    // An unknown tool is a protocol error (server/tools, "Error Handling").
    assert_eq!((&lines[14]["ok"], &lines[14]["error"]["code"]), (&json!(false), &json!(-32602)), "{}", lines[14]);
    assert!(lines[14]["error"]["message"].as_str().unwrap().contains("not found"), "{}", lines[14]);
    // A result's resource links and embedded resources come with their mapped URIs (the
    // gateway edits those results; it passes the others on as the upstream wrote them).
    let links: Vec<&Value> =
        ok(&lines[15])["content"].as_array().unwrap().iter().filter(|b| b["type"] == "resource_link").collect();
    assert_eq!(links.len(), 2, "{}", lines[15]);
    assert!(links.iter().all(|l| l["uri"].as_str().unwrap().starts_with("everything+demo://")), "{}", lines[15]);
    let embedded = ok(&lines[16])["content"].as_array().unwrap().iter().find(|b| b["type"] == "resource").cloned();
    let uri = embedded.as_ref().and_then(|b| b["resource"]["uri"].as_str()).unwrap_or_default().to_owned();
    assert!(uri.starts_with("everything+demo://"), "{}", lines[16]);

    // Each listed resource reads through its mapped URI, from the server that listed it.
    let reads: Vec<Value> = resources.iter().take(3).map(|r| json!({"read": r["uri"]})).collect();
    let lines = drive(&ts_driver(), &bridge.url, &Value::Array(reads), &[]);
    for (line, resource) in lines[2..].iter().zip(&resources) {
        let contents = &ok(line)["contents"][0];
        assert_eq!(contents["uri"], resource["uri"], "{line}");
    }
    drop(bridge);
}

#[test]
fn the_python_client_speaks_2026_through_the_bridge_to_handshake_era_upstreams() {
    let dir = scratch("py");
    let web = support::everything_http("streamableHttp");
    let config = three_upstreams(&dir, web.port);
    let bridge = ServingBridge::start(&["--config", config.to_str().unwrap()]);
    let script = json!([
        {"call": "mcp__web__get-sum", "args": {"a": 1, "b": 2}},
        {"call": "mcp__everything__echo", "args": {"message": "py"}},
        {"list": "prompts"},
        {"prompt": "mcp__everything__simple-prompt", "args": {}},
    ]);
    let lines = drive(&py_driver(), &bridge.url, &script, &[]);
    assert_eq!(lines[0]["handshake"], "discover", "the Python SDK runs 2026-07-28 against the bridge: {}", lines[0]);
    assert_eq!(lines[0]["protocolVersion"], "2026-07-28", "{}", lines[0]);
    assert!(text_of(ok(&lines[2])).contains('3'), "{}", lines[2]);
    assert!(text_of(ok(&lines[3])).contains("py"), "{}", lines[3]);
    ok(&lines[4]);
    ok(&lines[5]);
}

#[test]
fn the_embedded_default_serves_the_bundled_examples() {
    let bridge = ServingBridge::start(&[]);
    let script = json!([{"call": "mcp__echo__echo", "args": {"text": "embedded"}}]);
    let lines = drive(&ts_driver(), &bridge.url, &script, &[]);
    let tools: Vec<&str> =
        ok(&lines[1])["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"mcp__echo__echo") && tools.contains(&"mcp__agent__run_agent"), "{tools:?}");
    assert_eq!(text_of(ok(&lines[2])), "embedded");
    let _ = bridge.pid();
}

/// A driver started with a script, its stdout read line by line, its stdin open.
struct Driver {
    child: Child,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Driver {
    fn start(url: &str, script: &Value, label: &str) -> Driver {
        let driver = ts_driver();
        let mut child = Command::new(&driver[0])
            .args(&driver[1..])
            .args(["--url", url])
            .env("MCP_SCRIPT", script.to_string())
            .env("MCP_CLIENT_LABEL", label)
            .env("MCP_WAIT_STDIN", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the driver runs");
        let (tx, lines) = std::sync::mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
            }
        });
        Driver { child, lines }
    }

    /// The next line whose step is `step` (at most 30 s away).
    fn next(&self, step: &str) -> Value {
        loop {
            let line = self.lines.recv_timeout(std::time::Duration::from_secs(30)).expect("the driver goes on");
            if line["step"] == step {
                return line;
            }
        }
    }

    fn answer(&mut self) {
        writeln!(self.child.stdin.as_mut().unwrap()).unwrap();
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two clients call a sampling tool of `tool`'s server at once; both requests are held until
/// both arrived, so both calls are in flight together. Each client must get only the request
/// its own call caused, and its answer must reach that call.
fn two_clients_sample_at_once(url: &str, tool: &str) {
    let script = |who: &str| json!([{"call": tool, "args": {"prompt": format!("asked by {who}")}}]);
    let mut a = Driver::start(url, &script("A"), "A");
    let mut b = Driver::start(url, &script("B"), "B");
    let (asked_a, asked_b) = (a.next("sampling"), b.next("sampling"));
    assert!(asked_a["request"].to_string().contains("asked by A"), "A got {asked_a}");
    assert!(asked_b["request"].to_string().contains("asked by B"), "B got {asked_b}");
    b.answer();
    a.answer();
    let (done_a, done_b) = (a.next("tools/call"), b.next("tools/call"));
    assert!(text_of(ok(&done_a)).contains("sampled by A") && !text_of(ok(&done_a)).contains("by B"), "{done_a}");
    assert!(text_of(ok(&done_b)).contains("sampled by B") && !text_of(ok(&done_b)).contains("by A"), "{done_b}");
}

#[test]
fn two_clients_each_get_only_the_sampling_their_own_call_caused() {
    let dir = scratch("two");
    let web = support::everything_http("streamableHttp");
    let config = three_upstreams(&dir, web.port);
    let bridge = ServingBridge::start(&["--config", config.to_str().unwrap(), "--per-session", "everything"]);
    // Shared Streamable HTTP upstream: the request comes on the stream of the call it belongs to.
    two_clients_sample_at_once(&bridge.url, "mcp__web__trigger-sampling-request");
    // Per-session stdio upstream: each downstream session has its own child.
    two_clients_sample_at_once(&bridge.url, "mcp__everything__trigger-sampling-request");
}

/// The processes whose parent is `pid`, with their command lines.
async fn http_client(url: &str) -> mcpwire::client::Client<mcpwire::transport::sse_http::HttpClientTransport> {
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
    let transport = HttpClientTransport::new(HttpClientConfig::new(url)).unwrap();
    let options = mcpwire::client::ClientOptions::default().with_era(mcpwire::client::EraPolicy::Legacy);
    mcpwire::client::Client::connect(transport, options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_child_fails_its_call_naming_the_server_and_is_restarted_and_nothing_is_left_at_shutdown() {
    let dir = scratch("kill");
    let node = support::peer("MCP_NODE");
    let toml = format!(
        "[mcp_servers.everything]\ncommand = {node:?}\nargs = [{:?}, \"stdio\"]\n\n\
         [mcp_servers.memory]\ncommand = {node:?}\nargs = [{:?}]\nenv = {{ MEMORY_FILE_PATH = {:?} }}\n",
        support::peer("MCP_EVERYTHING_JS"),
        support::peer("MCP_MEMORY_JS"),
        dir.join("memory.jsonl").display().to_string(),
    );
    std::fs::write(dir.join("config.toml"), toml).unwrap();
    let mut bridge = ServingBridge::start(&["--config", dir.join("config.toml").to_str().unwrap()]);
    let upstreams = children_of(bridge.pid());
    assert_eq!(upstreams.len(), 2, "{upstreams:?}");
    let everything = upstreams.iter().find(|(_, cmd)| cmd.contains("server-everything")).expect("everything runs").0;

    let client = http_client(&bridge.url).await;
    let args = json!({"duration": 20, "steps": 20}).as_object().cloned();
    let long = client.call_tool("mcp__everything__trigger-long-running-operation", args, Default::default());
    let killer = async {
        // The call is on its way to the child (a delay, not a synchronisation: a kill before the
        // call arrives fails it the same way).
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert!(Command::new("kill").args(["-KILL", &everything.to_string()]).status().unwrap().success());
    };
    let (outcome, ()) = tokio::join!(long, killer);
    let error = outcome.expect_err("the call on the killed child fails");
    assert!(error.to_string().contains("everything"), "the error names the server: {error}");

    // The child is restarted (with backoff): calls succeed again, on a new process.
    let mut answer = None;
    for _ in 0..100 {
        let echo = json!({"message": "again"}).as_object().cloned();
        if let Ok(result) = client.call_tool("mcp__everything__echo", echo, Default::default()).await {
            answer = Some(result);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let answer = answer.expect("the restarted server answers within 10 s");
    assert_eq!(serde_json::to_value(&answer.content).unwrap()[0]["text"], "Echo: again");
    let after = children_of(bridge.pid());
    assert!(after.iter().all(|(pid, _)| *pid != everything), "{after:?}");
    assert_eq!(after.len(), 2, "one process per upstream: {after:?}");
    assert!(!alive(everything), "the killed child was reaped");
    let _ = client.close().await;

    let status = bridge.stop().expect("the bridge's exit status");
    assert!(status.success(), "{status}");
    for (pid, cmd) in upstreams.iter().chain(&after) {
        assert!(!alive(*pid), "upstream {pid} ({cmd}) outlived the bridge");
    }
}

#[test]
fn stdio_to_http_serves_one_stdio_server_under_its_own_names() {
    let node = support::peer("MCP_NODE");
    let everything = support::peer("MCP_EVERYTHING_JS");
    let bridge = ServingBridge::start(&["--", &node, &everything, "stdio"]);
    let script = json!([{"call": "get-sum", "args": {"a": 20, "b": 22}}]);
    let lines = drive(&ts_driver(), &bridge.url, &script, &[]);
    let tools: Vec<&str> =
        ok(&lines[1])["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"echo") && tools.contains(&"get-sum"), "served as it is: {tools:?}");
    assert!(text_of(ok(&lines[2])).contains("42"), "{}", lines[2]);
}

#[test]
fn http_to_stdio_serves_a_remote_server_to_a_stdio_client() {
    let web = support::everything_http("streamableHttp");
    let url = format!("http://127.0.0.1:{}/mcp", web.port);
    let bridge = examples::bin_path("mcp-bridge").to_owned();
    let script = json!([{"call": "echo", "args": {"message": "over stdio"}}, {"list": "prompts"}]);
    let output = Command::new(support::peer("MCP_NODE"))
        .arg(support::repo_path("tests/peers/ts_client.mjs"))
        .args(["--", &bridge, "serve", "--listen", "stdio", "--url", &url])
        .env("MCP_SCRIPT", script.to_string())
        .output()
        .expect("the driver runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["serverInfo"]["name"], "mcp-bridge", "{}", lines[0]);
    assert_eq!(text_of(ok(&lines[2])), "Echo: over stdio");
    let prompts = ok(&lines[3])["prompts"].as_array().unwrap();
    assert!(prompts.iter().any(|p| p["name"] == "simple-prompt"), "{prompts:?}");
}

#[test]
fn a_non_loopback_listen_needs_a_token() {
    let output = Command::new(examples::bin_path("mcp-bridge"))
        .args(["serve", "--listen", "http://0.0.0.0:0/mcp"])
        .output()
        .expect("mcp-bridge runs");
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("not a loopback address") && err.contains("--auth-token-env"), "{err}");
    assert!(output.stdout.is_empty());
}

/// A public listener refuses a guessable token, naming its length and the minimum and never
/// the token; the same token is enough on loopback.
#[test]
fn a_non_loopback_listen_refuses_a_short_token_without_printing_it() {
    let short = "hunter2-hunter2-hunter2-hunter2"; // 31 bytes
    let output = Command::new(examples::bin_path("mcp-bridge"))
        .args(["serve", "--listen", "http://0.0.0.0:0/mcp", "--auth-token-env", "SHORT_TOKEN", "--", "true"])
        .env("SHORT_TOKEN", short)
        .output()
        .expect("mcp-bridge runs");
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("the token is 31 bytes") && err.contains("at least 32"), "{err}");
    assert!(!err.contains(short), "the token was printed: {err}");

    let mut loopback = Command::new(examples::bin_path("mcp-bridge"))
        .args(["serve", "--listen", "http://127.0.0.1:0/mcp", "--auth-token-env", "SHORT_TOKEN", "--"])
        .arg(examples::example_path("echo_server"))
        .env("SHORT_TOKEN", short)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcp-bridge runs");
    let mut lines = BufReader::new(loopback.stdout.take().unwrap()).lines();
    let started = lines.by_ref().map_while(Result::ok).any(|line| line.contains("serving MCP on"));
    loopback.kill().unwrap();
    loopback.wait().unwrap();
    assert!(started, "the loopback listener did not start with the same token");
}

/// A 2026-07-28 client (the Python SDK, multi-round-trip) through the bridge to a handshake-era
/// upstream whose tool elicits: the upstream's `elicitation/create` becomes the bridge's
/// `InputRequiredResult`, the client's answer on the retry goes back as the upstream's answer.
#[test]
fn a_2026_client_answers_a_handshake_era_upstreams_elicitation_through_the_bridge() {
    let dir = scratch("eras");
    let echo = examples::example_path("echo_server");
    let toml = format!("[mcp_servers.echo]\ncommand = {:?}\nera = \"legacy\"\n", echo.display().to_string());
    std::fs::write(dir.join("config.toml"), toml).unwrap();
    let bridge = ServingBridge::start(&["--config", dir.join("config.toml").to_str().unwrap()]);
    let output = Command::new(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/peers/py_mrtr_client.py"))
        .args([&bridge.url, "mcp__echo__greet"])
        .output()
        .expect("the Python client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(line["protocolVersion"], "2026-07-28", "{line}");
    assert!(!line["asked"].as_array().unwrap().is_empty(), "the client was asked: {line}");
    assert!(line["result"].to_string().contains("from-py"), "the answer reached the upstream: {line}");
}

#[test]
fn health_readiness_and_metrics_and_the_token() {
    let echo = examples::example_path("echo_server");
    let echo = echo.to_str().unwrap();
    let mut child = Command::new(examples::bin_path("mcp-bridge"))
        .args(["serve", "--listen", "http://127.0.0.1:0/mcp", "--auth-token-env", "BRIDGE_TEST_TOKEN", "--", echo])
        .env("BRIDGE_TEST_TOKEN", "s3cret-token-of-the-test")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let banner = lines.next().unwrap().unwrap();
    let url = banner.strip_prefix("mcp-bridge: serving MCP on ").unwrap().to_owned();
    const TOKEN: &str = "s3cret-token-of-the-test";
    let token = Some(TOKEN);

    assert_eq!(serving::http_get(&url, "/healthz", None), (200, "ok\n".to_owned()));
    assert_eq!(serving::http_get(&url, "/readyz", None), (200, r#"{"ready":true}"#.to_owned()), "public: no more");
    let (status, body) = serving::http_get(&url, "/readyz/details", token);
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["ready"], true);
    assert_eq!(ready["servers"][0]["state"], "ready", "{ready}");
    assert_eq!(serving::http_get(&url, "/readyz/details", None).0, 401, "the details are behind the token");
    assert_eq!(serving::http_get(&url, "/metrics", None).0, 401, "metrics are behind the token");

    // MCP without the token: 401; with it, calls go through and are counted.
    let script = json!([{"call": "echo", "args": {"text": "counted"}}, {"call": "echo", "args": {}}]);
    let refused = Command::new(support::peer("MCP_NODE"))
        .arg(support::repo_path("tests/peers/ts_client.mjs"))
        .args(["--url", &url])
        .env("MCP_SCRIPT", script.to_string())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "no token, no session");
    assert!(String::from_utf8_lossy(&refused.stdout).contains("401"), "{}", String::from_utf8_lossy(&refused.stdout));
    let lines_out = drive(&ts_driver(), &url, &script, &[("MCP_BEARER_TOKEN", TOKEN)]);
    assert_eq!(text_of(ok(&lines_out[2])), "counted");
    let (status, metrics) = serving::http_get(&url, "/metrics", token);
    assert_eq!(status, 200);
    let upstream = echo.rsplit('/').next().unwrap();
    assert!(metrics.contains(&format!("mcp_bridge_calls_total{{server=\"{upstream}\",tool=\"echo\"}} 2")), "{metrics}");
    assert!(
        metrics.contains(&format!("mcp_bridge_call_errors_total{{server=\"{upstream}\",tool=\"echo\"}} 1")),
        "{metrics}"
    );
    assert!(metrics.contains(&format!("mcp_bridge_upstream_up{{server=\"{upstream}\"}} 1")), "{metrics}");
    assert!(metrics.contains("mcp_bridge_call_duration_seconds_bucket{"), "{metrics}");
    // The OpenTelemetry MCP durations: the downstream call (server side) under the name the
    // client called, the upstream call (client side) under the upstream's; one each ended well,
    // one with an error (`error_type` its code, or `tool_error`).
    let upstream_tool = "echo";
    for side in ["server", "client"] {
        let series = format!(
            "mcp_{side}_operation_duration_seconds_count{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{upstream_tool}\",gen_ai_prompt_name=\"\",error_type="
        );
        let counts: Vec<(&str, &str)> = metrics
            .lines()
            .filter_map(|l| l.strip_prefix(series.as_str()))
            .filter_map(|rest| rest.split_once("} "))
            .collect();
        assert_eq!(counts.len(), 2, "{side}: {counts:?}\n{metrics}");
        assert!(counts.contains(&("\"\"", "1")), "{side}: one ended well: {counts:?}");
        assert!(
            counts.iter().any(|(error, n)| *error != "\"\"" && *n == "1"),
            "{side}: one ended with an error: {counts:?}"
        );
        let buckets = format!("mcp_{side}_operation_duration_seconds_bucket{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{upstream_tool}\",gen_ai_prompt_name=\"\",error_type=\"\",le=\"300\"}} 1");
        assert!(metrics.contains(&buckets), "{side}: the conventions' last bucket: {metrics}");
    }

    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let output = child.wait_with_output().unwrap();
    let logs = String::from_utf8_lossy(&output.stderr);
    assert!(!logs.contains("s3cret"), "the token is never logged: {logs}");
}

/// `/metrics` of `bridge` (no token) once a line starting with `prefix` is in it, polled until
/// a deadline.
fn metrics_once(bridge: &ServingBridge, prefix: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, metrics) = serving::http_get(&bridge.url, "/metrics", None);
        assert_eq!(status, 200, "{metrics}");
        if metrics.lines().any(|l| l.starts_with(prefix)) {
            return metrics;
        }
        assert!(std::time::Instant::now() < deadline, "no {prefix} in time:\n{metrics}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn the_mcp_durations_name_the_prompt_and_time_the_upstream_session() {
    let prompts = examples::example_path("prompts");
    let bridge = ServingBridge::start(&["--", prompts.to_str().unwrap()]);
    let script = json!([
        {"prompt": "review", "args": {"language": "rust"}},
        {"prompt": "review", "args": {}},
    ]);
    let lines = drive(&ts_driver(), &bridge.url, &script, &[]);
    assert!(ok(&lines[2]).to_string().contains("rust"), "{}", lines[2]);
    assert_eq!(lines[3]["ok"], false, "a required argument missing: {}", lines[3]);
    let (_, metrics) = serving::http_get(&bridge.url, "/metrics", None);
    // Both sides, under the prompt's name (here the same downstream and upstream): one ended
    // well, one with the upstream's JSON-RPC error.
    for side in ["server", "client"] {
        let series = format!(
            "mcp_{side}_operation_duration_seconds_count{{mcp_method_name=\"prompts/get\",gen_ai_tool_name=\"\",gen_ai_prompt_name=\"review\",error_type="
        );
        let mut counts: Vec<(&str, &str)> = metrics
            .lines()
            .filter_map(|l| l.strip_prefix(series.as_str()))
            .filter_map(|rest| rest.split_once("} "))
            .collect();
        counts.sort();
        assert_eq!(counts, [("\"\"", "1"), ("\"-32602\"", "1")], "{side}\n{metrics}");
    }
    assert!(
        !metrics.contains("mcp_client_session_duration_seconds_count"),
        "the upstream session is open, not yet timed: {metrics}"
    );
    // The upstream exits: its session ends without the gateway closing it.
    let upstream: Vec<u32> =
        children_of(bridge.pid()).into_iter().filter(|(_, cmd)| cmd.contains("prompts")).map(|(pid, _)| pid).collect();
    assert_eq!(upstream.len(), 1, "{upstream:?}");
    let _ = Command::new("kill").args(["-KILL", &upstream[0].to_string()]).status();
    let ended = "mcp_client_session_duration_seconds_count{error_type=\"disconnected\"} ";
    let metrics = metrics_once(&bridge, ended);
    assert!(metrics.contains(&format!("{ended}1\n")), "{metrics}");
    assert!(
        metrics.contains("mcp_client_session_duration_seconds_bucket{error_type=\"disconnected\",le=\"300\"} 1\n"),
        "{metrics}"
    );
}

#[test]
fn a_recorded_session_replays_against_the_same_upstream_through_the_bridge() {
    let dir = scratch("record");
    let echo = examples::example_path("echo_server");
    let echo = echo.to_str().unwrap();
    let records = dir.join("records");
    let bridge = ServingBridge::start(&["--record", records.to_str().unwrap(), "--", echo]);
    let script = json!([{"call": "echo", "args": {"text": "recorded"}}, {"call": "add", "args": {"a": 1, "b": 2}}]);
    let lines = drive(&ts_driver(), &bridge.url, &script, &[]);
    assert_eq!(text_of(ok(&lines[2])), "recorded");
    drop(bridge);
    let files: Vec<PathBuf> = std::fs::read_dir(&records).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "one recording per downstream session: {files:?}");
    let bridge_cmd = format!("{} serve --listen stdio -- {echo}", examples::bin_path("mcp-bridge"));
    let replay = Command::new(examples::bin_path("mcp-conformance"))
        .arg("replay")
        .arg(&files[0])
        .args(["--server", &bridge_cmd])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{report}\n{}", String::from_utf8_lossy(&replay.stderr));
    assert!(report.contains(" 0 failed"), "{report}");
}

#[test]
fn a_shared_stdio_upstream_gets_an_error_for_a_request_no_single_client_caused() {
    let node = support::peer("MCP_NODE");
    let everything = support::peer("MCP_EVERYTHING_JS");
    let bridge = ServingBridge::start(&["--", &node, &everything, "stdio"]);
    let script =
        |who: &str| json!([{"call": "trigger-sampling-request", "args": {"prompt": format!("asked by {who}")}}]);
    // A's call is alone in flight: its sampling is A's, and is held.
    let mut a = Driver::start(&bridge.url, &script("A"), "A");
    let asked = a.next("sampling");
    assert!(asked["request"].to_string().contains("asked by A"), "{asked}");
    // B's call joins: over stdio nothing says whose its sampling is, so the upstream is refused
    // (and its tool fails), rather than B being asked A's question or A being asked B's.
    let b = Driver::start(&bridge.url, &script("B"), "B");
    let done_b = b.next("tools/call");
    assert!(done_b.to_string().contains("not related to a downstream request"), "{done_b}");
    a.answer();
    let done_a = a.next("tools/call");
    assert!(text_of(ok(&done_a)).contains("sampled by A"), "{done_a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_list_change_reaches_every_downstream_session() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut upstream = Command::new(examples::example_path("conformance_server"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let dir = scratch("changes");
    std::fs::write(dir.join("config.toml"), format!("[mcp_servers.c]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"))
        .unwrap();
    let bridge = ServingBridge::start(&["--config", dir.join("config.toml").to_str().unwrap()]);

    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let watcher = {
        use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
        let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.url)).unwrap();
        let options = mcpwire::client::ClientOptions::default()
            .with_era(mcpwire::client::EraPolicy::Legacy)
            .with_handler(move |n: mcpwire::proto::jsonrpc::Notification| {
                let _ = tx.send(n.method);
            });
        mcpwire::client::Client::connect(transport, options).await.unwrap()
    };
    let caller = http_client(&bridge.url).await;
    let before: Vec<String> = caller.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(!before.contains(&"mcp__c__test_dynamic_tool".to_owned()));
    caller.call_tool("mcp__c__test_trigger_tool_change", None, Default::default()).await.unwrap();
    let method = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let method = changes.recv().await.expect("the watcher's connection stays up");
            if method == "notifications/tools/list_changed" {
                return method;
            }
        }
    })
    .await
    .expect("the other session is told within 10 s");
    assert_eq!(method, "notifications/tools/list_changed");
    let after: Vec<String> = watcher.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(after.contains(&"mcp__c__test_dynamic_tool".to_owned()), "{after:?}");
    let _ = upstream.kill();
    let _ = upstream.wait();
}

/// The MCP inspector's CLI (`--cli`) against `url`: its JSON result.
fn inspector(url: &str, args: &[&str]) -> Value {
    let output = Command::new(support::peer("MCP_NODE"))
        .arg(support::peer("MCP_INSPECTOR_CLI_JS"))
        .args(["--cli", url])
        .args(args)
        .args(["--format", "json", "-q"])
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("the inspector runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{args:?}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    line["result"].clone()
}

#[test]
fn the_inspector_cli_lists_calls_reads_and_prompts_through_the_bridge_in_both_eras() {
    let dir = scratch("inspector");
    let web = support::everything_http("streamableHttp");
    let config = three_upstreams(&dir, web.port);
    let bridge = ServingBridge::start(&["--config", config.to_str().unwrap()]);
    let tools = inspector(&bridge.url, &["--method", "tools/list"]);
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"mcp__memory__read_graph") && names.contains(&"mcp__web__get-sum"), "{names:?}");
    let sum = inspector(
        &bridge.url,
        &["--method", "tools/call", "--tool-name", "mcp__web__get-sum", "--tool-args-json", r#"{"a":2,"b":3}"#],
    );
    assert!(text_of(&sum).contains('5'), "{sum}");
    let prompt = inspector(
        &bridge.url,
        &["--method", "prompts/get", "--prompt-name", "mcp__everything__args-prompt", "--prompt-args", "city=Paris"],
    );
    assert!(prompt.to_string().contains("Paris"), "{prompt}");
    let resources = inspector(&bridge.url, &["--method", "resources/list"]);
    let uri = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .find(|u| u.starts_with("web+"))
        .expect("a resource of web")
        .to_owned();
    let read = inspector(&bridge.url, &["--method", "resources/read", "--uri", &uri]);
    assert_eq!(read["contents"][0]["uri"], uri.as_str(), "{read}");
    // 2026-07-28 downstream, 2025-11-25 upstream: the result is the bridge's, not the upstream's.
    let modern = inspector(
        &bridge.url,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "mcp__everything__echo",
            "--tool-arg",
            "message=modern",
            "--protocol-era",
            "modern",
        ],
    );
    assert!(text_of(&modern).contains("modern"), "{modern}");
    assert_eq!(modern["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-bridge", "{modern}");
}

/// Our server over Streamable HTTP on loopback, in this process: `grow {name}` adds a tool
/// called `name` through the server handle.
async fn growing_upstream() -> mcpwire::transport::sse_http::HttpServer {
    use mcpwire::server::{text_result, Server, ToolError};
    use mcpwire::transport::sse_http::HttpServerConfig;
    let handle: std::sync::Arc<std::sync::OnceLock<Server>> = Default::default();
    let for_tool = handle.clone();
    let server = Server::builder()
        .name("growing")
        .tool("grow", "adds a tool", json!({"type": "object"}), move |args, _ctx| {
            let server = for_tool.get().cloned();
            async move {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("grown").to_owned();
                let tool = mcpwire::proto::mcp_types::Tool::new(name.clone(), json!({"type": "object"}));
                let server = server.ok_or_else(|| ToolError::failed("no server yet"))?;
                server
                    .add_tool(tool, |_args, _ctx| async { Ok(text_result("grown")) })
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                Ok(text_result(format!("added {name}")))
            }
        })
        .build()
        .unwrap();
    let _ = handle.set(server.clone());
    server.serve_http(HttpServerConfig::default()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_upstreams_tool_change_reaches_the_bridges_clients() {
    use mcpwire::client::{Client, ClientOptions, EraPolicy};
    use mcpwire::proto::jsonrpc::Notification;
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
    let upstream = growing_upstream().await;
    let dir = scratch("grow");
    // The upstream speaks 2026-07-28 (era auto): its changes come on a subscriptions/listen stream.
    std::fs::write(dir.join("config.toml"), format!("[mcp_servers.grower]\nurl = {:?}\n", upstream.url())).unwrap();
    let bridge = ServingBridge::start(&["--config", dir.join("config.toml").to_str().unwrap()]);
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel::<Notification>();
    let options = ClientOptions::default().with_era(EraPolicy::Legacy).with_handler(move |n: Notification| {
        let _ = tx.send(n);
    });
    let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.url)).unwrap();
    let client = Client::connect(transport, options).await.unwrap();
    let names = |tools: Vec<mcpwire::proto::mcp_types::Tool>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();
    assert_eq!(names(client.list_tools().await.unwrap()), ["mcp__grower__grow"]);

    let grown = client
        .call_tool("mcp__grower__grow", json!({"name": "fresh"}).as_object().cloned(), Default::default())
        .await
        .unwrap();
    assert_ne!(grown.is_error, Some(true), "{grown:?}");
    let within = std::time::Duration::from_secs(10);
    loop {
        let n = tokio::time::timeout(within, heard.recv()).await.expect("the bridge tells its client").unwrap();
        if n.method == "notifications/tools/list_changed" {
            break;
        }
    }
    assert_eq!(names(client.list_tools().await.unwrap()), ["mcp__grower__grow", "mcp__grower__fresh"]);
    let _ = client.close().await;
    drop(bridge);
    upstream.shutdown().await;
}
