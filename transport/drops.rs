//! A count of messages dropped because a reader was too slow for a bounded queue, with at most
//! one log line per [`DROP_LOG_EVERY`] saying how many: a drop is never silent, and a flood of
//! them does not flood the log. Used by the server's per-session notification queues and the
//! HTTP server's queue for a standalone stream not yet open. It drops nothing itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often at most a line says messages are being dropped.
pub const DROP_LOG_EVERY: Duration = Duration::from_secs(10);

/// Messages dropped so far, and when the last line about them was logged.
#[derive(Default)]
pub(crate) struct Drops {
    count: AtomicU64,
    /// When the last line was logged, and the count then.
    logged: Mutex<Option<(Instant, u64)>>,
}

impl Drops {
    /// Counts one drop from a queue of `limit` (of a `method` message, when the caller knows);
    /// logs `why` (with the drops since the last line, the total and the limit) unless a line
    /// was logged less than [`DROP_LOG_EVERY`] ago.
    pub(crate) fn note(&self, method: Option<&str>, why: &'static str, limit: usize) {
        let total = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        let now = Instant::now();
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        let since = match *logged {
            Some((at, _)) if now.duration_since(at) < DROP_LOG_EVERY => return,
            Some((_, then)) => total - then,
            None => total,
        };
        *logged = Some((now, total));
        tracing::warn!(method, dropped = since, total, limit, "{why}");
    }

    /// How many were dropped so far.
    pub(crate) fn total(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_drop_is_counted_whether_or_not_a_line_is_logged() {
        let drops = Drops::default();
        for _ in 0..5 {
            drops.note(Some("notifications/message"), "queue full", 4);
        }
        assert_eq!(drops.total(), 5);
        let logged = drops.logged.lock().unwrap().expect("the first drop is logged");
        assert_eq!(logged.1, 1, "the later drops within DROP_LOG_EVERY were not logged");
    }
}
