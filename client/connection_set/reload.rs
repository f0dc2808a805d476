//! Reload: the set moved to a new configuration, keeping what did not change.
//!
//! [`ConnectionSet::reload`] compares each server of the new configuration with the one of
//! the same name ([`ServerConfig::same_connection`]):
//! - the same configuration: kept as it is;
//! - the same connection identity (command, args, env, cwd, url, headers, auth, era, enabled)
//!   with other per-call settings (filters, timeouts, approval modes, `required`, serial
//!   calls): the settings change in place, the connection is kept (no second process);
//! - another identity: restarted. A server with a working connection is restarted
//!   make-before-break: the new connection is made while the old one serves, and replaces it
//!   only once it is listed; when it cannot be made (a singleton server that refuses a second
//!   instance, a typo in the new command) the old connection and configuration stay and the
//!   failure is reported. A server without one (starting, failed, reconnecting) has its start
//!   or restarts cancelled and is started afresh;
//! - absent from the new configuration: removed. Its pending start is cancelled (the child
//!   killed with its process group) and its connection retired: closed at once when nothing
//!   else holds it, else after the calls in flight on it and the [`ServerLease`]s on it are
//!   done;
//! - new: added, and started when the set has been started (a `startup = "lazy"` one whose
//!   listing is in the catalog cache is deferred instead, as at start).
//!
//! A server started afresh that fails is retried as a failed start is
//! ([`SetOptions::startup_retries`](super::SetOptions::startup_retries)).
//!
//! The catalog is rebuilt and [`SetEvent::CatalogChanged`] emitted for every server that
//! changed, so a gateway tells its clients (`list_changed`).
//!
//! Not here: where configurations come from or when to reload (the host: a file watcher,
//! SIGHUP in `mcp-bridge serve`).
//!
//! [`ServerLease`]: super::ServerLease

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::reconnect::{connect, install, retry_failed_start, start_one};
use super::slot::Slot;
use super::{lease, ConnectionSet, Held, ServerState, SetEvent, Shared};
use crate::client::config::{McpConfig, ServerConfig};

/// What a [`ConnectionSet::reload`] did, each list in name order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadReport {
    /// Unchanged servers.
    pub kept: Vec<String>,
    /// Servers whose per-call settings changed in place (their connection kept).
    pub updated: Vec<String>,
    /// Servers whose connection identity changed: restarted (or stopped, when now disabled).
    pub restarted: Vec<String>,
    /// New servers.
    pub added: Vec<String>,
    /// Servers no longer configured: shut down.
    pub removed: Vec<String>,
    /// Restarts that failed, and why: these servers keep their previous connection and
    /// configuration.
    pub failed: Vec<(String, String)>,
}

impl ReloadReport {
    /// Whether anything changed.
    pub fn is_unchanged(&self) -> bool {
        self.updated.is_empty() && self.restarted.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }
}

impl fmt::Display for ReloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [
            ("kept", &self.kept),
            ("updated", &self.updated),
            ("restarted", &self.restarted),
            ("added", &self.added),
            ("removed", &self.removed),
        ];
        let mut first = true;
        for (what, names) in parts {
            if names.is_empty() {
                continue;
            }
            write!(f, "{}{what} {}", if first { "" } else { ", " }, names.join(" "))?;
            first = false;
        }
        if first {
            f.write_str("no servers")?;
        }
        for (name, reason) in &self.failed {
            write!(f, "; {name} kept its previous connection: {reason}")?;
        }
        Ok(())
    }
}

/// What a reload does to one existing slot whose identity changed.
enum Restart {
    /// It has a working connection: make the new one first.
    MakeBeforeBreak(Arc<Slot>, Arc<ServerConfig>),
    /// Nothing worth keeping: start it afresh from its new configuration.
    Fresh(Arc<Slot>),
}

impl ConnectionSet {
    /// Moves the set to `config`, keeping every connection whose identity did not change (see
    /// the module docs of `reload`), and waits for the servers it adds or restarts to settle
    /// (each within its `startup_timeout`). Reloads run one at a time. Before
    /// [`ConnectionSet::start`], nothing is started: the new configuration is only taken.
    ///
    /// # Cancel safety
    /// The configuration is taken at the first poll; the starts it begins run on as tasks
    /// (each rebuilding the catalog as it settles), so dropping the future only stops the wait.
    pub async fn reload(&self, config: McpConfig) -> ReloadReport {
        let shared = &self.shared;
        let _one_at_a_time = shared.reloading.lock().await;
        let started = shared.started.load(Ordering::Acquire) && !shared.shut_down.load(Ordering::Acquire);
        let mut report = ReloadReport::default();
        let mut removed = Vec::new();
        let mut stopped = Vec::new();
        let mut restarts = Vec::new();
        let mut disabled = Vec::new();
        {
            let mut slots = shared.slots.write().expect("slots lock");
            let wanted: BTreeMap<String, ServerConfig> =
                config.servers.into_values().map(|server| (server.key(), server)).collect();
            let gone: Vec<String> = slots.keys().filter(|key| !wanted.contains_key(*key)).cloned().collect();
            for name in gone {
                let slot = slots.remove(&name).expect("listed above");
                removed.extend(retire_slot(&slot));
                report.removed.push(name);
            }
            for (name, new) in wanted {
                let Some(slot) = slots.get(&name).cloned() else {
                    let slot = Arc::new(Slot::new(new));
                    if started && slot.config().enabled {
                        restarts.push(Restart::Fresh(slot.clone()));
                    }
                    slots.insert(name.clone(), slot);
                    report.added.push(name);
                    continue;
                };
                let old = slot.config();
                if *old == new {
                    report.kept.push(name);
                } else if old.same_connection(&new) {
                    *slot.config.write().expect("config lock") = Arc::new(new);
                    report.updated.push(name);
                } else {
                    report.restarted.push(name.clone());
                    let new = Arc::new(new);
                    let mut s = slot.lock();
                    let working = s.state == ServerState::Ready && s.conn.is_some();
                    if !new.enabled {
                        slot.epoch.send_modify(|e| *e += 1);
                        if let Some(watcher) = s.watcher.take() {
                            watcher.abort();
                        }
                        stopped.extend(s.conn.take());
                        s.state = ServerState::Disabled;
                        s.error = None;
                        *slot.config.write().expect("config lock") = new;
                        disabled.push(name);
                    } else if working && started {
                        restarts.push(Restart::MakeBeforeBreak(slot.clone(), new));
                    } else {
                        // A start or restarts of the old recipe are superseded.
                        slot.epoch.send_modify(|e| *e += 1);
                        s.state = ServerState::Pending;
                        *slot.config.write().expect("config lock") = new;
                        if started {
                            restarts.push(Restart::Fresh(slot.clone()));
                        }
                    }
                }
            }
        }
        for held in removed.into_iter().chain(stopped) {
            lease::retire(held).await;
        }
        for name in &disabled {
            shared.emit(SetEvent::Disabled { server: name.clone() });
        }
        // A lazy server added (or changed) with its listing in the cache is deferred, as at start.
        let fresh: Vec<Arc<Slot>> = restarts
            .iter()
            .filter_map(|r| if let Restart::Fresh(slot) = r { Some(slot.clone()) } else { None })
            .collect();
        let mut cached = self.load_cache(&fresh);
        let mut deferred = Vec::new();
        restarts.retain(|restart| {
            let Restart::Fresh(slot) = restart else { return true };
            let Some(entry) = cached.remove(&slot.name) else { return true };
            let mut s = slot.lock();
            s.state = ServerState::Deferred;
            s.listing = entry.into();
            let tools = s.listing.tools.len();
            drop(s);
            shared.emit(SetEvent::Deferred { server: slot.name.clone(), tools });
            deferred.push(slot.name.clone());
            false
        });
        let mut runs = Vec::new();
        for restart in restarts {
            let shared = shared.clone();
            runs.push(tokio::spawn(async move {
                let (slot, failure) = match restart {
                    Restart::Fresh(slot) => {
                        start_one(&shared, &slot, true).await;
                        retry_failed_start(&shared, &slot);
                        (slot, None)
                    }
                    Restart::MakeBeforeBreak(slot, config) => {
                        let outcome = make_before_break(&shared, &slot, config).await;
                        let failure = outcome.err().map(|reason| (slot.name.clone(), reason));
                        (slot, failure)
                    }
                };
                shared.rebuild_catalog();
                shared.emit(SetEvent::CatalogChanged { server: slot.name.clone() });
                failure
            }));
        }
        for run in runs {
            if let Ok(Some(failure)) = run.await {
                report.failed.push(failure);
            }
        }
        report.failed.sort();
        shared.rebuild_catalog();
        shared.save_cache();
        for name in report.updated.iter().chain(&report.removed).chain(&disabled).chain(&deferred) {
            shared.emit(SetEvent::CatalogChanged { server: name.clone() });
        }
        report
    }
}

/// Takes a removed slot out of service: nothing restarts or installs it any more, its pending
/// start is cancelled, its watcher stopped. Returns its connection, to be retired.
fn retire_slot(slot: &Slot) -> Option<Arc<Held>> {
    let mut s = slot.lock();
    slot.retired.store(true, Ordering::Release);
    slot.epoch.send_modify(|e| *e += 1);
    if let Some(watcher) = s.watcher.take() {
        watcher.abort();
    }
    if s.state != ServerState::Disabled {
        s.state = ServerState::Closed;
    }
    s.conn.take()
}

/// Connects `slot`'s server from `config` while its current connection serves; installs the
/// new connection (retiring the old) once it is listed. On failure the slot is left as it was.
async fn make_before_break(shared: &Arc<Shared>, slot: &Arc<Slot>, config: Arc<ServerConfig>) -> Result<(), String> {
    let epoch = *slot.epoch.borrow();
    let started = Instant::now();
    let mut cancel = shared.cancel.subscribe();
    let outcome = tokio::select! {
        outcome = tokio::time::timeout(config.startup_timeout, connect(shared, slot, &config)) => outcome,
        _ = cancel.wait_for(|c| *c) => return Err("cancelled".to_owned()),
    };
    let reason = match outcome {
        Ok(Ok((conn, listing, listening))) => {
            let (version, tools) = (conn.protocol_version(), listing.tools.len());
            let elapsed = started.elapsed();
            if install(shared, slot, Some(epoch), Some(config), conn, listing, listening, elapsed) {
                shared.emit(SetEvent::Ready { server: slot.name.clone(), protocol_version: version, tools, elapsed });
                return Ok(());
            }
            "superseded".to_owned()
        }
        Ok(Err(reason)) => reason,
        Err(_) => format!("did not start within {} ms", config.startup_timeout.as_millis()),
    };
    shared.emit(SetEvent::RestartFailed { server: slot.name.clone(), reason: reason.clone() });
    Err(reason)
}
