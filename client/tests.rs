//! The client over the in-process transport: typed bodies cross without being serialized.

use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use serde_json::json;

use std::collections::HashSet;

use super::*;
use crate::peer::Handler;
use crate::proto::jsonrpc::{ErrorCode, ErrorObject, Notification, Request};
use crate::proto::mcp_types::ElicitRequestParams;
use crate::proto::mcp_types::{
    CallToolOutput, CallToolRequestParams, CallToolResult, EmptyResult, InitializeRequestParams, LoggingLevel,
};
use crate::proto::mcp_types::{ContentBlock, TextContent, ToolsCapability};
use crate::proto::session::{self, Mode, Role};
use crate::transport::inproc::{self, InprocTransport};
use crate::transport::Limits;

/// A server peer that answers with typed results and counts params that arrived as raw JSON.
#[derive(Clone, Default)]
struct TypedServer {
    raw_params: Arc<AtomicUsize>,
}

impl Handler<InprocTransport> for TypedServer {
    fn on_request(&self, peer: &Peer<InprocTransport>, request: Request) {
        if request.params.as_ref().is_some_and(|p| p.as_raw().is_some()) {
            self.raw_params.fetch_add(1, Ordering::Relaxed);
        }
        let outcome = match request.method.as_str() {
            "initialize" => {
                let params: InitializeRequestParams = request.params.clone().unwrap().into_decoded().unwrap();
                Ok(Body::typed(InitializeResult {
                    protocol_version: params.protocol_version,
                    capabilities: ServerCapabilities {
                        tools: Some(ToolsCapability::default()),
                        ..ServerCapabilities::default()
                    },
                    server_info: Implementation { name: "typed".into(), version: "1".into(), ..Default::default() },
                    ..InitializeResult::default()
                }))
            }
            "tools/call" => {
                let params: CallToolRequestParams = request.params.clone().unwrap().into_decoded().unwrap();
                let text = format!("{} {}", params.name, Value::Object(params.arguments.unwrap_or_default()));
                Ok(Body::typed(CallToolOutput::Result(CallToolResult {
                    content: vec![ContentBlock::Text(TextContent { text, ..TextContent::default() })],
                    ..CallToolResult::default()
                })))
            }
            "ping" => Ok(Body::typed(EmptyResult::default())),
            _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
        };
        let peer = peer.clone();
        tokio::spawn(async move {
            let _ = peer.respond(&request.id, outcome).await;
        });
    }
}

#[tokio::test]
async fn the_in_process_path_never_serializes() {
    let (a, b) = inproc::pair(Limits::default());
    let server = TypedServer::default();
    let _server = Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), server.clone());
    // Legacy: the discover probe of `auto` is serialized JSON by design.
    let client = Client::connect(a, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();
    assert_eq!(client.server_info().name, "typed");
    let result = client.call_tool("add", json!({"a": 1}).as_object().cloned(), Default::default()).await.unwrap();
    assert_eq!(
        result.content,
        [ContentBlock::Text(TextContent { text: "add {\"a\":1}".into(), ..Default::default() })]
    );
    client.ping().await.unwrap();
    let err = client.list_tools().await.unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(ErrorCode::METHOD_NOT_FOUND));
    assert_eq!(server.raw_params.load(Ordering::Relaxed), 0, "every request arrived as a Rust value");
}

#[tokio::test]
async fn a_closed_in_process_connection_is_not_a_server_exit() {
    let (a, b) = inproc::pair(Limits::default());
    let server =
        Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), TypedServer::default());
    let client = Client::connect(a, ClientOptions::default()).await.unwrap();
    let _ = server.close().await;
    let err = client.ping().await.unwrap_err();
    assert!(matches!(err, ClientError::Closed { .. }), "{err:?}");
}

async fn server_asks(
    server: &Peer<InprocTransport>,
    method: &str,
    params: serde_json::Value,
) -> Result<Value, crate::peer::RequestError> {
    // The server may not have read `notifications/initialized` yet.
    for _ in 0..100 {
        if server.request("ping", None, RequestOptions::default()).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let options = RequestOptions { timeout: Some(Duration::from_secs(5)), ..RequestOptions::default() };
    let body = server.request(method, Some(Body::serialized(&params).unwrap()), options).await?;
    Ok(body.into_decoded::<Value>().unwrap())
}

fn rpc_code(outcome: Result<Value, crate::peer::RequestError>) -> Option<ErrorCode> {
    match outcome {
        Err(crate::peer::RequestError::Rpc(e)) => Some(e.code),
        other => panic!("expected an error response, got {other:?}"),
    }
}

#[tokio::test]
async fn requests_for_undeclared_capabilities_are_method_not_found() {
    let (a, b) = inproc::pair(Limits::default());
    let server =
        Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), TypedServer::default());
    let _client = Client::connect(a, ClientOptions::default()).await.unwrap();
    let sampling = json!({"messages": [], "maxTokens": 5});
    assert_eq!(
        rpc_code(server_asks(&server, "sampling/createMessage", sampling).await),
        Some(ErrorCode::METHOD_NOT_FOUND)
    );
    let form = json!({"message": "?", "requestedSchema": {"type": "object", "properties": {}}});
    assert_eq!(rpc_code(server_asks(&server, "elicitation/create", form).await), Some(ErrorCode::METHOD_NOT_FOUND));
    assert_eq!(rpc_code(server_asks(&server, "roots/list", json!({})).await), Some(ErrorCode::METHOD_NOT_FOUND));
    assert_eq!(server_asks(&server, "ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn a_roots_handler_answers_each_roots_list_and_wins_over_static_roots() {
    let (a, b) = inproc::pair(Limits::default());
    let server =
        Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), TypedServer::default());
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let handler = move || {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        async move { Ok(vec![serde_json::from_value::<Root>(json!({"uri": format!("file:///n{n}")})).unwrap()]) }
    };
    let static_root: Root = serde_json::from_value(json!({"uri": "file:///static"})).unwrap();
    let options =
        ClientOptions::default().with_era(EraPolicy::Legacy).with_roots([static_root]).with_roots_handler(handler);
    assert_eq!(options.declared_capabilities().roots.and_then(|r| r.list_changed), Some(true));
    let client = Client::connect(a, options).await.unwrap();
    assert_eq!(server_asks(&server, "roots/list", json!({})).await.unwrap(), json!({"roots": [{"uri": "file:///n1"}]}));
    assert_eq!(server_asks(&server, "roots/list", json!({})).await.unwrap(), json!({"roots": [{"uri": "file:///n2"}]}));
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    assert_eq!(client.roots(), None, "the handler's roots are not kept");
    assert!(matches!(client.set_roots([]).await, Err(ClientError::NotDeclared { .. })));
    client.notify_roots_changed().await.unwrap();
}

#[tokio::test]
async fn an_undeclared_elicitation_mode_is_invalid_params() {
    let (a, b) = inproc::pair(Limits::default());
    let server =
        Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), TypedServer::default());
    let handler = |_p: ElicitRequestParams| async {
        Ok(serde_json::from_value::<crate::proto::mcp_types::ElicitResult>(json!({"action": "decline"})).unwrap())
    };
    let _client = Client::connect(a, ClientOptions::default().with_elicitation(handler)).await.unwrap();
    let url = json!({"mode": "url", "message": "go", "url": "https://example.com", "elicitationId": "1"});
    assert_eq!(rpc_code(server_asks(&server, "elicitation/create", url).await), Some(ErrorCode::INVALID_PARAMS));
    let form = json!({"message": "?", "requestedSchema": {"type": "object", "properties": {}}});
    assert_eq!(server_asks(&server, "elicitation/create", form).await.unwrap(), json!({"action": "decline"}));
    let bad = json!({"message": 3});
    assert_eq!(rpc_code(server_asks(&server, "elicitation/create", bad).await), Some(ErrorCode::INVALID_PARAMS));
}

#[tokio::test]
async fn a_cancelled_server_request_stops_its_handler() {
    let (a, b) = inproc::pair(Limits::default());
    let server =
        Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), TypedServer::default());
    let finished = Arc::new(AtomicUsize::new(0));
    let done = finished.clone();
    let slow = move |_p: crate::proto::mcp_types::CreateMessageRequestParams| {
        let done = done.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            done.fetch_add(1, Ordering::SeqCst);
            Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "unreachable"))
        }
    };
    let _client = Client::connect(a, ClientOptions::default().with_sampling(slow)).await.unwrap();
    let ask = server_asks(&server, "sampling/createMessage", json!({"messages": [], "maxTokens": 5}));
    assert!(tokio::time::timeout(Duration::from_millis(50), ask).await.is_err(), "dropped: cancelled");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(finished.load(Ordering::SeqCst), 0, "the handler was aborted");
}

#[tokio::test]
async fn lists_page_to_the_end_and_stop_on_a_repeated_cursor() {
    #[derive(Clone)]
    struct Pager;
    impl Handler<InprocTransport> for Pager {
        fn on_request(&self, peer: &Peer<InprocTransport>, request: Request) {
            let params: Value = request.params.clone().map(|p| p.into_decoded().unwrap()).unwrap_or(json!({}));
            let outcome = match request.method.as_str() {
                "initialize" => Ok(Body::serialized(&json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"resources": {}, "prompts": {}},
                    "serverInfo": {"name": "pager", "version": "1"}
                }))
                .unwrap()),
                // Three pages of resources: a, b, c.
                "resources/list" => {
                    let (uri, next) = match params["cursor"].as_str() {
                        None => ("a", Some("1")),
                        Some("1") => ("b", Some("2")),
                        _ => ("c", None),
                    };
                    let mut page = json!({"resources": [{"uri": uri, "name": uri}]});
                    if let Some(next) = next {
                        page["nextCursor"] = json!(next);
                    }
                    Ok(Body::serialized(&page).unwrap())
                }
                // Prompts: the cursor never changes.
                "prompts/list" => Ok(Body::serialized(&json!({"prompts": [], "nextCursor": "same"})).unwrap()),
                _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
            };
            let peer = peer.clone();
            tokio::spawn(async move {
                let _ = peer.respond(&request.id, outcome).await;
            });
        }
    }
    let (a, b) = inproc::pair(Limits::default());
    let _server = Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), Pager);
    let client = Client::connect(a, ClientOptions::default()).await.unwrap();
    let uris: Vec<String> = client.list_resources().await.unwrap().into_iter().map(|r| r.uri).collect();
    assert_eq!(uris, ["a", "b", "c"]);
    let err = client.list_prompts().await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Pagination { method, cursor, pages: 2 } if method == "prompts/list" && cursor == "same"),
        "{err:?}"
    );
    // Tools were not advertised: refused without asking.
    assert!(matches!(
        client.list_tools().await.unwrap_err(),
        ClientError::CapabilityNotSupported { capability: "tools", .. }
    ));
}

/// A server that logs every request (method and params as JSON, notifications too) and answers
/// with `answer`.
#[derive(Clone)]
struct Scripted {
    log: Arc<Mutex<Vec<(String, Value)>>>,
    ids: Arc<Mutex<Vec<Id>>>,
    answer: Arc<Answer>,
}

/// How [`Scripted`] answers a request: method and params to result or error.
type Answer = dyn Fn(&str, &Value) -> Result<Value, ErrorObject> + Send + Sync;

impl Scripted {
    fn new(answer: impl Fn(&str, &Value) -> Result<Value, ErrorObject> + Send + Sync + 'static) -> Scripted {
        Scripted { log: Arc::default(), ids: Arc::default(), answer: Arc::new(answer) }
    }

    fn log(&self) -> Vec<(String, Value)> {
        self.log.lock().unwrap().clone()
    }

    /// The ids of the requests received, in order.
    fn ids(&self) -> Vec<Id> {
        self.ids.lock().unwrap().clone()
    }
}

impl Handler<InprocTransport> for Scripted {
    fn on_request(&self, peer: &Peer<InprocTransport>, request: Request) {
        let params: Value = request.params.as_ref().map_or(Value::Null, |p| p.decode().unwrap());
        self.log.lock().unwrap().push((request.method.clone(), params.clone()));
        self.ids.lock().unwrap().push(request.id.clone());
        let outcome = (self.answer)(&request.method, &params).map(|v| Body::serialized(&v).unwrap());
        let peer = peer.clone();
        tokio::spawn(async move {
            let _ = peer.respond(&request.id, outcome).await;
        });
    }

    fn on_notification(&self, _peer: &Peer<InprocTransport>, notification: Notification) {
        self.log.lock().unwrap().push((notification.method, Value::Null));
    }

    fn on_initialized(&self, _peer: &Peer<InprocTransport>) {
        self.log.lock().unwrap().push(("notifications/initialized".into(), Value::Null));
    }
}

fn init_result(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}})
}

#[tokio::test]
async fn an_unknown_version_is_offered_as_written_and_only_a_supported_answer_taken() {
    let counter = Scripted::new(|method, _| match method {
        "initialize" => Ok(init_result("2025-11-25")),
        _ => Ok(json!({})),
    });
    let (a, b) = inproc::pair(Limits::default());
    let _server = Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), counter.clone());
    let options = ClientOptions::default().with_era(EraPolicy::Legacy).with_offered_version_str("2099-01-01");
    let client = Client::connect(a, options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(counter.log()[0].1["protocolVersion"], "2099-01-01");
    // A server that echoes the unknown version is refused.
    let echo = Scripted::new(|_, params| Ok(init_result(params["protocolVersion"].as_str().unwrap())));
    let (a, b) = inproc::pair(Limits::default());
    let _server = Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), echo);
    let options = ClientOptions::default().with_era(EraPolicy::Legacy).with_offered_version_str("2099-01-01");
    let err = Client::connect(a, options).await.unwrap_err();
    assert!(matches!(&err, ClientError::UnsupportedVersion { answered, .. } if answered == "2099-01-01"), "{err:?}");
}

#[tokio::test]
async fn a_discover_probe_refused_falls_back_to_initialize() {
    let server = Scripted::new(|method, _| match method {
        "initialize" => Ok(init_result("2025-11-25")),
        "server/discover" => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
        _ => Ok(json!({"tools": []})),
    });
    let (a, b) = inproc::pair(Limits::default());
    let _server = Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), server.clone());
    let options = ClientOptions::default().with_client_info("py", "2").with_discover_first(true);
    let client = Client::connect(a, options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    client.list_tools().await.unwrap();
    let log = server.log();
    let methods: Vec<&str> = log.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["server/discover", "initialize", "notifications/initialized", "tools/list"]);
    assert_eq!(
        log[0].1,
        json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "py", "version": "2"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }})
    );
    assert_eq!(log[3].1, json!({}), "no _meta once initialized");
}

#[tokio::test]
async fn a_discover_answered_gives_a_stateless_session_with_meta_on_every_request() {
    let server = Scripted::new(|method, _| match method {
        "server/discover" => Ok(json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "stateless", "version": "3"}},
        })),
        "tools/list" => Ok(json!({"tools": []})),
        _ => Ok(json!({"echo": true})),
    });
    let (a, b) = inproc::pair(Limits::default());
    let _server = Peer::start(b, Role::Server, Mode::Stateless, session::SessionLimits::default(), server.clone());
    let options = ClientOptions::default().with_client_info("py", "2").with_discover_first(true);
    let client = Client::connect(a, options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_info().name, "stateless");
    client.list_tools().await.unwrap();
    let raw = client.request_raw("vendor/x", Some(json!({"a": 1})), RequestOptions::default()).await.unwrap();
    assert_eq!(raw, json!({"echo": true}));
    let log = server.log();
    let methods: Vec<&str> = log.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["server/discover", "tools/list", "vendor/x"], "no initialize");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "py", "version": "2"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    assert_eq!(log[1].1, json!({"_meta": meta}));
    assert_eq!(log[2].1, json!({"a": 1, "_meta": meta}));
}

#[tokio::test]
async fn request_raw_sends_params_the_typed_api_cannot_express() {
    let server = Scripted::new(|method, params| match method {
        "initialize" => Ok(init_result("2025-11-25")),
        _ => Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("bad params {params}"))),
    });
    let (a, b) = inproc::pair(Limits::default());
    let _server = Peer::start(b, Role::Server, Mode::Handshake, session::SessionLimits::default(), server.clone());
    let client = Client::connect(a, ClientOptions::default()).await.unwrap();
    let err = client.request_raw("tools/call", Some(json!({"arguments": {}})), RequestOptions::default()).await;
    let err = err.unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(ErrorCode::INVALID_PARAMS));
    assert_eq!(server.log().last().unwrap().1, json!({"arguments": {}}));
    // The capability check still applies: the server has no resources.
    assert!(matches!(
        client.request_raw("resources/read", Some(json!({})), RequestOptions::default()).await.unwrap_err(),
        ClientError::CapabilityNotSupported { capability: "resources", .. }
    ));
}

/// A 2026-07-28 server's discovery result with tools, prompts and resources.
fn discovered() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mrtr", "version": "1"}},
    })
}

fn stateless_server(script: Scripted) -> (InprocTransport, Peer<InprocTransport>) {
    let (a, b) = inproc::pair(Limits::default());
    let server = Peer::start(b, Role::Server, Mode::Stateless, session::SessionLimits::default(), script);
    (a, server)
}

fn calls<'a>(log: &'a [(String, Value)], method: &str) -> Vec<&'a Value> {
    log.iter().filter(|(m, _)| m == method).map(|(_, p)| p).collect()
}

#[tokio::test]
async fn input_requests_are_answered_by_the_hosts_handlers_and_the_call_retried_with_the_state() {
    let server = Scripted::new(|method, params| match (method, params["requestState"].as_str()) {
        ("server/discover", _) => Ok(discovered()),
        ("tools/call", None) => Ok(json!({
            "resultType": "input_required",
            "inputRequests": {
                "ask": {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}},
                "sample": {"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "2+2"}}], "maxTokens": 5}},
                "where": {"method": "roots/list"},
            },
            "requestState": "state-1",
        })),
        // Round two asks for nothing: the client retries with the state alone.
        ("tools/call", Some("state-1")) => Ok(json!({"resultType": "input_required", "requestState": "state-2"})),
        ("tools/call", Some(_)) => Ok(json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]})),
        _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
    });
    let (a, _server) = stateless_server(server.clone());
    let options = ClientOptions::default()
        .with_elicitation(|_| async {
            Ok(serde_json::from_value(json!({"action": "accept", "content": {"name": "ada"}})).unwrap())
        })
        .with_sampling(|_| async {
            Ok(serde_json::from_value(
                json!({"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}),
            )
            .unwrap())
        })
        .with_roots([Root { uri: "file:///w".into(), name: None, meta: None, extra: Default::default() }]);
    let client = Client::connect(a, options).await.unwrap();
    let result = client.call_tool("t", json!({"x": 1}).as_object().cloned(), Default::default()).await.unwrap();
    assert_eq!(result.content, [ContentBlock::Text(TextContent { text: "done".into(), ..Default::default() })]);

    let log = server.log();
    let tries = calls(&log, "tools/call");
    assert_eq!(tries.len(), 3);
    assert_eq!(tries[0].get("inputResponses"), None);
    assert_eq!(
        tries[1]["inputResponses"],
        json!({
            "ask": {"action": "accept", "content": {"name": "ada"}},
            "sample": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"},
            "where": {"roots": [{"uri": "file:///w"}]},
        })
    );
    assert_eq!(tries[1]["requestState"], "state-1");
    assert_eq!((tries[2].get("inputResponses"), &tries[2]["requestState"]), (None, &json!("state-2")));
    for retry in &tries[1..] {
        assert_eq!((&retry["name"], &retry["arguments"]), (&json!("t"), &json!({"x": 1})), "the original params");
        assert_eq!(retry["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    }
    let ids = server.ids();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "every retry is a new request: {ids:?}");
}

#[tokio::test]
async fn prompts_get_runs_the_same_loop_and_no_state_means_none_sent() {
    let server = Scripted::new(|method, params| match method {
        "server/discover" => Ok(discovered()),
        "prompts/get" if params.get("inputResponses").is_none() => Ok(json!({
            "resultType": "input_required",
            "inputRequests": {"ok": {"method": "elicitation/create", "params": {"message": "Go?", "requestedSchema": {"type": "object", "properties": {}}}}},
        })),
        "prompts/get" => Ok(json!({"messages": []})),
        _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
    });
    let (a, _server) = stateless_server(server.clone());
    let accept = |_| async { Ok(serde_json::from_value(json!({"action": "accept", "content": {}})).unwrap()) };
    let client = Client::connect(a, ClientOptions::default().with_elicitation(accept)).await.unwrap();
    let prompt = client.get_prompt("p", None).await.unwrap();
    assert!(prompt.messages.is_empty());
    let log = server.log();
    let tries = calls(&log, "prompts/get");
    assert_eq!(tries.len(), 2);
    assert_eq!(tries[1].get("requestState"), None, "no requestState was given, none is sent");
}

#[tokio::test]
async fn an_input_request_without_a_handler_fails_the_call_and_sends_no_retry() {
    let server = Scripted::new(|method, _| match method {
        "server/discover" => Ok(discovered()),
        "tools/call" => Ok(json!({
            "resultType": "input_required",
            "inputRequests": {"ask": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}}},
            "requestState": "s",
        })),
        _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
    });
    let (a, _server) = stateless_server(server.clone());
    let client = Client::connect(a, ClientOptions::default()).await.unwrap();
    let err = client.call_tool("t", None, Default::default()).await.unwrap_err();
    match &err {
        ClientError::InputRequest { method, key, error } => {
            assert_eq!((method.as_str(), key.as_str(), error.code), ("tools/call", "ask", ErrorCode::METHOD_NOT_FOUND));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(calls(&server.log(), "tools/call").len(), 1);
    // The connection is fine: another call goes through.
    assert!(client.call_tool("t", None, Default::default()).await.is_err());
    assert_eq!(calls(&server.log(), "tools/call").len(), 2);
}

#[tokio::test]
async fn a_server_that_never_stops_asking_is_given_up_on_after_the_round_cap() {
    let server = Scripted::new(|method, _| match method {
        "server/discover" => Ok(discovered()),
        _ => Ok(json!({"resultType": "input_required", "requestState": "again"})),
    });
    let (a, _server) = stateless_server(server.clone());
    let client = Client::connect(a, ClientOptions::default().with_max_input_rounds(2)).await.unwrap();
    let err = client.read_resource("file:///x").await.unwrap_err();
    assert!(matches!(&err, ClientError::InputRounds { method, rounds: 2 } if method == "resources/read"), "{err:?}");
    assert_eq!(calls(&server.log(), "resources/read").len(), 3, "the call and two retries");
}

#[tokio::test]
async fn an_unsupported_version_answer_to_the_probe_is_retried_at_a_version_it_names() {
    let probes = Arc::new(AtomicUsize::new(0));
    let seen = probes.clone();
    let server = Scripted::new(move |method, _| match method {
        "server/discover" if seen.fetch_add(1, Ordering::Relaxed) == 0 => {
            Err(ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
                .with_data(&json!({"supported": ["2026-07-28"], "requested": "2026-07-28"}))
                .unwrap())
        }
        "server/discover" => Ok(discovered()),
        _ => Ok(json!({"tools": []})),
    });
    let (a, _server) = stateless_server(server.clone());
    let client = Client::connect(a, ClientOptions::default()).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(calls(&server.log(), "server/discover").len(), 2);

    // Only stateless versions we do not speak: the connection fails, no initialize.
    let modern_only = Scripted::new(|_, _| {
        Err(ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
            .with_data(&json!({"supported": ["2099-01-01"], "requested": "2026-07-28"}))
            .unwrap())
    });
    let (a, _server) = stateless_server(modern_only.clone());
    let err = Client::connect(a, ClientOptions::default()).await.unwrap_err();
    assert!(matches!(&err, ClientError::UnsupportedVersion { answered, .. } if answered == "2099-01-01"), "{err:?}");
    assert!(calls(&modern_only.log(), "initialize").is_empty());
}

#[tokio::test]
async fn a_probe_with_no_answer_falls_back_after_the_discover_timeout() {
    let server = Scripted::new(|method, params| match method {
        "initialize" => Ok(init_result(params["protocolVersion"].as_str().unwrap())),
        _ => Ok(json!({"tools": []})),
    });
    let silent = Arc::new(AtomicUsize::new(0));
    let (a, b) = inproc::pair(Limits::default());
    let _server = Peer::start(
        b,
        Role::Server,
        Mode::Handshake,
        session::SessionLimits::default(),
        Silent { discover: silent.clone(), inner: server.clone(), ignored: usize::MAX },
    );
    let options = ClientOptions::default().with_discover_timeout(Duration::from_millis(100));
    let client = Client::connect(a, options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(silent.load(Ordering::Relaxed), 1);
    client.list_tools().await.unwrap();
}

/// Never answers the first `ignored` `server/discover` requests (some handshake-era servers
/// ignore unknown requests; a slow-starting one may answer only later); everything else goes
/// to `inner`.
struct Silent {
    discover: Arc<AtomicUsize>,
    inner: Scripted,
    ignored: usize,
}

impl Handler<InprocTransport> for Silent {
    fn on_request(&self, peer: &Peer<InprocTransport>, request: Request) {
        if request.method == "server/discover" && self.discover.fetch_add(1, Ordering::Relaxed) < self.ignored {
            return;
        }
        self.inner.on_request(peer, request);
    }

    fn on_initialized(&self, peer: &Peer<InprocTransport>) {
        self.inner.on_initialized(peer);
    }
}

#[tokio::test]
async fn a_list_is_reused_while_its_ttl_lasts_and_evicted_by_list_changed() {
    let server = Scripted::new(|method, _| match method {
        "server/discover" => Ok(discovered()),
        "tools/list" => Ok(json!({"resultType": "complete", "ttlMs": 300, "cacheScope": "private", "tools": []})),
        "prompts/list" => Ok(json!({"resultType": "complete", "ttlMs": 0, "prompts": []})),
        _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
    });
    let (a, server_peer) = stateless_server(server.clone());
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let options = ClientOptions::default().with_handler(move |n: Notification| {
        let _ = seen_tx.send(n.method);
    });
    let client = Client::connect(a, options).await.unwrap();
    let fetches = || calls(&server.log(), "tools/list").len();

    client.list_tools().await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(fetches(), 1, "fresh: served from the cache");

    server_peer.notify("notifications/tools/list_changed", None).await.unwrap();
    assert_eq!(seen.recv().await.as_deref(), Some("notifications/tools/list_changed"));
    client.list_tools().await.unwrap();
    assert_eq!(fetches(), 2, "the notification evicted it");

    client.clear_list_cache();
    client.list_tools().await.unwrap();
    assert_eq!(fetches(), 3);

    tokio::time::sleep(Duration::from_millis(350)).await;
    client.list_tools().await.unwrap();
    assert_eq!(fetches(), 4, "stale after ttlMs");

    // ttlMs 0: immediately stale, never kept.
    client.list_prompts().await.unwrap();
    client.list_prompts().await.unwrap();
    assert_eq!(calls(&server.log(), "prompts/list").len(), 2);
}

#[tokio::test]
async fn a_stateless_session_sets_the_log_level_on_every_later_request_instead_of_sending_set_level() {
    let server = Scripted::new(|method, _| match method {
        "server/discover" => {
            Ok(json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "logging": {}}}))
        }
        "tools/list" => Ok(json!({"tools": []})),
        _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
    });
    let (a, _server) = stateless_server(server.clone());
    let client = Client::connect(a, ClientOptions::default()).await.unwrap();
    client.list_tools().await.unwrap();
    client.set_logging_level(LoggingLevel::Warning).await.unwrap();
    client.list_tools().await.unwrap();
    let log = server.log();
    let methods: Vec<&str> = log.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["server/discover", "tools/list", "tools/list"], "no logging/setLevel");
    assert_eq!(log[1].1["_meta"].get("io.modelcontextprotocol/logLevel"), None);
    assert_eq!(log[2].1["_meta"]["io.modelcontextprotocol/logLevel"], "warning");
}

#[tokio::test]
async fn initialize_refused_as_an_unsupported_version_after_a_silent_probe_gets_one_more_probe() {
    let server = Scripted::new(|method, _| match method {
        "server/discover" => Ok(discovered()),
        "initialize" => Err(ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
            .with_data(&json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}))
            .unwrap()),
        _ => Ok(json!({"tools": []})),
    });
    let probes = Arc::new(AtomicUsize::new(0));
    let (a, b) = inproc::pair(Limits::default());
    let silent = Silent { discover: probes.clone(), inner: server.clone(), ignored: 1 };
    let _server = Peer::start(b, Role::Server, Mode::Stateless, session::SessionLimits::default(), silent);
    let options = ClientOptions::default().with_discover_timeout(Duration::from_millis(100));
    let client = Client::connect(a, options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(probes.load(Ordering::Relaxed), 2);
    let log = server.log();
    let methods: Vec<&str> = log.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["initialize", "server/discover"], "the first probe went unanswered");
    client.list_tools().await.unwrap();
}

#[tokio::test]
async fn dropping_a_call_that_waits_for_an_input_handler_stops_the_handler() {
    let server = Scripted::new(|method, _| match method {
        "server/discover" => Ok(discovered()),
        _ => Ok(json!({
            "resultType": "input_required",
            "inputRequests": {"ask": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}}},
        })),
    });
    let (a, _server) = stateless_server(server.clone());
    let (dropped_tx, dropped) = tokio::sync::oneshot::channel::<()>();
    let dropped_tx = Arc::new(Mutex::new(Some(dropped_tx)));
    /// Tells when the handler's future is dropped.
    struct Tell(Option<tokio::sync::oneshot::Sender<()>>);
    impl Drop for Tell {
        fn drop(&mut self) {
            if let Some(tx) = self.0.take() {
                let _ = tx.send(());
            }
        }
    }
    let never_answers = move |_| {
        let tell = Tell(dropped_tx.lock().unwrap().take());
        async move {
            let _tell = tell;
            std::future::pending::<Result<crate::proto::mcp_types::ElicitResult, ErrorObject>>().await
        }
    };
    let client = Client::connect(a, ClientOptions::default().with_elicitation(never_answers)).await.unwrap();
    let call = tokio::time::timeout(Duration::from_millis(100), client.call_tool("t", None, Default::default())).await;
    assert!(call.is_err(), "the handler never answers");
    tokio::time::timeout(Duration::from_secs(5), dropped).await.expect("the handler was stopped").unwrap();
}
