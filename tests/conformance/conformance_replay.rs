//! The conformance runner against real peers over real pipes: every stdio recording replays
//! against the real server it was recorded with (or, for the unpublished py-fixture-server,
//! against `serve` of itself); `record` then `replay` round-trips; an altered server is caught;
//! `serve` drives the TypeScript SDK client; the expected-failures baseline and JUnit output.
//!
//! Every test drives the `mcp-conformance` binary, so the CLI is what is tested.

use crate::examples;
use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mcp_conformance::clock::{fake_clock_env, find_libfaketime, parse_utc};
use serde_json::Value;
use support::{peer, repo_path};

fn bin() -> &'static str {
    examples::bin_path("mcp-conformance")
}

/// The environment server-everything and the filesystem server were recorded with (`get-env`
/// shows it): a clean one whose HOME is the fixtures' `home`.
const RECORDED_ENV: &str =
    "env -i HOME={fixtures}/home PATH=/usr/bin:/bin SHELL=/bin/bash TERM=xterm LANG=C.UTF-8 TZ=UTC";

/// The stdio recordings, grouped by the server name in their header.
fn stdio_recordings() -> BTreeMap<String, Vec<PathBuf>> {
    let dir = repo_path("conformance/recordings");
    let mut groups: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        if header["transport"] == "stdio" {
            groups.entry(header["server"]["name"].as_str().unwrap().to_owned()).or_default().push(file);
        }
    }
    groups
}

fn replay(files: &[PathBuf], server: &str, extra: &[&str]) -> (Output, String) {
    replay_with_env(files, server, extra, &[])
}

/// [`replay`] with the runner's own environment extended by `env`.
fn replay_with_env(files: &[PathBuf], server: &str, extra: &[&str], env: &[(String, String)]) -> (Output, String) {
    let out = Command::new(bin())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .arg("replay")
        .args(files)
        // Generous: a Python server's first start (imports, bytecode) took over 5 s on a loaded
        // CI machine. Only a failing session ever waits this long.
        .args(["--server", server, "--timeout-ms", "30000"])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, stdout)
}

fn assert_all_pass(files: &[PathBuf], server: &str) {
    assert!(!files.is_empty());
    let (out, stdout) = replay(files, server, &[]);
    let last = stdout.lines().last().unwrap_or_default().to_owned();
    assert_eq!(last, format!("{} passed, 0 failed", files.len()), "{stdout}");
    assert!(out.status.success(), "{stdout}");
}

#[test]
fn every_stdio_recording_has_a_server_to_replay_against() {
    let groups = stdio_recordings();
    let servers: Vec<&str> = groups.keys().map(String::as_str).collect();
    assert_eq!(
        servers,
        [
            "mcp-git",
            "mcp-servers/everything",
            "mcp-time",
            "memory-server",
            "py-fixture-server",
            "py-mrtr-fixture",
            "secure-filesystem-server"
        ],
        "a new server needs its replay test below"
    );
    assert_eq!(groups.values().map(Vec::len).sum::<usize>(), 18, "the 18 stdio recordings");
}

#[test]
fn server_everything_recordings_replay_against_the_real_server() {
    let files = &stdio_recordings()["mcp-servers/everything"];
    let server = format!("{RECORDED_ENV} {} {} stdio", peer("MCP_NODE"), peer("MCP_EVERYTHING_JS"));
    assert_all_pass(files, &server);
}

#[test]
fn filesystem_and_memory_recordings_replay_against_the_real_servers() {
    let groups = stdio_recordings();
    let node = peer("MCP_NODE");
    let fs = format!("{RECORDED_ENV} {node} {} {{fixtures}}/fs", peer("MCP_FILESYSTEM_JS"));
    assert_all_pass(&groups["secure-filesystem-server"], &fs);
    let memory = format!("{RECORDED_ENV} {node} {}", peer("MCP_MEMORY_JS"));
    assert_all_pass(&groups["memory-server"], &memory);
}

#[test]
fn python_server_recordings_replay_against_the_real_servers() {
    let groups = stdio_recordings();
    // time-python-2026-07-28's sidecar has its server run on the recording's clock.
    assert_all_pass(&groups["mcp-time"], &time_server());
    // The recorded commit was made on 2026-01-02; the fixture repo has the recorded history.
    let git = format!(
        "env 'GIT_AUTHOR_DATE=1767312000 +0000' 'GIT_COMMITTER_DATE=1767312000 +0000' {} --repository {{fixtures}}/repo",
        peer("MCP_SERVER_GIT")
    );
    assert_all_pass(&groups["mcp-git"], &git);
}

/// The time server as the Python recordings were made with it.
fn time_server() -> String {
    format!("env TZ=UTC {}", peer("MCP_SERVER_TIME"))
}

/// The environment that makes the runner itself (and so anything it starts without a clock of
/// its own) believe it is `moment` (RFC 3339, UTC).
fn machine_clock_at(moment: &str) -> Vec<(String, String)> {
    let lib = find_libfaketime().expect("scripts/install-peers installs libfaketime");
    let start = parse_utc(moment).expect("an RFC 3339 UTC moment");
    fake_clock_env(&lib, start, None)
}

#[test]
fn the_time_server_replays_whatever_date_the_machine_clock_reads() {
    // A leap day; the hour Europe/Paris moves to summer time (01:00 UTC on the last Sunday of
    // March); an evening in summer, when the day in Los Angeles is still the day before. The
    // recordings were made on a Monday in November.
    let files = &stdio_recordings()["mcp-time"];
    // The moments are independent (each replay starts its own servers): run side by side.
    std::thread::scope(|scope| {
        for moment in ["2028-02-29T12:00:00Z", "2027-03-28T01:00:30Z", "2027-07-15T23:30:00Z"] {
            scope.spawn(move || {
                let machine = machine_clock_at(moment);
                let (out, stdout) = replay_with_env(files, &time_server(), &[], &machine);
                assert_eq!(stdout.lines().last(), Some("3 passed, 0 failed"), "machine clock at {moment}:\n{stdout}");
                assert!(out.status.success());

                // The same replay on the machine's (faked) clock must fail, or the check above
                // proves nothing: the weekday differs on each of these dates.
                let (out, stdout) = replay_with_env(files, &time_server(), &["--clock", "system"], &machine);
                assert!(!out.status.success(), "machine clock at {moment}, --clock system:\n{stdout}");
                assert!(stdout.contains("FAIL time-python-2026-07-28"), "{stdout}");
                assert!(stdout.contains(r#"\"day_of_week\": \"Monday\""#), "the weekday is shown: {stdout}");
            });
        }
    });
}

#[test]
fn an_altered_time_server_recording_fails_with_the_field_named() {
    let dir = scratch("altered-time");
    let convert = |entries: &mut Vec<Value>| -> usize {
        entries.iter().position(|e| e["msg"]["result"]["structuredContent"]["source"].is_object()).unwrap()
    };
    let zone = edited(&dir, "time-python-2026-07-28", |entries| {
        let at = convert(entries);
        entries[at]["msg"]["result"]["structuredContent"]["source"]["timezone"] = "Europe/Berlin".into();
    });
    let (out, stdout) = replay(&[zone], &time_server(), &[]);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains(
            r#"s2c tools/call response: $.result.structuredContent.source.timezone: expected "Europe/Berlin", got "Europe/Paris""#
        ),
        "{stdout}"
    );

    // An offset is part of a date-time the clock rule masks; the mask must not hide it.
    std::fs::remove_dir_all(&dir).unwrap();
    let dir = scratch("altered-time");
    let offset = edited(&dir, "time-python-2026-07-28", |entries| {
        let at = convert(entries);
        let source = &mut entries[at]["msg"]["result"]["structuredContent"]["source"];
        let datetime = source["datetime"].as_str().unwrap().to_owned();
        assert!(datetime.ends_with("+01:00"), "{datetime}");
        source["datetime"] = datetime.replace("+01:00", "+02:00").into();
    });
    let (out, stdout) = replay(&[offset], &time_server(), &[]);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains(
            r#"$.result.structuredContent.source.datetime: expected "2026-11-30T09:15:00+02:00", got "2026-11-30T09:15:00+01:00""#
        ),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wait_lasts_as_long_as_the_recorded_gap_allows() {
    // On record the answer came 2 s after the request; the live server takes 1.5 s, longer
    // than the 1 s timeout but within timeout + twice the gap.
    let dir = scratch("gap");
    let recording = dir.join("slow-answer.jsonl");
    std::fs::write(
        &recording,
        concat!(
            r#"{"mcp_recording":1,"name":"slow-answer","transport":"stdio","protocol_version":"2025-11-25","recorded_at":"2026-12-01","description":"a late answer"}"#,
            "\n",
            r#"{"seq":1,"t_ms":10,"dir":"c2s","msg":{"jsonrpc":"2.0","id":1,"method":"ping"}}"#,
            "\n",
            r#"{"seq":2,"t_ms":2010,"dir":"s2c","msg":{"jsonrpc":"2.0","id":1,"result":{}}}"#,
            "\n"
        ),
    )
    .unwrap();
    let server = r#"sh -c 'read request; sleep 1.5; echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"; sleep 1'"#;
    let run = |timeout: &str, recorded: &Path| {
        Command::new(bin())
            .arg("replay")
            .arg(recorded)
            .args(["--server", server, "--timeout-ms", timeout])
            .output()
            .unwrap()
    };
    let out = run("1000", &recording);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));

    // The same session recorded with no gap: 1 s is all the patience it gets.
    let hasty = dir.join("hasty-answer.jsonl");
    std::fs::write(&hasty, std::fs::read_to_string(&recording).unwrap().replace("2010", "10")).unwrap();
    let out = run("1000", &hasty);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("seq 2 s2c ping response: $: expected this message, got nothing (timed out)"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Python fixture scripts the `pyfixture-mrtr-*` recordings were made with.
fn mrtr_source(script: &str) -> String {
    format!("{} {}", peer("MCP_PYTHON"), repo_path(&format!("conformance/recordings/sources/{script}")).display())
}

#[test]
fn the_multi_round_recording_replays_against_its_python_server_and_drives_its_python_client() {
    // The server seals a new requestState each run: the replay binds it and sends the live one.
    assert_all_pass(&stdio_recordings()["py-mrtr-fixture"], &mrtr_source("py_mrtr_server.py"));

    // serve of the recording, with the Python client (mode='auto') as the client under test.
    let client = format!("{} --root file://{{fixtures}}/project --", mrtr_source("py_mrtr_client.py"));
    let out = Command::new(bin())
        .arg("replay")
        .arg(original("pyfixture-mrtr-stdio-2026-07-28"))
        .args(["--client", &client, "--timeout-ms", "30000"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().last(), Some("1 passed, 0 failed"), "{stdout}");
}

#[test]
fn py_fixture_recording_replays_against_serve_of_itself() {
    // py-fixture-server is not a published package: the recording's two halves are checked
    // against each other (and serve/replay against each other).
    let files = &stdio_recordings()["py-fixture-server"];
    assert_all_pass(files, &format!("{} serve --fixtures {{fixtures}} {{recording}}", bin()));
}

fn scratch(name: &str) -> PathBuf {
    crate::support::scratch_dir("conformance", name)
}

#[test]
fn a_recorded_session_replays_against_the_same_server() {
    let dir = scratch("record");
    let out_file = dir.join("fresh-everything.jsonl");
    let script = r#"[{"call":"echo","args":{"message":"recorded"}},{"call":"get-sum","args":{"a":1,"b":2}},
        {"list":"prompts"},{"read":"demo://resource/static/document/architecture.md"},{"ping":true},
        {"call":"no-such-tool","args":{}}]"#;
    let out = Command::new(peer("MCP_NODE"))
        .arg(repo_path("tests/peers/ts_client.mjs"))
        .arg("--")
        .args([bin(), "record", "--description", "a fresh session"])
        .arg(&out_file)
        .args(["--", &peer("MCP_NODE"), &peer("MCP_EVERYTHING_JS"), "stdio"])
        .env("MCP_SCRIPT", script)
        .env("MCP_TS_SDK_DIR", peer("MCP_TS_SDK_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.lines().count(), 8, "initialize, tools/list and 6 steps: {stdout}");
    assert!(stdout.contains(r#""text":"Echo: recorded""#), "{stdout}");

    let text = std::fs::read_to_string(&out_file).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["name"], "fresh-everything");
    assert_eq!(header["transport"], "stdio");
    assert_eq!(header["client"]["name"], "mcpwire-ts-driver", "as the driver names itself");
    assert_eq!(header["server"], serde_json::json!({"name": "mcp-servers/everything", "version": "2.0.0"}));
    assert_eq!(header["protocol_version"], "2025-11-25");
    assert_eq!(header["description"], "a fresh session");
    for (i, line) in text.lines().skip(1).enumerate() {
        let entry: Value = serde_json::from_str(line).unwrap();
        assert_eq!(entry["seq"], i + 1, "{line}");
    }
    assert!(text.contains(r#""method":"ping""#));

    let server = format!("{} {} stdio", peer("MCP_NODE"), peer("MCP_EVERYTHING_JS"));
    assert_all_pass(&[out_file], &server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes a copy of recording `name` with `edit` applied to its entries (as JSON values), with
/// its sidecar beside it when it has one.
fn edited(dir: &Path, name: &str, edit: impl Fn(&mut Vec<Value>)) -> PathBuf {
    let text = std::fs::read_to_string(repo_path(&format!("conformance/recordings/{name}.jsonl"))).unwrap();
    let mut lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut entries = lines.split_off(1);
    edit(&mut entries);
    lines.extend(entries);
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.iter().map(|v| format!("{v}\n")).collect::<String>()).unwrap();
    let sidecar = repo_path(&format!("conformance/recordings/{name}.rules.json"));
    if sidecar.exists() {
        std::fs::copy(sidecar, dir.join(format!("{name}.rules.json"))).unwrap();
    }
    path
}

fn original(name: &str) -> PathBuf {
    repo_path(&format!("conformance/recordings/{name}.jsonl"))
}

#[test]
fn an_altered_server_is_caught_with_the_json_path() {
    let dir = scratch("altered");
    let serve = |file: &Path| format!("{} serve {}", bin(), file.display());

    // A changed result value.
    let changed = edited(&dir, "everything-tools", |entries| {
        let e = entries.iter_mut().find(|e| e["msg"]["result"]["content"][0]["text"] == "The sum of 2 and 40 is 42.");
        e.unwrap()["msg"]["result"]["content"][0]["text"] = "The sum of 2 and 40 is 43.".into();
    });
    let (out, stdout) = replay(&[original("everything-tools")], &serve(&changed), &[]);
    assert!(!out.status.success());
    assert!(
        stdout.contains(
            r#"seq 17 s2c tools/call response: $.result.content[0].text: expected "The sum of 2 and 40 is 42.", got "The sum of 2 and 40 is 43.""#
        ),
        "{stdout}"
    );
    assert!(stdout.ends_with("0 passed, 1 failed\n"), "{stdout}");

    // A dropped notification.
    let dropped = edited(&dir, "everything-resources", |entries| {
        let i = entries.iter().position(|e| e["msg"]["method"] == "notifications/resources/updated").unwrap();
        entries.remove(i);
    });
    let (out, stdout) = replay(&[original("everything-resources")], &serve(&dropped), &["--timeout-ms", "300"]);
    assert!(!out.status.success());
    assert!(
        stdout.contains(
            "s2c notifications/resources/updated notification: $: expected this message, got nothing (timed out)"
        ),
        "{stdout}"
    );

    // A changed error code.
    let code = edited(&dir, "everything-errors", |entries| {
        let e = entries.iter_mut().find(|e| e["msg"]["error"]["code"] == -32601).unwrap();
        e["msg"]["error"]["code"] = (-32600).into();
    });
    let (out, stdout) = replay(&[original("everything-errors")], &serve(&code), &[]);
    assert!(!out.status.success());
    assert!(stdout.contains("unknown/method response: $.error.code: expected -32601, got -32600"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_drives_the_typescript_client_through_its_steps() {
    let recording = original("everything-tools");
    let text = std::fs::read_to_string(&recording).unwrap();
    let mut steps = Vec::new();
    let mut results = Vec::new();
    let entries: Vec<Value> = text.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    for e in &entries {
        if e["msg"]["method"] == "tools/call" {
            steps
                .push(serde_json::json!({"call": e["msg"]["params"]["name"], "args": e["msg"]["params"]["arguments"]}));
            let id = &e["msg"]["id"];
            let answer =
                entries.iter().find(|r| r["dir"] == "s2c" && r["msg"]["id"] == *id && r["msg"]["result"].is_object());
            results.push(answer.unwrap()["msg"]["result"].clone());
        }
    }
    let out = Command::new(peer("MCP_NODE"))
        .arg(repo_path("tests/peers/ts_client.mjs"))
        .args(["--", bin(), "serve"])
        .arg(&recording)
        .env("MCP_SCRIPT", Value::Array(steps.clone()).to_string())
        .env("MCP_TS_SDK_DIR", peer("MCP_TS_SDK_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2 + steps.len(), "{stdout}");
    assert_eq!(lines[0]["serverInfo"]["name"], "mcp-servers/everything");
    assert_eq!(lines[1]["step"], "tools/list");
    for (line, expected) in lines[2..].iter().zip(&results) {
        assert_eq!(line["ok"], true, "{line}");
        // The client prints the result as its SDK parsed it; the recorded content comes back.
        assert_eq!(line["result"]["content"], expected["content"], "{line}");
    }
}

#[test]
fn expected_failures_baseline_and_junit() {
    let dir = scratch("baseline");
    // A "server" per recording: serve of the copy in `dir`, where everything-errors is altered.
    edited(&dir, "everything-errors", |entries| {
        let e = entries.iter_mut().find(|e| e["msg"]["error"]["code"] == -32601).unwrap();
        e["msg"]["error"]["code"] = (-32600).into();
    });
    std::fs::copy(original("memory-handshake-2025-11-25"), dir.join("memory-handshake-2025-11-25.jsonl")).unwrap();
    let server = format!("{} serve {}/{{name}}.jsonl", bin(), dir.display());
    let files = [original("everything-errors"), original("memory-handshake-2025-11-25")];
    let junit = dir.join("junit.xml");
    let baseline = dir.join("expected-failures.txt");

    let (out, stdout) = replay(&files, &server, &["--junit", junit.to_str().unwrap()]);
    assert!(!out.status.success(), "an unlisted failure fails the run: {stdout}");
    assert!(stdout.starts_with("FAIL everything-errors\n    seq "), "{stdout}");
    assert!(stdout.contains("\nok memory-handshake-2025-11-25\n"), "{stdout}");
    assert!(stdout.ends_with("\n1 passed, 1 failed\n"), "{stdout}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"<testsuite name="mcp-conformance" tests="2" failures="1" errors="0">"#), "{xml}");
    assert!(xml.contains(r#"<testcase classname="mcp-conformance" name="memory-handshake-2025-11-25"/>"#), "{xml}");
    assert!(xml.contains(r#"<testcase classname="mcp-conformance" name="everything-errors">"#), "{xml}");
    assert!(xml.contains("$.error.code: expected -32601, got -32600</failure>"), "{xml}");

    std::fs::write(&baseline, "# known differences\neverything-errors  # altered on purpose\n").unwrap();
    let (out, stdout) = replay(&files, &server, &["--expected-failures", baseline.to_str().unwrap()]);
    assert!(out.status.success(), "a listed failure passes the run: {stdout}");
    assert!(stdout.starts_with("FAIL everything-errors (expected)\n"), "{stdout}");
    assert!(stdout.ends_with("\n1 passed, 1 failed\n"), "{stdout}");

    std::fs::write(&baseline, "everything-errors\nmemory-handshake-2025-11-25\n").unwrap();
    let (out, stdout) = replay(&files, &server, &["--expected-failures", baseline.to_str().unwrap()]);
    assert!(!out.status.success(), "a stale entry fails the run: {stdout}");
    assert!(stdout.contains("ok memory-handshake-2025-11-25 (stale"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_silent_server_fails_the_session_instead_of_hanging() {
    let started = std::time::Instant::now();
    let (out, stdout) = replay(&[original("memory-handshake-2025-11-25")], "sleep 30", &["--timeout-ms", "300"]);
    assert!(!out.status.success());
    assert!(
        stdout.contains("seq 2 s2c initialize response: $: expected this message, got nothing (timed out)"),
        "{stdout}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "the child was stopped");
}
