//! Typed elicitation (feature `schema`): a [`Form`] asks the user for a Rust type, whose
//! `requestedSchema` is derived from it and checked, when the form is made, to be within MCP's
//! restricted elicitation subset (2025-11-25 `client/elicitation`, "Requested Schema"): a flat
//! object whose fields are each a string (with `minLength`/`maxLength` and a `format` among
//! `email`, `uri`, `date`, `date-time`), a number or integer (with bounds), a boolean, one of a
//! set of strings (a unit-only enum) or several of them (a list of such an enum). A type with
//! any other field is refused, naming the field. [`ServerBuilder::with_form`] makes the form
//! while the server is assembled, so that such a type fails [`ServerBuilder::build`] rather
//! than a call; [`Form::new`] makes one anywhere. [`Context::elicit_form`] sends it and answers
//! [`Elicited::Accept`] with the answer validated against the schema and decoded, or
//! [`Elicited::Decline`] / [`Elicited::Cancel`]. Both eras: a server-to-client request in the
//! handshake era, a multi-round-trip request in 2026-07-28 (the untyped `Context::elicit`'s
//! path, unchanged).
//!
//! Not here: URL-mode elicitation, sampling.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{ClientRequestError, Context, ServerBuilder, ServerError};
use crate::proto::json_schema;
use crate::proto::mcp_types::{decode_value, ElicitAction, ElicitationSchema, PrimitiveSchemaDefinition};
use crate::proto::validate::Validator;

/// A form asking the user for a `T`. Cheap to clone.
pub struct Form<T> {
    schema: Arc<ElicitationSchema>,
    check: Arc<Validator>,
    _answer: PhantomData<fn() -> T>,
}

impl<T> Clone for Form<T> {
    fn clone(&self) -> Self {
        Form { schema: self.schema.clone(), check: self.check.clone(), _answer: PhantomData }
    }
}

impl<T> fmt::Debug for Form<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Form").field("schema", &self.schema).finish()
    }
}

/// Why a type cannot be a form: the field outside the elicitation subset, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAForm {
    /// The Rust type, as `std::any::type_name` spells it.
    pub type_name: &'static str,
    /// The field, or `""` for the type itself.
    pub field: String,
    /// Why.
    pub reason: String,
}

impl fmt::Display for NotAForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{} cannot be an elicitation form: {}", self.type_name, self.reason)
        } else {
            write!(f, "{} cannot be an elicitation form: field {:?} {}", self.type_name, self.field, self.reason)
        }
    }
}

impl std::error::Error for NotAForm {}

/// What the user did with a [`Form`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// Submitted, with the answer.
    Accept(T),
    /// Explicitly refused.
    Decline,
    /// Dismissed without choosing (an action this crate does not know counts as this).
    Cancel,
}

impl<T: DeserializeOwned + JsonSchema> Form<T> {
    /// The form of `T`. A tool's forms are best made by [`ServerBuilder::with_form`], where a
    /// type outside the subset fails `build`; this is for a form made elsewhere (a tool added
    /// while serving).
    ///
    /// # Errors
    /// [`NotAForm`] naming the first field outside the elicitation subset (a nested object, a
    /// list of anything but a unit-only enum, a map …), or the type when it is no struct.
    pub fn new() -> Result<Form<T>, NotAForm> {
        let type_name = std::any::type_name::<T>();
        let refuse = |field: &str, reason: String| NotAForm { type_name, field: field.to_owned(), reason };
        let mut root = json_schema::input_schema::<T>().map_err(|e| refuse("", e.to_string()))?;
        let defs = root.as_object_mut().and_then(|r| r.remove("$defs")).unwrap_or(Value::Null);
        let root = root.as_object().cloned().unwrap_or_default();
        let mut properties = Map::new();
        for (name, field) in root.get("properties").and_then(Value::as_object).into_iter().flatten() {
            let field = flat_field(field, &defs).map_err(|reason| refuse(name, reason))?;
            properties.insert(name.clone(), field);
        }
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(properties));
        if let Some(required) = root.get("required") {
            schema.insert("required".into(), required.clone());
        }
        let schema = Value::Object(schema);
        let decoded: ElicitationSchema = serde_json::from_value(schema.clone())
            .map_err(|e| refuse("", format!("its schema does not decode: {e}")))?;
        for (name, field) in &decoded.properties {
            if let PrimitiveSchemaDefinition::Other(other) = field {
                return Err(refuse(
                    name,
                    format!("is no primitive, enum or format field: {}", Value::Object(other.clone())),
                ));
            }
        }
        let check = Validator::new(&schema).map_err(|e| refuse("", e.to_string()))?;
        Ok(Form { schema: Arc::new(decoded), check: Arc::new(check), _answer: PhantomData })
    }

    /// The `requestedSchema` sent to the client.
    pub fn schema(&self) -> &ElicitationSchema {
        &self.schema
    }
}

impl ServerBuilder {
    /// Makes the form of `T` now, while the server is assembled, and hands it to `declare`,
    /// which adds the tools that ask it (moving the form into their handlers). A `T` outside
    /// the elicitation subset is not a runtime surprise: `declare` is not called and
    /// [`build`](Self::build) fails with [`ServerError::InvalidForm`] naming the field.
    ///
    /// ```
    /// use mcpwire::schemars::{self, JsonSchema};
    /// use mcpwire::server::{text_result, Elicited, Form, Server, ServerError};
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Name {
    ///     /// Your name.
    ///     name: String,
    /// }
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct NoArgs {}
    ///
    /// let server = Server::builder()
    ///     .with_form(|builder, form: Form<Name>| {
    ///         builder.derived_tool("greet", "Greets the user", move |NoArgs {}, ctx| {
    ///             let form = form.clone();
    ///             async move {
    ///                 Ok(text_result(match ctx.elicit_form("Your name?", &form).await? {
    ///                     Elicited::Accept(Name { name }) => format!("Hello, {name}!"),
    ///                     _ => "Hello!".to_owned(),
    ///                 }))
    ///             }
    ///         })
    ///     })
    ///     .build();
    /// assert!(server.is_ok());
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Names {
    ///     names: Vec<String>,
    /// }
    /// let refused = Server::builder().with_form(|builder, _: Form<Names>| builder).build();
    /// let Err(ServerError::InvalidForm(e)) = refused else { panic!("refused") };
    /// assert_eq!(e.field, "names");
    /// ```
    pub fn with_form<T: DeserializeOwned + JsonSchema>(
        mut self,
        declare: impl FnOnce(ServerBuilder, Form<T>) -> ServerBuilder,
    ) -> ServerBuilder {
        match Form::<T>::new() {
            Ok(form) => declare(self, form),
            Err(refused) => {
                self.schema_errors.push(ServerError::InvalidForm(refused));
                self
            }
        }
    }
}

/// `field` as one field of a form: `$ref`s inlined, `Option`'s `null` and numbers' `format`
/// dropped, an enum with documented variants as `oneOf` of `const`/`title`; or why it cannot be.
fn flat_field(field: &Value, defs: &Value) -> Result<Value, String> {
    let mut field = resolve(field, defs)?;
    let object = field.as_object_mut().ok_or("has a boolean schema")?;
    // `Option<T>`: `type: [T, "null"]`, not required.
    if let Some(Value::Array(types)) = object.get("type") {
        let kinds: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        let [kind] = kinds.as_slice() else {
            return Err(format!("has several types: {}", Value::Array(types.clone())));
        };
        let kind = (*kind).clone();
        object.insert("type".into(), kind);
    }
    let kind = object.get("type").and_then(Value::as_str).map(str::to_owned);
    match kind.as_deref() {
        Some("integer" | "number") => {
            // schemars' `uint32`, `double` … are no elicitation formats.
            object.remove("format");
        }
        Some("array") => {
            let items = object.get("items").ok_or("is a list without items")?;
            let items = resolve(items, defs)?;
            if items.get("type") != Some(&Value::from("string")) || items.get("enum").is_none() {
                return Err("is a list of something other than a unit-only enum".into());
            }
            object.insert("items".into(), json_enum_items(&items));
        }
        Some("string") => {
            if let Some(Value::Array(options)) = object.remove("oneOf") {
                object.insert("oneOf".into(), Value::Array(titled(&options)?));
            }
        }
        Some("boolean") => {}
        None if object.contains_key("oneOf") => {
            let options = object.remove("oneOf").and_then(|o| o.as_array().cloned()).unwrap_or_default();
            object.insert("type".into(), "string".into());
            object.insert("oneOf".into(), Value::Array(titled(&options)?));
        }
        Some(other) => return Err(format!("is of type {other}, not a string, number, boolean or enum")),
        None => return Err("has no type".into()),
    }
    Ok(field)
}

/// `items` of a multi-select: the plain `enum` of strings.
fn json_enum_items(items: &Value) -> Value {
    serde_json::json!({"type": "string", "enum": items["enum"]})
}

/// A unit-only enum's documented variants (`{const, description}`) as `{const, title}`.
fn titled(options: &[Value]) -> Result<Vec<Value>, String> {
    options
        .iter()
        .map(|option| {
            let value = option.get("const").and_then(Value::as_str).ok_or("is an enum with data")?;
            let title = option.get("description").and_then(Value::as_str).unwrap_or(value);
            Ok(serde_json::json!({"const": value, "title": title}))
        })
        .collect()
}

/// `schema` with a `$ref` to `#/$defs/NAME` replaced by the definition (its sibling keywords,
/// such as a field's `description`, kept).
fn resolve(schema: &Value, defs: &Value) -> Result<Value, String> {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else { return Ok(schema.clone()) };
    let name = reference.strip_prefix("#/$defs/").ok_or_else(|| format!("refers to {reference}"))?;
    let mut target = defs.get(name).cloned().ok_or_else(|| format!("refers to a missing {reference}"))?;
    if target.get("properties").is_some() || target.get("$ref").is_some() {
        return Err(format!("is a nested object ({name})"));
    }
    let mut siblings = schema.as_object().cloned().unwrap_or_default();
    siblings.remove("$ref");
    if let Some(target) = target.as_object_mut() {
        target.extend(siblings);
    }
    Ok(target)
}

impl Context {
    /// Asks the user to fill `form` (`elicitation/create`, form mode); the answer is checked
    /// against the form's schema and decoded into a `T`.
    ///
    /// # Errors
    /// As [`Context::elicit`]; [`ClientRequestError::InvalidResult`] when an accepted answer
    /// breaks the form's schema (naming the field) or does not decode into `T`.
    pub async fn elicit_form<T: DeserializeOwned>(
        &self,
        message: impl Into<String>,
        form: &Form<T>,
    ) -> Result<Elicited<T>, ClientRequestError> {
        let answer = self.elicit(message, (*form.schema).clone()).await?;
        match answer.action {
            ElicitAction::Accept => {}
            ElicitAction::Decline => return Ok(Elicited::Decline),
            _ => return Ok(Elicited::Cancel),
        }
        let invalid = |reason: String| ClientRequestError::InvalidResult(serde::de::Error::custom(reason));
        let content =
            serde_json::to_value(answer.content.unwrap_or_default()).map_err(ClientRequestError::InvalidResult)?;
        form.check.check(&content).map_err(|e| invalid(format!("the answer does not fit the form: {e}")))?;
        decode_value(content).map(Elicited::Accept).map_err(|e| invalid(format!("the answer does not decode: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// A write to approve.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Approval {
        /// Allow this write.
        approve: bool,
        /// Why.
        reason: Option<String>,
        /// Where to send the receipt.
        #[schemars(email)]
        receipt: Option<String>,
        /// How many copies.
        #[schemars(range(min = 1, max = 3))]
        copies: u8,
        /// How urgent.
        urgency: Urgency,
        /// Who else may see it.
        share: Vec<Team>,
    }

    /// Urgency.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Urgency {
        /// Today.
        High,
        /// This week.
        Low,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Team {
        Ops,
        Dev,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        name: String,
        address: Address,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Address {
        city: String,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Listed {
        names: Vec<String>,
    }

    #[test]
    fn a_flat_type_becomes_the_form_the_spec_describes() {
        let form = Form::<Approval>::new().unwrap();
        let schema = serde_json::to_value(form.schema()).unwrap();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "approve": {"type": "boolean", "description": "Allow this write."},
                    "reason": {"type": "string", "description": "Why."},
                    "receipt": {"type": "string", "format": "email", "description": "Where to send the receipt."},
                    "copies": {"type": "integer", "minimum": 1, "maximum": 3, "description": "How many copies."},
                    "urgency": {"type": "string", "description": "How urgent.",
                        "oneOf": [{"const": "high", "title": "Today."}, {"const": "low", "title": "This week."}]},
                    "share": {"type": "array", "description": "Who else may see it.",
                        "items": {"type": "string", "enum": ["ops", "dev"]}}
                },
                "required": ["approve", "copies", "urgency", "share"]
            }),
            "{}",
            serde_json::to_string_pretty(&schema).unwrap()
        );
        for field in form.schema().properties.values() {
            assert!(!matches!(field, PrimitiveSchemaDefinition::Other(_)), "{field:?}");
        }
    }

    #[test]
    fn a_nested_or_listed_field_is_refused_naming_it() {
        let err = Form::<Nested>::new().unwrap_err();
        assert_eq!(err.field, "address", "{err}");
        assert!(
            err.to_string().contains("cannot be an elicitation form: field \"address\" is a nested object"),
            "{err}"
        );
        let err = Form::<Listed>::new().unwrap_err();
        assert_eq!(err.field, "names", "{err}");
        let err = Form::<u32>::new().unwrap_err();
        assert_eq!(err.field, "", "{err}");
    }
}
