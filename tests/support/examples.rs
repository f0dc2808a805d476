//! Finds a built example (e.g. `echo_server`) for the integration tests that spawn it.
//!
//! Plain `cargo test` builds the examples before it runs integration tests, but
//! `cargo test --test NAME` does not, and may leave a stale one; so the first call runs
//! `cargo build --example NAME` (a no-op when it is up to date) with the cargo that built the
//! tests, then returns `target/<profile>/examples/NAME`, next to this test binary's `deps/`.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Mutex;

static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The path of example `name`, built first if needed.
pub fn example_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps/..");
    let path = dir.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if !built.iter().any(|n| n == name) {
        let mut cargo = std::process::Command::new(env!("CARGO"));
        // The variables cargo sets for a test process (CARGO_PKG_*, CARGO_MANIFEST_*, …) would
        // look like a changed environment to build scripts (ring's), forcing a rebuild of the
        // whole tree on every call: start the nested cargo from the user's environment. A test
        // runner's preload is for the tests, not for cargo (cargo hangs under libfaketime, which
        // a date sweep runs the tests under).
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let keep = matches!(key.as_ref(), "CARGO_HOME" | "CARGO_TARGET_DIR" | "CARGO_INCREMENTAL");
            let runner_set = key == "LD_PRELOAD" || key.starts_with("FAKETIME") || key == "DONT_FAKE_MONOTONIC";
            if (key.starts_with("CARGO_") && !keep) || key == "OUT_DIR" || key.starts_with("RUST_TEST") || runner_set {
                cargo.env_remove(key.as_ref());
            }
        }
        cargo.args(["build", "--quiet", "--example", name, "--manifest-path"]);
        cargo.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        let status = cargo.status().unwrap_or_else(|e| panic!("cannot run cargo to build example {name}: {e}"));
        assert!(status.success(), "cargo build --example {name} failed: {status}");
        built.push(name.to_owned());
    }
    assert!(path.exists(), "{} is missing after cargo build --example {name}", path.display());
    path
}
