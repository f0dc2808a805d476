//! https: our client and server over TLS on loopback, with a certificate generated in the test
//! (rcgen) and trusted as an extra root. Needs the `tls` feature (`cargo test --features tls`).

use crate::http_support;

use http_support::*;
use mcpwire::transport::sse_http::{tls, HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use serde_json::json;

#[tokio::test]
async fn https_round_trip_with_a_generated_certificate() {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert_pem = generated.cert.pem();
    let key_pem = generated.key_pair.serialize_pem();
    let server_tls = tls::server_config_from_pem(cert_pem.as_bytes(), key_pem.as_bytes()).unwrap();
    let server = HttpServer::bind(HttpServerConfig::default().tls(server_tls), serve_echo).await.unwrap();
    assert!(server.url().starts_with("https://127.0.0.1:"));
    let url = format!("https://localhost:{}/mcp", server.local_addr().port());
    let root = tls::certificates_from_pem(cert_pem.as_bytes()).unwrap().remove(0);
    let transport = HttpClientTransport::new(HttpClientConfig::new(url.clone()).add_root_certificate(root)).unwrap();
    let (peer, init) = client_peer(transport, "2025-11-25").await;
    assert_eq!(init["serverInfo"]["name"], "mcpwire-http-test");
    assert_eq!(call(&peer, "echo", json!({"text": "secure"})).await["content"][0]["text"], "secure");
    peer.close().await.unwrap();

    // Without trusting the certificate, the handshake fails.
    let untrusting = HttpClientTransport::new(HttpClientConfig::new(url)).unwrap();
    let init = mcpwire::proto::jsonrpc::Request::new(0, "initialize", &json!({})).unwrap();
    use mcpwire::transport::Transport;
    assert!(untrusting.send(init.into()).await.is_err());
    server.shutdown().await;
}
