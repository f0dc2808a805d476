//! The server layer behind stateless Streamable HTTP: every POST gets a transport of its own
//! that never saw `initialize`, so the server must not gate requests on a handshake.

use mcpwire::client::{Client, ClientOptions};
use mcpwire::proto::mcp_types::ContentBlock;
use mcpwire::server::echo::echo_server;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use serde_json::json;

#[tokio::test]
async fn echo_server_answers_over_stateless_http() {
    let server = echo_server();
    let config = HttpServerConfig::default().stateless(true);
    let http = HttpServer::bind(config, move |transport| {
        let serving = server.serve(transport);
        async move {
            let _ = serving.await;
        }
    })
    .await
    .unwrap();
    let transport = HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap();
    let client = Client::connect(transport, ClientOptions::default()).await.unwrap();
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["add", "echo"]);
    let args = json!({"text": "stateless"}).as_object().cloned();
    let result = client.call_tool("echo", args).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "stateless"), "{result:?}");
    assert_eq!(http.session_count(), 0, "stateless mode keeps no sessions");
    client.close().await.unwrap();
    http.shutdown().await;
}
