//! `mcp-conformance replay --client`: the recorded servers played to a client under test.
//! Every stdio recording is replayed against mcpwire's own client, driven by
//! the `mcp-conformance-client-driver` binary (`conformance/client_driver.rs`); one it could not
//! pass would be listed, with its reason, in `conformance/client-expected-failures.txt` (a listed
//! one that passes fails the run). None is listed: the multi-round 2026-07-28 recording passes,
//! its `subscriptions/listen` included (the HTTP recordings are replayed in
//! `tests/conformance_client_http.rs`).

use crate::examples;
use crate::support;

use std::path::PathBuf;
use std::process::Command;

use support::repo_path;

fn bin() -> &'static str {
    examples::bin_path("mcp-conformance")
}
fn driver_bin() -> &'static str {
    examples::bin_path("mcp-conformance-client-driver")
}

fn stdio_recordings() -> Vec<PathBuf> {
    support::recordings_with_transport(|t| t == "stdio")
}

fn driver() -> String {
    format!("{} --fixtures {{fixtures}} {{recording}}", driver_bin())
}

#[test]
fn every_stdio_recording_replays_against_our_client() {
    let files = stdio_recordings();
    assert_eq!(files.len(), 18);
    let baseline = repo_path("conformance/client-expected-failures.txt");
    let out = Command::new(bin())
        .arg("replay")
        .args(&files)
        .args(["--client", &driver(), "--expected-failures"])
        .arg(&baseline)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.ends_with("18 passed, 0 failed\n"), "{stdout}");
    // Each recording passes, those with server requests (roots, sampling, elicitation), an
    // unknown offered version, a server/discover probe, schema-invalid params, multi-round
    // requests and a subscriptions/listen stream included.
    for file in &files {
        let name = file.file_stem().unwrap().to_string_lossy();
        assert!(stdout.contains(&format!("ok {name}\n")), "{name}: {stdout}");
    }
}

#[test]
fn a_client_that_departs_from_the_recording_is_caught() {
    // A "client" that only connects (the handshake) and stops: everything after it was never sent.
    let recording = repo_path("conformance/recordings/everything-handshake-2025-11-25.jsonl");
    let dir = std::env::temp_dir().join(format!("mcpwire-conformance-client-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(&recording).unwrap();
    // The driver is given a copy without the ping, so it never sends it.
    let cut: String = text.lines().filter(|l| !l.contains("\"method\":\"ping\"")).map(|l| format!("{l}\n")).collect();
    let copy = dir.join("everything-handshake-2025-11-25.jsonl");
    std::fs::write(&copy, cut).unwrap();
    let client = format!("{} --fixtures {{fixtures}} {}", driver_bin(), copy.display());
    let out = Command::new(bin()).arg("replay").arg(&recording).args(["--client", &client]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("seq 4 c2s ping request: $: recorded, but the client never sent it"), "{stdout}");
    assert!(stdout.ends_with("0 passed, 1 failed\n"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
