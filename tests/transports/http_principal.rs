//! The principal a handler sees is the one of the HTTP request that carried its own request,
//! not the latest one of its session: two requests of one session, sent with two tokens of the
//! same holder (different scopes) while the server holds them back, each see their own token's
//! scopes when they run. Raw HTTP over loopback; the application's transport is wrapped to say
//! when each request has reached the server layer.

use crate::http_support;

use std::sync::Arc;

use http_support::{raw, BOTH, JSON, SHORT};
use mcpwire::auth::{Principal, ProtectedResource, Refusal, TokenVerifier, VerifyFuture};
use mcpwire::proto::jsonrpc::{Id, Message};
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpServer, HttpServerConfig, ServerTransport};
use mcpwire::transport::{Limits, Transport, TransportError};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};

/// Three tokens of one holder, `u`: `tok-x` with scope `mcp`, `tok-a` adding `a`, `tok-b`
/// adding `b`.
struct Tokens;

impl TokenVerifier for Tokens {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(async move {
            let extra = match token {
                "tok-x" => None,
                "tok-a" => Some("a"),
                "tok-b" => Some("b"),
                _ => return Err(Refusal::Malformed),
            };
            let mut principal = Principal::new(Some("u".into()));
            principal.scopes = std::iter::once("mcp").chain(extra).map(str::to_owned).collect();
            Ok(principal)
        })
    }
}

/// The application's transport, reporting the method of each request it hands over.
struct Observed {
    inner: ServerTransport,
    seen: mpsc::UnboundedSender<String>,
}

impl Transport for Observed {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.inner.send(message).await
    }

    async fn send_related(&self, message: Message, related: &Id) -> Result<(), TransportError> {
        self.inner.send_related(message, related).await
    }

    fn is_stateless(&self) -> bool {
        self.inner.is_stateless()
    }

    fn outlives_its_input(&self) -> bool {
        self.inner.outlives_its_input()
    }

    fn param_headers(&self, request: &Id) -> Option<Vec<(String, String)>> {
        self.inner.param_headers(request)
    }

    fn principal(&self, request: &Id) -> Option<Arc<Principal>> {
        self.inner.principal(request)
    }

    fn related_request(&self, incoming: &Id) -> Option<Id> {
        self.inner.related_request(incoming)
    }

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        let message = self.inner.recv().await?;
        if let Some(Message::Request(request)) = &message {
            let _ = self.seen.send(request.method.clone());
        }
        Ok(message)
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.inner.close().await
    }
}

fn call(id: u64, tool: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}}).to_string()
}

#[tokio::test]
async fn each_request_runs_with_the_principal_of_its_own_http_request() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let policy = ProtectedResource::new(&resource, Arc::new(Tokens)).require_scope("mcp");
    let release = Arc::new(Semaphore::new(0));
    let held = release.clone();
    // One handler at a time: the requests after the held one wait in the server's queue.
    let server = Server::builder()
        .name("principals")
        .limits(Limits::default().with_max_in_flight(1))
        .tool("hold", "waits for the test", json!({"type": "object"}), move |_args, _ctx| {
            let held = held.clone();
            async move {
                held.acquire().await.unwrap().forget();
                Ok(text_result("released"))
            }
        })
        .tool("scopes", "the principal's scopes", json!({"type": "object"}), |_args, ctx| async move {
            let scopes = ctx.principal().map(|p| p.scopes.join(" ")).unwrap_or_default();
            Ok(text_result(scopes))
        })
        .build()
        .unwrap();
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let config = HttpServerConfig::default().protected_resource(policy);
    let http = HttpServer::serve_on(listener, config, move |inner| {
        let serving = server.serve(Observed { inner, seen: seen_tx.clone() });
        async move {
            let _ = serving.await;
        }
    })
    .await
    .unwrap();
    let addr = http.local_addr();

    let auth = |token: &str| format!("Bearer {token}");
    let init = http_support::initialize_body("2025-11-25");
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &auth("tok-x"))], &init, SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.header("mcp-session-id").unwrap().to_owned();
    assert_eq!(seen.recv().await.as_deref(), Some("initialize"));
    let post = move |token: &'static str, body: String| {
        let session = session.clone();
        tokio::spawn(async move {
            let authorization = format!("Bearer {token}");
            let headers = [
                BOTH,
                JSON,
                ("Mcp-Session-Id", session.as_str()),
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Authorization", authorization.as_str()),
            ];
            raw(addr, "POST", "/mcp", &headers, &body, SHORT * 4).await
        })
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(post("tok-x", initialized).await.unwrap().status, 202);

    // The first call takes the only slot; the next two reach the server layer (each bound to
    // the session in turn: tok-b last) and wait.
    let holding = post("tok-x", call(1, "hold"));
    assert_eq!(seen.recv().await.as_deref(), Some("tools/call"));
    let with_a = post("tok-a", call(2, "scopes"));
    assert_eq!(seen.recv().await.as_deref(), Some("tools/call"));
    let with_b = post("tok-b", call(3, "scopes"));
    assert_eq!(seen.recv().await.as_deref(), Some("tools/call"));
    release.add_permits(1);

    let text = |r: http_support::Raw| -> String {
        let messages = r.sse_messages();
        let answer: &Value = messages.iter().find(|m| m.get("result").is_some()).expect("an answer");
        answer["result"]["content"][0]["text"].as_str().unwrap().to_owned()
    };
    assert_eq!(text(holding.await.unwrap()), "released");
    assert_eq!(text(with_a.await.unwrap()), "mcp a");
    assert_eq!(text(with_b.await.unwrap()), "mcp b");
    http.shutdown().await;
}
