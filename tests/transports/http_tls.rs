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

/// curl's status line for an initialize POSTed over https, letting ALPN choose the protocol.
async fn curl_status_over_tls(port: u16) -> String {
    let init = initialize_body("2025-11-25");
    let output = tokio::process::Command::new("curl")
        .args(["-sS", "-i", "-k", "--http2", "-H", "Content-Type: application/json"])
        .args(["-H", "Accept: application/json, text/event-stream", "--data-binary", &init])
        .arg(format!("https://localhost:{port}/mcp"))
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(30), output).await.unwrap().unwrap();
    assert!(output.status.success(), "curl: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("\"serverInfo\""), "{text}");
    text.lines().next().unwrap().trim().to_owned()
}

#[tokio::test]
async fn https_offers_h2_by_alpn_beside_http1_and_only_http1_when_http2_is_off() {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert_pem, key_pem) = (generated.cert.pem(), generated.key_pair.serialize_pem());
    let server_tls = tls::server_config_from_pem(cert_pem.as_bytes(), key_pem.as_bytes()).unwrap();
    let server = HttpServer::bind(HttpServerConfig::default().tls(server_tls.clone()), serve_echo).await.unwrap();
    // curl offers h2 and http/1.1; the server picks h2.
    assert_eq!(curl_status_over_tls(server.local_addr().port()).await, "HTTP/2 200");
    // Our client told to offer http/1.1 alone, on the same listener.
    let url = format!("https://localhost:{}/mcp", server.local_addr().port());
    let root = tls::certificates_from_pem(cert_pem.as_bytes()).unwrap().remove(0);
    let http1 = HttpClientConfig::new(url).add_root_certificate(root).http2(false);
    let transport = HttpClientTransport::new(http1).unwrap();
    let (peer, _) = client_peer(transport, "2025-11-25").await;
    assert_eq!(call(&peer, "echo", json!({"text": "h1 beside h2"})).await["content"][0]["text"], "h1 beside h2");
    peer.close().await.unwrap();
    server.shutdown().await;

    let http1_only = HttpServerConfig::default().tls(server_tls).http2(false);
    let server = HttpServer::bind(http1_only, serve_echo).await.unwrap();
    assert_eq!(curl_status_over_tls(server.local_addr().port()).await, "HTTP/1.1 200 OK");
    server.shutdown().await;
}
