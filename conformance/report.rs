//! Reporting a run of sessions: one line per session, the differences of the failing ones, the
//! counts on the last line; a JUnit XML file; and the expected-failures baseline.
//!
//! Baseline semantics (after rustls' disabled-tests list and rmcp's baseline): a session that
//! fails and is not listed fails the run, and a listed session that passes fails the run too
//! (the entry is stale and must be removed).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::replay::SessionOutcome;

/// Session names expected to fail: one per line, `#` starts a comment.
#[derive(Debug, Clone, Default)]
pub struct ExpectedFailures {
    names: BTreeSet<String>,
}

impl ExpectedFailures {
    /// Parses the file's text.
    pub fn parse(text: &str) -> ExpectedFailures {
        let names = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        ExpectedFailures { names }
    }

    /// Whether `name` is listed.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// The text report and whether the run passes.
pub fn render(outcomes: &[SessionOutcome], expected: &ExpectedFailures) -> (String, bool) {
    let mut out = String::new();
    let mut run_ok = true;
    for o in outcomes {
        let listed = expected.contains(&o.name);
        match (o.passed(), listed) {
            (true, false) => writeln!(out, "ok {}", o.name),
            (true, true) => {
                run_ok = false;
                writeln!(out, "ok {} (stale: listed in expected failures but passes; remove the entry)", o.name)
            }
            (false, true) => writeln!(out, "FAIL {} (expected)", o.name),
            (false, false) => {
                run_ok = false;
                writeln!(out, "FAIL {}", o.name)
            }
        }
        .expect("writing to a String");
        for f in &o.failures {
            writeln!(out, "    {f}").expect("writing to a String");
        }
    }
    let passed = outcomes.iter().filter(|o| o.passed()).count();
    writeln!(out, "{passed} passed, {} failed", outcomes.len() - passed).expect("writing to a String");
    (out, run_ok)
}

/// `text` as XML character data or attribute value: the five special characters escaped, the
/// control characters XML 1.0 cannot carry dropped (JUnit reports).
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: one `testcase` per session, the differences as the failure text.
pub fn junit(outcomes: &[SessionOutcome]) -> String {
    let failed = outcomes.iter().filter(|o| !o.passed()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    writeln!(
        out,
        "<testsuite name=\"mcp-conformance\" tests=\"{}\" failures=\"{failed}\" errors=\"0\">",
        outcomes.len()
    )
    .expect("writing to a String");
    for o in outcomes {
        let name = escape(&o.name);
        if o.passed() {
            writeln!(out, "  <testcase classname=\"mcp-conformance\" name=\"{name}\"/>").expect("writing to a String");
        } else {
            let message = format!("{} difference(s)", o.failures.len());
            writeln!(
                out,
                "  <testcase classname=\"mcp-conformance\" name=\"{name}\">\n    <failure message=\"{message}\">{}</failure>\n  </testcase>",
                escape(&o.failures.join("\n"))
            )
            .expect("writing to a String");
        }
    }
    out.push_str("</testsuite>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &str, failures: &[&str]) -> SessionOutcome {
        SessionOutcome { name: name.into(), failures: failures.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn baseline_semantics() {
        let expected = ExpectedFailures::parse("# known\nb   # flaky server\nc\n");
        let (text, ok) = render(&[outcome("a", &[]), outcome("b", &["x"])], &expected);
        assert!(ok, "{text}");
        assert!(text.ends_with("1 passed, 1 failed\n"), "{text}");
        let (_, ok) = render(&[outcome("a", &["x"])], &expected);
        assert!(!ok, "an unlisted failure fails the run");
        let (text, ok) = render(&[outcome("c", &[])], &expected);
        assert!(!ok && text.contains("stale"), "a listed session that passes fails the run: {text}");
    }

    #[test]
    fn junit_escapes_and_counts() {
        let xml = junit(&[outcome("a", &[]), outcome("b<", &["$.x: expected \"1\", got 2"])]);
        assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
        assert!(xml.contains("name=\"b&lt;\""), "{xml}");
        assert!(xml.contains("$.x: expected &quot;1&quot;, got 2</failure>"), "{xml}");
    }
}
