//! The client under test for the official conformance suite's client mode
//! (`@modelcontextprotocol/conformance client --command "conformance_client"`).
//!
//! The suite starts a scenario server, then runs `conformance_client URL` with the scenario's
//! name in `MCP_CONFORMANCE_SCENARIO`, the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION` (when
//! given) and scenario data as JSON in `MCP_CONFORMANCE_CONTEXT`. This program plays the part
//! each scenario expects over Streamable HTTP and exits 0 when it could, 1 otherwise (the suite
//! judges the traffic, not the exit code). `scripts/conformance-client-suite` runs the lot.
//!
//! The era follows the revision: a handshake-era one is run with [`EraPolicy::Legacy`] offering
//! it, 2026-07-28 with [`EraPolicy::Auto`] (the `server/discover` probe, stateless from then on).
//!
//! Scenarios: `initialize`, `tools_call`, `elicitation-sep1034-client-defaults` (an elicitation
//! handler that accepts with the schema's defaults), `sse-retry` (the transport resumes the
//! dropped stream with GET and `Last-Event-ID` after `retry`), `json-schema-2020-12-preservation`
//! (a tool's `inputSchema` is sent back as received); for 2026-07-28 `http-standard-headers`
//! (every tool, resource and prompt listed and used once), `http-custom-headers` (the tool calls
//! the context names), `sep-2322-client-request-state` (every tool called, input requests
//! answered by the same elicitation handler). Anything else (`request-metadata`,
//! `http-invalid-tool-headers`, the `auth/*` scenarios) connects, lists tools if the server has
//! them and calls each with no arguments.
//!
//! Every connection carries an [`OAuthClient`]: a server that answers 401 gets the whole OAuth
//! flow. The suite's authorization servers redirect at once, so the authorization handler is a
//! [`RedirectFollower`] (GET the authorization URL, read the `Location`). Our Client ID Metadata
//! Document URL is the one the suite expects (`https://conformance-test.local/client-metadata.json`).
//! Credentials in the scenario context become pre-registered ones (`client_id` and
//! `client_secret`), or for `auth/client-credentials-*` a machine client (a secret, or
//! `private_key_pem` with `signing_algorithm` for `private_key_jwt`); a `valid_jwt` (the
//! workload identity scenario) becomes the assertion of a JWT-bearer grant, and an
//! `idp_id_token` (enterprise-managed authorization) is exchanged at `idp_token_endpoint` for
//! the ID-JAG presented the same way.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use std::sync::Arc;

use mcpwire::client::oauth::{
    EnterpriseGrant, JwtAlgorithm, MachineCredential, MemoryTokenStore, OAuthClient, OAuthConfig, PreRegistered,
    RedirectFollower, Secret, SigningKey,
};
use mcpwire::client::{Client, ClientError, ClientOptions, EraPolicy};
use mcpwire::proto::jsonrpc::ErrorObject;
use mcpwire::proto::mcp_types::{ElicitRequestParams, ElicitResult, ElicitValue};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use serde_json::{json, Map, Value};

#[tokio::main]
async fn main() -> ExitCode {
    // The suite appends the URL to the command: it is the last argument.
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client URL (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let revision = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    eprintln!("conformance_client: scenario {scenario:?} ({revision}) at {url}");
    match run(&scenario, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance_client: {scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn options() -> ClientOptions {
    let mut options =
        ClientOptions::default().with_client_info("mcpwire-conformance-client", env!("CARGO_PKG_VERSION"));
    match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok().and_then(|v| v.parse::<ProtocolVersion>().ok()) {
        Some(version) if version.has_initialize_handshake() => {
            options = options.with_protocol_version(version).with_era(EraPolicy::Legacy);
        }
        _ => options = options.with_era(EraPolicy::Auto),
    }
    options.with_request_timeout(Some(Duration::from_secs(20)))
}

/// The suite's fixed Client ID Metadata Document URL (its `basic-cimd` scenario).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT").ok().and_then(|c| serde_json::from_str(&c).ok()).unwrap_or(Value::Null)
}

/// The OAuth client for `url`, configured from the scenario context.
fn oauth(url: &str) -> Result<OAuthClient, String> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context = context();
    let text = |name: &str| context[name].as_str().map(str::to_owned);
    let mut config =
        OAuthConfig::default().client_name("mcpwire-conformance-client").client_metadata_url(CLIENT_METADATA_URL);
    match (text("client_id"), text("client_secret"), text("private_key_pem"), text("valid_jwt")) {
        // Enterprise-managed authorization: the user's ID token from the identity provider.
        (Some(id), secret, _, _) if text("idp_id_token").is_some() => {
            let mut grant = EnterpriseGrant::new(
                text("idp_token_endpoint").unwrap_or_default(),
                text("idp_id_token").unwrap_or_default(),
            );
            if let Some(idp_client) = text("idp_client_id") {
                grant = grant.idp_client_id(idp_client);
            }
            if let Some(secret) = secret {
                grant = grant.client_secret(secret);
            }
            config = config.client_credentials(id, MachineCredential::Enterprise(grant));
        }
        // Workload identity federation: the identity provider's JWT is the grant.
        (Some(id), _, _, Some(jwt)) => {
            config = config.client_credentials(id, MachineCredential::Assertion(Secret::new(jwt)));
        }
        (Some(id), _, Some(pem), None) => {
            let algorithm: JwtAlgorithm =
                text("signing_algorithm").as_deref().unwrap_or("ES256").parse().map_err(|e| format!("{e}"))?;
            let key = SigningKey::from_pkcs8_pem(algorithm, &pem).map_err(|e| e.to_string())?;
            config = config.client_credentials(id, MachineCredential::PrivateKey(key));
        }
        (Some(id), Some(secret), None, None) if scenario.starts_with("auth/client-credentials") => {
            config = config.client_credentials(id, MachineCredential::Secret(Secret::new(secret)));
        }
        (Some(id), Some(secret), None, None) => config = config.pre_registered(PreRegistered::confidential(id, secret)),
        (Some(id), None, None, None) => config = config.pre_registered(PreRegistered::public(id)),
        _ => {}
    }
    let follower = RedirectFollower::new().map_err(|e| e.to_string())?;
    OAuthClient::new(url, config, Arc::new(MemoryTokenStore::new()), Some(Arc::new(follower)))
        .map_err(|e| e.to_string())
}

async fn connect(url: &str, options: ClientOptions) -> Result<Client<HttpClientTransport>, ClientError> {
    let mut config = HttpClientConfig::new(url);
    match oauth(url) {
        Ok(authorizer) => config = config.authorizer(Arc::new(authorizer)),
        Err(e) => eprintln!("conformance_client: no oauth: {e}"),
    }
    let transport = HttpClientTransport::new(config)?;
    Client::connect(transport, options).await
}

async fn run(scenario: &str, url: &str) -> Result<(), ClientError> {
    match scenario {
        "initialize" => {
            let client = connect(url, options()).await?;
            if client.capabilities().tools.is_some() {
                client.list_tools().await?;
            }
            let _ = client.close().await;
        }
        "json-schema-2020-12-preservation" => {
            // Send the focal tool's inputSchema back, as received, through the echo tool.
            let client = connect(url, options()).await?;
            let tools = client.list_tools().await?;
            let is_echo = |t: &&mcpwire::proto::mcp_types::Tool| t.input_schema["properties"].get("schema").is_some();
            let echo = tools.iter().find(is_echo);
            let focal = tools.iter().find(|t| !is_echo(t));
            if let (Some(echo), Some(focal)) = (echo, focal) {
                let arguments = json!({"schema": focal.input_schema}).as_object().cloned();
                client.call_tool(echo.name.clone(), arguments, Default::default()).await?;
            }
            let _ = client.close().await;
        }
        "tools_call" => {
            let client = connect(url, options()).await?;
            let tools = client.list_tools().await?;
            let tool = tools.iter().find(|t| t.name == "add_numbers").map_or("add_numbers", |t| t.name.as_str());
            let result =
                client.call_tool(tool, json!({"a": 5, "b": 3}).as_object().cloned(), Default::default()).await?;
            eprintln!("conformance_client: {}", serde_json::to_string(&result).unwrap_or_default());
            let _ = client.close().await;
        }
        "elicitation-sep1034-client-defaults" => {
            let client = connect(url, options().with_elicitation(accept_with_defaults)).await?;
            let tools = client.list_tools().await?;
            for tool in tools {
                client.call_tool(tool.name, Some(Map::new()), Default::default()).await?;
            }
            let _ = client.close().await;
        }
        "sse-retry" => {
            let client = connect(url, options()).await?;
            let tools = client.list_tools().await?;
            let name = tools.first().map_or("test_reconnection".to_owned(), |t| t.name.clone());
            client.call_tool(name, Some(Map::new()), Default::default()).await?;
            let _ = client.close().await;
        }
        "http-standard-headers" => {
            let client = connect(url, options()).await?;
            for tool in client.list_tools().await? {
                client.call_tool(tool.name, Some(Map::new()), Default::default()).await?;
            }
            if client.capabilities().resources.is_some() {
                for resource in client.list_resources().await? {
                    client.read_resource(resource.uri).await?;
                }
            }
            if client.capabilities().prompts.is_some() {
                for prompt in client.list_prompts().await? {
                    client.get_prompt(prompt.name, None).await?;
                }
            }
            let _ = client.close().await;
        }
        "http-custom-headers" => {
            let client = connect(url, options()).await?;
            client.list_tools().await?;
            let context = context();
            for call in context["toolCalls"].as_array().into_iter().flatten() {
                let name = call["name"].as_str().unwrap_or_default().to_owned();
                client.call_tool(name, call["arguments"].as_object().cloned(), Default::default()).await?;
            }
            let _ = client.close().await;
        }
        "sep-2322-client-request-state" => {
            let client = connect(url, options().with_elicitation(accept_with_defaults)).await?;
            for tool in client.list_tools().await? {
                client.call_tool(tool.name, Some(Map::new()), Default::default()).await?;
            }
            let _ = client.close().await;
        }
        _ => {
            let client = connect(url, options()).await?;
            if client.capabilities().tools.is_some() {
                for tool in client.list_tools().await? {
                    client.call_tool(tool.name, Some(Map::new()), Default::default()).await?;
                }
            }
            let _ = client.close().await;
        }
    }
    Ok(())
}

/// Accepts a form elicitation with every field that has a `default` in the schema set to it
/// (SEP-1034: the client pre-fills defaults; here no user changes them).
async fn accept_with_defaults(params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
    let ElicitRequestParams::Form(form) = params else {
        return Ok(ElicitResult::decline());
    };
    let schema = serde_json::to_value(&form.requested_schema).unwrap_or(Value::Null);
    let defaults: BTreeMap<String, ElicitValue> = schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, field)| field.get("default").map(|d| (name.clone(), ElicitValue::from(d.clone()))))
        .collect();
    Ok(ElicitResult::accept(defaults))
}
