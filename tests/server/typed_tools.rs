//! Typed tools (feature `schema`): a tool whose schemas are derived from Rust types, served over
//! Streamable HTTP, listed and called by mcpwire's client and by the official Python SDK client
//! (`tests/peers/py_client.py`), its derived schemas checked against the JSON Schema 2020-12
//! meta-schema by the Python `jsonschema` package (a third-party validator). Bad arguments are a
//! tool error naming the JSON path, and the calls beside them are unharmed.

use crate::support;

use std::collections::BTreeMap;

use mcpwire::client::{Client, ClientOptions, EraPolicy};
use mcpwire::proto::mcp_types::{CallToolResult, ContentBlock, Role, TextContent, Tool};
use mcpwire::server::{
    prompt, prompt_argument, prompt_message, prompt_result, text_result, Elicited, Form, Json, Server, ServerError,
};
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
    #[schemars(range(min = 1, max = 30))]
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
    /// The city, capitalized.
    #[schemars(regex(pattern = r"^[A-Z][a-z]+$"))]
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

/// A new account: every constraint kind the validator enforces.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct SignUp {
    /// Three to sixteen lowercase letters.
    #[schemars(regex(pattern = r"^[a-z]{3,16}$"))]
    login: String,
    /// Where to write.
    #[schemars(email)]
    email: String,
    /// Age in years.
    #[schemars(range(min = 13, max = 130))]
    age: u32,
    /// A short note.
    #[schemars(length(max = 1000))]
    note: Option<String>,
    /// Interests, as a tree.
    interests: Option<Interest>,
}

/// An interest and the narrower one under it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Interest {
    /// Its name.
    name: String,
    /// A narrower interest.
    under: Option<Box<Interest>>,
}

impl Interest {
    fn depth(&self) -> usize {
        1 + self.under.as_ref().map_or(0, |i| i.depth())
    }
}

/// What `sign_up` answers.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Account {
    /// The login.
    login: String,
    /// How deep the interests go.
    depth: u32,
}

/// A count that must be positive, which the `broken` tool's handler does not respect.
#[derive(Serialize, JsonSchema)]
struct Positive {
    #[schemars(range(min = 1))]
    n: u32,
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// How the test client answers `approve`'s form.
#[derive(Deserialize, JsonSchema)]
struct HowToAnswer {
    /// accept, decline, cancel or bad.
    answer: String,
}

/// What `approve` asks the user.
#[derive(Debug, Deserialize, JsonSchema)]
struct Approval {
    /// Allow it.
    approve: bool,
    /// How many copies.
    #[schemars(range(min = 1, max = 3))]
    copies: u8,
    /// How urgent.
    urgency: Urgency,
}

/// How urgent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Urgency {
    /// Today.
    High,
    /// This week.
    Low,
}

/// A form that cannot be one: a nested object.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Shipping {
    to: Place,
}

/// A typed prompt's arguments: strings on the wire, one of them an enum.
#[derive(Debug, Deserialize, JsonSchema)]
struct ReviewArgs {
    /// The code to review.
    code: String,
    /// How to say it.
    tone: Option<Tone>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Tone {
    Kind,
    Blunt,
}

fn server() -> Server {
    Server::builder()
        .name("typed")
        .derived_prompt("review", "Reviews code", |ReviewArgs { code, tone }, _request| async move {
            let text = format!("Review {code} ({tone:?})");
            Ok(prompt_result(vec![prompt_message(
                Role::User,
                ContentBlock::Text(TextContent { text, ..Default::default() }),
            )]))
        })
        .prompt(
            prompt(
                "brief",
                "A travel brief",
                vec![prompt_argument("city", "Where", true), prompt_argument("nights", "How long", false)],
            ),
            |request| async move {
                let text = format!("{:?}", request.arguments);
                Ok(prompt_result(vec![prompt_message(
                    Role::User,
                    ContentBlock::Text(TextContent { text, ..Default::default() }),
                )]))
            },
        )
        .with_form(|builder, approval: Form<Approval>| {
            builder.derived_tool("approve", "Asks for an approval", move |HowToAnswer { answer }, ctx| {
                let form = approval.clone();
                async move {
                    let text = match ctx.elicit_form(format!("Approve? ({answer})"), &form).await? {
                        Elicited::Accept(a) => {
                            format!("approve={} copies={} urgency={:?}", a.approve, a.copies, a.urgency)
                        }
                        Elicited::Decline => "declined".to_owned(),
                        Elicited::Cancel => "cancelled".to_owned(),
                    };
                    Ok(text_result(text))
                }
            })
        })
        .derived_tool("sign_up", "Opens an account", |a: SignUp, _ctx| async move {
            let depth = a.interests.as_ref().map_or(0, Interest::depth) as u32;
            Ok(Json(Account { login: a.login, depth }))
        })
        .derived_tool("broken", "Answers a count its schema forbids", |_: Nothing, _ctx| async move {
            Ok(Json(Positive { n: 0 }))
        })
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

fn ours_output_schema(name: &str) -> Option<Value> {
    server().tools().into_iter().find(|t| t.name == name).and_then(|t| t.output_schema)
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

    let good = client.call_tool("plan", args(serde_json::from_str(GOOD).unwrap()), Default::default()).await.unwrap();
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
            "/destination: \"city\" is a required property",
        ),
        (json!({"travellers": [], "mode": "train"}), "\"destination\" is a required property"),
    ];
    for (arguments, path) in bad {
        let (bad, good, echo) = tokio::join!(
            client.call_tool("plan", args(arguments.clone()), Default::default()),
            client.call_tool("plan", args(serde_json::from_str(GOOD).unwrap()), Default::default()),
            client.call_tool("echo", args(json!({"text": "still here"})), Default::default()),
        );
        let bad = bad.unwrap();
        assert_eq!(bad.is_error, Some(true), "{arguments}: {bad:?}");
        let message = text(&bad);
        assert!(message.starts_with("Invalid arguments for tool plan: "), "{message}");
        assert!(message.contains(path), "{arguments}: {message} names {path}");
        assert_eq!(good.unwrap().structured::<Plan>().unwrap().days.len(), 2);
        assert_eq!(text(&echo.unwrap()), "still here");
    }
    // The typed call: arguments from a type, the result decoded after the check against the
    // listed outputSchema.
    #[derive(Serialize)]
    struct TripArgs<'a> {
        destination: Place,
        travellers: Vec<&'a str>,
        nights: u32,
        mode: Mode,
    }
    let args_of = |nights| TripArgs {
        destination: Place { city: "Oslo".into() },
        travellers: vec!["ada"],
        nights,
        mode: Mode::Plane,
    };
    let plan: Plan = client.call_tool_typed("plan", &args_of(3)).await.unwrap();
    assert_eq!(plan.days, ["night 1 in Oslo (plane)", "night 2 in Oslo (plane)", "night 3 in Oslo (plane)"]);
    assert_eq!(client.output_schema("plan"), ours_output_schema("plan"));
    let err = client.call_tool_typed::<Plan, _>("plan", &args_of(31)).await.unwrap_err();
    assert!(err.to_string().starts_with("tool plan: the tool failed: Invalid arguments for tool plan: /nights: 31 is greater than the maximum of 30"), "{err}");

    // Typed prompts/get: members as arguments, `None` left out, numbers as their text.
    #[derive(Serialize)]
    struct Brief {
        city: String,
        nights: Option<u32>,
    }
    let brief = client.get_prompt_with("brief", &Brief { city: "Lyon".into(), nights: Some(2) }).await.unwrap();
    let ContentBlock::Text(t) = &brief.messages[0].content else { panic!("text") };
    assert_eq!(t.text, r#"{"city": "Lyon", "nights": "2"}"#);
    let brief = client.get_prompt_with("brief", &Brief { city: "Lyon".into(), nights: None }).await.unwrap();
    let ContentBlock::Text(t) = &brief.messages[0].content else { panic!("text") };
    assert_eq!(t.text, r#"{"city": "Lyon"}"#);

    // A result decoded as the wrong type names the path.
    let err = good.structured::<BTreeMap<String, Vec<u32>>>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the structured content does not fit: /days/0: invalid type: string \"night 1 in Lyon (train)\", expected u32"
    );
}

/// The Python SDK client (`tests/peers/py_client.py`) run over `http` with `script`: one JSON
/// value per step it took.
async fn python_client_steps(http: &HttpServer, script: &Value) -> Vec<Value> {
    let output = tokio::process::Command::new(support::peer("MCP_PYTHON"))
        .arg(support::repo_path("tests/peers/py_client.py"))
        .args(["--url", &http.url()])
        .env("MCP_SCRIPT", script.to_string())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_client_lists_and_calls_a_typed_tool() {
    let (_server, http) = serve().await;
    let script = json!([
        {"call": "plan", "args": serde_json::from_str::<Value>(GOOD).unwrap()},
        {"call": "plan", "args": {"destination": {"city": "Lyon"}, "travellers": ["ada"], "mode": "plane", "nights": 1, "wishes": {"food": "cheese"}}},
        {"call": "plan", "args": {"destination": {"city": "Lyon"}, "travellers": "ada", "mode": "train"}},
        {"call": "plan", "args": {"travellers": [], "mode": "train"}},
        {"call": "echo", "args": {"text": "unharmed"}},
        {"call": "sign_up", "args": {"login": "ada", "email": "ada@example.com", "age": 36, "interests": {"name": "maths", "under": {"name": "logic"}}}},
        {"call": "sign_up", "args": {"login": "Ada!", "email": "ada@example.com", "age": 36}}
    ]);
    let steps = python_client_steps(&http, &script).await;
    assert_eq!(steps.len(), 9, "{steps:#?}");
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
    for (step, path) in [
        (&steps[4], "/travellers: \"ada\" is not of type \"array\""),
        (&steps[5], "\"destination\" is a required property"),
    ] {
        assert_eq!(step["ok"], true, "a tool error is a result: {step}");
        assert_eq!(step["result"]["isError"], true, "{step}");
        let message = step["result"]["content"][0]["text"].as_str().unwrap();
        assert!(message.contains(path), "{message} names {path}");
    }
    assert_eq!(steps[6]["result"]["content"][0]["text"], "unharmed");
    // sign_up: the Python client checked the structured result against the listed
    // outputSchema and accepted it; the pattern violation is a tool error naming its path.
    assert_eq!(steps[7]["ok"], true, "{}", steps[7]);
    assert_eq!(steps[7]["result"]["structuredContent"], json!({"login": "ada", "depth": 2}), "{}", steps[7]);
    assert_eq!(steps[8]["result"]["isError"], true, "{}", steps[8]);
    let message = steps[8]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("/login: \"Ada!\" does not match"), "{message}");
}

/// A typed prompt served over Streamable HTTP to the Python SDK client: it lists the arguments
/// derived from `ReviewArgs` (names, doc comments, required from `Option`-ness) and gets the
/// prompt with them; a missing required argument and a value outside the enum are each -32602
/// naming the argument, and the session goes on.
#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_client_lists_and_gets_a_typed_prompt() {
    let (_server, http) = serve().await;
    let script = json!([
        {"list": "prompts"},
        {"prompt": "review", "args": {"code": "fn main() {}", "tone": "blunt"}},
        {"prompt": "review", "args": {"code": "x"}},
        {"prompt": "review", "args": {"tone": "kind"}},
        {"prompt": "review", "args": {"code": "x", "tone": "rude"}},
        {"call": "echo", "args": {"text": "unharmed"}}
    ]);
    let steps = python_client_steps(&http, &script).await;
    assert_eq!(steps.len(), 8, "{steps:#?}");
    let prompts = steps[2]["result"]["prompts"].as_array().unwrap();
    let review = prompts.iter().find(|p| p["name"] == "review").unwrap();
    assert_eq!(
        review["arguments"],
        json!([
            {"name": "code", "description": "The code to review.", "required": true},
            {"name": "tone", "description": "How to say it.", "required": false}
        ]),
        "{review}"
    );
    let said = |step: &Value| step["result"]["messages"][0]["content"]["text"].as_str().unwrap_or_default().to_owned();
    assert_eq!(said(&steps[3]), "Review fn main() {} (Some(Blunt))", "{}", steps[3]);
    assert_eq!(said(&steps[4]), "Review x (None)", "{}", steps[4]);
    for (step, expected) in [
        (&steps[5], "Missing required arguments for prompt review: code"),
        (&steps[6], "Invalid arguments for prompt review: /tone: \"rude\" is not"),
    ] {
        assert_eq!(step["ok"], false, "{step}");
        assert_eq!(step["error"]["code"], -32602, "{step}");
        let message = step["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(expected), "{message}");
    }
    assert_eq!(steps[7]["result"]["content"][0]["text"], "unharmed");
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_sdk_v2_client_lists_and_calls_the_typed_tools_in_both_eras() {
    let (_server, http) = serve().await;
    let script = json!([
        {"call": "plan", "args": serde_json::from_str::<Value>(GOOD).unwrap()},
        {"call": "sign_up", "args": {"login": "ada", "email": "ada@example.com", "age": 36, "interests": {"name": "maths"}}},
        {"call": "sign_up", "args": {"login": "ada", "email": "ada at example", "age": 36}},
    ]);
    let ours = server().tools();
    for mode in ["legacy", "auto"] {
        let output = tokio::process::Command::new(support::peer("MCP_NODE"))
            .arg(support::repo_path("tests/peers/ts2_client.mjs"))
            .args(["--mode", mode, "--url", &http.url()])
            .env("MCP_TS2_DIR", support::peer("MCP_TS2_DIR"))
            .env("MCP_SCRIPT", script.to_string())
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let version = if mode == "auto" { "2026-07-28" } else { "2025-11-25" };
        assert_eq!(lines[0]["protocolVersion"], version, "{lines:#?}");
        for name in ["plan", "sign_up"] {
            let listed = lines[1]["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap();
            let tool = ours.iter().find(|t| t.name == name).unwrap();
            assert_eq!(listed["inputSchema"], tool.input_schema, "{mode}: {name}");
            assert_eq!(Some(&listed["outputSchema"]), tool.output_schema.as_ref(), "{mode}: {name}");
        }
        // The SDK checks structuredContent against the listed outputSchema: a failure would be
        // `ok: false` with its error.
        assert_eq!(lines[2]["ok"], true, "{mode}: {}", lines[2]);
        assert_eq!(lines[2]["structured"]["days"].as_array().unwrap().len(), 2, "{mode}: {}", lines[2]);
        assert_eq!(lines[3]["ok"], true, "{mode}: {}", lines[3]);
        assert_eq!(lines[3]["structured"], json!({"login": "ada", "depth": 1}), "{mode}: {}", lines[3]);
        assert_eq!(lines[4]["ok"], false, "{mode}: a tool error: {}", lines[4]);
        let message = lines[4]["result"].as_str().unwrap();
        assert!(message.contains("/email: \"ada at example\" is not a \"email\""), "{mode}: {message}");
    }
}

#[test]
fn derived_schemas_pass_the_2020_12_meta_schema_under_python_jsonschema() {
    let tools = server().tools();
    let plan = tools.iter().find(|t| t.name == "plan").unwrap().clone();
    let sign_up = tools.iter().find(|t| t.name == "sign_up").unwrap().clone();
    let schemas =
        json!([plan.input_schema, plan.output_schema.unwrap(), sign_up.input_schema, sign_up.output_schema.unwrap()]);
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
# The constraints the types declare (regex, range, length, email, deny_unknown_fields) hold
# under this validator too.
assert not V(schemas[0]).is_valid(dict(good, nights=31))
assert not V(schemas[0]).is_valid(dict(good, destination={"city": "lyon"}))
sign_up = {"login": "ada", "email": "ada@example.com", "age": 36, "interests": {"name": "a", "under": {"name": "b"}}}
V(schemas[2]).validate(sign_up)
for bad in [dict(sign_up, login="Ada!"), dict(sign_up, age=200), dict(sign_up, note="x" * 1001), dict(sign_up, extra=1)]:
    assert not V(schemas[2]).is_valid(bad), bad
checker = V(schemas[2], format_checker=V.FORMAT_CHECKER)
assert not checker.is_valid(dict(sign_up, email="ada at example"))
V(schemas[3]).validate({"login": "ada", "depth": 2})
print("checked", len(schemas))
"#;
    let output = std::process::Command::new(support::peer("MCP_PYTHON"))
        .args(["-c", program, &schemas.to_string(), &instance.to_string()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "checked 4");
}

/// `{"name": "i0", "under": {"name": "i1", "under": …}}`, `depth` levels, the deepest named `last`.
fn interests(depth: usize, last: Value) -> Value {
    let mut value = json!({"name": last});
    for i in (0..depth - 1).rev() {
        value = json!({"name": format!("i{i}"), "under": value});
    }
    value
}

#[tokio::test(flavor = "multi_thread")]
async fn each_bad_argument_is_a_tool_error_naming_its_path_and_the_calls_beside_it_are_answered() {
    let (_server, http) = serve().await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap();
    let client = Client::connect(transport, ClientOptions::default()).await.unwrap();
    let good = json!({"login": "ada", "email": "ada@example.com", "age": 36});
    let with = |key: &str, value: Value| {
        let mut args = good.clone();
        args[key] = value;
        args
    };
    let deep_path = format!("/interests{}/name", "/under".repeat(39));
    let cases = [
        ("wrong type", with("age", json!("old")), "/age: \"old\" is not of type \"integer\"".to_owned()),
        (
            "missing required field",
            with("interests", json!({"under": {"name": "x"}})),
            "/interests: \"name\" is a required property".to_owned(),
        ),
        (
            "missing required field at the root",
            json!({"login": "ada", "age": 36}),
            "\"email\" is a required property".to_owned(),
        ),
        (
            "unknown field where the type denies them",
            with("interests", json!({"name": "x", "colour": "red"})),
            "/interests: Additional properties are not allowed ('colour' was unexpected)".to_owned(),
        ),
        ("pattern", with("login", json!("Ada!")), "/login: \"Ada!\" does not match \"^[a-z]{3,16}$\"".to_owned()),
        ("format", with("email", json!("ada at example")), "/email: \"ada at example\" is not a \"email\"".to_owned()),
        ("out of range", with("age", json!(200)), "/age: 200 is greater than the maximum of 130".to_owned()),
        ("below range", with("age", json!(12)), "/age: 12 is less than the minimum of 13".to_owned()),
        (
            "a 1 MB string where maxLength forbids it",
            with("note", json!("x".repeat(1 << 20))),
            "/note: value is longer than 1000 characters".to_owned(),
        ),
        (
            "a deeply nested value",
            with("interests", interests(40, json!(5))),
            format!("{deep_path}: 5 is not of type \"string\""),
        ),
    ];
    for (what, arguments, expected) in cases {
        let (bad, fine, echo) = tokio::join!(
            client.call_tool("sign_up", args(arguments.clone()), Default::default()),
            client.call_tool("sign_up", args(with("interests", interests(40, json!("last")))), Default::default()),
            client.call_tool("echo", args(json!({"text": "still here"})), Default::default()),
        );
        let bad = bad.unwrap();
        assert_eq!(bad.is_error, Some(true), "{what}: {bad:?}");
        let message = text(&bad);
        assert!(message.starts_with("Invalid arguments for tool sign_up: "), "{what}: {message}");
        assert!(message.contains(&expected), "{what}: {message:.300} names {expected}");
        assert!(message.len() < 600, "{what}: the message stays short ({} bytes)", message.len());
        assert_eq!(fine.unwrap().structured::<Account>().unwrap().depth, 40, "{what}");
        assert_eq!(text(&echo.unwrap()), "still here", "{what}");
    }

    // Several violations at once: each is named.
    let many = json!({"login": "A", "email": "no", "age": -1, "extra": true});
    let message = text(&client.call_tool("sign_up", args(many), Default::default()).await.unwrap());
    for part in ["/login: ", "/email: ", "/age: ", "'extra' was unexpected"] {
        assert!(message.contains(part), "{message} names {part}");
    }

    // Deeper than the wire allows (JSON readers stop at 100 to 128 levels): a clear error for
    // that call alone (the timeout only guards against a hang).
    let (bad, fine) = tokio::join!(
        client.call_tool(
            "sign_up",
            args(with("interests", interests(200, json!("last")))),
            mcpwire::client::CallOptions::default().with_timeout(std::time::Duration::from_secs(60))
        ),
        client.call_tool("echo", args(json!({"text": "still here"})), Default::default()),
    );
    let error = bad.expect_err("too deep to read").to_string();
    assert!(error.contains("deep") || error.contains("depth") || error.contains("recursion"), "{error}");
    assert_eq!(text(&fine.unwrap()), "still here");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_typed_result_that_breaks_its_derived_schema_is_a_clear_error_in_debug_builds() {
    let (_server, http) = serve().await;
    let transport = HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap();
    let client = Client::connect(transport, ClientOptions::default()).await.unwrap();
    let result = client.call_tool("broken", None, Default::default()).await.unwrap();
    if cfg!(debug_assertions) {
        assert_eq!(result.is_error, Some(true), "{result:?}");
        assert_eq!(
            text(&result),
            "Output of tool broken does not match its output schema: /n: 0 is less than the minimum of 1"
        );
    } else {
        // Release builds trust the type.
        assert_eq!(result.structured_content, Some(json!({"n": 0})));
    }
    assert_eq!(
        text(&client.call_tool("echo", args(json!({"text": "after"})), Default::default()).await.unwrap()),
        "after"
    );
}

/// A client of `http` in `era` whose elicitation handler answers `approve`'s form as the
/// message's `(answer)` says.
async fn answering_client(http: &HttpServer, era: EraPolicy) -> Client<HttpClientTransport> {
    use mcpwire::proto::mcp_types::{ElicitAction, ElicitRequestParams, ElicitResult};
    let handler = |params: ElicitRequestParams| async move {
        let ElicitRequestParams::Form(form) = params else { panic!("a form") };
        let fields: Vec<&String> = form.requested_schema.properties.keys().collect();
        assert_eq!(fields, ["approve", "copies", "urgency"], "the derived form");
        let answer = |action: ElicitAction, content: Value| {
            let content = serde_json::from_value(content).unwrap();
            Ok::<_, mcpwire::proto::jsonrpc::ErrorObject>(ElicitResult {
                action,
                content,
                meta: None,
                extra: Default::default(),
            })
        };
        if form.message.ends_with("(accept)") {
            answer(ElicitAction::Accept, json!({"approve": true, "copies": 2, "urgency": "high"}))
        } else if form.message.ends_with("(bad)") {
            answer(ElicitAction::Accept, json!({"approve": true, "copies": 9, "urgency": "high"}))
        } else if form.message.ends_with("(decline)") {
            answer(ElicitAction::Decline, Value::Null)
        } else {
            answer(ElicitAction::Cancel, Value::Null)
        }
    };
    let transport = HttpClientTransport::new(HttpClientConfig::new(http.url())).unwrap();
    let options = ClientOptions::default().with_era(era).with_elicitation(handler);
    Client::connect(transport, options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_elicitation_accepts_declines_and_cancels_in_both_eras() {
    let (_server, http) = serve().await;
    for (era, version) in [(EraPolicy::Legacy, "2025-11-25"), (EraPolicy::Auto, "2026-07-28")] {
        let client = answering_client(&http, era).await;
        assert_eq!(client.protocol_version().as_str(), version);
        for (answer, expected) in
            [("accept", "approve=true copies=2 urgency=High"), ("decline", "declined"), ("cancel", "cancelled")]
        {
            let result =
                client.call_tool("approve", args(json!({"answer": answer})), Default::default()).await.unwrap();
            assert_eq!((result.is_error, text(&result).as_str()), (None, expected), "{version} {answer}");
        }
        // An accepted answer that breaks the form: the call fails naming the field, and the
        // session goes on.
        let result = client.call_tool("approve", args(json!({"answer": "bad"})), Default::default()).await;
        let failure = match result {
            Ok(result) => {
                assert_eq!(result.is_error, Some(true), "{version}: {result:?}");
                text(&result)
            }
            Err(e) => e.to_string(),
        };
        assert!(failure.contains("/copies: 9 is greater than the maximum of 3"), "{version}: {failure}");
        let echo = client.call_tool("echo", args(json!({"text": "after"})), Default::default()).await.unwrap();
        assert_eq!(text(&echo), "after");
    }
}

#[test]
fn a_form_type_that_is_not_flat_is_refused_naming_the_field() {
    let err = Form::<Shipping>::new().unwrap_err();
    assert_eq!(err.field, "to");
    assert!(
        err.to_string().ends_with("cannot be an elicitation form: field \"to\" is a nested object (Place)"),
        "{err}"
    );
}

/// A list of free strings (no unit-only enum): no elicitation field either.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Invitees {
    emails: Vec<String>,
}

/// The builder owns the refusal: a tool declaring a form of a nested struct, or of a list of
/// strings, makes `build` fail naming the field (the tool is never registered, no call is
/// needed to find out); the same tool with a flat form builds and is listed.
#[test]
fn a_tool_declaring_a_form_that_is_not_flat_fails_the_build_naming_the_field() {
    fn with_form_of<T: serde::de::DeserializeOwned + JsonSchema + Send + Sync + 'static>() -> Result<Server, ServerError>
    {
        Server::builder()
            .with_form(|builder, form: Form<T>| {
                builder.derived_tool("ask", "Asks", move |HowToAnswer { .. }, ctx| {
                    let form = form.clone();
                    async move {
                        ctx.elicit_form("?", &form).await?;
                        Ok(text_result("asked"))
                    }
                })
            })
            .build()
    }
    for (refused, field, why) in [
        (with_form_of::<Shipping>(), "to", "is a nested object (Place)"),
        (with_form_of::<Invitees>(), "emails", "is a list of something other than a unit-only enum"),
    ] {
        let Err(ServerError::InvalidForm(e)) = refused else { panic!("{field}: refused at build") };
        assert_eq!(e.field, field);
        assert!(e.to_string().ends_with(&format!("field {field:?} {why}")), "{e}");
    }
    let built = with_form_of::<Approval>().expect("a flat form builds");
    assert_eq!(built.tools().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["ask"]);
}
