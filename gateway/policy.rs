//! Who may list and use which tools, prompts and resources through the gateway: a [`Policy`]
//! of ordered [`Rule`]s and a default, asked as a pure function
//! `(caller, target) -> `[`Decision`] ([`Policy::decide`]) when the gateway lists and when it
//! forwards a call.
//!
//! - **Callers** ([`Callers`]): by the name of the static bearer token presented
//!   ([`Principal::token_name`]), or by what a verified OAuth token says: subject, client id,
//!   scopes, claims. Within one list any entry matches (`tokens = ["ci", "deploy"]`); across
//!   lists every one given must match; `scopes` must all be granted, and every `claims` entry
//!   must hold (a string claim equal to the value, or an array claim containing it). A rule
//!   without callers applies to every caller, anonymous ones (stdio, an open listener) too.
//! - **Targets**: globs over `SERVER/NAME` for tools and prompts and `SERVER/URI` for
//!   resources (and resource templates, by their template), with the upstream's own server
//!   and name, whatever `--prefix` makes of them downstream. `*` matches any run of
//!   characters (`/` included), `?` one character.
//! - **Evaluation: first match.** Rules are tried in the order written; the first whose
//!   callers and targets both match decides, naming itself. When none matches, the policy's
//!   default decides. (Deny-overrides is obtained by writing the deny rules first.)
//!
//! Not here: reading the rules from a file ([`super::settings`]), what the gateway does with a
//! decision (hides the name from lists, refuses the call naming the rule: [`super`]).

use std::sync::Arc;

use serde_json::Value;

use crate::auth::Principal;

/// What a rule, or the default, says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The caller may list and use the target.
    Allow,
    /// The target is hidden from the caller's lists and its use refused.
    Deny,
}

/// What kind of thing a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A tool (`tools/list`, `tools/call`).
    Tool,
    /// A prompt (`prompts/list`, `prompts/get`, completions of its arguments).
    Prompt,
    /// A resource or resource template (`resources/list`, `resources/templates/list`,
    /// `resources/read`, completions of a template's arguments).
    Resource,
}

impl Kind {
    /// `tool`, `prompt` or `resource`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
        }
    }
}

/// A glob over text: `*` any run of characters, `?` one character, anything else itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(String);

impl Glob {
    /// The glob `pattern`.
    pub fn new(pattern: impl Into<String>) -> Glob {
        Glob(pattern.into())
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `text` matches the whole pattern.
    pub fn matches(&self, text: &str) -> bool {
        let (pattern, text): (Vec<char>, Vec<char>) = (self.0.chars().collect(), text.chars().collect());
        // The classic linear backtracking over the last `*`.
        let (mut p, mut t, mut star, mut resume) = (0, 0, None, 0);
        while t < text.len() {
            if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
                p += 1;
                t += 1;
            } else if p < pattern.len() && pattern[p] == '*' {
                star = Some(p);
                resume = t;
                p += 1;
            } else if let Some(s) = star {
                p = s + 1;
                resume += 1;
                t = resume;
            } else {
                return false;
            }
        }
        pattern[p..].iter().all(|&c| c == '*')
    }
}

/// Which callers a rule applies to (see the [module](self) docs). Empty: every caller.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Callers {
    /// Named static tokens, any of them.
    pub tokens: Vec<Glob>,
    /// OAuth subjects (`sub`), any of them.
    pub subjects: Vec<Glob>,
    /// OAuth client ids (`client_id`/`azp`), any of them.
    pub client_ids: Vec<Glob>,
    /// Scopes, all of them granted.
    pub scopes: Vec<String>,
    /// Claims, all of them holding: a string claim equal to the value, or an array claim
    /// holding it.
    pub claims: Vec<(String, String)>,
}

impl Callers {
    /// Whether `caller` (`None`: anonymous) is one of these.
    pub fn matches(&self, caller: Option<&Principal>) -> bool {
        let any = |globs: &[Glob], value: Option<&String>| {
            globs.is_empty() || value.is_some_and(|v| globs.iter().any(|g| g.matches(v)))
        };
        any(&self.tokens, caller.and_then(|c| c.token_name.as_ref()))
            && any(&self.subjects, caller.and_then(|c| c.subject.as_ref()))
            && any(&self.client_ids, caller.and_then(|c| c.client_id.as_ref()))
            && self.scopes.iter().all(|s| caller.is_some_and(|c| c.has_scope(s)))
            && self.claims.iter().all(|(name, value)| {
                caller.and_then(|c| c.claims.get(name)).is_some_and(|claim| match claim {
                    Value::String(s) => s == value,
                    Value::Array(items) => items.iter().any(|i| i.as_str() == Some(value)),
                    Value::Bool(b) => b.to_string() == *value,
                    Value::Number(n) => n.to_string() == *value,
                    _ => false,
                })
            })
    }

    /// Whether no condition is given (every caller matches).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
            && self.subjects.is_empty()
            && self.client_ids.is_empty()
            && self.scopes.is_empty()
            && self.claims.is_empty()
    }
}

/// One rule: for these callers, these targets are allowed (or denied).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Rule {
    /// The rule's name, given in the error of a refused call.
    pub name: Arc<str>,
    /// Allow or deny.
    pub effect: Effect,
    /// Whom it applies to.
    pub callers: Callers,
    /// `SERVER/TOOL` globs.
    pub tools: Vec<Glob>,
    /// `SERVER/PROMPT` globs.
    pub prompts: Vec<Glob>,
    /// `SERVER/URI` globs (resources, and templates by their template).
    pub resources: Vec<Glob>,
}

impl Rule {
    /// A rule named `name` with `effect`, for every caller, on no target yet.
    pub fn new(name: impl Into<Arc<str>>, effect: Effect) -> Rule {
        Rule {
            name: name.into(),
            effect,
            callers: Callers::default(),
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
        }
    }

    /// This rule for `callers` only.
    pub fn callers(mut self, callers: Callers) -> Rule {
        self.callers = callers;
        self
    }

    /// This rule also on the targets of `kind` matching `glob` (`SERVER/NAME`).
    pub fn target(mut self, kind: Kind, glob: impl Into<String>) -> Rule {
        let glob = Glob::new(glob);
        match kind {
            Kind::Tool => self.tools.push(glob),
            Kind::Prompt => self.prompts.push(glob),
            Kind::Resource => self.resources.push(glob),
        }
        self
    }

    fn targets(&self, kind: Kind) -> &[Glob] {
        match kind {
            Kind::Tool => &self.tools,
            Kind::Prompt => &self.prompts,
            Kind::Resource => &self.resources,
        }
    }
}

/// What the policy says of one caller and target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Allowed or denied.
    pub effect: Effect,
    /// The rule that decided; `None` when none matched and the default did.
    pub rule: Option<Arc<str>>,
}

impl Decision {
    /// Whether the target is allowed.
    pub fn allowed(&self) -> bool {
        self.effect == Effect::Allow
    }

    /// The rule that decided, or `default` when none did.
    pub fn rule_name(&self) -> &str {
        self.rule.as_deref().unwrap_or("default")
    }
}

/// Ordered rules and a default (see the [module](self) docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// What applies when no rule matches.
    pub default: Effect,
    /// The rules, tried in order.
    pub rules: Vec<Rule>,
}

impl Policy {
    /// No rule; `default` for everything.
    pub fn new(default: Effect) -> Policy {
        Policy { default, rules: Vec::new() }
    }

    /// This policy with `rule` tried after the others.
    pub fn rule(mut self, rule: Rule) -> Policy {
        self.rules.push(rule);
        self
    }

    /// What the policy says of `caller` (`None`: anonymous) using the `kind` named `name`
    /// (a URI for a resource) of upstream `server`: the first rule whose callers and targets
    /// match, else the default.
    pub fn decide(&self, caller: Option<&Principal>, kind: Kind, server: &str, name: &str) -> Decision {
        let mut target: Option<String> = None;
        for rule in &self.rules {
            let globs = rule.targets(kind);
            if globs.is_empty() || !rule.callers.matches(caller) {
                continue;
            }
            let target = target.get_or_insert_with(|| format!("{server}/{name}"));
            if globs.iter().any(|g| g.matches(target)) {
                return Decision { effect: rule.effect, rule: Some(rule.name.clone()) };
            }
        }
        Decision { effect: self.default, rule: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        let cases = [
            ("*", "anything/at all", true),
            ("echo/*", "echo/add", true),
            ("echo/*", "echoes/add", false),
            ("*/get_*", "time/get_current_time", true),
            ("*/get_*", "time/convert_time", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("everything/echo", "everything/echo", true),
            ("everything/echo", "everything/echo2", false),
            ("*a*b*", "xxaxxbxx", true),
            ("*a*b", "xxaxxbxxc", false),
            ("demo://*", "demo://resource/static/1", true),
            ("", "", true),
            ("", "x", false),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(Glob::new(pattern).matches(text), expected, "{pattern} ~ {text}");
        }
    }

    fn principal(token: Option<&str>, subject: Option<&str>, scopes: &[&str], claims: Value) -> Principal {
        let mut p = Principal::new(subject.map(str::to_owned));
        p.token_name = token.map(str::to_owned);
        p.scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
        p.claims = claims.as_object().cloned().unwrap_or_default();
        p
    }

    #[test]
    fn the_first_matching_rule_decides_else_the_default() {
        let ci = Callers { tokens: vec![Glob::new("ci")], ..Callers::default() };
        let ops = Callers { claims: vec![("groups".into(), "ops".into())], ..Callers::default() };
        let writer = Callers { scopes: vec!["mcp:write".into()], ..Callers::default() };
        let policy = Policy::new(Effect::Deny)
            .rule(Rule::new("no-deletes", Effect::Deny).target(Kind::Tool, "*/delete_*"))
            .rule(Rule::new("ci-echo", Effect::Allow).callers(ci).target(Kind::Tool, "echo/*"))
            .rule(Rule::new("ops-all", Effect::Allow).callers(ops).target(Kind::Tool, "*").target(Kind::Prompt, "*"))
            .rule(Rule::new("writers", Effect::Allow).callers(writer).target(Kind::Resource, "files/file://*"));
        let ci = principal(Some("ci"), None, &[], Value::Null);
        let carol = principal(None, Some("carol"), &["mcp:write"], serde_json::json!({"groups": ["ops", "dev"]}));
        let dana = principal(None, Some("dana"), &["mcp"], serde_json::json!({"groups": "dev"}));
        let decide = |p: Option<&Principal>, kind, server, name| {
            let d = policy.decide(p, kind, server, name);
            (d.allowed(), d.rule_name().to_owned())
        };
        assert_eq!(decide(Some(&ci), Kind::Tool, "echo", "add"), (true, "ci-echo".into()));
        assert_eq!(decide(Some(&ci), Kind::Tool, "echo", "delete_all"), (false, "no-deletes".into()));
        assert_eq!(decide(Some(&ci), Kind::Tool, "everything", "echo"), (false, "default".into()));
        assert_eq!(decide(Some(&ci), Kind::Prompt, "echo", "greeting"), (false, "default".into()), "tools only");
        assert_eq!(decide(Some(&carol), Kind::Tool, "everything", "echo"), (true, "ops-all".into()));
        assert_eq!(decide(Some(&carol), Kind::Resource, "files", "file:///a"), (true, "writers".into()));
        assert_eq!(decide(Some(&dana), Kind::Tool, "echo", "add"), (false, "default".into()));
        assert_eq!(decide(Some(&dana), Kind::Resource, "files", "file:///a"), (false, "default".into()));
        assert_eq!(decide(None, Kind::Tool, "echo", "add"), (false, "default".into()), "anonymous");
    }

    #[test]
    fn callers_match_within_lists_any_and_across_lists_all() {
        let callers = Callers {
            subjects: vec![Glob::new("alice"), Glob::new("bot-*")],
            client_ids: vec![Glob::new("cli")],
            ..Callers::default()
        };
        let mut bot = principal(None, Some("bot-7"), &[], Value::Null);
        assert!(!callers.matches(Some(&bot)), "no client id");
        bot.client_id = Some("cli".into());
        assert!(callers.matches(Some(&bot)));
        let mut bob = principal(None, Some("bob"), &[], Value::Null);
        bob.client_id = Some("cli".into());
        assert!(!callers.matches(Some(&bob)));
        assert!(!callers.matches(None));
        assert!(Callers::default().matches(None), "no condition: everyone");
        let numbers = Callers { claims: vec![("level".into(), "3".into())], ..Callers::default() };
        assert!(numbers.matches(Some(&principal(None, None, &[], serde_json::json!({"level": 3})))));
        assert!(!numbers.matches(Some(&principal(None, None, &[], serde_json::json!({"level": 4})))));
    }
}
