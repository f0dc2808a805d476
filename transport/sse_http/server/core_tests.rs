//! The whole server driven through its Service ([`HttpService`]) without a socket, on tokio's
//! paused clock: built `http::Request`s in, answers read from the returned bodies. Every bad
//! input the core refuses gets the status and JSON-RPC error the wire tests
//! (`tests/transports/http_server.rs`, `tests/wire/per_request_era.rs`) expect; sessions expire
//! by advancing the virtual clock past the idle timeout; a DELETE racing a POST of its session
//! and a resumption with an unknown event id each end in a defined answer; a session shared by
//! two in-process replicas through the memory stores moves between them (rebuilt, resumed,
//! stray responses dropped, ended everywhere by one DELETE). No listener, no
//! sleeps against the wall clock: every wait is on the paused clock, which jumps when the
//! runtime has nothing else to do, so a hang fails at its (virtual) deadline at once.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper::Request;
use serde_json::{json, Value};

use crate::proto::jsonrpc::{self, Message};
use crate::transport::sse_http::{HttpBody, HttpServerConfig, HttpService, ServerTransport};
use crate::transport::Transport;

const ACCEPT_BOTH: (&str, &str) = ("accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("content-type", "application/json");
const V2025: (&str, &str) = ("mcp-protocol-version", "2025-11-25");
/// Longer than anything the server waits for by itself; on the paused clock it costs nothing.
const DEADLINE: Duration = Duration::from_secs(600);

/// Answers every request at once with an empty result (`initialize` with the version asked),
/// except `hold`, which it never answers.
async fn echo(transport: ServerTransport) {
    while let Ok(Some(message)) = transport.recv().await {
        let Message::Request(request) = message else { continue };
        let result = match request.method.as_str() {
            "hold" => continue,
            "initialize" => {
                let asked = request.params_as::<Value>().ok().and_then(|p| p.get("protocolVersion").cloned());
                json!({"protocolVersion": asked, "capabilities": {}, "serverInfo": {"name": "core", "version": "1"}})
            }
            _ => json!({}),
        };
        let response = jsonrpc::Response::new_ok(request.id, &result).expect("a JSON result");
        if transport.send(Message::Response(response)).await.is_err() {
            return;
        }
    }
}

async fn service(config: HttpServerConfig) -> HttpService {
    HttpService::new(config, echo).await.expect("a valid configuration")
}

struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }

    /// Status, `error.code` and `error.message` of a JSON-RPC error answer.
    fn error(&self) -> (u16, i64, String) {
        assert_eq!(self.headers["content-type"], "application/json");
        let body = self.json();
        let error = &body["error"];
        (self.status, error["code"].as_i64().expect("a code"), error["message"].as_str().unwrap_or("").to_owned())
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `data` of each SSE event with data.
    fn sse_messages(&self) -> Vec<Value> {
        let text = std::str::from_utf8(&self.body).expect("utf-8");
        text.split("\n\n")
            .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter(|data| !data.is_empty())
            .map(|data| serde_json::from_str(data).expect("JSON data"))
            .collect()
    }

    fn sse_ids(&self) -> Vec<&str> {
        let text = std::str::from_utf8(&self.body).expect("utf-8");
        text.lines().filter_map(|l| l.strip_prefix("id: ")).collect()
    }
}

fn request(method: &str, headers: &[(&str, &str)], body: &str) -> Request<Full<Bytes>> {
    let mut builder = Request::builder().method(method).uri("/mcp").header("host", "127.0.0.1:3000");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Full::new(Bytes::from(body.to_owned()))).expect("a valid request")
}

/// The head of the answer, and its body still to be read.
async fn head(service: &HttpService, method: &str, headers: &[(&str, &str)], body: &str) -> hyper::Response<HttpBody> {
    tokio::time::timeout(DEADLINE, service.handle(request(method, headers, body))).await.expect("an answer")
}

/// The whole answer: its body must end.
async fn call(service: &HttpService, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    read_all(head(service, method, headers, body).await).await
}

async fn read_all(answer: hyper::Response<HttpBody>) -> Answer {
    let (parts, body) = answer.into_parts();
    let body = tokio::time::timeout(DEADLINE, body.collect()).await.expect("the body ends").expect("infallible");
    Answer { status: parts.status.as_u16(), headers: parts.headers, body: body.to_bytes() }
}

/// The first chunk of a body that stays open (a standalone GET stream).
async fn first_chunk(body: &mut HttpBody) -> Bytes {
    let frame = tokio::time::timeout(DEADLINE, body.frame()).await.expect("a first chunk");
    frame.expect("the stream is open").expect("infallible").into_data().expect("data")
}

fn initialize(version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "core", "version": "1"}}})
    .to_string()
}

fn ping(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string()
}

/// A ping in session `id`.
async fn ping_in(service: &HttpService, id: &str) -> Answer {
    call(service, "POST", &[ACCEPT_BOTH, JSON, V2025, ("mcp-session-id", id)], &ping(1)).await
}

/// A session past its handshake; its id.
async fn open_session(service: &HttpService) -> String {
    let answer = call(service, "POST", &[ACCEPT_BOTH, JSON], &initialize("2025-11-25")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.sse_messages()[0]["result"]["protocolVersion"], "2025-11-25");
    let id = answer.header("mcp-session-id").expect("a session id").to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let answer = call(service, "POST", &[ACCEPT_BOTH, JSON, V2025, ("mcp-session-id", &id)], &initialized).await;
    assert_eq!((answer.status, answer.body.as_ref()), (202, &b""[..]));
    id
}

#[tokio::test(start_paused = true)]
async fn bad_input_gets_its_status_and_json_rpc_error() {
    let service = service(HttpServerConfig::default().max_body_bytes(1024)).await;
    let init = initialize("2025-11-25");
    let refused = |method, headers: &'static [(&'static str, &'static str)], body: String| {
        let service = service.clone();
        async move { call(&service, method, headers, &body).await.error() }
    };
    let transport = |message: &str| (-32000, message.to_owned());
    let with = |status: u16, (code, message): (i64, String)| (status, code, message);

    let not_acceptable = "Not Acceptable: Client must accept both application/json and text/event-stream";
    assert_eq!(
        refused("POST", &[("accept", "application/json"), JSON], init.clone()).await,
        with(406, transport(not_acceptable))
    );
    assert_eq!(refused("POST", &[JSON], init.clone()).await, with(406, transport(not_acceptable)));
    let unsupported = "Unsupported Media Type: Content-Type must be application/json";
    let text_plain: &[(&str, &str)] = &[ACCEPT_BOTH, ("content-type", "text/plain")];
    assert_eq!(refused("POST", text_plain, init.clone()).await, with(415, transport(unsupported)));
    assert_eq!(refused("POST", &[ACCEPT_BOTH], init.clone()).await, with(415, transport(unsupported)));
    let big = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#, "y".repeat(2000));
    assert_eq!(refused("POST", &[ACCEPT_BOTH, JSON], big).await, with(413, transport("Payload Too Large")));
    let (status, code, _) = refused("POST", &[ACCEPT_BOTH, JSON], "{not json".into()).await;
    assert_eq!((status, code), (400, -32700));
    let (status, code, _) = refused("POST", &[ACCEPT_BOTH, JSON], "[]".into()).await;
    assert_eq!((status, code), (400, -32600), "an empty batch");
    let required = "Bad Request: Mcp-Session-Id header is required";
    assert_eq!(refused("POST", &[ACCEPT_BOTH, JSON], ping(1)).await, with(400, transport(required)));
    let (status, code, _) = refused("PUT", &[], String::new()).await;
    assert_eq!((status, code), (405, -32000));
    let answer = call(&service, "GET", &[("accept", "application/json"), ("mcp-session-id", "x")], "").await;
    assert_eq!(answer.error(), with(406, transport("Not Acceptable: Client must accept text/event-stream")));
    // The refusals' bodies carry no id, as the TypeScript SDK answers them.
    let answer = call(&service, "POST", &[ACCEPT_BOTH, JSON], "{not json").await;
    assert_eq!((answer.json()["jsonrpc"].clone(), answer.json()["id"].clone()), (json!("2.0"), Value::Null));
    // DNS rebinding and foreign origins come first.
    let foreign = request("POST", &[ACCEPT_BOTH, JSON, ("origin", "https://evil.example")], &init);
    let answer = read_all(service.handle(foreign).await).await;
    assert_eq!(answer.error(), with(403, transport("Forbidden: Origin not allowed")));
    let mut rebound = request("POST", &[ACCEPT_BOTH, JSON], &init);
    rebound.headers_mut().insert("host", "evil.example".parse().unwrap());
    let answer = read_all(service.handle(rebound).await).await;
    assert_eq!(answer.error(), with(403, transport("Forbidden: Host not allowed")));
    assert_eq!(service.session_count(), 0, "nothing refused opened a session");
}

#[tokio::test(start_paused = true)]
async fn forged_and_expired_session_ids_are_404_and_a_bad_version_400() {
    let idle = Duration::from_secs(60);
    let service = service(HttpServerConfig::default().session_idle_timeout(idle)).await;
    let id = open_session(&service).await;
    let not_found = (404, -32001, "Session not found".to_owned());
    for forged in ["nope", "0123456789abcdef0123456789abcdef", &id[..id.len() - 1], &format!("{id}0"), "../x"] {
        assert_eq!(ping_in(&service, forged).await.error(), not_found, "{forged}");
    }
    let answer = ping_in(&service, &id).await;
    assert_eq!((answer.status, answer.sse_messages()), (200, vec![json!({"jsonrpc": "2.0", "id": 1, "result": {}})]));
    let other_version = [ACCEPT_BOTH, JSON, ("mcp-protocol-version", "1999-01-01"), ("mcp-session-id", &id)];
    let (status, code, _) = call(&service, "POST", &other_version, &ping(2)).await.error();
    assert_eq!((status, code), (400, -32000));

    // Idle, but not past the timeout: the session stays (the reaper looks every 10 s).
    tokio::time::sleep(idle - Duration::from_secs(5)).await;
    assert_eq!(service.session_count(), 1);
    assert_eq!(ping_in(&service, &id).await.status, 200, "a request makes it active again");
    tokio::time::sleep(idle + idle / 2).await;
    assert_eq!(service.session_count(), 0, "expired on the virtual clock");
    assert_eq!(ping_in(&service, &id).await.error(), not_found);
    let get = [("accept", "text/event-stream"), ("mcp-session-id", id.as_str())];
    assert_eq!(call(&service, "GET", &get, "").await.error(), not_found);
    assert_eq!(call(&service, "DELETE", &[("mcp-session-id", id.as_str())], "").await.error(), not_found);
}

#[tokio::test(start_paused = true)]
async fn a_2026_request_whose_headers_disagree_with_its_body_is_400_with_32020() {
    let service = service(HttpServerConfig::default()).await;
    let v = "2026-07-28";
    let meta = json!({"io.modelcontextprotocol/protocolVersion": v, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "core", "version": "1"}});
    let body = |id: u64, method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = meta.clone();
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    };
    let era = [ACCEPT_BOTH, JSON, ("mcp-protocol-version", v)];
    let post = |headers: Vec<(&'static str, &'static str)>, body: String| {
        let service = service.clone();
        async move {
            let mut all = era.to_vec();
            all.extend(headers);
            call(&service, "POST", &all, &body).await
        }
    };
    // Agreeing headers: served, with no session.
    let answer = post(vec![("mcp-method", "tools/list")], body(1, "tools/list", json!({}))).await;
    assert_eq!((answer.status, answer.json()["id"].clone()), (200, json!(1)), "{:?}", answer.body);
    assert_eq!(answer.header("mcp-session-id"), None);
    // Mcp-Method naming another method than the body's.
    let answer = post(vec![("mcp-method", "prompts/list")], body(2, "tools/list", json!({}))).await;
    assert_eq!(
        (answer.status, answer.json()["error"]["code"].clone(), answer.json()["id"].clone()),
        (400, json!(-32020), json!(2))
    );
    // Mcp-Name naming another tool than the body's.
    let call_body = body(3, "tools/call", json!({"name": "logs", "arguments": {}}));
    let answer = post(vec![("mcp-method", "tools/call"), ("mcp-name", "other")], call_body).await;
    assert_eq!((answer.status, answer.json()["error"]["code"].clone()), (400, json!(-32020)));
    // The header's version against the body's `_meta`.
    let mut older = serde_json::from_str::<Value>(&body(4, "tools/list", json!({}))).unwrap();
    older["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v9");
    let answer = post(vec![("mcp-method", "tools/list")], older.to_string()).await;
    assert_eq!((answer.status, answer.json()["error"]["code"].clone()), (400, json!(-32020)), "{:?}", answer.body);
    // No `_meta` at all: -32602 under the request's id.
    let bare = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}).to_string();
    let answer = post(vec![("mcp-method", "tools/list")], bare).await;
    assert_eq!(
        (answer.status, answer.json()["error"]["code"].clone(), answer.json()["id"].clone()),
        (400, json!(-32602), json!(5))
    );
    // Neither GET nor DELETE exists in this era.
    let get = [("accept", "text/event-stream"), ("mcp-protocol-version", v), ("mcp-session-id", "x")];
    assert_eq!(call(&service, "GET", &get, "").await.status, 405);
    assert_eq!(service.session_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_delete_racing_a_post_of_its_session_ends_the_posts_stream_and_is_200() {
    let service = service(HttpServerConfig::default()).await;
    let id = open_session(&service).await;
    let session = [ACCEPT_BOTH, JSON, V2025, ("mcp-session-id", id.as_str())];
    let held = json!({"jsonrpc": "2.0", "id": 7, "method": "hold"}).to_string();
    // The POST's answer has begun (its head and priming event) when the DELETE comes.
    let post = head(&service, "POST", &session, &held).await;
    assert_eq!(post.status(), 200);
    let delete = call(&service, "DELETE", &[V2025, ("mcp-session-id", id.as_str())], "").await;
    assert_eq!((delete.status, delete.body.as_ref()), (200, &b""[..]));
    // The POST's stream ends: its priming event, and no response (nobody will answer now).
    let post = read_all(post).await;
    assert_eq!(post.header("content-type"), Some("text/event-stream"));
    assert_eq!(post.sse_ids(), ["2_0"]);
    assert!(post.sse_messages().is_empty(), "{:?}", post.body);
    assert_eq!(call(&service, "POST", &session, &ping(8)).await.error(), (404, -32001, "Session not found".into()));

    // Both at once, the DELETE first: the POST finds no session.
    let id = open_session(&service).await;
    let session = [ACCEPT_BOTH, JSON, V2025, ("mcp-session-id", id.as_str())];
    let delete_headers = [("mcp-session-id", id.as_str())];
    let (delete, post) =
        tokio::join!(call(&service, "DELETE", &delete_headers, ""), call(&service, "POST", &session, &held));
    assert_eq!(delete.status, 200);
    // Whichever the runtime ran first, the POST is answered: 404, or a stream that ended.
    match post.status {
        404 => assert_eq!(post.error().1, -32001),
        200 => assert!(post.sse_messages().is_empty(), "{:?}", post.body),
        other => panic!("{other}: {:?}", post.body),
    }
    assert_eq!(service.session_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_resumption_with_an_unknown_event_id_opens_the_standalone_stream_afresh() {
    let service = service(HttpServerConfig::default().keep_alive(Some(Duration::from_secs(15)))).await;
    let id = open_session(&service).await;
    let answer = call(&service, "POST", &[ACCEPT_BOTH, JSON, V2025, ("mcp-session-id", &id)], &ping(1)).await;
    assert_eq!(answer.sse_ids(), ["2_0", "2_1"], "each POST's stream has a name of its own");
    let answer = call(&service, "POST", &[ACCEPT_BOTH, JSON, V2025, ("mcp-session-id", &id)], &ping(2)).await;
    assert_eq!(answer.sse_ids(), ["3_0", "3_1"], "stream names are never reused in a session");

    let get = |last: &'static str| {
        let id = id.clone();
        let service = service.clone();
        async move {
            let headers = [("accept", "text/event-stream"), ("mcp-session-id", id.as_str()), ("last-event-id", last)];
            head(&service, "GET", &headers, "").await
        }
    };
    // A known POST stream from its priming event: what it sent since, and the end.
    let resumed = read_all(get("2_0").await).await;
    assert_eq!(resumed.sse_messages(), [json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
    // Unknown or forged: the standalone stream, with nothing replayed; the first event on it
    // is a keep-alive at the interval.
    let mut fresh = get("99_1").await;
    assert_eq!(
        (fresh.status().as_u16(), fresh.headers()["content-type"].to_str().unwrap()),
        (200, "text/event-stream")
    );
    assert_eq!(first_chunk(fresh.body_mut()).await, ": keep-alive\n");
    // While it is open, another one is a conflict.
    let answer = read_all(get("forged").await).await;
    assert_eq!(answer.error(), (409, -32000, "Conflict: Only one SSE stream is allowed per session".into()));
    drop(fresh);
}

#[tokio::test(start_paused = true)]
async fn a_session_shared_by_two_replicas_moves_between_them_without_a_socket() {
    use std::sync::Arc;

    use crate::transport::sse_http::{EventStore, MemoryEventStore, MemorySessionStore, SessionStore};

    let sessions: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(64));
    let config = || HttpServerConfig::default().session_store(sessions.clone()).event_store(events.clone());
    let (a, b) = (service(config()).await, service(config()).await);
    let id = open_session(&a).await;
    let on = |replica: &HttpService, body: String| {
        let (replica, id) = (replica.clone(), id.clone());
        async move { call(&replica, "POST", &[ACCEPT_BOTH, JSON, V2025, ("mcp-session-id", &id)], &body).await }
    };

    // A ping on A, then one on B, which rebuilds the session from the store.
    let on_a = on(&a, ping(1)).await;
    assert_eq!(on_a.sse_messages(), [json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
    let on_b = on(&b, ping(2)).await;
    assert_eq!(on_b.sse_messages(), [json!({"jsonrpc": "2.0", "id": 2, "result": {}})]);
    let replica_of = |answer: &Answer| answer.sse_ids()[0].split_once('-').expect("a replica's stream").0.to_owned();
    let (replica_a, replica_b) = (replica_of(&on_a), replica_of(&on_b));
    assert_ne!(replica_a, replica_b, "each replica names its own streams");
    assert_eq!((a.session_count(), b.session_count()), (1, 1));

    // A's stream resumed through B, from its priming event: the answer it carried.
    let priming = on_a.sse_ids()[0].to_owned();
    let headers = [("accept", "text/event-stream"), ("mcp-session-id", id.as_str()), ("last-event-id", &priming)];
    let resumed = call(&b, "GET", &headers, "").await;
    assert_eq!(resumed.sse_messages(), on_a.sse_messages());
    assert_eq!(resumed.sse_ids(), on_a.sse_ids()[1..]);

    // Responses to requests no replica here sent: to a replica that never was, and to one
    // of B's own numbers it never used. Both are dropped; the POST is 202 all the same.
    for id in ["deadbeef-1".to_owned(), format!("{replica_b}-99")] {
        let stray = json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string();
        let answer = on(&b, stray).await;
        assert_eq!((answer.status, answer.body.as_ref()), (202, &b""[..]), "{id}");
    }

    // A DELETE through B ends the session everywhere.
    let delete = call(&b, "DELETE", &[V2025, ("mcp-session-id", id.as_str())], "").await;
    assert_eq!(delete.status, 200);
    // A hears of it from the store's announcement, in a task of its own: a bounded number of
    // turns of the runtime, no clock.
    for _ in 0..100 {
        if a.session_count() == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(a.session_count(), 0, "A ended its copy");
    assert_eq!(on(&a, ping(3)).await.error(), (404, -32001, "Session not found".into()));
    assert_eq!(on(&b, ping(4)).await.error(), (404, -32001, "Session not found".into()));
}

#[tokio::test(start_paused = true)]
async fn json_response_mode_batches_and_stateless_posts_answer_in_one_body() {
    use crate::transport::sse_http::server::ResponseMode;

    let service = service(HttpServerConfig::default().response_mode(ResponseMode::Json)).await;
    let answer = call(&service, "POST", &[ACCEPT_BOTH, JSON], &initialize("2025-03-26")).await;
    assert_eq!((answer.status, answer.header("content-type")), (200, Some("application/json")));
    assert_eq!(answer.json()["result"]["protocolVersion"], "2025-03-26");
    let id = answer.header("mcp-session-id").expect("a session id").to_owned();
    let session = [ACCEPT_BOTH, JSON, ("mcp-session-id", id.as_str())];
    let batch = format!("[{},{}]", ping(1), ping(2));
    let answer = call(&service, "POST", &session, &batch).await;
    let mut answers = answer.json().as_array().expect("an array for a batch").clone();
    answers.sort_by_key(|a| a["id"].as_u64());
    assert_eq!(
        answers,
        [json!({"jsonrpc": "2.0", "id": 1, "result": {}}), json!({"jsonrpc": "2.0", "id": 2, "result": {}})]
    );
    // One id twice in a batch: refused whole, naming it.
    let answer = call(&service, "POST", &session, &format!("[{},{}]", ping(3), ping(3))).await;
    let (status, code, message) = answer.error();
    assert_eq!((status, code), (400, -32600));
    assert!(message.contains("carry the id 3"), "{message}");

    // Stateless: each POST answered in one body, no session, no GET.
    let service = service_stateless().await;
    let answer = call(&service, "POST", &[ACCEPT_BOTH, JSON, V2025], &ping(4)).await;
    assert_eq!((answer.status, answer.header("mcp-session-id")), (200, None));
    assert_eq!(answer.json(), json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
    assert_eq!(call(&service, "GET", &[("accept", "text/event-stream")], "").await.status, 405);
    assert_eq!(service.session_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_post_answered_in_one_json_body_is_not_kept_for_resumption() {
    use crate::transport::sse_http::server::ResponseMode;

    let config =
        HttpServerConfig::default().response_mode(ResponseMode::Auto).keep_alive(Some(Duration::from_secs(15)));
    let service = service(config).await;
    let answer = call(&service, "POST", &[ACCEPT_BOTH, JSON], &initialize("2025-11-25")).await;
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let id = answer.header("mcp-session-id").expect("a session id").to_owned();
    let session = [ACCEPT_BOTH, JSON, V2025, ("mcp-session-id", id.as_str())];
    for n in 1..=2 {
        let answer = call(&service, "POST", &session, &ping(n)).await;
        assert_eq!(answer.header("content-type"), Some("application/json"));
        assert_eq!(answer.json(), json!({"jsonrpc": "2.0", "id": n, "result": {}}));
    }
    // The pings' streams (named 2 and 3) gave no event ids and were not kept: an id naming
    // one resumes nothing, and opens the standalone stream afresh, as an unknown id does.
    let headers = [("accept", "text/event-stream"), ("mcp-session-id", id.as_str()), ("last-event-id", "2_0")];
    let mut fresh = head(&service, "GET", &headers, "").await;
    assert_eq!(fresh.status().as_u16(), 200);
    assert_eq!(first_chunk(fresh.body_mut()).await, ": keep-alive\n");
}

async fn service_stateless() -> HttpService {
    service(HttpServerConfig::default().stateless(true)).await
}
