//! The console of `mcp-bridge serve` over plain HTTP, with a bearer token on: the page's assets
//! public with a strict Content-Security-Policy, its JSON (upstreams, catalog, sessions,
//! recordings) refused without the token and served with it, a recording started by JSON only,
//! everything refused from a foreign Origin.

use crate::serving::ServingBridge;
use crate::support;

use std::io::{Read, Write};

use serde_json::Value;

const TOKEN: &str = "console-test-token";

/// `GET path` with these extra header lines: status, lowercased headers, body.
fn get(bridge: &ServingBridge, path: &str, extra: &[&str]) -> (u16, Vec<(String, String)>, String) {
    send(bridge, "GET", path, extra, "")
}

/// `method path` with these extra header lines and `body`: status, lowercased headers, body.
fn send(
    bridge: &ServingBridge,
    method: &str,
    path: &str,
    extra: &[&str],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let authority = format!("127.0.0.1:{}", bridge.port());
    let mut stream = std::net::TcpStream::connect(&authority).unwrap();
    let extra: String = extra.iter().map(|h| format!("{h}\r\n")).collect();
    let length = if method == "GET" { String::new() } else { format!("Content-Length: {}\r\n", body.len()) };
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: {authority}\r\n{extra}{length}Connection: close\r\n\r\n{body}")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers =
        lines.filter_map(|l| l.split_once(": ")).map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned())).collect();
    (status, headers, body.to_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn config() -> String {
    let toml = format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\nrequired = true\nstartup_timeout_sec = 60\n\n\
         [mcp_servers.memory]\ncommand = {:?}\nargs = [{:?}]\nenv = {{ MEMORY_FILE_PATH = \"/dev/null\" }}\nrequired = true\nstartup_timeout_sec = 60\n",
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS"),
        support::peer("MCP_NODE"),
        support::peer("MCP_MEMORY_JS"),
    );
    let dir = std::env::temp_dir().join(format!("mcp-bridge-console-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("console.toml");
    std::fs::write(&path, toml).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn the_page_is_public_its_json_needs_the_token_and_a_foreign_origin_is_refused() {
    let file = config();
    let bridge = ServingBridge::start_with(&["--config", &file, "--auth-token-env", "CONSOLE_TOKEN"], |c| {
        c.env("CONSOLE_TOKEN", TOKEN);
    });
    let bearer = format!("Authorization: Bearer {TOKEN}");

    // The assets: public, each with the policy: nothing but the bridge's own, no inline script.
    for (path, kind) in [
        ("/ui", "text/html; charset=utf-8"),
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/app.css", "text/css; charset=utf-8"),
    ] {
        let (status, headers, body) = get(&bridge, path, &[]);
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(header(&headers, "content-type"), Some(kind), "{path}");
        let policy = header(&headers, "content-security-policy").unwrap_or_else(|| panic!("{path}: no CSP"));
        assert!(policy.starts_with("default-src 'self'; "), "{policy}");
        assert!(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "{policy}");
        assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
    }
    let (_, _, page) = get(&bridge, "/ui", &[]);
    assert!(page.contains(r#"<meta name="mcp-endpoint" content="/mcp">"#), "{page}");

    // The JSON: 401 without the token (or with another), 200 with it.
    for path in ["/ui/api/upstreams", "/ui/api/catalog"] {
        let (status, headers, _) = get(&bridge, path, &[]);
        assert_eq!(status, 401, "{path}");
        assert!(header(&headers, "www-authenticate").is_some_and(|v| v.starts_with("Bearer")), "{path}");
        let (status, _, _) = get(&bridge, path, &["Authorization: Bearer not-the-token"]);
        assert_eq!(status, 401, "{path}");
    }
    let (status, _, body) = get(&bridge, "/ui/api/upstreams", &[&bearer]);
    assert_eq!(status, 200, "{body}");
    let upstreams: Value = serde_json::from_str(&body).unwrap();
    let everything = upstreams["upstreams"].as_array().unwrap().iter().find(|u| u["name"] == "everything").unwrap();
    assert_eq!(everything["state"], "ready", "{everything}");
    assert_eq!(everything["era"], "legacy");
    assert_eq!(everything["protocolVersion"], "2025-11-25");
    assert_eq!((everything["prompts"].as_u64(), everything["resources"].as_u64()), (Some(4), Some(7)));
    assert_eq!((everything["templates"].as_u64(), everything["restarts"].as_u64()), (Some(2), Some(0)));
    assert!(everything["tools"].as_u64().unwrap() > 0);
    assert_eq!(everything["stderr"], serde_json::json!(["Starting default (STDIO) server..."]));
    let memory = upstreams["upstreams"].as_array().unwrap().iter().find(|u| u["name"] == "memory").unwrap();
    assert_eq!((memory["state"].as_str(), memory["resources"].as_u64()), (Some("ready"), Some(1)));
    assert_eq!(memory["stderr"], serde_json::json!(["Knowledge Graph MCP Server running on stdio"]));

    let (status, _, body) = get(&bridge, "/ui/api/catalog", &[&bearer]);
    assert_eq!(status, 200, "{body}");
    let catalog: Value = serde_json::from_str(&body).unwrap();
    let echo = catalog["tools"].as_array().unwrap().iter().find(|t| t["tool"]["name"] == "mcp__everything__echo");
    assert_eq!(echo.map(|t| &t["server"]), Some(&Value::from("everything")), "{catalog}");
    let graph = catalog["resources"].as_array().unwrap().iter().find(|r| r["server"] == "memory").unwrap();
    assert_eq!(graph["resource"]["uri"], "memory+memory://knowledge-graph");
    let template = &catalog["resourceTemplates"][0];
    assert_eq!(template["server"], "everything");
    assert_eq!(template["resourceTemplate"]["uriTemplate"], "everything+demo://resource/dynamic/text/{resourceId}");
    let prompt =
        catalog["prompts"].as_array().unwrap().iter().find(|p| p["prompt"]["name"] == "mcp__everything__args-prompt");
    assert!(prompt.is_some(), "{catalog}");

    // Sessions and recordings: guarded like the rest; starting a recording takes JSON only
    // (no other site's form can send it), of a live session.
    for path in ["/ui/api/sessions", "/ui/api/recording?number=1"] {
        assert_eq!(get(&bridge, path, &[]).0, 401, "{path}");
    }
    let start = r#"{"session": 99, "action": "start"}"#;
    let json = "Content-Type: application/json";
    assert_eq!(send(&bridge, "POST", "/ui/api/recording", &[json], start).0, 401);
    let (status, _, body) = send(&bridge, "POST", "/ui/api/recording", &[json, &bearer], start);
    assert_eq!((status, body.as_str()), (404, r#"{"error":"no live session 99"}"#));
    let form = "Content-Type: application/x-www-form-urlencoded";
    assert_eq!(send(&bridge, "POST", "/ui/api/recording", &[form, &bearer], "session=1&action=start").0, 415);
    let (status, headers, _) = send(&bridge, "PUT", "/ui/api/recording", &[json, &bearer], start);
    assert_eq!((status, header(&headers, "allow")), (405, Some("GET, HEAD, POST")));
    let (status, _, body) = get(&bridge, "/ui/api/recording?number=1", &[&bearer]);
    assert_eq!((status, body.as_str()), (404, r#"{"error":"no such recording"}"#));
    let (status, _, body) = get(&bridge, "/ui/api/sessions", &[&bearer]);
    assert_eq!((status, body.as_str()), (200, r#"{"recordings":[],"sessions":[]}"#));
    let evil = "Origin: http://evil.example";
    assert_eq!(send(&bridge, "POST", "/ui/api/recording", &[evil, json, &bearer], start).0, 403);

    // A page of another origin reaches nothing, with the token or without.
    for path in
        ["/ui", "/ui/app.js", "/ui/api/upstreams", "/ui/api/catalog", "/ui/api/sessions", "/ui/api/recording?number=1"]
    {
        let (status, _, _) = get(&bridge, path, &["Origin: http://evil.example", &bearer]);
        assert_eq!(status, 403, "{path}");
    }
    // The bridge's own origin is welcome.
    let own = format!("Origin: http://127.0.0.1:{}", bridge.port());
    let (status, _, _) = get(&bridge, "/ui/api/catalog", &[&own, &bearer]);
    assert_eq!(status, 200);
}
