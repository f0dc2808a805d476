//! `mcp-conformance replay --server-url`: the HTTP recordings of server-everything replayed as
//! raw HTTP exchanges against the real server (one process per mode, shared by the recordings
//! of that mode), altered copies of them caught with the right field named, and the recordings
//! of the unpublished py-fixture-server against `serve --listen` of themselves.

use crate::examples;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use support::{everything_http, repo_path};

fn bin() -> &'static str {
    examples::bin_path("mcp-conformance")
}

fn recording(name: &str) -> PathBuf {
    repo_path(&format!("conformance/recordings/{name}.jsonl"))
}

fn replay(files: &[PathBuf], url: &str) -> (bool, String) {
    let out = Command::new(bin()).arg("replay").args(files).args(["--server-url", url]).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn replay_with(files: &[PathBuf], url: &str, extra: &[&str]) -> (bool, String) {
    let out = Command::new(bin()).arg("replay").args(files).args(["--server-url", url]).args(extra).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("mcpwire-conformance-http-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A copy of recording `from` named `name` in `dir`, changed by `edit` (which gets the lines
/// after the header, by index = seq - 1); `seq` is renumbered afterwards. Each `msg` is kept as
/// the text it was (under `msg_raw` while editing): its key order is what the peers sent.
fn altered(dir: &Path, from: &str, name: &str, edit: impl FnOnce(&mut Vec<Value>)) -> PathBuf {
    #[derive(serde::Deserialize)]
    struct RawMsg {
        msg: Option<Box<serde_json::value::RawValue>>,
    }
    let text = std::fs::read_to_string(recording(from)).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if let Some(raw) = serde_json::from_str::<RawMsg>(l).unwrap().msg {
                v.as_object_mut().unwrap().remove("msg");
                v["msg_raw"] = raw.get().into();
            }
            v
        })
        .collect();
    lines[0]["name"] = Value::from(name);
    let mut entries = lines.split_off(1);
    edit(&mut entries);
    for (i, entry) in entries.iter_mut().enumerate() {
        entry["seq"] = Value::from(i + 1);
    }
    lines.extend(entries);
    let mut out = String::new();
    for mut line in lines {
        let raw = line.as_object_mut().unwrap().remove("msg_raw");
        let text = line.to_string();
        match raw {
            Some(Value::String(raw)) => out.push_str(&format!("{},\"msg\":{raw}}}\n", &text[..text.len() - 1])),
            _ => out.push_str(&format!("{text}\n")),
        }
    }
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn streamable_http_recordings_replay_against_server_everything() {
    let server = everything_http("streamableHttp");
    let url = format!("http://127.0.0.1:{}", server.port);
    // The TypeScript client's session, and the two made of hand-made requests: HTTP errors, a
    // batch, a request after DELETE; a stream abandoned and resumed with Last-Event-ID.
    let names = ["everything-http-core-2025-11-25", "everything-http-errors", "everything-http-resume"];
    let (ok, stdout) = replay(&names.map(recording), &url);
    assert!(ok, "{stdout}");
    assert_eq!(
        stdout,
        "ok everything-http-core-2025-11-25\nok everything-http-errors\nok everything-http-resume\n3 passed, 0 failed\n"
    );
}

#[test]
fn altered_http_recordings_are_caught_with_the_field_named() {
    let server = everything_http("streamableHttp");
    let url = format!("http://127.0.0.1:{}", server.port);
    let dir = Scratch::new("altered");
    let core = "everything-http-core-2025-11-25";
    let files = [
        // seq 4: the 202 to notifications/initialized recorded as 200.
        altered(&dir.0, core, "status", |e| e[3]["http"]["status"] = 200.into()),
        // seq 11: the ping's SSE event recorded as if it were in a JSON response.
        altered(&dir.0, core, "content-type", |e| e[10]["http"]["headers"]["content-type"] = "application/json".into()),
        // seq 2 of the errors: a session id recorded on the 400 that has none.
        altered(&dir.0, "everything-http-errors", "session-id", |e| {
            e[1]["http"]["headers"]["mcp-session-id"] = "4f1d0f0e-0000-4000-8000-000000000000".into()
        }),
        // A priming event recorded on the standalone GET stream, which has none (new seq 6).
        altered(&dir.0, core, "priming-missing", |e| {
            let mut priming = e[1].clone();
            priming["http"]["method"] = "GET".into();
            e.insert(5, priming);
        }),
        // The priming event of the ping's stream (seq 10) not recorded.
        altered(&dir.0, core, "priming-unexpected", |e| {
            e.remove(9);
        }),
        // seq 11: the ping's event recorded without an id.
        altered(&dir.0, core, "event-id", |e| e[10]["http"]["sse_event_id"] = Value::Null),
        // seq 12 of the errors: a 202 recorded with a body.
        altered(&dir.0, "everything-http-errors", "response-body", |e| {
            e[11]["http"]["response_body"] = "Accepted".into()
        }),
        // The resumption from the priming event instead of progress 1: progress 1 comes twice.
        altered(&dir.0, "everything-http-resume", "resume-duplicate", |e| {
            let priming_id = e[5]["http"]["sse_event_id"].clone();
            e[7]["http"]["headers"]["last-event-id"] = priming_id;
        }),
        // One more progress notification recorded after the resumption than the server sends.
        altered(&dir.0, "everything-http-resume", "resume-lost", |e| {
            let extra = e[10].clone();
            e.insert(11, extra);
        }),
    ];
    let (ok, stdout) = replay_with(&files, &url, &["--timeout-ms", "2000"]);
    assert!(!ok);
    assert!(stdout.ends_with("0 passed, 9 failed\n"), "{stdout}");
    let expected = [
        "seq 4 c2s notifications/initialized notification: http.status: expected 200, got 202",
        r#"seq 11 s2c ping response: http.headers.content-type: expected "application/json", got "text/event-stream""#,
        r#"seq 2 s2c tools/list response: http.headers.mcp-session-id: expected a session id ("4f1d0f0e-0000-4000-8000-000000000000"), got (missing)"#,
        "seq 6 s2c priming event: raw: expected this on the response to GET seq 5, got nothing (timed out)",
        "seq 0 s2c priming event: $: expected nothing, got a priming event (empty data) as SSE event id",
        "seq 11 s2c ping response: http.sse_event_id: expected none, got \"",
        r#"seq 12 c2s notifications/initialized notification: http.response_body: expected "Accepted", got """#,
        r#"seq 0 s2c notifications/progress notification: $: expected nothing, got {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"#,
        "seq 12 s2c notifications/progress notification: $: expected this on the response to GET seq 8, got nothing (timed out)",
    ];
    for line in expected {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    // The unaltered parts still match: each altered copy fails for its alteration only (the
    // priming-missing one stops at the timeout, and what came afterwards is unexpected).
    for (section, count) in
        [("status", 1), ("content-type", 1), ("session-id", 1), ("event-id", 1), ("response-body", 1)]
    {
        let body: Vec<&str> = stdout
            .split(&format!("FAIL {section}\n"))
            .nth(1)
            .unwrap_or_default()
            .lines()
            .take_while(|l| l.starts_with("    "))
            .collect();
        assert_eq!(body.len(), count, "{section}: {body:#?}");
    }
}

#[test]
fn legacy_sse_recording_replays_against_server_everything() {
    let server = everything_http("sse");
    let url = format!("http://127.0.0.1:{}", server.port);
    let (ok, stdout) = replay(&[recording("everything-sse-2025-11-25")], &url);
    assert!(ok, "{stdout}");
    assert_eq!(stdout, "ok everything-sse-2025-11-25\n1 passed, 0 failed\n");
    // The endpoint event is checked: a recording whose endpoint had another path fails there.
    let dir = Scratch::new("sse");
    let file = altered(&dir.0, "everything-sse-2025-11-25", "endpoint", |e| {
        let raw = e[1]["raw"].as_str().unwrap().replace("/message?", "/messages?");
        e[1]["raw"] = raw.into();
    });
    let (ok, stdout) = replay_with(&[file], &url, &["--timeout-ms", "2000"]);
    assert!(!ok);
    assert!(
        stdout.contains(r#"seq 2 s2c endpoint event: raw: endpoint path: expected "/messages", got "/message""#),
        "{stdout}"
    );
}

#[test]
fn the_multi_round_http_recording_replays_against_its_python_server() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let script = repo_path("conformance/recordings/sources/py_mrtr_server.py");
    let mut server = Command::new(support::peer("MCP_PYTHON"))
        .arg(script)
        .args(["--http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "py_mrtr_server.py never listened on {port}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (ok, stdout) = replay(&[recording("pyfixture-mrtr-http-2026-07-28")], &format!("http://127.0.0.1:{port}"));
    let _ = server.kill();
    let _ = server.wait();
    assert!(ok, "{stdout}");
    assert_eq!(stdout.lines().last(), Some("1 passed, 0 failed"), "{stdout}");
}

#[test]
fn a_stdio_recording_is_refused_over_http() {
    let (ok, stdout) = replay(&[recording("everything-tools")], "http://127.0.0.1:9");
    assert!(!ok);
    assert!(stdout.contains("transport stdio: --server-url replays HTTP sessions only"), "{stdout}");
}

/// `serve --listen` of `name`, stopped on drop; its URL.
fn serve_listen(name: &str) -> (Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(bin())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .arg(recording(name))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (child, line.trim().to_owned())
}

#[test]
fn http_recordings_replay_against_serve_listen_of_themselves() {
    // py-fixture-server is not published: its HTTP recording's halves are checked against each
    // other over real HTTP; and the legacy transport of serve --listen. Every message must
    // match; the HTTP framing differences of serve --listen above are the only ones allowed.
    for name in ["pyfixture-http-python", "everything-sse-2025-11-25"] {
        let (mut child, url) = serve_listen(name);
        let (_, stdout) = replay(&[recording(name)], &url);
        let _ = child.kill();
        let _ = child.wait();
        let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("    ")).collect();
        for failure in &failures {
            assert!(
                support::SERVE_LISTEN_FRAMING.iter().any(|known| failure.contains(known)),
                "{name} against {url}: {failure}\n{stdout}"
            );
        }
    }
}
