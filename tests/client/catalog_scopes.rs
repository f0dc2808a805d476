//! Scoped server identities over real servers: two `git` servers (the Python SDK's
//! mcp-server-git), one per workspace scope, each serving its own repository from its own
//! process under its own qualified names; a bare name resolves to the unscoped server, or to
//! the one scoped server of that name, and is refused as ambiguous otherwise.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use mcpwire::client::catalog::{CatalogBuilder, SourceKind};
use mcpwire::client::config::McpConfig;
use mcpwire::client::connection_set::{ConnectionSet, SetError, SetOptions};
use serde_json::json;

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-scopes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn repo(dir: &Path, name: &str) -> PathBuf {
    let repo = dir.join(name);
    std::fs::create_dir_all(&repo).unwrap();
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&repo).status().unwrap().success());
    std::fs::write(repo.join(format!("{name}.txt")), name).unwrap();
    repo.canonicalize().unwrap()
}

/// A workspace's project file: `git` serving `repo`.
fn workspace(repo: &Path) -> McpConfig {
    let toml = format!(
        "[mcp_servers.git]\ncommand = {:?}\nargs = [\"--repository\", {:?}]\nstartup_timeout_sec = 30\n",
        support::peer("MCP_SERVER_GIT"),
        repo.display().to_string()
    );
    McpConfig::from_toml(&toml, "project.toml").unwrap()
}

fn text(result: &mcpwire::proto::mcp_types::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_git_servers_in_two_scopes_each_reach_their_own_process_and_repository() {
    let dir = scratch();
    let (alpha, beta) = (repo(&dir, "alpha"), repo(&dir, "beta"));
    let catalog = CatalogBuilder::new()
        .source(SourceKind::Project, "alpha/project.toml", workspace(&alpha).in_scope("alpha"))
        .source(SourceKind::Project, "beta/project.toml", workspace(&beta).in_scope("beta"))
        .build();
    let keys: Vec<&String> = catalog.config().servers.keys().collect();
    assert_eq!(keys, ["alpha/git", "beta/git"]);
    assert!(catalog.resolutions().iter().all(|r| r.shadowed.is_empty()), "two scopes do not conflict");

    let set = ConnectionSet::new(catalog.into_config(), SetOptions::default());
    set.start().await.unwrap();
    let (alpha_pid, beta_pid) = (set.server_pid("alpha/git").unwrap(), set.server_pid("beta/git").unwrap());
    assert_ne!(alpha_pid, beta_pid, "one process each");

    let tools = set.tools();
    let status_tool = |scope: &str| {
        tools
            .iter()
            .find(|t| t.scope.as_deref() == Some(scope) && t.tool.name == "git_status")
            .unwrap_or_else(|| panic!("no git_status in scope {scope}"))
    };
    assert_eq!(status_tool("alpha").qualified_name, "mcp__alpha__git__git_status");
    assert_eq!(status_tool("beta").qualified_name, "mcp__beta__git__git_status");
    assert_eq!(status_tool("alpha").server, "alpha/git");

    // Each call reaches its own server: each sees its own repository's untracked file.
    let status = |repo: &Path| json!({"repo_path": repo}).as_object().cloned();
    let in_alpha = set.call_tool("mcp__alpha__git__git_status", status(&alpha), Default::default()).await.unwrap();
    assert!(text(&in_alpha).contains("alpha.txt") && !text(&in_alpha).contains("beta.txt"), "{}", text(&in_alpha));
    let in_beta = set.call_tool("mcp__beta__git__git_status", status(&beta), Default::default()).await.unwrap();
    assert!(text(&in_beta).contains("beta.txt") && !text(&in_beta).contains("alpha.txt"), "{}", text(&in_beta));

    // A bare name is ambiguous between the two scopes.
    let ambiguous = set.call_tool_on("git", "git_status", status(&alpha), Default::default()).await.unwrap_err();
    assert!(
        matches!(&ambiguous, SetError::AmbiguousServer { candidates, .. } if candidates == &["alpha/git", "beta/git"])
    );
    assert_eq!(ambiguous.to_string(), "server name git is ambiguous: it could be alpha/git, beta/git");
    set.shutdown().await;

    // One scoped `git` and one unscoped: the bare name is the unscoped one; with only the
    // scoped one, the bare name resolves to it.
    let mut both = workspace(&alpha).in_scope("alpha");
    both.servers.extend(workspace(&beta).servers);
    let set = ConnectionSet::new(both, SetOptions::default());
    set.start().await.unwrap();
    assert_eq!(set.status("git").unwrap().name, "git");
    assert_ne!(set.server_pid("git"), set.server_pid("alpha/git"));
    let unscoped = set.call_tool_on("git", "git_status", status(&beta), Default::default()).await.unwrap();
    assert!(text(&unscoped).contains("beta.txt"), "{}", text(&unscoped));
    set.shutdown().await;

    let set = ConnectionSet::new(workspace(&alpha).in_scope("alpha"), SetOptions::default());
    set.start().await.unwrap();
    let only = set.call_tool_on("git", "git_status", status(&alpha), Default::default()).await.unwrap();
    assert!(text(&only).contains("alpha.txt"), "{}", text(&only));
    set.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
