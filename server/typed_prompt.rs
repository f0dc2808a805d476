//! Typed prompts (feature `schema`): a prompt whose arguments are a Rust type. The prompt's
//! `arguments` are derived from the type's schema ([`crate::proto::json_schema`]): a field is
//! an argument, its doc comment the argument's description, its `title` (schemars'
//! `#[schemars(title = …)]`) the argument's title, and it is required unless it is an `Option`
//! or has a default. The handler receives the decoded type.
//!
//! Prompt arguments are strings on the wire (`prompts/get` `arguments` is a map of strings), so
//! every field must be string-valued: a `String`, an enum of unit variants, or an `Option` of
//! either; a type with another field (a number, a list, a nested struct) is refused when the
//! prompt is built, naming the field. The strings a client sends are checked against the
//! derived schema (an enum's values, a `regex`, a length), then decoded; a failure is -32602
//! naming the argument, and the handler is not called. Arguments are listed in the order the
//! schema holds them (alphabetical: the derived schema's properties are a sorted map).
//!
//! Not here: the untyped prompts and `prompts/get`'s routing ([`super::prompts`]).

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::prompts::{PromptEntry, PromptFn, PromptFuture, PromptRequest};
use super::{Server, ServerBuilder, ServerError};
use crate::proto::json_schema;
use crate::proto::jsonrpc::{ErrorCode, ErrorObject};
use crate::proto::mcp_types::{GetPromptResult, Prompt, PromptArgument};
use crate::proto::validate::Validator;

impl ServerBuilder {
    /// Adds a typed prompt: its arguments are the fields of `A` (see the module docs), and its
    /// handler receives an `A` with the request.
    ///
    /// A type with a field that is not string-valued, or whose schema does not compile, makes
    /// [`build`](Self::build) fail with [`ServerError::InvalidPromptArguments`].
    ///
    /// ```
    /// use mcpwire::proto::mcp_types::{ContentBlock, Role};
    /// use mcpwire::schemars::{self, JsonSchema};
    /// use mcpwire::server::{prompt_message, prompt_result, Server};
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// #[serde(rename_all = "lowercase")]
    /// enum Tone {
    ///     Kind,
    ///     Blunt,
    /// }
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct ReviewArgs {
    ///     /// The code to review.
    ///     code: String,
    ///     /// How to say it.
    ///     tone: Option<Tone>,
    /// }
    ///
    /// let server = Server::builder()
    ///     .derived_prompt("review", "Reviews code", |args: ReviewArgs, _request| async move {
    ///         let tone = match args.tone {
    ///             Some(Tone::Blunt) => "bluntly",
    ///             _ => "kindly",
    ///         };
    ///         let text = format!("Review this code {tone}:\n{}", args.code);
    ///         Ok(prompt_result(vec![prompt_message(Role::User, ContentBlock::text(text))]))
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let arguments = server.prompts()[0].arguments.clone().unwrap();
    /// assert_eq!(arguments[0].name, "code");
    /// assert_eq!(arguments[0].description.as_deref(), Some("The code to review."));
    /// assert_eq!((arguments[0].required, arguments[1].required), (Some(true), Some(false)));
    /// ```
    pub fn derived_prompt<A, F, Fut>(self, name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, PromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        self.derived_prompt_with(Prompt::new(name).description(description), handler)
    }

    /// As [`derived_prompt`](Self::derived_prompt), from a full definition (title, icons,
    /// `_meta` …) whose `arguments` are replaced by `A`'s.
    pub fn derived_prompt_with<A, F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, PromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        match typed(prompt, handler) {
            Ok(entry) => self.pending.prompts.push(entry),
            Err(e) => self.schema_errors.push(e),
        }
        self
    }
}

impl Server {
    /// As [`ServerBuilder::derived_prompt_with`], while serving: adds (or replaces) a typed
    /// prompt and sends `notifications/prompts/list_changed`.
    ///
    /// # Errors
    /// [`ServerError::InvalidPromptArguments`] when `A` cannot describe prompt arguments; nothing
    /// changes then.
    pub fn add_derived_prompt<A, F, Fut>(&self, prompt: Prompt, handler: F) -> Result<(), ServerError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, PromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        self.insert_prompt(typed(prompt, handler)?);
        Ok(())
    }
}

/// `prompt` with the arguments of `A` and its handler wrapped (arguments checked and decoded).
fn typed<A, F, Fut>(mut prompt: Prompt, handler: F) -> Result<PromptEntry, ServerError>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, PromptRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
{
    let refused = |reason: String| ServerError::InvalidPromptArguments { name: prompt.name.clone(), reason };
    let schema = json_schema::input_schema::<A>().map_err(|e| refused(e.to_string()))?;
    let arguments = prompt_arguments(&schema).map_err(&refused)?;
    if !cfg!(feature = "validation") {
        if let Some(reason) = super::typed::unenforced_reason(&schema) {
            return Err(refused(reason));
        }
    }
    let validator = Validator::new(&schema).map_err(|e| refused(e.to_string()))?;
    prompt.arguments = (!arguments.is_empty()).then_some(arguments);
    let name = prompt.name.clone();
    let handler = Arc::new(handler);
    let validator = Arc::new(validator);
    let get: PromptFn = Arc::new(move |request: PromptRequest| {
        let decoded = decode::<A>(&name, &validator, &request);
        let handler = handler.clone();
        Box::pin(async move { handler(decoded?, request).await }) as PromptFuture
    });
    Ok(PromptEntry { prompt, get })
}

/// The request's arguments as an `A`, or -32602 naming what is wrong with them.
fn decode<A: DeserializeOwned>(name: &str, validator: &Validator, request: &PromptRequest) -> Result<A, ErrorObject> {
    let value: Map<String, Value> =
        request.arguments.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
    let value = Value::Object(value);
    let invalid = |why: String| {
        ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid arguments for prompt {name}: {why}"))
    };
    validator.check(&value).map_err(|violations| invalid(violations.to_string()))?;
    serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
}

/// The prompt arguments a derived object schema declares, or why it cannot declare them.
fn prompt_arguments(schema: &Value) -> Result<Vec<PromptArgument>, String> {
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let defs = schema.get("$defs");
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    properties
        .iter()
        .map(|(name, property)| {
            if !string_valued(property, defs, 0) {
                return Err(format!(
                    "prompt arguments are strings, and `{name}` is not one (a String, an enum of unit \
                     variants, or an Option of either)"
                ));
            }
            let mut argument = PromptArgument::new(name.as_str()).required(required.contains(&name.as_str()));
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                argument = argument.description(description);
            }
            if let Some(title) = property.get("title").and_then(Value::as_str) {
                argument = argument.title(title);
            }
            Ok(argument)
        })
        .collect()
}

/// Whether every value `schema` accepts, but `null`, is a string: `type: string` (or
/// `[string, null]`), an `enum` or `const` of strings, a `$ref` to such a schema in `$defs`, or
/// an `anyOf`/`oneOf` of such schemas and `null`.
fn string_valued(schema: &Value, defs: Option<&Value>, depth: usize) -> bool {
    if depth > 16 {
        return false;
    }
    let strings_or_null =
        |values: &Vec<Value>| !values.is_empty() && values.iter().all(|v| v.is_string() || v.is_null());
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference.strip_prefix("#/$defs/").and_then(|name| defs?.get(name));
        return target.is_some_and(|t| string_valued(t, defs, depth + 1));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
            return branches.iter().any(|b| !is_null(b))
                && branches.iter().all(|b| is_null(b) || string_valued(b, defs, depth + 1));
        }
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return strings_or_null(values);
    }
    if let Some(value) = schema.get("const") {
        return value.is_string();
    }
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => {
            types.iter().any(|t| t == "string") && types.iter().all(|t| t == "string" || t == "null")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::proto::mcp_types::{ContentBlock, Role};
    use crate::server::{prompt_message, prompt_result};

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Language {
        English,
        French,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Translate {
        /// The text to translate.
        text: String,
        /// Into which language.
        #[schemars(title = "Target language")]
        into: Language,
        /// A tone, if any.
        tone: Option<String>,
    }

    fn request(arguments: &[(&str, &str)]) -> PromptRequest {
        PromptRequest {
            name: "translate".into(),
            arguments: arguments.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>(),
            meta: None,
            context: None,
        }
    }

    fn translate() -> PromptEntry {
        typed(Prompt::new("translate"), |args: Translate, _| async move {
            let text = format!("{:?}: {}", args.into, args.text);
            Ok(prompt_result(vec![prompt_message(Role::User, ContentBlock::text(text))]))
        })
        .unwrap()
    }

    #[test]
    fn arguments_come_from_the_fields_with_their_docs_titles_and_optionality() {
        let entry = translate();
        assert_eq!(
            serde_json::to_value(&entry.prompt.arguments).unwrap(),
            json!([
                {"name": "into", "title": "Target language", "description": "Into which language.", "required": true},
                {"name": "text", "description": "The text to translate.", "required": true},
                {"name": "tone", "description": "A tone, if any.", "required": false}
            ])
        );
    }

    #[tokio::test]
    async fn the_handler_gets_the_type_and_bad_strings_are_invalid_params_naming_the_argument() {
        let entry = translate();
        let result = (entry.get)(request(&[("text", "hello"), ("into", "french")])).await.unwrap();
        assert_eq!(serde_json::to_value(&result.messages[0].content).unwrap()["text"], "French: hello");
        let error = (entry.get)(request(&[("text", "hello"), ("into", "klingon")])).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("prompt translate") && error.message.contains("/into"), "{}", error.message);
    }

    #[test]
    fn a_field_that_is_no_string_is_refused_naming_it() {
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Paged {
            query: String,
            page: u32,
        }
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Nested {
            inner: Translate,
        }
        for refused in [
            typed(Prompt::new("p"), |_: Paged, _| async move { Ok(prompt_result(Vec::new())) }).err(),
            typed(Prompt::new("p"), |_: Nested, _| async move { Ok(prompt_result(Vec::new())) }).err(),
        ] {
            let Some(ServerError::InvalidPromptArguments { name, reason }) = refused else { panic!("refused") };
            assert_eq!(name, "p");
            assert!(reason.contains("`page`") || reason.contains("`inner`"), "{reason}");
        }
        let built = Server::builder()
            .derived_prompt("p", "Pages", |_: Paged, _| async move { Ok(prompt_result(Vec::new())) })
            .build();
        assert!(matches!(built, Err(ServerError::InvalidPromptArguments { .. })), "{:?}", built.err());
    }

    #[test]
    fn string_valued_schemas() {
        let defs = json!({"Mode": {"type": "string", "enum": ["a", "b"]}, "Obj": {"type": "object"}});
        for (schema, expected) in [
            (json!({"type": "string"}), true),
            (json!({"type": ["string", "null"]}), true),
            (json!({"enum": ["a", null]}), true),
            (json!({"const": "a"}), true),
            (json!({"$ref": "#/$defs/Mode"}), true),
            (json!({"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]}), true),
            (json!({"type": "integer"}), false),
            (json!({"type": "null"}), false),
            (json!({"$ref": "#/$defs/Obj"}), false),
            (json!({"$ref": "#/$defs/Missing"}), false),
            (json!({"anyOf": [{"type": "null"}]}), false),
            (json!({"enum": [1, "a"]}), false),
        ] {
            assert_eq!(string_valued(&schema, Some(&defs), 0), expected, "{schema}");
        }
    }

    #[test]
    fn a_prompt_added_while_serving_is_listed() {
        let server = Server::builder().build().unwrap();
        server
            .add_derived_prompt(Prompt::new("translate").title("Translate"), |args: Translate, _| async move {
                Ok(prompt_result(vec![prompt_message(Role::User, ContentBlock::text(args.text))]))
            })
            .unwrap();
        let listed = &server.prompts()[0];
        assert_eq!((listed.title.as_deref(), listed.arguments.as_ref().map(Vec::len)), (Some("Translate"), Some(3)));
    }
}
