//! The battery: connects in one era as a client of that era would (`initialize` then
//! `notifications/initialized`, or `server/discover` with the per-request `_meta` of
//! 2026-07-28), then runs every check of `rules.rs` that applies, recording one finding each:
//! pass, fail (what was sent, what came back, why that breaks the rule) or skip (why not run).
//!
//! It calls no tool unless told (`--call`, `--slow-tool`); everything else it sends reads. Each
//! wait is bounded by the run's timeout, so a server that never answers costs one timeout per
//! check at most, and a server that is gone makes the rest of its era skip.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::rules::Transport;
use super::rules::{rule, RULES};
use super::schema::{self, SpecSchemas};
use super::sse_wire::SseWire;
use super::wire::{excerpt, HttpWire, Reply, StdioWire, Unsolicited, Wire};
use super::{CheckOptions, Era, Failure, Finding, Status, Target};

/// The unknown protocol version offered.
const UNKNOWN_VERSION: &str = "1900-01-01";
/// Pages followed at most per list.
const MAX_PAGES: usize = 100;

/// What one era's run found, and whether the server speaks it at all.
pub(super) struct EraRun {
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
}

struct Run<'o> {
    options: &'o CheckOptions,
    era: Era,
    http: bool,
    next_id: i64,
    findings: BTreeMap<&'static str, Status>,
    notes: Vec<String>,
    spec: SpecSchemas,
    /// Ids of the requests we sent, as JSON.
    sent_ids: HashSet<String>,
}

fn client_info() -> Value {
    json!({"name": "mcp-conformance", "version": env!("CARGO_PKG_VERSION")})
}

impl<'o> Run<'o> {
    fn modern(&self) -> bool {
        self.era.is_modern()
    }

    fn timeout(&self) -> Duration {
        self.options.timeout
    }

    fn pass(&mut self, id: &'static str) {
        rule(id);
        self.findings.entry(id).or_insert(Status::Pass);
    }

    fn skip(&mut self, id: &'static str, why: impl Into<String>) {
        rule(id);
        self.findings.entry(id).or_insert(Status::Skip(why.into()));
    }

    /// A failure of `id`; a second one of the same check adds its reason to the first.
    fn fail(&mut self, id: &'static str, sent: Option<&Value>, got: Option<String>, why: impl Into<String>) {
        rule(id);
        let why = why.into();
        match self.findings.get_mut(id) {
            Some(Status::Fail(f)) => {
                if f.more.len() < 20 {
                    f.more.push(why);
                }
            }
            _ => {
                let failure = Failure { sent: sent.map(|m| excerpt(&m.to_string())), got, why, more: Vec::new() };
                self.findings.insert(id, Status::Fail(failure));
            }
        }
    }

    /// A request at this era: `_meta` carries the version, client info and capabilities at
    /// 2026-07-28.
    fn message(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.sent_ids.insert(id.to_string());
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": self.with_meta(params)})
    }

    fn with_meta(&self, mut params: Value) -> Value {
        if self.modern() {
            if let Some(p) = params.as_object_mut() {
                let meta = p.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.entry("io.modelcontextprotocol/protocolVersion").or_insert(json!(self.era.as_str()));
                    meta.insert("io.modelcontextprotocol/clientInfo".into(), client_info());
                    meta.insert("io.modelcontextprotocol/clientCapabilities".into(), json!({}));
                }
            }
        }
        params
    }

    /// Checks a result against the revision's schema definition (results.schema), noting the
    /// failure under that check.
    fn check_schema(&mut self, definition: &str, sent: &Value, result: &Value) {
        if let Err(why) = self.spec.has(self.era.as_str()) {
            self.skip("results.schema", why);
            return;
        }
        match self.spec.validate_def(self.era.as_str(), definition, result) {
            None => self.pass("results.schema"),
            Some(why) => self.fail(
                "results.schema",
                Some(sent),
                Some(excerpt(&result.to_string())),
                format!("not a valid {definition} of {}: {why}", self.era.as_str()),
            ),
        }
        if self.modern() && result.get("resultType").is_none() {
            self.fail(
                "lifecycle.result-type",
                Some(sent),
                Some(excerpt(&result.to_string())),
                format!("the {definition} has no resultType"),
            );
        } else if self.modern() {
            self.pass("lifecycle.result-type");
        }
    }
}

/// Starts a fresh connection to the target.
async fn connect(target: &Target, http_version: Option<&str>, timeout: Duration) -> Result<Wire, String> {
    match target {
        Target::Stdio(command) => StdioWire::spawn(command).map(Wire::Stdio),
        Target::LegacySse { url, headers } => {
            SseWire::connect(url, headers.clone(), Instant::now() + timeout).await.map(Wire::Sse)
        }
        Target::Http { url, headers } => {
            let mut wire = HttpWire::new(url, headers.clone())?;
            wire.protocol_version = http_version.map(str::to_owned);
            Ok(Wire::Http(wire, Unsolicited::default()))
        }
    }
}

/// Whether `capability` is in `capabilities` (present and not null).
fn advertised(capabilities: &Value, capability: &str) -> bool {
    capabilities.get(capability).is_some_and(|c| !c.is_null())
}

fn http_wire(wire: &mut Wire) -> Option<&mut HttpWire> {
    match wire {
        Wire::Http(w, _) => Some(w),
        Wire::Stdio(_) | Wire::Sse(_) => None,
    }
}

fn stderr_hint(wire: &Wire) -> String {
    match wire {
        Wire::Stdio(w) => {
            let tail = w.stderr_tail();
            if tail.is_empty() {
                String::new()
            } else {
                format!(
                    " (its stderr ends: {})",
                    tail.iter().rev().take(3).rev().cloned().collect::<Vec<_>>().join(" | ")
                )
            }
        }
        Wire::Http(..) | Wire::Sse(_) => String::new(),
    }
}

/// Runs the battery in `era`. `required`: the era was asked for by name, so a server that does
/// not speak it fails instead of being skipped.
pub(super) async fn run_era(options: &CheckOptions, era: Era, required: bool) -> EraRun {
    let transport = match options.target {
        Target::Stdio(_) => Transport::Stdio,
        Target::Http { .. } => Transport::StreamableHttp,
        Target::LegacySse { .. } => Transport::LegacySse,
    };
    let http = transport == Transport::StreamableHttp;
    let mut run = Run {
        options,
        era,
        http,
        next_id: 0,
        findings: BTreeMap::new(),
        notes: Vec::new(),
        spec: SpecSchemas::new(options.spec_schemas.clone()),
        sent_ids: HashSet::new(),
    };
    let outcome = if transport == Transport::LegacySse && era.is_modern() {
        Err("the legacy HTTP+SSE transport belongs to the handshake era: 2026-07-28 is not spoken over it".to_owned())
    } else {
        run.battery(required).await
    };
    if let Err(why) = outcome {
        for r in RULES.iter().filter(|r| r.scope.applies(era.is_modern(), transport)) {
            run.findings.entry(r.id).or_insert_with(|| Status::Skip(why.clone()));
        }
    }
    // Labelled with the revision checked: the one the server chose, when it chose an older one.
    let label = run.era.as_str();
    let mut findings = Vec::new();
    for r in RULES.iter().filter(|r| r.scope.applies(era.is_modern(), transport)) {
        let status = run.findings.remove(r.id).unwrap_or_else(|| Status::Skip("not reached".into()));
        findings.push(Finding { era: label.to_owned(), rule: r, status });
    }
    EraRun { findings, notes: run.notes }
}

impl Run<'_> {
    /// The whole battery; `Err(why)` when the era could not be run (the remaining checks skip).
    async fn battery(&mut self, required: bool) -> Result<(), String> {
        let target = &self.options.target;
        let mut wire =
            connect(target, self.modern().then_some(self.era.as_str()), self.timeout()).await.map_err(|e| {
                let id = if self.modern() { "lifecycle.discover" } else { "lifecycle.initialize" };
                self.fail(id, None, None, format!("cannot connect: {e}"));
                format!("no connection: {e}")
            })?;
        let capabilities = match self.handshake(&mut wire, required).await {
            Ok(c) => c,
            Err(why) => {
                // What the server wrote instead of an answer is still a finding.
                if let Wire::Stdio(w) = &wire {
                    if let Some(first) = w.inbox.unsolicited.garbage.first() {
                        let count = w.inbox.unsolicited.garbage.len();
                        self.fail(
                            "stdio.stdout-messages-only",
                            None,
                            Some(first.clone()),
                            format!("{count} line(s) on stdout were not JSON-RPC messages"),
                        );
                    }
                }
                wire.close().await;
                return Err(why);
            }
        };
        self.basics(&mut wire).await;
        if self.modern() && !self.http {
            let mut odd = self.message("tools/list", json!({}));
            odd["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(UNKNOWN_VERSION);
            let answer = wire.request(&odd, self.timeout()).await;
            self.unsupported_version_error(&odd, answer.reply.error(), answer.reply.describe());
        }
        let tools = self.lists(&mut wire, &capabilities).await;
        self.tool_checks(&tools);
        self.calls(&mut wire, &tools).await;
        self.resources(&mut wire, &capabilities).await;
        self.prompts_and_completion(&mut wire, &capabilities).await;
        if !self.modern() {
            self.logging(&mut wire, &capabilities).await;
        }
        if self.http {
            self.http_checks(&mut wire).await;
            self.response_to_nothing_over_http(&mut wire).await;
            self.resume(&mut wire).await;
        } else if matches!(wire, Wire::Sse(_)) {
            self.response_to_nothing_over_http(&mut wire).await;
        } else {
            self.parse_error(&mut wire).await;
        }
        self.cancellation(&mut wire).await;
        if !self.modern() {
            self.unknown_version().await;
            self.before_initialize().await;
        }
        // What came unasked over the whole session.
        match &mut wire {
            Wire::Stdio(w) => w.drain_until(Instant::now() + Duration::from_millis(100)).await,
            Wire::Sse(w) => w.drain_until(Instant::now() + Duration::from_millis(100)).await,
            Wire::Http(..) => {}
        }
        self.unsolicited_checks(wire.unsolicited().clone());
        if self.http && !self.modern() {
            self.session_delete(&mut wire).await;
        }
        wire.close().await;
        Ok(())
    }

    /// initialize + initialized, or server/discover. Returns the server's capabilities.
    async fn handshake(&mut self, wire: &mut Wire, required: bool) -> Result<Value, String> {
        let (id, message) = if self.modern() {
            ("lifecycle.discover", self.message("server/discover", json!({})))
        } else {
            (
                "lifecycle.initialize",
                self.message(
                    "initialize",
                    json!({"protocolVersion": self.era.as_str(), "capabilities": {}, "clientInfo": client_info()}),
                ),
            )
        };
        let answer = wire.request(&message, self.timeout()).await;
        let result = match &answer.reply {
            Reply::Message(m) if m.get("result").is_some() => m["result"].clone(),
            Reply::Message(m) if !required && m.get("error").is_some() => {
                let why = format!(
                    "the server does not speak {}: {} answered {}",
                    self.era.as_str(),
                    message["method"],
                    excerpt(&m["error"].to_string())
                );
                self.notes.push(why.clone());
                return Err(why);
            }
            Reply::Timeout if !required && self.modern() => {
                let why = "no answer to server/discover: taken as a server of the handshake era only (a legacy server may stay silent, basic/versioning)".to_owned();
                self.notes.push(why.clone());
                return Err(why);
            }
            Reply::Closed(why)
                if !required
                    && self.http
                    && answer.http.as_ref().is_some_and(|h| h.status >= 400 && h.status != 403) =>
            {
                let why = format!("the server does not speak {}: {}", self.era.as_str(), why);
                self.notes.push(why.clone());
                return Err(why);
            }
            other => {
                let got = format!("{}{}", other.describe(), stderr_hint(wire));
                self.fail(
                    id,
                    Some(&message),
                    Some(got),
                    format!("{} must be answered with a result", message["method"]),
                );
                return Err(format!("no session: {} failed", message["method"]));
            }
        };
        let definition = if self.modern() { "DiscoverResult" } else { "InitializeResult" };
        self.check_schema(definition, &message, &result);
        if self.modern() {
            let versions = result.get("supportedVersions").and_then(Value::as_array);
            match versions {
                Some(v) if v.iter().any(|x| x == self.era.as_str()) => self.pass(id),
                Some(v) if !required => {
                    let why = format!(
                        "the server does not speak 2026-07-28 (server/discover lists {})",
                        Value::Array(v.clone())
                    );
                    self.notes.push(why.clone());
                    return Err(why);
                }
                _ => {
                    self.fail(
                        id,
                        Some(&message),
                        Some(excerpt(&result.to_string())),
                        "supportedVersions must list the versions the server speaks, here 2026-07-28",
                    );
                }
            }
        } else {
            let version = result.get("protocolVersion").and_then(Value::as_str).unwrap_or_default().to_owned();
            let well_formed = result.get("capabilities").is_some_and(Value::is_object)
                && result.pointer("/serverInfo/name").is_some_and(Value::is_string)
                && !version.is_empty();
            if !well_formed {
                self.fail(
                    id,
                    Some(&message),
                    Some(excerpt(&result.to_string())),
                    "the result needs protocolVersion, capabilities and serverInfo.name",
                );
            } else if Era::parse(&version).is_none() {
                self.fail(
                    id,
                    Some(&message),
                    Some(excerpt(&result.to_string())),
                    format!("protocolVersion {version} is no revision of MCP"),
                );
            } else {
                self.pass(id);
            }
            if version != self.era.as_str() {
                if let Some(answered) = Era::parse(&version).filter(|e| !e.is_modern()) {
                    self.notes.push(format!(
                        "asked for {}, the server chose {version}: checked at {version}",
                        self.era.as_str()
                    ));
                    self.era = answered;
                } else if !required {
                    return Err(format!("the server answered initialize with {version}"));
                }
            }
            if let Some(w) = http_wire(wire) {
                w.session = answer.http.as_ref().and_then(|h| h.headers.get("mcp-session-id").cloned());
                w.protocol_version = Some(self.era.as_str().to_owned());
            }
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            match wire.notify(&initialized, self.timeout()).await {
                Err(e) => return Err(format!("notifications/initialized could not be sent: {e}")),
                Ok(Some(exchange)) => {
                    if exchange.seen.status == 202 && exchange.messages.is_empty() {
                        self.pass("http.notification-accepted");
                    } else {
                        self.fail(
                            "http.notification-accepted",
                            Some(&initialized),
                            Some(format!("http {} {}", exchange.seen.status, exchange.error.unwrap_or_default())),
                            "a notification POST must get 202 Accepted with no body",
                        );
                    }
                }
                Ok(None) => {}
            }
        }
        Ok(result.get("capabilities").cloned().unwrap_or(json!({})))
    }

    /// ping, unknown method, unknown tool, invalid params.
    async fn basics(&mut self, wire: &mut Wire) {
        if !self.modern() {
            let ping = self.message("ping", json!({}));
            let answer = wire.request(&ping, self.timeout()).await;
            match answer.reply.result() {
                Some(Value::Object(m)) if m.keys().all(|k| k == "_meta") => self.pass("ping.answers"),
                _ => self.fail(
                    "ping.answers",
                    Some(&ping),
                    Some(answer.reply.describe()),
                    "ping must be answered with an empty result",
                ),
            }
        }
        let unknown = self.message("mcp-conformance/no-such-method", json!({}));
        let answer = wire.request(&unknown, self.timeout()).await;
        match answer.reply.error_code() {
            Some(-32601) => self.pass("errors.unknown-method"),
            _ => self.fail(
                "errors.unknown-method",
                Some(&unknown),
                Some(answer.reply.describe()),
                "a method the server does not have must get error -32601 (Method not found)",
            ),
        }
        if self.http && self.modern() {
            match &answer.http {
                Some(h) if h.status == 404 && answer.reply.error_code() == Some(-32601) => {
                    self.pass("http.unknown-method-404")
                }
                Some(h) => self.fail(
                    "http.unknown-method-404",
                    Some(&unknown),
                    Some(format!("http {}: {}", h.status, answer.reply.describe())),
                    "an unknown method must get 404 Not Found and error -32601",
                ),
                None => {}
            }
        }
        let call = self.message("tools/call", json!({"name": "mcp-conformance-no-such-tool", "arguments": {}}));
        let answer = wire.request(&call, self.timeout()).await;
        match (&answer.reply, answer.reply.result()) {
            (_, Some(result)) if result.get("isError") == Some(&Value::Bool(true)) => {
                self.pass("errors.unknown-tool");
                self.fail(
                    "errors.unknown-tool-protocol-error",
                    Some(&call),
                    Some(answer.reply.describe()),
                    "an unknown tool is a protocol error (a JSON-RPC error, e.g. -32602), not a tool execution error",
                );
            }
            (_, Some(_)) => self.fail(
                "errors.unknown-tool",
                Some(&call),
                Some(answer.reply.describe()),
                "a call of a tool the server does not have was answered with success",
            ),
            (Reply::Message(_), None) => {
                self.pass("errors.unknown-tool");
                self.pass("errors.unknown-tool-protocol-error");
            }
            (other, None) => {
                self.fail(
                    "errors.unknown-tool",
                    Some(&call),
                    Some(other.describe()),
                    "a call of an unknown tool must be answered (with an error)",
                );
            }
        }
        let nameless = self.message("tools/call", json!({"arguments": {}}));
        let answer = wire.request(&nameless, self.timeout()).await;
        match answer.reply.error_code() {
            Some(-32602) => self.pass("errors.invalid-params"),
            _ => self.fail(
                "errors.invalid-params",
                Some(&nameless),
                Some(answer.reply.describe()),
                "params that fail the CallToolRequest schema (no name) should get -32602 (Invalid params)",
            ),
        }
    }

    /// Every page of `method`'s list: the items under `key`, or `None` when it failed.
    async fn list_all(&mut self, wire: &mut Wire, method: &str, key: &str) -> Option<Vec<Value>> {
        // resources/templates/list has a check of its own; the others are what their capability serves.
        let served = if key == "resourceTemplates" { "resources.templates" } else { "capabilities.served" };
        let mut items: Vec<Value> = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut seen_cursors = HashSet::new();
        let definition = match method {
            "tools/list" => "ListToolsResult",
            "resources/list" => "ListResourcesResult",
            "resources/templates/list" => "ListResourceTemplatesResult",
            _ => "ListPromptsResult",
        };
        for page in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let message = self.message(method, params);
            let answer = wire.request(&message, self.timeout()).await;
            let Some(result) = answer.reply.result().cloned() else {
                if page == 0 {
                    self.fail(
                        served,
                        Some(&message),
                        Some(answer.reply.describe()),
                        format!("{method} must answer with a result when its capability is advertised"),
                    );
                } else {
                    self.fail(
                        "pagination.cursor",
                        Some(&message),
                        Some(answer.reply.describe()),
                        format!("{method} with the nextCursor it gave must answer"),
                    );
                }
                return None;
            };
            let mut checked = result.clone();
            if key == "tools" {
                // The schemas have checks of their own.
                if let Some(tools) = checked.get_mut("tools").and_then(Value::as_array_mut) {
                    for t in tools.iter_mut().filter_map(Value::as_object_mut) {
                        t.insert("inputSchema".into(), json!({"type": "object"}));
                        if t.contains_key("outputSchema") {
                            t.insert("outputSchema".into(), json!({"type": "object"}));
                        }
                    }
                }
            }
            self.check_schema(definition, &message, &checked);
            let Some(page_items) = result.get(key).and_then(Value::as_array) else {
                self.fail(
                    served,
                    Some(&message),
                    Some(excerpt(&result.to_string())),
                    format!("the result of {method} has no {key} array"),
                );
                return None;
            };
            for item in page_items {
                if page > 0 && items.contains(item) {
                    self.fail(
                        "pagination.no-duplicates",
                        Some(&message),
                        Some(excerpt(&item.to_string())),
                        "this item came on an earlier page too",
                    );
                }
            }
            items.extend(page_items.iter().cloned());
            match result.get("nextCursor") {
                None | Some(Value::Null) => {
                    if page > 0 {
                        self.pass("pagination.cursor");
                        self.pass("pagination.no-duplicates");
                    }
                    return Some(items);
                }
                Some(c) => {
                    if !seen_cursors.insert(c.to_string()) {
                        self.fail(
                            "pagination.cursor",
                            Some(&message),
                            Some(c.to_string()),
                            "the same nextCursor came twice: the list never ends",
                        );
                        return Some(items);
                    }
                    cursor = Some(c.clone());
                }
            }
        }
        self.fail("pagination.cursor", None, None, format!("{method} still had a nextCursor after {MAX_PAGES} pages"));
        Some(items)
    }

    /// The three lists, advertised or not; returns the tools.
    async fn lists(&mut self, wire: &mut Wire, capabilities: &Value) -> Vec<Value> {
        let mut tools = Vec::new();
        for (capability, method, key) in [
            ("tools", "tools/list", "tools"),
            ("resources", "resources/list", "resources"),
            ("prompts", "prompts/list", "prompts"),
        ] {
            let advertised = advertised(capabilities, capability);
            if !advertised {
                let message = self.message(method, json!({}));
                let answer = wire.request(&message, self.timeout()).await;
                match &answer.reply {
                    Reply::Message(m) if m.get("error").is_some() => self.pass("capabilities.unadvertised-refused"),
                    other => self.fail(
                        "capabilities.unadvertised-refused",
                        Some(&message),
                        Some(other.describe()),
                        format!("{capability} is not advertised, so {method} should be refused with an error (-32601)"),
                    ),
                }
                continue;
            }
            let Some(first) = self.list_all(wire, method, key).await else { continue };
            self.pass("capabilities.served");
            let Some(second) = self.list_all(wire, method, key).await else { continue };
            let names = |items: &[Value]| -> Vec<String> {
                items
                    .iter()
                    .map(|i| i.get("name").or_else(|| i.get("uri")).map(Value::to_string).unwrap_or_default())
                    .collect()
            };
            if names(&first) == names(&second) {
                self.pass("pagination.stable-order");
            } else {
                self.fail(
                    "pagination.stable-order",
                    Some(&json!({"method": method})),
                    Some(format!("first {:?}, then {:?}", names(&first), names(&second))),
                    format!("{method} twice gave different items or order"),
                );
            }
            if capability == "tools" {
                tools = first;
            }
        }
        self.skip("capabilities.unadvertised-refused", "tools, resources and prompts are all advertised");
        if !self.findings.contains_key("pagination.cursor") {
            self.skip("pagination.cursor", "no list had more than one page");
            self.skip("pagination.no-duplicates", "no list had more than one page");
        }
        if !advertised(capabilities, "tools") {
            for id in [
                "tools.name-length",
                "tools.name-charset",
                "tools.name-unique",
                "tools.input-schema-object",
                "tools.output-schema-object",
                "tools.schema-valid",
                "tools.schema-refs",
                "tools.definitions",
            ] {
                self.skip(id, "tools not advertised");
            }
        }
        tools
    }

    /// Names, schemas and definitions of the listed tools.
    fn tool_checks(&mut self, tools: &[Value]) {
        if tools.is_empty() {
            for id in [
                "tools.name-length",
                "tools.name-charset",
                "tools.name-unique",
                "tools.input-schema-object",
                "tools.output-schema-object",
                "tools.schema-valid",
                "tools.schema-refs",
                "tools.definitions",
            ] {
                self.skip(id, "no tools listed");
            }
            return;
        }
        let mut names = HashSet::new();
        let mut any_output = false;
        for tool in tools {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            let shown = json!({"name": name});
            let length = name.chars().count();
            if (1..=128).contains(&length) {
                self.pass("tools.name-length");
            } else {
                self.fail(
                    "tools.name-length",
                    Some(&shown),
                    Some(format!("{length} characters")),
                    format!("tool name {:?} is {length} characters long", excerpt(name)),
                );
            }
            let bad: Vec<char> =
                name.chars().filter(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))).collect();
            if bad.is_empty() {
                self.pass("tools.name-charset");
            } else {
                self.fail(
                    "tools.name-charset",
                    Some(&shown),
                    Some(format!("{bad:?}")),
                    format!("tool name {:?} has characters outside A-Z a-z 0-9 _ - .: {bad:?}", excerpt(name)),
                );
            }
            if names.insert(name.to_owned()) {
                self.pass("tools.name-unique");
            } else {
                self.fail("tools.name-unique", Some(&shown), None, format!("two tools are named {name:?}"));
            }
            // The definition without its schemas, against the revision's Tool.
            let mut bare = tool.clone();
            if let Some(t) = bare.as_object_mut() {
                t.insert("inputSchema".into(), json!({"type": "object"}));
                if t.contains_key("outputSchema") {
                    t.insert("outputSchema".into(), json!({"type": "object"}));
                }
            }
            if self.spec.has(self.era.as_str()).is_ok() {
                match self.spec.validate_def(self.era.as_str(), "Tool", &bare) {
                    None => self.pass("tools.definitions"),
                    Some(why) => self.fail(
                        "tools.definitions",
                        Some(&shown),
                        Some(excerpt(&bare.to_string())),
                        format!("tool {name:?} is not a valid Tool: {why}"),
                    ),
                }
            } else {
                let why = self.spec.has(self.era.as_str()).err().unwrap_or_default();
                self.skip("tools.definitions", why);
            }
            for (member, check) in
                [("inputSchema", "tools.input-schema-object"), ("outputSchema", "tools.output-schema-object")]
            {
                let Some(schema) = tool.get(member) else {
                    if member == "inputSchema" {
                        self.fail(check, Some(&shown), None, format!("tool {name:?} has no inputSchema"));
                    }
                    continue;
                };
                any_output |= member == "outputSchema";
                if schema.is_object() && schema.get("type") == Some(&json!("object")) {
                    self.pass(check);
                } else {
                    self.fail(
                        check,
                        Some(&shown),
                        Some(excerpt(&schema.to_string())),
                        format!(
                            "the {member} of {name:?} must be a JSON Schema object with type \"object\" at its root"
                        ),
                    );
                }
                if !schema.is_object() {
                    continue;
                }
                match schema::meta_errors(schema) {
                    None => self.pass("tools.schema-valid"),
                    Some(why) => self.fail(
                        "tools.schema-valid",
                        Some(&shown),
                        Some(excerpt(&schema.to_string())),
                        format!("the {member} of {name:?} is not valid under its dialect: {why}"),
                    ),
                }
                let bad = schema::unresolved_refs(schema);
                if bad.is_empty() {
                    self.pass("tools.schema-refs");
                } else {
                    self.fail(
                        "tools.schema-refs",
                        Some(&shown),
                        Some(bad.join(", ")),
                        format!("the {member} of {name:?} has $refs that resolve to nothing here"),
                    );
                }
            }
        }
        if !any_output {
            self.skip("tools.output-schema-object", "no tool has an outputSchema");
        }
    }

    /// `--call` tools; their results against the schema and their outputSchema.
    async fn calls(&mut self, wire: &mut Wire, tools: &[Value]) {
        let mut calls = self.options.calls.clone();
        if self.options.call_readonly {
            for tool in tools.iter().filter(|t| t.pointer("/annotations/readOnlyHint") == Some(&json!(true))) {
                if let (Some(name), Some(schema)) = (tool.get("name").and_then(Value::as_str), tool.get("inputSchema"))
                {
                    if !calls.iter().any(|(n, _)| n == name) {
                        calls.push((name.to_owned(), arguments_for(schema)));
                    }
                }
            }
        }
        if calls.is_empty() {
            self.skip(
                "tools.call-result",
                "no --call given, and no read-only tool under --call-readonly (the checker calls no tool unless told)",
            );
            return;
        }
        for (name, arguments) in calls {
            let call = self.message("tools/call", json!({"name": name, "arguments": arguments}));
            let answer = wire.request(&call, self.timeout()).await;
            let Some(result) = answer.reply.result().cloned() else {
                self.fail(
                    "tools.call-result",
                    Some(&call),
                    Some(answer.reply.describe()),
                    format!("--call {name} must be answered with a result"),
                );
                continue;
            };
            self.check_schema("CallToolResult", &call, &result);
            let output = tools.iter().find(|t| t.get("name") == Some(&json!(name))).and_then(|t| t.get("outputSchema"));
            match (output, result.get("structuredContent"), result.get("isError") == Some(&json!(true))) {
                (Some(_), _, true) => self.pass("tools.call-result"),
                (Some(_), None, false) => self.fail(
                    "tools.call-result",
                    Some(&call),
                    Some(excerpt(&result.to_string())),
                    format!("{name} has an outputSchema but its result has no structuredContent"),
                ),
                (Some(schema), Some(content), false) => match schema::validate(schema, content) {
                    None => self.pass("tools.call-result"),
                    Some(why) => self.fail(
                        "tools.call-result",
                        Some(&call),
                        Some(excerpt(&content.to_string())),
                        format!("structuredContent does not match the outputSchema of {name}: {why}"),
                    ),
                },
                (None, _, _) => self.pass("tools.call-result"),
            }
        }
    }

    async fn resources(&mut self, wire: &mut Wire, capabilities: &Value) {
        if !advertised(capabilities, "resources") {
            self.skip("resources.read", "resources not advertised");
            self.skip("resources.templates", "resources not advertised");
            return;
        }
        let list = self.message("resources/list", json!({}));
        let answer = wire.request(&list, self.timeout()).await;
        let first = answer
            .reply
            .result()
            .and_then(|r| r.get("resources"))
            .and_then(Value::as_array)
            .and_then(|r| r.first())
            .cloned();
        match first.as_ref().and_then(|r| r.get("uri")).and_then(Value::as_str) {
            None => self.skip("resources.read", "no resource listed"),
            Some(uri) => {
                let read = self.message("resources/read", json!({"uri": uri}));
                let answer = wire.request(&read, self.timeout()).await;
                match answer.reply.result().cloned() {
                    Some(result) if result.get("contents").and_then(Value::as_array).is_some_and(|c| !c.is_empty()) => {
                        self.pass("resources.read");
                        self.check_schema("ReadResourceResult", &read, &result);
                    }
                    _ => self.fail(
                        "resources.read",
                        Some(&read),
                        Some(answer.reply.describe()),
                        format!("reading {uri}, which resources/list gave, must answer with its contents"),
                    ),
                }
            }
        }
        let templates = self.list_all(wire, "resources/templates/list", "resourceTemplates").await;
        match templates {
            None => {}
            Some(templates) => {
                for t in &templates {
                    let template = t.get("uriTemplate").and_then(Value::as_str).unwrap_or_default();
                    if let Some(why) = template_problem(template) {
                        self.fail(
                            "resources.templates",
                            Some(&json!({"method": "resources/templates/list"})),
                            Some(excerpt(&t.to_string())),
                            format!("uriTemplate {template:?}: {why}"),
                        );
                    }
                }
                self.pass("resources.templates");
            }
        }
    }

    async fn prompts_and_completion(&mut self, wire: &mut Wire, capabilities: &Value) {
        let mut prompt_for_completion = None;
        if !advertised(capabilities, "prompts") {
            self.skip("prompts.get", "prompts not advertised");
        } else {
            let list = self.message("prompts/list", json!({}));
            let answer = wire.request(&list, self.timeout()).await;
            let prompts = answer
                .reply
                .result()
                .and_then(|r| r.get("prompts"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            // The first prompt with an argument is the one completion is asked about.
            prompt_for_completion = prompts.iter().find_map(|p| {
                let argument = p.pointer("/arguments/0/name")?.as_str()?;
                Some((p.get("name")?.clone(), argument.to_owned()))
            });
            match prompts.first() {
                None => self.skip("prompts.get", "no prompt listed"),
                Some(prompt) => {
                    let name = prompt.get("name").cloned().unwrap_or(Value::Null);
                    let mut arguments = Map::new();
                    for a in prompt.get("arguments").and_then(Value::as_array).into_iter().flatten() {
                        if let Some(arg) = a.get("name").and_then(Value::as_str) {
                            if a.get("required") == Some(&json!(true)) {
                                arguments.insert(arg.to_owned(), json!("mcp-conformance"));
                            }
                        }
                    }
                    let get = self.message("prompts/get", json!({"name": name, "arguments": arguments}));
                    let answer = wire.request(&get, self.timeout()).await;
                    match answer.reply.result().cloned() {
                        Some(result) if result.get("messages").is_some_and(Value::is_array) => {
                            self.pass("prompts.get");
                            self.check_schema("GetPromptResult", &get, &result);
                        }
                        _ => self.fail(
                            "prompts.get",
                            Some(&get),
                            Some(answer.reply.describe()),
                            "a listed prompt, with its required arguments, must be answered with its messages",
                        ),
                    }
                }
            }
        }
        if !advertised(capabilities, "completions") {
            self.skip("completion.complete", "completions not advertised");
            return;
        }
        let Some((prompt, argument)) = prompt_for_completion else {
            self.skip("completion.complete", "no prompt with an argument to complete");
            return;
        };
        let complete = self.message(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": prompt}, "argument": {"name": argument, "value": ""}}),
        );
        let answer = wire.request(&complete, self.timeout()).await;
        match answer.reply.result().cloned() {
            Some(result) => {
                let values = result.pointer("/completion/values").and_then(Value::as_array);
                match values {
                    Some(v) if v.len() <= 100 => self.pass("completion.complete"),
                    _ => self.fail(
                        "completion.complete",
                        Some(&complete),
                        Some(excerpt(&result.to_string())),
                        "completion.values must be an array of at most 100 values",
                    ),
                }
                self.check_schema("CompleteResult", &complete, &result);
            }
            None => self.fail(
                "completion.complete",
                Some(&complete),
                Some(answer.reply.describe()),
                "completions are advertised, so completion/complete must answer",
            ),
        }
    }

    async fn logging(&mut self, wire: &mut Wire, capabilities: &Value) {
        if !advertised(capabilities, "logging") {
            self.skip("logging.set-level", "logging not advertised");
            return;
        }
        let set = self.message("logging/setLevel", json!({"level": "error"}));
        let answer = wire.request(&set, self.timeout()).await;
        match answer.reply.result() {
            Some(Value::Object(_)) => self.pass("logging.set-level"),
            _ => self.fail(
                "logging.set-level",
                Some(&set),
                Some(answer.reply.describe()),
                "logging is advertised, so logging/setLevel must answer with an empty result",
            ),
        }
    }

    /// stdio: a malformed line, then a response to nothing; the server must carry on.
    async fn parse_error(&mut self, wire: &mut Wire) {
        let Wire::Stdio(w) = wire else { return };
        let garbage = "{\"jsonrpc\": \"2.0\", \"id\": \"mcp-conformance-broken\", \"method\": \n";
        if let Err(e) = w.send_raw(garbage.as_bytes()).await {
            self.fail("errors.parse-error", None, Some(e), "the server stopped reading");
            return;
        }
        let answer = w.wait_for(&Value::Null, Instant::now() + self.timeout().min(Duration::from_secs(2))).await;
        let sent = json!(garbage.trim_end());
        match &answer {
            Reply::Message(m) if m.pointer("/error/code") == Some(&json!(-32700)) => self.pass("errors.parse-error"),
            other => self.fail(
                "errors.parse-error",
                Some(&sent),
                Some(other.describe()),
                "malformed JSON should get error -32700 with a null id",
            ),
        }
        // A response to a request never made.
        let stray = json!({"jsonrpc": "2.0", "id": "mcp-conformance-unasked", "result": {}});
        if w.send(&stray).await.is_ok() {
            self.pass("jsonrpc.response-to-nothing");
        }
        // Still there?
        let ping =
            if self.modern() { self.message("server/discover", json!({})) } else { self.message("ping", json!({})) };
        let answer = w.request(&ping, self.timeout()).await;
        if answer.result().is_none() {
            self.fail(
                "errors.parse-error",
                Some(&ping),
                Some(answer.describe()),
                "after a malformed line the server must carry on answering",
            );
        }
    }

    /// `--slow-tool`: call it, cancel it, and see that no answer comes. Over stdio the
    /// cancellation follows the call on the same pipe; over HTTP (handshake era) it is POSTed
    /// once the call's response stream has begun, so the server has the call when it comes.
    async fn cancellation(&mut self, wire: &mut Wire) {
        let id = "cancellation.no-response";
        let Some((name, arguments)) = self.options.slow_tool.clone() else {
            self.skip(id, "no --slow-tool given");
            return;
        };
        if self.http && self.modern() {
            self.skip(
                id,
                "at 2026-07-28 over HTTP, closing the response stream is the cancellation (no \
                 notifications/cancelled): nothing to observe",
            );
            return;
        }
        let call = self.message("tools/call", json!({"name": name, "arguments": arguments}));
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": self.with_meta(json!({"requestId": call["id"], "reason": "mcp-conformance cancels"}))});
        let deadline = Instant::now() + self.timeout();
        let http = http_wire(wire).cloned();
        let reply = match (wire, http) {
            (Wire::Stdio(w), _) => {
                if let (Ok(()), Ok(())) = (w.send(&call).await, w.send(&cancel).await) {
                    w.wait_for(&call["id"], deadline).await
                } else {
                    return;
                }
            }
            (Wire::Sse(w), _) => {
                // The call is accepted (202) before the cancellation is POSTed: in order.
                if let (Ok(_), Ok(_)) = (w.send(&call).await, w.send(&cancel).await) {
                    w.wait_for(&call["id"], deadline).await
                } else {
                    return;
                }
            }
            (wire @ Wire::Http(..), Some(w)) => {
                let (head_tx, head_rx) = tokio::sync::oneshot::channel();
                let body = call.to_string();
                let call_id = call["id"].clone();
                let task = tokio::spawn(async move {
                    w.exchange_telling_head("POST", Some(body.as_bytes()), &[], Some(&call_id), deadline, Some(head_tx))
                        .await
                });
                if !matches!(tokio::time::timeout_at(deadline, head_rx).await, Ok(Ok(()))) {
                    task.abort();
                    self.skip(id, "the call's response did not begin within the timeout: no cancellation sent");
                    return;
                }
                let _ = wire.notify(&cancel, self.timeout()).await;
                let Ok(x) = task.await else { return };
                let sse = x.seen.headers.get("content-type").is_some_and(|c| c.starts_with("text/event-stream"));
                let answer = x.messages.iter().find(|m| m.get("id") == Some(&call["id"]) && m.get("method").is_none());
                match answer {
                    Some(_) if !sse => {
                        self.skip(
                            id,
                            "the server answered the call whole, in JSON, before a cancellation could follow",
                        );
                        return;
                    }
                    Some(m) => Reply::Message(m.clone()),
                    None if x.error.as_deref() == Some("timed out") => Reply::Timeout,
                    None => Reply::Closed(format!("http {}: the stream ended with no answer", x.seen.status)),
                }
            }
            _ => return,
        };
        match reply {
            Reply::Message(m) => {
                self.fail(id, Some(&call), Some(excerpt(&m.to_string())), "the request was cancelled, yet answered")
            }
            Reply::Timeout => self.pass(id),
            Reply::Closed(_) if self.http => self.pass(id),
            Reply::Closed(why) => self.fail(id, Some(&call), Some(why), "the server went away"),
        }
    }

    /// Over HTTP in the handshake era, a response to no request POSTed: accepted (202, no
    /// body) or refused with an error status, never answered.
    async fn response_to_nothing_over_http(&mut self, wire: &mut Wire) {
        let id = "jsonrpc.response-to-nothing";
        if self.modern() {
            self.skip(
                id,
                "at 2026-07-28 clients send no responses over HTTP (\"The client MUST NOT send JSON-RPC responses\")",
            );
            return;
        }
        let timeout = self.timeout();
        let stray = json!({"jsonrpc": "2.0", "id": "mcp-conformance-unasked", "result": {}});
        if let Wire::Sse(w) = wire {
            // An answer would come on the stream: the unsolicited checks see it.
            match w.send(&stray).await {
                Ok(_) => self.pass(id),
                Err(e) => self.fail(
                    id,
                    Some(&stray),
                    Some(e),
                    "a response POSTed must be accepted or refused, not break the session",
                ),
            }
            return;
        }
        let Some(w) = http_wire(wire) else { return };
        let x = w.exchange("POST", Some(stray.to_string().as_bytes()), &[], None, Instant::now() + timeout).await;
        let answered = x.messages.iter().find(|m| m.get("id") == stray.get("id"));
        let status = x.seen.status;
        match answered {
            None if status == 202 || (400..500).contains(&status) => self.pass(id),
            None => self.fail(
                id,
                Some(&stray),
                Some(format!("http {status} {}", x.error.unwrap_or_default())),
                "a response POSTed must get 202 Accepted with no body, or an HTTP error status",
            ),
            Some(m) => self.fail(
                id,
                Some(&stray),
                Some(format!("http {status}: {}", excerpt(&m.to_string()))),
                "our response to no request was answered",
            ),
        }
    }

    /// When a request's SSE stream carries event ids, a GET with `Last-Event-ID` set to an id
    /// before the response replays the response.
    async fn resume(&mut self, wire: &mut Wire) {
        let id = "http.resume";
        if self.modern() {
            return;
        }
        let timeout = self.timeout();
        let ping = self.message("ping", json!({}));
        let Some(w) = http_wire(wire) else { return };
        let w = w.clone();
        let x =
            w.exchange("POST", Some(ping.to_string().as_bytes()), &[], ping.get("id"), Instant::now() + timeout).await;
        if x.event_ids.is_empty() {
            self.skip(id, "the server gives no SSE event ids (JSON answers, or events without ids): nothing to resume");
            return;
        }
        let Some((last, _)) = x.event_ids.iter().take_while(|(_, response)| !response).last() else {
            self.skip(id, "the first event id came with the response itself: nothing after it to replay");
            return;
        };
        let headers = [("accept", Some("text/event-stream".to_owned())), ("last-event-id", Some(last.clone()))];
        let resumed = w
            .exchange("GET", None, &headers, ping.get("id"), Instant::now() + timeout.min(Duration::from_secs(3)))
            .await;
        let replayed = resumed.messages.iter().any(|m| m.get("id") == ping.get("id") && m.get("method").is_none());
        if replayed {
            self.pass(id);
        } else {
            self.fail(
                id,
                Some(&json!({"method": "GET", "last-event-id": last})),
                Some(format!(
                    "http {}: {} message(s), none the response to ping {}",
                    resumed.seen.status,
                    resumed.messages.len(),
                    resumed.error.map(|e| format!("({e})")).unwrap_or_default()
                )),
                "the server gave event ids; resuming after one before the response should replay the response",
            );
        }
    }

    /// A fresh connection whose first message is `tools/list`, no `initialize` before it: a
    /// server of the handshake era refuses it (an error, an HTTP error status, or the connection
    /// closed), and never answers it with a result.
    async fn before_initialize(&mut self) {
        let id = "lifecycle.before-initialize";
        let Ok(mut wire) = connect(&self.options.target, None, self.timeout()).await else { return };
        let list = self.message("tools/list", json!({}));
        let answer = wire.request(&list, self.timeout()).await;
        match (&answer.reply, &answer.http) {
            (Reply::Message(m), _) if m.get("error").is_some() => self.pass(id),
            (Reply::Message(m), _) => self.fail(
                id,
                Some(&list),
                Some(excerpt(&m.to_string())),
                "tools/list was served before initialize: the initialization phase must come first",
            ),
            (Reply::Closed(_), Some(h)) if h.status >= 400 => self.pass(id),
            (Reply::Closed(_), None) => self.pass(id),
            (other, _) => self.fail(
                id,
                Some(&list),
                Some(other.describe()),
                "a request before initialize must be refused with an error (every request is answered)",
            ),
        }
        if let (Some(w), Some(h)) = (http_wire(&mut wire), &answer.http) {
            if let Some(session) = h.headers.get("mcp-session-id") {
                w.session = Some(session.clone());
                let _ = w.exchange("DELETE", None, &[], None, Instant::now() + self.options.timeout).await;
            }
        }
        wire.close().await;
    }

    /// A second connection offering an unknown version.
    async fn unknown_version(&mut self) {
        let target = &self.options.target;
        let Ok(mut wire) = connect(target, None, self.timeout()).await else { return };
        let init = self.message(
            "initialize",
            json!({"protocolVersion": UNKNOWN_VERSION, "capabilities": {}, "clientInfo": client_info()}),
        );
        let answer = wire.request(&init, self.timeout()).await;
        let version =
            answer.reply.result().and_then(|r| r.get("protocolVersion")).and_then(Value::as_str).map(str::to_owned);
        match version {
            Some(v) if v != UNKNOWN_VERSION && Era::parse(&v).is_some() => self.pass("lifecycle.unknown-version"),
            Some(v) => self.fail(
                "lifecycle.unknown-version",
                Some(&init),
                Some(answer.reply.describe()),
                format!(
                    "the server answered {v}, which it cannot support: it must answer with another version it supports"
                ),
            ),
            None => self.fail(
                "lifecycle.unknown-version",
                Some(&init),
                Some(answer.reply.describe()),
                "the server must respond with another protocol version it supports (its latest), not refuse",
            ),
        }
        if let (Some(w), Some(h)) = (http_wire(&mut wire), &answer.http) {
            if let Some(session) = h.headers.get("mcp-session-id") {
                w.session = Some(session.clone());
                let _ = w.exchange("DELETE", None, &[], None, Instant::now() + self.options.timeout).await;
            }
        }
        wire.close().await;
    }

    fn unsolicited_checks(&mut self, seen: Unsolicited) {
        let to_notifications: Vec<&Value> =
            seen.stray_responses.iter().filter(|r| r.get("id").is_none_or(Value::is_null)).collect();
        if let Some(first) = to_notifications.first() {
            self.fail(
                "jsonrpc.notifications-unanswered",
                None,
                Some(excerpt(&first.to_string())),
                format!(
                    "{} response(s) without an id came: notifications must not be answered",
                    to_notifications.len()
                ),
            );
        }
        self.pass("jsonrpc.notifications-unanswered");
        let to_stray: Vec<&Value> =
            seen.stray_responses.iter().filter(|r| r.get("id") == Some(&json!("mcp-conformance-unasked"))).collect();
        if let Some(first) = to_stray.first() {
            self.findings.remove("jsonrpc.response-to-nothing");
            self.fail(
                "jsonrpc.response-to-nothing",
                Some(&json!({"jsonrpc": "2.0", "id": "mcp-conformance-unasked", "result": {}})),
                Some(excerpt(&first.to_string())),
                "our response to no request was answered",
            );
        }
        let unknown: Vec<&Value> = seen
            .stray_responses
            .iter()
            .filter(|r| {
                r.get("id").is_some_and(|id| {
                    !id.is_null() && *id != json!("mcp-conformance-unasked") && !self.sent_ids.contains(&id.to_string())
                })
            })
            .collect();
        match unknown.first() {
            Some(first) => self.fail(
                "jsonrpc.response-ids",
                None,
                Some(excerpt(&first.to_string())),
                format!("{} response(s) with ids we never sent", unknown.len()),
            ),
            None => self.pass("jsonrpc.response-ids"),
        }
        if !self.http {
            match seen.garbage.first() {
                Some(first) => self.fail(
                    "stdio.stdout-messages-only",
                    None,
                    Some(first.clone()),
                    format!("{} line(s) on stdout were not JSON-RPC messages", seen.garbage.len()),
                ),
                None => self.pass("stdio.stdout-messages-only"),
            }
        }
        if seen.notification_count > 0 {
            self.notes.push(format!("{} notification(s) from the server", seen.notification_count));
        }
    }

    async fn http_checks(&mut self, wire: &mut Wire) {
        let timeout = self.timeout();
        let modern = self.modern();
        let probe = if modern { self.message("server/discover", json!({})) } else { self.message("ping", json!({})) };
        let Some(w) = http_wire(wire) else { return };
        let w = w.clone();
        let meta: Vec<(&str, Option<String>)> = if modern {
            vec![("mcp-method", Some(probe["method"].as_str().unwrap_or_default().to_owned()))]
        } else {
            Vec::new()
        };
        let deadline = || Instant::now() + timeout;
        let with = |header: &'static str, value: &str| {
            let mut extra = meta.clone();
            extra.retain(|(k, _)| *k != header);
            extra.push((header, Some(value.to_owned())));
            extra
        };
        let status_is = |want: u16| move |status: u16, _: Option<i64>| status == want;
        let mismatch = |status: u16, code: Option<i64>| status == 400 && code == Some(-32020);
        let foreign = "http://mcp-conformance.invalid";
        let probes = [
            HttpProbe {
                id: "http.origin",
                sent: probe.clone(),
                headers: with("origin", foreign),
                ok: Box::new(status_is(403)),
                shown: format!("Origin: {foreign}"),
                why: "a foreign Origin must get 403 Forbidden (DNS rebinding)",
            },
            HttpProbe {
                id: "http.accept",
                sent: probe.clone(),
                headers: with("accept", "text/plain"),
                ok: Box::new(status_is(406)),
                shown: "Accept: text/plain".into(),
                why: "a client that accepts neither JSON nor SSE should get 406 Not Acceptable",
            },
            HttpProbe {
                id: "http.content-type",
                sent: probe.clone(),
                headers: with("content-type", "text/plain"),
                ok: Box::new(status_is(415)),
                shown: "Content-Type: text/plain".into(),
                why: "a body that is not application/json should get 415 Unsupported Media Type",
            },
        ];
        for p in probes {
            self.expect_http(&w, p, deadline()).await;
        }
        if w.is_local() {
            let rebound = "mcp-conformance.invalid";
            self.expect_http(
                &w,
                HttpProbe {
                    id: "http.host",
                    sent: probe.clone(),
                    headers: with("host", rebound),
                    ok: Box::new(|status: u16, _: Option<i64>| (400..500).contains(&status)),
                    shown: format!("Host: {rebound}"),
                    why: "a local server reached under a foreign name (a rebound DNS name) should refuse the request",
                },
                deadline(),
            )
            .await;
        } else {
            self.skip("http.host", "not a local server (its Host is the name it is reached by)");
        }
        if modern {
            // No tool of that name exists: a server that skips the header check answers
            // "unknown tool", and nothing is ever run.
            let call = self.message("tools/call", json!({"name": "mcp-conformance-no-such-tool", "arguments": {}}));
            let mut headers = meta_for(&call);
            headers.push(("mcp-name", Some("mcp-conformance-other-tool".into())));
            self.expect_http(
                &w,
                HttpProbe {
                    id: "http.name-mismatch",
                    sent: call,
                    headers,
                    ok: Box::new(mismatch),
                    shown: "Mcp-Name: mcp-conformance-other-tool".into(),
                    why: "Mcp-Name differs from the body's params.name: 400 with -32020 (HeaderMismatch) is required",
                },
                deadline(),
            )
            .await;
            let list = self.message("tools/list", json!({}));
            let mut headers = meta_for(&list);
            headers.push(("mcp-protocol-version", Some("2025-11-25".into())));
            self.expect_http(
                &w,
                HttpProbe {
                    id: "http.version-header-mismatch",
                    sent: list,
                    headers,
                    ok: Box::new(mismatch),
                    shown: "MCP-Protocol-Version: 2025-11-25, the body's _meta 2026-07-28".into(),
                    why: "the MCP-Protocol-Version header differs from the body's protocolVersion: 400 with -32020 \
                          (HeaderMismatch) is required",
                },
                deadline(),
            )
            .await;
        }
        // Malformed body.
        let broken = "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ";
        let x = w.exchange("POST", Some(broken.as_bytes()), &meta, None, deadline()).await;
        if (400..500).contains(&x.seen.status) {
            self.pass("http.malformed-body");
        } else {
            self.fail(
                "http.malformed-body",
                Some(&json!(broken)),
                Some(format!("http {}", x.seen.status)),
                "malformed JSON must get an HTTP error status (4xx)",
            );
        }
        if modern {
            let x = w
                .exchange(
                    "GET",
                    None,
                    &[("accept", Some("text/event-stream".into()))],
                    None,
                    Instant::now() + timeout.min(Duration::from_secs(3)),
                )
                .await;
            if x.seen.status == 405 {
                self.pass("http.get-405");
            } else {
                self.fail(
                    "http.get-405",
                    None,
                    Some(format!("http {} to GET", x.seen.status)),
                    "a server of 2026-07-28 only should answer GET with 405 Method Not Allowed",
                );
            }
            let list = self.message("tools/list", json!({}));
            self.expect_http(
                &w,
                HttpProbe {
                    id: "http.header-mismatch",
                    sent: list,
                    headers: vec![("mcp-method", Some("prompts/list".into()))],
                    ok: Box::new(mismatch),
                    shown: "Mcp-Method: prompts/list".into(),
                    why: "Mcp-Method differs from the body's method: 400 with -32020 (HeaderMismatch) is required",
                },
                deadline(),
            )
            .await;
            let mut odd = self
                .message("tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": UNKNOWN_VERSION}}));
            odd["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(UNKNOWN_VERSION);
            let x = w
                .exchange(
                    "POST",
                    Some(odd.to_string().as_bytes()),
                    &[
                        ("mcp-method", Some("tools/list".into())),
                        ("mcp-protocol-version", Some(UNKNOWN_VERSION.into())),
                    ],
                    odd.get("id"),
                    deadline(),
                )
                .await;
            let error = x.messages.iter().find_map(|m| m.get("error")).cloned();
            let got = format!(
                "http {}: {}",
                x.seen.status,
                x.messages.first().map(|m| excerpt(&m.to_string())).unwrap_or(x.seen.body_excerpt.clone())
            );
            self.unsupported_version_error(&odd, error.as_ref(), got);
            if x.seen.status == 400 {
                self.pass("http.unsupported-version-400");
            } else {
                self.fail(
                    "http.unsupported-version-400",
                    Some(&odd),
                    Some(format!("http {}", x.seen.status)),
                    "a request at a version the server does not implement must get 400 Bad Request",
                );
            }
        } else if w.session.is_some() {
            let list = self.message("tools/list", json!({}));
            let x = w
                .exchange(
                    "POST",
                    Some(list.to_string().as_bytes()),
                    &[("mcp-session-id", None)],
                    list.get("id"),
                    deadline(),
                )
                .await;
            if x.seen.status == 400 {
                self.pass("http.session-required");
            } else {
                self.fail(
                    "http.session-required",
                    Some(&list),
                    Some(format!("http {} without Mcp-Session-Id", x.seen.status)),
                    "the server issued a session: a request without it should get 400 Bad Request",
                );
            }
        } else {
            self.skip("http.session-required", "the server issued no session id");
        }
    }

    /// Sends `probe` and judges the answer by its status and JSON-RPC error code.
    async fn expect_http(&mut self, w: &HttpWire, probe: HttpProbe, deadline: Instant) {
        let body = probe.sent.to_string();
        let x = w.exchange("POST", Some(body.as_bytes()), &probe.headers, probe.sent.get("id"), deadline).await;
        let code = x.messages.iter().find_map(|m| m.pointer("/error/code").and_then(Value::as_i64));
        if (probe.ok)(x.seen.status, code) {
            self.pass(probe.id);
        } else {
            let code = code.map_or_else(String::new, |c| format!(", error {c}"));
            let got = format!("http {}{code} ({})", x.seen.status, probe.shown);
            self.fail(probe.id, Some(&probe.sent), Some(got), probe.why);
        }
    }

    fn unsupported_version_error(&mut self, sent: &Value, error: Option<&Value>, got: String) {
        match error {
            Some(e)
                if e.get("code") == Some(&json!(-32022))
                    && e.pointer("/data/supported").is_some_and(Value::is_array) =>
            {
                self.pass("lifecycle.unsupported-version")
            }
            other => self.fail(
                "lifecycle.unsupported-version",
                Some(sent),
                Some(match other {
                    Some(e) => format!("error {}", excerpt(&e.to_string())),
                    None => got,
                }),
                "a request at 1900-01-01 must get -32022 (UnsupportedProtocolVersionError) with data.supported",
            ),
        }
    }

    async fn session_delete(&mut self, wire: &mut Wire) {
        let timeout = self.timeout();
        let list = self.message("tools/list", json!({}));
        let Some(w) = http_wire(wire) else { return };
        if w.session.is_none() {
            self.skip("http.session-deleted", "the server issued no session id");
            return;
        }
        let x = w.exchange("DELETE", None, &[], None, Instant::now() + timeout).await;
        match x.seen.status {
            405 => self.skip("http.session-deleted", "the server does not let clients end sessions (405 to DELETE)"),
            200..=299 => {
                let after = w
                    .exchange("POST", Some(list.to_string().as_bytes()), &[], list.get("id"), Instant::now() + timeout)
                    .await;
                if after.seen.status == 404 {
                    self.pass("http.session-deleted");
                } else {
                    self.fail(
                        "http.session-deleted",
                        Some(&list),
                        Some(format!("http {}", after.seen.status)),
                        "after DELETE ended the session, a request with its id must get 404 Not Found",
                    );
                }
            }
            other => self.fail(
                "http.session-deleted",
                None,
                Some(format!("http {other} to DELETE")),
                "DELETE of the session must end it (2xx) or be refused with 405",
            ),
        }
    }
}

/// One HTTP request of the transport checks: the message, the headers that make it a probe,
/// and what a conforming server answers.
struct HttpProbe {
    id: &'static str,
    sent: Value,
    headers: Vec<(&'static str, Option<String>)>,
    ok: Box<dyn Fn(u16, Option<i64>) -> bool + Send>,
    /// The probe's headers, as the report shows them.
    shown: String,
    why: &'static str,
}

/// The `Mcp-Method` header of a 2026-07-28 `message`.
fn meta_for(message: &Value) -> Vec<(&'static str, Option<String>)> {
    vec![("mcp-method", message["method"].as_str().map(str::to_owned))]
}

/// Arguments that satisfy `schema`'s required properties, made up from their types (the first
/// `enum` value, the `default`, else a plain value of the type).
fn arguments_for(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let property = schema
            .pointer(&format!("/properties/{}", name.replace('~', "~0").replace('/', "~1")))
            .cloned()
            .unwrap_or(json!({}));
        arguments.insert(name.to_owned(), value_for(&property));
    }
    Value::Object(arguments)
}

fn value_for(schema: &Value) -> Value {
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(value) = schema.get("const").or_else(|| schema.get("default")) {
        return value.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::Array(types)) => types.iter().find(|t| *t != "null").and_then(Value::as_str).unwrap_or("string"),
        Some(Value::String(t)) => t.as_str(),
        _ => "string",
    };
    match ty {
        "integer" => json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        "number" => json!(schema.get("minimum").and_then(Value::as_f64).unwrap_or(1.0)),
        "boolean" => json!(true),
        "array" => json!([]),
        "object" => arguments_for(schema),
        "null" => Value::Null,
        _ => json!("mcp-conformance"),
    }
}

/// Why `template` is not a well-formed RFC 6570 URI template, if it is not.
fn template_problem(template: &str) -> Option<String> {
    if template.is_empty() {
        return Some("empty".into());
    }
    let mut open = false;
    for c in template.chars() {
        match c {
            '{' if open => return Some("a { inside an expression".into()),
            '{' => open = true,
            '}' if !open => return Some("a } with no {".into()),
            '}' => open = false,
            c if c.is_whitespace() => return Some("whitespace".into()),
            _ => {}
        }
    }
    open.then(|| "an expression is not closed".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_templates() {
        assert_eq!(template_problem("file:///{path}"), None);
        assert_eq!(template_problem("demo://r/{id}/x{?q,r}"), None);
        assert!(template_problem("demo://r/{id").is_some());
        assert!(template_problem("demo://r/id}").is_some());
        assert!(template_problem("").is_some());
    }

    #[test]
    fn arguments_from_a_schema() {
        let schema = json!({"type": "object", "required": ["a", "b", "c", "d"], "properties": {
            "a": {"type": "string"}, "b": {"type": "integer", "minimum": 3}, "c": {"enum": ["x", "y"]},
            "d": {"type": "object", "required": ["e"], "properties": {"e": {"type": ["null", "boolean"]}}},
            "f": {"type": "string"}}});
        assert_eq!(arguments_for(&schema), json!({"a": "mcp-conformance", "b": 3, "c": "x", "d": {"e": true}}));
    }
}
