//! Our HTTP client over HTTP/2 (needs the `tls` feature): against our server configured to
//! offer only `h2` by ALPN, it negotiates h2 and carries initialize, a hundred concurrent
//! `tools/call`s answered on SSE streams, the standalone GET stream and the closing DELETE over
//! one TCP connection (counted by a relay in front of the server); a client that offers only
//! `http/1.1` cannot connect to that server at all. Over h2c with prior knowledge, a
//! 2026-07-28 call dropped by its caller resets only its own stream: the server's handler is
//! dropped, and calls before and after it share the one connection.

use crate::http_support;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use http_support::*;
use mcpwire::transport::sse_http::{tls, HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use mcpwire::transport::Transport;
use serde_json::{json, Value};

/// A hundred concurrent slow calls: each saw its three progress events and its result.
async fn a_hundred_concurrent_sse_calls<T: Transport + 'static>(peer: &mcpwire::peer::Peer<T>) {
    let mut calls = tokio::task::JoinSet::new();
    for token in 0..100 {
        let peer = peer.clone();
        calls.spawn(async move { slow_call(&peer, json!(token)).await });
    }
    let mut answered = 0;
    while let Some(outcome) = calls.join_next().await {
        let (seen, text) = outcome.unwrap();
        assert_eq!(seen, [1, 2, 3], "every progress event of its own call, in order");
        assert_eq!(text, "slow done");
        answered += 1;
    }
    assert_eq!(answered, 100);
}

#[tokio::test]
async fn our_client_speaks_h2_to_an_h2_only_tls_server_over_one_connection() {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert_pem, key_pem) = (generated.cert.pem(), generated.key_pair.serialize_pem());
    let mut server_tls = tls::server_config_from_pem(cert_pem.as_bytes(), key_pem.as_bytes()).unwrap();
    // HTTP/2 only: a client that offers `http/1.1` alone fails the TLS handshake
    // (`no_application_protocol`, RFC 7301 §3.2).
    Arc::make_mut(&mut server_tls).alpn_protocols = vec![b"h2".to_vec()];
    let server = HttpServer::bind(HttpServerConfig::default().tls(server_tls), serve_echo).await.unwrap();
    let (relay, accepted) = counting_relay(server.local_addr()).await;
    let url = format!("https://localhost:{}/mcp", relay.port());
    let root = tls::certificates_from_pem(cert_pem.as_bytes()).unwrap().remove(0);

    let transport =
        HttpClientTransport::new(HttpClientConfig::new(url.clone()).add_root_certificate(root.clone())).unwrap();
    let (peer, init) = client_peer(transport, "2025-11-25").await;
    assert_eq!(init["serverInfo"]["name"], "mcpwire-http-test");
    assert!(peer.transport().session_id().is_some());
    a_hundred_concurrent_sse_calls(&peer).await;
    assert_eq!(
        call(&peer, "echo", json!({"text": "after the hundred"})).await["content"][0]["text"],
        "after the hundred"
    );
    peer.close().await.unwrap();
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "initialize, 101 calls, the GET stream and DELETE on one connection"
    );

    // The same server refuses a client that will not speak h2.
    let http1_only = HttpClientConfig::new(url).add_root_certificate(root).http2(false);
    let transport = HttpClientTransport::new(http1_only).unwrap();
    let init = mcpwire::proto::jsonrpc::Request::new(0, "initialize", &json!({})).unwrap();
    assert!(transport.send(init.into()).await.is_err());
    server.shutdown().await;
}

#[tokio::test]
async fn a_2026_call_cancelled_over_h2c_resets_its_stream_and_drops_the_handler() {
    use mcpwire::client::{Client, ClientOptions, EraPolicy};
    use mcpwire::proto::version::ProtocolVersion;
    use mcpwire::server::{text_result, Server};
    use std::time::Duration;

    struct SetOnDrop(tokio::sync::mpsc::UnboundedSender<&'static str>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            let _ = self.0.send("dropped");
        }
    }
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let (dropped_tx, mut dropped) = tokio::sync::mpsc::unbounded_channel();
    let app = Server::builder()
        .tool("hang", "Never answers", json!({"type": "object"}), move |_args, _ctx| {
            let guard = SetOnDrop(dropped_tx.clone());
            let _ = started_tx.send(());
            async move {
                std::future::pending::<()>().await;
                drop(guard);
                Ok(text_result("never"))
            }
        })
        .tool("echo", "Echoes", json!({"type": "object"}), |args, _ctx| {
            let text = args.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
            async move { Ok(text_result(text)) }
        })
        .build()
        .unwrap();
    let server = app.serve_http(HttpServerConfig::default()).await.unwrap();
    let (relay, accepted) = counting_relay(server.local_addr()).await;
    let config = HttpClientConfig::new(format!("http://{relay}/mcp")).http2_prior_knowledge(true);
    let options = ClientOptions::default().with_era(EraPolicy::Adopt(ProtocolVersion::V2026_07_28));
    let client = Client::connect(HttpClientTransport::new(config).unwrap(), options).await.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);

    let echo = |text: &'static str| {
        let client = &client;
        async move {
            let args = json!({ "text": text }).as_object().unwrap().clone();
            let result = client.call_tool("echo", Some(args), Default::default()).await.unwrap();
            serde_json::to_value(&result).unwrap()["content"][0]["text"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(echo("before").await, "before");
    {
        let hang = client.call_tool("hang", None, Default::default());
        tokio::pin!(hang);
        tokio::select! {
            _ = &mut hang => panic!("the hanging call answered"),
            _ = started.recv() => {}
        }
        // Dropped here, in flight: the client resets the request's stream.
    }
    let seen = tokio::time::timeout(Duration::from_secs(10), dropped.recv()).await;
    assert_eq!(seen.expect("the server dropped the handler within 10 s"), Some("dropped"));
    assert_eq!(echo("after").await, "after");
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "every call, the cancelled one too, on one h2 connection");
    client.close().await.unwrap();
    server.shutdown().await;
}
