//! Resources, prompts, completion, logging, pagination, `list_changed` and tool schema checks,
//! driven with raw JSON lines through the stdio transport (newline framing over in-memory
//! pipes), asserting the exact wire shapes.
//! Every test runs on a paused clock (nothing here waits for a real process or socket).

use std::time::Duration;

use mcpwire::proto::mcp_types::{
    AudioContent, CallToolResult, ContentBlock, Icon, ImageContent, LoggingLevel, ResourceLink, Role, TaskSupport,
    TextContent, Tool,
};
use mcpwire::server::{
    prefix_matches, prompt, prompt_argument, prompt_message, prompt_result, resource, resource_template, text_contents,
    text_result, Server, ServerBuilder,
};
use mcpwire::transport::stdio::StdioTransport;
use mcpwire::transport::Limits;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

const WAIT: Duration = Duration::from_secs(10);

struct Wire {
    input: Box<dyn AsyncWrite + Send + Unpin>,
    output: BufReader<Box<dyn AsyncRead + Send + Unpin>>,
    next_id: i64,
}

impl Wire {
    /// `server` served over the stdio transport on in-memory pipes, initialized.
    async fn open(server: &Server) -> Wire {
        let (client_write, server_read) = tokio::io::duplex(1 << 16);
        let (server_write, client_read) = tokio::io::duplex(1 << 16);
        tokio::spawn(server.serve(StdioTransport::from_io(server_read, server_write, Limits::default())));
        let output: Box<dyn AsyncRead + Send + Unpin> = Box::new(client_read);
        let mut wire = Wire { input: Box::new(client_write), output: BufReader::new(output), next_id: 100 };
        let init = wire
            .request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
            .await;
        assert!(init.get("result").is_some(), "{init}");
        wire.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        // The reader handles messages in order: once ping is answered, the session is open.
        wire.request("ping", json!({})).await;
        wire
    }

    async fn send(&mut self, message: &Value) {
        self.input.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        self.input.flush().await.unwrap();
    }

    async fn line(&mut self) -> String {
        let mut line = String::new();
        let n = tokio::time::timeout(WAIT, self.output.read_line(&mut line)).await.expect("a line in time").unwrap();
        assert!(n > 0, "the server ended its output");
        line.trim_end().to_owned()
    }

    async fn recv(&mut self) -> Value {
        serde_json::from_str(&self.line().await).unwrap()
    }

    /// Sends a request and returns its response (asserting nothing else came first).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let response = self.recv().await;
        assert_eq!(response["id"], json!(id), "the next line answers the request: {response}");
        response
    }

    async fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params).await;
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    async fn error(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params).await;
        response.get("error").cloned().unwrap_or_else(|| panic!("{method} should fail: {response}"))
    }

    /// Asserts that no notification is waiting: a ping is answered first.
    async fn nothing_pending(&mut self) {
        self.request("ping", json!({})).await;
    }
}

fn schema() -> Value {
    json!({"type": "object"})
}

fn resource_server() -> ServerBuilder {
    let notes = mcpwire::proto::mcp_types::Resource {
        mime_type: Some("text/plain".into()),
        ..resource("test://notes", "notes")
    };
    let user = mcpwire::proto::mcp_types::ResourceTemplate {
        mime_type: Some("application/json".into()),
        ..resource_template("users://{org}/{id}", "user")
    };
    Server::builder()
        .resource_text(notes, "hello")
        .resource_blob(resource("test://logo", "logo"), "AAEC")
        .resource_template(user, |request| async move {
            let body = json!({"org": request.variables["org"], "id": request.variables["id"]});
            Ok(text_contents(request.uri, Some("application/json"), body.to_string()))
        })
        .complete_template_variable("users://{org}/{id}", "id", |request| async move {
            let org = request.context.get("org").cloned().unwrap_or_default();
            Ok(prefix_matches(&[format!("{org}-1"), format!("{org}-2"), "other".to_owned()], &request.value))
        })
}

#[tokio::test(start_paused = true)]
async fn resources_list_read_templates_and_not_found() {
    let server = resource_server().build().unwrap();
    let mut wire = Wire::open(&server).await;
    assert_eq!(
        wire.result("resources/list", json!({})).await,
        json!({"resources": [
            {"uri": "test://notes", "name": "notes", "mimeType": "text/plain"},
            {"uri": "test://logo", "name": "logo"}
        ]})
    );
    assert_eq!(
        wire.result("resources/templates/list", json!({})).await,
        json!({"resourceTemplates": [{"uriTemplate": "users://{org}/{id}", "name": "user", "mimeType": "application/json"}]})
    );
    assert_eq!(
        wire.result("resources/read", json!({"uri": "test://notes"})).await,
        json!({"contents": [{"uri": "test://notes", "mimeType": "text/plain", "text": "hello"}]})
    );
    assert_eq!(
        wire.result("resources/read", json!({"uri": "test://logo"})).await,
        json!({"contents": [{"uri": "test://logo", "blob": "AAEC"}]})
    );
    assert_eq!(
        wire.result("resources/read", json!({"uri": "users://acme/42"})).await,
        json!({"contents": [{"uri": "users://acme/42", "mimeType": "application/json", "text": "{\"id\":\"42\",\"org\":\"acme\"}"}]})
    );
    assert_eq!(
        wire.error("resources/read", json!({"uri": "users://acme/42/extra"})).await,
        json!({"code": -32002, "message": "Resource not found", "data": {"uri": "users://acme/42/extra"}})
    );
    assert_eq!(wire.error("resources/read", json!({})).await["code"], json!(-32602));
}

#[tokio::test(start_paused = true)]
async fn subscribe_then_updated_then_unsubscribe() {
    let server = resource_server().build().unwrap();
    let mut wire = Wire::open(&server).await;
    let mut other = Wire::open(&server).await;
    assert_eq!(wire.result("resources/subscribe", json!({"uri": "test://notes"})).await, json!({}));
    // Only the subscribed session hears of it.
    assert_eq!(server.resource_updated("test://notes"), 1);
    assert_eq!(
        wire.line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://notes"}}"#
    );
    other.nothing_pending().await;
    assert_eq!(server.resource_updated("test://logo"), 0);
    assert_eq!(wire.result("resources/unsubscribe", json!({"uri": "test://notes"})).await, json!({}));
    assert_eq!(server.resource_updated("test://notes"), 0);
    wire.nothing_pending().await;
}

fn prompt_server() -> ServerBuilder {
    let greet = prompt(
        "greet",
        "Greets someone",
        vec![prompt_argument("name", "Who", true), prompt_argument("style", "How", false)],
    );
    Server::builder()
        .prompt(greet, |request| async move {
            let name = &request.arguments["name"];
            let style = request.arguments.get("style").map_or("plain", String::as_str);
            let text =
                ContentBlock::Text(TextContent { text: format!("Hello {name} ({style})"), ..TextContent::default() });
            Ok(prompt_result(vec![prompt_message(Role::User, text)]))
        })
        .prompt(prompt("media", "Every kind of content", vec![]), |_| async {
            let image = ContentBlock::Image(ImageContent {
                data: "iVBO".into(),
                mime_type: "image/png".into(),
                ..ImageContent::default()
            });
            let audio = ContentBlock::Audio(AudioContent {
                data: "UklG".into(),
                mime_type: "audio/wav".into(),
                ..AudioContent::default()
            });
            let link: ResourceLink = serde_json::from_value(json!({"uri": "test://notes", "name": "notes"})).unwrap();
            let embedded = serde_json::from_value(
                json!({"type": "resource", "resource": {"uri": "test://notes", "text": "hello"}}),
            )
            .unwrap();
            Ok(prompt_result(vec![
                prompt_message(Role::User, image),
                prompt_message(Role::User, audio),
                prompt_message(Role::Assistant, ContentBlock::ResourceLink(link)),
                prompt_message(Role::User, embedded),
            ]))
        })
        .complete_prompt_argument("greet", "name", |request| async move {
            Ok(prefix_matches(&["Ada", "Alan", "Grace"], &request.value))
        })
}

#[tokio::test(start_paused = true)]
async fn prompts_list_get_and_invalid_params() {
    let server = prompt_server().build().unwrap();
    let mut wire = Wire::open(&server).await;
    assert_eq!(
        wire.result("prompts/list", json!({})).await,
        json!({"prompts": [
            {"name": "greet", "description": "Greets someone", "arguments": [
                {"name": "name", "description": "Who", "required": true},
                {"name": "style", "description": "How", "required": false}
            ]},
            {"name": "media", "description": "Every kind of content"}
        ]})
    );
    assert_eq!(
        wire.result("prompts/get", json!({"name": "greet", "arguments": {"name": "Ada", "style": "warm"}})).await,
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hello Ada (warm)"}}]})
    );
    assert_eq!(
        wire.result("prompts/get", json!({"name": "media"})).await,
        json!({"messages": [
            {"role": "user", "content": {"type": "image", "data": "iVBO", "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "audio", "data": "UklG", "mimeType": "audio/wav"}},
            {"role": "assistant", "content": {"type": "resource_link", "uri": "test://notes", "name": "notes"}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "test://notes", "text": "hello"}}}
        ]})
    );
    assert_eq!(
        wire.error("prompts/get", json!({"name": "greet", "arguments": {"style": "warm"}})).await,
        json!({"code": -32602, "message": "Missing required arguments for prompt greet: name"})
    );
    assert_eq!(
        wire.error("prompts/get", json!({"name": "nope"})).await,
        json!({"code": -32602, "message": "Prompt nope not found"})
    );
}

#[tokio::test(start_paused = true)]
async fn completion_of_prompt_arguments_and_template_variables() {
    let mut builder = prompt_server();
    // Both kinds on one server: add the resource side by hand.
    builder = builder.resource_template(resource_template("users://{org}/{id}", "user"), |r| async move {
        Ok(text_contents(r.uri, None, "x"))
    });
    builder = builder.complete_template_variable("users://{org}/{id}", "id", |request| async move {
        let org = request.context.get("org").cloned().unwrap_or_default();
        Ok(prefix_matches(&[format!("{org}-1"), format!("{org}-2"), "other".to_owned()], &request.value))
    });
    let server = builder.build().unwrap();
    let mut wire = Wire::open(&server).await;
    assert_eq!(
        wire.result(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "a"}})
        )
        .await,
        json!({"completion": {"values": ["Ada", "Alan"], "total": 2, "hasMore": false}})
    );
    assert_eq!(
        wire.result(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "users://{org}/{id}"}, "argument": {"name": "id", "value": "ac"}, "context": {"arguments": {"org": "acme"}}})
        )
        .await,
        json!({"completion": {"values": ["acme-1", "acme-2"], "total": 2, "hasMore": false}})
    );
    // An argument with no completer: no values.
    assert_eq!(
        wire.result(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "style", "value": ""}})
        )
        .await,
        json!({"completion": {"values": [], "total": 0, "hasMore": false}})
    );
    assert_eq!(
        wire.error(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}})
        )
        .await,
        json!({"code": -32602, "message": "Prompt nope not found"})
    );
}

#[tokio::test(start_paused = true)]
async fn capabilities_follow_what_is_registered() {
    let mut wire = Wire::open(&prompt_server().build().unwrap()).await;
    // A connection opened by hand to read the initialize result.
    let server = resource_server().build().unwrap();
    let (client_write, server_read) = tokio::io::duplex(1 << 16);
    let (server_write, client_read) = tokio::io::duplex(1 << 16);
    tokio::spawn(server.serve(StdioTransport::from_io(server_read, server_write, Limits::default())));
    let output: Box<dyn AsyncRead + Send + Unpin> = Box::new(client_read);
    let mut raw = Wire { input: Box::new(client_write), output: BufReader::new(output), next_id: 0 };
    let init = raw
        .result(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    assert_eq!(
        init["capabilities"],
        json!({"logging": {}, "completions": {}, "resources": {"subscribe": true, "listChanged": true}, "tools": {"listChanged": true}})
    );
    // No prompts on this server: prompts/list is not offered.
    raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(raw.error("prompts/list", json!({})).await, json!({"code": -32601, "message": "Method not found"}));
    // And the prompt server has no resources.
    assert_eq!(wire.error("resources/list", json!({})).await["code"], json!(-32601));
}

#[tokio::test(start_paused = true)]
async fn set_level_filters_log_messages() {
    let server = Server::builder().build().unwrap();
    let mut wire = Wire::open(&server).await;
    // Before any setLevel: everything goes.
    assert_eq!(server.log(LoggingLevel::Debug, Some("db"), json!("connected")), 1);
    assert_eq!(
        wire.line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","logger":"db","data":"connected"}}"#
    );
    assert_eq!(wire.result("logging/setLevel", json!({"level": "warning"})).await, json!({}));
    assert_eq!(server.log(LoggingLevel::Info, None, json!("quiet")), 0);
    assert_eq!(server.log(LoggingLevel::Warning, None, json!({"disk": "90%"})), 1);
    assert_eq!(server.log(LoggingLevel::Emergency, None, json!("fire")), 1);
    assert_eq!(
        wire.line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":{"disk":"90%"}}}"#
    );
    assert_eq!(
        wire.line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"emergency","data":"fire"}}"#
    );
    wire.nothing_pending().await;
    assert_eq!(wire.error("logging/setLevel", json!({"level": "loud"})).await["code"], json!(-32602));
}

#[tokio::test(start_paused = true)]
async fn every_list_pages_and_refuses_a_bad_cursor() {
    let mut builder = Server::builder().page_size(1);
    for i in 0..3 {
        builder = builder
            .tool(format!("t{i}"), "tool", schema(), |_, _| async { Ok(text_result("ok")) })
            .resource_text(resource(format!("test://r{i}"), format!("r{i}")), "x")
            .resource_template(resource_template(format!("test://t{i}/{{x}}"), format!("t{i}")), |r| async move {
                Ok(text_contents(r.uri, None, "x"))
            })
            .prompt(prompt(format!("p{i}"), "prompt", vec![]), |_| async { Ok(prompt_result(vec![])) });
    }
    let server = builder.build().unwrap();
    let mut wire = Wire::open(&server).await;
    for (method, key, field) in [
        ("tools/list", "tools", "name"),
        ("resources/list", "resources", "uri"),
        ("resources/templates/list", "resourceTemplates", "uriTemplate"),
        ("prompts/list", "prompts", "name"),
    ] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let page = wire.result(method, params).await;
            let items = page[key].as_array().unwrap();
            assert_eq!(items.len(), 1, "{method}: {page}");
            seen.push(items[0][field].as_str().unwrap().to_owned());
            match page.get("nextCursor") {
                Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
                None => break,
            }
        }
        assert_eq!(seen.len(), 3, "{method}: {seen:?}");
        let error = wire.error(method, json!({"cursor": "not-a-cursor"})).await;
        assert_eq!(error, json!({"code": -32602, "message": "Invalid cursor \"not-a-cursor\""}), "{method}");
    }
}

#[tokio::test(start_paused = true)]
async fn run_time_changes_send_list_changed() {
    let server = Server::builder()
        .tool("first", "the first", schema(), |_, _| async { Ok(text_result("1")) })
        .prompt(prompt("p", "prompt", vec![]), |_| async { Ok(prompt_result(vec![])) })
        .enable_resources()
        .build()
        .unwrap();
    let mut wire = Wire::open(&server).await;
    let tool = Tool::new("second", json!({"type": "object"}));
    server.add_tool(tool, |_, _| async { Ok(text_result("2")) }).unwrap();
    assert_eq!(wire.line().await, r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#);
    let names: Vec<Value> = wire.result("tools/list", json!({})).await["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, [json!("first"), json!("second")]);
    assert_eq!(
        wire.result("tools/call", json!({"name": "second"})).await,
        json!({"content": [{"type": "text", "text": "2"}]})
    );

    assert!(server.remove_tool("first"));
    assert_eq!(wire.line().await, r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#);
    assert!(!server.remove_tool("first"), "already gone: no notification");

    server.add_resource_text(resource("test://new", "new"), "fresh");
    assert_eq!(wire.line().await, r#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}"#);
    assert_eq!(
        wire.result("resources/read", json!({"uri": "test://new"})).await,
        json!({"contents": [{"uri": "test://new", "text": "fresh"}]})
    );

    assert!(server.remove_prompt("p"));
    assert_eq!(wire.line().await, r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#);
    assert_eq!(wire.result("prompts/list", json!({})).await, json!({"prompts": []}));
    wire.nothing_pending().await;
}

fn structured_tool(name: &str) -> Tool {
    Tool::new(
        name,
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}),
    )
    .title("Weather")
    .output_schema(json!({"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]}))
    .read_only(true)
    .icons([Icon { src: "https://example.com/w.png".into(), ..Icon::default() }])
    .task_support(TaskSupport::Optional)
}

#[tokio::test(start_paused = true)]
async fn tool_schemas_are_enforced_on_input_and_output() {
    let server = Server::builder()
        .tool_with(structured_tool("good"), |args, _| async move {
            let celsius = if args["city"] == "Oslo" { -3.5 } else { 21.0 };
            Ok(CallToolResult { structured_content: Some(json!({"celsius": celsius})), ..CallToolResult::default() })
        })
        .tool_with(structured_tool("bad"), |_, _| async {
            Ok(CallToolResult { structured_content: Some(json!({"celsius": "warm"})), ..CallToolResult::default() })
        })
        .tool_with(structured_tool("none"), |_, _| async { Ok(text_result("no structure")) })
        .build()
        .unwrap();
    let mut wire = Wire::open(&server).await;
    let listed = wire.result("tools/list", json!({})).await;
    assert_eq!(listed["tools"][0], serde_json::to_value(structured_tool("good")).unwrap());
    assert_eq!(listed["tools"][0]["execution"], json!({"taskSupport": "optional"}));

    // Valid structured output, mirrored into a text block.
    assert_eq!(
        wire.result("tools/call", json!({"name": "good", "arguments": {"city": "Oslo"}})).await,
        json!({"content": [{"type": "text", "text": "{\"celsius\":-3.5}"}], "structuredContent": {"celsius": -3.5}})
    );
    // Output that breaks the schema never leaves the server. The messages are the validator's:
    // the full one with feature `validation`, else the subset.
    let full = cfg!(feature = "validation");
    let (wrong_type, missing, extra) = if full {
        (
            "/celsius: \"warm\" is not of type \"number\"",
            "\"city\" is a required property",
            "Additional properties are not allowed ('extra' was unexpected)",
        )
    } else {
        (
            "/celsius: expected type \"number\", got string",
            "missing required property \"city\"",
            "property \"extra\" is not allowed",
        )
    };
    assert_eq!(
        wire.result("tools/call", json!({"name": "bad", "arguments": {"city": "Oslo"}})).await,
        json!({"content": [{"type": "text", "text": format!("Output of tool bad does not match its output schema: {wrong_type}")}], "isError": true})
    );
    assert_eq!(
        wire.result("tools/call", json!({"name": "none", "arguments": {"city": "Oslo"}})).await,
        json!({"content": [{"type": "text", "text": "Tool none has an output schema but returned no structured content"}], "isError": true})
    );
    // Arguments that break the input schema: a tool error, not a protocol error.
    assert_eq!(
        wire.result("tools/call", json!({"name": "good", "arguments": {}})).await,
        json!({"content": [{"type": "text", "text": format!("Invalid arguments for tool good: {missing}")}], "isError": true})
    );
    assert_eq!(
        wire.result("tools/call", json!({"name": "good", "arguments": {"city": "Oslo", "extra": 1}})).await,
        json!({"content": [{"type": "text", "text": format!("Invalid arguments for tool good: {extra}")}], "isError": true})
    );
}

#[test]
fn duplicates_are_refused_at_build() {
    let twice = || {
        Server::builder().resource_text(resource("test://a", "a"), "x").resource_text(resource("test://a", "b"), "y")
    };
    assert_eq!(twice().build().unwrap_err().to_string(), "resource \"test://a\" is registered twice");
}
