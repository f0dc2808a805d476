//! Finds a built example (e.g. `echo_server`) or binary (e.g. `mcp-bridge`) of the workspace
//! for the integration tests that spawn it.
//!
//! `cargo test` at the root builds every package's examples and binaries before it runs the
//! tests, but `cargo test --test NAME` does not, and may leave a stale one; and a binary of
//! another package has no `CARGO_BIN_EXE_*` here. So the first call for each name runs `cargo
//! build --example NAME` (or `--bin NAME`) on the workspace (a no-op when it is up to date) with
//! the cargo that built the tests, then returns `target/<profile>/[examples/]NAME`, next to this
//! test binary's `deps/`.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Mutex;

static BUILT: Mutex<Vec<(String, &'static str)>> = Mutex::new(Vec::new());

/// The path of example `name`, built first if needed.
pub fn example_path(name: &str) -> PathBuf {
    PathBuf::from(built("--example", name))
}

/// The path of binary `name` (`mcp-bridge`, `mcp-conformance` …), built first if needed.
pub fn bin_path(name: &str) -> &'static str {
    built("--bin", name)
}

fn built(kind: &str, name: &str) -> &'static str {
    let key = format!("{kind} {name}");
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(k, _)| *k == key) {
        return path;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps/..");
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let path = if kind == "--example" { dir.join("examples").join(file) } else { dir.join(file) };
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
    // The whole workspace is selected, as `cargo test` at the root selects it, so that the
    // library is built with the same features and not compiled again for this build.
    cargo.args(["build", "--quiet", "--workspace", kind, name, "--manifest-path"]);
    cargo.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
    if cfg!(feature = "schema") {
        cargo.args(["--features", "mcpwire/schema"]);
    }
    if cfg!(feature = "redis") {
        cargo.args(["--features", "mcpwire/redis,mcp-bridge/redis"]);
    }
    if cfg!(feature = "otel") {
        cargo.args(["--features", "mcp-bridge/otel"]);
    }
    if cfg!(feature = "secret-service") {
        cargo.args(["--features", "mcpwire/secret-service"]);
    }
    if !cfg!(debug_assertions) {
        cargo.arg("--release");
    }
    let status = cargo.status().unwrap_or_else(|e| panic!("cannot run cargo to build {kind} {name}: {e}"));
    assert!(status.success(), "cargo build {kind} {name} failed: {status}");
    assert!(path.exists(), "{} is missing after cargo build {kind} {name}", path.display());
    let path: &'static str = Box::leak(path.display().to_string().into_boxed_str());
    built.push((key, path));
    path
}
