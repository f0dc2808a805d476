//! Every message of every bundled recording survives a decode/encode round trip through
//! mcpwire's types, and every message whose method the protocol defines is checked typed.

use std::path::{Path, PathBuf};

use mcpwire::conformance::recording::Recording;
use mcpwire::conformance::roundtrip::{check_recording, write_report, FileCheck};

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
    assert_eq!(files.len(), 23, "the 23 bundled recordings");
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
