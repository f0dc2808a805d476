//! The console of `mcp-bridge serve` in a real browser: Debian's headless chromium driven by
//! playwright-core (tests/peers/console_browser.mjs) opens `/ui` of a bridge over
//! server-everything, server-memory and a cancellation recorder (tests/peers/cancel_recorder.py). The
//! upstreams show ready; a search finds one tool; the form of memory's `create_entities` (an array
//! of objects holding an array) is refused in the page while a required field is empty, then
//! filled, sent, and its result shown; the knowledge graph resource, read in the page, holds the
//! entity the form made; a prompt is got with an argument; completion on a prompt's arguments (the
//! second's suggestions following the first) and on a template's variable, suggestions picked with
//! the mouse and the keyboard; server-everything's elicitation tool asks in the page, its form
//! (strings, a boolean, numbers, single and multiple choices) is refused while its required field
//! is empty, then accepted, and the tool's result holds the values typed; asked again, declined,
//! and again, cancelled; a long-running tool shows its progress and is cancelled from the page, and
//! the session answers the next call; the recorder's stderr tail, shown in the page, proves a
//! cancellation reached the upstream, and the live view shows both calls as cancelled; the Python
//! SDK client calls a tool through the bridge while the page is open and its row appears in the
//! page; the page's own session is recorded from the page around one call, and the recording
//! downloaded holds the session's opening and that call only, and replays (mcp-conformance) against
//! the same bridge over stdio. The tool is picked and its form sent
//! from the keyboard; axe-core (WCAG 2 A and AA) finds no serious or critical violation on the page
//! connected, with each form, with the result, with the suggestions, the traffic and the
//! recordings; the browser logs no error. Screenshots of each step go to target/console-browser/
//! (test artifacts, not committed).

use crate::examples;
use crate::serving::ServingBridge;
use crate::support;

use mcpwire::recording::Recording;
use serde_json::Value;

#[test]
fn the_console_shows_searches_calls_reads_and_gets_in_a_browser() {
    let dir = std::env::temp_dir().join(format!("mcp-bridge-console-browser-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let memory_file = dir.join("memory.jsonl");
    let _ = std::fs::remove_file(&memory_file);
    let toml = format!(
        "[mcp_servers.everything]\ncommand = {node:?}\nargs = [{:?}, \"stdio\"]\nrequired = true\nstartup_timeout_sec = 60\n\n\
         [mcp_servers.memory]\ncommand = {node:?}\nargs = [{:?}]\nenv = {{ MEMORY_FILE_PATH = {:?} }}\nrequired = true\n\
         startup_timeout_sec = 60\n\n\
         [mcp_servers.recorder]\ncommand = {:?}\nargs = [{:?}]\nrequired = true\n",
        support::peer("MCP_EVERYTHING_JS"),
        support::peer("MCP_MEMORY_JS"),
        memory_file.display().to_string(),
        support::peer("MCP_PYTHON"),
        support::repo_path("tests/peers/cancel_recorder.py").display().to_string(),
        node = support::peer("MCP_NODE"),
    );
    let config = dir.join("console.toml");
    std::fs::write(&config, toml).unwrap();
    let bridge = ServingBridge::start(&["--config", config.to_str().unwrap()]);
    let base = format!("http://127.0.0.1:{}", bridge.port());
    let shots = support::repo_path("target/console-browser");

    let output = std::process::Command::new(support::peer("MCP_NODE"))
        .arg(support::repo_path("tests/peers/console_browser.mjs"))
        .args([&base, shots.to_str().unwrap()])
        .env("MCP_PLAYWRIGHT_DIR", support::peer("MCP_PLAYWRIGHT_DIR"))
        .env("MCP_CHROMIUM", support::peer("MCP_CHROMIUM"))
        .env("MCP_PYTHON", support::peer("MCP_PYTHON"))
        .output()
        .expect("node runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "console_browser.mjs failed: {stderr}");
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));

    assert_eq!(
        seen["upstreams"],
        serde_json::json!([
            {"server": "everything", "state": "ready"},
            {"server": "memory", "state": "ready"},
            {"server": "recorder", "state": "ready"}
        ])
    );
    assert_eq!(seen["searchFound"], serde_json::json!(["mcp__memory__create_entities"]));
    assert_eq!(seen["sendLabel"], "Call");
    // Refused in the page, before anything is sent: no result.
    assert_eq!(seen["emptyStatus"], "Not sent: entityType is required; name is required");
    assert_eq!(seen["emptyResult"], "");
    let tool = seen["toolResult"].as_str().unwrap();
    assert!(tool.contains(r#""name": "console-entity""#) && tool.contains("made in the browser"), "{tool}");
    assert!(tool.contains("Structured content"), "{tool}");
    // The resource read in the page holds what the form made.
    let resource = seen["resourceResult"].as_str().unwrap();
    assert!(resource.starts_with("memory+memory://knowledge-graph (application/json)"), "{resource}");
    assert!(resource.contains(r#""name": "console-entity""#), "{resource}");
    assert_eq!(seen["promptResult"], "userWhat's weather in Paris?");
    // Completion: a suggestion picked with the mouse; the next argument's suggestions follow
    // from the first (its context), picked from the keyboard; what they filled was sent.
    assert_eq!(seen["completedDepartment"], "Engineering");
    assert_eq!(seen["nameSuggestions"], serde_json::json!(["Alice", "Bob", "Charlie"]));
    assert_eq!(seen["completedName"], "Bob");
    assert_eq!(seen["completionFocus"], "name", "the focus is back in the field completed");
    assert_eq!(seen["completedPrompt"], "userPlease promote Bob to the head of the Engineering team.");
    let template = seen["completedTemplate"].as_str().unwrap();
    assert!(template.contains("demo://resource/dynamic/text/7"), "{template}");
    // Another client's call (the Python SDK's) appears in the page, under another session.
    assert_eq!(seen["otherClientSaid"], serde_json::json!(["Echo: from python"]));
    assert_eq!(seen["otherClientRow"], "everything echo ok");
    assert_eq!(seen["otherClientSession"], true, "the other client's session is not the page's");
    // The elicitation asked in the page, answered there, and what the tool got.
    assert_eq!(seen["elicitationTitle"], "The server asks: Please provide inputs for the following fields:");
    assert_eq!(seen["elicitationFocused"], "name", "the first field, the required one, has the focus");
    assert_eq!(seen["elicitationRefused"], "Not sent: String is required");
    let elicited = seen["elicitationResult"].as_str().unwrap();
    for line in [
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Email: ada@example.org",
        "- Favorite Integer: 7",
        "- Favorite Number: 3.14",
    ] {
        assert!(elicited.contains(line), "{line} not in {elicited}");
    }
    let raw: String = elicited.chars().filter(|c| !c.is_whitespace()).collect();
    for value in [
        r#""action":"accept""#,
        r#""untitledSingleSelectEnum":"Joey""#,
        r#""untitledMultipleSelectEnum":["Guitar","Piano"]"#,
        r#""titledSingleSelectEnum":"hero-3""#,
        r#""titledMultipleSelectEnum":["fish-1","fish-2"]"#,
        r#""legacyTitledEnum":"pet-3""#,
        r#""firstLine":"Itwasadarkandstormynight.""#,
    ] {
        assert!(raw.contains(value), "{value} not in {raw}");
    }
    assert!(
        seen["elicitationDeclined"].as_str().unwrap().contains(r#""action": "decline""#),
        "{}",
        seen["elicitationDeclined"]
    );
    let cancelled = seen["elicitationCancelled"].as_str().unwrap();
    assert!(cancelled.contains(r#""action": "cancel""#), "{cancelled}");
    assert_eq!(seen["consoleErrors"], serde_json::json!([]), "browser console errors");
    assert_eq!(seen["pageErrors"], serde_json::json!([]), "page errors");
    assert_eq!(seen["accessibility"], serde_json::json!([]), "serious or critical axe-core violations");
    // server-everything's long operation (600 steps of 1 s): its progress in the page, then
    // cancelled there; the next call of the same page's session is answered.
    let progress = &seen["progressShown"];
    assert!(progress["value"].as_f64().unwrap() >= 2.0 && progress["max"] == 600.0, "{progress}");
    assert_eq!(seen["cancelledResult"], "Cancelled.");
    // The cancellation reached the upstream itself: the recorder wrote it to its stderr, the
    // page shows that tail (one line: the one cancellation); the live feed has both cancelled calls as cancelled.
    let recorder = seen["recorderStderr"].as_str().unwrap();
    // (The reason is the bridge's own: it cancels its upstream request when the caller's ends.)
    assert!(
        recorder.starts_with("cancelled request ") && recorder.ends_with(": the caller stopped waiting"),
        "{recorder}"
    );
    // (Sorted: which cancellation the bridge saw end first is not the test's business.)
    let mut cancelled: Vec<&str> =
        seen["trafficCancelled"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    cancelled.sort_unstable();
    assert_eq!(
        cancelled,
        ["everything trigger-long-running-operation cancelled", "recorder wait_for_cancel cancelled"]
    );
    assert_eq!(seen["afterCancel"], "The sum of 2 and 40 is 42.");
    // The live traffic (time, caller, session, server, tool, outcome, latency): no caller
    // without a token.
    assert_eq!(
        seen["trafficRow"],
        serde_json::json!(["shape ok", "—", "shape ok", "everything", "get-sum", "ok", "shape ok"])
    );
    assert_eq!(seen["latencyRow"], serde_json::json!({"calls": "1", "p50": true, "chart": true}));
    assert_eq!(
        seen["trafficMemory"],
        serde_json::json!(["memory resources/read memory://knowledge-graph ok", "memory create_entities ok"])
    );
    // The page's own session, recorded from the page while get-sum was called: the download
    // opens with the session's initialize exchange, then holds that call and nothing else.
    // (The Python client's session may still be going away: only the page's is asserted.)
    let listed = seen["sessionsListed"].as_array().unwrap();
    assert_eq!(
        listed.iter().filter(|s| s.as_str().unwrap().starts_with("mcp-bridge-console ")).count(),
        1,
        "{listed:?}"
    );
    assert!(listed.contains(&Value::from("mcp-bridge-console false")), "{listed:?}");
    let name = seen["recordingName"].as_str().unwrap();
    assert!(name.starts_with("session-") && name.ends_with(".jsonl"), "{name}");
    let recording = Recording::parse(std::path::Path::new(name), seen["recording"].as_str().unwrap()).unwrap();
    assert_eq!(recording.header.client.as_ref().map(|c| c["name"].clone()), Some(Value::from("mcp-bridge-console")));
    let messages: Vec<String> = recording
        .entries
        .iter()
        .map(|e| {
            let message: Value = serde_json::from_str(e.msg.as_ref().unwrap().get()).unwrap();
            let what = match &message["method"] {
                Value::String(method) if method == "tools/call" => {
                    format!("{method} {}", message["params"]["arguments"])
                }
                Value::String(method) => method.clone(),
                _ => format!("answer {}", message["result"]["content"][0]["text"]),
            };
            format!("{} {what}", e.dir.as_str())
        })
        .collect();
    assert_eq!(
        messages,
        [
            "c2s initialize",
            "s2c answer null",
            "c2s notifications/initialized",
            r#"c2s tools/call {"a":3,"b":4}"#,
            r#"s2c answer "The sum of 3 and 4 is 7.""#,
        ]
    );
    // And it replays: the same bridge (over stdio, the same upstreams) answers it as recorded.
    let file = dir.join(name);
    std::fs::write(&file, seen["recording"].as_str().unwrap()).unwrap();
    let bridge_cmd = format!("{} serve --listen stdio --config {}", examples::bin_path("mcp-bridge"), config.display());
    let replay = std::process::Command::new(examples::bin_path("mcp-conformance"))
        .arg("replay")
        .arg(&file)
        .args(["--server", &bridge_cmd])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{report}\n{}", String::from_utf8_lossy(&replay.stderr));
    assert!(report.contains(" 0 failed"), "{report}");
    for step in [
        "1-upstreams",
        "2-search",
        "3-form-refused",
        "4-tool-result",
        "5-resource-read",
        "6-prompt-got",
        "6b-elicitation-asked",
        "6c-elicitation-answered",
        "6d-completion-offered",
        "6e-template-completed",
        "7-progress",
        "8-cancelled",
        "8b-cancel-reached-upstream",
        "9-traffic",
        "9b-other-client",
        "10-recording",
    ] {
        assert!(shots.join(format!("{step}.png")).is_file(), "no screenshot of {step}");
    }
    // The entity reached the upstream itself, not only the page.
    let kept = std::fs::read_to_string(&memory_file).unwrap();
    assert!(kept.contains("console-entity") && kept.contains("made in the browser"), "{kept}");
}
