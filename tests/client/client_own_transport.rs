//! A transport of the user's own is told the protocol version through the `Transport` trait,
//! as stdio and HTTP are: a wrapper around a real stdio connection records every
//! `set_protocol_version` the client makes, against real servers in both eras (the Python
//! SDK's `mcp-server-time` speaks 2026-07-28 and 2025-11-25, `server-everything` only the
//! handshake era, so `auto` falls back), plain and behind a `BoxTransport`.

use std::sync::{Arc, Mutex};

use crate::support;

use mcpwire::client::{Client, ClientOptions, EraPolicy};
use mcpwire::proto::jsonrpc::Message;
use mcpwire::proto::mcp_types::ContentBlock;
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::boxed::BoxTransport;
use mcpwire::transport::stdio::{ChildCommand, StdioTransport};
use mcpwire::transport::{Transport, TransportError};
use serde_json::json;

type Told = Arc<Mutex<Vec<Option<ProtocolVersion>>>>;

/// A stdio connection that remembers each version it is told, then passes it on (so the
/// stdio decoder under it knows it too).
struct Recording {
    inner: StdioTransport,
    told: Told,
}

impl Transport for Recording {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.inner.send(message).await
    }

    async fn recv(&self) -> Result<Option<Message>, TransportError> {
        self.inner.recv().await
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.inner.close().await
    }

    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        self.told.lock().unwrap().push(version);
        self.inner.set_protocol_version(version);
    }
}

fn recording(command: ChildCommand) -> (Recording, Told) {
    let told = Told::default();
    (Recording { inner: command.spawn().expect("the server starts"), told: told.clone() }, told)
}

fn server_time() -> ChildCommand {
    ChildCommand::new(support::peer("MCP_SERVER_TIME")).arg("--local-timezone").arg("UTC")
}

fn everything() -> ChildCommand {
    ChildCommand::new(support::peer("MCP_NODE")).arg(support::peer("MCP_EVERYTHING_JS")).arg("stdio")
}

async fn answers<T: Transport>(client: &Client<T>, tool: &str, arguments: serde_json::Value) -> String {
    let result = client.call_tool(tool, arguments.as_object().cloned(), Default::default()).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    match &result.content[..] {
        [ContentBlock::Text(t), ..] => t.text.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_stateless_session_tells_the_users_transport_its_version_before_the_probe() {
    let (transport, told) = recording(server_time());
    let client = Client::connect(transport, ClientOptions::default()).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(*told.lock().unwrap(), [Some(ProtocolVersion::V2026_07_28)]);
    assert!(answers(&client, "get_current_time", json!({"timezone": "UTC"})).await.contains("UTC"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_handshake_tells_the_users_transport_the_negotiated_version() {
    let (transport, told) = recording(server_time());
    let client = Client::connect(transport, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(*told.lock().unwrap(), [Some(ProtocolVersion::V2025_11_25)]);
    assert!(answers(&client, "get_current_time", json!({"timezone": "UTC"})).await.contains("UTC"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_fallback_behind_a_box_tells_the_probe_then_unsets_it_then_the_negotiated_version() {
    let (transport, told) = recording(everything());
    let client = Client::connect(BoxTransport::new(transport), ClientOptions::default()).await.unwrap();
    let negotiated = client.protocol_version();
    assert!(negotiated < ProtocolVersion::V2026_07_28, "{negotiated:?}");
    assert_eq!(*told.lock().unwrap(), [Some(ProtocolVersion::V2026_07_28), None, Some(negotiated)]);
    assert_eq!(answers(&client, "echo", json!({"message": "boxed"})).await, "Echo: boxed");
    client.close().await.unwrap();
}
