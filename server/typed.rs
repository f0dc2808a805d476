//! Typed tools (feature `schema`): a tool whose arguments are a Rust type and whose result is
//! content or a Rust type, with the `inputSchema` and `outputSchema` derived from those types
//! ([`crate::proto::json_schema`]). A thin layer over [`ServerBuilder::tool_with`]: the derived
//! schemas go into the [`Tool`], the handler is wrapped to decode the arguments and encode the
//! result, and everything else (argument validation against the schema before the handler,
//! the output check, cancellation, tasks) is the untyped path's.
//!
//! A typed result is checked against its derived output schema in debug builds only (see
//! [`super::schema`]): in release the type is trusted to write what its schema says.
//!
//! Not here: the validator ([`crate::proto::validate`]), typed prompts and elicitation.

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::tool::ToolFn;
use super::{arguments, Context, Registered, Server, ServerBuilder, ServerError, ToolError, ToolFuture};
use crate::proto::json_schema;
use crate::proto::mcp_types::{CallToolResult, ContentBlock, TextContent, Tool};

/// A typed tool result: its value becomes `structuredContent`, with its JSON text as the
/// content (the mirror the spec asks for, for clients that read only `content`), and the
/// schema of `T` becomes the tool's `outputSchema`. `T` must serialize as a JSON object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

/// What a typed tool's handler may return: a [`CallToolResult`] (content, no output schema)
/// or a [`Json`] value (structured content and its derived output schema).
pub trait TypedOutput: Send + 'static {
    /// The tool's `outputSchema`, derived; `None` when the output has none.
    ///
    /// # Errors
    /// When the derived schema cannot be an output schema (not an object schema).
    fn output_schema() -> Option<Result<Value, json_schema::NotAnObject>>;

    /// The result sent to the client.
    ///
    /// # Errors
    /// [`ToolError::Failed`] when the value cannot be serialized.
    fn into_result(self) -> Result<CallToolResult, ToolError>;
}

impl TypedOutput for CallToolResult {
    fn output_schema() -> Option<Result<Value, json_schema::NotAnObject>> {
        None
    }

    fn into_result(self) -> Result<CallToolResult, ToolError> {
        Ok(self)
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> TypedOutput for Json<T> {
    fn output_schema() -> Option<Result<Value, json_schema::NotAnObject>> {
        Some(json_schema::output_schema::<T>())
    }

    fn into_result(self) -> Result<CallToolResult, ToolError> {
        let value = serde_json::to_value(&self.0)
            .map_err(|e| ToolError::failed(format!("the result could not be serialized: {e}")))?;
        let text = value.to_string();
        Ok(CallToolResult {
            content: vec![ContentBlock::Text(TextContent { text, ..TextContent::default() })],
            structured_content: Some(value),
            ..CallToolResult::default()
        })
    }
}

impl ServerBuilder {
    /// Adds a typed tool: its arguments are an `A`, whose schema is the tool's `inputSchema`,
    /// and its handler returns a [`CallToolResult`] or a [`Json`] value, whose schema is the
    /// `outputSchema` (see [`TypedOutput`]).
    ///
    /// Arguments are checked against the derived schema (the constraints the type declares,
    /// `#[schemars(regex, range, length, email …)]`, hold), then decoded; either failing is a
    /// tool error (`isError: true`) naming the JSON pointer of each offending value, and the
    /// handler is not called. A [`Json`] result is checked against the derived output schema in
    /// debug builds. A type whose schema is not an object schema makes [`build`](Self::build)
    /// fail with [`ServerError::InvalidSchema`]; so does, without feature `validation`, a type
    /// that declares a constraint the built-in validator does not check (`regex`, `email`,
    /// `url` …; see [`crate::proto::validate::unenforced`]): it is refused, never served
    /// unenforced.
    ///
    /// ```
    /// use mcpwire::server::{Json, Server};
    /// use mcpwire::schemars::{self, JsonSchema};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct AddArgs {
    ///     /// The first term.
    ///     a: f64,
    ///     /// The second term.
    ///     b: f64,
    /// }
    ///
    /// #[derive(Serialize, JsonSchema)]
    /// struct Sum {
    ///     sum: f64,
    /// }
    ///
    /// let server = Server::builder()
    ///     .derived_tool("add", "Adds two numbers", |args: AddArgs, _ctx| async move {
    ///         Ok(Json(Sum { sum: args.a + args.b }))
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let tool = &server.tools()[0];
    /// assert_eq!(tool.input_schema["properties"]["a"]["description"], "The first term.");
    /// assert_eq!(tool.output_schema.as_ref().unwrap()["required"], serde_json::json!(["sum"]));
    /// ```
    pub fn derived_tool<A, O, F, Fut>(self, name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: TypedOutput,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let tool = Tool::new(name, Value::Object(Map::new())).description(description);
        self.derived_tool_with(tool, handler)
    }

    /// As [`derived_tool`](Self::derived_tool), from a full definition (title, annotations,
    /// icons, `_meta` …, see [`Tool::new`]) whose `inputSchema` is replaced by `A`'s, and whose
    /// `outputSchema` by the output's when it has one.
    pub fn derived_tool_with<A, O, F, Fut>(mut self, tool: Tool, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: TypedOutput,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let registered = typed(tool, handler);
        self.register(registered);
        self
    }
}

impl Server {
    /// As [`ServerBuilder::derived_tool_with`], while serving: adds (or replaces) a typed tool
    /// and sends `notifications/tools/list_changed`.
    ///
    /// # Errors
    /// [`ServerError::InvalidSchema`] when a derived schema is not an object schema; nothing
    /// changes then.
    pub fn add_derived_tool<A, O, F, Fut>(&self, tool: Tool, handler: F) -> Result<(), ServerError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: TypedOutput,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        self.add_registered(typed(tool, handler)?);
        Ok(())
    }
}

/// `tool` with the derived schemas compiled and its handler wrapped (arguments decoded, the
/// output encoded), or the first schema that could not be derived or compiled.
fn typed<A, O, F, Fut>(mut tool: Tool, handler: F) -> Result<Registered, ServerError>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    O: TypedOutput,
    F: Fn(A, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    let refused =
        |e: json_schema::NotAnObject| ServerError::InvalidSchema { name: tool.name.clone(), reason: e.to_string() };
    tool.input_schema = json_schema::input_schema::<A>().map_err(refused)?;
    let typed_output = match O::output_schema() {
        Some(schema) => {
            tool.output_schema = Some(schema.map_err(refused)?);
            true
        }
        None => false,
    };
    if !cfg!(feature = "validation") {
        if let Some(refusal) = unenforced_refusal(&tool) {
            return Err(refusal);
        }
    }
    let handler = Arc::new(handler);
    let handler: ToolFn = Arc::new(move |args, ctx| {
        let handler = handler.clone();
        Box::pin(async move { handler(arguments::<A>(args)?, ctx).await?.into_result() }) as ToolFuture
    });
    Registered::new(tool, handler, typed_output)
}

/// Why `tool` cannot be served by the built-in validator: a derived schema of it constrains
/// values with a keyword that validator does not check (see
/// [`crate::proto::validate::unenforced`]). Checked when feature `validation` is off.
fn unenforced_refusal(tool: &Tool) -> Option<ServerError> {
    std::iter::once(&tool.input_schema)
        .chain(tool.output_schema.as_ref())
        .find_map(unenforced_reason)
        .map(|reason| ServerError::InvalidSchema { name: tool.name.clone(), reason })
}

/// Why a derived `schema` cannot be served by the built-in validator (a keyword it does not
/// check, see [`crate::proto::validate::unenforced`]), for tools and prompts alike.
pub(super) fn unenforced_reason(schema: &Value) -> Option<String> {
    crate::proto::validate::unenforced(schema).map(|what| {
        format!(
            "its type constrains values with {what}, which only feature `validation` enforces: \
             turn that feature on, or drop the constraint"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Server;
    use serde_json::json;

    #[derive(Debug, serde::Deserialize, JsonSchema)]
    struct Args {
        /// What to say.
        text: String,
    }

    #[derive(Serialize, JsonSchema)]
    struct Said {
        said: String,
    }

    #[test]
    fn a_derived_tool_declares_both_schemas() {
        let server = Server::builder()
            .derived_tool("say", "Says", |a: Args, _| async move { Ok(Json(Said { said: a.text })) })
            .build()
            .unwrap();
        let tool = &server.tools()[0];
        assert_eq!(
            tool.input_schema,
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"text": {"type": "string", "description": "What to say."}},
                "required": ["text"]
            })
        );
        assert_eq!(
            tool.output_schema,
            Some(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"said": {"type": "string"}},
                "required": ["said"]
            }))
        );
    }

    #[test]
    fn a_type_that_is_no_object_is_refused_at_build() {
        let result = Server::builder().derived_tool("n", "A number", |n: u32, _| async move { Ok(Json(n)) }).build();
        let Err(ServerError::InvalidSchema { name, reason }) = result else { panic!("refused") };
        assert_eq!(name, "n");
        assert!(reason.contains("is not an object schema"), "{reason}");
    }

    /// Without the full validator, a declared `regex` would go unchecked: such a tool is refused
    /// at build (what `typed` does when feature `validation` is off); a range is the built-in
    /// validator's own.
    #[test]
    fn a_constraint_the_builtin_validator_skips_refuses_the_tool_without_full_validation() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Login {
            #[schemars(regex(pattern = r"^[a-z]+$"))]
            login: String,
        }
        #[derive(serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Page {
            #[schemars(range(min = 1, max = 100))]
            size: u32,
        }
        let login = Tool::new("login", json_schema::input_schema::<Login>().unwrap());
        let Some(ServerError::InvalidSchema { name, reason }) = unenforced_refusal(&login) else { panic!("refused") };
        assert_eq!(name, "login");
        assert!(
            reason.contains("`pattern` at /properties/login") && reason.contains("feature `validation`"),
            "{reason}"
        );
        let page = Tool::new("page", json_schema::input_schema::<Page>().unwrap());
        assert!(unenforced_refusal(&page).is_none());
        // With the full validator the regex holds: the tool is built.
        let built = Server::builder()
            .derived_tool("login", "Log in", |_: Login, _| async move { Ok(Json(Said { said: String::new() })) })
            .build();
        assert_eq!(built.is_ok(), cfg!(feature = "validation"), "{:?}", built.err());
    }

    #[test]
    fn a_derived_tool_added_while_serving_has_its_schemas_or_is_refused() {
        let server = Server::builder().build().unwrap();
        let tool = Tool::new("say", json!({})).title("Say");
        server.add_derived_tool(tool, |a: Args, _| async move { Ok(Json(Said { said: a.text })) }).unwrap();
        let listed = &server.tools()[0];
        assert_eq!((listed.title.as_deref(), &listed.input_schema["required"]), (Some("Say"), &json!(["text"])));
        assert!(listed.output_schema.is_some());
        let refused = server.add_derived_tool(Tool::new("n", json!({})), |n: u32, _| async move { Ok(Json(n)) });
        assert!(matches!(refused, Err(ServerError::InvalidSchema { .. })), "{refused:?}");
        assert_eq!(server.tools().len(), 1, "nothing changes");
    }

    #[test]
    fn a_json_result_is_structured_with_its_text_mirror() {
        let result = Json(Said { said: "hi".into() }).into_result().unwrap();
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"content": [{"type": "text", "text": "{\"said\":\"hi\"}"}], "structuredContent": {"said": "hi"}})
        );
    }
}
