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

use serde_json::{json, Value};
use tokio::time::Instant;

use super::rules::Transport;
use super::rules::{rule, RULES};
use super::schema::SpecSchemas;
use super::sse_wire::SseWire;
use super::wire::{excerpt, HttpWire, Reply, StdioWire, Unsolicited, Wire};
use super::{CheckOptions, Era, Failure, Finding, Status, Target};

mod features;
mod http;
mod protocol;

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
}
