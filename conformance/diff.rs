//! The first difference between two JSON values, with the JSON path where it occurs.
//!
//! Comparison is exact: object member order does not matter (JSON says it carries no meaning),
//! but number spelling does as far as `serde_json::Value` keeps it (`1` differs from `1.0`).

use std::fmt;

use serde_json::Value;

/// Where and how two JSON values differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// A JSONPath-like location, e.g. `$.content[0].text`.
    pub path: String,
    /// The value in the reference (`None`: the member is missing there).
    pub expected: Option<Value>,
    /// The value compared against it (`None`: the member is missing there).
    pub actual: Option<Value>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 117;
        let text = |v: &Option<Value>| v.as_ref().map(Value::to_string);
        let (expected, actual) = (text(&self.expected), text(&self.actual));
        // Two long texts that differ are shown from a little before where they part, so the
        // difference is in view (a weekday deep inside a JSON text, say).
        let from = match (&expected, &actual) {
            (Some(e), Some(a)) if e.len().max(a.len()) > SHOWN + 3 => {
                let common = e.bytes().zip(a.bytes()).take_while(|(x, y)| x == y).count();
                let from = common.saturating_sub(40);
                e.floor_char_boundary_compat(from).min(a.floor_char_boundary_compat(from))
            }
            _ => 0,
        };
        let show = |v: &Option<String>| match v {
            None => "(missing)".to_owned(),
            Some(text) => {
                let start = text.floor_char_boundary_compat(from.min(text.len()));
                let lead = if start > 0 { "…" } else { "" };
                let rest = &text[start..];
                if rest.len() > SHOWN + 3 {
                    format!("{lead}{}…", &rest[..rest.floor_char_boundary_compat(SHOWN)])
                } else {
                    format!("{lead}{rest}")
                }
            }
        };
        write!(f, "{}: expected {}, got {}", self.path, show(&expected), show(&actual))
    }
}

trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, index: usize) -> usize;
}

impl FloorCharBoundary for str {
    fn floor_char_boundary_compat(&self, mut index: usize) -> usize {
        while !self.is_char_boundary(index) {
            index -= 1;
        }
        index
    }
}

fn push_key(path: &str, key: &str) -> String {
    let simple = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if simple {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(key.to_owned()))
    }
}

/// The first difference between `expected` and `actual`, depth first, members in the order of
/// `expected` then the members only `actual` has.
pub fn first_difference(expected: &Value, actual: &Value) -> Option<Difference> {
    diff_at("$", expected, actual)
}

fn diff_at(path: &str, expected: &Value, actual: &Value) -> Option<Difference> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, ev) in e {
                let here = push_key(path, key);
                match a.get(key) {
                    Some(av) => {
                        if let Some(d) = diff_at(&here, ev, av) {
                            return Some(d);
                        }
                    }
                    None => return Some(Difference { path: here, expected: Some(ev.clone()), actual: None }),
                }
            }
            a.iter().find(|(key, _)| !e.contains_key(*key)).map(|(key, av)| Difference {
                path: push_key(path, key),
                expected: None,
                actual: Some(av.clone()),
            })
        }
        (Value::Array(e), Value::Array(a)) => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                if let Some(d) = diff_at(&format!("{path}[{i}]"), ev, av) {
                    return Some(d);
                }
            }
            let i = e.len().min(a.len());
            (e.len() != a.len()).then(|| Difference {
                path: format!("{path}[{i}]"),
                expected: e.get(i).cloned(),
                actual: a.get(i).cloned(),
            })
        }
        _ if expected == actual => None,
        _ => Some(Difference { path: path.to_owned(), expected: Some(expected.clone()), actual: Some(actual.clone()) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_texts_are_shown_from_where_they_part() {
        let text = |day: &str| json!(format!("{}\"day_of_week\": \"{day}\", {}", "x".repeat(200), "y".repeat(200)));
        let d = first_difference(&text("Monday"), &text("Tuesday")).unwrap().to_string();
        assert!(d.starts_with("$: expected …xxx"), "{d}");
        assert!(d.contains(r#"\"day_of_week\": \"Monday\", yyy"#), "{d}");
        assert!(d.contains(r#"\"day_of_week\": \"Tuesday\", yyy"#), "{d}");
        assert!(d.ends_with("y…"), "{d}");
        let short = first_difference(&json!("a"), &json!("b")).unwrap().to_string();
        assert_eq!(short, r#"$: expected "a", got "b""#);
    }

    #[test]
    fn equal_values_have_no_difference() {
        assert_eq!(first_difference(&json!({"a": [1, {"b": null}]}), &json!({"a": [1, {"b": null}]})), None);
    }

    #[test]
    fn reports_path_expected_and_actual() {
        let d = first_difference(&json!({"content": [{"text": "a"}]}), &json!({"content": [{"text": "b"}]})).unwrap();
        assert_eq!(d.path, "$.content[0].text");
        assert_eq!(d.to_string(), r#"$.content[0].text: expected "a", got "b""#);
    }

    #[test]
    fn missing_and_extra_members() {
        let d = first_difference(&json!({"a": 1, "b": 2}), &json!({"a": 1})).unwrap();
        assert_eq!((d.path.as_str(), d.actual), ("$.b", None));
        let d = first_difference(&json!({"a": 1}), &json!({"a": 1, "io.x/y": 2})).unwrap();
        assert_eq!(d.path, r#"$["io.x/y"]"#);
        assert_eq!(d.expected, None);
        let d = first_difference(&json!([1, 2]), &json!([1])).unwrap();
        assert_eq!(d.to_string(), "$[1]: expected 2, got (missing)");
    }

    #[test]
    fn number_spelling_matters() {
        let one: Value = serde_json::from_str("1").unwrap();
        let one_point_zero: Value = serde_json::from_str("1.0").unwrap();
        assert!(first_difference(&one, &one_point_zero).is_some());
    }
}
