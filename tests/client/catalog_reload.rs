//! The connection set over time, over real servers (our echo server built as a child,
//! server-everything over stdio and Streamable HTTP, server-memory): a reload keeps what did not change, restarts what did,
//! shuts down what is gone and cancels a start still pending; leases share one child and
//! stop it after the last; a singleton server keeps its working connection when its
//! restart cannot start a second one.

use crate::examples;
use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use mcpwire::client::config::McpConfig;
use mcpwire::client::connection_set::{ConnectionSet, ServerState, SetEvent, SetOptions};
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc::UnboundedReceiver;

fn toml_str(s: impl AsRef<str>) -> String {
    serde_json::to_string(s.as_ref()).unwrap()
}

fn echo(name: &str, args: &[&str], extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = {}\n{extra}\n",
        toml_str(examples::example_path("echo_server").to_string_lossy()),
        serde_json::to_string(args).unwrap()
    )
}

fn everything(name: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}, \"stdio\"]\nstartup_timeout_sec = 30\n",
        toml_str(support::peer("MCP_NODE")),
        toml_str(support::peer("MCP_EVERYTHING_JS"))
    )
}

fn memory(name: &str, dir: &Path) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\nenv = {{ MEMORY_FILE_PATH = {} }}\nstartup_timeout_sec = 30\n",
        toml_str(support::peer("MCP_NODE")),
        toml_str(support::peer("MCP_MEMORY_JS")),
        toml_str(dir.join("memory.json").to_string_lossy())
    )
}

/// A server that writes its pid to `pid_file` and never answers: its start stays pending.
fn never_ready(name: &str, pid_file: &Path) -> String {
    let script = format!("echo $$ > '{}'; exec sleep 600", pid_file.display());
    format!(
        "[mcp_servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nstartup_timeout_sec = 300\n",
        toml_str(script)
    )
}

fn config(toml: &str) -> McpConfig {
    McpConfig::from_toml(toml, "test.toml").unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

fn scratch(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-reload-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn args(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn text(result: &CallToolResult) -> String {
    match result.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

/// Waits (at most `within`) for `file` to hold a pid.
async fn read_pid(file: &Path, within: Duration) -> u32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(pid) = std::fs::read_to_string(file).ok().and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < deadline, "{} was not written within {within:?}", file.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_for(events: &mut UnboundedReceiver<SetEvent>, want: impl Fn(&SetEvent) -> bool) -> SetEvent {
    let within = Duration::from_secs(60);
    match tokio::time::timeout(within, async {
        loop {
            match events.recv().await {
                Some(event) if want(&event) => return event,
                Some(_) => {}
                None => panic!("event channel closed"),
            }
        }
    })
    .await
    {
        Ok(event) => event,
        Err(_) => panic!("no matching event within {within:?}"),
    }
}

fn pid(set: &ConnectionSet, server: &str) -> u32 {
    set.server_pid(server).unwrap_or_else(|| panic!("{server} has no process: {:?}", set.status(server)))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_keeps_unchanged_servers_restarts_changed_ones_and_stops_removed_ones() {
    let dir = scratch("keeps");
    let pending_pid_file = dir.join("pending.pid");
    let before = [
        everything("everything"),
        echo("echo", &[], ""),
        echo("changed", &[], ""),
        echo("removed", &[], ""),
        never_ready("pending", &pending_pid_file),
    ]
    .concat();
    let (options, mut events) = SetOptions::default().with_event_channel();
    let set = ConnectionSet::new(config(&before), options);
    let starting = tokio::spawn({
        let set = set.clone();
        async move { set.start().await }
    });
    let mut ready = Vec::new();
    while ready.len() < 4 {
        if let SetEvent::Ready { server, .. } = wait_for(&mut events, |e| matches!(e, SetEvent::Ready { .. })).await {
            ready.push(server);
        }
    }
    let pending_pid = read_pid(&pending_pid_file, Duration::from_secs(30)).await;
    assert_eq!(set.status("pending").unwrap().state, ServerState::Starting);
    let (everything_pid, echo_pid, changed_pid, removed_pid) =
        (pid(&set, "everything"), pid(&set, "echo"), pid(&set, "changed"), pid(&set, "removed"));

    // `changed` gets other args, `echo` only other per-call settings; `removed` and `pending`
    // go; `memory` comes.
    let after = [
        everything("everything"),
        echo("echo", &[], "disabled_tools = [\"add\"]\ntool_timeout_sec = 5"),
        echo("changed", &["--threads", "2"], ""),
        memory("memory", &dir),
    ]
    .concat();
    let report = set.reload(config(&after)).await;
    assert_eq!(report.kept, ["everything"]);
    assert_eq!(report.updated, ["echo"]);
    assert_eq!(report.restarted, ["changed"]);
    assert_eq!(report.added, ["memory"]);
    assert_eq!(report.removed, ["pending", "removed"]);
    assert!(report.failed.is_empty(), "{report}");

    assert_eq!(pid(&set, "everything"), everything_pid, "an unchanged server keeps its process");
    assert_eq!(pid(&set, "echo"), echo_pid, "a server whose per-call settings changed keeps its process");
    assert_ne!(pid(&set, "changed"), changed_pid, "a changed server runs a new process");
    support::assert_groups_gone(&[changed_pid, removed_pid, pending_pid]).await;
    assert!(set.status("removed").is_none() && set.status("pending").is_none());

    // The start still pending for `pending` was cancelled, and did not fail the start.
    wait_for(&mut events, |e| matches!(e, SetEvent::Cancelled { server } if server == "pending")).await;
    let at_start = tokio::time::timeout(Duration::from_secs(30), starting).await.unwrap().unwrap();
    assert!(at_start.is_ok(), "{at_start:?}");
    let summary = set.summary();
    assert!(summary.servers.iter().all(|s| s.state == ServerState::Ready), "{summary:?}");

    // The per-call settings took effect in place; every server answers.
    let catalog = set.catalog();
    assert!(catalog.tool("mcp__echo__add").is_none(), "disabled_tools applied without a restart");
    assert!(catalog.tool("mcp__memory__read_graph").is_some(), "the added server is listed");
    let echoed = set.call_tool_on("changed", "echo", args(json!({"text": "new"})), Default::default()).await.unwrap();
    assert_eq!(text(&echoed), "new");
    let refused = set.call_tool_on("echo", "add", args(json!({"a": 1, "b": 2})), Default::default()).await;
    assert!(refused.is_err(), "add is disabled now");
    set.call_tool_on("memory", "read_graph", None, Default::default()).await.unwrap();
    set.call_tool_on("everything", "echo", args(json!({"message": "still here"})), Default::default()).await.unwrap();

    let groups = [pid(&set, "everything"), pid(&set, "echo"), pid(&set, "changed"), pid(&set, "memory")];
    set.shutdown().await;
    support::assert_groups_gone(&groups).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_leases_share_one_child_which_stops_after_the_last_release() {
    let set = ConnectionSet::new(config(&echo("echo", &[], "")), SetOptions::default());
    set.start().await.unwrap();
    let first = set.lease("echo").unwrap();
    let second = set.lease("echo").unwrap();
    let child = pid(&set, "echo");
    assert_eq!((first.pid(), second.pid()), (Some(child), Some(child)), "both leases hold the set's child");
    assert_eq!(support::running_in_group(child), [child], "one process");

    // The set gives its own lease up: the leases keep the child, and it still answers.
    let report = set.reload(McpConfig::default()).await;
    assert_eq!(report.removed, ["echo"]);
    assert_eq!(support::running_in_group(child), [child], "the leases keep the child running");
    let answer = first.call_tool("echo", args(json!({"text": "leased"})), Default::default()).await.unwrap();
    assert_eq!(text(&answer), "leased");

    first.release().await;
    assert_eq!(support::running_in_group(child), [child], "one lease is left");
    second.release().await;
    support::assert_groups_gone(&[child]).await;
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_in_flight_on_a_removed_server_finishes_before_its_child_stops() {
    let (options, _events) = SetOptions::default().with_event_channel();
    let set = ConnectionSet::new(config(&everything("everything")), options);
    set.start().await.unwrap();
    let child = pid(&set, "everything");
    let (progressed, mut first_step) = tokio::sync::mpsc::unbounded_channel();
    let call = tokio::spawn({
        let set = set.clone();
        async move {
            let arguments = args(json!({"duration": 4, "steps": 2}));
            let options = mcpwire::client::CallOptions::default().with_progress(move |p| {
                let _ = progressed.send(p);
            });
            set.call_tool_on("everything", "trigger-long-running-operation", arguments, options).await
        }
    });
    first_step.recv().await.expect("a first progress step");
    let report = set.reload(McpConfig::default()).await;
    assert_eq!(report.removed, ["everything"]);
    assert!(!support::running_in_group(child).is_empty(), "the retired connection still serves the call in flight");
    let result = call.await.unwrap().expect("the call in flight completes");
    assert!(text(&result).contains("completed"), "{}", text(&result));
    support::assert_groups_gone(&[child]).await;
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_singleton_server_keeps_its_connection_when_its_restart_cannot_start_a_second() {
    let dir = scratch("singleton");
    // Holds an exclusive lock for its whole life: a second instance exits at once.
    let singleton = |generation: &str| {
        let script = format!(
            "exec 9>'{}'; flock -n 9 || exit 3; exec '{}'",
            dir.join("lock").display(),
            examples::example_path("echo_server").display()
        );
        format!(
            "[mcp_servers.only]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nenv = {{ GENERATION = \"{generation}\" }}\n",
            toml_str(script)
        )
    };
    let (options, mut events) = SetOptions::default().with_event_channel();
    let set = ConnectionSet::new(config(&singleton("1")), options);
    set.start().await.unwrap();
    let child = pid(&set, "only");

    let report = set.reload(config(&singleton("2"))).await;
    assert_eq!(report.restarted, ["only"]);
    assert_eq!(report.failed.len(), 1, "{report}");
    wait_for(&mut events, |e| matches!(e, SetEvent::RestartFailed { server, .. } if server == "only")).await;
    assert_eq!(pid(&set, "only"), child, "the working connection stays");
    assert_eq!(set.status("only").unwrap().state, ServerState::Ready);
    let answer = set.call_tool_on("only", "echo", args(json!({"text": "still"})), Default::default()).await.unwrap();
    assert_eq!(text(&answer), "still");

    set.shutdown().await;
    support::assert_groups_gone(&[child]).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_keeps_an_unchanged_http_session_and_reconnects_one_whose_headers_changed() {
    let web = support::everything_http("streamableHttp");
    let url = format!("http://127.0.0.1:{}/mcp", web.port);
    let servers = |team: &str| {
        config(&format!(
            "[mcp_servers.web]\nurl = {url:?}\nstartup_timeout_sec = 30\n\n\
             [mcp_servers.team]\nurl = {url:?}\nhttp_headers = {{ \"X-Team\" = \"{team}\" }}\nstartup_timeout_sec = 30\n"
        ))
    };
    let set = ConnectionSet::new(servers("core"), SetOptions::default());
    set.start().await.unwrap();
    let connections = |server: &str| set.status(server).unwrap().connections;
    assert_eq!((connections("web"), connections("team")), (1, 1));

    let report = set.reload(servers("edge")).await;
    assert_eq!(
        (report.kept.as_slice(), report.restarted.as_slice()),
        (&["web".to_owned()][..], &["team".to_owned()][..])
    );
    assert_eq!(connections("web"), 1, "the unchanged server keeps its session");
    assert_eq!(connections("team"), 2, "a changed header is a new connection");
    for server in ["web", "team"] {
        let echoed =
            set.call_tool_on(server, "echo", args(json!({"message": server})), Default::default()).await.unwrap();
        assert_eq!(text(&echoed), format!("Echo: {server}"));
    }
    set.shutdown().await;
}
