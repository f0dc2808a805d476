//! The authorization server of the OAuth tests: `tests/peers/oauth_as.mjs` (oauth2-mock-server,
//! installed by scripts/install-peers) run as a child process, and the calls the tests make to
//! its test endpoints.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::http_support::{raw, JSON, SHORT};
use crate::support;

/// The authorization server, killed when dropped.
pub struct AuthServer {
    _child: tokio::process::Child,
    meta: Value,
}

impl AuthServer {
    pub async fn start() -> AuthServer {
        let mut child = tokio::process::Command::new(support::peer("MCP_NODE"))
            .arg(support::repo_path("tests/peers/oauth_as.mjs"))
            .env("MCP_OAUTH_AS_DIR", support::peer("MCP_OAUTH_AS_DIR"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(30), BufReader::new(stdout).read_line(&mut line))
            .await
            .expect("the authorization server starts")
            .unwrap();
        let meta: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        AuthServer { _child: child, meta }
    }

    pub fn issuer(&self) -> &str {
        self.meta["issuer"].as_str().unwrap()
    }

    pub fn url(&self, key: &str) -> &str {
        self.meta[key].as_str().unwrap()
    }

    pub fn addr(&self) -> SocketAddr {
        self.issuer().trim_start_matches("http://").parse().unwrap()
    }

    /// A token signed by the authorization server's test endpoint (see `oauth_as.mjs`).
    pub async fn mint(&self, spec: Value) -> String {
        let r = raw(self.addr(), "POST", "/test/mint", &[JSON], &spec.to_string(), SHORT).await;
        assert_eq!(r.status, 200, "{r:?}");
        r.json()["access_token"].as_str().unwrap().to_owned()
    }

    pub async fn jwks_fetches(&self) -> u64 {
        raw(self.addr(), "GET", "/test/stats", &[], "", SHORT).await.json()["jwks"].as_u64().unwrap()
    }

    /// Makes the JWKS answer carry `Cache-Control: value` (`None`: no such header).
    pub async fn set_jwks_cache_control(&self, value: Option<&str>) {
        let body = serde_json::json!({ "value": value }).to_string();
        let r = raw(self.addr(), "POST", "/test/jwks-cache-control", &[JSON], &body, SHORT).await;
        assert_eq!(r.status, 200, "{r:?}");
    }

    pub async fn introspections(&self) -> u64 {
        raw(self.addr(), "GET", "/test/stats", &[], "", SHORT).await.json()["introspections"].as_u64().unwrap()
    }

    /// Every access token, refresh token and authorization code the server handed out so far.
    pub async fn secrets(&self) -> Vec<String> {
        let stats = raw(self.addr(), "GET", "/test/stats", &[], "", SHORT).await.json();
        stats["secrets"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect()
    }
}
