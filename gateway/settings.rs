//! The gateway's own part of a configuration file: the `[gateway]` table beside
//! `[mcp_servers.*]` (feature `config`), read into [`Settings`].
//!
//! ```toml
//! [gateway.tokens]                     # named bearer tokens: name = the variable holding it
//! ci = { env = "CI_TOKEN" }
//! dev = { env = "DEV_TOKEN" }
//!
//! [gateway.policy]
//! default = "deny"                     # when no rule matches: "allow" or "deny"
//!
//! [[gateway.policy.rules]]             # tried in order; the first match decides
//! name = "ci-echo-only"
//! effect = "allow"
//! callers = { tokens = ["ci"] }        # tokens, subjects, client_ids, scopes, claims
//! tools = ["echo/*"]                   # SERVER/NAME globs; prompts, resources (SERVER/URI)
//!
//! [[gateway.rate_limits]]              # every limit that applies must have a token left
//! name = "ci-hourly"
//! callers = { tokens = ["ci"] }        # as in rules; absent: every caller
//! tools = ["*"]                        # SERVER/TOOL globs; absent: every tool
//! rate = "100/hour"                    # N/second, N/minute, N/hour or N/day
//! burst = 10                           # default 1
//! per = "caller"                       # one bucket per caller (default), "tool": per caller and
//!                                      # tool, or "request": per caller, taken by every HTTP
//!                                      # request to the MCP endpoint (429 when empty; no tools)
//!
//!
//! [gateway.endpoints.readonly]        # a virtual server (see super::endpoint)
//! path = "/mcp/readonly"
//! servers = ["echo"]                   # server-name globs; absent: every server
//! tools = ["echo/*"]                   # SERVER/NAME globs offered; absent: all
//! exclude_tools = ["*/delete_*"]       # never offered (also prompts, exclude_prompts,
//!                                      # resources, exclude_resources)
//! tokens = ["ci"]                      # the named tokens it accepts; absent: all of them
//! scopes = ["mcp:read"]                # OAuth scopes it needs beyond the listener's
//!
//! [[gateway.endpoints.readonly.rename]]
//! tool = "echo/echo"                   # or prompt = "SERVER/NAME"
//! name = "say"                         # its name here; description = "…" its description
//!
//! [gateway.endpoints.readonly.policy]  # its own policy (as [gateway.policy]), in place of
//! default = "allow"                    # the gateway's
//!
//! [[gateway.endpoints.readonly.rate_limits]]  # its own limits (as [[gateway.rate_limits]]),
//! name = "readonly-calls"              # on the calls through it only, besides the gateway's
//! rate = "10/minute"
//! ```
//!
//! Never a token in the file: a token is named by the variable that holds it, read when the
//! gateway starts. Every error names the file, the line and the field
//! (`gw.toml: line 9: gateway.policy.rules[1]: unknown field `efect`…`).
//!
//! Not here: what the rules mean ([`super::policy`]), reading the variables (the application).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::endpoint::{Endpoint, Rename};
use super::policy::{Callers, Effect, Glob, Kind, Policy, Rule};
use super::rate_limit::{Limit, Per};

/// What the `[gateway]` table says.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Settings {
    /// Named bearer tokens: (name, the variable holding the token), in name order.
    pub tokens: Vec<(String, String)>,
    /// The policy; `None` when the file has no `[gateway.policy]` (everything allowed).
    pub policy: Option<Policy>,
    /// The rate limits on tool calls (`[[gateway.rate_limits]]`), in the order written.
    pub rate_limits: Vec<Limit>,
    /// The rate limits on HTTP requests (`[[gateway.rate_limits]]` with `per = "request"`), in
    /// the order written: every request of a caller they apply to takes a token.
    pub request_limits: Vec<Limit>,
    /// The virtual servers (`[gateway.endpoints.NAME]`), in name order.
    pub endpoints: Vec<Endpoint>,
}

#[derive(Deserialize)]
struct File {
    gateway: Option<GatewayToml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GatewayToml {
    #[serde(default)]
    tokens: BTreeMap<String, Spanned<TokenToml>>,
    policy: Option<PolicyToml>,
    #[serde(default)]
    rate_limits: Vec<Spanned<LimitToml>>,
    #[serde(default)]
    endpoints: BTreeMap<String, Spanned<EndpointToml>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointToml {
    path: String,
    #[serde(default)]
    servers: Vec<String>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    exclude_tools: Vec<String>,
    #[serde(default)]
    prompts: Vec<String>,
    #[serde(default)]
    exclude_prompts: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    exclude_resources: Vec<String>,
    #[serde(default)]
    rename: Vec<RenameToml>,
    #[serde(default)]
    tokens: Vec<String>,
    #[serde(default)]
    scopes: Vec<String>,
    policy: Option<PolicyToml>,
    #[serde(default)]
    rate_limits: Vec<Spanned<LimitToml>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenameToml {
    tool: Option<String>,
    prompt: Option<String>,
    name: Option<String>,
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitToml {
    name: String,
    #[serde(default)]
    callers: Option<CallersToml>,
    #[serde(default)]
    tools: Vec<String>,
    rate: String,
    burst: Option<u32>,
    #[serde(default)]
    per: Option<PerToml>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum PerToml {
    Caller,
    Tool,
    Request,
}

/// `N/second` (`minute`, `hour`, `day`) as calls per second.
fn per_second(rate: &str) -> Option<f64> {
    let (count, unit) = rate.split_once('/')?;
    let count: f64 = count.trim().parse().ok().filter(|c: &f64| c.is_finite() && *c > 0.0)?;
    let seconds = match unit.trim() {
        "second" | "s" => 1.0,
        "minute" | "min" => 60.0,
        "hour" | "h" => 3600.0,
        "day" | "d" => 86400.0,
        _ => return None,
    };
    Some(count / seconds)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenToml {
    env: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyToml {
    default: EffectToml,
    #[serde(default)]
    rules: Vec<Spanned<RuleToml>>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum EffectToml {
    Allow,
    Deny,
}

impl From<EffectToml> for Effect {
    fn from(e: EffectToml) -> Effect {
        match e {
            EffectToml::Allow => Effect::Allow,
            EffectToml::Deny => Effect::Deny,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleToml {
    name: String,
    effect: EffectToml,
    #[serde(default)]
    callers: Option<CallersToml>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    prompts: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CallersToml {
    #[serde(default)]
    tokens: Vec<String>,
    #[serde(default)]
    subjects: Vec<String>,
    #[serde(default)]
    client_ids: Vec<String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    claims: BTreeMap<String, String>,
}

/// The callers of a rule or limit.
fn callers(written: Option<&CallersToml>) -> Callers {
    let Some(c) = written else { return Callers::default() };
    Callers {
        tokens: c.tokens.iter().map(Glob::new).collect(),
        subjects: c.subjects.iter().map(Glob::new).collect(),
        client_ids: c.client_ids.iter().map(Glob::new).collect(),
        scopes: c.scopes.clone(),
        claims: c.claims.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    }
}

/// Every token `callers` names is one of `[gateway.tokens]` (a typo would match nobody).
fn check_tokens(settings: &Settings, callers: &Callers) -> Result<(), String> {
    for token in &callers.tokens {
        if !settings.tokens.iter().any(|(name, _)| token.matches(name)) {
            return Err(format!("callers.tokens: {:?} names no token of [gateway.tokens]", token.as_str()));
        }
    }
    Ok(())
}

/// The line (from 1) of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl Settings {
    /// Reads the `[gateway]` table of the TOML `text` (the rest of the file is not looked at);
    /// `file` names it in errors.
    ///
    /// # Errors
    /// The text is not TOML, or the table has an unknown or mistyped field, a rule without a
    /// name or target, two rules of one name, or a rule naming a token the file does not
    /// have: the message names the file, the line and the field.
    pub fn from_toml(text: &str, file: &str) -> Result<Settings, String> {
        let parsed: File = toml::from_str(text).map_err(|e| match e.span() {
            Some(span) => format!("{file}: line {}: {}", line_of(text, span.start), e.message().trim_end()),
            None => format!("{file}: {}", e.message().trim_end()),
        })?;
        let Some(gateway) = parsed.gateway else { return Ok(Settings::default()) };
        let mut settings = Settings::default();
        for (name, token) in &gateway.tokens {
            let at = |what: &str| {
                format!("{file}: line {}: gateway.tokens.{name}: {what}", line_of(text, token.span().start))
            };
            let env = &token.get_ref().env;
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
                return Err(at("a token's name is letters, digits, -, _ and ."));
            }
            if env.is_empty() {
                return Err(at("env: the name of the variable holding the token"));
            }
            settings.tokens.push((name.clone(), env.clone()));
        }
        let (calls, requests) = read_limits(&gateway.rate_limits, &settings, text, file, "gateway.rate_limits", true)?;
        settings.rate_limits = calls;
        settings.request_limits = requests;
        for (name, spanned) in &gateway.endpoints {
            let at = |what: String| {
                format!("{file}: line {}: gateway.endpoints.{name}: {what}", line_of(text, spanned.span().start))
            };
            let endpoint = endpoint(&settings, name, spanned.get_ref()).map_err(at)?;
            if let Some(other) = settings.endpoints.iter().find(|e| e.path == endpoint.path) {
                return Err(at(format!("path: {:?} is the path of endpoint {}", endpoint.path, other.name)));
            }
            let policy = match &spanned.get_ref().policy {
                Some(policy) => {
                    Some(read_policy(policy, &settings, text, file, &format!("gateway.endpoints.{name}.policy"))?)
                }
                None => None,
            };
            let table = format!("gateway.endpoints.{name}.rate_limits");
            let (limits, _) = read_limits(&spanned.get_ref().rate_limits, &settings, text, file, &table, false)?;
            settings.endpoints.push(endpoint.policy(policy).rate_limits(limits));
        }
        let Some(policy) = gateway.policy else { return Ok(settings) };
        settings.policy = Some(read_policy(&policy, &settings, text, file, "gateway.policy")?);
        Ok(settings)
    }
}

/// The rate limits written in `table` (`gateway.rate_limits` or an endpoint's), on calls and
/// (`per = "request"`, where `requests` allows it) on requests: each named apart from the
/// others and from the gateway's (their refusals are counted by name).
fn read_limits(
    written: &[Spanned<LimitToml>],
    settings: &Settings,
    text: &str,
    file: &str,
    table: &str,
    requests: bool,
) -> Result<(Vec<Limit>, Vec<Limit>), String> {
    let (mut calls, mut per_request): (Vec<Limit>, Vec<Limit>) = (Vec::new(), Vec::new());
    for (i, spanned) in written.iter().enumerate() {
        let at = |what: String| format!("{file}: line {}: {table}[{i}]: {what}", line_of(text, spanned.span().start));
        let limit = spanned.get_ref();
        let mut known = calls.iter().chain(&per_request).chain(&settings.rate_limits).chain(&settings.request_limits);
        if limit.name.is_empty() || known.any(|l| *l.name == *limit.name) {
            return Err(at(format!("name: {:?} is empty or the name of an earlier limit", limit.name)));
        }
        let Some(rate) = per_second(&limit.rate) else {
            return Err(at(format!("rate: {:?}: expected N/second, N/minute, N/hour or N/day", limit.rate)));
        };
        let burst = limit.burst.unwrap_or(1);
        if burst == 0 {
            return Err(at("burst: 0 would refuse every call".to_owned()));
        }
        let callers = callers(limit.callers.as_ref());
        check_tokens(settings, &callers).map_err(at)?;
        let mut built = Limit::new(limit.name.as_str(), rate, burst);
        built.callers = callers;
        built.tools = limit.tools.iter().map(Glob::new).collect();
        built.per = match limit.per {
            Some(PerToml::Tool) => Per::Tool,
            _ => Per::Caller,
        };
        if matches!(limit.per, Some(PerToml::Request)) {
            if !requests {
                return Err(at(
                    "per: \"request\" limits are the listener's ([[gateway.rate_limits]]), not an endpoint's (yet)"
                        .to_owned(),
                ));
            }
            if !limit.tools.is_empty() {
                return Err(at("tools: a limit per request takes every request, whatever it calls".to_owned()));
            }
            per_request.push(built);
        } else {
            calls.push(built);
        }
    }
    Ok((calls, per_request))
}

/// The endpoint `name` as written (its policy and rate limits aside).
fn endpoint(settings: &Settings, name: &str, written: &EndpointToml) -> Result<Endpoint, String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err("an endpoint's name is letters, digits, -, _ and .".to_owned());
    }
    let path = &written.path;
    if !path.starts_with('/') || path.len() < 2 || path.ends_with('/') || path.contains(['?', '#', '*', ' ']) {
        return Err(format!("path: {path:?}: a path such as \"/mcp/{name}\" (starting with /, not ending with one)"));
    }
    for token in &written.tokens {
        if !settings.tokens.iter().any(|(n, _)| n == token) {
            return Err(format!("tokens: {token:?} names no token of [gateway.tokens]"));
        }
    }
    let mut endpoint = Endpoint::new(name, path.as_str())
        .servers(written.servers.iter().cloned())
        .include(Kind::Tool, written.tools.iter().cloned())
        .exclude(Kind::Tool, written.exclude_tools.iter().cloned())
        .include(Kind::Prompt, written.prompts.iter().cloned())
        .exclude(Kind::Prompt, written.exclude_prompts.iter().cloned())
        .include(Kind::Resource, written.resources.iter().cloned())
        .exclude(Kind::Resource, written.exclude_resources.iter().cloned())
        .tokens(written.tokens.iter().cloned())
        .scopes(written.scopes.iter().cloned());
    for (i, rename) in written.rename.iter().enumerate() {
        let (kind, target) = match (&rename.tool, &rename.prompt) {
            (Some(tool), None) => (Kind::Tool, tool),
            (None, Some(prompt)) => (Kind::Prompt, prompt),
            _ => {
                return Err(format!(
                    "rename[{i}]: give tool = \"SERVER/NAME\" or prompt = \"SERVER/NAME\" (one of them)"
                ))
            }
        };
        if !target.split_once('/').is_some_and(|(s, n)| !s.is_empty() && !n.is_empty()) {
            return Err(format!("rename[{i}]: {target:?}: expected SERVER/NAME"));
        }
        if rename.name.is_none() && rename.description.is_none() {
            return Err(format!("rename[{i}]: give name, description or both"));
        }
        if rename.name.as_deref() == Some("") {
            return Err(format!("rename[{i}]: name: empty"));
        }
        let mut built = Rename::new(kind, target.as_str());
        built.name.clone_from(&rename.name);
        built.description.clone_from(&rename.description);
        endpoint = endpoint.rename(built);
    }
    Ok(endpoint)
}

/// The policy `policy` of the table `table` (`gateway.policy` or an endpoint's).
fn read_policy(
    policy: &PolicyToml,
    settings: &Settings,
    text: &str,
    file: &str,
    table: &str,
) -> Result<Policy, String> {
    let mut rules: Vec<Rule> = Vec::new();
    for (i, spanned) in policy.rules.iter().enumerate() {
        let at =
            |what: String| format!("{file}: line {}: {table}.rules[{i}]: {what}", line_of(text, spanned.span().start));
        let rule = spanned.get_ref();
        if rule.name.is_empty() {
            return Err(at("name: empty".to_owned()));
        }
        if rules.iter().any(|r| *r.name == *rule.name) {
            return Err(at(format!("name: {:?} is the name of an earlier rule", rule.name)));
        }
        if rule.tools.is_empty() && rule.prompts.is_empty() && rule.resources.is_empty() {
            return Err(at("no target: give tools, prompts or resources (globs; \"*\" for all)".to_owned()));
        }
        let callers = callers(rule.callers.as_ref());
        check_tokens(settings, &callers).map_err(at)?;
        let globs = |list: &[String]| list.iter().map(Glob::new).collect();
        let mut built = Rule::new(rule.name.as_str(), rule.effect.into()).callers(callers);
        built.tools = globs(&rule.tools);
        built.prompts = globs(&rule.prompts);
        built.resources = globs(&rule.resources);
        rules.push(built);
    }
    Ok(Policy { default: policy.default.into(), rules })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[mcp_servers.echo]
command = "echo_server"

[gateway.tokens]
ci = { env = "CI_TOKEN" }
dev = { env = "DEV_TOKEN" }

[gateway.policy]
default = "deny"

[[gateway.policy.rules]]
name = "ci-echo"
effect = "allow"
callers = { tokens = ["ci"] }
tools = ["echo/*"]

[[gateway.policy.rules]]
name = "ops"
effect = "allow"
callers = { subjects = ["carol"], scopes = ["mcp"], claims = { groups = "ops" } }
tools = ["*"]
prompts = ["*"]
resources = ["*"]
"#;

    #[test]
    fn the_gateway_table_reads_into_tokens_and_rules() {
        let settings = Settings::from_toml(FILE, "gw.toml").unwrap();
        assert_eq!(settings.tokens, [("ci".to_owned(), "CI_TOKEN".to_owned()), ("dev".into(), "DEV_TOKEN".into())]);
        let policy = settings.policy.unwrap();
        assert_eq!(policy.default, Effect::Deny);
        assert_eq!(policy.rules.len(), 2);
        assert_eq!(&*policy.rules[0].name, "ci-echo");
        assert_eq!(policy.rules[0].tools, [Glob::new("echo/*")]);
        assert_eq!(policy.rules[1].callers.claims, [("groups".to_owned(), "ops".to_owned())]);
        assert_eq!(Settings::from_toml("[mcp_servers.x]\ncommand = \"x\"\n", "f").unwrap(), Settings::default());
    }

    #[test]
    fn rate_limits_read_with_their_rate_and_burst() {
        let text = format!(
            "{FILE}\n[[gateway.rate_limits]]\nname = \"ci-hourly\"\ncallers = {{ tokens = [\"ci\"] }}\nrate = \"2/hour\"\nburst = 5\nper = \"tool\"\n\n[[gateway.rate_limits]]\nname = \"all\"\nrate = \"10/second\"\n"
        );
        let limits = Settings::from_toml(&text, "gw.toml").unwrap().rate_limits;
        assert_eq!(limits.len(), 2);
        assert_eq!((&*limits[0].name, limits[0].burst, limits[0].per), ("ci-hourly", 5, Per::Tool));
        assert!((limits[0].rate - 2.0 / 3600.0).abs() < 1e-12);
        assert_eq!((limits[1].rate, limits[1].burst, limits[1].per, limits[1].tools.len()), (10.0, 1, Per::Caller, 0));
        for (bad, field) in [
            ("rate = \"10/second\"", "rate: \"10/fortnight\""),
            ("rate = \"10/second\"\nburst = 0", "burst: 0"),
            ("rate = \"10/second\"\nper = \"session\"", "unknown variant `session`"),
        ] {
            let broken = text.replace(
                "rate = \"10/second\"",
                &bad.replace("10/second", if field.starts_with("rate") { "10/fortnight" } else { "10/second" }),
            );
            let error = Settings::from_toml(&broken, "gw.toml").unwrap_err();
            assert!(error.contains(field) && error.contains("line "), "{field}: {error}");
        }
    }

    #[test]
    fn an_endpoint_reads_its_own_rate_limits_named_apart_from_the_gateways() {
        let text = format!(
            "{FILE}\n[[gateway.rate_limits]]\nname = \"all\"\nrate = \"10/second\"\n\n\
             [gateway.endpoints.dev]\npath = \"/mcp/dev\"\n\n\
             [[gateway.endpoints.dev.rate_limits]]\nname = \"dev-calls\"\ncallers = {{ tokens = [\"ci\"] }}\nrate = \"3/minute\"\nburst = 2\n\n\
             [gateway.endpoints.ops]\npath = \"/mcp/ops\"\n"
        );
        let settings = Settings::from_toml(&text, "gw.toml").unwrap();
        let [dev, ops] = &settings.endpoints[..] else { panic!("{:?}", settings.endpoints) };
        assert_eq!(settings.rate_limits.len(), 1, "the gateway's limits stay its own");
        assert_eq!(dev.rate_limits.len(), 1);
        assert_eq!((&*dev.rate_limits[0].name, dev.rate_limits[0].burst), ("dev-calls", 2));
        assert!((dev.rate_limits[0].rate - 3.0 / 60.0).abs() < 1e-12);
        assert!(ops.rate_limits.is_empty());
        let clash = text.replace("name = \"dev-calls\"", "name = \"all\"");
        let error = Settings::from_toml(&clash, "gw.toml").unwrap_err();
        assert!(
            error.contains("gateway.endpoints.dev.rate_limits[0]: name: \"all\"") && error.contains("line "),
            "{error}"
        );
        let unknown = text.replace("tokens = [\"ci\"]", "tokens = [\"cj\"]");
        let error = Settings::from_toml(&unknown, "gw.toml").unwrap_err();
        assert!(error.contains("gateway.endpoints.dev.rate_limits[0]") && error.contains("cj"), "{error}");
        let per_request = text.replace("burst = 2\n", "burst = 2\nper = \"request\"\n");
        let error = Settings::from_toml(&per_request, "gw.toml").unwrap_err();
        assert!(error.contains("gateway.endpoints.dev.rate_limits[0]: per:"), "{error}");
    }

    #[test]
    fn limits_per_request_are_read_apart_and_take_no_tools() {
        let text = format!(
            "{FILE}\n[[gateway.rate_limits]]\nname = \"calls\"\nrate = \"1/second\"\n\n[[gateway.rate_limits]]\nname = \"flood\"\ncallers = {{ tokens = [\"ci\"] }}\nrate = \"5/second\"\nburst = 20\nper = \"request\"\n"
        );
        let settings = Settings::from_toml(&text, "gw.toml").unwrap();
        assert_eq!(settings.rate_limits.iter().map(|l| &*l.name).collect::<Vec<_>>(), ["calls"]);
        assert_eq!(settings.request_limits.len(), 1);
        let flood = &settings.request_limits[0];
        assert_eq!((&*flood.name, flood.rate, flood.burst, flood.tools.len()), ("flood", 5.0, 20, 0));
        let with_tools = text.replace("per = \"request\"", "per = \"request\"\ntools = [\"echo/*\"]");
        let error = Settings::from_toml(&with_tools, "gw.toml").unwrap_err();
        assert!(error.contains("gateway.rate_limits[1]: tools:"), "{error}");
        let same_name = text.replace("name = \"flood\"", "name = \"calls\"");
        assert!(Settings::from_toml(&same_name, "gw.toml").unwrap_err().contains("earlier limit"));
    }

    #[test]
    fn endpoints_read_with_their_filters_renames_tokens_and_policy() {
        let text = format!(
            r#"{FILE}
[gateway.endpoints.readonly]
path = "/mcp/readonly"
servers = ["echo"]
exclude_tools = ["echo/add"]
prompts = ["echo/*"]
tokens = ["ci"]

[[gateway.endpoints.readonly.rename]]
tool = "echo/echo"
name = "say"
description = "Says it back."

[gateway.endpoints.readonly.policy]
default = "deny"

[[gateway.endpoints.readonly.policy.rules]]
name = "ci-say"
effect = "allow"
callers = {{ tokens = ["ci"] }}
tools = ["echo/echo"]

[gateway.endpoints.dev]
path = "/mcp/dev"
"#
        );
        let settings = Settings::from_toml(&text, "gw.toml").unwrap();
        let [dev, readonly] = &settings.endpoints[..] else { panic!("{:?}", settings.endpoints) };
        assert_eq!((dev.name.as_str(), dev.path.as_str(), dev.policy.is_none()), ("dev", "/mcp/dev", true));
        assert_eq!(readonly.path, "/mcp/readonly");
        assert!(readonly.offers(Kind::Tool, "echo", "echo") && !readonly.offers(Kind::Tool, "echo", "add"));
        assert!(!readonly.offers(Kind::Tool, "everything", "echo") && !readonly.offers(Kind::Prompt, "x", "p"));
        assert_eq!(readonly.tokens, ["ci"]);
        assert_eq!(readonly.renames, [Rename::new(Kind::Tool, "echo/echo").to("say").described("Says it back.")]);
        let policy = readonly.policy.as_ref().unwrap();
        assert_eq!((policy.default, &*policy.rules[0].name), (Effect::Deny, "ci-say"));
        assert_eq!(settings.policy.as_ref().unwrap().rules.len(), 2, "the gateway's own policy stays");
        for (bad, field) in [
            ("path = \"/mcp/readonly\"", "path: \"/mcp/readonly\" is the path of endpoint dev"),
            ("path = \"mcp/dev\"", "path: \"mcp/dev\""),
            ("path = \"/mcp/dev\"\ntokens = [\"cj\"]", "tokens: \"cj\" names no token"),
            ("path = \"/mcp/dev\"\nexclude = [\"x\"]", "unknown field `exclude`"),
        ] {
            let broken = text.replace("path = \"/mcp/dev\"", bad);
            let error = Settings::from_toml(&broken, "gw.toml").unwrap_err();
            assert!(error.contains(field) && error.contains("line "), "{field}: {error}");
        }
        let renamed_twice = text.replace("tool = \"echo/echo\"\n", "tool = \"echo/echo\"\nprompt = \"echo/p\"\n");
        assert!(Settings::from_toml(&renamed_twice, "gw.toml").unwrap_err().contains("rename[0]: give tool"));
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        let cases = [
            (
                FILE.replace("effect = \"allow\"\ncallers = { tokens", "efect = \"allow\"\ncallers = { tokens"),
                "line 14",
                "efect",
            ),
            (FILE.replace("default = \"deny\"", "default = \"maybe\""), "line 10", "maybe"),
            (
                FILE.replace("tokens = [\"ci\"]", "tokens = [\"cj\"]"),
                "line 12",
                "callers.tokens: \"cj\" names no token",
            ),
            (FILE.replace("tools = [\"echo/*\"]\n", ""), "line 12", "rules[0]: no target"),
            (
                FILE.replace("name = \"ops\"", "name = \"ci-echo\""),
                "line 18",
                "rules[1]: name: \"ci-echo\" is the name of an earlier rule",
            ),
            (FILE.replace("ci = { env", "ci = { evn"), "line 6", "evn"),
            (FILE.replace("[gateway.policy]", "[gateway.polcy]"), "line 9", "polcy"),
            (FILE.replace("scopes = [\"mcp\"]", "scopes = \"mcp\""), "line 21", "string \"mcp\", expected a sequence"),
        ];
        for (text, line, field) in cases {
            let error = Settings::from_toml(&text, "gw.toml").unwrap_err();
            assert!(error.starts_with("gw.toml: "), "{error}");
            assert!(error.contains(line), "{line}: {error}");
            assert!(error.contains(field), "{field}: {error}");
        }
    }
}
