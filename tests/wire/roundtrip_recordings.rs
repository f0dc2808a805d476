//! Every message of every bundled recording survives a decode/encode round trip through
//! mcpwire's types, and every message whose method the protocol defines is checked typed.

use std::path::{Path, PathBuf};

use mcp_conformance::roundtrip::{check_recording, write_report, FileCheck};
use mcpwire::recording::Recording;

fn recordings() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/recordings");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("conformance/recordings exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

fn check_all() -> Vec<FileCheck> {
    recordings().iter().map(|p| check_recording(&Recording::read(p).unwrap())).collect()
}

#[test]
fn all_bundled_recordings_round_trip() {
    let files = recordings();
    assert_eq!(files.len(), 25, "the 25 bundled recordings");
    let checks = check_all();
    let mut report = String::new();
    write_report(&mut report, &checks).unwrap();
    let failed: usize = checks.iter().map(FileCheck::failed).sum();
    assert_eq!(failed, 0, "{report}");
    assert!(report.ends_with(&format!("{} passed, 0 failed\n", checks.iter().map(FileCheck::passed).sum::<usize>())));
}

#[test]
fn every_known_method_is_checked_typed() {
    // The only untyped messages allowed: the deliberately unknown method of everything-errors and
    // its error answer, and error responses (checked as envelopes: code, message, data).
    for check in check_all() {
        for m in &check.messages {
            let allowed = m.label.starts_with("error ")
                || m.label.contains(" error ")
                || m.label == "unknown/method (unknown method)"
                || m.label == "response to an unknown method";
            assert!(m.typed || allowed, "{} seq {}: {} was not checked typed", check.name, m.seq, m.label);
        }
    }
}

fn check_text(lines: &[&str]) -> FileCheck {
    let header = r#"{"mcp_recording":1,"name":"t","transport":"stdio","protocol_version":"2025-11-25"}"#;
    let text = std::iter::once(header).chain(lines.iter().copied()).collect::<Vec<_>>().join("\n");
    check_recording(&Recording::parse(Path::new("t.jsonl"), &text).unwrap())
}

#[test]
fn a_message_our_types_would_change_is_reported_with_its_path() {
    let check = check_text(&[
        r#"{"seq":1,"t_ms":0,"dir":"c2s","msg":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}}"#,
        r#"{"seq":2,"t_ms":1,"dir":"s2c","msg":{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":7}]}}}"#,
    ]);
    assert_eq!(check.failed(), 1);
    let failure = check.messages[1].failure.as_ref().unwrap().to_string();
    assert!(failure.starts_with("does not decode"), "{failure}");
}

#[test]
fn invalid_params_pass_only_when_the_peer_rejected_them() {
    let request =
        r#"{"seq":1,"t_ms":0,"dir":"c2s","msg":{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}}"#;
    let rejected = check_text(&[
        request,
        r#"{"seq":2,"t_ms":1,"dir":"s2c","msg":{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"uri required"}}}"#,
    ]);
    assert_eq!(rejected.failed(), 0);
    assert!(rejected.messages[0].label.ends_with("(invalid params, rejected by the peer)"));
    let accepted = check_text(&[
        request,
        r#"{"seq":2,"t_ms":1,"dir":"s2c","msg":{"jsonrpc":"2.0","id":1,"result":{"contents":[]}}}"#,
    ]);
    assert_eq!(accepted.failed(), 1, "{:?}", accepted.messages);
}

#[test]
fn wrong_direction_and_unmatched_responses_fail() {
    let check = check_text(&[
        r#"{"seq":1,"t_ms":0,"dir":"s2c","msg":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}"#,
        r#"{"seq":2,"t_ms":1,"dir":"s2c","msg":{"jsonrpc":"2.0","id":9,"result":{}}}"#,
    ]);
    let failures: Vec<String> =
        check.messages.iter().filter_map(|m| m.failure.as_ref().map(ToString::to_string)).collect();
    assert_eq!(
        failures,
        ["this method does not travel in this direction", "answers no request seen in the other direction"]
    );
}
