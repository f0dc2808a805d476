//! The built `mcp-bridge` binary against server-everything and against commands that are not
//! MCP servers: output, exit codes, and what reaches stderr.

use crate::examples;
use crate::serving::{everything_stdio as everything, run as bridge, stderr_text as stderr, stdout_text as stdout};
use crate::support;

use std::process::Command;

use serde_json::Value;

#[test]
fn tools_prints_one_line_per_tool() {
    let output = bridge(&["tools"], &everything());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.contains(&"echo — Echoes back the input string"), "{out}");
    assert!(lines.contains(&"get-sum — Returns the sum of two numbers"), "{out}");
    // The server's stderr ("Starting default (STDIO) server...") is dropped without --verbose.
    assert_eq!(stderr(&output), "");
}

#[test]
fn verbose_passes_the_server_stderr_through() {
    let output = bridge(&["tools", "--verbose"], &everything());
    assert_eq!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("Starting default (STDIO) server"), "{}", stderr(&output));
}

#[test]
fn tools_json_prints_the_tools_array() {
    let output = bridge(&["tools", "--json"], &everything());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let echo = tools.as_array().unwrap().iter().find(|t| t["name"] == "echo").expect("echo");
    assert_eq!(echo["inputSchema"]["properties"]["message"]["type"], "string");
}

#[test]
fn call_prints_the_text_content() {
    let output = bridge(&["call", "echo", "--args", r#"{"message":"hi"}"#], &everything());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Echo: hi\n");
    let output = bridge(&["call", "get-tiny-image"], &everything());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).lines().any(|l| l.starts_with("[image: image/png, ")), "{}", stdout(&output));
}

#[test]
fn call_json_prints_the_result() {
    let output = bridge(&["call", "get-sum", "--json", "--args", r#"{"a":2,"b":40}"#], &everything());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["content"][0]["text"], "The sum of 2 and 40 is 42.");
}

#[test]
fn a_tool_error_exits_3() {
    let output = bridge(&["call", "no-such-tool"], &everything());
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(stdout(&output), "MCP error -32602: Tool no-such-tool not found\n");
}

#[test]
fn usage_errors_exit_2_with_usage() {
    for args in
        [&["tools"][..], &["frobnicate", "--", "x"], &["call", "--", "x"], &["call", "echo", "--args", "{", "--", "x"]]
    {
        let output = bridge(args, &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let err = stderr(&output);
        assert!(err.starts_with("error: ") && err.lines().count() <= 6, "{err}");
        assert_eq!(stdout(&output), "");
    }
}

#[test]
fn a_command_that_is_not_a_server_exits_1_with_one_line() {
    let output = bridge(&["tools"], &["false".to_owned()]);
    assert_eq!(output.status.code(), Some(1));
    // The first request is the `auto` era's server/discover probe.
    assert_eq!(stderr(&output), "mcp-bridge: server exited during server/discover (exit status: 1)\n");
    let output = bridge(&["tools"], &["/nonexistent/server".to_owned()]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.starts_with("mcp-bridge: cannot start /nonexistent/server: ") && err.lines().count() == 1, "{err}");
}

#[test]
fn a_silent_server_times_out_with_exit_1() {
    let output = bridge(&["tools", "--timeout", "0.3"], &["sleep".to_owned(), "30".to_owned()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "mcp-bridge: initialize timed out after 300 ms\n");
}

#[test]
fn ctrl_c_exits_130_and_takes_the_server_down() {
    let dir = std::env::temp_dir().join(format!("mcp-bridge-sigint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("server.pid");
    let script = format!("echo $$ > {}; exec sleep 30", pid_file.display());
    let bridge = Command::new(examples::bin_path("mcp-bridge"))
        .args(["tools", "--", "sh", "-c", &script])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let server_pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|s| s.trim().parse::<u32>().ok()) {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "the server never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // The server runs in its own process group: the signal reaches the bridge only.
    assert!(Command::new("kill").args(["-INT", &bridge.id().to_string()]).status().unwrap().success());
    let output = bridge.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    assert_eq!(stderr(&output), "mcp-bridge: interrupted\n");
    let running = || {
        std::fs::read_to_string(format!("/proc/{server_pid}/stat"))
            .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
    };
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!running(), "the server (pid {server_pid}) outlived the bridge");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn url_lists_and_calls_over_streamable_http() {
    let server = support::everything_http("streamableHttp");
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let output = bridge(&["tools", "--url", &url], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).lines().any(|l| l == "echo — Echoes back the input string"), "{}", stdout(&output));
    let output = bridge(&["call", "echo", "--url", &url, "--args", r#"{"message":"over http"}"#], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Echo: over http\n");
}

/// Writes `text` to a fresh file named `name` and returns its path.
fn config_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("mcp-bridge-config-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn everything_toml(extra: &str) -> String {
    format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n\n\
         [mcp_servers.memory]\ncommand = {:?}\nargs = [{:?}]\n\n\
         [mcp_servers.off]\ncommand = \"false\"\nenabled = false\n{extra}",
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS"),
        support::peer("MCP_NODE"),
        support::peer("MCP_MEMORY_JS"),
    )
}

#[test]
fn config_tools_lists_qualified_names_of_every_server() {
    let file = config_file("tools.toml", &everything_toml(""));
    let output = bridge(&["tools", "--config", &file], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(out.lines().any(|l| l == "mcp__everything__echo — Echoes back the input string"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("mcp__memory__create_entities")), "{out}");
    let output = bridge(&["tools", "--config", &file, "--server", "memory", "--json"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let tools = tools.as_array().unwrap();
    assert!(!tools.is_empty() && tools.iter().all(|t| t["server"] == "memory"), "{tools:?}");
    let first = &tools[0];
    assert_eq!(first["name"], format!("mcp__memory__{}", first["tool"]["name"].as_str().unwrap()));
}

#[test]
fn config_call_routes_to_one_server() {
    let json = format!(
        r#"{{"mcpServers": {{"everything": {{"command": "${{MCP_TEST_NODE:-{}}}", "args": ["{}", "stdio"]}}}}}}"#,
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS")
    );
    let file = config_file("claude.json", &json);
    let output =
        bridge(&["call", "get-sum", "--config", &file, "--server", "everything", "--args", r#"{"a":1,"b":2}"#], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "The sum of 1 and 2 is 3.\n");
    let output = bridge(&["call", "echo", "--config", &file, "--server", "nope"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), format!("mcp-bridge: {file}: no server named nope\n"));
}

#[test]
fn check_prints_one_line_per_server() {
    let file = config_file("check.toml", &everything_toml(""));
    let output = bridge(&["check", "--config", &file], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("everything: ready, protocol 2025-"), "{out}");
    assert!(lines[0].contains(" tools, ") && lines[0].ends_with(" ms"), "{out}");
    assert!(lines[1].starts_with("memory: ready, protocol "), "{out}");
    assert_eq!(lines[2], "off: disabled");
}

#[test]
fn check_exits_1_when_a_required_server_fails() {
    let extra = "\n[mcp_servers.github]\ncommand = \"/nonexistent/github\"\nrequired = true\n\n\
                 [mcp_servers.optional]\ncommand = \"/nonexistent/optional\"\n";
    let file = config_file("required.toml", &everything_toml(extra));
    let output = bridge(&["check", "--config", &file, "--json"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "mcp-bridge: required servers failed: github\n");
    let statuses: Vec<Value> = stdout(&output).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let github = statuses.iter().find(|s| s["server"] == "github").unwrap();
    assert_eq!((github["state"].as_str(), github["required"].as_bool()), (Some("failed"), Some(true)));
    assert!(github["error"].as_str().unwrap().starts_with("cannot start /nonexistent/github: "));
    let everything = statuses.iter().find(|s| s["server"] == "everything").unwrap();
    assert_eq!(everything["state"], "ready");
    assert!(everything["tools"].as_u64().unwrap() > 0);
    // Without the required one, only the optional fails: exit 0.
    let file =
        config_file("optional.toml", &everything_toml("\n[mcp_servers.optional]\ncommand = \"/nonexistent/x\"\n"));
    let output = bridge(&["check", "--config", &file], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).lines().any(|l| l.starts_with("optional: failed after ")), "{}", stdout(&output));
}

#[test]
fn a_bad_config_names_the_file_server_and_field() {
    let file = config_file("bad.toml", "[mcp_servers.github]\ncommand = \"x\"\nstartup_timeout_sec = \"ten\"\n");
    let output = bridge(&["check", "--config", &file], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!("mcp-bridge: {file}: mcp_servers.github.startup_timeout_sec: expected a number\n")
    );
}

#[test]
fn check_json_shows_each_servers_era_and_version() {
    let time = support::peer("MCP_SERVER_TIME");
    let toml = format!(
        "[mcp_servers.time]\ncommand = {time:?}\n\n[mcp_servers.time-legacy]\ncommand = {time:?}\nera = \"legacy\"\n\n\
         [mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n",
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS"),
    );
    let file = config_file("eras.toml", &toml);
    let output = bridge(&["check", "--config", &file, "--json"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let statuses: Vec<Value> = stdout(&output).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let era = |name: &str| {
        let s = statuses.iter().find(|s| s["server"] == name).unwrap();
        (
            s["eraPolicy"].as_str().unwrap().to_owned(),
            s["era"].as_str().unwrap().to_owned(),
            s["protocolVersion"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(era("time"), ("auto".into(), "2026-07-28".into(), "2026-07-28".into()));
    assert_eq!(era("time-legacy"), ("legacy".into(), "legacy".into(), "2025-11-25".into()));
    assert_eq!(era("everything"), ("auto".into(), "legacy".into(), "2025-11-25".into()));
}
