//! The client over the in-process transport: typed bodies cross without being serialized.

use std::sync::atomic::AtomicUsize;

use serde_json::json;

use super::*;
use crate::proto::mcp_types::{ContentBlock, TextContent, ToolsCapability};
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
    let _server = Peer::start(b, Role::Server, Mode::Handshake, session::Limits::default(), server.clone());
    let client = Client::connect(a, ClientOptions::default()).await.unwrap();
    assert_eq!(client.server_info().name, "typed");
    let result = client.call_tool("add", json!({"a": 1}).as_object().cloned()).await.unwrap();
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
    let server = Peer::start(b, Role::Server, Mode::Handshake, session::Limits::default(), TypedServer::default());
    let client = Client::connect(a, ClientOptions::default()).await.unwrap();
    let _ = server.close().await;
    let err = client.ping().await.unwrap_err();
    assert!(matches!(err, ClientError::Closed { .. }), "{err:?}");
}
