//! Interop: the sampling builders' JSON read by a third party's models of the spec, the Python
//! SDK's pydantic types (`mcp.types`, `mcp` 2.3.0 from `scripts/install-peers`).
//!
//! One Python process validates every case with `model_validate` and writes back what it read
//! with `model_dump(by_alias=True, exclude_none=True)`. The SDK ignores members it does not
//! model, so a dump equal to our JSON means every member we wrote is one the SDK knows, under
//! that name, with a value of its type. Not here: sending these over a session (the SDK clients
//! in `interop_eras` and the conformance suite do).

use crate::support;

use std::collections::HashMap;
use std::process::Command;

use mcpwire::proto::mcp_types::{
    ContentBlock, CreateMessageRequestParams, CreateMessageResult, IncludeContext, ModelPreferences, Role,
    SamplingMessage, SamplingMessageContentBlock, StopReason, Tool, ToolChoiceMode, ToolUseContent,
};
use serde_json::{json, Map, Value};

/// Validates each case `{"case", "model", "json"}` with `mcp.types.<model>`; one line per case:
/// `{"case", "ok": true, "dump"}` or `{"case", "ok": false, "errors": [{"loc", "type"}]}`.
const VALIDATE: &str = r#"
import json, sys
import pydantic
from mcp import types

for case in json.loads(sys.argv[1]):
    model = getattr(types, case["model"])
    try:
        parsed = model.model_validate(case["json"])
    except pydantic.ValidationError as error:
        refused = [{"loc": list(e["loc"]), "type": e["type"]} for e in error.errors()]
        print(json.dumps({"case": case["case"], "ok": False, "errors": refused}))
    else:
        dump = parsed.model_dump(by_alias=True, exclude_none=True)
        print(json.dumps({"case": case["case"], "ok": True, "dump": dump}))
"#;

/// Runs [`VALIDATE`] once over `cases` (`(name, model, json)`); its lines by case name.
fn validate_in_python(cases: &[(&str, &str, &Value)]) -> HashMap<String, Value> {
    let cases: Vec<Value> =
        cases.iter().map(|(case, model, value)| json!({"case": case, "model": model, "json": value})).collect();
    let output = Command::new(support::peer("MCP_PYTHON"))
        .args(["-c", VALIDATE, &Value::from(cases).to_string()])
        .output()
        .expect("run the Python SDK");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            (line["case"].as_str().unwrap().to_owned(), line)
        })
        .collect()
}

/// A request with every member the 2024-11-05 revision has, from the builders.
fn request_with_every_member() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("What is 2 + 2?"),
            SamplingMessage::assistant_text("4."),
            SamplingMessage::user_text("And 3 + 3?"),
        ],
        64,
    )
    .system_prompt("Answer with a number.")
    .model_preferences(
        ModelPreferences::new()
            .hint("claude-3-sonnet")
            .hint("claude")
            .cost_priority(0.3)
            .speed_priority(0.5)
            .intelligence_priority(0.9),
    )
    .temperature(0.2)
    .stop_sequences(vec!["\n\n".into()])
    .include_context(IncludeContext::ThisServer)
    .metadata(Map::from_iter([("provider".to_owned(), json!({"seed": 7}))]))
}

/// A 2025-11-25 request in the middle of a tool use: tools, tool choice, array content.
fn request_with_tool_use() -> CreateMessageRequestParams {
    let tool_use = ToolUseContent {
        id: "c1".into(),
        name: "get_weather".into(),
        input: Map::from_iter([("city".to_owned(), json!("Paris"))]),
        meta: None,
        extra: Default::default(),
    };
    CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("Weather in Paris?"),
            SamplingMessage::new(Role::Assistant, vec![SamplingMessageContentBlock::ToolUse(tool_use)]),
            SamplingMessage::new(
                Role::User,
                vec![SamplingMessageContentBlock::tool_result("c1", vec![ContentBlock::text("18C")], false)],
            ),
        ],
        1000,
    )
    .tools(vec![Tool::new("get_weather", json!({"type": "object"}))])
    .tool_choice(ToolChoiceMode::Auto)
}

/// The Python SDK's `CreateMessageRequestParams` and `CreateMessageResult[WithTools]` accept
/// what the builders write and dump it back member for member; they refuse an `includeContext` outside
/// the spec's three values, and drop a member they do not know (so the equality can fail).
#[test]
fn python_sdk_models_read_the_sampling_builders_json_as_written() {
    let every_member = serde_json::to_value(request_with_every_member()).unwrap();
    // Every member of the request is set, so the comparison below covers each.
    let mut members: Vec<&str> = every_member.as_object().unwrap().keys().map(String::as_str).collect();
    members.sort_unstable();
    assert_eq!(
        members,
        [
            "includeContext",
            "maxTokens",
            "messages",
            "metadata",
            "modelPreferences",
            "stopSequences",
            "systemPrompt",
            "temperature"
        ]
    );
    assert_eq!(every_member["modelPreferences"].as_object().unwrap().len(), 4);
    let tool_use = serde_json::to_value(request_with_tool_use()).unwrap();
    let result = serde_json::to_value(
        CreateMessageResult::new("claude-3-sonnet", SamplingMessageContentBlock::text("6"))
            .stop_reason(StopReason::EndTurn),
    )
    .unwrap();
    let tool_use_result = serde_json::to_value(
        CreateMessageResult::new(
            "claude-3-sonnet",
            vec![
                SamplingMessageContentBlock::text("Let me look."),
                SamplingMessageContentBlock::ToolUse(ToolUseContent {
                    id: "c2".into(),
                    name: "get_weather".into(),
                    input: Map::from_iter([("city".to_owned(), json!("Lyon"))]),
                    meta: None,
                    extra: Default::default(),
                }),
            ],
        )
        .stop_reason(StopReason::ToolUse),
    )
    .unwrap();
    let mut other_context = every_member.clone();
    other_context["includeContext"] = json!("everything");
    let mut misspelt = every_member.clone();
    let prompt = misspelt.as_object_mut().unwrap().remove("systemPrompt").unwrap();
    misspelt["systemPromt"] = prompt;

    let read = validate_in_python(&[
        ("every member", "CreateMessageRequestParams", &every_member),
        ("tool use", "CreateMessageRequestParams", &tool_use),
        ("result", "CreateMessageResult", &result),
        // The SDK models a result with array content (2025-11-25, tools offered) apart.
        ("tool use result", "CreateMessageResultWithTools", &tool_use_result),
        ("other context", "CreateMessageRequestParams", &other_context),
        ("misspelt member", "CreateMessageRequestParams", &misspelt),
    ]);
    assert_eq!(read.len(), 6, "{read:#?}");

    for (case, written) in [
        ("every member", &every_member),
        ("tool use", &tool_use),
        ("result", &result),
        ("tool use result", &tool_use_result),
    ] {
        let line = &read[case];
        assert_eq!(line["ok"], true, "{case}: {line}");
        assert_eq!(&line["dump"], written, "{case}: the Python SDK read it otherwise");
    }
    assert_eq!(
        read["other context"],
        json!({"case": "other context", "ok": false, "errors": [{"loc": ["includeContext"], "type": "literal_error"}]})
    );
    let mut without_prompt = every_member.clone();
    without_prompt.as_object_mut().unwrap().remove("systemPrompt");
    assert_eq!(read["misspelt member"], json!({"case": "misspelt member", "ok": true, "dump": without_prompt}));
}
