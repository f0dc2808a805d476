//! Elicitation: `elicitation/create` (2025-06-18 on), by which a server asks the user for input
//! through the client, either as a form described by a flat schema of primitive fields or
//! (2025-11-25 on) by sending the user to a URL; [`ElicitResult`]; and
//! `notifications/elicitation/complete` (2025-11-25 only) for URL mode.
//!
//! The form schema is typed ([`PrimitiveSchemaDefinition`]) but anything that fits none of the
//! spec's field kinds is kept as written. In 2026-07-28 the request travels inside an
//! `input_required` result (see [`input`](super::input)) rather than as a JSON-RPC request.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Number, Value};

use super::open_enum::{const_tag, open_enum};
use super::*;

const_tag!(
    /// `mode: "form"`.
    FormMode = "form"
);
const_tag!(
    /// `mode: "url"`.
    UrlMode = "url"
);
const_tag!(
    /// `type: "object"`.
    ObjectType = "object"
);
const_tag!(
    /// `type: "string"`.
    StringType = "string"
);
const_tag!(
    /// `type: "boolean"`.
    BooleanType = "boolean"
);
const_tag!(
    /// `type: "array"`.
    ArrayType = "array"
);

/// `type` of a [`NumberSchema`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Whole numbers only.
    Integer,
    /// Any number.
    Number,
}

open_enum!(
    /// `format` of a [`StringSchema`]. Open: an unknown format is kept.
    StringFormat {
        /// An email address.
        Email = "email",
        /// A URI.
        Uri = "uri",
        /// A calendar date.
        Date = "date",
        /// A date and time.
        DateTime = "date-time",
    }
);

/// A free-text field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Expected format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// Pre-filled value (2025-11-25 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A numeric field; bounds and default kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `"integer"` or `"number"`.
    #[serde(rename = "type")]
    pub kind: NumberType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    /// Upper bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    /// Pre-filled value (2025-11-25 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Number>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A yes/no field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    #[serde(rename = "type")]
    pub kind: BooleanType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Pre-filled value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Pick one of plain string values (2025-11-25 name; the 2025-06-18 `EnumSchema` without
/// `enumNames` has this shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Pre-selected choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One choice with a display label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitledEnumOption {
    /// The value sent back.
    #[serde(rename = "const")]
    pub value: String,
    /// What the user sees.
    pub title: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Pick one of labelled values (`oneOf` of `const`/`title`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    pub one_of: Vec<TitledEnumOption>,
    /// Pre-selected choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `items` of an [`UntitledMultiSelectEnumSchema`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `items` of a [`TitledMultiSelectEnumSchema`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The choices.
    pub any_of: Vec<TitledEnumOption>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Pick several of plain string values (2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub kind: ArrayType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: UntitledEnumItems,
    /// Pre-selected choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Pick several of labelled values (2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub kind: ArrayType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: TitledEnumItems,
    /// Pre-selected choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Pick one value, labels given in a parallel `enumNames` array (the 2025-06-18 form, kept
/// for compatibility).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Their labels, same order.
    pub enum_names: Vec<String>,
    /// Pre-selected choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One field of a form's `requestedSchema`.
///
/// Decoding looks at `type` and at which of `enum`, `enumNames`, `oneOf`, `items` are present;
/// a field that fits no kind is kept whole in `Other`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PrimitiveSchemaDefinition {
    /// Free text.
    String(StringSchema),
    /// A number.
    Number(NumberSchema),
    /// Yes/no.
    Boolean(BooleanSchema),
    /// One of plain values.
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// One of labelled values.
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// Several of plain values.
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// Several of labelled values.
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    /// One value with `enumNames` labels.
    LegacyTitledEnum(LegacyTitledEnumSchema),
    /// Anything else, as written.
    Other(Map<String, Value>),
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use PrimitiveSchemaDefinition as P;
        fn parse<T: serde::de::DeserializeOwned>(
            map: &Map<String, Value>,
            wrap: fn(T) -> PrimitiveSchemaDefinition,
        ) -> Option<PrimitiveSchemaDefinition> {
            serde_json::from_value(Value::Object(map.clone())).ok().map(wrap)
        }
        let map = Map::deserialize(d)?;
        let has = |k: &str| map.contains_key(k);
        let parsed = match map.get("type").and_then(Value::as_str) {
            Some("string") if has("oneOf") => parse(&map, P::TitledSingleSelectEnum),
            Some("string") if has("enum") && has("enumNames") => parse(&map, P::LegacyTitledEnum),
            Some("string") if has("enum") => parse(&map, P::UntitledSingleSelectEnum),
            Some("string") => parse(&map, P::String),
            Some("integer" | "number") => parse(&map, P::Number),
            Some("boolean") => parse(&map, P::Boolean),
            Some("array") => match map.get("items") {
                Some(items) if items.get("anyOf").is_some() => parse(&map, P::TitledMultiSelectEnum),
                Some(items) if items.get("enum").is_some() => parse(&map, P::UntitledMultiSelectEnum),
                _ => None,
            },
            _ => None,
        };
        Ok(parsed.unwrap_or(P::Other(map)))
    }
}

/// The fields of a form ([`ElicitationSchema::properties`]), in the order they were written
/// or added: a client shows them in that order, so a relay that decodes and re-encodes a form
/// keeps it. A name given again replaces its field in place. Written as a JSON object, and
/// compared as one: two forms with the same fields are equal in any order (as `indexmap`'s
/// maps are; a form read back through a `serde_json::Value` comes sorted).
#[derive(Debug, Clone, Default)]
pub struct FormFields(Vec<(String, PrimitiveSchemaDefinition)>);

impl FormFields {
    /// No fields.
    pub fn new() -> FormFields {
        FormFields(Vec::new())
    }

    /// Adds `field` under `name` (last), or replaces the field of that name where it stands;
    /// returns the field replaced.
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        field: PrimitiveSchemaDefinition,
    ) -> Option<PrimitiveSchemaDefinition> {
        let name = name.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, old)) => Some(std::mem::replace(old, field)),
            None => {
                self.0.push((name, field));
                None
            }
        }
    }

    /// The field named `name`.
    pub fn get(&self, name: &str) -> Option<&PrimitiveSchemaDefinition> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }

    /// Whether a field is named `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// How many fields.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No field at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &PrimitiveSchemaDefinition)> {
        self.0.iter().map(|(n, f)| (n, f))
    }

    /// The names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(n, _)| n)
    }

    /// The fields' schemas, in order.
    pub fn values(&self) -> impl Iterator<Item = &PrimitiveSchemaDefinition> {
        self.0.iter().map(|(_, f)| f)
    }
}

impl PartialEq for FormFields {
    fn eq(&self, other: &FormFields) -> bool {
        self.len() == other.len() && self.iter().all(|(name, field)| other.get(name) == Some(field))
    }
}

impl std::ops::Index<&str> for FormFields {
    type Output = PrimitiveSchemaDefinition;

    fn index(&self, name: &str) -> &PrimitiveSchemaDefinition {
        self.get(name).unwrap_or_else(|| panic!("no field named {name:?}"))
    }
}

impl<'a> IntoIterator for &'a FormFields {
    type Item = (&'a String, &'a PrimitiveSchemaDefinition);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, PrimitiveSchemaDefinition)>,
        fn(&'a (String, PrimitiveSchemaDefinition)) -> (&'a String, &'a PrimitiveSchemaDefinition),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(n, f)| (n, f))
    }
}

impl<N: Into<String>> FromIterator<(N, PrimitiveSchemaDefinition)> for FormFields {
    fn from_iter<I: IntoIterator<Item = (N, PrimitiveSchemaDefinition)>>(fields: I) -> FormFields {
        let mut all = FormFields::new();
        for (name, field) in fields {
            all.insert(name, field);
        }
        all
    }
}

impl Serialize for FormFields {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, field) in &self.0 {
            map.serialize_entry(name, field)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for FormFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<FormFields, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = FormFields;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of field schemas")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<FormFields, A::Error> {
                let mut fields = FormFields(Vec::with_capacity(map.size_hint().unwrap_or(0).min(64)));
                while let Some((name, field)) = map.next_entry::<String, PrimitiveSchemaDefinition>()? {
                    fields.insert(name, field);
                }
                Ok(fields)
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

/// The `requestedSchema` of a form: a flat object schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationSchema {
    /// JSON Schema dialect (2025-11-25 on).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub kind: ObjectType,
    /// The fields, by name, in the order the form lists them.
    pub properties: FormFields,
    /// Names of the fields that must be filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitationSchema {
    /// A form with no fields yet: add them with [`field`](Self::field) and
    /// [`required_field`](Self::required_field).
    pub fn new() -> ElicitationSchema {
        ElicitationSchema {
            schema: None,
            kind: ObjectType::Value,
            properties: FormFields::new(),
            required: None,
            extra: Extra::new(),
        }
    }

    /// Adds a field the user may leave empty.
    pub fn field(mut self, name: impl Into<String>, field: impl Into<PrimitiveSchemaDefinition>) -> ElicitationSchema {
        self.properties.insert(name.into(), field.into());
        self
    }

    /// Adds a field the user must fill.
    pub fn required_field(
        mut self,
        name: impl Into<String>,
        field: impl Into<PrimitiveSchemaDefinition>,
    ) -> ElicitationSchema {
        let name = name.into();
        self.required.get_or_insert_with(Vec::new).push(name.clone());
        self.field(name, field)
    }
}

impl Default for ElicitationSchema {
    fn default() -> ElicitationSchema {
        ElicitationSchema::new()
    }
}

/// Builder methods shared by the field kinds: `title` and `description`.
macro_rules! labelled {
    ($kind:ident, $variant:ident) => {
        impl $kind {
            /// A short label for the field.
            pub fn title(mut self, title: impl Into<String>) -> $kind {
                self.title = Some(title.into());
                self
            }

            /// What the field is for.
            pub fn description(mut self, description: impl Into<String>) -> $kind {
                self.description = Some(description.into());
                self
            }
        }

        impl From<$kind> for PrimitiveSchemaDefinition {
            fn from(field: $kind) -> PrimitiveSchemaDefinition {
                PrimitiveSchemaDefinition::$variant(field)
            }
        }
    };
}

impl StringSchema {
    /// A free-text field with no bounds.
    pub fn new() -> StringSchema {
        StringSchema {
            kind: StringType::Value,
            title: None,
            description: None,
            min_length: None,
            max_length: None,
            format: None,
            default: None,
            extra: Extra::new(),
        }
    }

    /// Bounds on the text's length, in characters.
    pub fn length(mut self, min: Option<u64>, max: Option<u64>) -> StringSchema {
        (self.min_length, self.max_length) = (min, max);
        self
    }

    /// The text's form (`email`, `uri`, `date`, `date-time`).
    pub fn format(mut self, format: StringFormat) -> StringSchema {
        self.format = Some(format);
        self
    }

    /// The value offered before the user types.
    pub fn default_value(mut self, default: impl Into<String>) -> StringSchema {
        self.default = Some(default.into());
        self
    }
}

impl Default for StringSchema {
    fn default() -> StringSchema {
        StringSchema::new()
    }
}

impl NumberSchema {
    /// A whole-number field with no bounds.
    pub fn integer() -> NumberSchema {
        NumberSchema::of(NumberType::Integer)
    }

    /// A number field with no bounds.
    pub fn number() -> NumberSchema {
        NumberSchema::of(NumberType::Number)
    }

    fn of(kind: NumberType) -> NumberSchema {
        NumberSchema {
            kind,
            title: None,
            description: None,
            minimum: None,
            maximum: None,
            default: None,
            extra: Extra::new(),
        }
    }

    /// The least value allowed.
    pub fn minimum(mut self, minimum: impl Into<Number>) -> NumberSchema {
        self.minimum = Some(minimum.into());
        self
    }

    /// The greatest value allowed.
    pub fn maximum(mut self, maximum: impl Into<Number>) -> NumberSchema {
        self.maximum = Some(maximum.into());
        self
    }

    /// The value offered before the user types.
    pub fn default_value(mut self, default: impl Into<Number>) -> NumberSchema {
        self.default = Some(default.into());
        self
    }
}

impl BooleanSchema {
    /// A yes/no field.
    pub fn new() -> BooleanSchema {
        BooleanSchema { kind: BooleanType::Value, title: None, description: None, default: None, extra: Extra::new() }
    }

    /// The value offered before the user chooses.
    pub fn default_value(mut self, default: bool) -> BooleanSchema {
        self.default = Some(default);
        self
    }
}

impl Default for BooleanSchema {
    fn default() -> BooleanSchema {
        BooleanSchema::new()
    }
}

impl TitledEnumOption {
    /// A choice sending back `value`, shown as `title`.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> TitledEnumOption {
        TitledEnumOption { value: value.into(), title: title.into(), extra: Extra::new() }
    }
}

fn strings<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> Vec<String> {
    items.into_iter().map(Into::into).collect()
}

impl UntitledSingleSelectEnumSchema {
    /// Pick one of `values`.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(values: I) -> UntitledSingleSelectEnumSchema {
        UntitledSingleSelectEnumSchema {
            kind: StringType::Value,
            title: None,
            description: None,
            values: strings(values),
            default: None,
            extra: Extra::new(),
        }
    }

    /// The choice offered before the user picks.
    pub fn default_value(mut self, default: impl Into<String>) -> UntitledSingleSelectEnumSchema {
        self.default = Some(default.into());
        self
    }
}

impl TitledSingleSelectEnumSchema {
    /// Pick one of `options`, each shown by its title.
    pub fn new(options: impl IntoIterator<Item = TitledEnumOption>) -> TitledSingleSelectEnumSchema {
        TitledSingleSelectEnumSchema {
            kind: StringType::Value,
            title: None,
            description: None,
            one_of: options.into_iter().collect(),
            default: None,
            extra: Extra::new(),
        }
    }

    /// The choice (a value) offered before the user picks.
    pub fn default_value(mut self, default: impl Into<String>) -> TitledSingleSelectEnumSchema {
        self.default = Some(default.into());
        self
    }
}

impl UntitledMultiSelectEnumSchema {
    /// Pick any of `values` (2025-11-25 on).
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(values: I) -> UntitledMultiSelectEnumSchema {
        UntitledMultiSelectEnumSchema {
            kind: ArrayType::Value,
            title: None,
            description: None,
            min_items: None,
            max_items: None,
            items: UntitledEnumItems { kind: StringType::Value, values: strings(values), extra: Extra::new() },
            default: None,
            extra: Extra::new(),
        }
    }

    /// How few and how many choices the user may pick.
    pub fn picks(mut self, min: Option<u64>, max: Option<u64>) -> UntitledMultiSelectEnumSchema {
        (self.min_items, self.max_items) = (min, max);
        self
    }

    /// The choices offered before the user picks.
    pub fn default_values<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        defaults: I,
    ) -> UntitledMultiSelectEnumSchema {
        self.default = Some(strings(defaults));
        self
    }
}

impl TitledMultiSelectEnumSchema {
    /// Pick any of `options`, each shown by its title (2025-11-25 on).
    pub fn new(options: impl IntoIterator<Item = TitledEnumOption>) -> TitledMultiSelectEnumSchema {
        TitledMultiSelectEnumSchema {
            kind: ArrayType::Value,
            title: None,
            description: None,
            min_items: None,
            max_items: None,
            items: TitledEnumItems { any_of: options.into_iter().collect(), extra: Extra::new() },
            default: None,
            extra: Extra::new(),
        }
    }

    /// How few and how many choices the user may pick.
    pub fn picks(mut self, min: Option<u64>, max: Option<u64>) -> TitledMultiSelectEnumSchema {
        (self.min_items, self.max_items) = (min, max);
        self
    }

    /// The choices (values) offered before the user picks.
    pub fn default_values<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        defaults: I,
    ) -> TitledMultiSelectEnumSchema {
        self.default = Some(strings(defaults));
        self
    }
}

impl LegacyTitledEnumSchema {
    /// Pick one of `values`, shown by `names` in the same order (the 2025-06-18 `enumNames`
    /// form, for clients of that revision).
    pub fn new<I: IntoIterator<Item = S>, J: IntoIterator<Item = T>, S: Into<String>, T: Into<String>>(
        values: I,
        names: J,
    ) -> LegacyTitledEnumSchema {
        LegacyTitledEnumSchema {
            kind: StringType::Value,
            title: None,
            description: None,
            values: strings(values),
            enum_names: strings(names),
            default: None,
            extra: Extra::new(),
        }
    }

    /// The choice offered before the user picks.
    pub fn default_value(mut self, default: impl Into<String>) -> LegacyTitledEnumSchema {
        self.default = Some(default.into());
        self
    }
}

labelled!(StringSchema, String);
labelled!(NumberSchema, Number);
labelled!(BooleanSchema, Boolean);
labelled!(UntitledSingleSelectEnumSchema, UntitledSingleSelectEnum);
labelled!(TitledSingleSelectEnumSchema, TitledSingleSelectEnum);
labelled!(UntitledMultiSelectEnumSchema, UntitledMultiSelectEnum);
labelled!(TitledMultiSelectEnumSchema, TitledMultiSelectEnum);
labelled!(LegacyTitledEnumSchema, LegacyTitledEnum);

/// Params of a form-mode elicitation (the only mode before 2025-11-25, where `mode` is absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `"form"`, or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormMode>,
    /// What to tell the user.
    pub message: String,
    /// The fields to fill.
    pub requested_schema: ElicitationSchema,
    /// Run as a task (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of a URL-mode elicitation (2025-11-25 on): the user is sent to `url`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestURLParams {
    /// Always `"url"`.
    pub mode: UrlMode,
    /// Why the user should go there.
    pub message: String,
    /// Where to send the user.
    pub url: String,
    /// Id for `notifications/elicitation/complete` (required in 2025-11-25, gone in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Run as a task (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `elicitation/create`, told apart by `mode` (`"url"`, or `"form"`/absent).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// Form mode.
    Form(ElicitRequestFormParams),
    /// URL mode.
    Url(ElicitRequestURLParams),
    /// A mode this crate does not know, kept whole.
    Other(Map<String, Value>),
}

/// Decoded from the params' text (not through a `Value`, whose objects sort their members), so
/// a form's fields keep the order the server wrote them in.
impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Mode {
            mode: Option<Value>,
        }
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        let text = raw.get();
        let Mode { mode } = serde_json::from_str(text).map_err(D::Error::custom)?;
        match mode {
            None => serde_json::from_str(text).map(Self::Form),
            Some(Value::String(m)) if m == "form" => serde_json::from_str(text).map(Self::Form),
            Some(Value::String(m)) if m == "url" => serde_json::from_str(text).map(Self::Url),
            Some(_) => serde_json::from_str(text).map(Self::Other),
        }
        .map_err(D::Error::custom)
    }
}

open_enum!(
    /// What the user did. Open: an unknown action is kept (a receiver should treat it like
    /// `cancel`).
    ElicitAction {
        /// Submitted (form: `content` holds the answers).
        Accept = "accept",
        /// Explicitly refused.
        Decline = "decline",
        /// Dismissed without choosing.
        Cancel = "cancel",
    }
);

/// One answer in [`ElicitResult::content`]. Numbers kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitValue {
    /// Text or a single choice.
    String(String),
    /// A number.
    Number(Number),
    /// Yes/no.
    Boolean(bool),
    /// Several choices (2025-11-25 on).
    StringArray(Vec<String>),
    /// Anything else, as written.
    Other(Value),
}

impl From<Value> for ElicitValue {
    /// The kind a decoder would find in `value`.
    fn from(value: Value) -> ElicitValue {
        match value {
            Value::String(s) => ElicitValue::String(s),
            Value::Number(n) => ElicitValue::Number(n),
            Value::Bool(b) => ElicitValue::Boolean(b),
            Value::Array(items) if items.iter().all(Value::is_string) => ElicitValue::StringArray(
                items.into_iter().filter_map(|item| item.as_str().map(str::to_owned)).collect(),
            ),
            other => ElicitValue::Other(other),
        }
    }
}

/// Result of `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The answers, by field name (form mode, on accept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitResult {
    /// The user submitted the form with these answers.
    pub fn accept(content: BTreeMap<String, ElicitValue>) -> ElicitResult {
        ElicitResult::of(ElicitAction::Accept, Some(content))
    }

    /// The user submitted the form with `answers`, a value of the form's own type (a struct
    /// whose fields serialize to strings, numbers, booleans or lists of strings; a `None` field
    /// is left out).
    ///
    /// # Errors
    /// When `answers` does not serialize to an object, or one of its fields is not of those
    /// kinds (the field is named): the spec's forms hold nothing else.
    pub fn accept_typed<T: Serialize>(answers: &T) -> Result<ElicitResult, String> {
        let Value::Object(fields) = serde_json::to_value(answers).map_err(|e| e.to_string())? else {
            return Err("an elicitation's answers are an object of fields".to_owned());
        };
        let mut content = BTreeMap::new();
        for (name, value) in fields {
            match ElicitValue::from(value) {
                ElicitValue::Other(Value::Null) => {}
                ElicitValue::Other(_) => {
                    return Err(format!("the answer `{name}` is not a string, number, boolean or list of strings"))
                }
                value => {
                    content.insert(name, value);
                }
            }
        }
        Ok(ElicitResult::accept(content))
    }

    /// The user refused.
    pub fn decline() -> ElicitResult {
        ElicitResult::of(ElicitAction::Decline, None)
    }

    /// The user dismissed the request without choosing.
    pub fn cancel() -> ElicitResult {
        ElicitResult::of(ElicitAction::Cancel, None)
    }

    fn of(action: ElicitAction, content: Option<BTreeMap<String, ElicitValue>>) -> ElicitResult {
        ElicitResult { action, content, meta: None, extra: Extra::new() }
    }
}

/// Params of `notifications/elicitation/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The URL-mode elicitation that finished.
    pub elicitation_id: String,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

method!(
    /// `elicitation/create`: the server asks the user for input via the client. From
    /// 2026-07-28 it is an input request inside a result instead.
    Elicit, "elicitation/create", ServerToClient, ElicitRequestParams, ElicitResult, since V2025_06_18, removed V2026_07_28
);
notification!(
    /// `notifications/elicitation/complete`: a URL-mode elicitation has finished.
    ElicitationComplete, "notifications/elicitation/complete", ServerToClient, ElicitationCompleteNotificationParams, since V2025_11_25, removed V2026_07_28
);

/// Every method this module declares.
pub(crate) const METHODS: &[MethodInfo] =
    &[MethodInfo::request::<Elicit>(), MethodInfo::notification::<ElicitationComplete>()];

super::decode::decode_via_value!(ElicitResult);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::version::ProtocolVersion;
    use serde_json::json;

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&t).expect("encode"), v);
        t
    }

    #[test]
    fn the_enum_builders_write_each_kind_the_decoder_reads_back() {
        let form = ElicitationSchema::new()
            .required_field("size", UntitledSingleSelectEnumSchema::new(["s", "m"]).default_value("m"))
            .field(
                "colour",
                TitledSingleSelectEnumSchema::new([
                    TitledEnumOption::new("r", "Red"),
                    TitledEnumOption::new("g", "Green"),
                ])
                .title("Colour"),
            )
            .field(
                "tags",
                UntitledMultiSelectEnumSchema::new(["a", "b", "c"]).picks(Some(1), Some(2)).default_values(["a"]),
            )
            .field(
                "sides",
                TitledMultiSelectEnumSchema::new([TitledEnumOption::new("f", "Fries")]).description("Pick any"),
            )
            .field("plan", LegacyTitledEnumSchema::new(["free", "pro"], ["Free", "Pro"]).default_value("free"));
        let written = serde_json::to_value(&form).expect("encode");
        assert_eq!(
            written["properties"],
            json!({
                "size": {"type": "string", "enum": ["s", "m"], "default": "m"},
                "colour": {"type": "string", "title": "Colour", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
                "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "enum": ["a", "b", "c"]}, "default": ["a"]},
                "sides": {"type": "array", "description": "Pick any", "items": {"anyOf": [{"const": "f", "title": "Fries"}]}},
                "plan": {"type": "string", "enum": ["free", "pro"], "enumNames": ["Free", "Pro"], "default": "free"}
            })
        );
        let read: ElicitationSchema = serde_json::from_value(written).expect("decode");
        assert_eq!(read, form);
        assert!(matches!(read.properties["size"], PrimitiveSchemaDefinition::UntitledSingleSelectEnum(_)));
        assert!(matches!(read.properties["colour"], PrimitiveSchemaDefinition::TitledSingleSelectEnum(_)));
        assert!(matches!(read.properties["tags"], PrimitiveSchemaDefinition::UntitledMultiSelectEnum(_)));
        assert!(matches!(read.properties["sides"], PrimitiveSchemaDefinition::TitledMultiSelectEnum(_)));
        assert!(matches!(read.properties["plan"], PrimitiveSchemaDefinition::LegacyTitledEnum(_)));
    }

    #[test]
    fn a_typed_answer_becomes_the_forms_fields_and_a_nested_one_is_refused_by_name() {
        #[derive(Serialize)]
        struct Booking {
            name: String,
            travellers: u8,
            confirm: bool,
            seats: Vec<String>,
            note: Option<String>,
        }
        let answer = Booking { name: "Ada".into(), travellers: 2, confirm: true, seats: vec!["4A".into()], note: None };
        let result = ElicitResult::accept_typed(&answer).expect("a flat answer");
        assert_eq!(
            serde_json::to_value(&result).expect("encode"),
            json!({"action": "accept", "content": {"name": "Ada", "travellers": 2, "confirm": true, "seats": ["4A"]}})
        );

        #[derive(Serialize)]
        struct Nested {
            to: Booking,
        }
        let nested = Nested { to: answer };
        assert_eq!(
            ElicitResult::accept_typed(&nested).unwrap_err(),
            "the answer `to` is not a string, number, boolean or list of strings"
        );
        assert!(ElicitResult::accept_typed(&3).is_err());
    }

    #[test]
    fn the_builder_writes_what_the_spec_reads() {
        let form = ElicitationSchema::new()
            .required_field("name", StringSchema::new().title("Name").length(Some(1), Some(50)))
            .field("email", StringSchema::new().format(StringFormat::Email).default_value("a@b.c"))
            .required_field("travellers", NumberSchema::integer().minimum(1).maximum(9).default_value(2))
            .field("ratio", NumberSchema::number().description("0 to 1"))
            .field("confirm", BooleanSchema::new().default_value(false));
        let written = serde_json::to_value(&form).unwrap();
        assert_eq!(
            written,
            json!({"type": "object", "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 1, "maxLength": 50},
                "email": {"type": "string", "format": "email", "default": "a@b.c"},
                "travellers": {"type": "integer", "minimum": 1, "maximum": 9, "default": 2},
                "ratio": {"type": "number", "description": "0 to 1"},
                "confirm": {"type": "boolean", "default": false}},
              "required": ["name", "travellers"]})
        );
        assert_eq!(serde_json::from_value::<ElicitationSchema>(written).unwrap(), form, "read back as built");
    }

    #[test]
    fn a_value_becomes_the_answer_kind_a_decoder_finds() {
        for value in [json!("a"), json!(2.5), json!(true), json!(["x", "y"]), json!([1]), json!({"k": 1}), json!(null)]
        {
            let decoded: ElicitValue = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(ElicitValue::from(value.clone()), decoded, "{value}");
        }
        let accepted = ElicitResult::accept(BTreeMap::from([("n".to_owned(), ElicitValue::from(json!(3)))]));
        assert_eq!(serde_json::to_value(accepted).unwrap(), json!({"action": "accept", "content": {"n": 3}}));
        assert_eq!(serde_json::to_value(ElicitResult::decline()).unwrap(), json!({"action": "decline"}));
        assert_eq!(serde_json::to_value(ElicitResult::cancel()).unwrap(), json!({"action": "cancel"}));
    }

    #[test]
    fn form_mode_with_every_field_kind() {
        let p: ElicitRequestParams = rt(json!({
            "message": "Please provide inputs",
            "requestedSchema": {"type": "object", "title": "Prefs", "properties": {
                "name": {"title": "String", "type": "string", "description": "Your name",
                         "minLength": 1, "maxLength": 50},
                "email": {"type": "string", "format": "email"},
                "check": {"type": "boolean", "default": false},
                "integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
                "number": {"type": "number", "minimum": 0, "maximum": 1000, "default": 2.5},
                "untitled": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "titled": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
                "multi": {"type": "array", "minItems": 1, "maxItems": 3,
                          "items": {"type": "string", "enum": ["x", "y"]}, "default": ["x"]},
                "titledMulti": {"type": "array",
                                "items": {"anyOf": [{"const": "f1", "title": "Tuna"}]}},
                "legacy": {"type": "string", "enum": ["p1"], "enumNames": ["Cats"]},
                "weird": {"type": "object", "properties": {}}
            }, "required": ["name"]}
        }));
        let ElicitRequestParams::Form(f) = p else { panic!("not form") };
        assert!(f.mode.is_none());
        let props = &f.requested_schema.properties;
        use PrimitiveSchemaDefinition as P;
        assert!(matches!(&props["name"], P::String(s) if s.max_length == Some(50)));
        assert!(matches!(&props["email"], P::String(s) if s.format == Some(StringFormat::Email)));
        assert!(matches!(&props["check"], P::Boolean(b) if b.default == Some(false)));
        assert!(matches!(&props["integer"], P::Number(n) if n.kind == NumberType::Integer));
        assert!(matches!(&props["number"], P::Number(n) if n.default.as_ref().unwrap().is_f64()));
        assert!(matches!(&props["untitled"], P::UntitledSingleSelectEnum(_)));
        assert!(matches!(&props["titled"], P::TitledSingleSelectEnum(e) if e.one_of[0].value == "h1"));
        assert!(matches!(&props["multi"], P::UntitledMultiSelectEnum(_)));
        assert!(matches!(&props["titledMulti"], P::TitledMultiSelectEnum(_)));
        assert!(matches!(&props["legacy"], P::LegacyTitledEnum(_)));
        assert!(matches!(&props["weird"], P::Other(_)));
        assert_eq!(f.requested_schema.extra["title"], "Prefs");
    }

    #[test]
    fn form_mode_explicit_2025_11_25() {
        let p: ElicitRequestParams = rt(json!({
            "mode": "form", "message": "m",
            "requestedSchema": {"type": "object", "properties": {}},
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}
        }));
        assert!(matches!(p, ElicitRequestParams::Form(ref f) if f.mode.is_some()));
    }

    #[test]
    fn url_mode_2025_11_25_and_2026_07_28() {
        let p: ElicitRequestParams = rt(json!({
            "mode": "url", "message": "Authorize access",
            "url": "https://mcp.example.com/oauth?state=1", "elicitationId": "e-1"
        }));
        let ElicitRequestParams::Url(u) = p else { panic!("not url") };
        assert_eq!(u.elicitation_id.as_deref(), Some("e-1"));
        // 2026-07-28 drops elicitationId.
        let p: ElicitRequestParams = rt(json!({
            "mode": "url", "url": "https://mcp.example.com/ui/set_api_key",
            "message": "Please provide your API key to continue."
        }));
        assert!(matches!(p, ElicitRequestParams::Url(ref u) if u.elicitation_id.is_none()));
        // URL mode without url is an error, an unknown mode is kept.
        assert!(serde_json::from_value::<ElicitRequestParams>(json!({"mode": "url", "message": ""})).is_err());
        let p: ElicitRequestParams = rt(json!({"mode": "voice", "message": "say it"}));
        assert!(matches!(p, ElicitRequestParams::Other(_)));
    }

    #[test]
    fn results() {
        let r: ElicitResult = rt(json!({"action": "accept", "content": {
            "name": "octocat", "age": 30, "ratio": 0.5, "ok": true, "tags": ["a", "b"]
        }}));
        assert_eq!(r.action, ElicitAction::Accept);
        let c = r.content.unwrap();
        assert!(matches!(c["age"], ElicitValue::Number(_)));
        assert!(matches!(c["ok"], ElicitValue::Boolean(true)));
        assert!(matches!(c["tags"], ElicitValue::StringArray(_)));
        let r: ElicitResult = rt(json!({"action": "accept"}));
        assert!(r.content.is_none());
        let r: ElicitResult = rt(json!({"action": "decline"}));
        assert_eq!(r.action, ElicitAction::Decline);
        let r: ElicitResult = rt(json!({"action": "snooze"}));
        assert_eq!(r.action, ElicitAction::Other("snooze".into()));
    }

    #[test]
    fn complete_notification() {
        let n: ElicitationCompleteNotificationParams = rt(json!({"elicitationId": "e-1"}));
        assert_eq!(n.elicitation_id, "e-1");
    }

    #[test]
    fn method_rows() {
        assert_eq!(METHODS[0].direction, Direction::ServerToClient);
        assert!(!METHODS[0].exists_in(ProtocolVersion::V2025_03_26));
        assert!(METHODS[0].exists_in(ProtocolVersion::V2025_06_18));
        assert!(METHODS[1].exists_in(ProtocolVersion::V2025_11_25));
        assert!(!METHODS[1].exists_in(ProtocolVersion::V2025_06_18));
        assert!(!METHODS[1].exists_in(ProtocolVersion::V2026_07_28));
    }

    #[test]
    fn a_forms_fields_keep_their_order_through_decode_and_encode() {
        let text = r#"{"message":"m","requestedSchema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"boolean"},"mid":{"type":"number"}},"required":["zeta"]}}"#;
        let params: ElicitRequestParams = serde_json::from_str(text).unwrap();
        let ElicitRequestParams::Form(form) = &params else { panic!("{params:?}") };
        assert_eq!(form.requested_schema.properties.keys().collect::<Vec<_>>(), ["zeta", "alpha", "mid"]);
        assert_eq!(serde_json::to_string(&params).unwrap(), text);
        // Through a Body's raw text too, as a relay decodes it.
        let raw = serde_json::value::RawValue::from_string(text.to_owned()).unwrap();
        let again: ElicitRequestParams = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(again, params);
        // The builder keeps the order fields are added in; a name added again stays in place.
        let built = ElicitationSchema::new()
            .field("b", BooleanSchema::new())
            .required_field("a", StringSchema::new())
            .field("b", StringSchema::new());
        let names: Vec<&String> = built.properties.keys().collect();
        assert_eq!(names, ["b", "a"]);
        assert!(matches!(built.properties["b"], PrimitiveSchemaDefinition::String(_)));
        // A duplicated member: the last one wins, in the first one's place (as serde_json's map).
        let dup: FormFields =
            serde_json::from_str(r#"{"x":{"type":"string"},"y":{"type":"boolean"},"x":{"type":"number"}}"#).unwrap();
        assert_eq!(dup.keys().collect::<Vec<_>>(), ["x", "y"]);
        assert!(matches!(dup["x"], PrimitiveSchemaDefinition::Number(_)));
    }
}
