//! Matching a live message against a recorded one: what may differ between two runs of the same
//! session, and nothing else.
//!
//! Every tolerance is a [`Rule`], and the default rules are listed in one place,
//! [`Rules::defaults`]. A recording `NAME.jsonl` may add rules or switch defaults off with a
//! sidecar `NAME.rules.json` next to it:
//!
//! ```json
//! {"disable": ["uuids"],
//!  "rules": [{"name": "commit-hashes", "paths": ["**"], "action": "bind-tokens", "tokens": ["hex40"]}]}
//! ```
//!
//! A sidecar can also say that the server's answers follow the clock (`"clock": "recorded"`):
//! a replay then runs the server under the recording's clock (see `clock`), so that weekdays
//! and dates derived from "today" come out as recorded.
//!
//! A [`Matcher`] holds the state of one session: the ids the live peer chose for its own
//! requests and the values bound so far (a task id the live server made up, the live fixture
//! directory standing for `/tmp/mcp-fixtures`). Bound values are substituted into later expected
//! messages and into what the replay sends, so a value that varies must still be used
//! consistently.
//!
//! Not here: reading or writing messages, timing (`t_ms` is never compared).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::clock::ClockMode;
use super::diff::{first_difference, Difference};

/// What a rule does to the values it selects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// The `id` of a request the peer sent is its own choice: it is not compared but mapped, and
    /// the recorded answer to that request is sent with the live id.
    RemapId,
    /// The value is the peer's choice (a task id): the first live value is bound to the
    /// recorded one and must then be used consistently (and is substituted into what we send).
    Bind,
    /// The tokens of these classes inside strings are replaced by their class name on both sides
    /// before comparing (clock times, UUIDs).
    Mask,
    /// Like `mask`, but each recorded token is bound to the live one, consistently.
    BindTokens,
    /// The value is not compared at all (but must be present when recorded).
    Ignore,
    /// A message of these methods may arrive before or after other notifications than recorded.
    MayReorder,
    /// Every string starting with `from` is rewritten to start with the live value of `to`
    /// (`{fixtures}`: the fixture directory the replay created) before comparing or sending.
    Rewrite,
}

/// One tolerance. JSON shape of a sidecar rule: `{"name", "methods", "paths", "when", "action",
/// "tokens", "from", "to", "why"}`; only `name` and `action` are required.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rule {
    /// A name, so a sidecar can disable it and reports can cite it.
    pub name: String,
    /// Methods the rule applies to (`*` at the end matches any suffix); empty: every message.
    /// A response is of the method of the request it answers.
    #[serde(default)]
    pub methods: Vec<String>,
    /// Paths inside the message, dot-separated from its top (`params.level`,
    /// `result.content.*.text`); `*` is one member or index, `**` any number of them.
    /// Empty: the whole message.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Only when the recorded string at `when.path` matches `when.glob` (`*` wildcards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// What to do.
    pub action: Action,
    /// Token classes for `mask` and `bind-tokens`: `iso-datetime`, `js-date`, `clock-time`,
    /// `uuid`, `hex32`, `hex40`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<String>,
    /// For `mask` and `bind-tokens`: the strings are base64; tokens are looked for in the
    /// decoded text (a blob that holds a clock time).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub base64: bool,
    /// For `rewrite`: the recorded prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// For `rewrite`: the live prefix; `{fixtures}` stands for the live fixture directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Why the rule exists.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// A condition on the recorded message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct When {
    /// Path of a string in the recorded message.
    pub path: String,
    /// Glob it must match (`*` matches any run of characters).
    pub glob: String,
}

fn rule(name: &str, methods: &[&str], paths: &[&str], action: Action, why: &str) -> Rule {
    Rule {
        name: name.into(),
        methods: methods.iter().map(|s| s.to_string()).collect(),
        paths: paths.iter().map(|s| s.to_string()).collect(),
        when: None,
        action,
        tokens: Vec::new(),
        base64: false,
        from: None,
        to: None,
        why: why.into(),
    }
}

/// The rules in force for one recording.
#[derive(Debug, Clone)]
pub struct Rules {
    /// In order; for one value the first `ignore`/`bind`/`remap-id` rule that selects it wins,
    /// and every `mask`/`bind-tokens` rule that selects it applies.
    pub rules: Vec<Rule>,
    /// The clock the server under test should read when this recording is replayed.
    pub clock: ClockMode,
}

/// A sidecar `NAME.rules.json`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sidecar {
    /// Names of default rules switched off for this recording.
    #[serde(default)]
    pub disable: Vec<String>,
    /// Rules added after the defaults.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// `recorded`: the server's answers follow the clock, so replays run it under the
    /// recording's clock (`system`, the default: the machine's clock).
    #[serde(default)]
    pub clock: Option<ClockMode>,
    /// Why this recording needs them.
    #[serde(default)]
    pub why: String,
}

impl Rules {
    /// THE list of what may differ between a recording and a live run, everywhere:
    ///
    /// 1. `peer-request-ids`: the id of a request the other side sends (the server's
    ///    `roots/list`, `sampling/createMessage`, `elicitation/create`) is remapped, not compared;
    ///    our recorded answer carries the live id. Ids we choose are sent as recorded and must
    ///    come back as they are.
    /// 2. `task-ids`: every `taskId` is the server's choice: bound on first sight.
    ///    `request-states`: the same for every `requestState` (a multi-round request's sealed
    ///    state, new each run), so the recorded retry carries the live state.
    /// 3. `fixture-paths`: `/tmp/mcp-fixtures...` (the recordings' scratch data) is rewritten to the
    ///    fixture directory the replay created (see `fixtures`), in what we send and expect.
    /// 4. `clock`: ISO date-times, JavaScript `Date` strings and clock times inside any string;
    ///    `clock-in-blobs`: the same inside base64 `blob`s that decode to text.
    /// 5. `uuids`: UUIDs inside any string (session ids, event ids, request ids in texts).
    /// 6. `simulated-log-messages`: server-everything's random-level log messages
    ///    (`notifications/message` whose data is `...-level message`): level and data.
    /// 7. `notifications-reorder`: notifications may arrive in another order relative to other
    ///    messages than recorded (each is still matched exactly, to the first unmatched
    ///    notification of the same method that matches).
    ///
    /// Structural, not rules: `t_ms` is never compared; responses to our requests are matched by
    /// id (concurrent requests may be answered in either order); messages we send wait until
    /// every server message recorded before them has arrived.
    pub fn defaults() -> Rules {
        let mut clock = rule("clock", &[], &["**"], Action::Mask, "timestamps and clock times change from run to run");
        clock.tokens = vec!["iso-datetime".into(), "js-date".into(), "clock-time".into()];
        let mut blobs =
            rule("clock-in-blobs", &[], &["**.blob"], Action::Mask, "text blobs made at run time hold clock times");
        blobs.tokens = clock.tokens.clone();
        blobs.base64 = true;
        let mut uuids =
            rule("uuids", &[], &["**"], Action::Mask, "session ids, event ids and request uuids are random");
        uuids.tokens = vec!["uuid".into()];
        let mut fixtures = rule(
            "fixture-paths",
            &[],
            &["**"],
            Action::Rewrite,
            "the recordings' scratch data lived in /tmp/mcp-fixtures; the replay makes its own copy",
        );
        fixtures.from = Some("/tmp/mcp-fixtures".into());
        fixtures.to = Some("{fixtures}".into());
        let mut simulated = rule(
            "simulated-log-messages",
            &["notifications/message"],
            &["params.level", "params.data"],
            Action::Ignore,
            "server-everything's simulated logging picks a random level (and names it in data)",
        );
        simulated.when = Some(When { path: "params.data".into(), glob: "*-level message".into() });
        Rules {
            rules: vec![
                rule("peer-request-ids", &[], &["id"], Action::RemapId, "each side numbers its own requests"),
                rule("task-ids", &[], &["**.taskId"], Action::Bind, "the server makes task ids up"),
                rule(
                    "request-states",
                    &[],
                    &["**.requestState"],
                    Action::Bind,
                    "a 2026-07-28 server seals each requestState anew (keys, nonces, expiry)",
                ),
                fixtures,
                clock,
                blobs,
                uuids,
                simulated,
                rule(
                    "notifications-reorder",
                    &["notifications/*"],
                    &[],
                    Action::MayReorder,
                    "notifications are not ordered against other traffic",
                ),
            ],
            clock: ClockMode::System,
        }
    }

    /// The defaults changed by the sidecar of `recording` (`NAME.rules.json` next to
    /// `NAME.jsonl`), if there is one.
    ///
    /// # Errors
    /// When the sidecar exists but cannot be read or parsed.
    pub fn for_recording(recording: &Path) -> Result<Rules, String> {
        let mut rules = Rules::defaults();
        let sidecar = sidecar_path(recording);
        match std::fs::read_to_string(&sidecar) {
            Ok(text) => {
                let sidecar: Sidecar =
                    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", sidecar.display()))?;
                rules.apply(sidecar);
                Ok(rules)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(rules),
            Err(e) => Err(format!("{}: {e}", sidecar.display())),
        }
    }

    /// Applies a sidecar: drops the disabled rules, adds its own.
    pub fn apply(&mut self, sidecar: Sidecar) {
        self.rules.retain(|r| !sidecar.disable.contains(&r.name));
        self.rules.extend(sidecar.rules);
        if let Some(clock) = sidecar.clock {
            self.clock = clock;
        }
    }

    /// Whether messages of `method` may be reordered.
    pub fn may_reorder(&self, method: &str) -> bool {
        self.rules.iter().any(|r| r.action == Action::MayReorder && method_matches(&r.methods, method))
    }

    fn rewrites(&self) -> impl Iterator<Item = (&str, &str)> {
        self.rules
            .iter()
            .filter(|r| r.action == Action::Rewrite)
            .filter_map(|r| Some((r.from.as_deref()?, r.to.as_deref()?)))
    }
}

/// `NAME.rules.json` for `NAME.jsonl`.
pub fn sidecar_path(recording: &Path) -> PathBuf {
    let stem = recording.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    recording.with_file_name(format!("{stem}.rules.json"))
}

fn method_matches(methods: &[String], method: &str) -> bool {
    methods.is_empty()
        || methods.iter().any(|m| match m.strip_suffix('*') {
            Some(prefix) => method.starts_with(prefix),
            None => m == method,
        })
}

/// `*` matches any run of characters.
pub fn glob_matches(glob: &str, text: &str) -> bool {
    let parts: Vec<&str> = glob.split('*').collect();
    if parts.len() == 1 {
        return glob == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

fn path_matches(pattern: &[&str], path: &[String]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| path_matches(rest, &path[skip..])),
        Some((seg, rest)) => !path.is_empty() && (*seg == "*" || *seg == path[0]) && path_matches(rest, &path[1..]),
    }
}

fn selects(rule: &Rule, path: &[String]) -> bool {
    rule.paths.is_empty() || rule.paths.iter().any(|p| path_matches(&p.split('.').collect::<Vec<_>>(), path))
}

fn lookup<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, seg| match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => a.get(seg.parse::<usize>().ok()?),
        _ => None,
    })
}

/// The method a message is about: its own, or for a response the method of its request.
pub fn method_of(msg: &Value) -> Option<&str> {
    msg.get("method").and_then(Value::as_str)
}

/// The kind of a JSON-RPC message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Has `method` and `id`.
    Request,
    /// Has `method`, no `id`.
    Notification,
    /// Has `result` or `error`.
    Response,
}

/// The kind of `msg`.
pub fn kind_of(msg: &Value) -> Kind {
    match (msg.get("method").is_some(), msg.get("id").is_some()) {
        (true, true) => Kind::Request,
        (true, false) => Kind::Notification,
        _ => Kind::Response,
    }
}

/// The state of one replayed session: rules, bound values and remapped ids.
#[derive(Debug, Clone)]
pub struct Matcher {
    rules: Rules,
    /// Recorded string → live string, substituted in what is expected and sent.
    bindings: Vec<(String, String)>,
    /// Recorded id of a request from the peer → its live id.
    ids: HashMap<String, Value>,
}

impl Matcher {
    /// A matcher with `rules`; `fixtures` is the live directory that `{fixtures}` stands for.
    pub fn new(rules: Rules, fixtures: Option<&Path>) -> Matcher {
        let mut bindings = Vec::new();
        for (from, to) in rules.rewrites() {
            match (to.contains("{fixtures}"), fixtures) {
                (true, Some(dir)) => bindings.push((from.to_owned(), to.replace("{fixtures}", &dir.to_string_lossy()))),
                (true, None) => {}
                (false, _) => bindings.push((from.to_owned(), to.to_owned())),
            }
        }
        Matcher { rules, bindings, ids: HashMap::new() }
    }

    /// The rules in force.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// `recorded` with every bound value replaced by its live value.
    pub fn substitute(&self, recorded: &Value) -> Value {
        match recorded {
            Value::String(s) => Value::String(self.substitute_str(s)),
            Value::Array(a) => Value::Array(a.iter().map(|v| self.substitute(v)).collect()),
            Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), self.substitute(v))).collect()),
            other => other.clone(),
        }
    }

    /// The recorded text of a message with every bound value replaced (textually, so that the
    /// sender's key order and number spelling survive).
    pub fn substitute_text(&self, raw: &str) -> String {
        let escaped = |s: &str| {
            let quoted = Value::String(s.to_owned()).to_string();
            quoted[1..quoted.len() - 1].to_owned()
        };
        let mut out = raw.to_owned();
        for (from, to) in &self.bindings {
            let (from, to) = (escaped(from), escaped(to));
            if from.len() >= 8 {
                out = out.replace(&from, &to);
            } else {
                out = out.replace(&format!("\"{from}\""), &format!("\"{to}\""));
            }
        }
        out
    }

    fn substitute_str(&self, s: &str) -> String {
        let mut out = s.to_owned();
        for (from, to) in &self.bindings {
            if out == *from || (from.len() >= 8 && out.contains(from.as_str())) {
                out = out.replace(from.as_str(), to);
            }
        }
        out
    }

    /// The live id for a recorded id of a peer's request, once seen.
    pub fn live_id(&self, recorded: &Value) -> Option<&Value> {
        self.ids.get(&recorded.to_string())
    }

    /// Records that the peer's request recorded with id `recorded` is live id `live`.
    pub fn map_id(&mut self, recorded: &Value, live: &Value) {
        self.ids.insert(recorded.to_string(), live.clone());
    }

    /// Compares a request the peer sent with the recorded one: its `id` is remapped (rule
    /// `peer-request-ids`), the rest compared.
    ///
    /// # Errors
    /// The first difference the rules do not allow.
    pub fn compare_peer_request(&mut self, method: &str, recorded: &Value, live: &Value) -> Result<(), Difference> {
        let remap = self.rules.rules.iter().any(|r| r.action == Action::RemapId && method_matches(&r.methods, method));
        if !remap {
            return self.compare(method, recorded, live);
        }
        let (mut recorded, mut live) = (recorded.clone(), live.clone());
        let (r_id, l_id) = match (recorded.as_object_mut(), live.as_object_mut()) {
            (Some(r), Some(l)) => (r.remove("id"), l.remove("id")),
            _ => (None, None),
        };
        self.compare(method, &recorded, &live)?;
        if let (Some(r), Some(l)) = (r_id, l_id) {
            self.map_id(&r, &l);
        }
        Ok(())
    }

    /// Compares a live message with the recorded one (a request or notification of `method`, or
    /// a response to a request of `method`), learning bindings and peer ids as it goes.
    ///
    /// # Errors
    /// The first difference the rules do not allow, with its JSON path.
    pub fn compare(&mut self, method: &str, recorded: &Value, live: &Value) -> Result<(), Difference> {
        let expected = self.substitute(recorded);
        let rules: Vec<Rule> = self
            .rules
            .rules
            .iter()
            .filter(|r| method_matches(&r.methods, method))
            .filter(|r| match &r.when {
                None => true,
                Some(w) => lookup(recorded, &w.path).and_then(Value::as_str).is_some_and(|s| glob_matches(&w.glob, s)),
            })
            .cloned()
            .collect();
        let mut path = Vec::new();
        self.walk(&rules, &mut path, &expected, live)
    }

    fn walk(
        &mut self,
        rules: &[Rule],
        path: &mut Vec<String>,
        expected: &Value,
        live: &Value,
    ) -> Result<(), Difference> {
        let here: Vec<&Rule> = rules.iter().filter(|r| selects(r, path)).collect();
        let decisive = here.iter().find(|r| matches!(r.action, Action::Ignore | Action::Bind | Action::RemapId));
        match decisive.map(|r| &r.action) {
            Some(Action::Ignore) => return Ok(()),
            Some(Action::Bind) => {
                if let (Value::String(e), Value::String(l)) = (expected, live) {
                    let already_live = self.bindings.iter().any(|(_, to)| to == e);
                    if e == l || (!already_live && !self.bindings.iter().any(|(from, _)| from == e)) {
                        if e != l {
                            self.bindings.push((e.clone(), l.clone()));
                        }
                        return Ok(());
                    }
                    // A bound value must recur as bound: fall through to the exact comparison.
                }
            }
            _ => {}
        }
        match (expected, live) {
            (Value::Object(e), Value::Object(l)) => {
                for (key, ev) in e {
                    path.push(key.clone());
                    let result = match l.get(key) {
                        Some(lv) => self.walk(rules, path, ev, lv),
                        None => Err(self.difference(path, Some(ev.clone()), None)),
                    };
                    path.pop();
                    result?;
                }
                if let Some((key, lv)) = l.iter().find(|(k, _)| !e.contains_key(*k)) {
                    path.push(key.clone());
                    let d = self.difference(path, None, Some(lv.clone()));
                    path.pop();
                    return Err(d);
                }
                Ok(())
            }
            (Value::Array(e), Value::Array(l)) => {
                for (i, (ev, lv)) in e.iter().zip(l).enumerate() {
                    path.push(i.to_string());
                    let result = self.walk(rules, path, ev, lv);
                    path.pop();
                    result?;
                }
                if e.len() != l.len() {
                    let i = e.len().min(l.len());
                    path.push(i.to_string());
                    let d = self.difference(path, e.get(i).cloned(), l.get(i).cloned());
                    path.pop();
                    return Err(d);
                }
                Ok(())
            }
            (Value::String(e), Value::String(l)) if e != l => {
                let mask: Vec<&str> = here
                    .iter()
                    .filter(|r| r.action == Action::Mask)
                    .flat_map(|r| r.tokens.iter().map(String::as_str))
                    .collect();
                let bind: Vec<&str> = here
                    .iter()
                    .filter(|r| r.action == Action::BindTokens)
                    .flat_map(|r| r.tokens.iter().map(String::as_str))
                    .collect();
                let decoded = |s: &str| decode_base64(s).and_then(|b| String::from_utf8(b).ok());
                let base64 = here.iter().any(|r| r.base64 && matches!(r.action, Action::Mask | Action::BindTokens));
                let blob_match = base64
                    && match (decoded(e), decoded(l)) {
                        (Some(de), Some(dl)) => self.strings_match(&de, &dl, &mask, &bind),
                        _ => false,
                    };
                if blob_match || self.strings_match(e, l, &mask, &bind) {
                    Ok(())
                } else {
                    Err(self.difference(path, Some(expected.clone()), Some(live.clone())))
                }
            }
            _ if expected == live => Ok(()),
            _ => Err(self.difference(path, Some(expected.clone()), Some(live.clone()))),
        }
    }

    fn strings_match(&mut self, expected: &str, live: &str, mask: &[&str], bind: &[&str]) -> bool {
        if mask.is_empty() && bind.is_empty() {
            return false;
        }
        let all: Vec<&str> = mask.iter().chain(bind).copied().collect();
        let (e_skeleton, e_tokens) = tokenize(expected, &all);
        let (l_skeleton, l_tokens) = tokenize(live, &all);
        if e_skeleton != l_skeleton {
            return false;
        }
        let mut learned = Vec::new();
        for ((class, e), (_, l)) in e_tokens.iter().zip(&l_tokens) {
            if bind.contains(class) && e != l {
                if self.bindings.iter().chain(&learned).any(|(_, to)| to == e) {
                    // Already substituted: the live value was bound before and must recur.
                    return false;
                }
                match self.bindings.iter().chain(&learned).find(|(from, _)| from == e) {
                    Some((_, to)) if to != l => return false,
                    Some(_) => {}
                    None => learned.push((e.clone(), l.clone())),
                }
            }
        }
        self.bindings.extend(learned);
        true
    }

    fn difference(&self, path: &[String], expected: Option<Value>, actual: Option<Value>) -> Difference {
        let mut text = String::from("$");
        for seg in path {
            if seg.parse::<usize>().is_ok() {
                text.push_str(&format!("[{seg}]"));
            } else if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                text.push('.');
                text.push_str(seg);
            } else {
                text.push_str(&format!("[{}]", Value::String(seg.clone())));
            }
        }
        Difference { path: text, expected, actual }
    }
}

/// Whether a difference between two messages is only in what the rules allow, without keeping
/// any binding (for choosing among candidates).
pub fn would_match(matcher: &Matcher, method: &str, recorded: &Value, live: &Value) -> bool {
    let mut probe = Matcher { rules: matcher.rules.clone(), bindings: matcher.bindings.clone(), ids: HashMap::new() };
    probe.compare(method, recorded, live).is_ok()
}

/// The plain difference between two values, for messages no rule applies to.
pub fn plain_difference(expected: &Value, actual: &Value) -> Option<Difference> {
    first_difference(expected, actual)
}

/// Splits `text` into a skeleton (tokens replaced by `<class>`) and the tokens found. A
/// date-time's zone designator (`Z`, `+01:00`, `GMT+0000 (...)`) stays in the skeleton: it is
/// fixed by the server's time zone, not by the moment, so a changed offset or zone is a
/// difference, not noise.
pub fn tokenize<'c>(text: &str, classes: &[&'c str]) -> (String, Vec<(&'c str, String)>) {
    let bytes = text.as_bytes();
    let mut skeleton = Vec::with_capacity(bytes.len());
    let mut tokens = Vec::new();
    let mut i = 0;
    'outer: while i < bytes.len() {
        let at_boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if at_boundary {
            for class in classes {
                if let Some(n) = token_len(class, &bytes[i..]) {
                    let after = bytes.get(i + n);
                    if after.is_none_or(|b| !b.is_ascii_alphanumeric()) {
                        let moment = n - zone_len(class, &bytes[i..i + n]);
                        skeleton.extend_from_slice(format!("<{class}>").as_bytes());
                        skeleton.extend_from_slice(&bytes[i + moment..i + n]);
                        tokens.push((*class, text[i..i + moment].to_owned()));
                        i += n;
                        continue 'outer;
                    }
                }
            }
        }
        skeleton.push(bytes[i]);
        i += 1;
    }
    (String::from_utf8(skeleton).expect("only ASCII replaced"), tokens)
}

fn digits(b: &[u8], n: usize) -> bool {
    b.len() >= n && b[..n].iter().all(u8::is_ascii_digit)
}

fn hex(b: &[u8], n: usize) -> bool {
    b.len() >= n && b[..n].iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

fn clock_len(b: &[u8]) -> Option<usize> {
    // H:MM or HH:MM, then [:SS[.fff]] and [ AM| PM]
    let h = b.iter().take(2).take_while(|c| c.is_ascii_digit()).count();
    if h == 0 || b.get(h) != Some(&b':') || !digits(&b[h + 1..], 2) {
        return None;
    }
    let mut n = h + 3;
    if b.get(n) == Some(&b':') && digits(&b[n + 1..], 2) {
        n += 3;
        if b.get(n) == Some(&b'.') && digits(&b[n + 1..], 1) {
            n += 1 + b[n + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        }
    }
    if b[n..].starts_with(b" AM") || b[n..].starts_with(b" PM") {
        n += 3;
    }
    Some(n)
}

/// Decodes standard base64 (with or without padding); `None` if it is not base64.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// The length of the zone designator that ends `token`, a whole token of `class`.
fn zone_len(class: &str, token: &[u8]) -> usize {
    match class {
        "iso-datetime" if token.ends_with(b"Z") => 1,
        "iso-datetime" if token.len() >= 6 && matches!(token[token.len() - 6], b'+' | b'-') => 6,
        "js-date" => token.windows(4).position(|w| w == b" GMT").map_or(0, |at| token.len() - at),
        _ => 0,
    }
}

fn token_len(class: &str, b: &[u8]) -> Option<usize> {
    match class {
        "iso-datetime" => {
            // YYYY-MM-DD[T ]HH:MM:SS[.fff][Z|±HH:MM]
            if !(digits(b, 4) && b[4] == b'-' && digits(&b[5..], 2) && b.get(7) == Some(&b'-') && digits(&b[8..], 2)) {
                return None;
            }
            if !matches!(b.get(10), Some(b'T' | b' ')) {
                return None;
            }
            let mut n = 11 + clock_len(&b[11..])?;
            match b.get(n) {
                Some(b'Z') => n += 1,
                Some(b'+' | b'-')
                    if digits(&b[n + 1..], 2) && b.get(n + 3) == Some(&b':') && digits(&b[n + 4..], 2) =>
                {
                    n += 6
                }
                _ => {}
            }
            Some(n)
        }
        "js-date" => {
            // Mon Nov 30 2026 01:02:08 GMT+0000 (Coordinated Universal Time)
            const DAYS: [&[u8]; 7] = [b"Mon ", b"Tue ", b"Wed ", b"Thu ", b"Fri ", b"Sat ", b"Sun "];
            if b.len() < 24 || !DAYS.contains(&&b[..4]) || !b[4..7].iter().all(u8::is_ascii_alphabetic) {
                return None;
            }
            if !(b[7] == b' ' && digits(&b[8..], 2) && b[10] == b' ' && digits(&b[11..], 4) && b[15] == b' ') {
                return None;
            }
            let mut n = 16 + clock_len(&b[16..])?;
            if b[n..].starts_with(b" GMT") && b.len() >= n + 9 {
                n += 9;
                if b[n..].starts_with(b" (") {
                    if let Some(close) = b[n..].iter().position(|c| *c == b')') {
                        n += close + 1;
                    }
                }
            }
            Some(n)
        }
        "clock-time" => clock_len(b),
        "uuid" => {
            let ok = hex(b, 8)
                && b.get(8) == Some(&b'-')
                && hex(&b[9..], 4)
                && b.get(13) == Some(&b'-')
                && hex(&b[14..], 4)
                && b.get(18) == Some(&b'-')
                && hex(&b[19..], 4)
                && b.get(23) == Some(&b'-')
                && hex(&b[24..], 12);
            ok.then_some(36)
        }
        "hex32" => hex(b, 32).then_some(32),
        "hex40" => hex(b, 40).then_some(40),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_are_masked() {
        let (s, t) = tokenize("at 2026-11-30T01:01:48.106Z and 12:30:01", &["iso-datetime", "clock-time"]);
        assert_eq!(s, "at <iso-datetime>Z and <clock-time>");
        assert_eq!(t, [("iso-datetime", "2026-11-30T01:01:48.106".to_owned()), ("clock-time", "12:30:01".to_owned())]);
        let (s, _) =
            tokenize("created: Mon Nov 30 2026 01:02:08 GMT+0000 (Coordinated Universal Time)\nx", &["js-date"]);
        assert_eq!(s, "created: <js-date> GMT+0000 (Coordinated Universal Time)\nx");
        let (s, _) = tokenize("2026-11-30T09:15:00+01:00, 2026-11-30 00:15:00-08:00.", &["iso-datetime"]);
        assert_eq!(s, "<iso-datetime>+01:00, <iso-datetime>-08:00.");
        let (s, _) = tokenize("on 2026-11-30T09:15:00 local", &["iso-datetime"]);
        assert_eq!(s, "on <iso-datetime> local");
        let (s, _) = tokenize("created at 1:01:34 AM.", &["clock-time"]);
        assert_eq!(s, "created at <clock-time>.");
        assert_eq!(decode_base64("SGVsbG8sIE1DUCE=").unwrap(), b"Hello, MCP!");
        let (s, _) = tokenize("id 8fb5f2d0-74e2-4f64-a1d6-4219670061ba.", &["uuid"]);
        assert_eq!(s, "id <uuid>.");
    }

    #[test]
    fn task_ids_bind_and_must_stay_consistent() {
        let mut m = Matcher::new(Rules::defaults(), None);
        let rec = json!({"result": {"task": {"taskId": "aaa", "status": "working"}}, "id": 2});
        m.compare("tools/call", &rec, &json!({"result": {"task": {"taskId": "bbb", "status": "working"}}, "id": 2}))
            .unwrap();
        assert_eq!(m.substitute(&json!({"params": {"taskId": "aaa"}})), json!({"params": {"taskId": "bbb"}}));
        let d = m
            .compare(
                "tasks/get",
                &json!({"result": {"taskId": "aaa", "n": 1}}),
                &json!({"result": {"taskId": "bbb", "n": 2}}),
            )
            .unwrap_err();
        assert_eq!(d.path, "$.result.n");
        let d = m.compare("tasks/get", &json!({"result": {"taskId": "aaa"}}), &json!({"result": {"taskId": "ccc"}}));
        assert_eq!(d.unwrap_err().to_string(), r#"$.result.taskId: expected "bbb", got "ccc""#);
    }

    #[test]
    fn rules_select_by_method_path_and_condition() {
        let mut m = Matcher::new(Rules::defaults(), None);
        let rec =
            json!({"method": "notifications/message", "params": {"level": "notice", "data": "Notice-level message"}});
        let live =
            json!({"method": "notifications/message", "params": {"level": "error", "data": "Error-level message"}});
        m.compare("notifications/message", &rec, &live).unwrap();
        let rec = json!({"method": "notifications/message", "params": {"level": "info", "data": "Roots updated"}});
        let live = json!({"method": "notifications/message", "params": {"level": "error", "data": "Roots updated"}});
        assert_eq!(m.compare("notifications/message", &rec, &live).unwrap_err().path, "$.params.level");
    }

    #[test]
    fn request_states_bind_and_are_sent_back_live() {
        let mut m = Matcher::new(Rules::defaults(), None);
        let rec = json!({"result": {"resultType": "input_required", "requestState": "v1.recorded"}});
        m.compare("tools/call", &rec, &json!({"result": {"resultType": "input_required", "requestState": "v1.live"}}))
            .unwrap();
        let retry = json!({"params": {"name": "greet", "requestState": "v1.recorded"}});
        assert_eq!(m.substitute(&retry), json!({"params": {"name": "greet", "requestState": "v1.live"}}));
        let other = json!({"result": {"resultType": "input_required", "requestState": "v1.other"}});
        assert!(m.compare("tools/call", &rec, &other).is_err(), "a bound state must stay the same");
    }

    #[test]
    fn fixture_paths_are_rewritten() {
        let mut m = Matcher::new(Rules::defaults(), Some(Path::new("/x/mcp-fixtures")));
        let rec = json!({"result": {"text": "wrote /tmp/mcp-fixtures/fs/a"}});
        m.compare("tools/call", &rec, &json!({"result": {"text": "wrote /x/mcp-fixtures/fs/a"}})).unwrap();
    }

    #[test]
    fn bound_tokens_must_correspond() {
        let mut rules = Rules::defaults();
        let mut r = rule("hashes", &[], &["**"], Action::BindTokens, "");
        r.tokens = vec!["hex40".into()];
        rules.rules.push(r);
        let mut m = Matcher::new(rules, None);
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let c = "c".repeat(40);
        m.compare("x", &json!({"t": format!("hash {a}")}), &json!({"t": format!("hash {b}")})).unwrap();
        m.compare("x", &json!({"t": format!("log {a}")}), &json!({"t": format!("log {b}")})).unwrap();
        assert!(m.compare("x", &json!({"t": format!("log {a}")}), &json!({"t": format!("log {c}")})).is_err());
    }

    #[test]
    fn globs() {
        assert!(glob_matches("*-level message", "Notice-level message"));
        assert!(!glob_matches("*-level message", "Roots updated"));
        assert!(glob_matches("a*c*e", "abcde"));
    }
}
