//! `mcp-conformance replay --client` over HTTP: the runner starts `serve --listen` of each HTTP
//! recording and hands its URL to the client under test — here mcpwire's own client over
//! `HttpClientTransport`, driven by `mcp-conformance-client-driver`. All seven pass (the
//! multi-round 2026-07-28 one with its `subscriptions/listen` stream, closed at the end as the
//! recorded client closed it): of the two
//! made of hand-made requests, everything-http-resume's messages are all a client sends through
//! its API (the resumption is not exercised), and everything-http-errors' requests that the
//! recorded server refused at the HTTP level are not expected of a client — its valid part is
//! still checked. A client that departs from the recording is caught over Streamable HTTP, over
//! the legacy transport, and in the valid part of everything-http-errors.

use crate::examples;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::repo_path;

fn bin() -> &'static str {
    examples::bin_path("mcp-conformance")
}
fn driver() -> &'static str {
    examples::bin_path("mcp-conformance-client-driver")
}

fn recording(name: &str) -> PathBuf {
    repo_path(&format!("conformance/recordings/{name}.jsonl"))
}

fn http_recordings() -> Vec<PathBuf> {
    support::recordings_with_transport(|t| t != "stdio")
}

/// `replay FILES --client CLIENT EXTRA`: whether the run passed, and its report.
fn replay_client(files: &[PathBuf], client: &str, extra: &[&str]) -> (bool, String) {
    let out = Command::new(bin()).arg("replay").args(files).args(["--client", client]).args(extra).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The failure lines reported under session `name`.
fn failures_of<'a>(stdout: &'a str, name: &str) -> Vec<&'a str> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(&format!("FAIL {name}")));
    lines.next();
    lines.take_while(|l| l.starts_with("    ")).map(str::trim).collect()
}

/// The HTTP recordings of conformance/recordings, by name: a recording added or renamed is
/// seen by both tests that replay them all.
pub const HTTP_RECORDINGS: [&str; 7] = [
    "everything-http-core-2025-11-25",
    "everything-http-errors",
    "everything-http-resume",
    "everything-sse-2025-11-25",
    "pyfixture-http-python-2026-07-28",
    "pyfixture-http-python",
    "pyfixture-mrtr-http-2026-07-28",
];

#[test]
fn every_http_recording_replays_against_our_http_client() {
    let files = http_recordings();
    let names: Vec<String> = files.iter().map(|f| f.file_stem().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, HTTP_RECORDINGS);
    let baseline = repo_path("conformance/client-expected-failures.txt");
    let driver = format!("{} --fixtures {{fixtures}} {{recording}}", driver());
    let (ok, stdout) = replay_client(&files, &driver, &["--expected-failures", baseline.to_str().unwrap()]);
    assert!(ok, "{stdout}");
    assert!(stdout.ends_with("7 passed, 0 failed\n"), "{stdout}");
    for name in names {
        assert!(stdout.contains(&format!("ok {name}\n")), "{name}: {stdout}");
    }
}

#[test]
fn serve_listen_of_a_stateless_recording_follows_one_script_across_posts() {
    // The Python client (mode='auto') against serve --listen of its own 2026-07-28 session: the
    // subscriptions/listen POST stays open while the next POST (touch) runs, and the
    // resources/updated that touch causes must reach the client on the listen's stream.
    let client = format!(
        "{} {} --root file://{{fixtures}}/project --url",
        support::peer("MCP_PYTHON"),
        repo_path("conformance/recordings/sources/py_mrtr_client.py").display()
    );
    let (ok, stdout) =
        replay_client(&[recording("pyfixture-mrtr-http-2026-07-28")], &client, &["--timeout-ms", "30000"]);
    assert!(ok, "{stdout}");
    assert!(stdout.ends_with("1 passed, 0 failed\n"), "{stdout}");
}

/// A copy of recording `name` in `dir` with `edit` applied to each entry line (as text).
fn copy_with(dir: &Path, name: &str, edit: impl Fn(&str) -> Option<String>) -> PathBuf {
    let text = std::fs::read_to_string(recording(name)).unwrap();
    let mut lines = text.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for line in lines {
        if let Some(line) = edit(line) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn a_client_that_departs_from_an_http_recording_is_caught() {
    let dir = std::env::temp_dir().join(format!("mcpwire-conformance-client-http-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    // Streamable HTTP: the driver is given a copy whose echo says something else, so the request
    // it sends matches no recorded params (reported by serve --listen through --report).
    let core = "everything-http-core-2025-11-25";
    let changed = copy_with(&dir, core, |l| Some(l.replace(r#""message":"over HTTP""#, r#""message":"changed""#)));
    assert!(std::fs::read_to_string(&changed).unwrap().contains(r#""message":"changed""#));
    let client = format!("{} --fixtures {{fixtures}} {}", driver(), changed.display());
    let (ok, stdout) = replay_client(&[recording(core)], &client, &[]);
    assert!(!ok, "{stdout}");
    assert_eq!(
        failures_of(&stdout, core),
        [r#"seq 15 c2s tools/call request: $.params.arguments.message: expected "over HTTP", got "changed""#],
        "{stdout}"
    );
    assert!(stdout.ends_with("0 passed, 1 failed\n"), "{stdout}");

    // The legacy HTTP+SSE transport: the driver is given a copy without the prompts/get, so it
    // never sends it.
    let sse = "everything-sse-2025-11-25";
    let cut = copy_with(&dir, sse, |l| (!l.contains(r#""method":"prompts/get""#)).then(|| l.to_owned()));
    let client = format!("{} --fixtures {{fixtures}} {}", driver(), cut.display());
    let (ok, stdout) = replay_client(&[recording(sse)], &client, &[]);
    assert!(!ok, "{stdout}");
    assert_eq!(
        failures_of(&stdout, sse),
        ["seq 26 c2s prompts/get request: $: recorded, but the client never sent it"],
        "{stdout}"
    );

    // everything-http-errors: its hand-made requests refused at the HTTP level are not expected
    // of a client, but its valid requests are. A driver given a copy without the valid ping of
    // seq 21 is caught — and only for that ping.
    let errors = "everything-http-errors";
    let cut = copy_with(&dir, errors, |l| (!l.starts_with(r#"{"seq":21,"#)).then(|| l.to_owned()));
    let client = format!("{} --fixtures {{fixtures}} {}", driver(), cut.display());
    let (ok, stdout) = replay_client(&[recording(errors)], &client, &[]);
    assert!(!ok, "{stdout}");
    assert_eq!(
        failures_of(&stdout, errors),
        ["seq 21 c2s ping request: $: recorded, but the client never sent it"],
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_client_is_given_the_url_of_serve_listen() {
    // A "client" that prints the words it was started with shows the calling convention: the
    // runner's URL appended, /mcp for Streamable HTTP and the legacy /sse stream for sse.
    let dir = std::env::temp_dir().join(format!("mcpwire-conformance-client-url-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, path) in [("everything-http-core-2025-11-25", "/mcp"), ("everything-sse-2025-11-25", "/sse")] {
        let out = dir.join(format!("{name}.args"));
        let client = format!("sh -c 'echo \"$@\" > {}' client-under-test {{name}}", out.display());
        let (ok, stdout) = replay_client(&[recording(name)], &client, &[]);
        assert!(!ok, "a client that sends nothing fails: {stdout}");
        assert!(stdout.contains("recorded, but the client never sent it"), "{stdout}");
        let args = std::fs::read_to_string(&out).unwrap();
        let words: Vec<&str> = args.split_whitespace().collect();
        assert_eq!(words.len(), 2, "{args}");
        assert_eq!(words[0], name);
        assert!(words[1].starts_with("http://127.0.0.1:") && words[1].ends_with(path), "{args}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
