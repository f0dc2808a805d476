//! The resource server over real loopback HTTP, against a real authorization server
//! (oauth2-mock-server, run by `tests/peers/oauth_as.mjs`): JWT access tokens verified against
//! its JWKS and, in another server, by RFC 7662 introspection; the protected resource metadata
//! and the exact challenges of the 401s and 403s; the principal as handlers see it over
//! Streamable HTTP (sessions and stateless) and the legacy HTTP+SSE transport; and the
//! official TypeScript and Python SDK clients completing an authorization-code flow with PKCE
//! against our server (the test's driver following the redirect instead of a browser), then
//! calling tools.

use crate::http_support;
use crate::oauth_support;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use http_support::{raw, BOTH, JSON, SHORT};
use mcpwire::auth::{IntrospectionVerifier, JwtVerifier, ProtectedResource, TokenVerifier};
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use oauth_support::AuthServer;
use serde_json::{json, Value};

/// Our server's tools: `echo`, `whoami` (the principal as JSON) and `write` (needs `files:write`).
fn tools() -> Server {
    Server::builder()
        .name("oauth-protected")
        .tool("echo", "echo", json!({"type": "object"}), |args, _ctx| async move {
            Ok(text_result(args.get("text").and_then(Value::as_str).unwrap_or("").to_owned()))
        })
        .tool("whoami", "the verified principal", json!({"type": "object"}), |_args, ctx| async move {
            let seen = match ctx.principal() {
                Some(p) => json!({"subject": p.subject, "scopes": p.scopes, "client_id": p.client_id,
                    "audience": p.audience, "issuer": p.issuer, "expires": p.expires_at.is_some()}),
                None => Value::Null,
            };
            Ok(text_result(seen.to_string()))
        })
        .tool("write", "needs files:write", json!({"type": "object"}), |_args, _ctx| async move {
            Ok(text_result("written"))
        })
        .build()
        .unwrap()
}

enum Verify {
    /// JWKS, with a refetch interval of an hour (rate limit effectively on).
    Jwks,
    /// JWKS, refetched whenever an unknown kid comes.
    JwksNoRateLimit,
    Introspection {
        secret: &'static str,
    },
}

/// Our server on a free port, protected by `verify` with the resource URI of its own endpoint;
/// every request needs `mcp`, `write` needs `files:write` too.
async fn protected(auth: &AuthServer, verify: Verify, stateless: bool) -> (HttpServer, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let verifier: Arc<dyn TokenVerifier> = match verify {
        Verify::Jwks | Verify::JwksNoRateLimit => {
            let interval = if matches!(verify, Verify::Jwks) { Duration::from_secs(3600) } else { Duration::ZERO };
            Arc::new(
                JwtVerifier::new(auth.issuer(), &resource, auth.url("jwks_uri"))
                    .unwrap()
                    .min_refetch_interval(interval),
            )
        }
        Verify::Introspection { secret } => Arc::new(
            IntrospectionVerifier::new(auth.url("introspection_endpoint"), &resource, "rs", secret)
                .unwrap()
                .issuer(auth.issuer()),
        ),
    };
    let policy = ProtectedResource::new(&resource, verifier)
        .authorization_server(auth.issuer())
        .require_scope("mcp")
        .tool_scope("write", "files:write");
    let server = tools();
    let config = HttpServerConfig::default().protected_resource(policy).stateless(stateless);
    let http = server.serve_http_on(listener, config).await.unwrap();
    (http, resource)
}

fn init_body() -> String {
    http_support::initialize_body("2025-11-25")
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn claims(resource: &str, scope: &str) -> Value {
    json!({"claims": {"aud": resource, "scope": scope, "sub": "alice", "client_id": "app-1"}})
}

#[tokio::test]
async fn metadata_is_served_and_a_request_without_a_token_is_challenged() {
    let auth = AuthServer::start().await;
    let (server, resource) = protected(&auth, Verify::Jwks, false).await;
    let addr = server.local_addr();
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let r = raw(addr, "GET", path, &[], "", SHORT).await;
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(
            r.json(),
            json!({"resource": resource, "authorization_servers": [auth.issuer()],
                "bearer_methods_supported": ["header"], "scopes_supported": ["mcp", "files:write"]})
        );
    }
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON], &init_body(), SHORT).await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(
        r.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"mcp\"").as_str())
    );
    assert_eq!(r.json()["error"], "invalid_request");
    for (method, path) in [("GET", "/mcp"), ("DELETE", "/mcp"), ("GET", "/sse")] {
        let r = raw(addr, method, path, &[("Accept", "text/event-stream")], "", SHORT).await;
        assert_eq!(r.status, 401, "{method} {path}");
    }
    assert_eq!(server.session_count(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn tokens_are_refused_for_audience_expiry_scope_signature_and_unknown_key() {
    let auth = AuthServer::start().await;
    let (server, resource) = protected(&auth, Verify::JwksNoRateLimit, false).await;
    let addr = server.local_addr();
    let metadata = format!("resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource/mcp\"");
    let post = |token: String, body: String| async move {
        let auth = bearer(&token);
        raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &auth)], &body, SHORT).await
    };

    let cases = [
        ("another audience", claims("http://127.0.0.1:1/mcp", "mcp"), "the access token is meant for another resource"),
        (
            "expired",
            json!({"claims": {"aud": resource, "scope": "mcp", "sub": "a"}, "expiresIn": -3600}),
            "the access token expired",
        ),
        (
            "another issuer",
            json!({"claims": {"aud": resource, "scope": "mcp", "iss": "http://evil.example"}}),
            "the access token was issued by another authorization server",
        ),
        (
            "bad signature",
            json!({"claims": {"aud": resource, "scope": "mcp"}, "tamper": true}),
            "the access token's signature does not verify",
        ),
        (
            "unknown kid",
            json!({"claims": {"aud": resource, "scope": "mcp"}, "key": "rogue"}),
            "the access token is signed with an unknown key",
        ),
    ];
    for (what, spec, description) in cases {
        let before = auth.jwks_fetches().await;
        let r = post(auth.mint(spec).await, init_body()).await;
        assert_eq!(r.status, 401, "{what}: {r:?}");
        assert_eq!(
            r.header("www-authenticate").unwrap(),
            format!("Bearer {metadata}, error=\"invalid_token\", error_description=\"{description}\", scope=\"mcp\""),
            "{what}"
        );
        assert_eq!(r.json(), json!({"error": "invalid_token", "error_description": description}), "{what}");
        let fetched = auth.jwks_fetches().await - before;
        match what {
            // The first token fetches the key set; an unknown kid fetches it once more.
            "another audience" | "unknown kid" => assert_eq!(fetched, 1, "{what}"),
            _ => assert_eq!(fetched, 0, "{what}: the cached keys serve"),
        }
    }
    // Valid, but without the scope every request needs: 403 with the scope.
    let r = post(auth.mint(claims(&resource, "other")).await, init_body()).await;
    assert_eq!(r.status, 403, "{r:?}");
    let challenge = r.header("www-authenticate").unwrap();
    assert!(challenge.starts_with(&format!("Bearer {metadata}, error=\"insufficient_scope\"")), "{challenge}");
    assert!(challenge.ends_with(", scope=\"mcp\""), "{challenge}");

    // Valid: initialize passes, and a tool needing another scope is refused with both scopes.
    let token = auth.mint(claims(&resource, "mcp")).await;
    let r = post(token.clone(), init_body()).await;
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.header("mcp-session-id").unwrap().to_owned();
    let auth_header = bearer(&token);
    let headers = [
        BOTH,
        JSON,
        ("Authorization", auth_header.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let call = |name: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": {}}})
            .to_string()
    };
    let r = raw(addr, "POST", "/mcp", &headers, &call("write"), SHORT).await;
    assert_eq!(r.status, 403, "{r:?}");
    assert!(r.header("www-authenticate").unwrap().ends_with(", scope=\"mcp files:write\""), "{r:?}");
    let r = raw(addr, "POST", "/mcp", &headers, &call("whoami"), SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    let seen: Value =
        serde_json::from_str(r.sse_messages()[0]["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        seen,
        json!({"subject": "alice", "scopes": ["mcp"], "client_id": "app-1", "audience": [resource],
            "issuer": auth.issuer(), "expires": true})
    );
    assert!(!r.body.contains(&token), "no token is echoed");

    // A token of alice without the scope every request needs cannot open the GET stream either.
    let scopeless = bearer(&auth.mint(claims(&resource, "other")).await);
    let get_headers =
        [("Accept", "text/event-stream"), ("Authorization", scopeless.as_str()), ("Mcp-Session-Id", session.as_str())];
    let r = raw(addr, "GET", "/mcp", &get_headers, "", SHORT).await;
    assert_eq!(r.status, 403, "{r:?}");
    let legacy = [("Accept", "text/event-stream"), ("Authorization", scopeless.as_str())];
    let r = raw(addr, "GET", "/sse", &legacy, "", SHORT).await;
    assert_eq!(r.status, 403, "no legacy session either: {r:?}");

    // The session is bound to alice: bob's valid token cannot use it.
    let bob = auth.mint(json!({"claims": {"aud": resource, "scope": "mcp", "sub": "bob", "client_id": "app-1"}})).await;
    let bob = bearer(&bob);
    let headers = [
        BOTH,
        JSON,
        ("Authorization", bob.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let r = raw(addr, "POST", "/mcp", &headers, &call("whoami"), SHORT).await;
    assert_eq!(r.status, 404, "{r:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_kids_refetch_the_key_set_at_most_once_per_interval() {
    let auth = AuthServer::start().await;
    let (server, resource) = protected(&auth, Verify::Jwks, false).await;
    let addr = server.local_addr();
    let rogue = json!({"claims": {"aud": resource, "scope": "mcp"}, "key": "rogue"});
    for (round, fetched) in [(0, 1), (1, 0), (2, 0)] {
        let before = auth.jwks_fetches().await;
        let token = bearer(&auth.mint(rogue.clone()).await);
        let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &token)], &init_body(), SHORT).await;
        assert_eq!(r.status, 401, "{r:?}");
        assert_eq!(auth.jwks_fetches().await - before, fetched, "round {round}: the first fills the cache, then none");
    }
    // Known keys still verify from the cache.
    let token = bearer(&auth.mint(claims(&resource, "mcp")).await);
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &token)], &init_body(), SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn the_principal_reaches_handlers_over_sessions_stateless_and_legacy_sse() {
    let auth = AuthServer::start().await;
    for stateless in [false, true] {
        let (server, resource) = protected(&auth, Verify::Jwks, stateless).await;
        let token = auth.mint(claims(&resource, "mcp files:write")).await;
        let mut configs =
            vec![(HttpClientConfig::new(server.url()).bearer_token(&token).legacy_fallback(false), "2025-11-25")];
        if !stateless {
            configs.push((HttpClientConfig::new(server.legacy_url()).legacy(true).bearer_token(&token), "2024-11-05"));
        }
        for (config, version) in configs {
            let (peer, _) = http_support::client_peer(HttpClientTransport::new(config).unwrap(), version).await;
            let result = http_support::call(&peer, "whoami", json!({})).await;
            let seen: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(seen["subject"], "alice", "stateless {stateless}, {version}");
            assert_eq!(seen["scopes"], json!(["mcp", "files:write"]));
            assert_eq!(http_support::call(&peer, "write", json!({})).await["content"][0]["text"], "written");
            let _ = peer.close().await;
        }
        server.shutdown().await;
    }
}

#[tokio::test]
async fn introspection_verifies_against_the_authorization_server() {
    let auth = AuthServer::start().await;
    let (server, resource) = protected(&auth, Verify::Introspection { secret: "rs-secret" }, false).await;
    let addr = server.local_addr();
    let token = auth.mint(claims(&resource, "mcp")).await;
    let config = HttpClientConfig::new(server.url()).bearer_token(&token).legacy_fallback(false);
    let (peer, _) = http_support::client_peer(HttpClientTransport::new(config).unwrap(), "2025-11-25").await;
    let result = http_support::call(&peer, "whoami", json!({})).await;
    let seen: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!((seen["subject"].clone(), seen["client_id"].clone()), (json!("alice"), json!("app-1")));
    let _ = peer.close().await;
    for (what, spec) in [
        ("another audience", claims("http://127.0.0.1:1/mcp", "mcp")),
        ("expired", json!({"claims": {"aud": resource, "scope": "mcp"}, "expiresIn": -3600})),
        ("bad signature", json!({"claims": {"aud": resource, "scope": "mcp"}, "tamper": true})),
    ] {
        let token = bearer(&auth.mint(spec).await);
        let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &token)], &init_body(), SHORT).await;
        assert_eq!(r.status, 401, "{what}: {r:?}");
        assert!(r.header("www-authenticate").unwrap().contains("error=\"invalid_token\""), "{what}");
    }
    let token = bearer(&auth.mint(claims(&resource, "other")).await);
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &token)], &init_body(), SHORT).await;
    assert_eq!(r.status, 403, "{r:?}");
    server.shutdown().await;

    // Our credentials refused by the introspection endpoint: 503, no challenge, the token may be fine.
    let (server, resource) = protected(&auth, Verify::Introspection { secret: "wrong" }, false).await;
    let token = bearer(&auth.mint(claims(&resource, "mcp")).await);
    let r =
        raw(server.local_addr(), "POST", "/mcp", &[BOTH, JSON, ("Authorization", &token)], &init_body(), SHORT).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.header("www-authenticate"), None);
    assert_eq!(r.json()["error"], "temporarily_unavailable");
    assert!(!r.body.contains("introspect") && !r.body.contains("127.0.0.1"), "nothing about our side: {}", r.body);
    server.shutdown().await;
}

#[tokio::test]
async fn introspection_answers_are_cached_and_concurrent_checks_of_a_token_share_one_request() {
    let auth = AuthServer::start().await;
    let (server, resource) = protected(&auth, Verify::Introspection { secret: "rs-secret" }, false).await;
    let addr = server.local_addr();
    let initialize = move |authorization: String| async move {
        raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &authorization)], &init_body(), SHORT).await.status
    };

    let good = bearer(&auth.mint(claims(&resource, "mcp")).await);
    let before = auth.introspections().await;
    for _ in 0..3 {
        assert_eq!(initialize(good.clone()).await, 200);
    }
    assert_eq!(auth.introspections().await - before, 1, "an active answer is kept");

    // Another token (tokens of the same claims minted within one second are the same token).
    let mut spec = claims(&resource, "mcp");
    spec["claims"]["jti"] = json!("another");
    let fresh = bearer(&auth.mint(spec).await);
    assert_ne!(fresh, good);
    let before = auth.introspections().await;
    let mut at_once = tokio::task::JoinSet::new();
    for _ in 0..8 {
        at_once.spawn(initialize(fresh.clone()));
    }
    while let Some(status) = at_once.join_next().await {
        assert_eq!(status.unwrap(), 200);
    }
    assert_eq!(auth.introspections().await - before, 1, "eight checks at once, one request");

    // A flood of one bad token, then of several: one request per distinct token.
    let forged = bearer(&auth.mint(json!({"claims": {"aud": resource, "scope": "mcp"}, "tamper": true})).await);
    let before = auth.introspections().await;
    for _ in 0..10 {
        assert_eq!(initialize(forged.clone()).await, 401);
    }
    for n in 0..3 {
        assert_eq!(initialize(bearer(&format!("made-up-{n}"))).await, 401);
    }
    assert_eq!(auth.introspections().await - before, 4, "inactive answers are kept briefly too");
    server.shutdown().await;
}

#[tokio::test]
async fn the_jwks_uri_is_discovered_from_the_issuers_metadata_whose_issuer_must_match() {
    let auth = AuthServer::start().await;
    let resource = "http://127.0.0.1:1/mcp";
    let token = auth.mint(claims(resource, "mcp")).await;
    // oauth2-mock-server has no RFC 8414 document: the OpenID Connect one (the second URL) serves.
    let verifier = JwtVerifier::discover(auth.issuer(), resource).unwrap();
    assert_eq!(verifier.verify(&token).await.unwrap().subject.as_deref(), Some("alice"));
    assert_eq!(auth.jwks_fetches().await, 1);
    assert!(format!("{verifier:?}").contains(auth.url("jwks_uri")), "{verifier:?}");

    // The same server named by another spelling of its address: its metadata says another issuer.
    let port = auth.addr().port();
    let verifier = JwtVerifier::discover(format!("http://localhost:{port}"), resource).unwrap();
    match verifier.verify(&token).await {
        Err(mcpwire::auth::Refusal::Unavailable(why)) => assert!(why.contains("names another issuer"), "{why}"),
        other => panic!("expected 503: {other:?}"),
    }
    assert_eq!(auth.jwks_fetches().await, 1, "no key set fetched from a mismatched metadata");
    assert!(JwtVerifier::discover("not a url", resource).is_err());
}

#[tokio::test]
async fn the_key_set_is_refetched_when_its_max_age_runs_out_within_the_bounds() {
    let auth = AuthServer::start().await;
    let resource = "http://127.0.0.1:1/mcp";
    let token = auth.mint(claims(resource, "mcp")).await;
    let verifier = |min: u64| {
        JwtVerifier::new(auth.issuer(), resource, auth.url("jwks_uri"))
            .unwrap()
            .key_set_age_bounds(Duration::from_secs(min), Duration::from_secs(3600))
    };
    let (auth, token) = (&auth, token.as_str());
    let fetches_for_three = |verifier: JwtVerifier| async move {
        let before = auth.jwks_fetches().await;
        for _ in 0..3 {
            assert!(verifier.verify(token).await.is_ok());
        }
        auth.jwks_fetches().await - before
    };
    auth.set_jwks_cache_control(Some("max-age=0")).await;
    assert_eq!(fetches_for_three(verifier(0)).await, 3, "old at once: every verification fetches");
    assert_eq!(fetches_for_three(verifier(3600)).await, 1, "the lower bound rules");
    auth.set_jwks_cache_control(Some("no-store")).await;
    assert_eq!(fetches_for_three(verifier(0)).await, 3);
    auth.set_jwks_cache_control(Some("public, max-age=600")).await;
    assert_eq!(fetches_for_three(verifier(0)).await, 1, "kept for its max-age");
    auth.set_jwks_cache_control(None).await;
    assert_eq!(fetches_for_three(verifier(0)).await, 1, "no max-age: kept for the upper bound");
}

/// Sends one request on a fresh connection and reads its answer until the server ends it:
/// the raw bytes, and whether the answer ended (a guard of 30 s, never reached when it works).
async fn until_the_end(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, bool) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    tcp.write_all(format!("{head}\r\n{body}").as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let n = tcp.read(&mut chunk).await.unwrap();
            bytes.extend_from_slice(&chunk[..n]);
            // The terminating chunk of a chunked body, or the connection closed.
            if n == 0 || bytes.ends_with(b"\r\n0\r\n\r\n") {
                return;
            }
        }
    })
    .await
    .is_ok();
    (String::from_utf8_lossy(&bytes).into_owned(), ended)
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// `server` served as a protected resource whose JWT verifier allows no leeway past `exp`: the
/// server, its address and its resource URI.
async fn without_leeway(auth: &AuthServer, server: Server) -> (HttpServer, std::net::SocketAddr, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let verifier = JwtVerifier::new(auth.issuer(), &resource, auth.url("jwks_uri")).unwrap().leeway(Duration::ZERO);
    let config = HttpServerConfig::default().protected_resource(ProtectedResource::new(&resource, Arc::new(verifier)));
    let http = server.serve_http_on(listener, config).await.unwrap();
    (http, addr, resource)
}

#[tokio::test]
async fn streams_end_when_the_token_that_opened_them_expires_and_resume_with_a_fresh_one() {
    let auth = AuthServer::start().await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = gate.clone();
    let server = Server::builder()
        .name("expiring")
        .tool("wait", "answers once the test lets it", json!({"type": "object"}), move |_args, _ctx| {
            let held = held.clone();
            async move {
                held.acquire().await.unwrap().forget();
                Ok(text_result("released"))
            }
        })
        .build()
        .unwrap();
    let (http, addr, resource) = without_leeway(&auth, server).await;

    let lasting = bearer(&auth.mint(claims(&resource, "mcp")).await);
    let r = raw(addr, "POST", "/mcp", &[BOTH, JSON, ("Authorization", &lasting)], &init_body(), SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.header("mcp-session-id").unwrap().to_owned();
    let common = |authorization: &str| {
        vec![
            (BOTH.0, BOTH.1.to_owned()),
            (JSON.0, JSON.1.to_owned()),
            ("Authorization", authorization.to_owned()),
            ("Mcp-Session-Id", session.clone()),
            ("MCP-Protocol-Version", "2025-11-25".to_owned()),
        ]
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let headers = common(&lasting);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    assert_eq!(raw(addr, "POST", "/mcp", &headers, &initialized, SHORT).await.status, 202);

    // A token of the same holder that expires in about two seconds opens both kinds of stream.
    let spec = json!({"claims": {"aud": resource, "scope": "mcp", "sub": "alice", "client_id": "app-1"},
        "expiresIn": 2});
    let short = auth.mint(spec).await;
    let exp = {
        use base64::Engine;
        let payload = short.split('.').nth(1).unwrap();
        let claims: Value =
            serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        claims["exp"].as_f64().unwrap()
    };
    let short = bearer(&short);
    let post_headers = common(&short);
    let post_headers: Vec<(&str, &str)> = post_headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let get_headers = [
        ("Accept", "text/event-stream"),
        ("Authorization", short.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "wait", "arguments": {}}})
        .to_string();
    let ((post_stream, post_ended), (get_stream, get_ended)) = tokio::join!(
        until_the_end(addr, "POST", "/mcp", &post_headers, &call),
        until_the_end(addr, "GET", "/mcp", &get_headers, "")
    );
    let ended_at = unix_now();
    assert!(post_ended && get_ended, "both streams ended:\n{post_stream}\n{get_stream}");
    assert!(ended_at >= exp, "not before the token's exp ({ended_at} < {exp})");
    assert!(post_stream.starts_with("HTTP/1.1 200") && get_stream.starts_with("HTTP/1.1 200"), "{post_stream}");
    assert!(!post_stream.contains("released"), "the call is still running: {post_stream}");
    let priming = post_stream
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("a priming event id: {post_stream}"))
        .to_owned();

    // The expired token is refused now; the call goes on, and a fresh token resumes its stream.
    let r = raw(addr, "GET", "/mcp", &get_headers, "", SHORT).await;
    assert_eq!(r.status, 401, "{r:?}");
    gate.add_permits(1);
    let resume = [
        ("Accept", "text/event-stream"),
        ("Authorization", lasting.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Last-Event-ID", priming.as_str()),
    ];
    let r = raw(addr, "GET", "/mcp", &resume, "", SHORT).await;
    assert_eq!(r.status, 200, "{r:?}");
    let answers = r.sse_messages();
    assert_eq!(answers.len(), 1, "{r:?}");
    assert_eq!(
        (answers[0]["id"].clone(), answers[0]["result"]["content"][0]["text"].clone()),
        (json!(7), json!("released"))
    );
    http.shutdown().await;
}

/// Runs an SDK driver; returns its exit code and JSON lines.
async fn driver(program: &str, script: &str, url: &str, calls: &str) -> (i32, Vec<Value>) {
    let mut command = tokio::process::Command::new(program);
    command
        .arg(support::repo_path(script))
        .args(["--url", url])
        .env("MCP_SCRIPT", calls)
        .env("MCP_TS_SDK_DIR", support::peer("MCP_TS_SDK_DIR"))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(90), command.output())
        .await
        .expect("the driver finishes")
        .expect("the driver runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines = stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    (output.status.code().unwrap_or(-1), lines)
}

fn step<'a>(lines: &'a [Value], name: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["step"] == name).collect()
}

const CALLS: &str =
    r#"[{"call":"whoami","args":{}},{"call":"echo","args":{"text":"through oauth"}},{"call":"write","args":{}}]"#;

#[tokio::test]
async fn the_typescript_sdk_client_completes_an_authorization_code_flow_then_calls_tools() {
    let auth = AuthServer::start().await;
    let (server, resource) = protected(&auth, Verify::Jwks, false).await;
    let (code, lines) =
        driver(&support::peer("MCP_NODE"), "tests/peers/ts_oauth_client.mjs", &server.url(), CALLS).await;
    assert_eq!(code, 0, "{lines:#?}");
    let authorize = step(&lines, "authorize");
    assert_eq!(authorize.len(), 1, "{lines:#?}");
    let query = &authorize[0]["authorizationUrl"];
    assert_eq!(query["resource"], resource, "RFC 8707 resource from our metadata");
    assert_eq!(query["scope"], "mcp", "the scope of our challenge");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["client_id"], "ts-client");
    let calls = step(&lines, "tools/call");
    let seen: Value = serde_json::from_str(calls[0]["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["subject"], "johndoe", "the authorization server's user");
    assert_eq!(seen["client_id"], "ts-client");
    assert_eq!(seen["audience"], json!([resource]));
    assert_eq!(calls[1]["result"]["content"][0]["text"], "through oauth");
    // `write` needs files:write, which the token was not granted: the SDK gets the 403.
    assert_eq!(calls[2]["ok"], false, "{:?}", calls[2]);
    server.shutdown().await;
}

#[tokio::test]
async fn the_python_sdk_client_completes_an_authorization_code_flow_then_calls_tools() {
    let auth = AuthServer::start().await;
    let (server, resource) = protected(&auth, Verify::Jwks, false).await;
    let calls = r#"[{"call":"whoami","args":{}},{"call":"echo","args":{"text":"through oauth"}}]"#;
    let (code, lines) =
        driver(&support::peer("MCP_PYTHON"), "tests/peers/py_oauth_client.py", &server.url(), calls).await;
    assert_eq!(code, 0, "{lines:#?}");
    let authorize = step(&lines, "authorize");
    assert_eq!(authorize.len(), 1, "{lines:#?}");
    let query = &authorize[0]["query"];
    assert_eq!(query["resource"], resource);
    assert_eq!(query["scope"], "mcp");
    assert_eq!(query["code_challenge_method"], "S256");
    let calls = step(&lines, "tools/call");
    assert_eq!(calls.len(), 2, "{lines:#?}");
    let seen: Value = serde_json::from_str(calls[0]["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["subject"], "johndoe");
    assert_eq!(seen["client_id"], "py-client");
    assert_eq!(calls[1]["result"]["content"][0]["text"], "through oauth");
    server.shutdown().await;
}

#[tokio::test]
async fn a_static_token_serves_as_a_protected_resources_verifier_and_routes_cannot_shadow_the_metadata() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut principal = mcpwire::auth::Principal::new(Some("ops".into()));
    principal.scopes = vec!["mcp".into()];
    let verifier = mcpwire::auth::StaticTokenVerifier::new("static-Tok3n").unwrap().principal(principal);
    let policy = ProtectedResource::new(&resource, Arc::new(verifier)).require_scope("mcp");
    let server = tools();
    let config = HttpServerConfig::default()
        .protected_resource(policy.clone())
        .route("/metrics", || async { mcpwire::transport::sse_http::RouteResponse::text(200, "up 1\n") });
    let http = server.serve_http_on(listener, config).await.unwrap();
    let config = HttpClientConfig::new(http.url()).bearer_token("static-Tok3n").legacy_fallback(false);
    let (peer, _) = http_support::client_peer(HttpClientTransport::new(config).unwrap(), "2025-11-25").await;
    let seen = http_support::call(&peer, "whoami", json!({})).await;
    let seen: Value = serde_json::from_str(seen["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!((seen["subject"].clone(), seen["scopes"].clone()), (json!("ops"), json!(["mcp"])));
    let _ = peer.close().await;
    let wrong = bearer("static-Tok3m");
    let r = raw(http.local_addr(), "POST", "/mcp", &[BOTH, JSON, ("Authorization", &wrong)], &init_body(), SHORT).await;
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().contains("error=\"invalid_token\""));
    // A guarded route needs the token too.
    let r = raw(http.local_addr(), "GET", "/metrics", &[], "", SHORT).await;
    assert_eq!(r.status, 401, "{r:?}");
    let right = bearer("static-Tok3n");
    let r = raw(http.local_addr(), "GET", "/metrics", &[("Authorization", &right)], "", SHORT).await;
    assert_eq!((r.status, r.body.as_str()), (200, "up 1\n"));
    http.shutdown().await;

    let shadowing = HttpServerConfig::default()
        .protected_resource(policy)
        .route_public("/.well-known/oauth-protected-resource/mcp", || async {
            mcpwire::transport::sse_http::RouteResponse::text(200, "")
        });
    let error = HttpServer::bind(shadowing, |_t| async {}).await.unwrap_err();
    assert!(error.to_string().contains("protected resource metadata"), "{error}");
}

#[tokio::test]
async fn a_2026_07_28_request_is_verified_and_its_handler_sees_the_principal() {
    let auth = AuthServer::start().await;
    let (server, resource) = protected(&auth, Verify::Jwks, false).await;
    let addr = server.local_addr();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}});
    let call = |tool: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {}, "_meta": meta}})
        .to_string()
    };
    let post = |tool: &'static str, token: Option<String>| {
        let body = call(tool);
        async move {
            let authorization = token.map(|t| bearer(&t));
            let mut headers = vec![
                BOTH,
                JSON,
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", tool),
            ];
            if let Some(a) = authorization.as_deref() {
                headers.push(("Authorization", a));
            }
            raw(addr, "POST", "/mcp", &headers, &body, SHORT).await
        }
    };
    let r = post("whoami", None).await;
    assert_eq!(r.status, 401, "{r:?}");
    let token = auth.mint(claims(&resource, "mcp")).await;
    let r = post("whoami", Some(token.clone())).await;
    assert_eq!(r.status, 200, "{r:?}");
    let text = r.json()["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["subject"], "alice");
    let r = post("write", Some(token)).await;
    assert_eq!(r.status, 403, "{r:?}");
    assert!(r.header("www-authenticate").unwrap().ends_with("scope=\"mcp files:write\""));
    server.shutdown().await;
}

#[tokio::test]
async fn a_legacy_sse_stream_ends_at_its_tokens_expiry_and_takes_its_session_with_it() {
    let auth = AuthServer::start().await;
    let (http, addr, resource) = without_leeway(&auth, Server::builder().name("expiring").build().unwrap()).await;
    let spec = json!({"claims": {"aud": resource, "scope": "mcp", "sub": "alice", "client_id": "app-1"},
        "expiresIn": 2});
    let short = bearer(&auth.mint(spec).await);
    let get_headers = [("Accept", "text/event-stream"), ("Authorization", short.as_str())];
    let (stream, ended) = until_the_end(addr, "GET", "/sse", &get_headers, "").await;
    assert!(ended, "the legacy stream ended: {stream}");
    assert!(stream.starts_with("HTTP/1.1 200"), "{stream}");
    let endpoint = stream
        .lines()
        .find_map(|l| l.strip_prefix("data: /message?"))
        .unwrap_or_else(|| panic!("an endpoint event: {stream}"))
        .to_owned();

    // Legacy HTTP+SSE cannot resume: the session is gone, even for a valid token of its holder.
    let lasting = bearer(&auth.mint(claims(&resource, "mcp")).await);
    let path = format!("/message?{endpoint}");
    let post = [(JSON.0, JSON.1), ("Authorization", lasting.as_str())];
    let gone = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let r = raw(addr, "POST", &path, &post, &init_body(), SHORT).await;
            if r.status == 404 {
                return r;
            }
            assert_eq!(r.status, 202, "{r:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let r = gone.await.expect("the session ends with its stream");
    assert_eq!(r.status, 404, "{r:?}");
    http.shutdown().await;
}
