//! Shared by the reliability tests (`load`, `faults`, `http_hostile`): what the process holds
//! (open fds, child processes and zombies, peak RSS) read from `/proc`, so a test can say that
//! it left nothing behind and how much memory a load took. Linux only, like the tests.
//!
//! Not here: the servers and clients the tests drive (those come from the library).

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// What the open file descriptors of this process point at (`socket:[inode]`, `pipe:[…]`, a
/// path), each once: a description shared by several fds (tokio runtimes each dup the
/// process-wide signal socket) counts once. `anon_inode` ones (a runtime's epoll and
/// eventfd; each test of a binary has its runtime before it waits for its turn) are left out.
pub fn open_files() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.starts_with("anon_inode:") && !p.starts_with("/proc/"))
        .collect()
}

/// How many files [`open_files`] counts.
pub fn open_fds() -> usize {
    open_files().len()
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

/// Taken by each [`Baseline`] for the test's whole run: the tests of one binary that count
/// what the process holds run one at a time, so that one's sockets are not another's leak.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What the process holds at the start of a test, to compare with at its end. Holding one
/// keeps the other tests that take one waiting.
pub struct Baseline {
    files: std::collections::BTreeSet<String>,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Baseline {
    pub async fn take() -> Baseline {
        let turn = ONE_AT_A_TIME.lock().await;
        Baseline { files: open_files(), _turn: turn }
    }

    /// Waits (at most `within`, polling) until no child process or zombie of ours is left and
    /// no more fds are open than at the start; fails naming what is left. The wait is bounded
    /// and generous: sockets and child reapers close on other tasks.
    ///
    /// Tests of one binary share the process: those that take a [`Baseline`] run one at a
    /// time; a file whose other tests open sockets must take one in those too.
    pub async fn assert_nothing_left(&self, within: Duration) {
        let started = Instant::now();
        while let Some(left) = self.what_is_left() {
            if started.elapsed() > within {
                panic!("{left}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// What is left now against the start, described; `None` when nothing is.
    fn what_is_left(&self) -> Option<String> {
        let left: Vec<String> = open_files().difference(&self.files).cloned().collect();
        let kids = children();
        (!left.is_empty() || !kids.is_empty())
            .then(|| format!("left behind: files {left:?}, child processes (pid, state) {kids:?}"))
    }
}

/// A [`Baseline`] for a test without a runtime (it blocks for its turn): taken first in the
/// test, so that it is dropped last, after the test's processes and sockets, it waits then (at
/// most `within`) for nothing to be left and fails naming what is — unless the test is failing
/// already.
pub struct LeavesNothing {
    baseline: Baseline,
    within: Duration,
}

impl LeavesNothing {
    pub fn take(within: Duration) -> LeavesNothing {
        // The first tokio runtime of the process opens the socket pair its signal handling
        // shares for good; that one is not the test's.
        static SIGNALS: std::sync::Once = std::sync::Once::new();
        SIGNALS.call_once(|| drop(tokio::runtime::Builder::new_current_thread().enable_all().build()));
        let turn = ONE_AT_A_TIME.blocking_lock();
        LeavesNothing { baseline: Baseline { files: open_files(), _turn: turn }, within }
    }
}

impl Drop for LeavesNothing {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let started = Instant::now();
        while let Some(left) = self.baseline.what_is_left() {
            if started.elapsed() > self.within {
                panic!("{left}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
