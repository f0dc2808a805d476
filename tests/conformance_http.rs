//! `mcp-conformance replay --server-url`: the HTTP recordings of server-everything replayed
//! over HTTP against the real server (one process per mode, shared by the recordings of that
//! mode).

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{peer, repo_path};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-conformance");

/// server-everything in one mode, stopped on drop.
struct Everything {
    child: Child,
    port: u16,
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn everything(mode: &str) -> Everything {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(peer("MCP_NODE"))
        .arg(peer("MCP_EVERYTHING_JS"))
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server-everything");
    let server = Everything { child, port };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(10), "server-everything did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

fn recording(name: &str) -> PathBuf {
    repo_path(&format!("conformance/recordings/{name}.jsonl"))
}

fn replay(files: &[PathBuf], url: &str) -> (bool, String) {
    let out = Command::new(BIN).arg("replay").args(files).args(["--server-url", url]).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn streamable_http_recordings_replay_against_server_everything() {
    let server = everything("streamableHttp");
    let url = format!("http://127.0.0.1:{}", server.port);
    let (ok, stdout) = replay(&[recording("everything-http-core-2025-11-25")], &url);
    assert!(ok, "{stdout}");
    assert_eq!(stdout, "ok everything-http-core-2025-11-25\n1 passed, 0 failed\n");
    // The hand-made-request recordings are reported, not half replayed.
    let (ok, stdout) = replay(&[recording("everything-http-errors"), recording("everything-http-resume")], &url);
    assert!(!ok);
    assert!(stdout.contains("needs a raw-exchange mode"), "{stdout}");
    assert!(stdout.ends_with("0 passed, 2 failed\n"), "{stdout}");
}

#[test]
fn legacy_sse_recording_replays_against_server_everything() {
    let server = everything("sse");
    let (ok, stdout) = replay(&[recording("everything-sse-2025-11-25")], &format!("http://127.0.0.1:{}", server.port));
    assert!(ok, "{stdout}");
    assert_eq!(stdout, "ok everything-sse-2025-11-25\n1 passed, 0 failed\n");
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
    let mut child = Command::new(BIN)
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
    // other over real HTTP; and the legacy transport of serve --listen.
    for name in ["pyfixture-http-python", "everything-sse-2025-11-25"] {
        let (mut child, url) = serve_listen(name);
        let (ok, stdout) = replay(&[recording(name)], &url);
        let _ = child.kill();
        let _ = child.wait();
        assert!(ok, "{name} against {url}: {stdout}");
    }
}
