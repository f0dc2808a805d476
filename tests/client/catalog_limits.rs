//! Limits and hygiene of the connection set over real stdio servers (server-everything, and
//! the fixture tests/fixtures/catalog_server.py): a per-server cap on catalog items with a
//! warning, a failed refresh after list_changed keeping the previous catalog, and reserved
//! `_meta` keys stripped from a caller's `_meta` before the call goes upstream.

use crate::support;

use std::time::Duration;

use mcpwire::client::config::McpConfig;
use mcpwire::client::connection_set::{ConnectionSet, SetCallOptions, SetEvent, SetOptions};
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

fn fixture(name: &str, tools: &[&str]) -> String {
    let script = support::repo_path("tests/fixtures/catalog_server.py").display().to_string();
    let args: Vec<String> = std::iter::once(script).chain(tools.iter().map(|t| t.to_string())).collect();
    format!("[mcp_servers.{name}]\ncommand = \"python3\"\nargs = {}\n", serde_json::to_string(&args).unwrap())
}

fn config(toml: &str) -> McpConfig {
    McpConfig::from_toml(toml, "limits.toml").unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

async fn warning(events: &mut UnboundedReceiver<SetEvent>, server: &str) -> String {
    let wait = async {
        loop {
            match events.recv().await.expect("the set is alive") {
                SetEvent::Warning { server: Some(s), message } if s == server => return message,
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait).await.expect("a warning within 30 s")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_listing_more_than_the_cap_is_cut_with_a_warning() {
    let toml = format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\nstartup_timeout_sec = 30\n",
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS")
    );
    let (options, mut events) = SetOptions::default().with_max_items_per_server(5).with_event_channel();
    let set = ConnectionSet::new(config(&toml), options);
    set.start().await.unwrap();
    let message = warning(&mut events, "everything").await;
    assert!(message.contains(" tools") && message.ends_with("only the first 5 of each are offered"), "{message}");
    let catalog = set.catalog();
    assert_eq!(catalog.tools.len(), 5);
    assert!(catalog.resources.len() <= 5 && catalog.prompts.len() <= 5);
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refresh_that_fails_keeps_the_previous_catalog() {
    let (options, mut events) =
        SetOptions::default().with_refresh_debounce(Duration::from_millis(10)).with_event_channel();
    let set = ConnectionSet::new(config(&fixture("flaky", &["t", "break"])), options);
    set.start().await.unwrap();
    let before: Vec<String> = set.tools().into_iter().map(|t| t.qualified_name).collect();
    assert_eq!(before, ["mcp__flaky__t", "mcp__flaky__break"]);
    set.call_tool("mcp__flaky__break", None, Default::default()).await.unwrap();
    let message = warning(&mut events, "flaky").await;
    assert!(message.contains("the previous catalog stays") && message.contains("listing is broken"), "{message}");
    let after: Vec<String> = set.tools().into_iter().map(|t| t.qualified_name).collect();
    assert_eq!(after, before);
    let answer = set.call_tool("mcp__flaky__t", None, Default::default()).await.unwrap();
    assert!(serde_json::to_string(&answer).unwrap().contains("t called by"), "still served");
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reserved_meta_keys_given_by_a_caller_do_not_go_upstream() {
    let options = SetOptions::default().with_reserved_meta_prefix("com.example.host/");
    let set = ConnectionSet::new(config(&fixture("m", &["meta"])), options);
    set.start().await.unwrap();
    let call = SetCallOptions::default()
        .with_meta("example.com/trace", json!("t-1"))
        .with_meta("io.modelcontextprotocol/clientInfo", json!({"name": "spoofed", "version": "0"}))
        .with_meta("com.example.host/approved", json!(true))
        .with_meta("progressToken", json!(7));
    let result = set.call_tool_on("m", "meta", None, call).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned();
    let seen: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(seen, json!({"example.com/trace": "t-1"}), "only the caller's own key reaches the server");
    set.shutdown().await;
}
