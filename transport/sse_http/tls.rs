//! rustls configurations for the HTTP transport (feature `tls`), with the `ring` provider
//! (no C toolchain or cmake needed, unlike aws-lc).
//!
//! - [`server_config_from_pem`]: a certificate chain and private key in PEM, for [`super::HttpServer`].
//! - [`client_config`]: Mozilla's root certificates (webpki-roots) plus any extra roots, for
//!   [`super::HttpClientTransport`].

use std::io;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// Every certificate in a PEM text.
///
/// # Errors
/// When the PEM is malformed or holds no certificate.
pub fn certificates_from_pem(pem: &[u8]) -> io::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>().map_err(invalid)?;
    if certs.is_empty() {
        return Err(invalid("no certificate in the pem text"));
    }
    Ok(certs)
}

/// A server configuration serving `cert_pem` (the chain, leaf first) with `key_pem` (PKCS#8,
/// PKCS#1 or SEC1), offering HTTP/2 and HTTP/1.1 by ALPN (`h2` first; [`super::HttpServer`]
/// offers only `http/1.1` when its HTTP/2 is off).
///
/// # Errors
/// When the PEM texts are malformed or the key does not fit the certificate.
pub fn server_config_from_pem(cert_pem: &[u8], key_pem: &[u8]) -> io::Result<Arc<rustls::ServerConfig>> {
    let certs = certificates_from_pem(cert_pem)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(invalid)?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(invalid)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(invalid)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// `config` as the listener serves it: with HTTP/2 on and an ALPN list that does not name
/// `h2`, `h2` is offered first (a configuration made elsewhere, e.g. with `http/1.1` alone);
/// with HTTP/2 off, `h2` is taken out (a client that chose it would get HTTP/1.1 bytes).
/// An empty list stays empty (no ALPN: the client speaks HTTP/1.1, or h2 by prior knowledge).
pub(crate) fn offer_h2(config: Arc<rustls::ServerConfig>, http2: bool) -> Arc<rustls::ServerConfig> {
    let offers = config.alpn_protocols.iter().any(|p| p == b"h2");
    if offers == http2 || config.alpn_protocols.is_empty() {
        return config;
    }
    let mut config = (*config).clone();
    if http2 {
        config.alpn_protocols.insert(0, b"h2".to_vec());
    } else {
        config.alpn_protocols.retain(|p| p != b"h2");
    }
    Arc::new(config)
}

/// A client configuration trusting the webpki roots and `extra_roots`.
///
/// # Errors
/// When an extra root is not a valid certificate.
pub fn client_config(extra_roots: &[CertificateDer<'static>]) -> io::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    for cert in extra_roots {
        roots.add(cert.clone()).map_err(invalid)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(invalid)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
