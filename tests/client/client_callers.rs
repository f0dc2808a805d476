//! Caller attribution of server-to-client requests ([`with_caller`] / [`current_caller`]) over
//! real transports: two calls of two callers in flight at once on ONE connection, each
//! elicitation reaching the handler in its own caller's scope — over Streamable HTTP against
//! our server (handshake era, and 2026-07-28 with the MRTR loop), through a `ConnectionSet`,
//! and against server-everything; over stdio (no related request) attributed only while a
//! single caller is in flight. Also: the roots handler, asked per `roots/list` in the caller's
//! scope; progress, `_meta` and cancellation through `ConnectionSet::call_tool_on`.
//!
//! The server's tools wait on a barrier of two before asking, so both calls have reached the
//! server before either elicitation is sent: attribution by "latest call" or to "the only
//! caller" would fail these tests.

use crate::examples;
use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire::client::config::McpConfig;
use mcpwire::client::connection_set::{ConnectionSet, SetCallOptions, SetOptions};
use mcpwire::client::{
    current_caller, with_caller, CallerId, Client, ClientOptions, EraPolicy, HandlerFuture, Progress,
};
use mcpwire::proto::jsonrpc::{ErrorObject, Id};
use mcpwire::proto::mcp_types::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    Root,
};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use mcpwire::transport::stdio::ChildCommand;
use mcpwire::transport::Transport;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot, Barrier};

fn args(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

fn root(uri: &str) -> Root {
    serde_json::from_value(json!({"uri": uri})).unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// What the server tells the test.
#[derive(Debug, PartialEq)]
enum Signal {
    /// `hang` started.
    Started,
    /// `hang`'s `ctx.cancelled()` fired.
    Cancelled,
    /// The client said its roots changed (the server forgot those it kept).
    RootsChanged,
}

/// Our server: `ask {who}` waits until a second call has arrived too, then elicits `who`;
/// `roots` lists the client's roots; `progress` reports two steps; `hang` waits to be
/// cancelled; `meta` answers its request's `_meta`.
fn server(signals: mpsc::UnboundedSender<Signal>) -> Server {
    let barrier = Arc::new(Barrier::new(2));
    let roots_changed = signals.clone();
    Server::builder()
        .on_roots_list_changed(move || {
            let _ = roots_changed.send(Signal::RootsChanged);
        })
        .tool("ask", "elicit `who` once a second call is in", json!({"type": "object"}), move |a, ctx| {
            let barrier = barrier.clone();
            async move {
                barrier.wait().await;
                let who = a.get("who").and_then(Value::as_str).unwrap_or("?").to_owned();
                let schema = serde_json::from_value(json!({"type": "object", "properties": {}})).unwrap();
                let answer = ctx.elicit(who.clone(), schema).await?;
                Ok(text_result(format!("{who}: {}", answer.action.as_str())))
            }
        })
        .tool("roots", "the client's roots", json!({"type": "object"}), |_a, ctx| async move {
            let roots = ctx.list_roots().await?;
            Ok(text_result(roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>().join(",")))
        })
        .tool("progress", "two steps", json!({"type": "object"}), |_a, ctx| async move {
            ctx.progress(1.0, Some(2.0), Some("half".into())).await.unwrap();
            ctx.progress(2.0, Some(2.0), Some("done".into())).await.unwrap();
            Ok(text_result("ok"))
        })
        .tool("hang", "waits to be cancelled", json!({"type": "object"}), move |_a, ctx| {
            let signals = signals.clone();
            async move {
                // The handler itself is aborted on cancellation: a task of its own reports it.
                let watched = ctx.clone();
                let report = signals.clone();
                tokio::spawn(async move {
                    watched.cancelled().await;
                    let _ = report.send(Signal::Cancelled);
                });
                let _ = signals.send(Signal::Started);
                std::future::pending::<()>().await;
                Ok(text_result("never"))
            }
        })
        .tool("meta", "its _meta", json!({"type": "object"}), |_a, ctx| async move {
            Ok(text_result(serde_json::to_string(&ctx.meta()).unwrap()))
        })
        .build()
        .unwrap()
}

async fn start() -> (HttpServer, mpsc::UnboundedReceiver<Signal>) {
    let (signals, received) = mpsc::unbounded_channel();
    let server = server(signals);
    let http = server.serve_http(HttpServerConfig::default()).await.unwrap();
    (http, received)
}

/// What a handler recorded, for the test to read.
type Shared<T> = Arc<Mutex<T>>;

/// The caller current where a handler's future runs, read after it has yielded once (so not
/// just where it was built).
async fn caller_in_handler() -> Option<CallerId> {
    tokio::task::yield_now().await;
    current_caller()
}

/// Elicitations seen, by message: the caller current when the handler was called, and where
/// its future ran.
type Seen = Arc<Mutex<BTreeMap<String, (Option<CallerId>, Option<CallerId>)>>>;

fn recording_elicitation(seen: Seen) -> impl Fn(ElicitRequestParams) -> HandlerFuture<ElicitResult> {
    move |params| {
        let ElicitRequestParams::Form(form) = params else { panic!("a form elicitation") };
        let (seen, called_as) = (seen.clone(), current_caller());
        Box::pin(async move {
            let ran_as = caller_in_handler().await;
            seen.lock().unwrap().insert(form.message, (called_as, ran_as));
            Ok(serde_json::from_value(json!({"action": "accept", "content": {}})).unwrap())
        })
    }
}

async fn http_client(http: &HttpServer, options: ClientOptions) -> Client<HttpClientTransport> {
    let transport = HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap();
    Client::connect(transport, options).await.unwrap()
}

/// Two calls under callers 1 and 2 at once on `client`; both answered.
async fn two_callers_ask(client: &Client<HttpClientTransport>) {
    let ask = |who: &str| client.call_tool("ask", args(json!({"who": who})), Default::default());
    let (a, b) = tokio::join!(with_caller(CallerId(1), ask("a")), with_caller(CallerId(2), ask("b")));
    assert_eq!(text(&a.unwrap()), "a: accept");
    assert_eq!(text(&b.unwrap()), "b: accept");
}

fn expected_both() -> BTreeMap<String, (Option<CallerId>, Option<CallerId>)> {
    let both = |caller| (Some(CallerId(caller)), Some(CallerId(caller)));
    BTreeMap::from([("a".to_owned(), both(1)), ("b".to_owned(), both(2))])
}

#[tokio::test(flavor = "multi_thread")]
async fn over_http_each_elicitation_reaches_the_caller_of_its_call() {
    let (http, _signals) = start().await;
    let seen = Seen::default();
    let options =
        ClientOptions::default().with_era(EraPolicy::Legacy).with_elicitation(recording_elicitation(seen.clone()));
    let client = http_client(&http, options).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    two_callers_ask(&client).await;
    assert_eq!(*seen.lock().unwrap(), expected_both());
    // The server's two requests (ids from 0) are forgotten once answered.
    assert!((0..8).all(|n| client.transport().related_request(&Id::Number(n)).is_none()));
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn in_the_mrtr_loop_the_handlers_run_as_the_call_s_caller() {
    let (http, _signals) = start().await;
    let seen = Seen::default();
    let roots_asked: Shared<Vec<Option<CallerId>>> = Arc::default();
    let record = roots_asked.clone();
    let options = ClientOptions::default()
        .with_era(EraPolicy::Adopt(ProtocolVersion::V2026_07_28))
        .with_elicitation(recording_elicitation(seen.clone()))
        .with_roots_handler(move || {
            let record = record.clone();
            async move {
                let caller = caller_in_handler().await;
                record.lock().unwrap().push(caller);
                Ok::<_, ErrorObject>(vec![root("file:///mrtr")])
            }
        });
    let client = http_client(&http, options).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    two_callers_ask(&client).await;
    assert_eq!(*seen.lock().unwrap(), expected_both());
    let roots = with_caller(CallerId(5), client.call_tool("roots", None, Default::default())).await.unwrap();
    assert_eq!(text(&roots), "file:///mrtr");
    assert_eq!(*roots_asked.lock().unwrap(), vec![Some(CallerId(5))]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_roots_handler_is_asked_per_roots_list_as_the_caller() {
    let (http, mut signals) = start().await;
    let asked: Arc<Mutex<Vec<Option<CallerId>>>> = Arc::default();
    let record = asked.clone();
    let options = ClientOptions::default().with_era(EraPolicy::Legacy).with_roots_handler(move || {
        let record = record.clone();
        async move {
            let caller = caller_in_handler().await;
            let mut asked = record.lock().unwrap();
            asked.push(caller);
            Ok::<_, ErrorObject>(vec![root(&format!("file:///r{}", asked.len()))])
        }
    });
    let client = http_client(&http, options).await;
    assert_eq!(client.declared_capabilities().roots.as_ref().and_then(|r| r.list_changed), Some(true));
    let first = with_caller(CallerId(9), client.call_tool("roots", None, Default::default())).await.unwrap();
    assert_eq!(text(&first), "file:///r1");
    // The server keeps the roots until told they changed; then it asks again.
    client.notify_roots_changed().await.unwrap();
    assert_eq!(signals.recv().await, Some(Signal::RootsChanged));
    let second = with_caller(CallerId(10), client.call_tool("roots", None, Default::default())).await.unwrap();
    assert_eq!(text(&second), "file:///r2");
    assert_eq!(*asked.lock().unwrap(), vec![Some(CallerId(9)), Some(CallerId(10))]);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn over_stdio_one_caller_in_flight_is_named_and_two_are_not() {
    let echo = ChildCommand::new(examples::example_path("echo_server").to_string_lossy().into_owned());
    let seen: Arc<Mutex<Vec<Option<CallerId>>>> = Arc::default();
    let (first_arrived, arrived) = oneshot::channel::<()>();
    let (release, released) = oneshot::channel::<()>();
    let gate = Arc::new(Mutex::new(Some((first_arrived, released))));
    let record = seen.clone();
    let options =
        ClientOptions::default().with_era(EraPolicy::Legacy).with_elicitation(move |_p: ElicitRequestParams| {
            let record = record.clone();
            let gate = gate.lock().unwrap().take();
            async move {
                let caller = caller_in_handler().await;
                record.lock().unwrap().push(caller);
                // The first elicitation waits until the second one has been seen.
                if let Some((first_arrived, released)) = gate {
                    let _ = first_arrived.send(());
                    let _ = released.await;
                }
                Ok::<ElicitResult, ErrorObject>(
                    serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada"}})).unwrap(),
                )
            }
        });
    let client = Client::spawn(echo, options).await.unwrap();
    let first = tokio::spawn({
        let client = client.clone();
        with_caller(CallerId(1), async move { client.call_tool("greet", None, Default::default()).await })
    });
    arrived.await.unwrap();
    // Caller 1's call is still in flight (its elicitation waits): caller 2's is ambiguous.
    let second = with_caller(CallerId(2), client.call_tool("greet", None, Default::default())).await.unwrap();
    assert_eq!(text(&second), "Hello, Ada!");
    release.send(()).unwrap();
    assert_eq!(text(&first.await.unwrap().unwrap()), "Hello, Ada!");
    assert_eq!(*seen.lock().unwrap(), vec![Some(CallerId(1)), None]);
    client.close().await.unwrap();
}

fn canned(params: &CreateMessageRequestParams) -> CreateMessageResult {
    let asked = serde_json::to_value(&params.messages[0].content).unwrap();
    serde_json::from_value(json!({
        "role": "assistant",
        "content": {"type": "text", "text": format!("reply to {}", asked["text"].as_str().unwrap_or("?"))},
        "model": "canned",
        "stopReason": "endTurn"
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn against_server_everything_over_http_each_sampling_reaches_its_caller() {
    let server = support::everything_http("streamableHttp");
    let url = format!("http://localhost:{}/mcp", server.port);
    let transport = HttpClientTransport::new(HttpClientConfig::new(url)).unwrap();
    // Both sampling requests must be outstanding at once before either is answered.
    let barrier = Arc::new(Barrier::new(2));
    let seen: Shared<Vec<(String, Option<CallerId>)>> = Arc::default();
    let record = seen.clone();
    let options =
        ClientOptions::default().with_era(EraPolicy::Legacy).with_sampling(move |p: CreateMessageRequestParams| {
            let (barrier, record) = (barrier.clone(), record.clone());
            async move {
                let prompt = serde_json::to_value(&p.messages[0].content).unwrap()["text"].as_str().unwrap().to_owned();
                let caller = caller_in_handler().await;
                record.lock().unwrap().push((prompt, caller));
                barrier.wait().await;
                Ok::<_, ErrorObject>(canned(&p))
            }
        });
    let client = Client::connect(transport, options).await.unwrap();
    let sample = |prompt: &str| {
        client.call_tool(
            "trigger-sampling-request",
            args(json!({"prompt": prompt, "maxTokens": 5})),
            Default::default(),
        )
    };
    let (a, b) = tokio::join!(with_caller(CallerId(1), sample("from-a")), with_caller(CallerId(2), sample("from-b")));
    assert!(text(&a.unwrap()).contains("from-a"));
    assert!(text(&b.unwrap()).contains("from-b"));
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[0].0.ends_with("from-a") && seen[0].1 == Some(CallerId(1)), "{seen:?}");
    assert!(seen[1].0.ends_with("from-b") && seen[1].1 == Some(CallerId(2)), "{seen:?}");
    client.close().await.unwrap();
}

/// A set of one server, `ours`, at `http` in era `era` (`legacy`, `auto` …).
fn set_for(http: &HttpServer, era: &str, options: SetOptions) -> ConnectionSet {
    let url = serde_json::to_string(&http.url()).unwrap();
    let toml = format!("[mcp_servers.ours]\nurl = {url}\nera = \"{era}\"\n");
    ConnectionSet::new(McpConfig::from_toml(&toml, "test.toml").unwrap(), options)
}

#[tokio::test(flavor = "multi_thread")]
async fn through_a_connection_set_handlers_see_server_and_caller() {
    let (http, mut signals) = start().await;
    let seen: Shared<BTreeMap<String, (String, Option<CallerId>)>> = Arc::default();
    let (record, record_roots) = (seen.clone(), seen.clone());
    let options = SetOptions::default()
        .with_elicitation(move |server: String, params: ElicitRequestParams| {
            let ElicitRequestParams::Form(form) = params else { panic!("a form elicitation") };
            let record = record.clone();
            async move {
                let caller = caller_in_handler().await;
                record.lock().unwrap().insert(form.message, (server, caller));
                Ok::<ElicitResult, ErrorObject>(
                    serde_json::from_value(json!({"action": "accept", "content": {}})).unwrap(),
                )
            }
        })
        .with_roots_handler(move |server: String| {
            let record = record_roots.clone();
            async move {
                let caller = caller_in_handler().await;
                let mut record = record.lock().unwrap();
                let asked = format!("roots{}", record.keys().filter(|k| k.starts_with("roots")).count() + 1);
                record.insert(asked.clone(), (server, caller));
                Ok::<_, ErrorObject>(vec![root(&format!("file:///{asked}"))])
            }
        });
    let set = set_for(&http, "legacy", options);
    set.start().await.unwrap();
    let ask = |who: &str| set.call_tool_on("ours", "ask", args(json!({"who": who})), Default::default());
    let (a, b) = tokio::join!(with_caller(CallerId(1), ask("a")), with_caller(CallerId(2), ask("b")));
    assert_eq!((text(&a.unwrap()), text(&b.unwrap())), ("a: accept".to_owned(), "b: accept".to_owned()));
    let roots = with_caller(CallerId(3), set.call_tool_on("ours", "roots", None, Default::default())).await.unwrap();
    assert_eq!(text(&roots), "file:///roots1");
    // A handler's roots changed: the set tells the servers, which ask again.
    assert!(set.notify_roots_changed().await.is_empty());
    assert_eq!(signals.recv().await, Some(Signal::RootsChanged));
    let roots = with_caller(CallerId(4), set.call_tool_on("ours", "roots", None, Default::default())).await.unwrap();
    assert_eq!(text(&roots), "file:///roots2");
    let ours = |caller| ("ours".to_owned(), Some(CallerId(caller)));
    assert_eq!(
        *seen.lock().unwrap(),
        BTreeMap::from([
            ("a".to_owned(), ours(1)),
            ("b".to_owned(), ours(2)),
            ("roots1".to_owned(), ours(3)),
            ("roots2".to_owned(), ours(4))
        ])
    );
    set.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_set_call_relays_progress_and_meta_and_dropping_it_cancels_upstream() {
    progress_meta_and_cancellation("legacy", ProtocolVersion::V2025_11_25).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_in_the_2026_07_28_era() {
    progress_meta_and_cancellation("auto", ProtocolVersion::V2026_07_28).await;
}

async fn progress_meta_and_cancellation(era: &str, expected: ProtocolVersion) {
    let (http, mut signals) = start().await;
    let set = set_for(&http, era, SetOptions::default());
    set.start().await.unwrap();
    assert_eq!(set.status("ours").unwrap().protocol_version, Some(expected));

    let progress: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let record = progress.clone();
    let done = set
        .call_tool_on(
            "ours",
            "progress",
            None,
            SetCallOptions::default().with_progress(move |p| record.lock().unwrap().push(p)),
        )
        .await
        .unwrap();
    assert_eq!(text(&done), "ok");
    let progress: Vec<(Option<f64>, Option<String>)> =
        progress.lock().unwrap().iter().map(|p| (p.progress.as_f64(), p.message.clone())).collect();
    assert_eq!(progress, vec![(Some(1.0), Some("half".into())), (Some(2.0), Some("done".into()))]);

    let options =
        SetCallOptions::default().with_meta("example.com/trace", json!("t-1")).with_meta("progressToken", json!(7));
    let meta = set.call_tool_on("ours", "meta", None, options).await.unwrap();
    let meta: Value = serde_json::from_str(&text(&meta)).unwrap();
    // Extra members pass (beside the 2026-07-28 session members), a caller's progressToken does not.
    assert_eq!(meta["example.com/trace"], "t-1", "{meta}");
    assert_eq!(meta.get("progressToken"), None, "{meta}");

    let mut call = Box::pin(set.call_tool_on("ours", "hang", None, Default::default()));
    tokio::select! {
        outcome = &mut call => panic!("hang answered: {outcome:?}"),
        signal = signals.recv() => assert_eq!(signal, Some(Signal::Started)),
    }
    drop(call);
    let signal = tokio::time::timeout(Duration::from_secs(10), signals.recv()).await;
    assert_eq!(signal.expect("the server saw the cancellation"), Some(Signal::Cancelled));
    set.shutdown().await;
}
