//! `mcp-bridge serve --config FILE` reloads FILE on SIGHUP and when it changes: an unchanged upstream keeps its
//! process, a removed one is stopped, an added one started, and downstream sessions are told
//! with `notifications/tools/list_changed`. Upstreams: server-everything and the Python SDK's
//! time and git servers, over stdio.

use crate::serving;
use crate::support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serving::{children_of, ServingBridge};

fn child_running(bridge: &ServingBridge, command_part: &str) -> Option<u32> {
    children_of(bridge.pid()).into_iter().find(|(_, cmd)| cmd.contains(command_part)).map(|(pid, _)| pid)
}

fn scratch(name: &str) -> PathBuf {
    crate::support::scratch_dir("bridge-reload", name)
}

fn everything() -> String {
    format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n",
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_config_keeping_unchanged_upstreams_and_tells_downstream() {
    let dir = scratch("hup");
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&repo).status().unwrap().success());
    let config = dir.join("config.toml");
    let time = format!("[mcp_servers.time]\ncommand = {:?}\n", support::peer("MCP_SERVER_TIME"));
    std::fs::write(&config, format!("# the upstreams\n{}\n{time}", everything())).unwrap();
    let bridge = ServingBridge::start(&["--config", config.to_str().unwrap()]);
    let everything_pid = child_running(&bridge, "server-everything").expect("everything runs");
    child_running(&bridge, "mcp-server-time").expect("time runs");

    let (tx, mut notifications) = tokio::sync::mpsc::unbounded_channel();
    let client = {
        use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
        let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.url)).unwrap();
        let options = mcpwire::client::ClientOptions::default()
            .with_era(mcpwire::client::EraPolicy::Legacy)
            .with_handler(move |n: mcpwire::proto::jsonrpc::Notification| {
                let _ = tx.send(n.method);
            });
        mcpwire::client::Client::connect(transport, options).await.unwrap()
    };
    let names = |tools: Vec<mcpwire::proto::mcp_types::Tool>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();
    let before = names(client.list_tools().await.unwrap());
    assert!(before.contains(&"mcp__time__get_current_time".to_owned()), "{before:?}");

    let git = format!(
        "[mcp_servers.git]\ncommand = {:?}\nargs = [\"--repository\", {:?}]\n",
        support::peer("MCP_SERVER_GIT"),
        repo.display().to_string()
    );
    std::fs::write(&config, format!("# the upstreams\n{}\n{git}", everything())).unwrap();
    bridge.signal("HUP");
    tokio::time::timeout(Duration::from_secs(30), async {
        while notifications.recv().await.expect("the session stays up") != "notifications/tools/list_changed" {}
    })
    .await
    .expect("the downstream session is told within 30 s");

    let after = names(client.list_tools().await.unwrap());
    assert!(after.contains(&"mcp__git__git_status".to_owned()), "{after:?}");
    assert!(!after.iter().any(|t| t.starts_with("mcp__time__")), "{after:?}");
    assert_eq!(
        child_running(&bridge, "server-everything"),
        Some(everything_pid),
        "the unchanged upstream kept its process"
    );
    assert_eq!(child_running(&bridge, "mcp-server-time"), None, "the removed upstream was stopped");
    let status = client.call_tool(
        "mcp__git__git_status",
        serde_json::json!({"repo_path": repo}).as_object().cloned(),
        Default::default(),
    );
    let status = status.await.unwrap();
    assert_ne!(status.is_error, Some(true), "{status:?}");
    let echo = client.call_tool(
        "mcp__everything__echo",
        serde_json::json!({"message": "kept"}).as_object().cloned(),
        Default::default(),
    );
    assert_eq!(serde_json::to_value(&echo.await.unwrap().content).unwrap()[0]["text"], "Echo: kept");
    let _ = client.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_of_the_config_file_is_reloaded_without_a_signal() {
    let dir = scratch("watch");
    let config = dir.join("config.toml");
    std::fs::write(&config, everything()).unwrap();
    let bridge = ServingBridge::start(&["--config", config.to_str().unwrap()]);
    let everything_pid = child_running(&bridge, "server-everything").expect("everything runs");
    let (tx, mut notifications) = tokio::sync::mpsc::unbounded_channel();
    let client = {
        use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
        let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.url)).unwrap();
        let options = mcpwire::client::ClientOptions::default()
            .with_era(mcpwire::client::EraPolicy::Legacy)
            .with_handler(move |n: mcpwire::proto::jsonrpc::Notification| {
                let _ = tx.send(n.method);
            });
        mcpwire::client::Client::connect(transport, options).await.unwrap()
    };
    let time = format!("[mcp_servers.time]\ncommand = {:?}\n", support::peer("MCP_SERVER_TIME"));
    std::fs::write(&config, format!("{}\n{time}", everything())).unwrap();
    tokio::time::timeout(Duration::from_secs(30), async {
        while notifications.recv().await.expect("the session stays up") != "notifications/tools/list_changed" {}
    })
    .await
    .expect("the change is picked up and told within 30 s");
    let tools: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(tools.contains(&"mcp__time__get_current_time".to_owned()), "{tools:?}");
    assert_eq!(child_running(&bridge, "server-everything"), Some(everything_pid));
    let _ = client.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `mcp-server-time` children of the bridge, with their command lines, by pid.
fn time_children(bridge: &ServingBridge) -> Vec<(u32, String)> {
    let mut children: Vec<_> =
        children_of(bridge.pid()).into_iter().filter(|(_, cmd)| cmd.contains("mcp-server-time")).collect();
    children.sort();
    children
}

/// Waits (at most 30 s, looking every 100 ms) until the bridge's time children satisfy `done`.
async fn until_time_children(bridge: &ServingBridge, what: &str, done: impl Fn(&[(u32, String)]) -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while !done(&time_children(bridge)) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    assert!(waited.await.is_ok(), "{what}: {:?}", time_children(bridge));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_moves_each_sessions_per_session_upstreams_to_the_new_config() {
    let dir = scratch("per-session");
    let config = dir.join("config.toml");
    let time = |args: &str| format!("[mcp_servers.time]\ncommand = {:?}\n{args}", support::peer("MCP_SERVER_TIME"));
    std::fs::write(&config, format!("{}\n{}", everything(), time(""))).unwrap();
    let bridge = ServingBridge::start(&["--config", config.to_str().unwrap(), "--per-session", "time"]);
    let shared = time_children(&bridge);
    assert_eq!(shared.len(), 1, "the shared connection lists the tools: {shared:?}");

    let client = {
        use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
        let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.url)).unwrap();
        let options = mcpwire::client::ClientOptions::default().with_era(mcpwire::client::EraPolicy::Legacy);
        mcpwire::client::Client::connect(transport, options).await.unwrap()
    };
    let now = || {
        client.call_tool(
            "mcp__time__get_current_time",
            serde_json::json!({"timezone": "UTC"}).as_object().cloned(),
            Default::default(),
        )
    };
    let first = now().await.unwrap();
    assert_ne!(first.is_error, Some(true), "{first:?}");
    let before = time_children(&bridge);
    assert_eq!(before.len(), 2, "the session has its own child besides the shared one: {before:?}");

    std::fs::write(&config, format!("{}\n{}", everything(), time("args = [\"--local-timezone\", \"Europe/Paris\"]\n")))
        .unwrap();
    bridge.signal("HUP");
    until_time_children(&bridge, "both time children restarted with the new arguments", |now| {
        now.len() == 2
            && now.iter().all(|(pid, cmd)| cmd.contains("Europe/Paris") && !before.iter().any(|(old, _)| old == pid))
    })
    .await;
    let moved = time_children(&bridge);
    let again = now().await.unwrap();
    assert_ne!(again.is_error, Some(true), "{again:?}");
    assert_eq!(time_children(&bridge), moved, "the call used the session's moved child, no third one");

    std::fs::write(&config, everything()).unwrap();
    bridge.signal("HUP");
    until_time_children(&bridge, "a removed per-session server is stopped in every session", <[_]>::is_empty).await;
    let gone = now().await;
    assert!(gone.is_err() || gone.as_ref().unwrap().is_error == Some(true), "{gone:?}");
    let echo = client.call_tool(
        "mcp__everything__echo",
        serde_json::json!({"message": "kept"}).as_object().cloned(),
        Default::default(),
    );
    assert_eq!(serde_json::to_value(&echo.await.unwrap().content).unwrap()[0]["text"], "Echo: kept");
    let _ = client.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
