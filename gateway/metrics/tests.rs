//! The registry's text, exactly, and checked against the exposition format's grammar.

use std::time::Duration;

use super::bridge::{BridgeMetrics, CallOutcome};
use super::*;

#[test]
fn counters_gauges_and_histograms_render_exactly() {
    let registry = Registry::new();
    let calls = registry.counter("calls_total", "Calls made.", ["server", "tool"]).unwrap();
    let up = registry.gauge("up", "Up or not.", []).unwrap();
    let latency = registry.histogram("latency_seconds", "Latency.", ["server"], &[0.25, 1.0, 2.5]).unwrap();
    calls.inc(["b", "echo"]);
    calls.inc(["a", "echo"]);
    calls.inc(["a", "echo"]);
    calls.with(["a", "add"], |c| c.inc_by(5));
    up.set([], -3);
    latency.observe(["s"], 0.25);
    latency.observe(["s"], 0.5);
    latency.observe_duration(["s"], Duration::from_secs(4));
    latency.observe(["s"], f64::NAN);
    let expected = concat!(
        "# HELP calls_total Calls made.\n",
        "# TYPE calls_total counter\n",
        "calls_total{server=\"a\",tool=\"add\"} 5\n",
        "calls_total{server=\"a\",tool=\"echo\"} 2\n",
        "calls_total{server=\"b\",tool=\"echo\"} 1\n",
        "# HELP up Up or not.\n",
        "# TYPE up gauge\n",
        "up -3\n",
        "# HELP latency_seconds Latency.\n",
        "# TYPE latency_seconds histogram\n",
        "latency_seconds_bucket{server=\"s\",le=\"0.25\"} 1\n",
        "latency_seconds_bucket{server=\"s\",le=\"1\"} 2\n",
        "latency_seconds_bucket{server=\"s\",le=\"2.5\"} 2\n",
        "latency_seconds_bucket{server=\"s\",le=\"+Inf\"} 3\n",
        "latency_seconds_sum{server=\"s\"} 4.75\n",
        "latency_seconds_count{server=\"s\"} 3\n",
    );
    assert_eq!(registry.render(), expected);
    check_exposition(&registry.render()).unwrap();
    assert_eq!(calls.get(["a", "echo"]), 2);
    assert_eq!(calls.get(["z", "none"]), 0);
    assert_eq!(calls.len(), 3, "get does not create a series");
}

#[test]
fn a_histogram_without_labels_has_only_le() {
    let registry = Registry::new();
    let h = registry.histogram("h", "H.", [], &[1.0]).unwrap();
    h.observe([], 2.0);
    assert_eq!(
        registry.render(),
        "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 1\nh_sum 2\nh_count 1\n"
    );
}

#[test]
fn label_values_and_help_are_escaped() {
    let registry = Registry::new();
    let c = registry.counter("c_total", "Help with \\ and\nnewline and \"quotes\".", ["v"]).unwrap();
    c.inc(["back\\slash \"quoted\"\nline two"]);
    let text = registry.render();
    assert_eq!(
        text,
        concat!(
            "# HELP c_total Help with \\\\ and\\nnewline and \"quotes\".\n",
            "# TYPE c_total counter\n",
            "c_total{v=\"back\\\\slash \\\"quoted\\\"\\nline two\"} 1\n",
        )
    );
    check_exposition(&text).unwrap();
    let samples = check_exposition(&text).unwrap();
    assert_eq!(samples[0].1, [("v".to_owned(), "back\\slash \"quoted\"\nline two".to_owned())]);
}

#[test]
fn the_bridge_metrics_have_their_names() {
    let metrics = std::sync::Arc::new(BridgeMetrics::default());
    metrics.record_call("fs", "read_file", Duration::from_micros(300), CallOutcome::Ok);
    metrics.record_call("fs", "read_file", Duration::from_secs(3), CallOutcome::Error);
    metrics.upstream_restarted("git");
    metrics.set_upstream_up("fs", true);
    metrics.set_upstream_up("git", false);
    metrics.set_upstream_state("git", crate::client::connection_set::ServerState::Retrying, 3);
    let one = metrics.session_opened();
    let two = metrics.session_opened();
    drop(one);
    metrics.live_dropped.raise_to([], 6);
    use super::bridge::{Ended, Operation};
    let call = |ended| Operation { method: "tools/call", tool: "read_file", ended };
    metrics.server_operation(call(Ended::Ok), Duration::from_millis(15));
    metrics.server_operation(call(Ended::ToolError), Duration::from_millis(15));
    metrics.server_operation(call(Ended::Error(-32029)), Duration::from_millis(1));
    metrics.client_operation(Operation { method: "prompts/get", tool: "", ended: Ended::Error(-1) }, Duration::ZERO);
    let review = Operation { method: "prompts/get", tool: "review", ended: Ended::Ok };
    metrics.server_operation(review, Duration::from_millis(30));
    // An upstream session: connected 25 ms ago, replaced by a reload (closed by the gateway),
    // then the new one ends without the gateway closing it.
    metrics.upstream_session_started("fs", Duration::from_millis(25));
    metrics.upstream_session_started("fs", Duration::from_millis(25));
    metrics.upstream_session_ended("fs", super::bridge::SessionEnd::Disconnected);
    metrics.upstream_session_ended("fs", super::bridge::SessionEnd::Disconnected);
    let text = metrics.render();
    let lines: Vec<&str> = text.lines().collect();
    for line in [
        "# TYPE mcp_bridge_calls_total counter",
        "mcp_bridge_calls_total{server=\"fs\",tool=\"read_file\"} 2",
        "mcp_bridge_call_errors_total{server=\"fs\",tool=\"read_file\"} 1",
        "# TYPE mcp_bridge_call_duration_seconds histogram",
        "mcp_bridge_call_duration_seconds_bucket{server=\"fs\",tool=\"read_file\",le=\"0.0001\"} 0",
        "mcp_bridge_call_duration_seconds_bucket{server=\"fs\",tool=\"read_file\",le=\"0.0005\"} 1",
        "mcp_bridge_call_duration_seconds_bucket{server=\"fs\",tool=\"read_file\",le=\"2.5\"} 1",
        "mcp_bridge_call_duration_seconds_bucket{server=\"fs\",tool=\"read_file\",le=\"5\"} 2",
        "mcp_bridge_call_duration_seconds_bucket{server=\"fs\",tool=\"read_file\",le=\"10\"} 2",
        "mcp_bridge_call_duration_seconds_bucket{server=\"fs\",tool=\"read_file\",le=\"+Inf\"} 2",
        "mcp_bridge_call_duration_seconds_sum{server=\"fs\",tool=\"read_file\"} 3.0003",
        "mcp_bridge_call_duration_seconds_count{server=\"fs\",tool=\"read_file\"} 2",
        "mcp_bridge_upstream_restarts_total{server=\"git\"} 1",
        "# TYPE mcp_bridge_downstream_sessions gauge",
        "mcp_bridge_downstream_sessions 1",
        "mcp_bridge_upstream_up{server=\"fs\"} 1",
        "mcp_bridge_upstream_up{server=\"git\"} 0",
        "mcp_bridge_upstream_state{server=\"git\",state=\"retrying\"} 1",
        "mcp_bridge_upstream_state{server=\"git\",state=\"ready\"} 0",
        "mcp_bridge_upstream_failed_attempts{server=\"git\"} 3",
        "# TYPE mcp_bridge_live_dropped_total counter",
        "mcp_bridge_live_dropped_total 6",
        "# TYPE mcp_server_operation_duration_seconds histogram",
        "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"read_file\",gen_ai_prompt_name=\"\",error_type=\"\",le=\"0.01\"} 0",
        "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"read_file\",gen_ai_prompt_name=\"\",error_type=\"\",le=\"0.02\"} 1",
        "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"read_file\",gen_ai_prompt_name=\"\",error_type=\"\",le=\"300\"} 1",
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"read_file\",gen_ai_prompt_name=\"\",error_type=\"tool_error\"} 1",
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"read_file\",gen_ai_prompt_name=\"\",error_type=\"-32029\"} 1",
        "mcp_client_operation_duration_seconds_count{mcp_method_name=\"prompts/get\",gen_ai_tool_name=\"\",gen_ai_prompt_name=\"\",error_type=\"-1\"} 1",
        "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"prompts/get\",gen_ai_tool_name=\"\",gen_ai_prompt_name=\"review\",error_type=\"\",le=\"0.02\"} 0",
        "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"prompts/get\",gen_ai_tool_name=\"\",gen_ai_prompt_name=\"review\",error_type=\"\",le=\"0.05\"} 1",
        "# TYPE mcp_client_session_duration_seconds histogram",
        "mcp_client_session_duration_seconds_bucket{error_type=\"\",le=\"0.02\"} 0",
        "mcp_client_session_duration_seconds_count{error_type=\"\"} 1",
        "mcp_client_session_duration_seconds_bucket{error_type=\"disconnected\",le=\"0.02\"} 0",
        "mcp_client_session_duration_seconds_bucket{error_type=\"disconnected\",le=\"300\"} 1",
        "mcp_client_session_duration_seconds_count{error_type=\"disconnected\"} 1",
        "# TYPE mcp_server_session_duration_seconds histogram",
        "mcp_server_session_duration_seconds_count 1",
    ] {
        assert!(lines.contains(&line), "{line:?} missing from\n{text}");
    }
    // 16 bounds and +Inf.
    assert_eq!(lines.iter().filter(|l| l.starts_with("mcp_bridge_call_duration_seconds_bucket")).count(), 17);
    check_exposition(&text).unwrap();
    drop(two);
    assert!(metrics.render().contains("\nmcp_bridge_downstream_sessions 0\n"));
    metrics.forget_upstream("git");
    assert!(!metrics.render().contains("server=\"git\""));
    // A second registration of the same names is refused, not shadowed.
    let again = metrics.registry().counter("mcp_bridge_calls_total", "x", []);
    assert_eq!(again.unwrap_err(), MetricsError::Duplicate("mcp_bridge_calls_total".into()));
    let sum = metrics.registry().gauge("mcp_bridge_call_duration_seconds_sum", "x", []);
    assert!(matches!(sum, Err(MetricsError::Duplicate(_))), "a histogram's sample names are taken too");
}

#[test]
fn a_durations_sink_gets_the_same_observations_as_the_histograms() {
    use super::bridge::{DurationsSink, Ended, Operation, SessionEnd, Side};
    use std::sync::{Arc, Mutex};
    #[derive(Debug, Default)]
    struct Seen(Mutex<Vec<String>>);
    impl DurationsSink for Seen {
        fn operation(&self, side: Side, op: Operation<'_>, elapsed: Duration) {
            let line = format!("{side:?} {} {:?} {:?} {elapsed:?}", op.method, op.names(), op.ended);
            self.0.lock().unwrap().push(line);
        }
        fn session(&self, side: Side, error_type: &str, _: Duration) {
            self.0.lock().unwrap().push(format!("{side:?} session {error_type:?}"));
        }
    }
    let metrics = Arc::new(BridgeMetrics::default());
    metrics.server_operation(Operation { method: "tools/call", tool: "before", ended: Ended::Ok }, Duration::ZERO);
    let seen = Arc::new(Seen::default());
    metrics.set_durations_sink(seen.clone());
    metrics.server_operation(
        Operation { method: "tools/call", tool: "t", ended: Ended::ToolError },
        Duration::from_millis(2),
    );
    metrics
        .client_operation(Operation { method: "prompts/get", tool: "p", ended: Ended::Error(-32602) }, Duration::ZERO);
    metrics.upstream_session_started("up", Duration::ZERO);
    metrics.upstream_session_ended("up", SessionEnd::Disconnected);
    drop(metrics.session_opened());
    assert_eq!(
        *seen.0.lock().unwrap(),
        [
            "Server tools/call (\"t\", \"\") ToolError 2ms",
            "Client prompts/get (\"\", \"p\") Error(-32602) 0ns",
            "Client session \"disconnected\"",
            "Server session \"\"",
        ],
        "what was observed before the sink was set is not replayed"
    );
}

#[test]
fn bad_names_labels_and_buckets_are_refused() {
    let r = Registry::new();
    assert_eq!(r.counter("1x", "", []).unwrap_err(), MetricsError::BadName("1x".into()));
    assert_eq!(r.counter("a-b", "", []).unwrap_err(), MetricsError::BadName("a-b".into()));
    assert_eq!(r.counter("ok", "", ["__x"]).unwrap_err(), MetricsError::BadLabel("__x".into()));
    assert_eq!(r.counter("ok", "", ["a", "a"]).unwrap_err(), MetricsError::BadLabel("a".into()));
    assert_eq!(r.counter("ok", "", ["a:b"]).unwrap_err(), MetricsError::BadLabel("a:b".into()));
    assert_eq!(r.histogram("h", "", ["le"], &[1.0]).unwrap_err(), MetricsError::BadLabel("le".into()));
    assert_eq!(r.histogram("h", "", [], &[]).unwrap_err(), MetricsError::BadBuckets);
    assert_eq!(r.histogram("h", "", [], &[1.0, 1.0]).unwrap_err(), MetricsError::BadBuckets);
    assert_eq!(r.histogram("h", "", [], &[1.0, f64::INFINITY]).unwrap_err(), MetricsError::BadBuckets);
    assert!(r.counter("ns:ok_total", "", ["a_1"]).is_ok());
}

#[test]
fn label_sets_beyond_the_cap_fold_into_the_overflow_series() {
    let r = Registry::with_max_series(2);
    let c = r.counter("c_total", "C.", ["tool"]).unwrap();
    c.inc(["a"]);
    c.inc(["b"]);
    c.inc(["c"]);
    c.inc(["d"]);
    c.inc(["a"]);
    assert_eq!(c.len(), 3);
    assert_eq!(c.get(["a"]), 2);
    assert_eq!(c.get([OVERFLOW_LABEL]), 2);
    assert!(c.remove(["b"]));
    assert!(!c.remove(["b"]));
}

#[test]
fn concurrent_recording_loses_nothing() {
    let metrics = std::sync::Arc::new(BridgeMetrics::default());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let metrics = metrics.clone();
            std::thread::spawn(move || {
                for i in 0..1000 {
                    let tool = if i % 2 == 0 { "even" } else { "odd" };
                    let outcome = if t == 0 { CallOutcome::Error } else { CallOutcome::Ok };
                    metrics.record_call("s", tool, Duration::from_millis(1), outcome);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(metrics.calls.get(["s", "even"]) + metrics.calls.get(["s", "odd"]), 4000);
    assert_eq!(metrics.call_errors.get(["s", "even"]), 500);
    let count = metrics.call_duration.with(["s", "odd"], |h| h.count());
    assert_eq!(count, 2000);
    let sum = metrics.call_duration.with(["s", "odd"], |h| h.sum());
    assert!((sum - 2.0).abs() < 1e-9, "{sum}");
}

/// Label names and values (unescaped).
type Labels = Vec<(String, String)>;

/// One sample: its full name, its labels, its value.
type Sample = (String, Labels, f64);

/// Checks `text` line by line against the text format 0.0.4 grammar, and the rules around it:
/// `# TYPE` once per family, before its samples; sample names belong to the family declared
/// (a histogram's `_bucket`, `_sum`, `_count`); buckets cumulative, ending in `+Inf` equal to
/// `_count`. Returns the samples.
fn check_exposition(text: &str) -> Result<Vec<Sample>, String> {
    fn is_name(s: &str, colon: bool) -> bool {
        let mut b = s.bytes();
        b.next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || (colon && c == b':'))
            && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || (colon && c == b':'))
    }
    fn value(s: &str) -> Option<f64> {
        match s {
            "+Inf" => Some(f64::INFINITY),
            "-Inf" => Some(f64::NEG_INFINITY),
            "NaN" => Some(f64::NAN),
            _ if s.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) => s.parse().ok(),
            _ => None,
        }
    }
    /// `name="value",…}` up to the closing brace; returns the pairs and the rest.
    fn labels(mut s: &str) -> Result<(Labels, &str), String> {
        let mut pairs = Vec::new();
        loop {
            if let Some(rest) = s.strip_prefix('}') {
                return Ok((pairs, rest));
            }
            let (name, rest) = s.split_once("=\"").ok_or("label without =\"")?;
            if !is_name(name, false) {
                return Err(format!("bad label name {name:?}"));
            }
            let mut value = String::new();
            let mut chars = rest.char_indices();
            let end = loop {
                match chars.next().ok_or("unterminated label value")? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next().ok_or("dangling escape")?.1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        c => return Err(format!("bad escape \\{c}")),
                    },
                    (_, '\n') => return Err("raw newline in a label value".into()),
                    (_, c) => value.push(c),
                }
            };
            pairs.push((name.to_owned(), value));
            s = &rest[end + 1..];
            s = s.strip_prefix(',').unwrap_or(s);
        }
    }
    let mut types: Vec<(String, String)> = Vec::new();
    let mut samples: Vec<Sample> = Vec::new();
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("the text must end with a line feed".into());
    }
    for (n, line) in text.lines().enumerate() {
        let at = |why: String| format!("line {}: {why}: {line:?}", n + 1);
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            match (words.next(), words.next(), words.next()) {
                (Some("HELP"), Some(name), _) if is_name(name, true) => {}
                (Some("TYPE"), Some(name), Some(kind)) if is_name(name, true) => {
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        return Err(at(format!("unknown type {kind}")));
                    }
                    if types.iter().any(|(t, _)| t == name) || samples.iter().any(|s| s.0 == name) {
                        return Err(at("TYPE repeated or after samples".into()));
                    }
                    types.push((name.to_owned(), kind.to_owned()));
                }
                _ => return Err(at("bad comment line".into())),
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| at("no value".into()))?;
        let name = &line[..name_end];
        if !is_name(name, true) {
            return Err(at("bad metric name".into()));
        }
        let (pairs, rest) = match line[name_end..].strip_prefix('{') {
            Some(rest) => labels(rest).map_err(at)?,
            None => (Vec::new(), &line[name_end..]),
        };
        let rest = rest.strip_prefix(' ').ok_or_else(|| at("no space before the value".into()))?;
        let mut fields = rest.split(' ');
        let v = fields.next().and_then(value).ok_or_else(|| at("bad value".into()))?;
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().map_err(|_| at("bad timestamp".into()))?;
        }
        let (family, kind) = types.last().ok_or_else(|| at("a sample before any TYPE".into()))?;
        let belongs = name == family
            || (kind == "histogram"
                && [format!("{family}_bucket"), format!("{family}_sum"), format!("{family}_count")]
                    .contains(&name.to_owned()));
        if !belongs {
            return Err(at(format!("sample outside its family {family}")));
        }
        samples.push((name.to_owned(), pairs, v));
    }
    // Histograms: per label set, buckets non-decreasing with le increasing, +Inf last == _count.
    for (family, _) in types.iter().filter(|(_, k)| k == "histogram") {
        let bucket_name = format!("{family}_bucket");
        let mut series: Vec<(Labels, Vec<(f64, f64)>)> = Vec::new();
        for (name, pairs, v) in &samples {
            if *name != bucket_name {
                continue;
            }
            let le = pairs.iter().find(|(k, _)| k == "le").ok_or("bucket without le")?;
            let le = value(&le.1).ok_or("bad le")?;
            let rest: Vec<_> = pairs.iter().filter(|(k, _)| k != "le").cloned().collect();
            match series.iter_mut().find(|(k, _)| *k == rest) {
                Some((_, buckets)) => buckets.push((le, *v)),
                None => series.push((rest, vec![(le, *v)])),
            }
        }
        for (rest, buckets) in series {
            if !buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1) {
                return Err(format!("{family} {rest:?}: buckets not cumulative"));
            }
            let last = buckets.last().expect("one bucket at least");
            let count = samples.iter().find(|(n, p, _)| *n == format!("{family}_count") && *p == rest);
            if last.0 != f64::INFINITY || count.map(|c| c.2) != Some(last.1) {
                return Err(format!("{family} {rest:?}: +Inf bucket missing or not _count"));
            }
        }
    }
    Ok(samples)
}

#[test]
fn the_checker_rejects_what_the_format_forbids() {
    for bad in [
        "x 1",                                // no TYPE
        "# TYPE x counter\nx{a=\"b} 1\n",     // unterminated value
        "# TYPE x counter\nx{a=\"\\t\"} 1\n", // bad escape
        "# TYPE x counter\nx 1\n# TYPE x counter\n",
        "# TYPE x counter\ny 1\n",
        "# TYPE x counter\nx one\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n",
    ] {
        assert!(check_exposition(bad).is_err(), "accepted {bad:?}");
    }
    assert!(check_exposition("# TYPE x counter\nx{a=\"\\\"\"} 1 1700000000000\n").is_ok());
}
