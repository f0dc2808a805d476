//! What a server offers at run time, and the sessions it serves: the tool, resource, template
//! and prompt catalogs behind locks (so that the application can change them while serving,
//! through its [`Server`] handle), the completers, and one [`SessionState`] per initialized
//! connection (its logging level, its resource subscriptions, and a bounded queue of
//! notifications drained by a task of its own, so that notifications leave in order).
//!
//! A change of a catalog sends `notifications/{tools,resources,prompts}/list_changed` to every
//! initialized session. A notification that does not fit in a session's queue
//! ([`NOTIFY_QUEUE`]) is dropped for that session: a slow client never blocks the application.
//!
//! Not here: the wire handling of each method (the dispatch and the feature modules).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;
use tokio::sync::mpsc;

use super::completion::CompleteFn;
use super::own_keys::OwnKeyMap;
use super::prompts::PromptEntry;
use super::resources::{ResourceEntry, TemplateEntry};
use super::{Registered, Server};
use crate::peer::Peer;
use crate::proto::jsonrpc::Body;
use crate::proto::mcp_types::{
    LoggingLevel, LoggingMessageNotificationParams, PromptsCapability, ResourceUpdatedNotificationParams,
    ResourcesCapability, ServerCapabilities, SubscriptionFilter, ToolsCapability,
};
pub(crate) use crate::transport::drops::Drops;
use crate::transport::Transport;
pub use crate::transport::DROP_LOG_EVERY;

/// Notifications that may wait for one session before more are dropped for it.
pub const NOTIFY_QUEUE: usize = 1024;

/// Items by key, in the order they were first added; replacing keeps the place.
pub(crate) struct Registrations<T> {
    items: Vec<(String, Arc<T>)>,
    index: OwnKeyMap<String, usize>,
}

impl<T> Default for Registrations<T> {
    fn default() -> Self {
        Registrations { items: Vec::new(), index: OwnKeyMap::default() }
    }
}

impl<T> Registrations<T> {
    /// Adds or replaces; true when it replaced.
    pub(crate) fn insert(&mut self, key: String, item: T) -> bool {
        let item = Arc::new(item);
        if let Some(&i) = self.index.get(&key) {
            self.items[i].1 = item;
            return true;
        }
        self.index.insert(key.clone(), self.items.len());
        self.items.push((key, item));
        false
    }

    /// Removes; true when it was there.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let Some(i) = self.index.remove(key) else { return false };
        self.items.remove(i);
        for (j, (k, _)) in self.items.iter().enumerate().skip(i) {
            self.index.insert(k.clone(), j);
        }
        true
    }

    pub(crate) fn get(&self, key: &str) -> Option<Arc<T>> {
        self.index.get(key).map(|&i| self.items[i].1.clone())
    }

    pub(crate) fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Arc<T>> {
        self.items.iter().map(|(_, v)| v)
    }
}

/// What a completer completes: an argument of a prompt, or a variable of a resource template.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum CompletionKey {
    Prompt(String, String),
    Template(String, String),
}

/// One queued notification: method and params.
type Queued = (&'static str, Option<Body>);

/// One connection's state, shared by its dispatcher and the registry.
#[derive(Default)]
pub(crate) struct SessionState {
    /// `logging/setLevel`'s threshold; `None` until the client sets one (then everything goes).
    pub(crate) level: Mutex<Option<LoggingLevel>>,
    /// URIs the client subscribed to.
    pub(crate) subscriptions: Mutex<HashSet<String>>,
    /// The queue to the session's notification task, once initialized and until closed.
    queue: Mutex<Option<mpsc::Sender<Queued>>>,
}

impl SessionState {
    /// Queues a notification; false when the session is not open or its queue is full (then
    /// `drops` counts it).
    pub(crate) fn notify(&self, method: &'static str, params: Option<Body>, drops: &Drops) -> bool {
        let queue = self.queue.lock().expect("session queue lock");
        match queue.as_ref().map(|q| q.try_send((method, params))) {
            Some(Ok(())) => true,
            Some(Err(mpsc::error::TrySendError::Full(_))) => {
                drops.note(Some(method), QUEUE_FULL, NOTIFY_QUEUE);
                false
            }
            _ => false,
        }
    }

    /// Whether a message at `level` passes the session's threshold.
    pub(crate) fn wants(&self, level: LoggingLevel) -> bool {
        self.level.lock().expect("level lock").is_none_or(|threshold| level >= threshold)
    }
}

/// The log line when a session's queue ([`NOTIFY_QUEUE`]) is full.
const QUEUE_FULL: &str = "mcpwire: a session's notification queue is full (NOTIFY_QUEUE): notifications dropped";

/// Builder-time and run-time registrations, and the live sessions.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: RwLock<Registrations<Registered>>,
    pub(crate) resources: RwLock<Registrations<ResourceEntry>>,
    pub(crate) templates: RwLock<Registrations<TemplateEntry>>,
    pub(crate) prompts: RwLock<Registrations<PromptEntry>>,
    pub(crate) completers: RwLock<HashMap<CompletionKey, CompleteFn>>,
    sessions: Mutex<HashMap<u64, Arc<SessionState>>>,
    /// Open `subscriptions/listen` streams (2026-07-28), by a key of their own.
    listeners: Mutex<HashMap<u64, Arc<Listener>>>,
    next_session: AtomicU64,
    pub(crate) drops: Drops,
}

/// One `subscriptions/listen` stream: what it agreed to carry and the queue to its task.
pub(crate) struct Listener {
    pub(crate) filter: SubscriptionFilter,
    pub(crate) queue: mpsc::Sender<Queued>,
}

impl Listener {
    /// Whether this stream carries `method` (a list-changed notification).
    fn wants(&self, method: &str) -> bool {
        let flag = match method {
            "notifications/tools/list_changed" => self.filter.tools_list_changed,
            "notifications/prompts/list_changed" => self.filter.prompts_list_changed,
            "notifications/resources/list_changed" => self.filter.resources_list_changed,
            _ => None,
        };
        flag == Some(true)
    }
}

/// Which capabilities a server advertises, fixed when it is built.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Features {
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
    pub(crate) completions: bool,
    /// Served by a forwarder, which does not forward `resources/subscribe`: no `subscribe`.
    pub(crate) forwarded: bool,
}

impl Features {
    /// `tools` (always, with `listChanged`), `resources` (`subscribe`, `listChanged`) and
    /// `prompts` (`listChanged`) when offered, `completions` when there is something to
    /// complete, and `logging` (always: [`Server::log`] can be called on any server).
    pub(crate) fn capabilities(self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(ToolsCapability { list_changed: Some(true), ..ToolsCapability::default() }),
            resources: self.resources.then(|| ResourcesCapability {
                subscribe: (!self.forwarded).then_some(true),
                list_changed: Some(true),
                ..ResourcesCapability::default()
            }),
            prompts: self
                .prompts
                .then(|| PromptsCapability { list_changed: Some(true), ..PromptsCapability::default() }),
            completions: self.completions.then(Default::default),
            logging: Some(Default::default()),
            ..ServerCapabilities::default()
        }
    }
}

impl Registry {
    /// A new session's state (not yet receiving notifications).
    pub(crate) fn new_session(&self) -> (u64, Arc<SessionState>) {
        (self.next_session.fetch_add(1, Ordering::Relaxed), Arc::default())
    }

    /// The session is initialized: start its notification task on `peer` and let it receive.
    pub(crate) fn open_session<T: Transport>(&self, id: u64, state: &Arc<SessionState>, peer: &Peer<T>) {
        let (tx, mut rx) = mpsc::channel::<Queued>(NOTIFY_QUEUE);
        let peer = peer.clone();
        crate::transport::task::spawn(async move {
            while let Some((method, params)) = rx.recv().await {
                if peer.notify(method, params).await.is_err() && peer.is_closed() {
                    break;
                }
            }
        });
        *state.queue.lock().expect("session queue lock") = Some(tx);
        self.sessions.lock().expect("sessions lock").insert(id, state.clone());
    }

    /// The session ended: forget it and end its notification task.
    pub(crate) fn close_session(&self, id: u64, state: &SessionState) {
        state.queue.lock().expect("session queue lock").take();
        self.sessions.lock().expect("sessions lock").remove(&id);
    }

    /// Registers a listen stream; the key removes it.
    pub(crate) fn add_listener(&self, listener: Arc<Listener>) -> u64 {
        let key = self.next_session.fetch_add(1, Ordering::Relaxed);
        self.listeners.lock().expect("listeners lock").insert(key, listener);
        key
    }

    /// Forgets a listen stream: its task ends once its queue is drained.
    pub(crate) fn remove_listener(&self, key: u64) {
        self.listeners.lock().expect("listeners lock").remove(&key);
    }

    fn listeners(&self) -> Vec<Arc<Listener>> {
        self.listeners.lock().expect("listeners lock").values().cloned().collect()
    }

    fn sessions(&self) -> Vec<Arc<SessionState>> {
        self.sessions.lock().expect("sessions lock").values().cloned().collect()
    }

    /// Sends `method` (no params) to every open session.
    pub(crate) fn broadcast(&self, method: &'static str) {
        for session in self.sessions() {
            session.notify(method, None, &self.drops);
        }
        for listener in self.listeners() {
            if listener.wants(method) {
                let _ = listener.queue.try_send((method, None));
            }
        }
    }
}

impl Server {
    /// Sends `notifications/message` to every session whose level (`logging/setLevel`) is at
    /// or below `level`; returns how many sessions it was queued for.
    ///
    /// Before a client sets a level it receives every message: the spec
    /// (`server/utilities/logging`, 2025-11-25) leaves the default to the server, and sending
    /// everything is what lets a client that never calls `logging/setLevel` see the log.
    pub fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) -> usize {
        let params = LoggingMessageNotificationParams {
            level,
            logger: logger.map(str::to_owned),
            data,
            meta: None,
            extra: Default::default(),
        };
        let mut sent = 0;
        for session in self.inner.registry.sessions() {
            let params = Some(Body::typed(params.clone()));
            if session.wants(level) && session.notify("notifications/message", params, &self.inner.registry.drops) {
                sent += 1;
            }
        }
        sent
    }

    /// How many notifications were dropped so far because a session's queue
    /// ([`NOTIFY_QUEUE`]) was full (its client reads more slowly than they come); each time
    /// this grows, at most one log line per [`DROP_LOG_EVERY`] says so.
    pub fn notifications_dropped(&self) -> u64 {
        self.inner.registry.drops.total()
    }

    /// Tells every session subscribed to `uri` (`resources/subscribe`) that it changed
    /// (`notifications/resources/updated`); returns how many were told.
    pub fn resource_updated(&self, uri: &str) -> usize {
        let params = ResourceUpdatedNotificationParams { uri: uri.to_owned(), meta: None, extra: Default::default() };
        let mut sent = 0;
        for session in self.inner.registry.sessions() {
            let subscribed = session.subscriptions.lock().expect("subscriptions lock").contains(uri);
            let updated = Some(Body::typed(params.clone()));
            if subscribed && session.notify("notifications/resources/updated", updated, &self.inner.registry.drops) {
                sent += 1;
            }
        }
        for listener in self.inner.registry.listeners() {
            let subscribed =
                listener.filter.resource_subscriptions.as_ref().is_some_and(|uris| uris.iter().any(|u| u == uri));
            let updated = Some(Body::typed(params.clone()));
            if subscribed && listener.queue.try_send(("notifications/resources/updated", updated)).is_ok() {
                sent += 1;
            }
        }
        sent
    }

    /// Sends `notifications/{tools,resources,prompts}/list_changed` (`kind` is `tools`,
    /// `resources` or `prompts`) to every session and `subscriptions/listen` stream that
    /// wants it: for a catalog that changed outside the registry (a [`forward::Forwarder`]'s).
    /// Another `kind` sends nothing.
    ///
    /// [`forward::Forwarder`]: super::forward::Forwarder
    pub fn list_changed(&self, kind: &str) {
        let method = match kind {
            "tools" => "notifications/tools/list_changed",
            "resources" => "notifications/resources/list_changed",
            "prompts" => "notifications/prompts/list_changed",
            _ => return,
        };
        self.inner.registry.broadcast(method);
    }

    /// How many initialized sessions are being served right now.
    pub fn session_count(&self) -> usize {
        self.inner.registry.sessions.lock().expect("sessions lock").len()
    }
}

/// What the builder collected besides tools.
#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) resources: Vec<ResourceEntry>,
    pub(crate) templates: Vec<TemplateEntry>,
    pub(crate) prompts: Vec<PromptEntry>,
    pub(crate) completers: Vec<(CompletionKey, CompleteFn)>,
    pub(crate) features: Features,
}

impl Pending {
    /// Fills `registry`, refusing duplicates, and says what to advertise.
    pub(crate) fn install(self, registry: &Registry) -> Result<Features, super::ServerError> {
        let duplicate = |kind: &'static str, name: &str| super::ServerError::Duplicate { kind, name: name.to_owned() };
        let mut features = self.features;
        features.resources |= !self.resources.is_empty() || !self.templates.is_empty();
        features.prompts |= !self.prompts.is_empty();
        features.completions |= features.resources || features.prompts || !self.completers.is_empty();
        {
            let mut resources = registry.resources.write().expect("resources lock");
            for entry in self.resources {
                let uri = entry.resource.uri.clone();
                if resources.insert(uri.clone(), entry) {
                    return Err(duplicate("resource", &uri));
                }
            }
        }
        {
            let mut templates = registry.templates.write().expect("templates lock");
            for entry in self.templates {
                let key = entry.template.uri_template.clone();
                if templates.insert(key.clone(), entry) {
                    return Err(duplicate("resource template", &key));
                }
            }
        }
        {
            let mut prompts = registry.prompts.write().expect("prompts lock");
            for entry in self.prompts {
                let name = entry.prompt.name.clone();
                if prompts.insert(name.clone(), entry) {
                    return Err(duplicate("prompt", &name));
                }
            }
        }
        registry.completers.write().expect("completers lock").extend(self.completers);
        Ok(features)
    }
}

impl Server {
    /// Adds (or replaces) a tool while serving, and sends `notifications/tools/list_changed`.
    ///
    /// # Errors
    /// [`ServerError::InvalidInputSchema`](super::ServerError::InvalidInputSchema) when its
    /// input schema is not a JSON object, [`ServerError::InvalidSchema`](super::ServerError::InvalidSchema)
    /// when a schema does not compile; nothing changes then.
    pub fn add_tool<F, Fut>(&self, tool: crate::proto::mcp_types::Tool, handler: F) -> Result<(), super::ServerError>
    where
        F: Fn(serde_json::Map<String, Value>, super::Context) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<crate::proto::mcp_types::CallToolResult, super::ToolError>>
            + Send
            + 'static,
    {
        let handler: super::tool::ToolFn = Arc::new(move |args, ctx| Box::pin(handler(args, ctx)) as super::ToolFuture);
        self.add_registered(Registered::new(tool, handler, false)?);
        Ok(())
    }

    /// Adds (or replaces) a checked tool and sends `list_changed`.
    pub(crate) fn add_registered(&self, registered: Registered) {
        let name = registered.tool.name.clone();
        self.inner.registry.tools.write().expect("tools lock").insert(name, registered);
        self.inner.registry.broadcast("notifications/tools/list_changed");
    }

    /// Removes a tool while serving; sends `list_changed` when it was there. Calls already
    /// running finish.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.inner.registry.tools.write().expect("tools lock").remove(name);
        if removed {
            self.inner.registry.broadcast("notifications/tools/list_changed");
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_find_what_they_hold_in_the_order_first_added() {
        let mut catalog = Registrations::default();
        for n in 0..100 {
            assert!(!catalog.insert(format!("tool_{n}"), n));
        }
        assert!(catalog.insert("tool_7".into(), 700), "replaced");
        assert!(catalog.remove("tool_3"));
        assert!(!catalog.remove("tool_3"));
        assert_eq!(catalog.get("tool_7").as_deref(), Some(&700));
        assert_eq!(catalog.get("tool_99").as_deref(), Some(&99));
        assert!(catalog.get("tool_3").is_none() && !catalog.contains("tool_100"));
        let order: Vec<i32> = catalog.values().map(|v| **v).take(7).collect();
        assert_eq!(order, [0, 1, 2, 4, 5, 6, 700], "replacing keeps the place, removing closes the gap");
    }
}
