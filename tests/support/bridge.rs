//! `mcp-bridge serve` as the integration tests run it: a child process listening on a free
//! loopback port (unless the test passes its own `--listen`), its URL read from the banner's
//! first line, stopped with SIGTERM and waited for when dropped; and the `/proc` readings the
//! tests check upstream processes with. It does not read the bridge's log: a test that needs it
//! pipes stderr in `start_with` and takes it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};

/// A running `mcp-bridge serve`.
pub struct ServingBridge {
    child: Child,
    /// The MCP endpoint from the banner, e.g. `http://127.0.0.1:41234/mcp`.
    pub url: String,
    stopped: bool,
}

impl ServingBridge {
    /// `mcp-bridge serve ARGS`, on `http://127.0.0.1:0/mcp` unless ARGS hold a `--listen`.
    pub fn start(args: &[&str]) -> ServingBridge {
        ServingBridge::start_with(args, |_| {})
    }

    /// As `start`, with `configure` applied to the command before it is spawned (environment,
    /// stderr). stdin is null and stdout is read for the banner, then drained.
    pub fn start_with(args: &[&str], configure: impl FnOnce(&mut Command)) -> ServingBridge {
        let mut command = Command::new(crate::examples::bin_path("mcp-bridge"));
        command.arg("serve");
        if !args.contains(&"--listen") {
            command.args(["--listen", "http://127.0.0.1:0/mcp"]);
        }
        command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        configure(&mut command);
        let mut child = command.spawn().expect("mcp-bridge runs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("a banner line").unwrap();
        let url = first.strip_prefix("mcp-bridge: serving MCP on ").unwrap_or_else(|| panic!("{first}")).to_owned();
        // The rest of the banner (client snippets) is not needed; keep the pipe drained.
        std::thread::spawn(move || lines.for_each(drop));
        ServingBridge { child, url, stopped: false }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The port of `url`.
    pub fn port(&self) -> u16 {
        self.url.rsplit_once(':').and_then(|(_, rest)| rest.split('/').next()?.parse().ok()).expect("a port")
    }

    /// Sends signal `name` (`HUP`, `TERM`, …) to the bridge.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill").args([&format!("-{name}"), &self.pid().to_string()]).status();
        assert!(status.unwrap().success(), "kill -{name}");
    }

    /// The bridge's stderr, when `start_with` piped it.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// SIGTERM, then waits for the bridge to exit and gives its status; `None` when it was
    /// stopped before.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        if self.stopped {
            return None;
        }
        self.stopped = true;
        let _ = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status();
        self.child.wait().ok()
    }
}

impl Drop for ServingBridge {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The processes whose parent is `pid`, with their command lines (arguments joined by spaces).
pub fn children_of(pid: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        // The fields after the parenthesised command, which may hold spaces: state, ppid, …
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else { continue };
        let ppid: u32 = rest.split(' ').nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        if ppid == pid {
            let cmdline = std::fs::read_to_string(format!("/proc/{child}/cmdline")).unwrap_or_default();
            found.push((child, cmdline.replace('\0', " ")));
        }
    }
    found
}

/// Whether `pid` still exists as anything but a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// `GET path` on the bridge at `url` (its MCP URL), with a bearer token when given: the
/// status and the body.
pub fn http_get(url: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let authority = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut stream = std::net::TcpStream::connect(&authority).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    std::io::Write::write_fmt(
        &mut stream,
        format_args!("GET {path} HTTP/1.1\r\nHost: {authority}\r\n{auth}Connection: close\r\n\r\n"),
    )
    .unwrap();
    let mut response = String::new();
    std::io::Read::read_to_string(&mut stream, &mut response).unwrap();
    let status = response.split(' ').nth(1).unwrap().parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// Runs the built `mcp-bridge ARGS [-- SERVER…]` (a shell command such as `tools`) to its end.
pub fn run(args: &[&str], server: &[String]) -> std::process::Output {
    let mut command = Command::new(crate::examples::bin_path("mcp-bridge"));
    command.args(args);
    if !server.is_empty() {
        command.arg("--").args(server);
    }
    command.output().expect("mcp-bridge runs")
}

/// The command line of server-everything over stdio.
pub fn everything_stdio() -> Vec<String> {
    vec![crate::support::peer("MCP_NODE"), crate::support::peer("MCP_EVERYTHING_JS"), "stdio".to_owned()]
}

/// A finished command's stdout as text.
pub fn stdout_text(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// A finished command's stderr as text.
pub fn stderr_text(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}
