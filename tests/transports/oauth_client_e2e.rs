//! Our OAuth client end to end: `Client` over `HttpClientTransport` with an `OAuthClient`
//! against our own HTTP server protected as an OAuth resource (JWT access tokens checked against
//! the JWKS), with a real authorization server (oauth2-mock-server, run by
//! `tests/peers/oauth_as.mjs`; it redirects at once, so `RedirectFollower` plays the browser).
//! The 401 runs discovery and the authorization code flow, the tool that needs another scope
//! gets a 403 and a step-up, the tokens land in the file store (mode 0600), a second process
//! uses them without a new authorization, and none of the secrets the authorization server
//! handed out shows in the OAuth client's `Debug`.

use crate::oauth_support;

use std::sync::Arc;
use std::time::Duration;

use mcpwire::auth::{JwtVerifier, ProtectedResource};
use mcpwire::client::oauth::{FileTokenStore, OAuthClient, OAuthConfig, PreRegistered, RedirectFollower, TokenStore};
use mcpwire::client::{Client, ClientOptions};
use mcpwire::server::{text_result, Server};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use oauth_support::AuthServer;
use serde_json::{json, Value};

fn tools() -> Server {
    Server::builder()
        .name("oauth-protected")
        .tool("whoami", "the verified principal", json!({"type": "object"}), |_args, ctx| async move {
            let seen = match ctx.principal() {
                Some(p) => {
                    json!({"subject": p.subject, "scopes": p.scopes, "client_id": p.client_id, "audience": p.audience})
                }
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

/// Our server, every request needing `mcp` and `write` needing `files:write`.
async fn protected(auth: &AuthServer) -> (HttpServer, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let verifier = JwtVerifier::new(auth.issuer(), &resource, auth.url("jwks_uri")).unwrap();
    let policy = ProtectedResource::new(&resource, Arc::new(verifier))
        .authorization_server(auth.issuer())
        .require_scope("mcp")
        .tool_scope("write", "files:write");
    let server = tools();
    let config = HttpServerConfig::default().protected_resource(policy);
    let http = server.serve_http_on(listener, config).await.unwrap();
    (http, resource)
}

async fn connect(url: &str, store: &std::path::Path) -> (Client<HttpClientTransport>, Arc<OAuthClient>) {
    let config = OAuthConfig::default().pre_registered(PreRegistered::public("mcpwire-client"));
    let store: Arc<dyn TokenStore> = Arc::new(FileTokenStore::new(store));
    let handler = Arc::new(RedirectFollower::new().unwrap());
    let oauth = Arc::new(OAuthClient::new(url, config, store, Some(handler)).unwrap());
    let transport = HttpClientTransport::new(HttpClientConfig::new(url).authorizer(oauth.clone())).unwrap();
    let options = ClientOptions::default().with_request_timeout(Some(Duration::from_secs(30)));
    (Client::connect(transport, options).await.expect("connects through the oauth flow"), oauth)
}

fn text(result: &mcpwire::proto::mcp_types::CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn our_client_authorizes_steps_up_and_reuses_its_stored_tokens() {
    let auth = AuthServer::start().await;
    let (server, resource) = protected(&auth).await;
    let dir = std::env::temp_dir().join(format!("mcpwire-oauth-e2e-{}", std::process::id()));
    let path = dir.join("credentials.json");

    let (client, oauth) = connect(&server.url(), &path).await;
    let seen: Value = serde_json::from_str(&text(
        &client.call_tool("whoami", Some(Default::default()), Default::default()).await.unwrap(),
    ))
    .unwrap();
    assert_eq!(seen["subject"], "johndoe", "the authorization server's user");
    assert_eq!(seen["client_id"], "mcpwire-client");
    assert_eq!(seen["audience"], json!([resource]), "RFC 8707: the token is for this server");
    assert_eq!(seen["scopes"], json!(["mcp"]), "the scope of the server's challenge");
    // `write` needs files:write: 403, then a step-up asking for both scopes.
    assert_eq!(
        text(&client.call_tool("write", Some(Default::default()), Default::default()).await.unwrap()),
        "written"
    );
    let seen: Value = serde_json::from_str(&text(
        &client.call_tool("whoami", Some(Default::default()), Default::default()).await.unwrap(),
    ))
    .unwrap();
    assert_eq!(seen["scopes"], json!(["mcp", "files:write"]), "the held scope kept on step-up");
    let _ = client.close().await;

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let secrets = auth.secrets().await;
    let issued = secrets.len();
    assert!(issued >= 4, "two codes and two access tokens at least: {issued}");
    let file = std::fs::read_to_string(&path).unwrap();
    for secret in &secrets {
        assert!(!format!("{oauth:?}").contains(secret.as_str()), "Debug shows no secret");
    }
    assert!(file.contains("files:write"), "the stepped-up token is the one kept");

    // Another process: the stored token, no new authorization.
    let (client, _) = connect(&server.url(), &path).await;
    let seen: Value = serde_json::from_str(&text(
        &client.call_tool("whoami", Some(Default::default()), Default::default()).await.unwrap(),
    ))
    .unwrap();
    assert_eq!(seen["scopes"], json!(["mcp", "files:write"]));
    let _ = client.close().await;
    assert_eq!(auth.secrets().await.len(), issued, "no new code or token was issued");
    std::fs::remove_dir_all(&dir).unwrap();
    server.shutdown().await;
}
