//! `mcp-bridge add`, `list --json`, `get --json` and `remove` on a commented codex
//! `config.toml`: the comments and the file's other settings survive, the file still parses as
//! TOML (Python's `tomllib`, as any reader of codex's file would) and as codex's schema, the
//! server added runs (`check` starts our echo server from it), and a bad edit is refused
//! naming the file and line.

use crate::examples;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// `mcp-bridge SUBCOMMAND --config CONFIG REST...` (CODEX_HOME pointed at the scratch
/// directory, so the user's own file is never the default).
fn bridge(args: &[&str], config: &Path) -> Output {
    let (subcommand, rest) = args.split_first().unwrap();
    Command::new(examples::bin_path("mcp-bridge"))
        .arg(subcommand)
        .arg("--config")
        .arg(config)
        .args(rest)
        .env("CODEX_HOME", config.parent().unwrap())
        .output()
        .unwrap()
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn scratch(test: &str) -> PathBuf {
    crate::support::scratch_dir("config-cli", test)
}

const CODEX_CONFIG: &str = r#"# codex settings — keep this comment
model = "o3"  # the model, inline comment

[profiles.fast]
model = "o4-mini"

# the old server, about to go
[mcp_servers.old]
command = "old-server"
args = ["--port", "1"]  # its port

# after the servers
[history]
persistence = "none"
"#;

/// The file read by Python's tomllib, as JSON.
fn toml_as_python_reads_it(path: &Path) -> Value {
    let script = "import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], 'rb'))))";
    let output = Command::new("python3").args(["-c", script]).arg(path).output().unwrap();
    assert!(output.status.success(), "tomllib: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn add_list_get_and_remove_edit_a_commented_codex_config_in_place() {
    let dir = scratch("edit");
    let config = dir.join("config.toml");
    std::fs::write(&config, CODEX_CONFIG).unwrap();
    let echo = examples::example_path("echo_server").display().to_string();

    let added = ok(bridge(&["add", "echo", "--env", "SECRET_TOKEN=hunter2", "--", &echo], &config));
    assert!(added.starts_with("added echo to "), "{added}");
    ok(bridge(
        &["add", "remote", "--url", "https://example.com/mcp", "--bearer-token-env-var", "REMOTE_TOKEN"],
        &config,
    ));

    let listed: Value = serde_json::from_str(&ok(bridge(&["list", "--json"], &config))).unwrap();
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "old", "remote"]);
    let got: Value = serde_json::from_str(&ok(bridge(&["get", "echo", "--json"], &config))).unwrap();
    assert_eq!(got["transport"]["command"], echo);
    assert_eq!(got["transport"]["env"], serde_json::json!(["SECRET_TOKEN"]), "names only");
    assert_eq!(got["source"]["kind"], "config");
    let text = ok(bridge(&["get", "echo"], &config));
    assert!(
        !text.contains("hunter2") && !serde_json::to_string(&listed).unwrap().contains("hunter2"),
        "no secret values"
    );
    let remote: Value = serde_json::from_str(&ok(bridge(&["get", "remote", "--json"], &config))).unwrap();
    assert_eq!(remote["transport"]["url"], "https://example.com/mcp");
    assert_eq!(remote["transport"]["bearerTokenEnvVar"], "REMOTE_TOKEN");

    let removed = ok(bridge(&["remove", "old"], &config));
    assert!(removed.starts_with("removed old from "), "{removed}");

    let edited = std::fs::read_to_string(&config).unwrap();
    for kept in [
        "# codex settings — keep this comment",
        "model = \"o3\"  # the model, inline comment",
        "# after the servers",
        "[profiles.fast]",
    ] {
        assert!(edited.contains(kept), "{kept:?} is gone:\n{edited}");
    }
    assert!(!edited.contains("old-server"), "{edited}");
    let parsed = toml_as_python_reads_it(&config);
    assert_eq!(parsed["model"], "o3");
    assert_eq!(parsed["history"]["persistence"], "none");
    assert_eq!(parsed["mcp_servers"]["echo"]["command"], echo);
    assert_eq!(parsed["mcp_servers"]["echo"]["env"]["SECRET_TOKEN"], "hunter2");
    assert_eq!(parsed["mcp_servers"]["remote"]["url"], "https://example.com/mcp");
    assert!(parsed["mcp_servers"].get("old").is_none());

    // The added server runs from the edited file (the other one is unreachable, not required).
    let checked = bridge(&["check", "--json"], &config);
    let lines: Vec<Value> =
        String::from_utf8_lossy(&checked.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let echo_status = lines.iter().find(|l| l["server"] == "echo").expect("echo is checked");
    assert_eq!(echo_status["state"], "ready", "{echo_status}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_edit_is_refused_naming_the_file_and_line() {
    let dir = scratch("bad");
    let config = dir.join("config.toml");
    std::fs::write(&config, CODEX_CONFIG).unwrap();
    let twice = bridge(&["add", "old", "--", "another"], &config);
    assert_eq!(twice.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&twice.stderr);
    assert!(stderr.contains(&format!("{}: line 8: mcp_servers.old already exists", config.display())), "{stderr}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), CODEX_CONFIG, "the file is untouched");

    let broken = dir.join("broken.toml");
    std::fs::write(&broken, "model = \"o3\"\n[mcp_servers.a]\ncommand = \n").unwrap();
    let refused = bridge(&["add", "b", "--", "b"], &broken);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains(&format!("{}: line 3:", broken.display())), "{stderr}");

    let missing = bridge(&["remove", "nobody"], &config);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no server named nobody"));
}
