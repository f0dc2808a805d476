//! Catalog sources with precedence over real servers: a codex config, a project file and an
//! imported Claude file define overlapping names; the winners run (echo_server,
//! server-memory, the Python SDK's time server, a fixture server), the shadowed and disabled
//! ones do not, and the outcome is in the catalog and in `mcp-bridge check`.

use crate::examples;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use mcpwire::client::catalog::{CatalogBuilder, ConflictAction, ResolvedCatalog, SourceKind};
use mcpwire::client::connection_set::{ConnectionSet, ServerState, SetOptions};
use serde_json::{json, Value};

fn scratch(test: &str) -> PathBuf {
    crate::support::scratch_dir("sources", test)
}

fn fixture(tools: &[&str]) -> Value {
    let script = support::repo_path("tests/fixtures/catalog_server.py").display().to_string();
    json!({"command": "python3", "args": std::iter::once(script).chain(tools.iter().map(|t| t.to_string())).collect::<Vec<_>>()})
}

/// Python and Node children start in well under a second alone, but the test binaries run
/// side by side on two cores in CI: the startup bound is generous so that what is asserted
/// is the resolution, not the machine's speed.
const STARTUP_TIMEOUT_SEC: u64 = 60;

fn toml_server(name: &str, server: &Value) -> String {
    let mut out = format!("[mcp_servers.{name}]\nstartup_timeout_sec = {STARTUP_TIMEOUT_SEC}\n");
    for (k, v) in server.as_object().unwrap() {
        let value = match v {
            Value::Object(table) => {
                let members: Vec<String> = table.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                format!("{{ {} }}", members.join(", "))
            }
            other => other.to_string(),
        };
        out.push_str(&format!("{k} = {value}\n"));
    }
    out
}

/// Three files: the user's config, a project file, an imported Claude Desktop file.
fn three_sources(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let echo = json!({"command": examples::example_path("echo_server").display().to_string()});
    let memory = json!({
        "command": support::peer("MCP_NODE"),
        "args": [support::peer("MCP_MEMORY_JS")],
        "env": {"MEMORY_FILE_PATH": dir.join("memory.json").display().to_string()},
    });
    let config = dir.join("config.toml");
    std::fs::write(&config, [toml_server("echo", &echo), toml_server("shared", &fixture(&["from_config"]))].join("\n"))
        .unwrap();
    let project = dir.join("project.toml");
    std::fs::write(
        &project,
        [
            toml_server("shared", &fixture(&["from_project"])),
            toml_server("memory", &memory),
            toml_server("clash", &fixture(&["from_project_clash"])),
        ]
        .join("\n"),
    )
    .unwrap();
    let imported = dir.join("claude_desktop_config.json");
    let claude = json!({"mcpServers": {
        "echo": fixture(&["from_import"]),
        "clash": fixture(&["from_import_clash"]),
        "time": {"command": support::peer("MCP_SERVER_TIME")},
    }});
    std::fs::write(&imported, claude.to_string()).unwrap();
    (config, project, imported)
}

fn resolve(config: &Path, project: &Path, imported: &Path) -> ResolvedCatalog {
    CatalogBuilder::new()
        .file(SourceKind::Imported, imported, ConflictAction::Override)
        .unwrap()
        .file(SourceKind::Project, project, ConflictAction::Disable)
        .unwrap()
        .file(SourceKind::Config, config, ConflictAction::Override)
        .unwrap()
        .build()
}

#[tokio::test(flavor = "multi_thread")]
async fn three_sources_resolve_by_precedence_and_conflict_action_and_the_winners_run() {
    let dir = scratch("run");
    let (config, project, imported) = three_sources(&dir);
    let catalog = resolve(&config, &project, &imported);
    let kind_of = |name: &str| catalog.resolution(name).unwrap().source.kind;
    assert_eq!(kind_of("echo"), SourceKind::Config);
    assert_eq!(kind_of("shared"), SourceKind::Config);
    assert_eq!(kind_of("memory"), SourceKind::Project);
    assert_eq!(kind_of("clash"), SourceKind::Project);
    assert_eq!(kind_of("time"), SourceKind::Imported);
    let shared = catalog.resolution("shared").unwrap();
    assert_eq!(shared.shadowed.len(), 1);
    assert_eq!(shared.shadowed[0].source.kind, SourceKind::Project);
    let clash = catalog.resolution("clash").unwrap();
    let why = clash.disabled.as_deref().expect("the project source disables on conflict");
    assert!(why.contains("imported") && why.contains("disables on conflict"), "{why}");
    assert!(catalog.resolution("memory").unwrap().disabled.is_none(), "no conflict: the project's own server runs");

    let mut config = catalog.config().clone();
    for server in config.servers.values_mut() {
        // The imported (Claude) file has no startup timeout of its own.
        server.startup_timeout = std::time::Duration::from_secs(STARTUP_TIMEOUT_SEC);
    }
    let set = ConnectionSet::new(config, SetOptions::default());
    let summary = set.start().await.unwrap();
    let state = |name: &str| summary.servers.iter().find(|s| s.name == name).unwrap().state;
    for name in ["echo", "shared", "memory", "time"] {
        assert_eq!(state(name), ServerState::Ready, "{name}: {summary:?}");
    }
    assert_eq!(state("clash"), ServerState::Disabled);
    let tools: Vec<String> = set.tools().into_iter().map(|t| t.qualified_name).collect();
    for present in
        ["mcp__shared__from_config", "mcp__echo__echo", "mcp__memory__read_graph", "mcp__time__get_current_time"]
    {
        assert!(tools.iter().any(|t| t == present), "{present} missing from {tools:?}");
    }
    for shadowed in ["mcp__shared__from_project", "mcp__echo__from_import"] {
        assert!(!tools.iter().any(|t| t == shadowed), "{shadowed} should be shadowed: {tools:?}");
    }
    assert!(!tools.iter().any(|t| t.starts_with("mcp__clash__")), "{tools:?}");
    let answer = set.call_tool("mcp__shared__from_config", None, Default::default()).await.unwrap();
    assert!(serde_json::to_string(&answer).unwrap().contains("from_config called by"), "{answer:?}");
    set.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mcp_bridge_check_shows_which_source_won_and_what_it_shadowed() {
    let dir = scratch("check");
    let (config, project, imported) = three_sources(&dir);
    let run = |json: bool| {
        let mut command = Command::new(examples::bin_path("mcp-bridge"));
        command.arg("check").arg("--config").arg(&config).arg("--project").arg(&project);
        command.arg("--import").arg(&imported).args(["--on-conflict", "project=disable"]);
        if json {
            command.arg("--json");
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    let lines: Vec<Value> = run(true).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let line = |name: &str| lines.iter().find(|l| l["server"] == name).unwrap_or_else(|| panic!("{name}: {lines:?}"));
    assert_eq!(line("shared")["source"], json!({"kind": "config", "file": config.display().to_string()}));
    assert_eq!(line("shared")["shadowed"], json!([{"kind": "project", "file": project.display().to_string()}]));
    assert_eq!(line("shared")["state"], "ready");
    assert_eq!(line("time")["source"]["kind"], "imported");
    assert_eq!(line("clash")["state"], "disabled");
    assert!(line("clash")["disabledBy"].as_str().unwrap().contains("disables on conflict"), "{}", line("clash"));

    let text = run(false);
    let echo = format!("echo: from config ({}), shadowing imported ({})", config.display(), imported.display());
    assert!(text.lines().any(|l| l == echo), "{text}");
    assert!(text.lines().any(|l| l == "clash: disabled"), "{text}");
}
