//! Shared by the integration tests: where the third-party peers are.
//!
//! `scripts/install-peers` installs the pinned peers (Node 22, the official TypeScript SDK and
//! example servers, the Python SDK and servers) and writes `peers.env` with their paths. The
//! tests read that file; a test that needs a peer fails with a clear message when it is missing
//! (run `scripts/install-peers` first, as `scripts/test` and `.ci/run` do) — it is never skipped.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;

/// The directory the peers are installed in (`MCPWIRE_PEERS`, default `~/.cache/mcp-peers`).
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("MCPWIRE_PEERS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/mcp-peers"),
    }
}

/// The variables of `peers.env`.
pub fn peers() -> HashMap<String, String> {
    let file = peers_dir().join("peers.env");
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}; run scripts/install-peers first (scripts/test does)", file.display()));
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("export ").or(Some(line.trim())))
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().trim_matches(|c| c == '"' || c == '\'').to_owned()))
        .collect()
}

/// One variable of `peers.env`, e.g. `MCP_EVERYTHING_JS`.
pub fn peer(name: &str) -> String {
    peers().remove(name).unwrap_or_else(|| panic!("{name} missing from peers.env; rerun scripts/install-peers"))
}

/// The path of a file under the repository root.
pub fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The bundled recordings (`conformance/recordings/*.jsonl`) whose header's `transport` passes
/// `keep`, sorted by path.
pub fn recordings_with_transport(keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_path("conformance/recordings"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            keep(header["transport"].as_str().unwrap_or_default())
        })
        .collect();
    files.sort();
    files
}

/// server-everything serving HTTP on a free loopback port; killed when dropped.
pub struct HttpEverything {
    child: std::process::Child,
    pub port: u16,
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts server-everything in `mode` (`streamableHttp` or `sse`) and returns once it listens
/// (at most 60 s: a hang guard, which a loaded machine must not trip).
pub fn everything_http(mode: &str) -> HttpEverything {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = std::process::Command::new(peer("MCP_NODE"))
        .arg(peer("MCP_EVERYTHING_JS"))
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start server-everything");
    let server = HttpEverything { child, port };
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "server-everything did not listen on {port}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    server
}

/// Where `serve --listen` (our `HttpServer` playing the recorded server) frames HTTP otherwise
/// than the recorded servers did; the replay reports these, and nothing else is tolerated:
///
/// - it gives every SSE event an id (for resumption), where the Python server and the legacy
///   transport of server-everything sent none;
/// - it starts every POST's SSE stream with a priming event, the Python server does not;
/// - its 202 and DELETE responses have no `content-type` (the Python server's say
///   `application/json`) and differ from the recorded servers in carrying `mcp-session-id`,
///   and its legacy `Accepted` is `text/plain` (server-everything's has no `content-type`);
/// - it sends server-initiated messages that carry no progress token (log messages, sampling,
///   elicitation) on the standalone GET stream, where the Python server sent them on the
///   stream of the POST that caused them;
/// - it answers with HTTP 200 where the Python server in stateless mode carried a JSON-RPC
///   error (-32600) with HTTP 400.
pub const SERVE_LISTEN_FRAMING: [&str; 6] = [
    "http.sse_event_id: expected none, got ",
    "priming event: $: expected nothing, got a priming event (empty data)",
    "http.response_headers.content-type: ",
    "http.response_headers.mcp-session-id: ",
    "came on the response to GET seq 4",
    "http.status: expected 400, got 200",
];

/// Processes of group `pgid` that are not zombies, read from /proc.
pub fn running_in_group(pgid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The fields after the parenthesised command, which may hold spaces: state, ppid, pgrp, …
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2) == Some(&pgid.to_string().as_str()) && fields.first() != Some(&"Z") {
            found.push(pid);
        }
    }
    found
}

/// Waits (at most 5 s) for every process of each group to be gone (a killed child may linger a
/// moment before it is reaped), then asserts it is.
pub async fn assert_groups_gone(groups: &[u32]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    for &group in groups {
        while !running_in_group(group).is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(running_in_group(group), Vec::<u32>::new(), "process group {group} is still running");
    }
}

/// A fresh, empty directory for one test: `mcpwire-AREA-PID-NAME` under the system's temporary
/// directory (emptied first if a previous run of the same process id left it).
pub fn scratch_dir(area: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-{area}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Polls `done` every 10 ms until it holds, failing after `within` with `what`: waits for
/// something another task or process makes true, never for a fixed time.
pub async fn wait_until(within: std::time::Duration, what: &str, mut done: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(started.elapsed() < within, "not within {within:?}: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
