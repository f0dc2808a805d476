//! A client peer and a server peer over an in-process pair and over pipes.

use std::sync::Mutex as StdMutex;

use serde_json::{json, Value};

use super::*;
use crate::proto::jsonrpc::ErrorCode;
use crate::transport::inproc::{self, InprocTransport};
use crate::transport::stdio::StdioTransport;
use crate::transport::Limits;

/// Answers `initialize`, echoes `echo` after `delay_ms`, never answers `hang`, records what it saw.
#[derive(Default, Clone)]
struct TestServer {
    seen: Arc<StdMutex<Vec<String>>>,
}

impl<T: Transport> Handler<T> for TestServer {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        self.seen.lock().unwrap().push(format!("request {}", request.method));
        let peer = peer.clone();
        tokio::spawn(async move {
            let outcome = match request.method.as_str() {
                "initialize" => Ok(Body::typed(json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": {"name": "t", "version": "1"}}))),
                "echo" => {
                    let params: Value = request.params_as().unwrap();
                    let delay = params["delay_ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    Ok(Body::typed(params))
                }
                "hang" => return,
                _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
            };
            peer.respond(&request.id, outcome).await.unwrap();
        });
    }

    fn on_cancelled(&self, _peer: &Peer<T>, id: &Id) {
        self.seen.lock().unwrap().push(format!("cancelled {id}"));
    }

    fn on_initialized(&self, _peer: &Peer<T>) {
        self.seen.lock().unwrap().push("initialized".to_owned());
    }
}

struct Silent;
impl<T: Transport> Handler<T> for Silent {
    fn on_request(&self, _peer: &Peer<T>, _request: Request) {}
}

async fn connected() -> (Peer<InprocTransport>, TestServer) {
    let (a, b) = inproc::pair(Limits::default());
    let server_handler = TestServer::default();
    let _server =
        Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), server_handler.clone());
    let client = Peer::start(a, Role::Client, Mode::Handshake, session::SessionLimits::default(), Silent);
    client.request("initialize", Some(Body::typed(json!({}))), RequestOptions::default()).await.unwrap();
    client.initialized().await.unwrap();
    (client, server_handler)
}

/// A client and a server whose in-flight caps are `cap` each, the client's past-the-cap policy
/// `when_full`: a request the client let through past the cap would be refused by the server.
async fn capped(cap: usize, when_full: session::WhenFull) -> (Peer<InprocTransport>, TestServer) {
    let (a, b) = inproc::pair(Limits::default());
    let server_handler = TestServer::default();
    let limits = session::SessionLimits {
        max_outgoing_in_flight: cap,
        max_incoming_in_flight: cap,
        when_full,
        ..Default::default()
    };
    let _server = Peer::start(b, Role::Server, Mode::Stateless, limits, server_handler.clone());
    let client = Peer::start(a, Role::Client, Mode::Stateless, limits, Silent);
    (client, server_handler)
}

fn echo(i: u64, delay_ms: u64) -> Option<Body> {
    Some(Body::typed(json!({"i": i, "delay_ms": delay_ms})))
}

#[tokio::test]
async fn many_requests_in_flight_complete_out_of_order() {
    let (client, _) = connected().await;
    let calls = (0..50u64).map(|i| {
        let client = client.clone();
        async move { client.request("echo", echo(i, (50 - i) % 7), RequestOptions::default()).await }
    });
    let results = futures_join_all(calls).await;
    for (i, result) in results.into_iter().enumerate() {
        let value: Value = result.unwrap().decode().unwrap();
        assert_eq!(value["i"], i as u64);
    }
}

#[tokio::test]
async fn requests_past_the_cap_wait_for_a_slot_and_all_complete() {
    let (client, server) = capped(3, session::WhenFull::Wait).await;
    let calls = (0..40u64).map(|i| {
        let client = client.clone();
        async move { client.request("echo", echo(i, i % 4), RequestOptions::default()).await }
    });
    for (i, result) in futures_join_all(calls).await.into_iter().enumerate() {
        let value: Value = result.unwrap_or_else(|e| panic!("call {i}: {e}")).decode().unwrap();
        assert_eq!(value["i"], i as u64);
    }
    assert_eq!(server.seen.lock().unwrap().len(), 40, "each request sent once");
}

#[tokio::test]
async fn with_refuse_a_request_past_the_cap_fails_at_once() {
    let (client, server) = capped(2, session::WhenFull::Refuse).await;
    let hanging: Vec<_> = (0..2)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.request("hang", None, RequestOptions::default()).await })
        })
        .collect();
    while server.seen.lock().unwrap().len() < 2 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let err = client.request("echo", echo(9, 0), RequestOptions::default()).await.unwrap_err();
    assert!(matches!(err, RequestError::Session(SessionError::TooManyInFlight { limit: 2 })), "{err}");
    hanging.iter().for_each(|h| h.abort());
}

#[tokio::test]
async fn a_wait_for_a_slot_counts_against_the_timeout_and_dropping_it_sends_nothing() {
    let (client, server) = capped(1, session::WhenFull::Wait).await;
    let hang = tokio::spawn({
        let client = client.clone();
        async move { client.request("hang", None, RequestOptions::default()).await }
    });
    while server.seen.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let options = RequestOptions { timeout: Some(Duration::from_millis(40)), ..RequestOptions::default() };
    let err = client.request("echo", echo(1, 0), options).await.unwrap_err();
    assert_eq!(err.to_string(), "echo timed out after 40 ms");
    // A waiting request dropped before it got a slot was never sent.
    let _ =
        tokio::time::timeout(Duration::from_millis(20), client.request("echo", echo(2, 0), RequestOptions::default()))
            .await;
    assert_eq!(*server.seen.lock().unwrap(), ["request hang"]);
    // The slot frees when the hanging request goes: the next one is sent and answered.
    hang.abort();
    let value: Value = client.request("echo", echo(3, 0), RequestOptions::default()).await.unwrap().decode().unwrap();
    assert_eq!(value["i"], 3);
}

/// Answers `slow` after `delay_ms`, counting how many of its handlers run at once.
#[derive(Default, Clone)]
struct CountingServer {
    running: Arc<std::sync::atomic::AtomicUsize>,
    most: Arc<std::sync::atomic::AtomicUsize>,
    handled: Arc<std::sync::atomic::AtomicUsize>,
}

impl<T: Transport> Handler<T> for CountingServer {
    fn on_request(&self, peer: &Peer<T>, request: Request) {
        use std::sync::atomic::Ordering::SeqCst;
        let (peer, running, most) = (peer.clone(), self.running.clone(), self.most.clone());
        let now = running.fetch_add(1, SeqCst) + 1;
        most.fetch_max(now, SeqCst);
        self.handled.fetch_add(1, SeqCst);
        tokio::spawn(async move {
            let params: Value = request.params_as().unwrap();
            tokio::time::sleep(Duration::from_millis(params["delay_ms"].as_u64().unwrap_or(0))).await;
            running.fetch_sub(1, SeqCst);
            peer.respond(&request.id, Ok(Body::typed(params))).await.unwrap();
        });
    }
}

/// A client that never waits (it refuses past a cap of 1000) against a server whose cap is
/// `server_cap` and whose policy past it is `when_full`.
async fn flooding(server_cap: usize, when_full: session::WhenFull) -> (Peer<InprocTransport>, CountingServer) {
    let (a, b) = inproc::pair(Limits::default());
    let server = CountingServer::default();
    let limits = session::SessionLimits { max_incoming_in_flight: server_cap, when_full, ..Default::default() };
    let _server = Peer::start(b, Role::Server, Mode::Stateless, limits, server.clone());
    let limits = session::SessionLimits {
        max_outgoing_in_flight: 1000,
        when_full: session::WhenFull::Refuse,
        ..Default::default()
    };
    let client = Peer::start(a, Role::Client, Mode::Stateless, limits, Silent);
    (client, server)
}

#[tokio::test]
async fn a_server_past_its_cap_holds_requests_back_instead_of_refusing_them() {
    // 300 requests at once against a cap of 4: more than the held queue (256), so the server
    // also stops reading for a while. Every one is answered, with its own result, and never
    // more than 4 handlers ran at once.
    let (client, server) = flooding(4, session::WhenFull::Wait).await;
    let calls = (0..300u64).map(|i| {
        let client = client.clone();
        async move { client.request("slow", echo(i, i % 3), RequestOptions::default()).await }
    });
    for (i, result) in futures_join_all(calls).await.into_iter().enumerate() {
        let value: Value = result.unwrap_or_else(|e| panic!("call {i}: {e}")).decode().unwrap();
        assert_eq!(value["i"], i as u64);
    }
    assert_eq!(server.most.load(std::sync::atomic::Ordering::SeqCst), 4);
    assert_eq!(server.handled.load(std::sync::atomic::Ordering::SeqCst), 300, "each handled once");
}

#[tokio::test]
async fn a_server_that_refuses_past_its_cap_answers_32603() {
    let (client, _) = flooding(2, session::WhenFull::Refuse).await;
    let calls = (0..6u64).map(|i| {
        let client = client.clone();
        async move { client.request("slow", echo(i, 200), RequestOptions::default()).await }
    });
    let refused = futures_join_all(calls)
        .await
        .into_iter()
        .filter(|r| matches!(r, Err(RequestError::Rpc(e)) if e.code == ErrorCode::INTERNAL_ERROR))
        .count();
    assert_eq!(refused, 4, "two run, four are refused");
}

#[tokio::test]
async fn a_held_request_the_peer_cancels_is_never_run() {
    let (client, server) = flooding(1, session::WhenFull::Wait).await;
    let first = tokio::spawn({
        let client = client.clone();
        async move { client.request("slow", echo(1, 300), RequestOptions::default()).await }
    });
    while server.most.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The second is held behind the first; dropping it sends notifications/cancelled.
    let _ =
        tokio::time::timeout(Duration::from_millis(50), client.request("slow", echo(2, 0), RequestOptions::default()))
            .await;
    let third: Value = client.request("slow", echo(3, 0), RequestOptions::default()).await.unwrap().decode().unwrap();
    assert_eq!(third["i"], 3);
    first.await.unwrap().unwrap();
    assert_eq!(
        server.handled.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the cancelled one never reached a handler"
    );
    assert_eq!(server.most.load(std::sync::atomic::Ordering::SeqCst), 1);
}

async fn futures_join_all<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn errors_come_back_as_rpc_errors() {
    let (client, _) = connected().await;
    let err = client.request("nope", None, RequestOptions::default()).await.unwrap_err();
    assert!(matches!(&err, RequestError::Rpc(e) if e.code == ErrorCode::METHOD_NOT_FOUND), "{err}");
}

#[tokio::test]
async fn dropping_a_call_cancels_it_on_the_other_side() {
    let (client, server) = connected().await;
    let call = client.request("hang", None, RequestOptions::default());
    let _ = tokio::time::timeout(Duration::from_millis(20), call).await;
    // The server sees the cancellation of request 1 (0 was initialize).
    for _ in 0..100 {
        if server.seen.lock().unwrap().iter().any(|s| s == "cancelled 1") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no cancellation seen: {:?}", server.seen.lock().unwrap());
}

#[tokio::test]
async fn a_request_times_out_and_the_peer_is_told() {
    let (client, server) = connected().await;
    let options = RequestOptions { timeout: Some(Duration::from_millis(30)), ..RequestOptions::default() };
    let err = client.request("hang", None, options).await.unwrap_err();
    assert_eq!(err.to_string(), "hang timed out after 30 ms");
    // Other requests are unaffected.
    client.request("echo", echo(1, 0), RequestOptions::default()).await.unwrap();
    assert!(server.seen.lock().unwrap().iter().any(|s| s == "cancelled 1"));
}

#[tokio::test]
async fn the_end_of_the_connection_fails_waiting_requests() {
    let (a, b) = inproc::pair(Limits::default());
    let client = Peer::start(a, Role::Client, Mode::Stateless, session::SessionLimits::default(), Silent);
    let pending = {
        let client = client.clone();
        tokio::spawn(async move { client.request("anything", None, RequestOptions::default()).await })
    };
    // The server side reads the request, then goes away without answering.
    let request = b.recv().await.unwrap().unwrap();
    assert_eq!(request.method(), Some("anything"));
    drop(b);
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(err, RequestError::Closed { .. }), "{err}");
    client.closed().await;
    let err = client.request("later", None, RequestOptions::default()).await.unwrap_err();
    assert!(matches!(err, RequestError::Closed { .. }), "{err}");
}

#[tokio::test]
async fn malformed_input_is_answered_and_does_not_stop_the_reader() {
    let (client_io, server_io) = tokio::io::duplex(4096);
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let (server_read, server_write) = tokio::io::split(server_io);
    let transport = StdioTransport::from_io(server_read, server_write, Limits::default());
    let _server =
        Peer::start(transport, Role::Server, Mode::Handshake, session::SessionLimits::default(), TestServer::default());
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    client_write
        .write_all(b"{oops\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n")
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["error"]["code"], -32700);
    assert!(first.get("id").is_none());
    let second: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(second["id"], 1);
    assert_eq!(second["result"]["protocolVersion"], "2025-11-25");
}

/// Records requests without answering them; the test answers through the peer it gets back.
#[derive(Default, Clone)]
struct Collect {
    requests: Arc<StdMutex<Vec<Id>>>,
}

impl<T: Transport> Handler<T> for Collect {
    fn on_request(&self, _peer: &Peer<T>, request: Request) {
        self.requests.lock().unwrap().push(request.id);
    }
}

#[tokio::test]
async fn after_the_input_ends_requests_received_can_still_be_answered_until_close() {
    let (a, b) = inproc::pair(Limits::default());
    let collect = Collect::default();
    let server = Peer::start(b, Role::Server, Mode::Stateless, session::SessionLimits::default(), collect.clone());
    a.send(Message::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#).unwrap()).await.unwrap();
    a.send(Message::from_str(r#"{"jsonrpc":"2.0","id":2,"method":"x"}"#).unwrap()).await.unwrap();
    a.close().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), server.closed()).await.unwrap();
    assert_eq!(*collect.requests.lock().unwrap(), [Id::Number(1), Id::Number(2)]);
    assert!(matches!(server.request("y", None, RequestOptions::default()).await, Err(RequestError::Closed { .. })));

    // `respond_now` records the answer at once and sends it later; `respond` sends it now.
    let queued = server.respond_now(&Id::Number(1), Ok(Body::typed(json!({"n": 1}))));
    assert!(queued.sent());
    assert!(server.respond(&Id::Number(2), Ok(Body::typed(json!({"n": 2})))).await.unwrap());
    assert!(queued.send().await.unwrap());
    assert!(!server.respond(&Id::Number(2), Ok(Body::typed(json!({})))).await.unwrap(), "answered already");
    server.close().await.unwrap();
    assert!(!server.respond(&Id::Number(9), Ok(Body::typed(json!({})))).await.unwrap(), "closed");

    let mut answers = Vec::new();
    while let Some(message) = a.recv().await.unwrap() {
        answers.push(message.to_string());
    }
    assert_eq!(
        answers,
        [r#"{"jsonrpc":"2.0","id":2,"result":{"n":2}}"#, r#"{"jsonrpc":"2.0","id":1,"result":{"n":1}}"#]
    );
}

/// Polls `future` once (it must not complete on its first poll).
async fn poll_once<F: Future + Unpin>(future: &mut F) {
    tokio::select! {
        biased;
        _ = future => panic!("completed on its first poll"),
        () = std::future::ready(()) => {}
    }
}

#[tokio::test]
async fn a_request_carries_its_caller_while_in_flight_and_no_longer() {
    let (client, _server) = connected().await;
    assert_eq!(client.sole_caller(), None);
    let hang = |caller: Option<u64>| {
        let request = client.request("hang", None, RequestOptions::default());
        Box::pin(async move {
            match caller {
                Some(c) => with_caller(CallerId(c), request).await,
                None => request.await,
            }
        })
    };
    let mut first = hang(Some(1));
    poll_once(&mut first).await;
    assert_eq!(client.sole_caller(), Some(CallerId(1)));
    // Requests without a caller do not count.
    let mut untagged = hang(None);
    poll_once(&mut untagged).await;
    assert_eq!(client.sole_caller(), Some(CallerId(1)));
    // Two callers: nobody.
    let mut second = hang(Some(2));
    poll_once(&mut second).await;
    assert_eq!(client.sole_caller(), None);
    // A dropped request no longer counts.
    drop(second);
    assert_eq!(client.sole_caller(), Some(CallerId(1)));
    // Nor one that timed out, nor one answered.
    let timed_out = with_caller(
        CallerId(3),
        client.request("hang", None, RequestOptions { timeout: Some(Duration::from_millis(20)), ..Default::default() }),
    )
    .await;
    assert!(matches!(timed_out, Err(RequestError::Timeout { .. })), "{timed_out:?}");
    let answered = with_caller(CallerId(4), client.request("echo", echo(1, 0), RequestOptions::default())).await;
    assert!(answered.is_ok());
    let failed = with_caller(CallerId(5), client.request("nope", None, RequestOptions::default())).await;
    assert!(matches!(failed, Err(RequestError::Rpc(_))));
    assert_eq!(client.sole_caller(), Some(CallerId(1)));
    drop(first);
    assert_eq!(client.sole_caller(), None);
    drop(untagged);
}

#[test]
fn the_own_id_hasher_puts_consecutive_ids_in_distinct_buckets() {
    use std::hash::BuildHasher;
    // The table indexes by the hash's low bits: 1,024 consecutive ids (as the session allocates
    // them) must fill a table of 1,024 buckets without a collision.
    let buckets: std::collections::HashSet<u64> = (0..1024).map(|n| OwnIds.hash_one(Id::Number(n)) & 1023).collect();
    assert_eq!(buckets.len(), 1024);
    // String ids (never ours, but the type allows them) hash by content.
    assert_ne!(OwnIds.hash_one(Id::from("a")), OwnIds.hash_one(Id::from("b")));
    assert_eq!(OwnIds.hash_one(Id::from("a")), OwnIds.hash_one(Id::from("a")));
}
