//! `mcp-conformance check`: lints a live MCP server against the specification, with no
//! fixtures and no recordings. It connects over stdio or Streamable HTTP in each era the
//! server speaks (the handshake era at 2025-11-25, and 2026-07-28), runs the battery of checks
//! and reports one finding per check and era, each tied to the rule it enforces (`rules.rs`:
//! id, title, section of the specification, MUST or SHOULD, the sentence quoted).
//!
//! - `rules`: the catalog of checks;
//! - `battery`: the checks themselves;
//! - `wire`: the raw connections (bytes on stdio, HTTP exchanges);
//! - `sse_wire`: the legacy HTTP+SSE transport (2024-11-05), found by the fallback clients use;
//! - `schema`: JSON Schema validity, `$ref` resolution and validation against the revisions'
//!   schemas.
//!
//! Not here: tool calls the user did not ask for (`--call`), writes of any kind, OAuth flows (a
//! token comes from `--bearer-env`).

mod battery;
pub mod rules;
pub mod schema;
pub mod sse_wire;
pub mod wire;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use crate::report::escape;

pub use rules::{Level, Rule, RULES};

/// The revisions the checker knows, oldest first.
const KNOWN: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// A protocol revision to check in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Era(&'static str);

impl Era {
    /// The handshake era's latest revision.
    pub const HANDSHAKE: Era = Era("2025-11-25");
    /// The stateless revision (`server/discover`, per-request `_meta`).
    pub const MODERN: Era = Era("2026-07-28");

    /// The revision named `text`, if the checker knows it.
    pub fn parse(text: &str) -> Option<Era> {
        KNOWN.iter().copied().find(|k| *k == text).map(Era)
    }

    /// Every revision the checker knows.
    pub fn known() -> &'static [&'static str] {
        &KNOWN
    }

    /// `2025-11-25` …
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// Whether this is 2026-07-28 (no `initialize`).
    pub fn is_modern(self) -> bool {
        self.0 >= "2026-07-28"
    }
}

/// The server under test.
#[derive(Debug, Clone)]
pub enum Target {
    /// A command (program, arguments) started once per connection, spoken to over stdio.
    Stdio(Vec<String>),
    /// A Streamable HTTP endpoint, and headers for every request (`Authorization` …).
    Http {
        /// `http://host:port/path`.
        url: String,
        /// Sent with every request.
        headers: Vec<(String, String)>,
    },
    /// The legacy HTTP+SSE transport (2024-11-05): the URL of its SSE stream.
    LegacySse {
        /// `http://host:port/sse`.
        url: String,
        /// Sent with every request.
        headers: Vec<(String, String)>,
    },
}

impl Target {
    fn describe(&self) -> String {
        match self {
            Target::Stdio(words) => format!("stdio `{}`", words.join(" ")),
            Target::Http { url, .. } => format!("http {url}"),
            Target::LegacySse { url, .. } => format!("legacy sse {url}"),
        }
    }
}

/// What to check and how.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The server.
    pub target: Target,
    /// One era to check (which the server must speak), or `None`: each era it speaks.
    pub eras: Option<Era>,
    /// How long each answer is waited for.
    pub timeout: Duration,
    /// Tools to call, with their arguments (`--call`).
    pub calls: Vec<(String, Value)>,
    /// A tool call slow enough to cancel (`--slow-tool`).
    pub slow_tool: Option<(String, Value)>,
    /// Also call every tool annotated `readOnlyHint: true`, with arguments made up from its
    /// input schema (`--call-readonly`).
    pub call_readonly: bool,
    /// Where each revision's JSON schema is (`DIR/REV/schema.json`, the `schema/` folder of the
    /// specification's repository, `--spec-schemas`); `None`: the checks that need them skip.
    pub spec_schemas: Option<std::path::PathBuf>,
    /// For an HTTP target: fall back to the legacy HTTP+SSE transport as clients do (a POST
    /// of initialize refused with 400, 404 or 405, then a GET that gives an `endpoint` event).
    pub detect_legacy_sse: bool,
}

impl CheckOptions {
    /// Checks `target` in every era, 10 s per answer, calling nothing.
    pub fn new(target: Target) -> CheckOptions {
        CheckOptions {
            target,
            eras: None,
            timeout: Duration::from_secs(10),
            calls: Vec::new(),
            slow_tool: None,
            call_readonly: false,
            spec_schemas: None,
            detect_legacy_sse: true,
        }
    }
}

/// What a failing check saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What was sent (abbreviated), when one message provoked it.
    pub sent: Option<String>,
    /// What came back (abbreviated).
    pub got: Option<String>,
    /// Why that breaks the rule.
    pub why: String,
    /// Further instances of the same failure (other tools, other pages …).
    pub more: Vec<String>,
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The rule held.
    Pass,
    /// It did not.
    Fail(Failure),
    /// Not run, and why (capability not advertised, no session …).
    Skip(String),
}

/// One check in one era.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The revision it was checked at.
    pub era: String,
    /// The rule.
    pub rule: &'static Rule,
    /// What happened.
    pub status: Status,
}

impl Finding {
    /// `ERA/ID`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.era, self.rule.id)
    }

    /// Whether this finding fails the run's count: a failed MUST, or a failed SHOULD under
    /// `strict`.
    pub fn counts_as_failure(&self, strict: bool) -> bool {
        matches!(self.status, Status::Fail(_)) && (strict || self.rule.level == Level::Must)
    }

    /// A failed SHOULD outside `strict`.
    pub fn is_warning(&self, strict: bool) -> bool {
        matches!(self.status, Status::Fail(_)) && !strict && self.rule.level == Level::Should
    }
}

/// Check ids expected to fail (`ID` for every era, or `ERA/ID`), with the replay runner's
/// stale-entry rule: an unlisted failure fails the run, and so does a listed check that passes.
#[derive(Debug, Clone, Default)]
pub struct Expected {
    entries: BTreeSet<String>,
}

impl Expected {
    /// One entry per line, `#` starts a comment.
    pub fn parse(text: &str) -> Expected {
        let entries = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        Expected { entries }
    }

    fn lists(&self, finding: &Finding) -> bool {
        self.entries.contains(finding.rule.id) || self.entries.contains(&finding.key())
    }
}

/// Everything a run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// What was checked.
    pub target: String,
    /// One per check and era, in catalog order within each era.
    pub findings: Vec<Finding>,
    /// Observations that are no finding (eras not spoken, versions chosen …).
    pub notes: Vec<String>,
}

/// Runs the checks.
pub async fn run(options: &CheckOptions) -> Report {
    let mut fallback = None;
    if let (true, Target::Http { url, headers }) = (options.detect_legacy_sse, &options.target) {
        if let Some(seen) = sse_wire::detect(url, headers, options.timeout).await {
            let target = Target::LegacySse { url: url.clone(), headers: headers.clone() };
            fallback = Some((CheckOptions { target, ..options.clone() }, seen));
        }
    }
    let options = fallback.as_ref().map_or(options, |(o, _)| o);
    let mut report = Report { target: options.target.describe(), findings: Vec::new(), notes: Vec::new() };
    report.notes.extend(fallback.as_ref().map(|(_, seen)| seen.clone()));
    let eras: Vec<(Era, bool)> = match options.eras {
        Some(era) => vec![(era, true)],
        None => vec![(Era::HANDSHAKE, false), (Era::MODERN, false)],
    };
    let mut spoken = 0;
    for (era, required) in &eras {
        let run = battery::run_era(options, *era, *required).await;
        let skipped_whole = run.findings.iter().all(|f| matches!(f.status, Status::Skip(_)));
        if !skipped_whole {
            spoken += 1;
        }
        report.findings.extend(run.findings);
        report.notes.extend(run.notes);
    }
    if spoken == 0 && options.eras.is_none() {
        // A server that speaks neither era fails the handshake of the first.
        let first = report.findings.iter_mut().find(|f| f.rule.id == "lifecycle.initialize");
        if let Some(f) = first {
            f.status = Status::Fail(Failure {
                sent: None,
                got: None,
                why: format!("the server speaks neither era: {}", report.notes.join("; ")),
                more: Vec::new(),
            });
        }
    }
    report
}

impl Report {
    /// Whether the run passes: no counted failure that is not expected, no stale expectation.
    pub fn verdict(&self, strict: bool, expected: &Expected) -> bool {
        self.findings.iter().all(|f| !f.counts_as_failure(strict) || expected.lists(f))
            && self.stale(strict, expected).is_empty()
    }

    /// Expected-failure entries whose checks all ran and none failed.
    fn stale(&self, strict: bool, expected: &Expected) -> Vec<String> {
        expected
            .entries
            .iter()
            .filter(|entry| {
                let matching: Vec<&Finding> =
                    self.findings.iter().filter(|f| f.rule.id == entry.as_str() || f.key() == **entry).collect();
                let ran = matching.iter().any(|f| !matches!(f.status, Status::Skip(_)));
                ran && matching.iter().all(|f| !f.counts_as_failure(strict) && !f.is_warning(strict))
            })
            .cloned()
            .collect()
    }

    /// The text report: one line per check grouped by era and area, failures explained, the
    /// counts last.
    pub fn render(&self, strict: bool, expected: &Expected) -> String {
        let mut out = String::new();
        let w = &mut out;
        let _ = writeln!(w, "mcp-conformance check: {}", self.target);
        let mut group = String::new();
        let mut eras_skipped = Vec::new();
        for f in &self.findings {
            if let Some(why) = self.era_skipped(&f.era) {
                if !eras_skipped.contains(&f.era) {
                    let _ = writeln!(w, "== {}: every check skipped — {why}", f.era);
                    eras_skipped.push(f.era.clone());
                }
                continue;
            }
            let this = format!("{} {}", f.era, f.rule.area());
            if this != group {
                let _ = writeln!(w, "== {this}");
                group = this;
            }
            let label = match &f.status {
                Status::Pass => "pass",
                Status::Skip(_) => "skip",
                Status::Fail(_) if f.is_warning(strict) => "warn",
                Status::Fail(_) if expected.lists(f) => "FAIL (expected)",
                Status::Fail(_) => "FAIL",
            };
            let _ = write!(
                w,
                "  {label:<5} {}  {} [{} {}]",
                f.rule.id,
                f.rule.title,
                f.rule.level.as_str(),
                f.rule.section
            );
            match &f.status {
                Status::Skip(why) => {
                    let _ = writeln!(w, " — {why}");
                }
                Status::Fail(failure) => {
                    let _ = writeln!(w);
                    let _ = writeln!(w, "        rule: {} ({} {})", f.rule.quote, f.era, f.rule.section);
                    if let Some(sent) = &failure.sent {
                        let _ = writeln!(w, "        sent: {sent}");
                    }
                    if let Some(got) = &failure.got {
                        let _ = writeln!(w, "        got:  {got}");
                    }
                    let _ = writeln!(w, "        why:  {}", failure.why);
                    for more in &failure.more {
                        let _ = writeln!(w, "        and:  {more}");
                    }
                }
                Status::Pass => {
                    let _ = writeln!(w);
                }
            }
        }
        for note in &self.notes {
            let _ = writeln!(w, "note: {note}");
        }
        for entry in self.stale(strict, expected) {
            let _ = writeln!(w, "stale: {entry} is listed in expected failures but passes; remove the entry");
        }
        let (passed, failed, skipped, warned) = self.counts(strict);
        if warned > 0 {
            let _ = writeln!(w, "{warned} warning(s): SHOULD-level findings (--strict counts them as failures)");
        }
        let _ = writeln!(w, "{passed} passed, {failed} failed, {skipped} skipped");
        out
    }

    /// The one reason every check of `era` was skipped for, if they all were for one.
    fn era_skipped(&self, era: &str) -> Option<&str> {
        let mut reason = None;
        for f in self.findings.iter().filter(|f| f.era == era) {
            match (&f.status, reason) {
                (Status::Skip(why), None) => reason = Some(why.as_str()),
                (Status::Skip(why), Some(r)) if why == r => {}
                _ => return None,
            }
        }
        reason
    }

    /// passed, failed (counted), skipped, warnings.
    pub fn counts(&self, strict: bool) -> (usize, usize, usize, usize) {
        let passed = self.findings.iter().filter(|f| f.status == Status::Pass).count();
        let failed = self.findings.iter().filter(|f| f.counts_as_failure(strict)).count();
        let skipped = self.findings.iter().filter(|f| matches!(f.status, Status::Skip(_))).count();
        let warned = self.findings.iter().filter(|f| f.is_warning(strict)).count();
        (passed, failed, skipped, warned)
    }

    /// The ids (`ERA/ID`) of the findings that fail the count.
    pub fn failed_keys(&self, strict: bool) -> Vec<String> {
        self.findings.iter().filter(|f| f.counts_as_failure(strict)).map(Finding::key).collect()
    }

    /// JUnit XML: a testcase per finding (classname `ERA.area`), failures and skips as such,
    /// warnings as passing cases with the finding in `system-out`.
    pub fn junit(&self, strict: bool) -> String {
        let (_, failed, skipped, _) = self.counts(strict);
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuite name=\"mcp-conformance check\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\">",
            self.findings.len()
        );
        for f in &self.findings {
            let class = escape(&format!("{}.{}", f.era, f.rule.area()));
            let name = escape(&format!("{}: {}", f.rule.id, f.rule.title));
            let _ = write!(out, "  <testcase classname=\"{class}\" name=\"{name}\"");
            match &f.status {
                Status::Pass => out.push_str("/>\n"),
                Status::Skip(why) => {
                    let _ = writeln!(out, ">\n    <skipped message=\"{}\"/>\n  </testcase>", escape(why));
                }
                Status::Fail(failure) => {
                    let text = escape(&failure_text(f, failure));
                    if f.counts_as_failure(strict) {
                        let _ = writeln!(
                            out,
                            ">\n    <failure message=\"{} {}\">{text}</failure>\n  </testcase>",
                            f.rule.level.as_str(),
                            escape(&failure.why)
                        );
                    } else {
                        let _ = writeln!(out, ">\n    <system-out>warning: {text}</system-out>\n  </testcase>");
                    }
                }
            }
        }
        out.push_str("</testsuite>\n");
        out
    }

    /// The report as JSON: target, notes, counts and every finding with its rule.
    pub fn json(&self, strict: bool) -> String {
        let (passed, failed, skipped, warned) = self.counts(strict);
        let findings: Vec<Value> = self
            .findings
            .iter()
            .map(|f| {
                let mut v = json!({
                    "id": f.rule.id,
                    "era": f.era,
                    "area": f.rule.area(),
                    "title": f.rule.title,
                    "level": f.rule.level.as_str(),
                    "section": f.rule.section,
                    "quote": f.rule.quote,
                });
                match &f.status {
                    Status::Pass => v["status"] = json!("pass"),
                    Status::Skip(why) => {
                        v["status"] = json!("skip");
                        v["skip_reason"] = json!(why);
                    }
                    Status::Fail(failure) => {
                        v["status"] = json!(if f.is_warning(strict) { "warn" } else { "fail" });
                        v["sent"] = json!(failure.sent);
                        v["received"] = json!(failure.got);
                        v["why"] = json!(failure.why);
                        v["more"] = json!(failure.more);
                    }
                }
                v
            })
            .collect();
        let report = json!({
            "target": self.target,
            "strict": strict,
            "summary": {"passed": passed, "failed": failed, "skipped": skipped, "warnings": warned},
            "notes": self.notes,
            "findings": findings,
        });
        serde_json::to_string_pretty(&report).expect("a report serializes") + "\n"
    }
}

fn failure_text(f: &Finding, failure: &Failure) -> String {
    let mut text = format!("rule: {} ({} {})\n", f.rule.quote, f.era, f.rule.section);
    if let Some(sent) = &failure.sent {
        let _ = writeln!(text, "sent: {sent}");
    }
    if let Some(got) = &failure.got {
        let _ = writeln!(text, "got: {got}");
    }
    let _ = writeln!(text, "why: {}", failure.why);
    for more in &failure.more {
        let _ = writeln!(text, "and: {more}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(id: &str, status: Status) -> Finding {
        Finding { era: "2025-11-25".into(), rule: rules::rule(id), status }
    }

    fn failed() -> Status {
        Status::Fail(Failure { sent: Some("{}".into()), got: Some("<x>".into()), why: "because".into(), more: vec![] })
    }

    #[test]
    fn verdict_levels_strict_and_baseline() {
        let report = Report {
            target: "t".into(),
            findings: vec![finding("ping.answers", Status::Pass), finding("tools.name-charset", failed())],
            notes: vec![],
        };
        let none = Expected::default();
        assert!(report.verdict(false, &none), "a failed SHOULD is a warning");
        assert!(!report.verdict(true, &none), "--strict counts it");
        assert!(report.render(false, &none).ends_with("1 passed, 0 failed, 0 skipped\n"));
        assert!(report.render(true, &none).ends_with("1 passed, 1 failed, 0 skipped\n"));
        let listed = Expected::parse("2025-11-25/tools.name-charset  # known\n");
        assert!(report.verdict(true, &listed));
        let stale = Expected::parse("ping.answers\n");
        assert!(!report.verdict(false, &stale), "a listed check that passes is stale");
        assert!(report.render(false, &stale).contains("stale: ping.answers"));
        let must = Report { target: "t".into(), findings: vec![finding("ping.answers", failed())], notes: vec![] };
        assert!(!must.verdict(false, &none));
    }

    #[test]
    fn junit_and_json_carry_every_finding() {
        let report = Report {
            target: "t".into(),
            findings: vec![
                finding("ping.answers", failed()),
                finding("tools.name-charset", failed()),
                finding("completion.complete", Status::Skip("not advertised".into())),
            ],
            notes: vec![],
        };
        let xml = report.junit(false);
        assert!(xml.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""), "{xml}");
        assert!(xml.contains("got: &lt;x&gt;"), "{xml}");
        assert!(xml.contains("<system-out>warning: "), "{xml}");
        let json: Value = serde_json::from_str(&report.json(false)).unwrap();
        assert_eq!(json["summary"], json!({"passed": 0, "failed": 1, "skipped": 1, "warnings": 1}));
        assert_eq!(json["findings"][1]["status"], "warn");
        assert_eq!(json["findings"][0]["level"], "MUST");
    }
}
