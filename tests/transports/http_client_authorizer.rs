//! The HTTP client transport's `Authorizer` hook against our own HTTP server guarding its
//! endpoint with a bearer token, over real loopback HTTP: the authorizer's header is sent, a 401
//! reaches it with the server's challenge and the credential that was refused, and the request
//! goes again when it says so; a refusal it gives up on fails the request with its reason.

use crate::http_support;

use std::sync::{Arc, Mutex};

use http_support::*;
use mcpwire::transport::sse_http::authorizer::{AuthFuture, Authorizer, Credentials, Denial, Verdict};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use serde_json::json;

const TOKEN: &str = "right-token";

/// What one refusal showed: status, challenges, the credential sent, the retry count.
type Seen = (u16, Vec<String>, Option<String>, u32);

/// Sends `Bearer wrong` until refused once, then the right token; records each refusal.
#[derive(Default)]
struct LearnsTheToken {
    token: Mutex<Option<String>>,
    refusals: Mutex<Vec<Seen>>,
    give_up: bool,
}

impl Authorizer for LearnsTheToken {
    fn authorization<'a>(&'a self, _method: &'a str, _url: &'a str) -> AuthFuture<'a, Option<Credentials>> {
        let token = self.token.lock().unwrap().clone().unwrap_or_else(|| "wrong".into());
        Box::pin(async move { Some(Credentials::bearer(&token)) })
    }

    fn refused<'a>(&'a self, refusal: Denial<'a>) -> AuthFuture<'a, Verdict> {
        self.refusals.lock().unwrap().push((
            refusal.status,
            refusal.challenges.to_vec(),
            refusal.sent.map(str::to_owned),
            refusal.retries,
        ));
        *self.token.lock().unwrap() = Some(TOKEN.into());
        let verdict =
            if self.give_up { Verdict::GiveUp("no credentials for this server".into()) } else { Verdict::Retry };
        Box::pin(async move { verdict })
    }
}

async fn guarded() -> HttpServer {
    HttpServer::bind(HttpServerConfig::default().bearer_token(Some(TOKEN.to_owned())), serve_echo).await.unwrap()
}

#[tokio::test]
async fn a_refused_request_goes_again_with_the_authorizers_new_header() {
    let server = guarded().await;
    let authorizer = Arc::new(LearnsTheToken::default());
    let transport =
        HttpClientTransport::new(HttpClientConfig::new(server.url()).authorizer(authorizer.clone())).unwrap();
    let (peer, init) = client_peer(transport, "2025-11-25").await;
    assert_eq!(init["serverInfo"]["name"], "mcpwire-http-test");
    let result = call(&peer, "echo", json!({"text": "after a 401"})).await;
    assert_eq!(result["content"][0]["text"], "after a 401");
    let refusals = authorizer.refusals.lock().unwrap().clone();
    assert_eq!(
        refusals,
        [(401, vec![r#"Bearer error="invalid_token""#.to_owned()], Some("Bearer wrong".to_owned()), 0)],
        "one refusal, of the initialize, with the server's challenge and the refused credential"
    );
    let _ = peer.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_refusal_the_authorizer_gives_up_on_fails_the_request_with_its_reason() {
    let server = guarded().await;
    let authorizer = Arc::new(LearnsTheToken { give_up: true, ..LearnsTheToken::default() });
    let config = HttpClientConfig::new(server.url()).legacy_fallback(false).authorizer(authorizer.clone());
    let transport = HttpClientTransport::new(config).unwrap();
    let peer = mcpwire::peer::Peer::start(
        transport,
        mcpwire::proto::session::Role::Client,
        mcpwire::proto::session::Mode::Handshake,
        Default::default(),
        NoRequests,
    );
    let params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let outcome =
        peer.request("initialize", Some(mcpwire::proto::jsonrpc::Body::typed(params)), Default::default()).await;
    let error = outcome.expect_err("refused").to_string();
    assert!(error.contains("401") && error.contains("no credentials for this server"), "{error}");
    assert_eq!(authorizer.refusals.lock().unwrap().len(), 1, "asked once, not retried");
    assert_eq!(server.session_count(), 0);
    let _ = peer.close().await;
    server.shutdown().await;
}
