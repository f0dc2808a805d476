//! The built-in JSON Schema validator: the keywords that carry most schemas in practice,
//! with no dependency. What [`super::Validator`] runs when feature `validation` is off.
//!
//! Checked: `type` (a name or a list; `integer` is a number with no fraction), `enum`, `const`,
//! `properties`, `required`, `additionalProperties` (`false` or a schema), `items` (one schema),
//! `minItems`/`maxItems`, `minLength`/`maxLength` (in characters), `minimum`/`maximum`,
//! `allOf`/`anyOf`/`oneOf`/`not`, and `$ref` to a local JSON pointer (`#/$defs/x`,
//! `#/definitions/x`, `#`). A boolean schema is `true` (anything) or `false` (nothing).
//!
//! Not checked (accepted as if absent, so an unknown keyword never rejects valid data):
//! `pattern`, `format`, `if`/`then`/`else`, `dependentRequired`, `prefixItems`,
//! `patternProperties`, `$anchor` references, remote `$ref`s, and the rest of the vocabulary.
//! The first violation found is reported, with the JSON pointer of the offending value.

use serde_json::{Map, Value};

/// Why a value does not match a schema: where (a JSON pointer into the value) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// A JSON pointer to the offending value (`""` for the whole value).
    pub path: String,
    /// What is wrong, in lowercase.
    pub message: String,
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for SchemaError {}

/// Checks `value` against `schema` (the schema is its own root for `$ref`).
///
/// # Errors
/// The first violation found.
pub fn validate(schema: &Value, value: &Value) -> Result<(), SchemaError> {
    Validator { root: schema, depth: 0 }.check(schema, value, &mut String::new())
}

struct Validator<'a> {
    root: &'a Value,
    depth: usize,
}

/// `$ref` chains deeper than this are refused (a self-referencing schema would loop).
const MAX_DEPTH: usize = 64;

fn fail(path: &str, message: impl Into<String>) -> Result<(), SchemaError> {
    Err(SchemaError { path: path.to_owned(), message: message.into() })
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(crate) fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "integer" => value.as_f64().is_some_and(|x| x.fract() == 0.0),
        "number" => value.is_number(),
        other => type_name(value) == other,
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Appends `key` to a JSON pointer (`~` and `/` escaped; most keys need neither, and are
/// copied without an allocation).
fn push_key(path: &mut String, key: &str) {
    path.push('/');
    if key.contains(['~', '/']) {
        path.push_str(&key.replace('~', "~0").replace('/', "~1"));
    } else {
        path.push_str(key);
    }
}

impl<'a> Validator<'a> {
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(pointer)
    }

    fn check(&mut self, schema: &Value, value: &Value, path: &mut String) -> Result<(), SchemaError> {
        let schema = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return fail(path, "no value is allowed here"),
            Value::Object(schema) => schema,
            // Not a schema: nothing to check.
            _ => return Ok(()),
        };
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            if self.depth >= MAX_DEPTH {
                return fail(path, format!("$ref {reference} nests too deep"));
            }
            if let Some(target) = self.resolve(reference) {
                self.depth += 1;
                let outcome = self.check(target, value, path);
                self.depth -= 1;
                outcome?;
            }
        }
        self.check_type(schema, value, path)?;
        if let Some(options) = schema.get("enum").and_then(Value::as_array) {
            if !options.iter().any(|o| json_eq(o, value)) {
                return fail(path, format!("{value} is not one of {}", Value::Array(options.clone())));
            }
        }
        if let Some(constant) = schema.get("const") {
            if !json_eq(constant, value) {
                return fail(path, format!("{value} is not {constant}"));
            }
        }
        match value {
            Value::Object(object) => self.check_object(schema, object, path)?,
            Value::Array(items) => self.check_array(schema, items, path)?,
            Value::String(s) => {
                let min = schema.get("minLength").and_then(Value::as_u64);
                let max = schema.get("maxLength").and_then(Value::as_u64);
                // Counting characters walks the whole string: only when a bound asks for it.
                if min.is_some() || max.is_some() {
                    let len = s.chars().count() as u64;
                    if let Some(min) = min.filter(|&min| len < min) {
                        return fail(path, format!("shorter than {min} characters"));
                    }
                    if let Some(max) = max.filter(|&max| len > max) {
                        return fail(path, format!("longer than {max} characters"));
                    }
                }
            }
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
                    if x < min {
                        return fail(path, format!("{n} is less than {min}"));
                    }
                }
                if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
                    if x > max {
                        return fail(path, format!("{n} is greater than {max}"));
                    }
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
        self.check_combinators(schema, value, path)
    }

    fn check_type(&self, schema: &Map<String, Value>, value: &Value, path: &str) -> Result<(), SchemaError> {
        let ok = match schema.get("type") {
            Some(Value::String(ty)) => has_type(value, ty),
            Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).any(|ty| has_type(value, ty)),
            _ => true,
        };
        if ok {
            Ok(())
        } else {
            let expected = schema.get("type").map(Value::to_string).unwrap_or_default();
            fail(path, format!("expected type {expected}, got {}", type_name(value)))
        }
    }

    fn check_object(
        &mut self,
        schema: &Map<String, Value>,
        object: &Map<String, Value>,
        path: &mut String,
    ) -> Result<(), SchemaError> {
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    return fail(path, format!("missing required property {name:?}"));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        for (key, item) in object {
            let len = path.len();
            push_key(path, key);
            let outcome = match properties.and_then(|p| p.get(key)) {
                Some(sub) => self.check(sub, item, path),
                None => match additional {
                    Some(Value::Bool(false)) => {
                        path.truncate(len);
                        return fail(path, format!("property {key:?} is not allowed"));
                    }
                    Some(sub) => self.check(sub, item, path),
                    None => Ok(()),
                },
            };
            path.truncate(len);
            outcome?;
        }
        Ok(())
    }

    fn check_array(
        &mut self,
        schema: &Map<String, Value>,
        items: &[Value],
        path: &mut String,
    ) -> Result<(), SchemaError> {
        let len = items.len() as u64;
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
            if len < min {
                return fail(path, format!("fewer than {min} items"));
            }
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if len > max {
                return fail(path, format!("more than {max} items"));
            }
        }
        if let Some(sub) = schema.get("items").filter(|s| s.is_object() || s.is_boolean()) {
            for (i, item) in items.iter().enumerate() {
                let at = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                let outcome = self.check(sub, item, path);
                path.truncate(at);
                outcome?;
            }
        }
        Ok(())
    }

    fn check_combinators(
        &mut self,
        schema: &Map<String, Value>,
        value: &Value,
        path: &mut String,
    ) -> Result<(), SchemaError> {
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for sub in all {
                self.check(sub, value, path)?;
            }
        }
        if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
            if !any.iter().any(|sub| self.check(sub, value, &mut path.clone()).is_ok()) {
                return fail(path, "matches none of anyOf");
            }
        }
        if let Some(one) = schema.get("oneOf").and_then(Value::as_array) {
            let matches = one.iter().filter(|sub| self.check(sub, value, &mut path.clone()).is_ok()).count();
            if matches != 1 {
                return fail(path, format!("matches {matches} of oneOf, not exactly one"));
            }
        }
        if let Some(not) = schema.get("not") {
            if self.check(not, value, &mut path.clone()).is_ok() {
                return fail(path, "matches the schema under not");
            }
        }
        Ok(())
    }
}

/// Where `schema` constrains values with a keyword this validator does not check (`pattern`,
/// an assertion `format` such as `email`, `if`/`then`/`else` …): the keyword and the JSON
/// pointer of the schema that holds it. A schema derived from a type that declares such a
/// constraint is refused rather than served unenforced when feature `validation` is off.
/// `None` when every constraint of the schema is one this validator checks. Annotations
/// (`description`, `title`, `default`, `examples`) and formats that assert nothing (schemars'
/// `uint32`, `int64`, `double` …) are not constraints.
pub fn unenforced(schema: &Value) -> Option<String> {
    unenforced_at(schema, &mut String::new())
}

/// Keywords that assert something about a value and that [`validate`] does not check.
const UNCHECKED: &[&str] = &[
    "pattern",
    "patternProperties",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "multipleOf",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// The formats of JSON Schema 2020-12's format vocabulary: each asserts a shape when a full
/// validator checks formats.
const ASSERTED_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

fn unenforced_at(schema: &Value, path: &mut String) -> Option<String> {
    let Value::Object(members) = schema else { return None };
    for (key, value) in members {
        let len = path.len();
        let at = if len == 0 { "the root".to_owned() } else { path.clone() };
        path.push('/');
        path.push_str(key);
        let found = if UNCHECKED.contains(&key.as_str()) {
            Some(format!("`{key}` at {at}"))
        } else if let Some(format) = value.as_str().filter(|f| key == "format" && ASSERTED_FORMATS.contains(f)) {
            Some(format!("`format: {format}` at {at}"))
        } else {
            match key.as_str() {
                // Maps of names to schemas.
                "properties" | "$defs" | "definitions" => value.as_object().and_then(|map| {
                    map.iter().find_map(|(name, sub)| {
                        let len = path.len();
                        path.push('/');
                        path.push_str(name);
                        let found = unenforced_at(sub, path);
                        path.truncate(len);
                        found
                    })
                }),
                // One schema.
                "items" | "not" | "additionalProperties" => unenforced_at(value, path),
                // Lists of schemas.
                "allOf" | "anyOf" | "oneOf" => value.as_array().and_then(|list| {
                    list.iter().enumerate().find_map(|(i, sub)| {
                        let len = path.len();
                        path.push_str(&format!("/{i}"));
                        let found = unenforced_at(sub, path);
                        path.truncate(len);
                        found
                    })
                }),
                _ => None,
            }
        };
        path.truncate(len);
        if found.is_some() {
            return found;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn unenforced_names_the_first_constraint_this_validator_skips_and_where() {
        use serde_json::json;
        let checked = json!({"type": "object", "required": ["a"], "properties": {
            "a": {"type": "integer", "format": "uint32", "minimum": 0, "description": "x"},
            "pattern": {"type": "string", "maxLength": 3},
            "list": {"type": "array", "items": {"$ref": "#/$defs/p"}}},
            "$defs": {"p": {"anyOf": [{"type": "string"}, {"type": "null"}]}}});
        assert_eq!(unenforced(&checked), None, "property names are not keywords, annotations assert nothing");
        let login = json!({"type": "object", "properties": {"login": {"type": "string", "pattern": "^[a-z]+$"}}});
        assert_eq!(unenforced(&login).as_deref(), Some("`pattern` at /properties/login"));
        let email = json!({"$defs": {"c": {"anyOf": [{"type": "string", "format": "email"}]}}});
        assert_eq!(unenforced(&email).as_deref(), Some("`format: email` at /$defs/c/anyOf/0"));
        assert_eq!(unenforced(&json!({"if": {}, "then": {}})).as_deref(), Some("`if` at the root"));
    }

    use super::*;
    use serde_json::json;

    fn err(schema: Value, value: Value) -> String {
        validate(&schema, &value).unwrap_err().to_string()
    }

    #[test]
    fn types_and_required() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]});
        assert!(validate(&schema, &json!({"a": 3})).is_ok());
        assert!(validate(&schema, &json!({"a": 3.0})).is_ok());
        assert_eq!(err(schema.clone(), json!({"a": 3.5})), "/a: expected type \"integer\", got number");
        assert_eq!(err(schema.clone(), json!({})), "missing required property \"a\"");
        assert_eq!(err(schema, json!([1])), "expected type \"object\", got array");
        assert!(validate(&json!({"type": ["string", "null"]}), &json!(null)).is_ok());
    }

    #[test]
    fn enums_items_additional() {
        let schema = json!({
            "type": "object",
            "properties": {"tags": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 2}},
            "additionalProperties": false
        });
        assert!(validate(&schema, &json!({"tags": ["x", "y"]})).is_ok());
        assert_eq!(err(schema.clone(), json!({"tags": ["x", "z"]})), "/tags/1: \"z\" is not one of [\"x\",\"y\"]");
        assert_eq!(err(schema.clone(), json!({"tags": ["x", "x", "x"]})), "/tags: more than 2 items");
        assert_eq!(err(schema, json!({"other": 1})), "property \"other\" is not allowed");
        let typed_extra = json!({"additionalProperties": {"type": "number"}});
        assert_eq!(err(typed_extra, json!({"a/b": "s"})), "/a~1b: expected type \"number\", got string");
    }

    #[test]
    fn string_lengths_count_characters() {
        let schema = json!({"type": "string", "minLength": 2, "maxLength": 3});
        assert!(validate(&schema, &json!("éé")).is_ok(), "two characters, four bytes");
        assert!(validate(&schema, &json!("ééé")).is_ok());
        assert_eq!(err(schema.clone(), json!("é")), "shorter than 2 characters");
        assert_eq!(err(schema, json!("abcd")), "longer than 3 characters");
        assert!(validate(&json!({"type": "string"}), &json!("x".repeat(1 << 16))).is_ok());
        assert_eq!(err(json!({"maxLength": 1}), json!("ab")), "longer than 1 characters");
    }

    #[test]
    fn refs_and_combinators() {
        let schema = json!({
            "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
            "type": "object",
            "properties": {"address": {"$ref": "#/$defs/address"}},
            "anyOf": [{"required": ["phone"]}, {"required": ["email"]}],
            "if": {"required": ["x"]}, "then": {"required": ["never"]}
        });
        assert!(validate(&schema, &json!({"email": "e", "x": 1, "address": {"city": "Paris"}})).is_ok());
        assert_eq!(
            err(schema.clone(), json!({"email": "e", "address": {"city": 1}})),
            "/address/city: expected type \"string\", got number"
        );
        assert_eq!(err(schema, json!({})), "matches none of anyOf");
        assert_eq!(
            err(json!({"oneOf": [{"type": "number"}, {"type": "integer"}]}), json!(1)),
            "matches 2 of oneOf, not exactly one"
        );
        assert!(validate(&json!({"$ref": "#"}), &json!(1)).is_err());
        assert!(validate(&json!(true), &json!(1)).is_ok());
        assert!(validate(&json!(false), &json!(1)).is_err());
    }
}
