//! The HTTP floor instrument of docs/benchmarks.md answers real echo calls over loopback TCP.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn http_floor_bench_echoes_every_call_against_its_server() {
    let exe = env!("CARGO_BIN_EXE_http-floor");
    let mut server = Command::new(exe).args(["serve", "127.0.0.1:0"]).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(server.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let out = Command::new(exe)
        .args(["bench", &url, "--n", "40", "--concurrency", "4", "--sizes", "16,70000"])
        .output()
        .unwrap();
    server.kill().unwrap();
    let _ = server.wait();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cells: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let shape: Vec<(u64, u64)> =
        cells.iter().map(|c| (c["payload_bytes"].as_u64().unwrap(), c["concurrency"].as_u64().unwrap())).collect();
    assert_eq!(shape, [(16, 1), (16, 4), (70000, 1), (70000, 4)]);
    for cell in &cells {
        assert_eq!(cell["errors"], 0, "{cell}");
        assert_eq!(cell["n"], 40, "{cell}");
        assert!(cell["calls_per_s"].as_f64().unwrap() > 0.0, "{cell}");
    }
}
