//! Deferred startup from the catalog cache, over real stdio servers (our echo server and
//! server-everything): a `startup = "lazy"` server whose listing is cached is listed without
//! a process and started on its first call; a corrupt or stale cache is ignored with a
//! warning and the server started as an eager one.

use crate::examples;
use crate::support;

use std::path::{Path, PathBuf};

use mcpwire::client::catalog::CatalogCache;
use mcpwire::client::config::McpConfig;
use mcpwire::client::connection_set::{ConnectionSet, ServerState, SetEvent, SetOptions};
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

fn scratch(test: &str) -> PathBuf {
    crate::support::scratch_dir("lazy", test)
}

/// A lazy echo server that appends its pid to `starts` each time it starts, and an eager
/// server-everything.
fn config(starts: &Path, echo_args: &str) -> McpConfig {
    let script = format!(
        "echo $$ >> '{}'; exec '{}' {echo_args}",
        starts.display(),
        examples::example_path("echo_server").display()
    );
    let toml = format!(
        "[mcp_servers.lazy]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nstartup = \"lazy\"\n\n\
         [mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\nstartup_timeout_sec = 30\n",
        serde_json::to_string(&script).unwrap(),
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS"),
    );
    McpConfig::from_toml(&toml, "lazy.toml").unwrap()
}

fn starts(file: &Path) -> usize {
    std::fs::read_to_string(file).map(|s| s.lines().count()).unwrap_or(0)
}

fn options_with(cache: &CatalogCache) -> (SetOptions, UnboundedReceiver<SetEvent>) {
    SetOptions::default().with_catalog_cache(cache.clone()).with_event_channel()
}

fn warnings(events: &mut UnboundedReceiver<SetEvent>) -> Vec<String> {
    let mut found = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let SetEvent::Warning { message, .. } = event {
            found.push(message);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lazy_server_is_listed_from_the_cache_and_started_on_its_first_call() {
    let dir = scratch("first-call");
    let (log, cache) = (dir.join("starts.log"), CatalogCache::at(dir.join("cache.json")));

    // No cache yet: the lazy server starts as an eager one, and the listings are cached.
    let (options, _events) = options_with(&cache);
    let set = ConnectionSet::new(config(&log, ""), options);
    set.start().await.unwrap();
    assert_eq!(set.status("lazy").unwrap().state, ServerState::Ready);
    assert_eq!(starts(&log), 1);
    set.shutdown().await;
    assert!(cache.path().exists(), "the cache was written after the listing");

    // With the cache: listed at once, no process.
    let (options, mut events) = options_with(&cache);
    let set = ConnectionSet::new(config(&log, ""), options);
    let summary = set.start().await.unwrap();
    let lazy = summary.servers.iter().find(|s| s.name == "lazy").unwrap();
    assert_eq!((lazy.state, lazy.tools), (ServerState::Deferred, 3), "{summary:?}");
    assert_eq!(set.server_pid("lazy"), None);
    assert_eq!(starts(&log), 1, "not started");
    let tools: Vec<String> = set.tools().into_iter().map(|t| t.qualified_name).collect();
    assert!(tools.contains(&"mcp__lazy__echo".to_owned()) && tools.contains(&"mcp__everything__echo".to_owned()));
    assert!(warnings(&mut events).is_empty());

    // The first call starts it, once, for two calls at the same time.
    let call = |text: &str| {
        let set = set.clone();
        let arguments = json!({"text": text}).as_object().cloned();
        async move { set.call_tool("mcp__lazy__echo", arguments, Default::default()).await }
    };
    let (a, b) = tokio::join!(call("a"), call("b"));
    assert_eq!(serde_json::to_value(&a.unwrap().content).unwrap()[0]["text"], "a");
    assert_eq!(serde_json::to_value(&b.unwrap().content).unwrap()[0]["text"], "b");
    assert_eq!(starts(&log), 2, "one start for both calls");
    assert_eq!(set.status("lazy").unwrap().state, ServerState::Ready);
    assert!(set.server_pid("lazy").is_some());
    set.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_or_stale_cache_is_ignored_with_a_warning() {
    let dir = scratch("corrupt");
    let (log, cache) = (dir.join("starts.log"), CatalogCache::at(dir.join("cache.json")));
    std::fs::write(cache.path(), "{\"version\": 1, \"servers\": [not json").unwrap();
    let (options, mut events) = options_with(&cache);
    let set = ConnectionSet::new(config(&log, ""), options);
    set.start().await.unwrap();
    assert_eq!(set.status("lazy").unwrap().state, ServerState::Ready, "started as if eager");
    assert_eq!(starts(&log), 1);
    let warned = warnings(&mut events);
    assert!(warned.iter().any(|w| w.contains("not a cache file")), "{warned:?}");
    set.shutdown().await;
    // The start rewrote the cache: it is usable again.
    let listed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(cache.path()).unwrap()).unwrap();
    assert!(listed["servers"]["lazy"]["tools"].as_array().is_some_and(|t| t.len() == 3), "{listed}");

    // Another command line for the lazy server: its entry is stale.
    let (options, mut events) = options_with(&cache);
    let set = ConnectionSet::new(config(&log, "--threads 1"), options);
    set.start().await.unwrap();
    assert_eq!(set.status("lazy").unwrap().state, ServerState::Ready);
    assert_eq!(starts(&log), 2);
    let warned = warnings(&mut events);
    assert!(warned.iter().any(|w| w.contains("the entry of lazy is stale")), "{warned:?}");
    set.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_ready_when_connected_is_listed_after_startup() {
    let toml = format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\nstartup_timeout_sec = 30\nready = \"connected\"\n",
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS"),
    );
    let (options, mut events) = SetOptions::default().with_event_channel();
    let set = ConnectionSet::new(McpConfig::from_toml(&toml, "ready.toml").unwrap(), options);
    set.start().await.unwrap();
    let mut ready_tools = None;
    let listed = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            match events.recv().await.expect("the set is alive") {
                SetEvent::Ready { tools, .. } => ready_tools = Some(tools),
                SetEvent::CatalogChanged { server } if server == "everything" => return,
                _ => {}
            }
        }
    });
    listed.await.expect("listed after startup");
    assert_eq!(ready_tools, Some(0), "ready before its catalog was listed");
    assert!(set.tools().iter().any(|t| t.qualified_name == "mcp__everything__echo"));
    set.call_tool("mcp__everything__echo", json!({"message": "hi"}).as_object().cloned(), Default::default())
        .await
        .unwrap();
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lazy_server_added_by_a_reload_is_deferred_when_its_listing_is_cached() {
    let dir = scratch("reload");
    let (log, cache) = (dir.join("starts.log"), CatalogCache::at(dir.join("cache.json")));
    let (options, _events) = options_with(&cache);
    let set = ConnectionSet::new(config(&log, ""), options);
    set.start().await.unwrap();
    set.shutdown().await;
    assert_eq!(starts(&log), 1, "the warming run started it once");

    // A set without the lazy server; a reload adds it back.
    let mut without = config(&log, "");
    let lazy = without.servers.remove("lazy").unwrap();
    let (options, _events) = options_with(&cache);
    let set = ConnectionSet::new(without.clone(), options);
    set.start().await.unwrap();
    without.insert(lazy);
    let report = set.reload(without).await;
    assert_eq!(report.added, ["lazy"]);
    assert_eq!(set.status("lazy").unwrap().state, ServerState::Deferred);
    assert_eq!(starts(&log), 1, "listed from the cache, not started");
    assert!(set.tools().iter().any(|t| t.qualified_name == "mcp__lazy__echo"));
    set.call_tool("mcp__lazy__echo", json!({"text": "now"}).as_object().cloned(), Default::default()).await.unwrap();
    assert_eq!(starts(&log), 2);
    set.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
