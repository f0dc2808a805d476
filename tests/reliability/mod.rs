//! Shared by the reliability tests (`load`, `faults`, `http_hostile`): what the process holds
//! (open fds, child processes and zombies, peak RSS) read from `/proc`, so a test can say that
//! it left nothing behind and how much memory a load took. Linux only, like the tests.
//!
//! Not here: the servers and clients the tests drive (those come from the library).

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Open file descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count()
}

/// Processes whose parent is this process, with their state letter (`Z`: a zombie).
pub fn children() -> Vec<(u32, char)> {
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // pid (comm) state ppid ...; comm may hold spaces and parentheses: split after the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let mut fields = rest.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(me) {
            found.push((pid, state));
        }
    }
    found
}

/// Peak resident set size (`VmHWM`) of process `pid` (`"self"` for this one), in KiB.
pub fn peak_rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets this process's peak RSS to its current RSS (`echo 5 > /proc/self/clear_refs`), so
/// that the next [`peak_rss_kib`] tells the peak of what follows.
pub fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM through /proc/self/clear_refs");
}

/// What the process holds at the start of a test, to compare with at its end.
pub struct Baseline {
    fds: usize,
}

impl Baseline {
    pub fn take() -> Baseline {
        Baseline { fds: open_fds() }
    }

    /// Waits (at most `within`, polling) until no child process or zombie of ours is left and
    /// no more fds are open than at the start; fails naming what is left. The wait is bounded
    /// and generous: sockets and child reapers close on other tasks.
    ///
    /// Tests in one binary share the process: run them with `--test-threads=1` for this to
    /// mean "this test left nothing" (`.ci/run` does); in parallel it still catches a leak
    /// that outlives every test.
    pub async fn assert_nothing_left(&self, within: Duration) {
        let started = Instant::now();
        loop {
            let (fds, kids) = (open_fds(), children());
            if fds <= self.fds && kids.is_empty() {
                return;
            }
            if started.elapsed() > within {
                let listing: Vec<String> = std::fs::read_dir("/proc/self/fd")
                    .unwrap()
                    .flatten()
                    .filter_map(|e| std::fs::read_link(e.path()).ok())
                    .map(|p| p.display().to_string())
                    .collect();
                panic!("left behind: {fds} fds open (had {}), children {kids:?}; fds: {listing:?}", self.fds);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Polls `done` every 10 ms until it holds, failing after `within` with `what`.
pub fn wait_until(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < within, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
