//! JSON Schema for the checker: whether a tool's schema is itself valid under its dialect
//! (validated against the dialect's meta-schema, which [`boon`] carries), whether its `$ref`s
//! resolve inside it, and whether a value matches a schema (a result against the revision's
//! JSON schema, `structuredContent` against an `outputSchema`).
//!
//! Nothing is fetched: a `$ref` to another document is reported as unresolvable (the
//! 2026-07-28 text forbids fetching by default). The revisions' schemas are read from a folder
//! the user names (`--spec-schemas DIR`: the `schema/` folder of a checkout of
//! `modelcontextprotocol/modelcontextprotocol`); this package carries no copy of them.

use serde_json::Value;

/// The meta-schema URL of a schema's dialect: its `$schema`, or 2020-12 when it has none.
///
/// # Errors
/// The `$schema` value, when it names no dialect this checker knows.
pub fn dialect(schema: &Value) -> Result<&'static str, String> {
    let Some(declared) = schema.get("$schema") else { return Ok("https://json-schema.org/draft/2020-12/schema") };
    let text = declared.as_str().ok_or_else(|| format!("$schema is {declared}, not a URI"))?;
    let bare = text.trim_end_matches('#').trim_start_matches("https://").trim_start_matches("http://");
    Ok(match bare {
        "json-schema.org/draft/2020-12/schema" => "https://json-schema.org/draft/2020-12/schema",
        "json-schema.org/draft/2019-09/schema" => "https://json-schema.org/draft/2019-09/schema",
        "json-schema.org/draft-07/schema" => "http://json-schema.org/draft-07/schema",
        "json-schema.org/draft-06/schema" => "http://json-schema.org/draft-06/schema",
        "json-schema.org/draft-04/schema" => "http://json-schema.org/draft-04/schema",
        _ => return Err(format!("$schema {text} names a dialect this checker does not know")),
    })
}

/// Why `schema` is not valid under its dialect's meta-schema, if it is not.
pub fn meta_errors(schema: &Value) -> Option<String> {
    let meta = match dialect(schema) {
        Ok(meta) => meta,
        Err(why) => return Some(why),
    };
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    let index = match compiler.compile(meta, &mut schemas) {
        Ok(i) => i,
        Err(e) => return Some(format!("the meta-schema {meta} did not compile: {e}")),
    };
    schemas.validate(schema, index).err().map(|e| first_lines(&format!("{e:#}")))
}

/// The `$ref`s of `schema` that resolve to nothing inside it, with their JSON pointers.
pub fn unresolved_refs(schema: &Value) -> Vec<String> {
    let mut anchors = Vec::new();
    let mut ids = Vec::new();
    collect_names(schema, &mut anchors, &mut ids);
    let mut bad = Vec::new();
    walk_refs(schema, &mut String::new(), &mut |at, reference| {
        if !resolves(schema, reference, &anchors, &ids) {
            bad.push(format!("{at}/$ref: {reference}"));
        }
    });
    bad
}

fn collect_names(value: &Value, anchors: &mut Vec<String>, ids: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$anchor" | "$dynamicAnchor", Value::String(a)) => anchors.push(a.clone()),
                    ("$id", Value::String(id)) => match id.strip_prefix('#') {
                        Some(anchor) => anchors.push(anchor.to_owned()),
                        None => ids.push(id.trim_end_matches('#').to_owned()),
                    },
                    // Values of these keywords are data, not schemas.
                    ("enum" | "const" | "examples" | "default", _) => {}
                    _ => collect_names(v, anchors, ids),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_names(v, anchors, ids)),
        _ => {}
    }
}

fn walk_refs(value: &Value, at: &mut String, found: &mut dyn FnMut(&str, &str)) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(reference)) => found(at, reference),
                    ("enum" | "const" | "examples" | "default", _) => {}
                    _ => {
                        let len = at.len();
                        at.push('/');
                        at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                        walk_refs(v, at, found);
                        at.truncate(len);
                    }
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("/{i}"));
                walk_refs(v, at, found);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

fn resolves(root: &Value, reference: &str, anchors: &[String], ids: &[String]) -> bool {
    let (base, fragment) = match reference.split_once('#') {
        Some((base, fragment)) => (base, fragment),
        None => (reference, ""),
    };
    let target = if base.is_empty() {
        root
    } else {
        // Another document: resolvable only when this schema embeds it under that `$id`.
        let Some(embedded) = find_id(root, base) else { return ids.iter().any(|id| id == base) && fragment.is_empty() };
        embedded
    };
    if fragment.is_empty() {
        return true;
    }
    if fragment.starts_with('/') {
        let pointer = percent_decode(fragment);
        return target.pointer(&pointer).is_some();
    }
    anchors.iter().any(|a| a == fragment)
}

fn find_id<'v>(value: &'v Value, id: &str) -> Option<&'v Value> {
    match value {
        Value::Object(map) => {
            if map.get("$id").and_then(Value::as_str).is_some_and(|v| v.trim_end_matches('#') == id) {
                return Some(value);
            }
            map.values().find_map(|v| find_id(v, id))
        }
        Value::Array(items) => items.iter().find_map(|v| find_id(v, id)),
        _ => None,
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why `value` does not match `schema` (a whole schema, its own root), if it does not.
pub fn validate(schema: &Value, value: &Value) -> Option<String> {
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    let url = "http://mcp-conformance.invalid/schema.json";
    if let Err(e) = compiler.add_resource(url, schema.clone()) {
        return Some(format!("the schema cannot be used: {e}"));
    }
    let index = match compiler.compile(url, &mut schemas) {
        Ok(i) => i,
        Err(e) => return Some(format!("the schema cannot be used: {}", first_lines(&format!("{e:#}")))),
    };
    schemas.validate(value, index).err().map(|e| first_lines(&format!("{e:#}")))
}

/// The revisions' schemas, read from `DIR/REV/schema.json` and compiled on demand:
/// `validate_def("2025-11-25", "ListToolsResult", value)`.
pub struct SpecSchemas {
    dir: Option<std::path::PathBuf>,
    compiler: boon::Compiler,
    schemas: boon::Schemas,
    loaded: Vec<String>,
}

impl SpecSchemas {
    /// Schemas read from `dir` (`None`: none, every revision is "not available").
    pub fn new(dir: Option<std::path::PathBuf>) -> SpecSchemas {
        SpecSchemas { dir, compiler: boon::Compiler::new(), schemas: boon::Schemas::new(), loaded: Vec::new() }
    }

    /// The schema file of `revision`, or why there is none.
    fn file(&self, revision: &str) -> Result<std::path::PathBuf, String> {
        let dir = self.dir.as_ref().ok_or_else(|| {
            "no revision schemas: pass --spec-schemas DIR (the schema/ folder of the specification's repository)"
                .to_owned()
        })?;
        let file = dir.join(revision).join("schema.json");
        if file.is_file() {
            Ok(file)
        } else {
            Err(format!("no schema of {revision} in {} ({} is missing)", dir.display(), file.display()))
        }
    }

    /// Whether the schema of `revision` is available, or why not.
    pub fn has(&self, revision: &str) -> Result<(), String> {
        self.file(revision).map(|_| ())
    }

    /// Why `value` is not a valid `definition` of `revision`'s schema, if it is not. `None`
    /// too when the revision's schema is not available (see [`SpecSchemas::has`]).
    pub fn validate_def(&mut self, revision: &str, definition: &str, value: &Value) -> Option<String> {
        let file = self.file(revision).ok()?;
        let rev = revision;
        let url = format!("http://mcp-conformance.invalid/spec/{rev}.json");
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) => return Some(format!("{}: {e}", file.display())),
        };
        if !self.loaded.iter().any(|r| r == rev) {
            let doc: Value = match serde_json::from_str(&text) {
                Ok(doc) => doc,
                Err(e) => return Some(format!("{} is not JSON: {e}", file.display())),
            };
            if let Err(e) = self.compiler.add_resource(&url, doc) {
                return Some(format!("the {rev} schema cannot be used: {e}"));
            }
            self.loaded.push(rev.to_owned());
        }
        let defs = if text.contains("\"$defs\"") { "$defs" } else { "definitions" };
        let index = match self.compiler.compile(&format!("{url}#/{defs}/{definition}"), &mut self.schemas) {
            Ok(i) => i,
            Err(e) => return Some(format!("the {rev} schema has no usable {definition}: {e}")),
        };
        self.schemas.validate(value, index).err().map(|e| first_lines(&format!("{e:#}")))
    }
}

/// The first few lines of a validator's message (boon lists every cause, nested).
fn first_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).take(4).collect();
    lines.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dialects() {
        assert_eq!(dialect(&json!({})).unwrap(), "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(
            dialect(&json!({"$schema": "http://json-schema.org/draft-07/schema#"})).unwrap(),
            "http://json-schema.org/draft-07/schema"
        );
        assert!(dialect(&json!({"$schema": "https://example.com/mine"})).is_err());
    }

    #[test]
    fn meta_schema_catches_an_unknown_type() {
        assert_eq!(meta_errors(&json!({"type": "object", "properties": {"a": {"type": "string"}}})), None);
        let why = meta_errors(&json!({"type": "object", "properties": {"a": {"type": "strnig"}}})).unwrap();
        assert!(why.contains("properties/a/type") || why.contains("strnig"), "{why}");
        assert!(meta_errors(&json!({"type": "object", "required": "a"})).is_some());
    }

    #[test]
    fn refs_resolve_or_are_named() {
        let good = json!({"type": "object", "$defs": {"p": {"$anchor": "pt", "type": "number"}},
            "properties": {"a": {"$ref": "#/$defs/p"}, "b": {"$ref": "#pt"}, "c": {"$ref": "#"}}});
        assert_eq!(unresolved_refs(&good), Vec::<String>::new());
        let bad = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}, "b": {"$ref": "https://example.com/s.json"}}});
        assert_eq!(
            unresolved_refs(&bad),
            vec![
                "/properties/a/$ref: #/$defs/missing".to_owned(),
                "/properties/b/$ref: https://example.com/s.json".to_owned()
            ]
        );
    }

    #[test]
    fn values_against_schemas() {
        assert_eq!(validate(&json!({"type": "object", "required": ["n"]}), &json!({"n": 1})), None);
        assert!(validate(&json!({"type": "object", "required": ["n"]}), &json!({})).is_some());
    }

    #[test]
    fn revision_schemas_are_read_from_the_folder_named_and_their_absence_is_said() {
        // A schema of our own in the layout of the specification's schema/ folder.
        let dir = std::env::temp_dir().join(format!("mcp-conformance-spec-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("2025-11-25")).unwrap();
        let tool = json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}});
        let doc = json!({"$defs": {"Tool": tool, "ListToolsResult": {"type": "object", "required": ["tools"],
            "properties": {"tools": {"type": "array", "items": {"$ref": "#/$defs/Tool"}}}}}});
        std::fs::write(dir.join("2025-11-25/schema.json"), doc.to_string()).unwrap();

        let mut spec = SpecSchemas::new(Some(dir.clone()));
        assert_eq!(spec.has("2025-11-25"), Ok(()));
        assert_eq!(spec.validate_def("2025-11-25", "ListToolsResult", &json!({"tools": [{"name": "a"}]})), None);
        let why = spec.validate_def("2025-11-25", "ListToolsResult", &json!({"tools": [{"name": 3}]})).unwrap();
        assert!(why.contains("/tools/0/name"), "{why}");
        let missing = spec.has("2026-07-28").unwrap_err();
        assert!(missing.contains("no schema of 2026-07-28"), "{missing}");
        assert_eq!(spec.validate_def("2026-07-28", "EmptyResult", &json!({})), None);

        let none = SpecSchemas::new(None);
        assert!(none.has("2025-11-25").unwrap_err().contains("--spec-schemas"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
