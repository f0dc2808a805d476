//! The build floor: every dependency of `mcp-bridge` used once, the way the bridge uses it, and
//! no MCP code. It parses a command line (clap derive), logs to stderr (tracing), reads a codex
//! TOML twice (toml, toml_edit), a JSON document into derived types (serde_json, with a raw
//! value), a URL (url), hashes and encodes (ring, base64), builds a TLS client configuration
//! on Mozilla's roots and, given `--tls-cert/--tls-key`, a server one (rustls), then serves
//! one HTTP/1 request on loopback and sends it with hyper's client (hyper, hyper-util,
//! http-body-util, tokio), and runs a child process.
//!
//! Not here: anything of MCP. Its build time and size are what mcp-bridge's dependencies cost
//! by themselves (`benches/build.sh --floor`); its output is not read.

use std::sync::Arc;

use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Parser)]
#[command(name = "build-floor", about = "mcp-bridge's dependencies, used once each")]
struct Args {
    /// A URL to parse and join.
    #[arg(long, default_value = "http://127.0.0.1:8000/mcp")]
    url: String,
    /// A PEM certificate chain, for a TLS server configuration.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// Its PKCS#8 key.
    #[arg(long)]
    tls_key: Option<std::path::PathBuf>,
}

#[derive(Serialize, Deserialize, Debug)]
struct Call {
    name: String,
    #[serde(default)]
    arguments: serde_json::Map<String, serde_json::Value>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    meta: Option<Box<serde_json::value::RawValue>>,
}

const CODEX: &str = "[mcp_servers.echo]\ncommand = \"echo\"\nargs = [\"hello\"]\n";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    use tracing_subscriber::prelude::*;
    let filter: tracing_subscriber::filter::Targets =
        std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()).parse()?;
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false);
    tracing_subscriber::registry().with(layer).with(filter).init();

    let table: toml::Table = toml::from_str(CODEX)?;
    let mut doc: toml_edit::DocumentMut = CODEX.parse()?;
    doc["mcp_servers"]["echo"]["cwd"] = toml_edit::value("/tmp");
    tracing::info!(servers = table.len(), edited = %doc.to_string().len(), "toml");

    let call: Call = serde_json::from_str(r#"{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1}}"#)?;
    let written = serde_json::to_string(&call)?;
    let base = url::Url::parse(&args.url)?;
    let well_known = base.join("/.well-known/oauth-protected-resource")?;
    let digest = ring::digest::digest(&ring::digest::SHA256, written.as_bytes());
    let mut nonce = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut nonce).map_err(|_| "no randomness")?;
    use base64::Engine;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref());
    tracing::info!(%well_known, %encoded, nonce = nonce[0], "json, url, ring, base64");

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let client_tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let _connector = tokio_rustls::TlsConnector::from(Arc::new(client_tls));
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        use rustls_pki_types::pem::PemObject;
        let chain = rustls_pki_types::CertificateDer::pem_file_iter(cert)?.collect::<Result<Vec<_>, _>>()?;
        let key = rustls_pki_types::PrivateKeyDer::from_pem_file(key)?;
        let server_tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        let _acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_tls));
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await?;
        let service = hyper::service::service_fn(|request: hyper::Request<hyper::body::Incoming>| async move {
            let body = request.into_body().collect().await?.to_bytes();
            let found = memchr::memmem::find(&body, b"echo").is_some();
            Ok::<_, hyper::Error>(hyper::Response::new(Full::new(Bytes::from(format!("{found}")))))
        });
        hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
    });
    let stream = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let request = hyper::Request::post(format!("http://{addr}/mcp")).body(Full::new(Bytes::from(written)))?;
    let answer = sender.send_request(request).await?.into_body().collect().await?.to_bytes();
    drop(sender);
    let _ = server.await?;

    let status = tokio::process::Command::new("true").status().await?;
    let pid = unsafe { libc::getpid() };
    let mut signals = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(1);
    tx.send(answer).await?;
    tokio::select! {
        got = rx.recv() => tracing::info!(?got, %status, pid, "http, process"),
        _ = signals.recv() => {}
        _ = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
    }
    Ok(())
}
