//! JSON Schemas derived from Rust types (feature `schema`): what a typed tool declares as its
//! `inputSchema` and `outputSchema`, made by [`schemars`] in the JSON Schema 2020-12 dialect
//! (the default dialect of MCP 2025-11-25, `basic/index` "JSON Schema Usage"), with `$schema`
//! naming it.
//!
//! What the derive gives, as schemars writes it: doc comments become `description`s, an
//! `Option` field is not `required`, a unit-only enum is an `enum` of strings and an enum with
//! data a `oneOf`, nested types go to `$defs` and are reached by `$ref`; serde attributes
//! (`rename_all`, `default`, `deny_unknown_fields` …) are followed. An input schema follows
//! what the type accepts (`Deserialize`), an output schema what it writes (`Serialize`).
//!
//! Not here: validation (the server's `schema` module checks arguments and results against
//! these schemas), and the typed handlers (`ServerBuilder::derived_tool`).

use serde_json::Value;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;

/// A derived schema MCP cannot use as a tool's input or output schema: its root is not
/// `type: object` (MCP asks for an object schema; a tuple, a number or a bare enum is none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnObject {
    /// The Rust type, as `std::any::type_name` spells it.
    pub type_name: &'static str,
    /// The derived root `type`, if any (`"string"`, `["string", "null"]` …), as JSON.
    pub found: String,
}

impl std::fmt::Display for NotAnObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the schema of {} is not an object schema (its type is {})", self.type_name, self.found)
    }
}

impl std::error::Error for NotAnObject {}

/// The JSON Schema of what `T` accepts when deserialized (a tool's `inputSchema`).
///
/// # Errors
/// [`NotAnObject`] when the root of the schema is not `type: object`.
pub fn input_schema<T: JsonSchema + ?Sized>() -> Result<Value, NotAnObject> {
    object::<T>(SchemaSettings::draft2020_12().for_deserialize())
}

/// The JSON Schema of what `T` writes when serialized (a tool's `outputSchema`, the shape of
/// its `structuredContent`).
///
/// # Errors
/// [`NotAnObject`] when the root of the schema is not `type: object` (`structuredContent` is an
/// object up to 2025-11-25).
pub fn output_schema<T: JsonSchema + ?Sized>() -> Result<Value, NotAnObject> {
    object::<T>(SchemaSettings::draft2020_12().for_serialize())
}

fn object<T: JsonSchema + ?Sized>(settings: SchemaSettings) -> Result<Value, NotAnObject> {
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    // schemars titles the root with the Rust type's name (`AddArgs`): a detail of the server's
    // code, not a title for a user. A title the type sets itself (`#[schemars(title = …)]`)
    // stays.
    if let Some(map) = schema.as_object_mut() {
        if map.get("title").and_then(Value::as_str) == Some(T::schema_name().as_ref()) {
            map.remove("title");
        }
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(schema),
        other => Err(NotAnObject {
            type_name: std::any::type_name::<T>(),
            found: other.map_or_else(|| "absent".to_owned(), Value::to_string),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;

    /// A trip to plan.
    #[derive(Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Trip {
        /// Where to go.
        destination: Place,
        /// Who travels, at least one.
        travellers: Vec<String>,
        /// How many nights, if known.
        nights: Option<u32>,
        /// How to travel.
        mode: Mode,
        /// Extra wishes, by topic.
        wishes: BTreeMap<String, String>,
        /// A budget rule.
        budget: Budget,
    }

    /// A place on the map.
    #[derive(Deserialize, Serialize, JsonSchema)]
    #[allow(dead_code)]
    struct Place {
        /// The city.
        city: String,
        /// Latitude and longitude.
        at: Option<[f64; 2]>,
    }

    /// How to travel.
    #[derive(Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Mode {
        /// By train.
        Train,
        /// By plane.
        Plane,
    }

    /// A spending limit.
    #[derive(Deserialize, Serialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Budget {
        /// No limit.
        Open,
        /// At most this much.
        Capped {
            /// In euros.
            euros: u32,
        },
    }

    #[test]
    fn nested_structs_enums_options_lists_and_maps_as_schemars_derives_them() {
        let defs = json!({
            "Place": {
                "description": "A place on the map.",
                "type": "object",
                "properties": {
                    "city": {"description": "The city.", "type": "string"},
                    "at": {
                        "description": "Latitude and longitude.",
                        "type": ["array", "null"],
                        "items": {"type": "number", "format": "double"},
                        "minItems": 2,
                        "maxItems": 2
                    }
                },
                "required": ["city"]
            },
            "Mode": {
                "description": "How to travel.",
                "oneOf": [
                    {"description": "By train.", "type": "string", "const": "train"},
                    {"description": "By plane.", "type": "string", "const": "plane"}
                ]
            },
            "Budget": {
                "description": "A spending limit.",
                "oneOf": [
                    {
                        "description": "No limit.",
                        "type": "object",
                        "properties": {"kind": {"type": "string", "const": "open"}},
                        "required": ["kind"]
                    },
                    {
                        "description": "At most this much.",
                        "type": "object",
                        "properties": {
                            "kind": {"type": "string", "const": "capped"},
                            "euros": {"description": "In euros.", "type": "integer", "format": "uint32", "minimum": 0}
                        },
                        "required": ["kind", "euros"]
                    }
                ]
            }
        });
        let expected = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "description": "A trip to plan.",
            "type": "object",
            "properties": {
                "destination": {"description": "Where to go.", "$ref": "#/$defs/Place"},
                "travellers": {"description": "Who travels, at least one.", "type": "array", "items": {"type": "string"}},
                "nights": {"description": "How many nights, if known.", "type": ["integer", "null"], "format": "uint32", "minimum": 0},
                "mode": {"description": "How to travel.", "$ref": "#/$defs/Mode"},
                "wishes": {"description": "Extra wishes, by topic.", "type": "object", "additionalProperties": {"type": "string"}},
                "budget": {"description": "A budget rule.", "$ref": "#/$defs/Budget"}
            },
            "required": ["destination", "travellers", "mode", "wishes", "budget"],
            "$defs": defs
        });
        let input = input_schema::<Trip>().unwrap();
        assert_eq!(input, expected, "{}", serde_json::to_string_pretty(&input).unwrap());
        // What `Trip` writes: `nights` may be null but is always there.
        let output = output_schema::<Trip>().unwrap();
        assert_eq!(
            output["required"],
            json!(["destination", "travellers", "nights", "mode", "wishes", "budget"]),
            "{}",
            serde_json::to_string_pretty(&output).unwrap()
        );
    }

    #[test]
    fn only_object_schemas_are_tool_schemas() {
        let err = input_schema::<Vec<String>>().unwrap_err();
        assert_eq!(err.found, "\"array\"");
        assert!(err.to_string().contains("is not an object schema"), "{err}");
        assert_eq!(output_schema::<Mode>().unwrap_err().found, "absent");
    }

    #[test]
    fn the_root_has_no_title_but_the_one_a_type_sets() {
        #[derive(Deserialize, JsonSchema)]
        #[schemars(title = "Search options")]
        #[allow(dead_code)]
        struct Options {
            query: String,
        }
        assert!(input_schema::<Place>().unwrap().get("title").is_none());
        assert_eq!(input_schema::<Options>().unwrap()["title"], "Search options");
    }
}
