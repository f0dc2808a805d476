//! JSON values checked against a JSON Schema compiled once: tool arguments against an
//! `inputSchema` and `structuredContent` against an `outputSchema` (the server before a handler
//! runs and before a result leaves it; the client on a typed call).
//!
//! With feature `validation`, [`Validator`] is the `jsonschema` crate's: every keyword of JSON
//! Schema 2020-12 — the dialect of a schema that names none, as MCP 2025-11-25 sets
//! (`basic/index`, "JSON Schema Usage") — and of drafts 4, 6, 7 and 2019-09 when `$schema`
//! names them; `format` is checked (`email`, `date-time`, `uri`, `ipv4` …; a format it does not
//! know, such as schemars' `uint32`, passes); the schema itself is checked against its dialect's
//! meta-schema when compiled, and an unknown dialect is refused. `$ref`s resolve within the
//! schema: a remote one (`https://…`, `file:…`) is never fetched and makes the schema invalid
//! (2026-07-28 `basic/index`, "`$ref` Resolution").
//!
//! Without that feature, the built-in subset ([`validate`]): no dependency, the common keywords;
//! `pattern`, `format`, `if`/`then`/`else` and the rest pass unchecked (see its docs).
//!
//! Either way a violation names the JSON pointer of the offending value; a value is quoted in
//! the message only when it is short (a megabyte string is never copied into an error).
//!
//! Not here: what a server or client does with a violation (`server::schema`, the client's
//! typed call).

use std::fmt;

use serde_json::Value;

mod builtin;
#[cfg(feature = "validation")]
mod full;

#[cfg(feature = "server")]
pub(crate) use builtin::has_type;
pub use builtin::{unenforced, validate, SchemaError};

/// The most violations one [`Violations`] lists; the others are counted.
pub const MAX_REPORTED: usize = 8;

/// A schema compiled for checking values (see the module docs for what is checked).
pub struct Validator {
    #[cfg(feature = "validation")]
    compiled: jsonschema::Validator,
    #[cfg(not(feature = "validation"))]
    schema: Value,
}

impl fmt::Debug for Validator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Validator").finish_non_exhaustive()
    }
}

/// A schema that cannot be compiled: not a valid schema of its dialect, an unknown dialect, or
/// a `$ref` that does not resolve within it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidSchema {
    /// Why, as the validator says it.
    pub reason: String,
}

impl fmt::Display for InvalidSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid JSON Schema: {}", self.reason)
    }
}

impl std::error::Error for InvalidSchema {}

/// Why a value does not match a schema: each violation with its JSON pointer (at most
/// [`MAX_REPORTED`] of them; the built-in validator reports the first only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violations {
    /// The violations, in the validator's order.
    pub errors: Vec<SchemaError>,
    /// How many more there were.
    pub more: usize,
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        if self.more > 0 {
            write!(f, "; and {} more", self.more)?;
        }
        Ok(())
    }
}

impl std::error::Error for Violations {}

impl Validator {
    /// Compiles `schema`.
    ///
    /// # Errors
    /// [`InvalidSchema`] when it is not a valid schema (with feature `validation`: of its
    /// dialect, against the meta-schema; without it, only when it is neither an object nor a
    /// boolean).
    pub fn new(schema: &Value) -> Result<Validator, InvalidSchema> {
        #[cfg(feature = "validation")]
        {
            full::compile(schema).map(|compiled| Validator { compiled })
        }
        #[cfg(not(feature = "validation"))]
        {
            if schema.is_object() || schema.is_boolean() {
                Ok(Validator { schema: schema.clone() })
            } else {
                Err(InvalidSchema { reason: format!("a schema is an object or a boolean, not {schema}") })
            }
        }
    }

    /// Whether `value` matches (no error is built).
    pub fn is_valid(&self, value: &Value) -> bool {
        #[cfg(feature = "validation")]
        {
            self.compiled.is_valid(value)
        }
        #[cfg(not(feature = "validation"))]
        {
            validate(&self.schema, value).is_ok()
        }
    }

    /// Checks `value`.
    ///
    /// # Errors
    /// [`Violations`] naming where and why `value` does not match.
    pub fn check(&self, value: &Value) -> Result<(), Violations> {
        #[cfg(feature = "validation")]
        {
            full::check(&self.compiled, value)
        }
        #[cfg(not(feature = "validation"))]
        {
            validate(&self.schema, value).map_err(|e| Violations { errors: vec![e], more: 0 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn violations_list_each_path_and_count_the_rest() {
        let v = Violations {
            errors: vec![
                SchemaError { path: "/a".into(), message: "m1".into() },
                SchemaError { path: String::new(), message: "m2".into() },
            ],
            more: 3,
        };
        assert_eq!(v.to_string(), "/a: m1; m2; and 3 more");
    }

    #[test]
    fn a_compiled_schema_checks_what_the_built_in_one_checks() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]});
        let v = Validator::new(&schema).unwrap();
        assert!(v.is_valid(&json!({"a": 1})));
        assert!(!v.is_valid(&json!({"a": "x"})));
        let errors = v.check(&json!({"a": "x"})).unwrap_err();
        assert_eq!(errors.errors[0].path, "/a", "{errors}");
        assert!(Validator::new(&json!(3)).is_err());
    }
}
