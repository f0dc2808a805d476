//! The built `mcp-bridge`'s resources, prompts, completion and log-level subcommands against
//! server-everything (one stdio server) and a configured set (everything, memory, time):
//! the exact names and texts the server gives, `--json` parsed, and the errors and exit codes
//! of a URI, a prompt or an argument the server does not have.

use crate::serving::{everything_stdio as everything, run as bridge, stderr_text as stderr, stdout_text as stdout};
use crate::support;

use std::process::Output;

use serde_json::Value;

/// Runs against server-everything; asserts exit 0 and returns stdout.
fn ok(args: &[&str]) -> String {
    let output = bridge(args, &everything());
    assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
    stdout(&output)
}

fn json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let out = ok(&args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

const DOCS: [&str; 7] = [
    "architecture.md",
    "extension.md",
    "features.md",
    "how-it-works.md",
    "instructions.md",
    "startup.md",
    "structure.md",
];

#[test]
fn resources_list_and_templates_show_every_resource_and_template() {
    let expected: String = DOCS
        .iter()
        .map(|doc| {
            format!("demo://resource/static/document/{doc} — {doc}: Static document file exposed from /docs: {doc}\n")
        })
        .collect();
    assert_eq!(ok(&["resources", "list"]), expected);
    let listed = json(&["resources", "list"]);
    let uris: Vec<&str> = listed.as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    let expected: Vec<String> = DOCS.iter().map(|doc| format!("demo://resource/static/document/{doc}")).collect();
    assert_eq!(uris, expected);
    assert_eq!(listed[0]["mimeType"], "text/markdown");

    assert_eq!(
        ok(&["resources", "templates"]),
        "demo://resource/dynamic/text/{resourceId} — Dynamic Text Resource: Plaintext dynamic resource fabricated \
         from the {resourceId} variable, which must be an integer.\n\
         demo://resource/dynamic/blob/{resourceId} — Dynamic Blob Resource: Binary (base64) dynamic resource \
         fabricated from the {resourceId} variable, which must be an integer.\n"
    );
    let templates = json(&["resources", "templates"]);
    assert_eq!(templates[0]["uriTemplate"], "demo://resource/dynamic/text/{resourceId}");
    assert_eq!(templates[1]["mimeType"], "application/octet-stream");
}

#[test]
fn resources_read_prints_the_text_or_notes_a_blob() {
    let out = ok(&["resources", "read", "demo://resource/dynamic/text/3"]);
    // The text ends with the server's clock time: only its fixed part is asserted.
    assert!(
        out.starts_with("Resource 3: This is a plaintext resource created at ") && out.lines().count() == 1,
        "{out}"
    );
    let read = json(&["resources", "read", "demo://resource/dynamic/text/3"]);
    assert_eq!(read["contents"][0]["uri"], "demo://resource/dynamic/text/3");
    assert_eq!(read["contents"][0]["mimeType"], "text/plain");
    let text = read["contents"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Resource 3: This is a plaintext resource created at "), "{text}");

    let out = ok(&["resources", "read", "demo://resource/dynamic/blob/4"]);
    assert!(
        out.starts_with("[blob: text/plain, ") && out.ends_with(" bytes of base64; use --json to see it]\n"),
        "{out}"
    );
    let read = json(&["resources", "read", "demo://resource/dynamic/blob/4"]);
    let blob = read["contents"][0]["blob"].as_str().unwrap();
    assert!(out.contains(&format!(", {} bytes of base64", blob.len())), "{out}");
    // "Resource 4: This is a base64 blob" in base64.
    assert!(blob.starts_with("UmVzb3VyY2UgNDogVGhpcyBpcyBhIGJhc2U2NCBibG9i"), "{blob}");
}

#[test]
fn an_unknown_uri_exits_1_with_the_servers_error() {
    for args in [&["resources", "read", "demo://nope"][..], &["resources", "read", "demo://nope", "--json"]] {
        let output = bridge(args, &everything());
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert_eq!(
            stderr(&output),
            "mcp-bridge: server answered resources/read with error -32602: MCP error -32602: Resource demo://nope not found\n"
        );
        assert_eq!(stdout(&output), "");
    }
}

#[test]
fn prompts_list_shows_each_prompt_and_its_arguments() {
    assert_eq!(
        ok(&["prompts", "list"]),
        "simple-prompt — A prompt with no arguments\n\
         args-prompt — A prompt with two arguments, one required and one optional\n\
         \x20 city (required) — Name of the city\n\
         \x20 state\n\
         completable-prompt — First argument choice narrows values for second argument.\n\
         \x20 department (required) — Choose the department.\n\
         \x20 name (required) — Choose a team member to lead the selected department.\n\
         resource-prompt — A prompt that includes an embedded resource reference\n\
         \x20 resourceType (required) — Type of resource to fetch\n\
         \x20 resourceId (required) — ID of the text resource to fetch\n"
    );
    let prompts = json(&["prompts", "list"]);
    let args = prompts.as_array().unwrap().iter().find(|p| p["name"] == "args-prompt").unwrap();
    assert_eq!(args["title"], "Arguments Prompt");
    assert_eq!(
        args["arguments"][0],
        serde_json::json!({"name": "city", "description": "Name of the city", "required": true})
    );
    assert_eq!(args["arguments"][1], serde_json::json!({"name": "state", "required": false}));
}

#[test]
fn prompts_get_renders_the_messages_with_the_arguments() {
    assert_eq!(
        ok(&["prompts", "get", "args-prompt", "--arg", "city=Paris", "--arg", "state=TX"]),
        "user: What's weather in Paris, TX?\n"
    );
    assert_eq!(ok(&["prompts", "get", "args-prompt", "--arg", "city=Oslo"]), "user: What's weather in Oslo?\n");
    assert_eq!(ok(&["prompts", "get", "simple-prompt"]), "user: This is a simple prompt without arguments.\n");
    let got = json(&["prompts", "get", "resource-prompt", "--arg", "resourceType=Text", "--arg", "resourceId=2"]);
    assert_eq!(
        got["messages"][0]["content"]["text"],
        "This prompt includes the Text resource with id: 2. Please analyze the following resource:"
    );
    assert_eq!(got["messages"][1]["content"]["type"], "resource");
    assert_eq!(got["messages"][1]["content"]["resource"]["uri"], "demo://resource/dynamic/text/2");
    let out = ok(&["prompts", "get", "resource-prompt", "--arg", "resourceType=Text", "--arg", "resourceId=2"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "user: [resource demo://resource/dynamic/text/2]", "{out}");
    assert!(lines[2].starts_with("Resource 2: This is a plaintext resource created at "), "{out}");
}

#[test]
fn an_unknown_prompt_or_a_missing_argument_exits_1_with_the_servers_error() {
    let output = bridge(&["prompts", "get", "nope"], &everything());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "mcp-bridge: server answered prompts/get with error -32602: MCP error -32602: Prompt nope not found\n"
    );
    assert_eq!(stdout(&output), "");
    let output = bridge(&["prompts", "get", "args-prompt", "--json"], &everything());
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.starts_with("mcp-bridge: server answered prompts/get with error -32602: ") && err.contains(" city"),
        "{err}"
    );
    assert_eq!(stdout(&output), "");
}

#[test]
fn complete_asks_for_a_prompt_argument_or_a_template_variable() {
    assert_eq!(ok(&["complete", "--prompt", "completable-prompt", "department", "E"]), "Engineering\n");
    assert_eq!(ok(&["complete", "--prompt", "completable-prompt", "department", "S"]), "Sales\nSupport\n");
    // The second argument's values depend on the first, given as context.
    assert_eq!(
        ok(&["complete", "--prompt", "completable-prompt", "name", "--context", "department=Sales"]),
        "David\nEve\nFrank\n"
    );
    assert_eq!(ok(&["complete", "--prompt", "completable-prompt", "name"]), "");
    let completed = json(&["complete", "--template", "demo://resource/dynamic/text/{resourceId}", "resourceId", "7"]);
    assert_eq!(completed["completion"]["values"], serde_json::json!(["7"]));
    let completed = json(&["complete", "--template", "demo://resource/dynamic/text/{resourceId}", "resourceId", "x"]);
    assert_eq!(completed["completion"]["values"], serde_json::json!([]));
}

#[test]
fn log_level_is_set() {
    assert_eq!(ok(&["log-level", "debug"]), "log level debug\n");
    assert_eq!(json(&["log-level", "error"]), serde_json::json!({"level": "error", "sent": true}));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["complete", "department"][..],
        &["complete", "--prompt", "p", "--template", "t", "a"],
        &["resources", "read"],
        &["resources", "frob"],
        &["prompts", "get"],
        &["prompts", "get", "p", "--arg", "novalue"],
        &["log-level", "loud"],
        &["prompts", "list", "--server", "x"],
    ] {
        let output = bridge(args, &["x".to_owned()]);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).starts_with("error: "), "{args:?}: {}", stderr(&output));
        assert_eq!(stdout(&output), "");
    }
}

fn set_config() -> String {
    let toml = format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\n\n\
         [mcp_servers.memory]\ncommand = {:?}\nargs = [{:?}]\n\n\
         [mcp_servers.time]\ncommand = {:?}\n",
        support::peer("MCP_NODE"),
        support::peer("MCP_EVERYTHING_JS"),
        support::peer("MCP_NODE"),
        support::peer("MCP_MEMORY_JS"),
        support::peer("MCP_SERVER_TIME"),
    );
    let dir = std::env::temp_dir().join(format!("mcp-bridge-reach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("set.toml");
    std::fs::write(&path, toml).unwrap();
    path.to_string_lossy().into_owned()
}

fn at_set(args: &[&str], file: &str) -> Output {
    let mut args = args.to_vec();
    args.extend(["--config", file]);
    bridge(&args, &[])
}

#[test]
fn a_configured_set_is_seen_merged_or_one_server_at_a_time() {
    let file = set_config();
    let output = at_set(&["prompts", "list"], &file);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(
        out.lines()
            .any(|l| l == "mcp__everything__args-prompt — A prompt with two arguments, one required and one optional"),
        "{out}"
    );
    let output = at_set(&["prompts", "list", "--json"], &file);
    let prompts: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(prompts[0]["name"], "mcp__everything__simple-prompt");
    assert_eq!(
        (prompts[0]["server"].as_str(), prompts[0]["prompt"]["name"].as_str()),
        (Some("everything"), Some("simple-prompt"))
    );

    // A qualified prompt name, or its own name when one server has it.
    for name in ["mcp__everything__args-prompt", "args-prompt"] {
        let output = at_set(&["prompts", "get", name, "--arg", "city=Lima"], &file);
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        assert_eq!(stdout(&output), "user: What's weather in Lima?\n");
    }
    let output = at_set(&["prompts", "get", "mcp__memory__args-prompt"], &file);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "mcp-bridge: no server has prompt mcp__memory__args-prompt\n");

    // A URI goes to the server that lists it, or whose template it fits.
    let output = at_set(&["resources", "read", "demo://resource/static/document/features.md"], &file);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stdout(&output).is_empty());
    let output = at_set(&["resources", "read", "demo://resource/dynamic/text/9"], &file);
    assert!(stdout(&output).starts_with("Resource 9: This is a plaintext resource created at "), "{}", stderr(&output));
    let output = at_set(&["resources", "read", "demo://x"], &file);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "mcp-bridge: no server has resource demo://x\n");
    let output = at_set(&["resources", "list", "--json"], &file);
    let listed: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let listed: Vec<(&str, &str)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["server"].as_str().unwrap(), r["resource"]["uri"].as_str().unwrap()))
        .collect();
    let mut expected: Vec<(&str, String)> =
        DOCS.iter().map(|doc| ("everything", format!("demo://resource/static/document/{doc}"))).collect();
    expected.push(("memory", "memory://knowledge-graph".to_owned()));
    assert_eq!(listed, expected.iter().map(|(s, u)| (*s, u.as_str())).collect::<Vec<_>>());
    let output = at_set(&["resources", "read", "memory://knowledge-graph", "--json"], &file);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let read: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(read["contents"][0]["uri"], "memory://knowledge-graph");

    let output = at_set(&["complete", "--prompt", "mcp__everything__completable-prompt", "department", "M"], &file);
    assert_eq!((output.status.code(), stdout(&output).as_str()), (Some(0), "Marketing\n"), "{}", stderr(&output));
    let output = at_set(&["resources", "templates", "--server", "memory"], &file);
    assert_eq!((output.status.code(), stdout(&output).as_str()), (Some(0), ""), "{}", stderr(&output));

    // The merged view sets the level on every server that offers logging: of the three, only
    // everything does. A server named that offers none is an error.
    let output = at_set(&["log-level", "warning"], &file);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "everything: log level warning\n");
    for server in ["memory", "time"] {
        let output = at_set(&["log-level", "warning", "--server", server, "--json"], &file);
        assert_eq!(output.status.code(), Some(1));
        let line: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(line["server"], server);
        assert!(line["error"].as_str().unwrap().contains("did not advertise the logging capability"), "{line}");
        assert_eq!(stderr(&output), "mcp-bridge: the level was not set on every server\n");
    }
}
