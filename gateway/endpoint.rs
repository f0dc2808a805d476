//! Virtual servers: several downstream endpoints over one gateway's upstreams, each a view of
//! them. An [`Endpoint`] says what one offers — a subset of the servers, tools, prompts and
//! resources (globs, include and exclude), tools and prompts renamed or described anew — whom
//! it lets in (named tokens, OAuth scopes) and its own [`Policy`]. The upstream connections are
//! the gateway's, shared by every endpoint; each endpoint is a downstream [`Server`] of its own
//! ([`Gateway::endpoint_server`](super::Gateway::endpoint_server)), with its own sessions and
//! `list_changed`.
//!
//! - **Targets** are named as the policy names them: `SERVER/NAME` with the upstream's own
//!   server and name (`SERVER/URI` for resources), whatever `--prefix` or a rename makes of
//!   them downstream. An empty include list offers everything; an exclude wins over an
//!   include.
//! - **Renames** ([`Rename`]) apply to one tool or prompt, by `SERVER/NAME`: the new name (and
//!   description) is what the endpoint lists and is called by; the upstream is called by its
//!   own name.
//! - **What is not offered** is absent from the endpoint's lists, and a request for it is
//!   refused with -32003 naming the endpoint and why ([`Endpoint::why_hidden`]).
//! - **Policy**: an endpoint with a policy of its own is governed by it, in place of the
//!   gateway's; one without is governed by the gateway's.
//! - **Rate limits**: an endpoint's own limits ([`Endpoint::rate_limits`]) apply to the calls
//!   through it, with buckets of its own, besides the gateway's limits, which apply to every
//!   call through any endpoint (one budget for the upstreams). The endpoint's are asked
//!   first: a call they refuse takes nothing from the gateway's (a call the gateway's refuse
//!   has taken its token from the endpoint's). A reload keeps the
//!   buckets of each of an endpoint's limits that did not change; changed limits start full. They are
//!   kept in this process's memory: with replicas sharing a store
//!   ([`Gateway::share_rate_limits`](super::Gateway::share_rate_limits)) the gateway's limits
//!   are shared, an endpoint's are per replica (yet).
//! - **Reload**: [`Gateway::set_endpoint`](super::Gateway::set_endpoint) replaces an endpoint's
//!   description; its live sessions see the new view on their next list (they are told
//!   `list_changed`), none is dropped.
//!
//! Not here: listening, paths and authentication on the wire (the application mounts each
//! endpoint's server on its path: `mcp-bridge serve` with `transport::sse_http::mount`), reading
//! the description from a file ([`super::settings`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use super::policy::{Glob, Kind, Policy};
use super::rate_limit::{Limit, LimitsInForce};
use super::View;
use crate::proto::mcp_types::{Prompt, Tool};
use crate::server::Server;

/// A new name or description for one tool or prompt of an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rename {
    /// [`Kind::Tool`] or [`Kind::Prompt`].
    pub kind: Kind,
    /// `SERVER/NAME`, the upstream's own names.
    pub target: String,
    /// The name the endpoint offers it under (`None`: its name in the gateway's view).
    pub name: Option<String>,
    /// The description the endpoint gives it (`None`: the upstream's).
    pub description: Option<String>,
}

impl Rename {
    /// The tool (or prompt) `SERVER/NAME` offered as it is, until [`Rename::to`] or
    /// [`Rename::described`] change it.
    pub fn new(kind: Kind, target: impl Into<String>) -> Rename {
        Rename { kind, target: target.into(), name: None, description: None }
    }

    /// Offered under `name`.
    pub fn to(mut self, name: impl Into<String>) -> Rename {
        self.name = Some(name.into());
        self
    }

    /// Offered with `description`.
    pub fn described(mut self, description: impl Into<String>) -> Rename {
        self.description = Some(description.into());
        self
    }
}

/// What one kind of target an endpoint offers: everything the include globs match (all when
/// empty) that no exclude glob matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Filter {
    /// `SERVER/NAME` globs offered (empty: all).
    pub include: Vec<Glob>,
    /// `SERVER/NAME` globs never offered.
    pub exclude: Vec<Glob>,
}

impl Filter {
    /// Why `target` is not offered, or `None` when it is.
    fn refuses(&self, target: &str, what: &str) -> Option<String> {
        if let Some(glob) = self.exclude.iter().find(|g| g.matches(target)) {
            return Some(format!("excluded by its exclude_{what} {:?}", glob.as_str()));
        }
        if !self.include.is_empty() && !self.include.iter().any(|g| g.matches(target)) {
            return Some(format!("not among its {what}"));
        }
        None
    }
}

/// One virtual server: its name and path, what it offers, whom it lets in, its policy and rate
/// limits (see the [module](self) docs). Pure data: compared to tell a reload that changed it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Endpoint {
    /// Its name (in `/readyz`, logs, errors).
    pub name: String,
    /// The HTTP path it is served on, e.g. `/mcp/readonly` (the application's to honour).
    pub path: String,
    /// Server-name globs offered (empty: every server).
    pub servers: Vec<Glob>,
    /// The tools offered.
    pub tools: Filter,
    /// The prompts offered.
    pub prompts: Filter,
    /// The resources (and templates) offered, by `SERVER/URI`.
    pub resources: Filter,
    /// Tools and prompts renamed or described anew.
    pub renames: Vec<Rename>,
    /// The named bearer tokens it accepts (empty: every named token of the listener).
    pub tokens: Vec<String>,
    /// The OAuth scopes every request to it needs, beyond the listener's own.
    pub scopes: Vec<String>,
    /// Its own policy, in place of the gateway's (`None`: the gateway's applies).
    pub policy: Option<Policy>,
    /// Its own rate limits on the calls through it, besides the gateway's.
    pub rate_limits: Vec<Limit>,
}

impl Endpoint {
    /// An endpoint named `name` on `path` that offers everything, to everyone the listener lets
    /// in, under the gateway's policy.
    pub fn new(name: impl Into<String>, path: impl Into<String>) -> Endpoint {
        Endpoint {
            name: name.into(),
            path: path.into(),
            servers: Vec::new(),
            tools: Filter::default(),
            prompts: Filter::default(),
            resources: Filter::default(),
            renames: Vec::new(),
            tokens: Vec::new(),
            scopes: Vec::new(),
            policy: None,
            rate_limits: Vec::new(),
        }
    }

    /// Offers only the servers matching `globs`.
    pub fn servers<S: Into<String>>(mut self, globs: impl IntoIterator<Item = S>) -> Endpoint {
        self.servers = globs.into_iter().map(Glob::new).collect();
        self
    }

    /// Offers only the targets of `kind` matching `globs` (`SERVER/NAME`).
    pub fn include<S: Into<String>>(mut self, kind: Kind, globs: impl IntoIterator<Item = S>) -> Endpoint {
        self.filter_mut(kind).include.extend(globs.into_iter().map(Glob::new));
        self
    }

    /// Never offers the targets of `kind` matching `globs` (`SERVER/NAME`).
    pub fn exclude<S: Into<String>>(mut self, kind: Kind, globs: impl IntoIterator<Item = S>) -> Endpoint {
        self.filter_mut(kind).exclude.extend(globs.into_iter().map(Glob::new));
        self
    }

    /// With `rename` applied.
    pub fn rename(mut self, rename: Rename) -> Endpoint {
        self.renames.push(rename);
        self
    }

    /// Lets in only requests carrying one of the named tokens `names`.
    pub fn tokens<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Endpoint {
        self.tokens = names.into_iter().map(Into::into).collect();
        self
    }

    /// Every request needs the OAuth `scopes` too.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Endpoint {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The calls through it limited by `limits` too (besides the gateway's limits).
    pub fn rate_limits(mut self, limits: Vec<Limit>) -> Endpoint {
        self.rate_limits = limits;
        self
    }

    /// Governed by `policy` in place of the gateway's.
    pub fn policy(mut self, policy: Option<Policy>) -> Endpoint {
        self.policy = policy;
        self
    }

    /// The filter of `kind`.
    pub fn filter(&self, kind: Kind) -> &Filter {
        match kind {
            Kind::Tool => &self.tools,
            Kind::Prompt => &self.prompts,
            Kind::Resource => &self.resources,
        }
    }

    fn filter_mut(&mut self, kind: Kind) -> &mut Filter {
        match kind {
            Kind::Tool => &mut self.tools,
            Kind::Prompt => &mut self.prompts,
            Kind::Resource => &mut self.resources,
        }
    }

    /// Why this endpoint does not offer the `kind` named `name` (a URI for a resource) of
    /// upstream `server`, or `None` when it does.
    pub fn why_hidden(&self, kind: Kind, server: &str, name: &str) -> Option<String> {
        if !self.serves(server) {
            return Some(format!("server {server} is not among its servers"));
        }
        let what = match kind {
            Kind::Tool => "tools",
            Kind::Prompt => "prompts",
            Kind::Resource => "resources",
        };
        self.filter(kind).refuses(&format!("{server}/{name}"), what)
    }

    /// Whether this endpoint offers anything of `server`.
    pub fn serves(&self, server: &str) -> bool {
        self.servers.is_empty() || self.servers.iter().any(|g| g.matches(server))
    }

    /// Whether this endpoint offers the `kind` named `name` of `server`.
    pub fn offers(&self, kind: Kind, server: &str, name: &str) -> bool {
        self.why_hidden(kind, server, name).is_none()
    }

    fn renamed(&self, kind: Kind, server: &str, name: &str) -> Option<&Rename> {
        self.renames
            .iter()
            .find(|r| r.kind == kind && r.target.split_once('/').is_some_and(|(s, n)| s == server && n == name))
    }
}

impl View {
    /// The part of this (the gateway's) view that `endpoint` offers, renamed as it says.
    ///
    /// # Errors
    /// Two tools (or prompts) offered under one name once renamed, naming both.
    pub(crate) fn restrict(&self, endpoint: &Endpoint) -> Result<View, String> {
        let mut view = View {
            slugs: self.slugs.clone(),
            slug_of: self.slug_of.clone(),
            resource_routes: self.resource_routes.clone(),
            template_prefixes: self.template_prefixes.clone(),
            ..View::default()
        };
        for tool in &self.tools {
            let Some((server, upstream)) = self.tool_routes.get(&tool.name) else { continue };
            if !endpoint.offers(Kind::Tool, server, upstream) {
                continue;
            }
            let mut tool = tool.clone();
            if let Some(rename) = endpoint.renamed(Kind::Tool, server, upstream) {
                apply(rename, &mut tool.name, &mut tool.description);
            }
            claim(&mut view.tool_routes, &tool.name, server, upstream, &endpoint.name, "tool")?;
            view.tools.push(Tool { ..tool });
        }
        for prompt in &self.prompts {
            let Some((server, upstream)) = self.prompt_routes.get(&prompt.name) else { continue };
            if !endpoint.offers(Kind::Prompt, server, upstream) {
                continue;
            }
            let mut prompt = prompt.clone();
            if let Some(rename) = endpoint.renamed(Kind::Prompt, server, upstream) {
                apply(rename, &mut prompt.name, &mut prompt.description);
            }
            claim(&mut view.prompt_routes, &prompt.name, server, upstream, &endpoint.name, "prompt")?;
            view.prompts.push(Prompt { ..prompt });
        }
        let offered = |uri: &str| {
            self.resolve_uri(uri).is_some_and(|(server, uri)| endpoint.offers(Kind::Resource, &server, &uri))
        };
        view.resources = self.resources.iter().filter(|r| offered(&r.uri)).cloned().collect();
        view.templates = self.templates.iter().filter(|t| offered(&t.uri_template)).cloned().collect();
        Ok(view)
    }
}

/// `name` and `description` as `rename` says.
fn apply(rename: &Rename, name: &mut String, description: &mut Option<String>) {
    if let Some(new) = &rename.name {
        name.clone_from(new);
    }
    if let Some(new) = &rename.description {
        *description = Some(new.clone());
    }
}

/// Routes `name` to `upstream` of `server`, unless another already has it.
fn claim<S: std::hash::BuildHasher>(
    routes: &mut HashMap<String, (String, String), S>,
    name: &str,
    server: &str,
    upstream: &str,
    endpoint: &str,
    kind: &str,
) -> Result<(), String> {
    if let Some((other_server, other)) = routes.get(name) {
        return Err(format!(
            "endpoint {endpoint}: {kind} {name:?} would be both {other_server}/{other} and {server}/{upstream} (check its renames)"
        ));
    }
    routes.insert(name.to_owned(), (server.to_owned(), upstream.to_owned()));
    Ok(())
}

/// An endpoint served by the gateway: its description, its view, its downstream server.
pub(crate) struct Served {
    /// The endpoint's name (it does not change: a reload finds the endpoint by it).
    pub(crate) name: String,
    pub(crate) endpoint: RwLock<Arc<Endpoint>>,
    pub(crate) view: RwLock<Arc<View>>,
    /// The endpoint's own policy, shared (not cloned) by the requests that ask it.
    pub(crate) policy: RwLock<Option<Arc<Policy>>>,
    /// The endpoint's own rate limits and their buckets.
    pub(crate) limits: LimitsInForce,
    pub(crate) server: OnceLock<Server>,
    /// Distinguishes its sessions from other endpoints' (session numbers are per server).
    pub(crate) ordinal: u64,
}

impl Served {
    pub(crate) fn endpoint(&self) -> Arc<Endpoint> {
        self.endpoint.read().expect("endpoint lock").clone()
    }

    pub(crate) fn policy(&self) -> Option<Arc<Policy>> {
        self.policy.read().expect("endpoint policy lock").clone()
    }

    pub(crate) fn view(&self) -> Arc<View> {
        self.view.read().expect("endpoint view lock").clone()
    }

    /// The key of session `session` of this endpoint among every endpoint's sessions.
    pub(crate) fn session_key(&self, session: u64) -> u64 {
        (self.ordinal << 48) | (session & ((1 << 48) - 1))
    }

    /// Takes `endpoint` and `base` (the gateway's view) as they are now, and tells the live
    /// sessions which lists changed. A view that cannot be built keeps the previous one.
    ///
    /// # Errors
    /// The view cannot be built (a rename collides).
    pub(crate) fn update(&self, endpoint: Option<Endpoint>, base: &View, policy_changed: bool) -> Result<(), String> {
        let endpoint = match endpoint {
            Some(e) => Arc::new(e),
            None => self.endpoint(),
        };
        let new = base.restrict(&endpoint)?;
        let policy_changed = policy_changed || endpoint.policy != self.endpoint().policy;
        *self.policy.write().expect("endpoint policy lock") = endpoint.policy.clone().map(Arc::new);
        self.limits.set(endpoint.rate_limits.clone());
        *self.endpoint.write().expect("endpoint lock") = endpoint;
        let old = std::mem::replace(&mut *self.view.write().expect("endpoint view lock"), Arc::new(new));
        let new = self.view();
        let Some(server) = self.server.get() else { return Ok(()) };
        if policy_changed || old.tools != new.tools {
            server.list_changed("tools");
        }
        if policy_changed || old.prompts != new.prompts {
            server.list_changed("prompts");
        }
        if policy_changed || old.resources != new.resources || old.templates != new.templates {
            server.list_changed("resources");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(serde_json::json!({"name": name, "description": "d", "inputSchema": {"type": "object"}}))
            .unwrap()
    }

    fn base() -> View {
        let mut view = View::default();
        for (server, name) in [("echo", "add"), ("echo", "echo"), ("echo", "delete_all"), ("time", "now")] {
            view.tools.push(tool(name));
            view.tool_routes.insert(name.to_owned(), (server.to_owned(), name.to_owned()));
        }
        view
    }

    fn names(view: &View) -> Vec<&str> {
        view.tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn an_endpoint_offers_its_servers_and_tools_less_its_excludes_renamed() {
        let readonly = Endpoint::new("readonly", "/mcp/readonly")
            .servers(["echo"])
            .exclude(Kind::Tool, ["*/delete_*"])
            .rename(Rename::new(Kind::Tool, "echo/add").to("sum").described("Adds."));
        let view = base().restrict(&readonly).unwrap();
        assert_eq!(names(&view), ["sum", "echo"]);
        assert_eq!(view.tools[0].description.as_deref(), Some("Adds."));
        assert_eq!(view.tool_route("sum"), Some(&("echo".to_owned(), "add".to_owned())));
        assert_eq!(view.tool_route("add"), None);
        assert_eq!(
            readonly.why_hidden(Kind::Tool, "echo", "delete_all").as_deref(),
            Some("excluded by its exclude_tools \"*/delete_*\"")
        );
        assert_eq!(
            readonly.why_hidden(Kind::Tool, "time", "now").as_deref(),
            Some("server time is not among its servers")
        );
        let only = Endpoint::new("dev", "/mcp/dev").include(Kind::Tool, ["time/*", "echo/echo"]);
        assert_eq!(names(&base().restrict(&only).unwrap()), ["echo", "now"]);
        assert_eq!(only.why_hidden(Kind::Tool, "echo", "add").as_deref(), Some("not among its tools"));
        assert_eq!(names(&base().restrict(&Endpoint::new("all", "/all")).unwrap()), names(&base()));
    }

    #[test]
    fn a_rename_onto_another_tools_name_is_refused() {
        let clash = Endpoint::new("x", "/x").rename(Rename::new(Kind::Tool, "echo/add").to("now"));
        let Err(error) = base().restrict(&clash) else { panic!("a rename onto another tool's name") };
        assert!(error.contains("\"now\"") && error.contains("echo/add") && error.contains("time/now"), "{error}");
    }
}
