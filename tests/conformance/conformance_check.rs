//! `mcp-conformance check`: the live spec check, driven through the binary.
//!
//! - a fixture server (`tests/fixtures/check_server.py`, correct in both eras over stdio and
//!   HTTP) passes with no failure and no warning, and each of its broken variants is caught by
//!   the check named for the rule it breaks and by no other MUST check;
//! - bad servers (exits at once, never answers, garbage, a 50 MB line, a flood) fail the check
//!   they hit, in bounded time, with the report still written;
//! - real servers nobody here wrote (server-everything over stdio and Streamable HTTP, the Python
//!   time server in both eras) and mcpwire's own servers;
//! - the command line (`--help`, usage errors, exit codes, `--expected-failures`).

use crate::examples;
use crate::serving;
use crate::support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn bin() -> &'static str {
    examples::bin_path("mcp-conformance")
}

fn python() -> String {
    // The fixture needs only the standard library: the peers' Python when installed, else the
    // machine's.
    support::peers().remove("MCP_PYTHON").unwrap_or_else(|| "python3".into())
}

fn fixture() -> String {
    support::repo_path("tests/fixtures/check_server.py").display().to_string()
}

fn scratch(name: &str) -> PathBuf {
    crate::support::scratch_dir("check", name)
}

/// Runs `mcp-conformance check ARGS` with a hang guard (killed after 5 minutes: a hang, never a
/// timing assertion).
fn check(args: &[&str]) -> Output {
    let mut child =
        Command::new(bin()).arg("check").args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("check hung: {}", String::from_utf8_lossy(&out.stdout));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `check` with `--json`: the exit code, the text, and the JSON report.
fn check_json(name: &str, args: &[&str]) -> (Option<i32>, String, Value) {
    let dir = scratch(name);
    let json = dir.join("report.json");
    let mut all: Vec<&str> = args.to_vec();
    let path = json.display().to_string();
    all.extend(["--json", &path]);
    let out = check(&all);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("no report written ({e}): {text}")),
    )
    .unwrap();
    (out.status.code(), text, report)
}

/// The findings of `status` (`fail`, `warn`, `pass`, `skip`) as `ERA/ID`.
fn with_status(report: &Value, status: &str) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == status)
        .map(|f| format!("{}/{}", f["era"].as_str().unwrap(), f["id"].as_str().unwrap()))
        .collect()
}

/// The failed or warned findings (`fail` and `warn`), as `ERA/ID`, with their level.
fn findings_against(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "fail" || f["status"] == "warn")
        .map(|f| {
            (
                format!("{}/{}", f["era"].as_str().unwrap(), f["id"].as_str().unwrap()),
                f["level"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn stdio_fixture(broken: Option<&str>) -> String {
    let mut command = format!("{} {}", python(), fixture());
    if let Some(rule) = broken {
        command.push_str(&format!(" --break {rule}"));
    }
    command
}

/// The fixture over HTTP on a free port; killed when dropped.
struct HttpFixture {
    child: Child,
    url: String,
}

impl HttpFixture {
    fn start(broken: Option<&str>) -> HttpFixture {
        let mut command = Command::new(python());
        command.arg(fixture()).args(["--http", "0"]);
        if let Some(rule) = broken {
            command.args(["--break", rule]);
        }
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line}")).to_owned();
        HttpFixture { child, url }
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const FIXTURE_FLAGS: [&str; 6] = ["--timeout-ms", "5000", "--call", "echo={\"text\":\"hi\"}", "--slow-tool", "slow={}"];

#[test]
fn the_fixture_passes_every_check_in_both_eras_over_stdio() {
    let server = stdio_fixture(None);
    let mut args = vec!["--server", server.as_str()];
    args.extend(FIXTURE_FLAGS);
    let (code, text, report) = check_json("clean-stdio", &args);
    assert_eq!(findings_against(&report), vec![], "{text}");
    assert_eq!(code, Some(0), "{text}");
    let passed = with_status(&report, "pass");
    for key in [
        "2025-11-25/lifecycle.initialize",
        "2026-07-28/lifecycle.discover",
        "2025-11-25/tools.call-result",
        "2025-11-25/cancellation.no-response",
        "2026-07-28/lifecycle.unsupported-version",
        "2025-11-25/pagination.cursor",
        "2025-11-25/stdio.stdout-messages-only",
        "2025-11-25/completion.complete",
        "2025-11-25/lifecycle.before-initialize",
    ] {
        assert!(passed.contains(&key.to_owned()), "{key} did not pass: {text}");
    }
    // The revisions' schemas are the user's to give (--spec-schemas): without them, said so.
    let skipped = with_status(&report, "skip");
    assert!(skipped.contains(&"2026-07-28/results.schema".to_owned()), "{text}");
    assert!(text.contains("pass --spec-schemas DIR"), "{text}");
    assert!(text.ends_with(" failed, 0 skipped\n") || text.contains(" passed, 0 failed, "), "{text}");
}

#[test]
fn the_fixture_passes_every_check_in_both_eras_over_http() {
    let server = HttpFixture::start(None);
    let mut args = vec!["--url", server.url.as_str()];
    args.extend(FIXTURE_FLAGS);
    let (code, text, report) = check_json("clean-http", &args);
    assert_eq!(findings_against(&report), vec![], "{text}");
    assert_eq!(code, Some(0), "{text}");
    let passed = with_status(&report, "pass");
    for key in [
        "2025-11-25/http.origin",
        "2025-11-25/http.session-deleted",
        "2026-07-28/http.header-mismatch",
        "2026-07-28/http.unknown-method-404",
        "2026-07-28/http.get-405",
        "2025-11-25/http.accept",
        "2025-11-25/http.content-type",
        "2025-11-25/http.host",
        "2026-07-28/http.host",
        "2025-11-25/http.resume",
        "2025-11-25/cancellation.no-response",
        "2025-11-25/jsonrpc.response-to-nothing",
    ] {
        assert!(passed.contains(&key.to_owned()), "{key} did not pass: {text}");
    }
}

/// Each broken variant: the check named for its rule catches it (a failure for a MUST, a
/// warning for a SHOULD), in every era it applies to, and no other MUST check fails.
#[test]
fn each_broken_rule_is_caught_by_its_check_and_no_other_must_check() {
    let cases: [(&str, bool, &str, &[&str]); 19] = [
        ("name-spaces", false, "tools.name-charset", &["2025-11-25", "2026-07-28"]),
        ("name-long", false, "tools.name-length", &["2025-11-25", "2026-07-28"]),
        ("duplicate-tool", false, "tools.name-unique", &["2025-11-25", "2026-07-28"]),
        ("array-schema", false, "tools.input-schema-object", &["2025-11-25", "2026-07-28"]),
        ("unknown-type", false, "tools.schema-valid", &["2025-11-25", "2026-07-28"]),
        ("unserved-capability", false, "capabilities.served", &["2025-11-25", "2026-07-28"]),
        ("bad-version", false, "lifecycle.unknown-version", &["2025-11-25"]),
        ("unknown-method-result", false, "errors.unknown-method", &["2025-11-25", "2026-07-28"]),
        ("unknown-tool-success", false, "errors.unknown-tool", &["2025-11-25", "2026-07-28"]),
        ("answer-cancelled", false, "cancellation.no-response", &["2025-11-25", "2026-07-28"]),
        ("any-origin", true, "http.origin", &["2025-11-25", "2026-07-28"]),
        ("any-name", true, "http.name-mismatch", &["2026-07-28"]),
        ("any-version-header", true, "http.version-header-mismatch", &["2026-07-28"]),
        ("serve-before-initialize", false, "lifecycle.before-initialize", &["2025-11-25"]),
        ("any-host", true, "http.host", &["2025-11-25", "2026-07-28"]),
        ("no-resume", true, "http.resume", &["2025-11-25"]),
        ("answer-cancelled", true, "cancellation.no-response", &["2025-11-25"]),
        ("answer-response", false, "jsonrpc.response-to-nothing", &["2025-11-25", "2026-07-28"]),
        ("answer-response", true, "jsonrpc.response-to-nothing", &["2025-11-25"]),
    ];
    let mut problems = Vec::new();
    for (rule, http, id, eras) in cases {
        let http_server = http.then(|| HttpFixture::start(Some(rule)));
        let stdio = stdio_fixture(Some(rule));
        let mut args: Vec<&str> = match &http_server {
            Some(s) => vec!["--url", s.url.as_str()],
            None => vec!["--server", stdio.as_str()],
        };
        // The cancellation check waits the whole timeout for an answer that must not come
        // (twice: one per era): only the case that breaks it is given the slow tool.
        let flags = if rule == "answer-cancelled" { &FIXTURE_FLAGS[..] } else { &FIXTURE_FLAGS[..4] };
        args.extend(flags);
        let (code, text, report) = check_json(&format!("{rule}-{http}"), &args);
        let found = findings_against(&report);
        let level = found.iter().find(|(k, _)| k.ends_with(&format!("/{id}"))).map(|(_, l)| l.clone());
        for era in eras {
            if !found.iter().any(|(k, _)| *k == format!("{era}/{id}")) {
                problems.push(format!("--break {rule}: {era}/{id} did not catch it:\n{text}"));
            }
        }
        let other_musts: Vec<&(String, String)> =
            found.iter().filter(|(k, l)| l == "MUST" && !k.ends_with(&format!("/{id}"))).collect();
        if !other_musts.is_empty() {
            problems.push(format!("--break {rule}: other MUST checks failed too: {other_musts:?}\n{text}"));
        }
        let want = if level.as_deref() == Some("MUST") { Some(1) } else { Some(0) };
        if code != want {
            problems.push(format!("--break {rule}: exit {code:?}, expected {want:?} ({level:?})"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn strict_counts_should_findings_and_expected_failures_have_stale_entries() {
    let server = stdio_fixture(Some("name-spaces"));
    let dir = scratch("strict");
    let out = check(&["--server", &server, "--timeout-ms", "5000", "--strict"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let baseline = dir.join("expected.txt");
    std::fs::write(&baseline, "tools.name-charset   # spaces in a name, known\n").unwrap();
    let path = baseline.display().to_string();
    let out = check(&["--server", &server, "--timeout-ms", "5000", "--strict", "--expected-failures", &path]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("FAIL (expected) tools.name-charset"), "{text}");
    // The same baseline against the clean fixture: the entry is stale.
    let clean = stdio_fixture(None);
    let out = check(&["--server", &clean, "--timeout-ms", "5000", "--strict", "--expected-failures", &path]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("stale: tools.name-charset"), "{text}");
}

#[test]
fn junit_report_is_written() {
    let server = stdio_fixture(Some("array-schema"));
    let dir = scratch("junit");
    let xml = dir.join("report.xml");
    let path = xml.display().to_string();
    let out = check(&["--server", &server, "--era", "2025-11-25", "--timeout-ms", "5000", "--junit", &path]);
    assert_eq!(out.status.code(), Some(1));
    let xml = std::fs::read_to_string(&xml).unwrap();
    assert!(xml.contains("<testsuite name=\"mcp-conformance check\""), "{xml}");
    assert!(xml.contains("classname=\"2025-11-25.tools\" name=\"tools.input-schema-object: "), "{xml}");
    assert!(xml.contains("<failure message=\"MUST the inputSchema of &quot;listy&quot;"), "{xml}");
    assert!(!xml.contains("2026-07-28"), "--era 2025-11-25 checks one era: {xml}");
}

/// Bad servers: each fails the check it hits, the run ends (bounded by `--timeout-ms`), and
/// the report is written.
#[test]
fn bad_servers_fail_clearly_in_bounded_time_with_the_report_written() {
    // The timeout bounds the silent and flooding servers' runs; the others answer, and theirs is
    // only a hang guard (generous: skipping 50 MB takes a while in a debug build on a busy machine).
    let cases = [
        ("exit", "2025-11-25/lifecycle.initialize", "the server's stdout ended", "2000"),
        ("silent", "2025-11-25/lifecycle.initialize", "timed out", "2000"),
        ("garbage", "2025-11-25/stdio.stdout-messages-only", "this is not JSON", "20000"),
        ("huge-line", "2025-11-25/stdio.stdout-messages-only", "a line of more than", "60000"),
        ("flood", "2025-11-25/lifecycle.initialize", "timed out", "2000"),
    ];
    // Side by side: each case is its own runner and server, and most of a case is waiting.
    std::thread::scope(|scope| {
        for (rule, key, words, timeout) in cases {
            scope.spawn(move || {
                let server = stdio_fixture(Some(rule));
                let (code, text, report) = check_json(rule, &["--server", &server, "--timeout-ms", timeout]);
                assert_eq!(code, Some(1), "--break {rule}: {text}");
                let failed = with_status(&report, "fail");
                assert!(failed.contains(&key.to_owned()), "--break {rule}: {key} did not fail: {text}");
                assert!(text.contains(words), "--break {rule}: {words:?} not in the report: {text}");
            });
        }
    });
}

#[test]
fn server_everything_over_stdio() {
    let server = format!("{} {} stdio", support::peer("MCP_NODE"), support::peer("MCP_EVERYTHING_JS"));
    let (code, text, report) = check_json("everything-stdio", &["--server", &server, "--timeout-ms", "20000"]);
    let mut found = findings_against(&report);
    found.sort();
    // Its findings, each judged (conformance/README.md, "Findings on real servers").
    assert_eq!(found, everything_findings(false), "{text}");
    assert_eq!(code, Some(0), "{text}");
}

#[test]
fn server_everything_over_streamable_http() {
    let server = support::everything_http("streamableHttp");
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let (code, text, report) = check_json("everything-http", &["--url", &url, "--timeout-ms", "20000"]);
    let mut found = findings_against(&report);
    found.sort();
    assert_eq!(found, everything_findings(true), "{text}");
    assert_eq!(code, Some(1), "{text}");
}

/// server-everything's findings (all at 2025-11-25: it does not speak 2026-07-28), each judged
/// in conformance/README.md ("Findings on real servers").
fn everything_findings(http: bool) -> Vec<(String, String)> {
    let mut found = vec![
        ("2025-11-25/errors.invalid-params", "SHOULD"),
        ("2025-11-25/errors.unknown-tool-protocol-error", "SHOULD"),
    ];
    if http {
        found.extend([
            ("2025-11-25/http.origin", "MUST"),
            ("2025-11-25/http.session-deleted", "MUST"),
            ("2025-11-25/http.host", "SHOULD"),
        ]);
    } else {
        // Over HTTP a request without a session is refused before any handler sees it.
        found.extend([
            ("2025-11-25/errors.parse-error", "SHOULD"),
            ("2025-11-25/lifecycle.before-initialize", "SHOULD"),
        ]);
    }
    let mut found: Vec<(String, String)> = found.into_iter().map(|(k, l)| (k.to_owned(), l.to_owned())).collect();
    found.sort();
    found
}

/// mcpwire's own servers pass with no failure and no warning (checked with `--strict`, so a
/// warning counts): the echo server and the agent over
/// stdio, the conformance server over HTTP, and `mcp-bridge serve` over HTTP, on its embedded
/// default (the echo server and the agent) and in front of the echo server alone.
#[test]
fn mcpwires_own_servers_pass_with_no_failure_and_no_warning() {
    let strict = ["--timeout-ms", "20000", "--strict"];
    let echo = examples::example_path("echo_server").display().to_string();
    let agent = examples::example_path("agent").display().to_string();
    let mut problems = Vec::new();
    let mut judge = |name: &str, target: [&str; 2]| {
        let mut args = target.to_vec();
        args.extend(strict);
        let (code, text, report) = check_json(name, &args);
        let unexpected: Vec<(String, String)> = findings_against(&report);
        if code != Some(0) || !unexpected.is_empty() {
            problems.push(format!("{name}: {unexpected:?}\n{text}"));
        }
    };
    judge("echo", ["--server", &echo]);
    judge("agent", ["--server", &agent]);
    let mut conformance_server = Command::new(examples::example_path("conformance_server"))
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(conformance_server.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    judge("conformance-server", ["--url", &url]);
    let _ = conformance_server.kill();
    let _ = conformance_server.wait();
    let embedded = serving::ServingBridge::start(&[]);
    judge("bridge-embedded", ["--url", &embedded.url]);
    let echo_only = serving::ServingBridge::start(&["--", &echo]);
    judge("bridge-echo", ["--url", &echo_only.url]);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_command_line() {
    for sub in ["check", "roundtrip", "record", "replay", "serve"] {
        let out = Command::new(bin()).args([sub, "--help"]).output().unwrap();
        assert!(out.status.success(), "{sub} --help");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: mcp-conformance"), "{sub}");
    }
    let out = Command::new(bin()).args(["check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "check needs --server or --url");
    let out = Command::new(bin()).args(["check", "--server", "x", "--url", "http://127.0.0.1:1/mcp"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "one of them");
    let out = Command::new(bin()).args(["check", "--server", "x", "--era", "1999-01-01"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("2026-07-28"), "the known revisions are listed");
    let out = Command::new(bin())
        .args(["check", "--url", "http://127.0.0.1:1/mcp", "--bearer-env", "MCP_CHECK_UNSET_VAR"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(bin()).args(["check", "--server", "x", "--header", "a:b"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--header is for --url");
    let out = Command::new(bin()).args(["replay"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "replay needs recordings");
}

/// `--call-readonly` calls the tools annotated `readOnlyHint: true` (the fixture's `echo`) with
/// arguments made up from their schemas, and checks the result against the `outputSchema`;
/// without it (or `--call`) no tool is called.
#[test]
fn call_readonly_calls_the_read_only_tools() {
    let server = stdio_fixture(None);
    let (code, text, report) = check_json(
        "readonly",
        &["--server", &server, "--era", "2025-11-25", "--timeout-ms", "5000", "--call-readonly"],
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(with_status(&report, "pass").contains(&"2025-11-25/tools.call-result".to_owned()), "{text}");
    let (_, text, report) =
        check_json("no-calls", &["--server", &server, "--era", "2025-11-25", "--timeout-ms", "5000"]);
    assert!(with_status(&report, "skip").contains(&"2025-11-25/tools.call-result".to_owned()), "{text}");
}

/// mcp-server-time (the Python SDK 2.3) speaks both eras: the 2026-07-28 battery runs against a
/// real server. Its one finding, in both eras: a malformed line gets no answer.
#[test]
fn the_python_time_server_in_both_eras() {
    let (code, text, report) =
        check_json("time", &["--server", &support::peer("MCP_SERVER_TIME"), "--timeout-ms", "30000"]);
    let mut found = findings_against(&report);
    found.sort();
    let expected: Vec<(String, String)> = ["2025-11-25", "2026-07-28"]
        .iter()
        .map(|era| (format!("{era}/errors.parse-error"), "SHOULD".to_owned()))
        .collect();
    assert_eq!(found, expected, "{text}");
    let passed = with_status(&report, "pass");
    for key in ["2026-07-28/lifecycle.discover", "2026-07-28/lifecycle.unsupported-version"] {
        assert!(passed.contains(&key.to_owned()), "{key} did not pass: {text}");
    }
    assert_eq!(code, Some(0), "{text}");
}

/// A server behind a bearer token (`mcp-bridge serve --auth-token-env` in front of the echo
/// server): without the token the handshake fails clearly naming the 401; with `--bearer-env`
/// (or the same header through `--header`) every check passes, and the token is in no output.
#[test]
fn a_protected_server_is_checked_with_its_token_and_refused_without_it() {
    let token = "conformance-check-token-0123456789abcdef";
    let echo = examples::example_path("echo_server").display().to_string();
    let bridge = serving::ServingBridge::start_with(&["--auth-token-env", "MCP_CHECK_TOKEN", "--", &echo], |c| {
        c.env("MCP_CHECK_TOKEN", token);
    });
    let (code, text, _) = check_json("protected-no-token", &["--url", &bridge.url, "--era", "2025-11-25"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("FAIL  lifecycle.initialize") && text.contains("401"), "{text}");

    let run = |name: &str, extra: &[&str]| {
        let dir = scratch(name);
        let json = dir.join("report.json").display().to_string();
        let mut child = Command::new(bin());
        child
            .args(["check", "--url", &bridge.url, "--strict", "--timeout-ms", "20000", "--json", &json])
            .args(extra)
            .env("MCP_CHECK_TOKEN", token);
        let out = child.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        let report = std::fs::read_to_string(&json).unwrap_or_default();
        (out.status.code(), text, report)
    };
    let header = format!("Authorization:Bearer {token}");
    for (name, extra) in
        [("bearer-env", vec!["--bearer-env", "MCP_CHECK_TOKEN"]), ("header", vec!["--header", &header])]
    {
        let (code, text, report) = run(name, &extra);
        assert_eq!(code, Some(0), "{name}: {text}");
        assert!(text.contains(" 0 failed"), "{name}: {text}");
        if name == "bearer-env" {
            assert!(!text.contains(token) && !report.contains(token), "{name}: the token was written out");
        }
    }
}

/// The revisions' schemas the schema test checks against, in the layout `--spec-schemas` reads
/// (`DIR/REV/schema.json`): `MCP_SPEC_SCHEMAS` when set (by hand, the specification's own:
/// `MCP_SPEC_SCHEMAS=../shared/spec`), else the small ones [`write_own_spec_schemas`] writes.
fn spec_schemas() -> String {
    match std::env::var("MCP_SPEC_SCHEMAS") {
        Ok(dir) => dir,
        Err(_) => write_own_spec_schemas().display().to_string(),
    }
}

/// Writes schemas of our own for the handshake revisions, holding only the definitions the check
/// looks up (the results it validates and `Tool`), loose but for the content blocks, whose union
/// differs between revisions as the specification's does: audio from 2025-03-26, `resource_link`
/// from 2025-06-18. The specification's schemas are read, never copied into the repository, and
/// CI has no `../shared`.
fn write_own_spec_schemas() -> PathBuf {
    let dir = scratch("spec-schemas");
    for revision in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        std::fs::create_dir_all(dir.join(revision)).unwrap();
        std::fs::write(dir.join(revision).join("schema.json"), own_revision_schema(revision).to_string()).unwrap();
    }
    dir
}

/// One revision's schema: draft-07 with `definitions` before 2025-11-25, draft 2020-12 with
/// `$defs` from it, as the specification's files are.
fn own_revision_schema(revision: &str) -> Value {
    let (dialect, defs) = if revision < "2025-11-25" {
        ("http://json-schema.org/draft-07/schema#", "definitions")
    } else {
        ("https://json-schema.org/draft/2020-12/schema", "$defs")
    };
    let to = |name: &str| json!({ "$ref": format!("#/{defs}/{name}") });
    let object = |required: &[&str]| json!({ "type": "object", "required": required });
    let list_of = |member: &str, items: Value| json!({ "type": "object", "required": [member], "properties": { member: { "type": "array", "items": items } } });

    let mut blocks = vec![("TextContent", "text", vec!["text"]), ("ImageContent", "image", vec!["data", "mimeType"])];
    if revision >= "2025-03-26" {
        blocks.push(("AudioContent", "audio", vec!["data", "mimeType"]));
    }
    if revision >= "2025-06-18" {
        blocks.push(("ResourceLink", "resource_link", vec!["uri", "name"]));
    }
    blocks.push(("EmbeddedResource", "resource", vec!["resource"]));

    let mut definitions = serde_json::Map::new();
    for (name, kind, required) in &blocks {
        let mut required = required.clone();
        required.push("type");
        let block = json!({ "type": "object", "required": required, "properties": { "type": { "const": kind } } });
        definitions.insert((*name).to_owned(), block);
    }
    let union: Vec<Value> = blocks.iter().map(|(name, _, _)| to(name)).collect();
    definitions.insert("ContentBlock".into(), json!({ "anyOf": union }));
    definitions.insert("InitializeResult".into(), object(&["protocolVersion", "capabilities", "serverInfo"]));
    definitions.insert("Tool".into(), object(&["name", "inputSchema"]));
    definitions.insert("ListToolsResult".into(), list_of("tools", to("Tool")));
    definitions.insert("ListResourcesResult".into(), list_of("resources", object(&["uri", "name"])));
    definitions
        .insert("ListResourceTemplatesResult".into(), list_of("resourceTemplates", object(&["uriTemplate", "name"])));
    definitions.insert("ListPromptsResult".into(), list_of("prompts", object(&["name"])));
    definitions.insert("CallToolResult".into(), list_of("content", to("ContentBlock")));
    definitions.insert("ReadResourceResult".into(), list_of("contents", object(&["uri"])));
    let message =
        json!({ "type": "object", "required": ["role", "content"], "properties": { "content": to("ContentBlock") } });
    definitions.insert("GetPromptResult".into(), list_of("messages", message));
    let completion =
        json!({ "type": "object", "required": ["values"], "properties": { "values": { "type": "array" } } });
    definitions.insert(
        "CompleteResult".into(),
        json!({ "type": "object", "required": ["completion"], "properties": { "completion": completion } }),
    );
    json!({ "$schema": dialect, defs: definitions })
}

/// `results.schema` judges each result by the schema of the revision negotiated: the clean
/// fixture passes it at every revision of the handshake era, and a resource link (a content
/// block since 2025-06-18) in a prompt fails it at 2025-03-26 and 2024-11-05 only.
///
/// The schemas are our own (see [`write_own_spec_schemas`]), so that the test runs where the
/// specification is not at hand; run it by hand against the specification's own with
/// `MCP_SPEC_SCHEMAS=../shared/spec cargo test --test conformance -- results_are_checked`.
#[test]
fn results_are_checked_against_the_negotiated_revisions_schema() {
    let spec = spec_schemas();
    let clean = stdio_fixture(None);
    let old_content = stdio_fixture(Some("old-content"));
    let mut problems = Vec::new();
    for era in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        for (server, should_fail) in [(&clean, false), (&old_content, era < "2025-06-18")] {
            let args = ["--server", server.as_str(), "--era", era, "--spec-schemas", &spec, "--timeout-ms", "5000"];
            let (code, text, report) = check_json(&format!("schema-{era}-{should_fail}"), &args);
            let key = format!("{era}/results.schema");
            let found = findings_against(&report);
            let (want_code, want_found) =
                if should_fail { (Some(1), vec![(key.clone(), "MUST".to_owned())]) } else { (Some(0), vec![]) };
            if found != want_found || code != want_code {
                problems.push(format!("{server} at {era}: {found:?}, exit {code:?}\n{text}"));
            }
            if !should_fail && !with_status(&report, "pass").contains(&key) {
                problems.push(format!("{server} at {era}: results.schema did not run\n{text}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The legacy HTTP+SSE transport (2024-11-05), found as clients find it (POST initialize refused,
/// then GET gives an `endpoint` event) or named with `--transport sse`: server-everything's `sse`
/// mode has the findings it has over stdio, but for the parse error (a stdio check), and
/// `mcp-bridge serve`'s legacy endpoint passes with no failure and no warning.
#[test]
fn the_legacy_sse_transport_is_found_and_checked() {
    let everything = support::everything_http("sse");
    let url = format!("http://127.0.0.1:{}/sse", everything.port);
    let (code, text, report) = check_json("everything-sse", &["--url", &url, "--timeout-ms", "20000"]);
    assert!(text.contains("checked over the legacy HTTP+SSE transport"), "{text}");
    assert!(report["target"].as_str().unwrap().starts_with("legacy sse "), "{text}");
    let mut found = findings_against(&report);
    found.sort();
    let expected: Vec<(String, String)> = [
        "2025-11-25/errors.invalid-params",
        "2025-11-25/errors.unknown-tool-protocol-error",
        "2025-11-25/lifecycle.before-initialize",
    ]
    .iter()
    .map(|k| ((*k).to_owned(), "SHOULD".to_owned()))
    .collect();
    assert_eq!(found, expected, "{text}");
    assert!(with_status(&report, "pass").contains(&"2025-11-25/lifecycle.initialize".to_owned()), "{text}");
    assert_eq!(code, Some(0), "{text}");

    let echo = examples::example_path("echo_server").display().to_string();
    let bridge = serving::ServingBridge::start(&["--", &echo]);
    let sse = bridge.url.replace("/mcp", "/sse");
    for transport in ["sse", "auto"] {
        let args = ["--url", &sse, "--transport", transport, "--strict", "--timeout-ms", "20000"];
        let (code, text, report) = check_json(&format!("bridge-sse-{transport}"), &args);
        assert_eq!(findings_against(&report), vec![], "{text}");
        assert!(with_status(&report, "pass").contains(&"2025-11-25/tools.name-unique".to_owned()), "{text}");
        assert_eq!(code, Some(0), "{text}");
    }
}
