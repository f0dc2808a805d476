//! The gateway's live traffic: every forwarded call as it ends, to whoever listens
//! ([`Gateway::live`](super::Gateway::live)), e.g. a console's live view.
//!
//! An [`Item::Call`] says what the audit log says of a call (the same fields, built by the
//! same code: [`super::audit`]) less the arguments: never a token, never an argument, never a
//! result. `tools/call` is reported like the audit log reports it, and a call of a tool no
//! upstream offers too (no server, outcome `error`); the other forwarded methods (`prompts/get`,
//! `resources/read`, `completion/complete`, the lists) only while someone listens, so that
//! the gateway pays nothing for them otherwise.
//!
//! The feed is a broadcast of [`CAPACITY`] items: a listener that falls further behind loses
//! the oldest and is told how many ([`Item::Dropped`]); the calls never wait for a listener.
//! Those losses are counted ([`LiveFeed::dropped`]).
//!
//! Not here: serving the feed (the application's: `mcp-bridge serve` streams it as
//! server-sent events at `/ui/api/traffic`), any history: a listener sees what happens after
//! it started listening.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::audit::{self, Entry, Outcome};

/// Items held for the slowest listener; past it, it loses the oldest.
pub const CAPACITY: usize = 1024;

/// One call, as the gateway saw it end.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// When it ended, RFC 3339 in UTC with milliseconds.
    pub time: String,
    /// Who called: the token's name, else the OAuth subject, else the client id (`None`:
    /// anonymous).
    pub caller: Option<String>,
    /// `token`, `subject` or `client`: what [`Call::caller`] is.
    pub caller_kind: Option<&'static str>,
    /// The downstream session's number, if any.
    pub session: Option<u64>,
    /// The method (`tools/call`, `prompts/get` …).
    pub method: String,
    /// The upstream server (`None`: the name routes nowhere, or a list of every server).
    pub server: Option<String>,
    /// The tool, prompt or URI as the upstream knows it (or as asked, when it routes nowhere).
    pub name: String,
    /// How it ended.
    pub outcome: Outcome,
    /// From receiving it to answering, in milliseconds.
    pub latency_ms: f64,
    /// The JSON-RPC id, as the client sent it.
    pub id: Value,
}

impl Call {
    /// The call of `entry`, ended at `now` (an empty `entry.server`: none).
    pub(crate) fn of(entry: &Entry<'_>, now: SystemTime) -> Call {
        let caller = entry.caller.and_then(audit::caller_name);
        Call {
            time: audit::rfc3339(now),
            caller: caller.map(|(_, name)| name.to_owned()),
            caller_kind: caller.map(|(kind, _)| kind),
            session: entry.session,
            method: entry.method.to_owned(),
            server: (!entry.server.is_empty()).then(|| entry.server.to_owned()),
            name: entry.name.to_owned(),
            outcome: entry.outcome,
            latency_ms: audit::latency_ms(entry.latency),
            id: entry.id.clone(),
        }
    }
}

/// What a listener receives.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A call ended.
    Call(Call),
    /// This listener fell behind and lost this many items (the oldest) before the next.
    Dropped(u64),
}

impl Item {
    /// As JSON: `{"kind": "call", "time", "caller", "callerKind", "session", "method",
    /// "server", "name", "outcome", "latencyMs", "id"}` (absent values `null`), or
    /// `{"kind": "dropped", "count"}`.
    pub fn to_json(&self) -> Value {
        match self {
            Item::Call(call) => json!({
                "kind": "call",
                "time": call.time,
                "caller": call.caller,
                "callerKind": call.caller_kind,
                "session": call.session,
                "method": call.method,
                "server": call.server,
                "name": call.name,
                "outcome": call.outcome.as_str(),
                "latencyMs": call.latency_ms,
                "id": call.id,
            }),
            Item::Dropped(count) => json!({"kind": "dropped", "count": count}),
        }
    }
}

/// The sending side: the gateway publishes here, listeners subscribe.
#[derive(Debug)]
pub struct LiveFeed {
    sender: broadcast::Sender<Call>,
    /// Listeners alive: read on every call, so a plain counter rather than the channel's lock.
    listeners: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
}

impl Default for LiveFeed {
    fn default() -> Self {
        LiveFeed::new(CAPACITY)
    }
}

impl LiveFeed {
    /// A feed holding `capacity` items for its slowest listener.
    pub fn new(capacity: usize) -> LiveFeed {
        let (sender, _) = broadcast::channel(capacity.max(1));
        LiveFeed { sender, listeners: Arc::default(), dropped: Arc::default() }
    }

    /// Whether anyone listens now.
    pub fn listening(&self) -> bool {
        self.listeners.load(Ordering::Relaxed) > 0
    }

    /// A listener of the items published from now on.
    pub fn listen(&self) -> Listener {
        self.listeners.fetch_add(1, Ordering::Relaxed);
        Listener { receiver: self.sender.subscribe(), listeners: self.listeners.clone(), dropped: self.dropped.clone() }
    }

    /// Hands `entry`, ended now, to every listener (nothing is built when none listens).
    pub fn publish(&self, entry: &Entry<'_>) {
        if self.listening() {
            let _ = self.sender.send(Call::of(entry, SystemTime::now()));
        }
    }

    /// Items every listener together lost by falling behind, since the start.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// One listener of a [`LiveFeed`]; dropping it stops listening.
#[derive(Debug)]
pub struct Listener {
    receiver: broadcast::Receiver<Call>,
    listeners: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
}

impl Listener {
    /// The next item (`None`: the gateway is gone).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future loses no item.
    pub async fn next(&mut self) -> Option<Item> {
        match self.receiver.recv().await {
            Ok(call) => Some(Item::Call(call)),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                self.dropped.fetch_add(n, Ordering::Relaxed);
                Some(Item::Dropped(n))
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.listeners.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::auth::Principal;

    fn entry<'a>(caller: Option<&'a Principal>, server: &'a str, name: &'a str, id: u64) -> Entry<'a> {
        Entry {
            caller,
            session: Some(3),
            endpoint: None,
            method: "tools/call",
            server,
            name,
            outcome: if name == "fails" { Outcome::ToolError } else { Outcome::Ok },
            latency: Duration::from_micros(2500),
            id: Value::from(id),
            arguments: None,
        }
    }

    #[tokio::test]
    async fn a_listener_gets_the_calls_in_order_never_the_arguments() {
        let feed = LiveFeed::default();
        feed.publish(&entry(None, "s", "before", 0));
        assert!(!feed.listening());
        let mut listener = feed.listen();
        assert!(feed.listening());
        let ci = Principal::named_token("ci");
        let arguments = json!({"secret": "x"}).as_object().cloned().unwrap();
        let mut with_arguments = entry(Some(&ci), "echo", "echo", 1);
        with_arguments.arguments = Some(&arguments);
        feed.publish(&with_arguments);
        feed.publish(&entry(None, "echo", "fails", 2));
        feed.publish(&entry(None, "", "missing", 3));

        let Some(Item::Call(first)) = listener.next().await else { panic!("a call") };
        let mut json = Item::Call(first).to_json();
        assert!(json["time"].as_str().is_some_and(|t| t.ends_with('Z')));
        json["time"] = Value::Null;
        assert_eq!(
            json,
            json!({"kind": "call", "time": null, "caller": "ci", "callerKind": "token", "session": 3,
                "method": "tools/call", "server": "echo", "name": "echo", "outcome": "ok",
                "latencyMs": 2.5, "id": 1})
        );
        let Some(Item::Call(second)) = listener.next().await else { panic!("a call") };
        assert_eq!((second.id, second.outcome), (Value::from(2), Outcome::ToolError));
        let Some(Item::Call(third)) = listener.next().await else { panic!("a call") };
        assert_eq!((third.server, third.name), (None, "missing".to_owned()));
        drop(listener);
        assert!(!feed.listening());
    }

    #[tokio::test]
    async fn a_lagging_listener_is_told_how_many_it_lost() {
        let feed = LiveFeed::new(4);
        let mut slow = feed.listen();
        for id in 0..10 {
            feed.publish(&entry(None, "s", "t", id));
        }
        assert_eq!(slow.next().await, Some(Item::Dropped(6)));
        for id in 6..10 {
            let Some(Item::Call(call)) = slow.next().await else { panic!("a call") };
            assert_eq!(call.id, Value::from(id));
        }
        assert_eq!(feed.dropped(), 6);
        drop(feed);
        assert_eq!(slow.next().await, None);
    }
}
