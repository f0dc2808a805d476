//! `mcp-conformance`: checks MCP implementations against recorded sessions.
//!
//! Subcommands:
//! - `roundtrip FILE...` — every message of each recording must survive a decode/encode round
//!   trip through mcpwire's types. Exit status 1 if any message fails, 2 on usage errors.

use std::path::PathBuf;
use std::process::ExitCode;

use mcpwire::conformance::recording::Recording;
use mcpwire::conformance::roundtrip::{check_recording, write_report};

const USAGE: &str = "usage: mcp-conformance roundtrip FILE...";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("roundtrip") => roundtrip(args.map(PathBuf::from).collect()),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn roundtrip(files: Vec<PathBuf>) -> ExitCode {
    if files.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let mut checks = Vec::new();
    for path in &files {
        match Recording::read(path) {
            Ok(recording) => checks.push(check_recording(&recording)),
            Err(e) => {
                eprintln!("mcp-conformance: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let mut report = String::new();
    write_report(&mut report, &checks).expect("writing to a String cannot fail");
    print!("{report}");
    if checks.iter().all(|c| c.failed() == 0) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
