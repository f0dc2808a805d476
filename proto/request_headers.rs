//! The request metadata headers a 2026-07-28 client adds to each POST
//! ([Streamable HTTP, "Request Metadata"](https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http#request-metadata)):
//! `Mcp-Method`, `Mcp-Name` (the `name` or `uri` of `tools/call`, `prompts/get`,
//! `resources/read`), and `Mcp-Param-{Name}` for the tool arguments a tool's `inputSchema`
//! designates with `x-mcp-header`; the value encoding (plain, or the `=?base64?…?=` sentinel);
//! and the validation of `x-mcp-header` declarations, which decides whether a client may keep a
//! tool at all.
//!
//! Pure functions over JSON values: no IO, no HTTP types. Not here: the server's checking of
//! these headers against a body ([`check_headers`](super::envelope::check_headers),
//! [`check_param_headers`](super::envelope::check_param_headers), which take the designated
//! arguments from here), the value encoding ([`encode_header_value`]) and sending them (the
//! client transport).

use std::fmt;

use serde_json::{Map, Value};

use super::envelope::{encode_header_value, PARAM_HEADER_PREFIX, X_MCP_HEADER};

/// One argument a tool designates for mirroring: the declared header name (after
/// `Mcp-Param-`) and the chain of `properties` keys that leads to the argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `x-mcp-header` value, e.g. `Region`.
    pub name: String,
    /// The property path from the arguments' root, e.g. `["region"]`.
    pub path: Vec<String>,
    /// Whether the argument is declared `integer`: its header is compared as a number
    /// (`42` and `42.0` agree).
    pub integer: bool,
}

/// Why a tool's `x-mcp-header` declarations are invalid (the tool must then be left out of
/// `tools/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidParamHeader {
    /// The value is not a string.
    NotAString {
        /// The annotated property.
        property: String,
    },
    /// The value is empty.
    Empty {
        /// The annotated property.
        property: String,
    },
    /// The value is not an HTTP field-name token (space, colon, control or non-ASCII character …).
    NotAToken {
        /// The annotated property.
        property: String,
        /// The declared value.
        name: String,
    },
    /// The annotated property is not of type `string`, `integer` or `boolean`.
    NotPrimitive {
        /// The annotated property.
        property: String,
        /// Its declared `type`, as JSON.
        declared: String,
    },
    /// Two annotations name the same header (compared case-insensitively).
    Duplicate {
        /// The header name declared twice.
        name: String,
    },
    /// An annotation sits somewhere other than a chain of `properties` from the schema root
    /// (under `items`, `oneOf`, `$ref`, `$defs` …).
    NotStaticallyReachable {
        /// The schema keyword it sits under.
        keyword: String,
    },
}

impl fmt::Display for InvalidParamHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAString { property } => write!(f, "x-mcp-header of {property:?} is not a string"),
            Self::Empty { property } => write!(f, "x-mcp-header of {property:?} is empty"),
            Self::NotAToken { property, name } => {
                write!(f, "x-mcp-header {name:?} of {property:?} is not an HTTP header name token")
            }
            Self::NotPrimitive { property, declared } => {
                write!(
                    f,
                    "x-mcp-header on {property:?} of type {declared}: only string, integer and boolean may be mirrored"
                )
            }
            Self::Duplicate { name } => write!(f, "x-mcp-header {name:?} is declared twice (case-insensitively)"),
            Self::NotStaticallyReachable { keyword } => {
                write!(
                    f,
                    "x-mcp-header under {keyword:?}: only properties reachable through `properties` may be mirrored"
                )
            }
        }
    }
}

impl std::error::Error for InvalidParamHeader {}

/// The arguments `input_schema` designates for mirroring, in schema order.
///
/// # Errors
/// The first violation of the `x-mcp-header` constraints (tools, "x-mcp-header").
pub fn param_headers(input_schema: &Value) -> Result<Vec<ParamHeader>, InvalidParamHeader> {
    let mut found = Vec::new();
    if let Value::Object(schema) = input_schema {
        if !contains_annotation(input_schema) {
            return Ok(found);
        }
        collect(schema, &mut Vec::new(), &mut found)?;
    }
    for (i, header) in found.iter().enumerate() {
        if found[..i].iter().any(|h| h.name.eq_ignore_ascii_case(&header.name)) {
            return Err(InvalidParamHeader::Duplicate { name: header.name.clone() });
        }
    }
    Ok(found)
}

/// Walks one schema object: annotations under `properties` are collected (and their own
/// subschemas walked), one under any other keyword makes the tool invalid.
fn collect(
    schema: &Map<String, Value>,
    path: &mut Vec<String>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), InvalidParamHeader> {
    for (keyword, value) in schema {
        if keyword == X_MCP_HEADER {
            continue;
        }
        let Some(properties) = value.as_object().filter(|_| keyword == "properties") else {
            if contains_annotation(value) {
                return Err(InvalidParamHeader::NotStaticallyReachable { keyword: keyword.clone() });
            }
            continue;
        };
        for (property, subschema) in properties {
            let Value::Object(subschema) = subschema else { continue };
            path.push(property.clone());
            if let Some(declared) = subschema.get(X_MCP_HEADER) {
                let name = checked_name(property, declared, subschema)?;
                let integer = subschema.get("type").and_then(Value::as_str) == Some("integer");
                found.push(ParamHeader { name, path: path.clone(), integer });
            }
            collect(subschema, path, found)?;
            path.pop();
        }
    }
    Ok(())
}

fn checked_name(
    property: &str,
    declared: &Value,
    subschema: &Map<String, Value>,
) -> Result<String, InvalidParamHeader> {
    let property = property.to_owned();
    let Value::String(name) = declared else { return Err(InvalidParamHeader::NotAString { property }) };
    if name.is_empty() {
        return Err(InvalidParamHeader::Empty { property });
    }
    if !name.bytes().all(is_tchar) {
        return Err(InvalidParamHeader::NotAToken { property, name: name.clone() });
    }
    match subschema.get("type") {
        Some(Value::String(t)) if matches!(t.as_str(), "string" | "integer" | "boolean") => Ok(name.clone()),
        declared => Err(InvalidParamHeader::NotPrimitive {
            property,
            declared: declared.map_or_else(|| "(none)".to_owned(), Value::to_string),
        }),
    }
}

fn contains_annotation(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(k, v)| k == X_MCP_HEADER || contains_annotation(v)),
        Value::Array(items) => items.iter().any(contains_annotation),
        _ => false,
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers of a call with `arguments`: `(header name, encoded value)` for each
/// designated argument that has a string, integer or boolean value (an absent or `null` one has
/// no header).
pub fn param_header_values(headers: &[ParamHeader], arguments: Option<&Map<String, Value>>) -> Vec<(String, String)> {
    let Some(arguments) = arguments else { return Vec::new() };
    let mut out = Vec::with_capacity(headers.len());
    for header in headers {
        let Some((first, rest)) = header.path.split_first() else { continue };
        let value = rest.iter().try_fold(arguments.get(first), |v, key| Some(v?.as_object()?.get(key)));
        let text = match value.flatten() {
            Some(Value::String(s)) => encode_header_value(s).into_owned(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => continue,
        };
        out.push((format!("{PARAM_HEADER_PREFIX}{}", header.name.to_ascii_lowercase()), text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(schema: Value) -> Result<Vec<ParamHeader>, InvalidParamHeader> {
        param_headers(&schema)
    }

    #[test]
    fn designated_properties_are_found_through_nested_properties() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "target": {"type": "object", "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}}}
        }});
        assert_eq!(
            headers(schema).unwrap(),
            [
                ParamHeader { name: "Region".into(), path: vec!["region".into()], integer: false },
                ParamHeader { name: "Zone".into(), path: vec!["target".into(), "zone".into()], integer: true },
            ]
        );
        assert_eq!(headers(json!({"type": "object"})).unwrap(), []);
    }

    #[test]
    fn every_invalid_declaration_of_the_suite_is_refused() {
        let one = |property: Value| headers(json!({"type": "object", "properties": {"p": property}}));
        assert!(matches!(one(json!({"type": "string", "x-mcp-header": ""})), Err(InvalidParamHeader::Empty { .. })));
        for ty in ["object", "array", "null", "number"] {
            assert!(
                matches!(one(json!({"type": ty, "x-mcp-header": "P"})), Err(InvalidParamHeader::NotPrimitive { .. })),
                "{ty}"
            );
        }
        for name in ["My Region", "Region:Primary", "Région", "Region\t1"] {
            assert!(
                matches!(
                    one(json!({"type": "string", "x-mcp-header": name})),
                    Err(InvalidParamHeader::NotAToken { .. })
                ),
                "{name}"
            );
        }
        let twice = json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}}});
        assert_eq!(headers(twice), Err(InvalidParamHeader::Duplicate { name: "myfield".into() }));
        let under_items = json!({"type": "object", "properties": {"list": {"type": "array",
            "items": {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "X"}}}}}});
        assert_eq!(headers(under_items), Err(InvalidParamHeader::NotStaticallyReachable { keyword: "items".into() }));
        let under_one_of = json!({"oneOf": [{"properties": {"x": {"type": "string", "x-mcp-header": "X"}}}]});
        assert_eq!(headers(under_one_of), Err(InvalidParamHeader::NotStaticallyReachable { keyword: "oneOf".into() }));
    }

    #[test]
    fn values_are_plain_or_base64_as_the_spec_tabulates() {
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(encode_header_value("us west 1"), "us west 1");
        assert_eq!(encode_header_value(""), "");
        assert_eq!(encode_header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode_header_value("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert_eq!(encode_header_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
        assert_eq!(crate::proto::envelope::encode_base64(b"a"), "YQ==");
        assert_eq!(crate::proto::envelope::encode_base64(b"ab"), "YWI=");
        assert_eq!(crate::proto::envelope::encode_base64(b"abc"), "YWJj");
    }

    #[test]
    fn header_values_skip_absent_and_null_arguments() {
        let designated = headers(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "debug": {"type": "boolean", "x-mcp-header": "Debug"},
            "float_val": {"type": "number"}
        }}))
        .unwrap();
        let pairs = |values: Vec<(String, String)>| {
            let mut values: Vec<String> = values.into_iter().map(|(k, v)| format!("{k}: {v}")).collect();
            values.sort();
            values
        };
        let arguments = json!({"region": "us-west1", "priority": 42, "verbose": null, "float_val": 3.5});
        assert_eq!(
            pairs(param_header_values(&designated, arguments.as_object())),
            ["mcp-param-priority: 42", "mcp-param-region: us-west1"]
        );
        let arguments = json!({"region": "x", "priority": 1, "verbose": false, "debug": true});
        assert_eq!(
            pairs(param_header_values(&designated, arguments.as_object())),
            ["mcp-param-debug: true", "mcp-param-priority: 1", "mcp-param-region: x", "mcp-param-verbose: false"]
        );
        assert!(param_header_values(&designated, None).is_empty());
    }
}
