//! An HTTP client with OAuth login (`client::oauth`): the first request's 401 starts discovery
//! (protected resource metadata, then the authorization server's), the authorization code
//! flow with PKCE runs through a loopback redirect listener, and the tokens are kept in a file
//! so the next run reuses (or refreshes) them without asking again.
//!
//! Run: `cargo run --example http_oauth_client --features oauth -- URL [CLIENT_ID]` against a
//! server protected by an OAuth authorization server. It prints `open: <authorization URL>`;
//! open it in a browser and log in. Without `CLIENT_ID`, the client registers itself
//! dynamically (RFC 7591) where the authorization server allows it.

use std::sync::Arc;

use mcpwire::client::oauth::{FileTokenStore, LoopbackRedirect, OAuthClient, OAuthConfig, PreRegistered};
use mcpwire::client::{Client, ClientOptions};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: http_oauth_client URL [CLIENT_ID]")?;

    // Where the browser comes back: a listener on 127.0.0.1, any free port.
    let redirect = LoopbackRedirect::bind(0, "/callback", |url| println!("open: {url}")).await?;
    let mut config = OAuthConfig::default().client_name("mcpwire-example").redirect_uri(redirect.redirect_uri());
    if let Some(client_id) = args.next() {
        config = config.pre_registered(PreRegistered::public(client_id));
    }
    let store_path = std::env::var("MCP_TOKEN_FILE").unwrap_or_else(|_| "mcp-tokens.json".into());
    let store = Arc::new(FileTokenStore::new(store_path));
    let oauth = Arc::new(OAuthClient::new(&url, config, store, Some(Arc::new(redirect)))?);

    // The transport asks the OAuth client for each request's `Authorization` header.
    let transport = HttpClientTransport::new(HttpClientConfig::new(&url).authorizer(oauth))?;
    let client = Client::connect(transport, ClientOptions::default()).await?;
    println!("connected to {}", client.server_info().name);
    for tool in client.list_tools().await? {
        println!("tool: {}", tool.name);
    }
    client.close().await?;
    Ok(())
}
