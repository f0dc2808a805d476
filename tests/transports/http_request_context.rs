//! The HTTP request in a handler's context (`Context::http_request`): over loopback on
//! `HttpServer` (a protected resource), a handshake-era call sees the headers of the POST it
//! arrived on (not the initialize's), a 2026-07-28 call those of its own POST, both the peer's
//! address and the verified principal, and never the `Authorization` header; on a mounted
//! `HttpService` driven with a body type of the caller's (no socket), the handler sees the
//! extensions the application inserted, the address only when the application gave one, and
//! the body cap holds for that body type; resource, prompt and completion handlers see the
//! headers of their request as tool handlers do, and so does a forwarding server's forwarder.

use crate::http_support;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use http_support::{raw, BOTH, JSON, SHORT};
use mcpwire::auth::{Principal, ProtectedResource, StaticTokenVerifier};
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpServerConfig, HttpService, RemoteAddr};
use serde_json::{json, Value};

/// What an application's middleware would put into a request's extensions.
#[derive(Clone)]
struct User(&'static str);

/// A server whose `seen` tool answers what it sees of its HTTP request.
fn server() -> Server {
    Server::builder()
        .name("request-context")
        .tool("seen", "What the handler sees of its HTTP request", json!({"type": "object"}), |_args, ctx| {
            let seen = match ctx.http_request() {
                None => json!(null),
                Some(http) => json!({
                    "method": http.method().as_str(),
                    "path": http.uri().path(),
                    "version": format!("{:?}", http.version()),
                    "tenant": http.headers().get("x-tenant").and_then(|v| v.to_str().ok()),
                    "authorization": http.headers().contains_key("authorization"),
                    "user": http.extensions().get::<User>().map(|u| u.0),
                    "remote": http.remote_addr().map(|a| a.ip().to_string()),
                    "subject": http.principal().and_then(|p| p.subject.clone()),
                    "principal_agrees": http.principal().map(|p| p.subject.clone()) == ctx.principal().map(|p| p.subject.clone()),
                }),
            };
            async move { Ok(text_result(seen.to_string())) }
        })
        .build()
        .unwrap()
}

fn meta_2026() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}})
}

fn call_2026() -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "seen", "arguments": {}, "_meta": meta_2026()}})
    .to_string()
}

const HEADERS_2026: [(&str, &str); 3] =
    [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "seen")];

fn seen_in(answer: &Value) -> Value {
    let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}"));
    serde_json::from_str(text).unwrap()
}

#[tokio::test]
async fn handlers_see_the_post_their_request_came_in_with_address_and_principal_in_both_eras() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let verifier = StaticTokenVerifier::new("s3cret").unwrap().principal(Principal::new(Some("ops".into())));
    let resource = ProtectedResource::new(format!("http://{addr}/mcp"), Arc::new(verifier));
    let config = HttpServerConfig::default().protected_resource(resource);
    let http = server().serve_http_on(listener, config).await.unwrap();
    let token = ("Authorization", "Bearer s3cret");

    // Handshake era: the session opened with one tenant header, the call made with another.
    let init = http_support::initialize_body("2025-11-25");
    let opened = raw(addr, "POST", "/mcp", &[BOTH, JSON, token, ("X-Tenant", "at-initialize")], &init, SHORT).await;
    assert_eq!(opened.status, 200, "{opened:?}");
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let sid = ("Mcp-Session-Id", session.as_str());
    let version = ("MCP-Protocol-Version", "2025-11-25");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let accepted = raw(addr, "POST", "/mcp", &[BOTH, JSON, token, sid, version], &note, SHORT).await;
    assert_eq!(accepted.status, 202, "{accepted:?}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "seen", "arguments": {}}});
    let answered = raw(
        addr,
        "POST",
        "/mcp",
        &[BOTH, JSON, token, sid, version, ("X-Tenant", "at-call")],
        &call.to_string(),
        SHORT,
    )
    .await;
    assert_eq!(answered.status, 200, "{answered:?}");
    let seen = seen_in(answered.sse_messages().iter().find(|m| m["id"] == 2).unwrap());
    assert_eq!(
        seen,
        json!({"method": "POST", "path": "/mcp", "version": "HTTP/1.1", "tenant": "at-call", "authorization": false,
            "user": null, "remote": "127.0.0.1", "subject": "ops", "principal_agrees": true})
    );

    // 2026-07-28: the call's own POST.
    let mut headers = vec![BOTH, JSON, token, ("X-Tenant", "per-request")];
    headers.extend(HEADERS_2026);
    let answered = raw(addr, "POST", "/mcp", &headers, &call_2026(), SHORT).await;
    assert_eq!(answered.status, 200, "{answered:?}");
    let seen = seen_in(&answered.json());
    assert_eq!(seen["tenant"], "per-request", "{seen}");
    assert_eq!(
        (&seen["remote"], &seen["subject"], &seen["authorization"]),
        (&json!("127.0.0.1"), &json!("ops"), &json!(false))
    );
    http.shutdown().await;
}

/// A 2026-07-28 call as an application's stack hands it to the Service: a body type of its
/// own, extensions its middleware filled.
fn app_request(body: impl Into<Bytes>, remote: Option<SocketAddr>) -> http::Request<Full<Bytes>> {
    let mut builder = http::Request::post("/mcp")
        .header("host", "localhost")
        .header("accept", BOTH.1)
        .header("content-type", JSON.1)
        .header("x-tenant", "mounted");
    for (name, value) in HEADERS_2026 {
        builder = builder.header(name, value);
    }
    let mut req = builder.body(Full::new(body.into())).unwrap();
    req.extensions_mut().insert(User("carol"));
    if let Some(addr) = remote {
        req.extensions_mut().insert(RemoteAddr(addr));
    }
    req
}

#[tokio::test]
async fn a_mounted_service_hands_the_apps_extensions_to_handlers_and_keeps_its_body_cap() {
    let service: HttpService = server().http_service(HttpServerConfig::default().max_body_bytes(1024)).await.unwrap();

    let answer = service.handle(app_request(call_2026(), None)).await;
    assert_eq!(answer.status(), 200);
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    let seen = seen_in(&serde_json::from_slice(&body).unwrap());
    assert_eq!(
        seen,
        json!({"method": "POST", "path": "/mcp", "version": "HTTP/1.1", "tenant": "mounted", "authorization": false,
            "user": "carol", "remote": null, "subject": null, "principal_agrees": true})
    );

    let from: SocketAddr = "10.1.2.3:4567".parse().unwrap();
    let answer = service.handle(app_request(call_2026(), Some(from))).await;
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(seen_in(&serde_json::from_slice(&body).unwrap())["remote"], "10.1.2.3");

    // The cap holds for the application's body type too; the next request is served.
    let padded =
        call_2026().replace("\"arguments\":{}", &format!("\"arguments\":{{\"pad\":\"{}\"}}", "x".repeat(2000)));
    let refused = service.handle(app_request(padded, None)).await;
    assert_eq!(refused.status(), 413);
    assert_eq!(service.handle(app_request(call_2026(), None)).await.status(), 200);

    // The guards stay on: a foreign Host is refused before anything else.
    let mut foreign = app_request(call_2026(), None);
    foreign.headers_mut().insert("host", "evil.example".parse().unwrap());
    assert_eq!(service.handle(foreign).await.status(), 403);
    service.shutdown().await;
}

/// The `X-Tenant` header of a handler's HTTP request.
fn tenant(http: Option<&mcpwire::transport::sse_http::HttpRequestParts>) -> String {
    let value = http.and_then(|h| h.headers().get("x-tenant")).and_then(|v| v.to_str().ok());
    value.unwrap_or("none").to_owned()
}

#[tokio::test]
async fn resource_prompt_and_completion_handlers_see_the_request_too() {
    use mcpwire::proto::mcp_types::{ContentBlock, Role};
    use mcpwire::server::{prompt, prompt_argument, prompt_message, prompt_result, resource, text_contents};
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};

    let server = Server::builder()
        .name("request-context")
        .resource(resource("tenant://mine", "mine"), |req| {
            let text = tenant(req.context().and_then(|c| c.http_request()));
            async move { Ok(text_contents("tenant://mine", None, text)) }
        })
        .prompt(prompt("p", "", vec![prompt_argument("who", "", false)]), |req| {
            let text = tenant(req.context().and_then(|c| c.http_request()));
            async move { Ok(prompt_result(vec![prompt_message(Role::User, ContentBlock::text(text))])) }
        })
        .complete_prompt_argument("p", "who", |req| {
            let text = tenant(req.http_request());
            async move { Ok(vec![text]) }
        })
        .build()
        .unwrap();
    let http = server.serve_http(HttpServerConfig::default()).await.unwrap();
    let config = HttpClientConfig::new(http.url()).header("X-Tenant", "acme");
    let (peer, _) = http_support::client_peer(HttpClientTransport::new(config).unwrap(), "2025-11-25").await;
    let ask = |method: &'static str, params: Value| {
        let peer = peer.clone();
        async move {
            let body = mcpwire::proto::jsonrpc::Body::typed(params);
            let answer = peer.request(method, Some(body), Default::default()).await.unwrap();
            answer.decode::<Value>().unwrap()
        }
    };
    let read = ask("resources/read", json!({"uri": "tenant://mine"})).await;
    assert_eq!(read["contents"][0]["text"], "acme", "{read}");
    let got = ask("prompts/get", json!({"name": "p", "arguments": {}})).await;
    assert_eq!(got["messages"][0]["content"]["text"], "acme", "{got}");
    let completed = ask(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "p"},
        "argument": {"name": "who", "value": ""}}),
    )
    .await;
    assert_eq!(completed["completion"]["values"], json!(["acme"]), "{completed}");
    peer.close().await.unwrap();
    http.shutdown().await;
}

/// A forwarding server (the gateway's shape): its [`Forwarder`](mcpwire::server::forward::Forwarder)
/// reads the request's parts from the context it is handed, as a handler does, in both eras.
#[tokio::test]
async fn a_forwarder_reads_the_request_it_forwards() {
    use mcpwire::proto::jsonrpc::Body;
    use mcpwire::server::forward::{Forwarded, Forwarding};
    use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};

    let forwarding = || {
        Server::builder()
            .name("forwarding")
            .forward(
                |request: Forwarded| {
                    let http = request.context.http_request();
                    let seen = json!({
                        "method": request.method,
                        "tenant": tenant(http),
                        "user": http.and_then(|h| h.extensions().get::<User>()).map(|u| u.0),
                    });
                    async move { Ok(Body::typed(text_result(seen.to_string()))) }
                },
                Forwarding::default(),
            )
            .build()
            .unwrap()
    };

    // Mounted, 2026-07-28: the application's extensions and headers reach the forwarder.
    let service = forwarding().http_service(HttpServerConfig::default()).await.unwrap();
    let answer = service.handle(app_request(call_2026(), None)).await;
    assert_eq!(answer.status(), 200);
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        seen_in(&serde_json::from_slice(&body).unwrap()),
        json!({"method": "tools/call", "tenant": "mounted", "user": "carol"})
    );
    service.shutdown().await;

    // On its own listener, a handshake-era session: the POST the call arrived on.
    let http = forwarding().serve_http(HttpServerConfig::default()).await.unwrap();
    let config = HttpClientConfig::new(http.url()).header("X-Tenant", "acme");
    let (peer, _) = http_support::client_peer(HttpClientTransport::new(config).unwrap(), "2025-11-25").await;
    let params = Body::typed(json!({"name": "anything", "arguments": {}}));
    let answer: Value = peer.request("tools/call", Some(params), Default::default()).await.unwrap().decode().unwrap();
    assert_eq!(seen_in(&json!({ "result": answer })), json!({"method": "tools/call", "tenant": "acme", "user": null}));
    peer.close().await.unwrap();
    http.shutdown().await;
}
