//! The full validator (feature `validation`): the `jsonschema` crate, compiled with format
//! checks on, 2020-12 as the dialect of a schema without `$schema`, and no retriever that
//! reaches the network or the file system (its `resolve-http`/`resolve-file` features are off):
//! a remote `$ref` fails the compilation.
//!
//! Not here: the built-in subset (`builtin`), what callers do with a violation.

use std::borrow::Cow;

use jsonschema::error::ValidationErrorKind;
use jsonschema::ValidationError;
use serde_json::Value;

use super::{InvalidSchema, SchemaError, Violations, MAX_REPORTED};

/// The longest string quoted whole in a message; longer ones, arrays and objects are named
/// "value" instead (an error never copies a large argument).
const QUOTED: usize = 64;

pub(super) fn compile(schema: &Value) -> Result<jsonschema::Validator, InvalidSchema> {
    jsonschema::options().should_validate_formats(true).build(schema).map_err(|e| InvalidSchema { reason: message(&e) })
}

pub(super) fn check(validator: &jsonschema::Validator, value: &Value) -> Result<(), Violations> {
    if validator.is_valid(value) {
        return Ok(());
    }
    let mut violations = Violations { errors: Vec::new(), more: 0 };
    for e in validator.iter_errors(value) {
        collect(&e, &mut violations);
    }
    Err(violations)
}

/// Adds `e` to `violations`; for an `anyOf`/`oneOf` that no branch matched, the violations of
/// the one branch whose type fits the value instead, when only one does: `Option<T>` derives
/// `anyOf: [T, null]`, and "not valid under any of the schemas" would hide what is wrong inside
/// the `T`.
fn collect(e: &ValidationError<'_>, violations: &mut Violations) {
    if let ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } = e.kind() {
        let path = e.instance_path().as_str();
        let wrong_type = |b: &ValidationError<'_>| {
            matches!(b.kind(), ValidationErrorKind::Type { .. }) && b.instance_path().as_str() == path
        };
        let mut fitting = context.iter().filter(|branch| !branch.iter().all(wrong_type));
        if let (Some(branch), None) = (fitting.next(), fitting.next()) {
            for sub in branch {
                collect(sub, violations);
            }
            return;
        }
    }
    if violations.errors.len() < MAX_REPORTED {
        violations.errors.push(SchemaError { path: e.instance_path().to_string(), message: message(e) });
    } else {
        violations.more += 1;
    }
}

/// The validator's message, with the offending value replaced by "value" unless it is short.
fn message(e: &ValidationError<'_>) -> String {
    let instance: &Cow<'_, Value> = e.instance();
    let short = match instance.as_ref() {
        Value::String(s) => s.len() <= QUOTED,
        Value::Array(_) | Value::Object(_) => false,
        Value::Null | Value::Bool(_) | Value::Number(_) => true,
    };
    if short {
        e.to_string()
    } else {
        e.masked().to_string()
    }
}
