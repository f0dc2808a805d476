//! The OAuth client against a real HTTP server on 127.0.0.1:0 that plays the protected MCP
//! server and its authorization server: the whole flow through [`HttpClientTransport`], refresh
//! (single-flight, across a restart with the file store), and the refusals (no PKCE S256, a
//! wrong `iss`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{Notify, Semaphore};

use super::*;
use crate::proto::jsonrpc::Message;
use crate::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use crate::transport::{Transport, TransportError};

/// How the mock authorization server behaves.
#[derive(Clone, Copy)]
struct Behaviour {
    advertise_s256: bool,
    wrong_iss: bool,
    /// `/mcp` answers 403 `insufficient_scope` to a token without this scope.
    required_scope: Option<&'static str>,
    /// Whether the authorization server grants `required_scope` when asked for it.
    grants_required: bool,
    /// DPoP with nonces at both servers (`as-nonce`, `rs-nonce`).
    dpop: bool,
    /// The `scope` of `/mcp`'s 401 challenge.
    challenge_scope: Option<&'static str>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            advertise_s256: true,
            wrong_iss: false,
            required_scope: None,
            grants_required: true,
            dpop: false,
            challenge_scope: None,
        }
    }
}

#[derive(Default)]
struct Seen {
    registrations: usize,
    authorizations: Vec<HashMap<String, String>>,
    token_requests: Vec<HashMap<String, String>>,
    /// The claims of each DPoP proof, where it was sent.
    proofs: Vec<(String, serde_json::Value)>,
}

struct Mock {
    base: String,
    behaviour: Behaviour,
    seen: Mutex<Seen>,
    challenge: Mutex<Option<String>>,
    /// The scopes of the last authorization request, granted with its code.
    scopes: Mutex<Vec<String>>,
    /// Issued access tokens and their scopes.
    valid: Mutex<Vec<(String, Vec<String>)>>,
    issued: AtomicUsize,
    /// Signalled when a refresh request arrives; a refresh answers only once a permit is here.
    refresh_arrived: Notify,
    refresh_gate: Semaphore,
}

impl Mock {
    async fn start(behaviour: Behaviour) -> Arc<Mock> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let mock = Arc::new(Mock {
            base: format!("http://127.0.0.1:{}", addr.port()),
            behaviour,
            seen: Mutex::default(),
            challenge: Mutex::default(),
            scopes: Mutex::default(),
            valid: Mutex::default(),
            issued: AtomicUsize::new(0),
            refresh_arrived: Notify::new(),
            refresh_gate: Semaphore::new(Semaphore::MAX_PERMITS),
        });
        let served = mock.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let mock = served.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let mock = mock.clone();
                        async move { Ok::<_, Infallible>(mock.handle(request).await) }
                    });
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service).await;
                });
            }
        });
        mock
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn json(status: StatusCode, body: serde_json::Value) -> Response<Full<Bytes>> {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap()
    }

    fn issue(&self, refresh: bool) -> serde_json::Value {
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        let access = format!("at-{n}");
        let mut scopes = self.scopes.lock().unwrap().clone();
        if !self.behaviour.grants_required {
            scopes.retain(|s| Some(s.as_str()) != self.behaviour.required_scope);
        }
        self.valid.lock().unwrap().push((access.clone(), scopes));
        let kind = if self.behaviour.dpop { "DPoP" } else { "Bearer" };
        let mut answer = serde_json::json!({"access_token": access, "token_type": kind, "expires_in": 3600});
        if refresh {
            answer["refresh_token"] = format!("rt-{n}").into();
        }
        answer
    }

    async fn handle(self: Arc<Self>, request: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let query: HashMap<String, String> =
            url::form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes()).into_owned().collect();
        let authorization = request.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let proof = request.headers().get("dpop").and_then(|v| v.to_str().ok()).map(|jwt| {
            use base64::Engine as _;
            let part = |i: usize| {
                let text = jwt.split('.').nth(i).unwrap_or("");
                let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).unwrap_or_default();
                serde_json::from_slice::<serde_json::Value>(&bytes).unwrap_or_default()
            };
            // The claims, with the header's key beside them.
            let mut claims = part(1);
            claims["jwk"] = part(0)["jwk"].clone();
            claims
        });
        if let Some(claims) = &proof {
            self.seen.lock().unwrap().proofs.push((path.clone(), claims.clone()));
        }
        let body = request.into_body().collect().await.unwrap().to_bytes();
        let base = &self.base;
        match path.as_str() {
            "/.well-known/oauth-protected-resource/mcp" => Mock::json(
                StatusCode::OK,
                serde_json::json!({"resource": self.url(), "authorization_servers": [base], "scopes_supported": ["mcp:basic"]}),
            ),
            "/.well-known/oauth-authorization-server" => {
                let methods: &[&str] = if self.behaviour.advertise_s256 { &["S256"] } else { &["plain"] };
                Mock::json(
                    StatusCode::OK,
                    serde_json::json!({
                        "issuer": base,
                        "authorization_endpoint": format!("{base}/authorize"),
                        "token_endpoint": format!("{base}/token"),
                        "registration_endpoint": format!("{base}/register"),
                        "code_challenge_methods_supported": methods,
                        "token_endpoint_auth_methods_supported": ["client_secret_post"],
                        "authorization_response_iss_parameter_supported": true,
                        "dpop_signing_alg_values_supported": if self.behaviour.dpop { serde_json::json!(["ES256"]) } else { serde_json::Value::Null },
                    }),
                )
            }
            "/register" => {
                self.seen.lock().unwrap().registrations += 1;
                Mock::json(
                    StatusCode::CREATED,
                    serde_json::json!({"client_id": "dcr-client", "client_secret": "dcr-s3cret", "token_endpoint_auth_method": "client_secret_post"}),
                )
            }
            "/authorize" => {
                *self.challenge.lock().unwrap() = query.get("code_challenge").cloned();
                *self.scopes.lock().unwrap() =
                    query.get("scope").map(|s| s.split(' ').map(str::to_owned).collect()).unwrap_or_default();
                let iss = if self.behaviour.wrong_iss { "https://evil.example".to_owned() } else { base.clone() };
                let mut redirect = url::Url::parse(&query["redirect_uri"]).unwrap();
                redirect
                    .query_pairs_mut()
                    .append_pair("code", "code-1")
                    .append_pair("state", &query["state"])
                    .append_pair("iss", &iss);
                self.seen.lock().unwrap().authorizations.push(query);
                Response::builder()
                    .status(StatusCode::FOUND)
                    .header("location", redirect.as_str())
                    .body(Full::default())
                    .unwrap()
            }
            "/token" => {
                let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
                self.seen.lock().unwrap().token_requests.push(form.clone());
                if self.behaviour.dpop && proof.as_ref().is_none_or(|p| p["nonce"] != "as-nonce") {
                    return Response::builder()
                        .status(StatusCode::BAD_REQUEST)
                        .header("dpop-nonce", "as-nonce")
                        .body(Full::new(Bytes::from_static(br#"{"error":"use_dpop_nonce"}"#)))
                        .unwrap();
                }
                match form.get("grant_type").map(String::as_str) {
                    Some("authorization_code") => {
                        let challenge = self.challenge.lock().unwrap().clone();
                        let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                        if challenge != Some(Pkce::from_verifier(verifier).challenge)
                            || form.get("code").map(String::as_str) != Some("code-1")
                        {
                            return Mock::json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_grant"}));
                        }
                        Mock::json(StatusCode::OK, self.issue(true))
                    }
                    Some("refresh_token") => {
                        self.refresh_arrived.notify_one();
                        let _permit = self.refresh_gate.acquire().await.unwrap();
                        // No new refresh token: the client keeps the old one.
                        Mock::json(StatusCode::OK, self.issue(false))
                    }
                    Some("urn:ietf:params:oauth:grant-type:token-exchange")
                        if form.get("subject_token").is_some_and(|t| t == "id-token-1") =>
                    {
                        Mock::json(
                            StatusCode::OK,
                            serde_json::json!({"access_token": "id-jag-1", "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}),
                        )
                    }
                    Some(token::JWT_BEARER_GRANT)
                        if form.get("assertion").is_some_and(|a| a == "workload-jwt" || a == "id-jag-1") =>
                    {
                        Mock::json(StatusCode::OK, self.issue(false))
                    }
                    _ => Mock::json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "unsupported_grant_type"})),
                }
            }
            "/mcp" => {
                let scheme = if self.behaviour.dpop { "DPoP " } else { "Bearer " };
                let token = authorization.as_deref().and_then(|a| a.strip_prefix(scheme)).map(str::to_owned);
                if let (true, Some(token)) = (self.behaviour.dpop, &token) {
                    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
                    use base64::Engine as _;
                    let ath = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref());
                    let claims = proof.clone().unwrap_or_default();
                    if claims["ath"] != ath.as_str() || claims["htu"] != self.url().as_str() || claims["htm"] != "POST"
                    {
                        return Mock::json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_dpop_proof"}));
                    }
                    if claims["nonce"] != "rs-nonce" {
                        return Response::builder()
                            .status(StatusCode::UNAUTHORIZED)
                            .header("www-authenticate", r#"DPoP error="use_dpop_nonce""#)
                            .header("dpop-nonce", "rs-nonce")
                            .body(Full::default())
                            .unwrap();
                    }
                }
                let scopes = token.and_then(|t| {
                    self.valid.lock().unwrap().iter().find(|(valid, _)| *valid == t).map(|(_, scopes)| scopes.clone())
                });
                let Some(scopes) = scopes else {
                    return Response::builder()
                        .status(StatusCode::UNAUTHORIZED)
                        .header(
                            "www-authenticate",
                            match self.behaviour.challenge_scope {
                                Some(scope) => format!(
                                    r#"Bearer scope="{scope}", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
                                ),
                                None => format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#),
                            },
                        )
                        .body(Full::new(Bytes::from_static(br#"{"error":"invalid_token"}"#)))
                        .unwrap();
                };
                if let Some(required) = self.behaviour.required_scope.filter(|r| !scopes.iter().any(|s| s == r)) {
                    return Response::builder()
                        .status(StatusCode::FORBIDDEN)
                        .header(
                            "www-authenticate",
                            format!(r#"Bearer error="insufficient_scope", scope="{required}", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#),
                        )
                        .body(Full::default())
                        .unwrap();
                }
                let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
                Mock::json(StatusCode::OK, serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
            }
            _ => Response::builder().status(StatusCode::NOT_FOUND).body(Full::default()).unwrap(),
        }
    }
}

fn oauth_client(mock: &Mock, store: Arc<dyn TokenStore>) -> Arc<OAuthClient> {
    let handler: Arc<dyn AuthorizationHandler> = Arc::new(RedirectFollower::new().unwrap());
    Arc::new(OAuthClient::new(&mock.url(), OAuthConfig::default(), store, Some(handler)).unwrap())
}

async fn ping(client: &Arc<OAuthClient>, url: &str) -> Result<Message, TransportError> {
    let config = HttpClientConfig::new(url).legacy_fallback(false).open_get_stream(false).authorizer(client.clone());
    let transport = HttpClientTransport::new(config)?;
    transport.send(Message::from_slice(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap()).await?;
    let answer = transport.recv().await?.expect("an answer");
    transport.close().await?;
    Ok(answer)
}

#[tokio::test]
async fn a_401_runs_the_whole_flow_and_the_request_goes_again() {
    let mock = Mock::start(Behaviour::default()).await;
    let store = Arc::new(MemoryTokenStore::new());
    let client = oauth_client(&mock, store.clone());
    let answer = ping(&client, &mock.url()).await.unwrap();
    assert!(matches!(answer, Message::Response(ref r) if r.id == crate::proto::jsonrpc::Id::Number(7)), "{answer:?}");

    let seen = mock.seen.lock().unwrap();
    assert_eq!(seen.registrations, 1, "no CIMD, no pre-registration: DCR");
    let authorization = &seen.authorizations[0];
    assert_eq!(authorization["client_id"], "dcr-client");
    assert_eq!(authorization["resource"], mock.url(), "RFC 8707 resource, as the metadata names it");
    assert_eq!(authorization["scope"], "mcp:basic", "scopes_supported when the challenge names none");
    assert_eq!(authorization["code_challenge_method"], "S256");
    let token = &seen.token_requests[0];
    assert_eq!(token["grant_type"], "authorization_code");
    assert_eq!(token["resource"], mock.url());
    assert_eq!(token["client_secret"], "dcr-s3cret", "client_secret_post, as registered");

    let key = CredentialKey::new(mock.base.clone(), mock.url());
    let stored = store.load(&key).unwrap().expect("credentials under issuer + resource");
    let tokens = stored.tokens.clone().unwrap();
    assert_eq!(tokens.access_token.expose(), "at-0");
    assert!(tokens.expires_at.unwrap() > unix_now(), "absolute expiry");
    assert_eq!(stored.client.as_ref().unwrap().client_id, "dcr-client", "the DCR registration is kept");
    let shown = format!("{stored:?} {client:?}");
    for secret in ["at-0", "rt-0", "dcr-s3cret"] {
        assert!(!shown.contains(secret), "{secret} shown in {shown}");
    }
}

#[tokio::test]
async fn an_expiring_token_is_refreshed_once_for_concurrent_requests_even_after_a_restart() {
    let mock = Mock::start(Behaviour::default()).await;
    let dir = std::env::temp_dir().join(format!("mcpwire-oauth-{}", authorization::random_token()));
    let path = dir.join("creds.json");
    // The first process: a whole flow, the tokens in the file.
    ping(&oauth_client(&mock, Arc::new(FileTokenStore::new(&path))), &mock.url()).await.unwrap();
    let key = CredentialKey::new(mock.base.clone(), mock.url());
    let file = FileTokenStore::new(&path);
    let mut stored = file.load(&key).unwrap().unwrap();
    // Its access token has expired since.
    stored.tokens.as_mut().unwrap().expires_at = Some(1);
    file.save(&key, &stored).unwrap();

    // The second process: many requests at once find the expired token.
    let client = oauth_client(&mock, Arc::new(FileTokenStore::new(&path)));
    mock.refresh_gate.forget_permits(Semaphore::MAX_PERMITS);
    let url = mock.url();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { client.authorization("POST", &url).await.map(|c| c.authorization) })
        })
        .collect();
    mock.refresh_arrived.notified().await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    mock.refresh_gate.add_permits(Semaphore::MAX_PERMITS);
    for task in tasks {
        assert_eq!(task.await.unwrap().as_deref(), Some("Bearer at-1"));
    }

    let seen = mock.seen.lock().unwrap();
    let refreshes: Vec<_> = seen.token_requests.iter().filter(|f| f["grant_type"] == "refresh_token").collect();
    assert_eq!(refreshes.len(), 1, "one refresh for eight requests");
    assert_eq!(refreshes[0]["refresh_token"], "rt-0");
    assert_eq!(refreshes[0]["client_secret"], "dcr-s3cret", "the client secret goes with the refresh");
    assert_eq!(refreshes[0]["resource"], mock.url());
    drop(seen);
    let tokens = FileTokenStore::new(&path).load(&key).unwrap().unwrap().tokens.unwrap();
    assert_eq!(tokens.access_token.expose(), "at-1");
    assert_eq!(tokens.refresh_token.as_ref().map(Secret::expose), Some("rt-0"), "the old refresh token is kept");
    assert!(tokens.expires_at.unwrap() > unix_now());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_server_without_pkce_s256_is_refused_before_the_user_is_sent_there() {
    let mock = Mock::start(Behaviour { advertise_s256: false, ..Behaviour::default() }).await;
    let client = oauth_client(&mock, Arc::new(MemoryTokenStore::new()));
    let error = ping(&client, &mock.url()).await.unwrap_err();
    assert!(matches!(&error, TransportError::Http { status: 401, message } if message.contains("pkce")), "{error}");
    assert!(mock.seen.lock().unwrap().authorizations.is_empty());
}

#[tokio::test]
async fn a_redirect_from_another_issuer_never_reaches_the_token_endpoint() {
    let mock = Mock::start(Behaviour { wrong_iss: true, ..Behaviour::default() }).await;
    let client = oauth_client(&mock, Arc::new(MemoryTokenStore::new()));
    let error = ping(&client, &mock.url()).await.unwrap_err();
    assert!(matches!(&error, TransportError::Http { status: 401, message } if message.contains("evil")), "{error}");
    let seen = mock.seen.lock().unwrap();
    assert!(!seen.authorizations.is_empty());
    assert!(seen.token_requests.is_empty(), "the code is not spent");
}

#[tokio::test]
async fn login_asks_for_the_challenges_scopes_and_logout_forgets() {
    let mock = Mock::start(Behaviour { challenge_scope: Some("mcp:read"), ..Behaviour::default() }).await;
    let store = Arc::new(MemoryTokenStore::new());
    let client = oauth_client(&mock, store.clone());
    client.login().await.unwrap();
    assert_eq!(
        mock.seen.lock().unwrap().authorizations[0]["scope"],
        "mcp:read",
        "the 401's scope, not scopes_supported"
    );
    assert!(client.stored_tokens().unwrap().is_some());
    assert_eq!(client.logout().unwrap(), 1);
    assert!(client.stored_tokens().unwrap().is_none());
    assert!(client.authorization("POST", &mock.url()).await.is_none());
}

/// A server that answers the documents it was given (by path) and 404 to anything else, and
/// records every path asked for, in order.
struct Documents {
    base: String,
    documents: Mutex<HashMap<String, serde_json::Value>>,
    asked: Mutex<Vec<String>>,
}

impl Documents {
    async fn start() -> Arc<Documents> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = Arc::new(Documents {
            base: format!("http://127.0.0.1:{port}"),
            documents: Mutex::default(),
            asked: Mutex::default(),
        });
        let served = server.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let server = served.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                        let server = server.clone();
                        async move {
                            let path = request.uri().path().to_owned();
                            server.asked.lock().unwrap().push(path.clone());
                            let document = server.documents.lock().unwrap().get(&path).cloned();
                            Ok::<_, Infallible>(match document {
                                Some(body) => Mock::json(StatusCode::OK, body),
                                None => {
                                    Response::builder().status(StatusCode::NOT_FOUND).body(Full::default()).unwrap()
                                }
                            })
                        }
                    });
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service).await;
                });
            }
        });
        server
    }

    fn serve(&self, path: &str, body: serde_json::Value) {
        self.documents.lock().unwrap().insert(path.to_owned(), body);
    }

    fn asked(&self) -> Vec<String> {
        std::mem::take(&mut *self.asked.lock().unwrap())
    }

    fn as_metadata(&self, issuer: &str) -> serde_json::Value {
        serde_json::json!({"issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"), "token_endpoint": format!("{issuer}/token")})
    }
}

fn http_client() -> http::HttpClient {
    http::HttpClient::new(
        std::time::Duration::from_secs(10),
        #[cfg(feature = "tls")]
        &[],
    )
    .unwrap()
}

#[tokio::test]
async fn discovery_asks_for_metadata_in_the_spec_order() {
    let server = Documents::start().await;
    let base = server.base.clone();
    let mcp = url::Url::parse(&format!("{base}/mcp")).unwrap();
    let issuer = format!("{base}/tenant1");
    // Root resource metadata only; OpenID metadata by path appending only.
    server.serve(
        "/.well-known/oauth-protected-resource",
        serde_json::json!({"resource": base, "authorization_servers": [issuer]}),
    );
    server.serve("/tenant1/.well-known/openid-configuration", server.as_metadata(&issuer));
    let found = discovery::discover(&http_client(), &mcp, None).await.unwrap();
    assert_eq!(found.authorization_server.issuer, issuer);
    assert_eq!(found.resource, base, "the resource as the metadata names it");
    assert_eq!(
        server.asked(),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
            "/tenant1/.well-known/openid-configuration",
        ]
    );

    // The challenge's resource_metadata comes first; an issuer without a path: OAuth, then OpenID.
    server.serve("/custom/meta.json", serde_json::json!({"resource": mcp.as_str(), "authorization_servers": [base]}));
    server.serve("/.well-known/openid-configuration", server.as_metadata(&base));
    let challenge =
        BearerChallenge { resource_metadata: Some(format!("{base}/custom/meta.json")), ..Default::default() };
    discovery::discover(&http_client(), &mcp, Some(&challenge)).await.unwrap();
    assert_eq!(
        server.asked(),
        ["/custom/meta.json", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]
    );
}

#[tokio::test]
async fn discovery_refuses_another_resource_and_another_issuer() {
    let server = Documents::start().await;
    let base = server.base.clone();
    let mcp = url::Url::parse(&format!("{base}/mcp")).unwrap();
    server.serve(
        "/.well-known/oauth-protected-resource/mcp",
        serde_json::json!({"resource": "https://evil.example.com/mcp", "authorization_servers": [base]}),
    );
    let error = discovery::discover(&http_client(), &mcp, None).await.unwrap_err();
    assert!(matches!(error, AuthError::ResourceMismatch { .. }), "{error}");
    assert_eq!(
        server.asked(),
        ["/.well-known/oauth-protected-resource/mcp"],
        "nothing more once the resource is wrong"
    );

    server.serve(
        "/.well-known/oauth-protected-resource/mcp",
        serde_json::json!({"resource": mcp.as_str(), "authorization_servers": [base]}),
    );
    server.serve("/.well-known/oauth-authorization-server", server.as_metadata("https://attacker.example.com"));
    let error = discovery::discover(&http_client(), &mcp, None).await.unwrap_err();
    assert!(matches!(error, AuthError::IssuerMismatch { .. }), "{error}");
}

#[tokio::test]
async fn insufficient_scope_steps_up_with_the_union_of_scopes() {
    let mock = Mock::start(Behaviour { required_scope: Some("mcp:write"), ..Behaviour::default() }).await;
    let client = oauth_client(&mock, Arc::new(MemoryTokenStore::new()));
    ping(&client, &mock.url()).await.unwrap();
    let seen = mock.seen.lock().unwrap();
    let scopes: Vec<&str> = seen.authorizations.iter().map(|a| a["scope"].as_str()).collect();
    assert_eq!(scopes, ["mcp:basic", "mcp:basic mcp:write"], "the held scopes kept on step-up");
}

#[tokio::test]
async fn step_up_gives_up_after_its_limit() {
    let behaviour = Behaviour { required_scope: Some("mcp:admin"), grants_required: false, ..Behaviour::default() };
    let mock = Mock::start(behaviour).await;
    let client = oauth_client(&mock, Arc::new(MemoryTokenStore::new()));
    let error = ping(&client, &mock.url()).await.unwrap_err();
    assert!(matches!(&error, TransportError::Http { status: 403, .. }), "{error}");
    // The first authorization (after the 401) and two step-ups: no more.
    assert_eq!(mock.seen.lock().unwrap().authorizations.len(), 3);
    // A later request for the same scope does not start the loop again.
    assert!(ping(&client, &mock.url()).await.is_err());
    assert_eq!(mock.seen.lock().unwrap().authorizations.len(), 3);
}

#[tokio::test]
async fn a_workload_presents_its_identity_jwt_as_the_grant() {
    let mock = Mock::start(Behaviour::default()).await;
    let config = OAuthConfig::default()
        .client_credentials("workload-1", MachineCredential::Assertion(Secret::new("workload-jwt")));
    let client = Arc::new(OAuthClient::new(&mock.url(), config, Arc::new(MemoryTokenStore::new()), None).unwrap());
    ping(&client, &mock.url()).await.unwrap();
    let seen = mock.seen.lock().unwrap();
    assert_eq!(seen.registrations, 0, "a machine client does not register");
    assert!(seen.authorizations.is_empty(), "nor sends a user anywhere");
    let form = &seen.token_requests[0];
    assert_eq!(form["grant_type"], token::JWT_BEARER_GRANT);
    assert_eq!(form["client_id"], "workload-1");
    assert_eq!(form["resource"], mock.url());
    assert!(!form.contains_key("client_secret"));
}

#[tokio::test]
async fn an_enterprise_id_token_is_exchanged_for_an_id_jag_and_presented_as_the_grant() {
    let mock = Mock::start(Behaviour::default()).await;
    let grant = EnterpriseGrant::new(format!("{}/token", mock.base), "id-token-1")
        .idp_client_id("idp-client")
        .client_secret("as-s3cret");
    let config = OAuthConfig::default().client_credentials("enterprise-app", MachineCredential::Enterprise(grant));
    let client = Arc::new(OAuthClient::new(&mock.url(), config, Arc::new(MemoryTokenStore::new()), None).unwrap());
    ping(&client, &mock.url()).await.unwrap();
    let seen = mock.seen.lock().unwrap();
    let [exchange, bearer] = &seen.token_requests[..] else { panic!("{:?}", seen.token_requests) };
    assert_eq!(exchange["requested_token_type"], "urn:ietf:params:oauth:token-type:id-jag");
    assert_eq!(exchange["subject_token_type"], "urn:ietf:params:oauth:token-type:id_token");
    assert_eq!(exchange["audience"], mock.base, "the ID-JAG is for the authorization server");
    assert_eq!(exchange["resource"], mock.url());
    assert_eq!(exchange["client_id"], "idp-client");
    assert_eq!(bearer["grant_type"], token::JWT_BEARER_GRANT);
    assert_eq!(bearer["assertion"], "id-jag-1");
    assert_eq!(bearer["client_secret"], "as-s3cret", "client_secret_post, as the server allows");
    assert!(!format!("{client:?}").contains("id-token-1"));
}

#[tokio::test]
async fn dpop_binds_the_token_and_honours_both_servers_nonces() {
    let mock = Mock::start(Behaviour { dpop: true, ..Behaviour::default() }).await;
    let store = Arc::new(MemoryTokenStore::new());
    let client = oauth_client(&mock, store.clone());
    ping(&client, &mock.url()).await.unwrap();
    let first_key = {
        let seen = mock.seen.lock().unwrap();
        let at_token: Vec<&serde_json::Value> =
            seen.proofs.iter().filter(|(p, _)| p == "/token").map(|(_, c)| c).collect();
        assert_eq!(at_token.len(), 2, "the token request, then again with the nonce");
        assert_eq!(at_token[1]["nonce"], "as-nonce");
        assert_eq!(at_token[1]["htu"], format!("{}/token", mock.base));
        assert!(at_token[0].get("ath").is_none(), "no token yet to hash");
        let at_mcp: Vec<&serde_json::Value> = seen.proofs.iter().filter(|(p, _)| p == "/mcp").map(|(_, c)| c).collect();
        assert_eq!(at_mcp.len(), 2, "the request, then again with the MCP server's nonce");
        assert_eq!(at_mcp[1]["nonce"], "rs-nonce");
        assert_ne!(at_mcp[0]["jti"], at_mcp[1]["jti"], "a fresh proof each time");
        at_mcp[1]["jwk"].clone()
    };
    assert!(client.stored_tokens().unwrap().unwrap().1.is_dpop());

    // Another process with the same store presents the kept token with the key it is bound to.
    let restarted = oauth_client(&mock, store);
    let credentials = restarted.authorization("POST", &mock.url()).await.unwrap();
    assert!(credentials.authorization.starts_with("DPoP "));
    ping(&restarted, &mock.url()).await.unwrap();
    let seen = mock.seen.lock().unwrap();
    assert_eq!(seen.token_requests.len(), 2, "no new flow");
    let last = &seen.proofs.last().unwrap().1;
    assert_eq!(last["jwk"], first_key, "the same key after the restart");
}
