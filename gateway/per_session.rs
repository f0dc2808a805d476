//! [`PerSession`]: the upstreams a handshake-era downstream session gets for itself (a
//! `per-session` server: its own child), started on first use, bounded in number, stopped when
//! the session ends and moved on a reload.
//!
//! Not here: the shared connections (the gateway's set).

use super::*;

/// The upstreams each downstream session gets for itself: their configuration (the servers
/// named by `--per-session`, as the config file has them now), and the sets started so far, by
/// session.
///
/// A reload ([`PerSession::reload`]) moves every started set to the new configuration, each
/// through [`ConnectionSet::reload`] (an unchanged server keeps its child; a changed one is
/// restarted; a removed one is stopped); a set started while a reload runs is moved on its next
/// use, by the generation it was made with.
///
/// At most [`max_sets`](PerSession::with_max_sets) sessions hold sets of their own at once
/// (default [`DEFAULT_MAX_PER_SESSION_SETS`]): each holds a child process per per-session
/// server. A session past it gets, for each request to a per-session server, a -32603 error
/// naming the limit (`data.limit` = `"max_per_session_sets"`) and starts nothing; a session
/// that ends frees its place. Sessions that hold a set keep it: nothing is evicted.
pub struct PerSession {
    names: Vec<String>,
    config: RwLock<(u64, McpConfig)>,
    options: SetOptions,
    sets: Mutex<HashMap<u64, Arc<tokio::sync::OnceCell<SessionSet>>>>,
    max_sets: usize,
}

/// The default of [`PerSession::with_max_sets`]: 64 sessions holding their own upstreams.
pub const DEFAULT_MAX_PER_SESSION_SETS: usize = 64;

/// Why a session has no set of its own.
pub(super) enum SessionSetError {
    /// [`PerSession::max_sets`] sessions hold one already.
    Full(usize),
    /// Its set did not start.
    Start(SetError),
}

/// One session's set, and the configuration generation it was last moved to.
pub(super) struct SessionSet {
    set: ConnectionSet,
    generation: AtomicU64,
}

impl PerSession {
    /// Per-session connections to the servers `names` of `config`, made with `options`.
    ///
    /// # Errors
    /// A name `config` does not have.
    pub fn new(names: Vec<String>, config: &McpConfig, options: SetOptions) -> Result<PerSession, String> {
        if let Some(missing) = names.iter().find(|name| !config.servers.contains_key(*name)) {
            return Err(format!("--per-session {missing}: no such upstream"));
        }
        let config = RwLock::new((0, Self::subset(&names, config)));
        Ok(PerSession { names, config, options, sets: Mutex::default(), max_sets: DEFAULT_MAX_PER_SESSION_SETS })
    }

    /// At most `max` sessions holding their own upstreams at once (see [`PerSession`]).
    pub fn with_max_sets(mut self, max: usize) -> PerSession {
        self.max_sets = max;
        self
    }

    /// How many sessions may hold their own upstreams at once.
    pub fn max_sets(&self) -> usize {
        self.max_sets
    }

    /// How many sessions hold (or are starting) their own upstreams.
    pub fn sets(&self) -> usize {
        self.sets.lock().expect("sessions lock").len()
    }

    /// The servers of `config` that are per-session.
    pub(super) fn subset(names: &[String], config: &McpConfig) -> McpConfig {
        let mut subset = config.clone();
        subset.servers.retain(|name, _| names.contains(name));
        subset
    }

    pub(super) fn current(&self) -> (u64, McpConfig) {
        self.config.read().expect("per-session config lock").clone()
    }

    /// The set of session `session`, started on first use (and moved to the current
    /// configuration when a reload came after it was made).
    pub(super) async fn set(&self, session: u64) -> Result<ConnectionSet, SessionSetError> {
        let cell = {
            let mut sets = self.sets.lock().expect("sessions lock");
            if !sets.contains_key(&session) && sets.len() >= self.max_sets {
                return Err(SessionSetError::Full(self.max_sets));
            }
            sets.entry(session).or_default().clone()
        };
        let set = cell
            .get_or_try_init(|| async {
                let (generation, config) = self.current();
                let set = ConnectionSet::new(config, self.options.clone());
                match set.start().await {
                    Ok(_) => Ok(SessionSet { set, generation: AtomicU64::new(generation) }),
                    Err(e) => {
                        set.shutdown().await;
                        Err(e)
                    }
                }
            })
            .await;
        let session_set = match set {
            Ok(session_set) => session_set,
            Err(e) => {
                self.sets.lock().expect("sessions lock").remove(&session);
                return Err(SessionSetError::Start(e));
            }
        };
        let generation = self.config.read().expect("per-session config lock").0;
        if session_set.generation.load(Ordering::Acquire) != generation {
            Box::pin(Self::move_to(session_set, self.current())).await;
        }
        Ok(session_set.set.clone())
    }

    /// Moves `session_set` to `config` of `generation`, unless it is there already.
    pub(super) async fn move_to(session_set: &SessionSet, (generation, config): (u64, McpConfig)) {
        if session_set.generation.swap(generation, Ordering::AcqRel) != generation {
            let report = session_set.set.reload(config).await;
            tracing::debug!(%report, "a session's per-session upstreams reloaded");
        }
    }

    /// The configuration file became `config`: the per-session servers are taken from it
    /// (a `--per-session` name it no longer has is no longer served), and every started
    /// session's set is moved to them. Returns how many sets were moved.
    pub async fn reload(&self, config: &McpConfig) -> usize {
        let current = {
            let mut held = self.config.write().expect("per-session config lock");
            let subset = Self::subset(&self.names, config);
            if subset == held.1 {
                return 0;
            }
            for gone in self.names.iter().filter(|name| !subset.servers.contains_key(*name)) {
                tracing::warn!(server = %printable(gone), "--per-session server no longer in the config: no longer served");
            }
            *held = (held.0 + 1, subset);
            held.clone()
        };
        let started: Vec<_> = self.sets.lock().expect("sessions lock").values().cloned().collect();
        let mut moved = 0;
        for cell in &started {
            if let Some(session_set) = cell.get() {
                Self::move_to(session_set, current.clone()).await;
                moved += 1;
            }
        }
        moved
    }

    /// Session `session` ended: its connections are shut down (children and process groups).
    pub fn close(&self, session: u64) {
        let Some(cell) = self.sets.lock().expect("sessions lock").remove(&session) else { return };
        if let Some(set) = cell.get().map(|s| s.set.clone()) {
            crate::transport::task::spawn(async move { set.shutdown().await });
        }
    }

    /// Every session's connections shut down.
    pub async fn close_all(&self) {
        let cells: Vec<_> = self.sets.lock().expect("sessions lock").drain().map(|(_, c)| c).collect();
        for session_set in cells.iter().filter_map(|c| c.get()) {
            session_set.set.shutdown().await;
        }
    }

    pub(super) fn serves(&self, server: &str) -> bool {
        // The names first: with no `--per-session`, no lock on the call path.
        self.names.iter().any(|name| name == server)
            && self.config.read().expect("per-session config lock").1.servers.contains_key(server)
    }
}
