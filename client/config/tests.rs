use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn toml_err(text: &str) -> String {
    McpConfig::from_toml(text, "mcp.toml").unwrap_err().to_string()
}

#[test]
fn codex_toml_field_for_field() {
    let text = r#"
[mcp_servers.github]
command = "npx"
args = ["-y", "server-github"]
env = { API = "https://api.github.com" }
env_vars = ["GITHUB_TOKEN"]
cwd = "/srv"
startup_timeout_ms = 2500
tool_timeout_sec = 1.5
required = true
supports_parallel_tool_calls = false
enabled_tools = ["search", "get"]
disabled_tools = ["get"]
default_tools_approval_mode = "prompt"
tools.search.approval_mode = "approve"

[mcp_servers.remote]
url = "https://example.com/mcp"
bearer_token_env_var = "TOKEN"
http_headers = { "X-Team" = "core" }
env_http_headers = { "X-Api-Key" = "API_KEY" }
enabled = false
"#;
    let config = McpConfig::from_toml(text, "mcp.toml").unwrap();
    assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["github", "remote"]);
    let github = &config.servers["github"];
    assert_eq!(
        github.transport,
        TransportConfig::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "server-github".into()],
            env: [("API".to_owned(), "https://api.github.com".to_owned())].into(),
            env_vars: vec!["GITHUB_TOKEN".into()],
            cwd: Some("/srv".into()),
            inherit_env: false,
        }
    );
    assert_eq!(github.startup_timeout, Duration::from_millis(2500));
    assert_eq!(github.tool_timeout, Duration::from_millis(1500));
    assert!(github.enabled && github.required && !github.supports_parallel_tool_calls);
    assert!(github.tool_allowed("search"));
    assert!(!github.tool_allowed("get"), "disabled_tools wins over enabled_tools");
    assert!(!github.tool_allowed("other"), "not in enabled_tools");
    assert_eq!(github.approval_mode("search", ApprovalMode::Auto), ApprovalMode::Approve);
    assert_eq!(github.approval_mode("other", ApprovalMode::Auto), ApprovalMode::Prompt);
    let remote = &config.servers["remote"];
    assert_eq!(
        remote.transport,
        TransportConfig::Http {
            url: "https://example.com/mcp".into(),
            bearer_token_env_var: Some("TOKEN".into()),
            http_headers: [("X-Team".to_owned(), "core".to_owned())].into(),
            env_http_headers: [("X-Api-Key".to_owned(), "API_KEY".to_owned())].into(),
            legacy_sse: false,
        }
    );
    assert!(!remote.enabled && !remote.required);
    assert_eq!(remote.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
    assert_eq!(remote.tool_timeout, DEFAULT_TOOL_TIMEOUT);
    assert!(remote.supports_parallel_tool_calls && remote.tool_allowed("anything"));
    assert_eq!(remote.approval_mode("x", ApprovalMode::Auto), ApprovalMode::Auto, "the host's default");
}

#[test]
fn codex_errors_name_file_server_and_field() {
    let cases = [
        (
            "[mcp_servers.github]\ncommand = \"x\"\nstartup_timeout_sec = \"ten\"",
            "mcp.toml: mcp_servers.github.startup_timeout_sec: expected a number",
        ),
        ("[mcp_servers.github]\nargs = []", "mcp.toml: mcp_servers.github: missing command (stdio) or url (http)"),
        (
            "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h/mcp\"",
            "mcp.toml: mcp_servers.a: set either command (stdio) or url (http), not both",
        ),
        ("[mcp_servers.a]\ncommand = \"x\"\nargs = [1]", "mcp.toml: mcp_servers.a.args.0: expected a string"),
        ("[mcp_servers.a]\ncommand = \"x\"\nrequired = 1", "mcp.toml: mcp_servers.a.required: expected true or false"),
        ("[mcp_servers.a]\ncommand = \"x\"\ncomand = 1", "mcp.toml: mcp_servers.a.comand: unknown field"),
        (
            "[mcp_servers.a]\ncommand = \"x\"\ntools.t.approval_mode = \"always\"",
            "mcp.toml: mcp_servers.a.tools.t.approval_mode: unknown approval mode \"always\" (expected auto, prompt or approve)",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h\"\nenv_vars = [\"X\"]",
            "mcp.toml: mcp_servers.a.env_vars: applies to command servers only",
        ),
        ("[mcp_servers.\"my.srv\"]\ncommand = 3", "mcp.toml: mcp_servers.\"my.srv\".command: expected a string"),
        ("mcp_servers = 3", "mcp.toml: mcp_servers: expected a table"),
    ];
    for (text, expected) in cases {
        assert_eq!(toml_err(text), expected, "{text}");
    }
    let syntax = toml_err("[mcp_servers.a]\ncommand = ");
    assert!(syntax.starts_with("mcp.toml: line 2: "), "{syntax}");
}

#[test]
fn claude_json_with_variable_expansion() {
    let text = r#"{"mcpServers": {
        "fs": {"command": "${BIN:-npx}", "args": ["-y", "${HOME}/x", "${MISSING:-}"], "env": {"TOKEN": "${TOKEN}"}},
        "web": {"type": "http", "url": "https://${HOST:-localhost:3000}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "old": {"type": "sse", "url": "http://127.0.0.1:1/sse", "disabled": true, "alwaysAllow": []}
    }}"#;
    let env = |name: &str| match name {
        "HOME" => Some("/home/me".to_owned()),
        "TOKEN" => Some("s3cret".to_owned()),
        _ => None,
    };
    let config = McpConfig::from_json(text, ".mcp.json", &env).unwrap();
    assert_eq!(
        config.servers["fs"].transport,
        TransportConfig::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "/home/me/x".into(), String::new()],
            env: [("TOKEN".to_owned(), "s3cret".to_owned())].into(),
            env_vars: vec![],
            cwd: None,
            inherit_env: true,
        }
    );
    let TransportConfig::Http { url, http_headers, legacy_sse, .. } = &config.servers["web"].transport else {
        panic!()
    };
    assert_eq!(url, "https://localhost:3000/mcp");
    assert_eq!(http_headers["Authorization"], "Bearer s3cret");
    assert!(!legacy_sse);
    let old = &config.servers["old"];
    assert!(matches!(old.transport, TransportConfig::Http { legacy_sse: true, .. }) && !old.enabled);

    let err = McpConfig::from_json(r#"{"mcpServers": {"fs": {"command": "${NOPE}"}}}"#, ".mcp.json", &no_env)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        ".mcp.json: mcpServers.fs.command: environment variable NOPE is not set (and ${NOPE} has no default)"
    );
}

#[test]
fn vscode_json_servers() {
    let text = r#"{"inputs": [], "servers": {
        "memory": {"type": "stdio", "command": "node", "args": ["m.js"], "cwd": "/tmp"},
        "remote": {"url": "http://127.0.0.1:9/mcp"}
    }}"#;
    let config = McpConfig::from_json(text, "mcp.json", &no_env).unwrap();
    assert!(
        matches!(&config.servers["memory"].transport, TransportConfig::Stdio { command, cwd: Some(_), .. } if command == "node")
    );
    assert!(matches!(&config.servers["remote"].transport, TransportConfig::Http { legacy_sse: false, .. }));
    let errors = [
        (
            r#"{"servers": {"m": {"type": "ws", "url": "x"}}}"#,
            "mcp.json: servers.m.type: unknown server type \"ws\" (expected stdio, http or sse)",
        ),
        (r#"{"servers": {"m": {"type": "http"}}}"#, "mcp.json: servers.m: missing url"),
        (
            r#"{"servers": {"m": {"command": "x", "args": "a"}}}"#,
            "mcp.json: servers.m.args: expected an array of strings",
        ),
        (r#"{"other": {}}"#, "mcp.json: expected a top-level \"mcpServers\" (Claude) or \"servers\" (VS Code) object"),
    ];
    for (text, expected) in errors {
        assert_eq!(McpConfig::from_json(text, "mcp.json", &no_env).unwrap_err().to_string(), expected);
    }
}

#[test]
fn load_picks_the_format_by_extension() {
    let dir = std::env::temp_dir().join(format!("mcpwire-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml_file = dir.join("mcp.toml");
    std::fs::write(&toml_file, "[mcp_servers.a]\ncommand = \"x\"\n").unwrap();
    assert!(McpConfig::load(&toml_file).unwrap().servers.contains_key("a"));
    let json_file = dir.join("mcp.json");
    std::fs::write(&json_file, r#"{"mcpServers": {"b": {"command": "x"}}}"#).unwrap();
    assert!(McpConfig::load(&json_file).unwrap().servers.contains_key("b"));
    let other = dir.join("mcp.yaml");
    assert!(McpConfig::load(&other)
        .unwrap_err()
        .to_string()
        .ends_with("unknown configuration format (expected a .toml or .json file)"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn expansion_edge_cases() {
    let env = |n: &str| (n == "A").then(|| "1".to_owned());
    assert_eq!(expand("x${A}y${B:-2}z${A:-9}", &env).unwrap(), "x1y2z1");
    assert_eq!(expand("no vars $A {A}", &env).unwrap(), "no vars $A {A}");
    assert!(expand("${A", &env).unwrap_err().starts_with("unterminated"));
}

#[test]
fn the_era_is_read_from_toml_and_json_and_defaults_to_auto() {
    let toml = "[mcp_servers.a]\ncommand = \"x\"\nera = \"legacy\"\n\n[mcp_servers.b]\nurl = \"http://h/mcp\"\nera = \"2026-07-28\"\n\n[mcp_servers.c]\ncommand = \"y\"\n";
    let config = McpConfig::from_toml(toml, "mcp.toml").unwrap();
    let eras: Vec<EraPolicy> = config.servers.values().map(|s| s.era).collect();
    assert_eq!(
        eras,
        [EraPolicy::Legacy, EraPolicy::Adopt(crate::proto::version::ProtocolVersion::V2026_07_28), EraPolicy::Auto]
    );
    let json = r#"{"mcpServers": {"a": {"command": "x", "era": "legacy"}, "b": {"command": "y"}}}"#;
    let config = McpConfig::from_json(json, "claude.json", &no_env).unwrap();
    let eras: Vec<EraPolicy> = config.servers.values().map(|s| s.era).collect();
    assert_eq!(eras, [EraPolicy::Legacy, EraPolicy::Auto]);
    assert_eq!(
        toml_err("[mcp_servers.a]\ncommand = \"x\"\nera = \"2025-11-25\""),
        "mcp.toml: mcp_servers.a.era: era 2025-11-25 is a handshake-era version: use \"legacy\" (or \"auto\")"
    );
    assert_eq!(
        toml_err("[mcp_servers.a]\ncommand = \"x\"\nera = 2026"),
        "mcp.toml: mcp_servers.a.era: expected a string"
    );
}

#[test]
fn startup_is_eager_unless_lazy_and_a_typo_is_refused() {
    let config = McpConfig::from_toml("[mcp_servers.a]\ncommand = \"x\"\nstartup = \"lazy\"\n", "mcp.toml").unwrap();
    assert_eq!(config.servers["a"].startup, Startup::Lazy);
    let config = McpConfig::from_json(r#"{"mcpServers": {"b": {"command": "x"}}}"#, "c.json", &no_env).unwrap();
    assert_eq!(config.servers["b"].startup, Startup::Eager);
    assert_eq!(
        toml_err("[mcp_servers.a]\ncommand = \"x\"\nstartup = \"later\"\n"),
        "mcp.toml: mcp_servers.a.startup: unknown startup \"later\" (expected eager or lazy)"
    );
}

#[test]
fn a_scoped_server_is_keyed_by_scope_and_name() {
    let config = McpConfig::from_toml("[mcp_servers.git]\ncommand = \"x\"\nscope = \"work\"\n", "mcp.toml").unwrap();
    assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["work/git"]);
    assert_eq!(config.servers["work/git"].name, "git");
    let plain = McpConfig::from_toml("[mcp_servers.git]\ncommand = \"x\"\n", "mcp.toml").unwrap();
    assert_eq!(plain.in_scope("home").servers.keys().collect::<Vec<_>>(), ["home/git"]);
    assert_eq!(
        toml_err("[mcp_servers.git]\ncommand = \"x\"\nscope = \"a/b\"\n"),
        "mcp.toml: mcp_servers.git.scope: expected a non-empty scope without '/'"
    );
}

#[test]
fn readiness_is_listed_unless_connected() {
    let config = McpConfig::from_toml("[mcp_servers.a]\ncommand = \"x\"\nready = \"connected\"\n", "mcp.toml").unwrap();
    assert_eq!(config.servers["a"].readiness, Readiness::Connected);
    assert_eq!(ServerConfig::stdio("b", "x", ["y"]).readiness, Readiness::Listed);
    assert!(toml_err("[mcp_servers.a]\ncommand = \"x\"\nready = \"soon\"\n").contains("expected listed or connected"));
}

#[test]
fn oauth_settings_are_read_from_codex_toml_and_claude_json() {
    let toml = "[mcp_servers.r]\nurl = \"http://h/mcp\"\noauth = { client_id = \"app\", client_secret_env_var = \"APP_SECRET\", scopes = [\"mcp\", \"files:read\"], callback_port = 8976, client_metadata_url = \"https://app.example/cimd.json\" }\n";
    let config = McpConfig::from_toml(toml, "mcp.toml").unwrap();
    let expected = OAuthSettings {
        client_id: Some("app".into()),
        client_secret_env_var: Some("APP_SECRET".into()),
        scopes: Some(vec!["mcp".into(), "files:read".into()]),
        callback_port: Some(8976),
        client_metadata_url: Some("https://app.example/cimd.json".into()),
    };
    assert_eq!(config.servers["r"].oauth, expected);
    let json = r#"{"mcpServers": {"r": {"type": "http", "url": "http://h/mcp", "oauth": {"clientId": "app",
        "clientSecretEnvVar": "APP_SECRET", "scopes": "mcp files:read", "callbackPort": 8976,
        "clientMetadataUrl": "https://app.example/cimd.json", "authServerMetadataUrl": "https://ignored"}}}}"#;
    assert_eq!(McpConfig::from_json(json, "claude.json", &no_env).unwrap().servers["r"].oauth, expected);
    let plain = McpConfig::from_toml("[mcp_servers.r]\nurl = \"http://h/mcp\"\n", "mcp.toml").unwrap();
    assert!(plain.servers["r"].oauth.is_empty());
}

#[test]
fn bad_oauth_settings_are_refused_naming_the_field() {
    for (toml, expected) in [
        (
            "[mcp_servers.r]\nurl = \"http://h/mcp\"\noauth = { callback_port = 70000 }",
            "mcp.toml: mcp_servers.r.oauth.callback_port: expected a port number (0 to 65535)",
        ),
        (
            "[mcp_servers.r]\nurl = \"http://h/mcp\"\noauth = { clientId = \"x\" }",
            "mcp.toml: mcp_servers.r.oauth.clientId: unknown field",
        ),
        ("[mcp_servers.r]\ncommand = \"x\"\noauth = {}", "mcp.toml: mcp_servers.r.oauth: applies to url servers only"),
        (
            "[mcp_servers.r]\nurl = \"http://h/mcp\"\nbearer_token_env_var = \"T\"\noauth = { client_id = \"x\" }",
            "mcp.toml: mcp_servers.r.oauth: set either bearer_token_env_var or oauth, not both",
        ),
    ] {
        assert_eq!(toml_err(toml), expected, "{toml}");
    }
    let json = r#"{"mcpServers": {"r": {"url": "http://h/mcp", "oauth": {"scopes": 3}}}}"#;
    assert_eq!(
        McpConfig::from_json(json, "c.json", &no_env).unwrap_err().to_string(),
        "c.json: mcpServers.r.oauth.scopes: expected a space-separated string or an array of strings"
    );
}

#[test]
fn the_oauth_credentials_store_is_codex_top_level_key() {
    let config = McpConfig::from_toml("mcp_oauth_credentials_store = \"keyring\"\n", "mcp.toml").unwrap();
    assert_eq!(config.oauth_credentials_store.as_deref(), Some("keyring"));
    let config = McpConfig::from_toml("[mcp_servers.a]\ncommand = \"x\"\n", "mcp.toml").unwrap();
    assert_eq!(config.oauth_credentials_store, None, "unset unless the file says");
    assert_eq!(
        toml_err("mcp_oauth_credentials_store = \"vault\"\n"),
        "mcp.toml: mcp_oauth_credentials_store: expected \"keyring\", \"file\" or \"auto\""
    );
}
