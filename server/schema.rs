//! The server's checks of a tool call against the tool's schemas: the arguments against its
//! `inputSchema` before the handler runs, `structuredContent` against its `outputSchema` before
//! the result leaves, and the text mirror of `structuredContent`. Each tool's schemas are
//! compiled once, when it is registered (`ToolSchemas`); a schema that does not compile is a
//! [`ServerError::InvalidSchema`] then, never a failure at call time.
//!
//! The validator is [`crate::proto::validate`]'s: with feature `validation` (which `schema`
//! brings) full JSON Schema 2020-12, formats included; without it the built-in subset, no
//! dependency. A typed tool's result (`Json<T>`, feature `schema`) is checked against the
//! schema derived from `T` only in debug builds: a mismatch there is the tool author's bug
//! (serde and schemars attributes that disagree), reported as a tool error naming the path.
//!
//! Not here: the validator itself, the wire handling of `tools/call` (the dispatch).

use serde_json::{Map, Value};

use super::ServerError;
use crate::proto::mcp_types::{CallToolResult, ContentBlock, TextContent, Tool};
use crate::proto::validate::{has_type, Validator};
pub use crate::proto::validate::{validate, SchemaError};

/// A tool's schemas, compiled.
#[derive(Debug)]
pub(crate) struct ToolSchemas {
    input: Validator,
    /// `None` when the tool has no output schema, or when its output is typed and this is a
    /// release build.
    output: Option<Validator>,
}

impl ToolSchemas {
    /// Compiles `tool`'s schemas; `typed_output` when its results are made from a type whose
    /// schema is the output schema (checked in debug builds only).
    ///
    /// # Errors
    /// [`ServerError::InvalidSchema`] naming the tool and the schema that does not compile.
    pub(crate) fn compile(tool: &Tool, typed_output: bool) -> Result<ToolSchemas, ServerError> {
        let invalid = |which: &str, e: crate::proto::validate::InvalidSchema| ServerError::InvalidSchema {
            name: tool.name.clone(),
            reason: format!("its {which} schema: {e}"),
        };
        let input = Validator::new(&tool.input_schema).map_err(|e| invalid("input", e))?;
        let output = match &tool.output_schema {
            Some(schema) if !typed_output || cfg!(debug_assertions) => {
                Some(Validator::new(schema).map_err(|e| invalid("output", e))?)
            }
            _ => None,
        };
        Ok(ToolSchemas { input, output })
    }
}

/// The fast path for the usual tool schema, a flat object: `type: "object"`, `properties`
/// whose members give at most a `type` (and annotations), `required`, and a boolean
/// `additionalProperties`. `Some(true)`: `args` fit. `None` when the schema uses anything else
/// and `Some(false)` when `args` do not fit: both go to the full validator, which alone writes
/// the error messages. Walks each schema object's members once instead of looking up every
/// keyword the validator knows (a tenth of a stdio echo server's CPU at 16 B).
fn flat_object_schema_accepts(schema: &Value, args: &Map<String, Value>) -> Option<bool> {
    let (mut properties, mut required, mut closed) = (None, None, false);
    for (keyword, value) in schema.as_object()? {
        match (keyword.as_str(), value) {
            ("type", Value::String(t)) if t == "object" => {}
            ("properties", Value::Object(p)) => properties = Some(p),
            ("required", Value::Array(r)) => required = Some(r),
            ("additionalProperties", Value::Bool(allowed)) => closed = !allowed,
            // Draft 4 alone counts 1.0 as no integer.
            ("$schema", Value::String(dialect)) if !dialect.contains("draft-04") => {}
            ("description" | "title", _) => {}
            _ => return None,
        }
    }
    for name in required.into_iter().flatten() {
        if !args.contains_key(name.as_str()?) {
            return Some(false);
        }
    }
    for (name, value) in args {
        let Some(property) = properties.and_then(|p| p.get(name)) else {
            if closed {
                return Some(false);
            }
            continue;
        };
        for (keyword, constraint) in property.as_object()? {
            match (keyword.as_str(), constraint) {
                ("type", Value::String(ty)) => {
                    if !has_type(value, ty) {
                        return Some(false);
                    }
                }
                ("description" | "title" | "default" | "examples", _) => {}
                _ => return None,
            }
        }
    }
    Some(true)
}

/// Checks a tool call's arguments against the tool's input schema, handing them back when they
/// fit (they are moved into a `Value` for the check, never copied).
///
/// # Errors
/// The tool-error result (`isError: true`) to answer with, naming the JSON pointer of each
/// violation: bad arguments are something the model can read and correct (2025-11-25
/// `server/tools`, "Error Handling": input validation errors are tool execution errors).
pub(crate) fn check_arguments(
    tool: &Tool,
    schemas: &ToolSchemas,
    args: Map<String, Value>,
) -> Result<Map<String, Value>, Box<CallToolResult>> {
    // The empty schema and the usual flat one are decided in one walk.
    if flat_object_schema_accepts(&tool.input_schema, &args) == Some(true) {
        return Ok(args);
    }
    let args = Value::Object(args);
    match schemas.input.check(&args) {
        Ok(()) => match args {
            Value::Object(args) => Ok(args),
            _ => unreachable!("wrapped as an object above"),
        },
        Err(e) => Err(Box::new(super::error_result(format!("Invalid arguments for tool {}: {e}", tool.name)))),
    }
}

/// Checks a tool's result against its output schema before it leaves the server, and mirrors
/// `structuredContent` into a text block when the handler gave no content (for clients that
/// only read `content`, as the spec advises).
///
/// A result that is already a tool error passes untouched. A tool with an output schema whose
/// result has no `structuredContent`, or one that does not match, becomes a tool error naming
/// the path of each violation: the client never sees output that breaks the declared schema.
pub(crate) fn check_output(tool: &Tool, schemas: &ToolSchemas, mut result: CallToolResult) -> CallToolResult {
    if result.is_error == Some(true) {
        return result;
    }
    if tool.output_schema.is_some() {
        let Some(structured) = &result.structured_content else {
            return super::error_result(format!(
                "Tool {} has an output schema but returned no structured content",
                tool.name
            ));
        };
        if let Some(Err(e)) = schemas.output.as_ref().map(|v| v.check(structured)) {
            return super::error_result(format!("Output of tool {} does not match its output schema: {e}", tool.name));
        }
    }
    if result.content.is_empty() {
        if let Some(structured) = &result.structured_content {
            result
                .content
                .push(ContentBlock::Text(TextContent { text: structured.to_string(), ..TextContent::default() }));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_flat_object_fast_path_agrees_with_the_validator() {
        let schemas = [
            json!({"type": "object", "properties": {"text": {"type": "string", "description": "d"}}, "required": ["text"]}),
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "integer"}}, "additionalProperties": false}),
            json!({"properties": {"n": {"type": "null"}, "o": {"type": "object"}, "l": {"type": "array"}, "f": {"type": "boolean"}}}),
            json!({"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "t"}),
            json!({"type": "object", "properties": {"s": {"type": "string", "minLength": 2}}}),
            json!({"type": "object", "properties": {"s": {"type": ["string", "null"]}}}),
            json!({"type": "object", "properties": {"s": true}, "required": ["s", 3]}),
            json!({"type": "object", "$defs": {}, "properties": {"s": {"$ref": "#/$defs/x"}}}),
        ];
        let args = [
            json!({}),
            json!({"text": "hi"}),
            json!({"text": 1}),
            json!({"a": 1.5, "b": 2}),
            json!({"a": 1, "b": 2.5}),
            json!({"a": 1, "c": 1}),
            json!({"n": null, "o": {}, "l": [], "f": true}),
            json!({"n": 0}),
            json!({"s": "x"}),
            json!({"s": null}),
            json!({"s": "long enough"}),
            json!({"extra": [1, 2]}),
        ];
        let mut fast = 0;
        for schema in &schemas {
            for arg in &args {
                let arg = arg.as_object().unwrap();
                let value = Value::Object(arg.clone());
                // What the server runs; the built-in subset for the two schemas the full
                // validator refuses to compile (a number in `required`, a dangling `$ref`).
                let full = match Validator::new(schema) {
                    Ok(validator) => validator.is_valid(&value),
                    Err(_) => validate(schema, &value).is_ok(),
                };
                if let Some(accepted) = flat_object_schema_accepts(schema, arg) {
                    fast += 1;
                    assert_eq!(accepted, full, "{schema} with {arg:?}");
                }
            }
        }
        // The first four schemas always take it; the others whenever their unusual members
        // are not reached.
        assert!(fast > 4 * args.len(), "{fast} fast decisions");
    }

    #[test]
    fn checked_arguments_come_back_unchanged() {
        let tool =
            Tool::new("t", json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}));
        let schemas = ToolSchemas::compile(&tool, false).unwrap();
        let args = json!({"text": "hi", "more": [1, 2]}).as_object().unwrap().clone();
        assert_eq!(check_arguments(&tool, &schemas, args.clone()).unwrap(), args);
        let bad = json!({"text": 1}).as_object().unwrap().clone();
        let result = check_arguments(&tool, &schemas, bad).unwrap_err();
        assert_eq!(result.is_error, Some(true));
        let ContentBlock::Text(text) = &result.content[0] else { panic!("a text block") };
        let expected = if cfg!(feature = "validation") {
            "Invalid arguments for tool t: /text: 1 is not of type \"string\""
        } else {
            "Invalid arguments for tool t: /text: expected type \"string\", got number"
        };
        assert_eq!(text.text, expected);
    }

    #[test]
    fn a_schema_that_does_not_compile_names_the_tool() {
        let tool = Tool::new("t", json!({"type": "object"})).output_schema(json!(7));
        let Err(ServerError::InvalidSchema { name, reason }) = ToolSchemas::compile(&tool, false) else {
            panic!("refused")
        };
        assert_eq!(name, "t");
        assert!(reason.starts_with("its output schema: invalid JSON Schema: "), "{reason}");
    }

    #[cfg(feature = "validation")]
    #[test]
    fn full_validation_checks_what_the_subset_skipped_and_names_every_path() {
        let tool = Tool::new(
            "t",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z]+$"},
                    "mail": {"type": "string", "format": "email"},
                    "n": {"type": "integer", "minimum": 1, "maximum": 9}
                },
                "if": {"required": ["n"]}, "then": {"required": ["name"]},
                "additionalProperties": false
            }),
        );
        let schemas = ToolSchemas::compile(&tool, false).unwrap();
        let check = |v: Value| check_arguments(&tool, &schemas, v.as_object().unwrap().clone());
        assert!(check(json!({"name": "ada", "mail": "ada@example.com", "n": 3})).is_ok());
        let result = check(json!({"name": "Ada!", "mail": "nope", "n": 10, "x": 1})).unwrap_err();
        let ContentBlock::Text(text) = &result.content[0] else { panic!("a text block") };
        for part in ["/name: \"Ada!\" does not match", "/mail: \"nope\" is not a \"email\"", "/n: 10 is greater than"] {
            assert!(text.text.contains(part), "{} has {part}", text.text);
        }
        assert!(text.text.contains("'x' was unexpected"), "{}", text.text);
        let result = check(json!({"n": 3})).unwrap_err();
        let ContentBlock::Text(text) = &result.content[0] else { panic!("a text block") };
        assert!(text.text.contains("\"name\" is a required property"), "if/then: {}", text.text);
    }

    #[cfg(feature = "validation")]
    #[test]
    fn remote_refs_and_unknown_dialects_are_refused_when_compiled() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}),
            json!({"$schema": "https://example.com/my-dialect", "type": "object"}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
            json!({"type": "object", "properties": {"a": {"type": "strin"}}}),
        ] {
            let tool = Tool::new("t", schema.clone());
            assert!(matches!(ToolSchemas::compile(&tool, false), Err(ServerError::InvalidSchema { .. })), "{schema}");
        }
    }

    #[test]
    fn a_long_value_is_not_copied_into_the_message() {
        let tool = Tool::new("t", json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 10}}}));
        let schemas = ToolSchemas::compile(&tool, false).unwrap();
        let args = json!({"s": "x".repeat(1 << 20)}).as_object().unwrap().clone();
        let result = check_arguments(&tool, &schemas, args).unwrap_err();
        let ContentBlock::Text(text) = &result.content[0] else { panic!("a text block") };
        assert!(text.text.len() < 200, "{}", &text.text[..200]);
        assert!(text.text.contains("/s: "), "{}", text.text);
    }
}
