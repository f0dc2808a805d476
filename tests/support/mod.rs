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
