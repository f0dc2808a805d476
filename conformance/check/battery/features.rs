//! The battery's feature checks: the listed tools' names, schemas and definitions, the calls
//! a run was told to make, resources and their templates, prompts and completion, and
//! logging. Each reads what the server advertised and skips what it did not; none of them
//! calls a tool unless the run was told to.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use super::super::schema;
use super::super::wire::{excerpt, Wire};
use super::{advertised, Run};

impl Run<'_> {
    /// Names, schemas and definitions of the listed tools.
    pub(super) fn tool_checks(&mut self, tools: &[Value]) {
        if tools.is_empty() {
            for id in [
                "tools.name-length",
                "tools.name-charset",
                "tools.name-unique",
                "tools.input-schema-object",
                "tools.output-schema-object",
                "tools.schema-valid",
                "tools.schema-refs",
                "tools.definitions",
            ] {
                self.skip(id, "no tools listed");
            }
            return;
        }
        let mut names = HashSet::new();
        let mut any_output = false;
        for tool in tools {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            let shown = json!({"name": name});
            let length = name.chars().count();
            if (1..=128).contains(&length) {
                self.pass("tools.name-length");
            } else {
                self.fail(
                    "tools.name-length",
                    Some(&shown),
                    Some(format!("{length} characters")),
                    format!("tool name {:?} is {length} characters long", excerpt(name)),
                );
            }
            let bad: Vec<char> =
                name.chars().filter(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))).collect();
            if bad.is_empty() {
                self.pass("tools.name-charset");
            } else {
                self.fail(
                    "tools.name-charset",
                    Some(&shown),
                    Some(format!("{bad:?}")),
                    format!("tool name {:?} has characters outside A-Z a-z 0-9 _ - .: {bad:?}", excerpt(name)),
                );
            }
            if names.insert(name.to_owned()) {
                self.pass("tools.name-unique");
            } else {
                self.fail("tools.name-unique", Some(&shown), None, format!("two tools are named {name:?}"));
            }
            // The definition without its schemas, against the revision's Tool.
            let mut bare = tool.clone();
            if let Some(t) = bare.as_object_mut() {
                t.insert("inputSchema".into(), json!({"type": "object"}));
                if t.contains_key("outputSchema") {
                    t.insert("outputSchema".into(), json!({"type": "object"}));
                }
            }
            if self.spec.has(self.era.as_str()).is_ok() {
                match self.spec.validate_def(self.era.as_str(), "Tool", &bare) {
                    None => self.pass("tools.definitions"),
                    Some(why) => self.fail(
                        "tools.definitions",
                        Some(&shown),
                        Some(excerpt(&bare.to_string())),
                        format!("tool {name:?} is not a valid Tool: {why}"),
                    ),
                }
            } else {
                let why = self.spec.has(self.era.as_str()).err().unwrap_or_default();
                self.skip("tools.definitions", why);
            }
            for (member, check) in
                [("inputSchema", "tools.input-schema-object"), ("outputSchema", "tools.output-schema-object")]
            {
                let Some(schema) = tool.get(member) else {
                    if member == "inputSchema" {
                        self.fail(check, Some(&shown), None, format!("tool {name:?} has no inputSchema"));
                    }
                    continue;
                };
                any_output |= member == "outputSchema";
                if schema.is_object() && schema.get("type") == Some(&json!("object")) {
                    self.pass(check);
                } else {
                    self.fail(
                        check,
                        Some(&shown),
                        Some(excerpt(&schema.to_string())),
                        format!(
                            "the {member} of {name:?} must be a JSON Schema object with type \"object\" at its root"
                        ),
                    );
                }
                if !schema.is_object() {
                    continue;
                }
                match schema::meta_errors(schema) {
                    None => self.pass("tools.schema-valid"),
                    Some(why) => self.fail(
                        "tools.schema-valid",
                        Some(&shown),
                        Some(excerpt(&schema.to_string())),
                        format!("the {member} of {name:?} is not valid under its dialect: {why}"),
                    ),
                }
                let bad = schema::unresolved_refs(schema);
                if bad.is_empty() {
                    self.pass("tools.schema-refs");
                } else {
                    self.fail(
                        "tools.schema-refs",
                        Some(&shown),
                        Some(bad.join(", ")),
                        format!("the {member} of {name:?} has $refs that resolve to nothing here"),
                    );
                }
            }
        }
        if !any_output {
            self.skip("tools.output-schema-object", "no tool has an outputSchema");
        }
    }

    /// `--call` tools; their results against the schema and their outputSchema.
    pub(super) async fn calls(&mut self, wire: &mut Wire, tools: &[Value]) {
        let mut calls = self.options.calls.clone();
        if self.options.call_readonly {
            for tool in tools.iter().filter(|t| t.pointer("/annotations/readOnlyHint") == Some(&json!(true))) {
                if let (Some(name), Some(schema)) = (tool.get("name").and_then(Value::as_str), tool.get("inputSchema"))
                {
                    if !calls.iter().any(|(n, _)| n == name) {
                        calls.push((name.to_owned(), arguments_for(schema)));
                    }
                }
            }
        }
        if calls.is_empty() {
            self.skip(
                "tools.call-result",
                "no --call given, and no read-only tool under --call-readonly (the checker calls no tool unless told)",
            );
            return;
        }
        for (name, arguments) in calls {
            let call = self.message("tools/call", json!({"name": name, "arguments": arguments}));
            let answer = wire.request(&call, self.timeout()).await;
            let Some(result) = answer.reply.result().cloned() else {
                self.fail(
                    "tools.call-result",
                    Some(&call),
                    Some(answer.reply.describe()),
                    format!("--call {name} must be answered with a result"),
                );
                continue;
            };
            self.check_schema("CallToolResult", &call, &result);
            let output = tools.iter().find(|t| t.get("name") == Some(&json!(name))).and_then(|t| t.get("outputSchema"));
            match (output, result.get("structuredContent"), result.get("isError") == Some(&json!(true))) {
                (Some(_), _, true) => self.pass("tools.call-result"),
                (Some(_), None, false) => self.fail(
                    "tools.call-result",
                    Some(&call),
                    Some(excerpt(&result.to_string())),
                    format!("{name} has an outputSchema but its result has no structuredContent"),
                ),
                (Some(schema), Some(content), false) => match schema::validate(schema, content) {
                    None => self.pass("tools.call-result"),
                    Some(why) => self.fail(
                        "tools.call-result",
                        Some(&call),
                        Some(excerpt(&content.to_string())),
                        format!("structuredContent does not match the outputSchema of {name}: {why}"),
                    ),
                },
                (None, _, _) => self.pass("tools.call-result"),
            }
        }
    }

    pub(super) async fn resources(&mut self, wire: &mut Wire, capabilities: &Value) {
        if !advertised(capabilities, "resources") {
            self.skip("resources.read", "resources not advertised");
            self.skip("resources.templates", "resources not advertised");
            return;
        }
        let list = self.message("resources/list", json!({}));
        let answer = wire.request(&list, self.timeout()).await;
        let first = answer
            .reply
            .result()
            .and_then(|r| r.get("resources"))
            .and_then(Value::as_array)
            .and_then(|r| r.first())
            .cloned();
        match first.as_ref().and_then(|r| r.get("uri")).and_then(Value::as_str) {
            None => self.skip("resources.read", "no resource listed"),
            Some(uri) => {
                let read = self.message("resources/read", json!({"uri": uri}));
                let answer = wire.request(&read, self.timeout()).await;
                match answer.reply.result().cloned() {
                    Some(result) if result.get("contents").and_then(Value::as_array).is_some_and(|c| !c.is_empty()) => {
                        self.pass("resources.read");
                        self.check_schema("ReadResourceResult", &read, &result);
                    }
                    _ => self.fail(
                        "resources.read",
                        Some(&read),
                        Some(answer.reply.describe()),
                        format!("reading {uri}, which resources/list gave, must answer with its contents"),
                    ),
                }
            }
        }
        let templates = self.list_all(wire, "resources/templates/list", "resourceTemplates").await;
        match templates {
            None => {}
            Some(templates) => {
                for t in &templates {
                    let template = t.get("uriTemplate").and_then(Value::as_str).unwrap_or_default();
                    if let Some(why) = template_problem(template) {
                        self.fail(
                            "resources.templates",
                            Some(&json!({"method": "resources/templates/list"})),
                            Some(excerpt(&t.to_string())),
                            format!("uriTemplate {template:?}: {why}"),
                        );
                    }
                }
                self.pass("resources.templates");
            }
        }
    }

    pub(super) async fn prompts_and_completion(&mut self, wire: &mut Wire, capabilities: &Value) {
        let mut prompt_for_completion = None;
        if !advertised(capabilities, "prompts") {
            self.skip("prompts.get", "prompts not advertised");
        } else {
            let list = self.message("prompts/list", json!({}));
            let answer = wire.request(&list, self.timeout()).await;
            let prompts = answer
                .reply
                .result()
                .and_then(|r| r.get("prompts"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            // The first prompt with an argument is the one completion is asked about.
            prompt_for_completion = prompts.iter().find_map(|p| {
                let argument = p.pointer("/arguments/0/name")?.as_str()?;
                Some((p.get("name")?.clone(), argument.to_owned()))
            });
            match prompts.first() {
                None => self.skip("prompts.get", "no prompt listed"),
                Some(prompt) => {
                    let name = prompt.get("name").cloned().unwrap_or(Value::Null);
                    let mut arguments = Map::new();
                    for a in prompt.get("arguments").and_then(Value::as_array).into_iter().flatten() {
                        if let Some(arg) = a.get("name").and_then(Value::as_str) {
                            if a.get("required") == Some(&json!(true)) {
                                arguments.insert(arg.to_owned(), json!("mcp-conformance"));
                            }
                        }
                    }
                    let get = self.message("prompts/get", json!({"name": name, "arguments": arguments}));
                    let answer = wire.request(&get, self.timeout()).await;
                    match answer.reply.result().cloned() {
                        Some(result) if result.get("messages").is_some_and(Value::is_array) => {
                            self.pass("prompts.get");
                            self.check_schema("GetPromptResult", &get, &result);
                        }
                        _ => self.fail(
                            "prompts.get",
                            Some(&get),
                            Some(answer.reply.describe()),
                            "a listed prompt, with its required arguments, must be answered with its messages",
                        ),
                    }
                }
            }
        }
        if !advertised(capabilities, "completions") {
            self.skip("completion.complete", "completions not advertised");
            return;
        }
        let Some((prompt, argument)) = prompt_for_completion else {
            self.skip("completion.complete", "no prompt with an argument to complete");
            return;
        };
        let complete = self.message(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": prompt}, "argument": {"name": argument, "value": ""}}),
        );
        let answer = wire.request(&complete, self.timeout()).await;
        match answer.reply.result().cloned() {
            Some(result) => {
                let values = result.pointer("/completion/values").and_then(Value::as_array);
                match values {
                    Some(v) if v.len() <= 100 => self.pass("completion.complete"),
                    _ => self.fail(
                        "completion.complete",
                        Some(&complete),
                        Some(excerpt(&result.to_string())),
                        "completion.values must be an array of at most 100 values",
                    ),
                }
                self.check_schema("CompleteResult", &complete, &result);
            }
            None => self.fail(
                "completion.complete",
                Some(&complete),
                Some(answer.reply.describe()),
                "completions are advertised, so completion/complete must answer",
            ),
        }
    }

    pub(super) async fn logging(&mut self, wire: &mut Wire, capabilities: &Value) {
        if !advertised(capabilities, "logging") {
            self.skip("logging.set-level", "logging not advertised");
            return;
        }
        let set = self.message("logging/setLevel", json!({"level": "error"}));
        let answer = wire.request(&set, self.timeout()).await;
        match answer.reply.result() {
            Some(Value::Object(_)) => self.pass("logging.set-level"),
            _ => self.fail(
                "logging.set-level",
                Some(&set),
                Some(answer.reply.describe()),
                "logging is advertised, so logging/setLevel must answer with an empty result",
            ),
        }
    }
}

/// Arguments that satisfy `schema`'s required properties, made up from their types (the first
/// `enum` value, the `default`, else a plain value of the type).
fn arguments_for(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let property = schema
            .pointer(&format!("/properties/{}", name.replace('~', "~0").replace('/', "~1")))
            .cloned()
            .unwrap_or(json!({}));
        arguments.insert(name.to_owned(), value_for(&property));
    }
    Value::Object(arguments)
}

fn value_for(schema: &Value) -> Value {
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(value) = schema.get("const").or_else(|| schema.get("default")) {
        return value.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::Array(types)) => types.iter().find(|t| *t != "null").and_then(Value::as_str).unwrap_or("string"),
        Some(Value::String(t)) => t.as_str(),
        _ => "string",
    };
    match ty {
        "integer" => json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        "number" => json!(schema.get("minimum").and_then(Value::as_f64).unwrap_or(1.0)),
        "boolean" => json!(true),
        "array" => json!([]),
        "object" => arguments_for(schema),
        "null" => Value::Null,
        _ => json!("mcp-conformance"),
    }
}

/// Why `template` is not a well-formed RFC 6570 URI template, if it is not.
fn template_problem(template: &str) -> Option<String> {
    if template.is_empty() {
        return Some("empty".into());
    }
    let mut open = false;
    for c in template.chars() {
        match c {
            '{' if open => return Some("a { inside an expression".into()),
            '{' => open = true,
            '}' if !open => return Some("a } with no {".into()),
            '}' => open = false,
            c if c.is_whitespace() => return Some("whitespace".into()),
            _ => {}
        }
    }
    open.then(|| "an expression is not closed".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_templates() {
        assert_eq!(template_problem("file:///{path}"), None);
        assert_eq!(template_problem("demo://r/{id}/x{?q,r}"), None);
        assert!(template_problem("demo://r/{id").is_some());
        assert!(template_problem("demo://r/id}").is_some());
        assert!(template_problem("").is_some());
    }

    #[test]
    fn arguments_from_a_schema() {
        let schema = json!({"type": "object", "required": ["a", "b", "c", "d"], "properties": {
            "a": {"type": "string"}, "b": {"type": "integer", "minimum": 3}, "c": {"enum": ["x", "y"]},
            "d": {"type": "object", "required": ["e"], "properties": {"e": {"type": ["null", "boolean"]}}},
            "f": {"type": "string"}}});
        assert_eq!(arguments_for(&schema), json!({"a": "mcp-conformance", "b": 3, "c": "x", "d": {"e": true}}));
    }
}
