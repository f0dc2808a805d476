//! Test only: every params and result of the feature methods (those in [`FEATURE_METHODS`])
//! found in `conformance/recordings/*.jsonl` must survive a typed decode/encode unchanged.
//!
//! One exception: request params that do not decode are accepted when the peer answered that
//! request with a JSON-RPC error (the recordings provoke such errors on purpose, e.g.
//! `resources/read` without `uri`). Params that decode must still round-trip exactly.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::*;

fn row(method: &str) -> Option<&'static MethodInfo> {
    FEATURE_METHODS
        .iter()
        .flat_map(|rows| rows.iter())
        .find(|r| r.name == method)
}

/// What went wrong with one value.
enum Failure {
    /// It decoded but came back different: always a bug.
    Differs(String),
    /// It did not decode.
    Undecodable(String),
}

fn check(
    what: &str,
    f: RoundTrip,
    value: &Value,
    counts: &mut BTreeMap<String, usize>,
) -> Option<Failure> {
    *counts.entry(what.to_owned()).or_default() += 1;
    let raw = serde_json::value::to_raw_value(value).expect("raw value");
    match f(&raw) {
        Ok(back) if &back == value => None,
        Ok(back) => Some(Failure::Differs(format!(
            "{what}: differs\n  was: {value}\n  now: {back}"
        ))),
        Err(e) => Some(Failure::Undecodable(format!(
            "{what}: decode failed: {e}\n  was: {value}"
        ))),
    }
}

fn report(failure: Failure) -> String {
    match failure {
        Failure::Differs(s) | Failure::Undecodable(s) => s,
    }
}

#[test]
fn recordings_round_trip_feature_methods() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/conformance/recordings");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("recordings dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no recordings in {dir}");

    let mut counts = BTreeMap::new();
    let mut diffs = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).expect("read recording");
        // Open requests by (direction the request travelled, id) -> method.
        // Undecodable params wait there for the response: forgiven if it is an error.
        let mut pending: HashMap<(bool, String), (String, Option<String>)> = HashMap::new();
        for (n, line) in text.lines().enumerate().skip(1) {
            let line: Value = serde_json::from_str(line).expect("JSONL line");
            let c2s = line["dir"] == "c2s";
            let msgs = match &line["msg"] {
                Value::Array(batch) => batch.clone(),
                Value::Object(_) => vec![line["msg"].clone()],
                _ => continue,
            };
            for msg in msgs {
                let at = format!("{name}:{}", n + 1);
                if let Some(method) = msg["method"].as_str() {
                    let failure = match (row(method), msg.get("params")) {
                        (Some(r), Some(params)) => {
                            let what = format!("{method} params ({at})");
                            check(&what, r.params, params, &mut counts)
                        }
                        _ => None,
                    };
                    match (msg.get("id"), failure) {
                        (_, Some(Failure::Differs(d))) | (None, Some(Failure::Undecodable(d))) => {
                            diffs.push(d)
                        }
                        (Some(id), f) => {
                            let key = (c2s, id.to_string());
                            pending.insert(key, (method.to_owned(), f.map(report)));
                        }
                        (None, None) => {}
                    }
                } else if let Some(id) = msg.get("id") {
                    let Some((method, failure)) = pending.remove(&(!c2s, id.to_string())) else {
                        continue;
                    };
                    if msg.get("error").is_some() {
                        continue;
                    }
                    diffs.extend(failure);
                    if let (Some(r), Some(result)) = (row(&method), msg.get("result")) {
                        let f = r.result.expect("request rows have a result");
                        let what = format!("{method} result ({at})");
                        diffs.extend(check(&what, f, result, &mut counts).map(report));
                    }
                }
            }
        }
        // Requests never answered keep their failures.
        diffs.extend(pending.into_values().filter_map(|(_, f)| f));
    }

    let mut summary: BTreeMap<String, usize> = BTreeMap::new();
    for (what, n) in &counts {
        let key = what.split(" (").next().unwrap().to_owned();
        *summary.entry(key).or_default() += n;
    }
    eprintln!("checked: {summary:#?}");
    assert!(
        diffs.is_empty(),
        "{} of {} differ:\n{}",
        diffs.len(),
        counts.len(),
        diffs.join("\n")
    );
    // Every feature method that the recordings exercise must have been seen.
    for m in [
        "resources/list result",
        "resources/read result",
        "resources/templates/list result",
        "prompts/get result",
        "completion/complete result",
        "sampling/createMessage result",
        "elicitation/create params",
        "roots/list result",
        "notifications/message params",
    ] {
        assert!(summary.contains_key(m), "recordings had no {m}");
    }
}
