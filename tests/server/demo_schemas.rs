//! The demo servers' tools on the wire (the `echo_server` and `agent` examples over stdio, listed
//! by mcpwire's client) against a copy of their `tools/list` taken before their tools became
//! typed (`tests/fixtures/demo_tools/`, written by the hand-written schemas of a72f950): the
//! derived schemas say what the hand-written ones said.
//!
//! What derivation adds without changing any meaning is removed before comparing:
//! - `$schema` at the root: JSON Schema 2020-12, the dialect MCP 2025-11-25 reads a schema
//!   without `$schema` in (the keywords of these schemas mean the same in draft-07);
//! - `title` at the root: an annotation, the Rust type's name as schemars writes it.
//!
//! The one difference of meaning is asserted as such: the agent's `steps` (a `usize`) gained
//! `minimum: 0` (and the annotation `format: uint`): a negative count is now refused by the
//! schema, which no run ever produced.

use crate::examples;
use crate::support;

use mcpwire::client::{Client, ClientOptions};
use mcpwire::transport::stdio::ChildCommand;
use serde_json::Value;

/// `tools/list` as the example `name` answers it now, each schema without the `$schema` derivation
/// adds (the dialect a schema without one is read in anyway). No root `title`: the Rust type's
/// name stays in the server.
async fn listed(name: &str) -> Value {
    let path = examples::example_path(name);
    let client = Client::spawn(ChildCommand::new(path.to_str().unwrap()), ClientOptions::default()).await.unwrap();
    let tools = client.list_tools().await.unwrap();
    let _ = client.close().await;
    let mut listed = serde_json::json!({ "tools": tools });
    for tool in listed["tools"].as_array_mut().unwrap() {
        for key in ["inputSchema", "outputSchema"] {
            if let Some(schema) = tool.get_mut(key).and_then(Value::as_object_mut) {
                assert_eq!(
                    schema.remove("$schema"),
                    Some(Value::from("https://json-schema.org/draft/2020-12/schema")),
                    "{key} names its dialect"
                );
                assert!(!schema.contains_key("title"), "{key} has no title: {schema:?}");
            }
        }
    }
    listed
}

fn before(name: &str) -> Value {
    let path = support::repo_path(&format!("tests/fixtures/demo_tools/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_echo_servers_schemas_on_the_wire_are_unchanged() {
    let now = listed("echo_server").await;
    assert_eq!(now, before("echo_server"), "{}", serde_json::to_string_pretty(&now).unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_schemas_on_the_wire_differ_only_in_the_bound_of_steps() {
    let mut now = listed("agent").await;
    let steps = &mut now["tools"][0]["outputSchema"]["properties"]["steps"];
    let steps = steps.as_object_mut().unwrap();
    assert_eq!(steps.remove("minimum"), Some(Value::from(0)), "usize: no negative count");
    assert_eq!(steps.remove("format"), Some(Value::from("uint")));
    assert_eq!(now, before("agent"), "{}", serde_json::to_string_pretty(&now).unwrap());
}
