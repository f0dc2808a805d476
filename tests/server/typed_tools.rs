//! Typed tools (feature `schema`): a tool whose schemas are derived from Rust types, served over
//! Streamable HTTP, listed and called by mcpwire's client and by the official Python SDK client
//! (`tests/peers/py_client.py`), its derived schemas checked against the JSON Schema 2020-12
//! meta-schema by the Python `jsonschema` package (a third-party validator). Bad arguments are a
//! tool error naming the JSON path, and the calls beside them are unharmed.

use crate::support;

use std::collections::BTreeMap;

use mcpwire::client::{Client, ClientOptions};
use mcpwire::proto::mcp_types::{CallToolResult, Tool};
use mcpwire::server::{text_result, Json, Server};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A trip to plan.
#[derive(Debug, Deserialize, JsonSchema)]
struct Trip {
    /// Where to go.
    destination: Place,
    /// Who travels.
    travellers: Vec<String>,
    /// How many nights, if known (default 1).
    nights: Option<u32>,
    /// How to travel.
    mode: Mode,
    /// Extra wishes, by topic.
    #[serde(default)]
    wishes: BTreeMap<String, String>,
}

/// A place.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Place {
    /// The city.
    city: String,
}

/// How to travel.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    /// By train.
    Train,
    /// By plane.
    Plane,
}

/// The plan made for a trip.
#[derive(Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
struct Plan {
    /// One line per day.
    days: Vec<String>,
    /// The travellers, in order.
    party: Vec<String>,
    /// The wishes that were heard.
    heard: Option<Vec<String>>,
}

fn server() -> Server {
    Server::builder()
        .name("typed")
        .derived_tool_with(
            Tool::new("plan", json!({}))
                .title("Plan a trip")
                .description("Plans a trip, a line per night")
                .read_only(true),
            |trip: Trip, _ctx| async move {
                let nights = trip.nights.unwrap_or(1);
                let mode = serde_json::to_value(trip.mode).unwrap();
                let days = (1..=nights)
                    .map(|n| format!("night {n} in {} ({})", trip.destination.city, mode.as_str().unwrap()))
                    .collect();
                let heard = (!trip.wishes.is_empty()).then(|| trip.wishes.into_values().collect());
                Ok(Json(Plan { days, party: trip.travellers, heard }))
            },
        )
        .tool(
            "echo",
            "Echoes text",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            |args, _| async move { Ok(text_result(args.get("text").and_then(Value::as_str).unwrap_or_default())) },
        )
        .build()
        .unwrap()
}

async fn serve() -> (Server, HttpServer) {
    let server = server();
    let http = server.serve_http(HttpServerConfig::default()).await.unwrap();
    (server, http)
}

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned()
}

const GOOD: &str = r#"{"destination": {"city": "Lyon"}, "travellers": ["ada", "grace"], "nights": 2, "mode": "train"}"#;

#[tokio::test(flavor = "multi_thread")]
async fn mcpwire_client_lists_calls_and_decodes_a_typed_tool() {
    let (_server, http) = serve().await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap();
    let client = Client::connect(transport, ClientOptions::default()).await.unwrap();

    let tools = client.list_tools().await.unwrap();
    let plan = tools.iter().find(|t| t.name == "plan").unwrap();
    assert_eq!(plan.title.as_deref(), Some("Plan a trip"));
    assert_eq!(plan.annotations.as_ref().unwrap().read_only_hint, Some(true));
    assert_eq!(plan.input_schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(plan.input_schema["type"], "object");
    assert_eq!(
        plan.input_schema["required"],
        json!(["destination", "travellers", "mode"]),
        "Option and default: not required"
    );
    assert_eq!(plan.input_schema["properties"]["destination"]["description"], "Where to go.");
    assert_eq!(plan.output_schema.as_ref().unwrap()["required"], json!(["days", "party", "heard"]));

    let good = client.call_tool("plan", args(serde_json::from_str(GOOD).unwrap())).await.unwrap();
    let decoded: Plan = good.structured().unwrap();
    assert_eq!(
        decoded,
        Plan {
            days: vec!["night 1 in Lyon (train)".into(), "night 2 in Lyon (train)".into()],
            party: vec!["ada".into(), "grace".into()],
            heard: None
        }
    );
    assert_eq!(
        serde_json::from_str::<Value>(&text(&good)).unwrap(),
        good.structured_content.clone().unwrap(),
        "the text mirror"
    );

    // Bad arguments, each with a good call and an untyped one in flight beside it.
    let bad = [
        (json!({"destination": {"city": 7}, "travellers": [], "mode": "train"}), "/destination/city"),
        (json!({"destination": {"city": "Lyon"}, "travellers": ["ada", 1], "mode": "train"}), "/travellers/1"),
        (json!({"destination": {"city": "Lyon"}, "travellers": [], "mode": "bike"}), "/mode"),
        (json!({"destination": {"city": "Lyon"}, "travellers": [], "nights": -1, "mode": "train"}), "/nights"),
        (
            json!({"destination": {}, "travellers": [], "mode": "train"}),
            "/destination: missing required property \"city\"",
        ),
        (json!({"travellers": [], "mode": "train"}), "missing required property \"destination\""),
    ];
    for (arguments, path) in bad {
        let (bad, good, echo) = tokio::join!(
            client.call_tool("plan", args(arguments.clone())),
            client.call_tool("plan", args(serde_json::from_str(GOOD).unwrap())),
            client.call_tool("echo", args(json!({"text": "still here"}))),
        );
        let bad = bad.unwrap();
        assert_eq!(bad.is_error, Some(true), "{arguments}: {bad:?}");
        let message = text(&bad);
        assert!(message.starts_with("Invalid arguments for tool plan: "), "{message}");
        assert!(message.contains(path), "{arguments}: {message} names {path}");
        assert_eq!(good.unwrap().structured::<Plan>().unwrap().days.len(), 2);
        assert_eq!(text(&echo.unwrap()), "still here");
    }
    // A result decoded as the wrong type names the path.
    let err = good.structured::<BTreeMap<String, Vec<u32>>>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the structured content does not fit: /days/0: invalid type: string \"night 1 in Lyon (train)\", expected u32"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_client_lists_and_calls_a_typed_tool() {
    let (_server, http) = serve().await;
    let script = json!([
        {"call": "plan", "args": serde_json::from_str::<Value>(GOOD).unwrap()},
        {"call": "plan", "args": {"destination": {"city": "Lyon"}, "travellers": ["ada"], "mode": "plane", "nights": 1, "wishes": {"food": "cheese"}}},
        {"call": "plan", "args": {"destination": {"city": "Lyon"}, "travellers": "ada", "mode": "train"}},
        {"call": "plan", "args": {"travellers": [], "mode": "train"}},
        {"call": "echo", "args": {"text": "unharmed"}}
    ]);
    let output = tokio::process::Command::new(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/peers/py_client.py"))
        .args(["--url", &http.url()])
        .env("MCP_SCRIPT", script.to_string())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let steps: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(steps.len(), 7, "{steps:#?}");
    assert_eq!(steps[0]["ok"], true, "{}", steps[0]);

    let tools = steps[1]["result"]["tools"].as_array().unwrap();
    let plan = tools.iter().find(|t| t["name"] == "plan").unwrap();
    let ours = server().tools().into_iter().find(|t| t.name == "plan").unwrap();
    assert_eq!(plan["inputSchema"], ours.input_schema, "the Python client sees the derived schema");
    assert_eq!(plan["outputSchema"], ours.output_schema.unwrap());

    // The Python client validates structuredContent against outputSchema: a failure would be
    // `ok: false` here.
    for (step, days, heard) in [(&steps[2], 2, Value::Null), (&steps[3], 1, json!(["cheese"]))] {
        assert_eq!(step["ok"], true, "{step}");
        assert_ne!(step["result"]["isError"], true, "{step}");
        assert_eq!(step["result"]["structuredContent"]["days"].as_array().unwrap().len(), days, "{step}");
        assert_eq!(step["result"]["structuredContent"]["heard"], heard, "{step}");
    }
    for (step, path) in
        [(&steps[4], "/travellers: expected type \"array\""), (&steps[5], "missing required property \"destination\"")]
    {
        assert_eq!(step["ok"], true, "a tool error is a result: {step}");
        assert_eq!(step["result"]["isError"], true, "{step}");
        let message = step["result"]["content"][0]["text"].as_str().unwrap();
        assert!(message.contains(path), "{message} names {path}");
    }
    assert_eq!(steps[6]["result"]["content"][0]["text"], "unharmed");
}

#[test]
fn derived_schemas_pass_the_2020_12_meta_schema_under_python_jsonschema() {
    let plan = server().tools().into_iter().find(|t| t.name == "plan").unwrap();
    let schemas = json!([plan.input_schema, plan.output_schema.unwrap()]);
    let instance: Value = serde_json::from_str(GOOD).unwrap();
    // Each schema passes the meta-schema; the good arguments pass the input schema, and bad
    // ones fail it (so the check is no empty one).
    let program = r#"
import json, sys, jsonschema
schemas, good = json.loads(sys.argv[1]), json.loads(sys.argv[2])
V = jsonschema.Draft202012Validator
for s in schemas:
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema", s
    V.check_schema(s)
V(schemas[0]).validate(good)
bad = dict(good, mode="bike")
assert not V(schemas[0]).is_valid(bad)
V(schemas[1]).validate({"days": ["x"], "party": [], "heard": None})
assert not V(schemas[1]).is_valid({"days": [1], "party": [], "heard": None})
print("checked", len(schemas))
"#;
    let output = std::process::Command::new(support::peer("MCP_PYTHON"))
        .args(["-c", program, &schemas.to_string(), &instance.to_string()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "checked 2");
}
